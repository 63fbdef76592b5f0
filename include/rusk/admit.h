/* SPDX-License-Identifier: MIT */
/*
 * Admission control (Tarcil §4): coarse statistics that say, before sampling, whether a
 * task is likely to find RUs of good quality now, and how long it should wait if not.
 *
 * Buckets. Every machine's contention vector (the average interference its tenants cause
 * on each of the RUSK_N_RESOURCES shared resources, what a free RU there would suffer) is
 * hashed with random-hyperplane LSH (cosine similarity: the sign of its dot product with k
 * seeded Gaussian normals) into one of `buckets` buckets; an uncontended machine (zero
 * vector) has bucket 0 to itself. One free-RU count per bucket is kept exact by the commit,
 * release and topology paths of the kernel (see core/kernel/admit.c for the lock-free folding);
 * a bucket's representative vector (an average of the vectors hashed into it) stands for
 * its quality.
 *
 * Time until free. Each bucket records when RUs became free in it; the mean and deviation
 * of the interval between frees ("time-until-free") come from monotonic counters, over
 * the history since the last-but-one rusk_admit_roll().
 *
 * Check. A task matches the buckets whose quality for it (Tarcil Q with the representative
 * vector; with the slot-score model, every bucket) is within `match` of the best bucket.
 * While the load is below `min_load` it is admitted. Otherwise it is admitted when the
 * matching buckets hold at least `slack` x the RUs it needs and a share of all free RUs
 * large enough that r_max uniform candidates miss all of them with probability at most eps
 * (share >= 1 - eps^(1/r_max): the sample size the guarantee needs stays <= r_max, Tarcil
 * §3.3-§4). Otherwise it waits the estimated time until the missing RUs free up in its
 * buckets, unless that estimate exceeds the bound mu + 2 sigma of the time until the next
 * one is freed (then it is scheduled at once), and never longer than that bound (Tarcil:
 * "an upper bound for waiting time at mu + 2 sigma"); a task that has waited that long is
 * admitted
 * anyway. High-priority tasks bypass admission (Tarcil §5.3).
 *
 * Threads. No call takes a lock or needs RCU registration.
 *
 *   call                                    from                  concurrently with
 *   rusk_admit_params_init                  any thread            everything
 *   rusk_admit_attach / rusk_admit_detach   one thread, quiescent no commit, release or
 *                                                                 topology change of c
 *   rusk_cluster_admit, rusk_admit_buckets, any thread            everything (counts are
 *   rusk_admit_hash, rusk_admit_counts,                           racy snapshots)
 *   rusk_admit_recount, rusk_admit_bucket,
 *   rusk_admit_check, rusk_admit_reason_name
 *   rusk_admit_roll                         one thread at a time  everything but itself
 */
#ifndef RUSK_ADMIT_H
#define RUSK_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/cluster.h>
#include <rusk/sched.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RUSK_ADMIT_MAX_BUCKETS 64

typedef struct rusk_admit_params {
	uint32_t buckets;   /* 2..RUSK_ADMIT_MAX_BUCKETS, default 20 (Tarcil §4) */
	uint64_t seed;      /* hyperplanes; default 1 */
	double match;       /* quality distance to the best bucket that still matches, 0.1 */
	double slack;       /* admit while matching free RUs >= slack x RUs needed, 2 */
	double min_load;    /* below this cluster load every task is admitted, 0.8 */
	uint32_t min_frees; /* frees a bucket must have seen before its history counts, 16 */
	double eps;         /* the agents' sampling guarantee (rusk_agent_params): with r_max */
	uint32_t r_max;     /* candidates, miss every matching RU with prob. <= eps; 0.05, 32 */
} rusk_admit_params;

typedef struct rusk_admit rusk_admit;

/* The defaults above into *p (NULL: nothing). */
void rusk_admit_params_init(rusk_admit_params *p);

/*
 * rusk_admit_attach: starts admission statistics on cluster c (at most one per cluster).
 * Bucket counts start from a recount of the live state, so no commit, release or topology
 * change may be in flight during the call (call it before agents start). RUSK_EINVAL (with
 * a message naming the parameter), RUSK_EBUSY (already attached), RUSK_ENOMEM.
 */
int rusk_admit_attach(rusk_cluster *c, const rusk_admit_params *p, rusk_admit **out, char *err,
                      size_t errlen);
/* Detaches and frees; same quiescence rule as attach. NULL is ignored. rusk_cluster_destroy
 * detaches (and frees) an attached object itself: do not detach it after that. */
void rusk_admit_detach(rusk_admit *a);
/* The admission object attached to c, or NULL. */
rusk_admit *rusk_cluster_admit(const rusk_cluster *c);

/* Its bucket count (0 for NULL). */
uint32_t rusk_admit_buckets(const rusk_admit *a);
/* The bucket a vector of per-RU contention values (0..99 each) hashes to; UINT32_MAX when
 * a or the vector is NULL. Any thread. */
uint32_t rusk_admit_hash(const rusk_admit *a, const double contention[RUSK_N_RESOURCES]);

/*
 * rusk_admit_counts: the maintained free RUs of each bucket into out[0..n) (n >= buckets).
 * Relaxed reads: exact once commits and releases are quiescent, in flight by at most the
 * RUs being committed or released meanwhile. Any thread.
 */
int rusk_admit_counts(const rusk_admit *a, uint64_t *out, uint32_t n);
/*
 * rusk_admit_recount: the same counts from scratch: every machine's live vector hashed,
 * its free RUs counted from the bitmap. Equal to rusk_admit_counts at quiescence (the
 * invariant the stress tests check). Any thread. Both return RUSK_OK, or RUSK_EINVAL for a
 * or out NULL or n below the bucket count.
 */
int rusk_admit_recount(const rusk_admit *a, uint64_t *out, uint32_t n);

typedef struct rusk_admit_bucket_info {
	uint64_t free_rus; /* maintained count */
	uint64_t frees;    /* RUs that became free in it, in the current history */
	double mean_ns;    /* time-until-free: mean interval between frees (0: no history) */
	double sd_ns;      /* its standard deviation */
	double contention[RUSK_N_RESOURCES]; /* representative per-RU contention vector */
} rusk_admit_bucket_info;
/* Bucket b's statistics into *out: RUSK_OK, RUSK_ERANGE (b), RUSK_EINVAL (NULL). */
int rusk_admit_bucket(const rusk_admit *a, uint32_t b, rusk_admit_bucket_info *out);

/*
 * rusk_admit_roll: starts a new history window; the statistics then cover the previous
 * and the current window (Tarcil keeps "recent history"). Call it from one thread at a
 * time, e.g. a driver's periodic timer. Optional: without it history runs from attach.
 * NULL is ignored.
 */
void rusk_admit_roll(rusk_admit *a);

typedef enum rusk_admit_verdict {
	RUSK_ADMIT_NOW = 0,  /* schedule it now */
	RUSK_ADMIT_WAIT = 1, /* queue it; check again after wait_ns */
} rusk_admit_verdict;

typedef enum rusk_admit_reason {
	RUSK_ADMIT_LOW_LOAD = 0,   /* load below min_load */
	RUSK_ADMIT_MATCHED = 1,    /* enough matching RUs are free */
	RUSK_ADMIT_PRIORITY = 2,   /* high-priority task: bypasses admission */
	RUSK_ADMIT_BOUND = 3,      /* it has waited mu + 2 sigma already */
	RUSK_ADMIT_NO_HISTORY = 4, /* no time-until-free history to wait on */
	RUSK_ADMIT_SCARCE = 5,     /* WAIT: too few matching RUs free */
	RUSK_ADMIT_TOO_LONG = 6,   /* they would take longer than the bound to free: go now */
} rusk_admit_reason;

typedef struct rusk_admit_decision {
	rusk_admit_verdict verdict;
	rusk_admit_reason reason;
	uint32_t matched_buckets;
	uint64_t matched_free; /* free RUs in the matching buckets */
	double best_quality;   /* quality of the best bucket for the task */
	uint64_t wait_ns;      /* WAIT: check again after this long */
	uint64_t estimate_ns;  /* when the missing RUs are expected to have been freed */
	uint64_t bound_ns;     /* mu + 2 sigma of the time until the next one is freed */
	uint64_t missing;      /* RUs still to be freed in the matching buckets before it is
	                        * admitted (0 when enough are free) */
} rusk_admit_decision;

/*
 * rusk_admit_check: decides for task t (its rus, priority and profile) that has already
 * waited `waited_ns` at admission. The quality model is the agents' (score: every bucket
 * matches, so only the count matters). Never blocks and never changes state. RUSK_OK or
 * RUSK_EINVAL. Any thread.
 */
int rusk_admit_check(const rusk_admit *a, const rusk_task *t, rusk_quality_model qm,
                     uint64_t waited_ns, rusk_admit_decision *d);

/* Static names ("low-load", ..., "too-long"); "unknown" out of range. */
const char *rusk_admit_reason_name(rusk_admit_reason r);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_ADMIT_H */
