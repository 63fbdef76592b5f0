/* SPDX-License-Identifier: MIT */
#include "base/hist.h"

#include <string.h>

#include "base/atomic.h"

static inline uint64_t bucket_mid(uint32_t b)
{
	if (b < RUSK_HIST_SUB)
		return b;
	uint32_t shift = b / RUSK_HIST_SUB - 1;
	uint64_t lo = ((uint64_t)RUSK_HIST_SUB + (b % RUSK_HIST_SUB)) << shift;
	return lo + ((UINT64_C(1) << shift) >> 1);
}

/* Buckets above max's are empty: merges and diffs stop there (a latency histogram's max
 * bucket is about a quarter of the way up), which keeps the per-second sampler cheap. A
 * merge reads max first; a record whose max it has not seen yet may also be missed in its
 * bucket, which is the "one update behind" readers already allow. */
void rusk_hist_merge(rusk_hist *dst, const rusk_hist *src)
{
	uint64_t m = rusk_load64(&src->max, RUSK_RELAXED);
	uint32_t top = rusk_hist_bucket_(m);
	for (uint32_t b = 0; b <= top; b++)
		dst->count[b] += rusk_load64(&src->count[b], RUSK_RELAXED);
	dst->sum += rusk_load64(&src->sum, RUSK_RELAXED);
	if (m > dst->max)
		dst->max = m;
}

void rusk_hist_diff(rusk_hist *dst, const rusk_hist *a, const rusk_hist *b)
{
	/* b is an earlier state of a (its max is no larger); dst's buckets above a's max are
	 * zeroed too, so dst is whole whatever it held. */
	uint32_t top = rusk_hist_bucket_(a->max);
	for (uint32_t i = 0; i <= top; i++)
		dst->count[i] = a->count[i] - b->count[i];
	memset(dst->count + top + 1, 0, sizeof dst->count[0] * (RUSK_HIST_BUCKETS - top - 1));
	dst->sum = a->sum - b->sum;
	dst->max = a->max; /* an interval's max is not recoverable; callers use quantiles */
}

uint64_t rusk_hist_count(const rusk_hist *h)
{
	uint32_t top = rusk_hist_bucket_(h->max);
	uint64_t n = 0;
	for (uint32_t b = 0; b <= top; b++)
		n += h->count[b];
	return n;
}

uint64_t rusk_hist_quantile(const rusk_hist *h, double q)
{
	uint64_t n = rusk_hist_count(h);
	if (n == 0)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)(n - 1)) + 1, seen = 0;
	for (uint32_t b = 0; b < RUSK_HIST_BUCKETS; b++) {
		seen += h->count[b];
		if (seen >= rank)
			return bucket_mid(b) > h->max && h->max ? h->max : bucket_mid(b);
	}
	return h->max;
}

double rusk_hist_mean(const rusk_hist *h)
{
	uint64_t n = rusk_hist_count(h);
	return n ? (double)h->sum / (double)n : 0.0;
}
