/* SPDX-License-Identifier: MIT */
/*
 * Online topology changes: machines fail, drain, or come (back) up while agents commit.
 *
 * A machine's state word (UP / DRAINING / DOWN) is read by every release right after its
 * R CAS; a change stores the new state, fences, then walks the machine's RU words. This
 * is a Dekker pair (release: RMW on the word, then load state; change: store state, then
 * load the word): at least one side sees the other. If the release saw the old state it
 * is still in R when the walk reaches it, and the walk waits for the word to settle
 * before handling it; otherwise the release itself routes the RU (offline when the
 * machine is not UP). The walk also waits out commits still accounting (C), so it never
 * interleaves with another transition's bitmap and counter updates. Waits are bounded spins that
 * fall back to sched_yield(), so a preempted releaser on a 2-core machine cannot hang the walk.
 *
 * fail:  every word -> OFFLINE (gen + 1): free ones leave the bitmap and counters, held
 *        ones are revoked and reported to the caller (task, lease), and their interference
 *        profile (P) leaves the machine's sums. Holders' later releases get RUSK_EOFFLINE.
 *        A word rusk_agent_place took keeps C until place() hands it out or gives it
 *        back (ru.c, "Revocations and place()"), so settle() waits for place() to decide:
 *        the callback then names only leases the embedder was given, once each, and a
 *        failure place() saw while deciding is place()'s to report. Orders added:
 *          place()'s publish store (release)  -> settle's acquire load here: the CAS
 *                                                 below sees owner T, P, the tenant slot
 *          place()'s unhold store (release)   -> settle's acquire load: free or OFFLINE,
 *                                                 nothing to report
 *          our state store (relaxed)          -> place()'s state check (relaxed, agent.c
 *                                                 keep_up): no order needed, a missed store
 *                                                 only moves the report to the callback
 *        The scheduling loop attached to the cluster (a dispatcher) hears of each
 *        revocation too, whatever callback the caller gave: its tasks never stay
 *        "running" on a dead machine because the caller forgot it.
 * drain: free words -> OFFLINE; held ones go offline when released (ru.c).
 * up:    OFFLINE words -> free (gen kept), bits and counters restored.
 *
 * Snapshots: the bitmap is what snapshots copy, so a DOWN machine's RUs are absent from
 * every snapshot built after the change returns (snapshot.c). Callers serialise changes of
 * one machine; changes of different machines may run concurrently.
 */
#include <sched.h>

#include "base/atomic.h"
#include "kernel/ru_impl.h"
#include "kernel/vec_impl.h"

/* Waits until a word leaves C or R (a commit or release accounting); returns it. */
static uint64_t settle(const uint64_t *w)
{
	uint64_t cur;
	for (unsigned spins = 0;; spins++) {
		/* Acquire: pairs with the final store of the commit or release in flight. */
		cur = rusk_load64(w, RUSK_ACQUIRE);
		if (!(cur & RUSK_W_TRANSIENT))
			return cur;
		if (spins > 64)
			sched_yield();
	}
}

static int set_state(rusk_cluster *c, uint32_t m, uint32_t state)
{
	if (c == NULL)
		return RUSK_EINVAL;
	if (m >= c->n_machines)
		return RUSK_ERANGE;
	rusk_store32(&c->machines[m].state, state, RUSK_RELAXED);
	/* Dekker with release_one: our state store before our loads of the words. */
	rusk_fence_full();
	return RUSK_OK;
}

int rusk_cluster_attach_loop_(rusk_cluster *c, rusk_revoke_fn revoked, void *ctx)
{
	if (c->loop_revoked != NULL)
		return RUSK_EBUSY;
	c->loop_revoked = revoked;
	c->loop_ctx = ctx;
	return RUSK_OK;
}

void rusk_cluster_detach_loop_(rusk_cluster *c, void *ctx)
{
	if (c->loop_ctx == ctx) {
		c->loop_revoked = NULL;
		c->loop_ctx = NULL;
	}
}

RUSK_EXPORT int rusk_machine_fail(rusk_cluster *c, uint32_t m, rusk_revoke_fn revoked, void *ctx)
{
	int rc = set_state(c, m, RUSK_M_DOWN);
	if (rc != RUSK_OK)
		return rc;
	rusk_machine *mm = &c->machines[m];
	for (uint32_t ru = mm->first_ru; ru < mm->first_ru + mm->n_rus; ru++) {
		uint64_t *w = &c->ru_word[ru];
		uint64_t cur = settle(w);
		for (;;) {
			uint64_t owner = rusk_w_owner(cur);
			if (owner == RUSK_OWNER_OFFLINE)
				break;
			if (cur & RUSK_W_TRANSIENT) {
				cur = settle(w);
				continue;
			}
			/* Acquire: pairs with the committer's store that set P. */
			if (!rusk_cas64(w, &cur, RUSK_W_OFFLINE(rusk_gen_next(cur)), RUSK_ACQUIRE))
				continue;
			if (owner == 0) {
				rusk_ru_account_(c, ru, mm, false);
			} else {
				if (cur & RUSK_W_PROFILE) {
					rusk_packed p = rusk_pack_profile(&c->ru_tenant[ru]);
					rusk_machine_sums_(mm, &p, true);
				}
				rusk_vec_end_(c, ru); /* its shares go back (vec.c, inv. 4) */
				rusk_lease l = {ru, rusk_w_gen(cur)};
				if (revoked != NULL)
					revoked(owner, l, ctx);
				/* The attached loop hears of it too, once (not twice when the
				 * caller passed the loop's own hook). */
				if (c->loop_revoked != NULL &&
				    (c->loop_revoked != revoked || c->loop_ctx != ctx))
					c->loop_revoked(owner, l, c->loop_ctx);
			}
			break;
		}
	}
	rusk_observe_(c, m, true);
	return RUSK_OK;
}

RUSK_EXPORT int rusk_machine_drain(rusk_cluster *c, uint32_t m)
{
	int rc = set_state(c, m, RUSK_M_DRAINING);
	if (rc != RUSK_OK)
		return rc;
	rusk_machine *mm = &c->machines[m];
	for (uint32_t ru = mm->first_ru; ru < mm->first_ru + mm->n_rus; ru++) {
		uint64_t *w = &c->ru_word[ru];
		uint64_t cur = settle(w);
		/* Only free words change here; a failed CAS means a commit took it (it will go
		 * offline on release) or a release just settled it: look again. */
		while (rusk_w_owner(cur) == 0) {
			if (rusk_cas64(w, &cur, RUSK_W_OFFLINE(rusk_gen_next(cur)), RUSK_ACQUIRE)) {
				rusk_ru_account_(c, ru, mm, false);
				break;
			}
			if (cur & RUSK_W_TRANSIENT)
				cur = settle(w);
		}
	}
	rusk_observe_(c, m, true);
	return RUSK_OK;
}

RUSK_EXPORT int rusk_machine_up(rusk_cluster *c, uint32_t m)
{
	int rc = set_state(c, m, RUSK_M_UP);
	if (rc != RUSK_OK)
		return rc;
	rusk_machine *mm = &c->machines[m];
	for (uint32_t ru = mm->first_ru; ru < mm->first_ru + mm->n_rus; ru++) {
		uint64_t *w = &c->ru_word[ru];
		uint64_t cur = settle(w);
		while (rusk_w_owner(cur) == RUSK_OWNER_OFFLINE) {
			/* Account first: the word is unusable until the store below frees it. The
			 * CAS (not a store) guards against a concurrent change of this machine
			 * that the contract forbids but a bug might attempt. */
			uint64_t freed = cur & RUSK_W_GEN;
			rusk_ru_account_(c, ru, mm, true);
			/* Release: pairs with the next committer's acquire CAS. */
			if (rusk_cas64(w, &cur, freed, RUSK_RELEASE))
				break;
			rusk_ru_account_(c, ru, mm, false);
			if (cur & RUSK_W_TRANSIENT)
				cur = settle(w);
		}
	}
	rusk_observe_(c, m, true);
	return RUSK_OK;
}
