/* SPDX-License-Identifier: MIT */
/* Allocation failure injection: every allocation of a cluster build and of a snapshot
 * publish fails in turn; each must return RUSK_ENOMEM cleanly (ASan/LSan builds check that
 * nothing leaks) and leave what existed usable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

#include "base/alloc.h"

static void test_cluster_create_fails_cleanly(void **state)
{
	(void)state;
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = 400;
	p.partitions = 2;
	int failures = 0, k;
	for (k = 1; k < 64; k++) {
		rusk_fault_alloc_fail_at = k;
		rusk_cluster *c = (rusk_cluster *)0x1;
		char err[256] = "";
		int rc = rusk_cluster_create(&p, &c, err, sizeof err);
		long left = rusk_fault_alloc_fail_at;
		rusk_fault_alloc_fail_at = 0;
		if (rc == RUSK_OK) {
			assert_int_not_equal(left, 0); /* no failure was injected: all allocated */
			assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
			rusk_cluster_destroy(c);
			break;
		}
		assert_int_equal(rc, RUSK_ENOMEM);
		assert_ptr_equal(c, (rusk_cluster *)0x1); /* untouched */
		assert_non_null(strstr(err, "out of memory"));
		failures++;
	}
	print_message("%d allocation points of a cluster build failed cleanly\n", failures);
	assert_true(failures >= 5);
	assert_true(k < 64);
}

static void test_snapshot_publish_fails_cleanly(void **state)
{
	(void)state;
	rusk_cluster *c = fx_cluster((fx_shape){.machines = 400, .partitions = 2});
	rusk_thread_register();
	rusk_view *v;
	assert_int_equal(rusk_view_create(c, &v), RUSK_OK);
	rusk_fault_alloc_fail_at = 1;
	assert_int_equal(rusk_snapshot_publish(c, 0), RUSK_ENOMEM);
	rusk_fault_alloc_fail_at = 1;
	assert_int_equal(rusk_view_sync(v, 1), RUSK_ENOMEM);
	rusk_fault_alloc_fail_at = 0;
	/* nothing half-done: the next attempts work */
	assert_int_equal(rusk_view_sync(v, 1), RUSK_OK);
	assert_int_equal(rusk_view_free(v, 1), rusk_cluster_rus(c) / 2);
	rusk_view_destroy(v);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_cluster_create_fails_cleanly),
	        cmocka_unit_test(test_snapshot_publish_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
