/* SPDX-License-Identifier: MIT */
/*
 * Torture of vector commits: threads commit and release mixed tasks (cores + memory + a
 * shared or whole GPUs) on a few machines while a topology thread fails and restores one
 * of them. Each worker keeps a shadow of what it holds; a checker samples every machine's
 * free memory and GPU shares for values out of range. At the end (after pthread_join) the
 * cluster is verified with the survivors still held, then with everything released.
 * Workers only count; cmocka asserts on the main thread. Run plain, under TSan and ASan.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "base/rng.h"
#include "fixture.h"

#define WORKERS  3
#define MACHINES 4
#define ROUNDS   100000
#define HELD     8

typedef struct held {
	uint64_t task;
	uint32_t n;
	rusk_lease l[4];
} held;

typedef struct worker {
	pthread_t tid;
	int index;
	rusk_cluster *c;
	held h[HELD];
	uint64_t ok, short_, conflict, released, revoked_release, other;
} worker;

static atomic_bool stop;
static atomic_ulong violations;
static atomic_ulong topo_revoked; /* leases revoked by the topology thread */

static void on_revoke(uint64_t task, rusk_lease l, void *ctx)
{
	(void)task;
	(void)l;
	(void)ctx;
	atomic_fetch_add(&topo_revoked, 1);
}

static const rusk_platform plats[] = {{"A", 1.0, 1.0}, {"B", 1.0, 1.0}};

static rusk_cluster *make(void)
{
	static const rusk_machine_spec specs[MACHINES] = {
	        {8, 4096, 2, 0, NULL, false},
	        {8, 4096, 4, 1, NULL, false},
	        {8, 8192, 8, 0, NULL, false},
	        {8, 2048, 1, 1, NULL, false},
	};
	return fx_machines(specs, MACHINES,
	                   (fx_shape){.per_rack = 2, .per_cell = 1, .partitions = 1}, plats, 2);
}

static void release_slot(worker *w, held *h)
{
	if (h->n == 0)
		return;
	size_t rej = 0;
	rusk_ru_release_many(w->c, h->task, h->l, h->n, &rej);
	if (rej == 0)
		w->released++;
	else
		w->revoked_release++; /* its machine failed meanwhile: the shares went back then */
	h->n = 0;
}

static void *work(void *arg)
{
	worker *w = arg;
	rusk_rng rng;
	rusk_rng_seed(&rng, 4242, (uint64_t)w->index);
	rusk_thread_register();
	/* At least ROUNDS, and on until failures of machine 1 have revoked held tasks a few
	 * times (the topology thread may be scheduled late on a loaded machine), within a
	 * bound. */
	for (uint64_t r = 0; r < 20 * ROUNDS && (r < ROUNDS || atomic_load(&topo_revoked) < 20);
	     r++) {
		held *h = &w->h[rusk_rng_next(&rng) % HELD];
		release_slot(w, h);
		uint32_t m = (uint32_t)(rusk_rng_next(&rng) % MACHINES);
		rusk_machine_info mi;
		rusk_cluster_machine(w->c, m, &mi);
		uint32_t n = 1 + (uint32_t)(rusk_rng_next(&rng) % 3), off = rusk_rng_next(&rng) % 6;
		uint32_t rus[4];
		for (uint32_t i = 0; i < n; i++)
			rus[i] = mi.first_ru + off + i;
		rusk_vec_demand d = {.mem_mib = (uint32_t)(rusk_rng_next(&rng) % 3000)};
		uint64_t kind = rusk_rng_next(&rng) % 3;
		if (kind == 1)
			d = (rusk_vec_demand){d.mem_mib, 1,
			                      (uint16_t)(100 + rusk_rng_next(&rng) % 900), 0};
		else if (kind == 2)
			d = (rusk_vec_demand){d.mem_mib, (uint16_t)(1 + rusk_rng_next(&rng) % 2),
			                      1000, 0};
		uint64_t task = (uint64_t)w->index * 10000000 + r + 1;
		size_t lost;
		int rc = rusk_ru_commit_vec(w->c, task, rus, n, &d, NULL, h->l, &lost);
		if (rc == RUSK_OK) {
			h->task = task;
			h->n = n;
			w->ok++;
		} else if (rc == RUSK_ECONFLICT && lost == n) {
			w->short_++;
		} else if (rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE) {
			w->conflict++;
		} else if (rc != RUSK_EINFEASIBLE) {
			w->other++;
		}
	}
	rusk_thread_unregister();
	return NULL;
}

static void *check(void *arg)
{
	rusk_cluster *c = arg;
	while (!atomic_load(&stop))
		for (uint32_t m = 0; m < MACHINES; m++) {
			rusk_machine_vec v;
			rusk_machine_vec_get(c, m, &v);
			if (v.mem_free_mib > v.mem_mib)
				atomic_fetch_add(&violations, 1);
			for (uint32_t g = 0; g < RUSK_MAX_GPUS_PER_MACHINE; g++)
				if (v.gpu_free_milli[g] > 1000 ||
				    (g >= v.gpus && v.gpu_free_milli[g]))
					atomic_fetch_add(&violations, 1);
		}
	return NULL;
}

static void *topology(void *arg)
{
	rusk_cluster *c = arg;
	while (!atomic_load(&stop)) {
		rusk_machine_fail(c, 1, on_revoke, NULL);
		rusk_machine_up(c, 1);
	}
	return NULL;
}

static void test_vec_torture(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	assert_non_null(c);
	static worker w[WORKERS];
	memset(w, 0, sizeof w);
	pthread_t chk, topo;
	atomic_store(&stop, false);
	atomic_store(&violations, 0);
	atomic_store(&topo_revoked, 0);
	pthread_create(&chk, NULL, check, c);
	pthread_create(&topo, NULL, topology, c);
	for (int i = 0; i < WORKERS; i++) {
		w[i].index = i;
		w[i].c = c;
		pthread_create(&w[i].tid, NULL, work, &w[i]);
	}
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i].tid, NULL);
	atomic_store(&stop, true);
	pthread_join(chk, NULL);
	pthread_join(topo, NULL);
	assert_int_equal(atomic_load(&violations), 0);
	char err[256];
	if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
		fail_msg("with survivors held: %s", err);
	uint64_t ok = 0, shortage = 0, released = 0, revoked = 0, other = 0;
	for (int i = 0; i < WORKERS; i++) {
		for (int k = 0; k < HELD; k++)
			release_slot(&w[i], &w[i].h[k]);
		ok += w[i].ok;
		shortage += w[i].short_;
		released += w[i].released;
		revoked += w[i].revoked_release;
		other += w[i].other;
	}
	if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
		fail_msg("after releasing all: %s", err);
	for (uint32_t m = 0; m < MACHINES; m++) {
		rusk_machine_vec v;
		rusk_machine_vec_get(c, m, &v);
		assert_int_equal(v.mem_free_mib, v.mem_mib);
		for (uint32_t g = 0; g < v.gpus; g++)
			assert_int_equal(v.gpu_free_milli[g], 1000);
	}
	/* Every commit that succeeded ended once: by its release or its revocation. */
	assert_int_equal(ok, released + revoked);
	assert_int_equal(other, 0);
	assert_true(ok > 1000);
	assert_true(shortage > 0); /* memory and GPUs did run short: the checks were exercised */
	assert_true(revoked > 0);  /* and failures revoked held shares */
	print_message("vec torture: %llu commits, %llu short of memory/GPUs, %llu released after "
	              "a revocation\n",
	              (unsigned long long)ok, (unsigned long long)shortage,
	              (unsigned long long)revoked);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_vec_torture)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
