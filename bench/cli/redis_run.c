/* SPDX-License-Identifier: MIT */
/*
 * `rusk run --backend redis://HOST:PORT[,...]`: the run's generator, dispatcher, agents,
 * strategies and report over a master state on Redis Cluster (issue 30; ParSync §7's
 * schedulers committing to resource managers). A feature of the run (runstate.h):
 *
 *   setup  opens the state from the main thread for the cluster the run built (every
 *          partition's keys, docs/redis.md), writing the empty state unless --no-init
 *          (then it must be there with this shape, as `rusk agent` without --init), and
 *          attaches it to the cluster (rusk_state_attach_: the kernel's remote, each thread
 *          on its own connection, a hiredis context being one thread's): every agent
 *          thread syncs its view from Redis and commits there first, every thread that
 *          ends a task releases there after the local mirror.
 *   ok     after the run (every thread joined, every task ended: the dispatcher's stop),
 *          recounts every partition from the main thread: no RU whose free mark disagrees
 *          with its owner (mismatch), and no RU still held by a task id of this run
 *          (dispatcher handles, RUSK_DISPATCH_ID_BASE and up; other processes' tasks,
 *          `rusk agent`'s, are counted apart). The run's checks line says NO otherwise.
 *   json / print: the remote's counters (connections, snapshots, commit round trips and
 *          their p50/p99, claims lost, releases, errors) and the recount.
 *   free   detaches the remote (closes every thread's connection) and the main one.
 *
 * One `rusk run` per state: its task ids are its dispatcher's handles, which another
 * `rusk run` would reuse; any number of `rusk agent` processes may share the state with it
 * (their ids are (agent + 1) << 32 | sequence, below RUSK_DISPATCH_ID_BASE).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runstate.h"
#include "state/open.h"

struct drv_redis {
	const char *spec;
	rusk_state main; /* the main thread's connection: the init and the recount */
	bool attached, counted, ok;
	uint64_t held, held_run, free_rus, mismatch;
	uint32_t parts_failed;
	char why[512];
	rusk_remote_stats st;
};

static bool redis_on(const run *R)
{
	return R->redis != NULL;
}

static int redis_setup(run *R, const drv_setup_in *in)
{
	(void)in;
	const run_cfg *cfg = &R->cfg;
	if (cfg->backend == NULL)
		return 0;
	drv_redis *X = calloc(1, sizeof *X);
	if (X == NULL) {
		fprintf(stderr, "rusk: --backend: out of memory\n");
		return RUSK_EXIT_NOMEM;
	}
	X->spec = cfg->backend;
	R->redis = X;
	char err[1024] = "";
	int rc = rusk_state_open_(X->spec, R->c, !cfg->no_init, &X->main, err, sizeof err);
	if (rc != RUSK_OK) {
		fprintf(stderr, "rusk: %s\n", err);
		return rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
	}
	rc = rusk_state_attach_(X->spec, R->c, err, sizeof err);
	if (rc != RUSK_OK) {
		fprintf(stderr, "rusk: %s\n", err);
		return rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
	}
	X->attached = true;
	return 0;
}

/* The recount after the run (once; main thread, every other thread joined). */
static void recount(const run *R)
{
	drv_redis *X = R->redis;
	if (X->counted)
		return;
	X->counted = true;
	rusk_remote_stats_(R->c, &X->st);
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
	for (uint32_t p = 0; p < np; p++) {
		rusk_bk_count k;
		size_t n = 0;
		if (X->main.bk.ops->recount(X->main.bk.self, p, &k) != RUSK_OK ||
		    rusk_redis_owners_(X->main.redis, p, rus, owners, NULL, cap, &n) != RUSK_OK) {
			X->parts_failed++;
			snprintf(X->why, sizeof X->why, "partition %u: %s", p,
			         rusk_redis_last_error_(X->main.redis));
			continue;
		}
		X->held += k.held;
		X->free_rus += k.free;
		X->mismatch += k.mismatch;
		for (size_t i = 0; i < n; i++)
			X->held_run += owners[i] >= RUSK_DISPATCH_ID_BASE;
	}
	free(rus);
	free(owners);
	X->ok = X->parts_failed == 0 && X->mismatch == 0 && X->held_run == 0;
	if (X->ok || X->why[0] != '\0')
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
	return R->redis->ok;
}

const char *drv_redis_why(const run *R)
{
	return R->redis != NULL ? R->redis->why : "";
}

static void redis_json(FILE *f, run *R)
{
	drv_redis *X = R->redis;
	if (!X->attached)
		return;
	recount(R);
	const rusk_remote_stats *s = &X->st;
	fprintf(f,
	        "  \"redis\": {\"connections\": %" PRIu64 ", \"open_failures\": %" PRIu64
	        ", \"snapshots\": %" PRIu64 ", \"commit_round_trips\": %" PRIu64
	        ", \"claims\": %" PRIu64 ", \"claims_lost\": %" PRIu64 ", \"rollbacks\": %" PRIu64
	        ", \"local_refused\": %" PRIu64 ", \"release_round_trips\": %" PRIu64
	        ", \"released\": %" PRIu64 ", \"release_refused\": %" PRIu64
	        ", \"errors\": %" PRIu64 ", \"commit_rtt_us\": {\"p50\": %.1f, \"p99\": %.1f}"
	        ", \"recount\": {\"held\": %" PRIu64 ", \"held_by_run\": %" PRIu64
	        ", \"free\": %" PRIu64 ", \"mismatch\": %" PRIu64 ", \"partitions_failed\": %u"
	        ", \"ok\": %s}},\n",
	        s->connections, s->open_failures, s->snapshots, s->commit_trips, s->claims,
	        s->claims_lost, s->rollbacks, s->local_refused, s->release_trips, s->released,
	        s->release_refused, s->errors, s->commit_p50_ns / 1e3, s->commit_p99_ns / 1e3,
	        X->held, X->held_run, X->free_rus, X->mismatch, X->parts_failed,
	        X->ok ? "true" : "false");
}

static void redis_print(run *R)
{
	drv_redis *X = R->redis;
	if (!X->attached)
		return;
	recount(R);
	const rusk_remote_stats *s = &X->st;
	fprintf(R->out, "  %-28s %s (%s)\n", "master state", X->spec,
	        R->cfg.no_init ? "joined the state there" : "empty state written first");
	fprintf(R->out,
	        "  %-28s %" PRIu64 " connections, %" PRIu64 " snapshots, %" PRIu64
	        " commit round trips (%" PRIu64 " claims, %" PRIu64 " refused, %" PRIu64
	        " gangs rolled back), p50 %.0f us, p99 %.0f us\n",
	        "", s->connections, s->snapshots, s->commit_trips, s->claims, s->claims_lost,
	        s->rollbacks, s->commit_p50_ns / 1e3, s->commit_p99_ns / 1e3);
	fprintf(R->out,
	        "  %-28s %" PRIu64 " release round trips, %" PRIu64 " leases released, %" PRIu64
	        " refused; %" PRIu64 " refused by the local mirror; %" PRIu64 " errors\n",
	        "", s->release_trips, s->released, s->release_refused, s->local_refused, s->errors);
	if (s->errors > 0 || s->open_failures > 0) {
		char err[512];
		rusk_remote_last_error_(R->c, err, sizeof err);
		fprintf(R->out, "  %-28s last error: %s\n", "", err);
	}
	fprintf(R->out,
	        "  %-28s %u partitions: held %" PRIu64 " (by this run's tasks %" PRIu64
	        "), free %" PRIu64 ", mismatch %" PRIu64 "%s\n",
	        "redis recount", rusk_cluster_partitions(R->c) - X->parts_failed, X->held,
	        X->held_run, X->free_rus, X->mismatch,
	        X->parts_failed ? " (some partitions could not be read)" : "");
}

static void redis_free(run *R)
{
	drv_redis *X = R->redis;
	if (X == NULL)
		return;
	if (X->attached)
		rusk_remote_detach_(R->c); /* every thread that used it is joined */
	rusk_state_close_(&X->main);
	free(X);
	R->redis = NULL;
}

const drv_feature drv_feature_redis = {
        .name = "redis",
        .on = redis_on,
        .setup = redis_setup,
        .json = redis_json,
        .print = redis_print,
        .free = redis_free,
};
