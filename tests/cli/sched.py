#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""3Sigma in front of the kernel's agents (issue 18: rusk run/sim --sched,
bench/cli/sched_run.c): every job resolved once and the kernel's checks holding, FIFO
byte-identical across runs, CSV traces with deadlines, the generator's drawn deadlines, the
planner thread in real time, a cold start, skipped cycles, and the refusals."""
from rusk_cli import case, cmp, data, load, main, refusal, rusk


def sched(path):
    """The checks every --sched run's JSON must pass; returns (the JSON, its sched)."""
    d = load(path)
    s = d["sched"]
    assert s["slo_met"] + s["slo_late"] + s["slo_dropped"] + s["slo_killed"] + \
        s["slo_refused"] + s["slo_unfinished"] == s["slo_jobs"], s
    assert s["be_done"] + s["be_refused"] + s["be_unfinished"] == s["be_jobs"], s
    assert s["slo_jobs"] + s["be_jobs"] == s["jobs"] > 0, s
    assert d["checks"]["counts_add_up"] and d["checks"]["counters_consistent"], d["checks"]
    assert d["tasks"]["submitted"] == s["starts"], (d["tasks"], s)
    assert 0 <= s["slo_miss_pct"] <= 100 and s["goodput_rh"] > 0, s
    return d, s


SCHED_SIM = ("sim --machines 400 --rus-per-machine 1 --partitions 2 --trace e2e --e2e-jobs 150 "
             "--e2e-train 500")
SCHED_SMALL = ("sim --machines 64 --rus-per-machine 1 --machines-per-rack 16 --racks-per-cell 2 "
               "--partitions 2 --time-scale 1")


@case
def cli_sim_sched_fifo():
    """E2E-like jobs in virtual time; FIFO byte-identical across two runs (the MILP modes
    depend on the solver's wall-clock budget)."""
    for k in (1, 2):
        rusk("%s --sched fifo --json sf%d.json --csv sf%d.csv" % (SCHED_SIM, k, k))
    cmp("sf1.json", "sf2.json")
    cmp("sf1.csv", "sf2.csv")
    _, s = sched("sf1.json")
    assert s["mode"] == "fifo" and s["preempts"] == 0 and s["cycles_planned"] == 0, s


@case
def cli_sim_sched_3sigma():
    rusk(SCHED_SIM + " --sched 3sigma --plan-budget-ms 20 --json sched_3sigma.json")
    _, s = sched("sched_3sigma.json")
    assert s["mode"] == "3sigma" and s["cycles_planned"] > 0 and \
        s["milp"] + s["milp_at_budget"] > 0 and s["pred_expert"] > 0, s


@case
def cli_sim_sched_csv():
    """A CSV trace with user, job_name and deadline_s (empty: best effort): the trace's
    deadlines, not drawn ones; Prio preempts BE jobs for SLO jobs and misses fewer than FIFO."""
    for m in ("fifo", "prio"):
        rusk("sim --machines 400 --rus-per-machine 1 --partitions 2 --trace %s --time-scale 1 "
             "--sched %s --json sc_%s.json" % (data("sched_jobs.csv"), m, m))
    _, s = sched("sc_prio.json")
    f = load("sc_fifo.json")["sched"]
    assert s["slo_jobs"] == f["slo_jobs"] == 97 and s["jobs"] == 160, s
    assert s["preempts"] > 0 and f["preempts"] == 0, (s, f)
    assert s["slo_miss_pct"] < f["slo_miss_pct"], (s["slo_miss_pct"], f["slo_miss_pct"])


@case
def cli_sim_sched_gen():
    """The generator's tasks with drawn deadlines (--slo-share, --slack)."""
    rusk("sim --machines 400 --rus-per-machine 1 --partitions 2 --rate 60 --duration-s 10 "
         "--task-ms 4000 --task-dist exp --task-rus 4 --sched point-real --slo-share 0.3 "
         "--slack 50 --json sg.json")
    _, s = sched("sg.json")
    assert abs(s["slo_jobs"] / s["jobs"] - 0.3) < 0.1, s


@case
def cli_run_sched():
    """Real time: the planner thread, agents and completer together (also under TSan)."""
    rusk("run --machines 400 --rus-per-machine 1 --partitions 2 --trace e2e --e2e-jobs 120 "
         "--e2e-train 300 --sched 3sigma --duration-s 2 --drain-s 14400 --plan-budget-ms 20 "
         "--quiet --json rs.json")
    sched("rs.json")


@case
def cli_sim_sched_cold_start():
    """A cold start (nothing learned) still starts SLO jobs under 3sigma and point-real (an
    optimistic first estimate, not a slot that exceeds every short deadline)."""
    for m in ("3sigma", "point-real"):
        rusk("%s --trace %s --sched %s --plan-budget-ms 20 --json cold_%s.json" %
             (SCHED_SMALL, data("sched_cold.csv"), m, m))
        _, s = sched("cold_%s.json" % m)
        assert s["slo_jobs"] == 50 and s["slo_met"] >= 45, s


@case
def cli_sim_sched_trace_be():
    """A trace without deadlines is all best effort unless --slo-share is given."""
    rusk("%s --trace %s --sched fifo --json tbe.json" % (SCHED_SMALL, data("sched_all_be.csv")))
    _, s = sched("tbe.json")
    assert s["slo_jobs"] == 0 and s["be_jobs"] == 40, s
    rusk("%s --trace %s --sched fifo --slo-share 1 --json tslo.json" %
         (SCHED_SMALL, data("sched_all_be.csv")))
    _, s = sched("tslo.json")
    assert s["slo_jobs"] == 40, s


@case
def cli_sim_sched_trace_priority():
    """A trace priority's preemption requeues the planner's job, which then runs its whole
    duration (BE latency at least the duration), not ends at its next placement."""
    rusk("sim --machines 8 --rus-per-machine 1 --machines-per-rack 4 --racks-per-cell 1 "
         "--partitions 2 --gap-ms 10000 --time-scale 1 --trace %s --sched fifo "
         "--plan-tick-s 0.5 --plan-slot-s 3 --json tprio.json" % data("sched_prio.csv"))
    d, s = sched("tprio.json")
    assert d["tasks"]["preempted"] > 0, d["tasks"]
    assert s["be_done"] == s["be_jobs"] == 108 and s["be_latency_s"] >= 74.5, s


@case
def cli_sim_sched_skip_cycles():
    """Planning cycles in which nothing changed are skipped (a saturated 128-core trace at
    --time-scale 100: 5,670 cycles, now about 1,000; fifo's decisions are the same)."""
    for m in ("3sigma", "fifo"):
        rusk("sim --machines 64 --rus-per-machine 2 --machines-per-rack 16 --racks-per-cell 1 "
             "--partitions 4 --trace %s --time-scale 100 --sched %s --plan-budget-ms 20 "
             "--json sat_%s.json" % (data("sched_saturated.csv"), m, m))
        d, s = sched("sat_%s.json" % m)
        n = s["cycles"] + s["cycles_skipped"]
        assert n >= d["run"]["elapsed_s"] / s["tick_s"] * 0.9 and s["cycles"] < 0.3 * n, s


refusal("cli_sched_e2e_needs_sched", "sim --trace e2e", r"--trace e2e needs --sched")
refusal("cli_sched_bad_mode", "sim --sched edf", r"--sched: 'edf' is not")
refusal("cli_sched_bad_slack", "run --sched prio --slack -5", r"--slack")
refusal("cli_sched_no_classify", "sim --sched prio --quality interference --classify on",
        r"--sched does not combine with --classify")
refusal("cli_sched_e2e_no_rate", "sim --trace e2e --sched fifo --rate 5",
        r"--rate does not apply to --trace e2e")
refusal("cli_sched_flag_needs_sched", "sim --slo-share 0.3", r"--slo-share needs --sched")

if __name__ == "__main__":
    raise SystemExit(main())
