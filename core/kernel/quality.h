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

#endif
