/* SPDX-License-Identifier: MIT */
/*
 * Partitioned synchronization (ParSync §5.1-5.2): partition snapshots published with RCU,
 * agents' local views with per-partition staleness, and the StateSync / SameSync /
 * DiffSync policies that decide which partitions an agent refreshes when.
 *
 * RCU. rusk uses liburcu's memb flavour. Every thread that syncs views, publishes or reads
 * snapshots, or chooses and places with an agent must call rusk_thread_register() before
 * and rusk_thread_unregister() before it exits. Nothing here takes a lock: publishers never
 * wait for readers (old snapshots are reclaimed with call_rcu after a grace period) and
 * readers never wait for publishers; a stalled reader only delays reclamation.
 *
 * Checks (RUSK_DEBUG). A call marked "Registered thread" from a thread that is not
 * registered would read snapshots that grace periods do not protect (a use-after-free).
 * Builds with RUSK_DEBUG refuse it instead: rusk_view_sync, rusk_view_tick (when a step is
 * due), rusk_snapshot_publish, rusk_agent_choose, rusk_agent_place and the classifier's
 * readers (rusk_cls_classify, rusk_cls_estimate_row, rusk_classifier_classify) return
 * RUSK_ENOTREG and rusk_snapshot_get returns NULL. RUSK_DEBUG is a CMake option, on by
 * default in every build type but Release and MinSizeRel (RelWithDebInfo, Debug and all
 * sanitizer builds have it; a library compiled without NDEBUG too); Release compiles the
 * checks away.
 *
 * ThreadSanitizer. liburcu 0.13 and Concurrency Kit 0.7 synchronise in ways TSan does not
 * model (inline-assembly barriers), so a TSan run of a program using rusk may report races
 * inside their functions (never in rusk's, whose edges are annotated in TSan builds of
 * rusk). The suppressions rusk's own tests use are installed as share/rusk/tsan.supp
 * (TSAN_OPTIONS=suppressions=<prefix>/share/rusk/tsan.supp); they name only liburcu's and
 * ck's functions.
 *
 * Threads. R: the caller is registered (rusk_thread_register). A view is owned by one
 * thread at a time (its agent's); handing it to another thread needs the embedder's own
 * synchronisation (a join, a mutex, a queue).
 *
 *   call                                from                    concurrently with
 *   rusk_thread_register / _unregister  the thread itself, not  everything
 *                                       in a read-side section
 *   rusk_thread_registered              any thread              everything
 *   rusk_read_lock / _unlock            R                       everything (nestable)
 *   rusk_rcu_barrier                    any thread, not in a    everything (waits for every
 *                                       read-side section       replaced snapshot to be freed)
 *   rusk_snapshot_publish               R                       publishes (a newer one wins),
 *                                                               readers, commits, releases
 *   rusk_snapshot_get, _info_get,       R, inside the           publishes: the snapshot stays
 *     _is_free, _recount                rusk_read_lock that     valid and unchanged until the
 *                                       got the snapshot        matching rusk_read_unlock
 *   rusk_snapshot_counts                any thread              everything (relaxed reads)
 *   rusk_snapshot_set_reuse_ns          any thread, before      nothing that syncs a view of c
 *                                       agents run
 *   rusk_sync_policy_*, rusk_sync_*     any thread              everything (pure functions)
 *   rusk_view_create                    any thread              everything; the caller owns it
 *   rusk_view_sync, _tick               R, the view's owner,    publishes, commits, releases and
 *                                       outside a read-side     other views' calls
 *                                       section
 *   rusk_view_set_policy                R, the view's owner     the same
 *   the other rusk_view_* calls,        the view's owner        other views' calls; nothing
 *     rusk_view_destroy                                         else on this view
 *
 * Arguments. A NULL or out-of-range argument never crashes a call here: calls that return
 * an int return RUSK_EINVAL / RUSK_ERANGE, getters return the neutral value their comment
 * names (0, false, UINT64_MAX, +inf, NULL) and void calls do nothing (or zero *out).
 */
#ifndef RUSK_SYNC_H
#define RUSK_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/cluster.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- threads ------------------------------------------------------------------------ */

/* rusk_thread_register / _unregister: (un)registers the calling thread with RCU. Not inside
 * a read-side section. Registration nests: the first register registers, later ones count,
 * and each unregister undoes one, the last one unregistering (so a library or a callback
 * may register around its own calls whatever its caller did). An unregister with nothing
 * to undo does nothing. */
void rusk_thread_register(void);
void rusk_thread_unregister(void);
/* Whether the calling thread is registered (at depth >= 1). Any thread; every build. */
bool rusk_thread_registered(void);

/* rusk_rcu_barrier: waits until every snapshot replaced so far has been freed. Call before
 * process exit (else call_rcu callbacks still pending leak snapshots and leak checkers
 * report them) or to check reclamation; not inside a read-side section. */
void rusk_rcu_barrier(void);

/* rusk_read_lock / _unlock: an RCU read-side section (nestable). Registered threads. A
 * snapshot obtained inside stays valid and unchanged until the matching unlock. */
void rusk_read_lock(void);
void rusk_read_unlock(void);

/* ---- snapshots ---------------------------------------------------------------------- */

/* An immutable copy of one partition: which RUs were free, when, and its summaries. */
typedef struct rusk_snapshot rusk_snapshot;

typedef struct rusk_snapshot_info {
	uint32_t partition;
	uint64_t version;  /* per partition, increasing with every publish */
	uint64_t taken_ns; /* cluster clock when the copy began (its data is at least this new) */
	uint32_t rus;      /* RUs in the partition */
	uint32_t free_rus; /* free RUs in the copy */
	double mean_free_score;                     /* mean slot score of the free RUs */
	uint32_t platform_free[RUSK_MAX_PLATFORMS]; /* free RUs per platform type */
} rusk_snapshot_info;

/*
 * rusk_snapshot_publish: copies partition p's free state from the master array now and
 * publishes it (rcu_cmpxchg_pointer); the snapshot it replaces is freed with call_rcu once
 * every reader has left. A publish that loses to a newer concurrent one is discarded.
 * Registered threads, outside a read-side section or inside one. RUSK_OK / RUSK_ERANGE /
 * RUSK_EINVAL / RUSK_ENOMEM / RUSK_ENOTREG (RUSK_DEBUG builds).
 */
int rusk_snapshot_publish(rusk_cluster *c, uint32_t p);

/*
 * rusk_snapshot_get: the current snapshot of partition p, or NULL if none was published
 * (or p is out of range, or, in RUSK_DEBUG builds, the thread is not registered). Call
 * inside rusk_read_lock(); the pointer is valid until the matching rusk_read_unlock().
 */
const rusk_snapshot *rusk_snapshot_get(rusk_cluster *c, uint32_t p);

/* Reads a snapshot's header (inside the read-side section that got it); s NULL: zeros. */
void rusk_snapshot_info_get(const rusk_snapshot *s, rusk_snapshot_info *out);
/* Whether RU `ru` (of the snapshot's partition) was free in it; false if outside it or s
 * is NULL. */
bool rusk_snapshot_is_free(const rusk_snapshot *s, uint32_t ru);
/* Recounts the snapshot's bitmap (for checks: equals info.free_rus unless corrupted); 0
 * for NULL. */
uint32_t rusk_snapshot_recount(const rusk_snapshot *s);

/* Snapshots allocated and freed so far by this cluster (freed lags by a grace period);
 * zeros for a NULL cluster, NULL pointers are skipped. */
void rusk_snapshot_counts(const rusk_cluster *c, uint64_t *allocated, uint64_t *freed);

/*
 * rusk_snapshot_reuse_ns: a view sync reuses the published snapshot of a partition when it
 * is younger than this, and publishes a fresh one otherwise. 0 (the default) always
 * publishes: every sync then sees the master state as of the sync. Set before agents run.
 * NULL is ignored.
 */
void rusk_snapshot_set_reuse_ns(rusk_cluster *c, uint64_t ns);

/* ---- sync policies ------------------------------------------------------------------ */

typedef enum rusk_sync_policy {
	RUSK_SYNC_STATE = 0, /* StateSync (Omega): every partition every G */
	RUSK_SYNC_SAME = 1,  /* SameSync: all agents refresh the same P/N partitions every G/N */
	RUSK_SYNC_DIFF = 2,  /* DiffSync (ParSync): agent i refreshes its own rotating P/N
	                      * partitions every G/N; no two agents the same one at a step */
} rusk_sync_policy;

typedef struct rusk_sync_params {
	rusk_sync_policy policy;
	uint32_t partitions; /* P: the cluster's partitions */
	uint32_t agents;     /* N */
	uint64_t gap_ns;     /* G: every partition is refreshed once per G in every view */
	uint64_t start_ns;   /* time of step 0 */
	bool random_offset;  /* Tarcil §5.1: each agent's steps shifted by a seeded offset in
	                      * [0, step) so syncs do not all hit the master at once */
	uint64_t seed;
} rusk_sync_params;

/*
 * rusk_sync_params_init: ParSync's defaults for P partitions and N agents: DiffSync (SameSync
 * when P < N, which DiffSync refuses), a 500 ms gap (ParSync §6.1), steps from time 0, no
 * random offset, seed 0. Any thread; p NULL: nothing.
 */
#define RUSK_SYNC_DEFAULT_GAP_NS UINT64_C(500000000)
void rusk_sync_params_init(rusk_sync_params *p, uint32_t partitions, uint32_t agents);

/* Parses "state" / "same" / "diff"; RUSK_EINVAL otherwise. */
int rusk_sync_policy_parse(const char *name, rusk_sync_policy *out);
const char *rusk_sync_policy_name(rusk_sync_policy p);

/*
 * rusk_sync_check: validates p. RUSK_EPOLICY with a message for DiffSync with P < N
 * ("ParSync §5.1 requires P >= N"), RUSK_EINVAL for N = 0, P = 0, G = 0 or G < N ns.
 */
int rusk_sync_check(const rusk_sync_params *p, char *err, size_t errlen);

/* Step length: G/N for same and diff, G for state; 0 for NULL or no agents. */
uint64_t rusk_sync_step_ns(const rusk_sync_params *p);
/* Agent's offset: 0, or with random_offset a seeded value in [0, step) (0 for NULL or a
 * zero step). */
uint64_t rusk_sync_offset_ns(const rusk_sync_params *p, uint32_t agent);
/*
 * rusk_sync_partitions: the partitions `agent` refreshes at its step k (ascending), written
 * to out (up to cap; none when out is NULL); returns how many there are (0 for NULL or no
 * agents). Blocks are [j*P/N, (j+1)*P/N).
 */
size_t rusk_sync_partitions(const rusk_sync_params *p, uint32_t agent, uint64_t k, uint32_t *out,
                            size_t cap);

/* ---- local views ---------------------------------------------------------------------- */

/* One agent's local view: per partition, the free state as of its last sync, when that
 * was, and the agent's own marks since. Owned and used by one thread at a time. */
typedef struct rusk_view rusk_view;

typedef struct rusk_view_stats {
	uint64_t syncs;     /* partitions synced */
	uint64_t publishes; /* snapshots this view's syncs published */
	uint64_t sync_ns;   /* clock time spent in syncs (incl. publishing) */
	uint64_t marks;     /* RUs marked taken locally */
} rusk_view_stats;

/* Creates a view of c in which nothing has been synced (every partition infinitely
 * stale, no RU free). Any thread; the caller owns it. RUSK_EINVAL / RUSK_ENOMEM. */
int rusk_view_create(rusk_cluster *c, rusk_view **out);
void rusk_view_destroy(rusk_view *v);

/*
 * rusk_view_sync: refreshes partition p from its snapshot (publishing one first unless the
 * current one is younger than the reuse window), dropping the agent's marks in p.
 * Registered thread, outside a read-side section. RUSK_OK / RUSK_ERANGE / RUSK_ENOMEM /
 * RUSK_ENOTREG (RUSK_DEBUG builds).
 */
int rusk_view_sync(rusk_view *v, uint32_t p);

/*
 * rusk_view_set_policy / rusk_view_tick: attach a sync policy for `agent`, then call tick
 * with the current time between decisions: it performs every step due by `now` (a step
 * overdue by more than a round is skipped where a later due step refreshes the same
 * partitions) and returns how many partitions it synced, or a negative error.
 * Registered thread.
 */
int rusk_view_set_policy(rusk_view *v, const rusk_sync_params *p, uint32_t agent, char *err,
                         size_t errlen);
int rusk_view_tick(rusk_view *v, uint64_t now_ns);
/* When rusk_view_tick will next sync a partition (the cluster clock's ns), UINT64_MAX
 * without a policy: an agent with nothing to do may sleep until then. Owner thread. */
uint64_t rusk_view_next_sync_ns(const rusk_view *v);

/* Staleness of p at `now` (now - snapshot time), UINT64_MAX if never synced. */
uint64_t rusk_view_staleness_ns(const rusk_view *v, uint32_t p, uint64_t now_ns);
/* Average staleness AS over all partitions (ParSync §5.1); +inf until all were synced (and
 * for NULL). */
double rusk_view_avg_staleness_ns(const rusk_view *v, uint64_t now_ns);
/* Up to n partitions ordered freshest first; returns how many written (0 for NULL).
 * Partitions synced in one rusk_view_tick step count as equally fresh and are ordered by a
 * rank the view draws at each sync from its own seeded generator, so agents do not all
 * favour one of them. */
size_t rusk_view_freshest(const rusk_view *v, uint32_t *out, size_t n);

/* Whether the view believes RU `ru` is free (false when out of range or v is NULL). */
bool rusk_view_is_free(const rusk_view *v, uint32_t ru);
/* Marks `ru` taken in the view: after the agent committed it, or lost it to a conflict
 * (ParSync §5.2). Idempotent. */
void rusk_view_mark_taken(rusk_view *v, uint32_t ru);
/* Marks `ru` free in the view: after the agent itself released it (e.g. preempted its
 * holder) and knows it free before the next sync. Idempotent. */
void rusk_view_mark_free(rusk_view *v, uint32_t ru);
/*
 * rusk_view_pick_free: an RU of partition p that the view believes free, drawn uniformly
 * among them (each free RU has probability 1/free, whatever the occupancy's shape) and
 * determined by `rnd` alone. Returns false (and leaves *ru) when the view has none free in p
 * (or p is out of range, v or ru NULL).
 */
bool rusk_view_pick_free(const rusk_view *v, uint32_t p, uint64_t rnd, uint32_t *ru);
/* Free RUs of partition p in the view (snapshot count minus marks). 0 out of range. */
uint32_t rusk_view_free(const rusk_view *v, uint32_t p);
/* Free RUs of platform type k in partition p in the view. 0 out of range. */
uint32_t rusk_view_platform_free(const rusk_view *v, uint32_t p, uint32_t k);
/* Mean slot score of p's free RUs as of the last sync. 0 out of range. */
double rusk_view_mean_free_score(const rusk_view *v, uint32_t p);
/* The view's counters into *out (zeros for a NULL view). */
void rusk_view_stats_get(const rusk_view *v, rusk_view_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_SYNC_H */
