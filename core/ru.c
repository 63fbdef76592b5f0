/* SPDX-License-Identifier: MIT */
/*
 * The master RU array: optimistic commits by compare-and-swap (ParSync §1/§4.1, Omega's
 * shared state; Tarcil §5.1 "lock-free optimistic concurrency", §5.3 gang vs incremental).
 *
 * Algorithm. Each RU is one 64-bit word (layout in internal.h). A commit loads the word
 * and, if free, CASes it to {owner = task, same gen}; a CAS that finds the RU taken is a
 * conflict and the caller resamples. A release checks owner and generation against the
 * lease, then CASes the word to {free, gen + 1}. No locks, no retries except when a free
 * word changed under the CAS (it can only have been taken and freed again).
 *
 * Memory orders. The successful commit CAS is an acquire; the release CAS is a release.
 * They pair: everything a holder wrote before releasing (including its read of the
 * tenant profile slot) happens-before the next holder's writes to that slot.
 *
 * Counters. Per-machine and per-partition free counters and the machine interference sums
 * are updated with relaxed atomics beside the CAS, in this order:
 *   commit:  CAS (take)                     then  free -= 1, sums += profile
 *   release: free += 1, sums -= profile     then  CAS (free); undone if the CAS fails
 * so a counter is always (free RUs) + (commits between CAS and decrement) + (releases
 * between increment and CAS): never negative, and exact at quiescence, which
 * rusk_cluster_verify checks. A release's CAS can only fail when the same lease is
 * released twice at once (nobody else may change a taken word), and its undo restores
 * every counter, so even that misuse leaves them exact.
 *
 * Invariants: an RU has at most one holder; a holder's lease names exactly one tenure;
 * at quiescence counters equal a recount of the array.
 *
 * Why not a lock per machine: commits on different RUs of one machine would serialise and
 * a stalled holder would stall every agent sampling that machine; a CAS never waits.
 */
#include <string.h>

#include "atomic.h"
#include "internal.h"

static inline bool profile_valid(const rusk_profile *p)
{
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		if (p->c[i] > 99)
			return false;
	return true;
}

static inline bool packed_zero(const rusk_packed *p)
{
	return (p->w[0] | p->w[1] | p->w[2]) == 0;
}

static inline void machine_add(rusk_machine *m, const rusk_packed *p, bool sub)
{
	for (int i = 0; i < RUSK_LANE_WORDS; i++)
		if (p->w[i] != 0)
			rusk_faa64(&m->interf[i], sub ? (uint64_t)0 - p->w[i] : p->w[i],
			           RUSK_RELAXED);
}

static inline void counters_add(rusk_cluster *c, rusk_machine *m, uint32_t d)
{
	/* Relaxed: statistics, see the design note; d is +1 or -1 (mod 2^32). */
	rusk_faa32(&m->free_rus, d, RUSK_RELAXED);
	rusk_faa32(&c->parts[m->partition].free_rus, d, RUSK_RELAXED);
}

/* One commit; arguments already validated. */
static inline int commit_one(rusk_cluster *c, uint64_t task, uint32_t ru, const rusk_profile *prof,
                             const rusk_packed *packed, rusk_lease *out)
{
	uint64_t *w = &c->ru_word[ru];
	uint64_t cur = rusk_load64(w, RUSK_RELAXED); /* a guess; the CAS validates it */
	uint64_t flag = packed_zero(packed) ? 0 : RUSK_W_PROFILE;
	for (;;) {
		uint64_t owner = rusk_w_owner(cur);
		if (owner != 0)
			return owner == task ? RUSK_EDUP : RUSK_ECONFLICT;
		uint64_t next = (task << RUSK_W_OWNER_SHIFT) | flag | (cur & RUSK_W_GEN);
		/* Acquire: pairs with the release CAS of the previous holder in release_one. */
		if (rusk_cas64(w, &cur, next, RUSK_ACQUIRE))
			break;
	}
	rusk_machine *m = &c->machines[c->ru_machine[ru]];
	if (flag) {
		/* Only the holder writes its slot; the previous holder's reads are ordered
		 * before by the CAS pair above. */
		c->ru_tenant[ru] = *prof;
		machine_add(m, packed, false);
	}
	counters_add(c, m, (uint32_t)-1);
	out->ru = ru;
	out->gen = rusk_w_gen(cur);
	return RUSK_OK;
}

static inline int release_one(rusk_cluster *c, uint64_t task, rusk_lease l)
{
	uint64_t *w = &c->ru_word[l.ru];
	rusk_machine *m = &c->machines[c->ru_machine[l.ru]];
	uint64_t cur = rusk_load64(w, RUSK_RELAXED); /* validated by the CAS below */
	for (;;) {
		uint64_t owner = rusk_w_owner(cur);
		if (owner == 0)
			return RUSK_EFREE;
		if (owner != task)
			return RUSK_ENOTOWNER;
		if (rusk_w_gen(cur) != l.gen)
			return RUSK_ESTALE;
		rusk_packed packed = {{0, 0, 0}};
		if (cur & RUSK_W_PROFILE) {
			packed = rusk_pack_profile(&c->ru_tenant[l.ru]);
			machine_add(m, &packed, true);
		}
		counters_add(c, m, 1);
		uint64_t next = (cur & RUSK_W_GEN) == RUSK_W_GEN ? 0 : (cur & RUSK_W_GEN) + 1;
		/* Release: pairs with the acquire CAS of the next holder in commit_one. */
		if (rusk_cas64(w, &cur, next, RUSK_RELEASE))
			return RUSK_OK;
		/* The same lease was released concurrently: undo and report what we see. */
		counters_add(c, m, (uint32_t)-1);
		if (!packed_zero(&packed))
			machine_add(m, &packed, false);
	}
}

static inline int check_task(const rusk_cluster *c, uint64_t task)
{
	if (c == NULL || task == 0 || task > RUSK_TASK_ID_MAX)
		return RUSK_EINVAL;
	return RUSK_OK;
}

static inline int prep_profile(const rusk_profile *prof, rusk_packed *packed)
{
	if (prof == NULL) {
		*packed = (rusk_packed){{0, 0, 0}};
		return RUSK_OK;
	}
	if (!profile_valid(prof))
		return RUSK_EINVAL;
	*packed = rusk_pack_profile(prof);
	return RUSK_OK;
}

RUSK_EXPORT int rusk_ru_commit(rusk_cluster *c, uint64_t task, uint32_t ru,
                               const rusk_profile *prof, rusk_lease *out)
{
	if (check_task(c, task) != RUSK_OK || out == NULL)
		return RUSK_EINVAL;
	if (ru >= c->n_rus)
		return RUSK_ERANGE;
	rusk_packed packed;
	if (prep_profile(prof, &packed) != RUSK_OK)
		return RUSK_EINVAL;
	return commit_one(c, task, ru, prof, &packed, out);
}

RUSK_EXPORT int rusk_ru_release(rusk_cluster *c, uint64_t task, rusk_lease lease)
{
	if (check_task(c, task) != RUSK_OK || lease.gen > RUSK_GEN_MASK)
		return RUSK_EINVAL;
	if (lease.ru >= c->n_rus)
		return RUSK_ERANGE;
	return release_one(c, task, lease);
}

static int multi_prep(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                      const rusk_profile *prof, rusk_lease *out, rusk_packed *packed)
{
	if (check_task(c, task) != RUSK_OK || (n > 0 && (rus == NULL || out == NULL)))
		return RUSK_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (rus[i] >= c->n_rus)
			return RUSK_ERANGE;
	return prep_profile(prof, packed);
}

static void rollback(rusk_cluster *c, uint64_t task, const rusk_lease *taken, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		/* Cannot fail: the leases were never handed out. */
		int rc = release_one(c, task, taken[i]);
		(void)rc;
	}
}

RUSK_EXPORT int rusk_ru_commit_gang(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                                    const rusk_profile *prof, rusk_lease *out, size_t *lost_at)
{
	rusk_packed packed;
	int rc = multi_prep(c, task, rus, n, prof, out, &packed);
	if (rc != RUSK_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = commit_one(c, task, rus[i], prof, &packed, &out[i]);
		if (RUSK_UNLIKELY(rc != RUSK_OK)) {
			rollback(c, task, out, i);
			if (lost_at != NULL)
				*lost_at = i;
			return rc;
		}
	}
	return RUSK_OK;
}

RUSK_EXPORT int rusk_ru_commit_incremental(rusk_cluster *c, uint64_t task, const uint32_t *rus,
                                           size_t n, const rusk_profile *prof, rusk_lease *out,
                                           size_t *n_won)
{
	rusk_packed packed;
	int rc = multi_prep(c, task, rus, n, prof, out, &packed);
	if (rc != RUSK_OK || n_won == NULL)
		return rc != RUSK_OK ? rc : RUSK_EINVAL;
	size_t won = 0;
	for (size_t i = 0; i < n; i++) {
		rc = commit_one(c, task, rus[i], prof, &packed, &out[won]);
		if (rc == RUSK_OK) {
			won++;
		} else if (rc != RUSK_ECONFLICT) {
			rollback(c, task, out, won);
			*n_won = 0;
			return rc;
		}
	}
	*n_won = won;
	return RUSK_OK;
}

RUSK_EXPORT int rusk_ru_release_many(rusk_cluster *c, uint64_t task, const rusk_lease *leases,
                                     size_t n, size_t *n_rejected)
{
	if (check_task(c, task) != RUSK_OK || (n > 0 && leases == NULL))
		return RUSK_EINVAL;
	int first = RUSK_OK;
	size_t rejected = 0;
	for (size_t i = 0; i < n; i++) {
		int rc = rusk_ru_release(c, task, leases[i]);
		if (rc != RUSK_OK) {
			rejected++;
			if (first == RUSK_OK)
				first = rc;
		}
	}
	if (n_rejected != NULL)
		*n_rejected = rejected;
	return first;
}

RUSK_EXPORT int rusk_ru_state(const rusk_cluster *c, uint32_t ru, rusk_ru_info *out)
{
	if (c == NULL || out == NULL)
		return RUSK_EINVAL;
	if (ru >= c->n_rus)
		return RUSK_ERANGE;
	uint64_t w = rusk_load64(&c->ru_word[ru], RUSK_RELAXED); /* a snapshot, see contract */
	out->owner = rusk_w_owner(w);
	out->gen = rusk_w_gen(w);
	return RUSK_OK;
}
