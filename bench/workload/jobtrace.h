/* SPDX-License-Identifier: MIT */
/*
 * Job traces for the runtime predictor: jobs with their attributes and runtimes, read from
 * the Standard Workload Format of the Parallel Workloads Archive (swf.c) or generated like
 * 3Sigma's E2E workload (e2e.c). Internal (the CLI's `rusk predict`; tests link them).
 */
#ifndef RUSK_CORE_JOBTRACE_H
#define RUSK_CORE_JOBTRACE_H

#include <stddef.h>
#include <stdint.h>

#include <rusk/predict.h>

/* One job. Times in seconds; -1 is SWF's "unknown" for every field. */
typedef struct rusk_tjob {
	double submit_s, wait_s, run_s, req_time_s;
	int64_t id, procs, req_procs, user, group, exe, queue, partition, status;
	int32_t cls;       /* generator's job class; -1 for a trace */
	uint32_t line;     /* its line in the file (0: generated) */
	double deadline_s; /* absolute deadline of an SLO job; 0: none (best effort) */
} rusk_tjob;

typedef struct rusk_jobtrace {
	rusk_tjob *jobs;
	size_t n, cap;
	uint64_t comments; /* ';' header lines */
} rusk_jobtrace;

void rusk_jobtrace_free(rusk_jobtrace *t);

/*
 * rusk_swf_read: reads an SWF file: ';' lines are header comments, blank lines are
 * skipped, every other line has the 18 whitespace-separated fields (job, submit, wait, run
 * time, allocated processors, CPU time, memory, requested processors, requested time,
 * requested memory, status, user, group, executable, queue, partition, preceding job,
 * think time), each a number >= 0 or -1 (unknown); ids and counts are integers, times at
 * most 1e9 s. LF, CRLF or CR line ends, a UTF-8 byte-order mark is dropped. Errors name
 * the file (RUSK_EIO: cannot be read, a directory) or FILE:LINE (RUSK_EPARSE: the reason).
 */
int rusk_swf_read(const char *path, rusk_jobtrace *out, char *err, size_t errlen);

/*
 * rusk_e2e_generate: n jobs of an E2E-like workload (3Sigma §5), deterministic in seed
 * (e2e.c documents the model). RUSK_EINVAL for n = 0 or n > 100M, RUSK_ENOMEM.
 */
#define RUSK_E2E_CLASSES 50
int rusk_e2e_generate(uint64_t n, uint64_t seed, rusk_jobtrace *out, char *err, size_t errlen);
/* The same with the share of classes with CoV > 1 given (rusk_e2e_generate: 0.4); the
 * draws are the same for any share, so only which classes are highly variable changes. */
#define RUSK_E2E_HIGH_COV_SHARE 0.4
int rusk_e2e_generate_cov(uint64_t n, uint64_t seed, double high_cov_share, rusk_jobtrace *out,
                          char *err, size_t errlen);

/*
 * rusk_e2e_deadlines: chooses the SLO jobs and their deadlines. With slo_share in [0, 1]
 * each job is an SLO job with that probability and its queue is set to match (0 SLO, 1
 * best effort); with a negative slo_share the generator's SLO classes (queue 0) are the
 * SLO jobs. An SLO job's deadline is submit + run x (1 + slack / 100) (3Sigma §5's
 * definition of slack), slack_pct for every job, or, when negative, drawn per job from
 * 20/40/60/80% (the paper's default); other jobs get deadline 0 (best effort). Draws come
 * from a generator seeded with `seed`.
 */
void rusk_e2e_deadlines(rusk_jobtrace *t, uint64_t seed, double slack_pct, double slo_share);

/*
 * rusk_e2e_scale_load: stretches or compresses the submission times (relative to the first
 * job's) so that the work offered, sum of procs x run, is `load` times what `capacity`
 * cores give over the submission span (3Sigma §5: "offered load"). Returns the factor
 * applied (1 for fewer than two jobs or no work).
 */
double rusk_e2e_scale_load(rusk_jobtrace *t, uint32_t capacity, double load);

/* The predictor's view of a job: user, executable (job name), requested processors (else
 * allocated), queue; -1 fields are RUSK_JOB_UNKNOWN. */
void rusk_tjob_features(const rusk_tjob *t, rusk_job *out);

#endif
