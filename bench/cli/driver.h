/* SPDX-License-Identifier: MIT */
/*
 * What `rusk run` (real time, run.c) and `rusk sim` (virtual time, sim.c) share: the
 * flags, the workload (generator or trace), the per-agent queues with admission control,
 * priorities and preemption, the accounting of placements and completions, the per-second
 * series and the summary (text, JSON, CSV). Only the clock and the interleaving differ.
 *
 * Task life: generated -> an agent's queue (high-priority queue, retry list, admission
 * wait heap, normal queue) -> placed (RUNNING, tenure t) -> completed (DONE), or
 * preempted by a high-priority task (back to QUEUED with tenure t + 1, on the preempting
 * agent's retry list). The state word tk->st = tenure << 2 | state is the one place where
 * a completion and a preemption race (real time): a CAS decides who ends the tenure.
 * Accounting: submitted = placed - preempted + rejected + backlog, released = placed -
 * preempted; the summary checks both.
 */
#ifndef RUSK_CLI_DRIVER_H
#define RUSK_CLI_DRIVER_H

#include <ck_ring.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "atomic.h"
#include "cli.h"
#include "heap.h"
#include "hist.h"
#include "loadgen.h"
#include "rng.h"

#define DRV_RING_SIZE  (1u << 16)
#define DRV_MAX_PHASES 16
#define DRV_MAX_GROUPS 4
#define D_BINS         10

enum { TS_QUEUED = 0, TS_RUNNING = 1, TS_DONE = 2 };

typedef struct run_task {
	uint64_t id, submit_ns, dur_ns;
	uint64_t st;           /* tenure << 2 | TS_*; atomic (see above) */
	uint64_t end_ns;       /* end of the current tenure */
	uint64_t wait_from_ns; /* admission: first told to wait (0: never) */
	uint64_t ready_ns;     /* admission: next check / sim: key in the wait heap */
	uint64_t requeue_ns;   /* preempted: when; its re-placement delay counts from here */
	rusk_lease *l;         /* rus slots in the run's lease pool */
	uint32_t *pref;        /* preferred machines, n_pref of them */
	rusk_profile prof;     /* interference it causes (--quality interference) */
	uint16_t rus, placed;
	uint8_t n_pref, prio;
	bool dequeued, admitted;
} run_task;

typedef struct run_cfg {
	uint32_t agents, batch, task_rus;
	double rate, phase_s, duration_s, task_ms;
	double phases[DRV_MAX_PHASES];
	int n_phases;
	int dist; /* 0 exp, 1 lognormal, 2 fixed */
	const char *json, *csv, *trace;
	int trace_format;
	double time_scale; /* 0: fit the trace's span to the run */
	bool rate_set;
	uint32_t preferred; /* preferred machines per task */
	/* Load groups (ParSync §5.2 Fig. 4): agent i belongs to group i mod n_groups. */
	int n_groups;
	double gphases[DRV_MAX_GROUPS][DRV_MAX_PHASES];
	int gn_phases[DRV_MAX_GROUPS];
	rusk_quality_model quality;
	rusk_sync_policy sync;
	uint64_t gap_ms, tau_ms, sample;
	rusk_strategy strategy;
	/* Admission control and priorities (Tarcil §4, §5.3). */
	bool admission, gang, global_lock, quiet;
	bool latency_ignores_pref; /* --latency-preferred off: ParSync's Latency-first */
	uint32_t buckets;
	double priority_share;
	double alpha; /* ParSync Table 1: run time x alpha on preferred machines (0: off) */
	/* Virtual time (rusk sim): the cost model. */
	bool sim;
	double decision_us, sync_latency_us, commit_latency_us;
	uint32_t max_retries;
	/* Trace replay, for the report: the file's tasks and span, the time scale applied
	 * (times divided by it) and the shifted copies laid over it. */
	size_t trace_tasks;
	double trace_span_s, trace_scale;
	uint32_t trace_replicas;
	char trace_path[4096];
	char trace_note[4800];
} run_cfg;

typedef struct agent_stats {
	/* conflicts: commit attempts that lost at least one RU, of `attempts`; rus_lost: the
	 * RUs those lost (a multi-RU commit may lose several) */
	uint64_t placed, conflicts, rus_lost, attempts, requeued, r_sum, r_max, rus_placed,
	        pref_tasks;
	uint64_t preempted, preemptions, adm_waited, adm_bound, placed_hi;
	uint64_t refused;        /* the kernel refused the task outright (RUSK_EINVAL): rejected */
	uint64_t qmode_tasks;    /* tasks placed by a Quality-first decision (Adaptive's mode) */
	uint64_t last_done_ns;   /* latest placement (makespan, ParSync Table 2) */
	uint64_t tet_us;         /* sum of task execution times (ParSync Table 1) */
	uint64_t q_micro;        /* sum of placed quality x 1e6 (score or Q), relaxed */
	uint64_t d_bins[D_BINS]; /* placed RUs by rank D of their slot score (score model) */
	rusk_hist queue, place, stale, sample, commit, admission;
	/* Scheduling delay by priority; all tasks' is their sum (drv_delay_merge), which only
	 * the report's totals keep in `delay`: one record per placed task, not two. */
	rusk_hist delay_hi, delay_lo, delay;
} agent_stats;

/* dst += an agent's scheduling delays, both priorities. */
static inline void drv_delay_merge(rusk_hist *dst, const agent_stats *s)
{
	rusk_hist_merge(dst, &s->delay_hi);
	rusk_hist_merge(dst, &s->delay_lo);
}

static inline bool wait_before(run_task *const *x, run_task *const *y)
{
	return (*x)->ready_ns < (*y)->ready_ns;
}
/* Admission waiters by their next check. */
HEAP_DEFINE(wait_heap, run_task *, wait_before)

/* A deque of tasks (an agent's local queues). */
typedef struct tq {
	run_task **a;
	size_t head, n, cap;
} tq;

typedef struct run_agent {
	pthread_t tid;
	uint32_t index;
	struct run *run;
	ck_ring_t in, done;
	ck_ring_buffer_t *in_buf, *done_buf;
	tq hi, retry, lo;   /* owned by the agent */
	wait_heap wait;     /* admission waiters */
	agent_stats st;     /* written by this agent only; read relaxed by the sampler */
	rusk_view_stats vs; /* at exit */
	double busy_s;      /* CPU (run) or modelled (sim) busy time */
	/* Its kernel agent: created before any thread starts and destroyed after every one
	 * has joined, so the completer may release through agent 0's (drv_release). */
	rusk_agent *handle;
	int err;
	bool started; /* run: its thread was created (and must be joined) */
	/* sim only */
	uint64_t busy_until;
	bool idle;
	run_task *cur;
	uint32_t *chosen;
	uint32_t tries;
	uint64_t t_start, dec_ns;
	rusk_placement pl;
	rusk_rng prng;   /* victim sampling (drv_preempt), seeded from the run's seed */
	uint64_t n_left; /* tasks still queued at the end */
} run_agent;

/* Workload generator state: groups of phased Poisson processes merged, or a trace. */
typedef struct drv_gen {
	rusk_loadgen g[DRV_MAX_GROUPS];
	rusk_arrival next[DRV_MAX_GROUPS];
	bool live[DRV_MAX_GROUPS];
	uint32_t rr[DRV_MAX_GROUPS];
	uint32_t members[DRV_MAX_GROUPS]; /* agents per group (drv_group_size) */
	uint64_t id, pool_used;
	size_t ti;
	rusk_rng prng;
} drv_gen;

typedef struct run {
	run_cfg cfg;
	rusk_cluster *c;
	rusk_admit *adm;
	run_agent *ag;
	run_task *tasks;
	uint64_t n_tasks_cap;
	rusk_lease *pool;
	uint64_t pool_cap;
	rusk_arrival *trace;
	size_t n_trace;
	uint32_t *pref_pool;
	uint32_t *score_sorted; /* every RU's slot score (milli), ascending: D by search */
	uint8_t *ru_dbin;       /* each RU's D bin (score model) */
	uint64_t submitted, rejected, released; /* single writers, relaxed */
	/* Of `rejected`, the generator's reasons: more RUs than the cluster has (the kernel
	 * would refuse it: never queued), or the run's task pools full. The rest found their
	 * agent's ring full. */
	uint64_t rej_too_large, rej_pool;
	int gen_done, stop; /* flags, release/acquire */
	int comp_stop;      /* run: the completer's last drain (after every agent joined) */
	uint32_t fail;      /* RUSK_ENOMEM once any thread ran out of memory (drv_fail) */
	uint64_t t0;
	uint64_t seed;
	FILE *csv;
	FILE *json; /* opened by drv_setup, before the run; written by drv_report */
	FILE *out;  /* the summary: stdout, or /dev/null with --quiet */
	/* per-second sampler state */
	rusk_hist prev, *per_agent, *snap;
	double *medians;
	uint64_t prev_placed, prev_conf, max_tput, prev_q, prev_pref, prev_qmode;
	double util_sum;
	double util_acc; /* this second's utilization samples (drv_util_sample), summed */
	uint32_t util_n; /* and counted; drv_second averages and resets them */
	int secs;
	double elapsed_s;
	double wall_s; /* sim: wall time of the simulation */
	uint64_t events;
	uint64_t stuck; /* tasks left queued that fit an idle cluster at the end (a check) */
} run;

/* Flags of run and sim (run_opts.c). Returns 0 to go on, or an exit status (help printed:
 * -1). Refuses (RUSK_EXIT_USAGE, naming both flags) --json and --csv naming one file, or
 * either naming the trace. */
int drv_parse(int argc, char **argv, bool sim, cli_cluster *cc, run_cfg *cfg);
/* The agents' sync policy, strategy and knobs as the flags gave them (cli.h's builder),
 * with `seed`. */
cli_agents drv_cli_agents(const run_cfg *cfg, uint64_t seed);
/* Trace, outputs (--json and --csv opened here, before the run: a bad path costs nothing),
 * cluster, admission, task and lease pools; prints the header. 0 or exit status. */
int drv_setup(run *R, cli_cluster *cc);
/* Frees what drv_setup made; every thread of the run must have been joined. */
void drv_free(run *R);

/* SIGINT and SIGTERM ask run and sim to stop: the handler only records the signal, the
 * loops poll drv_stop_signal() (every sleep is sliced so that it wakes within 100 ms).
 * One-shot: a second signal has its default effect (ends the process at once). */
void drv_signals_install(void);
/* The signal that asked to stop (SIGINT or SIGTERM), or 0. Any thread. */
int drv_stop_signal(void);
/* A thread of the run ran out of memory doing `what`: prints it (first caller only), sets
 * R->fail and asks every thread to stop; the report's status is RUSK_EXIT_NOMEM. */
void drv_fail(run *R, const char *what);
/* Out of memory where nothing can be given back (an agent-local queue): prints `what` and
 * ends the process with RUSK_EXIT_NOMEM at once, without running exit handlers under the
 * other threads' feet. Never returns. */
_Noreturn void drv_oom_exit(const char *what);
uint32_t drv_group_size(const run_cfg *cfg, int k);
/* Agent `index`'s parameters from the flags (sync policy starting at R->t0). */
void drv_agent_params(const run *R, uint32_t index, rusk_agent_params *ap);

/* Statistics have one writer (their agent) and relaxed readers (the sampler). */
static inline void stat_add(uint64_t *p, uint64_t d)
{
	rusk_store64(p, rusk_load64(p, RUSK_RELAXED) + d, RUSK_RELAXED);
}

void drv_gen_init(run *R, drv_gen *G);
/* The next arrival in time order; false at the end of the workload. */
bool drv_gen_next(run *R, drv_gen *G, rusk_arrival *x, int *grp);
/* Makes the task for arrival x, submitted at submit_ns, and picks its agent; NULL when the
 * run's pools are full (the caller counts it rejected). */
run_task *drv_gen_task(run *R, drv_gen *G, const rusk_arrival *x, int grp, uint64_t submit_ns,
                       run_agent **dest);

/* Agent-local queues: push and pop inline, growing out of line (every task passes through
 * one). */
void tq_grow(tq *q);
static inline void tq_push(tq *q, run_task *t, bool front)
{
	if (q->n == q->cap)
		tq_grow(q);
	if (front) {
		q->head = (q->head + q->cap - 1) & (q->cap - 1);
		q->a[q->head] = t;
	} else {
		q->a[(q->head + q->n) & (q->cap - 1)] = t;
	}
	q->n++;
}
static inline run_task *tq_pop(tq *q)
{
	if (q->n == 0)
		return NULL;
	run_task *t = q->a[q->head];
	q->head = (q->head + 1) & (q->cap - 1);
	q->n--;
	return t;
}
static inline void drv_enqueue(run_agent *a, run_task *tk)
{
	tq_push(tk->prio > 0 ? &a->hi : &a->lo, tk, false);
}
/* Next task to try at `now`: high priority, then retries (at most `*retries`), then
 * admission waiters that are due, then the normal queue. NULL: nothing to do now. */
run_task *drv_next(run_agent *a, uint64_t now, size_t *retries);
/* Tasks in a's local queues. */
size_t drv_queued(const run_agent *a);
/* Earliest time an admission waiter is due (UINT64_MAX: none). */
uint64_t drv_next_wake(const run_agent *a);
/* Admission control: true to place now; false: parked in the wait heap. The check
 * itself (drv_admit_check) runs only with admission on, for a task not yet admitted. */
bool drv_admit_check(run *R, run_agent *a, run_task *tk, uint64_t now);
static inline bool drv_admit(run *R, run_agent *a, run_task *tk, uint64_t now)
{
	return R->adm == NULL || tk->admitted || drv_admit_check(R, a, tk, now);
}
/* The rusk_task to place for tk (its remaining RUs). */
rusk_task drv_task(const run *R, const run_task *tk);
/* Accounts a placement of pl->placed RUs that completes tk (or part of it, incremental):
 * returns true when tk now runs (caller hands it to completion with its end_ns). */
bool drv_placed(run *R, run_agent *a, rusk_agent *ag, run_task *tk, const rusk_placement *pl,
                uint64_t t_deq, uint64_t t_done);
/* Counts a placement call's commit attempts and conflicts (both units) in a's stats. */
static inline void drv_count_commits(run_agent *a, const rusk_placement *pl)
{
	stat_add(&a->st.attempts, pl->attempts);
	stat_add(&a->st.conflicts, pl->commits_lost);
	stat_add(&a->st.rus_lost, pl->conflicts);
}
/* Tasks in a's queues (admission waiters included) whose remaining RUs are <= free_rus. */
uint64_t drv_placeable(const run_agent *a, uint64_t free_rus);
/* Not placed this time: back to the retry list. */
void drv_gave_back(run_agent *a, run_task *tk);
/* A high-priority task found no room: preempt low-priority running tasks holding RUs
 * (found by sampling the master array), mark their RUs free in v, put them on a's retry
 * list. Returns RUs freed: 0 without preempting while v shows room for the task (then it
 * failed for another reason, and preempting would not help it). */
uint32_t drv_preempt(run *R, run_agent *a, rusk_view *v, const run_task *tk, uint64_t now);
/* Releases a task's leases as the run's design does (rusk_agent_release: under the
 * cluster's lock for central and global-lock). Every agent of a run has the same design
 * (drv_agent_params), so agent 0's handle serves any thread. */
int drv_release(run *R, const run_task *tk, size_t *rejected);
/* Ends tenure `tenure` of tk and releases its RUs; false if it was preempted first. */
bool drv_complete(run *R, run_task *tk, uint32_t tenure);
uint32_t drv_tenure(const run_task *tk);
/* Releases what unfinished incremental tasks of agent a hold (end of run). */
void drv_agent_drain(run *R, run_agent *a);

/* The per-second series and the summary: report.c. */
#include "report.h"

#endif
