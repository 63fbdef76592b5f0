#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk demo: usage errors name the flag and exit 2; the --cluster node list's forms and
refusals (a byte-order mark, CRLF and CR line ends, a NUL byte, a device or directory)."""
import re

from rusk_cli import (case, data, main, match, no_match, refusal, rusk, write)

refusal("cli_bad_flag", "demo --machines abc", r"--machines: 'abc' is not an integer")
refusal("cli_bad_shape", "demo --machines 10 --partitions 5", r"5 partitions but only 1 cells")
refusal("cli_bad_trace", "demo --cluster {data}/bad_cpu.csv",
        r"bad_cpu.csv:3: cpu_milli 'lots' is not an integer")
refusal("cli_unknown_option", "demo --frobnicate", r"unknown option '--frobnicate'")
# Exit status 2 for the usage errors.
refusal("cli_exit_status", "demo --machines 0", r"")


@case
def cli_flag_twice():
    """A value flag given twice is refused, naming it, exit 2, in every command on the
    shared parser (before, the last value was kept: `rusk agent --backend redis://a
    --backend redis://b` ran on b); a flag without a value may repeat."""
    for args, flag in (
            ("agent --backend redis://127.0.0.1:1 --backend redis://127.0.0.1:2", "--backend"),
            ("agent --backend memory --agents 2 --agents 4", "--agents"),
            ("agent --backend memory --machines 100 --machines 200", "--machines"),
            ("run --backend redis://127.0.0.1:1 --backend memory", "--backend"),
            ("run --agents 2 --agents 4", "--agents"),
            ("sim --seed 1 --seed 1", "--seed"),
            ("sync --load 0.5 --load 0.6", "--load"),
            ("bench --json a.json --json b.json", "--json"),
            ("demo --duration-s 1 --duration-s 2", "--duration-s"),
            ("plan --jobs 5 --jobs 6", "--jobs"),
            ("classify --rank 2 --rank 3", "--rank"),
            ("classify --alloc --jobs 2 --jobs 3", "--jobs"),
            ("predict --generate 5 --generate 6", "--generate"),
            ("experiment eq2 --rounds 5 --rounds 6", "--rounds"),
            ("plot r.csv -o d -o e", "-o"),
    ):
        r = rusk(args, status=2)
        match(r"rusk: %s: given more than once \(give it once\)" % re.escape(flag), r.out)
    rusk("run --quiet --quiet --machines 1000 --partitions 4 --agents 2 --duration-s 0.2 "
         "--rate 100")


@case
def cli_openb_nodelist_forms():
    """A byte-order mark, CRLF and CR line ends and a 5,000-digit serial number are read."""
    write("nl_forms.csv", b"\xef\xbb\xbfsn,cpu_milli,memory_mib,gpu,model\r\n" +
          b"%05000d" % 7 + b",32000,262144,0,\r\nn2,64000,262144,8,V100M32\r")
    r = rusk("demo --cluster nl_forms.csv --partitions 1 --duration-s 0.1")
    match(r"2 machines, 96 RUs", r.stdout)


@case
def cli_openb_nodelist_nul():
    write("nl_nul.csv", b"sn,cpu_milli,memory_mib,gpu,model\nn1,32000,26\x00144,0,\n")
    r = rusk("demo --cluster nl_nul.csv --partitions 1", status=2, merge=False)
    match(r"nl_nul.csv:2: NUL byte", r.stderr)


@case
def cli_openb_nodelist_special():
    r = rusk("demo --cluster /dev/zero --partitions 1", status=2, merge=False)
    match(r"/dev/zero: not a regular file", r.stderr)
    r = rusk("demo --cluster . --partitions 1", status=2, merge=False)
    match(r"is a directory, not a node list", r.stderr)


@case
def cli_trace_dir_unset():
    """RUSK_TRACE_DIR set empty names no '/openb/...' path (issue 33 item 13)."""
    r = rusk("demo --cluster openb --partitions 8 --duration-s 0.1", status=None,
             env={"RUSK_TRACE_DIR": ""})
    no_match(r"[^a-z]/openb/openb_node_list", r.out)


if __name__ == "__main__":
    raise SystemExit(main())
