/* SPDX-License-Identifier: MIT */
/*
 * The checks of a task (rusk_task_check, rusk_task_fits_machine): what the kernel refuses
 * (RUSK_EINVAL: a malformed task, naming the field) and what no state of the cluster can
 * ever hold (RUSK_EINFEASIBLE: too many RUs for its placement kind, a vector demand no
 * machine shape meets, held RUs that leave no room beside them).
 *
 * The agents' hot path checks a task with one pass of compares (agent.c, check_task) and
 * comes here only on failure, or for a task with held RUs or vector demands; a task is
 * checked once, on entry to a decision. Read-only: any thread, no registration (the
 * cluster's static shape only, and relaxed loads of free counts in fits_machine).
 */
#include <string.h>

#include "kernel/choose.h"
#include "kernel/task.h"
#include "kernel/vec_impl.h"

/* ---- vector tasks ---------------------------------------------------------------------- */

static inline bool model_ok(uint32_t models, uint32_t platform)
{
	return models == 0 || (models >> platform) & 1u;
}

static bool shape_ok(const rusk_shape *s, uint32_t rus, const rusk_vec_demand *vec)
{
	if (s->rus < rus || s->mem_mib < vec->mem_mib || s->gpus < vec->gpus)
		return false;
	return vec->gpus == 0 || model_ok(vec->gpu_models, s->platform);
}

static int malformed(const rusk_task *t, const char **field, char *err, size_t errlen)
{
	const rusk_vec_demand *v = &t->vec;
	const char *f = NULL;
	if (v->gpus > 0 && (v->gpu_milli == 0 || v->gpu_milli > RUSK_GPU_MILLI))
		f = "gpu_milli";
	else if (v->gpus > 1 && v->gpu_milli != RUSK_GPU_MILLI)
		f = "gpu_milli";
	else if (v->gpus == 0 && (v->gpu_milli != 0 || v->gpu_models != 0))
		f = "gpus";
	else if (t->placement != RUSK_PLACE_MACHINE || !t->gang)
		f = "placement";
	if (f == NULL)
		return RUSK_OK;
	*field = f;
	return rusk_errf(err, errlen, RUSK_EINVAL,
	                 "task %llu: %s: a vector task asks for gpu_milli 1..1000 (below "
	                 "1000 only for one shared GPU; 0 without GPUs), models only with "
	                 "GPUs, and is placed whole on one machine (placement machine, gang)",
	                 (unsigned long long)t->id, f);
}

/* Which one dimension alone rules t out, or "shape" when each fits some machine but no
 * machine holds all of them together. */
static const char *infeasible_dim(const rusk_cluster *c, const rusk_task *t)
{
	rusk_vec_demand mem_only = {.mem_mib = t->vec.mem_mib};
	rusk_vec_demand gpu_only = t->vec;
	gpu_only.mem_mib = 0;
	rusk_vec_demand any_model = gpu_only;
	any_model.gpu_models = 0;
	bool rus = false, mem = false, gpu = false, model = false;
	for (uint32_t i = 0; i < c->n_shapes; i++) {
		rus |= c->shapes[i].rus >= t->rus;
		mem |= shape_ok(&c->shapes[i], 0, &mem_only);
		gpu |= shape_ok(&c->shapes[i], 0, &any_model);
		model |= shape_ok(&c->shapes[i], 0, &gpu_only);
	}
	return !rus ? "rus" : !mem ? "mem_mib" : !gpu ? "gpus" : !model ? "gpu_models" : "shape";
}

int rusk_vec_check_(const rusk_cluster *c, const rusk_task *t, const char **field, char *err,
                    size_t errlen)
{
	int rc = malformed(t, field, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	for (uint32_t i = 0; i < c->n_shapes; i++)
		if (shape_ok(&c->shapes[i], t->rus, &t->vec))
			return RUSK_OK;
	const char *dim = infeasible_dim(c, t);
	*field = dim;
	return rusk_errf(err, errlen, RUSK_EINFEASIBLE,
	                 "task %llu: %s: no machine of the cluster could ever hold %u RUs, "
	                 "%u MiB and %u GPU(s) of %u milli%s",
	                 (unsigned long long)t->id, dim, t->rus, t->vec.mem_mib, t->vec.gpus,
	                 t->vec.gpu_milli, t->vec.gpu_models ? " of an accepted model" : "");
}

/* ---- any task --------------------------------------------------------------------------- */

static const char *const place_names[] = {"any", "machine", "rack", "spread"};
static const char *const fit_what[] = {"RUs of the whole cluster", "RUs of its largest machine",
                                       "RUs of its largest rack", "machines of the cluster"};

static const char *const held_what[] = {"RUs of the whole cluster", "slots of their machine",
                                        "slots of their rack", "machines of the cluster"};

/*
 * Whether t's held list (n_held > 0) is malformed (rusk/sched.h "Held RUs"): NULL, on a
 * vector task, an RU out of range, or, for machine and rack placement, RUs in more than one
 * group. Writes the message. Slow path only.
 */
static bool held_problem(const rusk_cluster *c, const rusk_task *t, char *err, size_t errlen)
{
	unsigned long long id = (unsigned long long)t->id;
	if (t->held == NULL) {
		rusk_errf(err, errlen, RUSK_EINVAL, "task %llu: n_held %u but held is NULL", id,
		          t->n_held);
		return true;
	}
	if (rusk_vec_any(&t->vec)) {
		rusk_errf(err, errlen, RUSK_EINVAL,
		          "task %llu: a vector task is always gang: it cannot hold RUs already "
		          "(n_held %u)",
		          id, t->n_held);
		return true;
	}
	for (uint32_t i = 0; i < t->n_held; i++)
		if (t->held[i].ru >= c->n_rus) {
			rusk_errf(err, errlen, RUSK_EINVAL,
			          "task %llu: held[%u] names RU %u, not in 0..%u", id, i,
			          t->held[i].ru, c->n_rus - 1);
			return true;
		}
	if (t->placement != RUSK_PLACE_MACHINE && t->placement != RUSK_PLACE_RACK)
		return false;
	uint32_t g0, lo, hi;
	rusk_group_range_(c, t->placement, t->held[0].ru, &g0, &lo, &hi);
	for (uint32_t i = 1; i < t->n_held; i++)
		if (t->held[i].ru < lo || t->held[i].ru >= hi) {
			rusk_errf(
			        err, errlen, RUSK_EINVAL,
			        "task %llu: held[%u] (RU %u) is not in the %s of held[0] (RU %u): "
			        "placement %s keeps a task in one",
			        id, i, t->held[i].ru, place_names[t->placement], t->held[0].ru,
			        place_names[t->placement]);
			return true;
		}
	return false;
}

/* Most RUs t's held RUs and its remainder may have together (a checked held list):
 * the slots of their machine or rack, the machine count (spread), the cluster's RUs. */
static uint32_t held_fit(const rusk_cluster *c, const rusk_task *t)
{
	if (t->placement != RUSK_PLACE_MACHINE && t->placement != RUSK_PLACE_RACK)
		return c->fit[t->placement];
	uint32_t gid, lo, hi;
	rusk_group_range_(c, t->placement, t->held[0].ru, &gid, &lo, &hi);
	return hi - lo;
}

/* Out of line: what is wrong with a task that the fast check refused, and which field. */
RUSK_NOINLINE int rusk_task_problem_(const rusk_cluster *c, const rusk_task *t, const char **field,
                                     char *err, size_t errlen)
{
	const char *f = NULL;
	int rc = RUSK_EINVAL;
	if (t == NULL) {
		f = "task";
		rusk_errf(err, errlen, rc, "task is NULL");
	} else if (t->id == 0 || t->id > RUSK_TASK_ID_MAX) {
		f = "id";
		rusk_errf(err, errlen, rc, "id %llu not in 1..%llu", (unsigned long long)t->id,
		          (unsigned long long)RUSK_TASK_ID_MAX);
	} else if (t->rus == 0) {
		f = "rus";
		rusk_errf(err, errlen, rc, "task %llu: rus is 0", (unsigned long long)t->id);
	} else if (t->placement > RUSK_PLACE_SPREAD) {
		f = "placement";
		rusk_errf(err, errlen, rc, "task %llu: placement %u is not a rusk_placement_pref",
		          (unsigned long long)t->id, t->placement);
	} else if (t->n_preferred > 0 && t->preferred == NULL) {
		f = "preferred";
		rusk_errf(err, errlen, rc, "task %llu: n_preferred %u but preferred is NULL",
		          (unsigned long long)t->id, t->n_preferred);
	} else if (!rusk_profile_ok_(&t->profile)) {
		f = "profile";
		rusk_errf(err, errlen, rc, "task %llu: a profile value exceeds 99",
		          (unsigned long long)t->id);
	} else if (t->n_held > 0 && held_problem(c, t, err, errlen)) {
		f = "held";
	} else if (rusk_vec_any(&t->vec)) {
		rc = rusk_vec_check_(c, t, &f, err, errlen);
	} else if (t->rus > c->fit[t->placement]) {
		f = "rus";
		rc = RUSK_EINFEASIBLE;
		rusk_errf(err, errlen, rc,
		          "task %llu: rus %u exceeds the %u %s (placement %s): no state of the "
		          "cluster can hold it",
		          (unsigned long long)t->id, t->rus, c->fit[t->placement],
		          fit_what[t->placement], place_names[t->placement]);
	} else if (t->n_held > 0 && (uint64_t)t->n_held + t->rus > held_fit(c, t)) {
		f = "rus";
		rc = RUSK_EINFEASIBLE;
		rusk_errf(err, errlen, rc,
		          "task %llu: rus %u beside its %u held RUs exceeds the %u %s beside them "
		          "(placement %s): no state of the cluster can hold it",
		          (unsigned long long)t->id, t->rus, t->n_held, held_fit(c, t),
		          held_what[t->placement], place_names[t->placement]);
	} else {
		rc = RUSK_OK;
	}
	if (field != NULL)
		*field = f;
	return rc;
}

RUSK_EXPORT int rusk_task_check(const rusk_cluster *c, const rusk_task *t, char *err, size_t errlen)
{
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "cluster is NULL");
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	return rusk_task_problem_(c, t, NULL, err, errlen);
}

RUSK_EXPORT int rusk_task_fits_machine(const rusk_cluster *c, const rusk_task *t, uint32_t m)
{
	if (c == NULL || t == NULL)
		return RUSK_EINVAL;
	if (m >= c->n_machines)
		return RUSK_ERANGE;
	if (rusk_task_check(c, t, NULL, 0) == RUSK_EINVAL)
		return RUSK_EINVAL;
	const rusk_machine *mm = &c->machines[m];
	if (mm->n_rus < t->rus || !rusk_vec_shape_fits_(c, m, &t->vec))
		return RUSK_EINFEASIBLE;
	if (rusk_load32(&mm->state, RUSK_RELAXED) != RUSK_M_UP ||
	    rusk_machine_free_(c, mm) < t->rus || !rusk_vec_free_fits_(c, m, &t->vec))
		return RUSK_EAGAIN;
	return RUSK_OK;
}
