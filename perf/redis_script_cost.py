#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The server time of the commit and release scripts (core/state/redis_lua.h), one version
of the header against others (perf/RESULTS.md, "The write scripts' lean checks").

Usage: perf/redis_script_cost.py [--calls 10000] [--rounds 10] NAME=HEADER [NAME=HEADER ...]
e.g.   perf/redis_script_cost.py lean=core/state/redis_lua.h \\
           base=<(git show 51fec0f:core/state/redis_lua.h)

Each HEADER's rusk_lua_commit and rusk_lua_release are compiled out (cc), loaded into one
standalone redis-server on a free port (tests/redis/cluster.sh free-port; no cluster, no
replica), and driven with `redis-cli --pipe`: per round and header, a fresh partition of 8
RUs (one machine; its :mach, :free and :ver, what the scripts need there) and CALLS commit + release pairs of RU 0 by task 1 (every commit granted,
every release accepted: checked), the servers' own mean time per EVALSHA read from INFO
commandstats. The headers alternate within each round, each round starting with the next
one; the script prints each round, then
the median (min-max) per header and the median ratios of every pair.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "tests", "redis", "cluster.sh")
KEYS = ["rusk:{p0}:" + k for k in ("own", "gen", "free", "mem", "gpu", "rec", "ver", "mach")]
DUMP = ('#include <stdio.h>\n#include "%s"\n'
        "int main(int c, char **v) { (void)v; fputs(c > 1 ? rusk_lua_release : rusk_lua_commit,"
        " stdout); return 0; }\n")


def resp(args):
    out = ["*%d\r\n" % len(args)]
    for a in map(str, args):
        out.append("$%d\r\n%s\r\n" % (len(a.encode()), a))
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("headers", nargs="+", metavar="NAME=HEADER")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rusk-lua.")
    port = int(subprocess.check_output([SCRIPT, "free-port", str(os.getpid())], timeout=30))
    cli = ["redis-cli", "-p", str(port)]
    srv = None
    try:
        text = {}
        for nh in a.headers:
            name, hdr = nh.split("=", 1)
            h = os.path.join(tmp, name + ".h")
            with open(hdr) as f, open(h, "w") as g:
                g.write(f.read())
            with open(os.path.join(tmp, name + ".c"), "w") as f:
                f.write(DUMP % h)
            subprocess.run(["cc", "-o", os.path.join(tmp, name), os.path.join(tmp, name + ".c")],
                           check=True, timeout=60)
            text[name] = [subprocess.check_output([os.path.join(tmp, name)] + x, text=True)
                          for x in ([], ["release"])]
        srv = subprocess.Popen(["redis-server", "--port", str(port), "--save", "",
                                "--appendonly", "no", "--dir", tmp],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def r(*args):
            return subprocess.run(cli + list(args), capture_output=True, text=True,
                                  check=True, timeout=30).stdout.strip()

        for _ in range(100):
            if subprocess.run(cli + ["ping"], capture_output=True, text=True).stdout.strip() \
                    == "PONG":
                break
            time.sleep(0.1)
        sha = {n: [r("script", "load", t) for t in text[n]] for n in text}
        res = {n: [] for n in text}
        for k in range(a.rounds):
            names = list(text)
            for n in names[k % len(names):] + names[:k % len(names)]:
                r("flushall")
                r("hset", KEYS[7], "0", "0,8,65536,2", "part", "0,8,1")
                r("setbit", KEYS[2], "7", "1")
                r("set", KEYS[6], "0")  # what init_part writes; the scripts refuse it absent
                path = os.path.join(tmp, "in.resp")
                with open(path, "w") as f:
                    for i in range(a.calls):
                        f.write(resp(["EVALSHA", sha[n][0], 8] + KEYS + [1, 0, 0, 0, 0, 0, 0]))
                        f.write(resp(["EVALSHA", sha[n][1], 8] + KEYS + [0, 1, 0, i]))
                r("config", "resetstat")
                with open(path) as f:
                    subprocess.run(cli + ["--pipe"], stdin=f, capture_output=True, check=True,
                                   timeout=300)
                m = re.search(r"cmdstat_evalsha:calls=(\d+),usec=(\d+),",
                              r("info", "commandstats"))
                calls, usec = int(m.group(1)), int(m.group(2))
                if calls != 2 * a.calls or r("hlen", KEYS[0]) != "0" or \
                        r("get", KEYS[6]) != str(2 * a.calls):
                    raise SystemExit("%s: not every commit and release went through" % n)
                res[n].append(usec / calls)
            print("round %d: %s (load %s)" % (k + 1, ", ".join(
                "%s %.2f us" % (n, res[n][-1]) for n in res),
                open("/proc/loadavg").read().split()[0]), flush=True)
        print("\n| header | server us per script, median (min-max) |\n|---|---|")
        for n, x in res.items():
            print("| %s | %.2f (%.2f-%.2f) |" % (n, statistics.median(x), min(x), max(x)))
        names = list(res)
        for i, p in enumerate(names):
            for q in names[i + 1:]:
                ra = [x / y for x, y in zip(res[p], res[q])]
                print("%s / %s: median %.2f (%.2f-%.2f)" % (p, q, statistics.median(ra),
                                                             min(ra), max(ra)))
    finally:
        if srv is not None:
            srv.kill()
            srv.wait()
        resv = os.path.join(os.environ.get("TMPDIR", "/tmp"), "rusk-redis-ports", str(port))
        if os.path.exists(resv):
            os.unlink(resv)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
