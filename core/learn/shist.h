/* SPDX-License-Identifier: MIT */
/*
 * Streaming histograms, internal entry points (the public ones are rusk_dist_* in
 * rusk/predict.h; the implementation is core/learn/shist.c).
 */
#ifndef RUSK_CORE_SHIST_H
#define RUSK_CORE_SHIST_H

#include <stdbool.h>
#include <stdint.h>

#include <rusk/predict.h>

/*
 * rusk_dist_add_range_: rusk_dist_add, also telling which bins it changed: on RUSK_OK,
 * every bin index outside [*lo, *hi) holds the same bin as before the call (or lies at or
 * past d->n_bins); count, min, max and n_bins may change whatever the range. A caller
 * that keeps a copy of d one update behind rewrites only those bins (core/learn/predict.c).
 * On RUSK_EINVAL d is unchanged and the range is undefined.
 */
int rusk_dist_add_range_(rusk_dist *d, double x, uint32_t *lo, uint32_t *hi);

/* One insert as an edit of the bin list: the new list in terms of the old one. */
typedef struct rusk_dist_edit_ {
	uint64_t count; /* the new count, min, max and n_bins */
	float min, max;
	uint32_t n_bins;
	uint32_t lo, hi;               /* new bins outside [lo, hi) are the old ones */
	uint32_t mv_dst, mv_src, mv_n; /* new[mv_dst + q] = old[mv_src + q] for q < mv_n */
	uint32_t p1, p2;               /* new[p1] = b1 and new[p2] = b2 (p2 UINT32_MAX: none) */
	rusk_dist_bin b1, b2;
} rusk_dist_edit_;

/*
 * rusk_dist_plan_: what rusk_dist_add(d, v) would do, as an edit, d unchanged (v >= 0,
 * finite). False, e undefined, when the add would first halve the counts (after 2^31
 * points): then call rusk_dist_add_range_. rusk_dist_add is this edit applied in place,
 * so the two never disagree. Lets the predictor write a new version of a histogram into
 * another copy without copying the old one first.
 */
bool rusk_dist_plan_(const rusk_dist *d, float v, rusk_dist_edit_ *e);

/* rusk_dist_edit_bin_: bin t (< e->n_bins) of the list after e, the list before being old. */
static inline rusk_dist_bin rusk_dist_edit_bin_(const rusk_dist_edit_ *e, const rusk_dist_bin *old,
                                                uint32_t t)
{
	if (t == e->p1)
		return e->b1;
	if (t == e->p2)
		return e->b2;
	if (t - e->mv_dst < e->mv_n) /* unsigned: also false for t < mv_dst */
		return old[t - e->mv_dst + e->mv_src];
	return old[t];
}

#endif
