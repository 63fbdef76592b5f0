/* SPDX-License-Identifier: MIT */
/*
 * `rusk demo`: the master RU array under load, before any scheduling policy exists.
 * T threads keep the cluster at a target utilisation with a sliding window of held tasks:
 * each step releases the oldest task and commits a new one on uniformly random RUs,
 * resampling on conflicts; a share of tasks are gangs of M RUs on one machine. Every few
 * thousand steps a thread also tries a double release and a foreign release, which the
 * array must reject. At the end every task is released and the counters are recounted.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/rng.h"
#include "cli.h"
#include "outfile.h"

#define DEMO_MAX_GANG  8
#define DEMO_RESAMPLES 64

typedef struct demo_task {
	uint64_t id;
	uint32_t n;
	rusk_lease l[DEMO_MAX_GANG];
} demo_task;

typedef struct demo_stats {
	uint64_t tasks, gang_tasks, samples, attempts, commits, conflicts, gang_rollbacks, gave_up;
	uint64_t releases, rejected, misuse_rejected, misuse_absorbed;
} demo_stats;

typedef struct demo_thread {
	pthread_t tid;
	rusk_cluster *c;
	uint32_t index, threads, gang_rus;
	double gang_share, duration_s;
	size_t window;
	uint64_t seed;
	pthread_barrier_t *start;
	demo_stats st;
	double elapsed_s;
} demo_thread;

static void release_task(demo_thread *t, demo_task *k)
{
	size_t rejected = 0;
	rusk_ru_release_many(t->c, k->id, k->l, k->n, &rejected);
	t->st.releases += k->n - rejected;
	t->st.rejected += rejected;
	k->n = 0;
}

/*
 * Commits task k like an agent with a perfectly fresh view would: read an RU's record,
 * try to commit only what looked free. A lost CAS is then a true conflict (another thread
 * took the RU between the read and the commit); an RU seen taken is just resampled.
 * Returns 0 when placed, -1 after DEMO_RESAMPLES tries.
 */
static int place_task(demo_thread *t, rusk_rng *rng, demo_task *k, bool gang)
{
	uint32_t n_rus = rusk_cluster_rus(t->c);
	rusk_ru_info s;
	for (int attempt = 0; attempt < DEMO_RESAMPLES; attempt++) {
		t->st.samples++;
		if (!gang) {
			uint32_t ru = rusk_rng_below(rng, n_rus);
			rusk_ru_state(t->c, ru, &s);
			if (s.owner != 0)
				continue;
			t->st.attempts++;
			if (rusk_ru_commit(t->c, k->id, ru, NULL, &k->l[0]) == RUSK_OK) {
				k->n = 1;
				t->st.commits++;
				return 0;
			}
			t->st.conflicts++;
			continue;
		}
		/* A gang of M RUs that look free on one machine, ascending (as
		 * rusk_ru_commit_gang recommends). */
		rusk_machine_info mi;
		rusk_cluster_machine(t->c, rusk_rng_below(rng, rusk_cluster_machines(t->c)), &mi);
		uint32_t m = t->gang_rus < mi.rus ? t->gang_rus : mi.rus;
		if (mi.free_rus < m)
			continue;
		uint32_t rus[DEMO_MAX_GANG], got = 0;
		for (uint32_t i = 0; i < mi.rus && got < m; i++) {
			rusk_ru_state(t->c, mi.first_ru + i, &s);
			if (s.owner == 0)
				rus[got++] = mi.first_ru + i;
		}
		if (got < m)
			continue;
		t->st.attempts++;
		if (rusk_ru_commit_gang(t->c, k->id, rus, m, NULL, k->l, NULL) == RUSK_OK) {
			k->n = m;
			t->st.commits += m;
			return 0;
		}
		t->st.conflicts++;
		t->st.gang_rollbacks++;
	}
	return -1;
}

/* Deliberate misuse: both must be rejected and change nothing. */
static void misuse(demo_thread *t, demo_task *held, uint64_t foreign)
{
	if (held->n == 0)
		return;
	int rc = rusk_ru_release(t->c, foreign, held->l[0]);
	if (rc == RUSK_ENOTOWNER)
		t->st.misuse_rejected++;
	else
		t->st.misuse_absorbed++;
	rusk_lease l = held->l[0];
	release_task(t, held);
	rc = rusk_ru_release(t->c, held->id, l);
	if (rc == RUSK_EFREE || rc == RUSK_ESTALE || rc == RUSK_ENOTOWNER)
		t->st.misuse_rejected++;
	else
		t->st.misuse_absorbed++;
}

static void *demo_main(void *arg)
{
	demo_thread *t = arg;
	rusk_rng rng;
	rusk_rng_seed(&rng, t->seed, t->index + 1);
	demo_task *win = calloc(t->window, sizeof *win);
	pthread_barrier_wait(t->start);
	if (win == NULL)
		return NULL;
	uint64_t next_id = 0;
	size_t head = 0;
	double t0 = cli_now_s(), deadline = t0 + t->duration_s;
	for (uint64_t step = 0;; step++) {
		if ((step & 1023) == 0 && cli_now_s() >= deadline)
			break;
		demo_task *k = &win[head];
		head = head + 1 == t->window ? 0 : head + 1;
		if (k->n != 0)
			release_task(t, k);
		/* Task ids are disjoint across threads: index + 1 + j * threads. */
		k->id = t->index + 1 + (next_id++) * t->threads;
		bool gang = rusk_rng_unit(&rng) < t->gang_share;
		t->st.tasks++;
		t->st.gang_tasks += gang;
		if (place_task(t, &rng, k, gang) != 0)
			t->st.gave_up++;
		if ((step & 4095) == 4095)
			misuse(t, k, k->id + 1);
	}
	t->elapsed_s = cli_now_s() - t0;
	for (size_t i = 0; i < t->window; i++)
		if (win[i].n != 0)
			release_task(t, &win[i]);
	free(win);
	return NULL;
}

static void demo_usage(void)
{
	puts("usage: rusk demo [options]\n"
	     "\n"
	     "Keeps the cluster at a target load with T threads committing and releasing tasks\n"
	     "on random RUs, then recounts every counter against the RU array.\n"
	     "\n"
	     "  --threads T         committing threads (default 2)\n"
	     "  --duration-s S      seconds of load (default 3)\n"
	     "  --load F            share of RUs held in steady state, 0..0.95 (default 0.8)\n"
	     "  --gang-share F      share of tasks that are gangs (default 0.1)\n"
	     "  --gang-rus M        RUs per gang task on one machine, 2..8 (default 4)\n");
	cli_cluster_usage();
}

int rusk_cmd_demo(int argc, char **argv)
{
	cli_cluster cc;
	cli_cluster_init(&cc);
	uint64_t threads = 2, gang_rus = 4;
	double duration = 3, load = 0.8, gang_share = 0.1;
	const cli_opt opts[] = {
	        {CLI_U64_OPT("--threads", 1, 256, &threads)},
	        {CLI_DOUBLE_OPT("--duration-s", 0.01, 86400, &duration)},
	        {CLI_DOUBLE_OPT("--load", 0, 0.95, &load)},
	        {CLI_DOUBLE_OPT("--gang-share", 0, 1, &gang_share)},
	        {CLI_U64_OPT("--gang-rus", 2, DEMO_MAX_GANG, &gang_rus)},
	};
	int pr = cli_parse("demo", argc, argv, &cc, opts, sizeof opts / sizeof *opts, demo_usage);
	if (pr != 0)
		return pr > 0 ? 0 : RUSK_EXIT_USAGE;

	rusk_cluster *c;
	double build_s;
	if (cli_cluster_build(&cc, &c, &build_s) != RUSK_OK)
		return RUSK_EXIT_USAGE;
	uint32_t n_rus = rusk_cluster_rus(c), n_m = rusk_cluster_machines(c);
	double mean_task = 1 + gang_share * ((double)gang_rus - 1);
	size_t window = (size_t)(load * n_rus / mean_task / (double)threads);
	if (window == 0)
		window = 1;

	printf("rusk demo: the master RU array under concurrent commit/release\n\n");
	printf("  %-20s %u machines, %u RUs (%.1f per machine)\n", "cluster", n_m, n_rus,
	       (double)n_rus / n_m);
	printf("  %-20s %u racks, %u cells, %u partitions\n", "topology", rusk_cluster_racks(c),
	       rusk_cluster_cells(c), rusk_cluster_partitions(c));
	uint32_t counts[RUSK_MAX_PLATFORMS] = {0};
	for (uint32_t m = 0; m < n_m; m++) {
		rusk_machine_info mi;
		rusk_cluster_machine(c, m, &mi);
		counts[mi.platform]++;
	}
	printf("  %-20s", "platform types");
	for (uint32_t i = 0; i < rusk_cluster_platforms(c); i++) {
		const char *name;
		rusk_cluster_platform(c, i, &name, NULL);
		printf("%s %s %.1f%%", i ? "," : "", name, 100.0 * counts[i] / n_m);
	}
	printf("\n  %-20s %.3f s\n", "built in", build_s);
	printf("  %-20s %.1f MB, %.1f bytes per RU\n", "array + counters",
	       rusk_cluster_array_bytes(c) / 1e6, (double)rusk_cluster_array_bytes(c) / n_rus);
	printf("  %-20s %" PRIu64 " threads x %.1f s, target load %.0f%%, %.0f%% gangs of %" PRIu64
	       "\n\n",
	       "load", threads, duration, load * 100, gang_share * 100, gang_rus);
	cli_stdout_flush();

	demo_thread *th = calloc(threads, sizeof *th);
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)threads);
	for (uint32_t i = 0; i < threads; i++) {
		th[i] = (demo_thread){.c = c,
		                      .index = i,
		                      .threads = (uint32_t)threads,
		                      .gang_rus = (uint32_t)gang_rus,
		                      .gang_share = gang_share,
		                      .duration_s = duration,
		                      .window = window,
		                      .seed = cc.params.seed,
		                      .start = &start};
		pthread_create(&th[i].tid, NULL, demo_main, &th[i]);
	}
	demo_stats tot = {0};
	double elapsed = 0;
	for (uint32_t i = 0; i < threads; i++) {
		pthread_join(th[i].tid, NULL);
		demo_stats *s = &th[i].st;
		tot.tasks += s->tasks;
		tot.gang_tasks += s->gang_tasks;
		tot.commits += s->commits;
		tot.samples += s->samples;
		tot.attempts += s->attempts;
		tot.conflicts += s->conflicts;
		tot.gang_rollbacks += s->gang_rollbacks;
		tot.gave_up += s->gave_up;
		tot.releases += s->releases;
		tot.rejected += s->rejected;
		tot.misuse_rejected += s->misuse_rejected;
		tot.misuse_absorbed += s->misuse_absorbed;
		if (th[i].elapsed_s > elapsed)
			elapsed = th[i].elapsed_s;
	}
	pthread_barrier_destroy(&start);
	free(th);

	char err[256];
	int vrc = rusk_cluster_verify(c, err, sizeof err);
	uint64_t free_after = rusk_cluster_free_rus(c);
	printf("  %-20s %" PRIu64 " (%" PRIu64 " gangs), %.2f M tasks/s\n", "tasks placed",
	       tot.tasks - tot.gave_up, tot.gang_tasks, (tot.tasks - tot.gave_up) / elapsed / 1e6);
	printf("  %-20s %" PRIu64 " RU commits, %" PRIu64 " RU releases, %.2f M RU ops/s\n",
	       "RU operations", tot.commits, tot.releases,
	       (tot.commits + tot.releases) / elapsed / 1e6);
	printf("  %-20s %" PRIu64 " samples, %.2f per task (RUs seen taken are resampled)\n",
	       "sampling", tot.samples, (double)tot.samples / (tot.tasks ? tot.tasks : 1));
	printf("  %-20s %" PRIu64 " lost CASes of %" PRIu64 " commit attempts (%.4f%%; %" PRIu64
	       " gang rollbacks)\n",
	       "conflicts", tot.conflicts, tot.attempts,
	       tot.attempts ? 100.0 * tot.conflicts / tot.attempts : 0.0, tot.gang_rollbacks);
	printf("  %-20s %" PRIu64 " (gave up after %d resamples)\n", "tasks not placed",
	       tot.gave_up, DEMO_RESAMPLES);
	printf("  %-20s %" PRIu64 " rejected, %" PRIu64 " absorbed (must be 0)\n",
	       "bad releases tried", tot.misuse_rejected, tot.misuse_absorbed);
	printf("  %-20s %" PRIu64 " (must be 0)\n", "own releases refused", tot.rejected);
	printf("  %-20s %" PRIu64 " of %u RUs free after releasing everything\n", "final state",
	       free_after, n_rus);
	printf("  %-20s %s\n", "recount of counters", vrc == RUSK_OK ? "consistent" : err);
	bool ok = vrc == RUSK_OK && tot.misuse_absorbed == 0 && tot.rejected == 0 &&
	          free_after == n_rus && tot.commits == tot.releases;
	printf("\n  result: %s\n", ok ? "PASS (every invariant held)" : "FAIL");
	rusk_cluster_destroy(c);
	return ok ? 0 : RUSK_EXIT_FAIL;
}
