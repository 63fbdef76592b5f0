#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Signals at random times to `rusk run` and `rusk sim` (issue 20's acceptance, issue 33's
repeated signals, SIGHUP and closed stdout).

usage: signals.py --rusk PATH [--rounds N] [--seconds S] [--seed K] [--max-delay D]
                  [--dir DIR]

Each round picks (from a generator seeded with K, so a failing round can be replayed) the
command (run or sim), an action (see ACTIONS: one SIGINT or SIGTERM, two SIGTERMs 10 ms
apart, SIGHUP, or stdout closed then SIGINT), a workload (see CASES) and a delay in [0, D]
seconds after the run's header line, acts, and checks:
  - the process exits within 5 s of the (last) signal with status 3 (interrupted), never
    killed: a second SIGTERM within the grace period must not cost the report;
  - the summary was printed, says which signal stopped it and that counts add up (stdout
    closed: instead, stderr says that stdout could not be written);
  - the --json is complete (it parses), says interrupted by that signal, and submitted =
    placed - preempted + rejected + queued at the end (also rusk's own check);
  - the --csv has its header (and a row per second that ran).
Rounds go on until both N rounds and S seconds are done. Exit status 0 when every round
passed; the first failure is printed with its round's parameters and the status is 1.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

INTERRUPTED = 3  # RUSK_EXIT_INTERRUPTED

SMALL = ["--machines", "4000", "--partitions", "4", "--agents", "2"]
# name -> (flags, commands it applies to). Every workload lasts far longer than any delay.
CASES = {
    "open-loop": (["--rate", "5000", "--duration-s", "600", "--task-ms", "200"], "run sim"),
    "saturated": (["--rate", "20000", "--duration-s", "200", "--task-ms", "500"], "run sim"),
    "multi-ru": (["--rate", "3000", "--duration-s", "600", "--task-ms", "200",
                  "--task-rus", "4"], "run sim"),
    "gang-prio-admission": (["--rate", "3000", "--duration-s", "600", "--task-ms", "200",
                             "--task-rus", "2", "--gang", "--priority-share", "0.1",
                             "--admission", "on"], "run sim"),
    "trace-gap": (["--trace", "TRACE_GAP", "--time-scale", "1"], "run"),
}


def write_gap_trace(path):
    with open(path, "w") as f:
        f.write("arrival_s,duration_s,rus\n")
        for t in (0, 0.5, 1, 300, 301):
            f.write("%s,1,1\n" % t)


# name -> (signals sent, 10 ms apart; the signal the report must name; stdout closed first)
ACTIONS = {
    "SIGINT": ([signal.SIGINT], signal.SIGINT, False),
    "SIGTERM": ([signal.SIGTERM], signal.SIGTERM, False),
    "two-SIGTERMs": ([signal.SIGTERM, signal.SIGTERM], signal.SIGTERM, False),
    "SIGHUP": ([signal.SIGHUP], signal.SIGHUP, False),
    "closed-stdout": ([signal.SIGINT], signal.SIGINT, True),
}


def one_round(rusk, cmd, action, case, delay, d):
    flags = [d["trace"] if x == "TRACE_GAP" else x for x in CASES[case][0]]
    js, csv = os.path.join(d["dir"], "sig.json"), os.path.join(d["dir"], "sig.csv")
    for f in (js, csv):
        if os.path.exists(f):
            os.remove(f)
    argv = [rusk, cmd] + SMALL + flags + ["--json", js, "--csv", csv]
    env = dict(os.environ)  # a TSan build would sleep 1 s at exit by default
    env["TSAN_OPTIONS"] = env.get("TSAN_OPTIONS", "") + " atexit_sleep_ms=0"
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    header = p.stdout.readline()
    if not header.startswith("rusk "):
        p.kill()
        return "no header: %r %r" % (header, p.communicate())
    sigs, sig, closed = ACTIONS[action]
    if closed:  # the reader of stdout leaves (`| head -1`)
        p.stdout.close()
    time.sleep(delay)
    if p.poll() is not None:
        return "ended before the signal, status %d" % p.returncode
    for k, s in enumerate(sigs):
        if k > 0:
            time.sleep(0.01)
        t0 = time.monotonic()
        p.send_signal(s)
    try:
        if closed:
            err = p.stderr.read()
            p.wait(timeout=5)
            out = ""
        else:
            out, err = p.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return "still running 5 s after the signal"
    took = time.monotonic() - t0
    name = signal.Signals(sig).name
    if p.returncode != INTERRUPTED:
        return "status %d (expected %d); stderr: %s" % (p.returncode, INTERRUPTED, err)
    if closed and "rusk: stdout: write failed" not in err:
        return "stdout closed, stderr does not say so: %r" % err
    if not closed and ("(stopped: %s)" % name not in out or "counts add up: yes" not in out):
        return "summary:\n" + header + out
    try:
        with open(js) as f:
            j = json.load(f)
    except (OSError, ValueError) as e:
        return "JSON: %s" % e
    t = j["tasks"]
    if j["run"]["end"] != name or not j["run"]["interrupted"]:
        return "JSON run: %s" % j["run"]
    if t["submitted"] != t["committed"] - t["preempted"] + t["rejected"] + t["backlog_end"]:
        return "JSON counts do not add up: %s" % t
    if not j["checks"]["counts_add_up"]:
        return "JSON checks: %s" % j["checks"]
    with open(csv) as f:
        rows = f.read().splitlines()
    if not rows or not rows[0].startswith("second,"):
        return "CSV: %r" % rows[:1]
    d["log"] = "%d submitted, %d placed, %d rejected, %d queued; %d CSV rows; exit %.3f s" % (
        t["submitted"], t["committed"], t["rejected"], t["backlog_end"], len(rows) - 1, took)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rusk", required=True)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-delay", type=float, default=1.5)
    ap.add_argument("--dir", default=".")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    d = {"dir": a.dir, "trace": os.path.join(a.dir, "sig_gap.csv")}
    write_gap_trace(d["trace"])
    start, k = time.monotonic(), 0
    while k < a.rounds or time.monotonic() - start < a.seconds:
        cmd = rng.choice(["run", "sim"])
        case = rng.choice([c for c, (_, cmds) in sorted(CASES.items()) if cmd in cmds.split()])
        action = rng.choice(sorted(ACTIONS))
        delay = round(rng.uniform(0, a.max_delay), 3)
        what = "round %d (seed %d): rusk %s %s, %s after %.3f s" % (
            k, a.seed, cmd, case, action, delay)
        why = one_round(a.rusk, cmd, action, case, delay, d)
        if why is not None:
            print("FAIL %s: %s" % (what, why))
            return 1
        print("ok   %s: %s" % (what, d["log"]), flush=True)
        k += 1
    print("PASS: %d rounds" % k)
    return 0


if __name__ == "__main__":
    sys.exit(main())
