/* SPDX-License-Identifier: MIT */
/*
 * A remote master state under the kernel's own agents (issue 30: "the agents, views,
 * strategies, dispatcher and reports work the same on either; the kernel's decisions do not
 * change"). With a remote attached to a cluster, three steps of the kernel go through the
 * seam of backend.h instead of (before) the in-memory array:
 *
 *  - a view's sync of partition p reads p's free bitmap from the remote (one round trip),
 *    ANDed with the local array's bits, and computes the view's summaries from it (view.c);
 *  - a commit sends the chosen RUs as one claim per machine, the claims of one partition in
 *    one pipeline (one round trip per partition a decision touches); only what the remote
 *    granted is then committed to the local array (commit.c, rusk_commit_local_);
 *  - a release frees the local array first, then the remote (one round trip per partition
 *    of the task's leases).
 *
 * The local array is a mirror of what this process's tasks hold, never more: an RU is
 * taken locally only after the remote granted it to the same task, and given back locally
 * before it is given back remotely. So the remote's holders are a superset of the local
 * ones, a local commit after a remote grant cannot lose (barring a vector task's GPU being
 * chosen differently on the two sides, which is then given back and counted), and every
 * part of the kernel that reads the local array (keep_up, the quality models' per-machine
 * state, preemption's victim search, the reports' utilisation, "all RUs free after the
 * run") sees this process's tasks as before. RUs other processes hold are seen only
 * through the views' remote bits.
 *
 * Why a mirror rather than the remote alone: every strategy and report reads per-machine
 * state of the local array; keeping it exact for this process's tasks keeps them all
 * unchanged, and the remote round trip costs 100x the local CAS that follows it.
 *
 * Connections: a remote connection (a hiredis context) is one thread's. Each thread that
 * syncs, commits or releases gets its own, opened on its first use through the opener the
 * attacher gave (open/close below), kept in a thread-local slot tagged with the remote's
 * serial number and closed by rusk_remote_detach_. The dispatcher runs one agent per
 * thread, so each agent has its own connection; the threads that end tasks (an agent's
 * wheel, the embedder's rusk_dispatch_complete, the stop) use theirs.
 *
 * Remote generations: the remote grants leases with its own generations; rgen[ru] keeps the
 * remote generation of the lease whose local twin holds ru. Written by the committing
 * thread before place() returns, read by the thread that releases the task: that thread
 * got the task's leases through the dispatcher's hand-off (dispatch_impl.h E2/E3), which
 * orders the write before the read; relaxed atomics keep each access whole.
 *
 * The in-memory path pays one predictable branch on c->remote (NULL) in a view's sync,
 * a commit and a release, nothing else.
 */
#ifndef RUSK_KERNEL_REMOTE_H
#define RUSK_KERNEL_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "kernel/backend.h"
#include "kernel/decision.h"

/* The attachment's API (opener, stats, attach, detach) is in backend.h, the seam's header,
 * which the backends' layer (core/state) may include. */

/* ---- the kernel's own calls (view.c, commit.c, agent.c) ---------------------------- */

/* Partition p's remote free bitmap into words[0..n_words) (backend.h's layout) and its
 * version. RUSK_OK, or RUSK_EIO (no connection, no answer: the view keeps its old copy). */
int rusk_remote_snapshot_(rusk_remote *rm, uint32_t p, uint64_t *words, uint32_t n_words,
                          uint64_t *version);

/* rusk_commit_unlocked_ over the remote: the remote grant, then the local mirror's commit of
 * what was granted (rusk_commit_local_). Returns the RUs won, their (local) leases in
 * leases[]; marks the view and counts conflicts as the local commit does. */
uint32_t rusk_remote_commit_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                             rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof);

/* rusk_agent_release over the remote: each lease released locally, then the ones the local
 * array released, remotely. Returns and counts as rusk_ru_release_many. */
int rusk_remote_release_(rusk_cluster *c, uint64_t task, const rusk_lease *leases, size_t n,
                         size_t *n_rejected);

/* place()'s give-back (rusk_agent_finish_ with rc != RUSK_OK already unheld them locally):
 * the same n leases of task, released remotely. */
void rusk_remote_unheld_(rusk_cluster *c, uint64_t task, const rusk_lease *leases, size_t n);

#endif /* RUSK_KERNEL_REMOTE_H */
