/* SPDX-License-Identifier: MIT */
/*
 * `rusk plan`: 3σSched against its baselines on an E2E-like workload, in virtual time
 * (3Sigma §5-6: Fig. 6/7's SLO miss rate, goodput and BE latency; Fig. 8's slack sweep).
 *
 * Workload: the E2E-like generator (bench/workload/e2e.c), seeded. Its first --train jobs pre-train
 * the predictor (the paper pre-trains 3σPredict "to produce steady-state estimates"); the
 * next --jobs jobs are the run, their submissions shifted to start at 0. Jobs of the
 * generator's SLO classes (queue 0) get deadlines, submit + run x (1 + slack), slack drawn
 * from 20/40/60/80% or --slack P for all; the others are best effort. Submission times are
 * then scaled so that the offered load is --load (1.4) of --cores; jobs wider than the
 * cluster are left out (the paper filters jobs larger than its 256 nodes), counted.
 *
 * The loop is this file's own discrete-event loop, not the kernel's agents: one pool of
 * --cores cores (a job of k cores takes k of them, wherever; with --prefer, --groups equal
 * groups of them, a job taking the cores the planner placed it on, rusk_plan_placement,
 * and an SLO job preferring round(F x groups) of them, 1.5x longer off them), arrivals, completions
 * at start + true runtime, and a planner tick every --tick-s seconds while the planner holds jobs.
 * Each tick's actions are applied at once: starts take cores, preemptions give them back (the job
 * restarts from scratch later), drops and kills end SLO jobs as misses. The predictor is updated
 * online at each completion (not at kills or preemptions: their runtime is not known). The run ends
 * when every job is resolved, or --drain-s after the last arrival (BE jobs still pending or running
 * then are "unfinished").
 *
 * Metrics (3Sigma §5): SLO miss rate (SLO jobs not done by their deadline, of all SLO
 * jobs), goodput (machine-hours, cores x runtime / 3600, of SLO jobs done in time and of
 * BE jobs done), mean BE latency (completion - submission of the BE jobs done), and the
 * planner's solve time and how its plans were made (MILP, MILP at the time budget, greedy
 * fallbacks).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/plan.h>

#include "base/rng.h"
#include "cli.h"
#include "outfile.h"
#include "workload/jobtrace.h"

enum { ST_FUTURE, ST_PENDING, ST_RUNNING, ST_DONE, ST_DROPPED, ST_KILLED };

typedef struct sjob {
	const rusk_tjob *t;
	int state;
	double start, end;
	uint32_t preempts;
	uint32_t prefer;                      /* --prefer: preferred groups (SLO jobs) */
	uint32_t alloc[RUSK_PLAN_MAX_GROUPS]; /* --prefer, running: cores per group */
} sjob;

typedef struct plan_opts {
	uint64_t seed, jobs, train, cores;
	double slack; /* < 0: mix of 20/40/60/80 */
	double load, tick_s, slot_s, budget_ms, drain_s, max_run_s;
	double high_cov;         /* --high-cov-share: classes with CoV > 1 */
	int keep_late;           /* --late keep: prio and fifo run late SLO jobs on */
	double prefer, slowdown; /* --prefer F: SLO jobs prefer F of the groups (0: one pool) */
	uint64_t groups;         /* --groups: the cores in this many equal groups */
	int blind;               /* --placement blind: the planners plan one pool */
	uint64_t slots, max_jobs;
	bool greedy_only, quiet;
	int wall; /* --solver-clock wall: the budget in wall time (not reproducible) */
	int oe;   /* -1: each mode's default (3Sigma Table 1); else a rusk_plan_oe */
	const char *json;
} plan_opts;

typedef struct result {
	rusk_plan_mode mode;
	uint64_t slo_jobs, slo_met, slo_dropped, slo_killed, slo_late;
	uint64_t be_jobs, be_done, be_unfinished;
	double be_lat_sum, good_slo_mh, good_be_mh, wasted_mh, end_s;
	uint64_t est_n, est_over2, est_under2; /* point estimates off by 2x or more */
	uint64_t slo_starts, slo_slow; /* --prefer: SLO starts, those on non-preferred cores */
	rusk_plan_stats st;
} result;

typedef struct workload {
	rusk_jobtrace all;
	size_t first;    /* index of the first simulated job */
	size_t n;        /* simulated jobs kept */
	size_t filtered; /* left out: wider than the cluster */
	const rusk_tjob **jobs;
	double load, slo_load, scale, span;
} workload;

static void plan_usage(void)
{
	puts("usage: rusk plan [options]\n"
	     "\n"
	     "3σSched (3Sigma §3-4: expected utility over runtime distributions, MILP with a\n"
	     "time budget and a greedy fallback) against PointPerfEst, PointRealEst, Prio and\n"
	     "FIFO on an E2E-like workload, in virtual time, the predictor learning online.\n"
	     "\n"
	     "  --sched M        3sigma, point-real, point-perfect, prio, fifo or all (default)\n"
	     "  --seed S         workload seed (default 1)\n"
	     "  --jobs N         jobs generated for the run (default 600, as the paper's 2-hour\n"
	     "                   E2E; those left out below are counted)\n"
	     "  --train N        jobs that pre-train the predictor first (default 3000)\n"
	     "  --slack P        deadline slack in percent for every SLO job, or mix (default:\n"
	     "                   drawn from 20/40/60/80, 3Sigma §5)\n"
	     "  --cores C        cluster size in cores (default 256)\n"
	     "  --load L         offered load (default 1.4; SLO jobs are about half of it)\n"
	     "  --tick-s T       scheduling cycle in virtual seconds (default 10)\n"
	     "  --slot-s T       plan-ahead slot (default 60)\n"
	     "  --slots K        plan-ahead window in slots (default 16)\n"
	     "  --max-jobs K     pending jobs planned per cycle (default 32)\n"
	     "  --budget-ms B    solver time budget per cycle (default 100), spent in modelled\n"
	     "                   time: each simplex iteration and branch-and-cut node costs\n"
	     "                   what it took on average on the development machine, so a\n"
	     "                   seed gives the same bytes on any machine under any load\n"
	     "  --solver-clock modelled|wall  wall: spend the budget in wall time instead\n"
	     "                   (the plan then depends on the machine and its load)\n"
	     "  --greedy         never the MILP, always the greedy plan\n"
	     "  --oe off|adaptive|always  over-estimate handling in every planning mode\n"
	     "                   (default: adaptive for 3sigma, off for the point modes, as\n"
	     "                   3Sigma Table 1; 3sigma --oe off is Fig. 8's 3SigmaNoOE,\n"
	     "                   always its 3SigmaNoAdapt, point-real --oe adaptive its\n"
	     "                   3SigmaNoDist)\n"
	     "  --drain-s T      run at most this long after the last arrival (default 14400)\n"
	     "  --max-run-s T    leave out jobs running longer (default 3600, see below)\n"
	     "  --late drop|keep prio and fifo: drop (default) SLO jobs past their deadline,\n"
	     "                   as the planners do, or keep them running to completion as\n"
	     "                   a scheduler that knows no deadlines would\n"
	     "  --high-cov-share X  share of the generator's job classes with CoV > 1\n"
	     "                   (default 0.4; lower: fewer badly mis-estimated jobs)\n"
	     "  --prefer F       SLO jobs prefer a random share F of the --groups groups of\n"
	     "                   cores and run --slowdown x longer when any of their cores is\n"
	     "                   in another (3Sigma §5: 0.75, 1.5); the planning modes choose\n"
	     "                   between starting on the preferred groups, waiting for them\n"
	     "                   and starting anywhere (3Sigma §4.3.1); prio and fifo take\n"
	     "                   preferred free cores first, then any (default 0: one pool)\n"
	     "  --groups G       with --prefer: the cores in G equal groups, 2..8 (default 4)\n"
	     "  --placement aware|blind  with --prefer: blind plans one pool and places the\n"
	     "                   starts as prio does (the planner without placement options;\n"
	     "                   default aware)\n"
	     "  --slowdown X     runtime factor off the preferred groups (default 1.5)\n"
	     "  --json FILE      results as JSON\n"
	     "  --quiet          no table on stdout\n"
	     "\n"
	     "Jobs are SLO or BE with probability 1/2 each (an even mixture, 3Sigma §5). Jobs\n"
	     "wider than the cluster or longer than --max-run-s are left out, in the run and in\n"
	     "the pre-training alike: the generator's tail (up to days) would stretch a run at\n"
	     "load 1.4 over days of virtual time.\n"
	     "\n"
	     "exit status: 0 ok, 1 the run broke an invariant, 2 bad usage, 4 out of memory");
}

static int build_workload(const plan_opts *o, workload *w, char *err, size_t errlen)
{
	memset(w, 0, sizeof *w);
	int rc = rusk_e2e_generate_cov(o->train + o->jobs, o->seed, o->high_cov, &w->all, err,
	                               errlen);
	if (rc != RUSK_OK)
		return rc;
	w->first = o->train;
	w->jobs = malloc(o->jobs * sizeof *w->jobs);
	if (w->jobs == NULL)
		return RUSK_ENOMEM;
	/* The pre-training jobs are SLO or BE as the run's are (their queue feature); only the
	 * simulated part gets deadlines that count and the load scaling. */
	rusk_jobtrace train = {.jobs = w->all.jobs, .n = w->first, .cap = w->first};
	rusk_e2e_deadlines(&train, o->seed + 1, -1, 0.5);
	rusk_jobtrace sim = {.jobs = w->all.jobs + w->first, .n = o->jobs, .cap = o->jobs};
	double t0 = sim.jobs[0].submit_s;
	size_t k = 0;
	for (size_t i = 0; i < sim.n; i++) {
		sim.jobs[i].submit_s -= t0;
		if ((uint64_t)sim.jobs[i].procs > o->cores || sim.jobs[i].run_s > o->max_run_s ||
		    !(sim.jobs[i].run_s > 0))
			w->filtered++;
		else
			sim.jobs[k++] = sim.jobs[i];
	}
	sim.n = k;
	rusk_e2e_deadlines(&sim, o->seed, o->slack, 0.5);
	w->scale = rusk_e2e_scale_load(&sim, (uint32_t)o->cores, o->load);
	double work = 0, slo_work = 0;
	for (size_t i = 0; i < sim.n; i++) {
		w->jobs[i] = &sim.jobs[i];
		double wk = (double)sim.jobs[i].procs * sim.jobs[i].run_s;
		work += wk;
		slo_work += sim.jobs[i].deadline_s > 0 ? wk : 0;
	}
	w->n = sim.n;
	w->span = sim.n ? sim.jobs[sim.n - 1].submit_s : 0;
	w->load = w->span > 0 ? work / (o->cores * w->span) : 0;
	w->slo_load = w->span > 0 ? slo_work / (o->cores * w->span) : 0;
	return RUSK_OK;
}

static void free_workload(workload *w)
{
	free(w->jobs);
	rusk_jobtrace_free(&w->all);
}

/* Resolves job j (an SLO job done in time or not, a BE job done) into r. */
static void account_done(result *r, const sjob *j)
{
	const rusk_tjob *t = j->t;
	double mh = (double)t->procs * t->run_s / 3600;
	if (t->deadline_s > 0) {
		if (j->end <= t->deadline_s) {
			r->slo_met++;
			r->good_slo_mh += mh;
		} else {
			r->slo_late++;
		}
	} else {
		r->be_done++;
		r->be_lat_sum += j->end - t->submit_s;
		r->good_be_mh += mh;
	}
}

typedef struct sim {
	const plan_opts *o;
	const workload *w;
	rusk_plan *pl;
	rusk_predictor *pred;
	sjob *jobs;
	rusk_plan_action *acts;
	uint64_t free_cores;
	size_t live;
	result *r;
	uint32_t gfree[RUSK_PLAN_MAX_GROUPS]; /* --prefer: free cores per group */
} sim;

/* --prefer (3Sigma §5: "SLO jobs have soft placement constraints (preferred resources set
 * to a random 75% of the cluster ...). SLO jobs run 1.5x longer if scheduled on
 * non-preferred resources"), at the granularity of --groups equal groups of cores (the
 * paper's equivalence sets, §4.3.3): an SLO job prefers round(F x groups) of them, drawn
 * from (seed, job id) so that it is the same in every mode. */
static uint32_t prefer_mask(const plan_opts *o, const rusk_tjob *t)
{
	if (!(o->prefer > 0) || !(t->deadline_s > 0))
		return 0;
	uint32_t G = (uint32_t)o->groups, perm[RUSK_PLAN_MAX_GROUPS], mask = 0;
	uint32_t np = (uint32_t)llround(o->prefer * G);
	np = np < 1 ? 1 : np;
	rusk_rng r;
	rusk_rng_seed(&r, o->seed, 0x70726566u ^ (uint64_t)t->id); /* "pref" */
	for (uint32_t g = 0; g < G; g++)
		perm[g] = g;
	for (uint32_t c = 0; c < np; c++) { /* partial Fisher-Yates */
		uint32_t d = c + rusk_rng_below(&r, G - c);
		uint32_t x = perm[c];
		perm[c] = perm[d];
		perm[d] = x;
		mask |= 1u << perm[c];
	}
	return mask;
}

/* The pool follows the planner's placement of a starting job (rusk_plan_placement): its
 * cores per group, checked against the groups' free cores; a job given any core off its
 * preferred groups runs --slowdown x longer (a gang job runs at its slowest task's pace),
 * as the planner said. Returns the runtime factor, or 0 if the placement does not fit. */
static double place(sim *s, size_t id)
{
	sjob *j = &s->jobs[id];
	uint32_t G = (uint32_t)s->o->groups, got = 0, off_cores = 0;
	bool off = false;
	if (rusk_plan_placement(s->pl, id, j->alloc, RUSK_PLAN_MAX_GROUPS, &off) != RUSK_OK)
		return 0;
	for (uint32_t g = 0; g < G; g++) {
		if (j->alloc[g] > s->gfree[g])
			return 0;
		s->gfree[g] -= j->alloc[g];
		got += j->alloc[g];
		off_cores += (j->prefer >> g & 1) ? 0 : j->alloc[g];
	}
	bool slow = j->prefer != 0 && off_cores > 0;
	if (got != (uint32_t)j->t->procs || slow != off)
		return 0;
	if (j->t->deadline_s > 0) {
		s->r->slo_starts++;
		s->r->slo_slow += slow;
	}
	return slow ? s->o->slowdown : 1;
}

static void unplace(sim *s, size_t id)
{
	if (!(s->o->prefer > 0))
		return;
	for (uint32_t g = 0; g < s->o->groups; g++) {
		s->gfree[g] += s->jobs[id].alloc[g];
		s->jobs[id].alloc[g] = 0;
	}
}

static int apply(sim *s, const rusk_plan_action *a, double now)
{
	sjob *j = &s->jobs[a->id];
	uint64_t k = (uint64_t)j->t->procs;
	switch (a->act) {
	case RUSK_PLAN_START:
		if (j->state != ST_PENDING || k > s->free_cores)
			return -1;
		j->state = ST_RUNNING;
		j->start = now;
		double f = s->o->prefer > 0 ? place(s, a->id) : 1;
		if (!(f >= 1))
			return -1;
		j->end = now + j->t->run_s * f;
		s->free_cores -= k;
		break;
	case RUSK_PLAN_PREEMPT:
		if (j->state != ST_RUNNING)
			return -1;
		j->state = ST_PENDING;
		j->preempts++;
		s->free_cores += k;
		unplace(s, a->id);
		s->r->wasted_mh += (double)k * (now - j->start) / 3600;
		break;
	case RUSK_PLAN_DROP:
		if (j->state != ST_PENDING)
			return -1;
		j->state = ST_DROPPED;
		s->r->slo_dropped++;
		s->live--;
		break;
	case RUSK_PLAN_KILL:
		if (j->state != ST_RUNNING)
			return -1;
		j->state = ST_KILLED;
		s->free_cores += k;
		unplace(s, a->id);
		s->r->wasted_mh += (double)k * (now - j->start) / 3600;
		s->r->slo_killed++;
		s->live--;
		break;
	}
	return 0;
}

static int submit(sim *s, size_t i)
{
	const rusk_tjob *t = s->w->jobs[i];
	rusk_job jb;
	rusk_tjob_features(t, &jb);
	rusk_prediction pr;
	rusk_dist d;
	rusk_predict(s->pred, &jb, &pr, &d);
	s->r->est_n++;
	s->r->est_over2 += pr.estimate_s >= 2 * t->run_s;
	s->r->est_under2 += 2 * pr.estimate_s <= t->run_s;
	rusk_plan_job pj = {.id = i,
	                    .cores = (uint32_t)t->procs,
	                    .submit_s = t->submit_s,
	                    .deadline_s = t->deadline_s,
	                    .estimate_s = pr.estimate_s,
	                    .true_run_s = t->run_s,
	                    .dist = &d,
	                    .prefer = s->jobs[i].prefer};
	s->jobs[i].state = ST_PENDING;
	return rusk_plan_submit(s->pl, &pj);
}

/* Completions due by `now`, in end order. */
static int complete_due(sim *s, double now)
{
	for (;;) {
		sjob *best = NULL;
		for (size_t i = 0; i < s->w->n; i++)
			if (s->jobs[i].state == ST_RUNNING && s->jobs[i].end <= now &&
			    (best == NULL || s->jobs[i].end < best->end))
				best = &s->jobs[i];
		if (best == NULL)
			return 0;
		size_t id = (size_t)(best - s->jobs);
		best->state = ST_DONE;
		s->free_cores += (uint64_t)best->t->procs;
		unplace(s, id);
		s->live--;
		account_done(s->r, best);
		if (rusk_plan_complete(s->pl, id, best->end) != RUSK_OK)
			return -1;
		rusk_job jb;
		rusk_tjob_features(best->t, &jb);
		rusk_predict_update(s->pred, &jb, best->t->run_s);
	}
}

static double next_end(const sim *s)
{
	double e = INFINITY;
	for (size_t i = 0; i < s->w->n; i++)
		if (s->jobs[i].state == ST_RUNNING)
			e = fmin(e, s->jobs[i].end);
	return e;
}

/* Runs one mode over the workload. 0, -1 an invariant broke, RUSK_ENOMEM. */
static int run_mode(const plan_opts *o, const workload *w, rusk_plan_mode m, result *r)
{
	memset(r, 0, sizeof *r);
	r->mode = m;
	rusk_plan_params pp;
	rusk_plan_params_init(&pp, m, (uint32_t)o->cores);
	pp.slot_s = o->slot_s;
	pp.slots = (uint32_t)o->slots;
	pp.max_jobs = (uint32_t)o->max_jobs;
	pp.budget_s = o->budget_ms / 1e3;
	if (!o->wall) { /* virtual time: the solver's work, not the clock, spends it */
		pp.iteration_s = RUSK_PLAN_ITERATION_S;
		pp.node_s = RUSK_PLAN_NODE_S;
	}
	pp.milp = !o->greedy_only;
	pp.keep_late = o->keep_late && (m == RUSK_PLAN_PRIO || m == RUSK_PLAN_FIFO);
	if (o->oe >= 0)
		pp.oe = (rusk_plan_oe)o->oe;
	if (o->prefer > 0) {
		pp.groups = (uint32_t)o->groups;
		pp.slowdown = o->slowdown;
		pp.placement_blind = o->blind && m != RUSK_PLAN_PRIO && m != RUSK_PLAN_FIFO;
	}
	rusk_predict_params qp;
	rusk_predict_params_init(&qp);
	qp.init_values = 4096;
	sim s = {.o = o, .w = w, .free_cores = o->cores, .live = w->n, .r = r};
	char err[256];
	int rc = RUSK_ENOMEM;
	s.jobs = calloc(w->n + 1, sizeof *s.jobs);
	s.acts = malloc((w->n + 1) * sizeof *s.acts);
	for (uint64_t g = 0; o->prefer > 0 && g < o->groups; g++)
		s.gfree[g] = (uint32_t)((g + 1) * o->cores / o->groups - g * o->cores / o->groups);
	if (s.jobs == NULL || s.acts == NULL || rusk_plan_create(&pp, &s.pl, err, sizeof err) ||
	    rusk_predict_create(&qp, &s.pred, err, sizeof err))
		goto out;
	for (size_t i = 0; i < w->first; i++) {
		if (w->all.jobs[i].run_s > o->max_run_s || !(w->all.jobs[i].run_s > 0))
			continue; /* never on this cluster, as in the run */
		rusk_job jb;
		rusk_tjob_features(&w->all.jobs[i], &jb);
		rusk_predict_update(s.pred, &jb, w->all.jobs[i].run_s);
	}
	for (size_t i = 0; i < w->n; i++) {
		s.jobs[i].t = w->jobs[i];
		s.jobs[i].prefer = prefer_mask(o, w->jobs[i]);
		r->slo_jobs += w->jobs[i]->deadline_s > 0;
		r->be_jobs += !(w->jobs[i]->deadline_s > 0);
	}
	double now = 0, next_tick = 0, end = w->span + o->drain_s;
	size_t arrived = 0;
	rc = -1;
	while (s.live > 0 && now <= end) {
		if (complete_due(&s, now) != 0)
			goto out;
		while (arrived < w->n && w->jobs[arrived]->submit_s <= now)
			if (submit(&s, arrived++) != RUSK_OK)
				goto out;
		if (now >= next_tick && rusk_plan_size(s.pl) > 0) {
			size_t na;
			if (rusk_plan_tick(s.pl, now, (uint32_t)s.free_cores, s.acts, w->n + 1, &na,
			                   NULL) != RUSK_OK)
				goto out;
			for (size_t a = 0; a < na; a++)
				if (apply(&s, &s.acts[a], now) != 0)
					goto out;
			next_tick = now + o->tick_s;
		} else if (now >= next_tick) {
			next_tick = now + o->tick_s;
		}
		double t = fmin(next_end(&s), end + 1);
		if (arrived < w->n)
			t = fmin(t, w->jobs[arrived]->submit_s);
		if (rusk_plan_size(s.pl) > 0)
			t = fmin(t, fmax(next_tick, now));
		if (!(t > now)) /* nothing left to happen but ticks at now: step */
			t = now + o->tick_s;
		now = t;
	}
	r->end_s = now;
	for (size_t i = 0; i < w->n; i++) {
		const sjob *j = &s.jobs[i];
		if (j->state == ST_PENDING || j->state == ST_RUNNING || j->state == ST_FUTURE) {
			if (j->t->deadline_s > 0)
				r->slo_late++;
			else
				r->be_unfinished++;
		}
	}
	rusk_plan_stats_get(s.pl, &r->st);
	rc = 0;
out:
	if (rc != 0 && s.pl != NULL && rc != RUSK_ENOMEM)
		fprintf(stderr, "rusk plan: %s: an invariant broke at t = %.1f s\n",
		        rusk_plan_mode_name(m), now);
	rusk_plan_destroy(s.pl);
	rusk_predict_destroy(s.pred);
	free(s.jobs);
	free(s.acts);
	return rc;
}

static double miss_rate(const result *r)
{
	return r->slo_jobs ? 100.0 * (double)(r->slo_jobs - r->slo_met) / (double)r->slo_jobs : 0;
}

static double be_latency(const result *r)
{
	return r->be_done ? r->be_lat_sum / (double)r->be_done : 0;
}

static uint64_t fallbacks(const result *r)
{
	return r->st.how[RUSK_PLAN_HOW_GREEDY_TIME] + r->st.how[RUSK_PLAN_HOW_GREEDY_FAIL];
}

static void print_table(const plan_opts *o, const workload *w, const result *rs, size_t n)
{
	printf("rusk plan: E2E-like workload, seed %" PRIu64 ", %zu jobs (%zu wider than the "
	       "cluster or longer than %.0f s left out), %" PRIu64 " pre-training; %" PRIu64
	       " cores; slack %s; "
	       "offered load %.2f (SLO %.2f) over %.0f s\n\n",
	       o->seed, w->n, w->filtered, o->max_run_s, o->train, o->cores,
	       o->slack < 0 ? "20/40/60/80%" : "fixed", w->load, w->slo_load, w->span);
	printf("  %-14s %9s %12s %12s %12s %10s %9s %8s %10s %10s\n", "scheduler", "SLO miss",
	       "goodput SLO", "goodput BE", "BE latency", "BE unfin.", "preempts", "ticks",
	       "solve ms", "fallbacks");
	for (size_t k = 0; k < n; k++) {
		const result *r = &rs[k];
		printf("  %-14s %8.1f%% %10.1f mh %10.1f mh %10.0f s %10" PRIu64 " %9" PRIu64
		       " %8" PRIu64 " %10.2f %10" PRIu64 "\n",
		       rusk_plan_mode_name(r->mode), miss_rate(r), r->good_slo_mh, r->good_be_mh,
		       be_latency(r), r->be_unfinished, r->st.preempts, r->st.ticks,
		       r->st.ticks ? 1e3 * r->st.solve_s_sum / r->st.ticks : 0.0, fallbacks(r));
	}
	printf("\n  goodput: machine-hours (cores x runtime) of SLO jobs done by their deadline "
	       "and of BE jobs done;\n  solve ms: planner time per cycle (mean; modelled unless "
	       "--solver-clock wall); fallbacks: "
	       "cycles that used the greedy plan\n  because the solver's budget (%.0f ms) ran out "
	       "or it failed.\n",
	       o->budget_ms);
	if (o->prefer > 0) {
		printf("  --prefer %g (%" PRIu64
		       " groups): SLO starts with a core off the preferred "
		       "groups (%gx longer):",
		       o->prefer, o->groups, o->slowdown);
		for (size_t k = 0; k < n; k++)
			printf(" %s %" PRIu64 "/%" PRIu64, rusk_plan_mode_name(rs[k].mode),
			       rs[k].slo_slow, rs[k].slo_starts);
		printf("\n");
	}
}

static void write_json(FILE *f, const plan_opts *o, const workload *w, const result *rs, size_t n)
{
	char groups[80] = ""; /* only with --prefer: the default's JSON stays as it was */
	if (o->prefer > 0)
		snprintf(groups, sizeof groups, "\"groups\": %" PRIu64 ", \"placement\": \"%s\", ",
		         o->groups, o->blind ? "blind" : "aware");
	fprintf(f,
	        "{\n  \"workload\": {\"generator\": \"e2e\", \"seed\": %" PRIu64 ", \"jobs\": %zu, "
	        "\"filtered\": %zu, \"train\": %" PRIu64 ", \"slack\": ",
	        o->seed, w->n, w->filtered, o->train);
	if (o->slack < 0)
		fprintf(f, "\"mix\"");
	else
		fprintf(f, "%g", o->slack);
	fprintf(f,
	        ", \"load\": %.6f, \"slo_load\": %.6f, \"span_s\": %.3f, \"time_scale\": %.6f},\n",
	        w->load, w->slo_load, w->span, w->scale);
	fprintf(f,
	        "  \"params\": {\"cores\": %" PRIu64 ", \"tick_s\": %g, \"slot_s\": %g, \"slots\": "
	        "%" PRIu64 ", \"max_jobs\": %" PRIu64 ", \"budget_ms\": %g, \"solver_clock\": "
	        "\"%s\", \"milp\": %s, "
	        "\"drain_s\": %g, \"max_run_s\": %g, \"prefer\": %g, %s\"slowdown\": %g, "
	        "\"high_cov_share\": %g, \"late\": \"%s\", "
	        "\"oe\": \"%s\"},\n  \"modes\": [\n",
	        o->cores, o->tick_s, o->slot_s, o->slots, o->max_jobs, o->budget_ms,
	        o->wall ? "wall" : "modelled", o->greedy_only ? "false" : "true", o->drain_s,
	        o->max_run_s, o->prefer, groups, o->slowdown, o->high_cov,
	        o->keep_late ? "keep" : "drop",
	        o->oe < 0    ? "default"
	        : o->oe == 0 ? "off"
	        : o->oe == 1 ? "adaptive"
	                     : "always");
	for (size_t k = 0; k < n; k++) {
		const result *r = &rs[k];
		const rusk_plan_stats *st = &r->st;
		fprintf(f,
		        "    {\"sched\": \"%s\", \"slo_jobs\": %" PRIu64 ", \"slo_met\": %" PRIu64
		        ", \"slo_miss_rate\": %.6f, \"slo_dropped\": %" PRIu64
		        ", \"slo_killed\": %" PRIu64 ", \"slo_late\": %" PRIu64
		        ", \"be_jobs\": %" PRIu64 ", \"be_done\": %" PRIu64
		        ", \"be_unfinished\": %" PRIu64 ", \"be_latency_s\": %.3f, "
		        "\"goodput_mh\": %.6f, \"goodput_slo_mh\": %.6f, \"goodput_be_mh\": %.6f, "
		        "\"wasted_mh\": %.6f, \"end_s\": %.3f, \"slo_starts\": %" PRIu64
		        ", \"slo_slow\": %" PRIu64 ", \"est_n\": %" PRIu64
		        ", \"est_over2\": %" PRIu64 ", \"est_under2\": %" PRIu64 ",\n",
		        rusk_plan_mode_name(r->mode), r->slo_jobs, r->slo_met, miss_rate(r) / 100,
		        r->slo_dropped, r->slo_killed, r->slo_late, r->be_jobs, r->be_done,
		        r->be_unfinished, be_latency(r), r->good_slo_mh + r->good_be_mh,
		        r->good_slo_mh, r->good_be_mh, r->wasted_mh, r->end_s, r->slo_starts,
		        r->slo_slow, r->est_n, r->est_over2, r->est_under2);
		fprintf(f,
		        "     \"planner\": {\"ticks\": %" PRIu64 ", \"planned_ticks\": %" PRIu64
		        ", \"milp\": %" PRIu64 ", \"milp_budget\": %" PRIu64
		        ", \"greedy_budget\": %" PRIu64 ", \"greedy_fail\": %" PRIu64
		        ", \"greedy\": %" PRIu64 ", \"fallbacks\": %" PRIu64
		        ", \"starts\": %" PRIu64 ", \"preempts\": %" PRIu64 ", \"drops\": %" PRIu64
		        ", \"kills\": %" PRIu64 ", \"ue_steps\": %" PRIu64 ", \"oe_jobs\": %" PRIu64
		        ", \"solve_ms_mean\": %.4f, \"solve_ms_max\": %.4f, \"iterations\": "
		        "%" PRIu64 ", \"nodes\": %" PRIu64 "}}%s\n",
		        st->ticks, st->planned_ticks, st->how[RUSK_PLAN_HOW_MILP],
		        st->how[RUSK_PLAN_HOW_MILP_TIME], st->how[RUSK_PLAN_HOW_GREEDY_TIME],
		        st->how[RUSK_PLAN_HOW_GREEDY_FAIL], st->how[RUSK_PLAN_HOW_GREEDY],
		        fallbacks(r), st->starts, st->preempts, st->drops, st->kills, st->ue_steps,
		        st->oe_jobs, st->ticks ? 1e3 * st->solve_s_sum / st->ticks : 0.0,
		        1e3 * st->solve_s_max, st->iterations, st->nodes, k + 1 < n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
}

int rusk_cmd_plan(int argc, char **argv)
{
	static const cli_choice scheds[] = {{"3sigma", RUSK_PLAN_3SIGMA},
	                                    {"point-real", RUSK_PLAN_POINT_REAL},
	                                    {"point-perfect", RUSK_PLAN_POINT_PERFECT},
	                                    {"prio", RUSK_PLAN_PRIO},
	                                    {"fifo", RUSK_PLAN_FIFO},
	                                    {"all", RUSK_PLAN_MODES},
	                                    {NULL, 0}};
	plan_opts o = {.seed = 1,
	               .jobs = 600,
	               .train = 3000,
	               .cores = 256,
	               .slack = -1,
	               .load = 1.4,
	               .tick_s = 10,
	               .slot_s = 60,
	               .budget_ms = 100,
	               .drain_s = 14400,
	               .max_run_s = 3600,
	               .slots = 16,
	               .max_jobs = 32,
	               .slowdown = 1.5,
	               .high_cov = RUSK_E2E_HIGH_COV_SHARE,
	               .oe = -1};
	static const cli_choice oes[] = {{"off", RUSK_PLAN_OE_OFF},
	                                 {"adaptive", RUSK_PLAN_OE_ADAPTIVE},
	                                 {"always", RUSK_PLAN_OE_ALWAYS},
	                                 {NULL, 0}};
	static const cli_choice lates[] = {{"drop", 0}, {"keep", 1}, {NULL, 0}};
	static const cli_choice clocks[] = {{"modelled", 0}, {"wall", 1}, {NULL, 0}};
	static const cli_choice placements[] = {{"aware", 0}, {"blind", 1}, {NULL, 0}};
	int placement = -1;
	int sched = RUSK_PLAN_MODES;
	const cli_opt opts[] = {
	        {CLI_CHOICE_OPT("--sched", scheds, &sched)},
	        {CLI_U64_OPT("--seed", 0, 9007199254740992.0, &o.seed)},
	        {CLI_U64_OPT("--jobs", 1, 1000000, &o.jobs)},
	        {CLI_U64_OPT("--train", 1, 10000000, &o.train)},
	        {CLI_CUSTOM_OPT("--slack", cli_opt_slack, &o.slack)},
	        {CLI_U64_OPT("--cores", 1, 1000000, &o.cores)},
	        {CLI_DOUBLE_OPT("--load", 0.01, 100, &o.load)},
	        {CLI_DOUBLE_OPT("--tick-s", 0.001, 86400, &o.tick_s)},
	        {CLI_DOUBLE_OPT("--slot-s", 0.001, 86400, &o.slot_s)},
	        {CLI_U64_OPT("--slots", 1, 256, &o.slots)},
	        {CLI_U64_OPT("--max-jobs", 1, 4096, &o.max_jobs)},
	        {CLI_DOUBLE_OPT("--budget-ms", 1, 600000, &o.budget_ms)},
	        {CLI_CHOICE_OPT("--solver-clock", clocks, &o.wall)},
	        {CLI_FLAG_OPT("--greedy", &o.greedy_only)},
	        {CLI_CHOICE_OPT("--oe", oes, &o.oe)},
	        {CLI_DOUBLE_OPT("--drain-s", 0, 1e9, &o.drain_s)},
	        {CLI_DOUBLE_OPT("--max-run-s", 1, 1e9, &o.max_run_s)},
	        {CLI_DOUBLE_OPT("--high-cov-share", 0, 1, &o.high_cov)},
	        {CLI_CHOICE_OPT("--late", lates, &o.keep_late)},
	        {CLI_DOUBLE_OPT("--prefer", 0, 1, &o.prefer)},
	        {CLI_DOUBLE_OPT("--slowdown", 1, 100, &o.slowdown)},
	        {CLI_U64_OPT("--groups", 2, RUSK_PLAN_MAX_GROUPS, &o.groups)},
	        {CLI_CHOICE_OPT("--placement", placements, &placement)},
	        {CLI_FILE_OPT("--json", &o.json)},
	        {CLI_FLAG_OPT("--quiet", &o.quiet)},
	};
	int pr = cli_parse("plan", argc, argv, NULL, opts, sizeof opts / sizeof *opts, plan_usage);
	if (pr != 0)
		return pr > 0 ? 0 : RUSK_EXIT_USAGE;
	if (o.groups != 0 && !(o.prefer > 0)) {
		fprintf(stderr, "rusk plan: --groups: only with --prefer\n");
		return RUSK_EXIT_USAGE;
	}
	if (placement >= 0 && !(o.prefer > 0)) {
		fprintf(stderr, "rusk plan: --placement: only with --prefer\n");
		return RUSK_EXIT_USAGE;
	}
	o.blind = placement == 1;
	if (o.groups == 0)
		o.groups = 4;
	if (o.prefer > 0 && o.groups > o.cores) {
		fprintf(stderr, "rusk plan: --groups: %" PRIu64 " groups of %" PRIu64 " cores\n",
		        o.groups, o.cores);
		return RUSK_EXIT_USAGE;
	}
	cli_out jo = {.flag = "--json", .path = o.json};
	int orc = cli_files_open(NULL, 0, &jo, 1);
	if (orc != 0)
		return orc;
	FILE *jf = jo.f;
	workload w;
	char err[256];
	int rc = build_workload(&o, &w, err, sizeof err);
	result rs[RUSK_PLAN_MODES];
	size_t n = 0;
	int status = 0;
	if (rc != RUSK_OK) {
		fprintf(stderr, "rusk plan: %s\n", rc == RUSK_ENOMEM ? "out of memory" : err);
		status = rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
		goto out;
	}
	for (int m = 0; m < RUSK_PLAN_MODES && status == 0; m++) {
		if (sched != RUSK_PLAN_MODES && sched != m)
			continue;
		rc = run_mode(&o, &w, (rusk_plan_mode)m, &rs[n]);
		if (rc == RUSK_ENOMEM) {
			fprintf(stderr, "rusk plan: out of memory\n");
			status = RUSK_EXIT_NOMEM;
		} else if (rc != 0) {
			status = RUSK_EXIT_FAIL;
		} else {
			n++;
		}
	}
	if (status == 0 && !o.quiet)
		print_table(&o, &w, rs, n);
	if (status == 0 && jf != NULL)
		write_json(jf, &o, &w, rs, n);
out:
	if (status != 0)
		cli_out_discard(&jo); /* a previous --json stays as it was */
	else if (cli_out_close(&jo) != 0)
		status = RUSK_EXIT_FAIL;
	free_workload(&w);
	return status;
}
