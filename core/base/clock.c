/* SPDX-License-Identifier: MIT */
#include <time.h>

#include "base/base.h"

static uint64_t monotonic_now(void *ctx)
{
	(void)ctx;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static const rusk_clock monotonic = {monotonic_now, NULL};

RUSK_EXPORT const rusk_clock *rusk_clock_monotonic(void)
{
	return &monotonic;
}

const rusk_clock *const rusk_monotonic_ = &monotonic;
