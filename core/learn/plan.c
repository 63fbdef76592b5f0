/* SPDX-License-Identifier: MIT */
/*
 * 3σSched: planning which jobs to start, postpone or preempt over runtime distributions
 * (3Sigma, EuroSys'18, §3, §4.2-4.3). The API is in include/rusk/plan.h.
 *
 * Design note.
 *
 * Time is cut into a plan-ahead window of `slots` slots of slot_s seconds from `now`. At
 * each tick:
 *  1. Running jobs: each one's probability of still running at the start of every slot,
 *     conditioned on the time it has already run (Eq. 2: S(x | e) = (1 - F(e + x)) /
 *     (1 - F(e))). Once a job outlives its whole distribution (or its point estimate)
 *     it is an under-estimate (§4.2.1): its estimated end is pushed back by 1, 2, 4, ...
 *     slots (2^k scheduling cycles, k from 0) each time it is reached, and the job is
 *     taken to run until then. The capacity expected free in slot t is
 *     C(t) = free_cores + sum_r k_r (1 - S_r(t)) (§3.2).
 *  2. Pending jobs: SLO jobs whose deadline has passed are dropped (nothing can earn
 *     anything), the others are ranked (SLO by deadline, then BE by arrival) and the first
 *     max_jobs are planned. The start options are slots 0, 1, 2, 4, 8, ... of the window
 *     (every slot's capacity is still checked): each tick plans again, so only the start
 *     now is acted upon and later starts need less resolution the further they are; it
 *     keeps the MILP at log2(slots) + 1 columns a job instead of `slots` (measured on the
 *     E2E-like run, 300 jobs: 50 ms -> 4 ms a cycle, fewer budget overruns, no worse
 *     plans). For each start option s the expected utility U_js (Eq. 1) is
 *     integrated over the job's runtime distribution; its demand in slot t >= s is
 *     k_j S_j((t - s) slot_s), S_j(0) = 1 (the survival is precomputed at submission, as
 *     the distribution does not change).
 *  3. MILP (§4.3.3, §4.3.5): binary x_js per option with U_js > 0 and binary y_r per
 *     running BE job; maximise sum U_js x_js - sum P_r y_r subject to sum_s x_js <= 1 and,
 *     for every slot t, sum_{j, s <= t} k_j S_j(t - s) x_js - sum_r k_r S_r(t) y_r <= C(t)
 *     (Eq. 3 with the preemption credit). P_r is preempt_cost times r's expected utility
 *     if it runs on. A tiny tie-break (1e-3 per slot of U_js) prefers earlier starts among
 *     equal plans, so that the plan is work-conserving when nothing argues against it.
 *     The jobs whose option is slot 0 start now, the y_r = 1 jobs are preempted (and are
 *     pending again: a preempted job restarts from scratch, as a killed container).
 *  4. Time budget: GLPK's simplex and branch-and-cut share budget_s (tm_lim) and stop
 *     within mip_gap of the best bound (§4.3.6: the solver spends most of its time proving
 *     optimality); a greedy plan already within mip_gap of the LP relaxation's bound skips
 *     the branch-and-cut, and otherwise is handed to it as its first incumbent (§4.3.6
 *     seeds the solver with a feasible plan). If the budget runs out, the better of the solver's
 * incumbent and the greedy plan is used; if the solver fails, the greedy plan. With a
 *     modelled budget (iteration_s > 0, issue 29) the same budget is spent in modelled
 *     time: iteration_s per simplex iteration and node_s per branch-and-cut node, counted
 *     by GLPK (glp_get_it_cnt, glp_ios_tree_size) and checked at the root LP (it_lim) and
 *     at every branch-and-cut callback, so where the solver stops depends on its work only,
 *     never on the machine's speed or load. The greedy plan:
 *     jobs by their best U_js, each given its best option that fits what the jobs before
 *     it left, no preemption.
 *
 * Placement options (§4.3.1, §4.3.3, §5; params.groups > 0). The capacity is cut into a
 * few equal groups of cores, the paper's equivalence sets at a coarse granularity, so that
 * a job's preferred resources are a set of groups (a mask, at most RUSK_PLAN_MAX_GROUPS)
 * rather than a set of cores: the MILP then grows with the number of group sets, not with
 * the cluster (§4.3.3: "the complexity of MILP depends on the number of equivalence sets
 * rather than the cluster size"). A pending job with a preference has two options per
 * start slot: kind 0 on its preferred groups (its runtime R, U_js and demand as above) and
 * kind 1 anywhere (slowdown x R: U_js integrated over that longer distribution, its demand
 * from that distribution's survival). A job without one has kind 0 only, anywhere. So
 * the plan chooses between starting now off the preferred groups, waiting for them
 * ("useful when a job's preferred resources are busy, but are expected to free up in
 * time", §4.3.1) and neither. Capacity rows: besides the row of all the cores, one per
 * set S of groups that is a union of planned jobs' preferred sets, in every slot: the
 * options confined to groups inside S and the running jobs' expected use of S's cores
 * must fit in S (Hall's condition; with the full row it is exactly what makes an
 * assignment of cores to groups exist when every allowed set is a preferred set or all,
 * and the unions are the only sets where it can bind). With the paper's 75% of 4 groups
 * that is 5 rows a slot instead of 1. Running jobs hold cores in known groups (alloc),
 * free their groups' cores as they end (Eq. 2 per group), and run slowdown x longer if
 * any core is off their preferred groups (off), which their survival then uses. At slot
 * 0 the rows are exact, so the jobs the plan starts now can be placed: augmenting paths
 * over jobs x groups (place_flow) find the assignment, an anywhere option taking its
 * preferred groups' cores where the others leave them. Not modelled: which groups a BE
 * job takes (the assignment is any feasible one), and a per-job preferred set of single
 * cores (2^cores row sets: intractable, and the paper's sets are equivalence sets).
 * PRIO and FIFO stay placement-blind: a job they start takes its preferred groups' free
 * cores first, then any (place_seq); placement_blind makes the planning modes do the
 * same (one row, kind 0 only, the runtime on preferred cores) for comparisons. One pool (groups 0)
 * is one group: the same rows, columns and arithmetic as before the options existed, so its plans
 * are unchanged.
 *
 * Utility (§3.1, §4.2.2). SLO: 1 for a completion by the deadline D; with over-estimate
 * handling, oe_utility just after D, falling linearly to 0 at D + (D - submit) (the job's
 * own window once more; the paper gives the shape, Fig. 3(d), not the slope), else 0.
 * BE: be_utility at latency 0, falling linearly to be_floor of it at be_decay_s, flat
 * after (a BE job is always worth running). Expected utilities are exact for the step
 * (F(D - s)); the linear parts integrate the CDF with 32 trapezoids (integration by parts:
 * E[g(C); a < C <= b] for a linear g is g(b)F(b) - g(a)F(a) - g' * integral of F).
 *
 * Adaptive over-estimate handling (§4.2.3): an SLO job gets the graceful decay only when
 * P(runtime <= D - submit) < oe_threshold, i.e. its history says it cannot make its
 * deadline even when started at once, which the paper reads as a sign that the
 * distribution over-estimates it. The paper's threshold is "configured"; 0.05 is ours.
 *
 * Baselines. POINT_REAL and POINT_PERFECT run the same MILP with a point (the estimate,
 * or the true runtime) as the distribution, under-estimate handling and preemption on,
 * over-estimate handling off (3Sigma Table 1). PRIO starts pending jobs SLO first (then
 * by arrival) wherever they fit and preempts the youngest running BE jobs for an SLO job
 * that does not fit; FIFO starts them in arrival order wherever they fit, never preempts.
 *
 * Invariants: a job is pending or running, never both; at every tick the cores started
 * are at most free_cores plus those preempted and killed (slot 0's capacity row holds it
 * for the MILP, the greedy and the baselines check it directly); with groups, no group's
 * cores are held twice (slot 0's rows per group set, place_flow and place_seq), a running
 * job's alloc sums to its cores, and off is set exactly when a core lies outside its
 * preferred groups; a job id is live once;
 * the planner's results depend only on its inputs (no clock is read to decide anything,
 * but the solver's time budget: a wall-clock budget that runs out may change the plan; a
 * modelled one, iteration_s > 0, reads no clock at all).
 */
#include <float.h>
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rusk/plan.h>

#include "base/base.h"

#define EU_EPS    1e-9 /* below this an option is worthless (no column) */
#define TIE_BREAK 1e-3 /* share of U_js given up per slot of delay */
#define INTEG_N   32   /* trapezoids integrating the CDF over a linear piece */
#define FIT_EPS   1e-7

typedef struct pjob {
	uint64_t id, seq;
	uint32_t cores;
	bool slo, oe, running, has_dist;
	double submit, deadline, point; /* point: the runtime a point mode believes */
	double start;                   /* running: since */
	double max_run;                 /* the longest runtime the job's estimate allows */
	double ue_end;                  /* under-estimate: the end currently believed; 0: none */
	uint32_t ue_k;
	float *surv; /* slots entries: P(still running at d slots after its start) */
	rusk_dist dist;
	/* Placement (params.groups > 0). */
	uint32_t prefer;  /* preferred groups (mask); 0: none */
	float *surv_slow; /* prefer: surv for the runtime slowdown x longer; else NULL */
	bool off;         /* running: some core off its preferred groups (slowdown x) */
	uint32_t alloc[RUSK_PLAN_MAX_GROUPS]; /* running: its cores per group (one pool:
	                                       * alloc[0] = cores) */
} pjob;

struct rusk_plan {
	rusk_plan_params p;
	pjob *jobs;
	size_t n, cap;
	uint64_t seq;
	double last_now;
	rusk_plan_stats st;
	/* per-tick scratch */
	size_t *order;
	double *eu;    /* planned x slots */
	double *eus;   /* planned x slots: the anywhere option of a job with a preference
	                * (slowdown x its runtime); 0 for the others */
	double *cfree; /* groups x slots (one pool: one group) */
	double *rcap;  /* rows x slots: capacity expected free in each row's groups */
	uint32_t rowm[(1u << RUSK_PLAN_MAX_GROUPS) - 1]; /* the rows' group sets; 0: all */
	uint32_t nrows;
	uint32_t gfree[RUSK_PLAN_MAX_GROUPS]; /* cores free per group now */
	double *rsurv;                        /* running x slots (conditional survival) */
	size_t scratch_jobs;
};

RUSK_EXPORT const char *rusk_plan_mode_name(rusk_plan_mode m)
{
	static const char *const names[] = {"3sigma", "point-real", "point-perfect", "prio",
	                                    "fifo"};
	return (unsigned)m < RUSK_PLAN_MODES ? names[m] : "?";
}

RUSK_EXPORT void rusk_plan_params_init(rusk_plan_params *p, rusk_plan_mode m, uint32_t capacity)
{
	if (p == NULL)
		return;
	*p = (rusk_plan_params){.mode = m,
	                        .capacity = capacity,
	                        .slots = 16,
	                        .slot_s = 60,
	                        .max_jobs = 48,
	                        .milp = true,
	                        .budget_s = 0.2,
	                        .mip_gap = 0.02,
	                        .be_utility = 0.25,
	                        .be_decay_s = 3600,
	                        .be_floor = 0.1,
	                        .oe = m == RUSK_PLAN_3SIGMA ? RUSK_PLAN_OE_ADAPTIVE
	                                                    : RUSK_PLAN_OE_OFF,
	                        .oe_utility = 0.5,
	                        .oe_threshold = 0.05,
	                        .preempt_cost = 1,
	                        .kill_late = true,
	                        .slowdown = 1.5};
}

static int check_params(const rusk_plan_params *p, char *err, size_t errlen)
{
#define BAD(...) return rusk_errf(err, errlen, RUSK_EINVAL, __VA_ARGS__)
	if (p == NULL)
		BAD("no parameters");
	if ((unsigned)p->mode >= RUSK_PLAN_MODES)
		BAD("mode %d is not a rusk_plan_mode", (int)p->mode);
	if (p->capacity == 0)
		BAD("capacity must be >= 1");
	if (p->slots < 1 || p->slots > 256)
		BAD("slots %u is not in 1..256", p->slots);
	if (!(p->slot_s > 0) || !isfinite(p->slot_s))
		BAD("slot_s must be > 0");
	if (p->max_jobs < 1 || p->max_jobs > 4096)
		BAD("max_jobs %u is not in 1..4096", p->max_jobs);
	if (!(p->budget_s >= 0.001) || !isfinite(p->budget_s))
		BAD("budget_s must be >= 0.001");
	if (!(p->iteration_s >= 0) || !isfinite(p->iteration_s) || !(p->node_s >= 0) ||
	    !isfinite(p->node_s))
		BAD("iteration_s and node_s must be >= 0 and finite");
	if (!(p->mip_gap >= 0 && p->mip_gap < 1))
		BAD("mip_gap must be in [0, 1)");
	if (!(p->be_utility > 0 && p->be_utility < 1))
		BAD("be_utility must be in (0, 1)");
	if (!(p->be_decay_s > 0) || !isfinite(p->be_decay_s))
		BAD("be_decay_s must be > 0");
	if (!(p->be_floor >= 0 && p->be_floor < 1))
		BAD("be_floor must be in [0, 1)");
	if ((unsigned)p->oe > RUSK_PLAN_OE_ALWAYS)
		BAD("oe %d is not a rusk_plan_oe", (int)p->oe);
	if (!(p->oe_utility >= 0 && p->oe_utility < 1))
		BAD("oe_utility must be in [0, 1)");
	if (!(p->oe_threshold >= 0 && p->oe_threshold <= 1))
		BAD("oe_threshold must be in [0, 1]");
	if (p->keep_late && p->mode != RUSK_PLAN_PRIO && p->mode != RUSK_PLAN_FIFO)
		BAD("keep_late is for prio and fifo only");
	if (!(p->preempt_cost >= 0) || !isfinite(p->preempt_cost))
		BAD("preempt_cost must be >= 0");
	if (p->groups == 1 || p->groups > RUSK_PLAN_MAX_GROUPS)
		BAD("groups %u is not 0 or in 2..%d", p->groups, RUSK_PLAN_MAX_GROUPS);
	if (p->groups > p->capacity)
		BAD("groups %u is more than the capacity's %u cores", p->groups, p->capacity);
	if (!(p->slowdown >= 1) || !isfinite(p->slowdown))
		BAD("slowdown must be >= 1 and finite");
	if (p->placement_blind && p->groups == 0)
		BAD("placement_blind needs groups");
	return RUSK_OK;
#undef BAD
}

RUSK_EXPORT int rusk_plan_create(const rusk_plan_params *p, rusk_plan **out, char *err,
                                 size_t errlen)
{
	if (out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "no place for the planner");
	*out = NULL;
	int rc = check_params(p, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	rusk_plan *pl = calloc(1, sizeof *pl);
	if (pl == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	pl->p = *p;
	pl->last_now = -INFINITY;
	*out = pl;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_plan_destroy(rusk_plan *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->jobs[i].surv);
		free(p->jobs[i].surv_slow);
	}
	free(p->jobs);
	free(p->order);
	free(p->eu);
	free(p->eus);
	free(p->cfree);
	free(p->rcap);
	free(p->rsurv);
	free(p);
}

RUSK_EXPORT size_t rusk_plan_size(const rusk_plan *p)
{
	return p != NULL ? p->n : 0;
}

RUSK_EXPORT void rusk_plan_stats_get(const rusk_plan *p, rusk_plan_stats *out)
{
	if (out != NULL)
		*out = p != NULL ? p->st : (rusk_plan_stats){0};
}

/* ---- a job's runtime model -------------------------------------------------------- */

/* Whether the planner integrates j's distribution (else its point). */
static bool uses_dist(const rusk_plan_params *p, const pjob *j)
{
	return p->mode == RUSK_PLAN_3SIGMA && j->has_dist;
}

/* P(scale x runtime <= x): scale 1 on preferred cores (or with no preference), slowdown
 * off them. */
static double job_cdf(const rusk_plan_params *p, const pjob *j, double x, double scale)
{
	if (scale != 1)
		x /= scale;
	if (uses_dist(p, j))
		return rusk_dist_cdf(&j->dist, x);
	return x >= j->point ? 1.0 : 0.0;
}

/* Mean over c in [lo, hi] of P(start + scale x runtime <= c), by trapezoids. */
static double mean_cdf(const rusk_plan_params *p, const pjob *j, double start, double lo, double hi,
                       double scale)
{
	double h = (hi - lo) / INTEG_N, s = 0;
	for (int i = 0; i <= INTEG_N; i++) {
		double w = i == 0 || i == INTEG_N ? 0.5 : 1;
		s += w * job_cdf(p, j, lo + i * h - start, scale);
	}
	return s / INTEG_N;
}

/* U(c): the utility of completing at c (see the top of the file). */
static double utility_at(const rusk_plan_params *p, const pjob *j, double c)
{
	if (j->slo) {
		if (c <= j->deadline)
			return 1;
		double w = j->deadline - j->submit;
		return j->oe ? p->oe_utility * fmax(0, 1 - (c - j->deadline) / w) : 0;
	}
	double lat = fmax(0, c - j->submit);
	return p->be_utility * (1 - (1 - p->be_floor) * fmin(1, lat / p->be_decay_s));
}

/* Eq. 1: E[U(start + scale x R)] (scale: see job_cdf). */
static double expected_utility(const rusk_plan_params *p, const pjob *j, double start, double scale)
{
	if (!uses_dist(p, j))
		return utility_at(p, j, start + (scale != 1 ? j->point * scale : j->point));
	if (j->slo) {
		double ontime = job_cdf(p, j, j->deadline - start, scale);
		if (!j->oe)
			return ontime;
		/* E[g(C); D < C <= D + W] with g linear from oe_utility to 0: by parts,
		 * -g(D) F(D) + (oe_utility / W) * integral of F over [D, D + W]. */
		double w = j->deadline - j->submit;
		double m = mean_cdf(p, j, start, j->deadline, j->deadline + w, scale);
		return ontime + p->oe_utility * (m - ontime);
	}
	/* BE: floor + linear part over latency [0, be_decay_s]. */
	double a = j->submit, b = j->submit + p->be_decay_s;
	double top = p->be_utility, fl = p->be_utility * p->be_floor;
	double fa = job_cdf(p, j, a - start, scale);
	double m = mean_cdf(p, j, start, a, b, scale);
	return fl + (top - fl) * (m - fa);
}

/* Whether a job may be planned to start in slot s: 0, 1, 2, 4, 8, ... (design note). */
static bool start_option(size_t s)
{
	return s == 0 || (s & (s - 1)) == 0;
}

/* Fills j's survival per slot (and off its preferred groups, with a preference) and its
 * over-estimate flag; allocates j->surv and j->surv_slow (freed by the caller on failure). */
static int prepare_job(const rusk_plan_params *p, pjob *j)
{
	j->surv = malloc(p->slots * sizeof *j->surv);
	if (j->surv == NULL)
		return RUSK_ENOMEM;
	for (uint32_t d = 0; d < p->slots; d++)
		j->surv[d] = d == 0 ? 1.0f : (float)(1 - job_cdf(p, j, d * p->slot_s, 1));
	if (j->prefer != 0) {
		j->surv_slow = malloc(p->slots * sizeof *j->surv_slow);
		if (j->surv_slow == NULL)
			return RUSK_ENOMEM;
		for (uint32_t d = 0; d < p->slots; d++)
			j->surv_slow[d] =
			        d == 0 ? 1.0f
			               : (float)(1 - job_cdf(p, j, d * p->slot_s, p->slowdown));
	}
	j->max_run = uses_dist(p, j) ? j->dist.max : j->point;
	j->oe = false;
	if (j->slo && p->oe == RUSK_PLAN_OE_ALWAYS)
		j->oe = true;
	else if (j->slo && p->oe == RUSK_PLAN_OE_ADAPTIVE)
		j->oe = job_cdf(p, j, j->deadline - j->submit, 1) < p->oe_threshold;
	return RUSK_OK;
}

/* Builds a pjob from a submission (no allocation). */
static int load_job(const rusk_plan_params *p, const rusk_plan_job *in, pjob *j)
{
	if (in == NULL || in->cores < 1 || in->cores > p->capacity || !(in->submit_s >= 0) ||
	    !isfinite(in->submit_s) || !(in->deadline_s == 0 || in->deadline_s > in->submit_s) ||
	    !isfinite(in->deadline_s) || !(in->estimate_s >= 0) || !isfinite(in->estimate_s))
		return RUSK_EINVAL;
	if (p->mode == RUSK_PLAN_POINT_PERFECT &&
	    (!(in->true_run_s >= 0) || !isfinite(in->true_run_s)))
		return RUSK_EINVAL;
	if (in->dist != NULL && in->dist->n_bins > RUSK_DIST_MAX_BINS)
		return RUSK_EINVAL; /* not a histogram: copying it would read past it */
	if (in->prefer != 0 && (p->groups == 0 || (in->prefer >> p->groups) != 0))
		return RUSK_EINVAL;
	memset(j, 0, sizeof *j);
	j->id = in->id;
	j->cores = in->cores;
	j->slo = in->deadline_s > 0;
	j->submit = in->submit_s;
	j->deadline = in->deadline_s;
	j->point = p->mode == RUSK_PLAN_POINT_PERFECT ? in->true_run_s : in->estimate_s;
	j->prefer = in->prefer;
	j->has_dist = in->dist != NULL && in->dist->count > 0;
	if (j->has_dist)
		j->dist = *in->dist;
	else
		rusk_dist_init(&j->dist);
	return RUSK_OK;
}

RUSK_EXPORT double rusk_plan_expected_utility(const rusk_plan_params *p, const rusk_plan_job *j,
                                              double start_s)
{
	pjob *pj = malloc(sizeof *pj);
	if (pj == NULL || check_params(p, NULL, 0) != RUSK_OK || load_job(p, j, pj) != RUSK_OK ||
	    !isfinite(start_s)) {
		free(pj);
		return NAN;
	}
	double eu = NAN;
	if (prepare_job(p, pj) == RUSK_OK)
		eu = expected_utility(p, pj, start_s, 1);
	free(pj->surv);
	free(pj->surv_slow);
	free(pj);
	return eu;
}

static pjob *find_job(rusk_plan *p, uint64_t id)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->jobs[i].id == id)
			return &p->jobs[i];
	return NULL;
}

RUSK_EXPORT int rusk_plan_submit(rusk_plan *p, const rusk_plan_job *in)
{
	if (p == NULL || in == NULL || find_job(p, in->id) != NULL)
		return RUSK_EINVAL;
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 64;
		pjob *nj = realloc(p->jobs, cap * sizeof *nj);
		if (nj == NULL)
			return RUSK_ENOMEM;
		p->jobs = nj;
		p->cap = cap;
	}
	pjob *j = &p->jobs[p->n];
	int rc = load_job(&p->p, in, j);
	if (rc != RUSK_OK)
		return rc;
	if ((rc = prepare_job(&p->p, j)) != RUSK_OK) {
		free(j->surv);
		free(j->surv_slow);
		return rc;
	}
	j->seq = p->seq++;
	p->st.oe_jobs += j->oe;
	p->n++;
	return RUSK_OK;
}

static void remove_at(rusk_plan *p, size_t i)
{
	free(p->jobs[i].surv);
	free(p->jobs[i].surv_slow);
	p->jobs[i] = p->jobs[--p->n];
}

RUSK_EXPORT int rusk_plan_placement(const rusk_plan *p, uint64_t id, uint32_t *cores, size_t n,
                                    bool *off_pref)
{
	if (p == NULL || cores == NULL || p->p.groups == 0 || n < p->p.groups)
		return RUSK_EINVAL;
	const pjob *j = NULL;
	for (size_t i = 0; i < p->n && j == NULL; i++)
		if (p->jobs[i].id == id)
			j = &p->jobs[i];
	if (j == NULL || !j->running)
		return RUSK_EINVAL;
	for (size_t g = 0; g < n; g++)
		cores[g] = g < p->p.groups ? j->alloc[g] : 0;
	if (off_pref != NULL)
		*off_pref = j->off;
	return RUSK_OK;
}

RUSK_EXPORT int rusk_plan_complete(rusk_plan *p, uint64_t id, double now)
{
	(void)now;
	if (p == NULL)
		return RUSK_EINVAL;
	pjob *j = find_job(p, id);
	if (j == NULL || !j->running)
		return RUSK_EINVAL;
	remove_at(p, (size_t)(j - p->jobs));
	return RUSK_OK;
}

RUSK_EXPORT int rusk_plan_cancel(rusk_plan *p, uint64_t id)
{
	if (p == NULL)
		return RUSK_EINVAL;
	pjob *j = find_job(p, id);
	if (j == NULL)
		return RUSK_EINVAL;
	remove_at(p, (size_t)(j - p->jobs));
	return RUSK_OK;
}

/* ---- one tick --------------------------------------------------------------------- */

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int grow_scratch(rusk_plan *p)
{
	if (p->scratch_jobs >= p->n && p->order != NULL)
		return RUSK_OK;
	size_t n = p->n < 64 ? 64 : p->n * 2, T = p->p.slots;
	size_t *o = realloc(p->order, n * sizeof *o);
	if (o != NULL)
		p->order = o;
	double *e = realloc(p->eu, n * T * sizeof *e);
	if (e != NULL)
		p->eu = e;
	double *es = realloc(p->eus, n * T * sizeof *es);
	if (es != NULL)
		p->eus = es;
	double *r = realloc(p->rsurv, n * T * sizeof *r);
	if (r != NULL)
		p->rsurv = r;
	if (p->cfree == NULL)
		p->cfree = malloc(RUSK_PLAN_MAX_GROUPS * T * sizeof *p->cfree);
	if (p->rcap == NULL)
		p->rcap = malloc(sizeof p->rowm / sizeof *p->rowm * T * sizeof *p->rcap);
	if (o == NULL || e == NULL || es == NULL || r == NULL || p->cfree == NULL ||
	    p->rcap == NULL)
		return RUSK_ENOMEM;
	p->scratch_jobs = n;
	return RUSK_OK;
}

/* A running job's runtime factor: slowdown off its preferred groups, else 1. */
static double run_scale(const rusk_plan *p, const pjob *j)
{
	return j->off && !p->p.placement_blind ? p->p.slowdown : 1;
}

/* The longest runtime a running job's estimate allows, where it runs. */
static double run_max(const rusk_plan *p, const pjob *j)
{
	return j->off && !p->p.placement_blind ? j->max_run * p->p.slowdown : j->max_run;
}

/* Under-estimate handling (§4.2.1): pushes a running job's believed end back by 2^k
 * slots each time it is reached, once it has outlived every runtime it was thought to
 * have. */
static void under_estimate(rusk_plan *p, pjob *j, double now)
{
	double max_run = run_max(p, j);
	if (now - j->start < max_run)
		return;
	if (j->ue_end == 0)
		j->ue_end = j->start + max_run;
	while (j->ue_end <= now) {
		j->ue_end += ldexp(p->p.slot_s, (int)(j->ue_k < 60 ? j->ue_k : 60));
		j->ue_k++;
		p->st.ue_steps++;
	}
}

/* S_r(x): P(running job j still runs x seconds after now | it ran until now). */
static double running_surv(const rusk_plan *p, const pjob *j, double now, double x)
{
	if (j->ue_end > 0)
		return now + x < j->ue_end ? 1 : 0;
	double sc = run_scale(p, j);
	double e = now - j->start, fe = job_cdf(&p->p, j, e, sc);
	if (fe >= 1 - 1e-12)
		return now + x < j->start + run_max(p, j) ? 1 : 0;
	return (1 - job_cdf(&p->p, j, e + x, sc)) / (1 - fe);
}

/* A sort key: qsort's comparator sees only the key, so that planners on different
 * threads share no state. */
typedef struct rank_key {
	double k1;   /* SLO rank: 0 SLO, 1 BE (or the greedy's best value, negated) */
	double k2;   /* deadline (SLO), else 0 */
	uint64_t k3; /* arrival sequence */
	size_t idx;
} rank_key;

static int cmp_key(const void *a, const void *b)
{
	const rank_key *x = a, *y = b;
	if (x->k1 != y->k1)
		return x->k1 < y->k1 ? -1 : 1;
	if (x->k2 != y->k2)
		return x->k2 < y->k2 ? -1 : 1;
	return x->k3 < y->k3 ? -1 : x->k3 > y->k3;
}

/* Sorts idx[0..n) (indexes of p->jobs) by (slo_first ? SLO before BE : nothing), then
 * deadline when by_deadline, then arrival. */
static int sort_jobs(const rusk_plan *p, size_t *idx, size_t n, bool slo_first, bool by_deadline)
{
	rank_key *k = malloc((n + 1) * sizeof *k);
	if (k == NULL)
		return RUSK_ENOMEM;
	for (size_t a = 0; a < n; a++) {
		const pjob *j = &p->jobs[idx[a]];
		k[a] = (rank_key){.k1 = slo_first && !j->slo,
		                  .k2 = by_deadline && j->slo ? j->deadline : 0,
		                  .k3 = j->seq,
		                  .idx = idx[a]};
	}
	qsort(k, n, sizeof *k, cmp_key);
	for (size_t a = 0; a < n; a++)
		idx[a] = k[a].idx;
	free(k);
	return RUSK_OK;
}

/* The plan of one tick: chosen slot per planned job (-1: none), preempt flag per running
 * BE candidate. */
typedef struct plan_in {
	size_t nj, nr;      /* planned pending jobs (order[0..nj)), preemptable running ones */
	const size_t *jobs; /* indexes into p->jobs */
	const size_t *run;  /* indexes of preemptable running jobs */
	const double *rcost;
} plan_in;

/* ---- placement options (params.groups) ------------------------------------------ */

/* Groups of the planner (one pool: one group), all of them as a mask, group g's size. */
static uint32_t n_groups(const rusk_plan_params *p)
{
	return p->groups ? p->groups : 1;
}

static uint32_t all_groups(const rusk_plan_params *p)
{
	return (uint32_t)((1ull << n_groups(p)) - 1);
}

static uint32_t group_size(const rusk_plan_params *p, uint32_t g)
{
	uint64_t c = p->capacity, n = n_groups(p);
	return (uint32_t)((g + 1) * c / n - g * c / n);
}

/* A pending job's placement options (kinds) per start slot: 0, as submitted (on its
 * preferred groups if it has a preference, else anywhere), and, for a job with a
 * preference, 1, anywhere at slowdown x its runtime. */
static int n_kinds(const pjob *j)
{
	return j->prefer != 0 ? 2 : 1;
}

/* The groups option `kind` may use. */
static uint32_t opt_mask(const rusk_plan *p, const pjob *j, int kind)
{
	return kind == 0 && j->prefer != 0 ? j->prefer : all_groups(&p->p);
}

static const float *opt_surv(const pjob *j, int kind)
{
	return kind == 0 ? j->surv : j->surv_slow;
}

/* U_js of planned job a's option (s, kind). */
static double opt_eu(const rusk_plan *p, size_t a, size_t s, int kind)
{
	return (kind == 0 ? p->eu : p->eus)[a * p->p.slots + s];
}

/* Whether capacity row r (a set of groups) bounds an option on the groups `mask`: its
 * cores can only come from them when mask lies inside the row's set. */
static bool in_row(const rusk_plan *p, uint32_t r, uint32_t mask)
{
	return (mask & ~p->rowm[r]) == 0;
}

/* Total objective of a plan (with tie-break), for comparing the solver's and greedy's. */
static double plan_value(const rusk_plan *p, const plan_in *in, const int *slot, const int *kind,
                         const bool *pre)
{
	double v = 0;
	for (size_t a = 0; a < in->nj; a++)
		if (slot[a] >= 0)
			v += opt_eu(p, a, (size_t)slot[a], kind[a]) * (1 - TIE_BREAK * slot[a]);
	for (size_t r = 0; r < in->nr; r++)
		if (pre[r])
			v -= in->rcost[r];
	return v;
}

/* Greedy: jobs by best option value (ties: rank), each its best option (slot, kind) that
 * fits every capacity row what the jobs before it left. */
static int greedy(const rusk_plan *p, const plan_in *in, int *slot, int *kind)
{
	size_t T = p->p.slots, nj = in->nj, R = p->nrows;
	double *used = calloc(R * T, sizeof *used);
	rank_key *ord = malloc((nj + 1) * sizeof *ord);
	if (used == NULL || ord == NULL) {
		free(used);
		free(ord);
		return RUSK_ENOMEM;
	}
	for (size_t a = 0; a < nj; a++) {
		const pjob *j = &p->jobs[in->jobs[a]];
		double best = 0;
		for (size_t s = 0; s < T; s++)
			for (int k = 0; k < n_kinds(j); k++)
				best = fmax(best, opt_eu(p, a, s, k) * (1 - TIE_BREAK * s));
		ord[a] = (rank_key){.k1 = -best, .k3 = a, .idx = a};
		slot[a] = -1;
		kind[a] = 0;
	}
	qsort(ord, nj, sizeof *ord, cmp_key);
	for (size_t q = 0; q < nj; q++) {
		size_t a = ord[q].idx;
		const pjob *j = &p->jobs[in->jobs[a]];
		double bv = EU_EPS;
		int bs = -1, bk = 0;
		for (size_t s = 0; s < T; s++) {
			for (int k = 0; k < n_kinds(j); k++) {
				double v = opt_eu(p, a, s, k) * (1 - TIE_BREAK * s);
				if (v <= bv)
					continue;
				const float *sv = opt_surv(j, k);
				uint32_t m = opt_mask(p, j, k);
				bool fits = true;
				for (uint32_t r = 0; r < R && fits; r++) {
					if (!in_row(p, r, m))
						continue;
					const double *u = used + r * T, *c = p->rcap + r * T;
					for (size_t t = s; t < T && fits; t++)
						fits = u[t] + j->cores * sv[t - s] <=
						       c[t] + FIT_EPS;
				}
				if (fits) {
					bv = v;
					bs = (int)s;
					bk = k;
				}
			}
		}
		slot[a] = bs;
		kind[a] = bk;
		if (bs < 0)
			continue;
		const float *sv = opt_surv(j, bk);
		uint32_t m = opt_mask(p, j, bk);
		for (uint32_t r = 0; r < R; r++)
			if (in_row(p, r, m))
				for (size_t t = (size_t)bs; t < T; t++)
					used[r * T + t] += j->cores * sv[t - bs];
	}
	free(used);
	free(ord);
	return RUSK_OK;
}

/*
 * A tick's solver budget: wall time since t0, or (modelled, iteration_s > 0) the work
 * counted so far at iteration_s per simplex iteration and node_s per branch-and-cut node.
 */
typedef struct budget {
	const rusk_plan_params *pp;
	double t0;             /* wall_s() at the tick's start (wall mode) */
	uint64_t iters_done;   /* simplex iterations of the finished solver calls */
	uint64_t iters, nodes; /* the tick's totals so far */
} budget;

static bool budget_modelled(const budget *b)
{
	return b->pp->iteration_s > 0;
}

/* Seconds of the budget spent. */
static double budget_used_s(const budget *b)
{
	if (budget_modelled(b))
		return (double)b->iters * b->pp->iteration_s + (double)b->nodes * b->pp->node_s;
	return wall_s() - b->t0;
}

/* Milliseconds of the budget left (may be negative). */
static double budget_left_ms(const budget *b)
{
	return (b->pp->budget_s - budget_used_s(b)) * 1e3;
}

typedef struct heur_ctx {
	const double *x; /* 1-based column values of the greedy plan */
	bool given;
	budget *b;
} heur_ctx;

/* Branch-and-cut callback: hands the greedy plan over as the first incumbent, counts the
 * solver's work, and stops the search once the budget is spent. GLPK's own tm_lim is only
 * looked at between some of its steps: measured, it let cycles run 0.6-1.5 s over a 100 ms
 * budget. */
static void heur_cb(glp_tree *tree, void *info)
{
	heur_ctx *h = info;
	if (glp_ios_reason(tree) == GLP_IHEUR && !h->given) {
		h->given = true;
		glp_ios_heur_sol(tree, h->x);
	}
	int t_cnt = 0;
	glp_ios_tree_size(tree, NULL, NULL, &t_cnt);
	h->b->nodes = (uint64_t)t_cnt;
	h->b->iters = h->b->iters_done + (uint64_t)glp_get_it_cnt(glp_ios_get_prob(tree));
	if (budget_left_ms(h->b) <= 0)
		glp_ios_terminate(tree);
}

/* Solves the MILP; fills slot/pre from the solver when it did better than greedy.
 * Returns the rusk_plan_how. */
static rusk_plan_how solve_milp(const rusk_plan *p, const plan_in *in, const int *gslot,
                                const int *gkind, int *slot, int *kind, bool *pre, uint32_t *n_opts,
                                budget *bg)
{
	size_t T = p->p.slots, nj = in->nj, nr = in->nr, R = p->nrows;
	/* Columns: options with U > 0, then preemptions. */
	size_t ncol = 0;
	for (size_t a = 0; a < nj; a++)
		for (size_t s = 0; s < T; s++)
			for (int k = 0; k < n_kinds(&p->jobs[in->jobs[a]]); k++)
				ncol += opt_eu(p, a, s, k) > EU_EPS;
	*n_opts = (uint32_t)ncol;
	if (ncol == 0)
		return RUSK_PLAN_HOW_MILP; /* nothing worth starting: the empty plan (greedy's) */
	ncol += nr;
	if (budget_left_ms(bg) < 1)
		return RUSK_PLAN_HOW_GREEDY_TIME; /* valuing and the greedy plan took it all */
	size_t nnz_max = ncol * (T * R + 1) + 1;
	int *ia = malloc(nnz_max * sizeof *ia), *ja = malloc(nnz_max * sizeof *ja);
	double *ar = malloc(nnz_max * sizeof *ar), *x0 = calloc(ncol + 1, sizeof *x0);
	int *col_job = malloc((ncol + 1) * sizeof *col_job),
	    *col_slot = malloc((ncol + 1) * sizeof *col_slot),
	    *col_kind = malloc((ncol + 1) * sizeof *col_kind);
	glp_prob *lp = glp_create_prob();
	rusk_plan_how how = RUSK_PLAN_HOW_GREEDY_FAIL;
	if (ia == NULL || ja == NULL || ar == NULL || x0 == NULL || col_job == NULL ||
	    col_slot == NULL || col_kind == NULL)
		goto out;
	glp_set_obj_dir(lp, GLP_MAX);
	/* Rows 1..T capacity of all the groups, T+1..T+nj demand, then the capacity of each
	 * further row set (rowm[1..R)) in each slot: T+nj+(r-1)T+t+1. */
	glp_add_rows(lp, (int)(T + nj + (R - 1) * T));
	for (size_t t = 0; t < T; t++)
		glp_set_row_bnds(lp, (int)t + 1, GLP_UP, 0, p->rcap[t] + FIT_EPS);
	for (size_t a = 0; a < nj; a++)
		glp_set_row_bnds(lp, (int)(T + a + 1), GLP_UP, 0, 1);
	for (size_t r = 1; r < R; r++)
		for (size_t t = 0; t < T; t++)
			glp_set_row_bnds(lp, (int)(T + nj + (r - 1) * T + t + 1), GLP_UP, 0,
			                 p->rcap[r * T + t] + FIT_EPS);
	glp_add_cols(lp, (int)ncol);
	size_t c = 0, nz = 0;
	for (size_t a = 0; a < nj; a++) {
		const pjob *j = &p->jobs[in->jobs[a]];
		for (size_t s = 0; s < T; s++) {
			for (int k = 0; k < n_kinds(j); k++) {
				double u = opt_eu(p, a, s, k);
				if (u <= EU_EPS)
					continue;
				const float *sv = opt_surv(j, k);
				uint32_t m = opt_mask(p, j, k);
				c++;
				col_job[c] = (int)a;
				col_slot[c] = (int)s;
				col_kind[c] = k;
				x0[c] = gslot[a] == (int)s && gkind[a] == k;
				glp_set_col_kind(lp, (int)c, GLP_BV);
				glp_set_obj_coef(lp, (int)c, u * (1 - TIE_BREAK * s));
				for (size_t t = s; t < T; t++) {
					double d = j->cores * (double)sv[t - s];
					if (d <= 0)
						continue;
					nz++;
					ia[nz] = (int)t + 1, ja[nz] = (int)c, ar[nz] = d;
				}
				nz++;
				ia[nz] = (int)(T + a + 1), ja[nz] = (int)c, ar[nz] = 1;
				for (size_t r = 1; r < R; r++) {
					if (!in_row(p, (uint32_t)r, m))
						continue;
					for (size_t t = s; t < T; t++) {
						double d = j->cores * (double)sv[t - s];
						if (d <= 0)
							continue;
						nz++;
						ia[nz] = (int)(T + nj + (r - 1) * T + t + 1);
						ja[nz] = (int)c, ar[nz] = d;
					}
				}
			}
		}
	}
	for (size_t q = 0; q < nr; q++) {
		const pjob *j = &p->jobs[in->run[q]];
		c++;
		col_job[c] = -1;
		col_slot[c] = (int)q;
		col_kind[c] = 0;
		glp_set_col_kind(lp, (int)c, GLP_BV);
		glp_set_obj_coef(lp, (int)c, -in->rcost[q]);
		for (size_t t = 0; t < T; t++) {
			double d = j->cores * p->rsurv[in->run[q] * T + t];
			if (d <= 0)
				continue;
			nz++;
			ia[nz] = (int)t + 1, ja[nz] = (int)c, ar[nz] = -d;
		}
		/* Preempting it frees its cores in the groups it holds. */
		for (size_t r = 1; r < R; r++) {
			uint32_t held = 0;
			for (uint32_t g = 0; g < n_groups(&p->p); g++)
				held += (p->rowm[r] >> g & 1) ? j->alloc[g] : 0;
			for (size_t t = 0; t < T && held > 0; t++) {
				double d = held * p->rsurv[in->run[q] * T + t];
				if (d <= 0)
					continue;
				nz++;
				ia[nz] = (int)(T + nj + (r - 1) * T + t + 1);
				ja[nz] = (int)c, ar[nz] = -d;
			}
		}
	}
	glp_load_matrix(lp, (int)nz, ia, ja, ar);

	double budget_ms = budget_left_ms(bg);
	if (budget_ms < 1) {
		how = RUSK_PLAN_HOW_GREEDY_TIME;
		goto out;
	}
	glp_smcp sm;
	glp_init_smcp(&sm);
	sm.msg_lev = GLP_MSG_OFF;
	if (budget_modelled(bg)) /* the iterations the budget pays for; no clock */
		sm.it_lim = (int)fmin(budget_ms / 1e3 / p->p.iteration_s, INT_MAX - 1.0);
	else
		sm.tm_lim = (int)budget_ms;
	glp_set_it_cnt(lp, 0);
	int rc = glp_simplex(lp, &sm);
	bg->iters_done += (uint64_t)glp_get_it_cnt(lp);
	bg->iters = bg->iters_done;
	glp_set_it_cnt(lp, 0);
	if (rc == GLP_ETMLIM || rc == GLP_EITLIM) {
		how = RUSK_PLAN_HOW_GREEDY_TIME;
		goto out;
	}
	if (rc != 0 || glp_get_status(lp) != GLP_OPT)
		goto out;
	/* The LP relaxation bounds every plan: a greedy plan within mip_gap of it is already
	 * what the branch-and-cut would settle for. */
	double bound = glp_get_obj_val(lp);
	bool *gpre0 = calloc(nr + 1, sizeof *gpre0);
	double vg0 = gpre0 != NULL ? plan_value(p, in, gslot, gkind, gpre0) : -INFINITY;
	free(gpre0);
	if (vg0 >= bound - p->p.mip_gap * fabs(bound) - 1e-9) {
		how = RUSK_PLAN_HOW_MILP;
		goto out;
	}
	budget_ms = budget_left_ms(bg);
	if (budget_ms < 1) {
		how = RUSK_PLAN_HOW_GREEDY_TIME;
		goto out;
	}
	heur_ctx h = {.x = x0, .given = false, .b = bg};
	glp_iocp io;
	glp_init_iocp(&io);
	io.msg_lev = GLP_MSG_OFF;
	if (!budget_modelled(bg)) /* modelled: heur_cb alone stops it, on its work */
		io.tm_lim = (int)budget_ms;
	io.mip_gap = p->p.mip_gap;
	io.cb_func = heur_cb;
	io.cb_info = &h;
	rc = glp_intopt(lp, &io);
	uint64_t after = bg->iters_done + (uint64_t)glp_get_it_cnt(lp);
	if (after > bg->iters) /* else heur_cb saw more (on the tree's problem) */
		bg->iters = after;
	bg->iters_done = bg->iters;
	int ms = glp_mip_status(lp);
	bool timed = rc == GLP_ETMLIM || rc == GLP_ESTOP;
	if ((rc != 0 && !timed && rc != GLP_EMIPGAP) || (ms != GLP_OPT && ms != GLP_FEAS)) {
		how = timed ? RUSK_PLAN_HOW_GREEDY_TIME : RUSK_PLAN_HOW_GREEDY_FAIL;
		goto out;
	}
	int *ms_slot = malloc((nj + 1) * sizeof *ms_slot),
	    *ms_kind = calloc(nj + 1, sizeof *ms_kind);
	bool *ms_pre = calloc(nr + 1, sizeof *ms_pre);
	if (ms_slot == NULL || ms_kind == NULL || ms_pre == NULL) {
		free(ms_slot);
		free(ms_kind);
		free(ms_pre);
		goto out;
	}
	for (size_t a = 0; a < nj; a++)
		ms_slot[a] = -1;
	for (size_t k = 1; k <= c; k++) {
		if (glp_mip_col_val(lp, (int)k) < 0.5)
			continue;
		if (col_job[k] >= 0) {
			ms_slot[col_job[k]] = col_slot[k];
			ms_kind[col_job[k]] = col_kind[k];
		} else {
			ms_pre[col_slot[k]] = true;
		}
	}
	bool *gpre = calloc(nr + 1, sizeof *gpre);
	double vm = plan_value(p, in, ms_slot, ms_kind, ms_pre);
	double vg = gpre != NULL ? plan_value(p, in, gslot, gkind, gpre) : INFINITY;
	free(gpre);
	/* Solved (to mip_gap): the solver's plan, unless the greedy incumbent it started
	 * from is as good (then they are the same plan up to ties). Budget spent: the
	 * better of the two. */
	if (vm > vg + 1e-9 || (!timed && vm >= vg - 1e-9)) {
		memcpy(slot, ms_slot, nj * sizeof *slot);
		memcpy(kind, ms_kind, nj * sizeof *kind);
		memcpy(pre, ms_pre, nr * sizeof *pre);
	}
	if (!timed)
		how = RUSK_PLAN_HOW_MILP;
	else
		how = vm > vg + 1e-9 ? RUSK_PLAN_HOW_MILP_TIME : RUSK_PLAN_HOW_GREEDY_TIME;
	free(ms_slot);
	free(ms_kind);
	free(ms_pre);
out:
	glp_delete_prob(lp);
	free(ia);
	free(ja);
	free(ar);
	free(x0);
	free(col_job);
	free(col_slot);
	free(col_kind);
	return how;
}

/*
 * GLPK keeps an environment per thread, made by its first call on the thread and freed
 * only by glp_free_env() there: a planner ticked on a thread that later ends (rusk run's
 * planner thread) leaked it. A tick that finds no environment makes one and frees it
 * before it returns; one the caller (or an earlier GLPK user on the thread) made is left
 * alone, with whatever objects it holds. Out of memory for it: the greedy plan.
 */
static rusk_plan_how solve_milp_env(const rusk_plan *p, const plan_in *in, const int *gslot,
                                    const int *gkind, int *slot, int *kind, bool *pre,
                                    uint32_t *n_opts, budget *bg)
{
	int env = glp_init_env(); /* 0: made now; 1: there already; else failed */
	if (env != 0 && env != 1)
		return RUSK_PLAN_HOW_GREEDY_FAIL;
	rusk_plan_how how = solve_milp(p, in, gslot, gkind, slot, kind, pre, n_opts, bg);
	if (env == 0)
		glp_free_env();
	return how;
}

static void emit(rusk_plan_action *out, size_t *n, uint64_t id, rusk_plan_act a)
{
	out[(*n)++] = (rusk_plan_action){.id = id, .act = a};
}

/* Drops pending SLO jobs that can earn nothing more and kills running ones (kill_late):
 * past the deadline, or, for a job with over-estimate handling, past the end of its
 * post-deadline decay (deadline + its window: utility_at is 0 from there). Dropping or
 * killing it at the deadline would forfeit the utility its valuation counted on. Returns
 * the cores freed by kills. */
static uint32_t drop_late(rusk_plan *p, double now, rusk_plan_action *out, size_t *n)
{
	uint32_t freed = 0;
	if (p->p.keep_late)
		return 0;
	for (size_t i = 0; i < p->n;) {
		pjob *j = &p->jobs[i];
		double end = j->oe ? j->deadline + (j->deadline - j->submit) : j->deadline;
		bool late = j->slo && now >= end;
		if (late && !j->running) {
			emit(out, n, j->id, RUSK_PLAN_DROP);
			p->st.drops++;
			remove_at(p, i);
		} else if (late && p->p.kill_late && now > end) {
			emit(out, n, j->id, RUSK_PLAN_KILL);
			p->st.kills++;
			freed += j->cores;
			remove_at(p, i);
		} else {
			i++;
		}
	}
	return freed;
}

/* Starts j now. With groups its cores are already placed (j->alloc, by place_seq or
 * place_flow); in one pool they are simply its cores. */
static void start_job(rusk_plan *p, pjob *j, double now, rusk_plan_action *out, size_t *n)
{
	j->running = true;
	j->start = now;
	j->ue_end = 0;
	j->ue_k = 0;
	if (p->p.groups == 0) {
		memset(j->alloc, 0, sizeof j->alloc);
		j->alloc[0] = j->cores;
		j->off = false;
	} else {
		uint32_t out_of_pref = 0;
		for (uint32_t g = 0; g < p->p.groups; g++)
			out_of_pref += (j->prefer >> g & 1) ? 0 : j->alloc[g];
		j->off = j->prefer != 0 && out_of_pref > 0;
		p->st.pref_starts += j->prefer != 0;
		p->st.off_starts += j->off;
	}
	emit(out, n, j->id, RUSK_PLAN_START);
	p->st.starts++;
}

static void preempt_job(rusk_plan *p, pjob *j, rusk_plan_action *out, size_t *n)
{
	j->running = false;
	j->ue_end = 0;
	j->ue_k = 0;
	if (p->p.groups > 0)
		for (uint32_t g = 0; g < p->p.groups; g++)
			p->gfree[g] += j->alloc[g];
	memset(j->alloc, 0, sizeof j->alloc);
	j->off = false;
	emit(out, n, j->id, RUSK_PLAN_PREEMPT);
	p->st.preempts++;
}

/* Groups: the cores each group has free, from its size and the running jobs' placements. */
static void count_gfree(rusk_plan *p)
{
	for (uint32_t g = 0; g < p->p.groups; g++)
		p->gfree[g] = group_size(&p->p, g);
	for (size_t i = 0; i < p->n; i++)
		if (p->jobs[i].running)
			for (uint32_t g = 0; g < p->p.groups; g++)
				p->gfree[g] -= p->jobs[i].alloc[g];
}

/* PRIO and FIFO (placement-blind): j's cores from its preferred groups' free cores first,
 * then from any group, lowest group first; the caller checked that enough are free. */
static void place_seq(rusk_plan *p, pjob *j)
{
	uint32_t need = j->cores;
	memset(j->alloc, 0, sizeof j->alloc);
	for (int pass = j->prefer != 0 ? 0 : 1; pass < 2 && need > 0; pass++)
		for (uint32_t g = 0; g < p->p.groups && need > 0; g++) {
			if (pass == 0 && !(j->prefer >> g & 1))
				continue;
			uint32_t take = need < p->gfree[g] ? need : p->gfree[g];
			j->alloc[g] += take;
			p->gfree[g] -= take;
			need -= take;
		}
}

/*
 * The planning modes: places the jobs the plan starts now (js[0..n), their option kinds
 * in kind) on the groups' free cores: an option on the preferred groups there only; an
 * option anywhere on the preferred groups where it can (it then runs at full speed after
 * all), else anywhere; a job without a preference anywhere. The plan's capacity rows at
 * slot 0 are exact (every start's demand is its cores, running jobs hold theirs) and are
 * Hall's condition for such an assignment over every union of preferred sets, so one
 * exists: augmenting paths over jobs x groups (Edmonds-Karp, the anywhere options
 * restricted to their preferred groups in a first phase) find it. RUSK_EINVAL if they
 * do not (a broken invariant), RUSK_ENOMEM.
 */
static int place_flow(rusk_plan *p, pjob **js, const int *kind, size_t n)
{
	uint32_t G = p->p.groups, all = all_groups(&p->p);
	size_t V = n + G;
	uint32_t *need = malloc((n + 1) * sizeof *need), *allow = malloc((n + 1) * sizeof *allow);
	size_t *prev = malloc((V + 1) * sizeof *prev), *queue = malloc((V + 1) * sizeof *queue);
	bool ok = need != NULL && allow != NULL && prev != NULL && queue != NULL;
	int rc = ok ? RUSK_OK : RUSK_ENOMEM;
	for (size_t i = 0; ok && i < n; i++) {
		need[i] = js[i]->cores;
		memset(js[i]->alloc, 0, sizeof js[i]->alloc);
	}
	for (int phase = 0; ok && phase < 2; phase++) {
		for (size_t i = 0; i < n; i++)
			allow[i] = js[i]->prefer == 0 ? all
			           : kind[i] == 0     ? js[i]->prefer
			           : phase == 0       ? js[i]->prefer
			                              : all;
		for (;;) { /* BFS from the jobs still in need to a group with free cores */
			size_t head = 0, tail = 0, sink = SIZE_MAX;
			for (size_t v = 0; v < V; v++)
				prev[v] = SIZE_MAX;
			for (size_t i = 0; i < n; i++)
				if (need[i] > 0) {
					prev[i] = i;
					queue[tail++] = i;
				}
			while (head < tail && sink == SIZE_MAX) {
				size_t v = queue[head++];
				if (v < n) { /* job -> an allowed group */
					for (uint32_t g = 0; g < G; g++)
						if ((allow[v] >> g & 1) &&
						    prev[n + g] == SIZE_MAX) {
							prev[n + g] = v;
							queue[tail++] = n + g;
						}
				} else if (p->gfree[v - n] > 0) {
					sink = v;
				} else { /* group -> a job holding cores there, moved */
					for (size_t i = 0; i < n; i++)
						if (js[i]->alloc[v - n] > 0 &&
						    prev[i] == SIZE_MAX) {
							prev[i] = v;
							queue[tail++] = i;
						}
				}
			}
			if (sink == SIZE_MAX)
				break;
			uint32_t amt = p->gfree[sink - n];
			for (size_t v = sink; prev[v] != v; v = prev[v]) {
				size_t u = prev[v]; /* an edge u -> v */
				if (u >= n)         /* group u -> job v: v gives back cores in u */
					amt = amt < js[v]->alloc[u - n] ? amt : js[v]->alloc[u - n];
			}
			size_t src = sink;
			while (prev[src] != src)
				src = prev[src];
			amt = amt < need[src] ? amt : need[src];
			for (size_t v = sink; prev[v] != v; v = prev[v]) {
				size_t u = prev[v];
				if (u < n)
					js[u]->alloc[v - n] += amt;
				else
					js[v]->alloc[u - n] -= amt;
			}
			p->gfree[sink - n] -= amt;
			need[src] -= amt;
		}
	}
	for (size_t i = 0; ok && i < n; i++)
		if (need[i] != 0)
			rc = RUSK_EINVAL;
	free(need);
	free(allow);
	free(prev);
	free(queue);
	return rc;
}

/* PRIO and FIFO: no runtime information, no plan. */
static int tick_simple(rusk_plan *p, double now, uint32_t free_cores, rusk_plan_action *out,
                       size_t *n)
{
	size_t np = 0;
	for (size_t i = 0; i < p->n; i++)
		if (!p->jobs[i].running)
			p->order[np++] = i;
	bool prio = p->p.mode == RUSK_PLAN_PRIO;
	/* PRIO: SLO first, then BE, each by arrival; FIFO: by arrival. */
	if (sort_jobs(p, p->order, np, prio, false) != RUSK_OK)
		return RUSK_ENOMEM;
	uint64_t freec = free_cores;
	for (size_t a = 0; a < np; a++) {
		pjob *j = &p->jobs[p->order[a]];
		if (j->cores <= freec) {
			freec -= j->cores;
			if (p->p.groups > 0)
				place_seq(p, j);
			start_job(p, j, now, out, n);
			continue;
		}
		if (!prio || !j->slo)
			continue;
		/* Preempt the youngest running BE jobs if that makes room. */
		uint64_t avail = freec;
		for (size_t i = 0; i < p->n; i++)
			if (p->jobs[i].running && !p->jobs[i].slo && p->jobs[i].start < now)
				avail += p->jobs[i].cores;
		if (avail < j->cores)
			continue;
		while (freec < j->cores) {
			pjob *y = NULL;
			for (size_t i = 0; i < p->n; i++) {
				pjob *c = &p->jobs[i];
				if (c->running && !c->slo && c->start < now &&
				    (y == NULL || c->start > y->start ||
				     (c->start == y->start && c->seq > y->seq)))
					y = c;
			}
			preempt_job(p, y, out, n);
			freec += y->cores;
		}
		freec -= j->cores;
		if (p->p.groups > 0)
			place_seq(p, j);
		start_job(p, j, now, out, n);
	}
	return RUSK_OK;
}

/* The planning modes: values, MILP or greedy, then the actions. */
static int tick_plan(rusk_plan *p, double now, uint32_t free_cores, rusk_plan_action *out,
                     size_t *n, rusk_plan_tick_info *info, budget *bg)
{
	size_t T = p->p.slots;
	uint32_t G = n_groups(&p->p);
	for (uint32_t g = 0; g < G; g++)
		for (size_t t = 0; t < T; t++)
			p->cfree[g * T + t] = p->p.groups > 0 ? p->gfree[g] : free_cores;
	size_t np = 0, nrun = 0;
	size_t *run = malloc((p->n + 1) * sizeof *run);
	double *rcost = malloc((p->n + 1) * sizeof *rcost);
	if (run == NULL || rcost == NULL) {
		free(run);
		free(rcost);
		return RUSK_ENOMEM;
	}
	for (size_t i = 0; i < p->n; i++) {
		pjob *j = &p->jobs[i];
		if (!j->running) {
			p->order[np++] = i;
			continue;
		}
		under_estimate(p, j, now);
		for (size_t t = 0; t < T; t++) {
			double s = running_surv(p, j, now, t * p->p.slot_s);
			p->rsurv[i * T + t] = s;
			for (uint32_t g = 0; g < G; g++)
				if (j->alloc[g] > 0)
					p->cfree[g * T + t] += j->alloc[g] * (1 - s);
		}
		if (!j->slo && j->start < now) {
			run[nrun] = i;
			/* What it would still earn running on, from its start. */
			rcost[nrun++] = p->p.preempt_cost *
			                expected_utility(&p->p, j, j->start, run_scale(p, j));
		}
	}
	if (sort_jobs(p, p->order, np, true, true) != RUSK_OK) {
		free(run);
		free(rcost);
		return RUSK_ENOMEM;
	}
	size_t nj = np < p->p.max_jobs ? np : p->p.max_jobs;
	for (size_t a = 0; a < nj; a++) {
		const pjob *j = &p->jobs[p->order[a]];
		for (size_t s = 0; s < T; s++) {
			bool opt = start_option(s);
			double at = now + s * p->p.slot_s;
			p->eu[a * T + s] = opt ? expected_utility(&p->p, j, at, 1) : 0;
			p->eus[a * T + s] = opt && j->prefer != 0 && !p->p.placement_blind
			                            ? expected_utility(&p->p, j, at, p->p.slowdown)
			                            : 0;
		}
	}
	/* Capacity rows: all the groups, then every union of the planned jobs' preferred
	 * sets (Hall's condition: the cores of the options confined to a set of groups
	 * must fit in it). One pool: the one row of all the cores. */
	uint32_t all = all_groups(&p->p);
	bool seen[1u << RUSK_PLAN_MAX_GROUPS] = {false};
	p->nrows = 1;
	p->rowm[0] = all;
	seen[all] = true;
	for (size_t a = 0; a < nj && !p->p.placement_blind; a++) {
		uint32_t m = p->jobs[p->order[a]].prefer;
		if (m == 0 || seen[m])
			continue;
		uint32_t n0 = p->nrows;
		seen[m] = true;
		p->rowm[p->nrows++] = m;
		for (uint32_t r = 1; r < n0; r++) { /* m with the unions so far */
			uint32_t u = p->rowm[r] | m;
			if (!seen[u]) {
				seen[u] = true;
				p->rowm[p->nrows++] = u;
			}
		}
	}
	for (uint32_t r = 0; r < p->nrows; r++)
		for (size_t t = 0; t < T; t++) {
			double c = 0;
			for (uint32_t g = 0; g < G; g++)
				if (p->rowm[r] >> g & 1)
					c += p->cfree[g * T + t];
			p->rcap[r * T + t] = c;
		}
	plan_in in = {.nj = nj, .nr = nrun, .jobs = p->order, .run = run, .rcost = rcost};
	int *slot = malloc((nj + 1) * sizeof *slot), *gslot = malloc((nj + 1) * sizeof *gslot);
	int *kind = calloc(nj + 1, sizeof *kind), *gkind = calloc(nj + 1, sizeof *gkind);
	pjob **js = malloc((nj + 1) * sizeof *js);
	bool *pre = calloc(nrun + 1, sizeof *pre);
	int rc = RUSK_ENOMEM;
	if (slot == NULL || gslot == NULL || kind == NULL || gkind == NULL || js == NULL ||
	    pre == NULL)
		goto out;
	if ((rc = greedy(p, &in, gslot, gkind)) != RUSK_OK)
		goto out;
	memcpy(slot, gslot, nj * sizeof *slot);
	memcpy(kind, gkind, nj * sizeof *kind);
	rusk_plan_how how = RUSK_PLAN_HOW_NONE;
	uint32_t nopt = 0;
	if (nj > 0 && p->p.milp)
		how = solve_milp_env(p, &in, gslot, gkind, slot, kind, pre, &nopt, bg);
	else if (nj > 0)
		how = RUSK_PLAN_HOW_GREEDY;
	if (info != NULL) {
		bool *gpre = calloc(nrun + 1, sizeof *gpre);
		info->how = how;
		info->planned = (uint32_t)nj;
		info->options = nopt;
		info->utility = plan_value(p, &in, slot, kind, pre);
		info->greedy_utility = gpre != NULL ? plan_value(p, &in, gslot, gkind, gpre) : NAN;
		free(gpre);
	}
	p->st.how[how]++;
	if (nj > 0)
		p->st.planned_ticks++;
	for (size_t r = 0; r < nrun; r++)
		if (pre[r])
			preempt_job(p, &p->jobs[run[r]], out, n);
	size_t ns = 0;
	for (size_t a = 0; a < nj; a++)
		if (slot[a] == 0) {
			kind[ns] = kind[a];
			js[ns++] = &p->jobs[p->order[a]];
		}
	if (p->p.groups > 0 && !p->p.placement_blind &&
	    (rc = place_flow(p, js, kind, ns)) != RUSK_OK)
		goto out;
	for (size_t a = 0; a < ns; a++) {
		if (p->p.groups > 0 && p->p.placement_blind)
			place_seq(p, js[a]);
		start_job(p, js[a], now, out, n);
	}
	rc = RUSK_OK;
out:
	free(slot);
	free(gslot);
	free(kind);
	free(gkind);
	free(js);
	free(pre);
	free(run);
	free(rcost);
	return rc;
}

RUSK_EXPORT int rusk_plan_tick(rusk_plan *p, double now, uint32_t free_cores, rusk_plan_action *out,
                               size_t cap, size_t *n, rusk_plan_tick_info *info)
{
	if (p == NULL || n == NULL || !isfinite(now) || now < p->last_now ||
	    free_cores > p->p.capacity || (out == NULL && p->n > 0))
		return RUSK_EINVAL;
	if (p->p.groups > 0) { /* the planner places: the caller's pool must agree */
		uint64_t held = 0;
		for (size_t i = 0; i < p->n; i++)
			held += p->jobs[i].running ? p->jobs[i].cores : 0;
		if (held + free_cores != p->p.capacity)
			return RUSK_EINVAL;
	}
	*n = 0;
	if (cap < p->n)
		return RUSK_ERANGE;
	if (grow_scratch(p) != RUSK_OK)
		return RUSK_ENOMEM;
	budget bg = {.pp = &p->p};
	if (!budget_modelled(&bg))
		bg.t0 = wall_s();
	p->last_now = now;
	p->st.ticks++;
	if (info != NULL)
		*info = (rusk_plan_tick_info){.how = RUSK_PLAN_HOW_NONE};
	uint32_t freed = drop_late(p, now, out, n);
	uint64_t fc = (uint64_t)free_cores + freed;
	free_cores = fc > p->p.capacity ? p->p.capacity : (uint32_t)fc;
	if (p->p.groups > 0)
		count_gfree(p);
	int rc;
	if (p->p.mode == RUSK_PLAN_PRIO || p->p.mode == RUSK_PLAN_FIFO) {
		rc = tick_simple(p, now, free_cores, out, n);
		p->st.how[RUSK_PLAN_HOW_NONE]++;
	} else {
		rc = tick_plan(p, now, free_cores, out, n, info, &bg);
	}
	double dt = budget_used_s(&bg); /* wall, or the solver's modelled time */
	p->st.solve_s_sum += dt;
	p->st.solve_s_max = fmax(p->st.solve_s_max, dt);
	p->st.iterations += bg.iters;
	p->st.nodes += bg.nodes;
	if (info != NULL) {
		info->solve_s = dt;
		info->iterations = bg.iters;
		info->nodes = bg.nodes;
	}
	return rc;
}
