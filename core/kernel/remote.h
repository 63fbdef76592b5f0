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
 * Owner ids (rusk_remote_set_owner_ns_): every claim and release this remote sends names
 * its task by owner_of(task) = ns << RUSK_OWNER_NS_SHIFT | task (backend.h "Owner ids"), the
 * local array by the task id alone. A process that shares the state with another numbering
 * its tasks alike (two `rusk run`s) takes a namespace of its own, so the remote's ownership
 * checks tell the two apart: neither can claim, release or resend as the other's task.
 *
 * Batches (rusk_remote_set_batch_ > 1). A round trip costs a hundred decisions, so an agent
 * thread of the dispatcher decides up to `batch` queued tasks against its view first
 * (rusk_agent_decide_: each decision's RUs are marked taken in the view, so a later
 * decision of the batch never picks them again), then commits all of them together
 * (rusk_agent_place_many_ over rusk_remote_commit_many_): the claims of every task, grouped
 * by partition, one pipeline per partition, so the round trip is paid per batch. Then each
 * task is settled as place() settles one: what the remote granted is committed locally (the
 * mirror's rule stands), a refused claim is a conflict and marks its RUs taken, a gang with
 * a refused part gives the rest back; the dispatcher places a granted task and queues a
 * refused one for a retry in its next round, where place() would have retried at once.
 * Releases of such a thread are deferred (rusk_remote_defer_): freed locally at once,
 * remotely at its next rusk_remote_flush_, which the thread calls once a turn of its loop,
 * and which every commit and snapshot of the thread calls first.
 *
 * Invariants of batches:
 *  (B1) a deferred release is sent before any later commit or snapshot on the same
 *       connection (the flush comes first), so a thread never claims remotely an RU that it
 *       freed locally and has not released remotely, and its view never shows that RU taken
 *       longer than one flush;
 *  (B2) the local holders stay a subset of the remote's: a deferred release is local first,
 *       remote later; a batch's local commits come after its remote grants;
 *  (B3) a thread that defers flushes before it stops using the remote (the dispatcher's
 *       agent at its end), and rusk_remote_detach_ sends what any connection still holds.
 *
 * Unavailable partitions (the backend's unavailable op: a stuck Redis master skipped while the
 * others answer, rusk_redis_set_unavailable_ms_). A sync of such a partition shows it all
 * taken in the view (the decisions go to the other partitions until a read answers again); a
 * claim there is not sent and counts as neither conflict nor unknown outcome (the task is
 * tried again, a gang's other parts given back); a release there is put off, freed locally at
 * once (B2 stands) and sent again by whichever thread next releases, flushes or commits
 * (every 100 ms), and by rusk_remote_drain_ at the end; rusk_remote_put_off_ tells a ledger
 * such an RU from an orphan. The marks and counts are rusk_unavail's (backend.h), those of
 * `rusk agent` too. remote.c has the details.
 *
 * The in-memory path pays one predictable branch on c->remote (NULL) in a view's sync,
 * a commit and a release, nothing else; the dispatcher tests its agent's batch once per
 * round and once per turn of its loop.
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

/* Partitions ps[0..n) in one call (a view's sync step): partition p's bitmap into
 * bits + p's first word (the view's words, laid out as the cluster's), versions[i] its
 * version, rcs[i] RUSK_OK or RUSK_EIO (that partition not read: its words untouched). The
 * backend's snapshots op sends them together (one pipeline per node: about one round trip
 * however many partitions, where one call per partition cost one round trip each);
 * without it, one snapshot call each. RUSK_OK when all were read, else RUSK_EIO. */
int rusk_remote_snapshots_(rusk_remote *rm, const uint32_t *ps, size_t n, uint64_t *bits,
                           uint64_t *versions, int *rcs);

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

/* ---- batches (the note above, "Batches") ------------------------------------------------ */

/* One task of a batch: what rusk_agent_decide_ chose for it, and what the commit made of it. */
typedef struct rusk_remote_item {
	const rusk_task *t;  /* the task (its RUs only: no vector demand, nothing held) */
	const uint32_t *rus; /* its decision's RUs, n of them */
	uint32_t n;
	rusk_lease *leases; /* out: [t->rus], the leases won (local ones, as place()'s) */
	rusk_placement *pl; /* in: the decision's figures; out: the commit's added */
	uint32_t won;       /* out (rusk_remote_commit_many_): RUs held locally */
	int rc;             /* out (rusk_agent_place_many_): as rusk_agent_place returns */
} rusk_remote_item;

/* The batch size set by rusk_remote_set_batch_ (0: no remote attached to c). Any thread. */
uint32_t rusk_remote_batch_(const rusk_cluster *c);

/* From now on the calling thread's releases through c's remote are sent at its next
 * rusk_remote_flush_ (B3: it must flush before it stops). RUSK_OK, RUSK_EIO (no connection:
 * its releases then go at once). The thread that will release. */
int rusk_remote_defer_(rusk_cluster *c);

/* Sends the calling thread's deferred releases, one pipeline per partition (nothing when
 * none wait: one load). The thread that deferred them. */
void rusk_remote_flush_(rusk_cluster *c);

/* The remote commit of items[0..n) of agent a (its thread): the claims of every item in one
 * call per partition, then, per item, the remote generations kept, refused RUs marked taken
 * in the view, conflicts counted in its pl (one per lost RU, one per gang), a gang with a
 * refused part given back (one release call per partition for all of them), and what was
 * granted committed locally (rusk_commit_local_: leases held, C set, as place()'s). Sets
 * items[i].won; an item with won > 0 ends in rusk_agent_finish_ (rusk_agent_place_many_). */
void rusk_remote_commit_many_(rusk_agent *a, rusk_remote_item *items, size_t n);

/* agent.c: the first half of rusk_agent_place for one task of a batch: checks t, decides
 * once on a's view and marks the RUs chosen taken in it (so the batch's next decisions
 * never pick them). Returns the RUs chosen in rus[] (> 0; a gang all of them), 0 when the
 * view has nothing suitable (pl->attempts 0: a failure for room), or an error as
 * rusk_agent_place's (RUSK_EINVAL, RUSK_EINFEASIBLE, RUSK_ENOMEM, RUSK_ENOTREG). t must
 * hold nothing and have no vector demand. a's thread. */
int rusk_agent_decide_(rusk_agent *a, const rusk_task *t, uint32_t *rus, rusk_placement *pl);

/* agent.c: the second half, for items[0..n) decided by rusk_agent_decide_ on a: one remote
 * commit for all (rusk_remote_commit_many_), then each item settled as rusk_agent_place
 * ends (pl's placed, quality, preferred, commit time; leases published, or given back
 * locally and remotely) and its rc set: RUSK_OK (pl->placed RUs: all of them, or for an
 * incremental task part), RUSK_EAGAIN (nothing held: pl->commits_lost > 0 when the remote
 * refused it). a's thread. */
void rusk_agent_place_many_(rusk_agent *a, rusk_remote_item *items, size_t n);

#endif /* RUSK_KERNEL_REMOTE_H */
