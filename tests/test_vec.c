/* SPDX-License-Identifier: MIT */
/*
 * Vector resources (rusk/vec.h): machines from specs, the all-or-nothing commit of RUs,
 * memory and GPU shares, their return on release, rollback and revocation, the checks of
 * infeasible tasks by dimension, and agents placing vector tasks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

enum { CPU = 0, V100 = 1, T4 = 2 };

static const rusk_platform plats[] = {{"cpu", 1.0, 1.0}, {"V100", 1.0, 1.0}, {"T4", 1.0, 1.0}};

/* m0: 8 RUs, 64 GiB, no GPU; m1: 16 RUs, 128 GiB, 4 V100; m2: 16 RUs, 256 GiB, 8 T4;
 * m3 (spare): 32 RUs, 512 GiB, 2 V100. */
static const rusk_machine_spec specs[] = {
        {8, 65536, 0, CPU, NULL, false},
        {16, 131072, 4, V100, NULL, false},
        {16, 262144, 8, T4, NULL, false},
        {32, 524288, 2, V100, NULL, true},
};

static rusk_cluster *make(void)
{
	return fx_machines(specs, 4, (fx_shape){.per_rack = 2, .per_cell = 1, .partitions = 2},
	                   plats, 3);
}

static void verify(const rusk_cluster *c)
{
	char err[256];
	if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
		fail_msg("%s", err);
}

static uint32_t first_ru(const rusk_cluster *c, uint32_t m)
{
	rusk_machine_info mi;
	assert_int_equal(rusk_cluster_machine(c, m, &mi), RUSK_OK);
	return mi.first_ru;
}

/* RUs [first + off, first + off + n) of machine m into rus[]. */
static void rus_of(const rusk_cluster *c, uint32_t m, uint32_t off, uint32_t n, uint32_t *rus)
{
	for (uint32_t i = 0; i < n; i++)
		rus[i] = first_ru(c, m) + off + i;
}

static void test_specs(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	assert_int_equal(rusk_cluster_machines(c), 4);
	assert_int_equal(rusk_cluster_rus(c), 8 + 16 + 16 + 32);
	rusk_machine_info mi;
	assert_int_equal(rusk_cluster_machine(c, 3, &mi), RUSK_OK);
	assert_int_equal(mi.state, RUSK_MACHINE_DOWN); /* the spare */
	assert_int_equal(mi.gpus, 2);
	rusk_machine_vec v;
	assert_int_equal(rusk_machine_vec_get(c, 2, &v), RUSK_OK);
	assert_int_equal(v.gpus, 8);
	assert_int_equal(v.gpu_model, T4);
	assert_int_equal(v.mem_free_mib, 262144);
	for (int g = 0; g < 8; g++)
		assert_int_equal(v.gpu_free_milli[g], 1000);
	uint32_t k;
	assert_int_equal(rusk_gpu_model(c, "T4", &k), RUSK_OK);
	assert_int_equal(k, T4);
	assert_int_equal(rusk_gpu_model(c, "A100", &k), RUSK_ERANGE);
	assert_true(rusk_cluster_vec_bytes(c) >= 4 * 64 + 72 * 8);
	/* bad specs name the field */
	rusk_machine_spec bad[2] = {specs[0], specs[1]};
	bad[1].gpus = 9;
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.platforms = plats;
	p.n_platforms = 3;
	p.machines_per_rack = 2;
	p.racks_per_cell = 1;
	p.partitions = 1;
	char err[256];
	rusk_cluster *c2 = NULL;
	assert_int_equal(rusk_cluster_create_machines(bad, 2, &p, &c2, err, sizeof err),
	                 RUSK_EINVAL);
	assert_non_null(strstr(err, "spec[1].gpus"));
	bad[1].gpus = 1;
	bad[1].platform = 3;
	assert_int_equal(rusk_cluster_create_machines(bad, 2, &p, &c2, err, sizeof err),
	                 RUSK_EINVAL);
	assert_non_null(strstr(err, "spec[1].platform"));
	/* per-RU scores from the spec */
	uint16_t sc[8] = {1, 2, 3, 4, 5, 6, 7, 8000};
	bad[0].scores = sc;
	bad[1] = specs[1];
	assert_int_equal(rusk_cluster_create_machines(bad, 2, &p, &c2, err, sizeof err), RUSK_OK);
	assert_true(rusk_ru_score(c2, 7) == 8.0);
	assert_true(rusk_ru_score(c2, 0) == 0.001);
	rusk_cluster_destroy(c2);
	rusk_cluster_destroy(c);
}

static void test_memory_commit_rollback(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	uint32_t rus[4];
	rusk_lease l1[2], l2[2];
	rusk_vec_demand d = {.mem_mib = 100000};
	size_t lost = 99;
	rus_of(c, 1, 0, 2, rus);
	assert_int_equal(rusk_ru_commit_vec(c, 1, rus, 2, &d, NULL, l1, &lost), RUSK_OK);
	rusk_machine_vec v;
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.mem_free_mib, 131072 - 100000);
	verify(c);
	/* 40000 MiB more do not fit: nothing is held afterwards, the RUs are free again */
	d.mem_mib = 40000;
	rus_of(c, 1, 2, 2, rus);
	assert_int_equal(rusk_ru_commit_vec(c, 2, rus, 2, &d, NULL, l2, &lost), RUSK_ECONFLICT);
	assert_int_equal(lost, 2);
	rusk_ru_info ri;
	rusk_ru_state(c, rus[0], &ri);
	assert_int_equal(ri.owner, 0);
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.mem_free_mib, 131072 - 100000);
	verify(c);
	/* an RU conflict rolls back too, before any share is taken */
	d.mem_mib = 1000;
	rus_of(c, 1, 1, 2, rus); /* rus[0] is task 1's */
	assert_int_equal(rusk_ru_commit_vec(c, 2, rus, 2, &d, NULL, l2, &lost), RUSK_ECONFLICT);
	assert_int_equal(lost, 0);
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.mem_free_mib, 131072 - 100000);
	/* RUs of two machines, or a machine that can never hold it */
	uint32_t two[2] = {first_ru(c, 0), first_ru(c, 1)};
	assert_int_equal(rusk_ru_commit_vec(c, 2, two, 2, &d, NULL, l2, &lost), RUSK_EINVAL);
	d.mem_mib = 200000;
	rus_of(c, 1, 4, 1, rus);
	assert_int_equal(rusk_ru_commit_vec(c, 2, rus, 1, &d, NULL, l2, &lost), RUSK_EINFEASIBLE);
	/* releasing the anchor (lowest RU) returns the memory, once */
	assert_int_equal(rusk_ru_release(c, 1, l1[1]), RUSK_OK);
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.mem_free_mib, 131072 - 100000);
	assert_int_equal(rusk_ru_release(c, 1, l1[0]), RUSK_OK);
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.mem_free_mib, 131072);
	assert_int_equal(rusk_ru_release(c, 1, l1[0]), RUSK_EFREE);
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.mem_free_mib, 131072);
	verify(c);
	rusk_cluster_destroy(c);
}

static void test_shared_gpu(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	rusk_vec_demand d = {.mem_mib = 1024, .gpus = 1, .gpu_milli = 400};
	rusk_lease l[3];
	size_t lost;
	for (uint32_t i = 0; i < 3; i++) {
		uint32_t ru = first_ru(c, 1) + i;
		assert_int_equal(rusk_ru_commit_vec(c, 10 + i, &ru, 1, &d, NULL, &l[i], &lost),
		                 RUSK_OK);
	}
	/* best fit: 400 + 400 on GPU 0, the third on GPU 1 */
	rusk_machine_vec v;
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.gpu_free_milli[0], 200);
	assert_int_equal(v.gpu_free_milli[1], 600);
	assert_int_equal(v.gpu_free_milli[2], 1000);
	/* a 200 share fills GPU 0's piece exactly */
	d.gpu_milli = 200;
	rusk_lease l4;
	uint32_t ru = first_ru(c, 1) + 3;
	assert_int_equal(rusk_ru_commit_vec(c, 13, &ru, 1, &d, NULL, &l4, &lost), RUSK_OK);
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.gpu_free_milli[0], 0);
	verify(c);
	rusk_cluster_vec cv;
	assert_int_equal(rusk_cluster_vec_get(c, &cv), RUSK_OK);
	assert_int_equal(cv.gpu_used_milli, 1400);
	assert_int_equal(cv.gpus_busy, 2);
	assert_int_equal(cv.gpus, 4 + 8); /* the spare is down */
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(rusk_ru_release(c, 10 + i, l[i]), RUSK_OK);
	assert_int_equal(rusk_ru_release(c, 13, l4), RUSK_OK);
	rusk_machine_vec_get(c, 1, &v);
	for (int g = 0; g < 4; g++)
		assert_int_equal(v.gpu_free_milli[g], 1000);
	verify(c);
	rusk_cluster_destroy(c);
}

static void test_whole_gpu_gang(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	rusk_vec_demand share = {.gpus = 1, .gpu_milli = 500};
	rusk_vec_demand three = {.gpus = 3, .gpu_milli = 1000};
	rusk_lease ls[2], lw[4];
	size_t lost;
	/* two shares occupy GPUs 0 and... best fit puts both on GPU 0 */
	for (uint32_t i = 0; i < 2; i++) {
		uint32_t ru = first_ru(c, 1) + i;
		assert_int_equal(rusk_ru_commit_vec(c, 20 + i, &ru, 1, &share, NULL, &ls[i], &lost),
		                 RUSK_OK);
	}
	uint32_t rus[4];
	rus_of(c, 1, 4, 4, rus);
	assert_int_equal(rusk_ru_commit_vec(c, 30, rus, 4, &three, NULL, lw, &lost), RUSK_OK);
	rusk_machine_vec v;
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.gpu_free_milli[0], 0);
	for (int g = 1; g < 4; g++)
		assert_int_equal(v.gpu_free_milli[g], 0);
	/* a fourth whole GPU is not there now: nothing taken, all four RUs back */
	rusk_vec_demand one = {.gpus = 1, .gpu_milli = 1000};
	uint32_t ru = first_ru(c, 1) + 10;
	rusk_lease l1;
	assert_int_equal(rusk_ru_commit_vec(c, 31, &ru, 1, &one, NULL, &l1, &lost), RUSK_ECONFLICT);
	verify(c);
	/* 8 whole GPUs across both lane words of the T4 machine */
	rusk_vec_demand eight = {.gpus = 8, .gpu_milli = 1000};
	rus_of(c, 2, 0, 2, rus);
	assert_int_equal(rusk_ru_commit_vec(c, 32, rus, 2, &eight, NULL, lw, &lost), RUSK_OK);
	rusk_machine_vec_get(c, 2, &v);
	for (int g = 0; g < 8; g++)
		assert_int_equal(v.gpu_free_milli[g], 0);
	verify(c);
	assert_int_equal(rusk_ru_release_many(c, 32, lw, 2, NULL), RUSK_OK);
	rusk_machine_vec_get(c, 2, &v);
	for (int g = 0; g < 8; g++)
		assert_int_equal(v.gpu_free_milli[g], 1000);
	/* the three GPUs return when their anchor goes */
	rus_of(c, 1, 4, 4, rus);
	rusk_lease held[4] = {{rus[0], 0}, {rus[1], 0}, {rus[2], 0}, {rus[3], 0}};
	for (int i = 0; i < 4; i++) {
		rusk_ru_info ri;
		rusk_ru_state(c, rus[i], &ri);
		held[i].gen = ri.gen;
	}
	assert_int_equal(rusk_ru_release_many(c, 30, held, 4, NULL), RUSK_OK);
	rusk_machine_vec_get(c, 1, &v);
	for (int g = 1; g < 4; g++)
		assert_int_equal(v.gpu_free_milli[g], 1000);
	verify(c);
	rusk_cluster_destroy(c);
}

static void check_refused(const rusk_cluster *c, rusk_task *t, int code, const char *field)
{
	char err[256];
	assert_int_equal(rusk_task_check(c, t, err, sizeof err), code);
	if (strstr(err, field) == NULL)
		fail_msg("expected '%s' in: %s", field, err);
}

static void test_infeasible_by_dimension(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	rusk_task t = {.id = 1, .rus = 2, .gang = true, .placement = RUSK_PLACE_MACHINE};
	t.vec = (rusk_vec_demand){.mem_mib = 600000};
	check_refused(c, &t, RUSK_EINFEASIBLE, "mem_mib");
	t.vec = (rusk_vec_demand){.gpus = 8, .gpu_milli = 1000, .gpu_models = 1u << V100};
	check_refused(c, &t, RUSK_EINFEASIBLE, "gpu_models");
	t.vec = (rusk_vec_demand){.gpus = 8, .gpu_milli = 1000};
	assert_int_equal(rusk_task_check(c, &t, NULL, 0), RUSK_OK);
	t.rus = 20; /* 20 RUs fit the spare, 8 GPUs the T4 machine: no machine has both */
	check_refused(c, &t, RUSK_EINFEASIBLE, "shape");
	t.rus = 40;
	check_refused(c, &t, RUSK_EINFEASIBLE, "rus");
	t.rus = 2;
	t.vec = (rusk_vec_demand){.gpus = 9, .gpu_milli = 1000};
	check_refused(c, &t, RUSK_EINFEASIBLE, "gpus");
	t.vec = (rusk_vec_demand){.gpus = 2, .gpu_milli = 500};
	check_refused(c, &t, RUSK_EINVAL, "gpu_milli");
	t.vec = (rusk_vec_demand){.gpus = 1, .gpu_milli = 0};
	check_refused(c, &t, RUSK_EINVAL, "gpu_milli");
	t.vec = (rusk_vec_demand){.gpu_models = 1};
	check_refused(c, &t, RUSK_EINVAL, "gpus");
	t.vec = (rusk_vec_demand){.mem_mib = 10};
	t.placement = RUSK_PLACE_ANY;
	check_refused(c, &t, RUSK_EINVAL, "placement");
	/* machine-level answers, without placing */
	t.placement = RUSK_PLACE_MACHINE;
	t.vec = (rusk_vec_demand){.gpus = 2, .gpu_milli = 1000, .gpu_models = 1u << T4};
	assert_int_equal(rusk_task_fits_machine(c, &t, 2), RUSK_OK);
	assert_int_equal(rusk_task_fits_machine(c, &t, 1), RUSK_EINFEASIBLE);
	assert_int_equal(rusk_task_fits_machine(c, &t, 0), RUSK_EINFEASIBLE);
	t.vec.gpu_models = 1u << V100;
	assert_int_equal(rusk_task_fits_machine(c, &t, 3), RUSK_EAGAIN); /* spare, down */
	assert_int_equal(rusk_task_fits_machine(c, &t, 9), RUSK_ERANGE);
	rusk_cluster_destroy(c);
}

typedef struct revoked {
	int n;
	uint64_t task;
} revoked;

static void on_revoke(uint64_t task, rusk_lease l, void *ctx)
{
	(void)l;
	revoked *r = ctx;
	r->n++;
	r->task = task;
}

static void test_revocation_returns_shares(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	rusk_vec_demand d = {.mem_mib = 50000, .gpus = 4, .gpu_milli = 1000};
	uint32_t rus[3];
	rusk_lease l[3];
	size_t lost;
	rus_of(c, 2, 5, 3, rus);
	assert_int_equal(rusk_ru_commit_vec(c, 7, rus, 3, &d, NULL, l, &lost), RUSK_OK);
	revoked r = {0, 0};
	assert_int_equal(rusk_machine_fail(c, 2, on_revoke, &r), RUSK_OK);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.task, 7);
	verify(c);
	assert_int_equal(rusk_ru_release(c, 7, l[0]), RUSK_EOFFLINE); /* nothing twice */
	assert_int_equal(rusk_machine_up(c, 2), RUSK_OK);
	rusk_machine_vec v;
	rusk_machine_vec_get(c, 2, &v);
	assert_int_equal(v.mem_free_mib, 262144);
	for (int g = 0; g < 8; g++)
		assert_int_equal(v.gpu_free_milli[g], 1000);
	d.gpus = 8;
	assert_int_equal(rusk_ru_commit_vec(c, 8, rus, 3, &d, NULL, l, &lost), RUSK_OK);
	assert_int_equal(rusk_ru_release_many(c, 8, l, 3, NULL), RUSK_OK);
	verify(c);
	rusk_cluster_destroy(c);
}

static rusk_agent *agent(rusk_cluster *c, rusk_quality_model q)
{
	rusk_agent_params ap = fx_agent_params(c);
	ap.quality = q;
	ap.sample = 16;
	return fx_agent(c, &ap, true);
}

static void test_agent_places_vector_tasks(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	rusk_agent *a = agent(c, RUSK_QUALITY_SCORE);
	rusk_lease l[8];
	rusk_placement pl;
	/* 2 T4 GPUs: only machine 2 */
	rusk_task t = {.id = 1, .rus = 4, .gang = true, .placement = RUSK_PLACE_MACHINE};
	t.vec = (rusk_vec_demand){
	        .mem_mib = 1000, .gpus = 2, .gpu_milli = 1000, .gpu_models = 1u << T4};
	assert_int_equal(rusk_agent_place(a, &t, l, &pl), RUSK_OK);
	assert_int_equal(pl.placed, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(rusk_cluster_ru_machine(c, l[i].ru), 2);
	/* memory only machine 2 still has: 200000 MiB */
	rusk_task u = {.id = 2, .rus = 1, .gang = true, .placement = RUSK_PLACE_MACHINE};
	u.vec = (rusk_vec_demand){.mem_mib = 200000};
	rusk_lease lu;
	assert_int_equal(rusk_agent_place(a, &u, &lu, &pl), RUSK_OK);
	assert_int_equal(rusk_cluster_ru_machine(c, lu.ru), 2);
	/* the same again: no machine has 200000 MiB free now (the spare is down) */
	u.id = 3;
	assert_int_equal(rusk_agent_place(a, &u, &lu, &pl), RUSK_EAGAIN);
	/* infeasible: refused at once, naming the field */
	u.vec.mem_mib = 1u << 30;
	assert_int_equal(rusk_agent_place(a, &u, &lu, &pl), RUSK_EINFEASIBLE);
	assert_string_equal(pl.invalid, "mem_mib");
	verify(c);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

/* rusk_agent_choose's check of a vector task (agent.c, check_task: its own checks called
 * directly on the hot path): a well-formed task is chosen for, and each malformed or
 * infeasible one refused naming its field, as rusk_task_check names it. */
static void test_choose_checks_vector_task(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	rusk_agent *a = agent(c, RUSK_QUALITY_SCORE);
	rusk_placement pl;
	uint32_t ru;
	const rusk_task ok = {.id = 5,
	                      .rus = 1,
	                      .gang = true,
	                      .placement = RUSK_PLACE_MACHINE,
	                      .vec = {.mem_mib = 1000, .gpus = 1, .gpu_milli = 500}};
	assert_int_equal(rusk_agent_choose(a, &ok, &ru, &pl), RUSK_OK);
	assert_null(pl.invalid);
	assert_int_equal(rusk_task_check(c, &ok, NULL, 0), RUSK_OK);
	static const struct {
		const char *field;
		int rc;
	} want[] = {{"id", RUSK_EINVAL},        {"rus", RUSK_EINVAL},
	            {"gpu_milli", RUSK_EINVAL}, {"gpus", RUSK_EINVAL},
	            {"placement", RUSK_EINVAL}, {"placement", RUSK_EINVAL},
	            {"preferred", RUSK_EINVAL}, {"mem_mib", RUSK_EINFEASIBLE},
	            {"rus", RUSK_EINFEASIBLE}};
	for (uint32_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		rusk_task t = ok;
		switch (i) {
		case 0: t.id = 0; break;
		case 1: t.rus = 0; break;
		case 2: t.vec.gpu_milli = 0; break;
		case 3: t.vec.gpus = 0; break; /* a share without a GPU */
		case 4: t.placement = RUSK_PLACE_ANY; break;
		case 5: t.gang = false; break;
		case 6: t.n_preferred = 1; break; /* preferred NULL */
		case 7: t.vec.mem_mib = 1u << 30; break;
		default: t.rus = 1000; break; /* more RUs than any machine */
		}
		char err[256];
		pl.invalid = NULL;
		assert_int_equal(rusk_agent_choose(a, &t, &ru, &pl), want[i].rc);
		assert_non_null(pl.invalid);
		assert_string_equal(pl.invalid, want[i].field);
		assert_int_equal(rusk_task_check(c, &t, err, sizeof err), want[i].rc);
	}
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

static void test_packing_fills_pieces(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	/* machine 1's GPU 0 is 700 milli in use; a 300 share should fill it under PACKING
	 * rather than open an idle GPU of machine 2 */
	rusk_vec_demand d = {.gpus = 1, .gpu_milli = 700};
	uint32_t ru = first_ru(c, 1);
	rusk_lease l0;
	size_t lost;
	assert_int_equal(rusk_ru_commit_vec(c, 1, &ru, 1, &d, NULL, &l0, &lost), RUSK_OK);
	rusk_agent *a = agent(c, RUSK_QUALITY_PACKING);
	rusk_view_sync(rusk_agent_view(a), 0);
	rusk_view_sync(rusk_agent_view(a), 1);
	for (uint64_t id = 2; id < 6; id++) {
		rusk_task t = {.id = id, .rus = 1, .gang = true, .placement = RUSK_PLACE_MACHINE};
		t.vec = (rusk_vec_demand){.gpus = 1, .gpu_milli = 300};
		rusk_lease l;
		rusk_placement pl;
		assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_OK);
		if (id == 2)
			assert_int_equal(rusk_cluster_ru_machine(c, l.ru), 1);
		if (!(pl.quality >= 0 && pl.quality <= 1))
			fail_msg("quality %g (task %llu)", pl.quality, (unsigned long long)id);
	}
	rusk_machine_vec v;
	rusk_machine_vec_get(c, 1, &v);
	assert_int_equal(v.gpu_free_milli[0], 0);
	verify(c);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

int main(void)
{
	rusk_thread_register();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_specs),
	        cmocka_unit_test(test_memory_commit_rollback),
	        cmocka_unit_test(test_shared_gpu),
	        cmocka_unit_test(test_whole_gpu_gang),
	        cmocka_unit_test(test_infeasible_by_dimension),
	        cmocka_unit_test(test_revocation_returns_shares),
	        cmocka_unit_test(test_agent_places_vector_tasks),
	        cmocka_unit_test(test_choose_checks_vector_task),
	        cmocka_unit_test(test_packing_fills_pieces),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_thread_unregister();
	return rc;
}
