/* SPDX-License-Identifier: MIT */
/*
 * ru_torture: threads hammer a small hot set of RUs with single, gang and incremental
 * commits, releases and deliberate misuse, and check invariants against a shadow table.
 *
 * Shadow protocol: after the array grants an RU to task T, the thread CASes shadow[ru]
 * from 0 to T; before it releases, it CASes shadow[ru] from T back to 0. If the array
 * ever granted one RU to two tasks at once, the second shadow CAS fails: "held twice".
 * After a failed gang commit none of its RUs may be held by the task ("partial gang").
 * Double and foreign releases must be rejected ("misuse absorbed"). At the end every
 * task is released, and the array must be all free with counters equal to a recount
 * ("leaked" / verify). Pass rule: 0 violations. Threads start on a barrier; --yield adds
 * random sched_yield() at the linearization points to widen race windows.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rusk/rusk.h>

#include "args.h"
#include "base/rng.h"

#define MAX_RUS  4
#define MAX_HELD 8

typedef struct held {
	uint64_t id;
	size_t n;
	rusk_lease l[MAX_RUS];
} held;

typedef struct stats {
	uint64_t ops, commits, conflicts, gang_fail, incr_partial, releases, misuse, checks;
	uint64_t v_twice, v_partial, v_absorbed, v_release, v_state;
} stats;

static rusk_cluster *cl;
static uint64_t *shadow;
static uint32_t hot;
static int nthreads, yield_pct;
static double seconds;
static uint64_t seed;
static pthread_barrier_t start;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void maybe_yield(rusk_rng *r)
{
	if (yield_pct > 0 && (int)rusk_rng_below(r, 100) < yield_pct)
		sched_yield();
}

static void claim(stats *s, uint64_t task, rusk_lease l)
{
	uint64_t expect = 0;
	s->checks++;
	if (!__atomic_compare_exchange_n(&shadow[l.ru], &expect, task, false, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		s->v_twice++;
	rusk_ru_info rs;
	rusk_ru_state(cl, l.ru, &rs);
	s->checks++;
	if (rs.owner != task || rs.gen != l.gen)
		s->v_state++;
}

static void drop(stats *s, rusk_rng *r, held *h)
{
	for (size_t i = 0; i < h->n; i++) {
		uint64_t expect = h->id;
		s->checks++;
		if (!__atomic_compare_exchange_n(&shadow[h->l[i].ru], &expect, 0, false,
		                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			s->v_twice++;
		maybe_yield(r);
		s->checks++;
		if (rusk_ru_release(cl, h->id, h->l[i]) != RUSK_OK)
			s->v_release++;
		s->releases++;
	}
	/* Misuse after the fact: a second release of the first lease must be refused. */
	if (h->n > 0 && rusk_rng_below(r, 8) == 0) {
		int rc = rusk_ru_release(cl, h->id, h->l[0]);
		s->misuse++;
		s->checks++;
		if (rc == RUSK_OK)
			s->v_absorbed++;
	}
	h->n = 0;
}

static void pick(rusk_rng *r, uint32_t *rus, size_t m)
{
	for (size_t i = 0; i < m; i++) {
	again:
		rus[i] = rusk_rng_below(r, hot);
		for (size_t j = 0; j < i; j++)
			if (rus[j] == rus[i])
				goto again;
	}
	/* ascending, as rusk_ru_commit_gang recommends */
	for (size_t i = 1; i < m; i++)
		for (size_t j = i; j > 0 && rus[j - 1] > rus[j]; j--) {
			uint32_t t = rus[j];
			rus[j] = rus[j - 1];
			rus[j - 1] = t;
		}
}

typedef struct worker {
	pthread_t tid;
	int index;
	stats s;
} worker;

static void *run(void *arg)
{
	worker *w = arg;
	stats *s = &w->s;
	rusk_rng r;
	rusk_rng_seed(&r, seed, (uint64_t)w->index + 1);
	held h[MAX_HELD];
	memset(h, 0, sizeof h);
	uint64_t next = 0;
	pthread_barrier_wait(&start);
	double deadline = now_s() + seconds;
	for (uint64_t op = 0;; op++) {
		if ((op & 255) == 0 && now_s() >= deadline)
			break;
		s->ops++;
		held *slot = &h[rusk_rng_below(&r, MAX_HELD)];
		if (slot->n != 0) {
			/* Foreign release attempt before the real one. */
			if (rusk_rng_below(&r, 16) == 0) {
				s->misuse++;
				s->checks++;
				if (rusk_ru_release(cl, slot->id + 1, slot->l[0]) == RUSK_OK)
					s->v_absorbed++;
			}
			drop(s, &r, slot);
			continue;
		}
		uint64_t task = (uint64_t)w->index + 1 + (next++) * (uint64_t)nthreads;
		size_t m = 1 + rusk_rng_below(&r, MAX_RUS);
		uint32_t rus[MAX_RUS];
		pick(&r, rus, m);
		uint32_t kind = rusk_rng_below(&r, 3);
		slot->id = task;
		maybe_yield(&r);
		if (kind == 0 || m == 1) {
			int rc = rusk_ru_commit(cl, task, rus[0], NULL, &slot->l[0]);
			if (rc == RUSK_OK) {
				slot->n = 1;
				s->commits++;
				claim(s, task, slot->l[0]);
			} else {
				s->conflicts++;
			}
		} else if (kind == 1) {
			size_t lost = 0;
			int rc = rusk_ru_commit_gang(cl, task, rus, m, NULL, slot->l, &lost);
			if (rc == RUSK_OK) {
				slot->n = m;
				s->commits += m;
				for (size_t i = 0; i < m; i++)
					claim(s, task, slot->l[i]);
			} else {
				s->gang_fail++;
				s->conflicts++;
				for (size_t i = 0; i < m; i++) {
					rusk_ru_info rs;
					rusk_ru_state(cl, rus[i], &rs);
					s->checks++;
					if (rs.owner == task)
						s->v_partial++;
				}
			}
		} else {
			size_t won = 0;
			rusk_ru_commit_incremental(cl, task, rus, m, NULL, slot->l, &won);
			slot->n = won;
			s->commits += won;
			s->conflicts += m - won;
			s->incr_partial += won < m;
			for (size_t i = 0; i < won; i++)
				claim(s, task, slot->l[i]);
		}
	}
	for (int i = 0; i < MAX_HELD; i++)
		drop(s, &r, &h[i]);
	return NULL;
}

static int usage(const char *bad)
{
	if (bad)
		fprintf(stderr, "ru_torture: bad or missing value for %s\n", bad);
	fprintf(stderr, "usage: ru_torture [--threads T] [--seconds S] [--hot RUs] [--seed N] "
	                "[--yield PERCENT]\n");
	return 2;
}

int main(int argc, char **argv)
{
	nthreads = 4;
	seconds = 2;
	hot = 256;
	seed = 1;
	yield_pct = 0;
	const stress_arg opts[] = {{"--threads", STRESS_INT, &nthreads},
	                           {"--seconds", STRESS_DOUBLE, &seconds},
	                           {"--hot", STRESS_U32, &hot},
	                           {"--seed", STRESS_U64, &seed},
	                           {"--yield", STRESS_INT, &yield_pct}};
	const char *bad = stress_args_parse(argc, argv, opts, sizeof opts / sizeof opts[0]);
	if (bad)
		return usage(bad);
	if (nthreads < 1 || nthreads > 256 || seconds <= 0 || hot < MAX_RUS || yield_pct < 0 ||
	    yield_pct > 100)
		return usage("an option (range)");

	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.rus_per_machine = 16;
	p.machines = (hot + 15) / 16;
	p.machines_per_rack = 1;
	p.racks_per_cell = 1;
	p.partitions = p.machines < 4 ? p.machines : 4;
	char err[256];
	if (rusk_cluster_create(&p, &cl, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "ru_torture: %s\n", err);
		return 2;
	}
	hot = rusk_cluster_rus(cl);
	shadow = calloc(hot, sizeof *shadow);
	worker *w = calloc((size_t)nthreads, sizeof *w);
	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	double t0 = now_s();
	for (int i = 0; i < nthreads; i++) {
		w[i].index = i;
		pthread_create(&w[i].tid, NULL, run, &w[i]);
	}
	stats t = {0};
	for (int i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		stats *s = &w[i].s;
		t.ops += s->ops, t.commits += s->commits, t.conflicts += s->conflicts;
		t.gang_fail += s->gang_fail, t.incr_partial += s->incr_partial;
		t.releases += s->releases, t.misuse += s->misuse, t.checks += s->checks;
		t.v_twice += s->v_twice, t.v_partial += s->v_partial, t.v_absorbed += s->v_absorbed;
		t.v_release += s->v_release, t.v_state += s->v_state;
	}
	double dt = now_s() - t0;
	uint64_t leaked = 0;
	for (uint32_t ru = 0; ru < hot; ru++) {
		rusk_ru_info rs;
		rusk_ru_state(cl, ru, &rs);
		leaked += rs.owner != 0 || shadow[ru] != 0;
	}
	int vrc = rusk_cluster_verify(cl, err, sizeof err);
	uint64_t violations = t.v_twice + t.v_partial + t.v_absorbed + t.v_release + t.v_state +
	                      leaked + (vrc != RUSK_OK) + (t.commits != t.releases) +
	                      (rusk_cluster_free_rus(cl) != hot);
	printf("ru_torture: %d threads, %u hot RUs, %.2f s, seed %" PRIu64 ", yield %d%%\n",
	       nthreads, hot, dt, seed, yield_pct);
	printf("  operations        %" PRIu64 " (%.2f M/s)\n", t.ops, t.ops / dt / 1e6);
	printf("  RU commits        %" PRIu64 ", releases %" PRIu64 "\n", t.commits, t.releases);
	printf("  conflicts         %" PRIu64 " (gang rollbacks %" PRIu64
	       ", partial incremental %" PRIu64 ")\n",
	       t.conflicts, t.gang_fail, t.incr_partial);
	printf("  misuse injected   %" PRIu64 " (double/foreign releases)\n", t.misuse);
	printf("  invariant checks  %" PRIu64 "\n", t.checks);
	printf("  violations        %" PRIu64 " (held twice %" PRIu64 ", partial gang %" PRIu64
	       ", misuse absorbed %" PRIu64 ", own release refused %" PRIu64 ", state %" PRIu64
	       ", leaked %" PRIu64 ", recount %s)\n",
	       violations, t.v_twice, t.v_partial, t.v_absorbed, t.v_release, t.v_state, leaked,
	       vrc == RUSK_OK ? "ok" : err);
	printf("%s\n", violations == 0 ? "PASS" : "FAIL");
	pthread_barrier_destroy(&start);
	free(w);
	free(shadow);
	rusk_cluster_destroy(cl);
	return violations == 0 ? 0 : 1;
}
