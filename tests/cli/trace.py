#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Trace input of rusk run and rusk sim (issues 20 and 33): CSV and openb replays, arrivals
in order and at their times, FILE:LINE for malformed rows, NUL bytes, directories, huge
durations and preferred machines beyond the cluster, escaped garbage, standard input."""
from rusk_cli import (case, data, last_line, load, main, match, need_openb, refusal, rows,
                      rusk, write)

refusal("cli_run_bad_trace", "run --trace {data}/trace_bad_rus.csv",
        r"trace_bad_rus.csv:3: rus '1.5' is not an integer")
refusal("cli_run_trace_exit2", "run --trace {data}/trace_bad_rus.csv", r"")
# A NUL byte is FILE:LINE (/dev/zero looped forever); a directory is named as one.
refusal("cli_trace_dev_zero", "run --trace /dev/zero", r"/dev/zero:1: NUL byte at column 1")
refusal("cli_trace_directory", "sim --trace {data}", r"data: is a directory, not a trace file")
# A duration beyond 1e9 s is refused with FILE:LINE (1e308 s became 0).
refusal("cli_trace_huge_duration",
        "sim --machines 2000 --partitions 4 --trace {data}/trace_huge_duration.csv --time-scale 1",
        r"trace_huge_duration.csv:3: duration_s '1e308' is not a positive number of seconds")
refusal("cli_trace_pref_beyond",
        "sim --machines 2000 --partitions 4 --trace {data}/trace_pref_beyond.csv --time-scale 1",
        r"trace_pref_beyond.csv:3: preferred machine 5000 is beyond the cluster's 2000 machines")
refusal("cli_trace_pods_no_times",
        "sim --machines 2000 --partitions 4 --trace {data}/pods_no_times.csv --trace-format openb",
        r"pods_no_times.csv:1: not an openb pod list header: missing columns creation_time, "
        r"deletion_time, scheduled_time")


@case
def cli_run_csv_trace():
    r = rusk("run --machines 4000 --partitions 4 --trace %s --time-scale 1 --resources rus" %
             data("trace_cpu.csv"))
    match(r"2 submitted, 2 placed.*counts add up: yes", r.out)


@case
def cli_run_openb_trace():
    need_openb()
    r = rusk("run --machines 4000 --partitions 4 --trace openb --rate 5000 --duration-s 1")
    match(r"8152 tasks over .*counts add up: yes", r.out)


@case
def cli_trace_replay_order():
    """Replay keeps arrivals in order and at their times (fmod over the span put the last
    row first: rows at 0, 5, 10 s gave two submissions in the first second)."""
    rusk("sim --machines 2000 --partitions 4 --trace %s --time-scale 1 --csv gaps.csv "
         "--json gaps.json" % data("trace_gaps.csv"))
    s = [int(x["submitted"]) for x in rows("gaps.csv")]
    assert s[0] == 1 and s[3] == 1 and s[5] == 2 and s[-1] == 3, s
    t = load("gaps.json")["config"]
    assert t["rate"] is None and t["task_ms"] is None and t["trace"]["tasks"] == 3 and \
        t["trace"]["span_s"] == 10 and t["trace"]["time_scale"] == 1 and \
        t["trace"]["replicas"] == 1 and t["trace"]["format"] == "csv", t


@case
def cli_messages_i33():
    """Issue 33 item 13: a header error calls the expected header that; binary garbage is
    escaped, never echoed raw; an SWF given to --trace says that predict reads SWF; --phases
    with --trace is refused; `--trace -` is standard input; a 1,024-RU CSV task is replayed
    (it spans machines)."""
    write("hdr.csv", "name,cpu_milli\n")
    r = rusk("sim --trace hdr.csv --trace-format openb", status=2)
    match(r"not an openb pod list header[^\n]*the expected header: name,cpu_milli", r.out)
    write("bin.csv", b"arrival_s,duration_s,rus\n0,1,\x1b[31mred\x01\n")
    r = rusk("sim --trace bin.csv", status=2, merge=False)
    b = r.err_bytes
    assert all(c >= 32 or c == 10 for c in b), b
    match(r"x1b.31mred.x01", r.stderr)
    r = rusk("sim --trace %s" % data("predict_ok_swf.txt"), status=2)
    match(r"looks like a Standard Workload Format log[^\n]*rusk predict. reads SWF",
          last_line(r.out))
    r = rusk("sim --trace bin.csv --phases 50,80", status=2)
    match(r"\A[^\n]*--phases does not apply to --trace", r.out)
    r = rusk("sim --trace - --time-scale 1 --machines 400 --rus-per-machine 16 --partitions 2",
             stdin="arrival_s,duration_s,rus\n0,1,1\n0.5,1,1024\n")
    match(r"2 submitted, 2 placed", r.stdout)


if __name__ == "__main__":
    raise SystemExit(main())
