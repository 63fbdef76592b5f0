/* SPDX-License-Identifier: MIT */
/*
 * `rusk run --backend redis://HOST:PORT[,...]`: the run's generator, dispatcher, agents,
 * strategies and report over a master state on Redis Cluster (issue 30; ParSync §7's
 * schedulers committing to resource managers). A feature of the run (runstate.h):
 *
 *   setup  opens the state from the main thread for the cluster the run built (every
 *          partition's keys, docs/redis.md): connects, checks --wait against the shards'
 *          replicas and, unless --no-init or --force-init, that no live agent or run uses
 *          the state (their leases), and only then writes the empty state (or, with
 *          --no-init, checks it is there with this shape, as `rusk agent` without --init):
 *          a refused run writes nothing. It takes a run lease (rusk:{meta}:live-runs,
 *          renewed each second, removed at the end) and attaches the state to the cluster
 *          (rusk_state_attach_: the kernel's remote, each thread on its own connection, a
 *          hiredis context being one thread's): every agent thread syncs its view from
 *          Redis and commits there first, every thread that ends a task releases there
 *          after the local mirror. --commit-batch B (default 32) sets the agents' batches
 *          (kernel/remote.h "Batches").
 *   second once a second, the ledger check (ledger_check, L1-L4): tasks whose acknowledged
 *          commits Redis lost are revoked and placed again; RUs Redis holds for this run
 *          that no task of it holds (lost releases, unanswered commits) are released.
 *          Within a budget (LEDGER_BUDGET_MS per pass: "Outages" below), each pass resuming
 *          where the last one stopped (ledger_check). Then the
 *          automatic reclaim (auto_reclaim, unless --no-auto-reclaim): the RUs of every
 *          `rusk agent` whose lease expired and of every other run whose run lease expired
 *          (processes killed) are released, so a killed agent's RUs come back about a
 *          lease after its death without a recount by hand; a budget of the same size.
 *   ok     after the run (every thread joined, every task ended: the dispatcher's stop),
 *          the releases put off while their master was unavailable sent (--unavailable-ms:
 *          kernel/remote.h "Unavailable partitions"; rusk_remote_drain_, within DRAIN_MS),
 *          a last automatic reclaim, then recounts every partition from the main thread:
 *          no RU whose free mark disagrees with its owner (mismatch), and no RU still held
 *          by a task id of this run (dispatcher handles, RUSK_DISPATCH_ID_BASE and up;
 *          other processes' tasks, `rusk agent`'s, are counted apart), after a last ledger
 *          pass. The run's checks line says NO otherwise, and when a partition could not
 *          be read (the state unreachable: "Outages" below), but after a stop signal (not
 *          done, exit 3).
 *   json / print: the remote's counters (connections, snapshots, commit round trips and
 *          their p50/p99, claims lost, releases, errors), the links' (reconnects,
 *          redirections, pipelines resent, time in outage: every connection's, the main
 *          one's too, run_link), the reclaim and the recount.
 *   free   detaches the remote (closes every thread's connection) and the main one.
 *
 * Several `rusk run`s per state: each one's task ids are its dispatcher's handles, the same
 * numbers in every run, so setup takes a namespace from Redis (rusk_redis_run_ns_: INCR
 * rusk:{meta}:runs, 1 and up) and the remote sends its owners as ns << 40 | handle
 * (kernel/backend.h "Owner ids"). "This run's" RUs, to the ledger and the recount, are
 * those whose owner is in its namespace; other runs' and `rusk agent`s' (namespace 0, ids
 * (agent + 1) << 32 | sequence) are never revoked, released or counted as its own.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runstate.h"
#include "state/open.h"

struct drv_redis {
	const char *spec; /* --backend as shown: its password masked */
	const char *url;  /* --backend as given: what opens the state */
	char shown[512];
	rusk_state main; /* the main thread's connection: the init and the recount */
	bool attached, counted, ok;
	uint64_t held, held_run, free_rus, mismatch;
	uint32_t parts_failed;
	uint32_t parts_unavail; /* of parts_failed: their master marked unavailable */
	bool waived;  /* the recount not done: interrupted during an outage (drv_redis_ok) */
	bool corrupt; /* a call answered RUSK_ECORRUPT: the run stopped at it (redis_second) */
	/* a partition's state gone since the start (state_gone: lost by the cluster): the run
	 * stopped at it, exit 1 as the start's check; errors_seen: the calls failed so far */
	bool gone;
	uint64_t errors_seen;
	char why[768];
	rusk_remote_stats st;
	/* The ledger check (ledger_check): scratch [RUs of the cluster], and what it found. */
	uint32_t *l_rus, *l_gens;
	uint64_t *l_owners, *l_remote, *l_orph; /* l_orph [RUs]: an orphan seen once (L4) */
	rusk_ru_info *l_before;
	rusk_bk_lease *l_back;
	int *l_rcs;
	/* A pass's block of partitions (LEDGER_BLOCK: one pipelined read), the cursor where
	 * the next pass starts (a pass that ran out of budget leaves the rest to the next),
	 * and l_orph_n [RUs]: how many reads in a row saw the orphan l_orph marks (L4). */
	uint32_t *l_ps;
	size_t *l_off;
	int *l_prc;
	uint8_t *l_orph_n;
	uint32_t l_next, l_sweep_parts, l_sweep_passes;
	uint64_t ledger_checks, ledger_failed, lost_rus, lost_tasks, orphans;
	uint64_t ledger_unavail; /* of ledger_failed: their master marked unavailable */
	/* Partitions: read, not read for lack of budget (left to the next pass), the most a
	 * pass failed and the fewest it read (while the run went), and the most passes one
	 * sweep over every partition took. */
	uint64_t parts_read, parts_deferred, pass_failed_max, pass_read_min, sweep_passes_max;
	/* At the end (recount, lost_at_release): commits lost that the ledger's passes did not
	 * see (their tasks ended first: their release refused), the RUs a forced reclaim of
	 * this run took (rusk:{meta}:forced), and the lost commits in all, those apart. */
	uint64_t at_release, at_release_rus, forced_rus, forced_tasks, lost_total, lost_total_rus;
	/* REJECTED events delivered on the main thread while it revokes (L3 after the
	 * dispatcher was closed: the task cannot be queued again); in_ledger (relaxed) says
	 * when, ledger_tid on which thread. Counted by redis_event, read by the report. */
	uint64_t rejected;
	uint32_t in_ledger;
	pthread_t ledger_tid;
	uint64_t revoked;       /* the dispatcher's revocations at the end (the ledger's, L3) */
	uint64_t ns;            /* this run's owner namespace (rusk_redis_run_ns_) */
	bool run_leased;        /* its entry in rusk:{meta}:live-runs (rusk_redis_run_lease_) */
	rusk_dispatch_stats ds; /* the dispatcher's counts at the end */
	/* The automatic reclaim (auto_reclaim): this process's token for the reclaim lock,
	 * and what it released of dead processes (agents whose lease expired, runs whose run
	 * lease expired), over its passes. */
	char token[96];
	uint64_t reclaimed, reclaimed_runs, reclaim_agents, reclaim_runs, reclaim_passes;
	uint64_t reclaim_busy, reclaim_failed;
	/* passes put off: the {meta} shard had not answered steadily for a lease (an outage
	 * ended lately; rusk_redis_set_reclaim_lease_) */
	uint64_t reclaim_unsteady;
	/* The recount after the run could not read every partition, or found RUs still held
	 * by this run's tasks: its live-runs entry is kept, left to lapse, so that the
	 * automatic reclaim of the live processes frees them (redis_free). */
	bool left_held;
	size_t put_off_end; /* releases still put off after the end's drain (recount) */
};

/* Whether remote owner o is one of this run's tasks (a dispatcher handle in its namespace). */
static bool own_owner(const drv_redis *X, uint64_t o)
{
	return rusk_owner_ns_(o) == X->ns && rusk_owner_task_(o) >= RUSK_DISPATCH_ID_BASE &&
	       rusk_owner_task_(o) <= RUSK_TASK_ID_MAX;
}

/*
 * Outages (the cluster unreachable: docs/redis.md "Faults"). Every connection of the run
 * waits out an outage at most the failover bound (30 s, state/redis.h: counted from when
 * the connection lost the cluster, not per call), and gives up at once when a stop signal
 * came (redis_stopping, each connection's hook): the agents, the completions and the
 * dispatcher's stop then end their tasks locally, and what Redis still holds is the
 * recount's to report. The main thread's reads (the ledger's: pipelined blocks of
 * partitions; the recount's: one call per partition) have a budget per pass, not per
 * call: the ledger's once a second LEDGER_BUDGET_MS (the sampler waits no longer: before,
 * each partition waited out the outage in turn, and a run whose cluster stopped 2 s in was
 * still going after 210 s, deaf to its first SIGTERM), the last ledger pass and the
 * recount END_BUDGET_MS each. A partition whose read failed counts as could not be read
 * (ledger.failed, recount.partitions_failed; the periodic ledger leaves the partitions
 * its budget did not reach to its next pass, ledger.parts_deferred, the last pass counts
 * them failed), and a recount that could not read
 * one is not ok: the checks say NO, exit 1; when a signal stopped the run, the recount was
 * not done rather than failed (as the other checks of an interrupted run): exit 3.
 * One master stuck while others answer (--unavailable-ms, as the agents' connections): the
 * main connection marks it too, and its partitions are skipped at once while it is marked
 * (ledger.unavailable, recount.partitions_unavailable: counted unread, named), so the
 * passes read the other masters' partitions within their budgets.
 */
#define LEDGER_BUDGET_MS 500
#define END_BUDGET_MS    5000
/* The end's wait for the releases put off (a master unavailable: kernel/remote.h), sent
 * again every 100 ms: a budget as the end's other steps. Not the failover bound: with the
 * whole cluster gone after one master was marked, its releases are put off again at each
 * try (the marks of a connection that reaches nobody stand), and the run's end waited 30 s
 * more (cli_redis_run_outage). What is left is left to the reclaim (left_held). */
#define DRAIN_MS         END_BUDGET_MS

static int redis_stopping(void *arg)
{
	(void)arg;
	return drv_stop_signal() != 0; /* a relaxed load: any thread */
}

static uint64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A pass's budget: the main connection's deadline (state/redis.h), returned. With `bound`,
 * no read or connect of the pass outlasts what is left of it either (rusk_redis_set_bound_,
 * 100 ms at least): the end's steps (the last ledger pass, the reclaim, the recount) and
 * the {meta} calls of each second (the reclaim, the run lease's renewal), so that a master
 * stuck since the main connection last met it costs a step its budget, not its read
 * timeout (--unavailable-ms): with --unavailable-ms 20000 and the {meta} master stopped
 * mid-run, the main thread (the sampler, the ledger, the end) waited 20 s on its first
 * read there, a 3 s run ending after 21.6 s. The ledger's passes of the run keep a deadline
 * only (a healthy master's slow answer late in their 500 ms is not cut: it would be marked
 * unavailable).
 */
static uint64_t pass_begin(drv_redis *X, uint32_t budget_ms, bool bound)
{
	uint64_t deadline = clock_ns() + (uint64_t)budget_ms * 1000000ull;
	rusk_redis_set_stop_(X->main.redis, redis_stopping, NULL);
	if (bound)
		rusk_redis_set_bound_(X->main.redis, deadline);
	else
		rusk_redis_set_deadline_(X->main.redis, deadline);
	return deadline;
}

/* Whether the pass reads no more partitions: its budget spent, or a partition already
 * unread in it and a stop signal (a call would give up at its first failed attempt). */
static bool pass_over(uint64_t deadline, bool failed)
{
	return clock_ns() >= deadline || (failed && drv_stop_signal() != 0);
}

/* The run lease's term: ten of its one-second renewals, so that a slow second (a ledger
 * check on a loaded machine) never lets it lapse; a run killed keeps other inits refused
 * (without --force-init) for at most this long. */
#define RUN_LEASE_MS 10000

/* The run lease's term: RUN_LEASE_MS, or RUSK_RUN_LEASE_MS from the environment (2000 to
 * 600000 ms; tests shorten it, so that a killed run's lease expires in seconds). */
static uint32_t run_lease_ms(void)
{
	const char *e = getenv("RUSK_RUN_LEASE_MS");
	char *end = NULL;
	unsigned long v = e != NULL ? strtoul(e, &end, 10) : 0;
	return e != NULL && end != e && *end == '\0' && v >= 2000 && v <= 600000 ? (uint32_t)v
	                                                                         : RUN_LEASE_MS;
}

static bool redis_on(const run *R)
{
	return R->redis != NULL;
}

static int redis_setup(run *R, const drv_setup_in *in)
{
	const run_cfg *cfg = &R->cfg;
	if (cfg->backend == NULL)
		return 0;
	drv_redis *X = calloc(1, sizeof *X);
	if (X == NULL) {
		fprintf(stderr, "rusk: --backend: out of memory\n");
		return RUSK_EXIT_NOMEM;
	}
	X->url = cfg->backend;
	X->spec = rusk_redis_mask_url_(cfg->backend, X->shown, sizeof X->shown);
	X->ledger_tid = pthread_self(); /* the main thread: the ledger's (before any other) */
	R->redis = X;
	char err[1536] = "";
	/* Connect only, then the checks, then the state written (or checked with --no-init):
	 * a refused run writes nothing. --wait N for more replicas than a shard has (every
	 * WAIT there would wait out --wait-ms), and an init under live `rusk agent`s or runs
	 * (their RUs would vanish under them; --force-init overrides) are bad input. */
	/* A seed that does not answer in time is an outage, waited out up to the failover
	 * bound (state/redis.h's 30 s), then exit 1; a stop signal ends the wait (exit 3). */
	int rc = rusk_state_open_wait_(X->url, R->c, RUSK_REDIS_CONNECT, 30000, redis_stopping,
	                               NULL, &X->main, err, sizeof err);
	if (rc == RUSK_OK) /* the checks' calls wait out an outage: a stop ends them too */
		rusk_redis_set_stop_(X->main.redis, redis_stopping, NULL);
	if (rc == RUSK_OK)
		rc = rusk_state_check_wait_(&X->main, X->spec, cfg->wait, err, sizeof err);
	if (rc == RUSK_OK && !cfg->no_init && !cfg->force_init)
		rc = rusk_state_init_guard_(&X->main, X->spec, -1,
		                            "stop them first, or pass --no-init to join the state "
		                            "(--force-init writes it anyway: the agents stop)",
		                            err, sizeof err);
	/* The cluster flags go with the state; a mismatch names the ones that differ. */
	char flags[512];
	cli_cluster_describe(in->cc, R->c, flags, sizeof flags);
	bool writing = false; /* a stop now leaves the state half-written */
	if (rc == RUSK_OK) {
		rusk_redis_set_flags_(X->main.redis, flags);
		writing = !cfg->no_init;
		/* --no-init: an init under way, or stopped half-way, first (not whole) */
		rc = cfg->no_init ? rusk_redis_init_unfinished_(X->main.redis, err, sizeof err)
		                  : RUSK_OK;
		if (rc == RUSK_OK)
			rc = cfg->no_init ? rusk_redis_state_check_(X->main.redis, err, sizeof err)
			                  : rusk_redis_state_write_(X->main.redis, err, sizeof err);
	}
	if (rc == RUSK_ESHAPE) {
		size_t u = strlen(err);
		snprintf(err + u, sizeof err - u, " (this command line: %s)", flags);
	}
	const char *unrep = rc == RUSK_OK && !cfg->no_init
	                            ? rusk_redis_init_unreplicated_(X->main.redis)
	                            : NULL;
	if (unrep != NULL) /* written: a warning, not a failure (docs/redis.md, Faults) */
		fprintf(stderr, "rusk: warning: --backend %s: %s\n", X->spec, unrep);
	if (rc != RUSK_OK) {
		/* The cluster unreachable past the failover bound (a failover at the start): an
		 * outage, exit 1; what the cluster answered (or no seed at all): bad input. */
		int sig = drv_stop_signal();
		bool outage = sig == 0 && rc == RUSK_EIO &&
		              rusk_redis_outage_(X->main.redis, err, sizeof err); /* NULL: 0 */
		if (sig != 0 || rc == RUSK_ESTOPPED)
			fprintf(stderr, "rusk: stopped by %s while %s (%s)%s\n",
			        sig == SIGINT   ? "SIGINT"
			        : sig == SIGHUP ? "SIGHUP"
			                        : "SIGTERM",
			        writing ? "writing the state"
			                : "waiting for the cluster at the start",
			        err, writing ? "" : ": nothing taken");
		else
			fprintf(stderr, "rusk: %s\n", err);
		return rc == RUSK_ENOMEM                 ? RUSK_EXIT_NOMEM
		       : sig != 0 || rc == RUSK_ESTOPPED ? RUSK_EXIT_INTERRUPTED
		       : outage || rc == RUSK_EAGAIN     ? RUSK_EXIT_FAIL
		                                         : RUSK_EXIT_USAGE;
	}
	/* --wait: every connection's commit and release pipelines end with WAIT (the main
	 * one's too: the ledger's releases) */
	rusk_state_opts so = {(int)cfg->wait, (int)cfg->wait_ms, redis_stopping, NULL,
	                      (int)cfg->unavail_ms};
	if (cfg->wait > 0)
		rusk_redis_set_wait_(X->main.redis, so.wait_replicas, so.wait_ms);
	rc = rusk_state_attach_(X->url, R->c, &so, err, sizeof err);
	if (rc != RUSK_OK) {
		fprintf(stderr, "rusk: %s\n", err);
		return rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
	}
	X->attached = true;
	/* Owner ids of this run's own (kernel/backend.h): another `rusk run` on the state has
	 * the same handles, never the same namespace. */
	rc = rusk_redis_run_ns_(X->main.redis, &X->ns);
	if (rc != RUSK_OK || rusk_remote_set_owner_ns_(R->c, X->ns) != RUSK_OK) {
		fprintf(stderr, "rusk: --backend %s: taking a run namespace: %s\n", X->spec,
		        rc != RUSK_OK ? rusk_redis_last_error_(X->main.redis) : "refused");
		return RUSK_EXIT_USAGE;
	}
	/* The run's lease (rusk:{meta}:live-runs): another process's init sees this run live
	 * and refuses (rusk_state_init_guard_). Renewed every second (redis_second); if the
	 * main thread is held longer than RUN_LEASE_MS (a failover), it lapses meanwhile. */
	rc = rusk_redis_run_lease_(X->main.redis, X->ns, run_lease_ms());
	if (rc == RUSK_ECORRUPT) { /* a key of another type: the run would go unprotected */
		fprintf(stderr, "rusk: --backend %s: taking the run's lease: %s\n", X->spec,
		        rusk_redis_last_error_(X->main.redis));
		return RUSK_EXIT_USAGE;
	}
	X->run_leased = rc == RUSK_OK;
	/* the automatic reclaim believes an absent lease only after a run lease of the {meta}
	 * shard answering this connection without a gap */
	rusk_redis_set_reclaim_lease_(X->main.redis, run_lease_ms());
	snprintf(X->token, sizeof X->token, "rusk run, namespace %" PRIu64 ", pid %ld", X->ns,
	         (long)getpid());
	/* Batches (kernel/remote.h): the agents decide this many tasks, then commit them
	 * together; their releases go once per loop turn. */
	rusk_remote_set_batch_(R->c, cfg->commit_batch);
	/* The main connection marks a stuck master as the agents' do (--unavailable-ms, from
	 * here: the start's checks above wait out an outage): its partitions are then skipped
	 * by the ledger, the reclaim and the end's recount (unread, named), the others read.
	 * Before, each pass waited ~2 s per read on the stuck master and the end's recount
	 * spent its budget on the first partition: 10 of 10 unread, a 5 s run ended at 32 s. */
	if (cfg->unavail_ms > 0)
		rusk_redis_set_unavailable_ms_(X->main.redis, (int)cfg->unavail_ms);
	/* The start is over: its bound (the failover bound from the first try, every read and
	 * connect of its calls within it: rusk_state_open_wait_) lifted. */
	rusk_redis_set_bound_(X->main.redis, 0);
	return 0;
}

/*
 * The ledger check, once a second while the run goes and once after it (the main thread,
 * on its own connection): the local array is the ledger of what this run's tasks hold
 * (remote.h: an RU is held locally only after Redis granted it to the same task, and freed
 * locally before it is freed in Redis). Per partition:
 *
 *  (L1) every RU's local owner and generation is read first, then Redis's owners and
 *       generations (one round trip), then the local record again;
 *  (L2) lost: an RU whose local record is the same before and after, held by a task of
 *       this run, and whose Redis owner differs. Its grant happened before the first read
 *       (local after remote), and its release had not begun by the second (local before
 *       remote), so Redis must have shown it as that task's unless it lost the commit (a
 *       failover: replication is asynchronous, docs/redis.md);
 *  (L3) the task is then revoked (rusk_dispatch_revoked, as for a failed machine): its other
 *       RUs go back, locally and in Redis (the lost RU's release is refused there and
 *       counted), REVOKED is delivered and it is queued again and placed afresh, so no RU
 *       is ever held twice and the task still ends once;
 *  (L4) orphan: an RU Redis shows held by a task of this run, under the same owner and
 *       generation at ORPHAN_READS reads of its partition in a row (a second or more
 *       apart), while the local array did not hold it for that task at any of them: a
 *       release Redis lost, or a commit whose answer never came. It is released in Redis
 *       with that owner and generation (the script refuses it if either moved on). A
 *       commit in flight or a deferred release lasts a loop turn, not seconds: one
 *       sighting, or two, may be a release on its way; if one ever outlasted them all,
 *       the release it makes is refused later (counted) and L2 revokes the task: the RU
 *       is still held once. After the run (end != 0: every thread joined, every task
 *       ended) nothing is in flight and the local array holds nothing, so what Redis
 *       still shows for this run is released at once; the tests assert that this finds
 *       nothing in a run without failover.
 *
 * A pass reads partitions in blocks of LEDGER_BLOCK (one pipelined call each: one
 * pipeline per node) from where the last pass stopped, until every partition was read
 * once or its budget is spent; the next pass resumes at the first partition not read. So
 * every partition is checked within ceil(partitions / partitions read per pass) passes,
 * where a pass that started at partition 0 each time never reached the last ones when
 * the budget ran short. The end's pass reads every partition.
 */
#define LEDGER_BLOCK 32
#define ORPHAN_READS 4

/* L2-L4 of partition p: local records in l_before (by RU), Redis's n owners at rus/own/
 * gens. */
static void ledger_part(run *R, uint32_t p, const uint32_t *rus, const uint64_t *own,
                        const uint32_t *gens, size_t n, bool end)
{
	drv_redis *X = R->redis;
	rusk_cluster *c = R->c;
	rusk_partition_info pi;
	if (rusk_cluster_partition(c, p, &pi) != RUSK_OK)
		return;
	uint64_t *remote = X->l_remote + pi.first_ru;
	const rusk_ru_info *before = X->l_before + pi.first_ru;
	memset(remote, 0, sizeof *remote * pi.rus);
	for (size_t k = 0; k < n; k++)
		if (rus[k] - pi.first_ru < pi.rus)
			remote[rus[k] - pi.first_ru] = own[k];
	uint64_t last = 0, hi = X->ns << RUSK_OWNER_NS_SHIFT;
	for (uint32_t i = 0; i < pi.rus; i++) {
		uint64_t o = before[i].owner; /* a local id; Redis has hi | o */
		if (end || o < RUSK_DISPATCH_ID_BASE || o == RUSK_OWNER_NONE ||
		    remote[i] == (hi | o))
			continue; /* at the end every task has ended: nothing to revoke */
		rusk_ru_info now; /* L2: the same record after Redis's answer */
		if (rusk_ru_state(c, pi.first_ru + i, &now) != RUSK_OK || now.owner != o ||
		    now.gen != before[i].gen)
			continue;
		X->lost_rus++;
		X->lost_tasks += o != last;
		last = o;
		/* L3 (a task revoked after the close is REJECTED here: redis_event) */
		rusk_store32(&X->in_ledger, 1, RUSK_RELAXED); /* this thread's own flag */
		rusk_dispatch_revoked(o, (rusk_lease){pi.first_ru + i, now.gen}, R->d);
		rusk_store32(&X->in_ledger, 0, RUSK_RELAXED);
	}
	/* L4: Redis's holders of this run (its namespace: never another run's or an agent's)
	 * that the local array does not hold. An RU not seen so is no longer a suspect. */
	for (uint32_t i = 0; i < pi.rus; i++)
		if (X->l_orph[pi.first_ru + i] != 0 && !own_owner(X, remote[i]))
			X->l_orph[pi.first_ru + i] = 0;
	size_t nb = 0;
	for (size_t k = 0; k < n; k++) {
		uint32_t ru = rus[k], i = ru - pi.first_ru;
		uint64_t o = own[k], t = rusk_owner_task_(o);
		if (i >= pi.rus || !own_owner(X, o))
			continue;
		rusk_ru_info now;
		if (before[i].owner == t || rusk_ru_state(c, ru, &now) != RUSK_OK ||
		    now.owner == t || rusk_remote_put_off_(c, o, ru)) {
			X->l_orph[ru] = 0; /* held, or its release put off (sent again later) */
			continue;
		}
		uint64_t mark = t ^ ((uint64_t)gens[k] << 40) ^ 1; /* never 0 */
		if (X->l_orph[ru] != mark) {
			X->l_orph[ru] = mark; /* seen once */
			X->l_orph_n[ru] = 0;
		}
		if (end || ++X->l_orph_n[ru] >= ORPHAN_READS) {
			X->l_back[nb++] = (rusk_bk_lease){o, {ru, gens[k]}};
			X->l_orph[ru] = 0;
		}
	}
	if (nb > 0 &&
	    X->main.bk.ops->release(X->main.bk.self, p, X->l_back, nb, X->l_rcs) == RUSK_OK)
		for (size_t k = 0; k < nb; k++)
			X->orphans += X->l_rcs[k] == RUSK_OK;
}

static void ledger_check(run *R, bool end)
{
	drv_redis *X = R->redis;
	rusk_cluster *c = R->c;
	size_t cap = rusk_cluster_rus(c), c1 = cap ? cap : 1;
	if (X->l_rus == NULL) {
		X->l_rus = malloc(sizeof *X->l_rus * c1);
		X->l_gens = malloc(sizeof *X->l_gens * c1);
		X->l_owners = malloc(sizeof *X->l_owners * c1);
		X->l_remote = malloc(sizeof *X->l_remote * c1);
		X->l_before = malloc(sizeof *X->l_before * c1);
		X->l_orph = calloc(c1, sizeof *X->l_orph);
		X->l_orph_n = calloc(c1, sizeof *X->l_orph_n);
		X->l_back = malloc(sizeof *X->l_back * c1);
		X->l_rcs = malloc(sizeof *X->l_rcs * c1);
		X->l_ps = malloc(sizeof *X->l_ps * LEDGER_BLOCK);
		X->l_off = malloc(sizeof *X->l_off * (LEDGER_BLOCK + 1));
		X->l_prc = malloc(sizeof *X->l_prc * LEDGER_BLOCK);
		if (X->l_rus == NULL || X->l_gens == NULL || X->l_owners == NULL ||
		    X->l_remote == NULL || X->l_before == NULL || X->l_orph == NULL ||
		    X->l_orph_n == NULL || X->l_back == NULL || X->l_rcs == NULL ||
		    X->l_ps == NULL || X->l_off == NULL || X->l_prc == NULL) {
			X->ledger_failed++;
			free(X->l_rus);
			X->l_rus = NULL;
			return; /* tried again next second (the rest are freed at the end) */
		}
	}
	X->ledger_checks++;
	rusk_thread_register(); /* rusk_dispatch_revoked: a registered thread */
	uint32_t np = rusk_cluster_partitions(c);
	uint64_t deadline = pass_begin(X, end ? END_BUDGET_MS : LEDGER_BUDGET_MS, end);
	bool failed = false;
	uint32_t next = end ? 0 : X->l_next % (np ? np : 1), done = 0;
	uint64_t read = 0, failed_n = 0;
	while (done < np) {
		if (pass_over(deadline, failed)) {
			/* Not read (budget): the next pass starts here; at the end there is none.
			 */
			if (end)
				X->ledger_failed += np - done;
			else
				X->parts_deferred += np - done;
			break;
		}
		uint32_t nb = np - done < LEDGER_BLOCK ? np - done : LEDGER_BLOCK;
		for (uint32_t j = 0; j < nb; j++) {
			uint32_t p = (next + j) % np;
			rusk_partition_info pi;
			X->l_ps[j] = p;
			if (rusk_cluster_partition(c, p, &pi) != RUSK_OK)
				continue;
			for (uint32_t i = 0; i < pi.rus; i++) /* L1: local first */
				rusk_ru_state(c, pi.first_ru + i, &X->l_before[pi.first_ru + i]);
		}
		rusk_redis_owners_many_(X->main.redis, X->l_ps, nb, X->l_rus, X->l_owners,
		                        X->l_gens, cap, X->l_off, X->l_prc);
		for (uint32_t j = 0; j < nb; j++) {
			if (X->l_prc[j] != RUSK_OK) {
				X->ledger_failed++; /* a failover under way: the next pass tries
				                       again */
				/* its master marked (skipped, nothing sent): not checked */
				X->ledger_unavail += rusk_redis_part_unavailable_(X->main.redis,
				                                                  X->l_ps[j]) == 1;
				failed_n++;
				failed = true;
				continue;
			}
			read++;
			size_t o0 = X->l_off[j], o1 = X->l_off[j + 1];
			ledger_part(R, X->l_ps[j], X->l_rus + o0, X->l_owners + o0, X->l_gens + o0,
			            o1 - o0, end);
		}
		next = (next + nb) % np;
		done += nb;
	}
	X->parts_read += read;
	if (!end) {
		X->l_next = next;
		if (failed_n > X->pass_failed_max)
			X->pass_failed_max = failed_n;
		if (X->ledger_checks == 1 || read < X->pass_read_min)
			X->pass_read_min = read;
		X->l_sweep_parts += done;
		X->l_sweep_passes++;
		if (X->l_sweep_parts >= np) {
			if (X->l_sweep_passes > X->sweep_passes_max)
				X->sweep_passes_max = X->l_sweep_passes;
			X->l_sweep_parts = 0;
			X->l_sweep_passes = 0;
		}
	}
	rusk_redis_set_deadline_(X->main.redis, 0);
	rusk_thread_unregister();
}

/* REJECTED on the ledger's thread during a revocation (in_ledger): a task revoked after the
 * close. Other threads read in_ledger too, and only count when it is their own. */
static void redis_event(run *R, rusk_dispatch_event *ev)
{
	drv_redis *X = R->redis;
	if (ev->kind == RUSK_EV_REJECTED && rusk_load32(&X->in_ledger, RUSK_RELAXED) &&
	    pthread_equal(pthread_self(), X->ledger_tid))
		rusk_faa64(&X->rejected, 1, RUSK_RELAXED);
}

uint64_t drv_redis_rejected(const run *R)
{
	return R->redis != NULL ? rusk_load64(&R->redis->rejected, RUSK_RELAXED) : 0;
}

/*
 * The automatic reclaim (unless --no-auto-reclaim), from the main thread on its own
 * connection within a pass's budget: once a second after the ledger check, and once after
 * the run before the recount. The RUs of every `rusk agent` whose lease expired (an agent
 * killed) and of every other run whose run lease expired (a run killed) are released
 * (rusk_redis_reclaim_dead_: one round trip when nobody is dead; a live process's RUs are
 * never released, and of several reclaimers one releases each RU). This run's own
 * namespace is never taken for dead (its lease may lapse while a failover holds this
 * thread). A pass that failed is tried again the next second; none follows a ledger pass
 * that could not read a partition (an outage: the second's sampling waits no longer).
 */
/* A meta call answered RUSK_ECORRUPT (a meta key of another type, named in the message):
 * the run stops as for a corrupt partition (redis_second), exit 2. */
static void meta_corrupt(run *R, const char *what)
{
	drv_redis *X = R->redis;
	if (X->corrupt)
		return;
	fprintf(stderr, "rusk: --backend %s: %s: %s: stopping the run\n", X->spec, what,
	        rusk_redis_last_error_(X->main.redis));
	X->corrupt = true;
	rusk_store32((uint32_t *)&R->stop, 1, RUSK_RELEASE); /* partner: stopping() */
}

static void auto_reclaim(run *R, uint32_t budget_ms)
{
	drv_redis *X = R->redis;
	if (R->cfg.no_auto_reclaim || !X->attached)
		return;
	pass_begin(X, budget_ms, true);
	rusk_redis_reclaim x;
	int rc = rusk_redis_reclaim_dead_(X->main.redis, X->token, -1, X->ns, &x);
	if (rc == RUSK_ECORRUPT)
		meta_corrupt(R, "the automatic reclaim");
	if (rc == RUSK_OK) {
		X->reclaim_busy += (uint64_t)x.busy;
		X->reclaim_unsteady += (uint64_t)x.unsteady;
		X->reclaim_passes += x.passes;
		X->reclaimed += x.reclaimed;
		X->reclaimed_runs += x.from_runs;
		X->reclaim_agents += x.agents_new; /* each dead process once, over the passes */
		X->reclaim_runs += x.runs_new;
	} else {
		X->reclaim_failed++;
	}
	rusk_redis_set_deadline_(X->main.redis, 0);
}

/*
 * Calls failed since the last second (s.errors grew): was a partition's state lost (a
 * snapshot or commit of the agents' connections found it gone, rusk_redis_state_lost_)?
 * The main connection checks every partition's state (one round trip each, within a
 * ledger pass's budget): some gone while others' is there stops the run, says so naming
 * them and exits 1, as rusk agent and the start's check do. Before, the agents' calls
 * failed until the end (a commit's "state is corrupt" stopped it, exit 2). An outage's
 * errors find nothing gone: the run goes on.
 */
static void state_gone(run *R, const rusk_remote_stats *s)
{
	drv_redis *X = R->redis;
	if (!X->attached || X->corrupt || X->gone || s->errors <= X->errors_seen)
		return;
	X->errors_seen = s->errors;
	pass_begin(X, LEDGER_BUDGET_MS, false);
	char err[1536];
	int rc = rusk_redis_state_check_(X->main.redis, err, sizeof err);
	rusk_redis_set_deadline_(X->main.redis, 0);
	if (rc == RUSK_OK || !rusk_redis_state_lost_(X->main.redis))
		return;
	fprintf(stderr, "rusk: %s: stopping the run\n", err);
	X->gone = true;
	rusk_store32((uint32_t *)&R->stop, 1, RUSK_RELEASE); /* partner: stopping() */
}

static void redis_second(run *R, bool idle)
{
	(void)idle;
	drv_redis *X = R->redis;
	if (X->attached && !X->corrupt) {
		/* A damaged key answers every later call the same: the run stops at once (its
		 * tasks end, what it holds is released where the state allows), names the key
		 * and exits 2, as rusk agent does. Before, it went on for ~30 s and exited 0. */
		rusk_remote_stats s;
		rusk_remote_stats_(R->c, &s);
		state_gone(R, &s);
		if (s.corrupt > 0 && !X->gone) {
			char err[512];
			rusk_remote_last_error_(R->c, err, sizeof err);
			fprintf(stderr, "rusk: --backend %s: %s: stopping the run\n", X->spec, err);
			X->corrupt = true;
			rusk_store32((uint32_t *)&R->stop, 1,
			             RUSK_RELEASE); /* partner: stopping() */
		}
	}
	uint64_t failed = X->ledger_failed;
	if (X->attached && R->d != NULL)
		ledger_check(R, false);
	/* A node refused the password on a reconnect (the ledger's reads reach every node
	 * each second): no retry mends it; before, the run waited out --failover-ms. */
	const char *auth = rusk_redis_auth_failed_(X->main.redis);
	if (X->attached && auth != NULL && !X->corrupt) {
		fprintf(stderr, "rusk: --backend %s: %s: stopping the run\n", X->spec, auth);
		X->corrupt = true; /* exit 2 (drv_redis_corrupt) */
		rusk_store32((uint32_t *)&R->stop, 1, RUSK_RELEASE); /* partner: stopping() */
	}
	if (X->attached && X->ledger_failed == failed) /* not in an outage: the sampler waits */
		auto_reclaim(R, LEDGER_BUDGET_MS);
	/* After the ledger, within a budget of its own (pass_begin: a {meta} master newly
	 * stuck costs the sampler that, not --unavailable-ms): in an outage it makes one
	 * attempt and the sampler waits no longer (the lease lapses, documented). */
	if (X->run_leased) {
		pass_begin(X, LEDGER_BUDGET_MS, true);
		if (rusk_redis_run_lease_(X->main.redis, X->ns, run_lease_ms()) == RUSK_ECORRUPT)
			meta_corrupt(R, "renewing the run's lease");
		rusk_redis_set_deadline_(X->main.redis, 0);
	}
}

static uint64_t minus(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/*
 * Commits lost at release (after the run, from recount): a task whose acknowledged claim
 * Redis lost (a failover) or a forced reclaim took, and that ended before the next ledger
 * pass (L2) saw it, finds out only when its release is refused as not held (another owner,
 * free, stale: remote.c release_not_held). Before, such a run reported 1 lost commit while
 * 16 releases had been refused. Each RU the ledger found lost is refused once too (the
 * revoked task's release): those are taken off. A forced reclaim of this run (rusk agent
 * --recount --reclaim-run NS --force) records what it took in rusk:{meta}:forced: named
 * apart, not counted lost (RUs exactly; tasks as the reclaimer counted them).
 */
static void lost_at_release(drv_redis *X)
{
	X->at_release_rus = minus(X->st.release_not_held, X->lost_rus);
	X->at_release = minus(X->st.release_not_held_tasks, X->lost_tasks);
	int rc = rusk_redis_forced_get_(X->main.redis, X->ns, &X->forced_rus, &X->forced_tasks);
	if (rc != RUSK_OK)
		X->forced_rus = X->forced_tasks = 0; /* unread: every loss counted as lost */
	if (rc == RUSK_ECORRUPT && !X->corrupt) {    /* a key of another type: exit 2 */
		fprintf(stderr, "rusk: --backend %s: reading the forced reclaims: %s\n", X->spec,
		        rusk_redis_last_error_(X->main.redis));
		X->corrupt = true;
	}
	X->lost_total = minus(X->lost_tasks + X->at_release, X->forced_tasks);
	X->lost_total_rus = minus(X->lost_rus + X->at_release_rus, X->forced_rus);
}

/* The recount after the run (once; main thread, every other thread joined). */
static void recount(const run *R)
{
	drv_redis *X = R->redis;
	if (X->counted)
		return;
	X->counted = true;
	uint64_t failed = X->ledger_failed;
	/* The releases put off (a master unavailable when they were made: kernel/remote.h)
	 * go before the last ledger pass, within DRAIN_MS (that pass does not take them for
	 * orphans: rusk_remote_put_off_; the recount then finds them held, left_held). */
	X->put_off_end = rusk_remote_drain_(R->c, clock_ns() + (uint64_t)DRAIN_MS * 1000000u,
	                                    redis_stopping, NULL);
	if (R->d != NULL) {
		ledger_check((run *)R, true); /* L4 at the end: what Redis still shows */
		rusk_dispatch_stats_get(R->d, &X->ds);
		X->revoked = X->ds.revoked;
	}
	if (X->ledger_failed == failed) /* before the counts: what died is given back */
		auto_reclaim((run *)R, END_BUDGET_MS);
	rusk_remote_stats_(R->c, &X->st);
	uint64_t deadline = pass_begin(X, END_BUDGET_MS, true);
	lost_at_release(X);
	uint32_t np = rusk_cluster_partitions(R->c);
	size_t cap = rusk_cluster_rus(R->c);
	uint32_t *rus = malloc(sizeof *rus * (cap ? cap : 1));
	uint64_t *owners = malloc(sizeof *owners * (cap ? cap : 1));
	if (rus == NULL || owners == NULL) {
		snprintf(X->why, sizeof X->why, "out of memory for the recount");
		free(rus);
		free(owners);
		return;
	}
	char last[256] = "", which[128] = "";
	size_t wu = 0;
	uint32_t unread = 0, skipped = 0;
	bool corrupt = false;
	for (uint32_t p = 0; p < np; p++) {
		rusk_bk_count k;
		size_t n = 0;
		/* Every partition is tried until the budget is spent, also after a stop signal
		 * and a failed one: a call then gives up at its first failed attempt (and a node
		 * that failed since the stop is not tried again), so the partitions of the shards
		 * that answer are read. Before, the first failure after a stop counted every
		 * later partition unread: 10 of 10 named with 6 on the dead shard. */
		if (clock_ns() >= deadline) {
			X->parts_failed++;
			skipped++; /* not read within the budget */
			continue;
		}
		int rc = X->main.bk.ops->recount(X->main.bk.self, p, &k);
		if (rc == RUSK_OK)
			rc = rusk_redis_owners_(X->main.redis, p, rus, owners, NULL, cap, &n);
		if (rc != RUSK_OK) {
			X->parts_failed++;
			/* skipped at once (nothing sent) while its master is marked, so that the
			 * partitions of the masters that answer are read within the budget */
			X->parts_unavail += rusk_redis_part_unavailable_(X->main.redis, p) == 1;
			if (wu < sizeof which)
				wu += (size_t)snprintf(which + wu, sizeof which - wu, "%s%u",
				                       unread++ ? ", " : "", p);
			else
				unread++;
			/* A key of another type (named by the message): not an outage, exit 2 */
			corrupt |= rc == RUSK_ECORRUPT;
			X->corrupt |= rc == RUSK_ECORRUPT;
			const char *e = rusk_redis_last_error_(X->main.redis);
			if (strncmp(e, "partition ", 10) == 0) /* it names the partition */
				snprintf(last, sizeof last, "%s", e);
			else
				snprintf(last, sizeof last, "partition %u: %s", p, e);
			continue;
		}
		X->held += k.held;
		X->free_rus += k.free;
		X->mismatch += k.mismatch;
		for (size_t i = 0; i < n; i++)
			X->held_run += own_owner(X, owners[i]);
	}
	rusk_redis_set_deadline_(X->main.redis, 0);
	free(rus);
	free(owners);
	X->ok = X->parts_failed == 0 && X->mismatch == 0 && X->held_run == 0;
	X->left_held = X->run_leased && (X->parts_failed > 0 || X->held_run > 0);
	if (X->parts_failed > 0) {
		/* The state unreachable (or part of it): not judged after a stop signal, as the
		 * other checks of an interrupted run; a failed check otherwise. */
		X->waived = drv_stop_signal() != 0 && X->mismatch == 0;
		char left[128] = "";
		size_t lu = 0;
		if (X->parts_unavail > 0)
			lu += (size_t)snprintf(left, sizeof left,
			                       "; %u of them skipped: their master marked "
			                       "unavailable (--unavailable-ms %u)",
			                       X->parts_unavail, R->cfg.unavail_ms);
		if (skipped > 0 && lu < sizeof left)
			snprintf(left + lu, sizeof left - lu,
			         "%s%u not tried: the budget was spent", unread > 0 ? "; " : "",
			         skipped);
		/* a long last error cut at the end (the count and the list come first) */
		int w = snprintf(
		        X->why, sizeof X->why,
		        "%s: %u of %u partitions could not be read (%s%s%s%s%s; budget %d s)",
		        X->waived ? "not done, the run was interrupted"
		        : corrupt ? "the state is corrupt"
		                  : "the state was unreachable",
		        X->parts_failed, np,
		        unread > 0 ? (unread > 1 ? "partitions " : "partition ") : "", which,
		        unread > 0 ? ": " : "", last, left, END_BUDGET_MS / 1000);
		(void)w;
		return;
	}
	if (X->ok)
		return;
	snprintf(X->why, sizeof X->why,
	         "%" PRIu64 " RUs whose free mark disagrees with their owner, %" PRIu64
	         " still held by this run's tasks",
	         X->mismatch, X->held_run);
}

bool drv_redis_ok(const run *R)
{
	if (R->redis == NULL || !R->redis->attached)
		return true;
	recount(R);
	return R->redis->ok || R->redis->waived;
}

bool drv_redis_corrupt(const run *R)
{
	return R->redis != NULL && R->redis->corrupt;
}

bool drv_redis_gone(const run *R)
{
	return R->redis != NULL && R->redis->gone;
}

bool drv_redis_left_held(const run *R)
{
	if (R->redis == NULL || !R->redis->attached)
		return false;
	recount(R); /* once */
	return R->redis->left_held;
}

const char *drv_redis_why(const run *R)
{
	return R->redis != NULL ? R->redis->why : "";
}

/* What the run's connections met on their links: the agents' and completers' (merged by
 * rusk_remote_stats_ from each connection's own counters) and the main thread's (the
 * ledger, the recount). outage_s: the most one connection waited in all (about the
 * outage's length as one thread lived it); outage_sum_s: over every connection. */
typedef struct run_link {
	rusk_remote_link l;
	double outage_s, outage_sum_s;
} run_link;

static run_link link_of(const drv_redis *X)
{
	rusk_redis_stats m = rusk_redis_stats_(X->main.redis);
	run_link k = {X->st.link, 0, 0};
	k.l.reconnects += m.reconnects;
	k.l.redirects += m.redirects;
	k.l.resent += m.resent;
	k.l.outage_ns += m.outage_ns;
	uint64_t most = X->st.outage_max_ns > m.outage_ns ? X->st.outage_max_ns : m.outage_ns;
	k.outage_s = (double)most * 1e-9;
	k.outage_sum_s = (double)k.l.outage_ns * 1e-9;
	return k;
}

static void redis_json(FILE *f, run *R)
{
	drv_redis *X = R->redis;
	if (!X->attached)
		return;
	recount(R);
	const rusk_remote_stats *s = &X->st;
	run_link k = link_of(X);
	fprintf(f,
	        "  \"redis_dispatch\": {\"submitted\": %" PRIu64 ", \"placed\": %" PRIu64
	        ", \"rejected\": %" PRIu64 ", \"revoked\": %" PRIu64 ", \"released\": %" PRIu64
	        ", \"queued_end\": %" PRIu64 "},\n",
	        X->ds.submitted, X->ds.placed, X->ds.rejected, X->ds.revoked, X->ds.released,
	        X->ds.queued_end);
	fprintf(f,
	        "  \"redis\": {\"namespace\": %" PRIu64 ", \"connections\": %" PRIu64
	        ", \"open_failures\": %" PRIu64 ", \"snapshots\": %" PRIu64
	        ", \"snapshot_calls\": %" PRIu64 ", \"commit_round_trips\": %" PRIu64
	        ", \"claims\": %" PRIu64 ", \"claims_lost\": %" PRIu64
	        ", \"claims_short\": %" PRIu64 ", \"claims_unknown\": %" PRIu64
	        ", \"rollbacks\": %" PRIu64 ", \"local_refused\": %" PRIu64
	        ", \"release_round_trips\": %" PRIu64 ", \"released\": %" PRIu64
	        ", \"release_refused\": %" PRIu64 ", \"errors\": %" PRIu64
	        ", \"commit_batch\": %u, \"wait\": %u, \"wait_ms\": %u"
	        ", \"batches\": %" PRIu64 ", \"batch_tasks\": %" PRIu64 ", \"reconnects\": %" PRIu64
	        ", \"redirects\": %" PRIu64 ", \"resent\": %" PRIu64
	        ", \"outage_s\": %.3f, \"outage_sum_s\": %.3f"
	        ", \"ledger\": {\"checks\": %" PRIu64 ", \"failed\": %" PRIu64
	        ", \"unavailable\": %" PRIu64 ", \"parts_read\": %" PRIu64
	        ", \"parts_deferred\": %" PRIu64 ", \"pass_failed_max\": %" PRIu64
	        ", \"pass_read_min\": %" PRIu64 ", \"sweep_passes_max\": %" PRIu64
	        ", \"lost_rus\": %" PRIu64 ", \"lost_tasks\": %" PRIu64 ", \"orphans\": %" PRIu64
	        ", \"revoked\": %" PRIu64 ", \"lost_at_release\": %" PRIu64
	        ", \"lost_at_release_rus\": %" PRIu64 ", \"lost_total\": %" PRIu64
	        ", \"lost_total_rus\": %" PRIu64 ", \"forced_reclaim\": {\"rus\": %" PRIu64
	        ", \"tasks\": %" PRIu64 "}}, \"release_not_held\": %" PRIu64
	        ", \"commit_rtt_us\": {\"p50\": %.1f, \"p99\": %.1f}"
	        ", \"recount\": {\"held\": %" PRIu64 ", \"held_by_run\": %" PRIu64
	        ", \"free\": %" PRIu64 ", \"mismatch\": %" PRIu64 ", \"partitions_failed\": %u"
	        ", \"partitions_unavailable\": %u"
	        ", \"ok\": %s}, \"reclaimed_expired\": %" PRIu64 ", \"reclaim\": {\"auto\": %s"
	        ", \"passes\": %" PRIu64 ", \"from_runs\": %" PRIu64 ", \"agents\": %" PRIu64
	        ", \"runs\": %" PRIu64 ", \"busy\": %" PRIu64 ", \"failed\": %" PRIu64
	        ", \"unsteady\": %" PRIu64 "}, \"left_to_reclaim\": %s"
	        ", \"unavailable_ms\": %u, \"parts_unavailable\": %" PRIu64
	        ", \"unavailable_s\": %.3f, \"placed_while_unavailable\": %" PRIu64
	        ", \"releases_deferred\": %" PRIu64 ", \"releases_put_off_end\": %zu"
	        ", \"max_gap_s\": %.3f},\n",
	        X->ns, s->connections, s->open_failures, s->snapshots, s->snapshot_trips,
	        s->commit_trips, s->claims, s->claims_lost, s->claims_short, s->claims_unknown,
	        s->rollbacks, s->local_refused, s->release_trips, s->released, s->release_refused,
	        s->errors, R->cfg.commit_batch, R->cfg.wait, R->cfg.wait ? R->cfg.wait_ms : 0,
	        s->batches, s->batch_tasks, k.l.reconnects, k.l.redirects, k.l.resent, k.outage_s,
	        k.outage_sum_s, X->ledger_checks, X->ledger_failed, X->ledger_unavail,
	        X->parts_read, X->parts_deferred, X->pass_failed_max, X->pass_read_min,
	        X->sweep_passes_max, X->lost_rus, X->lost_tasks, X->orphans, X->revoked,
	        X->at_release, X->at_release_rus, X->lost_total, X->lost_total_rus, X->forced_rus,
	        X->forced_tasks, s->release_not_held, s->commit_p50_ns / 1e3,
	        s->commit_p99_ns / 1e3, X->held, X->held_run, X->free_rus, X->mismatch,
	        X->parts_failed, X->parts_unavail, X->ok ? "true" : "false", X->reclaimed,
	        R->cfg.no_auto_reclaim ? "false" : "true", X->reclaim_passes, X->reclaimed_runs,
	        X->reclaim_agents, X->reclaim_runs, X->reclaim_busy, X->reclaim_failed,
	        X->reclaim_unsteady, X->left_held ? "true" : "false", R->cfg.unavail_ms,
	        s->parts_unavailable, (double)s->unavailable_ns * 1e-9, s->placed_unavailable,
	        s->releases_deferred, X->put_off_end, (double)s->max_gap_ns * 1e-9);
}

static void redis_print(run *R)
{
	drv_redis *X = R->redis;
	if (!X->attached)
		return;
	recount(R);
	const rusk_remote_stats *s = &X->st;
	fprintf(R->out, "  %-28s %s (%s; owner namespace %" PRIu64 ")\n", "master state", X->spec,
	        R->cfg.no_init ? "joined the state there" : "empty state written first", X->ns);
	fprintf(R->out,
	        "  %-28s %" PRIu64 " connections, %" PRIu64 " snapshots, %" PRIu64
	        " commit round trips (%" PRIu64 " claims, %" PRIu64 " refused, %" PRIu64
	        " refused for memory or GPUs, %" PRIu64 " unanswered in an outage, %" PRIu64
	        " gangs rolled back), p50 %.0f us, p99 %.0f us\n",
	        "", s->connections, s->snapshots, s->commit_trips, s->claims, s->claims_lost,
	        s->claims_short, s->claims_unknown, s->rollbacks, s->commit_p50_ns / 1e3,
	        s->commit_p99_ns / 1e3);
	if (R->cfg.wait > 0)
		fprintf(R->out,
		        "  %-28s WAIT %u %u after each commit and release pipeline (--wait)\n", "",
		        R->cfg.wait, R->cfg.wait_ms);
	if (R->cfg.commit_batch > 1)
		fprintf(R->out,
		        "  %-28s %" PRIu64 " commit batches of %.1f tasks (--commit-batch %u)\n",
		        "", s->batches,
		        s->batches ? (double)s->batch_tasks / (double)s->batches : 0.0,
		        R->cfg.commit_batch);
	fprintf(R->out,
	        "  %-28s %" PRIu64 " release round trips, %" PRIu64 " leases released, %" PRIu64
	        " refused; %" PRIu64 " refused by the local mirror; %" PRIu64 " errors\n",
	        "", s->release_trips, s->released, s->release_refused, s->local_refused, s->errors);
	run_link k = link_of(X);
	fprintf(R->out,
	        "  %-28s %" PRIu64 " reconnects, %" PRIu64 " redirections (MOVED/ASK), %" PRIu64
	        " pipelines sent again; %.2f s in outage (the longest connection; %.2f s over "
	        "every connection)\n",
	        "redis link", k.l.reconnects, k.l.redirects, k.l.resent, k.outage_s,
	        k.outage_sum_s);
	if (R->cfg.unavail_ms > 0)
		fprintf(R->out,
		        "  %-28s (--unavailable-ms %u) marked %" PRIu64
		        " times, %.2f partition-seconds; placed meanwhile %" PRIu64
		        " tasks; releases put off %" PRIu64 " (%zu still at the end); longest "
		        "gap between commits %.2f s\n",
		        "redis unavailable", R->cfg.unavail_ms, s->parts_unavailable,
		        (double)s->unavailable_ns * 1e-9, s->placed_unavailable,
		        s->releases_deferred, X->put_off_end, (double)s->max_gap_ns * 1e-9);
	if (s->errors > 0 || s->open_failures > 0) {
		char err[512];
		rusk_remote_last_error_(R->c, err, sizeof err);
		fprintf(R->out, "  %-28s last error: %s\n", "", err);
	}
	fprintf(R->out,
	        "  %-28s %" PRIu64 " checks, %" PRIu64 " partitions read, %" PRIu64
	        " could not be read (%" PRIu64 " of them not checked: their master marked "
	        "unavailable), %" PRIu64 " left to the next pass (budget; every partition "
	        "read within %" PRIu64 " passes): %" PRIu64
	        " acknowledged commits lost by Redis (%" PRIu64
	        " RUs), those tasks revoked and placed again (%" PRIu64
	        " of them revoked after the close: REJECTED); %" PRIu64 " orphans released\n",
	        "redis ledger", X->ledger_checks, X->parts_read, X->ledger_failed,
	        X->ledger_unavail, X->parts_deferred, X->sweep_passes_max, X->lost_tasks,
	        X->lost_rus, rusk_load64(&X->rejected, RUSK_RELAXED), X->orphans);
	fprintf(R->out,
	        "  %-28s %" PRIu64 " commits (%" PRIu64
	        " RUs) whose release Redis refused as not theirs (lost before a ledger pass saw "
	        "them); lost in all: %" PRIu64 " commits (%" PRIu64 " RUs)\n",
	        "redis lost at release", X->at_release, X->at_release_rus, X->lost_total,
	        X->lost_total_rus);
	if (X->forced_rus > 0)
		fprintf(R->out,
		        "  %-28s %" PRIu64 " RUs of %" PRIu64
		        " tasks taken by a forced reclaim of this run (rusk agent --recount "
		        "--reclaim-run %" PRIu64 " --force): not counted lost\n",
		        "redis forced reclaim", X->forced_rus, X->forced_tasks, X->ns);
	if (R->cfg.no_auto_reclaim)
		fprintf(R->out, "  %-28s off (--no-auto-reclaim)\n", "redis reclaim");
	else
		fprintf(R->out,
		        "  %-28s %" PRIu64 " RUs of dead processes released (%" PRIu64
		        " of dead runs; %" PRIu64 " dead agents, %" PRIu64 " dead runs) in %" PRIu64
		        " passes; %" PRIu64 " left to another process's reclaim, %" PRIu64
		        " failed, %" PRIu64
		        " put off (the {meta} shard not answering steadily for a lease)\n",
		        "redis reclaim", X->reclaimed, X->reclaimed_runs, X->reclaim_agents,
		        X->reclaim_runs, X->reclaim_passes, X->reclaim_busy, X->reclaim_failed,
		        X->reclaim_unsteady);
	fprintf(R->out,
	        "  %-28s %u partitions: held %" PRIu64 " (by this run's tasks %" PRIu64
	        "), free %" PRIu64 ", mismatch %" PRIu64 "%s%s\n",
	        "redis recount", rusk_cluster_partitions(R->c) - X->parts_failed, X->held,
	        X->held_run, X->free_rus, X->mismatch, X->parts_failed ? "; " : "",
	        X->parts_failed ? X->why : "");
	if (X->left_held) {
		char what[160];
		if (X->parts_failed > 0)
			snprintf(what, sizeof what,
			         "what this run's tasks hold on the %u partitions not read (and "
			         "%" PRIu64 " RUs on those read)",
			         X->parts_failed, X->held_run);
		else
			snprintf(what, sizeof what, "%" PRIu64 " RUs of this run's tasks",
			         X->held_run);
		fprintf(R->out,
		        "  %-28s %s left to the reclaim: the run's lease (namespace %" PRIu64
		        " in rusk:{meta}:live-runs) is left to lapse, so the automatic reclaim of "
		        "the live processes frees them about %u ms from now\n",
		        "redis left held", what, X->ns, run_lease_ms());
	}
}

static void redis_free(run *R)
{
	drv_redis *X = R->redis;
	if (X == NULL)
		return;
	if (X->attached)
		rusk_remote_detach_(R->c); /* every thread that used it is joined */
	/* Gone at once: an init after this run is not refused. Not when the recount could not
	 * show every RU of this run free (left_held): the entry lapses, and the automatic
	 * reclaim of the live processes frees what its tasks still hold. */
	if (X->run_leased && X->counted && !X->left_held)
		rusk_redis_run_lease_(X->main.redis, X->ns, 0);
	rusk_state_close_(&X->main);
	free(X->l_rus);
	free(X->l_gens);
	free(X->l_owners);
	free(X->l_remote);
	free(X->l_before);
	free(X->l_orph);
	free(X->l_orph_n);
	free(X->l_back);
	free(X->l_rcs);
	free(X->l_ps);
	free(X->l_off);
	free(X->l_prc);
	free(X);
	R->redis = NULL;
}

const drv_feature drv_feature_redis = {
        .name = "redis",
        .on = redis_on,
        .setup = redis_setup,
        .second = redis_second,
        .event = redis_event,
        .json = redis_json,
        .print = redis_print,
        .free = redis_free,
};
