/* SPDX-License-Identifier: MIT */
/*
 * Partitioned synchronization benchmarks (issue: partitioned synchronization), at
 * 100,000 machines x 16 RUs, P = 20 (80,000 RUs per partition):
 *
 *   sync/publish               build + publish one partition snapshot (RCU)
 *   sync/view_sync_reuse       copy the published snapshot into a view (no publish)
 *   sync/view_sync_publish     publish + copy: what one DiffSync refresh costs
 *   sync/diffsync_round_n20    a whole round of DiffSync for N = 20 agents (400 refreshes);
 *                              counter core_share = round time / G (G = 500 ms)
 *   sync/staleness/<policy>    AS of agent 0 over 4 rounds at 1 ms resolution on a
 *                              virtual clock: counters as_min_ms, as_mean_ms, as_max_ms
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <rusk/rusk.h>

#include "shim/rusk_gbench.h"

#define P    20
#define N    20
#define G_NS RUSK_SYNC_DEFAULT_GAP_NS

static rusk_cluster *big;
static uint64_t vnow;
static uint64_t vclock_now(void *ctx)
{
	(void)ctx;
	return __atomic_load_n(&vnow, __ATOMIC_RELAXED);
}
static const rusk_clock vclock = {vclock_now, NULL};

static void bm_publish(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	struct rusage r0, r1;
	getrusage(RUSAGE_SELF, &r0);
	uint64_t n = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		if (rusk_snapshot_publish(big, 7) != RUSK_OK)
			rusk_gb_error(st, "publish failed");
		n++;
	}
	getrusage(RUSAGE_SELF, &r1);
	/* page faults per publish: fresh pages for snapshot buffers show up here */
	rusk_gb_counter(st, "faults_per_publish",
	                n ? (double)(r1.ru_minflt - r0.ru_minflt) / (double)n : 0, false);
}

static void bm_view_sync(rusk_gb_state *st, void *ctx)
{
	bool reuse = ctx != NULL;
	rusk_view *v;
	if (rusk_view_create(big, &v) != RUSK_OK) {
		rusk_gb_error(st, "view");
		return;
	}
	rusk_snapshot_set_reuse_ns(big, reuse ? UINT64_MAX : 0);
	rusk_snapshot_publish(big, 7);
	while (rusk_gb_keep_running_batch(st, 1))
		if (rusk_view_sync(v, 7) != RUSK_OK)
			rusk_gb_error(st, "sync failed");
	rusk_snapshot_set_reuse_ns(big, 0);
	rusk_view_destroy(v);
}

static void bm_diff_round(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	rusk_view *v[N];
	rusk_sync_params sp = {
	        .policy = RUSK_SYNC_DIFF, .partitions = P, .agents = N, .gap_ns = G_NS};
	for (int a = 0; a < N; a++) {
		rusk_view_create(big, &v[a]);
		rusk_view_set_policy(v[a], &sp, (uint32_t)a, NULL, 0);
	}
	/* Each iteration: the N steps of one round, every agent ticking at every step. */
	uint64_t k = 0, syncs = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		for (int s = 0; s < N; s++, k++)
			for (int a = 0; a < N; a++)
				syncs += (uint64_t)rusk_view_tick(v[a], k * (G_NS / N));
	}
	rusk_gb_counter(st, "refreshes_per_round", (double)syncs / (double)(k / N), false);
	for (int a = 0; a < N; a++)
		rusk_view_destroy(v[a]);
}

static void bm_staleness(rusk_gb_state *st, void *ctx)
{
	rusk_sync_policy pol = (rusk_sync_policy)(intptr_t)ctx;
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = 2000; /* staleness does not depend on size; keep it quick */
	p.machines_per_rack = 1;
	p.racks_per_cell = 1;
	p.partitions = P;
	p.clock = &vclock;
	rusk_cluster *c;
	rusk_cluster_create(&p, &c, NULL, 0);
	double lo = INFINITY, hi = 0, sum = 0;
	uint64_t n = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		rusk_view *v;
		rusk_view_create(c, &v);
		rusk_sync_params sp = {.policy = pol, .partitions = P, .agents = N, .gap_ns = G_NS};
		rusk_view_set_policy(v, &sp, 0, NULL, 0);
		for (uint64_t t = 0; t <= 4 * G_NS; t += 1000000) {
			vnow = t;
			rusk_view_tick(v, t);
			if (t >= G_NS) {
				double as = rusk_view_avg_staleness_ns(v, t) / 1e6;
				lo = as < lo ? as : lo;
				hi = as > hi ? as : hi;
				sum += as;
				n++;
			}
		}
		rusk_view_destroy(v);
	}
	rusk_gb_counter(st, "as_min_ms", lo, false);
	rusk_gb_counter(st, "as_mean_ms", sum / (double)n, false);
	rusk_gb_counter(st, "as_max_ms", hi, false);
	rusk_cluster_destroy(c);
}

int main(int argc, char **argv)
{
	rusk_thread_register();
	rusk_cluster_params p;
	rusk_cluster_params_init(&p); /* 100,000 x 16, P = 20 */
	if (rusk_cluster_create(&p, &big, NULL, 0) != RUSK_OK)
		return 1;
	/* Load it like a busy cluster: 80% of RUs held. */
	rusk_lease l;
	for (uint32_t ru = 0; ru < rusk_cluster_rus(big); ru++)
		if (ru % 5 != 0)
			rusk_ru_commit(big, 1 + ru, ru, NULL, &l);
	rusk_gb_register("sync/publish", bm_publish, NULL, 1, 0);
	rusk_gb_register("sync/view_sync_reuse", bm_view_sync, (void *)1, 1, 0);
	rusk_gb_register("sync/view_sync_publish", bm_view_sync, NULL, 1, 0);
	rusk_gb_register("sync/diffsync_round_n20", bm_diff_round, NULL, 1, 0);
	rusk_gb_register("sync/staleness/diff", bm_staleness, (void *)(intptr_t)RUSK_SYNC_DIFF, 1,
	                 1);
	rusk_gb_register("sync/staleness/same", bm_staleness, (void *)(intptr_t)RUSK_SYNC_SAME, 1,
	                 1);
	rusk_gb_register("sync/staleness/state", bm_staleness, (void *)(intptr_t)RUSK_SYNC_STATE, 1,
	                 1);
	int rc = rusk_gb_main(argc, argv);
	rusk_cluster_destroy(big);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
