/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher's completer (rusk/dispatch.h): ends each placed task run_ns after its
 * placement, releasing its RUs (rusk_disp_end), on a thread of its own.
 *
 * A timing wheel of 2^16 slots of 2^20 ns (a 68.7 s horizon) with a heap beyond it:
 * pushing is an append and each tenure is looked at once or twice (a heap of every running
 * task cost ~380 instructions a task). Ends are exact. Agents hand placed tenures over through an
 * SPSC ring each (E4); the completer turns the wheel every COMP_NS and, at stop, ends every tenure
 * still running.
 *
 * Invariants: an entry is kept only for a tenure running on a timer when it was taken
 * from the ring (a preempted or revoked tenure never runs again); each tenure is ended at
 * most once (E2's CAS in rusk_disp_end).
 */
#include <stdlib.h>

#include "compiler.h"
#include "dispatch_impl.h"
#include "internal.h"

#define COMP_NS 200000ull /* the completer's turn */

#define WHEEL_SHIFT 20
#define WHEEL_SLOTS (1u << 16)

/* A placed tenure on its way to its end: the job may be preempted and placed again
 * meanwhile, so the entry keeps its own copy of the end time and tenure. */
typedef struct tenure {
	uint64_t end_ns;
	rusk_dtask *j;
	uint64_t tenure; /* its tenure key (rusk_js_key) */
} tenure;

typedef struct slot {
	tenure *a;
	uint32_t n, cap;
} slot;

static inline bool end_before(const tenure *x, const tenure *y)
{
	return x->end_ns < y->end_ns;
}
HEAP_DEFINE(far_heap, tenure, end_before)

typedef struct wheel {
	slot *s;
	uint64_t tick; /* every slot before it has been emptied */
	far_heap far;  /* beyond the horizon */
} wheel;

static void wheel_put(rusk_dispatch *d, wheel *w, tenure e)
{
	uint64_t t = e.end_ns >> WHEEL_SHIFT;
	if (t < w->tick)
		t = w->tick; /* already due */
	if (t - w->tick >= WHEEL_SLOTS) {
		if (!far_heap_push(&w->far, e)) { /* nowhere to keep it: end it now */
			rusk_store32(&d->fail, 1, RUSK_RELAXED);
			rusk_disp_end(d, e.j, e.tenure, rusk_disp_now(d));
		}
		return;
	}
	slot *sl = &w->s[t & (WHEEL_SLOTS - 1)];
	if (sl->n == sl->cap) {
		uint32_t cap = sl->cap ? sl->cap * 2 : 64;
		tenure *na = realloc(sl->a, cap * sizeof *sl->a);
		if (na == NULL) {
			rusk_store32(&d->fail, 1, RUSK_RELAXED);
			rusk_disp_end(d, e.j, e.tenure, rusk_disp_now(d));
			return;
		}
		sl->a = na;
		sl->cap = cap;
	}
	sl->a[sl->n++] = e;
}

/* Ends every tenure due by `now`; with `all`, every tenure (the dispatcher stops). */
static void wheel_turn(rusk_dispatch *d, wheel *w, uint64_t now, bool all)
{
	if (all) {
		for (uint32_t k = 0; k < WHEEL_SLOTS; k++) {
			for (uint32_t i = 0; i < w->s[k].n; i++)
				rusk_disp_end(d, w->s[k].a[i].j, w->s[k].a[i].tenure, now);
			w->s[k].n = 0;
		}
		while (w->far.n > 0) {
			tenure e = far_heap_pop(&w->far);
			rusk_disp_end(d, e.j, e.tenure, now);
		}
		return;
	}
	uint64_t now_tick = now >> WHEEL_SHIFT;
	for (;;) {
		while (w->far.n > 0 && (w->far.a[0].end_ns >> WHEEL_SHIFT) < w->tick + WHEEL_SLOTS)
			wheel_put(d, w, far_heap_pop(&w->far));
		slot *sl = &w->s[w->tick & (WHEEL_SLOTS - 1)];
		uint32_t keep = 0;
		for (uint32_t i = 0; i < sl->n; i++) {
			if (sl->a[i].end_ns <= now)
				rusk_disp_end(d, sl->a[i].j, sl->a[i].tenure, now);
			else
				sl->a[keep++] = sl->a[i];
		}
		sl->n = keep;
		if (w->tick >= now_tick)
			break; /* the current tick: what is left is not due yet */
		w->tick++;     /* an earlier tick: its slot is empty now */
	}
}

void *rusk_completer_main(void *arg)
{
	rusk_dispatch *d = arg;
	wheel *w = d->wheel;
	w->tick = rusk_disp_now(d) >> WHEEL_SHIFT;
	rusk_thread_register(); /* a DONE callback may submit */
	for (;;) {
		/* Not d->stop: agents still hand over until they have joined (E5). */
		bool last = rusk_load32(&d->comp_stop, RUSK_ACQUIRE);
		for (uint32_t i = 0; i < d->p.agents; i++) {
			rusk_dtask *j;
			while (ck_ring_dequeue_spsc(&d->ag[i].done, d->ag[i].done_buf, &j)) {
				TSAN_ACQUIRE(j); /* E4 */
				/* The tenure running now, with its end (E1: written before
				 * RUNNING). The handed-over one may be over: preempted or revoked
				 * (queued again under tenure + 1, with the old end_ns until it is
				 * placed again), or ended and the slot reused. Such an entry is
				 * dropped: a tenure not running now never runs again, and a later
				 * placement hands itself over. Keeping it with the tenure read now
				 * ended the next tenure at the old end. A duplicate of a running
				 * tenure is harmless: the end's CAS ends each tenure once (E2). */
				uint64_t st = rusk_load64(&j->st, RUSK_ACQUIRE);
				uint64_t end = rusk_load64(&j->end_ns, RUSK_RELAXED);
				if (rusk_js_state(st) == RUSK_JS_RUNNING && end != UINT64_MAX)
					wheel_put(d, w, (tenure){end, j, rusk_js_key(st)});
			}
		}
		wheel_turn(d, w, rusk_disp_now(d), last);
		if (last)
			break;
		rusk_disp_sleep(COMP_NS);
	}
	rusk_thread_unregister();
	return NULL;
}

void rusk_completer_free(void *p)
{
	wheel *w = p;
	if (w == NULL)
		return;
	for (uint32_t k = 0; w->s != NULL && k < WHEEL_SLOTS; k++)
		free(w->s[k].a);
	free(w->s);
	free(w->far.a);
	free(w);
}

void *rusk_completer_new(void)
{
	wheel *w = calloc(1, sizeof *w);
	if (w == NULL || (w->s = calloc(WHEEL_SLOTS, sizeof *w->s)) == NULL) {
		free(w);
		return NULL;
	}
	return w;
}
