/* SPDX-License-Identifier: MIT */
/*
 * Micro-benchmarks of the driver's building blocks (issue: benchmarks):
 *   hist/record            one latency-histogram record (log-linear, single writer)
 *   ring/spsc_pair         one ck_ring SPSC enqueue + dequeue (the agent queues)
 *   ring/spsc_2threads     producer and consumer on two threads (batches of 64)
 *   loadgen/next           one Poisson arrival with a lognormal duration
 */
#include <ck_ring.h>
#include <stdlib.h>

#include "base/hist.h"
#include "shim/rusk_gbench.h"
#include "workload/loadgen.h"

#define RING 1024

static void bm_hist(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	rusk_hist *h = calloc(1, sizeof *h);
	uint64_t s = 12345;
	while (rusk_gb_keep_running_batch(st, 64))
		for (int i = 0; i < 64; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			rusk_hist_record(h, s >> 40); /* 0 .. 16.7 ms: buckets vary */
		}
	rusk_gb_do_not_optimize_u64(h->sum);
	free(h);
}

static void bm_ring_pair(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	ck_ring_t ring;
	ck_ring_buffer_t *buf = calloc(RING, sizeof *buf);
	ck_ring_init(&ring, RING);
	uint64_t sum = 0;
	void *x = &sum, *y = NULL;
	while (rusk_gb_keep_running_batch(st, 64))
		for (int i = 0; i < 64; i++) {
			ck_ring_enqueue_spsc(&ring, buf, x);
			ck_ring_dequeue_spsc(&ring, buf, &y);
			sum += (uint64_t)(uintptr_t)y & 1;
		}
	rusk_gb_do_not_optimize_u64(sum);
	free(buf);
}

static ck_ring_t shared_ring;
static ck_ring_buffer_t *shared_buf;

static void bm_ring_threads(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	static uint64_t token = 1;
	uint64_t moved = 0;
	bool producer = rusk_gb_thread_index(st) == 0;
	while (rusk_gb_keep_running_batch(st, 64))
		for (int i = 0; i < 64; i++) {
			void *y;
			if (producer)
				moved += ck_ring_enqueue_spsc(&shared_ring, shared_buf, &token);
			else
				moved += ck_ring_dequeue_spsc(&shared_ring, shared_buf, &y);
		}
	rusk_gb_counter(st, "moved_per_iter", (double)moved, true);
}

static void bm_loadgen(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	double ph[1] = {100};
	rusk_loadgen g;
	rusk_loadgen_init(&g, 1e6, ph, 1, 1e9, RUSK_DUR_LOGNORMAL, 5, 1, 3);
	rusk_arrival a = {0};
	while (rusk_gb_keep_running_batch(st, 64))
		for (int i = 0; i < 64; i++)
			rusk_loadgen_next(&g, &a);
	rusk_gb_do_not_optimize_u64((uint64_t)a.t_s);
}

int main(int argc, char **argv)
{
	shared_buf = calloc(RING, sizeof *shared_buf);
	ck_ring_init(&shared_ring, RING);
	rusk_gb_register("hist/record", bm_hist, NULL, 1, 0);
	rusk_gb_register("ring/spsc_pair", bm_ring_pair, NULL, 1, 0);
	rusk_gb_register("ring/spsc_2threads", bm_ring_threads, NULL, 2, 0);
	rusk_gb_register("loadgen/next", bm_loadgen, NULL, 1, 0);
	int rc = rusk_gb_main(argc, argv);
	free(shared_buf);
	return rc;
}
