/* SPDX-License-Identifier: MIT */
/*
 * The master-state seam (issue 30; ParSync §7: "multiple RM instances ... handle different
 * partitions of the master state"). Four operations are all a scheduler needs of the state
 * it commits to: read one partition's free bitmap (a snapshot), commit a batch of machine
 * claims (RUs + memory + GPU shares, each all-or-nothing, owner = a task), release a batch
 * of leases with the ownership and generation checks of ru.c, and recount a partition.
 *
 * Two implementations: the in-memory RU array (backend_mem.c, the default, a thin wrapper
 * of ru.c and the free bitmap) and Redis Cluster (core/state/redis.c, one hash slot per
 * partition, Lua check-and-set scripts). The in-process agents (agent.c) call ru.c directly
 * unless a remote master state is attached to their cluster (remote.h: then views, commits
 * and releases go through this seam first, one connection per thread): the default path pays
 * one NULL test; agents in other processes (rusk agent --backend) use the seam directly.
 *
 * RU numbers are the cluster's global RU indices; words[] of a snapshot hold bit i (LSB
 * first, word i / 64) = RU first_ru + i of the partition is free, the layout of the kernel's
 * own snapshots (snapshot.c), so a view can copy it either way.
 *
 * Threads: one backend object is used by one thread at a time (a Redis connection is not
 * thread-safe; the memory backend would allow more, but the contract is the narrower one).
 */
#ifndef RUSK_KERNEL_BACKEND_H
#define RUSK_KERNEL_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <rusk/ru.h>

/*
 * Owner ids of the seam. A kernel task id is 1..RUSK_TASK_ID_MAX (40 bits, rusk/ru.h); the
 * seam's owners (rusk_bk_claim.task, rusk_bk_lease.task, what a remote state stores as an
 * RU's owner) may carry a namespace above them: owner = ns << RUSK_OWNER_NS_SHIFT | task,
 * ns in 0..RUSK_OWNER_NS_MAX. Processes that share a remote state and number their tasks
 * alike (two `rusk run`s: their dispatchers' handles) take distinct namespaces, so that no
 * owner id of one is an owner id of the other: ru.c's ownership rules (a commit takes free
 * RUs only; a release needs owner and generation) then keep each process's RUs its own.
 * ns 0 is the unnamespaced space (`rusk agent`, the memory backend, which takes ns 0 only).
 */
#define RUSK_OWNER_NS_SHIFT 40
#define RUSK_OWNER_NS_MAX   ((UINT64_C(1) << 24) - 1)

/* The kernel task id of owner (its low 40 bits) and its namespace. Pure. */
static inline uint64_t rusk_owner_task_(uint64_t owner)
{
	return owner & ((UINT64_C(1) << RUSK_OWNER_NS_SHIFT) - 1);
}
static inline uint64_t rusk_owner_ns_(uint64_t owner)
{
	return owner >> RUSK_OWNER_NS_SHIFT;
}

/* One claim of a commit batch: n RUs of one machine for task (an owner id, above), with
 * vec's shares (all zero for RUs only). rus[] ascending: rus[0] is the anchor that carries
 * the shares' record. */
typedef struct rusk_bk_claim {
	uint64_t task;
	uint32_t machine;
	uint32_t n;
	const uint32_t *rus;
	rusk_vec_demand vec;
} rusk_bk_claim;

/* One lease to release, with its holder. */
typedef struct rusk_bk_lease {
	uint64_t task;
	rusk_lease lease;
} rusk_bk_lease;

/* What a recount of one partition found. */
typedef struct rusk_bk_count {
	uint64_t held;     /* RUs with an owner */
	uint64_t free;     /* RUs marked free */
	uint64_t mismatch; /* RUs whose free mark disagrees with their owner (must be 0) */
	uint64_t version;  /* the partition's version counter */
} rusk_bk_count;

typedef struct rusk_backend_ops {
	const char *name;
	/*
	 * snapshot: copies partition p's free bitmap into words[0..n_words) and its version.
	 * RUSK_OK, RUSK_ERANGE (p), RUSK_EINVAL (n_words too small), RUSK_EIO (backend).
	 */
	int (*snapshot)(void *self, uint32_t p, uint64_t *words, uint32_t n_words,
	                uint64_t *version);
	/*
	 * commit: n claims, all in partition p, sent together (one round trip for a remote
	 * backend). rcs[i] = RUSK_OK (leases[off..off+claims[i].n) hold the leases, off the
	 * sum of the earlier claims' n), RUSK_ECONFLICT (an RU is held: nothing taken),
	 * RUSK_ESHORT_ (the RUs are free but the machine's memory or GPU shares are short for
	 * a vector claim: nothing taken; a backend that cannot tell answers RUSK_ECONFLICT),
	 * RUSK_EDUP, RUSK_EINVAL, RUSK_ERANGE, RUSK_EIO (unknown outcome: the recount settles
	 * it). Returns RUSK_OK when every claim got an answer.
	 */
	int (*commit)(void *self, uint32_t p, const rusk_bk_claim *claims, size_t n, int *rcs,
	              rusk_lease *leases);
	/* release: n leases of partition p; rcs[i] as rusk_ru_release's return. */
	int (*release)(void *self, uint32_t p, const rusk_bk_lease *ls, size_t n, int *rcs);
	/* recount: counts partition p (quiescence gives exact figures). */
	int (*recount)(void *self, uint32_t p, rusk_bk_count *out);
	/*
	 * snapshots (NULL: none; callers then call snapshot per partition): n partitions'
	 * snapshots in one call, partition ps[i] into words[i][0..n_words[i]) and
	 * versions[i] (versions may be NULL), rcs[i] as snapshot's return for it. A remote
	 * backend sends them together (Redis: one pipeline per node, about one round trip in
	 * all). RUSK_OK when every partition was read, else the first failure (RUSK_EIO: the
	 * partitions with rcs[i] RUSK_OK were read all the same).
	 */
	int (*snapshots)(void *self, const uint32_t *ps, size_t n, uint64_t *const *words,
	                 const uint32_t *n_words, uint64_t *versions, int *rcs);
	/*
	 * unavailable (NULL: never): 1 while partition p's node is marked unavailable (Redis:
	 * rusk_redis_part_unavailable_, a stuck master skipped while others answer), else 0.
	 * While it is, commit and release there answer RUSK_EAGAIN, nothing sent, and a
	 * read of it fails. The connection's thread.
	 */
	int (*unavailable)(void *self, uint32_t p);
} rusk_backend_ops;

/* A backend: its operations and its state. */
typedef struct rusk_backend {
	const rusk_backend_ops *ops;
	void *self;
} rusk_backend;

/*
 * rusk_backend_memory_: the in-memory backend over cluster c (which must outlive it).
 * Fills *out; RUSK_EINVAL on NULL. Any thread.
 */
int rusk_backend_memory_(rusk_cluster *c, rusk_backend *out);

/*
 * A remote master state attached to a cluster (remote.h has the design): the cluster's own
 * agents then sync, commit and release through this seam, each thread on a connection of its
 * own that the opener below makes.
 */
typedef struct rusk_remote rusk_remote;

/* What one connection met on its link (rusk_remote_opener.link), summed or maxed over the
 * connections by rusk_remote_stats_. */
typedef struct rusk_remote_link {
	uint64_t reconnects; /* connections lost (a master killed) and the slot map refreshed */
	uint64_t redirects;  /* MOVED / ASK answers followed (a slot moved, a failover) */
	uint64_t resent;     /* pipelines sent again after an unknown outcome */
	uint64_t outage_ns;  /* time its calls waited for a slot to be served again */
} rusk_remote_link;

/* How the kernel gets a connection for a thread: open fills *out (the seam) and *handle
 * (what close and error get back), or returns an error with a message in err; close ends
 * one; error (may be NULL) says what the connection's last failed call met. open and error
 * are called by the thread that uses the connection, close at detach. link (may be NULL:
 * zeros) reads a connection's link counters into *out from any thread while its own thread
 * may be using it (rusk_remote_stats_): it must read them without a data race (e.g. relaxed
 * loads of counters the connection's thread alone writes), and cost no more than that. */
typedef struct rusk_remote_opener {
	int (*open)(void *arg, rusk_backend *out, void **handle, char *err, size_t errlen);
	void (*close)(void *arg, void *handle);
	const char *(*error)(void *arg, void *handle);
	void (*done)(void *arg); /* may be NULL: called once at detach, after every close */
	void *arg;
	void (*link)(void *arg, void *handle, rusk_remote_link *out);
} rusk_remote_opener;

/* A backend commit's answer, never a public one: a vector claim's RUs are free but the
 * machine's memory or GPU shares are short (the Redis commit script's code 3). Counted
 * memory_short, not a conflict (remote.c, rusk agent). */
#define RUSK_ESHORT_ (-100)

/* What the remote did, summed over every connection (rusk_remote_stats_). */
typedef struct rusk_remote_stats {
	uint64_t connections;     /* opened (one per thread that used the remote) */
	uint64_t open_failures;   /* opens that failed (the thread's call failed) */
	uint64_t snapshots;       /* partition snapshots read */
	uint64_t snapshot_trips;  /* calls that read them (a view's sync step: all its
	                           * partitions in one call, about one round trip) */
	uint64_t commit_trips;    /* commit pipelines sent (one per partition per decision) */
	uint64_t claims;          /* machine claims in them */
	uint64_t claims_lost;     /* refused: an RU held elsewhere */
	uint64_t claims_short;    /* refused: a vector claim's memory / GPUs short (RUSK_ESHORT_) */
	uint64_t claims_unknown;  /* no answer (RUSK_EIO, an outage): retried, not conflicts */
	uint64_t rollbacks;       /* gang commits given back after a part was refused */
	uint64_t local_refused;   /* granted remotely, refused by the local mirror (given back) */
	uint64_t release_trips;   /* release pipelines sent */
	uint64_t released;        /* leases the remote released */
	uint64_t release_refused; /* leases it refused (not the owner, stale, free) */
	/* Of them, leases the remote did not hold for the releasing task (another owner, free,
	 * another generation: RUSK_ENOTOWNER, RUSK_EFREE, RUSK_ESTALE): its acknowledged claim
	 * was lost (a failover) or taken (a forced reclaim) before the release; and the tasks
	 * they belonged to (distinct owners per release call: a task's leases go in one). */
	uint64_t release_not_held, release_not_held_tasks;
	uint64_t errors;      /* calls that failed (RUSK_EIO: no answer, outcome unknown) */
	uint64_t batches;     /* commit batches (rusk_remote_set_batch_: several tasks'
	                       * decisions committed together, one pipeline a partition) */
	uint64_t batch_tasks; /* tasks in them */
	uint64_t corrupt;     /* answers RUSK_ECORRUPT (the state damaged: the run stops at it) */
	uint64_t commit_p50_ns, commit_p99_ns; /* commit round trip, over every connection */
	/* The links (rusk_remote_opener.link), merged on read from each connection's own
	 * counters (no shared word on the commit path): reconnects, redirects, resent and
	 * outage_ns summed over the connections (outage_ns: connection-seconds, one second
	 * per thread that waited), outage_max_ns the most one connection waited in all. */
	rusk_remote_link link;
	uint64_t outage_max_ns;
	/* Unavailable partitions (the backend's unavailable op; rusk_unavail below): times a
	 * partition was found so, partition-ns marked, tasks placed while one was, releases
	 * put off (each time: sent again later, rusk_remote_drain_), and those still put off
	 * now. max_gap_ns: the longest time between two commits that won RUs (any thread). */
	uint64_t parts_unavailable, unavailable_ns, placed_unavailable, releases_deferred;
	uint64_t releases_put_off, max_gap_ns;
} rusk_remote_stats;

/*
 * Unavailable partitions, as the callers of a backend follow them (rusk agent's loop, the
 * remote's threads): since[p], when p was found unavailable (0: it is not; relaxed CAS, so
 * several threads may note the same partition: the first mark counts, the first unmark ends
 * it), and the counts the reports give (parts_unavailable, unavailable_s,
 * placed_while_unavailable, releases_deferred). Any thread (relaxed atomics).
 */
typedef struct rusk_unavail {
	uint64_t *since; /* [n_parts]: CLOCK_MONOTONIC ns of the mark, 0: none */
	uint32_t n_parts;
	uint32_t now_marked; /* partitions marked now */
	uint64_t marked;     /* marks made */
	uint64_t ns;         /* partition-ns of the marks ended */
	uint64_t placed;     /* tasks placed while a partition was marked */
	uint64_t deferred;   /* releases put off (each time) */
} rusk_unavail;
/* rusk_unavail_init_: n_parts partitions, none marked. RUSK_OK / RUSK_ENOMEM. */
int rusk_unavail_init_(rusk_unavail *u, uint32_t n_parts);
void rusk_unavail_free_(rusk_unavail *u);
/* rusk_unavail_note_: p found unavailable (1) or answering (0) at now (ns). */
void rusk_unavail_note_(rusk_unavail *u, uint32_t p, int unavailable, uint64_t now);
/* rusk_unavail_any_: whether a partition is marked now. */
int rusk_unavail_any_(const rusk_unavail *u);
/* rusk_unavail_placed_: n tasks placed now (counted when a partition is marked). */
void rusk_unavail_placed_(rusk_unavail *u, uint64_t n);
/* rusk_unavail_s_: partition-seconds marked, the open marks counted up to now. */
double rusk_unavail_s_(const rusk_unavail *u, uint64_t now);

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

/*
 * rusk_remote_drain_: sends the releases put off (their partition unavailable when they
 * were made: remote.h "Unavailable partitions") again from the calling thread, every
 * 100 ms, until none is left, deadline_ns (CLOCK_MONOTONIC) passes or stop(arg) says so
 * (stop may be NULL). Returns how many are still put off. After every thread that
 * released stopped (the run's end, before its recount); any thread.
 */
size_t rusk_remote_drain_(rusk_cluster *c, uint64_t deadline_ns, int (*stop)(void *), void *arg);

/*
 * rusk_remote_put_off_: whether owner's lease of RU ru (global) is among the releases put off
 * (held in the remote though its task freed it locally: not an orphan). owner: the remote's
 * owner id (with the namespace, "Owner ids"). Any thread; a scan under a lock (for the rare
 * suspects of a ledger check).
 */
int rusk_remote_put_off_(const rusk_cluster *c, uint64_t owner, uint32_t ru);

/* rusk_remote_stats_: a copy of the counters (relaxed sums: exact at quiescence). Any
 * thread; zeros when no remote is attached. */
void rusk_remote_stats_(const rusk_cluster *c, rusk_remote_stats *out);

/*
 * rusk_remote_set_batch_: how many tasks an agent thread of the dispatcher decides against
 * its view before it commits them together, one pipeline per partition (remote.h,
 * "Batches"), with its releases sent once per turn of its loop. 0 or 1: each task's
 * decision commits on its own and each release goes at once (one round trip each). At
 * quiescence (after attach, before the dispatcher starts its agents). RUSK_OK, RUSK_EINVAL
 * (no remote attached).
 */
int rusk_remote_set_batch_(rusk_cluster *c, uint32_t batch);

/*
 * rusk_remote_set_owner_ns_: from now on c's agents commit and release their tasks
 * remotely under owner id ns << RUSK_OWNER_NS_SHIFT | task id (the owner ids above), so
 * that another process sharing the state whose task ids are the same numbers (another
 * `rusk run`, under another ns) never owns, releases or is refused on this one's RUs. The
 * local array keeps the plain task ids. At quiescence (after attach, before the dispatcher
 * starts its agents). RUSK_OK, RUSK_EINVAL (no remote attached, ns > RUSK_OWNER_NS_MAX).
 */
int rusk_remote_set_owner_ns_(rusk_cluster *c, uint64_t ns);

/* rusk_remote_owner_ns_: the namespace set by rusk_remote_set_owner_ns_ (0: none, or no
 * remote). Any thread. */
uint64_t rusk_remote_owner_ns_(const rusk_cluster *c);

/* rusk_remote_last_error_: the message of the last failed open or call into buf ("" if
 * none or no remote). Any thread (copied under the remote's lock). */
void rusk_remote_last_error_(const rusk_cluster *c, char *buf, size_t len);

#endif /* RUSK_KERNEL_BACKEND_H */
