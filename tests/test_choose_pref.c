/* SPDX-License-Identifier: MIT */
/*
 * Preferred machines under the interference quality model (core/kernel/choose.c, add_preferred):
 * a task with preferred machines, e.g. a Quasar allocation's (rusk_cls_alloc_size), is
 * placed on them while they can hold it, even when Tarcil's Q ranks another machine
 * higher, and their room is read in the master array, not the agent's possibly stale view.
 * Before, under the interference model the agents ranked by Q only and never looked
 * preferred machines up, so every case below placed the task elsewhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

#define MACHINES 400u
#define RUS      8u
#define PARTS    2u

static rusk_cluster *make(void)
{
	return fx_cluster((fx_shape){.machines = MACHINES, .rus = RUS, .partitions = PARTS});
}

static rusk_agent *agent(rusk_cluster *c, rusk_strategy s)
{
	rusk_agent_params ap = fx_agent_params(c); /* its PARTS partitions */
	ap.strategy = s;
	ap.quality = RUSK_QUALITY_INTERFERENCE;
	return fx_agent(c, &ap, true);
}

static uint32_t first_ru(const rusk_cluster *c, uint32_t m)
{
	rusk_machine_info mi;
	assert_int_equal(rusk_cluster_machine(c, m, &mi), RUSK_OK);
	return mi.first_ru;
}

/* Machine m gets k tenants that cause the most interference on every resource. For a task
 * that causes 95 on each, Q of machine 123's free RUs with 3 such tenants is 0.21 against
 * 0.74 on an idle machine (Tarcil's Q is not monotone in load: it matches a task's target
 * to the machine's utility, so the profile matters). */
static void load_machine(rusk_cluster *c, uint32_t m, uint32_t k, rusk_lease *held)
{
	rusk_profile hot;
	memset(&hot, 99, sizeof hot);
	for (uint32_t i = 0; i < k; i++)
		assert_int_equal(
		        rusk_ru_commit(c, 1000 + m * RUS + i, first_ru(c, m) + i, &hot, &held[i]),
		        RUSK_OK);
}

static void unload_machine(rusk_cluster *c, uint32_t m, uint32_t k, const rusk_lease *held)
{
	for (uint32_t i = 0; i < k; i++)
		assert_int_equal(rusk_ru_release(c, 1000 + m * RUS + i, held[i]), RUSK_OK);
}

/* All of rus[0..n) on machine m. */
static void assert_on(const rusk_cluster *c, const uint32_t *rus, uint32_t n, uint32_t m)
{
	for (uint32_t i = 0; i < n; i++)
		assert_int_equal(rusk_cluster_ru_machine(c, rus[i]), m);
}

/*
 * One machine (RUSK_PLACE_MACHINE) and any (RUSK_PLACE_ANY) placements, each strategy that
 * looks preferences up: the preferred machine is loaded (low Q), the other 399 idle, and
 * the task goes to the preferred machine; the placement counts its RUs as preferred and
 * reports their true Q (no bonus). Without the preference the same agent goes elsewhere.
 */
static void test_interference_honours_preferred(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	rusk_lease held[RUS];
	const uint32_t pm = 123;
	load_machine(c, pm, 3, held); /* 5 of its 8 RUs free */
	rusk_strategy ss[] = {RUSK_STRATEGY_LATENCY, RUSK_STRATEGY_QUALITY};
	for (size_t si = 0; si < 2; si++) {
		rusk_agent *a = agent(c, ss[si]);
		uint8_t places[] = {RUSK_PLACE_MACHINE, RUSK_PLACE_ANY};
		for (size_t pi = 0; pi < 2; pi++) {
			rusk_task t = {.id = 1, .rus = 4, .gang = true, .placement = places[pi]};
			memset(&t.profile, 95, sizeof t.profile);
			uint32_t rus[4];
			rusk_placement pl;
			/* Without a preference, Q sends it to an idle machine. */
			assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_OK);
			for (uint32_t i = 0; i < 4; i++)
				assert_int_not_equal(rusk_cluster_ru_machine(c, rus[i]), pm);
			double q_idle = pl.quality;
			uint32_t pref = pm;
			t.preferred = &pref;
			t.n_preferred = 1;
			for (int rep = 0; rep < 20; rep++) {
				assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_OK);
				assert_on(c, rus, 4, pm);
				assert_int_equal(pl.preferred, 4);
				assert_true(pl.quality < q_idle); /* its Q, without the bonus */
			}
		}
		rusk_agent_destroy(a);
	}
	unload_machine(c, pm, 3, held);
	rusk_cluster_destroy(c);
}

/*
 * The preferred machine's room is read live: the agent's view saw it full, it has been
 * freed since (the view is not synced again), and the task still goes there; a preferred
 * machine that cannot hold the task (too few free RUs for a one-machine task) is passed
 * over for the draws.
 */
static void test_interference_preferred_live(void **state)
{
	(void)state;
	rusk_cluster *c = make();
	rusk_lease held[RUS];
	const uint32_t pm = 7;
	load_machine(c, pm, RUS, held); /* full */
	rusk_agent *a = agent(c, RUSK_STRATEGY_LATENCY);
	unload_machine(c, pm, RUS, held); /* freed after the view's sync */
	uint32_t pref = pm;
	rusk_task t = {.id = 1,
	               .rus = 6,
	               .gang = true,
	               .placement = RUSK_PLACE_MACHINE,
	               .preferred = &pref,
	               .n_preferred = 1};
	memset(&t.profile, 30, sizeof t.profile);
	uint32_t rus[6];
	rusk_placement pl;
	assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_OK);
	assert_on(c, rus, 6, pm);
	assert_int_equal(pl.preferred, 6);
	/* Placed for real: the commit agrees with what was read. */
	rusk_lease leases[6];
	t.id = 2;
	assert_int_equal(rusk_agent_place(a, &t, leases, &pl), RUSK_OK);
	for (uint32_t i = 0; i < 6; i++)
		assert_int_equal(rusk_cluster_ru_machine(c, leases[i].ru), pm);
	/* 2 RUs left there: a second 6-RU task goes elsewhere, on one machine. */
	t.id = 3;
	assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_OK);
	assert_int_equal(pl.preferred, 0);
	for (uint32_t i = 1; i < 6; i++)
		assert_int_equal(rusk_cluster_ru_machine(c, rus[i]),
		                 rusk_cluster_ru_machine(c, rus[0]));
	assert_int_equal(rusk_agent_release(a, 2, leases, 6, NULL), RUSK_OK);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

/*
 * A vector task (memory with its RUs, as `rusk sim --target on` sizes a one-machine
 * allocation) takes its preferred machine too, read live (choose_vec), unless the machine
 * lacks the memory: then the draws decide. Both strategies that look preferences up.
 */
static void test_interference_preferred_vector(void **state)
{
	(void)state;
	rusk_cluster *c = make(); /* 65,536 MiB a machine (the parameters' default) */
	rusk_lease held[RUS];
	const uint32_t pm = 200;
	load_machine(c, pm, 3, held);
	rusk_strategy ss[] = {RUSK_STRATEGY_LATENCY, RUSK_STRATEGY_QUALITY};
	for (size_t si = 0; si < 2; si++) {
		rusk_agent *a = agent(c, ss[si]);
		uint32_t pref = pm;
		rusk_task t = {.id = 1,
		               .rus = 3,
		               .gang = true,
		               .placement = RUSK_PLACE_MACHINE,
		               .preferred = &pref,
		               .n_preferred = 1,
		               .vec = {.mem_mib = 32768}};
		memset(&t.profile, 95, sizeof t.profile);
		uint32_t rus[3];
		rusk_placement pl;
		for (int rep = 0; rep < 10; rep++) {
			assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_OK);
			assert_on(c, rus, 3, pm);
			assert_int_equal(pl.preferred, 3);
		}
		/* 48 GiB of its 64 in use: a 32 GiB task goes elsewhere, a 16 GiB one there. */
		uint32_t r0 = first_ru(c, pm) + 7;
		rusk_vec_demand big = {.mem_mib = 49152};
		rusk_lease l;
		assert_int_equal(rusk_ru_commit_vec(c, 77, &r0, 1, &big, NULL, &l, NULL), RUSK_OK);
		assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_OK);
		assert_int_equal(pl.preferred, 0);
		t.vec.mem_mib = 16384;
		assert_int_equal(rusk_agent_choose(a, &t, rus, &pl), RUSK_OK);
		assert_on(c, rus, 3, pm);
		assert_int_equal(rusk_ru_release(c, 77, l), RUSK_OK);
		rusk_agent_destroy(a);
	}
	unload_machine(c, pm, 3, held);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_interference_honours_preferred),
	        cmocka_unit_test(test_interference_preferred_live),
	        cmocka_unit_test(test_interference_preferred_vector),
	};
	rusk_thread_register();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
