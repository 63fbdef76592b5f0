#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layers of the tree hold (issue 27): each library file includes only headers of its own
layer and those below it, and the tool (bench/) includes nothing of core/ but the header-only
toolkit of core/base/ and the dispatcher's step API (core/loop/step.h).

    core/base    base
    core/kernel  base, kernel
    core/loop    base, kernel, loop
    core/learn   base, and kernel/quality.h (Tarcil's equations, nothing of the cluster)
    core/state   base, kernel/backend.h (the seam it implements), state (issue 30)
    bench/       base, loop/step.h, state/open.h (opening a master-state backend by name)

Usage: layers.py SOURCE_DIR. Prints "layers ok" or every include that breaks a rule, exit 1.
"""
import os
import re
import sys

ALLOWED = {
    "base": lambda h: h.startswith("base/"),
    "kernel": lambda h: h.startswith(("base/", "kernel/")),
    "loop": lambda h: h.startswith(("base/", "kernel/", "loop/")),
    "learn": lambda h: h.startswith(("base/", "learn/")) or h == "kernel/quality.h",
    "state": lambda h: h.startswith(("base/", "state/")) or h == "kernel/backend.h",
    "bench": lambda h: h.startswith("base/") or h in ("loop/step.h", "state/open.h"),
}
LAYERED = re.compile(r'^\s*#\s*include\s+"((?:base|kernel|loop|learn|state)/[^"]+)"')


def check(path, rule, bad):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = LAYERED.match(line)
            if m and not ALLOWED[rule](m.group(1)):
                bad.append("%s:%d: includes %s (%s may not)" % (path, n, m.group(1), rule))


def main():
    src = sys.argv[1]
    bad, seen = [], 0
    for top, rule_of in (("core", None), ("bench", "bench")):
        for d, _, files in os.walk(os.path.join(src, top)):
            for name in files:
                if not name.endswith((".c", ".h", ".cc")):
                    continue
                rel = os.path.relpath(os.path.join(d, name), src)
                rule = rule_of or rel.split(os.sep)[1]
                if rule not in ALLOWED:
                    bad.append("%s: not in a layer folder of core/" % rel)
                    continue
                seen += 1
                check(os.path.join(d, name), rule, bad)
    for b in bad:
        print(b)
    if bad:
        return 1
    print("layers ok: %d files" % seen)
    return 0


if __name__ == "__main__":
    sys.exit(main())
