#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk sim, the main job in virtual time: byte-identical outputs for one seed, event
order, priorities, the central baseline, the simulator's progress guarantees (issue 20: each
ran forever, lost tasks or miscounted before its fix), quiet time skipped, the predictor
beside admission control, and bad values."""
from rusk_cli import (CASES, case, cmp, grep, last_line, load, main, match, need_openb, refusal,
                      rusk, same_bytes, write)

SIM_FLAGS = ("--machines 2000 --partitions 4 --agents 4 --rate 3000 --phases 60,95 --phase-s 2 "
             "--task-ms 1000 --task-dist lognormal --task-rus 2 --quality interference "
             "--classify oracle --admission on --priority-share 0.2 --decision-us 300 --commit-latency-us 50 "
             "--sync-latency-us 20")


@case
def cli_sim_deterministic():
    """Identical bytes for identical flags and seed (a busy configuration: admission,
    priorities with preemption, incremental multi-RU tasks, commit latency, 4 agents; run
    times from the true profiles where tasks land, --classify oracle: no wall-clock field)."""
    rusk("sim %s --json s1.json --csv s1.csv" % SIM_FLAGS)
    rusk("sim %s --json s2.json --csv s2.csv" % SIM_FLAGS)
    cmp("s1.json", "s2.json")
    cmp("s1.csv", "s2.csv")
    grep(r'"counts_add_up": true', "s1.json")
    rusk("sim %s --seed 2 --json s3.json" % SIM_FLAGS)
    assert not same_bytes("s1.json", "s3.json"), "seed 2 gave seed 1's JSON"


@case
def cli_sim_event_order():
    """One agent, no conflicts: every delay is its wait in the queue plus exactly one
    decision (250 us) and one commit latency (100 us), so the means differ by 350 us."""
    rusk("sim --machines 2000 --partitions 4 --agents 1 --rate 400 --duration-s 2 --task-ms 100 "
         "--cost flat --decision-us 250 --commit-latency-us 100 --sample 8 --json order.json")
    d = load("order.json")
    q = d["phases_us"]
    x = d["delay_us"]["mean"] - q["queue"]["mean"]
    assert abs(x - 350) < 0.2 and q["queue"]["p99"] > 0 and d["conflicts"]["total"] == 0, (x, q)


@case
def cli_sim_priorities():
    """Overloaded agents; high-priority tasks bypass the queue."""
    rusk("sim --machines 2000 --partitions 4 --agents 2 --rate 9000 --duration-s 2 --task-ms 100 "
         "--priority-share 0.1 --json prio.json")
    d = load("prio.json")["priority"]
    assert d["delay_high_us"]["p50"] < d["delay_normal_us"]["p50"] / 10, d


@case
def cli_sim_central():
    """The central baseline in virtual time: it scans and commits at its commit event."""
    r = rusk("sim --strategy central --machines 2000 --partitions 4 --agents 2 --duration-s 1 "
             "--rate 1000 --task-ms 100")
    match(r"1016 submitted, 1016 placed.*counts add up: yes", r.out)


refusal("cli_bad_alpha", "sim --alpha 2", r"--alpha: '2' is not a number")
refusal("cli_bad_decision", "sim --decision-us -1", r"--decision-us: '-1' is not a number")
refusal("cli_sim_exit2", "sim --buckets 99", r"")
refusal("cli_phases_with_duration", "sim --phases 50,80 --duration-s 1",
        r"--duration-s and --phases cannot be combined")

# Issue 20: the simulator. TIMEOUT catches a hang.
I20_SIM = "sim --machines 1000 --partitions 2 --duration-s 1"


def all_placed(path):
    """exit 0, every task placed, counts add up, nothing stranded."""
    d = load(path)
    t = d["tasks"]
    c = d["checks"]
    assert t["backlog_end"] == 0 and t["committed"] - t["preempted"] == t["submitted"] and \
        c["counts_add_up"] and c["queued_on_idle_cluster"] == 0, (t, c)


@case
def sim_i20_decision_zero():
    """--decision-us 0 (and 0.001): the virtual clock stood still once a task found no room."""
    for dus in ("0", "0.001"):
        rusk("%s --rate 4000 --task-ms 1000 --decision-us %s --json i20.json" % (I20_SIM, dus))
        all_placed("i20.json")


@case
def sim_i20_large_tasks():
    """661-RU tasks, 3.3x overloaded: > 300 s of CPU before (O(n m) selection retried every
    250 us); now < 2 s."""
    rusk("%s --rate 200 --task-ms 100 --task-rus 661 --json i20l.json" % I20_SIM)
    d = load("i20l.json")
    t = d["tasks"]
    assert d["checks"]["counts_add_up"] and t["committed"] == t["submitted"] > 150, t


def drained(flags):
    """Tasks left queued for good after the last arrival (71 at 0% utilization, exit 0)."""

    def run_it():
        rusk("%s --rate 4000 --task-ms 1000 %s --json i20.json" % (I20_SIM, flags))
        all_placed("i20.json")

    return run_it


for _name, _flags in (("plain", ""), ("admission", "--admission on"), ("gang", "--gang"),
                      ("central", "--strategy central"), ("priority", "--priority-share 0.2")):
    CASES["sim_i20_drained_" + _name] = drained(_flags)


@case
def sim_i20_stranded_fails():
    """A run that ends with tasks that fit queued on an idle cluster fails its check (views
    never synced again within the run, so agents never see the room)."""
    r = rusk("%s --rate 4000 --task-ms 1000 --sync state --gap-ms 100000 --json i20s.json" %
             I20_SIM, status=1)
    grep(r'"queued_on_idle_cluster": [1-9]', "i20s.json")
    match(r"NO: [0-9]+ tasks that fit left queued on an idle cluster", r.out)


@case
def sim_i20_no_idle_preemption():
    """No preemption at 0.1% utilization (the openb pod list on its own cluster, where every
    pod fits: Quality-first preempted 48 tasks; on the default 2-RU machines every pod was
    refused as infeasible and the check held for nothing), and a 40-RU task at 10% load
    placed at its first decision (16 re-queued)."""
    need_openb()
    rusk("sim --trace openb --cluster openb --agents 4 --duration-s 5 --strategy quality "
         "--json i20p.json")
    d = load("i20p.json")
    t = d["tasks"]
    assert t["committed"] == t["submitted"] > 8000 and t["high_priority_placed"] > 0, t
    assert t["preempted"] == 0 and d["utilization"]["mean"] < 0.01, (t, d["utilization"])
    rusk("sim --machines 2000 --partitions 4 --duration-s 1 --rate 100 --task-ms 500 "
         "--task-rus 40 --json i20p.json")
    d = load("i20p.json")
    assert d["conflicts"]["requeued"] == 0 and d["tasks"]["preempted"] == 0, d["conflicts"]


@case
def sim_i20_conflict_units():
    """Conflict share in one unit (commits that lost RUs, of commits): 16-RU incremental
    tasks read 328% when lost RUs were divided by commits."""
    r = rusk("%s --rate 400 --task-ms 100 --task-rus 16 --json i20c.json" % I20_SIM)
    match(r"conflicts +[0-9]+ commits lost RUs", r.stdout)
    c = load("i20c.json")["conflicts"]
    assert c["unit"].startswith("commit attempts") and 0 < c["total"] <= c["attempts"] and \
        c["rate"] <= 1 and c["rus_lost"] > c["total"], c


@case
def cli_sim_quiet_skip():
    """Idle and quiet time is skipped to the next event (a 3,000,000 s gap at --time-scale 1
    was ~70 minutes), with the same rows and figures; a time scale that would stretch a
    trace past 1e8 s is refused naming the flag."""
    write("gap3m.csv", "arrival_s,duration_s,rus\n0,1,1\n3000000,1,1\n3000000.5,2,2\n")
    rusk("sim --machines 400 --partitions 2 --trace gap3m.csv --time-scale 1 --json gap3m.json",
         merge=False)
    d = load("gap3m.json")
    t = d["tasks"]
    assert t["submitted"] == t["committed"] == 3 and d["run"]["elapsed_s"] >= 3000001 and \
        d["checks"]["counts_add_up"], (t, d["run"])
    r = rusk("sim --trace gap3m.csv --time-scale 1e-9", status=2)
    match(r"--time-scale 1e-09: the trace's 3e\+06 s would last 3e\+15 s; at most 1e\+08 s",
          r.out)


@case
def cli_sim_not_stuck_overloaded():
    """A cluster idle only for the instant its last tasks ended is not "room nothing uses"
    (--task-ms 5000 exited 1 at the drain window's end; 4900 and 7000 passed)."""
    for t in (4900, 5000, 7000):
        rusk("sim --machines 1 --partitions 1 --agents 1 --duration-s 2 --task-ms %d "
             "--json ovl.json" % t)
        grep(r'"queued_on_idle_cluster": 0', "ovl.json")


# Issue 18: the predictor beside admission control (--admit-predict, admit_pred.c).
APRED_SIM = ("sim --machines 100 --rus-per-machine 8 --machines-per-rack 10 --racks-per-cell 1 "
             "--partitions 10 --agents 10 --task-ms 100 --task-dist fixed --sync diff "
             "--gap-ms 20 --decision-us 50 --admission on --admit-predict on --duration-s 3 "
             "--rate 1900 --task-rus 4 --gang")


@case
def cli_sim_admit_predict():
    """With fixed 100 ms tasks the holders' remaining runtimes say exactly when the missing
    RUs free up: the predictor's estimate is within half the observed wait for nearly every
    wait, and at least as often as the interval history's; two runs byte-identical."""
    for k in (1, 2):
        rusk("%s --json ap%d.json" % (APRED_SIM, k))
    cmp("ap1.json", "ap2.json")
    a = load("ap1.json")["admission_estimates"]
    assert a["waits"] > 50 and a["resolved"] + a["open_at_end"] == a["waits"], a
    k = a["interval_history"]
    p = a["runtime_distributions"]
    assert p["n"] == k["n"] <= a["resolved"] and p["n"] > 0, a
    assert p["within_50pct"] >= 0.9 and p["within_50pct"] >= k["within_50pct"], a


@case
def cli_run_admit_predict():
    rusk("run --machines 100 --rus-per-machine 8 --machines-per-rack 10 --racks-per-cell 1 "
         "--partitions 10 --agents 2 --task-ms 100 --admission on --admit-predict on "
         "--duration-s 2 --rate 7600 --quiet --json apr.json")
    d = load("apr.json")
    a = d["admission_estimates"]
    assert a["resolved"] + a["open_at_end"] == a["waits"], a
    assert d["checks"]["counts_add_up"], d["checks"]


refusal("cli_admit_predict_needs_admission", "sim --admit-predict on",
        r"--admit-predict on needs --admission on")


@case
def cli_sim_default_agents():
    """Issue 29, item 8: rusk sim's default is ParSync's 20 schedulers (as many as the
    partitions allow with diff sync)."""
    rusk("sim --machines 4000 --rate 100 --duration-s 0.2 --json da20.json")
    rusk("sim --machines 2000 --partitions 4 --rate 100 --duration-s 0.2 --json da4.json")
    a, b = load("da20.json")["config"], load("da4.json")["config"]
    assert a["agents"] == 20 and a["partitions"] == 20 and b["agents"] == 4, (a, b)


@case
def cli_sim_drain_cap():
    """Issue 29, item 8: a run that ends at its drain cap with tasks queued says so, in the
    summary and the JSON; one that completes does not."""
    r = rusk("sim --machines 2000 --partitions 4 --agents 1 --cost flat --decision-us 10000 "
             "--rate 5000 --duration-s 1 --json dc.json")
    match(r"DRAIN CAP.*still queued: the offered load \(peak 5000 tasks/s\) exceeded what the "
          r"agents could decide \(about 100 tasks/s", r.out)
    d = load("dc.json")["run"]
    assert d["end"] == "drain_cap" and d["drain_cap"]["reached"] and \
        d["drain_cap"]["queued"] > 1000 and d["drain_cap"]["decision_capacity_per_s"] == 100.0, d
    r = rusk("sim --machines 2000 --partitions 4 --rate 100 --duration-s 1 --json dc2.json")
    assert "DRAIN CAP" not in r.out, r.out
    d = load("dc2.json")["run"]
    assert d["end"] == "completed" and not d["drain_cap"]["reached"], d

if __name__ == "__main__":
    raise SystemExit(main())
