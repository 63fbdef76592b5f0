#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Redis backend's figures (issue 30; perf/RESULTS.md, "Master state on Redis Cluster").

Starts a 3+3 Redis Cluster on free 127.0.0.1 ports (tests/redis/cluster.sh), runs `rusk
agent` processes against it, prints Markdown tables, and stops the cluster (also on
failure). Usage: perf/redis_figures.py [--rusk build/rusk] [--seconds 5] [--only rtt,scale,failover]

  rtt       commit round trip per batch, one claim per batch vs 32 pipelined; the servers'
            mean time per EVALSHA (INFO commandstats: the commit and release scripts, nearly
            all of the calls; the agent's lease and owners scripts beside them)
  scale     tasks/s with 1, 2 and 4 agent processes (DiffSync), closed loop and at 40K
            tasks/s in all; conflicts beside `rusk sync` (in-memory agents, same shape,
            gap and agents, at the load the Redis run held)
  failover  a master SIGKILLed 3 s into a 10 s run: seconds without commits, acknowledged
            commits lost, tasks re-placed; with and without WAIT 1
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "tests", "redis", "cluster.sh")
SHAPE = ["--machines", "2000", "--partitions", "10"]
RUS = 32000


def last_json(out):
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise SystemExit("no JSON in:\n" + out)


class Cluster:
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="rusk-fig.")
        self.port = int(subprocess.check_output([SCRIPT, "free-port"], timeout=30))
        subprocess.run([SCRIPT, "start", self.dir, str(self.port)], check=True, timeout=120)
        self.url = "redis://127.0.0.1:%d,127.0.0.1:%d" % (self.port, self.port + 1)
        return self

    def __exit__(self, *exc):
        subprocess.run([SCRIPT, "stop", self.dir], timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)

    def master_of(self, slot):
        out = subprocess.run(["redis-cli", "-p", str(self.port), "cluster", "slots"],
                             capture_output=True, text=True, timeout=10).stdout.split()
        for k in range(len(out) - 3):
            if out[k].isdigit() and out[k + 1].isdigit() and int(out[k]) <= slot <= int(
                    out[k + 1]) and out[k + 3].isdigit():
                return int(out[k + 3])
        raise SystemExit("no master for slot %d" % slot)


def agents(rusk, cl, n, extra, init=True):
    if init:
        subprocess.run([rusk, "agent", "--backend", cl.url, "--init-only"] +
                       SHAPE, check=True, capture_output=True, timeout=60)
    ps = [subprocess.Popen([rusk, "agent", "--backend", cl.url, "--agents", str(n),
                            "--agent-id", str(i)] + SHAPE + extra,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
          for i in range(n)]
    outs = [p.communicate(timeout=600)[0] for p in ps]
    for p, o in zip(ps, outs):
        if p.returncode != 0:
            raise SystemExit("agent failed:\n" + o)
    return [last_json(o) for o in outs]


def script_time(cl, reset=False):
    """The servers' EVALSHA calls and microseconds in them, summed over the six nodes
    (INFO commandstats); reset: CONFIG RESETSTAT on each first."""
    calls = usec = 0
    for port in range(cl.port, cl.port + 6):
        cli = ["redis-cli", "-p", str(port)]
        if reset:
            subprocess.run(cli + ["config", "resetstat"], check=True, capture_output=True,
                           timeout=10)
            continue
        out = subprocess.run(cli + ["info", "commandstats"], capture_output=True, text=True,
                             timeout=10).stdout
        m = re.search(r"cmdstat_evalsha:calls=(\d+),usec=(\d+),", out)
        if m:
            calls += int(m.group(1))
            usec += int(m.group(2))
    return calls, usec


def rtt(rusk, secs):
    print("| claims per batch | batches | round trip p50 (ms) | p99 (ms) | per claim p50 (us) "
          "| tasks/s | server us per script |")
    print("|---|---|---|---|---|---|---|")
    with Cluster() as cl:
        for b in (1, 32):
            script_time(cl, reset=True)
            j = agents(rusk, cl, 1, ["--batch", str(b), "--duration-s", str(secs),
                                     "--task-ms", "100"])[0]
            calls, usec = script_time(cl)
            per = j["rtt_p50_ms"] * 1000 / (j["claims"] / max(j["batches"], 1))
            print("| %d | %d | %.3f | %.3f | %.1f | %.0f | %.2f |" % (
                b, j["batches"], j["rtt_p50_ms"], j["rtt_p99_ms"], per, j["tasks_per_s"],
                usec / max(calls, 1)))


def mem_conflicts(rusk, n, load, secs):
    out = subprocess.run([rusk, "sync", "--agents", str(n), "--sync", "diff", "--gap-ms", "10",
                          "--duration-s", str(secs), "--load", "%.2f" % min(load, 0.95)] +
                         SHAPE, capture_output=True, text=True, timeout=120).stdout
    m = re.search(r"diff +latency +[0-9]+ +[0-9]+ +[0-9]+ +([0-9.]+)% +\S+ +\S+ +([0-9.]+)", out)
    return (float(m.group(1)), float(m.group(2))) if m else (float("nan"), float("nan"))


def scale(rusk, secs):
    print("| agent processes | offered tasks/s | placed tasks/s | conflict % | staleness at "
          "commit (ms) | RTT p50 / p99 (ms) | load held | in-memory `rusk sync` conflict % "
          "(AS ms) |")
    print("|---|---|---|---|---|---|---|---|")
    with Cluster() as cl:
        for rate in (40000, 0):
            for n in (1, 2, 4):
                extra = ["--duration-s", str(secs), "--task-ms", "500", "--gap-ms", "10"]
                if rate:
                    extra += ["--rate", str(rate / n)]
                js = agents(rusk, cl, n, extra)
                placed = sum(j["placed"] for j in js) / secs
                claims = sum(j["claims"] for j in js)
                conf = 100.0 * sum(j["conflicts"] for j in js) / max(claims, 1)
                stale = sum(j["staleness_ms"] * j["claims"] for j in js) / max(claims, 1)
                load = placed * 0.5 / RUS
                mc, mas = mem_conflicts(rusk, n, load, 1)
                print("| %d | %s | %.0f | %.2f | %.2f | %.3f / %.3f | %.0f%% | %.2f (%.1f) |" % (
                    n, "%d" % rate if rate else "closed loop", placed, conf, stale,
                    max(j["rtt_p50_ms"] for j in js), max(j["rtt_p99_ms"] for j in js),
                    100 * load, mc, mas))


def failover(rusk, repeats):
    print("| mode | run | seconds without commits | outage (s) | acknowledged commits lost | "
          "tasks re-placed | short WAITs | placed | recount |")
    print("|---|---|---|---|---|---|---|---|---|")
    for wait in (False, True):
        for k in range(repeats):
            with Cluster() as cl:
                subprocess.run([rusk, "agent", "--backend", cl.url, "--init-only"] + SHAPE,
                               check=True, capture_output=True, timeout=60)
                slot = int(subprocess.check_output(["redis-cli", "-p", str(cl.port), "cluster",
                                                    "keyslot", "{p0}"], timeout=10))
                victim = cl.master_of(slot)
                args = [rusk, "agent", "--backend", cl.url, "--duration-s", "10", "--task-ms",
                        "300", "--rate", "20000"] + SHAPE
                if wait:
                    args += ["--wait", "1", "--wait-ms", "200"]
                p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
                time.sleep(3)
                subprocess.run([SCRIPT, "kill", cl.dir, str(victim)], check=True, timeout=10)
                out = p.communicate(timeout=120)[0]
                j = last_json(out)
                rc = subprocess.run([rusk, "agent", "--backend", cl.url, "--recount"] + SHAPE,
                                    capture_output=True, text=True, timeout=60).stdout
                m = re.search(r"held (\d+), free (\d+), mismatch (\d+)", rc)
                print("| %s | %d | %.2f | %.2f | %d | %d | %d | %d | held %s free %s mismatch %s |"
                      % ("WAIT 1" if wait else "async", k + 1, j["max_gap_s"], j["outage_s"],
                         j["lost"], j["replaced"], j["wait_short"], j["placed"], m.group(1),
                         m.group(2), m.group(3)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rusk", default=os.path.join(HERE, "..", "build", "rusk"))
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--only", default="rtt,scale,failover")
    a = ap.parse_args()
    for part in a.only.split(","):
        print("\n### %s\n" % part)
        {"rtt": lambda: rtt(a.rusk, a.seconds), "scale": lambda: scale(a.rusk, a.seconds),
         "failover": lambda: failover(a.rusk, a.repeats)}[part]()


if __name__ == "__main__":
    main()
