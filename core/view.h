/* SPDX-License-Identifier: MIT */
/*
 * A view's layout and its hot accessors, inline for the decision path (agent.c); view.c
 * has the design note and everything else. Internal: one thread uses a view at a time.
 */
#ifndef RUSK_CORE_VIEW_H
#define RUSK_CORE_VIEW_H

#include "internal.h"

typedef struct vpart {
	uint64_t taken_ns; /* of the snapshot last copied; meaningful when synced */
	uint64_t version;
	uint32_t free_rus;
	bool synced;
	double mean_free_score;
} vpart;

struct rusk_view {
	rusk_cluster *c;
	uint64_t *bits;      /* [c->n_words], laid out like the master bitmap */
	uint64_t *nz;        /* summary, per partition from nz_off[p]: bit j of p's run set iff
	                      * p's word j (from first_bit / 64) holds a free RU */
	uint32_t *nz_off;    /* [n_parts] */
	vpart *parts;        /* [n_parts] */
	uint32_t *plat_free; /* [n_parts][n_platforms] */
	uint32_t *scratch;   /* [n_parts] */
	uint32_t *order;     /* [n_parts] freshest first, kept sorted as syncs happen */
	uint64_t total_free; /* sum of parts[].free_rus */
	bool has_policy;
	rusk_sync_params sp;
	uint32_t agent;
	uint64_t step_ns, base_ns, next_k;
	rusk_view_stats st;
};

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

/* One RU of machine m became free (d = 1) or taken (d = -1) in the view: its counts. */
static inline void rusk_view_count_(rusk_view *v, const rusk_machine *m, int d)
{
	v->parts[m->partition].free_rus += (uint32_t)d;
	v->total_free += (uint64_t)(int64_t)d;
	v->plat_free[(size_t)m->partition * v->c->n_platforms + m->platform] += (uint32_t)d;
	v->st.marks++;
}

/* Sets or clears the summary bit of bitmap word w of partition p (its word became
 * non-empty or empty: the rare transitions, so the lookups stay off the common path). */
static inline void rusk_view_nz_set_(rusk_view *v, uint32_t p, const uint64_t *w, bool on)
{
	uint32_t j = (uint32_t)(w - v->bits) - v->c->parts[p].first_bit / 64;
	uint64_t *s = &v->nz[v->nz_off[p] + j / 64], bit = UINT64_C(1) << (j % 64);
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
	rusk_view_count_(v, m, -1);
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

/* A partition's words and summary in a view, hoisted out of a decision's draws. */
typedef struct rusk_vrange {
	const uint64_t *w;  /* the partition's first word in the view */
	const uint64_t *nz; /* its summary: bit j for w[j] */
	uint32_t n_words, n_rus, first_ru;
} rusk_vrange;

static inline rusk_vrange rusk_view_range_(const rusk_view *v, uint32_t p)
{
	const rusk_partition *pp = &v->c->parts[p];
	return (rusk_vrange){.w = v->bits + pp->first_bit / 64,
	                     .nz = v->nz + v->nz_off[p],
	                     .n_words = (pp->n_rus + 63) / 64,
	                     .n_rus = pp->n_rus,
	                     .first_ru = pp->first_ru};
}

/* The first word at or after wi holding a free RU: the next word is read directly (the
 * common miss), then the summary; n_words when there is none. */
static inline uint32_t rusk_vrange_next_(const rusk_vrange *r, uint32_t wi)
{
	if (wi >= r->n_words || r->w[wi] != 0)
		return wi < r->n_words ? wi : r->n_words;
	return rusk_next_nz_(r->nz, wi + 1, r->n_words);
}

/*
 * The first free RU of a partition at or after a position drawn from rnd, wrapping once
 * (rusk_view_pick_free's rule). False when the partition has none.
 */
static inline bool rusk_view_pick_(const rusk_vrange *r, uint64_t rnd, uint32_t *ru)
{
	uint32_t start = (uint32_t)(((rnd >> 32) * r->n_rus) >> 32);
	uint32_t wi = start / 64;
	uint64_t bits = r->w[wi] & (~UINT64_C(0) << (start % 64));
	if (bits == 0) {
		uint32_t k = rusk_vrange_next_(r, wi + 1);
		if (k == r->n_words) {
			/* wrap: up to wi, whose lower bits count too */
			k = rusk_next_nz_(r->nz, 0, wi + 1);
			if (k == wi + 1)
				return false;
		}
		wi = k;
		bits = r->w[wi];
	}
	*ru = r->first_ru + wi * 64 + (uint32_t)__builtin_ctzll(bits);
	return true;
}

#endif
