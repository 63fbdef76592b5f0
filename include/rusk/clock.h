/* SPDX-License-Identifier: MIT */
/*
 * The clock interface. The kernel never reads the system clock directly: it asks the
 * rusk_clock it was given, so the same code runs under a real-time driver (the default
 * monotonic clock) and a deterministic virtual-time driver (a clock the driver advances).
 */
#ifndef RUSK_CLOCK_H
#define RUSK_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rusk_clock {
	/* Current time in nanoseconds; must be monotonic (never decreasing) and safe to
	 * call from every thread that calls into the kernel. */
	uint64_t (*now_ns)(void *ctx);
	void *ctx;
} rusk_clock;

/*
 * rusk_clock_monotonic: the real-time clock (CLOCK_MONOTONIC). Returns a pointer to a
 * static object; any thread.
 */
const rusk_clock *rusk_clock_monotonic(void);

/*
 * rusk_clock_now: reads `clock`. Any thread that the clock itself allows.
 */
static inline uint64_t rusk_clock_now(const rusk_clock *clock)
{
	return clock->now_ns(clock->ctx);
}

#ifdef __cplusplus
}
#endif
#endif /* RUSK_CLOCK_H */
