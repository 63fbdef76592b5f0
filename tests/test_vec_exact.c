/* SPDX-License-Identifier: MIT */
/*
 * A vector decision's exact sets (choose.c, choose_vec_exact): where few machines can hold
 * a vector task, the draws after the probe are made exactly, from the list of the
 * partition's machines that a draw would keep, instead of by rejection. The two must decide
 * alike in distribution: which machine wins, how often nothing is kept (RUSK_EAGAIN) and
 * how many draws a decision is charged. One partition where about one free RU in eight
 * lies on a machine that can hold the task (most machines have no GPU, some have theirs
 * taken, some too little memory, some too few free RUs); the same decision is made many
 * times by an agent with the exact sets and by one that draws every draw (the baseline),
 * and the outcomes are compared by a two-sample chi-square and the charged draws by their
 * means. Both the slot-score and the packing models. An agent lists a partition before
 * any draw of it when its last look found few machines that fit (choose.c, vhint_exact):
 * the default agent here does so after its first decision. The listing must draw alike
 * wherever it runs, so it is also forced before every draw (vec_exact_first) on a
 * partition where most machines fit, where the hint would not send it.
 */
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
#include "kernel/decision.h"

static const rusk_platform plats[] = {{"A", 1.0, 1.0}};

enum { N_MACH = 48, RUS = 16, DECISIONS = 30000 };

/* Outcomes of DECISIONS decisions: wins per machine (index N_MACH: RUSK_EAGAIN), the
 * charged draws' sum and sum of squares, and the exact sets the agent made (first: of
 * those, made before any draw of the partition). */
typedef struct outcome {
	uint32_t wins[N_MACH + 1];
	double draws, draws2;
	uint64_t sets, first;
} outcome;

/* How an agent draws: as it would (probe, then exact sets; listed first on the hint),
 * every draw made (the baseline), or listed before every draw. */
typedef enum { MODE_AUTO, MODE_DRAW, MODE_FIRST } mode;

/* The cluster: machines m % 4 == 1 have 4 GPUs; of those, m % 8 == 5 have all four taken by
 * a holder (live: no room), machine 9 has all its RUs but one held (too few for 2) and
 * machine 17 has 1 GiB (static: too little memory). The rest have no GPU. The others hold
 * m % 5 * 2 + 1 of their RUs, so free counts differ (the weights). Machines 1, 25, 33 and 41
 * can hold the task: 50 of the 528 free RUs. */
static bool gpu(uint32_t m)
{
	return m % 4 == 1;
}

static bool feasible(uint32_t m)
{
	return gpu(m) && m % 8 != 5 && m != 9 && m != 17;
}

/* The tasks: 2 RUs, 4 GiB, half a GPU (few machines fit), or no GPU (all but 9 and 17). */
static rusk_task task(bool gpu_task)
{
	rusk_task t = {.id = 1, .rus = 2, .gang = true, .placement = RUSK_PLACE_MACHINE};
	t.vec = (rusk_vec_demand){.mem_mib = 4096, .gpus = gpu_task, .gpu_milli = 500};
	if (!gpu_task)
		t.vec.gpu_milli = 0;
	return t;
}

static bool fits(uint32_t m, bool gpu_task)
{
	return gpu_task ? feasible(m) : m != 9 && m != 17;
}

static rusk_cluster *make_cluster(void)
{
	rusk_machine_spec specs[N_MACH];
	static uint16_t scores[N_MACH][RUS];
	for (uint32_t m = 0; m < N_MACH; m++) {
		specs[m] = (rusk_machine_spec){
		        RUS, m == 17 ? 1024 : 65536, gpu(m) ? 4 : 0, 0, scores[m], false};
		for (uint32_t k = 0; k < RUS; k++) /* distinct */
			scores[m][k] = (uint16_t)(1 + (m * RUS + k) * 7919u % 4001u);
	}
	rusk_cluster *c = fx_machines(
	        specs, N_MACH, (fx_shape){.per_rack = 4, .per_cell = 1, .partitions = 1}, plats, 1);
	rusk_lease l[RUS];
	for (uint32_t m = 0; m < N_MACH; m++) {
		uint32_t first = m * RUS, hold = m == 9 ? RUS - 1 : m % 5 * 2 + 1;
		for (uint32_t k = 0; k < hold; k++)
			assert_int_equal(rusk_ru_commit(c, 100 + first + k, first + k, NULL, l),
			                 RUSK_OK);
		if (gpu(m) && m % 8 == 5) { /* all GPUs taken, with the last RU */
			uint32_t ru = first + RUS - 1;
			rusk_vec_demand all = {0, 4, 1000, 0};
			assert_int_equal(
			        rusk_ru_commit_vec(c, 9000 + m, &ru, 1, &all, NULL, l, NULL),
			        RUSK_OK);
		}
	}
	return c;
}

static void decide(rusk_cluster *c, rusk_quality_model q, uint32_t R, mode md, bool gpu_task,
                   uint64_t seed, outcome *o)
{
	memset(o, 0, sizeof *o);
	rusk_agent_params ap = fx_agent_params(c);
	ap.sample = R;
	ap.seed = seed;
	ap.quality = q;
	rusk_agent *a = fx_agent(c, &ap, true);
	a->vec_draw_only = md == MODE_DRAW;
	a->vec_exact_first = md == MODE_FIRST;
	rusk_task t = task(gpu_task);
	uint32_t rus[2];
	for (uint32_t i = 0; i < DECISIONS; i++) {
		rusk_placement pl;
		int rc = rusk_agent_choose(a, &t, rus, &pl);
		if (rc == RUSK_EAGAIN) {
			o->wins[N_MACH]++;
			/* the memo of failed demands would refuse the next ones undrawn */
			rusk_view_sync(rusk_agent_view(a), 0);
		} else {
			assert_int_equal(rc, RUSK_OK);
			uint32_t m = rusk_cluster_ru_machine(c, rus[0]);
			assert_int_equal(rusk_cluster_ru_machine(c, rus[1]), m);
			o->wins[m]++;
		}
		o->draws += pl.samples;
		o->draws2 += (double)pl.samples * pl.samples;
	}
	o->sets = a->vset_made;
	o->first = a->vset_first;
	rusk_agent_destroy(a);
}

/* Exact sets against every draw made, R candidates wanted: the same distribution of winners
 * (two-sample chi-square over the outcomes seen, bound above the 1e-6 tail) and of charged
 * draws (means within 5 standard errors); only feasible machines win. R = 3: a decision
 * often keeps 3 before its cap of 4R + 16 draws; R = 8: never (4 machines fit). */
static void compare(rusk_quality_model q, uint32_t R, mode md, bool gpu_task)
{
	rusk_cluster *c = make_cluster();
	outcome ex, dr;
	decide(c, q, R, md, gpu_task, 11, &ex);
	decide(c, q, R, MODE_DRAW, gpu_task, 12, &dr);
	assert_true(ex.sets > DECISIONS / 2);  /* the exact path ran */
	assert_true(ex.first > DECISIONS / 2); /* listed before any draw */
	assert_int_equal(dr.sets, 0);
	double chi2 = 0;
	uint32_t cats = 0;
	for (uint32_t m = 0; m <= N_MACH; m++) {
		if (m < N_MACH && !fits(m, gpu_task)) {
			assert_int_equal(ex.wins[m], 0);
			assert_int_equal(dr.wins[m], 0);
			continue;
		}
		double x = ex.wins[m], y = dr.wins[m];
		if (x + y == 0)
			continue;
		chi2 += (x - y) * (x - y) / (x + y);
		cats++;
	}
	double bound = (cats - 1) + 7.0 * sqrt(2.0 * (cats - 1));
	double me = ex.draws / DECISIONS, mdr = dr.draws / DECISIONS;
	double ve = ex.draws2 / DECISIONS - me * me, vd = dr.draws2 / DECISIONS - mdr * mdr;
	double se = sqrt((ve + vd) / DECISIONS);
	print_message(
	        "quality %d, R = %u, %s: chi2 %.1f over %u outcomes (bound %.1f); draws %.2f "
	        "exact, %.2f drawn (se %.3f); EAGAIN %u and %u; %llu exact sets (%llu first)\n",
	        (int)q, R, md == MODE_FIRST ? "listed first" : "as it would", chi2, cats, bound, me,
	        mdr, se, ex.wins[N_MACH], dr.wins[N_MACH], (unsigned long long)ex.sets,
	        (unsigned long long)ex.first);
	assert_true(cats >= 3);
	assert_true(chi2 < bound);
	assert_true(fabs(me - mdr) < 5 * se + 1e-9);
	rusk_cluster_destroy(c);
}

static void test_exact_like_draws_score(void **state)
{
	(void)state;
	compare(RUSK_QUALITY_SCORE, 3, MODE_AUTO, true);
	compare(RUSK_QUALITY_SCORE, 8, MODE_AUTO, true);
}

static void test_exact_like_draws_packing(void **state)
{
	(void)state;
	compare(RUSK_QUALITY_PACKING, 3, MODE_AUTO, true);
}

/* Listed before every draw, where few machines fit and where most do (the CPU-only task:
 * 46 of 48 machines, 516 of 528 free RUs): the same distribution as drawing. */
static void test_exact_first_like_draws(void **state)
{
	(void)state;
	compare(RUSK_QUALITY_SCORE, 3, MODE_FIRST, true);
	compare(RUSK_QUALITY_SCORE, 8, MODE_FIRST, false);
	compare(RUSK_QUALITY_PACKING, 8, MODE_FIRST, false);
}

/* A partition where no machine can hold the task: the exact set is empty, nothing is
 * kept, and the decision is charged the whole cap of draws, as the draws would be. */
static void test_exact_none_fits(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster();
	rusk_agent_params ap = fx_agent_params(c);
	ap.sample = 8;
	rusk_agent *a = fx_agent(c, &ap, true);
	rusk_task t = {.id = 1, .rus = 2, .gang = true, .placement = RUSK_PLACE_MACHINE};
	t.vec = (rusk_vec_demand){.mem_mib = 4096, .gpus = 4, .gpu_milli = 1000};
	uint32_t rus[2];
	rusk_placement pl;
	/* the feasible machines have 4 idle GPUs: take one GPU of each */
	rusk_lease l;
	rusk_vec_demand one = {0, 1, 1000, 0};
	for (uint32_t m = 0; m < N_MACH; m++) {
		if (!feasible(m))
			continue;
		uint32_t ru = m * RUS + RUS - 2;
		assert_int_equal(rusk_ru_commit_vec(c, 7000 + m, &ru, 1, &one, NULL, &l, NULL),
		                 RUSK_OK);
	}
	rusk_view_sync(rusk_agent_view(a), 0);
	assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_EAGAIN);
	assert_int_equal(pl.samples, 4 * 8 + 16);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

/* A partition with no free RU in the view, behind one where nothing fits, in Latency-first's
 * order (it keeps partitions without free RUs in its order): drawing charges the first the
 * whole cap and the empty one nothing, and so must an agent listing first, by its hint or
 * forced. Before, a listing of the empty partition charged its cap too (the review of
 * the listing hint: 96 draws a decision against 48). */
static void test_exact_empty_partition(void **state)
{
	(void)state;
	enum { N = 8 };
	rusk_machine_spec specs[N];
	for (uint32_t m = 0; m < N; m++) /* machine 0: memory; the others: 1 GiB, too little */
		specs[m] = (rusk_machine_spec){RUS, m == 0 ? 65536 : 1024, 4, 0, NULL, false};
	rusk_cluster *c = fx_machines(
	        specs, N, (fx_shape){.per_rack = 4, .per_cell = 1, .partitions = 2}, plats, 1);
	rusk_lease l;
	for (uint32_t ru = 0; ru < RUS - 1; ru++) /* machine 0: one RU free, too few for 2 */
		assert_int_equal(rusk_ru_commit(c, 50 + ru, ru, NULL, &l), RUSK_OK);
	rusk_agent *a[3];
	for (int k = 0; k < 3; k++) {
		rusk_agent_params ap = fx_agent_params(c);
		ap.sample = 8;
		ap.seed = 5;
		a[k] = fx_agent(c, &ap, true);
	}
	a[1]->vec_draw_only = true;
	a[2]->vec_exact_first = true;
	rusk_task t = task(true);
	uint32_t rus[2];
	rusk_placement pl;
	for (int k = 0; k < 3; k++) /* the hints learn partition 1 before it empties */
		assert_int_equal(rusk_agent_choose(a[k], &t, rus, &pl), RUSK_EAGAIN);
	for (uint32_t ru = 4 * RUS; ru < N * RUS; ru++)
		assert_int_equal(rusk_ru_commit(c, 100 + ru, ru, NULL, &l), RUSK_OK);
	uint64_t charged[3] = {0, 0, 0};
	for (int i = 0; i < 100; i++)
		for (int k = 0; k < 3; k++) {
			for (uint32_t p = 0; p < 2; p++) /* the memo of failed demands off */
				assert_int_equal(rusk_view_sync(rusk_agent_view(a[k]), p), RUSK_OK);
			assert_int_equal(rusk_agent_choose(a[k], &t, rus, &pl), RUSK_EAGAIN);
			charged[k] += pl.samples;
		}
	print_message("charged draws: %llu as it would, %llu drawn, %llu listed first\n",
	              (unsigned long long)charged[0], (unsigned long long)charged[1],
	              (unsigned long long)charged[2]);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(charged[k], 100 * (4 * 8 + 16));
		rusk_agent_destroy(a[k]);
	}
	rusk_cluster_destroy(c);
}

int main(void)
{
	rusk_thread_register();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_exact_like_draws_score),
	        cmocka_unit_test(test_exact_like_draws_packing),
	        cmocka_unit_test(test_exact_first_like_draws),
	        cmocka_unit_test(test_exact_none_fits),
	        cmocka_unit_test(test_exact_empty_partition),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_thread_unregister();
	return rc;
}
