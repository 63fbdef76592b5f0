/* SPDX-License-Identifier: MIT */
/*
 * The cluster model: machines (cores -> RUs, memory, GPUs, a platform type), grouped into
 * racks, racks into cells, and cells into P partitions (ParSync Supp. B: partitions follow
 * the network topology). A cluster owns the master RU array (rusk/ru.h).
 *
 * Numbering: machines, RUs, racks, cells and partitions are dense indices from 0. RUs of
 * one machine are contiguous, machines of one rack, racks of one cell and cells of one
 * partition too, so a partition is one contiguous range of RUs.
 *
 * Threads: a cluster is created and destroyed by one thread; between the two, every query
 * and every rusk_ru_* call may be made from any number of threads at once, without
 * registration. Queries of counters return values that are exact at quiescence and may
 * lag in-flight commits by at most one operation per thread otherwise.
 *
 *   call                                from                    concurrently with
 *   rusk_cluster_params_init            any thread              everything
 *   rusk_cluster_create(_openb)         any thread              everything (the cluster is
 *                                                               new; the caller owns it)
 *   rusk_cluster_destroy                the owner               nothing on c: every other
 *                                                               thread is done with it
 *   rusk_cluster_machines/_rus/...,     any thread              every call but destroy; counters
 *     _clock, _memory_bytes, _machine,                          lag commits in flight
 *     _partition, _platform, _free_rus,
 *     _ru_machine, rusk_ru_score
 *   rusk_machine_fail / _drain / _up    any thread (fail: a     commits, releases,
 *                                       registered one while    rusk_agent_place and queries;
 *                                       a dispatcher is         not another change of the
 *                                       attached: it delivers   same machine, not
 *                                       REVOKED there)          rusk_dispatch_create on c
 *   rusk_cluster_verify                 a thread that           nothing that commits, releases
 *                                       happens-after the last  or changes the topology
 *                                       commit and release      (quiescence)
 *
 * A rusk_revoke_fn runs on the thread that called rusk_machine_fail (or rusk_ru_reclaim).
 * rusk/ru.h has the commit and release calls, rusk/vec.h the vector ones.
 */
#ifndef RUSK_CLUSTER_H
#define RUSK_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include <rusk/clock.h>
#include <rusk/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Shared resources tracked per machine for interference (Tarcil §3.2: ten resources). */
#define RUSK_N_RESOURCES         10
/* Most RUs one machine may have: the per-machine interference sums are 16-bit lanes,
 * and 661 tenants x 99 (the highest caused interference) still fits in one. */
#define RUSK_MAX_RUS_PER_MACHINE 661u
/* Most platform types one cluster may have. */
#define RUSK_MAX_PLATFORMS       32u

typedef struct rusk_cluster rusk_cluster;

/* Proof of holding one RU (rusk/ru.h). Plain value; the embedder owns and copies it. */
typedef struct rusk_lease {
	uint32_t ru;
	uint32_t gen;
} rusk_lease;

/* One platform type (hardware generation) and its share of the machines. */
typedef struct rusk_platform {
	const char *name; /* copied by rusk_cluster_create */
	double share;     /* relative weight of this type in the mix, > 0 */
	double speed;     /* relative per-core speed (1.0 = reference), > 0 */
} rusk_platform;

/* Parameters of a cluster; set defaults with rusk_cluster_params_init, then change. */
typedef struct rusk_cluster_params {
	uint32_t machines;              /* > 0 (default 100000) */
	uint32_t rus_per_machine;       /* 1..RUSK_MAX_RUS_PER_MACHINE (default 16) */
	uint32_t mem_mib_per_machine;   /* default 65536 */
	uint32_t gpus_per_machine;      /* 0..RUSK_MAX_GPUS_PER_MACHINE (8, rusk/vec.h), of each
	                                 * machine's platform model (default 0) */
	uint32_t machines_per_rack;     /* > 0 (default 40) */
	uint32_t racks_per_cell;        /* > 0 (default 5) */
	uint32_t partitions;            /* 1..number of cells (default 20) */
	uint32_t spare_machines;        /* extra slots after `machines`, built DOWN, that
	                                 * rusk_machine_up adds online (default 0) */
	uint32_t ru_milli;              /* milli-cores per RU of an openb node list, e.g. 500:
	                                 * two RUs per core (default 1000; 0 means 1000) */
	double score_mean;              /* slot score per RU ~ Normal(mean, variance), clamped
	                                 * to [0, 65.535]; ParSync §6: mean 10 (default) */
	double score_variance;          /* default 2 */
	const rusk_platform *platforms; /* NULL: the default three-type mix */
	uint32_t n_platforms;           /* entries in platforms, 1..RUSK_MAX_PLATFORMS */
	uint64_t seed;                  /* platform assignment comes from this seed only */
	const rusk_clock *clock;        /* NULL: rusk_clock_monotonic(); must outlive the cluster */
} rusk_cluster_params;

/* Static description of one machine, plus its live counters (see rusk_cluster_machine). */
typedef struct rusk_machine_info {
	uint32_t id;       /* dense machine index */
	uint32_t first_ru; /* its RUs are [first_ru, first_ru + rus) */
	uint32_t rus;      /* cores, one RU each */
	uint32_t mem_mib;
	uint32_t gpus;
	uint32_t platform; /* index into the cluster's platform table */
	uint32_t rack, cell, partition;
	uint32_t source_row; /* openb: 1-based data row of the node list; 0 for parameters */
	uint32_t replica;    /* openb: which copy of the node list (0 = first) */
	uint32_t state;      /* live: RUSK_MACHINE_UP / _DRAINING / _DOWN */
	uint32_t free_rus;   /* live: RUs of this machine free to commit */
	/* live: sum over this machine's tenant RUs of the interference each causes on
	 * resource i (Tarcil §3.2 eq. 3 numerator before excluding the RU itself). */
	uint32_t interference[RUSK_N_RESOURCES];
} rusk_machine_info;

/* One partition: contiguous cells, machines and RUs, plus its live free counter. */
typedef struct rusk_partition_info {
	uint32_t id;
	uint32_t first_cell, cells;
	uint32_t first_machine, machines;
	uint32_t first_ru, rus;
	uint32_t free_rus;      /* live */
	double mean_free_score; /* live: mean slot score of its free RUs (0 when none) */
} rusk_partition_info;

/* Machine states. */
enum rusk_machine_state {
	RUSK_MACHINE_UP = 0,       /* its free RUs can be committed */
	RUSK_MACHINE_DRAINING = 1, /* no new commits; running tasks finish and release */
	RUSK_MACHINE_DOWN = 2,     /* failed, drained or not yet added: no RU is usable */
};

/* Called once per tenure revoked by rusk_machine_fail, on the failing thread, and only for
 * a lease its holder was given (rusk/sched.h, rusk_agent_place: "Revocations"). */
typedef void (*rusk_revoke_fn)(uint64_t task, rusk_lease lease, void *ctx);

/*
 * rusk_cluster_params_init: fills *p with the defaults documented above (NULL: nothing).
 * Any thread.
 */
void rusk_cluster_params_init(rusk_cluster_params *p);

/*
 * rusk_cluster_create: builds a cluster from parameters, every RU free.
 * Returns RUSK_OK and sets *out, or RUSK_EINVAL (also a clock without now_ns) /
 * RUSK_ESHAPE / RUSK_ENOMEM with a
 * one-line message in err (when err != NULL, truncated to errlen) and *out untouched.
 * Platform types are drawn from p->seed: the same parameters give the same cluster.
 * Any thread; the caller owns the cluster and frees it with rusk_cluster_destroy.
 */
int rusk_cluster_create(const rusk_cluster_params *p, rusk_cluster **out, char *err, size_t errlen);

/*
 * rusk_cluster_create_openb: builds a cluster from an Alibaba openb node list
 * (CSV: sn,cpu_milli,memory_mib,gpu,model). Each row is one machine with
 * cpu_milli / p->ru_milli RUs, memory_mib of memory and `gpu` GPUs (rusk/vec.h); its
 * platform, which is also its GPUs' model, is the model column ("cpu" when empty).
 * The list is replicated in order until `machines` machines exist (0: exactly the
 * list once; a partial last copy is allowed). Topology (machines_per_rack,
 * racks_per_cell, partitions), seed and clock come from *p; its machine-shape fields
 * are ignored. Errors: RUSK_EIO (cannot open: message names the path), RUSK_EPARSE
 * (message is "PATH:LINE: reason"), RUSK_ESHAPE, RUSK_EINVAL, RUSK_ENOMEM.
 * Any thread; the caller owns the cluster.
 */
int rusk_cluster_create_openb(const char *path, uint32_t machines, const rusk_cluster_params *p,
                              rusk_cluster **out, char *err, size_t errlen);

/*
 * rusk_cluster_destroy: frees the cluster. No other thread may use it any more; NULL is
 * accepted. Leases still outstanding become meaningless.
 */
void rusk_cluster_destroy(rusk_cluster *c);

/* Sizes; 0 for a NULL cluster. Any thread. */
uint32_t rusk_cluster_machines(const rusk_cluster *c);
uint32_t rusk_cluster_rus(const rusk_cluster *c);
uint32_t rusk_cluster_partitions(const rusk_cluster *c);
uint32_t rusk_cluster_racks(const rusk_cluster *c);
uint32_t rusk_cluster_cells(const rusk_cluster *c);
uint32_t rusk_cluster_platforms(const rusk_cluster *c);

/* The clock the cluster was built with (NULL for a NULL cluster). Any thread. */
const rusk_clock *rusk_cluster_clock(const rusk_cluster *c);

/* Bytes the cluster allocated (RU array, per-RU and per-machine records, partitions),
 * and of those the bytes the master RU array and its counters take; 0 for a NULL cluster.
 * Any thread. */
size_t rusk_cluster_memory_bytes(const rusk_cluster *c);
size_t rusk_cluster_array_bytes(const rusk_cluster *c);

/*
 * rusk_cluster_machine / rusk_cluster_partition: fill *out for machine m / partition p.
 * RUSK_ERANGE when the index is out of range, RUSK_EINVAL on NULL. Live fields are read
 * with relaxed loads. Any thread.
 */
int rusk_cluster_machine(const rusk_cluster *c, uint32_t m, rusk_machine_info *out);
int rusk_cluster_partition(const rusk_cluster *c, uint32_t p, rusk_partition_info *out);

/*
 * rusk_cluster_platform: name and speed of platform type i (name owned by the cluster).
 * RUSK_ERANGE / RUSK_EINVAL. Any thread.
 */
int rusk_cluster_platform(const rusk_cluster *c, uint32_t i, const char **name, double *speed);

/* Machine that holds RU `ru`, or UINT32_MAX when out of range (or c is NULL). Any thread. */
uint32_t rusk_cluster_ru_machine(const rusk_cluster *c, uint32_t ru);

/* Total free RUs (sum of the partition counters; 0 for a NULL cluster). Any thread; see the
 * lag note above. */
uint64_t rusk_cluster_free_rus(const rusk_cluster *c);

/* Slot score of RU `ru` (ParSync §4.3), or -1 when out of range (or c is NULL). Any thread. */
double rusk_ru_score(const rusk_cluster *c, uint32_t ru);

/*
 * Online topology changes. Each may run while any number of threads commit and release;
 * two changes of the same machine must not run at once (the caller serialises them, e.g.
 * one topology thread). The RUs' new state is visible to every commit at once and to
 * every partition snapshot published after the call returns; call
 * rusk_snapshot_publish(c, partition) to push it to views without waiting.
 *
 * rusk_machine_fail: the machine goes DOWN now. Every held RU is revoked and reported
 * through revoked(task, lease, ctx) (NULL: not reported) so the caller can re-queue the
 * task; the holder's later release of that lease is refused (RUSK_EOFFLINE while the
 * machine is down; RUSK_EFREE or RUSK_ENOTOWNER after rusk_machine_up). Free RUs stop
 * being free. Each revocation is reported exactly once, and the callback names only
 * leases their holder was given: an RU that a concurrent rusk_agent_place has taken but
 * not yet returned is waited for (one place() call: microseconds; a full scan for the
 * central baseline) and then either reported by place() itself (not returned, a
 * conflict) or, once returned, by the callback. So the call waits for in-flight place()
 * calls on this machine's RUs; a thread that died inside place() makes it wait forever,
 * as one that died mid-commit does.
 * Returns RUSK_OK, RUSK_ERANGE, RUSK_EINVAL.
 *
 * rusk_machine_drain: the machine goes DRAINING: free RUs stop being free, held RUs go
 * offline when their tasks release them (nothing is revoked). It stays DRAINING (its
 * free_rus 0) until rusk_machine_up or rusk_machine_fail.
 *
 * rusk_machine_up: a DOWN or DRAINING machine (including a spare slot) comes UP: every
 * offline RU becomes free; RUs still held stay with their tasks.
 */
int rusk_machine_fail(rusk_cluster *c, uint32_t m, rusk_revoke_fn revoked, void *ctx);
int rusk_machine_drain(rusk_cluster *c, uint32_t m);
int rusk_machine_up(rusk_cluster *c, uint32_t m);

/*
 * rusk_cluster_verify: recounts every RU record and compares with the per-machine free
 * counters, the per-machine interference sums and the per-partition free counters.
 * Returns RUSK_OK, or RUSK_ECORRUPT with the first disagreement in err.
 * Call only at quiescence (no commit or release in flight), from any thread that
 * happens-after the last one (e.g. after pthread_join).
 */
int rusk_cluster_verify(const rusk_cluster *c, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_CLUSTER_H */
