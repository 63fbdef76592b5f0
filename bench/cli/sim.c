/* SPDX-License-Identifier: MIT */
/*
 * `rusk sim`: the main job in virtual time (ParSync §6: the wind tunnel).
 *
 * The same kernel (cluster, views, agents, admission control), the same workload, queues
 * and metrics as `rusk run` (driver.c); only the clock and the interleaving differ. One
 * thread runs a discrete-event loop over a virtual clock that the cluster reads, so
 * snapshot times, staleness and sync schedules are virtual too.
 *
 * Events, in (time, sequence) order; the sequence number breaks ties so that the order
 * never depends on the heap's internals:
 *   arrival   the generator's next task enters its agent's queue (open loop)
 *   agent     an agent is free: it ticks its view (each partition sync costs it
 *             --sync-latency-us), takes its next task (driver.c's order), checks admission
 *             and chooses RUs on its view (rusk_agent_choose); its commit is due
 *             --decision-us + --commit-latency-us later. A task its view has no room
 *             for waits until the agent's next view sync (defer()): time always moves
 *             on, and an agent with tasks waiting always has a wake-up due
 *   commit    the chosen RUs are committed to the master array (gang or incremental;
 *             the `central` baseline scans and commits under its lock here, at once);
 *             between choice and commit other agents commit too, so a conflict is a real
 *             lost CAS. A loser marks the RU in its view and decides again (another
 *             decision time), up to the retry bound; then the task goes back to its queue
 *   complete  a task's end: its tenure ends and its RUs are released (unless preempted)
 *   second    the per-second series row (virtual seconds)
 *   plan      --sched: a planning cycle (sched_run.c); arrivals then go to the planner,
 *             and the jobs it starts enter their agents' queues here
 * Quiet time is skipped (skip_quiet): seconds in which no event but the utilization
 * samples falls are reported without stepping through them, with the same rows and figures
 * -- a trace's gaps, or months of long tasks running, cost microseconds a virtual second.
 * Deterministic: every random choice comes from seeded generators and nothing reads the
 * wall clock except the summary's wall time and event rate (stdout only; --json and --csv
 * are identical bytes for identical flags and seed, skipped or not).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/heap.h"
#include "runstate.h"
#include "simcost.h"

enum { EV_ARRIVAL, EV_AGENT, EV_COMMIT, EV_COMPLETE, EV_SECOND, EV_SAMPLE, EV_PLAN, EV_QUOTA };

typedef struct event {
	uint64_t t, seq;
	rusk_dtask *tk;
	uint64_t tenure; /* EV_COMPLETE: the tenure key it ends (step.h) */
	uint32_t agent;
	uint8_t kind;
} event;

static inline bool ev_before(const event *x, const event *y)
{
	return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

HEAP_DEFINE(ev_heap, event, ev_before)

/* A task that found no room and when it is tried again (defer()). */
typedef struct deferred {
	uint64_t ready_ns;
	rusk_dtask *tk;
} deferred;
static inline bool ready_before(const deferred *x, const deferred *y)
{
	return x->ready_ns < y->ready_ns;
}
/* Tasks that found no room, by when they are tried again (defer()). */
HEAP_DEFINE(defer_heap, deferred, ready_before)

typedef struct evq {
	ev_heap h;
	uint64_t seq;
} evq;

static void ev_push(evq *q, uint64_t t, uint8_t kind, uint32_t agent, rusk_dtask *tk,
                    uint64_t tenure)
{
	if (!ev_heap_push(&q->h, (event){t, q->seq++, tk, tenure, agent, kind}))
		drv_oom_exit("growing the simulator's event heap");
}

/* Pushes an event popped before back, with its sequence number: same order as before. */
static void ev_push_event(evq *q, event e)
{
	if (!ev_heap_push(&q->h, e))
		drv_oom_exit("growing the simulator's event heap");
}

static event ev_pop(evq *q)
{
	return ev_heap_pop(&q->h);
}

static uint64_t vnow; /* the virtual clock; one simulation per process */
static uint64_t vclock_now(void *ctx)
{
	(void)ctx;
	return vnow;
}
static const rusk_clock vclock = {vclock_now, NULL};

typedef struct sim {
	run *R;
	evq q;
	rusk_agent **ag;
	uint64_t dec_ns, commit_ns, sync_ns;
	size_t *retries_left, *round_left;
	double *busy_ns;
	/* Tasks that found no room, per agent, by the time they are tried again (ready_ns):
	 * a decision that cannot succeed before the agent's view changes is not repeated
	 * before then (see defer()). */
	defer_heap *deferred;
	uint64_t *sync_base, sync_step; /* agent i's view syncs at sync_base[i] + k step */
	uint64_t *backoff_ns;           /* central: the next wait after no room */
	bool *flush;                    /* central: a release made room; retry all now */
	uint64_t min_ns;                /* the shortest retry wait: never zero */
	bool work;                      /* --cost work: decisions cost their work (simcost.h) */
	simcost cost;
	uint64_t idle_since; /* every RU free since then; UINT64_MAX: not now */
} sim;

/* A task whose decision found no room is tried again no sooner than this: virtual time
 * always advances between two tries of one task, whatever --decision-us is. */
#define SIM_MIN_RETRY_NS 1000u

/* The first view sync of agent i after t (its DiffSync/SameSync/StateSync schedule). */
static uint64_t next_sync(const sim *S, uint32_t i, uint64_t t)
{
	uint64_t b = S->sync_base[i];
	return t < b ? b : b + ((t - b) / S->sync_step + 1) * S->sync_step;
}

/*
 * tk found no room at t: it waits in agent i's deferred heap. A view gains room only when
 * the agent syncs it, so a view-based agent tries again at its next sync (ParSync: the
 * view changes then and only then). The central baseline reads the master, where room
 * appears at any release: it backs off exponentially from max(--decision-us, 1 us) up to
 * one sync step, and every release makes its deferred tasks due at once.
 */
static void defer(sim *S, uint32_t i, rusk_dtask *tk, uint64_t t)
{
	run_agent *a = &S->R->ag[i];
	stat_add(&a->st->requeued, 1);
	uint64_t ready;
	if (S->R->cfg.strategy == RUSK_STRATEGY_CENTRAL) {
		ready = t + S->backoff_ns[i];
		uint64_t cap = S->sync_step > S->min_ns ? S->sync_step : S->min_ns;
		S->backoff_ns[i] = 2 * S->backoff_ns[i] < cap ? 2 * S->backoff_ns[i] : cap;
	} else {
		ready = next_sync(S, i, t);
	}
	deferred e = {ready > t + S->min_ns ? ready : t + S->min_ns, tk};
	if (!defer_heap_push(&S->deferred[i], e))
		drv_oom_exit("growing an agent's deferred tasks");
}

/* Deferred tasks due at t (all of them with `all`) go back to their queues: high
 * priority first as before, the others to the retry list. */
static void undefer(sim *S, uint32_t i, uint64_t t, bool all)
{
	run_agent *a = &S->R->ag[i];
	defer_heap *h = &S->deferred[i];
	while (h->n > 0 && (all || h->a[0].ready_ns <= t)) {
		rusk_dtask *tk = defer_heap_pop(h).tk;
		if (!rusk_dispatch_reserve_(a->da, 1))
			drv_oom_exit("growing an agent's queue");
		rusk_dispatch_retry_(a->da, tk);
	}
}

static void wake(sim *S, uint32_t i, uint64_t t)
{
	run_agent *a = &S->R->ag[i];
	if (a->idle) {
		a->idle = false;
		ev_push(&S->q, t, EV_AGENT, i, NULL, 0);
	}
}

/* Chooses RUs for a's current task at time t on its view; schedules the commit. Returns
 * false when the view has too few free RUs. */
static bool decide(sim *S, uint32_t i, uint64_t t)
{
	run *R = S->R;
	run_agent *a = &R->ag[i];
	rusk_view *v = rusk_agent_view(S->ag[i]);
	int synced = rusk_view_tick(v, t); /* partitions synced now: each costs sync latency */
	uint64_t sync_cost = (synced > 0 ? (uint64_t)synced : 0) * S->sync_ns;
	uint64_t cost = S->dec_ns + sync_cost;
	rusk_task tt = rusk_dispatch_task_(R->d, a->cur);
	if (R->cfg.strategy == RUSK_STRATEGY_CENTRAL) {
		/* The central baseline scans the master state and commits under its lock in
		 * one step: both happen at the commit event (commit()). Its decision keeps the
		 * flat --decision-us (simcost.h). */
		R->dec_cost_ns += (double)S->dec_ns;
		R->decisions++;
		S->busy_ns[i] += (double)cost;
		a->dec_ns += cost;
		ev_push(&S->q, t + cost + S->commit_ns, EV_COMMIT, i, a->cur, 0);
		return true;
	}
	int rc = rusk_agent_choose(S->ag[i], &tt, a->chosen, &a->pl);
	uint32_t examined = a->pl.examined, parts = a->pl.partitions;
	if (rc == RUSK_EAGAIN && rusk_dtask_prio_(a->cur) > 0 &&
	    rusk_dispatch_preempt_(a->da, a->cur, t) > 0) {
		rc = rusk_agent_choose(S->ag[i], &tt, a->chosen, &a->pl);
		examined += a->pl.examined; /* both decisions' work */
		parts += a->pl.partitions;
	}
	uint64_t dcost = S->dec_ns;
	if (S->work) /* what its work costs (simcost.h): Latency-first's family or sampling */
		dcost = (uint64_t)llround(simcost_decision(&S->cost, a->tries == 1,
		                                           a->pl.strategy != RUSK_STRATEGY_LATENCY,
		                                           examined, parts, rc == RUSK_OK));
	cost = dcost + sync_cost;
	R->dec_cost_ns += (double)dcost;
	R->decisions++;
	S->busy_ns[i] += (double)cost;
	a->dec_ns += cost;
	if (rc != RUSK_OK)
		return false;
	ev_push(&S->q, t + cost + S->commit_ns, EV_COMMIT, i, a->cur, 0);
	return true;
}

/* Agent i is free at time t: next task, admission, decision. */
static void agent_step(sim *S, uint32_t i, uint64_t t)
{
	run *R = S->R;
	run_agent *a = &R->ag[i];
	undefer(S, i, t, S->flush[i]);
	S->flush[i] = false;
	for (;;) {
		if (S->round_left[i] == 0) {
			/* A round of --batch tasks visits the retry list once (as rusk run). */
			S->round_left[i] = R->cfg.batch;
			S->retries_left[i] = rusk_dagent_retries_(a->da);
		}
		rusk_dtask *tk = rusk_dispatch_next_(a->da, t, &S->retries_left[i]);
		if (tk == NULL && rusk_dagent_retries_(a->da) > 0) {
			/* This round's visits of the retry list are spent, not the list: a new
			 * round (each visit places the task or defers it: this ends). */
			S->round_left[i] = 0;
			continue;
		}
		if (tk == NULL) {
			/* Idle: an arrival wakes it at once; an admission waiter or a deferred
			 * task at its time (a duplicate wake-up finds the agent busy or idle and
			 * is harmless). */
			a->idle = true;
			S->round_left[i] = 0;
			uint64_t w = rusk_dispatch_next_wake_(a->da);
			if (S->deferred[i].n > 0 && S->deferred[i].a[0].ready_ns < w)
				w = S->deferred[i].a[0].ready_ns;
			if (w != UINT64_MAX)
				ev_push(&S->q, w, EV_AGENT, i, NULL, 0);
			return;
		}
		a->idle = false;
		rusk_dispatch_dequeued_(a->da, tk, t);
		if (!rusk_dispatch_admit_(a->da, tk, t))
			continue;
		if (!rusk_dispatch_quota_admit_(a->da, tk, t)) /* its group's allowance */
			continue;
		S->round_left[i]--;
		a->cur = tk;
		a->t_start = t;
		a->tries = 1;
		a->dec_ns = 0;
		if (decide(S, i, t))
			return;
		/* Nothing to choose from in its view: the decision time is spent anyway. */
		rusk_dispatch_quota_unadmit_(a->da, tk);
		defer(S, i, tk, t);
		a->cur = NULL;
		a->busy_until = t + a->dec_ns;
		ev_push(&S->q, a->busy_until, EV_AGENT, i, NULL, 0);
		return;
	}
}

static void commit(sim *S, uint32_t i, uint64_t t)
{
	run *R = S->R;
	run_agent *a = &R->ag[i];
	rusk_dtask *tk = a->cur;
	rusk_view *v = rusk_agent_view(S->ag[i]);
	rusk_dtask_info ti;
	rusk_dtask_info_(tk, &ti);
	uint32_t n = ti.rus - ti.placed;
	rusk_lease *out = rusk_dtask_leases_(tk) + ti.placed;
	uint32_t won = 0;
	if (R->cfg.strategy == RUSK_STRATEGY_CENTRAL) {
		rusk_task tt = rusk_dispatch_task_(R->d, tk);
		rusk_placement pl;
		int rc = rusk_agent_place(S->ag[i], &tt, out, &pl);
		rusk_dispatch_count_(a->da, &pl);
		a->cur = NULL;
		if (rc == RUSK_OK) {
			S->backoff_ns[i] = S->min_ns;
			pl.sample_ns = a->dec_ns;
			pl.commit_ns = S->commit_ns;
			if (rusk_dispatch_placed_(a->da, tk, &pl, a->t_start, t) ==
			    RUSK_DISP_RUNNING)
				ev_push(&S->q, rusk_dtask_end_ns_(tk), EV_COMPLETE, i, tk,
				        rusk_dispatch_tenure_(tk));
		} else {
			rusk_dispatch_quota_unadmit_(a->da, tk);
			defer(S, i, tk, t); /* the master has no room for it */
		}
		agent_step(S, i, t);
		return;
	}
	a->st->attempts++;
	bool vec = rusk_vec_any(&ti.vec); /* RUs, memory and GPUs of one machine */
	if (R->cfg.gang || n == 1 || vec) {
		size_t lost = 0;
		int rc = vec ? rusk_ru_commit_vec(R->c, ti.id, a->chosen, n, &ti.vec, &ti.prof, out,
		                                  &lost)
		             : rusk_ru_commit_gang(R->c, ti.id, a->chosen, n, &ti.prof, out, &lost);
		if (rc == RUSK_OK) {
			won = n;
		} else {
			a->st->conflicts++;
			a->st->rus_lost += lost < n; /* the first RU lost; the rest rolled back */
			if (lost < n) /* else its memory or GPUs ran short: its RUs are free */
				rusk_view_mark_taken(v, a->chosen[lost]);
		}
	} else {
		size_t w = 0;
		rusk_ru_commit_incremental(R->c, ti.id, a->chosen, n, &ti.prof, out, &w);
		won = (uint32_t)w;
		a->st->conflicts += won < n; /* one commit attempt that lost RUs */
		a->st->rus_lost += n - won;
	}
	if (won > 0) {
		for (uint32_t k = 0; k < n; k++)
			rusk_view_mark_taken(v, a->chosen[k]); /* won, or taken by others */
		rusk_placement pl = a->pl;
		pl.placed = won;
		pl.attempts = a->tries;
		pl.sample_ns = a->dec_ns;
		pl.commit_ns = S->commit_ns * a->tries;
		if (rusk_dispatch_placed_(a->da, tk, &pl, a->t_start, t) == RUSK_DISP_RUNNING)
			ev_push(&S->q, rusk_dtask_end_ns_(tk), EV_COMPLETE, i, tk,
			        rusk_dispatch_tenure_(tk));
		a->cur = NULL;
		agent_step(S, i, t);
		return;
	}
	if (a->tries++ > R->cfg.max_retries) {
		rusk_dispatch_quota_unadmit_(a->da, tk);
		rusk_dispatch_gave_back_(a->da, tk); /* lost too often: back to the retry list */
	} else if (decide(S, i, t)) {
		return;
	} else {
		rusk_dispatch_quota_unadmit_(a->da, tk);
		defer(S, i, tk, t); /* its view has no room left */
	}
	a->cur = NULL;
	agent_step(S, i, t);
}

/* A task the dispatcher would not take (rc): the kernel's refusal (it could never be
 * placed), else the dispatcher had no room for it (rusk run: a full queue). */
static void count_refusal(run *R, int rc)
{
	if (rc == RUSK_EINVAL || rc == RUSK_EINFEASIBLE)
		R->refused++;
	else
		R->rejected++;
}

/* --sched: the planner started a job at t: it enters its agent's queue (counted as
 * submitted to the agents); 0 when the dispatcher refused it (REJECTED delivered). */
static rusk_dtask_id sim_start(run *R, rusk_dtask_spec *spec, uint32_t agent, uint64_t t, void *ctx)
{
	int rc;
	R->submitted++;
	rusk_dtask *tk = rusk_dispatch_new_task_(R->d, spec, agent, t, &rc);
	if (tk == NULL) {
		count_refusal(R, rc);
		return 0;
	}
	run_agent *a = &R->ag[agent];
	if (!rusk_dispatch_reserve_(a->da, 1))
		drv_oom_exit("growing an agent's queue");
	rusk_dispatch_enqueue_(a->da, tk);
	wake(ctx, agent, t);
	rusk_dtask_info ti;
	rusk_dtask_info_(tk, &ti);
	return ti.id;
}

/* --sched: the planner stopped job tk at t: ended now if it runs (its pending completion
 * event finds the tenure over), cancelled if it is still queued (its agent drops it when
 * it next takes it: REJECTED, RUSK_ECANCELED). */
static void sim_stop(run *R, rusk_dtask_id tk, bool placed, uint64_t t, void *ctx)
{
	(void)placed; /* one thread: a PLACED seen has returned */
	(void)t;
	(void)ctx;
	if (rusk_dispatch_complete(R->d, tk) == RUSK_ENOTRUNNING)
		(void)rusk_dispatch_cancel(R->d, tk);
}

/* After an event that may take or give back RUs: when the cluster last became idle (every
 * RU free), for the end-of-run check. */
static void note_occupancy(sim *S, uint64_t t)
{
	if (rusk_cluster_free_rus(S->R->c) != rusk_cluster_rus(S->R->c))
		S->idle_since = UINT64_MAX;
	else if (S->idle_since == UINT64_MAX)
		S->idle_since = t;
}

/*
 * Quiet time skipped. Between two events nothing in the simulation changes: agents,
 * completions, arrivals and planning cycles are all events, so the only things a quiet
 * second holds are its 100 utilization samples (of a constant utilization) and its
 * per-second row. At second boundary `now` (an EV_SECOND just processed), the seconds whose
 * boundaries come before the next event other than the current sample are such seconds:
 * each is reported by drv_second_idle after the same 100 samples (the same additions, so
 * the same figures, byte for byte), without stepping through its events. An idle trace gap
 * of days, or months of long tasks running (openb at --time-scale 1 spans 149 days), then
 * cost microseconds per virtual second instead of a hundred events and a second's
 * histograms. Returns the next EV_SECOND's time, or 0 once the run's end (`end_secs`) is
 * reached (vnow is then that second's boundary).
 */
static uint64_t skip_quiet(sim *S, uint64_t now, double end_secs, bool tty)
{
	run *R = S->R;
	uint64_t next = now + 1000000000ull;
	event *top = S->q.h.n > 0 ? &S->q.h.a[0] : NULL;
	/* The utilization sample at this boundary comes first (pushed after this second);
	 * the event after it bounds the quiet time. Anything else first (an event at this
	 * instant) skips nothing. */
	if (top == NULL || top->kind != EV_SAMPLE || top->t != now)
		return next;
	event sample = ev_pop(&S->q);
	uint64_t until = S->q.h.n > 0 ? S->q.h.a[0].t : UINT64_MAX;
	if (next >= until) {
		ev_push_event(&S->q, sample); /* its place in the order (t, seq) unchanged */
		return next;
	}
	double u = 1.0 - (double)rusk_cluster_free_rus(R->c) / rusk_cluster_rus(R->c);
	for (uint64_t b = next; b < until; b += 1000000000ull) {
		vnow = b;
		for (int k = 0; k < 100; k++) { /* drv_util_sample's additions, in order */
			R->util_acc += u;
			R->util_n++;
		}
		drv_second_idle(R, tty && b + 1000000000ull >= until);
		if (R->secs > end_secs)
			return 0;
	}
	/* The last quiet second's boundary is now. Its sample (at the same time, after the
	 * second) belongs to the next second: pushed anew (the one popped was at `now`). */
	ev_push(&S->q, vnow, EV_SAMPLE, 0, NULL, 0);
	return vnow + 1000000000ull;
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int rusk_cmd_sim(int argc, char **argv)
{
	cli_cluster cc;
	run R;
	memset(&R, 0, sizeof R);
	drv_signals_install(); /* SIGINT / SIGTERM end the loop below; the report follows */
	int rc = drv_parse(argc, argv, true, &cc, &R.cfg);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	vnow = 0;
	cc.params.clock = &vclock;
	if ((rc = drv_setup(&R, &cc)) != 0) {
		drv_free(&R); /* what the set-up made before it stopped (trace, tables) */
		return rc;
	}
	const run_cfg *cfg = &R.cfg;
	uint32_t N = cfg->agents;
	double w0 = wall_s();
	rusk_thread_register();
	R.t0 = 1000000000ull; /* virtual 1 s: every snapshot time is after the build */
	vnow = R.t0;
	sim S = {.R = &R,
	         .dec_ns = (uint64_t)llround(cfg->decision_us * 1e3),
	         .commit_ns = (uint64_t)llround(cfg->commit_latency_us * 1e3),
	         .sync_ns = (uint64_t)llround(cfg->sync_latency_us * 1e3)};
	S.ag = calloc(N, sizeof *S.ag);
	S.retries_left = calloc(N, sizeof *S.retries_left);
	S.round_left = calloc(N, sizeof *S.round_left);
	S.busy_ns = calloc(N, sizeof *S.busy_ns);
	S.deferred = calloc(N, sizeof *S.deferred);
	S.sync_base = calloc(N, sizeof *S.sync_base);
	S.backoff_ns = calloc(N, sizeof *S.backoff_ns);
	S.flush = calloc(N, sizeof *S.flush);
	S.min_ns = S.dec_ns > SIM_MIN_RETRY_NS ? S.dec_ns : SIM_MIN_RETRY_NS;
	S.work = !cfg->cost_flat;
	S.cost = simcost_make(cfg->quality == RUSK_QUALITY_INTERFERENCE, (double)S.dec_ns);
	if (S.ag == NULL || S.retries_left == NULL || S.round_left == NULL || S.busy_ns == NULL ||
	    S.deferred == NULL || S.sync_base == NULL || S.backoff_ns == NULL || S.flush == NULL) {
		fprintf(stderr, "rusk sim: out of memory\n");
		return RUSK_EXIT_NOMEM;
	}
	int status = drv_dispatch(&R, "sim"); /* the agents, made from drv_agent_params */
	if (status != 0)
		return status;
	for (uint32_t i = 0; i < N; i++) {
		rusk_agent_params ap;
		drv_agent_params(&R, i, &ap);
		S.sync_step = rusk_sync_step_ns(&ap.sync);
		S.sync_base[i] = ap.sync.start_ns + rusk_sync_offset_ns(&ap.sync, i);
		S.backoff_ns[i] = S.min_ns;
		S.ag[i] = R.ag[i].handle;
		R.ag[i].chosen = calloc(DRV_MAX_TASK_RUS, sizeof(uint32_t)); /* any task's RUs */
		R.ag[i].idle = true;
		if (R.ag[i].chosen == NULL) {
			fprintf(stderr, "rusk sim: agent %u: out of memory\n", i);
			return RUSK_EXIT_NOMEM;
		}
	}
	if ((R.gen = calloc(1, sizeof *R.gen)) == NULL)
		drv_oom_exit("the generator");
	drv_gen *G = R.gen;
	if ((status = drv_gen_init(&R, G, 0, 1)) != 0)
		return status;
	R.n_gen = 1;
	rusk_arrival x;
	int grp;
	bool gen_live = drv_gen_next(&R, G, &x, &grp);
	if (gen_live)
		ev_push(&S.q, R.t0 + (uint64_t)llround(x.t_s * 1e9), EV_ARRIVAL, 0, NULL, 0);
	S.idle_since = R.t0;
	ev_push(&S.q, R.t0 + 1000000000ull, EV_SECOND, 0, NULL, 0);
	ev_push(&S.q, R.t0 + 10000000ull, EV_SAMPLE, 0, NULL, 0); /* utilization, every 10 ms */
	double total_s = cfg->n_phases * cfg->phase_s;
	double drain_s = R.sched != NULL ? drv_sched_drain_s(&R) : 30;
	if (R.sched != NULL)
		ev_push(&S.q, R.t0, EV_PLAN, 0, NULL, 0);
	/* Quota groups: the coordinator's rounds at exact multiples of its period. */
	uint64_t quota_ns = rusk_dispatch_quota_period_(R.d);
	if (quota_ns > 0)
		ev_push(&S.q, R.t0 + quota_ns, EV_QUOTA, 0, NULL, 0);
	bool tty = isatty(2);
	while (S.q.h.n > 0 && drv_stop_signal() == 0) {
		event e = ev_pop(&S.q);
		vnow = e.t;
		R.events++;
		switch (e.kind) {
		case EV_ARRIVAL: {
			run_agent *a;
			rusk_dtask_spec spec;
			rusk_dtask *tk = NULL;
			bool made = drv_gen_task(&R, G, &x, grp, e.t, &spec, &a);
			if (made && R.sched != NULL) {
				/* To the planner: sim_start submits (and counts) it when it starts.
				 */
				drv_sched_arrival(&R, &x, &spec, a->index, e.t);
			} else {
				G->submitted++;
				if (made)
					tk = rusk_dispatch_new_task_(R.d, &spec, a->index, e.t,
					                             &rc);
				if (!made) {
					G->rejected++; /* the generator's reason (drv_gen_task) */
				} else if (tk == NULL) {
					count_refusal(&R, rc);
				} else {
					if (!rusk_dispatch_reserve_(a->da, 1))
						drv_oom_exit("growing an agent's queue");
					rusk_dispatch_enqueue_(a->da, tk);
					wake(&S, a->index, e.t);
				}
			}
			gen_live = drv_gen_next(&R, G, &x, &grp);
			if (gen_live) {
				uint64_t due = R.t0 + (uint64_t)llround(x.t_s * 1e9);
				ev_push(&S.q, due > e.t ? due : e.t, EV_ARRIVAL, 0, NULL, 0);
			} else {
				R.gen_done = 1;
			}
			break;
		}
		case EV_AGENT: {
			run_agent *a = &R.ag[e.agent];
			if (a->cur == NULL && e.t >= a->busy_until) /* else: a stale wake-up */
				agent_step(&S, e.agent, e.t);
			note_occupancy(&S, e.t); /* a preemption gives RUs back */
			break;
		}
		case EV_COMMIT:
			commit(&S, e.agent, e.t);
			note_occupancy(&S, e.t);
			break;
		case EV_COMPLETE:
			if (rusk_dispatch_end_(R.d, e.tk, e.tenure, e.t) &&
			    cfg->strategy == RUSK_STRATEGY_CENTRAL)
				for (uint32_t i = 0; i < N; i++) /* room at the master: retry */
					if (S.deferred[i].n > 0) {
						S.flush[i] = true;
						S.backoff_ns[i] = S.min_ns;
						wake(&S, i, e.t);
					}
			note_occupancy(&S, e.t);
			break;
		case EV_PLAN:
			drv_sched_tick(&R, e.t, sim_start, sim_stop, &S);
			ev_push(&S.q, e.t + drv_sched_tick_ns(&R), EV_PLAN, 0, NULL, 0);
			note_occupancy(&S, e.t); /* the planner's stops end running jobs */
			break;
		case EV_QUOTA:
			if (rusk_dispatch_quota_tick_(R.d, e.t) != RUSK_OK)
				drv_oom_exit("a quota round");
			drv_grp_round(&R, e.t); /* --groups-csv: a row per group */
			ev_push(&S.q, e.t + quota_ns, EV_QUOTA, 0, NULL, 0);
			break;
		case EV_SAMPLE:
			drv_util_sample(&R);
			ev_push(&S.q, e.t + 10000000ull, EV_SAMPLE, 0, NULL, 0);
			break;
		case EV_SECOND: {
			uint64_t backlog = drv_second(&R, tty);
			bool resolved = R.sched == NULL || drv_sched_live(&R) == 0;
			if (R.gen_done && backlog == 0 && resolved)
				goto done;
			if (R.secs > total_s + drain_s) {
				R.drain_capped = true; /* the report says what was left */
				goto done;
			}
			uint64_t next = skip_quiet(&S, e.t, total_s + drain_s, tty);
			if (next == 0) {
				R.drain_capped = true;
				goto done;
			}
			ev_push(&S.q, next, EV_SECOND, 0, NULL, 0);
			break;
		}
		}
	}
done:;
	bool interrupted = drv_stop_signal() != 0;
	if (tty)
		fprintf(stderr, "\n");
	R.elapsed_s = R.secs;
	R.drain_s = drain_s;
	/* A cluster idle (nothing runs, nothing is held) for longer than an agent takes to
	 * react (its next view sync, or the central baseline's longest backoff, plus a
	 * decision, its syncs and a commit) -- or for half the drain window when that is
	 * shorter -- with tasks left queued that fit it: the scheduler stopped trying (a failed
	 * check, drv_report). An overloaded cluster that is idle only for the instant its last
	 * tasks ended has room that nothing uses yet, not room that nothing will use. */
	uint64_t react = (S.sync_step > S.min_ns ? S.sync_step : S.min_ns) + S.dec_ns +
	                 (uint64_t)rusk_cluster_partitions(R.c) * S.sync_ns + S.commit_ns;
	double half_drain = drain_s / 2 * 1e9;
	if ((double)react > half_drain)
		react = (uint64_t)half_drain;
	bool idle = S.idle_since != UINT64_MAX && vnow - S.idle_since > react;
	for (uint32_t i = 0; i < N; i++) {
		undefer(&S, i, vnow, true);
		if (idle)
			R.stuck += rusk_dispatch_placeable_(R.ag[i].da, rusk_cluster_rus(R.c));
	}
	if (interrupted && vnow > R.t0 && (vnow - R.t0) / 1e9 > R.elapsed_s)
		R.elapsed_s = (vnow - R.t0) / 1e9; /* the part of a virtual second that ran */
	/* Stop: what still runs ends now (as the real completer does at stop); the planner's
	 * jobs among them are unfinished, not done. */
	if (R.sched != NULL)
		drv_sched_close(&R);
	if (R.apred != NULL)
		drv_apred_close(&R);
	while (S.q.h.n > 0) {
		event e = ev_pop(&S.q);
		if (e.kind == EV_COMPLETE)
			rusk_dispatch_end_(R.d, e.tk, e.tenure, vnow);
		else if (e.kind == EV_COMMIT)
			rusk_dispatch_gave_back_(R.ag[e.agent].da,
			                         e.tk); /* decided, never committed */
	}
	for (uint32_t i = 0; i < N; i++) {
		run_agent *a = &R.ag[i];
		rusk_view_stats_get(rusk_agent_view(S.ag[i]), &a->vs);
		a->busy_s = S.busy_ns[i] / 1e9;
		rusk_dispatch_drain_(a->da);
		free(a->chosen);
	}
	R.wall_s = wall_s() - w0;
	fprintf(R.out,
	        "  %-28s %.1f virtual s in %.2f s of wall time: %" PRIu64 " events, %.2fM "
	        "events/s, %.0fx real time\n",
	        "simulator", R.elapsed_s, R.wall_s, R.events, R.events / R.wall_s / 1e6,
	        R.elapsed_s / R.wall_s);
	status = drv_report(&R, interrupted);
	rusk_thread_unregister();
	free(S.q.h.a);
	free(S.ag);
	free(S.retries_left);
	free(S.round_left);
	free(S.busy_ns);
	for (uint32_t i = 0; i < N; i++)
		free(S.deferred[i].a);
	free(S.deferred);
	free(S.sync_base);
	free(S.backoff_ns);
	free(S.flush);
	drv_free(&R);
	return status;
}
