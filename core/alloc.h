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

/* Zeroed, `align`-aligned (power of two) block of `size` bytes, or NULL. */
void *rusk_alloc_zeroed(size_t size, size_t align);
/* Frees a block from rusk_alloc_zeroed; NULL is accepted. */
void rusk_alloc_free(void *p, size_t size, size_t align);

#endif /* RUSK_CORE_ALLOC_H */
