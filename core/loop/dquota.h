/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher's quota groups at run time (core/loop/dquota.c): per-agent usage counters,
 * the coordinator's rounds and their RCU-published allowances, and the admission check of
 * the per-task path. rusk/dispatch.h ("Quota groups") is the contract; rusk/quota.h the
 * allocation. Internal to the dispatcher's files (dispatch.c, dquota.c).
 */
#ifndef RUSK_LOOP_DQUOTA_H
#define RUSK_LOOP_DQUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/dispatch.h>

typedef struct rusk_dquota rusk_dquota;
typedef struct rusk_dquota_agent rusk_dquota_agent;
struct rusk_dtask;
struct rusk_dagent;

/* d->q and each agent's counters for d->p's groups (n_groups > 0), with round 0 published
 * (every group as if it wanted all it may have). RUSK_OK, RUSK_EINVAL (message: the groups
 * against the cluster's capacity), RUSK_ENOMEM. At create, before any thread runs. */
int rusk_dquota_create_(rusk_dispatch *d, char *err, size_t len);
/* Frees what create made (after the threads are joined); NULL d->q ignored. */
void rusk_dquota_destroy_(rusk_dispatch *d);
/* Starts / stops and joins the coordinator thread (quota_period_ns > 0). */
int rusk_dquota_start_(rusk_dispatch *d);
void rusk_dquota_stop_(rusk_dispatch *d);
/* One round at cluster time now (the coordinator's thread, or one embedder thread).
 * concurrent: agents may be admitting meanwhile, so the published round is frozen and a
 * grace period awaited first (E13; not from inside a read-side section); false only for
 * rusk sim's single-threaded steps. */
int rusk_dquota_round_(rusk_dispatch *d, uint64_t now, bool concurrent);

/* Agent a (its thread) may place grouped task j, which holds nothing: true, counted in its
 * group's usage; false: parked among a's waiters until the next round (room reserved). */
bool rusk_dquota_admit_(struct rusk_dagent *a, struct rusk_dtask *j, uint64_t now);
/* j, admitted by its agent in this placement call, leaves it unplaced (given back, aside):
 * its usage goes back. Agent thread. */
void rusk_dquota_unadmit_(struct rusk_dagent *a, struct rusk_dtask *j);
/* Grouped task j (just received by its agent, or back in a queue after its tenure ended)
 * counts in its group's waiting demand until admitted or dropped. Its owner's thread. */
void rusk_dquota_wait_(rusk_dispatch *d, struct rusk_dtask *j);
/* j leaves the waiting demand (dropped unadmitted). No-op when not counted. */
void rusk_dquota_unwait_(rusk_dispatch *d, struct rusk_dtask *j);
/* Reclaim: the groups j may take tasks from this round (NULL: j's group is not below its
 * minimum, or a's budget for the round is spent), and the victims a may still take in
 * *budget; rusk_dquota_reclaimed_ counts what a preemption took. Agent thread. */
const uint8_t *rusk_dquota_reclaim_from_(struct rusk_dagent *a, const struct rusk_dtask *j,
                                         uint32_t *budget);
void rusk_dquota_reclaimed_(struct rusk_dagent *a, uint32_t freed);
/* j's counted usage goes back (whoever ends its tenure: the winner of its state CAS, E2,
 * or the agent dropping it). No-op when j is not counted. */
void rusk_dquota_return_(rusk_dispatch *d, struct rusk_dtask *j);

#endif
