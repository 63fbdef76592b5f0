#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk agent --backend redis://...: agent processes sharing one Redis Cluster (issue 30).

Every case that needs a cluster starts its own (tests/redis/cluster.sh: 3 masters + 3
replicas on free 127.0.0.1 ports, in a temporary folder) and stops it at the end, also on
failure; every wait is bounded. Cases exit 77 (skipped) where redis-server is missing or
rusk was built without RUSK_WITH_REDIS."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from rusk_cli import ARGS, Fail, SKIP, case, main, match, rusk

SHAPE = "--machines 2000 --partitions 10"


def need_redis():
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        print("redis-server / redis-cli not installed: skipped")
        raise SystemExit(SKIP)
    r = rusk("agent --backend redis://127.0.0.1:1", status=None, show=False)
    if "without Redis support" in r.out:
        print("rusk built without RUSK_WITH_REDIS: skipped")
        raise SystemExit(SKIP)


def script():
    return os.path.join(ARGS.src, "tests", "redis", "cluster.sh")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def signalled(argv, after_s=3, sig=signal.SIGTERM):
    """Runs argv, sends sig after after_s seconds; (exit status, output). Bounded: the
    process is killed if it has not ended 60 s after the signal."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(after_s)
        p.send_signal(sig)
        text = p.communicate(timeout=60)[0]
    finally:
        if p.poll() is None:
            p.kill()
    print(text)
    return p.returncode, text


class Cluster:
    """A 3+3 cluster for the with-block; .url, .port, .dir."""

    def __init__(self, password=None, node_timeout_ms=None):
        self.password = password  # requirepass + masterauth on every server
        self.node_timeout_ms = node_timeout_ms  # cluster-node-timeout (None: cluster.sh's)

    def __enter__(self):
        need_redis()
        self.dir = tempfile.mkdtemp(prefix="rusk-redis.")
        self.port = int(subprocess.check_output([script(), "free-port"], timeout=30))
        env = dict(os.environ)
        if self.password is not None:
            env["RUSK_REDIS_PASSWORD"] = self.password
            os.environ["REDISCLI_AUTH"] = self.password  # this case's redis-cli calls
        if self.node_timeout_ms is not None:
            env["RUSK_REDIS_NODE_TIMEOUT_MS"] = str(self.node_timeout_ms)
        try:
            subprocess.run([script(), "start", self.dir, str(self.port)], check=True,
                           timeout=120, env=env)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.url = "redis://127.0.0.1:%d,127.0.0.1:%d" % (self.port, self.port + 1)
        return self

    def __exit__(self, *exc):
        subprocess.run([script(), "stop", self.dir], timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def master_of_partition(self, p):
        """The port of the master serving partition p's slot (p a string: hash tag {p})."""
        return self.master_of_tag("{p%d}" % p if isinstance(p, int) else "{%s}" % p)

    def master_of_tag(self, tag):
        """The port of the master serving the slot of key `tag` ("{meta}": the leases)."""
        slot = int(subprocess.check_output(
            ["redis-cli", "-p", str(self.port), "cluster", "keyslot", tag], timeout=10))
        for i in range(6):
            out = subprocess.run(["redis-cli", "-p", str(self.port + i), "role"],
                                 capture_output=True, text=True, timeout=10).stdout
            if not out.startswith("master"):
                continue
            nodes = subprocess.run(["redis-cli", "-p", str(self.port + i), "cluster",
                                    "myshards" if False else "slots"],
                                   capture_output=True, text=True, timeout=10).stdout.split()
            # start end ip port id ... per range: find the range of our slot
            for k in range(len(nodes) - 3):
                if (nodes[k].isdigit() and nodes[k + 1].isdigit() and
                        int(nodes[k]) <= slot <= int(nodes[k + 1]) and nodes[k + 3].isdigit()):
                    return int(nodes[k + 3])
        raise Fail("no master serves slot %d (key %s)" % (slot, tag))


def last_json(out):
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise Fail("no JSON line in the output")


def check_placed(j):
    """The agent's identity: every task placed is released, refused at its release, lost
    with a release's answer, lost with its commit (failover) or still held at the end."""
    assert j["placed"] == (j["released"] + j["refused"] + j["releases_unknown"] + j["lost"] +
                           j["held_end"]), j


def recount(cl, extra="", status=0):
    r = rusk("agent --backend %s %s --recount %s" % (cl.url, SHAPE, extra), status=status)
    match(r"recount: 10 partitions: held [0-9]+, free [0-9]+, mismatch 0", r.out)
    return r


@case
def cli_redis_bad_url():
    match(r"--backend 'nowhere' is neither 'memory' nor redis://", rusk(
        "agent --backend nowhere", status=2).out)
    match(r"--backend 'redis://127.0.0.1': address '127.0.0.1' is not HOST:PORT",
          rusk("agent --backend redis://127.0.0.1", status=2).out)
    match(r"--backend is required", rusk("agent " + SHAPE, status=2).out)
    match(r"address '\[::1\]:7000': IPv6 addresses are not supported: use a host name",
          rusk("agent --backend redis://[::1]:7000", status=2).out)
    match(r"--agent-id 3: must be below --agents 2",
          rusk("agent --backend memory --agents 2 --agent-id 3", status=2).out)
    # --backend's value left out: "needs a value", naming it (was "unknown option '2'")
    match(r"rusk: --backend: needs a value \(found the option '--agents' instead\)",
          rusk("agent --backend --agents 2", status=2).out)
    match(r"rusk: --backend: needs a value\n", rusk("agent --agents 2 --backend", status=2).out)
    # a lease shorter than a few round trips and a renew period lapses under a live agent
    for ms in ("1", "10", "999"):
        match(r"--lease-ms %s: below 1000 ms \(0: no lease\): a lease must outlive" % ms,
              rusk("agent --backend redis://127.0.0.1:7000 --lease-ms " + ms, status=2).out)
    # numbers written plainly: no blanks, '+', hex or exponents in an integer (strtol's
    # leniency took `--unavailable-ms " 100"` and "+100"), none in a real either
    for flag, bad in (("--unavailable-ms", " 100"), ("--unavailable-ms", "+100"),
                      ("--unavailable-ms", "100 "), ("--lease-ms", "0x1000"),
                      ("--failover-ms", "1e3"), ("--agents", " -1")):
        match(r"rusk: %s: '%s' is not an integer in " % (flag, re.escape(bad)),
              rusk(["agent", "--backend", "redis://127.0.0.1:7000", flag, bad],
                   status=2).out)
    for bad in (" 50", "+50", "0x10", "inf", "nan", "5e", "."):
        match(r"rusk: --rate: '%s' is not a number in " % re.escape(bad),
              rusk(["agent", "--backend", "redis://127.0.0.1:7000", "--rate", bad],
                   status=2).out)


@case
def cli_redis_run_backend():
    """rusk run --backend: what it refuses before any connection (exit 2, naming the flag)."""
    match(r"--backend 'nowhere' is neither 'memory' nor redis://HOST:PORT",
          rusk("run --backend nowhere --duration-s 0.1", status=2).out)
    match(r"--backend redis://127.0.0.1:7000: rusk sim runs in virtual time in one process",
          rusk("sim --backend redis://127.0.0.1:7000 --duration-s 0.1", status=2).out)
    match(r"--backend redis://127.0.0.1:7000: not with --strategy central",
          rusk("run --backend redis://127.0.0.1:7000 --strategy central --duration-s 0.1",
               status=2).out)
    match(r"--backend redis://127.0.0.1:7000: not with --global-lock",
          rusk("run --backend redis://127.0.0.1:7000 --global-lock --duration-s 0.1",
               status=2).out)
    match(r"--no-init: only with --backend redis://",
          rusk("run --no-init --duration-s 0.1", status=2).out)
    # the value left out: named, exit 2 (was: '--agents' taken as the address; last: a crash)
    match(r"rusk: --backend: needs a value \(found the option '--agents' instead\)",
          rusk("run --backend --agents 2 --duration-s 0.1", status=2).out)
    match(r"rusk: --backend: needs a value\n",
          rusk("run --duration-s 0.1 --backend", status=2).out)
    # --wait / --wait-ms (WAIT-based commits): the flag named, exit 2
    for bad in ("--wait 0", "--wait 17", "--wait x"):
        match(r"--wait: '[^']*' is not an integer in 1\.\.16",
              rusk("run --backend redis://127.0.0.1:7000 %s --duration-s 0.1" % bad,
                   status=2).out)
    match(r"--wait-ms: '0' is not an integer in 1\.\.60000",
          rusk("run --backend redis://127.0.0.1:7000 --wait 1 --wait-ms 0 --duration-s 0.1",
               status=2).out)
    match(r"--wait-ms: only with --wait N",
          rusk("run --backend redis://127.0.0.1:7000 --wait-ms 50 --duration-s 0.1",
               status=2).out)
    match(r"--wait: only with --backend redis://",
          rusk("run --wait 1 --duration-s 0.1", status=2).out)
    # --unavailable-ms (a stuck master skipped): rusk agent's bounds, only with --backend
    match(r"--unavailable-ms 50: below 100 ms \(0: off\)",
          rusk("run --backend redis://127.0.0.1:7000 --unavailable-ms 50 --duration-s 0.1",
               status=2).out)
    match(r"--unavailable-ms: '60001' is not an integer in 0\.\.60000",
          rusk("run --backend redis://127.0.0.1:7000 --unavailable-ms 60001 --duration-s 0.1",
               status=2).out)
    match(r"--unavailable-ms: only with --backend redis://",
          rusk("run --unavailable-ms 1000 --duration-s 0.1", status=2).out)
    # the view syncs' time is wall time: its share is of the agents' wall time, at most
    # 100% (before: "7.399 s (940.0% of the agents' CPU time)" over Redis)
    d = tempfile.mkdtemp(prefix="rusk-syncs.")
    try:
        path = os.path.join(d, "run.json")
        r = rusk("run --duration-s 0.5 --rate 1000 --machines 2000 --json " + path)
        match(r"view syncs +[0-9]+ partition syncs, [0-9.]+ s of wall time \([0-9.]+% of the "
              r"agents' wall time\)", r.out)
        with open(path) as f:
            sy = json.load(f)["sync"]
        assert 0 <= sy["share_of_agent_wall"] <= 1 and "share_of_agent_cpu" not in sy, sy
    finally:
        shutil.rmtree(d, ignore_errors=True)


# rusk run over Redis: a small cluster (400 RUs of 2 a machine), so the views' staleness
# makes conflicts; every process of a run gives the same shape.
RUN_SHAPE = "--machines 200 --machines-per-rack 10 --partitions 4 --rus-per-machine 2"


def run_json(path):
    with open(path) as f:
        return json.load(f)


def check_run(j, text, label, single=True):
    """All tasks placed and ended (released: the counts add up, every RU free locally), the
    recount finds nothing held by the run's tasks and no free mark that disagrees with an
    owner. single: 1-RU tasks, so each claim granted was one lease released."""
    t, rd = j["tasks"], j["redis"]
    print(label, json.dumps({"tasks": t, "conflicts": j["conflicts"], "redis": rd}))
    assert t["submitted"] > 0 and t["committed"] == t["submitted"], t
    assert t["rejected"] == 0 and t["backlog_end"] == 0, t
    assert j["checks"]["counts_add_up"] and j["checks"]["counters_consistent"], j["checks"]
    match(r"counts add up: yes; all RUs free after the run: yes", text)
    assert rd["recount"]["ok"] and rd["recount"]["held_by_run"] == 0, rd
    assert rd["recount"]["mismatch"] == 0 and rd["recount"]["partitions_failed"] == 0, rd
    assert rd["errors"] == 0 and rd["open_failures"] == 0, rd
    # no failover here: the ledger finds nothing lost and nothing orphaned (L2, L4)
    assert rd["ledger"]["checks"] > 0 and rd["ledger"]["lost_tasks"] == 0, rd["ledger"]
    assert rd["ledger"]["orphans"] == 0, rd["ledger"]
    # ... and no connection lost, redirected or waiting out an outage (the links' counters,
    # every connection's merged: a failover's run shows them, cli_redis_run_failover_loss)
    assert rd["reconnects"] == 0 and rd["redirects"] == 0 and rd["resent"] == 0, rd
    assert rd["outage_s"] == 0 and rd["outage_sum_s"] == 0, rd
    match(r"redis link +0 reconnects, 0 redirections \(MOVED/ASK\), 0 pipelines sent again; "
          r"0\.00 s in outage", text)
    if single:
        assert rd["released"] == (rd["claims"] - rd["claims_lost"] - rd["claims_short"] -
                                  rd["claims_unknown"] - rd["local_refused"]), rd


@case
def cli_redis_run():
    """rusk run --backend redis://: the generator, dispatcher and agents over the state on
    Redis at a small rate; single-RU tasks, so each conflict is one claim the remote refused."""
    with Cluster() as cl:
        out = "cli_redis_run.json"
        r = rusk("run --backend %s %s --agents 2 --sync state --gap-ms 200 --rate 600 "
                 "--duration-s 3 --task-ms 500 --json %s" % (cl.url, RUN_SHAPE, out))
        print(r.out)
        match(r"master state +%s \(empty state written first; owner namespace [0-9]+\)" % re.escape(cl.url), r.out)
        match(r"redis recount +4 partitions: held 0 \(by this run's tasks 0\), free 400, "
              r"mismatch 0", r.out)
        match(r"conflicts +[0-9]+ commits lost RUs", r.out)
        j = run_json(out)
        check_run(j, r.out, "run")
        assert (j["conflicts"]["total"] ==
                j["redis"]["claims_lost"] + j["redis"]["local_refused"]), j
        assert j["redis"]["connections"] >= 2, j["redis"]
        assert j["redis"]["commit_batch"] == 32 and j["redis"]["batches"] > 0, j["redis"]
        match(r"held 0, free 400, mismatch 0", rusk("agent --backend %s %s --recount" %
                                                    (cl.url, RUN_SHAPE)).out)
        # Multi-RU tasks: gangs on one machine and across machines, incremental spread
        out = "cli_redis_run_mix.json"
        r = rusk("run --backend %s %s --agents 2 --rate 300 --duration-s 2 --task-ms 300 "
                 "--mix 1@0.4,2:machine:gang@0.2,3:any:gang@0.2,2:spread:incremental@0.2 "
                 "--json %s" % (cl.url, RUN_SHAPE, out))
        print(r.out)
        check_run(run_json(out), r.out, "mix", single=False)
        match(r"held 0, free 400, mismatch 0", rusk("agent --backend %s %s --recount" %
                                                    (cl.url, RUN_SHAPE)).out)


# A run that keeps the agents' queues full: 4,000 RUs, 5,000 tasks/s of 100 ms for 2 s.
BATCH_SHAPE = "--machines 2000 --partitions 10 --rus-per-machine 2"


@case
def cli_redis_run_batch():
    """--commit-batch (kernel/remote.h "Batches"): with queues that hold many tasks, the
    default batch of 32 commits several tasks per round trip and sends releases once per
    loop turn, where --commit-batch 1 pays at least one commit and one release round trip
    per task; both place everything, count each refused claim as a conflict, and leave
    nothing held. The offered rate (40,000 tasks/s for 1 s) is several times what one
    round trip per task sustains on loopback, so the queues hold many tasks on a quiet
    machine as on a loaded one (at 5,000 tasks/s a quiet machine's agents kept up task by
    task: 1.8 tasks a batch)."""
    with Cluster() as cl:
        runs = {}
        for b in (1, 32):
            out = "cli_redis_run_batch_%d.json" % b
            r = rusk("run --backend %s %s --agents 2 --rate 40000 --duration-s 1 --task-ms 20 "
                     "--commit-batch %d --json %s" % (cl.url, BATCH_SHAPE, b, out))
            print(r.out)
            j = run_json(out)
            check_run(j, r.out, "batch %d" % b)
            rd, placed = j["redis"], j["tasks"]["committed"]
            assert (j["conflicts"]["total"] ==
                    rd["claims_lost"] + rd["local_refused"]), (j["conflicts"], rd)
            runs[b] = (rd["commit_round_trips"] / placed, rd["release_round_trips"] / placed, rd)
            print("batch %d: %.3f commit and %.3f release round trips per task" %
                  (b, runs[b][0], runs[b][1]))
        assert runs[1][2]["batches"] == 0 and runs[1][0] >= 1.0, runs[1]
        assert runs[1][1] >= 0.99, runs[1]
        assert runs[32][2]["batches"] > 0 and runs[32][2]["batch_tasks"] > runs[32][2]["batches"]
        # several tasks per round trip, both ways
        assert runs[32][0] < 0.5 * runs[1][0], (runs[1], runs[32])
        assert runs[32][1] < 0.5 * runs[1][1], (runs[1], runs[32])
    match(r"--commit-batch: only with --backend redis://",
          rusk("run --commit-batch 4 --duration-s 0.1", status=2).out)


@case
def cli_redis_run_wait():
    """--wait 1: every commit and release pipeline ends with WAIT 1 (one per partition per
    batch, not per task); the run places everything as without it, and its commit round
    trip, which now includes the replica's acknowledgement, is reported (no timing is
    asserted: perf/RESULTS.md has the figures)."""
    with Cluster() as cl:
        out = "cli_redis_run_wait.json"
        r = rusk("run --backend %s %s --agents 2 --rate 600 --duration-s 2 --task-ms 300 "
                 "--wait 1 --wait-ms 500 --json %s" % (cl.url, RUN_SHAPE, out))
        print(r.out)
        match(r"WAIT 1 500 after each commit and release pipeline \(--wait\)", r.out)
        j = run_json(out)
        check_run(j, r.out, "wait")
        rd = j["redis"]
        assert rd["wait"] == 1 and rd["wait_ms"] == 500, rd
        assert rd["commit_rtt_us"]["p50"] > 0, rd
        match(r"held 0, free 400, mismatch 0", rusk("agent --backend %s %s --recount" %
                                                    (cl.url, RUN_SHAPE)).out)
        # more replicas than a shard has (1 each here): refused before anything runs
        r = rusk("run --backend %s %s --no-init --wait 2 --duration-s 0.1" %
                 (cl.url, RUN_SHAPE), status=2)
        match(r"--wait 2: the cluster at %s has a shard with 1 replica" % re.escape(cl.url),
              r.out)


@case
def cli_redis_run_sigterm():
    """SIGTERM mid-run: every task still running ends (one terminal event each) and its RUs
    go back to Redis too; the recount finds none held."""
    with Cluster() as cl:
        out = "cli_redis_run_sigterm.json"
        rc, text = signalled([ARGS.rusk, "run", "--backend", cl.url] + RUN_SHAPE.split() +
                             ["--rate", "100", "--duration-s", "60", "--task-ms", "20000",
                              "--json", out])
        assert rc == 3, "exit %d, not 3 (interrupted)" % rc
        j = run_json(out)
        assert j["run"]["interrupted"], j["run"]
        assert j["redis"]["released"] > 100, j["redis"]  # tasks of 20 s ended at the stop
        check_run(j, text, "sigterm")
        match(r"held 0, free 400, mismatch 0", rusk("agent --backend %s %s --recount" %
                                                    (cl.url, RUN_SHAPE)).out)


@case
def cli_redis_run_ledger_default():
    """At the default shape (100,000 machines x 2 RUs, 20 partitions, 40,000 tasks/s) the
    once-a-second ledger reads every partition, none failed, over the run's life: each pass
    reads its partitions in pipelined blocks from where the last one stopped (before, one
    round trip per partition under a 500 ms budget left partitions unread: 9 in a 10 s
    run). parts_read + parts_deferred is 20 a pass (the end's pass reads them all)."""
    with Cluster() as cl:
        out = "cli_redis_run_ledger_default.json"
        r = rusk("run --backend %s --duration-s 10 --json %s" % (cl.url, out))
        rd = run_json(out)["redis"]
        led = rd["ledger"]
        print("ledger", json.dumps(led))
        assert led["checks"] >= 10 and led["failed"] == 0, led
        assert led["sweep_passes_max"] >= 1 and led["pass_read_min"] >= 1, led
        assert led["parts_read"] + led["parts_deferred"] == 20 * led["checks"], led
        assert rd["recount"]["ok"] and rd["recount"]["partitions_failed"] == 0, rd["recount"]
        match(r"redis ledger +[0-9]+ checks, [0-9]+ partitions read, 0 could not be read "
              r"\(0 of them not checked: their master marked unavailable\), "
              r"[0-9]+ left to the next pass \(budget; every partition read within [0-9]+ "
              r"passes\)", r.out)


# An RU made an orphan of a run by hand: free in Redis, it is given to a task id of the
# run's namespace that the run never had (a release Redis lost, as the ledger sees it).
ORPHAN_LUA = ("if redis.call('GETBIT', KEYS[1], ARGV[1]) ~= 1 then return 0 end "
              "redis.call('SETBIT', KEYS[1], ARGV[1], 0) "
              "redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) "
              "redis.call('HSET', KEYS[3], ARGV[1], '0') "
              "redis.call('INCR', KEYS[4]) return 1")


@case
def cli_redis_run_orphan_four_reads():
    """An orphan (an RU Redis shows held by one of the run's tasks that the run does not
    hold) is released only after four ledger reads of its partition in a row saw it (one
    sighting, or two, may be a release on its way): still held 2.5 s after it appeared
    (three passes at most; two reads released it before), released by the end, once."""
    with Cluster() as cl:
        out = "cli_redis_run_orphan.json"
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + RUN_SHAPE.split() +
                             ["--rate", "20", "--duration-s", "9", "--task-ms", "300",
                              "--json", out],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_for("the run's lease",
                     lambda: cli(cl, "zrange", "rusk:{meta}:live-runs", "0", "-1") != "" or
                     p.poll() is not None)
            ns = int(cli(cl, "zrange", "rusk:{meta}:live-runs", "0", "-1").split()[0])
            owner = ns << 40 | (1 << 39) + 123456789  # a handle the run never gave out
            ru = None
            for i in range(99, 50, -1):  # partition 3's last RUs: a low-rate run's free ones
                if cli(cl, "eval", ORPHAN_LUA, "4", "rusk:{p3}:free", "rusk:{p3}:own",
                       "rusk:{p3}:gen", "rusk:{p3}:ver", str(i), str(owner)) == "1":
                    ru = i
                    break
            assert ru is not None, "no free RU in partition 3"
            t0 = time.time()
            time.sleep(2.5)
            held = cli(cl, "hget", "rusk:{p3}:own", str(ru))
            assert p.poll() is None, "the run ended before the check"
            assert held == str(owner), \
                "the orphan was released %.1f s after it appeared (%r)" % (time.time() - t0,
                                                                          held)
        finally:
            text, rc = finish(p)
        assert rc == 0, "exit %d" % rc
        j = run_json(out)
        assert j["redis"]["ledger"]["orphans"] == 1, j["redis"]["ledger"]
        assert cli(cl, "hget", "rusk:{p3}:own", str(ru)) == "", "still held at the end"
        rc_ = j["redis"]["recount"]
        assert rc_["ok"] and rc_["held_by_run"] == 0 and rc_["mismatch"] == 0, rc_


def run_outage(label, sigterm_after=None):
    """rusk run --backend for 6 s; the whole cluster stopped (every node, cluster.sh stop) 2 s
    in; with sigterm_after, SIGTERM that many seconds after the cluster is gone. Returns the
    exit status, the output, the JSON, the seconds from the stop (or the signal) to the exit
    and from the start to the exit."""
    with Cluster() as cl:
        out = "%s.json" % label
        if os.path.exists(out):
            os.unlink(out)
        t0 = time.monotonic()
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + RUN_SHAPE.split() +
                             ["--agents", "2", "--rate", "600", "--duration-s", "6",
                              "--task-ms", "500", "--json", out],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(2)
            subprocess.run([script(), "stop", cl.dir], check=True, timeout=60)
            t = time.monotonic()
            print("%s: the cluster stopped" % label)
            if sigterm_after is not None:
                time.sleep(sigterm_after)
                p.send_signal(signal.SIGTERM)
                t = time.monotonic()
            # bound generously (a loaded 2-core machine, ASan): measured 33 s without a
            # signal (the drain cap, 30 s after the workload), 0.2 s after SIGTERM; minutes
            # (still going after 210 s) before the calls had an overall bound
            text = p.communicate(timeout=120)[0]
            took, wall = time.monotonic() - t, time.monotonic() - t0
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        print(text)
        print("%s: exit %d, %.1f s after the %s" %
              (label, p.returncode, took, "stop" if sigterm_after is None else "signal"))
        assert os.path.exists(out), "no --json written"
        return p.returncode, text, run_json(out), took, wall


def check_outage(j, text):
    """What a run whose cluster went away reports, signal or not: every task ended once
    (counts add up), errors counted, the recount not ok with every partition unread."""
    t, rd = j["tasks"], j["redis"]
    print("outage", json.dumps({"run": j["run"], "tasks": t, "redis": rd}))
    assert j["checks"]["counts_add_up"] and j["checks"]["counters_consistent"], j["checks"]
    assert t["committed"] + t["rejected"] + t["backlog_end"] == t["submitted"], t
    assert rd["errors"] > 0, rd
    assert rd["ledger"]["failed"] > 0, rd["ledger"]
    assert rd["recount"]["partitions_failed"] == 4 and not rd["recount"]["ok"], rd["recount"]
    match(r"redis recount +0 partitions: .*4 of 4 partitions could not be read", text)
    # commits that got no answer (0 to 25 of about 1,300 in this run: most commits wait
    # for the outage instead) are counted as unanswered, not as conflicts (the
    # conflicts left are claims a node refused: an RU whose release the outage lost,
    # still held where a replica took over while the cluster went down)
    assert j["conflicts"]["total"] == rd["claims_lost"] + rd["local_refused"], (j["conflicts"], rd)


@case
def cli_redis_run_outage():
    """The whole cluster gone mid-run, no signal: each connection waits out the outage once
    (the failover bound, 30 s from when it lost the cluster, not per call), the ledger and
    the recount each read within their budget; the run ends at its drain cap with what it
    could not place queued, and says the state was unreachable: the recount's check fails,
    exit 1, --json written."""
    rc, text, j, took, wall = run_outage("cli_redis_run_outage")
    check_outage(j, text)
    assert rc == 1, "exit %d, not 1 (a failed check)" % rc
    assert took < 100, "%.1f s after the cluster stopped" % took
    assert not j["run"]["interrupted"], j["run"]
    # the ledger (once a second, on the sampler's thread) kept to its budget: the sampler
    # counted about every second of the run (37 of 37-38 s measured; with a ledger that
    # waited out the outage per partition, one second in 30 or more)
    assert j["run"]["elapsed_s"] >= 0.75 * wall - 3, (j["run"], wall)
    match(r"NO: the recount of the state on Redis: the state was unreachable: 4 of 4 "
          r"partitions could not be read", text)


@case
def cli_redis_run_outage_sigterm():
    """SIGTERM while the whole cluster is gone: the run stops within seconds (every call
    waiting out the outage gives up on the signal), every task still ends once, and the
    summary and --json say it was interrupted and the recount was not done: exit 3."""
    rc, text, j, took, _ = run_outage("cli_redis_run_outage_sigterm", sigterm_after=2)
    check_outage(j, text)
    assert rc == 3, "exit %d, not 3 (interrupted)" % rc
    assert took < 20, "%.1f s after SIGTERM" % took
    assert j["run"]["interrupted"] and j["run"]["end"] == "SIGTERM", j["run"]
    match(r"not done, the run was interrupted: 4 of 4 partitions could not be read", text)


@case
def cli_redis_run_stopped_part_unread():
    """SIGTERM to a `rusk run` while one shard is gone (its master and replica killed): the
    recount, not done, counts and names the partitions of that shard alone as unread, the
    others read. Before, the first unread partition after the stop counted every later one
    unread too (all 10 named, with 6 on the dead shard). cluster-node-timeout 60 s: with the
    default 2 s, every node answers CLUSTERDOWN for every slot 2-3 s after the shard dies, so
    a slow end (a loaded machine, ASan) could read none of the others either."""
    with Cluster(node_timeout_ms=60000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        victim = cl.master_of_partition(0)
        dead = [p for p in range(10) if cl.master_of_partition(p) == victim]
        assert 0 < len(dead) < 10, dead
        replica = int(subprocess.check_output([script(), "replica-of", cl.dir, str(victim)],
                                              text=True, timeout=10).strip())
        p = start_proc(["run", "--backend", cl.url] + SHAPE.split() +
                       ["--rus-per-machine", "16", "--no-init", "--agents", "2", "--rate",
                        "300", "--duration-s", "8", "--task-ms", "200"])
        try:
            time.sleep(2)
            for port in (victim, replica):
                subprocess.run([script(), "kill", cl.dir, str(port)], check=True,
                               timeout=10)
            time.sleep(1)
            p.send_signal(signal.SIGTERM)
            out, rc = finish(p, timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        assert rc == 3, "exit %d, not 3 (interrupted)" % rc
        m = re.search(r"not done, the run was interrupted: ([0-9]+) of 10 partitions could "
                      r"not be read \(partitions? ([0-9, ]+):", out)
        assert m, "no recount line naming the unread partitions"
        named = [int(x) for x in m.group(2).split(", ")]
        assert int(m.group(1)) == len(dead) and named == dead, (m.group(0), dead)
        match(r"redis recount +%d partitions: held " % (10 - len(dead)), out)


@case
def cli_redis_reclaim_dead_counted_once():
    """An agent killed while one shard is gone for good (its master and replica killed,
    not the {meta} shard's): a live agent's automatic reclaim releases the dead one's RUs it
    can read at each pass, but cannot forget it (partitions unread), so every pass finds it
    dead again; the summary counts it once (`1 dead agents`). Before, once per pass (`4
    dead agents` in 4 passes of an 8 s run with --lease-ms 1500). cluster-node-timeout 60 s:
    the other shards answer for the whole run (with 2 s, the cluster went down for every
    slot 2-3 s after the kill, leaving the reclaim a window of about 1 s)."""
    with Cluster(node_timeout_ms=60000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        meta = cl.master_of_tag("{meta}")
        victim = [q for q in (cl.master_of_partition(p) for p in range(10)) if q != meta][0]
        replica = int(subprocess.check_output([script(), "replica-of", cl.dir, str(victim)],
                                              text=True, timeout=10).strip())
        dead = agent_proc(cl, SHAPE, 0, 2, 60, ["--lease-ms", "1500"])
        live = None
        try:
            wait_lease(cl, 0, dead)
            live = start_proc(["agent", "--backend", cl.url] + SHAPE.split() +
                              ["--agents", "2", "--agent-id", "1", "--duration-s", "8",
                               "--task-ms", "200", "--rate", "200", "--lease-ms", "1500",
                               "--failover-ms", "2000"])
            wait_lease(cl, 1, live)
            time.sleep(1)
            dead.kill()
            dead.communicate()
            for port in (victim, replica):
                subprocess.run([script(), "kill", cl.dir, str(port)], check=True,
                               timeout=10)
            out, rc = finish(live, timeout=120)
        finally:
            for p in (dead, live):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.communicate()
        m = re.search(r"reclaim: ([0-9]+) RUs of dead processes released \([0-9]+ of dead "
                      r"runs; ([0-9]+) dead agents, [0-9]+ dead runs\) in ([0-9]+) passes", out)
        assert m, "no reclaim line"
        reclaimed, agents, passes = int(m.group(1)), int(m.group(2)), int(m.group(3))
        # the case's subject: several passes released the dead agent's RUs
        assert reclaimed > 0 and passes >= 2, m.group(0)
        assert agents == 1, "one dead agent counted %d times: %s" % (agents, m.group(0))


@case
def cli_redis_fresh_not_put_off():
    """A fresh agent (--lease-ms 1500) on a healthy cluster: its first lease and 1 s reclaim
    nothing (it has not watched the {meta} shard for a lease yet), and says no pass was put
    off: nothing was wrong. Before, each pass of that window read "put off (the {meta} shard
    not answering steadily for a lease)": 4 to 5 of them. A real gap still counts (
    cli_redis_meta_outage_no_reclaim)."""
    with Cluster() as cl:
        r = rusk("agent --backend %s %s --init --duration-s 3 --task-ms 200 --rate 200 "
                 "--lease-ms 1500" % (cl.url, SHAPE))
        j = last_json(r.out)
        assert j["reclaim_unsteady"] == 0, j
        match(r"in [0-9]+ passes; 0 passes left to another process's reclaim, 0 put off", r.out)


@case
def cli_redis_run_with_agent():
    """rusk run --backend and a separate rusk agent process on one state: both place, the
    run's conflicts include RUs the agent took, and the recount finds nothing held twice."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        agent = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + RUN_SHAPE.split() +
                                 ["--agents", "4", "--agent-id", "3", "--rate", "300",
                                  "--duration-s", "4", "--task-ms", "500"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            out = "cli_redis_run_with_agent.json"
            r = rusk("run --backend %s %s --no-init --agents 2 --sync state --gap-ms 300 "
                     "--rate 300 --duration-s 3 --task-ms 500 --json %s" %
                     (cl.url, RUN_SHAPE, out))
            print(r.out)
            match(r"master state +%s \(joined the state there; owner namespace [0-9]+\)" % re.escape(cl.url), r.out)
            atext = agent.communicate(timeout=60)[0]
        finally:
            if agent.poll() is None:
                agent.kill()
        print(atext)
        assert agent.returncode == 0, "the agent exited %d" % agent.returncode
        a = last_json(atext)
        assert a["placed"] > 100 and a["refused"] == 0 and a["claims_unknown"] == 0 and a["releases_unknown"] == 0, a
        j = run_json(out)
        check_run(j, r.out, "run")
        assert j["conflicts"]["total"] > 0, "no conflicts with an agent beside: %s" % j["conflicts"]
        match(r"held 0, free 400, mismatch 0", rusk("agent --backend %s %s --recount" %
                                                    (cl.url, RUN_SHAPE)).out)


@case
def cli_redis_run_two():
    """Two rusk run --backend processes at once on one state (--no-init after one init):
    each takes its own namespace from Redis (INCR rusk:{meta}:runs), folded into its owner
    ids above the kernel's 40-bit task ids, so their dispatchers' handles, equal in both,
    never name the other's RUs. Both place every task (each ends with one terminal event),
    neither's ledger takes the other's RUs for orphans or lost commits, neither's releases
    are refused, each run's recount finds nothing held by its own tasks, and a recount after
    both finds nothing held and no free mark that disagrees with an owner. Bounded: two
    3 s runs, 60 s each at most."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        procs, outs = [], []
        try:
            for i in range(2):
                out = "cli_redis_run_two_%d.json" % i
                outs.append(out)
                procs.append(subprocess.Popen(
                    [ARGS.rusk, "run", "--backend", cl.url] + RUN_SHAPE.split() +
                    ["--no-init", "--agents", "2", "--rate", "300",
                     "--duration-s", "3", "--task-ms", "500", "--json", out],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            texts = [p.communicate(timeout=60)[0] for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        spaces = set()
        for i, (p, text, out) in enumerate(zip(procs, texts, outs)):
            print(text)
            assert p.returncode == 0, "run %d exited %d" % (i, p.returncode)
            j = run_json(out)
            check_run(j, text, "run %d" % i)
            rd = j["redis"]
            assert rd["release_refused"] == 0, "run %d's releases refused: %r" % (i, rd)
            d = j["redis_dispatch"]
            # every task exactly one terminal event: placed once, none rejected or left
            assert d["submitted"] == j["tasks"]["submitted"] == d["placed"], d
            assert d["rejected"] == 0 and d["revoked"] == 0 and d["queued_end"] == 0, d
            assert d["released"] == d["placed"], d
            spaces.add(rd.get("namespace"))
        assert len(spaces) == 2 and None not in spaces, "namespaces %r" % spaces
        match(r"held 0, free 400, mismatch 0", rusk("agent --backend %s %s --recount" %
                                                    (cl.url, RUN_SHAPE)).out)


@case
def cli_redis_refused():
    """A wrong address: nothing listens there."""
    need_redis()
    p = free_port()
    r = rusk("agent --backend redis://127.0.0.1:%d %s" % (p, SHAPE), status=2)
    match(r"--backend redis://127.0.0.1:%d: cannot connect to 127.0.0.1:%d" % (p, p), r.out)


def standalone(extra):
    """A lone redis-server on a free port (cluster mode per extra); (proc, port, dir). The
    port comes from cluster.sh's range, whose bus ports (port + 10000) are free too: an
    ephemeral port above 55535 has no bus port, and redis-server in cluster mode exits."""
    p = int(subprocess.check_output([script(), "free-port"], timeout=30))
    d = tempfile.mkdtemp(prefix="rusk-redis1.")
    proc = subprocess.Popen(["redis-server", "--port", str(p), "--bind", "127.0.0.1",
                             "--save", "", "--dir", d] + extra,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(p), "ping"], capture_output=True,
                          timeout=5).returncode == 0:
            break
        time.sleep(0.1)
    return proc, p, d


def stop(proc, d):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    shutil.rmtree(d, ignore_errors=True)


@case
def cli_redis_not_cluster():
    need_redis()
    proc, p, d = standalone([])
    try:
        r = rusk("agent --backend redis://127.0.0.1:%d %s --init" % (p, SHAPE), status=2)
        match(r"127.0.0.1:%d is not a Redis Cluster node \(CLUSTER SLOTS: ERR This instance "
              r"has cluster support disabled\)" % p, r.out)
        keys = subprocess.run(["redis-cli", "-p", str(p), "dbsize"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        assert keys == "0", "a refused --init wrote %s keys" % keys
    finally:
        stop(proc, d)


@case
def cli_redis_missing_slots():
    need_redis()
    proc, p, d = standalone(["--cluster-enabled", "yes", "--cluster-config-file",
                             "nodes.conf"])
    try:
        subprocess.run(["redis-cli", "-p", str(p), "cluster", "addslotsrange", "0", "8000"],
                       capture_output=True, timeout=10)
        r = rusk("agent --backend redis://127.0.0.1:%d %s --init" % (p, SHAPE), status=2)
        match(r"the cluster serves no node for slots 8001-16383 \(CLUSTER SLOTS\)", r.out)
    finally:
        stop(proc, d)


def one_node_cluster():
    """A cluster of one master serving every slot (a second cluster in a few seconds, for
    cli_redis_two_clusters): (proc, port, dir)."""
    proc, p, d = standalone(["--cluster-enabled", "yes", "--cluster-config-file",
                             "nodes.conf"])
    subprocess.run(["redis-cli", "-p", str(p), "cluster", "addslotsrange", "0", "16383"],
                   capture_output=True, timeout=10, check=True)
    return proc, p, d


@case
def cli_redis_two_clusters():
    """Seeds of two different clusters: refused at connect, naming both, exit 2, nothing
    written (rusk routed by the first seed's map, and a process given the seeds in the
    other order used the other cluster: two master states)."""
    need_redis()
    a = b = None
    try:
        a = one_node_cluster()
        b = one_node_cluster()
        pa, pb = a[1], b[1]
        msg = (r"seeds 127.0.0.1:%d and 127.0.0.1:%d belong to different Redis Clusters "
               r"\(127.0.0.1:%d's node id [0-9a-f]{12} is not among 127.0.0.1:%d's CLUSTER "
               r"NODES\)")
        r = rusk("agent --backend redis://127.0.0.1:%d,redis://127.0.0.1:%d %s --init"
                 % (pa, pb, SHAPE), status=2)
        match(msg % (pa, pb, pb, pa), r.out)
        r = rusk("run --backend redis://127.0.0.1:%d,127.0.0.1:%d %s --duration-s 0.5"
                 % (pb, pa, SHAPE), status=2)
        match(msg % (pb, pa, pa, pb), r.out)
        for port in (pa, pb):
            keys = subprocess.run(["redis-cli", "-p", str(port), "dbsize"],
                                  capture_output=True, text=True, timeout=10).stdout.strip()
            assert keys == "0", "a refused open wrote %s keys on %d" % (keys, port)
        # one cluster's node given twice, and a seed that does not answer: still accepted
        r = rusk("agent --backend redis://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d %s "
                 "--init-only" % (pa, pa, free_port(), SHAPE))
    finally:
        for x in (a, b):
            if x is not None:
                stop(x[0], x[2])


@case
def cli_redis_state_lost():
    """Some partitions' state gone while the others' is there: the cluster lost the init
    its master acknowledged (docs/redis.md, Faults). Here for certain: the replica of
    partition 0's master paused and its replication link cut, the state written (that
    master alone acknowledges its shard's partitions), the master killed and the empty
    replica promoted. rusk agent, its recount and rusk run --no-init say the state is
    incomplete, lost by the cluster, naming the partitions gone, and exit 1 as for an
    outage. Before, each said "no rusk state for partition 0 ... start `rusk run` first"
    and exited 2, as for a cluster nobody initialised (cli_redis_no_state: still so)."""
    with Cluster() as cl:
        victim = cl.master_of_partition(0)
        gone = [p for p in range(10) if cl.master_of_partition(p) == victim]
        replica = subprocess.check_output([script(), "replica-of", cl.dir, str(victim)],
                                          text=True, timeout=10).strip()
        subprocess.run([script(), "pause", cl.dir, replica], check=True, timeout=10)
        time.sleep(0.2)
        subprocess.run([script(), "cut", cl.dir, str(victim)], check=True, timeout=10)
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        subprocess.run([script(), "kill", cl.dir, str(victim)], check=True, timeout=10)
        subprocess.run([script(), "resume", cl.dir, replica], check=True, timeout=10)
        wait_for("the replica %s promoted" % replica, lambda: subprocess.run(
            ["redis-cli", "-p", replica, "role"], capture_output=True, text=True,
            timeout=10).stdout.startswith("master"), secs=60)
        wait_cluster_ok(cl, "the promotion seen by every node", 60, down=victim)
        url = "redis://127.0.0.1:%d,127.0.0.1:%s" % (cl.master_of_partition(2), replica)
        names = ", ".join(str(p) for p in gone)
        want = (r"the rusk state at redis://\S+ is incomplete: partitions %s \(%d of 10\) "
                r"gone while the others' state is there: lost by the cluster" %
                (names, len(gone)))
        for args in ("agent --backend %s %s" % (url, SHAPE),
                     "agent --backend %s %s --recount" % (url, SHAPE),
                     "run --backend %s %s --no-init --duration-s 0.1" % (url, SHAPE)):
            r = rusk(args, status=1)
            match(want, r.out)
            assert "no rusk state" not in r.out, r.out
        # written afresh, it is whole again
        rusk("agent --backend %s %s --init-only" % (url, SHAPE))
        r = rusk("agent --backend %s %s --recount" % (url, SHAPE))
        match(r"held 0, free 32000, mismatch 0", r.out)
        # every partition gone but the {meta} shard (its shape says the state was written):
        # lost too, exit 1; before, "no rusk state", exit 2 (the eighth review, F4)
        for p in range(10):
            port = cl.master_of_partition(p)
            subprocess.run(["redis-cli", "-p", str(port), "del"] +
                           ["rusk:{p%d}:%s" % (p, k) for k in ("own", "gen", "free", "mem",
                                                               "gpu", "rec", "ver", "mach")],
                           check=True, capture_output=True, timeout=10)
        r = rusk("agent --backend %s %s" % (url, SHAPE), status=1)
        match(r"the rusk state at redis://\S+ is gone: every partition's \(10\) gone while "
              r"rusk:\{meta\}:shape says it was written: lost by the cluster", r.out)
        assert "no rusk state" not in r.out, r.out


@case
def cli_redis_state_lost_mid_run():
    """A partition's state gone after the start (its keys deleted on its master, as a
    failover that lost the init leaves it): rusk agent's snapshot or commit and rusk run's
    calls find it, and each stops, says the state is incomplete, lost by the cluster,
    naming the partition (the start's check's words), and exits 1 as for an outage.
    Before: the agent's snapshot said nothing and it ran to the end, exit 0; rusk run
    called the state corrupt, exit 2 (bad input)."""
    with Cluster() as cl:
        master = str(cl.master_of_partition(3))
        keys = ["rusk:{p3}:%s" % k for k in ("own", "gen", "free", "mem", "gpu", "rec",
                                              "ver", "mach")]
        want = (r"the rusk state at redis://\S+ is incomplete: partition 3 \(1 of 4\) gone "
                r"while the others' state is there: lost by the cluster[^\n]*: stopping")

        def drop():
            subprocess.run(["redis-cli", "-p", master, "del"] + keys, check=True,
                           capture_output=True, timeout=10)

        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        p = agent_proc(cl, RUN_SHAPE, 0, 1, 30)
        wait_lease(cl, 0, p)
        time.sleep(1)
        t0 = time.monotonic()
        drop()
        out, rc = finish(p)
        took = time.monotonic() - t0
        assert rc == 1, "rusk agent exited %s:\n%s" % (rc, out)
        match(r"rusk agent: --backend redis://\S+: " + want, out)
        assert "corrupt" not in out and "is missing" not in out, out
        assert took < 20, "rusk agent went on %.1f s after the loss" % took

        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        run = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + RUN_SHAPE.split() +
                               ["--no-init", "--duration-s", "30", "--rate", "200"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(3)
        assert run.poll() is None, "rusk run ended early"
        t0 = time.monotonic()
        drop()
        out, rc = finish(run)
        took = time.monotonic() - t0
        assert rc == 1, "rusk run exited %s:\n%s" % (rc, out)
        match(r"rusk: --backend redis://\S+: " + want + " the run", out)
        assert "the rusk state is corrupt" not in out, out
        assert took < 20, "rusk run went on %.1f s after the loss" % took


@case
def cli_redis_init_unreplicated():
    """The init WAITs for a replica of each master that took it (WAIT 1, 2 s at most, all
    shards at once): with partition 0's replica paused (SIGSTOP) it is not acknowledged
    there, and rusk agent --init-only and rusk run (its init) warn, naming that master and
    its partitions, exit 0: the state is written (docs/redis.md, Faults). The other
    masters are not named; with the replica back, no warning. Before, the init said
    nothing (a failover of that master then lost it: cli_redis_state_lost)."""
    with Cluster() as cl:
        victim = cl.master_of_partition(0)
        on = [p for p in range(10) if cl.master_of_partition(p) == victim]
        others = {cl.master_of_partition(p) for p in range(10)} - {victim}
        replica = subprocess.check_output([script(), "replica-of", cl.dir, str(victim)],
                                          text=True, timeout=10).strip()
        # rusk reads which masters have a replica from one master's CLUSTER NODES: right
        # after the cluster is made, gossip may not have told every master yet (a loaded
        # make test: no WAIT sent, no warning), so wait until every master lists it
        vid = subprocess.check_output(["redis-cli", "-p", str(victim), "cluster", "myid"],
                                      text=True, timeout=10).strip()
        wait_for("every master listing the replica of %d" % victim, lambda: all(
            re.search(r"\sslave %s\s" % vid, subprocess.run(
                ["redis-cli", "-p", str(m), "cluster", "nodes"], capture_output=True,
                text=True, timeout=10).stdout) for m in others | {victim}), secs=60)
        init = "agent --backend %s %s --init-only" % (cl.url, SHAPE)
        r = rusk(init)
        assert "warning" not in r.out, r.out
        want = (r"warning: --backend redis://\S+: the state written is not yet on a replica of "
                r"127\.0\.0\.1:%d \(partitions? %s; WAIT 1 2000 answered 0\): a failover of "
                r"that master before its replica has it loses it" %
                (victim, ", ".join(str(p) for p in on)))
        subprocess.run([script(), "pause", cl.dir, replica], check=True, timeout=10)
        try:
            for args, who in ((init, "rusk agent"),
                              ("run --backend %s %s --duration-s 0.1" % (cl.url, SHAPE),
                               "rusk")):
                t0 = time.monotonic()
                r = rusk(args)
                took = time.monotonic() - t0
                match(who + ": " + want, r.out)
                line = next(x for x in r.out.splitlines() if "warning" in x)
                for port in others:
                    assert "127.0.0.1:%d (" % port not in line, line
                assert took < 30, "the init took %.1f s" % took
        finally:
            subprocess.run([script(), "resume", cl.dir, replica], check=True, timeout=10)
        wait_for("the replica linked again", lambda: "connected" in subprocess.run(
            ["redis-cli", "-p", replica, "role"], capture_output=True, text=True,
            timeout=10).stdout, secs=60)
        r = rusk(init)
        assert "warning" not in r.out, r.out


@case
def cli_redis_no_state():
    """An agent that joins a cluster nobody initialised, or of another shape."""
    with Cluster() as cl:
        r = rusk("agent --backend %s %s" % (cl.url, SHAPE), status=2)
        match(r"no rusk state for partition 0 at redis://.* \(key rusk:\{p0\}:mach missing\)",
              r.out)
        r = rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        match(r"wrote the empty state at redis://.*: 10 partitions, 2000 machines, 32000 RUs",
              r.out)
        # another shape: both sides' totals, what differs, and this command line's options
        r = rusk("agent --backend %s --machines 4000 --partitions 10" % cl.url, status=2)
        match(r"the rusk state at redis://.* is for another cluster shape: it has 32000 RUs on "
              r"2000 machines in 10 partitions; this command line makes 64000 RUs on 4000 "
              r"machines in 10 partitions; differs: the machines \(--machines, --cluster\); "
              r"the state was made with --machines 2000; this command line has --machines "
              r"4000: give --machines 2000, or write the state afresh \(rusk agent --init, "
              r"rusk run without --no-init\) "
              r"\(this command line: --machines 4000 --rus-per-machine 16 --partitions 10 ", r.out)
        r = rusk("agent --backend %s %s --rus-per-machine 8" % (cl.url, SHAPE), status=2)
        match(r"this command line makes 16000 RUs on 2000 machines in 10 partitions; differs: "
              r"the RUs per machine \(--rus-per-machine\)", r.out)
        r = rusk("run --backend %s %s --no-init --duration-s 0.1" % (cl.url, SHAPE), status=2)
        match(r"it has 32000 RUs on 2000 machines in 10 partitions; this command line makes "
              r"4000 RUs on 2000 machines in 10 partitions; differs: the RUs per machine "
              r"\(--rus-per-machine\); the state was made with --rus-per-machine 16; this "
              r"command line has --rus-per-machine 2: give --rus-per-machine 16, or write the "
              r"state afresh [^\n]* \(this command line: --machines 2000 --rus-per-machine 2 ",
              r.out)
        r = rusk("agent --backend %s --machines 2000 --partitions 5" % cl.url, status=2)
        match(r"in 10 partitions; this command line makes 32000 RUs on 2000 machines in 5 "
              r"partitions; differs: the partitions \(--partitions\)", r.out)
        # --wait as rusk run checks it: more replicas than a shard has (1 here) refused
        r = rusk("agent --backend %s %s --wait 2 --duration-s 0.1" % (cl.url, SHAPE), status=2)
        match(r"rusk agent: --wait 2: the cluster at %s has a shard with 1 replica \(WAIT 2 "
              r"would wait out --wait-ms" % re.escape(cl.url), r.out)
        # --reclaim-agent of an id that holds nothing: said, not an error
        r = recount(cl, "--reclaim-agent 99")
        match(r"recount: --reclaim-agent 99: agent 99's tasks hold no RU: nothing to reclaim",
              r.out)


@case
def cli_redis_seed_mismatch():
    """A state made with --seed 7 (the machines' platforms drawn from it: another layout)
    joined with --seed 1: the refusal names the flag and both values and what to do, for
    rusk agent and rusk run (exit 2). Before, it said "another --cluster node list?" of a
    cluster given by flags. Two flags that differ are both named."""
    with Cluster() as cl:
        shape = "--machines 800 --partitions 4 --rus-per-machine 2"
        rusk("agent --backend %s %s --seed 7 --init-only" % (cl.url, shape))
        hint = (r"the state was made with --seed 7; this command line has --seed 1: give "
                r"--seed 7, or write the state afresh \(rusk agent --init, rusk run without "
                r"--no-init\)")
        r = rusk("agent --backend %s %s --seed 1 --duration-s 0.5" % (cl.url, shape), status=2)
        match(r"is for another cluster shape: [^\n]*; " + hint, r.out)
        r = rusk("run --backend %s %s --seed 1 --no-init --duration-s 0.5" % (cl.url, shape),
                 status=2)
        match(r"is for another cluster shape: [^\n]*; " + hint, r.out)
        # two flags: both named, each side's values
        r = rusk("agent --backend %s %s --seed 1 --machines-per-rack 20 --duration-s 0.5"
                 % (cl.url, shape), status=2)
        match(r"the state was made with --machines-per-rack 40 --seed 7; this command line "
              r"has --machines-per-rack 20 --seed 1: give --machines-per-rack 40 --seed 7", r.out)
        # the state's flags join
        r = rusk("agent --backend %s %s --seed 7 --duration-s 0.5" % (cl.url, shape))
        check_placed(last_json(r.out))


@case
def cli_redis_run_ns_exhausted():
    """The run namespace counter near its end (2^24 - 1 namespaces: the owner ids' top 24
    bits): the last one is taken and runs; the next run is refused, exit 2, naming the key
    and what to do, the counter left as it was. Before, it wrapped to namespace 1, which
    a live run could hold (its RUs would have been the new run's own)."""
    with Cluster() as cl:
        shape = "--machines 400 --partitions 2 --rus-per-machine 2"
        rusk("agent --backend %s %s --init-only" % (cl.url, shape))
        last = (1 << 24) - 1
        cli(cl, "set", "rusk:{meta}:runs", str(last - 1))
        run = "run --backend %s %s --no-init --duration-s 0.5 --rate 100" % (cl.url, shape)
        r = rusk(run)
        match(r"owner namespace %d\)" % last, r.out)
        r = rusk(run, status=2)
        match(r"rusk: --backend redis://[^ ]*: taking a run namespace: rusk:\{meta\}:runs is "
              r"%d: every run namespace \(1\.\.%d, the owner ids' top 24 bits\) was handed "
              r"out, and a wrapped one could be a live run's: stop every rusk process on the "
              r"state, write it afresh \(rusk agent --init-only\), then delete "
              r"rusk:\{meta\}:runs and rusk:\{meta\}:forced" % (last, last), r.out)
        assert cli(cl, "get", "rusk:{meta}:runs") == str(last), "the counter moved"
        # done as the message says: runs again from namespace 1
        rusk("agent --backend %s %s --init-only" % (cl.url, shape))
        cli(cl, "del", "rusk:{meta}:runs", "rusk:{meta}:forced")
        match(r"owner namespace 1\)", rusk(run).out)


@case
def cli_redis_owners_field_corrupt():
    """A field of rusk:{p1}:own that is no RU of the partition (another program wrote
    there): the agent's ledger, which reads every partition's owners at its end, stops with
    the key and the field named, exit 2 (before: an out-of-bounds write indexed with the
    field, exit 0; ASan: SEGV in read_owners)."""
    with Cluster() as cl:
        shape = "--machines 800 --partitions 4 --rus-per-machine 2"
        rusk("agent --backend %s %s --init-only" % (cl.url, shape))
        port = str(cl.master_of_partition(1))
        subprocess.run(["redis-cli", "-p", port, "hset", "rusk:{p1}:own", "99999",
                        "4294967297"], check=True, capture_output=True, timeout=30)
        r = rusk("agent --backend %s %s --rate 200 --duration-s 1 --lease-ms 0"
                 % (cl.url, shape), status=2)
        match(r"partition 1: the rusk state is corrupt: rusk:\{p1\}:own has field 99999, "
              r"not an RU 0\.\.399 of the partition", r.out)


@case
def cli_redis_corrupt_key():
    """A key of the state that another program overwrote (rusk:{p1}:gen a string): every
    commit script checks the types of its keys before its first write (Redis keeps a failed
    script's earlier writes), so nothing of partition 1 is taken; the agent stops with the
    key named, exit 2; so does rusk run (its tasks ended, its RUs released)."""
    with Cluster() as cl:
        shape = "--machines 800 --partitions 4 --rus-per-machine 2"
        rusk("agent --backend %s %s --init-only" % (cl.url, shape))
        port = str(cl.master_of_partition(1))
        subprocess.run(["redis-cli", "-p", port, "set", "rusk:{p1}:gen", "garbage"],
                       check=True, capture_output=True, timeout=30)
        r = rusk("agent --backend %s %s --rate 500 --duration-s 2" % (cl.url, shape), status=2)
        match(r"partition 1: the rusk state is corrupt, nothing written: rusk:\{p1\}:gen has "
              r"type string, not hash", r.out)
        held = subprocess.check_output(["redis-cli", "-p", port, "hlen", "rusk:{p1}:own"],
                                       text=True, timeout=30).strip()
        if held != "0":
            raise Fail("partition 1 holds %s RUs after failed commits:\n%s" % (held, r.out))
        # the recount checks the keys' types too (before, it read past :gen): exit 2
        r = rusk("agent --backend %s %s --recount" % (cl.url, shape), status=2)
        match(r"recount: partition 1: the rusk state is corrupt, nothing written: "
              r"rusk:\{p1\}:gen has type string, not hash", r.out)
        # rusk run stops at it too (before: ~30 s more, exit 0): the key named, exit 2,
        # every task accounted for (the run's own recount finds none of its RUs held)
        t0 = time.monotonic()
        r = rusk("run --backend %s %s --no-init --duration-s 20 --rate 500 --json -"
                 % (cl.url, shape), status=2)
        took = time.monotonic() - t0
        match(r"rusk: --backend redis://[^ ]*: commit: partition 1: the rusk state is corrupt, "
              r"nothing written: rusk:\{p1\}:gen has type string, not hash[^\n]*: stopping the run",
              r.out)
        assert took < 15, "rusk run went on %.1f s after the corrupt key" % took
        r2 = rusk("agent --backend %s %s --recount" % (cl.url, shape), status=2)
        match(r"rusk:\{p1\}:gen has type string, not hash", r2.out)
        subprocess.run(["redis-cli", "-p", port, "del", "rusk:{p1}:gen"], check=True,
                       capture_output=True, timeout=30)  # gen absent: every RU's is 0
        match(r"held 0, free 1600, mismatch 0",
              rusk("agent --backend %s %s --recount" % (cl.url, shape)).out)
        held = subprocess.check_output(["redis-cli", "-p", port, "hlen", "rusk:{p1}:own"],
                                       text=True, timeout=30).strip()
        if held != "0":
            raise Fail("partition 1 holds %s RUs after rusk run:\n%s" % (held, r.out))


@case
def cli_redis_part_wrong_type():
    """A partition's key of another type (another program wrote there) met by a read: the
    snapshot's :free and :ver, the owners' :own, the recount's every key. Each is
    RUSK_ECORRUPT naming the key and its type, exit 2, for rusk agent, rusk agent --recount
    and rusk run. Before: the agent's snapshot failed silently (partition 3 never used,
    exit 0), the recount named rusk:{p3}:mach (exit 1), rusk run ran to the end and said
    the state was unreachable (exit 1), and a WRONGTYPE on :free read as "is missing"."""
    with Cluster() as cl:
        init = "agent --backend %s %s --init-only --force-init" % (cl.url, RUN_SHAPE)
        agent = "agent --backend %s %s --duration-s 3 --rate 200" % (cl.url, RUN_SHAPE)
        count = "agent --backend %s %s --recount" % (cl.url, RUN_SHAPE)
        run = "run --backend %s %s --no-init --duration-s 3 --rate 200" % (cl.url, RUN_SHAPE)
        for key, typ, want, put in (("free", "hash", "string", ("hset", "a", "b")),
                                    ("ver", "hash", "string", ("hset", "a", "b")),
                                    ("own", "string", "hash", ("set", "x"))):
            k = "rusk:{p3}:%s" % key
            said = r"rusk:\{p3\}:%s has type %s, not %s" % (key, typ, want)
            for what, cmd in (("agent", agent), ("recount", count), ("run", run)):
                rusk(init)
                cli(cl, "del", k)
                cli(cl, put[0], k, *put[1:])
                t0 = time.time()
                r = rusk(cmd, status=2)
                print(key, what, "%.1f s" % (time.time() - t0))
                match(said, r.out)
                assert "is missing" not in r.out and ":mach" not in r.out, r.out
                if what == "run":
                    assert "unreachable" not in r.out, r.out
        rusk(init)
        match(r"held 0, free 400, mismatch 0", rusk(count).out)


@case
def cli_redis_agents_wrong_type_no_lease():
    """rusk:{meta}:agents a string: the agent's lease claim (SET NX PX, then SADD to the
    agents set) is refused before its first write: exit 2 naming rusk:{meta}:agents (not
    the lease key), no Lua noise (" script: SHA, on @user_script:N."), and no lease left
    behind, so the next agent with that id runs (before: the SET had run, and the next
    agent 0 was refused as 'another live rusk agent holds this id', naming the dead one)."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        agent = "agent --backend %s %s --duration-s 1 --rate 100" % (cl.url, RUN_SHAPE)
        cli(cl, "set", "rusk:{meta}:agents", "x")
        r = rusk(agent, status=2)
        match(r"the rusk state is corrupt: rusk:\{meta\}:agents has type string, not set",
              r.out)
        assert "alive:0" not in r.out and "script:" not in r.out and "@user_script" not in \
            r.out, r.out
        assert cli(cl, "exists", "rusk:{meta}:alive:0") == "0", "a lease was left behind"
        cli(cl, "del", "rusk:{meta}:agents")
        r = rusk(agent)  # exit 0: the id is free
        assert "another live rusk agent" not in r.out, r.out


@case
def cli_redis_meta_wrong_type():
    """A meta key of another type (another program wrote there): before, the calls on it
    failed and the process went on without them (rusk run without its lease, so an init
    or a reclaim took it for dead; the reclaim lock, a hash, seemed held forever). Now
    each is RUSK_ECORRUPT naming the key and its type: rusk run exits 2, rusk agent exits
    2, at the start or at the next lease renewal."""
    with Cluster() as cl:
        shape = "--machines 400 --partitions 2 --rus-per-machine 2"
        rusk("agent --backend %s %s --init-only" % (cl.url, shape))
        run = "run --backend %s %s --no-init --duration-s 3 --rate 200" % (cl.url, shape)
        agent = ("agent --backend %s %s --duration-s 4 --rate 200 --lease-ms 1200"
                 % (cl.url, shape))

        def wrong(key, typ, out):
            match(r"the rusk state is corrupt: %s has type %s, not %s"
                  % (re.escape(key), "[a-z]+" if typ is None else typ,
                     {"live-runs": "zset", "agents": "set", "forced": "hash"}.get(
                         key.split(":")[-1], "string")), out)

        runs = "rusk:{meta}:live-runs"
        cli(cl, "set", runs, "garbage")
        r = rusk(run, status=2)  # before: exit 0, the run unleased
        match(r"taking the run's lease: ", r.out)
        wrong(runs, "string", r.out)
        r = rusk(run.replace(" --no-init", ""), status=2)  # the init's guard reads it
        wrong(runs, "string", r.out)
        r = rusk(agent, status=2)  # its first automatic reclaim reads it
        wrong(runs, "string", r.out)
        r = rusk("agent --backend %s %s --recount --reclaim-expired" % (cl.url, shape),
                 status=2)  # before: said, exit 0
        wrong(runs, "string", r.out)
        cli(cl, "del", runs)
        # the agents set a string: the agent's lease claim adds to it
        cli(cl, "set", "rusk:{meta}:agents", "x")
        wrong("rusk:{meta}:agents", "string", rusk(agent, status=2).out)
        cli(cl, "del", "rusk:{meta}:agents")
        # the reclaim lock a hash (a dead run listed, so that the reclaim takes it)
        cli(cl, "zadd", runs, "1", "999")
        cli(cl, "hset", "rusk:{meta}:reclaim", "a", "b")
        r = rusk(agent, status=2)  # before: the lock "busy" at every pass, exit 0
        wrong("rusk:{meta}:reclaim", "hash", r.out)
        # the run's reclaim passes wait for the {meta} shard to have answered for a lease
        # and a margin (the run lease, 10 s by default): a 2 s lease and a 7 s run reach one
        r = rusk(run.replace("--duration-s 3", "--duration-s 7"), status=2,
                 env={"RUSK_RUN_LEASE_MS": "2000"})
        match(r"the automatic reclaim: [^\n]*rusk:\{meta\}:reclaim has type hash", r.out)
        cli(cl, "del", "rusk:{meta}:reclaim", runs)
        # an agent's lease key a list
        cli(cl, "rpush", "rusk:{meta}:alive:0", "x")
        wrong("rusk:{meta}:alive:0", "list", rusk(agent, status=2).out)
        cli(cl, "del", "rusk:{meta}:alive:0")
        # the epoch and the run namespace counter
        cli(cl, "del", "rusk:{meta}:epoch")
        cli(cl, "hset", "rusk:{meta}:epoch", "a", "b")
        wrong("rusk:{meta}:epoch", "hash", rusk(agent, status=2).out)
        cli(cl, "del", "rusk:{meta}:epoch")
        cli(cl, "del", "rusk:{meta}:runs")
        cli(cl, "sadd", "rusk:{meta}:runs", "x")
        wrong("rusk:{meta}:runs", "set", rusk(run, status=2).out)
        cli(cl, "set", "rusk:{meta}:runs", "abc")
        match(r"rusk:\{meta\}:runs is not a count", rusk(run, status=2).out)
        cli(cl, "del", "rusk:{meta}:runs")
        # the forced reclaims, read at the run's end (before: read as none, exit 0)
        cli(cl, "set", "rusk:{meta}:forced", "x")
        r = rusk(run.replace("--duration-s 3", "--duration-s 1"), status=2)
        wrong("rusk:{meta}:forced", "string", r.out)
        cli(cl, "del", "rusk:{meta}:forced")
        # the mark of an init under way a hash: every start that checks the state reads it
        cli(cl, "hset", "rusk:{meta}:init", "a", "b")
        wrong("rusk:{meta}:init", "hash", rusk(agent, status=2).out)
        wrong("rusk:{meta}:init", "hash", rusk(run, status=2).out)
        cli(cl, "del", "rusk:{meta}:init")
        # all put right: both go
        rusk(run.replace("--duration-s 3", "--duration-s 1"))
        check_placed(last_json(rusk(agent.replace("--duration-s 4", "--duration-s 1")).out))


def node_list(path, big_first):
    """400 machines alternating 4000/8000 cpu_milli (the same totals either way round)."""
    with open(path, "w") as f:
        f.write("sn,cpu_milli,memory_mib,gpu,model\n")
        for i in range(400):
            big = (i % 2 == 0) == big_first
            f.write("n%d,%d,%d,0,\n" % (i, 8000 if big else 4000, 16000 if big else 8000))


@case
def cli_redis_layout():
    """Two node lists with the same totals (per partition too) but machines laid out
    otherwise: the second is refused by the layout digest of rusk:{meta}:shape (its RU
    numbers are not the state's), exit 2; the first joins."""
    with Cluster() as cl:
        a, b = os.path.join(cl.dir, "nlA.csv"), os.path.join(cl.dir, "nlB.csv")
        node_list(a, False)
        node_list(b, True)
        rusk("agent --backend %s --cluster %s --partitions 2 --init-only" % (cl.url, a))
        r = rusk("agent --backend %s --cluster %s --partitions 2 --task-mem-mib 7000 "
                 "--duration-s 1" % (cl.url, b), status=2)
        match(r"the machines differ from the state's: same totals, another layout \(layout "
              r"digest [0-9a-f]{16} there vs [0-9a-f]{16} here\): another --cluster node list\?",
              r.out)
        r = rusk("agent --backend %s --cluster %s --partitions 2 --task-mem-mib 7000 "
                 "--duration-s 1" % (cl.url, a))
        j = last_json(r.out)
        assert j["placed"] > 0 and j["claims_unknown"] == 0 and j["releases_unknown"] == 0, j
        check_placed(j)


@case
def cli_redis_auth():
    """A cluster with requirepass (and masterauth): redis://:PASSWORD@... places tasks and
    recounts clean; without the password, exit 2 naming the seed ('needs a password'); a
    wrong one, exit 2 ('password ... is wrong'); the password never printed (masked)."""
    pw = "s3cr-t-pw"
    with Cluster(password=pw) as cl:
        hosts = cl.url[len("redis://"):]
        good = "redis://:%s@%s" % (pw, hosts)
        r = rusk("agent --backend %s %s --init --duration-s 1 --task-ms 50" % (good, SHAPE))
        j = last_json(r.out)
        assert j["placed"] > 0, j
        check_placed(j)
        r2 = rusk("agent --backend %s %s --recount" % (good, SHAPE))
        match(r"recount: 10 partitions: held 0, free [0-9]+, mismatch 0", r2.out)
        bad = rusk("agent --backend %s %s --recount" % (cl.url, SHAPE), status=2)
        match(r"127\.0\.0\.1:%d needs a password \(NOAUTH" % cl.port, bad.out)
        wrong = rusk("agent --backend redis://:nope-%s@%s %s --recount" % (pw, hosts, SHAPE),
                     status=2)
        match(r"127\.0\.0\.1:%d refused the password of --backend .*is wrong" % cl.port,
              wrong.out)
        match(r"--backend redis://:\*\*\*@127\.0\.0\.1", wrong.out)
        # rusk run the same: the seed named, the password masked
        wrong_run = rusk("run --backend redis://:nope-%s@%s %s --duration-s 0.5"
                         % (pw, hosts, SHAPE), status=2)
        match(r"--backend redis://:\*\*\*@127.*refused the password", wrong_run.out)
        # user:password (the default ACL user) and a wrong user
        r3 = rusk("agent --backend redis://default:%s@%s %s --recount" % (pw, hosts, SHAPE))
        match(r"mismatch 0", r3.out)
        r4 = rusk("agent --backend redis://nobody:%s@%s %s --recount" % (pw, hosts, SHAPE),
                  status=2)
        match(r"refused the password", r4.out)
        for x in (r, r2, bad, wrong, wrong_run, r3, r4):
            assert pw not in x.out, x.out


@case
def cli_redis_auth_changed():
    """The password changed under running processes (CONFIG SET requirepass and masterauth
    on every node, then CLIENT KILL TYPE normal so that every client reconnects): the
    reconnect's AUTH is refused (WRONGPASS), which no retry mends. rusk agent and rusk run
    stop at once, naming the node and "authentication failed", exit 2; before, each took it
    for an outage and retried until --failover-ms (30 s), then went on failing."""
    pw, pw2 = "s3cr-t-pw", "n3w-pw"
    with Cluster(password=pw) as cl:
        hosts = cl.url[len("redis://"):]
        good = "redis://:%s@%s" % (pw, hosts)
        shape = "--machines 800 --partitions 4 --rus-per-machine 2"
        rusk("agent --backend %s %s --init-only" % (good, shape))
        agent = subprocess.Popen(
            [ARGS.rusk, "agent", "--backend", good] + shape.split() +
            ["--duration-s", "60", "--rate", "300", "--task-ms", "200"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        run = subprocess.Popen(
            [ARGS.rusk, "run", "--backend", good] + shape.split() +
            ["--no-init", "--duration-s", "60", "--rate", "100"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(3)
            assert agent.poll() is None and run.poll() is None, "ended before the change"
            for i in range(6):
                for kv in (("requirepass", pw2), ("masterauth", pw2)):
                    subprocess.run(["redis-cli", "-p", str(cl.port + i), "-a", pw,
                                    "--no-auth-warning", "config", "set"] + list(kv),
                                   check=True, capture_output=True, timeout=10)
            t0 = time.monotonic()
            for i in range(6):
                subprocess.run(["redis-cli", "-p", str(cl.port + i), "-a", pw2,
                                "--no-auth-warning", "client", "kill", "type", "normal"],
                               check=True, capture_output=True, timeout=10)
            aout = agent.communicate(timeout=90)[0]
            took_agent = time.monotonic() - t0
            rout = run.communicate(timeout=90)[0]
            took_run = time.monotonic() - t0
        finally:
            for p in (agent, run):
                if p.poll() is None:
                    p.kill()
        print(aout)
        print(rout)
        print("stopped %.1f s (agent) and %.1f s (run) after the connections were killed"
              % (took_agent, took_run))
        assert agent.returncode == 2, "rusk agent exited %d" % agent.returncode
        match(r"rusk agent: --backend redis://:\*\*\*@[^ ]*: 127\.0\.0\.1:[0-9]+ refused the "
              r"password of --backend \(WRONGPASS[^\n]*authentication failed[^\n]*: stopping",
              aout)
        assert took_agent < 10, "rusk agent stopped %.1f s after the change" % took_agent
        assert run.returncode == 2, "rusk run exited %d" % run.returncode
        match(r"rusk: --backend redis://:\*\*\*@[^ ]*: 127\.0\.0\.1:[0-9]+ refused the "
              r"password of --backend \(WRONGPASS[^\n]*authentication failed[^\n]*: "
              r"stopping the run", rout)
        assert took_run < 15, "rusk run stopped %.1f s after the change" % took_run
        for x in (aout, rout):
            assert pw not in x and pw2 not in x, x
        # the new password joins: the state reads clean (what the stopped processes
        # held stays theirs until their leases expire)
        r = rusk("agent --backend redis://:%s@%s %s --recount" % (pw2, hosts, shape))
        match(r"recount: 4 partitions: held [0-9]+, free [0-9]+, mismatch 0", r.out)


@case
def cli_redis_agent_flags():
    """rusk agent refuses what rusk run refuses, with the same messages (exit 2, before any
    connection): --wait 0, --wait-ms without --wait, --wait without redis://; and the init
    flags' combinations."""
    for bad in ("--wait 0", "--wait 17"):
        match(r"--wait: '[0-9]+' is not an integer in 1\.\.16",
              rusk("agent --backend redis://127.0.0.1:7000 %s" % bad, status=2).out)
    match(r"rusk agent: --wait-ms: only with --wait N \(WAIT's timeout\)",
          rusk("agent --backend redis://127.0.0.1:7000 --wait-ms 50", status=2).out)
    match(r"rusk agent: --wait: only with --backend redis://",
          rusk("agent --backend memory --wait 1", status=2).out)
    # a quiet run's counts add up (before, one "unknown" mixed lost claims and releases)
    j = last_json(rusk("agent --backend memory --duration-s 0.3 --task-ms 20").out)
    assert j["placed"] > 0 and j["claims_unknown"] == 0 and j["releases_unknown"] == 0, j
    check_placed(j)
    # the options of a state on Redis: refused with the in-process state (before, each was
    # taken and did nothing; --init-only printed "wrote the empty state at memory")
    for flag in ("--init", "--init-only", "--force-init", "--recount", "--reclaim-expired",
                 "--reclaim-agent 0", "--reclaim-run 1", "--force", "--lease-ms 5000",
                 "--lease-ms 0", "--failover-ms 100", "--unavailable-ms 500", "--wait-ms 50"):
        match(r"rusk agent: %s: only with --backend redis://\.\.\. \(the state on Redis; "
              r"--backend memory has no use for it\)" % flag.split()[0],
              rusk("agent --backend memory --duration-s 0.1 " + flag, status=2).out)
    # a read timeout too short to tell a stuck master from a slow answer
    match(r"rusk agent: --unavailable-ms 50: below 100 ms \(0: off\)",
          rusk("agent --backend redis://127.0.0.1:7000 --unavailable-ms 50", status=2).out)
    match(r"--unavailable-ms: '60001' is not an integer in 0\.\.60000",
          rusk("agent --backend redis://127.0.0.1:7000 --unavailable-ms 60001", status=2).out)
    match(r"rusk agent: --force-init: only with --init or --init-only",
          rusk("agent --backend redis://127.0.0.1:7000 --force-init", status=2).out)
    match(r"rusk agent: --init-only: not with --recount",
          rusk("agent --backend redis://127.0.0.1:7000 --init-only --recount", status=2).out)
    match(r"rusk: --force-init: only with --backend redis://",
          rusk("run --force-init --duration-s 0.1", status=2).out)
    match(r"rusk: --force-init: not with --no-init",
          rusk("run --backend redis://127.0.0.1:7000 --force-init --no-init --duration-s 0.1",
               status=2).out)


def agent_proc(cl, shape, agent, agents, secs, extra=()):
    """A rusk agent process (its output piped) that holds its RUs long (--task-ms 600000)."""
    return subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + shape.split() +
                            ["--agents", str(agents), "--agent-id", str(agent), "--duration-s",
                             str(secs), "--task-ms", "600000", "--rate", "200"] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(p, timeout=60):
    """p's output and exit status once it ended (killed after timeout s: a failure)."""
    try:
        out = p.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        out = p.communicate(timeout=30)[0]
        raise Fail("a process still ran after %d s:\n%s" % (timeout, out))
    print(out)
    return out, p.returncode


def cli(cl, *argv):
    """redis-cli -c against the cluster (follows redirects); its stdout, stripped."""
    return subprocess.run(["redis-cli", "-c", "-p", str(cl.port)] + list(argv),
                          capture_output=True, text=True, timeout=10).stdout.strip()


def wait_for(what, cond, secs=20):
    """Polls cond() every 0.1 s until it holds (a Fail naming `what` after secs)."""
    for _ in range(int(secs * 10)):
        if cond():
            return
        time.sleep(0.1)
    raise Fail("%s: not after %d s" % (what, secs))


def wait_renewal(pttl, what, secs):
    """Waits until the lease key's PTTL (pttl(): ms left) goes up, a renewal: the phase a
    test then times its pause from; fails after secs."""
    last, t = pttl(), time.monotonic()
    while time.monotonic() - t < secs:
        x = pttl()
        if x > last + 200:
            return
        last = x
        time.sleep(0.02)
    raise Fail("no renewal of %s seen in %g s" % (what, secs))


def wait_cluster_ok(cl, what, secs=30, down=None):
    """Waits until every node of cl reports cluster_state:ok (after a pause or a failover:
    a node resumed may still be flagged by the others for a moment). down: the port of a
    node killed for good, left out (a replica's promotion is seen by the others only a
    moment after the replica reports it, and until then they answer CLUSTERDOWN)."""
    wait_for(what, lambda: all(
        "cluster_state:ok" in subprocess.run(
            ["redis-cli", "-p", str(cl.port + i), "cluster", "info"],
            capture_output=True, text=True, timeout=10).stdout
        for i in range(6) if cl.port + i != down), secs)


def yes_no(reply):
    """A reply of 0 or 1 (SISMEMBER, EXISTS, ZCARD of one entry) as a bool; a Fail naming
    any other reply (an error such as CLUSTERDOWN is not a "no")."""
    if reply not in ("0", "1"):
        raise Fail("expected 0 or 1, Redis answered %r" % reply)
    return reply == "1"


def wait_lease(cl, agent, p):
    """Until agent's lease key exists (its process p took the id), p still running."""
    wait_for("agent %d's lease" % agent,
             lambda: cli(cl, "exists", "rusk:{meta}:alive:%d" % agent) == "1" or
             p.poll() is not None)
    assert p.poll() is None, "agent %d ended before its lease was seen" % agent


@case
def cli_redis_agent_id_taken():
    """Two rusk agent processes with one --agent-id: the second is refused at its start
    (SET NX on rusk:{meta}:alive:I; it waits once for the lease to lapse, as a dead
    holder's would, and the first renewed it: exit 2, the flag and the holder named) and the first
    goes on unharmed (none of its releases refused); of two started at once, exactly one
    runs. Only the holder's token renews the
    lease: a lease taken by another token makes the agent stop (exit 1). An agent killed
    (SIGKILL) leaves its lease until its expiry; then the id is taken over, and the new
    agent's ledger releases the dead one's RUs (orphans). Bounded waits only."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        # the second waits once for the lease (3 s: at most its own term) to lapse, and
        # is refused when the first renewed it: the first runs well past that
        a = agent_proc(cl, SHAPE, 3, 4, 12, ["--lease-ms", "3000"])
        try:
            wait_lease(cl, 3, a)
            t0 = time.time()
            r = rusk("agent --backend %s %s --agents 4 --agent-id 3 --duration-s 5" %
                     (cl.url, SHAPE), status=2)
            assert time.time() - t0 < 30, "the second agent took %.1f s" % (time.time() - t0)
            match(r"rusk agent: --agent-id 3: another live rusk agent holds this id at %s "
                  r"\(pid %d on [^,]+, token [0-9a-f]+; its lease rusk:\{meta\}:alive:3 ends in "
                  r"[0-9.]+ s" % (re.escape(cl.url), a.pid), r.out)
            match(r"rusk agent: --agent-id 3: waiting [0-9.]+ s for the lease of an earlier "
                  r"process with this id \(pid %d on [^)]+\) to lapse\n" % a.pid, r.out)
            assert "has ended" not in r.out, r.out
            assert a.poll() is None, "the first agent ended when the second was refused"
        finally:
            out, rc = finish(a)
        assert rc == 0, "the first agent exited %d" % rc
        j = last_json(out)
        assert j["placed"] > 100 and j["refused"] == 0 and j["claims_unknown"] == 0 and j["releases_unknown"] == 0, j
        assert j["released"] == j["placed"], j
        # its lease went with its end: the id is free at once (and nothing is held)
        assert cli(cl, "exists", "rusk:{meta}:alive:3") == "0"
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)
        # two started at once: SET NX lets exactly one of them have the id (the other
        # waits out a lease, 1.5 s, that the first renews: it runs 6 s)
        two = [agent_proc(cl, SHAPE, 2, 4, 6, ["--lease-ms", "1500"]) for _ in range(2)]
        try:
            codes = sorted(finish(p)[1] for p in two)
        finally:
            for p in two:
                if p.poll() is None:
                    p.kill()
        assert codes == [0, 2], "two agents with --agent-id 2 at once exited %r" % codes
        rusk("agent --backend %s %s --recount --reclaim-agent 2" % (cl.url, SHAPE))
        # a lease that another token holds now: the agent stops at its next renewal
        b = agent_proc(cl, SHAPE, 3, 4, 60, ["--lease-ms", "1500"])
        try:
            wait_lease(cl, 3, b)
            assert cli(cl, "set", "rusk:{meta}:alive:3", "intruder", "px", "60000") == "OK"
            out, rc = finish(b, 30)
        finally:
            if b.poll() is None:
                b.kill()
        assert rc == 1, "the agent whose lease was taken exited %d" % rc
        match(r"--agent-id 3: another process took this id's lease", out)
        # its summary and JSON line still come, saying why it stopped
        match(r"placed [0-9]+ tasks in", out)
        assert last_json(out)["stopped"] == "lease_taken", last_json(out)
        assert cli(cl, "get", "rusk:{meta}:alive:3") == "intruder", "the token was overwritten"
        cli(cl, "del", "rusk:{meta}:alive:3")
        rusk("agent --backend %s %s --recount --reclaim-agent 3" % (cl.url, SHAPE))
        # SIGKILL: the lease stays until it expires, then the id is taken over
        c = agent_proc(cl, SHAPE, 3, 4, 60, ["--lease-ms", "1500"])
        try:
            wait_lease(cl, 3, c)
            time.sleep(2)
            c.send_signal(signal.SIGKILL)
            c.wait(10)
        finally:
            if c.poll() is None:
                c.kill()
        held = last_json(recount(cl).out)["held"]
        assert held > 100, "the killed agent held only %d RUs" % held
        time.sleep(2.5)  # its lease (1.5 s) expires
        r = rusk("agent --backend %s %s --agents 4 --agent-id 3 --duration-s 1.5 --ledger-ms 200 "
                 "--lease-ms 1500" % (cl.url, SHAPE))
        j = last_json(r.out)
        assert j["orphans"] == held, "the new agent released %d of the dead one's %d RUs" % (
            j["orphans"], held)
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)


@case
def cli_redis_agent_id_restart_after_kill():
    """An agent SIGKILLed leaves its lease (5 s: room for the recount between) to lapse; the same --agent-id started at
    once waits for that lapse (one line says so, and that the process has ended: its pid
    on this host is gone), takes the id, releases the dead one's RUs as orphans and exits
    0; the recount then finds nothing held. Before, it was refused with exit 2 ("another
    live rusk agent holds this id ... give every agent process its own --agent-id"),
    though its holder was dead: a supervisor restarting it gave up. A stop signal during
    the wait ends it with exit 3, nothing taken."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))

        def killed(lease_ms=5000):
            c = agent_proc(cl, SHAPE, 1, 4, 60, ["--lease-ms", str(lease_ms)])
            try:
                wait_lease(cl, 1, c)
                wait_wall("agent 1 holds RUs", lambda: c.poll() is not None or last_json(
                    recount(cl).out)["held"] > 100, 60)
                c.send_signal(signal.SIGKILL)
                c.wait(10)
            finally:
                if c.poll() is None:
                    c.kill()
            assert cli(cl, "exists", "rusk:{meta}:alive:1") == "1", "the lease went at once"
            return c.pid

        def restart_waits(pid, lease):
            """Agent 1 started again (lease: its --lease-ms flag): it waits for the dead
            one's lease to lapse, then releases every RU the dead one held as orphans."""
            held = last_json(recount(cl).out)["held"]
            assert held > 100, "the killed agent held only %d RUs" % held
            t0 = time.time()
            r = rusk("agent --backend %s %s --agents 4 --agent-id 1 --duration-s 1.5 "
                     "--ledger-ms 200%s" % (cl.url, SHAPE, lease))
            took = time.time() - t0
            assert took < 60, "the restarted agent took %.1f s" % took
            match(r"rusk agent: --agent-id 1: waiting [0-9.]+ s for the lease of an earlier "
                  r"process with this id \(pid %d on [^)]+\) \(that process has ended\) "
                  r"to lapse\n" % pid, r.out)
            assert "another live rusk agent" not in r.out, r.out
            j = last_json(r.out)
            assert j["orphans"] == held, "the new agent released %d of the dead one's %d " \
                "RUs" % (j["orphans"], held)
            match(r"held 0, free 32000, mismatch 0", recount(cl).out)

        restart_waits(killed(), " --lease-ms 5000")
        # SIGTERM during the wait: exit 3, nothing taken (the dead one's lease lapses)
        killed()
        w = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                             ["--agents", "4", "--agent-id", "1", "--duration-s", "1.5",
                              "--lease-ms", "5000"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            first = [w.stdout.readline() for _ in range(1)]  # flushed before the wait
            while first[-1] and "waiting" not in first[-1] and len(first) < 20:
                first.append(w.stdout.readline())
            assert "waiting" in first[-1], first
            w.send_signal(signal.SIGTERM)
            out, rc = finish(w, 30)
            out = "".join(first) + out
        finally:
            if w.poll() is None:
                w.kill()
        assert rc == 3, "the agent stopped during its wait exited %d" % rc
        match(r"--agent-id 1: stopped by SIGTERM while waiting for the lease of an earlier "
              r"process with this id to lapse: nothing taken", out)
        assert "placed" not in out, out
        wait_for("the dead one's lease lapsed",
                 lambda: cli(cl, "exists", "rusk:{meta}:alive:1") == "0")
        rusk("agent --backend %s %s --recount --reclaim-agent 1" % (cl.url, SHAPE))
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)
        # killed with a lease longer than the restart's (9 s; the default 5 s): its holder
        # known gone, it is waited for all the same (before: exit 2 at once, "another live
        # rusk agent holds this id", its pid gone from this host)
        restart_waits(killed(9000), "")


def killed_holding(cl, shape, more):
    """An agent without a lease (--agent-id 0, --lease-ms 0: nothing reclaims its RUs)
    SIGKILLed once it holds more than `more` RUs; the recount after (its JSON), which must
    say so."""
    a = agent_proc(cl, shape, 0, 1, 60, ["--lease-ms", "0"])
    try:
        wait_for("RUs held", lambda: last_json(rusk(
            "agent --backend %s %s --recount" % (cl.url, shape), show=False).out)[
                "held"] > more or a.poll() is not None, 30)
        a.send_signal(signal.SIGKILL)
        a.wait(10)
    finally:
        if a.poll() is None:
            a.kill()
    r = rusk("agent --backend %s %s --recount" % (cl.url, shape))
    match(r"held [0-9]+, free [0-9]+, mismatch 0", r.out)
    held = last_json(r.out)
    assert held["held"] > more, "the killed agent held only %d RUs" % held["held"]
    return held


@case
def cli_redis_agent_orphans_wait():
    """The ledger releases a partition's orphans in one call, one WAIT per partition: with
    every replica paused (each WAIT waits its full --wait-ms 200), a new agent with the id
    of a killed one releases the dead one's RUs in a few seconds (before: one release and
    one WAIT per RU, ~0.2 s each: a minute for ~300), and every one of them is released."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        held = killed_holding(cl, SHAPE, 200)["held"]
        replicas = [str(cl.port + i) for i in range(6) if subprocess.run(
            ["redis-cli", "-p", str(cl.port + i), "role"], capture_output=True, text=True,
            timeout=10).stdout.startswith("slave")]
        assert len(replicas) == 3, replicas
        for r in replicas:
            subprocess.run([script(), "pause", cl.dir, r], check=True, timeout=10)
        try:
            t0 = time.monotonic()
            p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                                 ["--agent-id", "0", "--duration-s", "1", "--rate", "1",
                                  "--lease-ms", "0", "--wait", "1", "--wait-ms", "200"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            out, rc = finish(p, 45)
            took = time.monotonic() - t0
        finally:
            for r in replicas:
                subprocess.run([script(), "resume", cl.dir, r], timeout=10)
        print("the agent ran %.1f s, %d orphans" % (took, held))
        assert rc == 0, "the agent exited %d" % rc
        j = last_json(out)
        assert j["orphans"] == held, "released %d of the dead agent's %d RUs" % (
            j["orphans"], held)
        # 10 partitions, ~0.2 s each, and the few commits' WAITs: generous on a loaded CI
        assert took < 20, "the agent took %.1f s for %d orphans" % (took, held)
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)


@case
def cli_redis_run_wait_refused():
    """rusk run --wait 2 on a cluster of one replica per shard is refused before anything is
    written: a state whose RUs a killed agent holds (--lease-ms 0: no lease, so nothing but
    the replica count refuses the run) keeps them all, and its epoch stays."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        epoch = cli(cl, "get", "rusk:{meta}:epoch")
        held = killed_holding(cl, RUN_SHAPE, 100)
        for extra in ("", "--no-init"):
            r = rusk("run --backend %s %s %s --wait 2 --duration-s 0.5" %
                     (cl.url, RUN_SHAPE, extra), status=2)
            match(r"--wait 2: the cluster at %s has a shard with 1 replica" % re.escape(cl.url),
                  r.out)
        after = last_json(rusk("agent --backend %s %s --recount" % (cl.url, RUN_SHAPE)).out)
        assert after["held"] == held["held"], "held %d before, %d after" % (held["held"],
                                                                          after["held"])
        assert cli(cl, "get", "rusk:{meta}:epoch") == epoch, "the state was written again"


@case
def cli_redis_init_refused_live():
    """Writing the empty state under live processes is refused (exit 2, naming them):
    rusk run without --no-init and rusk agent --init / --init-only, while an agent's lease
    (rusk:{meta}:alive:I) or a run's (rusk:{meta}:live-runs) is live; the agent is
    unharmed. --force-init writes it anyway, and the agent notices the new epoch at its
    next lease renewal and stops (exit 1) without touching the new state. Once a run
    ended (its lease removed), an init goes through."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        a = agent_proc(cl, RUN_SHAPE, 1, 2, 60, ["--lease-ms", "1500"])
        try:
            wait_lease(cl, 1, a)
            time.sleep(2)
            held = last_json(rusk("agent --backend %s %s --recount" %
                                  (cl.url, RUN_SHAPE)).out)["held"]
            assert held > 100, held
            r = rusk("run --backend %s %s --duration-s 0.5" % (cl.url, RUN_SHAPE), status=2)
            match(r"rusk: --backend %s: 1 live rusk agent \(--agent-id 1\) uses this state .*"
                  r"stop them first, or pass --no-init to join the state \(--force-init "
                  r"writes it anyway" % re.escape(cl.url), r.out)
            for flag in ("--init-only", "--init --agents 2 --agent-id 0 --duration-s 0.5"):
                r = rusk("agent --backend %s %s %s" % (cl.url, RUN_SHAPE, flag), status=2)
                match(r"rusk agent: --backend .*: 1 live rusk agent \(--agent-id 1\) uses this "
                      r"state .*leave out --init to join the state", r.out)
            after = last_json(rusk("agent --backend %s %s --recount" %
                                   (cl.url, RUN_SHAPE)).out)["held"]
            assert after >= held, "held %d before the refused inits, %d after" % (held, after)
            assert a.poll() is None, "the agent ended"
            # --force-init: written; the agent stops at its next renewal (every 0.5 s)
            r = rusk("run --backend %s %s --force-init --rate 100 --duration-s 1 --task-ms 100" %
                     (cl.url, RUN_SHAPE))
            match(r"empty state written first", r.out)
            out, rc = finish(a, 30)
        finally:
            if a.poll() is None:
                a.kill()
        assert rc == 1, "the agent under a new state exited %d" % rc
        match(r"rusk agent: the state at %s was written afresh while this agent ran "
              r"\(rusk:\{meta\}:epoch [0-9]+ -> [0-9]+" % re.escape(cl.url), out)
        match(r"placed [0-9]+ tasks in", out)
        assert last_json(out)["stopped"] == "epoch", last_json(out)
        match(r"held 0, free 400, mismatch 0",
              rusk("agent --backend %s %s --recount" % (cl.url, RUN_SHAPE)).out)
        # a live rusk run refuses an init too; after its end, one goes through
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + RUN_SHAPE.split() +
                             ["--no-init", "--rate", "100", "--duration-s", "8",
                              "--task-ms", "200"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            for _ in range(200):  # its lease, taken once its setup is done (20 s at most)
                if cli(cl, "zcard", "rusk:{meta}:live-runs") == "1" or p.poll() is not None:
                    break
                time.sleep(0.1)
            assert p.poll() is None, "the run ended before its lease was seen"
            r = rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE), status=2)
            match(r"1 live rusk run uses this state", r.out)
            out, rc = finish(p)
        finally:
            if p.poll() is None:
                p.kill()
        assert rc == 0, "the run exited %d" % rc
        assert cli(cl, "zcard", "rusk:{meta}:live-runs") == "0", "the run's lease stayed"
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))


@case
def cli_redis_agent_memory_short():
    """Tasks of 40,000 MiB on machines of 65,536 MiB and 2 RUs: one task per machine, the
    other RU free but its memory short. Such a refusal is counted memory_short, not a
    conflict, and the agent skips that machine until its task there ends or a sync shows
    the machine changed. Before: 1,200 placed for 65,966 claims (98.6% refused for memory,
    all counted conflicts); after: 1,200 placed for 2,400 claims. The same with the state in
    this process (--backend memory)."""
    def check(j):
        assert j["claims"] == (j["placed"] + j["conflicts"] + j["memory_short"] +
                               j["claims_unknown"]), j
        assert j["conflicts"] == 0 and j["memory_short"] > 0, j
        assert j["placed"] > 500 and j["claims"] < 3 * j["placed"], j
    args = ("%s --duration-s 3 --task-ms 500 --rate 1000 --task-mem-mib 40000 --lease-ms 0"
            % RUN_SHAPE)
    check(last_json(rusk("agent --backend memory " + args.replace(" --lease-ms 0", "")).out))
    with Cluster() as cl:
        r = rusk("agent --backend %s --init %s" % (cl.url, args))
        match(r"conflicts 0 \(0\.00% of claims\), refused for memory [1-9][0-9]* ", r.out)
        check(last_json(r.out))


@case
def cli_redis_agent_mem_unfit():
    """A node list whose every other machine has 0 MiB, tasks of 1,000 MiB: the 0-MiB
    machines can never hold a task, the others can. The agent never claims the former (its
    JSON's machines_unfit, 200, and a line saying so) and places on the latter for the whole
    --duration-s, exit 0. Before: the first claim on a 0-MiB machine answered RUSKINFEASIBLE
    and stopped the agent ("a commit failed with task larger than the cluster could ever
    hold", "stopped":"error", exit 1), --backend memory as well as Redis."""
    def check(r):
        match(r"--task-mem-mib 1000: 200 of the 400 machines have less memory and can never "
              r"hold a task: their RUs are never claimed", r.out)
        j = last_json(r.out)
        assert j["stopped"] == "duration" and j["machines_unfit"] == 200, j
        assert j["claims"] == (j["placed"] + j["conflicts"] + j["memory_short"] +
                               j["claims_unknown"]), j
        assert j["placed"] > 100 and j["memory_short"] == 0, j
        check_placed(j)
    with Cluster() as cl:
        nl = os.path.join(cl.dir, "nl0.csv")
        with open(nl, "w") as f:
            f.write("sn,cpu_milli,memory_mib,gpu,model\n")
            for i in range(400):
                f.write("n%d,8000,%d,0,\n" % (i, 0 if i % 2 else 16000))
        args = "--cluster %s --partitions 2 --task-mem-mib 1000 --duration-s 1" % nl
        check(rusk("agent --backend memory " + args))
        check(rusk("agent --backend %s --init %s" % (cl.url, args)))
        match(r"held 0, free 3200, mismatch 0",
              rusk("agent --backend %s --cluster %s --partitions 2 --recount" %
                   (cl.url, nl)).out)


@case
def cli_redis_agents():
    """Two agent processes at once on one cluster, DiffSync; then a recount."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        procs = [subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                                  ["--agents", "2", "--agent-id", str(i), "--duration-s", "2",
                                   "--task-ms", "200"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for i in range(2)]
        outs = [p.communicate(timeout=60)[0] for p in procs]
        for p, out in zip(procs, outs):
            print(out)
            assert p.returncode == 0, "an agent exited %d" % p.returncode
            j = last_json(out)
            assert j["placed"] > 100, "agent placed %d" % j["placed"]
            assert j["released"] == j["placed"] - j["replaced"], j
            assert j["refused"] == 0 and j["claims_unknown"] == 0 and j["releases_unknown"] == 0, j
        r = recount(cl)
        match(r"held 0, free 32000, mismatch 0", r.out)


@case
def cli_redis_agent_cluster_down():
    """A brief CLUSTERDOWN while `rusk agent` runs (a partition's slot deleted on all 6
    nodes, given back to its master 1.5 s later), then the slot half-migrated to another
    master for 1.5 s (TRYAGAIN): its pipelined claims wait both out, each answered for
    itself, and the agent goes on: exit 0, every task placed accounted
    for, and the recount finds nothing held and no mismatch. (Before, a map refresh in the
    middle of a pipeline's replies read a claim's CLUSTERDOWN as CLUSTER SLOTS's answer:
    'a commit failed with ... is not a Redis Cluster node', exit 1.)"""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        # a partition of the first seed's: the client's first node, whose connection a
        # map refresh uses (the one that read a neighbour's reply)
        part = [q for q in range(10) if cl.master_of_partition(q) == cl.port][0]
        slot = cli(cl, "cluster", "keyslot", "{p%d}" % part)
        master = cl.port
        p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                             ["--duration-s", "7", "--task-ms", "200", "--rate", "20000"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        t0 = time.monotonic()
        try:
            time.sleep(1.5)
            for i in range(6):
                subprocess.run(["redis-cli", "-p", str(cl.port + i), "cluster", "delslots",
                                slot], capture_output=True, timeout=10, check=True)
            time.sleep(1.5)
            for what in (["addslots", slot], ["bumpepoch"]):
                subprocess.run(["redis-cli", "-p", str(master), "cluster"] + what,
                               capture_output=True, timeout=10, check=True)
            # then the slot half-migrated to another master (one of the partition's keys
            # moved: its scripts answered TRYAGAIN), the migration finished 1.5 s later
            time.sleep(1)
            ports = [cl.port + i for i in range(6)]
            masters = [q for q in ports if subprocess.run(
                ["redis-cli", "-p", str(q), "role"], capture_output=True, text=True,
                timeout=10).stdout.startswith("master")]
            dst = [q for q in masters if q != master][0]
            ids = {q: subprocess.run(["redis-cli", "-p", str(q), "cluster", "myid"],
                                     capture_output=True, text=True,
                                     timeout=10).stdout.strip() for q in (master, dst)}

            def rc_(port, *argv):
                subprocess.run(["redis-cli", "-p", str(port)] + list(argv),
                               capture_output=True, timeout=10, check=True)
            rc_(dst, "cluster", "setslot", slot, "importing", ids[master])
            rc_(master, "cluster", "setslot", slot, "migrating", ids[dst])
            keys = ["rusk:{p%d}:%s" % (part, k) for k in
                    ("own", "gen", "free", "mem", "gpu", "rec", "ver", "mach")]
            rc_(master, "migrate", "127.0.0.1", str(dst), keys[0], "0", "5000")
            time.sleep(1.5)
            for k in keys[1:]:
                rc_(master, "migrate", "127.0.0.1", str(dst), k, "0", "5000")
            for q in [dst, master] + [q for q in masters if q not in (dst, master)]:
                rc_(q, "cluster", "setslot", slot, "node", ids[dst])
        finally:
            out, rc = finish(p)
        print("agent ran %.1f s" % (time.monotonic() - t0))
        assert rc == 0, "the agent exited %d after a brief CLUSTERDOWN and a migration" % rc
        j = last_json(out)
        check_placed(j)
        assert j["placed"] > 100 and j["claims_unknown"] == 0, j
        wait_cluster_ok(cl, "slot %s served on every node" % slot, 20)
        r = recount(cl)
        match(r"held 0, free 32000, mismatch 0", r.out)


@case
def cli_redis_agent_sigterm():
    """SIGTERM stops `rusk agent` as its --duration-s would: the end's ledger check, every
    task it holds (20 s each) released, its lease dropped, a summary of the time that ran
    that says so; exit 3. The recount finds nothing held, and the id is free at once."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        rc, out = signalled([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                            ["--agent-id", "0", "--duration-s", "60", "--task-ms", "20000",
                             "--rate", "200"])
        assert rc == 3, "exit %d, not 3 (interrupted)" % rc
        match(r"stopped by SIGTERM after [\d.]+ s of --duration-s 60: every held task "
              r"released", out)
        j = last_json(out)
        assert j["interrupted"] and 1 < j["elapsed_s"] < 50, j
        assert j["placed"] > 100 and j["released"] == j["placed"] - j["replaced"], j
        assert j["refused"] == 0 and j["claims_unknown"] == 0 and j["releases_unknown"] == 0, j
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)
        r = rusk("agent --backend %s %s --agent-id 0 --duration-s 0.5" % (cl.url, SHAPE))
        assert last_json(r.out)["interrupted"] is False, r.out


@case
def cli_redis_agent_sigint_hung_meta():
    """SIGINT to an agent while the {meta} shard hangs (its master and replica stopped, not
    dead: their connections stay open): the end's calls there each get one short read
    (250 ms) and the nodes are not tried again, so the agent ends within seconds of the
    signal (before: one 2 s read timeout per call, 18 s), exit 3, every placed task
    accounted for (what it could not release counted releases_unknown, none lost
    silently). Resumed, the recount finds what it left held and no mismatch."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        slot = cli(cl, "cluster", "keyslot", "{meta}")
        meta = next(str(cl.port + i) for i in range(6) if subprocess.run(
            ["redis-cli", "-p", str(cl.port + i), "role"], capture_output=True, text=True,
            timeout=10).stdout.startswith("master") and cli_node(cl.port + i, int(slot)))
        replica = subprocess.check_output([script(), "replica-of", cl.dir, meta], text=True,
                                          timeout=10).strip()
        p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                             ["--duration-s", "60", "--task-ms", "500", "--rate", "500"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(2)
            for n in (meta, replica):
                subprocess.run([script(), "pause", cl.dir, n], check=True, timeout=10)
            time.sleep(3)
            t0 = time.monotonic()
            p.send_signal(signal.SIGINT)
            out, rc = finish(p, 60)
            took = time.monotonic() - t0
        finally:
            if p.poll() is None:
                p.kill()
            for n in (meta, replica):
                subprocess.run([script(), "resume", cl.dir, n], timeout=10)
        print("the agent ended %.1f s after the signal" % took)
        assert rc == 3, "exit %d, not 3 (interrupted)" % rc
        j = last_json(out)
        check_placed(j)
        assert j["releases_unknown"] > 0, j
        match(r"stopped by SIGINT after [\d.]+ s of --duration-s 60: not every held task could "
              r"be released, %d of them not confirmed \(release answer lost\)"
              % j["releases_unknown"], out)
        assert j["left_to_reclaim"], j  # the id's lease left to lapse: the reclaim frees them
        assert j["placed"] > 100, j
        assert took < 8, "the agent ended %.1f s after SIGINT (meta shard hung)" % took
        wait_cluster_ok(cl, "every node's cluster_state:ok after the resume")
        r = recount(cl)
        assert last_json(r.out)["held"] <= j["releases_unknown"] + j["held_end"] + \
            j["claims_unknown"], (last_json(r.out), j)


def cli_node(port, slot):
    """Whether the node at port serves slot (CLUSTER SLOTS: its own ranges as master)."""
    out = subprocess.run(["redis-cli", "-p", str(port), "cluster", "slots"],
                         capture_output=True, text=True, timeout=10).stdout.split()
    for k in range(len(out) - 3):
        if (out[k].isdigit() and out[k + 1].isdigit() and int(out[k]) <= slot <= int(out[k + 1])
                and out[k + 3] == str(port)):
            return True
    return False


@case
def cli_redis_agent_killed():
    """An agent process killed mid-run: its lease expires and the recount reclaims its RUs
    (--reclaim-expired), while a live agent's RUs stay; --reclaim-agent names one. The
    agents run with --no-auto-reclaim: the recount by hand is what this case checks
    (cli_redis_auto_reclaim has the automatic path)."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))

        def start(i, secs):
            return subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                                    ["--agents", "2", "--agent-id", str(i), "--duration-s",
                                     str(secs), "--task-ms", "600000", "--rate", "1000",
                                     "--lease-ms", "1500", "--no-auto-reclaim"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # the live agent runs until this test stops it (SIGTERM: it releases what it holds,
        # exit 3): with an 8 s run, an ASan build beside a CPU-bound test ended it before the
        # reclaim, and "its RUs stay" had nothing to check
        victim, live = start(1, 60), start(0, 120)
        try:
            time.sleep(2.5)
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
            held = last_json(recount(cl).out)["held"]
            time.sleep(2)  # the victim's lease (1.5 s) expires; the live agent renews its own
            r = recount(cl, "--reclaim-expired")
            assert live.poll() is None, "the live agent ended (exit %s)" % live.returncode
            match(r"agent 1's lease expired", r.out)
            left = last_json(r.out)["held"]
            reclaimed = int(re_search(r"reclaimed (\d+)", r.out))
            assert reclaimed > 100, "reclaimed only %d" % reclaimed
            assert left > 0, "the live agent's RUs were reclaimed too"
            assert reclaimed + left >= held, (held, reclaimed, left)
        finally:
            if victim.poll() is None:
                victim.kill()
            if live.poll() is None:
                live.send_signal(signal.SIGTERM)
        out = live.communicate(timeout=60)[0]
        print(out)
        assert live.returncode == 3, "the live agent exited %d, not 3" % live.returncode
        j = last_json(out)
        assert j["refused"] == 0, "the live agent's releases were refused: %s" % j
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)
        # --reclaim-agent: a named agent, refused while its lease is live (a killed agent's
        # for up to --lease-ms), then reclaimed
        p = start(1, 60)
        time.sleep(2)
        p.kill()
        p.wait(10)
        r = rusk("agent --backend %s %s --recount --reclaim-agent 1" % (cl.url, SHAPE),
                 status=(0, 2))
        if r.status == 2:
            match(r"--reclaim-agent 1: agent 1's lease is live", r.out)
            time.sleep(2)  # its lease (1.5 s) expires
            r = recount(cl, "--reclaim-agent 1")
        match(r"released [0-9]+ RUs of agent 1", r.out)
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)


# 4,000 RUs: room for a run's tasks beside two agents' long ones.
AUTO_SHAPE = "--machines 2000 --partitions 10 --rus-per-machine 2"


def owners(cl, parts):
    """Every owner id the state shows (HVALS of each partition's rusk:{pN}:own)."""
    out = []
    for q in range(parts):
        reply = cli(cl, "hvals", "rusk:{p%d}:own" % q)
        if reply and not re.fullmatch(r"[0-9\s]+", reply):
            raise Fail("HVALS rusk:{p%d}:own answered %r" % (q, reply))
        out += [int(v) for v in reply.split()]
    return out


def wait_wall(what, cond, secs):
    """Polls cond() until it holds, for at most secs of wall time (a Fail naming `what`):
    wait_for counts polls, and a poll of agent_rus takes tenths of a second here."""
    end = time.time() + secs
    while not cond():
        if time.time() > end:
            raise Fail("%s: not after %d s" % (what, secs))
        time.sleep(0.1)


def agent_rus(cl, parts, agent):
    """The RUs agent `agent`'s tasks hold (owners (agent + 1) << 32 | seq, namespace 0)."""
    return sum(1 for o in owners(cl, parts) if o >> 40 == 0 and o >> 32 == agent + 1)


@case
def cli_redis_auto_reclaim():
    """An agent process killed (SIGKILL) mid-run beside a live `rusk run --backend` and a
    live `rusk agent`: without any --recount by hand, its RUs are released once its lease
    (3 s: renewed every second, so that a loaded machine's stall does not lapse it) expired, by the live processes' automatic reclaim (the run's once a second, the
    agent's at each lease renewal; one of them per pass, the reclaim lock); the live
    processes' RUs are never touched (none of their releases refused), the RUs reclaimed
    add up to exactly the dead agent's, every task of the run ends once (the counts add
    up), and a recount at the end finds nothing held (no RU held twice). Before, the RUs
    stayed held until `rusk agent --recount --reclaim-expired` by hand."""
    with Cluster() as cl:
        jpath = os.path.abspath("cli_redis_auto_reclaim.json")
        run = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + AUTO_SHAPE.split() +
                               ["--rate", "300", "--duration-s", "25", "--task-ms", "200",
                                "--json", jpath],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def start(i):
            return subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] +
                                    AUTO_SHAPE.split() +
                                    ["--agents", "2", "--agent-id", str(i), "--duration-s",
                                     "120", "--task-ms", "600000", "--rate", "50",
                                     "--lease-ms", "3000"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        victim = live = None
        try:
            wait_for("the run's lease", lambda: run.poll() is not None or cli(
                cl, "zcard", "rusk:{meta}:live-runs") == "1", 60)
            assert run.poll() is None, "the run ended before its lease was seen"
            victim, live = start(1), start(0)
            wait_lease(cl, 1, victim)
            wait_lease(cl, 0, live)
            wait_wall("agent 1 holds RUs", lambda: victim.poll() is not None or
                      agent_rus(cl, 10, 1) > 50, 60)
            assert victim.poll() is None, "agent 1 ended"
            victim.send_signal(signal.SIGKILL)
            t_kill = time.time()
            victim.wait(10)
            time.sleep(0.3)  # a pipeline it sent before its death is executed
            held = agent_rus(cl, 10, 1)
            assert held > 30, held
            wait_wall("the killed agent's RUs released", lambda: agent_rus(cl, 10, 1) == 0, 60)
            freed = time.time() - t_kill
            print("killed agent's %d RUs released %.2f s after SIGKILL (--lease-ms 3000)" %
                  (held, freed))
            assert live.poll() is None, "the live agent ended (exit %s)" % live.returncode
            assert agent_rus(cl, 10, 0) > 0, "the live agent's RUs were released too"
            live.send_signal(signal.SIGTERM)
            aout, arc = finish(live, 60)
            rout, rrc = finish(run, 120)
        finally:
            for p in (victim, live, run):
                if p is not None and p.poll() is None:
                    p.kill()
        assert arc == 3, "the live agent exited %d, not 3" % arc
        a = last_json(aout)
        assert (a["refused"] == 0 and a["claims_unknown"] == 0 and
                a["releases_unknown"] == 0 and a["lost"] == 0), a
        assert rrc == 0, "the run exited %d" % rrc
        j = run_json(jpath)
        check_run(j, rout, "run")
        assert j["redis"]["release_refused"] == 0, j["redis"]
        by_run, by_agent = j["redis"]["reclaimed_expired"], a["reclaimed_expired"]
        print("reclaimed: %d by the run, %d by the live agent, of %d" % (by_run, by_agent,
                                                                       held))
        assert by_run + by_agent == held, (by_run, by_agent, held)
        match(r"redis reclaim +[0-9]+ RUs of dead processes released", rout)
        match(r"reclaim: [0-9]+ RUs of dead processes released", aout)
        match(r"held 0, free 4000, mismatch 0",
              rusk("agent --backend %s %s --recount" % (cl.url, AUTO_SHAPE)).out)
        # the dead agent is forgotten (rusk:{meta}:agents), the live one dropped its entry
        assert cli(cl, "scard", "rusk:{meta}:agents") == "0", cli(cl, "smembers",
                                                                 "rusk:{meta}:agents")


@case
def cli_redis_meta_outage_no_reclaim():
    """The {meta} shard (the leases' master and its replica) paused 5 s beside a live
    `rusk run` (run lease 2 s) and two live agents (--lease-ms 2000): every lease key
    expires on the server meanwhile, though nobody could renew it. No live process's RU is
    reclaimed: a reclaimer believes an absent lease only after the {meta} shard answered it
    without a gap for a lease and a margin (its passes meanwhile put off, counted), and a
    live process renews within a third of its lease once the shard answers. So nothing is
    reclaimed, no release is refused as not the task's, and the recount finds nothing held.
    Before, the first reclaim after the resume took the others for dead: `redis reclaim
    1200 RUs of dead processes released (2 dead agents)` from live agents, each of which
    then counted its tasks lost at release."""
    with Cluster() as cl:
        jpath = os.path.abspath("cli_redis_meta_outage_no_reclaim.json")
        rusk("agent --backend %s %s --init-only" % (cl.url, AUTO_SHAPE))
        meta = cl.master_of_tag("{meta}")
        replica = subprocess.check_output([script(), "replica-of", cl.dir, str(meta)],
                                          text=True, timeout=10).strip()
        env = dict(os.environ, RUSK_RUN_LEASE_MS="2000")
        run = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + AUTO_SHAPE.split() +
                               ["--no-init", "--rate", "300", "--duration-s", "16",
                                "--task-ms", "3000", "--json", jpath],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=env)
        ags = [subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] +
                                AUTO_SHAPE.split() +
                                ["--agents", "2", "--agent-id", str(i), "--duration-s", "16",
                                 "--task-ms", "2000", "--rate", "200", "--lease-ms", "2000"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for i in (0, 1)]
        paused = False
        try:
            for i in (0, 1):
                wait_lease(cl, i, ags[i])
            time.sleep(2)
            for port in (str(meta), replica):
                subprocess.run([script(), "pause", cl.dir, port], check=True, timeout=10)
            paused = True
            time.sleep(5)
        finally:
            if paused:
                for port in (str(meta), replica):
                    subprocess.run([script(), "resume", cl.dir, port], timeout=10)
            outs = []
            for p in ags + [run]:
                try:
                    outs.append(finish(p, 120))
                except Fail:
                    outs.append(("", -1))
            for p in ags + [run]:
                if p.poll() is None:
                    p.kill()
        j = run_json(jpath)
        rd = j["redis"]
        print("run: reclaimed %d, reclaim %s, lost_at_release %d" %
              (rd["reclaimed_expired"], rd["reclaim"], rd["ledger"]["lost_at_release"]))
        assert rd["reclaimed_expired"] == 0, rd["reclaim"]
        assert rd["ledger"]["lost_at_release"] == 0, rd["ledger"]
        unsteady = rd["reclaim"]["unsteady"]
        for i in (0, 1):
            a = last_json(outs[i][0])
            print("agent %d: reclaimed %d, lease_lapsed %d, lost_at_release %d, put off %d" %
                  (i, a["reclaimed_expired"], a["lease_lapsed"], a["lost_at_release"],
                   a["reclaim_unsteady"]))
            assert a["reclaimed_expired"] == 0, a
            assert a["lost_at_release"] == 0 and a["refused"] == 0, a
            assert not a["left_to_reclaim"], a
            unsteady += a["reclaim_unsteady"]
        assert unsteady > 0, "no reclaim pass was put off after the outage"
        wait_for("the cluster answers", lambda: "cluster_state:ok" in cli(cl, "cluster",
                                                                           "info"), 30)
        r = rusk("agent --backend %s %s --recount" % (cl.url, AUTO_SHAPE))
        match(r"held 0, free 4000, mismatch 0", r.out)


@case
def cli_redis_mixed_leases_no_reclaim():
    """Agents with different --lease-ms beside a {meta} outage (its master paused, no
    failover: cluster-node-timeout 30 s): no live agent's RU is reclaimed, whatever the mix.
    A reclaimer believes an agent's absent lease only once the {meta} shard answered it
    without a gap for that agent's own lease (recorded in rusk:{meta}:lease-ms) and a margin,
    with no silence between its meta calls wider than two thirds of that lease.
    1. Agent 0 with a 9 s lease, agent 1 with 1 s, {meta} paused 10 s: both leases lapse.
    Before (the ninth review), agent 1 believed agent 0 dead 2 s after the resume (its own
    lease and 1 s) while agent 0 took its lease again only at its next try, a third of 9 s
    later: `reclaim: released 1496 RUs of 1 dead agent` while agent 0 ran (2 runs of 2), its
    tasks counted lost and some RUs granted to another.
    2. The reverse: agent 2 with a 1 s lease, agent 3 with 9 s (renewing every 3 s), {meta}
    paused 2 s from 0.9 s after a renewal of agent 3: agent 3's calls miss the outage, its
    next one comes just after the resume, before agent 2 took its lapsed lease again. Before,
    agent 3 released 1,500 RUs of the live agent 2 (3 runs of 3). Then agent 2 killed: agent
    3 releases exactly the RUs it held (its renewals made closer until it believes that
    absence), so the long-lease reclaimer still reclaims a short-lease agent's RUs."""
    with Cluster(node_timeout_ms=30000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        meta = cl.master_of_tag("{meta}")

        def agent(i, lease, secs):
            return subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                                    ["--agents", "4", "--agent-id", str(i), "--duration-s",
                                     str(secs), "--rate", "100", "--task-ms", "20000",
                                     "--lease-ms", str(lease)],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def pause(secs):
            subprocess.run([script(), "pause", cl.dir, str(meta)], check=True, timeout=10)
            try:
                time.sleep(secs)
            finally:
                subprocess.run([script(), "resume", cl.dir, str(meta)], check=True,
                               timeout=10)

        def pttl(i):
            return int(subprocess.run(["redis-cli", "-p", str(meta), "pttl",
                                       "rusk:{meta}:alive:%d" % i], capture_output=True,
                                      text=True, timeout=10).stdout.strip() or -3)

        procs = []
        try:
            # 1. the victim's lease long, the reclaimer's short
            procs = [agent(0, 9000, 17), agent(1, 1000, 17)]
            for i in (0, 1):
                wait_lease(cl, i, procs[i])
            time.sleep(3)
            pause(10)
            (o0, rc0), (o1, rc1) = finish(procs[0], 120), finish(procs[1], 120)
            assert rc0 == 0 and rc1 == 0, "exits %d and %d" % (rc0, rc1)
            v, rec = last_json(o0), last_json(o1)
            print("1. victim (9 s lease): lapsed %d, lost %d, regranted %d; reclaimer (1 s): "
                  "reclaimed %d, put off %d" % (v["lease_lapsed"], v["lost_total"],
                                                v["regranted"], rec["reclaimed_expired"],
                                                rec["reclaim_unsteady"]))
            assert v["lease_lapsed"] >= 1, v  # the outage did make its lease lapse
            assert rec["reclaimed_expired"] == 0, rec
            assert v["lost_total"] == 0 and v["regranted"] == 0 and v["refused"] == 0, v
            match(r"held 0, free 32000, mismatch 0",
                  rusk("agent --backend %s %s --recount" % (cl.url, SHAPE)).out)
            # 2. the victim's lease short, the reclaimer's long (past its first window)
            procs = [agent(2, 1000, 120), agent(3, 9000, 120)]
            for i in (2, 3):
                wait_lease(cl, i, procs[i - 2])
            time.sleep(10.5)
            wait_renewal(lambda: pttl(3), "agent 3's lease", 6)
            time.sleep(0.9)
            pause(2)
            time.sleep(4)
            assert procs[0].poll() is None and procs[1].poll() is None, "an agent ended"
            assert pttl(2) > 0, "agent 2 did not take its lease again"
            procs[0].kill()
            procs[0].wait(10)
            time.sleep(0.3)  # a pipeline it sent before its death is executed
            held = agent_rus(cl, 10, 2)
            assert held > 100, held
            wait_wall("agent 2's RUs released", lambda: agent_rus(cl, 10, 2) == 0, 60)
            procs[1].send_signal(signal.SIGTERM)
            o3, rc3 = finish(procs[1], 120)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        assert rc3 == 3, "agent 3 exited %d, not 3" % rc3
        rec = last_json(o3)
        print("2. the killed agent (1 s lease) held %d; the reclaimer (9 s) released %d, put "
              "off %d" % (held, rec["reclaimed_expired"], rec["reclaim_unsteady"]))
        # more than it held at its death: some were released while it lived
        assert rec["reclaimed_expired"] == held, (rec["reclaimed_expired"], held)
        match(r"held 0, free 32000, mismatch 0",
              rusk("agent --backend %s %s --recount" % (cl.url, SHAPE)).out)


@case
def cli_redis_lease_kept_in_outage():
    """A live agent held in a call that waits out one master's outage (--unavailable-ms 0;
    the {meta} shard answering) keeps its lease: the call renews it, between its tries, on a
    connection of its own once the loop is late for a renewal. Beside it a second agent's
    automatic reclaim, whose {meta} shard answered all along, must take nothing: before,
    the first agent's lease (5 s) lapsed during the 8 s pause, the second reclaimed its RUs
    while its tasks ran (1,138 in the review, some granted again) and the first reported
    them lost by Redis. No failover: cluster-node-timeout 20 s."""
    with Cluster(node_timeout_ms=20000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, AUTO_SHAPE))
        meta = cl.master_of_tag("{meta}")
        part = [q for q in range(10) if cl.master_of_partition(q) != meta][0]
        victim = cl.master_of_partition(part)
        common = ["--agents", "2", "--duration-s", "14"]
        held = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + AUTO_SHAPE.split() +
                                common + ["--agent-id", "0", "--unavailable-ms", "0",
                                          "--rate", "300", "--task-ms", "15000"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        other = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] +
                                 AUTO_SHAPE.split() + common +
                                 ["--agent-id", "1", "--rate", "100", "--task-ms", "50"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(3)
            subprocess.run([script(), "pause", cl.dir, str(victim)], check=True, timeout=10)
            time.sleep(8)
            subprocess.run([script(), "resume", cl.dir, str(victim)], check=True, timeout=10)
            out0, rc0 = finish(held, 90)
            out1, rc1 = finish(other, 90)
        finally:
            subprocess.run([script(), "resume", cl.dir, str(victim)], timeout=10)
            for q in (held, other):
                if q.poll() is None:
                    q.kill()
        assert rc0 == 0 and rc1 == 0, "exits %d and %d" % (rc0, rc1)
        j0, j1 = last_json(out0), last_json(out1)
        print("agent 0: outage %.2f s, lease kept %d times, lapsed %d; agent 1 reclaimed %d"
              % (j0["outage_s"], j0["lease_kept"], j0["lease_lapsed"],
                 j1["reclaimed_expired"]))
        assert j0["outage_s"] > 5, j0  # the call was held past the lease
        assert j0["lease_kept"] > 0 and j0["lease_lapsed"] == 0, j0
        assert j1["reclaimed_expired"] == 0, j1
        for j in (j0, j1):
            assert j["lost_total"] == 0 and j["regranted"] == 0, j
            check_placed(j)
        match(r"held 0, free 4000, mismatch 0",
              rusk("agent --backend %s %s --recount" % (cl.url, AUTO_SHAPE)).out)


@case
def cli_redis_meta_stuck_places():
    """The {meta} master stopped (SIGSTOP) 8 s, no failover (cluster-node-timeout 30 s), one
    agent with the default --unavailable-ms 1000: the loop goes on placing on the other
    masters' partitions (its lease renewals fail, each a probe of {meta} within 200 ms)
    and the stall reads true (unavailable_s). Before (the seventh review), the lease kept
    from the stop hook renewed from calls to healthy masters, each renewal blocked 2 s on the
    stuck {meta} master and was made again at the next call: nothing placed for the whole
    pause (max gap 10.04 s of a 10 s pause), outage 0.00 s, unavailable_s 0.0."""
    with Cluster(node_timeout_ms=30000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, AUTO_SHAPE))
        meta = cl.master_of_tag("{meta}")
        p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + AUTO_SHAPE.split() +
                             ["--agent-id", "0", "--duration-s", "15", "--rate", "100",
                              "--task-ms", "50"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(3)
            subprocess.run([script(), "pause", cl.dir, str(meta)], check=True, timeout=10)
            time.sleep(8)
            subprocess.run([script(), "resume", cl.dir, str(meta)], check=True, timeout=10)
            out, rc = finish(p, 90)
        finally:
            subprocess.run([script(), "resume", cl.dir, str(meta)], timeout=10)
            if p.poll() is None:
                p.kill()
        assert rc == 0, "exit %d: %s" % (rc, out[-2000:])
        j = last_json(out)
        per_s = j["placed_per_s"]
        print("max gap %.2f s, outage %.2f s, unavailable %.1f s, lease kept %d (%.2f s), "
              "placed per s %s" % (j["max_gap_s"], j["outage_s"], j["unavailable_s"],
                                   j["lease_kept"], j.get("lease_keep_s", 0), per_s))
        # seconds 5..9 lie inside the pause (3..11 s) however the start is late
        assert min(per_s[5:10]) > 0, per_s
        assert j["max_gap_s"] < 4, j  # the pause is 8 s
        assert j["unavailable_s"] > 2, j  # the {meta} master's own partitions
        assert j["lost_total"] == 0 and j["regranted"] == 0, j
        check_placed(j)


@case
def cli_redis_meta_short_pause_lease_kept():
    """The {meta} master stopped (SIGSTOP) 3 s, shorter than the default 5 s lease less a
    third, 1 s after a renewal of a default agent's lease (no failover): the agent renews
    as soon as {meta} answers again, so its lease key rusk:{meta}:alive:0 never disappears
    (PTTL polled every 50 ms from the resume on) and lease_lapsed is 0. Before (the eighth
    review), its renewals came a third of a lease apart and each one waited out the probe's
    backoff (up to 2 s): 670 ms of lease left at the resume, the key gone 0.7 s to 1.4 s
    after it, lease_lapsed 1 (5 runs of 5), and a plain --reclaim-agent 0 in that window
    released the live agent's RUs."""
    with Cluster(node_timeout_ms=30000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, AUTO_SHAPE))
        meta = cl.master_of_tag("{meta}")

        def pttl():
            return int(subprocess.run(["redis-cli", "-p", str(meta), "pttl",
                                       "rusk:{meta}:alive:0"], capture_output=True,
                                      text=True, timeout=10).stdout.strip() or -3)

        p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + AUTO_SHAPE.split() +
                             ["--agent-id", "0", "--duration-s", "12", "--rate", "100",
                              "--task-ms", "2000"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        seen = []
        try:
            # a renewal seen (the PTTL goes up), then 1 s on: the loop's next renewal
            # (a third of 5 s after it) meets the paused master
            wait_for("the lease taken", lambda: pttl() > 0, 20)
            wait_renewal(pttl, "the lease", 4)
            time.sleep(1.0)
            subprocess.run([script(), "pause", cl.dir, str(meta)], check=True, timeout=10)
            time.sleep(3)
            subprocess.run([script(), "resume", cl.dir, str(meta)], check=True, timeout=10)
            t = time.monotonic()
            while time.monotonic() - t < 4:  # the lease ran out 1 s after the resume before
                seen.append(pttl())
                time.sleep(0.05)
            out, rc = finish(p, 90)
        finally:
            subprocess.run([script(), "resume", cl.dir, str(meta)], timeout=10)
            if p.poll() is None:
                p.kill()
        assert rc == 0, "exit %d: %s" % (rc, out[-2000:])
        j = last_json(out)
        gone = sum(1 for v in seen if v < 0)
        print("PTTL after the resume: first %s, least %d ms, absent %d of %d; lease_lapsed "
              "%d, lease_kept %d, unavailable %.1f s, max gap %.2f s"
              % (seen[:3], min(seen), gone, len(seen), j["lease_lapsed"], j["lease_kept"],
                 j["unavailable_s"], j["max_gap_s"]))
        assert len(seen) >= 10, seen
        assert gone == 0, "the lease key was absent %d times of %d: %s" % (gone, len(seen),
                                                                          seen)
        assert j["lease_lapsed"] == 0, j
        assert j["lost_total"] == 0 and j["regranted"] == 0, j
        check_placed(j)


def kill_then_term(cl, victim, p, secs):
    """Master `victim` killed, then process p sent SIGTERM 0.2 s later, so that its end
    meets the dead master: p's output and exit status (finish, secs)."""
    subprocess.run([script(), "kill", cl.dir, str(victim)], check=True, timeout=10)
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    return finish(p, secs)


@case
def cli_redis_end_unreleased_left_to_reclaim():
    """An agent stopped (SIGTERM) just after the master of one of its partitions was
    killed: the end's ledger check cannot read that partition and its releases there are
    not made. The agent says so (`left to the reclaim`, "left_to_reclaim" in its JSON) and
    keeps its id registered (rusk:{meta}:agents), its lease left to lapse, so a later
    agent's automatic reclaim frees those RUs once the replica took over: the recount then
    finds nothing held. Before, the agent printed "every held task released" and dropped
    its id, so nothing took it for dead and the RUs stayed held for good (only a recount
    by hand with --reclaim-expired freed them)."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, AUTO_SHAPE))
        meta = cl.master_of_tag("{meta}")
        part = [q for q in range(10) if cl.master_of_partition(q) not in (meta, cl.port)][0]
        victim = cl.master_of_partition(part)
        p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + AUTO_SHAPE.split() +
                             ["--agents", "2", "--agent-id", "0", "--duration-s", "60",
                              "--task-ms", "600000",
                              "--rate", "300", "--lease-ms", "2000"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            wait_lease(cl, 0, p)
            wait_wall("agent 0 holds RUs", lambda: p.poll() is not None or
                      agent_rus(cl, 10, 0) > 200, 60)
            assert p.poll() is None, "agent 0 ended"
            out, rc = kill_then_term(cl, victim, p, 60)
        finally:
            if p.poll() is None:
                p.kill()
        assert rc == 3, "agent 0 exited %d" % rc
        wait_for("partition %d failed over" % part,
                 lambda: cl.master_of_partition(part) != victim, 60)
        wait_cluster_ok(cl, "partition %d served again" % part, 60, down=victim)
        # read once the cluster answers again (before, CLUSTERDOWN read as "not there")
        registered = yes_no(cli(cl, "sismember", "rusk:{meta}:agents", "0"))
        held = agent_rus(cl, 10, 0)
        assert held > 0, "nothing of agent 0's left held: the case tests nothing"
        # a later agent (another id) frees them by its automatic reclaim
        r = subprocess.run([ARGS.rusk, "agent", "--backend", cl.url] + AUTO_SHAPE.split() +
                           ["--agents", "2", "--agent-id", "1", "--duration-s", "8",
                            "--task-ms", "100",
                            "--rate", "100", "--lease-ms", "2000"],
                           capture_output=True, text=True, timeout=120)
        print(r.stdout + r.stderr)
        assert r.returncode == 0, r.returncode
        a = last_json(r.stdout)
        print("agent 0 left %d RUs held; agent 1 reclaimed %d" % (held, a["reclaimed_expired"]))
        match(r"held 0, free 4000, mismatch 0",
              rusk("agent --backend %s %s --recount" % (cl.url, AUTO_SHAPE)).out)
        assert a["reclaimed_expired"] == held, (a["reclaimed_expired"], held)
        assert registered, "agent 0 dropped its id though its end left RUs held"
        assert cli(cl, "scard", "rusk:{meta}:agents") == "0", cli(cl, "smembers",
                                                                 "rusk:{meta}:agents")
        j = last_json(out)
        assert j["left_to_reclaim"] and j["end_unknown"] > 0, j
        match(r"left to the reclaim: [0-9]+ releases not made", out)
        assert "every held task released" not in out, out


@case
def cli_redis_run_end_left_to_reclaim():
    """`rusk run --backend` stopped (SIGTERM) just after the master of one partition was
    killed: the recount after the run cannot read that partition, so the run keeps its
    entry in rusk:{meta}:live-runs (left to lapse: its lease, 2 s here) and says so
    ("left_to_reclaim"); a later agent's automatic reclaim then frees the RUs its tasks
    still hold, and the recount finds nothing held. Before, the run removed its entry at
    its end, so nothing took it for dead: held 2400 for good (only `--recount
    --reclaim-expired` by hand freed them)."""
    with Cluster() as cl:
        jpath = os.path.abspath("cli_redis_run_end_left_to_reclaim.json")
        rusk("agent --backend %s %s --init-only" % (cl.url, AUTO_SHAPE))
        meta = cl.master_of_tag("{meta}")
        part = [q for q in range(10) if cl.master_of_partition(q) not in (meta, cl.port)][0]
        victim = cl.master_of_partition(part)
        env = dict(os.environ, RUSK_RUN_LEASE_MS="2000")
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + AUTO_SHAPE.split() +
                             ["--no-init", "--rate", "500", "--duration-s", "60", "--task-ms",
                              "600000", "--json", jpath],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=env)
        try:
            wait_for("the run's RUs held", lambda: p.poll() is not None or (
                cli(cl, "zcard", "rusk:{meta}:live-runs") == "1" and
                len(owners(cl, 10)) > 300), 60)
            assert p.poll() is None, "the run ended"
            out, rc = kill_then_term(cl, victim, p, 120)
        finally:
            if p.poll() is None:
                p.kill()
        print("run exit %d" % rc)
        wait_for("partition %d failed over" % part,
                 lambda: cl.master_of_partition(part) != victim, 60)
        wait_cluster_ok(cl, "partition %d served again" % part, 60, down=victim)
        registered = yes_no(cli(cl, "zcard", "rusk:{meta}:live-runs"))
        held = len(owners(cl, 10))
        assert held > 0, "nothing of the run's left held: the case tests nothing"
        r = subprocess.run([ARGS.rusk, "agent", "--backend", cl.url] + AUTO_SHAPE.split() +
                           ["--duration-s", "8", "--task-ms", "100", "--rate", "100",
                            "--lease-ms", "2000"],
                           capture_output=True, text=True, timeout=120)
        print(r.stdout + r.stderr)
        assert r.returncode == 0, r.returncode
        a = last_json(r.stdout)
        print("the run left %d RUs held; the agent reclaimed %d" % (held,
                                                                   a["reclaimed_expired"]))
        match(r"held 0, free 4000, mismatch 0",
              rusk("agent --backend %s %s --recount" % (cl.url, AUTO_SHAPE)).out)
        assert a["reclaimed_expired"] == held, (a["reclaimed_expired"], held)
        assert registered, "the run removed its live-runs entry though RUs were left held"
        assert run_json(jpath)["redis"]["left_to_reclaim"], "no left_to_reclaim"
        match(r"redis left held +.* left to the reclaim: the run's lease", out)
        match(r"all RUs free after the run: [a-zA-Z]+ \(on Redis, some left to the reclaim", out)


@case
def cli_redis_recount_exact():
    """The recount's mismatch counts each RU at most once: an RU held and marked free is
    one (it was two: once as held-and-free, once more in |RUs - free - held|), one neither
    held nor marked free beside it makes two (it was one); an owner field that names no RU
    and a free bit past the last RU are one each, and counted neither held nor free. A
    mismatch makes the recount exit 1; repaired, it is clean again."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        n = int(cli(cl, "hget", "rusk:{p0}:mach", "part").split(",")[1])
        count = "agent --backend %s %s --recount" % (cl.url, RUN_SHAPE)
        owner = str(1 << 32 | 7)
        assert cli(cl, "hset", "rusk:{p0}:own", "3", owner) == "1"
        match(r"recount: 4 partitions: held 1, free 400, mismatch 1,", rusk(count, status=1).out)
        cli(cl, "setbit", "rusk:{p0}:free", "5", "0")
        match(r"held 1, free 399, mismatch 2,", rusk(count, status=1).out)
        cli(cl, "hset", "rusk:{p0}:own", str(n), owner)  # past the partition's RUs
        cli(cl, "hset", "rusk:{p0}:own", "07", owner)  # not a canonical RU number
        match(r"held 1, free 399, mismatch 4,", rusk(count, status=1).out)
        cli(cl, "setbit", "rusk:{p0}:free", str(n), "1")  # in the last byte, past the RUs
        cli(cl, "setbit", "rusk:{p0}:free", str(8 * n + 3), "1")  # bytes past the bitmap
        match(r"held 1, free 399, mismatch 6,", rusk(count, status=1).out)
        cli(cl, "hdel", "rusk:{p0}:own", "3", str(n), "07")
        cli(cl, "setbit", "rusk:{p0}:free", "5", "1")
        cli(cl, "setbit", "rusk:{p0}:free", str(n), "0")
        cli(cl, "setbit", "rusk:{p0}:free", str(8 * n + 3), "0")
        match(r"held 0, free 400, mismatch 0,", rusk(count).out)


# Every machine of a partition given memory cap ARGV[1] MiB (the machine shape's third
# figure; the 'part' field is the partition's layout): a commit asking more is answered
# RUSKINFEASIBLE.
MEMCAP = ("local s = redis.call('HGETALL', KEYS[1]) "
          "for i = 1, #s, 2 do local a, b, c, d = string.match(s[i + 1], "
          "'^(%d+),(%d+),(%d+),(%d+)$') if a and s[i] ~= 'part' then "
          "redis.call('HSET', KEYS[1], s[i], "
          "a .. ',' .. b .. ',' .. ARGV[1] .. ',' .. d) end end return 1")


@case
def cli_redis_agent_commit_error():
    """A commit error that is neither a conflict nor a lost answer stops the agent: a task
    no machine of the shape can hold is refused at the start (exit 2, the flag and the
    largest machine named; before, 25,264 claims counted "unknown", exit 0); one that the
    state answers RUSKINFEASIBLE while the agent runs (the machines' memory cut under it)
    stops the loop with the backend's message, the summary and JSON line ("stopped":
    "error"), every held task released, exit 1."""
    for be in ("memory", "redis://127.0.0.1:1"):
        r = rusk("agent --backend %s %s --task-mem-mib 70000 --duration-s 0.3" %
                 (be, RUN_SHAPE), status=2)
        match(r"rusk agent: --task-mem-mib 70000: more than any machine of this shape holds "
              r"\(the largest has 65536 MiB\)", r.out)
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        a = agent_proc(cl, RUN_SHAPE, 0, 1, 60, ["--task-mem-mib", "100", "--lease-ms",
                                                 "1500"])
        try:
            wait_lease(cl, 0, a)
            time.sleep(1)
            for q in range(4):
                assert cli(cl, "eval", MEMCAP, "1", "rusk:{p%d}:mach" % q, "50") == "1"
            out, rc = finish(a, 30)
        finally:
            if a.poll() is None:
                a.kill()
        assert rc == 1, "the agent exited %d" % rc
        match(r"rusk agent: a commit failed with .*RUSKINFEASIBLE machine [0-9]+", out)
        j = last_json(out)
        assert j["stopped"] == "error" and j["claims_unknown"] == 0 and j["releases_unknown"] == 0, j
        assert j["placed"] > 0 and j["released"] == j["placed"] and j["refused"] == 0, j
        for q in range(4):
            cli(cl, "eval", MEMCAP, "1", "rusk:{p%d}:mach" % q, "65536")
        match(r"held 0, free 400, mismatch 0",
              rusk("agent --backend %s %s --recount" % (cl.url, RUN_SHAPE)).out)


@case
def cli_redis_reclaim_dead_run():
    """A rusk run killed (SIGKILL) leaves its RUs held under its namespace (owners
    ns << 40 | task). While its run lease (rusk:{meta}:live-runs; 2 s here through
    RUSK_RUN_LEASE_MS) is live, --reclaim-run NS is refused (exit 2) and --reclaim-expired
    leaves them; once it expired, --reclaim-expired releases every one (before: held 953,
    reclaimed 0, for good)."""
    with Cluster() as cl:
        env = dict(os.environ, RUSK_RUN_LEASE_MS="2000")
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + RUN_SHAPE.split() +
                             ["--rate", "500", "--duration-s", "60", "--task-ms", "600000"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=env)
        count = "agent --backend %s %s --recount" % (cl.url, RUN_SHAPE)
        try:
            wait_for("the run's RUs held", lambda: p.poll() is not None or (
                cli(cl, "zcard", "rusk:{meta}:live-runs") == "1" and
                last_json(rusk(count, show=False).out)["held"] > 100), 30)
            assert p.poll() is None, "the run ended"
            ns = int(cli(cl, "zrange", "rusk:{meta}:live-runs", "0", "-1"))
            p.send_signal(signal.SIGKILL)
            p.wait(10)
        finally:
            if p.poll() is None:
                p.kill()
        held = last_json(rusk(count).out)["held"]
        assert held > 100, held
        r = rusk("%s --reclaim-run %d" % (count, ns), status=None)
        if r.status == 2:  # its lease still live (2 s): refused, nothing released
            match(r"--reclaim-run %d: run %d's lease is live" % (ns, ns), r.out)
            assert last_json(rusk(count).out)["held"] == held
        time.sleep(2.5)  # the lease expires
        r = rusk("%s --reclaim-expired" % count)
        match(r"recount: run %d has no live run lease" % ns, r.out)
        match(r"held 0, free 400, mismatch 0, reclaimed %d \(%d from dead runs\)" %
              (held, held), r.out)


@case
def cli_redis_reclaim_live_refused():
    """--recount --reclaim-agent I while agent I's lease is live is refused before anything
    is released (exit 2, its pid named; before, it released them and warned after, exit 0,
    and the live agent ran tasks on RUs the state showed free); --force reclaims anyway."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        count = "agent --backend %s %s --recount" % (cl.url, RUN_SHAPE)
        a = agent_proc(cl, RUN_SHAPE, 0, 1, 60, ["--lease-ms", "3000"])
        try:
            wait_lease(cl, 0, a)
            wait_for("RUs held", lambda: last_json(rusk(count, show=False).out)["held"] > 100
                     or a.poll() is not None, 30)
            held = last_json(rusk(count).out)["held"]
            r = rusk("%s --reclaim-agent 0" % count, status=2)
            match(r"rusk agent: --reclaim-agent 0: agent 0's lease is live \(pid %d on "
                  r"[^;]+; rusk:\{meta\}:alive:0 ends in [0-9.]+ s unless renewed\): stop it "
                  r"first, or wait for its lease to expire" % a.pid, r.out)
            assert last_json(rusk(count).out)["held"] >= held, "RUs released"
            match(r"--force: only with --reclaim-agent or --reclaim-run",
                  rusk("%s --force" % count, status=2).out)
            r = rusk("%s --reclaim-agent 0 --force" % count)
            match(r"released [0-9]+ RUs of agent 0", r.out)
            match(r"agent 0's lease is live", r.out)
            a.send_signal(signal.SIGTERM)
            finish(a, 30)
        finally:
            if a.poll() is None:
                a.kill()


@case
def cli_redis_agent_arrivals_outage():
    """Open-loop arrivals through an outage that lasts past --duration-s (a master killed
    0.5 s before the end, its failover taking seconds; --unavailable-ms 0: the agent waits
    it out rather than going on with the other masters' partitions): arrivals are counted
    up to the end, arrived = rate x --duration-s (before, the loop ended at the first look at the clock
    after the outage without counting the arrivals during it: about 1,250 of 1,500)."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        victim = cl.master_of_partition(0)
        p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                             ["--duration-s", "3", "--task-ms", "300", "--rate", "500",
                              "--unavailable-ms", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(2.5)
            subprocess.run([script(), "kill", cl.dir, str(victim)], check=True, timeout=10)
            out, rc = finish(p, 90)
        finally:
            if p.poll() is None:
                p.kill()
        assert rc == 0, "the agent exited %d" % rc
        j = last_json(out)
        # elapsed_s is the loop's real wall time: the outage ran past the end (before,
        # 3.000 whatever the overrun, and max_gap_s left out the trailing stall). The
        # stall accounts for the overrun, less the moments after the cluster came back
        # (a reconnect and a sync before the loop looks at its clock; 0.1 s in a CI run
        # whose commits resumed at 6.13 s of 6.23 s)
        assert j["elapsed_s"] > 3.5 and j["max_gap_s"] > 1.0, j
        assert j["max_gap_s"] > j["elapsed_s"] - 3 - 1.0, j
        want = 500 * min(j["elapsed_s"], 3)
        print("arrived %d, rate x elapsed_s %.0f, outage %.2f s" % (j["arrived"], want,
                                                                   j["outage_s"]))
        assert abs(j["arrived"] - want) <= 0.02 * want, (j["arrived"], want, j)
        assert j["arrived"] + j["replaced"] == j["placed"] + j["backlog_end"], j
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)


def stuck_pause(cl, p, settle):
    """For cli_redis_agent_stuck_master and cli_redis_run_stuck_master: the master (not the
    {meta} one: the lease's stays up) that serves the most partitions, stopped (SIGSTOP)
    `settle` s after process p started, for 4 s; the healthy partitions' versions summed
    1.5 s and 3.9 s into the pause (every commit and release script increments its
    partition's). Returns (victim, v0, v1); p is killed if anything fails before it ends."""
    meta = cl.master_of_partition("meta")
    owner = {q: cl.master_of_partition(q) for q in range(10)}
    others = [m for m in set(owner.values()) if m != meta]
    victim = max(others, key=lambda m: sum(1 for q in owner if owner[q] == m))
    healthy = [q for q in range(10) if owner[q] != victim]

    def versions():
        return sum(int(subprocess.run(
            ["redis-cli", "-p", str(owner[q]), "get", "rusk:{p%d}:ver" % q],
            capture_output=True, text=True, timeout=10).stdout.strip() or 0)
            for q in healthy)
    try:
        time.sleep(settle)
        subprocess.run([script(), "pause", cl.dir, str(victim)], check=True, timeout=10)
        t = time.monotonic()
        try:
            time.sleep(1.5)  # each connection's read times out after 1 s
            v0 = versions()
            time.sleep(max(0.0, t + 3.9 - time.monotonic()))
            v1 = versions()
            time.sleep(max(0.0, t + 4 - time.monotonic()))
        finally:
            subprocess.run([script(), "resume", cl.dir, str(victim)], check=True, timeout=10)
    except BaseException:
        if p.poll() is None:
            p.kill()
            p.communicate()
        raise
    print("healthy partitions' versions advanced by %d during the pause" % (v1 - v0))
    return victim, v0, v1


@case
def cli_redis_agent_stuck_master():
    """One master of three stops answering (SIGSTOP) for 4 s mid-run, with no failover (a
    cluster-node-timeout of 30 s): the agent marks its partitions unavailable within
    --unavailable-ms (1 s by default), places the arrivals on the other masters'
    partitions meanwhile, and takes the stuck ones back once it answers. Asserted from
    outside, the healthy partitions' versions (every commit and release script increments
    its partition's) advance during the pause: before, the agent waited on the stuck
    socket for the whole pause (0 advance, its longest gap between commits 4.0 s). Then
    the agent's own counts, every task accounted for, and the recount clean afterwards:
    the claims whose answer the stuck master kept are released as orphans."""
    with Cluster(node_timeout_ms=30000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                             ["--duration-s", "9", "--task-ms", "100", "--rate", "2000"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        victim, v0, v1 = stuck_pause(cl, p, 2)
        out, rc = finish(p, 90)
        assert v1 > v0 + 100, "the agent placed nothing on the healthy masters while " \
            "master %d was paused (versions %d -> %d)" % (victim, v0, v1)
        assert rc == 0, "the agent exited %d" % rc
        j = last_json(out)
        check_placed(j)
        assert j["parts_unavailable"] >= 1 and j["placed_while_unavailable"] > 100, j
        assert j["max_gap_s"] < 3.0, j  # the read timeout, not the 4 s pause
        assert j["arrived"] + j["replaced"] == j["placed"] + j["backlog_end"], j
        # the claims whose answer the stuck master kept: released as orphans if it took them
        assert j["orphans"] <= j["claims_unknown"], j
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)


@case
def cli_redis_run_stuck_master():
    """rusk run --backend beside one master of three stopped (SIGSTOP) for 4 s, with no
    failover (a cluster-node-timeout of 30 s): as rusk agent does (cli_redis_agent_stuck_
    master), the run's connections mark its partitions unavailable within --unavailable-ms
    (1 s by default), the views show them taken so the agents place on the other masters'
    partitions meanwhile, the releases there are put off and sent again once it answers.
    Asserted from outside, the healthy partitions' versions (every commit and release
    script increments its partition's) advance during the pause: before, every agent
    thread waited on the stuck master in turn and the run placed almost nothing until it
    answered. Then the run's counts: every task committed and ended once, the releases put
    off all sent (none left at the end), no RU held by the run after it, nothing lost.
    Tasks of 1 s at 1,000/s, so that some run on the stuck master's partitions when it
    stops and end while it is marked: with tasks of 100 ms, each agent (Latency-first keeps
    to one partition at a time) could be on a healthy master's partition at the pause, and
    no release was put off in about half the runs (CI's failure of 70fb52b)."""
    with Cluster(node_timeout_ms=30000) as cl:
        out = "cli_redis_run_stuck_master.json"
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + BATCH_SHAPE.split() +
                             ["--agents", "2", "--rate", "1000", "--duration-s", "9",
                              "--task-ms", "1000", "--json", out],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        victim, v0, v1 = stuck_pause(cl, p, 2.5)
        text, rc = finish(p, 120)
        assert v1 > v0 + 100, "the run placed nothing on the healthy masters while " \
            "master %d was paused (versions %d -> %d)" % (victim, v0, v1)
        assert rc == 0, "the run exited %d" % rc
        j = run_json(out)
        t, rd = j["tasks"], j["redis"]
        print(json.dumps({"tasks": t, "redis": rd}))
        assert rd["unavailable_ms"] == 1000 and rd["parts_unavailable"] >= 1, rd
        assert rd["placed_while_unavailable"] > 100 and rd["releases_deferred"] > 0, rd
        assert rd["releases_put_off_end"] == 0, rd
        assert rd["max_gap_s"] < 3.0, rd  # the read timeout, not the 4 s pause
        # every task ended once; nothing held by the run after it, nothing lost
        assert t["submitted"] > 0 and t["committed"] == t["submitted"], t
        assert t["rejected"] == 0 and t["backlog_end"] == 0, t
        assert j["checks"]["counts_add_up"] and j["checks"]["counters_consistent"], j["checks"]
        match(r"counts add up: yes; all RUs free after the run: yes", text)
        assert rd["recount"]["ok"] and rd["recount"]["held_by_run"] == 0, rd
        assert rd["recount"]["mismatch"] == 0 and rd["recount"]["partitions_failed"] == 0, rd
        assert rd["ledger"]["lost_total"] == 0, rd["ledger"]
        # the claims whose answer the stuck master kept: released as orphans if it took them
        assert rd["ledger"]["orphans"] <= rd["claims_unknown"], rd
        match(r"redis unavailable +\(--unavailable-ms 1000\) marked [1-9][0-9]* times", text)
        match(r"held 0, free 4000, mismatch 0", rusk("agent --backend %s %s --recount" %
                                                    (cl.url, BATCH_SHAPE)).out)

@case
def cli_redis_run_meta_stuck_budget():
    """rusk run --backend --unavailable-ms 20000 on one partition, whose master is not the
    {meta} one (so the agents never call {meta}), the {meta} master stopped 1 s into a 3 s
    run and left stopped (no failover: cluster-node-timeout 60 s): the main connection's
    {meta} calls (each second's reclaim and run lease renewal, the end's reclaim) keep
    their budgets (0.5 s, 5 s), so the run ends within 10 s of its start (measured about
    4 s). Before, the first of them waited its read timeout, 20 s, holding the main thread
    (the sampler, the ledger, the end): the run ended after 22-24 s."""
    with Cluster(node_timeout_ms=60000) as cl:
        meta = cl.master_of_tag("{meta}")
        part = cl.master_of_partition(0)
        if part == meta:
            print("partition 0 and {meta} on one master (%d): nothing to test" % meta)
            return
        shape = ["--machines", "200", "--partitions", "1", "--agents", "1"]
        p = start_proc(["run", "--backend", "redis://127.0.0.1:%d" % part] + shape +
                       ["--rate", "200", "--task-ms", "100", "--duration-s", "3",
                        "--unavailable-ms", "20000"])
        t0 = time.monotonic()
        try:
            time.sleep(1)
            subprocess.run([script(), "pause", cl.dir, str(meta)], check=True, timeout=10)
            out, rc = finish(p, timeout=90)
            took = time.monotonic() - t0
        finally:
            subprocess.run([script(), "resume", cl.dir, str(meta)], timeout=10)
            if p.poll() is None:
                p.kill()
                p.communicate()
        print("the run ended after %.1f s, exit %d" % (took, rc))
        assert rc in (0, 1), "the run exited %d" % rc
        assert took < 10, "the run ended %.1f s after its start (a 3 s run)" % took


@case
def cli_redis_run_stuck_master_end():
    """rusk run --backend whose stuck master (SIGSTOP, no failover: a cluster-node-timeout
    of 90 s) is still stuck when the run ends: the run's main connection marks it
    unavailable as the agents' do (--unavailable-ms), so the ledger, the end's drain and
    recount skip its partitions and read the others. Asserted: the run ends within its
    duration + the drain's 5 s + the end's passes (5 s each, generous on a loaded
    machine), and the recount names exactly the stuck master's partitions as unread, as
    unavailable, the reason "no answer within N ms". Before, each read of the main
    connection waited ~2 s on the stuck master, the recount spent its 5 s budget on the
    first partition ("10 of 10 partitions could not be read ... 9 not tried: the budget was
    spent") and the run exited at ~32 s."""
    master_gone_at_end("pause", r"unavailable \(no answer within [0-9]+ ms\): slot")


@case
def cli_redis_recount_master_paused():
    """`rusk agent --recount` with one master of three paused (SIGSTOP, no failover: a
    cluster-node-timeout of 90 s): exit 1 after --failover-ms (an outage), and the message
    names that master, the others having answered: `master 127.0.0.1:P did not answer for
    T s while the others did`. Before (the ninth review), "the cluster did not answer for
    30.2 s", although two masters of three had."""
    with Cluster(node_timeout_ms=90000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        meta = cl.master_of_partition("meta")
        victim = [m for m in (cl.master_of_partition(q) for q in range(10)) if m != meta][0]
        subprocess.run([script(), "pause", cl.dir, str(victim)], check=True, timeout=10)
        try:
            r = rusk("agent --backend %s %s --recount --failover-ms 3000" % (cl.url, SHAPE),
                     status=1)
        finally:
            subprocess.run([script(), "resume", cl.dir, str(victim)], check=True, timeout=10)
        match(r"\(master 127\.0\.0\.1:%d did not answer for [0-9.]+ s while the others "
              r"did: stopped, hung, or failing over" % victim, r.out)
        assert "the cluster did not answer" not in r.out, r.out
        recount(cl)


@case
def cli_redis_run_killed_master_end():
    """cli_redis_run_stuck_master_end with the master killed (SIGKILL, no failover): its
    port refuses connections, and the recount's reason says so, `unavailable (it refused
    connections)`. Before (the ninth review), every skip read `unavailable (no answer
    within 1000 ms)`, as if the master were stuck."""
    master_gone_at_end("kill", r"unavailable \(it refused connections\): slot")


def master_gone_at_end(how, reason):
    """A 3 s rusk run --backend whose master with the most partitions (not {meta}'s) is
    paused or killed 1.5 s in (no failover) and still gone at its end (the cases above)."""
    with Cluster(node_timeout_ms=90000) as cl:
        meta = cl.master_of_partition("meta")
        owner = {q: cl.master_of_partition(q) for q in range(10)}
        others = [m for m in set(owner.values()) if m != meta]  # the run lease's stays up
        victim = max(others, key=lambda m: sum(1 for q in owner if owner[q] == m))
        stuck = [q for q in range(10) if owner[q] == victim]
        out = "cli_redis_run_%s_master_end.json" % ("stuck" if how == "pause" else "killed")
        t0 = time.monotonic()
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + BATCH_SHAPE.split() +
                             ["--agents", "2", "--rate", "1000", "--duration-s", "3",
                              "--task-ms", "100", "--json", out],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(1.5)
            subprocess.run([script(), how, cl.dir, str(victim)], check=True, timeout=10)
            try:
                text, rc = finish(p, 120)
                elapsed = time.monotonic() - t0
            finally:
                if how == "pause":
                    subprocess.run([script(), "resume", cl.dir, str(victim)], check=True,
                                   timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        print("the run ended after %.1f s (master %d, partitions %s %s)" %
              (elapsed, victim, stuck, "stuck" if how == "pause" else "killed"))
        print("\n".join(l for l in text.splitlines() if not l.startswith("{"))[-2000:])
        # 3 s + 5 s drain + the last ledger pass, reclaim and recount (5 s each at most)
        assert elapsed < 3 + 5 + 15 + 4, "the run ended after %.1f s" % elapsed
        assert rc == 1, "the run exited %d" % rc  # the recount could not read them all
        j = run_json(out)
        rd = j["redis"]
        print(json.dumps({"recount": rd["recount"], "ledger": rd["ledger"]}))
        assert rd["recount"]["partitions_failed"] == len(stuck), rd["recount"]
        assert rd["recount"]["partitions_unavailable"] == len(stuck), rd["recount"]
        assert rd["ledger"]["unavailable"] >= 1, rd["ledger"]
        m = re.search(r"(\d+) of 10 partitions could not be read \(partitions? ([0-9, ]+):",
                      text)
        assert m, "no recount failure in the output"
        named = sorted(int(x) for x in m.group(2).split(", "))
        assert int(m.group(1)) == len(stuck) and named == stuck, (m.group(0), stuck)
        match(r"%d of them skipped: their master marked unavailable \(--unavailable-ms 1000\)"
              % len(stuck), text)
        match(reason, text)
        assert "not tried: the budget was spent" not in text, text


def re_search(regex, text):
    import re
    m = re.search(regex, text)
    if not m:
        raise Fail("no %r in output" % regex)
    return m.group(1)


def failover(wait, lag=False, cut=False, password=None):
    """A master killed 3 s into a 10 s run; with lag, its replica is paused 1 s before and
    resumed after, so the commits the master acknowledged meanwhile are lost on failover;
    with cut too, the master's replication link is closed once the replica is paused, so
    they cannot arrive late from the socket buffers either. With a password, the cluster
    requires it (requirepass, masterauth) and the URL carries it."""
    with Cluster(password=password) as cl:
        url = cl.url
        if password is not None:
            url = "redis://:%s@%s" % (password, cl.url[len("redis://"):])
        rusk("agent --backend %s %s --init-only" % (url, SHAPE))
        victim = cl.master_of_partition(0)
        args = [ARGS.rusk, "agent", "--backend", url] + SHAPE.split() + [
            "--duration-s", "10", "--task-ms", "300", "--rate", "5000"]
        if wait:
            args += ["--wait", "1", "--wait-ms", "200"]
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        replica = subprocess.check_output([script(), "replica-of", cl.dir, str(victim)],
                                          text=True, timeout=10).strip()
        if lag:
            time.sleep(2)
            subprocess.run([script(), "pause", cl.dir, replica], check=True, timeout=10)
            if cut:
                time.sleep(0.2)
                subprocess.run([script(), "cut", cl.dir, str(victim)], check=True, timeout=10)
            time.sleep(1)
        else:
            time.sleep(3)
        subprocess.run([script(), "kill", cl.dir, str(victim)], check=True, timeout=10)
        if lag:
            subprocess.run([script(), "resume", cl.dir, replica], check=True, timeout=10)
        out = p.communicate(timeout=90)[0]
        print(out)
        assert p.returncode == 0, "the agent exited %d" % p.returncode
        j = last_json(out)
        assert j["reconnects"] >= 1, "no reconnect after the master %d died" % victim
        assert j["placed"] > 1000, j
        assert j["replaced"] == j["lost"], j
        # whatever was lost was re-placed, and nothing stays held: every RU once
        r = rusk("agent --backend %s %s --recount" % (url, SHAPE))
        match(r"held 0, free 32000, mismatch 0", r.out)
        if password is not None:
            assert password not in out and password not in r.out, "the password printed"
        return j


@case
def cli_redis_failover():
    """Kill a master mid-run: its replica takes over, the agent goes on; the ledger check
    re-places tasks whose acknowledged commits the failover lost; the recount is clean."""
    failover(False)


@case
def cli_redis_auth_failover():
    """A master of a cluster with requirepass killed mid-run: the connections to the
    promoted replica AUTH as the first ones did; the run goes on, nothing held after."""
    failover(False, password="s3cr-t-pw")


@case
def cli_redis_failover_wait():
    """The same with WAIT 1 after each batch (synchronous to one replica)."""
    failover(True)


@case
def cli_redis_failover_lag():
    """The replica paused 1 s before its master dies (on loopback the replication stream
    waits in the socket buffers, so this rarely loses anything: perf/RESULTS.md); the
    recount must be clean whatever was lost."""
    failover(False, lag=True)


@case
def cli_redis_failover_short_bound():
    """--failover-ms shorter than the promotion (300 ms; a replica takes over 2-4 s after its
    master dies here): the agent's calls give up during the outage (counted unknown), and
    once the replica is promoted they find it: the failover bound is an outage's, per
    connection, and a connection past it still refreshes its slot map once per call, so its
    map, which named only the dead master, is not kept for good. One partition and no
    lease: every call of the agent goes to the dead shard, none to a healthy one that would
    reset the outage. The agent places again after the failover: in a 12 s run, 5,999 of its
    5,999 arrivals placed (1,512, the first 3 s, when a connection past its bound kept its map),
    and the longest gap between its commits is the promotion (4.3 s measured; bounded at 12
    s for a loaded machine, in a 20 s run, where the old defect's gap is 17 s)."""
    with Cluster() as cl:
        shape = "--machines 200 --partitions 1"
        rusk("agent --backend %s %s --init --duration-s 0.1" % (cl.url, shape))
        victim = cl.master_of_partition(0)
        p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + shape.split() +
                             ["--duration-s", "20", "--task-ms", "300", "--rate", "500",
                              "--failover-ms", "300", "--lease-ms", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(3)
            subprocess.run([script(), "kill", cl.dir, str(victim)], check=True, timeout=10)
            out = p.communicate(timeout=90)[0]
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        print(out)
        assert p.returncode == 0, "the agent exited %d" % p.returncode
        j = last_json(out)
        assert j["reconnects"] >= 1 and j["claims_unknown"] + j["releases_unknown"] > 0, j  # it did give up meanwhile
        assert j["placed"] > 3000, "placed nothing after the failover? %r" % j
        assert j["max_gap_s"] < 12, "no commit for %.1f s after the failover" % j["max_gap_s"]


@case
def cli_redis_start_in_failover():
    """Processes started while a master is down and its replica not promoted yet (the
    slot map still names the dead master; issue 30, fifth review, defect 5): `rusk agent
    --recount`, a 2 s `rusk agent` and a 2 s `rusk run --no-init`, each given the dead
    master and a live one as seeds (both orders), started at once after the kill, wait the
    failover out and succeed (exit 0, recounts clean). Before, each was refused at its
    start as bad input: `cannot connect to 127.0.0.1:P (Connection refused)`, exit 2. Then
    the promoted replica killed too (its shard gone for good): an agent started with
    --failover-ms 1500 gives up as an outage, exit 1 (not 2), saying so."""
    for attempt in (1, 2):
        with Cluster() as cl:
            why = start_in_failover_once(cl)
        if why is None:
            return
        # seen in 2 of 3 full long runs (loaded), never alone, before shard_ready read the
        # state on the replica itself: the promoted replica without the init (a failover
        # of the loaded cluster before the kill is the cause found so far); said with the
        # nodes' failovers, and tried once more
        assert attempt == 1, why
        print("first attempt: %s; again on a fresh cluster" % why)


def shard_ready(cl):
    """(victim, alive, replica, why) for cli_redis_start_in_failover: victim serves
    partition 0, alive another partition, replica is victim's replica; why is None when
    every partition's state is there, victim is a master whose replica is linked and
    acknowledges (WAIT 1), and replica holds every partition of victim's shard (READONLY
    reads there), else what is not so."""
    masters = [cl.master_of_partition(p) for p in range(10)]
    victim = masters[0]
    alive = [q for q in masters if q != victim][0]
    gone = [q for q in range(10) if cli(cl, "exists", "rusk:{p%d}:mach" % q) != "1"]
    if gone:
        return victim, alive, 0, "partitions %s missing" % gone
    role = subprocess.run(["redis-cli", "-p", str(victim), "role"], capture_output=True,
                          text=True, timeout=10).stdout.split()
    if len(role) < 4 or role[0] != "master":
        return victim, alive, 0, "%d's role: %r" % (victim, role)
    replica = int(role[3])
    theirs = subprocess.run(["redis-cli", "-p", str(replica), "role"], capture_output=True,
                            text=True, timeout=10).stdout.split()
    if theirs[:4] != ["slave", "127.0.0.1", str(victim), "connected"]:
        return victim, alive, replica, "%d's role: %r" % (replica, theirs)
    acked = subprocess.run(["redis-cli", "-p", str(victim), "WAIT", "1", "10000"],
                           capture_output=True, text=True, timeout=20).stdout.strip()
    if acked != "1":
        return victim, alive, replica, "WAIT 1 on %d: %r" % (victim, acked)
    shard = [q for q in range(10) if masters[q] == victim]
    got = subprocess.run(["redis-cli", "-p", str(replica)], capture_output=True, text=True,
                         timeout=10, input="READONLY\n" + "".join(
                             "EXISTS rusk:{p%d}:mach\n" % q for q in shard)).stdout.split()
    if got != ["OK"] + ["1"] * len(shard):
        return victim, alive, replica, "partitions %s missing on the replica %d: %r" % (
            shard, replica, got)
    return victim, alive, replica, None


def node_events(cl):
    """Each node's log lines on failures, failovers, role changes and full syncs."""
    keep = re.compile(r"FAIL|ailover|Configuration change|Full resync|Flushing|"
                      r"Connection with|Marking node|Cluster state changed")
    lines = []
    for i in range(6):
        try:
            with open(os.path.join(cl.dir, str(cl.port + i), "redis.log")) as f:
                lines += ["%d %s" % (cl.port + i, ln.rstrip()) for ln in f if keep.search(ln)]
        except OSError as e:
            lines.append("%d: %s" % (cl.port + i, e))
    return "\n".join(lines)


def start_in_failover_once(cl):
    """cli_redis_start_in_failover on cluster cl: None, or why the state was missing."""
    rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
    # The state whole on the replica to be promoted, read there, at the kill: Redis
    # replicates asynchronously, and a master that stalls past the node timeout (2 s; a
    # loaded machine) is failed over while it still acknowledges writes, lost when it
    # learns of it and resyncs from its promoted replica (docs/redis.md, Faults; a
    # loaded ASan run lost the init so). Not this case's subject: written again then.
    for tries in range(5):
        victim, alive, replica, why = shard_ready(cl)
        if why is None:
            break
        print("before the kill (try %d): %s" % (tries + 1, why))
        if "missing" in why:
            rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        time.sleep(1)
    assert why is None, "the cluster not ready for the kill: %s" % why
    url1 = "redis://127.0.0.1:%d,127.0.0.1:%d" % (alive, victim)
    url2 = "redis://127.0.0.1:%d,127.0.0.1:%d" % (victim, alive)
    out = "cli_redis_start_in_failover.json"
    argvs = [["agent", "--backend", url1] + SHAPE.split() + ["--recount"],
             ["agent", "--backend", url2] + SHAPE.split() +
             ["--duration-s", "2", "--task-ms", "200", "--rate", "500"],
             ["run", "--backend", url1] + SHAPE.split() +
             ["--rus-per-machine", "16", "--no-init", "--agents", "2", "--sync", "state",
              "--rate", "300", "--duration-s", "2", "--task-ms", "200", "--json", out]]
    subprocess.run([script(), "kill", cl.dir, str(victim)], check=True, timeout=10)
    t0 = time.monotonic()
    procs = [subprocess.Popen([ARGS.rusk] + a, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for a in argvs]
    role = subprocess.run(["redis-cli", "-p", str(replica), "role"], capture_output=True,
                          text=True, timeout=10).stdout
    res = [finish(p, timeout=120) for p in procs]
    print("ended %.1f s after the kill" % (time.monotonic() - t0))
    if any("lost by the cluster" in text or "no rusk state" in text for text, rc in res):
        return ("a process found the state lost after the promotion although the replica "
                "had it at the kill (rusk:{p0}:mach: %r; cluster nodes:\n%s\nthe nodes' "
                "failovers and syncs:\n%s)" % (cli(cl, "exists", "rusk:{p0}:mach"),
                                               cli(cl, "cluster", "nodes"), node_events(cl)))
    # started before the promotion (2 s node timeout, then an election): else this
    # case tested nothing
    assert role.startswith("slave"), "replica %d promoted before the starts" % replica
    for (text, rc), a in zip(res, argvs):
        assert rc == 0, "rusk %s exited %d during a failover" % (" ".join(a[:2]), rc)
    match(r"recount: 10 partitions: held [0-9]+, free [0-9]+, mismatch 0", res[0][0])
    check_placed(last_json(res[1][0]))
    assert run_json(out)["tasks"]["submitted"] > 0, "the run submitted nothing"
    match(r"held 0, free 32000, mismatch 0", recount(cl).out)
    # the shard gone for good: an outage past --failover-ms, exit 1, not bad input
    subprocess.run([script(), "kill", cl.dir, str(replica)], check=True, timeout=10)
    r = rusk(["agent", "--backend", url1] + SHAPE.split() +
             ["--duration-s", "1", "--failover-ms", "1500"], status=1)
    # the other masters answered this process or not (cli_redis_recount_master_paused)
    match(r"(the cluster did not answer for [0-9.]+ s: unreachable or failing over|master "
          r"127\.0\.0\.1:[0-9]+ did not answer for [0-9.]+ s while the others did)", r.out)
    return None


def start_proc(argv):
    """rusk argv started now (stdout and stderr together)."""
    return subprocess.Popen([ARGS.rusk] + argv, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def stop_at_start(argv, wait_s):
    """rusk argv, sent SIGTERM after wait_s s: it must stop at once with a line saying so,
    exit 3 (as at a signal anywhere else); its output."""
    p = start_proc(argv)
    time.sleep(wait_s)
    assert p.poll() is None, "rusk %s ended before the signal" % argv[0]
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    out, rc = finish(p, timeout=60)
    took = time.monotonic() - t0
    assert rc == 3, "rusk %s exited %d at a SIGTERM while waiting (3 expected)" % (argv[0], rc)
    match(r"stopped by SIGTERM while waiting for the cluster at the start \(.*\): nothing "
          r"taken", out)
    assert took < 15, "rusk %s took %.1f s to stop" % (argv[0], took)
    return out


@case
def cli_redis_seed_paused():
    """The only seed of --backend paused (SIGSTOP: it accepts connections, answers nothing):
    an outage, not bad input. An agent waits --failover-ms for it, then exits 1 saying the
    cluster did not answer ("unreachable or failing over"), as a start in a failover does;
    one whose seed resumes meanwhile goes on and places tasks, exit 0; a SIGTERM during the
    wait stops an agent or a `rusk run` at once, exit 3 with a line saying so. Before: exit
    2 after 2 s, "127.0.0.1:P: Resource temporarily unavailable", read as bad input. A
    seed nothing listens at stays bad input (exit 2: cannot connect ... refused)."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        # a replica: pausing it fails nothing over (a master paused past the node timeout
        # would be)
        seed = int(subprocess.check_output([script(), "replica-of", cl.dir, str(cl.port)],
                                           text=True, timeout=10).strip())
        url = "redis://127.0.0.1:%d" % seed
        agent = ["agent", "--backend", url] + SHAPE.split() + ["--duration-s", "1"]
        subprocess.run([script(), "pause", cl.dir, str(seed)], check=True, timeout=10)
        try:
            t0 = time.monotonic()
            r = rusk(agent + ["--failover-ms", "3000"], status=1)
            took = time.monotonic() - t0
            match(r"127\.0\.0\.1:%d: .*\(the cluster did not answer for [0-9.]+ s: "
                  r"unreachable or failing over" % seed, r.out)
            assert took >= 3, "gave up after %.1f s, before --failover-ms 3000" % took
            stop_at_start(agent + ["--failover-ms", "60000"], 1.5)
            stop_at_start(["run", "--backend", url] + SHAPE.split() +
                          ["--rus-per-machine", "16", "--no-init", "--rate", "100",
                           "--duration-s", "1"], 1.5)
            p = start_proc(agent + ["--failover-ms", "60000"])
            time.sleep(1.5)
        finally:
            subprocess.run([script(), "resume", cl.dir, str(seed)], check=True, timeout=10)
        out, rc = finish(p, timeout=90)
        assert rc == 0, "the agent whose seed resumed exited %d" % rc
        check_placed(last_json(out))
        assert last_json(out)["placed"] > 0, out
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)
    r = rusk("agent --backend redis://127.0.0.1:1 %s --duration-s 1" % SHAPE, status=2)
    match(r"cannot connect to 127\.0\.0\.1:1 \(Connection refused\)", r.out)


@case
def cli_redis_start_outage_signal():
    """A SIGTERM while a process started during an outage waits for it (a shard gone, its
    master and replica killed: the agent waits up to --failover-ms, a `rusk run` its 30 s)
    stops it at once with a line saying so, exit 3, nothing taken; before, the default
    action killed it (exit 143, no output)."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        victim = cl.master_of_partition(0)
        alive = [q for q in (cl.master_of_partition(p) for p in range(10)) if q != victim][0]
        replica = int(subprocess.check_output([script(), "replica-of", cl.dir, str(victim)],
                                              text=True, timeout=10).strip())
        for port in (victim, replica):
            subprocess.run([script(), "kill", cl.dir, str(port)], check=True, timeout=10)
        url = "redis://127.0.0.1:%d" % alive
        stop_at_start(["agent", "--backend", url] + SHAPE.split() +
                      ["--duration-s", "1", "--failover-ms", "60000"], 2)
        stop_at_start(["agent", "--backend", url] + SHAPE.split() +
                      ["--recount", "--failover-ms", "60000"], 2)
        stop_at_start(["run", "--backend", url] + SHAPE.split() +
                      ["--rus-per-machine", "16", "--no-init", "--rate", "100",
                       "--duration-s", "1"], 2)


def replicas(cl):
    """The cluster's replicas' ports (pausing one fails nothing over)."""
    return [int(subprocess.check_output([script(), "replica-of", cl.dir, str(m)], text=True,
                                        timeout=10).strip())
            for m in sorted({cl.master_of_partition(p) for p in range(10)})]


def init_pause_replicas(cl):
    """An empty state written, then the three replicas paused: they and a --backend URL
    that names only them (every seed stuck); the caller resumes them (pause_all)."""
    rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
    seeds = replicas(cl)
    pause_all(cl, seeds, True)
    return seeds, "redis://" + ",".join("127.0.0.1:%d" % q for q in seeds)


def pause_all(cl, ports, on):
    for port in ports:
        subprocess.run([script(), "pause" if on else "resume", cl.dir, str(port)],
                       check=on, timeout=10)


@case
def cli_redis_start_seeds_paused_stop():
    """Every seed of --backend paused (three replicas, SIGSTOP), a SIGTERM 1.5 s into the
    start: `rusk agent` and `rusk run` stop within a second (exit 3, "stopped by SIGTERM
    while waiting for the cluster at the start"), measured 0.25 s. Before, a signal did not
    end hiredis's blocking read of a seed's CLUSTER SLOTS (it reads again on EINTR, its 2 s
    timeout afresh): the stop was heard between rounds of seed attempts, 4.0 s late with
    two seeds (6 s with three)."""
    with Cluster() as cl:
        seeds, url = init_pause_replicas(cl)
        try:
            for argv in (["agent", "--backend", url] + SHAPE.split() +
                         ["--duration-s", "1", "--failover-ms", "60000"],
                         ["run", "--backend", url] + SHAPE.split() +
                         ["--rus-per-machine", "16", "--no-init", "--rate", "100",
                          "--duration-s", "1"]):
                p = start_proc(argv)
                time.sleep(1.5)
                assert p.poll() is None, "rusk %s ended before the signal" % argv[0]
                t0 = time.monotonic()
                p.send_signal(signal.SIGTERM)
                out, rc = finish(p, timeout=60)
                took = time.monotonic() - t0
                print("rusk %s: exit %d %.2f s after the SIGTERM" % (argv[0], rc, took))
                assert rc == 3, "rusk %s exited %d (3 expected)" % (argv[0], rc)
                match(r"stopped by SIGTERM while waiting for the cluster at the start \(.*"
                      r"\(stopped after [0-9.]+ s of waiting for a seed to answer\)\): "
                      r"nothing taken", out)
                assert took < 1.5, "rusk %s took %.2f s to hear the SIGTERM" % (argv[0], took)
        finally:
            pause_all(cl, seeds, False)


@case
def cli_redis_start_seeds_paused_bound():
    """Every seed paused (three replicas): `rusk agent --failover-ms 2000` gives up at the
    bound, exit 1 "the cluster did not answer", within 1.5 s of it (measured 2.1 s in all).
    Before, the bound was looked at only between rounds of seed attempts, each seed's read
    waiting its 2 s: 6.0 s (a 3 s bound with one seed ended at 4.1 s)."""
    with Cluster() as cl:
        seeds, url = init_pause_replicas(cl)
        try:
            t0 = time.monotonic()
            r = rusk(["agent", "--backend", url] + SHAPE.split() +
                     ["--duration-s", "1", "--failover-ms", "2000"], status=1)
            took = time.monotonic() - t0
        finally:
            pause_all(cl, seeds, False)
        print("gave up after %.2f s" % took)
        match(r"\(the cluster did not answer for [0-9.]+ s: unreachable or failing over", r.out)
        assert took >= 2, "gave up after %.2f s, before --failover-ms 2000" % took
        assert took < 3.5, "gave up %.2f s after the start, --failover-ms 2000" % took


@case
def cli_redis_start_stuck_seed_bound():
    """A master stuck (SIGSTOP; no failover: cluster-node-timeout 60 s) named first among
    the seeds: `rusk agent --failover-ms 3000` ends at the bound, exit 1 (measured 3.3 s).
    Before, 15 s (a 30 s bound: 42 s): the open's CLUSTER SLOTS, CLUSTER MYID and SCRIPT
    LOAD each waited their 2 s read on the stuck master outside any bound, again on the
    lease-keeping connection's open, and the state check's bound counted from its own call
    (the lease claim's answer had ended the outage)."""
    with Cluster(node_timeout_ms=60000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        meta = cl.master_of_tag("{meta}")
        victim = [q for q in (cl.master_of_partition(p) for p in range(10)) if q != meta][0]
        url = "redis://127.0.0.1:%d,127.0.0.1:%d" % (victim, meta)
        subprocess.run([script(), "pause", cl.dir, str(victim)], check=True, timeout=10)
        try:
            t0 = time.monotonic()
            r = rusk(["agent", "--backend", url] + SHAPE.split() +
                     ["--duration-s", "1", "--failover-ms", "3000"], status=1)
            took = time.monotonic() - t0
        finally:
            subprocess.run([script(), "resume", cl.dir, str(victim)], timeout=10)
        print("gave up after %.2f s" % took)
        match(r"127\.0\.0\.1:%d: .*\(master 127\.0\.0\.1:%d did not answer for [0-9.]+ s "
              r"while the others did" % (victim, victim), r.out)
        assert took >= 3, "gave up after %.2f s, before --failover-ms 3000" % took
        assert took < 6, "gave up %.2f s after the start, --failover-ms 3000" % took


@case
def cli_redis_start_paused_first_seed():
    """A paused replica named first among the seeds, a healthy master second, a bound under
    2 s: `rusk agent --failover-ms 1500` and its `--recount` start through the second seed
    (exit 0; the first seed gets half the bound, the rest is left for the start). Before,
    the first seed's CLUSTER SLOTS read spent the whole bound and the second seed was never
    asked: exit 1, "the cluster did not answer" (tenth review, D3)."""
    with Cluster(node_timeout_ms=60000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        stuck = replicas(cl)[0]
        url = "redis://127.0.0.1:%d,127.0.0.1:%d" % (stuck, cl.master_of_tag("{meta}"))
        pause_all(cl, [stuck], True)
        try:
            for extra in (["--duration-s", "1"], ["--recount"]):
                t0 = time.monotonic()
                r = rusk(["agent", "--backend", url] + SHAPE.split() +
                         ["--failover-ms", "1500"] + extra)
                print("%s: exit 0 after %.2f s" % (extra[0], time.monotonic() - t0))
                if extra[0] == "--recount":
                    assert last_json(r.out)["ok"], r.out
                else:
                    check_placed(last_json(r.out))
        finally:
            pause_all(cl, [stuck], False)


BIG = "--machines 1000000 --rus-per-machine 16 --partitions 2"


@case
def cli_redis_init_big_small_bound():
    """A big init (1M machines, 16M RUs in two partitions, seconds of writes) under a small
    `--failover-ms 200` on a healthy cluster is written whole (exit 0, the recount clean):
    the start's bound is for finding the cluster, not for the writes to one that answers.
    Before, the bound cut the writes half-way: exit 1, the state half-written (the tenth
    review, D2: 1M machines under 1000 ms, 5 of 5)."""
    with Cluster() as cl:
        t0 = time.monotonic()
        rusk("agent --backend %s %s --init-only --failover-ms 200" % (cl.url, BIG))
        print("written in %.2f s" % (time.monotonic() - t0))
        r = rusk("agent --backend %s %s --recount --failover-ms 200" % (cl.url, BIG))
        j = last_json(r.out)
        assert j["ok"] and j["held"] == 0, r.out
        match(r"free 16000000, mismatch 0", r.out)


def wait_init_marker(cl, p):
    """Waits (20 ms polls, 30 s at most) until the init in process p has set
    rusk:{meta}:init (naming its pid); returns its value."""
    meta = cl.master_of_tag("{meta}")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 30:
        v = subprocess.run(["redis-cli", "-p", str(meta), "get", "rusk:{meta}:init"],
                           capture_output=True, text=True, timeout=10).stdout.strip()
        if v.startswith("pid %d on " % p.pid):
            return v
        assert p.poll() is None, "the init ended before it was seen under way"
        time.sleep(0.02)
    raise Fail("rusk:{meta}:init never set by the init")


@case
def cli_redis_init_cut_refused():
    """An init stopped half-way leaves the state marked (rusk:{meta}:init: who, since when)
    and every start that checks the state refuses it, naming that init, exit 1, until an
    init writes it whole: a SIGINT in the writes (exit 3, "stopped by SIGINT while writing
    the state"), then a SIGKILL; `rusk agent`, `rusk run --no-init` and `--recount` are
    refused; a new init clears the mark and the recount is clean. A second init while the
    first (a live process of this host) writes is refused, exit 2, naming it (the eleventh
    review: both wrote, and the first to end cleared the other's mark). Before, the cut init
    left partitions of the old state beside new ones and the starts went on, or named the
    cut state "lost by the cluster" (the tenth review, D2). The init is frozen (SIGSTOP)
    once its mark is seen and the signal sent before it goes on (SIGCONT), so the cut falls
    in its writes however fast the machine."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, BIG))
        for sig in (signal.SIGINT, signal.SIGKILL):
            p = start_proc(["agent", "--backend", cl.url] + BIG.split() + ["--init-only"])
            who = wait_init_marker(cl, p)
            # Frozen within a poll of its mark (its writes take seconds), so the stop comes
            # in the writes on any machine: before, a fast or loaded one could let the
            # init end between the poll and the signal (CI: exit 0, the state whole).
            p.send_signal(signal.SIGSTOP)
            if sig == signal.SIGINT:
                # a second init meanwhile: refused while the first (live, this host) writes
                r = rusk(["agent", "--backend", cl.url, "--init-only"] + BIG.split(), status=2)
                match(r"an init \(pid %d on .*, live\) is writing the state" % p.pid, r.out)
                assert p.poll() is None, "the first init ended before the second was refused"
            p.send_signal(sig)
            p.send_signal(signal.SIGCONT)
            out, rc = finish(p, timeout=60)
            print("init stopped by %s: exit %d (%s)" % (sig.name, rc, who))
            if sig == signal.SIGINT:
                assert rc == 3, "the init exited %d on SIGINT (3 expected): %s" % (rc, out)
                match(r"stopped by SIGINT while writing the state \(.*half-written", out)
            else:
                assert rc == -signal.SIGKILL, rc
            match(r"pid %d on " % p.pid, who)
            refused = r"the rusk state at .* is not whole: an init \(pid %d on .*\) began " \
                      r"writing it and has not finished" % p.pid
            for argv, st in ((["agent", "--duration-s", "1"], 1),
                             (["run", "--no-init", "--duration-s", "1", "--rate", "100"], 1),
                             (["agent", "--recount"], 1)):
                r = rusk([argv[0], "--backend", cl.url] + BIG.split() + argv[1:], status=st)
                match(refused, r.out)
        rusk("agent --backend %s %s --init-only" % (cl.url, BIG))
        meta = cl.master_of_tag("{meta}")
        v = subprocess.run(["redis-cli", "-p", str(meta), "exists", "rusk:{meta}:init"],
                           capture_output=True, text=True, timeout=10).stdout.strip()
        assert v == "0", "rusk:{meta}:init left after a whole init: %r" % v
        r = rusk("agent --backend %s %s --recount" % (cl.url, BIG))
        assert last_json(r.out)["ok"], r.out


def forced_under(proc, ready, force, timeout):
    """Once ready() returned (proc live), 2 s more, then the init `force` (exit 0): proc's
    output and exit status once it ended (killed after timeout s: a failure)."""
    try:
        ready()
        assert proc.poll() is None, "the process ended before the forced init"
        time.sleep(2)
        rusk(force)
        return finish(proc, timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


@case
def cli_redis_force_init_under_live():
    """A forced init of a big state (1M machines in 16 partitions, seconds of writes) under a
    live `rusk agent`, then under a live `rusk run --no-init`. The agent sees the new epoch
    while the init may still write, stops (exit 1, "written afresh") and releases what it
    took in the new state (the recount after: held 0); the run is not stopped (exit 0), its
    ledger finds the commits the new state dropped, and the recount is clean. Each
    partition is swapped in whole by one script, so neither meets a partition half-written.
    Before (the eleventh review): the agent, its check meeting the mark of the init under
    way, called the new state "not this agent's" and left 96-448 RUs held (5 of 7), or
    exited 2 "the rusk state is corrupt" between the init's plain writes (1 of 7); the run
    stopped, exit 1, the state "not whole" or "lost by the cluster" (4 of 4)."""
    big = "--machines 1000000 --rus-per-machine 16 --partitions 16".split()
    force = ["agent", "--backend", None, "--init-only", "--force-init"] + big
    with Cluster() as cl:
        force[2] = cl.url
        rusk(["agent", "--backend", cl.url, "--init-only"] + big)
        a = start_proc(["agent", "--backend", cl.url] + big +
                       ["--duration-s", "30", "--rate", "3000", "--task-ms", "10000",
                        "--lease-ms", "1500"])
        out, rc = forced_under(a, lambda: wait_lease(cl, 0, a), force, 90)
        assert rc == 1, "the agent under a forced init exited %d" % rc
        match(r"was written afresh while this agent ran", out)
        match(r"released the [0-9]+ RUs it took in the new state", out)
        assert "corrupt" not in out and "not this agent's" not in out, out
        match(r"held 0, free 16000000, mismatch 0",
              rusk(["agent", "--backend", cl.url, "--recount"] + big).out)
        out = "cli_redis_force_init_under_live.json"
        p = start_proc(["run", "--backend", cl.url, "--no-init"] + big +
                       ["--duration-s", "10", "--rate", "2000", "--task-ms", "3000",
                        "--json", out])
        # its lease, taken once its setup is done
        text, rc = forced_under(p, lambda: wait_for("the run's lease", lambda: cli(
            cl, "zcard", "rusk:{meta}:live-runs") == "1" or p.poll() is not None, 30), force,
            120)
        assert rc == 0, "the run under a forced init exited %d" % rc
        rd = run_json(out)["redis"]
        print(json.dumps({"ledger": rd["ledger"], "recount": rd["recount"]}))
        assert rd["recount"]["ok"] and rd["recount"]["held_by_run"] == 0, rd["recount"]
        match(r"held 0, free 16000000, mismatch 0",
              rusk(["agent", "--backend", cl.url, "--recount"] + big).out)


@case
def cli_redis_start_lease_kept():
    """The agent's lease kept while its start waits on a stuck master: a partition's master
    (not the {meta} one) paused 7 s (no failover: cluster-node-timeout 60 s) while an agent
    with --lease-ms 3000 starts; it takes its lease, waits in the state check, and renews
    the lease meanwhile on its lease-keeping connection (the loop's mechanism: the waiting
    hook), so rusk:{meta}:alive:0 never disappears once taken (PTTL polled every 100 ms),
    lease_lapsed 0. Before, the lease lapsed about 3 s after it was taken, under a live agent
    about to run (another process could take the id meanwhile), and its first renewal found
    it gone (lease_lapsed 1)."""
    with Cluster(node_timeout_ms=60000) as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        meta = cl.master_of_tag("{meta}")
        victim = [q for q in (cl.master_of_partition(p) for p in range(10)) if q != meta][0]
        subprocess.run([script(), "pause", cl.dir, str(victim)], check=True, timeout=10)
        ttl = []
        try:
            p = start_proc(["agent", "--backend", "redis://127.0.0.1:%d" % meta] +
                           SHAPE.split() + ["--duration-s", "1", "--lease-ms", "3000"])
            t0 = time.monotonic()
            while time.monotonic() - t0 < 7:
                q = subprocess.run(["redis-cli", "-p", str(meta), "pttl",
                                    "rusk:{meta}:alive:0"], capture_output=True, text=True,
                                   timeout=10).stdout.strip()
                ttl.append((round(time.monotonic() - t0, 1), int(q) if q else -3))
                time.sleep(0.1)
        finally:
            subprocess.run([script(), "resume", cl.dir, str(victim)], timeout=10)
        out, rc = finish(p, timeout=90)
        print("PTTL of rusk:{meta}:alive:0 (s, ms): %s" % ttl)
        assert rc == 0, "the agent exited %d" % rc
        j = last_json(out)
        taken = [k for k, (_, v) in enumerate(ttl) if v > 0]
        assert taken, "the lease never taken during the pause: %r" % ttl
        gone = [t for t, v in ttl[taken[0]:] if v <= 0]
        assert not gone, "the lease lapsed at %r s during the start's wait" % gone
        assert j["lease_lapsed"] == 0 and j["lease_kept"] > 0, j
        check_placed(j)


@case
def cli_redis_failover_loss():
    """A failover that loses acknowledged commits for certain: the replica paused, the
    master's replication link closed, 1 s of commits (about 5,000 tasks/s, a sixth of
    them on that shard) acknowledged by the master alone, then the master killed. The
    agent must find the losses in the state after it reconnects, place those tasks again,
    and end with a clean recount: no RU held twice, none leaked."""
    j = failover(False, lag=True, cut=True)
    # found by a ledger pass (re-placed) or, for tasks that ended before a pass read their
    # partition (skipped while its master was unavailable), at their release (an ASan run:
    # all 958 so)
    assert j["lost_total"] > 0, \
        "nothing lost: the failover kept every acknowledged commit (%r)" % j
    assert j["lost_total"] == j["lost"] + j["lost_at_release"], j


# 10,000 RUs: 1,500 tasks/s of 5 s hold 7,500, so the second of commits the failover loses
# holds hundreds on the killed master's shard; random sampling spreads the commits over
# every partition (Latency-first sometimes kept both agents off that shard for the whole
# second, and nothing was lost).
LOSS_SHAPE = "--machines 2000 --partitions 10 --rus-per-machine 5"


@case
def cli_redis_run_failover_loss():
    """rusk run --backend through a failover that loses acknowledged commits for certain
    (the replica paused, its master's replication link cut, then the master killed; tasks
    of 5 s, so that those whose commits were lost still run after the failover): the
    run's ledger check finds tasks whose RUs Redis no longer shows as theirs, revokes them
    and places them again; releases Redis lost are found as orphans and released. Every
    task still ends once, and the recount finds nothing held by the run."""
    with Cluster() as cl:
        victim = cl.master_of_partition(0)
        out = "cli_redis_run_failover_loss.json"
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + LOSS_SHAPE.split() +
                             ["--agents", "2", "--strategy", "random", "--rate", "1500",
                              "--duration-s", "8", "--task-ms", "5000", "--json", out],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            replica = subprocess.check_output([script(), "replica-of", cl.dir, str(victim)],
                                              text=True, timeout=10).strip()
            time.sleep(2.5)
            subprocess.run([script(), "pause", cl.dir, replica], check=True, timeout=10)
            time.sleep(0.2)
            subprocess.run([script(), "cut", cl.dir, str(victim)], check=True, timeout=10)
            time.sleep(1)
            subprocess.run([script(), "kill", cl.dir, str(victim)], check=True, timeout=10)
            subprocess.run([script(), "resume", cl.dir, replica], check=True, timeout=10)
            text = p.communicate(timeout=150)[0]
        finally:
            if p.poll() is None:
                p.kill()
        print(text)
        assert p.returncode == 0, "rusk run exited %d" % p.returncode
        j = run_json(out)
        t, rd = j["tasks"], j["redis"]
        print("failover", json.dumps({"tasks": t, "redis": rd}))
        # the loss is found by a ledger pass (its tasks revoked and placed again) or, when
        # the passes' reads failed through the outage (under ASan: 30 of 110), at release
        assert rd["ledger"]["lost_total"] > 0, "nothing lost: %r" % rd["ledger"]
        assert rd["ledger"]["lost_tasks"] == 0 or rd["ledger"]["revoked"] > 0, rd["ledger"]
        # the master's connections broke and waited for the promoted replica: the links'
        # counters say so (before, rusk run's JSON and summary had none of them)
        assert rd["reconnects"] >= 1 and rd["outage_s"] > 0, rd
        assert rd["outage_sum_s"] >= rd["outage_s"], rd
        match(r"redis link +[1-9][0-9]* reconnects, [0-9]+ redirections \(MOVED/ASK\), "
              r"[0-9]+ pipelines sent again; [0-9.]+ s in outage", text)
        assert t["backlog_end"] == 0, t
        # each task revoked was placed once more, or, revoked after the generator closed the
        # dispatcher, ended REJECTED: one terminal event each either way
        assert (t["committed"] - rd["ledger"]["revoked"] + t["rejected"] == t["submitted"]), \
            (t, rd["ledger"], j["redis_dispatch"])
        assert j["checks"]["counts_add_up"] and j["checks"]["counters_consistent"], j["checks"]
        assert rd["recount"]["ok"] and rd["recount"]["held_by_run"] == 0, rd
        assert rd["recount"]["mismatch"] == 0 and rd["recount"]["partitions_failed"] == 0, rd
        match(r"held 0, free 10000, mismatch 0", rusk("agent --backend %s %s --recount" %
                                                      (cl.url, LOSS_SHAPE)).out)


# What an acknowledged commit lost on failover looks like in the state: the RU free again,
# its owner gone, its generation unchanged (the replica never saw the commit).
LOSE = ("local own = redis.call('HGETALL', KEYS[1]) local n = 0 "
        "for i = 1, math.min(#own, 40), 2 do redis.call('HDEL', KEYS[1], own[i]) "
        "redis.call('SETBIT', KEYS[3], tonumber(own[i]), 1) n = n + 1 end "
        "redis.call('INCR', KEYS[7]) return n")


@case
def cli_redis_run_revoked_after_close():
    """The ledger's revocation after the generator closed the dispatcher (L3). The window
    is made wide: 1 s of arrivals, 600 tasks of 6 s on 400 RUs, so after the close (1 s
    in) 200 tasks stay queued until the first ones end (7 s in), and the run, whose agents
    stop once they placed what they hold, goes on that long. 2.5 s in, up to 20 of
    partition 0's grants are removed from the state as a failover would lose them. The
    next ledger check (once a second) finds exactly those and revokes their tasks, which
    cannot be queued again: each ends REJECTED, one terminal event, counted rejected; the
    queued ones take the RUs freed; the run ends on its own and the recount is clean."""
    with Cluster() as cl:
        out = "cli_redis_run_revoked_after_close.json"
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + RUN_SHAPE.split() +
                             ["--agents", "2", "--strategy", "random", "--rate", "600",
                              "--duration-s", "1", "--task-ms", "6000", "--json", out],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(2.5)
            keys = ["rusk:{p0}:%s" % k for k in ("own", "gen", "free", "mem", "gpu", "rec",
                                                 "ver", "mach")]
            r = subprocess.run(["redis-cli", "-c", "-p", str(cl.port), "eval", LOSE, "8"] +
                               keys, capture_output=True, text=True, timeout=10)
            print("lost injected:", r.stdout.strip())
            n = int(r.stdout.strip())
            text = p.communicate(timeout=60)[0]
        finally:
            if p.poll() is None:
                p.kill()
        print(text)
        assert p.returncode == 0, "rusk run exited %d" % p.returncode
        assert n > 0, "partition 0 held nothing 2.5 s in"
        j = run_json(out)
        t, rd, d = j["tasks"], j["redis"], j["redis_dispatch"]
        print("revoked after close", json.dumps({"tasks": t, "ledger": rd["ledger"],
                                                 "dispatch": d}))
        assert rd["ledger"]["lost_tasks"] == n and rd["ledger"]["revoked"] == n, rd["ledger"]
        assert t["rejected"] == n, (n, t)  # each revoked task ended REJECTED, once
        assert t["committed"] == t["submitted"] and t["backlog_end"] == 0, t
        assert t["committed"] - rd["ledger"]["revoked"] + t["rejected"] == t["submitted"], t
        assert j["checks"]["counts_add_up"] and j["checks"]["counters_consistent"], j["checks"]
        assert rd["recount"]["ok"] and rd["recount"]["held_by_run"] == 0, rd["recount"]
        match(r"held 0, free 400, mismatch 0", rusk("agent --backend %s %s --recount" %
                                                    (cl.url, RUN_SHAPE)).out)


# Acknowledged grants rewritten to another owner (agent 200's, a process that never ran),
# as a failover that lost them and let another holder take the RUs would leave them: up to
# 20 of partition 0's; answers {RUs rewritten, distinct tasks that held them}.
STEAL = ("local own = redis.call('HGETALL', KEYS[1]) local n = 0 local seen = {} local t = 0 "
         "for i = 1, math.min(#own, 40), 2 do "
         "if not seen[own[i + 1]] then seen[own[i + 1]] = true t = t + 1 end "
         "redis.call('HSET', KEYS[1], own[i], '863288426497') n = n + 1 end "
         "redis.call('INCR', KEYS[7]) return {n, t}")


def steal_p0(cl, p):
    """Once partition 0 holds 10 grants of process p (a sanitizer's run starts slower than
    a fixed delay allows), STEAL them; returns (RUs rewritten, tasks that held them)."""
    wait_for("partition 0's grants", lambda: p.poll() is not None or
             int(cli(cl, "hlen", "rusk:{p0}:own") or 0) >= 10, 20)
    keys = ["rusk:{p0}:%s" % k for k in ("own", "gen", "free", "mem", "gpu", "rec", "ver",
                                         "mach")]
    r = subprocess.run(["redis-cli", "-c", "-p", str(cl.port), "eval", STEAL, "8"] + keys,
                       capture_output=True, text=True, timeout=10)
    print("taken:", r.stdout.split())
    n, tasks = (int(x) for x in r.stdout.split())
    return n, tasks


def steal_while(cl, argv):
    """Runs `rusk ARGV...`, STEALs partition 0's grants under it (steal_p0), waits for its
    end (at most 60 s; killed if still running), prints its output and asserts exit 0;
    returns (RUs rewritten, tasks that held them, its output)."""
    p = subprocess.Popen([ARGS.rusk] + argv, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        n, tasks = steal_p0(cl, p)
        text = p.communicate(timeout=60)[0]
    finally:
        if p.poll() is None:
            p.kill()
    print(text)
    assert p.returncode == 0, "rusk %s exited %d" % (argv[0], p.returncode)
    return n, tasks, text


def match_lost_at_release(text, at_release, at_release_rus, tasks, rus):
    """The report's line of commits lost at release and lost in all."""
    match(r"redis lost at release +%d commits \(%d RUs\) whose release Redis refused "
          r"[^\n]*lost in all: %d commits \(%d RUs\)" %
          (at_release, at_release_rus, tasks, rus), text)


@case
def cli_redis_run_lost_at_release():
    """Grants taken from under running tasks of 50 ms (STEAL, once partition 0 holds 10):
    most of those tasks end before the next ledger pass (once a second) sees the loss, and
    learn of it only when Redis refuses their release (not the owner). Each is a lost commit: the ledger's
    lost_tasks plus lost_at_release is the tasks robbed, lost_total_rus the RUs (before: the
    run reported the few the ledger saw, 1 of 16 in the review, and nothing of the rest)."""
    with Cluster() as cl:
        out = "cli_redis_run_lost_at_release.json"
        n, tasks, text = steal_while(cl, ["run", "--backend", cl.url] + RUN_SHAPE.split() +
                                     ["--agents", "2", "--strategy", "random", "--rate",
                                      "1500", "--duration-s", "6", "--task-ms", "50",
                                      "--json", out])
        assert n > 0, "partition 0 held nothing"
        j = run_json(out)
        led = j["redis"]["ledger"]
        print("lost at release", json.dumps(led), "release_not_held",
              j["redis"]["release_not_held"])
        assert led["lost_tasks"] + led["lost_at_release"] == tasks, (n, tasks, led)
        assert led["lost_total"] == tasks and led["lost_total_rus"] == n, (n, tasks, led)
        assert led["lost_rus"] + led["lost_at_release_rus"] == n, (n, led)
        assert led["forced_reclaim"] == {"rus": 0, "tasks": 0}, led
        match_lost_at_release(text, led["lost_at_release"], led["lost_at_release_rus"], tasks,
                              n)
        assert j["redis"]["recount"]["ok"] and j["redis"]["recount"]["held_by_run"] == 0, j


@case
def cli_redis_agent_lost_at_release():
    """rusk agent's grants rewritten to another owner (STEAL, once partition 0 holds 10) while
    its tasks of 300 ms run and its ledger checks only every 60 s: each robbed task learns of
    the loss when Redis refuses its release (not the owner), and is a lost commit:
    lost + lost_at_release is the RUs robbed (one RU a task), lost_total too, and the
    identity placed = released + refused + releases_unknown + lost + held_end holds (before:
    "release refused N, commit lost 0 ... acknowledged commits lost 0")."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, RUN_SHAPE))
        n, tasks, text = steal_while(cl, ["agent", "--backend", cl.url] + RUN_SHAPE.split() +
                                     ["--rate", "300", "--duration-s", "4", "--task-ms",
                                      "300", "--ledger-ms", "60000"])
        assert n > 0 and n == tasks, (n, tasks)
        a = last_json(text)
        print("agent lost at release", json.dumps(a))
        assert a["lost"] + a["lost_at_release"] == n, (n, a)
        assert a["lost_at_release"] > 0 and a["lost_at_release_rus"] == a["lost_at_release"], a
        assert a["lost_total"] == n and a["lost_total_rus"] == n, (n, a)
        assert a["lost_at_release"] <= a["refused"], a
        assert a["placed"] == (a["released"] + a["refused"] + a["releases_unknown"] +
                               a["lost"] + a["held_end"]), a
        match_lost_at_release(text, a["lost_at_release"], a["lost_at_release"], n, n)


@case
def cli_redis_run_forced_reclaim():
    """rusk agent --recount --reclaim-run NS --force while run NS is live: the recount says
    the RUs came from a live run, forced (before: "from dead runs"), and records them in
    rusk:{meta}:forced; the run, whose ledger then finds them gone and whose releases of
    them are refused, names them a forced reclaim and counts no lost commit."""
    with Cluster() as cl:
        out = "cli_redis_run_forced_reclaim.json"
        p = subprocess.Popen([ARGS.rusk, "run", "--backend", cl.url] + RUN_SHAPE.split() +
                             ["--agents", "2", "--rate", "50", "--duration-s", "5",
                              "--task-ms", "4000", "--json", out],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        count = "agent --backend %s %s --recount" % (cl.url, RUN_SHAPE)
        try:
            wait_for("the run's RUs held", lambda: p.poll() is not None or (
                cli(cl, "zcard", "rusk:{meta}:live-runs") == "1" and
                last_json(rusk(count, show=False).out)["held"] > 50), 30)
            assert p.poll() is None, "the run ended"
            ns = int(cli(cl, "zrange", "rusk:{meta}:live-runs", "0", "-1"))
            r = rusk("%s --reclaim-run %d --force" % (count, ns))
            k = int(re_search(r"released ([0-9]+) RUs of run %d \(its lease is live: a "
                              r"forced reclaim" % ns, r.out))
            assert k > 0, r.out
            match(r"reclaimed %d \(0 from dead runs; %d of live run %d, forced\)" % (k, k, ns),
                  r.out)
            assert cli(cl, "hget", "rusk:{meta}:forced", str(ns)) == str(k)
            text = p.communicate(timeout=60)[0]
        finally:
            if p.poll() is None:
                p.kill()
        print(text)
        assert p.returncode == 0, "rusk run exited %d" % p.returncode
        j = run_json(out)
        led = j["redis"]["ledger"]
        print("forced", json.dumps(led))
        assert led["forced_reclaim"]["rus"] == k and led["forced_reclaim"]["tasks"] > 0, led
        assert led["lost_total"] == 0 and led["lost_total_rus"] == 0, led
        match(r"redis forced reclaim +%d RUs of [0-9]+ tasks taken by a forced reclaim of this "
              r"run \(rusk agent --recount --reclaim-run %d --force\): not counted lost" %
              (k, ns), text)


@case
def cli_redis_lost_commit_repair():
    """20 acknowledged commits of a running agent removed from the state as a failover
    would lose them: the agent's periodic ledger check finds exactly those, places the
    tasks again, and at the end everything is released once (recount clean)."""
    with Cluster() as cl:
        rusk("agent --backend %s %s --init-only" % (cl.url, SHAPE))
        p = subprocess.Popen([ARGS.rusk, "agent", "--backend", cl.url] + SHAPE.split() +
                             ["--duration-s", "5", "--task-ms", "600000", "--rate", "1000",
                              "--ledger-ms", "500"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(2)
        keys = ["rusk:{p0}:%s" % k for k in ("own", "gen", "free", "mem", "gpu", "rec", "ver",
                                             "mach")]
        r = subprocess.run(["redis-cli", "-c", "-p", str(cl.port), "eval", LOSE, "8"] + keys,
                           capture_output=True, text=True, timeout=10)
        print("lost injected:", r.stdout.strip())
        n = int(r.stdout.strip())
        out = p.communicate(timeout=60)[0]
        print(out)
        assert p.returncode == 0, "the agent exited %d" % p.returncode
        j = last_json(out)
        assert n == 20, "injected %d" % n
        assert j["lost"] == n and j["replaced"] == n, j
        assert j["refused"] == 0, j
        match(r"held 0, free 32000, mismatch 0", recount(cl).out)


def sh(*argv, check=True):
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, check=check)


# The fixed one-way delays of cli_redis_slow_link, in ms: the first is the baseline.
SLOW_DELAYS_MS = (0, 2, 10)


class SlowLink:
    """A 3+3 cluster behind a link of a fixed one-way delay, for the with-block: .kind
    ("netem" or "delay proxy"), .url, .inside (the command prefix that runs a command on the
    cluster's side: `ip netns exec NS`, or nothing), .set(ms) (the delay from now on; 0 at
    start). Bounded: every command it runs has a timeout; a proxy that ends early ends
    its readline (EOF).

    netem is the first choice: a network namespace of its own, its loopback up, `tc qdisc
    add dev lo root netem delay 0ms`, the cluster inside on ports 7000-7005; set() is `tc
    qdisc change ... netem delay Dms`. Every packet on the loopback (clients, cluster bus,
    replication) waits D ms; a round trip crosses it twice. It needs root, `ip` and `tc`, a
    namespace, and sch_netem. Where any is missing (the development machine's kernel has
    no sch_netem: "Specified qdisc kind is unknown"), tests/redis/delay_proxy.py forwards
    each node's client port from a port of its own (reserved by free-port), delaying each
    chunk by D ms each way in order, and the nodes announce the proxy's ports (cluster.sh
    with RUSK_REDIS_ANNOUNCE; the bus ports stay direct): CLUSTER SLOTS, MOVED and ASK name
    the proxy, so every byte between rusk and a node crosses the delay (so do the replicas'
    streams; the bus does not). No root needed; set() is `delay D` on its stdin."""

    def __init__(self, proxy=False):
        self.proxy_only = proxy  # the delay proxy even where netem is at hand (.rate())

    def __enter__(self):
        need_redis()
        self.dir = tempfile.mkdtemp(prefix="rusk-slow.")
        self.ns, self.proxy, self.inside = None, None, []
        try:
            why = "asked for the proxy" if self.proxy_only else self.netem()
            if why is None:
                self.kind = "netem"
                subprocess.run(self.inside + [script(), "start", self.dir, "7000"],
                               check=True, timeout=180)
                self.url = "redis://127.0.0.1:7000,127.0.0.1:7001"
            else:
                self.kind = "delay proxy"
                print("%s: the delay proxy (tests/redis/delay_proxy.py) instead" % why)
                self.start_proxy()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        print("slow link: %s" % self.kind)
        return self

    def netem(self):
        """None where a namespace with netem on its loopback is made, else why not."""
        if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
            return "netem needs root, ip and tc"
        ns = "rusk-slow-%d" % os.getpid()
        made = sh("ip", "netns", "add", ns, check=False)
        if made.returncode != 0:
            return "ip netns add: %s" % made.stderr.strip()
        self.ns, self.inside = ns, ["ip", "netns", "exec", ns]
        sh(*self.inside, "ip", "link", "set", "lo", "up")
        q = sh(*self.inside, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "0ms",
               check=False)
        if q.returncode == 0:
            return None
        sh("ip", "netns", "del", ns, check=False)
        self.ns, self.inside = None, []
        return "tc qdisc add dev lo root netem: %s" % q.stderr.strip()

    def start_proxy(self):
        # two reservations: the nodes' ports, and the proxy's (its bus range unused)
        base, front = (int(subprocess.check_output([script(), "free-port"], timeout=30))
                       for _ in range(2))
        self.proxy = subprocess.Popen(
            [sys.executable, os.path.join(ARGS.src, "tests", "redis", "delay_proxy.py")] +
            ["%d:%d" % (front + i, base + i) for i in range(6)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proxy.stdout.readline()
        if not line.startswith("ports "):
            raise Fail("delay_proxy.py answered %r, not its ports" % line)
        ports = line.split()[1:]
        env = dict(os.environ, RUSK_REDIS_ANNOUNCE=" ".join(ports))
        subprocess.run([script(), "start", self.dir, str(base)], check=True, timeout=180,
                       env=env)
        self.url = "redis://127.0.0.1:%s,127.0.0.1:%s" % (ports[0], ports[1])

    def set(self, ms):
        if self.proxy is None:
            sh(*self.inside, "tc", "qdisc", "change", "dev", "lo", "root", "netem", "delay",
               "%gms" % ms)
            return
        self.tell("delay", ms)

    def rate(self, kbps):
        """The proxy's bandwidth, KB/s each way per connection (0: none): SlowLink(proxy=True)."""
        self.tell("rate", kbps)

    def tell(self, what, v):
        self.proxy.stdin.write("%s %g\n" % (what, v))
        self.proxy.stdin.flush()
        ans = self.proxy.stdout.readline().strip()
        if ans != "%s %g" % (what, v):
            raise Fail("delay_proxy.py answered %r to `%s %g`" % (ans, what, v))

    def __exit__(self, *exc):
        subprocess.run(self.inside + [script(), "stop", self.dir], timeout=60)
        if self.proxy is not None:
            self.proxy.stdin.close()  # its end of stdin: it exits
            try:
                self.proxy.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proxy.kill()
                self.proxy.wait(timeout=10)
        if self.ns is not None:
            sh("ip", "netns", "del", self.ns, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


@case
def cli_redis_slow_link():
    """A slow link of a fixed delay (SlowLink: netem on a namespace's loopback where the
    kernel has it, else the delay proxy in front of every node; the test prints which ran).
    At each one-way delay D of 0 (the baseline), 2 and 10 ms, on one state: one agent
    process, then two at once (DiffSync, 400 RUs, 500 tasks/s each of 200 ms, 2 s; a
    recount after each), then `rusk run --backend` (default batches). For each: commit
    round trip p50/p99, staleness at commit, conflicts (claims the state refused), placed,
    tasks/s.

    Asserted for every agent at every D: the round trip p50 at least 2D (a commit's
    request and answer each cross the delay) and the staleness at commit at least 2D (the
    view's age counts from the sync's request, whose answer crosses the link both ways);
    conflicts reported; every arrival placed or still waiting, every placement released,
    nothing lost, the recounts clean (slow_agents); at the largest D, the round trip p50
    and the staleness above the baseline's. `rusk run`: its commit pipeline p50 at least
    2D and check_run (all placed, ledger and recount clean). Skipped (77) without
    redis-server or a Redis build."""
    with SlowLink() as link:
        run_in(link.inside, ["agent", "--backend", link.url, "--init-only"] + RUN_SHAPE.split())
        rows = []
        for ms in SLOW_DELAYS_MS:
            link.set(ms)
            label = "%s %g ms" % (link.kind, ms)
            rows.append((ms, [slow_agents(link.inside, link.url, label, n, secs=2)
                              for n in (1, 2)],
                         slow_run(link.inside, link.url, "delay_%g" % ms)))
        print("slow link: %s, one-way delay %s ms" %
              (link.kind, " / ".join("%g" % ms for ms in SLOW_DELAYS_MS)))
        for ms, by_n, rj in rows:
            for js in by_n:
                print_agents("%g ms" % ms, js)
            print_run("%g ms" % ms, rj)
        for ms, by_n, rj in rows:
            for j in sum(by_n, []):
                assert j["rtt_p50_ms"] >= 2 * ms, "one-way %g ms: round trip %s" % (ms, j)
                assert j["staleness_ms"] >= 2 * ms, "one-way %g ms: staleness %s" % (ms, j)
                assert "conflicts" in j and j["lost_total"] == 0, j
            p50 = rj["redis"]["commit_rtt_us"]["p50"] / 1e3
            assert p50 >= 2 * ms, "one-way %g ms: rusk run's commit p50 %.3f ms" % (ms, p50)
        (_, base, _), (top, slow, _) = rows[0], rows[-1]
        for b, s in zip(base, slow):
            assert min(j["rtt_p50_ms"] for j in s) > max(j["rtt_p50_ms"] for j in b), (b, s)
            stale = [sum(j["staleness_ms"] for j in js) / len(js) for js in (b, s)]
            print("%d agent(s): round trip p50 x%.1f, staleness %.2f -> %.2f ms at %g ms" %
                  (len(b), min(j["rtt_p50_ms"] for j in s) / max(j["rtt_p50_ms"] for j in b),
                   stale[0], stale[1], top))
            assert stale[1] > stale[0], (b, s)


@case
def cli_redis_slow_link_big_reply():
    """Big requests and replies over a link of low bandwidth (the delay proxy at 500 KB/s
    each way). First an init of 100,000 machines (about 5 MB of writes) is written whole
    (exit 0, the recount clean): its machines go in HSETs of 4,096, each answered as it is
    executed; before (the eleventh review), one HSET of all machines was answered only once
    all of it had crossed, past a read's timeout, and the init sent it again and again until
    its bound (exit 1 after 30 s). Then one partition of 1M machines (a snapshot's `:free`
    of 2 MB; written at full speed), one `rusk agent` for 6 s at 20 tasks/s: each snapshot
    takes about 4 s to arrive,
    twice a read's timeout, but is never silent for one, so the agent places (exit 0,
    placed > 0, no reconnect, no outage) and its recount is clean. A read's timeout is one
    of silence, pushed on by every byte that arrives: when it was one of total time (the
    tenth review, D1), no snapshot was ever read whole: 0 placed, 29 reconnects, a 30 s
    outage."""
    shape = "--machines 1000000 --rus-per-machine 16 --partitions 1".split()
    with SlowLink(proxy=True) as link:
        # the init's writes over the slow link: 100,000 machines, about 5 MB
        small = "--machines 100000 --rus-per-machine 16 --partitions 1".split()
        link.rate(500)
        t0 = time.monotonic()
        out = run_in([], ["agent", "--backend", link.url, "--init-only"] + small)
        print("500 KB/s: the init of 100,000 machines written in %.1f s"
              % (time.monotonic() - t0))
        match(r"wrote the empty state at .*: 1 partitions, 100000 machines", out)
        assert last_json(run_in([], ["agent", "--backend", link.url, "--recount"] +
                                small))["ok"]
        link.rate(0)
        run_in([], ["agent", "--backend", link.url, "--init-only"] + shape)
        link.rate(500)
        t0 = time.monotonic()
        r = run_in([], ["agent", "--backend", link.url, "--duration-s", "6", "--rate", "20"] +
                   shape)
        j = last_json(r)
        print("500 KB/s: placed %d in %.1f s, %d syncs, %d reconnects, outage %.1f s"
              % (j["placed"], time.monotonic() - t0, j["syncs"], j["reconnects"],
                 j["outage_s"]))
        assert j["placed"] > 0 and j["reconnects"] == 0 and j["outage_s"] == 0, j
        check_placed(j)
        link.rate(0)
        r = run_in([], ["agent", "--backend", link.url, "--recount"] + shape)
        assert last_json(r)["ok"], r


# cli_redis_slow_link_tbf: a token bucket (tbf) on a namespace's loopback, MTU 1500
# (RUSK_SLOW_RATE overrides the rate, e.g. 8mbit).
SLOW_RATE = os.environ.get("RUSK_SLOW_RATE", "4mbit")
SLOW_TBF = ["tbf", "rate", SLOW_RATE, "burst", "5kb", "latency", "250ms"]


@case
def cli_redis_slow_link_tbf():
    """A slow link of low bandwidth: a network namespace of its own, the cluster inside
    it, two agent processes (DiffSync, 400 RUs, 500 tasks/s each of 200 ms) run first over
    the plain loopback (the baseline), then over a shaped one, in the same namespace; then
    `rusk run --backend` (default batches) over the shaped link. For each: commit round
    trip p50/p99, staleness at commit, conflicts (claims the state refused), placed, and a
    clean recount.

    The shaping: a token bucket, `tbf rate 4mbit burst 5kb latency 250ms`, with the
    loopback's MTU set to 1500 for both runs. tbf is a slow link of low bandwidth, not a
    delay (cli_redis_slow_link has the delay): a packet waits only for its turn behind the
    bytes queued before it (an idle link passes a lone packet at once); the agents' syncs,
    commits and releases, and the cluster's own gossip and replication (about 1.3 Mbit/s
    idle), share the 4 Mbit/s, so the link is busy and every round trip queues. Asserted:
    the shaped agents' round trip p50 at least 2x the baseline's measured here, every
    arrival placed or still waiting at the end, no release refused, and the recounts
    clean. Skipped (77) where namespaces or tbf are not permitted (not root, no
    `ip`/`tc`)."""
    need_redis()
    ns = "rusk-tbf-%d" % os.getpid()
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        print("needs root, ip and tc: skipped")
        raise SystemExit(SKIP)
    made = sh("ip", "netns", "add", ns, check=False)
    if made.returncode != 0:
        print("ip netns add: %s: skipped" % made.stderr.strip())
        raise SystemExit(SKIP)
    d = tempfile.mkdtemp(prefix="rusk-tbf.")
    inside = ["ip", "netns", "exec", ns]
    try:
        sh(*inside, "ip", "link", "set", "lo", "up")
        # an MTU of 1500 as on a real link: tbf's bucket must hold a whole packet
        sh(*inside, "ip", "link", "set", "lo", "mtu", "1500")
        t = sh(*inside, "tc", "qdisc", "add", "dev", "lo", "root", *SLOW_TBF, check=False)
        if t.returncode != 0:
            print("tc qdisc add ... tbf: %s: skipped" % t.stderr.strip())
            raise SystemExit(SKIP)
        sh(*inside, "tc", "qdisc", "del", "dev", "lo", "root")
        subprocess.run(inside + [script(), "start", d, "7000"], check=True, timeout=180)
        url = "redis://127.0.0.1:7000"
        run_in(inside, ["agent", "--backend", url, "--init-only"] +
               RUN_SHAPE.split())
        base = slow_agents(inside, url, "baseline")
        base_run = slow_run(inside, url, "baseline")
        sh(*inside, "tc", "qdisc", "add", "dev", "lo", "root", *SLOW_TBF)
        slow = slow_agents(inside, url, "shaped")
        slow_run_j = slow_run(inside, url, "shaped")
        print(sh(*inside, "tc", "-s", "qdisc", "show", "dev", "lo").stdout)
        print("slow link: %s (a rate limit, not a delay; MTU 1500)" % " ".join(SLOW_TBF))
        for label, js, rj in (("baseline", base, base_run), ("shaped", slow, slow_run_j)):
            print_agents(label, js)
            print_run(label, rj)
        b50 = max(j["rtt_p50_ms"] for j in base)
        s50 = min(j["rtt_p50_ms"] for j in slow)
        print("shaped / baseline round trip p50: %.1fx" % (s50 / b50))
        assert s50 >= 2 * b50, "shaped p50 %.3f ms, baseline %.3f ms" % (s50, b50)
    finally:
        subprocess.run(inside + [script(), "stop", d], timeout=60)
        sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree(d, ignore_errors=True)


def print_agents(label, js):
    print("%-8s %d agent%s: rtt p50 %s ms, p99 %s ms; staleness %s ms; conflicts %s of %s "
          "claims; placed %s of %s arrived (%s waiting at the end); tasks/s %s; claims a "
          "batch %s; partition syncs %s"
          % (label, len(js), "s" * (len(js) > 1),
             "/".join("%.3f" % j["rtt_p50_ms"] for j in js),
             "/".join("%.3f" % j["rtt_p99_ms"] for j in js),
             "/".join("%.2f" % j["staleness_ms"] for j in js),
             "/".join(str(j["conflicts"]) for j in js),
             "/".join(str(j["claims"]) for j in js),
             "/".join(str(j["placed"]) for j in js),
             "/".join(str(j["arrived"]) for j in js),
             "/".join(str(j["backlog_end"]) for j in js),
             "/".join("%.0f" % j["tasks_per_s"] for j in js),
             "/".join("%.1f" % (j["claims"] / max(j["batches"], 1)) for j in js),
             "/".join(str(j["syncs"]) for j in js)))


def print_run(label, rj):
    rd = rj["redis"]
    print("%-8s rusk run: commit pipeline p50 %.3f ms, p99 %.3f ms; staleness mean %.2f ms, "
          "p99 %.2f ms; conflicts %d; placed %d of %d submitted; %d commit round trips, %d "
          "batches" %
          (label, rd["commit_rtt_us"]["p50"] / 1e3, rd["commit_rtt_us"]["p99"] / 1e3,
           rj["staleness_ms"]["mean"], rj["staleness_ms"]["p99"], rj["conflicts"]["total"],
           rj["tasks"]["committed"], rj["tasks"]["submitted"], rd["commit_round_trips"],
           rd["batches"]))


def slow_agents(inside, url, label, n=2, secs=3):
    """n agent processes at once (--agents n), then a recount; their JSON lines."""
    argv = [inside + [ARGS.rusk, "agent", "--backend", url] + RUN_SHAPE.split() +
            ["--agents", str(n), "--agent-id", str(i), "--rate", "500", "--duration-s",
             str(secs), "--task-ms", "200"] for i in range(n)]
    procs = [subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for a in argv]
    try:
        outs = [p.communicate(timeout=90)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    js = []
    for p, out in zip(procs, outs):
        print("%s:\n%s" % (label, out))
        assert p.returncode == 0, "an agent exited %d" % p.returncode
        j = last_json(out)
        # every task accounted for: each arrival placed once or still waiting at the end,
        # each claim granted, refused (a conflict) or of unknown outcome; every placement
        # released (none refused), but those a ledger check dropped
        assert j["arrived"] + j["replaced"] == j["placed"] + j["backlog_end"], j
        assert j["claims"] == j["placed"] + j["conflicts"] + j["claims_unknown"], j
        assert j["released"] == j["placed"] - j["replaced"] and j["refused"] == 0, j
        assert j["placed"] > 50 and j["orphans"] == 0, j
        js.append(j)
    r = run_in(inside, ["agent", "--backend", url, "--recount"] + RUN_SHAPE.split())
    match(r"held 0, free 400, mismatch 0", r)
    return js


def slow_run(inside, url, label):
    """rusk run --backend (joins the state; --commit-batch 32, the default) and check_run."""
    out = "cli_redis_slow_link_%s.json" % label
    text = run_in(inside, ["run", "--backend", url, "--no-init"] + RUN_SHAPE.split() +
                  ["--agents", "2", "--rate", "300", "--duration-s", "2", "--task-ms", "300",
                   "--json", out])
    print(text)
    j = run_json(out)
    check_run(j, text, "%s run" % label)
    return j


def run_in(prefix, args):
    p = subprocess.run(prefix + [ARGS.rusk] + args, capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    if p.returncode != 0:
        raise Fail("rusk %s: exit %d\n%s" % (" ".join(args), p.returncode, out))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
