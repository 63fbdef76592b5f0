/* SPDX-License-Identifier: MIT */
/*
 * The master-state seam (issue 30; ParSync §7: "multiple RM instances ... handle different
 * partitions of the master state"). Four operations are all a scheduler needs of the state
 * it commits to: read one partition's free bitmap (a snapshot), commit a batch of machine
 * claims (RUs + memory + GPU shares, each all-or-nothing, owner = a task), release a batch
 * of leases with the ownership and generation checks of ru.c, and recount a partition.
 *
 * Two implementations: the in-memory RU array (backend_mem.c, the default, a thin wrapper
 * of ru.c and the free bitmap) and Redis Cluster (core/state/redis.c, one hash slot per
 * partition, Lua check-and-set scripts). The in-process agents (agent.c) call ru.c directly
 * unless a remote master state is attached to their cluster (remote.h: then views, commits
 * and releases go through this seam first, one connection per thread): the default path pays
 * one NULL test; agents in other processes (rusk agent --backend) use the seam directly.
 *
 * RU numbers are the cluster's global RU indices; words[] of a snapshot hold bit i (LSB
 * first, word i / 64) = RU first_ru + i of the partition is free, the layout of the kernel's
 * own snapshots (snapshot.c), so a view can copy it either way.
 *
 * Threads: one backend object is used by one thread at a time (a Redis connection is not
 * thread-safe; the memory backend would allow more, but the contract is the narrower one).
 */
#ifndef RUSK_KERNEL_BACKEND_H
#define RUSK_KERNEL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <rusk/ru.h>

/* One claim of a commit batch: n RUs of one machine for task, with vec's shares (all zero
 * for RUs only). rus[] ascending: rus[0] is the anchor that carries the shares' record. */
typedef struct rusk_bk_claim {
	uint64_t task;
	uint32_t machine;
	uint32_t n;
	const uint32_t *rus;
	rusk_vec_demand vec;
} rusk_bk_claim;

/* One lease to release, with its holder. */
typedef struct rusk_bk_lease {
	uint64_t task;
	rusk_lease lease;
} rusk_bk_lease;

/* What a recount of one partition found. */
typedef struct rusk_bk_count {
	uint64_t held;     /* RUs with an owner */
	uint64_t free;     /* RUs marked free */
	uint64_t mismatch; /* RUs whose free mark disagrees with their owner (must be 0) */
	uint64_t version;  /* the partition's version counter */
} rusk_bk_count;

typedef struct rusk_backend_ops {
	const char *name;
	/*
	 * snapshot: copies partition p's free bitmap into words[0..n_words) and its version.
	 * RUSK_OK, RUSK_ERANGE (p), RUSK_EINVAL (n_words too small), RUSK_EIO (backend).
	 */
	int (*snapshot)(void *self, uint32_t p, uint64_t *words, uint32_t n_words,
	                uint64_t *version);
	/*
	 * commit: n claims, all in partition p, sent together (one round trip for a remote
	 * backend). rcs[i] = RUSK_OK (leases[off..off+claims[i].n) hold the leases, off the
	 * sum of the earlier claims' n), RUSK_ECONFLICT (an RU is held or the shares are
	 * short: nothing taken), RUSK_EDUP, RUSK_EINVAL, RUSK_ERANGE, RUSK_EIO (unknown outcome:
	 * the recount settles it). Returns RUSK_OK when every claim got an answer.
	 */
	int (*commit)(void *self, uint32_t p, const rusk_bk_claim *claims, size_t n, int *rcs,
	              rusk_lease *leases);
	/* release: n leases of partition p; rcs[i] as rusk_ru_release's return. */
	int (*release)(void *self, uint32_t p, const rusk_bk_lease *ls, size_t n, int *rcs);
	/* recount: counts partition p (quiescence gives exact figures). */
	int (*recount)(void *self, uint32_t p, rusk_bk_count *out);
} rusk_backend_ops;

/* A backend: its operations and its state. */
typedef struct rusk_backend {
	const rusk_backend_ops *ops;
	void *self;
} rusk_backend;

/*
 * rusk_backend_memory_: the in-memory backend over cluster c (which must outlive it).
 * Fills *out; RUSK_EINVAL on NULL. Any thread.
 */
int rusk_backend_memory_(rusk_cluster *c, rusk_backend *out);

#endif /* RUSK_KERNEL_BACKEND_H */
