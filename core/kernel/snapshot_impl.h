/* SPDX-License-Identifier: MIT */
/*
 * Partition snapshots (core/kernel/snapshot.c) and thread registration. Not installed.
 */
#ifndef RUSK_KERNEL_SNAPSHOT_IMPL_H
#define RUSK_KERNEL_SNAPSHOT_IMPL_H

#include "kernel/layout.h"

/* A published partition snapshot (snapshot.c); immutable once published. */
typedef struct rusk_snap {
	uint8_t rcu_head_[16]; /* struct rcu_head, kept opaque here (snapshot.c asserts) */
	struct rusk_cluster *c;
	uint64_t version, taken_ns;
	uint32_t partition, first_ru, n_rus, n_words, free_rus;
	double mean_free_score;
	uint32_t platform_free[RUSK_MAX_PLATFORMS];
	uint64_t *nz;     /* [(n_words + 63) / 64], after words: bit i = (words[i] != 0), the
	                   * summary a view's pick selects with (view.c) */
	uint16_t *cnt;    /* [(n_words + 63) / 64], after nz: free RUs in words 64j..64j+63 */
	uint64_t words[]; /* bit (ru - first_ru) = free */
} rusk_snap;

/* Snapshots (snapshot.c). get_ inside a read-side section; reader_done_ after the last
 * read of it (a TSan annotation, free otherwise). */
int rusk_snap_publish_(rusk_cluster *c, uint32_t p);
const rusk_snap *rusk_snap_get_(rusk_cluster *c, uint32_t p);
void rusk_snap_reader_done_(const rusk_snap *s);
/* Snapshot store (snapshot.c): frees every published snapshot; destroy only. */
void rusk_snap_store_destroy_(rusk_cluster *c);

/* Free RUs per platform type of a partition's free bitmap w[0..n_words) that starts at
 * bit first_bit of the cluster's, into out[0..n_platforms) (free_rus: the bitmap's whole
 * count, the one platform's when there is one). A snapshot's publish and a view's remote
 * sync count the same way. */
static inline void rusk_platform_free_(const rusk_cluster *c, uint32_t first_bit, const uint64_t *w,
                                       uint32_t n_words, uint32_t free_rus, uint32_t *out)
{
	if (c->n_platforms == 1) {
		out[0] = free_rus;
		return;
	}
	for (uint32_t k = 0; k < c->n_platforms; k++) {
		const uint64_t *mask = c->plat_bits + (size_t)k * c->n_words + first_bit / 64;
		uint32_t n = 0;
		for (uint32_t i = 0; i < n_words; i++)
			n += (uint32_t)__builtin_popcountll(w[i] & mask[i]);
		out[k] = n;
	}
}

#endif /* RUSK_KERNEL_SNAPSHOT_IMPL_H */
