/* SPDX-License-Identifier: MIT */
/*
 * Quota groups' allocation math (rusk/quota.h, core/kernel/quota.c): weighted DRF
 * progressive filling with minimums, maximums and demand caps, on cases computed by hand in
 * the comments; the fairness check accepts each result and refuses perturbed ones; bad
 * configurations are refused with a message naming the group and dimension.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <rusk/rusk.h>

#define U RUSK_QUOTA_UNLIMITED

static rusk_quota_group grp(double w, uint64_t min_rus, uint64_t max_rus)
{
	rusk_quota_group g = {w, {{min_rus, 0, 0}}, {{max_rus, U, U}}};
	return g;
}

static void expect_rus(const rusk_quota_vec *out, const uint64_t *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		print_message("group %zu: rus %llu (want %llu)\n", i,
		              (unsigned long long)out[i].v[RUSK_QUOTA_RUS],
		              (unsigned long long)want[i]);
		assert_int_equal(out[i].v[RUSK_QUOTA_RUS], want[i]);
	}
}

static void verified(const rusk_quota_vec *cap, const rusk_quota_group *g, size_t n,
                     const rusk_quota_vec *dem, const rusk_quota_vec *out)
{
	char err[256];
	int rc = rusk_quota_verify(cap, g, n, dem, out, NULL, err, sizeof err);
	if (rc != RUSK_OK)
		print_message("verify: %s\n", err);
	assert_int_equal(rc, RUSK_OK);
}

/* 1:2:4, all overloaded (each wants the whole cluster): 700 RUs split 100/200/400, and the
 * memory along each group's direction (700 MiB wanted per 700 RUs) the same. */
static void test_weights_overloaded(void **state)
{
	(void)state;
	rusk_quota_vec cap = {{700, 7000, 0}};
	rusk_quota_group g[3] = {grp(1, 0, U), grp(2, 0, U), grp(4, 0, U)};
	rusk_quota_vec dem[3] = {{{700, 700, 0}}, {{700, 700, 0}}, {{700, 700, 0}}}, out[3];
	assert_int_equal(rusk_quota_allocate(&cap, g, 3, dem, out), RUSK_OK);
	expect_rus(out, (const uint64_t[]){100, 200, 400}, 3);
	assert_int_equal(out[2].v[RUSK_QUOTA_MEM], 400);
	assert_int_equal(out[0].v[RUSK_QUOTA_GPU], 0);
	verified(&cap, g, 3, dem, out);
	/* a demand beyond the cluster keeps its direction: 10x the demand, same split */
	for (int i = 0; i < 3; i++)
		dem[i] = (rusk_quota_vec){{7000, 7000, 0}};
	assert_int_equal(rusk_quota_allocate(&cap, g, 3, dem, out), RUSK_OK);
	expect_rus(out, (const uint64_t[]){100, 200, 400}, 3);
	assert_int_equal(out[1].v[RUSK_QUOTA_MEM], 200);
	verified(&cap, g, 3, dem, out);
	/* moving 10 RUs from group 0 to group 2 is unfair: the check says so */
	out[0].v[0] -= 10;
	out[2].v[0] += 10;
	char err[256];
	assert_int_equal(rusk_quota_verify(&cap, g, 3, dem, out, NULL, err, sizeof err),
	                 RUSK_EINVAL);
	assert_non_null(strstr(err, "group 0 wants more rus"));
	/* ... unless the slack covers it */
	rusk_quota_vec slack = {{10, 10, 0}};
	assert_int_equal(rusk_quota_verify(&cap, g, 3, dem, out, &slack, NULL, 0), RUSK_OK);
}

/* Group 1 idle: its share goes to groups 0 and 2 in proportion 1:4 (140 / 560). */
static void test_idle_redistributed(void **state)
{
	(void)state;
	rusk_quota_vec cap = {{700, 7000, 0}};
	rusk_quota_group g[3] = {grp(1, 0, U), grp(2, 0, U), grp(4, 0, U)};
	rusk_quota_vec dem[3] = {{{700, 0, 0}}, {{0, 0, 0}}, {{700, 0, 0}}}, out[3];
	assert_int_equal(rusk_quota_allocate(&cap, g, 3, dem, out), RUSK_OK);
	expect_rus(out, (const uint64_t[]){140, 0, 560}, 3);
	verified(&cap, g, 3, dem, out);
}

/* Group 0 has a minimum of 300 RUs: it keeps 300, the other 400 go 1:2 between groups 1 and
 * 2... no: group 0's fill only passes 300 at t = 300/700 while groups 1 and 2 fill the rest
 * first (1400 t + 2800 t = 400 at t = 2/21): 133.3 and 266.7, rounded down to 133 and 266. */
static void test_minimum_met(void **state)
{
	(void)state;
	rusk_quota_vec cap = {{700, 0, 0}};
	rusk_quota_group g[3] = {grp(1, 300, U), grp(2, 0, U), grp(4, 0, U)};
	rusk_quota_vec dem[3] = {{{700, 0, 0}}, {{700, 0, 0}}, {{700, 0, 0}}}, out[3];
	assert_int_equal(rusk_quota_allocate(&cap, g, 3, dem, out), RUSK_OK);
	expect_rus(out, (const uint64_t[]){300, 133, 266}, 3);
	verified(&cap, g, 3, dem, out);
	/* a minimum the group does not want is not held for it: demand 50 gets 50, the other
	 * 650 go 2:4 (216.7 / 433.3) */
	dem[0].v[0] = 50;
	assert_int_equal(rusk_quota_allocate(&cap, g, 3, dem, out), RUSK_OK);
	expect_rus(out, (const uint64_t[]){50, 216, 433}, 3);
	verified(&cap, g, 3, dem, out);
	/* taking group 0 below its floor fails the check */
	dem[0].v[0] = 700;
	assert_int_equal(rusk_quota_allocate(&cap, g, 3, dem, out), RUSK_OK);
	out[0].v[0] = 299;
	out[2].v[0]++;
	char err[256];
	assert_int_equal(rusk_quota_verify(&cap, g, 3, dem, out, NULL, err, sizeof err),
	                 RUSK_EINVAL);
	assert_non_null(strstr(err, "below its floor"));
}

/* Group 2's maximum is 200 RUs: it stops there (at t = 1/14, when groups 0 and 1 hold 50
 * and 100), and the other 500 go 1:2 to groups 0 and 1: 166.7 and 333.3. */
static void test_maximum_respected(void **state)
{
	(void)state;
	rusk_quota_vec cap = {{700, 0, 0}};
	rusk_quota_group g[3] = {grp(1, 0, U), grp(2, 0, U), grp(4, 0, 200)};
	rusk_quota_vec dem[3] = {{{700, 0, 0}}, {{700, 0, 0}}, {{700, 0, 0}}}, out[3];
	assert_int_equal(rusk_quota_allocate(&cap, g, 3, dem, out), RUSK_OK);
	expect_rus(out, (const uint64_t[]){166, 333, 200}, 3);
	verified(&cap, g, 3, dem, out);
	out[2].v[0] = 201;
	out[1].v[0]--;
	char err[256];
	assert_int_equal(rusk_quota_verify(&cap, g, 3, dem, out, NULL, err, sizeof err),
	                 RUSK_EINVAL);
	assert_non_null(strstr(err, "above min(max, demand)"));
}

/* Demands below the fair share: everybody gets its demand and capacity is left over. */
static void test_demands_below_share(void **state)
{
	(void)state;
	rusk_quota_vec cap = {{700, 1000, 4000}};
	rusk_quota_group g[3] = {grp(1, 0, U), grp(2, 0, U), grp(4, 0, U)};
	rusk_quota_vec dem[3] = {{{10, 20, 0}}, {{30, 0, 500}}, {{100, 100, 1000}}}, out[3];
	assert_int_equal(rusk_quota_allocate(&cap, g, 3, dem, out), RUSK_OK);
	for (int i = 0; i < 3; i++)
		for (int d = 0; d < RUSK_QUOTA_DIMS; d++)
			assert_int_equal(out[i].v[d], dem[i].v[d]);
	verified(&cap, g, 3, dem, out);
	/* claiming the dimension is blocked when there is room left fails the check */
	out[0].v[0] = 5;
	char err[256];
	assert_int_equal(rusk_quota_verify(&cap, g, 3, dem, out, NULL, err, sizeof err),
	                 RUSK_EINVAL);
	assert_non_null(strstr(err, "no dimension it wants is full"));
}

/* DRF across dimensions (Ghodsi et al. §4's example): 9 CPUs, 18 GB; A's tasks <1 CPU, 4 GB>
 * (3 of them wanted), B's <3 CPU, 1 GB> (3 wanted). Equal weights: A gets 3 CPU / 12 GB, B
 * 6 CPU / 2 GB, both at a dominant share of 2/3 (CPU becomes full). */
static void test_drf_two_dims(void **state)
{
	(void)state;
	rusk_quota_vec cap = {{9, 18, 0}};
	rusk_quota_group g[2] = {grp(1, 0, U), grp(1, 0, U)};
	rusk_quota_vec dem[2] = {{{3, 12, 0}}, {{9, 3, 0}}}, out[2];
	assert_int_equal(rusk_quota_allocate(&cap, g, 2, dem, out), RUSK_OK);
	assert_int_equal(out[0].v[0], 3);
	assert_int_equal(out[0].v[1], 12);
	assert_int_equal(out[1].v[0], 6);
	assert_int_equal(out[1].v[1], 2);
	verified(&cap, g, 2, dem, out);
	/* weights 1:2 with A's demand unbounded (<1, 4> direction): CPU fills at
	 * 4.5 t + 18 t = 9 -> t = 0.4: A 1.8 CPU / 7.2 GB, B 7.2 CPU / 2.4 GB; memory
	 * 9.6 <= 18. Rounded down: A 1 / 7, B 7 / 2. */
	g[1].weight = 2;
	dem[0] = (rusk_quota_vec){{100, 400, 0}};
	assert_int_equal(rusk_quota_allocate(&cap, g, 2, dem, out), RUSK_OK);
	assert_int_equal(out[0].v[0], 1);
	assert_int_equal(out[0].v[1], 7);
	assert_int_equal(out[1].v[0], 7);
	assert_int_equal(out[1].v[1], 2);
	rusk_quota_vec one = {{1, 1, 0}};
	assert_int_equal(rusk_quota_verify(&cap, g, 2, dem, out, &one, NULL, 0), RUSK_OK);
}

/* Bad configurations: each refused with a message naming the group and dimension. */
static void test_bad_groups(void **state)
{
	(void)state;
	rusk_quota_vec cap = {{100, 100, 0}}, out[2], dem[2] = {{{1, 1, 0}}, {{1, 1, 0}}};
	rusk_quota_group g[2] = {grp(1, 0, U), grp(1, 0, U)};
	char err[256];
	assert_int_equal(rusk_quota_groups_check(&cap, g, 2, err, sizeof err), RUSK_OK);
	g[1].weight = -1;
	assert_int_equal(rusk_quota_groups_check(&cap, g, 2, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "group 1: weight -1"));
	assert_int_equal(rusk_quota_allocate(&cap, g, 2, dem, out), RUSK_EINVAL);
	g[1] = grp(1, 60, 50);
	assert_int_equal(rusk_quota_groups_check(&cap, g, 2, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "group 1: rus minimum 60 above its maximum 50"));
	g[0] = grp(1, 60, U);
	g[1] = grp(1, 60, U);
	assert_int_equal(rusk_quota_groups_check(&cap, g, 2, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "rus minimums sum to 120, above the cluster's 100"));
	assert_int_equal(rusk_quota_groups_check(&cap, g, 0, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_quota_groups_check(NULL, g, 2, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_quota_allocate(&cap, g, 2, NULL, out), RUSK_EINVAL);
	assert_int_equal(rusk_quota_verify(&cap, g, 2, dem, NULL, NULL, NULL, 0), RUSK_EINVAL);
}

/* Many groups with mixed shapes: the result always passes the check and never exceeds the
 * capacity (a property over a seeded sweep). */
static void test_sweep(void **state)
{
	(void)state;
	uint64_t x = 42;
	for (int trial = 0; trial < 2000; trial++) {
		size_t n = 1 + (size_t)(trial % 12);
		rusk_quota_vec cap = {{1000, 64000, 8000}}, dem[12], out[12];
		rusk_quota_group g[12];
		for (size_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			g[i].weight = 1 + (double)((x >> 33) % 8);
			for (int d = 0; d < RUSK_QUOTA_DIMS; d++) {
				x = x * 6364136223846793005ull + 1442695040888963407ull;
				dem[i].v[d] = (x >> 30) % (2 * cap.v[d] + 1);
				g[i].min.v[d] = (x >> 20) % 3 == 0 ? cap.v[d] / 16 / n : 0;
				g[i].max.v[d] = (x >> 24) % 4 == 0 ? cap.v[d] / 3 : U;
			}
		}
		assert_int_equal(rusk_quota_allocate(&cap, g, n, dem, out), RUSK_OK);
		char err[256];
		rusk_quota_vec one = {{1, 1, 1}};
		int rc = rusk_quota_verify(&cap, g, n, dem, out, &one, err, sizeof err);
		if (rc != RUSK_OK)
			print_message("trial %d (n %zu): %s\n", trial, n, err);
		assert_int_equal(rc, RUSK_OK);
		for (int d = 0; d < RUSK_QUOTA_DIMS; d++) {
			uint64_t sum = 0;
			for (size_t i = 0; i < n; i++)
				sum += out[i].v[d];
			assert_true(sum <= cap.v[d]);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_weights_overloaded),
	        cmocka_unit_test(test_idle_redistributed),
	        cmocka_unit_test(test_minimum_met),
	        cmocka_unit_test(test_maximum_respected),
	        cmocka_unit_test(test_demands_below_share),
	        cmocka_unit_test(test_drf_two_dims),
	        cmocka_unit_test(test_bad_groups),
	        cmocka_unit_test(test_sweep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
