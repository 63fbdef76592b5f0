/* SPDX-License-Identifier: MIT */
/*
 * The commit step (commit.c): what the agents (agent.c) and the central baseline (central.c)
 * both call, downward, once they have chosen RUs. Not installed.
 */
#ifndef RUSK_KERNEL_COMMIT_H
#define RUSK_KERNEL_COMMIT_H

#include "kernel/decision.h"

/* Commits rus[0..n) for t (under the cluster's mutex for global-lock), counts the attempt,
 * marks what it took or lost in the view; the RUs won are held in leases[]. Returns them. */
uint32_t rusk_agent_commit_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                            rusk_lease *leases, rusk_placement *pl);

/* The commit itself, without a lock or the attempt count (rusk_agent_commit_): through the
 * cluster's remote master state when one is attached (remote.h), else rusk_commit_local_. */
uint32_t rusk_commit_unlocked_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                               rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof);

/* The commit to the in-memory array (one RU, gang, incremental, vector), with the view's
 * marks, conflict counts and keep_up; the remote path calls it for what the remote granted. */
uint32_t rusk_commit_local_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                            rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof);

/* place()'s end: hands out the n held leases when rc is RUSK_OK (clears C), else gives
 * them all back. Returns rc. */
int rusk_agent_finish_(rusk_cluster *c, rusk_lease *leases, uint32_t n, int rc);

/* rusk_commit_unlocked_ under the cluster's one mutex: the global-lock baseline's commit. */
uint32_t rusk_commit_global_lock_(rusk_agent *a, const rusk_task *t, const uint32_t *rus,
                                  uint32_t n, rusk_lease *leases, rusk_placement *pl,
                                  const rusk_profile *prof);

#endif /* RUSK_KERNEL_COMMIT_H */
