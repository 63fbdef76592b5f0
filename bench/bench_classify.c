/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmarks of the classification engine (Quasar §3.2, core/learn/classify.c), through
 * the C shim, on the generator's population (core/learn/classify_gen.c) with 1,000 training
 * workloads per classification (100 profiled exhaustively, 900 with 2 entries):
 *   classify/one/scale-up     one fold-in of a new job from 2 profiled entries against the
 *                             trained scale-up model (32 columns): closed-form solve
 *                             (Cholesky) + SGD on the row + reconstruction
 *   classify/job              one job's four fold-ins (rusk_classifier_classify): the
 *                             issue's bound is <= 1 ms at 1,000 workloads
 *   retrain/scale-up/1000     a full retrain of the scale-up model (SVD + SGD + prior) and
 *                             its RCU publication
 *   retrain/job/1000          the four retrains
 * The benchmark thread is registered with RCU, as every reader must be.
 */
#include <stdio.h>
#include <stdlib.h>

#include <rusk/rusk.h>

#include "shim/rusk_gbench.h"

#define TRAIN 1000
#define JOBS  256

static rusk_classifier *clf;
static rusk_cls_truth *truth;
static rusk_cls_entry prof[JOBS][RUSK_CLS_KINDS][2];
static uint32_t nprof[JOBS][RUSK_CLS_KINDS];

static void bm_one(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	rusk_cls *c = rusk_classifier_get(clf, RUSK_CLS_SCALE_UP);
	double out[RUSK_CLS_MAX_COLS];
	uint64_t bad = 0, j = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		uint64_t x = j++ % JOBS;
		bad |= (uint64_t)rusk_cls_classify(c, prof[x][RUSK_CLS_SCALE_UP],
		                                   nprof[x][RUSK_CLS_SCALE_UP], out, NULL);
	}
	if (bad)
		rusk_gb_error(st, "a classification failed");
}

static void bm_job(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	static rusk_cls_job_estimate est;
	uint64_t bad = 0, j = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		uint64_t x = j++ % JOBS;
		rusk_cls_job_profile p;
		for (int k = 0; k < RUSK_CLS_KINDS; k++) {
			p.e[k] = prof[x][k];
			p.n[k] = nprof[x][k];
		}
		bad |= (uint64_t)rusk_classifier_classify(clf, &p, &est);
	}
	if (bad)
		rusk_gb_error(st, "a classification failed");
}

static void bm_retrain(rusk_gb_state *st, void *ctx)
{
	uint64_t bad = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		if (ctx == NULL)
			bad |= (uint64_t)rusk_cls_retrain(
			        rusk_classifier_get(clf, RUSK_CLS_SCALE_UP), NULL, NULL, 0);
		else
			bad |= (uint64_t)rusk_classifier_retrain(clf, NULL, NULL, 0);
	}
	if (bad)
		rusk_gb_error(st, "a retrain failed");
}

int main(int argc, char **argv)
{
	rusk_thread_register();
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = TRAIN + JOBS;
	char err[256];
	rusk_cls_params p[RUSK_CLS_KINDS];
	if (rusk_cls_truth_generate(&gp, &truth, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_classify: %s\n", err);
		return 1;
	}
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_params_init(&p[k], rusk_cls_matrix_cols(rusk_cls_truth_matrix(truth, k)));
	if (rusk_classifier_create(p, &clf, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_classify: %s\n", err);
		return 1;
	}
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		const rusk_cls_matrix *m = rusk_cls_truth_matrix(truth, k);
		rusk_cls *c = rusk_classifier_get(clf, k);
		for (uint32_t u = 0; u < TRAIN; u++) {
			rusk_cls_entry e[RUSK_CLS_MAX_COLS];
			uint32_t n;
			rusk_cls_profile_row(m, k, u, u < TRAIN / 10 ? rusk_cls_matrix_cols(m) : 2,
			                     0.03, 1, e, &n);
			rusk_cls_add_row(c, e, n, NULL, NULL, 0);
		}
		for (uint32_t j = 0; j < JOBS; j++)
			rusk_cls_profile_row(m, k, TRAIN + j, 2, 0.03, 2, prof[j][k], &nprof[j][k]);
	}
	if (rusk_classifier_retrain(clf, NULL, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_classify: %s\n", err);
		return 1;
	}
	rusk_gb_register("classify/one/scale-up", bm_one, NULL, 1, 0);
	rusk_gb_register("classify/job", bm_job, NULL, 1, 0);
	rusk_gb_register("retrain/scale-up/1000", bm_retrain, NULL, 1, 0);
	rusk_gb_register("retrain/job/1000", bm_retrain, (void *)1, 1, 0);
	int rc = rusk_gb_main(argc, argv);
	rusk_classifier_destroy(clf);
	rusk_cls_truth_destroy(truth);
	rusk_thread_unregister();
	return rc;
}
