/* SPDX-License-Identifier: MIT */
/*
 * Vector capacities (core/kernel/vec.c): per machine free memory and GPU shares beside its
 * RUs, the share record of each tenure, the distinct machine shapes. Not installed.
 */
#ifndef RUSK_KERNEL_VEC_IMPL_H
#define RUSK_KERNEL_VEC_IMPL_H

#include "kernel/layout.h"
#include "kernel/quality.h"

/*
 * Vector capacities of one machine (vec.c): free memory and the milli-GPU in use on each
 * GPU, beside the RUs. One cache line. The live words change only by CAS (a take, which
 * checks the capacity) and fetch-and-add (a give-back of shares a record proves held).
 * GPU g is the 16-bit lane g % 4 of gpu_used[g / 4]; a lane stays in 0..1000, so no
 * give-back borrows across lanes.
 */
#define RUSK_GPU_WORDS 2
#define RUSK_GPU_LANES 4
typedef struct rusk_mvec {
	uint64_t mem_free;                 /* live: MiB */
	uint64_t gpu_used[RUSK_GPU_WORDS]; /* live: milli-GPU in use, per GPU */
	uint64_t lanes[RUSK_GPU_WORDS];    /* static: bit 15 of each lane that is a GPU */
	uint32_t mem_mib;                  /* capacity, static */
	uint8_t n_gpus;                    /* static */
	uint8_t pad_[19];
} RUSK_ALIGNED(RUSK_CACHELINE) rusk_mvec;
_Static_assert(sizeof(rusk_mvec) == RUSK_CACHELINE, "one machine's vector per cache line");

/*
 * Share record of one tenure (rusk_cluster.ru_vec, one per RU): 0, or what the task holds on
 * the RU's machine besides RUs, kept on the lowest RU of its placement there:
 *   bit 63 set | gpu_milli (bits 40..50) | GPU mask (bits 32..39) | mem_mib (bits 0..31).
 * Written by the holder while its word has C; read and zeroed by whoever ends the tenure
 * (release, unhold, revocation), which owns the word through R, C or its CAS to OFFLINE.
 */
#define RUSK_REC_VALID (UINT64_C(1) << 63)

/* A distinct machine shape (vec.c): what rusk_task_check tests vector tasks against. */
typedef struct rusk_shape {
	uint32_t rus, mem_mib;
	uint16_t gpus;
	uint8_t platform;
} rusk_shape;

/*
 * The per-model chunk index (cluster.mchunk, built by rusk_vec_build_, read-only after):
 * for each partition p and platform k, the RUs of p's machines of platform k cut into
 * chunks of at most RUSK_CHUNK RUs, each within one machine, in machine order. An entry
 * packs machine << 32 | (length - 1) << 24 | the offset of its first RU in p (a partition
 * has under 2^24 RUs). A draw of a uniform chunk and a uniform offset below RUSK_CHUNK,
 * kept when the offset is within the chunk and the RU is free in the view, is uniform over
 * the free RUs of p of model k: every such RU is one (chunk, offset) pair, each pair equally
 * likely (choose.c, pick_model). 8 bytes per chunk: 0.5 byte per RU at 16 RUs a machine.
 */
#define RUSK_CHUNK         16u
#define RUSK_CHUNK_POS(e)  ((uint32_t)(e)&0xffffffu)
#define RUSK_CHUNK_LAST(e) (((uint32_t)(e) >> 24) & (RUSK_CHUNK - 1))
#define RUSK_CHUNK_MACH(e) ((uint32_t)((e) >> 32))

/* Partition p's chunks of platform k: *n of them (0: none); *full when each has
 * RUSK_CHUNK RUs (every slot is an RU: no offset to test). */
static inline const uint64_t *rusk_chunks_(const rusk_cluster *c, uint32_t p, uint32_t k,
                                           uint32_t *n, bool *full)
{
	size_t i = (size_t)p * c->n_platforms + k;
	const uint32_t *off = c->mchunk_off + i;
	*n = off[1] - off[0];
	*full = c->mchunk_full[i];
	return c->mchunk + off[0];
}

/* Vector state (vec.c). build_ after the layout; give_back_ by whoever ends the tenure of
 * ru (release, unhold, revocation) with the word owned, before the word is stored. */
int rusk_vec_build_(rusk_cluster *c, char *err, size_t errlen);
void rusk_vec_free_(rusk_cluster *c);
int rusk_vec_verify_(const rusk_cluster *c, uint32_t m, char *err, size_t errlen);
void rusk_vec_give_back_(rusk_cluster *c, uint32_t ru, uint64_t rec);
/* Takes vec's memory and GPU shares on machine m; *rec = the record. RUSK_OK, or
 * RUSK_ECONFLICT (short now) holding nothing. */
int rusk_vec_take_(rusk_cluster *c, uint32_t m, const rusk_vec_demand *vec, uint64_t *rec);
/* Whether vec could ever fit machine m's shape (model, GPUs, memory). Inline: a decision
 * calls it for every candidate drawn. */
static inline bool rusk_vec_shape_fits_(const rusk_cluster *c, uint32_t m,
                                        const rusk_vec_demand *vec)
{
	uint64_t s = c->mshape[m];
	uint32_t mem = (uint32_t)s, gpus = (uint32_t)(s >> 32) & 0xffu, plat = (uint32_t)(s >> 40);
	if (mem < vec->mem_mib || gpus < vec->gpus)
		return false;
	return vec->gpus == 0 || vec->gpu_models == 0 || ((vec->gpu_models >> plat) & 1u);
}

/*
 * A vector demand prepared for rusk_vec_fits_now_, once per decision: the GPU lanes are
 * tested four at a time within their word (SWAR). A lane x (<= 1000) with bit 15 set, less
 * limit + 1 (<= 1001), borrows from nothing and keeps bit 15 exactly when x > limit, where
 * limit is the most a lane may hold and still take the demand (1000 - its share for one
 * shared GPU, 0 for whole GPUs).
 */
typedef struct rusk_vfit {
	uint64_t mem_mib;
	uint64_t sub; /* limit + 1 in every lane */
	uint32_t gpus;
} rusk_vfit;
#define RUSK_LANE_HIGH UINT64_C(0x8000800080008000)

static inline rusk_vfit rusk_vfit_make_(const rusk_vec_demand *vec)
{
	uint32_t limit = vec->gpus == 1 ? 1000u - vec->gpu_milli : 0;
	return (rusk_vfit){vec->mem_mib, UINT64_C(0x0001000100010001) * (limit + 1), vec->gpus};
}

/* Bit 15 of each lane of word k that is one of the machine's first n GPUs. */
static inline uint64_t rusk_lane_mask_(uint32_t n, uint32_t k)
{
	uint32_t left = n > k * RUSK_GPU_LANES ? n - k * RUSK_GPU_LANES : 0;
	return left >= RUSK_GPU_LANES ? RUSK_LANE_HIGH
	                              : RUSK_LANE_HIGH & ((UINT64_C(1) << (16 * left)) - 1);
}

/* Whether demand f fits machine m's free memory and GPUs now: a lane with room for a
 * share, or enough idle lanes (relaxed loads: a guess that the commit checks). Both lane
 * words are tested, without a branch on the GPU count: a lane that is no GPU is masked out
 * by the machine's static lanes (rusk_lane_mask_), and the words share its cache line. */
static inline bool rusk_vec_fits_now_(const rusk_cluster *c, uint32_t m, const rusk_vfit *f)
{
	const rusk_mvec *v = &c->mvec[m];
	/* Relaxed: a guess here; vec.c's take validates by CAS. */
	if (rusk_load64(&v->mem_free, RUSK_RELAXED) < f->mem_mib)
		return false;
	if (f->gpus == 0)
		return true;
	_Static_assert(RUSK_GPU_WORDS == 2, "two lane words");
	uint64_t w0 = rusk_load64(&v->gpu_used[0], RUSK_RELAXED);
	uint64_t w1 = rusk_load64(&v->gpu_used[1], RUSK_RELAXED);
	uint32_t fit =
	        (uint32_t)__builtin_popcountll(~((w0 | RUSK_LANE_HIGH) - f->sub) & v->lanes[0]) +
	        (uint32_t)__builtin_popcountll(~((w1 | RUSK_LANE_HIGH) - f->sub) & v->lanes[1]);
	return fit >= f->gpus;
}

/* rusk_vec_fits_now_ for an unprepared demand. */
static inline bool rusk_vec_free_fits_(const rusk_cluster *c, uint32_t m,
                                       const rusk_vec_demand *vec)
{
	rusk_vfit f = rusk_vfit_make_(vec);
	return rusk_vec_fits_now_(c, m, &f);
}
/* RUSK_QUALITY_PACKING's value of machine m for vector task t (free_rus: in the view). */
double rusk_vec_pack_value_(const rusk_cluster *c, uint32_t m, uint32_t free_rus,
                            const rusk_task *t);

/* RUSK_QUALITY_FGD's value of machine m for vector task t: -Delta F in GPUs (vec.c). */
double rusk_vec_fgd_value_(const rusk_cluster *c, uint32_t m, uint32_t free_rus, const rusk_task *t,
                           const rusk_fgd_mix *mx);

/* Ends the share record of ru's tenure, if any (see rusk_vec_give_back_). Plain load: the
 * caller owns the word, and the holder's write is ordered before by the word's edges. */
static inline void rusk_vec_end_(rusk_cluster *c, uint32_t ru)
{
	uint64_t rec = c->ru_vec[ru];
	if (RUSK_UNLIKELY(rec != 0))
		rusk_vec_give_back_(c, ru, rec);
}

#endif /* RUSK_KERNEL_VEC_IMPL_H */
