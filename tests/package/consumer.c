/* SPDX-License-Identifier: MIT */
/*
 * An embedder's first program against an installed rusk: at least one function of every
 * public header, each checked, linked in turn against the static and the shared library
 * (tests/package/check.sh). Exit 0 and "consumer ok".
 *
 * With an argument ("jemalloc" or "libc") it also checks whose malloc the process got:
 * jemalloc's when the static librusk was built with jemalloc (Debian's libjemalloc has no
 * prefixed API, so linking it replaces malloc), libc's with the shared librusk (which
 * keeps jemalloc to itself) or a librusk built without it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/admit.h>
#include <rusk/classify.h>
#include <rusk/clock.h>
#include <rusk/cluster.h>
#include <rusk/dispatch.h>
#include <rusk/error.h>
#include <rusk/plan.h>
#include <rusk/predict.h>
#include <rusk/ru.h>
#include <rusk/rusk.h>
#include <rusk/sched.h>
#include <rusk/sync.h>
#include <rusk/vec.h>
#include <rusk/version.h>

/* jemalloc's control interface, present only when jemalloc is linked in. */
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
        __attribute__((weak));

static int fails;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
			fails++;                                                                   \
		}                                                                                  \
	} while (0)

/* "jemalloc" when malloc itself is jemalloc's (its per-thread byte counter moves by a
 * malloc), else "libc". */
static const char *process_malloc(void)
{
	if (mallctl == NULL)
		return "libc";
	uint64_t before = 0, after = 0;
	size_t len = sizeof before;
	if (mallctl("thread.allocated", &before, &len, NULL, 0) != 0)
		return "libc";
	void *volatile p = malloc(1 << 20);
	len = sizeof after;
	mallctl("thread.allocated", &after, &len, NULL, 0);
	free(p);
	return after - before >= (1u << 20) ? "jemalloc" : "libc";
}

static void check_cluster_and_agents(void)
{
	char err[256];
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = 200;
	p.partitions = 1;
	p.clock = rusk_clock_monotonic();
	rusk_cluster *c = NULL;
	if (rusk_cluster_create(&p, &c, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "cluster: %s\n", err);
		fails++;
		return;
	}
	CHECK(rusk_cluster_machines(c) == 200 && rusk_cluster_rus(c) == 200 * 16);
	CHECK(rusk_cluster_free_rus(c) == 200 * 16);

	/* admit.h: attached while nothing commits. */
	rusk_admit *adm = NULL;
	CHECK(rusk_admit_attach(c, NULL, &adm, err, sizeof err) == RUSK_OK);
	CHECK(adm != NULL && rusk_cluster_admit(c) == adm && rusk_admit_buckets(adm) == 20);

	/* ru.h */
	rusk_lease l;
	CHECK(rusk_ru_commit(c, 7, 3, NULL, &l) == RUSK_OK && l.ru == 3);
	CHECK(rusk_ru_release(c, 7, l) == RUSK_OK);
	CHECK(rusk_ru_release(c, 7, l) == RUSK_EFREE);

	/* vec.h */
	rusk_cluster_vec cv;
	CHECK(rusk_cluster_vec_get(c, &cv) == RUSK_OK && cv.mem_mib == 200ull * 65536);

	/* sync.h and sched.h: one agent places and releases a gang of 4. */
	rusk_sync_params sp;
	rusk_sync_params_init(&sp, 1, 1);
	CHECK(rusk_sync_check(&sp, err, sizeof err) == RUSK_OK);
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	rusk_agent *a = NULL;
	if (rusk_agent_create(c, &ap, &a, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "agent: %s\n", err);
		fails++;
	} else {
		CHECK(rusk_view_sync(rusk_agent_view(a), 0) == RUSK_OK);
		rusk_task t = {.id = 1, .rus = 4, .gang = true};
		rusk_admit_decision dec;
		CHECK(rusk_admit_check(adm, &t, RUSK_QUALITY_SCORE, 0, &dec) == RUSK_OK &&
		      dec.verdict == RUSK_ADMIT_NOW);
		rusk_lease ls[4];
		rusk_placement pl;
		size_t rejected = 1;
		CHECK(rusk_agent_place(a, &t, ls, &pl) == RUSK_OK && pl.placed == 4);
		CHECK(rusk_agent_release(a, t.id, ls, 4, &rejected) == RUSK_OK && rejected == 0);
		rusk_agent_destroy(a);
	}

	/* dispatch.h: a dispatcher made, read and freed (never started). */
	rusk_dispatch_params dp;
	rusk_dispatch_params_init(&dp, 1);
	dp.ring = 1024;
	dp.max_tasks = 1024;
	rusk_dispatch *d = NULL;
	if (rusk_dispatch_create(c, &dp, &d, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "dispatch: %s\n", err);
		fails++;
	} else {
		rusk_dispatch_stats st;
		rusk_dispatch_stats_get(d, &st);
		CHECK(st.submitted == 0 && rusk_dispatch_agent(d, 0) != NULL);
		rusk_dispatch_destroy(d);
	}

	CHECK(rusk_cluster_verify(c, err, sizeof err) == RUSK_OK);
	rusk_cluster_destroy(c); /* detaches and frees adm too */
}

/* classify.h: a small classification trained (LAPACK's SVD) and asked. */
static void check_classify(void)
{
	char err[256];
	rusk_cls_params p;
	rusk_cls_params_init(&p, 4);
	rusk_cls *cls = NULL;
	CHECK(rusk_cls_create(&p, &cls, err, sizeof err) == RUSK_OK);
	for (uint32_t r = 0; r < 8; r++) {
		rusk_cls_entry e[4];
		for (uint32_t k = 0; k < 4; k++)
			e[k] = (rusk_cls_entry){k, (1.0 + r) * (1.0 + k)};
		CHECK(rusk_cls_add_row(cls, e, 4, NULL, err, sizeof err) == RUSK_OK);
	}
	rusk_cls_train_info ti;
	CHECK(rusk_cls_retrain(cls, &ti, err, sizeof err) == RUSK_OK && ti.version == 1);
	rusk_cls_entry q[2] = {{0, 3.0}, {1, 6.0}};
	double out[4];
	CHECK(rusk_cls_classify(cls, q, 2, out, NULL) == RUSK_OK && out[3] > out[0]);
	rusk_cls_destroy(cls);
}

/* predict.h and plan.h: runtimes learned, a distribution planned by GLPK's MILP. */
static void check_predict_and_plan(void)
{
	char err[256];
	rusk_predictor *pr = NULL;
	CHECK(rusk_predict_create(NULL, &pr, err, sizeof err) == RUSK_OK);
	rusk_job j;
	rusk_job_init(&j);
	j.user = rusk_predict_id("alice");
	for (int i = 0; i < 20; i++)
		CHECK(rusk_predict_update(pr, &j, 100.0 + i) == RUSK_OK);
	rusk_prediction pred;
	rusk_dist dist;
	CHECK(rusk_predict(pr, &j, &pred, &dist) == RUSK_OK && dist.count == 20);
	rusk_predict_destroy(pr);

	rusk_plan_params pp;
	rusk_plan_params_init(&pp, RUSK_PLAN_3SIGMA, 8);
	rusk_plan *plan = NULL;
	CHECK(rusk_plan_create(&pp, &plan, err, sizeof err) == RUSK_OK);
	if (plan == NULL)
		return;
	for (uint64_t id = 1; id <= 3; id++) {
		rusk_plan_job pj = {.id = id,
		                    .cores = 4,
		                    .submit_s = 0,
		                    .deadline_s = 400,
		                    .estimate_s = 110,
		                    .dist = &dist};
		CHECK(rusk_plan_submit(plan, &pj) == RUSK_OK);
	}
	rusk_plan_action acts[8];
	size_t n = 0;
	rusk_plan_tick_info info;
	CHECK(rusk_plan_tick(plan, 0, 8, acts, 8, &n, &info) == RUSK_OK && n == 2);
	CHECK(info.how == RUSK_PLAN_HOW_MILP || info.how == RUSK_PLAN_HOW_MILP_TIME ||
	      info.how == RUSK_PLAN_HOW_GREEDY_TIME);
	CHECK(rusk_plan_size(plan) == 3);
	rusk_plan_destroy(plan);
}

int main(int argc, char **argv)
{
	/* version.h, error.h, clock.h */
	if (strcmp(rusk_version(), RUSK_VERSION_STRING) != 0 ||
	    rusk_version_number() != RUSK_VERSION_NUMBER) {
		fprintf(stderr, "headers %s, library %s\n", RUSK_VERSION_STRING, rusk_version());
		return 1;
	}
	CHECK(strcmp(rusk_strerror(RUSK_EAGAIN), rusk_strerror(RUSK_OK)) != 0);
	const rusk_clock *clk = rusk_clock_monotonic();
	CHECK(clk != NULL && rusk_clock_now(clk) > 0);

	rusk_thread_register();
	check_cluster_and_agents();
	check_classify();
	check_predict_and_plan();
	rusk_rcu_barrier();
	rusk_thread_unregister();

	const char *m = process_malloc();
	printf("malloc: %s\n", m);
	if (argc > 1 && strcmp(argv[1], m) != 0) {
		fprintf(stderr, "FAIL: expected %s's malloc, got %s's\n", argv[1], m);
		fails++;
	}
	if (fails != 0)
		return 1;
	printf("consumer ok: rusk %s, every public header\n", rusk_version());
	return 0;
}
