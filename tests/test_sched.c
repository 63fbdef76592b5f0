/* SPDX-License-Identifier: MIT */
/* Placement quality, sample sizes, strategies: Tarcil eq. 6 (KS test), §3.3 load-adjusted
 * R, eq. 1-5, Adaptive switching, locality/spread, and no task lost after conflicts. */
#include <math.h>
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

static rusk_cluster *make(uint32_t machines, uint32_t rus, uint32_t parts)
{
	return fx_cluster((fx_shape){.machines = machines, .rus = rus, .partitions = parts});
}

static rusk_agent *agent(rusk_cluster *c, rusk_strategy s, uint32_t sample)
{
	rusk_agent_params ap = fx_agent_params(c);
	ap.strategy = s;
	ap.sample = sample;
	return fx_agent(c, &ap, true);
}

static void test_sample_size(void **state)
{
	(void)state;
	/* Tarcil §3.3: Pr[D < 0.8] = 1e-3 needs R = 32 (31 is the exact ceiling) ... */
	uint32_t r0 = rusk_sample_size(1e-3, 0.8, 1.0, 1000);
	assert_true(r0 == 31 || r0 == 32);
	/* ... and with 60% of RUs busy (8 of the top 20 free) R = 82 (83 exact ceiling). */
	uint32_t r1 = rusk_sample_size(1e-3, 0.8, 0.4, 1000);
	assert_true(r1 == 82 || r1 == 83);
	/* capped, and growing with load */
	assert_int_equal(rusk_sample_size(1e-3, 0.8, 0.4, 32), 32);
	uint32_t prev = 0;
	for (double f = 1.0; f > 0.05; f -= 0.05) {
		uint32_t r = rusk_sample_size(0.05, 0.8, f, 4096);
		assert_true(r >= prev);
		prev = r;
	}
	assert_true(prev > rusk_sample_size(0.05, 0.8, 1.0, 4096));
	assert_int_equal(rusk_sample_size(0, 0.8, 1, 32), 32); /* nonsense eps: the cap */
	assert_int_equal(rusk_sample_size(0.05, 0.8, 0, 32), 32);
	assert_true(rusk_sample_size(0.5, 0.1, 1.0, 32) >= 1);
}

static void test_quality_equations(void **state)
{
	(void)state;
	/* eq. 1-2: V' = [84, 31] encodes as 8431..., order-preserving */
	rusk_profile p = {{31, 84}};
	assert_true(fabs(rusk_quality_target(&p) - 0.8431) < 1e-12);
	rusk_profile hi = {{99, 99, 99, 99, 99, 99, 99, 99, 99, 99}};
	assert_true(rusk_quality_target(&hi) > 0.9999);
	/* eq. 3-5 on two machines: 0 has tenants causing 50 everywhere, 1 is empty. */
	rusk_platform one[] = {{"x", 1, 1.0}};
	rusk_cluster_params cp;
	rusk_cluster_params_init(&cp);
	cp.machines = 2;
	cp.rus_per_machine = 16;
	cp.partitions = 1;
	cp.platforms = one;
	cp.n_platforms = 1;
	rusk_cluster *c;
	assert_int_equal(rusk_cluster_create(&cp, &c, NULL, 0), RUSK_OK);
	rusk_profile fifty;
	memset(&fifty, 50, sizeof fifty);
	rusk_lease l[15];
	for (uint32_t i = 0; i < 15; i++)
		assert_int_equal(rusk_ru_commit(c, 100 + i, i, &fifty, &l[i]), RUSK_OK);
	/* RU 15 on machine 0: the other 15 RUs average 50 -> U_H = 1 - 0.5050... */
	rusk_profile demanding = {{99, 99, 99, 99, 99, 99, 99, 99, 99, 99}};
	rusk_profile light = {{20}};
	double tw_d = rusk_quality_target(&demanding), tw_l = rusk_quality_target(&light);
	double u0 = 1.0 - 0.50505050505050505;
	double qd0 = rusk_quality_q(c, 15, &demanding), qd1 = rusk_quality_q(c, 16, &demanding);
	double ql0 = rusk_quality_q(c, 15, &light), ql1 = rusk_quality_q(c, 16, &light);
	assert_true(fabs(qd0 - (tw_d - u0)) < 1e-9);      /* U < T_W: T_W - U */
	assert_true(fabs(qd1 - (1 - (1 - tw_d))) < 1e-9); /* empty machine: U = 1 */
	assert_true(fabs(ql0 - (1 - (u0 - tw_l))) < 1e-9);
	assert_true(qd1 > qd0); /* a demanding task belongs on the quiet machine ... */
	assert_true(ql0 > ql1); /* ... a light one on the busy machine, keeping the quiet one */
	assert_true(rusk_quality_q(c, 99, &light) < 0);
	rusk_ru_release_many(c, 0, NULL, 0, NULL);
	for (uint32_t i = 0; i < 15; i++)
		rusk_ru_release(c, 100 + i, l[i]);
	rusk_cluster_destroy(c);
	/* heterogeneity: a half-speed platform halves Q */
	rusk_platform two[] = {{"fast", 1, 2.0}, {"slow", 1, 1.0}};
	cp.platforms = two;
	cp.n_platforms = 2;
	cp.machines = 64;
	assert_int_equal(rusk_cluster_create(&cp, &c, NULL, 0), RUSK_OK);
	double qf = -1, qs = -1;
	for (uint32_t m = 0; m < 64; m++) {
		rusk_machine_info mi;
		rusk_cluster_machine(c, m, &mi);
		double q = rusk_quality_q(c, mi.first_ru, &light);
		if (mi.platform == 0)
			qf = q;
		else
			qs = q;
	}
	assert_true(qf > 0 && qs > 0);
	assert_true(fabs(qs - qf / 2) < 1e-9);
	rusk_cluster_destroy(c);
}

/* Global rank D of every RU by (score, tie key), as the agent ranks them. */
static double *ranks(rusk_cluster *c)
{
	uint32_t n = rusk_cluster_rus(c);
	typedef struct {
		double q;
		uint64_t key;
		uint32_t ru;
	} item;
	item *it = malloc(sizeof *it * n);
	for (uint32_t r = 0; r < n; r++) {
		uint64_t x = r;
		it[r] = (item){rusk_ru_score(c, r), rusk_splitmix64(&x), r};
	}
	/* sort ascending by (q, key) */
	for (uint32_t gap = n / 2; gap > 0; gap /= 2) /* shell sort: no qsort_r needed */
		for (uint32_t i = gap; i < n; i++) {
			item t = it[i];
			uint32_t j = i;
			while (j >= gap && (it[j - gap].q > t.q ||
			                    (it[j - gap].q == t.q && it[j - gap].key > t.key))) {
				it[j] = it[j - gap];
				j -= gap;
			}
			it[j] = t;
		}
	double *d = malloc(sizeof *d * n);
	for (uint32_t i = 0; i < n; i++)
		d[it[i].ru] = (double)i / (n - 1);
	free(it);
	return d;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void test_quality_cdf_matches_x_pow_r(void **state)
{
	(void)state;
	rusk_cluster *c = make(2000, 16, 1); /* 32,000 RUs, all free: low load */
	double *D = ranks(c);
	const uint32_t decisions = 100000;
	double *got = malloc(sizeof *got * decisions);
	uint32_t Rs[3] = {8, 16, 32};
	for (int k = 0; k < 3; k++) {
		uint32_t R = Rs[k];
		rusk_agent *a = agent(c, RUSK_STRATEGY_LATENCY, R);
		rusk_task t = {.id = 1, .rus = 1, .gang = true};
		for (uint32_t i = 0; i < decisions; i++) {
			uint32_t ru;
			rusk_placement pl;
			if (rusk_agent_choose(a, &t, &ru, &pl) != RUSK_OK)
				fail_msg("choose %u", i);
			assert_int_equal(pl.sample_size, R);
			got[i] = D[ru];
		}
		qsort(got, decisions, sizeof *got, cmp_double);
		double ks = 0;
		for (uint32_t i = 0; i < decisions; i++) {
			double f = pow(got[i], R);
			double lo = fabs((double)i / decisions - f),
			       hi = fabs((double)(i + 1) / decisions - f);
			ks = fmax(ks, fmax(lo, hi));
		}
		print_message("R = %u: KS distance to x^R over %u decisions = %.4f\n", R, decisions,
		              ks);
		assert_true(ks < 0.02);
		rusk_agent_destroy(a);
	}
	free(got);
	free(D);
	rusk_cluster_destroy(c);
}

static void test_adaptive_switch(void **state)
{
	(void)state;
	rusk_cluster *c = make(400, 4, 2);
	rusk_sync_params sp = {
	        .policy = RUSK_SYNC_DIFF, .partitions = 2, .agents = 1, .gap_ns = 1000000};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	ap.strategy = RUSK_STRATEGY_ADAPTIVE;
	ap.tau_ns = 1000000; /* 1 ms */
	ap.ema_alpha = 0.5;
	rusk_agent *a;
	assert_int_equal(rusk_agent_create(c, &ap, &a, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_agent_current_strategy(a), RUSK_STRATEGY_QUALITY); /* idle */
	for (int i = 0; i < 5; i++)
		rusk_agent_observe_delay(a, 100000);
	assert_int_equal(rusk_agent_current_strategy(a), RUSK_STRATEGY_QUALITY);
	rusk_agent_observe_delay(a, 3000000); /* EMA = 1.55 ms > tau */
	assert_true(rusk_agent_delay_ema_ns(a) > 1e6);
	assert_int_equal(rusk_agent_current_strategy(a), RUSK_STRATEGY_LATENCY);
	rusk_view_sync(rusk_agent_view(a), 0);
	rusk_view_sync(rusk_agent_view(a), 1);
	rusk_task t = {.id = 7, .rus = 1, .gang = true};
	rusk_lease l;
	rusk_placement pl;
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_OK);
	assert_int_equal(pl.strategy, RUSK_STRATEGY_LATENCY);
	rusk_ru_release(c, 7, l);
	rusk_agent_observe_delay(a, 100000); /* 0.825 ms < tau: back to quality */
	assert_int_equal(rusk_agent_current_strategy(a), RUSK_STRATEGY_QUALITY);
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_OK);
	assert_int_equal(pl.strategy, RUSK_STRATEGY_QUALITY);
	rusk_ru_release(c, 7, l);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

static void check_place(rusk_cluster *c, rusk_agent *a, uint8_t place, uint32_t m, uint64_t id)
{
	rusk_task t = {.id = id, .rus = m, .gang = true, .placement = place};
	rusk_lease l[64];
	rusk_placement pl;
	int rc = rusk_agent_place(a, &t, l, &pl);
	if (rc != RUSK_OK)
		fail_msg("place %u x%u: %s", place, m, rusk_strerror(rc));
	assert_int_equal(pl.placed, m);
	rusk_machine_info first, mi;
	rusk_cluster_machine(c, rusk_cluster_ru_machine(c, l[0].ru), &first);
	for (uint32_t i = 0; i < m; i++) {
		rusk_ru_info ri;
		rusk_ru_state(c, l[i].ru, &ri);
		assert_int_equal(ri.owner, id);
		rusk_cluster_machine(c, rusk_cluster_ru_machine(c, l[i].ru), &mi);
		if (place == RUSK_PLACE_MACHINE)
			assert_int_equal(mi.id, first.id);
		if (place == RUSK_PLACE_RACK)
			assert_int_equal(mi.rack, first.rack);
		for (uint32_t j = 0; place == RUSK_PLACE_SPREAD && j < i; j++)
			assert_int_not_equal(rusk_cluster_ru_machine(c, l[j].ru),
			                     rusk_cluster_ru_machine(c, l[i].ru));
	}
	assert_int_equal(rusk_ru_release_many(c, id, l, m, NULL), RUSK_OK);
}

static void test_locality_and_spread(void **state)
{
	(void)state;
	rusk_cluster *c = make(400, 16, 2);
	for (int s = RUSK_STRATEGY_LATENCY; s <= RUSK_STRATEGY_CENTRAL; s++) {
		rusk_agent *a = agent(c, (rusk_strategy)s, 0);
		check_place(c, a, RUSK_PLACE_MACHINE, 6, 11);
		check_place(c, a, RUSK_PLACE_RACK, 30, 12);
		check_place(c, a, RUSK_PLACE_SPREAD, 8, 13);
		check_place(c, a, RUSK_PLACE_ANY, 5, 14);
		rusk_agent_destroy(a);
	}
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cluster_free_rus(c), 6400);
	rusk_cluster_destroy(c);
}

static void test_conflicts_give_task_back(void **state)
{
	(void)state;
	rusk_cluster *c = make(40, 4, 1); /* 160 RUs */
	for (int s = RUSK_STRATEGY_LATENCY; s <= RUSK_STRATEGY_RANDOM; s++) {
		rusk_agent *a = agent(c, (rusk_strategy)s, 0);
		/* Another scheduler takes every RU behind the agent's back. */
		rusk_lease all[160];
		for (uint32_t r = 0; r < 160; r++)
			assert_int_equal(rusk_ru_commit(c, 5000 + r, r, NULL, &all[r]), RUSK_OK);
		rusk_task t = {.id = 77, .rus = 2, .gang = true};
		rusk_lease l[2];
		rusk_placement pl;
		assert_int_equal(rusk_agent_place(a, &t, l, &pl), RUSK_EAGAIN);
		assert_int_equal(pl.placed, 0);
		assert_true(pl.conflicts >= 1);
		assert_true(pl.attempts >= 1 && pl.attempts <= 9); /* bounded retries */
		/* nothing held by the task: it can be re-queued as it was */
		for (uint32_t r = 0; r < 160; r++) {
			rusk_ru_info ri;
			rusk_ru_state(c, r, &ri);
			assert_int_not_equal(ri.owner, 77);
		}
		for (uint32_t r = 0; r < 160; r++)
			rusk_ru_release(c, 5000 + r, all[r]);
		/* after a sync the same task is placed */
		rusk_view_sync(rusk_agent_view(a), 0);
		assert_int_equal(rusk_agent_place(a, &t, l, &pl), RUSK_OK);
		assert_int_equal(pl.placed, 2);
		rusk_ru_release_many(c, 77, l, 2, NULL);
		/* incremental: half the RUs gone, it keeps what it wins */
		for (uint32_t r = 0; r < 160; r += 2)
			rusk_ru_commit(c, 5000 + r, r, NULL, &all[r]);
		rusk_task inc = {.id = 78, .rus = 4, .gang = false};
		rusk_lease li[4];
		int rc = rusk_agent_place(a, &inc, li, &pl);
		assert_true(rc == RUSK_OK && pl.placed >= 1 && pl.placed <= 4);
		rusk_ru_release_many(c, 78, li, pl.placed, NULL);
		for (uint32_t r = 0; r < 160; r += 2)
			rusk_ru_release(c, 5000 + r, all[r]);
		rusk_view_sync(rusk_agent_view(a), 0);
		rusk_agent_destroy(a);
	}
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cluster_free_rus(c), 160);
	rusk_cluster_destroy(c);
}

static void test_preferred_and_quality(void **state)
{
	(void)state;
	rusk_cluster *c = make(400, 16, 2);
	rusk_agent *a = agent(c, RUSK_STRATEGY_QUALITY, 0);
	uint32_t pref[2] = {123, 321};
	rusk_task t = {.id = 9, .rus = 1, .gang = true, .preferred = pref, .n_preferred = 2};
	rusk_lease l;
	rusk_placement pl;
	/* Quality-first goes to a partition holding preferred machines and weights toward
	 * them; over many decisions most land there. */
	uint32_t hits = 0;
	for (int i = 0; i < 200; i++) {
		assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_OK);
		hits += pl.preferred;
		rusk_ru_release(c, 9, l);
		rusk_view_sync(rusk_agent_view(a), 0);
		rusk_view_sync(rusk_agent_view(a), 1);
	}
	print_message("quality-first: %u of 200 on preferred machines\n", hits);
	assert_true(hits > 0);
	rusk_agent_destroy(a);
	/* central: exact, always on a preferred machine while one has a free RU */
	a = agent(c, RUSK_STRATEGY_CENTRAL, 0);
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_OK);
	assert_int_equal(pl.preferred, 1);
	rusk_ru_release(c, 9, l);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

/*
 * Latency-first and preferences: it takes a preferred machine's free RU from the freshest
 * partition holding one (ParSync §5.2 "from the least stale partition first"); with
 * latency_preferred off (ParSync's Latency-first) it samples as if there were none.
 */
static void test_latency_preferred(void **state)
{
	(void)state;
	rusk_cluster *c = make(800, 16, 4); /* 200 machines per partition; RU r on r / 16 */
	rusk_sync_params sp = {
	        .policy = RUSK_SYNC_STATE, .partitions = 4, .agents = 1, .gap_ns = 1000000000ull};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	assert_true(ap.latency_preferred); /* the default */
	rusk_agent *a = NULL;
	assert_int_equal(rusk_agent_create(c, &ap, &a, NULL, 0), RUSK_OK);
	rusk_view *v = rusk_agent_view(a);
	for (uint32_t p = 0; p < 4; p++)
		assert_int_equal(rusk_view_sync(v, p == 3 ? 0 : p == 0 ? 3 : p), RUSK_OK);
	/* Order of syncs: 3, 1, 2, 0: partition 0 is the freshest, 3 the stalest. */
	uint32_t pref[2] = {750, 50}; /* in partitions 3 and 0 */
	rusk_task t = {.id = 1, .rus = 1, .gang = true, .preferred = pref, .n_preferred = 2};
	uint32_t ru;
	rusk_placement pl;
	for (int i = 0; i < 50; i++) {
		assert_int_equal(rusk_agent_choose(a, &t, &ru, &pl), RUSK_OK);
		assert_int_equal(ru / 16, 50); /* the one in the fresher partition */
		assert_int_equal(pl.preferred, 1);
	}
	/* Machine 50 full: the stale partition's preferred machine is next. */
	rusk_lease held[16];
	for (uint32_t k = 0; k < 16; k++)
		assert_int_equal(rusk_ru_commit(c, 100 + k, 50 * 16 + k, NULL, &held[k]), RUSK_OK);
	assert_int_equal(rusk_view_sync(v, 0), RUSK_OK);
	assert_int_equal(rusk_agent_choose(a, &t, &ru, &pl), RUSK_OK);
	assert_int_equal(ru / 16, 750);
	rusk_agent_destroy(a);
	/* Off: ParSync's Latency-first; over 200 decisions from 12,800 RUs, almost never. */
	ap.latency_preferred = false;
	assert_int_equal(rusk_agent_create(c, &ap, &a, NULL, 0), RUSK_OK);
	for (uint32_t p = 0; p < 4; p++)
		assert_int_equal(rusk_view_sync(rusk_agent_view(a), p), RUSK_OK);
	uint32_t hits = 0;
	for (int i = 0; i < 200; i++) {
		assert_int_equal(rusk_agent_choose(a, &t, &ru, &pl), RUSK_OK);
		hits += pl.preferred;
	}
	assert_true(hits < 20);
	rusk_agent_destroy(a);
	for (uint32_t k = 0; k < 16; k++)
		assert_int_equal(rusk_ru_release(c, 100 + k, held[k]), RUSK_OK);
	rusk_cluster_destroy(c);
}

/*
 * The single-RU Latency-first fast path decides exactly as the general path: a task whose
 * only preferred machine does not exist takes the general path with the same values, so
 * two agents with one seed and one view state, one asked each kind, choose the same RUs.
 */
static void fast_path_matches(rusk_cluster *c)
{
	rusk_agent *fast = agent(c, RUSK_STRATEGY_LATENCY, 0);
	rusk_agent *slow = agent(c, RUSK_STRATEGY_LATENCY, 0);
	uint32_t n = rusk_cluster_rus(c), nowhere = rusk_cluster_machines(c) + 7;
	rusk_task tf = {.id = 1, .rus = 1, .gang = true};
	rusk_task ts = {.id = 2, .rus = 1, .gang = true, .preferred = &nowhere, .n_preferred = 1};
	rusk_lease *bg = calloc(n, sizeof *bg);
	bool *held = calloc(n, sizeof *held);
	rusk_rng r;
	rusk_rng_seed(&r, 3, 4);
	for (int round = 0; round < 20; round++) {
		/* A different occupancy each round (up to 95%), so ties, empty partitions and
		 * the load-raised R all occur. */
		double share = 0.05 * round;
		for (uint32_t ru = 0; ru < n; ru++)
			if ((held[ru] = rusk_rng_unit(&r) < share))
				assert_int_equal(rusk_ru_commit(c, 9, ru, NULL, &bg[ru]), RUSK_OK);
		for (uint32_t p = 0; p < 5; p++) {
			assert_int_equal(rusk_view_sync(rusk_agent_view(fast), p), RUSK_OK);
			assert_int_equal(rusk_view_sync(rusk_agent_view(slow), p), RUSK_OK);
		}
		for (int i = 0; i < 200; i++) {
			uint32_t rf = UINT32_MAX, rs = UINT32_MAX;
			rusk_placement pf, ps;
			int cf = rusk_agent_choose(fast, &tf, &rf, &pf);
			int cs = rusk_agent_choose(slow, &ts, &rs, &ps);
			assert_int_equal(cf, cs);
			assert_int_equal(rf, rs);
			assert_int_equal(pf.samples, ps.samples);
			assert_int_equal(pf.sample_size, ps.sample_size);
			assert_true(pf.quality == ps.quality);
		}
		for (uint32_t ru = 0; ru < n; ru++)
			if (held[ru])
				assert_int_equal(rusk_ru_release(c, 9, bg[ru]), RUSK_OK);
	}
	free(bg);
	free(held);
	rusk_agent_destroy(fast);
	rusk_agent_destroy(slow);
	rusk_cluster_destroy(c);
}

static void test_latency_fast_path_matches(void **state)
{
	(void)state;
	fast_path_matches(make(1000, 8, 5));
}

/*
 * The same with slot scores that almost all tie (three values: 10.000 +- 0.001): the fast
 * path's tie-break by RU key, taken on nearly every draw here and rarely with the default
 * spread of scores, must choose as the general path's.
 */
static void test_latency_fast_path_matches_ties(void **state)
{
	(void)state;
	rusk_cluster_params p;
	fx_params(&p, (fx_shape){.machines = 1000, .rus = 8, .partitions = 5});
	p.score_variance = 1e-7; /* sd 0.0003: scores of 9.999, 10.000 and 10.001 */
	rusk_cluster *c = fx_create(&p);
	fast_path_matches(c);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	rusk_cluster *c = make(400, 4, 2);
	rusk_sync_params sp = {
	        .policy = RUSK_SYNC_DIFF, .partitions = 2, .agents = 4, .gap_ns = 1000};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	rusk_agent *a = NULL;
	char err[256] = "";
	assert_int_equal(rusk_agent_create(c, &ap, &a, err, sizeof err), RUSK_EPOLICY);
	sp.agents = 1;
	rusk_agent_params_init(&ap, &sp, 0);
	ap.eps = 0;
	assert_int_equal(rusk_agent_create(c, &ap, &a, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "eps"));
	rusk_agent_params_init(&ap, &sp, 0);
	assert_int_equal(rusk_agent_create(c, &ap, &a, err, sizeof err), RUSK_OK);
	rusk_task t = {.id = 0, .rus = 1};
	rusk_lease l;
	rusk_placement pl;
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_EINVAL);
	t.id = 5;
	t.rus = 0;
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_EINVAL);
	t.rus = 1;
	t.placement = 9;
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_EINVAL);
	t.placement = RUSK_PLACE_ANY;
	/* Every profile value above 99, at every position, is refused; 0..99 are not. */
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		for (int v = 0; v < 256; v++) {
			rusk_task bad = t;
			bad.profile.c[i] = (uint8_t)v;
			if (v > 0)
				bad.profile.c[(i + 1) % RUSK_N_RESOURCES] =
				        99; /* a neighbour at the edge */
			uint32_t ru;
			int want = v > 99 ? RUSK_EINVAL : RUSK_EAGAIN;
			assert_int_equal(rusk_agent_choose(a, &bad, &ru, &pl), want);
		}
	/* nothing synced: no free RU in view, the task comes back */
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_EAGAIN);
	rusk_strategy s;
	assert_int_equal(rusk_strategy_parse("adaptive", &s), RUSK_OK);
	assert_int_equal(s, RUSK_STRATEGY_ADAPTIVE);
	assert_int_equal(rusk_strategy_parse("best", &s), RUSK_EINVAL);
	assert_string_equal(rusk_strategy_name(RUSK_STRATEGY_CENTRAL), "central");
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

/* rusk_agent_release releases as rusk_ru_release_many does, for the lock-free design and
 * for the two lock-based baselines (which take the cluster's mutex), and counts refusals. */
static void test_agent_release(void **state)
{
	(void)state;
	rusk_cluster *c = make(400, 16, 2);
	for (int design = 0; design < 3; design++) {
		rusk_agent *a =
		        agent(c, design == 2 ? RUSK_STRATEGY_CENTRAL : RUSK_STRATEGY_LATENCY, 8);
		if (design == 1) { /* the same agent, as the global-lock baseline */
			rusk_agent_destroy(a);
			rusk_sync_params sp = {.policy = RUSK_SYNC_STATE,
			                       .partitions = 2,
			                       .agents = 1,
			                       .gap_ns = 1000000000ull};
			rusk_agent_params ap;
			rusk_agent_params_init(&ap, &sp, 0);
			ap.global_lock = true;
			assert_int_equal(rusk_agent_create(c, &ap, &a, NULL, 0), RUSK_OK);
			for (uint32_t p = 0; p < 2; p++)
				assert_int_equal(rusk_view_sync(rusk_agent_view(a), p), RUSK_OK);
		}
		rusk_task t = {.id = 40 + (uint64_t)design, .rus = 3, .gang = true};
		rusk_lease l[3];
		rusk_placement pl;
		assert_int_equal(rusk_agent_place(a, &t, l, &pl), RUSK_OK);
		assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c) - 3);
		size_t rejected = 9;
		assert_int_equal(rusk_agent_release(a, t.id, l, 3, &rejected), RUSK_OK);
		assert_int_equal(rejected, 0);
		assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c));
		for (int i = 0; i < 3; i++) {
			rusk_ru_info info;
			assert_int_equal(rusk_ru_state(c, l[i].ru, &info), RUSK_OK);
			assert_int_equal(info.owner, 0);
		}
		/* a second release is refused, lease by lease, and changes nothing */
		assert_int_equal(rusk_agent_release(a, t.id, l, 3, &rejected), RUSK_EFREE);
		assert_int_equal(rejected, 3);
		assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c));
		rusk_agent_destroy(a);
	}
	rusk_lease none = {0};
	assert_int_equal(rusk_agent_release(NULL, 1, &none, 1, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	rusk_cluster_destroy(c);
}

/*
 * Issue 20: multi-RU sampling moves on when the freshest partition cannot supply m
 * distinct free RUs. A draw is the first free RU after a random position, so five free
 * RUs in a row after a long busy stretch return the first of them almost every time:
 * 32 draws gave one or two distinct RUs, the choice failed although the view held
 * hundreds of free RUs elsewhere, and a high-priority task preempted at low load.
 */
static void test_multi_ru_distinct(void **state)
{
	(void)state;
	rusk_cluster *c = make(800, 4, 4); /* 3,200 RUs, 800 per partition */
	static rusk_lease held[800];
	for (uint32_t free_p0 = 2; free_p0 <= 5; free_p0 += 3) {
		/* Partition 0 (RUs 0..799) full but for free_p0 RUs from 600 on. */
		uint32_t n_held = 0;
		for (uint32_t r = 0; r < 800; r++)
			if (r < 600 || r >= 600 + free_p0)
				assert_int_equal(
				        rusk_ru_commit(c, 1000 + r, r, NULL, &held[n_held++]),
				        RUSK_OK);
		for (int s = RUSK_STRATEGY_LATENCY; s <= RUSK_STRATEGY_QUALITY; s++) {
			rusk_agent *a = agent(c, (rusk_strategy)s, 8);
			rusk_view *v = rusk_agent_view(a);
			for (uint32_t k = 0; k < 4; k++) /* partition 0 synced last: the freshest */
				assert_int_equal(rusk_view_sync(v, 3 - k), RUSK_OK);
			for (int i = 0; i < 20; i++) {
				uint32_t rus[4];
				rusk_placement pl;
				rusk_task t = {.id = 7, .rus = 4, .gang = i % 2 == 0};
				assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_OK);
				for (uint32_t k = 0; k < 4; k++) {
					assert_true(rusk_view_is_free(v, rus[k]));
					if (k > 0)
						assert_true(rus[k] >
						            rus[k - 1]); /* sorted, distinct */
				}
			}
			/* Placed for real: four RUs, no preemption needed. */
			rusk_task t = {.id = 8, .rus = 4, .gang = true};
			rusk_lease l[4];
			rusk_placement pl;
			assert_int_equal(rusk_agent_place(a, &t, l, &pl), RUSK_OK);
			assert_int_equal(pl.placed, 4);
			assert_int_equal(rusk_ru_release_many(c, 8, l, 4, NULL), RUSK_OK);
			rusk_agent_destroy(a);
		}
		for (uint32_t k = 0; k < n_held; k++)
			assert_int_equal(rusk_ru_release(c, 1000 + held[k].ru, held[k]), RUSK_OK);
	}
	assert_int_equal(rusk_cluster_free_rus(c), 3200);
	rusk_cluster_destroy(c);
}

/*
 * Issue 20: conflicts in one unit. A placement reports commit attempts that lost RUs
 * (commits_lost, <= attempts) apart from the RUs lost (conflicts): an incremental 8-RU
 * task on a view that is wholly stale loses 8 RUs per attempt, which read as a conflict
 * share of 800% when RUs were divided by attempts.
 */
static void test_conflict_units(void **state)
{
	(void)state;
	rusk_cluster *c = make(40, 4, 1); /* 160 RUs */
	static rusk_lease all[160];
	for (int gang = 0; gang <= 1; gang++) {
		/* Its view is synced; then another scheduler takes every RU. */
		rusk_agent *a = agent(c, RUSK_STRATEGY_LATENCY, 0);
		for (uint32_t r = 0; r < 160; r++)
			assert_int_equal(rusk_ru_commit(c, 5000 + r, r, NULL, &all[r]), RUSK_OK);
		rusk_task t = {.id = 77, .rus = 8, .gang = gang};
		rusk_lease l[8];
		rusk_placement pl;
		assert_int_equal(rusk_agent_place(a, &t, l, &pl), RUSK_EAGAIN);
		assert_true(pl.attempts >= 1);
		assert_int_equal(pl.commits_lost, pl.attempts); /* every attempt lost */
		assert_true(pl.conflicts >= pl.commits_lost);
		if (!gang)
			assert_int_equal(pl.conflicts, 8 * pl.attempts); /* RUs */
		for (uint32_t r = 0; r < 160; r++)
			assert_int_equal(rusk_ru_release(c, 5000 + r, all[r]), RUSK_OK);
		rusk_agent_destroy(a);
	}
	rusk_cluster_destroy(c);
}

/* issue 19: a task no state of the cluster can hold gets RUSK_EINFEASIBLE (not RUSK_EAGAIN
 * forever), and a refused task names its field in pl.invalid and rusk_task_check's message.
 * 40 machines of 4 RUs in racks of 10, plus 10 spare slots (down, but they count). */
static void test_infeasible_and_invalid_field(void **state)
{
	(void)state;
	rusk_cluster *c = fx_cluster((fx_shape){.machines = 40,
	                                        .spare = 10,
	                                        .rus = 4,
	                                        .per_rack = 10,
	                                        .per_cell = 1,
	                                        .partitions = 2});
	rusk_agent *a = agent(c, RUSK_STRATEGY_LATENCY, 0);
	struct {
		uint8_t placement;
		uint32_t fits, too_many; /* largest feasible, smallest infeasible */
		const char *why;
	} cases[] = {
	        {RUSK_PLACE_MACHINE, 4, 5, "largest machine"},
	        {RUSK_PLACE_RACK, 40, 41, "largest rack"},
	        {RUSK_PLACE_SPREAD, 50, 51, "machines of the cluster"},
	        {RUSK_PLACE_ANY, 200, 201, "whole cluster"},
	};
	char err[256];
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		rusk_task t = {.id = 100 + k,
		               .rus = cases[k].too_many,
		               .placement = cases[k].placement,
		               .gang = true};
		rusk_lease *l = calloc(t.rus, sizeof *l);
		uint32_t *rus = calloc(t.rus, sizeof *rus);
		rusk_placement pl;
		assert_int_equal(rusk_agent_place(a, &t, l, &pl), RUSK_EINFEASIBLE);
		assert_string_equal(pl.invalid, "rus");
		assert_int_equal(pl.placed, 0);
		assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_EINFEASIBLE);
		assert_string_equal(pl.invalid, "rus");
		assert_int_equal(rusk_task_check(c, &t, err, sizeof err), RUSK_EINFEASIBLE);
		assert_non_null(strstr(err, cases[k].why));
		/* one RU less is feasible: placed, or (more than the 40 up machines hold) given
		 * back for later, when spares come up */
		t.rus = cases[k].fits;
		assert_int_equal(rusk_task_check(c, &t, err, sizeof err), RUSK_OK);
		int rc = rusk_agent_place(a, &t, l, &pl);
		assert_null(pl.invalid);
		if (t.rus <= 40 || (t.placement == RUSK_PLACE_ANY && t.rus <= 160)) {
			assert_int_equal(rc, RUSK_OK);
			assert_int_equal(rusk_agent_release(a, t.id, l, pl.placed, NULL), RUSK_OK);
			for (uint32_t i = 0; i < pl.placed; i++)
				rusk_view_mark_free(rusk_agent_view(a), l[i].ru);
		} else {
			assert_int_equal(rc, RUSK_EAGAIN);
		}
		free(l);
		free(rus);
	}
	assert_string_equal(rusk_strerror(RUSK_EINFEASIBLE),
	                    "task larger than the cluster could ever hold");
	/* EINVAL names the field too (checked before feasibility). */
	rusk_profile hot = {{0, 0, 100}};
	uint32_t pref = 3;
	struct {
		rusk_task t;
		const char *field;
	} bad[] = {
	        {{.id = 0, .rus = 1}, "id"},
	        {{.id = RUSK_TASK_ID_MAX + 1, .rus = 1}, "id"},
	        {{.id = 1, .rus = 0}, "rus"},
	        {{.id = 1, .rus = 1, .placement = 9}, "placement"},
	        {{.id = 1, .rus = 1, .n_preferred = 1}, "preferred"},
	        {{.id = 1, .rus = 1, .profile = hot}, "profile"},
	        {{.id = 1, .rus = 999, .profile = hot}, "profile"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		rusk_lease l;
		rusk_placement pl;
		assert_int_equal(rusk_agent_place(a, &bad[k].t, &l, &pl), RUSK_EINVAL);
		assert_string_equal(pl.invalid, bad[k].field);
		assert_int_equal(rusk_task_check(c, &bad[k].t, err, sizeof err), RUSK_EINVAL);
		assert_non_null(strstr(err, bad[k].field));
	}
	rusk_task ok = {.id = 1, .rus = 1, .n_preferred = 1, .preferred = &pref};
	assert_int_equal(rusk_task_check(c, &ok, err, sizeof err), RUSK_OK);
	assert_string_equal(err, "");
	rusk_placement pl;
	assert_int_equal(rusk_agent_place(a, NULL, NULL, &pl), RUSK_EINVAL);
	rusk_lease l;
	assert_int_equal(rusk_agent_place(a, NULL, &l, &pl), RUSK_EINVAL);
	assert_string_equal(pl.invalid, "task");
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sample_size),
	        cmocka_unit_test(test_quality_equations),
	        cmocka_unit_test(test_quality_cdf_matches_x_pow_r),
	        cmocka_unit_test(test_adaptive_switch),
	        cmocka_unit_test(test_locality_and_spread),
	        cmocka_unit_test(test_conflicts_give_task_back),
	        cmocka_unit_test(test_preferred_and_quality),
	        cmocka_unit_test(test_latency_preferred),
	        cmocka_unit_test(test_latency_fast_path_matches),
	        cmocka_unit_test(test_latency_fast_path_matches_ties),
	        cmocka_unit_test(test_bad_arguments),
	        cmocka_unit_test(test_agent_release),
	        cmocka_unit_test(test_multi_ru_distinct),
	        cmocka_unit_test(test_conflict_units),
	        cmocka_unit_test(test_infeasible_and_invalid_field),
	};
	rusk_thread_register();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
