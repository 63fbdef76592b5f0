/* SPDX-License-Identifier: MIT */
/*
 * A typed binary min-heap, generated per element type: the completer's tenures by end time
 * (run.c), the simulator's events by (time, sequence) (sim.c), and the admission waiters by
 * their next check (driver.c). Growth failure ends the process with the out-of-memory
 * status and a message (drv_oom_exit): these are the CLI's own queues.
 *
 *   HEAP_DEFINE(name, T, less)  defines `name` { T *a; size_t n, cap; } and
 *                               name_push(name *h, T x), T name_pop(name *h) (h->n > 0)
 * where less(const T *x, const T *y) orders the elements.
 */
#ifndef RUSK_CLI_HEAP_H
#define RUSK_CLI_HEAP_H

#include <stdlib.h>

/* Prints "out of memory WHAT" and exits with RUSK_EXIT_NOMEM (driver.c). */
_Noreturn void drv_oom_exit(const char *what);

#define HEAP_DEFINE(name, T, less)                                                                 \
	typedef struct name {                                                                      \
		T *a;                                                                              \
		size_t n, cap;                                                                     \
	} name;                                                                                    \
	static inline void name##_push(name *h, T x)                                               \
	{                                                                                          \
		if (h->n == h->cap) {                                                              \
			h->cap = h->cap ? h->cap * 2 : 4096;                                       \
			h->a = realloc(h->a, h->cap * sizeof *h->a);                               \
			if (h->a == NULL)                                                          \
				drv_oom_exit("growing a " #name);                                  \
		}                                                                                  \
		size_t i = h->n++;                                                                 \
		while (i > 0 && less(&x, &h->a[(i - 1) / 2])) {                                    \
			h->a[i] = h->a[(i - 1) / 2];                                               \
			i = (i - 1) / 2;                                                           \
		}                                                                                  \
		h->a[i] = x;                                                                       \
	}                                                                                          \
	static inline T name##_pop(name *h)                                                        \
	{                                                                                          \
		T top = h->a[0];                                                                   \
		T last = h->a[--h->n];                                                             \
		size_t i = 0;                                                                      \
		for (;;) {                                                                         \
			size_t l = 2 * i + 1, m = i;                                               \
			if (l < h->n && less(&h->a[l], &last))                                     \
				m = l;                                                             \
			if (l + 1 < h->n && less(&h->a[l + 1], m == i ? &last : &h->a[m]))         \
				m = l + 1;                                                         \
			if (m == i)                                                                \
				break;                                                             \
			h->a[i] = h->a[m];                                                         \
			i = m;                                                                     \
		}                                                                                  \
		if (h->n > 0)                                                                      \
			h->a[i] = last;                                                            \
		return top;                                                                        \
	}

#endif
