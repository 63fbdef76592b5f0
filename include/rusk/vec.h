/* SPDX-License-Identifier: MIT */
/*
 * Vector resources: a machine has cores (RUs), memory and GPUs; a task asks for RUs and,
 * optionally, memory and GPUs on the same machine (rusk_vec_demand, rusk/ru.h).
 *
 * GPUs. Each GPU of a machine has a capacity of 1000 milli-GPU. A task asks for `gpus`
 * GPUs of `gpu_milli` each: several tasks may share one GPU (gpus 1, gpu_milli < 1000, as
 * in the Alibaba openb traces' gpu_milli), while a multi-GPU task takes whole GPUs. A
 * machine's GPUs are all of one model, its platform type (rusk_cluster_platform): a task
 * may restrict the models it accepts (gpu_models), a hard constraint. At most
 * RUSK_MAX_GPUS_PER_MACHINE GPUs per machine.
 *
 * Commit. RUs, memory and GPU shares of a task are committed together, all-or-nothing
 * (rusk_ru_commit_vec; rusk_agent_place does the same): the RUs by their CASes as a gang,
 * then the machine's free-memory word by CAS, then its GPU words by CAS, and a step that
 * fails gives back the earlier ones. The shares are recorded beside the lowest RU of the
 * task on that machine, and whoever ends that RU's tenure (its release, a rollback, a
 * revocation by rusk_machine_fail) returns them: the RU word's ownership and generation
 * rules decide, so shares are returned exactly once. core/kernel/vec.c has the ordering table.
 *
 * Feasibility. A task that no machine slot of the cluster could ever hold (spares and
 * machines now down included) is refused with RUSK_EINFEASIBLE, naming the dimension
 * (rusk_task_check); a transient shortage is RUSK_EAGAIN from place().
 *
 * Threads. No call takes a lock or needs RCU registration; commits of vector tasks follow
 * rusk/ru.h's rules (any number of threads at once).
 *
 *   call                            from         concurrently with
 *   rusk_cluster_create_machines    any thread   nothing on the new cluster (it owns it)
 *   rusk_machine_vec_get,           any thread   everything (a racy snapshot of the live
 *   rusk_cluster_vec_get                         words; may lag in-flight commits)
 *   rusk_task_fits_machine          any thread   everything (a racy answer by nature)
 *   rusk_gpu_model,                 any thread   everything (fixed at create)
 *   rusk_cluster_vec_bytes
 */
#ifndef RUSK_VEC_H
#define RUSK_VEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/cluster.h>
#include <rusk/ru.h>
#include <rusk/sched.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RUSK_MAX_GPUS_PER_MACHINE 8u
#define RUSK_GPU_MILLI            1000u

/* One machine, as the embedder describes it (rusk_cluster_create_machines). */
typedef struct rusk_machine_spec {
	uint32_t rus;           /* cores, one RU each: 1..RUSK_MAX_RUS_PER_MACHINE */
	uint32_t mem_mib;       /* memory */
	uint32_t gpus;          /* 0..RUSK_MAX_GPUS_PER_MACHINE, all of its platform's model */
	uint32_t platform;      /* index into the params' platform table (name, speed) */
	const uint16_t *scores; /* its RUs' slot scores in milli-units (rus of them), or NULL:
	                         * drawn as rusk_cluster_create does */
	bool spare;             /* built DOWN: rusk_machine_up adds it online, with this shape */
} rusk_machine_spec;

/*
 * rusk_cluster_create_machines: a cluster of n machines described one by one. Topology
 * comes from *p: machines_per_rack consecutive specs form a rack, racks_per_cell racks a
 * cell, cells are split into p->partitions partitions; platform types from p->platforms
 * (NULL: the default three-type mix), the clock and the seed (scores drawn for specs
 * without) too; p's machine-shape fields are ignored. Returns RUSK_OK and *out; RUSK_EINVAL
 * (NULL, a spec out of range: the message names "spec[i].field"), RUSK_ESHAPE, RUSK_ENOMEM,
 * with a message in err. Any thread; the caller owns the cluster.
 */
int rusk_cluster_create_machines(const rusk_machine_spec *specs, uint32_t n,
                                 const rusk_cluster_params *p, rusk_cluster **out, char *err,
                                 size_t errlen);

/* Live vector state of one machine. */
typedef struct rusk_machine_vec {
	uint32_t mem_mib;      /* capacity */
	uint32_t mem_free_mib; /* live */
	uint32_t gpus;         /* GPUs, all of model `gpu_model` (a platform index) */
	uint32_t gpu_model;
	uint16_t gpu_free_milli[RUSK_MAX_GPUS_PER_MACHINE]; /* live, per GPU: 0..1000 */
} rusk_machine_vec;

/*
 * rusk_machine_vec_get: fills *out for machine m (live fields read relaxed: a snapshot that
 * may lag in-flight commits). RUSK_ERANGE / RUSK_EINVAL. Any thread.
 */
int rusk_machine_vec_get(const rusk_cluster *c, uint32_t m, rusk_machine_vec *out);

/* Cluster totals: capacity and live use of memory (MiB) and GPUs (milli-GPU), over the
 * machines now UP or DRAINING. Any thread; relaxed, like the other counters. */
typedef struct rusk_cluster_vec {
	uint64_t mem_mib, mem_used_mib;
	uint64_t gpu_milli, gpu_used_milli;
	uint32_t gpus, gpus_busy; /* GPUs with any share in use */
} rusk_cluster_vec;
int rusk_cluster_vec_get(const rusk_cluster *c, rusk_cluster_vec *out);

/*
 * rusk_task_fits_machine: whether task t could be committed on machine m now, without
 * placing it: RUSK_OK (enough free RUs, memory and GPU shares of an accepted model, machine
 * UP); RUSK_EAGAIN (not now); RUSK_EINFEASIBLE (never on this machine: its shape or GPU
 * model rules t out); RUSK_EINVAL / RUSK_ERANGE. A racy answer by nature. Any thread.
 */
int rusk_task_fits_machine(const rusk_cluster *c, const rusk_task *t, uint32_t m);

/*
 * rusk_gpu_model: the index of the platform type named `name` (bit `index` of a demand's
 * gpu_models). RUSK_OK, RUSK_ERANGE when no platform has that name, RUSK_EINVAL. Any thread.
 */
int rusk_gpu_model(const rusk_cluster *c, const char *name, uint32_t *index);

/* Bytes of the vector state (per-machine capacity words, per-RU share records), beside
 * rusk_cluster_array_bytes. Any thread. */
size_t rusk_cluster_vec_bytes(const rusk_cluster *c);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_VEC_H */
