#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every function declared in the public headers is exported by the shared library.

Usage: exports.py INCLUDE_DIR LIBRUSK_SO
       exports.py --mentions FILE INCLUDE_DIR [HEADER_TO_SKIP ...]

Reads include/rusk/*.h, takes every function declaration at file scope (`type rusk_x(...);`,
not a typedef, not a static inline definition), lists the dynamic symbols the library
defines (`nm -D --defined-only`) and fails naming each declared function that is missing and
each symbol exported that no header declares (only the public API is exported).

With --mentions: fails naming each declared function (outside the headers to skip) that
FILE never names, so a test meant to call every public function stays complete.
"""
import glob
import os
import re
import subprocess
import sys


def declared(path):
    """Names of the functions a header declares at file scope."""
    with open(path, encoding="utf-8") as f:
        s = f.read()
    s = s.replace("\\\n", " ")  # macro continuations belong to their #define
    s = re.sub(r"/\*.*?\*/", " ", s, flags=re.S)
    s = re.sub(r"//[^\n]*", " ", s)
    s = "\n".join(l for l in s.split("\n") if not l.lstrip().startswith("#"))
    s = s.replace('extern "C" {', " ")
    stmts, depth, cur, body = [], 0, "", False
    for ch in s:
        if ch == "{":
            if depth == 0 and re.search(r"\)\s*$", cur):
                body = True  # a definition (static inline): not a declaration
            depth += 1
        elif ch == "}":
            if depth == 0:  # the brace closing extern "C"
                cur = ""
                continue
            depth -= 1
            if depth == 0 and body:
                cur, body = "", False
        elif depth == 0:
            if ch == ";":
                stmts.append(" ".join(cur.split()))
                cur = ""
            else:
                cur += ch
    names = []
    for st in stmts:
        if st.startswith("typedef") or re.search(r"\bstatic\b", st):
            continue
        m = re.match(r"(?:extern\s+)?[A-Za-z_][\w\s\*]*?\b(rusk_\w+)\s*\(", st)
        if m:
            names.append(m.group(1))
    return names


def mentions(path, inc, skip):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    names = []
    for h in sorted(glob.glob(os.path.join(inc, "*.h"))):
        if os.path.basename(h) not in skip:
            names += [(n, os.path.basename(h)) for n in declared(h)]
    missing = [(n, h) for n, h in names if not re.search(r"\b%s\b" % n, text)]
    for n, h in missing:
        print("FAIL: %s (rusk/%s) is not called in %s" % (n, h, os.path.basename(path)))
    if missing or len(names) < 100:
        sys.exit(1)
    print("mentions ok: all %d functions named in %s" % (len(names), os.path.basename(path)))


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--mentions":
        mentions(sys.argv[2], sys.argv[3], set(sys.argv[4:]))
        return
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    inc, lib = sys.argv[1], sys.argv[2]
    headers = sorted(glob.glob(os.path.join(inc, "*.h")))
    want = {}
    for h in headers:
        for name in declared(h):
            want[name] = os.path.basename(h)
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    have = {l.split()[-1] for l in out.splitlines() if l.strip()}
    missing = sorted(n for n in want if n not in have)
    extra = sorted(n for n in have if n not in want)
    per = {}
    for h in headers:
        per[os.path.basename(h)] = sum(1 for v in want.values() if v == os.path.basename(h))
    print("%d functions declared in %d headers (%s)" %
          (len(want), len(headers), ", ".join("%s %d" % kv for kv in per.items() if kv[1])))
    if len(want) < 100:
        sys.exit("FAIL: only %d declarations found: the header parser is broken" % len(want))
    for n in missing:
        print("FAIL: %s (rusk/%s) is not exported by %s" % (n, want[n], lib))
    for n in extra:
        print("FAIL: %s is exported by %s but declared in no public header" % (n, lib))
    if missing or extra:
        sys.exit(1)
    print("exports ok: all %d exported by %s" % (len(want), os.path.basename(lib)))


if __name__ == "__main__":
    main()
