/* SPDX-License-Identifier: MIT */
/*
 * Vector resources (rusk/vec.h) against RU-only, in one run, on 100,000 machines x 16 RUs
 * with 256 GiB and 8 GPUs each (half of them model "A", half "B", alternating), P = 20:
 *
 *   vec/ru_only/commit_release         1 RU: rusk_ru_commit + rusk_ru_release (the baseline)
 *   vec/1core_mem_halfgpu/commit_release  1 RU + 4 GiB + 0.5 GPU: rusk_ru_commit_vec +
 *                                      rusk_ru_release (memory and a GPU share with it)
 *   vec/2cores_2gpus/commit_release    2 RUs + 16 GiB + 2 whole GPUs
 *   vec/choose/latency/R=8/ru_only     a Latency-first decision for a 1-RU task, R = 8
 *   vec/choose/latency/R=8/half_infeasible  the same for a 1-RU + 0.5 GPU task of model
 *                                      "B" only: half the machines cannot hold it
 *   vec/choose/latency/R=8/all_feasible     the same, any model: every machine can
 *   vec/choose/2rus/tenth_fit          a Latency-first decision for a 2-RU + 0.5 GPU task,
 *                                      R = 8, on 1,600 machines in 8 partitions where one
 *                                      machine in ten has GPU room: the draws after the
 *                                      probe made exactly (choose.c, choose_vec_exact;
 *                                      tests/test_vec_exact.c compares them with every
 *                                      draw made)
 * Half the RUs are held (every other one), as in bench_sched.
 */
#include <stdio.h>
#include <stdlib.h>

#include <rusk/rusk.h>

#include "shim/rusk_gbench.h"

#define BATCH 64

static rusk_cluster *big;
/* 1,600 machines of 16 RUs and 8 GPUs in 8 partitions, half the RUs held; every GPU taken on
 * the machines m % 10 != 0. */
static rusk_cluster *sparse;

static void bm_ru_only(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	rusk_lease l;
	uint64_t bad = 0;
	uint32_t ru = 16 * 4321 + 1; /* a free RU (odd) */
	while (rusk_gb_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			bad |= (uint64_t)rusk_ru_commit(big, 1, ru, NULL, &l);
			bad |= (uint64_t)rusk_ru_release(big, 1, l);
		}
	if (bad)
		rusk_gb_error(st, "a commit or release failed");
}

static void bm_vec(rusk_gb_state *st, void *ctx)
{
	const rusk_vec_demand *d = ctx;
	uint32_t rus[2] = {16 * 4321 + 1, 16 * 4321 + 3};
	uint32_t n = d->gpus > 1 ? 2 : 1;
	rusk_lease l[2];
	uint64_t bad = 0;
	while (rusk_gb_keep_running_batch(st, BATCH))
		for (int i = 0; i < BATCH; i++) {
			bad |= (uint64_t)rusk_ru_commit_vec(big, 2, rus, n, d, NULL, l, NULL);
			bad |= (uint64_t)rusk_ru_release_many(big, 2, l, n, NULL);
		}
	if (bad)
		rusk_gb_error(st, "a vector commit or release failed");
}

/* An agent of c (parts partitions) with R = 8 and every partition of its view synced; NULL
 * (the benchmark failed) if rusk refused it. */
static rusk_agent *synced_agent(rusk_gb_state *st, rusk_cluster *c, uint32_t parts)
{
	rusk_sync_params sp;
	rusk_sync_params_init(&sp, parts, parts);
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	ap.sample = 8;
	rusk_agent *a;
	if (rusk_agent_create(c, &ap, &a, NULL, 0) != RUSK_OK) {
		rusk_gb_error(st, "agent");
		return NULL;
	}
	for (uint32_t p = 0; p < parts; p++)
		rusk_view_sync(rusk_agent_view(a), p);
	return a;
}

static void bm_choose(rusk_gb_state *st, void *ctx)
{
	const rusk_vec_demand *d = ctx;
	rusk_agent *a = synced_agent(st, big, 20);
	if (a == NULL)
		return;
	bool vec = rusk_vec_any(d);
	rusk_task t = {.id = 1,
	               .rus = 1,
	               .gang = true,
	               .placement = vec ? RUSK_PLACE_MACHINE : RUSK_PLACE_ANY,
	               .vec = *d};
	uint64_t bad = 0, samples = 0, n = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		rusk_placement pl;
		uint32_t ru;
		bad += rusk_agent_choose(a, &t, &ru, &pl) != RUSK_OK;
		/* a chosen RU is on a machine of model B (odd machines) */
		bad += d->gpu_models && (rusk_cluster_ru_machine(big, ru) & 1) == 0;
		samples += pl.samples;
		n++;
	}
	if (bad)
		rusk_gb_error(st, "a decision failed or chose an infeasible machine");
	rusk_gb_counter(st, "draws", n ? (double)samples / (double)n : 0, false);
	rusk_agent_destroy(a);
}

static void bm_sparse(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	rusk_agent *a = synced_agent(st, sparse, 8);
	if (a == NULL)
		return;
	rusk_task t = {.id = 1, .rus = 2, .gang = true, .placement = RUSK_PLACE_MACHINE};
	t.vec = (rusk_vec_demand){4096, 1, 500, 0};
	uint64_t bad = 0, samples = 0, n = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		rusk_placement pl;
		uint32_t rus[2];
		bad += rusk_agent_choose(a, &t, rus, &pl) != RUSK_OK;
		bad += rusk_cluster_ru_machine(sparse, rus[0]) % 10 != 0; /* only those have room */
		samples += pl.samples;
		n++;
	}
	if (bad)
		rusk_gb_error(st, "a decision failed or chose a machine without GPU room");
	rusk_gb_counter(st, "draws", n ? (double)samples / (double)n : 0, false);
	rusk_agent_destroy(a);
}

/* The cluster of the tenth_fit cases (sparse). */
static int make_sparse(void)
{
	enum { N = 1600 };
	static rusk_machine_spec specs[N];
	for (uint32_t m = 0; m < N; m++)
		specs[m] = (rusk_machine_spec){16, 262144, 8, 0, NULL, false};
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.partitions = 8;
	p.machines_per_rack = 20;
	p.racks_per_cell = 1;
	char err[256];
	if (rusk_cluster_create_machines(specs, N, &p, &sparse, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_vec: %s\n", err);
		return 1;
	}
	rusk_lease l;
	for (uint32_t ru = 0; ru < rusk_cluster_rus(sparse); ru += 2)
		rusk_ru_commit(sparse, 100 + ru, ru, NULL, &l); /* half held */
	rusk_vec_demand all = {0, 8, 1000, 0};
	for (uint32_t m = 0; m < N; m++) {
		uint32_t ru = m * 16 + 1;
		if (m % 10 != 0 && rusk_ru_commit_vec(sparse, 1000000 + m, &ru, 1, &all, NULL, &l,
		                                      NULL) != RUSK_OK) {
			fprintf(stderr, "bench_vec: taking machine %u's GPUs failed\n", m);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	rusk_thread_register();
	static const rusk_platform plats[] = {{"A", 1.0, 1.0}, {"B", 1.0, 1.0}};
	enum { N = 100000 };
	rusk_machine_spec *specs = calloc(N, sizeof *specs);
	if (specs == NULL)
		return 1;
	for (uint32_t m = 0; m < N; m++)
		specs[m] = (rusk_machine_spec){16, 262144, 8, m & 1, NULL, false};
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.platforms = plats;
	p.n_platforms = 2;
	char err[256];
	if (rusk_cluster_create_machines(specs, N, &p, &big, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_vec: %s\n", err);
		return 1;
	}
	free(specs);
	rusk_lease l;
	for (uint32_t ru = 0; ru < rusk_cluster_rus(big); ru += 2)
		rusk_ru_commit(big, 100 + ru, ru, NULL, &l); /* half held */
	static rusk_vec_demand half = {4096, 1, 500, 0};
	static rusk_vec_demand two = {16384, 2, 1000, 0};
	static rusk_vec_demand none = {0, 0, 0, 0};
	static rusk_vec_demand model_b = {0, 1, 500, 1u << 1};
	rusk_gb_register("vec/ru_only/commit_release", bm_ru_only, NULL, 1, 0);
	rusk_gb_register("vec/1core_mem_halfgpu/commit_release", bm_vec, &half, 1, 0);
	rusk_gb_register("vec/2cores_2gpus/commit_release", bm_vec, &two, 1, 0);
	rusk_gb_register("vec/choose/latency/R=8/ru_only", bm_choose, &none, 1, 0);
	rusk_gb_register("vec/choose/latency/R=8/half_infeasible", bm_choose, &model_b, 1, 0);
	static rusk_vec_demand any_gpu = {0, 1, 500, 0};
	rusk_gb_register("vec/choose/latency/R=8/all_feasible", bm_choose, &any_gpu, 1, 0);
	if (make_sparse() != 0)
		return 1;
	rusk_gb_register("vec/choose/2rus/tenth_fit", bm_sparse, NULL, 1, 0);
	int rc = rusk_gb_main(argc, argv);
	if (rusk_cluster_verify(big, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_vec: after the run: %s\n", err);
		rc = 1;
	}
	if (rusk_cluster_verify(sparse, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "bench_vec: after the run: %s\n", err);
		rc = 1;
	}
	rusk_cluster_destroy(big);
	rusk_cluster_destroy(sparse);
	rusk_thread_unregister();
	return rc;
}
