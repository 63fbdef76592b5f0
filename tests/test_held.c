/* SPDX-License-Identifier: MIT */
/*
 * Issue 26, item 1: a whole-machine task was split over two machines. An incremental task's
 * remainder goes only where its placement kind allows beside the RUs it already holds
 * (rusk/sched.h "Held RUs"): in rusk_agent_place's own retries after a commit that won part
 * of it, and in a later call that lists them in rusk_task.held. MACHINE is never split over
 * machines, RACK over racks, SPREAD never gets a machine twice; rusk_task_check refuses a
 * bad held list. Every lock-free strategy and the central baseline.
 *
 * The split needs a stale view: the agent's view shows a group with room for the whole
 * task, another scheduler takes one of its RUs before the commit, the commit wins the rest,
 * and the retry for the lost RU used to look anywhere.
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

#define OTHER 1000 /* another scheduler's task for RU r: OTHER + r */

static const rusk_strategy lock_free[] = {RUSK_STRATEGY_LATENCY, RUSK_STRATEGY_QUALITY,
                                          RUSK_STRATEGY_ADAPTIVE, RUSK_STRATEGY_RANDOM};
#define N_LOCK_FREE (sizeof lock_free / sizeof lock_free[0])

/* machines x rus, racks of per_rack machines, one rack per cell, one partition. */
static rusk_cluster *make(uint32_t machines, uint32_t rus, uint32_t per_rack)
{
	return fx_cluster((fx_shape){.machines = machines,
	                             .rus = rus,
	                             .per_rack = per_rack,
	                             .per_cell = 1,
	                             .partitions = 1});
}

static void sync_all(rusk_agent *a, const rusk_cluster *c)
{
	for (uint32_t p = 0; p < rusk_cluster_partitions(c); p++)
		assert_int_equal(rusk_view_sync(rusk_agent_view(a), p), RUSK_OK);
}

/* An agent with every partition synced. */
static rusk_agent *agent(rusk_cluster *c, rusk_strategy s)
{
	rusk_agent_params ap = fx_agent_params(c);
	ap.strategy = s;
	return fx_agent(c, &ap, true);
}

static uint64_t owner(const rusk_cluster *c, uint32_t ru)
{
	rusk_ru_info ri;
	assert_int_equal(rusk_ru_state(c, ru, &ri), RUSK_OK);
	return ri.owner;
}

static uint32_t machine_of(const rusk_cluster *c, uint32_t ru)
{
	return rusk_cluster_ru_machine(c, ru);
}

static uint32_t rack_of(const rusk_cluster *c, uint32_t ru)
{
	rusk_machine_info mi;
	assert_int_equal(rusk_cluster_machine(c, machine_of(c, ru), &mi), RUSK_OK);
	return mi.rack;
}

/* Another scheduler takes RU r (OTHER + r). */
static void other_take(rusk_cluster *c, rusk_lease *other, uint32_t r)
{
	assert_int_equal(rusk_ru_commit(c, OTHER + r, r, NULL, &other[r]), RUSK_OK);
}

static void other_release(rusk_cluster *c, rusk_lease *other, uint32_t r)
{
	assert_int_equal(rusk_ru_release(c, OTHER + r, other[r]), RUSK_OK);
}

/* Another scheduler takes every RU but those listed; returns nothing, other[] keeps them. */
static void other_take_all_but(rusk_cluster *c, rusk_lease *other, const uint32_t *keep,
                               size_t n_keep)
{
	for (uint32_t r = 0; r < rusk_cluster_rus(c); r++) {
		bool kept = false;
		for (size_t k = 0; k < n_keep; k++)
			kept = kept || keep[k] == r;
		if (!kept)
			other_take(c, other, r);
	}
}

static void other_release_all(rusk_cluster *c, rusk_lease *other)
{
	for (uint32_t r = 0; r < rusk_cluster_rus(c); r++)
		if (owner(c, r) == OTHER + r)
			other_release(c, other, r);
}

/* place() until it returns something other than RUSK_EAGAIN with nothing placed, at most
 * 64 times: a strategy may draw only candidates that cannot hold the task (random's R = 2
 * on a view of five free RUs) and give it back, as it should. */
static int place_retry(rusk_agent *a, const rusk_task *t, rusk_lease *l, rusk_placement *pl)
{
	int rc = RUSK_EAGAIN;
	for (int k = 0; k < 64 && rc == RUSK_EAGAIN; k++)
		rc = rusk_agent_place(a, t, l, pl);
	return rc;
}

/*
 * The remainder of a locality task (place = MACHINE or RACK, m RUs) on a cluster whose only
 * group with room for it is the group of RU 0, [0, m), plus one free RU `lone` in another
 * group; `lost` in [0, m) is taken behind the agent's back. The task gets the m - 1 others
 * in group 0 and nothing of lone's group; with them listed as held, its remainder waits
 * (RUSK_EAGAIN) though lone's group gains a second free RU, until `lost` is released, then
 * gets exactly that RU.
 */
static void check_locality(rusk_strategy s, uint8_t place, uint32_t per_rack, uint32_t m,
                           uint32_t lone, uint32_t lost)
{
	rusk_cluster *c = make(8, 4, per_rack);
	rusk_lease other[32];
	uint32_t keep[17];
	for (uint32_t r = 0; r < m; r++)
		keep[r] = r;
	keep[m] = lone;
	other_take_all_but(c, other, keep, m + 1);
	rusk_agent *a = agent(c, s);
	other_take(c, other, lost); /* the view still shows it free */
	rusk_task t = {.id = 77, .rus = m, .gang = false, .placement = place};
	rusk_lease l[16];
	rusk_placement pl;
	assert_int_equal(place_retry(a, &t, l, &pl), RUSK_OK);
	/* Today's bug: m - 1 in group 0 plus lone. */
	assert_int_equal(pl.placed, m - 1);
	for (uint32_t i = 0; i < pl.placed; i++) {
		assert_true(l[i].ru < m && l[i].ru != lost);
		assert_int_equal(owner(c, l[i].ru), 77);
	}
	assert_int_equal(owner(c, lone), 0); /* never split */
	assert_true(pl.conflicts >= 1);

	/* The rest, with what it holds: nothing in group 0 is free. */
	rusk_task rest = {.id = 77, .rus = 1, .gang = false, .placement = place};
	rest.held = l;
	rest.n_held = m - 1;
	sync_all(a, c);
	uint32_t ru;
	assert_int_equal(rusk_agent_choose(a, &rest, &ru, &pl), RUSK_EAGAIN);
	assert_int_equal(rusk_agent_place(a, &rest, l + m - 1, &pl), RUSK_EAGAIN);
	assert_int_equal(pl.placed, 0);
	assert_int_equal(owner(c, lone), 0);
	/* A second free RU beside lone changes nothing. */
	uint32_t beside = lone + 1;
	other_release(c, other, beside);
	sync_all(a, c);
	assert_int_equal(rusk_agent_place(a, &rest, l + m - 1, &pl), RUSK_EAGAIN);
	assert_int_equal(owner(c, lone), 0);
	assert_int_equal(owner(c, beside), 0);
	/* The RU of group 0 comes free: the remainder gets exactly it. */
	other_release(c, other, lost);
	sync_all(a, c);
	assert_int_equal(rusk_agent_choose(a, &rest, &ru, &pl), RUSK_OK);
	assert_int_equal(ru, lost);
	assert_int_equal(rusk_agent_place(a, &rest, l + m - 1, &pl), RUSK_OK);
	assert_int_equal(pl.placed, 1);
	assert_int_equal(l[m - 1].ru, lost);
	for (uint32_t i = 0; i < m; i++) {
		if (place == RUSK_PLACE_MACHINE)
			assert_int_equal(machine_of(c, l[i].ru), machine_of(c, l[0].ru));
		else
			assert_int_equal(rack_of(c, l[i].ru), rack_of(c, l[0].ru));
	}
	assert_int_equal(rusk_agent_release(a, 77, l, m, NULL), RUSK_OK);
	other_release_all(c, other);
	rusk_agent_destroy(a);
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cluster_free_rus(c), 32);
	rusk_cluster_destroy(c);
}

/* (a) The case: a 4-RU whole-machine task, 3 RUs free on machine 0 (RU 2 lost to
 * another scheduler), 1 on machine 1 (RU 4). */
static void test_machine_never_split(void **state)
{
	(void)state;
	for (size_t k = 0; k < N_LOCK_FREE; k++)
		check_locality(lock_free[k], RUSK_PLACE_MACHINE, 2, 4, 4, 2);
}

/* (b) The same for a rack: racks of two machines (8 RUs), rack 0 short of RU 5, one RU
 * free in rack 1 (RU 8). */
static void test_rack_never_split(void **state)
{
	(void)state;
	for (size_t k = 0; k < N_LOCK_FREE; k++)
		check_locality(lock_free[k], RUSK_PLACE_RACK, 2, 8, 8, 5);
}

/*
 * (c) Spread: 4 machines of 2 RUs; free are both RUs of machines 0 and 1 and RU 4 of
 * machine 2, which another scheduler takes behind the agent's back. A 3-RU spread task gets
 * one RU on machine 0 and one on machine 1, never a second on either; listed as held, its
 * remainder waits until RU 4 is free and then gets it.
 */
static void test_spread_avoids_held(void **state)
{
	(void)state;
	for (size_t k = 0; k < N_LOCK_FREE; k++) {
		rusk_cluster *c = make(4, 2, 4);
		rusk_lease other[8], l[3];
		const uint32_t keep[] = {0, 1, 2, 3, 4};
		other_take_all_but(c, other, keep, 5);
		rusk_agent *a = agent(c, lock_free[k]);
		other_take(c, other, 4);
		rusk_task t = {.id = 55, .rus = 3, .gang = false, .placement = RUSK_PLACE_SPREAD};
		rusk_placement pl;
		assert_int_equal(place_retry(a, &t, l, &pl), RUSK_OK);
		assert_int_equal(pl.placed, 2); /* today: a second RU on machine 0 or 1 */
		assert_int_not_equal(machine_of(c, l[0].ru), machine_of(c, l[1].ru));
		assert_true(l[0].ru < 4 && l[1].ru < 4);
		rusk_task rest = {.id = 55, .rus = 1, .placement = RUSK_PLACE_SPREAD};
		rest.held = l;
		rest.n_held = 2;
		sync_all(a, c); /* the other RUs of machines 0 and 1 are free in the view */
		uint32_t ru;
		assert_int_equal(rusk_agent_choose(a, &rest, &ru, &pl), RUSK_EAGAIN);
		assert_int_equal(rusk_agent_place(a, &rest, l + 2, &pl), RUSK_EAGAIN);
		other_release(c, other, 4);
		sync_all(a, c);
		assert_int_equal(rusk_agent_place(a, &rest, l + 2, &pl), RUSK_OK);
		assert_int_equal(pl.placed, 1);
		assert_int_equal(l[2].ru, 4);
		assert_int_equal(rusk_agent_release(a, 55, l, 3, NULL), RUSK_OK);
		/* A larger cluster: held on 6 of 16 machines, 5 more wanted, each elsewhere. */
		other_release_all(c, other);
		rusk_agent_destroy(a);
		rusk_cluster_destroy(c);
		c = make(16, 2, 4);
		a = agent(c, lock_free[k]);
		rusk_lease h[11];
		for (uint32_t i = 0; i < 6; i++)
			assert_int_equal(rusk_ru_commit(c, 56, 2 * i, NULL, &h[i]), RUSK_OK);
		sync_all(a, c);
		rusk_task big = {.id = 56, .rus = 5, .gang = true, .placement = RUSK_PLACE_SPREAD};
		big.held = h;
		big.n_held = 6;
		assert_int_equal(place_retry(a, &big, h + 6, &pl), RUSK_OK);
		assert_int_equal(pl.placed, 5);
		for (uint32_t i = 0; i < 11; i++)
			for (uint32_t j = 0; j < i; j++)
				assert_int_not_equal(machine_of(c, h[i].ru),
				                     machine_of(c, h[j].ru));
		assert_int_equal(rusk_agent_release(a, 56, h, 11, NULL), RUSK_OK);
		rusk_agent_destroy(a);
		assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
		assert_int_equal(rusk_cluster_free_rus(c), 32);
		rusk_cluster_destroy(c);
	}
}

/*
 * Held RUs with the central baseline (master scan, no retries) and with gang tasks: machine
 * 0 (RUs 0..3) holds RU 0 of the task, RU 2 is another's, machines 1.. are free. The
 * remainder stays on machine 0 (incremental: the 2 it has; gang: all or RUSK_EAGAIN), in
 * rack 0 for rack placement, off machine 0 for spread; any placement goes anywhere.
 */
static void test_held_central_and_gang(void **state)
{
	(void)state;
	static const rusk_strategy all[] = {RUSK_STRATEGY_LATENCY, RUSK_STRATEGY_QUALITY,
	                                    RUSK_STRATEGY_RANDOM, RUSK_STRATEGY_CENTRAL};
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
		rusk_cluster *c = make(8, 4, 2);
		rusk_agent *a = agent(c, all[k]);
		rusk_lease other[32], l[8];
		assert_int_equal(rusk_ru_commit(c, 90, 0, NULL, &l[0]), RUSK_OK);
		other_take(c, other, 2);
		sync_all(a, c);
		rusk_placement pl;
		/* machine, incremental: 3 wanted, the 2 there are */
		rusk_task t = {.id = 90, .rus = 3, .placement = RUSK_PLACE_MACHINE};
		t.held = l;
		t.n_held = 1;
		t.gang = true;
		assert_int_equal(rusk_agent_place(a, &t, l + 1, &pl), RUSK_EAGAIN);
		t.gang = false;
		assert_int_equal(rusk_agent_place(a, &t, l + 1, &pl), RUSK_OK);
		assert_int_equal(pl.placed, 2);
		assert_true((l[1].ru == 1 && l[2].ru == 3) || (l[1].ru == 3 && l[2].ru == 1));
		assert_int_equal(rusk_agent_release(a, 90, l + 1, 2, NULL), RUSK_OK);
		sync_all(a, c);
		/* machine, gang of 2: both there */
		t.rus = 2;
		t.gang = true;
		assert_int_equal(rusk_agent_place(a, &t, l + 1, &pl), RUSK_OK);
		assert_int_equal(pl.placed, 2);
		assert_true(machine_of(c, l[1].ru) == 0 && machine_of(c, l[2].ru) == 0);
		assert_int_equal(rusk_agent_release(a, 90, l + 1, 2, NULL), RUSK_OK);
		sync_all(a, c);
		/* rack (machines 0 and 1): 6 wanted, 6 free there */
		t.placement = RUSK_PLACE_RACK;
		t.rus = 7;
		assert_int_equal(rusk_agent_place(a, &t, l + 1, &pl), RUSK_EAGAIN);
		t.gang = false;
		assert_int_equal(rusk_agent_place(a, &t, l + 1, &pl), RUSK_OK);
		assert_int_equal(pl.placed, 6);
		for (uint32_t i = 1; i <= 6; i++)
			assert_int_equal(rack_of(c, l[i].ru), 0);
		assert_int_equal(rusk_agent_release(a, 90, l + 1, 6, NULL), RUSK_OK);
		sync_all(a, c);
		/* spread: off machine 0 */
		t.placement = RUSK_PLACE_SPREAD;
		t.rus = 7;
		t.gang = true;
		assert_int_equal(rusk_agent_place(a, &t, l + 1, &pl), RUSK_OK);
		for (uint32_t i = 0; i <= 7; i++)
			for (uint32_t j = 0; j < i; j++)
				assert_int_not_equal(machine_of(c, l[i].ru),
				                     machine_of(c, l[j].ru));
		assert_int_equal(rusk_agent_release(a, 90, l + 1, 7, NULL), RUSK_OK);
		sync_all(a, c);
		/* any: anywhere, machine 0's free RUs included: all 30 free RUs */
		t.placement = RUSK_PLACE_ANY;
		t.rus = 30;
		rusk_lease many[30];
		assert_int_equal(rusk_agent_place(a, &t, many, &pl), RUSK_OK);
		assert_int_equal(pl.placed, 30);
		assert_int_equal(owner(c, 1), 90);
		assert_int_equal(owner(c, 3), 90);
		assert_int_equal(rusk_agent_release(a, 90, many, 30, NULL), RUSK_OK);
		assert_int_equal(rusk_agent_release(a, 90, l, 1, NULL), RUSK_OK);
		other_release(c, other, 2);
		rusk_agent_destroy(a);
		assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
		assert_int_equal(rusk_cluster_free_rus(c), 32);
		rusk_cluster_destroy(c);
	}
}

/* (d) rusk_task_check's refusals of a held list, and place()'s pl->invalid, on 40 machines
 * of 4 RUs in racks of 10 plus 10 spare slots (which count toward rack slots). */
static void test_held_check(void **state)
{
	(void)state;
	rusk_cluster *c = fx_cluster((fx_shape){.machines = 40,
	                                        .spare = 10,
	                                        .rus = 4,
	                                        .per_rack = 10,
	                                        .per_cell = 1,
	                                        .partitions = 1});
	rusk_agent *a = agent(c, RUSK_STRATEGY_LATENCY);
	const rusk_lease m0[] = {{.ru = 0}, {.ru = 3}};       /* machine 0, rack 0 */
	const rusk_lease two_m[] = {{.ru = 0}, {.ru = 4}};    /* machines 0, 1; rack 0 */
	const rusk_lease two_r[] = {{.ru = 0}, {.ru = 40}};   /* racks 0 and 1 */
	const rusk_lease out[] = {{.ru = 0}, {.ru = 50 * 4}}; /* past the last RU */
	const rusk_lease r4[] = {{.ru = 160}, {.ru = 165}};   /* rack 4: spares only */
	rusk_vec_demand vec = {.mem_mib = 1024};
	struct {
		rusk_task t;
		int rc;
		const char *field;
	} cases[] = {
	        /* malformed lists */
	        {{.id = 1, .rus = 1, .n_held = 1}, RUSK_EINVAL, "held"},
	        {{.id = 1, .rus = 1, .held = out, .n_held = 2}, RUSK_EINVAL, "held"},
	        {{.id = 1, .rus = 1, .placement = RUSK_PLACE_MACHINE, .held = two_m, .n_held = 2},
	         RUSK_EINVAL,
	         "held"},
	        {{.id = 1, .rus = 1, .placement = RUSK_PLACE_RACK, .held = two_r, .n_held = 2},
	         RUSK_EINVAL,
	         "held"},
	        {{.id = 1,
	          .rus = 1,
	          .gang = true,
	          .placement = RUSK_PLACE_MACHINE,
	          .vec = vec,
	          .held = m0,
	          .n_held = 2},
	         RUSK_EINVAL,
	         "held"},
	        /* more than the slots beside them */
	        {{.id = 1, .rus = 3, .placement = RUSK_PLACE_MACHINE, .held = m0, .n_held = 2},
	         RUSK_EINFEASIBLE,
	         "rus"},
	        {{.id = 1, .rus = 39, .placement = RUSK_PLACE_RACK, .held = two_m, .n_held = 2},
	         RUSK_EINFEASIBLE,
	         "rus"},
	        {{.id = 1, .rus = 49, .placement = RUSK_PLACE_SPREAD, .held = two_r, .n_held = 2},
	         RUSK_EINFEASIBLE,
	         "rus"},
	        {{.id = 1, .rus = 199, .placement = RUSK_PLACE_ANY, .held = two_r, .n_held = 2},
	         RUSK_EINFEASIBLE,
	         "rus"},
	        /* fine: exactly the slots, other machines of one rack, held without n_held,
	         * a rack of spares only (they may come up) */
	        {{.id = 1, .rus = 2, .placement = RUSK_PLACE_MACHINE, .held = m0, .n_held = 2},
	         RUSK_OK,
	         NULL},
	        {{.id = 1, .rus = 38, .placement = RUSK_PLACE_RACK, .held = two_m, .n_held = 2},
	         RUSK_OK,
	         NULL},
	        {{.id = 1, .rus = 48, .placement = RUSK_PLACE_SPREAD, .held = two_r, .n_held = 2},
	         RUSK_OK,
	         NULL},
	        {{.id = 1, .rus = 1, .placement = RUSK_PLACE_MACHINE, .held = two_m},
	         RUSK_OK,
	         NULL},
	        {{.id = 1, .rus = 38, .placement = RUSK_PLACE_RACK, .held = r4, .n_held = 2},
	         RUSK_OK,
	         NULL},
	};
	char err[256];
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		int rc = rusk_task_check(c, &cases[k].t, err, sizeof err);
		if (rc != cases[k].rc)
			fail_msg("case %zu: %s, expected %s (%s)", k, rusk_strerror(rc),
			         rusk_strerror(cases[k].rc), err);
		if (cases[k].field == NULL) {
			assert_string_equal(err, "");
			continue;
		}
		assert_non_null(strstr(err, cases[k].field));
		rusk_lease l[64];
		rusk_placement pl;
		assert_int_equal(rusk_agent_place(a, &cases[k].t, l, &pl), cases[k].rc);
		assert_string_equal(pl.invalid, cases[k].field);
		uint32_t rus[64];
		assert_int_equal(rusk_agent_choose(a, &cases[k].t, rus, &pl), cases[k].rc);
		assert_string_equal(pl.invalid, cases[k].field);
	}
	/* The spare rack's remainder waits for its machines (RUSK_EAGAIN, not infeasible). */
	rusk_lease l[64];
	rusk_placement pl;
	rusk_task spare = cases[sizeof cases / sizeof cases[0] - 1].t;
	assert_int_equal(rusk_agent_place(a, &spare, l, &pl), RUSK_EAGAIN);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_machine_never_split),
	        cmocka_unit_test(test_rack_never_split),
	        cmocka_unit_test(test_spread_avoids_held),
	        cmocka_unit_test(test_held_central_and_gang),
	        cmocka_unit_test(test_held_check),
	};
	rusk_thread_register();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
