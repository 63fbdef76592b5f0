#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Quasar in rusk (issue 17): rusk classify (validation, feedback, a measured matrix),
rusk classify --alloc (sizing to a performance target, five policies), and rusk run/sim
--classify and --target (classification, sizing and feedback in the kernel's own loop)."""
from rusk_cli import case, cmp, data, last_line, load, main, match, refusal, rusk

refusal("cli_classify_bad_flag", "classify --rank 0", r"--rank: '0' is not an integer in 1..16")
refusal("cli_classify_bad_matrix", "classify --matrix {data}/cls_nan.csv",
        r"cls_nan.csv:3: column 2: 'NaN' is not finite")


@case
def cli_classify_small():
    """The error falls from 1 to 4 profiling entries per row, for every classification."""
    rusk("classify --workloads 300 --offline 30 --incoming 60 --max-entries 4 --timing-max 250 "
         "--feedback 2 --json cls.json")
    d = load("cls.json")
    v = {(r["kind"], r["entries"]): r["avg"] for r in d["validation"]}
    ks = ["scale-up", "scale-out", "heterogeneity", "interference"]
    assert all(v[(k, 4)] < v[(k, 1)] for k in ks), v
    assert len(d["timing"]) == 2 and len(d["feedback"]) == 2, d


@case
def cli_classify_matrix():
    r = rusk("classify --matrix %s --incoming 1 --max-entries 2" % data("cls_good.csv"))
    match(r"validation: .*matrix", r.out)


@case
def cli_classify_alloc_small():
    """The policies on a small generated workload: oracle sizing meets nearly every target,
    Quasar's classified sizing achieves more of its targets than reservations, monitoring
    and re-sizing meets more than sizing alone, whose requests exceed the cluster most of
    the time; the same seed gives the same results (but the wall-clock decision times)."""
    for f in ("ca1.json", "ca2.json"):
        rusk("classify --alloc --jobs 300 --machines 50 --workloads 300 --offline 30 --json " + f)

    def L(f):
        return [{k: v for k, v in x.items() if not k.startswith("alloc_decision_us")}
                for x in load(f)["policies"]]

    assert L("ca1.json") == L("ca2.json"), "not deterministic"
    d = load("ca1.json")
    p = {x["policy"]: x for x in d["policies"]}
    assert list(p) == ["oracle", "quasar", "quasar+adjust", "blind", "res+paragon", "res+ll"], p
    assert p["quasar+adjust"]["met"] > p["quasar"]["met"] and \
        p["quasar+adjust"]["adjusts_per_job"] > 0 == p["quasar"]["adjusts_per_job"], p
    assert p["oracle"]["met"] > 0.9, p
    assert p["quasar"]["achieved"] > p["res+paragon"]["achieved"] and \
        p["quasar"]["achieved"] > p["res+ll"]["achieved"], p
    assert p["res+ll"]["over_cap"] > 0.5 and p["quasar"]["over_cap"] == 0, p
    assert all(x["placed"] == 300 for x in p.values()), p
    assert p["oracle"]["tarcil_q"] > p["blind"]["tarcil_q"], p


@case
def cli_classify_alloc_bad_flag():
    r = rusk("classify --alloc --load 0", status=2)
    match(r"--load: '0' is not a number in ", last_line(r.out))


CLS_SIM = ("sim --machines 400 --rus-per-machine 4 --partitions 2 --rate 600 --duration-s 5 "
           "--task-ms 2000 --task-dist exp --quality interference --seed 1")


def without_time(f):
    """f's JSON and its classification, less the wall-clock time_us."""
    d = load(f)
    c = d["classification"]
    c.pop("time_us", None)
    return d, c


@case
def cli_sim_classify():
    """The same tasks (seed 1) placed by classified and by true profiles: the fields are
    there, two runs of one seed agree (all but time_us; the CSV byte for byte), the oracle's
    Q under true profiles is its kernel Q (within 0.01), and classified profiles place no
    better than the truth."""
    rusk(CLS_SIM + " --classify on --json clsq1.json --csv clsq1.csv")
    rusk(CLS_SIM + " --classify on --json clsq2.json --csv clsq2.csv")
    rusk(CLS_SIM + " --classify oracle --json clsqo.json")
    cmp("clsq1.csv", "clsq2.csv")
    d1, a = without_time("clsq1.json")
    d2, b = without_time("clsq2.json")
    do, o = without_time("clsqo.json")
    assert d1 == d2, (a, b)
    assert d1["checks"]["counts_add_up"] and do["checks"]["counts_add_up"]
    assert a["mode"] == "on" and o["mode"] == "oracle" and a["placed"] == o["placed"] > 0
    assert a["classified"] == a["placed"] and a["retrains"] >= 1 and a["feedback_rows"] > 0
    assert a["true_sums_zero"] and o["true_sums_zero"]
    assert len(a["error_by_version"]) >= 2 and \
        all(0 < e["error"] < 0.3 for e in a["error_by_version"])
    assert "time_us" in load("clsq1.json")["classification"]
    assert abs(o["q_true_mean"] - o["q_placed_mean"]) < 0.01, o
    assert a["q_true_mean"] <= o["q_true_mean"] + 0.01, (a, o)


@case
def cli_sim_classify_target():
    """--target on from a trace's target_s column; with preemptions, every tenure's true
    intensities leave the machines' sums."""
    rusk("sim --machines 400 --rus-per-machine 8 --partitions 2 --quality interference "
         "--classify on --target on --trace %s --time-scale 1 --json clst.json" %
         data("trace_target.csv"))
    rusk("sim --machines 400 --rus-per-machine 4 --partitions 2 --rate 1000 --duration-s 5 "
         "--task-ms 2000 --task-rus 2 --quality interference --classify on --target on "
         "--priority-share 0.3 --json clsp.json")
    p = load("clsp.json")
    assert p["priority"]["preempted"] > 0 and p["classification"]["true_sums_zero"] and \
        p["checks"]["counts_add_up"], p["classification"]
    d = load("clst.json")
    t = d["classification"]["target"]
    assert t["jobs"] == 5 and t["unsized"] == 0 and 0 <= t["met_share"] <= 1 and \
        t["met_share_oracle"] == 1, t
    assert t["rus_per_job_nominal"] == 1.6 and t["rus_per_job"] >= 1 and \
        d["checks"]["counts_add_up"], t


@case
def cli_run_classify():
    """rusk run (threads) with --classify on --target on."""
    rusk("run --machines 400 --rus-per-machine 8 --partitions 2 --rate 500 --duration-s 1.5 "
         "--task-ms 300 --task-rus 2 --quality interference --classify on --target on "
         "--json clsr.json")
    d = load("clsr.json")
    c = d["classification"]
    assert c["mode"] == "on" and c["placed"] == d["tasks"]["committed"] > 0 and \
        c["time_us"]["p99"] > 0, c
    assert c["target"]["jobs"] == d["tasks"]["submitted"] and d["checks"]["counts_add_up"], c


@case
def cli_sim_classify_target_memory():
    """--target on commits a one-machine allocation's memory blocks with its RUs (scale-up
    is RUs x memory). On a node list of 8 GiB per core and a median machine of 16 cores a
    block is 32,768 MiB; every such task placed has its memory in use on its machine, all of
    it comes back, no more than 4 blocks; the same seed gives the same JSON."""
    for i in (1, 2):
        rusk("sim --cluster %s --machines 400 --partitions 2 --rate 300 --duration-s 4 "
             "--task-ms 2000 --task-rus 4 --quality interference --classify on --target on "
             "--json clsm%d.json" % (data("nodes_gpu.csv"), i))
    d, _ = without_time("clsm1.json")
    assert d == without_time("clsm2.json")[0], "not deterministic"
    t = d["classification"]["target"]
    assert d["checks"]["counts_add_up"] and \
        d["tasks"]["committed"] == d["tasks"]["submitted"] > 0, d["tasks"]
    assert t["mem_block_mib"] == 32768 and 0 < t["mem_tasks"] <= t["jobs"] - t["unsized"], t
    assert t["mem_placed"] == t["mem_tasks"] == t["mem_placed_in_use"] and \
        t["mem_used_after_mib"] == 0, t
    assert 32768 <= t["mem_mib_per_mem_task"] <= 4 * 32768, t


CLS_TGT = ("sim --machines 400 --rus-per-machine 8 --partitions 2 --rate 500 --duration-s 5 "
           "--task-ms 2000 --task-rus 4 --quality interference --classify on --target on "
           "--seed 1")


@case
def cli_sim_classify_sizing_feedback():
    """Online feedback of the sizing rows: a sized task joins the scale-up, scale-out and
    heterogeneity models with its profiled entries and at completion feeds back what its
    run observed (--cls-feedback full: whole rows); deterministic; the two modes agree on
    v1 (the same model) and differ after."""
    rusk(CLS_TGT + " --json clsf1.json")
    rusk(CLS_TGT + " --json clsf2.json")
    rusk(CLS_TGT + " --cls-feedback full --json clsff.json")
    a, b, f = (without_time(x)[0] for x in ("clsf1.json", "clsf2.json", "clsff.json"))
    assert a == b, "not deterministic"
    so, sf = a["classification"]["sizing_feedback"], f["classification"]["sizing_feedback"]
    assert so["tasks"] > 1000 and so["retrains"] >= 1 and sf["retrains"] >= 1, (so, sf)
    for k in ("scale-up", "scale-out", "heterogeneity"):
        o, w = so[k], sf[k]
        assert len(o) >= 2 and o[0]["version"] == 1 and \
            all(0 < x["error"] < 0.3 for x in o + w), (k, o, w)
        assert o[0] == w[0] and o[1:] != w[1:], (k, o, w)


@case
def cli_classify_bad_flags():
    """An unknown --classify mode, --classify without Tarcil's profiles, --target without a
    classification, an unknown --target: each names the flag, exit 2."""
    for args, regex in (("sim --classify maybe", r"--classify[^\n]*'maybe'"),
                        ("sim --classify on", r"--classify on needs --quality interference"),
                        ("run --target on --quality interference --classify none",
                         r"--target on needs --classify"),
                        ("sim --target sometimes", r"--target[^\n]*'sometimes'")):
        match(regex, last_line(rusk(args, status=2).out))


@case
def cli_trace_bad_target():
    r = rusk("sim --trace %s" % data("trace_bad_target.csv"), status=2)
    match(r"trace_bad_target.csv:3: target_s 'x' is not a positive number", last_line(r.out))


@case
def cli_sim_classify_audit():
    """(1) --target on: every sized task carries its allocation's machines as preferred
    machines and the share of its RUs placed on them is reported; (2) feedback: observed by
    default, whole rows with --cls-feedback full, differing once a retrain used them; (3)
    --classify none places with zero profiles; Q under the true profiles ordered oracle > on
    > none on seed 1."""
    rusk(CLS_SIM + " --classify none --json clsn.json")
    rusk(CLS_SIM + " --classify oracle --json clsno.json")
    rusk(CLS_SIM + " --classify on --json clsnc.json")
    rusk(CLS_SIM + " --classify on --cls-feedback full --json clsnf.json")
    rusk(CLS_TGT + " --json clspf.json")
    n, o, c, f = (load(x)["classification"]
                  for x in ("clsn.json", "clsno.json", "clsnc.json", "clsnf.json"))
    assert n["mode"] == "none" and n["placed"] == o["placed"] == c["placed"] > 0 and \
        n["true_sums_zero"], n
    assert "classified" not in n and n["q_placed_mean"] == 0, n
    assert o["q_true_mean"] > c["q_true_mean"] > n["q_true_mean"], (o, c, n)
    assert c["feedback"] == "observed" and f["feedback"] == "full" and \
        c["feedback_rows"] == f["feedback_rows"] > 0, (c, f)
    ec, ef = c["error_by_version"], f["error_by_version"]
    assert ec[0] == ef[0] and ec[1:] != ef[1:], (ec, ef)
    d = load("clspf.json")
    t = d["classification"]["target"]
    assert t["preferred_tasks"] == t["jobs"] - t["unsized"] > 0 and \
        t["preferred_placed"] == d["classification"]["placed"] - t["unsized"], t
    assert 0.3 < t["preferred_rus_share"] <= 1 and 0 < t["met_share_placed"] <= 1 and \
        t["perf_placed_over_target"] > 0, t


@case
def cli_classify_feedback_entries():
    """rusk classify's feedback table: observed entries by default, whole rows on request."""
    for e in ("observed", "full"):
        rusk("classify --workloads 300 --offline 30 --incoming 60 --max-entries 1 "
             "--timing-max 0 --feedback 3 --feedback-entries %s --json clsfb_%s.json" % (e, e))
    o, f = load("clsfb_observed.json"), load("clsfb_full.json")
    assert o["feedback_entries"] == "observed" and f["feedback_entries"] == "full", \
        (o["feedback_entries"], f["feedback_entries"])
    assert o["feedback"][0] == f["feedback"][0] and o["feedback"][1:] != f["feedback"][1:], \
        (o["feedback"], f["feedback"])


@case
def cli_classify_audit_bad_flags():
    """--classify none cannot size (--target needs rows), an unknown --cls-feedback or
    --feedback-entries: each names the flag, exit 2."""
    for args, regex in (
            ("sim --quality interference --classify none --target on",
             r"--target on needs --classify on"),
            ("sim --quality interference --classify on --cls-feedback all",
             r"--cls-feedback[^\n]*'all'"),
            ("classify --feedback-entries some", r"--feedback-entries[^\n]*'some'")):
        match(regex, last_line(rusk(args, status=2).out))


if __name__ == "__main__":
    raise SystemExit(main())
