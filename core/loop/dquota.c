/* SPDX-License-Identifier: MIT */
/*
 * Quota groups in the dispatcher (rusk/dispatch.h, "Quota groups"; ParSync §2 and §7):
 * "the coordinator gathers information from schedulers, e.g., the amount of resources each
 * quota group has been allocated and will need, and then calculates the amount of
 * resources a quota group can be allocated while maintaining fairness among all groups"
 * (§7). Here the schedulers are the dispatcher's agents, the coordinator is a thread of
 * the dispatcher (or the embedder's calls of rusk_dispatch_quota_round), and the
 * calculation is rusk_quota_allocate (weighted DRF max-min, core/kernel/quota.c).
 *
 * One module in two files, on purpose: this file works on the dispatcher's structs and
 * inline helpers (dispatch_impl.h), and dispatch.c calls this file's functions (dquota.h);
 * dispatch_impl.h names this file's types without including dquota.h, so no header
 * includes another in a circle. A call-graph view shows dispatch.c and dquota.c using each
 * other: the coordinator is part of the dispatcher, kept apart for its size.
 *
 * Counters, per agent and group, per dimension (RUs, memory MiB, GPU milli):
 *   taken     demand of the tasks the agent admitted; the agent alone writes it (a relaxed
 *             load + store: one writer, the coordinator reads it relaxed)
 *   returned  demand given back: an atomic add (release) by whoever ends the tenure (the
 *             winner of the state CAS, E2) or the agent that drops the task unplaced; on
 *             its own line, as several threads write it
 *   held      demand of the tasks it parked for want of allowance (one count per task per
 *             round), written by the agent alone
 *   max_task  the largest demand it admitted (the overshoot bound)
 * Usage of g = sum taken - sum returned (E11: returned read first, with acquire, so usage is
 * never undercounted). Nothing shared is written per task but the agent's own lines: the
 * per-task path stays as lock-free and as local as without groups (no shared hot counter in
 * the decision loop: one would be a contended line per task).
 *
 * A round: usage, held-back demand since the last round; demand = usage + held back;
 * allocation (rusk_quota_allocate) checked by rusk_quota_verify (a failure counts in
 * fair_failures: it should never happen); allowance = allocation + the capacity nobody
 * claimed, split by weight (capped by the maximum: it lets a group grow into idle capacity
 * without waiting a round, and is the fair allocation whenever the cluster is contended);
 * headroom = allowance - usage, split among agents in proportion to the demand each held
 * back (evenly when none held back). Published in one block with rcu_xchg_pointer; the
 * replaced block is freed by call_rcu.
 *
 * Admission (agent thread, per grouped task that holds nothing yet): read the published
 * block under rcu_read_lock; on a new round, copy the agent's shares and zero what it
 * admitted this round; admit while admitted < share in every dimension the task needs
 * (checked before adding: the last task admitted may pass the share by itself), else park
 * the task in the agent's wait heap until the round after. Bound: the shares sum to the
 * headroom, each agent passes its share by at most one task, so usage <= allowance +
 * agents x largest task, as long as the usage the round read was not undercounted (E11)
 * and nothing was admitted under the old shares after it was read (E13: while a round is
 * made, the published one is frozen; the admission runs inside the read-side section the
 * coordinator's grace period waits for; a task that meets the freeze waits 100 us).
 *
 * Determinism: a round is a function of the counters and `now`; the coordinator thread
 * runs on the wall clock, while `rusk sim` drives the rounds itself through the step API
 * (rusk_dispatch_quota_tick_ at exact multiples of the period on its virtual clock), so a
 * seed gives the same rounds. Without groups nothing here runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu/urcu-memb.h>

#include "base/atomic.h"
#include "base/compiler.h"
#include "loop/dispatch_impl.h"
#include "loop/dquota.h"

#define D                    RUSK_QUOTA_DIMS
/* Reclaim's bound: victims one agent may preempt per round (rusk/dispatch.h). */
#define RUSK_DQUOTA_RECLAIM  32u
/* The coordinator's longest sleep between checks of its stop flag: a stop waits at most
 * this long. 1 ms slices cost ten wake-ups per 10 ms round (strace of a 5 s default run:
 * 14,276 clock_nanosleep calls with groups, 3,246 without); 10 ms is one per default
 * round. */
#define RUSK_DQUOTA_SLICE_NS 10000000ull

struct rusk_dquota_agent {
	uint64_t (*taken)[D], (*held)[D], (*max_task)[D];
	uint64_t *held_n;
	/* the agent's own, never read by others: the round it works under, its shares in
	 * it, and what it admitted in it */
	uint64_t round, next_ns;
	uint64_t (*share)[D], (*spent)[D];
	uint8_t *from, *below;   /* this round: groups to reclaim from, groups below minimum */
	uint32_t reclaim_left;   /* victims it may still take this round */
	uint64_t (*returned)[D]; /* any thread, atomic adds: its own allocation */
	/* waiting demand in and out (any thread, relaxed atomic adds: a demand estimate,
	 * nothing is published through them); in the same allocation, after returned */
	uint64_t (*w_in)[D], (*w_out)[D];
};

/* One published round. */
typedef struct rusk_dquota_pub {
	struct rcu_head rcu;
	uint64_t round, at_ns, next_ns;
	uint64_t (*share)[D];                 /* [agent * n + g], inside this block */
	uint8_t from[RUSK_QUOTA_MAX_GROUPS];  /* above allowance and minimum: reclaimable */
	uint8_t below[RUSK_QUOTA_MAX_GROUPS]; /* below min(min, demand): may reclaim */
	rusk_dispatch_group g[];              /* [n] */
} rusk_dquota_pub;

struct rusk_dquota {
	rusk_quota_group groups[RUSK_QUOTA_MAX_GROUPS];
	uint32_t n, agents;
	rusk_quota_vec cap;
	uint64_t period_ns;
	rusk_dquota_pub *pub; /* RCU-published (E11) */
	/* the coordinator's own (one round at a time) */
	uint64_t (*last_held)[D]; /* [agent * n + g] */
	uint64_t (*delta)[D];     /* [agent * n + g]: held back in the round being made */
	uint64_t round;
	/* E13: round r's block is frozen while round r + 1 is made: frozen = r + 1 (0: none).
	 * The coordinator stores it (release) and waits for a grace period before it reads the
	 * counters; an agent loads it (acquire) inside the read-side section it admits in. */
	uint64_t frozen;
	rusk_quota_vec over[RUSK_QUOTA_MAX_GROUPS];
	uint64_t fair_failures[RUSK_QUOTA_MAX_GROUPS];
	pthread_t tid;
	uint32_t stop; /* E5-like: store release by stop, load acquire by the thread */
	bool running;
};

static void rusk_dquota_demand_(const rusk_dtask *j, uint64_t dem[D])
{
	dem[RUSK_QUOTA_RUS] = j->rus;
	dem[RUSK_QUOTA_MEM] = j->vec.mem_mib;
	dem[RUSK_QUOTA_GPU] =
	        (uint64_t)j->vec.gpus * (j->vec.gpu_milli ? j->vec.gpu_milli : RUSK_GPU_MILLI);
}

static rusk_dquota_pub *rusk_dquota_pub_new_(const rusk_dquota *q)
{
	size_t head = sizeof(rusk_dquota_pub) + q->n * sizeof(rusk_dispatch_group);
	head = (head + 7) & ~(size_t)7;
	rusk_dquota_pub *p = calloc(1, head + (size_t)q->agents * q->n * sizeof(uint64_t[D]));
	if (p != NULL)
		p->share = (uint64_t(*)[D])(void *)((char *)p + head);
	return p;
}

static void rusk_dquota_pub_free_(struct rcu_head *h)
{
	rusk_dquota_pub *p = caa_container_of(h, rusk_dquota_pub, rcu);
	TSAN_ACQUIRE(p); /* after every reader's TSAN_RELEASE */
	free(p);
}

static void *rusk_dquota_calloc_(size_t n, size_t size, bool *ok)
{
	void *p = calloc(n ? n : 1, size);
	*ok &= p != NULL;
	return p;
}

int rusk_dquota_create_(rusk_dispatch *d, char *err, size_t len)
{
	const rusk_dispatch_params *p = &d->p;
	rusk_cluster_vec cv;
	rusk_quota_vec cap = {{rusk_cluster_rus(d->c), 0, 0}};
	if (rusk_cluster_vec_get(d->c, &cv) == RUSK_OK) {
		cap.v[RUSK_QUOTA_MEM] = cv.mem_mib;
		cap.v[RUSK_QUOTA_GPU] = cv.gpu_milli;
	}
	if (p->groups == NULL) {
		if (err != NULL && len > 0)
			snprintf(err, len, "groups: NULL with n_groups %u", p->n_groups);
		return RUSK_EINVAL;
	}
	char why[200];
	if (rusk_quota_groups_check(&cap, p->groups, p->n_groups, why, sizeof why) != RUSK_OK) {
		if (err != NULL && len > 0)
			snprintf(err, len, "groups: %s", why);
		return RUSK_EINVAL;
	}
	rusk_dquota *q = calloc(1, sizeof *q);
	if (q == NULL)
		return RUSK_ENOMEM;
	d->q = q;
	q->n = p->n_groups;
	q->agents = p->agents;
	q->cap = cap;
	q->period_ns = p->quota_period_ns;
	memcpy(q->groups, p->groups, q->n * sizeof q->groups[0]);
	bool ok = true;
	q->last_held = rusk_dquota_calloc_((size_t)q->agents * q->n, sizeof(uint64_t[D]), &ok);
	q->delta = rusk_dquota_calloc_((size_t)q->agents * q->n, sizeof(uint64_t[D]), &ok);
	for (uint32_t i = 0; ok && i < q->agents; i++) {
		rusk_dquota_agent *qa = rusk_dquota_calloc_(1, sizeof *qa, &ok);
		d->ag[i].q = qa;
		if (qa == NULL)
			break;
		qa->taken = rusk_dquota_calloc_(q->n, sizeof(uint64_t[D]), &ok);
		qa->held = rusk_dquota_calloc_(q->n, sizeof(uint64_t[D]), &ok);
		qa->max_task = rusk_dquota_calloc_(q->n, sizeof(uint64_t[D]), &ok);
		qa->held_n = rusk_dquota_calloc_(q->n, sizeof(uint64_t), &ok);
		qa->share = rusk_dquota_calloc_(q->n, sizeof(uint64_t[D]), &ok);
		qa->spent = rusk_dquota_calloc_(q->n, sizeof(uint64_t[D]), &ok);
		qa->from = rusk_dquota_calloc_(q->n, 1, &ok);
		qa->below = rusk_dquota_calloc_(q->n, 1, &ok);
		/* its own allocation: written by other threads, away from the agent's lines */
		size_t line =
		        ((3 * q->n * sizeof(uint64_t[D]) + RUSK_CACHELINE - 1) / RUSK_CACHELINE) *
		        RUSK_CACHELINE;
		qa->returned = aligned_alloc(RUSK_CACHELINE, line);
		ok &= qa->returned != NULL;
		if (qa->returned != NULL) {
			memset(qa->returned, 0, line);
			qa->w_in = qa->returned + q->n;
			qa->w_out = qa->returned + 2 * q->n;
		}
		qa->round = UINT64_MAX; /* no round seen yet */
	}
	if (!ok)
		return RUSK_ENOMEM; /* the caller destroys d, and with it what was made */
	/* Round 0: every group as if it wanted all it may have (its fair share under full
	 * contention), the headroom split evenly. */
	rusk_dquota_pub *pub = rusk_dquota_pub_new_(q);
	if (pub == NULL)
		return RUSK_ENOMEM;
	rusk_quota_vec dem[RUSK_QUOTA_MAX_GROUPS] = {{{0}}}, alloc[RUSK_QUOTA_MAX_GROUPS] = {{{0}}};
	for (uint32_t g = 0; g < q->n; g++)
		for (int k = 0; k < D; k++)
			dem[g].v[k] =
			        q->groups[g].max.v[k] < cap.v[k] ? q->groups[g].max.v[k] : cap.v[k];
	(void)rusk_quota_allocate(&cap, q->groups, q->n, dem, alloc); /* checked above */
	uint64_t now = rusk_dispatch_now_(d);
	pub->at_ns = now;
	pub->next_ns = now + (q->period_ns ? q->period_ns : 1000000);
	for (uint32_t g = 0; g < q->n; g++) {
		pub->g[g].demand = dem[g];
		pub->g[g].alloc = alloc[g];
		pub->g[g].allow = alloc[g];
		for (uint32_t i = 0; i < q->agents; i++)
			for (int k = 0; k < D; k++)
				pub->share[i * q->n + g][k] = alloc[g].v[k] / q->agents;
	}
	TSAN_RELEASE(pub);
	rcu_assign_pointer(q->pub, pub); /* no reader yet: the threads start later */
	return RUSK_OK;
}

void rusk_dquota_destroy_(rusk_dispatch *d)
{
	rusk_dquota *q = d->q;
	if (q == NULL)
		return;
	for (uint32_t i = 0; d->ag != NULL && i < q->agents; i++) {
		rusk_dquota_agent *qa = d->ag[i].q;
		if (qa == NULL)
			continue;
		free(qa->taken);
		free(qa->held);
		free(qa->max_task);
		free(qa->held_n);
		free(qa->share);
		free(qa->spent);
		free(qa->from);
		free(qa->below);
		free(qa->returned);
		free(qa);
		d->ag[i].q = NULL;
	}
	/* Replaced blocks wait for their grace period: run those callbacks first (never from
	 * a read-side section: destroy is not called from one). */
	urcu_memb_barrier();
	TSAN_ACQUIRE(q->pub);
	free(q->pub);
	free(q->last_held);
	free(q->delta);
	free(q);
	d->q = NULL;
}

int rusk_dquota_round_(rusk_dispatch *d, uint64_t now, bool concurrent)
{
	rusk_dquota *q = d->q;
	uint32_t n = q->n, na = q->agents;
	uint64_t ret[RUSK_QUOTA_MAX_GROUPS][D] = {{0}}, take[RUSK_QUOTA_MAX_GROUPS][D] = {{0}};
	uint64_t maxt[RUSK_QUOTA_MAX_GROUPS][D] = {{0}}, held_n[RUSK_QUOTA_MAX_GROUPS] = {0};
	uint64_t w_in[RUSK_QUOTA_MAX_GROUPS][D] = {{0}}, w_out[RUSK_QUOTA_MAX_GROUPS][D] = {{0}};
	rusk_quota_vec usage[RUSK_QUOTA_MAX_GROUPS] = {{{0}}}, dem[RUSK_QUOTA_MAX_GROUPS] = {{{0}}};
	rusk_quota_vec alloc[RUSK_QUOTA_MAX_GROUPS] = {{{0}}};
	double held_sum[RUSK_QUOTA_MAX_GROUPS][D] = {{0}};
	rusk_dquota_pub *pub = rusk_dquota_pub_new_(q);
	if (pub == NULL)
		return RUSK_ENOMEM;
	if (concurrent) {
		/* E13: freeze the published round, then wait until every admission that may
		 * not have seen the freeze has ended (each runs inside one read-side section):
		 * the counters read below then hold every task admitted under the old round,
		 * and none is admitted under it until the new one is published. Without this,
		 * an agent kept admitting under the old shares while this round was being made
		 * (a coordinator descheduled after reading the counters, on a loaded machine),
		 * and usage passed the allowance by more than the stated bound. */
		rusk_dquota_pub *cur = rcu_dereference(q->pub); /* only this thread replaces it */
		rusk_store64(&q->frozen, cur->round + 1, RUSK_RELEASE);
		urcu_memb_synchronize_rcu();
	}
	/* E11: every "returned" first (acquire), then every "taken". */
	for (uint32_t i = 0; i < na; i++)
		for (uint32_t g = 0; g < n; g++)
			for (int k = 0; k < D; k++) {
				ret[g][k] += rusk_load64(&d->ag[i].q->returned[g][k], RUSK_ACQUIRE);
				/* out before in: a task seen leaving was seen arriving (demand is
				 * never below what waits; relaxed: an estimate) */
				w_out[g][k] += rusk_load64(&d->ag[i].q->w_out[g][k], RUSK_RELAXED);
			}
	for (uint32_t i = 0; i < na; i++)
		for (uint32_t g = 0; g < n; g++)
			for (int k = 0; k < D; k++)
				w_in[g][k] += rusk_load64(&d->ag[i].q->w_in[g][k], RUSK_RELAXED);
	for (uint32_t i = 0; i < na; i++) {
		rusk_dquota_agent *qa = d->ag[i].q;
		for (uint32_t g = 0; g < n; g++) {
			held_n[g] += rusk_load64(&qa->held_n[g], RUSK_RELAXED); /* statistic */
			for (int k = 0; k < D; k++) {
				take[g][k] += rusk_load64(&qa->taken[g][k], RUSK_RELAXED); /* E11 */
				uint64_t m = rusk_load64(&qa->max_task[g][k], RUSK_RELAXED);
				maxt[g][k] = m > maxt[g][k] ? m : maxt[g][k];
				/* held back since the last round: relaxed, one writer, a count */
				uint64_t h = rusk_load64(&qa->held[g][k], RUSK_RELAXED);
				uint64_t *last = &q->last_held[i * n + g][k];
				q->delta[i * n + g][k] = h - *last;
				held_sum[g][k] += (double)(h - *last);
				*last = h;
			}
		}
	}
	for (uint32_t g = 0; g < n; g++)
		for (int k = 0; k < D; k++) {
			usage[g].v[k] = take[g][k] > ret[g][k] ? take[g][k] - ret[g][k] : 0;
			/* demand: what it holds and what waits (received, not admitted) */
			dem[g].v[k] = usage[g].v[k] +
			              (w_in[g][k] > w_out[g][k] ? w_in[g][k] - w_out[g][k] : 0);
		}
	(void)rusk_quota_allocate(&q->cap, q->groups, n, dem, alloc); /* checked at create */
	rusk_quota_vec one = {{1, 1, 1}};                             /* rounding */
	/* the previous round's block: only this thread replaces it, so no read lock needed */
	rusk_dquota_pub *old = rcu_dereference(q->pub);
	TSAN_ACQUIRE(old);
	double wsum = 0;
	uint64_t spare[D];
	for (uint32_t g = 0; g < n; g++)
		wsum += q->groups[g].weight;
	for (int k = 0; k < D; k++) {
		uint64_t s = 0;
		for (uint32_t g = 0; g < n; g++)
			s += alloc[g].v[k];
		spare[k] = q->cap.v[k] > s ? q->cap.v[k] - s : 0;
	}
	bool fair = rusk_quota_verify(&q->cap, q->groups, n, dem, alloc, &one, NULL, 0) == RUSK_OK;
	q->round++;
	pub->round = q->round;
	pub->at_ns = now;
	pub->next_ns = now + (q->period_ns ? q->period_ns : 1000000);
	for (uint32_t g = 0; g < n; g++) {
		rusk_dispatch_group *o = &pub->g[g];
		const rusk_dispatch_group *prev = &old->g[g];
		q->fair_failures[g] += !fair;
		o->round = q->round;
		o->round_ns = now;
		o->usage = usage[g];
		o->demand = dem[g];
		o->alloc = alloc[g];
		o->held_back = held_n[g];
		for (int k = 0; k < D; k++) {
			uint64_t extra = (uint64_t)((double)spare[k] * q->groups[g].weight / wsum);
			uint64_t a = alloc[g].v[k] + extra;
			o->allow.v[k] = a < q->groups[g].max.v[k] ? a : q->groups[g].max.v[k];
			o->bound.v[k] = (uint64_t)na * maxt[g][k];
			/* growth past what the last round allowed (a group above a lowered
			 * allowance with tasks it started before is not an overshoot) */
			uint64_t base = prev->allow.v[k] > prev->usage.v[k] ? prev->allow.v[k]
			                                                    : prev->usage.v[k];
			if (q->round > 1 && usage[g].v[k] > base &&
			    usage[g].v[k] - base > q->over[g].v[k])
				q->over[g].v[k] = usage[g].v[k] - base;
			/* the headroom, split by the demand each agent held back */
			uint64_t room =
			        o->allow.v[k] > usage[g].v[k] ? o->allow.v[k] - usage[g].v[k] : 0;
			for (uint32_t i = 0; i < na; i++) {
				double part = held_sum[g][k] > 0 ? (double)q->delta[i * n + g][k] /
				                                           held_sum[g][k]
				                                 : 1.0 / na;
				pub->share[i * n + g][k] = (uint64_t)((double)room * part);
			}
		}
		o->over = q->over[g];
		o->fair_failures = q->fair_failures[g];
		/* reclaim marks: a group below its floor (min and demand) in some dimension may
		 * take tasks of groups above both their allowance and their minimum */
		for (int k = 0; k < D; k++) {
			uint64_t floor_k = q->groups[g].min.v[k] < dem[g].v[k]
			                           ? q->groups[g].min.v[k]
			                           : dem[g].v[k];
			pub->below[g] |= usage[g].v[k] < floor_k;
			pub->from[g] |= usage[g].v[k] > o->allow.v[k] &&
			                usage[g].v[k] > q->groups[g].min.v[k];
		}
	}
	TSAN_RELEASE(pub); /* its contents before its publication */
	rusk_dquota_pub *was = rcu_xchg_pointer(&q->pub, pub);
	TSAN_RELEASE(was); /* this thread's reads of it (prev above) before its reclamation */
	urcu_memb_call_rcu(&was->rcu, rusk_dquota_pub_free_);
	return RUSK_OK;
}

/* ---- the coordinator thread ------------------------------------------------------------- */

static uint64_t rusk_dquota_mono_(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *rusk_dquota_main_(void *arg)
{
	rusk_dispatch *d = arg;
	rusk_dquota *q = d->q;
	rusk_thread_register();
	uint64_t next = rusk_dquota_mono_() + q->period_ns;
	while (rusk_load32(&q->stop, RUSK_ACQUIRE) == 0) {
		uint64_t t = rusk_dquota_mono_();
		if (t < next) { /* sleep in slices: a stop is seen within one */
			uint64_t left = next - t;
			rusk_dispatch_sleep_(left < RUSK_DQUOTA_SLICE_NS ? left
			                                                 : RUSK_DQUOTA_SLICE_NS);
			continue;
		}
		if (rusk_dquota_round_(d, rusk_dispatch_now_(d), true) != RUSK_OK)
			rusk_store32(&d->fail, 1, RUSK_RELAXED);
		next += q->period_ns;
		if (next < t) /* fell behind (a stall): no burst of rounds to catch up */
			next = t + q->period_ns;
	}
	rusk_thread_unregister();
	return NULL;
}

int rusk_dquota_start_(rusk_dispatch *d)
{
	rusk_dquota *q = d->q;
	if (q == NULL || q->period_ns == 0)
		return RUSK_OK;
	if (pthread_create(&q->tid, NULL, rusk_dquota_main_, d) != 0)
		return RUSK_ENOMEM;
	q->running = true;
	return RUSK_OK;
}

void rusk_dquota_stop_(rusk_dispatch *d)
{
	rusk_dquota *q = d->q;
	if (q == NULL || !q->running)
		return;
	rusk_store32(&q->stop, 1, RUSK_RELEASE);
	pthread_join(q->tid, NULL);
	q->running = false;
}

/* ---- the per-task path (agent threads) --------------------------------------------------- */

bool rusk_dquota_admit_(rusk_dagent *a, rusk_dtask *j, uint64_t now)
{
	rusk_dquota *q = a->d->q;
	rusk_dquota_agent *qa = a->q;
	uint32_t g = j->group - 1u, n = q->n;
	uint64_t dem[D];
	rusk_dquota_demand_(j, dem);
	urcu_memb_read_lock();
	rusk_dquota_pub *p = rcu_dereference(q->pub); /* E11 */
	TSAN_ACQUIRE(p);
	if (p->round != qa->round) {
		qa->round = p->round;
		qa->next_ns = p->next_ns;
		memcpy(qa->share, &p->share[(size_t)a->index * n], n * sizeof(uint64_t[D]));
		memset(qa->spent, 0, n * sizeof(uint64_t[D]));
		memcpy(qa->from, p->from, n);
		memcpy(qa->below, p->below, n);
		qa->reclaim_left = RUSK_DQUOTA_RECLAIM;
	}
	/* E13: the round being replaced admits nothing; this section ends after the
	 * admission's "taken" stores, so the coordinator's grace period covers them. */
	bool frozen = rusk_load64(&q->frozen, RUSK_ACQUIRE) == p->round + 1;
	bool ok = !frozen;
	for (int k = 0; k < D; k++)
		ok &= dem[k] == 0 || qa->spent[g][k] < qa->share[g][k];
	if (ok) {
		for (int k = 0; k < D; k++) {
			qa->spent[g][k] += dem[k];
			/* E11: one writer; ordered before RUNNING's release store */
			rusk_store64(&qa->taken[g][k], qa->taken[g][k] + dem[k], RUSK_RELAXED);
			if (dem[k] > qa->max_task[g][k])
				rusk_store64(&qa->max_task[g][k], dem[k], RUSK_RELAXED);
		}
		TSAN_RELEASE(p);
		urcu_memb_read_unlock();
		j->q_in = 1;
		j->q_agent = a->index;
		j->q_adm_round = (uint32_t)qa->round; /* low bits: rusk_dtask */
		rusk_dquota_unwait_(a->d, j);
		return true;
	}
	TSAN_RELEASE(p); /* our reads of it before its reclamation */
	urcu_memb_read_unlock();
	if (frozen) { /* a pause of the round being made: not demand held back */
		j->ready_ns = now + 100000;
		(void)rusk_waitq_push(&a->wait, j);
		a->held++;
		return false;
	}
	if (j->q_held_round != (uint32_t)(qa->round + 1)) { /* demand counts once per round */
		j->q_held_round = (uint32_t)(qa->round + 1);
		for (int k = 0; k < D; k++)
			rusk_store64(&qa->held[g][k], qa->held[g][k] + dem[k], RUSK_RELAXED);
		rusk_store64(&qa->held_n[g], qa->held_n[g] + 1, RUSK_RELAXED);
	}
	/* Until the next round (not before 100 us: a late coordinator is not polled hot). */
	uint64_t soon = now + 100000;
	j->ready_ns = qa->next_ns > soon ? qa->next_ns : soon;
	(void)rusk_waitq_push(&a->wait, j); /* room: it was just taken from a's queues */
	a->held++;
	return false;
}

void rusk_dquota_return_(rusk_dispatch *d, rusk_dtask *j)
{
	if (j->q_in == 0)
		return;
	j->q_in = 0;
	uint64_t dem[D];
	rusk_dquota_demand_(j, dem);
	rusk_dquota_agent *qa = d->ag[j->q_agent % d->p.agents].q;
	for (int k = 0; k < D; k++)
		if (dem[k] != 0) /* E11: after the tenure's CAS; pairs with the round's acquire */
			rusk_faa64(&qa->returned[j->group - 1u][k], dem[k], RUSK_RELEASE);
}

void rusk_dquota_unadmit_(rusk_dagent *a, rusk_dtask *j)
{
	if (j->q_in == 0)
		return;
	uint64_t dem[D];
	rusk_dquota_demand_(j, dem);
	uint32_t g = j->group - 1u;
	if (j->q_adm_round == (uint32_t)a->q->round) /* admitted this round: its share back */
		for (int k = 0; k < D; k++)
			a->q->spent[g][k] =
			        a->q->spent[g][k] > dem[k] ? a->q->spent[g][k] - dem[k] : 0;
	rusk_dquota_return_(a->d, j);
	rusk_dquota_wait_(a->d, j); /* it waits again */
}

static void rusk_dquota_wait_add_(rusk_dispatch *d, rusk_dtask *j, bool in)
{
	uint64_t dem[D];
	rusk_dquota_demand_(j, dem);
	rusk_dquota_agent *qa = d->ag[rusk_load32(&j->agent, RUSK_RELAXED) % d->p.agents].q;
	uint64_t(*w)[D] = in ? qa->w_in : qa->w_out;
	for (int k = 0; k < D; k++)
		if (dem[k] != 0) /* relaxed: a demand estimate (see the round) */
			rusk_faa64(&w[j->group - 1u][k], dem[k], RUSK_RELAXED);
}

void rusk_dquota_wait_(rusk_dispatch *d, rusk_dtask *j)
{
	if (j->group == 0 || j->q_wait != 0)
		return;
	j->q_wait = 1;
	rusk_dquota_wait_add_(d, j, true);
}

void rusk_dquota_unwait_(rusk_dispatch *d, rusk_dtask *j)
{
	if (j->q_wait == 0)
		return;
	j->q_wait = 0;
	rusk_dquota_wait_add_(d, j, false);
}

/* ---- the public API ------------------------------------------------------------------------ */

RUSK_EXPORT int rusk_dispatch_quota_round(rusk_dispatch *d)
{
	if (d == NULL || d->q == NULL)
		return RUSK_EINVAL;
	return rusk_dquota_round_(d, rusk_dispatch_now_(d), true);
}

RUSK_EXPORT int rusk_dispatch_group_get(const rusk_dispatch *d, uint32_t k,
                                        rusk_dispatch_group *out)
{
	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (d == NULL || out == NULL || d->q == NULL || k == 0 || k > d->q->n)
		return RUSK_EINVAL;
	urcu_memb_read_lock();
	rusk_dquota_pub *p = rcu_dereference(d->q->pub);
	TSAN_ACQUIRE(p);
	*out = p->g[k - 1];
	TSAN_RELEASE(p);
	urcu_memb_read_unlock();
	return RUSK_OK;
}

/* ---- the step API (step.h) ---------------------------------------------------------------- */

bool rusk_dispatch_quota_admit_(rusk_dagent *a, rusk_dtask *j, uint64_t now)
{
	if (j->group == 0 || j->placed != 0 || j->q_in != 0)
		return true;
	return rusk_dquota_admit_(a, j, now);
}

void rusk_dispatch_quota_unadmit_(rusk_dagent *a, rusk_dtask *j)
{
	if (j->q_in != 0 && j->placed == 0)
		rusk_dquota_unadmit_(a, j);
}

int rusk_dispatch_quota_tick_(rusk_dispatch *d, uint64_t now)
{
	/* rusk sim steps its agents and the rounds on one thread: nothing to freeze */
	return d->q != NULL ? rusk_dquota_round_(d, now, false) : RUSK_OK;
}

uint64_t rusk_dispatch_quota_period_(const rusk_dispatch *d)
{
	return d->q != NULL ? d->q->period_ns : 0;
}

const uint8_t *rusk_dquota_reclaim_from_(rusk_dagent *a, const rusk_dtask *j, uint32_t *budget)
{
	rusk_dquota_agent *qa = a->q;
	if (qa == NULL || j->group == 0 || qa->round == UINT64_MAX || !qa->below[j->group - 1u] ||
	    qa->reclaim_left == 0)
		return NULL;
	*budget = qa->reclaim_left;
	return qa->from;
}

void rusk_dquota_reclaimed_(rusk_dagent *a, uint32_t freed)
{
	/* RUs freed, each at least one victim's worth: the budget never goes below the
	 * victims actually taken */
	rusk_dquota_agent *qa = a->q;
	qa->reclaim_left = freed >= qa->reclaim_left ? 0 : qa->reclaim_left - freed;
}
