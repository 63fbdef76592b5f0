#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No two CLI tests name the same file in the tests' build folder, where ctest -j runs them
side by side (tests/cli/rusk_cli.py: "each case writes its files there, under names of its
own").

Why: cli_sim_deterministic (tests/cli/sim.py) and cli_groups_sim (tests/cli/groups.py) both
wrote s1.json and s2.json there. Run together on a loaded 2-core machine, the second's s1.json
landed between the first's two runs, and cli_sim_deterministic failed with "s1.json and
s2.json differ" while both of its own runs had printed the same figures: the simulator was
deterministic, the folder was shared.

What it reads: every case of tests/cli/GROUP.py (an @case function, or a refusal(...) row),
with the helpers and module constants it uses, and each script of tests/cli/ or tests/ that
ctest runs as a whole (tests/cli_signals.py: one unit per case of its CASES table). A file
name is a string constant's word ending in a file extension, left out where it is not a file
of the folder: data("x"), os.path.join(d, "x") past its first argument, the regular
expression of match / no_match / grep, a path under a directory ("{data}/x", "d/x").
Two tests may share a name when they share a RESOURCE_LOCK, or one DEPENDS on the other
(tests/CMakeLists.txt); SHARED_ELSEWHERE lists names that live in a folder of each test's
own. Names built at run time (f-strings, %-formatting of the name itself) are not seen.

Usage: case_files.py TESTS_DIR. Prints "case files ok" or every name two tests share, exit 1.
"""
import ast
import os
import re
import sys

# A file name: a word with an extension, not part of a path or of a longer word.
NAME = re.compile(r"(?<![\w/.{%-])([A-Za-z0-9_][\w.-]*\.(?:json|csv|txt|png|gp|out|swf|log|"
                  r"tmp|dat))(?![\w/])")
# Calls whose string arguments are not files of the folder (a regex, a data file).
NOT_FILES = {"match", "no_match", "data", "need_openb", "fail"}
# Names that two tests use in folders of their own (not the shared build folder).
SHARED_ELSEWHERE = {
    "nodes.conf": "redis-server's cluster file, in each server's temporary folder "
                  "(tests/cli/redis.py: standalone)",
}
# Scripts ctest runs whole (one unit each), by the test names that run them.
WHOLE = {"sim_cost_work.py": ["cli_sim_cost_work"],
         "plan_deterministic.py": ["cli_plan_deterministic_loaded"],
         "sim_outcome.py": ["cli_sim_outcome"]}


def call_name(node):
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def names_in(node):
    """File names in the string constants under node (skipping what is not a file)."""
    skip = set()
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        name = call_name(n)
        if name in NOT_FILES:
            regex_only = name in ("match", "no_match")
            for a in n.args[:1] if regex_only else n.args:
                skip.update(id(x) for x in ast.walk(a))
        elif name == "grep" and n.args:
            skip.update(id(x) for x in ast.walk(n.args[0]))
        elif name == "join":  # os.path.join(d, "x"): under d
            for a in n.args[1:]:
                skip.update(id(x) for x in ast.walk(a))
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip:
            out.update(m.group(1) for m in NAME.finditer(n.value))
    return out


def module_units(path):
    """{unit: set of file names} of one script: its cases (or, for a script without
    cases, its CASES table's functions or the whole of it)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    consts = {}
    for n in tree.body:
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    consts[t.id] = names_in(n.value)

    def closure(node, seen):
        """node's names, its helpers' and the module constants it reads."""
        out = set(names_in(node))
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id not in seen:
                seen.add(n.id)
                if n.id in funcs:
                    out |= closure(funcs[n.id], seen)
                elif n.id in consts:
                    out |= consts[n.id]
        return out

    units = {}
    for n in tree.body:
        if isinstance(n, ast.FunctionDef) and any(
                isinstance(d, ast.Name) and d.id == "case" for d in n.decorator_list):
            units[n.name] = closure(n, {n.name})
        elif (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and
              call_name(n.value) == "refusal"):
            units[n.value.args[0].value] = closure(n.value, set())
    return tree, units, closure, funcs


def cmake_props(tests_dir):
    """{test: (resource locks, tests it depends on)} from tests/CMakeLists.txt."""
    props = {}
    text = open(os.path.join(tests_dir, "CMakeLists.txt"), encoding="utf-8").read()
    for m in re.finditer(r"rusk_cli_test\(([^)]*)\)", text):
        words = m.group(1).split()
        locks, deps, mode = set(), set(), None
        for w in words[2:]:
            if w in ("RESOURCE_LOCK", "DEPENDS"):
                mode = w
            elif w.isupper():
                mode = None
            elif mode == "RESOURCE_LOCK":
                locks.add(w)
            elif mode == "DEPENDS":
                deps.add(w)
        props[words[0]] = (locks, deps)
    return props


def may_share(a, b, props):
    la, da = props.get(a, (set(), set()))
    lb, db = props.get(b, (set(), set()))
    return bool(la & lb) or b in da or a in db


def main():
    tests_dir = sys.argv[1]
    uses = {}  # file name -> {test: script}
    cli = os.path.join(tests_dir, "cli")
    for f in sorted(os.listdir(cli)):
        if not f.endswith(".py") or f == "rusk_cli.py":
            continue
        tree, units, closure, funcs = module_units(os.path.join(cli, f))
        if f in WHOLE:
            units = {t: names_in(tree) for t in WHOLE[f]}
        for unit, names in units.items():
            for nm in names:
                uses.setdefault(nm, {})[unit] = "tests/cli/" + f
    # tests/cli_signals.py: a test per case of its CASES table, in the shared folder.
    path = os.path.join(tests_dir, "cli_signals.py")
    tree, _, closure, funcs = module_units(path)
    for n in tree.body:
        if isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "CASES" for t in n.targets):
            for k, v in zip(n.value.keys, n.value.values):
                for nm in closure(funcs[v.id], {v.id}):
                    uses.setdefault(nm, {})["cli_signal_" + k.value] = "tests/cli_signals.py"
    props = cmake_props(tests_dir)
    bad = []
    for nm, tests in sorted(uses.items()):
        if nm in SHARED_ELSEWHERE:
            continue
        names = sorted(tests)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if not may_share(a, b, props):
                    bad.append("%s: named by %s (%s) and %s (%s), which may run at once"
                               % (nm, a, tests[a], b, tests[b]))
    if bad:
        print("\n".join(bad))
        print("%d file names shared by tests that ctest may run side by side (rename one, "
              "or give both a RESOURCE_LOCK)" % len(bad))
        return 1
    print("case files ok: %d file names, by %d tests, none shared with a test beside it" %
          (len(uses), len({t for v in uses.values() for t in v})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
