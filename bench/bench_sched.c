/* SPDX-License-Identifier: MIT */
/*
 * Per-decision cost of the strategies at 100,000 machines x 16 RUs (1.6M RUs), P = 20,
 * half the RUs held, one agent with every partition synced (issue: sampling strategies):
 *
 *   sched/choose/<strategy>/R=<R>   choose one RU for a single-RU task (no commit)
 *   sched/place/latency/auto         choose + commit + release, automatic R
 *   sched/place/central              the central baseline: lock, full scan, commit, release
 *   sched/choose/interference/R=32   Tarcil's Q instead of slot scores
 */
#include <stdio.h>
#include <stdlib.h>

#include <rusk/rusk.h>

#include "shim/rusk_gbench.h"

static rusk_cluster *big;

typedef struct cfg {
	rusk_strategy s;
	uint32_t R;
	rusk_quality_model q;
	bool commit;
} cfg;

static rusk_agent *make_agent(const cfg *k)
{
	rusk_sync_params sp;
	rusk_sync_params_init(&sp, 20, 20);
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	ap.strategy = k->s;
	ap.sample = k->R;
	ap.quality = k->q;
	rusk_agent *a;
	if (rusk_agent_create(big, &ap, &a, NULL, 0) != RUSK_OK)
		return NULL;
	for (uint32_t p = 0; p < 20; p++)
		rusk_view_sync(rusk_agent_view(a), p);
	return a;
}

static void bm_decide(rusk_gb_state *st, void *ctx)
{
	const cfg *k = ctx;
	rusk_agent *a = make_agent(k);
	if (a == NULL) {
		rusk_gb_error(st, "agent");
		return;
	}
	rusk_task t = {.id = 1, .rus = 1, .gang = true};
	t.profile = (rusk_profile){{70, 20, 5, 40, 0, 0, 10, 0, 0, 30}};
	uint64_t bad = 0, r_sum = 0, n = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		rusk_placement pl;
		if (k->commit) {
			rusk_lease l;
			if (rusk_agent_place(a, &t, &l, &pl) != RUSK_OK) {
				bad++;
				continue;
			}
			rusk_ru_release(big, 1, l);
			/* It released the RU itself, so its view knows it free: without that the
			 * view runs out of free RUs after a few million placements. */
			rusk_view_mark_free(rusk_agent_view(a), l.ru);
		} else {
			uint32_t ru;
			bad += rusk_agent_choose(a, &t, &ru, &pl) != RUSK_OK;
		}
		r_sum += pl.sample_size;
		n++;
	}
	if (bad)
		rusk_gb_error(st, "a decision failed");
	rusk_gb_counter(st, "R", n ? (double)r_sum / (double)n : 0, false);
	rusk_agent_destroy(a);
}

int main(int argc, char **argv)
{
	rusk_thread_register();
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	if (rusk_cluster_create(&p, &big, NULL, 0) != RUSK_OK)
		return 1;
	rusk_lease l;
	for (uint32_t ru = 0; ru < rusk_cluster_rus(big); ru += 2)
		rusk_ru_commit(big, 100 + ru, ru, NULL, &l); /* half held */
	static cfg lat8 = {RUSK_STRATEGY_LATENCY, 8, RUSK_QUALITY_SCORE, false};
	static cfg lat32 = {RUSK_STRATEGY_LATENCY, 32, RUSK_QUALITY_SCORE, false};
	static cfg qual8 = {RUSK_STRATEGY_QUALITY, 8, RUSK_QUALITY_SCORE, false};
	static cfg qual32 = {RUSK_STRATEGY_QUALITY, 32, RUSK_QUALITY_SCORE, false};
	static cfg rnd = {RUSK_STRATEGY_RANDOM, 0, RUSK_QUALITY_SCORE, false};
	static cfg intf32 = {RUSK_STRATEGY_LATENCY, 32, RUSK_QUALITY_INTERFERENCE, false};
	static cfg place = {RUSK_STRATEGY_LATENCY, 0, RUSK_QUALITY_SCORE, true};
	static cfg central = {RUSK_STRATEGY_CENTRAL, 0, RUSK_QUALITY_SCORE, true};
	rusk_gb_register("sched/choose/latency/R=8", bm_decide, &lat8, 1, 0);
	rusk_gb_register("sched/choose/latency/R=32", bm_decide, &lat32, 1, 0);
	rusk_gb_register("sched/choose/quality/R=8", bm_decide, &qual8, 1, 0);
	rusk_gb_register("sched/choose/quality/R=32", bm_decide, &qual32, 1, 0);
	rusk_gb_register("sched/choose/random/R=2", bm_decide, &rnd, 1, 0);
	rusk_gb_register("sched/choose/interference/R=32", bm_decide, &intf32, 1, 0);
	rusk_gb_register("sched/place/latency/auto", bm_decide, &place, 1, 0);
	rusk_gb_register("sched/place/central", bm_decide, &central, 1, 0);
	int rc = rusk_gb_main(argc, argv);
	rusk_cluster_destroy(big);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
