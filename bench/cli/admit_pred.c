/* SPDX-License-Identifier: MIT */
/*
 * The runtime predictor beside Tarcil's admission control: `rusk run/sim --admission on
 * --admit-predict on` (3Sigma §4.1's distributions serving Tarcil §4's wait estimate).
 *
 * When admission control first holds a task back (the dispatcher's WAITING event), the
 * kernel has estimated when the `missing` RUs it still needs will have been freed in its
 * matching buckets, from the history of intervals between frees (mu per free, Tarcil §4).
 * This module makes a second estimate of the same instant from the tasks that hold RUs:
 * each running task's remaining runtime is its predicted runtime distribution (rusk/
 * predict.h, learned online from the run's own completions) conditioned on how long it has
 * run, and the estimate is the first time t at which the expected RUs freed,
 * sum_i rus_i x P(R_i <= e_i + t | R_i > e_i), reach `missing`. A task that has outlived
 * its whole distribution is taken to end within as long again as it has run (uniformly),
 * the spirit of 3Sigma's under-estimate handling (§4.2.1). Up to 256 running tasks, drawn
 * with a seeded generator, stand for all of them (their sum scaled up).
 *
 * What actually happened: every completion adds its RUs to a running count of frees; a
 * wait is resolved when `missing` more RUs have been freed after it began, and that delay
 * is the observed time-until-free that both estimates are scored against (waits still
 * open at the end are censored and counted). Both estimates predict frees, not whether
 * other tasks take the freed RUs first, so frees are the fair yardstick.
 *
 * Scope. Frees are counted over the whole cluster, which is the matching set only when
 * every bucket matches: the slot-score quality model (with --quality interference the
 * matching buckets are a subset; the flag refuses it). The predictor's features here are
 * the task's RUs requested (the dispatcher's tasks carry no user or job name without
 * --sched); one distribution per RU count is cached and refreshed every 32 completions of
 * that count. Threads: events come from agents (PLACED, WAITING) and the completer
 * (DONE); one mutex serialises them (the flag is off by default: none of this runs).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/predict.h>

#include "base/heap.h"
#include "base/rng.h"
#include "runstate.h"

#define AP_SAMPLE  256 /* running tasks an estimate reads at most */
#define AP_KEYS    64  /* distinct RU counts with their own cached distribution */
#define AP_REFRESH 32  /* completions of a count between refreshes of its distribution */
#define AP_ITERS   40  /* bisection steps of the estimate */

typedef struct ap_run {
	uint64_t placed_ns;
	uint32_t rus, key;
} ap_run;

typedef struct ap_key {
	uint32_t rus; /* 0: every other count (the global history) */
	uint32_t since;
	bool have;
	rusk_dist d;
} ap_key;

typedef struct ap_wait {
	uint64_t target; /* the count of frees at which it is resolved */
	uint64_t t1;
	double est_k, est_p; /* seconds: the kernel's, the predictor's (NaN: none) */
} ap_wait;

static inline bool wait_before(const ap_wait *x, const ap_wait *y)
{
	return x->target < y->target || (x->target == y->target && x->t1 < y->t1);
}
HEAP_DEFINE(ap_heap, ap_wait, wait_before)

typedef struct ap_res {
	double obs, est_k, est_p;
} ap_res;

struct drv_apred {
	pthread_mutex_t mu;
	rusk_predictor *pred;
	ap_run *run;        /* dense: the running tasks */
	uint32_t *pos;      /* by dispatcher slot: position in run + 1 (0: not running) */
	uint32_t *run_slot; /* by position in run: its dispatcher slot */
	size_t n_run, n_slots;
	ap_key keys[AP_KEYS];
	uint32_t n_keys;
	uint64_t freed; /* RUs freed by completions so far */
	ap_heap open;
	ap_res *res;
	size_t n_res, cap_res;
	uint64_t waits, no_pred, capped;
	rusk_rng rng;
	bool failed;
	bool closed; /* drv_apred_close: the stop's forced ends teach and resolve nothing */
};

static int apred_setup(run *R, const drv_setup_in *in)
{
	(void)in;
	if (!R->cfg.admit_predict)
		return 0;
	drv_apred *p = R->apred = calloc(1, sizeof *p);
	if (p == NULL)
		goto nomem;
	pthread_mutex_init(&p->mu, NULL);
	p->n_slots = R->n_tasks_cap;
	p->run = malloc(p->n_slots * sizeof *p->run);
	p->pos = calloc(p->n_slots, sizeof *p->pos);
	p->run_slot = malloc(p->n_slots * sizeof *p->run_slot);
	rusk_rng_seed(&p->rng, R->seed, 0x61707264); /* "aprd" */
	rusk_predict_params qp;
	rusk_predict_params_init(&qp);
	char err[128];
	if (p->run == NULL || p->pos == NULL || p->run_slot == NULL ||
	    rusk_predict_create(&qp, &p->pred, err, sizeof err) != RUSK_OK)
		goto nomem;
	return 0;
nomem:
	fprintf(stderr, "rusk: --admit-predict: out of memory\n");
	return RUSK_EXIT_NOMEM;
}

/* The cached distribution for tasks of `rus` RUs (a slot of its own for the first
 * AP_KEYS - 1 counts, then a shared one that predicts from the global history). */
static uint32_t key_of(drv_apred *p, uint32_t rus)
{
	for (uint32_t k = 0; k < p->n_keys; k++)
		if (p->keys[k].rus == rus)
			return k;
	if (p->n_keys < AP_KEYS - 1) {
		p->keys[p->n_keys].rus = rus;
		return p->n_keys++;
	}
	for (uint32_t k = 0; k < p->n_keys; k++)
		if (p->keys[k].rus == 0)
			return k;
	p->keys[p->n_keys].rus = 0;
	return p->n_keys++;
}

static const rusk_dist *dist_of(drv_apred *p, uint32_t key)
{
	ap_key *k = &p->keys[key];
	if (!k->have || k->since >= AP_REFRESH) {
		rusk_job j;
		rusk_job_init(&j);
		if (k->rus != 0)
			j.resources = k->rus;
		rusk_prediction pr;
		rusk_predict(p->pred, &j, &pr, &k->d);
		k->have = true;
		k->since = 0;
	}
	return &k->d;
}

/* P(a task that has run e seconds ends within t more), from its distribution d. */
static double ends_within(const rusk_dist *d, double e, double t)
{
	if (d->count == 0)
		return 0;
	double f0 = rusk_dist_cdf(d, e);
	if (f0 >= 0.999) /* outlived its distribution: uniform over as long again */
		return e > 0 ? fmin(1.0, t / e) : 1.0;
	return (rusk_dist_cdf(d, e + t) - f0) / (1.0 - f0);
}

/* The predictor's estimate (seconds) of when `missing` RUs will have been freed, from the
 * running tasks at `now`; NaN when nothing runs or nothing is learned yet. */
static double estimate(drv_apred *p, uint64_t now, uint64_t missing, bool *capped)
{
	size_t m = p->n_run < AP_SAMPLE ? p->n_run : AP_SAMPLE;
	if (m == 0)
		return NAN;
	ap_run pick[AP_SAMPLE];
	const rusk_dist *dist[AP_SAMPLE];
	double e[AP_SAMPLE], hi = 0;
	for (size_t i = 0; i < m; i++) {
		size_t k = m == p->n_run ? i : (size_t)rusk_rng_below(&p->rng, p->n_run);
		pick[i] = p->run[k];
		dist[i] = dist_of(p, pick[i].key);
		if (dist[i]->count == 0)
			return NAN;
		e[i] = now > pick[i].placed_ns ? (double)(now - pick[i].placed_ns) / 1e9 : 0;
		double left = fmax(rusk_dist_quantile(dist[i], 1.0) - e[i], e[i]);
		hi = fmax(hi, left);
	}
	double scale = (double)p->n_run / (double)m, lo = 0, top = hi;
	for (int it = 0; it < AP_ITERS; it++) {
		double t = 0.5 * (lo + top), freed = 0;
		for (size_t i = 0; i < m; i++)
			freed += pick[i].rus * ends_within(dist[i], e[i], t);
		if (freed * scale >= (double)missing)
			top = t;
		else
			lo = t;
	}
	*capped = !(top < hi);
	return top;
}

static void add_result(drv_apred *p, double obs, const ap_wait *w)
{
	if (p->n_res == p->cap_res) {
		size_t cap = p->cap_res ? 2 * p->cap_res : 1024;
		ap_res *r = realloc(p->res, cap * sizeof *r);
		if (r == NULL) {
			p->failed = true;
			return;
		}
		p->res = r;
		p->cap_res = cap;
	}
	p->res[p->n_res++] = (ap_res){obs, w->est_k, w->est_p};
}

static void on_placed(drv_apred *p, const rusk_dispatch_event *ev, const rusk_dtask_info *j)
{
	if (j == NULL || j->slot >= p->n_slots || p->pos[j->slot] != 0)
		return;
	p->run[p->n_run] = (ap_run){ev->time_ns, j->rus, key_of(p, j->rus)};
	p->run_slot[p->n_run] = j->slot;
	p->pos[j->slot] = (uint32_t)++p->n_run;
}

/* j's tenure ended at `now`. A completion frees its RUs, resolving the waits that many frees
 * complete, and teaches the predictor its runtime. A preemption or revocation only takes
 * it off the running set: the preemptor takes its RUs at once, a failed machine's are
 * gone, and neither ran its course. After drv_apred_close (the run's stop ends what still
 * runs) nothing is learned or resolved. */
static void on_end(drv_apred *p, const rusk_dispatch_event *ev, const rusk_dtask_info *j, bool done)
{
	if (j == NULL || j->slot >= p->n_slots || p->pos[j->slot] == 0)
		return;
	size_t i = p->pos[j->slot] - 1;
	ap_run r = p->run[i];
	p->pos[j->slot] = 0;
	p->run[i] = p->run[--p->n_run]; /* swap-remove, the moved entry re-indexed */
	p->run_slot[i] = p->run_slot[p->n_run];
	if (i < p->n_run)
		p->pos[p->run_slot[i]] = (uint32_t)i + 1;
	if (!done || p->closed)
		return;
	double ran = ev->time_ns > r.placed_ns ? (double)(ev->time_ns - r.placed_ns) / 1e9 : 0;
	rusk_job f;
	rusk_job_init(&f);
	f.resources = r.rus;
	if (rusk_predict_update(p->pred, &f, ran) == RUSK_ENOMEM)
		p->failed = true;
	p->keys[r.key].since++;
	for (uint32_t k = 0; k < p->n_keys; k++) /* the global history moved too */
		p->keys[k].since += p->keys[k].rus == 0 && k != r.key;
	p->freed += r.rus;
	while (p->open.n > 0 && p->open.a[0].target <= p->freed) {
		ap_wait w = ap_heap_pop(&p->open);
		add_result(p, (double)(ev->time_ns - w.t1) / 1e9, &w);
	}
}

static void on_waiting(drv_apred *p, const rusk_dispatch_event *ev)
{
	const rusk_admit_decision *d = ev->admit;
	if (d == NULL || d->missing == 0 || p->closed)
		return;
	p->waits++;
	bool capped = false;
	ap_wait w = {.target = p->freed + d->missing,
	             .t1 = ev->time_ns,
	             .est_k = (double)d->estimate_ns / 1e9,
	             .est_p = estimate(p, ev->time_ns, d->missing, &capped)};
	p->no_pred += isnan(w.est_p);
	p->capped += capped;
	if (!ap_heap_push(&p->open, w))
		p->failed = true;
}

void drv_apred_close(run *R)
{
	drv_apred *p = R->apred;
	pthread_mutex_lock(&p->mu);
	p->closed = true;
	pthread_mutex_unlock(&p->mu);
}

void drv_apred_event(run *R, const rusk_dispatch_event *ev)
{
	drv_apred *p = R->apred;
	rusk_dtask_info jb;
	pthread_mutex_lock(&p->mu);
	switch (ev->kind) {
	case RUSK_EV_PLACED: on_placed(p, ev, drv_task(R->d, ev, &jb)); break;
	case RUSK_EV_DONE: on_end(p, ev, drv_task(R->d, ev, &jb), true); break; /* and: */
	case RUSK_EV_PREEMPTED:
	case RUSK_EV_REVOKED: on_end(p, ev, drv_task(R->d, ev, &jb), false); break;
	case RUSK_EV_WAITING: on_waiting(p, ev); break;
	default: break;
	}
	pthread_mutex_unlock(&p->mu);
}

/* ---- report ------------------------------------------------------------------------- */

typedef struct ap_score {
	size_t n;
	double med_abs_ms, bias_ms, within50, med_obs_ms;
} ap_score;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The estimator `pred` (else the kernel's) against the observed waits: median absolute
 * error, mean signed error (bias), share within half the observed time either way. Both
 * are scored on the same waits: those the predictor had an estimate for (the kernel
 * always has one). */
static ap_score score(const drv_apred *p, bool pred)
{
	ap_score s = {0};
	double *abs_err = malloc((p->n_res + 1) * sizeof *abs_err);
	double *obs = malloc((p->n_res + 1) * sizeof *obs);
	if (abs_err == NULL || obs == NULL) {
		free(abs_err);
		free(obs);
		s.med_abs_ms = s.bias_ms = s.within50 = s.med_obs_ms = NAN;
		return s;
	}
	double bias = 0, within = 0;
	for (size_t i = 0; i < p->n_res; i++) {
		const ap_res *r = &p->res[i];
		double est = pred ? r->est_p : r->est_k;
		if (isnan(r->est_p))
			continue;
		double err = est - r->obs;
		abs_err[s.n] = fabs(err);
		obs[s.n] = r->obs;
		bias += err;
		within += fabs(err) <= 0.5 * r->obs;
		s.n++;
	}
	s.med_abs_ms = 1e3 * median(abs_err, s.n);
	s.med_obs_ms = 1e3 * median(obs, s.n);
	s.bias_ms = s.n ? 1e3 * bias / (double)s.n : NAN;
	s.within50 = s.n ? within / (double)s.n : NAN;
	free(abs_err);
	free(obs);
	return s;
}

void drv_apred_print(run *R)
{
	drv_apred *p = R->apred;
	pthread_mutex_lock(&p->mu);
	ap_score k = score(p, false), q = score(p, true);
	fprintf(R->out,
	        "  %-28s %" PRIu64 " first waits: %zu resolved (the missing RUs freed), %zu still "
	        "open at the end; median observed %.3g ms\n",
	        "admission wait estimates", p->waits, p->n_res, p->open.n, k.med_obs_ms);
	fprintf(R->out,
	        "  %-28s median |error| %.3g ms, bias %+.3g ms, %.1f%% within +-50%% (n %zu)\n",
	        "  interval history (kernel)", k.med_abs_ms, k.bias_ms, 100 * k.within50, k.n);
	fprintf(R->out,
	        "  %-28s median |error| %.3g ms, bias %+.3g ms, %.1f%% within +-50%% (n %zu; "
	        "%" PRIu64 " without one, %" PRIu64 " at the horizon)\n",
	        "  runtime distributions", q.med_abs_ms, q.bias_ms, 100 * q.within50, q.n,
	        p->no_pred, p->capped);
	pthread_mutex_unlock(&p->mu);
}

/* A figure, or null when there is none (no wait was scored). */
static void json_num(FILE *f, const char *name, double v, const char *tail)
{
	if (isnan(v))
		fprintf(f, "\"%s\": null%s", name, tail);
	else
		fprintf(f, "\"%s\": %.6g%s", name, v, tail);
}

static void json_score(FILE *f, const char *name, const ap_score *s, const char *tail)
{
	fprintf(f, "\"%s\": {\"n\": %zu, ", name, s->n);
	json_num(f, "median_abs_error_ms", s->med_abs_ms, ", ");
	json_num(f, "bias_ms", s->bias_ms, ", ");
	json_num(f, "within_50pct", s->within50, "}");
	fputs(tail, f);
}

void drv_apred_json(FILE *f, run *R)
{
	drv_apred *p = R->apred;
	pthread_mutex_lock(&p->mu);
	ap_score k = score(p, false), q = score(p, true);
	fprintf(f,
	        "  \"admission_estimates\": {\"waits\": %" PRIu64 ", \"resolved\": %zu, "
	        "\"open_at_end\": %zu, \"no_prediction\": %" PRIu64 ", \"at_horizon\": %" PRIu64
	        ", ",
	        p->waits, p->n_res, p->open.n, p->no_pred, p->capped);
	json_num(f, "median_observed_ms", k.med_obs_ms, ",\n    ");
	json_score(f, "interval_history", &k, ", ");
	json_score(f, "runtime_distributions", &q, "},\n");
	pthread_mutex_unlock(&p->mu);
}

bool drv_apred_ok(const run *R)
{
	return R->apred == NULL || !R->apred->failed;
}

void drv_apred_free(run *R)
{
	drv_apred *p = R->apred;
	if (p == NULL)
		return;
	rusk_predict_destroy(p->pred);
	pthread_mutex_destroy(&p->mu);
	free(p->run);
	free(p->pos);
	free(p->run_slot);
	free(p->open.a);
	free(p->res);
	free(p);
	R->apred = NULL;
}

/* ---- the feature (runstate.h) ------------------------------------------------------------ */

static bool apred_on(const run *R)
{
	return R->apred != NULL;
}

static void apred_event(run *R, rusk_dispatch_event *ev)
{
	drv_apred_event(R, ev);
}

const drv_feature drv_feature_apred = {
        .name = "admission prediction",
        .on = apred_on,
        .setup = apred_setup,
        .event = apred_event,
        .json = drv_apred_json,
        .print = drv_apred_print,
        .free = drv_apred_free,
};
