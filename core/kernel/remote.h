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

typedef struct rusk_remote rusk_remote;

/* How the kernel gets a connection for a thread: open fills *out (the seam) and *handle
 * (what close and error get back), or returns an error with a message in err; close ends
 * one; error (may be NULL) says what the connection's last failed call met. open and error
 * are called by the thread that uses the connection, close at detach. */
typedef struct rusk_remote_opener {
	int (*open)(void *arg, rusk_backend *out, void **handle, char *err, size_t errlen);
	void (*close)(void *arg, void *handle);
	const char *(*error)(void *arg, void *handle);
	void *arg;
} rusk_remote_opener;

/* What the remote did, summed over every connection (rusk_remote_stats_). */
typedef struct rusk_remote_stats {
	uint64_t connections;     /* opened (one per thread that used the remote) */
	uint64_t open_failures;   /* opens that failed (the thread's call failed) */
	uint64_t snapshots;       /* partition snapshots read (one round trip each) */
	uint64_t commit_trips;    /* commit pipelines sent (one per partition per decision) */
	uint64_t claims;          /* machine claims in them */
	uint64_t claims_lost;     /* refused: an RU held elsewhere, or memory / GPUs short */
	uint64_t rollbacks;       /* gang commits given back after a part was refused */
	uint64_t local_refused;   /* granted remotely, refused by the local mirror (given back) */
	uint64_t release_trips;   /* release pipelines sent */
	uint64_t released;        /* leases the remote released */
	uint64_t release_refused; /* leases it refused (not the owner, stale, free) */
	uint64_t errors;          /* calls that failed (RUSK_EIO: no answer, outcome unknown) */
	uint64_t commit_p50_ns, commit_p99_ns; /* commit round trip, over every connection */
} rusk_remote_stats;

/*
 * rusk_remote_attach_: from now on c's views, commits and releases go through the remote
 * that `op` opens connections to. At quiescence only: no agent of c may be syncing,
 * placing or releasing (attach before creating the dispatcher). op is copied. RUSK_OK,
 * RUSK_EINVAL (NULL, or a remote already attached), RUSK_ENOMEM.
 */
int rusk_remote_attach_(rusk_cluster *c, const rusk_remote_opener *op, char *err, size_t errlen);

/*
 * rusk_remote_detach_: closes every connection and detaches the remote (c is in memory
 * again). At quiescence only (after the dispatcher is destroyed and every thread that used
 * the remote has stopped using it). NULL or none attached: nothing.
 */
void rusk_remote_detach_(rusk_cluster *c);

/* rusk_remote_stats_: a copy of the counters (relaxed sums: exact at quiescence). Any
 * thread; zeros when no remote is attached. */
void rusk_remote_stats_(const rusk_cluster *c, rusk_remote_stats *out);

/* rusk_remote_last_error_: the message of the last failed open or call into buf ("" if
 * none or no remote). Any thread (copied under the remote's lock). */
void rusk_remote_last_error_(const rusk_cluster *c, char *buf, size_t len);

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
