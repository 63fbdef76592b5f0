/* SPDX-License-Identifier: MIT */
/*
 * Scheduling agents: placement quality, statistically sized sampling and the strategies
 * (Tarcil §3.2-3.3; ParSync §5.2 and §6; Sparrow-style and Quasar-style baselines).
 *
 * An agent owns a local view (rusk/sync.h), a seeded generator and its strategy state. It
 * is used by one thread at a time, registered with RCU (rusk_thread_register). For each
 * task it samples R candidates per requested RU from its view, keeps the best by the
 * task's quality, commits them to the master array, and on a conflict marks the lost RU
 * in its view and samples again, a bounded number of times; then it gives the task back
 * (RUSK_EAGAIN) holding nothing, for the caller to re-queue with its submission time.
 *
 * Threads. R: the caller is registered (rusk_thread_register, rusk/sync.h). An agent, like
 * its view, is used by one thread at a time ("the agent's thread").
 *
 *   call                                from                    concurrently with
 *   rusk_quality_target, rusk_sample_   any thread              everything (pure functions)
 *     size, rusk_strategy_parse/_name,
 *     rusk_agent_params_init
 *   rusk_quality_q                      any thread              everything (relaxed reads of
 *                                                               the live interference sums)
 *   rusk_task_check                     any thread              everything
 *   rusk_agent_create                   any thread              everything; the caller owns it
 *   rusk_agent_choose                   R, the agent's thread   other agents, commits, releases,
 *                                                               publishes, topology changes
 *   rusk_agent_place                    R, the agent's thread   the same; one call at a time per
 *                                                               task id; rusk_machine_fail may
 *                                                               revoke what it returns at once
 *                                                               ("Revocations" below)
 *   rusk_agent_release                  any thread              every call, the agent's own
 *                                                               included (it reads only the
 *                                                               agent's parameters, which never
 *                                                               change)
 *   rusk_agent_observe_delay,           the agent's thread      other agents
 *     _current_strategy, _delay_ema_ns,
 *     rusk_agent_view and its view's
 *     calls
 *   rusk_agent_destroy                  the agent's owner       nothing on that agent,
 *                                                               rusk_agent_release included
 *
 * The `central` and `global-lock` baselines take the cluster's one mutex inside
 * rusk_agent_place and rusk_agent_release; every other strategy is lock-free.
 */
#ifndef RUSK_SCHED_H
#define RUSK_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/cluster.h>
#include <rusk/ru.h>
#include <rusk/sync.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- quality ------------------------------------------------------------------------ */

typedef enum rusk_quality_model {
	/* ParSync §4.3/§6: each RU has a slot score; higher is better. A task may list
	 * preferred machines: those come first, and quality = share of tasks placed there. */
	RUSK_QUALITY_SCORE = 0,
	/* Tarcil §3.2 eq. 1-5: the task's interference profile gives its target T_W; an RU's
	 * utility U_H comes from what its machine's other tenants cause; Q per eq. 5, scaled by
	 * the platform's relative speed. A task's preferred machines (e.g. the machines a
	 * Quasar allocation was sized on, rusk/classify.h) are looked up in the master array,
	 * not the view, and outrank every draw while they can hold it; Q ranks within them. */
	RUSK_QUALITY_INTERFERENCE = 1,
	/* Vector packing (rusk/vec.h): a vector task's candidate machines are judged by how
	 * little GPU capacity they leave in pieces (free milli-GPU on GPUs that are partly
	 * in use) and how tightly the task fills what is left of cores, memory and GPUs
	 * (best fit), in the spirit of the openb trace's study of GPU fragmentation. RU-only
	 * tasks are ranked by slot score, as under SCORE. */
	RUSK_QUALITY_PACKING = 2,
	/* Fragmentation-aware (after FGD, Weng et al., ATC'23): a vector task goes to the
	 * candidate machine where it raises least the expected free GPU capacity that a task
	 * drawn from the workload could not use (the workload's GPU task types learned online
	 * by each agent from the tasks it decides). RU-only tasks by slot score. */
	RUSK_QUALITY_FGD = 3,
} rusk_quality_model;

/* Tarcil eq. 1-2: the target quality T_W in [0, 1] of a task that causes `prof` (NULL:
 * the zero profile). */
double rusk_quality_target(const rusk_profile *prof);
/*
 * Tarcil eq. 3-5 for a free RU `ru` and a task causing `prof`: U_H from the machine's
 * interference sums (the other tenants' average, ordered by the task's most critical
 * resources), then Q, then scaled by platform speed / fastest speed. In [0, 1]. Reads the
 * live sums with relaxed loads. -1 when ru is out of range.
 */
double rusk_quality_q(const rusk_cluster *c, uint32_t ru, const rusk_profile *prof);

/* ---- sample size ---------------------------------------------------------------------- */

/*
 * rusk_sample_size: the smallest R with Pr[best of R has D below the target] <= eps
 * (Tarcil eq. 6: x^R), where the target D is `target` when every RU is free. With only a
 * share `free_share` of the RUs free, the good RUs still free are assumed to be that share
 * of the good ones, so the same guarantee needs x' = 1 - (1 - target) * free_share
 * (Tarcil §3.3 "Sampling at high load"). Capped at r_max; at least 1.
 */
uint32_t rusk_sample_size(double eps, double target, double free_share, uint32_t r_max);

/* ---- tasks and placements --------------------------------------------------------------- */

typedef enum rusk_placement_pref {
	RUSK_PLACE_ANY = 0,     /* best RUs anywhere (batch sampling: R*m candidates, best m) */
	RUSK_PLACE_MACHINE = 1, /* all RUs on one machine, judged by aggregate quality */
	RUSK_PLACE_RACK = 2,    /* all RUs in one rack, judged by aggregate quality */
	RUSK_PLACE_SPREAD = 3,  /* every RU on a different machine */
} rusk_placement_pref;

/* A task to place. The caller owns it; the agent only reads it during the call. */
typedef struct rusk_task {
	uint64_t id;               /* 1..RUSK_TASK_ID_MAX */
	uint32_t rus;              /* RUs wanted, >= 1 */
	bool gang;                 /* all-or-nothing (true) or incremental (false) */
	uint8_t placement;         /* rusk_placement_pref */
	uint8_t priority;          /* 0 normal; > 0 high: bypasses admission (rusk/admit.h) */
	rusk_profile profile;      /* interference it causes (quality model INTERFERENCE) */
	const uint32_t *preferred; /* preferred machines (SCORE, INTERFERENCE), may be NULL */
	uint32_t n_preferred;
	uint64_t submit_ns;     /* kept for the caller's re-queue */
	rusk_vec_demand vec;    /* memory and GPUs on its machine (rusk/vec.h); all zero: RUs
	                         * only. Non-zero requires placement MACHINE and gang */
	const rusk_lease *held; /* RUs it already holds ("Held RUs" below); n_held 0: none
	                         * (held may then be NULL). Not counted in rus */
	uint32_t n_held;
	bool reserve; /* with gang false: may start with fewer RUs than the view shows room for
	               * ("Reservations" below) */
} rusk_task;
/*
 * Held RUs (`held`, `n_held`): an incremental task (gang false) that was placed in part
 * comes back for the rest with the leases it already holds in held[0..n_held) and, in
 * `rus`, only the RUs it still wants. The placement kind holds over the whole task, held
 * RUs included: the remainder goes where the kind allows beside them:
 *   RUSK_PLACE_MACHINE  only on the machine of the held RUs
 *   RUSK_PLACE_RACK     only in the rack of the held RUs
 *   RUSK_PLACE_SPREAD   only on machines holding none of them
 *   RUSK_PLACE_ANY      anywhere
 * The same rule binds rusk_agent_place's own retries within one call: after a commit
 * that won part of an incremental task, what is still missing goes beside what it won
 * (MACHINE and RACK: with the group of held[0], or else of the first lease won; SPREAD:
 * on machines of neither list). An incremental remainder whose group has fewer free RUs
 * than wanted takes what there is (at least one), or gets RUSK_EAGAIN when there is none;
 * a gang one gets RUSK_EAGAIN until all of them are free there.
 *
 * rusk_task_check refuses with RUSK_EINVAL, naming "held": held NULL with n_held > 0, a
 * held RU out of range, held RUs on more than one machine (MACHINE) or rack (RACK), and
 * any n_held > 0 on a vector task (vector tasks are always gang). RUSK_EINFEASIBLE naming
 * "rus": n_held + rus more than the held RUs' machine (MACHINE) or rack (RACK) has slots,
 * than the cluster has machines (SPREAD) or RUs (ANY). Only the leases' RUs are read, not
 * their owners: the caller vouches that the task holds them. A gang task may list held
 * RUs too: its `rus` then come all at once, beside them.
 *
 * Reservations (`reserve`, incremental tasks only). An incremental task normally starts
 * only when the view shows room for all of it (rus free RUs; for MACHINE or RACK a group
 * with rus free); conflicts may then leave it holding part. A reserving one starts with
 * what there is: at least one free RU anywhere (ANY), the drawn group with the most free
 * RUs (MACHINE, RACK; ties by quality), the machines there are (SPREAD); it keeps them and
 * gets the rest beside them, as they free (Held RUs). That is a backfilling scheduler's
 * reservation held in the master array, where every agent respects it; the caller bounds
 * how many exist at once, since two reserving tasks that share a group can wait on each
 * other for ever (the dispatcher keeps one per agent and gives up one that stops growing).
 */

/* What one placement call did. */
typedef struct rusk_placement {
	uint32_t placed;       /* RUs committed: leases[0..placed) */
	uint32_t sample_size;  /* R used for this decision */
	uint32_t samples;      /* candidates drawn */
	uint32_t attempts;     /* commit attempts (first try plus retries) */
	uint32_t conflicts;    /* RUs lost to other tasks or offline machines */
	uint32_t strategy;     /* rusk_strategy actually used (Adaptive reports which) */
	uint32_t preferred;    /* RUs placed on preferred machines */
	double quality;        /* mean quality of the placed RUs (score or Q) */
	uint64_t staleness_ns; /* staleness of the partition sampled first */
	uint64_t sample_ns;    /* cluster-clock time spent choosing (all attempts) */
	uint64_t commit_ns;    /* cluster-clock time spent committing (all attempts) */
	uint64_t end_ns;       /* cluster-clock reading when the call finished (place only):
	                        * callers timing the whole call need no clock read of their own */
	uint32_t commits_lost; /* commit attempts that lost at least one RU (<= attempts;
	                        * conflicts counts the RUs) */
	/* The decision's work, all attempts (what rusk sim's work-based cost charges): RUs
	 * examined (candidates drawn, weighted draws rejected, preferred RUs looked up,
	 * probes of a partition's quality) and partitions scanned (ranked by expected
	 * quality, or visited for candidates). */
	uint32_t examined;
	uint32_t partitions;
	const char *invalid;   /* on RUSK_EINVAL / RUSK_EINFEASIBLE from a task check: the
	                        * task's field at fault ("task", "id", "rus", "placement",
	                        * "preferred", "profile", "held"; for a vector task "mem_mib",
	                        * "gpus", "gpu_milli", "gpu_models" or "shape": each fits
	                        * some machine, none holds them together), a static string;
	                        * NULL otherwise */
	uint32_t memory_short; /* a vector task's commits refused because its machine's memory
	                        * or GPU shares were short (its RUs free): not conflicts; the
	                        * machine is then skipped for such tasks until this agent's view
	                        * syncs or the machine's shares change here */
} rusk_placement;

/* ---- agents ------------------------------------------------------------------------------ */

typedef enum rusk_strategy {
	RUSK_STRATEGY_LATENCY = 0,  /* freshest partitions first, then the least stale */
	RUSK_STRATEGY_QUALITY = 1,  /* the partition with the best expected quality first,
	                             * candidates drawn by weighted sampling on quality */
	RUSK_STRATEGY_ADAPTIVE = 2, /* Quality-first while the delay EMA < tau, else Latency */
	RUSK_STRATEGY_RANDOM = 3,   /* baseline: Sparrow-style, R = 2 per RU, no preferences */
	RUSK_STRATEGY_CENTRAL = 4,  /* baseline: one lock, full scan of the master state for
	                             * the best RUs (Quasar §3.3 greedy ranking) */
} rusk_strategy;

typedef struct rusk_agent_params {
	uint32_t index;             /* agent number, < sync.agents */
	rusk_sync_params sync;      /* its sync policy (rusk/sync.h) */
	rusk_strategy strategy;     /* default LATENCY */
	rusk_quality_model quality; /* default SCORE */
	uint32_t sample;            /* R per RU; 0 = automatic from eps/target (default 0) */
	double eps;                 /* default 0.05 */
	double target;              /* target D at no load, default 0.8 */
	uint32_t r_max;             /* cap, default 32 */
	uint32_t max_retries;       /* re-samples after conflicts before RUSK_EAGAIN, default 8 */
	uint64_t tau_ns;            /* Adaptive threshold, default 1 s */
	double ema_alpha;           /* Adaptive EMA weight of the newest delay, default 0.1 */
	uint64_t seed;
	bool global_lock;       /* baseline "global-lock": same sampling, every commit (and
	                         * every rusk_agent_release) under one cluster-wide mutex
	                         * (default false) */
	bool latency_preferred; /* Latency-first looks up a task's preferred machines (in
	                         * the freshest partition that has one free; under
	                         * INTERFERENCE all of them) before sampling (default true);
	                         * false = ParSync's Latency-first, which ignores preferences */
} rusk_agent_params;

typedef struct rusk_agent rusk_agent;

/* Defaults documented above, for agent `index` of a DiffSync policy p (NULL: zeroed). NULL
 * ap is ignored. Any thread. */
void rusk_agent_params_init(rusk_agent_params *ap, const rusk_sync_params *p, uint32_t index);

/* Parses latency|quality|adaptive|random|central; RUSK_EINVAL otherwise (NULL included). */
int rusk_strategy_parse(const char *name, rusk_strategy *out);
const char *rusk_strategy_name(rusk_strategy s);

/*
 * rusk_agent_create: an agent on cluster c with its own view. RUSK_EINVAL (with a message)
 * for bad parameters, RUSK_EPOLICY for an impossible sync policy, RUSK_ENOMEM. Any thread;
 * the caller owns it.
 */
int rusk_agent_create(rusk_cluster *c, const rusk_agent_params *ap, rusk_agent **out, char *err,
                      size_t errlen);
void rusk_agent_destroy(rusk_agent *a);
/* The agent's view (for ticks, staleness queries); owned by the agent. NULL for NULL. */
rusk_view *rusk_agent_view(rusk_agent *a);

/*
 * rusk_task_check: whether task t could ever be placed on cluster c, and if not why.
 * RUSK_OK; RUSK_EINVAL for a malformed task (id 0 or > RUSK_TASK_ID_MAX, rus 0, unknown
 * placement, preferred NULL with n_preferred > 0, a profile value > 99, a bad held list:
 * "Held RUs" above); RUSK_EINFEASIBLE when t->rus exceeds what the cluster could give
 * under its placement: its RUs (any), the RUs of its largest machine (machine), of its
 * largest rack (rack), its machine count (spread), or, with held RUs, when n_held + rus
 * exceeds the slots beside them ("Held RUs"). Every machine slot counts, spares and
 * machines now down or draining included, since rusk_machine_up can bring any of them
 * up: a task that fits only once machines come back gets RUSK_EAGAIN from place(), not
 * RUSK_EINFEASIBLE. err (may be NULL) gets a message naming the field. rusk_agent_choose
 * and rusk_agent_place run the same check first and name the field in pl->invalid. Any
 * thread.
 */
int rusk_task_check(const rusk_cluster *c, const rusk_task *t, char *err, size_t errlen);

/*
 * rusk_agent_choose: picks RUs for task t from the view without committing: rus[0..n) of
 * the best candidates (n = t->rus, or fewer if the view lacks free RUs), ascending, only
 * where t's placement allows beside its held RUs ("Held RUs" above). Fills pl's
 * sample_size, samples, strategy, quality, staleness. Returns RUSK_OK, RUSK_EAGAIN
 * (not enough free RUs in the view), RUSK_EINVAL / RUSK_EINFEASIBLE (rusk_task_check;
 * pl->invalid names the field), RUSK_ENOTREG (RUSK_DEBUG builds, unregistered thread).
 * Registered thread.
 */
int rusk_agent_choose(rusk_agent *a, const rusk_task *t, uint32_t *rus, rusk_placement *pl);

/*
 * rusk_agent_place: choose + commit, retrying after conflicts up to max_retries times.
 * Every RU goes where t's placement allows beside t's held RUs and beside the RUs this
 * call won before ("Held RUs" above): an incremental task is never split across machines
 * (MACHINE) or racks (RACK), nor given a machine twice (SPREAD), in any commit mode.
 * RUSK_OK: leases[0..pl->placed) are held (gang: all t->rus; incremental: at least one).
 * RUSK_EAGAIN: nothing is held; re-queue the task. RUSK_EINVAL / RUSK_EINFEASIBLE (the
 * task can never be placed, see rusk_task_check; pl->invalid names the field): nothing is
 * held, do not re-queue. RUSK_ENOMEM: nothing is held. RUSK_ENOTREG (RUSK_DEBUG builds):
 * the calling thread is not registered. leases must have room for t->rus. Registered
 * thread. A task id is placed by one call at a time.
 *
 * Revocations (rusk_machine_fail on another thread). place() never returns a revoked lease
 * as held, and each revocation is reported exactly once:
 *  - by place() itself when the machine failed (or started draining) while place() was
 *    still deciding: the RU is not returned and counts in pl->conflicts (a gang gives back
 *    all its RUs and tries again, or returns RUSK_EAGAIN);
 *  - otherwise by the failure's callback, and only for a lease place() returned (never
 *    for an RU a gang rolled back or place() gave back). A failure that reaches an RU
 *    place() has taken but not yet returned waits for place() to decide (topology.c).
 * The one window left: the callback for a lease place() returned may run on the failing
 * thread as soon as place() has handed the lease out, i.e. possibly before place() has
 * returned on this thread and before the caller recorded the lease. An embedder whose
 * callback looks the lease up must let a report arrive first: e.g. the callback queues
 * (task, lease) to the thread that placed the task, which handles its queue after
 * recording what place() returned, or both sides take one lock per task and the callback
 * marks an unknown lease revoked for the recorder to find. The holder's later release of a
 * revoked lease is refused: RUSK_EOFFLINE while the machine is down, RUSK_EFREE or
 * RUSK_ENOTOWNER once it is back up (the RU's generation moved on).
 */
int rusk_agent_place(rusk_agent *a, const rusk_task *t, rusk_lease *leases, rusk_placement *pl);

/*
 * rusk_agent_release: releases n leases of `task` the way agent a's design changes the
 * shared state: under the cluster's one mutex for `central` and the `global-lock` baseline
 * (a lock-based scheduler guards releases as it guards commits), lock-free otherwise —
 * then it is rusk_ru_release_many. Returns and counts as rusk_ru_release_many; RUSK_EINVAL
 * for a NULL agent. Any thread, concurrently with a's own calls (it reads only a's
 * parameters, which never change); a must outlive the call. It does not mark the RUs free
 * in a's view: rusk_view_mark_free does, from a's thread.
 */
int rusk_agent_release(const rusk_agent *a, uint64_t task, const rusk_lease *leases, size_t n,
                       size_t *n_rejected);

/* Adaptive: feed the scheduling delay of each placed task (ParSync §5.2 EMA). The agent's
 * thread. NULL is ignored. */
void rusk_agent_observe_delay(rusk_agent *a, uint64_t delay_ns);
/* The strategy the next decision will use (Adaptive resolves to LATENCY or QUALITY);
 * LATENCY for NULL. The agent's thread. */
rusk_strategy rusk_agent_current_strategy(const rusk_agent *a);
/* The delay EMA in ns (0 before any delay, and for NULL). The agent's thread. */
double rusk_agent_delay_ema_ns(const rusk_agent *a);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_SCHED_H */
