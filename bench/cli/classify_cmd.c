/* SPDX-License-Identifier: MIT */
/*
 * `rusk classify`: validation and timing of the classification engine (Quasar §3.2,
 * Table 2 and Fig. 3's shape; rusk/classify.h).
 *
 *   validation  for 1..--max-entries profiling entries per row: a model is trained on
 *               --workloads rows (--offline of them profiled exhaustively, the others
 *               with that many entries), then --incoming new jobs are profiled with that
 *               many entries and classified by fold-in. A job's error is the mean
 *               relative error |estimate - truth| / truth over its unprofiled entries;
 *               the table gives the average, 90th percentile and maximum over jobs.
 *   timing      retrain of the four classifications and classification of one job (four
 *               fold-ins) against training sets of 125 .. --timing-max rows.
 *   feedback    a model starts from 20 exhaustively profiled rows of two of the families
 *               (a system that has seen few kinds of workload yet); jobs arrive in
 *               batches of 100, are classified from two entries each, and at completion
 *               what their run measured is fed back (rusk_cls_feedback) before a retrain:
 *               the error of each batch shows what feedback buys. A job ran at one
 *               allocation, so by default (--feedback-entries observed) it feeds back one
 *               entry of each of scale-up (its RUs x blocks), scale-out (its machine
 *               count, 1-4: profile_row's range) and heterogeneity (its platform), each a
 *               seeded draw per job, and the caused half of its interference row (what a
 *               machine's counters see of its tenant; the tolerated intensities need
 *               injected contention, i.e. profiling). --feedback-entries full feeds back
 *               whole rows (every column: exhaustive profiling).
 * The truth comes from the seeded generator (core/learn/classify_gen.c), or with --matrix from
 * a measured CSV (one classification; the last --incoming rows are the new jobs).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/classify.h>

#include "cli.h"
#include "outfile.h"

#define MAX_ENTRIES       8
#define N_SIZES           6
#define FB_START_ROWS     20
#define FB_START_FAMILIES 2
#define FB_BATCH          100

typedef struct opts {
	uint64_t workloads, offline, incoming, max_entries, families, rank, seed, timing_max;
	uint64_t fb_batches;
	int fb_full; /* --feedback-entries full */
	double noise, jitter, eta, lambda;
	const char *matrix, *json;
} opts;

typedef struct stat3 {
	double avg, p90, max;
	uint32_t jobs;
} stat3;

static const uint32_t sizes[N_SIZES] = {125, 250, 500, 1000, 2000, 4000};

static void usage(void)
{
	puts("usage: rusk classify [options]\n"
	     "\n"
	     "Validates the classification engine (collaborative filtering, Quasar §3.2) on the\n"
	     "seeded workload generator, or on a measured matrix: error per classification at\n"
	     "1..N profiling entries per row, classification and retrain time against training\n"
	     "size, and the error of successive batches of jobs as their measured rows are fed\n"
	     "back.\n"
	     "\n"
	     "  --workloads N      training rows (default 1000)\n"
	     "  --offline N        of them profiled exhaustively (default 100)\n"
	     "  --incoming N       new jobs classified per density (default 200; with --matrix\n"
	     "                     min(200, rows / 5))\n"
	     "  --max-entries N    density sweep 1..N entries per row (default 8, at most 8)\n"
	     "  --families N       workload families of the generator (default 6)\n"
	     "  --jitter X         spread of a workload in its family (default 0.05)\n"
	     "  --noise X          relative measurement noise of profiling (default 0.03)\n"
	     "  --rank N           latent factors (default 4)\n"
	     "  --eta X            SGD learning rate (default 0.02)\n"
	     "  --lambda X         SGD regularisation (default 0.02)\n"
	     "  --matrix CSV       a measured matrix instead of the generator (header line, one\n"
	     "                     workload per line, empty cell = missing, values > 0)\n"
	     "  --timing-max N     largest training size timed (default 4000; 0: no timing)\n"
	     "  --feedback N       feedback batches of 100 jobs (default 5; 0: none)\n"
	     "  --feedback-entries observed|full  what a finished job feeds back: the entries\n"
	     "                     of the allocation it ran at and its caused interference\n"
	     "                     (default), or its whole rows (exhaustive profiling)\n"
	     "  --seed N           generator, profiling and SGD seed (default 1)\n"
	     "  --json FILE        everything as JSON\n"
	     "  --alloc            instead: allocation to a performance target (Quasar §3.3)\n"
	     "                     against reservations (rusk classify --alloc --help)\n"
	     "\n"
	     "exit status: 0 ok, 1 a model failed to train, 2 bad usage or input");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static stat3 summarise(double *v, uint32_t n)
{
	stat3 s = {0, 0, 0, n};
	if (n == 0)
		return s;
	qsort(v, n, sizeof *v, cmp_double);
	for (uint32_t i = 0; i < n; i++)
		s.avg += v[i] / n;
	s.p90 = v[(uint32_t)ceil(0.9 * n) - 1];
	s.max = v[n - 1];
	return s;
}

static uint64_t pseed(const opts *o, int kind, uint32_t d, uint32_t salt)
{
	return o->seed * 1000003u + (uint64_t)kind * 7919u + d * 104729u + salt;
}

/* A classification trained on rows [0, n) of truth: the first `offline` measured in every
 * column, the others with d entries (d = 0: every present cell, exactly). */
static rusk_cls *new_cls(const opts *o, uint32_t cols)
{
	rusk_cls_params p;
	rusk_cls_params_init(&p, cols);
	p.rank = (uint32_t)o->rank;
	p.eta = o->eta;
	p.lambda = o->lambda;
	p.seed = o->seed;
	rusk_cls *c = NULL;
	char err[256];
	if (rusk_cls_create(&p, &c, err, sizeof err) != RUSK_OK)
		fprintf(stderr, "rusk classify: %s\n", err);
	return c;
}

static rusk_cls *train_on(const opts *o, int kind, const rusk_cls_matrix *t, uint32_t n,
                          uint32_t offline, uint32_t d, rusk_cls_train_info *ti)
{
	uint32_t cols = rusk_cls_matrix_cols(t);
	rusk_cls *c = new_cls(o, cols);
	if (c == NULL)
		return NULL;
	char err[256];
	rusk_cls_entry e[RUSK_CLS_MAX_COLS];
	for (uint32_t u = 0; u < n; u++) {
		uint32_t k = 0;
		if (d == 0) {
			for (uint32_t i = 0; i < cols; i++) {
				double v = rusk_cls_matrix_get(t, u, i);
				if (!isnan(v))
					e[k++] = (rusk_cls_entry){i, v};
			}
		} else {
			rusk_cls_profile_row(t, kind, u, u < offline ? cols : d, o->noise,
			                     pseed(o, kind, d, 1), e, &k);
		}
		if (k > 0 && rusk_cls_add_row(c, e, k, NULL, err, sizeof err) != RUSK_OK) {
			fprintf(stderr, "rusk classify: row %u: %s\n", u + 1, err);
			rusk_cls_destroy(c);
			return NULL;
		}
	}
	if (rusk_cls_retrain(c, ti, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk classify: %s: %s\n", rusk_cls_kind_name(kind), err);
		rusk_cls_destroy(c);
		return NULL;
	}
	return c;
}

/* Mean relative error of one classified row over its unprofiled present cells; -1 when
 * it has none. */
static double row_error(const rusk_cls_matrix *t, uint32_t u, const double *est,
                        const rusk_cls_entry *e, uint32_t n)
{
	uint32_t cols = rusk_cls_matrix_cols(t), cnt = 0;
	double sum = 0;
	for (uint32_t i = 0; i < cols; i++) {
		bool profiled = false;
		for (uint32_t j = 0; j < n; j++)
			profiled |= e[j].col == i;
		double v = rusk_cls_matrix_get(t, u, i);
		if (profiled || isnan(v))
			continue;
		sum += fabs(est[i] - v) / fabs(v);
		cnt++;
	}
	return cnt ? sum / cnt : -1;
}

/* Classifies rows [a, b) of t from d entries each; job errors into err[]; returns count. */
static uint32_t classify_rows(const opts *o, int kind, const rusk_cls *c, const rusk_cls_matrix *t,
                              uint32_t a, uint32_t b, uint32_t d, double *err)
{
	rusk_cls_entry e[MAX_ENTRIES];
	double est[RUSK_CLS_MAX_COLS];
	uint32_t n_err = 0;
	for (uint32_t u = a; u < b; u++) {
		uint32_t k = 0;
		rusk_cls_profile_row(t, kind, u, d, o->noise, pseed(o, kind, d, 2), e, &k);
		if (k == 0 || rusk_cls_classify(c, e, k, est, NULL) != RUSK_OK)
			continue;
		double x = row_error(t, u, est, e, k);
		if (x >= 0)
			err[n_err++] = x;
	}
	return n_err;
}

static int validate(const opts *o, const rusk_cls_matrix *const truth[RUSK_CLS_KINDS], int n_kinds,
                    uint32_t train_rows, stat3 res[RUSK_CLS_KINDS][MAX_ENTRIES])
{
	double *err = malloc(sizeof *err * (o->incoming ? o->incoming : 1));
	if (err == NULL)
		return RUSK_EXIT_FAIL;
	for (int k = 0; k < n_kinds; k++)
		for (uint32_t d = 1; d <= o->max_entries; d++) {
			rusk_cls_train_info ti;
			rusk_cls *c = train_on(o, k, truth[k], train_rows, (uint32_t)o->offline,
			                       o->matrix ? 0 : d, &ti);
			if (c == NULL) {
				free(err);
				return RUSK_EXIT_FAIL;
			}
			uint32_t n = classify_rows(o, k, c, truth[k], train_rows,
			                           train_rows + (uint32_t)o->incoming, d, err);
			res[k][d - 1] = summarise(err, n);
			rusk_cls_destroy(c);
		}
	free(err);
	return 0;
}

static void print_validation(const opts *o, int n_kinds, const char *const names[],
                             stat3 res[RUSK_CLS_KINDS][MAX_ENTRIES])
{
	printf("\nvalidation: error of the unprofiled entries of %" PRIu64
	       " new jobs, avg / p90 / max over jobs (%%)\n  entries",
	       o->incoming);
	for (int k = 0; k < n_kinds; k++)
		printf("  %-20s", names[k]);
	printf("\n");
	for (uint32_t d = 1; d <= o->max_entries; d++) {
		printf("  %7u", d);
		for (int k = 0; k < n_kinds; k++) {
			const stat3 *s = &res[k][d - 1];
			char cell[64];
			if (s->jobs == 0) /* every column was profiled: nothing to estimate */
				snprintf(cell, sizeof cell, "-");
			else
				snprintf(cell, sizeof cell, "%.1f / %.1f / %.1f", 100 * s->avg,
				         100 * s->p90, 100 * s->max);
			printf("  %-20s", cell);
		}
		printf("\n");
	}
}

typedef struct timing_row {
	uint32_t rows;
	double retrain_ms, p50_us, p99_us, max_us;
} timing_row;

/* Retrain of the four and classification of one job, against n training rows. */
static int time_size(const opts *o, uint32_t n, timing_row *tr)
{
	enum { JOBS = 200 };
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = n + JOBS;
	gp.families = (uint32_t)o->families;
	gp.jitter = o->jitter;
	gp.seed = o->seed;
	rusk_cls_truth *t = NULL;
	char err[256];
	if (rusk_cls_truth_generate(&gp, &t, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk classify: %s\n", err);
		return RUSK_EXIT_USAGE;
	}
	rusk_cls *c[RUSK_CLS_KINDS] = {0};
	int rc = 0;
	tr->rows = n;
	tr->retrain_ms = 0;
	for (int k = 0; k < RUSK_CLS_KINDS && rc == 0; k++) {
		rusk_cls_train_info ti;
		c[k] = train_on(o, k, rusk_cls_truth_matrix(t, k), n, n / 10, 2, &ti);
		rc = c[k] == NULL ? RUSK_EXIT_FAIL : 0;
		tr->retrain_ms += c[k] ? ti.seconds * 1e3 : 0;
	}
	double us[JOBS];
	for (uint32_t j = 0; j < JOBS && rc == 0; j++) {
		rusk_cls_entry e[RUSK_CLS_KINDS][2];
		uint32_t ne[RUSK_CLS_KINDS];
		for (int k = 0; k < RUSK_CLS_KINDS; k++)
			rusk_cls_profile_row(rusk_cls_truth_matrix(t, k), k, n + j, 2, o->noise,
			                     pseed(o, k, 2, 3), e[k], &ne[k]);
		double est[RUSK_CLS_MAX_COLS];
		double t0 = cli_now_s();
		for (int k = 0; k < RUSK_CLS_KINDS; k++)
			rusk_cls_classify(c[k], e[k], ne[k], est, NULL);
		us[j] = (cli_now_s() - t0) * 1e6;
	}
	if (rc == 0) {
		qsort(us, JOBS, sizeof *us, cmp_double);
		tr->p50_us = us[JOBS / 2];
		tr->p99_us = us[JOBS * 99 / 100];
		tr->max_us = us[JOBS - 1];
	}
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_destroy(c[k]);
	rusk_cls_truth_destroy(t);
	return rc;
}

/* What job u's run measured of classification k (the design note above says which). */
static void measured(const opts *o, const rusk_cls_matrix *m, int k, uint32_t u, rusk_cls_entry *e,
                     uint32_t *ne)
{
	uint32_t cols = rusk_cls_matrix_cols(m);
	if (!o->fb_full && k != RUSK_CLS_INTERFERENCE) { /* the one allocation it ran at */
		rusk_cls_profile_row(m, k, u, 1, o->noise, pseed(o, k, 1, 8), e, ne);
		return;
	}
	rusk_cls_profile_row(m, k, u, cols, o->noise, pseed(o, k, 2, 5), e, ne);
	if (o->fb_full)
		return;
	uint32_t w = 0; /* interference: the caused columns, RUSK_N_RESOURCES.. */
	for (uint32_t i = 0; i < *ne; i++)
		if (e[i].col >= RUSK_N_RESOURCES)
			e[w++] = e[i];
	*ne = w;
}

/* Feedback: batches of jobs classified, then what their runs measured fed back. */
static int feedback(const opts *o, const rusk_cls_truth *t, double fb[][RUSK_CLS_KINDS],
                    uint32_t fb_rows[])
{
	rusk_cls *c[RUSK_CLS_KINDS] = {0};
	int rc = 0;
	char msg[256];
	uint32_t start = 0; /* the first incoming row: after the initial ones */
	for (int k = 0; k < RUSK_CLS_KINDS && rc == 0; k++) {
		const rusk_cls_matrix *m = rusk_cls_truth_matrix(t, k);
		uint32_t cols = rusk_cls_matrix_cols(m), known = 0, u = 0;
		c[k] = new_cls(o, cols);
		rc = c[k] == NULL ? RUSK_EXIT_FAIL : 0;
		for (; rc == 0 && known < FB_START_ROWS && u < rusk_cls_matrix_rows(m); u++)
			if (rusk_cls_truth_family(t, u) < FB_START_FAMILIES) {
				rusk_cls_entry e[RUSK_CLS_MAX_COLS];
				uint32_t ne;
				rusk_cls_profile_row(m, k, u, cols, o->noise, pseed(o, k, 2, 6), e,
				                     &ne);
				rusk_cls_add_row(c[k], e, ne, NULL, NULL, 0);
				known++;
			}
		start = u;
		if (rc == 0 && rusk_cls_retrain(c[k], NULL, msg, sizeof msg) != RUSK_OK) {
			fprintf(stderr, "rusk classify: %s: %s\n", rusk_cls_kind_name(k), msg);
			rc = RUSK_EXIT_FAIL;
		}
	}
	double err[FB_BATCH];
	for (uint32_t b = 0; b < o->fb_batches && rc == 0; b++) {
		uint32_t first = start + b * FB_BATCH;
		fb_rows[b] = rusk_cls_rows(c[0]);
		for (int k = 0; k < RUSK_CLS_KINDS && rc == 0; k++) {
			const rusk_cls_matrix *m = rusk_cls_truth_matrix(t, k);
			uint32_t n_err = 0;
			for (uint32_t u = first; u < first + FB_BATCH; u++) {
				rusk_cls_entry e[RUSK_CLS_MAX_COLS];
				double est[RUSK_CLS_MAX_COLS];
				uint32_t ne = 0, row;
				rusk_cls_profile_row(m, k, u, 2, o->noise, pseed(o, k, 2, 4), e,
				                     &ne);
				if (rusk_cls_classify(c[k], e, ne, est, NULL) == RUSK_OK)
					err[n_err++] = row_error(m, u, est, e, ne);
				/* The job joins the matrix with its profiled entries; at
				 * completion what its run measured replaces the estimates. */
				rusk_cls_add_row(c[k], e, ne, &row, NULL, 0);
				measured(o, m, k, u, e, &ne);
				if (ne > 0)
					rusk_cls_feedback(c[k], row, e, ne, NULL, 0);
			}
			fb[b][k] = summarise(err, n_err).avg;
			if (rusk_cls_retrain(c[k], NULL, msg, sizeof msg) != RUSK_OK) {
				fprintf(stderr, "rusk classify: %s: %s\n", rusk_cls_kind_name(k),
				        msg);
				rc = RUSK_EXIT_FAIL;
			}
		}
	}
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_destroy(c[k]);
	return rc;
}

static void write_json(FILE *f, const opts *o, int n_kinds, const char *const names[],
                       stat3 res[RUSK_CLS_KINDS][MAX_ENTRIES], uint32_t train_rows,
                       const timing_row *tr, int n_tr, double fb[][RUSK_CLS_KINDS],
                       const uint32_t *fb_rows, uint32_t n_fb)
{
	fprintf(f, "{\n  \"config\": {\"source\": ");
	if (o->matrix != NULL) {
		fputc('"', f);
		for (const char *s = o->matrix; *s; s++)
			if (*s == '"' || *s == '\\')
				fprintf(f, "\\%c", *s);
			else if ((unsigned char)*s < 0x20)
				fprintf(f, "\\u%04x", *s);
			else
				fputc(*s, f);
		fputc('"', f);
	} else {
		fprintf(f, "\"generator\"");
	}
	fprintf(f,
	        ", \"training_rows\": %u, \"offline\": %" PRIu64 ", \"incoming\": %" PRIu64
	        ", \"families\": %" PRIu64 ", \"jitter\": %g, \"noise\": %g, \"rank\": %" PRIu64
	        ", \"eta\": %g, \"lambda\": %g, \"seed\": %" PRIu64 "},\n",
	        train_rows, o->matrix ? 0 : o->offline, o->incoming, o->families, o->jitter,
	        o->noise, o->rank, o->eta, o->lambda, o->seed);
	fprintf(f, "  \"validation\": [");
	const char *sep = "";
	for (int k = 0; k < n_kinds; k++)
		for (uint32_t d = 1; d <= o->max_entries; d++) {
			const stat3 *s = &res[k][d - 1];
			fprintf(f,
			        "%s\n    {\"kind\": \"%s\", \"entries\": %u, \"jobs\": %u, "
			        "\"avg\": %.6f, \"p90\": %.6f, \"max\": %.6f}",
			        sep, names[k], d, s->jobs, s->avg, s->p90, s->max);
			sep = ",";
		}
	fprintf(f, "\n  ],\n  \"timing\": [");
	sep = "";
	for (int i = 0; i < n_tr; i++) {
		fprintf(f,
		        "%s\n    {\"rows\": %u, \"retrain_ms\": %.3f, \"classify_us_p50\": %.3f, "
		        "\"classify_us_p99\": %.3f, \"classify_us_max\": %.3f}",
		        sep, tr[i].rows, tr[i].retrain_ms, tr[i].p50_us, tr[i].p99_us,
		        tr[i].max_us);
		sep = ",";
	}
	fprintf(f, "\n  ],\n  \"feedback_entries\": \"%s\",\n  \"feedback\": [",
	        o->fb_full ? "full" : "observed");
	sep = "";
	for (uint32_t b = 0; b < n_fb; b++) {
		fprintf(f, "%s\n    {\"batch\": %u, \"training_rows\": %u", sep, b + 1, fb_rows[b]);
		for (int k = 0; k < RUSK_CLS_KINDS; k++)
			fprintf(f, ", \"%s\": %.6f", rusk_cls_kind_name(k), fb[b][k]);
		fputc('}', f);
		sep = ",";
	}
	fprintf(f, "\n  ]\n}\n");
}

static const cli_choice fb_entries[] = {{"observed", 0}, {"full", 1}, {NULL, 0}};

static int parse(int argc, char **argv, opts *o)
{
	*o = (opts){.workloads = 1000,
	            .offline = 100,
	            .incoming = UINT64_MAX,
	            .max_entries = MAX_ENTRIES,
	            .families = 6,
	            .rank = 4,
	            .seed = 1,
	            .timing_max = 4000,
	            .fb_batches = 5,
	            .noise = 0.03,
	            .jitter = 0.05,
	            .eta = 0.02,
	            .lambda = 0.02};
	const cli_opt opts_[] = {
	        {CLI_U64_OPT("--workloads", 2, 1000000, &o->workloads)},
	        {CLI_U64_OPT("--offline", 0, 1000000, &o->offline)},
	        {CLI_U64_OPT("--incoming", 1, 1000000, &o->incoming)},
	        {CLI_U64_OPT("--max-entries", 1, MAX_ENTRIES, &o->max_entries)},
	        {CLI_U64_OPT("--families", 1, 64, &o->families)},
	        {CLI_DOUBLE_OPT("--jitter", 0, 1, &o->jitter)},
	        {CLI_DOUBLE_OPT("--noise", 0, 1, &o->noise)},
	        {CLI_U64_OPT("--rank", 1, RUSK_CLS_MAX_RANK, &o->rank)},
	        {CLI_DOUBLE_OPT("--eta", 1e-6, 1, &o->eta)},
	        {CLI_DOUBLE_OPT("--lambda", 0, 10, &o->lambda)},
	        {CLI_FILE_OPT("--matrix", &o->matrix)},
	        {CLI_U64_OPT("--timing-max", 0, 100000, &o->timing_max)},
	        {CLI_U64_OPT("--feedback", 0, 100, &o->fb_batches)},
	        {CLI_CHOICE_OPT("--feedback-entries", fb_entries, &o->fb_full)},
	        {CLI_U64_OPT("--seed", 0, 9007199254740992.0 /* 2^53 */, &o->seed)},
	        {CLI_FILE_OPT("--json", &o->json)},
	};
	int r = cli_parse("classify", argc, argv, NULL, opts_, sizeof opts_ / sizeof opts_[0],
	                  usage);
	if (r != 0)
		return r;
	if (o->offline > o->workloads) {
		fprintf(stderr,
		        "rusk: --offline: %" PRIu64 " is more than --workloads %" PRIu64 "\n",
		        o->offline, o->workloads);
		return -1;
	}
	return 0;
}

int rusk_cmd_classify(int argc, char **argv)
{
	/* --alloc anywhere selects the allocation comparison (classify_alloc.c), which has
	 * its own options. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--alloc") == 0)
			return rusk_cmd_classify_alloc(argc, argv);
	opts o;
	int r = parse(argc, argv, &o);
	if (r != 0)
		return r > 0 ? 0 : RUSK_EXIT_USAGE;
	/* The output before any work, checked against the matrix it must never replace. */
	const cli_in in = {"--matrix", o.matrix};
	cli_out jo = {.flag = "--json", .path = o.json};
	if ((r = cli_files_open(&in, 1, &jo, 1)) != 0)
		return r;
	rusk_thread_register();
	char err[512];
	rusk_cls_truth *truth = NULL;
	rusk_cls_matrix *mat = NULL;
	const rusk_cls_matrix *tm[RUSK_CLS_KINDS] = {0};
	const char *names[RUSK_CLS_KINDS];
	int n_kinds = RUSK_CLS_KINDS, rc = 0;
	uint32_t train_rows;
	if (o.matrix != NULL) {
		if (rusk_cls_matrix_load_csv(o.matrix, true, &mat, err, sizeof err) != RUSK_OK) {
			fprintf(stderr, "rusk classify: %s\n", err);
			rc = RUSK_EXIT_USAGE;
			goto out;
		}
		uint32_t rows = rusk_cls_matrix_rows(mat);
		if (o.incoming == UINT64_MAX)
			o.incoming = rows / 5 < 200 ? rows / 5 : 200;
		if (o.incoming == 0 || o.incoming >= rows) {
			fprintf(stderr,
			        "rusk classify: %s: %u rows: too few for %" PRIu64
			        " new jobs and a training set (--incoming)\n",
			        o.matrix, rows, o.incoming);
			rc = RUSK_EXIT_USAGE;
			goto out;
		}
		train_rows = rows - (uint32_t)o.incoming;
		tm[0] = mat;
		names[0] = "matrix";
		n_kinds = 1;
		o.fb_batches = 0;
	} else {
		if (o.incoming == UINT64_MAX)
			o.incoming = 200;
		rusk_cls_gen_params gp;
		rusk_cls_gen_params_init(&gp);
		uint64_t need = o.workloads + o.incoming;
		/* The feedback's initial rows come from 2 of the families: room for them. */
		uint64_t fb_need = 4 * FB_START_ROWS * o.families + o.fb_batches * FB_BATCH;
		gp.workloads = (uint32_t)(need > fb_need ? need : fb_need);
		gp.families = (uint32_t)o.families;
		gp.jitter = o.jitter;
		gp.seed = o.seed;
		if (rusk_cls_truth_generate(&gp, &truth, err, sizeof err) != RUSK_OK) {
			fprintf(stderr, "rusk classify: %s\n", err);
			rc = RUSK_EXIT_USAGE;
			goto out;
		}
		for (int k = 0; k < RUSK_CLS_KINDS; k++) {
			tm[k] = rusk_cls_truth_matrix(truth, k);
			names[k] = rusk_cls_kind_name(k);
		}
		train_rows = (uint32_t)o.workloads;
	}
	printf("rusk classify: %s; %u training rows", o.matrix ? o.matrix : "generator",
	       train_rows);
	if (o.matrix == NULL)
		printf(" (%" PRIu64 " profiled exhaustively), %" PRIu64 " families, jitter %g",
		       o.offline, o.families, o.jitter);
	printf("; %" PRIu64 " new jobs; noise %g; rank %" PRIu64
	       ", eta %g, lambda %g; seed %" PRIu64 "\n",
	       o.incoming, o.noise, o.rank, o.eta, o.lambda, o.seed);
	static stat3 res[RUSK_CLS_KINDS][MAX_ENTRIES];
	rc = validate(&o, tm, n_kinds, train_rows, res);
	if (rc != 0)
		goto out;
	print_validation(&o, n_kinds, names, res);

	timing_row tr[N_SIZES];
	int n_tr = 0;
	if (o.matrix == NULL && o.timing_max > 0) {
		printf("\ntiming: one job (four fold-ins, 2 entries each) and a retrain of the "
		       "four\n"
		       "  rows   classify p50 (us)   p99 (us)   retrain (ms)\n");
		for (int i = 0; i < N_SIZES && sizes[i] <= o.timing_max && rc == 0; i++) {
			rc = time_size(&o, sizes[i], &tr[n_tr]);
			if (rc == 0) {
				printf("  %5u   %17.1f   %8.1f   %12.1f\n", tr[n_tr].rows,
				       tr[n_tr].p50_us, tr[n_tr].p99_us, tr[n_tr].retrain_ms);
				n_tr++;
			}
		}
		if (rc != 0)
			goto out;
	}
	double fb[100][RUSK_CLS_KINDS];
	uint32_t fb_rows[100];
	if (o.fb_batches > 0) {
		rc = feedback(&o, truth, fb, fb_rows);
		if (rc != 0)
			goto out;
		printf("\nfeedback: mean error (%%) of each batch of %u new jobs (2 entries), "
		       "classified before\nwhat their runs measured is fed back (%s); the first "
		       "model knows %u rows of %u families\n  batch   rows",
		       FB_BATCH,
		       o.fb_full ? "whole rows" : "their allocation's entries, caused interference",
		       FB_START_ROWS, FB_START_FAMILIES);
		for (int k = 0; k < RUSK_CLS_KINDS; k++)
			printf("  %13s", rusk_cls_kind_name(k));
		printf("\n");
		for (uint32_t b = 0; b < o.fb_batches; b++) {
			printf("  %5u  %5u", b + 1, fb_rows[b]);
			for (int k = 0; k < RUSK_CLS_KINDS; k++)
				printf("  %13.1f", 100 * fb[b][k]);
			printf("\n");
		}
	}
	if (jo.f != NULL)
		write_json(jo.f, &o, n_kinds, names, res, train_rows, tr, n_tr, fb, fb_rows,
		           (uint32_t)o.fb_batches);
	if (cli_out_close(&jo) != 0)
		rc = RUSK_EXIT_FAIL;
out:
	cli_out_discard(&jo); /* not written (a failure): a previous --json stays as it was */
	rusk_cls_matrix_destroy(mat);
	rusk_cls_truth_destroy(truth);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
