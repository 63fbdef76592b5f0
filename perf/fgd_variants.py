#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""FGD's fill-until-full on every openb pod list in a folder (issue 32: "on the default
openb list and on the other public openb variants").

The Alibaba 2023 GPU trace publishes, beside openb_pod_list_default.csv, variants of the
pod list that change one property of the workload (the share of GPU-sharing pods:
gpushare*, of pods asking for a GPU model: gpuspec*, of multi-GPU pods: multigpu*, the
CPU demand of CPU-only pods: cpu*). They are public data and never committed: fetch the
folder cluster-trace-gpu-v2023/csv of the repository alibaba/clusterdata and pass it.

For each pod list, `rusk experiment fgd` runs per seed (the three models: slot score,
packing, fgd) on the node list of the same folder; this script then compares the mean
unallocated GPU share of fgd against packing (and the slot score) at every fill level that
every run reached, as perf/paper/fgd.md does for the default list, and prints one row per
list: levels compared, levels where fgd leaves more than packing (and by how much at most),
the largest reduction against packing, and the values at the end of the fill.

Usage: perf/fgd_variants.py RUSK_BINARY DIR [--seeds N] [--csv OUT.csv]
DIR: the csv folder, or a folder holding it as openb/ (what RUSK_TRACE_DIR names).
Exit 1 when a run fails; the comparison itself is reported, not enforced (a variant where
fgd loses is a finding, not an error).
"""
import argparse
import csv
import glob
import os
import subprocess
import sys
import tempfile

MODELS = ["score", "packing", "fgd"]


def run(rusk, nodes, pods, seeds, tmp):
    out = os.path.join(tmp, os.path.basename(pods) + ".out.csv")
    p = subprocess.run([rusk, "experiment", "fgd", "--cluster", nodes, "--trace", pods,
                        "--seeds", str(seeds), "--csv", out], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"fgd_variants.py: {pods}: rusk experiment fgd exit {p.returncode}:\n"
                 f"{p.stderr}")
    with open(out) as f:
        return list(csv.DictReader(f))


def compare(rows):
    seeds = sorted({r["seed"] for r in rows})
    fill = {}
    end = {m: [] for m in MODELS}
    for r in rows:
        u = float(r["unallocated_gpu_share"])
        if r["point"] == "fill":
            lv = round(float(r["arrived_gpu_demand"]), 4)
            fill.setdefault((r["model"], lv), []).append(u)
        elif r["point"] == "end":
            end[r["model"]].append(u)
    levels = sorted({lv for (_, lv) in fill})
    common = [lv for lv in levels
              if all(len(fill.get((m, lv), [])) == len(seeds) for m in MODELS)]
    mean = {k: sum(v) / len(v) for k, v in fill.items()}
    worse = [(lv, mean[("fgd", lv)] - mean[("packing", lv)]) for lv in common
             if mean[("fgd", lv)] > mean[("packing", lv)] + 1e-9]
    worse_score = [lv for lv in common if mean[("fgd", lv)] > mean[("score", lv)] + 1e-9]
    red = [(1 - mean[("fgd", lv)] / mean[("packing", lv)], lv) for lv in common
           if mean[("packing", lv)] > 0]
    best = max(red) if red else (0.0, 0.0)
    return {"levels": len(common), "top": common[-1] if common else 0.0, "worse": worse,
            "worse_score": len(worse_score), "best": best,
            "end": {m: sum(end[m]) / len(end[m]) for m in MODELS if end[m]}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rusk")
    ap.add_argument("dir")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--csv", help="write one row per pod list here")
    a = ap.parse_args()
    # DIR is the trace's csv folder, or the folder RUSK_TRACE_DIR names (its openb/)
    if not os.path.exists(os.path.join(a.dir, "openb_node_list_all_node.csv")) and \
            os.path.isdir(os.path.join(a.dir, "openb")):
        a.dir = os.path.join(a.dir, "openb")
    nodes = os.path.join(a.dir, "openb_node_list_all_node.csv")
    if not os.path.exists(nodes):
        sys.exit(f"fgd_variants.py: {nodes}: no such file (the openb csv folder, or the "
                 f"folder RUSK_TRACE_DIR names?)")
    lists = sorted(glob.glob(os.path.join(a.dir, "openb_pod_list_*.csv")))
    if not lists:
        sys.exit(f"fgd_variants.py: {a.dir}: no openb_pod_list_*.csv")
    hdr = ["pod list", "levels", "fgd > packing at", "most above", "best vs packing",
           "fgd > score at", "end score/packing/fgd"]
    print(" | ".join(hdr))
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for pods in lists:
            c = compare(run(a.rusk, nodes, pods, a.seeds, tmp))
            name = os.path.basename(pods)[len("openb_pod_list_"):-4]
            worse = ", ".join(f"{100 * lv:.0f}%" for lv, _ in c["worse"]) or "none"
            most = max((d for _, d in c["worse"]), default=0.0)
            e = c["end"]
            row = [name, f"{c['levels']} (to {100 * c['top']:.0f}%)", worse,
                   f"{100 * most:.2f} pt", f"{100 * c['best'][0]:.0f}% at "
                   f"{100 * c['best'][1]:.0f}%", str(c["worse_score"]),
                   "/".join(f"{100 * e.get(m, float('nan')):.2f}%" for m in MODELS)]
            print(" | ".join(row), flush=True)
            out.append(row)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(hdr)
            w.writerows(out)


if __name__ == "__main__":
    main()
