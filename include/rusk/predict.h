/* SPDX-License-Identifier: MIT */
/*
 * Runtime distributions learned online (3Sigma §4.1, "3σPredict").
 *
 * A job is described by a few attributes (user, job name or executable, resources
 * requested, queue or priority). Each *feature* is one attribute or a combination of them
 * (user + name, user + resources); a *feature value* is what a given job has for it (user
 * 17, user 17 with 64 processors). For every feature value the predictor keeps, in
 * constant memory, the history of the runtimes of the jobs that had it: a streaming
 * histogram of at most RUSK_DIST_MAX_BINS variable-width bins (Ben-Haim & Tom-Tov) and
 * four point estimators (running average, median of the recent runtimes, rolling EWMA
 * with alpha 0.6, average of the X most recent). An *expert* is a (feature value,
 * estimator) pair; each keeps the normalised mean absolute error (NMAE) of its past
 * estimates, measured when a runtime arrives and before it is learned. A job's prediction
 * is the distribution and point estimate of the matching expert with the lowest NMAE; a
 * job none of whose feature values has enough history gets the global history (every
 * runtime seen) instead, and the result says so.
 *
 * Threads. rusk_predict_update is called when jobs complete and rusk_predict when they
 * are submitted, from any number of threads at once (no RCU registration needed).
 * Readers never block: each feature value keeps two copies of its history and a version
 * word, an update writes the copy readers are not sent to and then flips the version, and
 * a reader retries only if two updates of that value completed during its read
 * (core/learn/predict.c). Updates of the same feature value take turns on a per-value lock bit;
 * the first update of a new feature value inserts it under a mutex.
 *
 * Distributions. A rusk_dist is a self-contained copy of a histogram (664 bytes): a
 * scheduler keeps it with the pending job and asks it for quantiles or the CDF
 * (probability of finishing within a time) without touching the predictor again. The
 * rusk_dist_* calls refuse a NULL histogram or one whose n_bins exceeds
 * RUSK_DIST_MAX_BINS (RUSK_EINVAL, NaN, or nothing done); the rest of its shape (bins
 * sorted, counts adding up) is the caller's to keep when it builds one by hand.
 */
#ifndef RUSK_PREDICT_H
#define RUSK_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- streaming histograms ---------------------------------------------------------- */

#define RUSK_DIST_MAX_BINS 80 /* 3Sigma §4.1: "a maximum of 80 bins" */

/* One bin: `count` runtimes whose mean is `value` (seconds). */
typedef struct rusk_dist_bin {
	float value;
	uint32_t count;
} rusk_dist_bin;

/*
 * A histogram of runtimes in seconds: bins sorted by value, at most RUSK_DIST_MAX_BINS, the
 * exact minimum and maximum seen, and the total count. Plain data: copy it freely.
 * Values are floats (24-bit mantissa, 6e-8 relative). The total count stays below 2^31:
 * when it would reach it, every count is halved (the shape is kept, old history weighs
 * half).
 */
typedef struct rusk_dist {
	uint32_t n_bins;
	uint32_t reserved_;
	uint64_t count; /* runtimes in the histogram (sum of the bins' counts) */
	float min, max; /* exact extremes; meaningless while count is 0 */
	rusk_dist_bin bin[RUSK_DIST_MAX_BINS];
} rusk_dist;

/* rusk_dist_init: an empty histogram (NULL: nothing). */
void rusk_dist_init(rusk_dist *d);
/*
 * rusk_dist_add: learns one runtime x >= 0 (seconds, finite): inserted as a bin of count 1
 * (or added to a bin of exactly that value), then the two closest bins are merged while
 * there are more than RUSK_DIST_MAX_BINS. RUSK_EINVAL for a negative, NaN or infinite x
 * (d unchanged) or a bad d. O(RUSK_DIST_MAX_BINS).
 */
int rusk_dist_add(rusk_dist *d, double x);
/* rusk_dist_merge: adds every bin of `from` into `into` (Ben-Haim & Tom-Tov's merge: union
 * of the bins, then closest pairs merged down to the bound). `from` may equal `into`. */
void rusk_dist_merge(rusk_dist *into, const rusk_dist *from);
/*
 * rusk_dist_cdf: the estimated share of runtimes <= x, in [0, 1]: Ben-Haim & Tom-Tov's
 * "sum" procedure (half of each bin's count on either side of its value, trapezoids
 * between neighbouring bins), with the exact minimum and maximum as bins of count 0 at the
 * ends. 0 for an empty histogram, NaN for a bad one. Monotone in x.
 */
double rusk_dist_cdf(const rusk_dist *d, double x);
/*
 * rusk_dist_quantile: the runtime r with rusk_dist_cdf(d, r) = q (q clamped to [0, 1]):
 * the inverse of the same trapezoids ("uniform" procedure). quantile(0) = min,
 * quantile(1) = max. NaN for an empty or bad histogram.
 */
double rusk_dist_quantile(const rusk_dist *d, double q);
/* rusk_dist_mean: the mean runtime of the bins (exact: merges keep weighted means). NaN
 * for an empty or bad histogram. */
double rusk_dist_mean(const rusk_dist *d);

/* ---- jobs and features ------------------------------------------------------------- */

#define RUSK_JOB_UNKNOWN UINT64_MAX /* an attribute the job does not have */

/* What a job is known by at submission. Attributes are ids: numbers from the trace, or
 * rusk_predict_id() of a string. RUSK_JOB_UNKNOWN leaves out every feature that uses it. */
typedef struct rusk_job {
	uint64_t user;
	uint64_t name;      /* job name or executable */
	uint64_t resources; /* resources requested (processors, RUs, or an id of a shape) */
	uint64_t queue;     /* queue or priority class */
} rusk_job;

/* rusk_job_init: every attribute RUSK_JOB_UNKNOWN (NULL: nothing). */
void rusk_job_init(rusk_job *j);
/* rusk_predict_id: a 64-bit id of a string (never RUSK_JOB_UNKNOWN); NULL gives
 * RUSK_JOB_UNKNOWN. */
uint64_t rusk_predict_id(const char *s);

typedef enum rusk_feature {
	RUSK_FEAT_USER = 0,
	RUSK_FEAT_NAME = 1,
	RUSK_FEAT_RESOURCES = 2,
	RUSK_FEAT_QUEUE = 3,
	RUSK_FEAT_USER_NAME = 4,
	RUSK_FEAT_USER_RESOURCES = 5,
	RUSK_FEAT_N = 6,
	RUSK_FEAT_GLOBAL = 6, /* not a feature: the history of every runtime */
} rusk_feature;

typedef enum rusk_estimator {
	RUSK_EST_AVERAGE = 0, /* running average of every runtime */
	RUSK_EST_MEDIAN = 1,  /* median of the RUSK_PREDICT_RECENT most recent */
	RUSK_EST_ROLLING = 2, /* EWMA: e <- 0.6 x + 0.4 e (3Sigma: alpha = 0.6) */
	RUSK_EST_RECENT = 3,  /* average of the X most recent (params.recent) */
	RUSK_EST_N = 4,
} rusk_estimator;

#define RUSK_PREDICT_RECENT 16 /* runtimes kept per feature value for the median and X */

/* Static names ("user", "user+name", "global"; "average", "median", ...); "?" if out of
 * range. */
const char *rusk_feature_name(rusk_feature f);
const char *rusk_estimator_name(rusk_estimator e);

/* ---- the predictor ----------------------------------------------------------------- */

typedef struct rusk_predict_params {
	uint32_t recent;      /* X of RUSK_EST_RECENT: 1..RUSK_PREDICT_RECENT, default 5 */
	uint32_t min_evals;   /* estimates an expert must have been judged on, >= 1, default 2 */
	uint64_t max_values;  /* feature values tracked at most (then new ones are not), 1M */
	uint32_t features;    /* bit mask of the features used, default all (1 << f) */
	uint64_t init_values; /* feature values expected (hash set sized for them), 1024 */
} rusk_predict_params;

typedef struct rusk_predictor rusk_predictor;

/* The defaults above into *p (NULL: nothing). */
void rusk_predict_params_init(rusk_predict_params *p);

/*
 * rusk_predict_create: an empty predictor. RUSK_EINVAL (message names the parameter),
 * RUSK_ENOMEM.
 */
int rusk_predict_create(const rusk_predict_params *p, rusk_predictor **out, char *err,
                        size_t errlen);
/* rusk_predict_destroy: frees everything. No other call on p may be in flight or
 * follow. NULL is ignored. */
void rusk_predict_destroy(rusk_predictor *p);

/*
 * rusk_predict_update: learns that job j ran for runtime_s seconds (>= 0, finite). For
 * each feature value of j (and the global history) the experts are first judged on this
 * runtime (NMAE), then the runtime is added to the histogram and estimators. Feature
 * values beyond max_values are not tracked (counted in rusk_predict_stats). Any thread;
 * waits only for another update of one of the same feature values, or for the insert
 * mutex when j brings a new feature value. RUSK_EINVAL, RUSK_ENOMEM (a new feature value
 * could not be added; the others and the global history learned the runtime).
 */
int rusk_predict_update(rusk_predictor *p, const rusk_job *j, double runtime_s);

typedef enum rusk_pred_source {
	RUSK_PRED_EXPERT = 0, /* the best expert of the job's feature values */
	RUSK_PRED_GLOBAL = 1, /* no feature value has history enough: every runtime seen */
	RUSK_PRED_NONE = 2,   /* nothing learned yet: no distribution, estimate 0 */
} rusk_pred_source;

typedef struct rusk_prediction {
	rusk_pred_source source;
	rusk_feature feature;     /* the expert's feature (RUSK_FEAT_GLOBAL for the fallback) */
	rusk_estimator estimator; /* the expert's estimator */
	double estimate_s;        /* its point estimate */
	double nmae;              /* its NMAE so far (NaN before any judged estimate) */
	uint64_t evals;           /* estimates it was judged on */
	uint64_t history;         /* runtimes in its distribution */
} rusk_prediction;

/*
 * rusk_predict: the prediction for job j into *out and, when dist is not NULL, a copy of
 * the chosen distribution (the feature value's histogram; empty for RUSK_PRED_NONE).
 * Never blocks (lock-free lookups; a read retries only when two updates of the value it
 * reads completed meanwhile); changes nothing but a statistic. Any thread. RUSK_OK or
 * RUSK_EINVAL. The estimate and distribution come from one published state.
 */
int rusk_predict(const rusk_predictor *p, const rusk_job *j, rusk_prediction *out, rusk_dist *dist);

/* One expert of a job, as rusk_predict_experts lists them. */
typedef struct rusk_expert {
	rusk_feature feature; /* RUSK_FEAT_GLOBAL for the global history's estimators */
	rusk_estimator estimator;
	double estimate_s;
	double nmae; /* NaN before any judged estimate */
	uint64_t evals;
	uint64_t history; /* runtimes the feature value has seen */
} rusk_expert;

/*
 * rusk_predict_experts: every expert matching job j with at least one runtime of history,
 * the global history's last, into out[0..n). Returns how many there are (which may exceed
 * n: only n are written; none when out is NULL; 0 for p or j NULL). Same threading as
 * rusk_predict. For reports and debugging.
 */
size_t rusk_predict_experts(const rusk_predictor *p, const rusk_job *j, rusk_expert *out, size_t n);

typedef struct rusk_predict_stats {
	uint64_t values;        /* feature values tracked */
	uint64_t untracked;     /* updates of feature values refused past max_values */
	uint64_t updates;       /* rusk_predict_update calls that learned their runtime */
	uint64_t retries;       /* reads redone because updates reused the copy being read */
	size_t bytes_per_value; /* one hash node holding two copies of the history */
} rusk_predict_stats;

/* rusk_predict_stats: counters (relaxed reads; exact when no update is in flight); zeros
 * for a NULL predictor, nothing for a NULL out. */
void rusk_predict_stats_get(const rusk_predictor *p, rusk_predict_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_PREDICT_H */
