/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher (rusk/dispatch.h): queues, retries, admission waits, priorities,
 * preemption and completions around the agents, so that an embedder submits tasks and
 * receives events instead of writing the scheduling loop (ParSync §4.3's agent loop,
 * Tarcil §4 admission and §5.3 priorities). The steps are in dispatch_impl.h, with the
 * task life and the table of ordering edges E1-E9; this file adds the threads.
 *
 * Agent thread: ticks its view, moves its ring into its local queues (only as far as
 * their reserved room goes: a task stays in the ring rather than be lost to an allocation
 * failure), takes a batch (high priority, retries, due admission waiters, the rest),
 * places each task; a task given back after conflicts keeps its submission time on the
 * retry list; a high-priority one may preempt. Idle: spins spin_ns on its ring, then
 * parks (park.h).
 *
 * Room. A placement that gave up because the view had nothing suitable (the kernel's
 * decision found no candidate, before its retry bound; see place_failed_for_room) cannot
 * succeed before the view changes, which only a sync (or the agent's own preemptions) does.
 * The task goes to the agent's aside list, and the agent notes the RU count that failed
 * for the task's room class (placement kind, and gang or not for ANY: a gang of m needs m
 * free RUs, an incremental task one): until the next sync, a task of that class needing as
 * many or more goes aside without a try, and the tasks behind it go on (Tarcil and ParSync
 * place tasks independently; only order within a priority is kept). When the view has no
 * free RU at all, nothing normal is tried until the sync ("dry": a saturated run would
 * otherwise move every queued task aside each round). At each sync the aside list goes
 * back, in order, to the front of the retry list. A multi-RU task back from aside
 * reserve_syncs times becomes the agent's reservation (at most one per agent, so the RUs
 * held idle are bounded by agents x the largest task): it is placed incrementally within
 * its kind (the kernel keeps a remainder beside the RUs held: rusk_task.held), holding
 * what it wins in the master array, where every agent respects it, until it has all its
 * RUs; only then is it PLACED. Any other task holding part of its RUs (incremental) that has
 * not grown for 2 x reserve_syncs syncs gives them back and starts again: two of them can
 * split a group on views that missed each other's commits, each waiting for the other's RU
 * for ever (give_back_partial). Why not a bounded bypass: an agent that stops placing
 * behind a large task frees nothing for it, since the other agents keep filling whatever
 * frees; why not a reservation in the agent's view: the other agents cannot see it.
 *
 * Queues. Per round an agent serves high-priority tasks first (they bypass everything
 * queued, Tarcil §5.3), then its retry list (tasks given back after conflicts, with their
 * submission time), then the admission waiters that are due, then the normal queue. A
 * task the admission check tells to wait goes to a min-heap by its next check time; it is
 * checked again then, and admitted at the latest when it has waited the bucket's
 * mu + 2 sigma (rusk/admit.h).
 *
 * Preemption. A high-priority task that could not be placed, on a view with no room for
 * it, samples RUs of the master array; an RU held by a running normal task of this
 * dispatcher (its owner id is a handle of d, and the task holds that very lease) makes
 * that task a victim: a CAS on its state word ends its tenure (the timed end's CAS for
 * the same tenure then fails), its RUs are released and marked free in the preempting
 * agent's view, and it goes to the front of that agent's retry list, counted, and
 * PREEMPTED is delivered. Its re-placement delay counts from the preemption.
 *
 * Handles and slots. A handle is RUSK_DISPATCH_ID_BASE + slot + use x cap, which is also
 * the kernel task id its leases carry; the state word holds the same use (modulo 2^32),
 * so every call with a handle checks it against the word it then CASes. Slots are made
 * in chunks of RUSK_JOB_CHUNK on first use (E8): creating and destroying a dispatcher
 * cost what its run used, not max_tasks.
 *
 * Timed ends: each agent's own wheel (core/loop/wheel.c), turned in its loop; an agent
 * parks no longer than until its earliest end.
 *
 * Invariants: (1) a task is in at most one place: a ring, one local queue, RUNNING, or
 * free; (2) every task submitted ends with exactly one terminal event, DONE or REJECTED,
 * and is accounted once as placed-and-running, queued at the end, rejected or ended;
 * (3) a slot is reused only after its terminal event returned; (4) at most one
 * reservation per agent, and only a task of that agent's queues.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/compiler.h"
#include "kernel/layout.h"
#include "kernel/remote.h"
#include "kernel/view.h"
#include "loop/dispatch_impl.h"
#include "loop/dquota.h"

#define SLICE_NS 20000000ull /* the longest park without looking at the stop flag */

/* Round robin of a submitting thread (agent UINT32_MAX, revocations): per thread, so that
 * no word is shared by the submitters. */
static _Thread_local uint32_t next_agent;
#define DEFAULT_MAX_TASKS (1u << 20)

static inline uint64_t now_ns(const rusk_dispatch *d)
{
	return rusk_dispatch_now_(d);
}

static void emit(rusk_dispatch *d, rusk_dispatch_event *ev)
{
	if (d->p.on_event != NULL)
		d->p.on_event(d->p.arg, ev);
}

/* ---- task slots ------------------------------------------------------------------------ */

_Static_assert(sizeof(rusk_dtask) == 3 * RUSK_CACHELINE, "a slot is three whole lines");

/* Chunk i of the slots, made by the first caller that needs it (E8); NULL: out of memory. */
static rusk_dtask *chunk_get(rusk_dispatch *d, uint64_t i)
{
	void **cp = (void **)&d->chunks[i];
	void *ch = rusk_loadp(cp, RUSK_ACQUIRE); /* E8: pairs with the CAS below */
	if (ch != NULL)
		return ch;
	uint64_t n = d->cap - i * RUSK_JOB_CHUNK;
	size_t bytes = (n < RUSK_JOB_CHUNK ? n : RUSK_JOB_CHUNK) * sizeof(rusk_dtask);
	void *mine = aligned_alloc(RUSK_CACHELINE, bytes); /* a slot is three whole lines */
	if (mine == NULL)
		return NULL;
	memset(mine, 0, bytes);
	if (rusk_casp(cp, &ch, mine, RUSK_ACQ_REL)) /* E8: publishes the zeroed slots */
		return mine;
	free(mine); /* another submitter made it first: ch is theirs */
	/* E8: the failed CAS read ch without ordering (its failure order is relaxed): acquire
	 * it, so the winner's zeroed slots are seen before any write to them. */
	return rusk_loadp(cp, RUSK_ACQUIRE);
}

/* The free stacks (E8; rusk_dagent.free_head): Treiber's stack with a tag against ABA.
 * A popper may read the link of a slot that another thread popped and reused meanwhile:
 * the link is atomic, and the tag makes that pop's CAS fail. */
static void stack_push(uint64_t *head, rusk_dtask *j)
{
	uint64_t h = rusk_load64(head, RUSK_RELAXED);
	do
		rusk_store32(&j->next_free, (uint32_t)h, RUSK_RELAXED);
	while (!rusk_cas64(head, &h, ((h >> 32) + 1) << 32 | (j->slot + 1u), RUSK_RELEASE));
}

static rusk_dtask *stack_pop(const rusk_dispatch *d, uint64_t *head)
{
	uint64_t h = rusk_load64(head, RUSK_ACQUIRE);
	while ((uint32_t)h != 0) {
		rusk_dtask *j = rusk_dispatch_slot_(d, (uint32_t)h - 1u);
		uint32_t next = rusk_load32(&j->next_free, RUSK_RELAXED);
		if (rusk_cas64(head, &h, ((h >> 32) + 1) << 32 | next, RUSK_ACQUIRE))
			return j; /* E8: pairs with the push's release */
	}
	return NULL;
}

/* A free slot for agent `agent` and its index, *fresh when never used (its memory is still
 * zero, and not even read yet: reading a fresh calloc page first maps the zero page, and
 * the write after it then costs a copy-on-write fault with a TLB shootdown of every core,
 * 17% of a 1M tasks/s run). First a slot the agent's own tasks gave back, then a new one,
 * then one another agent's gave back. NULL with *rc: RUSK_EFULL (every slot in use) or
 * RUSK_ENOMEM (a chunk). */
static rusk_dtask *slot_get(rusk_dispatch *d, uint32_t agent, uint64_t *slot, bool *fresh, int *rc)
{
	rusk_dtask *j = stack_pop(d, &d->ag[agent].free_head);
	*fresh = false;
	if (j != NULL) {
		*slot = j->slot;
		return j;
	}
	uint64_t b = rusk_load64(&d->bump, RUSK_RELAXED);
	while (b < d->cap) {
		/* The chunk first, so a slot is never taken without its memory. */
		rusk_dtask *ch = chunk_get(d, b >> RUSK_JOB_CHUNK_SHIFT);
		if (ch == NULL) {
			*rc = RUSK_ENOMEM;
			return NULL;
		}
		/* Release: a handle lookup that sees bump past b finds b's chunk (E8). */
		if (rusk_cas64(&d->bump, &b, b + 1, RUSK_RELEASE)) {
			*fresh = true;
			*slot = b;
			return &ch[b & (RUSK_JOB_CHUNK - 1)];
		}
	}
	for (uint32_t k = 1; k < d->p.agents; k++)
		if ((j = stack_pop(d, &d->ag[(agent + k) % d->p.agents].free_head)) != NULL) {
			*slot = j->slot;
			return j;
		}
	*rc = RUSK_EFULL;
	return NULL;
}

/* The leases for a task of `rus` RUs in slot j (E12): inline, the slot's array, or a new
 * larger one (the old one retired, not freed: a preemptor may be reading it). NULL: out of
 * memory. Submitter's thread, owning the free slot. */
static rusk_lease *lease_array(rusk_dispatch *d, rusk_dtask *j, uint32_t rus)
{
	if (rus <= RUSK_JOB_INLINE_LEASES)
		return j->l_in;
	rusk_dleases *h = j->lh;
	if (h != NULL && h->cap >= rus) {
		memset(h->l, 0, sizeof(rusk_lease) * rus);
		return h->l;
	}
	uint32_t cap = h != NULL && 2 * h->cap > rus ? 2 * h->cap : rus;
	rusk_dleases *n = calloc(1, sizeof *n + sizeof(rusk_lease) * cap);
	if (n == NULL)
		return NULL;
	n->cap = cap;
	if (h != NULL) { /* E12: pushed by any submitter; read only at destroy */
		rusk_dleases *top = rusk_loadp((void **)&d->retired, RUSK_RELAXED);
		do
			h->next = top;
		while (!rusk_casp((void **)&d->retired, (void **)&top, h, RUSK_RELEASE));
	}
	j->lh = n;
	return n->l;
}

/* Invariant 3: called after the task's last event; back on the stack of the agent that
 * held it last. */
static void slot_put(rusk_dispatch *d, rusk_dtask *j)
{
	j->l = NULL; /* a heap array stays with the slot (E12) */
	uint32_t i = rusk_load32(&j->agent, RUSK_RELAXED) % d->p.agents;
	stack_push(&d->ag[i].free_head, j);
}

/* A vector task is placed whole on one machine (rusk/vec.h); others as the spec says. */
static inline uint8_t spec_place(const rusk_dtask_spec *s)
{
	return rusk_vec_any(&s->vec) ? RUSK_PLACE_MACHINE : s->placement;
}

/* Its commit mode, resolved: a vector task is one commit; otherwise the spec's, or the
 * dispatcher's default. */
static inline bool spec_gang(const rusk_dispatch *d, const rusk_dtask_spec *s)
{
	if (rusk_vec_any(&s->vec) || s->commit == RUSK_COMMIT_GANG)
		return true;
	return s->commit == RUSK_COMMIT_INCREMENTAL ? false : d->p.gang;
}

/* ---- the step API's accessors (step.h) ------------------------------------------------- */

void rusk_dtask_info_(const rusk_dtask *j, rusk_dtask_info *out)
{
	*out = (rusk_dtask_info){
	        .id = j->id,
	        .submit_ns = j->submit_ns,
	        .end_ns = rusk_load64((uint64_t *)&j->end_ns, RUSK_RELAXED),
	        .slot = j->slot,
	        .state = rusk_js_state(rusk_load64((uint64_t *)&j->st, RUSK_ACQUIRE)), /* E1 */
	        .rus = j->rus,
	        .placed = j->placed,
	        .n_pref = j->n_pref,
	        .prio = j->prio,
	        .place = j->place,
	        .gang = j->gang,
	        .vec = j->vec,
	        .prof = j->prof,
	        .group = j->group,
	        .leases = j->l,
	        .user = j->user};
}

rusk_lease *rusk_dtask_leases_(rusk_dtask *j)
{
	return j->l;
}

uint8_t rusk_dtask_prio_(const rusk_dtask *j)
{
	return j->prio;
}

uint64_t rusk_dtask_end_ns_(const rusk_dtask *j)
{
	return rusk_load64((uint64_t *)&j->end_ns, RUSK_RELAXED);
}

size_t rusk_dtask_size_(void)
{
	return sizeof(rusk_dtask);
}

const rusk_dtask *rusk_dispatch_find_(const rusk_dispatch *d, rusk_dtask_id id)
{
	uint32_t use;
	return rusk_dispatch_lookup_(d, id, &use);
}

rusk_dagent *rusk_dispatch_agent_(rusk_dispatch *d, uint32_t i)
{
	return &d->ag[i];
}

bool rusk_dispatch_failed_(const rusk_dispatch *d)
{
	return rusk_load32((uint32_t *)&d->fail, RUSK_RELAXED) != 0;
}

rusk_dagent_stats *rusk_dagent_stats_(rusk_dagent *a)
{
	return &a->st;
}

rusk_agent *rusk_dagent_kernel_(rusk_dagent *a)
{
	return a->ag;
}

size_t rusk_dagent_retries_(const rusk_dagent *a)
{
	return a->retry.n;
}

uint64_t rusk_dagent_left_(const rusk_dagent *a)
{
	return a->n_left;
}

bool rusk_dagent_parked_(rusk_dagent *a)
{
	return rusk_park_parked(&a->park);
}

rusk_view_stats rusk_dagent_view_stats_(const rusk_dagent *a)
{
	return a->vs;
}

double rusk_dagent_cpu_s_(const rusk_dagent *a)
{
	return a->cpu_s;
}

/* The use that follows `prev` for slot `slot`: ids stay <= RUSK_TASK_ID_MAX by wrapping
 * to use 0 (see "Handles" in rusk/dispatch.h). */
static uint64_t next_use(const rusk_dispatch *d, uint64_t slot, uint64_t prev)
{
	uint64_t u = prev + 1;
	return RUSK_DISPATCH_ID_BASE + slot + u * d->cap > RUSK_TASK_ID_MAX ? 0 : u;
}

rusk_dtask *rusk_dispatch_new_task_(rusk_dispatch *d, const rusk_dtask_spec *s, uint32_t agent,
                                    uint64_t now, int *rc)
{
	rusk_task t = {.id = RUSK_DISPATCH_ID_BASE,
	               .rus = s->rus,
	               .gang = spec_gang(d, s),
	               .placement = spec_place(s),
	               .priority = s->priority,
	               .profile = s->profile,
	               .preferred = s->preferred,
	               .n_preferred = s->n_preferred,
	               .vec = s->vec};
	if ((*rc = rusk_task_check(d->c, &t, NULL, 0)) != RUSK_OK)
		return NULL;
	bool fresh;
	uint64_t slot;
	rusk_dtask *j = slot_get(d, agent, &slot, &fresh, rc);
	if (j == NULL)
		return NULL;
	/* The slot's use, hence its handle: one more than its last (E2: the tenure key grows
	 * with it, so a stale completion entry never matches). */
	uint64_t use = fresh ? 0 : next_use(d, slot, (j->id - RUSK_DISPATCH_ID_BASE) / d->cap);
	rusk_lease *l = lease_array(d, j, s->rus);
	if (l == NULL) {
		rusk_store64(
		        &j->st,
		        rusk_js_make(rusk_js_key(rusk_load64(&j->st, RUSK_RELAXED)), RUSK_JS_DONE),
		        RUSK_RELAXED);
		if (fresh) /* its id, for the next use's count */
			j->id = RUSK_DISPATCH_ID_BASE + slot;
		j->slot = (uint32_t)slot;
		rusk_store32(&j->agent, agent, RUSK_RELAXED);
		slot_put(d, j);
		*rc = RUSK_ENOMEM;
		return NULL;
	}
	memset(j, 0, offsetof(rusk_dtask, st));
	j->id = RUSK_DISPATCH_ID_BASE + slot + use * d->cap;
	j->submit_ns = s->submit_ns ? s->submit_ns : now;
	j->dur_ns = s->run_ns;
	/* Atomic: the completer may still read end_ns through a stale hand-over entry of the
	 * slot's last use (wheel.c drops it on the state word's use). */
	rusk_store64(&j->end_ns, 0, RUSK_RELAXED);
	j->wait_from_ns = j->ready_ns = j->requeue_ns = 0;
	j->l = l;
	j->pref = s->preferred;
	j->n_pref = s->n_preferred;
	j->user = s->user;
	j->prof = s->profile;
	j->vec = s->vec;
	j->place = t.placement;
	j->gang = t.gang;
	j->rus = s->rus;
	j->placed = 0;
	j->slot = (uint32_t)slot;
	j->aside_syncs = 0;
	j->stalled = 0;
	j->prio = s->priority;
	j->dequeued = j->admitted = j->resv = j->received = false;
	j->group = s->group; /* spec_ok: 0 without groups */
	j->q_in = 0;
	j->q_wait = 0;
	j->q_agent = 0;
	j->q_adm_round = 0;
	j->q_held_round = 0;
	rusk_store32(&j->agent, agent, RUSK_RELAXED); /* E9 */
	rusk_store32(&j->lost, 0, RUSK_RELAXED);
	/* Tenure 1 of this use; published to other threads by the ring (E3) or, for a handle
	 * lookup, read atomically and compared with the handle's use. */
	rusk_store64(&j->st,
	             rusk_js_make((uint64_t)(uint32_t)use << (32 - RUSK_JS_STATE_BITS) | 1,
	                          RUSK_JS_QUEUED),
	             RUSK_RELAXED);
	*rc = RUSK_OK;
	return j;
}

/* j's terminal REJECTED with err (j NULL: spec s, refused before it had a slot), then its
 * slot goes back. Counting is the caller's. */
static void end_rejected(rusk_dispatch *d, uint32_t agent, rusk_dtask *j, const rusk_dtask_spec *s,
                         int err, uint64_t now)
{
	rusk_dispatch_event ev = {.kind = RUSK_EV_REJECTED,
	                          .agent = agent,
	                          .error = err,
	                          .task = j ? j->id : 0,
	                          .user = j ? j->user : s->user,
	                          .time_ns = now};
	if (j != NULL) /* DONE before the event: a handle used from the callback is stale */
		rusk_store64(
		        &j->st,
		        rusk_js_make(rusk_js_key(rusk_load64(&j->st, RUSK_RELAXED)), RUSK_JS_DONE),
		        RUSK_RELEASE);
	emit(d, &ev);
	if (j != NULL)
		slot_put(d, j);
}

void rusk_dispatch_reject_(rusk_dispatch *d, uint32_t agent, rusk_dtask *j,
                           const rusk_dtask_spec *s, int err, uint64_t now)
{
	rusk_faa64(&d->rejected, 1, RUSK_RELAXED); /* any submitting thread */
	if (err == RUSK_ECANCELED)
		rusk_faa64(&d->cancelled, 1, RUSK_RELAXED);
	end_rejected(d, agent, j, s, err, now);
}

/* ---- local queues ----------------------------------------------------------------------- */

static bool jobq_room(rusk_dtaskq *q, size_t n)
{
	if (n <= q->cap)
		return true;
	size_t nc = q->cap ? q->cap : 1024;
	while (nc < n)
		nc *= 2;
	rusk_dtask **na = malloc(nc * sizeof *na);
	if (na == NULL)
		return false;
	for (size_t i = 0; i < q->n; i++)
		na[i] = q->a[(q->head + i) & (q->cap - 1)];
	free(q->a);
	q->a = na;
	q->head = 0;
	q->cap = nc;
	return true;
}

static void jobq_push(rusk_dtaskq *q, rusk_dtask *j, bool front)
{
	/* Room was reserved (rusk_dispatch_reserve_): every queue holds all of the agent's tasks.
	 */
	if (front) {
		q->head = (q->head + q->cap - 1) & (q->cap - 1);
		q->a[q->head] = j;
	} else {
		q->a[(q->head + q->n) & (q->cap - 1)] = j;
	}
	q->n++;
}

static rusk_dtask *jobq_pop(rusk_dtaskq *q)
{
	if (q->n == 0)
		return NULL;
	rusk_dtask *j = q->a[q->head];
	q->head = (q->head + 1) & (q->cap - 1);
	q->n--;
	return j;
}

static inline rusk_dtask *jobq_at(const rusk_dtaskq *q, size_t k)
{
	return q->a[(q->head + k) & (q->cap - 1)];
}

bool rusk_dispatch_reserve_(rusk_dagent *a, size_t more)
{
	size_t n = a->held + more;
	if (n > a->wait.cap) {
		size_t nc = a->wait.cap ? a->wait.cap : 1024;
		while (nc < n)
			nc *= 2;
		rusk_dtask **na = realloc(a->wait.a, nc * sizeof *na);
		if (na == NULL)
			return false;
		a->wait.a = na;
		a->wait.cap = nc;
	}
	return jobq_room(&a->hi, n) && jobq_room(&a->retry, n) && jobq_room(&a->lo, n) &&
	       jobq_room(&a->aside, n);
}

void rusk_dispatch_enqueue_(rusk_dagent *a, rusk_dtask *j)
{
	jobq_push(j->prio > 0 ? &a->hi : &a->lo, j, false);
	a->held++;
	if (RUSK_UNLIKELY(j->group != 0))
		rusk_dquota_wait_(a->d, j); /* its group's waiting demand from now (idempotent) */
}

void rusk_dispatch_retry_(rusk_dagent *a, rusk_dtask *j)
{
	jobq_push(j->prio > 0 ? &a->hi : &a->retry, j, false);
	a->held++;
}

void rusk_dispatch_gave_back_(rusk_dagent *a, rusk_dtask *j)
{
	rusk_dispatch_add_(&a->st.requeued, 1);
	rusk_dispatch_retry_(a, j);
}

static int release(rusk_dispatch *d, const rusk_dtask *j, size_t *rejected)
{
	/* Every agent has the same design (release under the cluster's lock for the lock
	 * baselines): agent 0's handle serves any thread. */
	return rusk_agent_release(d->ag[0].ag, j->id, j->l, j->placed, rejected);
}

/* j, taken out of a's queues, leaves for good: what it holds goes back to the cluster and
 * the view, and it gets its terminal REJECTED. ESTOPPED counts as held at the end. */
static void drop(rusk_dagent *a, rusk_dtask *j, int err, uint64_t now)
{
	if (RUSK_UNLIKELY(j->group != 0)) { /* it leaves its group's usage or waiting demand */
		rusk_dquota_return_(a->d, j);
		rusk_dquota_unwait_(a->d, j);
	}
	if (j->placed > 0 && rusk_js_state(rusk_load64(&j->st, RUSK_RELAXED)) != RUSK_JS_RUNNING) {
		release(a->d, j, NULL);
		if (a->ag != NULL)
			for (uint32_t k = 0; k < j->placed; k++)
				rusk_view_mark_free(rusk_agent_view(a->ag), j->l[k].ru);
		j->placed = 0;
	}
	if (a->resv == j)
		a->resv = NULL;
	if (err == RUSK_ESTOPPED) {
		rusk_dispatch_add_(&a->n_left, 1); /* relaxed readers: stats */
		end_rejected(a->d, a->index, j, NULL, err, now);
	} else {
		if (err == RUSK_ECANCELED)
			rusk_dispatch_add_(&a->st.cancelled, 1);
		rusk_dispatch_reject_(a->d, a->index, j, NULL, err, now);
	}
}

/* Whether j was cancelled while queued (E2: CANCEL is stored only over QUEUED). */
static inline bool cancelled(const rusk_dtask *j)
{
	return rusk_js_state(rusk_load64((uint64_t *)&j->st, RUSK_ACQUIRE)) == RUSK_JS_CANCEL;
}

rusk_dtask *rusk_dispatch_next_(rusk_dagent *a, uint64_t now, size_t *retries)
{
	for (;;) {
		rusk_dtask *j = jobq_pop(&a->hi);
		if (j == NULL && *retries > 0 && a->retry.n > 0) {
			(*retries)--;
			j = jobq_pop(&a->retry);
		}
		if (j == NULL && a->wait.n > 0 && a->wait.a[0]->ready_ns <= now)
			j = rusk_waitq_pop(&a->wait);
		if (j == NULL)
			j = jobq_pop(&a->lo);
		if (j == NULL)
			return NULL;
		a->held--;
		if (!cancelled(j))
			return j;
		drop(a, j, RUSK_ECANCELED, now);
	}
}

uint64_t rusk_dispatch_next_wake_(const rusk_dagent *a)
{
	return a->wait.n > 0 ? a->wait.a[0]->ready_ns : UINT64_MAX;
}

static uint64_t jobq_fitting(const rusk_dtaskq *q, uint64_t free_rus)
{
	uint64_t n = 0;
	for (size_t k = 0; k < q->n; k++) {
		const rusk_dtask *j = jobq_at(q, k);
		n += (uint64_t)(j->rus - j->placed) <= free_rus && !cancelled(j);
	}
	return n;
}

uint64_t rusk_dispatch_placeable_(const rusk_dagent *a, uint64_t free_rus)
{
	uint64_t n = jobq_fitting(&a->hi, free_rus) + jobq_fitting(&a->retry, free_rus) +
	             jobq_fitting(&a->lo, free_rus) + jobq_fitting(&a->aside, free_rus);
	for (size_t k = 0; k < a->wait.n; k++)
		n += (uint64_t)(a->wait.a[k]->rus - a->wait.a[k]->placed) <= free_rus &&
		     !cancelled(a->wait.a[k]);
	return n;
}

/* Removes from q every task that keep() refuses: each is dropped as cancelled. */
static void jobq_filter(rusk_dagent *a, rusk_dtaskq *q, bool (*keep)(const rusk_dtask *),
                        uint64_t now)
{
	size_t n = q->n, w = 0;
	for (size_t k = 0; k < n; k++) {
		rusk_dtask *j = jobq_at(q, k);
		if (keep(j)) {
			q->a[(q->head + w++) & (q->cap - 1)] = j;
		} else {
			a->held--;
			drop(a, j, RUSK_ECANCELED, now);
		}
	}
	q->n = w;
}

static bool not_cancelled(const rusk_dtask *j)
{
	return !cancelled(j);
}

/* E9: cancellations were asked since the last look: every cancelled task in a's queues
 * leaves now (REJECTED, RUSK_ECANCELED). Cancels are rare; the sweep is O(held). */
static void sweep_cancelled(rusk_dagent *a, uint64_t now)
{
	uint32_t asked = rusk_load32(&a->cancels, RUSK_ACQUIRE); /* E9 */
	if (asked == a->cancels_seen)
		return;
	a->cancels_seen = asked;
	jobq_filter(a, &a->hi, not_cancelled, now);
	jobq_filter(a, &a->retry, not_cancelled, now);
	jobq_filter(a, &a->lo, not_cancelled, now);
	jobq_filter(a, &a->aside, not_cancelled, now);
	size_t w = 0, n = a->wait.n;
	for (size_t k = 0; k < n; k++) {
		rusk_dtask *j = a->wait.a[k];
		if (!cancelled(j)) {
			a->wait.a[w++] = j;
		} else {
			a->held--;
			drop(a, j, RUSK_ECANCELED, now);
		}
	}
	/* The heap again, in place: each push writes at or before the slot it read. */
	a->wait.n = 0;
	for (size_t k = 0; k < w; k++)
		(void)rusk_waitq_push(&a->wait, a->wait.a[k]); /* within its capacity */
}

/* ---- the steps of a task ----------------------------------------------------------------- */

/* now - since, 0 when since is still to come (a submit_ns ahead of the clock). */
static inline uint64_t elapsed(uint64_t now, uint64_t since)
{
	return now > since ? now - since : 0;
}

void rusk_dispatch_dequeued_(rusk_dagent *a, rusk_dtask *j, uint64_t now)
{
	if (!j->dequeued) {
		j->dequeued = true;
		rusk_hist_record(&a->st.queue, elapsed(now, j->submit_ns));
	}
}

rusk_task rusk_dispatch_task_(const rusk_dispatch *d, const rusk_dtask *j)
{
	(void)d;
	rusk_task t = {.id = j->id,
	               .rus = j->rus - j->placed,
	               .gang = j->gang && !j->resv,
	               .placement = j->place,
	               .priority = j->prio,
	               .profile = j->prof,
	               .preferred = j->pref,
	               .n_preferred = j->n_pref,
	               .submit_ns = j->submit_ns,
	               .vec = j->vec,
	               .held = j->placed > 0 ? j->l : NULL,
	               .n_held = j->placed,
	               .reserve = j->resv};
	return t;
}

bool rusk_dispatch_admit_(rusk_dagent *a, rusk_dtask *j, uint64_t now)
{
	const rusk_dispatch *d = a->d;
	if (d->p.admit == NULL || j->admitted)
		return true;
	rusk_task t = rusk_dispatch_task_(d, j);
	rusk_admit_decision dec;
	uint64_t waited = j->wait_from_ns ? now - j->wait_from_ns : 0;
	if (rusk_admit_check(d->p.admit, &t, d->p.quality, waited, &dec) != RUSK_OK ||
	    dec.verdict == RUSK_ADMIT_NOW) {
		j->admitted = true;
		if (j->wait_from_ns != 0) {
			rusk_hist_record(&a->st.admission, waited);
			rusk_dispatch_add_(&a->st.adm_waited, 1);
			rusk_dispatch_add_(&a->st.adm_bound, dec.reason == RUSK_ADMIT_BOUND);
		}
		return true;
	}
	if (j->wait_from_ns == 0) {
		j->wait_from_ns = now;
		rusk_dispatch_event ev = {.kind = RUSK_EV_WAITING,
		                          .agent = a->index,
		                          .task = j->id,
		                          .user = j->user,
		                          .time_ns = now,
		                          .admit = &dec};
		emit((rusk_dispatch *)d, &ev);
	}
	j->ready_ns = now + dec.wait_ns;
	(void)rusk_waitq_push(&a->wait, j); /* room reserved: cannot fail */
	a->held++;
	return false;
}

void rusk_dispatch_count_(rusk_dagent *a, const rusk_placement *pl)
{
	rusk_dispatch_add_(&a->st.attempts, pl->attempts);
	rusk_dispatch_add_(&a->st.conflicts, pl->commits_lost);
	rusk_dispatch_add_(&a->st.rus_lost, pl->conflicts);
	rusk_dispatch_add_(&a->st.memory_short, pl->memory_short);
}

uint64_t rusk_dispatch_tenure_(const rusk_dtask *j)
{
	return rusk_js_key(rusk_load64((uint64_t *)&j->st, RUSK_ACQUIRE));
}

static void count_placement(rusk_dagent_stats *s, const rusk_placement *pl, uint64_t t_deq,
                            uint64_t t_done)
{
	rusk_dispatch_add_(&s->rus_placed, pl->placed);
	rusk_dispatch_add_(&s->r_sum, pl->sample_size);
	if (pl->sample_size > s->r_max)
		rusk_store64(&s->r_max, pl->sample_size, RUSK_RELAXED);
	rusk_dispatch_add_(&s->q_micro, (uint64_t)(pl->quality * 1e6));
	rusk_dispatch_add_(&s->pref_tasks, pl->placed > 0 && pl->preferred == pl->placed);
	rusk_hist_record(&s->place, elapsed(t_done, t_deq));
	rusk_hist_record(&s->sample, pl->sample_ns);
	rusk_hist_record(&s->commit, pl->commit_ns);
	rusk_hist_record(&s->stale, pl->staleness_ns);
}

rusk_dtask_outcome rusk_dispatch_placed_(rusk_dagent *a, rusk_dtask *j, const rusk_placement *pl,
                                         uint64_t t_deq, uint64_t t_done)
{
	rusk_dagent_stats *s = &a->st;
	j->placed += pl->placed;
	if (pl->placed > 0)
		j->stalled = 0; /* it grew (resume_aside) */
	count_placement(s, pl, t_deq, t_done);
	if (j->placed < j->rus) {
		/* Incremental: it keeps what it won and waits for the rest. */
		jobq_push(&a->retry, j, false);
		a->held++;
		return RUSK_DISP_PARTIAL;
	}
	/* E1, E2: QUEUED -> PLACING decides against a cancellation; from here on neither a
	 * cancel nor a completion touches it until RUNNING is stored. */
	uint64_t st = rusk_load64(&j->st, RUSK_RELAXED);
	while (rusk_js_state(st) == RUSK_JS_QUEUED &&
	       !rusk_cas64(&j->st, &st, rusk_js_make(rusk_js_key(st), RUSK_JS_PLACING),
	                   RUSK_ACQ_REL))
		;
	if (rusk_js_state(st) == RUSK_JS_CANCEL) {
		drop(a, j, RUSK_ECANCELED, t_done);
		return RUSK_DISP_CANCELED;
	}
	if (a->resv == j) {
		a->resv = NULL; /* invariant 4: the reservation holds all it needs */
		j->resv = false;
	}
	uint64_t from = j->requeue_ns ? j->requeue_ns : j->submit_ns;
	uint64_t delay = elapsed(t_done, from);
	rusk_hist_record(j->prio > 0 ? &s->delay_hi : &s->delay_lo, delay);
	if (a->ag != NULL)
		rusk_agent_observe_delay(a->ag, delay);
	rusk_dispatch_add_(&s->placed, 1);
	rusk_dispatch_add_(&s->qmode_tasks, pl->strategy == RUSK_STRATEGY_QUALITY);
	rusk_dispatch_add_(&s->placed_hi, j->prio > 0);
	rusk_dispatch_event ev = {.kind = RUSK_EV_PLACED,
	                          .agent = a->index,
	                          .task = j->id,
	                          .user = j->user,
	                          .leases = j->l,
	                          .n_leases = j->placed,
	                          .placement = pl,
	                          .time_ns = t_done,
	                          .delay_ns = delay,
	                          .run_ns = j->dur_ns};
	emit(a->d, &ev);
	bool timed = ev.run_ns != RUSK_RUN_UNTIL_COMPLETE;
	if (timed)
		rusk_dispatch_add_(&s->tet_us, ev.run_ns / 1000);
	if (t_done > s->last_done_ns)
		rusk_store64(&s->last_done_ns, t_done, RUSK_RELAXED);
	/* Saturated: a run_ns near UINT64_MAX ("for ever") wrapped to an end in the past. */
	uint64_t end = !timed                                ? UINT64_MAX
	               : ev.run_ns < UINT64_MAX - 1 - t_done ? t_done + ev.run_ns
	                                                     : UINT64_MAX - 1;
	/* Atomic: a reader of an earlier tenure (a preemptor) may still look at it. */
	rusk_store64(&j->end_ns, end, RUSK_RELAXED);
	/* E1: the leases and end time above are visible to whoever acquires RUNNING. Only
	 * this thread changes a PLACING word: a plain store. */
	rusk_store64(&j->st, rusk_js_make(rusk_js_key(st), RUSK_JS_RUNNING), RUSK_RELEASE);
	return RUSK_DISP_RUNNING;
}

void rusk_dispatch_refuse_(rusk_dagent *a, rusk_dtask *j, int err, uint64_t now)
{
	rusk_dispatch_add_(&a->st.refused, 1);
	drop(a, j, err, now);
}

/* Room in a's view for `need` RUs (over every partition). */
static bool view_has_room(rusk_dagent *a, uint32_t need)
{
	rusk_view *v = rusk_agent_view(a->ag);
	uint64_t free_rus = 0;
	for (uint32_t p = 0; p < rusk_cluster_partitions(a->d->c); p++)
		free_rus += rusk_view_free(v, p);
	return free_rus >= need;
}

/*
 * Whether j's placement holds `lease`. An optimistic read (E12), as a seqlock's reader: j
 * may end, and its slot be used again, while this reads; the caller's CAS on the state
 * word it loaded before decides (take_victim, rusk_dispatch_revoked's take_back), and fails
 * if anything changed. Every word read is memory of d (the slot, its inline leases, a lease
 * array that lives until destroy), and the loop is bounded by the capacity of the array it
 * reads, so a torn read costs a wrong guess, never a stray access. TSan cannot see the
 * validation: these reads are left out of its instrumentation.
 */
__attribute__((no_sanitize("thread"))) static bool holds(const rusk_dtask *j, rusk_lease lease)
{
	const volatile rusk_dtask *v = j;
	const rusk_lease *l = v->l;
	if (l == NULL)
		return false;
	uint32_t cap = RUSK_JOB_INLINE_LEASES, n = v->placed;
	if (l != j->l_in)
		cap = ((const volatile rusk_dleases *)((const char *)l - offsetof(rusk_dleases, l)))
		              ->cap;
	for (uint32_t k = 0; k < n && k < cap; k++) {
		const volatile rusk_lease *x = &l[k];
		if (x->ru == lease.ru && x->gen == lease.gen)
			return true;
	}
	return false;
}

/* Whether victim j looks preemptable: a normal-priority task (of a group marked in `from`,
 * when given) holding `lease`. Optimistic reads, as holds(). */
__attribute__((no_sanitize("thread"))) static bool victim_fits(const rusk_dtask *j,
                                                               rusk_lease lease,
                                                               const uint8_t *from)
{
	const volatile rusk_dtask *v = j;
	if (v->prio > 0)
		return false;
	/* Reclaim (dquota.c): only tasks of the groups this round marked as reclaimable. */
	uint16_t g = v->group;
	if (from != NULL && (g == 0 || !from[g - 1u]))
		return false;
	return holds(j, lease);
}

/* Takes victim vt's tenure (E2) if it is a normal-priority task of this use running with
 * `lease` among its leases; true when taken. */
static bool take_victim(rusk_dtask *vt, uint32_t use, rusk_lease lease, const uint8_t *from)
{
	uint64_t st = rusk_load64(&vt->st, RUSK_ACQUIRE); /* E1: its fields are ours to read */
	if (rusk_js_use(st) != use || rusk_js_state(st) != RUSK_JS_RUNNING ||
	    !victim_fits(vt, lease, from))
		return false;
	/* E12: the CAS validates the reads above (any end or reuse changed st). */
	return rusk_cas64(&vt->st, &st, rusk_js_make(rusk_js_key(st) + 1, RUSK_JS_QUEUED),
	                  RUSK_ACQ_REL);
}

static uint32_t preempt(rusk_dagent *a, const rusk_dtask *j, uint64_t now, const uint8_t *from,
                        uint32_t max_victims);

uint32_t rusk_dispatch_preempt_(rusk_dagent *a, const rusk_dtask *j, uint64_t now)
{
	return preempt(a, j, now, NULL, UINT32_MAX);
}

uint32_t rusk_dispatch_reclaim_(rusk_dagent *a, const rusk_dtask *j, uint64_t now)
{
	uint32_t budget;
	const uint8_t *from = rusk_dquota_reclaim_from_(a, j, &budget);
	if (from == NULL)
		return 0;
	uint32_t freed = preempt(a, j, now, from, budget);
	rusk_dquota_reclaimed_(a, freed);
	return freed;
}

/* Preempts normal running tasks (of the groups `from` marks, when not NULL; at most
 * max_victims of them) until j's RUs are free in a's view. */
static uint32_t preempt(rusk_dagent *a, const rusk_dtask *j, uint64_t now, const uint8_t *from,
                        uint32_t max_victims)
{
	rusk_dispatch *d = a->d;
	uint32_t victims = 0;
	uint32_t need = j->rus - j->placed, freed = 0, n_rus = rusk_cluster_rus(d->c);
	/* Preempt only where the agent knows of no room: a multi-RU choice can fail on a
	 * view with room (constraints, a stale partition), and evicting then would not make
	 * room where the agent looks. Victims must fit a's queues without allocating. A
	 * vector task never preempts: victims free RUs anywhere, not memory and GPUs on one
	 * machine that it could use. */
	if (rusk_vec_any(&j->vec) || view_has_room(a, need) || !rusk_dispatch_reserve_(a, need))
		return 0;
	rusk_view *v = rusk_agent_view(a->ag);
	/* Victims are found where they hold RUs: a bounded sample of the master array, from a
	 * stream of the agent's own (deterministic in the simulator). Only RUs held under a
	 * handle of d by a task of d that holds that very lease: an RU the embedder holds
	 * under its own id is never taken, whatever the id. */
	for (uint32_t probe = 0; probe < 64 * need && freed < need && victims < max_victims;
	     probe++) {
		uint32_t ru = rusk_rng_below(&a->prng, n_rus), use;
		rusk_ru_info info;
		if (rusk_ru_state(d->c, ru, &info) != RUSK_OK)
			continue;
		rusk_dtask *vt = rusk_dispatch_lookup_(d, info.owner, &use);
		if (vt == NULL || !take_victim(vt, use, (rusk_lease){ru, info.gen}, from))
			continue;
		victims++;
		rusk_dquota_return_(d, vt); /* E2 won: its tenure's usage ends (E11) */
		rusk_dquota_wait_(d, vt);   /* and it waits again */
		release(d, vt, NULL);
		for (uint32_t k = 0; k < vt->placed; k++)
			rusk_view_mark_free(v, vt->l[k].ru);
		freed += vt->placed;
		vt->placed = 0;
		vt->requeue_ns = now;
		rusk_store32(&vt->agent, a->index, RUSK_RELAXED); /* E9: a's queues hold it */
		rusk_dispatch_add_(&a->st.preempted, 1);
		rusk_dispatch_event ev = {.kind = RUSK_EV_PREEMPTED,
		                          .agent = a->index,
		                          .task = vt->id,
		                          .user = vt->user,
		                          .time_ns = now};
		emit(d, &ev);
		jobq_push(&a->retry, vt, true);
		a->held++;
	}
	if (freed > 0)
		rusk_dispatch_add_(&a->st.preemptions, 1);
	return freed;
}

bool rusk_dispatch_end_(rusk_dispatch *d, rusk_dtask *j, uint64_t key, uint64_t now)
{
	uint64_t st = rusk_js_make(key, RUSK_JS_RUNNING);
	/* E2: pairs with rusk_dispatch_placed_'s release and a preemptor's CAS. */
	if (!rusk_cas64(&j->st, &st, rusk_js_make(key, RUSK_JS_DONE), RUSK_ACQ_REL))
		return false;
	if (RUSK_UNLIKELY(j->q_in != 0))
		rusk_dquota_return_(d, j);  /* E11 */
	if (release(d, j, NULL) == RUSK_OK) /* its agent's count: the one that ends it, mostly */
		rusk_faa64(&d->ag[rusk_load32(&j->agent, RUSK_RELAXED) % d->p.agents].st.released,
		           1, RUSK_RELAXED);
	rusk_dispatch_event ev = {
	        .kind = RUSK_EV_DONE, .task = j->id, .user = j->user, .time_ns = now};
	emit(d, &ev);
	slot_put(d, j);
	return true;
}

void rusk_dispatch_drain_(rusk_dagent *a)
{
	/* Every task still held ends here (invariant 2): REJECTED with RUSK_ESTOPPED, counted
	 * as held at the end, or RUSK_ECANCELED; an incremental task gives back what it won. */
	rusk_dtaskq *qs[] = {&a->hi, &a->retry, &a->lo, &a->aside};
	uint64_t now = now_ns(a->d);
	for (int i = 0; i < 4; i++) {
		rusk_dtask *j;
		while ((j = jobq_pop(qs[i])) != NULL) {
			a->held--;
			drop(a, j, cancelled(j) ? RUSK_ECANCELED : RUSK_ESTOPPED, now);
		}
	}
	while (a->wait.n > 0) {
		rusk_dtask *j = rusk_waitq_pop(&a->wait);
		a->held--;
		drop(a, j, cancelled(j) ? RUSK_ECANCELED : RUSK_ESTOPPED, now);
	}
	free(a->hi.a);
	free(a->retry.a);
	free(a->lo.a);
	free(a->aside.a);
	free(a->wait.a);
	memset(&a->hi, 0, sizeof a->hi);
	memset(&a->retry, 0, sizeof a->retry);
	memset(&a->lo, 0, sizeof a->lo);
	memset(&a->aside, 0, sizeof a->aside);
	memset(&a->wait, 0, sizeof a->wait);
}

/* ---- the agent threads ------------------------------------------------------------------- */

enum { STEP_DONE, STEP_PARKED, STEP_ASIDE };

/* The wheel's end function (wheel.h): a timed end of j's tenure `key`. */
static bool wheel_end(void *ctx, void *j, uint64_t key, uint64_t now)
{
	return rusk_dispatch_end_(ctx, j, key, now);
}

/* j runs (tenure `key`) for run_ns: its timed end goes into a's wheel (wheel.c). */
static void hand_over(rusk_dagent *a, rusk_dtask *j, uint64_t key, uint64_t run_ns)
{
	uint64_t end = rusk_load64(&j->end_ns, RUSK_RELAXED);
	if (end != UINT64_MAX) /* else RUSK_RUN_UNTIL_COMPLETE: the embedder ends it */
		if (!rusk_wheel_put(a->ends, j, end, key, run_ns)) {
			/* Out of memory: end it now rather than never. */
			rusk_store32(&a->d->fail, 1, RUSK_RELAXED);
			rusk_dispatch_end_(a->d, j, key, rusk_dispatch_now_(a->d));
		}
}

/* Moves a's ring into its local queues, as far as their room goes (invariant 1: a task
 * that finds no room stays in the ring, never dropped). */
static void take_ring(rusk_dagent *a)
{
	rusk_dtask *j;
	while (rusk_dispatch_reserve_(a, 1)) {
		if (!ck_ring_dequeue_mpsc(&a->in, a->in_buf, &j))
			return;
		TSAN_ACQUIRE(j);    /* E3 */
		if (!j->received) { /* a submission, not a revoked task queued again */
			j->received = true;
			rusk_dispatch_add_(&a->st.received, 1);
		}
		rusk_dispatch_enqueue_(a, j);
	}
	rusk_store32(&a->d->fail, 1, RUSK_RELAXED);
}

/*
 * Ends j's running tenure `st` because a lease of it was revoked (E2: the CAS decides
 * against its timed end, a preemptor, or the other side of E7): its other RUs come back,
 * REVOKED is delivered, and it is queued again: on agent a's retry list when a is its
 * agent's own thread, else through an agent's submission queue. False if it lost the CAS.
 */
static bool requeue(rusk_dispatch *d, rusk_dtask *j);

static bool take_back(rusk_dispatch *d, rusk_dtask *j, uint64_t st, rusk_dagent *a)
{
	if (!rusk_cas64(&j->st, &st, rusk_js_make(rusk_js_key(st) + 1, RUSK_JS_QUEUED),
	                RUSK_ACQ_REL))
		return false;
	rusk_dquota_return_(d, j); /* E11: its tenure's usage ends */
	rusk_dquota_wait_(d, j);   /* and it waits again */
	uint64_t now = now_ns(d);
	release(d, j, NULL); /* the revoked lease is refused, the others come back */
	j->placed = 0;
	j->requeue_ns = now;
	rusk_store32(&j->lost, 0, RUSK_RELAXED);
	rusk_faa64(&d->revoked, 1, RUSK_RELAXED);
	rusk_dispatch_event ev = {.kind = RUSK_EV_REVOKED,
	                          .error = RUSK_EOFFLINE,
	                          .task = j->id,
	                          .user = j->user,
	                          .time_ns = now};
	emit(d, &ev);
	if (a != NULL) {
		rusk_store32(&j->agent, a->index, RUSK_RELAXED); /* E9 */
		jobq_push(&a->retry, j, true); /* room: it was just taken from a's queues */
		a->held++;
	} else if (!requeue(d, j)) {
		rusk_dispatch_reject_(d, UINT32_MAX, j, NULL, RUSK_ESTOPPED, now);
	}
	return true;
}

/* The room class of a task (dispatch_impl.h, rusk_dagent.room): its placement kind, with
 * ANY split by whether it needs all its RUs at once. */
enum { ROOM_ANY_GANG = 0, ROOM_ANY_INCR = 4 };
static inline uint32_t room_class(const rusk_task *t)
{
	return t->placement == RUSK_PLACE_ANY && (!t->gang || t->rus == 1) ? ROOM_ANY_INCR
	                                                                   : t->placement;
}

/* The view has no free RU at all: nothing normal is tried until the next sync. */
static inline bool dry(const rusk_dagent *a)
{
	return a->room[ROOM_ANY_INCR] <= 1;
}

/* Whether a task like j failed for room since the last sync: a normal task without RUs
 * held, of a room class that failed at this size or less. A vector task is always tried:
 * its memory and GPUs are read live, past the view. */
static bool known_no_room(const rusk_dagent *a, const rusk_dtask *j, const rusk_task *t)
{
	if (j->prio > 0 || j->placed > 0 || rusk_vec_any(&j->vec))
		return false;
	return t->rus >= a->room[room_class(t)];
}

/* Whether place() gave up because the view had nothing suitable, not after max_retries
 * lost commits: its decision found no candidate, which only a sync can change. */
static inline bool place_failed_for_room(const rusk_dagent *a, const rusk_placement *pl)
{
	return pl->attempts <= a->max_retries;
}

/* j waits aside until a's next sync. A failure for room is noted for its class, so that
 * tasks like it go aside without a try (a task holding RUs, or a vector task, fails for
 * reasons of its own machine and notes nothing). */
static void put_aside(rusk_dagent *a, rusk_dtask *j, const rusk_task *t, bool note)
{
	if (note && j->placed == 0 && !rusk_vec_any(&j->vec)) {
		uint32_t k = room_class(t);
		if (k == ROOM_ANY_INCR) { /* not even one RU: nothing fits anywhere */
			rusk_dispatch_add_(&a->st.dry, !dry(a));
			for (int i = 0; i < 5; i++)
				a->room[i] = 1;
		} else if (t->rus < a->room[k])
			a->room[k] = t->rus;
	}
	rusk_dispatch_add_(&a->st.aside, 1);
	jobq_push(&a->aside, j, false); /* room: it was just taken from a's queues */
	a->held++;
}

/* j holds part of its RUs and stopped growing: it gives back what it holds and starts
 * again from nothing. A reservation (its group's other RUs are held by tasks that stay, or
 * by another agent's reservation) waits aside as any task, to become a reservation again
 * later, drawn afresh. An incremental task ("Partial holds" in rusk/dispatch.h): two of
 * them that split a group between them, on views that did not show each other's commits
 * (a 4-RU whole-machine task holding 3 RUs, a 2-RU one holding the 4th), each wait for an
 * RU the other holds, and neither may become a reservation when it misses only one RU. */
static void give_back_partial(rusk_dagent *a, rusk_dtask *j)
{
	if (j->placed > 0) {
		release(a->d, j, NULL);
		for (uint32_t k = 0; k < j->placed; k++)
			rusk_view_mark_free(rusk_agent_view(a->ag), j->l[k].ru);
		j->placed = 0;
	}
	if (j->resv) {
		j->resv = false;
		j->aside_syncs = 0;
		a->resv = NULL;
	}
	j->stalled = 0;
	rusk_dispatch_add_(&a->st.given_back, 1);
}

/* a's view synced: room may have appeared anywhere. The aside list goes back, in order,
 * to the front of the retry list (invariant 1: moved, never copied); the first multi-RU
 * task back often enough becomes a's reservation (invariant 4); a reservation, or any
 * other task holding part of its RUs, that has not grown for 2 x reserve_syncs syncs
 * (at least 2) gives back what it holds (give_back_partial). */
static void resume_aside(rusk_dagent *a)
{
	for (int i = 0; i < 5; i++)
		a->room[i] = UINT32_MAX;
	uint32_t reserve = a->d->p.reserve_syncs;
	uint32_t stall_max = reserve > 0 ? 2 * reserve : 2;
	while (a->aside.n > 0) {
		rusk_dtask *j = a->aside.a[(a->aside.head + a->aside.n - 1) & (a->aside.cap - 1)];
		a->aside.n--;
		j->aside_syncs++;
		if (j->resv) { /* j == a->resv */
			a->resv_idle = j->placed > a->resv_held ? 0 : a->resv_idle + 1;
			a->resv_held = j->placed;
			if (a->resv_idle >= stall_max)
				give_back_partial(a, j);
		} else if (a->resv == NULL && reserve > 0 && j->aside_syncs >= reserve &&
		           j->rus - j->placed > 1 && !rusk_vec_any(&j->vec) && j->prio == 0) {
			a->resv = j;
			j->resv = true;
			a->resv_idle = 0;
			a->resv_held = j->placed;
			rusk_dispatch_add_(&a->st.reservations, 1);
		} else if (j->placed > 0) { /* an incremental task waiting for the rest */
			if (j->stalled < UINT8_MAX)
				j->stalled++;
			if (j->stalled >= stall_max)
				give_back_partial(a, j);
		}
		jobq_push(j->prio > 0 ? &a->hi : &a->retry, j, true);
	}
}

/* Places j (taken from a's queues); what the loop should do next. */
static int place_one(rusk_dagent *a, rusk_dtask *j)
{
	rusk_dispatch *d = a->d;
	uint64_t t_deq = now_ns(d);
	rusk_dispatch_dequeued_(a, j, t_deq);
	if (rusk_load32(&j->lost, RUSK_ACQUIRE) != 0) {
		/* Its machine failed under a partial placement: start again from nothing (a
		 * second failure meanwhile is covered by releasing every lease). */
		rusk_store32(&j->lost, 0, RUSK_RELAXED);
		if (j->placed > 0)
			release(d, j, NULL);
		j->placed = 0;
	}
	if (!rusk_dispatch_admit_(a, j, t_deq))
		return STEP_PARKED;
	/* Quota groups (dquota.c): a grouped task that holds nothing is admitted against its
	 * agent's share of the group's allowance, or parked until the next round. One branch
	 * on the task's own word for tasks without a group. */
	bool q_new = false;
	if (RUSK_UNLIKELY(j->group != 0) && j->placed == 0 && j->q_in == 0) {
		if (!rusk_dquota_admit_(a, j, t_deq))
			return STEP_PARKED;
		q_new = true;
	}
	rusk_task t = rusk_dispatch_task_(d, j);
	if (known_no_room(a, j, &t)) {
		if (q_new)
			rusk_dquota_unadmit_(a, j);
		put_aside(a, j, &t, false);
		return STEP_ASIDE;
	}
	rusk_placement pl;
	int rc = rusk_agent_place(a->ag, &t, j->l + j->placed, &pl);
	if (rc == RUSK_EAGAIN && j->prio > 0 && rusk_dispatch_preempt_(a, j, now_ns(d)) > 0) {
		rusk_dispatch_count_(a, &pl);
		rc = rusk_agent_place(a->ag, &t, j->l + j->placed, &pl);
	} else if (rc == RUSK_EAGAIN && RUSK_UNLIKELY(j->group != 0) &&
	           rusk_dispatch_reclaim_(a, j, now_ns(d)) > 0) {
		/* its group is below its minimum: tasks of groups above theirs made room */
		rusk_dispatch_count_(a, &pl);
		rc = rusk_agent_place(a->ag, &t, j->l + j->placed, &pl);
	}
	rusk_dispatch_count_(a, &pl);
	if (rc == RUSK_EINVAL || rc == RUSK_EINFEASIBLE) {
		rusk_dispatch_refuse_(a, j, rc, now_ns(d));
		return STEP_DONE;
	}
	if (rc != RUSK_OK) {
		if (q_new && j->placed == 0)
			rusk_dquota_unadmit_(a, j); /* it leaves unplaced: admitted again later */
		if (rc == RUSK_ENOMEM) {
			rusk_store32(&d->fail, 1, RUSK_RELAXED);
			put_aside(a, j, &t, false); /* until the next sync, not in a loop */
			return STEP_ASIDE;
		}
		if (place_failed_for_room(a, &pl)) {
			put_aside(a, j, &t, true);
			return STEP_ASIDE;
		}
		rusk_dispatch_gave_back_(a, j); /* lost commits: room may be there, try again */
		return STEP_DONE;
	}
	/* The cluster's clock: the call's own end reading saves one. */
	if (rusk_dispatch_placed_(a, j, &pl, t_deq, pl.end_ns) != RUSK_DISP_RUNNING)
		return STEP_DONE;
	/* E7: RUNNING is stored (release); a revocation that found it QUEUED flagged it. */
	rusk_fence_full();
	uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE);
	if (rusk_load32(&j->lost, RUSK_ACQUIRE) != 0 && rusk_js_state(st) == RUSK_JS_RUNNING &&
	    take_back(d, j, st, a))
		return STEP_DONE;
	uint64_t end = rusk_load64(&j->end_ns, RUSK_RELAXED); /* placed at pl.end_ns */
	hand_over(a, j, rusk_js_key(st), end > pl.end_ns ? end - pl.end_ns : 0);
	return STEP_DONE;
}

/* One round: up to `batch` tasks (those put aside count: the view is ticked between
 * rounds); a dry agent serves only its high-priority queue. Returns tasks handled. */
/*
 * rusk_dispatch_next_ for the agent threads, with retries and new tasks taking turns: the tasks
 * back from aside at a sync go to the front of the retry list, and a run of them (large
 * ones, tens of us each) held up every small task behind it for its whole length (the
 * one-RU p99 tripled with 2% of 48-RU tasks). High priority still goes first. The
 * simulator keeps rusk_dispatch_next_'s order (its outputs are the papers' experiments).
 */
static rusk_dtask *agent_next(rusk_dagent *a, uint64_t now, size_t *retries, bool *new_turn)
{
	while (a->hi.n == 0 && *new_turn && a->lo.n > 0 && *retries > 0 && a->retry.n > 0) {
		*new_turn = false;
		rusk_dtask *j = jobq_pop(&a->lo);
		a->held--;
		if (!cancelled(j))
			return j;
		drop(a, j, RUSK_ECANCELED, now);
	}
	*new_turn = true;
	return rusk_dispatch_next_(a, now, retries);
}

/* A round's next task: while dry (no free RU seen), only high-priority tasks, which may
 * preempt; otherwise agent_next's order (agent_round and agent_round_remote). */
static inline rusk_dtask *round_next(rusk_dagent *a, uint64_t now, size_t *retries, bool *new_turn)
{
	if (dry(a)) {
		size_t none = 0;
		return a->hi.n == 0 ? NULL : rusk_dispatch_next_(a, now, &none);
	}
	return agent_next(a, now, retries, new_turn);
}

static uint32_t agent_round(rusk_dagent *a, uint64_t now)
{
	size_t retries = a->retry.n;
	uint32_t done = 0;
	bool new_turn = false;
	while (done < a->d->p.batch) {
		rusk_dtask *j = round_next(a, now, &retries, &new_turn);
		if (j == NULL)
			break;
		if (place_one(a, j) != STEP_PARKED)
			done++;
	}
	return done;
}

/*
 * Batches over a remote master state (kernel/remote.h "Batches"): a round decides up to
 * a->rbatch tasks against the view (each decision's RUs marked taken there), commits them
 * together (one pipeline per partition), then settles each as place_one would: placed and
 * handed over, put aside when its decision found no room, or queued again for a retry when
 * the remote refused it (a conflict, counted). Tasks the batch does not take (high
 * priority, a quota group, a vector demand, RUs held already, the reservation) go through
 * place_one, as without batches. The in-memory path never comes here (a->rbatch 0).
 */
typedef struct rusk_rbatch {
	rusk_remote_item *it;
	rusk_placement *pl;
	rusk_dtask **j;
	rusk_task *t;
	uint64_t *t_deq;
	uint32_t *rus;
	size_t rcap; /* rus[] */
} rusk_rbatch;

static void rbatch_free(rusk_rbatch *rb)
{
	if (rb == NULL)
		return;
	free(rb->it);
	free(rb->pl);
	free(rb->j);
	free(rb->t);
	free(rb->t_deq);
	free(rb->rus);
	free(rb);
}

static rusk_rbatch *rbatch_get(rusk_dagent *a)
{
	if (a->rb != NULL)
		return a->rb;
	size_t B = a->rbatch;
	rusk_rbatch *rb = calloc(1, sizeof *rb);
	if (rb == NULL)
		return NULL;
	rb->it = calloc(B, sizeof *rb->it);
	rb->pl = calloc(B, sizeof *rb->pl);
	rb->j = calloc(B, sizeof *rb->j);
	rb->t = calloc(B, sizeof *rb->t);
	rb->t_deq = calloc(B, sizeof *rb->t_deq);
	if (rb->it == NULL || rb->pl == NULL || rb->j == NULL || rb->t == NULL ||
	    rb->t_deq == NULL) {
		rbatch_free(rb);
		return NULL;
	}
	a->rb = rb;
	return rb;
}

/* Whether j goes in a batch: a plain task (the note above). */
static inline bool batchable(const rusk_dtask *j)
{
	return j->prio == 0 && j->group == 0 && j->placed == 0 && !j->resv &&
	       !rusk_vec_any(&j->vec) && rusk_load32(&j->lost, RUSK_RELAXED) == 0;
}

/* Commits and settles the batch's nb tasks (place_one's end for each). */
static void rbatch_commit(rusk_dagent *a, rusk_rbatch *rb, size_t nb)
{
	if (nb == 0)
		return;
	rusk_dispatch *d = a->d;
	/* rus[] may have moved while the batch grew: the items point into it now. */
	for (size_t i = 0, off = 0; i < nb; i++) {
		rb->it[i].rus = rb->rus + off;
		off += rb->it[i].n;
	}
	rusk_agent_place_many_(a->ag, rb->it, nb);
	for (size_t i = 0; i < nb; i++) {
		rusk_dtask *j = rb->j[i];
		rusk_placement *pl = &rb->pl[i];
		rusk_dispatch_count_(a, pl);
		if (rb->it[i].rc != RUSK_OK) {
			/* Refused (a conflict): tried again next round, as place() would at once.
			 */
			rusk_dispatch_gave_back_(a, j);
			continue;
		}
		if (rusk_dispatch_placed_(a, j, pl, rb->t_deq[i], pl->end_ns) != RUSK_DISP_RUNNING)
			continue;
		/* E7, as place_one. */
		rusk_fence_full();
		uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE);
		if (rusk_load32(&j->lost, RUSK_ACQUIRE) != 0 &&
		    rusk_js_state(st) == RUSK_JS_RUNNING && take_back(d, j, st, a))
			continue;
		uint64_t end = rusk_load64(&j->end_ns, RUSK_RELAXED);
		hand_over(a, j, rusk_js_key(st), end > pl->end_ns ? end - pl->end_ns : 0);
	}
}

/* Decides j into the batch (place_one's first half); what the round should count. */
static int rbatch_add(rusk_dagent *a, rusk_rbatch *rb, size_t *nb, size_t *used, rusk_dtask *j)
{
	rusk_dispatch *d = a->d;
	uint64_t t_deq = now_ns(d);
	rusk_dispatch_dequeued_(a, j, t_deq);
	if (!rusk_dispatch_admit_(a, j, t_deq))
		return STEP_PARKED;
	size_t k = *nb;
	rb->t[k] = rusk_dispatch_task_(d, j);
	rusk_task *t = &rb->t[k];
	if (known_no_room(a, j, t)) {
		put_aside(a, j, t, false);
		return STEP_ASIDE;
	}
	if (*used + t->rus > rb->rcap) {
		size_t cap = rb->rcap ? rb->rcap : 256;
		while (cap < *used + t->rus)
			cap *= 2;
		uint32_t *p = realloc(rb->rus, cap * sizeof *p);
		if (p == NULL) {
			rusk_store32(&d->fail, 1, RUSK_RELAXED);
			put_aside(a, j, t, false);
			return STEP_ASIDE;
		}
		rb->rus = p;
		rb->rcap = cap;
	}
	rusk_placement *pl = &rb->pl[k];
	int n = rusk_agent_decide_(a->ag, t, rb->rus + *used, pl);
	if (n == RUSK_EINVAL || n == RUSK_EINFEASIBLE) {
		rusk_dispatch_count_(a, pl);
		rusk_dispatch_refuse_(a, j, n, now_ns(d));
		return STEP_DONE;
	}
	if (n <= 0) {
		rusk_dispatch_count_(a, pl);
		if (n == RUSK_ENOMEM)
			rusk_store32(&d->fail, 1, RUSK_RELAXED);
		put_aside(a, j, t, n == 0); /* nothing suitable on the view: until the next sync */
		return STEP_ASIDE;
	}
	rb->j[k] = j;
	rb->t_deq[k] = t_deq;
	rb->it[k] = (rusk_remote_item){
	        .t = t, .rus = rb->rus + *used, .n = (uint32_t)n, .leases = j->l, .pl = pl};
	*used += (size_t)n;
	(*nb)++;
	return STEP_DONE;
}

static uint32_t agent_round_remote(rusk_dagent *a, uint64_t now)
{
	rusk_rbatch *rb = rbatch_get(a);
	if (rb == NULL) {
		rusk_store32(&a->d->fail, 1, RUSK_RELAXED);
		return agent_round(a, now); /* out of memory: one task at a time */
	}
	size_t retries = a->retry.n, nb = 0, used = 0;
	uint32_t done = 0;
	bool new_turn = false;
	while (done < a->d->p.batch) {
		rusk_dtask *j = round_next(a, now, &retries, &new_turn);
		if (j == NULL)
			break;
		int step = batchable(j) ? rbatch_add(a, rb, &nb, &used, j) : place_one(a, j);
		if (step != STEP_PARKED)
			done++;
		if (nb == a->rbatch) {
			rbatch_commit(a, rb, nb);
			nb = used = 0;
		}
	}
	rbatch_commit(a, rb, nb);
	return done;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Nothing to do now: poll the ring for spin_ns, then park until a submission, the view's
 * next sync, the first admission waiter's check, a cancellation, a stop (all wake it) or
 * SLICE_NS. The spin and the park are timed on CLOCK_MONOTONIC: the cluster's clock may be
 * an embedder's that moves only when it says (a spin on it never ended). */
static void agent_idle(rusk_dagent *a, rusk_view *v)
{
	rusk_dispatch *d = a->d;
	uint64_t t = now_ns(d), until = t + SLICE_NS;
	uint64_t due = rusk_dispatch_next_wake_(a), sync = rusk_view_next_sync_ns(v);
	uint64_t end = rusk_wheel_next(a->ends); /* with the lateness the wheel allows */
	until = due < until ? due : until;
	until = sync < until ? sync : until;
	until = end < until ? end : until;
	if (until <= t)
		return;
	uint64_t m0 = mono_ns();
	while (mono_ns() - m0 < d->p.spin_ns) {
		if (ck_ring_size(&a->in) > 0)
			return;
		rusk_spin_pause();
	}
	uint32_t seen = rusk_park_prepare(&a->park);
	/* E10: parked before the last look at the ring; producers wake only a parked agent. */
	rusk_store32(&a->parked, 1, RUSK_RELAXED);
	rusk_fence_full();
	/* A stop that may have finished the agent wakes it; one that has to wait for room
	 * (close with tasks held) does not: it parks like any dry agent, instead of polling
	 * until the next sync. */
	uint32_t stop = rusk_load32(&d->stop, RUSK_ACQUIRE);
	if (ck_ring_size(&a->in) == 0 && stop < 2 && (stop == 0 || a->held > 0) &&
	    rusk_load32(&a->cancels, RUSK_RELAXED) == a->cancels_seen)
		rusk_park_wait(&a->park, seen, m0 + (until - t));
	rusk_store32(&a->parked, 0, RUSK_RELAXED);
}

/* E6, the agents' side: once stop is seen and no submission is in flight, nothing more
 * reaches a ring (a submission that raised the count later sees the stop and is refused).
 * Without this an agent could take its ring for the last time while a submission that
 * had passed its stop check was still on its way there: accepted, and never accounted. */
static bool no_submission_in_flight(const rusk_dagent *a)
{
	rusk_fence_full(); /* the stop flag read before, the in-flight count after */
	return rusk_load32(&a->inflight, RUSK_ACQUIRE) == 0;
}

static bool agent_finished(rusk_dagent *a)
{
	uint32_t stop = rusk_load32(&a->d->stop, RUSK_ACQUIRE);
	if (stop >= 2)
		return true;
	/* In flight first, then the ring: the ring cannot fill again after both are seen. */
	return stop == 1 && no_submission_in_flight(a) && a->held == 0 && ck_ring_size(&a->in) == 0;
}

static void *agent_main(void *arg)
{
	rusk_dagent *a = arg;
	rusk_dispatch *d = a->d;
	rusk_thread_register();
	rusk_view *v = rusk_agent_view(a->ag);
	/* Batches over a remote master state (kernel/remote.h): 0 on the in-memory path. */
	a->rbatch = rusk_remote_batch_(d->c);
	if (a->rbatch > 1 && rusk_remote_defer_(d->c) != RUSK_OK)
		a->rbatch = 0; /* no connection: each call fails on its own, as without batches */
	for (;;) {
		if (rusk_load32(&d->stop, RUSK_ACQUIRE) >= 2)
			break;
		uint64_t now = now_ns(d);
		int synced = rusk_view_tick(v, now);
		if (synced < 0) {
			rusk_store32(&d->fail, 1, RUSK_RELAXED);
			break;
		}
		if (synced > 0)
			resume_aside(a);
		take_ring(a);
		sweep_cancelled(a, now);
		uint32_t done = RUSK_UNLIKELY(a->rbatch > 1) ? agent_round_remote(a, now)
		                                             : agent_round(a, now);
		/* What it holds and the room its view shows, for submitters balancing their
		 * load (rusk_dispatch_load): stored only when changed (a line its submitters
		 * read once per burst). */
		if (rusk_load64(&a->held_pub, RUSK_RELAXED) != a->held)
			rusk_store64(&a->held_pub, a->held, RUSK_RELAXED);
		uint64_t room = rusk_view_total_free_(v);
		if (rusk_load64(&a->room_pub, RUSK_RELAXED) != room)
			rusk_store64(&a->room_pub, room, RUSK_RELAXED);
		/* Its tasks that are due end here (RUs released, DONE): not on another core. */
		done += (uint32_t)rusk_wheel_turn(a->ends, now_ns(d), false);
		/* Over a remote with batches: this turn's releases go now, one pipeline per
		 * partition (kernel/remote.h B1). */
		if (RUSK_UNLIKELY(a->rbatch > 1))
			rusk_remote_flush_(d->c);
		if (done == 0) {
			if (agent_finished(a))
				break;
			agent_idle(a, v);
		}
	}
	rusk_view_stats_get(v, &a->vs);
	struct timespec cpu;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	a->cpu_s = (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9;
	/* Submissions that came too late to place end here too: wait for those still on
	 * their way to the ring (E6), then take it. */
	while (!no_submission_in_flight(a))
		rusk_dispatch_sleep_(1000);
	take_ring(a);
	rusk_dispatch_drain_(a);
	/* Its running tasks with a timed end end now (DONE), as at any stop. */
	(void)rusk_wheel_turn(a->ends, now_ns(d), true);
	if (a->rbatch > 1) { /* kernel/remote.h B3: its last releases, then its buffers */
		rusk_remote_flush_(d->c);
		rbatch_free(a->rb);
		a->rb = NULL;
	}
	rusk_store32(&a->exited, 1, RUSK_RELEASE); /* rusk_dispatch_drained */
	rusk_thread_unregister();
	return NULL;
}

/* ---- the public API ------------------------------------------------------------------------ */

RUSK_EXPORT void rusk_dispatch_params_init(rusk_dispatch_params *p, uint32_t agents)
{
	if (p == NULL)
		return;
	memset(p, 0, sizeof *p);
	p->agents = agents;
	p->batch = 100;
	p->ring = 1u << 16;
	p->spin_ns = 2000;
	p->max_tasks = DEFAULT_MAX_TASKS;
	p->reserve_syncs = 2;
	p->quota_period_ns = 10000000; /* 10 ms */
}

static int bad(char *err, size_t len, const char *msg)
{
	if (err != NULL && len > 0)
		snprintf(err, len, "%s", msg);
	return RUSK_EINVAL;
}

static int check_params(const rusk_dispatch_params *p, char *err, size_t len)
{
	if (p->agents == 0 || p->agents > 4096)
		return bad(err, len, "agents: not in 1..4096");
	if (p->batch == 0)
		return bad(err, len, "batch: 0");
	if (p->ring < 2 || (p->ring & (p->ring - 1)) != 0 || p->ring > (1u << 30))
		return bad(err, len, "ring: not a power of two in 2..2^30");
	if (p->max_tasks == 0 || p->max_tasks >= (1ull << 32))
		return bad(err, len, "max_tasks: not in 1..2^32-1");
	if (p->n_groups > RUSK_QUOTA_MAX_GROUPS)
		return bad(err, len, "n_groups: above RUSK_QUOTA_MAX_GROUPS (64)");
	return RUSK_OK;
}

/* Agent i: its kernel agent, rings and victim stream. */
static int make_agent(rusk_dispatch *d, uint32_t i, char *err, size_t len)
{
	rusk_dagent *a = &d->ag[i];
	a->d = d;
	a->index = i;
	for (int k = 0; k < 5; k++)
		a->room[k] = UINT32_MAX;
	rusk_agent_params ap;
	if (d->p.agent_params != NULL) {
		d->p.agent_params(d->p.arg, i, &ap);
	} else {
		/* DiffSync over every partition with ParSync's 500 ms gap (SameSync where there
		 * are fewer partitions than agents), starting now. */
		rusk_sync_params sp;
		rusk_sync_params_init(&sp, rusk_cluster_partitions(d->c), d->p.agents);
		sp.start_ns = now_ns(d);
		sp.seed = d->p.seed;
		rusk_agent_params_init(&ap, &sp, i);
		ap.seed = d->p.seed + i;
	}
	a->max_retries = ap.max_retries;
	int rc = rusk_agent_create(d->c, &ap, &a->ag, err, len);
	if (rc != RUSK_OK)
		return rc;
	a->in_buf = calloc(d->p.ring, sizeof *a->in_buf);
	a->ends = rusk_wheel_new(now_ns(d), wheel_end, d);
	if (a->in_buf == NULL || a->ends == NULL)
		return RUSK_ENOMEM;
	ck_ring_init(&a->in, d->p.ring);
	rusk_park_init(&a->park);
	rusk_rng_seed(&a->prng, d->p.seed, 0x76696374ull + i); /* "vict" */
	return RUSK_OK;
}

RUSK_EXPORT int rusk_dispatch_create(rusk_cluster *c, const rusk_dispatch_params *p,
                                     rusk_dispatch **out, char *err, size_t errlen)
{
	if (c == NULL || p == NULL || out == NULL)
		return bad(err, errlen, "cluster, params and out must not be NULL");
	int rc = check_params(p, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	rusk_dispatch *d = calloc(1, sizeof *d);
	if (d == NULL) {
		bad(err, errlen, "out of memory for the dispatcher");
		return RUSK_ENOMEM;
	}
	d->c = c;
	d->p = *p;
	d->cap = p->max_tasks;
	if (rusk_cluster_attach_loop_(c, rusk_dispatch_revoked, d) != RUSK_OK) {
		free(d);
		bad(err, errlen, "the cluster has a dispatcher already (one per cluster)");
		return RUSK_EBUSY;
	}
	d->attached = true;
	d->n_chunks = (d->cap + RUSK_JOB_CHUNK - 1) / RUSK_JOB_CHUNK;
	d->chunks = calloc(d->n_chunks, sizeof *d->chunks);
	d->ag = aligned_alloc(RUSK_CACHELINE, p->agents * sizeof *d->ag);
	if (d->ag != NULL)
		memset(d->ag, 0, p->agents * sizeof *d->ag);
	if (d->chunks == NULL || d->ag == NULL) {
		rusk_dispatch_destroy(d);
		bad(err, errlen, "out of memory for the dispatcher's task table and agents");
		return RUSK_ENOMEM;
	}
	for (uint32_t i = 0; i < p->agents; i++)
		if ((rc = make_agent(d, i, err, errlen)) != RUSK_OK) {
			if (rc == RUSK_ENOMEM)
				bad(err, errlen, "out of memory for the dispatcher's agents");
			rusk_dispatch_destroy(d);
			return rc;
		}
	if (p->n_groups > 0 && (rc = rusk_dquota_create_(d, err, errlen)) != RUSK_OK) {
		if (rc == RUSK_ENOMEM)
			bad(err, errlen, "out of memory for the dispatcher's quota groups");
		rusk_dispatch_destroy(d);
		return rc;
	}
	*out = d;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_dispatch_destroy(rusk_dispatch *d)
{
	if (d == NULL)
		return;
	if (d->started)
		rusk_dispatch_stop(d, false);
	/* Tasks still running until completed give their RUs back to the cluster, which
	 * outlives d (nobody can complete them after this): DONE on this thread. Only the
	 * slots the run used are looked at. */
	uint64_t used = d->chunks != NULL ? rusk_load64(&d->bump, RUSK_ACQUIRE) : 0;
	for (uint64_t k = 0; k < used && k < d->cap; k++) {
		rusk_dtask *j = rusk_dispatch_slot_(d, k);
		uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE);
		if (rusk_js_state(st) == RUSK_JS_RUNNING)
			rusk_dispatch_end_(d, j, rusk_js_key(st), now_ns(d));
	}
	for (uint32_t i = 0; d->ag != NULL && i < d->p.agents; i++) {
		rusk_dagent *a = &d->ag[i];
		if (!d->stopped && a->in_buf != NULL)
			take_ring(a); /* never started nor stopped: its ring may hold tasks */
		rusk_dispatch_drain_(a);
		if (a->ag != NULL)
			rusk_agent_destroy(a->ag);
		free(a->in_buf);
		rusk_wheel_free(a->ends);
	}
	for (uint64_t k = 0; k < used && k < d->cap; k++) {
		rusk_dtask *j = rusk_dispatch_slot_(d, k);
		free(j->lh); /* E12: each slot's array, then the retired ones */
	}
	/* Chunks exist only below the bump (E8): free(NULL) on the other 2^20 entries of a
	 * 2^32-slot table cost TSan 2.5 s. */
	uint64_t made = (used + RUSK_JOB_CHUNK - 1) / RUSK_JOB_CHUNK;
	for (uint64_t i = 0; d->chunks != NULL && i < made && i < d->n_chunks; i++)
		free(d->chunks[i]);
	rusk_dquota_destroy_(d); /* after the drains above: they return usage */
	if (d->attached)
		rusk_cluster_detach_loop_(d->c, d);
	free(d->ag);
	for (rusk_dleases *r = d->retired, *next; r != NULL; r = next) {
		next = r->next;
		free(r);
	}
	free(d->chunks);
	free(d);
}

/* One submission to agent a, in flight (E6): its task on a's ring, or REJECTED. */
static int submit_one(rusk_dispatch *d, rusk_dagent *a, const rusk_dtask_spec *s, uint64_t now,
                      rusk_dtask_id *out)
{
	int rc = RUSK_ESTOPPED;
	rusk_dtask *j = NULL;
	if (rusk_load32(&d->stop, RUSK_ACQUIRE) == 0 &&
	    (j = rusk_dispatch_new_task_(d, s, a->index, now, &rc)) != NULL) {
		uint64_t id = j->id;
		TSAN_RELEASE(j); /* E3 */
		if (ck_ring_enqueue_mpsc(&a->in, a->in_buf, j)) {
			if (out != NULL)
				*out = id; /* read before the enqueue: j may be over already */
			return RUSK_OK;
		}
		rc = RUSK_EFULL;
	}
	rusk_faa64(&d->refused_at_submit, 1, RUSK_RELAXED);
	rusk_dispatch_reject_(d, a->index, j, s, rc, now);
	return rc;
}

/* E6 around submissions to a: in flight before looking at stop (rusk_dispatch_stop sets
 * stop, then waits for none in flight, so every submission it does not see refused
 * reaches a ring before the agents' last look at it; the locked add is a full barrier),
 * and E10 after: the locked decrement orders the enqueues before the parked load. */
static inline void submit_begin(rusk_dagent *a)
{
	rusk_faa32(&a->inflight, 1, RUSK_ACQ_REL);
	rusk_fence_atomic_load();
}

static inline void submit_end(rusk_dagent *a, bool queued)
{
	rusk_faa32(&a->inflight, (uint32_t)-1, RUSK_ACQ_REL);
	rusk_fence_atomic_load();
	if (queued && rusk_load32(&a->parked, RUSK_RELAXED))
		rusk_park_wake(&a->park);
}

static inline bool spec_ok(const rusk_dispatch *d, const rusk_dtask_spec *s)
{
	return s != NULL && s->commit <= RUSK_COMMIT_INCREMENTAL &&
	       s->group <= (d->q != NULL ? d->p.n_groups : 0);
}

RUSK_EXPORT int rusk_dispatch_submit(rusk_dispatch *d, uint32_t agent, const rusk_dtask_spec *s,
                                     rusk_dtask_id *out)
{
	if (d == NULL || !spec_ok(d, s) || (agent != UINT32_MAX && agent >= d->p.agents))
		return RUSK_EINVAL;
	if (agent == UINT32_MAX) /* a round robin per submitting thread: no shared word */
		agent = next_agent++ % d->p.agents;
	uint64_t now = s->submit_ns ? s->submit_ns : now_ns(d);
	rusk_dagent *a = &d->ag[agent];
	submit_begin(a);
	int rc = submit_one(d, a, s, now, out);
	submit_end(a, rc == RUSK_OK);
	return rc;
}

RUSK_EXPORT int rusk_dispatch_submit_batch(rusk_dispatch *d, uint32_t agent,
                                           const rusk_dtask_spec *s, size_t n, rusk_dtask_id *out,
                                           int *rcs, size_t *accepted)
{
	if (accepted != NULL)
		*accepted = 0;
	if (d == NULL || (s == NULL && n > 0) || (agent != UINT32_MAX && agent >= d->p.agents))
		return RUSK_EINVAL;
	for (size_t k = 0; k < n; k++)
		if (!spec_ok(d, &s[k]))
			return RUSK_EINVAL;
	if (agent == UINT32_MAX)
		agent = next_agent++ % d->p.agents;
	rusk_dagent *a = &d->ag[agent];
	uint64_t clock = 0; /* read once, if a spec leaves its time to the clock */
	size_t ok = 0;
	int first = RUSK_OK;
	submit_begin(a);
	for (size_t k = 0; k < n; k++) {
		if (s[k].submit_ns == 0 && clock == 0)
			clock = now_ns(d);
		int rc = submit_one(d, a, &s[k], s[k].submit_ns ? s[k].submit_ns : clock,
		                    out != NULL ? &out[k] : NULL);
		if (out != NULL && rc != RUSK_OK)
			out[k] = 0;
		if (rcs != NULL)
			rcs[k] = rc;
		ok += rc == RUSK_OK;
		if (rc != RUSK_OK && first == RUSK_OK)
			first = rc;
	}
	submit_end(a, ok > 0);
	if (accepted != NULL)
		*accepted = ok;
	return first;
}

/* Hands a task taken back from its tenure to an agent's queue (E3, E6); false when the
 * dispatcher is stopping (the caller rejects it). */
static bool requeue(rusk_dispatch *d, rusk_dtask *j)
{
	uint32_t i = next_agent++ % d->p.agents;
	rusk_dagent *a = &d->ag[i];
	rusk_faa32(&a->inflight, 1, RUSK_ACQ_REL);
	rusk_fence_atomic_load();
	bool ok = false;
	rusk_store32(&j->agent, i, RUSK_RELAXED); /* E9 */
	while (!ok && rusk_load32(&d->stop, RUSK_ACQUIRE) == 0) {
		TSAN_RELEASE(j);
		if ((ok = ck_ring_enqueue_mpsc(&a->in, a->in_buf, j)))
			rusk_park_wake(&a->park); /* rare: no E10 test needed */
		else
			rusk_dispatch_sleep_(1000); /* the agent drains its queue */
	}
	rusk_faa32(&a->inflight, (uint32_t)-1, RUSK_RELEASE);
	return ok;
}

RUSK_EXPORT void rusk_dispatch_revoked(uint64_t task, rusk_lease lease, void *arg)
{
	rusk_dispatch *d = arg;
	uint32_t use;
	rusk_dtask *j = d != NULL ? rusk_dispatch_lookup_(d, task, &use) : NULL;
	if (j == NULL)
		return; /* not a handle of d: the embedder's own task, or nothing */
	uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE); /* E1 */
	if (rusk_js_use(st) != use)
		return; /* its slot serves another task now */
	uint32_t state = rusk_js_state(st);
	if (state == RUSK_JS_QUEUED || state == RUSK_JS_CANCEL || state == RUSK_JS_PLACING) {
		/* E7: its agent holds it (a partial placement, or place() has just returned
		 * the lease): flag it, then look again, as the agent looks at the flag after
		 * it marks the task RUNNING; at least one of the two sees the other. */
		rusk_store32(&j->lost, 1, RUSK_RELEASE);
		rusk_fence_full();
		st = rusk_load64(&j->st, RUSK_ACQUIRE);
		if (rusk_js_state(st) != RUSK_JS_RUNNING || rusk_js_use(st) != use)
			return; /* the agent restarts it when it next takes it */
	}
	/* A lease of an earlier placement (a machine's RUs are reported one by one, and the
	 * task may have been placed again in between) is not this placement's. */
	if (rusk_js_state(st) != RUSK_JS_RUNNING || !holds(j, lease))
		return;
	take_back(d, j, st, NULL);
}

RUSK_EXPORT int rusk_dispatch_complete(rusk_dispatch *d, rusk_dtask_id task)
{
	uint32_t use;
	rusk_dtask *j = d != NULL ? rusk_dispatch_lookup_(d, task, &use) : NULL;
	if (j == NULL)
		return RUSK_EINVAL; /* never a handle of d */
	uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE);
	for (;;) {
		if (rusk_js_use(st) != use)
			return RUSK_ESTALE; /* ended, and its slot serves another task */
		switch (rusk_js_state(st)) {
		case RUSK_JS_DONE:
		case RUSK_JS_CANCEL: return RUSK_ESTALE;
		case RUSK_JS_QUEUED:
		case RUSK_JS_PLACING: return RUSK_ENOTRUNNING;
		default: break;
		}
		if (rusk_dispatch_end_(d, j, rusk_js_key(st), now_ns(d)))
			return RUSK_OK;
		st = rusk_load64(&j->st, RUSK_ACQUIRE); /* preempted or ended meanwhile */
	}
}

RUSK_EXPORT int rusk_dispatch_cancel(rusk_dispatch *d, rusk_dtask_id task)
{
	uint32_t use;
	rusk_dtask *j = d != NULL ? rusk_dispatch_lookup_(d, task, &use) : NULL;
	if (j == NULL)
		return RUSK_EINVAL;
	uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE);
	for (;;) {
		if (rusk_js_use(st) != use)
			return RUSK_ESTALE;
		switch (rusk_js_state(st)) {
		case RUSK_JS_DONE:
		case RUSK_JS_CANCEL: return RUSK_ESTALE;
		case RUSK_JS_RUNNING:
		case RUSK_JS_PLACING: return RUSK_ERUNNING;
		default: break;
		}
		/* E2: only over QUEUED, so a placement's CAS to PLACING decides against it. */
		if (rusk_cas64(&j->st, &st, rusk_js_make(rusk_js_key(st), RUSK_JS_CANCEL),
		               RUSK_ACQ_REL))
			break;
	}
	/* E9: the agent holding it sweeps its queues once it sees the count; one that is not
	 * its holder any more (the task moved on) sweeps in vain, and the holder finds the
	 * task cancelled when it next takes it. */
	rusk_dagent *a = &d->ag[rusk_load32(&j->agent, RUSK_RELAXED) % d->p.agents];
	rusk_faa32(&a->cancels, 1, RUSK_RELEASE);
	rusk_park_wake(&a->park);
	return RUSK_OK;
}

static void wake_all(rusk_dispatch *d)
{
	for (uint32_t i = 0; i < d->p.agents; i++)
		rusk_park_wake(&d->ag[i].park);
}

RUSK_EXPORT int rusk_dispatch_start(rusk_dispatch *d)
{
	if (d == NULL || d->started || d->stopped)
		return RUSK_EINVAL; /* once; never after a stop (nothing would join the threads) */
	d->started = true;
	int err = 0;
	for (uint32_t i = 0; err == 0 && i < d->p.agents; i++) {
		err = pthread_create(&d->ag[i].tid, NULL, agent_main, &d->ag[i]);
		d->ag[i].started = err == 0;
	}
	if (err == 0 && rusk_dquota_start_(d) != RUSK_OK)
		err = 1;
	if (err != 0) {
		rusk_dispatch_stop(d, false);
		return RUSK_ENOMEM;
	}
	return RUSK_OK;
}

RUSK_EXPORT void rusk_dispatch_close(rusk_dispatch *d)
{
	uint32_t zero = 0;
	if (d == NULL)
		return;
	rusk_cas32(&d->stop, &zero, 1, RUSK_ACQ_REL); /* E5: a stop of 2 stays */
	rusk_fence_full();                            /* E6: before the in-flight reads */
	wake_all(d);                                  /* an idle agent sees the end at once */
}

RUSK_EXPORT bool rusk_dispatch_drained(const rusk_dispatch *d)
{
	if (d == NULL)
		return false;
	if (rusk_load32(&d->stop, RUSK_ACQUIRE) == 0)
		return false;
	for (uint32_t i = 0; i < d->p.agents; i++)
		if (rusk_load32(&d->ag[i].exited, RUSK_ACQUIRE) == 0 && d->ag[i].started)
			return false;
	return true;
}

RUSK_EXPORT void rusk_dispatch_stop(rusk_dispatch *d, bool drain)
{
	if (d == NULL || d->stopped)
		return;
	rusk_dispatch_close(d);
	if (!drain)
		rusk_store32(&d->stop, 2, RUSK_RELEASE);
	rusk_fence_full(); /* E6: stop before the in-flight counts are read */
	for (uint32_t i = 0; i < d->p.agents; i++)
		while (rusk_load32(&d->ag[i].inflight, RUSK_ACQUIRE) != 0)
			rusk_dispatch_sleep_(1000);
	wake_all(d);
	for (uint32_t i = 0; i < d->p.agents; i++)
		if (d->ag[i].started) {
			pthread_join(d->ag[i].tid, NULL);
		} else { /* never started: what was submitted ends here (ESTOPPED) */
			take_ring(&d->ag[i]);
			rusk_dispatch_drain_(&d->ag[i]);
		}
	/* The coordinator last: a drain's parked tasks wait for its rounds. */
	rusk_dquota_stop_(d);
	d->stopped = true;
}

static void sum_stats(const rusk_dispatch *d, rusk_dispatch_stats *o, rusk_hist *delay)
{
	for (uint32_t i = 0; i < d->p.agents; i++) {
		const rusk_dagent *a = &d->ag[i];
		const rusk_dagent_stats *s = &a->st;
		o->placed += rusk_load64(&s->placed, RUSK_RELAXED);
		o->preempted += rusk_load64(&s->preempted, RUSK_RELAXED);
		o->requeued += rusk_load64(&s->requeued, RUSK_RELAXED);
		o->attempts += rusk_load64(&s->attempts, RUSK_RELAXED);
		o->commits_lost += rusk_load64(&s->conflicts, RUSK_RELAXED);
		o->admission_waited += rusk_load64(&s->adm_waited, RUSK_RELAXED);
		o->aside += rusk_load64(&s->aside, RUSK_RELAXED);
		o->reservations += rusk_load64(&s->reservations, RUSK_RELAXED);
		o->given_back += rusk_load64(&s->given_back, RUSK_RELAXED);
		o->queued_end += rusk_load64(&a->n_left, RUSK_RELAXED);
		o->submitted += rusk_load64(&s->received, RUSK_RELAXED) + ck_ring_size(&a->in);
		o->released += rusk_load64(&s->released, RUSK_RELAXED);
		/* Written once by its thread before `exited` (release): read only after it
		 * (acquire), so a call during the run (any thread) reads no torn double. */
		if (rusk_load32((uint32_t *)&a->exited, RUSK_ACQUIRE))
			o->agent_cpu_s += a->cpu_s;
		rusk_hist_merge(delay, &s->delay_hi);
		rusk_hist_merge(delay, &s->delay_lo);
	}
}

RUSK_EXPORT void rusk_dispatch_stats_get(const rusk_dispatch *d, rusk_dispatch_stats *out)
{
	if (out == NULL)
		return;
	memset(out, 0, sizeof *out);
	rusk_hist *delay = calloc(1, sizeof *delay);
	if (d == NULL || delay == NULL) {
		free(delay);
		return;
	}
	sum_stats(d, out, delay);
	out->submitted += rusk_load64(&d->refused_at_submit, RUSK_RELAXED);
	out->rejected = rusk_load64(&d->rejected, RUSK_RELAXED);
	out->cancelled = rusk_load64(&d->cancelled, RUSK_RELAXED);

	out->revoked = rusk_load64(&d->revoked, RUSK_RELAXED);
	uint64_t in_system = out->placed - out->preempted - out->revoked + out->rejected;
	out->queued = out->submitted > in_system ? out->submitted - in_system : 0;
	out->delay_p50_ns = rusk_hist_quantile(delay, 0.5);
	out->delay_p99_ns = rusk_hist_quantile(delay, 0.99);
	out->delay_p999_ns = rusk_hist_quantile(delay, 0.999);
	out->delay_max_ns = delay->max;
	out->delay_mean_ns = rusk_hist_mean(delay);
	free(delay);
}

RUSK_EXPORT int rusk_dispatch_check(const rusk_dispatch *d, char *err, size_t errlen)
{
	if (d == NULL)
		return bad(err, errlen, "dispatcher is NULL");
	rusk_dispatch_stats s;
	rusk_dispatch_stats_get(d, &s);
	char msg[256];
	if (s.submitted != s.placed - s.preempted - s.revoked + s.rejected + s.queued_end) {
		snprintf(msg, sizeof msg,
		         "submitted %llu != placed %llu - preempted %llu - revoked %llu + rejected "
		         "%llu + queued %llu",
		         (unsigned long long)s.submitted, (unsigned long long)s.placed,
		         (unsigned long long)s.preempted, (unsigned long long)s.revoked,
		         (unsigned long long)s.rejected, (unsigned long long)s.queued_end);
		return bad(err, errlen, msg);
	}
	return RUSK_OK;
}

RUSK_EXPORT int rusk_dispatch_load(const rusk_dispatch *d, uint32_t i,
                                   rusk_dispatch_agent_load *out)
{
	if (d == NULL || i >= d->p.agents || out == NULL)
		return RUSK_EINVAL;
	const rusk_dagent *a = &d->ag[i];
	out->queued = ck_ring_size(&a->in) + rusk_load64(&a->held_pub, RUSK_RELAXED);
	out->view_free_rus = rusk_load64(&a->room_pub, RUSK_RELAXED);
	return RUSK_OK;
}

RUSK_EXPORT rusk_agent *rusk_dispatch_agent(rusk_dispatch *d, uint32_t i)
{
	return d != NULL && i < d->p.agents ? d->ag[i].ag : NULL;
}
