#!/usr/bin/env python3
"""Issue 29, item 1: under --quality interference a task's run time is an outcome, its
duration times its slowdown where it lands (from its co-runners' true profiles), reported
as the mean slowdown against running alone and in the JCT. The scheduler sees classified
profiles by default (--classify on); oracle and none are comparison arms; off keeps run
times fixed. Virtual time stays byte-identical for a seed.
Usage: sim_outcome.py RUSK_BINARY (writes into the current directory)."""
import json
import subprocess
import sys

rusk = sys.argv[1]
BASE = ["sim", "--machines", "100", "--rus-per-machine", "8", "--machines-per-rack", "10",
        "--racks-per-cell", "1", "--partitions", "10", "--agents", "10", "--task-ms", "100",
        "--task-dist", "fixed", "--quality", "interference", "--rate", "4000",
        "--duration-s", "2", "--sample", "8"]


def run(name, extra):
    subprocess.run([rusk, *BASE, *extra, "--json", name], check=True,
                   stdout=subprocess.DEVNULL)
    with open(name) as f:
        return json.load(f)


out = {c: run(f"oc_{c}.json", ["--classify", c]) for c in ("oracle", "none", "off")}
out["default"] = run("oc_default.json", [])
for c in ("oracle", "none", "default"):
    cl, ex = out[c]["classification"], out[c]["execution"]
    sd = cl["slowdown_mean"]
    print(f"{c}: mode {cl['mode']}, slowdown {sd:.4f}, TET {ex['tet_mean_s']:.6f} s, "
          f"JCT {ex['jct_mean_s']:.6f} s")
    # Every task ran 100 ms times its slowdown: the mean run time says the same.
    assert sd > 1.0 and cl["slowed"] == cl["placed"] > 0, cl
    assert abs(ex["tet_mean_s"] - 0.1 * sd) <= 2e-6, (ex, sd)
    assert ex["jct_mean_s"] > ex["tet_mean_s"], ex
    # Per-task JCT (delay + run time where it landed): the histogram's mean is the
    # execution's (within its 0.8% buckets), every placement counted, percentiles ordered,
    # and none below the 100 ms alone (a slowdown is >= 1).
    jc = cl["jct_ms"]
    assert jc["tasks"] == cl["slowed"] and jc == cl["jct_normal_ms"], cl
    assert cl["jct_high_ms"]["tasks"] == 0, cl
    assert abs(jc["mean"] - 1e3 * ex["jct_mean_s"]) <= 0.01 * jc["mean"], (jc, ex)
    assert 100 * 0.992 <= jc["p50"] <= jc["p95"] <= jc["p99"], jc
    assert jc["p99"] > 100 * sd, (jc, sd)
assert out["default"]["classification"]["mode"] == "on", out["default"]["classification"]
# off: the score-only model, run times exactly the duration, no classification section.
assert "classification" not in out["off"] and out["off"]["execution"]["tet_mean_s"] == 0.1
# Deterministic: the oracle arm (no wall-clock classification time) twice, same bytes.
run("oc_oracle2.json", ["--classify", "oracle"])
assert open("oc_oracle.json", "rb").read() == open("oc_oracle2.json", "rb").read()
# With priorities, JCT by class: the classes add up to all placements.
pr = run("oc_prio.json", ["--classify", "oracle", "--priority-share", "0.3"])["classification"]
assert pr["jct_high_ms"]["tasks"] > 0 and pr["jct_normal_ms"]["tasks"] > 0, pr
assert pr["jct_high_ms"]["tasks"] + pr["jct_normal_ms"]["tasks"] == pr["jct_ms"]["tasks"], pr
