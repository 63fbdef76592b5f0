/* SPDX-License-Identifier: MIT */
/*
 * The master RU array: optimistic commits by compare-and-swap (ParSync §1/§4.1, Omega's
 * shared state; Tarcil §5.1 "lock-free optimistic concurrency", §5.3 gang vs incremental).
 *
 * Algorithm. Each RU is one 64-bit word (layout in ru_impl.h) plus one bit of the free
 * bitmap that snapshots copy.
 *
 *   commit:  CAS free -> {T, C, P?, gen}     (acquire; a CAS that finds it taken: conflict)
 *            clear free bit, partition counter -= {1, score}
 *            [profile] write tenant slot, add to machine sums
 *            store {T, P?, gen}                (release: clears C)
 *   held commit (rusk_agent_place): the same without the last store: C stays set until
 *            place() publishes the lease (store {T, P?, gen}, release) just before it
 *            returns it, or unholds it (the release steps below, from C instead of R)
 *   release: check owner, gen against the lease
 *            CAS {T, gen} -> {T, gen, R}       (one releaser wins; a second sees R or free)
 *            [P] subtract tenant from machine sums
 *            machine UP:  set free bit, partition counter += {1, score}, store {free, gen+1}
 *            otherwise:   store {OFFLINE, gen+1}   (draining/failed machine, topology.c)
 *
 * Memory orders. The commit CAS is an acquire and the release's final store a release:
 * they pair, so whatever a holder did before releasing (including reading its tenant slot
 * and setting the free bit) happens-before the next holder's commit. The commit's final
 * store (clearing C, setting P) is a release that pairs with the acquire loads of
 * topology changes, which wait for C and R to clear before touching a word: a failer that
 * sees P sees the tenant slot and the sums that include it. The release's R CAS is followed by
 * rusk_fence_atomic_load before it reads the machine state; topology changes store the
 * state and then fence before scanning words (Dekker): either the releaser sees the new
 * state, or the topology scan sees the RU in R and waits for it (topology.c).
 *
 * Revocations and place() (issue 19). Topology changes wait for C to clear (topology.c),
 * so an RU that place() took cannot be revoked while place() is still deciding: the
 * failure waits for place() to publish or unhold it. A failure whose state store place()
 * sees when it checks the machines of its new RUs (agent.c, state_check) is reported by
 * place() itself: it unholds those RUs and counts them as conflicts. Every word a failure
 * revokes therefore has C clear and owner T: a lease the embedder was given (by place()'s
 * publish or a rusk_ru_commit* call), never a rolled-back or dropped one, and the CAS that
 * revokes it happens once per tenure, so the callback reports it exactly once. Orders:
 *   publish store (release, clears C)  ->  settle's acquire load in a failure, whose CAS
 *                                          then sees owner T and the tenant slot
 *   unhold's final store (release)     ->  settle's acquire load: the failure finds the
 *                                          word free or OFFLINE and reports nothing
 *   fail's state store (relaxed)       ->  place()'s state check needs no order: it only
 *                                          shortens the list of leases the callback names
 *
 * Counters. The free bit and the partition counter of an RU change only while its word
 * holds C or R (or inside a topology change that waited for both to clear), and those
 * windows are ordered by the acquire/release pairs above, so per RU they alternate exactly:
 * bits and counters are never negative and equal a recount at quiescence, which
 * rusk_cluster_verify checks. The partition counter packs the free count and the free
 * RUs' score sum into one word, updated with one fetch-and-add.
 *
 * Cost. A commit+release pair without profile is 2 CASes, 2 bitmap RMWs and 2 counter
 * adds (6 locked instructions) and two plain stores; perf/RESULTS.md has the figures.
 *
 * Why not a lock per machine: commits on different RUs of one machine would serialise and
 * a stalled holder would stall every agent sampling that machine; a CAS never waits.
 */
#include <sched.h>
#include <string.h>

#include "base/atomic.h"
#include "kernel/ru_impl.h"
#include "kernel/task.h"
#include "kernel/vec_impl.h"

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

void rusk_machine_sums_(rusk_machine *m, const rusk_packed *p, bool sub)
{
	for (int i = 0; i < RUSK_LANE_WORDS; i++)
		if (p->w[i] != 0) /* relaxed: statistics, exact at quiescence */
			rusk_faa64(&m->interf[i], sub ? (uint64_t)0 - p->w[i] : p->w[i],
			           RUSK_RELAXED);
}

/* Marks RU free (+1) or taken (-1) in the bitmap and the partition counter. Relaxed: the
 * word transitions around these calls order them (see the design note). */
void rusk_ru_account_(rusk_cluster *c, uint32_t ru, rusk_machine *m, bool now_free)
{
	uint32_t b = rusk_ru_bit(c, ru, m);
	uint64_t mask = UINT64_C(1) << (b % 64);
	uint64_t d = rusk_pc_delta(c->ru_score[ru]);
	if (now_free) {
		rusk_or64(&c->free_bits[b / 64], mask, RUSK_RELAXED);
		rusk_faa64(&c->parts[m->partition].counter, d, RUSK_RELAXED);
	} else {
		rusk_and64(&c->free_bits[b / 64], ~mask, RUSK_RELAXED);
		rusk_faa64(&c->parts[m->partition].counter, (uint64_t)0 - d, RUSK_RELAXED);
	}
}

/*
 * One commit; arguments already validated. With hold (rusk_agent_place's commits) the word
 * keeps C after the accounting: topology changes wait for it (settle), so nothing can revoke
 * the RU until place() publishes it (rusk_ru_publish_) or gives it back (rusk_ru_unhold_).
 * P goes into the CAS with C: every reader of P waits for C to clear first.
 */
static inline int commit_one(rusk_cluster *c, uint64_t task, uint32_t ru, const rusk_profile *prof,
                             const rusk_packed *packed, rusk_lease *out, bool hold)
{
	uint64_t *w = &c->ru_word[ru];
	uint64_t cur = rusk_load64(w, RUSK_RELAXED); /* a guess; the CAS validates it */
	bool profiled = !packed_zero(packed);
	uint64_t next;
	for (;;) {
		uint64_t owner = rusk_w_owner(cur);
		if (owner != 0)
			return owner == task                 ? RUSK_EDUP
			       : owner == RUSK_OWNER_OFFLINE ? RUSK_EOFFLINE
			                                     : RUSK_ECONFLICT;
		next = (task << RUSK_W_OWNER_SHIFT) | (cur & RUSK_W_GEN) |
		       (profiled ? RUSK_W_PROFILE : 0);
		/* Acquire: pairs with the release store that freed the word. */
		if (rusk_cas64(w, &cur, next | RUSK_W_COMMITTING, RUSK_ACQUIRE))
			break;
	}
	rusk_machine *m = &c->machines[c->ru_machine[ru]];
	rusk_ru_account_(c, ru, m, false);
	if (profiled) {
		/* Only the holder writes its slot; earlier readers are ordered before by the
		 * CAS above. */
		c->ru_tenant[ru] = *prof;
		rusk_machine_sums_(m, packed, false);
	}
	/* Release: clears C; pairs with the acquire loads of a topology change (settle) and
	 * of a release of this lease. Nobody else writes a word holding C. */
	if (!hold)
		rusk_store64(w, next, RUSK_RELEASE);
	rusk_observe_(c, c->ru_machine[ru], profiled);
	out->ru = ru;
	out->gen = rusk_w_gen(next);
	return RUSK_OK;
}

/* The second half of a release, once the caller owns the word through R (release_one) or
 * C (an unpublished commit of place()): cur is the word as the caller set it. */
static inline void release_owned(rusk_cluster *c, uint32_t ru, uint64_t cur)
{
	uint64_t *w = &c->ru_word[ru];
	rusk_machine *m = &c->machines[c->ru_machine[ru]];
	if (cur & RUSK_W_PROFILE) {
		rusk_packed packed = rusk_pack_profile(&c->ru_tenant[ru]);
		rusk_machine_sums_(m, &packed, true);
	}
	rusk_vec_end_(c, ru); /* memory and GPU shares recorded on this RU go back (vec.c) */
	/* Dekker with topology changes: our R CAS, then their state. */
	rusk_fence_atomic_load();
	uint32_t gen = rusk_gen_next(cur);
	if (RUSK_LIKELY(rusk_load32(&m->state, RUSK_RELAXED) == RUSK_M_UP)) {
		rusk_ru_account_(c, ru, m, true);
		/* Release: pairs with the next committer's acquire CAS. */
		rusk_store64(w, gen, RUSK_RELEASE);
	} else {
		rusk_store64(w, RUSK_W_OFFLINE(gen), RUSK_RELEASE);
	}
	rusk_observe_(c, c->ru_machine[ru], (cur & RUSK_W_PROFILE) != 0);
}

static inline int release_one(rusk_cluster *c, uint64_t task, rusk_lease l)
{
	uint64_t *w = &c->ru_word[l.ru];
	uint64_t cur = rusk_load64(w, RUSK_RELAXED); /* validated by the CAS below */
	for (;;) {
		uint64_t owner = rusk_w_owner(cur);
		if (owner == 0)
			return RUSK_EFREE;
		if (owner == RUSK_OWNER_OFFLINE)
			return RUSK_EOFFLINE;
		if (owner != task)
			return RUSK_ENOTOWNER;
		if (rusk_w_gen(cur) != l.gen)
			return RUSK_ESTALE;
		if (cur & RUSK_W_TRANSIENT)
			return RUSK_EFREE; /* the same lease is being released right now */
		/* Acquire: if P is set, pairs with the committer's release CAS (slot visible). */
		if (rusk_cas64(w, &cur, cur | RUSK_W_RELEASING, RUSK_ACQUIRE))
			break;
	}
	release_owned(c, l.ru, cur);
	return RUSK_OK;
}

void rusk_ru_publish_(rusk_cluster *c, rusk_lease l)
{
	uint64_t *w = &c->ru_word[l.ru];
	/* Relaxed: our own last write (the commit CAS); nobody else writes a word with C. */
	uint64_t cur = rusk_load64(w, RUSK_RELAXED);
	/* Release: clears C, as a plain commit's final store (pairs with settle). */
	rusk_store64(w, cur & ~RUSK_W_COMMITTING, RUSK_RELEASE);
}

void rusk_ru_unhold_(rusk_cluster *c, rusk_lease l)
{
	/* Relaxed: our own last write, as above. */
	release_owned(c, l.ru, rusk_load64(&c->ru_word[l.ru], RUSK_RELAXED));
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

static inline int commit_checked(rusk_cluster *c, uint64_t task, uint32_t ru,
                                 const rusk_profile *prof, rusk_lease *out, bool hold)
{
	if (check_task(c, task) != RUSK_OK || out == NULL)
		return RUSK_EINVAL;
	if (ru >= c->n_rus)
		return RUSK_ERANGE;
	rusk_packed packed;
	if (prep_profile(prof, &packed) != RUSK_OK)
		return RUSK_EINVAL;
	return commit_one(c, task, ru, prof, &packed, out, hold);
}

RUSK_EXPORT int rusk_ru_commit(rusk_cluster *c, uint64_t task, uint32_t ru,
                               const rusk_profile *prof, rusk_lease *out)
{
	return commit_checked(c, task, ru, prof, out, false);
}

int rusk_ru_commit_held_(rusk_cluster *c, uint64_t task, uint32_t ru, const rusk_profile *prof,
                         rusk_lease *out)
{
	return commit_checked(c, task, ru, prof, out, true);
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

void (*rusk_fault_gang_member)(uint64_t task, size_t taken, size_t n);

/* Gives back what a failed multi-RU commit took: releases, or for held words unholds. */
static void rollback(rusk_cluster *c, uint64_t task, const rusk_lease *taken, size_t n, bool hold)
{
	for (size_t i = 0; i < n; i++) {
		if (hold) {
			rusk_ru_unhold_(c, taken[i]); /* held: nobody else can have changed it */
			continue;
		}
		/* Fails only if a machine failure revoked the RU meanwhile: then it is
		 * already offline and reported, and there is nothing to undo. */
		int rc = release_one(c, task, taken[i]);
		(void)rc;
	}
}

static inline int commit_gang(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                              const rusk_profile *prof, rusk_lease *out, size_t *lost_at, bool hold)
{
	rusk_packed packed;
	int rc = multi_prep(c, task, rus, n, prof, out, &packed);
	if (rc != RUSK_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		rc = commit_one(c, task, rus[i], prof, &packed, &out[i], hold);
		if (RUSK_UNLIKELY(rc != RUSK_OK)) {
			rollback(c, task, out, i, hold);
			if (lost_at != NULL)
				*lost_at = i;
			return rc;
		}
		if (RUSK_UNLIKELY(rusk_fault_gang_member != NULL))
			rusk_fault_gang_member(task, i + 1, n);
	}
	return RUSK_OK;
}

RUSK_EXPORT int rusk_ru_commit_gang(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                                    const rusk_profile *prof, rusk_lease *out, size_t *lost_at)
{
	return commit_gang(c, task, rus, n, prof, out, lost_at, false);
}

int rusk_ru_commit_gang_held_(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                              const rusk_profile *prof, rusk_lease *out, size_t *lost_at)
{
	return commit_gang(c, task, rus, n, prof, out, lost_at, true);
}

static inline int commit_incremental(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                                     const rusk_profile *prof, rusk_lease *out, size_t *n_won,
                                     bool hold)
{
	rusk_packed packed;
	int rc = multi_prep(c, task, rus, n, prof, out, &packed);
	if (rc != RUSK_OK || n_won == NULL)
		return rc != RUSK_OK ? rc : RUSK_EINVAL;
	size_t won = 0;
	for (size_t i = 0; i < n; i++) {
		rc = commit_one(c, task, rus[i], prof, &packed, &out[won], hold);
		if (rc == RUSK_OK) {
			won++;
		} else if (rc != RUSK_ECONFLICT && rc != RUSK_EOFFLINE) {
			rollback(c, task, out, won, hold);
			*n_won = 0;
			return rc;
		}
	}
	*n_won = won;
	return RUSK_OK;
}

RUSK_EXPORT int rusk_ru_commit_incremental(rusk_cluster *c, uint64_t task, const uint32_t *rus,
                                           size_t n, const rusk_profile *prof, rusk_lease *out,
                                           size_t *n_won)
{
	return commit_incremental(c, task, rus, n, prof, out, n_won, false);
}

int rusk_ru_commit_incremental_held_(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                                     const rusk_profile *prof, rusk_lease *out, size_t *n_won)
{
	return commit_incremental(c, task, rus, n, prof, out, n_won, true);
}

/* RUs of one machine, listed once each? */
static int one_machine(const rusk_cluster *c, const uint32_t *rus, size_t n)
{
	uint32_t m = c->ru_machine[rus[0]];
	for (size_t i = 1; i < n; i++)
		if (c->ru_machine[rus[i]] != m)
			return RUSK_EINVAL;
	return RUSK_OK;
}

/* The vector commit (rusk/ru.h): the gang held, then the shares, then the record on the
 * lowest RU, then the publish of every lease (vec.c has the orders). */
RUSK_EXPORT int rusk_ru_commit_vec(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                                   const rusk_vec_demand *vec, const rusk_profile *prof,
                                   rusk_lease *out, size_t *lost_at)
{
	if (c == NULL || vec == NULL || rus == NULL || out == NULL || n == 0)
		return RUSK_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (rus[i] >= c->n_rus)
			return RUSK_ERANGE;
	if (one_machine(c, rus, n) != RUSK_OK)
		return RUSK_EINVAL;
	rusk_task t = {.id = task,
	               .rus = (uint32_t)n,
	               .gang = true,
	               .placement = RUSK_PLACE_MACHINE,
	               .vec = *vec};
	const char *field;
	int rc = rusk_vec_check_(c, &t, &field, NULL, 0);
	if (rc == RUSK_EINVAL)
		return rc;
	uint32_t m = c->ru_machine[rus[0]];
	if (!rusk_vec_shape_fits_(c, m, vec))
		return RUSK_EINFEASIBLE;
	rc = commit_gang(c, task, rus, n, prof, out, lost_at, true);
	if (rc != RUSK_OK)
		return rc;
	uint64_t rec;
	if (rusk_vec_take_(c, m, vec, &rec) != RUSK_OK) {
		rollback(c, task, out, n, true);
		if (lost_at != NULL)
			*lost_at = n;
		return RUSK_ECONFLICT;
	}
	size_t lo = 0;
	for (size_t i = 1; i < n; i++)
		lo = rus[i] < rus[lo] ? i : lo;
	c->ru_vec[rus[lo]] = rec; /* C is set: nobody else reads it before the publish */
	for (size_t i = 0; i < n; i++)
		rusk_ru_publish_(c, out[i]);
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

RUSK_EXPORT int rusk_ru_reclaim(rusk_cluster *c, bool (*dead)(uint64_t task, void *ctx),
                                rusk_revoke_fn reclaimed, void *ctx, size_t *n_reclaimed,
                                size_t *stuck)
{
	if (c == NULL || dead == NULL)
		return RUSK_EINVAL;
	size_t n = 0, n_stuck = 0;
	for (uint32_t ru = 0; ru < c->n_rus; ru++) {
		uint64_t w = rusk_load64(&c->ru_word[ru], RUSK_ACQUIRE);
		uint64_t owner = rusk_w_owner(w);
		if (owner == 0 || owner == RUSK_OWNER_OFFLINE || !dead(owner, ctx))
			continue;
		/* A live holder finishes C or R in nanoseconds; a dead one never does. */
		for (unsigned spins = 0; (w & RUSK_W_TRANSIENT) && spins < 10000; spins++) {
			if (spins > 64)
				sched_yield();
			w = rusk_load64(&c->ru_word[ru], RUSK_ACQUIRE);
		}
		if (w & RUSK_W_TRANSIENT) {
			n_stuck++;
			continue;
		}
		if (rusk_w_owner(w) != owner)
			continue; /* released or revoked meanwhile */
		rusk_lease l = {ru, rusk_w_gen(w)};
		if (release_one(c, owner, l) == RUSK_OK) {
			n++;
			if (reclaimed != NULL)
				reclaimed(owner, l, ctx);
		}
	}
	if (n_reclaimed != NULL)
		*n_reclaimed = n;
	if (stuck != NULL)
		*stuck = n_stuck;
	return RUSK_OK;
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
