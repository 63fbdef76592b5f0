/* SPDX-License-Identifier: MIT */
/*
 * The base of every library file (core/base): the public types, the compiler and atomics
 * vocabularies, the error helper, the default clock and thread registration. Nothing here knows the
 * cluster; the learning modules (core/learn) and the workload readers need no more. Not installed.
 */
#ifndef RUSK_BASE_BASE_H
#define RUSK_BASE_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/rusk.h>

#include "base/atomic.h"
#include "base/compiler.h"

/* Writes a formatted one-line message into err (NULL-safe, truncating) and returns code. */
int rusk_errf(char *err, size_t errlen, int code, const char *fmt, ...) RUSK_PRINTF(4, 5);

/* The default clock, CLOCK_MONOTONIC (clock.c); rusk_now_ (kernel/layout.h) reads it
 * without the indirect call. */
extern const rusk_clock *const rusk_monotonic_;

/* Thread registration (rcu.c): nesting depth of rusk_thread_register on this thread. */
extern __thread unsigned rusk_reg_depth_;
/* RUSK_DEBUG builds (rusk/sync.h: every build type but Release and MinSizeRel, and every
 * sanitizer build) refuse calls that need registration from unregistered threads with
 * RUSK_ENOTREG; other builds compile the check away. */
#if defined(RUSK_DEBUG) || !defined(NDEBUG)
#define RUSK_CHECK_REGISTERED 1
#define RUSK_UNREGISTERED_()  RUSK_UNLIKELY(rusk_reg_depth_ == 0)
#else
#define RUSK_CHECK_REGISTERED 0
#define RUSK_UNREGISTERED_()  false
#endif

#endif /* RUSK_BASE_BASE_H */
