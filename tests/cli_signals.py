#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Signals to `rusk run` / `rusk sim` (issue 20, items 2 and 11; issue 33, items 3, 4,
10 and 13).

usage: cli_signals.py RUSK CASE   (run in a scratch directory: it writes files there)

  gap-sigint   a trace with a 119 s gap, --time-scale 1; SIGINT 1.5 s in, while the
               generator waits in the gap: the summary and the exit within 1 s,
               status 3
  run-sigterm  SIGTERM to a running `rusk run --json --csv`: summary, JSON that parses,
               says it was interrupted by SIGTERM and whose counts add up, a CSV with
               rows, status 3
  sim-sigint   SIGINT to a long `rusk sim --json --csv`: the same checks
  sim-day      SIGINT to `rusk sim --duration-s 100000` (10^5 s at 4,000 tasks/s): the exit
               within 3 s of the summary (teardown cost what the run used; it took
               minutes and 24 GB when it touched every task slot the day could use)
  two-sigterms two SIGTERMs 10 ms apart (GNU timeout signals the child, then its process
               group) to sim and to run: the second is within the grace period, so the
               report is whole: status 3, JSON and CSV as above
  late-second  the grace rule's other half: SIGTERM, then rusk blocks writing the summary
               to a stdout nobody reads; its --json and --csv are already complete (files
               before the summary); a second SIGTERM 2.5 s later (past the 2 s grace)
               ends it at once, by SIGTERM
  sighup       SIGHUP to sim: the same checks as SIGINT, the report naming SIGHUP
  closed-stdout  `rusk run --json F | head -1`: the reader of stdout leaves after the
               header; the run ends on its own, its JSON is complete, and the closed
               stdout is an error (status 1, "rusk: stdout: write failed"), not a
               SIGPIPE that kills it (141) before its files
  pipe-read    SIGINT while sim reads its --trace from a pipe (a FIFO): status 3
               (interrupted), not 2 (a bad trace)
  teardown     SIGINT to the default-sized sim: the exit within 1 s of the summary
               (issue 33 item 10; the time is rusk_dispatch_destroy's, which visits every
               task slot: registered disabled until the dispatcher's fix lands)
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


GRACE_S = 2  # DRV_STOP_GRACE_S (bench/cli/stop.c)
SMALL = ["--machines", "4000", "--partitions", "4", "--agents", "2"]
# Runs long enough for any signal, with few enough tasks that the teardown stays short
# (item 10: it visits every task slot). sim: a day at 5 tasks/s, slowed down by its 32
# agents' per-second histograms (several seconds of wall time).
LONG = {"run": SMALL + ["--rate", "2000", "--duration-s", "600", "--task-ms", "200"],
        "sim": ["--machines", "8000", "--partitions", "32", "--agents", "32", "--rate", "5",
                "--duration-s", "86400", "--task-ms", "200"]}


def tsan_env():
    env = dict(os.environ)
    env["TSAN_OPTIONS"] = env.get("TSAN_OPTIONS", "") + " atexit_sleep_ms=0"
    return env


def start(argv, **kw):
    """Starts argv with stdout and stderr piped (unless given); returns (process, header)."""
    kw.setdefault("stdout", subprocess.PIPE)
    p = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=tsan_env(), **kw)
    return p


def header_of(p):
    header = p.stdout.readline()
    if not header.startswith("rusk "):
        p.kill()
        fail("no header line: %r %r" % (header, p.communicate()))
    return header


def finish(p, within_s, what):
    try:
        out, err = p.communicate(timeout=within_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        fail("%s: still running %.0f s later" % (what, within_s))
    return out, err


def wait_cpu(p, cpu_s, limit_s=60):
    """Waits until process p has used cpu_s seconds of CPU (user + system, all threads),
    at most limit_s of wall time: a run's progress, whatever the machine's load (a fixed
    sleep gave a sanitizer build on a loaded machine too little time to finish a second
    of its run)."""
    tick = os.sysconf("SC_CLK_TCK")
    end = time.monotonic() + limit_s
    while time.monotonic() < end and p.poll() is None:
        with open("/proc/%d/stat" % p.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        if (int(fields[11]) + int(fields[12])) / tick >= cpu_s:
            return
        time.sleep(0.05)


def remove(*paths):
    for f in paths:
        if os.path.lexists(f):
            os.remove(f)


def two_sigterms(rusk):
    for cmd in ("sim", "run"):
        js, csv = "two_%s.json" % cmd, "two_%s.csv" % cmd
        remove(js, csv)
        p = start([rusk, cmd] + LONG[cmd] + ["--json", js, "--csv", csv])
        header_of(p)
        time.sleep(2.5)  # a CSV row a second
        p.send_signal(signal.SIGTERM)
        time.sleep(0.01)
        p.send_signal(signal.SIGTERM)
        out, err = finish(p, 60, cmd)
        print("%s: two SIGTERMs 10 ms apart: status %d" % (cmd, p.returncode))
        check_summary(p.returncode, out, err, signal.SIGTERM)
        check_outputs(js, csv, signal.SIGTERM)


def late_second(rusk):
    remove("late.json", "late.csv")
    r, w = os.pipe()
    p = start([rusk, "sim"] + LONG["sim"] + ["--json", "late.json", "--csv", "late.csv"],
              stdout=w)
    header = b""
    while not header.endswith(b"\n"):
        header += os.read(r, 1)
    if not header.startswith(b"rusk "):
        p.kill()
        fail("no header line: %r" % header)
    # Nobody reads stdout from now on: fill the pipe, so that the summary blocks. (Through
    # a file description of its own: O_NONBLOCK on rusk's would make its writes fail.)
    fill = os.open("/proc/self/fd/%d" % w, os.O_WRONLY | os.O_NONBLOCK)
    try:
        while True:
            os.write(fill, b"x" * 4096)
    except BlockingIOError:
        pass
    os.close(fill)
    wait_cpu(p, 1.0)
    p.send_signal(signal.SIGTERM)
    time.sleep(GRACE_S + 0.5)
    if p.poll() is not None:
        fail("ended with status %d while its summary could not be written" % p.returncode)
    # The files were written before the summary (which is blocked).
    check_outputs("late.json", "late.csv", signal.SIGTERM)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("a second SIGTERM past the grace period did not end it")
    took = time.monotonic() - t0
    os.close(r)
    os.close(w)
    p.stderr.close()
    print("second SIGTERM %.1f s after the first: ended %.3f s later by signal %d" %
          (GRACE_S + 0.5, took, -p.returncode))
    if p.returncode != -signal.SIGTERM:
        fail("status %d, expected death by SIGTERM" % p.returncode)
    if took > 10:
        fail("ended %.1f s after the second signal, not at once" % took)


def sighup(rusk):
    remove("hup.json", "hup.csv")
    status, out, err = signal_after(
        [rusk, "sim"] + LONG["sim"] + ["--json", "hup.json", "--csv", "hup.csv"],
        signal.SIGHUP, 1.0, 30.0)
    check_summary(status, out, err, signal.SIGHUP)
    check_outputs("hup.json", "hup.csv", signal.SIGHUP)


def closed_stdout(rusk):
    remove("closed.json")
    p = start([rusk, "run"] + SMALL + ["--rate", "5000", "--duration-s", "1.5", "--task-ms",
                                       "100", "--json", "closed.json"])
    header_of(p)
    p.stdout.close()  # `| head -1`: the reader is gone
    try:
        err = p.stderr.read()
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("still running 60 s after a 1.5 s run")
    print("stdout closed after the header: status %d, stderr %r" % (p.returncode, err))
    if p.returncode != 1 or "rusk: stdout: write failed" not in err:
        fail("status %d (expected 1 and a message naming stdout)" % p.returncode)
    with open("closed.json") as f:
        d = json.load(f)
    t = d["tasks"]
    if d["run"]["end"] != "completed" or not d["checks"]["counts_add_up"] or t["submitted"] == 0:
        fail("JSON: %s %s %s" % (d["run"], d["checks"], t))
    print("JSON complete: %s, %d tasks" % (d["run"], t["submitted"]))


def pipe_read(rusk):
    remove("trace.fifo")
    os.mkfifo("trace.fifo")
    p = start([rusk, "sim", "--trace", "trace.fifo", "--time-scale", "1"] + SMALL)
    w = open("trace.fifo", "w")  # returns once rusk has opened it for reading
    w.write("arrival_s,duration_s,rus\n0,1,1\n")
    w.flush()
    time.sleep(0.5)  # rusk waits for more of the trace
    p.send_signal(signal.SIGINT)
    out, err = finish(p, 30, "pipe read")
    w.close()
    print("SIGINT during the trace's read from a pipe: status %d, %s" % (p.returncode,
                                                                         err.strip()))
    if p.returncode != INTERRUPTED or "interrupted" not in err:
        fail("status %d (expected %d, interrupted)" % (p.returncode, INTERRUPTED))


def teardown(rusk):
    remove("td.json")
    p = start([rusk, "sim", "--rate", "4000", "--duration-s", "3000", "--task-ms", "200",
               "--json", "td.json"] + SMALL)
    header_of(p)
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    for line in p.stdout:
        if line.lstrip().startswith("checks "):
            break
    t0 = time.monotonic()
    finish(p, 120, "teardown")
    took = time.monotonic() - t0
    print("exit %.3f s after the summary (status %d)" % (took, p.returncode))
    if took > 1.0:
        fail("teardown took %.1f s (at most 1 s)" % took)


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
        # The bound catches a teardown that visits every slot the day could use (minutes,
        # 24 GB); a run that used little tears down in about 0.1 s, but under ASan on a
        # 2-core machine with a load of 12 it took 1.15 s of wall time, hence 3 s.
        status, out, err = signal_after(
            [rusk, "sim", "--rate", "4000", "--duration-s", "100000", "--task-ms", "200"]
            + small, signal.SIGINT, 1.0, 5.0, teardown_s=3.0)
        check_summary(status, out, err, signal.SIGINT)
    elif case in CASES:
        CASES[case](rusk)
    else:
        fail("unknown case %r" % case)
    print("PASS " + case)


CASES = {"two-sigterms": two_sigterms, "late-second": late_second, "sighup": sighup,
         "closed-stdout": closed_stdout, "pipe-read": pipe_read, "teardown": teardown}

if __name__ == "__main__":
    main()
