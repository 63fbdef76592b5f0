/* SPDX-License-Identifier: MIT */
/*
 * A seeded generator of an E2E-like workload for the runtime predictor (3Sigma §5: jobs
 * drawn from job classes, each class with its own runtime distribution and probability
 * mass functions of its features; arrivals with c_a^2 = 4). The paper derives its classes
 * from the Google trace by k-means; we have no trace in the repository, so the classes are
 * drawn from the model below. It is meant to exercise the predictor the way §2.1 says real
 * workloads behave (heavy tails, high variability within classes, no single predictive
 * feature), not to reproduce the Google trace.
 *
 * Model (all draws from one rusk_rng stream of `seed`):
 *   classes   RUSK_E2E_CLASSES, picked with probability proportional to 1 / (k + 1)^0.8.
 *   runtime   lognormal per class: median log-uniform in [30 s, 4 h]; coefficient of
 *             variation CoV uniform in [1.2, 3] for 40% of the classes (high variability,
 *             CoV > 1) and in [0.05, 0.6] for the others; sigma = sqrt(ln(1 + CoV^2)).
 *             Across classes this gives the heavy tail of Fig. 2(a).
 *   user      40 users; a class has 1-3 of them (pmf 0.6 / 0.3 / 0.1), and users are
 *             shared between classes, so a user mixes several runtime distributions.
 *   name      a class has 1-2 executables of its own, except that with probability 0.3
 *             each is one of 8 common ones ("python") shared by every class.
 *   resources a class asks for 2^u processors, u uniform in 0..6, or twice that (30%).
 *   queue     SLO (0) or best effort (1), half the classes each (3Sigma: an even mixture).
 *   arrivals  balanced two-phase hyperexponential gaps, mean 12 s (1500 jobs in 5 h) and
 *             squared coefficient of variation 4.
 * Jobs start when submitted (wait 0): the predictor learns a runtime when the job ends.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/rng.h"
#include "workload/jobtrace.h"

#define USERS        40
#define COMMON_NAMES 8
#define MEAN_GAP_S   12.0
#define ARRIVAL_CV2  4.0

typedef struct e2e_class {
	double mu, sigma, cov;
	int64_t users[3];
	double user_cdf[3];
	int n_users;
	int64_t names[2];
	int n_names;
	int64_t procs;
	int64_t queue;
} e2e_class;

static double unit(rusk_rng *r)
{
	return rusk_rng_unit(r);
}

static double normal(rusk_rng *r)
{
	double u = unit(r), v = unit(r);
	return sqrt(-2 * log(1 - u)) * cos(2 * M_PI * v);
}

static void make_class(rusk_rng *r, int k, double high_cov_share, e2e_class *c)
{
	double median = exp(log(30.0) + unit(r) * (log(14400.0) - log(30.0)));
	c->cov = unit(r) < high_cov_share ? 1.2 + 1.8 * unit(r) : 0.05 + 0.55 * unit(r);
	c->sigma = sqrt(log(1 + c->cov * c->cov));
	c->mu = log(median);
	double pu = unit(r);
	c->n_users = pu < 0.6 ? 1 : pu < 0.9 ? 2 : 3;
	static const double w[3][3] = {{1, 0, 0}, {0.7, 1, 0}, {0.5, 0.8, 1}};
	for (int i = 0; i < c->n_users; i++) {
		c->users[i] = 1 + (int64_t)rusk_rng_below(r, USERS);
		c->user_cdf[i] = w[c->n_users - 1][i];
	}
	c->n_names = 1 + (unit(r) < 0.5);
	for (int i = 0; i < c->n_names; i++)
		c->names[i] = unit(r) < 0.3 ? 1 + (int64_t)rusk_rng_below(r, COMMON_NAMES)
		                            : 100 + 2 * k + i; /* the class's own */
	c->procs = INT64_C(1) << rusk_rng_below(r, 7);
	c->queue = k % 2;
}

int rusk_e2e_generate(uint64_t n, uint64_t seed, rusk_jobtrace *out, char *err, size_t errlen)
{
	return rusk_e2e_generate_cov(n, seed, RUSK_E2E_HIGH_COV_SHARE, out, err, errlen);
}

int rusk_e2e_generate_cov(uint64_t n, uint64_t seed, double high_cov_share, rusk_jobtrace *out,
                          char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (n == 0 || n > 100000000)
		return rusk_errf(err, errlen, RUSK_EINVAL, "%llu jobs is not in 1..100000000",
		                 (unsigned long long)n);
	rusk_rng r;
	rusk_rng_seed(&r, seed, 0x65326531); /* "e2e1" */
	e2e_class cls[RUSK_E2E_CLASSES];
	double cdf[RUSK_E2E_CLASSES], tot = 0;
	for (int k = 0; k < RUSK_E2E_CLASSES; k++) {
		make_class(&r, k, high_cov_share, &cls[k]);
		tot += 1 / pow(k + 1, 0.8);
		cdf[k] = tot;
	}
	if ((out->jobs = malloc(n * sizeof *out->jobs)) == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory (%llu jobs)",
		                 (unsigned long long)n);
	out->cap = n;
	/* Balanced-means H2 with c^2 = ARRIVAL_CV2: p = (1 + sqrt((c2 - 1) / (c2 + 1))) / 2,
	 * rates 2p / mean and 2(1 - p) / mean. */
	double p1 = (1 + sqrt((ARRIVAL_CV2 - 1) / (ARRIVAL_CV2 + 1))) / 2;
	double l1 = 2 * p1 / MEAN_GAP_S, l2 = 2 * (1 - p1) / MEAN_GAP_S, t = 0;
	for (uint64_t i = 0; i < n; i++) {
		double u = unit(&r) * tot;
		int k = 0;
		while (k + 1 < RUSK_E2E_CLASSES && cdf[k] < u)
			k++;
		const e2e_class *c = &cls[k];
		double pu = unit(&r);
		int ui = 0;
		while (ui + 1 < c->n_users && c->user_cdf[ui] < pu)
			ui++;
		double run = exp(c->mu + c->sigma * normal(&r));
		if (run > 1e8)
			run = 1e8;
		int64_t procs = unit(&r) < 0.3 ? 2 * c->procs : c->procs;
		out->jobs[i] =
		        (rusk_tjob){.id = (int64_t)i + 1,
		                    .submit_s = t,
		                    .wait_s = 0,
		                    .run_s = run,
		                    .req_time_s = -1,
		                    .procs = procs,
		                    .req_procs = procs,
		                    .status = 1,
		                    .user = c->users[ui],
		                    .group = -1,
		                    .exe = c->names[rusk_rng_below(&r, (uint32_t)c->n_names)],
		                    .queue = c->queue,
		                    .partition = -1,
		                    .cls = k,
		                    .line = 0};
		double rate = unit(&r) < p1 ? l1 : l2;
		t += -log(1 - unit(&r)) / rate;
	}
	out->n = n;
	return RUSK_OK;
}

void rusk_e2e_deadlines(rusk_jobtrace *t, uint64_t seed, double slack_pct, double slo_share)
{
	static const double slacks[4] = {20, 40, 60, 80};
	rusk_rng r;
	rusk_rng_seed(&r, seed, 0x646c696e); /* "dlin" */
	for (size_t i = 0; i < t->n; i++) {
		rusk_tjob *j = &t->jobs[i];
		double sl = slack_pct >= 0 ? slack_pct : slacks[rusk_rng_below(&r, 4)];
		if (slo_share >= 0)
			j->queue = rusk_rng_unit(&r) < slo_share ? 0 : 1;
		j->deadline_s =
		        j->queue == 0 && j->run_s > 0 ? j->submit_s + j->run_s * (1 + sl / 100) : 0;
	}
}

double rusk_e2e_scale_load(rusk_jobtrace *t, uint32_t capacity, double load)
{
	if (t->n < 2 || capacity == 0 || !(load > 0))
		return 1;
	double work = 0, t0 = t->jobs[0].submit_s, t1 = t0;
	for (size_t i = 0; i < t->n; i++) {
		const rusk_tjob *j = &t->jobs[i];
		work += (double)j->procs * (j->run_s > 0 ? j->run_s : 0);
		t0 = fmin(t0, j->submit_s);
		t1 = fmax(t1, j->submit_s);
	}
	if (!(work > 0) || !(t1 > t0))
		return 1;
	double f = work / ((double)capacity * load) / (t1 - t0);
	for (size_t i = 0; i < t->n; i++) {
		rusk_tjob *j = &t->jobs[i];
		double d = j->deadline_s > 0 ? j->deadline_s - j->submit_s : 0;
		j->submit_s = t0 + (j->submit_s - t0) * f;
		if (d > 0)
			j->deadline_s = j->submit_s + d;
	}
	return f;
}
