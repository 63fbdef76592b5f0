/* SPDX-License-Identifier: MIT */
/*
 * Kernel allocations. Normal builds take the large, long-lived arrays (RU records,
 * machines, partitions) from jemalloc with mallocx(MALLOCX_ALIGN | MALLOCX_ZERO), cache-line
 * aligned so records written by different threads never share a line by accident.
 * Sanitizer builds use aligned_alloc so ASan/TSan see every byte. Internal.
 */
#ifndef RUSK_CORE_ALLOC_H
#define RUSK_CORE_ALLOC_H

#include <stddef.h>

/* Fault injection for tests: when > 0, counts allocations down and makes the one that
 * brings it to 0 fail (NULL), once. 0 in production. Not thread-safe: set it only while
 * one thread allocates. */
extern long rusk_fault_alloc_fail_at;

/* Counts down rusk_fault_alloc_fail_at; true when this allocation must fail. */
static inline int rusk_fault_alloc_(void)
{
	return rusk_fault_alloc_fail_at > 0 && --rusk_fault_alloc_fail_at == 0;
}

/* Zeroed, `align`-aligned (power of two) block of `size` bytes, or NULL. */
void *rusk_alloc_zeroed(size_t size, size_t align);
/* Frees a block from rusk_alloc_zeroed; NULL is accepted. */
void rusk_alloc_free(void *p, size_t size, size_t align);

#endif /* RUSK_CORE_ALLOC_H */
