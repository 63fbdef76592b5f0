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
 * A task that does not fit waits aside. When an agent's view has no room for a task (no
 * machine with m free RUs for a whole-machine task, fewer than m free for a gang, ...),
 * the task leaves the queue for the agent's aside list until the agent's view next syncs
 * (only a sync, or the agent's own preemptions, can show it more room), and the tasks
 * behind it go on; a task no smaller and no less constrained than one that just failed
 * goes aside without a try. Aside tasks come back, in their order, at the front of the
 * retry list. A multi-RU task that has come back `reserve_syncs` times without fitting
 * becomes its agent's reservation (one per agent): it is placed incrementally within its
 * placement kind, keeping the RUs it wins while it waits for the rest on the same machine
 * (rack), so that tasks taking every RU as it frees cannot starve it (a backfilling
 * scheduler's reservation, held in the master state where every agent respects it). It
 * runs only once it holds all its RUs (PLACED), whatever its commit mode says.
 *
 * Partial holds. An incremental task (RUSK_COMMIT_INCREMENTAL) keeps the RUs it wins and
 * waits for the rest beside them; two such tasks placed by agents whose views had not yet
 * seen each other's commits can split one machine (rack) between them, each waiting for an
 * RU the other holds. A task holding part of its RUs, or a reservation, that has not grown
 * for 2 x reserve_syncs of its agent's syncs (at least 2) gives back what it holds and
 * starts again (stats.given_back), so such a pair never waits for ever.
 *
 * Handles. A submitted task is named by a rusk_dtask_id: its task slot and that slot's use.
 * The value is also the owner id of its leases in the master array (rusk/ru.h). A handle
 * stays valid until the task's terminal event (DONE or REJECTED); afterwards every call
 * with it returns RUSK_ESTALE and touches nothing, even once its slot serves another
 * task (uses are counted modulo 2^32 per slot, so a handle kept across 2^32 reuses of its
 * slot could alias; no other aliasing).
 *
 * Every submitted task ends with exactly one terminal event: DONE (it ran and its RUs
 * were released, by its timer, rusk_dispatch_complete or rusk_dispatch_destroy) or
 * REJECTED with a reason (`error`: refused at submission, refused by the kernel, cancelled
 * by rusk_dispatch_cancel, or still queued when the dispatcher stopped: RUSK_ESTOPPED).
 *
 * Threads. rusk_dispatch_start runs one thread per agent; each agent also ends the tasks
 * it placed when their run_ns is up (a timing wheel of its own: no completer thread, no
 * hand-off of each placed task to another core). An idle agent spins briefly, then parks
 * on an event count (Concurrency Kit's ck_ec over a futex) and is woken by the next
 * submission, its view's next sync, its next timed end, its next admission check, a
 * cancellation or a stop: the hand-off costs one wake-up, not a polling period, and only
 * a parked agent is woken (a busy one's lines are not written by its submitters).
 *
 * Shared words on the per-task path (what scales with cores): per agent, its submission
 * ring (written by its submitters and by it), its in-flight count (its submitters), its
 * free-slot stack (its submitters pop, whoever ends its tasks pushes), the task slot itself
 * (the submitter writes it, the agent reads it); in the kernel, the RU words, per-machine
 * and per-partition counters (rusk/ru.h). Nothing is shared by all submitters or all
 * agents: statistics are per agent and summed on read, a round robin is per thread, and
 * rare events (refusals, revocations, cancellations) use shared atomic counters.
 *
 *   call                          from                     concurrently with
 *   rusk_dispatch_params_init     any thread               everything
 *   rusk_dispatch_create/destroy  any thread               nothing else on d (destroy);
 *                                                          no rusk_machine_fail on c
 *   rusk_dispatch_submit(_batch)  any thread               every call but destroy
 *   rusk_dispatch_complete        registered thread        every call but destroy
 *   rusk_dispatch_cancel          any thread               every call but destroy
 *   rusk_dispatch_start/stop      one controlling thread   submit, complete, cancel
 *   rusk_dispatch_close/drained   any thread               every call but destroy
 *   rusk_dispatch_stats_get       any thread               every call but destroy
 *   rusk_dispatch_load            any thread               every call but destroy
 *   rusk_dispatch_check           after stop               (exact only then)
 *   rusk_dispatch_revoked         registered thread (the   every call but destroy
 *                                 one in rusk_machine_fail)
 *   from the event callback       its thread (below)       submit, complete, cancel only;
 *                                                          never stop or destroy
 *
 * Events are delivered on: the agent thread (PLACED, PREEMPTED, WAITING, REJECTED by the
 * kernel, by a cancellation or at a stop, DONE at a timed end or a stop), the submitting
 * thread (REJECTED at submission), the completing thread (DONE), the failing thread
 * (REVOKED),
 * the stopping or destroying thread (REJECTED with RUSK_ESTOPPED for a dispatcher never
 * started, DONE). The callback must not block; it may call rusk_dispatch_submit,
 * rusk_dispatch_complete and rusk_dispatch_cancel (a task runs only once its PLACED
 * callback has returned: completing it from there gets RUSK_ENOTRUNNING; set ev->run_ns =
 * 0 to end it at once).
 *
 * One dispatcher per cluster (a second gets RUSK_EBUSY): it attaches to the cluster and
 * learns of machine failures by itself (rusk_machine_fail revokes its tasks on the failed
 * machine whatever callback the caller passes). Preemption and revocation act only on
 * leases the dispatcher's own tasks hold: RUs the embedder holds directly, under any id,
 * are left alone.
 *
 * Accounting, checked by rusk_dispatch_check:
 *   submitted = placed - preempted - revoked + rejected + queued_end
 * where "queued_end" is what the agents still held when they stopped (each got REJECTED
 * with RUSK_ESTOPPED) and "rejected" includes cancellations.
 */
#ifndef RUSK_DISPATCH_H
#define RUSK_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/admit.h>
#include <rusk/cluster.h>
#include <rusk/quota.h>
#include <rusk/sched.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rusk_dispatch rusk_dispatch;

/* A submitted task's handle (see "Handles" above); 0 is never a task. */
typedef uint64_t rusk_dtask_id;

/* The dispatcher's handles, which are also its tasks' lease owner ids, lie in
 * [RUSK_DISPATCH_ID_BASE, RUSK_TASK_ID_MAX]. An embedder that commits tasks of its own on
 * the same cluster (rusk_agent_place) gives them ids below it; the dispatcher never
 * preempts or revokes an RU whose owner lies below it, nor one its own task does not hold
 * under that lease. */
#define RUSK_DISPATCH_ID_BASE (UINT64_C(1) << 39)

/* How a multi-RU task commits (rusk_dtask_spec.commit). */
typedef enum rusk_commit_mode {
	RUSK_COMMIT_DEFAULT = 0,     /* the dispatcher's rusk_dispatch_params.gang */
	RUSK_COMMIT_GANG = 1,        /* all its RUs in one all-or-nothing commit */
	RUSK_COMMIT_INCREMENTAL = 2, /* it keeps the RUs it wins and waits for the rest, where
	                              * its placement kind allows (the same machine, the same
	                              * rack, other machines for spread); it runs once it holds
	                              * them all */
} rusk_commit_mode;

/* What the embedder submits. Copied by rusk_dispatch_submit (preferred excepted). */
typedef struct rusk_dtask_spec {
	uint32_t rus;              /* RUs wanted, >= 1 */
	uint8_t priority;          /* > 0: bypasses queued tasks and admission, may preempt */
	uint64_t run_ns;           /* ended run_ns after its placement by its agent;
	                            * RUSK_RUN_UNTIL_COMPLETE: by rusk_dispatch_complete */
	uint64_t submit_ns;        /* its submission time on the cluster clock (delays count
	                            * from it; a time still to come counts as now); 0: now */
	const uint32_t *preferred; /* preferred machines (quality model SCORE), may be NULL;
	                            * not copied: valid until its DONE or REJECTED event */
	uint32_t n_preferred;
	rusk_profile profile; /* interference it causes (quality model INTERFERENCE) */
	void *user;           /* the embedder's, handed back in every event */
	uint8_t placement;    /* rusk_placement_pref (default ANY) */
	uint8_t commit;       /* rusk_commit_mode (default: the dispatcher's) */
	rusk_vec_demand vec;  /* memory and GPUs on its machine (rusk/vec.h): such a task is
	                       * placed whole on one machine in one commit, whatever placement
	                       * and commit say; all zero: RUs only */
	uint16_t group;       /* its quota group: 0 none (never limited), k: the dispatcher's
	                       * rusk_dispatch_params.groups[k - 1] (see "Quota groups") */
} rusk_dtask_spec;

#define RUSK_RUN_UNTIL_COMPLETE UINT64_MAX

typedef enum rusk_dispatch_event_kind {
	RUSK_EV_PLACED = 0,    /* all its RUs are committed: leases[0..n_leases) */
	RUSK_EV_PREEMPTED = 1, /* a high-priority task took its RUs: it is queued again */
	RUSK_EV_DONE = 2,      /* ended (timer, rusk_dispatch_complete or destroy), RUs
	                        * released: terminal */
	RUSK_EV_REJECTED = 3,  /* never ran to its end: `error` says why; terminal */
	RUSK_EV_REVOKED = 4,   /* its machine failed: its other RUs were released and it is
	                        * queued again */
	RUSK_EV_WAITING = 5,   /* admission control holds it back for the first time: `admit`
	                        * is the decision (its estimate of when the missing RUs will
	                        * have been freed, the bound); on the agent's thread */
} rusk_dispatch_event_kind;

typedef struct rusk_dispatch_event {
	rusk_dispatch_event_kind kind;
	uint32_t agent;     /* the agent that placed, preempted or refused it (REVOKED: 0;
	                     * REJECTED after a revocation: UINT32_MAX) */
	int error;          /* REJECTED: RUSK_EINVAL / RUSK_EINFEASIBLE (the kernel's verdict,
	                     * see rusk_task_check), RUSK_EFULL (its agent's queue or the task
	                     * slots were full), RUSK_ENOMEM, RUSK_ECANCELED (rusk_dispatch_cancel),
	                     * RUSK_ESTOPPED (submitted after stop began, or still queued when
	                     * the agents stopped); REVOKED: RUSK_EOFFLINE; else RUSK_OK */
	rusk_dtask_id task; /* its handle, also the owner id of its leases (0: REJECTED at
	                     * submission, before it had one) */
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
	uint32_t agents;        /* >= 1 */
	uint32_t batch;         /* tasks an agent takes per round before it ticks its view again
	                         * (default 100, ParSync §4.3) */
	uint32_t ring;          /* per-agent submission queue, a power of two (default 65536) */
	uint32_t spin_ns;       /* an idle agent polls its queue this long before it parks
	                         * (default 2000: a longer spin buys a little delay with CPU) */
	uint64_t max_tasks;     /* task slots: tasks submitted and not yet ended (default 1 << 20);
	                         * memory for them is taken as they are first used */
	uint32_t reserve_syncs; /* a multi-RU task aside for this many of its agent's view
	                         * syncs becomes the agent's reservation (default 2; 0: never) */
	/* Agent i's parameters: agent_params(arg, i, out), or, when NULL, the defaults of
	 * rusk_agent_params_init for a DiffSync policy over `agents` agents. */
	void (*agent_params)(void *arg, uint32_t i, rusk_agent_params *out);
	rusk_admit *admit;          /* admission control (not owned), or NULL */
	rusk_quality_model quality; /* for admission's contention vectors */
	bool gang;                  /* multi-RU tasks all-or-nothing by default (default false:
	                             * incremental; rusk_dtask_spec.commit overrides it) */
	uint64_t seed;              /* victim sampling of preemption */
	rusk_dispatch_cb on_event;  /* may be NULL */
	void *arg;
	/* Quota groups (see "Quota groups" below): n_groups of them (0: none, the default),
	 * copied by rusk_dispatch_create; the coordinator runs every quota_period_ns (default
	 * 10 ms; 0: only when the embedder calls rusk_dispatch_quota_round). */
	const rusk_quota_group *groups;
	uint32_t n_groups;
	uint64_t quota_period_ns;
} rusk_dispatch_params;

/* Defaults documented above, for n agents. NULL is ignored. Any thread. */
void rusk_dispatch_params_init(rusk_dispatch_params *p, uint32_t agents);

/*
 * rusk_dispatch_create: a dispatcher on c (which must outlive it) with its agents and
 * queues, attached to c; nothing runs until rusk_dispatch_start. RUSK_EINVAL (message in
 * err) for bad parameters, RUSK_EBUSY when c has a dispatcher already, RUSK_ENOMEM (message
 * in err). Any thread, not concurrently with a topology change of c.
 */
int rusk_dispatch_create(rusk_cluster *c, const rusk_dispatch_params *p, rusk_dispatch **out,
                         char *err, size_t errlen);
/* Stops it if running (rusk_dispatch_stop), ends the tasks still running until completed
 * (their RUs go back to the cluster; DONE on this thread), detaches it from its cluster and
 * frees it. It costs what the run used, not max_tasks. Not concurrently with any other
 * call on d. NULL is ignored. */
void rusk_dispatch_destroy(rusk_dispatch *d);

/*
 * rusk_dispatch_submit: queues a task on agent `agent` (UINT32_MAX: round robin). Any
 * thread, lock-free. Returns RUSK_OK (and its handle in *out, which may be NULL);
 * RUSK_EINVAL or RUSK_EINFEASIBLE for a task the kernel could never place
 * (rusk_task_check), RUSK_EFULL when the agent's queue or the task slots are full,
 * RUSK_ENOMEM, RUSK_ESTOPPED after stop began; in each of these cases a REJECTED event
 * was delivered on this thread first and the task counts as rejected. d or s NULL, an
 * unknown commit mode or group, or `agent` out of range: RUSK_EINVAL, nothing
 * delivered nor counted.
 */
int rusk_dispatch_submit(rusk_dispatch *d, uint32_t agent, const rusk_dtask_spec *s,
                         rusk_dtask_id *out);

/*
 * rusk_dispatch_submit_batch: n submissions to one agent (UINT32_MAX: the next of this
 * thread's round robin), as n calls of rusk_dispatch_submit would make them but with one
 * in-flight mark and at most one wake-up of the agent for the lot. out[k] (may be NULL)
 * gets each handle (0 when refused), rcs[k] (may be NULL) each return code, *accepted (may
 * be NULL) how many were queued. Returns RUSK_OK when all were, else the first refusal's
 * code (each refused one got its REJECTED event, as with rusk_dispatch_submit). d NULL,
 * s NULL with n > 0, an unknown commit mode or group in any spec, or `agent` out of range:
 * RUSK_EINVAL, nothing submitted. Any thread, lock-free.
 */
int rusk_dispatch_submit_batch(rusk_dispatch *d, uint32_t agent, const rusk_dtask_spec *s, size_t n,
                               rusk_dtask_id *out, int *rcs, size_t *accepted);

/*
 * rusk_dispatch_complete: the embedder says `task` has ended (any run_ns): its RUs are
 * released and DONE is delivered on this thread. RUSK_OK; RUSK_ENOTRUNNING if it is
 * queued (not placed yet, or preempted or revoked and not placed again: call again after
 * its next PLACED, or cancel it); RUSK_ESTALE if it has ended (DONE or REJECTED) — also
 * when its slot now serves another task, which is left alone; RUSK_EINVAL for d NULL or a
 * value that was never a handle of d. Any registered thread (rusk_thread_register).
 */
int rusk_dispatch_complete(rusk_dispatch *d, rusk_dtask_id task);

/*
 * rusk_dispatch_cancel: withdraws a queued task. RUSK_OK: it will not run; its agent
 * gives back any RUs it holds (an incremental task waiting for the rest) and delivers
 * REJECTED with RUSK_ECANCELED on its thread (at once if it is idle, else after the task
 * it is placing; for a dispatcher not started, at stop). A cancel that races with the
 * task's placement wins or loses as a whole: either REJECTED or PLACED follows, never
 * both. RUSK_ERUNNING if it runs (complete it instead), RUSK_ESTALE if it has ended or
 * was cancelled before, RUSK_EINVAL as for complete. Any thread, lock-free.
 */
int rusk_dispatch_cancel(rusk_dispatch *d, rusk_dtask_id task);

/*
 * rusk_dispatch_revoked: a rusk_revoke_fn for rusk_machine_fail. Since the dispatcher
 * attaches to its cluster, passing it is optional (the failure reaches the dispatcher
 * either way, once). The running task holding `lease` loses its tenure (its other RUs are
 * released), REVOKED is delivered on the failing thread, and it goes back to an agent's
 * queue with its delay counted from now; a lease that no task of d holds is left alone
 * (an incremental task still waiting for RUs gives back what it holds when its agent next
 * takes it). Any registered thread.
 */
void rusk_dispatch_revoked(uint64_t task, rusk_lease lease, void *d);

/* Starts the agent threads. RUSK_ENOMEM (threads) after stopping what started. Once:
 * RUSK_EINVAL when started before or stopped, or d NULL. */
int rusk_dispatch_start(rusk_dispatch *d);

/* rusk_dispatch_close: no more submissions (RUSK_ESTOPPED); each agent stops once it has
 * placed (or refused) everything it holds. Returns at once. Any thread, idempotent. */
void rusk_dispatch_close(rusk_dispatch *d);
/* Whether every agent has stopped after rusk_dispatch_close (all queued work done).
 * False for NULL. */
bool rusk_dispatch_drained(const rusk_dispatch *d);

/*
 * rusk_dispatch_stop: no more submissions; with `drain`, waits until the agents have
 * placed (or refused) everything queued; then stops and joins the threads. Tasks still
 * queued then (also what was submitted to a dispatcher never started) get REJECTED with
 * RUSK_ESTOPPED and count as stats.queued_end; running tasks with a finite run_ns are
 * ended and released (DONE); those with RUSK_RUN_UNTIL_COMPLETE keep their RUs until
 * rusk_dispatch_complete (or rusk_dispatch_destroy). Without drain every wait inside wakes
 * on the stop. A drain waits for room as long as it takes: a queued task that needs RUs
 * held by tasks nobody completes, or on machines that stay down, keeps it waiting (parked,
 * no CPU) until another thread completes them or brings machines up; to bound it, call
 * rusk_dispatch_close, poll rusk_dispatch_drained until a deadline of yours, then
 * rusk_dispatch_stop(d, false). Idempotent, from one thread. Not from a callback. NULL is
 * ignored.
 */
void rusk_dispatch_stop(rusk_dispatch *d, bool drain);

typedef struct rusk_dispatch_stats {
	uint64_t submitted, placed, rejected, preempted, revoked, released, queued_end;
	uint64_t cancelled;              /* of rejected: by rusk_dispatch_cancel */
	uint64_t requeued;               /* placement calls that gave the task back (RUSK_EAGAIN) */
	uint64_t attempts, commits_lost; /* commit attempts, and those that lost an RU */
	uint64_t admission_waited;       /* tasks admission control held back */
	uint64_t aside;                  /* times a task was put aside for want of room */
	uint64_t reservations;           /* tasks that became their agent's reservation */
	uint64_t given_back;             /* partial holds given back after they stopped growing (a
	                                  * reservation's, or an incremental task's: "Partial holds") */
	uint64_t queued;                 /* in the agents' queues now (approximate while running) */
	/* scheduling delay of placed tasks (submission or preemption to placement), ns */
	uint64_t delay_p50_ns, delay_p99_ns, delay_p999_ns, delay_max_ns;
	double delay_mean_ns;
	double agent_cpu_s; /* CPU time of the agent threads (after stop) */
} rusk_dispatch_stats;

/* Sums over every agent (relaxed reads: exact after stop) into *out. d or out NULL:
 * nothing (out zeroed when not NULL). Any thread. */
void rusk_dispatch_stats_get(const rusk_dispatch *d, rusk_dispatch_stats *out);
/* The accounting identity above, after stop: RUSK_OK, or RUSK_EINVAL (message in err) when
 * it fails or d is NULL. */
int rusk_dispatch_check(const rusk_dispatch *d, char *err, size_t errlen);
/* An agent's load, for submitters that balance theirs (rusk_dispatch_load). */
typedef struct rusk_dispatch_agent_load {
	uint64_t queued;        /* tasks submitted to it and not placed yet (its submission
	                         * queue and its local queues) */
	uint64_t view_free_rus; /* free RUs its view shows: what it can still place before its
	                         * next syncs (ParSync: a view learns of frees only then) */
} rusk_dispatch_agent_load;

/*
 * rusk_dispatch_load: agent i's load, as of its last round (approximate, a hint). For
 * submitters that balance their load: a light load kept on one agent while its queue is
 * short and its view has room costs one wake-up of one warm agent per burst, where spread
 * over every agent it wakes each of them (more CPU per task with more agents); a heavy one
 * must be spread, as one agent's view runs out of room between its syncs. RUSK_OK, or
 * RUSK_EINVAL for d or out NULL or i out of range. Any thread; reads two words the agent
 * writes at most once per round.
 */
int rusk_dispatch_load(const rusk_dispatch *d, uint32_t i, rusk_dispatch_agent_load *out);
/* Agent i's kernel agent (its view, parameters); NULL for d NULL or i out of range. */
rusk_agent *rusk_dispatch_agent(rusk_dispatch *d, uint32_t i);

/*
 * Quota groups (ParSync §2 and §7; rusk/quota.h for the allocation). A dispatcher created
 * with n_groups > 0 limits the tasks that name a group (rusk_dtask_spec.group) to the
 * group's current allowance; tasks of group 0 are never limited, and a dispatcher without
 * groups runs exactly as before (nothing on its per-task path looks at groups).
 *
 * Usage. A task counts in its group's usage, as its demand vector (RUs, memory MiB, GPU
 * milli-shares = gpus x gpu_milli), from its agent's admission of it until its tenure ends
 * (DONE, preempted, revoked) or it leaves unplaced (given back, cancelled, refused,
 * stopped). Counters are per agent: "taken" written by the agent alone, "returned" by an
 * atomic add from whichever thread ends the tenure; the coordinator merges them.
 *
 * The coordinator (a thread of the dispatcher, every quota_period_ns, or the embedder's
 * rusk_dispatch_quota_round) reads usage and held-back demand, computes each group's
 * allocation (weighted DRF max-min with minimums and maximums, rusk_quota_allocate), adds
 * to each group the capacity nobody asked for in proportion to its weight (never above its
 * maximum): its allowance; splits the allowance's headroom (allowance - usage) among the
 * agents in proportion to the demand each held back (evenly when none), and publishes it
 * all with RCU. It also checks its allocation with rusk_quota_verify each round.
 *
 * Enforcement, lock-free on the per-task path: an agent admits a grouped task that holds
 * nothing yet while what it admitted of that group this round is below its share in every
 * dimension, else parks it until the next round (its demand counted as held back). The
 * bound: a group's usage exceeds its allowance by at most one task per agent per round,
 * i.e. agents x the group's largest task demand (rusk_dispatch_group.bound), as every
 * agent checks before admitting and its shares sum to the headroom; releases between
 * rounds only lower usage.
 *
 * Reclaim: a round marks the groups below min(minimum, demand) in some dimension and those
 * above both their allowance and their minimum. An agent whose task of a marked-below
 * group finds no room preempts normal-priority running tasks of marked-above groups (as a
 * high-priority task does: PREEMPTED, requeued at the front of its retry list, never
 * lost), at most 32 victims per agent per round, so a group's minimum is met within
 * ceil(minimum / (32 x agents)) rounds of room-less tries even when others arrived first
 * and never end. A group that took idle capacity loses it the same way only down to its
 * allowance, and only to a group below its minimum.
 */
typedef struct rusk_dispatch_group {
	uint64_t round;         /* coordinator rounds so far */
	uint64_t round_ns;      /* cluster time of the last round */
	rusk_quota_vec usage;   /* as the last round merged it */
	rusk_quota_vec demand;  /* usage + held back since the round before */
	rusk_quota_vec alloc;   /* its DRF max-min allocation */
	rusk_quota_vec allow;   /* its allowance: alloc + weighted unclaimed capacity */
	rusk_quota_vec bound;   /* the overshoot bound (agents x its largest task) */
	rusk_quota_vec over;    /* the largest usage - allowance seen at any round (0: never
	                         * above), against the allowance of the round before */
	uint64_t held_back;     /* tasks parked for want of allowance, in all */
	uint64_t fair_failures; /* rounds whose allocation failed rusk_quota_verify (0) */
} rusk_dispatch_group;

/*
 * rusk_dispatch_quota_round: one coordinator round now (see above). RUSK_OK; RUSK_EINVAL
 * for d NULL or a dispatcher without groups; RUSK_ENOMEM. Registered thread
 * (rusk_thread_register), outside any RCU read-side section (it waits for a grace period
 * before it reads the agents' usage, so no admission under the old allowances is missed);
 * concurrently with every call but destroy and another round (the coordinator thread's:
 * call it only with quota_period_ns 0).
 */
int rusk_dispatch_quota_round(rusk_dispatch *d);
/*
 * rusk_dispatch_group_get: group k's (1..n_groups) figures as of the last round into *out.
 * RUSK_OK, or RUSK_EINVAL for d or out NULL, no groups or k out of range. Registered
 * thread (reads the RCU-published round); any time but during destroy.
 */
int rusk_dispatch_group_get(const rusk_dispatch *d, uint32_t k, rusk_dispatch_group *out);

#ifdef __cplusplus
}
#endif

#endif
