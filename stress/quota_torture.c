/* SPDX-License-Identifier: MIT */
/*
 * quota_torture: quota groups (rusk/dispatch.h, "Quota groups") under everything at once.
 * A dispatcher with three groups (weights 1:2:4, a minimum and two maximums) and its
 * coordinator thread every 2 ms; submitter threads sending short tasks of every group and of
 * none, some of high priority (they preempt); a topology thread failing, draining and
 * bringing back machines every few milliseconds (revocations); a checker thread reading
 * every group's figures every millisecond. Pass rule, 0 violations:
 *   - no group's RU usage above its maximum + the stated bound (agents x its largest task),
 *     at any sample;
 *   - no round's allocation unfair (fair_failures) and no group growing past its allowance
 *     by more than the bound (over <= bound) at the end;
 *   - nothing lost: every task submitted got exactly one terminal event (DONE or REJECTED),
 *     rusk_dispatch_check's identity holds, and the cluster verifies with every RU free.
 *
 * usage: quota_torture [--machines N] [--agents N] [--seconds S] [--seed N] [--hi-percent P]
 *                      [--max-rus R]
 *
 * Found here first, fixed since (dispatch_impl.h, E12): a preemptor's optimistic read of a
 * victim's fields (take_victim) could read a lease array that the victim's end had just
 * freed (tasks of more than RUSK_JOB_INLINE_LEASES RUs), and TSan saw the read race with a
 * submitter re-initialising the slot. Lease arrays now live until the dispatcher is
 * destroyed and the validated reads are outside TSan's instrumentation; the default
 * --max-rus 4 gives tasks of 1..4 RUs, so heap lease arrays are exercised, and the short
 * form runs in the TSan and ASan phases.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rusk/rusk.h>

#include "args.h"

static rusk_cluster *cl;
static rusk_dispatch *dp;
static atomic_ulong submitted, done, rejected, preempted, revoked, placed;
static atomic_ulong violations, samples;
static atomic_int running = 1;
static double seconds = 2;
static uint32_t hi_percent = 5; /* --hi-percent: tasks of high priority (they preempt) */
static uint32_t max_rus = 4;    /* --max-rus: tasks of 1..max_rus RUs */
static uint64_t seed = 1;

#define NG 3
static rusk_quota_group groups[NG];

static void on_event(void *arg, rusk_dispatch_event *ev)
{
	(void)arg;
	switch (ev->kind) {
	case RUSK_EV_PLACED: atomic_fetch_add(&placed, 1); break;
	case RUSK_EV_DONE: atomic_fetch_add(&done, 1); break;
	case RUSK_EV_REJECTED: atomic_fetch_add(&rejected, 1); break;
	case RUSK_EV_PREEMPTED: atomic_fetch_add(&preempted, 1); break;
	case RUSK_EV_REVOKED: atomic_fetch_add(&revoked, 1); break;
	default: break;
	}
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void nap_us(long us)
{
	nanosleep(&(struct timespec){0, us * 1000L}, NULL);
}

static void *submitter(void *arg)
{
	uint64_t s = seed * 7919 + (uint64_t)(uintptr_t)arg + 1;
	rusk_thread_register();
	while (atomic_load(&running)) {
		uint64_t out =
		        atomic_load(&submitted) - atomic_load(&done) - atomic_load(&rejected);
		if (out >
		    4 * rusk_cluster_rus(cl)) { /* enough queued: keep the rings from filling */
			nap_us(200);
			continue;
		}
		uint64_t r = xs(&s);
		rusk_dtask_spec t = {.rus = 1 + (uint32_t)(r % max_rus),
		                     .run_ns = 1000000 + (r >> 8) % 4000000,
		                     .group = (uint16_t)((r >> 20) % (NG + 1)),
		                     .priority = (uint8_t)((r >> 30) % 100 < hi_percent)};
		rusk_dispatch_submit(dp, UINT32_MAX, &t, NULL); /* a refusal is REJECTED: counted */
		atomic_fetch_add(&submitted, 1);
	}
	rusk_thread_unregister();
	return NULL;
}

/* Fails, drains and brings back machines (one thread: changes of a machine serialised). */
static void *topology(void *arg)
{
	(void)arg;
	uint64_t s = seed * 104729 + 3;
	uint32_t n = rusk_cluster_machines(cl);
	rusk_thread_register();
	while (atomic_load(&running)) {
		uint32_t m = (uint32_t)(xs(&s) % n);
		uint64_t what = xs(&s) % 3;
		if (what == 0)
			rusk_machine_fail(cl, m, NULL, NULL); /* the dispatcher hears of it */
		else if (what == 1)
			rusk_machine_drain(cl, m);
		else
			rusk_machine_up(cl, m);
		nap_us(2000);
	}
	for (uint32_t m = 0; m < n; m++)
		rusk_machine_up(cl, m);
	rusk_thread_unregister();
	return NULL;
}

static void *checker(void *arg)
{
	(void)arg;
	rusk_thread_register();
	while (atomic_load(&running)) {
		for (uint32_t k = 1; k <= NG; k++) {
			rusk_dispatch_group g;
			if (rusk_dispatch_group_get(dp, k, &g) != RUSK_OK) {
				atomic_fetch_add(&violations, 1);
				continue;
			}
			uint64_t max = groups[k - 1].max.v[RUSK_QUOTA_RUS];
			if (max != RUSK_QUOTA_UNLIMITED &&
			    g.usage.v[RUSK_QUOTA_RUS] > max + g.bound.v[RUSK_QUOTA_RUS]) {
				fprintf(stderr,
				        "group %u: usage %llu above max %llu + bound %llu\n", k,
				        (unsigned long long)g.usage.v[0], (unsigned long long)max,
				        (unsigned long long)g.bound.v[0]);
				atomic_fetch_add(&violations, 1);
			}
			atomic_fetch_add(&samples, 1);
		}
		nap_us(1000);
	}
	rusk_thread_unregister();
	return NULL;
}

int main(int argc, char **argv)
{
	uint32_t machines = 400, agents = 3;
	const stress_arg opts[] = {
	        {"--machines", STRESS_U32, &machines},     {"--agents", STRESS_U32, &agents},
	        {"--seconds", STRESS_DOUBLE, &seconds},    {"--seed", STRESS_U64, &seed},
	        {"--hi-percent", STRESS_U32, &hi_percent}, {"--max-rus", STRESS_U32, &max_rus}};
	const char *bad = stress_args_parse(argc, argv, opts, sizeof opts / sizeof opts[0]);
	if (bad || machines < 100 || agents < 1 || agents > 16 || seconds <= 0 ||
	    hi_percent > 100 || max_rus < 1 || max_rus > 8) {
		fprintf(stderr,
		        "quota_torture: bad or missing value for %s\nusage: quota_torture "
		        "[--machines N >= 100] [--agents 1..16] [--seconds S] [--seed N]\n",
		        bad ? bad : "an option");
		return 2;
	}
	rusk_thread_register();
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = machines;
	p.rus_per_machine = 8;
	p.machines_per_rack = 10;
	p.racks_per_cell = 1;
	p.partitions = agents;
	p.seed = seed;
	char err[256];
	if (rusk_cluster_create(&p, &cl, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "quota_torture: %s\n", err);
		return 2;
	}
	uint64_t cap = rusk_cluster_rus(cl), U = RUSK_QUOTA_UNLIMITED;
	groups[0] = (rusk_quota_group){1, {{cap / 10, 0, 0}}, {{cap * 4 / 10, U, U}}};
	groups[1] = (rusk_quota_group){2, {{0, 0, 0}}, {{cap / 2, U, U}}};
	groups[2] = (rusk_quota_group){4, {{0, 0, 0}}, {{U, U, U}}};
	rusk_dispatch_params dpp;
	rusk_dispatch_params_init(&dpp, agents);
	dpp.on_event = on_event;
	dpp.groups = groups;
	dpp.n_groups = NG;
	dpp.quota_period_ns = 2000000;
	dpp.seed = seed;
	if (rusk_dispatch_create(cl, &dpp, &dp, err, sizeof err) != RUSK_OK ||
	    rusk_dispatch_start(dp) != RUSK_OK) {
		fprintf(stderr, "quota_torture: %s\n", err);
		return 2;
	}
	pthread_t sub[2], topo, chk;
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&sub[i], NULL, submitter, (void *)i);
	pthread_create(&topo, NULL, topology, NULL);
	pthread_create(&chk, NULL, checker, NULL);
	nanosleep(&(struct timespec){(time_t)seconds,
	                             (long)((seconds - (double)(time_t)seconds) * 1e9)},
	          NULL);
	atomic_store(&running, 0);
	for (int i = 0; i < 2; i++)
		pthread_join(sub[i], NULL);
	pthread_join(topo, NULL); /* every machine is up again */
	pthread_join(chk, NULL);
	rusk_dispatch_stop(dp, true); /* drain: everything queued is placed and ends */
	uint64_t bad_end = 0;
	for (uint32_t k = 1; k <= NG; k++) {
		rusk_dispatch_group g;
		rusk_dispatch_group_get(dp, k, &g);
		printf("group %u: rounds %llu, usage %llu, over %llu (bound %llu), held back %llu, "
		       "unfair rounds %llu\n",
		       k, (unsigned long long)g.round, (unsigned long long)g.usage.v[0],
		       (unsigned long long)g.over.v[0], (unsigned long long)g.bound.v[0],
		       (unsigned long long)g.held_back, (unsigned long long)g.fair_failures);
		for (int d = 0; d < RUSK_QUOTA_DIMS; d++)
			bad_end += g.over.v[d] > g.bound.v[d];
		bad_end += g.fair_failures > 0 || g.round == 0;
	}
	if (rusk_dispatch_check(dp, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "quota_torture: %s\n", err);
		bad_end++;
	}
	rusk_dispatch_destroy(dp);
	uint64_t ended = atomic_load(&done) + atomic_load(&rejected);
	if (ended != atomic_load(&submitted)) {
		fprintf(stderr, "quota_torture: %llu submitted, %llu ended\n",
		        (unsigned long long)atomic_load(&submitted), (unsigned long long)ended);
		bad_end++;
	}
	if (rusk_cluster_verify(cl, err, sizeof err) != RUSK_OK ||
	    rusk_cluster_free_rus(cl) != rusk_cluster_rus(cl)) {
		fprintf(stderr, "quota_torture: cluster after the run: %s\n", err);
		bad_end++;
	}
	uint64_t v = atomic_load(&violations) + bad_end;
	printf("quota_torture: %llu tasks (%llu placed, %llu preempted, %llu revoked, %llu "
	       "rejected), %llu samples: %llu violations\n",
	       (unsigned long long)atomic_load(&submitted),
	       (unsigned long long)atomic_load(&placed),
	       (unsigned long long)atomic_load(&preempted),
	       (unsigned long long)atomic_load(&revoked),
	       (unsigned long long)atomic_load(&rejected),
	       (unsigned long long)atomic_load(&samples), (unsigned long long)v);
	rusk_cluster_destroy(cl);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return v == 0 ? 0 : 1;
}
