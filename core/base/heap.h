/*
 * A typed binary min-heap, generated per element type: the dispatcher's admission waiters
 * by their next check and its completer's far tenures by end time (core/loop/dispatch.c), and
 * the simulator's events by (time, sequence) (bench/cli/sim.c).
 *
 *   HEAP_DEFINE(name, T, less)  defines `name` { T *a; size_t n, cap; } and
 *     bool name_push(name *h, T x)  false when growing failed (h unchanged: nothing lost)
 *     T name_pop(name *h)           h->n > 0
 * where less(const T *x, const T *y) orders the elements. Ties keep no particular order,
 * but the same pushes and pops always give the same order (the simulator relies on it).
 */
#ifndef RUSK_CORE_HEAP_H
#define RUSK_CORE_HEAP_H

#include <stdbool.h>
#include <stdlib.h>

#define HEAP_DEFINE(name, T, less)                                                                 \
	typedef struct name {                                                                      \
		T *a;                                                                              \
		size_t n, cap;                                                                     \
	} name;                                                                                    \
	static inline bool name##_push(name *h, T x)                                               \
	{                                                                                          \
		if (h->n == h->cap) {                                                              \
			size_t cap = h->cap ? h->cap * 2 : 1024;                                   \
			T *na = realloc(h->a, cap * sizeof *h->a);                                 \
			if (na == NULL)                                                            \
				return false;                                                      \
			h->a = na;                                                                 \
			h->cap = cap;                                                              \
		}                                                                                  \
		size_t i = h->n++;                                                                 \
		while (i > 0 && less(&x, &h->a[(i - 1) / 2])) {                                    \
			h->a[i] = h->a[(i - 1) / 2];                                               \
			i = (i - 1) / 2;                                                           \
		}                                                                                  \
		h->a[i] = x;                                                                       \
		return true;                                                                       \
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

#endif /* RUSK_CORE_HEAP_H */
