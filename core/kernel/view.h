/* SPDX-License-Identifier: MIT */
/*
 * A view's layout and its hot accessors, inline for the decision path (choose.c); view.c
 * has the design note and everything else. Internal: one thread uses a view at a time.
 */
#ifndef RUSK_CORE_VIEW_H
#define RUSK_CORE_VIEW_H

#include "base/rng.h"
#include "kernel/layout.h"

typedef struct vpart {
	uint64_t taken_ns; /* of the snapshot last copied; meaningful when synced */
	uint64_t round_ns; /* freshness for ordering: taken_ns, or the oldest taken_ns of the
	                    * sync round (one rusk_view_tick step) that copied it */
	uint64_t version;
	uint64_t gen;      /* moves on at every change of p's bits in the view: a sync, a mark
	                    * (choose.c reuses a vector listing of p while it holds) */
	uint64_t one_from; /* every change after gen one_from was a mark on machine one_mi */
	uint32_t one_mi;   /* (UINT32_MAX: the last change was a sync or a sync attempt; zeroed
	                    * at creation, 0 and 0 say truly that no change was on another) */
	uint32_t free_rus;
	uint32_t rank; /* drawn at each sync: orders partitions of one round (no herding) */
	bool synced;
	double mean_free_score;
} vpart;

struct rusk_view {
	rusk_cluster *c;
	uint64_t *bits;      /* [c->n_words], laid out like the master bitmap */
	uint64_t *nz;        /* summary, per partition from nz_off[p]: bit j of p's run set iff
	                      * p's word j (from first_bit / 64) holds a free RU */
	uint16_t *cnt;       /* free RUs under each summary bit's 64 words, indexed like nz:
	                      * the exact select of a uniform pick (rusk_vrange_select_) */
	uint32_t *nz_off;    /* [n_parts] */
	vpart *parts;        /* [n_parts] */
	uint32_t *plat_free; /* [n_parts][n_platforms] */
	uint32_t *scratch;   /* [n_parts] */
	uint64_t *rver;      /* [n_parts] a remote sync step's versions (NULL until one) */
	int *rrc;            /* [n_parts] and its per-partition answers */
	uint32_t *order;     /* [n_parts] freshest first, kept sorted as syncs happen */
	uint16_t *mfree;     /* [n_machines] free RUs of each machine in the view, for the
	                      * partitions whose mfree_ok is set (rusk_view_mfree_); NULL
	                      * until a vector decision asks */
	uint8_t *mfree_ok;   /* [n_parts] p's mfree is kept: set when counted, cleared by
	                      * p's sync, kept by the marks (rusk_view_count_) */
	rusk_rng tie;        /* seeded per agent: ranks of partitions within a round */
	uint64_t total_free; /* sum of parts[].free_rus */
	bool has_policy;
	rusk_sync_params sp;
	uint32_t agent;
	uint64_t step_ns, base_ns, next_k;
	rusk_view_stats st;
};

/* Seeds the view's tie generator (stream `stream` of `seed`): an agent's own. */
void rusk_view_seed_(rusk_view *v, uint64_t seed, uint64_t stream);

/* Free RUs over all partitions of a view. */
static inline uint64_t rusk_view_total_free_(const rusk_view *v)
{
	return v->total_free;
}

/* A view's bitmap, laid out like the master's. */
static inline const uint64_t *rusk_view_bits_(const rusk_view *v)
{
	return v->bits;
}

/* The view's partitions, freshest first (P entries; valid until its next sync). */
static inline const uint32_t *rusk_view_order_(const rusk_view *v)
{
	return v->order;
}

/* When the view's data of partition p was taken; 0 if never synced. */
static inline uint64_t rusk_view_taken_ns_(const rusk_view *v, uint32_t p)
{
	return p < v->c->n_parts && v->parts[p].synced ? v->parts[p].taken_ns : 0;
}

/* Free RUs of partition p in the view (rusk_view_free). */
static inline uint32_t rusk_view_free_(const rusk_view *v, uint32_t p)
{
	return p < v->c->n_parts ? v->parts[p].free_rus : 0;
}

/* Staleness of partition p at now; UINT64_MAX if never synced (rusk_view_staleness_ns). */
static inline uint64_t rusk_view_staleness_(const rusk_view *v, uint32_t p, uint64_t now)
{
	if (p >= v->c->n_parts || !v->parts[p].synced)
		return UINT64_MAX;
	uint64_t t = v->parts[p].taken_ns;
	return now > t ? now - t : 0;
}

/* Where ru's bit lies in the view (*word, mask) and its machine; NULL out of range. */
static inline const rusk_machine *rusk_view_locate_(rusk_view *v, uint32_t ru, uint64_t **word,
                                                    uint64_t *mask)
{
	const rusk_cluster *c = v->c;
	if (ru >= c->n_rus)
		return NULL;
	const rusk_machine *m = &c->machines[c->ru_machine[ru]];
	uint32_t b = rusk_ru_bit(c, ru, m);
	*word = &v->bits[b / 64];
	*mask = UINT64_C(1) << (b % 64);
	return m;
}

/* Index of bitmap word w of partition p in the summary arrays (nz's word, cnt's entry)
 * and, in *bit, its bit in that summary word. */
static inline uint32_t rusk_view_block_(const rusk_view *v, uint32_t p, const uint64_t *w,
                                        uint64_t *bit)
{
	uint32_t j = (uint32_t)(w - v->bits) - v->c->parts[p].first_bit / 64;
	*bit = UINT64_C(1) << (j % 64);
	return v->nz_off[p] + j / 64;
}

/* One RU of machine m, in bitmap word w, became free (d = 1) or taken (d = -1) in the
 * view: its counts. */
static inline void rusk_view_count_(rusk_view *v, const rusk_machine *m, const uint64_t *w, int d)
{
	uint64_t bit;
	v->cnt[rusk_view_block_(v, m->partition, w, &bit)] += (uint16_t)d;
	v->parts[m->partition].free_rus += (uint32_t)d;
	v->total_free += (uint64_t)(int64_t)d;
	v->plat_free[(size_t)m->partition * v->c->n_platforms + m->platform] += (uint32_t)d;
	if (v->mfree != NULL && v->mfree_ok[m->partition])
		v->mfree[m - v->c->machines] += (uint16_t)d;
	vpart *vp = &v->parts[m->partition];
	uint32_t mi = (uint32_t)(m - v->c->machines);
	if (vp->one_mi != mi) {
		vp->one_mi = mi;
		vp->one_from = vp->gen;
	}
	vp->gen++;
	v->st.marks++;
}

/* Partition p's generation in the view (vpart.gen): equal at two reads, p's bits did not
 * change between them. */
static inline uint64_t rusk_view_gen_(const rusk_view *v, uint32_t p)
{
	return v->parts[p].gen;
}

/* Whether every change of p's bits in the view since its generation was `since` was a mark
 * on one machine, *mi (asked only when some change was made: false when the last was a
 * sync). */
static inline bool rusk_view_one_(const rusk_view *v, uint32_t p, uint64_t since, uint32_t *mi)
{
	const vpart *vp = &v->parts[p];
	*mi = vp->one_mi;
	return vp->one_mi != UINT32_MAX && since >= vp->one_from;
}

/* Free RUs of each machine in the view, indexed by machine, valid for partition p's
 * machines (counted from the bits when p synced since they were last counted; the marks
 * keep them); NULL when the counts could not be allocated (then count the bits). */
const uint16_t *rusk_view_mfree_(rusk_view *v, uint32_t p);

/* Sets or clears the summary bit of bitmap word w of partition p (its word became
 * non-empty or empty: the rare transitions, so the lookups stay off the common path). */
static inline void rusk_view_nz_set_(rusk_view *v, uint32_t p, const uint64_t *w, bool on)
{
	uint64_t bit;
	uint64_t *s = &v->nz[rusk_view_block_(v, p, w, &bit)];
	*s = on ? *s | bit : *s & ~bit;
}

/* Marks ru taken in the view (rusk_view_mark_taken): committed, or lost to a conflict. */
static inline void rusk_view_mark_taken_(rusk_view *v, uint32_t ru)
{
	uint64_t *w, mask;
	const rusk_machine *m = rusk_view_locate_(v, ru, &w, &mask);
	if (m == NULL || !(*w & mask))
		return;
	if ((*w &= ~mask) == 0)
		rusk_view_nz_set_(v, m->partition, w, false);
	rusk_view_count_(v, m, w, -1);
}

/* A partition's words and summary in a view, hoisted out of a decision's draws. */
typedef struct rusk_vrange {
	const uint64_t *w;   /* the partition's first word in the view */
	const uint64_t *nz;  /* its summary: bit j for w[j] */
	const uint16_t *cnt; /* free RUs under each summary word */
	uint32_t n_words, n_rus, first_ru, n_free;
} rusk_vrange;

static inline rusk_vrange rusk_view_range_(const rusk_view *v, uint32_t p)
{
	const rusk_partition *pp = &v->c->parts[p];
	return (rusk_vrange){.w = v->bits + pp->first_bit / 64,
	                     .nz = v->nz + v->nz_off[p],
	                     .cnt = v->cnt + v->nz_off[p],
	                     .n_words = (pp->n_rus + 63) / 64,
	                     .n_rus = pp->n_rus,
	                     .first_ru = pp->first_ru,
	                     .n_free = v->parts[p].free_rus};
}

/* The first word in [from, to) whose summary bit nz says it holds a free RU, or to: 64
 * words per step, so a nearly full partition costs no more than an empty one. */
static inline uint32_t rusk_next_nz_(const uint64_t *nz, uint32_t from, uint32_t to)
{
	if (from >= to)
		return to;
	uint32_t k = from / 64, last = (to - 1) / 64;
	uint64_t s = nz[k] & (~UINT64_C(0) << (from % 64));
	for (;;) {
		if (s != 0) {
			uint32_t wi = k * 64 + (uint32_t)__builtin_ctzll(s);
			return wi < to ? wi : to;
		}
		if (k == last)
			return to;
		s = nz[++k];
	}
}

/* The first word at or after wi holding a free RU (n_words when none): the next word is
 * read directly (the common case in a scan), then the summary. */
static inline uint32_t rusk_vrange_next_(const rusk_vrange *r, uint32_t wi)
{
	if (wi >= r->n_words || r->w[wi] != 0)
		return wi < r->n_words ? wi : r->n_words;
	return rusk_next_nz_(r->nz, wi + 1, r->n_words);
}

/* got plus bit b % 64 of word: on x86-64 one bt and one adc (compilers emit a shift by
 * %cl, a move and a mask instead, three instructions in a loop of about fourteen). */
static inline uint32_t rusk_add_bit_(uint32_t got, uint64_t word, uint32_t b)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__asm__("btq %2, %1\n\tadcl $0, %0" : "+r"(got) : "r"(word), "r"((uint64_t)b) : "cc");
	return got;
#else
	return got + ((uint32_t)(word >> (b % 64)) & 1);
#endif
}

/* Tries of rejection sampling before the exact select (two positions per 64 random bits). */
#define RUSK_PICK_TRIES 16

/* The k-th free RU (from 0) of a partition, by its summary counts; false if k >= free. */
bool rusk_vrange_select_(const rusk_vrange *r, uint32_t k, uint32_t *ru);

/* Position drawn from 32 random bits (Lemire's multiply-shift); free? then *ru. */
static inline bool rusk_vrange_try_(const rusk_vrange *r, uint32_t u, uint32_t *ru)
{
	uint32_t b = (uint32_t)(((uint64_t)u * r->n_rus) >> 32);
	if (!((r->w[b / 64] >> (b % 64)) & 1))
		return false;
	*ru = r->first_ru + b;
	return true;
}

/*
 * A free RU of a partition drawn uniformly among its free RUs, from rnd (extended by a
 * splitmix64 chain when more bits are needed). Rejection sampling: a uniform position, kept
 * if free; after RUSK_PICK_TRIES misses (or at once when under one RU in RUSK_PICK_TRIES is
 * free), the k-th free RU for a uniform k, found through the per-summary-word counts. Both
 * stages give every free RU the same probability, so their mixture does too: the uniform
 * candidates Tarcil's x^R guarantee assumes. False when the partition has none.
 */
static inline bool rusk_view_pick_(const rusk_vrange *r, uint64_t rnd, uint32_t *ru)
{
	if (r->n_free == 0)
		return false;
	uint64_t x = rnd, u = rnd;
	if ((uint64_t)r->n_free * RUSK_PICK_TRIES >= r->n_rus) {
		for (int t = 0; t < RUSK_PICK_TRIES / 2; t++) {
			if (rusk_vrange_try_(r, (uint32_t)(u >> 32), ru) ||
			    rusk_vrange_try_(r, (uint32_t)u, ru))
				return true;
			u = rusk_splitmix64(&x);
		}
	}
	return rusk_vrange_select_(r, (uint32_t)(((u >> 32) * r->n_free) >> 32), ru);
}

/* Positions a batch of rusk_view_pick_n_ draws and tests at once (four random words). */
#define RUSK_PICK_BATCH 8

/* rusk_view_pick_n_'s rejection stage: up to n accepted draws into out (room for
 * n + RUSK_PICK_BATCH), at most n * RUSK_PICK_TRIES positions; returns how many. */
uint32_t rusk_vrange_reject_n_(const rusk_vrange *r, rusk_rng *rng, uint32_t *out, uint32_t n);

/*
 * n free RUs of a partition, each drawn uniformly and independently among its free RUs
 * (repeats possible), into out[0..n): out needs room for n + RUSK_PICK_BATCH. The same two
 * stages as rusk_view_pick_, batched for a decision's R draws. A batch draws 8 positions
 * from four random words (rusk_vrange_reject_n_), loads their bitmap words (each address
 * depends on the generator only, so the loads are in flight together), stores every
 * position and advances by its free bit: no data-dependent branch to mispredict (half the
 * time at 50% load) and no load whose address waits for the previous one. Surplus draws
 * of the last batch are dropped, which biases nothing (the accepted draws are i.i.d.).
 * Returns n, or 0 when the partition has none free.
 */
static inline uint32_t rusk_view_pick_n_(const rusk_vrange *r, rusk_rng *rng, uint32_t *out,
                                         uint32_t n)
{
	if (r->n_free == 0)
		return 0;
	uint32_t got = 0;
	if ((uint64_t)r->n_free * RUSK_PICK_TRIES >= r->n_rus) {
		got = rusk_vrange_reject_n_(r, rng, out, n);
	}
	for (; got < n; got++)
		if (!rusk_vrange_select_(r, rusk_rng_below(rng, r->n_free), &out[got]))
			return 0; /* unreachable: counts and bits agree */
	return n;
}

#endif
