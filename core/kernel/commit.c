/* SPDX-License-Identifier: MIT */
/*
 * The commit step (ParSync §5.2: an agent commits its choice to the master state, which
 * resolves conflicts): the chosen RUs are taken from the master array by compare-and-swap
 * (ru.c) in the task's commit mode (one RU, gang, incremental), with its vector shares
 * (vec.c) for a vector task; every RU taken or lost is marked taken in the agent's view;
 * the RUs won stay held until place() ends (rusk_agent_finish_: published or given back).
 * The agents (agent.c) and the central baseline (central.c) both call it, downward.
 *
 * Invariants (agent.c's, where they concern the commit):
 *  - Every RU a commit took or lost is marked taken in the view, so a retry never draws it
 *    again from stale data.
 *  - Leases on machines that failed or drained while place() was deciding are never handed
 *    out (keep_up): the failure callback can then only name leases place() returned.
 *  - The global-lock baseline's commits go under the cluster's one mutex (central_lock),
 *    which the central baseline's whole decisions also take.
 */
#include <pthread.h>

#include "kernel/choose.h"
#include "kernel/commit.h"
#include "kernel/remote.h"
#include "kernel/ru_impl.h"
#include "kernel/vec_impl.h"

uint32_t rusk_agent_commit_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                            rusk_lease *leases, rusk_placement *pl)
{
	const rusk_profile *prof = a->p.quality == RUSK_QUALITY_INTERFERENCE ? &t->profile : NULL;
	pl->attempts++;
	if (a->p.global_lock && a->p.strategy != RUSK_STRATEGY_CENTRAL)
		return rusk_commit_global_lock_(a, t, rus, n, leases, pl, prof);
	return rusk_commit_unlocked_(a, t, rus, n, leases, pl, prof);
}

/*
 * The machines of the RUs just won, checked before place() hands them out: a failure or
 * drain that happened while place() was deciding is reported by place() itself (those RUs
 * are unheld and counted as conflicts; a gang gives back all of them). The callback of
 * rusk_machine_fail can then only name leases place() returned (ru.c, "Revocations").
 * Returns the RUs kept, compacted in leases[] in their order.
 */
static uint32_t keep_up(rusk_agent *a, const rusk_task *t, rusk_lease *leases, uint32_t won,
                        bool lost_before, rusk_placement *pl)
{
	rusk_cluster *c = a->c;
	uint32_t down = 0;
	for (uint32_t i = 0; i < won; i++)
		/* Relaxed: no order needed; a state store we miss makes the failure wait for
		 * the publish and report the lease by callback (topology.c). */
		down += rusk_load32(&c->machines[c->ru_machine[leases[i].ru]].state,
		                    RUSK_RELAXED) != RUSK_M_UP;
	if (RUSK_LIKELY(down == 0))
		return won;
	pl->conflicts += down;
	pl->commits_lost += !lost_before;
	uint32_t kept = 0;
	for (uint32_t i = 0; i < won; i++) {
		bool up = rusk_load32(&c->machines[c->ru_machine[leases[i].ru]].state,
		                      RUSK_RELAXED) == RUSK_M_UP;
		if (up && (!t->gang || won == 1))
			leases[kept++] = leases[i];
		else
			rusk_ru_unhold_(c, leases[i]); /* a gang gives back all of them */
	}
	return kept;
}

/*
 * A vector task's commit (vec.c): its RUs as a held gang, then its memory and GPU shares on
 * that machine, recorded on its lowest RU (rus[] is ascending) before place() publishes. A
 * machine found short is skipped by this place() call's retries.
 */
static uint32_t commit_vec(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                           rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof)
{
	rusk_cluster *c = a->c;
	size_t lost = 0;
	int rc = rusk_ru_commit_gang_held_(c, t->id, rus, n, prof, leases, &lost);
	if (rc != RUSK_OK) {
		if (rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE) {
			rusk_view_mark_taken_(a->v, rus[lost]);
			pl->conflicts++;
			pl->commits_lost++;
		}
		return 0;
	}
	uint32_t m = c->ru_machine[rus[0]];
	uint64_t rec;
	if (rusk_vec_take_(c, m, &t->vec, &rec) != RUSK_OK) {
		for (uint32_t i = 0; i < n; i++)
			rusk_ru_unhold_(c, leases[i]);
		if (a->n_vskip < sizeof a->vskip / sizeof a->vskip[0])
			a->vskip[a->n_vskip++] = m;
		/* The RUs were won: the shares are short, not taken by a rival commit. */
		pl->memory_short++;
		rusk_mshort_note_(a, m, t);
		return 0;
	}
	c->ru_vec[rus[0]] = rec; /* C is set on every RU: published with them (vec.c) */
	for (uint32_t i = 0; i < n; i++)
		rusk_view_mark_taken_(a->v, rus[i]);
	return keep_up(a, t, leases, n, false, pl);
}

uint32_t rusk_commit_unlocked_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                               rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof)
{
	/* A remote master state grants first, then calls the local commit below (remote.h). */
	if (RUSK_UNLIKELY(a->c->remote != NULL))
		return rusk_remote_commit_(a, t, rus, n, leases, pl, prof);
	return rusk_commit_local_(a, t, rus, n, leases, pl, prof);
}

uint32_t rusk_commit_local_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                            rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof)
{
	rusk_cluster *c = a->c;
	if (RUSK_UNLIKELY(rusk_vec_any(&t->vec)))
		return commit_vec(a, t, rus, n, leases, pl, prof);
	if (n == 1) {
		/* One RU: the single commit, without the multi-RU entry points' set-up. Gang
		 * and incremental mean the same thing for one RU. */
		int rc = rusk_ru_commit_held_(c, t->id, rus[0], prof, &leases[0]);
		if (rc == RUSK_OK || rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE)
			rusk_view_mark_taken_(a->v,
			                      rus[0]); /* ours, or lost: not free either way */
		if (rc == RUSK_OK)
			return keep_up(a, t, leases, 1, false, pl);
		pl->conflicts += rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE;
		pl->commits_lost += rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE;
		return 0;
	}
	if (t->gang) {
		size_t lost = 0;
		int rc = rusk_ru_commit_gang_held_(c, t->id, rus, n, prof, leases, &lost);
		if (rc == RUSK_OK) {
			for (uint32_t i = 0; i < n; i++)
				rusk_view_mark_taken_(a->v, rus[i]);
			return keep_up(a, t, leases, n, false, pl);
		}
		if (rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE) {
			rusk_view_mark_taken_(a->v, rus[lost]);
			pl->conflicts++;
			pl->commits_lost++;
		}
		return 0;
	}
	size_t won = 0;
	if (rusk_ru_commit_incremental_held_(c, t->id, rus, n, prof, leases, &won) != RUSK_OK)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		rusk_view_mark_taken_(a->v, rus[i]); /* ours, or lost: not free either way */
	pl->conflicts += n - (uint32_t)won;
	pl->commits_lost += won < n;
	return keep_up(a, t, leases, (uint32_t)won, won < n, pl);
}

int rusk_agent_finish_(rusk_cluster *c, rusk_lease *leases, uint32_t n, int rc)
{
	for (uint32_t i = 0; i < n; i++) {
		if (rc == RUSK_OK)
			rusk_ru_publish_(c, leases[i]);
		else
			rusk_ru_unhold_(c, leases[i]);
	}
	return rc;
}

/* The global-lock baseline's commit: the same commit under the cluster's one mutex. */
uint32_t rusk_commit_global_lock_(rusk_agent *a, const rusk_task *t, const uint32_t *rus,
                                  uint32_t n, rusk_lease *leases, rusk_placement *pl,
                                  const rusk_profile *prof)
{
	rusk_cluster *c = a->c;
	pthread_mutex_lock(&c->central_lock);
	uint32_t won = rusk_commit_unlocked_(a, t, rus, n, leases, pl, prof);
	pthread_mutex_unlock(&c->central_lock);
	return won;
}
