/* SPDX-License-Identifier: MIT */
/*
 * `rusk classify --alloc`: allocation sized to a performance target (Quasar §3.3, §6.5's
 * shape) against reservations, on one generated workload, in virtual time.
 *
 * Setting. --machines machines of su_rus = 8 RUs and 4 memory blocks each, platforms drawn
 * uniformly (seeded) from the generator's 8. The classification model is trained as in
 * `rusk classify` (--workloads rows, --offline of them exhaustively, the others from 2
 * entries). --jobs new jobs (the generator's next rows) arrive at a fixed interval; job j
 * has a nominal size (r0 RUs x b0 blocks on n0 machines, uniform in 1..8, 1..4, 1..4) and
 * its target is the throughput its TRUE rows give at that size on its median platform with
 * no interference, for a completion time D ~ U(0.5, 1.5) x --mean-s (work = target x D).
 * The interval makes the nominal demand (sum of r0 n0 D) --load of the cluster's RU-seconds.
 *
 * Policies (the same jobs, profiles and arrivals):
 *   oracle        rusk_cls_alloc_size on the true rows; tenants' true caused intensities
 *   quasar        rusk_cls_alloc_size on the classified rows (2 profiling entries per
 *                 classification, fold-in); tenants' classified caused intensities
 *   quasar+adjust quasar, plus §3.1's monitoring: a job short of the rate it needs is
 *                 re-sized with its rows corrected by its measured rate (adjust() below)
 *   blind         quasar's sizing with RUSK_CLS_ALLOC_BLIND: no heterogeneity or
 *                 interference knowledge, least-loaded machines ("no profiles")
 *   res+paragon   a user reservation, placed on the machines ranked by classified quality
 *   res+ll        a user reservation, placed on the least-loaded machines
 * A reservation over- or under-sizes the nominal size by Quasar §1's Twitter figures (Fig.
 * 1d): 70% of jobs over-estimate "by up to 10x" (factor U(1, 10)), 20% under-estimate "by
 * up to 5x" (1 / U(1, 5)), 10% reserve the nominal size; the factor multiplies the RUs
 * (r0 n0, packed 8 a machine) and the memory blocks.
 * A job that cannot get its allocation waits (admission control, FIFO with backfilling);
 * a Quasar job whose target no free allocation meets waits too, unless not even an empty
 * cluster could meet it: then it takes the best allocation it can get now. Only
 * quasar+adjust changes an allocation after placement; profiling time is not modelled.
 *
 * Truth. A running job progresses at rusk_cls_perf on its TRUE rows with the pressure its
 * machines' other tenants cause (true caused intensities, per RU); rates are recomputed at
 * every arrival and completion. Reported per policy: the share of jobs meeting their
 * target (completion within 5%: D / response >= 0.95), the mean of min(1, D / response)
 * (Quasar's "% of target achieved"), utilization (busy RUs: each job's Amdahl speed-up in
 * cores, eff(n) n SU[r, b] / SU[1, b], over the cluster's RUs, time-averaged until the
 * last completion), allocated share, overprovisioning 1 - used / allocated, the share of
 * time the reservations asked for (running and waiting) exceed the cluster, and at
 * placement the kernel's Tarcil Q (eq. 1-5 on the true profile, times the job's platform
 * speed over its fastest) and the true slowdown 1 / I.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/classify.h>

#include "base/rng.h"
#include "cli.h"
#include "outfile.h"

#define RUS    8
#define BLOCKS 4
#define SO     16
#define PLATS  8

enum { P_ORACLE, P_QUASAR, P_ADJUST, P_BLIND, P_RES_PARAGON, P_RES_LL, N_POL };
static const char *const pol_name[N_POL] = {"oracle", "quasar",      "quasar+adjust",
                                            "blind",  "res+paragon", "res+ll"};

typedef struct aopts {
	uint64_t jobs, machines, workloads, offline, families, seed;
	double load, mean_s, noise;
	bool alloc;
	const char *json;
} aopts;

typedef struct job {
	double arrive, deadline_s, work, target; /* target: units/s */
	uint32_t row, r0, b0, n0;                /* nominal size */
	uint32_t res_r, res_b, res_n;            /* the user's reservation */
	rusk_cls_job_estimate est, truth;        /* classified and true rows */
	bool feasible_empty[N_POL];              /* target reachable on an empty cluster */
} job;

typedef struct run {
	uint32_t r, b, n, m[SO];
	double left, rate, start, finish;
	double checked; /* quasar+adjust: last look at its progress */
	uint32_t adjusts;
	bool running, done;
} run;

typedef struct result {
	double dec_p50_us, dec_p99_us, adjusts_per_job, met, achieved, norm_mean, wait_mean, util,
	        alloc, overprov, over_cap, q, slow, rus_per_job, makespan;
	uint32_t placed;
} result;

typedef struct world {
	const aopts *o;
	rusk_cls_shape sh;
	uint32_t nm, *plat;
	job *jobs;
} world;

static void usage(void)
{
	puts("usage: rusk classify --alloc [options]\n"
	     "\n"
	     "Allocation sized to a performance target (Quasar §3.3) against reservations, on\n"
	     "the seeded generator in virtual time: oracle sizing from the true rows, Quasar\n"
	     "sizing from classified rows, the same with monitoring and re-sizing\n"
	     "(quasar+adjust), the same without profiles (blind), and user\n"
	     "reservations (70% over-sized up to 10x, 20% under-sized up to 5x) placed by\n"
	     "classified quality (Paragon) or on the least-loaded machines.\n"
	     "\n"
	     "  --jobs N        jobs (default 1200)\n"
	     "  --machines N    machines of 8 RUs x 4 memory blocks (default 200)\n"
	     "  --load X        nominal demand over the cluster's RU-seconds (default 0.8)\n"
	     "  --mean-s X      mean target completion time, seconds (default 300)\n"
	     "  --workloads N   training rows of the model (default 1000)\n"
	     "  --offline N     of them profiled exhaustively (default 100)\n"
	     "  --families N    workload families of the generator (default 6)\n"
	     "  --noise X       relative measurement noise of profiling (default 0.03)\n"
	     "  --seed N        generator, cluster, jobs and profiling seed (default 1)\n"
	     "  --json FILE     the results as JSON\n"
	     "\n"
	     "exit status: 0 ok, 1 a model failed to train, 2 bad usage");
}

static double unif(rusk_rng *r, double lo, double hi)
{
	return lo + (hi - lo) * rusk_rng_unit(r);
}

static void true_rows(const rusk_cls_truth *t, uint32_t u, rusk_cls_job_estimate *e)
{
	memset(e, 0, sizeof *e);
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		const rusk_cls_matrix *m = rusk_cls_truth_matrix(t, k);
		e->cols[k] = rusk_cls_matrix_cols(m);
		for (uint32_t i = 0; i < e->cols[k]; i++)
			e->v[k][i] = rusk_cls_matrix_get(m, u, i);
	}
}

static int train(const aopts *o, const rusk_cls_truth *t, rusk_classifier **out)
{
	rusk_cls_params p[RUSK_CLS_KINDS];
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_params_init(&p[k], rusk_cls_matrix_cols(rusk_cls_truth_matrix(t, k)));
	char err[256];
	if (rusk_classifier_create(p, out, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk classify: %s\n", err);
		return RUSK_EXIT_FAIL;
	}
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		const rusk_cls_matrix *m = rusk_cls_truth_matrix(t, k);
		for (uint32_t u = 0; u < o->workloads; u++) {
			rusk_cls_entry e[RUSK_CLS_MAX_COLS];
			uint32_t n = 0;
			rusk_cls_profile_row(m, k, u, u < o->offline ? RUSK_CLS_MAX_COLS : 2,
			                     o->noise, o->seed * 31 + 1, e, &n);
			if (n > 0)
				rusk_cls_add_row(rusk_classifier_get(*out, k), e, n, NULL, NULL, 0);
		}
	}
	if (rusk_classifier_retrain(*out, NULL, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk classify: %s\n", err);
		return RUSK_EXIT_FAIL;
	}
	return 0;
}

static double median_h(const rusk_cls_job_estimate *e)
{
	double h[PLATS];
	for (int j = 0; j < PLATS; j++) {
		double x = e->v[RUSK_CLS_HETEROGENEITY][j] / e->v[RUSK_CLS_SCALE_UP][0];
		int i = j;
		for (; i > 0 && h[i - 1] > x; i--)
			h[i] = h[i - 1];
		h[i] = x;
	}
	return 0.5 * (h[PLATS / 2 - 1] + h[PLATS / 2]);
}

/* The user's reservation: the nominal size scaled by the Twitter over/under-estimate. */
static void reserve(job *j, rusk_rng *r)
{
	double u = rusk_rng_unit(r);
	double f = u < 0.7 ? unif(r, 1, 10) : u < 0.9 ? 1.0 / unif(r, 1, 5) : 1.0;
	double x = round(f * j->r0 * j->n0);
	uint32_t rus = x < 1 ? 1 : x > RUS * SO ? RUS * SO : (uint32_t)x;
	j->res_r = rus < RUS ? rus : RUS;
	j->res_n = (rus + j->res_r - 1) / j->res_r;
	double b = ceil(f * j->b0);
	j->res_b = b < 1 ? 1 : b > BLOCKS ? BLOCKS : (uint32_t)b;
}

static int make_jobs(world *w, const rusk_cls_truth *t, const rusk_classifier *c)
{
	const aopts *o = w->o;
	rusk_rng r;
	rusk_rng_seed(&r, o->seed, 0x6a6f6273); /* "jobs" */
	double demand = 0;
	for (uint32_t i = 0; i < o->jobs; i++) {
		job *j = &w->jobs[i];
		j->row = (uint32_t)o->workloads + i;
		true_rows(t, j->row, &j->truth);
		rusk_cls_entry e[RUSK_CLS_KINDS][2];
		rusk_cls_job_profile jp;
		for (int k = 0; k < RUSK_CLS_KINDS; k++) {
			rusk_cls_profile_row(rusk_cls_truth_matrix(t, k), k, j->row, 2, o->noise,
			                     o->seed * 31 + 2, e[k], &jp.n[k]);
			jp.e[k] = e[k];
		}
		if (rusk_classifier_classify(c, &jp, &j->est) != RUSK_OK)
			return RUSK_EXIT_FAIL;
		j->r0 = 1 + rusk_rng_below(&r, RUS);
		j->b0 = 1 + rusk_rng_below(&r, BLOCKS);
		j->n0 = 1 + rusk_rng_below(&r, 4);
		const double *so = j->truth.v[RUSK_CLS_SCALE_OUT];
		double su = j->truth.v[RUSK_CLS_SCALE_UP][(j->r0 - 1) * BLOCKS + j->b0 - 1];
		j->target = so[j->n0 - 1] / so[0] * su * median_h(&j->truth);
		j->deadline_s = o->mean_s * unif(&r, 0.5, 1.5);
		j->work = j->target * j->deadline_s;
		reserve(j, &r);
		demand += (double)j->r0 * j->n0 * j->deadline_s;
	}
	double interval = demand / (o->load * w->nm * RUS * o->jobs);
	for (uint32_t i = 0; i < o->jobs; i++)
		w->jobs[i].arrive = i * interval;
	return 0;
}

/* ---- the virtual-time loop --------------------------------------------------------- */

typedef struct rusk_cand {
	double q;
	uint32_t free, idx;
} rusk_cand;

typedef struct sim {
	const world *w;
	int pol;
	run *runs;
	uint32_t *free_rus, *free_mem;
	double (*sum_true)[RUSK_N_RESOURCES], (*sum_cls)[RUSK_N_RESOURCES];
	uint32_t *queue, nq;
	rusk_cls_machine *snap; /* the machines as the policy sees them */
	rusk_cand *cands;
	bool dirty;     /* snap is out of date */
	double *dec_us; /* wall time of rusk_cls_alloc_size calls, microseconds */
	uint32_t n_dec;
	double now, busy_int, alloc_int, over_cap_t, q_sum, slow_sum, rus_sum;
	uint32_t placed;
} sim;

static const double *caused_true(const job *j)
{
	return &j->truth.v[RUSK_CLS_INTERFERENCE][RUSK_N_RESOURCES];
}

/* The caused intensities the policy believes (oracle: the truth; others: classified). */
static const double *caused_known(const sim *s, const job *j)
{
	return s->pol == P_ORACLE ? caused_true(j)
	                          : &j->est.v[RUSK_CLS_INTERFERENCE][RUSK_N_RESOURCES];
}

/* Per-RU pressure on machine m, less job j's own share when it is a tenant (self). */
static void pressure(const double (*sum)[RUSK_N_RESOURCES], uint32_t m, const double *self,
                     uint32_t self_rus, double *out)
{
	for (int r = 0; r < RUSK_N_RESOURCES; r++) {
		double x = sum[m][r] - (self ? self[r] * self_rus : 0);
		out[r] = (x > 0 ? x : 0) / RUS;
	}
}

static double true_rate(const sim *s, uint32_t ji)
{
	const job *j = &s->w->jobs[ji];
	const run *x = &s->runs[ji];
	uint32_t pl[SO];
	double pr[SO][RUSK_N_RESOURCES];
	for (uint32_t i = 0; i < x->n; i++) {
		pl[i] = s->w->plat[x->m[i]];
		pressure(s->sum_true, x->m[i], caused_true(j), x->r, pr[i]);
	}
	return rusk_cls_perf(&s->w->sh, &j->truth, x->r, x->b, x->n, pl,
	                     (const double(*)[RUSK_N_RESOURCES])pr, 0);
}

/* Busy RUs of a running job: its speed-up in cores' worth (true rows). */
static double busy(const sim *s, uint32_t ji)
{
	const job *j = &s->w->jobs[ji];
	const run *x = &s->runs[ji];
	const double *su = j->truth.v[RUSK_CLS_SCALE_UP], *so = j->truth.v[RUSK_CLS_SCALE_OUT];
	return so[x->n - 1] / so[0] * su[(x->r - 1) * BLOCKS + x->b - 1] / su[x->b - 1];
}

static void snapshot(const sim *s, rusk_cls_machine *m, bool empty)
{
	for (uint32_t i = 0; i < s->w->nm; i++) {
		m[i].platform = s->w->plat[i];
		m[i].free_rus = empty ? RUS : s->free_rus[i];
		m[i].free_mem_blocks = empty ? BLOCKS : s->free_mem[i];
		const double(*sum)[RUSK_N_RESOURCES] =
		        s->pol == P_ORACLE ? s->sum_true : s->sum_cls;
		for (int r = 0; r < RUSK_N_RESOURCES; r++)
			/* The running sums add and subtract doubles: an idle machine's may end
			 * at -4e-16, which the allocator rightly refuses as a pressure. */
			m[i].pressure[r] = empty ? 0 : fmax(0.0, sum[i][r] / RUS);
	}
}

static int cmp_cand(const void *a, const void *b)
{
	const rusk_cand *x = a, *y = b;
	if (x->q != y->q)
		return x->q > y->q ? -1 : 1;
	if (x->free != y->free)
		return x->free > y->free ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* A reservation's fixed size on the res_n best machines with room: Paragon ranks by the
 * classified quality (platform x interference, as the allocator does), least-loaded by free
 * RUs. False when fewer machines have room. */
static bool place_reservation(sim *s, uint32_t ji, const rusk_cls_machine *m, run *x)
{
	const job *j = &s->w->jobs[ji];
	rusk_cand *c = s->cands;
	uint32_t k = 0;
	for (uint32_t i = 0; i < s->w->nm; i++) /* cheap refusal first: most waiting jobs */
		k += m[i].free_rus >= j->res_r && m[i].free_mem_blocks >= j->res_b;
	if (k < j->res_n)
		return false;
	k = 0;
	for (uint32_t i = 0; i < s->w->nm; i++) {
		if (m[i].free_rus < j->res_r || m[i].free_mem_blocks < j->res_b)
			continue;
		double q = m[i].free_rus;
		if (s->pol == P_RES_PARAGON)
			q = rusk_cls_perf(&s->w->sh, &j->est, 1, 1, 1, &m[i].platform,
			                  (const double(*)[RUSK_N_RESOURCES])m[i].pressure, 0);
		c[k++] = (rusk_cand){q, m[i].free_rus, i};
	}
	qsort(c, k, sizeof *c, cmp_cand);
	*x = (run){.r = j->res_r, .b = j->res_b, .n = j->res_n};
	for (uint32_t i = 0; i < x->n; i++)
		x->m[i] = c[i].idx;
	return true;
}

/* Chooses job ji's allocation now; false when it must wait. */
static bool choose(sim *s, uint32_t ji, run *x)
{
	const job *j = &s->w->jobs[ji];
	rusk_cls_target tg = {RUSK_CLS_TARGET_COMPLETION, j->deadline_s, j->work};
	rusk_cls_alloc a;
	rusk_cls_machine *m = s->snap;
	if (s->dirty)
		snapshot(s, m, false);
	s->dirty = false;
	if (s->pol <= P_BLIND) {
		const rusk_cls_job_estimate *e = s->pol == P_ORACLE ? &j->truth : &j->est;
		unsigned fl = s->pol == P_BLIND ? RUSK_CLS_ALLOC_BLIND : 0;
		double t0 = cli_now_s();
		int rc = rusk_cls_alloc_size(&s->w->sh, e, &tg, m, s->w->nm, fl, &a);
		if (s->n_dec < s->w->o->jobs * 4) /* the first decisions: enough for quantiles */
			s->dec_us[s->n_dec++] = (cli_now_s() - t0) * 1e6;
		if (rc != RUSK_OK && (j->feasible_empty[s->pol] || a.machines == 0))
			return false;
		*x = (run){.r = a.rus, .b = a.mem_blocks, .n = a.machines};
		memcpy(x->m, a.machine, sizeof x->m[0] * a.machines);
		return true;
	}
	return place_reservation(s, ji, m, x);
}

static double h_of(const job *j, uint32_t p)
{
	return j->truth.v[RUSK_CLS_HETEROGENEITY][p] / j->truth.v[RUSK_CLS_SCALE_UP][0];
}

/* Takes (sign 1) or gives back (-1) allocation x of job j on its machines. */
static void commit(sim *s, const job *j, const run *x, int sign)
{
	for (uint32_t i = 0; i < x->n; i++) {
		uint32_t m = x->m[i];
		s->free_rus[m] -= sign * (int)x->r;
		s->free_mem[m] -= sign * (int)x->b;
		for (int k = 0; k < RUSK_N_RESOURCES; k++) {
			s->sum_true[m][k] += sign * (double)x->r * caused_true(j)[k];
			s->sum_cls[m][k] += sign * (double)x->r * caused_known(s, j)[k];
		}
	}
	s->dirty = true;
}

/* Commits job ji's allocation x at s->now; records Q and slowdown at placement. */
static void place(sim *s, uint32_t ji, const run *x)
{
	const job *j = &s->w->jobs[ji];
	run *r = &s->runs[ji];
	double hmax = 0, q = 0, slow = 0;
	for (uint32_t p = 0; p < PLATS; p++)
		hmax = fmax(hmax, h_of(j, p));
	for (uint32_t i = 0; i < x->n; i++) {
		uint32_t m = x->m[i];
		double pr[RUSK_N_RESOURCES];
		pressure(s->sum_true, m, NULL, 0, pr);
		q += rusk_cls_tarcil_q(caused_true(j), pr) * h_of(j, s->w->plat[m]) / hmax;
		slow += 1.0 / rusk_cls_interference_factor(j->truth.v[RUSK_CLS_INTERFERENCE], pr);
	}
	commit(s, j, x, 1);
	*r = *x;
	r->running = true;
	r->start = s->now;
	r->left = j->work;
	r->checked = s->now;
	s->q_sum += q / x->n;
	s->slow_sum += slow / x->n;
	s->rus_sum += (double)x->r * x->n;
	s->placed++;
	s->dirty = true;
}

static void release(sim *s, uint32_t ji)
{
	run *r = &s->runs[ji];
	commit(s, &s->w->jobs[ji], r, -1);
	r->running = false;
	r->done = true;
	r->finish = s->now;
	s->dirty = true;
}

/* Places what it can from the FIFO queue (later jobs may pass one that does not fit). */
static void drain(sim *s)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < s->nq; i++) {
		run x;
		uint32_t ji = s->queue[i];
		if (choose(s, ji, &x))
			place(s, ji, &x);
		else
			s->queue[k++] = ji;
	}
	s->nq = k;
}

/* Advances virtual time to t: progress and the time integrals. */
static void advance(sim *s, double t)
{
	double dt = t - s->now, alloc = 0, used = 0, asked = 0;
	const uint32_t nj = (uint32_t)s->w->o->jobs;
	for (uint32_t i = 0; i < nj; i++) {
		run *r = &s->runs[i];
		if (!r->running)
			continue;
		r->left -= r->rate * dt;
		alloc += (double)r->r * r->n;
		used += busy(s, i);
	}
	asked = alloc;
	if (s->pol >= P_RES_PARAGON)
		for (uint32_t i = 0; i < s->nq; i++) {
			const job *j = &s->w->jobs[s->queue[i]];
			asked += (double)j->res_r * j->res_n;
		}
	s->alloc_int += alloc * dt;
	s->busy_int += used * dt;
	if (asked > (double)s->w->nm * RUS)
		s->over_cap_t += dt;
	s->now = t;
}

static void rates(sim *s)
{
	for (uint32_t i = 0; i < s->w->o->jobs; i++)
		if (s->runs[i].running)
			s->runs[i].rate = true_rate(s, i);
}

/* The rows' estimate of job ji's throughput where it runs now (what Quasar predicts). */
static double est_rate(const sim *s, uint32_t ji)
{
	const job *j = &s->w->jobs[ji];
	const run *x = &s->runs[ji];
	uint32_t pl[SO];
	double pr[SO][RUSK_N_RESOURCES];
	for (uint32_t i = 0; i < x->n; i++) {
		pl[i] = s->w->plat[x->m[i]];
		pressure(s->sum_cls, x->m[i], caused_known(s, j), x->r, pr[i]);
	}
	return rusk_cls_perf(&s->w->sh, &j->est, x->r, x->b, x->n, pl,
	                     (const double(*)[RUSK_N_RESOURCES])pr, 0);
}

/*
 * quasar+adjust: Quasar's monitoring (§3.1: "If the constraint is not met at some point
 * ... Quasar adjusts the allocation"). Every tenth of its target time a running job's
 * measured rate is compared with the rate it needs to finish on time; when short, the
 * ratio measured / estimated corrects its rows (the feedback of §3.2) and it is re-sized
 * from scratch on the machines free now plus its own. The new allocation replaces the old
 * only if it is estimated to be faster; moving is free (not modelled).
 */
static bool adjust(sim *s)
{
	bool changed = false;
	for (uint32_t i = 0; i < s->w->o->jobs; i++) {
		run *r = &s->runs[i];
		const job *j = &s->w->jobs[i];
		if (!r->running || s->now - r->checked < j->deadline_s / 10)
			continue;
		r->checked = s->now;
		double left_s = j->arrive + j->deadline_s - s->now;
		double need = left_s > 0 ? r->left / left_s : INFINITY;
		if (r->rate >= need)
			continue;
		double corr = r->rate / est_rate(s, i);
		run old = *r;
		commit(s, j, &old, -1);
		snapshot(s, s->snap, false);
		rusk_cls_target tg = {RUSK_CLS_TARGET_THROUGHPUT, isinf(need) ? 1e300 : need / corr,
		                      0};
		rusk_cls_alloc a;
		rusk_cls_alloc_size(&s->w->sh, &j->est, &tg, s->snap, s->w->nm, 0, &a);
		if (a.machines > 0 && a.perf * corr > r->rate * 1.01) {
			r->r = a.rus;
			r->b = a.mem_blocks;
			r->n = a.machines;
			memcpy(r->m, a.machine, sizeof r->m[0] * a.machines);
			r->adjusts++;
			changed = true;
		}
		commit(s, j, r, 1);
	}
	return changed;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int simulate(const world *w, int pol, result *res)
{
	const aopts *o = w->o;
	uint32_t nj = (uint32_t)o->jobs, nm = w->nm;
	sim s = {.w = w, .pol = pol, .dirty = true};
	s.runs = calloc(nj, sizeof *s.runs);
	s.free_rus = malloc(sizeof *s.free_rus * nm);
	s.free_mem = malloc(sizeof *s.free_mem * nm);
	s.sum_true = calloc(nm, sizeof *s.sum_true);
	s.sum_cls = calloc(nm, sizeof *s.sum_cls);
	s.queue = malloc(sizeof *s.queue * nj);
	s.snap = malloc(sizeof *s.snap * nm);
	s.cands = malloc(sizeof *s.cands * nm);
	s.dec_us = malloc(sizeof *s.dec_us * nj * 4);
	int rc = 0;
	if (!s.runs || !s.free_rus || !s.free_mem || !s.sum_true || !s.sum_cls || !s.queue ||
	    !s.snap || !s.cands || !s.dec_us) {
		rc = RUSK_EXIT_NOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < nm; i++) {
		s.free_rus[i] = RUS;
		s.free_mem[i] = BLOCKS;
	}
	uint32_t next = 0, running = 0;
	for (;;) {
		double t_arr = next < nj ? w->jobs[next].arrive : INFINITY, t_done = INFINITY;
		uint32_t first = UINT32_MAX;
		for (uint32_t i = 0; i < nj; i++) {
			const run *r = &s.runs[i];
			if (!r->running)
				continue;
			double t = s.now + (r->left > 0 ? r->left / r->rate : 0);
			if (t < t_done) {
				t_done = t;
				first = i;
			}
		}
		if (isinf(t_arr) && isinf(t_done))
			break; /* done, or waiting jobs that nothing can ever place */
		if (t_done <= t_arr) {
			advance(&s, t_done);
			release(&s, first);
			running--;
			drain(&s);
		} else {
			advance(&s, t_arr);
			/* Behind the waiting jobs, FIFO with backfilling as at completions. */
			s.queue[s.nq++] = next++;
			drain(&s);
		}
		running = 0;
		for (uint32_t i = 0; i < nj; i++)
			running += s.runs[i].running;
		rates(&s);
		if (pol == P_ADJUST && adjust(&s))
			rates(&s);
	}
	(void)running;
	double cap = (double)nm * RUS, span = s.now > 0 ? s.now : 1;
	uint32_t met = 0;
	double ach = 0, norm = 0, wait = 0, adj = 0;
	for (uint32_t i = 0; i < nj; i++) {
		const run *r = &s.runs[i];
		const job *j = &w->jobs[i];
		if (!r->done)
			continue; /* never placed: counts as 0 achieved */
		double x = j->deadline_s / (r->finish - j->arrive);
		met += x >= 0.95;
		ach += fmin(1.0, x);
		norm += x;
		wait += r->start - j->arrive;
		adj += r->adjusts;
	}
	double p50 = 0, p99 = 0;
	if (s.n_dec > 0) {
		qsort(s.dec_us, s.n_dec, sizeof *s.dec_us, cmp_double);
		p50 = s.dec_us[s.n_dec / 2];
		p99 = s.dec_us[(uint32_t)(0.99 * (s.n_dec - 1))];
	}
	*res = (result){.dec_p50_us = p50,
	                .dec_p99_us = p99,
	                .adjusts_per_job = adj / nj,
	                .met = (double)met / nj,
	                .achieved = ach / nj,
	                .norm_mean = norm / (s.placed ? s.placed : 1),
	                .wait_mean = wait / (s.placed ? s.placed : 1),
	                .util = s.busy_int / (cap * span),
	                .alloc = s.alloc_int / (cap * span),
	                .overprov = s.alloc_int > 0 ? 1 - s.busy_int / s.alloc_int : 0,
	                .over_cap = s.over_cap_t / span,
	                .q = s.q_sum / (s.placed ? s.placed : 1),
	                .slow = s.slow_sum / (s.placed ? s.placed : 1),
	                .rus_per_job = s.rus_sum / (s.placed ? s.placed : 1),
	                .makespan = s.now,
	                .placed = s.placed};
out:
	free(s.runs);
	free(s.free_rus);
	free(s.free_mem);
	free(s.sum_true);
	free(s.sum_cls);
	free(s.queue);
	free(s.snap);
	free(s.cands);
	free(s.dec_us);
	return rc;
}

/* Which jobs could meet their target on an empty cluster, per sizing policy. */
static int feasibility(world *w)
{
	uint32_t nm = w->nm;
	rusk_cls_machine *m = malloc(sizeof *m * nm);
	if (m == NULL)
		return RUSK_EXIT_NOMEM;
	for (uint32_t i = 0; i < nm; i++)
		m[i] = (rusk_cls_machine){
		        .platform = w->plat[i], .free_rus = RUS, .free_mem_blocks = BLOCKS};
	for (uint32_t ji = 0; ji < w->o->jobs; ji++) {
		job *j = &w->jobs[ji];
		rusk_cls_target tg = {RUSK_CLS_TARGET_COMPLETION, j->deadline_s, j->work};
		rusk_cls_alloc a;
		for (int p = P_ORACLE; p <= P_BLIND; p++)
			j->feasible_empty[p] =
			        rusk_cls_alloc_size(
			                &w->sh, p == P_ORACLE ? &j->truth : &j->est, &tg, m, nm,
			                p == P_BLIND ? RUSK_CLS_ALLOC_BLIND : 0, &a) == RUSK_OK;
	}
	free(m);
	return 0;
}

static void print_results(const world *w, const result *r)
{
	const aopts *o = w->o;
	printf("rusk classify --alloc: generator, %" PRIu64 " jobs on %u machines x %d RUs x %d "
	       "memory blocks (%d platforms); nominal load %g, mean target %g s; model: %" PRIu64
	       " training rows (%" PRIu64 " exhaustive), 2 entries per classification, noise %g; "
	       "seed %" PRIu64 "\n\n",
	       o->jobs, w->nm, RUS, BLOCKS, PLATS, o->load, o->mean_s, o->workloads, o->offline,
	       o->noise, o->seed);
	printf("  policy          met   achieved  norm  wait(s)  util  alloc  overprov  >cap  "
	       "tarcilQ  slowdown  RUs/job\n");
	for (int p = 0; p < N_POL; p++)
		printf("  %-14s %5.1f%%  %5.1f%%  %5.2f  %7.1f  %4.1f%%  %4.1f%%  %6.1f%%  %4.0f%% "
		       " "
		       "%7.3f  %8.3f  %7.1f\n",
		       pol_name[p], 100 * r[p].met, 100 * r[p].achieved, r[p].norm_mean,
		       r[p].wait_mean, 100 * r[p].util, 100 * r[p].alloc, 100 * r[p].overprov,
		       100 * r[p].over_cap, r[p].q, r[p].slow, r[p].rus_per_job);
	printf("\n  met: completion within 5%% of target; achieved: mean min(1, target / response);"
	       "\n  norm: mean target / response of placed jobs; util: busy RUs (speed-up in "
	       "cores) over capacity;\n  alloc: allocated RUs over capacity; overprov: 1 - used "
	       "/ allocated; >cap: time the\n  reservations asked for (running and waiting) "
	       "exceed the cluster; tarcilQ, slowdown:\n  at placement, true profiles.\n");
	printf("\n  rusk_cls_alloc_size over %u machines (quasar): p50 %.1f us, p99 %.1f us per "
	       "decision\n",
	       w->nm, r[P_QUASAR].dec_p50_us, r[P_QUASAR].dec_p99_us);
}

static void write_json(FILE *f, const world *w, const result *r)
{
	const aopts *o = w->o;
	fprintf(f,
	        "{\n  \"config\": {\"source\": \"generator\", \"jobs\": %" PRIu64
	        ", \"machines\": %u, \"rus_per_machine\": %d, \"mem_blocks\": %d, "
	        "\"platforms\": %d, \"load\": %g, \"mean_s\": %g, \"workloads\": %" PRIu64
	        ", \"offline\": %" PRIu64 ", \"families\": %" PRIu64 ", \"noise\": %g, "
	        "\"seed\": %" PRIu64 "},\n  \"policies\": [",
	        o->jobs, w->nm, RUS, BLOCKS, PLATS, o->load, o->mean_s, o->workloads, o->offline,
	        o->families, o->noise, o->seed);
	for (int p = 0; p < N_POL; p++)
		fprintf(f,
		        "%s\n    {\"policy\": \"%s\", \"placed\": %u, \"met\": %.6f, "
		        "\"achieved\": %.6f, \"norm_mean\": %.6f, \"wait_mean_s\": %.3f, "
		        "\"util\": %.6f, \"alloc\": %.6f, \"overprov\": %.6f, \"over_cap\": %.6f, "
		        "\"tarcil_q\": %.6f, \"slowdown\": %.6f, \"rus_per_job\": %.3f, "
		        "\"adjusts_per_job\": %.3f, \"alloc_decision_us_p50\": %.3f, "
		        "\"alloc_decision_us_p99\": %.3f, \"makespan_s\": %.3f}",
		        p ? "," : "", pol_name[p], r[p].placed, r[p].met, r[p].achieved,
		        r[p].norm_mean, r[p].wait_mean, r[p].util, r[p].alloc, r[p].overprov,
		        r[p].over_cap, r[p].q, r[p].slow, r[p].rus_per_job, r[p].adjusts_per_job,
		        r[p].dec_p50_us, r[p].dec_p99_us, r[p].makespan);
	fprintf(f, "\n  ]\n}\n");
}

int rusk_cmd_classify_alloc(int argc, char **argv)
{
	aopts o = {.jobs = 1200,
	           .machines = 200,
	           .workloads = 1000,
	           .offline = 100,
	           .families = 6,
	           .seed = 1,
	           .load = 0.8,
	           .mean_s = 300,
	           .noise = 0.03};
	const cli_opt opts_[] = {
	        {CLI_FLAG_OPT("--alloc", &o.alloc)},
	        {CLI_U64_OPT("--jobs", 1, 100000, &o.jobs)},
	        {CLI_U64_OPT("--machines", SO, 100000, &o.machines)},
	        {CLI_DOUBLE_OPT("--load", 0.01, 10, &o.load)},
	        {CLI_DOUBLE_OPT("--mean-s", 0.001, 1e7, &o.mean_s)},
	        {CLI_U64_OPT("--workloads", 2, 1000000, &o.workloads)},
	        {CLI_U64_OPT("--offline", 0, 1000000, &o.offline)},
	        {CLI_U64_OPT("--families", 1, 64, &o.families)},
	        {CLI_DOUBLE_OPT("--noise", 0, 1, &o.noise)},
	        {CLI_U64_OPT("--seed", 0, 9007199254740992.0 /* 2^53 */, &o.seed)},
	        {CLI_FILE_OPT("--json", &o.json)},
	};
	int r = cli_parse("classify", argc, argv, NULL, opts_, sizeof opts_ / sizeof opts_[0],
	                  usage);
	if (r != 0)
		return r > 0 ? 0 : RUSK_EXIT_USAGE;
	if (o.offline > o.workloads) {
		fprintf(stderr,
		        "rusk: --offline: %" PRIu64 " is more than --workloads %" PRIu64 "\n",
		        o.offline, o.workloads);
		return RUSK_EXIT_USAGE;
	}
	cli_out jo = {.flag = "--json", .path = o.json};
	if ((r = cli_files_open(NULL, 0, &jo, 1)) != 0)
		return r;
	rusk_thread_register();
	world w = {.o = &o, .sh = {RUS, BLOCKS, SO, PLATS}, .nm = (uint32_t)o.machines};
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = (uint32_t)(o.workloads + o.jobs);
	gp.families = (uint32_t)o.families;
	gp.su_rus = RUS;
	gp.su_mem_blocks = BLOCKS;
	gp.so_machines = SO;
	gp.platforms = PLATS;
	gp.seed = o.seed;
	rusk_cls_truth *t = NULL;
	rusk_classifier *c = NULL;
	char err[256];
	result res[N_POL];
	int rc = 0;
	w.jobs = calloc(o.jobs, sizeof *w.jobs);
	w.plat = malloc(sizeof *w.plat * w.nm);
	if (w.jobs == NULL || w.plat == NULL) {
		rc = RUSK_EXIT_NOMEM;
		goto out;
	}
	if (rusk_cls_truth_generate(&gp, &t, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk classify: %s\n", err);
		rc = RUSK_EXIT_USAGE;
		goto out;
	}
	rc = train(&o, t, &c);
	if (rc != 0)
		goto out;
	rusk_rng pr;
	rusk_rng_seed(&pr, o.seed, 0x706c6174); /* "plat" */
	for (uint32_t i = 0; i < w.nm; i++)
		w.plat[i] = rusk_rng_below(&pr, PLATS);
	rc = make_jobs(&w, t, c);
	if (rc != 0)
		goto out;
	rc = feasibility(&w);
	if (rc != 0)
		goto out;
	for (int p = 0; p < N_POL && rc == 0; p++)
		rc = simulate(&w, p, &res[p]);
	if (rc != 0)
		goto out;
	print_results(&w, res);
	if (jo.f != NULL)
		write_json(jo.f, &w, res);
	if (cli_out_close(&jo) != 0)
		rc = RUSK_EXIT_FAIL;
out:
	cli_out_discard(&jo); /* not written (a failure): a previous --json stays as it was */
	free(w.jobs);
	free(w.plat);
	rusk_classifier_destroy(c);
	rusk_cls_truth_destroy(t);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return rc;
}
