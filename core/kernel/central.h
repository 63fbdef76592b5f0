/* SPDX-License-Identifier: MIT */
/*
 * The serialised baselines (central.c): the central scheduler and the global-lock
 * releases. Not installed.
 */
#ifndef RUSK_KERNEL_CENTRAL_H
#define RUSK_KERNEL_CENTRAL_H

#include "kernel/decision.h"

/* rusk_agent_place for the central strategy: lock, scan, rank, commit, unlock. */
int rusk_place_central_(rusk_agent *a, const rusk_dctx *d, rusk_lease *leases, rusk_placement *pl);

/* rusk_ru_release_many under the cluster's one mutex (both baselines' releases). */
int rusk_release_serialised_(rusk_cluster *c, uint64_t task, const rusk_lease *leases, size_t n,
                             size_t *n_rejected);

#endif /* RUSK_KERNEL_CENTRAL_H */
