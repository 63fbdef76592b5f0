/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher's insides (dispatch.c), for the library and for drivers in this
 * repository that step it themselves: `rusk sim` drives the same queues, admission,
 * preemption and completions on its virtual clock, one event at a time, instead of
 * running the threads of rusk_dispatch_start.
 *
 * Task life: submitted -> an agent's ring -> its local queues (high priority, retry list,
 * admission wait heap, normal queue; the aside list while its view has no room for it) ->
 * placed (RUNNING, tenure t) -> ended (DONE), or preempted by a high-priority task or
 * revoked by a machine failure (QUEUED with tenure t + 1, at the front of a retry list),
 * or cancelled while queued (CANCEL, then REJECTED by its agent), or still queued at a
 * stop (REJECTED). The state word st = use << 32 | tenure << 3 | state is the one place
 * where an ending, a preemption, a revocation, a cancellation and a placement race: a CAS
 * decides who ends or changes the tenure. `use` is the slot's use (the handle's), so a
 * stale handle can never match a later task's word; the tenure key st >> 3 only grows
 * across uses, so a stale completion entry can never end a later tenure.
 *
 * Ordering edges (every atomic names its pair):
 *   E1 rusk_dispatch_placed_: the CAS st QUEUED -> PLACING (acq_rel: it decides against a
 *        cancellation), PLACED delivered, then leases, end_ns and st = RUNNING (release)
 *        -> acquire of st in the completer, a preemptor (rusk_dispatch_preempt_), a revocation
 *        and rusk_dispatch_complete
 *   E2 end / preempt / revoke / cancel / place CAS on st (acq_rel): one winner per tenure
 *   E3 submit: task fields, then ring enqueue (CK's release) + TSAN_RELEASE
 *        -> ring dequeue + TSAN_ACQUIRE on the agent
 *   E4 (gone: each agent ends the tasks it placed, from its own timing wheel)
 *   E5 stop flags: store release -> load acquire in the threads; each park is woken
 *   E6 submit: its agent's in-flight count (locked add: a full barrier), then the stop
 *      flag; stop: the flag, a full fence, then waits for no submission in flight to any
 *      agent; an agent: sees the flag, a full fence, no submission in flight to it, and
 *      only then takes its ring for the last time (or finds it empty and stops after close)
 *   E7 revocation vs placement: the callback stores lost, full fence, loads st; the agent
 *      stores st = RUNNING, full fence, loads lost; whoever sees the other takes the
 *      tenure back by E2's CAS
 *   E8 task slots: a chunk of slots is made by the first submission that reaches it and
 *      published by a CAS (release) -> acquire loads of the chunk pointer by handle
 *      lookups (complete, cancel, revoked, preempt); a slot's reuse: slot_put's push on
 *      its agent's free stack (CAS, release) -> slot_get's pop (CAS, acquire)
 *   E9 cancel: the CAS to CANCEL, then the agent's cancel count (release) and a wake ->
 *      the agent's acquire of the count, then its sweep of its queues
 *   E10 wake only a parked agent (Dekker): the agent stores parked = 1, a full fence, then
 *      looks at its ring; a submission enqueues, its in-flight decrement (locked: a full
 *      barrier), then loads parked and wakes only when it is set. At least one of the two
 *      sees the other, so no wake-up is lost, and a busy agent's line is never written by
 *      its producers (the event count's add was one shared write per task)
 *   E11 quota usage (dquota.c): an agent's "taken" store (relaxed, one writer) happens
 *      before the task's RUNNING store (E1, release) -> the tenure's CAS winner (E2) adds
 *      to "returned" (release) -> the coordinator loads every "returned" (acquire) before
 *      any "taken": a return it sees has its taking seen too, so usage is never
 *      undercounted; allowances go out by rcu_xchg_pointer -> rcu_dereference in admit
 *   E12 a preemptor's look at a victim (take_victim): acquire load of st, optimistic reads
 *      of the victim's priority, group and leases, then the CAS on st (E2) with the value
 *      loaded: an end or a reuse of the slot in between changed st, so the CAS fails and
 *      the reads are discarded. The reads stay in memory of d: lease arrays are never freed
 *      before destroy (rusk_dleases: kept by the slot, retired when outgrown)
 *   E13 a quota round's freeze (dquota.c): the coordinator stores frozen = r + 1 (release),
 *      then waits for a grace period (urcu_memb_synchronize_rcu) -> an admission loads
 *      frozen (acquire) inside the read-side section that also holds its "taken" stores:
 *      a section that missed the freeze ended before the grace period did, so its stores
 *      are in the counters the round reads next; one that sees it admits nothing
 */
#ifndef RUSK_CORE_DISPATCH_IMPL_H
#define RUSK_CORE_DISPATCH_IMPL_H

#include <ck_ring.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <rusk/dispatch.h>

#include "base/atomic.h"
#include "base/compiler.h"
#include "base/heap.h"
#include "base/hist.h"
#include "base/rng.h"
#include "loop/park.h"
#include "loop/step.h"
#include "loop/wheel.h"

/* Quota groups' run-time state (loop/dquota.h), by name only: dquota.c includes this file
 * for the dispatcher's structs, so this one does not include it back. */
typedef struct rusk_dquota rusk_dquota;
typedef struct rusk_dquota_agent rusk_dquota_agent;

#define RUSK_JS_STATE_BITS 3

/* The state word's fields (see "Task life"): use << 32 | tenure << 3 | state. */
static inline uint32_t rusk_js_state(uint64_t st)
{
	return (uint32_t)(st & ((1u << RUSK_JS_STATE_BITS) - 1));
}
static inline uint32_t rusk_js_use(uint64_t st)
{
	return (uint32_t)(st >> 32);
}
/* The tenure key: use and tenure, growing across uses. */
static inline uint64_t rusk_js_key(uint64_t st)
{
	return st >> RUSK_JS_STATE_BITS;
}
static inline uint64_t rusk_js_make(uint64_t key, uint32_t state)
{
	return key << RUSK_JS_STATE_BITS | state;
}

/* Leases kept in the task itself; a larger task gets an array at submission. */
#define RUSK_JOB_INLINE_LEASES 2

/*
 * A slot's lease array for tasks of more than RUSK_JOB_INLINE_LEASES RUs (E12). It lives as
 * long as the dispatcher: kept by the slot for its next uses, and when a larger task needs
 * a larger one, the old one goes on the dispatcher's retired list, freed at destroy. So a
 * preemptor's optimistic read of a victim that ends meanwhile (take_victim) reads memory
 * that is still an array of `cap` leases, never freed memory. A slot keeps at most twice
 * the largest array it needed (each retired one is smaller than the next).
 */
typedef struct rusk_dleases {
	struct rusk_dleases *next; /* on the retired list */
	uint32_t cap;
	rusk_lease l[];
} rusk_dleases;

/* Slots come in chunks made on first use (E8), so a dispatcher costs what it used. */
#define RUSK_JOB_CHUNK_SHIFT 12
#define RUSK_JOB_CHUNK       (1u << RUSK_JOB_CHUNK_SHIFT)

struct rusk_dtask {
	/* Exactly three cache lines, aligned (chunk_get): the submitter that writes a slot
	 * and the agent that places it move three lines per task, not four (the struct was
	 * 208 bytes at 8-byte alignment, so a slot straddled four or five lines). Fields that
	 * only quota groups or a reservation use are the smallest that hold them. */
	uint64_t id; /* its handle and lease owner id: RUSK_DISPATCH_ID_BASE + slot + use x cap */
	uint64_t submit_ns, dur_ns;
	uint64_t st;           /* use << 32 | tenure << 3 | RUSK_JS_*; atomic (E1, E2) */
	uint64_t end_ns;       /* end of the current tenure; atomic (a stale reader) */
	uint64_t wait_from_ns; /* admission: first told to wait (0: never) */
	uint64_t ready_ns;     /* admission: next check (or the driver's own key) */
	uint64_t requeue_ns;   /* preempted: when; its next delay counts from here */
	rusk_lease *l;         /* its leases (l_in, or an array of rus) */
	const uint32_t *pref;  /* preferred machines, n_pref of them (the embedder's) */
	void *user;
	rusk_profile prof;
	rusk_vec_demand vec; /* memory and GPUs on its machine (rusk/vec.h) */
	uint32_t rus, placed, n_pref, slot;
	uint32_t agent;       /* the agent whose ring or queues hold it; atomic (E9) */
	uint32_t next_free;   /* free: the slot below it on its agent's free stack, + 1;
	                       * atomic (E8) */
	uint32_t aside_syncs; /* view syncs it came back from aside without fitting */
	uint32_t lost;        /* a partial placement lost a lease (rusk_dispatch_revoked); atomic */
	uint8_t prio;
	uint8_t place; /* rusk_placement_pref */
	bool gang;     /* its commit mode, resolved (rusk_commit_mode) */
	bool dequeued, admitted;
	bool received; /* taken from a ring once: counted as submitted (agent-only) */
	bool resv;     /* its agent's reservation (rusk_dagent.resv): placed incrementally */
	/* Quota groups (dquota.c): its group (0: none); whether its demand counts in the
	 * group's usage, and on which agent's counters (written by its agent before RUNNING's
	 * release store, read by the winner of the tenure's CAS: E1, E2); the round + 1 whose
	 * held-back demand it is counted in, and the round it was admitted in (agent only;
	 * both the low 32 bits of the round, compared for equality only: a task would have to
	 * wait 2^32 rounds, 497 days at the 10 ms period, to be mistaken). */
	uint8_t q_in;
	uint16_t group;
	uint8_t q_wait;  /* counted in its group's waiting demand (its owner of the moment) */
	uint8_t stalled; /* holding part of its RUs (not the reservation): syncs it came back
	                  * from aside without growing (resume_aside; saturates at 255) */
	uint32_t q_agent;
	uint32_t q_held_round;
	uint32_t q_adm_round;
	rusk_dleases *lh; /* the slot's lease array, kept across uses (E12); NULL: none yet */
	rusk_lease l_in[RUSK_JOB_INLINE_LEASES];
} RUSK_ALIGNED(RUSK_CACHELINE);

/* A deque of tasks (an agent's local queues); capacity reserved ahead (rusk_dispatch_reserve_)
 * so that moving a task between queues never allocates. */
typedef struct rusk_dtaskq {
	rusk_dtask **a;
	size_t head, n, cap;
} rusk_dtaskq;

static inline bool rusk_ready_before(rusk_dtask *const *x, rusk_dtask *const *y)
{
	return (*x)->ready_ns < (*y)->ready_ns;
}
/* Admission waiters by their next check. */
HEAP_DEFINE(rusk_waitq, rusk_dtask *, rusk_ready_before)

/* The timed ends of one agent (wheel.c). */

struct rusk_dagent {
	rusk_dispatch *d;
	uint32_t index;
	rusk_agent *ag;
	ck_ring_t in; /* submissions (MPSC) */
	ck_ring_buffer_t *in_buf;
	rusk_park park;   /* parked while idle (E5, E10) */
	rusk_wheel *ends; /* its placed tasks' timed ends (wheel.c) */
	rusk_dtaskq hi, retry, lo;
	rusk_dtaskq aside; /* tasks its view had no room for, until its next sync */
	rusk_waitq wait;
	size_t held; /* tasks in the five queues above */
	/* The smallest RU count (remaining) that failed for room since the last sync, per
	 * room class (dispatch.c, room_class: the placement kind, and for ANY whether it is
	 * a gang): a task of that class needing as many or more goes aside without a try.
	 * UINT32_MAX: none failed. room[RUSK_ROOM_ANY_INCR] == 1: the view has no free RU. */
	uint32_t room[5];
	uint32_t max_retries; /* its kernel agent's (a placement that gave up before it: room) */
	rusk_dtask *resv;     /* its reservation (one at a time), or NULL */
	uint32_t resv_idle;   /* its reservation: syncs it came back from aside without growing */
	uint32_t resv_held;   /* its reservation: RUs it held at the last of those */
	uint32_t cancels, cancels_seen; /* cancellations asked (atomic, E9) and handled */
	rusk_dagent_stats st;
	/* The lines its producers touch, each its own: submissions in flight to it (E6,
	 * written by its producers), the stack of slots given back by its tasks (head = tag
	 * << 32 | (slot + 1), 0: empty; the tag grows with every push and pop against ABA;
	 * popped by its producers, pushed by whoever ends its tasks), and whether it is
	 * parked (E10: written by it, read by its producers). */
	uint32_t inflight RUSK_ALIGNED(RUSK_CACHELINE);
	uint64_t free_head RUSK_ALIGNED(RUSK_CACHELINE);
	uint32_t parked RUSK_ALIGNED(RUSK_CACHELINE);
	/* Published each round for submitters balancing their load (rusk_dispatch_load;
	 * relaxed: a hint): what it holds, and the free RUs its view shows. */
	uint64_t held_pub, room_pub;
	rusk_view_stats vs RUSK_ALIGNED(RUSK_CACHELINE); /* at exit (threads) */
	rusk_rng prng;   /* victim sampling (rusk_dispatch_preempt_) */
	double cpu_s;    /* CPU time of its thread (threads) */
	uint64_t n_left; /* held at the end */
	pthread_t tid;
	uint32_t exited; /* its thread has drained and ends (release) */
	bool started;
	rusk_dquota_agent *q; /* its quota counters (dquota.c); NULL without groups */
	/* Over a remote master state with batches (dispatch.c, agent_round_remote): the batch
	 * size (0: none, the in-memory path) and its buffers, its thread's alone. */
	uint32_t rbatch;
	struct rusk_rbatch *rb;
};

struct rusk_dispatch {
	rusk_cluster *c;
	rusk_dispatch_params p;
	rusk_dagent *ag;
	rusk_dtask **chunks; /* cap / RUSK_JOB_CHUNK chunk pointers, made on first use (E8) */
	uint64_t n_chunks;
	uint64_t cap;  /* task slots */
	uint64_t bump; /* slots never used so far (atomic) */
	/* Rare events, counted where they happen (any thread; atomic, relaxed): rejected (at
	 * submission or by an agent), revoked, cancelled, and refused at submission. */
	uint64_t rejected, revoked, cancelled, refused_at_submit;
	uint32_t stop; /* 1: no more submissions, agents stop when drained; 2: agents
	                * stop now (E5) */
	uint32_t fail; /* an allocation failed in a thread */
	bool started, stopped, attached;
	rusk_dquota *q;        /* quota groups (dquota.c); NULL without */
	rusk_dleases *retired; /* slots' outgrown lease arrays, freed at destroy (E12; CAS) */
};

/* Slot `slot`'s task; its chunk must exist (a slot below bump). */
static inline rusk_dtask *rusk_dispatch_slot_(const rusk_dispatch *d, uint64_t slot)
{
	rusk_dtask *ch = rusk_loadp((void *const *)&d->chunks[slot >> RUSK_JOB_CHUNK_SHIFT],
	                            RUSK_ACQUIRE); /* E8 */
	return &ch[slot & (RUSK_JOB_CHUNK - 1)];
}

/* The task a handle (or lease owner id) names now, with its use in *use; NULL when it names
 * no slot of d that was ever used. Its task may have ended: the caller compares use with
 * the state word's. */
static inline rusk_dtask *rusk_dispatch_lookup_(const rusk_dispatch *d, uint64_t task,
                                                uint32_t *use)
{
	if (task < RUSK_DISPATCH_ID_BASE || task > RUSK_TASK_ID_MAX)
		return NULL;
	uint64_t n = task - RUSK_DISPATCH_ID_BASE, slot = n % d->cap;
	if (slot >= rusk_load64((uint64_t *)&d->bump, RUSK_ACQUIRE))
		return NULL;
	rusk_dtask *ch = rusk_loadp((void *const *)&d->chunks[slot >> RUSK_JOB_CHUNK_SHIFT],
	                            RUSK_ACQUIRE); /* E8 */
	if (ch == NULL)
		return NULL; /* bumped, chunk not made yet: no handle names it so far */
	*use = (uint32_t)(n / d->cap);
	return &ch[slot & (RUSK_JOB_CHUNK - 1)];
}

/* The cluster's clock (the simulator's virtual one under rusk sim). */
static inline uint64_t rusk_dispatch_now_(const rusk_dispatch *d)
{
	return rusk_clock_now(rusk_cluster_clock(d->c));
}

/* Sleeps ns of real time (the dispatcher's threads only run under a real clock). */
static inline void rusk_dispatch_sleep_(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	nanosleep(&ts, NULL);
}

static inline void rusk_dispatch_add_(uint64_t *p, uint64_t d)
{
	rusk_store64(p, rusk_load64(p, RUSK_RELAXED) + d, RUSK_RELAXED);
}

/* Tasks in a's local queues. */
static inline size_t rusk_dispatch_held_(const rusk_dagent *a)
{
	return a->held;
}

#endif
