/* SPDX-License-Identifier: MIT */
/*
 * Admission control: LSH buckets of contention vectors with free counts, time-until-free
 * history, and the wait decision (Tarcil §4; priorities §5.3). Public contract in
 * rusk/admit.h.
 *
 * Hash. A machine's per-RU contention vector C (eq. 3: its interference sums over its
 * other RUs) goes to bucket 0 when zero, else to 1 + (s mod (B - 1)) where s is the k-bit
 * sign pattern of C against k seeded Gaussian normals, k = ceil(log2(B - 1)) (random-
 * hyperplane LSH: two vectors at angle theta differ in each bit with probability
 * theta / pi). All free RUs of a machine suffer the same contention, so they share its
 * bucket: the unit of accounting is the machine.
 *
 * Exact counts without locks. Per machine, an accounted word acc = bucket | free << 8
 * says what the bucket counts hold for it. After every change of a machine's free RUs or
 * vector, the changing thread folds: it reads acc (acquire), reads the live state (bitmap
 * popcount, and the vector's hash if it changed the vector), and CASes acc to the live
 * value; the winner moves the difference between the bucket counters. Invariants:
 *   1. Each bucket counter = sum over machines of acc's free for acc's bucket, plus the
 *      moves of folds between their CAS and their counter adds (at most one per fold).
 *   2. At quiescence acc = live for every machine: the last change of a machine is
 *      followed by its own fold, whose CAS either succeeds on a value read after that
 *      change, or fails because another fold won, and then retries on newer values (an
 *      acquire read of acc sees every change that happened before the winner's CAS).
 *   A fold that did not change the vector reuses acc's bucket: whoever changed the vector
 *   folds after, with a fresh hash, and cannot lose to a reused bucket (invariant 2).
 * So the counts equal a full recount whenever commits and releases are quiescent
 * (rusk_admit_recount; stress/soak and tests/test_admit check it), and are off by the
 * folds in flight otherwise.
 *
 * Time until free. A fold that raises a bucket's free count by k records k frees and one
 * interval (now - the bucket's previous free, an atomic exchange); counters are monotonic
 * and wrap, so a window's sums are differences against a mark that rusk_admit_roll moves.
 * Sums of squares are in microseconds squared, intervals capped at 2^24 us (16.8 s).
 *
 * Representatives. A bucket's representative vector is a moving average (weight 1/8) of
 * the vectors folded into it: relaxed, racy-by-design statistics like the machines'
 * interference sums; only the counts are invariants.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/admit.h>

#include "base/atomic.h"
#include "base/rng.h"
#include "kernel/layout.h"
#include "kernel/quality.h"

#define REP_SCALE    64.0 /* representative lanes: per-RU contention x 64 */
#define MAX_PLANES   6
#define INTERVAL_CAP (UINT64_C(1) << 24) /* microseconds */

enum { H_FREES, H_SUM_NS, H_SUMSQ_US, H_N };

typedef struct bucket {
	uint64_t free;         /* live: maintained free RUs (two's complement moves) */
	uint64_t last_free_ns; /* live: time of the latest free (exchange) */
	uint64_t h[H_N];       /* live, monotonic: frees, sum of intervals, sum of squares */
	uint64_t mark[2][H_N]; /* history marks, written by rusk_admit_roll */
	uint32_t rep[RUSK_N_RESOURCES]; /* relaxed statistic, x REP_SCALE */
	uint32_t seen;                  /* a machine was hashed here (relaxed) */
} RUSK_ALIGNED(RUSK_CACHELINE) bucket;

struct rusk_admit {
	rusk_cluster *c;
	rusk_admit_params p;
	uint32_t planes;
	double normal[MAX_PLANES][RUSK_N_RESOURCES];
	uint64_t *acc;     /* [n_machines] bucket | free << 8 */
	bucket *b;         /* [p.buckets] */
	uint32_t old_mark; /* which mark the history starts at; written by roll only */
	rusk_observer obs; /* how the cluster tells this object of machine changes */
};

static inline uint64_t acc_pack(uint32_t b, uint32_t free)
{
	return (uint64_t)b | (uint64_t)free << 8;
}

RUSK_EXPORT void rusk_admit_params_init(rusk_admit_params *p)
{
	if (p == NULL)
		return;
	memset(p, 0, sizeof *p);
	p->buckets = 20;
	p->seed = 1;
	p->match = 0.1;
	p->slack = 2.0;
	p->min_load = 0.8;
	p->min_frees = 16;
	p->eps = 0.05;
	p->r_max = 32;
}

RUSK_EXPORT uint32_t rusk_admit_hash(const rusk_admit *a, const double v[RUSK_N_RESOURCES])
{
	if (a == NULL || v == NULL)
		return UINT32_MAX;
	bool zero = true;
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		zero &= v[i] == 0;
	if (zero)
		return 0;
	uint32_t s = 0;
	for (uint32_t k = 0; k < a->planes; k++) {
		double dot = 0;
		for (int i = 0; i < RUSK_N_RESOURCES; i++)
			dot += a->normal[k][i] * v[i];
		s |= (uint32_t)(dot >= 0) << k;
	}
	return 1 + s % (a->p.buckets - 1);
}

/* The machine's live per-RU contention vector (eq. 3) and its bucket. */
static uint32_t machine_bucket(const rusk_admit *a, const rusk_machine *m, double *v)
{
	uint64_t w[RUSK_LANE_WORDS];
	for (int i = 0; i < RUSK_LANE_WORDS; i++)
		w[i] = rusk_load64((uint64_t *)&m->interf[i], RUSK_RELAXED);
	double others = m->n_rus > 1 ? (double)(m->n_rus - 1) : 1.0;
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		v[i] = rusk_lane(w, i) / others;
	return rusk_admit_hash(a, v);
}

static void rep_update(bucket *bk, const double *v)
{
	bool first = rusk_load32(&bk->seen, RUSK_RELAXED) == 0;
	for (int i = 0; i < RUSK_N_RESOURCES; i++) {
		double old = rusk_load32(&bk->rep[i], RUSK_RELAXED);
		double x = v[i] * REP_SCALE;
		double nv = first ? x : old + (x - old) / 8.0;
		rusk_store32(&bk->rep[i], (uint32_t)lround(nv), RUSK_RELAXED);
	}
	if (first)
		rusk_store32(&bk->seen, 1, RUSK_RELAXED);
}

static void record_frees(rusk_admit *a, bucket *bk, uint64_t k)
{
	uint64_t now = rusk_now_(a->c);
	uint64_t prev = rusk_fas64(&bk->last_free_ns, now, RUSK_RELAXED);
	uint64_t dt = prev != 0 && now > prev ? now - prev : 0;
	uint64_t us = dt / 1000;
	if (us > INTERVAL_CAP)
		us = INTERVAL_CAP;
	rusk_faa64(&bk->h[H_FREES], k, RUSK_RELAXED);
	rusk_faa64(&bk->h[H_SUM_NS], dt, RUSK_RELAXED);
	rusk_faa64(&bk->h[H_SUMSQ_US], us * us, RUSK_RELAXED);
}

/* The observer hook (rusk_observe_): after a change of machine mi's free RUs (and of its
 * contention vector when vec_changed), brings its bucket accounting up to date. */
static void admit_fold(void *ctx, uint32_t mi, bool vec_changed)
{
	rusk_admit *a = ctx;
	rusk_cluster *c = a->c;
	const rusk_machine *m = &c->machines[mi];
	uint64_t *acc = &a->acc[mi];
	/* Acquire: pairs with the acq_rel CAS of the previous winner, so the live reads below
	 * see at least what it saw (invariant 2 above). */
	uint64_t old = rusk_load64(acc, RUSK_ACQUIRE);
	double v[RUSK_N_RESOURCES];
	for (;;) {
		uint32_t fr = rusk_machine_free_(c, m);
		uint32_t nb = vec_changed ? machine_bucket(a, m, v) : (uint32_t)(old & 0xff);
		uint64_t nw = acc_pack(nb, fr);
		if (nw == old)
			return;
		if (!rusk_cas64(acc, &old, nw, RUSK_ACQ_REL)) {
			rusk_fence_atomic_load(); /* the failed CAS's value is our new base */
			continue;
		}
		uint32_t ob = (uint32_t)(old & 0xff), of = (uint32_t)(old >> 8);
		if (ob == nb) {
			rusk_faa64(&a->b[nb].free, (uint64_t)fr - of, RUSK_RELAXED);
			if (fr > of)
				record_frees(a, &a->b[nb], fr - of);
		} else {
			rusk_faa64(&a->b[ob].free, (uint64_t)0 - of, RUSK_RELAXED);
			rusk_faa64(&a->b[nb].free, fr, RUSK_RELAXED);
			if (fr > 0)
				record_frees(a, &a->b[nb], fr);
		}
		if (vec_changed)
			rep_update(&a->b[nb], v);
		return;
	}
}

static int recount(const rusk_admit *a, uint64_t *out, uint64_t *acc_init)
{
	const rusk_cluster *c = a->c;
	memset(out, 0, sizeof *out * a->p.buckets);
	for (uint32_t mi = 0; mi < c->n_machines; mi++) {
		double v[RUSK_N_RESOURCES];
		uint32_t b = machine_bucket(a, &c->machines[mi], v);
		uint32_t fr = rusk_machine_free_(c, &c->machines[mi]);
		out[b] += fr;
		if (acc_init != NULL) {
			acc_init[mi] = acc_pack(b, fr);
			rep_update(&a->b[b], v);
		}
	}
	return RUSK_OK;
}

/* The observer's destroy hook: an attached admission object goes with its cluster. */
static void admit_destroy(void *ctx)
{
	rusk_admit_detach(ctx);
}

RUSK_EXPORT int rusk_admit_attach(rusk_cluster *c, const rusk_admit_params *p, rusk_admit **out,
                                  char *err, size_t errlen)
{
	if (c == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "cluster and out must not be NULL");
	rusk_admit_params d;
	if (p == NULL) {
		rusk_admit_params_init(&d);
		p = &d;
	}
	if (p->buckets < 2 || p->buckets > RUSK_ADMIT_MAX_BUCKETS)
		return rusk_errf(err, errlen, RUSK_EINVAL, "buckets %u not in 2..%d", p->buckets,
		                 RUSK_ADMIT_MAX_BUCKETS);
	if (!(p->match >= 0 && p->match <= 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "match %g not in [0, 1]", p->match);
	if (!(p->slack >= 1 && p->slack <= 1000))
		return rusk_errf(err, errlen, RUSK_EINVAL, "slack %g not in [1, 1000]", p->slack);
	if (!(p->eps > 0 && p->eps < 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "eps %g not in (0, 1)", p->eps);
	if (p->r_max == 0 || p->r_max > 4096)
		return rusk_errf(err, errlen, RUSK_EINVAL, "r_max %u not in 1..4096", p->r_max);
	if (!(p->min_load >= 0 && p->min_load <= 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "min_load %g not in [0, 1]",
		                 p->min_load);
	if (c->obs != NULL)
		return rusk_errf(err, errlen, RUSK_EBUSY, "admission control already attached");
	rusk_admit *a = calloc(1, sizeof *a);
	if (a == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	a->c = c;
	a->p = *p;
	a->acc = calloc(c->n_machines, sizeof *a->acc);
	a->b = aligned_alloc(RUSK_CACHELINE, sizeof *a->b * p->buckets);
	if (a->acc == NULL || a->b == NULL) {
		free(a->acc);
		free(a->b);
		free(a);
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	}
	memset(a->b, 0, sizeof *a->b * p->buckets);
	while (a->planes < MAX_PLANES && (1u << a->planes) < p->buckets - 1)
		a->planes++;
	rusk_rng r;
	rusk_rng_seed(&r, p->seed, 0x6c7368); /* "lsh" */
	for (uint32_t k = 0; k < a->planes; k++)
		for (int i = 0; i < RUSK_N_RESOURCES; i++) {
			/* Box-Muller: Gaussian normals make the hyperplanes uniformly oriented. */
			double u1 = rusk_rng_unit(&r), u2 = rusk_rng_unit(&r);
			a->normal[k][i] = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
		}
	uint64_t counts[RUSK_ADMIT_MAX_BUCKETS];
	recount(a, counts, a->acc);
	for (uint32_t b = 0; b < p->buckets; b++)
		a->b[b].free = counts[b];
	a->obs = (rusk_observer){admit_fold, admit_destroy, a};
	/* Release: agents created after this (pthread_create) see a complete object. */
	rusk_store64((uint64_t *)&c->obs, (uint64_t)(uintptr_t)&a->obs, RUSK_RELEASE);
	*out = a;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_admit_detach(rusk_admit *a)
{
	if (a == NULL)
		return;
	rusk_store64((uint64_t *)&a->c->obs, 0, RUSK_RELEASE);
	free(a->acc);
	free(a->b);
	free(a);
}

RUSK_EXPORT rusk_admit *rusk_cluster_admit(const rusk_cluster *c)
{
	/* The cluster's observer is this admission object when its hook is ours. */
	if (c == NULL || c->obs == NULL || c->obs->machine_changed != admit_fold)
		return NULL;
	return c->obs->ctx;
}

RUSK_EXPORT uint32_t rusk_admit_buckets(const rusk_admit *a)
{
	return a != NULL ? a->p.buckets : 0;
}

RUSK_EXPORT int rusk_admit_counts(const rusk_admit *a, uint64_t *out, uint32_t n)
{
	if (a == NULL || out == NULL || n < a->p.buckets)
		return RUSK_EINVAL;
	for (uint32_t b = 0; b < a->p.buckets; b++)
		out[b] = rusk_load64(&a->b[b].free, RUSK_RELAXED);
	return RUSK_OK;
}

RUSK_EXPORT int rusk_admit_recount(const rusk_admit *a, uint64_t *out, uint32_t n)
{
	if (a == NULL || out == NULL || n < a->p.buckets)
		return RUSK_EINVAL;
	return recount(a, out, NULL);
}

/* History of bucket b since the older mark: frees, mean and sd of the interval (ns). */
static uint64_t history(const rusk_admit *a, uint32_t b, double *mean_ns, double *sd_ns)
{
	const bucket *bk = &a->b[b];
	uint32_t om = rusk_load32((uint32_t *)&a->old_mark, RUSK_RELAXED) & 1;
	uint64_t x[H_N];
	for (int i = 0; i < H_N; i++)
		x[i] = rusk_load64((uint64_t *)&bk->h[i], RUSK_RELAXED) -
		       rusk_load64((uint64_t *)&bk->mark[om][i], RUSK_RELAXED);
	*mean_ns = *sd_ns = 0;
	if (x[H_FREES] == 0)
		return 0;
	double n = (double)x[H_FREES];
	double mean_us = (double)x[H_SUM_NS] / 1e3 / n;
	double var = (double)x[H_SUMSQ_US] / n - mean_us * mean_us;
	*mean_ns = mean_us * 1e3;
	*sd_ns = var > 0 ? sqrt(var) * 1e3 : 0;
	return x[H_FREES];
}

RUSK_EXPORT int rusk_admit_bucket(const rusk_admit *a, uint32_t b, rusk_admit_bucket_info *out)
{
	if (a == NULL || out == NULL)
		return RUSK_EINVAL;
	if (b >= a->p.buckets)
		return RUSK_ERANGE;
	memset(out, 0, sizeof *out);
	out->free_rus = rusk_load64((uint64_t *)&a->b[b].free, RUSK_RELAXED);
	out->frees = history(a, b, &out->mean_ns, &out->sd_ns);
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		out->contention[i] =
		        rusk_load32((uint32_t *)&a->b[b].rep[i], RUSK_RELAXED) / REP_SCALE;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_admit_roll(rusk_admit *a)
{
	if (a == NULL)
		return;
	/* The older mark becomes the newest: history = previous window + current one. */
	uint32_t om = a->old_mark & 1;
	for (uint32_t b = 0; b < a->p.buckets; b++)
		for (int i = 0; i < H_N; i++)
			rusk_store64(&a->b[b].mark[om][i], rusk_load64(&a->b[b].h[i], RUSK_RELAXED),
			             RUSK_RELAXED);
	rusk_store32(&a->old_mark, om ^ 1, RUSK_RELAXED);
}

static const char *const reason_names[] = {"low-load",   "matched", "priority", "bound",
                                           "no-history", "scarce",  "too-long"};

RUSK_EXPORT const char *rusk_admit_reason_name(rusk_admit_reason r)
{
	/* Every rusk_admit_reason has a name (RUSK_ADMIT_TOO_LONG once read past the table). */
	_Static_assert(sizeof reason_names / sizeof reason_names[0] == RUSK_ADMIT_TOO_LONG + 1,
	               "a name per rusk_admit_reason");
	return (unsigned)r <= RUSK_ADMIT_TOO_LONG ? reason_names[r] : "unknown";
}

RUSK_EXPORT int rusk_admit_check(const rusk_admit *a, const rusk_task *t, rusk_quality_model qm,
                                 uint64_t waited_ns, rusk_admit_decision *d)
{
	if (a == NULL || t == NULL || d == NULL || t->rus == 0)
		return RUSK_EINVAL;
	memset(d, 0, sizeof *d);
	d->verdict = RUSK_ADMIT_NOW;
	if (t->priority > 0) {
		d->reason = RUSK_ADMIT_PRIORITY;
		return RUSK_OK;
	}
	uint32_t nb = a->p.buckets;
	int64_t fr[RUSK_ADMIT_MAX_BUCKETS];
	int64_t total = 0;
	for (uint32_t b = 0; b < nb; b++) {
		fr[b] = (int64_t)rusk_load64((uint64_t *)&a->b[b].free, RUSK_RELAXED);
		if (fr[b] < 0)
			fr[b] = 0; /* a move in flight */
		total += fr[b];
	}
	double load = 1.0 - (double)total / a->c->n_rus;
	if (load < a->p.min_load) {
		d->reason = RUSK_ADMIT_LOW_LOAD;
		d->matched_free = (uint64_t)total;
		return RUSK_OK;
	}
	/* Quality of each bucket for the task; the best among those that exist. */
	double q[RUSK_ADMIT_MAX_BUCKETS];
	bool live[RUSK_ADMIT_MAX_BUCKETS];
	rusk_qtask qt;
	bool interf = qm == RUSK_QUALITY_INTERFERENCE;
	if (interf)
		rusk_qtask_init(&qt, &t->profile);
	double best = -INFINITY;
	for (uint32_t b = 0; b < nb; b++) {
		live[b] = rusk_load32((uint32_t *)&a->b[b].seen, RUSK_RELAXED) != 0;
		if (!live[b])
			continue;
		double ci[RUSK_N_RESOURCES];
		for (int i = 0; i < RUSK_N_RESOURCES; i++)
			ci[i] = rusk_load32((uint32_t *)&a->b[b].rep[i], RUSK_RELAXED) / REP_SCALE;
		q[b] = interf ? rusk_qtask_eval_ci(&qt, ci) : 1.0;
		if (q[b] > best)
			best = q[b];
	}
	d->best_quality = best;
	bool match[RUSK_ADMIT_MAX_BUCKETS];
	for (uint32_t b = 0; b < nb; b++) {
		match[b] = live[b] && q[b] >= best - a->p.match;
		if (match[b]) {
			d->matched_buckets++;
			d->matched_free += (uint64_t)fr[b];
		}
	}
	/* Enough matching RUs, and common enough among the free ones for r_max candidates to
	 * find one with probability 1 - eps. */
	double share = 1.0 - pow(a->p.eps, 1.0 / a->p.r_max);
	double need = fmax(ceil(a->p.slack * t->rus), ceil(share * (double)total));
	if ((double)d->matched_free >= need) {
		d->reason = RUSK_ADMIT_MATCHED;
		return RUSK_OK;
	}
	/* Merge the matching buckets' free processes: rates add; the interval's coefficient
	 * of variation is their frees-weighted mean. */
	double rate = 0, cv2 = 0, n_all = 0;
	for (uint32_t b = 0; b < nb; b++) {
		double mean = 0, sd = 0;
		uint64_t n = match[b] ? history(a, b, &mean, &sd) : 0;
		if (n < a->p.min_frees || mean <= 0)
			continue;
		rate += 1.0 / mean;
		cv2 += (double)n * (sd / mean) * (sd / mean);
		n_all += (double)n;
	}
	if (rate <= 0) {
		d->reason = RUSK_ADMIT_NO_HISTORY;
		return RUSK_OK;
	}
	/* Tarcil §4: the estimate is when the missing k RUs will have been freed; the bound
	 * is mu + 2 sigma of the time until one is. An estimate beyond the bound means
	 * waiting is not worth it: schedule now. Whole nanoseconds, rounded up, so that
	 * waiting exactly as told reaches them. */
	double k = need - (double)d->matched_free;
	d->missing = (uint64_t)k;
	double mu1 = 1.0 / rate, cv = sqrt(cv2 / n_all);
	uint64_t est = (uint64_t)ceil(k * mu1), bound = (uint64_t)ceil(mu1 * (1.0 + 2.0 * cv));
	d->bound_ns = bound;
	d->estimate_ns = est;
	if (est > bound) {
		d->reason = RUSK_ADMIT_TOO_LONG;
		return RUSK_OK;
	}
	if (waited_ns >= bound) {
		d->reason = RUSK_ADMIT_BOUND;
		return RUSK_OK;
	}
	d->verdict = RUSK_ADMIT_WAIT;
	d->reason = RUSK_ADMIT_SCARCE;
	d->wait_ns = (waited_ns < est ? est : bound) - waited_ns;
	return RUSK_OK;
}
