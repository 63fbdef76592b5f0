#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk plan (3σSched over one pool of cores): a short run's JSON for every mode, and the
refusals of bad values."""
from rusk_cli import case, load, main, refusal, rusk


@case
def cli_plan_small():
    rusk("plan --jobs 80 --train 400 --seed 3 --quiet --json plan_small.json")
    d = load("plan_small.json")
    m = {x["sched"]: x for x in d["modes"]}
    assert sorted(m) == sorted(["3sigma", "point-real", "point-perfect", "prio", "fifo"]), m.keys()
    assert all(0 <= x["slo_miss_rate"] <= 1 and x["slo_met"] <= x["slo_jobs"] and
               x["slo_jobs"] + x["be_jobs"] == d["workload"]["jobs"] and
               x["be_done"] + x["be_unfinished"] == x["be_jobs"] for x in m.values())
    assert all(x["planner"]["milp"] > 0 for k, x in m.items()
               if k in ("3sigma", "point-real", "point-perfect"))
    assert abs(d["workload"]["load"] - 1.4) < 1e-6


@case
def cli_plan_prefer():
    # --prefer: SLO jobs prefer 3 of 4 groups; every mode sees the same preferences, the
    # planning modes choose between waiting for them and starting anywhere (1.5x longer).
    rusk("plan --jobs 80 --train 400 --seed 3 --prefer 0.75 --quiet --json plan_prefer.json")
    d = load("plan_prefer.json")
    assert d["params"]["groups"] == 4 and d["params"]["prefer"] == 0.75, d["params"]
    m = {x["sched"]: x for x in d["modes"]}
    assert len(m) == 5, m.keys()
    assert all(0 <= x["slo_slow"] <= x["slo_starts"] and x["slo_starts"] > 0
               for x in m.values()), m
    # without --prefer the JSON has no groups (the default output is as before)
    rusk("plan --jobs 30 --train 200 --sched fifo --quiet --json plan_noprefer.json")
    assert "groups" not in load("plan_noprefer.json")["params"]


refusal("cli_plan_groups_alone", "plan --groups 4", r"--groups: only with --prefer")
refusal("cli_plan_placement_alone", "plan --placement blind", r"--placement: only with --prefer")
refusal("cli_plan_bad_groups", "plan --prefer 0.75 --groups 9", r"--groups: '9' is not")
refusal("cli_plan_groups_cores", "plan --prefer 0.75 --groups 8 --cores 4",
        r"--groups: 8 groups of 4 cores")
refusal("cli_plan_bad_sched", "plan --sched nope",
        r"--sched: 'nope' is not 3sigma, point-real, point-perfect, prio, fifo or all")
refusal("cli_plan_bad_jobs", "plan --jobs 0", r"--jobs: '0' is not an integer")
refusal("cli_plan_bad_slack", "plan --slack lots", r"--slack: 'lots' is not a number")
refusal("cli_plan_unknown", "plan --budget 5", r"unknown option '--budget'")
refusal("cli_plan_bad_oe", "plan --oe sometimes", r"--oe: 'sometimes' is not off, adaptive or always")

if __name__ == "__main__":
    raise SystemExit(main())
