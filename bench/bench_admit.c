/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmarks of admission control (Tarcil §4, core/kernel/admit.c), through the C shim:
 *   baseline/commit_release/{zero,profile}  commit + release of one RU, no admission
 *                                           attached (the same-run baseline)
 *   admit/commit_release/{zero,profile}     the same with admission attached: the fold
 *                                           of the machine's bucket accounting (CAS on
 *                                           its accounted word, counter moves, with a
 *                                           profile the LSH hash too) on each side
 *   admit/hash                              one random-hyperplane LSH of a contention
 *                                           vector (5 planes x 10 resources)
 *   admit/check/{low_load,high_load}        one admission decision for a task: below
 *                                           min_load (sums 20 counters) and at 90% load
 *                                           (bucket qualities, history, estimate)
 */
#include <stdio.h>
#include <stdlib.h>

#include <rusk/rusk.h>

#include "shim/rusk_gbench.h"

#define BATCH 64

static rusk_cluster *plain, *with_adm, *loaded;
static rusk_admit *adm, *adm_loaded;
static rusk_profile prof = {{80, 10, 55, 3, 99, 0, 20, 41, 7, 64}};

static void bm_pair(rusk_gb_state *st, void *ctx)
{
	rusk_cluster *c = ((uintptr_t)ctx & 1) ? with_adm : plain;
	const rusk_profile *p = ((uintptr_t)ctx & 2) ? &prof : NULL;
	rusk_lease l;
	uint64_t bad = 0;
	while (rusk_gb_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			bad |= (uint64_t)rusk_ru_commit(c, 1, 12345, p, &l);
			bad |= (uint64_t)rusk_ru_release(c, 1, l);
		}
	if (bad)
		rusk_gb_error(st, "a commit or release failed");
}

static void bm_hash(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	double v[RUSK_N_RESOURCES];
	uint64_t s = 99, acc = 0;
	while (rusk_gb_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			for (int k = 0; k < RUSK_N_RESOURCES; k++) {
				s = s * 6364136223846793005ull + 1442695040888963407ull;
				v[k] = (double)(s >> 57);
			}
			acc += rusk_admit_hash(adm, v);
		}
	rusk_gb_do_not_optimize_u64(acc);
}

static void bm_check(rusk_gb_state *st, void *ctx)
{
	rusk_admit *a = ctx != NULL ? adm_loaded : adm;
	rusk_task t = {.id = 1, .rus = 1, .profile = prof};
	rusk_admit_decision d;
	uint64_t acc = 0;
	while (rusk_gb_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			rusk_admit_check(a, &t, RUSK_QUALITY_INTERFERENCE, 0, &d);
			acc += d.verdict;
		}
	rusk_gb_do_not_optimize_u64(acc);
}

static rusk_cluster *make(uint32_t machines)
{
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = machines;
	rusk_cluster *c = NULL;
	char err[256];
	if (rusk_cluster_create(&p, &c, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_admit: %s\n", err);
		exit(1);
	}
	return c;
}

int main(int argc, char **argv)
{
	plain = make(100000);
	with_adm = make(100000);
	loaded = make(4000);
	char err[256];
	if (rusk_admit_attach(with_adm, NULL, &adm, err, sizeof err) != RUSK_OK ||
	    rusk_admit_attach(loaded, NULL, &adm_loaded, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_admit: %s\n", err);
		return 1;
	}
	/* 90% of a 4,000 x 16 cluster held by tasks with profiles: many buckets in use. */
	uint32_t n = rusk_cluster_rus(loaded);
	uint64_t s = 7;
	for (uint32_t ru = 0; ru < n; ru++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		if ((s >> 33) % 10 == 0)
			continue;
		rusk_profile p;
		for (int k = 0; k < RUSK_N_RESOURCES; k++)
			p.c[k] = (uint8_t)((s >> (3 * k)) % 100);
		rusk_lease l;
		rusk_ru_commit(loaded, ru + 1, ru, &p, &l);
	}
	rusk_gb_register("baseline/commit_release/zero", bm_pair, (void *)0, 1, 0);
	rusk_gb_register("admit/commit_release/zero", bm_pair, (void *)1, 1, 0);
	rusk_gb_register("baseline/commit_release/profile", bm_pair, (void *)2, 1, 0);
	rusk_gb_register("admit/commit_release/profile", bm_pair, (void *)3, 1, 0);
	rusk_gb_register("admit/hash", bm_hash, NULL, 1, 0);
	rusk_gb_register("admit/check/low_load", bm_check, NULL, 1, 0);
	rusk_gb_register("admit/check/high_load", bm_check, (void *)1, 1, 0);
	int rc = rusk_gb_main(argc, argv);
	uint64_t got[RUSK_ADMIT_MAX_BUCKETS], want[RUSK_ADMIT_MAX_BUCKETS];
	rusk_admit_counts(adm, got, RUSK_ADMIT_MAX_BUCKETS);
	rusk_admit_recount(adm, want, RUSK_ADMIT_MAX_BUCKETS);
	for (uint32_t b = 0; b < rusk_admit_buckets(adm); b++)
		if (got[b] != want[b]) {
			fprintf(stderr, "bench_admit: bucket %u: %llu vs recount %llu\n", b,
			        (unsigned long long)got[b], (unsigned long long)want[b]);
			rc = 1;
		}
	rusk_cluster_destroy(plain);
	rusk_cluster_destroy(with_adm); /* detaches adm */
	rusk_cluster_destroy(loaded);
	return rc;
}
