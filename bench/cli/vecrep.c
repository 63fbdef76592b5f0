/* SPDX-License-Identifier: MIT */
/*
 * Vector resources in `rusk run` and `rusk sim` (driver.h, drv_vec_*): a trace's memory and
 * GPU columns turned into the tasks' rusk_vec_demand, the GPU model names of the trace
 * resolved against the cluster's, refusals by dimension, and the report per dimension:
 * requested, allocated, utilization over time, the GPU allocation ratio and the fragmented
 * GPU share.
 *
 * Fragmented GPU share (after the openb trace's study of GPU fragmentation, Weng et al.,
 * ATC'23): of the free GPU capacity, the share that a GPU task drawn from the run's own
 * workload could not use, in expectation over the workload's GPU task shapes (the 16 most
 * frequent, by count): on a machine that lacks the task's cores or memory, or whose model
 * it does not accept, all free GPU capacity is unusable to it; for a shared-GPU task, the
 * free pieces smaller than its share; for a task of k whole GPUs, the partly used GPUs'
 * free pieces, and everything if fewer than k GPUs are idle.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runstate.h"

#define VEC_TYPES 16

typedef cli_gpu_type vtype;

struct drv_vec {
	rusk_trace_models tm;
	uint32_t map[RUSK_TRACE_MAX_MODELS]; /* trace model -> cluster platform */
	vtype types[VEC_TYPES];
	uint32_t n_types;
	/* generator thread */
	uint64_t req_cpu_milli, req_mem, req_gpu_milli, never_ran;
	uint64_t refused[5]; /* by dimension, dims[] */
	/* sampler (main thread) */
	double mem_sum, gpu_sum, frag_sum, mem_peak, gpu_peak, frag_peak;
	uint32_t secs;
	double mem_now, gpu_now, frag_now;
};

static const char *const dims[5] = {"rus", "mem_mib", "gpus", "gpu_models", "shape"};

rusk_trace_models *drv_vec_models(run *R)
{
	if (R->vec == NULL)
		R->vec = calloc(1, sizeof *R->vec);
	return R->vec != NULL ? &R->vec->tm : NULL;
}

/* The trace's GPU model mask, in cluster platform bits. */
static uint32_t map_models(const drv_vec *v, uint32_t mask)
{
	uint32_t out = 0;
	for (uint32_t k = 0; k < v->tm.n; k++)
		if (mask & (1u << k))
			out |= 1u << v->map[k];
	return out;
}

/* The workload's GPU task shapes, most frequent first (the fragmentation measure's mix). */
static void workload_types(run *R, drv_vec *v)
{
	vtype all[256];
	uint32_t n = 0;
	for (size_t i = 0; i < R->n_trace; i++) {
		const rusk_arrival *x = &R->trace[i];
		if (!x->vec || x->gpus == 0)
			continue;
		vtype t = {x->rus,  x->mem_mib,   map_models(v, x->gpu_models),
		           x->gpus, x->gpu_milli, 1};
		uint32_t k = 0;
		while (k < n &&
		       (all[k].rus != t.rus || all[k].mem != t.mem || all[k].models != t.models ||
		        all[k].gpus != t.gpus || all[k].milli != t.milli))
			k++;
		if (k < n)
			all[k].w++;
		else if (n < 256)
			all[n++] = t;
	}
	for (uint32_t i = 0; i < n && v->n_types < VEC_TYPES; i++) {
		uint32_t best = i;
		for (uint32_t j = i + 1; j < n; j++)
			best = all[j].w > all[best].w ? j : best;
		vtype tmp = all[i];
		all[i] = all[best];
		all[best] = tmp;
		v->types[v->n_types++] = all[i];
	}
}

/* Whether some machine slot of the cluster has GPUs of platform `model`. */
static bool model_has_gpus(const rusk_cluster *c, uint32_t model)
{
	for (uint32_t m = 0; m < rusk_cluster_machines(c); m++) {
		rusk_machine_vec mv;
		rusk_machine_vec_get(c, m, &mv);
		if (mv.gpus > 0 && mv.gpu_model == model)
			return true;
	}
	return false;
}

static int vec_setup(run *R, const drv_setup_in *in)
{
	const char *trace_path = in->trace_path;
	drv_vec *v = R->vec;
	bool any = false;
	for (size_t i = 0; i < R->n_trace && !any; i++)
		any = R->trace[i].vec;
	if (v == NULL || !any || R->cfg.rus_only) {
		free(v);
		R->vec = NULL;
		return 0;
	}
	for (uint32_t k = 0; k < v->tm.n; k++)
		if (rusk_gpu_model(R->c, v->tm.name[k], &v->map[k]) != RUSK_OK ||
		    !model_has_gpus(R->c, v->map[k])) {
			fprintf(stderr,
			        "rusk: --trace: %s:%u: no machine of this cluster has GPUs of "
			        "model "
			        "'%s' (--cluster openb has the openb models)\n",
			        trace_path, v->tm.line[k], v->tm.name[k]);
			return RUSK_EXIT_USAGE;
		}
	workload_types(R, v);
	return 0;
}

static drv_admit vec_admit(run *R, const rusk_arrival *x, rusk_dtask_spec *spec)
{
	drv_vec *v = R->vec;
	if (!x->vec)
		return DRV_ADMIT_NONE;
	uint32_t ru_milli = R->cfg.ru_milli;
	v->req_cpu_milli += x->cpu_milli ? x->cpu_milli : (uint64_t)x->rus * ru_milli;
	v->req_mem += x->mem_mib;
	v->req_gpu_milli += (uint64_t)x->gpus * x->gpu_milli;
	v->never_ran += x->never_ran;
	spec->placement = RUSK_PLACE_MACHINE;
	spec->vec =
	        (rusk_vec_demand){x->mem_mib, x->gpus, x->gpu_milli, map_models(v, x->gpu_models)};
	rusk_task t = {.id = 1,
	               .rus = spec->rus,
	               .gang = true,
	               .placement = RUSK_PLACE_MACHINE,
	               .vec = spec->vec};
	char err[256], pat[24];
	if (rusk_task_check(R->c, &t, err, sizeof err) == RUSK_OK)
		return DRV_ADMIT_FITS;
	/* The kernel's message for a vector task names the field: "task ID: FIELD: ..."; a
	 * row whose vector columns are all 0 is an RU-only task, refused for its RUs. */
	int k = 0;
	while (rusk_vec_any(&spec->vec) && k < 4 &&
	       (snprintf(pat, sizeof pat, ": %s:", dims[k]), strstr(err, pat) == NULL))
		k++;
	v->refused[k]++;
	return DRV_ADMIT_REFUSED;
}

void drv_vec_placed(run *R, run_agent *a, const rusk_dtask_info *j)
{
	stat_add(&a->alloc_cpu_milli, (uint64_t)j->rus * R->cfg.ru_milli);
	stat_add(&a->alloc_mem, j->vec.mem_mib);
	stat_add(&a->alloc_gpu_milli, (uint64_t)j->vec.gpus * j->vec.gpu_milli);
}

/* This second's memory and GPU use and fragmented share. */
static void measure(run *R, drv_vec *v)
{
	rusk_cluster_vec cv;
	rusk_cluster_vec_get(R->c, &cv);
	double wsum = 0, frag = 0, free_gpu = 0;
	for (uint32_t k = 0; k < v->n_types; k++)
		wsum += v->types[k].w;
	for (uint32_t m = 0; m < rusk_cluster_machines(R->c); m++) {
		rusk_machine_info mi;
		rusk_machine_vec mv;
		rusk_cluster_machine(R->c, m, &mi);
		if (mi.state != RUSK_MACHINE_UP || mi.gpus == 0)
			continue;
		rusk_machine_vec_get(R->c, m, &mv);
		for (uint32_t g = 0; g < mv.gpus; g++)
			free_gpu += mv.gpu_free_milli[g];
		for (uint32_t k = 0; k < v->n_types; k++)
			frag += v->types[k].w / wsum * cli_gpu_unusable(&mi, &mv, &v->types[k]);
	}
	v->mem_now = cv.mem_mib ? (double)cv.mem_used_mib / cv.mem_mib : 0;
	v->gpu_now = cv.gpu_milli ? (double)cv.gpu_used_milli / cv.gpu_milli : 0;
	v->frag_now = free_gpu > 0 && wsum > 0 ? frag / free_gpu : 0;
}

static void vec_second(run *R, bool idle)
{
	drv_vec *v = R->vec;
	if (!idle) /* idle: nothing was allocated or freed since the last measure */
		measure(R, v);
	v->secs++;
	v->mem_sum += v->mem_now;
	v->gpu_sum += v->gpu_now;
	v->frag_sum += v->frag_now;
	v->mem_peak = fmax(v->mem_peak, v->mem_now);
	v->gpu_peak = fmax(v->gpu_peak, v->gpu_now);
	v->frag_peak = fmax(v->frag_peak, v->frag_now);
}

static const char *vec_csv_header(void)
{
	return ",mem_utilization,gpu_allocation,gpu_fragmented_share";
}

static void vec_csv(const run *R, FILE *f)
{
	const drv_vec *v = R->vec;
	fprintf(f, ",%.4f,%.4f,%.4f", v->mem_now, v->gpu_now, v->frag_now);
}

/* Allocated over every placement, summed over the agents. */
static void allocated(const run *R, uint64_t out[3])
{
	out[0] = out[1] = out[2] = 0;
	for (uint32_t i = 0; i < R->cfg.agents; i++) {
		out[0] += R->ag[i].alloc_cpu_milli;
		out[1] += R->ag[i].alloc_mem;
		out[2] += R->ag[i].alloc_gpu_milli;
	}
}

static uint64_t refused_total(const drv_vec *v)
{
	uint64_t n = 0;
	for (int k = 0; k < 5; k++)
		n += v->refused[k];
	return n;
}

void drv_vec_print(const run *R)
{
	const drv_vec *v = R->vec;
	uint64_t al[3];
	allocated(R, al);
	double s = v->secs ? v->secs : 1;
	/* Requested is the trace's cpu_milli / 1000; allocated is whole RUs of --ru-milli
	 * (a request of 4.5 cores holds 5), summed over every placement (a preempted task
	 * placed again counts again): allocated can exceed requested without double counting. */
	fprintf(R->out,
	        "  %-28s requested cores %.0f (cpu_milli / 1000), memory %.1f TiB, GPUs %.1f\n"
	        "  %-28s cores %.0f (whole RUs of %u milli: requests round up), memory %.1f TiB, "
	        "GPUs %.1f (every placement counted)\n",
	        "resources", v->req_cpu_milli / 1e3, v->req_mem / 1048576.0, v->req_gpu_milli / 1e3,
	        "  allocated", al[0] / 1e3, R->cfg.ru_milli, al[1] / 1048576.0, al[2] / 1e3);
	fprintf(R->out,
	        "  %-28s memory %.1f%% mean (peak %.1f%%); GPU allocation ratio %.1f%% mean "
	        "(peak %.1f%%); fragmented GPU share %.1f%% mean (peak %.1f%%)\n",
	        "  over time", 100 * v->mem_sum / s, 100 * v->mem_peak, 100 * v->gpu_sum / s,
	        100 * v->gpu_peak, 100 * v->frag_sum / s, 100 * v->frag_peak);
	if (refused_total(v) > 0) {
		fprintf(R->out, "  %-28s", "  refused as infeasible");
		for (int k = 0; k < 5; k++)
			if (v->refused[k])
				fprintf(R->out, " %s %" PRIu64, dims[k], v->refused[k]);
		fprintf(R->out, " (no machine of this cluster could ever hold them%s)\n",
		        v->refused[2] || v->refused[3] ? "; --cluster openb has GPUs" : "");
	}
	if (v->never_ran)
		fprintf(R->out,
		        "  %-28s %" PRIu64 " tasks the traced cluster never scheduled, replayed "
		        "as requests\n",
		        "  never ran in the trace", v->never_ran);
}

uint64_t drv_vec_refused(const run *R)
{
	return R->vec != NULL ? refused_total(R->vec) : 0;
}

void drv_vec_json(FILE *f, const run *R)
{
	const drv_vec *v = R->vec;
	uint64_t al[3];
	allocated(R, al);
	double s = v->secs ? v->secs : 1;
	fprintf(f,
	        "  \"resources\": {\"requested\": {\"cpu_milli\": %" PRIu64
	        ", \"mem_mib\": %" PRIu64 ", \"gpu_milli\": %" PRIu64
	        "}, \"allocated\": {\"cpu_milli\": %" PRIu64 ", \"mem_mib\": %" PRIu64
	        ", \"gpu_milli\": %" PRIu64 "},\n",
	        v->req_cpu_milli, v->req_mem, v->req_gpu_milli, al[0], al[1], al[2]);
	fprintf(f,
	        "    \"mem_utilization\": {\"mean\": %.4f, \"peak\": %.4f}, \"gpu_allocation\": "
	        "{\"mean\": %.4f, \"peak\": %.4f}, \"gpu_fragmented_share\": {\"mean\": %.4f, "
	        "\"peak\": %.4f},\n",
	        v->mem_sum / s, v->mem_peak, v->gpu_sum / s, v->gpu_peak, v->frag_sum / s,
	        v->frag_peak);
	fprintf(f, "    \"refused_infeasible\": {");
	for (int k = 0; k < 5; k++)
		fprintf(f, "%s\"%s\": %" PRIu64, k ? ", " : "", dims[k], v->refused[k]);
	fprintf(f, "}, \"never_ran_in_trace\": %" PRIu64 "},\n", v->never_ran);
}

void drv_vec_free(run *R)
{
	free(R->vec);
	R->vec = NULL;
}

/* ---- the feature (runstate.h) ------------------------------------------------------------ */

static bool vec_on(const run *R)
{
	return R->vec != NULL;
}

static void vec_event(run *R, rusk_dispatch_event *ev)
{
	if (ev->kind != RUSK_EV_PLACED)
		return;
	rusk_dtask_info jb;
	const rusk_dtask_info *j = drv_task(R->d, ev, &jb);
	if (j != NULL)
		drv_vec_placed(R, &R->ag[ev->agent], j);
}

static void vec_json(FILE *f, run *R)
{
	drv_vec_json(f, R);
}

static void vec_print(run *R)
{
	drv_vec_print(R);
}

const drv_feature drv_feature_vec = {
        .name = "vector resources",
        .on = vec_on,
        .stage = DRV_STAGE_TRACE,
        .setup = vec_setup,
        .admit = vec_admit,
        .second = vec_second,
        .csv_header = vec_csv_header,
        .csv = vec_csv,
        .event = vec_event,
        .json = vec_json,
        .json_early = true,
        .print = vec_print,
        .free = drv_vec_free,
};
