/* SPDX-License-Identifier: MIT */
/*
 * Internal layout of a cluster and its master RU array. Not installed.
 *
 * Memory budget (issue: <= 32 bytes per RU at 100K machines x 16 RUs):
 *   per RU       8  state word          (hot: every commit/release CASes it)
 *                4  machine index       (read-only after build)
 *               10  tenant profile      (written by the holder only when non-zero)
 *   per machine 64  one cache line: live counters + static shape -> 4 bytes/RU at 16 RUs
 *   per partition 64, per platform 48: negligible
 * = 26 bytes per RU at 16 RUs per machine (asserted in tests/test_cluster.c).
 */
#ifndef RUSK_CORE_INTERNAL_H
#define RUSK_CORE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/rusk.h>

#include "compiler.h"

/*
 * State word of one RU:  owner (40 bits) | P (1 bit) | gen (23 bits)
 *   owner 0      free
 *   owner T      held by task T
 *   P            the holder registered a non-zero interference profile (ru_tenant valid)
 *   gen          advances on every release (taken -> free), so a lease {ru, gen} names one
 *                tenure of one RU and a stale lease cannot release a later tenure (ABA).
 */
#define RUSK_W_OWNER_SHIFT 24
#define RUSK_W_PROFILE     (UINT64_C(1) << 23)
#define RUSK_W_GEN         ((uint64_t)RUSK_GEN_MASK)

static inline uint64_t rusk_w_owner(uint64_t w)
{
	return w >> RUSK_W_OWNER_SHIFT;
}
static inline uint32_t rusk_w_gen(uint64_t w)
{
	return (uint32_t)(w & RUSK_W_GEN);
}

/* Interference sums: 10 lanes of 16 bits packed into 3 words (4 + 4 + 2 lanes), so a
 * commit adds a tenant's whole profile with 3 fetch-and-adds instead of 10. A lane never
 * leaves [0, 661 * 99]: every subtraction follows (happens-after) the addition it undoes,
 * so no borrow crosses lanes; modular 64-bit arithmetic keeps even undone misuse exact. */
#define RUSK_LANE_WORDS     3
#define RUSK_LANES_PER_WORD 4

typedef struct rusk_packed {
	uint64_t w[RUSK_LANE_WORDS];
} rusk_packed;

static inline rusk_packed rusk_pack_profile(const rusk_profile *p)
{
	rusk_packed r = {{0, 0, 0}};
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		r.w[i / RUSK_LANES_PER_WORD] |= (uint64_t)p->c[i]
		                                << (16 * (i % RUSK_LANES_PER_WORD));
	return r;
}

static inline uint32_t rusk_lane(const uint64_t *w, int i)
{
	return (uint32_t)(w[i / RUSK_LANES_PER_WORD] >> (16 * (i % RUSK_LANES_PER_WORD))) & 0xffffu;
}

/* One machine: one cache line. The first 28 bytes are written by commits/releases on its
 * RUs (atomics, relaxed: they are statistics that rusk_cluster_verify checks at
 * quiescence); the rest is written once at build. */
typedef struct rusk_machine {
	uint64_t interf[RUSK_LANE_WORDS]; /* live, packed sums */
	uint32_t free_rus;                /* live */
	uint32_t first_ru;
	uint32_t n_rus;
	uint32_t mem_mib;
	uint32_t gpus;
	uint32_t rack;
	uint32_t cell;
	uint32_t source_row;
	uint32_t replica;
	uint16_t partition;
	uint8_t platform;
	uint8_t pad_;
} RUSK_ALIGNED(RUSK_CACHELINE) rusk_machine;
_Static_assert(sizeof(rusk_machine) == RUSK_CACHELINE, "one machine per cache line");

/* One partition, padded so agents committing in different partitions share no line. */
typedef struct rusk_partition {
	uint32_t free_rus; /* live, relaxed (as for machines) */
	uint32_t first_cell, n_cells;
	uint32_t first_machine, n_machines;
	uint32_t first_ru, n_rus;
} RUSK_ALIGNED(RUSK_CACHELINE) rusk_partition;
_Static_assert(sizeof(rusk_partition) == RUSK_CACHELINE, "one partition per cache line");

#define RUSK_PLATFORM_NAME 40
typedef struct rusk_platform_rec {
	char name[RUSK_PLATFORM_NAME];
	double speed;
} rusk_platform_rec;

struct rusk_cluster {
	uint64_t *ru_word;       /* [n_rus] state words */
	uint32_t *ru_machine;    /* [n_rus] */
	rusk_profile *ru_tenant; /* [n_rus] valid while the word's P bit is set */
	rusk_machine *machines;  /* [n_machines] */
	rusk_partition *parts;   /* [n_parts] */
	uint32_t n_rus, n_machines, n_parts, n_racks, n_cells, n_platforms;
	uint32_t machines_per_rack, racks_per_cell;
	rusk_platform_rec platforms[RUSK_MAX_PLATFORMS];
	const rusk_clock *clock;
	size_t bytes_total, bytes_array;
};

/* Writes a formatted one-line message into err (NULL-safe, truncating) and returns code. */
int rusk_errf(char *err, size_t errlen, int code, const char *fmt, ...) RUSK_PRINTF(4, 5);

/* Shared build steps (cluster.c), used by the parameter and openb builders. */
int rusk_cluster_alloc_(rusk_cluster **out, uint32_t n_machines, uint64_t n_rus,
                        const rusk_cluster_params *p, char *err, size_t errlen);
int rusk_cluster_layout_(rusk_cluster *c, const rusk_cluster_params *p, char *err, size_t errlen);
int rusk_cluster_check_topology_(const rusk_cluster_params *p, uint32_t n_machines, char *err,
                                 size_t errlen);

#endif /* RUSK_CORE_INTERNAL_H */
