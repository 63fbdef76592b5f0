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
 *
 * Fragmentation-aware model (RUSK_QUALITY_FGD; after FGD, Weng et al., USENIX ATC'23,
 * "Beware of Fragmentation", §4: fragmentation measured against the target workload, and
 * scheduling as descent along its gradient). A machine in state s (free cores, memory, the
 * free milli f_g of each GPU g, its GPU model) and a GPU task type m (cores, memory, model
 * set, k GPUs of d_m milli each; d_m = 1000 for whole GPUs):
 *   U(s, m) = sum_g f_g                if m cannot run on s now (cores, memory, model, or
 *                                      fewer than k idle GPUs for k whole GPUs)
 *           = sum_{g: f_g < d_m} f_g   otherwise (the free pieces too small for m)
 * is the free GPU capacity m could not use (FGD's F_n(m): Q1/Q2/Q4 count all of it, Q3 the
 * GPUs short of the per-GPU demand). With the workload's type shares p_m,
 *   F(s) = sum_m p_m U(s, m)                                         (FGD's F_n(M))
 * and a task t is placed where it raises F least: Delta(n, t) = F(s_n + t) - F(s_n), s_n + t
 * being n's state after t takes its cores, memory and the GPUs the commit would give it
 * (vec.c: best fit for a share, the lowest idle GPUs for whole ones). Summed over machines
 * F is the cluster's expected unusable GPU capacity, the numerator of the fragmented GPU
 * share the tool reports, so each decision is a greedy step that lowers that measure.
 * FGD scores every machine; here the argmin runs over the decision's R sampled feasible
 * machines (choose.c), the same candidates the other models rank.
 *
 * The mix p_m is learned online, per agent: each agent counts the GPU tasks it decides
 * (one count per place() call) in its own table of RUSK_FGD_TYPES types (exact types; a
 * new type when the table is full replaces the rarest, inheriting its count + 1, as
 * space-saving counters do), and halves every count when their total reaches
 * RUSK_FGD_AGE, so the mix follows a drifting workload. Nothing is shared between agents
 * and nothing is written on the decision path but the agent's own table: agents that
 * split one arrival stream see samples of the same distribution, so their mixes agree up
 * to sampling noise. No atomics, no locks.
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

/* ---- fragmentation-aware model ------------------------------------------------------------ */

void rusk_fgd_observe(rusk_fgd_mix *mx, const rusk_task *t)
{
	const rusk_vec_demand *v = &t->vec;
	if (v->gpus == 0)
		return;
	rusk_fgd_type x = {t->rus,
	                   v->mem_mib,
	                   v->gpu_models,
	                   v->gpus,
	                   (uint16_t)(v->gpus == 1 ? v->gpu_milli : RUSK_GPU_MILLI),
	                   1};
	uint32_t k = 0, rare = 0;
	for (; k < mx->n_types; k++) {
		const rusk_fgd_type *y = &mx->type[k];
		if (y->rus == x.rus && y->mem_mib == x.mem_mib && y->models == x.models &&
		    y->gpus == x.gpus && y->milli == x.milli)
			break;
		rare = y->n < mx->type[rare].n ? k : rare;
	}
	if (k < mx->n_types) {
		mx->type[k].n++;
	} else if (mx->n_types < RUSK_FGD_TYPES) {
		mx->type[mx->n_types++] = x;
	} else { /* space-saving: the rarest type's slot, its count + 1 */
		x.n = mx->type[rare].n + 1;
		mx->total -= mx->type[rare].n;
		mx->type[rare] = x;
		mx->total += x.n - 1;
	}
	if (++mx->total < RUSK_FGD_AGE)
		return;
	uint32_t n = 0, total = 0;
	for (k = 0; k < mx->n_types; k++) {
		mx->type[k].n /= 2;
		if (mx->type[k].n > 0) {
			mx->type[n++] = mx->type[k];
			total += mx->type[k].n;
		}
	}
	mx->n_types = n;
	mx->total = total;
}

double rusk_fgd_frag(const rusk_fgd_mix *mx, const rusk_fgd_node *s)
{
	if (s->n_gpus == 0 || mx->total == 0)
		return 0;
	uint32_t all = 0, idle = 0, pieces = 0;
	for (uint32_t g = 0; g < s->n_gpus; g++) {
		uint32_t f = s->free[g];
		all += f;
		idle += f == RUSK_GPU_MILLI;
		pieces += f < RUSK_GPU_MILLI ? f : 0;
	}
	if (all == 0)
		return 0;
	uint64_t sum = 0; /* sum_m n_m U(s, m), exact */
	for (uint32_t k = 0; k < mx->n_types; k++) {
		const rusk_fgd_type *m = &mx->type[k];
		uint32_t u;
		if (s->free_rus < m->rus || s->mem_free < m->mem_mib ||
		    (m->models != 0 && !((m->models >> s->platform) & 1u)))
			u = all;
		else if (m->milli < RUSK_GPU_MILLI) {
			u = 0;
			for (uint32_t g = 0; g < s->n_gpus; g++)
				u += s->free[g] < m->milli ? s->free[g] : 0;
		} else
			u = idle < m->gpus ? all : pieces;
		sum += (uint64_t)m->n * u;
	}
	return (double)sum / mx->total;
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
