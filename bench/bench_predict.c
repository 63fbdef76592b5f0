/* SPDX-License-Identifier: MIT */
/*
 * 3σPredict's per-job costs (issue 18: predict <= 2 us and update <= 2 us per job at 100K
 * feature values; memory per feature value <= 2 KB).
 *
 * The predictor is warmed with 40,000 job types (8,000 users, one name per type, 64
 * resource shapes, 4 queues: about 125K feature values over the six features), eight
 * runtimes each, so every feature value has a histogram and judged experts. Then:
 *
 *   predict/predict/D        rusk_predict of a job type drawn from D, point estimate only
 *   predict/predict+dist/D   the same with a copy of the chosen distribution
 *   predict/update/D         rusk_predict_update (6 feature values and the global record)
 *   predict/mixed/threads:2  one thread updating, one predicting, at once (uniform)
 * D = uniform over the 40,000 types (nearly every access misses the caches: the worst
 * case) or zipf (exponent 1: most jobs come from a few users and programs).
 *
 * Counters: values (feature values tracked), bytes_per_value (record + hash node).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <rusk/rusk.h>

#include "base/rng.h"
#include "shim/rusk_gbench.h"

#ifndef TYPES
#define TYPES 40000
#endif
#define USERS 8000
#define WARM  8

static rusk_predictor *pred;
static uint32_t zipf_cdf[1 << 16]; /* job type of each 1/65536 of the probability mass */
static rusk_job types[TYPES];
static double medians[TYPES];

static double draw_runtime(rusk_rng *r, uint32_t t)
{
	double u = rusk_rng_unit(r), v = rusk_rng_unit(r);
	double z = sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * v);
	return medians[t] * exp(0.5 * z);
}

/* A job type: uniform (every access a cache miss at 126K values: the worst case) or
 * Zipf-distributed with exponent 1 (a few users and programs submit most jobs, as in the
 * traces of 3Sigma §2.1). */
static uint32_t pick(rusk_rng *r, bool zipf)
{
	if (!zipf)
		return rusk_rng_below(r, TYPES);
	return zipf_cdf[rusk_rng_below(r, 1 << 16)];
}

static void counters(rusk_gb_state *st)
{
	rusk_predict_stats s;
	rusk_predict_stats_get(pred, &s);
	rusk_gb_counter(st, "values", (double)s.values, true);
	rusk_gb_counter(st, "bytes_per_value", (double)s.bytes_per_value, true);
}

typedef struct cfg {
	bool dist, zipf;
} cfg;

static void bm_predict(rusk_gb_state *st, void *ctx)
{
	const cfg *k = ctx;
	bool with_dist = k->dist;
	rusk_rng r;
	rusk_rng_seed(&r, 7, 1);
	static rusk_dist d; /* one thread runs this */
	uint64_t sum = 0;
	while (rusk_gb_keep_running_batch(st, 64))
		for (int i = 0; i < 64; i++) {
			rusk_prediction pr;
			rusk_predict(pred, &types[pick(&r, k->zipf)], &pr, with_dist ? &d : NULL);
			sum += pr.source;
		}
	rusk_gb_do_not_optimize_u64(sum);
	counters(st);
}

static void bm_update(rusk_gb_state *st, void *ctx)
{
	const cfg *k = ctx;
	rusk_rng r;
	rusk_rng_seed(&r, 7, 2);
	uint64_t bad = 0;
	while (rusk_gb_keep_running_batch(st, 64))
		for (int i = 0; i < 64; i++) {
			uint32_t t = pick(&r, k->zipf);
			bad += rusk_predict_update(pred, &types[t], draw_runtime(&r, t)) != RUSK_OK;
		}
	if (bad)
		rusk_gb_error(st, "an update failed");
	counters(st);
}

/* Thread 0 updates, thread 1 predicts: readers next to a writer swapping records. */
static void bm_mixed(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	int me = rusk_gb_thread_index(st);
	rusk_rng r;
	rusk_rng_seed(&r, 7, 3 + (uint64_t)me);
	uint64_t sum = 0;
	while (rusk_gb_keep_running_batch(st, 64))
		for (int i = 0; i < 64; i++) {
			uint32_t t = rusk_rng_below(&r, TYPES);
			if (me == 0) {
				sum += rusk_predict_update(pred, &types[t], draw_runtime(&r, t)) !=
				       0;
			} else {
				rusk_prediction pr;
				rusk_predict(pred, &types[t], &pr, NULL);
				sum += pr.source;
			}
		}
	rusk_gb_do_not_optimize_u64(sum);
	counters(st);
}

int main(int argc, char **argv)
{
	rusk_predict_params pp;
	rusk_predict_params_init(&pp);
	pp.init_values = 1 << 19;
	char err[256];
	if (rusk_predict_create(&pp, &pred, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_predict: %s\n", err);
		return 1;
	}
	rusk_rng r;
	rusk_rng_seed(&r, 7, 0);
	for (uint32_t t = 0; t < TYPES; t++) {
		rusk_job_init(&types[t]);
		types[t].user = rusk_rng_below(&r, USERS);
		types[t].name = t;
		types[t].resources = rusk_rng_below(&r, 64);
		types[t].queue = rusk_rng_below(&r, 4);
		medians[t] = exp(log(10.0) + rusk_rng_unit(&r) * log(1000.0));
	}
	for (int w = 0; w < WARM; w++)
		for (uint32_t t = 0; t < TYPES; t++)
			rusk_predict_update(pred, &types[t], draw_runtime(&r, t));
	double h = 0, acc = 0;
	for (uint32_t t = 0; t < TYPES; t++)
		h += 1.0 / (t + 1);
	for (uint32_t t = 0, slot = 0; t < TYPES; t++) {
		acc += 1.0 / (t + 1) / h;
		for (; slot < (1u << 16) && slot < acc * (1 << 16); slot++)
			zipf_cdf[slot] = t;
	}
	static const cfg uni = {false, false}, uni_d = {true, false}, zipf = {false, true},
	                 zipf_d = {true, true};
	rusk_gb_register("predict/predict/uniform", bm_predict, (void *)&uni, 1, 0);
	rusk_gb_register("predict/predict+dist/uniform", bm_predict, (void *)&uni_d, 1, 0);
	rusk_gb_register("predict/update/uniform", bm_update, (void *)&uni, 1, 0);
	rusk_gb_register("predict/predict/zipf", bm_predict, (void *)&zipf, 1, 0);
	rusk_gb_register("predict/predict+dist/zipf", bm_predict, (void *)&zipf_d, 1, 0);
	rusk_gb_register("predict/update/zipf", bm_update, (void *)&zipf, 1, 0);
	rusk_gb_register("predict/mixed", bm_mixed, NULL, 2, 0);
	int rc = rusk_gb_main(argc, argv);
	rusk_predict_destroy(pred);
	return rc;
}
