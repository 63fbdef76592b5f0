#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fits rusk sim's work-based decision cost to the kernel's benchmarks (issue 29, item 2).

    perf/cost_fit.py [BENCH_COST_JSON]               print the fit and simcost.h's constants
    perf/cost_fit.py --check SIMCOST_H [JSON]        exit 1 unless simcost.h holds this fit

BENCH_COST_JSON is bench/bench_cost.c's Google Benchmark output (default
perf/bench/bench_cost.json, written by `make bench`). For each quality model (score:
slot scores, interference: Tarcil's Q) and each family of decisions (latency: rusk's
Latency-first; sampling: Quality-first's ranked partitions and weighted draws, and the
random baseline), the CPU time of one decision is fitted by least squares as

    ns = fixed + per_examined x examined + per_partition x partitions

over the benchmark's points (examined and partitions are the decision's own counters,
rusk_placement.examined and .partitions), one commit attempt and its release is
cost/commit's CPU time, and the per-task work around a decision (the dispatcher's queue,
admission, placement event and end) is cost/task's CPU time less its decision (by the
score/latency fit, at its own counters) and its commit. CPU time, not wall time: on a shared machine a decision's wall time
includes other processes' turns. Where a repetition's aggregates are there (make bench runs
5), the median is used. A negative coefficient is clamped to 0 and the fit redone without
it (a unit of work never makes a decision cheaper).
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "bench", "bench_cost.json")
NAME = re.compile(r"^cost/(score|interference)/(latency|quality)/P=(\d+)/R=(\d+)(/pref)?")


def points(path):
    """{(model, family): [(examined, partitions, cpu_ns)]}, commit cpu ns."""
    with open(path) as f:
        j = json.load(f)
    bench = j["benchmarks"]
    medians = [b for b in bench if b.get("aggregate_name") == "median"]
    use = medians if medians else [b for b in bench if b.get("run_type") != "aggregate"]
    out, commit, task = {}, None, None
    for b in use:
        name = b["run_name"] if "run_name" in b else b["name"]
        t = b["cpu_time"] * {"ns": 1, "us": 1e3, "ms": 1e6}[b.get("time_unit", "ns")]
        if name.startswith("cost/commit"):
            commit = t
            continue
        if name.startswith("cost/task"):
            task = (b["examined"], b["partitions"], t)
            continue
        m = NAME.match(name)
        if m is None:
            continue
        fam = "latency" if m.group(2) == "latency" else "sampling"
        out.setdefault((m.group(1), fam), []).append((b["examined"], b["partitions"], t))
    return out, commit, task


def solve(a, y):
    """Least squares a x = y by the normal equations (a few unknowns, Gauss-Jordan)."""
    k = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(k)] +
         [sum(r[i] * v for r, v in zip(a, y))] for i in range(k)]
    for c in range(k):
        p = max(range(c, k), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-12:
            return None
        for r in range(k):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * z for x, z in zip(m[r], m[c])]
    return [m[i][k] / m[i][i] for i in range(k)]


def fit(pts):
    """(fixed, per_examined, per_partition), clamped at 0, and the largest relative
    residual over the points."""
    cols = [0, 1, 2]
    while True:
        a = [[(1.0, ex, pa)[i] for i in cols] for ex, pa, _ in pts]
        x = solve(a, [t for _, _, t in pts])
        coef = [0.0, 0.0, 0.0]
        if x is not None:
            for c, v in zip(cols, x):
                coef[c] = v
        neg = [c for c in cols if coef[c] < 0]
        if not neg:
            break
        cols = [c for c in cols if c not in neg]
    worst = max(abs(coef[0] + coef[1] * ex + coef[2] * pa - t) / t for ex, pa, t in pts)
    return coef, worst


def the_fit(path):
    pts, commit, task = points(path)
    res = {}
    for key in [("score", "latency"), ("score", "sampling"), ("interference", "latency"),
                ("interference", "sampling")]:
        if key not in pts or len(pts[key]) < 3:
            sys.exit(f"cost_fit.py: {path}: too few points for {key[0]}/{key[1]}")
        res[key] = fit(pts[key])
    if commit is None or task is None:
        sys.exit(f"cost_fit.py: {path}: no cost/commit or cost/task")
    (f, e, p), _ = res[("score", "latency")]
    per_task = max(0.0, task[2] - (f + e * task[0] + p * task[1]) - commit)
    return res, commit, per_task


def header_values(res, commit, per_task):
    """The constants simcost.h must hold, as its macro names."""
    vals = {"RUSK_SIMCOST_COMMIT_NS": commit, "RUSK_SIMCOST_TASK_NS": per_task}
    for (model, fam), (coef, _) in res.items():
        p = f"RUSK_SIMCOST_{model.upper()}_{fam.upper()}_"
        vals[p + "FIXED_NS"], vals[p + "EXAMINED_NS"], vals[p + "PARTITION_NS"] = coef
    return vals


def main():
    args = sys.argv[1:]
    if args[:1] == ["--check"]:
        if len(args) < 2:
            sys.exit("usage: cost_fit.py --check SIMCOST_H [BENCH_COST_JSON]")
        res, commit, per_task = the_fit(args[2] if len(args) > 2 else DEFAULT)
        text = open(args[1]).read()
        bad = []
        for k, v in header_values(res, commit, per_task).items():
            m = re.search(r"#define\s+" + k + r"\s+([0-9.eE+-]+)", text)
            # The header keeps 3 decimals of a nanosecond.
            if m is None or abs(float(m.group(1)) - round(v, 3)) > 1e-3:
                bad.append(f"{k}: header {m.group(1) if m else 'missing'}, fit {v:.3f}")
        if bad:
            print("cost model: simcost.h does not hold the fit of the benchmark JSON:\n  "
                  + "\n  ".join(bad))
            sys.exit(1)
        print("cost model: simcost.h holds the fit of the benchmark JSON")
        return
    path = args[0] if args else DEFAULT
    res, commit, per_task = the_fit(path)
    for (model, fam), (coef, worst) in res.items():
        print(f"{model:12s} {fam:8s} fixed {coef[0]:9.3f} ns, per RU examined "
              f"{coef[1]:8.3f} ns, per partition {coef[2]:8.3f} ns "
              f"(largest relative residual {worst:.0%})")
    print(f"commit attempt + release {commit:.3f} ns; per task around its decision "
          f"{per_task:.3f} ns\n")
    for k, v in header_values(res, commit, per_task).items():
        print(f"#define {k} {v:.3f}")


if __name__ == "__main__":
    main()
