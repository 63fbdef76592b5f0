/* SPDX-License-Identifier: MIT */
/*
 * Seeded generators. Every random choice in rusk comes from one of these, so the same seed
 * gives the same run. splitmix64 seeds (and derives independent streams from one seed);
 * xoshiro256** generates. Internal; header-only because it sits on hot paths.
 */
#ifndef RUSK_CORE_RNG_H
#define RUSK_CORE_RNG_H

#include <stdint.h>

typedef struct rusk_rng {
	uint64_t s[4];
} rusk_rng;

static inline uint64_t rusk_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Seeds stream `stream` of `seed`: distinct streams of one seed are independent. */
static inline void rusk_rng_seed(rusk_rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * UINT64_C(0xD1B54A32D192ED03));
	for (int i = 0; i < 4; i++)
		r->s[i] = rusk_splitmix64(&x);
}

static inline uint64_t rusk_rng_next(rusk_rng *r)
{
	uint64_t *s = r->s;
	uint64_t x = s[1] * 5;
	uint64_t result = ((x << 7) | (x >> 57)) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = (s[3] << 45) | (s[3] >> 19);
	return result;
}

/* Uniform in [0, n) without modulo bias worth measuring (Lemire's multiply-shift). */
static inline uint32_t rusk_rng_below(rusk_rng *r, uint32_t n)
{
	return (uint32_t)(((rusk_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Uniform double in [0, 1). */
static inline double rusk_rng_unit(rusk_rng *r)
{
	return (double)(rusk_rng_next(r) >> 11) * 0x1.0p-53;
}

#endif /* RUSK_CORE_RNG_H */
