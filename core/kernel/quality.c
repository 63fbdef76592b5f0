/* SPDX-License-Identifier: MIT */
/*
 * Placement quality (Tarcil §3.2, eq. 1-5; ParSync §4.3 slot scores).
 *
 * Interference model. A task W causes c_i in [0, 99] on each of the N = 10 shared resources.
 * Ordering its resources by decreasing c_i and concatenating two decimal digits each gives
 * an order-preserving code (eq. 1); normalised, the target T_W (eq. 2). For a free RU H on
 * machine m, the interference it would suffer on resource i is the average of what m's
 * tenants cause, C_i = sum_i / (M - 1) (eq. 3; H itself is free so every tenant is another
 * RU); encoding the C_i in the task's resource order gives U_H = 1 - code (eq. 4), and
 * Q = 1 - (U_H - T_W) if U_H >= T_W else T_W - U_H (eq. 5). Platform heterogeneity scales
 * Q by the machine's relative speed (fastest type = 1).
 *
 * The 20-digit codes are kept as doubles (Horner in base 100): their 53-bit mantissa keeps
 * the order of the first eight resources exactly, which is what ranking needs.
 */
#include <math.h>

#include "base/atomic.h"
#include "kernel/layout.h"
#include "kernel/quality.h"

#define CODE_DEN 1e20 /* 10^(2N) for N = 10; the -1 of eq. 2 is below double precision */

void rusk_qtask_init(rusk_qtask *q, const rusk_profile *prof)
{
	/* Insertion sort of the 10 resources by decreasing c (ties by index: stable). */
	for (int i = 0; i < RUSK_N_RESOURCES; i++) {
		int j = i;
		while (j > 0 && prof->c[q->order[j - 1]] < prof->c[i]) {
			q->order[j] = q->order[j - 1];
			j--;
		}
		q->order[j] = (uint8_t)i;
	}
	double code = 0;
	for (int k = 0; k < RUSK_N_RESOURCES; k++)
		code = code * 100.0 + prof->c[q->order[k]];
	q->tw = fmin(code / CODE_DEN, 1.0); /* rounding may push 99..99 past 10^20 */
}

double rusk_qtask_eval_ci(const rusk_qtask *q, const double *ci)
{
	double code = 0;
	for (int k = 0; k < RUSK_N_RESOURCES; k++) {
		double x = ci[q->order[k]];
		code = code * 100.0 + (x > 99.0 ? 99.0 : x);
	}
	double u = 1.0 - fmin(code / CODE_DEN, 1.0);
	return u >= q->tw ? 1.0 - (u - q->tw) : q->tw - u;
}

double rusk_qtask_eval(const rusk_cluster *c, const rusk_qtask *q, uint32_t ru)
{
	const rusk_machine *m = &c->machines[c->ru_machine[ru]];
	uint64_t w[RUSK_LANE_WORDS];
	for (int i = 0; i < RUSK_LANE_WORDS; i++)
		w[i] = rusk_load64(&m->interf[i], RUSK_RELAXED); /* live statistic */
	double others = m->n_rus > 1 ? (double)(m->n_rus - 1) : 1.0;
	double ci[RUSK_N_RESOURCES];
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		ci[i] = rusk_lane(w, i) / others;
	return rusk_qtask_eval_ci(q, ci) * c->platforms[m->platform].speed / c->max_speed;
}

RUSK_EXPORT double rusk_quality_target(const rusk_profile *prof)
{
	static const rusk_profile zero; /* NULL: no interference, as for rusk_ru_commit */
	rusk_qtask q;
	rusk_qtask_init(&q, prof != NULL ? prof : &zero);
	return q.tw;
}

RUSK_EXPORT double rusk_quality_q(const rusk_cluster *c, uint32_t ru, const rusk_profile *prof)
{
	if (c == NULL || prof == NULL || ru >= c->n_rus)
		return -1.0;
	rusk_qtask q;
	rusk_qtask_init(&q, prof);
	return rusk_qtask_eval(c, &q, ru);
}

RUSK_EXPORT uint32_t rusk_sample_size(double eps, double target, double free_share, uint32_t r_max)
{
	if (r_max == 0)
		r_max = 1;
	if (!(eps > 0 && eps < 1) || !(target > 0 && target < 1))
		return r_max;
	if (free_share > 1)
		free_share = 1;
	if (!(free_share > 0))
		return r_max; /* nothing known to be free: sample as much as allowed */
	/* Good RUs (D >= target) still free: (1 - target) * free_share of all RUs. */
	double x = 1.0 - (1.0 - target) * free_share;
	double r = ceil(log(eps) / log(x) - 1e-9);
	if (r < 1)
		r = 1;
	return r > r_max ? r_max : (uint32_t)r;
}
