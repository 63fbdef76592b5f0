#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk bench (every design on one workload) and perf/instructions.sh's argument check."""
import os

from rusk_cli import ARGS, case, main, match, refusal, run, rusk


@case
def cli_bench_smoke():
    r = rusk("bench --machines 4000 --partitions 4 --agents 2 --duration-s 0.2 --json bench.json")
    match(r"central \(one lock\).*global-lock.*quality at 80% load.*preferred%.*thread scaling",
          r.out)


@case
def perf_instructions_bad_rate():
    """perf/instructions.sh refuses a bad rate before it needs valgrind or a build."""
    r = run([os.path.join(ARGS.src, "perf", "instructions.sh"), "2k"], status=2)
    match(r"RATE '2k' is not a positive whole number", r.out)


refusal("cli_bench_bad_preferred", "bench --preferred 65", r"--preferred")

if __name__ == "__main__":
    raise SystemExit(main())
