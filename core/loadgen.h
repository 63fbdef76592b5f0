/* SPDX-License-Identifier: MIT */
/*
 * Load generation for the drivers: a seeded open-loop arrival process (phased Poisson
 * rates) with task durations, and trace replay (Alibaba openb pod lists or a generic CSV)
 * with time compression and shifted replicas. Deterministic: the same parameters and
 * seed give the same sequence. Internal (the CLI's drivers; tests link it directly).
 */
#ifndef RUSK_CORE_LOADGEN_H
#define RUSK_CORE_LOADGEN_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"

#define RUSK_LG_MAX_PHASES  16
#define RUSK_TRACE_MAX_PREF 4

enum { RUSK_DUR_EXP = 0, RUSK_DUR_LOGNORMAL = 1, RUSK_DUR_FIXED = 2 };

typedef struct rusk_arrival {
	double t_s;        /* arrival time, seconds from the start */
	double duration_s; /* run time once placed */
	uint32_t rus;
	uint8_t priority; /* 0 normal, 1 high (trace qos LS/Guaranteed) */
	uint8_t n_pref;   /* preferred machines (generic CSV 'preferred' column) */
	uint32_t pref[RUSK_TRACE_MAX_PREF];
} rusk_arrival;

/* Phased Poisson process: rate * phases[k]% during phase k, each phase_s long. */
typedef struct rusk_loadgen {
	double rate, phase_s, mean_s;
	double phases[RUSK_LG_MAX_PHASES];
	int n_phases, dist;
	uint32_t rus;
	rusk_rng rng;
	double t;
	int phase;
	int at_phase;                   /* the phase the two below are for (-1: none) */
	double phase_rate, phase_end_s; /* rate * phases[phase] / 100, (phase + 1) * phase_s */
} rusk_loadgen;

void rusk_loadgen_init(rusk_loadgen *g, double rate, const double *phases, int n_phases,
                       double phase_s, int dist, double mean_s, uint32_t rus, uint64_t seed);
/* Next arrival; returns 0, or -1 when the last phase is over. */
int rusk_loadgen_next(rusk_loadgen *g, rusk_arrival *out);
/* A duration with the given mean: exponential, lognormal (sigma fitted so 87% of tasks end
 * within 10 s, ParSync Fig. 1b, where the mean allows it) or fixed. */
double rusk_duration_draw(rusk_rng *r, int dist, double mean_s);

enum { RUSK_TRACE_OPENB = 0, RUSK_TRACE_CSV = 1 };

/*
 * rusk_trace_load: reads a trace, sorted by arrival, arrivals relative to the first.
 *   openb  name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
 *          creation_time,deletion_time,scheduled_time: arrival = creation_time, duration =
 *          deletion_time - creation_time (at least 1 ms), RUs = ceil(cpu_milli / 1000),
 *          priority 1 for qos LS or Guaranteed.
 *   csv    a header naming its columns, in any order: arrival_s and duration_s, then
 *          either rus or cpu_milli (RUs = ceil(cpu_milli / 1000)); optional mem_mib and
 *          gpus (checked, informational), priority (0 or 1) and preferred (up to 4 machine
 *          ids separated by '|'). '#' lines are comments.
 * Errors: RUSK_EIO (cannot open), RUSK_EPARSE ("FILE:LINE: reason"), RUSK_ENOMEM. The
 * caller frees *out.
 */
int rusk_trace_load(const char *path, int format, rusk_arrival **out, size_t *n, char *err,
                    size_t errlen);

/*
 * rusk_trace_expand: time-compresses a trace by `scale` (arrivals and durations divided)
 * and lays `replicas` copies over it, copy j shifted by j/replicas of the span, so the
 * arrival rate is multiplied by replicas. Returns a new sorted array (caller frees) or NULL.
 */
rusk_arrival *rusk_trace_expand(const rusk_arrival *in, size_t n, double scale, uint32_t replicas,
                                size_t *n_out);

#endif
