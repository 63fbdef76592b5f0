/* SPDX-License-Identifier: MIT */
/*
 * `rusk predict TRACE|--generate N`: 3σPredict's accuracy on a job trace (3Sigma §4.1, and
 * §2.1 / Fig. 2(d) for the report).
 *
 * The trace is replayed in time order through one predictor: a job's prediction is read
 * when it is submitted, and its runtime is learned when it ends (submit + wait + run), so
 * an estimate never sees its own job or any job still running. Jobs with an unknown or
 * zero run time are neither predicted nor learned (counted as skipped). The report gives
 * the percent estimate error (estimate - actual) / actual of every prediction: the share
 * within +-5% and +-25%, the over- and under-estimates by a factor of two or more, the
 * histogram in Fig. 2(d)'s buckets (each decile +-5%, and a tail above 95%), and the NMAE
 * of each expert family (feature x estimator) over the jobs it had an estimate for,
 * beside the NMAE of the chosen estimates. The first job, predicted before anything was
 * learned, has no estimate: counted apart, not in the shares.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "outfile.h"
#include "workload/jobtrace.h"
#include "workload/loadgen.h"

#define N_FAM_F  (RUSK_FEAT_N + 1) /* features and the global history */
#define N_BUCKET 21                /* -100, -90, ..., 90, tail */

typedef struct report {
	uint64_t jobs, skipped, predicted, by_source[3];
	uint64_t within5, within25, over2, under2, bucket[N_BUCKET];
	double err_sum, act_sum; /* chosen estimates */
	double fam_err[N_FAM_F][RUSK_EST_N], fam_act[N_FAM_F][RUSK_EST_N];
	uint64_t fam_n[N_FAM_F][RUSK_EST_N], chosen[N_FAM_F][RUSK_EST_N];
} report;

typedef struct event {
	double t;
	size_t i;
} event;

static int cmp_event(const void *a, const void *b)
{
	const event *x = a, *y = b;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static void predict_usage(void)
{
	puts("usage: rusk predict TRACE [options]\n"
	     "       rusk predict --generate N [options]\n"
	     "\n"
	     "Replays a job trace through 3σPredict (runtime distributions per feature value,\n"
	     "expert chosen by NMAE; 3Sigma §4.1) and reports the estimate error as in 3Sigma\n"
	     "Fig. 2(d). TRACE is in the Standard Workload Format of the Parallel Workloads\n"
	     "Archive (18 fields a line, ';' comments). Features: user, executable, requested\n"
	     "processors, queue, user+executable, user+processors.\n"
	     "\n"
	     "  --format swf|openb  TRACE's format (default swf); TRACE openb is the public\n"
	     "                   Alibaba pod list "
	     "(RUSK_TRACE_DIR/openb/openb_pod_list_default.csv):\n"
	     "                   run time scheduled -> deletion, features: resource shape, GPU\n"
	     "                   models accepted (as the name), QoS class (as the queue); no user\n"
	     "  --generate N     instead of a trace, N jobs of the E2E-like generator (50 job\n"
	     "                   classes, lognormal runtimes, CoV > 1 for 40% of the classes)\n"
	     "  --seed S         the generator's seed (default 1)\n"
	     "  --recent X       X of the 'recent' estimator, 1..16 (default 5)\n"
	     "  --min-evals K    judged estimates before an expert may be chosen (default 2)\n"
	     "  --max-values N   feature values tracked at most (default 1048576): each one\n"
	     "                   (a user, a user+executable, ...) takes 1,792 bytes, so N\n"
	     "                   bounds the predictor at N x 1,792 bytes (the default: 1.9 GB);\n"
	     "                   updates of values past N are dropped (counted in the report)\n"
	     "  --json FILE      the report as JSON (deterministic for a trace or seed)\n"
	     "  --quiet          no table on stdout\n"
	     "\n"
	     "exit status: 0 ok, 2 bad usage or a malformed trace (FILE:LINE: reason)");
}

static void score(report *r, const rusk_prediction *pr, const rusk_expert *ex, size_t n_ex,
                  double act)
{
	r->by_source[pr->source]++;
	for (size_t k = 0; k < n_ex; k++) {
		int f = ex[k].feature, e = ex[k].estimator;
		r->fam_err[f][e] += fabs(ex[k].estimate_s - act);
		r->fam_act[f][e] += act;
		r->fam_n[f][e]++;
	}
	if (pr->source == RUSK_PRED_NONE)
		return;
	r->predicted++;
	r->chosen[pr->feature][pr->estimator]++;
	double e = (pr->estimate_s - act) / act * 100;
	r->within5 += fabs(e) <= 5;
	r->within25 += fabs(e) <= 25;
	r->over2 += pr->estimate_s >= 2 * act;
	r->under2 += 2 * pr->estimate_s <= act;
	int b = e > 95 ? N_BUCKET - 1 : (int)floor((e + 105) / 10);
	r->bucket[b < 0 ? 0 : b]++;
	r->err_sum += fabs(pr->estimate_s - act);
	r->act_sum += act;
}

/* Replays t through p (time order, see the top of the file) into r. */
static int replay(rusk_predictor *p, const rusk_jobtrace *t, report *r)
{
	event *sub = malloc((t->n + 1) * sizeof *sub), *end = malloc((t->n + 1) * sizeof *end);
	if (sub == NULL || end == NULL) {
		free(sub);
		free(end);
		return RUSK_ENOMEM;
	}
	size_t ns = 0, ne = 0;
	for (size_t i = 0; i < t->n; i++) {
		const rusk_tjob *j = &t->jobs[i];
		r->jobs++;
		if (!(j->run_s > 0)) {
			r->skipped++;
			continue;
		}
		sub[ns++] = (event){j->submit_s, i};
		end[ne++] = (event){j->submit_s + (j->wait_s > 0 ? j->wait_s : 0) + j->run_s, i};
	}
	qsort(sub, ns, sizeof *sub, cmp_event);
	qsort(end, ne, sizeof *end, cmp_event);
	rusk_expert ex[N_FAM_F * RUSK_EST_N];
	int rc = RUSK_OK;
	for (size_t s = 0, e = 0; s < ns && rc == RUSK_OK; s++) {
		for (; e < ne && end[e].t <= sub[s].t && rc == RUSK_OK; e++) {
			rusk_job jb;
			rusk_tjob_features(&t->jobs[end[e].i], &jb);
			rc = rusk_predict_update(p, &jb, t->jobs[end[e].i].run_s);
		}
		const rusk_tjob *j = &t->jobs[sub[s].i];
		rusk_job jb;
		rusk_tjob_features(j, &jb);
		rusk_prediction pr;
		rusk_predict(p, &jb, &pr, NULL);
		size_t n_ex = rusk_predict_experts(p, &jb, ex, sizeof ex / sizeof *ex);
		score(r, &pr, ex, n_ex, j->run_s);
	}
	free(sub);
	free(end);
	return rc;
}

static double share(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0;
}

static double fam_nmae(const report *r, int f, int e)
{
	return r->fam_act[f][e] > 0 ? r->fam_err[f][e] / r->fam_act[f][e] : NAN;
}

/* Classes of a generated trace whose runtimes have a CoV above 1, and how many classes. */
static void class_cov(const rusk_jobtrace *t, int *high, int *classes)
{
	double s[RUSK_E2E_CLASSES] = {0}, s2[RUSK_E2E_CLASSES] = {0};
	uint64_t n[RUSK_E2E_CLASSES] = {0};
	for (size_t i = 0; i < t->n; i++) {
		int c = t->jobs[i].cls;
		if (c < 0 || c >= RUSK_E2E_CLASSES)
			continue;
		s[c] += t->jobs[i].run_s;
		s2[c] += t->jobs[i].run_s * t->jobs[i].run_s;
		n[c]++;
	}
	*high = *classes = 0;
	for (int c = 0; c < RUSK_E2E_CLASSES; c++) {
		if (n[c] < 2)
			continue;
		double m = s[c] / n[c], var = s2[c] / n[c] - m * m;
		(*classes)++;
		*high += var > 0 && sqrt(var) / m > 1;
	}
}

static void print_report(const report *r, const char *what, const rusk_jobtrace *t,
                         const rusk_predict_stats *st, const rusk_predict_params *pp)
{
	printf("rusk predict: %s: %" PRIu64 " jobs, %" PRIu64 " skipped (run time unknown or 0)",
	       what, r->jobs, r->skipped);
	int high, classes;
	class_cov(t, &high, &classes);
	if (classes > 0)
		printf("; %d job classes, %d with CoV > 1", classes, high);
	printf("\n\n");
	uint64_t n = r->predicted;
	printf("  %-28s %" PRIu64 " (%" PRIu64 " from an expert, %" PRIu64
	       " global fallback); %" PRIu64 " without history\n",
	       "estimates", n, r->by_source[RUSK_PRED_EXPERT], r->by_source[RUSK_PRED_GLOBAL],
	       r->by_source[RUSK_PRED_NONE]);
	printf("  %-28s %.1f%%\n", "within +-5%", share(r->within5, n));
	printf("  %-28s %.1f%%\n", "within +-25%", share(r->within25, n));
	printf("  %-28s %.1f%%\n", "over-estimates by >= 2x", share(r->over2, n));
	printf("  %-28s %.1f%%\n", "under-estimates by >= 2x", share(r->under2, n));
	printf("  %-28s %.3f (global average alone: %.3f)\n", "NMAE of the estimates",
	       r->act_sum > 0 ? r->err_sum / r->act_sum : NAN,
	       fam_nmae(r, RUSK_FEAT_GLOBAL, RUSK_EST_AVERAGE));
	printf("  %-28s", "error histogram (Fig. 2(d))");
	for (int b = 0; b < N_BUCKET; b++) {
		if (b == N_BUCKET - 1)
			printf(" tail %.1f", share(r->bucket[b], n));
		else
			printf(" %d:%.1f", -100 + 10 * b, share(r->bucket[b], n));
		if (b == 10)
			printf("\n  %-28s", "");
	}
	printf("  (%% of estimates)\n");
	printf("  %-28s %" PRIu64 " tracked, %zu bytes each (%.1f MB; at most %" PRIu64
	       " values, --max-values); %" PRIu64 " untracked updates%s\n",
	       "feature values", st->values, st->bytes_per_value,
	       (double)st->values * st->bytes_per_value / 1e6, pp->max_values, st->untracked,
	       st->untracked > 0 ? " (past the cap: raise --max-values)" : "");
	printf("\n  NMAE per expert family (share of jobs it had an estimate for; chosen: share "
	       "of estimates)\n");
	printf("  %-16s", "feature");
	for (int e = 0; e < RUSK_EST_N; e++)
		printf(" %16s", rusk_estimator_name((rusk_estimator)e));
	printf(" %8s\n", "chosen");
	uint64_t all = r->predicted + r->by_source[RUSK_PRED_NONE];
	for (int f = 0; f < N_FAM_F; f++) {
		printf("  %-16s", rusk_feature_name((rusk_feature)f));
		uint64_t ch = 0;
		for (int e = 0; e < RUSK_EST_N; e++) {
			char cell[32];
			snprintf(cell, sizeof cell, "%.3f (%.0f%%)", fam_nmae(r, f, e),
			         share(r->fam_n[f][e], all));
			printf(" %16s", r->fam_n[f][e] ? cell : "-");
			ch += r->chosen[f][e];
		}
		printf(" %7.1f%%\n", share(ch, n));
	}
	printf("\n  estimates: the chosen expert's point estimate; its distribution (<= %d bins) "
	       "is\n"
	       "  what a scheduler would integrate over. X = %u, min evals = %u, EWMA alpha 0.6.\n",
	       RUSK_DIST_MAX_BINS, pp->recent, pp->min_evals);
}

static void write_json(FILE *f, const report *r, const char *path, const char *format,
                       uint64_t seed, const rusk_jobtrace *t, const rusk_predict_stats *st,
                       const rusk_predict_params *pp)
{
	uint64_t n = r->predicted;
	fprintf(f, "{\n  \"trace\": {");
	if (path != NULL) {
		fprintf(f, "\"format\": \"%s\", \"path\": \"", format);
		for (const char *c = path; *c; c++)
			if (*c == '"' || *c == '\\')
				fprintf(f, "\\%c", *c);
			else if ((unsigned char)*c < 0x20)
				fprintf(f, "\\u%04x", *c);
			else
				fputc(*c, f);
		fprintf(f, "\", \"comments\": %" PRIu64, t->comments);
	} else {
		fprintf(f, "\"format\": \"e2e\", \"seed\": %" PRIu64, seed);
	}
	int high, classes;
	class_cov(t, &high, &classes);
	fprintf(f,
	        ", \"jobs\": %" PRIu64 ", \"skipped\": %" PRIu64 ", \"classes\": %d, "
	        "\"classes_cov_above_1\": %d},\n",
	        r->jobs, r->skipped, classes, high);
	fprintf(f,
	        "  \"params\": {\"bins\": %d, \"recent\": %u, \"median_window\": %d, "
	        "\"min_evals\": %u, \"ewma_alpha\": 0.6},\n",
	        RUSK_DIST_MAX_BINS, pp->recent, RUSK_PREDICT_RECENT, pp->min_evals);
	fprintf(f,
	        "  \"estimates\": {\"total\": %" PRIu64 ", \"expert\": %" PRIu64
	        ", \"global\": %" PRIu64 ", \"none\": %" PRIu64 "},\n",
	        n, r->by_source[0], r->by_source[1], r->by_source[2]);
	fprintf(f,
	        "  \"accuracy\": {\"within_5pct\": %.6f, \"within_25pct\": %.6f, "
	        "\"over_2x\": %.6f, \"under_2x\": %.6f, \"nmae\": %.6f},\n",
	        share(r->within5, n) / 100, share(r->within25, n) / 100, share(r->over2, n) / 100,
	        share(r->under2, n) / 100, r->act_sum > 0 ? r->err_sum / r->act_sum : 0);
	fprintf(f, "  \"fig2d\": {\"buckets\": [");
	for (int b = 0; b < N_BUCKET - 1; b++)
		fprintf(f, "%d, ", -100 + 10 * b);
	fprintf(f, "\"tail\"], \"share\": [");
	for (int b = 0; b < N_BUCKET; b++)
		fprintf(f, "%s%.6f", b ? ", " : "", share(r->bucket[b], n) / 100);
	fprintf(f, "]},\n  \"families\": [\n");
	for (int fe = 0; fe < N_FAM_F; fe++)
		for (int e = 0; e < RUSK_EST_N; e++) {
			double v = fam_nmae(r, fe, e);
			fprintf(f,
			        "    {\"feature\": \"%s\", \"estimator\": \"%s\", \"estimates\": "
			        "%" PRIu64 ", \"nmae\": ",
			        rusk_feature_name((rusk_feature)fe),
			        rusk_estimator_name((rusk_estimator)e), r->fam_n[fe][e]);
			if (isfinite(v))
				fprintf(f, "%.6f", v);
			else
				fprintf(f, "null");
			fprintf(f, ", \"chosen\": %" PRIu64 "}%s\n", r->chosen[fe][e],
			        fe == N_FAM_F - 1 && e == RUSK_EST_N - 1 ? "" : ",");
		}
	fprintf(f,
	        "  ],\n  \"predictor\": {\"values\": %" PRIu64 ", \"bytes_per_value\": %zu, "
	        "\"max_values\": %" PRIu64 ", \"untracked\": %" PRIu64 ", \"updates\": %" PRIu64
	        "}\n}\n",
	        st->values, st->bytes_per_value, pp->max_values, st->untracked, st->updates);
}

/*
 * The openb pod list as jobs for the predictor (its only public trace here): submission at
 * creation_time, run time from scheduled_time to deletion_time (pods never scheduled are
 * left out, counted as skipped), the resource shape (milli-cores, MiB, GPUs, milli-GPU) as
 * the resources feature, the GPU models a pod accepts as its "name", its QoS class (LS or
 * Guaranteed vs the others) as its queue. No user: the list has none.
 */
static int openb_jobs(const char *path, rusk_jobtrace *t, char *err, size_t errlen)
{
	rusk_arrival *a = NULL;
	size_t n = 0;
	rusk_trace_models *tm = calloc(1, sizeof *tm);
	if (tm == NULL)
		return RUSK_ENOMEM;
	int rc = rusk_trace_load(path, RUSK_TRACE_OPENB, &a, &n, tm, NULL, err, errlen);
	free(tm);
	if (rc != RUSK_OK)
		return rc;
	memset(t, 0, sizeof *t);
	t->jobs = calloc(n ? n : 1, sizeof *t->jobs);
	if (t->jobs == NULL) {
		free(a);
		return RUSK_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const rusk_arrival *x = &a[i];
		rusk_tjob *j = &t->jobs[t->n++];
		char shape[64]; /* its id: the predictor's own id of a string */
		snprintf(shape, sizeof shape, "%u/%u/%u/%u", x->cpu_milli, x->mem_mib,
		         (unsigned)x->gpus, (unsigned)x->gpu_milli);
		uint64_t h = rusk_predict_id(shape);
		*j = (rusk_tjob){.submit_s = x->t_s,
		                 .wait_s = x->wait_s,
		                 .run_s = x->never_ran ? 0 : x->duration_s - x->wait_s,
		                 .req_time_s = -1,
		                 .id = (int64_t)i + 1,
		                 .procs = x->rus,
		                 .req_procs = (int64_t)(h >> 1), /* the shape's id */
		                 .user = -1,
		                 .group = -1,
		                 .exe = x->gpu_models ? (int64_t)x->gpu_models : -1,
		                 .queue = x->priority,
		                 .partition = -1,
		                 .status = -1,
		                 .cls = -1,
		                 .line = x->line};
	}
	free(a);
	return RUSK_OK;
}

int rusk_cmd_predict(int argc, char **argv)
{
	const char *trace = NULL, *json = NULL;
	uint64_t generate = 0, seed = 1, recent = 5, min_evals = 2, max_values = 1u << 20;
	bool quiet = false;
	int format = 0; /* 0 swf, 1 openb */
	static const cli_choice formats[] = {{"swf", 0}, {"openb", 1}, {NULL, 0}};
	const cli_opt opts[] = {
	        {CLI_FILE_OPT("TRACE", &trace), .optional = true},
	        {CLI_CHOICE_OPT("--format", formats, &format)},
	        {CLI_U64_OPT("--generate", 1, 100000000, &generate)},
	        {CLI_U64_OPT("--seed", 0, 9007199254740992.0, &seed)}, /* 2^53: exact as a double */
	        {CLI_U64_OPT("--recent", 1, RUSK_PREDICT_RECENT, &recent)},
	        {CLI_U64_OPT("--min-evals", 1, 1000000, &min_evals)},
	        {CLI_U64_OPT("--max-values", 1, 1u << 30, &max_values)},
	        {CLI_FILE_OPT("--json", &json)},
	        {CLI_FLAG_OPT("--quiet", &quiet)},
	};
	int pr = cli_parse("predict", argc, argv, NULL, opts, sizeof opts / sizeof *opts,
	                   predict_usage);
	if (pr != 0)
		return pr > 0 ? 0 : RUSK_EXIT_USAGE;
	if ((trace == NULL) == (generate == 0)) {
		fprintf(stderr,
		        "rusk predict: give a TRACE or --generate N, not %s (try: rusk "
		        "predict --help)\n",
		        trace == NULL ? "neither" : "both");
		return RUSK_EXIT_USAGE;
	}
	char openb_path[4096];
	if (trace != NULL && strcmp(trace, "openb") == 0) { /* the public pod list */
		if (cli_openb_path("TRACE", "openb_pod_list_default.csv", openb_path,
		                   sizeof openb_path) != 0)
			return RUSK_EXIT_USAGE;
		trace = openb_path;
		format = 1;
	}
	const cli_in in = {"predict TRACE", trace};
	cli_out jo = {.flag = "--json", .path = json};
	int orc = cli_files_open(&in, 1, &jo, 1);
	if (orc != 0)
		return orc;
	FILE *jf = jo.f;
	rusk_jobtrace t;
	char err[1024];
	int rc = trace == NULL ? rusk_e2e_generate(generate, seed, &t, err, sizeof err)
	         : format == 1 ? openb_jobs(trace, &t, err, sizeof err)
	                       : rusk_swf_read(trace, &t, err, sizeof err);
	if (rc != RUSK_OK) {
		fprintf(stderr, "rusk predict: %s\n", err);
		cli_out_discard(&jo); /* a previous --json stays as it was */
		return rc == RUSK_ENOMEM ? RUSK_EXIT_FAIL : RUSK_EXIT_USAGE;
	}
	if (t.n == 0) { /* as rusk sim refuses an empty trace: nothing to predict */
		fprintf(stderr, "rusk predict: %s: no jobs (an empty file, or comments only)\n",
		        trace);
		rusk_jobtrace_free(&t);
		cli_out_discard(&jo);
		return RUSK_EXIT_USAGE;
	}
	rusk_predict_params pp;
	rusk_predict_params_init(&pp);
	pp.recent = (uint32_t)recent;
	pp.min_evals = (uint32_t)min_evals;
	pp.max_values = max_values;
	pp.init_values = 4096;
	rusk_predictor *p = NULL;
	report *r = calloc(1, sizeof *r);
	int status = 0;
	if (r == NULL || rusk_predict_create(&pp, &p, err, sizeof err) != RUSK_OK ||
	    replay(p, &t, r) != RUSK_OK) {
		fprintf(stderr, "rusk predict: out of memory\n");
		status = RUSK_EXIT_FAIL;
	} else {
		rusk_predict_stats st;
		rusk_predict_stats_get(p, &st);
		char what[600];
		if (trace != NULL)
			snprintf(what, sizeof what, "%s (%s)", trace,
			         format == 1 ? "openb pod list" : "SWF");
		else
			snprintf(what, sizeof what, "E2E-like generator, seed %" PRIu64, seed);
		if (!quiet)
			print_report(r, what, &t, &st, &pp);
		if (jf != NULL)
			write_json(jf, r, trace, format == 1 ? "openb" : "swf", seed, &t, &st, &pp);
	}
	if (status != 0)
		cli_out_discard(&jo);
	else if (cli_out_close(&jo) != 0)
		status = RUSK_EXIT_FAIL;
	rusk_predict_destroy(p);
	rusk_jobtrace_free(&t);
	free(r);
	return status;
}
