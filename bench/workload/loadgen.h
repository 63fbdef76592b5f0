/* SPDX-License-Identifier: MIT */
/*
 * Load generation for the drivers: a seeded open-loop arrival process (phased Poisson
 * rates) with task durations, and trace replay (Alibaba openb pod lists or a generic CSV)
 * with time compression and shifted replicas. Deterministic: the same parameters and
 * seed give the same sequence. Internal (the CLI's drivers; tests link it directly).
 */
#ifndef RUSK_CORE_LOADGEN_H
#define RUSK_CORE_LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"

#define RUSK_LG_MAX_PHASES  16
#define RUSK_TRACE_MAX_PREF 4
/* Longest trace duration or span, in seconds (about 31.7 years): every time then converts
 * to nanoseconds in a uint64_t, whatever the time scale. */
#define RUSK_TRACE_MAX_S    1e9
/* RUs of one CSV trace task at most (a task of RUs only may span machines). */
#define RUSK_TRACE_MAX_RUS  65535u

enum { RUSK_DUR_EXP = 0, RUSK_DUR_LOGNORMAL = 1, RUSK_DUR_FIXED = 2 };

typedef struct rusk_arrival {
	double t_s;        /* arrival time, seconds from the start */
	double duration_s; /* run time once placed */
	uint32_t rus;
	uint8_t priority; /* 0 normal, 1 high (trace qos LS/Guaranteed) */
	uint8_t n_pref;   /* preferred machines (generic CSV 'preferred' column) */
	uint32_t pref[RUSK_TRACE_MAX_PREF];
	uint32_t line; /* trace: the row's line in its file, for errors found later (else 0) */
	/* Vector resources (rusk/vec.h), from a trace that gives them: */
	uint32_t cpu_milli; /* as the trace gave it (0: it gave rus) */
	uint32_t mem_mib;   /* memory */
	uint16_t gpus;      /* GPUs, gpu_milli each (a share of one GPU below 1000) */
	uint16_t gpu_milli;
	uint32_t gpu_models; /* accepted GPU models: bit i = model i of the trace's table */
	uint8_t vec;         /* placed whole on one machine with its memory and GPUs */
	uint8_t never_ran;   /* openb: the traced cluster never scheduled it (no
	                      * scheduled_time) */
	double wait_s;       /* openb: scheduled_time - creation_time (0 if never scheduled);
	                      * duration_s includes it (the pod's whole life) */
	double target_s;     /* generic CSV target_s: completion-time target (0: none) */
	/* 3Sigma (csv user, job_name, deadline_s): runtime-history features, hashed (0: none),
	 * and a deadline in seconds after arrival (0: best effort). */
	uint32_t user, job_name;
	double deadline_s;
	/* Its quota group (csv group; openb: its qos class or GPU model, as
	 * rusk_trace_groups.openb asks): 0 none, k: the loader's group table's name[k - 1]. */
	uint8_t group;
} rusk_arrival;

/* GPU model names a trace's rows accept (openb gpu_spec, csv gpu_models), in order of
 * first use, and the line of that first use (for errors found once the cluster is known). */
#define RUSK_TRACE_MAX_MODELS 32
typedef struct rusk_trace_models {
	uint32_t n;
	char name[RUSK_TRACE_MAX_MODELS][40];
	uint32_t line[RUSK_TRACE_MAX_MODELS];
} rusk_trace_models;

/* Quota group names the trace's rows give, in order of first use, and the line of that
 * first use (the driver resolves them against its groups once it has read them; an unknown
 * one is an error naming that line). `openb` is the caller's: which openb pod column names
 * a pod's group. `given`: the csv header names a group column, or openb rows were mapped
 * (a row's group 0 then means no group, not "not said"). */
#define RUSK_TRACE_MAX_GROUPS 64
#define RUSK_TRACE_GROUP_NAME 32
enum {
	RUSK_TRACE_GROUPS_NONE = 0, /* openb pods have no group */
	RUSK_TRACE_GROUPS_QOS = 1,  /* the pod's qos class: LS, Guaranteed, BE or Burstable */
	/* the first model of gpu_spec; "gpu" for a GPU pod of any model, "cpu" without GPUs */
	RUSK_TRACE_GROUPS_GPU_MODEL = 2,
};
typedef struct rusk_trace_groups {
	int openb;
	bool given;
	uint32_t n;
	char name[RUSK_TRACE_MAX_GROUPS][RUSK_TRACE_GROUP_NAME];
	uint32_t line[RUSK_TRACE_MAX_GROUPS];
} rusk_trace_groups;

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

enum { RUSK_TRACE_OPENB = 0, RUSK_TRACE_CSV = 1, RUSK_TRACE_OPENB_SHAPES = 2 };

/*
 * rusk_trace_load: reads a trace, sorted by arrival (rows with equal times in file order),
 * arrivals relative to the first.
 *   openb  name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
 *          creation_time,deletion_time,scheduled_time (every column, in this order):
 *          arrival = creation_time, duration = deletion_time - creation_time (at least
 *          1 ms), RUs = ceil(cpu_milli / 1000), priority 1 for qos LS or Guaranteed (0 for
 *          BE, Burstable). Every row is replayed whatever its pod_phase (Running, Succeeded,
 *          Failed, Pending, Unknown: how the pod fared on the traced cluster, not a request);
 *          a row without scheduled_time is marked never_ran. Each pod is a vector task:
 *          memory_mib, num_gpu GPUs of gpu_milli (1..1000; 1000 when num_gpu > 1), the
 *          models of gpu_spec ('|'-separated names, empty: any), on one machine. Its
 *          quota group, as groups->openb asks (RUSK_TRACE_GROUPS_*): none, its qos
 *          class, or its GPU model (the first of gpu_spec; "gpu" when gpu_spec is empty,
 *          "cpu" for a pod without GPUs).
 *   openb shapes (RUSK_TRACE_OPENB_SHAPES): the openb format, or its first five columns
 *          alone (name,cpu_milli,memory_mib,num_gpu,gpu_milli: the published multigpu
 *          variants), whose rows are shapes with arrival 0 and any GPU model: for a
 *          reader that draws pods rather than replaying them (rusk experiment fgd).
 *   csv    a header naming its columns, in any order: arrival_s and duration_s, then
 *          either rus or cpu_milli (RUs = ceil(cpu_milli / 1000)); optional priority (0 or
 *          1) and preferred (up to 4 machine ids separated by '|'); optional mem_mib, gpus,
 *          gpu_milli (default 1000 when gpus > 0) and gpu_models ('|'-separated names):
 *          a header naming any of these makes every row a vector task, on one machine;
 *          optional user, job_name (3Sigma's features; any text, kept as a hash) and
 *          deadline_s (seconds after arrival, > 0; empty: best effort); optional group
 *          (a quota group's name, 1..31 bytes; empty: none).
 *          Lines whose first non-blank byte is '#' are comments, of any length.
 * models (may be NULL) receives the GPU model names that rows' masks index; groups (may be
 * NULL: every row's group is 0) the quota group names that rows' group fields index, at
 * most RUSK_TRACE_MAX_GROUPS distinct (more is RUSK_EPARSE naming the line); its `openb`
 * is read, the rest written.
 * Both: a UTF-8 byte-order mark is dropped; lines end in LF, CRLF or CR; blanks around a
 * field are dropped; blank lines are skipped; whole numbers (rus, ids, priority) are
 * decimal digits only; durations and the span are at most RUSK_TRACE_MAX_S. A directory
 * is refused; a pipe or device is read up to 4 GiB.
 * Errors: RUSK_EIO (cannot open or read, a directory), RUSK_EPARSE ("FILE:LINE: reason",
 * a NUL byte included), RUSK_ENOMEM. The caller frees *out.
 */
int rusk_trace_load(const char *path, int format, rusk_arrival **out, size_t *n,
                    rusk_trace_models *models, rusk_trace_groups *groups, char *err, size_t errlen);

/*
 * rusk_trace_check_preferred: checks the preferred machine ids of a loaded (or expanded)
 * trace against a cluster of `machines` machines, once its size is known. RUSK_OK, or
 * RUSK_EPARSE with "PATH:LINE: preferred machine ID is beyond ..." for the earliest line.
 */
int rusk_trace_check_preferred(const rusk_arrival *a, size_t n, uint32_t machines, const char *path,
                               char *err, size_t errlen);

/*
 * rusk_trace_expand: time-compresses a trace by `scale` (arrivals and durations divided)
 * and lays `replicas` copies over it, copy j shifted by j/replicas of the mean gap between
 * arrivals: the rate is multiplied by replicas, every copy keeps the trace's order and
 * shape, and nothing wraps around (the last arrival stays last). Scaled times are held at
 * RUSK_TRACE_MAX_S. Returns a new sorted array (caller frees) or NULL (out of memory, or
 * n = 0, scale <= 0, replicas = 0).
 */
rusk_arrival *rusk_trace_expand(const rusk_arrival *in, size_t n, double scale, uint32_t replicas,
                                size_t *n_out);

#endif
