/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher's step API: what a driver of its own calls instead of running the
 * threads of rusk_dispatch_start. `rusk sim` drives the same queues, admission, preemption
 * and completions on its virtual clock, one event at a time, through these calls and
 * nothing else of the dispatcher: its tasks and agents are opaque here (dispatch_impl.h,
 * which only the dispatcher's own files include, has their layout and ordering edges E1-E10),
 * and what a driver reads of them comes through the accessors below. With the header-only
 * toolkit of core/base (atomics, histograms, the seeded generator, heaps) this is all of core/
 * that the tool (bench/) includes; tests/layers.py checks it.
 *
 * Threads: a driver keeps each agent to one thread, as the library's agent threads do (every
 * call on `a` from a's thread; the simulator steps all of them from one); rusk_dispatch_end_
 * from whichever thread ends the task (E2 decides); the accessors of a task from a thread
 * that owns it at the time (its agent's, or an event callback about it). Not installed.
 */
#ifndef RUSK_LOOP_STEP_H
#define RUSK_LOOP_STEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/rusk.h>

#include "base/hist.h"

typedef struct rusk_dtask rusk_dtask;
typedef struct rusk_dagent rusk_dagent;

/* States: QUEUED (on a ring or a queue of its agent, or being placed), PLACING (placed,
 * its PLACED callback running: neither cancellable nor completable yet), RUNNING, DONE
 * (ended: terminal event delivered or on its way), CANCEL (queued, cancel asked). */
/* A task of the dispatcher (its handle, rusk_dtask_id, names one of these and its use). */

enum {
	RUSK_JS_QUEUED = 0,
	RUSK_JS_RUNNING = 1,
	RUSK_JS_DONE = 2,
	RUSK_JS_CANCEL = 3,
	RUSK_JS_PLACING = 4
};

/* Per-agent counters and histograms: one writer (the agent), relaxed readers. */
typedef struct rusk_dagent_stats {
	/* conflicts: commit attempts that lost at least one RU, of `attempts`; rus_lost:
	 * the RUs those lost (a multi-RU commit may lose several) */
	uint64_t placed, conflicts, rus_lost, attempts, requeued, r_sum, r_max, rus_placed,
	        pref_tasks;
	uint64_t preempted, preemptions, adm_waited, adm_bound, placed_hi;
	uint64_t refused;             /* the kernel refused the task outright: rejected */
	uint64_t memory_short;        /* vector commits refused for memory or GPUs (placement's
	                               * memory_short): not conflicts */
	uint64_t cancelled;           /* REJECTED by a cancellation on this agent */
	uint64_t aside, reservations; /* put aside for want of room; reservations made */
	uint64_t given_back;          /* partial holds given up (a reservation's or an
	                               * incremental task's): they stopped growing */
	uint64_t dry;                 /* times its view had no free RU for a task (until a sync) */
	uint64_t received;            /* submissions it took from its ring (E3) */
	uint64_t released;            /* tenures of its tasks ended with their RUs released:
	                               * atomic adds (it, or an embedder's complete) */
	uint64_t qmode_tasks;  /* tasks placed by a Quality-first decision (Adaptive's mode) */
	uint64_t last_done_ns; /* latest placement (makespan) */
	uint64_t tet_us;       /* sum of task run times */
	uint64_t q_micro;      /* sum of placed quality x 1e6 (score or Q) */
	rusk_hist queue, place, stale, sample, commit, admission;
	rusk_hist delay_hi, delay_lo; /* scheduling delay by priority */
} rusk_dagent_stats;

/* ---- accessors ---------------------------------------------------------------------- */

/* What a driver reads of a task: a copy, valid until the task next changes (its agent's
 * next step on it, or its end). */
typedef struct rusk_dtask_info {
	rusk_dtask_id id;         /* its handle, the owner id of its leases */
	uint64_t submit_ns;       /* when submitted */
	uint64_t end_ns;          /* end of its current tenure (RUNNING) */
	uint32_t slot;            /* its slot: < max_tasks, reused after its end */
	uint32_t state;           /* RUSK_JS_* */
	uint32_t rus, placed;     /* RUs asked for, RUs it holds */
	uint32_t n_pref;          /* preferred machines */
	uint8_t prio, place;      /* priority (> 0: high), rusk_placement_pref */
	bool gang;                /* its commit mode, resolved */
	rusk_vec_demand vec;      /* memory and GPUs on its machine */
	rusk_profile prof;        /* its interference profile */
	uint16_t group;           /* its quota group (0: none) */
	const rusk_lease *leases; /* [placed] */
	void *user;
} rusk_dtask_info;
void rusk_dtask_info_(const rusk_dtask *j, rusk_dtask_info *out);
/* The lease array of j, [rus] long: a driver that commits j's RUs itself (the simulator)
 * writes leases [placed, rus) there before rusk_dispatch_placed_ accounts them. */
rusk_lease *rusk_dtask_leases_(rusk_dtask *j);
/* The priority of j (> 0: high) and the end of its current tenure. */
uint8_t rusk_dtask_prio_(const rusk_dtask *j);
uint64_t rusk_dtask_end_ns_(const rusk_dtask *j);
/* The bytes of one task slot (memory estimates). */
size_t rusk_dtask_size_(void);
/* The task an event names while its callback runs (its slot is not reused before the
 * event returns); NULL for a stale handle or a REJECTED at submission. */
const rusk_dtask *rusk_dispatch_find_(const rusk_dispatch *d, rusk_dtask_id id);

/* Agent i of d (i < its agent count). */
rusk_dagent *rusk_dispatch_agent_(rusk_dispatch *d, uint32_t i);
/* Whether a thread of d failed (out of memory): the run's result is not to be trusted. */
bool rusk_dispatch_failed_(const rusk_dispatch *d);
/* a's counters and histograms (one writer, a's thread; relaxed readers). */
rusk_dagent_stats *rusk_dagent_stats_(rusk_dagent *a);
/* a's kernel agent (rusk/sched.h). */
rusk_agent *rusk_dagent_kernel_(rusk_dagent *a);
/* Tasks on a's retry list. */
size_t rusk_dagent_retries_(const rusk_dagent *a);
/* Tasks a rejected as stopped at its end (rusk_dispatch_drain_). */
uint64_t rusk_dagent_left_(const rusk_dagent *a);
/* Whether a's thread is parked (rusk run: a burst for it will wake it). */
bool rusk_dagent_parked_(rusk_dagent *a);
/* a's view statistics and CPU seconds, as its thread left them at its end. */
rusk_view_stats rusk_dagent_view_stats_(const rusk_dagent *a);
double rusk_dagent_cpu_s_(const rusk_dagent *a);

/* ---- steps ------------------------------------------------------------------------------ */

/* A task for spec s (checked by rusk_task_check), QUEUED, for agent `agent`'s queues but not
 * yet on any: NULL with *rc set (the REJECTED event is the caller's to deliver:
 * rusk_dispatch_reject_). */
rusk_dtask *rusk_dispatch_new_task_(rusk_dispatch *d, const rusk_dtask_spec *s, uint32_t agent,
                                    uint64_t now, int *rc);
/* Delivers REJECTED for j (or for spec s when j is NULL), counts it rejected and frees j's
 * slot. */
void rusk_dispatch_reject_(rusk_dispatch *d, uint32_t agent, rusk_dtask *j,
                           const rusk_dtask_spec *s, int err, uint64_t now);
/* Room in a's local queues for `more` tasks beyond what it holds; false: out of memory. */
bool rusk_dispatch_reserve_(rusk_dagent *a, size_t more);
/* Queues j on a (high or normal queue); room reserved first. */
void rusk_dispatch_enqueue_(rusk_dagent *a, rusk_dtask *j);
/* j goes back on a's retry list (high priority: its queue), counted as re-queued. */
void rusk_dispatch_gave_back_(rusk_dagent *a, rusk_dtask *j);
/* Puts j at the back of a's high queue (prio) or retry list, not counted as re-queued (a
 * driver that kept it aside itself, e.g. until its view's next sync). Room reserved. */
void rusk_dispatch_retry_(rusk_dagent *a, rusk_dtask *j);
/* Next task to try at `now`: high priority, then retries (at most *retries), then due
 * admission waiters, then the normal queue. NULL: nothing to do now. A task cancelled
 * meanwhile is rejected (RUSK_ECANCELED) on the way, never returned. */
rusk_dtask *rusk_dispatch_next_(rusk_dagent *a, uint64_t now, size_t *retries);
/* Earliest time an admission waiter is due (UINT64_MAX: none). */
uint64_t rusk_dispatch_next_wake_(const rusk_dagent *a);
/* Tasks whose remaining RUs are <= free_rus, in a's queues (a check at the end). */
uint64_t rusk_dispatch_placeable_(const rusk_dagent *a, uint64_t free_rus);
/* First dequeue of j: its queueing time. */
void rusk_dispatch_dequeued_(rusk_dagent *a, rusk_dtask *j, uint64_t now);
/* Admission: true to place now; false: parked among a's admission waiters. */
bool rusk_dispatch_admit_(rusk_dagent *a, rusk_dtask *j, uint64_t now);
/* The rusk_task to place for j: its remaining RUs, beside those it holds (rusk_task.held),
 * incremental within its kind when it is its agent's reservation. */
rusk_task rusk_dispatch_task_(const rusk_dispatch *d, const rusk_dtask *j);
/* Counts a placement call's commit attempts and conflicts. */
void rusk_dispatch_count_(rusk_dagent *a, const rusk_placement *pl);
/* What rusk_dispatch_placed_ made of a placement. */
typedef enum rusk_dtask_outcome {
	RUSK_DISP_RUNNING = 0,  /* PLACED was delivered: hand it to completion at j->end_ns */
	RUSK_DISP_PARTIAL = 1,  /* an incremental task waits for the rest (on the retry list) */
	RUSK_DISP_CANCELED = 2, /* cancelled meanwhile: its RUs went back, REJECTED delivered */
} rusk_dtask_outcome;
/* Accounts a placement of pl->placed RUs of j at t_done (decided from t_deq). */
rusk_dtask_outcome rusk_dispatch_placed_(rusk_dagent *a, rusk_dtask *j, const rusk_placement *pl,
                                         uint64_t t_deq, uint64_t t_done);
/* The kernel refused j (RUSK_EINVAL / RUSK_EINFEASIBLE): released, REJECTED, slot freed. */
void rusk_dispatch_refuse_(rusk_dagent *a, rusk_dtask *j, int err, uint64_t now);
/* High-priority j found no room: preempts normal running tasks of d (found by sampling the
 * master array, each proven d's by the lease it holds) until j's RUs are free in a's view;
 * victims go to the front of a's retry list (PREEMPTED). Returns RUs freed: 0 while the
 * view shows room for j. */
uint32_t rusk_dispatch_preempt_(rusk_dagent *a, const rusk_dtask *j, uint64_t now);
/* Reclaim (dquota.c): grouped j found no room while its group is below its minimum:
 * preempts, as rusk_dispatch_preempt_ does, normal tasks of the groups this round marked
 * (above their allowance and their minimum), at most the agent's reclaim budget left this
 * round. Returns RUs freed (0: nothing to reclaim for j). */
uint32_t rusk_dispatch_reclaim_(rusk_dagent *a, const rusk_dtask *j, uint64_t now);
/* Ends tenure `key` (rusk_js_key) of j (E2), releases its RUs, delivers DONE and frees the
 * slot; false if it was preempted (or ended) first. */
bool rusk_dispatch_end_(rusk_dispatch *d, rusk_dtask *j, uint64_t key, uint64_t now);
/* The tenure key of j now (acquire). */
uint64_t rusk_dispatch_tenure_(const rusk_dtask *j);
/* Quota groups (dquota.c, rusk/dispatch.h "Quota groups"), for a driver that steps the
 * dispatcher itself: rusk_dispatch_quota_admit_ admits j (a grouped task holding nothing)
 * against its agent's share of its group's allowance: true to go on, false when it was
 * parked among a's admission waiters until the next round (always true without a group);
 * rusk_dispatch_quota_unadmit_: j, admitted, leaves unplaced (deferred, given back): its
 * usage goes back; rusk_dispatch_quota_tick_: one coordinator round at `now` (the driver
 * calls it every rusk_dispatch_quota_period_ ns of its clock; 0: no groups). Agent thread
 * (tick: the driver's one thread). */
bool rusk_dispatch_quota_admit_(rusk_dagent *a, rusk_dtask *j, uint64_t now);
void rusk_dispatch_quota_unadmit_(rusk_dagent *a, rusk_dtask *j);
int rusk_dispatch_quota_tick_(rusk_dispatch *d, uint64_t now);
uint64_t rusk_dispatch_quota_period_(const rusk_dispatch *d);
/* End of a's life: each task it still holds gives back the RUs it won and gets REJECTED
 * (RUSK_ESTOPPED, counted in n_left; RUSK_ECANCELED when cancelled). Frees the queues. */
void rusk_dispatch_drain_(rusk_dagent *a);
#endif /* RUSK_LOOP_STEP_H */
