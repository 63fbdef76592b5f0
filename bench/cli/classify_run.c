/* SPDX-License-Identifier: MIT */
/*
 * `rusk run/sim --classify on|oracle` and `--target on` (driver.h): Quasar's classification
 * (§3.2) and allocation to a target (§3.3) inside the kernel's own scheduling loop.
 *
 * Workloads. At setup a seeded generator (rusk_cls_truth_generate, seed = --seed) makes
 * CLS_TRAIN + CLS_POOL workloads of six families; a classifier is trained on the first
 * CLS_TRAIN (CLS_OFFLINE of them profiled exhaustively, the rest with 2 entries, as `rusk
 * classify`), off the decision path. Each task of the run is drawn as one of the CLS_POOL
 * other workloads (uniform, its own seeded stream): its TRUE caused-interference profile is
 * that row's last RUSK_N_RESOURCES columns.
 *
 * Modes. on: the task is profiled with 2 noisy entries per classification (3% noise) and
 * its interference row classified by fold-in; the placement uses the CLASSIFIED caused
 * profile. oracle: the placement uses the true profile (the same tasks: the same draws, no
 * classification). none: the same tasks placed with no profile at all (all zero: the
 * kernel's Q sees neither what a task causes nor what its machines' tenants cause). Either way the
 * driver keeps, per machine, the sum of its tenants' TRUE caused intensities (a shadow of the
 * kernel's sums, which hold what the scheduler believes), and at each placement evaluates Tarcil's
 * Q (eq. 1-5, platform-scaled, as the kernel reports it: after the commit) with the true profile
 * against the true sums. That is "Q under true profiles"; with oracle it equals the kernel's own Q.
 *
 * Feedback (on). The first CLS_FB_MAX classified tasks join the interference model as
 * training rows with their two profiled entries; at completion what was measured while it
 * ran replaces the estimates (rusk_cls_feedback): by default only the caused half of its
 * interference row (3% noise), which a machine's counters observe for the task it hosts;
 * the tolerated intensities are not fed back, since measuring them means injecting
 * contention (§3.2's profiling), not watching a run. --cls-feedback full feeds back the
 * whole row (every column: exhaustive profiling, the behaviour before). Once CLS_FB_BATCH
 * rows have come back the model is retrained and republished (RCU) from the per-second
 * sampler, off the decision path. The error of the caused columns is reported per model
 * version. With --target on the same tasks join the three sizing models (scale-up,
 * scale-out, heterogeneity) with their two profiled entries each, and a task that ran at
 * its allocation feeds back what its run observed, as `rusk classify --feedback-entries
 * observed` does: the scale-up entry of its RUs x blocks per machine, the scale-out entry
 * of its machine count, the heterogeneity entry of the platform its first RU's machine has
 * (one noisy measurement each, from a stream seeded by the task; --cls-feedback full:
 * whole rows). Every CLS_FB_BATCH such tasks the three are retrained and republished; the
 * error of their classified rows (the entries not profiled) is reported per model version.
 *
 * Target (--target on). A task states a completion time D (the trace's target_s, else its
 * duration x U(0.5, 1.5)) for an amount of work: what its TRUE rows do in its duration at
 * its nominal size (its RUs packed su_rus = the cluster's RUs per machine a machine, 4
 * memory blocks, the median platform, no tenant), so a target below the duration needs
 * more than the nominal size. rusk_cls_alloc_size sizes it from the classified rows (oracle: true
 * rows) over up to CLS_CANDS machines of the live cluster (a seeded sample when larger:
 * platform column = the machine's platform, pressure = the kernel's caused sums per RU,
 * free memory blocks = the machine's free memory over block_mib, at most CLS_BLOCKS). The
 * scale-up shape is the cluster's: su_rus = the median machine's RUs (at most 32), and a
 * memory block is 1/CLS_BLOCKS of the memory su_rus RUs have at the median memory per RU
 * (median_shape: 16,384 MiB for rusk's generic machines of 8 RUs and 65,536 MiB). Mapping
 * onto rusk's task of N RUs: one machine -> N = RUs, RUSK_PLACE_MACHINE, and its blocks x
 * block_mib as rusk_vec_demand.mem_mib, committed with its RUs (a vector task: choose_vec);
 * k machines -> N = k x RUs, RUSK_PLACE_ANY (the agents spread it as their sampling finds
 * room; rusk has no "k machines of r RUs" shape, and a vector demand is one machine's), so
 * its memory is not committed. Its preferred machines are the allocation's, best-ranked
 * first (at most RUSK_TRACE_MAX_PREF, as cluster machine ids, in a per-task pool that
 * outlives the task's DONE). Under --quality interference the agents look them up in the
 * master array and place the task there while they can hold it (core/kernel/choose.c,
 * add_preferred: Quasar sizes and assigns jointly), Q ranking the RUs within them and the
 * draws that stand in when they cannot. It is submitted with work / (its planned
 * allocation's TRUE throughput) as its run time, and at PLACED it gets work / (the TRUE
 * throughput where it landed) instead: a task the agents put elsewhere runs as fast as
 * those machines let it. Reported: the share whose planned allocation meets the
 * target within 5% under the true rows, the RUs allocated against oracle sizing of the
 * same task, the share of its RUs on its allocation's machines, and the allocation as
 * placed (placed_true_perf: the machines it landed on, their platforms and true pressure):
 * the share meeting the target, its throughput over the target.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rusk/classify.h>
#include <rusk/vec.h>

#include "runstate.h"

#define CLS_TRAIN    1000u
#define CLS_OFFLINE  100u
#define CLS_POOL     1000u
#define CLS_NOISE    0.03
#define CLS_FB_MAX   2000u
#define CLS_FB_BATCH 250u
#define CLS_VERSIONS 16
#define CLS_CANDS    256u
#define CLS_BLOCKS   4u
#define CLS_SO       16u
#define CLS_PREF     4u /* RUSK_TRACE_MAX_PREF: preferred machines per task */
#define CLS_SIZING   3  /* scale-up, scale-out, heterogeneity: kinds 0..2 */

struct drv_cls {
	int mode; /* DRV_CLS_ON, _ORACLE or _NONE */
	bool target, registered, fb_full;
	rusk_cls_truth *truth;
	rusk_classifier *model;
	rusk_cls_shape sh;
	rusk_rng rng;
	/* per task, by its index in the run (spec.user - 1) */
	uint32_t *row, *held, *fb_row, *pref;
	uint64_t cap;
	/* per machine: true caused sums (atomic: agents add, the completer subtracts) and
	 * platform speed over the fastest */
	uint32_t (*shadow)[RUSK_N_RESOURCES];
	double *speed;
	rusk_cls_machine *cands;
	uint32_t *cand_idx;
	/* PLACED, any agent: atomic */
	uint64_t placed, q_true_micro, q_bel_micro;
	uint64_t slowed, slow_micro; /* tasks whose run time the interference set; sum of it */
	/* PLACED, per agent (its agent is the one writer): delay + run time of each timed
	 * placement, [0] normal, [1] high priority (JCT as an outcome; issue 29, item 1) */
	rusk_hist (*jct)[2];
	uint32_t n_jct;
	/* the generator's */
	rusk_hist time_ns;
	uint64_t classified;
	double err_sum[CLS_VERSIONS];
	uint64_t err_n[CLS_VERSIONS];
	uint64_t fb_added;
	/* the completer's (atomic), the sampler's */
	uint64_t fb_done, fb_trained, retrains;
	double retrain_s;
	/* --target */
	uint64_t t_jobs, t_met, t_met_oracle, t_rus, t_rus_oracle, t_rus_nominal, t_unsized;
	uint64_t t_pref_jobs; /* the generator's: sized tasks given preferred machines */
	uint64_t t_pref_placed, t_pref_rus, t_pref_on; /* PLACED (atomic): such tasks, their
	                                                * RUs, those on a preferred machine */
	uint64_t t_met_placed, t_perf_placed_micro;    /* PLACED (atomic): as placed, meeting
	                                                * the target; throughput / target */
	uint32_t block_mib; /* MiB per memory block; 0: the cluster has no memory (RUs only) */
	uint64_t t_mem_tasks, t_mem_mib;   /* the generator's: sized tasks given memory, MiB */
	uint64_t t_mem_placed, t_mem_seen; /* PLACED (atomic): such tasks placed; those whose
	                                    * machine had at least their memory in use */
	/* per sized task: its allocation's memory blocks (0: not sized) and its throughput goal */
	uint8_t *alloc_blocks;
	double *goal;
	double *tgt_s; /* --target: each sized task's completion-time target (run seconds) */
	/* Feedback of the sizing rows (on, --target): per task its allocation's RUs per machine
	 * and machine count, the platform it ran on (PLACED), its training rows in the three
	 * sizing models (UINT32_MAX: none); the error of their classified rows per model
	 * version (the generator's); rows fed back (completer, atomic), retrains (sampler). */
	uint8_t *alloc_rus, *alloc_mach, *ran_plat;
	uint32_t *srow; /* [cap][CLS_SIZING] */
	double serr_sum[CLS_SIZING][CLS_VERSIONS];
	uint64_t serr_n[CLS_SIZING][CLS_VERSIONS];
	uint64_t sfb_done, sfb_trained, sretrains;
};

static const char *mode_name(int mode)
{
	return mode == DRV_CLS_ON ? "on" : mode == DRV_CLS_ORACLE ? "oracle" : "none";
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const double *truth_caused(const drv_cls *k, uint32_t row, double *buf)
{
	const rusk_cls_matrix *m = rusk_cls_truth_matrix(k->truth, RUSK_CLS_INTERFERENCE);
	for (int r = 0; r < RUSK_N_RESOURCES; r++)
		buf[r] = rusk_cls_matrix_get(m, row, RUSK_N_RESOURCES + r);
	return buf;
}

static void true_rows(const drv_cls *k, uint32_t u, rusk_cls_job_estimate *e)
{
	memset(e, 0, sizeof *e);
	for (int c = 0; c < RUSK_CLS_KINDS; c++) {
		const rusk_cls_matrix *m = rusk_cls_truth_matrix(k->truth, c);
		e->cols[c] = rusk_cls_matrix_cols(m);
		for (uint32_t i = 0; i < e->cols[c]; i++)
			e->v[c][i] = rusk_cls_matrix_get(m, u, i);
	}
}

/* Trains the classifier on the first CLS_TRAIN workloads (as `rusk classify`). */
static int train(drv_cls *k, uint64_t seed)
{
	rusk_cls_params p[RUSK_CLS_KINDS];
	for (int c = 0; c < RUSK_CLS_KINDS; c++)
		rusk_cls_params_init(&p[c],
		                     rusk_cls_matrix_cols(rusk_cls_truth_matrix(k->truth, c)));
	char err[256];
	if (rusk_classifier_create(p, &k->model, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk: --classify: %s\n", err);
		return RUSK_EXIT_FAIL;
	}
	for (int c = 0; c < RUSK_CLS_KINDS; c++) {
		const rusk_cls_matrix *m = rusk_cls_truth_matrix(k->truth, c);
		for (uint32_t u = 0; u < CLS_TRAIN; u++) {
			rusk_cls_entry e[RUSK_CLS_MAX_COLS];
			uint32_t n = 0;
			rusk_cls_profile_row(m, c, u, u < CLS_OFFLINE ? RUSK_CLS_MAX_COLS : 2,
			                     CLS_NOISE, seed * 31 + 1, e, &n);
			if (n > 0)
				rusk_cls_add_row(rusk_classifier_get(k->model, c), e, n, NULL, NULL,
				                 0);
		}
	}
	if (rusk_classifier_retrain(k->model, NULL, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk: --classify: %s\n", err);
		return RUSK_EXIT_FAIL;
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/*
 * The scale-up shape from the cluster: the median machine's RUs (the generic cluster's
 * --rus-per-machine; a node list's cores), and in *block_mib the memory block, 1/CLS_BLOCKS
 * of what the median machine's memory per RU gives su_rus RUs (capped at 32), so the
 * largest per-machine allocation takes as large a share of a machine's memory as of its
 * cores; 0 when machines have no memory (the generic cluster): sized tasks stay RU-only.
 */
static uint32_t median_shape(const rusk_cluster *c, uint32_t *block_mib)
{
	uint32_t nm = rusk_cluster_machines(c);
	uint32_t *rus = malloc(nm * sizeof *rus), *mpr = malloc(nm * sizeof *mpr);
	if (rus == NULL || mpr == NULL || nm == 0) {
		free(rus);
		free(mpr);
		*block_mib = 0;
		return 1;
	}
	for (uint32_t m = 0; m < nm; m++) {
		rusk_machine_info mi;
		rusk_cluster_machine(c, m, &mi);
		rus[m] = mi.rus;
		mpr[m] = mi.rus ? mi.mem_mib / mi.rus : 0;
	}
	qsort(rus, nm, sizeof *rus, cmp_u32);
	qsort(mpr, nm, sizeof *mpr, cmp_u32);
	uint32_t su = rus[nm / 2] > 32 ? 32 : rus[nm / 2];
	*block_mib = (uint32_t)((uint64_t)mpr[nm / 2] * su / CLS_BLOCKS);
	free(rus);
	free(mpr);
	return su;
}

static int cls_setup(run *R, const drv_setup_in *in)
{
	const cli_cluster *cc = in->cc;
	const run_cfg *cfg = &R->cfg;
	if (cfg->classify == DRV_CLS_OFF)
		return 0;
	drv_cls *k = calloc(1, sizeof *k);
	if (k == NULL)
		return RUSK_EXIT_NOMEM;
	R->cls = k;
	k->mode = cfg->classify;
	k->target = cfg->target;
	k->fb_full = cfg->cls_fb_full;
	uint32_t nm = rusk_cluster_machines(R->c), np = rusk_cluster_platforms(R->c);
	uint32_t su = median_shape(R->c, &k->block_mib);
	(void)cc;
	k->sh = (rusk_cls_shape){.su_rus = su > 32 ? 32 : su,
	                         .su_mem_blocks = CLS_BLOCKS,
	                         .so_machines = CLS_SO,
	                         .platforms = np};
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = CLS_TRAIN + CLS_POOL;
	gp.su_rus = k->sh.su_rus;
	gp.su_mem_blocks = CLS_BLOCKS;
	gp.so_machines = CLS_SO;
	gp.platforms = np;
	gp.seed = R->seed;
	char err[256];
	int rc = rusk_cls_truth_generate(&gp, &k->truth, err, sizeof err);
	if (rc != RUSK_OK) {
		fprintf(stderr, "rusk: --classify: %s\n", err);
		return rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
	}
	/* Training publishes with call_rcu, and rusk run's sampler retrains: the main
	 * thread stays registered until drv_cls_free (counted: rusk sim registers it too). */
	rusk_thread_register();
	k->registered = true;
	if (k->mode == DRV_CLS_ON || k->target) {
		double t0 = now_s();
		if ((rc = train(k, R->seed)) != 0)
			return rc;
		k->retrain_s = now_s() - t0; /* the initial training, reported apart */
	}
	rusk_rng_seed(&k->rng, R->seed, 0x636c7373); /* "clss": workload draws */
	k->cap = R->n_tasks_cap;
	k->row = calloc(k->cap, sizeof *k->row);
	k->held = calloc(k->cap, sizeof *k->held);
	k->fb_row = malloc(k->cap * sizeof *k->fb_row);
	k->pref = k->target ? malloc(k->cap * CLS_PREF * sizeof *k->pref) : NULL;
	k->alloc_blocks = k->target ? calloc(k->cap, sizeof *k->alloc_blocks) : NULL;
	k->goal = k->target ? calloc(k->cap, sizeof *k->goal) : NULL;
	k->tgt_s = k->target ? calloc(k->cap, sizeof *k->tgt_s) : NULL;
	bool sfb = k->target && k->mode == DRV_CLS_ON;
	k->alloc_rus = sfb ? calloc(k->cap, 1) : NULL;
	k->alloc_mach = sfb ? calloc(k->cap, 1) : NULL;
	k->ran_plat = sfb ? calloc(k->cap, 1) : NULL;
	k->srow = sfb ? malloc(k->cap * CLS_SIZING * sizeof *k->srow) : NULL;
	k->shadow = calloc(nm, sizeof *k->shadow);
	k->speed = malloc(nm * sizeof *k->speed);
	k->cands = malloc(CLS_CANDS * sizeof *k->cands);
	k->cand_idx = malloc(CLS_CANDS * sizeof *k->cand_idx);
	k->n_jct = cfg->agents;
	k->jct = calloc(k->n_jct ? k->n_jct : 1, sizeof *k->jct);
	if (!k->row || !k->held || !k->fb_row || !k->shadow || !k->speed || !k->cands ||
	    !k->cand_idx || !k->jct ||
	    (k->target && (!k->pref || !k->alloc_blocks || !k->goal || !k->tgt_s)) ||
	    (sfb && (!k->alloc_rus || !k->alloc_mach || !k->ran_plat || !k->srow))) {
		fprintf(stderr, "rusk: --classify: out of memory for %" PRIu64 " tasks\n", k->cap);
		return RUSK_EXIT_NOMEM;
	}
	memset(k->fb_row, 0xff, k->cap * sizeof *k->fb_row);
	if (sfb)
		memset(k->srow, 0xff, k->cap * CLS_SIZING * sizeof *k->srow);
	double max_speed = 0;
	for (uint32_t p = 0; p < np; p++) {
		double s = 0;
		rusk_cluster_platform(R->c, p, NULL, &s);
		max_speed = fmax(max_speed, s);
	}
	for (uint32_t m = 0; m < nm; m++) {
		rusk_machine_info mi;
		double s = 0;
		rusk_cluster_machine(R->c, m, &mi);
		rusk_cluster_platform(R->c, mi.platform, NULL, &s);
		k->speed[m] = max_speed > 0 ? s / max_speed : 1.0;
	}
	fprintf(R->out,
	        "classification (%s): %u generated workloads of %u families (seed %" PRIu64 ")",
	        mode_name(k->mode), CLS_TRAIN + CLS_POOL, gp.families, R->seed);
	if (k->model != NULL)
		fprintf(R->out, ", model trained on %u in %.0f ms", CLS_TRAIN, k->retrain_s * 1e3);
	fprintf(R->out, "%s\n",
	        k->target ? "; jobs state a completion-time target (--target on)" : "");
	return 0;
}

/* Mean relative error of the classified caused intensities against the truth. */
static double caused_error(const double *est, const double *truth)
{
	double s = 0;
	for (int r = 0; r < RUSK_N_RESOURCES; r++)
		s += fabs(est[r] - truth[r]) / truth[r];
	return s / RUSK_N_RESOURCES;
}

static void to_profile(const double *caused, rusk_profile *p)
{
	for (int r = 0; r < RUSK_N_RESOURCES; r++) {
		double x = round(caused[r]);
		p->c[r] = (uint8_t)(x < 0 ? 0 : x > 99 ? 99 : x);
	}
}

/* Median over platforms of HE[p] / SU[1, 1] (the nominal platform of a target). */
static double median_h(const rusk_cls_job_estimate *e, uint32_t np)
{
	double h[RUSK_MAX_PLATFORMS];
	for (uint32_t j = 0; j < np; j++) {
		double x = e->v[RUSK_CLS_HETEROGENEITY][j] / e->v[RUSK_CLS_SCALE_UP][0];
		uint32_t i = j;
		for (; i > 0 && h[i - 1] > x; i--)
			h[i] = h[i - 1];
		h[i] = x;
	}
	return np % 2 ? h[np / 2] : 0.5 * (h[np / 2 - 1] + h[np / 2]);
}

/* The live machines the allocator sees: all, or a seeded sample of CLS_CANDS. */
static uint32_t snapshot(run *R, drv_cls *k)
{
	uint32_t nm = rusk_cluster_machines(R->c), n = nm < CLS_CANDS ? nm : CLS_CANDS;
	uint32_t start = nm > CLS_CANDS ? rusk_rng_below(&k->rng, nm) : 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t m = nm > CLS_CANDS ? (start + (uint64_t)i * (nm / CLS_CANDS)) % nm : i;
		rusk_machine_info mi;
		rusk_cluster_machine(R->c, m, &mi);
		rusk_cls_machine *c = &k->cands[i];
		k->cand_idx[i] = m;
		c->platform = mi.platform % k->sh.platforms;
		c->free_rus = mi.free_rus < k->sh.su_rus ? mi.free_rus : k->sh.su_rus;
		c->free_mem_blocks = CLS_BLOCKS;
		if (k->block_mib > 0) { /* the machine's free memory in blocks */
			rusk_machine_vec v;
			rusk_machine_vec_get(R->c, m, &v);
			uint32_t b = v.mem_free_mib / k->block_mib;
			c->free_mem_blocks = b < CLS_BLOCKS ? b : CLS_BLOCKS;
		}
		for (int r = 0; r < RUSK_N_RESOURCES; r++)
			c->pressure[r] = fmin(100.0, (double)mi.interference[r] / mi.rus);
	}
	return n;
}

/* True throughput of an allocation planned on the snapshot. */
static double planned_true_perf(const drv_cls *k, const rusk_cls_job_estimate *truth,
                                const rusk_cls_alloc *a)
{
	uint32_t pl[RUSK_CLS_ALLOC_MAX_MACHINES];
	double pr[RUSK_CLS_ALLOC_MAX_MACHINES][RUSK_N_RESOURCES];
	for (uint32_t i = 0; i < a->machines; i++) {
		pl[i] = k->cands[a->machine[i]].platform;
		memcpy(pr[i], k->cands[a->machine[i]].pressure, sizeof pr[i]);
	}
	return rusk_cls_perf(&k->sh, truth, a->rus, a->mem_blocks, a->machines, pl,
	                     (const double(*)[RUSK_N_RESOURCES])pr, 0);
}

/* --target: the task's size from its rows and target; its run time from the truth. */
static void size_task(run *R, drv_cls *k, uint64_t id, const rusk_arrival *x,
                      const rusk_cls_job_estimate *est, const rusk_cls_job_estimate *truth,
                      rusk_dtask_spec *spec)
{
	/* Nominal size: its RUs packed su_rus a machine; its work: what that size does in its
	 * duration on the median platform, alone. */
	uint32_t r0 = x->rus < k->sh.su_rus ? x->rus : k->sh.su_rus;
	uint32_t n0 = (x->rus + k->sh.su_rus - 1) / k->sh.su_rus;
	n0 = n0 < k->sh.so_machines ? n0 : k->sh.so_machines;
	double d = x->target_s > 0 ? x->target_s : x->duration_s * (0.5 + rusk_rng_unit(&k->rng));
	const double *su = truth->v[RUSK_CLS_SCALE_UP], *so = truth->v[RUSK_CLS_SCALE_OUT];
	double perf0 = so[n0 - 1] / so[0] * su[(r0 - 1) * CLS_BLOCKS + CLS_BLOCKS - 1] *
	               median_h(truth, k->sh.platforms);
	rusk_cls_target tg = {
	        .kind = RUSK_CLS_TARGET_COMPLETION, .value = d, .work = perf0 * x->duration_s};
	uint32_t n = snapshot(R, k);
	rusk_cls_alloc a, o;
	rusk_cls_alloc_size(&k->sh, est, &tg, k->cands, n, 0, &a);
	rusk_cls_alloc_size(&k->sh, truth, &tg, k->cands, n, 0, &o);
	k->t_jobs++;
	k->t_rus_nominal += x->rus;
	if (a.machines == 0) { /* no candidate has a free RU now: the nominal size */
		k->t_unsized++;
		k->t_rus += x->rus;
		k->t_rus_oracle += x->rus;
		return;
	}
	double perf = planned_true_perf(k, truth, &a);
	k->t_met += perf >= 0.95 * tg.work / d;
	k->t_met_oracle += o.machines > 0 && planned_true_perf(k, truth, &o) >= 0.95 * tg.work / d;
	spec->rus = a.rus * a.machines;
	k->t_rus += spec->rus;
	k->t_rus_oracle += o.machines > 0 ? o.rus * o.machines : x->rus;
	spec->placement = a.machines == 1 ? RUSK_PLACE_MACHINE : RUSK_PLACE_ANY;
	if (k->block_mib > 0 && a.machines == 1) {
		/* Scale-up is RUs x memory (§3.3): its blocks are committed with its RUs. */
		spec->vec.mem_mib = a.mem_blocks * k->block_mib;
		k->t_mem_tasks++;
		k->t_mem_mib += spec->vec.mem_mib;
	}
	/* The allocation's machines, best-ranked first, as the cluster's ids (the pool slot
	 * is this task's alone and outlives its DONE: the dispatcher does not copy it). */
	uint32_t *pref = k->pref + id * CLS_PREF;
	uint32_t np = a.machines < CLS_PREF ? a.machines : CLS_PREF;
	for (uint32_t i = 0; i < np; i++)
		pref[i] = k->cand_idx[a.machine[i]];
	spec->preferred = pref;
	spec->n_preferred = np;
	k->t_pref_jobs++;
	k->alloc_blocks[id] = (uint8_t)a.mem_blocks;
	k->goal[id] = tg.work / d;
	k->tgt_s[id] = d;
	if (k->alloc_rus != NULL) {
		k->alloc_rus[id] = (uint8_t)a.rus;
		k->alloc_mach[id] = (uint8_t)a.machines;
	}
	if (perf > 0)
		spec->run_ns = (uint64_t)fmin(tg.work / perf * 1e9, RUSK_TRACE_MAX_S * 1e9);
}

/* --target sizes RU tasks; a vector task's size is its trace row's (one machine, whole). */
static bool sized(const drv_cls *k, const rusk_dtask_spec *spec)
{
	return k->target && !rusk_vec_any(&spec->vec);
}

/* Mean relative error of a classified row's entries that were not profiled. */
static double unprofiled_error(const double *est, const double *truth, uint32_t cols,
                               const rusk_cls_entry *e, uint32_t n)
{
	double s = 0;
	uint32_t m = 0;
	for (uint32_t i = 0; i < cols; i++) {
		bool profiled = false;
		for (uint32_t j = 0; j < n; j++)
			profiled |= e[j].col == i;
		if (!profiled && truth[i] > 0) {
			s += fabs(est[i] - truth[i]) / truth[i];
			m++;
		}
	}
	return m ? s / m : 0;
}

/* --target, on: the error of the classified sizing rows, by model version; while the
 * interference model takes feedback rows, the task joins the sizing models too with its
 * profiled entries (its run's observations replace the estimates at completion). */
static void sizing_rows(drv_cls *k, uint64_t id, const rusk_cls_job_profile *jp,
                        const rusk_cls_job_estimate *est, const rusk_cls_job_estimate *truth)
{
	for (int c = 0; c < CLS_SIZING; c++) {
		uint64_t v = est->version[c] < CLS_VERSIONS ? est->version[c] : CLS_VERSIONS - 1;
		k->serr_sum[c][v] +=
		        unprofiled_error(est->v[c], truth->v[c], est->cols[c], jp->e[c], jp->n[c]);
		k->serr_n[c][v]++;
		uint32_t row;
		if (k->fb_row[id] != UINT32_MAX &&
		    rusk_cls_add_row(rusk_classifier_get(k->model, c), jp->e[c], jp->n[c], &row,
		                     NULL, 0) == RUSK_OK)
			k->srow[id * CLS_SIZING + c] = row;
	}
}

/* One measurement of column col of task id's true row of kind c (3% noise, its own
 * seeded stream: the same whichever thread completes it). */
static rusk_cls_entry observe(const drv_cls *k, uint64_t seed, uint64_t id, int c, uint32_t col)
{
	rusk_rng g;
	rusk_rng_seed(&g, seed * 13 + id, 0x6f627376 + (uint64_t)c); /* "obsv" */
	double u1 = 1.0 - rusk_rng_unit(&g), u2 = rusk_rng_unit(&g);
	double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
	double t = rusk_cls_matrix_get(rusk_cls_truth_matrix(k->truth, c), k->row[id], col);
	return (rusk_cls_entry){col, t * fmax(0.05, 1.0 + CLS_NOISE * z)};
}

/*
 * At completion of a task that ran at its allocation: what its run observed of the sizing
 * rows replaces their estimates, as `rusk classify --feedback-entries observed` does: the
 * scale-up entry of its RUs x blocks per machine, the scale-out entry of its machine
 * count, the heterogeneity entry of the platform it ran on (its first RU's machine). With
 * --cls-feedback full, whole rows (exhaustive profiling).
 */
static void sizing_feedback(run *R, drv_cls *k, uint64_t id)
{
	uint32_t col[CLS_SIZING] = {(uint32_t)(k->alloc_rus[id] - 1) * CLS_BLOCKS +
	                                    k->alloc_blocks[id] - 1,
	                            (uint32_t)k->alloc_mach[id] - 1, k->ran_plat[id]};
	bool any = false;
	for (int c = 0; c < CLS_SIZING; c++) {
		uint32_t row = k->srow[id * CLS_SIZING + c];
		if (row == UINT32_MAX)
			continue;
		rusk_cls_entry e[RUSK_CLS_MAX_COLS];
		uint32_t n = 1;
		if (k->fb_full)
			rusk_cls_profile_row(rusk_cls_truth_matrix(k->truth, c), c, k->row[id],
			                     RUSK_CLS_MAX_COLS, CLS_NOISE, R->seed * 13 + id, e,
			                     &n);
		else
			e[0] = observe(k, R->seed, id, c, col[c]);
		any |= rusk_cls_feedback(rusk_classifier_get(k->model, c), row, e, n, NULL, 0) ==
		       RUSK_OK;
		k->srow[id * CLS_SIZING + c] = UINT32_MAX;
	}
	if (any)
		rusk_faa64(&k->sfb_done, 1, RUSK_RELAXED);
}

static bool cls_task(run *R, uint64_t id, const rusk_arrival *x, rusk_dtask_spec *spec)
{
	drv_cls *k = R->cls;
	uint32_t row = CLS_TRAIN + rusk_rng_below(&k->rng, CLS_POOL);
	k->row[id] = row;
	spec->user = (void *)(uintptr_t)(id + 1);
	double truth_c[RUSK_N_RESOURCES];
	truth_caused(k, row, truth_c);
	rusk_cls_job_estimate truth, est;
	if (k->target)
		true_rows(k, row, &truth);
	if (k->mode == DRV_CLS_NONE) { /* no profile: the kernel's Q sees nothing */
		memset(&spec->profile, 0, sizeof spec->profile);
		return true;
	}
	if (k->mode == DRV_CLS_ORACLE) {
		to_profile(truth_c, &spec->profile);
		if (sized(k, spec))
			size_task(R, k, id, x, &truth, &truth, spec);
		return true;
	}
	/* Profiling: 2 noisy entries per classification (its own seed per task). */
	rusk_cls_entry e[RUSK_CLS_KINDS][2];
	rusk_cls_job_profile jp;
	for (int c = 0; c < RUSK_CLS_KINDS; c++) {
		rusk_cls_profile_row(rusk_cls_truth_matrix(k->truth, c), c, row, 2, CLS_NOISE,
		                     R->seed * 1000003 + id, e[c], &jp.n[c]);
		jp.e[c] = e[c];
	}
	double t0 = now_s();
	rusk_cls_fold_info fi = {0};
	int rc;
	if (k->target) {
		rc = rusk_classifier_classify(k->model, &jp, &est);
		fi.version = est.version[RUSK_CLS_INTERFERENCE];
	} else {
		rc = rusk_cls_classify(rusk_classifier_get(k->model, RUSK_CLS_INTERFERENCE),
		                       e[RUSK_CLS_INTERFERENCE], jp.n[RUSK_CLS_INTERFERENCE],
		                       est.v[RUSK_CLS_INTERFERENCE], &fi);
	}
	rusk_hist_record(&k->time_ns, (uint64_t)((now_s() - t0) * 1e9));
	const double *caused = &est.v[RUSK_CLS_INTERFERENCE][RUSK_N_RESOURCES];
	if (rc != RUSK_OK)
		caused = truth_c; /* cannot happen with a trained model; counted below */
	k->classified += rc == RUSK_OK;
	to_profile(caused, &spec->profile);
	uint64_t v = fi.version < CLS_VERSIONS ? fi.version : CLS_VERSIONS - 1;
	k->err_sum[v] += caused_error(caused, truth_c);
	k->err_n[v]++;
	/* Feedback: the task joins the model as a row of its profiled entries. */
	uint32_t trow;
	if (k->fb_added < CLS_FB_MAX &&
	    rusk_cls_add_row(rusk_classifier_get(k->model, RUSK_CLS_INTERFERENCE),
	                     e[RUSK_CLS_INTERFERENCE], jp.n[RUSK_CLS_INTERFERENCE], &trow, NULL,
	                     0) == RUSK_OK) {
		k->fb_row[id] = trow;
		k->fb_added++;
	}
	if (k->srow != NULL && rc == RUSK_OK)
		sizing_rows(k, id, &jp, &est, &truth);
	if (sized(k, spec))
		size_task(R, k, id, x, &est, &truth, spec);
	return true;
}

/* The true sums of machine m per RU, then Q of the true profile against them. */
static double true_q(const drv_cls *k, const double *caused, uint32_t m, const rusk_cluster *c)
{
	rusk_machine_info mi;
	rusk_cluster_machine(c, m, &mi);
	double others = mi.rus > 1 ? mi.rus - 1 : 1, ci[RUSK_N_RESOURCES];
	for (int r = 0; r < RUSK_N_RESOURCES; r++)
		ci[r] = rusk_load32((uint32_t *)&k->shadow[m][r], RUSK_RELAXED) / others;
	return rusk_cls_tarcil_q(caused, ci) * k->speed[m];
}

/*
 * A task's run time as an outcome (issue 29, item 1): the slowdown against running alone
 * of its RUs where it landed, from the TRUE caused intensities of its co-runners there,
 * whatever profiles the scheduler saw. Per RU's machine m, the pressure is Tarcil eq. 3's
 * C_i (the other tenants' caused intensity per RU, the shadow sums before the task's own
 * join them), the task tolerates t_i = 99 - c_i (Tarcil §3: "we assume t_i = 99 - c_i"),
 * and it runs at rusk_cls_interference_factor(t, C) = 1 / (1 + 0.05 sum_i (C_i / t_i)^2)
 * of its speed alone (rusk's model, include/rusk/classify.h; the papers give none). A
 * task on several machines runs at its slowest RU's speed. The co-runners at placement set
 * it (Tarcil §2: "for short jobs, the initial scheduling decision determines performance");
 * tenants that arrive later do not slow it.
 */
static double true_slowdown(const drv_cls *k, const double *caused, const rusk_lease *l, uint32_t n,
                            const rusk_cluster *c)
{
	double tol[RUSK_N_RESOURCES], worst = 1;
	for (int r = 0; r < RUSK_N_RESOURCES; r++)
		tol[r] = fmax(99 - fmin(fmax(caused[r], 0), 99), 1);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t m = rusk_cluster_ru_machine(c, l[i].ru);
		rusk_machine_info mi;
		rusk_cluster_machine(c, m, &mi);
		double others = mi.rus > 1 ? mi.rus - 1 : 1, p[RUSK_N_RESOURCES];
		for (int r = 0; r < RUSK_N_RESOURCES; r++)
			p[r] = rusk_load32((uint32_t *)&k->shadow[m][r], RUSK_RELAXED) / others;
		double f = rusk_cls_interference_factor(tol, p);
		if (f > 0 && 1 / f > worst)
			worst = 1 / f;
	}
	return worst;
}

/*
 * True throughput of a sized task as placed: its RUs per machine where it landed (at most
 * su_rus counted a machine), each machine's platform and true pressure (the shadow sums
 * per RU before the task's own join them), the scale-out efficiency of that many machines
 * (past so_machines, no further gain), under the task's true rows. The planned figure
 * (size_task) judges the machines the allocation was sized on; this one, the machines the
 * agents chose.
 */
static double placed_true_perf(const drv_cls *k, const rusk_cluster *c, uint32_t row,
                               uint32_t blocks, const rusk_lease *l, uint32_t n)
{
	rusk_cls_job_estimate truth;
	true_rows(k, row, &truth);
	uint32_t mach[64], cnt[64], nm = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t m = rusk_cluster_ru_machine(c, l[i].ru), j = 0;
		while (j < nm && mach[j] != m)
			j++;
		if (j == nm) {
			if (nm == 64)
				continue;
			mach[nm] = m;
			cnt[nm++] = 0;
		}
		cnt[j]++;
	}
	double sum = 0;
	for (uint32_t j = 0; j < nm; j++) {
		rusk_machine_info mi;
		rusk_cluster_machine(c, mach[j], &mi);
		uint32_t pl = mi.platform % k->sh.platforms;
		double pr[1][RUSK_N_RESOURCES];
		for (int r = 0; r < RUSK_N_RESOURCES; r++)
			pr[0][r] = fmin(100.0, rusk_load32((uint32_t *)&k->shadow[mach[j]][r],
			                                   RUSK_RELAXED) /
			                               (double)mi.rus);
		uint32_t r = cnt[j] < k->sh.su_rus ? cnt[j] : k->sh.su_rus;
		double p = rusk_cls_perf(&k->sh, &truth, r, blocks, 1, &pl,
		                         (const double(*)[RUSK_N_RESOURCES])pr, 0);
		sum += p > 0 ? p : 0;
	}
	const double *so = truth.v[RUSK_CLS_SCALE_OUT];
	uint32_t ns = nm < k->sh.so_machines ? nm : k->sh.so_machines;
	return nm ? so[ns - 1] / (nm * so[0]) * sum : 0;
}

static void shadow_add(drv_cls *k, const rusk_cluster *c, const rusk_lease *l, uint32_t n,
                       const double *caused, bool sub)
{
	rusk_profile p;
	to_profile(caused, &p);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t m = rusk_cluster_ru_machine(c, l[i].ru);
		for (int r = 0; r < RUSK_N_RESOURCES; r++)
			rusk_faa32(&k->shadow[m][r], sub ? (uint32_t)0 - p.c[r] : p.c[r],
			           RUSK_RELAXED);
	}
}

void drv_cls_event(run *R, rusk_dispatch_event *ev)
{
	drv_cls *k = R->cls;
	uintptr_t u = (uintptr_t)ev->user;
	if (u == 0 || u > k->cap)
		return;
	uint64_t id = u - 1;
	rusk_dtask_info jb;
	const rusk_dtask_info *j = drv_task(R->d, ev, &jb);
	double caused[RUSK_N_RESOURCES];
	truth_caused(k, k->row[id], caused);
	if (ev->kind == RUSK_EV_PLACED) {
		/* Q of its RUs against the other tenants (eq. 3: the RU itself was free), as
		 * rusk sim's agents report it (at decision, before the commit), then its own
		 * true intensities join the sums. */
		double q = 0;
		for (uint32_t i = 0; i < ev->n_leases; i++)
			q += true_q(k, caused, rusk_cluster_ru_machine(R->c, ev->leases[i].ru),
			            R->c);
		q = ev->n_leases ? q / ev->n_leases : 0;
		if (j->vec.mem_mib > 0 && ev->n_leases > 0) {
			/* Committed with its RUs: its machine has at least that much in use
			 * until the task's DONE gives it back. */
			rusk_machine_vec v;
			rusk_machine_vec_get(R->c, rusk_cluster_ru_machine(R->c, ev->leases[0].ru),
			                     &v);
			rusk_faa64(&k->t_mem_placed, 1, RUSK_RELAXED);
			rusk_faa64(&k->t_mem_seen, v.mem_mib - v.mem_free_mib >= j->vec.mem_mib,
			           RUSK_RELAXED);
		}
		if (k->ran_plat != NULL && ev->n_leases > 0) {
			rusk_machine_info mi;
			rusk_cluster_machine(R->c, rusk_cluster_ru_machine(R->c, ev->leases[0].ru),
			                     &mi);
			k->ran_plat[id] = (uint8_t)(mi.platform % k->sh.platforms);
		}
		if (k->target && k->alloc_blocks[id] > 0) {
			double pp = placed_true_perf(k, R->c, k->row[id], k->alloc_blocks[id],
			                             ev->leases, ev->n_leases) /
			            k->goal[id];
			rusk_faa64(&k->t_met_placed, pp >= 0.95, RUSK_RELAXED);
			rusk_faa64(&k->t_perf_placed_micro, (uint64_t)(fmin(pp, 100.0) * 1e6),
			           RUSK_RELAXED);
			/* It runs at the speed of where it landed: its work (goal x target) over
			 * the true throughput there, not over the planned allocation's. */
			if (pp > 0)
				ev->run_ns = (uint64_t)fmin(k->tgt_s[id] / pp * 1e9,
				                            RUSK_TRACE_MAX_S * 1e9);
		} else if (ev->run_ns != RUSK_RUN_UNTIL_COMPLETE && ev->n_leases > 0) {
			/* Its run time is what it meets where it landed (true_slowdown). */
			double sd = true_slowdown(k, caused, ev->leases, ev->n_leases, R->c);
			ev->run_ns = (uint64_t)fmin(ev->run_ns * sd, RUSK_TRACE_MAX_S * 1e9);
			rusk_faa64(&k->slowed, 1, RUSK_RELAXED);
			rusk_faa64(&k->slow_micro, (uint64_t)(sd * 1e6), RUSK_RELAXED);
		}
		if (ev->run_ns != RUSK_RUN_UNTIL_COMPLETE && ev->agent < k->n_jct)
			rusk_hist_record(&k->jct[ev->agent][j->prio > 0],
			                 ev->delay_ns + ev->run_ns);
		shadow_add(k, R->c, ev->leases, ev->n_leases, caused, false);
		k->held[id] = ev->n_leases;
		rusk_faa64(&k->placed, 1, RUSK_RELAXED);
		rusk_faa64(&k->q_true_micro, (uint64_t)(q * 1e6), RUSK_RELAXED);
		rusk_faa64(&k->q_bel_micro, (uint64_t)(ev->placement->quality * 1e6), RUSK_RELAXED);
		if (k->target && j->n_pref > 0) { /* a sized task: on its allocation's machines? */
			rusk_faa64(&k->t_pref_placed, 1, RUSK_RELAXED);
			rusk_faa64(&k->t_pref_rus, ev->n_leases, RUSK_RELAXED);
			rusk_faa64(&k->t_pref_on, ev->placement->preferred, RUSK_RELAXED);
		}
	} else if (ev->kind == RUSK_EV_DONE || ev->kind == RUSK_EV_PREEMPTED) {
		/* The leases are still the task's (the dispatcher frees the slot after). */
		shadow_add(k, R->c, j->leases, k->held[id], caused, true);
		k->held[id] = 0;
	}
	if (ev->kind == RUSK_EV_DONE && k->srow != NULL && k->alloc_blocks[id] > 0)
		sizing_feedback(R, k, id);
	if (ev->kind == RUSK_EV_DONE && k->fb_row[id] != UINT32_MAX) {
		/* What was measured while it ran replaces the estimates: its caused intensities
		 * (observable), or with --cls-feedback full its whole row. */
		rusk_cls_entry e[RUSK_CLS_INTERFERENCE_COLS];
		uint32_t n = 0;
		rusk_cls_profile_row(rusk_cls_truth_matrix(k->truth, RUSK_CLS_INTERFERENCE),
		                     RUSK_CLS_INTERFERENCE, k->row[id], RUSK_CLS_INTERFERENCE_COLS,
		                     CLS_NOISE, R->seed * 7 + id, e, &n);
		if (!k->fb_full) { /* keep the caused half: columns RUSK_N_RESOURCES.. */
			uint32_t w = 0;
			for (uint32_t i = 0; i < n; i++)
				if (e[i].col >= RUSK_N_RESOURCES)
					e[w++] = e[i];
			n = w;
		}
		if (rusk_cls_feedback(rusk_classifier_get(k->model, RUSK_CLS_INTERFERENCE),
		                      k->fb_row[id], e, n, NULL, 0) == RUSK_OK)
			rusk_faa64(&k->fb_done, 1, RUSK_RELAXED);
		k->fb_row[id] = UINT32_MAX;
	}
}

static void cls_second(run *R, bool idle)
{
	(void)idle;
	drv_cls *k = R->cls;
	uint64_t sdone = rusk_load64(&k->sfb_done, RUSK_RELAXED);
	if (k->srow != NULL && sdone - k->sfb_trained >= CLS_FB_BATCH) {
		/* The sizing models: retrained and republished (RCU) off the decision path. */
		bool ok = true;
		for (int c = 0; c < CLS_SIZING; c++)
			ok &= rusk_cls_retrain(rusk_classifier_get(k->model, c), NULL, NULL, 0) ==
			      RUSK_OK;
		k->sretrains += ok;
		k->sfb_trained = sdone;
	}
	uint64_t done = rusk_load64(&k->fb_done, RUSK_RELAXED);
	if (k->mode != DRV_CLS_ON || done - k->fb_trained < CLS_FB_BATCH)
		return;
	double t0 = now_s();
	if (rusk_cls_retrain(rusk_classifier_get(k->model, RUSK_CLS_INTERFERENCE), NULL, NULL, 0) ==
	    RUSK_OK)
		k->retrains++;
	k->retrain_s = now_s() - t0;
	k->fb_trained = done;
}

/* The figures both outputs print. */
typedef struct cls_fig {
	double q_true, q_bel, t_mean_us, t_p99_us;
	double slowdown; /* mean run time over run time alone, of the tasks it set */
	uint64_t placed;
	bool sums_zero; /* the true caused sums are back to zero (a drained run) */
} cls_fig;

static cls_fig figures(const run *R, const drv_cls *k)
{
	cls_fig f = {.placed = k->placed, .sums_zero = true};
	/* Every tenure that ended took its true intensities back: all zero once the run
	 * drained (a check of the shadow's bookkeeping; not after an interruption). */
	for (uint32_t m = 0; m < rusk_cluster_machines(R->c); m++)
		for (int r = 0; r < RUSK_N_RESOURCES; r++)
			f.sums_zero &= k->shadow[m][r] == 0;
	f.q_true = k->placed ? k->q_true_micro / 1e6 / k->placed : 0;
	f.q_bel = k->placed ? k->q_bel_micro / 1e6 / k->placed : 0;
	f.slowdown = k->slowed ? k->slow_micro / 1e6 / k->slowed : 0;
	f.t_mean_us = rusk_hist_mean(&k->time_ns) / 1e3;
	f.t_p99_us = rusk_hist_quantile(&k->time_ns, 0.99) / 1e3;
	return f;
}

void drv_cls_print(const run *R)
{
	const drv_cls *k = R->cls;
	cls_fig f = figures(R, k);
	fprintf(R->out, "  %-28s mean Tarcil Q under true profiles %.4f (%s; as placed %.4f)\n",
	        "classification", f.q_true,
	        k->mode == DRV_CLS_ON       ? "classified profiles"
	        : k->mode == DRV_CLS_ORACLE ? "oracle: true profiles"
	                                    : "none: zero profiles",
	        f.q_bel);
	if (k->slowed > 0)
		fprintf(R->out,
		        "  %-28s run time %.4f x alone on average (%" PRIu64 " tasks: true "
		        "profiles of their co-runners where they landed)\n",
		        "  slowdown (outcome)", f.slowdown, k->slowed);
	if (!f.sums_zero)
		fprintf(R->out, "  %-28s true caused sums not zero after the run\n", "  NO:");
	if (k->mode == DRV_CLS_ON) {
		fprintf(R->out,
		        "  %-28s %" PRIu64 " tasks, %.2f us mean, %.2f us p99 per task (wall)\n",
		        "  classification time", k->classified, f.t_mean_us, f.t_p99_us);
		fprintf(R->out, "  %-28s", "  caused error by model");
		for (int v = 0; v < CLS_VERSIONS; v++)
			if (k->err_n[v] > 0)
				fprintf(R->out, " v%d %.1f%% (%" PRIu64 ")", v,
				        100 * k->err_sum[v] / k->err_n[v], k->err_n[v]);
		fprintf(R->out, "; %" PRIu64 " rows fed back (%s), %" PRIu64 " retrains\n",
		        k->fb_done, k->fb_full ? "whole rows" : "caused intensities", k->retrains);
	}
	if (k->target && k->t_jobs > 0)
		fprintf(R->out,
		        "  %-28s %.1f%% of %" PRIu64 " jobs' allocations meet the target (oracle "
		        "sizing %.1f%%); RUs %.2f per job vs oracle %.2f, nominal %.2f; %" PRIu64
		        " unsized\n",
		        "  target", 100.0 * k->t_met / k->t_jobs, k->t_jobs,
		        100.0 * k->t_met_oracle / k->t_jobs, (double)k->t_rus / k->t_jobs,
		        (double)k->t_rus_oracle / k->t_jobs, (double)k->t_rus_nominal / k->t_jobs,
		        k->t_unsized);
	if (k->srow != NULL) {
		fprintf(R->out, "  %-28s", "  sizing rows' error");
		for (int c = 0; c < CLS_SIZING; c++) {
			fprintf(R->out, " %s", rusk_cls_kind_name(c));
			for (int v = 0; v < CLS_VERSIONS; v++)
				if (k->serr_n[c][v] > 0)
					fprintf(R->out, " v%d %.1f%%", v,
					        100 * k->serr_sum[c][v] / k->serr_n[c][v]);
			fprintf(R->out, c + 1 < CLS_SIZING ? ";" : "");
		}
		fprintf(R->out, "; %" PRIu64 " tasks fed back (%s), %" PRIu64 " retrains\n",
		        k->sfb_done, k->fb_full ? "whole rows" : "observed entries", k->sretrains);
	}
	if (k->target && k->block_mib > 0)
		fprintf(R->out,
		        "  %-28s %" PRIu64 " one-machine allocations commit their memory blocks "
		        "(%u MiB each) with their RUs, %.0f MiB per task\n",
		        "  memory", k->t_mem_tasks, k->block_mib,
		        k->t_mem_tasks ? (double)k->t_mem_mib / k->t_mem_tasks : 0.0);
	if (k->target && k->t_pref_jobs > 0)
		fprintf(R->out,
		        "  %-28s %" PRIu64 " sized tasks carry their allocation's machines; %.1f%% "
		        "of their RUs placed on them; as placed %.1f%% meet the target, "
		        "throughput %.3f x target\n",
		        "  preferred machines", k->t_pref_jobs,
		        k->t_pref_rus ? 100.0 * k->t_pref_on / k->t_pref_rus : 0.0,
		        k->t_pref_placed ? 100.0 * k->t_met_placed / k->t_pref_placed : 0.0,
		        k->t_pref_placed ? k->t_perf_placed_micro / 1e6 / k->t_pref_placed : 0.0);
}

/* ", \"jct_ms\": {...}, \"jct_high_ms\": {...}, \"jct_normal_ms\": {...}": delay + run time
 * of the timed placements (a preempted task's later tenure counts from its preemption),
 * mean and percentiles, all and by priority (the agents' histograms merged). */
static void jct_json(FILE *f, const drv_cls *k)
{
	static rusk_hist h[3]; /* all, normal, high (about 60 KB each: not on the stack) */
	memset(h, 0, sizeof h);
	for (uint32_t a = 0; a < k->n_jct; a++)
		for (int p = 0; p < 2; p++) {
			rusk_hist_merge(&h[0], &k->jct[a][p]);
			rusk_hist_merge(&h[1 + p], &k->jct[a][p]);
		}
	static const char *const name[3] = {"jct_ms", "jct_normal_ms", "jct_high_ms"};
	for (int i = 0; i < 3; i++)
		fprintf(f,
		        ", \"%s\": {\"tasks\": %" PRIu64 ", \"mean\": %.3f, \"p50\": %.3f, "
		        "\"p95\": %.3f, \"p99\": %.3f}",
		        name[i], rusk_hist_count(&h[i]), rusk_hist_mean(&h[i]) / 1e6,
		        rusk_hist_quantile(&h[i], 0.5) / 1e6, rusk_hist_quantile(&h[i], 0.95) / 1e6,
		        rusk_hist_quantile(&h[i], 0.99) / 1e6);
}

void drv_cls_json(FILE *f, const run *R)
{
	const drv_cls *k = R->cls;
	cls_fig g = figures(R, k);
	fprintf(f,
	        "  \"classification\": {\"mode\": \"%s\", \"workloads\": %u, \"trained_on\": %u, "
	        "\"placed\": %" PRIu64 ", \"q_true_mean\": %.6f, \"q_placed_mean\": %.6f, "
	        "\"true_sums_zero\": %s, \"slowed\": %" PRIu64 ", \"slowdown_mean\": %.6f",
	        mode_name(k->mode), CLS_TRAIN + CLS_POOL, CLS_TRAIN, g.placed, g.q_true, g.q_bel,
	        g.sums_zero ? "true" : "false", k->slowed, g.slowdown);
	jct_json(f, k);
	if (k->mode == DRV_CLS_ON) {
		fprintf(f,
		        ", \"classified\": %" PRIu64
		        ", \"time_us\": {\"mean\": %.3f, \"p99\": %.3f}"
		        ", \"feedback_rows\": %" PRIu64
		        ", \"feedback\": \"%s\", \"retrains\": %" PRIu64
		        ", \"error_by_version\": [",
		        k->classified, g.t_mean_us, g.t_p99_us, k->fb_done,
		        k->fb_full ? "full" : "observed", k->retrains);
		bool first = true;
		for (int v = 0; v < CLS_VERSIONS; v++)
			if (k->err_n[v] > 0) {
				fprintf(f,
				        "%s{\"version\": %d, \"tasks\": %" PRIu64
				        ", \"error\": %.6f}",
				        first ? "" : ", ", v, k->err_n[v],
				        k->err_sum[v] / k->err_n[v]);
				first = false;
			}
		fprintf(f, "]");
		if (k->srow != NULL) {
			fprintf(f,
			        ", \"sizing_feedback\": {\"tasks\": %" PRIu64
			        ", \"retrains\": %" PRIu64,
			        k->sfb_done, k->sretrains);
			for (int c = 0; c < CLS_SIZING; c++) {
				fprintf(f, ", \"%s\": [", rusk_cls_kind_name(c));
				bool first = true;
				for (int v = 0; v < CLS_VERSIONS; v++)
					if (k->serr_n[c][v] > 0) {
						fprintf(f,
						        "%s{\"version\": %d, \"tasks\": %" PRIu64
						        ", \"error\": %.6f}",
						        first ? "" : ", ", v, k->serr_n[c][v],
						        k->serr_sum[c][v] / k->serr_n[c][v]);
						first = false;
					}
				fprintf(f, "]");
			}
			fprintf(f, "}");
		}
	}
	rusk_cluster_vec cv = {0}; /* memory still in use (0 once a run drained) */
	rusk_cluster_vec_get(R->c, &cv);
	if (k->target)
		fprintf(f,
		        ", \"target\": {\"jobs\": %" PRIu64 ", \"met_share\": %.6f, "
		        "\"met_share_oracle\": %.6f, \"rus_per_job\": %.4f, "
		        "\"rus_per_job_oracle\": %.4f, \"rus_per_job_nominal\": %.4f, \"unsized\": "
		        "%" PRIu64 ", \"preferred_tasks\": %" PRIu64
		        ", \"preferred_placed\": %" PRIu64 ", \"preferred_rus_share\": %.6f"
		        ", \"met_share_placed\": %.6f, \"perf_placed_over_target\": %.6f"
		        ", \"mem_block_mib\": %u, \"mem_tasks\": %" PRIu64
		        ", \"mem_mib_per_mem_task\": %.1f, \"mem_placed\": %" PRIu64
		        ", \"mem_placed_in_use\": %" PRIu64 ", \"mem_used_after_mib\": %" PRIu64
		        "}",
		        k->t_jobs, k->t_jobs ? (double)k->t_met / k->t_jobs : 0.0,
		        k->t_jobs ? (double)k->t_met_oracle / k->t_jobs : 0.0,
		        k->t_jobs ? (double)k->t_rus / k->t_jobs : 0.0,
		        k->t_jobs ? (double)k->t_rus_oracle / k->t_jobs : 0.0,
		        k->t_jobs ? (double)k->t_rus_nominal / k->t_jobs : 0.0, k->t_unsized,
		        k->t_pref_jobs, k->t_pref_placed,
		        k->t_pref_rus ? (double)k->t_pref_on / k->t_pref_rus : 0.0,
		        k->t_pref_placed ? (double)k->t_met_placed / k->t_pref_placed : 0.0,
		        k->t_pref_placed ? k->t_perf_placed_micro / 1e6 / k->t_pref_placed : 0.0,
		        k->block_mib, k->t_mem_tasks,
		        k->t_mem_tasks ? (double)k->t_mem_mib / k->t_mem_tasks : 0.0,
		        k->t_mem_placed, k->t_mem_seen, cv.mem_used_mib);
	else
		fprintf(f, ", \"target\": null");
	fprintf(f, "},\n");
}

void drv_cls_free(run *R)
{
	drv_cls *k = R->cls;
	if (k == NULL)
		return;
	rusk_classifier_destroy(k->model);
	rusk_cls_truth_destroy(k->truth);
	free(k->row);
	free(k->held);
	free(k->fb_row);
	free(k->pref);
	free(k->alloc_blocks);
	free(k->goal);
	free(k->tgt_s);
	free(k->alloc_rus);
	free(k->alloc_mach);
	free(k->ran_plat);
	free(k->srow);
	free(k->shadow);
	free(k->speed);
	free(k->cands);
	free(k->cand_idx);
	free(k->jct);
	if (k->registered)
		rusk_thread_unregister();
	free(k);
	R->cls = NULL;
}

/* ---- the feature (runstate.h) ------------------------------------------------------------ */

static bool cls_on(const run *R)
{
	return R->cls != NULL;
}

static void cls_json(FILE *f, run *R)
{
	drv_cls_json(f, R);
}

static void cls_print(run *R)
{
	drv_cls_print(R);
}

const drv_feature drv_feature_cls = {
        .name = "classification",
        .on = cls_on,
        .setup = cls_setup,
        .task = cls_task,
        .second = cls_second,
        .event = drv_cls_event,
        .json = cls_json,
        .print = cls_print,
        .free = drv_cls_free,
};
