/* SPDX-License-Identifier: MIT */
/*
 * Partition snapshots published with RCU (ParSync §5.1: the master state is synchronised
 * per partition, so each agent refreshes its own partitions at its own time).
 *
 * A snapshot of partition p is a copy of p's words of the free bitmap (ru.c keeps the
 * bitmap beside the RU words) plus summaries computed from the copy: free count, free
 * count per platform type (AND with static platform masks, popcount), and the mean slot
 * score of the free RUs (from the partition's packed counter). taken_ns is read from the
 * cluster clock before copying, so the data is never older than it claims.
 *
 * Publication: versions come from a per-partition counter; a new snapshot replaces the
 * current one with rcu_cmpxchg_pointer unless a newer version is already there (then the
 * new one is freed unpublished). The replaced one is handed to call_rcu and freed after a
 * grace period, i.e. once no reader that could hold it is inside a read-side section.
 * Readers use rcu_dereference inside rcu_read_lock. Nobody waits for anybody.
 *
 * Flavour: liburcu memb (urcu-memb), without _LGPL_SOURCE, chosen once for rusk (docs/design.md).
 *
 * ThreadSanitizer: liburcu 0.13's barriers are inline assembly that TSan cannot see, so in
 * TSan builds the publish/read pair and the reader/reclaimer pair are annotated with
 * __tsan_release/__tsan_acquire on the snapshot's address (else TSan reports the
 * snapshot's contents as racing between publisher and reader); the algorithm is
 * unchanged.
 */
#include <stdlib.h>
#include <string.h>

#include <urcu/urcu-memb.h>

#include "base/alloc.h"
#include "base/atomic.h"
#include "kernel/snapshot_impl.h"

_Static_assert(sizeof(struct rcu_head) <= sizeof(((rusk_snap *)0)->rcu_head_),
               "rcu_head fits the reserved bytes");

#if defined(RUSK_TSAN)
/* Snapshots an embedder got inside the current read-side section; released to TSan at
 * rusk_read_unlock, when its reads of them are done. */
#define TSAN_HELD_MAX 64
static __thread const void *tsan_held[TSAN_HELD_MAX];
static __thread int tsan_n_held;
#endif

RUSK_EXPORT void rusk_rcu_barrier(void)
{
	urcu_memb_barrier();
}

RUSK_EXPORT void rusk_read_lock(void)
{
	urcu_memb_read_lock();
}

RUSK_EXPORT void rusk_read_unlock(void)
{
#if defined(RUSK_TSAN)
	for (int i = 0; i < tsan_n_held; i++)
		TSAN_RELEASE(tsan_held[i]);
	tsan_n_held = 0;
#endif
	urcu_memb_read_unlock();
}

static void snap_free_cb(struct rcu_head *head)
{
	rusk_snap *s = (rusk_snap *)(void *)head;
	TSAN_ACQUIRE(s); /* after every reader's release in rusk_snapshot_reader_done_ */
	rusk_faa64(&s->c->snap_freed, 1, RUSK_RELAXED);
	free(s);
}

static rusk_snap *snap_build(rusk_cluster *c, uint32_t p)
{
	const rusk_partition *pp = &c->parts[p];
	uint32_t n_words = (pp->n_rus + 63) / 64, n_nz = (n_words + 63) / 64;
	rusk_snap *s = rusk_fault_alloc_()
	                       ? NULL
	                       : malloc(sizeof *s + sizeof(uint64_t) * ((size_t)n_words + n_nz) +
	                                sizeof(uint16_t) * n_nz);
	if (s == NULL)
		return NULL;
	memset(s, 0, sizeof *s);
	s->nz = s->words + n_words;
	memset(s->nz, 0, sizeof(uint64_t) * n_nz);
	s->cnt = (uint16_t *)(s->nz + n_nz);
	memset(s->cnt, 0, sizeof(uint16_t) * n_nz);
	s->c = c;
	s->partition = p;
	s->first_ru = pp->first_ru;
	s->n_rus = pp->n_rus;
	s->n_words = n_words;
	/* Relaxed: the version orders publishes, nothing else. */
	s->version = rusk_faa64(&c->parts[p].version, 1, RUSK_RELAXED) + 1;
	s->taken_ns = rusk_now_(c);
	const uint64_t *src = c->free_bits + pp->first_bit / 64;
	uint32_t free_rus = 0;
	for (uint32_t i = 0; i < n_words; i++) {
		/* Relaxed: a snapshot is a racy copy by design; each bit is some recent value. */
		uint64_t w = rusk_load64(&src[i], RUSK_RELAXED);
		s->words[i] = w;
		s->nz[i / 64] |= (uint64_t)(w != 0) << (i % 64);
		s->cnt[i / 64] += (uint16_t)__builtin_popcountll(w);
		free_rus += (uint32_t)__builtin_popcountll(w);
	}
	s->free_rus = free_rus;
	rusk_platform_free_(c, pp->first_bit, s->words, n_words, free_rus, s->platform_free);
	uint64_t pc = rusk_load64(&pp->counter, RUSK_RELAXED); /* statistic */
	uint64_t cf = pc & RUSK_PC_FREE_MASK;
	s->mean_free_score = cf ? (double)(pc >> RUSK_PC_FREE_BITS) / 1000.0 / (double)cf : 0.0;
	rusk_faa64(&c->snap_allocated, 1, RUSK_RELAXED);
	return s;
}

/* Installs s as p's snapshot unless a newer one is there; returns whether it did. */
static bool snap_install(rusk_cluster *c, uint32_t p, rusk_snap *s)
{
	rusk_partition *pp = &c->parts[p];
	urcu_memb_read_lock();
	rusk_snap *old = rcu_dereference(pp->snap);
	for (;;) {
		uint64_t old_version = 0;
		if (old != NULL) {
			TSAN_ACQUIRE(old); /* its publisher's writes ... */
			old_version = old->version;
			TSAN_RELEASE(old); /* ... and our read, before its reclamation */
		}
		if (old != NULL && old_version > s->version) {
			urcu_memb_read_unlock();
			rusk_faa64(&c->snap_freed, 1, RUSK_RELAXED);
			free(s); /* never published: nobody can hold it */
			return false;
		}
		/* Everything we wrote or read of s happens before its publication: pairs with
		 * TSAN_ACQUIRE after rcu_dereference and in snap_free_cb. */
		TSAN_RELEASE(s);
		rusk_snap *seen = rcu_cmpxchg_pointer(&pp->snap, old, s);
		if (seen == old)
			break;
		old = seen;
	}
	urcu_memb_read_unlock();
	if (old != NULL)
		urcu_memb_call_rcu((struct rcu_head *)(void *)old->rcu_head_, snap_free_cb);
	return true;
}

int rusk_snap_publish_(rusk_cluster *c, uint32_t p)
{
	/* Covers rusk_view_sync and _tick too: both publish (or look, rusk_snap_get_) first. */
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	rusk_snap *s = snap_build(c, p);
	if (s == NULL)
		return RUSK_ENOMEM;
	snap_install(c, p, s);
	return RUSK_OK;
}

RUSK_EXPORT int rusk_snapshot_publish(rusk_cluster *c, uint32_t p)
{
	if (c == NULL)
		return RUSK_EINVAL;
	if (p >= c->n_parts)
		return RUSK_ERANGE;
	return rusk_snap_publish_(c, p);
}

const rusk_snap *rusk_snap_get_(rusk_cluster *c, uint32_t p)
{
	/* No pointer for an unregistered reader: grace periods do not wait for it. */
	if (RUSK_UNREGISTERED_())
		return NULL;
	rusk_snap *s = rcu_dereference(c->parts[p].snap);
	if (s != NULL)
		TSAN_ACQUIRE(s);
	return s;
}

void rusk_snap_reader_done_(const rusk_snap *s)
{
	(void)s;
	TSAN_RELEASE(s); /* pairs with TSAN_ACQUIRE in snap_free_cb */
}

RUSK_EXPORT const rusk_snapshot *rusk_snapshot_get(rusk_cluster *c, uint32_t p)
{
	if (c == NULL || p >= c->n_parts)
		return NULL;
	const rusk_snap *s = rusk_snap_get_(c, p);
#if defined(RUSK_TSAN)
	if (s != NULL) {
		if (tsan_n_held < TSAN_HELD_MAX)
			tsan_held[tsan_n_held++] = s;
		else
			TSAN_RELEASE(s); /* over the bound: annotate early, TSan may then warn */
	}
#endif
	return (const rusk_snapshot *)s;
}

RUSK_EXPORT void rusk_snapshot_info_get(const rusk_snapshot *ss, rusk_snapshot_info *out)
{
	const rusk_snap *s = (const rusk_snap *)ss;
	if (out == NULL)
		return;
	if (s == NULL) {
		memset(out, 0, sizeof *out);
		return;
	}
	out->partition = s->partition;
	out->version = s->version;
	out->taken_ns = s->taken_ns;
	out->rus = s->n_rus;
	out->free_rus = s->free_rus;
	out->mean_free_score = s->mean_free_score;
	memcpy(out->platform_free, s->platform_free, sizeof out->platform_free);
}

RUSK_EXPORT bool rusk_snapshot_is_free(const rusk_snapshot *ss, uint32_t ru)
{
	const rusk_snap *s = (const rusk_snap *)ss;
	if (s == NULL || ru < s->first_ru || ru >= s->first_ru + s->n_rus)
		return false;
	uint32_t b = ru - s->first_ru;
	return (s->words[b / 64] >> (b % 64)) & 1;
}

RUSK_EXPORT uint32_t rusk_snapshot_recount(const rusk_snapshot *ss)
{
	const rusk_snap *s = (const rusk_snap *)ss;
	uint32_t n = 0;
	for (uint32_t i = 0; s != NULL && i < s->n_words; i++)
		n += (uint32_t)__builtin_popcountll(s->words[i]);
	return n;
}

RUSK_EXPORT void rusk_snapshot_counts(const rusk_cluster *c, uint64_t *allocated, uint64_t *freed)
{
	if (allocated != NULL)
		*allocated = c != NULL ? rusk_load64(&c->snap_allocated, RUSK_RELAXED) : 0;
	if (freed != NULL)
		*freed = c != NULL ? rusk_load64(&c->snap_freed, RUSK_RELAXED) : 0;
}

RUSK_EXPORT void rusk_snapshot_set_reuse_ns(rusk_cluster *c, uint64_t ns)
{
	if (c != NULL)
		c->snap_reuse_ns = ns;
}

void rusk_snap_store_destroy_(rusk_cluster *c)
{
	if (rusk_load64(&c->snap_allocated, RUSK_RELAXED) == 0)
		return;
	/* Wait for queued call_rcu callbacks (they touch c), then free the current ones:
	 * the contract says no thread uses the cluster any more. */
	urcu_memb_barrier();
	for (uint32_t p = 0; p < c->n_parts; p++) {
		rusk_snap *s = c->parts[p].snap;
		if (s != NULL) {
			TSAN_ACQUIRE(s);
			free(s);
		}
		c->parts[p].snap = NULL;
	}
}
