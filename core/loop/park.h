/* SPDX-License-Identifier: MIT */
/*
 * Parking an idle thread until work arrives: Concurrency Kit's event count (ck_ec32, CK
 * 0.7) over Linux futexes, with deadlines on CLOCK_MONOTONIC (the clock `rusk run` gives
 * the cluster).
 *
 * Why. A consumer that sleeps a fixed slice between polls adds that slice (plus the
 * kernel's timer slack) to every hand-off: a 50 us nanosleep gave `rusk run` a median
 * scheduling delay of ~90 us while the decision and commit took < 1 us. A parked thread
 * is woken by the producer that publishes work, one futex wake-up (a few us), and uses no
 * CPU while it waits.
 *
 * Protocol (no lost wake-up):
 *   consumer  seen = rusk_park_prepare(p); look for work; none: rusk_park_wait(p, seen, t)
 *   producer  publish the work (e.g. ck_ring enqueue); rusk_park_wake(p)
 * ck_ec's value read in prepare is an acquire and its increment in wake a release with a
 * waiter flag in the same word: if the producer's increment lands after `seen` was read,
 * the wait returns at once; if the waiter flagged the word first, the increment wakes it.
 * The producer's cost without a waiter is one atomic add (no system call).
 * Multi-producer mode: any number of threads may call rusk_park_wake.
 */
#ifndef RUSK_PARK_H
#define RUSK_PARK_H

#include <ck_ec.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct rusk_park {
	struct ck_ec32 ec;
} rusk_park;

extern const struct ck_ec_mode rusk_park_mode_;

static inline void rusk_park_init(rusk_park *p)
{
	ck_ec32_init(&p->ec, 0);
}

/* The value to wait on; read it before looking for work (acquire). */
static inline uint32_t rusk_park_prepare(const rusk_park *p)
{
	return ck_ec32_value(&p->ec);
}

/* Sleeps until a rusk_park_wake after `seen` was read, or until deadline_ns (monotonic
 * ns; UINT64_MAX: none); may return early. Any thread may wait. */
void rusk_park_wait(rusk_park *p, uint32_t seen, uint64_t deadline_ns);

/* Whether a thread is parked on p, or about to be (a hint: it may change at once). A
 * producer may use it to yield its core to the thread its next wake-up runs. */
static inline bool rusk_park_parked(const rusk_park *p)
{
	return ck_ec32_has_waiters(&p->ec);
}

/* Wakes every thread parked on p (release: work published before it is seen by a woken
 * thread). A system call only when a thread is parked. Any thread. */
static inline void rusk_park_wake(rusk_park *p)
{
	ck_ec32_inc(&p->ec, &rusk_park_mode_);
}

#endif
