/* SPDX-License-Identifier: MIT */
/*
 * The master RU array: one 64-bit record per RU, changed only by compare-and-swap.
 *
 *   commit:  free            -> taken by task T   (a lost CAS is a conflict)
 *   release: taken by T, g   -> free, generation g+1 (checks owner and generation)
 *
 * A successful commit returns a lease {ru, gen}; only that lease, with the same task id,
 * releases the RU. A second release of the same lease finds the RU free (RUSK_EFREE) or,
 * if the task took it again, a newer generation (RUSK_ESTALE); a release by another task
 * finds a different owner (RUSK_ENOTOWNER). Nothing is absorbed silently.
 *
 * Threads: every function here may be called concurrently from any threads on the same
 * cluster, with no registration and no lock. A successful commit is an acquire operation
 * and a release a release operation on the RU's record: whatever the previous holder wrote
 * before releasing is visible to the next holder after its commit.
 *
 *   call                                from                    concurrently with
 *   rusk_ru_commit, _commit_gang,       any thread; no          every rusk_ru_* call, every
 *     _commit_incremental, _commit_vec  registration, no lock   query of rusk/cluster.h and
 *                                                               topology change (a change
 *                                                               waits for a commit in flight)
 *   rusk_ru_release, _release_many      any thread              the same
 *   rusk_ru_reclaim                     any thread              commits and releases of other
 *                                                               tasks; no thread may act for
 *                                                               the tasks dead() names
 *   rusk_ru_state                       any thread              everything (a relaxed read)
 *
 * Overlapping gangs committed at once should list their RUs in ascending order
 * (rusk_ru_commit_gang). The cluster itself must outlive every call (rusk/cluster.h).
 */
#ifndef RUSK_RU_H
#define RUSK_RU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/cluster.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Task ids are 1..RUSK_TASK_ID_MAX (40 bits: 127 days of ids at 100K tasks/s). An id may
 * be reused once its task holds nothing: the lease generation tells tenures apart. */
#define RUSK_TASK_ID_MAX ((UINT64_C(1) << 40) - 2)
/* Generations wrap at 2^21: a stale lease is mistaken for a live one only if the same task
 * holds the same RU again exactly a multiple of 2.1M tenures of that RU later. */
#define RUSK_GEN_MASK    ((UINT32_C(1) << 21) - 1)

/* Interference a task causes on each shared resource, 0..99 (Tarcil §3.2). A zero
 * profile (or NULL) costs nothing on commit and release. */
typedef struct rusk_profile {
	uint8_t c[RUSK_N_RESOURCES];
} rusk_profile;

/*
 * What a task needs on its machine besides RUs (rusk/vec.h): memory and GPUs. All zero for
 * an RU-only task. A task with any of these is placed on one machine, whole (a gang).
 */
typedef struct rusk_vec_demand {
	uint32_t mem_mib;    /* memory, MiB (0: none) */
	uint16_t gpus;       /* GPUs (0: none) */
	uint16_t gpu_milli;  /* share of each, 1..1000; below 1000 only with gpus == 1: a
	                      * fraction of one GPU that other tasks may share */
	uint32_t gpu_models; /* accepted GPU models, bit i = platform i (rusk_gpu_model);
	                      * 0: any. A hard constraint, unlike preferred machines */
} rusk_vec_demand;

/* Whether d asks for anything besides RUs. */
static inline int rusk_vec_any(const rusk_vec_demand *d)
{
	return d->mem_mib != 0 || d->gpus != 0 || d->gpu_milli != 0 || d->gpu_models != 0;
}

/* Snapshot of one RU record. */
typedef struct rusk_ru_info {
	uint64_t owner; /* 0 when free, RUSK_OWNER_NONE when offline */
	uint32_t gen;
} rusk_ru_info;

/* rusk_ru_info.owner of an RU whose machine is down or draining. */
#define RUSK_OWNER_NONE ((UINT64_C(1) << 40) - 1)

/*
 * rusk_ru_commit: takes RU `ru` for `task` if it is free.
 * Returns RUSK_OK and *out = its lease; RUSK_ECONFLICT when another task holds it (the
 * caller should mark it taken in its view and resample); RUSK_EOFFLINE when its machine
 * is down or draining (likewise: mark and resample); RUSK_EDUP when `task` already
 * holds it; RUSK_EINVAL (task id 0 or > RUSK_TASK_ID_MAX, profile value > 99, NULL
 * cluster/out); RUSK_ERANGE (ru out of range). On success the machine's and partition's
 * free counters drop by one and the profile is added to the machine's interference sums.
 * Any thread; lock-free (one CAS, retried only if the record changed while free).
 */
int rusk_ru_commit(rusk_cluster *c, uint64_t task, uint32_t ru, const rusk_profile *prof,
                   rusk_lease *out);

/*
 * rusk_ru_release: frees the RU of `lease` held by `task`.
 * Returns RUSK_OK; RUSK_EFREE (already free: double release), RUSK_ENOTOWNER (held by
 * another task), RUSK_ESTALE (held by `task` under a newer generation), RUSK_EOFFLINE
 * (revoked: its machine failed), RUSK_ERANGE, RUSK_EINVAL. A rejected release changes
 * nothing. On a draining machine the RU goes offline instead of free. Any thread.
 */
int rusk_ru_release(rusk_cluster *c, uint64_t task, rusk_lease lease);

/*
 * rusk_ru_commit_gang: all-or-nothing commit of n RUs for `task` (Tarcil §5.3 gang).
 * Takes the RUs in the given order; if one is lost, releases those it took (a rollback;
 * their generations advance) and returns RUSK_ECONFLICT with *lost_at (if not NULL) =
 * index in rus[] of the lost RU. RUSK_EDUP when an RU is listed twice or already held by
 * `task` (*lost_at names it too). On RUSK_OK, out[0..n) are the leases in the order of
 * rus[]. On any error the task holds none of rus[] it did not hold before.
 * Callers that commit overlapping sets concurrently should pass rus[] sorted ascending:
 * as with ordered locking, two gangs then cannot each take part of the other's set and
 * both roll back for it.
 * Any thread; lock-free.
 */
int rusk_ru_commit_gang(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                        const rusk_profile *prof, rusk_lease *out, size_t *lost_at);

/*
 * rusk_ru_commit_incremental: commits what it can of n RUs for `task` and keeps it
 * (Tarcil §5.1 "incremental transactions"). out[0..*n_won) are the leases won, in the order
 * of rus[]; rus[] entries lost to other tasks or offline are skipped. Returns RUSK_OK even when
 * some (or all) are lost; *n_won tells. RUSK_EDUP / RUSK_ERANGE / RUSK_EINVAL stop the call after
 * rolling back what it took, as for a gang. Any thread; lock-free.
 */
int rusk_ru_commit_incremental(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                               const rusk_profile *prof, rusk_lease *out, size_t *n_won);

/*
 * rusk_ru_commit_vec: all-or-nothing commit of n RUs of ONE machine and the memory and GPU
 * shares of `vec` on that machine for `task` (rusk/vec.h has the design). The RUs are taken
 * as a gang (rusk_ru_commit_gang, ascending order advised), then the memory, then the GPU
 * shares; a step that fails gives back every earlier one. RUSK_OK: out[0..n) are the
 * leases and the machine's memory and GPU shares are held with them; releasing the lease
 * of the lowest RU (out[0] when rus[] is ascending: the "anchor", which carries the
 * record of the shares) returns them, exactly once, as does a revocation of that RU.
 * Release the task's leases together (rusk_ru_release_many): the lowest RU's lease alone
 * gives back every share, while the task's other RUs stay held.
 * RUSK_ECONFLICT: an RU was lost (*lost_at its index) or, with *lost_at == n, the memory
 * or GPUs are short on that machine right now; RUSK_EOFFLINE: the machine is down or
 * draining; RUSK_EINVAL: RUs on different machines, n == 0, a malformed vec (gpu_milli
 * 0 or > 1000 with gpus > 0, a share with gpus > 1, gpus 0 with a share or models);
 * RUSK_EINFEASIBLE: the machine could never hold vec (GPU model not accepted, too few
 * GPUs or too little memory); RUSK_EDUP, RUSK_ERANGE as for a gang. On any error the
 * task holds nothing it did not hold before. Any thread; lock-free.
 */
int rusk_ru_commit_vec(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                       const rusk_vec_demand *vec, const rusk_profile *prof, rusk_lease *out,
                       size_t *lost_at);

/*
 * rusk_ru_release_many: releases n leases of `task`; keeps going past rejected ones.
 * Returns RUSK_OK, or the first error met; *n_rejected (if not NULL) counts rejections.
 * Any thread.
 */
int rusk_ru_release_many(rusk_cluster *c, uint64_t task, const rusk_lease *leases, size_t n,
                         size_t *n_rejected);

/*
 * rusk_ru_reclaim: recovery for holders that stopped acting, e.g. an agent thread that
 * died between the RU commits of a gang. Releases every RU held by a task for which
 * dead(task, ctx) returns true and reports each tenure through reclaimed(task, lease, ctx)
 * (NULL: not reported). The caller guarantees that no thread acts for those tasks any more
 * (their leases become stale). A word a dead holder left mid-commit or mid-release cannot
 * be repaired from outside: it is skipped after a bounded wait and counted in *stuck (NULL
 * allowed). Runs concurrently with commits and releases of other tasks; any thread.
 * Returns RUSK_OK (and *n_reclaimed), or RUSK_EINVAL.
 */
int rusk_ru_reclaim(rusk_cluster *c, bool (*dead)(uint64_t task, void *ctx),
                    rusk_revoke_fn reclaimed, void *ctx, size_t *n_reclaimed, size_t *stuck);

/*
 * rusk_ru_state: reads RU `ru`'s record (relaxed: a snapshot that may be stale at once).
 * RUSK_ERANGE / RUSK_EINVAL. Any thread.
 */
int rusk_ru_state(const rusk_cluster *c, uint32_t ru, rusk_ru_info *out);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_RU_H */
