#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk bench (every design on one workload) and perf/instructions.sh's argument check."""
import json
import os

from rusk_cli import ARGS, case, main, match, refusal, run, rusk


@case
def cli_bench_smoke():
    r = rusk("bench --machines 4000 --partitions 4 --agents 2 --duration-s 0.2 --warmup-s 0.2 "
             "--json bench.json")
    match(r"central \(one lock\).*global-lock.*quality at 80% load.*preferred%.*thread scaling"
          r".*statesync.*random.*per decision.*choose.*commit.*drawn", r.out)


@case
def cli_bench_sweep_warmup():
    """--sweep runs the counts given, for rusk, StateSync, random and global-lock, with each
    decision's work in the JSON. With the warm-up, the counted run starts at the target
    load (80%: the view shows 20% free, so Tarcil's R for eps 0.05, target 0.8 is above the
    cap of 32 and every draw takes 32); without it a row starts from an empty cluster and
    draws fewer while it fills."""
    drawn = {}
    for w in ("0.3", "0"):
        # 20,000 machines: filling 256,000 RUs takes a good part of a cold 0.2 s row
        rusk("bench --machines 20000 --partitions 4 --agents 1 --sweep 1,2 --duration-s 0.2 "
             "--warmup-s %s --rate 0 --preferred 0 --json b%s.json" % (w, w))
        b = json.load(open("b%s.json" % w))
        assert b["config"]["warmup_s"] == float(w), b["config"]
        assert [p["agents"] for p in b["scaling"]] == [1, 2], b["scaling"]
        for p in b["scaling"]:
            for k in ("rusk", "statesync", "random", "global_lock"):
                assert p[k] > 0, (k, p)
                w_ = p["work"][k]
                assert w_["attempts"] >= 1 and w_["choose_ns"] > 0, (k, w_)
        drawn[w] = b["scaling"][0]["work"]["rusk"]["drawn"]
    assert drawn["0.3"] >= 31.9, drawn
    assert drawn["0"] < drawn["0.3"] - 1, drawn


@case
def perf_instructions_bad_rate():
    """perf/instructions.sh refuses a bad rate before it needs valgrind or a build."""
    r = run([os.path.join(ARGS.src, "perf", "instructions.sh"), "2k"], status=2)
    match(r"RATE '2k' is not a positive whole number", r.out)


refusal("cli_bench_bad_preferred", "bench --preferred 65", r"--preferred")
refusal("cli_bench_bad_sweep", "bench --sweep 1,,2", r"--sweep: '1,,2' is not a list")
refusal("cli_bench_bad_sweep_zero", "bench --sweep 0,2", r"--sweep: '0,2' is not a list")
refusal("cli_bench_sweep_partitions", "bench --machines 4000 --partitions 4 --sweep 1,8",
        r"--sweep up to 8 needs --partitions >= 8")
refusal("cli_bench_bad_warmup", "bench --warmup-s -1", r"--warmup-s")

if __name__ == "__main__":
    raise SystemExit(main())
