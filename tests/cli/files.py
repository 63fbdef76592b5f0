#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Output files and memory, every command (issues 20 and 33): outputs are opened before
the run, one file named twice (a symbolic link included) or an input named as an output is
refused naming both flags, a failed write is exit 1 with the path; the memory a run needs
is stated before it is allocated and what does not fit is refused naming the flags.
(tests/cli_outputs.py has the cases of temporary files, renames and kills.)"""
import os

from rusk_cli import case, last_line, main, match, no_match, remove, rusk, write


@case
def cli_outputs_unwritable():
    """An unwritable --json fails at once (was: after the whole run, results lost)."""
    r = rusk("run --json / --duration-s 30 --machines 400 --partitions 2", status=2)
    match(r"--json: /: Is a directory", r.out)
    no_match(r"submitted", r.out)
    r = rusk("sim --csv / --duration-s 30 --machines 400 --partitions 2", status=2)
    match(r"--csv: /: Is a directory", r.out)
    no_match(r"submitted", r.out)


@case
def cli_outputs_same_file():
    """One file named twice (or the trace as an output) is refused, naming both flags (was:
    a corrupt file and status 0). Status 2, nothing run."""
    remove("same.out")
    f = "--duration-s 0.2 --rate 100 --machines 400 --partitions 2"
    r = rusk("run %s --json same.out --csv same.out" % f, status=2)
    match(r"--json same.out and --csv same.out name the same file", last_line(r.out))
    no_match(r"submitted", r.out)
    r = rusk("sim %s --json ./same.out --csv %s" % (f, os.path.abspath("same.out")), status=2)
    match(r"--json ./same.out and --csv [^ ]*same.out name the same file", last_line(r.out))
    no_match(r"submitted", r.out)
    write("tr.csv", b"")
    r = rusk("sim %s --trace tr.csv --csv tr.csv" % f, status=2)
    match(r"--csv tr.csv and --trace tr.csv name the same file", last_line(r.out))
    no_match(r"submitted", r.out)


@case
def cli_outputs_link_and_full():
    """A symbolic link to the other output is the same file (refused, exit 2), and a --csv
    whose writes fail ends with exit 1 and a message, like --json."""
    remove("lnk_x", "lnk_l")
    os.symlink("lnk_x", "lnk_l")
    r = rusk("run --machines 1000 --partitions 2 --duration-s 0.2 --rate 100 --task-ms 100 "
             "--json lnk_x --csv lnk_l", status=2, merge=False)
    match(r"name the same file", r.stderr)
    r = rusk("sim --machines 1000 --partitions 2 --duration-s 1 --rate 100 --task-ms 100 "
             "--csv /dev/full --quiet", status=1, merge=False)
    match(r"--csv: /dev/full: write failed", r.stderr)


@case
def cli_memory_slots():
    """More than 2^32 task slots is refused naming the flags."""
    r = rusk("sim --rate 1e8 --duration-s 50", status=2)
    match(r"5.5e[+]09 tasks [(]--rate, --duration-s.*2.32 - 1 task slots", r.out)


@case
def cli_memory_estimate():
    """Under ulimit -v 1 GB (plain builds only: a sanitizer cannot start under it) what does
    not fit is refused before it is allocated, naming the flags, exit 2."""
    r = rusk("sim --rate 1e8 --duration-s 1", status=2, vm_kib=1000000)
    match(r"needs about [0-9.]+ GB, more than the [0-9.]+ [GM]B available [(]the address-space "
          r"limit [(]ulimit -v[)][)].*110001000 task slots.*--rate, --duration-s", r.out)
    r = rusk("run --machines 100000000 --duration-s 1", status=2, vm_kib=1000000)
    match(r"100000000 machines, 200000000 RUs.*--machines, --rus-per-machine", r.out)


if __name__ == "__main__":
    raise SystemExit(main())
