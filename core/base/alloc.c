/* SPDX-License-Identifier: MIT */
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

long rusk_fault_alloc_fail_at;

#if defined(RUSK_HAVE_JEMALLOC)
#include <jemalloc/jemalloc.h>

void *rusk_alloc_zeroed(size_t size, size_t align)
{
	if (rusk_fault_alloc_())
		return NULL;
	if (size == 0)
		size = 1;
	return mallocx(size, MALLOCX_ALIGN(align) | MALLOCX_ZERO);
}

void rusk_alloc_free(void *p, size_t size, size_t align)
{
	if (p == NULL)
		return;
	/* Sized deallocation skips jemalloc's size lookup. */
	sdallocx(p, size == 0 ? 1 : size, MALLOCX_ALIGN(align));
}

#else

void *rusk_alloc_zeroed(size_t size, size_t align)
{
	if (rusk_fault_alloc_())
		return NULL;
	size_t rounded = (size + align - 1) / align * align;
	if (rounded == 0)
		rounded = align;
	void *p = aligned_alloc(align, rounded);
	if (p != NULL)
		memset(p, 0, rounded);
	return p;
}

void rusk_alloc_free(void *p, size_t size, size_t align)
{
	(void)size;
	(void)align;
	free(p);
}

#endif
