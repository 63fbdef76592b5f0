/* SPDX-License-Identifier: MIT */
/*
 * Issue 26, item 1, under contention: agents of every design (three lock-free strategies
 * and central) on their own threads place incremental tasks of mixed placement kinds
 * (machine, rack, spread, any) on a small busy cluster, come back for each task's remainder
 * with the RUs it holds listed in rusk_task.held, and release tasks as they go. Checked for
 * every task: its leases together keep its kind (one machine, one rack, distinct machines),
 * it owns each of them, and no RU is held by two tasks at once (a shared table of holders,
 * claimed by CAS). At the end, after every release: rusk_cluster_verify and every RU free.
 * Workers only count (STYLE habit 9); the main thread asserts after pthread_join. Run in
 * the plain, TSan and ASan+UBSan builds (label concurrency).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

#include "base/rng.h"

#define THREADS  4
#define TASKS    10000 /* per thread */
#define WINDOW   4     /* tasks a thread holds at once */
#define MAX_RUS  8
#define REMAINS  6 /* calls for a task's remainder before it keeps what it has */
#define MACHINES 16
#define RUS      4

typedef struct task_rec {
	uint64_t id;
	uint8_t place;
	uint32_t n; /* leases held */
	rusk_lease l[MAX_RUS];
} task_rec;

typedef struct worker {
	pthread_t tid;
	int index;
	rusk_cluster *c;
	pthread_barrier_t *bar;
	_Atomic uint64_t *holder; /* [RUs] task holding the RU as this test saw it, 0: none */
	uint64_t tasks, partial, remainders, rest_placed, completed;
	uint64_t kind_violations, not_owned, double_held, release_errors, other_errors, errs;
} worker;

static rusk_cluster *make(void)
{
	return fx_cluster((fx_shape){
	        .machines = MACHINES, .rus = RUS, .per_rack = 4, .per_cell = 2, .partitions = 2});
}

/* Whether leases l[0..n) keep placement kind `place`. */
static bool kind_kept(const rusk_cluster *c, uint8_t place, const rusk_lease *l, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		uint32_t mi = rusk_cluster_ru_machine(c, l[i].ru);
		uint32_t m0 = rusk_cluster_ru_machine(c, l[0].ru);
		if (place == RUSK_PLACE_MACHINE && mi != m0)
			return false;
		if (place == RUSK_PLACE_RACK && mi / 4 != m0 / 4) /* racks of 4 machines */
			return false;
		for (uint32_t j = 0; place == RUSK_PLACE_SPREAD && j < i; j++)
			if (rusk_cluster_ru_machine(c, l[j].ru) == mi)
				return false;
		for (uint32_t j = 0; j < i; j++)
			if (l[j].ru == l[i].ru)
				return false;
	}
	return true;
}

/* Records the leases l[0..n) just placed for task id: owned by it, claimed in the table. */
static void claim(worker *w, uint64_t id, const rusk_lease *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		rusk_ru_info ri;
		if (rusk_ru_state(w->c, l[i].ru, &ri) != RUSK_OK || ri.owner != id)
			w->not_owned++;
		uint64_t none = 0;
		/* Relaxed: the table only detects a second holder; the kernel's own CAS on the
		 * RU orders the tenures. */
		if (!atomic_compare_exchange_strong_explicit(&w->holder[l[i].ru], &none, id,
		                                             memory_order_relaxed,
		                                             memory_order_relaxed))
			w->double_held++;
	}
}

/* Releases task r's leases: its table entries cleared first (a later holder may claim an
 * RU as soon as the kernel frees it), then through the agent; the view learns they are
 * free. */
static void release_task(worker *w, rusk_agent *ag, task_rec *r)
{
	for (uint32_t i = 0; i < r->n; i++) {
		uint64_t mine = r->id;
		if (!atomic_compare_exchange_strong_explicit(&w->holder[r->l[i].ru], &mine, 0,
		                                             memory_order_relaxed,
		                                             memory_order_relaxed))
			w->double_held++;
	}
	size_t rejected = 0;
	if (rusk_agent_release(ag, r->id, r->l, r->n, &rejected) != RUSK_OK || rejected != 0)
		w->release_errors++;
	for (uint32_t i = 0; i < r->n; i++)
		rusk_view_mark_free(rusk_agent_view(ag), r->l[i].ru);
	r->n = 0;
	r->id = 0;
}

static void *race_held(void *arg)
{
	worker *w = arg;
	rusk_thread_register();
	rusk_sync_params sp = {.policy = RUSK_SYNC_STATE,
	                       .partitions = rusk_cluster_partitions(w->c),
	                       .agents = THREADS,
	                       .gap_ns = 1000000000ull};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, (uint32_t)w->index);
	static const rusk_strategy design[THREADS] = {RUSK_STRATEGY_LATENCY, RUSK_STRATEGY_QUALITY,
	                                              RUSK_STRATEGY_RANDOM, RUSK_STRATEGY_CENTRAL};
	ap.strategy = design[w->index % THREADS];
	ap.seed = 1 + (uint64_t)w->index;
	ap.max_retries = 2; /* short: remainders come back through held more often */
	rusk_agent *ag = NULL;
	if (rusk_agent_create(w->c, &ap, &ag, NULL, 0) != RUSK_OK) {
		w->errs++;
		pthread_barrier_wait(w->bar);
		rusk_thread_unregister();
		return NULL;
	}
	rusk_view *v = rusk_agent_view(ag);
	rusk_rng rng;
	rusk_rng_seed(&rng, 26, (uint64_t)w->index);
	task_rec win[WINDOW];
	memset(win, 0, sizeof win);
	static const uint32_t most[4] = {MAX_RUS, RUS, MAX_RUS, MAX_RUS}; /* by placement */
	pthread_barrier_wait(w->bar);
	for (uint64_t k = 0; k < TASKS; k++) {
		if (k % 16 == 0)
			for (uint32_t p = 0; p < rusk_cluster_partitions(w->c); p++)
				rusk_view_sync(v, p);
		task_rec *r = &win[k % WINDOW];
		if (r->n > 0)
			release_task(w, ag, r);
		uint8_t place = (uint8_t)rusk_rng_below(&rng, 4);
		uint32_t want = 2 + rusk_rng_below(&rng, most[place] - 1);
		r->id = (k * THREADS + (uint64_t)w->index + 1);
		r->place = place;
		rusk_task t = {.id = r->id, .rus = want, .gang = false, .placement = place};
		rusk_placement pl;
		int rc = rusk_agent_place(ag, &t, r->l, &pl);
		w->tasks++;
		if (rc == RUSK_EAGAIN) {
			r->id = 0;
			continue;
		}
		if (rc != RUSK_OK) {
			w->other_errors++;
			r->id = 0;
			continue;
		}
		r->n = pl.placed;
		claim(w, r->id, r->l, r->n);
		w->partial += r->n < want;
		/* The remainder, held RUs listed; now and then all at once (gang). */
		for (int q = 0; q < REMAINS && r->n < want; q++) {
			for (uint32_t p = 0; p < rusk_cluster_partitions(w->c); p++)
				rusk_view_sync(v, p);
			rusk_task rest = t;
			rest.rus = want - r->n;
			rest.held = r->l;
			rest.n_held = r->n;
			rest.gang = rusk_rng_below(&rng, 4) == 0;
			rc = rusk_agent_place(ag, &rest, r->l + r->n, &pl);
			w->remainders++;
			if (rc == RUSK_OK) {
				claim(w, r->id, r->l + r->n, pl.placed);
				r->n += pl.placed;
				w->rest_placed += pl.placed;
			} else if (rc != RUSK_EAGAIN) {
				w->other_errors++;
			}
		}
		w->completed += r->n == want;
		if (!kind_kept(w->c, place, r->l, r->n))
			w->kind_violations++;
	}
	for (size_t i = 0; i < WINDOW; i++)
		if (win[i].n > 0)
			release_task(w, ag, &win[i]);
	rusk_agent_destroy(ag);
	rusk_thread_unregister();
	return NULL;
}

static void test_held_remainders_race(void **state)
{
	(void)state;
	rusk_cluster *c = make(); /* 64 RUs for up to 4 x 4 x 8 wanted: saturated */
	uint32_t n_rus = rusk_cluster_rus(c);
	_Atomic uint64_t *holder = calloc(n_rus, sizeof *holder);
	assert_non_null(holder);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, THREADS);
	worker w[THREADS];
	for (int i = 0; i < THREADS; i++) {
		w[i] = (worker){.index = i, .c = c, .bar = &bar, .holder = holder};
		pthread_create(&w[i].tid, NULL, race_held, &w[i]);
	}
	uint64_t tasks = 0, partial = 0, remainders = 0, rest_placed = 0, completed = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(w[i].tid, NULL);
		assert_int_equal(w[i].errs, 0);
		assert_int_equal(w[i].kind_violations, 0);
		assert_int_equal(w[i].not_owned, 0);
		assert_int_equal(w[i].double_held, 0);
		assert_int_equal(w[i].release_errors, 0);
		assert_int_equal(w[i].other_errors, 0);
		tasks += w[i].tasks;
		partial += w[i].partial;
		remainders += w[i].remainders;
		rest_placed += w[i].rest_placed;
		completed += w[i].completed;
	}
	print_message("%llu tasks, %llu placed in part, %llu remainder calls placed %llu RUs, "
	              "%llu completed\n",
	              (unsigned long long)tasks, (unsigned long long)partial,
	              (unsigned long long)remainders, (unsigned long long)rest_placed,
	              (unsigned long long)completed);
	assert_true(partial > 0 && rest_placed > 0); /* the remainders were exercised */
	for (uint32_t r = 0; r < n_rus; r++)
		assert_int_equal(atomic_load_explicit(&holder[r], memory_order_relaxed), 0);
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cluster_free_rus(c), n_rus); /* nothing leaked */
	pthread_barrier_destroy(&bar);
	free(holder);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_held_remainders_race),
	};
	rusk_thread_register();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
