/* SPDX-License-Identifier: MIT */
/*
 * The classification engine (rusk/classify.h, Quasar §3.2): reconstruction of a known
 * low-rank matrix, determinism from a seed, the CSV loader's refusals (FILE:LINE), the
 * API's errors, a job's four classifications, feedback making later classifications
 * better, and (RUSK_DEBUG builds) readers on unregistered threads refused.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "base/rng.h"

static int setup(void **state)
{
	(void)state;
	rusk_thread_register();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return 0;
}

/* Default parameters except rank, log_values and, when lambda > 0, the SGD's lambda, tol
 * and max_epochs. */
static rusk_cls *make_p(uint32_t cols, uint32_t rank, bool log_values, double lambda, double tol,
                        uint32_t max_epochs)
{
	rusk_cls_params p;
	rusk_cls_params_init(&p, cols);
	p.rank = rank;
	p.log_values = log_values;
	if (lambda > 0) {
		p.lambda = lambda;
		p.tol = tol;
		p.max_epochs = max_epochs;
	}
	rusk_cls *c = NULL;
	char err[256] = "";
	if (rusk_cls_create(&p, &c, err, sizeof err) != RUSK_OK)
		fail_msg("create: %s", err);
	return c;
}

static rusk_cls *make(uint32_t cols, uint32_t rank, bool log_values)
{
	return make_p(cols, rank, log_values, 0, 0, 0);
}

/*
 * A known rank-2 matrix (plus row and column biases), 300 x 20, half of its cells
 * observed without noise: the model must fill in the other half. Noiseless data needs
 * little regularisation, so lambda = 0.001 and SGD runs until the squared error changes by
 * < 1e-6 of itself (at most 3000 epochs). Stated bound: mean relative error <= 0.5% and
 * max <= 5% on the hidden cells, in log space (positive values) and in linear space.
 * (With the defaults, lambda = 0.02 and tol = 1e-4, the mean is 3.8% in log space: the
 * regulariser, not the method, sets the floor.)
 */
static void lowrank(bool log_values)
{
	enum { R = 300, C = 20 };
	static double truth[R][C];
	rusk_rng rng;
	rusk_rng_seed(&rng, 42, log_values);
	double a[R][2], b[C][2], bu[R], bi[C];
	for (int u = 0; u < R; u++) {
		a[u][0] = rusk_rng_unit(&rng) - 0.5;
		a[u][1] = rusk_rng_unit(&rng) - 0.5;
		bu[u] = 0.5 * (rusk_rng_unit(&rng) - 0.5);
	}
	for (int i = 0; i < C; i++) {
		b[i][0] = 2 * (rusk_rng_unit(&rng) - 0.5);
		b[i][1] = 2 * (rusk_rng_unit(&rng) - 0.5);
		bi[i] = 0.5 * (rusk_rng_unit(&rng) - 0.5);
	}
	rusk_cls *c = make_p(C, 2, log_values, 0.001, 1e-6, 3000);
	static bool seen[R][C];
	for (int u = 0; u < R; u++) {
		rusk_cls_entry e[C];
		uint32_t n = 0;
		for (int i = 0; i < C; i++) {
			double y = 1.0 + bu[u] + bi[i] + a[u][0] * b[i][0] + a[u][1] * b[i][1];
			truth[u][i] = log_values ? exp(y) : 3.0 + y;
			seen[u][i] = rusk_rng_unit(&rng) < 0.5;
			if (seen[u][i])
				e[n++] = (rusk_cls_entry){(uint32_t)i, truth[u][i]};
		}
		if (n == 0) {
			seen[u][0] = true;
			e[n++] = (rusk_cls_entry){0, truth[u][0]};
		}
		uint32_t row;
		assert_int_equal(rusk_cls_add_row(c, e, n, &row, NULL, 0), RUSK_OK);
		assert_int_equal(row, (uint32_t)u);
	}
	rusk_cls_train_info ti;
	char err[256] = "";
	if (rusk_cls_retrain(c, &ti, err, sizeof err) != RUSK_OK)
		fail_msg("retrain: %s", err);
	assert_int_equal(ti.rows, R);
	assert_int_equal(ti.rank, 2);
	assert_true(ti.epochs >= 1);
	double sum = 0, worst = 0;
	uint32_t hidden = 0;
	for (int u = 0; u < R; u++) {
		double est[C];
		assert_int_equal(rusk_cls_estimate_row(c, (uint32_t)u, est), RUSK_OK);
		for (int i = 0; i < C; i++) {
			if (seen[u][i])
				continue;
			double rel = fabs(est[i] - truth[u][i]) / truth[u][i];
			sum += rel;
			worst = rel > worst ? rel : worst;
			hidden++;
		}
	}
	print_message("low rank (%s): %u hidden cells, mean error %.3f%%, max %.3f%%, %u epochs, "
	              "rmse %.2e\n",
	              log_values ? "log" : "linear", hidden, 100 * sum / hidden, 100 * worst,
	              ti.epochs, ti.rmse);
	assert_true(sum / hidden <= 0.005);
	assert_true(worst <= 0.05);
	rusk_cls_destroy(c);
}

static void test_lowrank_log(void **state)
{
	(void)state;
	lowrank(true);
}

static void test_lowrank_linear(void **state)
{
	(void)state;
	lowrank(false);
}

/* A model trained on the first `train` rows of kind k's truth (10% exhaustive, the rest
 * with 2 entries), for the determinism and job tests. */
static rusk_cls *train_kind(const rusk_cls_matrix *m, rusk_cls_kind k, uint32_t train,
                            uint64_t seed)
{
	uint32_t cols = rusk_cls_matrix_cols(m);
	rusk_cls_params p;
	rusk_cls_params_init(&p, cols);
	p.seed = seed;
	rusk_cls *c = NULL;
	assert_int_equal(rusk_cls_create(&p, &c, NULL, 0), RUSK_OK);
	for (uint32_t u = 0; u < train; u++) {
		rusk_cls_entry e[RUSK_CLS_MAX_COLS];
		uint32_t n;
		assert_int_equal(
		        rusk_cls_profile_row(m, k, u, u < train / 10 ? cols : 2, 0.03, seed, e, &n),
		        RUSK_OK);
		assert_int_equal(rusk_cls_add_row(c, e, n, NULL, NULL, 0), RUSK_OK);
	}
	assert_int_equal(rusk_cls_retrain(c, NULL, NULL, 0), RUSK_OK);
	return c;
}

/* The same seed gives the same truth, the same model and the same classifications, bit
 * for bit; another seed gives another truth. */
static void test_determinism(void **state)
{
	(void)state;
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = 300;
	rusk_cls_truth *t1, *t2, *t3;
	assert_int_equal(rusk_cls_truth_generate(&gp, &t1, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cls_truth_generate(&gp, &t2, NULL, 0), RUSK_OK);
	gp.seed = 2;
	assert_int_equal(rusk_cls_truth_generate(&gp, &t3, NULL, 0), RUSK_OK);
	bool differs = false;
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		const rusk_cls_matrix *m1 = rusk_cls_truth_matrix(t1, k);
		const rusk_cls_matrix *m2 = rusk_cls_truth_matrix(t2, k);
		const rusk_cls_matrix *m3 = rusk_cls_truth_matrix(t3, k);
		uint32_t cols = rusk_cls_matrix_cols(m1);
		for (uint32_t u = 0; u < gp.workloads; u++)
			for (uint32_t i = 0; i < cols; i++) {
				double a = rusk_cls_matrix_get(m1, u, i);
				double b = rusk_cls_matrix_get(m2, u, i);
				assert_memory_equal(&a, &b, sizeof a);
				assert_true(isfinite(a) && a > 0);
				differs |= a != rusk_cls_matrix_get(m3, u, i);
			}
		rusk_cls *c1 = train_kind(m1, k, 250, 7), *c2 = train_kind(m2, k, 250, 7);
		for (uint32_t u = 250; u < 300; u++) {
			rusk_cls_entry e[2];
			uint32_t n;
			double o1[RUSK_CLS_MAX_COLS], o2[RUSK_CLS_MAX_COLS];
			assert_int_equal(rusk_cls_profile_row(m1, k, u, 2, 0.03, 9, e, &n),
			                 RUSK_OK);
			assert_int_equal(n, 2);
			assert_int_equal(rusk_cls_classify(c1, e, n, o1, NULL), RUSK_OK);
			assert_int_equal(rusk_cls_classify(c2, e, n, o2, NULL), RUSK_OK);
			assert_memory_equal(o1, o2, sizeof(double) * cols);
		}
		rusk_cls_destroy(c1);
		rusk_cls_destroy(c2);
	}
	assert_true(differs);
	rusk_cls_truth_destroy(t1);
	rusk_cls_truth_destroy(t2);
	rusk_cls_truth_destroy(t3);
}

static void expect_csv(const char *name, int code, const char *msg)
{
	char path[512], err[512] = "", want[600];
	snprintf(path, sizeof path, "%s/%s", RUSK_TEST_DATA, name);
	rusk_cls_matrix *m = (rusk_cls_matrix *)1;
	assert_int_equal(rusk_cls_matrix_load_csv(path, true, &m, err, sizeof err), code);
	assert_null(m);
	snprintf(want, sizeof want, "%s%s", path, msg);
	if (strncmp(err, want, strlen(want)) != 0)
		fail_msg("%s: got '%s', want a message starting '%s'", name, err, want);
}

static void test_csv(void **state)
{
	(void)state;
	char path[512], err[256] = "";
	snprintf(path, sizeof path, "%s/cls_good.csv", RUSK_TEST_DATA);
	rusk_cls_matrix *m = NULL;
	assert_int_equal(rusk_cls_matrix_load_csv(path, true, &m, err, sizeof err), RUSK_OK);
	assert_int_equal(rusk_cls_matrix_rows(m), 3);
	assert_int_equal(rusk_cls_matrix_cols(m), 4);
	assert_true(isnan(rusk_cls_matrix_get(m, 0, 2)));
	assert_true(isnan(rusk_cls_matrix_get(m, 1, 1)));
	assert_true(rusk_cls_matrix_get(m, 1, 3) == 3.6); /* blanks and CRLF */
	assert_true(rusk_cls_matrix_get(m, 2, 3) == 8);
	rusk_cls_matrix_destroy(m);

	expect_csv("cls_width.csv", RUSK_EPARSE, ":3: 2 fields, the header has 3");
	expect_csv("cls_nan.csv", RUSK_EPARSE, ":3: column 2: 'NaN' is not finite");
	expect_csv("cls_junk.csv", RUSK_EPARSE, ":3: column 2: 'fast' is not a number");
	expect_csv("cls_zero.csv", RUSK_EPARSE, ":2: column 2: 0 is not > 0");
	expect_csv("cls_norows.csv", RUSK_EPARSE, ":2: no data rows after the header");
	expect_csv("cls_empty_row.csv", RUSK_EPARSE, ":3: a row with no value");
	expect_csv("cls_missing_file.csv", RUSK_EIO, ": cannot open");
	/* Without `positive`, 0 is a value. */
	snprintf(path, sizeof path, "%s/cls_zero.csv", RUSK_TEST_DATA);
	assert_int_equal(rusk_cls_matrix_load_csv(path, false, &m, NULL, 0), RUSK_OK);
	assert_true(rusk_cls_matrix_get(m, 0, 1) == 0);
	rusk_cls_matrix_destroy(m);
}

static void test_api_errors(void **state)
{
	(void)state;
	rusk_cls_params p;
	rusk_cls_params_init(&p, 0);
	rusk_cls *c = NULL;
	char err[256] = "";
	assert_int_equal(rusk_cls_create(&p, &c, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "cols 0"));
	rusk_cls_params_init(&p, 4);
	p.rank = 99;
	assert_int_equal(rusk_cls_create(&p, &c, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "rank 99"));
	c = make(4, 2, true);
	rusk_cls_entry e[2] = {{0, 1.0}, {3, 2.0}};
	double out[4];
	assert_int_equal(rusk_cls_classify(c, e, 2, out, NULL), RUSK_ENOMODEL);
	assert_int_equal(rusk_cls_estimate_row(c, 0, out), RUSK_ENOMODEL);
	assert_int_equal(rusk_cls_retrain(c, NULL, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "no measured entry"));
	rusk_cls_entry bad_col = {4, 1.0}, bad_val = {1, -2.0}, nan_val = {1, NAN};
	assert_int_equal(rusk_cls_add_row(c, &bad_col, 1, NULL, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "column 4"));
	assert_int_equal(rusk_cls_add_row(c, &bad_val, 1, NULL, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_add_row(c, &nan_val, 1, NULL, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_add_row(c, e, 0, NULL, err, sizeof err), RUSK_EINVAL);
	uint32_t row;
	assert_int_equal(rusk_cls_add_row(c, e, 2, &row, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cls_feedback(c, 1, e, 2, err, sizeof err), RUSK_ERANGE);
	assert_int_equal(rusk_cls_rows(c), 1);
	assert_int_equal(rusk_cls_version(c), 0);
	rusk_cls_train_info ti;
	assert_int_equal(rusk_cls_retrain(c, &ti, NULL, 0), RUSK_OK);
	assert_int_equal(ti.version, 1);
	assert_int_equal(rusk_cls_version(c), 1);
	assert_int_equal(rusk_cls_estimate_row(c, 1, out), RUSK_ERANGE);
	/* Profiled columns keep their measurement; a repeated column its mean. */
	rusk_cls_entry rep[3] = {{0, 1.0}, {2, 5.0}, {0, 3.0}};
	rusk_cls_fold_info fi;
	assert_int_equal(rusk_cls_classify(c, rep, 3, out, &fi), RUSK_OK);
	assert_true(out[0] == 2.0 && out[2] == 5.0);
	assert_true(isfinite(out[1]) && out[1] > 0 && isfinite(out[3]) && out[3] > 0);
	assert_int_equal(fi.version, 1);
	assert_int_equal(rusk_cls_classify(c, &bad_col, 1, out, NULL), RUSK_EINVAL);
	rusk_cls_destroy(c);
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.platforms = 99;
	rusk_cls_truth *t = NULL;
	assert_int_equal(rusk_cls_truth_generate(&gp, &t, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "platforms 99"));
}

/* The four classifications of one job, through rusk_classifier. */
static void test_job(void **state)
{
	(void)state;
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = 220;
	rusk_cls_truth *t;
	assert_int_equal(rusk_cls_truth_generate(&gp, &t, NULL, 0), RUSK_OK);
	rusk_cls_params p[RUSK_CLS_KINDS];
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_params_init(&p[k], rusk_cls_matrix_cols(rusk_cls_truth_matrix(t, k)));
	rusk_classifier *clf;
	assert_int_equal(rusk_classifier_create(p, &clf, NULL, 0), RUSK_OK);
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		const rusk_cls_matrix *m = rusk_cls_truth_matrix(t, k);
		for (uint32_t u = 0; u < 200; u++) {
			rusk_cls_entry e[RUSK_CLS_MAX_COLS];
			uint32_t n;
			rusk_cls_profile_row(m, k, u, rusk_cls_matrix_cols(m), 0.03, 3, e, &n);
			assert_int_equal(
			        rusk_cls_add_row(rusk_classifier_get(clf, k), e, n, NULL, NULL, 0),
			        RUSK_OK);
		}
	}
	rusk_cls_train_info ti[RUSK_CLS_KINDS];
	assert_int_equal(rusk_classifier_retrain(clf, ti, NULL, 0), RUSK_OK);
	rusk_cls_entry e[RUSK_CLS_KINDS][2];
	rusk_cls_job_profile jp;
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		rusk_cls_profile_row(rusk_cls_truth_matrix(t, k), k, 210, 2, 0.03, 5, e[k],
		                     &jp.n[k]);
		jp.e[k] = e[k];
		assert_true(ti[k].converged);
	}
	static rusk_cls_job_estimate est;
	assert_int_equal(rusk_classifier_classify(clf, &jp, &est), RUSK_OK);
	assert_int_equal(est.cols[RUSK_CLS_INTERFERENCE], RUSK_CLS_INTERFERENCE_COLS);
	assert_int_equal(est.cols[RUSK_CLS_SCALE_UP], gp.su_rus * gp.su_mem_blocks);
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		const rusk_cls_matrix *m = rusk_cls_truth_matrix(t, k);
		assert_int_equal(est.version[k], 1);
		double sum = 0;
		for (uint32_t i = 0; i < est.cols[k]; i++)
			sum += fabs(est.v[k][i] - rusk_cls_matrix_get(m, 210, i)) /
			       rusk_cls_matrix_get(m, 210, i);
		print_message("job: %s mean error %.1f%%\n", rusk_cls_kind_name(k),
		              100 * sum / est.cols[k]);
		assert_true(sum / est.cols[k] < 0.5); /* sane, not a bound of the method */
	}
	rusk_classifier_destroy(clf);
	rusk_cls_truth_destroy(t);
}

/*
 * Feedback: the first model knows only two of the six families (30 rows measured in full).
 * Jobs of every family then arrive in batches of 60, each classified from 2 entries; at
 * completion its measured row replaces the estimates (rusk_cls_feedback) and the model is
 * retrained. Averaged over the four kinds, the error of the last batch must be below 3/4
 * of the first one's, and no kind may get worse (heterogeneity, which two entries already
 * pin down, improves least).
 */
static void test_feedback(void **state)
{
	(void)state;
	enum { BATCH = 60, BATCHES = 5 };
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = 2000;
	rusk_cls_truth *t;
	assert_int_equal(rusk_cls_truth_generate(&gp, &t, NULL, 0), RUSK_OK);
	double first = 0, last = 0;
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		const rusk_cls_matrix *m = rusk_cls_truth_matrix(t, k);
		uint32_t cols = rusk_cls_matrix_cols(m), u = 0, known = 0;
		rusk_cls *c = make(cols, 4, true);
		rusk_cls_entry e[RUSK_CLS_MAX_COLS];
		uint32_t n;
		for (; known < 30; u++)
			if (rusk_cls_truth_family(t, u) < 2) {
				rusk_cls_profile_row(m, k, u, cols, 0.03, 11, e, &n);
				assert_int_equal(rusk_cls_add_row(c, e, n, NULL, NULL, 0), RUSK_OK);
				known++;
			}
		assert_int_equal(rusk_cls_retrain(c, NULL, NULL, 0), RUSK_OK);
		double err[BATCHES];
		for (int b = 0; b < BATCHES; b++) {
			double sum = 0;
			for (int j = 0; j < BATCH; j++, u++) {
				double est[RUSK_CLS_MAX_COLS];
				uint32_t row;
				rusk_cls_profile_row(m, k, u, 2, 0.03, 12, e, &n);
				assert_int_equal(rusk_cls_classify(c, e, n, est, NULL), RUSK_OK);
				double rel = 0;
				for (uint32_t i = 0; i < cols; i++)
					rel += fabs(est[i] - rusk_cls_matrix_get(m, u, i)) /
					       rusk_cls_matrix_get(m, u, i);
				sum += rel / cols;
				assert_int_equal(rusk_cls_add_row(c, e, n, &row, NULL, 0), RUSK_OK);
				rusk_cls_profile_row(m, k, u, cols, 0.03, 13, e, &n);
				assert_int_equal(rusk_cls_feedback(c, row, e, n, NULL, 0), RUSK_OK);
			}
			err[b] = sum / BATCH;
			assert_int_equal(rusk_cls_retrain(c, NULL, NULL, 0), RUSK_OK);
		}
		print_message("feedback %s: batch errors %.1f%% %.1f%% %.1f%% %.1f%% %.1f%%\n",
		              rusk_cls_kind_name(k), 100 * err[0], 100 * err[1], 100 * err[2],
		              100 * err[3], 100 * err[4]);
		assert_true(err[BATCHES - 1] <= err[0]);
		first += err[0] / RUSK_CLS_KINDS;
		last += err[BATCHES - 1] / RUSK_CLS_KINDS;
		rusk_cls_destroy(c);
	}
	print_message("feedback: mean over kinds %.1f%% -> %.1f%%\n", 100 * first, 100 * last);
	assert_true(last < 0.75 * first);
	rusk_cls_truth_destroy(t);
}

/*
 * The readers need a registered thread: a retrain frees the replaced model after a grace
 * period, which waits for registered readers only. RUSK_DEBUG builds (the ASan run, every
 * build type but Release) refuse an unregistered reader with RUSK_ENOTREG, as the agent
 * calls do; registered, the same calls work.
 */
typedef struct reader_ctx {
	rusk_cls *c;
	rusk_classifier *clf;
	rusk_cls_job_profile jp;
	int classify, estimate, job; /* unregistered */
	int classify_reg, estimate_reg, job_reg;
	bool registered;
} reader_ctx;

static void *reader_main(void *arg)
{
	reader_ctx *r = arg;
	r->registered = rusk_thread_registered();
	rusk_cls_entry e[2] = {{0, 2.0}, {3, 5.0}};
	double out[RUSK_CLS_MAX_COLS];
	static rusk_cls_job_estimate est;
#if defined(RUSK_DEBUG) || !defined(NDEBUG)
	/* Only where the checks are on: elsewhere these calls are the bug they prevent. */
	r->classify = rusk_cls_classify(r->c, e, 2, out, NULL);
	r->estimate = rusk_cls_estimate_row(r->c, 0, out);
	r->job = rusk_classifier_classify(r->clf, &r->jp, &est);
#endif
	rusk_thread_register();
	r->classify_reg = rusk_cls_classify(r->c, e, 2, out, NULL);
	r->estimate_reg = rusk_cls_estimate_row(r->c, 0, out);
	r->job_reg = rusk_classifier_classify(r->clf, &r->jp, &est);
	rusk_thread_unregister();
	return NULL;
}

static void test_unregistered_readers(void **state)
{
	(void)state;
	rusk_cls *c = make(6, 2, true);
	rusk_cls_params p[RUSK_CLS_KINDS];
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_params_init(&p[k],
		                     k == RUSK_CLS_INTERFERENCE ? RUSK_CLS_INTERFERENCE_COLS : 6);
	rusk_classifier *clf;
	assert_int_equal(rusk_classifier_create(p, &clf, NULL, 0), RUSK_OK);
	static rusk_cls_entry rows[RUSK_CLS_KINDS][RUSK_CLS_INTERFERENCE_COLS];
	reader_ctx r = {.c = c, .clf = clf};
	for (uint32_t u = 0; u < 10; u++) {
		for (int k = 0; k < RUSK_CLS_KINDS; k++) {
			uint32_t cols = rusk_cls_cols(rusk_classifier_get(clf, k));
			for (uint32_t i = 0; i < cols; i++)
				rows[k][i] = (rusk_cls_entry){i, (1.0 + u) * (1.0 + i % 7)};
			assert_int_equal(rusk_cls_add_row(rusk_classifier_get(clf, k), rows[k],
			                                  cols, NULL, NULL, 0),
			                 RUSK_OK);
		}
		assert_int_equal(rusk_cls_add_row(c, rows[0], 6, NULL, NULL, 0), RUSK_OK);
	}
	assert_int_equal(rusk_cls_retrain(c, NULL, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_classifier_retrain(clf, NULL, NULL, 0), RUSK_OK);
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		r.jp.e[k] = rows[k];
		r.jp.n[k] = 2;
	}
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, reader_main, &r), 0);
	pthread_join(th, NULL);
	assert_false(r.registered);
#if defined(RUSK_DEBUG) || !defined(NDEBUG)
	assert_int_equal(r.classify, RUSK_ENOTREG);
	assert_int_equal(r.estimate, RUSK_ENOTREG);
	assert_int_equal(r.job, RUSK_ENOTREG);
#else
	print_message("RUSK_DEBUG off (Release): unregistered readers are not checked\n");
#endif
	assert_int_equal(r.classify_reg, RUSK_OK);
	assert_int_equal(r.estimate_reg, RUSK_OK);
	assert_int_equal(r.job_reg, RUSK_OK);
	rusk_classifier_destroy(clf);
	rusk_cls_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_lowrank_log), cmocka_unit_test(test_lowrank_linear),
	        cmocka_unit_test(test_determinism), cmocka_unit_test(test_csv),
	        cmocka_unit_test(test_api_errors),  cmocka_unit_test(test_job),
	        cmocka_unit_test(test_feedback),    cmocka_unit_test(test_unregistered_readers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
