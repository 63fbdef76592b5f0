/* SPDX-License-Identifier: MIT */
/*
 * Admission control (Tarcil §4): the LSH hash, bucket counts against a full recount after
 * concurrent commits, releases and topology changes, the wait decision and its mu + 2 sigma
 * bound under a controlled clock, and the priority bypass.
 */
#include <math.h>
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

static uint64_t now_ns;
static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return __atomic_load_n(&now_ns, __ATOMIC_RELAXED);
}
static const rusk_clock vclock = {fake_now, NULL};

static rusk_cluster *make(uint32_t machines, uint32_t rus, const rusk_clock *clk)
{
	return fx_cluster((fx_shape){.machines = machines,
	                             .rus = rus,
	                             .per_rack = 10,
	                             .per_cell = 2,
	                             .partitions = 2,
	                             .spare = 4,
	                             .clock = clk});
}

static void assert_counts_exact(rusk_admit *a)
{
	uint64_t got[RUSK_ADMIT_MAX_BUCKETS], want[RUSK_ADMIT_MAX_BUCKETS];
	uint32_t nb = rusk_admit_buckets(a);
	assert_int_equal(rusk_admit_counts(a, got, nb), RUSK_OK);
	assert_int_equal(rusk_admit_recount(a, want, nb), RUSK_OK);
	for (uint32_t b = 0; b < nb; b++)
		if (got[b] != want[b])
			fail_msg("bucket %u: maintained %llu, recount %llu", b,
			         (unsigned long long)got[b], (unsigned long long)want[b]);
}

static void test_hash(void **state)
{
	(void)state;
	rusk_cluster *c = make(40, 8, NULL);
	rusk_admit *a;
	assert_int_equal(rusk_admit_attach(c, NULL, &a, NULL, 0), RUSK_OK);
	assert_ptr_equal(rusk_cluster_admit(c), a);
	double zero[RUSK_N_RESOURCES] = {0};
	assert_int_equal(rusk_admit_hash(a, zero), 0);
	/* Cosine LSH: a vector and any positive multiple of it share a bucket. */
	srand(7);
	uint32_t hits[RUSK_ADMIT_MAX_BUCKETS] = {0};
	for (int t = 0; t < 2000; t++) {
		double v[RUSK_N_RESOURCES], w[RUSK_N_RESOURCES];
		for (int i = 0; i < RUSK_N_RESOURCES; i++) {
			v[i] = rand() % 100;
			w[i] = v[i] * 0.37;
		}
		uint32_t b = rusk_admit_hash(a, v);
		assert_int_equal(b, rusk_admit_hash(a, w));
		assert_true(b < 20);
		hits[b]++;
	}
	/* Vectors pointing at one resource land in different buckets than uniform ones:
	 * the hash separates which resource is contended. */
	uint32_t used = 0;
	for (int b = 0; b < 20; b++)
		used += hits[b] > 0;
	uint32_t axis_buckets = 0, seen[RUSK_ADMIT_MAX_BUCKETS] = {0};
	for (int i = 0; i < RUSK_N_RESOURCES; i++) {
		double e[RUSK_N_RESOURCES] = {0};
		e[i] = 50;
		uint32_t b = rusk_admit_hash(a, e);
		axis_buckets += seen[b]++ == 0;
	}
	assert_true(axis_buckets >= 4);
	assert_true(used >= 2);
	/* Bad arguments are refused with codes, never a crash. */
	rusk_admit_decision dd;
	rusk_task none = {.id = 1, .rus = 0};
	assert_int_equal(rusk_admit_check(a, &none, RUSK_QUALITY_SCORE, 0, &dd), RUSK_EINVAL);
	assert_int_equal(rusk_admit_check(NULL, &none, RUSK_QUALITY_SCORE, 0, &dd), RUSK_EINVAL);
	uint64_t few[3];
	assert_int_equal(rusk_admit_counts(a, few, 3), RUSK_EINVAL); /* too small for 20 */
	rusk_admit_bucket_info bi;
	assert_int_equal(rusk_admit_bucket(a, 20, &bi), RUSK_ERANGE);
	assert_int_equal(rusk_admit_attach(NULL, NULL, &a, NULL, 0), RUSK_EINVAL);
	/* Same seed, same hyperplanes. */
	rusk_admit_detach(a);
	assert_null(rusk_cluster_admit(c));
	rusk_admit_params p;
	rusk_admit_params_init(&p);
	p.seed = 9;
	rusk_admit *a1, *a2;
	assert_int_equal(rusk_admit_attach(c, &p, &a1, NULL, 0), RUSK_OK);
	char err[128];
	assert_int_equal(rusk_admit_attach(c, &p, &a2, err, sizeof err), RUSK_EBUSY);
	double v[RUSK_N_RESOURCES] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
	uint32_t b1 = rusk_admit_hash(a1, v);
	rusk_admit_detach(a1);
	assert_int_equal(rusk_admit_attach(c, &p, &a2, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_admit_hash(a2, v), b1);
	/* Bad parameters name themselves. */
	rusk_admit_detach(a2);
	p.buckets = 1;
	assert_int_equal(rusk_admit_attach(c, &p, &a2, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "buckets"));
	rusk_admit_params_init(&p);
	p.slack = 0.5;
	assert_int_equal(rusk_admit_attach(c, &p, &a2, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "slack"));
	rusk_cluster_destroy(c);
}

/* Single thread: commits with profiles move machines between buckets; counts follow. */
static void test_counts_follow(void **state)
{
	(void)state;
	rusk_cluster *c = make(40, 8, NULL);
	rusk_admit *a;
	assert_int_equal(rusk_admit_attach(c, NULL, &a, NULL, 0), RUSK_OK);
	uint64_t cnt[RUSK_ADMIT_MAX_BUCKETS];
	rusk_admit_counts(a, cnt, 20);
	assert_int_equal(cnt[0], 320); /* everything idle: bucket 0 */
	rusk_profile prof = {{90, 10, 0, 0, 0, 0, 0, 0, 0, 0}};
	rusk_lease l;
	assert_int_equal(rusk_ru_commit(c, 5, 0, &prof, &l), RUSK_OK);
	rusk_admit_counts(a, cnt, 20);
	assert_int_equal(cnt[0], 320 - 8); /* machine 0 left bucket 0 ... */
	double v[RUSK_N_RESOURCES] = {90.0 / 7, 10.0 / 7};
	uint32_t b = rusk_admit_hash(a, v);
	assert_int_not_equal(b, 0);
	assert_int_equal(cnt[b], 7); /* ... its 7 free RUs are in the vector's bucket */
	rusk_admit_bucket_info bi;
	assert_int_equal(rusk_admit_bucket(a, b, &bi), RUSK_OK);
	assert_true(fabs(bi.contention[0] - 90.0 / 7) < 0.05);
	assert_counts_exact(a);
	assert_int_equal(rusk_ru_release(c, 5, l), RUSK_OK);
	rusk_admit_counts(a, cnt, 20);
	assert_int_equal(cnt[0], 320);
	assert_int_equal(cnt[b], 0);
	/* Topology: a failed machine's RUs leave the counts; up brings them back. */
	assert_int_equal(rusk_machine_fail(c, 3, NULL, NULL), RUSK_OK);
	rusk_admit_counts(a, cnt, 20);
	assert_int_equal(cnt[0], 312);
	assert_int_equal(rusk_machine_up(c, 3), RUSK_OK);
	assert_int_equal(rusk_machine_up(c, 40), RUSK_OK); /* a spare joins */
	rusk_admit_counts(a, cnt, 20);
	assert_int_equal(cnt[0], 328);
	assert_counts_exact(a);
	rusk_cluster_destroy(c);
}

typedef struct worker {
	rusk_cluster *c;
	uint32_t seed, id;
	int ops;
	int topo; /* this worker fails and restores machines */
} worker;

static void *churn(void *arg)
{
	worker *w = arg;
	uint32_t s = w->seed;
	uint32_t n = rusk_cluster_rus(w->c);
	enum { HOLD = 64 };
	rusk_lease held[HOLD];
	int nh = 0;
	uint64_t task = w->id;
	for (int i = 0; i < w->ops; i++) {
		s = s * 1103515245u + 12345u;
		if (w->topo) {
			uint32_t m = (s >> 8) % 8;
			if ((s >> 20) & 1)
				rusk_machine_fail(w->c, m, NULL, NULL);
			else
				rusk_machine_up(w->c, m);
			continue;
		}
		if (nh < HOLD && ((s >> 16) & 3) != 0) {
			rusk_profile p;
			for (int k = 0; k < RUSK_N_RESOURCES; k++)
				p.c[k] = (uint8_t)((s >> (k % 24)) % 100 * ((s >> 28) & 1));
			if (rusk_ru_commit(w->c, task, (s >> 4) % n, &p, &held[nh]) == RUSK_OK)
				nh++;
		} else if (nh > 0) {
			int k = (int)((s >> 6) % (uint32_t)nh);
			rusk_ru_release(w->c, task, held[k]); /* may be revoked: RUSK_EOFFLINE */
			held[k] = held[--nh];
		}
	}
	rusk_ru_release_many(w->c, task, held, (size_t)nh, NULL);
	return NULL;
}

static void test_concurrent_recount(void **state)
{
	(void)state;
	rusk_cluster *c = make(40, 8, NULL);
	rusk_admit_params ap;
	rusk_admit_params_init(&ap);
	ap.buckets = 12;
	rusk_admit *a;
	assert_int_equal(rusk_admit_attach(c, &ap, &a, NULL, 0), RUSK_OK);
	enum { W = 4 };
	worker w[W];
	pthread_t t[W];
	for (int i = 0; i < W; i++) {
		w[i] = (worker){c, 17u * (uint32_t)i + 1, (uint32_t)i + 1, 60000, i == W - 1};
		if (w[i].topo)
			w[i].ops = 3000;
		pthread_create(&t[i], NULL, churn, &w[i]);
	}
	for (int i = 0; i < W; i++)
		pthread_join(t[i], NULL);
	for (uint32_t m = 0; m < 8; m++)
		rusk_machine_up(c, m);
	assert_counts_exact(a);
	uint64_t cnt[RUSK_ADMIT_MAX_BUCKETS], total = 0;
	rusk_admit_counts(a, cnt, 12);
	for (int b = 0; b < 12; b++)
		total += cnt[b];
	assert_int_equal(total, rusk_cluster_free_rus(c));
	assert_int_equal(total, 320);
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	rusk_cluster_destroy(c);
}

/*
 * Controlled clock: RUs of the only bucket free every 10 ms +- 5 ms; at 90% load a
 * task is told to wait, never longer than mu + 2 sigma of the time until its missing
 * RUs are free (computed here from the intervals the test made), and once it has waited
 * that long it is admitted.
 */
static void test_wait_bound(void **state)
{
	(void)state;
	now_ns = 1000000000ull;
	rusk_cluster *c = make(100, 1, &vclock); /* 100 RUs, one per machine */
	rusk_admit *a;
	assert_int_equal(rusk_admit_attach(c, NULL, &a, NULL, 0), RUSK_OK);
	rusk_lease l[100];
	for (uint32_t r = 0; r < 100; r++)
		assert_int_equal(rusk_ru_commit(c, r + 1, r, NULL, &l[r]), RUSK_OK);
	/* 40 frees at known intervals, each RU retaken at once (task ids 101..). */
	double sum = 0, sumsq = 0;
	int nint = 0;
	for (int k = 0; k < 41; k++) {
		uint64_t dt = (uint64_t)(5 + (k * 7) % 11) * 1000000ull; /* 5..15 ms */
		now_ns += dt;
		uint32_t r = (uint32_t)k % 100;
		assert_int_equal(rusk_ru_release(c, r + 1, l[r]), RUSK_OK);
		if (k > 0) { /* the first free has no previous one to measure from */
			sum += (double)dt;
			sumsq += ((double)dt / 1e3) * ((double)dt / 1e3);
			nint++;
		}
		assert_int_equal(rusk_ru_commit(c, 1000 + (uint64_t)k, r, NULL, &l[r]), RUSK_OK);
	}
	/* Now 90 busy, 10 free: load 0.9 >= min_load 0.8. */
	for (uint32_t r = 90; r < 100; r++)
		assert_int_equal(rusk_ru_release(c, r + 1, l[r]), RUSK_OK);
	rusk_admit_bucket_info bi;
	assert_int_equal(rusk_admit_bucket(a, 0, &bi), RUSK_OK);
	assert_int_equal(bi.free_rus, 10);
	rusk_task t = {.id = 5000, .rus = 6};
	rusk_admit_decision d;
	/* Needs slack 2 x 6 = 12 > 10 free: wait. History: 41 + 10 frees; the 10 just now
	 * add intervals of 0 after the first. Recompute mu, sigma as the kernel must. */
	sum += 0; /* the 10 releases happened at one instant: intervals 0 (first: dt 0) */
	double n = 41 + 10;
	double mean_us = sum / 1e3 / n, var = sumsq / n - mean_us * mean_us;
	double mu1 = mean_us * 1e3, cv = sqrt(var) * 1e3 / mu1;
	double k = 12 - 10;
	double bound = mu1 + 2 * mu1 * cv; /* mu + 2 sigma of the time until one is free */
	assert_true(k * mu1 < bound);      /* the estimate is worth waiting for */
	assert_int_equal(rusk_admit_check(a, &t, RUSK_QUALITY_SCORE, 0, &d), RUSK_OK);
	assert_int_equal(d.verdict, RUSK_ADMIT_WAIT);
	assert_int_equal(d.reason, RUSK_ADMIT_SCARCE);
	assert_int_equal(d.matched_free, 10);
	assert_true(fabs((double)d.bound_ns - bound) < 1e-6 * bound + 2);
	assert_true(d.wait_ns <= d.bound_ns);
	assert_true(d.wait_ns > 0);
	assert_true(fabs((double)d.estimate_ns - k * mu1) < 2);
	/* Waiting in steps as told never exceeds the bound; at the bound it is admitted. */
	uint64_t waited = 0;
	int steps = 0;
	for (;;) {
		assert_int_equal(rusk_admit_check(a, &t, RUSK_QUALITY_SCORE, waited, &d), RUSK_OK);
		if (d.verdict == RUSK_ADMIT_NOW)
			break;
		waited += d.wait_ns;
		assert_true(waited <= d.bound_ns);
		assert_true(++steps < 10);
	}
	assert_int_equal(d.reason, RUSK_ADMIT_BOUND);
	assert_true((double)waited >= bound - 2);
	/* A high-priority task bypasses admission; a small task is matched at once. */
	/* A task missing more than the bound can make up is scheduled at once. */
	rusk_task big = {.id = 5003, .rus = 40};
	assert_int_equal(rusk_admit_check(a, &big, RUSK_QUALITY_SCORE, 0, &d), RUSK_OK);
	assert_int_equal(d.verdict, RUSK_ADMIT_NOW);
	assert_int_equal(d.reason, RUSK_ADMIT_TOO_LONG);
	rusk_task hi = {.id = 5001, .rus = 8, .priority = 1};
	assert_int_equal(rusk_admit_check(a, &hi, RUSK_QUALITY_SCORE, 0, &d), RUSK_OK);
	assert_int_equal(d.verdict, RUSK_ADMIT_NOW);
	assert_int_equal(d.reason, RUSK_ADMIT_PRIORITY);
	rusk_task small = {.id = 5002, .rus = 2};
	assert_int_equal(rusk_admit_check(a, &small, RUSK_QUALITY_SCORE, 0, &d), RUSK_OK);
	assert_int_equal(d.reason, RUSK_ADMIT_MATCHED);
	/* Below min_load (50 free of 100) everything is admitted without a look. */
	for (uint32_t r = 50; r < 90; r++)
		assert_int_equal(rusk_ru_release(c, r + 1, l[r]), RUSK_OK);
	assert_int_equal(rusk_admit_check(a, &t, RUSK_QUALITY_SCORE, 0, &d), RUSK_OK);
	assert_int_equal(d.reason, RUSK_ADMIT_LOW_LOAD);
	/* After two rolls with no frees in between, the history is empty. */
	rusk_admit_roll(a);
	rusk_admit_roll(a);
	assert_int_equal(rusk_admit_bucket(a, 0, &bi), RUSK_OK);
	assert_int_equal(bi.frees, 0);
	assert_counts_exact(a);
	rusk_cluster_destroy(c);
}

/* Interference model: a task matches the bucket whose contention suits it. */
static void test_quality_match(void **state)
{
	(void)state;
	rusk_cluster *c = make(100, 4, NULL);
	rusk_admit *a;
	assert_int_equal(rusk_admit_attach(c, NULL, &a, NULL, 0), RUSK_OK);
	/* Fill 90% of the RUs; machines 0..49 with a memory-heavy tenant profile. */
	rusk_profile mem = {{0, 0, 0, 95, 0, 0, 0, 0, 0, 0}};
	rusk_lease l;
	uint64_t id = 1;
	for (uint32_t m = 0; m < 100; m++)
		for (uint32_t k = 0; k < (m < 90 ? 4u : 0u); k++)
			assert_int_equal(
			        rusk_ru_commit(c, id++, m * 4 + k, m < 50 ? &mem : NULL, &l),
			        RUSK_OK);
	/* Release one RU on each of machines 0..19 (memory-contended bucket). */
	for (uint32_t m = 0; m < 20; m++) {
		rusk_ru_info s;
		rusk_ru_state(c, m * 4, &s);
		assert_int_equal(rusk_ru_release(c, s.owner, (rusk_lease){m * 4, s.gen}), RUSK_OK);
	}
	assert_counts_exact(a);
	rusk_task t = {.id = 9000, .rus = 4};
	t.profile.c[3] = 95; /* it also loads memory: Tarcil's Q prefers the matching U */
	rusk_admit_decision d;
	assert_int_equal(rusk_admit_check(a, &t, RUSK_QUALITY_INTERFERENCE, 0, &d), RUSK_OK);
	assert_true(d.matched_buckets >= 1);
	assert_true(d.best_quality > 0 && d.best_quality <= 1.0);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_hash),
	        cmocka_unit_test(test_counts_follow),
	        cmocka_unit_test(test_concurrent_recount),
	        cmocka_unit_test(test_wait_bound),
	        cmocka_unit_test(test_quality_match),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
