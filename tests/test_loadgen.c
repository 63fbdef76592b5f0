/* SPDX-License-Identifier: MIT */
/* Load generator (rates, reproducibility, durations), trace parser (good and bad rows),
 * trace expansion, and histogram arithmetic. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hist.h"
#include "loadgen.h"
#include <rusk/rusk.h>

static void test_rates_within_one_percent(void **state)
{
	(void)state;
	double phases[5] = {50, 80, 95, 80, 50};
	rusk_loadgen g;
	rusk_loadgen_init(&g, 40000, phases, 5, 20, RUSK_DUR_FIXED, 5, 1, 42);
	uint64_t per_phase[5] = {0};
	rusk_arrival a;
	double last = -1;
	while (rusk_loadgen_next(&g, &a) == 0) {
		assert_true(a.t_s >= last); /* arrivals in order */
		last = a.t_s;
		per_phase[(int)(a.t_s / 20)]++;
		assert_true(a.duration_s == 5 && a.rus == 1);
	}
	for (int k = 0; k < 5; k++) {
		double want = 40000 * phases[k] / 100 * 20;
		double err = fabs((double)per_phase[k] - want) / want;
		print_message("phase %d: %llu arrivals, %.3f%% off\n", k,
		              (unsigned long long)per_phase[k], 100 * err);
		assert_true(err < 0.01);
	}
}

static void test_seeded_reproducibility(void **state)
{
	(void)state;
	double ph[1] = {100};
	rusk_loadgen a, b, c;
	rusk_loadgen_init(&a, 1000, ph, 1, 100, RUSK_DUR_LOGNORMAL, 5, 2, 7);
	rusk_loadgen_init(&b, 1000, ph, 1, 100, RUSK_DUR_LOGNORMAL, 5, 2, 7);
	rusk_loadgen_init(&c, 1000, ph, 1, 100, RUSK_DUR_LOGNORMAL, 5, 2, 8);
	int differ = 0;
	for (int i = 0; i < 10000; i++) {
		rusk_arrival x, y, z;
		assert_int_equal(rusk_loadgen_next(&a, &x), 0);
		assert_int_equal(rusk_loadgen_next(&b, &y), 0);
		assert_int_equal(rusk_loadgen_next(&c, &z), 0);
		assert_true(x.t_s == y.t_s && x.duration_s == y.duration_s);
		differ += x.t_s != z.t_s;
	}
	assert_true(differ > 9000);
}

static void test_durations(void **state)
{
	(void)state;
	rusk_rng r;
	rusk_rng_seed(&r, 3, 0);
	const int n = 200000;
	double means[2] = {8.0, 5.0};
	for (int k = 0; k < 2; k++) {
		double sum = 0;
		int under10 = 0;
		for (int i = 0; i < n; i++) {
			double d = rusk_duration_draw(&r, RUSK_DUR_LOGNORMAL, means[k]);
			sum += d;
			under10 += d <= 10.0;
		}
		/* ParSync Fig. 1b: 87% of tasks finish within 10 s (exactly, where the mean
		 * allows; at 5 s the closest a lognormal gets is 88.1%) */
		print_message("lognormal mean %.0f s: measured mean %.3f s, %.2f%% within 10 s\n",
		              means[k], sum / n, 100.0 * under10 / n);
		assert_true(fabs(sum / n - means[k]) / means[k] < 0.02);
		if (k == 0)
			assert_true(under10 > 0.865 * n && under10 < 0.875 * n);
		else
			assert_true(under10 > 0.875 * n && under10 < 0.887 * n);
	}
	double sum = 0;
	sum = 0;
	for (int i = 0; i < n; i++)
		sum += rusk_duration_draw(&r, RUSK_DUR_EXP, 2.0);
	assert_true(fabs(sum / n - 2.0) < 0.03);
}

static const char *data(const char *f)
{
	static char b[512];
	snprintf(b, sizeof b, "%s/%s", RUSK_TEST_DATA, f);
	return b;
}

static void expect_trace_error(const char *f, int fmt, int code, const char *needle)
{
	rusk_arrival *a = NULL;
	size_t n = 0;
	char err[512] = "";
	assert_int_equal(rusk_trace_load(data(f), fmt, &a, &n, err, sizeof err), code);
	assert_null(a);
	if (strstr(err, needle) == NULL)
		fail_msg("'%s' lacks '%s'", err, needle);
}

static void test_trace_parser(void **state)
{
	(void)state;
	rusk_arrival *a;
	size_t n;
	char err[512];
	assert_int_equal(
	        rusk_trace_load(data("trace_ok.csv"), RUSK_TRACE_CSV, &a, &n, err, sizeof err),
	        RUSK_OK);
	assert_int_equal(n, 3);
	/* sorted, relative to the first arrival */
	assert_true(a[0].t_s == 0 && a[0].rus == 2 && a[0].priority == 1);
	assert_true(fabs(a[1].t_s - 0.4) < 1e-12 && a[1].rus == 1);
	assert_true(fabs(a[2].t_s - 0.9) < 1e-12 && a[2].rus == 4 && a[2].duration_s == 3);
	free(a);
	expect_trace_error("trace_bad_duration.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_bad_duration.csv:3: duration_s '-1'");
	expect_trace_error("trace_bad_header.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_bad_header.csv:1: column 'arrival' is unknown");
	expect_trace_error("trace_bad_cpu.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_bad_cpu.csv:2: cpu_milli 'abc'");
	/* columns in any order; cpu_milli -> RUs; preferred machines */
	assert_int_equal(
	        rusk_trace_load(data("trace_cpu.csv"), RUSK_TRACE_CSV, &a, &n, err, sizeof err),
	        RUSK_OK);
	assert_int_equal(n, 2);
	assert_true(a[0].rus == 1 && a[0].n_pref == 0 && a[0].priority == 0);
	assert_true(a[1].rus == 3 && a[1].priority == 1 && a[1].n_pref == 2);
	assert_true(a[1].pref[0] == 3 && a[1].pref[1] == 7);
	free(a);
	expect_trace_error("trace_bad_rus.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_bad_rus.csv:3: rus '1.5'");
	expect_trace_error("trace_bad_priority.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_bad_priority.csv:2: priority '7'");
	expect_trace_error("trace_short_row.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_short_row.csv:2: expected 3 fields, found 2");
	expect_trace_error("openb_bad_deletion.csv", RUSK_TRACE_OPENB, RUSK_EPARSE,
	                   "openb_bad_deletion.csv:3: deletion_time '250'");
	/* found by fuzz_trace: a cpu_milli too large for any machine overflowed the RU count */
	expect_trace_error("openb_huge_cpu.csv", RUSK_TRACE_OPENB, RUSK_EPARSE,
	                   "openb_huge_cpu.csv:2: cpu_milli '1e300' is not a number in 1..661000");
	expect_trace_error("trace_ok.csv", RUSK_TRACE_OPENB, RUSK_EPARSE,
	                   "trace_ok.csv:1: not an openb pod list header");
	expect_trace_error("nope.csv", RUSK_TRACE_CSV, RUSK_EIO, "nope.csv: cannot open");
	/* the real openb pod list */
	char path[512];
	snprintf(path, sizeof path, "%s/openb/openb_pod_list_default.csv", RUSK_TRACE_DATA);
	assert_int_equal(rusk_trace_load(path, RUSK_TRACE_OPENB, &a, &n, err, sizeof err), RUSK_OK);
	assert_int_equal(n, 8152);
	uint32_t high = 0;
	for (size_t i = 1; i < n; i++) {
		assert_true(a[i].t_s >= a[i - 1].t_s);
		high += a[i].priority;
	}
	assert_true(high > 0 && high < n);
	/* expansion: 1000x faster, 4 shifted replicas -> 4x the tasks in 1/1000 of the span */
	size_t m;
	rusk_arrival *e = rusk_trace_expand(a, n, 1000, 4, &m);
	assert_non_null(e);
	assert_int_equal(m, 4 * n);
	double span = a[n - 1].t_s / 1000;
	for (size_t i = 0; i < m; i++)
		assert_true(e[i].t_s >= 0 && e[i].t_s <= span &&
		            (i == 0 || e[i].t_s >= e[i - 1].t_s));
	free(e);
	free(a);
}

static void test_histogram(void **state)
{
	(void)state;
	rusk_hist *h = calloc(1, sizeof *h);
	for (uint64_t v = 1; v <= 1000000; v++)
		rusk_hist_record(h, v * 1000); /* 1 us .. 1 s */
	double qs[4] = {0.5, 0.9, 0.99, 0.999};
	for (int i = 0; i < 4; i++) {
		double want = qs[i] * 1e9, got = (double)rusk_hist_quantile(h, qs[i]);
		assert_true(fabs(got - want) / want < 0.01); /* log-linear: <= 1% relative */
	}
	assert_true(fabs(rusk_hist_mean(h) - 500000500.0) < 1);
	assert_int_equal(h->max, 1000000000);
	rusk_hist *b = calloc(1, sizeof *b), *d = calloc(1, sizeof *d);
	rusk_hist_merge(b, h);
	rusk_hist_record(h, 5);
	memset(d, 0xa5, sizeof *d); /* a diff overwrites every bucket, not only up to max */
	rusk_hist_diff(d, h, b);
	assert_int_equal(rusk_hist_count(d), 1);
	assert_int_equal(rusk_hist_quantile(d, 0.5), 5);
	uint64_t total = 0;
	for (uint32_t i = 0; i < RUSK_HIST_BUCKETS; i++)
		total += d->count[i];
	assert_int_equal(total, 1);
	/* merging a histogram of small values keeps what dst holds above them */
	rusk_hist *s = calloc(1, sizeof *s);
	rusk_hist_record(s, 7);
	rusk_hist_merge(b, s);
	assert_int_equal(rusk_hist_count(b), 1000001);
	assert_int_equal(b->max, 1000000000);
	assert_int_equal(rusk_hist_quantile(b, 0.0), 7);
	assert_true(fabs((double)rusk_hist_quantile(b, 0.999) - 0.999e9) / 0.999e9 < 0.01);
	free(s);
	free(h);
	free(b);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_rates_within_one_percent),
	        cmocka_unit_test(test_seeded_reproducibility),
	        cmocka_unit_test(test_durations),
	        cmocka_unit_test(test_trace_parser),
	        cmocka_unit_test(test_histogram),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
