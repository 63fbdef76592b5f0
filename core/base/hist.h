/* SPDX-License-Identifier: MIT */
/*
 * Log-linear latency histograms (HdrHistogram-style): values in ns; bucket = (power of two,
 * one of 128 linear sub-buckets), so any recorded value is reported within 0.8% (the bucket
 * midpoint). One writer per histogram (its agent) updates counters with relaxed atomic
 * stores; readers (the per-second sampler) load them relaxed and may see a count one
 * update behind. Internal (the CLI's drivers use it).
 */
#ifndef RUSK_CORE_HIST_H
#define RUSK_CORE_HIST_H

#include <stdint.h>

#include "base/atomic.h"

#define RUSK_HIST_SUB_BITS 7
#define RUSK_HIST_SUB      (1u << RUSK_HIST_SUB_BITS)
#define RUSK_HIST_BUCKETS  ((64 - RUSK_HIST_SUB_BITS + 1) * RUSK_HIST_SUB)

typedef struct rusk_hist {
	uint64_t count[RUSK_HIST_BUCKETS];
	uint64_t sum, max; /* the number of values is the counts' sum (rusk_hist_count) */
} rusk_hist;

static inline uint32_t rusk_hist_bucket_(uint64_t v)
{
	if (v < RUSK_HIST_SUB)
		return (uint32_t)v;
	uint32_t e = 63 - (uint32_t)__builtin_clzll(v); /* >= RUSK_HIST_SUB_BITS */
	uint32_t shift = e - RUSK_HIST_SUB_BITS;
	uint32_t sub = (uint32_t)(v >> shift) & (RUSK_HIST_SUB - 1);
	return (shift + 1) * RUSK_HIST_SUB + sub;
}

/* Adds v (single writer). Inline: a scheduled task records six of them. */
static inline void rusk_hist_record(rusk_hist *h, uint64_t v)
{
	uint32_t b = rusk_hist_bucket_(v);
	/* Single writer: plain read-modify-write published with relaxed stores so a
	 * concurrent reader sees whole values (no RMW needed). */
	rusk_store64(&h->count[b], rusk_load64(&h->count[b], RUSK_RELAXED) + 1, RUSK_RELAXED);
	rusk_store64(&h->sum, rusk_load64(&h->sum, RUSK_RELAXED) + v, RUSK_RELAXED);
	if (v > rusk_load64(&h->max, RUSK_RELAXED))
		rusk_store64(&h->max, v, RUSK_RELAXED);
}
/* dst += src (src read with relaxed loads). */
void rusk_hist_merge(rusk_hist *dst, const rusk_hist *src);
/* dst = a - b, bucket by bucket (for per-interval views of cumulative histograms). */
void rusk_hist_diff(rusk_hist *dst, const rusk_hist *a, const rusk_hist *b);
/* Values recorded (a sum over the buckets: readers pay for it, not the record). */
uint64_t rusk_hist_count(const rusk_hist *h);
/* Value at quantile q in [0, 1] (bucket midpoint; 0 when empty). */
uint64_t rusk_hist_quantile(const rusk_hist *h, double q);
double rusk_hist_mean(const rusk_hist *h);

#endif
