/* SPDX-License-Identifier: MIT */
/*
 * Sampling fidelity: the two properties the papers' guarantees rest on.
 *
 * 1. Uniform candidates (Tarcil §3.3, eq. 6). The best of R candidates drawn uniformly from
 *    the free RUs has a rank quantile x among them with P(X <= x) = x^R. Occupancy here is
 *    clustered as a real cluster's is (whole racks and machines busy, machines half full,
 *    scattered RUs), which is where a "first free RU after a random position" rule is not
 *    uniform: a free RU right after a long busy run is drawn far more often. The test
 *    measures the Kolmogorov-Smirnov distance of the best-of-R rank from x^R over 100,000
 *    decisions at 50/80/95% load and R = 8/16/32, and requires it below 0.01.
 *
 * 2. No herding on ties (ParSync §5.2). Under StateSync every partition of a view is
 *    equally fresh; if every agent broke that tie the same way, every Latency-first draw of
 *    every agent would go to the same partition. N agents' picks over 10,240 decisions (an
 *    agent works one partition of a round, drawn per agent and round) must spread: no
 *    partition gets more than twice its fair share. The clock advances on every
 *    read, as a real one does, so the partitions of one StateSync round carry different
 *    snapshot times and still count as one round.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

#include "base/rng.h"

static uint64_t vnow;
/* A clock that moves on every read, like a real one, but deterministically. */
static uint64_t ticking_now(void *ctx)
{
	(void)ctx;
	return __atomic_add_fetch(&vnow, 1000, __ATOMIC_RELAXED);
}
static const rusk_clock tclock = {ticking_now, NULL};

/* 2 partitions of 1,250 machines x 16 RUs, racks of 20 machines. */
static rusk_cluster *make_cluster(uint32_t parts, const rusk_clock *clk)
{
	return fx_cluster((fx_shape){.machines = 2500,
	                             .rus = 16,
	                             .per_rack = 20,
	                             .per_cell = 5,
	                             .partitions = parts,
	                             .clock = clk});
}

/*
 * Marks RUs of partition pi taken in view v until `load` of them are busy, in clustered
 * shapes: first whole racks (to half the target), then whole machines (to 80% of it),
 * then the first half of random machines, then single RUs. busy[r] says which.
 */
static void occupy(rusk_view *v, const rusk_partition_info *pi, double load, rusk_rng *rng,
                   uint8_t *busy)
{
	const uint32_t n = pi->rus, per_m = 16, per_rack = 16 * 20;
	uint32_t want = (uint32_t)(load * n), have = 0;
	memset(busy, 0, n);
#define TAKE(r)                                                                                    \
	do {                                                                                       \
		if (!busy[r] && have < want) {                                                     \
			busy[r] = 1;                                                               \
			have++;                                                                    \
			rusk_view_mark_taken(v, pi->first_ru + (r));                               \
		}                                                                                  \
	} while (0)
	while (have < want / 2) {
		uint32_t rack = rusk_rng_below(rng, n / per_rack);
		for (uint32_t r = rack * per_rack; r < (rack + 1) * per_rack; r++)
			TAKE(r);
	}
	while (have < want * 8 / 10) {
		uint32_t m = rusk_rng_below(rng, n / per_m);
		for (uint32_t r = m * per_m; r < (m + 1) * per_m; r++)
			TAKE(r);
	}
	while (have < want * 9 / 10) {
		uint32_t m = rusk_rng_below(rng, n / per_m);
		for (uint32_t r = m * per_m; r < m * per_m + per_m / 2; r++)
			TAKE(r);
	}
	while (have < want) {
		uint32_t r = rusk_rng_below(rng, n);
		TAKE(r);
	}
#undef TAKE
}

/* K-S distance of the best-of-R rank over `trials` decisions from the discrete x^R law. */
static double ks_best_of_r(rusk_view *v, uint32_t p, const rusk_partition_info *pi,
                           const uint32_t *rank, uint32_t n_free, uint32_t R, uint32_t trials,
                           rusk_rng *rng, uint32_t *hist)
{
	memset(hist, 0, sizeof *hist * n_free);
	for (uint32_t t = 0; t < trials; t++) {
		uint32_t best = 0;
		for (uint32_t k = 0; k < R; k++) {
			uint32_t ru = UINT32_MAX;
			assert_true(rusk_view_pick_free(v, p, rusk_rng_next(rng), &ru));
			uint32_t r = ru - pi->first_ru;
			assert_true(r < pi->rus);
			assert_true(rank[r] != UINT32_MAX); /* never a busy RU */
			if (rank[r] > best)
				best = rank[r];
		}
		hist[best]++;
	}
	/* Max-of-R of uniform ranks 0..n-1: P(best <= k) = ((k + 1) / n)^R. */
	double d = 0, cum = 0;
	for (uint32_t k = 0; k < n_free; k++) {
		double lo = pow((double)k / n_free, R), hi = pow((double)(k + 1) / n_free, R);
		double before = cum / trials;
		cum += hist[k];
		double after = cum / trials;
		d = fmax(d, fmax(fabs(before - lo), fabs(after - hi)));
	}
	return d;
}

static void test_uniform_best_of_r(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster(2, NULL);
	rusk_view *v = NULL;
	assert_int_equal(rusk_view_create(c, &v), RUSK_OK);
	const uint32_t p = 1; /* the second partition: RUs and bits start past 0 */
	rusk_partition_info pi;
	assert_int_equal(rusk_cluster_partition(c, p, &pi), RUSK_OK);
	uint8_t *busy = malloc(pi.rus);
	uint32_t *rank = malloc(sizeof *rank * pi.rus), *hist = malloc(sizeof *hist * pi.rus);
	uint32_t *perm = malloc(sizeof *perm * pi.rus);
	rusk_rng rng;
	rusk_rng_seed(&rng, 2026, 15);
	const double loads[] = {0.50, 0.80, 0.95};
	const uint32_t Rs[] = {8, 16, 32};
	double worst = 0;
	for (size_t li = 0; li < 3; li++) {
		assert_int_equal(rusk_view_sync(v, p), RUSK_OK); /* all free again */
		occupy(v, &pi, loads[li], &rng, busy);
		/* Each free RU a distinct rank, in random order (a quality independent of
		 * where the RU lies, as Tarcil's analysis assumes). */
		uint32_t n_free = 0;
		for (uint32_t r = 0; r < pi.rus; r++)
			if (!busy[r])
				perm[n_free++] = r;
		assert_int_equal(rusk_view_free(v, p), n_free);
		for (uint32_t i = n_free; i > 1; i--) {
			uint32_t j = rusk_rng_below(&rng, i), t = perm[i - 1];
			perm[i - 1] = perm[j];
			perm[j] = t;
		}
		for (uint32_t r = 0; r < pi.rus; r++)
			rank[r] = UINT32_MAX;
		for (uint32_t i = 0; i < n_free; i++)
			rank[perm[i]] = i;
		for (size_t ri = 0; ri < 3; ri++) {
			double d =
			        ks_best_of_r(v, p, &pi, rank, n_free, Rs[ri], 100000, &rng, hist);
			printf("load %.0f%% (%u free RUs), R = %u: K-S distance from x^R %.4f\n",
			       loads[li] * 100, n_free, Rs[ri], d);
			worst = fmax(worst, d);
		}
	}
	printf("worst K-S distance %.4f (bound 0.01)\n", worst);
	assert_true(worst < 0.01);
	free(busy);
	free(rank);
	free(hist);
	free(perm);
	rusk_view_destroy(v);
	rusk_cluster_destroy(c);
}

/* Order of free RUs by Latency-first's value: slot score, then the agent's tie-break (a
 * fixed splitmix64 hash of the RU index), which makes the order strict. */
static const rusk_cluster *g_c;
static int by_value(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	double sa = rusk_ru_score(g_c, a), sb = rusk_ru_score(g_c, b);
	if (sa != sb)
		return sa < sb ? -1 : 1;
	uint64_t ka = a, kb = b;
	ka = rusk_splitmix64(&ka);
	kb = rusk_splitmix64(&kb);
	return ka < kb ? -1 : ka > kb;
}

/*
 * The same law through the whole decision: a Latency-first agent with R fixed, one RU
 * per task, on a one-partition view occupied as above; the rank of the RU it chooses
 * among the free RUs by its own value order must follow x^R.
 */
static void test_agent_best_of_r(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster(1, NULL);
	g_c = c;
	rusk_partition_info pi;
	assert_int_equal(rusk_cluster_partition(c, 0, &pi), RUSK_OK);
	uint8_t *busy = malloc(pi.rus);
	uint32_t *rank = malloc(sizeof *rank * pi.rus), *hist = malloc(sizeof *hist * pi.rus);
	uint32_t *fr = malloc(sizeof *fr * pi.rus);
	rusk_sync_params sp;
	rusk_sync_params_init(&sp, 1, 1);
	rusk_rng rng;
	rusk_rng_seed(&rng, 2026, 16);
	const double loads[] = {0.50, 0.95};
	const uint32_t Rs[] = {8, 32};
	double worst = 0;
	for (size_t li = 0; li < 2; li++)
		for (size_t ri = 0; ri < 2; ri++) {
			rusk_agent_params ap;
			rusk_agent_params_init(&ap, &sp, 0);
			ap.sample = Rs[ri];
			ap.seed = 100 + li * 2 + ri;
			rusk_agent *a;
			assert_int_equal(rusk_agent_create(c, &ap, &a, NULL, 0), RUSK_OK);
			rusk_view *v = rusk_agent_view(a);
			assert_int_equal(rusk_view_sync(v, 0), RUSK_OK);
			occupy(v, &pi, loads[li], &rng, busy);
			uint32_t n_free = 0;
			for (uint32_t r = 0; r < pi.rus; r++) {
				rank[r] = UINT32_MAX;
				if (!busy[r])
					fr[n_free++] = pi.first_ru + r;
			}
			qsort(fr, n_free, sizeof *fr, by_value);
			for (uint32_t i = 0; i < n_free; i++)
				rank[fr[i] - pi.first_ru] = i;
			memset(hist, 0, sizeof *hist * n_free);
			const uint32_t trials = 100000;
			rusk_task t = {.id = 1, .rus = 1};
			for (uint32_t k = 0; k < trials; k++) {
				uint32_t ru;
				rusk_placement pl;
				assert_int_equal(rusk_agent_choose(a, &t, &ru, &pl), RUSK_OK);
				assert_true(rank[ru - pi.first_ru] != UINT32_MAX);
				hist[rank[ru - pi.first_ru]]++;
			}
			double d = 0, cum = 0;
			for (uint32_t k = 0; k < n_free; k++) {
				double lo = pow((double)k / n_free, Rs[ri]);
				double hi = pow((double)(k + 1) / n_free, Rs[ri]);
				double before = cum / trials;
				cum += hist[k];
				d = fmax(d, fmax(fabs(before - lo), fabs(cum / trials - hi)));
			}
			printf("agent, load %.0f%%, R = %u: K-S distance from x^R %.4f\n",
			       loads[li] * 100, Rs[ri], d);
			worst = fmax(worst, d);
			rusk_agent_destroy(a);
		}
	assert_true(worst < 0.01);
	free(busy);
	free(rank);
	free(hist);
	free(fr);
	rusk_cluster_destroy(c);
}

/* A pick is always a free RU of the partition, at every density down to one free RU,
 * after marks both ways; false only when none is free. */
static void test_pick_only_free(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster(2, NULL);
	rusk_view *v = NULL;
	assert_int_equal(rusk_view_create(c, &v), RUSK_OK);
	rusk_partition_info pi;
	assert_int_equal(rusk_cluster_partition(c, 0, &pi), RUSK_OK);
	uint8_t *busy = malloc(pi.rus);
	uint32_t *seen = calloc(pi.rus, sizeof *seen);
	rusk_rng rng;
	rusk_rng_seed(&rng, 7, 15);
	const double loads[] = {0, 0.3, 0.9, 0.999, 1.0};
	for (size_t li = 0; li < 5; li++) {
		assert_int_equal(rusk_view_sync(v, 0), RUSK_OK);
		occupy(v, &pi, loads[li], &rng, busy);
		/* give back a few and take a few more: the counts must follow both marks */
		for (uint32_t r = 0; r < pi.rus; r += 97)
			if (busy[r] && loads[li] < 1.0) {
				busy[r] = 0;
				rusk_view_mark_free(v, pi.first_ru + r);
			}
		uint32_t n_free = 0;
		for (uint32_t r = 0; r < pi.rus; r++)
			n_free += !busy[r];
		assert_int_equal(rusk_view_free(v, 0), n_free);
		memset(seen, 0, sizeof *seen * pi.rus);
		uint32_t draws = n_free ? 40 * n_free : 100;
		if (draws > 400000)
			draws = 400000;
		for (uint32_t k = 0; k < draws; k++) {
			uint32_t ru = UINT32_MAX;
			bool ok = rusk_view_pick_free(v, 0, rusk_rng_next(&rng), &ru);
			assert_int_equal(ok, n_free > 0);
			if (!ok)
				continue;
			assert_true(ru >= pi.first_ru && ru < pi.first_ru + pi.rus);
			assert_false(busy[ru - pi.first_ru]);
			seen[ru - pi.first_ru]++;
		}
		/* with 40 draws per free RU on average, a uniform sampler misses none */
		if (n_free > 0 && n_free <= 10000)
			for (uint32_t r = 0; r < pi.rus; r++)
				assert_true(busy[r] || seen[r] > 0);
	}
	free(busy);
	free(seen);
	rusk_view_destroy(v);
	rusk_cluster_destroy(c);
}

static void test_statesync_no_herding(void **state)
{
	(void)state;
	enum { N = 8, P = 10, ROUNDS = 40, PER = 32 }; /* 8 x 40 x 32 = 10,240 decisions */
	rusk_cluster *c = make_cluster(P, &tclock);
	rusk_sync_params sp;
	rusk_sync_params_init(&sp, P, N);
	sp.policy = RUSK_SYNC_STATE;
	rusk_agent *ag[N];
	for (uint32_t i = 0; i < N; i++) {
		rusk_agent_params ap;
		rusk_agent_params_init(&ap, &sp, i);
		ap.seed = 42;
		char err[256];
		if (rusk_agent_create(c, &ap, &ag[i], err, sizeof err) != RUSK_OK)
			fail_msg("%s", err);
	}
	uint32_t per_part[P] = {0};
	rusk_partition_info pinfo[P];
	for (uint32_t p = 0; p < P; p++)
		assert_int_equal(rusk_cluster_partition(c, p, &pinfo[p]), RUSK_OK);
	rusk_task t = {.id = 1, .rus = 1};
	for (uint32_t round = 0; round < ROUNDS; round++) {
		uint64_t now = (round + 1) * sp.gap_ns;
		__atomic_store_n(&vnow, now, __ATOMIC_RELAXED);
		for (uint32_t i = 0; i < N; i++)
			assert_int_equal(rusk_view_tick(rusk_agent_view(ag[i]), now), P);
		for (uint32_t i = 0; i < N; i++)
			for (uint32_t k = 0; k < PER; k++) {
				uint32_t ru;
				rusk_placement pl;
				assert_int_equal(rusk_agent_choose(ag[i], &t, &ru, &pl), RUSK_OK);
				uint32_t q = 0;
				while (q + 1 < P && ru >= pinfo[q + 1].first_ru)
					q++;
				per_part[q]++;
			}
	}
	uint32_t most = 0;
	for (uint32_t p = 0; p < P; p++) {
		printf("partition %u: %u of %u picks\n", p, per_part[p], N * ROUNDS * PER);
		most = per_part[p] > most ? per_part[p] : most;
	}
	/* fair share N*ROUNDS*PER/P = 1,024; herding puts all of them in one partition */
	assert_true(most <= 2 * N * ROUNDS * PER / P);
	for (uint32_t i = 0; i < N; i++)
		rusk_agent_destroy(ag[i]);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_uniform_best_of_r),
	        cmocka_unit_test(test_agent_best_of_r),
	        cmocka_unit_test(test_pick_only_free),
	        cmocka_unit_test(test_statesync_no_herding),
	};
	rusk_thread_register();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_thread_unregister();
	return rc;
}
