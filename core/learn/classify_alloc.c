/* SPDX-License-Identifier: MIT */
/*
 * Allocation sized to a performance target (Quasar §3.3, "Greedy Allocation and
 * Assignment"; rusk/classify.h).
 *
 * A job states a target (a throughput, or a completion time for an amount of work) instead
 * of a size. Its four classified rows (§3.2) predict its throughput under any allocation:
 *
 *   perf(r RUs x b blocks on each of machines S, |S| = n)
 *       = eff(n) x sum_{m in S} SU[r, b] x h(platform_m) x I(tolerated, pressure_m)
 *   eff(n) = SO[n] / (n SO[1])          scale-out efficiency (1 at n = 1)
 *   h(j)   = HE[j] / SU[1, 1]           platform speed-up against the profiling platform
 *   I      = 1 / (1 + 0.05 sum_r (pressure_r / tolerated_r)^2)
 *
 * The composition (a product of the four classifications) is rusk's: §3.3 says only that
 * the greedy scheduler combines the four. I is rusk's model too: a workload loses about 5%
 * when one shared resource reaches the intensity it tolerates, which is how §3.2 defines
 * the tolerated intensity (the point where performance drops below the QoS, "typically
 * 5%"), and quadratically more beyond it.
 *
 * Algorithm (§3.3). 1. Rank the machines with room by decreasing quality for this job,
 * q_m = h(platform_m) x I(tolerated, pressure_m): "high performing platforms with minimal
 * interference first" (with RUSK_CLS_ALLOC_BLIND: most free RUs first, q = 1). 2. Size:
 * "first increase the per-node resources (scale-up) ... then distribute the load across
 * machines (scale-out)": for n = 1, 2, ..., so_machines machines, and for each n the per-
 * machine sizes in increasing order (RUs, then memory blocks), take the n best-ranked
 * machines with room for that size and stop at the first allocation whose estimated
 * throughput meets the target. Lower-ranked machines enter only when the better ones lack
 * room or number, which is §3.3's fall-back ("if the number of highest-ranked servers
 * available is not sufficient, the scheduler will also allocate lower-ranked servers").
 * Cost: O(M log M) to rank M machines, then one pass over the ranked list per per-machine
 * size to precompute the best-n quality sums (prefix sums), then S x R x B candidates.
 *
 * Invariants: the result is the first allocation meeting the target in the order above,
 * so it is the smallest per-machine size on the fewest machines that meets it; the chosen
 * machines all have room for the size; ties in rank break on more free RUs, then the lower
 * index, so the result is a deterministic function of the arguments. Nothing here touches
 * a model or shared state: callers pass rows they own (classified or true).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/classify.h>

#include "base/alloc.h"
#include "base/base.h"
#include "kernel/quality.h"

#define QOS_LOSS 0.05 /* loss at the tolerated intensity (Quasar §3.2: "typically 5%") */

typedef struct ranked {
	uint32_t idx;
	double q;
	uint32_t free_rus;
} ranked;

RUSK_EXPORT double rusk_cls_interference_factor(const double tolerated[RUSK_N_RESOURCES],
                                                const double pressure[RUSK_N_RESOURCES])
{
	if (tolerated == NULL || pressure == NULL)
		return -1.0;
	double s = 0;
	for (int r = 0; r < RUSK_N_RESOURCES; r++) {
		double x = pressure[r] / (tolerated[r] > 1e-9 ? tolerated[r] : 1e-9);
		s += x * x;
	}
	return 1.0 / (1.0 + QOS_LOSS * s);
}

static bool pos(double v)
{
	return isfinite(v) && v > 0;
}

/* The shape matches the estimate and every value the model reads is usable. */
static bool check_rows(const rusk_cls_shape *s, const rusk_cls_job_estimate *e, unsigned flags)
{
	for (int k = 0; k < RUSK_CLS_KINDS; k++) /* v[k] holds RUSK_CLS_MAX_COLS values */
		if (e->cols[k] > RUSK_CLS_MAX_COLS)
			return false;
	if (s->su_rus == 0 || s->su_mem_blocks == 0 || s->so_machines == 0 || s->platforms == 0 ||
	    s->platforms > RUSK_MAX_PLATFORMS ||
	    (uint64_t)s->su_rus * s->su_mem_blocks != e->cols[RUSK_CLS_SCALE_UP] ||
	    s->so_machines != e->cols[RUSK_CLS_SCALE_OUT] ||
	    s->platforms != e->cols[RUSK_CLS_HETEROGENEITY] ||
	    e->cols[RUSK_CLS_INTERFERENCE] != RUSK_CLS_INTERFERENCE_COLS)
		return false;
	for (int k = 0; k < RUSK_CLS_INTERFERENCE; k++)
		for (uint32_t i = 0; i < e->cols[k]; i++)
			if (!pos(e->v[k][i]))
				return false;
	if (!(flags & RUSK_CLS_ALLOC_BLIND))
		for (int r = 0; r < RUSK_N_RESOURCES; r++)
			if (!pos(e->v[RUSK_CLS_INTERFERENCE][r]))
				return false;
	return true;
}

static double eff(const rusk_cls_job_estimate *e, uint32_t n)
{
	const double *so = e->v[RUSK_CLS_SCALE_OUT];
	return so[n - 1] / (n * so[0]);
}

static double su(const rusk_cls_shape *s, const rusk_cls_job_estimate *e, uint32_t r, uint32_t b)
{
	return e->v[RUSK_CLS_SCALE_UP][(r - 1) * s->su_mem_blocks + (b - 1)];
}

/* q_m: what one unit of scale-up performance is worth on this machine for this job. */
static double quality(const rusk_cls_job_estimate *e, uint32_t platform, const double *pressure,
                      unsigned flags)
{
	if (flags & RUSK_CLS_ALLOC_BLIND)
		return 1.0;
	double h = e->v[RUSK_CLS_HETEROGENEITY][platform] / e->v[RUSK_CLS_SCALE_UP][0];
	return pressure ? h * rusk_cls_interference_factor(e->v[RUSK_CLS_INTERFERENCE], pressure)
	                : h;
}

RUSK_EXPORT double rusk_cls_perf(const rusk_cls_shape *shape, const rusk_cls_job_estimate *est,
                                 uint32_t rus, uint32_t mem_blocks, uint32_t n,
                                 const uint32_t *platform,
                                 const double (*pressure)[RUSK_N_RESOURCES], unsigned flags)
{
	if (shape == NULL || est == NULL || platform == NULL || !check_rows(shape, est, flags) ||
	    rus == 0 || rus > shape->su_rus || mem_blocks == 0 ||
	    mem_blocks > shape->su_mem_blocks || n == 0 || n > shape->so_machines)
		return -1.0;
	double sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (platform[i] >= shape->platforms)
			return -1.0;
		sum += quality(est, platform[i], pressure ? pressure[i] : NULL, flags);
	}
	return eff(est, n) * su(shape, est, rus, mem_blocks) * sum;
}

static int cmp_ranked(const void *a, const void *b)
{
	const ranked *x = a, *y = b;
	if (x->q != y->q)
		return x->q > y->q ? -1 : 1;
	if (x->free_rus != y->free_rus)
		return x->free_rus > y->free_rus ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

static double target_perf(const rusk_cls_target *t)
{
	if (t->kind == RUSK_CLS_TARGET_THROUGHPUT)
		return pos(t->value) ? t->value : -1.0;
	if (t->kind == RUSK_CLS_TARGET_COMPLETION && pos(t->value) && pos(t->work)) {
		double x = t->work / t->value;
		return pos(x) ? x : -1.0;
	}
	return -1.0;
}

/* Step 1: the machines with room for 1 RU x 1 block, best first. Returns the count. */
static uint32_t rank_machines(const rusk_cls_job_estimate *e, const rusk_cls_machine *m,
                              uint32_t n_machines, unsigned flags, ranked *out)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n_machines; i++) {
		if (m[i].free_rus == 0 || m[i].free_mem_blocks == 0)
			continue;
		double q = (flags & RUSK_CLS_ALLOC_BLIND)
		                   ? (double)m[i].free_rus
		                   : quality(e, m[i].platform, m[i].pressure, flags);
		out[k++] = (ranked){i, q, m[i].free_rus};
	}
	qsort(out, k, sizeof *out, cmp_ranked);
	return k;
}

/* pre[j] = sum of the j + 1 best-ranked machines' q with room for r x b (j < S); returns
 * how many there are (<= S). */
static uint32_t best_sums(const rusk_cls_machine *m, const ranked *rk, uint32_t nr, uint32_t r,
                          uint32_t b, uint32_t S, unsigned flags, double *pre)
{
	uint32_t k = 0;
	double sum = 0;
	for (uint32_t i = 0; i < nr && k < S; i++) {
		const rusk_cls_machine *x = &m[rk[i].idx];
		if (x->free_rus < r || x->free_mem_blocks < b)
			continue;
		sum += (flags & RUSK_CLS_ALLOC_BLIND) ? 1.0 : rk[i].q;
		pre[k++] = sum;
	}
	return k;
}

/* The machines and platforms of the chosen size, in rank order. */
static void fill_choice(const rusk_cls_machine *m, const ranked *rk, uint32_t nr,
                        rusk_cls_alloc *out)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < nr && k < out->machines; i++) {
		const rusk_cls_machine *x = &m[rk[i].idx];
		if (x->free_rus < out->rus || x->free_mem_blocks < out->mem_blocks)
			continue;
		out->machine[k++] = rk[i].idx;
		bool seen = false;
		for (uint32_t j = 0; j < out->n_platforms; j++)
			seen |= out->platform[j] == x->platform;
		if (!seen && out->n_platforms < RUSK_MAX_PLATFORMS)
			out->platform[out->n_platforms++] = x->platform;
	}
}

RUSK_EXPORT int rusk_cls_alloc_size(const rusk_cls_shape *shape, const rusk_cls_job_estimate *est,
                                    const rusk_cls_target *target, const rusk_cls_machine *m,
                                    uint32_t n_machines, unsigned flags, rusk_cls_alloc *out)
{
	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (shape == NULL || est == NULL || target == NULL || out == NULL ||
	    (m == NULL && n_machines > 0) || !check_rows(shape, est, flags))
		return RUSK_EINVAL;
	double goal = target_perf(target);
	if (goal < 0)
		return RUSK_EINVAL;
	for (uint32_t i = 0; i < n_machines; i++) {
		if (m[i].platform >= shape->platforms)
			return RUSK_EINVAL;
		for (int r = 0; r < RUSK_N_RESOURCES; r++) /* a NaN would unsort the ranking */
			if (!(isfinite(m[i].pressure[r]) && m[i].pressure[r] >= 0))
				return RUSK_EINVAL;
	}
	out->target_perf = goal;
	uint32_t S = shape->so_machines < RUSK_CLS_ALLOC_MAX_MACHINES ? shape->so_machines
	                                                              : RUSK_CLS_ALLOC_MAX_MACHINES;
	uint32_t R = shape->su_rus, B = shape->su_mem_blocks;
	ranked *rk =
	        rusk_fault_alloc_() ? NULL : malloc(sizeof *rk * (n_machines ? n_machines : 1));
	double *pre = rusk_fault_alloc_() ? NULL : malloc(sizeof *pre * (size_t)R * B * S);
	uint32_t *cnt = rusk_fault_alloc_() ? NULL : malloc(sizeof *cnt * (size_t)R * B);
	if (rk == NULL || pre == NULL || cnt == NULL) {
		free(rk);
		free(pre);
		free(cnt);
		return RUSK_ENOMEM;
	}
	uint32_t nr = rank_machines(est, m, n_machines, flags, rk);
	for (uint32_t r = 1; r <= R; r++)
		for (uint32_t b = 1; b <= B; b++) {
			uint32_t c = (r - 1) * B + (b - 1);
			cnt[c] = best_sums(m, rk, nr, r, b, S, flags, pre + (size_t)c * S);
		}
	/* Step 2: n machines outermost (scale-out last), per-machine size innermost. */
	double best = -1;
	for (uint32_t n = 1; n <= S && !out->met; n++)
		for (uint32_t c = 0; c < R * B && !out->met; c++) {
			if (cnt[c] < n)
				continue;
			uint32_t r = c / B + 1, b = c % B + 1;
			double p = eff(est, n) * su(shape, est, r, b) * pre[(size_t)c * S + n - 1];
			/* The first to meet the goal wins; until then remember the best. */
			if (p >= goal || p > best) {
				best = p;
				*out = (rusk_cls_alloc){.rus = r,
				                        .mem_blocks = b,
				                        .machines = n,
				                        .perf = p,
				                        .target_perf = goal,
				                        .met = p >= goal};
			}
		}
	fill_choice(m, rk, nr, out);
	if (target->kind == RUSK_CLS_TARGET_COMPLETION && out->perf > 0)
		out->est_time = target->work / out->perf;
	free(rk);
	free(pre);
	free(cnt);
	return out->met ? RUSK_OK : RUSK_EINFEASIBLE;
}

RUSK_EXPORT double rusk_cls_tarcil_q(const double caused[RUSK_N_RESOURCES],
                                     const double pressure[RUSK_N_RESOURCES])
{
	if (caused == NULL || pressure == NULL)
		return -1.0;
	rusk_profile prof;
	double ci[RUSK_N_RESOURCES];
	for (int r = 0; r < RUSK_N_RESOURCES; r++) {
		double c = caused[r] < 0 ? 0 : caused[r] > 99 ? 99 : caused[r];
		prof.c[r] = (uint8_t)lround(c);
		ci[r] = pressure[r] < 0 ? 0 : pressure[r];
	}
	rusk_qtask q;
	rusk_qtask_init(&q, &prof);
	return rusk_qtask_eval_ci(&q, ci);
}
