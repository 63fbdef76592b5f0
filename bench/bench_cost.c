/* SPDX-License-Identifier: MIT */
/*
 * Calibration of rusk sim's work-based decision cost (issue 29, item 2; bench/cli/simcost.h).
 *
 * In virtual time a decision is charged for the work it did: a cost per RU examined, per
 * partition scanned and per commit attempt, plus a fixed part. This suite measures the
 * real kernel doing decisions of known work, so that the per-unit costs come from the
 * kernel and not from a guess:
 *
 *   cost/<model>/<strategy>/P=<P>/R=<R>[/pref]   one decision (rusk_agent_choose) of a
 *       one-RU task on ParSync's cluster shape (100,000 machines x 2 RUs, every other RU
 *       held, P partitions, all synced); counters: the decision's RUs examined and
 *       partitions scanned (rusk_placement.examined, .partitions), as the simulator reads
 *       them. /pref: the task has 4 preferred machines (ParSync §6's setting).
 *   cost/commit                                   one commit attempt and its release of a
 *       free RU on the master array (rusk_ru_commit + rusk_ru_release).
 *   cost/task                                     one task through the dispatcher as rusk sim
 *       steps it (core/loop/step.h): made, queued, taken, admitted, a Latency-first
 *       decision of R = 32 on the view, committed, placed (its PLACED event), ended (DONE,
 *       its RUs released); counters: the decision's examined and partitions. What it costs
 *       beyond its decision and commit is the per-task work every decision carries
 *       (perf/cost_fit.py: the fixed part of the reference decision).
 *
 * perf/cost_fit.py fits, per quality model (slot scores; Tarcil's Q, whose per-candidate
 * evaluation costs more), time = fixed + per_examined x examined + per_partition x
 * partitions by least squares over these points, and checks the constants in
 * bench/cli/simcost.h against perf/bench/bench_cost.json (ctest cost_model_fit).
 * Invariant: a decision here never commits, so the view and the master stay as built and
 * every iteration does the same expected work.
 */
#include <stdio.h>
#include <stdlib.h>

#include <rusk/rusk.h>

#include "loop/step.h"
#include "shim/rusk_gbench.h"

#define N_CLUSTERS 3
static const uint32_t parts_of[N_CLUSTERS] = {5, 20, 80};
static rusk_cluster *clusters[N_CLUSTERS];
static const uint32_t pref_machines[4] = {11, 40011, 70007, 99991};

typedef struct cfg {
	char name[64];
	rusk_strategy s;
	rusk_quality_model q;
	uint32_t R, ci; /* sample size; index into clusters[] */
	bool pref;
} cfg;

static rusk_agent *make_agent(const cfg *k)
{
	uint32_t P = parts_of[k->ci];
	rusk_sync_params sp;
	rusk_sync_params_init(&sp, P, P);
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	ap.strategy = k->s;
	ap.sample = k->R;
	ap.quality = k->q;
	rusk_agent *a;
	if (rusk_agent_create(clusters[k->ci], &ap, &a, NULL, 0) != RUSK_OK)
		return NULL;
	for (uint32_t p = 0; p < P; p++)
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
	if (k->pref) {
		t.preferred = pref_machines;
		t.n_preferred = 4;
	}
	uint64_t bad = 0, ex = 0, parts = 0, n = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		rusk_placement pl;
		uint32_t ru;
		bad += rusk_agent_choose(a, &t, &ru, &pl) != RUSK_OK;
		ex += pl.examined;
		parts += pl.partitions;
		n++;
	}
	if (bad)
		rusk_gb_error(st, "a decision failed");
	rusk_gb_counter(st, "examined", n ? (double)ex / (double)n : 0, false);
	rusk_gb_counter(st, "partitions", n ? (double)parts / (double)n : 0, false);
	rusk_agent_destroy(a);
}

/* One commit attempt and its release, on RUs known free (the odd ones of cluster 1). */
static void bm_commit(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	rusk_cluster *c = clusters[1];
	uint32_t n = rusk_cluster_rus(c), ru = 1;
	uint64_t bad = 0;
	while (rusk_gb_keep_running_batch(st, 1)) {
		rusk_lease l;
		if (rusk_ru_commit(c, 7, ru, NULL, &l) != RUSK_OK ||
		    rusk_ru_release(c, 7, l) != RUSK_OK)
			bad++;
		ru = ru + 2 < n ? ru + 2 : 1;
	}
	if (bad)
		rusk_gb_error(st, "a commit failed");
}

static void task_agent_params(void *arg, uint32_t i, rusk_agent_params *ap)
{
	(void)arg;
	rusk_sync_params sp;
	rusk_sync_params_init(&sp, 20, 20);
	rusk_agent_params_init(ap, &sp, i);
	ap->sample = 32;
}

/* One task's whole life through the dispatcher's stepped interface, as sim.c drives it. */
static void bm_task(rusk_gb_state *st, void *ctx)
{
	(void)ctx;
	rusk_cluster *c = clusters[1];
	rusk_dispatch_params p;
	rusk_dispatch_params_init(&p, 20);
	p.agent_params = task_agent_params;
	p.max_tasks = 1024;
	rusk_dispatch *d;
	char err[128];
	if (rusk_dispatch_create(c, &p, &d, err, sizeof err) != RUSK_OK) {
		rusk_gb_error(st, err);
		return;
	}
	rusk_dagent *da = rusk_dispatch_agent_(d, 0);
	for (uint32_t q = 0; q < 20; q++)
		rusk_view_sync(rusk_agent_view(rusk_dagent_kernel_(da)), q);
	uint64_t now = 1, bad = 0, ex = 0, parts = 0, n = 0;
	uint32_t chosen[1];
	while (rusk_gb_keep_running_batch(st, 1)) {
		rusk_dtask_spec spec = {.rus = 1, .run_ns = 1000, .submit_ns = now};
		int rc;
		rusk_dtask *tk = rusk_dispatch_new_task_(d, &spec, 0, now, &rc);
		if (tk == NULL || !rusk_dispatch_reserve_(da, 1)) {
			bad++;
			continue;
		}
		rusk_dispatch_enqueue_(da, tk);
		size_t retries = 0;
		rusk_dtask *got = rusk_dispatch_next_(da, now, &retries);
		rusk_dispatch_dequeued_(da, got, now);
		if (got != tk || !rusk_dispatch_admit_(da, tk, now)) {
			bad++;
			continue;
		}
		rusk_task tt = rusk_dispatch_task_(d, tk);
		rusk_dtask_info ti;
		rusk_dtask_info_(tk, &ti);
		rusk_placement pl;
		size_t lost = 0;
		if (rusk_agent_choose(rusk_dagent_kernel_(da), &tt, chosen, &pl) != RUSK_OK ||
		    rusk_ru_commit_gang(c, ti.id, chosen, 1, &ti.prof, rusk_dtask_leases_(tk),
		                        &lost) != RUSK_OK) {
			bad++;
			continue;
		}
		ex += pl.examined;
		parts += pl.partitions;
		pl.placed = 1;
		pl.attempts = 1;
		if (rusk_dispatch_placed_(da, tk, &pl, now, now) != RUSK_DISP_RUNNING ||
		    !rusk_dispatch_end_(d, tk, rusk_dispatch_tenure_(tk), rusk_dtask_end_ns_(tk))) {
			bad++;
			continue;
		}
		/* Its view keeps the RU free, as a release seen at the next sync would. */
		rusk_view_mark_free(rusk_agent_view(rusk_dagent_kernel_(da)), chosen[0]);
		now += 2000;
		n++;
	}
	if (bad)
		rusk_gb_error(st, "a task did not go through");
	rusk_gb_counter(st, "examined", n ? (double)ex / (double)n : 0, false);
	rusk_gb_counter(st, "partitions", n ? (double)parts / (double)n : 0, false);
	rusk_dispatch_destroy(d);
}

int main(int argc, char **argv)
{
	rusk_thread_register();
	for (uint32_t i = 0; i < N_CLUSTERS; i++) {
		rusk_cluster_params p;
		rusk_cluster_params_init(&p);
		p.rus_per_machine = 2; /* ParSync §6: 200K slots */
		p.partitions = parts_of[i];
		if (rusk_cluster_create(&p, &clusters[i], NULL, 0) != RUSK_OK)
			return 1;
		/* Every other RU held (50% load), each by a tenant causing interference: Q sees
		 * busy machines, as at the five phases' loads. */
		rusk_profile prof = {{40, 60, 10, 30, 5, 0, 20, 0, 50, 10}};
		rusk_lease l;
		for (uint32_t ru = 0; ru < rusk_cluster_rus(clusters[i]); ru += 2)
			rusk_ru_commit(clusters[i], 100 + ru, ru, &prof, &l);
	}
	static cfg cfgs[64];
	int n = 0;
	static const uint32_t Rs[] = {8, 32, 128};
	static const struct {
		const char *name;
		rusk_strategy s;
	} strats[] = {{"latency", RUSK_STRATEGY_LATENCY}, {"quality", RUSK_STRATEGY_QUALITY}};
	static const struct {
		const char *name;
		rusk_quality_model q;
	} models[] = {{"score", RUSK_QUALITY_SCORE}, {"interference", RUSK_QUALITY_INTERFERENCE}};
	for (int mi = 0; mi < 2; mi++)
		for (int si = 0; si < 2; si++)
			for (uint32_t ci = 0; ci < N_CLUSTERS; ci++)
				for (int ri = 0; ri < 3; ri++)
					for (int pr = 0; pr < 2; pr++) {
						/* Preferences only where ParSync's setting has
						 * them: P = 20. */
						if (pr && parts_of[ci] != 20)
							continue;
						cfg *k = &cfgs[n++];
						*k = (cfg){.s = strats[si].s,
						           .q = models[mi].q,
						           .R = Rs[ri],
						           .ci = ci,
						           .pref = pr != 0};
						snprintf(k->name, sizeof k->name,
						         "cost/%s/%s/P=%u/R=%u%s", models[mi].name,
						         strats[si].name, parts_of[ci], Rs[ri],
						         pr ? "/pref" : "");
						rusk_gb_register(k->name, bm_decide, k, 1, 0);
					}
	rusk_gb_register("cost/commit", bm_commit, NULL, 1, 0);
	rusk_gb_register("cost/task", bm_task, NULL, 1, 0);
	int rc = rusk_gb_main(argc, argv);
	for (uint32_t i = 0; i < N_CLUSTERS; i++)
		rusk_cluster_destroy(clusters[i]);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
