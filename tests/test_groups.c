/* SPDX-License-Identifier: MIT */
/*
 * Quota groups in the dispatcher (rusk/dispatch.h, "Quota groups"): agents enforce the
 * coordinator's allowances, usage converges to the weighted shares, an idle group's share
 * goes to the others in proportion, no group grows past its allowance by more than the
 * stated bound, every round's allocation passes the fairness check, and every task ends
 * with exactly one terminal event. Real time (agent threads); label concurrency (run again
 * under TSan and ASan+UBSan).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

#define U RUSK_QUOTA_UNLIMITED

typedef struct counts {
	atomic_ulong placed, done, rejected, preempted;
	/* churn: each DONE of a grouped task submits one more of its group until `stop` */
	rusk_dispatch *d;
	atomic_int churn, stop;
	atomic_ulong resubmitted;
	uint64_t run_ms;
} counts;

static void on_event(void *arg, rusk_dispatch_event *ev)
{
	counts *n = arg;
	switch (ev->kind) {
	case RUSK_EV_PLACED: atomic_fetch_add(&n->placed, 1); break;
	case RUSK_EV_DONE:
		atomic_fetch_add(&n->done, 1);
		if (atomic_load(&n->churn) && !atomic_load(&n->stop) && ev->user != NULL) {
			rusk_dtask_spec s = {.rus = 1,
			                     .run_ns = n->run_ms * 1000000ull,
			                     .group = (uint16_t)(uintptr_t)ev->user,
			                     .user = ev->user};
			/* a refusal (stopping) is a REJECTED event: counted either way */
			rusk_dispatch_submit(n->d, UINT32_MAX, &s, NULL);
			atomic_fetch_add(&n->resubmitted, 1);
		}
		break;
	case RUSK_EV_REJECTED: atomic_fetch_add(&n->rejected, 1); break;
	case RUSK_EV_PREEMPTED: atomic_fetch_add(&n->preempted, 1); break;
	default: break;
	}
}

static void sleep_ms(int ms)
{
	nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

static rusk_quota_group grp(double w, uint64_t min_rus)
{
	rusk_quota_group g = {w, {{min_rus, 0, 0}}, {{U, U, U}}};
	return g;
}

/* 70 machines of 10 RUs: 700 RUs; 2 agents; groups as given; rounds by hand (period 0). */
static rusk_dispatch *dispatcher(rusk_cluster *c, const rusk_quota_group *g, uint32_t n,
                                 uint64_t period_ns, counts *cnt)
{
	rusk_dispatch_params p;
	rusk_dispatch_params_init(&p, 2);
	p.on_event = on_event;
	p.arg = cnt;
	p.groups = g;
	p.n_groups = n;
	p.quota_period_ns = period_ns;
	rusk_dispatch *d;
	char err[256];
	int rc = rusk_dispatch_create(c, &p, &d, err, sizeof err);
	if (rc != RUSK_OK)
		print_message("create: %s\n", err);
	assert_int_equal(rc, RUSK_OK);
	return d;
}

static rusk_cluster *cluster(void)
{
	return fx_cluster((fx_shape){
	        .machines = 70, .rus = 10, .partitions = 2, .per_rack = 1, .per_cell = 1});
}

/* Submits n one-RU tasks of group g that run for run_ms. */
static uint64_t submit(rusk_dispatch *d, uint16_t g, int n, uint64_t run_ms)
{
	uint64_t ok = 0;
	for (int i = 0; i < n; i++) {
		rusk_dtask_spec s = {.rus = 1,
		                     .run_ns = run_ms * 1000000ull,
		                     .group = g,
		                     .user = (void *)(uintptr_t)g};
		ok += rusk_dispatch_submit(d, UINT32_MAX, &s, NULL) == RUSK_OK;
	}
	return ok;
}

static uint64_t usage(rusk_dispatch *d, uint32_t k, rusk_dispatch_group *out)
{
	assert_int_equal(rusk_dispatch_group_get(d, k, out), RUSK_OK);
	return out->usage.v[RUSK_QUOTA_RUS];
}

/* Each group's usage is want[k] within [-slack, +bound]; every round fair; no overshoot
 * beyond the bound. */
static void expect_usage(rusk_dispatch *d, const uint64_t *want, uint32_t n, uint64_t slack)
{
	for (uint32_t k = 1; k <= n; k++) {
		rusk_dispatch_group g;
		uint64_t u = usage(d, k, &g);
		uint64_t bound = g.bound.v[RUSK_QUOTA_RUS];
		print_message("group %u: usage %llu allow %llu alloc %llu demand %llu (want %llu, "
		              "bound %llu, over %llu, held %llu, round %llu)\n",
		              k, (unsigned long long)u, (unsigned long long)g.allow.v[0],
		              (unsigned long long)g.alloc.v[0], (unsigned long long)g.demand.v[0],
		              (unsigned long long)want[k - 1], (unsigned long long)bound,
		              (unsigned long long)g.over.v[0], (unsigned long long)g.held_back,
		              (unsigned long long)g.round);
		assert_true(u + slack >= want[k - 1]);
		assert_true(u <= want[k - 1] + bound);
		assert_true(g.over.v[RUSK_QUOTA_RUS] <= bound);
		assert_int_equal(g.fair_failures, 0);
	}
}

static void finish(rusk_dispatch *d, rusk_cluster *c, counts *n, uint64_t submitted)
{
	atomic_store(&n->stop, 1);
	rusk_dispatch_stop(d, false);
	submitted += atomic_load(&n->resubmitted);
	char err[256];
	assert_int_equal(rusk_dispatch_check(d, err, sizeof err), RUSK_OK);
	rusk_dispatch_destroy(d);
	/* nothing lost: one terminal event per task */
	assert_int_equal(atomic_load(&n->done) + atomic_load(&n->rejected), submitted);
	rusk_cluster_destroy(c);
}

/* Rounds every 20 ms for ms milliseconds. */
static void rounds_for(rusk_dispatch *d, int ms)
{
	for (int t = 0; t < ms; t += 20) {
		sleep_ms(20);
		assert_int_equal(rusk_dispatch_quota_round(d), RUSK_OK);
	}
}

/* Weights 1:2:4, the three groups arriving together (queued before the start), each with
 * more 60-second tasks than the cluster holds: round 0's allowances (every group as if it
 * wanted everything) already divide it 100 / 200 / 400, the first round from measured
 * demand (after 300 ms: every task received) keeps that, and every later round too. */
static void test_weights_converge(void **state)
{
	(void)state;
	rusk_cluster *c = cluster();
	counts n = {0};
	rusk_quota_group g[3] = {grp(1, 0), grp(2, 0), grp(4, 0)};
	rusk_dispatch *d = dispatcher(c, g, 3, 0, &n);
	uint64_t sub = 0;
	for (uint16_t k = 1; k <= 3; k++)
		sub += submit(d, k, 800, 60000);
	assert_int_equal(rusk_dispatch_start(d), RUSK_OK);
	sleep_ms(300);
	rounds_for(d, 600);
	expect_usage(d, (const uint64_t[]){100, 200, 400}, 3, 2);
	finish(d, c, &n, sub);
}

/* Group 2 idle: its share goes to groups 1 and 3 in proportion 1:4 (140 / 0 / 560) from
 * the first round that measures demand. */
static void test_idle_share(void **state)
{
	(void)state;
	rusk_cluster *c = cluster();
	counts n = {0};
	rusk_quota_group g[3] = {grp(1, 0), grp(2, 0), grp(4, 0)};
	rusk_dispatch *d = dispatcher(c, g, 3, 0, &n);
	uint64_t sub = submit(d, 1, 800, 60000) + submit(d, 3, 800, 60000);
	assert_int_equal(rusk_dispatch_start(d), RUSK_OK);
	sleep_ms(300);
	rounds_for(d, 1200); /* the 200 RUs round 0 kept for group 2 show in views at syncs */
	expect_usage(d, (const uint64_t[]){140, 0, 560}, 3, 2);
	finish(d, c, &n, sub);
}

/* Reclaim: group 2 fills the cluster while group 1 is absent (its share goes to group 2);
 * then group 1 (minimum 300 RUs, equal weight) arrives with 60-second tasks. Nothing of group
 * 2 ends by itself, so group 1 gets its minimum only by preempting group 2's tasks (at most
 * 32 victims per agent per round): within 3 s it holds its minimum (not far above: reclaim
 * stops there), group 2's preempted tasks are queued again, and nothing is lost. */
static void test_minimum_reclaimed(void **state)
{
	(void)state;
	rusk_cluster *c = cluster();
	counts n = {0};
	rusk_quota_group g[2] = {grp(1, 300), grp(1, 0)};
	rusk_dispatch *d = dispatcher(c, g, 2, 0, &n);
	uint64_t sub = submit(d, 2, 800, 60000);
	assert_int_equal(rusk_dispatch_start(d), RUSK_OK);
	sleep_ms(300);
	rounds_for(d, 600);
	rusk_dispatch_group g1, g2;
	print_message("before: group 2 usage %llu\n", (unsigned long long)usage(d, 2, &g2));
	assert_true(usage(d, 2, &g2) >= 650); /* it took the idle group's share */
	sub += submit(d, 1, 400, 60000);
	rounds_for(d, 3000);
	uint64_t u1 = usage(d, 1, &g1), u2 = usage(d, 2, &g2);
	print_message("after: group 1 usage %llu (allow %llu), group 2 usage %llu (allow %llu), "
	              "preempted %lu\n",
	              (unsigned long long)u1, (unsigned long long)g1.allow.v[0],
	              (unsigned long long)u2, (unsigned long long)g2.allow.v[0],
	              atomic_load(&n.preempted));
	assert_true(u1 + g1.bound.v[0] >= 300);
	assert_true(u1 <= 350 + g1.bound.v[0]);
	assert_true(atomic_load(&n.preempted) >= 250);
	assert_int_equal(g1.fair_failures + g2.fair_failures, 0);
	finish(d, c, &n, sub);
}

/* The coordinator thread (5 ms) with short tasks, a minimum, and ungrouped tasks beside:
 * a drain places everything; every round fair; nobody grew past its allowance beyond the
 * bound; every task ends once. */
static void test_coordinator_thread(void **state)
{
	(void)state;
	rusk_cluster *c = cluster();
	counts n = {0};
	rusk_quota_group g[2] = {grp(1, 300), grp(3, 0)};
	rusk_dispatch *d = dispatcher(c, g, 2, 5000000, &n);
	assert_int_equal(rusk_dispatch_start(d), RUSK_OK);
	uint64_t sub = 0;
	for (int burst = 0; burst < 20; burst++) {
		sub += submit(d, 2, 200, 10) + submit(d, 1, 100, 10) + submit(d, 0, 20, 10);
		sleep_ms(10);
	}
	rusk_dispatch_stop(d, true); /* drain: parked tasks wait for the coordinator's rounds */
	for (uint32_t k = 1; k <= 2; k++) {
		rusk_dispatch_group gg;
		assert_int_equal(rusk_dispatch_group_get(d, k, &gg), RUSK_OK);
		print_message("group %u: rounds %llu over %llu bound %llu held %llu\n", k,
		              (unsigned long long)gg.round, (unsigned long long)gg.over.v[0],
		              (unsigned long long)gg.bound.v[0], (unsigned long long)gg.held_back);
		assert_true(gg.round > 0);
		assert_int_equal(gg.fair_failures, 0);
		assert_true(gg.over.v[RUSK_QUOTA_RUS] <= gg.bound.v[RUSK_QUOTA_RUS]);
	}
	rusk_dispatch_stats st;
	rusk_dispatch_stats_get(d, &st);
	assert_int_equal(st.queued_end, 0); /* the drain placed everything */
	finish(d, c, &n, sub);
	assert_int_equal(atomic_load(&n.rejected), 0);
}

/* Bad arguments: an unknown group, groups that do not fit, calls without groups. */
static void test_bad_args(void **state)
{
	(void)state;
	rusk_cluster *c = cluster();
	counts n = {0};
	rusk_quota_group g[2] = {grp(1, 400), grp(1, 400)}; /* minimums 800 > 700 RUs */
	rusk_dispatch_params p;
	rusk_dispatch_params_init(&p, 1);
	p.groups = g;
	p.n_groups = 2;
	rusk_dispatch *d;
	char err[256];
	assert_int_equal(rusk_dispatch_create(c, &p, &d, err, sizeof err), RUSK_EINVAL);
	assert_non_null(strstr(err, "rus minimums sum to 800, above the cluster's 700"));
	p.n_groups = RUSK_QUOTA_MAX_GROUPS + 1;
	assert_int_equal(rusk_dispatch_create(c, &p, &d, err, sizeof err), RUSK_EINVAL);
	p.groups = NULL;
	p.n_groups = 1;
	assert_int_equal(rusk_dispatch_create(c, &p, &d, err, sizeof err), RUSK_EINVAL);
	g[0] = grp(1, 0);
	d = dispatcher(c, g, 1, 0, &n);
	rusk_dtask_spec s = {.rus = 1, .run_ns = 1000, .group = 2};
	assert_int_equal(rusk_dispatch_submit(d, UINT32_MAX, &s, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_dispatch_submit_batch(d, UINT32_MAX, &s, 1, NULL, NULL, NULL),
	                 RUSK_EINVAL);
	rusk_dispatch_group out;
	assert_int_equal(rusk_dispatch_group_get(d, 0, &out), RUSK_EINVAL);
	assert_int_equal(rusk_dispatch_group_get(d, 2, &out), RUSK_EINVAL);
	assert_int_equal(rusk_dispatch_group_get(d, 1, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_dispatch_group_get(NULL, 1, &out), RUSK_EINVAL);
	assert_int_equal(rusk_dispatch_quota_round(NULL), RUSK_EINVAL);
	rusk_dispatch_destroy(d);
	/* without groups: group 0 only, no rounds */
	rusk_dispatch_params_init(&p, 1);
	assert_int_equal(rusk_dispatch_create(c, &p, &d, err, sizeof err), RUSK_OK);
	s.group = 1;
	assert_int_equal(rusk_dispatch_submit(d, UINT32_MAX, &s, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_dispatch_quota_round(d), RUSK_EINVAL);
	assert_int_equal(rusk_dispatch_group_get(d, 1, &out), RUSK_EINVAL);
	rusk_dispatch_destroy(d);
	rusk_cluster_destroy(c);
}

int main(void)
{
	rusk_thread_register();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_weights_converge),  cmocka_unit_test(test_idle_share),
	        cmocka_unit_test(test_minimum_reclaimed), cmocka_unit_test(test_coordinator_thread),
	        cmocka_unit_test(test_bad_args),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
