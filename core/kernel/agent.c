/* SPDX-License-Identifier: MIT */
/*
 * Scheduling agents: their lifecycle, the commit/retry loop of rusk_agent_place, releases
 * (ParSync §5.2; Tarcil §3.3). Where a decision samples and how it
 * ranks candidates is choose.c; the central and global-lock baselines are central.c.
 *
 * An agent owns a local view of the cluster (view.c) that its policy syncs, and decides on
 * it optimistically: choose (choose.c), then commit to the master array by compare-and-swap
 * (ru.c). A commit that loses marks the RU taken in the view (ParSync §5.2) and the agent
 * samples again, up to max_retries times; then it returns RUSK_EAGAIN holding nothing and
 * the caller re-queues the task with its original submission time. No task is lost.
 *
 * Invariants:
 *  - An RU is held (won but not yet handed out) only inside rusk_agent_place: place() ends
 *    in rusk_agent_finish_, which publishes every held lease on success and gives every one
 *    back otherwise; a gang task is placed whole or not at all.
 *  - Every RU a commit took or lost is marked taken in the view, so a retry never draws it
 *    again from stale data.
 *  - Leases on machines that failed or drained while place() was deciding are never handed
 *    out (keep_up): the failure callback can then only name leases place() returned.
 *  - A task is checked once, on entry, by one pass of compares (check_task); what is wrong
 *    and which field is worked out only on failure (task.c). A task with held RUs
 *    leaves the fast path by one compare (n_held) and is checked in full by task.c.
 *  - Placement kinds hold in every commit mode (issue 26): an incremental task's retries
 *    within place() look for what it still lacks only beside what it holds and won so far
 *    (rusk_dctx_beside_: its machine or rack, or other machines for spread), as a later
 *    call listing them in rusk_task.held does. A task is never split by a retry.
 *  - An agent is used by one thread at a time; the hot path takes no lock unless the agent
 *    is one of the serialised baselines (central.c).
 */
#include <alloca.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic.h"
#include "kernel/central.h"
#include "kernel/choose.h"
#include "kernel/commit.h"
#include "kernel/decision.h"
#include "kernel/remote.h"
#include "kernel/ru_impl.h"
#include "kernel/task.h"
#include "kernel/vec_impl.h"

RUSK_EXPORT void rusk_agent_params_init(rusk_agent_params *ap, const rusk_sync_params *p,
                                        uint32_t index)
{
	if (ap == NULL)
		return;
	memset(ap, 0, sizeof *ap);
	ap->index = index;
	if (p != NULL)
		ap->sync = *p;
	ap->strategy = RUSK_STRATEGY_LATENCY;
	ap->quality = RUSK_QUALITY_SCORE;
	ap->sample = 0;
	ap->eps = 0.05;
	ap->target = 0.8;
	ap->r_max = 32;
	ap->max_retries = 8;
	ap->tau_ns = 1000000000ull;
	ap->ema_alpha = 0.1;
	ap->seed = 1;
	ap->latency_preferred = true;
}

static const char *strategy_names[] = {"latency", "quality", "adaptive", "random", "central"};

RUSK_EXPORT int rusk_strategy_parse(const char *name, rusk_strategy *out)
{
	for (int i = 0; name != NULL && out != NULL && i < 5; i++)
		if (strcmp(name, strategy_names[i]) == 0) {
			*out = (rusk_strategy)i;
			return RUSK_OK;
		}
	return RUSK_EINVAL;
}

RUSK_EXPORT const char *rusk_strategy_name(rusk_strategy s)
{
	return (unsigned)s < 5 ? strategy_names[s] : "unknown";
}

RUSK_EXPORT int rusk_agent_create(rusk_cluster *c, const rusk_agent_params *ap, rusk_agent **out,
                                  char *err, size_t errlen)
{
	if (c == NULL || ap == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "cluster, params and out must not be NULL");
	if ((unsigned)ap->strategy > RUSK_STRATEGY_CENTRAL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "unknown strategy %d",
		                 (int)ap->strategy);
	if ((unsigned)ap->quality > RUSK_QUALITY_FGD)
		return rusk_errf(err, errlen, RUSK_EINVAL, "unknown quality model %d",
		                 (int)ap->quality);
	if (!(ap->eps > 0 && ap->eps < 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "eps %g not in (0, 1)", ap->eps);
	if (!(ap->target > 0 && ap->target < 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "target %g not in (0, 1)", ap->target);
	if (ap->r_max == 0 || ap->r_max > 4096)
		return rusk_errf(err, errlen, RUSK_EINVAL, "r_max %u not in 1..4096", ap->r_max);
	if (ap->sample > 4096)
		return rusk_errf(err, errlen, RUSK_EINVAL, "sample %u not in 0..4096", ap->sample);
	if (!(ap->ema_alpha > 0 && ap->ema_alpha <= 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "ema_alpha %g not in (0, 1]",
		                 ap->ema_alpha);
	rusk_agent *a = calloc(1, sizeof *a);
	if (a == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	a->c = c;
	a->p = *ap;
	rusk_rng_seed(&a->rng, ap->seed, 0x6167656e74ull + ap->index);
	a->order = calloc(c->n_parts, sizeof *a->order);
	int rc = rusk_view_create(c, &a->v);
	if (rc == RUSK_OK)
		rusk_view_seed_(a->v, ap->seed, ap->index);
	if (rc == RUSK_OK)
		rc = rusk_view_set_policy(a->v, &ap->sync, ap->index, err, errlen);
	if (rc != RUSK_OK || a->order == NULL) {
		rusk_agent_destroy(a);
		return rc != RUSK_OK ? rc : rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	}
	*out = a;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_agent_destroy(rusk_agent *a)
{
	if (a == NULL)
		return;
	rusk_view_destroy(a->v);
	free(a->order);
	free(a->cands);
	free(a->group);
	free(a->vset);
	free(a->vval);
	free(a->vlist);
	free(a->seen);
	free(a);
}

RUSK_EXPORT rusk_view *rusk_agent_view(rusk_agent *a)
{
	return a != NULL ? a->v : NULL;
}

static void dctx_init(rusk_dctx *d, const rusk_agent *a, const rusk_task *t)
{
	d->t = t;
	d->interf = a->p.quality == RUSK_QUALITY_INTERFERENCE;
	d->pack = a->p.quality == RUSK_QUALITY_PACKING;
	d->fgd = a->p.quality == RUSK_QUALITY_FGD;
	d->anchored = d->excl = false;
	d->won = NULL;
	d->n_won = 0;
	if (d->interf)
		rusk_qtask_init(&d->qt, &t->profile);
	if (RUSK_UNLIKELY(t->n_held > 0))
		rusk_dctx_beside_(d, a->c, NULL, 0);
}

/* The hot path's check: one pass of compares, the explanation only on failure. A vector
 * task's own checks (rusk_vec_check_: its demand well formed, some machine shape holds it)
 * are called directly, not through rusk_task_problem_'s chain. */
static inline int check_task(const rusk_cluster *c, const rusk_task *t, const char **field)
{
	if (RUSK_LIKELY(t != NULL && t->id - 1 < RUSK_TASK_ID_MAX &&
	                t->placement <= RUSK_PLACE_SPREAD && t->rus != 0 &&
	                (t->n_preferred == 0 || t->preferred != NULL) &&
	                rusk_profile_ok_(&t->profile) && t->n_held == 0)) {
		if (!rusk_vec_any(&t->vec)) {
			if (RUSK_LIKELY(t->rus - 1 < c->fit[t->placement]))
				return RUSK_OK;
		} else if (rusk_vec_check_(c, t, field, NULL, 0) == RUSK_OK) {
			return RUSK_OK;
		}
	}
	return rusk_task_problem_(c, t, field, NULL, 0);
}

RUSK_EXPORT int rusk_agent_choose(rusk_agent *a, const rusk_task *t, uint32_t *rus,
                                  rusk_placement *pl)
{
	if (a == NULL || rus == NULL || pl == NULL)
		return RUSK_EINVAL;
	memset(pl, 0, sizeof *pl);
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	int bad = check_task(a->c, t, &pl->invalid);
	if (RUSK_UNLIKELY(bad != RUSK_OK))
		return bad;
	rusk_dctx d;
	dctx_init(&d, a, t);
	/* central chooses under its lock inside rusk_agent_place only */
	int n = a->p.strategy == RUSK_STRATEGY_CENTRAL
	                ? RUSK_EINVAL
	                : rusk_choose_(a, &d, rus, pl, rusk_now_(a->c));
	if (n < 0)
		return n;
	pl->placed = 0;
	return (uint32_t)n == t->rus ? RUSK_OK : RUSK_EAGAIN;
}

RUSK_EXPORT int rusk_agent_release(const rusk_agent *a, uint64_t task, const rusk_lease *leases,
                                   size_t n, size_t *n_rejected)
{
	if (a == NULL)
		return RUSK_EINVAL;
	if (RUSK_UNLIKELY(a->c->remote != NULL)) /* locally, then remotely (remote.h) */
		return rusk_remote_release_(a->c, task, leases, n, n_rejected);
	if (RUSK_UNLIKELY(rusk_agent_serialised_(a)))
		return rusk_release_serialised_(a->c, task, leases, n, n_rejected);
	return rusk_ru_release_many(a->c, task, leases, n, n_rejected);
}

/* place()'s end (rusk_agent_finish_); leases given back locally go back to a remote master
 * state too (remote.h). */
static int finish(rusk_agent *a, const rusk_task *t, rusk_lease *leases, uint32_t n, int rc)
{
	rc = rusk_agent_finish_(a->c, leases, n, rc);
	if (RUSK_UNLIKELY(a->c->remote != NULL) && rc != RUSK_OK && n > 0)
		rusk_remote_unheld_(a->c, t->id, leases, n);
	return rc;
}

RUSK_EXPORT int rusk_agent_place(rusk_agent *a, const rusk_task *t, rusk_lease *leases,
                                 rusk_placement *pl)
{
	if (a == NULL || leases == NULL || pl == NULL)
		return RUSK_EINVAL;
	memset(pl, 0, sizeof *pl);
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	int bad = check_task(a->c, t, &pl->invalid);
	if (RUSK_UNLIKELY(bad != RUSK_OK))
		return bad;
	rusk_dctx d;
	dctx_init(&d, a, t);
	a->n_vskip = 0;
	if (RUSK_UNLIKELY(a->n_mshort != 0) && rusk_vec_any(&t->vec))
		rusk_mshort_apply_(a, t);
	if (RUSK_UNLIKELY(d.fgd)) /* the mix learns from each task placed, once */
		rusk_fgd_observe(&a->mix, t);
	if (a->p.strategy == RUSK_STRATEGY_CENTRAL)
		return rusk_place_central_(a, &d, leases, pl);
	uint32_t *rus = alloca(sizeof *rus * t->rus);
	uint32_t placed = 0;
	double qsum = 0;
	uint32_t pref = 0;
	rusk_task rest;
	uint64_t t0 = rusk_now_(a->c), t1 = t0;
	for (uint32_t attempt = 0; attempt <= a->p.max_retries && placed < t->rus; attempt++) {
		/* Incremental tasks look only for what they still lack, and only where the
		 * placement allows beside what they hold and won so far (rusk/sched.h "Held
		 * RUs"): one machine or rack, or other machines for spread. */
		if (placed > 0) {
			rest = *t;
			rest.rus = t->rus - placed;
			d.t = &rest;
			rusk_dctx_beside_(&d, a->c, leases, placed);
		}
		/* The first decision fills pl itself (sample size, strategy, staleness are
		 * the first attempt's); a retry's only adds its samples. */
		rusk_placement one;
		rusk_placement *dst = pl;
		if (attempt > 0) {
			one = (rusk_placement){0};
			dst = &one;
		}
		int n = rusk_choose_(a, &d, rus, dst, t0);
		t1 = rusk_now_(a->c);
		pl->sample_ns += t1 - t0;
		if (attempt > 0) {
			pl->samples += one.samples;
			pl->examined += one.examined;
			pl->partitions += one.partitions;
		}
		if (n == RUSK_ENOMEM)
			return finish(a, t, leases, placed, RUSK_ENOMEM);
		if (n <= 0)
			break; /* the view has nothing suitable: give the task back */
		uint32_t won = rusk_agent_commit_(a, d.t, rus, (uint32_t)n, leases + placed, pl);
		t0 = rusk_now_(a->c); /* the next attempt starts here */
		pl->commit_ns += t0 - t1;
		t1 = t0;
		/* Packing and FGD judge a vector task's machine as a whole: its decision's
		 * value. */
		bool whole = (d.pack || d.fgd) && rusk_vec_any(&t->vec);
		for (uint32_t i = 0; i < won; i++) {
			qsum += whole ? dst->quality
			              : rusk_reported_quality_(a->c, &d, leases[placed + i].ru);
			pref += rusk_is_preferred_(a->c, t, leases[placed + i].ru);
		}
		placed += won;
		if (t->gang && won == 0)
			continue;
	}
	pl->end_ns = t1;
	pl->placed = placed;
	pl->quality = placed ? qsum / placed : 0;
	pl->preferred = pref;
	if (placed == 0 || (t->gang && placed < t->rus)) {
		pl->placed = 0;
		return finish(a, t, leases, placed, RUSK_EAGAIN);
	}
	return finish(a, t, leases, placed, RUSK_OK);
}

/* ---- batches over a remote master state (remote.h "Batches") ---------------------------- */

int rusk_agent_decide_(rusk_agent *a, const rusk_task *t, uint32_t *rus, rusk_placement *pl)
{
	memset(pl, 0, sizeof *pl);
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	int bad = check_task(a->c, t, &pl->invalid);
	if (RUSK_UNLIKELY(bad != RUSK_OK))
		return bad;
	if (a->p.strategy == RUSK_STRATEGY_CENTRAL)
		return RUSK_EINVAL; /* refused with a remote (the tool says so first) */
	rusk_dctx d;
	dctx_init(&d, a, t);
	a->n_vskip = 0;
	if (RUSK_UNLIKELY(a->n_mshort != 0) && rusk_vec_any(&t->vec))
		rusk_mshort_apply_(a, t);
	if (RUSK_UNLIKELY(d.fgd))
		rusk_fgd_observe(&a->mix, t);
	uint64_t t0 = rusk_now_(a->c);
	int n = rusk_choose_(a, &d, rus, pl, t0);
	pl->end_ns = rusk_now_(a->c);
	pl->sample_ns += pl->end_ns - t0;
	if (n < 0)
		return n == RUSK_ENOMEM ? RUSK_ENOMEM : 0;
	if (n == 0 || (t->gang && (uint32_t)n < t->rus))
		return 0; /* as place() would end: nothing suitable (a gang: not all of it) */
	/* Reserved in the view: the batch's next decisions do not draw them again. */
	for (int i = 0; i < n; i++)
		rusk_view_mark_taken_(a->v, rus[i]);
	return n;
}

void rusk_agent_place_many_(rusk_agent *a, rusk_remote_item *items, size_t n)
{
	uint64_t t0 = rusk_now_(a->c);
	for (size_t i = 0; i < n; i++)
		items[i].pl->attempts++; /* rusk_agent_commit_'s count: one commit each */
	rusk_remote_commit_many_(a, items, n);
	uint64_t t1 = rusk_now_(a->c);
	for (size_t i = 0; i < n; i++) {
		rusk_remote_item *it = &items[i];
		const rusk_task *t = it->t;
		rusk_placement *pl = it->pl;
		rusk_dctx d;
		dctx_init(&d, a, t);
		double qsum = 0;
		uint32_t pref = 0, placed = it->won;
		for (uint32_t k = 0; k < placed; k++) {
			qsum += rusk_reported_quality_(a->c, &d, it->leases[k].ru);
			pref += rusk_is_preferred_(a->c, t, it->leases[k].ru);
		}
		pl->commit_ns += t1 - t0; /* the batch's round trips: each task waited for them */
		pl->end_ns = t1;
		pl->placed = placed;
		pl->quality = placed ? qsum / placed : 0;
		pl->preferred = pref;
		if (placed == 0 || (t->gang && placed < t->rus)) {
			pl->placed = 0;
			it->rc = finish(a, t, it->leases, placed, RUSK_EAGAIN);
		} else {
			it->rc = finish(a, t, it->leases, placed, RUSK_OK);
		}
	}
}
