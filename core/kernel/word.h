/* SPDX-License-Identifier: MIT */
/*
 * The state word of one RU (the master array, ru.c): its layout and accessors, which the
 * array, the vector capacities (vec.c), topology changes and the builders read. Not
 * installed.
 */
#ifndef RUSK_KERNEL_WORD_H
#define RUSK_KERNEL_WORD_H

#include "base/base.h"

/*
 * State word of one RU:  owner (40 bits) | R (1) | C (1) | P (1) | gen (21 bits)
 *   owner 0        free
 *   owner T        held by task T
 *   owner OFFLINE  its machine is down, draining or not yet added: never free
 *   C              the committer is still accounting (bitmap, counters, profile); it
 *                  clears C with a plain store-release when done
 *   R              the holder is releasing it (one releaser wins this bit; the word then
 *                  goes to free or OFFLINE with a plain store-release)
 *   P              the holder's non-zero interference profile is in ru_tenant and in the
 *                  machine's sums
 *   gen            advances on every release or revocation, so a lease {ru, gen} names
 *                  one tenure of one RU and a stale lease cannot end a later one (ABA).
 * Only the thread that set C or R changes a word that has it; everybody else (topology
 * changes) waits for it to clear, so the accounting of one tenure is never interleaved
 * with another transition of the same RU.
 */
#define RUSK_W_OWNER_SHIFT  24
#define RUSK_W_RELEASING    (UINT64_C(1) << 23)
#define RUSK_W_COMMITTING   (UINT64_C(1) << 22)
#define RUSK_W_PROFILE      (UINT64_C(1) << 21)
#define RUSK_W_TRANSIENT    (RUSK_W_RELEASING | RUSK_W_COMMITTING)
#define RUSK_W_GEN          ((uint64_t)RUSK_GEN_MASK)
#define RUSK_OWNER_OFFLINE  ((UINT64_C(1) << 40) - 1)
#define RUSK_W_OFFLINE(gen) ((RUSK_OWNER_OFFLINE << RUSK_W_OWNER_SHIFT) | (gen))
_Static_assert(RUSK_OWNER_OFFLINE == RUSK_OWNER_NONE, "public and internal offline owner");

static inline uint32_t rusk_gen_next(uint64_t w)
{
	return (uint32_t)((w + 1) & RUSK_W_GEN);
}

static inline uint64_t rusk_w_owner(uint64_t w)
{
	return w >> RUSK_W_OWNER_SHIFT;
}
static inline uint32_t rusk_w_gen(uint64_t w)
{
	return (uint32_t)(w & RUSK_W_GEN);
}

#endif /* RUSK_KERNEL_WORD_H */
