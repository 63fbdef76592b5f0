/* SPDX-License-Identifier: MIT */
/*
 * Deadline-aware job planning over runtime distributions (3Sigma §3, §4.2-4.3, "3σSched").
 *
 * A planner holds the jobs of one cluster of `capacity` cores: pending ones and running
 * ones. Jobs are SLO jobs (a deadline; utility 1 when they finish by it) or best-effort
 * (BE) jobs (a lower utility that decays linearly with their latency). The caller drives
 * it from its own loop, in its own clock (seconds):
 *
 *   rusk_plan_submit(p, &job)              a job arrives (with its runtime distribution)
 *   rusk_plan_tick(p, now, free, acts, ..) every scheduling cycle: which jobs to start now
 *                                          and which running BE jobs to preempt
 *   rusk_plan_complete(p, id, now)         a started job finished
 *
 * At each tick the planner values every start option of every pending job in a plan-ahead
 * window of `slots` slots of `slot_s` seconds: the expected utility of starting at slot s,
 * integrated over the job's runtime distribution (3Sigma Eq. 1), and its expected
 * consumption of cores in each later slot (k x P(still running), §3.2). The running jobs'
 * expected consumption, conditioned on how long they have run (Eq. 2), gives the capacity
 * expected free in each slot. A mixed-integer linear programme (GLPK) picks at most one
 * option per job, and which running BE jobs to preempt, maximising the total expected
 * utility under that capacity (§4.3.3, Eq. 3, §4.3.5); the jobs whose chosen option is
 * slot 0 start now, the others wait for the next tick, where everything is planned again.
 * The solver has a time budget; when it is spent, or the solver fails, a greedy plan is
 * used (rusk_plan_tick_info says which). core/learn/plan.c has the design note.
 *
 * Placement preferences (3Sigma §4.3.1, §4.3.3, §5): with params.groups > 0 the capacity is
 * cut into that many equal groups of cores (3Sigma's "equivalence sets", at a coarse
 * granularity) and a job may prefer some of them (rusk_plan_job.prefer); it runs
 * params.slowdown x longer when any of its cores is outside them. The planning modes give
 * each such job two placement options per start slot, on its preferred groups (runtime R)
 * or anywhere (runtime slowdown x R, valued over that longer distribution), and choose
 * between starting now off the preferred groups and waiting for them; the capacity
 * constraints are per set of groups. PRIO and FIFO stay placement-blind: they start a job
 * on its preferred groups' free cores first, then on any. With groups, the planner places
 * the jobs it starts (rusk_plan_placement says where) and counts free cores per group.
 *
 * Modes (3Sigma Table 1, and the kernel's FIFO) are the same planner fed different
 * runtime knowledge: RUSK_PLAN_3SIGMA (distributions, adaptive over-estimate handling),
 * RUSK_PLAN_POINT_REAL (the predictor's point estimate), RUSK_PLAN_POINT_PERFECT (the true
 * runtime as a point), RUSK_PLAN_PRIO (SLO jobs before BE jobs, preempting BE jobs, no
 * runtime information) and RUSK_PLAN_FIFO (arrival order, first fit).
 *
 * Threads: a planner is one caller's object; calls on one planner must not overlap.
 * Distinct planners may be used from distinct threads.
 */
#ifndef RUSK_PLAN_H
#define RUSK_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/error.h>
#include <rusk/predict.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rusk_plan_mode {
	RUSK_PLAN_3SIGMA = 0,        /* distributions; adaptive over-estimate handling */
	RUSK_PLAN_POINT_REAL = 1,    /* the job's point estimate (rusk_plan_job.estimate_s) */
	RUSK_PLAN_POINT_PERFECT = 2, /* the job's true runtime (rusk_plan_job.true_run_s) */
	RUSK_PLAN_PRIO = 3,          /* SLO before BE, then arrival order; preempts BE jobs */
	RUSK_PLAN_FIFO = 4,          /* arrival order, first fit, no preemption */
	RUSK_PLAN_MODES = 5,
} rusk_plan_mode;

/* Static names: "3sigma", "point-real", "point-perfect", "prio", "fifo"; "?" else. */
const char *rusk_plan_mode_name(rusk_plan_mode m);

/* Over-estimate handling of SLO jobs (3Sigma §4.2.2-4.2.3). */
typedef enum rusk_plan_oe {
	RUSK_PLAN_OE_OFF = 0,      /* utility 0 after the deadline */
	RUSK_PLAN_OE_ADAPTIVE = 1, /* graceful decay, only for jobs likely over-estimated */
	RUSK_PLAN_OE_ALWAYS = 2,   /* graceful decay for every SLO job */
} rusk_plan_oe;

typedef struct rusk_plan_params {
	rusk_plan_mode mode;
	uint32_t capacity;   /* cores of the cluster, >= 1 */
	uint32_t slots;      /* plan-ahead window in slots, 1..256 (default 16) */
	double slot_s;       /* a slot, and the under-estimate step unit, > 0 (default 60) */
	uint32_t max_jobs;   /* pending jobs planned per tick, most urgent first, 1..4096
	                      * (default 48); the rest wait for a later tick */
	bool milp;           /* false: always the greedy plan (default true) */
	double budget_s;     /* solver time budget per tick, >= 0.001 (default 0.2) */
	double mip_gap;      /* the solver stops within this relative gap of the best
	                      * bound, in [0, 1) (default 0.02; 3Sigma §4.3.6: the solver
	                      * spends most of its time proving optimality) */
	double be_utility;   /* a BE job's utility at latency 0, in (0, 1) (default 0.25) */
	double be_decay_s;   /* ... falls linearly to be_floor of it at this latency (3600) */
	double be_floor;     /* in [0, 1) (default 0.1): a BE job is never worthless */
	rusk_plan_oe oe;     /* over-estimate handling (default: ADAPTIVE in 3sigma mode,
	                      * OFF in the point modes, as 3Sigma Table 1) */
	double oe_utility;   /* utility just after the deadline with handling on (0.5) */
	double oe_threshold; /* ADAPTIVE: on when P(runtime <= deadline - submit) is below
	                      * this, in [0, 1] (default 0.05) */
	double preempt_cost; /* cost of preempting a running BE job, as a share of its
	                      * current utility, >= 0 (default 1) */
	bool kill_late;      /* running SLO jobs past their deadline (with over-estimate
	                      * handling: past the end of their decay) are stopped (default
	                      * true: they can no longer earn anything) */
	bool keep_late;      /* PRIO and FIFO only: SLO jobs past their deadline are neither
	                      * dropped nor killed but run to completion like any other, as
	                      * a scheduler that knows no deadlines (Borg-like) would
	                      * (default false; RUSK_EINVAL for the planning modes) */
	/* A deterministic budget (issue 29): with iteration_s > 0 the solver's work is charged
	 * in modelled time, iteration_s per simplex iteration (the branch-and-cut's included)
	 * and node_s per branch-and-cut node, and budget_s is spent in that time instead of
	 * wall time: the plan then depends only on the planner's inputs, on any machine under
	 * any load (virtual time: rusk plan, rusk sim). solve_s and the stats report the
	 * modelled time. 0 (default): wall time (rusk run). Both >= 0, finite. */
	double iteration_s;
	double node_s;
	/* Placement preferences (3Sigma §4.3.1, §5). groups: 0 (default) one pool of equal
	 * cores, today's planner; 2..RUSK_PLAN_MAX_GROUPS: the capacity cut into that many
	 * groups, group g holding cores [g C / groups, (g + 1) C / groups) (integer division),
	 * so that jobs may prefer some of them. slowdown: a job with a preference runs this
	 * many times longer when any of its cores lies outside its preferred groups, >= 1 and
	 * finite (default 1.5, 3Sigma §5). */
	uint32_t groups;
	double slowdown;
	/* groups > 0, the planning modes only: plan as if the cores were one pool and place
	 * the starts as PRIO does, preferred groups first (default false). For comparisons:
	 * the planner before it had placement options. */
	bool placement_blind;
} rusk_plan_params;

/* The most groups a planner may have: the capacity rows are per union of preferred sets,
 * at most 2^groups - 1 of them. */
#define RUSK_PLAN_MAX_GROUPS 8

/* rusk_plan_params_init: the defaults above for mode m and `capacity` cores (NULL: nothing). */
void rusk_plan_params_init(rusk_plan_params *p, rusk_plan_mode m, uint32_t capacity);

/* A job as submitted. Times are absolute seconds of the caller's clock. */
typedef struct rusk_plan_job {
	uint64_t id;           /* unique among the planner's live jobs */
	uint32_t cores;        /* 1..capacity */
	double submit_s;       /* when it arrived */
	double deadline_s;     /* > submit_s: an SLO job; 0: a BE job */
	double estimate_s;     /* point estimate (POINT_REAL; fallback when `dist` is empty) */
	double true_run_s;     /* the true runtime (POINT_PERFECT only; others must not read it) */
	const rusk_dist *dist; /* runtime distribution (3SIGMA), copied; NULL or empty: the
	                        * point estimate stands for it */
	uint32_t prefer;       /* bit g set: the job prefers group g (params.groups > 0, bits
	                        * below groups); 0 (default): no preference, the same runtime
	                        * on any core. The runtimes above are on preferred cores. */
} rusk_plan_job;

typedef struct rusk_plan rusk_plan;

/*
 * rusk_plan_create: an empty planner. RUSK_EINVAL with the parameter named in err,
 * RUSK_ENOMEM.
 */
int rusk_plan_create(const rusk_plan_params *p, rusk_plan **out, char *err, size_t errlen);
/* rusk_plan_destroy: frees everything. NULL is ignored. */
void rusk_plan_destroy(rusk_plan *p);

/*
 * rusk_plan_submit: adds a pending job (the distribution is copied and prepared once: its
 * survival at each slot and its quantiles). RUSK_EINVAL: p or j NULL, cores out of
 * 1..capacity, a preference without groups or naming a group past them, a deadline not after the
 * submission, a negative or non-finite time, a duplicate id, a distribution with more than
 * RUSK_DIST_MAX_BINS bins; RUSK_ENOMEM. The job stays pending until a tick starts or drops it.
 */
int rusk_plan_submit(rusk_plan *p, const rusk_plan_job *j);

typedef enum rusk_plan_act {
	RUSK_PLAN_START = 0,   /* start the pending job now (it is running from now on) */
	RUSK_PLAN_PREEMPT = 1, /* stop the running BE job; it is pending again (restarts) */
	RUSK_PLAN_DROP = 2,    /* the pending SLO job passed its deadline (with over-estimate
	                        * handling: the end of its decay): gone */
	RUSK_PLAN_KILL = 3,    /* the running SLO job passed it too (kill_late): gone */
} rusk_plan_act;

typedef struct rusk_plan_action {
	uint64_t id;
	rusk_plan_act act;
} rusk_plan_action;

/* How a tick's plan was made. */
typedef enum rusk_plan_how {
	RUSK_PLAN_HOW_NONE = 0,        /* nothing pending, or a mode without a plan (prio, fifo) */
	RUSK_PLAN_HOW_MILP = 1,        /* the solver's plan, optimal within mip_gap */
	RUSK_PLAN_HOW_MILP_TIME = 2,   /* budget spent; the solver's best plan beat the greedy's */
	RUSK_PLAN_HOW_GREEDY_TIME = 3, /* budget spent with nothing better: the greedy plan */
	RUSK_PLAN_HOW_GREEDY_FAIL = 4, /* the solver failed: the greedy plan */
	RUSK_PLAN_HOW_GREEDY = 5,      /* params.milp off: the greedy plan */
} rusk_plan_how;

typedef struct rusk_plan_tick_info {
	rusk_plan_how how;
	uint32_t planned;      /* pending jobs in the plan */
	uint32_t options;      /* start options with a non-zero utility (MILP columns) */
	double utility;        /* the plan's total expected utility (minus preemption costs) */
	double greedy_utility; /* the greedy plan's, for comparison */
	double solve_s;        /* wall time spent planning (valuation, solver, greedy); with a
	                        * modelled budget (iteration_s > 0) the solver's modelled time */
	uint64_t iterations;   /* simplex iterations of this tick's solver (branch-and-cut's
	                        * included) */
	uint64_t nodes;        /* branch-and-cut nodes of this tick */
} rusk_plan_tick_info;

/*
 * rusk_plan_tick: one scheduling cycle at time `now` (non-decreasing across calls) with
 * `free_cores` cores free now (the caller's truth; at most capacity). Writes the actions
 * into out[0..cap) and their number into *n (drops and kills first, then preemptions,
 * then starts); the planner's state already reflects them (started jobs are running,
 * preempted ones pending, dropped and killed ones forgotten). The starts fit in
 * free_cores plus the cores of the preempted and killed jobs. RUSK_ERANGE when cap is
 * below rusk_plan_size(p) (nothing changed), RUSK_EINVAL (p or n NULL, out NULL with jobs
 * live, now not finite or earlier than a previous tick's, free_cores above capacity),
 * RUSK_ENOMEM. info may be NULL.
 */
int rusk_plan_tick(rusk_plan *p, double now, uint32_t free_cores, rusk_plan_action *out, size_t cap,
                   size_t *n, rusk_plan_tick_info *info);

/*
 * rusk_plan_placement: where the running job `id` was started, with params.groups > 0:
 * its cores in each group into cores[0..n) (n >= groups; the rest zeroed) and, in
 * *off_pref (may be NULL), whether any of them lies outside its preferred groups (it then
 * runs params.slowdown x longer, and the planner plans with that). Valid from the tick
 * that started it until it completes, is preempted or cancelled. RUSK_EINVAL: p or cores
 * NULL, no groups, n below groups, or no running job with that id.
 */
int rusk_plan_placement(const rusk_plan *p, uint64_t id, uint32_t *cores, size_t n, bool *off_pref);

/*
 * rusk_plan_complete: the running job `id` finished at `now`; it is forgotten.
 * RUSK_EINVAL when no running job has that id (or p is NULL).
 */
int rusk_plan_complete(rusk_plan *p, uint64_t id, double now);

/*
 * rusk_plan_cancel: job `id`, pending or running, is withdrawn (its user cancelled it, the
 * cluster refused it, or it ended in the caller's loop while a tick was being planned and
 * the tick preempted it); it is forgotten without counting as a completion. RUSK_EINVAL
 * when the planner holds no job with that id.
 */
int rusk_plan_cancel(rusk_plan *p, uint64_t id);

/* rusk_plan_size: live jobs (pending + running); 0 for NULL. */
size_t rusk_plan_size(const rusk_plan *p);

typedef struct rusk_plan_stats {
	uint64_t ticks, planned_ticks; /* ticks; those that planned something */
	uint64_t how[6];               /* ticks by rusk_plan_how */
	uint64_t starts, preempts, drops, kills;
	uint64_t ue_steps;                /* under-estimate extensions (§4.2.1) */
	uint64_t oe_jobs;                 /* SLO jobs given over-estimate handling */
	double solve_s_sum, solve_s_max;  /* planning time: wall, or modelled (iteration_s) */
	uint64_t iterations, nodes;       /* the solver's simplex iterations and B&C nodes */
	uint64_t pref_starts, off_starts; /* groups: starts of jobs with a preference; those
	                                   * with a core off their preferred groups */
} rusk_plan_stats;

/* rusk_plan_stats_get: counters since creation (zeros for a NULL planner). */
void rusk_plan_stats_get(const rusk_plan *p, rusk_plan_stats *out);

/*
 * rusk_plan_expected_utility: job j's expected utility if started at `start_s`, as the
 * planner with parameters p values it (3Sigma Eq. 1 over j's distribution, or at its
 * point in the point modes). NaN for invalid parameters or job (NULL included). For tests
 * and reports.
 */
double rusk_plan_expected_utility(const rusk_plan_params *p, const rusk_plan_job *j,
                                  double start_s);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_PLAN_H */
