/* SPDX-License-Identifier: MIT */
/*
 * Workload classification by collaborative filtering (Quasar §3.2; Paragon's engine).
 *
 * A classification is a matrix with workloads as rows and, as columns, the settings a
 * workload can be run under; an entry is the workload's measured performance there. Four
 * independent classifications describe a workload (rusk_cls_kind): scale-up (performance
 * per per-machine allocation, RUs x memory blocks), scale-out (per number of machines),
 * heterogeneity (per platform) and interference (the intensity tolerated in, then the
 * intensity caused on, each of the RUSK_N_RESOURCES shared resources). An incoming job is
 * profiled on a few columns (Quasar's default: two entries per classification); the
 * trained model fills in the rest of its row.
 *
 * Model. Training (rusk_cls_retrain) initialises latent factors from the SVD of the
 * training matrix (LAPACK's dgesdd) and refines them with PQ-reconstruction by stochastic
 * gradient descent after §3.2: the average mu, a row bias b_u (and, our addition, a column
 * bias b_i), learning rate eta and regularisation lambda, until the change of the squared
 * error is marginal; values are modelled as log(value) (core/learn/classify.c lists every
 * departure from the paper). An incoming row is classified by fold-in (rusk_cls_classify): its
 * bias and factors are solved against the trained, fixed column factors, then refined by
 * SGD on that row alone; nothing is retrained, so the cost does not grow with the number
 * of training rows (core/learn/classify.c has the details and the invariants).
 *
 * Threads. A trained model is immutable and published with RCU (liburcu memb, like the
 * partition snapshots of rusk/sync.h): classification never takes a lock and always sees
 * one whole model, old or new, while another thread retrains. Readers (rusk_cls_classify,
 * rusk_cls_estimate_row, rusk_classifier_classify) must run on threads registered with
 * rusk_thread_register(): a retrain frees the model it replaces once a grace period ends,
 * and grace periods wait for registered readers only. RUSK_DEBUG builds refuse a reader
 * on an unregistered thread with RUSK_ENOTREG, as the agent calls do (rusk/sync.h,
 * "Checks"); other builds do not check. Writers (rows, feedback, retrain) may be called
 * from any threads; they serialise on the object's training store, never with readers.
 *
 * Ground truth. rusk_cls_truth_generate builds the four matrices from a documented, seeded
 * generative model of workload families (core/learn/classify_gen.c); rusk_cls_matrix_load_csv
 * reads a measured matrix instead. Figures quoted for rusk (docs/classification.md) are on
 * the generator.
 *
 * Allocation (Quasar §3.3, core/learn/classify_alloc.c): rusk_cls_alloc_size turns a job's
 * classified rows and a performance target into a size (RUs and memory blocks per machine,
 * a machine count) and a placement preference (ranked machines and platforms). It is a pure
 * function of its arguments. `rusk classify --alloc` compares it with reservations and
 * with oracle sizing in virtual time; `rusk run/sim --target on` sizes tasks with it: a
 * one-machine allocation becomes a task of its RUs and its memory (rusk_vec_demand), and
 * the allocation's machines its preferred machines, where the agents place it
 * (rusk/sched.h, RUSK_QUALITY_INTERFERENCE).
 */
#ifndef RUSK_CLASSIFY_H
#define RUSK_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rusk/cluster.h>
#include <rusk/error.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RUSK_CLS_MAX_COLS          256 /* columns of one classification */
#define RUSK_CLS_MAX_RANK          16  /* latent factors kept from the SVD */
/* Interference columns: tolerated intensity in resource r at column r, caused intensity
 * on resource r at column RUSK_N_RESOURCES + r (both 1..100, higher = more). */
#define RUSK_CLS_INTERFERENCE_COLS (2 * RUSK_N_RESOURCES)

typedef enum rusk_cls_kind {
	RUSK_CLS_SCALE_UP = 0,      /* columns: (RUs - 1) x mem_blocks + (blocks - 1) */
	RUSK_CLS_SCALE_OUT = 1,     /* columns: machines - 1 */
	RUSK_CLS_HETEROGENEITY = 2, /* columns: platform index */
	RUSK_CLS_INTERFERENCE = 3,  /* columns: RUSK_CLS_INTERFERENCE_COLS, layout above */
} rusk_cls_kind;
#define RUSK_CLS_KINDS 4

/* "scale-up", "scale-out", "heterogeneity", "interference"; "?" out of range. */
const char *rusk_cls_kind_name(rusk_cls_kind k);

/* One measured entry of a row: performance (or intensity) `value` in column `col`. */
typedef struct rusk_cls_entry {
	uint32_t col;
	double value;
} rusk_cls_entry;

/* ---- matrices (ground truth, CSV) ------------------------------------------------- */

/* A dense rows x cols matrix of doubles in which a cell may be missing (NaN). */
typedef struct rusk_cls_matrix rusk_cls_matrix;

/* rusk_cls_matrix_create: every cell missing. RUSK_EINVAL (0 rows, cols not in
 * 1..RUSK_CLS_MAX_COLS), RUSK_ENOMEM. */
int rusk_cls_matrix_create(uint32_t rows, uint32_t cols, rusk_cls_matrix **out);
/* NULL is ignored. */
void rusk_cls_matrix_destroy(rusk_cls_matrix *m);
uint32_t rusk_cls_matrix_rows(const rusk_cls_matrix *m);
uint32_t rusk_cls_matrix_cols(const rusk_cls_matrix *m);
/* The cell, or NaN when missing or out of range. */
double rusk_cls_matrix_get(const rusk_cls_matrix *m, uint32_t row, uint32_t col);
/* Sets a cell; NaN makes it missing. RUSK_ERANGE, RUSK_EINVAL (an infinity). */
int rusk_cls_matrix_set(rusk_cls_matrix *m, uint32_t row, uint32_t col, double v);
/*
 * rusk_cls_matrix_load_csv: reads a matrix, one workload per line. Lines starting with '#'
 * and blank lines are skipped; the first other line is a header naming the columns
 * (comma-separated; its field count is the width); every following line has exactly that
 * many fields, each empty (a missing cell) or a finite decimal number (> 0 when
 * `positive`). Blanks around fields, CRLF and a UTF-8 byte-order mark are accepted.
 * RUSK_EIO (cannot open: "PATH: reason"), RUSK_EPARSE ("PATH:LINE: reason": wrong width,
 * NaN, junk, a value <= 0 when positive, no rows, a row with no value), RUSK_ENOMEM.
 */
int rusk_cls_matrix_load_csv(const char *path, bool positive, rusk_cls_matrix **out, char *err,
                             size_t errlen);

/* ---- the generative ground truth (core/learn/classify_gen.c) ----------------------------- */

typedef struct rusk_cls_gen_params {
	uint32_t workloads;     /* rows of each matrix, > 0 (default 1200) */
	uint32_t families;      /* workload families, 1..64 (default 6) */
	uint32_t su_rus;        /* scale-up RU counts 1..su_rus (default 8) */
	uint32_t su_mem_blocks; /* scale-up memory blocks 1..su_mem_blocks (default 4) */
	uint32_t so_machines;   /* scale-out machine counts 1..so_machines (default 16) */
	uint32_t platforms;     /* platform types, 1..RUSK_MAX_PLATFORMS (default 8) */
	uint32_t types;         /* latent interference types, 1..8 (default 3) */
	double jitter;          /* spread of a workload's parameters in its family (0.05) */
	uint64_t seed;          /* everything comes from it (default 1) */
} rusk_cls_gen_params;

/* The defaults above into *p (NULL: nothing). */
void rusk_cls_gen_params_init(rusk_cls_gen_params *p);

/* The four true matrices of one generated population (noiseless), and each row's family. */
typedef struct rusk_cls_truth rusk_cls_truth;

/* rusk_cls_truth_generate: RUSK_EINVAL (naming the parameter), RUSK_ENOMEM. Deterministic:
 * the same parameters give the same matrices bit for bit. */
int rusk_cls_truth_generate(const rusk_cls_gen_params *p, rusk_cls_truth **out, char *err,
                            size_t errlen);
void rusk_cls_truth_destroy(rusk_cls_truth *t);
/* The matrix of classification k (owned by t; NULL for a bad k). */
const rusk_cls_matrix *rusk_cls_truth_matrix(const rusk_cls_truth *t, rusk_cls_kind k);
/* The family of a row (rows beyond the matrix: UINT32_MAX). */
uint32_t rusk_cls_truth_family(const rusk_cls_truth *t, uint32_t row);

/*
 * rusk_cls_profile_row: profiling of row `row` of `truth`: `entries` distinct present
 * columns chosen with seed `seed`, each measured with multiplicative Gaussian noise
 * (value x (1 + noise x N(0,1)), kept >= 5% of the value). Scale-out profiling uses only
 * the first max(4, entries) columns (Quasar profiles on one to four machines); other kinds
 * any column. Writes *n <= entries entries (fewer when the row has fewer present cells)
 * into out. RUSK_EINVAL, RUSK_ERANGE (row).
 */
int rusk_cls_profile_row(const rusk_cls_matrix *truth, rusk_cls_kind kind, uint32_t row,
                         uint32_t entries, double noise, uint64_t seed, rusk_cls_entry *out,
                         uint32_t *n);

/* ---- one classification ------------------------------------------------------------ */

typedef struct rusk_cls_params {
	uint32_t cols;       /* columns, 1..RUSK_CLS_MAX_COLS (no default) */
	uint32_t rank;       /* latent factors, 1..RUSK_CLS_MAX_RANK (default 4; capped at
	                      * min(rows, cols) when training) */
	double eta;          /* SGD learning rate (default 0.02) */
	double lambda;       /* SGD regularisation (default 0.02) */
	double tol;          /* stop when the squared error changes by < tol of itself (1e-4) */
	uint32_t max_epochs; /* SGD epochs at most (default 400) */
	uint64_t seed;       /* SGD's visiting order (default 1) */
	bool log_values;     /* model log(value): values must be > 0 (default true) */
} rusk_cls_params;

/* Defaults for a classification with `cols` columns (p NULL: nothing). */
void rusk_cls_params_init(rusk_cls_params *p, uint32_t cols);

typedef struct rusk_cls rusk_cls;

/* rusk_cls_create: an empty training store and no model. RUSK_EINVAL (naming the
 * parameter), RUSK_ENOMEM. */
int rusk_cls_create(const rusk_cls_params *p, rusk_cls **out, char *err, size_t errlen);
/* Frees c and its models. No thread may use c during or after the call; waits for RCU
 * callbacks of replaced models (not inside a read-side section). NULL is ignored. */
void rusk_cls_destroy(rusk_cls *c);
uint32_t rusk_cls_cols(const rusk_cls *c);

/*
 * rusk_cls_add_row: appends a training row with n measured entries (n >= 1; a column
 * given twice keeps the later value) and returns its index in *row. The row joins the
 * model at the next retrain. Writer; any thread. RUSK_EINVAL (a column out of range, a
 * value not finite or <= 0 with log_values: the message names it), RUSK_ENOMEM.
 */
int rusk_cls_add_row(rusk_cls *c, const rusk_cls_entry *e, uint32_t n, uint32_t *row, char *err,
                     size_t errlen);
/*
 * rusk_cls_feedback: measured performance of training row `row` (e.g. a job's, at its
 * completion): each entry replaces the row's value in that column, or fills it where it
 * was estimated. Takes effect at the next retrain. Writer; any thread. RUSK_ERANGE (row),
 * RUSK_EINVAL as for add_row.
 */
int rusk_cls_feedback(rusk_cls *c, uint32_t row, const rusk_cls_entry *e, uint32_t n, char *err,
                      size_t errlen);
/* Training rows so far (the model may hold fewer: those present at its retrain). */
uint32_t rusk_cls_rows(const rusk_cls *c);

typedef struct rusk_cls_train_info {
	uint64_t version; /* of the published model, 1, 2, ... */
	uint32_t rows;    /* training rows in it */
	uint32_t entries; /* measured entries it was trained on */
	uint32_t rank;    /* latent factors used */
	uint32_t epochs;  /* SGD epochs run */
	bool converged;   /* stopped on the tolerance, not on max_epochs */
	double rmse;      /* root mean squared training error (model space: log with log_values) */
	double seconds;   /* wall time of the retrain */
} rusk_cls_train_info;

/*
 * rusk_cls_retrain: trains a new model on a copy of the current training store (SVD, then
 * SGD) and publishes it; the model it replaces is freed after an RCU grace period. Readers
 * keep classifying against the old model meanwhile. Retrains are serialised (a second
 * caller waits for the first). Writer; a registered thread (call_rcu needs one), not
 * inside a read-side section. RUSK_EINVAL (no training row yet), RUSK_ENOMEM, RUSK_ECORRUPT (LAPACK
 * failed to converge: the old model stays).
 */
int rusk_cls_retrain(rusk_cls *c, rusk_cls_train_info *info, char *err, size_t errlen);
/* Version of the published model; 0 before the first retrain. Any thread. */
uint64_t rusk_cls_version(const rusk_cls *c);

typedef struct rusk_cls_fold_info {
	uint64_t version; /* model used */
	uint32_t epochs;  /* SGD epochs on the row after the closed-form solve */
} rusk_cls_fold_info;

/*
 * rusk_cls_classify: classifies a new row from its n profiled entries (1 <= n <=
 * 4 x RUSK_CLS_MAX_COLS; a column may repeat) against the
 * published model by fold-in (no retraining): out[0..cols) receives the estimated value of
 * every column, except that profiled columns keep their measured value (the mean when
 * given twice). Registered threads; lock-free; takes its own read-side section. info may
 * be NULL. RUSK_EINVAL (c or out NULL, bad entries), RUSK_ENOMODEL (no model published
 * yet), RUSK_ENOTREG (RUSK_DEBUG builds: the calling thread is not registered).
 */
int rusk_cls_classify(const rusk_cls *c, const rusk_cls_entry *e, uint32_t n, double *out,
                      rusk_cls_fold_info *info);
/*
 * rusk_cls_estimate_row: the published model's reconstruction of training row `row`
 * (every column estimated, measured ones included). Registered threads. RUSK_ERANGE (the
 * row is not in the published model), RUSK_ENOMODEL (no model yet), RUSK_EINVAL (NULL),
 * RUSK_ENOTREG (RUSK_DEBUG builds, unregistered thread).
 */
int rusk_cls_estimate_row(const rusk_cls *c, uint32_t row, double *out);

/* ---- the four classifications of a job --------------------------------------------- */

typedef struct rusk_classifier rusk_classifier;

/* rusk_classifier_create: four classifications with the given parameters (p[k] for kind
 * k; p[RUSK_CLS_INTERFERENCE].cols must be RUSK_CLS_INTERFERENCE_COLS). Errors as
 * rusk_cls_create, naming the kind. */
int rusk_classifier_create(const rusk_cls_params p[RUSK_CLS_KINDS], rusk_classifier **out,
                           char *err, size_t errlen);
/* Same rules as rusk_cls_destroy. */
void rusk_classifier_destroy(rusk_classifier *c);
/* The classification of kind k (owned by c), NULL for a bad k. */
rusk_cls *rusk_classifier_get(rusk_classifier *c, rusk_cls_kind k);

/* A job's profiling: n[k] entries e[k] per classification (n[k] >= 1 for every k). */
typedef struct rusk_cls_job_profile {
	const rusk_cls_entry *e[RUSK_CLS_KINDS];
	uint32_t n[RUSK_CLS_KINDS];
} rusk_cls_job_profile;

/* A job's estimated vectors, what allocation (Quasar §3.3) and assignment consume: v[k]
 * has cols[k] values laid out as rusk_cls_kind says; version[k] is the model used. */
typedef struct rusk_cls_job_estimate {
	uint32_t cols[RUSK_CLS_KINDS];
	uint64_t version[RUSK_CLS_KINDS];
	double v[RUSK_CLS_KINDS][RUSK_CLS_MAX_COLS];
} rusk_cls_job_estimate;

/* rusk_classifier_classify: the four fold-ins of one job (rusk_cls_classify each; the
 * models of different kinds may come from different retrains). Registered threads; returns
 * as rusk_cls_classify (the first error), RUSK_EINVAL for a NULL argument. */
int rusk_classifier_classify(const rusk_classifier *c, const rusk_cls_job_profile *p,
                             rusk_cls_job_estimate *out);
/* rusk_classifier_retrain: retrains the four in turn; info may be NULL. First error wins. */
int rusk_classifier_retrain(rusk_classifier *c, rusk_cls_train_info info[RUSK_CLS_KINDS], char *err,
                            size_t errlen);

/* ---- allocation sized to a performance target (Quasar §3.3, core/learn/classify_alloc.c) -- */

/* How a job's rows are laid out: scale-up column (r - 1) x su_mem_blocks + (b - 1) is r RUs
 * with b memory blocks on one machine; scale-out column n - 1 is n machines; heterogeneity
 * column j is platform j. Each must match the job estimate's cols[]. */
typedef struct rusk_cls_shape {
	uint32_t su_rus, su_mem_blocks, so_machines, platforms;
} rusk_cls_shape;

/* One candidate machine as the allocator sees it (a snapshot the caller owns). */
typedef struct rusk_cls_machine {
	uint32_t platform;        /* heterogeneity column, < shape.platforms */
	uint32_t free_rus;        /* RUs it could give now */
	uint32_t free_mem_blocks; /* memory blocks it could give now */
	/* Intensity its tenants cause on each shared resource, averaged over its RUs (Tarcil
	 * eq. 3's C_i: the sum of the tenants' caused intensity per RU / RUs), 0..100. */
	double pressure[RUSK_N_RESOURCES];
} rusk_cls_machine;

typedef enum rusk_cls_target_kind {
	RUSK_CLS_TARGET_THROUGHPUT = 0, /* value: units of work per second */
	RUSK_CLS_TARGET_COMPLETION = 1, /* value: seconds to finish `work` units */
} rusk_cls_target_kind;

/* A job's performance target instead of a size (Quasar §3.1). Performance is in the rows'
 * units: the generator's are units of work per second. */
typedef struct rusk_cls_target {
	rusk_cls_target_kind kind;
	double value; /* > 0 */
	double work;  /* completion targets: units of work, > 0; ignored otherwise */
} rusk_cls_target;

/* Flags of rusk_cls_alloc_size and rusk_cls_perf. */
/* Ignore heterogeneity and interference: every platform counts as the reference one and
 * no tenant slows the job; machines are ranked least-loaded first (most free RUs). This is
 * sizing and placement without profiles, the ablation of "classified vs none". */
#define RUSK_CLS_ALLOC_BLIND 1u

/* Most machines one allocation may span. */
#define RUSK_CLS_ALLOC_MAX_MACHINES RUSK_CLS_MAX_COLS

typedef struct rusk_cls_alloc {
	uint32_t rus;        /* RUs on each machine */
	uint32_t mem_blocks; /* memory blocks on each machine */
	uint32_t machines;   /* machine count; 0 when no machine has room for 1 RU x 1 block */
	uint32_t machine[RUSK_CLS_ALLOC_MAX_MACHINES]; /* indices into the caller's array,
	                                                * best-ranked first */
	uint32_t n_platforms;                          /* distinct platforms among them */
	uint32_t platform[RUSK_MAX_PLATFORMS];         /* preferred platforms, best-ranked first */
	double perf;                                   /* estimated throughput of this allocation */
	double target_perf;                            /* the target as a throughput */
	double est_time;                               /* completion targets: work / perf; else 0 */
	bool met;                                      /* perf >= target_perf */
} rusk_cls_alloc;

/*
 * rusk_cls_interference_factor: rusk's model of what interference costs a workload (the
 * paper gives none): 1 / (1 + 0.05 sum_r (pressure_r / tolerated_r)^2), so a workload loses
 * about 5% when one resource reaches the intensity it tolerates (the QoS loss at which
 * §3.2 records a sensitivity), quadratically more beyond. tolerated: the interference row's
 * first RUSK_N_RESOURCES columns (> 0). In (0, 1]; -1 for a NULL argument. Any thread.
 */
double rusk_cls_interference_factor(const double tolerated[RUSK_N_RESOURCES],
                                    const double pressure[RUSK_N_RESOURCES]);

/*
 * rusk_cls_perf: throughput of `rus` RUs x `mem_blocks` blocks on each of n machines whose
 * platforms (n of them) and pressures are given, as the rows `est` say (classified rows
 * give the estimate, true rows the truth):
 *   eff(n) x sum_m SU[rus, blocks] x HE[platform_m] / SU[1, 1] x I(tolerated, pressure_m)
 * with eff(n) = SO[n] / (n SO[1]), the scale-out efficiency, and I as
 * rusk_cls_interference_factor (RUSK_CLS_ALLOC_BLIND: HE / SU[1, 1] = I = 1). pressure may
 * be NULL (no tenant). Returns -1 on a bad argument (NULL, est->cols not matching the
 * shape or above RUSK_CLS_MAX_COLS, size outside the shape, a platform out of range, a row
 * value not finite or <= 0). Any thread.
 */
double rusk_cls_perf(const rusk_cls_shape *shape, const rusk_cls_job_estimate *est, uint32_t rus,
                     uint32_t mem_blocks, uint32_t n, const uint32_t *platform,
                     const double (*pressure)[RUSK_N_RESOURCES], unsigned flags);

/*
 * rusk_cls_alloc_size: Quasar's greedy allocation (§3.3). Ranks the machines by quality for
 * the job (platform speed-up from its heterogeneity row x interference factor from its
 * tolerated intensities and each machine's pressure; least-loaded with
 * RUSK_CLS_ALLOC_BLIND), then sizes: one machine first, growing RUs then memory blocks
 * (scale-up), then 2, 3, ... machines (scale-out) up to shape->so_machines, each time on the
 * best-ranked machines with room, so lower-ranked ones are used only when better ones lack
 * room or count; the first, smallest allocation whose estimated throughput meets the
 * target wins. Deterministic (ties: more free RUs, then lower index). O(M log M + S x R x B)
 * for M machines and S = so_machines.
 * Threads: a pure function of its arguments; it reads no model (no RCU section, no lock),
 * so any thread may call it, concurrently; est comes from rusk_classifier_classify or from
 * true rows. Ownership: everything is the caller's; out is written whole.
 * Returns RUSK_OK (out->met), RUSK_EINFEASIBLE (the target cannot be met on these machines:
 * out holds the highest-throughput allocation found, out->met false, out->machines 0 when no
 * machine has room for 1 RU x 1 block), RUSK_EINVAL (NULL, a shape that does not match
 * est->cols, a row value not finite or <= 0, a target not finite or <= 0, a machine's
 * platform out of range or a pressure not finite or < 0), RUSK_ENOMEM.
 */
int rusk_cls_alloc_size(const rusk_cls_shape *shape, const rusk_cls_job_estimate *est,
                        const rusk_cls_target *target, const rusk_cls_machine *m,
                        uint32_t n_machines, unsigned flags, rusk_cls_alloc *out);

/*
 * rusk_cls_tarcil_q: the kernel's placement quality (Tarcil eq. 1-5, core/kernel/quality.c) of a
 * job causing `caused` (the interference row's last RUSK_N_RESOURCES columns, 0..100,
 * clamped to 0..99) on an RU that suffers `pressure`; not platform-scaled. In [0, 1]; -1
 * for a NULL argument. Any thread.
 */
double rusk_cls_tarcil_q(const double caused[RUSK_N_RESOURCES],
                         const double pressure[RUSK_N_RESOURCES]);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_CLASSIFY_H */
