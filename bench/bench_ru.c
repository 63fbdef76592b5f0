/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmarks of the master RU array (issue: foundation), through the C shim.
 *
 *   baseline/cas_pair          two CASes on one private word: the hardware floor of a
 *                              commit+release pair, measured in the same run for ratios
 *   ru/commit_release/hot      one thread, the same RU again and again (uncontended)
 *   ru/commit_release/sweep    one thread, RUs in order over a 100K x 16 cluster
 *   ru/commit_release/profile  as hot, with an interference profile (sums updated)
 *   ru/commit_release/hotset64/threads:2   two threads, random RUs of a 64-RU hot set:
 *                              real conflicts; counter conflict_ratio = lost / attempts
 *   ru/gang8                   gang commit of 8 RUs of one machine + release of the 8
 *   cluster/build_100k         building a 100,000 x 16 cluster from parameters
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ck_pr.h>
#include <rusk/rusk.h>

#include "base/rng.h"
#include "shim/rusk_gbench.h"

#define BATCH 64

static rusk_cluster *big; /* 100K x 16, shared by the single-RU benchmarks */

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_ru: %s: %s\n", what, rusk_strerror(rc));
	exit(1);
}

static void bm_baseline_cas_pair(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	static uint64_t word __attribute__((aligned(64)));
	uint64_t v = 0;
	while (rusk_gb_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			ck_pr_cas_64_value(&word, 0, 1, &v);
			ck_pr_cas_64_value(&word, 1, 0, &v);
		}
	rusk_gb_do_not_optimize_u64(v);
}

static void bm_hot(rusk_gb_state *st, void *ctx)
{
	const rusk_profile *prof = ctx;
	rusk_lease l;
	uint64_t task = 1, bad = 0;
	while (rusk_gb_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			bad |= (uint64_t)rusk_ru_commit(big, task, 12345, prof, &l);
			bad |= (uint64_t)rusk_ru_release(big, task, l);
		}
	if (bad)
		rusk_gb_error(st, "a commit or release failed");
}

static void bm_sweep(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	rusk_lease l;
	uint32_t n = rusk_cluster_rus(big), ru = 0;
	uint64_t bad = 0;
	while (rusk_gb_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			bad |= (uint64_t)rusk_ru_commit(big, 7, ru, NULL, &l);
			bad |= (uint64_t)rusk_ru_release(big, 7, l);
			ru = ru + 1 == n ? 0 : ru + 1;
		}
	if (bad)
		rusk_gb_error(st, "a commit or release failed");
}

static void bm_hotset(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	/* The hot set is 64 RUs spread over 4 machines of the big cluster. */
	rusk_rng rng;
	rusk_rng_seed(&rng, 42, (uint64_t)rusk_gb_thread_index(st));
	uint64_t task = 1000 + (uint64_t)rusk_gb_thread_index(st);
	uint64_t attempts = 0, lost = 0, bad = 0;
	rusk_lease l;
	while (rusk_gb_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			uint32_t ru = 5000 + rusk_rng_below(&rng, 64);
			attempts++;
			int rc = rusk_ru_commit(big, task, ru, NULL, &l);
			if (rc == RUSK_OK)
				bad |= (uint64_t)rusk_ru_release(big, task, l);
			else if (rc == RUSK_ECONFLICT)
				lost++;
			else
				bad = 1;
		}
	if (bad)
		rusk_gb_error(st, "a commit or release failed unexpectedly");
	rusk_gb_counter(st, "conflict_ratio", attempts ? (double)lost / (double)attempts : 0, true);
}

static void bm_gang8(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	uint32_t rus[8];
	rusk_lease l[8];
	for (int i = 0; i < 8; i++)
		rus[i] = 16 * 777 + (uint32_t)i * 2;
	uint64_t bad = 0;
	while (rusk_gb_keep_running_batch(st, 8))
		for (int i = 0; i < 8; i++) {
			bad |= (uint64_t)rusk_ru_commit_gang(big, 9, rus, 8, NULL, l, NULL);
			bad |= (uint64_t)rusk_ru_release_many(big, 9, l, 8, NULL);
		}
	if (bad)
		rusk_gb_error(st, "a gang commit or release failed");
}

static void bm_build(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	while (rusk_gb_keep_running_batch(st, 1)) {
		rusk_cluster *c;
		int rc = rusk_cluster_create(&p, &c, NULL, 0);
		if (rc != RUSK_OK) {
			rusk_gb_error(st, rusk_strerror(rc));
			return;
		}
		rusk_gb_counter(st, "bytes_per_ru",
		                (double)rusk_cluster_array_bytes(c) / rusk_cluster_rus(c), false);
		rusk_cluster_destroy(c);
	}
}

int main(int argc, char **argv)
{
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	int rc = rusk_cluster_create(&p, &big, NULL, 0);
	if (rc != RUSK_OK)
		die("cluster", rc);
	static rusk_profile prof = {{80, 10, 55, 3, 99, 0, 20, 41, 7, 64}};
	rusk_gb_register("baseline/cas_pair", bm_baseline_cas_pair, NULL, 1, 0);
	rusk_gb_register("ru/commit_release/hot", bm_hot, NULL, 1, 0);
	rusk_gb_register("ru/commit_release/sweep", bm_sweep, NULL, 1, 0);
	rusk_gb_register("ru/commit_release/profile", bm_hot, &prof, 1, 0);
	rusk_gb_register("ru/commit_release/hotset64", bm_hotset, NULL, 2, 0);
	rusk_gb_register("ru/gang8", bm_gang8, NULL, 1, 0);
	rusk_gb_register("cluster/build_100k", bm_build, NULL, 1, 0);
	rc = rusk_gb_main(argc, argv);
	char err[256];
	if (rusk_cluster_verify(big, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_ru: after the run: %s\n", err);
		rc = 1;
	}
	rusk_cluster_destroy(big);
	return rc;
}
