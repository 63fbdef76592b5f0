/* SPDX-License-Identifier: MIT */
/* Cluster model: shapes, topology invariants, openb loading and its errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

static rusk_cluster *make(uint32_t machines, uint32_t rus, uint32_t parts)
{
	return fx_cluster((fx_shape){.machines = machines, .rus = rus, .partitions = parts});
}

/* Every machine lies in exactly one partition, partitions are whole cells and contiguous
 * RU ranges, and counts add up. */
static void check_topology(rusk_cluster *c)
{
	uint32_t P = rusk_cluster_partitions(c);
	uint32_t next_ru = 0, next_m = 0, next_cell = 0;
	uint64_t rus = 0;
	for (uint32_t p = 0; p < P; p++) {
		rusk_partition_info pi;
		assert_int_equal(rusk_cluster_partition(c, p, &pi), RUSK_OK);
		assert_int_equal(pi.first_ru, next_ru);
		assert_int_equal(pi.first_machine, next_m);
		assert_int_equal(pi.first_cell, next_cell);
		assert_true(pi.cells >= 1);
		assert_true(pi.machines >= 1);
		assert_int_equal(pi.free_rus, pi.rus);
		uint32_t sum = 0;
		for (uint32_t m = pi.first_machine; m < pi.first_machine + pi.machines; m++) {
			rusk_machine_info mi;
			assert_int_equal(rusk_cluster_machine(c, m, &mi), RUSK_OK);
			assert_int_equal(mi.partition, p);
			assert_true(mi.cell >= pi.first_cell && mi.cell < pi.first_cell + pi.cells);
			assert_int_equal(mi.free_rus, mi.rus);
			assert_int_equal(rusk_cluster_ru_machine(c, mi.first_ru), m);
			assert_int_equal(rusk_cluster_ru_machine(c, mi.first_ru + mi.rus - 1), m);
			sum += mi.rus;
		}
		assert_int_equal(sum, pi.rus);
		next_ru += pi.rus;
		next_m += pi.machines;
		next_cell += pi.cells;
		rus += pi.rus;
	}
	assert_int_equal(next_m, rusk_cluster_machines(c));
	assert_int_equal(next_cell, rusk_cluster_cells(c));
	assert_int_equal(rus, rusk_cluster_rus(c));
	assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c));
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
}

static void test_default_100k(void **state)
{
	(void)state;
	rusk_cluster *c = fx_cluster((fx_shape){0}); /* every default */
	assert_int_equal(rusk_cluster_machines(c), 100000);
	assert_int_equal(rusk_cluster_rus(c), 1600000);
	assert_int_equal(rusk_cluster_racks(c), 2500);
	assert_int_equal(rusk_cluster_cells(c), 500);
	assert_int_equal(rusk_cluster_partitions(c), 20);
	/* Memory budget of the issue: <= 32 bytes per RU for the array and its counters. */
	double per_ru = (double)rusk_cluster_array_bytes(c) / rusk_cluster_rus(c);
	print_message("array + counters: %.2f bytes per RU\n", per_ru);
	assert_true(per_ru <= 32.0);
	/* The platform mix follows its shares (60/25/15) within a few points. */
	uint32_t counts[3] = {0};
	for (uint32_t m = 0; m < 100000; m++) {
		rusk_machine_info mi;
		rusk_cluster_machine(c, m, &mi);
		assert_true(mi.platform < 3);
		counts[mi.platform]++;
	}
	assert_in_range(counts[0], 58000, 62000);
	assert_in_range(counts[1], 23000, 27000);
	assert_in_range(counts[2], 13000, 17000);
	check_topology(c);
	rusk_cluster_destroy(c);
}

static void test_uneven_partitions(void **state)
{
	(void)state;
	/* 1000 machines / 40 per rack = 25 racks -> 5 cells; 3 partitions of 1-2 cells. */
	rusk_cluster *c = make(1000, 8, 3);
	assert_int_equal(rusk_cluster_cells(c), 5);
	check_topology(c);
	rusk_cluster_destroy(c);
	/* A partial last rack and cell. */
	c = make(1234, 3, 7);
	check_topology(c);
	rusk_cluster_destroy(c);
}

static void test_same_seed_same_cluster(void **state)
{
	(void)state;
	rusk_cluster *a = make(5000, 4, 5), *b = make(5000, 4, 5);
	for (uint32_t m = 0; m < 5000; m++) {
		rusk_machine_info x, y;
		rusk_cluster_machine(a, m, &x);
		rusk_cluster_machine(b, m, &y);
		assert_int_equal(x.platform, y.platform);
	}
	rusk_cluster_destroy(a);
	rusk_cluster_destroy(b);
}

static void expect_shape_error(rusk_cluster_params *p, int code, const char *needle)
{
	rusk_cluster *c = (rusk_cluster *)0x1;
	char err[256] = "";
	assert_int_equal(rusk_cluster_create(p, &c, err, sizeof err), code);
	assert_ptr_equal(c, (rusk_cluster *)0x1); /* untouched on failure */
	if (strstr(err, needle) == NULL)
		fail_msg("message '%s' lacks '%s'", err, needle);
}

static void test_bad_shapes(void **state)
{
	(void)state;
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = 0;
	expect_shape_error(&p, RUSK_ESHAPE, "0 machines");
	rusk_cluster_params_init(&p);
	p.machines = 400; /* 10 racks, 2 cells */
	p.partitions = 3;
	expect_shape_error(&p, RUSK_ESHAPE, "3 partitions but only 2 cells");
	rusk_cluster_params_init(&p);
	p.partitions = 0;
	expect_shape_error(&p, RUSK_ESHAPE, "partitions is 0");
	rusk_cluster_params_init(&p);
	p.rus_per_machine = 0;
	expect_shape_error(&p, RUSK_ESHAPE, "rus_per_machine 0");
	p.rus_per_machine = RUSK_MAX_RUS_PER_MACHINE + 1;
	expect_shape_error(&p, RUSK_ESHAPE, "rus_per_machine 662");
	rusk_cluster_params_init(&p);
	p.machines_per_rack = 0;
	expect_shape_error(&p, RUSK_ESHAPE, "machines_per_rack is 0");
	rusk_cluster_params_init(&p);
	p.racks_per_cell = 0;
	expect_shape_error(&p, RUSK_ESHAPE, "racks_per_cell is 0");
	rusk_cluster_params_init(&p);
	p.machines = UINT32_MAX;
	p.rus_per_machine = 2;
	p.machines_per_rack = 1000000;
	p.partitions = 1;
	expect_shape_error(&p, RUSK_ESHAPE, "RUs exceed");
	rusk_platform bad[] = {{"a", 1, 1}, {"b", 0, 1}};
	rusk_cluster_params_init(&p);
	p.platforms = bad;
	p.n_platforms = 2;
	expect_shape_error(&p, RUSK_EINVAL, "platform 'b' share 0");
	p.n_platforms = 0;
	expect_shape_error(&p, RUSK_EINVAL, "n_platforms 0");
	assert_int_equal(rusk_cluster_create(NULL, NULL, NULL, 0), RUSK_EINVAL);
}

static void test_queries_range(void **state)
{
	(void)state;
	rusk_cluster *c = make(200, 4, 1);
	rusk_machine_info mi;
	rusk_partition_info pi;
	assert_int_equal(rusk_cluster_machine(c, 200, &mi), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_machine(c, 0, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_partition(c, 1, &pi), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_platform(c, 3, NULL, NULL), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_ru_machine(c, 800), UINT32_MAX);
	const char *name;
	double speed;
	assert_int_equal(rusk_cluster_platform(c, 1, &name, &speed), RUSK_OK);
	assert_string_equal(name, "fast");
	assert_true(speed > 1.0);
	rusk_cluster_destroy(c);
	rusk_cluster_destroy(NULL);
}

static const char *data(const char *name)
{
	static char buf[512];
	snprintf(buf, sizeof buf, "%s/%s", RUSK_TEST_DATA, name);
	return buf;
}

static rusk_cluster_params small_topology(uint32_t parts)
{
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines_per_rack = 1;
	p.racks_per_cell = 1;
	p.partitions = parts;
	return p;
}

static void test_openb_real_list(void **state)
{
	(void)state;
	char path[512];
	snprintf(path, sizeof path, "%s/openb/openb_node_list_all_node.csv", RUSK_TRACE_DATA);
	if (access(path, R_OK) != 0)
		skip(); /* public data, never in the repository: RUSK_TRACE_DIR */
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.partitions = 8; /* 1523 machines make 39 racks, 8 cells */
	rusk_cluster *c = NULL;
	char err[256];
	int rc = rusk_cluster_create_openb(path, 0, &p, &c, err, sizeof err);
	if (rc != RUSK_OK)
		fail_msg("%s", err);
	assert_int_equal(rusk_cluster_machines(c), 1523);
	/* Row 1 (openb-node-0000): 32 cores, CPU only. */
	rusk_machine_info mi;
	rusk_cluster_machine(c, 0, &mi);
	assert_int_equal(mi.rus, 32);
	assert_int_equal(mi.mem_mib, 262144);
	assert_int_equal(mi.gpus, 0);
	assert_int_equal(mi.source_row, 1);
	const char *name;
	rusk_cluster_platform(c, mi.platform, &name, NULL);
	assert_string_equal(name, "cpu");
	assert_true(rusk_cluster_platforms(c) >= 6); /* cpu, G2, T4, P100, V100M16, ... */
	uint32_t total = rusk_cluster_rus(c);
	check_topology(c);
	rusk_cluster_destroy(c);

	/* Replicated to 100,000 machines: shapes repeat the list in order. */
	p.partitions = 20;
	rc = rusk_cluster_create_openb(path, 100000, &p, &c, err, sizeof err);
	if (rc != RUSK_OK)
		fail_msg("%s", err);
	assert_int_equal(rusk_cluster_machines(c), 100000);
	rusk_machine_info a, b;
	rusk_cluster_machine(c, 7, &a);
	rusk_cluster_machine(c, 7 + 1523 * 3, &b);
	assert_int_equal(a.rus, b.rus);
	assert_int_equal(a.platform, b.platform);
	assert_int_equal(b.replica, 3);
	assert_int_equal(b.source_row, a.source_row);
	assert_true(rusk_cluster_rus(c) > 65 * total);
	double per_ru = (double)rusk_cluster_array_bytes(c) / rusk_cluster_rus(c);
	assert_true(per_ru <= 32.0);
	check_topology(c);
	rusk_cluster_destroy(c);
}

static void expect_openb_error(const char *file, int code, const char *needle)
{
	rusk_cluster_params p = small_topology(1);
	rusk_cluster *c = NULL;
	char err[512] = "";
	assert_int_equal(rusk_cluster_create_openb(data(file), 0, &p, &c, err, sizeof err), code);
	assert_null(c);
	if (strstr(err, needle) == NULL)
		fail_msg("message '%s' lacks '%s'", err, needle);
}

static void test_openb_errors(void **state)
{
	(void)state;
	expect_openb_error("bad_cpu.csv", RUSK_EPARSE, "bad_cpu.csv:3: cpu_milli 'lots'");
	expect_openb_error("bad_header.csv", RUSK_EPARSE, "bad_header.csv:1: header");
	expect_openb_error("short_row.csv", RUSK_EPARSE, "short_row.csv:3: expected 5 fields");
	expect_openb_error("too_many_cores.csv", RUSK_EPARSE,
	                   "too_many_cores.csv:2: 700 RUs of 1000 milli-cores");
	expect_openb_error("no_rows.csv", RUSK_ESHAPE, "no machines");
	expect_openb_error("does_not_exist.csv", RUSK_EIO, "does_not_exist.csv: cannot open");

	rusk_cluster_params p = small_topology(4);
	rusk_cluster *c = NULL;
	char err[256] = "";
	/* 3 machines, one per cell: 4 partitions are impossible. */
	assert_int_equal(rusk_cluster_create_openb(data("tiny.csv"), 0, &p, &c, err, sizeof err),
	                 RUSK_ESHAPE);
	assert_non_null(strstr(err, "4 partitions but only 3 cells"));
	p.partitions = 3;
	assert_int_equal(rusk_cluster_create_openb(data("tiny.csv"), 0, &p, &c, err, sizeof err),
	                 RUSK_OK);
	assert_int_equal(rusk_cluster_rus(c), 32 + 8 + 16);
	rusk_machine_info mi;
	rusk_cluster_machine(c, 2, &mi);
	const char *name;
	rusk_cluster_platform(c, mi.platform, &name, NULL);
	assert_string_equal(name, "T4");
	assert_int_equal(mi.gpus, 4);
	check_topology(c);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_default_100k),
	        cmocka_unit_test(test_uneven_partitions),
	        cmocka_unit_test(test_same_seed_same_cluster),
	        cmocka_unit_test(test_bad_shapes),
	        cmocka_unit_test(test_queries_range),
	        cmocka_unit_test(test_openb_real_list),
	        cmocka_unit_test(test_openb_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
