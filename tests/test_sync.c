/* SPDX-License-Identifier: MIT */
/*
 * Partitioned synchronization: DiffSync/SameSync/StateSync schedules, staleness bands
 * (ParSync §5.1) under a controllable clock, view marks, and RCU snapshot reclamation
 * with readers holding snapshots across publishes.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
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

static uint64_t vnow;
static uint64_t fake_now(void *ctx)
{
	(void)ctx;
	return __atomic_load_n(&vnow, __ATOMIC_RELAXED);
}
static const rusk_clock vclock = {fake_now, NULL};

/* One machine per cell, so P can be anything up to `machines`. */
static rusk_cluster *make(uint32_t machines, uint32_t parts, const rusk_clock *clk)
{
	return fx_cluster((fx_shape){.machines = machines,
	                             .rus = 4,
	                             .per_rack = 1,
	                             .per_cell = 1,
	                             .partitions = parts,
	                             .clock = clk});
}

static rusk_sync_params sp(rusk_sync_policy pol, uint32_t P, uint32_t N, uint64_t G)
{
	rusk_sync_params s = {.policy = pol, .partitions = P, .agents = N, .gap_ns = G};
	return s;
}

static void check_rotation(uint32_t P, uint32_t N)
{
	rusk_sync_params s = sp(RUSK_SYNC_DIFF, P, N, 1000000);
	assert_int_equal(rusk_sync_check(&s, NULL, 0), RUSK_OK);
	uint32_t buf[256];
	uint32_t *seen = calloc((size_t)N * P, sizeof *seen);
	for (uint64_t k = 0; k < N; k++) { /* one round */
		uint32_t *owner = calloc(P, sizeof *owner);
		for (uint32_t a = 0; a < N; a++) {
			size_t n = rusk_sync_partitions(&s, a, k, buf, 256);
			assert_true(n >= P / N && n <= P / N + 1);
			for (size_t i = 0; i < n; i++) {
				/* no two agents refresh the same partition at one step */
				if (owner[buf[i]] != 0)
					fail_msg("P=%u N=%u step %llu: partition %u by agents %u "
					         "and %u",
					         P, N, (unsigned long long)k, buf[i],
					         owner[buf[i]] - 1, a);
				owner[buf[i]] = a + 1;
				seen[a * P + buf[i]]++;
			}
		}
		free(owner);
	}
	for (uint32_t a = 0; a < N; a++)
		for (uint32_t p = 0; p < P; p++)
			if (seen[a * P + p] != 1)
				fail_msg("P=%u N=%u: agent %u refreshed partition %u %u times per "
				         "round",
				         P, N, a, p, seen[a * P + p]);
	free(seen);
}

static void test_diffsync_rotation(void **state)
{
	(void)state;
	check_rotation(4, 4);   /* P = N */
	check_rotation(20, 20); /* ParSync's setting */
	check_rotation(8, 4);   /* P = 2N */
	check_rotation(40, 20);
	check_rotation(7, 3); /* uneven blocks */
}

static void test_same_and_state(void **state)
{
	(void)state;
	uint32_t a[64], b[64];
	rusk_sync_params s = sp(RUSK_SYNC_SAME, 8, 4, 400);
	assert_int_equal(rusk_sync_step_ns(&s), 100);
	for (uint64_t k = 0; k < 8; k++) {
		size_t n0 = rusk_sync_partitions(&s, 0, k, a, 64);
		for (uint32_t ag = 1; ag < 4; ag++) {
			size_t n = rusk_sync_partitions(&s, ag, k, b, 64);
			assert_int_equal(n, n0);
			assert_memory_equal(a, b, n * sizeof a[0]); /* everybody the same block */
		}
	}
	s = sp(RUSK_SYNC_STATE, 8, 4, 400);
	assert_int_equal(rusk_sync_step_ns(&s), 400);
	assert_int_equal(rusk_sync_partitions(&s, 3, 5, a, 64), 8);
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(a[i], i);
}

static void test_policy_errors(void **state)
{
	(void)state;
	char err[256] = "";
	rusk_sync_params s = sp(RUSK_SYNC_DIFF, 3, 4, 1000);
	assert_int_equal(rusk_sync_check(&s, err, sizeof err), RUSK_EPOLICY);
	assert_non_null(strstr(err, "P >= N"));
	assert_non_null(strstr(err, "P = 3 < N = 4"));
	s.policy = RUSK_SYNC_SAME; /* fine for SameSync */
	assert_int_equal(rusk_sync_check(&s, NULL, 0), RUSK_OK);
	s.agents = 0;
	assert_int_equal(rusk_sync_check(&s, err, sizeof err), RUSK_EINVAL);
	s = sp(RUSK_SYNC_DIFF, 4, 4, 0);
	assert_int_equal(rusk_sync_check(&s, err, sizeof err), RUSK_EINVAL);
	s = sp((rusk_sync_policy)9, 4, 4, 100);
	assert_int_equal(rusk_sync_check(&s, err, sizeof err), RUSK_EINVAL);
	rusk_sync_policy pol;
	assert_int_equal(rusk_sync_policy_parse("diff", &pol), RUSK_OK);
	assert_int_equal(pol, RUSK_SYNC_DIFF);
	assert_int_equal(rusk_sync_policy_parse("fast", &pol), RUSK_EINVAL);
	assert_string_equal(rusk_sync_policy_name(RUSK_SYNC_SAME), "same");
	/* a view refuses params that do not match its cluster */
	rusk_cluster *c = make(8, 8, &vclock);
	rusk_view *v;
	assert_int_equal(rusk_view_create(c, &v), RUSK_OK);
	s = sp(RUSK_SYNC_DIFF, 4, 4, 1000);
	assert_int_equal(rusk_view_set_policy(v, &s, 0, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "4 partitions, the cluster 8"));
	s = sp(RUSK_SYNC_DIFF, 8, 4, 1000);
	assert_int_equal(rusk_view_set_policy(v, &s, 4, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_view_tick(NULL, 0), RUSK_EINVAL);
	rusk_view_destroy(v);
	rusk_cluster_destroy(c);
}

/*
 * Runs N views under policy `pol` on a virtual clock for `rounds` rounds of G, sampling
 * every view's AS at G/200 resolution from the second round on; returns min and max.
 */
static void staleness_range(rusk_sync_policy pol, uint32_t P, uint32_t N, double *lo, double *hi)
{
	const uint64_t G = 1000000000; /* 1 s */
	rusk_cluster *c = make(P * 2, P, &vclock);
	rusk_view *v[32];
	rusk_sync_params s = sp(pol, P, N, G);
	vnow = 0;
	for (uint32_t a = 0; a < N; a++) {
		assert_int_equal(rusk_view_create(c, &v[a]), RUSK_OK);
		assert_int_equal(rusk_view_set_policy(v[a], &s, a, NULL, 0), RUSK_OK);
	}
	*lo = INFINITY;
	*hi = 0;
	for (uint64_t t = 0; t <= 4 * G; t += G / 200) {
		vnow = t;
		for (uint32_t a = 0; a < N; a++) {
			assert_true(rusk_view_tick(v[a], t) >= 0);
			if (t >= G) { /* after one round every partition was synced */
				double as = rusk_view_avg_staleness_ns(v[a], t);
				if (as < *lo)
					*lo = as;
				if (as > *hi)
					*hi = as;
			}
		}
	}
	for (uint32_t a = 0; a < N; a++)
		rusk_view_destroy(v[a]);
	rusk_cluster_destroy(c);
	*lo /= (double)G;
	*hi /= (double)G;
}

static void test_staleness_bands(void **state)
{
	(void)state;
	double lo, hi;
	/* P = 2, N = 2: ParSync's example band [G/4, 3G/4] */
	staleness_range(RUSK_SYNC_DIFF, 2, 2, &lo, &hi);
	print_message("diff P=2 N=2: AS in [%.3f, %.3f] G\n", lo, hi);
	assert_true(lo >= 0.25 - 1e-9 && hi <= 0.75 + 1e-9);
	assert_true(lo <= 0.26 && hi >= 0.74); /* and it does reach both ends */
	/* P = N = 20: [(P-1)G/2P, (P+1)G/2P] = [0.475, 0.525] G */
	staleness_range(RUSK_SYNC_DIFF, 20, 20, &lo, &hi);
	print_message("diff P=20 N=20: AS in [%.3f, %.3f] G\n", lo, hi);
	assert_true(lo >= 0.475 - 1e-9 && hi <= 0.525 + 1e-9);
	/* P = 2N = 8, N = 4: partitions refreshed in pairs, N stagger positions:
	 * [(N-1)G/2N, (N+1)G/2N] = [0.375, 0.625] G */
	staleness_range(RUSK_SYNC_DIFF, 8, 4, &lo, &hi);
	print_message("diff P=8 N=4: AS in [%.3f, %.3f] G\n", lo, hi);
	assert_true(lo >= 0.375 - 1e-9 && hi <= 0.625 + 1e-9);
	/* StateSync sweeps [0, G) */
	staleness_range(RUSK_SYNC_STATE, 8, 4, &lo, &hi);
	print_message("state P=8 N=4: AS in [%.3f, %.3f] G\n", lo, hi);
	assert_true(lo <= 0.001 && hi >= 0.99);
	/* SameSync has DiffSync's band (it staggers partitions too), only shared */
	staleness_range(RUSK_SYNC_SAME, 8, 4, &lo, &hi);
	print_message("same P=8 N=4: AS in [%.3f, %.3f] G\n", lo, hi);
	assert_true(lo >= 0.375 - 1e-9 && hi <= 0.625 + 1e-9);
}

static void test_random_offsets(void **state)
{
	(void)state;
	rusk_sync_params s = sp(RUSK_SYNC_DIFF, 20, 20, 500000000);
	s.random_offset = true;
	s.seed = 7;
	uint64_t step = rusk_sync_step_ns(&s), distinct = 0, prev = UINT64_MAX;
	for (uint32_t a = 0; a < 20; a++) {
		uint64_t o = rusk_sync_offset_ns(&s, a);
		assert_true(o < step);
		assert_int_equal(o, rusk_sync_offset_ns(&s, a)); /* seeded: repeatable */
		distinct += o != prev;
		prev = o;
	}
	assert_true(distinct > 10);
	s.random_offset = false;
	assert_int_equal(rusk_sync_offset_ns(&s, 5), 0);
}

static void test_view_marks_and_freshest(void **state)
{
	(void)state;
	rusk_cluster *c = make(16, 4, &vclock);
	rusk_view *v;
	assert_int_equal(rusk_view_create(c, &v), RUSK_OK);
	assert_false(rusk_view_is_free(v, 0)); /* nothing synced yet */
	assert_true(isinf(rusk_view_avg_staleness_ns(v, 0)));
	assert_int_equal(rusk_view_staleness_ns(v, 0, 5), UINT64_MAX);
	for (uint32_t p = 0; p < 4; p++) {
		vnow = 100 * (p + 1);
		assert_int_equal(rusk_view_sync(v, p), RUSK_OK);
	}
	assert_int_equal(rusk_view_staleness_ns(v, 0, 1000), 900);
	assert_true(fabs(rusk_view_avg_staleness_ns(v, 1000) - 750.0) < 1e-9);
	uint32_t order[4];
	assert_int_equal(rusk_view_freshest(v, order, 4), 4);
	assert_int_equal(order[0], 3);
	assert_int_equal(order[3], 0);
	/* 4 machines x 4 RUs per partition */
	assert_int_equal(rusk_view_free(v, 1), 16);
	double mean = rusk_view_mean_free_score(v, 1);
	assert_true(mean > 5 && mean < 15);
	uint32_t plat_sum = 0;
	for (uint32_t k = 0; k < rusk_cluster_platforms(c); k++)
		plat_sum += rusk_view_platform_free(v, 1, k);
	assert_int_equal(plat_sum, 16);

	/* commit RU 17 (partition 1) and mark it, as an agent does after a commit */
	rusk_lease l;
	assert_int_equal(rusk_ru_commit(c, 5, 17, NULL, &l), RUSK_OK);
	assert_true(rusk_view_is_free(v, 17)); /* the view is stale ... */
	rusk_view_mark_taken(v, 17);           /* ... until the agent marks it */
	rusk_view_mark_taken(v, 17);           /* idempotent */
	assert_false(rusk_view_is_free(v, 17));
	assert_int_equal(rusk_view_free(v, 1), 15);
	/* another task takes RU 18: the view learns it at the next sync */
	rusk_lease l2;
	assert_int_equal(rusk_ru_commit(c, 6, 18, NULL, &l2), RUSK_OK);
	assert_true(rusk_view_is_free(v, 18));
	vnow = 2000;
	assert_int_equal(rusk_view_sync(v, 1), RUSK_OK);
	assert_false(rusk_view_is_free(v, 18));
	assert_false(rusk_view_is_free(v, 17));
	assert_int_equal(rusk_view_free(v, 1), 14);
	assert_int_equal(rusk_view_staleness_ns(v, 1, 2500), 500);
	assert_int_equal(rusk_view_freshest(v, order, 1), 1);
	assert_int_equal(order[0], 1);
	rusk_view_stats st;
	rusk_view_stats_get(v, &st);
	assert_int_equal(st.syncs, 5);
	assert_int_equal(st.publishes, 5);
	assert_int_equal(st.marks, 1);
	/* reuse window: a second sync within it does not publish */
	rusk_snapshot_set_reuse_ns(c, 1000);
	vnow = 2400;
	assert_int_equal(rusk_view_sync(v, 1), RUSK_OK);
	rusk_view_stats_get(v, &st);
	assert_int_equal(st.publishes, 5);
	assert_int_equal(rusk_view_staleness_ns(v, 1, 2500), 500); /* data still from 2000 */
	assert_int_equal(rusk_view_sync(v, 9), RUSK_ERANGE);
	rusk_ru_release(c, 5, l);
	rusk_ru_release(c, 6, l2);
	rusk_view_destroy(v);
	rusk_cluster_destroy(c);
}

/* Readers hold a snapshot across many publishes and check it never changes under them. */
typedef struct reader {
	pthread_t tid;
	rusk_cluster *c;
	int stop;
	uint64_t holds, changed, publishes_seen;
} reader;

static void *read_loop(void *arg)
{
	reader *r = arg;
	rusk_thread_register();
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		rusk_read_lock();
		const rusk_snapshot *s = rusk_snapshot_get(r->c, 0);
		if (s != NULL) {
			rusk_snapshot_info a, b;
			rusk_snapshot_info_get(s, &a);
			for (int i = 0; i < 50; i++)
				sched_yield(); /* hold it while the writer publishes */
			rusk_snapshot_info_get(s, &b);
			if (a.version != b.version || rusk_snapshot_recount(s) != a.free_rus)
				r->changed++;
			const rusk_snapshot *now = rusk_snapshot_get(r->c, 0);
			rusk_snapshot_info_get(now, &b);
			r->publishes_seen += b.version != a.version;
			__atomic_fetch_add(&r->holds, 1,
			                   __ATOMIC_RELAXED); /* the writer waits on it */
		}
		rusk_read_unlock();
	}
	rusk_thread_unregister();
	return NULL;
}

static void test_snapshot_reclamation(void **state)
{
	(void)state;
	rusk_cluster *c = make(64, 2, NULL);
	assert_int_equal(rusk_snapshot_publish(c, 0), RUSK_OK);
	reader r[2] = {{.c = c}, {.c = c}};
	for (int i = 0; i < 2; i++)
		pthread_create(&r[i].tid, NULL, read_loop, &r[i]);
	rusk_rng rng;
	rusk_rng_seed(&rng, 3, 0);
	rusk_lease held[64];
	int n_held = 0;
	/* 3,000 publishes, and on a loaded machine more until both readers have held a
	 * snapshot (they may not have run yet; bounded: 200,000 publishes at most). */
	int iters = 0;
	for (int i = 0; i < 3000 || ((__atomic_load_n(&r[0].holds, __ATOMIC_RELAXED) == 0 ||
	                              __atomic_load_n(&r[1].holds, __ATOMIC_RELAXED) == 0) &&
	                             i < 200000);
	     i++, iters++) {
		/* change partition 0 (RUs 0..127), then publish it */
		if (n_held < 64 && rusk_rng_below(&rng, 2) == 0) {
			if (rusk_ru_commit(c, 1, rusk_rng_below(&rng, 128), NULL, &held[n_held]) ==
			    RUSK_OK)
				n_held++;
		} else if (n_held > 0) {
			assert_int_equal(rusk_ru_release(c, 1, held[--n_held]), RUSK_OK);
		}
		assert_int_equal(rusk_snapshot_publish(c, 0), RUSK_OK);
		if (i % 100 == 0)
			sched_yield();
	}
	for (int i = 0; i < 2; i++) {
		__atomic_store_n(&r[i].stop, 1, __ATOMIC_RELEASE);
		pthread_join(r[i].tid, NULL);
	}
	uint64_t holds = 0, seen = 0;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(r[i].changed, 0);
		holds += r[i].holds;
		seen += r[i].publishes_seen;
	}
	print_message("readers held %llu snapshots; %llu times a newer one was published "
	              "meanwhile\n",
	              (unsigned long long)holds, (unsigned long long)seen);
	assert_true(holds > 0);
	/* every replaced snapshot is freed once the readers have left */
	rusk_rcu_barrier();
	uint64_t alloc, freed;
	rusk_snapshot_counts(c, &alloc, &freed);
	assert_int_equal(alloc, (uint64_t)iters + 1);
	assert_int_equal(alloc - freed, 1); /* only the current one of partition 0 */
	while (n_held > 0)
		rusk_ru_release(c, 1, held[--n_held]);
	rusk_cluster_destroy(c); /* frees the current one; LSan checks nothing leaked */
}

static void test_snapshot_contents(void **state)
{
	(void)state;
	vnow = 42;
	rusk_cluster *c = make(8, 2, &vclock);
	rusk_lease l;
	assert_int_equal(rusk_ru_commit(c, 9, 20, NULL, &l), RUSK_OK); /* partition 1: 16..31 */
	assert_int_equal(rusk_snapshot_publish(c, 1), RUSK_OK);
	assert_int_equal(rusk_snapshot_publish(c, 2), RUSK_ERANGE);
	rusk_read_lock();
	assert_null(rusk_snapshot_get(c, 0)); /* never published */
	const rusk_snapshot *s = rusk_snapshot_get(c, 1);
	assert_non_null(s);
	rusk_snapshot_info si;
	rusk_snapshot_info_get(s, &si);
	assert_int_equal(si.partition, 1);
	assert_int_equal(si.version, 1);
	assert_int_equal(si.taken_ns, 42);
	assert_int_equal(si.rus, 16);
	assert_int_equal(si.free_rus, 15);
	assert_false(rusk_snapshot_is_free(s, 20));
	assert_true(rusk_snapshot_is_free(s, 21));
	assert_false(rusk_snapshot_is_free(s, 3)); /* not in this partition */
	uint32_t plat = 0;
	for (uint32_t k = 0; k < rusk_cluster_platforms(c); k++)
		plat += si.platform_free[k];
	assert_int_equal(plat, 15);
	/* the summary mean equals the mean of the free RUs' scores */
	double sum = 0;
	for (uint32_t ru = 16; ru < 32; ru++)
		if (ru != 20)
			sum += rusk_ru_score(c, ru);
	assert_true(fabs(si.mean_free_score - sum / 15) < 1e-6);
	rusk_read_unlock();
	rusk_ru_release(c, 9, l);
	rusk_cluster_destroy(c);
}

/* Is offset r in sorted fr[0..n)? */
static bool ref_free(const uint32_t *fr, size_t n, uint32_t r)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (fr[mid] < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && fr[lo] == r;
}

/* The pick rule written plainly over the list of free offsets: up to 16 uniform positions
 * (two per 64 random bits: rnd, then a splitmix64 chain from rnd) while at least one RU in
 * 16 is free, the first free one kept; else the k-th free offset for a uniform k. */
static uint32_t ref_pick(const uint32_t *fr, size_t n, uint32_t n_rus, uint64_t rnd)
{
	uint64_t x = rnd, u = rnd;
	if (n * 16 >= n_rus)
		for (int t = 0; t < 8; t++) {
			uint32_t a = (uint32_t)(((u >> 32) * n_rus) >> 32);
			uint32_t b = (uint32_t)(((u & 0xffffffffu) * n_rus) >> 32);
			if (ref_free(fr, n, a))
				return a;
			if (ref_free(fr, n, b))
				return b;
			u = rusk_splitmix64(&x);
		}
	return fr[((u >> 32) * n) >> 32];
}

/*
 * rusk_view_pick_free against the rule it implements (rejection sampling, then an exact
 * select through the summary counts), at densities from one free RU to half free, after
 * marks both ways and after a sync: partitions of 62.5 words (a ragged last word) and of
 * 4,375 words (many summary words and counts), so both stages and the counts' upkeep by
 * marks are exercised. Its uniformity is test_sampling's.
 */
static void test_pick_rule(void **state)
{
	(void)state;
	const uint32_t shapes[][2] = {{3000, 3}, {140000, 2}}; /* machines, partitions */
	rusk_rng rng;
	rusk_rng_seed(&rng, 2026, 11);
	for (size_t sh = 0; sh < 2; sh++) {
		rusk_cluster *c = make(shapes[sh][0], shapes[sh][1], NULL);
		rusk_view *v = NULL;
		assert_int_equal(rusk_view_create(c, &v), RUSK_OK);
		rusk_partition_info pi;
		assert_int_equal(rusk_cluster_partition(c, 1, &pi), RUSK_OK);
		uint32_t *fr = malloc(sizeof *fr * pi.rus);
		const double dens[] = {0, 1.0 / pi.rus, 3.0 / pi.rus, 0.001, 0.01, 0.5};
		for (size_t d = 0; d < sizeof dens / sizeof dens[0]; d++) {
			assert_int_equal(rusk_view_sync(v, 1), RUSK_OK); /* all free */
			size_t n = 0;
			for (uint32_t r = 0; r < pi.rus; r++) {
				bool keep = d == 1 ? r == pi.rus - 1
				                   : rusk_rng_unit(&rng) < dens[d] ||
				                             (d == 2 && r == 5);
				if (keep)
					fr[n++] = r;
				else
					rusk_view_mark_taken(v, pi.first_ru + r);
			}
			if (d >= 3) { /* take some back and free some again: both marks */
				for (size_t i = 0; i < n; i += 3)
					rusk_view_mark_taken(v, pi.first_ru + fr[i]);
				for (size_t i = 0; i < n; i += 6)
					rusk_view_mark_free(v, pi.first_ru + fr[i]);
				size_t m = 0;
				for (size_t i = 0; i < n; i++)
					if (i % 3 != 0 || i % 6 == 0)
						fr[m++] = fr[i];
				n = m;
			}
			assert_int_equal(rusk_view_free(v, 1), n);
			for (int q = 0; q < 3000; q++) {
				uint64_t rnd = rusk_rng_next(&rng);
				uint32_t ru = UINT32_MAX;
				bool ok = rusk_view_pick_free(v, 1, rnd, &ru);
				assert_int_equal(ok, n > 0);
				if (n == 0)
					continue;
				assert_int_equal(ru, pi.first_ru + ref_pick(fr, n, pi.rus, rnd));
			}
		}
		/* a sync restores the partition: every position is free, the pick is exact */
		assert_int_equal(rusk_view_sync(v, 1), RUSK_OK);
		for (int q = 0; q < 100; q++) {
			uint64_t rnd = rusk_rng_next(&rng);
			uint32_t ru;
			assert_true(rusk_view_pick_free(v, 1, rnd, &ru));
			assert_int_equal(ru,
			                 pi.first_ru + (uint32_t)(((rnd >> 32) * pi.rus) >> 32));
		}
		free(fr);
		rusk_view_destroy(v);
		rusk_cluster_destroy(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_diffsync_rotation),
	        cmocka_unit_test(test_same_and_state),
	        cmocka_unit_test(test_policy_errors),
	        cmocka_unit_test(test_staleness_bands),
	        cmocka_unit_test(test_random_offsets),
	        cmocka_unit_test(test_view_marks_and_freshest),
	        cmocka_unit_test(test_pick_rule),
	        cmocka_unit_test(test_snapshot_contents),
	        cmocka_unit_test(test_snapshot_reclamation),
	};
	rusk_thread_register(); /* the tests' own thread syncs views and publishes */
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_thread_unregister();
	return rc;
}
