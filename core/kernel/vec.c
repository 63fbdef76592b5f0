/* SPDX-License-Identifier: MIT */
/*
 * Vector resources: memory and GPU shares of a machine, committed with the task's RUs
 * (rusk/vec.h). The openb traces (Weng et al., ATC'23, "Beware of fragmentation") are a
 * GPU-sharing workload: a pod asks for cores, memory and either a share of one GPU or
 * several whole GPUs of accepted models, on one machine.
 *
 * Algorithm. A vector task's commit is a gang of its RUs on one machine (ru.c, held: C set),
 * then take(): the machine's free-memory word by a CAS that checks the capacity, then each
 * GPU word with chosen lanes by a CAS that checks each lane; a failed step gives back the
 * earlier ones and the gang is unheld. On success the shares go into the record of the
 * task's lowest RU there (ru_vec, vec_impl.h) before the lease is published. Whoever ends
 * that RU's tenure returns them (rusk_vec_end_): release_owned in ru.c (a release or an
 * unhold) or rusk_machine_fail (a revocation).
 *
 * GPU choice. A share (gpus 1, milli < 1000) goes to the fullest GPU it still fits
 * (best fit: it leaves whole GPUs whole for multi-GPU tasks and keeps free pieces few);
 * whole GPUs are the lowest-numbered idle ones.
 *
 * Orders. Every edge, what it pairs with and why:
 *   take's CAS on mem_free / gpu_used  relaxed: the counters are exact because each change
 *                                      is one RMW of one word that checks the capacity it
 *                                      consumes; no other data is published through them
 *   record write (holder, C set)       ordered before the lease's publish store (release,
 *                                      ru.c) that pairs with the acquire of the R CAS of a
 *                                      release or the settle() of a failure: the ender
 *                                      reads the record the holder wrote
 *   give-back (faa, relaxed)           after the ender owns the word; before its final
 *                                      store, so the next holder of the RU never sees the
 *                                      record of the previous tenure
 *   partition vgen (CAS, release)      after each take, each failed take that may have
 *                                      written a word (memory given back, or GPU lanes
 *                                      taken and undone), and each give-back; pairs
 *                                      with the acquire load of vgen before a listing
 *                                      pass (choose.c, vset_build): a pass that read a
 *                                      count reads every word change bumped up to it,
 *                                      so its listing is as of that count or later. A
 *                                      change whose bump is not in yet makes the count
 *                                      move on later, and the listing is not reused
 *                                      past it
 * Invariants:
 *  1. mem_free + the mem of every live record on the machine = its capacity; per GPU lane,
 *     the milli in use = the sum over live records that name that GPU (rusk_vec_verify_).
 *  2. A lane is never above 1000 and mem_free never below 0 nor above capacity: a take
 *     checks the value it replaces, a give-back returns only what a record proves taken.
 *  3. A record is non-zero only on an RU held by its task: written while C is set, cleared
 *     by whoever ends the tenure, once (the word's ownership rules).
 *  4. A machine's shares are all free when it comes up again: failure returns every
 *     revoked record (topology.c).
 */
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/atomic.h"
#include "kernel/vec_impl.h"
#include "kernel/word.h"

_Static_assert(RUSK_MAX_RUS_PER_MACHINE <= UINT16_MAX + 1u,
               "cluster.mord holds RU offsets in 16 bits");

static inline uint32_t lane_get(const uint64_t *w, uint32_t g)
{
	return (uint32_t)(w[g / RUSK_GPU_LANES] >> (16 * (g % RUSK_GPU_LANES))) & 0xffffu;
}

static inline uint64_t rec_make(uint32_t mem, uint32_t mask, uint32_t milli)
{
	return RUSK_REC_VALID | ((uint64_t)milli << 40) | ((uint64_t)mask << 32) | mem;
}
static inline uint32_t rec_mem(uint64_t r)
{
	return (uint32_t)r;
}
static inline uint32_t rec_mask(uint64_t r)
{
	return (uint32_t)(r >> 32) & 0xffu;
}
static inline uint32_t rec_milli(uint64_t r)
{
	return (uint32_t)(r >> 40) & 0x7ffu;
}

/* ---- build --------------------------------------------------------------------------- */

static void add_shape(rusk_cluster *c, const rusk_machine *mm)
{
	for (uint32_t i = 0; i < c->n_shapes; i++) {
		const rusk_shape *s = &c->shapes[i];
		if (s->rus == mm->n_rus && s->mem_mib == mm->mem_mib && s->gpus == mm->gpus &&
		    s->platform == mm->platform)
			return;
	}
	c->shapes[c->n_shapes++] = (rusk_shape){mm->n_rus, mm->mem_mib, mm->gpus, mm->platform};
}

/* mtop over machine mm's RUs: its slot scores sorted in decreasing order (insertion: at
 * most RUSK_MAX_RUS_PER_MACHINE; equal scores keep the lower offset first), then prefix
 * sums; mord: the offsets in that order. */
static void top_sums(rusk_cluster *c, const rusk_machine *mm)
{
	uint32_t *t = c->mtop + mm->first_ru;
	uint16_t *o = c->mord + mm->first_ru;
	for (uint32_t k = 0; k < mm->n_rus; k++) {
		uint32_t v = c->ru_score[mm->first_ru + k], j = k;
		for (; j > 0 && t[j - 1] < v; j--) {
			t[j] = t[j - 1];
			o[j] = o[j - 1];
		}
		t[j] = v;
		o[j] = (uint16_t)k;
	}
	for (uint32_t k = 1; k < mm->n_rus; k++)
		t[k] += t[k - 1];
}

/* The per-model chunk index (vec_impl.h, rusk_chunks_): counted, then filled, partition by
 * partition and platform by platform. */
static int build_chunks(rusk_cluster *c)
{
	size_t n_off = (size_t)c->n_parts * c->n_platforms + 1, n = 0;
	c->mchunk_off = calloc(n_off, sizeof *c->mchunk_off);
	c->mchunk_full = calloc(n_off, sizeof *c->mchunk_full);
	if (c->mchunk_off == NULL || c->mchunk_full == NULL)
		return RUSK_ENOMEM;
	for (uint32_t m = 0; m < c->n_machines; m++)
		n += (c->machines[m].n_rus + RUSK_CHUNK - 1) / RUSK_CHUNK;
	c->mchunk = calloc(n ? n : 1, sizeof *c->mchunk);
	if (c->mchunk == NULL)
		return RUSK_ENOMEM;
	c->bytes_total +=
	        n_off * (sizeof *c->mchunk_off + sizeof *c->mchunk_full) + n * sizeof *c->mchunk;
	uint32_t at = 0;
	for (uint32_t p = 0; p < c->n_parts; p++) {
		const rusk_partition *pp = &c->parts[p];
		for (uint32_t k = 0; k < c->n_platforms; k++) {
			size_t i = (size_t)p * c->n_platforms + k;
			c->mchunk_off[i] = at;
			c->mchunk_full[i] = true;
			for (uint32_t m = pp->first_machine; m < pp->first_machine + pp->n_machines;
			     m++) {
				const rusk_machine *mm = &c->machines[m];
				if (mm->platform != k)
					continue;
				for (uint32_t o = 0; o < mm->n_rus; o += RUSK_CHUNK) {
					uint32_t len = mm->n_rus - o < RUSK_CHUNK ? mm->n_rus - o
					                                          : RUSK_CHUNK;
					c->mchunk[at++] = (uint64_t)m << 32 |
					                  (uint64_t)(len - 1) << 24 |
					                  (mm->first_ru - pp->first_ru + o);
					c->mchunk_full[i] &= len == RUSK_CHUNK;
				}
			}
		}
	}
	c->mchunk_off[n_off - 1] = at;
	return RUSK_OK;
}

int rusk_vec_build_(rusk_cluster *c, char *err, size_t errlen)
{
	size_t mb = sizeof(rusk_mvec) * c->n_machines, rb = sizeof(uint64_t) * c->n_rus;
	c->mvec = rusk_alloc_zeroed(mb, RUSK_CACHELINE);
	c->ru_vec = rusk_alloc_zeroed(rb, RUSK_CACHELINE);
	c->shapes = calloc(c->n_machines, sizeof *c->shapes);
	c->mshape = calloc(c->n_machines, sizeof *c->mshape);
	c->mtop = calloc(c->n_rus ? c->n_rus : 1, sizeof *c->mtop);
	c->mord = calloc(c->n_rus ? c->n_rus : 1, sizeof *c->mord);
	if (c->mvec == NULL || c->ru_vec == NULL || c->shapes == NULL || c->mshape == NULL ||
	    c->mtop == NULL || c->mord == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory for the vector state");
	c->bytes_total += mb + rb + sizeof *c->mshape * c->n_machines +
	                  (sizeof *c->mtop + sizeof *c->mord) * c->n_rus;
	for (uint32_t m = 0; m < c->n_machines; m++) {
		const rusk_machine *mm = &c->machines[m];
		if (mm->gpus > RUSK_MAX_GPUS_PER_MACHINE)
			return rusk_errf(err, errlen, RUSK_ESHAPE,
			                 "machine %u has %u GPUs, more than the %u one machine may "
			                 "have",
			                 m, mm->gpus, RUSK_MAX_GPUS_PER_MACHINE);
		c->mvec[m].mem_mib = mm->mem_mib;
		c->mvec[m].mem_free = mm->mem_mib;
		c->mvec[m].n_gpus = (uint8_t)mm->gpus;
		for (uint32_t k = 0; k < RUSK_GPU_WORDS; k++)
			c->mvec[m].lanes[k] = rusk_lane_mask_(mm->gpus, k);
		c->mshape[m] =
		        mm->mem_mib | (uint64_t)mm->gpus << 32 | (uint64_t)mm->platform << 40;
		add_shape(c, mm);
		top_sums(c, mm);
	}
	_Static_assert(RUSK_MAX_PARTITION_RUS < (1u << 24), "a chunk's offset in 24 bits");
	if (build_chunks(c) != RUSK_OK)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory for the vector state");
	return RUSK_OK;
}

void rusk_vec_free_(rusk_cluster *c)
{
	rusk_alloc_free(c->mvec, sizeof(rusk_mvec) * c->n_machines, RUSK_CACHELINE);
	rusk_alloc_free(c->ru_vec, sizeof(uint64_t) * c->n_rus, RUSK_CACHELINE);
	free(c->shapes);
	free(c->mshape);
	free(c->mtop);
	free(c->mord);
	free(c->mchunk);
	free(c->mchunk_off);
	free(c->mchunk_full);
}

/* ---- take and give back ---------------------------------------------------------------- */

static bool mem_take(rusk_mvec *v, uint32_t need)
{
	if (need == 0)
		return true;
	uint64_t cur = rusk_load64(&v->mem_free, RUSK_RELAXED);
	while (cur >= need)
		if (rusk_cas64(&v->mem_free, &cur, cur - need, RUSK_RELAXED))
			return true;
	return false;
}

/* The lanes vec would take given lane values w (best fit for a share, the lowest idle GPUs
 * for whole ones), as a mask; 0 when they do not fit. */
static uint32_t gpu_pick(const uint64_t *w, uint32_t n_gpus, const rusk_vec_demand *vec)
{
	if (vec->gpus == 1 && vec->gpu_milli < RUSK_GPU_MILLI) {
		uint32_t best = UINT32_MAX, best_used = 0;
		for (uint32_t g = 0; g < n_gpus; g++) {
			uint32_t used = lane_get(w, g);
			if (used + vec->gpu_milli <= RUSK_GPU_MILLI &&
			    (best == UINT32_MAX || used > best_used)) {
				best = g;
				best_used = used;
			}
		}
		return best == UINT32_MAX ? 0 : 1u << best;
	}
	uint32_t mask = 0, got = 0;
	for (uint32_t g = 0; g < n_gpus && got < vec->gpus; g++)
		if (lane_get(w, g) == 0) {
			mask |= 1u << g;
			got++;
		}
	return got == vec->gpus ? mask : 0;
}

/* The packed delta that adds `milli` to each lane of `mask` within word k. */
static inline uint64_t lanes_delta(uint32_t mask, uint32_t k, uint32_t milli)
{
	uint64_t d = 0;
	for (uint32_t j = 0; j < RUSK_GPU_LANES; j++)
		if (mask & (1u << (k * RUSK_GPU_LANES + j)))
			d |= (uint64_t)milli << (16 * j);
	return d;
}

/* Takes the GPU shares: pick on a read of both words, then one CAS per word that has
 * picked lanes; a word that changed meanwhile undoes the first and picks again. A CAS
 * fails only when another take or give-back succeeded: lock-free. */
static uint32_t gpu_take(rusk_mvec *v, const rusk_vec_demand *vec)
{
	for (;;) {
		uint64_t w[RUSK_GPU_WORDS];
		for (int k = 0; k < RUSK_GPU_WORDS; k++)
			w[k] = rusk_load64(&v->gpu_used[k], RUSK_RELAXED);
		uint32_t mask = gpu_pick(w, v->n_gpus, vec);
		if (mask == 0)
			return 0;
		int done = 0;
		for (; done < RUSK_GPU_WORDS; done++) {
			uint64_t d = lanes_delta(mask, (uint32_t)done, vec->gpu_milli);
			if (d == 0)
				continue;
			uint64_t cur = w[done];
			if (!rusk_cas64(&v->gpu_used[done], &cur, cur + d, RUSK_RELAXED))
				break;
		}
		if (done == RUSK_GPU_WORDS)
			return mask;
		for (int k = 0; k < done; k++) /* undo, then look again */
			rusk_faa64(&v->gpu_used[k],
			           (uint64_t)0 - lanes_delta(mask, (uint32_t)k, vec->gpu_milli),
			           RUSK_RELAXED);
	}
}

/* Machine m's words changed (or a failed take may have changed and restored them): its
 * partition's vgen counts one more change, on m, after it (release: see the orders above).
 * A CAS, not an add: the count (40 bits, RUSK_VGEN_MACH_BITS up) and the machine (from
 * first_machine: below 2^24, as a partition's RUs) are one word. */
static inline void vgen_bump(rusk_cluster *c, uint32_t m)
{
	rusk_partition *pp = &c->parts[c->machines[m].partition];
	uint64_t cur = rusk_load64(&pp->vgen, RUSK_RELAXED), rel = m - pp->first_machine;
	while (!rusk_cas64(&pp->vgen, &cur,
	                   ((cur >> RUSK_VGEN_MACH_BITS) + 1) << RUSK_VGEN_MACH_BITS | rel,
	                   RUSK_RELEASE))
		;
}

int rusk_vec_take_(rusk_cluster *c, uint32_t m, const rusk_vec_demand *vec, uint64_t *rec)
{
	rusk_mvec *v = &c->mvec[m];
	if (!mem_take(v, vec->mem_mib))
		return RUSK_ECONFLICT;
	uint32_t mask = 0;
	if (vec->gpus > 0 && (mask = gpu_take(v, vec)) == 0) {
		if (vec->mem_mib)
			rusk_faa64(&v->mem_free, vec->mem_mib, RUSK_RELAXED);
		vgen_bump(c, m); /* memory given back, or lanes taken in one word and undone */
		return RUSK_ECONFLICT;
	}
	if (vec->mem_mib || mask)
		vgen_bump(c, m);
	*rec = rec_make(vec->mem_mib, mask, vec->gpus ? vec->gpu_milli : 0);
	return RUSK_OK;
}

void rusk_vec_give_back_(rusk_cluster *c, uint32_t ru, uint64_t rec)
{
	uint32_t m = c->ru_machine[ru];
	rusk_mvec *v = &c->mvec[m];
	c->ru_vec[ru] = 0;
	if (rec_mem(rec))
		rusk_faa64(&v->mem_free, rec_mem(rec), RUSK_RELAXED);
	for (uint32_t k = 0; k < RUSK_GPU_WORDS; k++) {
		uint64_t d = lanes_delta(rec_mask(rec), k, rec_milli(rec));
		if (d != 0)
			rusk_faa64(&v->gpu_used[k], (uint64_t)0 - d, RUSK_RELAXED);
	}
	if (rec_mem(rec) || rec_mask(rec))
		vgen_bump(c, m);
}

/* ---- verify ----------------------------------------------------------------------------- */

int rusk_vec_verify_(const rusk_cluster *c, uint32_t m, char *err, size_t errlen)
{
	const rusk_machine *mm = &c->machines[m];
	const rusk_mvec *v = &c->mvec[m];
	uint64_t mem = 0, lanes[RUSK_MAX_GPUS_PER_MACHINE] = {0};
	for (uint32_t ru = mm->first_ru; ru < mm->first_ru + mm->n_rus; ru++) {
		uint64_t rec = c->ru_vec[ru], owner = rusk_w_owner(c->ru_word[ru]);
		if (rec == 0)
			continue;
		if (owner == 0 || owner == RUSK_OWNER_OFFLINE)
			return rusk_errf(err, errlen, RUSK_ECORRUPT,
			                 "RU %u is not held but carries a share record", ru);
		mem += rec_mem(rec);
		for (uint32_t g = 0; g < RUSK_MAX_GPUS_PER_MACHINE; g++)
			if (rec_mask(rec) & (1u << g))
				lanes[g] += rec_milli(rec);
	}
	uint64_t mf = rusk_load64(&v->mem_free, RUSK_RELAXED);
	if (mf + mem != v->mem_mib)
		return rusk_errf(err, errlen, RUSK_ECORRUPT,
		                 "machine %u: %llu MiB free + %llu held by records != %u capacity",
		                 m, (unsigned long long)mf, (unsigned long long)mem, v->mem_mib);
	uint64_t w[RUSK_GPU_WORDS];
	for (int k = 0; k < RUSK_GPU_WORDS; k++)
		w[k] = rusk_load64(&v->gpu_used[k], RUSK_RELAXED);
	for (uint32_t g = 0; g < RUSK_MAX_GPUS_PER_MACHINE; g++)
		if (lane_get(w, g) != lanes[g] || lanes[g] > RUSK_GPU_MILLI ||
		    (g >= v->n_gpus && lanes[g] != 0))
			return rusk_errf(
			        err, errlen, RUSK_ECORRUPT,
			        "machine %u: GPU %u has %u milli in use, records hold %llu", m, g,
			        lane_get(w, g), (unsigned long long)lanes[g]);
	return RUSK_OK;
}

/* ---- public ------------------------------------------------------------------------------ */

RUSK_EXPORT int rusk_machine_vec_get(const rusk_cluster *c, uint32_t m, rusk_machine_vec *out)
{
	if (c == NULL || out == NULL)
		return RUSK_EINVAL;
	if (m >= c->n_machines)
		return RUSK_ERANGE;
	const rusk_mvec *v = &c->mvec[m];
	memset(out, 0, sizeof *out);
	out->mem_mib = v->mem_mib;
	out->mem_free_mib = (uint32_t)rusk_load64(&v->mem_free, RUSK_RELAXED);
	out->gpus = v->n_gpus;
	out->gpu_model = c->machines[m].platform;
	uint64_t w[RUSK_GPU_WORDS];
	for (int k = 0; k < RUSK_GPU_WORDS; k++)
		w[k] = rusk_load64(&v->gpu_used[k], RUSK_RELAXED);
	for (uint32_t g = 0; g < v->n_gpus; g++)
		out->gpu_free_milli[g] = (uint16_t)(RUSK_GPU_MILLI - lane_get(w, g));
	return RUSK_OK;
}

RUSK_EXPORT int rusk_cluster_vec_get(const rusk_cluster *c, rusk_cluster_vec *out)
{
	if (c == NULL || out == NULL)
		return RUSK_EINVAL;
	memset(out, 0, sizeof *out);
	for (uint32_t m = 0; m < c->n_machines; m++) {
		if (rusk_load32(&c->machines[m].state, RUSK_RELAXED) == RUSK_M_DOWN)
			continue;
		rusk_machine_vec v;
		rusk_machine_vec_get(c, m, &v);
		out->mem_mib += v.mem_mib;
		out->mem_used_mib += v.mem_mib - v.mem_free_mib;
		out->gpus += v.gpus;
		out->gpu_milli += (uint64_t)v.gpus * RUSK_GPU_MILLI;
		for (uint32_t g = 0; g < v.gpus; g++) {
			out->gpu_used_milli += RUSK_GPU_MILLI - v.gpu_free_milli[g];
			out->gpus_busy += v.gpu_free_milli[g] < RUSK_GPU_MILLI;
		}
	}
	return RUSK_OK;
}

RUSK_EXPORT int rusk_gpu_model(const rusk_cluster *c, const char *name, uint32_t *index)
{
	if (c == NULL || name == NULL || index == NULL)
		return RUSK_EINVAL;
	for (uint32_t i = 0; i < c->n_platforms; i++)
		if (strcmp(c->platforms[i].name, name) == 0) {
			*index = i;
			return RUSK_OK;
		}
	return RUSK_ERANGE;
}

RUSK_EXPORT size_t rusk_cluster_vec_bytes(const rusk_cluster *c)
{
	if (c == NULL)
		return 0;
	return (sizeof(rusk_mvec) + sizeof *c->mshape) * c->n_machines +
	       sizeof(uint64_t) * c->n_rus;
}

/* ---- packing quality -------------------------------------------------------------------- */

/* Free milli-GPU left in pieces: on GPUs partly in use, which no whole-GPU task can take. */
static uint32_t frag_milli(const uint64_t *w, uint32_t n_gpus)
{
	uint32_t f = 0;
	for (uint32_t g = 0; g < n_gpus; g++) {
		uint32_t used = lane_get(w, g);
		f += used > 0 && used < RUSK_GPU_MILLI ? RUSK_GPU_MILLI - used : 0;
	}
	return f;
}

/*
 * RUSK_QUALITY_PACKING's value of machine m for vector task t, in [0, 1]: half from best
 * fit (1 - the mean share of each of the machine's dimensions the task would leave free),
 * and up to a half from GPU fragmentation: (1 - the change in free milli-GPU left in
 * pieces, per GPU of the machine) / 4, where a task without GPUs on a machine with idle
 * GPUs is also charged the share of those GPUs its cores would strand. free_rus: the
 * machine's free RUs in the view.
 */
double rusk_vec_pack_value_(const rusk_cluster *c, uint32_t m, uint32_t free_rus,
                            const rusk_task *t)
{
	const rusk_mvec *v = &c->mvec[m];
	const rusk_machine *mm = &c->machines[m];
	double left = (double)(free_rus - t->rus) / mm->n_rus;
	int dims = 1;
	if (v->mem_mib > 0) {
		uint64_t mf = rusk_load64(&v->mem_free, RUSK_RELAXED);
		left += mf > t->vec.mem_mib ? (double)(mf - t->vec.mem_mib) / v->mem_mib : 0;
		dims++;
	}
	double dfrag = 0;
	if (v->n_gpus > 0) {
		uint64_t w[RUSK_GPU_WORDS], after[RUSK_GPU_WORDS];
		for (int k = 0; k < RUSK_GPU_WORDS; k++)
			w[k] = after[k] = rusk_load64(&v->gpu_used[k], RUSK_RELAXED);
		uint32_t mask = t->vec.gpus ? gpu_pick(w, v->n_gpus, &t->vec) : 0;
		for (uint32_t k = 0; k < RUSK_GPU_WORDS; k++)
			after[k] += lanes_delta(mask, k, t->vec.gpu_milli);
		double cap = (double)v->n_gpus * RUSK_GPU_MILLI;
		double used_after = 0;
		for (uint32_t g = 0; g < v->n_gpus; g++)
			used_after += lane_get(after, g);
		dfrag = ((double)frag_milli(after, v->n_gpus) - frag_milli(w, v->n_gpus)) / cap;
		if (t->vec.gpus == 0) /* cores taken from beside idle GPUs strand them */
			dfrag += (double)t->rus / mm->n_rus * (1.0 - used_after / cap);
		left += 1.0 - used_after / cap;
		dims++;
	}
	if (dfrag > 1)
		dfrag = 1;
	return 0.5 * (1.0 - left / dims) + 0.25 * (1.0 - dfrag);
}

/* ---- fragmentation-aware quality ----------------------------------------------------------- */

/*
 * RUSK_QUALITY_FGD's value of machine m for vector task t (quality.c has the model): minus
 * Delta, the rise of the machine's expected unusable GPU capacity F, in GPUs, when t takes
 * its cores, memory and the GPUs gpu_pick gives it; plus 1e-9 times the share of the
 * machine's cores t would fill (best fit on cores), which only breaks ties of Delta, e.g.
 * between CPU-only machines (where F is 0 before and after). free_rus: in the view.
 */
double rusk_vec_fgd_value_(const rusk_cluster *c, uint32_t m, uint32_t free_rus, const rusk_task *t,
                           const rusk_fgd_mix *mx)
{
	const rusk_mvec *v = &c->mvec[m];
	const rusk_machine *mm = &c->machines[m];
	double fit = 1.0 - (double)(free_rus - t->rus) / mm->n_rus;
	if (v->n_gpus == 0 || mx->total == 0)
		return 1e-9 * fit;
	uint64_t w[RUSK_GPU_WORDS];
	for (int k = 0; k < RUSK_GPU_WORDS; k++)
		w[k] = rusk_load64(&v->gpu_used[k], RUSK_RELAXED);
	uint64_t mf = rusk_load64(&v->mem_free, RUSK_RELAXED);
	rusk_fgd_node before = {free_rus, (uint32_t)mf, mm->platform, v->n_gpus, {0}}, after;
	for (uint32_t g = 0; g < v->n_gpus; g++)
		before.free[g] = (uint16_t)(RUSK_GPU_MILLI - lane_get(w, g));
	after = before;
	after.free_rus = free_rus - t->rus;
	after.mem_free = mf > t->vec.mem_mib ? (uint32_t)(mf - t->vec.mem_mib) : 0;
	uint32_t mask = t->vec.gpus ? gpu_pick(w, v->n_gpus, &t->vec) : 0;
	for (uint32_t g = 0; g < v->n_gpus; g++)
		if (mask & (1u << g))
			after.free[g] = (uint16_t)(after.free[g] - t->vec.gpu_milli);
	double delta = rusk_fgd_frag(mx, &after) - rusk_fgd_frag(mx, &before);
	return -delta / RUSK_GPU_MILLI + 1e-9 * fit;
}
