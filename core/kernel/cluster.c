/* SPDX-License-Identifier: MIT */
/*
 * Cluster model: building the topology and the master RU array, and reading it.
 *
 * Topology (ParSync Supp. B, "How is the cluster partitioned?"): machines are grouped in
 * order into racks of machines_per_rack, racks into cells of racks_per_cell, and the cells
 * into P partitions of floor/ceil(cells / P) consecutive cells each, so a partition is a
 * set of whole low-level cells and one contiguous range of machines and RUs. P > cells is
 * refused: a partition without a cell would never have a free RU to offer.
 *
 * Each partition's RUs map to whole cache lines of the free bitmap (its first bit is
 * RUSK_PART_ALIGN_BITS-aligned), so a snapshot of a partition is a copy of a word range
 * (snapshot.c). Static per-platform
 * masks over the same bits give per-platform free counts by AND + popcount.
 *
 * Invariants after build: RUs of machine m are [first_ru, first_ru + n_rus); every RU of
 * an UP machine is free with generation 0 and its bit set; spare slots are DOWN with
 * every RU offline; each partition counter holds its free RUs and their score sum; all
 * interference sums are 0. The same parameters (seed included) build the same cluster.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/atomic.h"
#include "base/rng.h"
#include "kernel/ru_impl.h"
#include "kernel/snapshot_impl.h"
#include "kernel/vec_impl.h"

static const rusk_platform default_platforms[] = {
        {"std", 0.60, 1.00},
        {"fast", 0.25, 1.30},
        {"old", 0.15, 0.70},
};

RUSK_EXPORT void rusk_cluster_params_init(rusk_cluster_params *p)
{
	if (p == NULL)
		return;
	memset(p, 0, sizeof *p);
	p->machines = 100000;
	p->rus_per_machine = 16;
	p->mem_mib_per_machine = 65536;
	p->gpus_per_machine = 0;
	p->machines_per_rack = 40;
	p->racks_per_cell = 5;
	p->partitions = 20;
	p->spare_machines = 0;
	p->ru_milli = 1000;
	p->score_mean = 10.0;
	p->score_variance = 2.0;
	p->platforms = NULL;
	p->n_platforms = 0;
	p->seed = 1;
	p->clock = NULL;
}

static uint32_t div_ceil(uint32_t a, uint32_t b)
{
	return a / b + (a % b != 0);
}

int rusk_cluster_check_topology_(const rusk_cluster_params *p, uint32_t n_machines, char *err,
                                 size_t errlen)
{
	if (n_machines == 0)
		return rusk_errf(err, errlen, RUSK_ESHAPE, "cluster has 0 machines");
	if (p->machines_per_rack == 0)
		return rusk_errf(err, errlen, RUSK_ESHAPE, "machines_per_rack is 0");
	if (p->racks_per_cell == 0)
		return rusk_errf(err, errlen, RUSK_ESHAPE, "racks_per_cell is 0");
	if (p->partitions == 0)
		return rusk_errf(err, errlen, RUSK_ESHAPE, "partitions is 0");
	uint32_t racks = div_ceil(n_machines, p->machines_per_rack);
	uint32_t cells = div_ceil(racks, p->racks_per_cell);
	if (p->partitions > cells)
		return rusk_errf(
		        err, errlen, RUSK_ESHAPE,
		        "%u partitions but only %u cells (%u machines, %u per rack, %u racks "
		        "per cell): each partition needs at least one cell; valid partition "
		        "counts here: 1..%u (more need more machines or smaller cells)",
		        p->partitions, cells, n_machines, p->machines_per_rack, p->racks_per_cell,
		        cells);
	if (p->partitions > UINT16_MAX)
		return rusk_errf(err, errlen, RUSK_ESHAPE, "%u partitions exceed %u", p->partitions,
		                 UINT16_MAX);
	return RUSK_OK;
}

int rusk_cluster_alloc_(rusk_cluster **out, uint32_t n_machines, uint64_t n_rus,
                        const rusk_cluster_params *p, char *err, size_t errlen)
{
	if (n_rus == 0)
		return rusk_errf(err, errlen, RUSK_ESHAPE, "cluster has 0 RUs");
	if (p->clock != NULL && p->clock->now_ns == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "clock has no now_ns function");
	if (n_rus >= UINT32_MAX)
		return rusk_errf(err, errlen, RUSK_ESHAPE,
		                 "%llu RUs exceed the %u one cluster can index",
		                 (unsigned long long)n_rus, UINT32_MAX - 1);
	rusk_cluster *c = rusk_alloc_zeroed(sizeof *c, RUSK_CACHELINE);
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory for the cluster");
	c->n_rus = (uint32_t)n_rus;
	c->n_machines = n_machines;
	c->n_parts = p->partitions;
	c->machines_per_rack = p->machines_per_rack;
	c->racks_per_cell = p->racks_per_cell;
	c->clock = p->clock != NULL ? p->clock : rusk_clock_monotonic();

	size_t words = sizeof(uint64_t) * n_rus;
	size_t rmach = sizeof(uint32_t) * n_rus;
	size_t tenants = sizeof(rusk_profile) * n_rus;
	size_t scores = sizeof(uint16_t) * n_rus;
	size_t machs = sizeof(rusk_machine) * n_machines;
	size_t parts = sizeof(rusk_partition) * p->partitions;
	c->ru_word = rusk_alloc_zeroed(words, RUSK_CACHELINE);
	c->ru_machine = rusk_alloc_zeroed(rmach, RUSK_CACHELINE);
	c->ru_tenant = rusk_alloc_zeroed(tenants, RUSK_CACHELINE);
	c->ru_score = rusk_alloc_zeroed(scores, RUSK_CACHELINE);
	c->machines = rusk_alloc_zeroed(machs, RUSK_CACHELINE);
	c->parts = rusk_alloc_zeroed(parts, RUSK_CACHELINE);
	c->bytes_array = words + rmach + tenants + scores + machs + parts;
	c->bytes_total = c->bytes_array + sizeof *c;
	c->score_mean = p->score_mean;
	c->score_sd = sqrt(p->score_variance);
	c->snap_reuse_ns = 0;
	pthread_mutex_init(&c->central_lock, NULL);
	if (!c->ru_word || !c->ru_machine || !c->ru_tenant || !c->ru_score || !c->machines ||
	    !c->parts) {
		rusk_cluster_destroy(c);
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory for %llu RUs",
		                 (unsigned long long)n_rus);
	}
	*out = c;
	return RUSK_OK;
}

/* Normal(mean, sd) slot score in milli-units, clamped to what 16 bits hold. */
static uint16_t draw_score(rusk_rng *r, double mean, double sd)
{
	double u1 = rusk_rng_unit(r), u2 = rusk_rng_unit(r);
	double z = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
	double v = (mean + sd * z) * 1000.0;
	if (v < 0)
		v = 0;
	if (v > UINT16_MAX)
		v = UINT16_MAX;
	return (uint16_t)lround(v);
}

static void bit_set(uint64_t *bits, uint32_t b)
{
	bits[b / 64] |= UINT64_C(1) << (b % 64);
}

int rusk_cluster_layout_(rusk_cluster *c, const rusk_cluster_params *p, char *err, size_t errlen)
{
	c->n_racks = div_ceil(c->n_machines, p->machines_per_rack);
	c->n_cells = div_ceil(c->n_racks, p->racks_per_cell);

	uint32_t ru = 0, rack_rus = 0;
	c->fit[RUSK_PLACE_ANY] = c->n_rus;
	c->fit[RUSK_PLACE_MACHINE] = c->fit[RUSK_PLACE_RACK] = 0;
	c->fit[RUSK_PLACE_SPREAD] = c->n_machines;
	for (uint32_t m = 0; m < c->n_machines; m++) {
		rusk_machine *mm = &c->machines[m];
		mm->first_ru = ru;
		mm->rack = m / p->machines_per_rack;
		mm->cell = mm->rack / p->racks_per_cell;
		mm->state = m < c->n_up_initial && !mm->spare ? RUSK_M_UP : RUSK_M_DOWN;
		for (uint32_t k = 0; k < mm->n_rus; k++)
			c->ru_machine[ru + k] = m;
		ru += mm->n_rus;
		/* What a task could ever get (rusk_agent_place's RUSK_EINFEASIBLE): spare and
		 * down slots count, since rusk_machine_up may bring any of them up. */
		rack_rus = m % p->machines_per_rack == 0 ? mm->n_rus : rack_rus + mm->n_rus;
		if (mm->n_rus > c->fit[RUSK_PLACE_MACHINE])
			c->fit[RUSK_PLACE_MACHINE] = mm->n_rus;
		if (rack_rus > c->fit[RUSK_PLACE_RACK])
			c->fit[RUSK_PLACE_RACK] = rack_rus;
	}
	/* Partition p owns cells [p*C/P, (p+1)*C/P): sizes differ by at most one cell. Its
	 * bits start on a word boundary. */
	uint32_t m = 0, bit = 0;
	for (uint32_t pi = 0; pi < c->n_parts; pi++) {
		rusk_partition *pp = &c->parts[pi];
		uint64_t lo = (uint64_t)pi * c->n_cells / c->n_parts;
		uint64_t hi = (uint64_t)(pi + 1) * c->n_cells / c->n_parts;
		pp->first_cell = (uint32_t)lo;
		pp->n_cells = (uint32_t)(hi - lo);
		pp->first_machine = m;
		pp->first_ru = m < c->n_machines ? c->machines[m].first_ru : c->n_rus;
		pp->first_bit = bit;
		while (m < c->n_machines && c->machines[m].cell < hi) {
			c->machines[m].partition = (uint16_t)pi;
			c->machines[m].first_bit = bit + (c->machines[m].first_ru - pp->first_ru);
			pp->n_rus += c->machines[m].n_rus;
			m++;
		}
		pp->n_machines = m - pp->first_machine;
		if (pp->n_rus > RUSK_MAX_PARTITION_RUS)
			return rusk_errf(
			        err, errlen, RUSK_ESHAPE,
			        "partition %u has %u RUs, more than the %u one partition may "
			        "have: use more partitions",
			        pi, pp->n_rus, RUSK_MAX_PARTITION_RUS);
		/* Whole cache lines per partition (RUSK_PART_ALIGN_BITS). */
		bit += div_ceil(pp->n_rus, RUSK_PART_ALIGN_BITS) * RUSK_PART_ALIGN_BITS;
	}
	c->n_words = bit / 64;
	size_t wbytes = sizeof(uint64_t) * (c->n_words ? c->n_words : 1);
	c->free_bits = rusk_alloc_zeroed(wbytes, RUSK_CACHELINE);
	c->plat_bits = rusk_alloc_zeroed(wbytes * c->n_platforms, RUSK_CACHELINE);
	c->bytes_array += wbytes * (1 + c->n_platforms);
	c->bytes_total += wbytes * (1 + c->n_platforms);
	if (c->free_bits == NULL || c->plat_bits == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory for the free bitmap");

	rusk_rng rng;
	rusk_rng_seed(&rng, p->seed, 0x73636f72 /* "scor" */);
	for (uint32_t mi = 0; mi < c->n_machines; mi++) {
		rusk_machine *mm = &c->machines[mi];
		rusk_partition *pp = &c->parts[mm->partition];
		for (uint32_t k = 0; k < mm->n_rus; k++) {
			uint32_t r = mm->first_ru + k, b = mm->first_bit + k;
			c->ru_score[r] = draw_score(&rng, c->score_mean, c->score_sd);
			if (c->specs != NULL && c->specs[mi].scores != NULL)
				c->ru_score[r] = c->specs[mi].scores[k];
			bit_set(c->plat_bits + (size_t)mm->platform * c->n_words, b);
			if (mm->state == RUSK_M_UP) {
				bit_set(c->free_bits, b);
				pp->counter += rusk_pc_delta(c->ru_score[r]);
			} else {
				c->ru_word[r] = RUSK_W_OFFLINE(0);
			}
		}
	}
	c->max_speed = 0;
	for (uint32_t k = 0; k < c->n_platforms; k++)
		if (c->platforms[k].speed > c->max_speed)
			c->max_speed = c->platforms[k].speed;
	int vrc = rusk_vec_build_(c, err, errlen);
	if (vrc != RUSK_OK)
		return vrc;
	c->max_score = 1;
	for (uint32_t r = 0; r < c->n_rus; r++)
		if (c->ru_score[r] > c->max_score)
			c->max_score = c->ru_score[r];
	/* The cluster reaches other threads through whatever hand-over the caller uses
	 * (pthread_create, a release store): that edge publishes everything written here. */
	return RUSK_OK;
}

int rusk_cluster_check_scores_(const rusk_cluster_params *p, char *err, size_t errlen)
{
	if (!isfinite(p->score_mean) || p->score_mean < 0 || p->score_mean > 65.535)
		return rusk_errf(err, errlen, RUSK_EINVAL, "score_mean %g not in 0..65.535",
		                 p->score_mean);
	if (!isfinite(p->score_variance) || p->score_variance < 0)
		return rusk_errf(err, errlen, RUSK_EINVAL, "score_variance %g must be >= 0",
		                 p->score_variance);
	return RUSK_OK;
}

static int check_platforms(const rusk_platform *pl, uint32_t n, char *err, size_t errlen)
{
	if (n == 0 || n > RUSK_MAX_PLATFORMS)
		return rusk_errf(err, errlen, RUSK_EINVAL, "n_platforms %u not in 1..%u", n,
		                 RUSK_MAX_PLATFORMS);
	for (uint32_t i = 0; i < n; i++) {
		if (pl[i].name == NULL || pl[i].name[0] == '\0')
			return rusk_errf(err, errlen, RUSK_EINVAL, "platform %u has no name", i);
		if (!(pl[i].share > 0) || !isfinite(pl[i].share))
			return rusk_errf(err, errlen, RUSK_EINVAL,
			                 "platform '%s' share %g must be finite and > 0",
			                 pl[i].name, pl[i].share);
		if (!(pl[i].speed > 0) || !isfinite(pl[i].speed))
			return rusk_errf(err, errlen, RUSK_EINVAL,
			                 "platform '%s' speed %g must be finite and > 0",
			                 pl[i].name, pl[i].speed);
	}
	return RUSK_OK;
}

/* The platform table of p (or the default mix) into c. */
static void copy_platforms(rusk_cluster *c, const rusk_platform *pl, uint32_t npl, double *cum,
                           double *share_sum)
{
	c->n_platforms = npl;
	*share_sum = 0;
	for (uint32_t i = 0; i < npl; i++) {
		snprintf(c->platforms[i].name, RUSK_PLATFORM_NAME, "%s", pl[i].name);
		c->platforms[i].speed = pl[i].speed;
		*share_sum += pl[i].share;
		cum[i] = *share_sum;
	}
}

RUSK_EXPORT int rusk_cluster_create(const rusk_cluster_params *p, rusk_cluster **out, char *err,
                                    size_t errlen)
{
	if (p == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "params and out must not be NULL");
	if (p->gpus_per_machine > RUSK_MAX_GPUS_PER_MACHINE)
		return rusk_errf(err, errlen, RUSK_EINVAL, "gpus_per_machine %u exceeds %u",
		                 p->gpus_per_machine, RUSK_MAX_GPUS_PER_MACHINE);
	if (p->rus_per_machine == 0 || p->rus_per_machine > RUSK_MAX_RUS_PER_MACHINE)
		return rusk_errf(err, errlen, RUSK_ESHAPE, "rus_per_machine %u not in 1..%u",
		                 p->rus_per_machine, RUSK_MAX_RUS_PER_MACHINE);
	if ((uint64_t)p->machines + p->spare_machines > UINT32_MAX)
		return rusk_errf(err, errlen, RUSK_ESHAPE, "machines + spare_machines exceed %u",
		                 UINT32_MAX);
	uint32_t total = p->machines + p->spare_machines;
	int rc = rusk_cluster_check_topology_(p, total, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	if ((rc = rusk_cluster_check_scores_(p, err, errlen)) != RUSK_OK)
		return rc;
	const rusk_platform *pl = p->platforms != NULL ? p->platforms : default_platforms;
	uint32_t npl = p->platforms != NULL
	                       ? p->n_platforms
	                       : (uint32_t)(sizeof default_platforms / sizeof default_platforms[0]);
	if ((rc = check_platforms(pl, npl, err, errlen)) != RUSK_OK)
		return rc;

	rusk_cluster *c;
	rc = rusk_cluster_alloc_(&c, total, (uint64_t)total * p->rus_per_machine, p, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	c->n_up_initial = p->machines;

	double cum[RUSK_MAX_PLATFORMS], share_sum;
	copy_platforms(c, pl, npl, cum, &share_sum);
	rusk_rng rng;
	rusk_rng_seed(&rng, p->seed, 0x706c6174 /* "plat" */);
	for (uint32_t m = 0; m < total; m++) {
		rusk_machine *mm = &c->machines[m];
		mm->n_rus = (uint16_t)p->rus_per_machine;
		mm->mem_mib = p->mem_mib_per_machine;
		mm->gpus = (uint16_t)p->gpus_per_machine;
		double u = rusk_rng_unit(&rng) * share_sum;
		uint32_t k = 0;
		while (k + 1 < npl && u >= cum[k])
			k++;
		mm->platform = (uint8_t)k;
	}
	rc = rusk_cluster_layout_(c, p, err, errlen);
	if (rc != RUSK_OK) {
		rusk_cluster_destroy(c);
		return rc;
	}
	*out = c;
	return RUSK_OK;
}

static int check_spec(const rusk_machine_spec *s, uint32_t i, uint32_t npl, char *err,
                      size_t errlen)
{
	const char *f = s->rus == 0 || s->rus > RUSK_MAX_RUS_PER_MACHINE ? "rus"
	                : s->gpus > RUSK_MAX_GPUS_PER_MACHINE            ? "gpus"
	                : s->platform >= npl                             ? "platform"
	                                                                 : NULL;
	if (f == NULL)
		return RUSK_OK;
	return rusk_errf(err, errlen, RUSK_EINVAL,
	                 "spec[%u].%s out of range (rus 1..%u, gpus 0..%u, platform 0..%u)", i, f,
	                 RUSK_MAX_RUS_PER_MACHINE, RUSK_MAX_GPUS_PER_MACHINE, npl - 1);
}

RUSK_EXPORT int rusk_cluster_create_machines(const rusk_machine_spec *specs, uint32_t n,
                                             const rusk_cluster_params *p, rusk_cluster **out,
                                             char *err, size_t errlen)
{
	if (specs == NULL || p == NULL || out == NULL || n == 0)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "specs, params and out must not be NULL, n > 0");
	const rusk_platform *pl = p->platforms != NULL ? p->platforms : default_platforms;
	uint32_t npl = p->platforms != NULL
	                       ? p->n_platforms
	                       : (uint32_t)(sizeof default_platforms / sizeof default_platforms[0]);
	int rc = check_platforms(pl, npl, err, errlen);
	uint64_t n_rus = 0;
	for (uint32_t i = 0; i < n && rc == RUSK_OK; i++) {
		rc = check_spec(&specs[i], i, npl, err, errlen);
		n_rus += specs[i].rus;
	}
	if (rc != RUSK_OK || (rc = rusk_cluster_check_topology_(p, n, err, errlen)) != RUSK_OK ||
	    (rc = rusk_cluster_check_scores_(p, err, errlen)) != RUSK_OK)
		return rc;
	rusk_cluster *c;
	if ((rc = rusk_cluster_alloc_(&c, n, n_rus, p, err, errlen)) != RUSK_OK)
		return rc;
	c->n_up_initial = n;
	double cum[RUSK_MAX_PLATFORMS], share_sum;
	copy_platforms(c, pl, npl, cum, &share_sum);
	for (uint32_t m = 0; m < n; m++) {
		rusk_machine *mm = &c->machines[m];
		mm->n_rus = (uint16_t)specs[m].rus;
		mm->mem_mib = specs[m].mem_mib;
		mm->gpus = (uint16_t)specs[m].gpus;
		mm->platform = (uint8_t)specs[m].platform;
		mm->spare = specs[m].spare;
	}
	c->specs = specs;
	rc = rusk_cluster_layout_(c, p, err, errlen);
	c->specs = NULL;
	if (rc != RUSK_OK) {
		rusk_cluster_destroy(c);
		return rc;
	}
	*out = c;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_cluster_destroy(rusk_cluster *c)
{
	if (c == NULL)
		return;
	if (c->parts != NULL)
		rusk_snap_store_destroy_(c);
	if (c->obs != NULL && c->obs->destroy != NULL)
		c->obs->destroy(c->obs->ctx); /* an attached observer goes with its cluster */
	pthread_mutex_destroy(&c->central_lock);
	size_t wbytes = sizeof(uint64_t) * (c->n_words ? c->n_words : 1);
	rusk_alloc_free(c->free_bits, wbytes, RUSK_CACHELINE);
	rusk_alloc_free(c->plat_bits, wbytes * c->n_platforms, RUSK_CACHELINE);
	rusk_vec_free_(c);
	rusk_alloc_free(c->ru_score, sizeof(uint16_t) * c->n_rus, RUSK_CACHELINE);
	rusk_alloc_free(c->ru_word, sizeof(uint64_t) * c->n_rus, RUSK_CACHELINE);
	rusk_alloc_free(c->ru_machine, sizeof(uint32_t) * c->n_rus, RUSK_CACHELINE);
	rusk_alloc_free(c->ru_tenant, sizeof(rusk_profile) * c->n_rus, RUSK_CACHELINE);
	rusk_alloc_free(c->machines, sizeof(rusk_machine) * c->n_machines, RUSK_CACHELINE);
	rusk_alloc_free(c->parts, sizeof(rusk_partition) * c->n_parts, RUSK_CACHELINE);
	rusk_alloc_free(c, sizeof *c, RUSK_CACHELINE);
}

RUSK_EXPORT uint32_t rusk_cluster_machines(const rusk_cluster *c)
{
	return c != NULL ? c->n_machines : 0;
}
RUSK_EXPORT uint32_t rusk_cluster_rus(const rusk_cluster *c)
{
	return c != NULL ? c->n_rus : 0;
}
RUSK_EXPORT uint32_t rusk_cluster_partitions(const rusk_cluster *c)
{
	return c != NULL ? c->n_parts : 0;
}
RUSK_EXPORT uint32_t rusk_cluster_racks(const rusk_cluster *c)
{
	return c != NULL ? c->n_racks : 0;
}
RUSK_EXPORT uint32_t rusk_cluster_cells(const rusk_cluster *c)
{
	return c != NULL ? c->n_cells : 0;
}
RUSK_EXPORT uint32_t rusk_cluster_platforms(const rusk_cluster *c)
{
	return c != NULL ? c->n_platforms : 0;
}
RUSK_EXPORT const rusk_clock *rusk_cluster_clock(const rusk_cluster *c)
{
	return c != NULL ? c->clock : NULL;
}
RUSK_EXPORT size_t rusk_cluster_memory_bytes(const rusk_cluster *c)
{
	return c != NULL ? c->bytes_total : 0;
}
RUSK_EXPORT size_t rusk_cluster_array_bytes(const rusk_cluster *c)
{
	return c != NULL ? c->bytes_array : 0;
}

RUSK_EXPORT int rusk_cluster_machine(const rusk_cluster *c, uint32_t m, rusk_machine_info *out)
{
	if (c == NULL || out == NULL)
		return RUSK_EINVAL;
	if (m >= c->n_machines)
		return RUSK_ERANGE;
	const rusk_machine *mm = &c->machines[m];
	out->id = m;
	out->first_ru = mm->first_ru;
	out->rus = mm->n_rus;
	out->mem_mib = mm->mem_mib;
	out->gpus = mm->gpus;
	out->platform = mm->platform;
	out->rack = mm->rack;
	out->cell = mm->cell;
	out->partition = mm->partition;
	out->source_row = mm->source_row;
	out->replica = mm->replica;
	/* Relaxed: statistics; see the lag note in rusk/cluster.h. */
	out->state = rusk_load32(&mm->state, RUSK_RELAXED);
	out->free_rus = rusk_machine_free_(c, mm);
	uint64_t w[RUSK_LANE_WORDS];
	for (int i = 0; i < RUSK_LANE_WORDS; i++)
		w[i] = rusk_load64(&mm->interf[i], RUSK_RELAXED);
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		out->interference[i] = rusk_lane(w, i);
	return RUSK_OK;
}

RUSK_EXPORT int rusk_cluster_partition(const rusk_cluster *c, uint32_t p, rusk_partition_info *out)
{
	if (c == NULL || out == NULL)
		return RUSK_EINVAL;
	if (p >= c->n_parts)
		return RUSK_ERANGE;
	const rusk_partition *pp = &c->parts[p];
	out->id = p;
	out->first_cell = pp->first_cell;
	out->cells = pp->n_cells;
	out->first_machine = pp->first_machine;
	out->machines = pp->n_machines;
	out->first_ru = pp->first_ru;
	out->rus = pp->n_rus;
	uint64_t pc = rusk_load64(&pp->counter, RUSK_RELAXED); /* statistic, relaxed */
	out->free_rus = (uint32_t)(pc & RUSK_PC_FREE_MASK);
	out->mean_free_score =
	        out->free_rus ? (double)(pc >> RUSK_PC_FREE_BITS) / 1000.0 / out->free_rus : 0.0;
	return RUSK_OK;
}

RUSK_EXPORT int rusk_cluster_platform(const rusk_cluster *c, uint32_t i, const char **name,
                                      double *speed)
{
	if (c == NULL)
		return RUSK_EINVAL;
	if (i >= c->n_platforms)
		return RUSK_ERANGE;
	if (name != NULL)
		*name = c->platforms[i].name;
	if (speed != NULL)
		*speed = c->platforms[i].speed;
	return RUSK_OK;
}

RUSK_EXPORT uint32_t rusk_cluster_ru_machine(const rusk_cluster *c, uint32_t ru)
{
	return c != NULL && ru < c->n_rus ? c->ru_machine[ru] : UINT32_MAX;
}

RUSK_EXPORT uint64_t rusk_cluster_free_rus(const rusk_cluster *c)
{
	uint64_t sum = 0;
	for (uint32_t p = 0; c != NULL && p < c->n_parts; p++)
		sum += rusk_load64(&c->parts[p].counter, RUSK_RELAXED) & RUSK_PC_FREE_MASK;
	return sum; /* relaxed loads: a statistic */
}

RUSK_EXPORT double rusk_ru_score(const rusk_cluster *c, uint32_t ru)
{
	return c != NULL && ru < c->n_rus ? c->ru_score[ru] / 1000.0 : -1.0;
}

RUSK_EXPORT int rusk_cluster_verify(const rusk_cluster *c, char *err, size_t errlen)
{
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "cluster is NULL");
	/* Relaxed loads suffice: the caller guarantees quiescence with a happens-before edge
	 * (e.g. pthread_join) from every writer. */
	for (uint32_t pi = 0; pi < c->n_parts; pi++) {
		const rusk_partition *pp = &c->parts[pi];
		uint64_t part_free = 0, part_score = 0;
		for (uint32_t m = pp->first_machine; m < pp->first_machine + pp->n_machines; m++) {
			const rusk_machine *mm = &c->machines[m];
			uint32_t state = rusk_load32(&mm->state, RUSK_RELAXED);
			uint32_t sums[RUSK_N_RESOURCES] = {0};
			for (uint32_t ru = mm->first_ru; ru < mm->first_ru + mm->n_rus; ru++) {
				uint64_t w = rusk_load64(&c->ru_word[ru], RUSK_RELAXED);
				uint64_t owner = rusk_w_owner(w);
				uint32_t b = rusk_ru_bit(c, ru, mm);
				bool bit = (rusk_load64(&c->free_bits[b / 64], RUSK_RELAXED) >>
				            (b % 64)) &
				           1;
				if (w & RUSK_W_TRANSIENT)
					return rusk_errf(
					        err, errlen, RUSK_ECORRUPT,
					        "RU %u is still being committed or released", ru);
				if (bit != (owner == 0))
					return rusk_errf(err, errlen, RUSK_ECORRUPT,
					                 "RU %u: free bit %d but owner %llu", ru,
					                 bit, (unsigned long long)owner);
				if (owner == 0) {
					if (state != RUSK_M_UP)
						return rusk_errf(
						        err, errlen, RUSK_ECORRUPT,
						        "RU %u is free on machine %u in state %u",
						        ru, m, state);
					if (w & RUSK_W_PROFILE)
						return rusk_errf(
						        err, errlen, RUSK_ECORRUPT,
						        "RU %u is free but has a profile bit", ru);
					part_free++;
					part_score += c->ru_score[ru];
				} else if (owner == RUSK_OWNER_OFFLINE) {
					if (state == RUSK_M_UP)
						return rusk_errf(
						        err, errlen, RUSK_ECORRUPT,
						        "RU %u is offline on UP machine %u", ru, m);
				} else if (w & RUSK_W_PROFILE) {
					if (state == RUSK_M_DOWN)
						return rusk_errf(err, errlen, RUSK_ECORRUPT,
						                 "RU %u is held on DOWN machine %u",
						                 ru, m);
					for (int i = 0; i < RUSK_N_RESOURCES; i++)
						sums[i] += c->ru_tenant[ru].c[i];
				}
			}
			uint64_t w[RUSK_LANE_WORDS];
			for (int i = 0; i < RUSK_LANE_WORDS; i++)
				w[i] = rusk_load64(&mm->interf[i], RUSK_RELAXED);
			for (int i = 0; i < RUSK_N_RESOURCES; i++)
				if (rusk_lane(w, i) != sums[i])
					return rusk_errf(
					        err, errlen, RUSK_ECORRUPT,
					        "machine %u: interference sum %d is %u, tenants "
					        "add up to %u",
					        m, i, rusk_lane(w, i), sums[i]);
			int vrc = rusk_vec_verify_(c, m, err, errlen);
			if (vrc != RUSK_OK)
				return vrc;
		}
		uint64_t pc = rusk_load64(&pp->counter, RUSK_RELAXED);
		if ((pc & RUSK_PC_FREE_MASK) != part_free ||
		    (pc >> RUSK_PC_FREE_BITS) != part_score)
			return rusk_errf(
			        err, errlen, RUSK_ECORRUPT,
			        "partition %u: counter says %llu free (score sum %llu), array "
			        "has %llu (score sum %llu)",
			        pi, (unsigned long long)(pc & RUSK_PC_FREE_MASK),
			        (unsigned long long)(pc >> RUSK_PC_FREE_BITS),
			        (unsigned long long)part_free, (unsigned long long)part_score);
	}
	return RUSK_OK;
}
