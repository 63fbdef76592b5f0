/* SPDX-License-Identifier: MIT */
/*
 * Quota groups' allocation math (rusk/quota.h): weighted Dominant Resource Fairness by
 * progressive filling (Ghodsi et al., NSDI'11, §4: "progressive filling"; ParSync §2 and
 * §7 for the groups, their minimums, maximums and weights).
 *
 * Algorithm. Each group's allowance is a function of one fill level t (rusk/quota.h):
 *   a_g(t)[d] = clamp(w_g * u_g[d] * t, floor_g[d], cap_g[d])
 * piecewise linear in t with breakpoints floor/(w u) and cap/(w u). The fill is a sweep
 * over those breakpoints: within a segment the sum of every dimension is linear in t, so
 * the level where a dimension becomes full is solved exactly (no bisection); at that level
 * every group still growing in a full dimension is frozen (its whole vector: a DRF group
 * grows along its demand direction or not at all), and the sweep goes on with the others
 * from there. Each round freezes at least one group (the full dimension had a positive
 * slope, so some group was growing in it), so there are at most n rounds of O(n dims)
 * breakpoints each; n <= RUSK_QUOTA_MAX_GROUPS keeps every array on the stack.
 *
 * Why not integer water-filling one unit at a time: memory is counted in MiB (10^10 at
 * 100K machines), and the coordinator runs every period; the exact sweep costs the same
 * whatever the magnitudes. Why doubles are exact enough: every amount below 2^53 is exact,
 * the levels are ratios of them, and the final allowances are rounded down with a relative
 * guard of 1e-12 (a level that is exactly integral in real arithmetic is not lost to a
 * last-bit error), then trimmed so that no dimension's sum exceeds its capacity.
 *
 * Invariants of the result (checked by rusk_quota_verify, tests/test_quota.c):
 *  1. floor_g <= a_g <= cap_g per dimension (minimum met while wanted, maximum and demand
 *     respected).
 *  2. Sum over groups <= capacity per dimension.
 *  3. A group below its cap in some dimension is blocked by a full dimension it grows in,
 *     where no group above its floor has a larger weighted share a/(w u).
 * Determinism: no randomness, a fixed order of floating-point operations (groups in index
 * order): the same inputs give the same allowances on one build, as `rusk sim` needs.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/error.h>
#include <rusk/quota.h>

#include "base/compiler.h"

#define D RUSK_QUOTA_DIMS

static const char *const rusk_quota_dim_name_[D] = {"rus", "mem", "gpu"};

__attribute__((format(printf, 3, 4))) static void rusk_quota_err_(char *err, size_t errlen,
                                                                  const char *fmt, ...)
{
	if (err == NULL || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

RUSK_EXPORT int rusk_quota_groups_check(const rusk_quota_vec *cap, const rusk_quota_group *g,
                                        size_t n, char *err, size_t errlen)
{
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (cap == NULL || g == NULL) {
		rusk_quota_err_(err, errlen, "quota: NULL capacity or groups");
		return RUSK_EINVAL;
	}
	if (n == 0 || n > RUSK_QUOTA_MAX_GROUPS) {
		rusk_quota_err_(err, errlen, "quota: %zu groups (1..%u allowed)", n,
		                RUSK_QUOTA_MAX_GROUPS);
		return RUSK_EINVAL;
	}
	double sum[D] = {0};
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(g[i].weight) || !(g[i].weight > 0)) {
			rusk_quota_err_(err, errlen,
			                "quota: group %zu: weight %g must be finite and > 0", i,
			                g[i].weight);
			return RUSK_EINVAL;
		}
		for (int d = 0; d < D; d++) {
			if (g[i].min.v[d] > g[i].max.v[d]) {
				rusk_quota_err_(
				        err, errlen,
				        "quota: group %zu: %s minimum %.0f above its maximum %.0f",
				        i, rusk_quota_dim_name_[d], (double)g[i].min.v[d],
				        (double)g[i].max.v[d]);
				return RUSK_EINVAL;
			}
			sum[d] += (double)g[i].min.v[d];
		}
	}
	for (int d = 0; d < D; d++)
		if (sum[d] > (double)cap->v[d]) {
			rusk_quota_err_(err, errlen,
			                "quota: the %zu groups' %s minimums sum to %.0f, above the "
			                "cluster's %.0f",
			                n, rusk_quota_dim_name_[d], sum[d], (double)cap->v[d]);
			return RUSK_EINVAL;
		}
	return RUSK_OK;
}

/* One group's shape for the fill: its floor, cap and growth rate per dimension. */
typedef struct rusk_quota_shape {
	double lo[D], hi[D], rate[D];
	double want[D]; /* min(max, demand): hi before the capacity caps it */
	bool active;    /* wants more than its floor somewhere */
} rusk_quota_shape;

static void rusk_quota_shape_(const rusk_quota_vec *cap, const rusk_quota_group *g,
                              const rusk_quota_vec *demand, rusk_quota_shape *s)
{
	double ds = 0, *want = s->want;
	for (int d = 0; d < D; d++) {
		uint64_t w = g->max.v[d] < demand->v[d] ? g->max.v[d] : demand->v[d];
		uint64_t c = cap->v[d] < w ? cap->v[d] : w;
		uint64_t f = g->min.v[d] < c ? g->min.v[d] : c;
		want[d] = cap->v[d] > 0 ? (double)w : 0; /* a dimension the cluster lacks: none */
		s->hi[d] = (double)c;
		s->lo[d] = (double)f;
		if (cap->v[d] > 0 && want[d] / (double)cap->v[d] > ds)
			ds = want[d] / (double)cap->v[d];
	}
	/* The direction is the demand's (capped by the maximum, not by the capacity: a demand
	 * beyond the cluster keeps its proportions); the capacity caps the allowance only. */
	s->active = false;
	for (int d = 0; d < D; d++) {
		s->rate[d] = ds > 0 ? g->weight * want[d] / ds : 0;
		if (s->hi[d] > s->lo[d] && s->rate[d] > 0)
			s->active = true;
	}
}

/* a_g(t)[d]. */
static inline double rusk_quota_at_(const rusk_quota_shape *s, int d, double t)
{
	double x = s->rate[d] * t;
	return x < s->lo[d] ? s->lo[d] : x > s->hi[d] ? s->hi[d] : x;
}

/* Whether g grows in d strictly inside (a, b). */
static inline bool rusk_quota_grows_(const rusk_quota_shape *s, int d, double mid)
{
	if (s->rate[d] <= 0)
		return false;
	double x = s->rate[d] * mid;
	return x > s->lo[d] && x < s->hi[d];
}

static int rusk_quota_cmp_(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

RUSK_EXPORT int rusk_quota_allocate(const rusk_quota_vec *cap, const rusk_quota_group *g, size_t n,
                                    const rusk_quota_vec *demand, rusk_quota_vec *out)
{
	if (demand == NULL || out == NULL || rusk_quota_groups_check(cap, g, n, NULL, 0) != RUSK_OK)
		return RUSK_EINVAL;
	rusk_quota_shape s[RUSK_QUOTA_MAX_GROUPS];
	double x[RUSK_QUOTA_MAX_GROUPS][D];
	bool frozen[RUSK_QUOTA_MAX_GROUPS];
	double bp[2 * D * RUSK_QUOTA_MAX_GROUPS + 1];
	for (size_t i = 0; i < n; i++) {
		rusk_quota_shape_(cap, &g[i], &demand[i], &s[i]);
		frozen[i] = !s[i].active;
		for (int d = 0; d < D; d++)
			x[i][d] = s[i].lo[d];
	}
	double t = 0;
	for (size_t round = 0; round <= n; round++) {
		size_t nb = 0;
		for (size_t i = 0; i < n; i++) {
			if (frozen[i])
				continue;
			for (int d = 0; d < D; d++) {
				if (s[i].rate[d] <= 0)
					continue;
				double b0 = s[i].lo[d] / s[i].rate[d],
				       b1 = s[i].hi[d] / s[i].rate[d];
				if (b0 > t)
					bp[nb++] = b0;
				if (b1 > t)
					bp[nb++] = b1;
			}
		}
		if (nb == 0)
			break; /* every group left is at its cap */
		qsort(bp, nb, sizeof bp[0], rusk_quota_cmp_);
		double a = t, hit = -1;
		bool full[D] = {false};
		for (size_t k = 0; k < nb && hit < 0; k++) {
			double b = bp[k];
			if (!(b > a))
				continue;
			double mid = a + (b - a) / 2, th[D];
			for (int d = 0; d < D; d++) {
				double sum = 0, slope = 0;
				for (size_t i = 0; i < n; i++) {
					sum += frozen[i] ? x[i][d] : rusk_quota_at_(&s[i], d, a);
					if (!frozen[i] && rusk_quota_grows_(&s[i], d, mid))
						slope += s[i].rate[d];
				}
				th[d] = -1;
				if (slope > 0) {
					double at = a + ((double)cap->v[d] - sum) / slope;
					th[d] = at < a ? a : at;
					if (th[d] <= b && (hit < 0 || th[d] < hit))
						hit = th[d];
				}
			}
			if (hit >= 0) {
				for (int d = 0; d < D; d++)
					full[d] = th[d] >= 0 && th[d] <= hit * (1 + 1e-12);
				/* freeze every group growing in a full dimension on this segment */
				for (size_t i = 0; i < n; i++) {
					if (frozen[i])
						continue;
					bool stop = false;
					for (int d = 0; d < D; d++)
						stop |= full[d] && rusk_quota_grows_(&s[i], d, mid);
					if (!stop)
						continue;
					frozen[i] = true;
					for (int d = 0; d < D; d++)
						x[i][d] = rusk_quota_at_(&s[i], d, hit);
				}
				t = hit;
			}
			a = b;
		}
		if (hit < 0) {
			/* no dimension fills: every group left reaches its cap */
			for (size_t i = 0; i < n; i++)
				if (!frozen[i]) {
					frozen[i] = true;
					for (int d = 0; d < D; d++)
						x[i][d] = s[i].hi[d];
				}
			break;
		}
	}
	for (size_t i = 0; i < n; i++) /* a group not frozen by n rounds (never) ends capped */
		if (!frozen[i])
			for (int d = 0; d < D; d++)
				x[i][d] = s[i].hi[d];
	for (int d = 0; d < D; d++) {
		uint64_t sum = 0;
		for (size_t i = 0; i < n; i++) {
			double v = floor(x[i][d] * (1 + 1e-12) + 1e-9);
			uint64_t q = v <= 0 ? 0 : (uint64_t)v;
			uint64_t lo = (uint64_t)s[i].lo[d], hi = (uint64_t)s[i].hi[d];
			q = q < lo ? lo : q > hi ? hi : q;
			out[i].v[d] = q;
			sum += q;
		}
		/* rounding up by the guard can only have added a unit to some groups: take it
		 * back from the largest above their floors, lowest index first */
		while (sum > cap->v[d]) {
			size_t best = n;
			for (size_t i = 0; i < n; i++)
				if (out[i].v[d] > (uint64_t)s[i].lo[d] &&
				    (best == n || out[i].v[d] > out[best].v[d]))
					best = i;
			if (best == n)
				break; /* floors alone fit (groups_check) */
			out[best].v[d]--;
			sum--;
		}
	}
	return RUSK_OK;
}

RUSK_EXPORT int rusk_quota_verify(const rusk_quota_vec *cap, const rusk_quota_group *g, size_t n,
                                  const rusk_quota_vec *demand, const rusk_quota_vec *alloc,
                                  const rusk_quota_vec *slack, char *err, size_t errlen)
{
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (demand == NULL || alloc == NULL || rusk_quota_groups_check(cap, g, n, err, errlen))
		return RUSK_EINVAL;
	rusk_quota_shape s[RUSK_QUOTA_MAX_GROUPS];
	double sl[D], used[D] = {0};
	for (int d = 0; d < D; d++)
		sl[d] = slack != NULL ? (double)slack->v[d] : 0;
	for (size_t i = 0; i < n; i++) {
		rusk_quota_shape_(cap, &g[i], &demand[i], &s[i]);
		for (int d = 0; d < D; d++) {
			double a = (double)alloc[i].v[d];
			used[d] += a;
			double top = (double)(g[i].max.v[d] < demand[i].v[d] ? g[i].max.v[d]
			                                                     : demand[i].v[d]);
			if (a > top + sl[d]) {
				rusk_quota_err_(
				        err, errlen,
				        "quota: group %zu holds %s %.0f, above min(max, demand) "
				        "%.0f plus the slack",
				        i, rusk_quota_dim_name_[d], a, top);
				return RUSK_EINVAL;
			}
			if (a + sl[d] < s[i].lo[d]) {
				rusk_quota_err_(
				        err, errlen,
				        "quota: group %zu holds %s %.0f, below its floor %.0f "
				        "less the slack",
				        i, rusk_quota_dim_name_[d], a, s[i].lo[d]);
				return RUSK_EINVAL;
			}
		}
	}
	for (int d = 0; d < D; d++)
		if (used[d] > (double)cap->v[d] + (double)n * sl[d]) {
			rusk_quota_err_(err, errlen,
			                "quota: %zu groups hold %s %.0f, above capacity %.0f", n,
			                rusk_quota_dim_name_[d], used[d], (double)cap->v[d]);
			return RUSK_EINVAL;
		}
	/* Bottlenecks: a dimension is full when within n (slack + 1 for rounding) of capacity.
	 * A group that wants more must be blocked by some full dimension it wants in which
	 * nobody above its floor has a larger weighted share (DRF: it was frozen when that
	 * dimension filled; in the others it may be behind groups that went on growing). */
	for (size_t i = 0; i < n; i++) {
		bool wants = false, blocked = false, full_seen = false;
		size_t why_h = 0;
		int why_d = 0;
		for (int d = 0; d < D && !blocked; d++) {
			double a = (double)alloc[i].v[d];
			if (s[i].rate[d] <= 0 || a >= s[i].want[d])
				continue;
			/* wanting more than the slack and rounding in some dimension needs a
			 * blocker; any dimension it wants at all may be the blocker */
			wants |= a + sl[d] + 1 < s[i].hi[d];
			if (used[d] + (double)n * (sl[d] + 1) < (double)cap->v[d])
				continue; /* room left in d: not what blocks i */
			double mine = (a + sl[d] + 1) / s[i].rate[d];
			bool fair = true;
			for (size_t h = 0; h < n && fair; h++) {
				double b = (double)alloc[h].v[d];
				if (h == i || s[h].rate[d] <= 0 || b <= s[h].lo[d] + sl[d] + 1)
					continue;
				if ((b - sl[d] - 1) / s[h].rate[d] > mine * (1 + 1e-9)) {
					fair = false;
					if (!full_seen)
						why_h = h, why_d = d;
				}
			}
			full_seen = true;
			blocked = fair;
		}
		for (int d = 0; d < D && !wants; d++)
			wants = s[i].rate[d] > 0 && (double)alloc[i].v[d] + sl[d] + 1 < s[i].hi[d];
		if (wants && !blocked) {
			if (full_seen)
				rusk_quota_err_(
				        err, errlen,
				        "quota: group %zu wants more %s but group %zu has a larger "
				        "weighted share (%llu)",
				        i, rusk_quota_dim_name_[why_d], why_h,
				        (unsigned long long)alloc[why_h].v[why_d]);
			else
				rusk_quota_err_(
				        err, errlen,
				        "quota: group %zu wants more but no dimension it wants is "
				        "full",
				        i);
			return RUSK_EINVAL;
		}
	}
	return RUSK_OK;
}
