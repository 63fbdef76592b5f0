/* SPDX-License-Identifier: MIT */
/*
 * `rusk agent`: one scheduling agent in its own process against a shared master state
 * (issue 30; ParSync §7: schedulers on many machines, resource managers holding the master
 * state in partitions). Several `rusk agent --backend redis://...` processes, on one host
 * or several, share one Redis Cluster; `--backend memory` runs the same loop on the
 * process's own RU array, for comparison.
 *
 * The loop (one thread): keep a local view (each partition's free bitmap as of its last
 * sync, ParSync §5.1) synced by DiffSync / SameSync / StateSync (§5.2: agent i refreshes
 * block B_(i+k mod N) at step k, every G/N; SameSync B_(k mod N); StateSync all every G);
 * take tasks from an open-loop arrival stream (--rate) or a closed loop (--rate 0); place a
 * batch of them in the freshest partition of the view that has free RUs (Latency-first),
 * on uniformly drawn free RUs, and commit the batch in one pipeline (one round trip); a
 * lost claim is a conflict (its RU is marked taken in the view, the task waits for the
 * next batch); tasks end after --task-ms and are released in batches per partition.
 *
 * Task ids are (agent + 1) << 32 | sequence: the owner of an RU tells which agent holds it,
 * so the RUs of an agent process that died can be reclaimed: each agent renews a lease key
 * (--lease-ms), and after each renewal releases the RUs of every agent whose lease expired
 * and of every run whose run lease expired (auto_reclaim, rusk_redis_reclaim_dead_: the
 * live processes reclaim by themselves, about a lease after a death; --no-auto-reclaim
 * turns it off); --recount --reclaim-expired does it by hand (--reclaim-agent names one).
 * The lease also makes the id one process's: it is claimed at the start with this
 * process's token (SET NX: a second process with the same
 * --agent-id is refused), renewed only while the token is still there, and read together
 * with the state's epoch, which every write of the empty state increments: an agent whose
 * id was taken over, or whose state was written afresh under it, stops (open_checks,
 * lease_renew). A renewal that failed (the {meta} master out) is tried again sooner, each
 * try probing that master (lease_retry_ns), so an outage of {meta} shorter than the lease
 * less a third keeps it; a lease that lapsed in a longer one is taken again within a second
 * of the master's return. A call that waits out another master's outage renews it on a
 * connection of its own (keep_lease, the waiting hook), in the loop and in the start's
 * checks after the claim alike. The whole start (seeds, checks, lease, state) is bounded
 * by --failover-ms from its first try (start_end, rusk_redis_set_bound_). The claim and
 * each renewal record the lease's length (rusk:{meta}:lease-ms), so that a reclaimer with
 * another --lease-ms waits out this agent's own lease before it believes it dead
 * (core/state/redis.c steady_for); a pass that leaves a dead agent of a shorter lease out
 * for this process's renewals being too far apart makes them closer (closer_ns) until it
 * believes it.
 * The agent keeps a ledger of what it holds; after a broken connection (failover) and at the
 * end it compares the ledger with the state: a task whose RU the state does not show as its
 * own lost an acknowledged commit (Redis replicates asynchronously) and is placed again; an
 * RU the state shows as its own but the ledger does not (a commit whose answer was lost) is
 * released. No RU ever has two holders: the state has one owner field per RU, and the
 * ledger drops what the state does not confirm.
 *
 * SIGINT, SIGTERM or SIGHUP (stop.c's rule for a repeated one) end the loop as its
 * --duration-s would: the end's ledger check, every held task released, the lease dropped,
 * the summary (the time that ran, "stopped by SIGTERM"), exit 3. A call waiting out an
 * outage gives up at the signal (rusk_redis_set_stop_): what it could not release is left
 * to the lease's expiry and a recount, as for an agent killed.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "base/rng.h"
#include "cli.h"
#include "state/open.h"

typedef struct held {
	uint64_t id, end_ns;
	uint32_t part;
	rusk_lease l;
} held;

/* The seconds the JSON's placed_per_s covers (later ones count in the last). */
#define PLACED_SECONDS 120

typedef struct agent_opts {
	const char *backend;
	bool init, init_only, force_init, recount, reclaim_expired, force, no_auto_reclaim;
	uint64_t reclaim_run; /* --reclaim-run NS (0: none) */
	uint32_t agent_id, agents, batch, task_mem;
	int reclaim_agent;
	uint64_t reclaim_u, gap_ms, wait, wait_ms, failover_ms, ledger_ms, lease_ms, unavail_ms;
	double rate, duration_s, task_ms;
	rusk_sync_policy policy;
} agent_opts;

typedef struct agent_run {
	agent_opts o;
	rusk_cluster *c;
	rusk_state st;
	uint32_t np;
	uint64_t **words;
	uint32_t *n_words;
	uint64_t *synced_ns;
	uint32_t *sp;   /* [np] a sync step's partitions (sync_step) */
	uint64_t *sver; /* [np] their versions */
	int *src;       /* [np] and answers */
	held *h;        /* FIFO: tasks end in order (one duration) */
	size_t h_head, h_n, h_cap;
	uint64_t seq;   /* the last task id's sequence (rusk_redis_agent_task_) */
	bool ids_spent; /* the sequence reached RUSK_REDIS_AGENT_SEQ_MAX: stopped (a->fatal) */
	rusk_rng rng;
	/* results */
	/* placed = released + rejected + releases_unknown + lost + held_end (the summary's
	 * identity): claims_unknown are claims whose answer was lost with the connection (not
	 * placed), releases_unknown releases whose answer was (placed, fate unknown). */
	uint64_t placed, conflicts, released, rejected, claims_unknown, releases_unknown;
	/* Of the rejected, those Redis refused as not this task's (another owner, free, another
	 * generation): an acknowledged commit lost (a failover, a forced reclaim) that no
	 * ledger check saw before the task ended. The ledger drops what it finds lost (never
	 * released), so none of these is counted in `lost` too: lost + at_release is every
	 * commit lost. One RU per task: the tasks and the RUs are the same count. */
	uint64_t at_release;
	/* claims = placed + conflicts + memory_short + claims_unknown: memory_short are claims
	 * whose RU was free but whose machine's memory was short (RUSK_ESHORT_), not
	 * conflicts. Such a machine is skipped (its free RUs marked taken in the view) until
	 * this agent's task there ends or a sync shows its RUs changed (short_skip). */
	uint64_t memory_short;
	uint64_t *short_m; /* [machines]: 0, or SHORT_ON | the signature of its RUs' bits */
	/* [machines]: 1 where the machine's memory is below --task-mem-mib, so that no task of
	 * this process could ever run there (a node list's 0-MiB machines): its RUs are never
	 * claimed (hidden in the view at each sync, short_resync), and n_unfit counts them.
	 * Before, the first claim there answered RUSKINFEASIBLE and stopped the agent (exit 1)
	 * although the other machines hold the task; a RUSKINFEASIBLE now means the state's
	 * machines are not the shape's (their memory cut under the agent): it stops. Both
	 * NULL with --task-mem-mib 0. */
	uint8_t *unfit;
	uint32_t n_unfit;
	uint64_t held_end; /* placed, in the ledger, not released: an early stop */
	uint64_t syncs, batches, claims;
	uint64_t lost, orphans, replaced, regranted;
	/* The id's lease (rusk:{meta}:alive:I): this process's token, whether it holds it, the
	 * state's epoch when it started, and why the loop stopped early (0: it did not). */
	char token[128];
	bool leased;
	uint64_t epoch;
	int stopped;
	/* A commit answered an error that is neither a conflict nor a lost answer (an
	 * infeasible task, an RU out of range, a script error): the loop stops, the code and
	 * the backend's message kept for the summary (0: none). */
	int fatal;
	char fatal_msg[512];
	bool corrupt; /* a commit or a meta call found the state corrupt (RUSK_ECORRUPT), or a
	               * node refused the password: stop, exit 2 */
	/* a read or a commit found a partition's state gone since the start, lost by the
	 * cluster (rusk_redis_state_lost_): stop, exit 1 as the start's check (state_gone) */
	bool gone;
	/* the loop's wall time: --duration-s, less when a signal stopped it, more when a call
	 * waiting out an outage returned after the end (arrivals are counted to the end only) */
	double elapsed_s;
	uint64_t lapsed; /* renewals that found the lease expired (a stall): taken again */
	/* The automatic reclaim (auto_reclaim): RUs of dead processes released by this agent,
	 * of them dead runs', the dead agents and runs, passes that read the owners, and
	 * passes left to another process (its reclaim lock). */
	uint64_t reclaimed_expired, reclaimed_runs, reclaim_agents, reclaim_runs;
	uint64_t reclaim_passes, reclaim_busy;
	/* passes not made: the {meta} shard had not answered steadily for a lease (an outage
	 * ended lately: an absent lease may be a live process's; rusk_redis_set_reclaim_lease_) */
	uint64_t reclaim_unsteady;
	/* orphan releases the state did not take (ledger_check), and at the end what may be
	 * left held: releases not made, or the end's ledger check could not read the owners
	 * (left_held: the id's lease is then left to lapse, for the automatic reclaim) */
	uint64_t orphans_unknown, end_unknown;
	bool end_unread, left_held;
	bool renewed; /* the last lease renewal was answered (a pass follows only then) */
	/* The last pass left a dead agent out because this process's renewals came further
	 * apart than two thirds of that agent's lease (a lease shorter than this one's: the
	 * pass's closer_ms): the loop renews every closer_ns until a pass believes it (0: at
	 * its third of a lease). */
	uint64_t closer_ns;
	/* The lease kept alive while a call waits out an outage (keep_lease): a second
	 * connection (keep), the time of the last renewal answered on either (renewed_ns),
	 * of the last attempt on keep (keep_tried_ns), renewals made so (kept), the time the
	 * attempts took (keep_ns), and in_keep, a renewal under way (not entered again). */
	rusk_state keep;
	uint64_t renewed_ns, keep_tried_ns, kept, keep_ns;
	bool in_keep;
	/* The start's bound: --failover-ms from its first try (rusk_state_open_wait_), its
	 * calls' too (rusk_redis_set_bound_), restarted after a wait for an earlier lease. */
	uint64_t start_end;
	bool writing; /* open_checks writes the state (a stop now leaves it half-written) */
	uint64_t arrived, backlog_end; /* open loop: arrivals and those left unplaced */
	double stale_sum_ms, max_gap_s, sync_s;
	/* Unavailable partitions (--unavailable-ms, rusk_redis_set_unavailable_ms_), followed
	 * as `rusk run`'s remote follows them (kernel/backend.h rusk_unavail: the marks, times
	 * a partition was marked, partition-seconds, tasks placed while one was, releases put
	 * off each time: sent again later, not lost); un_on while --unavailable-ms is on
	 * (note_unavail). placed_s[k]: tasks placed in second k of the loop (the JSON's
	 * placed_per_s). */
	rusk_unavail un;
	bool un_on;
	uint64_t unavail_check;
	double unavail_s;
	held *def; /* releases put off by release_range, pushed back by requeue */
	size_t n_def, cap_def;
	uint64_t placed_s[PLACED_SECONDS];
	double *rtt;
	size_t n_rtt, cap_rtt;
} agent_run;

static int agent_stopping(void *arg);
static void agent_waiting(void *arg);
/* keep_lease: late this much past a third of a lease; an attempt at most every
 * KEEP_RETRY_NS; the keep connection's read timeout and its calls' bound. */
#define KEEP_LATE_NS    (100 * 1000000ull)
#define KEEP_RETRY_NS   (500 * 1000000ull)
#define KEEP_READ_MS    250
#define KEEP_BUDGET_MS  500
/* lease_retry_ns: the least time between the loop's renewals after one failed, and the
 * most once the lease is past. */
#define LEASE_RETRY_NS  (250 * 1000000ull)
#define LAPSED_RETRY_NS (1000 * 1000000ull)

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --backend's address, kept as given (checked when the state is opened): a custom entry, not
 * a file name, so that a missing one reads "needs a value" (cli_parse). */
static int opt_backend(const char *flag, const char *v, void *out)
{
	(void)flag;
	*(const char **)out = v;
	return 0;
}

static void agent_usage(void)
{
	puts("usage: rusk agent --backend memory|redis://HOST:PORT[,HOST:PORT...] [options]\n"
	     "\n"
	     "One scheduling agent process against a shared master state (docs/redis.md).\n"
	     "  --init               write the empty state first (the first process of a run),\n"
	     "                       refused while live agents or runs use the state there\n"
	     "  --init-only          write the empty state and exit (no agent runs)\n"
	     "  --force-init         with --init or --init-only: write it even under live agents\n"
	     "                       and runs (they stop: the state they used is gone)\n"
	     "  --agent-id I         this agent's index, 0..agents-1 (default 0)\n"
	     "  --agents N           agent processes in the run, for DiffSync's blocks (default "
	     "1)\n"
	     "  --sync diff|same|state  sync policy (default diff)\n"
	     "  --gap-ms G           sync gap G (default 10)\n"
	     "  --rate R             task arrivals per second (0: closed loop, default 0)\n"
	     "  --duration-s D       how long to place tasks (default 3)\n"
	     "  --task-ms T          each task's run time (default 100)\n"
	     "  --task-mem-mib M     memory each task takes on its machine (default 0)\n"
	     "  --batch B            claims committed in one pipeline (default 32)\n"
	     "  --wait N             WAIT for N replicas (1..16, at most what every shard has)\n"
	     "                       after each batch (default: none)\n"
	     "  --wait-ms MS         with --wait: WAIT's timeout (default 100)\n"
	     "  --failover-ms MS     how long a shard may be unserved before calls fail (30000)\n"
	     "  --unavailable-ms MS  a master that does not answer within MS (or cannot be\n"
	     "                       reached) while others do is marked unavailable: its\n"
	     "                       partitions are skipped, their tasks placed on the others,\n"
	     "                       and it is tried again with backoff (default 1000; 0: wait\n"
	     "                       out every outage, up to --failover-ms)\n"
	     "  --ledger-ms MS       compare the ledger with the state this often, besides after\n"
	     "                       each reconnect and at the end (default 1000; 0: not)\n"
	     "  --lease-ms MS        the agent's lease (rusk:{meta}:alive:I), renewed every MS/3\n"
	     "                       (default 5000; 0: none; else at least 1000: a lease must\n"
	     "                       outlive several round trips and a renew period, or a live\n"
	     "                       agent's lapses and its id and RUs are taken). A second\n"
	     "                       process with the same --agent-id is refused while the\n"
	     "                       lease is live\n"
	     "  --no-auto-reclaim    do not release dead processes' RUs: by default, at each\n"
	     "                       lease renewal, the RUs of every agent whose lease expired\n"
	     "                       and of every run whose run lease expired are released\n"
	     "                       (\"reclaimed_expired\" in the JSON; agents with --lease-ms 0\n"
	     "                       are never taken for dead, nor reclaim)\n"
	     "  --recount            no agent: recount every partition (held, free, mismatch)\n"
	     "  --reclaim-agent I    with --recount: release every RU agent I's tasks hold (a\n"
	     "                       line says when they hold none); refused while agent I's\n"
	     "                       lease is live, unless --force\n"
	     "  --reclaim-run NS     with --recount: release every RU of run namespace NS (a\n"
	     "                       `rusk run`'s owners); refused while its run lease is live,\n"
	     "                       unless --force\n"
	     "  --reclaim-expired    with --recount: release the RUs of every agent whose lease\n"
	     "                       expired (or that never took one: --lease-ms 0) and of every\n"
	     "                       run with no live run lease (a process that died); live\n"
	     "                       agents and runs do it by themselves (--no-auto-reclaim)\n"
	     "  --force              with --reclaim-agent / --reclaim-run: reclaim from a live\n"
	     "                       process anyway (it then runs tasks on RUs shown free)\n"
	     "  cluster options as for rusk run (--machines, --partitions, --seed, ...): every\n"
	     "  process of a run must give the same ones\n"
	     "\n"
	     "Prints a summary and one JSON line (\"stopped\": why the loop ended); exit 0, 1\n"
	     "when a recount finds a mismatch or an RU held twice, or the agent stopped early\n"
	     "(a commit error, the state written afresh, its lease taken), 2 on bad input (the\n"
	     "message names the flag or address), 3 at a stop signal.");
}
#define SHORT_ON (UINT64_C(1) << 63)

/* Machine m's RUs in partition p's view (pi): a signature of their free bits (FNV-1a), and
 * with `hide` those bits cleared (taken in the view). */
static uint64_t short_sig(agent_run *a, uint32_t p, const rusk_partition_info *pi, uint32_t m,
                          bool hide)
{
	rusk_machine_info mi;
	uint64_t h = UINT64_C(14695981039346656037);
	if (rusk_cluster_machine(a->c, m, &mi) != RUSK_OK)
		return h;
	for (uint32_t r = mi.first_ru; r < mi.first_ru + mi.rus; r++) {
		uint32_t i = r - pi->first_ru;
		h = (h ^ ((a->words[p][i / 64] >> (i % 64) & 1) + 2 * (uint64_t)i)) *
		    UINT64_C(1099511628211);
		if (hide)
			a->words[p][i / 64] &= ~(UINT64_C(1) << (i % 64));
	}
	return h;
}

/* A claim on machine m refused for its memory (RUSK_ESHORT_): m's RUs free in partition
 * p's view are marked taken there, so that the agent stops claiming there (before: 98.6% of
 * a vector run's claims were such refusals, each counted a conflict). Every task of an
 * agent process asks the same memory: "that kind of task" is every task. The skip lasts
 * until one of this agent's tasks there ends (short_end), or a sync of p shows m's RUs
 * changed (short_resync: a task of another process ended or began there, so its memory
 * did). A sync alone does not end it: the view holds RUs, not memory, and the agent syncs
 * a partition every --gap-ms / agents (10 ms): ending the skip at each sync left the
 * claims as they were (98.8% refused for memory). */
static void short_skip(agent_run *a, uint32_t p, uint32_t m)
{
	rusk_partition_info pi;
	if (a->short_m == NULL || rusk_cluster_partition(a->c, p, &pi) != RUSK_OK)
		return;
	/* The signature is the next sync's (short_resync): the view has the refused claim's
	 * RU taken (the draw took it off), the state has it free. */
	short_sig(a, p, &pi, m, true);
	a->short_m[m] = SHORT_ON;
}

/* After a sync of partition p: each machine skipped for memory stays skipped (its RUs hidden
 * again) while its RUs' free bits are as they were, and is tried again otherwise. */
static void short_resync(agent_run *a, uint32_t p)
{
	rusk_partition_info pi;
	if (a->short_m == NULL || rusk_cluster_partition(a->c, p, &pi) != RUSK_OK)
		return;
	for (uint32_t m = pi.first_machine; m < pi.first_machine + pi.machines; m++) {
		if (a->unfit != NULL && a->unfit[m]) {
			short_sig(a, p, &pi, m, true); /* never claimed */
			continue;
		}
		if (a->short_m[m] == 0)
			continue;
		uint64_t sig = SHORT_ON | 1 | (short_sig(a, p, &pi, m, false) >> 1);
		if (a->short_m[m] == SHORT_ON || a->short_m[m] == sig) { /* first sync, or same */
			a->short_m[m] = sig;
			short_sig(a, p, &pi, m, true);
		} else {
			a->short_m[m] = 0;
		}
	}
}

/* This agent's task on RU ru of partition p ended (released): its machine, if skipped for
 * memory, is tried again, on that RU (free now, its memory given back). */
static void short_end(agent_run *a, uint32_t p, uint32_t ru)
{
	uint32_t m = rusk_cluster_ru_machine(a->c, ru);
	rusk_partition_info pi;
	if (a->short_m == NULL || !a->short_m[m] || rusk_cluster_partition(a->c, p, &pi) != RUSK_OK)
		return;
	a->short_m[m] = 0;
	uint32_t i = ru - pi.first_ru;
	a->words[p][i / 64] |= UINT64_C(1) << (i % 64);
}

/* A read of the state answered rc: RUSK_ECORRUPT (a key of another type, named in the
 * backend's message) stops the agent, exit 2 (a->corrupt; said once). Before, a snapshot
 * that failed so left its partition full in the view for good, and the agent exited 0. */
static void read_corrupt(agent_run *a, int rc)
{
	if (rc != RUSK_ECORRUPT || a->corrupt)
		return;
	fprintf(stderr, "rusk agent: --backend %s: %s\n", a->o.backend,
	        a->st.redis != NULL ? rusk_redis_last_error_(a->st.redis) : rusk_strerror(rc));
	a->corrupt = true;
}

/* A call found a partition's state gone since the start (the backend's message names the
 * partitions gone, lost by the cluster: rusk_redis_state_lost_): said once, a->gone stops
 * the agent, exit 1 as the start's state check. Before, a snapshot that found it so left
 * its partition out of the view with nothing said (exit 0), and a commit called the state
 * corrupt (exit 2, bad input). */
static bool state_gone(agent_run *a)
{
	if (a->gone || a->st.redis == NULL || !rusk_redis_state_lost_(a->st.redis))
		return a->gone;
	fprintf(stderr, "rusk agent: --backend %s: %s: stopping\n", a->o.backend,
	        rusk_redis_last_error_(a->st.redis));
	a->gone = true;
	return true;
}

/* Partitions [lo, hi) read into the view (those that answer: synced_ns = now, and their
 * machines skipped for memory looked at again: short_resync), in one call where the backend
 * has one (snapshots: one pipeline per node). How many were read. */
static uint64_t read_parts(agent_run *a, uint32_t lo, uint32_t hi, uint64_t now)
{
	uint64_t got = 0;
	if (a->st.bk.ops->snapshots != NULL && hi - lo > 1) {
		uint32_t n_p = hi - lo;
		for (uint32_t i = 0; i < n_p; i++)
			a->sp[i] = lo + i;
		a->st.bk.ops->snapshots(a->st.bk.self, a->sp, n_p, a->words + lo, a->n_words + lo,
		                        a->sver, a->src);
		for (uint32_t i = 0; i < n_p; i++) {
			if (a->src[i] == RUSK_OK) {
				a->synced_ns[lo + i] = now;
				got++;
				short_resync(a, lo + i);
			}
			read_corrupt(a, a->src[i]);
		}
		state_gone(a);
		return got;
	}
	for (uint32_t p = lo; p < hi; p++) {
		uint64_t ver;
		int rc = a->st.bk.ops->snapshot(a->st.bk.self, p, a->words[p], a->n_words[p], &ver);
		if (rc == RUSK_OK) {
			a->synced_ns[p] = now;
			got++;
			short_resync(a, p);
		}
		read_corrupt(a, rc);
	}
	state_gone(a);
	return got;
}

/* DiffSync / SameSync / StateSync: the partitions agent i refreshes at step k. */
static void sync_step(agent_run *a, uint64_t k, uint64_t now)
{
	uint32_t n = a->o.agents, lo = 0, hi = a->np;
	if (a->o.policy != RUSK_SYNC_STATE) {
		uint64_t j = a->o.policy == RUSK_SYNC_DIFF ? (a->o.agent_id + k) % n : k % n;
		lo = (uint32_t)(j * a->np / n);
		hi = (uint32_t)((j + 1) * a->np / n);
	}
	uint64_t t0 = mono_ns();
	a->syncs += read_parts(a, lo, hi, now);
	a->sync_s += (double)(mono_ns() - t0) * 1e-9;
}

static int held_push(agent_run *a, held x)
{
	if (a->h_head + a->h_n == a->h_cap) {
		if (a->h_head > 0) {
			memmove(a->h, a->h + a->h_head, a->h_n * sizeof *a->h);
			a->h_head = 0;
		} else {
			size_t cap = a->h_cap ? a->h_cap * 2 : 1024;
			held *nh = realloc(a->h, cap * sizeof *nh);
			if (nh == NULL)
				return RUSK_ENOMEM;
			a->h = nh;
			a->h_cap = cap;
		}
	}
	a->h[a->h_head + a->h_n++] = x;
	return RUSK_OK;
}

static void rtt_add(agent_run *a, double ms)
{
	if (a->n_rtt == a->cap_rtt) {
		size_t cap = a->cap_rtt ? a->cap_rtt * 2 : 4096;
		double *n = realloc(a->rtt, cap * sizeof *n);
		if (n == NULL)
			return;
		a->rtt = n;
		a->cap_rtt = cap;
	}
	a->rtt[a->n_rtt++] = ms;
}

/* A release put off (its partition unavailable), kept until requeue. Out of memory: counted
 * as a release whose answer was lost (a recount or the lease's expiry frees it). */
static void defer_push(agent_run *a, held x)
{
	if (a->n_def == a->cap_def) {
		size_t cap = a->cap_def ? a->cap_def * 2 : 256;
		held *n = realloc(a->def, cap * sizeof *n);
		if (n == NULL) {
			a->releases_unknown++;
			return;
		}
		a->def = n;
		a->cap_def = cap;
	}
	a->def[a->n_def++] = x;
	a->un.deferred++; /* this thread's alone (rusk_unavail: relaxed atomics elsewhere) */
}

/* The releases put off go back into the FIFO, due again DEFER_NS from now (its order by end
 * time bends by at most that much: a due task waits behind them until they are due). */
#define DEFER_NS 100000000u
static void requeue(agent_run *a, uint64_t now)
{
	for (size_t i = 0; i < a->n_def; i++) {
		held x = a->def[i];
		x.end_ns = now + DEFER_NS;
		if (held_push(a, x) != RUSK_OK)
			a->releases_unknown++;
	}
	a->n_def = 0;
}

/* Releases held[from, to) (FIFO positions), grouped by partition, one batch each; those
 * of an unavailable partition are put off (defer_push). */
static void release_range(agent_run *a, size_t from, size_t to)
{
	size_t n = to - from;
	if (n == 0)
		return;
	rusk_bk_lease *ls = malloc(n * sizeof *ls);
	int *rcs = malloc(n * sizeof *rcs);
	if (ls == NULL || rcs == NULL) {
		free(ls);
		free(rcs);
		return;
	}
	for (uint32_t p = 0; p < a->np; p++) {
		size_t k = 0;
		for (size_t i = from; i < to; i++)
			if (a->h[i].part == p && a->h[i].id != 0)
				ls[k++] = (rusk_bk_lease){a->h[i].id, a->h[i].l};
		if (k == 0)
			continue;
		int rc = a->st.bk.ops->release(a->st.bk.self, p, ls, k, rcs);
		if (rc == RUSK_EAGAIN) {
			/* p unavailable: nothing sent; the releases go again later (requeue) */
			for (size_t i = from; i < to; i++)
				if (a->h[i].part == p && a->h[i].id != 0)
					defer_push(a, a->h[i]);
			continue;
		}
		if (rc != RUSK_OK) {
			a->releases_unknown += k;
			continue;
		}
		for (size_t i = 0; i < k; i++) {
			a->released += rcs[i] == RUSK_OK;
			a->rejected += rcs[i] != RUSK_OK;
			a->at_release += rcs[i] == RUSK_ENOTOWNER || rcs[i] == RUSK_EFREE ||
			                 rcs[i] == RUSK_ESTALE;
			if (rcs[i] == RUSK_OK)
				short_end(a, p, ls[i].lease.ru);
		}
	}
	free(ls);
	free(rcs);
}

/* Every held RU of the state: owner and generation per global RU (owner 0: free). */
static int read_owners(agent_run *a, uint64_t *owner, uint32_t *gen)
{
	uint32_t n_rus = rusk_cluster_rus(a->c);
	uint32_t *rus = malloc(sizeof *rus * (n_rus ? n_rus : 1));
	uint64_t *own = malloc(sizeof *own * (n_rus ? n_rus : 1));
	uint32_t *gens = malloc(sizeof *gens * (n_rus ? n_rus : 1));
	int rc = rus && own && gens ? RUSK_OK : RUSK_ENOMEM;
	for (uint32_t p = 0; rc == RUSK_OK && p < a->np; p++) {
		size_t k = 0;
		rc = rusk_redis_owners_(a->st.redis, p, rus, own, gens, n_rus, &k);
		for (size_t i = 0; rc == RUSK_OK && i < k; i++) {
			owner[rus[i]] = own[i];
			gen[rus[i]] = gens[i];
		}
	}
	free(rus);
	free(own);
	free(gens);
	return rc;
}

/* Releases RU ru (global) of task with generation g; whether the state took it. */
static bool release_one(agent_run *a, uint64_t task, uint32_t ru, uint32_t g)
{
	uint32_t m = rusk_cluster_ru_machine(a->c, ru);
	rusk_machine_info mi;
	rusk_cluster_machine(a->c, m, &mi);
	rusk_bk_lease l = {task, {ru, g}};
	int rc = RUSK_EIO;
	a->st.bk.ops->release(a->st.bk.self, mi.partition, &l, 1, &rc);
	return rc == RUSK_OK;
}

/* A pass's time for its orphans' releases while the loop runs (the end's pass has none:
 * what it leaves stays held until a reclaim); those it leaves are found by the next. */
#define ORPHAN_PASS_NS (1000 * 1000000ull)

/*
 * The orphans of the ledger's pass (owner[ru] this agent's: a commit whose answer was
 * lost) released one partition at a time, each partition's in one call (one pipelined
 * script and one WAIT with --wait; before, one call and one WAIT each: 416 orphans with
 * --wait-ms 200 stalled the agent for 89 s). RUs of a partition are contiguous. A pass
 * in the loop stops starting calls after ORPHAN_PASS_NS (`bounded`).
 */
static void release_orphans(agent_run *a, const uint64_t *owner, const uint32_t *gen, uint64_t me,
                            bool bounded)
{
	uint32_t n_rus = rusk_cluster_rus(a->c);
	rusk_bk_lease *ls = malloc(sizeof *ls * (n_rus ? n_rus : 1));
	int *rcs = malloc(sizeof *rcs * (n_rus ? n_rus : 1));
	if (ls == NULL || rcs == NULL) { /* none released: each left held, as far as we know */
		for (uint32_t ru = 0; ru < n_rus; ru++)
			a->orphans_unknown += owner[ru] != 0 && (owner[ru] >> 32) == me;
		goto out;
	}
	uint64_t t0 = mono_ns();
	size_t k = 0;
	uint32_t part = 0;
	for (uint32_t ru = 0; ru <= n_rus; ru++) {
		uint32_t p = part;
		if (ru < n_rus) {
			if (owner[ru] == 0 || (owner[ru] >> 32) != me)
				continue;
			rusk_machine_info mi;
			rusk_cluster_machine(a->c, rusk_cluster_ru_machine(a->c, ru), &mi);
			p = mi.partition;
		}
		if (k > 0 && (p != part || ru == n_rus)) { /* partition part's batch */
			if (bounded && mono_ns() - t0 > ORPHAN_PASS_NS)
				break;
			for (size_t i = 0; i < k; i++)
				rcs[i] = RUSK_EIO;
			a->st.bk.ops->release(a->st.bk.self, part, ls, k, rcs);
			for (size_t i = 0; i < k; i++) {
				if (rcs[i] == RUSK_OK)
					a->orphans++;
				else /* not taken: left held, maybe (the end's report) */
					a->orphans_unknown++;
			}
			k = 0;
		}
		if (ru < n_rus) {
			ls[k++] = (rusk_bk_lease){owner[ru], {ru, gen[ru]}};
			part = p;
		}
	}
out:
	free(ls);
	free(rcs);
}

/*
 * The ledger against the state (after a failover and at the end): tasks whose RU the
 * state does not show as theirs lost an acknowledged commit (placed again: *replace grows;
 * `regranted` counts those whose RU another agent holds by now, which the ledger gives up,
 * so the RU never has two holders); RUs the state shows as this agent's but the ledger does
 * not (a commit whose answer was lost) are released (orphans, release_orphans; `bounded`:
 * a pass in the loop, its releases bounded in time).
 */
static bool ledger_check(agent_run *a, uint64_t *replace, bool bounded)
{
	if (a->st.redis == NULL)
		return true;
	uint32_t n_rus = rusk_cluster_rus(a->c);
	uint64_t *owner = calloc(n_rus ? n_rus : 1, sizeof *owner);
	uint32_t *gen = calloc(n_rus ? n_rus : 1, sizeof *gen);
	int rc = owner == NULL || gen == NULL ? RUSK_ENOMEM : read_owners(a, owner, gen);
	read_corrupt(a, rc);
	if (rc != RUSK_OK)
		goto out;
	uint64_t me = (uint64_t)a->o.agent_id + 1;
	for (size_t i = a->h_head; i < a->h_head + a->h_n; i++) {
		held *x = &a->h[i];
		if (x->id == 0)
			continue;
		if (owner[x->l.ru] == x->id && gen[x->l.ru] == x->l.gen) {
			owner[x->l.ru] = 0; /* accounted for */
			continue;
		}
		a->lost++;
		a->regranted += owner[x->l.ru] != 0 && (owner[x->l.ru] >> 32) != me;
		x->id = 0; /* dropped from the ledger: never released, never counted twice */
		(*replace)++;
	}
	release_orphans(a, owner, gen, me, bounded);
out:
	free(owner);
	free(gen);
	return rc == RUSK_OK;
}

/* Whether ns is among set[0..n) (the live run namespaces, or those printed). */
static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

static bool ns_in(const uint64_t *set, uint32_t n, uint64_t ns)
{
	for (uint32_t i = 0; i < n; i++)
		if (set[i] == ns)
			return true;
	return false;
}

/*
 * Recount (and reclaim): every partition's counts; RUs of agent `reclaim` released, with
 * --reclaim-expired those of agents whose lease expired and of run namespaces with no live
 * run lease (a `rusk run` killed: owners ns << 40 | task, ns >= 1; an agent's are
 * (agent + 1) << 32 | seq, namespace 0), and with --reclaim-run NS those of run NS.
 */
static int do_recount(agent_run *a, int reclaim, uint64_t *held_out)
{
	uint64_t held = 0, free_ = 0, mismatch = 0, reclaimed = 0, named = 0, from_runs = 0;
	uint64_t named_run = 0, forced_tasks = 0;
	uint64_t *forced = NULL; /* the owners of the RUs a forced --reclaim-run took */
	size_t n_forced = 0;
	uint32_t n_rus = rusk_cluster_rus(a->c);
	bool runs = a->o.reclaim_expired || a->o.reclaim_run != 0;
	bool dead_runs = a->o.reclaim_expired; /* cleared when the live runs cannot be read */
	if ((reclaim >= 0 || runs) && a->st.redis != NULL) {
		uint64_t *owner = calloc(n_rus ? n_rus : 1, sizeof *owner);
		uint32_t *gen = calloc(n_rus ? n_rus : 1, sizeof *gen);
		/* 0: not asked yet, 1: reclaim (named, or its lease expired), 2: keep */
		uint8_t verdict[256] = {0};
		bool read_ok =
		        owner != NULL && gen != NULL && read_owners(a, owner, gen) == RUSK_OK;
		/* The live runs (a handful: one per `rusk run` process on the state), read after
		 * the owners: a run whose owner was read committed under a live run lease, so it
		 * is dead only if that lease ended since. Read before (as it was), a run started
		 * between the two reads had its RUs taken for a dead run's. Agents' leases are
		 * read after the owners too (verdict, below). */
		uint64_t live[256];
		uint32_t n_live = 0;
		int live_rc = a->o.reclaim_expired
		                      ? rusk_redis_live_run_ns_(a->st.redis, live, 256, &n_live)
		                      : RUSK_OK;
		bool live_ok = live_rc == RUSK_OK;
		a->corrupt |= live_rc == RUSK_ECORRUPT; /* the key named below: exit 2 */
		if (!live_ok || n_live > 256) {
			fprintf(stderr,
			        "rusk agent: --reclaim-expired: reading the live runs "
			        "(rusk:{meta}:live-runs): %s: no dead run's RUs reclaimed\n",
			        live_ok ? "more than 256 live"
			                : rusk_redis_last_error_(a->st.redis));
			dead_runs = false; /* else every run's RUs would count as dead */
			n_live = 0;
		}
		/* --reclaim-run NS --force of a live run (reclaim_guard let it through): its RUs
		 * are not a dead run's. Counted apart and recorded (rusk_redis_forced_add_), so
		 * that run NS names them a forced reclaim, not commits Redis lost. */
		bool run_live = false;
		if (a->o.reclaim_run != 0 && a->o.force) {
			uint64_t lv[256];
			uint32_t nl = 0;
			run_live = rusk_redis_live_run_ns_(a->st.redis, lv, 256, &nl) == RUSK_OK &&
			           (nl > 256 || ns_in(lv, nl, a->o.reclaim_run));
			forced = run_live ? malloc(sizeof *forced * (n_rus ? n_rus : 1)) : NULL;
		}
		uint64_t said[64]; /* the dead namespaces printed (their RUs interleave) */
		uint32_t n_said = 0;
		if (read_ok)
			for (uint32_t ru = 0; ru < n_rus; ru++) {
				if (owner[ru] == 0)
					continue;
				uint64_t ns = owner[ru] >> RUSK_OWNER_NS_SHIFT;
				if (ns != 0) { /* a run's */
					bool take = ns == a->o.reclaim_run ||
					            (dead_runs && !ns_in(live, n_live, ns));
					if (!take)
						continue;
					if (ns != a->o.reclaim_run && !ns_in(said, n_said, ns) &&
					    n_said < 64) {
						printf("recount: run %" PRIu64
						       " has no live run lease "
						       "(a run that ended without releasing)\n",
						       ns);
						said[n_said++] = ns;
					}
					bool ok = release_one(a, owner[ru], ru, gen[ru]);
					bool live = run_live && ns == a->o.reclaim_run;
					reclaimed += ok;
					from_runs += ok && !live;
					named_run += ok && ns == a->o.reclaim_run;
					if (ok && live && forced != NULL)
						forced[n_forced++] = owner[ru];
					continue;
				}
				uint64_t ag =
				        (owner[ru] >> 32) - 1; /* ids are (agent + 1) << 32 | seq */
				if (ag > 254)
					continue;
				if (verdict[ag] == 0) {
					int alive = 1;
					bool named = (uint64_t)reclaim == ag && reclaim >= 0;
					if (!named && a->o.reclaim_expired &&
					    rusk_redis_lease_alive_(a->st.redis, (uint32_t)ag,
					                            &alive) == RUSK_OK &&
					    !alive)
						printf("recount: agent %" PRIu64
						       "'s lease expired\n",
						       ag);
					verdict[ag] = named || !alive ? 1 : 2;
				}
				if (verdict[ag] == 1) {
					bool ok = release_one(a, owner[ru], ru, gen[ru]);
					reclaimed += ok;
					named += ok && (uint64_t)reclaim == ag;
				}
			}
		free(owner);
		free(gen);
	}
	if (n_forced > 0) { /* the tasks: distinct owners */
		qsort(forced, n_forced, sizeof *forced, cmp_u64);
		for (size_t i = 0; i < n_forced; i++)
			forced_tasks += i == 0 || forced[i] != forced[i - 1];
		if (rusk_redis_forced_add_(a->st.redis, a->o.reclaim_run, n_forced, forced_tasks) !=
		    RUSK_OK)
			fprintf(stderr,
			        "rusk agent: --reclaim-run %" PRIu64
			        " --force: recording the forced reclaim (rusk:{meta}:forced): %s: "
			        "run %" PRIu64 " will count these RUs as lost commits\n",
			        a->o.reclaim_run, rusk_redis_last_error_(a->st.redis),
			        a->o.reclaim_run);
	}
	free(forced);
	if (a->o.reclaim_run != 0 && a->st.redis != NULL)
		printf("recount: --reclaim-run %" PRIu64 ": released %" PRIu64
		       " RUs of run %" PRIu64 "%s\n",
		       a->o.reclaim_run, named_run, a->o.reclaim_run,
		       n_forced > 0 ? " (its lease is live: a forced reclaim, recorded in "
		                      "rusk:{meta}:forced; its later releases of them are refused)"
		                    : "");
	if (reclaim >= 0 && a->st.redis != NULL) {
		/* Say what --reclaim-agent found: an id that holds nothing (never used, or its
		 * process ended cleanly) is not an error, but should not pass unnoticed. */
		int alive = 0;
		rusk_redis_lease_alive_(a->st.redis, (uint32_t)reclaim, &alive);
		if (named == 0)
			printf("recount: --reclaim-agent %d: agent %d's tasks hold no RU: nothing "
			       "to "
			       "reclaim\n",
			       reclaim, reclaim);
		else
			printf("recount: --reclaim-agent %d: released %" PRIu64
			       " RUs of agent %d\n",
			       reclaim, named, reclaim);
		if (alive) /* only with --force: refused before, at reclaim_guard */
			printf("recount: --reclaim-agent %d --force: agent %d's lease is live: a "
			       "process runs with this id (its later releases of these RUs are "
			       "refused)\n",
			       reclaim, reclaim);
	}
	for (uint32_t p = 0; p < a->np; p++) {
		rusk_bk_count k;
		int rc = a->st.bk.ops->recount(a->st.bk.self, p, &k);
		if (rc != RUSK_OK) {
			const char *e = rusk_redis_last_error_(a->st.redis);
			if (strncmp(e, "partition ", 10) == 0) /* it names the partition */
				fprintf(stderr, "rusk agent: recount: %s\n", e);
			else
				fprintf(stderr, "rusk agent: recount of partition %u: %s\n", p, e);
			a->corrupt |= rc == RUSK_ECORRUPT; /* a key of another type: exit 2 */
			return rc;
		}
		held += k.held;
		free_ += k.free;
		mismatch += k.mismatch;
	}
	printf("recount: %u partitions: held %" PRIu64 ", free %" PRIu64 ", mismatch %" PRIu64
	       ", reclaimed %" PRIu64 " (%" PRIu64 " from dead runs",
	       a->np, held, free_, mismatch, reclaimed, from_runs);
	if (n_forced > 0)
		printf("; %zu of live run %" PRIu64 ", forced", n_forced, a->o.reclaim_run);
	printf(")\n");
	if (held_out != NULL)
		*held_out = held;
	return mismatch == 0 ? RUSK_OK : RUSK_ECORRUPT;
}

/* This process's lease token: unique to it, and telling a refused second process whose
 * the id is (pid and host). */
static void make_token(char *buf, size_t len)
{
	char host[64] = "?";
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	host[sizeof host - 1] = '\0';
	uint64_t x = mono_ns() ^ (uint64_t)(uintptr_t)buf;
	FILE *f = fopen("/dev/urandom", "rb");
	if (f != NULL) {
		uint64_t y = 0;
		if (fread(&y, sizeof y, 1, f) == 1)
			x ^= y;
		fclose(f);
	}
	snprintf(buf, len, "pid %ld on %s, token %016" PRIx64, (long)getpid(), host, x);
}

/* Whether holder (a lease's token, make_token's form "pid P on HOST, token T") names a
 * process of this host that is gone; its pid and host, when it names them, in *pid, host. */
static bool holder_ended(const char *holder, long *pid, char host[64])
{
	char self[64] = "?";
	if (gethostname(self, sizeof self) != 0)
		snprintf(self, sizeof self, "?");
	self[sizeof self - 1] = '\0';
	*pid = 0;
	host[0] = '\0';
	if (sscanf(holder, "pid %ld on %63[^,]", pid, host) != 2 || *pid <= 0) {
		*pid = 0;
		host[0] = '\0';
		return false;
	}
	return strcmp(host, self) == 0 && kill((pid_t)*pid, 0) != 0 && errno == ESRCH;
}

/*
 * The wait of open_checks for the id's lease, held by holder (its token) for left ms more, to
 * lapse: one line says so (and, when the holder is a process of this host that is gone, that
 * it has ended), then a sleep until the lapse plus a margin, in slices. A stop signal cuts it
 * (the handlers are installed here, before the run's): RUSK_ESTOPPED with the message in err,
 * nothing taken. Else RUSK_OK: the caller tries the lease once more.
 */
static int lease_wait(agent_run *a, const char *holder, int64_t left, char *err, size_t errlen)
{
	const agent_opts *o = &a->o;
	long pid = 0;
	char host[64] = "";
	const char *ended = holder_ended(holder, &pid, host) ? " (that process has ended)" : "";
	drv_signals_install();
	if (pid > 0 && host[0] != '\0')
		printf("rusk agent: --agent-id %u: waiting %.1f s for the lease of an earlier "
		       "process with this id (pid %ld on %s)%s to lapse\n",
		       o->agent_id, (double)left / 1e3, pid, host, ended);
	else
		printf("rusk agent: --agent-id %u: waiting %.1f s for the lease of an earlier "
		       "process with this id (%s) to lapse\n",
		       o->agent_id, (double)left / 1e3, holder[0] ? holder : "?");
	fflush(stdout);
	uint64_t end = mono_ns() + (uint64_t)left * 1000000u + 100000000u; /* +100 ms */
	for (;;) {
		int sig = drv_stop_signal();
		if (sig != 0)
			return rusk_errf(
			        err, errlen, RUSK_ESTOPPED,
			        "--agent-id %u: stopped by %s while waiting for the lease "
			        "of an earlier process with this id to lapse: nothing taken",
			        o->agent_id,
			        sig == SIGINT   ? "SIGINT"
			        : sig == SIGHUP ? "SIGHUP"
			                        : "SIGTERM");
		uint64_t now = mono_ns();
		if (now >= end)
			return RUSK_OK;
		uint64_t d = end - now < 100000000u ? end - now : 100000000u;
		struct timespec ts = {0, (long)d};
		nanosleep(&ts, NULL); /* a signal returns it at once */
	}
}

/* A stop signal ended a wait of the start (rusk_state_open_wait_, or a call of open_checks
 * waiting out an outage): said on one line, why in `why`. Nothing was taken (a lease taken
 * meanwhile is dropped on the way out). `writing`: it came while the init wrote the state,
 * which is left half-written (why says so: rusk_redis_state_write_). */
static void start_stopped(const char *why, bool writing)
{
	int sig = drv_stop_signal();
	fprintf(stderr, "rusk agent: stopped by %s while %s (%s)%s\n",
	        sig == SIGINT   ? "SIGINT"
	        : sig == SIGHUP ? "SIGHUP"
	                        : "SIGTERM",
	        writing ? "writing the state" : "waiting for the cluster at the start", why,
	        writing ? "" : ": nothing taken");
}

/*
 * What comes before the agent touches the state, in this order, so that a refused command
 * writes nothing: --wait against the shards' replicas (as rusk run); the id's lease (not
 * for --recount and --init-only, which run no agent, nor with --lease-ms 0); with --init or
 * --init-only, no other live agent or run on the state (unless --force-init); then the
 * state written, or checked for this shape (a mismatch names both shapes and this command
 * line's options). RUSK_OK, or a code with the message in err.
 */
static int open_checks(agent_run *a, const cli_cluster *cc, char *err, size_t errlen)
{
	agent_opts *o = &a->o;
	if (a->st.redis == NULL)
		return RUSK_OK; /* memory: this process's own, always fresh */
	rusk_redis_set_failover_ms_(a->st.redis, (int)o->failover_ms);
	int rc = rusk_state_check_wait_(&a->st, o->backend, (uint32_t)o->wait, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	rusk_redis_set_wait_(a->st.redis, (int)o->wait, (int)o->wait_ms);
	bool init = o->init || o->init_only;
	if (!o->recount && !o->init_only && o->lease_ms > 0) {
		/* keep_lease's connection (none: the loop's renewals only, as before), opened
		 * before the lease is taken: the start's waits that follow the claim keep it
		 * (the waiting hook, below), and this open's own waits (a master stuck: its
		 * CLUSTER SLOTS, MYID and SCRIPT LOAD) come while nothing is held. Within the
		 * start's bound, as the first open. */
		char kerr[1024];
		int krc = rusk_state_open_within_(o->backend, a->c, RUSK_REDIS_CONNECT,
		                                  agent_stopping, NULL, a->start_end, &a->keep,
		                                  kerr, sizeof kerr);
		if (krc == RUSK_ESTOPPED)
			return rusk_errf(err, errlen, RUSK_EIO, "%s", kerr); /* exit 3 */
		if (krc != RUSK_OK) {
			a->keep.redis = NULL;
		} else {
			/* its reads short, its calls bounded (keep_lease), the start's bound
			 * lifted (keep_lease sets a deadline of its own) */
			rusk_redis_set_bound_(a->keep.redis, 0);
			rusk_redis_set_stop_(a->keep.redis, agent_stopping, NULL);
			rusk_redis_set_unavailable_ms_(a->keep.redis, KEEP_READ_MS);
			rusk_redis_set_failover_ms_(a->keep.redis, KEEP_BUDGET_MS);
		}
		make_token(a->token, sizeof a->token);
		char holder[256] = "";
		int64_t left = -1;
		rc = rusk_redis_lease_claim_(a->st.redis, o->agent_id, a->token,
		                             (uint32_t)o->lease_ms, holder, sizeof holder, &left);
		long hpid = 0;
		char hhost[64];
		if (rc == RUSK_EBUSY && left > 0 &&
		    (left <= (int64_t)o->lease_ms || holder_ended(holder, &hpid, hhost))) {
			/* Held for at most a lease term: an earlier process with this id that ended
			 * without dropping it (killed, or its releases left to the reclaim) looks
			 * the same as a live one until the lease lapses; wait for that once. A
			 * holder known to be gone (a process of this host that has ended) is waited
			 * for whatever its lease (a longer --lease-ms than this one's: the seventh
			 * review, nit 4, refused it as "another live rusk agent"); the wait is
			 * bounded by that lease (--lease-ms at most 3600000). */
			rc = lease_wait(a, holder, left, err, errlen);
			if (rc != RUSK_OK)
				return rc; /* a stop signal: exit 3 */
			/* a wait for the lease, not for the cluster: the bound starts again */
			a->start_end = mono_ns() + o->failover_ms * 1000000u;
			rusk_redis_set_bound_(a->st.redis, a->start_end);
			rc = rusk_redis_lease_claim_(a->st.redis, o->agent_id, a->token,
			                             (uint32_t)o->lease_ms, holder, sizeof holder,
			                             &left);
		}
		if (rc == RUSK_EBUSY)
			return rusk_errf(
			        err, errlen, rc,
			        "--agent-id %u: another live rusk agent holds this id at %s "
			        "(%s; its lease rusk:{meta}:alive:%u ends in %.1f s unless it "
			        "renews it): give every agent process its own --agent-id; if "
			        "that process died, the id is free once its lease expires",
			        o->agent_id, o->backend, holder[0] ? holder : "?", o->agent_id,
			        left > 0 ? (double)left / 1e3 : 0.0);
		if (rc != RUSK_OK)
			return rusk_errf(err, errlen, rc,
			                 "--agent-id %u: taking its lease at %s: %s", o->agent_id,
			                 o->backend, rusk_redis_last_error_(a->st.redis));
		a->leased = true;
		a->renewed_ns = mono_ns();
		/* the automatic reclaim believes an absent lease only after a lease of the
		 * {meta} shard answering without a gap */
		rusk_redis_set_reclaim_lease_(a->st.redis, (uint32_t)o->lease_ms);
		/* The lease kept while the start's calls below wait out an outage (up to
		 * --failover-ms: a stuck master), as the loop's calls keep it (keep_lease):
		 * before, it lapsed under a live agent about to run, and another process could
		 * take the id, or its reclaim the agent's first RUs. */
		rusk_redis_set_waiting_(a->st.redis, agent_waiting, a);
	}
	if (init && !o->force_init) {
		rc = rusk_state_init_guard_(&a->st, o->backend, a->leased ? (int)o->agent_id : -1,
		                            "stop them first, or leave out --init to join the "
		                            "state (--force-init writes it anyway: they stop)",
		                            err, errlen);
		if (rc != RUSK_OK)
			return rc;
	}
	/* The epoch before a check (a write between the two makes the first renewal stop the
	 * agent: safe), after this process's own write. */
	if (!init && rusk_redis_epoch_(a->st.redis, &a->epoch) != RUSK_OK)
		return rusk_errf(err, errlen, RUSK_EIO, "--backend %s: %s", o->backend,
		                 rusk_redis_last_error_(a->st.redis));
	/* The cluster flags go with the state; a mismatch names the ones that differ. */
	char flags[512];
	cli_cluster_describe(cc, a->c, flags, sizeof flags);
	rusk_redis_set_flags_(a->st.redis, flags);
	a->writing = init;
	rc = RUSK_OK;
	if (!init) /* an init under way, or stopped half-way: the state is not whole */
		rc = rusk_redis_init_unfinished_(a->st.redis, err, errlen);
	if (rc == RUSK_OK)
		rc = init ? rusk_redis_state_write_(a->st.redis, err, errlen)
		          : rusk_redis_state_check_(a->st.redis, err, errlen);
	if (rc == RUSK_OK)
		a->writing = false;
	if (rc == RUSK_ESHAPE) {
		size_t u = strlen(err);
		snprintf(err + u, errlen - u, " (this command line: %s)", flags);
	}
	const char *unrep =
	        rc == RUSK_OK && init ? rusk_redis_init_unreplicated_(a->st.redis) : NULL;
	if (unrep != NULL) /* written: a warning, not a failure (docs/redis.md, Faults) */
		fprintf(stderr, "rusk agent: warning: --backend %s: %s\n", o->backend, unrep);
	if (rc == RUSK_OK && init && rusk_redis_epoch_(a->st.redis, &a->epoch) != RUSK_OK)
		rc = rusk_errf(err, errlen, RUSK_EIO, "--backend %s: %s", o->backend,
		               rusk_redis_last_error_(a->st.redis));
	return rc;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

static double pct(const double *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)ceil(q * (double)n) - 1;
	return v[i < n ? i : n - 1];
}

/* Whether partition p is marked unavailable now (note_unavail keeps since[p]). */
static bool unavailable(const agent_run *a, uint32_t p)
{
	return a->un_on && a->un.since[p] != 0;
}

/* Follows the backend's marks (rusk_redis_part_unavailable_), at most once a millisecond:
 * a partition marked is skipped by pick_part as a full one is, its time counted. closing:
 * the loop ended, every mark's time ends now. */
static void note_unavail(agent_run *a, uint64_t now, bool closing)
{
	if (!a->un_on || (!closing && now < a->unavail_check))
		return;
	a->unavail_check = now + 1000000u;
	for (uint32_t p = 0; p < a->np; p++)
		rusk_unavail_note_(&a->un, p,
		                   !closing && rusk_redis_part_unavailable_(a->st.redis, p), now);
	if (closing)
		a->unavail_s = rusk_unavail_s_(&a->un, now);
}

/* Picks the freshest partition with a free RU in the view (Latency-first), not one that is
 * unavailable (its node stuck or unreachable: its tasks go to the others). */
static int pick_part(agent_run *a, uint32_t *out)
{
	int best = -1;
	uint32_t start = rusk_rng_below(&a->rng, a->np);
	for (uint32_t k = 0; k < a->np; k++) {
		uint32_t p = (start + k) % a->np;
		if (unavailable(a, p))
			continue;
		bool any = false;
		for (uint32_t w = 0; w < a->n_words[p] && !any; w++)
			any = a->words[p][w] != 0;
		if (any && (best < 0 || a->synced_ns[p] > a->synced_ns[best]))
			best = (int)p;
	}
	if (best < 0)
		return -1;
	*out = (uint32_t)best;
	return 0;
}

/* Draws a free RU of partition p from the view and marks it taken there; -1 if none. */
static int64_t draw(agent_run *a, uint32_t p, uint32_t n_rus)
{
	uint64_t *w = a->words[p];
	for (int t = 0; t < 16; t++) {
		uint32_t i = rusk_rng_below(&a->rng, n_rus);
		if (w[i / 64] >> (i % 64) & 1) {
			w[i / 64] &= ~(UINT64_C(1) << (i % 64));
			return i;
		}
	}
	uint32_t s = rusk_rng_below(&a->rng, a->n_words[p]);
	for (uint32_t k = 0; k < a->n_words[p]; k++) {
		uint32_t j = (s + k) % a->n_words[p];
		if (w[j] != 0) {
			int b = __builtin_ctzll(w[j]);
			w[j] &= w[j] - 1;
			return (int64_t)j * 64 + b;
		}
	}
	return -1;
}

/*
 * Renews the id's lease (only this process's token extends it: the script compares) and
 * reads the state's epoch in the same round trip. False, with the reason printed, when
 * this process must stop at once: another process holds the id now (this one stalled past
 * its lease and the id was taken over), or the state was written afresh (`rusk run`
 * without --no-init, `--init --force-init`): its RUs and leases name a state that is gone,
 * so it releases nothing (a recount of the new state finds nothing of its). A failed call
 * (a failover) is tried again at the next renewal.
 */
static bool lease_renew(agent_run *a)
{
	int lapsed = 0;
	uint64_t epoch = a->epoch;
	int rc = rusk_redis_lease_renew_(a->st.redis, a->o.agent_id, a->token,
	                                 (uint32_t)a->o.lease_ms, &lapsed, &epoch);
	a->renewed = rc == RUSK_OK;
	if (rc == RUSK_OK)
		a->renewed_ns = mono_ns();
	if (rc == RUSK_ECORRUPT) { /* a meta key of another type: stop, exit 2 */
		fprintf(stderr, "rusk agent: --backend %s: renewing the lease: %s\n", a->o.backend,
		        rusk_redis_last_error_(a->st.redis));
		a->corrupt = true;
		return false;
	}
	if (rc == RUSK_EBUSY) {
		fprintf(stderr,
		        "rusk agent: --agent-id %u: another process took this id's lease "
		        "(rusk:{meta}:alive:%u) at %s after this one let it expire (stalled longer "
		        "than --lease-ms %" PRIu64
		        "): stopping; the other process's ledger releases "
		        "what this one held\n",
		        a->o.agent_id, a->o.agent_id, a->o.backend, a->o.lease_ms);
		a->stopped = 1;
		a->leased = false;
		return false;
	}
	if (rc != RUSK_OK)
		return true;
	a->lapsed += lapsed != 0;
	if (epoch != a->epoch) {
		fprintf(stderr,
		        "rusk agent: the state at %s was written afresh while this agent ran "
		        "(rusk:{meta}:epoch %" PRIu64 " -> %" PRIu64
		        ": `rusk run` without --no-init, "
		        "or --init --force-init): the RUs it held are gone with the old state; "
		        "stopping\n",
		        a->o.backend, a->epoch, epoch);
		a->stopped = 2;
		return false;
	}
	return true;
}

/*
 * The automatic reclaim, after each lease renewal (unless --no-auto-reclaim): the RUs of
 * every agent whose lease expired and of every run whose run lease expired are released
 * (rusk_redis_reclaim_dead_: one round trip when nobody is dead; the rules that keep a live
 * process's RUs, and two reclaimers from releasing one RU twice, are its). So an agent
 * killed beside live ones loses its RUs about a lease after its death, without a recount
 * by hand. This agent's own id is never taken for dead. A failed pass is tried again at
 * the next renewal.
 */
static void auto_reclaim(agent_run *a)
{
	rusk_redis_reclaim x;
	int rc = rusk_redis_reclaim_dead_(a->st.redis, a->token, (int)a->o.agent_id, 0, &x);
	if (rc == RUSK_ECORRUPT) { /* a meta key of another type: stop, exit 2 (run_loop) */
		fprintf(stderr, "rusk agent: --backend %s: the automatic reclaim: %s\n",
		        a->o.backend, rusk_redis_last_error_(a->st.redis));
		a->corrupt = true;
	}
	if (rc != RUSK_OK)
		return;
	a->reclaim_busy += (uint64_t)x.busy;
	a->reclaim_unsteady += (uint64_t)x.unsteady;
	a->closer_ns = (uint64_t)x.closer_ms * 1000000u / 2; /* half: a late renewal's room */
	a->reclaim_passes += x.passes;
	a->reclaimed_expired += x.reclaimed;
	a->reclaimed_runs += x.from_runs;
	a->reclaim_agents += x.agents_new; /* each dead process once, over the passes */
	a->reclaim_runs += x.runs_new;
	if (x.reclaimed > 0)
		printf("reclaim: released %" PRIu64 " RUs of %u dead agent%s and %u dead run%s "
		       "(their leases expired)\n",
		       x.reclaimed, x.agents, x.agents == 1 ? "" : "s", x.runs,
		       x.runs == 1 ? "" : "s");
}

/*
 * The lease kept alive while the loop is held in a call (keep_lease, from the connection's
 * waiting hook, rusk_redis_set_waiting_): a call that waits out an outage of another master
 * (--unavailable-ms 0, or the end's ledger check and releases, which wait for every
 * partition) held the loop, and with it the renewals, past the lease: a live agent's lease
 * lapsed and another process's automatic reclaim released its RUs while its tasks ran (the
 * sixth review: 1,138 RUs of a live agent, 12 of them granted again, and the loss reported
 * as Redis's). Once the last renewal is KEEP_LATE_NS past its third of a lease (the loop
 * renews every third: it is held), the hook renews on a connection of its own: the outage
 * of another master does not hold it.
 *
 * It must never hold the loop itself (the seventh review: run from the stop hook, which
 * every call asks, it renewed from calls to healthy masters; with the {meta} master stuck
 * each renewal blocked 2 s on it and, failing, was made again at the next call: the loop
 * placed nothing while --unavailable-ms skipped that master, and the end outlasted
 * --failover-ms). So it runs only from a call already held by an outage, between its tries;
 * an attempt is made at most every KEEP_RETRY_NS, answered or not; none while the loop's
 * connection has the {meta} master marked unavailable (the loop's own renewals probe it
 * then, soon after a failed one: lease_retry_ns); and the keep connection's reads time out after
 * KEEP_READ_MS, its calls within KEEP_BUDGET_MS (a node stuck there is marked unavailable
 * on it too). The attempts' time is lease_keep_s (JSON), part of the outage of the call
 * that made them. The hook runs between a waiting call's tries, so a read that blocks on a
 * hung master (2 s + --wait-ms with --unavailable-ms 0, else --unavailable-ms) delays it: a
 * lease shorter than a third plus that can still lapse (the default 5 s lease has 3.2 s of
 * room). A renewal that finds the id taken or the state written afresh does nothing here:
 * the loop's next renewal finds it too, and stops (lease_renew).
 */
static void keep_lease(agent_run *a)
{
	uint64_t now = mono_ns(), lease_ns = a->o.lease_ms * 1000000u;
	if (!a->leased || a->keep.redis == NULL || a->in_keep ||
	    now - a->renewed_ns < lease_ns / 3 + KEEP_LATE_NS ||
	    now - a->keep_tried_ns < KEEP_RETRY_NS || rusk_redis_meta_unavailable_(a->st.redis))
		return;
	a->in_keep = true;
	a->keep_tried_ns = now;
	int lapsed = 0;
	uint64_t epoch = a->epoch;
	rusk_redis_set_deadline_(a->keep.redis, now + KEEP_BUDGET_MS * 1000000ull);
	if (rusk_redis_lease_renew_(a->keep.redis, a->o.agent_id, a->token, (uint32_t)a->o.lease_ms,
	                            &lapsed, &epoch) == RUSK_OK) {
		a->renewed_ns = mono_ns();
		a->kept++;
		a->lapsed += lapsed != 0;
	}
	a->keep_ns += mono_ns() - now;
	a->in_keep = false;
}

/*
 * When the loop renews again after a renewal that failed (an outage of the {meta} master):
 * a quarter of what is left of the lease (since the last renewal answered, renewed_ns), at
 * least LEASE_RETRY_NS, at most the third of a lease of the renewals answered; once the
 * lease is past (lapsed: the next renewal takes it again), a third of it but at most
 * LAPSED_RETRY_NS, so that a long lease is taken again within a second of the {meta}
 * shard's return, not a third of it later (the ninth review: a 9 s lease taken again 2.6 s
 * after a pause, while a reclaimer with a 1 s lease believed it absent after 2 s; the
 * reclaimer now waits out the dead agent's own lease too, steady_for in
 * core/state/redis.c, and this shortens the time the live agent's lease is absent, its
 * RUs out of every reclaimer's reach only by that wait). Each such renewal probes
 * {meta} even while it is marked unavailable (rusk_redis_meta_retry_now_: a PING within
 * 200 ms), so that a master back within the lease is renewed on before it lapses (the
 * eighth review: with a third between tries and the probe's backoff up to 2 s, a pause of
 * 3 s, shorter than the 5 s lease, let it lapse 5 times of 5 and a plain reclaim released
 * the live agent's RUs). A quarter keeps the probes few in a long outage (about five,
 * 1 s of the loop's time, in the 3.3 s of the default lease left after a third) while the
 * lease is still held by the time a master back is probed.
 */
static uint64_t lease_retry_ns(const agent_run *a, uint64_t now)
{
	uint64_t lease_ns = a->o.lease_ms * 1000000u, third = lease_ns / 3;
	uint64_t end = a->renewed_ns + lease_ns;
	if (end <= now)
		return third < LAPSED_RETRY_NS ? third : LAPSED_RETRY_NS;
	uint64_t q = (end - now) / 4;
	return q < LEASE_RETRY_NS ? LEASE_RETRY_NS : q > third ? third : q;
}

/* The loop's connection's waiting hook (rusk_redis_set_waiting_): a call of it is held by an
 * outage. Owner thread. */
static void agent_waiting(void *arg)
{
	keep_lease(arg);
}

/* The connections' stop hook (rusk_redis_set_stop_): a stop signal came. Any thread. */
static int agent_stopping(void *arg)
{
	(void)arg;
	return drv_stop_signal() != 0;
}

static int run_loop(agent_run *a)
{
	uint32_t B = a->o.batch;
	rusk_bk_claim *cl = malloc(B * sizeof *cl);
	uint32_t *rus = malloc(B * sizeof *rus);
	rusk_lease *ls = malloc(B * sizeof *ls);
	int *rcs = malloc(B * sizeof *rcs);
	if (cl == NULL || rus == NULL || ls == NULL || rcs == NULL) {
		free(cl);
		free(rus);
		free(ls);
		free(rcs);
		return RUSK_ENOMEM;
	}
	uint64_t t0 = mono_ns(), end = t0 + (uint64_t)(a->o.duration_s * 1e9);
	uint64_t step_ns = a->o.gap_ms * 1000000u;
	if (a->o.policy != RUSK_SYNC_STATE)
		step_ns /= a->o.agents;
	if (step_ns == 0)
		step_ns = 1;
	uint64_t task_ns = (uint64_t)(a->o.task_ms * 1e6), step = 0, next_sync = t0;
	uint64_t arrived = 0, backlog = 0, last_commit = t0, reconnects = 0;
	uint64_t ledger_ns = a->o.ledger_ms * 1000000u, next_ledger = t0 + ledger_ns;
	/* The lease is renewed three times per period: one late renewal is not a death. */
	uint64_t lease_ns = a->o.lease_ms * 1000000u / 3, next_lease = t0;
	read_parts(a, 0, a->np, t0); /* a first full view */
	for (uint32_t p = 0; p < a->np; p++)
		a->synced_ns[p] = t0;
	for (;;) {
		uint64_t now = mono_ns();
		if (a->o.rate > 0) {
			/* Arrivals up to now, or to the end when a commit that waited out an
			 * outage returns after it: counted before the loop ends, so that
			 * arrived = rate x elapsed_s (it came short by the outage's tail). */
			uint64_t upto = now < end ? now : end;
			uint64_t due = (uint64_t)((double)(upto - t0) * 1e-9 * a->o.rate);
			backlog += due - arrived;
			arrived = due;
		}
		if (now >= end || drv_stop_signal() != 0)
			break;
		/* A node refused the password on a reconnect (it was changed): no retry mends
		 * it; before, every call waited out --failover-ms as for an outage. */
		const char *auth =
		        a->st.redis != NULL ? rusk_redis_auth_failed_(a->st.redis) : NULL;
		if (auth != NULL) {
			fprintf(stderr, "rusk agent: --backend %s: %s: stopping\n", a->o.backend,
			        auth);
			a->corrupt = true; /* exit 2 (main) */
			break;
		}
		note_unavail(a, now, false);
		if (a->leased && lease_ns > 0 && now >= next_lease) {
			uint64_t lapsed = a->lapsed;
			/* {meta} marked unavailable: probed now, not after its backoff */
			rusk_redis_meta_retry_now_(a->st.redis);
			if (!lease_renew(a))
				break; /* the id or the state is gone: stop (lease_renew says why)
				        */
			if (a->renewed) {
				next_lease = now + lease_ns;
			} else {
				uint64_t t = mono_ns();
				next_lease = t + lease_retry_ns(a, t);
			}
			/* Lapsed (a stall past the lease): a reclaim may have released its RUs
			 * meanwhile; the ledger check after the next commit finds out. */
			if (a->lapsed != lapsed)
				next_ledger = now;
			if (!a->o.no_auto_reclaim && a->renewed) {
				auto_reclaim(a); /* not when the renewal failed (an outage) */
				if (a->closer_ns > 0 && a->closer_ns < lease_ns)
					next_lease = now + a->closer_ns;
			}
			if (a->corrupt)
				break;
		}
		if (now >= next_sync) {
			sync_step(a, step++, now);
			if (a->corrupt || a->gone)
				break;
			next_sync += step_ns;
			if (next_sync < now)
				next_sync = now + step_ns;
		}
		/* Completions: the FIFO's head, in end order. */
		size_t done = 0;
		while (done < a->h_n && a->h[a->h_head + done].end_ns <= now)
			done++;
		if (done > 0) {
			release_range(a, a->h_head, a->h_head + done);
			a->h_head += done;
			a->h_n -= done;
			requeue(a, now);
		}
		if (a->o.rate == 0)
			backlog = B;
		if (backlog == 0) {
			struct timespec ts = {0, 50000};
			nanosleep(&ts, NULL);
			continue;
		}
		uint32_t p;
		if (pick_part(a, &p) != 0) {
			struct timespec ts = {0, 200000};
			nanosleep(&ts, NULL); /* the view is full: wait for a sync or a release */
			next_sync = now;
			continue;
		}
		rusk_partition_info pi;
		rusk_cluster_partition(a->c, p, &pi);
		uint32_t k = 0;
		while (k < B && k < backlog) {
			int64_t i = draw(a, p, pi.rus);
			if (i < 0)
				break;
			uint64_t task = 0;
			if (rusk_redis_agent_task_(a->o.agent_id, &a->seq, &task) != RUSK_OK) {
				/* Its ids are spent: stop rather than reuse one (another id's). */
				a->words[p][i / 64] |= UINT64_C(1) << (i % 64); /* undrawn */
				a->ids_spent = true;
				a->fatal = RUSK_ERANGE;
				snprintf(
				        a->fatal_msg, sizeof a->fatal_msg,
				        "--agent-id %u: this process's task ids are spent (%" PRIu64
				        " tasks; ids are (agent + 1) << 32 | a 32-bit sequence): a "
				        "new process with this --agent-id starts afresh",
				        a->o.agent_id, a->seq);
				break;
			}
			rus[k] = pi.first_ru + (uint32_t)i;
			cl[k] = (rusk_bk_claim){task, rusk_cluster_ru_machine(a->c, rus[k]), 1,
			                        &rus[k], (rusk_vec_demand){0}};
			cl[k].vec.mem_mib = a->o.task_mem;
			k++;
		}
		if (k == 0 && a->ids_spent)
			break; /* nothing to commit: stop (main says why) */
		uint64_t c0 = mono_ns();
		int rc = a->st.bk.ops->commit(a->st.bk.self, p, cl, k, rcs, ls);
		uint64_t c1 = mono_ns();
		if (rc == RUSK_EAGAIN) {
			/* p became unavailable: nothing was sent, its RUs stay free in the view
			 * (skipped while p is), and the tasks wait for the next batch */
			for (uint32_t j = 0; j < k; j++) {
				uint32_t i = rus[j] - pi.first_ru;
				a->words[p][i / 64] |= UINT64_C(1) << (i % 64);
			}
			a->unavail_check = 0;
			note_unavail(a, c1, false);
			continue;
		}
		rtt_add(a, (double)(c1 - c0) * 1e-6);
		a->batches++;
		a->claims += k;
		a->stale_sum_ms += (double)(c0 - a->synced_ns[p]) * 1e-6 * k;
		uint32_t won = 0;
		for (uint32_t j = 0; j < k; j++) {
			if (rcs[j] == RUSK_OK) {
				won++;
				held_push(a, (held){cl[j].task, c1 + task_ns, p, ls[j]});
			} else if (rcs[j] == RUSK_ECONFLICT || rcs[j] == RUSK_EDUP) {
				a->conflicts++;
			} else if (rcs[j] == RUSK_ESHORT_) {
				a->memory_short++; /* the RU was free: not a conflict */
				short_skip(a, p, cl[j].machine);
			} else if (rcs[j] == RUSK_ECORRUPT) {
				a->corrupt = true; /* the script wrote nothing (redis_lua.h) */
			} else if (rcs[j] == RUSK_EIO && a->st.redis != NULL &&
			           rusk_redis_state_lost_(a->st.redis)) {
				/* its partition's state gone: said below (state_gone) */
			} else if (rcs[j] == RUSK_EIO && rc != RUSK_OK) {
				a->claims_unknown++; /* the answer was lost with the connection */
			} else if (a->fatal == 0) {
				/* Every later claim would answer the same: counting them as
				 * "unknown" hid an impossible task (25,264 of them, exit 0). */
				a->fatal = rcs[j];
				snprintf(a->fatal_msg, sizeof a->fatal_msg, "%s",
				         a->st.redis != NULL ? rusk_redis_last_error_(a->st.redis)
				                             : rusk_strerror(rcs[j]));
			}
		}
		if (a->corrupt) {
			fprintf(stderr, "rusk agent: --backend %s: %s\n", a->o.backend,
			        rusk_redis_last_error_(a->st.redis));
			break;
		}
		if (state_gone(a))
			break;
		a->placed += won;
		backlog -= won;
		uint64_t sec = (c1 - t0) / 1000000000u;
		a->placed_s[sec < PLACED_SECONDS ? sec : PLACED_SECONDS - 1] += won;
		rusk_unavail_placed_(&a->un, won); /* placed while a partition was unavailable */
		if (won > 0) {
			double gap = (double)(c1 - last_commit) * 1e-9;
			if (gap > a->max_gap_s)
				a->max_gap_s = gap;
			last_commit = c1;
		}
		if (a->st.redis != NULL) {
			rusk_redis_stats s = rusk_redis_stats_(a->st.redis);
			if (s.reconnects != reconnects || (ledger_ns > 0 && c1 >= next_ledger)) {
				/* A shard failed over (or the periodic check is due): what did the
				 * state lose of what it acknowledged? */
				reconnects = s.reconnects;
				next_ledger = c1 + ledger_ns;
				uint64_t replace = 0;
				ledger_check(a, &replace, true);
				a->replaced += replace;
				backlog += replace;
			}
		}
		if (a->fatal != 0 || a->corrupt)
			break;
	}
	uint64_t t1 = mono_ns();
	a->elapsed_s = (double)(t1 - t0) * 1e-9;
	note_unavail(a, t1, true); /* the times of those still marked end here */
	/* The trailing gap: from the last commit to the loop's end (a stuck partition's commit
	 * that returned after --duration-s placed nothing, so no gap was taken above). */
	if ((double)(t1 - last_commit) * 1e-9 > a->max_gap_s)
		a->max_gap_s = (double)(t1 - last_commit) * 1e-9;
	/* Open loop: arrived + replaced = placed + backlog_end (after the end's ledger check). */
	a->arrived = a->o.rate > 0 ? arrived : 0;
	a->backlog_end = a->o.rate > 0 ? backlog : 0;
	free(cl);
	free(rus);
	free(ls);
	free(rcs);
	return RUSK_OK;
}

static const cli_choice sync_names[] = {
        {"diff", RUSK_SYNC_DIFF}, {"same", RUSK_SYNC_SAME}, {"state", RUSK_SYNC_STATE}, {NULL, 0}};

static const char *sync_name(int policy)
{
	for (const cli_choice *c = sync_names; c->name != NULL; c++)
		if (c->value == policy)
			return c->name;
	return "?";
}

/*
 * Before --reclaim-agent I / --reclaim-run NS release anything: refused (RUSK_EBUSY, the
 * message printed) while that process's lease is live, since it runs tasks on the RUs the
 * state would then show free (--force reclaims anyway). A lease that cannot be read refuses
 * too (RUSK_EIO).
 */
static int reclaim_guard(agent_run *a)
{
	const agent_opts *o = &a->o;
	if (a->st.redis == NULL)
		return RUSK_OK;
	if (o->reclaim_agent >= 0) {
		int alive = 0;
		char holder[256] = "";
		int64_t left = -1;
		if (rusk_redis_lease_holder_(a->st.redis, (uint32_t)o->reclaim_agent, &alive,
		                             holder, sizeof holder, &left) != RUSK_OK) {
			fprintf(stderr, "rusk agent: --reclaim-agent %d: reading its lease: %s\n",
			        o->reclaim_agent, rusk_redis_last_error_(a->st.redis));
			return RUSK_EIO;
		}
		if (alive) {
			fprintf(stderr,
			        "rusk agent: --reclaim-agent %d: agent %d's lease is live (%s; "
			        "rusk:{meta}:alive:%d ends in %.1f s unless renewed): stop it "
			        "first, "
			        "or wait for its lease to expire (--force reclaims anyway: that "
			        "agent then runs tasks on RUs the state shows free)\n",
			        o->reclaim_agent, o->reclaim_agent, holder, o->reclaim_agent,
			        left > 0 ? (double)left / 1e3 : 0.0);
			return RUSK_EBUSY;
		}
	}
	if (o->reclaim_run != 0) {
		uint64_t live[256];
		uint32_t n = 0;
		if (rusk_redis_live_run_ns_(a->st.redis, live, 256, &n) != RUSK_OK) {
			fprintf(stderr,
			        "rusk agent: --reclaim-run %" PRIu64
			        ": reading the live runs: %s\n",
			        o->reclaim_run, rusk_redis_last_error_(a->st.redis));
			return RUSK_EIO;
		}
		if (n > 256 || ns_in(live, n, o->reclaim_run)) {
			fprintf(stderr,
			        "rusk agent: --reclaim-run %" PRIu64 ": run %" PRIu64
			        "'s lease is live (rusk:{meta}:live-runs): stop it first, or wait "
			        "for its lease to expire (--force reclaims anyway)\n",
			        o->reclaim_run, o->reclaim_run);
			return RUSK_EBUSY;
		}
	}
	return RUSK_OK;
}

/* Why the loop ended, for the JSON line: "duration" (--duration-s ran out), "signal",
 * "error" (a commit's error, a->fatal), "epoch" (the state was written afresh) or
 * "lease_taken" (another process took this id's lease). */
static const char *stop_why(const agent_run *a, int sig)
{
	if (a->stopped == 1)
		return "lease_taken";
	if (a->stopped == 2)
		return "epoch";
	if (a->fatal != 0)
		return "error";
	return sig != 0 ? "signal" : "duration";
}

/* The shortest --lease-ms but 0 (no lease); see the check in rusk_cmd_agent. */
#define LEASE_MIN_MS 1000u

int rusk_cmd_agent(int argc, char **argv)
{
	agent_run a;
	memset(&a, 0, sizeof a);
	agent_opts *o = &a.o;
	o->agents = 1;
	o->batch = 32;
	o->gap_ms = 10;
	o->duration_s = 3;
	o->task_ms = 100;
	o->wait_ms = 100;
	o->failover_ms = 30000;
	o->ledger_ms = 1000;
	o->lease_ms = 5000;
	o->unavail_ms = 1000;
	o->reclaim_agent = -1;
	o->reclaim_u = UINT64_MAX;
	int policy = RUSK_SYNC_DIFF;
	const char *reclaim_given = NULL, *wait_given = NULL, *wait_ms_given = NULL;
	const char *lease_given = NULL, *failover_given = NULL, *unavail_given = NULL;
	cli_cluster cc;
	cli_cluster_init(&cc);
	cc.params.machines = 1000;
	const cli_opt opts[] = {
	        {CLI_CUSTOM_OPT("--backend", opt_backend, &o->backend)},
	        {CLI_FLAG_OPT("--init", &o->init)},
	        {CLI_FLAG_OPT("--init-only", &o->init_only)},
	        {CLI_FLAG_OPT("--force-init", &o->force_init)},
	        {CLI_FLAG_OPT("--recount", &o->recount)},
	        {CLI_U32_OPT("--agent-id", 0, 254, &o->agent_id)},
	        {CLI_U32_OPT("--agents", 1, 255, &o->agents)},
	        {CLI_CHOICE_OPT("--sync", sync_names, &policy)},
	        {CLI_U64_OPT("--gap-ms", 1, 3600000, &o->gap_ms)},
	        {CLI_DOUBLE_OPT("--rate", 0, 1e7, &o->rate)},
	        {CLI_DOUBLE_OPT("--duration-s", 0.01, 86400, &o->duration_s)},
	        {CLI_DOUBLE_OPT("--task-ms", 0.001, 86400000, &o->task_ms)},
	        {CLI_U32_OPT("--task-mem-mib", 0, 1u << 30, &o->task_mem)},
	        {CLI_U32_OPT("--batch", 1, 4096, &o->batch)},
	        {CLI_U64_OPT("--wait", 1, 16, &o->wait), .given = &wait_given},
	        {CLI_U64_OPT("--wait-ms", 1, 60000, &o->wait_ms), .given = &wait_ms_given},
	        {CLI_U64_OPT("--failover-ms", 1, 600000, &o->failover_ms),
	         .given = &failover_given},
	        {CLI_U64_OPT("--ledger-ms", 0, 3600000, &o->ledger_ms)},
	        {CLI_U64_OPT("--unavailable-ms", 0, 60000, &o->unavail_ms),
	         .given = &unavail_given},
	        {CLI_U64_OPT("--lease-ms", 0, 3600000, &o->lease_ms), .given = &lease_given},
	        {CLI_FLAG_OPT("--reclaim-expired", &o->reclaim_expired)},
	        {CLI_U64_OPT("--reclaim-agent", 0, 254, &o->reclaim_u), .given = &reclaim_given},
	        {CLI_U64_OPT("--reclaim-run", 1, (UINT64_C(1) << 24) - 1, &o->reclaim_run)},
	        {CLI_FLAG_OPT("--force", &o->force)},
	        {CLI_FLAG_OPT("--no-auto-reclaim", &o->no_auto_reclaim)},
	};
	int pr = cli_parse("agent", argc, argv, &cc, opts, sizeof opts / sizeof *opts, agent_usage);
	if (pr != 0)
		return pr > 0 ? 0 : RUSK_EXIT_USAGE;
	o->policy = (rusk_sync_policy)policy;
	/* o->backend as every message and report shows it (the password masked); the URL as
	 * given opens the state. */
	const char *url = o->backend;
	char shown[512];
	if (url != NULL)
		o->backend = rusk_redis_mask_url_(url, shown, sizeof shown);
	if (reclaim_given != NULL)
		o->reclaim_agent = (int)o->reclaim_u;
	if (o->backend == NULL) {
		fprintf(stderr, "rusk agent: --backend is required (memory or "
		                "redis://HOST:PORT[,HOST:PORT...])\n");
		return RUSK_EXIT_USAGE;
	}
	/* The options of a state on Redis, which the in-process state has no use for: before,
	 * `--backend memory --init-only` printed "wrote the empty state at memory" and
	 * --recount, --reclaim-expired and --lease-ms were taken and did nothing. */
	if (strcmp(o->backend, "memory") == 0) {
		const char *only = o->init                  ? "--init"
		                   : o->init_only           ? "--init-only"
		                   : o->force_init          ? "--force-init"
		                   : o->recount             ? "--recount"
		                   : o->reclaim_expired     ? "--reclaim-expired"
		                   : reclaim_given != NULL  ? "--reclaim-agent"
		                   : o->reclaim_run != 0    ? "--reclaim-run"
		                   : o->force               ? "--force"
		                   : lease_given != NULL    ? "--lease-ms"
		                   : failover_given != NULL ? "--failover-ms"
		                   : unavail_given != NULL  ? "--unavailable-ms"
		                   : wait_given != NULL     ? "--wait"
		                   : wait_ms_given != NULL  ? "--wait-ms"
		                                            : NULL;
		if (only != NULL) {
			fprintf(stderr,
			        "rusk agent: %s: only with --backend redis://... (the state "
			        "on Redis; --backend %s has no use for it)\n",
			        only, o->backend);
			return RUSK_EXIT_USAGE;
		}
	}
	/* A lease shorter than a few round trips plus a renew period (MS/3) lapses while its
	 * agent is alive: at --lease-ms 1 a second agent with the same id ran beside the first
	 * and freed its RUs, and at 10 --reclaim-expired reclaimed 1,686 RUs from a live
	 * agent. 1000 ms leaves a renewal (every 333 ms) two tries of slack on a loaded host. */
	if (o->lease_ms != 0 && o->lease_ms < LEASE_MIN_MS) {
		fprintf(stderr,
		        "rusk agent: --lease-ms %" PRIu64 ": below %u ms (0: no lease): a lease "
		        "must outlive several round trips and a renew period (MS/3), or a live "
		        "agent's lease lapses and its id and RUs are taken\n",
		        o->lease_ms, LEASE_MIN_MS);
		return RUSK_EXIT_USAGE;
	}
	/* Below 100 ms a healthy master's slow answer on a loaded host would mark it
	 * unavailable, and the batch it was answering would count as lost answers. */
	if (o->unavail_ms != 0 && o->unavail_ms < 100) {
		fprintf(stderr,
		        "rusk agent: --unavailable-ms %" PRIu64 ": below 100 ms (0: off): a "
		        "healthy master's slow answer would mark it unavailable\n",
		        o->unavail_ms);
		return RUSK_EXIT_USAGE;
	}
	if (o->agent_id >= o->agents) {
		fprintf(stderr, "rusk agent: --agent-id %u: must be below --agents %u\n",
		        o->agent_id, o->agents);
		return RUSK_EXIT_USAGE;
	}
	if ((o->reclaim_agent >= 0 || o->reclaim_expired || o->reclaim_run != 0) && !o->recount) {
		fprintf(stderr, "rusk agent: %s needs --recount\n",
		        o->reclaim_expired    ? "--reclaim-expired"
		        : o->reclaim_run != 0 ? "--reclaim-run"
		                              : "--reclaim-agent");
		return RUSK_EXIT_USAGE;
	}
	if (o->force && o->reclaim_agent < 0 && o->reclaim_run == 0) {
		fprintf(stderr, "rusk agent: --force: only with --reclaim-agent or --reclaim-run "
		                "(it reclaims from a live process)\n");
		return RUSK_EXIT_USAGE;
	}
	/* The checks and messages of rusk run's --wait (run_opts.c). */
	if (wait_given != NULL && strncmp(o->backend, "redis://", 8) != 0) {
		fprintf(stderr, "rusk agent: --wait: only with --backend redis://...\n");
		return RUSK_EXIT_USAGE;
	}
	if (wait_ms_given != NULL && wait_given == NULL) {
		fprintf(stderr, "rusk agent: --wait-ms: only with --wait N (WAIT's timeout)\n");
		return RUSK_EXIT_USAGE;
	}
	if (o->init_only && (o->init || o->recount)) {
		fprintf(stderr,
		        "rusk agent: --init-only: not with %s (it writes the state and "
		        "exits)\n",
		        o->init ? "--init" : "--recount");
		return RUSK_EXIT_USAGE;
	}
	if (o->force_init && !o->init && !o->init_only) {
		fprintf(stderr, "rusk agent: --force-init: only with --init or --init-only\n");
		return RUSK_EXIT_USAGE;
	}
	if (o->init && o->recount) {
		fprintf(stderr, "rusk agent: --init: not with --recount (a recount of an empty "
		                "state counts nothing)\n");
		return RUSK_EXIT_USAGE;
	}
	double build_s = 0;
	int rc = cli_cluster_build(&cc, &a.c, &build_s);
	if (rc != RUSK_OK)
		return rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
	a.np = rusk_cluster_partitions(a.c);
	if (o->policy != RUSK_SYNC_STATE && a.np < o->agents) {
		fprintf(stderr,
		        "rusk agent: --agents %u: more than the %u partitions (%s sync "
		        "needs P >= N)\n",
		        o->agents, a.np, o->policy == RUSK_SYNC_DIFF ? "diff" : "same");
		rusk_cluster_destroy(a.c);
		return RUSK_EXIT_USAGE;
	}
	if (!o->recount && !o->init_only && o->task_mem > 0) {
		/* A task no machine can hold is refused before the state is touched: each of
		 * its claims would fail (RUSKINFEASIBLE) for the whole --duration-s. */
		uint32_t most = 0;
		for (uint32_t m = 0; m < rusk_cluster_machines(a.c); m++) {
			rusk_machine_info mi;
			rusk_cluster_machine(a.c, m, &mi);
			most = mi.mem_mib > most ? mi.mem_mib : most;
		}
		if (o->task_mem > most) {
			fprintf(stderr,
			        "rusk agent: --task-mem-mib %u: more than any machine of this "
			        "shape "
			        "holds (the largest has %u MiB): no task could be placed\n",
			        o->task_mem, most);
			rusk_cluster_destroy(a.c);
			return RUSK_EXIT_USAGE;
		}
	}
	char err[1024];
	/* A stop signal from here on: the waits of the start (a seed that does not answer, a
	 * master down: up to --failover-ms each) end with a line and exit 3, nothing taken, as
	 * lease_wait's; before, the default action killed the process (exit 143, no output). */
	drv_signals_install();
	/* Connect only: the checks below come before anything is written. A seed that does
	 * not answer in time is an outage, waited out (exit 1 past --failover-ms), not bad
	 * input (before: exit 2, "Resource temporarily unavailable"). */
	a.start_end = mono_ns() + o->failover_ms * 1000000u;
	rc = rusk_state_open_wait_(url, a.c, RUSK_REDIS_CONNECT, (int)o->failover_ms,
	                           agent_stopping, NULL, &a.st, err, sizeof err);
	if (rc != RUSK_OK) {
		if (rc == RUSK_ESTOPPED)
			start_stopped(err, false);
		else
			fprintf(stderr, "rusk agent: %s\n", err);
		rusk_cluster_destroy(a.c);
		return rc == RUSK_ENOMEM     ? RUSK_EXIT_NOMEM
		       : rc == RUSK_ESTOPPED ? RUSK_EXIT_INTERRUPTED
		       : rc == RUSK_EAGAIN   ? RUSK_EXIT_FAIL
		                             : RUSK_EXIT_USAGE;
	}
	if (a.st.redis != NULL)
		rusk_redis_set_stop_(a.st.redis, agent_stopping,
		                     NULL); /* the lease not taken yet */
	int exit_rc = 0;
	rc = open_checks(&a, &cc, err, sizeof err);
	if (rc != RUSK_OK) {
		/* The cluster unreachable past --failover-ms (a failover at the start): exit 1. */
		bool stopped = rc == RUSK_ESTOPPED || drv_stop_signal() != 0;
		bool outage = !stopped && rc == RUSK_EIO &&
		              rusk_redis_outage_(a.st.redis, err, sizeof err);
		if (stopped && rc != RUSK_ESTOPPED) /* a call that gave up at the signal */
			start_stopped(err, a.writing);
		else
			fprintf(stderr, "rusk agent: %s\n", err);
		exit_rc = rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM
		          : stopped         ? RUSK_EXIT_INTERRUPTED /* lease_wait, an outage */
		          : outage          ? RUSK_EXIT_FAIL
		                            : RUSK_EXIT_USAGE;
		goto out;
	}
	/* The start is over: its bound (--failover-ms from the first try, each read and
	 * connect of its calls within it) lifted; later calls wait out an outage as before. */
	if (a.st.redis != NULL)
		rusk_redis_set_bound_(a.st.redis, 0);
	if (o->init_only) {
		printf("rusk agent: wrote the empty state at %s: %u partitions, %u machines, %u "
		       "RUs\n",
		       o->backend, a.np, rusk_cluster_machines(a.c), rusk_cluster_rus(a.c));
		goto out;
	}
	if (o->recount && !o->force && reclaim_guard(&a) != RUSK_OK) {
		exit_rc = RUSK_EXIT_USAGE;
		goto out;
	}
	if (o->recount) {
		uint64_t held = 0;
		rc = do_recount(&a, o->reclaim_agent, &held);
		printf("{\"recount\":true,\"held\":%" PRIu64 ",\"ok\":%s}\n", held,
		       rc == RUSK_OK && !a.corrupt ? "true" : "false");
		exit_rc = a.corrupt ? RUSK_EXIT_USAGE : rc == RUSK_OK ? 0 : RUSK_EXIT_FAIL;
		goto out;
	}
	a.words = calloc(a.np, sizeof *a.words);
	a.n_words = calloc(a.np, sizeof *a.n_words);
	a.synced_ns = calloc(a.np, sizeof *a.synced_ns);
	a.sp = calloc(a.np, sizeof *a.sp);
	a.sver = calloc(a.np, sizeof *a.sver);
	a.src = calloc(a.np, sizeof *a.src);
	rusk_rng_seed(&a.rng, cc.params.seed, 0x6167656e74ull + o->agent_id); /* "agent" */
	bool oom = a.words == NULL || a.n_words == NULL || a.synced_ns == NULL || a.sp == NULL ||
	           a.sver == NULL || a.src == NULL;
	for (uint32_t p = 0; !oom && p < a.np; p++) {
		rusk_partition_info pi;
		rusk_cluster_partition(a.c, p, &pi);
		a.n_words[p] = (pi.rus + 63) / 64;
		a.words[p] = calloc(a.n_words[p] ? a.n_words[p] : 1, sizeof(uint64_t));
		oom = a.words[p] == NULL;
	}
	/* Without them (out of memory) a claim on a machine too small would stop the agent. */
	if (o->task_mem > 0) {
		a.short_m = calloc(rusk_cluster_machines(a.c) + 1, sizeof(uint64_t));
		a.unfit = calloc(rusk_cluster_machines(a.c) + 1, 1);
		oom |= a.short_m == NULL || a.unfit == NULL;
	}
	for (uint32_t m = 0; !oom && a.unfit != NULL && m < rusk_cluster_machines(a.c); m++) {
		rusk_machine_info mi;
		rusk_cluster_machine(a.c, m, &mi);
		a.unfit[m] = mi.mem_mib < o->task_mem;
		a.n_unfit += a.unfit[m];
	}
	/* From here a stop signal ends the loop as --duration-s would (the design note). */
	drv_signals_install();
	if (a.st.redis != NULL) {
		rusk_redis_set_stop_(a.st.redis, agent_stopping, NULL);
		rusk_redis_set_waiting_(a.st.redis, agent_waiting, &a);
	}
	if (a.st.redis != NULL && o->unavail_ms > 0) {
		a.un_on = rusk_unavail_init_(&a.un, a.np) == RUSK_OK;
		oom |= !a.un_on;
		rusk_redis_set_unavailable_ms_(a.st.redis, (int)o->unavail_ms);
	}
	if (!oom && run_loop(&a) != RUSK_OK)
		oom = true;
	/* The end (ledger check, releases) waits out an outage as before: nothing is put off */
	if (a.st.redis != NULL)
		rusk_redis_set_unavailable_ms_(a.st.redis, 0);
	if (oom) {
		fprintf(stderr, "rusk agent: out of memory\n");
		exit_rc = RUSK_EXIT_NOMEM;
		goto out;
	}
	for (size_t i = a.h_head; a.stopped && i < a.h_head + a.h_n; i++)
		a.held_end += a.h[i].id != 0; /* an early stop releases nothing (below) */
	if (a.stopped == 2) {
		/* The state was written afresh: the ledger's RUs are gone with the old one, but
		 * commits made between the write and this renewal (up to a third of the lease)
		 * hold RUs of the new one. Those are exactly the RUs the new state shows as this
		 * agent's (its id is still its own: the lease was renewed), so the ledger is
		 * dropped and they are released as orphans. */
		for (size_t i = a.h_head; i < a.h_head + a.h_n; i++)
			a.h[i].id = 0;
		uint64_t none = 0, before = a.orphans;
		if (rusk_redis_state_check_(a.st.redis, err, sizeof err) == RUSK_OK) {
			ledger_check(&a, &none, false);
			fprintf(stderr,
			        "rusk agent: released the %" PRIu64
			        " RUs it took in the new state\n",
			        a.orphans - before);
		} else { /* another shape: its RU numbers are not this agent's */
			fprintf(stderr,
			        "rusk agent: the new state is not this agent's (%s): what it took "
			        "there is left to `rusk agent --recount --reclaim-agent %u`\n",
			        err, o->agent_id);
		}
	}
	if (a.corrupt) { /* run_loop printed why; what it holds elsewhere is given back */
		release_range(&a, a.h_head, a.h_head + a.h_n);
		exit_rc = RUSK_EXIT_USAGE;
		goto out;
	}
	if (a.gone) { /* state_gone printed why: exit 1 as the start's check; given back */
		release_range(&a, a.h_head, a.h_head + a.h_n);
		exit_rc = RUSK_EXIT_FAIL;
		goto out;
	}
	if (a.ids_spent)
		fprintf(stderr, "rusk agent: %s: stopping (every held task is released)\n",
		        a.fatal_msg);
	else if (a.fatal != 0)
		fprintf(stderr,
		        "rusk agent: a commit failed with %s (%s): stopping (every held task is "
		        "released)\n",
		        rusk_strerror(a.fatal), a.fatal_msg);
	double elapsed = a.elapsed_s > 0 ? a.elapsed_s : o->duration_s;
	int sig = drv_stop_signal();
	/* The end: compare the ledger with the state, then give everything back. Not after an
	 * early stop (lease_renew printed why): with the lease taken, the id's task ids are
	 * another process's now (its releases are its own); after an epoch change the ledger
	 * was dropped and the new state's RUs released above. The summary follows either way. */
	if (!a.stopped) {
		uint64_t replace = 0, unknown = a.releases_unknown, orph = a.orphans_unknown;
		a.end_unread = !ledger_check(&a, &replace, false);
		a.replaced += replace;
		a.backlog_end += replace; /* dropped from the ledger, not placed again */
		release_range(&a, a.h_head, a.h_head + a.h_n);
		/* The end's check read every owner and every release was made: nothing of the
		 * id's is left (an earlier release whose answer was lost, or a claim's, shows
		 * there as an orphan, released). Else what it may still hold is left to the
		 * automatic reclaim: the id stays in rusk:{meta}:agents, its lease lapses. */
		a.end_unknown = a.releases_unknown - unknown + a.orphans_unknown - orph;
		a.left_held = a.leased && (a.end_unread || a.end_unknown > 0);
	}
	if (a.n_rtt > 0) /* no commit made: a.rtt is NULL, which qsort may not take */
		qsort(a.rtt, a.n_rtt, sizeof *a.rtt, cmp_double);
	double p50 = pct(a.rtt, a.n_rtt, 0.5), p99 = pct(a.rtt, a.n_rtt, 0.99);
	double mean_claims = a.batches ? (double)a.claims / (double)a.batches : 0;
	rusk_redis_stats s = rusk_redis_stats_(a.st.redis);
	printf("rusk agent %u/%u: backend %s, %u partitions, sync %s every %" PRIu64
	       " ms, batch %u%s\n",
	       o->agent_id, o->agents, a.st.bk.ops->name, a.np, sync_name(policy), o->gap_ms,
	       o->batch, o->wait ? ", WAIT" : "");
	if (a.n_unfit > 0)
		printf("--task-mem-mib %u: %u of the %u machines have less memory and can never "
		       "hold a task: their RUs are never claimed\n",
		       o->task_mem, a.n_unfit, rusk_cluster_machines(a.c));
	printf("placed %" PRIu64 " tasks in %.2f s: %.0f tasks/s; conflicts %" PRIu64
	       " (%.2f%% of claims), refused for memory %" PRIu64
	       " (%.2f%%), claims whose answer was lost %" PRIu64 "; of the placed: "
	       "released %" PRIu64 ", release refused %" PRIu64 ", release answer lost %" PRIu64
	       ", commit lost %" PRIu64 ", held at the end %" PRIu64 "\n",
	       a.placed, elapsed, (double)a.placed / elapsed, a.conflicts,
	       a.claims ? 100.0 * (double)a.conflicts / (double)a.claims : 0.0, a.memory_short,
	       a.claims ? 100.0 * (double)a.memory_short / (double)a.claims : 0.0, a.claims_unknown,
	       a.released, a.rejected, a.releases_unknown, a.lost, a.held_end);
	char unconfirmed[96] = ""; /* releases whose answer was lost: not said released */
	if (a.releases_unknown > 0)
		snprintf(unconfirmed, sizeof unconfirmed,
		         ", %" PRIu64 " of them not confirmed (release answer lost)",
		         a.releases_unknown);
	if (sig != 0)
		printf("stopped by %s after %.2f s of --duration-s %g: %s%s\n",
		       sig == SIGINT   ? "SIGINT"
		       : sig == SIGHUP ? "SIGHUP"
		                       : "SIGTERM",
		       elapsed, o->duration_s,
		       a.end_unread || a.end_unknown > 0 ? "not every held task could be released"
		                                         : "every held task released",
		       unconfirmed);
	if (a.left_held)
		printf("left to the reclaim: %" PRIu64 " releases not made%s; the id's lease "
		       "(rusk:{meta}:alive:%u) is left to lapse, so the automatic reclaim of the "
		       "live processes frees what it still holds about --lease-ms %" PRIu64
		       " ms from now\n",
		       a.end_unknown,
		       a.end_unread ? " and the end's ledger check could not read every partition"
		                    : "",
		       o->agent_id, o->lease_ms);
	else if (!a.leased && (a.end_unread || a.end_unknown > 0))
		printf("left held: %" PRIu64 " releases not made%s; no lease (--lease-ms 0): "
		       "`rusk agent --recount --reclaim-agent %u` frees them\n",
		       a.end_unknown,
		       a.end_unread ? " and the end's ledger check could not read every partition"
		                    : "",
		       o->agent_id);
	if (o->rate > 0)
		printf("arrived %" PRIu64 " tasks (--rate %.0f/s); %" PRIu64
		       " not placed at the end\n",
		       a.arrived, o->rate, a.backlog_end);
	printf("commit round trip per batch: p50 %.3f ms, p99 %.3f ms over %" PRIu64
	       " batches of %.1f claims; staleness at commit %.2f ms; %" PRIu64
	       " partition syncs (%.3f s)\n",
	       p50, p99, a.batches, mean_claims, a.claims ? a.stale_sum_ms / (double)a.claims : 0,
	       a.syncs, a.sync_s);
	if (a.st.redis != NULL)
		printf("redis: %" PRIu64 " round trips, %" PRIu64 " redirects, %" PRIu64
		       " reconnects, %" PRIu64 " resent, %" PRIu64 " short WAITs, outage %.2f s; "
		       "longest gap between commits %.2f s; acknowledged commits lost %" PRIu64
		       " (re-placed %" PRIu64 ", RU since granted to another agent %" PRIu64
		       "); orphans %" PRIu64 "\n",
		       s.round_trips, s.redirects, s.reconnects, s.resent, s.wait_short,
		       (double)s.outage_ns * 1e-9, a.max_gap_s, a.lost, a.replaced, a.regranted,
		       a.orphans);
	if (a.st.redis != NULL)
		printf("redis lost at release %" PRIu64 " commits (%" PRIu64
		       " RUs) whose release Redis refused as not the task's (another owner, free, "
		       "stale; of the release refused %" PRIu64 "); lost in all: %" PRIu64
		       " commits (%" PRIu64 " RUs)\n",
		       a.at_release, a.at_release, a.rejected, a.lost + a.at_release,
		       a.lost + a.at_release);
	if (a.st.redis != NULL)
		printf("unavailable partitions (--unavailable-ms %" PRIu64 "): marked %" PRIu64
		       " times, %.2f partition-seconds; placed meanwhile %" PRIu64
		       " tasks; releases put off %" PRIu64 "\n",
		       o->unavail_ms, a.un.marked, a.unavail_s, a.un.placed, a.un.deferred);
	/* Tasks placed per second of the loop, for the JSON (a stall shows as zeros). */
	char per_s[PLACED_SECONDS * 12 + 8] = "";
	size_t per_n = (size_t)ceil(elapsed), per_u = 0;
	for (size_t k = 0; k < per_n && k < PLACED_SECONDS; k++)
		per_u += (size_t)snprintf(per_s + per_u, sizeof per_s - per_u, "%s%" PRIu64,
		                          k ? "," : "", a.placed_s[k]);
	if (a.st.redis != NULL && o->lease_ms > 0 && !o->no_auto_reclaim)
		printf("reclaim: %" PRIu64 " RUs of dead processes released (%" PRIu64
		       " of dead runs; %" PRIu64 " dead agents, %" PRIu64 " dead runs) in %" PRIu64
		       " passes; %" PRIu64 " passes left to another process's reclaim, %" PRIu64
		       " put off (the {meta} shard not answering steadily for a lease)\n",
		       a.reclaimed_expired, a.reclaimed_runs, a.reclaim_agents, a.reclaim_runs,
		       a.reclaim_passes, a.reclaim_busy, a.reclaim_unsteady);
	printf("{\"agent\":%u,\"agents\":%u,\"backend\":\"%s\",\"batch\":%u,\"placed\":%" PRIu64
	       ",\"tasks_per_s\":%.1f,\"conflicts\":%" PRIu64 ",\"memory_short\":%" PRIu64
	       ",\"machines_unfit\":%u,\"claims\":%" PRIu64 ",\"released\":%" PRIu64
	       ",\"refused\":%" PRIu64 ",\"claims_unknown\":%" PRIu64
	       ",\"releases_unknown\":%" PRIu64 ",\"held_end\":%" PRIu64
	       ",\"rtt_p50_ms\":%.4f,\"rtt_p99_ms\":%.4f,\"batches\":%" PRIu64
	       ",\"staleness_ms\":%.3f,\"reconnects\":%" PRIu64 ",\"outage_s\":%.3f"
	       ",\"max_gap_s\":%.3f,\"lost\":%" PRIu64 ",\"replaced\":%" PRIu64
	       ",\"regranted\":%" PRIu64 ",\"orphans\":%" PRIu64 ",\"lost_at_release\":%" PRIu64
	       ",\"lost_at_release_rus\":%" PRIu64 ",\"lost_total\":%" PRIu64
	       ",\"lost_total_rus\":%" PRIu64 ",\"wait_short\":%" PRIu64 ",\"arrived\":%" PRIu64
	       ",\"backlog_end\":%" PRIu64 ",\"syncs\":%" PRIu64
	       ",\"sync_s\":%.3f,\"lease_lapsed\":%" PRIu64 ",\"lease_kept\":%" PRIu64
	       ",\"lease_keep_s\":%.3f"
	       ",\"reclaimed_expired\":%" PRIu64 ",\"reclaim_passes\":%" PRIu64
	       ",\"reclaim_unsteady\":%" PRIu64 ",\"left_to_reclaim\":%s,\"end_unknown\":%" PRIu64
	       ",\"elapsed_s\":%.3f"
	       ",\"unavailable_ms\":%" PRIu64 ",\"parts_unavailable\":%" PRIu64
	       ",\"unavailable_s\":%.3f,\"placed_while_unavailable\":%" PRIu64
	       ",\"releases_deferred\":%" PRIu64 ",\"placed_per_s\":[%s]"
	       ",\"interrupted\":%s,\"stopped\":\"%s\"}\n",
	       o->agent_id, o->agents, a.st.bk.ops->name, o->batch, a.placed,
	       (double)a.placed / elapsed, a.conflicts, a.memory_short, a.n_unfit, a.claims,
	       a.released, a.rejected, a.claims_unknown, a.releases_unknown, a.held_end, p50, p99,
	       a.batches, a.claims ? a.stale_sum_ms / (double)a.claims : 0, s.reconnects,
	       (double)s.outage_ns * 1e-9, a.max_gap_s, a.lost, a.replaced, a.regranted, a.orphans,
	       a.at_release, a.at_release, a.lost + a.at_release, a.lost + a.at_release,
	       s.wait_short, a.arrived, a.backlog_end, a.syncs, a.sync_s, a.lapsed, a.kept,
	       (double)a.keep_ns * 1e-9, a.reclaimed_expired, a.reclaim_passes, a.reclaim_unsteady,
	       a.left_held ? "true" : "false", a.end_unknown, elapsed,
	       a.st.redis != NULL ? o->unavail_ms : 0, a.un.marked, a.unavail_s, a.un.placed,
	       a.un.deferred, per_s, sig != 0 ? "true" : "false", stop_why(&a, sig));
	exit_rc = a.corrupt                   ? RUSK_EXIT_USAGE /* the end's ledger check */
	          : a.fatal != 0 || a.stopped ? RUSK_EXIT_FAIL
	          : sig != 0                  ? RUSK_EXIT_INTERRUPTED
	                                      : 0;
out:
	if (a.leased && !a.left_held) /* the id is free again at once (a recount finds nothing
	                               * of it); left_held: it lapses, for the reclaim */
		rusk_redis_lease_drop_(a.st.redis, o->agent_id, a.token);
	for (uint32_t p = 0; a.words != NULL && p < a.np; p++)
		free(a.words[p]);
	free(a.words);
	free(a.short_m);
	free(a.unfit);
	free(a.n_words);
	free(a.synced_ns);
	free(a.sp);
	free(a.sver);
	free(a.src);
	free(a.h);
	free(a.def);
	rusk_unavail_free_(&a.un);
	free(a.rtt);
	if (a.keep.redis != NULL)
		rusk_state_close_(&a.keep);
	rusk_state_close_(&a.st);
	rusk_cluster_destroy(a.c);
	return exit_rc;
}
