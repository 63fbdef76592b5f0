/* SPDX-License-Identifier: MIT */
/*
 * A decision's state (not installed): the agent's layout, the per-decision context and the
 * candidates, which agent.c (lifecycle, the commit/retry loop, releases), choose.c (the
 * strategies: where a decision samples and how it ranks candidates), commit.c (the commit
 * step) and central.c (the serialised baselines) share. Types and inline helpers only, so
 * those files call one another downward: agent -> central -> choose, commit. One thread
 * uses an agent at a time.
 */
#ifndef RUSK_KERNEL_DECISION_H
#define RUSK_KERNEL_DECISION_H

#include <math.h>

#include "base/rng.h"
#include "kernel/layout.h"
#include "kernel/quality.h"
#include "kernel/view.h"

#define RUSK_VFAIL  16
#define RUSK_MSHORT 8
#define RUSK_VHINT  256

/* One machine of a vector decision's exact set (choose.c, vset_build): its index, bit 31
 * set once the decision kept it, and the running sum of the set's free RUs in the view up
 * to and with it. */
typedef struct rusk_vset_ent {
	uint32_t mi, cum;
} rusk_vset_ent;

/* Slot scores a vector value cache entry holds (choose.c, vval_sum): enough for the best m
 * free of a task of up to this many RUs. */
#define RUSK_VVAL_SCORES 20
/* Machines of at most this many RUs have entries (their bits fit two words). */
#define RUSK_VVAL_RUS    128
/* Entries of an agent's value cache at most (a power of two: direct-mapped by machine):
 * 128 KiB, one entry a machine up to 2,048 machines (the openb node list's 1,523). */
#define RUSK_VVAL_MAX    (UINT32_C(1) << 11)

/*
 * One entry of an agent's vector value cache (choose.c, vval_sum): machine tag - 1 had the
 * free RUs bits[] in the agent's view (bit k: its k-th RU) when its best free slot scores
 * were read, the n = min(RUSK_VVAL_SCORES, free RUs) best of them in sc[], best first. The
 * scores are static, so while the machine's bits in the view are still bits[] the sum of its
 * best m free scores (m <= n) is that of sc[0..m). One cache line.
 */
typedef struct rusk_vval {
	uint64_t bits[2];
	uint32_t tag; /* machine + 1; 0: empty */
	uint16_t n;
	uint16_t sc[RUSK_VVAL_SCORES];
	uint16_t pad_;
} RUSK_ALIGNED(RUSK_CACHELINE) rusk_vval;
_Static_assert(sizeof(rusk_vval) == RUSK_CACHELINE, "one entry per cache line");

/* Entries of an agent's listing cache (direct-mapped by demand and partition), and the
 * machines an entry holds at most: a longer set is not kept. 64 entries of 568 B: 36 KiB
 * an agent, allocated at its first listing. */
#define RUSK_VLIST     64
#define RUSK_VLIST_MAX 64

/*
 * One listing a vector decision made (choose.c, vset_build): partition p's exact set for
 * demand (vec, rus), ents[0..n) of total weight w, made when p's vgen (layout.h, the live
 * vector words) read cgen and p's generation in the agent's view (rusk_view_gen_) viewgen.
 * The pass reads only those words, the view's free counts and static shapes, so while both
 * generations are as they were it would list the same set again (after one machine's
 * change, choose.c's vlist_patch brings it up to date). ents[] by machine, as the pass.
 */
typedef struct rusk_vlist {
	uint64_t key; /* vhint_key(demand, p); 0: empty */
	uint64_t cgen, viewgen;
	rusk_vec_demand vec;
	uint32_t rus, p, n, w;
	rusk_vset_ent ents[RUSK_VLIST_MAX];
} rusk_vlist;

/* A candidate RU, its value for the task and its tie-break key. */
typedef struct rusk_cand {
	uint32_t ru;
	double q;
	uint64_t key; /* tie-break */
} rusk_cand;

struct rusk_agent {
	rusk_cluster *c;
	rusk_view *v;
	rusk_agent_params p;
	rusk_rng rng;
	double ema_ns;
	bool ema_set;
	uint32_t *order;  /* [P] */
	rusk_cand *cands; /* candidate buffer */
	size_t cap;
	rusk_cand *group; /* best-in-range scratch */
	size_t group_cap;
	uint64_t *seen; /* a bit per RU, all clear between decisions (choose.c, dedup_cands) */
	/* Machines whose memory or GPUs a vector commit found short during this place()
	 * call: the retries skip them (choose_vec). */
	uint32_t vskip[8];
	uint32_t n_vskip;
	/* A vector decision's exact set of one partition (choose.c, choose_vec_exact), the
	 * number made (and of those, made before any draw of the partition on vhint's word),
	 * and (tests only: tests/test_vec_exact.c) a switch that makes every draw instead, as
	 * before the sets: the baseline they are compared with. */
	rusk_vset_ent *vset;
	size_t vset_cap;
	uint64_t vset_made, vset_first;
	bool vec_draw_only;
	bool vec_exact_first; /* tests only: every partition listed before any draw */
	/* What the last listing or probe of a partition found for a vector demand (choose.c,
	 * vhint_get): the share of the partition's free RUs (in the view) on machines that
	 * could hold it, in 1/65536, direct-mapped by demand and partition. A hint only:
	 * which of two ways of drawing (same distribution) choose_vec takes. */
	struct {
		uint64_t key;
		uint32_t frac;
	} vhint[RUSK_VHINT];
	/* The vector value cache (choose.c, vval_sum): vval_mask + 1 entries, direct-mapped
	 * by machine, allocated at the first slot-score vector decision that values a partly
	 * free machine (NULL before, or when that failed: then never tried again,
	 * vval_tried). Its hits and misses, and (tests only: tests/test_vval.c) a switch
	 * that turns it off: decisions must be the same either way. */
	rusk_vval *vval;
	uint32_t vval_mask;
	bool vval_tried, vval_off;
	uint64_t vval_hits, vval_misses;
	/* The listing cache (choose.c, vset_build): RUSK_VLIST entries allocated at the
	 * first listing (NULL before, or when that failed: then never tried again), the
	 * listings it gave, and (tests only: tests/test_vval.c) a switch that turns it off:
	 * decisions must be the same either way. */
	rusk_vlist *vlist;
	bool vlist_tried, vlist_off;
	uint64_t vlist_hits, vlist_patched; /* of the hits, those patched (vlist_patch) */
	/* This decision's work beyond its drawn candidates (choose.c, rusk_choose_): RUs
	 * examined that pl->samples does not count, and partitions scanned. */
	uint32_t wk_examined, wk_parts;
	/* RUSK_QUALITY_FGD: the GPU task types this agent has decided (quality.c). */
	rusk_fgd_mix mix;
	/* Vector demands no drawn machine could hold on the view as of vfail_gen (its
	 * syncs count): a demand that needs as much in every dimension is refused without
	 * drawing until the view syncs again (choose.c, choose_vec). */
	rusk_vec_demand vfail[RUSK_VFAIL];
	uint32_t vfail_rus[RUSK_VFAIL];
	uint32_t n_vfail;
	uint64_t vfail_gen;
	/* Machines a vector commit found short of memory or GPUs (memory_short, not a
	 * conflict), kept across place() calls (choose.c, rusk_mshort_note_): a task whose
	 * demand dominates the one refused skips the machine (vskip) while the view has not
	 * synced since (syncs == gen) and the machine's shares in the local array are as they
	 * were (none of this process's tasks there ended or began). Round robin. */
	struct {
		uint32_t m, rus;
		rusk_vec_demand vec;
		uint64_t gen, mem_free, gpu0, gpu1;
	} mshort[RUSK_MSHORT];
	uint32_t n_mshort;
};

/*
 * Per-decision context: the task, how to value an RU for it, and where its RUs may go
 * beside those it holds (rusk/sched.h "Held RUs": t->held, and the leases this place()
 * call won before, won[0..n_won)). Both limits are off for a task that holds nothing,
 * which then decides exactly as before they existed.
 */
typedef struct rusk_dctx {
	const rusk_task *t;
	rusk_qtask qt;
	bool interf;
	bool pack;     /* RUSK_QUALITY_PACKING */
	bool fgd;      /* RUSK_QUALITY_FGD */
	bool anchored; /* MACHINE or RACK with RUs held: only RUs of [alo, ahi), the anchor
	                * group's range (choose.c choose_anchored, central.c) */
	bool excl;     /* SPREAD with RUs held: not on their machines (rusk_dctx_excluded_) */
	uint32_t alo, ahi;
	const rusk_lease *won; /* this place() call's earlier wins (SPREAD excludes them) */
	uint32_t n_won;
} rusk_dctx;

/* Whether ru lies on one of the task's preferred machines. */
static inline bool rusk_is_preferred_(const rusk_cluster *c, const rusk_task *t, uint32_t ru)
{
	if (t->n_preferred == 0)
		return false;
	uint32_t m = c->ru_machine[ru];
	for (uint32_t i = 0; i < t->n_preferred; i++)
		if (t->preferred[i] == m)
			return true;
	return false;
}

/* The quality a placement reports for ru: Q, or the slot score in [0, max_score / 1000]. */
static inline double rusk_reported_quality_(const rusk_cluster *c, const rusk_dctx *d, uint32_t ru)
{
	return d->interf ? rusk_qtask_eval(c, &d->qt, ru) : c->ru_score[ru] / 1000.0;
}

/* Mean value of x[0..n); -inf when empty (never the best group). */
static inline double rusk_mean_q_(const rusk_cand *x, uint32_t n)
{
	double s = 0;
	for (uint32_t i = 0; i < n; i++)
		s += x[i].q;
	return n ? s / n : -INFINITY;
}

/* The designs whose every change of the shared state goes under the cluster's one mutex. */
static inline bool rusk_agent_serialised_(const rusk_agent *a)
{
	return a->p.global_lock || a->p.strategy == RUSK_STRATEGY_CENTRAL;
}

#endif /* RUSK_KERNEL_DECISION_H */
