#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Signals to `rusk run` / `rusk sim` (issue 20, items 2 and 11).

usage: cli_signals.py RUSK CASE   (run in a scratch directory: it writes files there)

  gap-sigint   a trace with a 119 s gap, --time-scale 1; SIGINT 1.5 s in, while the
               generator waits in the gap: the summary and the exit within 1 s,
               status 3
  run-sigterm  SIGTERM to a running `rusk run --json --csv`: summary, JSON that parses,
               says it was interrupted by SIGTERM and whose counts add up, a CSV with
               rows, status 3
  sim-sigint   SIGINT to a long `rusk sim --json --csv`: the same checks
  sim-day      SIGINT to `rusk sim --duration-s 86400` (a day at 4,000 tasks/s): the exit
               within 1 s of the summary (teardown cost what the run used; it took
               minutes and 24 GB when it touched every task slot the day could use)
Exit status 0 when the case passes; otherwise the reason on stderr and 1.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

INTERRUPTED = 3  # RUSK_EXIT_INTERRUPTED


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def signal_after(argv, sig, delay_s, exit_within_s, teardown_s=None):
    """Starts argv, waits for its header line, sends sig after delay_s, and waits for the
    exit (at most exit_within_s after the signal, and with teardown_s at most that long
    after the summary). Returns (status, stdout, stderr)."""
    env = dict(os.environ)
    # A ThreadSanitizer build would sleep 1 s at exit (to catch races there) by default.
    env["TSAN_OPTIONS"] = env.get("TSAN_OPTIONS", "") + " atexit_sleep_ms=0"
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    header = p.stdout.readline()  # printed and flushed once the set-up is done
    if not header.startswith("rusk "):
        p.kill()
        fail("no header line: %r %r" % (header, p.communicate()))
    time.sleep(delay_s)
    if p.poll() is not None:
        fail("ended before the signal: status %s" % p.returncode)
    t0 = time.monotonic()
    p.send_signal(sig)
    name = signal.Signals(sig).name
    # The summary's last line (flushed by the report), then the exit, within
    # exit_within_s; a watchdog ends a process that hangs.
    out = []
    watchdog = threading.Timer(exit_within_s + 5, p.kill)
    watchdog.start()
    for line in p.stdout:
        out.append(line)
        if line.lstrip().startswith("checks "):
            break
    summary_s = time.monotonic() - t0
    rest, err = p.communicate()
    watchdog.cancel()
    exit_s = time.monotonic() - t0
    print("summary %.3f s and exit %.3f s after %s, status %d" % (summary_s, exit_s, name,
                                                                   p.returncode))
    if summary_s > exit_within_s or exit_s > exit_within_s:
        fail("summary or exit later than %.1f s after %s" % (exit_within_s, name))
    if teardown_s is not None and exit_s - summary_s > teardown_s:
        fail("exit %.3f s after the summary (at most %.1f s)" % (exit_s - summary_s,
                                                                teardown_s))
    return p.returncode, header + "".join(out) + rest, err


def check_summary(status, out, err, sig):
    if status != INTERRUPTED:
        fail("status %d, expected %d; stderr: %s" % (status, INTERRUPTED, err))
    name = signal.Signals(sig).name
    if "(stopped: %s)" % name not in out:
        fail("summary does not say it was stopped by %s:\n%s" % (name, out))
    if "counts add up: yes" not in out:
        fail("summary checks:\n%s" % out)


def check_outputs(json_path, csv_path, sig):
    with open(json_path) as f:
        d = json.load(f)
    t, run = d["tasks"], d["run"]
    if not run["interrupted"] or run["end"] != signal.Signals(sig).name:
        fail("JSON run: %s" % run)
    if t["submitted"] != t["committed"] - t["preempted"] + t["rejected"] + t["backlog_end"]:
        fail("JSON counts do not add up: %s" % t)
    if not d["checks"]["counts_add_up"] or t["submitted"] == 0:
        fail("JSON checks: %s, tasks %s" % (d["checks"], t))
    with open(csv_path) as f:
        rows = f.read().splitlines()
    if len(rows) < 2 or not rows[0].startswith("second,"):
        fail("CSV has %d lines: %s" % (len(rows), rows[:2]))
    print("JSON: %s; CSV: %d rows" % (t, len(rows) - 1))


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    rusk, case = sys.argv[1], sys.argv[2]
    small = ["--machines", "4000", "--partitions", "4", "--agents", "2"]
    if case == "gap-sigint":
        with open("gap.csv", "w") as f:
            f.write("arrival_s,duration_s,rus\n0,1,1\n1,1,1\n120,1,1\n121,1,1\n")
        status, out, err = signal_after(
            [rusk, "run", "--trace", "gap.csv", "--time-scale", "1"] + small,
            signal.SIGINT, 1.5, 2.0)
        check_summary(status, out, err, signal.SIGINT)
    elif case == "run-sigterm":
        for f in ("term.json", "term.csv"):
            if os.path.exists(f):
                os.remove(f)
        status, out, err = signal_after(
            [rusk, "run", "--rate", "5000", "--duration-s", "60", "--task-ms", "200",
             "--json", "term.json", "--csv", "term.csv"] + small, signal.SIGTERM, 2.5, 2.0)
        check_summary(status, out, err, signal.SIGTERM)
        check_outputs("term.json", "term.csv", signal.SIGTERM)
    elif case == "sim-sigint":
        for f in ("simint.json", "simint.csv"):
            if os.path.exists(f):
                os.remove(f)
        status, out, err = signal_after(
            [rusk, "sim", "--rate", "4000", "--duration-s", "3000", "--task-ms", "200",
             "--json", "simint.json", "--csv", "simint.csv"] + small,
            signal.SIGINT, 1.5, 2.0)
        check_summary(status, out, err, signal.SIGINT)
        check_outputs("simint.json", "simint.csv", signal.SIGINT)
    elif case == "sim-day":
        status, out, err = signal_after(
            [rusk, "sim", "--rate", "4000", "--duration-s", "86400", "--task-ms", "200"]
            + small, signal.SIGINT, 1.0, 3.0, teardown_s=1.0)
        check_summary(status, out, err, signal.SIGINT)
    else:
        fail("unknown case %r" % case)
    print("PASS " + case)


if __name__ == "__main__":
    main()
