/* SPDX-License-Identifier: MIT */
/*
 * Timed ends (rusk/dispatch.h): each agent ends the tasks it placed run_ns after their
 * placement, releasing their RUs (the dispatcher's end function, rusk_dispatch_end_), on its own
 * thread, from a timing wheel of its own. There is no completer thread: one thread ending
 * every task of every agent
 * was a shared hot spot (a cross-core hand-off of each placed task, and one core's worth
 * of ends, 1M a second at most); per agent, a placed tenure goes into a wheel the same
 * thread turns, and what ends frees slots for that agent's next submissions.
 *
 * A timing wheel of 2^14 slots of 2^20 ns (a 17.2 s horizon) with a heap beyond it:
 * pushing is an append and each tenure is looked at once or twice (a heap of every running
 * task cost ~380 instructions a task). The wheel's slots are made on the first entry, so an
 * agent that never places a timed task costs nothing. A busy agent ends a task exactly: at
 * its first round at or after end_ns. A parked one wakes for it at most 1/256 of the task's
 * run time late (1 to 16 ms; rusk_wheel_next): one wake-up per end cost a parked agent
 * more than the end itself, and more agents at one rate are asleep more often.
 *
 * Invariants: an entry is kept only for a tenure running on a timer when it was put (a
 * preempted or revoked tenure never runs again: its entry is dropped when due, the CAS of
 * rusk_dispatch_end_ failing); each tenure is ended at most once (E2's CAS in rusk_dispatch_end_);
 * only the wheel's agent touches it.
 */
#include <stdlib.h>

#include "base/base.h"
#include "base/compiler.h"
#include "base/heap.h"
#include "loop/wheel.h"

#define WHEEL_SHIFT    20
#define WHEEL_SLOTS    (1u << 14)
/* rusk_wheel_next looks this many slots ahead (67 ms) for the earliest end; beyond, it
 * asks to be woken then and looks again. */
#define WHEEL_LOOK     64u
/* How late an idle agent may end a task: 1/256 of its run time, within these bounds. */
#define WHEEL_LATE_MIN (1ull << 20)
#define WHEEL_LATE_MAX (1ull << 24)

/* A placed tenure on its way to its end: the task may be preempted and placed again
 * meanwhile, so the entry keeps its own copy of the end time and tenure. */
typedef struct rusk_tenure {
	uint64_t end_ns;
	void *j;       /* the task (the end function's) */
	uint64_t key;  /* its tenure key (rusk_js_key) */
	uint64_t late; /* how late an idle agent may end it (rusk_wheel_put) */
} rusk_tenure;

typedef struct wheel_slot {
	rusk_tenure *a;
	uint32_t n, cap;
} wheel_slot;

static inline bool end_before(const rusk_tenure *x, const rusk_tenure *y)
{
	return x->end_ns < y->end_ns;
}
HEAP_DEFINE(far_heap, rusk_tenure, end_before)

struct rusk_wheel {
	wheel_slot *s;         /* WHEEL_SLOTS, made on the first put */
	uint64_t tick;         /* every slot before it has been emptied */
	uint64_t n;            /* entries in the slots and the heap */
	uint64_t due;          /* no entry ends before this (a turn before it has nothing to do) */
	far_heap far;          /* beyond the horizon */
	rusk_wheel_end_fn end; /* ends one tenure (the dispatcher's rusk_dispatch_end_) */
	void *ctx;
};

rusk_wheel *rusk_wheel_new(uint64_t now, rusk_wheel_end_fn end, void *ctx)
{
	rusk_wheel *w = calloc(1, sizeof *w);
	if (w != NULL) {
		w->tick = now >> WHEEL_SHIFT;
		w->due = UINT64_MAX;
		w->end = end;
		w->ctx = ctx;
	}
	return w;
}

void rusk_wheel_free(rusk_wheel *w)
{
	if (w == NULL)
		return;
	for (uint32_t k = 0; w->s != NULL && k < WHEEL_SLOTS; k++)
		free(w->s[k].a);
	free(w->s);
	free(w->far.a);
	free(w);
}

/* False: nowhere to keep it (out of memory). */
static bool wheel_put(rusk_wheel *w, rusk_tenure e)
{
	uint64_t t = e.end_ns >> WHEEL_SHIFT;
	if (t < w->tick)
		t = w->tick; /* already due */
	if (t - w->tick >= WHEEL_SLOTS)
		return far_heap_push(&w->far, e);
	if (w->s == NULL && (w->s = calloc(WHEEL_SLOTS, sizeof *w->s)) == NULL)
		return false;
	wheel_slot *sl = &w->s[t & (WHEEL_SLOTS - 1)];
	if (sl->n == sl->cap) {
		uint32_t cap = sl->cap ? sl->cap * 2 : 64;
		rusk_tenure *na = realloc(sl->a, cap * sizeof *sl->a);
		if (na == NULL)
			return false;
		sl->a = na;
		sl->cap = cap;
	}
	sl->a[sl->n++] = e;
	return true;
}

bool rusk_wheel_put(rusk_wheel *w, void *j, uint64_t end_ns, uint64_t key, uint64_t run_ns)
{
	/* An idle agent wakes for an end no later than 1/256 of the task's run (1-16 ms): a
	 * parked agent woken at each end paid a wake-up per task, more agents more of them
	 * asleep; a busy one ends it exactly, at its next round. */
	uint64_t late = run_ns / 256;
	late = late < WHEEL_LATE_MIN   ? WHEEL_LATE_MIN
	       : late > WHEEL_LATE_MAX ? WHEEL_LATE_MAX
	                               : late;
	rusk_tenure e = {end_ns, j, key, late};
	if (!wheel_put(w, e))
		return false; /* out of memory: the caller ends it now rather than never */
	w->n++;
	if (end_ns < w->due)
		w->due = end_ns;
	return true;
}

uint64_t rusk_wheel_turn(rusk_wheel *w, uint64_t now, bool all)
{
	uint64_t ended = 0;
	if (all) {
		for (uint32_t k = 0; w->s != NULL && k < WHEEL_SLOTS; k++) {
			for (uint32_t i = 0; i < w->s[k].n; i++)
				ended += w->end(w->ctx, w->s[k].a[i].j, w->s[k].a[i].key, now);
			w->s[k].n = 0;
		}
		while (w->far.n > 0) {
			rusk_tenure e = far_heap_pop(&w->far);
			ended += w->end(w->ctx, e.j, e.key, now);
		}
		w->n = 0;
		w->due = UINT64_MAX;
		return ended;
	}
	if (now < w->due)
		return 0; /* the common case: nothing ends yet */
	uint64_t now_tick = now >> WHEEL_SHIFT, next = UINT64_MAX;
	for (;;) {
		while (w->far.n > 0 &&
		       (w->far.a[0].end_ns >> WHEEL_SHIFT) < w->tick + WHEEL_SLOTS) {
			if (!wheel_put(w, w->far.a[0])) /* no room in the wheel yet: next turn */
				break;
			(void)far_heap_pop(&w->far);
		}
		wheel_slot *sl = w->s != NULL ? &w->s[w->tick & (WHEEL_SLOTS - 1)] : NULL;
		uint32_t keep = 0;
		for (uint32_t i = 0; sl != NULL && i < sl->n; i++) {
			if (sl->a[i].end_ns <= now) {
				ended += w->end(w->ctx, sl->a[i].j, sl->a[i].key, now);
				w->n--;
			} else {
				if (sl->a[i].end_ns < next)
					next = sl->a[i].end_ns;
				sl->a[keep++] = sl->a[i];
			}
		}
		if (sl != NULL)
			sl->n = keep;
		if (w->tick >= now_tick)
			break; /* the current tick: what is left is not due yet */
		w->tick++;     /* an earlier tick: its slot is empty now */
	}
	/* The earliest end left: in this tick's slot, else at the next tick at the soonest. */
	w->due = w->n == 0 ? UINT64_MAX : next != UINT64_MAX ? next : (now_tick + 1) << WHEEL_SHIFT;
	return ended;
}

uint64_t rusk_wheel_next(const rusk_wheel *w)
{
	if (w->n == 0)
		return UINT64_MAX;
	uint64_t best = UINT64_MAX;
	if (w->far.n > 0)
		best = w->far.a[0].end_ns + WHEEL_LATE_MAX;
	if (w->s == NULL) /* only far entries */
		return best;
	/* From the first slot with an entry, the slots an entry could still beat it from
	 * (its lateness is at most WHEEL_LATE_MAX): the least end + lateness. */
	uint64_t t0 = w->due >> WHEEL_SHIFT < w->tick ? w->tick : w->due >> WHEEL_SHIFT;
	uint64_t stop = t0 + WHEEL_LOOK;
	for (uint64_t t = t0; t < stop && t < w->tick + WHEEL_SLOTS; t++) {
		const wheel_slot *sl = &w->s[t & (WHEEL_SLOTS - 1)];
		if (sl->n == 0)
			continue;
		for (uint32_t i = 0; i < sl->n; i++)
			if (sl->a[i].end_ns + sl->a[i].late < best)
				best = sl->a[i].end_ns + sl->a[i].late;
		uint64_t until = t + 1 + (WHEEL_LATE_MAX >> WHEEL_SHIFT);
		stop = until < stop ? until : stop;
	}
	uint64_t look = (t0 + WHEEL_LOOK) << WHEEL_SHIFT;
	return best < look ? best : look;
}

uint64_t rusk_wheel_size(const rusk_wheel *w)
{
	return w->n;
}
