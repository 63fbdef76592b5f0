/* SPDX-License-Identifier: MIT */
/*
 * The pipeline example of docs/dispatcher.md, built and run as a test: the four parts of rusk an
 * embedder puts together to run deadline-aware work on a cluster.
 *
 *   classifier (Quasar)  a job class's interference profile, from two profiled entries
 *   predictor (3Sigma)   a job's runtime distribution, learned from the jobs that completed
 *   planner (3Sigma)     every cycle: which jobs start now, which best-effort (BE) jobs are
 *                        preempted, which SLO jobs are dropped (pending) or killed (running)
 *   dispatcher           places what the planner starts (quality model INTERFERENCE, fed
 *                        the profile), ends it on a timer and reports back
 *
 * Stopping a job (PREEMPT, KILL) depends on where its dispatcher task is: queued ->
 * rusk_dispatch_cancel (it never runs); running -> rusk_dispatch_complete (ended now, RUs
 * released); being placed at that very instant (the cancel says RUSK_ERUNNING, the
 * complete RUSK_ENOTRUNNING) -> its PLACED callback finds it stopped and sets run_ns = 0.
 *
 * Exits non-zero unless every job is resolved exactly once, every dispatcher task gets
 * exactly one terminal event, the dispatcher's accounting adds up and every RU is free.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rusk/rusk.h>

#define JOBS    400
#define CLASSES 6    /* job classes: the last rows of a generated interference matrix */
#define TRAIN   90   /* workloads the classifier is trained on */
#define CYCLE_S 0.01 /* the planning cycle */

static const struct {
	uint32_t rus, run_ms;
} class_shape[CLASSES] = {{1, 40}, {2, 80}, {4, 120}, {8, 60}, {2, 160}, {4, 40}};

typedef struct job job;
typedef struct inst { /* one dispatcher task of a job; a restart is a new one */
	job *job;
	rusk_dtask_id id;   /* its handle */
	uint64_t placed_ns; /* cluster clock */
	bool stopped;       /* the planner preempted or killed it */
	bool ending;        /* stopped, and its end still to be asked for (next cycle) */
	int terminal;       /* DONE or REJECTED events seen: must end at 1 */
	struct inst *next;  /* every instance, freed at the end */
} inst;

struct job {
	uint32_t cls, rus;
	double submit_s, deadline_s; /* deadline 0: best effort */
	uint64_t run_ns;             /* how long it really runs */
	rusk_job feat;               /* what the predictor knows it by */
	inst *cur;                   /* the task the planner counts on (NULL: none) */
	int resolved;                /* must end at 1 */
};

typedef struct ended_job { /* a job whose current task ended: DONE, or REJECTED (refused) */
	uint32_t id;
	bool refused;
} ended_job;

/* The planner is the main loop's alone (one caller at a time) and plans without a lock, so
 * the dispatcher's callbacks never wait for its solver. The rest is shared with the
 * dispatcher's threads and guarded by mu, recursive: submit and complete deliver their
 * events on the calling thread. */
static struct {
	pthread_mutex_t mu;
	rusk_dispatch *d;
	rusk_plan *plan;
	rusk_predictor *pred; /* any thread */
	rusk_profile profile[CLASSES];
	const rusk_clock *clock;
	uint64_t t0;
	job jobs[JOBS];
	inst *all;
	ended_job ended[JOBS]; /* for the planner's next cycle */
	size_t n_ended;
	uint32_t held; /* RUs of dispatcher tasks not yet ended (current or stopped) */
	int unresolved;
	unsigned met, late, be_done, dropped, killed, refused, preempted;
	unsigned completed, cancelled, at_placement, over;
	int errors; /* and by_expert: the main loop's only */
	unsigned by_expert;
} A;

static double now_s(uint64_t ns)
{
	return (double)(ns - A.t0) / 1e9;
}

static void resolve(job *j, unsigned *outcome)
{
	j->resolved++;
	A.unresolved--;
	(*outcome)++;
}

/* The dispatcher's callback: on its agents (PLACED, REJECTED when cancelled), its
 * completer (DONE on a timer) or this program's thread (complete, a refused submit). */
static void on_event(void *arg, rusk_dispatch_event *ev)
{
	(void)arg;
	inst *in = ev->user;
	job *j = in->job;
	pthread_mutex_lock(&A.mu);
	switch (ev->kind) {
	case RUSK_EV_PLACED:
		in->placed_ns = ev->time_ns;
		if (in->stopped) { /* stopped while being placed: it ends at once */
			ev->run_ns = 0;
			A.at_placement++;
		}
		break;
	case RUSK_EV_DONE:
	case RUSK_EV_REJECTED:
		in->terminal++;
		A.held -= j->rus;
		if (j->cur != in)
			break; /* a stopped task: the planner has moved on */
		j->cur = NULL;
		A.ended[A.n_ended].id = (uint32_t)(j - A.jobs);
		A.ended[A.n_ended++].refused = ev->kind == RUSK_EV_REJECTED;
		if (ev->kind == RUSK_EV_REJECTED) { /* refused by the dispatcher */
			resolve(j, &A.refused);
			break;
		}
		double end = now_s(ev->time_ns); /* it ran its course */
		rusk_predict_update(A.pred, &j->feat, (double)(ev->time_ns - in->placed_ns) / 1e9);
		resolve(j, j->deadline_s == 0     ? &A.be_done
		           : end <= j->deadline_s ? &A.met
		                                  : &A.late);
		break;
	default: break; /* PREEMPTED, REVOKED (queued again), WAITING: none here */
	}
	pthread_mutex_unlock(&A.mu);
}

/* Asks the dispatcher to end a stopped task; false while it is being placed. Under mu. */
static bool end_stopped(inst *in)
{
	int rc = rusk_dispatch_complete(A.d, in->id); /* running: DONE now, on this thread */
	A.completed += rc == RUSK_OK;
	if (rc == RUSK_ENOTRUNNING) {                   /* queued, or being placed */
		rc = rusk_dispatch_cancel(A.d, in->id); /* queued: never runs; REJECTED follows */
		A.cancelled += rc == RUSK_OK;
	}
	A.over += rc == RUSK_ESTALE; /* it has just ended: its DONE waits for mu */
	/* RUSK_ERUNNING: being placed. If its PLACED callback is still to come, it ends the
	 * task (run_ns = 0); if it has run and is returning, the next cycle's complete does. */
	return rc != RUSK_ERUNNING;
}

/* One planner action, under mu. */
static void apply(const rusk_plan_action *a)
{
	job *j = &A.jobs[a->id];
	inst *in = j->cur;
	switch (a->act) {
	case RUSK_PLAN_START:
		if ((in = calloc(1, sizeof *in)) == NULL) {
			A.errors++;
			return;
		}
		*in = (inst){.job = j, .next = A.all};
		A.all = j->cur = in;
		A.held += j->rus;
		rusk_dtask_spec s = {.rus = j->rus,
		                     .run_ns = j->run_ns,
		                     .profile = A.profile[j->cls],
		                     .user = in};
		/* On failure REJECTED has been delivered here already (and the job refused). */
		rusk_dispatch_submit(A.d, UINT32_MAX, &s, &in->id);
		break;
	case RUSK_PLAN_PREEMPT: /* a running BE job: pending again, restarts from scratch */
	case RUSK_PLAN_KILL:    /* a running SLO job that can no longer make its deadline */
		if (in == NULL)
			return; /* it ended while the planner planned: moot */
		j->cur = NULL;
		in->stopped = true;
		in->ending = !end_stopped(in);
		if (a->act == RUSK_PLAN_PREEMPT)
			A.preempted++;
		else
			resolve(j, &A.killed);
		break;
	case RUSK_PLAN_DROP: resolve(j, &A.dropped); break; /* pending SLO job, too late */
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static double unit(void) /* xorshift64: [0, 1) */
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

static int fail(const char *what, const char *err)
{
	fprintf(stderr, "%s: %s\n", what, err);
	return 1;
}

/* Agents with a 50 ms DiffSync gap over the two partitions, judging RUs by interference. */
static void agent_params(void *arg, uint32_t i, rusk_agent_params *ap)
{
	(void)arg;
	rusk_sync_params sp = {.policy = RUSK_SYNC_DIFF, .partitions = 2, .agents = 2};
	sp.gap_ns = 50000000, sp.start_ns = rusk_clock_now(A.clock);
	rusk_agent_params_init(ap, &sp, i);
	ap->quality = RUSK_QUALITY_INTERFERENCE;
}

int main(void)
{
	char err[256];
	rusk_thread_register(); /* classifying, retraining and completing need it */

	/* 1. Quasar: train on TRAIN measured workloads, then classify each job class from two
	 * profiled entries; the caused intensities become its dispatcher profile. */
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = TRAIN + CLASSES;
	rusk_cls_truth *truth;
	if (rusk_cls_truth_generate(&gp, &truth, err, sizeof err) != RUSK_OK)
		return fail("generator", err);
	const rusk_cls_matrix *m = rusk_cls_truth_matrix(truth, RUSK_CLS_INTERFERENCE);
	rusk_cls_params clp;
	rusk_cls_params_init(&clp, RUSK_CLS_INTERFERENCE_COLS);
	rusk_cls *cls;
	if (rusk_cls_create(&clp, &cls, err, sizeof err) != RUSK_OK)
		return fail("classifier", err);
	for (uint32_t r = 0; r < TRAIN; r++) { /* every column measured, no noise */
		rusk_cls_entry e[RUSK_CLS_INTERFERENCE_COLS];
		uint32_t n;
		rusk_cls_profile_row(m, RUSK_CLS_INTERFERENCE, r, RUSK_CLS_INTERFERENCE_COLS, 0, r,
		                     e, &n);
		if (rusk_cls_add_row(cls, e, n, NULL, err, sizeof err) != RUSK_OK)
			return fail("training row", err);
	}
	rusk_cls_train_info ti;
	if (rusk_cls_retrain(cls, &ti, err, sizeof err) != RUSK_OK)
		return fail("retrain", err);
	double off = 0; /* |estimated - true| caused intensity, for the summary */
	for (uint32_t k = 0; k < CLASSES; k++) {
		rusk_cls_entry e[2];
		uint32_t n;
		double est[RUSK_CLS_INTERFERENCE_COLS];
		if (rusk_cls_profile_row(m, RUSK_CLS_INTERFERENCE, TRAIN + k, 2, 0.03, k, e, &n) ||
		    rusk_cls_classify(cls, e, n, est, NULL) != RUSK_OK)
			return fail("classify", "failed");
		for (uint32_t r = 0; r < RUSK_N_RESOURCES; r++) {
			double v = est[RUSK_N_RESOURCES + r]; /* caused on resource r */
			A.profile[k].c[r] = (uint8_t)(v < 0 ? 0 : v > 99 ? 99 : v + 0.5);
			double t = rusk_cls_matrix_get(m, TRAIN + k, RUSK_N_RESOURCES + r);
			off += (v > t ? v - t : t - v) / (CLASSES * RUSK_N_RESOURCES);
		}
	}
	rusk_cls_destroy(cls);
	rusk_cls_truth_destroy(truth);

	/* 2. A cluster of 16 machines x 4 RUs in two partitions, and its dispatcher. */
	rusk_cluster_params cp;
	rusk_cluster_params_init(&cp);
	cp.machines = 16, cp.rus_per_machine = 4;
	cp.machines_per_rack = 4, cp.racks_per_cell = 2, cp.partitions = 2;
	rusk_cluster *c;
	if (rusk_cluster_create(&cp, &c, err, sizeof err) != RUSK_OK)
		return fail("cluster", err);
	A.clock = rusk_cluster_clock(c);
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&A.mu, &ma);
	rusk_dispatch_params dp;
	rusk_dispatch_params_init(&dp, 2);
	dp.agent_params = agent_params;
	dp.on_event = on_event;
	if (rusk_dispatch_create(c, &dp, &A.d, err, sizeof err) != RUSK_OK)
		return fail("dispatcher", err);

	/* 3. The predictor, and a 3Sigma planner for the cluster's RUs (50 ms slots). */
	rusk_predict_params qp;
	rusk_predict_params_init(&qp);
	rusk_plan_params pp;
	rusk_plan_params_init(&pp, RUSK_PLAN_3SIGMA, rusk_cluster_rus(c));
	pp.slot_s = 0.05;
	pp.budget_s = 0.005;
	if (rusk_predict_create(&qp, &A.pred, err, sizeof err) != RUSK_OK ||
	    rusk_plan_create(&pp, &A.plan, err, sizeof err) != RUSK_OK)
		return fail("predictor/planner", err);

	/* 4. The workload: JOBS arrivals over 0.8 s, half of them SLO jobs. */
	for (uint32_t i = 0; i < JOBS; i++) {
		job *j = &A.jobs[i];
		j->cls = (uint32_t)(unit() * CLASSES);
		j->rus = class_shape[j->cls].rus;
		double run_s = class_shape[j->cls].run_ms * (0.6 + 0.8 * unit()) / 1e3;
		j->run_ns = (uint64_t)(run_s * 1e9);
		j->submit_s = (i + unit()) * 0.8 / JOBS;
		j->deadline_s = unit() < 0.5 ? j->submit_s + 0.05 + run_s * (1.5 + unit()) : 0;
		rusk_job_init(&j->feat);
		j->feat.name = j->cls;
		j->feat.resources = j->rus;
		j->feat.queue = j->deadline_s > 0;
	}
	A.unresolved = JOBS;

	/* 5. The loop: new arrivals go to the planner with their prediction, the cycle's
	 * actions go to the dispatcher; until every job is resolved and every task ended. */
	static rusk_plan_action acts[JOBS];
	A.t0 = rusk_clock_now(A.clock);
	if (rusk_dispatch_start(A.d) != RUSK_OK)
		return fail("dispatcher", "start");
	uint32_t next = 0;
	for (bool done = false; !done;) {
		static ended_job ended[JOBS];
		pthread_mutex_lock(&A.mu);
		size_t n_ended = A.n_ended;
		memcpy(ended, A.ended, n_ended * sizeof *ended);
		A.n_ended = 0;
		for (inst *in = A.all; in != NULL; in = in->next) /* stops left to this cycle */
			if (in->ending && in->terminal == 0)
				in->ending = !end_stopped(in);
		/* The planner hands a stopped job's RUs to its starts at once, but the stopped
		 * task holds them until its DONE or REJECTED: held may exceed the cluster. */
		uint32_t rus = rusk_cluster_rus(c), free_rus = A.held < rus ? rus - A.held : 0;
		pthread_mutex_unlock(&A.mu);

		double now = now_s(rusk_clock_now(A.clock));
		/* The planner forgets the jobs that ended: completed, or cancelled when refused (or
		 * when it preempted or killed them as they ended). */
		for (size_t k = 0; k < n_ended; k++)
			if (ended[k].refused || rusk_plan_complete(A.plan, ended[k].id, now))
				rusk_plan_cancel(A.plan, ended[k].id);
		for (; next < JOBS && A.jobs[next].submit_s <= now; next++) {
			job *j = &A.jobs[next];
			rusk_prediction pr;
			rusk_dist dist; /* empty while nothing is learned: estimate_s stands */
			rusk_predict(A.pred, &j->feat, &pr, &dist);
			A.by_expert += pr.source == RUSK_PRED_EXPERT;
			rusk_plan_job pj = {.id = next,
			                    .cores = j->rus,
			                    .submit_s = j->submit_s,
			                    .deadline_s = j->deadline_s,
			                    .dist = &dist,
			                    .estimate_s =
			                            pr.estimate_s > 0 ? pr.estimate_s : CYCLE_S};
			A.errors += rusk_plan_submit(A.plan, &pj) != RUSK_OK;
		}
		size_t n = 0;
		A.errors += rusk_plan_tick(A.plan, now, free_rus, acts, JOBS, &n, NULL) != RUSK_OK;

		pthread_mutex_lock(&A.mu);
		for (size_t k = 0; k < n; k++)
			apply(&acts[k]);
		done = (next == JOBS && A.unresolved == 0 && A.held == 0) || now > 30 || A.errors;
		pthread_mutex_unlock(&A.mu);
		nanosleep(&(struct timespec){0, (long)(CYCLE_S * 1e9)}, NULL);
	}

	/* 6. Stop, check, report. */
	rusk_dispatch_stop(A.d, true);
	rusk_dispatch_stats st;
	rusk_dispatch_stats_get(A.d, &st);
	int rc = rusk_dispatch_check(A.d, err, sizeof err);
	unsigned once = 0, ends = 0, tasks = 0;
	for (uint32_t i = 0; i < JOBS; i++)
		once += A.jobs[i].resolved == 1;
	for (inst *in = A.all; in != NULL; in = in->next)
		tasks++, ends += in->terminal == 1;
	bool ok = rc == RUSK_OK && A.errors == 0 && once == JOBS && ends == tasks &&
	          st.submitted == tasks && rusk_cluster_free_rus(c) == rusk_cluster_rus(c);
	printf("classifier: %u workloads (rmse %.3f); %d classes from 2 entries each, caused "
	       "intensity off by %.1f of 100\n",
	       ti.rows, ti.rmse, CLASSES, off);
	printf("jobs: SLO %u met, %u late, %u dropped, %u killed; BE %u done; %u refused; %u "
	       "preemptions; %u of %d predicted by an expert\n",
	       A.met, A.late, A.dropped, A.killed, A.be_done, A.refused, A.preempted, A.by_expert,
	       JOBS);
	printf("stops: %u completed (running), %u cancelled (queued), %u ended at placement, %u "
	       "over already\n",
	       A.completed, A.cancelled, A.at_placement, A.over);
	printf("dispatcher: %u tasks, %llu placed, %llu cancelled; accounting: %s\n", tasks,
	       (unsigned long long)st.placed, (unsigned long long)st.cancelled,
	       rc == RUSK_OK ? "adds up" : err);
	printf("%s: %u of %d jobs resolved once, %u of %u tasks ended once, %llu of %u RUs "
	       "free, %d calls failed\n",
	       ok ? "invariants hold" : "INVARIANT FAILED", once, JOBS, ends, tasks,
	       (unsigned long long)rusk_cluster_free_rus(c), rusk_cluster_rus(c), A.errors);

	rusk_dispatch_destroy(A.d);
	rusk_plan_destroy(A.plan);
	rusk_predict_destroy(A.pred);
	while (A.all != NULL) {
		inst *in = A.all;
		A.all = in->next;
		free(in);
	}
	rusk_cluster_destroy(c);
	rusk_thread_unregister();
	return ok ? 0 : 1;
}
