/* SPDX-License-Identifier: MIT */
/*
 * The fragmentation-aware quality model (RUSK_QUALITY_FGD, core/kernel/quality.c): the
 * expected unusable GPU capacity F of a machine state against a mix of GPU task types, the
 * rise Delta F of a placement, the mix learned online, and an agent choosing the machine of
 * least Delta (sampling, and the central baseline's full scan), each on cases computed by
 * hand in the comments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <rusk/rusk.h>

#include "fixture.h"
#include "kernel/decision.h"
#include "kernel/vec_impl.h"

enum { CPU = 0, V100 = 1, T4 = 2 };

static const rusk_platform plats[] = {{"cpu", 1.0, 1.0}, {"V100", 1.0, 1.0}, {"T4", 1.0, 1.0}};

/* m0: 8 RUs, no GPU; m1, m2: 16 RUs, 128 GiB, 4 V100; m3: 16 RUs, 256 GiB, 8 T4. */
static const rusk_machine_spec specs[] = {
        {8, 65536, 0, CPU, NULL, false},
        {16, 131072, 4, V100, NULL, false},
        {16, 131072, 4, V100, NULL, false},
        {16, 262144, 8, T4, NULL, false},
};

static rusk_cluster *make(void)
{
	return fx_machines(specs, 4, (fx_shape){.per_rack = 2, .per_cell = 1, .partitions = 2},
	                   plats, 3);
}

static uint32_t first_ru(const rusk_cluster *c, uint32_t m)
{
	rusk_machine_info mi;
	assert_int_equal(rusk_cluster_machine(c, m, &mi), RUSK_OK);
	return mi.first_ru;
}

static rusk_task gpu_task(uint64_t id, uint32_t rus, uint16_t gpus, uint16_t milli)
{
	rusk_task t = {.id = id, .rus = rus, .gang = true, .placement = RUSK_PLACE_MACHINE};
	t.vec = (rusk_vec_demand){.gpus = gpus, .gpu_milli = milli};
	return t;
}

/* S: one RU and a 500 share, 3 arrivals; W4: one RU and 4 whole GPUs, 1 arrival. */
static rusk_fgd_mix mix_s_w4(void)
{
	rusk_fgd_mix mx;
	memset(&mx, 0, sizeof mx);
	rusk_task s = gpu_task(1, 1, 1, 500), w4 = gpu_task(2, 1, 4, 1000);
	for (int i = 0; i < 3; i++)
		rusk_fgd_observe(&mx, &s);
	rusk_fgd_observe(&mx, &w4);
	return mx;
}

/* rusk_vec_free_fits_'s SWAR lane test (vec_impl.h) against one lane at a time, over
 * random lane states of machines with 0, 4 and 8 GPUs and demands of every GPU count. */
static bool fits_by_lane(const rusk_mvec *v, const rusk_vec_demand *d)
{
	if (v->mem_free < d->mem_mib)
		return false;
	if (d->gpus == 0)
		return true;
	uint32_t limit = d->gpus == 1 ? 1000u - d->gpu_milli : 0, fit = 0;
	for (uint32_t g = 0; g < v->n_gpus; g++)
		fit += ((v->gpu_used[g / 4] >> (16 * (g % 4))) & 0xffffu) <= limit;
	return fit >= d->gpus;
}

static void test_lane_fit_swar(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	uint64_t x = 12345;
	static const uint16_t used[] = {0, 1, 200, 499, 500, 501, 999, 1000};
	for (int it = 0; it < 20000; it++) {
		uint32_t m = (uint32_t)(it % 4);
		rusk_mvec *v = &c->mvec[m];
		uint64_t w[2] = {0, 0};
		for (uint32_t g = 0; g < v->n_gpus; g++) {
			x = x * 6364136223846793005u + 1442695040888963407u;
			uint64_t u = (x >> 33) % 3 == 0 ? (x >> 40) % 1001 : used[(x >> 36) % 8];
			w[g / 4] |= u << (16 * (g % 4));
		}
		v->gpu_used[0] = w[0];
		v->gpu_used[1] = w[1];
		x = x * 6364136223846793005u + 1442695040888963407u;
		rusk_vec_demand d = {0, (uint16_t)((x >> 35) % 10), 0, 0};
		d.gpu_milli = d.gpus == 1 ? (uint16_t)(1 + (x >> 45) % 1000) : d.gpus ? 1000 : 0;
		assert_int_equal(rusk_vec_free_fits_(c, m, &d), fits_by_lane(v, &d));
	}
	for (uint32_t m = 0; m < 4; m++)
		c->mvec[m].gpu_used[0] = c->mvec[m].gpu_used[1] = 0;
	rusk_cluster_destroy(c);
}

static void test_frag_by_hand(void **state)
{
	(void)state;
	rusk_fgd_mix mx = mix_s_w4();
	assert_int_equal(mx.n_types, 2);
	assert_int_equal(mx.total, 4);
	/* free [1000, 1000, 600, 200]: all 2800, 2 idle, pieces 800.
	 * U(S) = the pieces below 500 = 200; U(W4) = all (2 idle < 4) = 2800.
	 * F = (3 * 200 + 2800) / 4 = 850. */
	rusk_fgd_node s = {10, 100000, V100, 4, {1000, 1000, 600, 200}};
	assert_float_equal(rusk_fgd_frag(&mx, &s), 850.0, 1e-9);
	/* Idle [1000 x 4]: U(S) = 0, U(W4) = pieces = 0. */
	rusk_fgd_node idle = {10, 100000, V100, 4, {1000, 1000, 1000, 1000}};
	assert_float_equal(rusk_fgd_frag(&mx, &idle), 0.0, 1e-9);
	/* No free core: every type lacks cores, all 2800 unusable to each. */
	s.free_rus = 0;
	assert_float_equal(rusk_fgd_frag(&mx, &s), 2800.0, 1e-9);
	/* A type that accepts only T4 finds all of a V100 machine's free GPU unusable:
	 * one T4-only 500 share besides the mix: F = (3 * 0 + 0 + 4000) / 5 = 800 on idle. */
	rusk_task t4 = gpu_task(3, 1, 1, 500);
	t4.vec.gpu_models = 1u << T4;
	rusk_fgd_observe(&mx, &t4);
	assert_float_equal(rusk_fgd_frag(&mx, &idle), 800.0, 1e-9);
	/* No GPUs, or an empty mix: nothing to fragment. */
	rusk_fgd_node cpu = {10, 100000, CPU, 0, {0}};
	assert_float_equal(rusk_fgd_frag(&mx, &cpu), 0.0, 0);
	rusk_fgd_mix empty;
	memset(&empty, 0, sizeof empty);
	assert_float_equal(rusk_fgd_frag(&empty, &s), 0.0, 0);
}

static void test_mix_learning(void **state)
{
	(void)state;
	rusk_fgd_mix mx;
	memset(&mx, 0, sizeof mx);
	rusk_task cpu = {.id = 1, .rus = 2, .gang = true, .placement = RUSK_PLACE_MACHINE};
	cpu.vec.mem_mib = 1024;
	rusk_fgd_observe(&mx, &cpu); /* no GPU: not counted */
	assert_int_equal(mx.total, 0);
	/* RUSK_FGD_TYPES distinct shares fill the table, one arrival each; type 0 twice. */
	for (uint16_t k = 0; k < RUSK_FGD_TYPES; k++) {
		rusk_task t = gpu_task(2, 1, 1, (uint16_t)(10 + k));
		rusk_fgd_observe(&mx, &t);
	}
	rusk_task t0 = gpu_task(2, 1, 1, 10);
	rusk_fgd_observe(&mx, &t0);
	assert_int_equal(mx.n_types, RUSK_FGD_TYPES);
	assert_int_equal(mx.type[0].n, 2);
	assert_int_equal(mx.total, RUSK_FGD_TYPES + 1);
	/* A new type takes the rarest slot (the first with count 1: index 1) with count 2. */
	rusk_task nw = gpu_task(2, 1, 2, 1000);
	rusk_fgd_observe(&mx, &nw);
	assert_int_equal(mx.type[1].gpus, 2);
	assert_int_equal(mx.type[1].milli, 1000);
	assert_int_equal(mx.type[1].n, 2);
	assert_int_equal(mx.total, RUSK_FGD_TYPES + 2);
	/* Aging: once the total reaches RUSK_FGD_AGE every count halves, the 1s go. */
	while (mx.total < RUSK_FGD_AGE - 1)
		rusk_fgd_observe(&mx, &t0);
	uint32_t n0 = mx.type[0].n;
	rusk_fgd_observe(&mx, &t0);
	assert_int_equal(mx.type[0].n, (n0 + 1) / 2);
	assert_int_equal(mx.n_types, 2); /* type 0 and the 2-GPU type (2 -> 1) */
	uint32_t sum = 0;
	for (uint32_t k = 0; k < mx.n_types; k++)
		sum += mx.type[k].n;
	assert_int_equal(mx.total, sum);
}

/* The 600 share on m1's GPU 0 (free 400 left there). */
static void occupy_m1(rusk_cluster *c)
{
	rusk_vec_demand d = {.gpus = 1, .gpu_milli = 600};
	uint32_t ru = first_ru(c, 1);
	rusk_lease l;
	size_t lost;
	assert_int_equal(rusk_ru_commit_vec(c, 1000, &ru, 1, &d, NULL, &l, &lost), RUSK_OK);
}

static void test_delta_by_hand(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	occupy_m1(c);
	rusk_fgd_mix mx = mix_s_w4();
	/* A 400 share.
	 * m1 before: free [400, 1000, 1000, 1000], all 3400, 3 idle: U(S) = 400,
	 *   U(W4) = 3400, F = (1200 + 3400) / 4 = 1150; after (best fit: GPU 0 full):
	 *   [0, 1000, 1000, 1000]: U(S) = 0, U(W4) = 3000, F = 750. Delta = -400 milli.
	 * m2: F 0 -> [600, 1000 x 3]: U(S) = 0, U(W4) = 3600, F = 900. Delta = +900.
	 * m3 (8 T4): F 0 -> [600, 1000 x 7]: U(W4) = pieces = 600, F = 150. Delta = +150.
	 * m0: no GPUs, Delta 0. The value is -Delta in GPUs plus 1e-9 x core fit. */
	rusk_task s = gpu_task(1, 1, 1, 400);
	assert_float_equal(rusk_vec_fgd_value_(c, 1, 15, &s, &mx), 0.4, 1e-6);
	assert_float_equal(rusk_vec_fgd_value_(c, 2, 16, &s, &mx), -0.9, 1e-6);
	assert_float_equal(rusk_vec_fgd_value_(c, 3, 16, &s, &mx), -0.15, 1e-6);
	assert_float_equal(rusk_vec_fgd_value_(c, 0, 8, &s, &mx), 0.0, 1e-6);
	/* One whole GPU.
	 * m1: after [400, 0, 1000, 1000]: U(S) = 400, U(W4) = all = 2400, F = 900.
	 *   Delta = -250.
	 * m2: after [0, 1000 x 3]: U(W4) = 3000, F = 750, Delta = +750.
	 * m3: after [0, 1000 x 7]: 7 idle, no pieces: F = 0, Delta = 0. */
	rusk_task w = gpu_task(2, 1, 1, 1000);
	assert_float_equal(rusk_vec_fgd_value_(c, 1, 15, &w, &mx), 0.25, 1e-6);
	assert_float_equal(rusk_vec_fgd_value_(c, 2, 16, &w, &mx), -0.75, 1e-6);
	assert_float_equal(rusk_vec_fgd_value_(c, 3, 16, &w, &mx), 0.0, 1e-6);
	/* Ties of Delta go to the tighter fit on cores: m3 with 2 free RUs left beats m3
	 * with all 16 (a 1e-9 term). */
	assert_true(rusk_vec_fgd_value_(c, 3, 3, &w, &mx) > rusk_vec_fgd_value_(c, 3, 16, &w, &mx));
	rusk_cluster_destroy(c);
}

static rusk_agent *agent(rusk_cluster *c, rusk_quality_model q)
{
	rusk_agent_params ap = fx_agent_params(c);
	ap.quality = q;
	ap.sample = 64; /* 64 draws of 55 free RUs: every machine is seen */
	ap.r_max = 64;
	return fx_agent(c, &ap, true);
}

/* The agent places on the machine of least Delta (hand values above), where the slot
 * score would not look at GPUs at all, and learns only GPU tasks into its mix. */
static void test_agent_descends(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	occupy_m1(c);
	rusk_agent *a = agent(c, RUSK_QUALITY_FGD);
	a->mix = mix_s_w4();
	rusk_task w = gpu_task(2, 1, 1, 1000);
	rusk_lease l;
	rusk_placement pl;
	/* The mix counts w first (5 arrivals; W1, one whole GPU, a third type). m1 before:
	 * U(S) = 400, U(W4) = 3400, U(W1) = pieces = 400: F = (1200 + 3400 + 400) / 5 = 1000;
	 * after [400, 0, 1000, 1000]: (1200 + 2400 + 400) / 5 = 800, Delta -200. m2: 0 ->
	 * (0 + 3000 + 0) / 5 = 600, Delta +600. m3: 0 -> 0. m0 has no GPU. */
	assert_int_equal(rusk_agent_place(a, &w, &l, &pl), RUSK_OK);
	assert_int_equal(rusk_cluster_ru_machine(c, l.ru), 1);
	assert_int_equal(a->mix.total, 5);
	assert_true(pl.quality > 0.5 && pl.quality < 1); /* the logistic of -Delta > 0 */
	/* A CPU-only vector task is not learned and goes where Delta is 0 (m0: no GPUs to
	 * strand, where m1..m3 would lose the cores their GPU tasks need only at the margin:
	 * all of them tie at 0 here, so the tighter core fit decides: m0, 8 RUs). */
	rusk_task cpu = {.id = 3, .rus = 7, .gang = true, .placement = RUSK_PLACE_MACHINE};
	cpu.vec.mem_mib = 1024;
	rusk_lease lc[7];
	assert_int_equal(rusk_agent_place(a, &cpu, lc, &pl), RUSK_OK);
	assert_int_equal(rusk_cluster_ru_machine(c, lc[0].ru), 0);
	assert_int_equal(a->mix.total, 5);
	char err[256];
	if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
		fail_msg("%s", err);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

/* The central baseline (one lock, a full scan) ranks a vector task's machines by the FGD
 * value too, not by slot scores. Nothing placed, mix S x 3, W4 x 1 and the task (W1, one
 * whole GPU) counted first: m1 and m2 go from F = 0 to [0, 1000 x 3], U(W4) = 3000, F =
 * 3000 / 5 = 600, Delta +600; m3 keeps 7 idle GPUs and no pieces, Delta 0: m3. */
static void test_central_descends(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	rusk_agent_params ap = fx_agent_params(c);
	ap.quality = RUSK_QUALITY_FGD;
	ap.strategy = RUSK_STRATEGY_CENTRAL;
	rusk_agent *a = fx_agent(c, &ap, false);
	a->mix = mix_s_w4();
	rusk_task w = gpu_task(2, 1, 1, 1000);
	rusk_lease l;
	rusk_placement pl;
	assert_int_equal(rusk_agent_place(a, &w, &l, &pl), RUSK_OK);
	assert_int_equal(rusk_cluster_ru_machine(c, l.ru), 3);
	assert_int_equal(pl.strategy, RUSK_STRATEGY_CENTRAL);
	char err[256];
	if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
		fail_msg("%s", err);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

/* A vector demand no drawn machine could hold is remembered until the view syncs: a
 * demand needing as much in every dimension is refused without a draw, a smaller one is
 * still sampled, and a sync forgets. */
static void test_failed_demand_memo(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	/* 4 whole GPUs of m3 (8 T4) taken: no machine has 5 idle GPUs now. */
	rusk_vec_demand d4 = {.gpus = 4, .gpu_milli = 1000};
	uint32_t ru = first_ru(c, 3);
	rusk_lease l;
	size_t lost;
	assert_int_equal(rusk_ru_commit_vec(c, 1000, &ru, 1, &d4, NULL, &l, &lost), RUSK_OK);
	rusk_agent *a = agent(c, RUSK_QUALITY_SCORE);
	uint32_t rus[2];
	rusk_placement pl;
	rusk_task five = gpu_task(1, 2, 5, 1000);
	assert_int_equal(rusk_agent_choose(a, &five, rus, &pl), RUSK_EAGAIN);
	assert_true(pl.samples > 0);
	rusk_task six = gpu_task(2, 2, 6, 1000); /* needs more: refused without drawing */
	assert_int_equal(rusk_agent_choose(a, &six, rus, &pl), RUSK_EAGAIN);
	assert_int_equal(pl.samples, 0);
	rusk_task t4only = gpu_task(3, 2, 5, 1000); /* fewer models accepted: dominated too */
	t4only.vec.gpu_models = 1u << T4;
	assert_int_equal(rusk_agent_choose(a, &t4only, rus, &pl), RUSK_EAGAIN);
	assert_int_equal(pl.samples, 0);
	rusk_task fewer_rus = gpu_task(4, 1, 5, 1000); /* fewer cores: not dominated */
	assert_int_equal(rusk_agent_choose(a, &fewer_rus, rus, &pl), RUSK_EAGAIN);
	assert_true(pl.samples > 0);
	rusk_task four = gpu_task(5, 2, 4, 1000); /* fits m3's 4 idle GPUs or m1, m2 */
	assert_int_equal(rusk_agent_choose(a, &four, rus, &pl), RUSK_OK);
	/* A sync is a new view: the demand is sampled again. */
	assert_int_equal(rusk_view_sync(rusk_agent_view(a), 0), RUSK_OK);
	assert_int_equal(rusk_agent_choose(a, &six, rus, &pl), RUSK_EAGAIN);
	assert_true(pl.samples > 0);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

int main(void)
{
	rusk_thread_register();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_lane_fit_swar),    cmocka_unit_test(test_frag_by_hand),
	        cmocka_unit_test(test_mix_learning),     cmocka_unit_test(test_delta_by_hand),
	        cmocka_unit_test(test_agent_descends),   cmocka_unit_test(test_failed_demand_memo),
	        cmocka_unit_test(test_central_descends),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_thread_unregister();
	return rc;
}
