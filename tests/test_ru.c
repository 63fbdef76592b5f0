/* SPDX-License-Identifier: MIT */
/* Master RU array semantics, single-threaded: commit/release, misuse, gang, incremental,
 * counters and interference sums. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

static int setup(void **state)
{
	/* 400 machines: 10 racks, 2 cells */
	*state = fx_cluster((fx_shape){.machines = 400, .rus = 16, .partitions = 2});
	return 0;
}

static int teardown(void **state)
{
	rusk_cluster_destroy(*state);
	return 0;
}

static void assert_consistent(rusk_cluster *c)
{
	char err[256];
	int rc = rusk_cluster_verify(c, err, sizeof err);
	if (rc != RUSK_OK)
		fail_msg("verify: %s", err);
}

static uint32_t machine_free(rusk_cluster *c, uint32_t m)
{
	rusk_machine_info mi;
	rusk_cluster_machine(c, m, &mi);
	return mi.free_rus;
}

static void test_commit_release(void **state)
{
	rusk_cluster *c = *state;
	rusk_lease l;
	assert_int_equal(rusk_ru_commit(c, 7, 33, NULL, &l), RUSK_OK);
	assert_int_equal(l.ru, 33);
	rusk_ru_info s;
	assert_int_equal(rusk_ru_state(c, 33, &s), RUSK_OK);
	assert_int_equal(s.owner, 7);
	assert_int_equal(s.gen, l.gen);
	assert_int_equal(machine_free(c, 2), 15);
	assert_int_equal(rusk_cluster_free_rus(c), 6400 - 1);
	assert_consistent(c);
	/* Another task loses; the same task is told it already holds it. */
	rusk_lease l2;
	assert_int_equal(rusk_ru_commit(c, 8, 33, NULL, &l2), RUSK_ECONFLICT);
	assert_int_equal(rusk_ru_commit(c, 7, 33, NULL, &l2), RUSK_EDUP);
	assert_int_equal(rusk_ru_release(c, 7, l), RUSK_OK);
	assert_int_equal(rusk_ru_state(c, 33, &s), RUSK_OK);
	assert_int_equal(s.owner, 0);
	assert_int_equal(s.gen, l.gen + 1);
	assert_int_equal(machine_free(c, 2), 16);
	assert_int_equal(rusk_cluster_free_rus(c), 6400);
	assert_consistent(c);
}

static void test_double_foreign_stale(void **state)
{
	rusk_cluster *c = *state;
	rusk_lease a, b;
	assert_int_equal(rusk_ru_commit(c, 11, 100, NULL, &a), RUSK_OK);
	/* foreign release: rejected and nothing changes */
	assert_int_equal(rusk_ru_release(c, 12, a), RUSK_ENOTOWNER);
	rusk_ru_info s;
	rusk_ru_state(c, 100, &s);
	assert_int_equal(s.owner, 11);
	assert_consistent(c);
	assert_int_equal(rusk_ru_release(c, 11, a), RUSK_OK);
	/* double release */
	assert_int_equal(rusk_ru_release(c, 11, a), RUSK_EFREE);
	assert_consistent(c);
	/* ABA: the same task takes the RU again; the old lease is stale, not live */
	assert_int_equal(rusk_ru_commit(c, 11, 100, NULL, &b), RUSK_OK);
	assert_int_not_equal(a.gen, b.gen);
	assert_int_equal(rusk_ru_release(c, 11, a), RUSK_ESTALE);
	rusk_ru_state(c, 100, &s);
	assert_int_equal(s.owner, 11);
	assert_int_equal(rusk_ru_release(c, 11, b), RUSK_OK);
	assert_consistent(c);
}

static void test_bad_arguments(void **state)
{
	rusk_cluster *c = *state;
	rusk_lease l;
	assert_int_equal(rusk_ru_commit(c, 0, 1, NULL, &l), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit(c, RUSK_TASK_ID_MAX + 1, 1, NULL, &l), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit(c, 1, 6400, NULL, &l), RUSK_ERANGE);
	assert_int_equal(rusk_ru_commit(c, 1, 1, NULL, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit(NULL, 1, 1, NULL, &l), RUSK_EINVAL);
	rusk_profile bad = {{0, 0, 100}};
	assert_int_equal(rusk_ru_commit(c, 1, 1, &bad, &l), RUSK_EINVAL);
	assert_int_equal(rusk_ru_release(c, 1, (rusk_lease){6400, 0}), RUSK_ERANGE);
	assert_int_equal(rusk_ru_release(c, 1, (rusk_lease){1, RUSK_GEN_MASK + 1}), RUSK_EINVAL);
	assert_int_equal(rusk_ru_release(c, 0, (rusk_lease){1, 0}), RUSK_EINVAL);
	uint32_t rus[2] = {1, 6400};
	rusk_lease ls[2];
	size_t n;
	assert_int_equal(rusk_ru_commit_gang(c, 1, rus, 2, NULL, ls, NULL), RUSK_ERANGE);
	assert_int_equal(rusk_ru_commit_incremental(c, 1, rus, 2, NULL, ls, &n), RUSK_ERANGE);
	assert_int_equal(rusk_ru_commit_incremental(c, 1, rus, 1, NULL, ls, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_gang(c, 1, NULL, 2, NULL, ls, NULL), RUSK_EINVAL);
	/* nothing was taken by any of the failures */
	assert_int_equal(rusk_cluster_free_rus(c), 6400);
	assert_consistent(c);
	assert_string_equal(rusk_strerror(RUSK_EFREE), "RU already free (double release)");
	assert_string_equal(rusk_strerror(12345), "unknown rusk error");
}

static void test_gang_rollback(void **state)
{
	rusk_cluster *c = *state;
	rusk_lease blocker, ls[8];
	/* task 50 holds RU 21; a gang of 16..23 must fail at index 5 and keep nothing */
	assert_int_equal(rusk_ru_commit(c, 50, 21, NULL, &blocker), RUSK_OK);
	uint32_t rus[8] = {16, 17, 18, 19, 20, 21, 22, 23};
	rusk_profile prof = {{10, 20, 30, 40, 50, 60, 70, 80, 90, 99}};
	size_t lost = 99;
	assert_int_equal(rusk_ru_commit_gang(c, 51, rus, 8, &prof, ls, &lost), RUSK_ECONFLICT);
	assert_int_equal(lost, 5);
	for (int i = 0; i < 8; i++) {
		rusk_ru_info s;
		rusk_ru_state(c, rus[i], &s);
		assert_int_equal(s.owner, i == 5 ? 50u : 0u);
	}
	rusk_machine_info mi;
	rusk_cluster_machine(c, 1, &mi);
	assert_int_equal(mi.free_rus, 15);
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		assert_int_equal(mi.interference[i], 0); /* the rollback removed the profile */
	assert_consistent(c);
	/* The gang wins once the blocker is gone. */
	assert_int_equal(rusk_ru_release(c, 50, blocker), RUSK_OK);
	assert_int_equal(rusk_ru_commit_gang(c, 51, rus, 8, &prof, ls, &lost), RUSK_OK);
	for (int i = 0; i < 8; i++)
		assert_int_equal(ls[i].ru, rus[i]);
	rusk_cluster_machine(c, 1, &mi);
	assert_int_equal(mi.free_rus, 8);
	assert_int_equal(mi.interference[0], 8 * 10);
	assert_int_equal(mi.interference[9], 8 * 99);
	assert_consistent(c);
	size_t rejected = 9;
	assert_int_equal(rusk_ru_release_many(c, 51, ls, 8, &rejected), RUSK_OK);
	assert_int_equal(rejected, 0);
	/* releasing them again: every one rejected, first error reported */
	assert_int_equal(rusk_ru_release_many(c, 51, ls, 8, &rejected), RUSK_EFREE);
	assert_int_equal(rejected, 8);
	assert_consistent(c);
}

static void test_gang_duplicate(void **state)
{
	rusk_cluster *c = *state;
	uint32_t rus[3] = {40, 41, 40};
	rusk_lease ls[3];
	size_t lost;
	assert_int_equal(rusk_ru_commit_gang(c, 60, rus, 3, NULL, ls, &lost), RUSK_EDUP);
	assert_int_equal(lost, 2);
	assert_int_equal(rusk_cluster_free_rus(c), 6400);
	size_t won;
	assert_int_equal(rusk_ru_commit_incremental(c, 60, rus, 3, NULL, ls, &won), RUSK_EDUP);
	assert_int_equal(won, 0);
	assert_int_equal(rusk_cluster_free_rus(c), 6400);
	assert_consistent(c);
}

static void test_incremental_keeps_winners(void **state)
{
	rusk_cluster *c = *state;
	rusk_lease b1, b2, ls[6];
	assert_int_equal(rusk_ru_commit(c, 70, 201, NULL, &b1), RUSK_OK);
	assert_int_equal(rusk_ru_commit(c, 70, 204, NULL, &b2), RUSK_OK);
	uint32_t rus[6] = {200, 201, 202, 203, 204, 205};
	size_t won = 0;
	assert_int_equal(rusk_ru_commit_incremental(c, 71, rus, 6, NULL, ls, &won), RUSK_OK);
	assert_int_equal(won, 4);
	uint32_t expect[4] = {200, 202, 203, 205};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(ls[i].ru, expect[i]);
		rusk_ru_info s;
		rusk_ru_state(c, expect[i], &s);
		assert_int_equal(s.owner, 71);
	}
	assert_int_equal(rusk_cluster_free_rus(c), 6400 - 6);
	assert_consistent(c);
	assert_int_equal(rusk_ru_release_many(c, 71, ls, won, NULL), RUSK_OK);
	assert_int_equal(rusk_ru_release(c, 70, b1), RUSK_OK);
	assert_int_equal(rusk_ru_release(c, 70, b2), RUSK_OK);
	assert_consistent(c);
}

static void test_interference_sums(void **state)
{
	rusk_cluster *c = *state;
	/* Three tenants on machine 10 (RUs 160..175); sums are eq. 3 numerators. */
	rusk_profile p1 = {{99, 0, 1, 2, 3, 4, 5, 6, 7, 8}};
	rusk_profile p2 = {{99, 99, 99, 99, 99, 99, 99, 99, 99, 99}};
	rusk_lease l1, l2, l3;
	assert_int_equal(rusk_ru_commit(c, 80, 160, &p1, &l1), RUSK_OK);
	assert_int_equal(rusk_ru_commit(c, 81, 161, &p2, &l2), RUSK_OK);
	assert_int_equal(rusk_ru_commit(c, 82, 162, NULL, &l3), RUSK_OK);
	rusk_machine_info mi;
	rusk_cluster_machine(c, 10, &mi);
	assert_int_equal(mi.interference[0], 198);
	assert_int_equal(mi.interference[1], 99);
	assert_int_equal(mi.interference[9], 107);
	assert_consistent(c);
	assert_int_equal(rusk_ru_release(c, 81, l2), RUSK_OK);
	rusk_cluster_machine(c, 10, &mi);
	assert_int_equal(mi.interference[0], 99);
	assert_int_equal(mi.interference[9], 8);
	/* A refused release must not touch the sums. */
	assert_int_equal(rusk_ru_release(c, 81, l2), RUSK_EFREE);
	assert_int_equal(rusk_ru_release(c, 99, l1), RUSK_ENOTOWNER);
	rusk_cluster_machine(c, 10, &mi);
	assert_int_equal(mi.interference[0], 99);
	assert_consistent(c);
	/* Full machine of the heaviest tenants: lanes do not spill into each other. */
	rusk_lease full[16];
	uint32_t rus[13];
	for (int i = 0; i < 13; i++)
		rus[i] = 163 + (uint32_t)i;
	assert_int_equal(rusk_ru_commit_gang(c, 83, rus, 13, &p2, full, NULL), RUSK_OK);
	rusk_cluster_machine(c, 10, &mi);
	assert_int_equal(mi.interference[0], 99 + 13 * 99);
	assert_int_equal(mi.interference[1], 13 * 99);
	assert_int_equal(mi.free_rus, 1); /* RU 161 was released above */
	assert_consistent(c);
	assert_int_equal(rusk_ru_release_many(c, 83, full, 13, NULL), RUSK_OK);
	assert_int_equal(rusk_ru_release(c, 80, l1), RUSK_OK);
	assert_int_equal(rusk_ru_release(c, 82, l3), RUSK_OK);
	rusk_cluster_machine(c, 10, &mi);
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		assert_int_equal(mi.interference[i], 0);
	assert_consistent(c);
}

static void test_generation_wraps(void **state)
{
	(void)state;
	rusk_cluster *c = fx_cluster((fx_shape){.machines = 1, .rus = 1, .partitions = 1});
	rusk_lease l = {0, 0};
	for (uint32_t i = 0; i <= RUSK_GEN_MASK; i++) {
		if (rusk_ru_commit(c, 1, 0, NULL, &l) != RUSK_OK || l.gen != i)
			fail_msg("commit %u gave gen %u", i, l.gen);
		if (rusk_ru_release(c, 1, l) != RUSK_OK)
			fail_msg("release %u", i);
	}
	assert_int_equal(rusk_ru_commit(c, 1, 0, NULL, &l), RUSK_OK);
	assert_int_equal(l.gen, 0); /* wrapped */
	assert_int_equal(rusk_ru_release(c, 1, l), RUSK_OK);
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	rusk_cluster_destroy(c);
}

static void test_clock(void **state)
{
	rusk_cluster *c = *state;
	const rusk_clock *clk = rusk_cluster_clock(c);
	assert_ptr_equal(clk, rusk_clock_monotonic());
	uint64_t a = rusk_clock_now(clk), b = rusk_clock_now(clk);
	assert_true(b >= a);
}

static uint64_t fake_now(void *ctx)
{
	return *(uint64_t *)ctx;
}

static void test_virtual_clock(void **state)
{
	(void)state;
	uint64_t t = 12345;
	rusk_clock vc = {fake_now, &t};
	rusk_cluster *c = fx_cluster((fx_shape){.machines = 40, .partitions = 1, .clock = &vc});
	assert_int_equal(rusk_clock_now(rusk_cluster_clock(c)), 12345);
	t = 99;
	assert_int_equal(rusk_clock_now(rusk_cluster_clock(c)), 99);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_commit_release, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_double_foreign_stale, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_gang_rollback, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_gang_duplicate, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_incremental_keeps_winners, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_interference_sums, setup, teardown),
	        cmocka_unit_test(test_generation_wraps),
	        cmocka_unit_test_setup_teardown(test_clock, setup, teardown),
	        cmocka_unit_test(test_virtual_clock),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
