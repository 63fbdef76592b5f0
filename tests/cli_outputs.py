#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Output files of every command (issue 33, items 1, 2 and 5).

usage: cli_outputs.py RUSK CASE [DATA]   (run in a scratch directory: it writes files there;
                                         DATA: tests/data)

  name-input      an output that names an input, by its path, through a hard link or a
                  symbolic link, is refused with exit 2 before anything is written, and
                  the input is byte for byte what it was: predict's TRACE, sim's
                  --cluster node list and --trace, classify's --matrix
  keep-previous   a previous result at an output's path survives a run that fails
                  (a malformed trace), one killed by SIGKILL, and an output that cannot
                  be written; an interrupted run replaces it with the complete JSON of
                  the part that ran; no temporary file is left after a clean exit; a
                  symbolic link to the output stays a link to the new file
  write-failures  a write that fails exits non-zero naming the path: --csv /dev/full for
                  experiment, stdout on /dev/full for sim, predict and plan
Exit status 0 when the case passes; otherwise the reason on stderr and 1.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(argv, **kw):
    """Runs argv to its end; returns (status, stdout, stderr)."""
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    return p.returncode, p.stdout, p.stderr


def read(path):
    with open(path, "rb") as f:
        return f.read()


def expect_refused(what, argv, must_stay):
    """argv must exit 2 with "name the same file", leaving must_stay's bytes as they were."""
    before = {p: read(p) for p in must_stay}
    status, out, err = run(argv)
    if status != 2 or "name the same file" not in err:
        fail("%s: status %d, stderr %r (expected 2, 'name the same file')" % (what, status,
                                                                            err))
    for p, b in before.items():
        if read(p) != b:
            fail("%s: %s changed (%d bytes, was %d)" % (what, p, len(read(p)), len(b)))
    print("ok   %s: %s" % (what, err.strip().splitlines()[0]))


def name_input(rusk, data):
    shutil.copy(os.path.join(data, "predict_ok_swf.txt"), "in.swf")
    shutil.copy(os.path.join(data, "cls_good.csv"), "in_matrix.csv")
    shutil.copy(os.path.join(data, "nodes_gpu.csv"), "in_nodes.csv")
    shutil.copy(os.path.join(data, "trace_cpu.csv"), "in_trace.csv")
    for f in ("in_nodes_hard.csv", "in_trace_link.csv"):
        if os.path.lexists(f):
            os.remove(f)
    os.link("in_nodes.csv", "in_nodes_hard.csv")
    os.symlink("in_trace.csv", "in_trace_link.csv")
    small = ["--machines", "400", "--partitions", "2", "--duration-s", "1"]
    expect_refused("predict TRACE as --json", [rusk, "predict", "in.swf", "--json", "in.swf"],
                   ["in.swf"])
    expect_refused("sim --cluster as --json",
                   [rusk, "sim", "--cluster", "in_nodes.csv"] + small[2:] +
                   ["--json", "in_nodes.csv"], ["in_nodes.csv"])
    expect_refused("sim --cluster as --csv (hard link)",
                   [rusk, "sim", "--cluster", "in_nodes.csv"] + small[2:] +
                   ["--csv", "./in_nodes_hard.csv"], ["in_nodes.csv"])
    expect_refused("run --trace as --json (symbolic link)",
                   [rusk, "run", "--trace", "in_trace.csv", "--time-scale", "1"] + small[:4] +
                   ["--json", "in_trace_link.csv"], ["in_trace.csv"])
    expect_refused("classify --matrix as --json",
                   [rusk, "classify", "--matrix", "in_matrix.csv", "--incoming", "1",
                    "--max-entries", "2", "--json", "in_matrix.csv"], ["in_matrix.csv"])
    # plot's RUN.csv where one of its charts goes: it must not draw over its input.
    os.makedirs("plots_in", exist_ok=True)
    with open("plots_in/delay.png", "w") as f:
        f.write("second,phase,submitted,placed,throughput,rejected,backlog,utilization,"
                "conflicts,delay_p10_us,delay_p50_us,delay_p90_us,delay_p99_us,"
                "quality_mean\n1,0,1,1,1,0,0,0.5,0,1,1,1,1,1\n")
    expect_refused("plot RUN.csv as a chart", [rusk, "plot", "plots_in/delay.png", "-o",
                                               "plots_in"], ["plots_in/delay.png"])


def leftovers():
    return sorted(f for f in os.listdir(".") if ".rusk-" in f)


def keep_previous(rusk, data):
    old = b'{"previous": "result"}\n'
    for f in leftovers():
        os.remove(f)
    # A malformed trace: predict exits 2 and the previous --json is untouched.
    with open("prev.json", "wb") as f:
        f.write(old)
    status, _, err = run([rusk, "predict", os.path.join(data, "predict_bad_swf.txt"),
                          "--json", "prev.json"])
    if status != 2 or read("prev.json") != old:
        fail("malformed trace: status %d, prev.json %r" % (status, read("prev.json")[:60]))
    print("ok   malformed trace: exit 2, the previous --json kept")
    # Killed: the previous --json and --csv are untouched.
    with open("prev.csv", "wb") as f:
        f.write(b"previous,csv\n")
    argv = [rusk, "sim", "--machines", "4000", "--partitions", "4", "--rate", "2000",
            "--duration-s", "60000", "--task-ms", "200", "--json", "prev.json", "--csv",
            "prev.csv"]  # a minute of wall time at least: killed long before its end
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not p.stdout.readline().startswith("rusk "):
        p.kill()
        fail("no header line from %s" % argv)
    time.sleep(1.0)
    p.kill()
    p.communicate()
    if read("prev.json") != old or read("prev.csv") != b"previous,csv\n":
        fail("SIGKILL: the previous outputs changed: %r %r" % (read("prev.json")[:60],
                                                              read("prev.csv")[:60]))
    print("ok   SIGKILL: the previous --json and --csv kept")
    for f in leftovers():  # what a SIGKILL leaves: temporary files, never the targets
        os.remove(f)
    # An output that cannot be written (its directory is missing): refused before the run,
    # the other output untouched.
    status, _, err = run([rusk, "sim", "--machines", "400", "--partitions", "2",
                          "--duration-s", "1", "--json", "prev.json", "--csv",
                          "no_such_dir/x.csv"])
    if status != 2 or "no_such_dir/x.csv" not in err or read("prev.json") != old:
        fail("unwritable --csv: status %d, stderr %r, prev.json %r" % (status, err,
                                                                      read("prev.json")[:60]))
    print("ok   unwritable --csv: exit 2 naming it, the previous --json kept")
    # Interrupted: the previous result is replaced by the whole report of the part that
    # ran, and a symbolic link to the output still is one.
    if os.path.lexists("prev_link.json"):
        os.remove("prev_link.json")
    os.symlink("prev.json", "prev_link.json")
    argv[argv.index("prev.json")] = "prev_link.json"
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.readline()
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    try:
        p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("SIGINT: still running 60 s later")
    with open("prev.json") as f:
        d = json.load(f)
    if p.returncode != 3 or d["run"]["end"] != "SIGINT" or not os.path.islink(
            "prev_link.json"):
        fail("SIGINT: status %d, run %s, link %s" % (p.returncode, d["run"],
                                                     os.path.islink("prev_link.json")))
    if not read("prev.csv").startswith(b"second,"):
        fail("SIGINT: --csv %r" % read("prev.csv")[:60])
    print("ok   SIGINT: prev.json replaced by the report (%s), the link kept" % d["run"])
    if leftovers():
        fail("temporary files left after clean exits: %s" % leftovers())
    print("ok   no temporary file left")


def write_failures(rusk, data):
    status, _, err = run([rusk, "experiment", "tarcil-cdf", "--rounds", "20000", "--csv",
                          "/dev/full"])
    if status == 0 or "/dev/full" not in err:
        fail("experiment --csv /dev/full: status %d, stderr %r" % (status, err))
    print("ok   experiment --csv /dev/full: status %d, %s" % (status, err.strip().splitlines()[-1]))
    cases = {
        "sim": [rusk, "sim", "--machines", "400", "--partitions", "2", "--duration-s", "1",
                "--rate", "100"],
        "predict": [rusk, "predict", os.path.join(data, "predict_ok_swf.txt")],
        "plan": [rusk, "plan", "--jobs", "20", "--train", "100", "--sched", "fifo"],
    }
    for name, argv in cases.items():
        with open("/dev/full", "w") as full:
            p = subprocess.run(argv, stdout=full, stderr=subprocess.PIPE, text=True)
        if p.returncode == 0 or "stdout" not in p.stderr:
            fail("%s > /dev/full: status %d, stderr %r" % (name, p.returncode, p.stderr))
        print("ok   %s > /dev/full: status %d, %s" % (name, p.returncode,
                                                      p.stderr.strip().splitlines()[-1]))


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    rusk, case = sys.argv[1], sys.argv[2]
    data = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__),
                                                               "data")
    cases = {"name-input": name_input, "keep-previous": keep_previous,
             "write-failures": write_failures}
    if case not in cases:
        fail("unknown case %r" % case)
    # A directory of its own: other tests write (and rename) files beside it at once.
    rusk, data = os.path.abspath(rusk), os.path.abspath(data)
    os.makedirs("cli_outputs_" + case, exist_ok=True)
    os.chdir("cli_outputs_" + case)
    cases[case](rusk, data)
    print("PASS " + case)


if __name__ == "__main__":
    main()
