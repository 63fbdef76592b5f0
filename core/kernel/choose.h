/* SPDX-License-Identifier: MIT */
/*
 * The strategies and candidate ranking (choose.c), and where a task's RUs may go beside
 * those it holds. Not installed.
 */
#ifndef RUSK_KERNEL_CHOOSE_H
#define RUSK_KERNEL_CHOOSE_H

#include "kernel/decision.h"

/*
 * One decision on the agent's view for d->t with the strategy in force: fills rus with the
 * chosen RUs (sorted by RU) and pl's decision fields (strategy, sample size, samples,
 * staleness, quality, preferred). Only RUs that d's placement limits allow (rusk_dctx: beside
 * held RUs). Returns the number of RUs chosen (> 0), RUSK_EAGAIN when the view holds
 * nothing suitable, or RUSK_ENOMEM. Never called for central.
 */
int rusk_choose_(rusk_agent *a, const rusk_dctx *d, uint32_t *rus, rusk_placement *pl,
                 uint64_t now);

/* A vector task's commit on machine m was refused for memory or GPUs (decision.h,
 * mshort): noted; rusk_mshort_apply_ at the start of a place() lists in vskip the noted
 * machines still short for task t. The agent's thread. */
void rusk_mshort_note_(rusk_agent *a, uint32_t m, const rusk_task *t);
void rusk_mshort_apply_(rusk_agent *a, const rusk_task *t);

/* Grows *buf to hold n candidates (doubling); false, *buf unchanged, when out of memory. */
bool rusk_cands_reserve_(rusk_cand **buf, size_t *cap, size_t n);

/* Inserts x into best[0..*n), kept in decreasing order (value, then key), at most m long. */
void rusk_top_insert_(rusk_cand *best, uint32_t *n, uint32_t m, const rusk_cand *x);

/*
 * Adds the free RUs of [ru_lo, ru_hi) (inside one partition) in `bits` (a view's or, with
 * atomic, the master's bitmap) to the top-m list out[0..*n). Returns RUs examined.
 */
uint32_t rusk_scan_range_(const rusk_cluster *c, const rusk_dctx *d, const uint64_t *bits,
                          bool atomic, uint32_t ru_lo, uint32_t ru_hi, uint32_t m, rusk_cand *out,
                          uint32_t *n);

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
static inline void rusk_dctx_beside_(rusk_dctx *d, const rusk_cluster *c, const rusk_lease *won,
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
static inline bool rusk_dctx_excluded_(const rusk_cluster *c, const rusk_dctx *d, uint32_t mi)
{
	for (uint32_t i = 0; i < d->t->n_held; i++)
		if (c->ru_machine[d->t->held[i].ru] == mi)
			return true;
	for (uint32_t i = 0; i < d->n_won; i++)
		if (c->ru_machine[d->won[i].ru] == mi)
			return true;
	return false;
}

#endif /* RUSK_KERNEL_CHOOSE_H */
