/* SPDX-License-Identifier: MIT */
/*
 * Threads racing on the master RU array, and the lock-based baselines' agents on it.
 * Workers only count (cmocka asserts on the main thread after pthread_join, STYLE habit 9).
 * Run in the plain, TSan and ASan+UBSan builds.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

#include "base/rng.h"

#define THREADS 4
#define SET     4096
#define ROUNDS  8

typedef struct racer {
	pthread_t tid;
	int index;
	rusk_cluster *c;
	pthread_barrier_t *bar;
	uint8_t *won; /* [SET] 1 where this thread won */
	rusk_lease leases[SET];
	uint64_t wins, conflicts, other_errors, release_errors;
} racer;

static rusk_cluster *make(uint32_t machines)
{
	return fx_cluster((fx_shape){.machines = machines,
	                             .rus = 16,
	                             .per_rack = 8,
	                             .per_cell = 2,
	                             .partitions = machines >= 64 ? 4 : 1});
}

/* Every thread tries to commit every RU of [0, SET), each in its own random order, then
 * (after a barrier) releases what it won; ROUNDS times. */
static void *race_commit(void *arg)
{
	racer *r = arg;
	rusk_rng rng;
	rusk_rng_seed(&rng, 77, (uint64_t)r->index);
	uint32_t *order = malloc(SET * sizeof *order);
	for (uint32_t i = 0; i < SET; i++)
		order[i] = i;
	for (int round = 0; round < ROUNDS; round++) {
		for (uint32_t i = SET - 1; i > 0; i--) {
			uint32_t j = rusk_rng_below(&rng, i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		uint64_t task = (uint64_t)(round * THREADS + r->index + 1);
		pthread_barrier_wait(r->bar);
		for (uint32_t i = 0; i < SET; i++) {
			uint32_t ru = order[i];
			int rc = rusk_ru_commit(r->c, task, ru, NULL, &r->leases[ru]);
			if (rc == RUSK_OK) {
				r->won[round * SET + ru] = 1;
				r->wins++;
			} else if (rc == RUSK_ECONFLICT) {
				r->conflicts++;
			} else {
				r->other_errors++;
			}
		}
		pthread_barrier_wait(r->bar); /* all commits done; the main thread may look */
		pthread_barrier_wait(r->bar);
		for (uint32_t ru = 0; ru < SET; ru++)
			if (r->won[round * SET + ru] &&
			    rusk_ru_release(r->c, task, r->leases[ru]) != RUSK_OK)
				r->release_errors++;
		pthread_barrier_wait(r->bar);
	}
	free(order);
	return NULL;
}

static void test_one_winner_per_ru(void **state)
{
	(void)state;
	rusk_cluster *c = make(1024);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, THREADS + 1);
	racer *r = calloc(THREADS, sizeof *r);
	for (int i = 0; i < THREADS; i++) {
		r[i] = (racer){.index = i, .c = c, .bar = &bar};
		r[i].won = calloc((size_t)ROUNDS * SET, 1);
		pthread_create(&r[i].tid, NULL, race_commit, &r[i]);
	}
	uint64_t split_rounds = 0;
	for (int round = 0; round < ROUNDS; round++) {
		pthread_barrier_wait(&bar); /* start */
		pthread_barrier_wait(&bar); /* commits done */
		/* Quiescent: counters must equal a recount, SET RUs taken. */
		char err[256];
		if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
			fail_msg("round %d: %s", round, err);
		assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c) - SET);
		int winners_seen = 0;
		for (int i = 0; i < THREADS; i++) {
			uint64_t w = 0;
			for (uint32_t ru = 0; ru < SET; ru++)
				w += r[i].won[round * SET + ru];
			winners_seen += w > 0;
		}
		split_rounds += winners_seen > 1;
		pthread_barrier_wait(&bar); /* release */
		pthread_barrier_wait(&bar); /* released */
		if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
			fail_msg("round %d after release: %s", round, err);
	}
	uint64_t wins = 0, conflicts = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(r[i].tid, NULL);
		assert_int_equal(r[i].other_errors, 0);
		assert_int_equal(r[i].release_errors, 0);
		wins += r[i].wins;
		conflicts += r[i].conflicts;
	}
	/* Exactly one winner per RU per round, and every loser saw a conflict. */
	for (int round = 0; round < ROUNDS; round++)
		for (uint32_t ru = 0; ru < SET; ru++) {
			int n = 0;
			for (int i = 0; i < THREADS; i++)
				n += r[i].won[round * SET + ru];
			if (n != 1)
				fail_msg("round %d RU %u: %d winners", round, ru, n);
		}
	assert_int_equal(wins, (uint64_t)ROUNDS * SET);
	assert_int_equal(conflicts, (uint64_t)ROUNDS * SET * (THREADS - 1));
	print_message("%llu conflicts; %llu of %d rounds split between threads\n",
	              (unsigned long long)conflicts, (unsigned long long)split_rounds, ROUNDS);
	assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c));
	for (int i = 0; i < THREADS; i++)
		free(r[i].won);
	free(r);
	pthread_barrier_destroy(&bar);
	rusk_cluster_destroy(c);
}

/* Gangs of 4 RUs from a 64-RU window race; each success must own all four, each failure
 * none. */
typedef struct ganger {
	pthread_t tid;
	int index;
	rusk_cluster *c;
	pthread_barrier_t *bar;
	uint64_t ok, failed, partial, not_owned, release_errors;
} ganger;

static void *race_gang(void *arg)
{
	ganger *g = arg;
	rusk_rng rng;
	rusk_rng_seed(&rng, 99, (uint64_t)g->index);
	pthread_barrier_wait(g->bar);
	for (uint64_t k = 0; k < 20000; k++) {
		uint64_t task = k * THREADS + (uint64_t)g->index + 1;
		uint32_t base = rusk_rng_below(&rng, 60), rus[4];
		for (int i = 0; i < 4; i++)
			rus[i] = base + (uint32_t)i; /* ascending, overlapping with neighbours */
		rusk_lease l[4];
		int rc = rusk_ru_commit_gang(g->c, task, rus, 4, NULL, l, NULL);
		rusk_ru_info s;
		if (rc == RUSK_OK) {
			g->ok++;
			for (int i = 0; i < 4; i++) {
				rusk_ru_state(g->c, rus[i], &s);
				g->not_owned += s.owner != task;
			}
			if (rusk_ru_release_many(g->c, task, l, 4, NULL) != RUSK_OK)
				g->release_errors++;
		} else {
			g->failed++;
			for (int i = 0; i < 4; i++) {
				rusk_ru_state(g->c, rus[i], &s);
				g->partial += s.owner == task;
			}
		}
	}
	return NULL;
}

static void test_gang_race(void **state)
{
	(void)state;
	rusk_cluster *c = make(64);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, THREADS);
	ganger g[THREADS];
	for (int i = 0; i < THREADS; i++) {
		g[i] = (ganger){.index = i, .c = c, .bar = &bar};
		pthread_create(&g[i].tid, NULL, race_gang, &g[i]);
	}
	uint64_t ok = 0, failed = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(g[i].tid, NULL);
		assert_int_equal(g[i].partial, 0);
		assert_int_equal(g[i].not_owned, 0);
		assert_int_equal(g[i].release_errors, 0);
		ok += g[i].ok;
		failed += g[i].failed;
	}
	print_message("gangs: %llu committed, %llu rolled back\n", (unsigned long long)ok,
	              (unsigned long long)failed);
	assert_int_equal(ok + failed, (uint64_t)THREADS * 20000);
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c));
	pthread_barrier_destroy(&bar);
	rusk_cluster_destroy(c);
}

/* Two threads release the same lease at once: exactly one succeeds, the counters and
 * interference sums stay exact. */
typedef struct doubler {
	pthread_t tid;
	rusk_cluster *c;
	pthread_barrier_t *bar;
	rusk_lease *lease;
	uint64_t ok, refused, wrong;
} doubler;

#define DOUBLE_ROUNDS 2000

static void *race_double(void *arg)
{
	doubler *d = arg;
	for (int i = 0; i < DOUBLE_ROUNDS; i++) {
		pthread_barrier_wait(d->bar);
		int rc = rusk_ru_release(d->c, 5, *d->lease);
		if (rc == RUSK_OK)
			d->ok++;
		else if (rc == RUSK_EFREE)
			d->refused++;
		else
			d->wrong++;
		pthread_barrier_wait(d->bar);
	}
	return NULL;
}

static void test_concurrent_double_release(void **state)
{
	(void)state;
	rusk_cluster *c = make(16);
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 3);
	rusk_lease lease;
	doubler d[2];
	for (int i = 0; i < 2; i++) {
		d[i] = (doubler){.c = c, .bar = &bar, .lease = &lease};
		pthread_create(&d[i].tid, NULL, race_double, &d[i]);
	}
	rusk_profile prof = {{99, 98, 97, 96, 95, 94, 93, 92, 91, 90}};
	for (int i = 0; i < DOUBLE_ROUNDS; i++) {
		if (rusk_ru_commit(c, 5, 3, &prof, &lease) != RUSK_OK)
			fail_msg("commit %d", i);
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(d[i].tid, NULL);
	assert_int_equal(d[0].ok + d[1].ok, DOUBLE_ROUNDS);
	assert_int_equal(d[0].refused + d[1].refused, DOUBLE_ROUNDS);
	assert_int_equal(d[0].wrong + d[1].wrong, 0);
	char err[256];
	if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
		fail_msg("%s", err);
	rusk_machine_info mi;
	rusk_cluster_machine(c, 0, &mi);
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		assert_int_equal(mi.interference[i], 0);
	pthread_barrier_destroy(&bar);
	rusk_cluster_destroy(c);
}

/*
 * The lock-based baselines under contention: global-lock and central agents place and
 * release through rusk_agent_release (under the cluster's one mutex) beside a lock-free
 * agent on the same small cluster. Every placement owns its RU when checked, every
 * release is accepted once, and at the end nothing leaked.
 */
typedef struct serial {
	pthread_t tid;
	int index;
	rusk_cluster *c;
	pthread_barrier_t *bar;
	uint64_t placed, not_owned, release_errors, other_errors, errs;
} serial;

#define SERIAL_TASKS  6000
#define SERIAL_WINDOW 48

static void *race_serial(void *arg)
{
	serial *s = arg;
	rusk_thread_register();
	rusk_sync_params sp = {.policy = RUSK_SYNC_STATE,
	                       .partitions = rusk_cluster_partitions(s->c),
	                       .agents = THREADS,
	                       .gap_ns = 1000000000ull};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, (uint32_t)s->index);
	/* 0: central, 1 and 2: global-lock, 3: lock-free rusk */
	ap.strategy = s->index == 0 ? RUSK_STRATEGY_CENTRAL : RUSK_STRATEGY_LATENCY;
	ap.global_lock = s->index == 1 || s->index == 2;
	rusk_agent *ag = NULL;
	if (rusk_agent_create(s->c, &ap, &ag, NULL, 0) != RUSK_OK) {
		s->errs++;
		pthread_barrier_wait(s->bar);
		rusk_thread_unregister();
		return NULL;
	}
	rusk_view *v = rusk_agent_view(ag);
	rusk_lease held[SERIAL_WINDOW];
	uint64_t ids[SERIAL_WINDOW] = {0};
	pthread_barrier_wait(s->bar);
	for (uint64_t k = 0; k < SERIAL_TASKS; k++) {
		if (k % 32 == 0)
			for (uint32_t p = 0; p < rusk_cluster_partitions(s->c); p++)
				rusk_view_sync(v, p);
		size_t slot = k % SERIAL_WINDOW;
		if (ids[slot] != 0) {
			size_t rejected = 0;
			if (rusk_agent_release(ag, ids[slot], &held[slot], 1, &rejected) !=
			            RUSK_OK ||
			    rejected != 0)
				s->release_errors++;
			ids[slot] = 0;
		}
		rusk_task t = {.id = k * THREADS + (uint64_t)s->index + 1, .rus = 1, .gang = true};
		rusk_placement pl;
		int rc = rusk_agent_place(ag, &t, &held[slot], &pl);
		if (rc == RUSK_OK) {
			rusk_ru_info info;
			rusk_ru_state(s->c, held[slot].ru, &info);
			s->not_owned += info.owner != t.id;
			ids[slot] = t.id;
			s->placed++;
		} else if (rc != RUSK_EAGAIN) {
			s->other_errors++;
		}
	}
	for (size_t i = 0; i < SERIAL_WINDOW; i++)
		if (ids[i] != 0 && rusk_agent_release(ag, ids[i], &held[i], 1, NULL) != RUSK_OK)
			s->release_errors++;
	rusk_agent_destroy(ag);
	rusk_thread_unregister();
	return NULL;
}

static void test_serialised_designs_race(void **state)
{
	(void)state;
	rusk_cluster *c = make(16); /* 256 RUs for 4 x 48 held: busy, conflicts likely */
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, THREADS);
	serial s[THREADS];
	for (int i = 0; i < THREADS; i++) {
		s[i] = (serial){.index = i, .c = c, .bar = &bar};
		pthread_create(&s[i].tid, NULL, race_serial, &s[i]);
	}
	uint64_t placed = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(s[i].tid, NULL);
		assert_int_equal(s[i].errs, 0);
		assert_int_equal(s[i].not_owned, 0);
		assert_int_equal(s[i].release_errors, 0);
		assert_int_equal(s[i].other_errors, 0);
		assert_true(s[i].placed > 0);
		placed += s[i].placed;
	}
	print_message("central, 2 x global-lock, rusk: %llu placed and released\n",
	              (unsigned long long)placed);
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c));
	pthread_barrier_destroy(&bar);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_one_winner_per_ru),
	        cmocka_unit_test(test_gang_race),
	        cmocka_unit_test(test_concurrent_double_release),
	        cmocka_unit_test(test_serialised_designs_race),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
