/* SPDX-License-Identifier: MIT */
/*
 * The master RU array's private interface (core/kernel/ru.c): the held commits place() uses, and
 * the accounting topology.c shares. Not installed.
 */
#ifndef RUSK_KERNEL_RU_IMPL_H
#define RUSK_KERNEL_RU_IMPL_H

#include "kernel/layout.h"
#include "kernel/word.h"

/* Fault injection for stress tests (stress/fault_torture.c): when set, called by
 * rusk_ru_commit_gang after each member RU is committed (i + 1 of n taken). A test may end
 * the calling thread there to model an agent that dies mid-gang. NULL in production. */
extern void (*rusk_fault_gang_member)(uint64_t task, size_t taken, size_t n);

/* place()'s commits (ru.c): as rusk_ru_commit / _gang / _incremental, but every RU won stays
 * held (C set), so no topology change can revoke it before place() decides. Each held lease
 * ends with exactly one of rusk_ru_publish_ (clears C: the embedder now holds it) or
 * rusk_ru_unhold_ (releases it: free, or offline on a machine no longer UP). Called only by
 * the thread that holds the lease. */
int rusk_ru_commit_held_(rusk_cluster *c, uint64_t task, uint32_t ru, const rusk_profile *prof,
                         rusk_lease *out);
int rusk_ru_commit_gang_held_(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                              const rusk_profile *prof, rusk_lease *out, size_t *lost_at);
int rusk_ru_commit_incremental_held_(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                                     const rusk_profile *prof, rusk_lease *out, size_t *n_won);
void rusk_ru_publish_(rusk_cluster *c, rusk_lease l);
void rusk_ru_unhold_(rusk_cluster *c, rusk_lease l);

/* RU accounting shared by ru.c and topology.c. */
void rusk_machine_sums_(rusk_machine *m, const rusk_packed *p, bool sub);
void rusk_ru_account_(rusk_cluster *c, uint32_t ru, rusk_machine *m, bool now_free);

#endif /* RUSK_KERNEL_RU_IMPL_H */
