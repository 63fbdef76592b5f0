/* SPDX-License-Identifier: MIT */
/*
 * An agent's timed ends (wheel.c), used by that agent only. Not installed.
 */
#ifndef RUSK_LOOP_WHEEL_H
#define RUSK_LOOP_WHEEL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rusk_wheel rusk_wheel;

/* Ends tenure `key` of task j at `now`; true when it ended it (false: a later tenure, or
 * one already ended). The dispatcher's rusk_dispatch_end_. */
typedef bool (*rusk_wheel_end_fn)(void *ctx, void *j, uint64_t key, uint64_t now);

/* A wheel turned from `now` that ends tenures with end(ctx, ...); NULL: out of memory. */
rusk_wheel *rusk_wheel_new(uint64_t now, rusk_wheel_end_fn end, void *ctx);
void rusk_wheel_free(rusk_wheel *w);
/* Puts j's tenure `key` to end at end_ns (run_ns: its run time, which bounds how late an
 * idle agent may end it). false: out of memory, nothing kept (the caller ends it now). */
bool rusk_wheel_put(rusk_wheel *w, void *j, uint64_t end_ns, uint64_t key, uint64_t run_ns);
/* Ends what is due by now (all: everything); returns the tenures ended. */
uint64_t rusk_wheel_turn(rusk_wheel *w, uint64_t now, bool all);
/* When an idle agent must wake for its ends: the least end + its allowed lateness;
 * UINT64_MAX: none. */
uint64_t rusk_wheel_next(const rusk_wheel *w);
/* Entries kept. */
uint64_t rusk_wheel_size(const rusk_wheel *w);

#endif /* RUSK_LOOP_WHEEL_H */
