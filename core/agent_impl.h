/* SPDX-License-Identifier: MIT */
/*
 * An agent's layout and what its three files share (not installed): agent.c (lifecycle,
 * the commit/retry loop, releases, task checks), choose.c (the strategies: where a decision
 * samples and how it ranks candidates) and central.c (the central and global-lock
 * baselines). One thread uses an agent at a time.
 */
#ifndef RUSK_CORE_AGENT_IMPL_H
#define RUSK_CORE_AGENT_IMPL_H

#include <math.h>

#include "internal.h"
#include "quality.h"
#include "rng.h"
#include "view.h"

/* A candidate RU, its value for the task and its tie-break key. */
typedef struct cand {
	uint32_t ru;
	double q;
	uint64_t key; /* tie-break */
} cand;

struct rusk_agent {
	rusk_cluster *c;
	rusk_view *v;
	rusk_agent_params p;
	rusk_rng rng;
	double ema_ns;
	bool ema_set;
	uint32_t *order; /* [P] */
	cand *cands;     /* candidate buffer */
	size_t cap;
	cand *group; /* best-in-range scratch */
	size_t group_cap;
	uint64_t *seen; /* a bit per RU, all clear between decisions (choose.c, dedup_cands) */
	/* Machines whose memory or GPUs a vector commit found short during this place()
	 * call: the retries skip them (choose_vec). */
	uint32_t vskip[8];
	uint32_t n_vskip;
	/* This decision's work beyond its drawn candidates (choose.c, rusk_choose_): RUs
	 * examined that pl->samples does not count, and partitions scanned. */
	uint32_t wk_examined, wk_parts;
};

/*
 * Per-decision context: the task, how to value an RU for it, and where its RUs may go
 * beside those it holds (rusk/sched.h "Held RUs": t->held, and the leases this place()
 * call won before, won[0..n_won)). Both limits are off for a task that holds nothing,
 * which then decides exactly as before they existed.
 */
typedef struct dctx {
	const rusk_task *t;
	rusk_qtask qt;
	bool interf;
	bool pack;     /* RUSK_QUALITY_PACKING */
	bool anchored; /* MACHINE or RACK with RUs held: only RUs of [alo, ahi), the anchor
	                * group's range (choose.c choose_anchored, central.c) */
	bool excl;     /* SPREAD with RUs held: not on their machines (rusk_dctx_excluded_) */
	uint32_t alo, ahi;
	const rusk_lease *won; /* this place() call's earlier wins (SPREAD excludes them) */
	uint32_t n_won;
} dctx;

/* Whether ru lies on one of the task's preferred machines. */
static inline bool rusk_is_preferred_(const rusk_cluster *c, const rusk_task *t, uint32_t ru)
{
	if (t->n_preferred == 0)
		return false;
	uint32_t m = c->ru_machine[ru];
	for (uint32_t i = 0; i < t->n_preferred; i++)
		if (t->preferred[i] == m)
			return true;
	return false;
}

/* The quality a placement reports for ru: Q, or the slot score in [0, max_score / 1000]. */
static inline double rusk_reported_quality_(const rusk_cluster *c, const dctx *d, uint32_t ru)
{
	return d->interf ? rusk_qtask_eval(c, &d->qt, ru) : c->ru_score[ru] / 1000.0;
}

/* Mean value of x[0..n); -inf when empty (never the best group). */
static inline double rusk_mean_q_(const cand *x, uint32_t n)
{
	double s = 0;
	for (uint32_t i = 0; i < n; i++)
		s += x[i].q;
	return n ? s / n : -INFINITY;
}

/* The designs whose every change of the shared state goes under the cluster's one mutex. */
static inline bool rusk_agent_serialised_(const rusk_agent *a)
{
	return a->p.global_lock || a->p.strategy == RUSK_STRATEGY_CENTRAL;
}

/* --- choose.c: the strategies and candidate ranking --- */

/*
 * One decision on the agent's view for d->t with the strategy in force: fills rus with the
 * chosen RUs (sorted by RU) and pl's decision fields (strategy, sample size, samples,
 * staleness, quality, preferred). Only RUs that d's placement limits allow (dctx: beside
 * held RUs). Returns the number of RUs chosen (> 0), RUSK_EAGAIN when the view holds
 * nothing suitable, or RUSK_ENOMEM. Never called for central.
 */
int rusk_choose_(rusk_agent *a, const dctx *d, uint32_t *rus, rusk_placement *pl, uint64_t now);

/* Grows *buf to hold n candidates (doubling); false, *buf unchanged, when out of memory. */
bool rusk_cands_reserve_(cand **buf, size_t *cap, size_t n);

/* Inserts x into best[0..*n), kept in decreasing order (value, then key), at most m long. */
void rusk_top_insert_(cand *best, uint32_t *n, uint32_t m, const cand *x);

/*
 * Adds the free RUs of [ru_lo, ru_hi) (inside one partition) in `bits` (a view's or, with
 * atomic, the master's bitmap) to the top-m list out[0..*n). Returns RUs examined.
 */
uint32_t rusk_scan_range_(const rusk_cluster *c, const dctx *d, const uint64_t *bits, bool atomic,
                          uint32_t ru_lo, uint32_t ru_hi, uint32_t m, cand *out, uint32_t *n);

/* Id (*gid) and RU range [*lo, *hi) of the machine or rack (place) that holds ru. */
void rusk_group_range_(const rusk_cluster *c, uint8_t place, uint32_t ru, uint32_t *gid,
                       uint32_t *lo, uint32_t *hi);

/* Sorts x[0..n) ascending. */
void rusk_sort_rus_(uint32_t *x, size_t n);

/*
 * Sets d's placement limits for d->t beside t->held[0..n_held) and won[0..n_won): the
 * anchor group (MACHINE, RACK: that of held[0], else of won[0]) or the machines excluded
 * (SPREAD). The held RUs were range-checked (rusk_task_check).
 */
static inline void rusk_dctx_beside_(dctx *d, const rusk_cluster *c, const rusk_lease *won,
                                     uint32_t n_won)
{
	const rusk_task *t = d->t;
	d->won = won;
	d->n_won = n_won;
	d->anchored = false;
	bool any = (t->n_held | n_won) != 0;
	d->excl = any && t->placement == RUSK_PLACE_SPREAD;
	if (!any || (t->placement != RUSK_PLACE_MACHINE && t->placement != RUSK_PLACE_RACK))
		return;
	uint32_t anchor = t->n_held > 0 ? t->held[0].ru : won[0].ru, gid;
	rusk_group_range_(c, t->placement, anchor, &gid, &d->alo, &d->ahi);
	d->anchored = true;
}

/* Whether machine mi holds one of the RUs a SPREAD task's remainder must avoid. */
static inline bool rusk_dctx_excluded_(const rusk_cluster *c, const dctx *d, uint32_t mi)
{
	for (uint32_t i = 0; i < d->t->n_held; i++)
		if (c->ru_machine[d->t->held[i].ru] == mi)
			return true;
	for (uint32_t i = 0; i < d->n_won; i++)
		if (c->ru_machine[d->won[i].ru] == mi)
			return true;
	return false;
}

/* --- agent.c: the commit step, shared with the central baseline --- */

/* Commits rus[0..n) for t (under the cluster's mutex for global-lock), counts the attempt,
 * marks what it took or lost in the view; the RUs won are held in leases[]. Returns them. */
uint32_t rusk_agent_commit_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                            rusk_lease *leases, rusk_placement *pl);

/* The commit itself, without a lock or the attempt count (rusk_agent_commit_). */
uint32_t rusk_commit_unlocked_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                               rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof);

/* place()'s end: hands out the n held leases when rc is RUSK_OK (clears C), else gives
 * them all back. Returns rc. */
int rusk_agent_finish_(rusk_cluster *c, rusk_lease *leases, uint32_t n, int rc);

/* --- central.c: the baselines --- */

/* rusk_agent_place for the central strategy: lock, scan, rank, commit, unlock. */
int rusk_place_central_(rusk_agent *a, const dctx *d, rusk_lease *leases, rusk_placement *pl);

/* rusk_commit_unlocked_ under the cluster's one mutex: the global-lock baseline's commit. */
uint32_t rusk_commit_global_lock_(rusk_agent *a, const rusk_task *t, const uint32_t *rus,
                                  uint32_t n, rusk_lease *leases, rusk_placement *pl,
                                  const rusk_profile *prof);

/* rusk_ru_release_many under the cluster's one mutex (both baselines' releases). */
int rusk_release_serialised_(rusk_cluster *c, uint64_t task, const rusk_lease *leases, size_t n,
                             size_t *n_rejected);

#endif /* RUSK_CORE_AGENT_IMPL_H */
