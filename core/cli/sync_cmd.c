/* SPDX-License-Identifier: MIT */
/*
 * `rusk sync`: the sync policies side by side (ParSync §5.2 "Synchronization strategies").
 *
 * For each policy, N agent threads (registered with RCU) keep the cluster at a target load:
 * each step ticks its view (syncing what the policy says is due), places one task on a free
 * RU of its freshest partition that still has free RUs in the view (ties broken at random:
 * under StateSync all partitions are equally fresh), marks the RU taken locally, and
 * releases its oldest task once its window is full. A lost CAS is a conflict: the view was
 * stale about that RU. The same seed, cluster and load are used for every policy, so the
 * conflict rates compare directly.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "rng.h"

typedef struct held {
	uint64_t id;
	rusk_lease l;
} held;

typedef struct agent {
	pthread_t tid;
	rusk_cluster *c;
	rusk_sync_params sp;
	uint32_t index;
	size_t window;
	double duration_s;
	uint64_t seed;
	pthread_barrier_t *start;
	int err;
	/* results */
	uint64_t placed, attempts, conflicts, gave_up, released, refused;
	double as_sum;
	uint64_t as_n;
	rusk_view_stats vs;
	double elapsed_s;
} agent;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The freshest partition with free RUs in the view; random among equally fresh ones. */
static bool choose(rusk_view *v, uint32_t P, uint32_t *order, rusk_rng *r, uint64_t now,
                   uint32_t *out)
{
	rusk_view_freshest(v, order, P);
	uint32_t i = 0;
	while (i < P) {
		uint64_t s = rusk_view_staleness_ns(v, order[i], now);
		uint32_t j = i, cand = 0, pick = 0;
		while (j < P && rusk_view_staleness_ns(v, order[j], now) == s) {
			if (rusk_view_free(v, order[j]) > 0 && rusk_rng_below(r, ++cand) == 0)
				pick = order[j];
			j++;
		}
		if (cand > 0) {
			*out = pick;
			return true;
		}
		i = j;
	}
	return false;
}

static void *agent_main(void *arg)
{
	agent *a = arg;
	rusk_thread_register();
	rusk_rng rng;
	rusk_rng_seed(&rng, a->seed, 1000 + a->index);
	uint32_t P = rusk_cluster_partitions(a->c);
	const rusk_clock *clk = rusk_cluster_clock(a->c);
	rusk_view *v = NULL;
	uint32_t *order = calloc(P, sizeof *order);
	held *win = calloc(a->window, sizeof *win);
	a->err = rusk_view_create(a->c, &v);
	if (a->err == RUSK_OK)
		a->err = rusk_view_set_policy(v, &a->sp, a->index, NULL, 0);
	pthread_barrier_wait(a->start);
	if (a->err != RUSK_OK || order == NULL || win == NULL)
		goto out;
	size_t head = 0;
	uint64_t next_id = 0;
	double t0 = now_s(), deadline = t0 + a->duration_s;
	for (uint64_t step = 0;; step++) {
		uint64_t now = rusk_clock_now(clk);
		if ((step & 255) == 0) {
			if (now_s() >= deadline)
				break;
			double as = rusk_view_avg_staleness_ns(v, now);
			if (isfinite(as)) {
				a->as_sum += as;
				a->as_n++;
			}
		}
		if (rusk_view_tick(v, now) < 0) {
			a->err = RUSK_ENOMEM;
			break;
		}
		held *h = &win[head];
		head = head + 1 == a->window ? 0 : head + 1;
		if (h->id != 0) {
			if (rusk_ru_release(a->c, h->id, h->l) == RUSK_OK)
				a->released++;
			else
				a->refused++;
			h->id = 0;
		}
		uint64_t task = 1 + a->index + (next_id++) * a->sp.agents;
		bool placed = false;
		for (int tries = 0; tries < 64 && !placed; tries++) {
			uint32_t p, ru;
			if (!choose(v, P, order, &rng, now, &p) ||
			    !rusk_view_pick_free(v, p, rusk_rng_next(&rng), &ru))
				break; /* the view has nothing free: wait for the next sync */
			a->attempts++;
			int rc = rusk_ru_commit(a->c, task, ru, NULL, &h->l);
			rusk_view_mark_taken(v, ru); /* taken by us, or lost: either way not free */
			if (rc == RUSK_OK)
				placed = true;
			else
				a->conflicts++;
		}
		if (placed) {
			h->id = task;
			a->placed++;
		} else {
			a->gave_up++;
		}
	}
	a->elapsed_s = now_s() - t0;
	for (size_t i = 0; i < a->window; i++)
		if (win[i].id != 0) {
			if (rusk_ru_release(a->c, win[i].id, win[i].l) == RUSK_OK)
				a->released++;
			else
				a->refused++;
		}
	rusk_view_stats_get(v, &a->vs);
out:
	rusk_view_destroy(v);
	free(order);
	free(win);
	rusk_thread_unregister();
	return NULL;
}

static void sync_usage(void)
{
	puts("usage: rusk sync [options]\n"
	     "\n"
	     "Runs N agents with local views under each sync policy in turn (same cluster,\n"
	     "seed and load) and prints conflicts, staleness and sync cost side by side.\n"
	     "\n"
	     "  --agents N        agent threads (default 4)\n"
	     "  --sync POLICY     diff, same, state or all (default all)\n"
	     "  --gap-ms G        sync gap G: every view refreshes every partition once per G\n"
	     "                    (default 500, ParSync's production value)\n"
	     "  --offsets         random per-agent step offsets (Tarcil §5.1)\n"
	     "  --duration-s S    seconds per policy (default 3)\n"
	     "  --load F          share of RUs held in steady state, 0..0.95 (default 0.9)");
	cli_cluster_usage();
}

int rusk_cmd_sync(int argc, char **argv)
{
	cli_cluster cc;
	cli_cluster_init(&cc);
	uint64_t agents = 4, gap_ms = 500;
	double duration = 3, load = 0.9;
	bool offsets = false;
	const char *policy = "all";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int r = cli_cluster_opt(&cc, argc, argv, &i);
		if (r < 0)
			return RUSK_EXIT_USAGE;
		if (r > 0)
			continue;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			sync_usage();
			return 0;
		} else if (strcmp(a, "--offsets") == 0) {
			offsets = true;
			continue;
		} else if (strcmp(a, "--agents") == 0) {
			if (cli_u64(a, v, 1, 1024, &agents))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--gap-ms") == 0) {
			if (cli_u64(a, v, 1, 3600000, &gap_ms))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--duration-s") == 0) {
			if (cli_double(a, v, 0.01, 86400, &duration))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--load") == 0) {
			if (cli_double(a, v, 0, 0.95, &load))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--sync") == 0) {
			rusk_sync_policy pol;
			if (v == NULL ||
			    (strcmp(v, "all") != 0 && rusk_sync_policy_parse(v, &pol) != RUSK_OK)) {
				fprintf(stderr,
				        "rusk: --sync: '%s' is not diff, same, state or all\n",
				        v ? v : "");
				return RUSK_EXIT_USAGE;
			}
			policy = v;
		} else {
			fprintf(stderr, "rusk sync: unknown option '%s' (try: rusk sync --help)\n",
			        a);
			return RUSK_EXIT_USAGE;
		}
		i++;
	}
	rusk_sync_policy pols[3] = {RUSK_SYNC_STATE, RUSK_SYNC_SAME, RUSK_SYNC_DIFF};
	int n_pols = 3;
	if (strcmp(policy, "all") != 0) {
		rusk_sync_policy_parse(policy, &pols[0]);
		n_pols = 1;
	}
	/* Validate every policy before building anything (P >= N for diff). */
	for (int k = 0; k < n_pols; k++) {
		rusk_sync_params sp = {.policy = pols[k],
		                       .partitions = cc.params.partitions,
		                       .agents = (uint32_t)agents,
		                       .gap_ns = gap_ms * 1000000};
		char err[256];
		if (rusk_sync_check(&sp, err, sizeof err) != RUSK_OK) {
			fprintf(stderr,
			        "rusk: --sync %s with --agents %" PRIu64 " --partitions %u: %s\n",
			        rusk_sync_policy_name(pols[k]), agents, cc.params.partitions, err);
			return RUSK_EXIT_USAGE;
		}
	}
	rusk_cluster *c;
	double build_s;
	if (cli_cluster_build(&cc, &c, &build_s) != RUSK_OK)
		return RUSK_EXIT_USAGE;
	uint32_t n_rus = rusk_cluster_rus(c), P = rusk_cluster_partitions(c);
	size_t window = (size_t)(load * n_rus / (double)agents);
	if (window == 0)
		window = 1;
	printf("rusk sync: %u machines, %u RUs, %u partitions; %" PRIu64 " agents, G = %" PRIu64
	       " ms%s, load %.0f%%, %.1f s per policy\n\n",
	       rusk_cluster_machines(c), n_rus, P, agents, gap_ms,
	       offsets ? " (random offsets)" : "", load * 100, duration);
	printf("  %-6s %12s %12s %10s %10s %10s %12s %12s\n", "policy", "tasks/s", "attempts",
	       "conflicts", "conflict%", "AS (ms)", "syncs", "sync core%");
	int status = 0;
	for (int k = 0; k < n_pols; k++) {
		rusk_sync_params sp = {.policy = pols[k],
		                       .partitions = P,
		                       .agents = (uint32_t)agents,
		                       .gap_ns = gap_ms * 1000000,
		                       .start_ns = rusk_clock_now(rusk_cluster_clock(c)),
		                       .random_offset = offsets,
		                       .seed = cc.params.seed};
		agent *ag = calloc(agents, sizeof *ag);
		pthread_barrier_t start;
		pthread_barrier_init(&start, NULL, (unsigned)agents);
		for (uint32_t i = 0; i < agents; i++) {
			ag[i] = (agent){.c = c,
			                .sp = sp,
			                .index = i,
			                .window = window,
			                .duration_s = duration,
			                .seed = cc.params.seed,
			                .start = &start};
			pthread_create(&ag[i].tid, NULL, agent_main, &ag[i]);
		}
		uint64_t placed = 0, attempts = 0, conflicts = 0, syncs = 0, sync_ns = 0,
		         refused = 0;
		double as_sum = 0, elapsed = 0;
		uint64_t as_n = 0;
		for (uint32_t i = 0; i < agents; i++) {
			pthread_join(ag[i].tid, NULL);
			if (ag[i].err != RUSK_OK)
				status = RUSK_EXIT_FAIL;
			placed += ag[i].placed;
			attempts += ag[i].attempts;
			conflicts += ag[i].conflicts;
			refused += ag[i].refused;
			syncs += ag[i].vs.syncs;
			sync_ns += ag[i].vs.sync_ns;
			as_sum += ag[i].as_sum;
			as_n += ag[i].as_n;
			if (ag[i].elapsed_s > elapsed)
				elapsed = ag[i].elapsed_s;
		}
		pthread_barrier_destroy(&start);
		free(ag);
		char err[256];
		if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK || refused != 0 ||
		    rusk_cluster_free_rus(c) != n_rus) {
			fprintf(stderr, "rusk sync: invariant broken after %s: %s\n",
			        rusk_sync_policy_name(pols[k]),
			        refused ? "a release was refused" : err);
			status = RUSK_EXIT_FAIL;
		}
		printf("  %-6s %12.0f %12" PRIu64 " %10" PRIu64 " %9.2f%% %10.1f %12" PRIu64
		       " %11.2f%%\n",
		       rusk_sync_policy_name(pols[k]), placed / elapsed, attempts, conflicts,
		       attempts ? 100.0 * conflicts / attempts : 0.0,
		       as_n ? as_sum / as_n / 1e6 : 0.0, syncs, 100.0 * sync_ns / 1e9 / elapsed);
		fflush(stdout);
	}
	printf("\n  conflict%%: commits lost because the view was stale about the RU.\n"
	       "  AS: the agents' average staleness over all partitions (ParSync §5.1).\n"
	       "  sync core%%: CPU time in syncs (publish + copy) as a share of one core.\n");
	rusk_rcu_barrier();
	rusk_cluster_destroy(c);
	return status;
}
