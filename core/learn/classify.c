/* SPDX-License-Identifier: MIT */
/*
 * Classification by collaborative filtering (Quasar §3.2, after Paragon): SVD to
 * initialise, PQ-reconstruction with SGD to train, fold-in to classify an incoming row,
 * RCU to publish a retrained model. Public contract in rusk/classify.h.
 *
 * Values. With log_values (the default) the model works on y = log(value): a workload's
 * overall speed is then its row bias b_u and a platform's speed-up a column bias b_i, and
 * relative errors are what squared errors weigh. Without it, y = value.
 *
 * Training (rusk_cls_retrain), on a copy of the store's measured entries Omega:
 *   mu  = mean of y over Omega
 *   A   = rows x cols, A_ui = y_ui - mu on Omega, 0 elsewhere (missing = average)
 *   A   = U S V^T (LAPACKE_dgesdd); keep k = min(rank, rows, cols) factors:
 *         row factors q_u = U_u,1..k S^1/2 (the paper's Q = U), column factors
 *         p_i = V_i,1..k S^1/2 (P^T = V^T), biases b_u = b_i = 0
 *   SGD:  each epoch visits Omega in a fresh seeded order; for each r_ui:
 *           e_ui = r_ui - mu - b_u - b_i - q_u . p_i
 *           b_u += eta (e_ui - lambda b_u)         b_i += eta (e_ui - lambda b_i)
 *           q_u += eta (e_ui p_i - lambda q_u)     p_i += eta (e_ui q_u - lambda p_i)
 *         until |E_prev - E| < tol E_prev, E = sum of e_ui^2 over the epoch (§3.2 iterates
 *         "until convergence", until that sum "becomes marginal"), or max_epochs.
 *   Row prior: mean m and covariance C of the trained row vectors x_u = (b_u, q_u), and
 *   the noise variance s2 = E / |Omega|; fold-in regularises with precision L = s2 C^-1
 *   centred on m (Cholesky inverse with LAPACKE_dpotrf/dpotri). With one training row
 *   L = lambda I and m = 0: plain §3.2 regularisation.
 *
 * Fold-in (rusk_cls_classify), for a new row with entries y_j in columns i_j, z_j =
 * (1, p_ij): x = argmin sum_j (y_j - mu - b_ij - z_j . x)^2 + (x - m)^T L (x - m), the
 * §3.2 objective of one row with the column side fixed, solved in closed form
 * (Cholesky on k+1 unknowns, see spd_solve), then SGD on that row only (the §3.2 update of b_u and
 * q_u with the same regulariser) until its error change is marginal. O(n k^2 + cols k):
 * independent of the number of training rows, no retrain.
 *
 * Invariants.
 *   1. A published model is never written again: every field is set before
 *      rcu_assign_pointer, and it is freed by call_rcu only after it was replaced, so a
 *      reader inside a read-side section sees one whole model (rows, biases, factors and
 *      prior of one retrain) whatever retrains run meanwhile.
 *   2. Versions increase by one per publish, under the train mutex: a reader never sees a
 *      model older than one it saw before on the same thread.
 *   3. The training store is only touched under the store mutex, and a retrain trains on
 *      a copy taken under it: rows added or fed back during a retrain go to the next one,
 *      and readers never take either mutex (classification is lock-free).
 *   4. A failed retrain (no rows, no memory, LAPACK or SGD failure) publishes nothing; the
 *      old model stays.
 *
 * ThreadSanitizer: liburcu's barriers are inline assembly TSan does not see, so the
 * publish/read and reader/reclaimer pairs are annotated as in core/kernel/snapshot.c.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lapacke.h>
#include <urcu/urcu-memb.h>

#include <rusk/classify.h>

#include "base/alloc.h"
#include "base/base.h"
#include "base/rng.h"

#define K1MAX       (RUSK_CLS_MAX_RANK + 1)
#define FOLD_EPOCHS 50 /* SGD epochs on a folded-in row at most */

/* One trained model: immutable once published (invariant 1). */
typedef struct model {
	struct rcu_head rcu;
	uint64_t version;
	uint32_t cols, k, rows;
	bool log_values;
	double mu, eta, tol;
	double prior_m[K1MAX];
	double prior_l[K1MAX * K1MAX]; /* precision, column-major (symmetric) */
	double *bi;                    /* [cols] */
	double *p;                     /* [cols][k] */
	double *x;                     /* [rows][k + 1]: b_u, q_u */
} model;

struct rusk_cls {
	rusk_cls_params p;
	pthread_mutex_t store_mu; /* rows, n_rows, cap_rows (invariant 3) */
	pthread_mutex_t train_mu; /* serialises retrains and publishes (invariant 2) */
	double *rows;             /* [cap_rows][cols], NaN = not measured */
	uint32_t n_rows, cap_rows;
	uint64_t version;
	model *cur; /* RCU-published */
};

struct rusk_classifier {
	rusk_cls *k[RUSK_CLS_KINDS];
};

RUSK_EXPORT const char *rusk_cls_kind_name(rusk_cls_kind k)
{
	switch (k) {
	case RUSK_CLS_SCALE_UP: return "scale-up";
	case RUSK_CLS_SCALE_OUT: return "scale-out";
	case RUSK_CLS_HETEROGENEITY: return "heterogeneity";
	case RUSK_CLS_INTERFERENCE: return "interference";
	}
	return "?";
}

RUSK_EXPORT void rusk_cls_params_init(rusk_cls_params *p, uint32_t cols)
{
	if (p == NULL)
		return;
	memset(p, 0, sizeof *p);
	p->cols = cols;
	p->rank = 4;
	p->eta = 0.02;
	p->lambda = 0.02;
	p->tol = 1e-4;
	p->max_epochs = 400;
	p->seed = 1;
	p->log_values = true;
}

static int check_params(const rusk_cls_params *p, char *err, size_t errlen)
{
	if (p->cols == 0 || p->cols > RUSK_CLS_MAX_COLS)
		return rusk_errf(err, errlen, RUSK_EINVAL, "cols %u is not in 1..%u", p->cols,
		                 RUSK_CLS_MAX_COLS);
	if (p->rank == 0 || p->rank > RUSK_CLS_MAX_RANK)
		return rusk_errf(err, errlen, RUSK_EINVAL, "rank %u is not in 1..%u", p->rank,
		                 RUSK_CLS_MAX_RANK);
	if (!(p->eta > 0 && p->eta <= 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "eta %g is not in (0, 1]", p->eta);
	if (!(p->lambda >= 0 && p->lambda <= 10))
		return rusk_errf(err, errlen, RUSK_EINVAL, "lambda %g is not in [0, 10]",
		                 p->lambda);
	if (!(p->tol > 0 && p->tol < 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "tol %g is not in (0, 1)", p->tol);
	if (p->max_epochs == 0)
		return rusk_errf(err, errlen, RUSK_EINVAL, "max_epochs must be > 0");
	return RUSK_OK;
}

RUSK_EXPORT int rusk_cls_create(const rusk_cls_params *p, rusk_cls **out, char *err, size_t errlen)
{
	if (p == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "NULL argument");
	*out = NULL;
	int rc = check_params(p, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	rusk_cls *c = rusk_fault_alloc_() ? NULL : calloc(1, sizeof *c);
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	c->p = *p;
	pthread_mutex_init(&c->store_mu, NULL);
	pthread_mutex_init(&c->train_mu, NULL);
	*out = c;
	return RUSK_OK;
}

static void model_free_cb(struct rcu_head *head)
{
	model *m = (model *)(void *)head; /* rcu is the first member */
	TSAN_ACQUIRE(m);                  /* after every reader's release */
	free(m);
}

RUSK_EXPORT void rusk_cls_destroy(rusk_cls *c)
{
	if (c == NULL)
		return;
	/* Replaced models still queued for call_rcu point nowhere into c, but the contract
	 * promises they are gone when destroy returns. */
	urcu_memb_barrier();
	if (c->cur != NULL) {
		TSAN_ACQUIRE(c->cur);
		free(c->cur);
	}
	free(c->rows);
	pthread_mutex_destroy(&c->store_mu);
	pthread_mutex_destroy(&c->train_mu);
	free(c);
}

RUSK_EXPORT uint32_t rusk_cls_cols(const rusk_cls *c)
{
	return c != NULL ? c->p.cols : 0;
}

/* Checks entries against c's columns and value domain; names the bad one. */
static int check_entries(const rusk_cls_params *p, const rusk_cls_entry *e, uint32_t n, char *err,
                         size_t errlen)
{
	if (e == NULL || n == 0)
		return rusk_errf(err, errlen, RUSK_EINVAL, "no entries");
	for (uint32_t j = 0; j < n; j++) {
		if (e[j].col >= p->cols)
			return rusk_errf(err, errlen, RUSK_EINVAL,
			                 "entry %u: column %u is not in 0..%u", j, e[j].col,
			                 p->cols - 1);
		if (!isfinite(e[j].value) || (p->log_values && !(e[j].value > 0)))
			return rusk_errf(err, errlen, RUSK_EINVAL, "entry %u: value %g is not %s",
			                 j, e[j].value,
			                 p->log_values ? "a finite number > 0" : "finite");
	}
	return RUSK_OK;
}

/* Grows the store to hold one more row; store_mu held. */
static int store_grow(rusk_cls *c)
{
	if (c->n_rows < c->cap_rows)
		return RUSK_OK;
	if (c->cap_rows >= UINT32_MAX / 2)
		return RUSK_ENOMEM;
	uint32_t cap = c->cap_rows ? c->cap_rows * 2 : 64;
	double *r = rusk_fault_alloc_() ? NULL : realloc(c->rows, sizeof(double) * cap * c->p.cols);
	if (r == NULL)
		return RUSK_ENOMEM;
	c->rows = r;
	c->cap_rows = cap;
	return RUSK_OK;
}

/* Writes the checked entries e[0..n) into a stored row (caller holds store_mu). */
static void put_entries(double *r, const rusk_cls_entry *e, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++)
		r[e[j].col] = e[j].value;
}

RUSK_EXPORT int rusk_cls_add_row(rusk_cls *c, const rusk_cls_entry *e, uint32_t n, uint32_t *row,
                                 char *err, size_t errlen)
{
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "NULL classification");
	int rc = check_entries(&c->p, e, n, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	pthread_mutex_lock(&c->store_mu);
	rc = store_grow(c);
	if (rc == RUSK_OK) {
		double *r = c->rows + (size_t)c->n_rows * c->p.cols;
		for (uint32_t i = 0; i < c->p.cols; i++)
			r[i] = NAN;
		put_entries(r, e, n);
		if (row != NULL)
			*row = c->n_rows;
		c->n_rows++;
	}
	pthread_mutex_unlock(&c->store_mu);
	return rc == RUSK_OK ? RUSK_OK : rusk_errf(err, errlen, rc, "out of memory");
}

RUSK_EXPORT int rusk_cls_feedback(rusk_cls *c, uint32_t row, const rusk_cls_entry *e, uint32_t n,
                                  char *err, size_t errlen)
{
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "NULL classification");
	int rc = check_entries(&c->p, e, n, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	pthread_mutex_lock(&c->store_mu);
	if (row < c->n_rows) {
		put_entries(c->rows + (size_t)row * c->p.cols, e, n);
	} else {
		rc = RUSK_ERANGE;
	}
	uint32_t rows = c->n_rows;
	pthread_mutex_unlock(&c->store_mu);
	return rc == RUSK_OK ? RUSK_OK
	                     : rusk_errf(err, errlen, rc, "row %u: only %u rows", row, rows);
}

RUSK_EXPORT uint32_t rusk_cls_rows(const rusk_cls *c)
{
	if (c == NULL)
		return 0;
	rusk_cls *w = (rusk_cls *)c; /* the mutex is not part of the logical state */
	pthread_mutex_lock(&w->store_mu);
	uint32_t n = w->n_rows;
	pthread_mutex_unlock(&w->store_mu);
	return n;
}

static inline double to_model(bool log_values, double v)
{
	return log_values ? log(v) : v;
}

static inline double from_model(bool log_values, double y)
{
	return log_values ? exp(y) : y;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The measured entries of a store copy, in model space. */
typedef struct obs {
	uint32_t u, i;
	double y;
} obs;

/* Training scratch: everything a retrain allocates besides the model. */
typedef struct train {
	uint32_t rows, cols, k, n_obs;
	obs *o;
	uint32_t *order;
	double *q; /* [rows][k] */
	double *bu;
} train;

static void train_free(train *t)
{
	free(t->o);
	free(t->order);
	free(t->q);
	free(t->bu);
}

/* Copies the store's measured entries (invariant 3). */
static int take_store(rusk_cls *c, train *t)
{
	pthread_mutex_lock(&c->store_mu);
	uint32_t rows = c->n_rows, cols = c->p.cols;
	size_t cells = (size_t)rows * cols, n = 0;
	for (size_t x = 0; x < cells; x++)
		n += !isnan(c->rows[x]);
	t->o = n ? malloc(sizeof *t->o * n) : NULL;
	if (t->o != NULL)
		for (size_t x = 0, j = 0; x < cells; x++)
			if (!isnan(c->rows[x]))
				t->o[j++] = (obs){(uint32_t)(x / cols), (uint32_t)(x % cols),
				                  to_model(c->p.log_values, c->rows[x])};
	pthread_mutex_unlock(&c->store_mu);
	if (n == 0)
		return RUSK_EINVAL;
	if (t->o == NULL)
		return RUSK_ENOMEM;
	t->rows = rows;
	t->cols = cols;
	t->n_obs = (uint32_t)n;
	return RUSK_OK;
}

static model *model_alloc(uint32_t rows, uint32_t cols, uint32_t k)
{
	size_t nd = (size_t)cols + (size_t)cols * k + (size_t)rows * (k + 1);
	model *m = rusk_fault_alloc_() ? NULL : calloc(1, sizeof *m + sizeof(double) * nd);
	if (m == NULL)
		return NULL;
	m->bi = (double *)(m + 1);
	m->p = m->bi + cols;
	m->x = m->p + (size_t)cols * k;
	m->rows = rows;
	m->cols = cols;
	m->k = k;
	return m;
}

/* SVD initialisation of q (rows x k) and m->p (cols x k) from the centred store. */
static int svd_init(train *t, model *m)
{
	uint32_t rows = t->rows, cols = t->cols, mn = rows < cols ? rows : cols, k = t->k;
	double *a = calloc((size_t)rows * cols, sizeof *a);
	double *s = malloc(sizeof *s * mn);
	double *u = malloc(sizeof *u * (size_t)rows * mn);
	double *vt = malloc(sizeof *vt * (size_t)mn * cols);
	int rc = RUSK_ENOMEM;
	if (a == NULL || s == NULL || u == NULL || vt == NULL)
		goto out;
	for (uint32_t j = 0; j < t->n_obs; j++) /* column-major: LAPACK's own layout */
		a[t->o[j].u + (size_t)t->o[j].i * rows] = t->o[j].y - m->mu;
	lapack_int info =
	        LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'S', (lapack_int)rows, (lapack_int)cols, a,
	                       (lapack_int)rows, s, u, (lapack_int)rows, vt, (lapack_int)mn);
	if (info != 0) {
		rc = info < 0 ? RUSK_EINVAL : RUSK_ECORRUPT;
		goto out;
	}
	for (uint32_t d = 0; d < k; d++) {
		double r = sqrt(s[d]);
		for (uint32_t x = 0; x < rows; x++)
			t->q[(size_t)x * k + d] = u[x + (size_t)d * rows] * r;
		for (uint32_t i = 0; i < cols; i++)
			m->p[(size_t)i * k + d] = vt[d + (size_t)i * mn] * r;
	}
	rc = RUSK_OK;
out:
	free(a);
	free(s);
	free(u);
	free(vt);
	return rc;
}

/* One SGD epoch over Omega in a fresh seeded order; returns E, the sum of e^2. */
static double sgd_epoch(train *t, model *m, const rusk_cls_params *p, rusk_rng *rng)
{
	uint32_t k = t->k;
	for (uint32_t j = t->n_obs; j > 1; j--) { /* Fisher-Yates */
		uint32_t r = rusk_rng_below(rng, j), tmp = t->order[j - 1];
		t->order[j - 1] = t->order[r];
		t->order[r] = tmp;
	}
	double e2 = 0, eta = p->eta, lam = p->lambda;
	for (uint32_t j = 0; j < t->n_obs; j++) {
		const obs *o = &t->o[t->order[j]];
		double *q = t->q + (size_t)o->u * k, *pi = m->p + (size_t)o->i * k;
		double dot = 0;
		for (uint32_t d = 0; d < k; d++)
			dot += q[d] * pi[d];
		double e = o->y - m->mu - t->bu[o->u] - m->bi[o->i] - dot;
		e2 += e * e;
		t->bu[o->u] += eta * (e - lam * t->bu[o->u]);
		m->bi[o->i] += eta * (e - lam * m->bi[o->i]);
		for (uint32_t d = 0; d < k; d++) {
			double qd = q[d], pd = pi[d];
			q[d] += eta * (e * pd - lam * qd);
			pi[d] += eta * (e * qd - lam * pd);
		}
	}
	return e2;
}

/* Which rows the prior is fitted on: those measured in at least max(k + 1, 3/4 of the
 * best-measured row's entries) columns when two or more are, else all. A sparse row's
 * factors are mostly its own regularisation and SVD start, not data: fitted on them, the
 * prior would describe the shrinkage instead of the workloads (on the generator, scale-out
 * at 2 entries: 15.8% average error with every row, 8.9% without the sparse ones).
 * Returns the count; keep[u] says which. */
static uint32_t prior_rows(const train *t, uint8_t *keep)
{
	uint32_t *cnt = calloc(t->rows, sizeof *cnt), best = 0, n = 0;
	if (cnt != NULL)
		for (uint32_t j = 0; j < t->n_obs; j++)
			cnt[t->o[j].u]++;
	for (uint32_t u = 0; cnt != NULL && u < t->rows; u++)
		best = cnt[u] > best ? cnt[u] : best;
	uint32_t need = (3 * best + 3) / 4;
	if (need < t->k + 1)
		need = t->k + 1;
	for (uint32_t u = 0; u < t->rows; u++)
		n += keep[u] = cnt == NULL || cnt[u] >= need;
	if (n < 2) {
		memset(keep, 1, t->rows);
		n = t->rows;
	}
	free(cnt);
	return n;
}

/* Row prior: mean and precision s2 C^-1 of x_u = (b_u, q_u) over the prior's rows. */
static int fit_prior(const train *t, model *m, double s2, double lambda)
{
	uint32_t k1 = t->k + 1;
	memset(m->prior_m, 0, sizeof m->prior_m);
	memset(m->prior_l, 0, sizeof m->prior_l);
	uint8_t *keep = malloc(t->rows);
	if (keep == NULL)
		return RUSK_ENOMEM;
	uint32_t rows = prior_rows(t, keep);
	if (rows < 2) {
		for (uint32_t a = 0; a < k1; a++)
			m->prior_l[a + a * k1] = lambda > 0 ? lambda : 1e-6;
		free(keep);
		return RUSK_OK;
	}
	for (uint32_t u = 0; u < t->rows; u++)
		for (uint32_t a = 0; a < k1 && keep[u]; a++)
			m->prior_m[a] += m->x[(size_t)u * k1 + a] / rows;
	double cov[K1MAX * K1MAX] = {0};
	for (uint32_t u = 0; u < t->rows; u++) {
		const double *x = m->x + (size_t)u * k1;
		for (uint32_t a = 0; a < k1 && keep[u]; a++)
			for (uint32_t b = 0; b <= a; b++)
				cov[a + b * k1] += (x[a] - m->prior_m[a]) * (x[b] - m->prior_m[b]) /
				                   (rows - 1);
	}
	free(keep);
	for (uint32_t a = 0; a < k1; a++)
		cov[a + a * k1] += 1e-6; /* a factor no row uses must not make C singular */
	/* Lower triangle, column-major: C = L L^T, then C^-1 from the factor. */
	if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)k1, cov, (lapack_int)k1) != 0 ||
	    LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', (lapack_int)k1, cov, (lapack_int)k1) != 0)
		return RUSK_ECORRUPT;
	for (uint32_t a = 0; a < k1; a++)
		for (uint32_t b = 0; b <= a; b++)
			m->prior_l[a + b * k1] = m->prior_l[b + a * k1] = s2 * cov[a + b * k1];
	return RUSK_OK;
}

/* Trains a model on the copy in t (SVD, SGD, prior); fills info. */
static int train_model(rusk_cls *c, train *t, model **out, rusk_cls_train_info *info, char *err,
                       size_t errlen)
{
	const rusk_cls_params *p = &c->p;
	model *m = model_alloc(t->rows, t->cols, t->k);
	t->q = calloc((size_t)t->rows * t->k, sizeof *t->q);
	t->bu = calloc(t->rows, sizeof *t->bu);
	t->order = malloc(sizeof *t->order * t->n_obs);
	if (m == NULL || t->q == NULL || t->bu == NULL || t->order == NULL) {
		free(m);
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	}
	m->log_values = p->log_values;
	m->eta = p->eta;
	m->tol = p->tol;
	double sum = 0;
	for (uint32_t j = 0; j < t->n_obs; j++) {
		sum += t->o[j].y;
		t->order[j] = j;
	}
	m->mu = sum / t->n_obs;
	int rc = svd_init(t, m);
	if (rc != RUSK_OK) {
		free(m);
		return rusk_errf(err, errlen, rc, "SVD (LAPACKE_dgesdd) failed");
	}
	rusk_rng rng;
	rusk_rng_seed(&rng, p->seed, c->version + 1);
	double e2 = HUGE_VAL, prev = HUGE_VAL;
	uint32_t ep = 0;
	bool conv = false;
	while (ep < p->max_epochs && !conv) {
		e2 = sgd_epoch(t, m, p, &rng);
		ep++;
		if (!isfinite(e2)) {
			free(m);
			return rusk_errf(err, errlen, RUSK_ECORRUPT,
			                 "SGD diverged at epoch %u: lower eta (%g)", ep, p->eta);
		}
		conv = fabs(prev - e2) < p->tol * e2;
		prev = e2;
	}
	for (uint32_t u = 0; u < t->rows; u++) {
		double *x = m->x + (size_t)u * (t->k + 1);
		x[0] = t->bu[u];
		memcpy(x + 1, t->q + (size_t)u * t->k, sizeof(double) * t->k);
	}
	double s2 = e2 / t->n_obs;
	rc = fit_prior(t, m, s2 > 1e-8 ? s2 : 1e-8, p->lambda);
	if (rc != RUSK_OK) {
		free(m);
		return rusk_errf(err, errlen, rc, "row prior (LAPACKE_dpotrf) failed");
	}
	info->rows = t->rows;
	info->entries = t->n_obs;
	info->rank = t->k;
	info->epochs = ep;
	info->converged = conv;
	info->rmse = sqrt(e2 / t->n_obs);
	*out = m;
	return RUSK_OK;
}

/* Publishes m as the current model (train_mu held) and returns its version; the old one
 * goes to call_rcu. The publisher must not read m after this: a later retrain may retire
 * it, and the call_rcu hand-off to the reclaimer is an edge TSan cannot see. */
static uint64_t publish(rusk_cls *c, model *m)
{
	model *old = c->cur;
	uint64_t v = ++c->version;
	m->version = v;
	TSAN_RELEASE(m); /* every write to m happens before a reader's acquire */
	rcu_assign_pointer(c->cur, m);
	if (old != NULL)
		urcu_memb_call_rcu(&old->rcu, model_free_cb);
	return v;
}

RUSK_EXPORT int rusk_cls_retrain(rusk_cls *c, rusk_cls_train_info *info, char *err, size_t errlen)
{
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "NULL classification");
	rusk_cls_train_info local;
	if (info == NULL)
		info = &local;
	memset(info, 0, sizeof *info);
	double t0 = now_s();
	pthread_mutex_lock(&c->train_mu);
	train t = {0};
	int rc = take_store(c, &t);
	model *m = NULL;
	if (rc == RUSK_EINVAL)
		rc = rusk_errf(err, errlen, rc, "no measured entry to train on");
	else if (rc != RUSK_OK)
		rc = rusk_errf(err, errlen, rc, "out of memory");
	if (rc == RUSK_OK) {
		uint32_t mn = t.rows < t.cols ? t.rows : t.cols;
		t.k = c->p.rank < mn ? c->p.rank : mn;
		rc = train_model(c, &t, &m, info, err, errlen);
	}
	if (rc == RUSK_OK)
		info->version = publish(c, m); /* m is the readers' now: not touched again */
	pthread_mutex_unlock(&c->train_mu);
	train_free(&t);
	info->seconds = now_s() - t0;
	return rc;
}

RUSK_EXPORT uint64_t rusk_cls_version(const rusk_cls *c)
{
	if (c == NULL)
		return 0;
	urcu_memb_read_lock();
	const model *m = rcu_dereference(c->cur);
	uint64_t v = 0;
	if (m != NULL) {
		TSAN_ACQUIRE(m);
		v = m->version;
		TSAN_RELEASE(m);
	}
	urcu_memb_read_unlock();
	return v;
}

/*
 * Solves a x = b in place (b becomes x) for a symmetric positive definite k1 x k1 matrix
 * (column-major, lower triangle read) by Cholesky. The one decomposition rusk writes
 * itself, and on purpose: it is on the decision path, and OpenBLAS's dpotrf takes its work
 * buffer from an allocator that may lock, while this is at most 17 x 17 on the stack. The
 * SVD and the prior's inverse (off the path) are LAPACK's. False if a is not definite.
 */
static bool spd_solve(double *a, double *b, uint32_t k1)
{
	for (uint32_t j = 0; j < k1; j++) {
		double d = a[j + j * k1];
		for (uint32_t p = 0; p < j; p++)
			d -= a[j + p * k1] * a[j + p * k1];
		if (!(d > 0))
			return false;
		d = sqrt(d);
		a[j + j * k1] = d;
		for (uint32_t i = j + 1; i < k1; i++) {
			double v = a[i + j * k1];
			for (uint32_t p = 0; p < j; p++)
				v -= a[i + p * k1] * a[j + p * k1];
			a[i + j * k1] = v / d;
		}
	}
	for (uint32_t i = 0; i < k1; i++) { /* L y = b */
		for (uint32_t p = 0; p < i; p++)
			b[i] -= a[i + p * k1] * b[p];
		b[i] /= a[i + i * k1];
	}
	for (uint32_t i = k1; i-- > 0;) { /* L^T x = y */
		for (uint32_t p = i + 1; p < k1; p++)
			b[i] -= a[p + i * k1] * b[p];
		b[i] /= a[i + i * k1];
	}
	return true;
}

/* Solves the fold-in of one row and refines it by SGD on the row; returns the epochs. */
static uint32_t fold_in(const model *m, const uint32_t *col, const double *y, uint32_t n, double *x)
{
	uint32_t k = m->k, k1 = k + 1;
	double a[K1MAX * K1MAX], z[K1MAX];
	memcpy(a, m->prior_l, sizeof(double) * k1 * k1);
	for (uint32_t r = 0; r < k1; r++) { /* right side: L m + sum z y */
		x[r] = 0;
		for (uint32_t s = 0; s < k1; s++)
			x[r] += m->prior_l[r + s * k1] * m->prior_m[s];
	}
	for (uint32_t j = 0; j < n; j++) {
		z[0] = 1;
		memcpy(z + 1, m->p + (size_t)col[j] * k, sizeof(double) * k);
		for (uint32_t r = 0; r < k1; r++) {
			x[r] += z[r] * y[j];
			for (uint32_t s = 0; s < k1; s++)
				a[r + s * k1] += z[r] * z[s];
		}
	}
	if (!spd_solve(a, x, k1))
		memcpy(x, m->prior_m, sizeof(double) * k1); /* cannot happen: L is definite */
	/* §3.2's SGD on this row only, regularised like the solve: sum_j e_j^2 + (x-m)^T L
	 * (x-m), the regulariser spread over the n visits of an epoch. */
	double lf = 0; /* ||L||_F / n bounds the regulariser's largest eigenvalue */
	for (uint32_t r = 0; r < k1 * k1; r++)
		lf += m->prior_l[r] * m->prior_l[r];
	lf = sqrt(lf) / n;
	double prev = HUGE_VAL, g[K1MAX];
	uint32_t ep = 0;
	while (ep < FOLD_EPOCHS) {
		double e2 = 0;
		for (uint32_t j = 0; j < n; j++) {
			const double *pi = m->p + (size_t)col[j] * k;
			double e = y[j] - x[0];
			for (uint32_t d = 0; d < k; d++)
				e -= pi[d] * x[1 + d];
			e2 += e * e;
			for (uint32_t r = 0; r < k1; r++) {
				double reg = 0;
				for (uint32_t s = 0; s < k1; s++)
					reg += m->prior_l[r + s * k1] * (x[s] - m->prior_m[s]);
				g[r] = e * (r == 0 ? 1.0 : pi[r - 1]) - reg / n;
			}
			/* The step is stable when eta (|z|^2 + ||L||_F / n) < 2: a stiff
			 * prior (a factor the rows agree on) must not make the row diverge. */
			double z2 = 1, step = m->eta;
			for (uint32_t d = 0; d < k; d++)
				z2 += pi[d] * pi[d];
			if (step * (z2 + lf) > 1)
				step = 1 / (z2 + lf);
			for (uint32_t r = 0; r < k1; r++)
				x[r] += step * g[r];
		}
		ep++;
		if (fabs(prev - e2) <= m->tol * e2 || e2 == 0)
			break;
		prev = e2;
	}
	return ep;
}

/* The estimate of every column for row vector x. */
static void reconstruct(const model *m, const double *x, double *out)
{
	uint32_t k = m->k;
	for (uint32_t i = 0; i < m->cols; i++) {
		const double *pi = m->p + (size_t)i * k;
		double y = m->mu + m->bi[i] + x[0];
		for (uint32_t d = 0; d < k; d++)
			y += pi[d] * x[1 + d];
		out[i] = from_model(m->log_values, y);
	}
}

static const model *read_model(const rusk_cls *c)
{
	const model *m = rcu_dereference(c->cur);
	if (m != NULL)
		TSAN_ACQUIRE(m);
	return m;
}

static void read_done(const model *m)
{
	if (m != NULL)
		TSAN_RELEASE(m); /* pairs with TSAN_ACQUIRE in model_free_cb */
	urcu_memb_read_unlock();
}

RUSK_EXPORT int rusk_cls_classify(const rusk_cls *c, const rusk_cls_entry *e, uint32_t n,
                                  double *out, rusk_cls_fold_info *info)
{
	if (c == NULL || out == NULL || n > RUSK_CLS_MAX_COLS * 4 ||
	    check_entries(&c->p, e, n, NULL, 0) != RUSK_OK)
		return RUSK_EINVAL;
	/* A retrain may free the model once grace periods end; they wait only for registered
	 * readers (rusk/sync.h, "Checks"). */
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	urcu_memb_read_lock();
	const model *m = read_model(c);
	if (m == NULL) {
		read_done(m);
		return RUSK_ENOMODEL;
	}
	uint32_t col[RUSK_CLS_MAX_COLS * 4];
	double y[RUSK_CLS_MAX_COLS * 4], x[K1MAX];
	for (uint32_t j = 0; j < n; j++) {
		col[j] = e[j].col;
		y[j] = to_model(m->log_values, e[j].value) - m->mu - m->bi[e[j].col];
	}
	uint32_t ep = fold_in(m, col, y, n, x);
	reconstruct(m, x, out);
	/* Profiled columns keep their measurement (the mean of repeats). n is a few entries,
	 * so the quadratic scan costs less than a per-column table would. */
	for (uint32_t j = 0; j < n; j++) {
		bool first = true;
		for (uint32_t i = 0; i < j && first; i++)
			first = col[i] != col[j];
		if (!first)
			continue;
		double sum = 0;
		uint32_t same = 0;
		for (uint32_t i = j; i < n; i++)
			if (col[i] == col[j]) {
				sum += e[i].value;
				same++;
			}
		out[col[j]] = sum / same;
	}
	if (info != NULL) {
		info->version = m->version;
		info->epochs = ep;
	}
	read_done(m);
	return RUSK_OK;
}

RUSK_EXPORT int rusk_cls_estimate_row(const rusk_cls *c, uint32_t row, double *out)
{
	if (c == NULL || out == NULL)
		return RUSK_EINVAL;
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	urcu_memb_read_lock();
	const model *m = read_model(c);
	int rc = m == NULL ? RUSK_ENOMODEL : row >= m->rows ? RUSK_ERANGE : RUSK_OK;
	if (rc == RUSK_OK)
		reconstruct(m, m->x + (size_t)row * (m->k + 1), out);
	read_done(m);
	return rc;
}

/* ---- the four together ------------------------------------------------------------- */

RUSK_EXPORT int rusk_classifier_create(const rusk_cls_params p[RUSK_CLS_KINDS],
                                       rusk_classifier **out, char *err, size_t errlen)
{
	if (p == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "NULL argument");
	*out = NULL;
	if (p[RUSK_CLS_INTERFERENCE].cols != RUSK_CLS_INTERFERENCE_COLS)
		return rusk_errf(err, errlen, RUSK_EINVAL, "interference: cols %u, must be %u",
		                 p[RUSK_CLS_INTERFERENCE].cols, RUSK_CLS_INTERFERENCE_COLS);
	rusk_classifier *c = rusk_fault_alloc_() ? NULL : calloc(1, sizeof *c);
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		char e2[200] = "";
		int rc = rusk_cls_create(&p[k], &c->k[k], e2, sizeof e2);
		if (rc != RUSK_OK) {
			rusk_classifier_destroy(c);
			return rusk_errf(err, errlen, rc, "%s: %s", rusk_cls_kind_name(k), e2);
		}
	}
	*out = c;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_classifier_destroy(rusk_classifier *c)
{
	if (c == NULL)
		return;
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_destroy(c->k[k]);
	free(c);
}

RUSK_EXPORT rusk_cls *rusk_classifier_get(rusk_classifier *c, rusk_cls_kind k)
{
	return c != NULL && (unsigned)k < RUSK_CLS_KINDS ? c->k[k] : NULL;
}

RUSK_EXPORT int rusk_classifier_classify(const rusk_classifier *c, const rusk_cls_job_profile *p,
                                         rusk_cls_job_estimate *out)
{
	if (c == NULL || p == NULL || out == NULL)
		return RUSK_EINVAL;
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		rusk_cls_fold_info fi;
		int rc = rusk_cls_classify(c->k[k], p->e[k], p->n[k], out->v[k], &fi);
		if (rc != RUSK_OK)
			return rc;
		out->cols[k] = c->k[k]->p.cols;
		out->version[k] = fi.version;
	}
	return RUSK_OK;
}

RUSK_EXPORT int rusk_classifier_retrain(rusk_classifier *c,
                                        rusk_cls_train_info info[RUSK_CLS_KINDS], char *err,
                                        size_t errlen)
{
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "NULL classifier");
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		char e2[200] = "";
		int rc = rusk_cls_retrain(c->k[k], info != NULL ? &info[k] : NULL, e2, sizeof e2);
		if (rc != RUSK_OK)
			return rusk_errf(err, errlen, rc, "%s: %s", rusk_cls_kind_name(k), e2);
	}
	return RUSK_OK;
}
