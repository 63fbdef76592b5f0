/* SPDX-License-Identifier: MIT */
/* Placement quality, per-task precomputation (quality.c). Internal. */
#ifndef RUSK_CORE_QUALITY_H
#define RUSK_CORE_QUALITY_H

#include "base/base.h"

typedef struct rusk_qtask {
	uint8_t order[RUSK_N_RESOURCES]; /* the task's resources by decreasing caused c_i */
	double tw;                       /* T_W, eq. 2 */
} rusk_qtask;

void rusk_qtask_init(rusk_qtask *q, const rusk_profile *prof);
/* Q (eq. 4-5, not platform-scaled) for a per-RU contention vector ci[] (eq. 3's C_i). */
double rusk_qtask_eval_ci(const rusk_qtask *q, const double *ci);
/* Q of free RU `ru` for the task (eq. 3-5, platform-scaled). */
double rusk_qtask_eval(const rusk_cluster *c, const rusk_qtask *q, uint32_t ru);

/*
 * Fragmentation-aware model (RUSK_QUALITY_FGD, quality.c): the workload's GPU task types
 * as one agent has seen them, and a machine's state as the measure reads it.
 */
#define RUSK_FGD_TYPES 32
#define RUSK_FGD_AGE   (1u << 16) /* counts are halved when their total reaches this */
typedef struct rusk_fgd_type {
	uint32_t rus, mem_mib, models; /* models: accepted platforms (0: any) */
	uint16_t gpus, milli;          /* milli: per GPU (1000 for whole GPUs) */
	uint32_t n;                    /* arrivals of this type (aged) */
} rusk_fgd_type;
typedef struct rusk_fgd_mix {
	rusk_fgd_type type[RUSK_FGD_TYPES];
	uint32_t n_types;
	uint32_t total; /* sum of type[].n */
} rusk_fgd_mix;
typedef struct rusk_fgd_node {
	uint32_t free_rus, mem_free, platform, n_gpus;
	uint16_t free[RUSK_MAX_GPUS_PER_MACHINE]; /* free milli per GPU */
} rusk_fgd_node;

/* Counts one arrival of vector task t into the mix (tasks without GPUs are not counted). */
void rusk_fgd_observe(rusk_fgd_mix *mx, const rusk_task *t);
/* F(s): the free milli-GPU of state s that a task drawn from the mix could not use, in
 * expectation (0 for an empty mix). */
double rusk_fgd_frag(const rusk_fgd_mix *mx, const rusk_fgd_node *s);

#endif
