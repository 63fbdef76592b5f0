/* SPDX-License-Identifier: MIT */
/* Load generator (rates, reproducibility, durations), trace parser (good and bad rows),
 * trace expansion, and histogram arithmetic. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/hist.h"
#include "workload/loadgen.h"
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
	assert_int_equal(rusk_trace_load(data(f), fmt, &a, &n, NULL, NULL, err, sizeof err), code);
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
	assert_int_equal(rusk_trace_load(data("trace_ok.csv"), RUSK_TRACE_CSV, &a, &n, NULL, NULL,
	                                 err, sizeof err),
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
	assert_int_equal(rusk_trace_load(data("trace_cpu.csv"), RUSK_TRACE_CSV, &a, &n, NULL, NULL,
	                                 err, sizeof err),
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
	expect_trace_error("pods_bad_deletion.csv", RUSK_TRACE_OPENB, RUSK_EPARSE,
	                   "pods_bad_deletion.csv:3: deletion_time '250'");
	/* found by fuzz_trace: a cpu_milli too large for any machine overflowed the RU count */
	expect_trace_error("pods_huge_cpu.csv", RUSK_TRACE_OPENB, RUSK_EPARSE,
	                   "pods_huge_cpu.csv:2: cpu_milli '1e300' is not a number in 1..661000");
	expect_trace_error("trace_ok.csv", RUSK_TRACE_OPENB, RUSK_EPARSE,
	                   "trace_ok.csv:1: not an openb pod list header");
	expect_trace_error("nope.csv", RUSK_TRACE_CSV, RUSK_EIO, "nope.csv: cannot open");
	/* the real openb pod list */
	char path[512];
	snprintf(path, sizeof path, "%s/openb/openb_pod_list_default.csv", RUSK_TRACE_DATA);
	if (access(path, R_OK) != 0) { /* public data, never in the repository */
		print_message("%s: not there, the real-list checks are skipped (RUSK_TRACE_DIR)\n",
		              path);
		return;
	}
	assert_int_equal(
	        rusk_trace_load(path, RUSK_TRACE_OPENB, &a, &n, NULL, NULL, err, sizeof err),
	        RUSK_OK);
	assert_int_equal(n, 8152);
	uint32_t high = 0;
	for (size_t i = 1; i < n; i++) {
		assert_true(a[i].t_s >= a[i - 1].t_s);
		high += a[i].priority;
	}
	assert_true(high > 0 && high < n);
	/* every pod is a vector task; GPU pods keep their shares; 897 were never scheduled */
	uint32_t gpu_pods = 0, shared = 0, never = 0;
	for (size_t i = 0; i < n; i++) {
		assert_true(a[i].vec && a[i].cpu_milli > 0);
		gpu_pods += a[i].gpus > 0;
		shared += a[i].gpus == 1 && a[i].gpu_milli < 1000;
		never += a[i].never_ran;
		assert_true(a[i].gpus <= 1 || a[i].gpu_milli == 1000);
	}
	assert_int_equal(never, 897);
	assert_true(gpu_pods > 6000 && shared > 3000);
	/* expansion: 1000x faster, 4 shifted replicas -> 4x the tasks in 1/1000 of the span
	 * (plus less than one mean gap); the first row comes first, the last row last */
	size_t m;
	rusk_arrival *e = rusk_trace_expand(a, n, 1000, 4, &m);
	assert_non_null(e);
	assert_int_equal(m, 4 * n);
	double span = a[n - 1].t_s / 1000, gap = span / (double)(n - 1);
	for (size_t i = 0; i < m; i++)
		assert_true(e[i].t_s >= 0 && e[i].t_s < span + gap &&
		            (i == 0 || e[i].t_s >= e[i - 1].t_s));
	assert_true(e[0].t_s == 0 && e[0].line == a[0].line);
	assert_true(e[m - 1].line == a[n - 1].line);
	free(e);
	free(a);
}

/* ---- issue 20: trace input ---------------------------------------------------------------- */

static char tmp_dir[64];
static char tmp_paths[64][128];
static int n_tmp;

/* Writes len bytes (NULs included) to a fresh file NAME in a private directory; returns its
 * path. The group teardown removes them. */
static const char *tmp_trace(const char *name, const char *bytes, size_t len)
{
	if (tmp_dir[0] == '\0') {
		snprintf(tmp_dir, sizeof tmp_dir, "/tmp/rusk-test-loadgen-XXXXXX");
		assert_non_null(mkdtemp(tmp_dir));
	}
	assert_true(n_tmp < 64);
	char *path = tmp_paths[n_tmp++];
	snprintf(path, sizeof tmp_paths[0], "%s/%s", tmp_dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	fclose(f);
	return path;
}
#define TMP(name, lit) tmp_trace(name, lit, sizeof lit - 1)

static int tmp_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < n_tmp; i++)
		unlink(tmp_paths[i]);
	if (tmp_dir[0] != '\0')
		rmdir(tmp_dir);
	return 0;
}

static void expect_path_error(const char *path, int fmt, int code, const char *needle)
{
	rusk_arrival *a = NULL;
	size_t n = 0;
	char err[512] = "";
	assert_int_equal(rusk_trace_load(path, fmt, &a, &n, NULL, NULL, err, sizeof err), code);
	assert_null(a);
	if (strstr(err, needle) == NULL)
		fail_msg("'%s' lacks '%s'", err, needle);
}

static size_t expect_rows(const char *path, int fmt, rusk_arrival **out)
{
	rusk_arrival *a = NULL;
	size_t n = 0;
	char err[512] = "";
	if (rusk_trace_load(path, fmt, &a, &n, NULL, NULL, err, sizeof err) != RUSK_OK)
		fail_msg("%s", err);
	if (out != NULL)
		*out = a;
	else
		free(a);
	return n;
}

/* Item 5: replay keeps arrivals in order and at their times. fmod(t, span) had put the
 * last arrival first, at t = 0 (rows at 0, 5, 10 replayed at 0, 0, 5). */
static void test_trace_replay_keeps_order(void **state)
{
	(void)state;
	rusk_arrival in[3] = {{.t_s = 0, .duration_s = 1, .rus = 1, .line = 2},
	                      {.t_s = 5, .duration_s = 1, .rus = 1, .line = 3},
	                      {.t_s = 10, .duration_s = 1, .rus = 1, .line = 4}};
	size_t m;
	rusk_arrival *e = rusk_trace_expand(in, 3, 1, 1, &m);
	assert_non_null(e);
	assert_int_equal(m, 3);
	for (size_t i = 0; i < 3; i++)
		assert_true(e[i].t_s == in[i].t_s && e[i].line == in[i].line);
	free(e);
	/* 5x faster, 3 copies, copy j shifted by j/3 of the mean gap (1 s once compressed):
	 * row 2 at 0, 1/3, 2/3, row 3 at 1, 4/3, 5/3, row 4 at 2, 7/3, 8/3 */
	e = rusk_trace_expand(in, 3, 5, 3, &m);
	assert_non_null(e);
	assert_int_equal(m, 9);
	for (size_t i = 0; i < 9; i++) {
		double want = (double)(i / 3) + (double)(i % 3) / 3.0;
		if (fabs(e[i].t_s - want) > 1e-12 || e[i].line != 2 + i / 3)
			fail_msg("arrival %zu: line %u at %.6f s, expected line %zu at %.6f s", i,
			         e[i].line, e[i].t_s, 2 + i / 3, want);
		assert_true(fabs(e[i].duration_s - 0.2) < 1e-12);
	}
	free(e);
	/* the file's order for rows with equal times */
	rusk_arrival *a;
	assert_int_equal(expect_rows(TMP("ties.csv", "arrival_s,duration_s,rus\n1,1,1\n0,1,2\n"
	                                             "1,1,3\n1,1,4\n"),
	                             RUSK_TRACE_CSV, &a),
	                 4);
	assert_true(a[0].rus == 2 && a[1].rus == 1 && a[2].rus == 3 && a[3].rus == 4);
	free(a);
}

static void *fifo_writer(void *path)
{
	FILE *f = fopen(path, "w");
	if (f != NULL) {
		fputs("arrival_s,duration_s,rus\n0,1,1\n1,1,2\n", f);
		fclose(f);
	}
	return NULL;
}

/* Item 6: a NUL byte is an error naming FILE:LINE (it made a row vanish, or said "line too
 * long"); /dev/zero ends at once (it looped forever); a directory is named as one (it was
 * an "empty file"); a pipe is read. */
static void test_trace_nul_and_special_files(void **state)
{
	(void)state;
	expect_path_error(TMP("nul_start.csv", "arrival_s,duration_s,rus\n0,1,1\n\0"
	                                       "5,1,1\n10,1,1\n"),
	                  RUSK_TRACE_CSV, RUSK_EPARSE, "nul_start.csv:3: NUL byte at column 1");
	expect_path_error(TMP("nul_mid.csv", "arrival_s,duration_s,rus\n0,1,1\n5,1\0"
	                                     "1,1\n10,1,1\n"),
	                  RUSK_TRACE_CSV, RUSK_EPARSE, "nul_mid.csv:3: NUL byte at column 4");
	expect_path_error(TMP("nul_comment.csv", "arrival_s,duration_s,rus\n# a\0b\n0,1,1\n"),
	                  RUSK_TRACE_CSV, RUSK_EPARSE, "nul_comment.csv:2: NUL byte");
	expect_path_error(TMP("nul_openb.csv", "name\0,cpu_milli\n"), RUSK_TRACE_OPENB, RUSK_EPARSE,
	                  "nul_openb.csv:1: NUL byte at column 5");
	expect_path_error("/dev/zero", RUSK_TRACE_CSV, RUSK_EPARSE, "/dev/zero:1: NUL byte");
	expect_path_error("/dev/zero", RUSK_TRACE_OPENB, RUSK_EPARSE, "/dev/zero:1: NUL byte");
	expect_path_error(RUSK_TEST_DATA, RUSK_TRACE_CSV, RUSK_EIO, "is a directory");
	expect_path_error("/dev/null", RUSK_TRACE_CSV, RUSK_EPARSE, "/dev/null:1: empty file");
	/* a pipe (e.g. --trace <(gen)) is read like a file */
	char fifo[128];
	TMP("unused.csv", ""); /* creates the private directory */
	snprintf(fifo, sizeof fifo, "%s/fifo.csv", tmp_dir);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	pthread_t w;
	assert_int_equal(pthread_create(&w, NULL, fifo_writer, fifo), 0);
	size_t n = expect_rows(fifo, RUSK_TRACE_CSV, NULL);
	pthread_join(w, NULL);
	unlink(fifo);
	assert_int_equal(n, 2);
}

/* Item 10: durations and spans beyond RUSK_TRACE_MAX_S are refused with FILE:LINE (1e308 and
 * 2^64 s became 0 through an out-of-range double-to-integer conversion); a stretching time
 * scale holds times at the bound, so they convert to nanoseconds. */
/* Issue 31: quota groups of a trace. The csv group column: names in order of first use
 * with that line, blanks dropped, an empty field no group, a name too long refused naming
 * the line, the column read only when the caller asks; openb pods by qos class or by GPU
 * model (the first of gpu_spec; gpu for any model, cpu without GPUs), none by default. */
static void test_trace_group_column(void **state)
{
	(void)state;
	rusk_arrival *a;
	size_t n;
	char err[512];
	rusk_trace_groups tg = {.openb = RUSK_TRACE_GROUPS_QOS};
	assert_int_equal(rusk_trace_load(data("trace_groups.csv"), RUSK_TRACE_CSV, &a, &n, NULL,
	                                 &tg, err, sizeof err),
	                 RUSK_OK);
	assert_int_equal(n, 5);
	assert_true(tg.given);
	assert_int_equal(tg.n, 2);
	assert_string_equal(tg.name[0], "batch");
	assert_string_equal(tg.name[1], "prod");
	assert_int_equal(tg.line[0], 3);
	assert_int_equal(tg.line[1], 4);
	static const uint8_t want[5] = {1, 2, 0, 1, 2};
	for (size_t i = 0; i < n; i++)
		assert_int_equal(a[i].group, want[i]);
	free(a);
	/* Not asked for: read, never kept. */
	assert_int_equal(rusk_trace_load(data("trace_groups.csv"), RUSK_TRACE_CSV, &a, &n, NULL,
	                                 NULL, err, sizeof err),
	                 RUSK_OK);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(a[i].group, 0);
	free(a);
	/* A csv without the column: not given, every row 0. */
	assert_int_equal(rusk_trace_load(data("trace_ok.csv"), RUSK_TRACE_CSV, &a, &n, NULL, &tg,
	                                 err, sizeof err),
	                 RUSK_OK);
	assert_false(tg.given);
	assert_int_equal(tg.n, 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(a[i].group, 0);
	free(a);
	const char *lng = TMP("long_group.csv", "arrival_s,duration_s,rus,group\n0,1,1,a\n"
	                                        "1,1,1,abcdefghijabcdefghijabcdefghijxy\n");
	assert_int_equal(rusk_trace_load(lng, RUSK_TRACE_CSV, &a, &n, NULL, &tg, err, sizeof err),
	                 RUSK_EPARSE);
	if (strstr(err, "long_group.csv:3: group: 'abcdefghijabcdefghijabcdefghijxy' is not a "
	                "group name (1..31 bytes)") == NULL)
		fail_msg("%s", err);
	/* openb: by qos class, by GPU model, or none. */
	static const char *const qos[5] = {"LS", "BE", "Burstable", "BE", "Guaranteed"};
	static const char *const model[5] = {"cpu", "gpu", "V100M32", "T4", "V100M32"};
	for (int by = RUSK_TRACE_GROUPS_NONE; by <= RUSK_TRACE_GROUPS_GPU_MODEL; by++) {
		tg = (rusk_trace_groups){.openb = by};
		assert_int_equal(rusk_trace_load(data("pods_groups.csv"), RUSK_TRACE_OPENB, &a, &n,
		                                 NULL, &tg, err, sizeof err),
		                 RUSK_OK);
		assert_int_equal(n, 5);
		assert_int_equal(tg.given, by != RUSK_TRACE_GROUPS_NONE);
		assert_int_equal(tg.n, by == RUSK_TRACE_GROUPS_NONE ? 0 : 4);
		for (size_t i = 0; i < n; i++) {
			if (by == RUSK_TRACE_GROUPS_NONE) {
				assert_int_equal(a[i].group, 0);
				continue;
			}
			assert_true(a[i].group >= 1 && a[i].group <= tg.n);
			assert_string_equal(tg.name[a[i].group - 1],
			                    by == RUSK_TRACE_GROUPS_QOS ? qos[i] : model[i]);
		}
		free(a);
	}
}

/* Vector columns of the generic CSV, and openb gpu_spec's model table. */
static void test_trace_vec_columns(void **state)
{
	(void)state;
	rusk_arrival *a;
	size_t n;
	char err[512];
	rusk_trace_models tm;
	assert_int_equal(rusk_trace_load(data("trace_vec.csv"), RUSK_TRACE_CSV, &a, &n, &tm, NULL,
	                                 err, sizeof err),
	                 RUSK_OK);
	assert_int_equal(n, 7);
	assert_int_equal(tm.n, 2);
	assert_string_equal(tm.name[0], "T4");
	assert_string_equal(tm.name[1], "V100");
	assert_int_equal(tm.line[1], 5);
	assert_true(a[0].vec && a[0].gpus == 1 && a[0].gpu_milli == 500 && a[0].mem_mib == 4096);
	assert_true(a[2].gpus == 2 && a[2].gpu_milli == 1000 && a[2].gpu_models == 1u);
	assert_true(a[3].rus == 1 && a[3].cpu_milli == 500 && a[3].gpu_models == 3u);
	assert_true(a[4].gpus == 0 && a[4].gpu_models == 0);
	free(a);
	expect_trace_error("trace_vec_neg_mem.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_vec_neg_mem.csv:3: mem_mib '-5' is not a whole number");
	expect_trace_error("trace_vec_split_gpu.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_vec_split_gpu.csv:2: 2 GPUs of 500 milli");
	expect_trace_error("trace_vec_nan_gpus.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_vec_nan_gpus.csv:2: gpus 'x' is not a whole number");
	/* RU-only traces stay RU-only */
	assert_int_equal(rusk_trace_load(data("trace_ok.csv"), RUSK_TRACE_CSV, &a, &n, NULL, NULL,
	                                 err, sizeof err),
	                 RUSK_OK);
	assert_false(a[0].vec);
	free(a);
}

/* 3Sigma's columns: user and job_name as feature ids, deadline_s relative and scaled. */
static void test_trace_job_columns(void **state)
{
	(void)state;
	rusk_arrival *a;
	size_t n;
	char err[512];
	assert_int_equal(rusk_trace_load(data("trace_jobs.csv"), RUSK_TRACE_CSV, &a, &n, NULL, NULL,
	                                 err, sizeof err),
	                 RUSK_OK);
	assert_int_equal(n, 3);
	assert_true(a[0].user != 0 && a[0].user == a[2].user && a[0].user != a[1].user);
	assert_true(a[0].job_name == a[2].job_name && a[0].job_name != a[1].job_name);
	assert_true(a[0].deadline_s == 30 && a[1].deadline_s == 0 && a[2].deadline_s == 14);
	size_t m;
	rusk_arrival *e = rusk_trace_expand(a, n, 2, 1, &m);
	assert_non_null(e);
	assert_true(e[0].deadline_s == 15 && e[1].deadline_s == 0);
	free(e);
	free(a);
	expect_trace_error("trace_bad_deadline.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_bad_deadline.csv:3: deadline_s '-3' is not a positive number");
}

static void test_trace_time_bounds(void **state)
{
	(void)state;
	expect_trace_error("trace_huge_duration.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_huge_duration.csv:3: duration_s '1e308' is not a positive "
	                   "number of seconds up to 1e+09");
	expect_path_error(TMP("pow64.csv", "arrival_s,duration_s,rus\n0,18446744073709551616,1\n"),
	                  RUSK_TRACE_CSV, RUSK_EPARSE,
	                  "pow64.csv:2: duration_s '18446744073709551616'");
	expect_path_error(TMP("openb_long.csv",
	                      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_"
	                      "phase,creation_time,deletion_time,scheduled_time\n"
	                      "p0,1000,1,0,0,,BE,Running,0,1e300,0\n"),
	                  RUSK_TRACE_OPENB, RUSK_EPARSE,
	                  "openb_long.csv:2: deletion_time '1e300' is more than 1e+09 s");
	expect_path_error(TMP("span.csv", "arrival_s,duration_s,rus\n5e9,1,1\n1,1,1\n"),
	                  RUSK_TRACE_CSV, RUSK_EPARSE, "span.csv:2: arrival 5e+09 s is more than");
	rusk_arrival in[2] = {{.t_s = 0, .duration_s = 1e9, .rus = 1},
	                      {.t_s = 1e9, .duration_s = 1, .rus = 1}};
	size_t m;
	rusk_arrival *e = rusk_trace_expand(in, 2, 1e-9, 1, &m);
	assert_non_null(e);
	assert_true(e[0].duration_s == RUSK_TRACE_MAX_S && e[1].t_s == RUSK_TRACE_MAX_S);
	assert_true((uint64_t)(e[1].t_s * 1e9) + (uint64_t)(e[0].duration_s * 1e9) >
	            (uint64_t)1e18);
	free(e);
}

/* Issue 20's smaller items: byte-order mark, CR-only lines, the real field count, whole
 * numbers in decimal only, blanks trimmed on both sides, long lines, machine ids beyond
 * the cluster, the openb header's missing columns, openb numeric fields. */
static void test_trace_text_forms(void **state)
{
	(void)state;
	rusk_arrival *a;
	assert_int_equal(expect_rows(TMP("bom.csv", "\xef\xbb\xbf"
	                                            "arrival_s,duration_s,rus\n0,1,1\n"),
	                             RUSK_TRACE_CSV, NULL),
	                 1);
	assert_int_equal(expect_rows(TMP("bom_comment.csv", "\xef\xbb\xbf# made by a tool\n"
	                                                    "arrival_s,duration_s,rus\n0,1,1\n"),
	                             RUSK_TRACE_CSV, NULL),
	                 1);
	assert_int_equal(expect_rows(TMP("cr.csv", "arrival_s,duration_s,rus\r0,1,1\r2,1,2\r\r"
	                                           "3,1,3"),
	                             RUSK_TRACE_CSV, &a),
	                 3);
	assert_true(a[2].rus == 3 && a[2].line == 5); /* lines count CRs, the empty one too */
	free(a);
	expect_path_error(TMP("cr_bad.csv", "arrival_s,duration_s,rus\r0,1,1\rx,1,1\r"),
	                  RUSK_TRACE_CSV, RUSK_EPARSE, "cr_bad.csv:3: arrival_s 'x'");
	assert_int_equal(expect_rows(TMP("crlf.csv", "arrival_s,duration_s,rus\r\n0,1,1\r\n"),
	                             RUSK_TRACE_CSV, NULL),
	                 1);
	expect_path_error(TMP("wide.csv", "arrival_s,duration_s,rus\n0,1,1,1,1,1,1,1,1,1,1,1,1,1,"
	                                  "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
	                                  "1,1,1,1,1,1,1,1\n"),
	                  RUSK_TRACE_CSV, RUSK_EPARSE, "wide.csv:2: expected 3 fields, found 50");
	static const char *const not_whole[] = {"0x10", "1e1", "+1", "1.0", "0x1p3", ""};
	for (size_t i = 0; i < sizeof not_whole / sizeof *not_whole; i++) {
		char body[128], needle[64];
		snprintf(body, sizeof body, "arrival_s,duration_s,rus\n0,1,%s\n", not_whole[i]);
		snprintf(needle, sizeof needle, "rus_%zu.csv:2: rus '%s' is not an integer", i,
		         not_whole[i]);
		char name[32];
		snprintf(name, sizeof name, "rus_%zu.csv", i);
		expect_path_error(tmp_trace(name, body, strlen(body)), RUSK_TRACE_CSV, RUSK_EPARSE,
		                  needle);
	}
	expect_path_error(TMP("pref_exp.csv", "arrival_s,duration_s,rus,preferred\n0,1,1,1e1\n"),
	                  RUSK_TRACE_CSV, RUSK_EPARSE, "pref_exp.csv:2: preferred '1e1'");
	expect_path_error(TMP("inf.csv", "arrival_s,duration_s,rus\n0,inf,1\n"), RUSK_TRACE_CSV,
	                  RUSK_EPARSE, "inf.csv:2: duration_s 'inf'");
	/* blanks around fields: both sides alike (trailing ones were refused) */
	assert_int_equal(expect_rows(TMP("blanks.csv", " arrival_s , duration_s,rus\t\n"
	                                               " 0,1 , 2\n0.5 ,\t1,3 \n  \n"),
	                             RUSK_TRACE_CSV, &a),
	                 2);
	assert_true(a[0].rus == 2 && a[1].rus == 3 && a[1].t_s == 0.5);
	free(a);
	/* lines of any length: comments, and data lines padded past the old 4,095 bytes */
	size_t big = 100000;
	char *text = malloc(big + 5064);
	assert_non_null(text);
	strcpy(text, "arrival_s,duration_s,rus\n#");
	size_t len = strlen(text);
	memset(text + len, 'x', big);
	len += big;
	len += (size_t)sprintf(text + len, "\n0,1,");
	memset(text + len, ' ', 5000);
	len += 5000;
	len += (size_t)sprintf(text + len, "1\n");
	assert_int_equal(expect_rows(tmp_trace("long.csv", text, len), RUSK_TRACE_CSV, NULL), 1);
	free(text);
	/* ...but a data line is bounded (1 MiB): memory stays bounded on any input */
	len = (1u << 20) + 64;
	text = malloc(len);
	assert_non_null(text);
	memset(text, ' ', len);
	memcpy(text, "arrival_s,duration_s,rus\n0,1,1", 30);
	text[len - 1] = '\n';
	expect_path_error(tmp_trace("huge_line.csv", text, len), RUSK_TRACE_CSV, RUSK_EPARSE,
	                  "huge_line.csv:2: line longer than");
	free(text);
	/* preferred machines beyond the cluster: named once its size is known */
	char err[512] = "";
	size_t n = expect_rows(data("trace_pref_beyond.csv"), RUSK_TRACE_CSV, &a);
	assert_int_equal(rusk_trace_check_preferred(a, n, 6000, "p.csv", err, sizeof err), RUSK_OK);
	assert_int_equal(rusk_trace_check_preferred(a, n, 2000, "p.csv", err, sizeof err),
	                 RUSK_EPARSE);
	if (strstr(err, "p.csv:3: preferred machine 5000 is beyond the cluster's 2000") == NULL)
		fail_msg("%s", err);
	free(a);
	/* openb: the header says what is missing; numeric and class fields are checked */
	expect_trace_error("pods_no_times.csv", RUSK_TRACE_OPENB, RUSK_EPARSE,
	                   "pods_no_times.csv:1: not an openb pod list header: missing columns "
	                   "creation_time, deletion_time, scheduled_time");
	expect_path_error(TMP("openb_swap.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_"
	                                        "spec,qos,pod_phase,deletion_time,creation_time,"
	                                        "scheduled_time\n"),
	                  RUSK_TRACE_OPENB, RUSK_EPARSE,
	                  "openb_swap.csv:1: not an openb pod list header: column 9 is "
	                  "'deletion_time', expected 'creation_time'");
	expect_trace_error("pods_bad_memory.csv", RUSK_TRACE_OPENB, RUSK_EPARSE,
	                   "pods_bad_memory.csv:3: memory_mib 'lots' is not a whole number");
	expect_trace_error("pods_bad_gpus.csv", RUSK_TRACE_OPENB, RUSK_EPARSE,
	                   "pods_bad_gpus.csv:2: num_gpu '-1' is not a whole number");
	static const char openb_head[] = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,"
	                                 "qos,pod_phase,creation_time,deletion_time,"
	                                 "scheduled_time\n";
	static const struct {
		const char *row, *needle;
	} openb_bad[] = {
	        {"p,1000,1,0,1001,,BE,Running,0,1,0", "gpu_milli '1001'"},
	        {"p,1000,1,0,0,,Gold,Running,0,1,0", "qos 'Gold' is not LS"},
	        {"p,1000,1,0,0,,BE,Lost,0,1,0", "pod_phase 'Lost' is not Running"},
	        {"p,1000,1,0,0,,BE,Pending,0,1,soon", "scheduled_time 'soon'"},
	        {"p,1000,1e3,0,0,,BE,Running,0,1,0", "memory_mib '1e3'"},
	};
	for (size_t i = 0; i < sizeof openb_bad / sizeof *openb_bad; i++) {
		char body[512], name[32], needle[128];
		snprintf(body, sizeof body, "%s%s\n", openb_head, openb_bad[i].row);
		snprintf(name, sizeof name, "openb_%zu.csv", i);
		snprintf(needle, sizeof needle, "%s:2: %s", name, openb_bad[i].needle);
		expect_path_error(tmp_trace(name, body, strlen(body)), RUSK_TRACE_OPENB,
		                  RUSK_EPARSE, needle);
	}
	/* every pod phase is replayed; LS and Guaranteed are high priority */
	char body[1024];
	snprintf(body, sizeof body,
	         "\xef\xbb\xbf%sa,1000,1,0,0,,LS,Running,0,1,0\nb,1000,1,0,0,,BE,Failed,1,2,1\n"
	         "c,1000,1,0,0,,Guaranteed,Pending,2,3,\nd,1000,1,0,0,,Burstable,Succeeded,3,4,3\n",
	         openb_head);
	assert_int_equal(
	        expect_rows(tmp_trace("openb_ok.csv", body, strlen(body)), RUSK_TRACE_OPENB, &a),
	        4);
	assert_true(a[0].priority == 1 && a[1].priority == 0 && a[2].priority == 1 &&
	            a[3].priority == 0);
	free(a);
}

/* The generic CSV's target_s column (rusk run/sim --target on): a completion-time target,
 * empty for none, scaled with the trace's times; a bad value names FILE:LINE. */
static void test_trace_target_column(void **state)
{
	(void)state;
	rusk_arrival *a;
	size_t n;
	char err[512];
	assert_int_equal(rusk_trace_load(data("trace_target.csv"), RUSK_TRACE_CSV, &a, &n, NULL,
	                                 NULL, err, sizeof err),
	                 RUSK_OK);
	assert_int_equal(n, 5);
	assert_true(a[0].target_s == 1.5 && a[1].target_s == 0 && a[2].target_s == 3);
	size_t m;
	rusk_arrival *x = rusk_trace_expand(a, n, 2.0, 1, &m);
	assert_non_null(x);
	assert_true(m == 5 && x[0].target_s == 0.75 && x[1].target_s == 0 && x[4].target_s == 0.4);
	free(x);
	free(a);
	expect_trace_error("trace_bad_target.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_bad_target.csv:3: target_s 'x' is not a positive number");
	expect_trace_error("trace_neg_target.csv", RUSK_TRACE_CSV, RUSK_EPARSE,
	                   "trace_neg_target.csv:2: target_s '-1'");
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
	        cmocka_unit_test(test_trace_target_column),
	        cmocka_unit_test(test_trace_replay_keeps_order),
	        cmocka_unit_test(test_trace_nul_and_special_files),
	        cmocka_unit_test(test_trace_time_bounds),
	        cmocka_unit_test(test_trace_vec_columns),
	        cmocka_unit_test(test_trace_group_column),
	        cmocka_unit_test(test_trace_job_columns),
	        cmocka_unit_test(test_trace_text_forms),
	};
	return cmocka_run_group_tests(tests, NULL, tmp_teardown);
}
