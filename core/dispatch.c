/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher (rusk/dispatch.h): queues, retries, admission waits, priorities,
 * preemption and completions around the agents, so that an embedder submits tasks and
 * receives events instead of writing the scheduling loop (ParSync §4.3's agent loop,
 * Tarcil §4 admission and §5.3 priorities). The steps are in dispatch_impl.h, with the
 * task life and the table of ordering edges E1-E5; this file adds the threads.
 *
 * Agent thread: ticks its view, moves its ring into its local queues (only as far as
 * their reserved room goes: a task stays in the ring rather than be lost to an allocation
 * failure), takes a batch (high priority, retries, due admission waiters, the rest),
 * places each task; a task given back keeps its submission time on the retry list; a
 * high-priority one may preempt. When the view has no room for what failed last ("dry"),
 * only a sync or a preemption can change that, so until the next sync the agent serves
 * only its high-priority queue (a saturated run re-queued hundreds of millions of times
 * without this). Idle: spins spin_ns on its ring, then parks (park.h).
 *
 * Queues. Per round an agent serves high-priority tasks first (they bypass everything
 * queued, Tarcil §5.3), then its retry list (tasks given back after conflicts, with their
 * submission time), then the admission waiters that are due, then the normal queue. A
 * task the admission check tells to wait goes to a min-heap by its next check time; it is
 * checked again then, and admitted at the latest when it has waited the bucket's
 * mu + 2 sigma (rusk/admit.h).
 *
 * Preemption. A high-priority task that could not be placed, on a view with no room for
 * it, samples RUs of the master array; an RU held by a running normal task makes that
 * task a victim: a CAS on its state word ends its tenure (the completer's CAS for the
 * same tenure then fails), its RUs are released and marked free in the preempting agent's
 * view, and it goes to the front of that agent's retry list, counted, and PREEMPTED is
 * delivered. Its re-placement delay counts from the preemption.
 *
 * Completer thread: core/completer.c.
 *
 * Invariants: (1) a job is in at most one place: a ring, one local queue, RUNNING, or
 * free; (2) every job submitted is accounted once as placed-and-running, queued, rejected
 * or ended; (3) a slot is reused only after its DONE or REJECTED event returned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler.h"
#include "dispatch_impl.h"
#include "internal.h"

#define SLICE_NS         20000000ull /* the longest park without looking at the stop flag */
#define DEFAULT_MAX_JOBS (1u << 20)

static inline uint64_t now_ns(const rusk_dispatch *d)
{
	return rusk_disp_now(d);
}

static void emit(rusk_dispatch *d, rusk_dispatch_event *ev)
{
	if (d->p.on_event != NULL)
		d->p.on_event(d->p.arg, ev);
}

/* ---- job slots ------------------------------------------------------------------------ */

/* A free slot, *fresh when never used (its memory is still zero, and not even read yet:
 * reading a fresh calloc page first maps the zero page, and the write after it then costs
 * a copy-on-write fault with a TLB shootdown of every core, 17% of a 1M tasks/s run). */
static rusk_dtask *slot_get(rusk_dispatch *d, bool *fresh)
{
	uint64_t b = rusk_load64(&d->bump, RUSK_RELAXED);
	*fresh = true;
	while (b < d->cap)
		if (rusk_cas64(&d->bump, &b, b + 1, RUSK_RELAXED))
			return &d->jobs[b];
	rusk_dtask *j;
	*fresh = false;
	if (ck_ring_dequeue_mpmc(&d->free_r, d->free_buf, &j)) {
		TSAN_ACQUIRE(j); /* pairs with slot_put's release */
		return j;
	}
	return NULL;
}

/* Invariant 3: called after the job's last event. */
static void slot_put(rusk_dispatch *d, rusk_dtask *j)
{
	if (j->l != j->l_in)
		free(j->l);
	j->l = NULL;
	TSAN_RELEASE(j);
	/* The free ring holds every slot: it cannot be full. */
	(void)ck_ring_enqueue_mpmc(&d->free_r, d->free_buf, j);
}

/* A vector task is placed whole on one machine (rusk/vec.h); others as the spec says. */
static inline uint8_t spec_place(const rusk_dtask_spec *s)
{
	return rusk_vec_any(&s->vec) ? RUSK_PLACE_MACHINE : s->placement;
}

rusk_dtask *rusk_disp_job(rusk_dispatch *d, const rusk_dtask_spec *s, uint64_t now, int *rc)
{
	rusk_task t = {.id = 1,
	               .rus = s->rus,
	               .gang = d->p.gang || rusk_vec_any(&s->vec),
	               .placement = spec_place(s),
	               .priority = s->priority,
	               .profile = s->profile,
	               .preferred = s->preferred,
	               .n_preferred = s->n_preferred,
	               .vec = s->vec};
	if ((*rc = rusk_task_check(d->c, &t, NULL, 0)) != RUSK_OK)
		return NULL;
	bool fresh;
	rusk_dtask *j = slot_get(d, &fresh);
	if (j == NULL) {
		*rc = RUSK_EAGAIN;
		return NULL;
	}
	/* Tenures grow across reuses (E2): a stale completion entry never matches. */
	uint64_t tenure = fresh ? 1 : (rusk_load64(&j->st, RUSK_RELAXED) >> 2) + 1;
	uint32_t slot = (uint32_t)(j - d->jobs);
	rusk_lease *l = j->l_in;
	if (s->rus > RUSK_JOB_INLINE_LEASES && (l = calloc(s->rus, sizeof *l)) == NULL) {
		slot_put(d, j);
		*rc = RUSK_ENOMEM;
		return NULL;
	}
	/* The kernel id names the slot and its use: id - 1 = slot + uses * cap. */
	uint64_t uses = fresh ? 0 : (j->id - 1) / d->cap + 1;
	memset(j, 0, offsetof(rusk_dtask, st));
	j->id = slot + 1 + uses * d->cap;
	j->submit_ns = s->submit_ns ? s->submit_ns : now;
	j->dur_ns = s->run_ns;
	j->end_ns = j->wait_from_ns = j->ready_ns = j->requeue_ns = 0;
	j->l = l;
	j->pref = s->preferred;
	j->n_pref = s->n_preferred;
	j->user = s->user;
	j->prof = s->profile;
	j->vec = s->vec;
	j->place = t.placement;
	j->rus = s->rus;
	j->placed = 0;
	j->slot = slot;
	j->prio = s->priority;
	j->dequeued = j->admitted = false;
	rusk_store32(&j->lost, 0, RUSK_RELAXED);
	rusk_store64(&j->st, tenure << 2 | RUSK_JS_QUEUED, RUSK_RELAXED);
	*rc = RUSK_OK;
	return j;
}

void rusk_disp_reject(rusk_dispatch *d, uint32_t agent, rusk_dtask *j, const rusk_dtask_spec *s,
                      int err, uint64_t now)
{
	rusk_dispatch_event ev = {.kind = RUSK_EV_REJECTED,
	                          .agent = agent,
	                          .error = err,
	                          .job = j,
	                          .id = j ? j->id : 0,
	                          .user = j ? j->user : s->user,
	                          .time_ns = now};
	rusk_faa64(&d->rejected, 1, RUSK_RELAXED); /* any submitting thread */
	emit(d, &ev);
	if (j != NULL) {
		rusk_store64(&j->st, (rusk_load64(&j->st, RUSK_RELAXED) >> 2) << 2 | RUSK_JS_DONE,
		             RUSK_RELAXED);
		slot_put(d, j);
	}
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
	/* Room was reserved (rusk_disp_reserve): every queue holds all of the agent's jobs. */
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

bool rusk_disp_reserve(rusk_dagent *a, size_t more)
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
	return jobq_room(&a->hi, n) && jobq_room(&a->retry, n) && jobq_room(&a->lo, n);
}

void rusk_disp_enqueue(rusk_dagent *a, rusk_dtask *j)
{
	jobq_push(j->prio > 0 ? &a->hi : &a->lo, j, false);
	a->held++;
}

void rusk_disp_retry(rusk_dagent *a, rusk_dtask *j)
{
	jobq_push(j->prio > 0 ? &a->hi : &a->retry, j, false);
	a->held++;
}

void rusk_disp_gave_back(rusk_dagent *a, rusk_dtask *j)
{
	rusk_disp_add(&a->st.requeued, 1);
	rusk_disp_retry(a, j);
}

rusk_dtask *rusk_disp_next(rusk_dagent *a, uint64_t now, size_t *retries)
{
	rusk_dtask *j = jobq_pop(&a->hi);
	if (j == NULL && *retries > 0 && a->retry.n > 0) {
		(*retries)--;
		j = jobq_pop(&a->retry);
	}
	if (j == NULL && a->wait.n > 0 && a->wait.a[0]->ready_ns <= now)
		j = rusk_waitq_pop(&a->wait);
	if (j == NULL)
		j = jobq_pop(&a->lo);
	if (j != NULL)
		a->held--;
	return j;
}

uint64_t rusk_disp_next_wake(const rusk_dagent *a)
{
	return a->wait.n > 0 ? a->wait.a[0]->ready_ns : UINT64_MAX;
}

static uint64_t jobq_fitting(const rusk_dtaskq *q, uint64_t free_rus)
{
	uint64_t n = 0;
	for (size_t k = 0; k < q->n; k++) {
		const rusk_dtask *j = q->a[(q->head + k) & (q->cap - 1)];
		n += (uint64_t)(j->rus - j->placed) <= free_rus;
	}
	return n;
}

uint64_t rusk_disp_placeable(const rusk_dagent *a, uint64_t free_rus)
{
	uint64_t n = jobq_fitting(&a->hi, free_rus) + jobq_fitting(&a->retry, free_rus) +
	             jobq_fitting(&a->lo, free_rus);
	for (size_t k = 0; k < a->wait.n; k++)
		n += (uint64_t)(a->wait.a[k]->rus - a->wait.a[k]->placed) <= free_rus;
	return n;
}

/* ---- the steps of a task ----------------------------------------------------------------- */

void rusk_disp_dequeued(rusk_dagent *a, rusk_dtask *j, uint64_t now)
{
	if (!j->dequeued) {
		j->dequeued = true;
		rusk_hist_record(&a->st.queue, now - j->submit_ns);
	}
}

rusk_task rusk_disp_task(const rusk_dispatch *d, const rusk_dtask *j)
{
	bool vec = rusk_vec_any(&j->vec);
	rusk_task t = {.id = j->id,
	               .rus = j->rus - j->placed,
	               .gang = d->p.gang || vec,
	               .placement = j->place,
	               .priority = j->prio,
	               .profile = j->prof,
	               .preferred = j->pref,
	               .n_preferred = j->n_pref,
	               .submit_ns = j->submit_ns,
	               .vec = j->vec};
	return t;
}

bool rusk_disp_admit(rusk_dagent *a, rusk_dtask *j, uint64_t now)
{
	const rusk_dispatch *d = a->d;
	if (d->p.admit == NULL || j->admitted)
		return true;
	rusk_task t = rusk_disp_task(d, j);
	rusk_admit_decision dec;
	uint64_t waited = j->wait_from_ns ? now - j->wait_from_ns : 0;
	if (rusk_admit_check(d->p.admit, &t, d->p.quality, waited, &dec) != RUSK_OK ||
	    dec.verdict == RUSK_ADMIT_NOW) {
		j->admitted = true;
		if (j->wait_from_ns != 0) {
			rusk_hist_record(&a->st.admission, waited);
			rusk_disp_add(&a->st.adm_waited, 1);
			rusk_disp_add(&a->st.adm_bound, dec.reason == RUSK_ADMIT_BOUND);
		}
		return true;
	}
	if (j->wait_from_ns == 0) {
		j->wait_from_ns = now;
		rusk_dispatch_event ev = {.kind = RUSK_EV_WAITING,
		                          .agent = a->index,
		                          .job = j,
		                          .id = j->id,
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

void rusk_disp_count(rusk_dagent *a, const rusk_placement *pl)
{
	rusk_disp_add(&a->st.attempts, pl->attempts);
	rusk_disp_add(&a->st.conflicts, pl->commits_lost);
	rusk_disp_add(&a->st.rus_lost, pl->conflicts);
}

uint32_t rusk_disp_tenure(const rusk_dtask *j)
{
	return (uint32_t)(rusk_load64((uint64_t *)&j->st, RUSK_ACQUIRE) >> 2);
}

static void count_placement(rusk_disp_stats *s, const rusk_placement *pl, uint64_t t_deq,
                            uint64_t t_done)
{
	rusk_disp_add(&s->rus_placed, pl->placed);
	rusk_disp_add(&s->r_sum, pl->sample_size);
	if (pl->sample_size > s->r_max)
		rusk_store64(&s->r_max, pl->sample_size, RUSK_RELAXED);
	rusk_disp_add(&s->q_micro, (uint64_t)(pl->quality * 1e6));
	rusk_disp_add(&s->pref_tasks, pl->placed > 0 && pl->preferred == pl->placed);
	rusk_hist_record(&s->place, t_done - t_deq);
	rusk_hist_record(&s->sample, pl->sample_ns);
	rusk_hist_record(&s->commit, pl->commit_ns);
	rusk_hist_record(&s->stale, pl->staleness_ns);
}

bool rusk_disp_placed(rusk_dagent *a, rusk_dtask *j, const rusk_placement *pl, uint64_t t_deq,
                      uint64_t t_done)
{
	rusk_disp_stats *s = &a->st;
	j->placed += pl->placed;
	count_placement(s, pl, t_deq, t_done);
	if (j->placed < j->rus) {
		/* Incremental: it keeps what it won and waits for the rest. */
		jobq_push(&a->retry, j, false);
		a->held++;
		return false;
	}
	uint64_t from = j->requeue_ns ? j->requeue_ns : j->submit_ns;
	uint64_t delay = t_done - from;
	rusk_hist_record(j->prio > 0 ? &s->delay_hi : &s->delay_lo, delay);
	rusk_agent_observe_delay(a->ag, delay);
	rusk_disp_add(&s->placed, 1);
	rusk_disp_add(&s->qmode_tasks, pl->strategy == RUSK_STRATEGY_QUALITY);
	rusk_disp_add(&s->placed_hi, j->prio > 0);
	rusk_dispatch_event ev = {.kind = RUSK_EV_PLACED,
	                          .agent = a->index,
	                          .job = j,
	                          .id = j->id,
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
		rusk_disp_add(&s->tet_us, ev.run_ns / 1000);
	if (t_done > s->last_done_ns)
		rusk_store64(&s->last_done_ns, t_done, RUSK_RELAXED);
	/* Saturated: a run_ns near UINT64_MAX ("for ever") wrapped to an end in the past. */
	uint64_t end = !timed                                ? UINT64_MAX
	               : ev.run_ns < UINT64_MAX - 1 - t_done ? t_done + ev.run_ns
	                                                     : UINT64_MAX - 1;
	/* Atomic: a completer may still read the end of a preempted earlier tenure. */
	rusk_store64(&j->end_ns, end, RUSK_RELAXED);
	/* E1: the leases and end time above are visible to whoever acquires RUNNING. */
	uint64_t tenure = rusk_load64(&j->st, RUSK_RELAXED) >> 2;
	rusk_store64(&j->st, tenure << 2 | RUSK_JS_RUNNING, RUSK_RELEASE);
	return true;
}

static int release(rusk_dispatch *d, const rusk_dtask *j, size_t *rejected)
{
	/* Every agent has the same design (release under the cluster's lock for the lock
	 * baselines): agent 0's handle serves any thread. */
	return rusk_agent_release(d->ag[0].ag, j->id, j->l, j->placed, rejected);
}

void rusk_disp_refuse(rusk_dagent *a, rusk_dtask *j, int err, uint64_t now)
{
	if (j->placed > 0) {
		release(a->d, j, NULL);
		j->placed = 0;
	}
	rusk_disp_add(&a->st.refused, 1);
	rusk_disp_reject(a->d, a->index, j, NULL, err, now);
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

/* Takes victim vt's tenure (E2) if it runs at normal priority; true when taken. */
static bool take_victim(rusk_dtask *vt)
{
	uint64_t st = rusk_load64(&vt->st, RUSK_ACQUIRE); /* E1: its fields are ours to read */
	if ((st & 3) != RUSK_JS_RUNNING || vt->prio > 0)
		return false;
	return rusk_cas64(&vt->st, &st, ((st >> 2) + 1) << 2 | RUSK_JS_QUEUED, RUSK_ACQ_REL);
}

uint32_t rusk_disp_preempt(rusk_dagent *a, const rusk_dtask *j, uint64_t now)
{
	rusk_dispatch *d = a->d;
	uint32_t need = j->rus - j->placed, freed = 0, n_rus = rusk_cluster_rus(d->c);
	/* Preempt only where the agent knows of no room: a multi-RU choice can fail on a
	 * view with room (constraints, a stale partition), and evicting then would not make
	 * room where the agent looks. Victims must fit a's queues without allocating. A
	 * vector task never preempts: victims free RUs anywhere, not memory and GPUs on one
	 * machine that it could use. */
	if (rusk_vec_any(&j->vec) || view_has_room(a, need) || !rusk_disp_reserve(a, need))
		return 0;
	rusk_view *v = rusk_agent_view(a->ag);
	/* Victims are found where they hold RUs: a bounded sample of the master array, from a
	 * stream of the agent's own (deterministic in the simulator). */
	for (uint32_t probe = 0; probe < 64 * need && freed < need; probe++) {
		uint32_t ru = rusk_rng_below(&a->prng, n_rus);
		rusk_ru_info info;
		if (rusk_ru_state(d->c, ru, &info) != RUSK_OK || info.owner == 0 ||
		    info.owner == RUSK_OWNER_NONE || info.owner > RUSK_TASK_ID_MAX)
			continue;
		rusk_dtask *vt = &d->jobs[(info.owner - 1) % d->cap];
		if (!take_victim(vt))
			continue;
		release(d, vt, NULL);
		for (uint32_t k = 0; k < vt->placed; k++)
			rusk_view_mark_free(v, vt->l[k].ru);
		freed += vt->placed;
		vt->placed = 0;
		vt->requeue_ns = now;
		rusk_disp_add(&a->st.preempted, 1);
		rusk_dispatch_event ev = {.kind = RUSK_EV_PREEMPTED,
		                          .agent = a->index,
		                          .job = vt,
		                          .id = vt->id,
		                          .user = vt->user,
		                          .time_ns = now};
		emit(d, &ev);
		jobq_push(&a->retry, vt, true);
		a->held++;
	}
	if (freed > 0)
		rusk_disp_add(&a->st.preemptions, 1);
	return freed;
}

bool rusk_disp_end(rusk_dispatch *d, rusk_dtask *j, uint32_t tenure, uint64_t now)
{
	uint64_t st = (uint64_t)tenure << 2 | RUSK_JS_RUNNING;
	/* E2: pairs with rusk_disp_placed's release and a preemptor's CAS. */
	if (!rusk_cas64(&j->st, &st, (uint64_t)tenure << 2 | RUSK_JS_DONE, RUSK_ACQ_REL))
		return false;
	if (release(d, j, NULL) == RUSK_OK)
		rusk_faa64(&d->released, 1, RUSK_RELAXED); /* completer or embedder */
	rusk_dispatch_event ev = {
	        .kind = RUSK_EV_DONE, .job = j, .id = j->id, .user = j->user, .time_ns = now};
	emit(d, &ev);
	slot_put(d, j);
	return true;
}

void rusk_disp_drain(rusk_dagent *a)
{
	/* Whatever is still queued stays counted as queued; an incremental task that holds
	 * part of its RUs gives them back. */
	rusk_dtaskq *qs[] = {&a->hi, &a->retry, &a->lo};
	a->n_left = a->held;
	for (int i = 0; i < 3; i++)
		for (size_t k = 0; k < qs[i]->n; k++) {
			rusk_dtask *j = qs[i]->a[(qs[i]->head + k) & (qs[i]->cap - 1)];
			if (j->placed > 0 &&
			    (rusk_load64(&j->st, RUSK_RELAXED) & 3) != RUSK_JS_RUNNING) {
				release(a->d, j, NULL);
				j->placed = 0;
			}
		}
	free(a->hi.a);
	free(a->retry.a);
	free(a->lo.a);
	free(a->wait.a);
	memset(&a->hi, 0, sizeof a->hi);
	memset(&a->retry, 0, sizeof a->retry);
	memset(&a->lo, 0, sizeof a->lo);
	memset(&a->wait, 0, sizeof a->wait);
}

/* ---- the agent threads ------------------------------------------------------------------- */

enum { STEP_DONE, STEP_PARKED, STEP_DRY };

static void hand_over(rusk_dagent *a, rusk_dtask *j)
{
	if (rusk_load64(&j->end_ns, RUSK_RELAXED) == UINT64_MAX)
		return;  /* RUSK_RUN_UNTIL_COMPLETE: the embedder ends it */
	TSAN_RELEASE(j); /* E4 */
	for (unsigned spins = 0; !ck_ring_enqueue_spsc(&a->done, a->done_buf, j); spins++)
		if (spins > 16)
			rusk_disp_sleep(1000); /* the completer drains; leases are never dropped */
}

/* Moves a's ring into its local queues, as far as their room goes (invariant 1: a task
 * that finds no room stays in the ring, never dropped). */
static void take_ring(rusk_dagent *a)
{
	rusk_dtask *j;
	while (rusk_disp_reserve(a, 1)) {
		if (!ck_ring_dequeue_mpsc(&a->in, a->in_buf, &j))
			return;
		TSAN_ACQUIRE(j); /* E3 */
		rusk_disp_enqueue(a, j);
	}
	rusk_store32(&a->d->fail, 1, RUSK_RELAXED);
}

/*
 * Ends j's running tenure `st` because a lease of it was revoked (E2: the CAS decides
 * against the completer, a preemptor, or the other side of E7): its other RUs come back,
 * REVOKED is delivered, and it is queued again: on agent a's retry list when a is its
 * agent's own thread, else through an agent's submission queue. False if it lost the CAS.
 */
static bool requeue(rusk_dispatch *d, rusk_dtask *j);

static bool take_back(rusk_dispatch *d, rusk_dtask *j, uint64_t st, rusk_dagent *a)
{
	if (!rusk_cas64(&j->st, &st, ((st >> 2) + 1) << 2 | RUSK_JS_QUEUED, RUSK_ACQ_REL))
		return false;
	uint64_t now = now_ns(d);
	release(d, j, NULL); /* the revoked lease is refused, the others come back */
	j->placed = 0;
	j->requeue_ns = now;
	rusk_store32(&j->lost, 0, RUSK_RELAXED);
	rusk_faa64(&d->revoked, 1, RUSK_RELAXED);
	rusk_dispatch_event ev = {.kind = RUSK_EV_REVOKED,
	                          .error = RUSK_EOFFLINE,
	                          .job = j,
	                          .id = j->id,
	                          .user = j->user,
	                          .time_ns = now};
	emit(d, &ev);
	if (a != NULL) {
		jobq_push(&a->retry, j, true); /* room: it was just taken from a's queues */
		a->held++;
	} else if (!requeue(d, j)) {
		rusk_disp_reject(d, UINT32_MAX, j, NULL, RUSK_ESTOPPED, now);
	}
	return true;
}

/* Places j (taken from a's queues); what the loop should do next. */
static int place_one(rusk_dagent *a, rusk_dtask *j)
{
	rusk_dispatch *d = a->d;
	uint64_t t_deq = now_ns(d);
	rusk_disp_dequeued(a, j, t_deq);
	if (rusk_load32(&j->lost, RUSK_ACQUIRE) != 0) {
		/* Its machine failed under a partial placement: start again from nothing (a
		 * second failure meanwhile is covered by releasing every lease). */
		rusk_store32(&j->lost, 0, RUSK_RELAXED);
		if (j->placed > 0)
			release(d, j, NULL);
		j->placed = 0;
	}
	if (!rusk_disp_admit(a, j, t_deq))
		return STEP_PARKED;
	rusk_task t = rusk_disp_task(d, j);
	rusk_placement pl;
	int rc = rusk_agent_place(a->ag, &t, j->l + j->placed, &pl);
	if (rc == RUSK_EAGAIN && j->prio > 0 && rusk_disp_preempt(a, j, now_ns(d)) > 0) {
		rusk_disp_count(a, &pl);
		rc = rusk_agent_place(a->ag, &t, j->l + j->placed, &pl);
	}
	rusk_disp_count(a, &pl);
	if (rc == RUSK_EINVAL || rc == RUSK_EINFEASIBLE) {
		rusk_disp_refuse(a, j, rc, now_ns(d));
		return STEP_DONE;
	}
	if (rc != RUSK_OK) {
		rusk_disp_gave_back(a, j);
		if (rc == RUSK_ENOMEM)
			rusk_store32(&d->fail, 1, RUSK_RELAXED);
		/* Drew nothing (the view has no free RU), a multi-RU task did not get all it
		 * needs, or memory ran out: a retry before the next sync would find the same. A
		 * vector task that drew RUs failed on memory or GPUs, which the view does not
		 * hold: other tasks may still fit, so the agent goes on. */
		bool dry = pl.samples == 0 || (t.rus > 1 && !rusk_vec_any(&t.vec)) ||
		           rc == RUSK_ENOMEM;
		return dry ? STEP_DRY : STEP_DONE;
	}
	/* The cluster's clock: the call's own end reading saves one. */
	if (!rusk_disp_placed(a, j, &pl, t_deq, pl.end_ns))
		return STEP_DONE;
	/* E7: RUNNING is stored (release); a revocation that found it QUEUED flagged it. */
	rusk_fence_full();
	uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE);
	if (rusk_load32(&j->lost, RUSK_ACQUIRE) != 0 && (st & 3) == RUSK_JS_RUNNING &&
	    take_back(d, j, st, a))
		return STEP_DONE;
	hand_over(a, j);
	return STEP_DONE;
}

/* One round: up to `batch` tasks; a dry agent serves only its high-priority queue. */
static bool agent_round(rusk_dagent *a, uint64_t now, bool was_dry, uint32_t *done)
{
	size_t retries = a->retry.n;
	rusk_dtask *j;
	while (*done < a->d->p.batch) {
		if (was_dry) {
			if ((j = jobq_pop(&a->hi)) != NULL)
				a->held--;
		} else {
			j = rusk_disp_next(a, now, &retries);
		}
		if (j == NULL)
			break;
		int r = place_one(a, j);
		if (r == STEP_PARKED)
			continue;
		(*done)++;
		if (r == STEP_DRY)
			return true;
	}
	return false;
}

/* Nothing to do now: poll the ring for spin_ns, then park until a submission, the view's
 * next sync, the first admission waiter's check, a stop (all wake it) or SLICE_NS. */
static void agent_idle(rusk_dagent *a, rusk_view *v)
{
	rusk_dispatch *d = a->d;
	uint64_t t = now_ns(d), until = t + SLICE_NS;
	uint64_t due = rusk_disp_next_wake(a), sync = rusk_view_next_sync_ns(v);
	until = due < until ? due : until;
	until = sync < until ? sync : until;
	while (now_ns(d) - t < d->p.spin_ns) {
		if (ck_ring_size(&a->in) > 0 || until <= t)
			return;
		ck_pr_stall();
	}
	uint32_t seen = rusk_park_prepare(&a->park);
	/* A stop that may have finished the agent wakes it; one that has to wait for room
	 * (close with tasks held) does not: it parks like any dry agent, instead of polling
	 * until the next sync. */
	uint32_t stop = rusk_load32(&d->stop, RUSK_ACQUIRE);
	if (ck_ring_size(&a->in) > 0 || stop >= 2 || (stop == 1 && a->held == 0))
		return;
	/* Park deadlines are CLOCK_MONOTONIC; the cluster's clock may be another. */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t mono = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	rusk_park_wait(&a->park, seen, mono + (until - t));
}

/* E6, the agents' side: once stop is seen and no submission is in flight, nothing more
 * reaches a ring (a submission that raised the count later sees the stop and is refused).
 * Without this an agent could take its ring for the last time while a submission that
 * had passed its stop check was still on its way there: accepted, and never accounted. */
static bool no_submission_in_flight(const rusk_dispatch *d)
{
	rusk_fence_full(); /* the stop flag read before, the in-flight count after */
	return rusk_load32(&d->inflight, RUSK_ACQUIRE) == 0;
}

static bool agent_finished(rusk_dagent *a)
{
	uint32_t stop = rusk_load32(&a->d->stop, RUSK_ACQUIRE);
	if (stop >= 2)
		return true;
	/* In flight first, then the ring: the ring cannot fill again after both are seen. */
	return stop == 1 && no_submission_in_flight(a->d) && a->held == 0 &&
	       ck_ring_size(&a->in) == 0;
}

static void *agent_main(void *arg)
{
	rusk_dagent *a = arg;
	rusk_dispatch *d = a->d;
	rusk_thread_register();
	rusk_view *v = rusk_agent_view(a->ag);
	bool dry = false;
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
			dry = false;
		take_ring(a);
		uint32_t done = 0;
		bool was_dry = dry;
		dry = agent_round(a, now, was_dry, &done) || was_dry; /* until a sync */
		if (done == 0 || dry) {
			if (!dry && agent_finished(a))
				break;
			agent_idle(a, v);
		}
	}
	rusk_view_stats_get(v, &a->vs);
	struct timespec cpu;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	a->cpu_s = (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9;
	/* Submissions that came too late to place stay counted as queued: wait for those
	 * still on their way to the ring (E6), then take it. */
	while (!no_submission_in_flight(d))
		rusk_disp_sleep(1000);
	take_ring(a);
	rusk_disp_drain(a);
	rusk_store32(&a->exited, 1, RUSK_RELEASE); /* rusk_dispatch_drained */
	rusk_thread_unregister();
	return NULL;
}

/* ---- the public API ------------------------------------------------------------------------ */

RUSK_EXPORT void rusk_dispatch_params_init(rusk_dispatch_params *p, uint32_t agents)
{
	memset(p, 0, sizeof *p);
	p->agents = agents;
	p->batch = 100;
	p->ring = 1u << 16;
	p->spin_ns = 2000;
	p->max_jobs = DEFAULT_MAX_JOBS;
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
	if (p->max_jobs == 0 || p->max_jobs > (1ull << 32))
		return bad(err, len, "max_jobs: not in 1..2^32");
	return RUSK_OK;
}

/* Agent i: its kernel agent, rings and victim stream. */
static int make_agent(rusk_dispatch *d, uint32_t i, char *err, size_t len)
{
	rusk_dagent *a = &d->ag[i];
	a->d = d;
	a->index = i;
	rusk_agent_params ap;
	if (d->p.agent_params != NULL) {
		d->p.agent_params(d->p.arg, i, &ap);
	} else {
		/* DiffSync over every partition with ParSync's 500 ms gap (SameSync where there
		 * are fewer partitions than agents), starting now. */
		uint32_t parts = rusk_cluster_partitions(d->c);
		rusk_sync_params sp = {.policy = parts >= d->p.agents ? RUSK_SYNC_DIFF
		                                                      : RUSK_SYNC_SAME,
		                       .partitions = parts,
		                       .agents = d->p.agents,
		                       .gap_ns = 500000000ull,
		                       .start_ns = now_ns(d),
		                       .seed = d->p.seed};
		rusk_agent_params_init(&ap, &sp, i);
		ap.seed = d->p.seed + i;
	}
	int rc = rusk_agent_create(d->c, &ap, &a->ag, err, len);
	if (rc != RUSK_OK)
		return rc;
	a->in_buf = calloc(d->p.ring, sizeof *a->in_buf);
	a->done_buf = calloc(d->p.ring, sizeof *a->done_buf);
	if (a->in_buf == NULL || a->done_buf == NULL)
		return RUSK_ENOMEM;
	ck_ring_init(&a->in, d->p.ring);
	ck_ring_init(&a->done, d->p.ring);
	rusk_park_init(&a->park);
	rusk_rng_seed(&a->prng, d->p.seed, 0x76696374ull + i); /* "vict" */
	return RUSK_OK;
}

RUSK_EXPORT int rusk_dispatch_create(rusk_cluster *c, const rusk_dispatch_params *p,
                                     rusk_dispatch **out, char *err, size_t errlen)
{
	if (c == NULL || p == NULL || out == NULL)
		return RUSK_EINVAL;
	int rc = check_params(p, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	rusk_dispatch *d = calloc(1, sizeof *d);
	if (d == NULL)
		return RUSK_ENOMEM;
	d->c = c;
	d->p = *p;
	d->cap = p->max_jobs;
	uint64_t ring = 2;
	while (ring < d->cap + 1) /* a CK ring holds size - 1 */
		ring *= 2;
	d->ring_mask = ring - 1;
	d->jobs = calloc(d->cap, sizeof *d->jobs);
	d->free_buf = calloc(ring, sizeof *d->free_buf);
	d->ag = calloc(p->agents, sizeof *d->ag);
	if (d->jobs == NULL || d->free_buf == NULL || d->ag == NULL) {
		rusk_dispatch_destroy(d);
		return RUSK_ENOMEM;
	}
	ck_ring_init(&d->free_r, (unsigned int)ring);
	for (uint32_t i = 0; i < p->agents; i++)
		if ((rc = make_agent(d, i, err, errlen)) != RUSK_OK) {
			if (rc == RUSK_ENOMEM)
				bad(err, errlen, "out of memory");
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
	 * outlives d (nobody can complete them after this): DONE on this thread. */
	uint64_t used = d->jobs != NULL ? rusk_load64(&d->bump, RUSK_RELAXED) : 0;
	for (uint64_t k = 0; k < used && k < d->cap; k++) {
		uint64_t st = rusk_load64(&d->jobs[k].st, RUSK_ACQUIRE);
		if ((st & 3) == RUSK_JS_RUNNING)
			rusk_disp_end(d, &d->jobs[k], (uint32_t)(st >> 2), now_ns(d));
	}
	for (uint32_t i = 0; d->ag != NULL && i < d->p.agents; i++) {
		rusk_dagent *a = &d->ag[i];
		rusk_disp_drain(a); /* never started: queues may hold jobs */
		if (a->ag != NULL)
			rusk_agent_destroy(a->ag);
		free(a->in_buf);
		free(a->done_buf);
	}
	for (uint64_t k = 0; d->jobs != NULL && k < d->cap; k++)
		if (d->jobs[k].l != NULL && d->jobs[k].l != d->jobs[k].l_in)
			free(d->jobs[k].l);
	rusk_completer_free(d->wheel);
	free(d->ag);
	free(d->jobs);
	free(d->free_buf);
	free(d);
}

RUSK_EXPORT int rusk_dispatch_submit(rusk_dispatch *d, uint32_t agent, const rusk_dtask_spec *s,
                                     rusk_dtask **out)
{
	if (d == NULL || s == NULL || (agent != UINT32_MAX && agent >= d->p.agents))
		return RUSK_EINVAL;
	if (agent == UINT32_MAX)
		agent = rusk_faa32(&d->rr, 1, RUSK_RELAXED) % d->p.agents;
	uint64_t now = s->submit_ns ? s->submit_ns : now_ns(d);
	rusk_faa64(&d->submitted, 1, RUSK_RELAXED);
	/* E6: in flight before looking at stop; rusk_dispatch_stop sets stop, then waits for
	 * no submission in flight, so every submission it does not see refused reaches a
	 * ring before the agents' last look at it. The locked add is a full barrier. */
	rusk_faa32(&d->inflight, 1, RUSK_ACQ_REL);
	rusk_fence_atomic_load();
	int rc = RUSK_ESTOPPED;
	rusk_dtask *j = NULL;
	if (rusk_load32(&d->stop, RUSK_ACQUIRE) == 0 &&
	    (j = rusk_disp_job(d, s, now, &rc)) != NULL) {
		rusk_dagent *a = &d->ag[agent];
		TSAN_RELEASE(j); /* E3 */
		if (ck_ring_enqueue_mpsc(&a->in, a->in_buf, j)) {
			rusk_park_wake(&a->park); /* a system call only if a is parked */
			rusk_faa32(&d->inflight, (uint32_t)-1, RUSK_RELEASE);
			if (out != NULL)
				*out = j;
			return RUSK_OK;
		}
		rc = RUSK_EAGAIN;
	}
	rusk_faa32(&d->inflight, (uint32_t)-1, RUSK_RELEASE);
	rusk_disp_reject(d, agent, j, s, rc, now);
	return rc;
}

/* Hands a task taken back from its tenure to an agent's queue (E3, E6); false when the
 * dispatcher is stopping (the caller rejects it). */
static bool requeue(rusk_dispatch *d, rusk_dtask *j)
{
	rusk_faa32(&d->inflight, 1, RUSK_ACQ_REL);
	rusk_fence_atomic_load();
	bool ok = false;
	rusk_dagent *a = &d->ag[rusk_faa32(&d->rr, 1, RUSK_RELAXED) % d->p.agents];
	while (!ok && rusk_load32(&d->stop, RUSK_ACQUIRE) == 0) {
		TSAN_RELEASE(j);
		if ((ok = ck_ring_enqueue_mpsc(&a->in, a->in_buf, j)))
			rusk_park_wake(&a->park);
		else
			rusk_disp_sleep(1000); /* the agent drains its queue */
	}
	rusk_faa32(&d->inflight, (uint32_t)-1, RUSK_RELEASE);
	return ok;
}

/* Whether j's current placement holds `lease` (j's fields acquired through RUNNING). */
static bool holds(const rusk_dtask *j, rusk_lease lease)
{
	for (uint32_t k = 0; k < j->placed; k++)
		if (j->l[k].ru == lease.ru && j->l[k].gen == lease.gen)
			return true;
	return false;
}

RUSK_EXPORT void rusk_dispatch_revoked(uint64_t task, rusk_lease lease, void *arg)
{
	rusk_dispatch *d = arg;
	if (d == NULL || task == 0 || task > RUSK_TASK_ID_MAX)
		return;
	rusk_dtask *j = &d->jobs[(task - 1) % d->cap];
	uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE); /* E1 */
	if (j->id != task)
		return; /* not of d, or its slot was reused */
	if ((st & 3) == RUSK_JS_QUEUED) {
		/* E7: its agent holds it (a partial placement, or place() has just returned
		 * the lease): flag it, then look again, as the agent looks at the flag after
		 * it marks the task RUNNING; at least one of the two sees the other. */
		rusk_store32(&j->lost, 1, RUSK_RELEASE);
		rusk_fence_full();
		st = rusk_load64(&j->st, RUSK_ACQUIRE);
		if ((st & 3) != RUSK_JS_RUNNING || j->id != task)
			return; /* the agent restarts it when it next takes it */
	}
	/* A lease of an earlier placement (a machine's RUs are reported one by one, and the
	 * task may have been placed again in between) is not this placement's. */
	if ((st & 3) != RUSK_JS_RUNNING || !holds(j, lease))
		return;
	take_back(d, j, st, NULL);
}

RUSK_EXPORT int rusk_dispatch_complete(rusk_dispatch *d, rusk_dtask *j)
{
	if (d == NULL || j == NULL || j < d->jobs || j >= d->jobs + d->cap ||
	    (uintptr_t)((const char *)j - (const char *)d->jobs) % sizeof *j != 0)
		return RUSK_EINVAL; /* not a slot of d (or inside one) */
	uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE);
	if ((st & 3) != RUSK_JS_RUNNING)
		return RUSK_EAGAIN;
	return rusk_disp_end(d, j, (uint32_t)(st >> 2), now_ns(d)) ? RUSK_OK : RUSK_EAGAIN;
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
	if ((d->wheel = rusk_completer_new()) == NULL)
		return RUSK_ENOMEM;
	d->started = true;
	int err = pthread_create(&d->comp, NULL, rusk_completer_main, d);
	d->comp_on = err == 0;
	for (uint32_t i = 0; err == 0 && i < d->p.agents; i++) {
		err = pthread_create(&d->ag[i].tid, NULL, agent_main, &d->ag[i]);
		d->ag[i].started = err == 0;
	}
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
	__atomic_compare_exchange_n(&d->stop, &zero, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
	wake_all(d); /* an idle agent sees the end at once */
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
	rusk_fence_full(); /* E6: stop before the in-flight count is read */
	while (rusk_load32(&d->inflight, RUSK_ACQUIRE) != 0)
		rusk_disp_sleep(1000);
	wake_all(d);
	for (uint32_t i = 0; i < d->p.agents; i++)
		if (d->ag[i].started) {
			pthread_join(d->ag[i].tid, NULL);
		} else { /* never started: what was submitted stays counted as queued */
			take_ring(&d->ag[i]);
			rusk_disp_drain(&d->ag[i]);
		}
	rusk_store32(&d->comp_stop, 1, RUSK_RELEASE);
	if (d->comp_on)
		pthread_join(d->comp, NULL);
	d->stopped = true;
}

static void sum_stats(const rusk_dispatch *d, rusk_dispatch_stats *o, rusk_hist *delay)
{
	for (uint32_t i = 0; i < d->p.agents; i++) {
		const rusk_dagent *a = &d->ag[i];
		const rusk_disp_stats *s = &a->st;
		o->placed += rusk_load64(&s->placed, RUSK_RELAXED);
		o->preempted += rusk_load64(&s->preempted, RUSK_RELAXED);
		o->requeued += rusk_load64(&s->requeued, RUSK_RELAXED);
		o->attempts += rusk_load64(&s->attempts, RUSK_RELAXED);
		o->commits_lost += rusk_load64(&s->conflicts, RUSK_RELAXED);
		o->admission_waited += rusk_load64(&s->adm_waited, RUSK_RELAXED);
		o->queued_end += a->n_left;
		o->agent_cpu_s += a->cpu_s;
		rusk_hist_merge(delay, &s->delay_hi);
		rusk_hist_merge(delay, &s->delay_lo);
	}
}

RUSK_EXPORT void rusk_dispatch_stats_get(const rusk_dispatch *d, rusk_dispatch_stats *out)
{
	memset(out, 0, sizeof *out);
	rusk_hist *delay = calloc(1, sizeof *delay);
	if (d == NULL || delay == NULL) {
		free(delay);
		return;
	}
	sum_stats(d, out, delay);
	out->submitted = rusk_load64(&d->submitted, RUSK_RELAXED);
	out->rejected = rusk_load64(&d->rejected, RUSK_RELAXED);
	out->released = rusk_load64(&d->released, RUSK_RELAXED);
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

RUSK_EXPORT rusk_agent *rusk_dispatch_agent(rusk_dispatch *d, uint32_t i)
{
	return d != NULL && i < d->p.agents ? d->ag[i].ag : NULL;
}
