/* SPDX-License-Identifier: MIT */
/*
 * The generative ground truth of the classification engine (rusk/classify.h): a seeded
 * population of workloads drawn from a few families, and profiling of its rows. Every
 * figure rusk quotes for classification is measured on this generator, not on real
 * workloads; rusk_cls_matrix_load_csv takes a measured matrix instead.
 *
 * Families. Each of F families draws, from the seed:
 *   scale-up     Amdahl parallel fraction a ~ U(0.50, 0.99), working set w ~ U(0.5, B)
 *                memory blocks, memory sensitivity beta ~ U(0, 0.8)
 *   scale-out    communication overhead c ~ U(0.005, 0.4) per extra machine
 *   platforms    compute-boundness alpha ~ U(0, 1)
 *   interference mixture weights over T latent types (normalised U(0, 1)^2)
 * and the population shares platforms and types:
 *   platform j   core speed s_j ~ U(0.6, 1.6), memory bandwidth m_j ~ U(0.5, 2.0)
 *   type t       sensitivity S_t[r] ~ U(0, 1)^2 and caused pressure C_t[r] ~ U(0, 1)^2
 *                per shared resource r (squares: each type stresses a few resources)
 * Workload u picks a family uniformly, multiplies each family parameter by
 * (1 + jitter N(0, 1)) (clamped to the parameter's range) and draws its own speed
 * g_u = exp(N(0, 0.5)) (its units of work per second at 1 RU, 1 block, 1 machine). Then
 *   scale-up      perf(r RUs, b blocks) = g_u / ((1 - a) + a / r) x min(1, b / w)^beta
 *   scale-out     perf(n machines)      = g_u n / (1 + c (n - 1))
 *   heterogeneity perf(platform j)      = g_u s_j^alpha m_j^(1 - alpha)
 *   interference  tolerated_r = 100 (1 - 0.9 sum_t v_t S_t[r]),
 *                 caused_r    = 5 + 90 sum_t v_t C_t[r], v the workload's jittered and
 *                 renormalised type weights; both clamped to [1, 100].
 * The matrices hold these noiseless values (the truth errors are measured against);
 * profiling (rusk_cls_profile_row) measures a few of them with noise.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/classify.h>

#include "base/alloc.h"
#include "base/base.h"
#include "base/rng.h"

#define MAX_FAMILIES 64
#define MAX_TYPES    8

struct rusk_cls_truth {
	rusk_cls_matrix *m[RUSK_CLS_KINDS];
	uint32_t *family;
	uint32_t rows;
};

typedef struct family {
	double a, w, beta, c, alpha;
	double v[MAX_TYPES];
} family;

RUSK_EXPORT void rusk_cls_gen_params_init(rusk_cls_gen_params *p)
{
	if (p == NULL)
		return;
	memset(p, 0, sizeof *p);
	p->workloads = 1200;
	p->families = 6;
	p->su_rus = 8;
	p->su_mem_blocks = 4;
	p->so_machines = 16;
	p->platforms = 8;
	p->types = 3;
	p->jitter = 0.05;
	p->seed = 1;
}

static double unif(rusk_rng *r, double lo, double hi)
{
	return lo + (hi - lo) * rusk_rng_unit(r);
}

/* Standard normal by Box-Muller (one of the pair; simple and seeded). */
static double normal(rusk_rng *r)
{
	double u1 = rusk_rng_unit(r), u2 = rusk_rng_unit(r);
	return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

static double clampd(double x, double lo, double hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

static double jit(rusk_rng *r, double x, double j, double lo, double hi)
{
	return clampd(x * (1.0 + j * normal(r)), lo, hi);
}

static int check(const rusk_cls_gen_params *p, char *err, size_t errlen)
{
	if (p->workloads == 0 || p->workloads > 10000000)
		return rusk_errf(err, errlen, RUSK_EINVAL, "workloads %u is not in 1..10000000",
		                 p->workloads);
	if (p->families == 0 || p->families > MAX_FAMILIES)
		return rusk_errf(err, errlen, RUSK_EINVAL, "families %u is not in 1..%u",
		                 p->families, MAX_FAMILIES);
	if (p->su_rus == 0 || p->su_mem_blocks == 0 ||
	    (uint64_t)p->su_rus * p->su_mem_blocks > RUSK_CLS_MAX_COLS)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "su_rus x su_mem_blocks (%u x %u) is not in 1..%u", p->su_rus,
		                 p->su_mem_blocks, RUSK_CLS_MAX_COLS);
	if (p->so_machines == 0 || p->so_machines > RUSK_CLS_MAX_COLS)
		return rusk_errf(err, errlen, RUSK_EINVAL, "so_machines %u is not in 1..%u",
		                 p->so_machines, RUSK_CLS_MAX_COLS);
	if (p->platforms == 0 || p->platforms > RUSK_MAX_PLATFORMS)
		return rusk_errf(err, errlen, RUSK_EINVAL, "platforms %u is not in 1..%u",
		                 p->platforms, RUSK_MAX_PLATFORMS);
	if (p->types == 0 || p->types > MAX_TYPES)
		return rusk_errf(err, errlen, RUSK_EINVAL, "types %u is not in 1..%u", p->types,
		                 MAX_TYPES);
	if (!(p->jitter >= 0 && p->jitter <= 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "jitter %g is not in [0, 1]", p->jitter);
	return RUSK_OK;
}

/* Fills row u of the four matrices for workload parameters f and speed g. */
static void fill_row(rusk_cls_truth *t, const rusk_cls_gen_params *p, uint32_t u, const family *f,
                     double g, const double *speed, const double *bw,
                     const double (*sens)[RUSK_N_RESOURCES], const double (*caus)[RUSK_N_RESOURCES])
{
	rusk_cls_matrix *su = t->m[RUSK_CLS_SCALE_UP], *so = t->m[RUSK_CLS_SCALE_OUT];
	rusk_cls_matrix *he = t->m[RUSK_CLS_HETEROGENEITY], *in = t->m[RUSK_CLS_INTERFERENCE];
	for (uint32_t r = 1; r <= p->su_rus; r++)
		for (uint32_t b = 1; b <= p->su_mem_blocks; b++) {
			double amdahl = 1.0 / ((1.0 - f->a) + f->a / r);
			double mem = pow(fmin(1.0, b / f->w), f->beta);
			rusk_cls_matrix_set(su, u, (r - 1) * p->su_mem_blocks + (b - 1),
			                    g * amdahl * mem);
		}
	for (uint32_t n = 1; n <= p->so_machines; n++)
		rusk_cls_matrix_set(so, u, n - 1, g * n / (1.0 + f->c * (n - 1)));
	for (uint32_t j = 0; j < p->platforms; j++)
		rusk_cls_matrix_set(he, u, j,
		                    g * pow(speed[j], f->alpha) * pow(bw[j], 1 - f->alpha));
	for (uint32_t r = 0; r < RUSK_N_RESOURCES; r++) {
		double s = 0, cz = 0;
		for (uint32_t k = 0; k < p->types; k++) {
			s += f->v[k] * sens[k][r];
			cz += f->v[k] * caus[k][r];
		}
		rusk_cls_matrix_set(in, u, r, clampd(100.0 * (1.0 - 0.9 * s), 1, 100));
		rusk_cls_matrix_set(in, u, RUSK_N_RESOURCES + r, clampd(5.0 + 90.0 * cz, 1, 100));
	}
}

RUSK_EXPORT int rusk_cls_truth_generate(const rusk_cls_gen_params *p, rusk_cls_truth **out,
                                        char *err, size_t errlen)
{
	if (p == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "NULL argument");
	*out = NULL;
	int rc = check(p, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	rusk_cls_truth *t = rusk_fault_alloc_() ? NULL : calloc(1, sizeof *t);
	if (t == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	t->rows = p->workloads;
	uint32_t cols[RUSK_CLS_KINDS] = {p->su_rus * p->su_mem_blocks, p->so_machines, p->platforms,
	                                 RUSK_CLS_INTERFERENCE_COLS};
	t->family = malloc(sizeof *t->family * p->workloads);
	rc = t->family == NULL ? RUSK_ENOMEM : RUSK_OK;
	for (int k = 0; k < RUSK_CLS_KINDS && rc == RUSK_OK; k++)
		rc = rusk_cls_matrix_create(p->workloads, cols[k], &t->m[k]);
	if (rc != RUSK_OK) {
		rusk_cls_truth_destroy(t);
		return rusk_errf(err, errlen, rc, "out of memory");
	}
	/* Independent streams: the population does not shift when a count changes. */
	rusk_rng rf, rw;
	rusk_rng_seed(&rf, p->seed, 0x66616d); /* "fam" */
	rusk_rng_seed(&rw, p->seed, 0x776b6c); /* "wkl" */
	family fam[MAX_FAMILIES];
	double speed[RUSK_MAX_PLATFORMS], bw[RUSK_MAX_PLATFORMS];
	double sens[MAX_TYPES][RUSK_N_RESOURCES], caus[MAX_TYPES][RUSK_N_RESOURCES];
	for (uint32_t j = 0; j < p->platforms; j++) {
		speed[j] = unif(&rf, 0.6, 1.6);
		bw[j] = unif(&rf, 0.5, 2.0);
	}
	for (uint32_t k = 0; k < p->types; k++)
		for (uint32_t r = 0; r < RUSK_N_RESOURCES; r++) {
			double a = rusk_rng_unit(&rf), b = rusk_rng_unit(&rf);
			sens[k][r] = a * a;
			caus[k][r] = b * b;
		}
	for (uint32_t f = 0; f < p->families; f++) {
		family *x = &fam[f];
		x->a = unif(&rf, 0.50, 0.99);
		x->w = unif(&rf, 0.5, p->su_mem_blocks);
		x->beta = unif(&rf, 0, 0.8);
		x->c = unif(&rf, 0.005, 0.4);
		x->alpha = unif(&rf, 0, 1);
		double sum = 0;
		for (uint32_t k = 0; k < p->types; k++) {
			double v = rusk_rng_unit(&rf);
			x->v[k] = v * v + 1e-3;
			sum += x->v[k];
		}
		for (uint32_t k = 0; k < p->types; k++)
			x->v[k] /= sum;
	}
	for (uint32_t u = 0; u < p->workloads; u++) {
		uint32_t f = rusk_rng_below(&rw, p->families);
		const family *fx = &fam[f];
		family w = *fx;
		double j = p->jitter;
		w.a = jit(&rw, fx->a, j, 0.0, 0.999);
		w.w = jit(&rw, fx->w, j, 0.1, p->su_mem_blocks);
		w.beta = jit(&rw, fx->beta, j, 0.0, 1.0);
		w.c = jit(&rw, fx->c, j, 0.0, 1.0);
		w.alpha = jit(&rw, fx->alpha, j, 0.0, 1.0);
		double sum = 0;
		for (uint32_t k = 0; k < p->types; k++) {
			w.v[k] = jit(&rw, fx->v[k], j, 1e-4, 1.0);
			sum += w.v[k];
		}
		for (uint32_t k = 0; k < p->types; k++)
			w.v[k] /= sum;
		double g = exp(0.5 * normal(&rw));
		t->family[u] = f;
		fill_row(t, p, u, &w, g, speed, bw, (const double(*)[RUSK_N_RESOURCES])sens,
		         (const double(*)[RUSK_N_RESOURCES])caus);
	}
	*out = t;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_cls_truth_destroy(rusk_cls_truth *t)
{
	if (t == NULL)
		return;
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_matrix_destroy(t->m[k]);
	free(t->family);
	free(t);
}

RUSK_EXPORT const rusk_cls_matrix *rusk_cls_truth_matrix(const rusk_cls_truth *t, rusk_cls_kind k)
{
	return t != NULL && (unsigned)k < RUSK_CLS_KINDS ? t->m[k] : NULL;
}

RUSK_EXPORT uint32_t rusk_cls_truth_family(const rusk_cls_truth *t, uint32_t row)
{
	return t != NULL && row < t->rows ? t->family[row] : UINT32_MAX;
}

RUSK_EXPORT int rusk_cls_profile_row(const rusk_cls_matrix *truth, rusk_cls_kind kind, uint32_t row,
                                     uint32_t entries, double noise, uint64_t seed,
                                     rusk_cls_entry *out, uint32_t *n)
{
	if (truth == NULL || out == NULL || n == NULL || (unsigned)kind >= RUSK_CLS_KINDS ||
	    entries == 0 || !(noise >= 0 && noise <= 1))
		return RUSK_EINVAL;
	uint32_t cols = rusk_cls_matrix_cols(truth);
	if (row >= rusk_cls_matrix_rows(truth))
		return RUSK_ERANGE;
	/* Quasar profiles scale-out on one to four machines only (larger counts come from
	 * the offline rows and from feedback). */
	uint32_t span = cols;
	if (kind == RUSK_CLS_SCALE_OUT && span > (entries > 4 ? entries : 4))
		span = entries > 4 ? entries : 4;
	uint32_t rusk_cand[RUSK_CLS_MAX_COLS], nc = 0;
	for (uint32_t i = 0; i < span; i++)
		if (!isnan(rusk_cls_matrix_get(truth, row, i)))
			rusk_cand[nc++] = i;
	rusk_rng r;
	rusk_rng_seed(&r, seed, row);
	uint32_t k = 0;
	for (; k < entries && nc > 0; k++) { /* draw without replacement */
		uint32_t x = rusk_rng_below(&r, nc);
		uint32_t col = rusk_cand[x];
		rusk_cand[x] = rusk_cand[--nc];
		double v = rusk_cls_matrix_get(truth, row, col);
		double f = 1.0 + noise * normal(&r);
		out[k] = (rusk_cls_entry){col, v * (f > 0.05 ? f : 0.05)};
	}
	*n = k;
	return RUSK_OK;
}
