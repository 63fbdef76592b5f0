/* SPDX-License-Identifier: MIT */
/*
 * `rusk experiment fgd`: FGD's fill-until-full experiment (Weng et al., USENIX ATC'23,
 * "Beware of Fragmentation", §6: tasks sampled from the openb pod list are submitted to the
 * openb cluster, nothing departs, and the unallocated GPUs are compared as the cluster
 * fills), for each placement quality model: the slot score, packing and fgd.
 *
 * One run (a model and a seed): the node list builds the cluster; one agent (one thread,
 * no departures, so its view stays exact: it marks what it takes) places pods drawn
 * uniformly with replacement from the pod list by a generator seeded with the seed; a pod
 * that finds no machine (RUSK_EAGAIN) is dropped and the fill goes on, as FGD's simulator
 * skips an unschedulable pod; the agent's view is synced after it, so that its memo of
 * failed demands lasts one decision, not the rest of the fill. The fill ends after
 * FGD_FAIL_RUN pods in a row found no machine, or once the pods drawn ask for
 * FGD_MAX_DEMAND times the cluster's GPU capacity. A pod no machine shape could ever hold
 * is not drawn.
 *
 * Rows: at every 5% of arrived GPU demand (the GPU milli the drawn pods asked for, over the
 * cluster's GPU capacity; FGD's x axis), at the first pod that found no machine, and at the
 * end: the GPU allocation ratio, the unallocated GPU share (free over capacity), and the
 * fragmented GPU share: of the free GPU capacity, the share a GPU pod drawn from the pod
 * list's GPU pods could not use, in expectation over all their shapes (the measure that
 * `rusk sim` reports, and that --quality fgd descends), also as a share of the capacity.
 * Everything is a function of the seed: two runs print the same bytes.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "cli.h"
#include "workload/loadgen.h"

#define FGD_FAIL_RUN   64  /* pods in a row without a machine end the fill */
#define FGD_MAX_DEMAND 3.0 /* or arrived GPU demand over capacity */
#define FGD_TYPES      256
#define FGD_MAX_RUS    1024 /* a pod's leases buffer */

typedef cli_gpu_type gtype;

typedef struct fgd_ctx {
	rusk_arrival *pods;
	size_t n_pods;
	uint32_t *pool; /* pods some machine shape can hold */
	size_t n_pool;
	uint32_t map[RUSK_TRACE_MAX_MODELS];
	rusk_trace_models tm;
	gtype types[FGD_TYPES];
	uint32_t n_types;
	double wsum;
} fgd_ctx;

static uint32_t map_models(const fgd_ctx *x, uint32_t mask)
{
	uint32_t out = 0;
	for (uint32_t k = 0; k < x->tm.n; k++)
		if (mask & (1u << k))
			out |= 1u << x->map[k];
	return out;
}

static rusk_task pod_task(const fgd_ctx *x, const rusk_arrival *p, uint64_t id)
{
	rusk_task t = {.id = id, .rus = p->rus, .gang = true, .placement = RUSK_PLACE_MACHINE};
	t.vec = (rusk_vec_demand){p->mem_mib, p->gpus, p->gpu_milli, map_models(x, p->gpu_models)};
	return t;
}

/* FGD's measure (cli.h): free milli-GPU of machine state (mi, mv) that a task of shape t
 * could not use. Also vecrep.c's fragmented share. */
uint32_t cli_gpu_unusable(const rusk_machine_info *mi, const rusk_machine_vec *mv,
                          const cli_gpu_type *t)
{
	uint32_t all = 0, idle = 0, pieces = 0, small = 0;
	for (uint32_t g = 0; g < mv->gpus; g++) {
		uint32_t f = mv->gpu_free_milli[g];
		all += f;
		idle += f == RUSK_GPU_MILLI;
		pieces += f < RUSK_GPU_MILLI ? f : 0;
		small += f < t->milli ? f : 0;
	}
	bool model_ok = t->models == 0 || (t->models >> mv->gpu_model) & 1u;
	if (mi->free_rus < t->rus || mv->mem_free_mib < t->mem || !model_ok)
		return all;
	if (t->gpus == 1 && t->milli < RUSK_GPU_MILLI)
		return small;
	return idle < t->gpus ? all : pieces;
}

/* The node list's cluster in FGD_PARTS partitions, or as many as it has cells. */
#define FGD_PARTS 8
static int build(const char *nodes, uint64_t seed, rusk_cluster **c, char *err, size_t len)
{
	rusk_cluster_params cp;
	rusk_cluster_params_init(&cp);
	cp.seed = seed;
	int rc = RUSK_EINVAL;
	for (uint32_t p = FGD_PARTS; p >= 1 && rc != RUSK_OK; p--) {
		cp.partitions = p;
		rc = rusk_cluster_create_openb(nodes, 0, &cp, c, err, len);
		if (rc != RUSK_OK && rc != RUSK_EINVAL && rc != RUSK_ESHAPE)
			break; /* the file, not the partitions */
	}
	return rc;
}

typedef struct fgd_point {
	double gpu_cap, gpu_free, frag;
} fgd_point;

static fgd_point measure(const fgd_ctx *x, const rusk_cluster *c)
{
	fgd_point pt = {0, 0, 0};
	for (uint32_t m = 0; m < rusk_cluster_machines(c); m++) {
		rusk_machine_info mi;
		rusk_machine_vec mv;
		rusk_cluster_machine(c, m, &mi);
		if (mi.gpus == 0)
			continue;
		rusk_machine_vec_get(c, m, &mv);
		pt.gpu_cap += (double)mv.gpus * RUSK_GPU_MILLI;
		for (uint32_t g = 0; g < mv.gpus; g++)
			pt.gpu_free += mv.gpu_free_milli[g];
		for (uint32_t k = 0; k < x->n_types; k++)
			pt.frag +=
			        x->types[k].w / x->wsum * cli_gpu_unusable(&mi, &mv, &x->types[k]);
	}
	return pt;
}

static void row(FILE *out, const char *model, uint64_t seed, const char *point, double arrived,
                uint64_t placed, uint64_t failed, fgd_point pt)
{
	double cap = pt.gpu_cap > 0 ? pt.gpu_cap : 1;
	fprintf(out, "%s,%" PRIu64 ",%s,%.4f,%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%.4f,%.4f\n", model,
	        seed, point, arrived, placed, failed, 1.0 - pt.gpu_free / cap, pt.gpu_free / cap,
	        pt.gpu_free > 0 ? pt.frag / pt.gpu_free : 0, pt.frag / cap);
}

typedef struct fgd_end {
	double unalloc, frag, first_fail;
} fgd_end;

static int fill(FILE *out, const fgd_ctx *x, const char *nodes, rusk_quality_model q,
                const char *model, uint64_t seed, uint32_t sample, fgd_end *end)
{
	rusk_cluster *c = NULL;
	char err[512];
	if (build(nodes, seed, &c, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk: --cluster: %s\n", err);
		return RUSK_EXIT_USAGE;
	}
	rusk_sync_params sp;
	rusk_sync_params_init(&sp, rusk_cluster_partitions(c), 1);
	sp.policy = RUSK_SYNC_STATE;
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	ap.quality = q;
	ap.seed = seed;
	if (sample > 0) {
		ap.sample = sample;
		ap.r_max = sample > ap.r_max ? sample : ap.r_max;
	}
	rusk_agent *a = NULL;
	if (rusk_agent_create(c, &ap, &a, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk experiment fgd: %s\n", err);
		rusk_cluster_destroy(c);
		return RUSK_EXIT_FAIL;
	}
	for (uint32_t p = 0; p < rusk_cluster_partitions(c); p++)
		rusk_view_sync(rusk_agent_view(a), p);
	rusk_rng rng;
	rusk_rng_seed(&rng, seed, 32);
	double cap = measure(x, c).gpu_cap, arrived = 0, level = 0.05;
	uint64_t placed = 0, failed = 0, id = 0;
	uint32_t in_row = 0;
	rusk_lease *leases = malloc(sizeof *leases * FGD_MAX_RUS);
	end->first_fail = -1;
	int rc = 0;
	while (leases != NULL && in_row < FGD_FAIL_RUN && arrived < FGD_MAX_DEMAND) {
		const rusk_arrival *p =
		        &x->pods[x->pool[rusk_rng_below(&rng, (uint32_t)x->n_pool)]];
		rusk_task t = pod_task(x, p, ++id);
		rusk_placement pl;
		arrived += cap > 0 ? (double)p->gpus * p->gpu_milli / cap : 0;
		int prc = rusk_agent_place(a, &t, leases, &pl);
		if (prc == RUSK_OK) {
			placed++;
			in_row = 0;
		} else if (prc == RUSK_EAGAIN) {
			failed++;
			in_row++;
			/* The agent remembers a demand no drawn machine held until its view
			 * syncs (docs/vector.md, "Failed demands"). Nothing else syncs this
			 * fill's view (exact: its one agent marks what it takes), so without
			 * this a sampling miss would refuse every later pod that needs as
			 * much, without drawing, to the end of the fill. */
			for (uint32_t q = 0; q < rusk_cluster_partitions(c); q++)
				rusk_view_sync(rusk_agent_view(a), q);
			if (end->first_fail < 0) {
				end->first_fail = arrived;
				row(out, model, seed, "first_fail", arrived, placed, failed,
				    measure(x, c));
			}
		} else {
			fprintf(stderr, "rusk experiment fgd: placing pod line %u: %s\n", p->line,
			        rusk_strerror(prc));
			rc = RUSK_EXIT_FAIL;
			break;
		}
		while (arrived >= level - 1e-12) {
			row(out, model, seed, "fill", level, placed, failed, measure(x, c));
			level += 0.05;
		}
	}
	fgd_point pt = measure(x, c);
	row(out, model, seed, "end", arrived, placed, failed, pt);
	end->unalloc = pt.gpu_cap > 0 ? pt.gpu_free / pt.gpu_cap : 0;
	end->frag = pt.gpu_free > 0 ? pt.frag / pt.gpu_free : 0;
	char verr[256];
	if (rc == 0 && rusk_cluster_verify(c, verr, sizeof verr) != RUSK_OK) {
		fprintf(stderr, "rusk experiment fgd: %s\n", verr);
		rc = RUSK_EXIT_FAIL;
	}
	if (leases == NULL) {
		fprintf(stderr, "rusk experiment fgd: out of memory\n");
		rc = RUSK_EXIT_NOMEM;
	}
	free(leases);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
	return rc;
}

/* The pod list's GPU pod shapes, weighted by count (the fragmentation measure's mix). */
static void add_type(fgd_ctx *x, const rusk_arrival *p)
{
	gtype t = {p->rus, p->mem_mib, map_models(x, p->gpu_models), p->gpus, p->gpu_milli, 1};
	for (uint32_t k = 0; k < x->n_types; k++) {
		gtype *y = &x->types[k];
		if (y->rus == t.rus && y->mem == t.mem && y->models == t.models &&
		    y->gpus == t.gpus && y->milli == t.milli) {
			y->w++;
			x->wsum++;
			return;
		}
	}
	if (x->n_types < FGD_TYPES) { /* past 256 shapes the rarest are left out */
		x->types[x->n_types++] = t;
		x->wsum++;
	}
}

/* Reads the pod list, resolves its GPU models against the cluster's and keeps the pods
 * some machine could hold. */
static int load(fgd_ctx *x, const char *nodes, const char *trace)
{
	char err[512];
	if (rusk_trace_load(trace, RUSK_TRACE_OPENB_SHAPES, &x->pods, &x->n_pods, &x->tm, NULL, err,
	                    sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk: --trace: %s\n", err);
		return RUSK_EXIT_USAGE;
	}
	rusk_cluster *c = NULL;
	if (build(nodes, 1, &c, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk: --cluster: %s\n", err);
		return RUSK_EXIT_USAGE;
	}
	int rc = 0;
	for (uint32_t k = 0; k < x->tm.n && rc == 0; k++)
		if (rusk_gpu_model(c, x->tm.name[k], &x->map[k]) != RUSK_OK) {
			x->map[k] = 31; /* no such platform: pods of only this model never fit */
		}
	x->pool = malloc(sizeof *x->pool * (x->n_pods ? x->n_pods : 1));
	if (x->pool == NULL) {
		rusk_cluster_destroy(c);
		return RUSK_EXIT_NOMEM;
	}
	for (size_t i = 0; i < x->n_pods; i++) {
		rusk_task t = pod_task(x, &x->pods[i], 1);
		if (t.rus > FGD_MAX_RUS || rusk_task_check(c, &t, err, sizeof err) != RUSK_OK)
			continue;
		x->pool[x->n_pool++] = (uint32_t)i;
		if (x->pods[i].gpus > 0)
			add_type(x, &x->pods[i]);
	}
	rusk_cluster_destroy(c);
	if (x->n_pool == 0 || x->wsum == 0) {
		fprintf(stderr,
		        "rusk: --trace: %s: no pod with GPUs fits a machine of the --cluster "
		        "node list\n",
		        trace);
		return RUSK_EXIT_USAGE;
	}
	return 0;
}

int cli_experiment_fgd(FILE *out, const char *nodes, const char *trace, uint64_t seed,
                       uint32_t seeds, uint32_t sample)
{
	char nbuf[4096], tbuf[4096];
	if (nodes == NULL || strcmp(nodes, "openb") == 0) {
		if (cli_openb_path("--cluster", "openb_node_list_all_node.csv", nbuf, sizeof nbuf))
			return RUSK_EXIT_USAGE;
		nodes = nbuf;
	}
	if (trace == NULL || strcmp(trace, "openb") == 0) {
		if (cli_openb_path("--trace", "openb_pod_list_default.csv", tbuf, sizeof tbuf))
			return RUSK_EXIT_USAGE;
		trace = tbuf;
	}
	fgd_ctx *x = calloc(1, sizeof *x);
	if (x == NULL)
		return RUSK_EXIT_NOMEM;
	int rc = load(x, nodes, trace);
	static const struct {
		const char *name;
		rusk_quality_model q;
	} models[] = {{"score", RUSK_QUALITY_SCORE},
	              {"packing", RUSK_QUALITY_PACKING},
	              {"fgd", RUSK_QUALITY_FGD}};
	if (rc == 0)
		fprintf(out, "model,seed,point,arrived_gpu_demand,placed,failed,gpu_allocated,"
		             "unallocated_gpu_share,fragmented_share,fragmented_of_capacity\n");
	for (size_t k = 0; rc == 0 && k < sizeof models / sizeof *models; k++) {
		double u[64], f[64], ff[64];
		for (uint32_t s = 0; rc == 0 && s < seeds; s++) {
			fgd_end e = {0};
			rc = fill(out, x, nodes, models[k].q, models[k].name, seed + s, sample, &e);
			if (s < 64) {
				u[s] = e.unalloc;
				f[s] = e.frag;
				ff[s] = e.first_fail;
			}
		}
		uint32_t n = seeds < 64 ? seeds : 64;
		double um = 0, fm = 0, fa = 0, ulo = 1, uhi = 0;
		for (uint32_t s = 0; s < n; s++) {
			um += u[s] / n;
			fm += f[s] / n;
			fa += ff[s] / n;
			ulo = fmin(ulo, u[s]);
			uhi = fmax(uhi, u[s]);
		}
		if (rc == 0)
			fprintf(stderr,
			        "fgd %-8s filled: unallocated GPU share %.2f%% (%.2f..%.2f), "
			        "fragmented share %.1f%%, first pod without a machine at %.1f%% "
			        "arrived GPU demand (mean of %u seeds)\n",
			        models[k].name, 100 * um, 100 * ulo, 100 * uhi, 100 * fm, 100 * fa,
			        n);
	}
	free(x->pods);
	free(x->pool);
	free(x);
	return rc;
}
