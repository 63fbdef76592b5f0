# SPDX-License-Identifier: MIT
"""What the CLI test scripts share: running rusk, checking its exit status and output,
reading its JSON and CSV, and one entry point.

A script (tests/cli/GROUP.py) defines its cases as functions marked @case, or as rows of
refusal(...); CMake runs one case per test:

    python3 tests/cli/GROUP.py --rusk BIN --data tests/data --src SOURCE_DIR \
        [--trace-dir DIR] CASE

in the tests' build folder (each case writes its files there, under names of its own:
ctest runs cases side by side, and tests/case_files.py fails on a name two of them use). A
case passes by returning; an AssertionError or a Fail prints the reason and exits 1; a
case that needs the public openb trace exits 77 (ctest SKIP_RETURN_CODE) when it is absent.

Output checks follow ctest's PASS_REGULAR_EXPRESSION: a regular expression searched in
stdout and stderr together, `.` matching newlines too (re.S).
"""
import argparse
import csv
import json
import os
import re
import resource
import shlex
import subprocess
import sys

SKIP = 77
CASES = {}
ARGS = argparse.Namespace(rusk=None, data=None, src=None, trace_dir=None)


class Fail(Exception):
    """A check that did not hold; the message says which and what was seen."""


class Result:
    """A finished command: its status, its stdout and stderr (text and bytes), and `out`,
    both together in the order written when run with merge=True (else stdout, stderr)."""

    def __init__(self, argv, status, out, err):
        self.argv, self.status = argv, status
        self.out_bytes, self.err_bytes = out, err or b""
        self.stdout = out.decode("utf-8", "backslashreplace")
        self.stderr = self.err_bytes.decode("utf-8", "backslashreplace")
        self.out = self.stdout + self.stderr


def case(fn):
    """Registers fn as the case of its name."""
    CASES[fn.__name__] = fn
    return fn


def refusal(name, args, regex, status=2):
    """Registers a case: `rusk ARGS` exits with `status` and its output matches regex.
    ARGS is a string split like a shell's; {data} in it stands for tests/data."""

    def run_it():
        match(regex, rusk(args.format(data=ARGS.data), status=status).out)

    CASES[name] = run_it


def data(name):
    """A file of tests/data."""
    return os.path.join(ARGS.data, name)


def argv_of(args):
    if isinstance(args, str):
        return shlex.split(args)
    return [str(a) for a in args]


def run(argv, status=0, stdin=None, env=None, vm_kib=None, merge=True, show=True):
    """Runs argv to its end and returns a Result. `status`: the exit status required (an
    int, a tuple of those allowed, or None for any). stdin: bytes or str fed to it (else
    /dev/null). env: variables to set (None as a value unsets one). vm_kib: an
    address-space limit (ulimit -v). merge: stderr into stdout, in order."""
    e = dict(os.environ)
    for k, v in (env or {}).items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    pre = None
    if vm_kib is not None:
        lim = vm_kib * 1024

        def pre():
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

    if isinstance(stdin, str):
        stdin = stdin.encode()
    p = subprocess.run(argv, input=stdin if stdin is not None else b"",
                       stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                       env=e, preexec_fn=pre)
    r = Result(argv, p.returncode, p.stdout, p.stderr)
    if show:
        sys.stdout.write("$ %s\n%s" % (" ".join(shlex.quote(a) for a in argv), r.out))
        if r.out and not r.out.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.write("[exit status %d]\n" % r.status)
        sys.stdout.flush()
    if status is not None:
        allowed = status if isinstance(status, tuple) else (status,)
        if r.status not in allowed:
            raise Fail("%s: exit status %d, expected %s" %
                       (" ".join(argv), r.status, " or ".join(map(str, allowed))))
    return r


def rusk(args, **kw):
    """Runs the rusk binary with args (a list, or one string split like a shell's)."""
    return run([ARGS.rusk] + argv_of(args), **kw)


def match(regex, text):
    """regex must occur in text (re.S: `.` matches newlines, as in ctest's regexes)."""
    if not re.search(regex, text, re.S):
        raise Fail("output does not match %r; output ends:\n%s" % (regex, text[-2000:]))


def no_match(regex, text):
    """regex must not occur in text."""
    m = re.search(regex, text, re.S)
    if m:
        raise Fail("output matches %r (%r), which it must not" % (regex, m.group(0)))


def last_line(text):
    """The last line of text (what `; echo rc=$?` put the status after)."""
    t = text.rstrip("\n")
    return t[t.rfind("\n") + 1:]


def grep(regex, path):
    """regex must occur in the file at path (grep -q)."""
    with open(path, encoding="utf-8", errors="backslashreplace") as f:
        match(regex, f.read())


def load(path):
    """The JSON at path."""
    with open(path) as f:
        return json.load(f)


def rows(path):
    """The rows of the CSV at path, as dicts by header."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def lines(path):
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def write(path, content):
    """Writes bytes or text to path (printf > path)."""
    with open(path, "wb") as f:
        f.write(content.encode() if isinstance(content, str) else content)


def same_bytes(a, b):
    """cmp a b"""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def cmp(a, b):
    if not same_bytes(a, b):
        raise Fail("%s and %s differ" % (a, b))


def remove(*paths):
    for p in paths:
        try:
            os.remove(p)
        except FileNotFoundError:
            pass


def need_openb():
    """Skips the case (exit 77) unless the public openb pod and node lists are where rusk
    looks: RUSK_TRACE_DIR, else the directory it was configured with."""
    d = os.environ.get("RUSK_TRACE_DIR") or ARGS.trace_dir or ""
    need = ("openb_pod_list_default.csv", "openb_node_list_all_node.csv")
    missing = [n for n in need if not os.path.isfile(os.path.join(d, "openb", n))]
    if missing:
        print("skipped: no %s under RUSK_TRACE_DIR=%r (perf/traces/openb/README.md)" %
              (", ".join(missing), d))
        sys.exit(SKIP)


def main():
    ap = argparse.ArgumentParser(description=sys.modules["__main__"].__doc__)
    ap.add_argument("--rusk", required=True, help="the rusk binary")
    ap.add_argument("--data", required=True, help="tests/data")
    ap.add_argument("--src", help="the source tree (for perf/ scripts)")
    ap.add_argument("--trace-dir", default="", help="RUSK_TRACE_DIR rusk was built with")
    ap.add_argument("case", nargs="?", help="the case to run (--list: every case)")
    ap.add_argument("--list", action="store_true", help="list the cases")
    a = ap.parse_args()
    ARGS.__dict__.update(vars(a))
    ARGS.rusk = os.path.abspath(a.rusk)
    ARGS.data = os.path.abspath(a.data)
    if a.list or not a.case:
        print("\n".join(sorted(CASES)))
        return 0 if a.list else 2
    if a.case not in CASES:
        print("unknown case %r; cases: %s" % (a.case, ", ".join(sorted(CASES))),
              file=sys.stderr)
        return 2
    try:
        CASES[a.case]()
    except (AssertionError, Fail) as e:
        print("FAIL %s: %s: %s" % (a.case, type(e).__name__, e), file=sys.stderr)
        return 1
    print("ok %s" % a.case)
    return 0
