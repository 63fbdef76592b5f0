/* SPDX-License-Identifier: MIT */
/*
 * 3Sigma in the scheduling loop: `rusk run/sim --sched 3sigma|point-real|point-perfect|
 * prio|fifo` (3Sigma §3-4 over the kernel's agents, where `rusk plan` has its own pool).
 *
 * What changes. Without --sched an arrival goes straight to an agent's queue. With it, an
 * arrival goes to a planner (rusk/plan.h) with its runtime distribution from the predictor
 * (rusk/predict.h), read at submission from the task's features; every planning cycle the
 * planner picks which jobs start now, which BE jobs are preempted and which SLO jobs are
 * dropped (pending) or killed (running) because they can no longer make their deadline.
 * A started job is submitted to its agent, which places it with its usual sampling and
 * CAS commits; at its end the planner hears of the completion and the predictor learns
 * the runtime. The planner's capacity is the cluster's RUs (a job of k RUs uses k cores
 * in 3Sigma's terms); the free capacity handed to each cycle is the RUs not held by jobs
 * the planner started (placed or still with the agents), so the planner never starts more
 * than the cluster can hold, and the agents' placements are the real ones.
 *
 * A job's life (sjob.state): PENDING (in the planner) -> STARTED (submitted to an agent)
 * -> RUNNING (PLACED) -> DONE; PREEMPT and KILL stop the dispatched instance: ended now if
 * running (DONE), cancelled if still queued in the dispatcher (it never runs: REJECTED,
 * RUSK_ECANCELED), and only when it is being placed at that very moment, ended at its
 * PLACED with run time 0. A preempted job is PENDING again and runs from scratch when
 * restarted (3Sigma restarts preempted BE jobs), its stopped instance an "orphan" whose RUs
 * count as held until its DONE or REJECTED. An instance is the job's current one when
 * sjob.tk is its handle: a restarted job is a new submission with a new handle, so an
 * orphan's events are never taken for the current ones.
 *
 * Workloads. A trace's deadline_s column (relative to arrival) makes a task an SLO job,
 * else it is best effort. Tasks without one (the generator, or a trace without the column)
 * become SLO jobs with probability --slo-share and a deadline of arrival + duration x (1 +
 * slack), slack --slack percent or drawn from 20/40/60/80% (3Sigma §5). `--trace e2e`
 * generates 3Sigma's E2E-like workload (bench/workload/e2e.c): --e2e-train jobs pre-train the
 * predictor, the next --e2e-jobs are the run (jobs wider than the cluster or longer than
 * one hour left out, as `rusk plan`), their submissions scaled so that the offered load is
 * --offered-load of the cluster's RUs. Features for the predictor: user and job name (CSV
 * columns or the generator's), RUs requested, and the queue, SLO (0) or BE (1).
 *
 * Time. The planner reasons in the run's seconds; its slot (--plan-slot-s, default 60)
 * and cycle (--plan-tick-s, default 10) are 3Sigma's in trace seconds and are divided by
 * the run's time scale, like the trace's times; with the generator (no trace), the slot
 * is 2 x --task-ms and the cycle a sixth of it. The run goes on up to --drain-s (default
 * 14,400 trace seconds; 30 s with the generator) after the last arrival, to resolve the
 * planner's jobs; what is left then is counted unfinished (an SLO job as a miss).
 *
 * Cycles. A cycle whose inputs did not change since the last one (no arrival, no end, the
 * same free RUs, no action taken last time, no SLO deadline passed; the MILP modes: within
 * one plan slot) is skipped (unchanged()): a saturated trace otherwise spent its time in
 * MILP cycles that could not start anything. Prio and fifo decide as without skipping.
 *
 * Metrics, as `rusk plan` (3Sigma §5): SLO miss rate (SLO jobs not done by their deadline:
 * late, dropped, killed, refused or unfinished), goodput in RU-hours of trace time (SLO jobs
 * done in time and BE jobs done), mean BE latency (trace seconds), preemptions and the
 * work they threw away, and the hand-off from the planner's start to the agents'
 * placement. Threads: every entry point takes the module's mutex (recursive: a stop or a
 * refused submission delivers its event on the calling thread, inside a cycle).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/plan.h>
#include <rusk/predict.h>

#include "base/heap.h"
#include "base/rng.h"
#include "runstate.h"
#include "workload/jobtrace.h"

enum { SJ_NEW, SJ_PENDING, SJ_STARTED, SJ_RUNNING, SJ_DONE, SJ_DROPPED, SJ_KILLED, SJ_REFUSED };

typedef struct idlist {
	uint64_t *a;
	size_t n, cap;
} idlist;

typedef struct sjob {
	rusk_dtask_spec spec;
	rusk_dtask_id tk; /* the dispatched instance's handle (STARTED, RUNNING); 0 else */
	rusk_job feat;
	double submit_s, deadline_s, run_s; /* run clock, seconds; deadline 0: BE */
	double start_s, placed_s;           /* the current instance's */
	uint32_t agent, preempts;
	uint8_t state;
} sjob;

typedef struct sched_res {
	uint64_t slo_jobs, slo_met, slo_late, slo_dropped, slo_killed, slo_refused;
	uint64_t be_jobs, be_done, be_refused, be_unfinished, slo_unfinished;
	uint64_t starts, preempts, orphans;
	double good_slo_rh, good_be_rh, wasted_rh; /* RU-hours, trace time */
	double be_lat_sum;                         /* trace seconds */
	double handoff_sum, handoff_max;           /* start -> PLACED, run seconds */
	uint64_t handoffs;
	uint64_t pred_expert, pred_global, pred_none;
} sched_res;

/* A live SLO job's deadline (run seconds), for the cycles' time trigger. */
typedef struct sdl {
	double t;
	uint64_t id;
} sdl;
static inline bool sdl_before(const sdl *x, const sdl *y)
{
	return x->t < y->t || (x->t == y->t && x->id < y->id);
}
HEAP_DEFINE(sdl_heap, sdl, sdl_before)

/* What the last planning cycle saw and did (drv_sched_tick: a cycle with nothing new is
 * skipped). */
typedef struct cycle_state {
	bool ran;         /* a cycle has run */
	double at_s;      /* its time (run seconds) */
	uint64_t free;    /* the free RUs it was given */
	size_t acted;     /* the actions it took */
	uint64_t skipped; /* cycles skipped since the start */
} cycle_state;

struct drv_sched {
	pthread_mutex_t mu;
	rusk_plan *pl;
	rusk_predictor *pred;
	rusk_plan_params pp;
	sjob *jobs;
	size_t n, cap;
	rusk_plan_action *acts; /* the cycle's (only its caller touches it) */
	size_t acts_cap;
	/* Since the last cycle, under mu: arrivals for the planner, and jobs it must forget
	 * (done, refused); the cycle swaps them with spare, its own. */
	idlist arrived, ended, spare[2];
	uint64_t capacity, held; /* RUs: the cluster's; held by dispatched instances */
	uint64_t live;           /* jobs not yet resolved */
	double scale;            /* trace seconds per run second */
	rusk_rng rng;            /* deadlines of tasks without one */
	/* --trace e2e: pre-training runtimes (trace seconds) and their features */
	rusk_tjob *train;
	size_t n_train, e2e_filtered;
	double e2e_load, e2e_slo_load, e2e_scale;
	bool draw;        /* deadlines drawn for arrivals without one */
	double slo_share; /* ... for this share of them */
	bool mu_init;     /* mu was initialised (drv_sched_setup) */
	bool closed;      /* drv_sched_close: the run is over */
	bool failed;
	sched_res r;
	sdl_heap deadlines; /* SLO jobs given to the planner (resolved ones popped lazily) */
	cycle_state cy;     /* the cycles' own thread only */
};

/* The planner's clock: the cluster's, in seconds (only differences matter to it). */
static double now_s(const drv_sched *s, uint64_t now)
{
	(void)s;
	return (double)now / 1e9;
}

/* ---- --trace e2e ---------------------------------------------------------------------- */

static int e2e_build(run *R, drv_sched *s, rusk_arrival **out, size_t *n, char *err, size_t errlen)
{
	const run_cfg *cfg = &R->cfg;
	rusk_jobtrace all;
	int rc = rusk_e2e_generate(cfg->e2e_train + cfg->e2e_jobs, R->seed, &all, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	uint64_t cores = rusk_cluster_rus(R->c);
	rusk_jobtrace train = {.jobs = all.jobs, .n = cfg->e2e_train, .cap = cfg->e2e_train};
	double share = cfg->slo_share >= 0 ? cfg->slo_share : 0.5;
	rusk_e2e_deadlines(&train, R->seed + 1, -1, share);
	rusk_jobtrace sim = {.jobs = all.jobs + cfg->e2e_train, .n = cfg->e2e_jobs};
	double t0 = sim.jobs[0].submit_s;
	size_t k = 0;
	for (size_t i = 0; i < sim.n; i++) {
		rusk_tjob *t = &sim.jobs[i];
		t->submit_s -= t0;
		if ((uint64_t)t->procs > cores || t->run_s > 3600 || !(t->run_s > 0))
			s->e2e_filtered++;
		else
			sim.jobs[k++] = *t;
	}
	sim.n = k;
	rusk_e2e_deadlines(&sim, R->seed, cfg->slack, share);
	s->e2e_scale = rusk_e2e_scale_load(&sim, (uint32_t)cores, cfg->offered_load);
	rusk_arrival *a = calloc(k ? k : 1, sizeof *a);
	s->train = malloc((cfg->e2e_train ? cfg->e2e_train : 1) * sizeof *s->train);
	if (a == NULL || s->train == NULL || k == 0) {
		free(a);
		rusk_jobtrace_free(&all);
		snprintf(err, errlen, k == 0 ? "e2e: every job was left out" : "out of memory");
		return k == 0 ? RUSK_EINVAL : RUSK_ENOMEM;
	}
	double work = 0, slo_work = 0;
	for (size_t i = 0; i < k; i++) {
		const rusk_tjob *t = &sim.jobs[i];
		a[i].t_s = t->submit_s;
		a[i].duration_s = t->run_s;
		a[i].rus = (uint32_t)t->procs;
		a[i].user = (uint32_t)(t->user + 1); /* 0 means "none" in an arrival */
		a[i].job_name = (uint32_t)(t->exe + 1);
		a[i].deadline_s = t->deadline_s > 0 ? t->deadline_s - t->submit_s : 0;
		double wk = (double)t->procs * t->run_s;
		work += wk;
		slo_work += t->deadline_s > 0 ? wk : 0;
	}
	for (size_t i = 0; i < cfg->e2e_train; i++)
		if (all.jobs[i].run_s > 0 && all.jobs[i].run_s <= 3600)
			s->train[s->n_train++] = all.jobs[i];
	double span = a[k - 1].t_s > 0 ? a[k - 1].t_s : 1;
	s->e2e_load = work / ((double)cores * span);
	s->e2e_slo_load = slo_work / ((double)cores * span);
	rusk_jobtrace_free(&all);
	*out = a;
	*n = k;
	return RUSK_OK;
}

int drv_sched_e2e(run *R, rusk_arrival **out, size_t *n, char *err, size_t errlen)
{
	if (R->sched == NULL) {
		R->sched = calloc(1, sizeof *R->sched);
		if (R->sched == NULL) {
			snprintf(err, errlen, "out of memory");
			return RUSK_ENOMEM;
		}
	}
	return e2e_build(R, R->sched, out, n, err, errlen);
}

/* ---- set-up --------------------------------------------------------------------------- */

/* The arrival's features for the predictor: a CSV's user and job_name ids (hashes) and the
 * generator's, its RUs, and SLO (0) or BE (1) as the queue. */
static void features(const rusk_arrival *x, bool slo, rusk_job *f)
{
	rusk_job_init(f);
	if (x->user != 0)
		f->user = x->user;
	if (x->job_name != 0)
		f->name = x->job_name;
	f->resources = x->rus;
	f->queue = slo ? 0 : 1;
}

static int sched_setup(run *R, const drv_setup_in *in)
{
	(void)in;
	const run_cfg *cfg = &R->cfg;
	if (cfg->sched < 0)
		return 0;
	drv_sched *s = R->sched;
	if (s == NULL && (s = R->sched = calloc(1, sizeof *s)) == NULL)
		goto nomem;
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&s->mu, &ma);
	s->mu_init = true;
	pthread_mutexattr_destroy(&ma);
	s->capacity = rusk_cluster_rus(R->c);
	s->scale = R->trace != NULL ? cfg->trace_scale : 1;
	rusk_rng_seed(&s->rng, R->seed, 0x736c6f); /* "slo" */
	/* Deadlines are drawn for the generator's tasks, and for a trace's tasks without one
	 * only when --slo-share is given; else a trace task without a deadline is BE. */
	bool e2e = cfg->trace != NULL && strcmp(cfg->trace, "e2e") == 0; /* its own deadlines */
	s->draw = R->trace == NULL || (cfg->slo_share >= 0 && !e2e);
	s->slo_share = cfg->slo_share >= 0 ? cfg->slo_share : 0.5;
	rusk_plan_params_init(&s->pp, (rusk_plan_mode)cfg->sched, (uint32_t)s->capacity);
	double slot = cfg->plan_slot_s > 0 ? cfg->plan_slot_s / s->scale
	              : R->trace != NULL   ? 60 / s->scale
	                                   : 2 * cfg->task_ms / 1e3;
	s->pp.slot_s = slot;
	s->pp.budget_s = cfg->plan_budget_ms / 1e3;
	if (cfg->sim) { /* virtual time: the budget in modelled solver time (cli.h) */
		s->pp.iteration_s = RUSK_PLAN_ITERATION_S;
		s->pp.node_s = RUSK_PLAN_NODE_S;
	}
	char err[256];
	int rc = rusk_plan_create(&s->pp, &s->pl, err, sizeof err);
	if (rc != RUSK_OK) {
		fprintf(stderr, "rusk: --sched: %s\n", err);
		return rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
	}
	rusk_predict_params qp;
	rusk_predict_params_init(&qp);
	qp.init_values = 4096;
	if (rusk_predict_create(&qp, &s->pred, err, sizeof err) != RUSK_OK)
		goto nomem;
	for (size_t i = 0; i < s->n_train; i++) { /* --trace e2e: steady-state estimates */
		rusk_arrival x = {.rus = (uint32_t)s->train[i].procs,
		                  .user = (uint32_t)(s->train[i].user + 1),
		                  .job_name = (uint32_t)(s->train[i].exe + 1)};
		rusk_job f;
		features(&x, s->train[i].deadline_s > 0, &f);
		rusk_predict_update(s->pred, &f, s->train[i].run_s / s->scale);
	}
	free(s->train);
	s->train = NULL;
	s->cap = R->n_tasks_cap > 0 ? R->n_tasks_cap : 1024;
	s->jobs = calloc(s->cap, sizeof *s->jobs);
	s->acts_cap = 1024;
	s->acts = malloc(s->acts_cap * sizeof *s->acts);
	if (s->jobs == NULL || s->acts == NULL)
		goto nomem;
	return 0;
nomem:
	fprintf(stderr, "rusk: --sched: out of memory\n");
	return RUSK_EXIT_NOMEM;
}

uint64_t drv_sched_tick_ns(const run *R)
{
	const drv_sched *s = R->sched;
	double t = R->cfg.plan_tick_s > 0 ? R->cfg.plan_tick_s / s->scale
	           : R->trace != NULL     ? 10 / s->scale
	                                  : s->pp.slot_s / 20;
	uint64_t ns = (uint64_t)llround(t * 1e9);
	return ns > 0 ? ns : 1;
}

double drv_sched_drain_s(const run *R)
{
	if (R->cfg.drain_s >= 0)
		return R->trace != NULL ? R->cfg.drain_s / R->cfg.trace_scale : R->cfg.drain_s;
	return R->trace != NULL ? 14400 / R->cfg.trace_scale : 30;
}

/* ---- arrivals, cycles, events ------------------------------------------------------- */

/* The deadline of an arrival without one: SLO with probability --slo-share, slack
 * --slack percent or drawn from 20/40/60/80% (3Sigma §5). Relative, run seconds. */
static double draw_deadline(drv_sched *s, const run_cfg *cfg, double run_s)
{
	if (!(rusk_rng_unit(&s->rng) < s->slo_share))
		return 0;
	static const double mix[4] = {20, 40, 60, 80};
	double slack = cfg->slack >= 0 ? cfg->slack : mix[rusk_rng_below(&s->rng, 4)];
	return run_s * (1 + slack / 100);
}

static void fail(run *R, drv_sched *s, const char *what)
{
	if (!s->failed)
		fprintf(stderr, "rusk: --sched: %s\n", what);
	s->failed = true;
	drv_fail(R, what);
}

/* Appends v to a growing id list (under mu). */
static bool push_id(idlist *l, uint64_t v)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		uint64_t *a = realloc(l->a, cap * sizeof *a);
		if (a == NULL)
			return false;
		l->a = a;
		l->cap = cap;
	}
	l->a[l->n++] = v;
	return true;
}

void drv_sched_arrival(run *R, const rusk_arrival *x, rusk_dtask_spec *spec, uint32_t agent,
                       uint64_t now)
{
	drv_sched *s = R->sched;
	pthread_mutex_lock(&s->mu);
	if (s->n == s->cap) {
		size_t cap = 2 * s->cap;
		sjob *nj = realloc(s->jobs, cap * sizeof *nj);
		if (nj == NULL) {
			pthread_mutex_unlock(&s->mu);
			drv_oom_exit("growing the planner's jobs");
		}
		s->jobs = nj;
		s->cap = cap;
	}
	size_t id = s->n;
	if (!push_id(&s->arrived, id)) {
		pthread_mutex_unlock(&s->mu);
		drv_oom_exit("growing the planner's arrivals");
	}
	s->n++;
	sjob *j = &s->jobs[id];
	memset(j, 0, sizeof *j);
	j->spec = *spec;
	j->spec.user = (void *)(uintptr_t)(id + 1);
	j->agent = agent;
	j->state = SJ_NEW;
	j->submit_s = now_s(s, now);
	j->run_s = x->duration_s;
	double rel = x->deadline_s > 0 ? x->deadline_s
	             : s->draw         ? draw_deadline(s, &R->cfg, x->duration_s)
	                               : 0;
	j->deadline_s = rel > 0 ? j->submit_s + rel : 0;
	features(x, rel > 0, &j->feat);
	if (j->deadline_s > 0)
		s->r.slo_jobs++;
	else
		s->r.be_jobs++;
	s->live++;
	pthread_mutex_unlock(&s->mu);
}

/* The job is lost (refused by the planner or the dispatcher): counted, and (when the
 * planner holds it, `held`: it was started) the planner forgets it at its next cycle.
 * Under mu. */
static void refuse(drv_sched *s, sjob *j, bool held)
{
	if (held)
		s->held -= j->spec.rus;
	j->tk = 0;
	j->state = SJ_REFUSED;
	s->live--;
	if (j->deadline_s > 0)
		s->r.slo_refused++;
	else
		s->r.be_refused++;
	if (held && !push_id(&s->ended, (uint64_t)(j - s->jobs)))
		s->failed = true; /* reported by the next cycle */
}

static sjob *job_of(drv_sched *s, void *user)
{
	uintptr_t id = (uintptr_t)user;
	return id >= 1 && id <= s->n ? &s->jobs[id - 1] : NULL;
}

/* Stops the dispatched instance of j (PREEMPT, KILL): ended now when it runs, cancelled
 * when queued, else ended at its PLACED (drv_sched_event). Either way it is an orphan from
 * now on. */
static void stop_instance(run *R, drv_sched *s, sjob *j, uint64_t now, drv_sched_stop_fn stop,
                          void *ctx)
{
	rusk_dtask_id tk = j->tk;
	bool placed = j->state == SJ_RUNNING; /* its PLACED seen: running, or about to be */
	j->tk = 0;
	s->r.orphans++;
	double ran = j->state == SJ_RUNNING ? now_s(s, now) - j->placed_s : 0;
	s->r.wasted_rh += (double)j->spec.rus * ran * s->scale / 3600;
	stop(R, tk, placed, now, ctx);
}

/* One action of the plan, under mu. A job the planner means to preempt or kill may have
 * ended while it planned (run: the lock is not held while it solves): the action is then
 * moot, and the planner forgets the job at the next cycle (it is in s->ended). */
static void apply(run *R, drv_sched *s, const rusk_plan_action *a, uint64_t now,
                  drv_sched_start_fn start, drv_sched_stop_fn stop, void *ctx)
{
	if (a->id >= s->n) {
		fail(R, s, "the planner named a job it was never given");
		return;
	}
	sjob *j = &s->jobs[a->id];
	bool live = j->state == SJ_STARTED || j->state == SJ_RUNNING;
	switch (a->act) {
	case RUSK_PLAN_START:
		if (j->state != SJ_PENDING)
			break;
		j->state = SJ_STARTED;
		j->start_s = now_s(s, now);
		j->spec.submit_ns = now;
		s->held += j->spec.rus;
		s->r.starts++;
		/* 0: refused at submission (REJECTED was delivered, and handled, here). */
		j->tk = start(R, &j->spec, j->agent, now, ctx);
		if (j->tk == 0 && j->state == SJ_STARTED) /* refused without an event */
			refuse(s, j, true);
		break;
	case RUSK_PLAN_PREEMPT:
		if (!live)
			break;
		stop_instance(R, s, j, now, stop, ctx);
		j->state = SJ_PENDING;
		j->preempts++;
		s->r.preempts++;
		break;
	case RUSK_PLAN_DROP:
		if (j->state != SJ_PENDING)
			break;
		j->state = SJ_DROPPED;
		s->r.slo_dropped++;
		s->live--;
		break;
	case RUSK_PLAN_KILL:
		if (!live)
			break;
		stop_instance(R, s, j, now, stop, ctx);
		j->state = SJ_KILLED;
		s->r.slo_killed++;
		s->live--;
		break;
	}
}

/* The planner learns what happened since its last cycle (outside mu: only the cycle's
 * caller touches the planner): arrivals, with their prediction, and ends. */
static void feed(run *R, drv_sched *s, idlist *arr, idlist *ended, double now)
{
	double cycle_s = drv_sched_tick_ns(R) / 1e9;
	for (size_t k = 0; k < ended->n; k++) {
		uint64_t id = ended->a[k];
		/* Done or refused while running in the planner's eyes; a job preempted or killed
		 * in the same cycle as it ended is pending or gone there. */
		if (rusk_plan_complete(s->pl, id, 0) != RUSK_OK)
			rusk_plan_cancel(s->pl, id);
	}
	for (size_t k = 0; k < arr->n; k++) {
		/* A copy under mu: the generator may grow the jobs' array meanwhile (run). */
		pthread_mutex_lock(&s->mu);
		sjob c = s->jobs[arr->a[k]];
		pthread_mutex_unlock(&s->mu);
		rusk_prediction pr;
		rusk_dist d;
		rusk_predict(s->pred, &c.feat, &pr, &d);
		s->r.pred_expert += pr.source == RUSK_PRED_EXPERT;
		s->r.pred_global += pr.source == RUSK_PRED_GLOBAL;
		s->r.pred_none += pr.source == RUSK_PRED_NONE;
		/* Nothing learned yet: an optimistic guess of one cycle, so that the job is
		 * started and its runtime learned (a pessimistic one, such as a slot, kept
		 * every SLO job with a deadline under it from ever starting: nothing would
		 * ever be learned); under-estimate handling (§4.2.1) extends it while it
		 * runs. */
		rusk_plan_job pj = {.id = arr->a[k],
		                    .cores = c.spec.rus,
		                    .submit_s = fmin(c.submit_s, now),
		                    .deadline_s = c.deadline_s,
		                    .estimate_s = pr.estimate_s > 0 ? pr.estimate_s : cycle_s,
		                    .true_run_s = c.run_s,
		                    .dist = &d};
		int rc = rusk_plan_submit(s->pl, &pj);
		pthread_mutex_lock(&s->mu);
		sjob *j = &s->jobs[arr->a[k]];
		if (rc == RUSK_OK) {
			j->state = SJ_PENDING;
			if (j->deadline_s > 0 &&
			    !sdl_heap_push(&s->deadlines, (sdl){j->deadline_s, arr->a[k]}))
				fail(R, s, "out of memory recording a deadline");
		} else {
			refuse(s, j, false); /* never in the planner: nothing to forget */
			if (rc == RUSK_ENOMEM)
				fail(R, s, "out of memory submitting to the planner");
		}
		pthread_mutex_unlock(&s->mu);
	}
}

/*
 * Whether a cycle at t would only repeat the last one, so that it is skipped (issue 33: a
 * saturated trace spent its time in MILP cycles that could not start anything). A cycle's
 * inputs are the jobs given to the planner (arrivals, completions: the caller checks that
 * none came), the free RUs, and the time. Nothing arrived or ended, the free RUs are the
 * same, and the last cycle took no action: then prio and fifo, whose decisions depend on
 * nothing else, would take none either -- unless time itself makes one due: a live SLO job's
 * deadline (the planner drops or kills a job once its deadline, or its over-estimate decay, is
 * over; a deadline is the earliest such time, so a cycle is never skipped past one). The
 * MILP modes also value a start by the time left to the deadlines: for them a cycle is
 * run at least once per plan slot, the resolution at which they plan time. Under mu.
 */
static bool unchanged(drv_sched *s, uint64_t free_rus, double t)
{
	const cycle_state *c = &s->cy;
	if (!c->ran || free_rus != c->free || c->acted > 0 || t >= c->at_s + s->pp.slot_s)
		return false;
	/* The earliest deadline of a live SLO job (resolved ones are dropped here). */
	while (s->deadlines.n > 0) {
		const sjob *j = &s->jobs[s->deadlines.a[0].id];
		if (j->state == SJ_PENDING || j->state == SJ_STARTED || j->state == SJ_RUNNING)
			return t < s->deadlines.a[0].t;
		sdl_heap_pop(&s->deadlines);
	}
	return true;
}

void drv_sched_tick(run *R, uint64_t now, drv_sched_start_fn start, drv_sched_stop_fn stop,
                    void *ctx)
{
	drv_sched *s = R->sched;
	pthread_mutex_lock(&s->mu);
	idlist arr = s->arrived, ended = s->ended;
	s->arrived = s->spare[0];
	s->ended = s->spare[1];
	s->arrived.n = s->ended.n = 0;
	bool failed = s->failed;
	pthread_mutex_unlock(&s->mu);
	bool news = arr.n > 0 || ended.n > 0; /* the planner's job set changed */
	if (!failed)
		feed(R, s, &arr, &ended, now_s(s, now));
	arr.n = ended.n = 0;
	s->spare[0] = arr; /* only this caller swaps the lists */
	s->spare[1] = ended;
	size_t size = rusk_plan_size(s->pl);
	if (size == 0 || failed)
		return;
	if (size > s->acts_cap) {
		rusk_plan_action *a = realloc(s->acts, 2 * size * sizeof *a);
		if (a == NULL) {
			pthread_mutex_lock(&s->mu);
			fail(R, s, "out of memory planning");
			pthread_mutex_unlock(&s->mu);
			return;
		}
		s->acts = a;
		s->acts_cap = 2 * size;
	}
	pthread_mutex_lock(&s->mu);
	uint64_t free_rus = s->held < s->capacity ? s->capacity - s->held : 0;
	bool same = !news && unchanged(s, free_rus, now_s(s, now));
	pthread_mutex_unlock(&s->mu);
	if (same) {
		s->cy.skipped++;
		return;
	}
	size_t n = 0;
	int rc = rusk_plan_tick(s->pl, now_s(s, now), (uint32_t)free_rus, s->acts, s->acts_cap, &n,
	                        NULL);
	s->cy = (cycle_state){.ran = true,
	                      .at_s = now_s(s, now),
	                      .free = free_rus,
	                      .acted = n,
	                      .skipped = s->cy.skipped};
	pthread_mutex_lock(&s->mu);
	if (rc != RUSK_OK)
		fail(R, s,
		     rc == RUSK_ENOMEM ? "out of memory planning" : "the planner refused a cycle");
	for (size_t k = 0; rc == RUSK_OK && k < n; k++)
		apply(R, s, &s->acts[k], now, start, stop, ctx);
	pthread_mutex_unlock(&s->mu);
}

/* A completion of j's current instance at `now` (under mu). The predictor learns the
 * runtime here (it takes updates from any thread); the planner at its next cycle. */
static void done(run *R, drv_sched *s, sjob *j, uint64_t now)
{
	double end = now_s(s, now);
	double rh = (double)j->spec.rus * j->run_s * s->scale / 3600;
	j->state = SJ_DONE;
	s->live--;
	if (j->deadline_s > 0) {
		if (end <= j->deadline_s + 1e-9) {
			s->r.slo_met++;
			s->r.good_slo_rh += rh;
		} else {
			s->r.slo_late++;
		}
	} else {
		s->r.be_done++;
		s->r.be_lat_sum += (end - j->submit_s) * s->scale;
		s->r.good_be_rh += rh;
	}
	if (!push_id(&s->ended, (uint64_t)(j - s->jobs)))
		fail(R, s, "out of memory recording a completion");
	if (rusk_predict_update(s->pred, &j->feat, j->run_s) == RUSK_ENOMEM)
		fail(R, s, "out of memory learning a runtime");
}

void drv_sched_event(run *R, rusk_dispatch_event *ev)
{
	drv_sched *s = R->sched;
	pthread_mutex_lock(&s->mu);
	sjob *j = job_of(s, ev->user);
	if (j == NULL) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	bool current = j->tk == ev->task && j->tk != 0;
	switch (ev->kind) {
	case RUSK_EV_PLACED:
		if (j->state == SJ_STARTED && j->tk == 0)
			j->tk = ev->task; /* placed before its submission returned */
		current = j->tk == ev->task && j->state == SJ_STARTED;
		if (!current) {
			ev->run_ns = 0; /* an orphan: stopped before it was placed */
			break;
		}
		j->state = SJ_RUNNING;
		j->placed_s = now_s(s, ev->time_ns);
		double h = j->placed_s - j->start_s;
		s->r.handoff_sum += h;
		s->r.handoff_max = fmax(s->r.handoff_max, h);
		s->r.handoffs++;
		break;
	case RUSK_EV_DONE:
		s->held -= j->spec.rus;
		if (current && j->state == SJ_RUNNING && !s->closed) {
			j->tk = 0;
			done(R, s, j, ev->time_ns);
		}
		break;
	case RUSK_EV_REJECTED:
		if (ev->error == RUSK_ESTOPPED && s->closed) {
			/* Still queued when the run stopped: unfinished, not refused. */
			s->held -= j->spec.rus;
			if (current)
				j->tk = 0;
		} else if (current || (j->state == SJ_STARTED && j->tk == 0))
			refuse(s, j, true);
		else
			s->held -= j->spec.rus; /* an orphan's */
		break;
	case RUSK_EV_PREEMPTED: /* a trace priority's preemption, or its machine failed: */
	case RUSK_EV_REVOKED:   /* the dispatcher queues it again; placed again, it restarts */
		if (current && j->state == SJ_RUNNING)
			j->state = SJ_STARTED;
		break;
	default: break;
	}
	pthread_mutex_unlock(&s->mu);
}

void drv_sched_close(run *R)
{
	drv_sched *s = R->sched;
	pthread_mutex_lock(&s->mu);
	s->closed = true;
	pthread_mutex_unlock(&s->mu);
}

uint64_t drv_sched_live(run *R)
{
	drv_sched *s = R->sched;
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->live;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* At the end: what is still pending or running is unfinished (an SLO job: a miss). */
static void settle(drv_sched *s)
{
	for (size_t i = 0; i < s->n; i++) {
		sjob *j = &s->jobs[i];
		if (j->state != SJ_NEW && j->state != SJ_PENDING && j->state != SJ_STARTED &&
		    j->state != SJ_RUNNING)
			continue;
		if (j->deadline_s > 0)
			s->r.slo_unfinished++;
		else
			s->r.be_unfinished++;
		j->state = SJ_DONE + 100; /* counted once */
	}
}

static double miss_pct(const sched_res *r)
{
	return r->slo_jobs ? 100.0 * (double)(r->slo_jobs - r->slo_met) / (double)r->slo_jobs : 0;
}

static double be_latency(const sched_res *r)
{
	return r->be_done ? r->be_lat_sum / (double)r->be_done : 0;
}

void drv_sched_print(run *R)
{
	drv_sched *s = R->sched;
	pthread_mutex_lock(&s->mu);
	settle(s);
	const sched_res *r = &s->r;
	rusk_plan_stats st;
	rusk_plan_stats_get(s->pl, &st);
	FILE *o = R->out;
	fprintf(o, "  %-28s %s; slot %.3g s, cycle %.3g s (run clock); %" PRIu64 " RUs\n",
	        "3Sigma planner", rusk_plan_mode_name(s->pp.mode), s->pp.slot_s,
	        drv_sched_tick_ns(R) / 1e9, s->capacity);
	if (R->cfg.trace != NULL && strcmp(R->cfg.trace, "e2e") == 0)
		fprintf(o,
		        "  %-28s %zu jobs (%zu left out: wider than the cluster or over 1 h), "
		        "offered load %.2f (SLO %.2f), %zu pre-training runtimes\n",
		        "E2E-like workload", s->n, s->e2e_filtered, s->e2e_load, s->e2e_slo_load,
		        (size_t)R->cfg.e2e_train);
	fprintf(o,
	        "  %-28s %.1f%% of %" PRIu64 " (met %" PRIu64 "; late %" PRIu64 ", dropped %" PRIu64
	        ", killed %" PRIu64 ", refused %" PRIu64 ", unfinished %" PRIu64 ")\n",
	        "SLO miss rate", miss_pct(r), r->slo_jobs, r->slo_met, r->slo_late, r->slo_dropped,
	        r->slo_killed, r->slo_refused, r->slo_unfinished);
	fprintf(o, "  %-28s %.1f RU-h (SLO in time %.1f, BE %.1f); %.1f RU-h thrown away\n",
	        "goodput (trace time)", r->good_slo_rh + r->good_be_rh, r->good_slo_rh,
	        r->good_be_rh, r->wasted_rh);
	fprintf(o,
	        "  %-28s %.0f s mean over %" PRIu64 " done (of %" PRIu64 "; refused %" PRIu64
	        ", unfinished %" PRIu64 ")\n",
	        "BE latency (trace time)", be_latency(r), r->be_done, r->be_jobs, r->be_refused,
	        r->be_unfinished);
	fprintf(o,
	        "  %-28s %" PRIu64 " starts, %" PRIu64 " preemptions, %" PRIu64
	        " kills; start -> placed %.3g ms mean, %.3g ms max (run clock)\n",
	        "planner actions", r->starts, r->preempts, r->slo_killed,
	        r->handoffs ? 1e3 * r->handoff_sum / (double)r->handoffs : 0, 1e3 * r->handoff_max);
	if (s->pp.mode == RUSK_PLAN_PRIO || s->pp.mode == RUSK_PLAN_FIFO)
		fprintf(o,
		        "  %-28s %" PRIu64 " cycles (%s: an order, no plan); %.1f ms max; %" PRIu64
		        " skipped (nothing changed)\n",
		        "planning", st.ticks, rusk_plan_mode_name(s->pp.mode), 1e3 * st.solve_s_max,
		        s->cy.skipped);
	else
		fprintf(o,
		        "  %-28s %" PRIu64 " cycles planned; MILP %" PRIu64 ", at budget %" PRIu64
		        ", greedy fallbacks %" PRIu64 "; %.2f ms mean, %.1f ms max; %" PRIu64
		        " cycles skipped (nothing changed)\n",
		        "planning", st.planned_ticks, st.how[RUSK_PLAN_HOW_MILP],
		        st.how[RUSK_PLAN_HOW_MILP_TIME],
		        st.how[RUSK_PLAN_HOW_GREEDY_TIME] + st.how[RUSK_PLAN_HOW_GREEDY_FAIL],
		        st.planned_ticks ? 1e3 * st.solve_s_sum / (double)st.planned_ticks : 0,
		        1e3 * st.solve_s_max, s->cy.skipped);
	fprintf(o, "  %-28s expert %" PRIu64 ", global history %" PRIu64 ", none yet %" PRIu64 "\n",
	        "runtime predictions", r->pred_expert, r->pred_global, r->pred_none);
	pthread_mutex_unlock(&s->mu);
}

void drv_sched_json(FILE *f, run *R)
{
	drv_sched *s = R->sched;
	pthread_mutex_lock(&s->mu);
	settle(s);
	const sched_res *r = &s->r;
	rusk_plan_stats st;
	rusk_plan_stats_get(s->pl, &st);
	fprintf(f,
	        "  \"sched\": {\"mode\": \"%s\", \"slot_s\": %.9g, \"tick_s\": %.9g, "
	        "\"capacity_rus\": %" PRIu64 ", \"jobs\": %zu, \"e2e_left_out\": %zu,\n"
	        "    \"slo_jobs\": %" PRIu64 ", \"slo_met\": %" PRIu64 ", \"slo_late\": %" PRIu64
	        ", \"slo_dropped\": %" PRIu64 ", \"slo_killed\": %" PRIu64
	        ", \"slo_refused\": %" PRIu64 ", \"slo_unfinished\": %" PRIu64
	        ", \"slo_miss_pct\": %.6g,\n",
	        rusk_plan_mode_name(s->pp.mode), s->pp.slot_s, drv_sched_tick_ns(R) / 1e9,
	        s->capacity, s->n, s->e2e_filtered, r->slo_jobs, r->slo_met, r->slo_late,
	        r->slo_dropped, r->slo_killed, r->slo_refused, r->slo_unfinished, miss_pct(r));
	fprintf(f,
	        "    \"be_jobs\": %" PRIu64 ", \"be_done\": %" PRIu64 ", \"be_refused\": %" PRIu64
	        ", \"be_unfinished\": %" PRIu64 ", \"be_latency_s\": %.6g,\n"
	        "    \"goodput_rh\": %.6g, \"goodput_slo_rh\": %.6g, \"goodput_be_rh\": %.6g, "
	        "\"wasted_rh\": %.6g,\n",
	        r->be_jobs, r->be_done, r->be_refused, r->be_unfinished, be_latency(r),
	        r->good_slo_rh + r->good_be_rh, r->good_slo_rh, r->good_be_rh, r->wasted_rh);
	fprintf(f,
	        "    \"starts\": %" PRIu64 ", \"preempts\": %" PRIu64 ", \"kills\": %" PRIu64
	        ", \"orphans\": %" PRIu64 ", \"handoff_mean_s\": %.6g, \"handoff_max_s\": %.6g,\n"
	        "    \"cycles\": %" PRIu64 ", \"cycles_skipped\": %" PRIu64
	        ", \"cycles_planned\": %" PRIu64 ", \"milp\": %" PRIu64
	        ", \"milp_at_budget\": %" PRIu64 ", \"greedy_fallbacks\": %" PRIu64
	        ", \"pred_expert\": %" PRIu64 ", \"pred_global\": %" PRIu64
	        ", \"pred_none\": %" PRIu64 ", \"solver_iterations\": %" PRIu64
	        ", \"solver_nodes\": %" PRIu64 "},\n",
	        r->starts, r->preempts, r->slo_killed, r->orphans,
	        r->handoffs ? r->handoff_sum / (double)r->handoffs : 0, r->handoff_max, st.ticks,
	        s->cy.skipped, st.planned_ticks, st.how[RUSK_PLAN_HOW_MILP],
	        st.how[RUSK_PLAN_HOW_MILP_TIME],
	        st.how[RUSK_PLAN_HOW_GREEDY_TIME] + st.how[RUSK_PLAN_HOW_GREEDY_FAIL],
	        r->pred_expert, r->pred_global, r->pred_none, st.iterations, st.nodes);
	pthread_mutex_unlock(&s->mu);
}

/* Every job resolved once: met + late + dropped + killed + refused + unfinished = SLO jobs,
 * and likewise for BE jobs; and the planner never failed. */
bool drv_sched_check(run *R, char *why, size_t len)
{
	drv_sched *s = R->sched;
	pthread_mutex_lock(&s->mu);
	settle(s);
	const sched_res *r = &s->r;
	uint64_t slo = r->slo_met + r->slo_late + r->slo_dropped + r->slo_killed + r->slo_refused +
	               r->slo_unfinished;
	uint64_t be = r->be_done + r->be_refused + r->be_unfinished;
	bool ok = slo == r->slo_jobs && be == r->be_jobs && !s->failed;
	if (!ok)
		snprintf(why, len,
		         "planner accounting: SLO %" PRIu64 " of %" PRIu64 " resolved, BE %" PRIu64
		         " of %" PRIu64 "%s",
		         slo, r->slo_jobs, be, r->be_jobs, s->failed ? ", the planner failed" : "");
	pthread_mutex_unlock(&s->mu);
	return ok;
}

void drv_sched_free(run *R)
{
	drv_sched *s = R->sched;
	if (s == NULL)
		return;
	rusk_plan_destroy(s->pl);
	rusk_predict_destroy(s->pred);
	if (s->mu_init)
		pthread_mutex_destroy(&s->mu);
	free(s->jobs);
	free(s->acts);
	free(s->arrived.a);
	free(s->ended.a);
	free(s->spare[0].a);
	free(s->spare[1].a);
	free(s->train);
	free(s->deadlines.a);
	free(s);
	R->sched = NULL;
}

/* ---- the feature (runstate.h) ------------------------------------------------------------ */

static bool sched_on(const run *R)
{
	return R->sched != NULL;
}

const drv_feature drv_feature_sched = {
        .name = "the planner",
        .on = sched_on,
        .setup = sched_setup,
        .event = drv_sched_event,
        .json = drv_sched_json,
        .print = drv_sched_print,
        .free = drv_sched_free,
};
