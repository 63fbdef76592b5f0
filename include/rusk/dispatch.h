/* SPDX-License-Identifier: MIT */
/*
 * The scheduling loop as a library: everything between "a task arrives" and "its RUs are
 * released", around the agents of rusk/sched.h.
 *
 * A dispatcher owns N agents and, for each, a submission queue (lock-free, any number of
 * submitting threads), local queues (high priority first, then the retry list, admission
 * waiters that are due, then the rest), the retry list that keeps each task's submission
 * time, admission waits with their bound (Tarcil §4, rusk/admit.h), high-priority bypass
 * and preemption (Tarcil §5.3: a preempted task goes back to the front of the retry list
 * and the embedder is told; it is never lost), completion on a timer or on the embedder's
 * call, per-agent counters and delay histograms, and a shutdown that accounts for every
 * task. The embedder learns what happens through one callback (rusk_dispatch_event).
 *
 * Threads. rusk_dispatch_start runs one thread per agent and one completer. An idle agent
 * spins briefly, then parks on an event count (Concurrency Kit's ck_ec over a futex) and
 * is woken by the next submission, its view's next sync, its next admission check or a
 * stop: the hand-off costs one wake-up, not a polling period. The callback runs on the
 * agent thread (PLACED, PREEMPTED, REJECTED by the kernel), on the completer (DONE) or on
 * the submitting thread (REJECTED at submission), on the failing thread (REVOKED) or on
 * the destroying thread (DONE); it must not block, and may call rusk_dispatch_submit and
 * rusk_dispatch_complete (but a job runs only once its PLACED callback has returned:
 * completing it from there gets RUSK_EAGAIN; set ev->run_ns = 0 to end it at once).
 *
 * One dispatcher per cluster: preemption and rusk_dispatch_revoked find a job by the
 * kernel task id that holds an RU, and ids of tasks placed by anything else on the
 * cluster (another dispatcher, the embedder's own agents) would name jobs of d.
 *
 * Accounting, checked by rusk_dispatch_check:
 *   submitted = placed - preempted - revoked + rejected + queued
 * where "queued" is what the agents still held when they stopped.
 *
 * A job is a slot of the dispatcher (max_jobs of them); it is the embedder's from
 * rusk_dispatch_submit until its DONE or REJECTED event, after which the slot is reused.
 */
#ifndef RUSK_DISPATCH_H
#define RUSK_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/admit.h>
#include <rusk/cluster.h>
#include <rusk/sched.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rusk_dispatch rusk_dispatch;
typedef struct rusk_dtask rusk_dtask;

/* What the embedder submits. Copied by rusk_dispatch_submit (preferred included). */
typedef struct rusk_dtask_spec {
	uint32_t rus;              /* RUs wanted, >= 1 */
	uint8_t priority;          /* > 0: bypasses queued tasks and admission, may preempt */
	uint64_t run_ns;           /* ended run_ns after its placement by the completer;
	                            * RUSK_RUN_UNTIL_COMPLETE: by rusk_dispatch_complete */
	uint64_t submit_ns;        /* its submission time on the cluster clock (delays count
	                            * from it); 0: now */
	const uint32_t *preferred; /* preferred machines (quality model SCORE), may be NULL;
	                            * not copied: valid until its DONE or REJECTED event */
	uint32_t n_preferred;
	rusk_profile profile; /* interference it causes (quality model INTERFERENCE) */
	void *user;           /* the embedder's, handed back in every event */
	uint8_t placement;    /* rusk_placement_pref (default ANY) */
	rusk_vec_demand vec;  /* memory and GPUs on its machine (rusk/vec.h): such a task is
	                       * placed whole on one machine, whatever placement and the
	                       * dispatcher's gang say; all zero: RUs only */
} rusk_dtask_spec;

#define RUSK_RUN_UNTIL_COMPLETE UINT64_MAX

typedef enum rusk_dispatch_event_kind {
	RUSK_EV_PLACED = 0,    /* all its RUs are committed: leases[0..n_leases) */
	RUSK_EV_PREEMPTED = 1, /* a high-priority task took its RUs: it is queued again */
	RUSK_EV_DONE = 2,      /* ended (timer or rusk_dispatch_complete), RUs released */
	RUSK_EV_REJECTED = 3,  /* refused: `error` says why; its slot is free again */
	RUSK_EV_REVOKED = 4,   /* its machine failed (rusk_dispatch_revoked): its other RUs
	                        * were released and it is queued again */
	RUSK_EV_WAITING = 5,   /* admission control holds it back for the first time: `admit`
	                        * is the decision (its estimate of when the missing RUs will
	                        * have been freed, the bound); on the agent's thread */
} rusk_dispatch_event_kind;

typedef struct rusk_dispatch_event {
	rusk_dispatch_event_kind kind;
	uint32_t agent;  /* the agent that placed, preempted or refused it (REVOKED: 0;
	                  * REJECTED after a revocation: UINT32_MAX) */
	int error;       /* REJECTED: RUSK_EINVAL / RUSK_EINFEASIBLE (the kernel's verdict,
	                  * see rusk_task_check), RUSK_EAGAIN (its agent's queue was full),
	                  * RUSK_ENOMEM, RUSK_ESTOPPED (submitted, or revoked and to be
	                  * queued again, after stop began); REVOKED: RUSK_EOFFLINE; else
	                  * RUSK_OK */
	rusk_dtask *job; /* valid until the callback returns for DONE and REJECTED */
	uint64_t id;     /* the kernel task id (lease owner) of this tenure */
	void *user;
	const rusk_lease *leases; /* PLACED: its leases, valid while it runs */
	uint32_t n_leases;
	const rusk_placement *placement; /* PLACED: the last placement call's report */
	uint64_t time_ns;                /* when it happened (cluster clock) */
	uint64_t delay_ns; /* PLACED: scheduling delay, from submission (or preemption) */
	uint64_t run_ns;   /* PLACED: how long it will run; the callback may change it (e.g.
	                    * a task runs faster on its preferred machines) */
	const rusk_admit_decision *admit; /* WAITING: the admission decision; else NULL */
} rusk_dispatch_event;

typedef void (*rusk_dispatch_cb)(void *arg, rusk_dispatch_event *ev);

typedef struct rusk_dispatch_params {
	uint32_t agents;   /* >= 1 */
	uint32_t batch;    /* tasks an agent takes per round before it ticks its view again
	                    * (default 100, ParSync §4.3) */
	uint32_t ring;     /* per-agent submission queue, a power of two (default 65536) */
	uint32_t spin_ns;  /* an idle agent polls its queue this long before it parks
	                    * (default 2000: a longer spin buys a little delay with CPU) */
	uint64_t max_jobs; /* job slots (default 1 << 20) */
	/* Agent i's parameters: agent_params(arg, i, out), or, when NULL, the defaults of
	 * rusk_agent_params_init for a DiffSync policy over `agents` agents. */
	void (*agent_params)(void *arg, uint32_t i, rusk_agent_params *out);
	rusk_admit *admit;          /* admission control (not owned), or NULL */
	rusk_quality_model quality; /* for admission's contention vectors */
	bool gang;                  /* multi-RU tasks all-or-nothing (default incremental) */
	uint64_t seed;              /* victim sampling of preemption */
	rusk_dispatch_cb on_event;  /* may be NULL */
	void *arg;
} rusk_dispatch_params;

/* Defaults documented above, for n agents. */
void rusk_dispatch_params_init(rusk_dispatch_params *p, uint32_t agents);

/*
 * rusk_dispatch_create: a dispatcher on c (which must outlive it) with its agents and
 * queues; nothing runs until rusk_dispatch_start. RUSK_EINVAL (message in err) for bad
 * parameters, RUSK_ENOMEM. Any thread.
 */
int rusk_dispatch_create(rusk_cluster *c, const rusk_dispatch_params *p, rusk_dispatch **out,
                         char *err, size_t errlen);
/* Stops it if running (rusk_dispatch_stop), ends the tasks still running until completed
 * (their RUs go back to the cluster; DONE on this thread) and frees it. Not concurrently
 * with any other call on d. */
void rusk_dispatch_destroy(rusk_dispatch *d);

/*
 * rusk_dispatch_submit: queues a task on agent `agent` (UINT32_MAX: round robin). Any
 * thread, lock-free. Returns RUSK_OK (and the job in *out, may be NULL); RUSK_EINVAL or
 * RUSK_EINFEASIBLE for a task the kernel could never place (rusk_task_check), RUSK_EAGAIN
 * when the agent's queue or the job slots are full, RUSK_ESTOPPED after stop began; in
 * each of these cases a REJECTED event was delivered on this thread first and the task
 * counts as rejected. d or s NULL, or `agent` out of range: RUSK_EINVAL, nothing
 * delivered nor counted.
 */
int rusk_dispatch_submit(rusk_dispatch *d, uint32_t agent, const rusk_dtask_spec *s,
                         rusk_dtask **out);

/*
 * rusk_dispatch_complete: the embedder says job j has ended (any run_ns): its RUs are
 * released and DONE is delivered on this thread. RUSK_OK; RUSK_EAGAIN if it is not running
 * now (queued, or preempted and not yet placed again: call again after its next PLACED);
 * RUSK_EINVAL for a job not of d. Any registered thread (rusk_thread_register).
 */
int rusk_dispatch_complete(rusk_dispatch *d, rusk_dtask *j);

/*
 * rusk_dispatch_revoked: a rusk_revoke_fn for rusk_machine_fail(c, m, rusk_dispatch_revoked,
 * d): the running task holding `lease` loses its tenure (its other RUs are released),
 * REVOKED is delivered on the failing thread, and it goes back to an agent's queue with
 * its delay counted from now; a task not of d, or no longer running, is left alone (an
 * incremental task still waiting for RUs gives back what it holds when its agent next
 * takes it). Any registered thread.
 */
void rusk_dispatch_revoked(uint64_t task, rusk_lease lease, void *d);

/* Starts the agent threads and the completer. RUSK_ENOMEM (threads) after stopping what
 * started. Once: RUSK_EINVAL when started before or stopped. */
int rusk_dispatch_start(rusk_dispatch *d);

/* rusk_dispatch_close: no more submissions (RUSK_ESTOPPED); each agent stops once it has
 * placed (or refused) everything it holds. Returns at once. Any thread, idempotent. */
void rusk_dispatch_close(rusk_dispatch *d);
/* Whether every agent has stopped after rusk_dispatch_close (all queued work done). */
bool rusk_dispatch_drained(const rusk_dispatch *d);

/*
 * rusk_dispatch_stop: no more submissions; with `drain`, waits until the agents have
 * placed (or refused) everything queued; then stops and joins the threads. Tasks still
 * queued stay counted as queued (stats.queued_end; also what was submitted to a
 * dispatcher never started); running tasks with a finite run_ns are ended and released
 * (DONE); those with RUSK_RUN_UNTIL_COMPLETE keep their RUs until rusk_dispatch_complete
 * (or rusk_dispatch_destroy). Without drain every wait inside wakes on the stop. A drain
 * waits for room as long as it takes: a queued task that needs RUs held by tasks nobody
 * completes, or on machines that stay down, keeps it waiting (parked, no CPU) until
 * another thread completes them or brings machines up; to bound it, call
 * rusk_dispatch_close, poll rusk_dispatch_drained until a deadline of yours, then
 * rusk_dispatch_stop(d, false). Idempotent, from one thread. Not from a callback.
 */
void rusk_dispatch_stop(rusk_dispatch *d, bool drain);

typedef struct rusk_dispatch_stats {
	uint64_t submitted, placed, rejected, preempted, revoked, released, queued_end;
	uint64_t requeued;               /* placement calls that gave the task back (RUSK_EAGAIN) */
	uint64_t attempts, commits_lost; /* commit attempts, and those that lost an RU */
	uint64_t admission_waited;       /* tasks admission control held back */
	uint64_t queued;                 /* in the agents' queues now (approximate while running) */
	/* scheduling delay of placed tasks (submission or preemption to placement), ns */
	uint64_t delay_p50_ns, delay_p99_ns, delay_p999_ns, delay_max_ns;
	double delay_mean_ns;
	double agent_cpu_s; /* CPU time of the agent threads (after stop) */
} rusk_dispatch_stats;

/* Sums over every agent (relaxed reads: exact after stop). Any thread. */
void rusk_dispatch_stats_get(const rusk_dispatch *d, rusk_dispatch_stats *out);
/* The accounting identities above, after stop: RUSK_OK or RUSK_EINVAL (message in err). */
int rusk_dispatch_check(const rusk_dispatch *d, char *err, size_t errlen);
/* Agent i's kernel agent (its view, parameters). */
rusk_agent *rusk_dispatch_agent(rusk_dispatch *d, uint32_t i);

#ifdef __cplusplus
}
#endif

#endif
