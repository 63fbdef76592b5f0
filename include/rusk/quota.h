/* SPDX-License-Identifier: MIT */
/*
 * Quota groups: the allocation math (ParSync §2 and §7; Dominant Resource Fairness, Ghodsi
 * et al., NSDI'11).
 *
 * ParSync places every job in a quota group, "a virtual cluster … configured to specify the
 * minimum and maximum amounts of resources the group can acquire. In particular, when the
 * cluster is overloaded, resources have to be divided among all the groups by weighted
 * fairness (based on their quotas)" (§2). Its coordinator "calculates the amount of
 * resources a quota group can be allocated while maintaining fairness among all groups"
 * (§7). This header is that calculation, pure (no cluster, no threads, no clock): from the
 * cluster's capacity and each group's weight, minimum, maximum and demand, each group's
 * allowance per dimension (RUs, memory MiB, GPU milli-shares).
 *
 * The allocation (rusk_quota_allocate), per group g and dimension d:
 *   cap[g][d]   = min(max[g][d], demand[g][d], capacity[d])   what g can use
 *   floor[g][d] = min(min[g][d], cap[g][d])                   guaranteed (a minimum g does not
 *                                                              want is not held for it)
 *   u[g]        = want[g] / dominant share of want[g], where  g's demand direction, scaled to a
 *                 want[g][d] = min(max[g][d], demand[g][d])   dominant share of 1
 *   a_g(t)[d]   = clamp(weight[g] * t * u[g][d], floor, cap)  g's allowance at fill level t
 * and weighted DRF progressive filling (water-filling): t rises from 0; when a dimension
 * becomes full, every group still growing in it is frozen at its current allowance; the
 * others go on; the fill ends when every group is frozen or at its cap. So minimums are met
 * first, no group gets above its maximum or its demand, spare capacity goes to the groups
 * that want more in proportion to their weights (along their dominant share), and a group
 * that wants less than its fair share leaves the rest to the others (max-min fairness).
 * Allowances are rounded down to integers (their sum never exceeds the capacity).
 *
 * The property (rusk_quota_verify): every group below its cap in some dimension is blocked
 * by a full dimension d in which it wants more, and every group above its floor in d has a
 * weighted share of d, a[h][d] / (weight[h] * u[h][d]), no larger than the blocked group's
 * (within a slack per dimension). The allocation satisfies it exactly up to rounding; a
 * coordinator's allowances plus an agent's bounded overshoot satisfy it within the slack.
 *
 * Threads: every function here is pure and reentrant (any thread, no registration).
 */
#ifndef RUSK_QUOTA_H
#define RUSK_QUOTA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The dimensions of a quota, in this order everywhere. */
enum {
	RUSK_QUOTA_RUS = 0, /* resource units (cores) */
	RUSK_QUOTA_MEM = 1, /* memory, MiB */
	RUSK_QUOTA_GPU = 2, /* GPU milli-shares (1000 = one GPU) */
	RUSK_QUOTA_DIMS = 3
};

/* At most this many groups in one allocation (a group file, a dispatcher). */
#define RUSK_QUOTA_MAX_GROUPS 64u
/* A maximum meaning "no maximum". */
#define RUSK_QUOTA_UNLIMITED  UINT64_MAX

/* An amount per dimension. */
typedef struct rusk_quota_vec {
	uint64_t v[RUSK_QUOTA_DIMS];
} rusk_quota_vec;

/* A quota group as configured. */
typedef struct rusk_quota_group {
	double weight;      /* > 0, finite: its share of spare capacity relative to the others */
	rusk_quota_vec min; /* guaranteed while it wants it */
	rusk_quota_vec max; /* never exceeded (RUSK_QUOTA_UNLIMITED: no maximum) */
} rusk_quota_group;

/*
 * rusk_quota_groups_check: whether n groups are a valid configuration for a cluster of
 * capacity `cap`: 1 <= n <= RUSK_QUOTA_MAX_GROUPS, each weight finite and > 0, each minimum
 * <= its maximum, and the minimums of each dimension summing to at most the capacity.
 * RUSK_OK, or RUSK_EINVAL with a message naming the group (its index) and the dimension in
 * err (may be NULL). NULL cap or g: RUSK_EINVAL. Pure; any thread.
 */
int rusk_quota_groups_check(const rusk_quota_vec *cap, const rusk_quota_group *g, size_t n,
                            char *err, size_t errlen);

/*
 * rusk_quota_allocate: each group's allowance (above) from the capacity, the groups and
 * their demands (what each group uses plus what it has queued). out[0..n) receives them.
 * RUSK_OK; RUSK_EINVAL when a pointer is NULL or the groups fail rusk_quota_groups_check.
 * Pure and deterministic (the same inputs give the same allowances, bit for bit, on one
 * build); any thread; O(n^2 * dims^2 log n) time, no allocation.
 */
int rusk_quota_allocate(const rusk_quota_vec *cap, const rusk_quota_group *g, size_t n,
                        const rusk_quota_vec *demand, rusk_quota_vec *out);

/*
 * rusk_quota_verify: whether `alloc` (an allowance, or what groups hold) is a weighted DRF
 * max-min fair division for these demands within slack[d] per dimension (above): no group
 * above min(max, demand) + slack, no group below min(min, demand) - slack, no dimension
 * over capacity + n * slack, and every group that wants more blocked by a full dimension in
 * which nobody above its floor has a larger weighted share. RUSK_OK, or RUSK_EINVAL with
 * the first violation (group, dimension, amounts) in err (may be NULL). slack NULL: zero.
 * Pure; any thread.
 */
int rusk_quota_verify(const rusk_quota_vec *cap, const rusk_quota_group *g, size_t n,
                      const rusk_quota_vec *demand, const rusk_quota_vec *alloc,
                      const rusk_quota_vec *slack, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
