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

#endif /* RUSK_KERNEL_SNAPSHOT_IMPL_H */
