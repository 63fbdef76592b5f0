#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Vector resources through the CLI: a small node list with GPUs of two models and CSV
traces asking for shared and whole GPUs, models and memory; the openb pod list on the openb
node list with its GPUs; refusals by dimension and FILE:LINE for bad vector columns."""
from rusk_cli import case, cmp, data, load, main, match, need_openb, rusk, write


def vsim(rest, **kw):
    """rusk sim on tests/data/nodes_gpu.csv (2 partitions of single-machine racks)."""
    return rusk("sim --cluster %s --partitions 2 --machines-per-rack 1 --racks-per-cell 1 "
                "--time-scale 1 %s" % (data("nodes_gpu.csv"), rest), **kw)


@case
def cli_trace_vec():
    """The JSON's requested and allocated shares, the one task no machine can hold refused
    by its dimension, every check true."""
    r = vsim("--trace %s --json tv.json" % data("trace_vec.csv"), merge=False)
    d = load("tv.json")
    res = d["resources"]
    assert res["requested"]["gpu_milli"] == 7250 and res["allocated"]["gpu_milli"] == 7250, res
    assert res["refused_infeasible"]["mem_mib"] == 1 and \
        sum(res["refused_infeasible"].values()) == 1, res
    assert abs(res["gpu_allocation"]["peak"] - 7.25 / 16) < 1e-3, res
    assert d["checks"]["counts_add_up"] and d["checks"]["counters_consistent"], d["checks"]
    match(r"refused as infeasible *mem_mib 1", r.stdout)


@case
def cli_trace_vec_bad_model():
    r = vsim("--trace %s" % data("trace_vec_bad_model.csv"), status=2)
    match(r"trace_vec_bad_model.csv:2: no machine of this cluster has GPUs of model 'A100'", r.out)


@case
def cli_trace_vec_bad_columns():
    r = vsim("--trace %s" % data("trace_vec_neg_mem.csv"), status=2)
    match(r"trace_vec_neg_mem.csv:3: mem_mib '-5'", r.out)
    r = vsim("--trace %s" % data("trace_vec_split_gpu.csv"), status=2)
    match(r"trace_vec_split_gpu.csv:2: 2 GPUs of 500 milli", r.out)


@case
def cli_vec_review():
    """A node list machine with more than 8 GPUs is refused with FILE:LINE; a vector trace's
    RU-only row too large for every machine is refused as "rus" (not "shape"); --quality
    packing is reported as packing, not Tarcil Q."""
    r = rusk("demo --cluster %s --partitions 1 --duration-s 0.1" % data("nodes_9gpus.csv"),
             status=2, merge=False)
    match(r"nodes_9gpus.csv:3: gpu .9. is not an integer in 0..8", r.stderr)
    r = vsim("--trace %s --quality packing --json vr.json" % data("trace_vec_rus.csv"),
             merge=False)
    d = load("vr.json")
    ri = d["resources"]["refused_infeasible"]
    assert ri["rus"] == 1 and ri["shape"] == 0, ri
    assert d["quality"]["model"] == "packing", d["quality"]
    match(r"mean packing value", r.stdout)


@case
def cli_sim_openb_vec():
    """The openb pod list on the openb node list, GPUs honoured: nothing refused, GPUs
    allocated, two runs with one seed identical (virtual time)."""
    need_openb()
    for k in (1, 2):
        rusk("sim --trace openb --cluster openb --partitions 8 --duration-s 5 --quality packing "
             "--json ov%d.json --csv ov%d.csv" % (k, k))
    cmp("ov1.csv", "ov2.csv")
    a = load("ov1.json")
    b = load("ov2.json")
    r = a["resources"]
    assert r == b["resources"], (r, b["resources"])
    assert sum(r["refused_infeasible"].values()) == 0 and r["gpu_allocation"]["peak"] > 0 and \
        r["never_ran_in_trace"] == 897, r
    assert a["tasks"]["committed"] == 8152 and a["checks"]["counters_consistent"], a["tasks"]


@case
def cli_rejected_reasons_sum():
    """Every rejection is counted under one reason (an infeasible pod was in no reason)."""
    vsim("--trace %s --json rrs.json" % data("trace_vec.csv"))
    write("rrs.csv", "arrival_s,duration_s,rus\n0,0.1,1\n0.1,0.1,900\n")
    rusk("sim --trace rrs.csv --time-scale 1 --machines 400 --partitions 2 --json rrs2.json")
    T = [load(f)["tasks"] for f in ("rrs.json", "rrs2.json")]
    assert all(t["rejected"] == sum(t["rejected_reasons"].values()) > 0 for t in T), T
    assert T[0]["rejected_reasons"]["infeasible"] == 1, T


if __name__ == "__main__":
    raise SystemExit(main())
