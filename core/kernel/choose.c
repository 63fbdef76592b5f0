/* SPDX-License-Identifier: MIT */
/*
 * The placement strategies: where a decision samples on the agent's local view and how it
 * ranks what it drew (Tarcil §3.3; ParSync §5.2, §6.2-6.3).
 *
 * Decision. R (per RU) comes from rusk_sample_size: the smallest R such that the best of R
 * uniform candidates misses the target rank with probability <= eps (Tarcil eq. 6), with
 * the target raised by the share of RUs the view believes busy (§3.3 "at high load"),
 * capped at r_max. For a task of m RUs the agent draws R*m candidates (batch sampling,
 * §3.3 "Large jobs") and keeps the best m; with a locality preference it judges each
 * candidate's machine or rack by the aggregate quality of its best m free RUs (Fig. 5b);
 * with spread, the best candidates on distinct machines. Ties in quality are broken by a
 * fixed hash of the RU index, which is Tarcil's "fair coin" made repeatable.
 *
 * Where candidates come from:
 *   latency   the view's freshest partitions first, moving to the next freshest only when
 *             a partition has too few free RUs (ParSync §5.2); a task's preferred
 *             machines first, those in the freshest partition that has one free
 *   quality   partitions by expected quality for the task (mean free slot score from the
 *             snapshot, or a small probe of Q), candidates by weighted sampling on quality
 *             (rejection: accept with probability quality / best possible)
 *   adaptive  quality while the EMA of scheduling delay is below tau, latency otherwise
 *             (ParSync §6.3)
 *   random    Sparrow-style baseline: R = 2 per RU anywhere, no quality ranking
 * (central, the other baseline, chooses under its lock in central.c.)
 *
 * Remainders beside held RUs (rusk/sched.h "Held RUs", issue 26): a task that holds RUs
 * already (rusk_task.held, or what place() won earlier in the same call) may take more only
 * where its placement allows beside them. Machine and rack placement know their group, so
 * they do not sample: choose_anchored scans the anchor group's RUs in the view and keeps
 * the best m by the same value and order as pick_group (Tarcil Fig. 5b judges a group by
 * its best m; here there is one group to judge), and an incremental task takes fewer when
 * fewer are free. Spread samples as usual and drops candidates on the held RUs' machines
 * (choose_spread_beside), enumerating the view's free RUs only when the draws leave too few
 * machines. Sampling over the whole view would be wrong here, not just slow: the rest
 * of a whole-machine task found "anywhere" was the bug. A task holding nothing never takes
 * these paths (rusk_dctx.anchored and rusk_dctx.excl are false), so it decides exactly as before.
 *
 * Failed vector demands (issue 32). A vector task's decision that keeps no machine (no draw
 * of at most 4R + 16 per partition could hold it) is remembered by the agent with its view's
 * sync count; until the view syncs again, a vector task whose demand dominates a remembered
 * one (at least as many RUs, memory, GPUs and milli per GPU, and no model it does not
 * accept) is refused at once, without drawing (RUSK_VFAIL entries, round robin). Between
 * syncs the view gains no free RU (the agent's own commits only mark RUs taken); memory
 * and GPU shares freed live meanwhile are seen from the next sync on, the staleness the
 * view already has for RUs. A queue of tasks that cannot fit now, retried at each sync,
 * then costs one sampling per distinct shape rather than one per task: that retry storm
 * was most of a saturated vector replay's time (perf/RESULTS.md). Agent-private state.
 *
 * Invariants:
 *  - A decision only reads the view and the cluster's static shape, and changes nothing
 *    but the agent's generator and scratch buffers: the commit (agent.c) is the only step
 *    that touches the master array. Two reads go past the view: a vector task's candidate
 *    machines' live memory and GPU shares, and, under the interference model, the free
 *    bits of a task's preferred machines (add_preferred); both are relaxed reads that the
 *    commit validates.
 *  - Candidates are uniform over the free RUs of the partition drawn from (view.h,
 *    rusk_view_pick_n_), as the x^R guarantee assumes; Quality-first's weighting is the
 *    one deliberate departure. A one-RU task of one GPU model draws from the model's
 *    chunk index (pick_model) instead: uniform over the model's free RUs of the partition,
 *    which is what the draws over all free RUs were once those of another model were
 *    dropped, so the machines kept are the same in distribution (tests/test_vec_index.c).
 *  - Ranking is by a strict order (value, then the RU's tie key; random keys for random),
 *    so the choice does not depend on the order candidates were drawn or de-duplicated in.
 *  - choose_vec's shortcuts decide as its draws would: a machine's best m free RUs by a
 *    walk in static score order (cluster.mord) give the same sum as a selection, and a
 *    partition none of whose machines passes judge_machine's tests (vec_part_any) has its
 *    remaining draws counted and their generator numbers consumed, not drawn. Partly free
 *    machines are valued only while their static bound can still win (lazy_scores).
 *    Draws are made in batches whose unused generator numbers are given back (vec_draws),
 *    and the winner's best m free RUs come from the same walk, its ties sorted by key
 *    (best_free_walk): the same RUs, in the same order, as rusk_scan_range_.
 *  - choose_vec's value cache (vval_sum; issue 32): an agent keeps per machine its best
 *    free slot scores (up to RUSK_VVAL_SCORES) with the machine's bits in its view when
 *    they were read, and values a kept machine from them while its bits in the view are
 *    still those: the scores are static, so the sum is the one a fresh read gives (the
 *    same choice; tests/test_vval.c decides with and without it). The view's bits change
 *    only by the agent's own syncs and marks, so a machine untouched since it was last
 *    valued costs one line instead of a walk of its scores (93% of valuations on the
 *    GPU-sharing-heavy openb replay). Agent-private, allocated at first use.
 *  - choose_vec's exact sets (choose_vec_exact) decide as its draws would in distribution,
 *    not draw for draw: where the probe of a partition kept fewer than half its draws and
 *    one pass over the partition's machines costs less than the draws still expected, the
 *    machines a draw would keep are listed, and each further one is reached after a
 *    geometric number of counted draws and picked by its free RUs, as rejection would;
 *    the cap, the draws charged and RUSK_EAGAIN keep their distribution
 *    (tests/test_vec_exact.c compares them with every draw made). It uses other
 *    generator numbers, so the RUs chosen for a seed differ from those of every draw made.
 *    Where the agent's last look at a partition for the same demand (its listing, or its
 *    probe) found under half its free RUs on machines that fit, the partition is listed
 *    before any draw (vhint_exact; RUSK_VHINT hints an agent, direct-mapped by demand and
 *    partition): the probe's draws, then a listing anyway, were most of the work on the
 *    GPU-sharing-heavy replay. Either way of drawing keeps the distribution, so a stale
 *    hint costs time, never a different choice in law (tested listed first where most
 *    machines fit). The geometric counts come from one uniform's inversion, or, where a
 *    draw hits with probability at least 1/VEC_TRIAL_HIT, from draws tried one by one
 *    on generator bits alone (draws_to_hit).
 *    A listing is reused (vset_build; RUSK_VLIST entries an agent, direct-mapped by demand
 *    and partition) while the partition's live vector words and its bits in the view are
 *    unchanged: its pass reads only those, the view's free counts and static shapes, so
 *    it would list the same set again. Two generations tell: the partition's vgen, which
 *    every writer of a machine's vector words moves on after its change (vec.c: release,
 *    read here with acquire before the pass), and the view's per partition generation,
 *    which every sync and mark moves on (view.h); an entry is used when both are as read
 *    before its pass. Under threads a listing is a guess the commit checks, as the live
 *    reads of every pass are. Where one machine's live words changed since
 *    (vgen names the last change's machine) and the view's changes were marks on one
 *    machine, the entry is patched: those machines passed again, the others' weights kept
 *    (vlist_patch). Only a pass that skips no machine is kept. On the GPU-sharing-heavy
 *    replay 41% of the listings came from an entry as it was and 17% more after a patch,
 *    the run's output byte-identical (tests/test_vval.c checks every current entry against
 *    a fresh pass, and decides with the cache and without, two agents on one cluster).
 *  - choose_latency1 decides exactly as choose_view would for its tasks (same draws from
 *    the same generator state, same order, same tie-break): it is a fast path, not a
 *    different strategy. The same holds for draw_uniform's batches.
 *  - A multi-RU task is never refused while the view holds m free RUs (gather_more).
 *  - A decision needs the view to show room for the whole task, except for a reserving
 *    incremental task (rusk_task.reserve), which starts with what there is: for a machine
 *    or rack task the drawn group with the most free RUs when none holds them all
 *    (pick_group); its remainder then stays in that group (rusk_task.held).
 *  - Every RU chosen for a task with held RUs lies where its placement allows beside them:
 *    in the anchor group's range [alo, ahi) (machine, rack), on a machine holding none of
 *    them (spread). The limits are checked in the decision itself, never left to a retry.
 *  - The one-RU latency fast path (choose_latency1) and the sampling paths cost a task
 *    without held RUs nothing more: the only added tests are two flag reads in choose_view
 *    and, for spread only, one in rusk_choose_'s fast-path condition.
 */
#include <alloca.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/atomic.h"
#include "kernel/choose.h"
#include "kernel/vec_impl.h"

static inline uint64_t tie_key(uint32_t ru)
{
	uint64_t x = ru;
	return rusk_splitmix64(&x);
}

static inline bool better(const rusk_cand *a, const rusk_cand *b)
{
	return a->q > b->q || (a->q == b->q && a->key > b->key);
}

/* What a preferred RU adds to its value: more than any Q or slot score, so it outranks
 * every draw, and preferred RUs rank among themselves by Q or score. */
#define PREF_BONUS 1e6

/* The value ranked for a candidate: Q or slot score, plus the preferred-machine bonus. A
 * task without preferred machines pays one load and branch (rusk_is_preferred_). */
static inline double value(const rusk_cluster *c, const rusk_dctx *d, uint32_t ru)
{
	double v = d->interf ? rusk_qtask_eval(c, &d->qt, ru) : c->ru_score[ru] / 1000.0;
	return rusk_is_preferred_(c, d->t, ru) ? v + PREF_BONUS : v;
}

bool rusk_cands_reserve_(rusk_cand **buf, size_t *cap, size_t n)
{
	if (n <= *cap)
		return true;
	size_t nc = *cap ? *cap : 64;
	while (nc < n)
		nc *= 2;
	rusk_cand *nb = realloc(*buf, nc * sizeof *nb);
	if (nb == NULL)
		return false;
	*buf = nb;
	*cap = nc;
	return true;
}

RUSK_EXPORT void rusk_agent_observe_delay(rusk_agent *a, uint64_t delay_ns)
{
	if (a == NULL)
		return;
	if (!a->ema_set) {
		a->ema_ns = (double)delay_ns;
		a->ema_set = true;
	} else {
		a->ema_ns += a->p.ema_alpha * ((double)delay_ns - a->ema_ns);
	}
}

RUSK_EXPORT double rusk_agent_delay_ema_ns(const rusk_agent *a)
{
	return a != NULL ? a->ema_ns : 0.0;
}

RUSK_EXPORT rusk_strategy rusk_agent_current_strategy(const rusk_agent *a)
{
	if (a == NULL)
		return RUSK_STRATEGY_LATENCY;
	if (a->p.strategy != RUSK_STRATEGY_ADAPTIVE)
		return a->p.strategy;
	return a->ema_ns < (double)a->p.tau_ns ? RUSK_STRATEGY_QUALITY : RUSK_STRATEGY_LATENCY;
}

/* Inserts x into best[0..*n) kept in decreasing order, at most m long. */
void rusk_top_insert_(rusk_cand *best, uint32_t *n, uint32_t m, const rusk_cand *x)
{
	if (*n == m && !better(x, &best[m - 1]))
		return;
	uint32_t i = *n < m ? (*n)++ : m - 1;
	while (i > 0 && better(x, &best[i - 1])) {
		best[i] = best[i - 1];
		i--;
	}
	best[i] = *x;
}

/*
 * Adds the free RUs of [ru_lo, ru_hi) (inside one partition) in `bits` (the view's or, with
 * atomic, the master's bitmap) to the top-m list out[0..*n). Returns RUs examined.
 */
uint32_t rusk_scan_range_(const rusk_cluster *c, const rusk_dctx *d, const uint64_t *bits,
                          bool atomic, uint32_t ru_lo, uint32_t ru_hi, uint32_t m, rusk_cand *out,
                          uint32_t *n)
{
	uint32_t seen = 0;
	const rusk_machine *mm = &c->machines[c->ru_machine[ru_lo]];
	uint32_t b0 = rusk_ru_bit(c, ru_lo, mm), b = b0, b_end = b0 + (ru_hi - ru_lo);
	while (b < b_end) {
		uint32_t wi = b / 64;
		uint64_t w = atomic ? rusk_load64(&bits[wi], RUSK_RELAXED) : bits[wi];
		w &= ~UINT64_C(0) << (b % 64);
		uint32_t word_end = (wi + 1) * 64;
		if (b_end < word_end)
			w &= (UINT64_C(1) << (b_end % 64)) - 1;
		while (w != 0) {
			uint32_t ru = ru_lo + (wi * 64 + (uint32_t)__builtin_ctzll(w) - b0);
			w &= w - 1;
			rusk_cand x = {ru, value(c, d, ru), tie_key(ru)};
			rusk_top_insert_(out, n, m, &x);
			seen++;
		}
		b = word_end;
	}
	return seen;
}

static uint32_t best_in_range(const rusk_cluster *c, const rusk_dctx *d, const uint64_t *bits,
                              bool atomic, uint32_t ru_lo, uint32_t ru_hi, uint32_t m,
                              rusk_cand *out)
{
	uint32_t n = 0;
	rusk_scan_range_(c, d, bits, atomic, ru_lo, ru_hi, m, out, &n);
	return n;
}

/* RU range of the machine or rack (group) that holds ru. */
void rusk_group_range_(const rusk_cluster *c, uint8_t place, uint32_t ru, uint32_t *gid,
                       uint32_t *lo, uint32_t *hi)
{
	const rusk_machine *mm = &c->machines[c->ru_machine[ru]];
	if (place == RUSK_PLACE_MACHINE) {
		*gid = c->ru_machine[ru];
		*lo = mm->first_ru;
		*hi = mm->first_ru + mm->n_rus;
		return;
	}
	*gid = mm->rack;
	uint32_t m0 = mm->rack * c->machines_per_rack, m1 = m0 + c->machines_per_rack;
	if (m1 > c->n_machines)
		m1 = c->n_machines;
	*lo = c->machines[m0].first_ru;
	*hi = c->machines[m1 - 1].first_ru + c->machines[m1 - 1].n_rus;
}

static int cmp_ru(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Candidate and RU lists are short (R*m, usually <= 64): insertion sort beats qsort's
 * call overhead there (it was 40% of a decision). */
static void sort_cands(rusk_cand *x, size_t n)
{
	if (n > 64) {
		qsort(x, n, sizeof *x, cmp_ru);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		rusk_cand v = x[i];
		size_t j = i;
		while (j > 0 && x[j - 1].ru > v.ru) {
			x[j] = x[j - 1];
			j--;
		}
		x[j] = v;
	}
}

void rusk_sort_rus_(uint32_t *x, size_t n)
{
	if (n > 64) {
		qsort(x, n, sizeof *x, cmp_ru);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		uint32_t v = x[i];
		size_t j = i;
		while (j > 0 && x[j - 1] > v) {
			x[j] = x[j - 1];
			j--;
		}
		x[j] = v;
	}
}

/* Orders partitions for this decision; returns how many have free RUs in the view. */
static uint32_t partition_order(rusk_agent *a, const rusk_dctx *d, rusk_strategy s)
{
	rusk_cluster *c = a->c;
	uint32_t P = c->n_parts, n = 0;
	if (s == RUSK_STRATEGY_LATENCY) {
		/* All of them, freshest first; the draw loop skips partitions without free RUs
		 * (filtering here cost a view_free call per partition per decision). */
		return (uint32_t)rusk_view_freshest(a->v, a->order, P);
	}
	/* quality / random: expected value per partition, then sort (P is small). Every
	 * partition is scanned (the work rusk sim charges: ParSync §6.2, Quality-first "checks
	 * all partitions"). */
	double *score = alloca(sizeof(double) * P);
	a->wk_parts += P;
	for (uint32_t p = 0; p < P; p++) {
		if (rusk_view_free(a->v, p) == 0)
			continue;
		double e;
		if (s == RUSK_STRATEGY_RANDOM) {
			e = rusk_rng_unit(&a->rng) * rusk_view_free(a->v, p); /* free-weighted */
		} else if (!d->interf) {
			e = rusk_view_mean_free_score(a->v, p);
			for (uint32_t i = 0; i < d->t->n_preferred; i++) {
				uint32_t m = d->t->preferred[i];
				if (m < c->n_machines && c->machines[m].partition == p)
					e += 1e6; /* a partition holding preferred machines first */
			}
		} else {
			double sum = 0;
			int k = 0;
			for (; k < 4; k++) {
				uint32_t ru;
				if (!rusk_view_pick_free(a->v, p, rusk_rng_next(&a->rng), &ru))
					break;
				sum += rusk_qtask_eval(c, &d->qt, ru);
			}
			a->wk_examined += (uint32_t)k; /* probes */
			e = k ? sum / k : 0;
		}
		uint32_t i = n++;
		while (i > 0 && score[i - 1] < e) {
			score[i] = score[i - 1];
			a->order[i] = a->order[i - 1];
			i--;
		}
		score[i] = e;
		a->order[i] = p;
	}
	return n;
}

/*
 * `take` uniform candidates from partition p into a->cands[n..], in the batches of 64
 * choose_latency1 draws in, so both paths draw the same RUs from one generator state.
 * Returns the new count.
 */
static size_t draw_uniform(rusk_agent *a, uint32_t p, size_t n, size_t take)
{
	const rusk_vrange vr = rusk_view_range_(a->v, p);
	uint32_t buf[64 + RUSK_PICK_BATCH];
	for (size_t k = 0; k < take;) {
		uint32_t b = take - k < 64 ? (uint32_t)(take - k) : 64;
		if (rusk_view_pick_n_(&vr, &a->rng, buf, b) == 0)
			break;
		for (uint32_t j = 0; j < b; j++)
			a->cands[n++] = (rusk_cand){buf[j], 0, 0};
		k += b;
	}
	return n;
}

/* One candidate from partition p: uniform, or weighted by value for Quality-first. */
static bool draw(rusk_agent *a, const rusk_dctx *d, uint32_t p, bool weighted, uint32_t *ru)
{
	if (!weighted)
		return rusk_view_pick_free(a->v, p, rusk_rng_next(&a->rng), ru);
	double bound = d->interf ? 1.0 : a->c->max_score / 1000.0;
	for (int k = 0; k < 16; k++) {
		if (!rusk_view_pick_free(a->v, p, rusk_rng_next(&a->rng), ru))
			return false;
		double q = rusk_reported_quality_(a->c, d, *ru);
		if (rusk_rng_unit(&a->rng) * bound <= q || rusk_is_preferred_(a->c, d->t, *ru))
			return true;
		a->wk_examined += k < 15; /* rejected: examined, not a candidate */
	}
	return true; /* keep the last draw rather than spin at low quality */
}

/* R per RU: fixed, Sparrow's 2, or sized from the guarantee and the view's free share. */
static inline uint32_t sample_r(const rusk_agent *a, rusk_strategy s, uint64_t view_free)
{
	if (s == RUSK_STRATEGY_RANDOM)
		return 2;
	if (a->p.sample)
		return a->p.sample;
	return rusk_sample_size(a->p.eps, a->p.target, (double)view_free / a->c->n_rus, a->p.r_max);
}

/*
 * Latency-first for one RU without preferences, the common case, in one pass: R draws from
 * the freshest partition with a free RU, best slot score kept as drawn. Decides exactly as
 * the general path below (same draws, same order, same tie-break) without its candidate
 * buffer, per-candidate calls and floating-point values: half the instructions of a
 * scheduled task were there.
 */
static int choose_latency1(rusk_agent *a, uint32_t R, uint64_t now, uint32_t *rus,
                           rusk_placement *pl)
{
	const rusk_cluster *c = a->c;
	const uint32_t *order = rusk_view_order_(a->v);
	pl->staleness_ns = rusk_view_staleness_(a->v, order[0], now);
	uint32_t i = 0, p = order[0];
	while (rusk_view_free_(a->v, p) == 0) {
		if (++i == c->n_parts)
			return RUSK_EAGAIN; /* unreachable: the caller saw free RUs in the view */
		p = order[i];
	}
	const rusk_vrange vr = rusk_view_range_(a->v, p);
	/* A local generator: the draws' bitmap loads cannot alias it, so it stays in
	 * registers. Draws come in batches of up to 64 (rusk_view_pick_n_). */
	rusk_rng rng = a->rng;
	uint32_t buf[64 + RUSK_PICK_BATCH], best = 0, k = 0;
	uint16_t bs = 0;
	uint64_t bkey = 0;
	bool keyed = false;
	while (k < R) {
		uint32_t n = R - k < 64 ? R - k : 64;
		if (rusk_view_pick_n_(&vr, &rng, buf, n) == 0)
			break; /* unreachable: free count and bits agree */
		uint32_t j = 0;
		if (k == 0) {
			best = buf[0];
			bs = c->ru_score[best];
			j = 1;
		}
		for (; j < n; j++) {
			uint32_t ru = buf[j];
			uint16_t sc = c->ru_score[ru];
			if (RUSK_UNLIKELY(sc == bs)) {
				/* A tie (rare: scores take thousands of values), or the best RU
				 * drawn again: the keys decide. */
				if (ru == best)
					continue;
				if (!keyed)
					bkey = tie_key(best);
				keyed = true;
				uint64_t key = tie_key(ru);
				if (key > bkey) {
					bkey = key;
					best = ru;
				}
				continue;
			}
			/* A higher score replaces the best by selects, not a branch: whether a
			 * random draw beats the best so far is a coin the predictor cannot
			 * learn (about 1.7 new bests in 8 draws, each a mispredict). */
			bool up = sc > bs;
			best = up ? ru : best;
			bs = up ? sc : bs;
			keyed = keyed && !up;
		}
		k += n;
	}
	a->wk_parts = i + 1; /* the partitions looked at, the one drawn from included */
	if (k == 0) {
		a->rng = rng;
		return RUSK_EAGAIN;
	}
	a->rng = rng;
	pl->samples = k;
	rus[0] = best;
	pl->quality = bs / 1000.0;
	pl->preferred = 0;
	return 1;
}

/* Sorts x[0..n) by RU and drops repeated RUs; returns how many are left. */
static size_t dedup_sorted(rusk_cand *x, size_t n)
{
	sort_cands(x, n);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || x[i].ru != x[u - 1].ru)
			x[u++] = x[i];
	return u;
}

/*
 * Drops repeated RUs from a->cands[0..n); returns how many are left. A long list (a
 * large task's R*m) keeps first occurrences in drawn order, found with a bit per RU in
 * O(n): sorting 21K candidates cost most of a 661-RU decision. The set is the same as
 * dedup_sorted's, and what follows ranks it by a strict order, so the choice is too.
 * Random keys candidates in list order: it always sorts.
 */
static size_t dedup_cands(rusk_agent *a, rusk_strategy s, size_t n)
{
	rusk_cand *x = a->cands;
	if (n <= 64 || s == RUSK_STRATEGY_RANDOM)
		return dedup_sorted(x, n);
	if (a->seen == NULL && (a->seen = calloc((a->c->n_rus + 63) / 64, 8)) == NULL)
		return dedup_sorted(x, n);
	size_t u = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t bit = UINT64_C(1) << (x[i].ru % 64);
		uint64_t *w = &a->seen[x[i].ru / 64];
		if ((*w & bit) == 0) {
			*w |= bit;
			x[u++] = x[i];
		}
	}
	for (size_t i = 0; i < u; i++)
		a->seen[x[i].ru / 64] = 0;
	return u;
}

/* Appends every free RU of partition p in the view to out (each once); returns how many. */
static size_t enum_free(const rusk_agent *a, uint32_t p, rusk_cand *out)
{
	const rusk_vrange r = rusk_view_range_(a->v, p);
	size_t n = 0;
	for (uint32_t wi = rusk_vrange_next_(&r, 0); wi < r.n_words;
	     wi = rusk_vrange_next_(&r, wi + 1))
		for (uint64_t w = r.w[wi]; w != 0; w &= w - 1)
			out[n++] = (rusk_cand){r.first_ru + wi * 64 + (uint32_t)__builtin_ctzll(w),
			                       0, 0};
	return n;
}

/*
 * Gathers candidates into a->cands[*n..want) from the partitions a->order[i..n_parts) in
 * the strategy's order; returns the first partition not visited. Latency-first stays in
 * the freshest partition unless it cannot hold the task; Quality-first stops after the
 * best partition that can. With `exact`, a partition with no more free RUs than the
 * draws wanted from it gives all of them instead (each once, and cheaper than drawing).
 */
static uint32_t gather(rusk_agent *a, const rusk_dctx *d, rusk_strategy s, uint32_t i,
                       uint32_t n_parts, uint32_t m, size_t want, bool exact, size_t *n,
                       uint32_t *drawn)
{
	bool weighted = s == RUSK_STRATEGY_QUALITY;
	for (; i < n_parts && *n < want; i++) {
		uint32_t p = a->order[i];
		uint32_t pf = rusk_view_free_(a->v, p);
		size_t take = want - *n;
		a->wk_parts++;
		if (s == RUSK_STRATEGY_LATENCY && i + 1 < n_parts && pf < m)
			take = take < pf ? take : pf;
		if (exact && pf > 0 && pf <= take) {
			size_t k = enum_free(a, p, a->cands + *n);
			*n += k;
			*drawn += (uint32_t)k;
		} else if (!weighted) {
			size_t before = *n;
			*n = draw_uniform(a, p, *n, take);
			*drawn += (uint32_t)(*n - before);
		} else {
			for (size_t k = 0; k < take; k++) {
				uint32_t ru;
				if (!draw(a, d, p, weighted, &ru))
					break;
				a->cands[(*n)++] = (rusk_cand){ru, 0, 0};
				(*drawn)++;
			}
		}
		if (s != RUSK_STRATEGY_LATENCY && s != RUSK_STRATEGY_RANDOM && pf >= m)
			return i + 1; /* quality: the best partition that can hold it */
	}
	return i;
}

/*
 * Candidates for m > 1 RUs hold fewer than m distinct ones: draws are independent, so a
 * partition with few free RUs returns the same ones again and again (and the freshest
 * partition may hold fewer than m). Gathering goes on in the partitions not visited yet
 * (R per missing RU, exact where a partition has few free RUs), and as a last resort
 * takes every free RU of the view in the strategy's order, until m distinct RUs are in
 * hand: the view holds at least m free RUs (choose_view's first check), so the task is
 * never refused, nor does a high-priority one preempt, while the view knows of room.
 * Returns how many distinct candidates a->cands now holds, or RUSK_ENOMEM.
 */
static long gather_more(rusk_agent *a, const rusk_dctx *d, rusk_strategy s, uint32_t next,
                        uint32_t n_parts, uint32_t m, uint32_t R, size_t n, uint32_t *drawn)
{
	while (n < m && next < n_parts) {
		size_t want = n + (size_t)R * (m - n);
		if (!rusk_cands_reserve_(&a->cands, &a->cap, want))
			return RUSK_ENOMEM;
		next = gather(a, d, s, next, n_parts, m, want, true, &n, drawn);
		n = dedup_cands(a, s, n);
	}
	for (uint32_t i = 0; n < m && i < n_parts; i++) {
		uint32_t pf = rusk_view_free_(a->v, a->order[i]);
		a->wk_parts++;
		if (!rusk_cands_reserve_(&a->cands, &a->cap, n + pf))
			return RUSK_ENOMEM;
		size_t k = enum_free(a, a->order[i], a->cands + n);
		*drawn += (uint32_t)k;
		n = dedup_cands(a, s, n + k);
	}
	return (long)n;
}

static inline void swap_cand(rusk_cand *x, rusk_cand *y)
{
	rusk_cand t = *x;
	*x = *y;
	*y = t;
}

static int cmp_better(const void *x, const void *y)
{
	const rusk_cand *a = x, *b = y;
	return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

/*
 * The best m of x[0..n) into best[0..m), best first; returns how many (min(n, m)).
 * Quickselect moves the m best to the front in O(n) expected, then only they are sorted:
 * the same set and order as inserting every candidate into a sorted top-m list (better()
 * is a strict order: keys of distinct RUs differ), without its O(n m) moves, which made
 * a 661-RU decision over 21K candidates cost milliseconds. Reorders x.
 */
static uint32_t select_top(rusk_cand *x, size_t n, uint32_t m, rusk_cand *best)
{
	if (n > m) {
		size_t lo = 0, hi = n - 1; /* the m-th best's place is in [lo, hi] */
		while (lo < hi) {
			/* Median of three as pivot, moved to hi; Lomuto partition, best first. */
			size_t mid = lo + (hi - lo) / 2;
			if (better(&x[mid], &x[lo]))
				swap_cand(&x[mid], &x[lo]);
			if (better(&x[hi], &x[lo]))
				swap_cand(&x[hi], &x[lo]);
			if (better(&x[mid], &x[hi]))
				swap_cand(&x[mid], &x[hi]);
			size_t st = lo;
			for (size_t k = lo; k < hi; k++)
				if (better(&x[k], &x[hi])) {
					swap_cand(&x[k], &x[st]);
					st++;
				}
			swap_cand(&x[st], &x[hi]);
			if (st == m - 1)
				break;
			if (st < m - 1)
				lo = st + 1;
			else
				hi = st - 1;
		}
		n = m;
	}
	memcpy(best, x, n * sizeof *best);
	qsort(best, n, sizeof *best, cmp_better);
	return (uint32_t)n;
}

/*
 * RUs of the task's preferred machines (those that exist), and, with find_newest, in
 * *newest when the freshest partition holding a preferred RU free in the view was taken.
 */
static size_t preferred_rus(const rusk_agent *a, const rusk_task *t, bool find_newest,
                            uint64_t *newest)
{
	const rusk_cluster *c = a->c;
	size_t extra = 0;
	for (uint32_t k = 0; k < t->n_preferred; k++) {
		if (t->preferred[k] >= c->n_machines)
			continue;
		const rusk_machine *pm = &c->machines[t->preferred[k]];
		extra += pm->n_rus;
		uint64_t taken = rusk_view_taken_ns_(a->v, pm->partition);
		if (find_newest && taken > *newest)
			for (uint32_t ru = pm->first_ru; ru < pm->first_ru + pm->n_rus; ru++)
				if (rusk_view_is_free(a->v, ru)) {
					*newest = taken;
					break;
				}
	}
	return extra;
}

/* Whether the task's preferred machines are read live (add_preferred says why). */
static inline bool live_pref(const rusk_dctx *d)
{
	return d->interf && d->t->n_preferred > 0;
}

/* Whether ru is free in the master array (relaxed: the commit decides, as for a view). */
static inline bool live_free(const rusk_cluster *c, const rusk_machine *pm, uint32_t ru)
{
	uint32_t b = rusk_ru_bit(c, ru, pm);
	return (rusk_load64(&c->free_bits[b / 64], RUSK_RELAXED) >> (b % 64)) & 1u;
}

/* Whether this decision starts from the task's preferred machines. */
static inline bool uses_preferred(const rusk_agent *a, const rusk_dctx *d, rusk_strategy s)
{
	return d->t->n_preferred > 0 && (s == RUSK_STRATEGY_QUALITY ||
	                                 (s == RUSK_STRATEGY_LATENCY && a->p.latency_preferred));
}

/*
 * Preferred machines are looked up, not sampled: an O(k) index, where ParSync's schedulers
 * had to search. Quality-first (weighted) takes all of them as candidates (§6.2: it "checks
 * all partitions to find preferred slots"); Latency-first only those in the freshest
 * partition that has one free, where a commit is least likely to conflict (§5.2: "from the
 * least stale partition first"), and then draws nothing when they can hold the task: a
 * preferred RU outranks any draw. Appends their free RUs to a->cands[*n..] and sets *want,
 * the candidate count gathering stops at. Returns RUSK_OK or RUSK_ENOMEM.
 *
 * Under the interference model (live_pref) the preferred machines are a Quasar allocation's
 * (rusk_cls_alloc_size: sized on those machines, from the live state): every strategy
 * takes all of them, reading their RUs in the master array rather than the view, and draws
 * R per RU as well, the fallback should they lack room. Quasar §3.3 sizes and assigns
 * jointly ("the amount, type, and exact set of allocated resources"): the least resources
 * that meet the target on those machines, so the allocation is placed where it was sized,
 * and Tarcil's Q ranks the RUs within them and the draws. The view would hide the room the
 * sizing saw: a machine freed since the partition's last sync (the least loaded, which the
 * sizing ranks first) looks busy there, and its view-free RUs may be another agent's.
 */
static int add_preferred(rusk_agent *a, const rusk_dctx *d, bool weighted, size_t *want, size_t *n)
{
	const rusk_cluster *c = a->c;
	const rusk_task *t = d->t;
	uint64_t newest = 0;
	bool live = live_pref(d);
	weighted = weighted || live;
	size_t extra = preferred_rus(a, t, !weighted, &newest);
	if (!rusk_cands_reserve_(&a->cands, &a->cap, *want + extra))
		return RUSK_ENOMEM;
	uint32_t most = 0; /* the most free RUs on one preferred machine */
	for (uint32_t k = 0; k < t->n_preferred; k++) {
		if (t->preferred[k] >= c->n_machines)
			continue;
		const rusk_machine *pm = &c->machines[t->preferred[k]];
		if (!weighted && rusk_view_taken_ns_(a->v, pm->partition) != newest)
			continue;
		a->wk_examined += pm->n_rus; /* each RU looked up */
		size_t n0 = *n;
		for (uint32_t ru = pm->first_ru; ru < pm->first_ru + pm->n_rus; ru++)
			if (live ? live_free(c, pm, ru) : rusk_view_is_free(a->v, ru))
				a->cands[(*n)++] = (rusk_cand){ru, 0, 0};
		most = *n - n0 > most ? (uint32_t)(*n - n0) : most;
	}
	/* Live, draws cannot beat preferred RUs that hold the task (any placement: m of them;
	 * one machine: m on one): none are drawn. */
	bool held = t->placement == RUSK_PLACE_ANY       ? *n >= t->rus
	            : t->placement == RUSK_PLACE_MACHINE ? most >= t->rus
	                                                 : false;
	*want = (!weighted || (live && held)) && *n >= t->rus ? *n : *want + *n;
	return RUSK_OK;
}

/*
 * Draws candidates into a->cands[n..want) from the partitions in the strategy's order and,
 * for m > 1 RUs without locality, de-duplicates them (*deduped) and gathers more until m
 * distinct ones are in hand. Counts the draws in *drawn. Returns how many candidates
 * a->cands holds, or RUSK_ENOMEM.
 */
static long collect(rusk_agent *a, const rusk_dctx *d, rusk_strategy s, uint32_t n_parts,
                    uint32_t R, bool grouped, size_t want, size_t n, uint32_t *drawn, bool *deduped)
{
	uint32_t m = d->t->rus;
	uint32_t next = gather(a, d, s, 0, n_parts, m, want, false, &n, drawn);
	*deduped = false;
	if (m > 1 && !grouped) {
		n = dedup_cands(a, s, n);
		*deduped = true;
		if (n < m)
			return gather_more(a, d, s, next, n_parts, m, R, n, drawn);
	}
	return (long)n;
}

/*
 * One RU: the best of a->cands[0..n), no sort or de-duplication needed (a repeated RU has
 * the same value); the tie-break key only when values tie. Returns 1.
 */
static int choose_best1(rusk_agent *a, const rusk_dctx *d, size_t n, uint32_t *rus,
                        rusk_placement *pl)
{
	const rusk_cluster *c = a->c;
	rusk_cand best1 = {a->cands[0].ru, value(c, d, a->cands[0].ru), 0};
	bool keyed = false;
	for (size_t i = 1; i < n; i++) {
		rusk_cand x = {a->cands[i].ru, value(c, d, a->cands[i].ru), 0};
		if (x.q < best1.q || x.ru == best1.ru)
			continue;
		if (x.q == best1.q) {
			if (!keyed)
				best1.key = tie_key(best1.ru);
			keyed = true;
			x.key = tie_key(x.ru);
			if (x.key <= best1.key)
				continue;
		} else {
			keyed = false;
		}
		best1 = x;
	}
	rus[0] = best1.ru;
	pl->quality = rusk_reported_quality_(c, d, best1.ru);
	pl->preferred = rusk_is_preferred_(c, d->t, best1.ru);
	return 1;
}

/* Values a->cands[0..n) and keys them: random keys in list order for the random baseline
 * (no quality ranking), the fixed hash of the RU otherwise. */
static void value_cands(rusk_agent *a, const rusk_dctx *d, rusk_strategy s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		a->cands[i].q = s == RUSK_STRATEGY_RANDOM ? 0 : value(a->c, d, a->cands[i].ru);
		a->cands[i].key = s == RUSK_STRATEGY_RANDOM ? rusk_rng_next(&a->rng)
		                                            : tie_key(a->cands[i].ru);
	}
}

/* Spread: the best m of a->cands[0..n) on distinct machines, best first; returns how many. */
static uint32_t pick_spread(const rusk_agent *a, size_t n, uint32_t m, rusk_cand *best)
{
	const rusk_cluster *c = a->c;
	uint32_t got = 0;
	for (uint32_t k = 0; k < m; k++) {
		const rusk_cand *pick = NULL;
		for (size_t i = 0; i < n; i++) {
			bool used = false;
			for (uint32_t j = 0; j < got && !used; j++)
				used = c->ru_machine[best[j].ru] == c->ru_machine[a->cands[i].ru];
			if (!used && (pick == NULL || better(&a->cands[i], pick)))
				pick = &a->cands[i];
		}
		if (pick == NULL)
			break;
		best[got++] = *pick;
	}
	return got;
}

/*
 * Locality: each candidate's machine or rack (place), judged by the mean value of its best
 * m free RUs in the view (Tarcil Fig. 5b); the best group's m RUs into best[0..m), with
 * best[m..2m) as scratch. a->cands[0..n) is sorted by RU, so a group's candidates are
 * adjacent and it is scanned once. Returns m; or, when no group drawn holds m free RUs,
 * 0, and for a reserving task (rusk_task.reserve) the most a group drawn holds (its best
 * ones: it keeps them and waits for the rest there, rusk_task.held), ties by mean value.
 */
static uint32_t pick_group(const rusk_agent *a, const rusk_dctx *d, uint8_t place, size_t n,
                           uint32_t m, rusk_cand *best)
{
	const rusk_cluster *c = a->c;
	rusk_cand *tmp = best + m;
	double best_mean = -INFINITY;
	uint32_t last_group = UINT32_MAX, got = 0;
	bool partial = d->t->reserve && !d->t->gang;
	for (size_t i = 0; i < n; i++) {
		uint32_t lo, hi, gid;
		rusk_group_range_(c, place, a->cands[i].ru, &gid, &lo, &hi);
		if (gid == last_group)
			continue; /* sorted by RU: same group as the previous candidate */
		last_group = gid;
		/* A preferred machine read live, as add_preferred found its RUs. */
		bool live = place == RUSK_PLACE_MACHINE && live_pref(d) &&
		            rusk_is_preferred_(c, d->t, a->cands[i].ru);
		uint32_t k =
		        live ? best_in_range(c, d, c->free_bits, true, lo, hi, m, tmp)
		             : best_in_range(c, d, rusk_view_bits_(a->v), false, lo, hi, m, tmp);
		double mq = rusk_mean_q_(tmp, k);
		/* Whole groups first; an incremental task's fallback ranks by size, then mean. */
		bool take = k == m ? got < m || mq > best_mean
		                   : partial && k > 0 && (k > got || (k == got && mq > best_mean));
		if (take) {
			best_mean = mq;
			memcpy(best, tmp, sizeof *best * k);
			got = k;
		}
	}
	return got;
}

/* The chosen best[0..got) into rus (sorted by RU) and pl's quality and preferred count. */
static void report_choice(const rusk_agent *a, const rusk_dctx *d, const rusk_cand *best,
                          uint32_t got, uint32_t *rus, rusk_placement *pl)
{
	double qs = 0;
	uint32_t pref = 0;
	for (uint32_t i = 0; i < got; i++) {
		rus[i] = best[i].ru;
		qs += rusk_reported_quality_(a->c, d, best[i].ru);
		pref += rusk_is_preferred_(a->c, d->t, best[i].ru);
	}
	rusk_sort_rus_(rus, got);
	pl->quality = qs / got;
	pl->preferred = pref;
}

/*
 * A remainder beside held RUs under machine or rack placement (d->anchored; rusk/sched.h
 * "Held RUs"): its group is known, so nothing is sampled; the anchor group's free RUs in
 * the view are scanned (rusk_scan_range_) and the best m kept by value, then tie key, as
 * pick_group ranks a group (a preferred anchor machine under the interference model is read
 * live, as pick_group reads it). The random baseline, which does not rank, takes m of them
 * by random keys instead. A group with fewer than m free gives an incremental task what it
 * has (at least one); a gang gets RUSK_EAGAIN, as does a group with none free. Returns RUs
 * chosen, RUSK_EAGAIN or RUSK_ENOMEM.
 */
static int choose_anchored(rusk_agent *a, const rusk_dctx *d, rusk_strategy s, uint32_t *rus,
                           rusk_placement *pl, uint64_t now)
{
	const rusk_cluster *c = a->c;
	const rusk_task *t = d->t;
	uint32_t m = t->rus, got = 0, lo = d->alo, hi = d->ahi;
	pl->sample_size = 0;
	pl->staleness_ns =
	        rusk_view_staleness_(a->v, c->machines[c->ru_machine[lo]].partition, now);
	bool random = s == RUSK_STRATEGY_RANDOM;
	if (!rusk_cands_reserve_(&a->group, &a->group_cap, m) ||
	    (random && !rusk_cands_reserve_(&a->cands, &a->cap, hi - lo)))
		return RUSK_ENOMEM;
	bool live =
	        t->placement == RUSK_PLACE_MACHINE && live_pref(d) && rusk_is_preferred_(c, t, lo);
	const uint64_t *bits = live ? c->free_bits : rusk_view_bits_(a->v);
	if (!random) {
		pl->samples = rusk_scan_range_(c, d, bits, live, lo, hi, m, a->group, &got);
	} else {
		uint32_t n = 0;
		pl->samples = rusk_scan_range_(c, d, bits, live, lo, hi, hi - lo, a->cands, &n);
		for (uint32_t i = 0; i < n; i++)
			a->cands[i] = (rusk_cand){a->cands[i].ru, 0, rusk_rng_next(&a->rng)};
		got = select_top(a->cands, n, m, a->group);
	}
	if (got == 0 || (t->gang && got < m))
		return RUSK_EAGAIN;
	report_choice(a, d, a->group, got, rus, pl);
	return (int)got;
}

/* Drops from x[0..n) the candidates on machines a spread remainder must avoid; returns how
 * many are left, in their order. */
static size_t drop_excluded(const rusk_agent *a, const rusk_dctx *d, rusk_cand *x, size_t n)
{
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!rusk_dctx_excluded_(a->c, d, a->c->ru_machine[x[i].ru]))
			x[u++] = x[i];
	return u;
}

/*
 * A spread remainder beside held RUs (d->excl; rusk/sched.h "Held RUs"): the candidates
 * drawn (a->cands[0..n)), less those on machines the task holds or won earlier in this
 * place() call, then the best m on distinct machines (pick_spread). Where the draws leave
 * fewer than m machines, every free RU of the view's partitions is added, a partition at a
 * time in the strategy's order, until they do (gather_more's last resort): the remainder is
 * not refused while the view knows of room on machines it may use. Returns RUs chosen,
 * RUSK_EAGAIN or RUSK_ENOMEM.
 */
static int choose_spread_beside(rusk_agent *a, const rusk_dctx *d, rusk_strategy s,
                                uint32_t n_parts, size_t n, bool deduped, uint32_t *rus,
                                rusk_placement *pl)
{
	const rusk_task *t = d->t;
	uint32_t m = t->rus;
	rusk_cand *best = a->group;
	if (!deduped)
		n = dedup_sorted(a->cands, n);
	n = drop_excluded(a, d, a->cands, n);
	value_cands(a, d, s, n);
	uint32_t got = pick_spread(a, n, m, best);
	for (uint32_t i = 0; got < m && i < n_parts; i++) {
		uint32_t pf = rusk_view_free_(a->v, a->order[i]);
		if (pf == 0)
			continue;
		if (!rusk_cands_reserve_(&a->cands, &a->cap, n + pf))
			return RUSK_ENOMEM;
		size_t k = enum_free(a, a->order[i], a->cands + n);
		pl->samples += (uint32_t)k;
		n += drop_excluded(a, d, a->cands + n, k);
		n = dedup_sorted(a->cands, n);
		value_cands(a, d, s, n);
		got = pick_spread(a, n, m, best);
	}
	if (got == 0 || (t->gang && got < m))
		return RUSK_EAGAIN;
	report_choice(a, d, best, got, rus, pl);
	return (int)got;
}

/* A decision's first steps, the general one's and a vector task's: room for the task's RUs
 * in the view, R from the guarantee, the partitions in the strategy's order, the
 * staleness of the first. RUSK_OK, or RUSK_EAGAIN when the view has no room. order: NULL,
 * or where the order is read from: Latency-first's is the view's own (freshest first, not
 * copied: nothing in a decision syncs the view), any other a->order. */
static int decision_start(rusk_agent *a, const rusk_dctx *d, rusk_strategy s, rusk_placement *pl,
                          uint64_t now, uint32_t *R, uint32_t *n_parts, const uint32_t **order)
{
	uint64_t view_free = rusk_view_total_free_(a->v);
	/* Room for the whole task, or for one RU of a reserving one. */
	if (view_free < (d->t->reserve && !d->t->gang ? 1 : d->t->rus))
		return RUSK_EAGAIN;
	*R = sample_r(a, s, view_free);
	pl->sample_size = *R;
	const uint32_t *o = a->order;
	if (order != NULL && s == RUSK_STRATEGY_LATENCY) {
		o = rusk_view_order_(a->v);
		*n_parts = a->c->n_parts;
	} else {
		*n_parts = partition_order(a, d, s);
	}
	if (order != NULL)
		*order = o;
	if (*n_parts == 0)
		return RUSK_EAGAIN;
	pl->staleness_ns = rusk_view_staleness_(a->v, o[0], now);
	return RUSK_OK;
}

/*
 * The general decision on the view (any strategy, size and placement): R from the
 * guarantee, partitions in the strategy's order, the preferred machines, candidates drawn
 * (R per RU, R per group for locality), then the best one, the best m, the best m on
 * distinct machines or the best group. Returns RUs chosen, RUSK_EAGAIN or RUSK_ENOMEM.
 */
static int choose_view(rusk_agent *a, const rusk_dctx *d, rusk_strategy s, uint32_t *rus,
                       rusk_placement *pl, uint64_t now)
{
	const rusk_task *t = d->t;
	if (RUSK_UNLIKELY(d->anchored))
		return choose_anchored(a, d, s, rus, pl, now);
	uint32_t m = t->rus, R, n_parts;
	int rc = decision_start(a, d, s, pl, now, &R, &n_parts, NULL);
	if (rc != RUSK_OK)
		return rc;
	uint8_t place = t->placement;
	bool grouped = place == RUSK_PLACE_MACHINE || place == RUSK_PLACE_RACK;
	size_t want = grouped ? R : (size_t)R * m;
	if (!rusk_cands_reserve_(&a->cands, &a->cap, want) ||
	    !rusk_cands_reserve_(&a->group, &a->group_cap, 2 * (size_t)m))
		return RUSK_ENOMEM;
	size_t n = 0;
	if (uses_preferred(a, d, s)) {
		int rc = add_preferred(a, d, s == RUSK_STRATEGY_QUALITY, &want, &n);
		if (rc != RUSK_OK)
			return rc;
	}
	uint32_t drawn = 0;
	bool deduped;
	long k = collect(a, d, s, n_parts, R, grouped, want, n, &drawn, &deduped);
	if (k < 0)
		return (int)k;
	n = (size_t)k;
	pl->samples = drawn;
	if (RUSK_UNLIKELY(d->excl))
		return choose_spread_beside(a, d, s, n_parts, n, deduped, rus, pl);
	if (n == 0)
		return RUSK_EAGAIN;
	if (m == 1 && !grouped && s != RUSK_STRATEGY_RANDOM)
		return choose_best1(a, d, n, rus, pl);
	if (!deduped)
		n = dedup_sorted(a->cands, n); /* locality walks them in RU order */
	value_cands(a, d, s, n);
	rusk_cand *best = a->group;
	uint32_t got = place == RUSK_PLACE_ANY      ? select_top(a->cands, n, m, best)
	               : place == RUSK_PLACE_SPREAD ? pick_spread(a, n, m, best)
	                                            : pick_group(a, d, place, n, m, best);
	if (got < (t->gang ? m : 1))
		return RUSK_EAGAIN;
	report_choice(a, d, best, got, rus, pl);
	return (int)got;
}

/* Whether machine mi was found short of memory or GPUs earlier in this place() call, or is
 * already among the machines this decision judged. */
static bool machine_listed(const uint32_t *list, uint32_t n, uint32_t mi)
{
	for (uint32_t i = 0; i < n; i++)
		if (list[i] == mi)
			return true;
	return false;
}

static inline void swap16(uint16_t *x, uint32_t i, uint32_t j)
{
	uint16_t t = x[i];
	x[i] = x[j];
	x[j] = t;
}

/* Moves the k largest of x[0..n) to x[0..k) (0 < k <= n): quickselect with a three-way
 * partition around the median of three, so equal scores cannot make it quadratic.
 * Deterministic. */
static void select_scores(uint16_t *x, uint32_t n, uint32_t k)
{
	uint32_t lo = 0, hi = n;
	while (hi - lo > 1) {
		uint16_t a = x[lo], b = x[lo + (hi - lo) / 2], c = x[hi - 1];
		uint16_t piv =
		        a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
		/* [lo, lt) > piv, [lt, i) == piv, [gt, hi) < piv */
		uint32_t lt = lo, i = lo, gt = hi;
		while (i < gt) {
			if (x[i] > piv)
				swap16(x, lt++, i++);
			else if (x[i] < piv)
				swap16(x, i, --gt);
			else
				i++;
		}
		if (k <= lt)
			hi = lt;
		else if (k <= gt)
			return;
		else
			lo = gt;
	}
}

/* Sum of the k largest (largest) or k smallest of x[0..n) by insertion into a sorted
 * list of k: one compare for most values when k is small. */
static uint64_t extreme_sum(const uint16_t *x, uint32_t n, uint32_t k, bool largest)
{
	uint16_t keep[16];
	uint32_t got = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint16_t v = x[i];
		if (got == k && (largest ? v <= keep[k - 1] : v >= keep[k - 1]))
			continue;
		uint32_t j = got < k ? got++ : k - 1;
		while (j > 0 && (largest ? v > keep[j - 1] : v < keep[j - 1])) {
			keep[j] = keep[j - 1];
			j--;
		}
		keep[j] = v;
	}
	uint64_t sum = 0;
	for (uint32_t i = 0; i < got; i++)
		sum += keep[i];
	return sum;
}

/* Sum of the m largest of x[0..n) (0 < m <= n; x may be reordered): insertion when m or
 * n - m is small, else a quickselect. */
static uint64_t top_sum(uint16_t *x, uint32_t n, uint32_t m)
{
	uint64_t sum = 0;
	if (m <= 16)
		return extreme_sum(x, n, m, true);
	if (n - m <= 16) {
		for (uint32_t i = 0; i < n; i++)
			sum += x[i];
		return n == m ? sum : sum - extreme_sum(x, n, n - m, false);
	}
	select_scores(x, n, m);
	for (uint32_t i = 0; i < m; i++)
		sum += x[i];
	return sum;
}

/* Free RUs of [b0, b_end) (bits of one machine) in `bits`, by popcount. */
static inline uint32_t count_bits(const uint64_t *bits, uint32_t b0, uint32_t b_end)
{
	uint32_t n = 0;
	for (uint32_t b = b0; b < b_end; b = (b / 64 + 1) * 64) {
		uint64_t w = bits[b / 64] & (~UINT64_C(0) << (b % 64));
		if (b_end < (b / 64 + 1) * 64)
			w &= (UINT64_C(1) << (b_end % 64)) - 1;
		n += (uint32_t)__builtin_popcountll(w);
	}
	return n;
}

/* Free RUs of [lo, hi) (inside one machine) in `bits`. */
static uint32_t count_free(const rusk_cluster *c, const uint64_t *bits, uint32_t lo, uint32_t hi)
{
	const rusk_machine *mm = &c->machines[c->ru_machine[lo]];
	uint32_t b0 = rusk_ru_bit(c, lo, mm);
	return count_bits(bits, b0, b0 + (hi - lo));
}

/* Free RUs of machine mm in `bits`. */
static inline uint32_t count_machine(const uint64_t *bits, const rusk_machine *mm)
{
	return count_bits(bits, mm->first_bit, mm->first_bit + mm->n_rus);
}

/*
 * The slot-score model's value of a machine [lo, hi) for an m-RU task: the mean score of
 * its best m free RUs in the view, by selection over the scores (O(free RUs)) rather than
 * an ordered top-m list; -inf when fewer than m are free. *n_free: its free RUs in the
 * view. From the static top sums (cluster.mtop): O(1) when every RU is free, and, when even
 * its m best RUs of all would score below `floor`, -inf at once (it cannot win a ranking
 * whose best is floor: the choice is the same, only cheaper).
 */
static uint64_t free_top_sum(const rusk_cluster *c, const uint64_t *bits, uint32_t lo, uint32_t hi,
                             uint32_t m, uint32_t n);

static double top_mean_scores(const rusk_cluster *c, const uint64_t *bits, uint32_t lo, uint32_t hi,
                              uint32_t m, uint32_t *n_free, double floor)
{
	const rusk_machine *mm = &c->machines[c->ru_machine[lo]];
	/* Free RUs first, by popcount: a machine without m of them costs no score load. */
	uint32_t n = count_free(c, bits, lo, hi);
	*n_free = n;
	if (n < m)
		return -INFINITY;
	if (lo == mm->first_ru && hi - lo == mm->n_rus) {
		if (n < mm->n_rus && floor == INFINITY)
			return -INFINITY; /* as below, without the load: every bound is below */
		double best = (double)c->mtop[lo + m - 1] / m / 1000.0;
		if (n == mm->n_rus || best < floor)
			return n == mm->n_rus ? best : -INFINITY;
	}
	return (double)free_top_sum(c, bits, lo, hi, m, n) / m / 1000.0;
}

/* The sum of the m best slot scores of the n (>= m) free RUs of [lo, hi) (inside machine
 * mm) in `bits`: top_mean_scores's sum. */
static uint64_t free_top_sum(const rusk_cluster *c, const uint64_t *bits, uint32_t lo, uint32_t hi,
                             uint32_t m, uint32_t n)
{
	uint16_t sc[RUSK_MAX_RUS_PER_MACHINE];
	const rusk_machine *mm = &c->machines[c->ru_machine[lo]];
	uint32_t b0 = rusk_ru_bit(c, lo, mm), b_end = b0 + (hi - lo);
	if (lo == mm->first_ru && hi - lo == mm->n_rus) {
		/* The machine's RUs from the best score down (cluster.mord): the first m free
		 * ones are its best m free, about m * n_rus / n RUs looked at. Worth it unless
		 * few are free (then the n free scores are fewer to read). Same sum. */
		if ((uint64_t)m * mm->n_rus < 2 * (uint64_t)n * n) {
			/* The k-th best score is top[k] - top[k - 1]: read in order beside
			 * ord, not gathered through it. */
			const uint16_t *ord = c->mord + lo;
			const uint32_t *top = c->mtop + lo;
			uint64_t sum = 0;
			for (uint32_t k = 0, got = 0, prev = 0; got < m; k++) {
				uint32_t b = b0 + ord[k];
				uint32_t f = (uint32_t)(bits[b / 64] >> (b % 64)) & 1u;
				sum += (top[k] - prev) & (0u - f); /* no branch on f */
				prev = top[k];
				got += f;
			}
			return sum;
		}
	}
	n = 0;
	for (uint32_t b = b0; b < b_end; b = (b / 64 + 1) * 64) {
		uint64_t w = bits[b / 64] & (~UINT64_C(0) << (b % 64));
		if (b_end < (b / 64 + 1) * 64)
			w &= (UINT64_C(1) << (b_end % 64)) - 1;
		for (; w != 0; w &= w - 1)
			sc[n++] =
			        c->ru_score[lo + (b / 64 * 64 + (uint32_t)__builtin_ctzll(w) - b0)];
	}
	return top_sum(sc, n, m);
}

/* Machine mm's bits in `bits` (mm->n_rus <= RUSK_VVAL_RUS), bit k of x[k / 64] for its k-th
 * RU; only the words that hold them are read. */
static inline void machine_bits(const uint64_t *bits, const rusk_machine *mm, uint64_t x[2])
{
	uint32_t sh = mm->first_bit % 64, n = mm->n_rus, nw = (sh + n + 63) / 64;
	const uint64_t *w = bits + mm->first_bit / 64;
	uint64_t w0 = w[0], w1 = nw > 1 ? w[1] : 0, w2 = nw > 2 ? w[2] : 0;
	if (sh != 0) {
		w0 = w0 >> sh | w1 << (64 - sh);
		w1 = w1 >> sh | w2 << (64 - sh);
	}
	x[0] = n >= 64 ? w0 : w0 & ((UINT64_C(1) << n) - 1);
	x[1] = n >= 128 ? w1 : n <= 64 ? 0 : w1 & ((UINT64_C(1) << (n - 64)) - 1);
}

/* The agent's value cache, allocated at its first use (one entry a machine up to
 * RUSK_VVAL_MAX, zeroed: empty); NULL when that failed. */
static rusk_vval *vval_table(rusk_agent *a)
{
	if (a->vval == NULL && !a->vval_tried) {
		a->vval_tried = true;
		uint32_t n = 1;
		while (n < a->c->n_machines && n < RUSK_VVAL_MAX)
			n *= 2;
		a->vval = aligned_alloc(RUSK_CACHELINE, sizeof *a->vval * n);
		if (a->vval != NULL) {
			memset(a->vval, 0, sizeof *a->vval * n);
			a->vval_mask = n - 1;
		}
	}
	return a->vval;
}

/* Where machine mi's entry of the value cache lies (to fetch it early); NULL without a
 * cache. */
static inline const rusk_vval *vval_slot(const rusk_agent *a, uint32_t mi)
{
	return a->vval != NULL ? &a->vval[mi & a->vval_mask] : NULL;
}

/* Entry e for machine mm with free RUs x (its bits in the view): its best
 * min(RUSK_VVAL_SCORES, free) free scores, best first. Few free: the free ones' scores,
 * sorted by insertion; else a walk in static score order (cluster.mord, the k-th best
 * score mtop[k] - mtop[k - 1], as top_mean_scores reads them) to the first ones free. */
static void vval_fill(const rusk_cluster *c, const rusk_machine *mm, const uint64_t x[2],
                      rusk_vval *e)
{
	uint32_t n_free = (uint32_t)(__builtin_popcountll(x[0]) + __builtin_popcountll(x[1]));
	uint32_t got = 0;
	if (n_free <= RUSK_VVAL_SCORES) {
		for (uint32_t k = 0; k < 2; k++)
			for (uint64_t w = x[k]; w != 0; w &= w - 1) {
				uint32_t off = k * 64 + (uint32_t)__builtin_ctzll(w), j = got++;
				uint16_t sc = c->ru_score[mm->first_ru + off];
				for (; j > 0 && e->sc[j - 1] < sc; j--)
					e->sc[j] = e->sc[j - 1];
				e->sc[j] = sc;
			}
	} else {
		const uint16_t *ord = c->mord + mm->first_ru;
		const uint32_t *top = c->mtop + mm->first_ru;
		/* without a branch on the bits: each score is written, and kept (got moves
		 * on) when its RU is free; got < RUSK_VVAL_SCORES at every write */
		for (uint32_t k = 0, prev = 0; got < RUSK_VVAL_SCORES; k++) {
			uint32_t o = ord[k], t = top[k];
			e->sc[got] = (uint16_t)(t - prev);
			got += (uint32_t)(x[o / 64] >> (o % 64)) & 1u;
			prev = t;
		}
	}
	e->n = (uint16_t)got;
	e->bits[0] = x[0];
	e->bits[1] = x[1];
}

/*
 * The sum of machine mi's best m free slot scores in the agent's view (what
 * top_mean_scores sums), from the agent's value cache: true and *sum when the machine's
 * entry holds its bits as they are in the view now, or (fill) after the entry was made
 * anew; false when the cache cannot answer (m above RUSK_VVAL_SCORES, a machine of more
 * than RUSK_VVAL_RUS RUs, no cache, or a miss without fill). Call it only for a machine
 * with at least m free RUs in the view. The same sum as top_mean_scores, so the same
 * choice: an entry is only used while the bits it was read from are the view's.
 */
static bool vval_sum(rusk_agent *a, uint32_t mi, uint32_t m, bool fill, uint64_t *sum)
{
	const rusk_cluster *c = a->c;
	const rusk_machine *mm = &c->machines[mi];
	if (m > RUSK_VVAL_SCORES || mm->n_rus > RUSK_VVAL_RUS || a->vval_off)
		return false;
	rusk_vval *tab = vval_table(a);
	if (tab == NULL)
		return false;
	uint64_t x[2];
	machine_bits(rusk_view_bits_(a->v), mm, x);
	rusk_vval *e = &tab[mi & a->vval_mask];
	if (e->tag == mi + 1 && e->bits[0] == x[0] && e->bits[1] == x[1] && e->n >= m) {
		a->vval_hits++;
	} else {
		if (!fill)
			return false;
		a->vval_misses++;
		e->tag = mi + 1;
		vval_fill(c, mm, x, e);
		if (e->n < m)
			return false; /* fewer than m free: not a candidate */
	}
	uint64_t s = 0;
	for (uint32_t k = 0; k < m; k++)
		s += e->sc[k];
	*sum = s;
	return true;
}

/* The per-GPU milli of a vector demand: its share, 1000 for whole GPUs, 0 without GPUs. */
static inline uint32_t per_gpu(const rusk_vec_demand *v)
{
	return v->gpus == 0 ? 0 : v->gpus == 1 ? v->gpu_milli : RUSK_GPU_MILLI;
}

/* Whether a task of (rus, v) needs at least what (frus, f) needs in every dimension: at
 * least as many cores, memory, GPUs and milli per GPU, of no model f does not accept. */
static bool vec_dominates(uint32_t rus, const rusk_vec_demand *v, uint32_t frus,
                          const rusk_vec_demand *f)
{
	if (rus < frus || v->mem_mib < f->mem_mib || v->gpus < f->gpus || per_gpu(v) < per_gpu(f))
		return false;
	if (f->gpus == 0 || f->gpu_models == 0)
		return true;
	return v->gpu_models != 0 && (v->gpu_models & ~f->gpu_models) == 0;
}

/* Machine m's shares in the local array (relaxed: a hint, compared, never trusted). */
static void mshort_words(const rusk_cluster *c, uint32_t m, uint64_t w[3])
{
	const rusk_mvec *v = &c->mvec[m];
	w[0] = rusk_load64(&v->mem_free, RUSK_RELAXED);
	w[1] = rusk_load64(&v->gpu_used[0], RUSK_RELAXED);
	w[2] = rusk_load64(&v->gpu_used[1], RUSK_RELAXED);
}

void rusk_mshort_note_(rusk_agent *a, uint32_t m, const rusk_task *t)
{
	if (a->c->mvec == NULL || m >= a->c->n_machines)
		return;
	uint32_t i = a->n_mshort < RUSK_MSHORT ? a->n_mshort++ : (uint32_t)(t->id % RUSK_MSHORT);
	uint64_t w[3];
	mshort_words(a->c, m, w);
	a->mshort[i].m = m;
	a->mshort[i].rus = t->rus;
	a->mshort[i].vec = t->vec;
	a->mshort[i].gen = a->v->st.syncs;
	a->mshort[i].mem_free = w[0];
	a->mshort[i].gpu0 = w[1];
	a->mshort[i].gpu1 = w[2];
}

void rusk_mshort_apply_(rusk_agent *a, const rusk_task *t)
{
	uint64_t gen = a->v->st.syncs;
	for (uint32_t i = 0; i < a->n_mshort;) {
		uint64_t w[3];
		mshort_words(a->c, a->mshort[i].m, w);
		if (a->mshort[i].gen != gen || w[0] != a->mshort[i].mem_free ||
		    w[1] != a->mshort[i].gpu0 || w[2] != a->mshort[i].gpu1) {
			a->mshort[i] = a->mshort[--a->n_mshort]; /* stale: tried again */
			continue;
		}
		if (a->n_vskip < sizeof a->vskip / sizeof a->vskip[0] &&
		    vec_dominates(t->rus, &t->vec, a->mshort[i].rus, &a->mshort[i].vec) &&
		    !machine_listed(a->vskip, a->n_vskip, a->mshort[i].m))
			a->vskip[a->n_vskip++] = a->mshort[i].m;
		i++;
	}
}

/* Whether the memo of failed demands applies to this decision: a plain vector task (no
 * preferred machines, nothing held, no machines skipped by this place() call). */
static inline bool vfail_applies(const rusk_agent *a, const rusk_dctx *d)
{
	return d->t->n_preferred == 0 && !d->anchored && !d->excl && a->n_vskip == 0;
}

/* Whether a demand that this one dominates found no machine on the current view. */
static bool vfail_known(rusk_agent *a, const rusk_dctx *d)
{
	uint64_t gen = a->v->st.syncs;
	if (a->vfail_gen != gen) {
		a->vfail_gen = gen;
		a->n_vfail = 0;
		return false;
	}
	for (uint32_t i = 0; i < a->n_vfail; i++)
		if (vec_dominates(d->t->rus, &d->t->vec, a->vfail_rus[i], &a->vfail[i]))
			return true;
	return false;
}

/* Records that the task found no machine (kept == 0): round robin over RUSK_VFAIL. */
static void vfail_note(rusk_agent *a, const rusk_dctx *d)
{
	if (!vfail_applies(a, d) || a->vfail_gen != a->v->st.syncs)
		return;
	uint32_t i = a->n_vfail < RUSK_VFAIL ? a->n_vfail++ : (uint32_t)(d->t->id % RUSK_VFAIL);
	a->vfail[i] = d->t->vec;
	a->vfail_rus[i] = d->t->rus;
}

/* The quality a placement reports for a machine judged whole: the packing value (in
 * [0, 1]), or for FGD the logistic of its value -Delta (0.5 when the placement leaves the
 * expected unusable GPU capacity as it was, towards 1 as it lowers it). */
static inline double whole_quality(const rusk_dctx *d, double v)
{
	return d->fgd ? 1.0 / (1.0 + exp(-v)) : v;
}

/*
 * A candidate machine for a vector task: false when it cannot hold the task now as far as
 * the view and its live capacities tell; else its value in *v (the mean value of its best
 * m free RUs, or the packing value) and its RU range. Its RUs are chosen only for the
 * winner (choose_vec), so a candidate costs a pass over its free bits. floor: the best
 * value so far; a slot-score value that cannot reach it may come back as -inf.
 */
static bool judge_machine(const rusk_agent *a, const rusk_dctx *d, uint32_t ru, rusk_cand *tmp,
                          double floor, double *v, uint32_t *lo, uint32_t *hi)
{
	const rusk_cluster *c = a->c;
	const rusk_task *t = d->t;
	uint32_t mi = c->ru_machine[ru], gid, n_free, k = 0;
	if (!rusk_vec_shape_fits_(c, mi, &t->vec) || !rusk_vec_free_fits_(c, mi, &t->vec))
		return false;
	rusk_group_range_(c, RUSK_PLACE_MACHINE, ru, &gid, lo, hi);
	if (!d->interf && t->n_preferred == 0) {
		*v = top_mean_scores(c, rusk_view_bits_(a->v), *lo, *hi, t->rus, &n_free,
		                     d->pack || d->fgd ? INFINITY : floor); /* n_free only */
		if (n_free < t->rus)
			return false;
	} else {
		n_free = rusk_scan_range_(c, d, rusk_view_bits_(a->v), false, *lo, *hi, t->rus, tmp,
		                          &k);
		if (k < t->rus)
			return false;
		*v = rusk_mean_q_(tmp, k);
	}
	if (d->pack)
		*v = rusk_vec_pack_value_(c, mi, n_free, t);
	else if (d->fgd)
		*v = rusk_vec_fgd_value_(c, mi, n_free, t, &a->mix);
	return true;
}

/* Draws of one partition that choose_vec makes before it asks vec_part_any whether the
 * rest can keep anything. */
#define VEC_PROBE 16

/*
 * Whether some machine of partition p passes judge_machine for vector task t: its shape,
 * not skipped in this place() call, its live memory and GPUs, t's RUs free in the view (the
 * same tests, cheapest first), over p's machines until one passes. choose_vec asks when
 * VEC_PROBE uniform draws of p kept none: if no machine passes, every further draw of p
 * would be rejected, so they are counted and their generator numbers consumed but not
 * drawn (a rejected draw changes nothing else). The reads are the relaxed guesses
 * judge_machine makes; single-threaded (rusk sim) they are the values the draws would
 * read, so the choice and the charged work are those of drawing.
 */
static bool vec_part_any(const rusk_agent *a, const rusk_dctx *d, uint32_t p)
{
	const rusk_cluster *c = a->c;
	const rusk_vec_demand *vd = &d->t->vec;
	const rusk_partition *pp = &c->parts[p];
	const uint64_t *bits = rusk_view_bits_(a->v);
	for (uint32_t mi = pp->first_machine; mi < pp->first_machine + pp->n_machines; mi++) {
		if (!rusk_vec_shape_fits_(c, mi, vd) || machine_listed(a->vskip, a->n_vskip, mi) ||
		    !rusk_vec_free_fits_(c, mi, vd))
			continue;
		if (count_machine(bits, &c->machines[mi]) >= d->t->rus)
			return true;
	}
	return false;
}

/* The model index is drawn from (pick_model) when at least one position in this many is
 * a free RU of the model; else the partition's free RUs are drawn and filtered by model. */
#define VEC_CHUNK_ACCEPT  8
/* Batches of positions pick_model tries per draw asked for: with one position in
 * VEC_CHUNK_ACCEPT kept, coming back short has probability below (7/8)^(64 * 8) = 1e-30. */
#define VEC_CHUNK_BATCHES 64

/*
 * n free RUs of vr's partition of one model (its chunks ch[0..n_ch), rusk_chunks_), each
 * uniform and independent among the RUs of that model free in the view, into out[0..n)
 * (room for n + RUSK_PICK_BATCH), each as its machine << 32 | its offset in the partition
 * (a chunk entry less its last offset, plus the slot's offset: one store a position). A
 * position is a slot of the 16 n_ch (chunk, offset) slots, by multiply-shift from 32
 * random bits (two a generator word, as rusk_vrange_reject_n_); kept when the offset is
 * within the chunk and the RU is free in the view. Each free RU of the model is exactly one
 * slot, so a kept position is uniform over them; surplus positions of the last batch are
 * dropped (the kept ones are i.i.d.). No branch on the data, the chunk's entry gives the
 * machine (no ru_machine load). Returns n, or fewer when VEC_CHUNK_BATCHES * n batches
 * kept fewer.
 */
#define VEC_PICK_POS(x)  ((uint32_t)(x))
#define VEC_PICK_MACH(x) ((uint32_t)((x) >> 32))
static RUSK_ALWAYS_INLINE uint32_t pick_model_(const uint64_t *w, const uint64_t *ch, uint32_t n_ch,
                                               bool full, rusk_rng *rng, uint64_t *out, uint32_t n)
{
	static const uint64_t none = 0; /* the word tested for a slot past its chunk */
	rusk_rng g = *rng;              /* in registers: the stores cannot alias it */
	const uint64_t slots = (uint64_t)n_ch * RUSK_CHUNK;
	const uint64_t keep = ~((uint64_t)(RUSK_CHUNK - 1) << 24); /* drops the last offset */
	uint32_t got = 0;
	for (uint32_t b = 0; b < VEC_CHUNK_BATCHES * n && got < n; b++)
		for (int j = 0; j < RUSK_PICK_BATCH; j += 2) {
			uint64_t u = rusk_rng_next(&g);
			uint32_t s0 = (uint32_t)(((u >> 32) * slots) >> 32);
			uint32_t s1 = (uint32_t)(((u & 0xffffffffu) * slots) >> 32);
			uint64_t e0 = ch[s0 / RUSK_CHUNK], e1 = ch[s1 / RUSK_CHUNK];
			uint64_t x0 = (e0 & keep) + s0 % RUSK_CHUNK;
			uint64_t x1 = (e1 & keep) + s1 % RUSK_CHUNK;
			uint32_t p0 = VEC_PICK_POS(x0), p1 = VEC_PICK_POS(x1);
			const uint64_t *w0 = &w[p0 / 64], *w1 = &w[p1 / 64];
			if (!full) { /* a cmov each: a slot past its chunk tests a zero word */
				w0 = s0 % RUSK_CHUNK <= RUSK_CHUNK_LAST(e0) ? w0 : &none;
				w1 = s1 % RUSK_CHUNK <= RUSK_CHUNK_LAST(e1) ? w1 : &none;
			}
			out[got] = x0;
			got = rusk_add_bit_(got, *w0, p0);
			out[got] = x1;
			got = rusk_add_bit_(got, *w1, p1);
		}
	*rng = g;
	return got < n ? got : n;
}

/* pick_model_, its loop compiled apart for chunks all full (no offset tested). Out of line,
 * as rusk_vrange_reject_n_: the loop then keeps the generator and the count in registers. */
static RUSK_NOINLINE uint32_t pick_model(const uint64_t *w, const uint64_t *ch, uint32_t n_ch,
                                         bool full, rusk_rng *rng, uint64_t *out, uint32_t n)
{
	return full ? pick_model_(w, ch, n_ch, true, rng, out, n)
	            : pick_model_(w, ch, n_ch, false, rng, out, n);
}

/*
 * choose_vec1's candidates cand[0..f) (machine << 32 | offset from first) judged in order
 * while *kept < R: a candidate is kept when its machine could hold the task now, and the
 * best kept so far is *bc (own values: Q, preferred machines) or bc->ru with its slot
 * score plus one in *best_s. indexed: drawn from the model's index (no static test: a
 * machine of the model has the memory and GPUs any fit now needs). plain: no skip list and
 * slot scores, tests the caller made once. Inline, each case its own loop.
 */
static RUSK_ALWAYS_INLINE void judge_cands(const rusk_agent *a, const rusk_dctx *d,
                                           const rusk_vfit *vf, const uint64_t *cand, uint32_t f,
                                           uint32_t first, uint32_t R, bool indexed, bool plain,
                                           uint32_t *kept, rusk_cand *bc, uint32_t *best_s)
{
	const rusk_cluster *c = a->c;
	const bool own_value = !plain && (d->interf || d->t->n_preferred);
	const uint32_t n_vskip = plain ? 0 : a->n_vskip;
	uint32_t k = *kept, bs = *best_s, bru = bc->ru;
	for (uint32_t j = 0; j < f && k < R; j++) {
		uint32_t ru = first + VEC_PICK_POS(cand[j]);
		uint32_t mi = VEC_PICK_MACH(cand[j]);
		if ((!indexed && !rusk_vec_shape_fits_(c, mi, &d->t->vec)) ||
		    (n_vskip != 0 && machine_listed(a->vskip, n_vskip, mi)) ||
		    !rusk_vec_fits_now_(c, mi, vf))
			continue;
		/* Slot scores compare as integers (choose_latency1's order); Q and preferred
		 * machines go through value(). Keys only on a tie. */
		if (own_value) {
			rusk_cand x = {ru, value(c, d, ru), 0};
			if (k == 0 || x.q > bc->q ||
			    (x.q == bc->q && ru != bc->ru && tie_key(ru) > tie_key(bc->ru))) {
				x.key = tie_key(ru);
				*bc = x;
			}
		} else {
			/* The score plus one, so that the first candidate beats bs = 0; a
			 * higher one replaces the best by selects, not a branch (a coin the
			 * predictor cannot learn, as in choose_latency1); keys decide a tie. */
			uint32_t sc = c->ru_score[ru] + 1u;
			if (RUSK_UNLIKELY(sc == bs)) {
				if (ru != bru && tie_key(ru) > tie_key(bru))
					bru = ru;
			} else {
				bool up = sc > bs;
				bs = up ? sc : bs;
				bru = up ? ru : bru;
			}
		}
		k++;
	}
	*kept = k;
	if (!own_value) {
		*best_s = bs;
		bc->ru = bru;
	}
}

/* judge_cands for a plain decision, out of line as pick_model (its own registers: inlined
 * in choose_vec, the loop kept its count and best on the stack), a loop for each of
 * indexed and not. */
static RUSK_NOINLINE void judge_plain(const rusk_agent *a, const rusk_dctx *d, const rusk_vfit *vf,
                                      const uint64_t *cand, uint32_t f, uint32_t first, uint32_t R,
                                      bool indexed, uint32_t *kept, rusk_cand *bc, uint32_t *best_s)
{
	if (indexed)
		judge_cands(a, d, vf, cand, f, first, R, true, true, kept, bc, best_s);
	else
		judge_cands(a, d, vf, cand, f, first, R, false, true, kept, bc, best_s);
}

/*
 * choose_vec for one RU judged by its own value (not packing): the RUs drawn in batches, a
 * candidate kept when its machine could hold the task now, as choose_latency1 keeps the
 * best drawn RU. An infeasible draw costs one load of the machine's packed static shape
 * (cluster.mshape, cached) unless its model, memory and GPU count fit; then the live
 * capacities are read.
 *
 * A task of one GPU model draws from that model's chunks (pick_model) where they are dense
 * enough in free RUs: no draw is spent on a machine of another model, half of them when
 * half the machines carry it (17.4 draws a decision at R = 8 before, 8 after). The kept
 * candidates are the same in distribution: the old draws, uniform over the partition's free
 * RUs and filtered by model, were uniform over the model's free RUs too. The cap of 4R + 16
 * draws per partition counted draws of every model; here it counts the model's, scaled by
 * the model's share of the partition's free RUs in the view (plat_free): the number of the
 * model's draws the old cap allowed, in expectation. Other partitions, and tasks of several
 * models or of any, draw as before.
 */
static int choose_vec1(rusk_agent *a, const rusk_dctx *d, uint32_t R, const uint32_t *order,
                       uint32_t n_parts, uint32_t *rus, rusk_placement *pl)
{
	const rusk_cluster *c = a->c;
	const rusk_vec_demand *vd = &d->t->vec;
	/* The accepted models' RU bitmaps (cluster.plat_bits): a draw of another model is
	 * ruled out by one bit, before any per-machine load. */
	const uint64_t *acc[RUSK_MAX_PLATFORMS];
	uint32_t n_acc = 0, model = 0;
	for (uint32_t k = 0; vd->gpus > 0 && vd->gpu_models != 0 && k < c->n_platforms; k++)
		if ((vd->gpu_models >> k) & 1u) {
			acc[n_acc++] = c->plat_bits + (size_t)k * c->n_words;
			model = k;
		}
	const rusk_vfit vf = rusk_vfit_make_(vd);
	uint32_t buf[16 + RUSK_PICK_BATCH], kept = 0, drawn = 0;
	uint64_t cand[16 + RUSK_PICK_BATCH]; /* machine << 32 | offset in the partition */
	rusk_cand bc = {0, -INFINITY, 0};
	const bool own_value = d->interf || d->t->n_preferred;
	const bool plain = !own_value && a->n_vskip == 0; /* judge_cands */
	uint32_t best_s = 0; /* the best slot score plus one, when !own_value; 0: none yet */
	for (uint32_t i = 0; i < n_parts && kept < R; i++) {
		uint32_t p = order[i], free_p = rusk_view_free_(a->v, p);
		if (free_p == 0)
			continue;
		const rusk_vrange vr = rusk_view_range_(a->v, p);
		uint32_t bit0 = c->parts[p].first_bit - c->parts[p].first_ru, lim = 4 * R + 16;
		uint32_t n_ch = 0;
		bool full = false;
		const uint64_t *ch = n_acc == 1 ? rusk_chunks_(c, p, model, &n_ch, &full) : NULL;
		uint32_t free_k =
		        ch != NULL ? a->v->plat_free[(size_t)p * c->n_platforms + model] : 0;
		bool indexed = free_k > 0 &&
		               (uint64_t)free_k * VEC_CHUNK_ACCEPT >= (uint64_t)n_ch * RUSK_CHUNK;
		if (ch != NULL && free_k == 0)
			continue; /* no free RU of the model: every draw would be rejected */
		if (indexed)      /* the model's share of the old cap, rounded up */
			lim = (uint32_t)(((uint64_t)lim * free_k + free_p - 1) / free_p);
		for (uint32_t k = 0; k < lim && kept < R;) {
			/* What is still wanted, twice that once draws have missed: few wasted
			 * draws when most machines fit, few batches when half do not. */
			uint32_t want = k == 0 ? R - kept : 2 * (R - kept);
			if (want > 16)
				want = 16;
			uint32_t n, f;
			if (indexed) {
				f = n = pick_model(vr.w, ch, n_ch, full, &a->rng, cand, want);
			} else {
				n = rusk_view_pick_n_(&vr, &a->rng, buf, want);
				/* Draws of a model the task does not accept go first, by one bit
				 * each; then the others' machines and state are fetched before any
				 * is used: the loads overlap instead of forming one chain of misses
				 * per draw. */
				f = n;
				if (n_acc == 1) { /* one model: one bit, no inner loop */
					f = 0;
					for (uint32_t j = 0; j < n; j++) {
						uint32_t b = bit0 + buf[j];
						buf[f] = buf[j];
						f += (uint32_t)(acc[0][b / 64] >> (b % 64)) & 1u;
					}
				} else if (n_acc > 1) {
					f = 0;
					for (uint32_t j = 0; j < n; j++) {
						uint32_t b = bit0 + buf[j];
						bool ok = false;
						for (uint32_t q = 0; q < n_acc && !ok; q++)
							ok = (acc[q][b / 64] >> (b % 64)) & 1u;
						buf[f] = buf[j];
						f += ok;
					}
				}
				for (uint32_t j = 0; j < f; j++)
					cand[j] = (uint64_t)c->ru_machine[buf[j]] << 32 |
					          (buf[j] - vr.first_ru);
			}
			if (n == 0)
				break;
			drawn += n;
			k += n;
			for (uint32_t j = 0; j < f; j++) {
				uint32_t mj = VEC_PICK_MACH(cand[j]);
				if (!indexed)
					__builtin_prefetch(&c->mshape[mj]);
				__builtin_prefetch(&c->mvec[mj]);
				__builtin_prefetch(
				        &c->ru_score[vr.first_ru + VEC_PICK_POS(cand[j])]);
			}
			/* One copy of the loop for each case of a plain decision (no skip
			 * list, slot scores), one for the rest: its tests are then not made
			 * for every candidate. */
			if (plain)
				judge_plain(a, d, &vf, cand, f, vr.first_ru, R, indexed, &kept, &bc,
				            &best_s);
			else
				judge_cands(a, d, &vf, cand, f, vr.first_ru, R, indexed, false,
				            &kept, &bc, &best_s);
		}
	}
	pl->samples = drawn;
	if (kept == 0) {
		vfail_note(a, d);
		return RUSK_EAGAIN;
	}
	if (!own_value)
		bc = (rusk_cand){bc.ru, best_s - 1, tie_key(bc.ru)};
	report_choice(a, d, &bc, 1, rus, pl);
	return 1;
}

/*
 * A vector task's preferred machines under the interference model, read live as
 * add_preferred reads an RU task's: the best that can hold it now (shape, free memory and
 * GPU shares, m free RUs in the master array) by the mean Q of its best m free RUs (or the
 * packing value), then tie key, gives its best m RUs; 0 when none can, and the decision
 * samples as usual. Returns m or 0.
 */
static int choose_vec_preferred(rusk_agent *a, const rusk_dctx *d, uint32_t *rus,
                                rusk_placement *pl)
{
	const rusk_cluster *c = a->c;
	const rusk_task *t = d->t;
	uint32_t m = t->rus, got = 0;
	rusk_cand *best = a->group, *tmp = a->group + m;
	double best_v = -INFINITY;
	uint64_t best_key = 0;
	for (uint32_t i = 0; i < t->n_preferred; i++) {
		uint32_t mi = t->preferred[i];
		if (mi >= c->n_machines || machine_listed(a->vskip, a->n_vskip, mi) ||
		    !rusk_vec_shape_fits_(c, mi, &t->vec) || !rusk_vec_free_fits_(c, mi, &t->vec))
			continue;
		const rusk_machine *pm = &c->machines[mi];
		uint32_t k = 0, lo = pm->first_ru, hi = lo + pm->n_rus;
		uint32_t n_free = rusk_scan_range_(c, d, c->free_bits, true, lo, hi, m, tmp, &k);
		if (k < m)
			continue;
		double v = d->pack  ? rusk_vec_pack_value_(c, mi, n_free, t)
		           : d->fgd ? rusk_vec_fgd_value_(c, mi, n_free, t, &a->mix)
		                    : rusk_mean_q_(tmp, k);
		uint64_t key = tie_key(lo);
		if (v > best_v || (v == best_v && key > best_key)) {
			best_v = v;
			best_key = key;
			memcpy(best, tmp, sizeof *best * m);
			got = m;
		}
	}
	if (got == 0)
		return 0;
	pl->samples = 0;
	report_choice(a, d, best, m, rus, pl);
	if (d->pack || d->fgd)
		pl->quality = whole_quality(d, best_v);
	return (int)m;
}

/* A partly free candidate of choose_vec, valued lazily (lazy_scores): its machine range's
 * first RU, tie key, and the static top sum of its best m RUs (cluster.mtop), which bounds
 * the sum of its best m free ones. */
typedef struct lazy_cand {
	uint64_t key;
	uint32_t lo, top;
} lazy_cand;

/*
 * choose_vec's partly free candidates x[0..n) (n <= R): by bound then tie key, highest
 * first, each valued exactly only while it could still beat the best (value, then tie key):
 * its bound above the best value, or equal with a higher key (its value is at most its
 * bound). A candidate whose value reaches its bound then ends the search. Same choice as
 * valuing all of them.
 */
static void lazy_scores(rusk_agent *a, uint32_t m, lazy_cand *x, uint32_t n, double *best_v,
                        uint64_t *best_key, uint32_t *best_lo, uint32_t *best_hi)
{
	const rusk_cluster *c = a->c;
	for (uint32_t i = 1; i < n; i++) { /* insertion sort, decreasing */
		lazy_cand e = x[i];
		uint32_t j = i;
		for (; j > 0 &&
		       (x[j - 1].top < e.top || (x[j - 1].top == e.top && x[j - 1].key < e.key));
		     j--)
			x[j] = x[j - 1];
		x[j] = e;
	}
	for (uint32_t i = 0; i < n; i++) {
		double bound = (double)x[i].top; /* values as sums (vec_best) */
		if (bound < *best_v)
			break;
		if (bound == *best_v && x[i].key <= *best_key)
			continue;
		uint32_t mi = c->ru_machine[x[i].lo], hi = x[i].lo + c->machines[mi].n_rus;
		const uint64_t *bits = rusk_view_bits_(a->v);
		uint64_t sum;
		if (!vval_sum(a, mi, m, true, &sum))
			sum = free_top_sum(c, bits, x[i].lo, hi, m,
			                   count_free(c, bits, x[i].lo, hi));
		double v = (double)sum;
		if (v > *best_v || (v == *best_v && x[i].key > *best_key)) {
			*best_v = v;
			*best_key = x[i].key;
			*best_lo = x[i].lo;
			*best_hi = hi;
		}
	}
}

/* choose_vec's best machine so far: value, tie key, RU range; with lazy slot scores, the
 * partly free machines kept whose value the agent's value cache does not hold, valued after
 * the draws (lazy_scores). With lazy slot scores a value is the sum of the machine's best m
 * free scores rather than their mean (top_mean_scores): exact integers below 2^53, in the
 * same order (the mean is sum / m / 1000 with the decision's m, and distinct sums under
 * 2^32 keep distinct, ordered means), ties included, without a division. */
typedef struct vec_best {
	rusk_agent *a;
	double v;
	uint64_t key;
	uint32_t lo, hi;
	bool lazy;
	const uint32_t *mtop; /* cluster.mtop */
	uint32_t m;
	lazy_cand *part;
	uint32_t n_part;
} vec_best;

/* A kept machine mi, [lo, hi), of value v (judge_machine) into b. With lazy slot scores
 * a wholly free one is valued by its static top sum, and a partly free one (-inf) now when
 * the value cache holds it, else later: either way the choice is the best by value and tie
 * key. */
static inline void vec_best_add(vec_best *b, uint32_t mi, double v, uint32_t lo, uint32_t hi)
{
	if (b->lazy) {
		uint64_t sum;
		if (v != -INFINITY) {
			sum = b->mtop[lo + b->m - 1]; /* wholly free: v is its mean */
		} else if (!vval_sum(b->a, mi, b->m, false, &sum)) {
			b->part[b->n_part++] = (lazy_cand){tie_key(lo), lo, b->mtop[lo + b->m - 1]};
			return;
		}
		v = (double)sum;
	}
	uint64_t key = tie_key(lo);
	if (v > b->v || (v == b->v && key > b->key)) {
		b->v = v;
		b->key = key;
		b->lo = lo;
		b->hi = hi;
	}
}

#define VSET_KEPT (UINT32_C(1) << 31)

/* vhint's key of demand t in partition p (never 0: an empty entry). */
static inline uint64_t vhint_key(const rusk_task *t, uint32_t p)
{
	const rusk_vec_demand *v = &t->vec;
	uint64_t h = ((uint64_t)v->mem_mib << 32 | (uint64_t)v->gpus << 24 | v->gpu_milli) *
	             UINT64_C(0x9e3779b97f4a7c15);
	h ^= (v->gpu_models + ((uint64_t)t->rus << 40) + p) * UINT64_C(0xbf58476d1ce4e5b9);
	return (h ^ (h >> 31)) | 1;
}

static inline void vhint_put(rusk_agent *a, uint64_t key, uint32_t frac)
{
	a->vhint[(key >> 8) & (RUSK_VHINT - 1)].key = key;
	a->vhint[(key >> 8) & (RUSK_VHINT - 1)].frac = frac;
}

/*
 * vset_build's pass over machines [lo, end) for demand (m RUs, *vd, prepared as *vf), into
 * out: the static shape and the free RUs in the view (mfree: rusk_view_mfree_'s counts,
 * two bytes a machine; without them, each machine's bits counted) first, as one branch, then the
 * tests of rusk_vec_fits_now_ on the machine's live line, then the skip and kept lists. The live
 * line (64 bytes a machine) is what the pass waits on, so it is read last: before the view's
 * counts, a pass counted each machine's bits and read every line that fit in shape. Out of line,
 * with its arrays in locals: its own registers (inlined in choose_vec, its state lived on the
 * stack).
 */
static RUSK_NOINLINE uint32_t vset_scan(const rusk_cluster *c, const uint64_t *bits,
                                        const uint16_t *mfree, const rusk_vec_demand *vd,
                                        const rusk_vfit *vf, uint32_t m, const uint32_t *vskip,
                                        uint32_t n_vskip, const uint32_t *seen, uint32_t n_seen,
                                        uint32_t lo, uint32_t end, rusk_vset_ent *out, uint32_t *w)
{
	const uint64_t *shape = c->mshape;
	const rusk_mvec *mv = c->mvec;
	const uint32_t mem = vd->mem_mib, gpus = vd->gpus;
	/* rusk_vec_shape_fits_'s model test as a mask over platforms: all when any model */
	const uint64_t models = gpus == 0 || vd->gpu_models == 0 ? ~UINT64_C(0) : vd->gpu_models;
	const uint64_t fmem = vf->mem_mib, fsub = vf->sub;
	const uint32_t fgpus = vf->gpus;
	uint32_t n = 0, cum = 0;
	for (uint32_t mi = lo; mi < end; mi++) {
		uint64_t sh = shape[mi];
		uint32_t k = mfree != NULL ? mfree[mi] : count_machine(bits, &c->machines[mi]);
		bool ok = ((uint32_t)sh >= mem) & (((uint32_t)(sh >> 32) & 0xffu) >= gpus) &
		          (uint32_t)((models >> ((sh >> 40) & 63u)) & 1u) & (k >= m);
		if (!ok)
			continue;
		/* rusk_vec_fits_now_, relaxed reads (a guess that the commit checks) */
		const rusk_mvec *v = &mv[mi];
		uint64_t w0 = rusk_load64(&v->gpu_used[0], RUSK_RELAXED);
		uint64_t w1 = rusk_load64(&v->gpu_used[1], RUSK_RELAXED);
		uint32_t fit = (uint32_t)__builtin_popcountll(~((w0 | RUSK_LANE_HIGH) - fsub) &
		                                              v->lanes[0]) +
		               (uint32_t)__builtin_popcountll(~((w1 | RUSK_LANE_HIGH) - fsub) &
		                                              v->lanes[1]);
		bool now = (rusk_load64(&v->mem_free, RUSK_RELAXED) >= fmem) & (fit >= fgpus);
		if (!now || (n_vskip != 0 && machine_listed(vskip, n_vskip, mi)) ||
		    (n_seen != 0 && machine_listed(seen, n_seen, mi)))
			continue;
		cum += k;
		out[n++] = (rusk_vset_ent){mi, cum};
	}
	*w = cum;
	return n;
}

/* The agent's listing cache, allocated at its first use (RUSK_VLIST entries, zeroed:
 * empty); NULL when that failed, or turned off (tests). */
static rusk_vlist *vlist_table(rusk_agent *a)
{
	if (a->vlist == NULL && !a->vlist_tried && !a->vlist_off) {
		a->vlist_tried = true;
		a->vlist = calloc(RUSK_VLIST, sizeof *a->vlist);
	}
	return a->vlist_off ? NULL : a->vlist;
}

/*
 * Listing entry e of partition p (its demand d->t's), made at generations e->cgen and
 * e->viewgen, brought to cg and vg when at most one machine's live vector words changed since
 * (the count in cg's bits from RUSK_VGEN_MACH_BITS up one more than e->cgen's, the
 * machine below) and
 * every change of the view's bits was on one machine (rusk_view_one_): those machines
 * passed again (vset_scan over each alone) and merged into the entry by machine, the
 * others' weights kept. False (the entry as it was) for more changes, or when the set
 * would outgrow the entry; a->vset is the scratch.
 */
static bool vlist_patch(rusk_agent *a, const rusk_dctx *d, const rusk_vfit *vf, uint32_t p,
                        rusk_vlist *e, uint64_t cg, uint64_t vg)
{
	const rusk_cluster *c = a->c;
	const rusk_partition *pp = &c->parts[p];
	uint32_t ch[2], n_ch = 0, one;
	if (e->cgen != cg) { /* one change more (the 40-bit count wraps), on machine ch[0] */
		if (cg >> RUSK_VGEN_MACH_BITS !=
		    (((e->cgen >> RUSK_VGEN_MACH_BITS) + 1) & (UINT64_MAX >> RUSK_VGEN_MACH_BITS)))
			return false;
		ch[n_ch++] = pp->first_machine + (uint32_t)(cg & RUSK_VGEN_MACH_MASK);
	}
	if (e->viewgen != vg) {
		if (!rusk_view_one_(a->v, p, e->viewgen, &one))
			return false;
		if (n_ch == 0 || ch[0] != one)
			ch[n_ch++] = one;
	}
	if (n_ch == 2 && ch[0] > ch[1]) {
		uint32_t t = ch[0];
		ch[0] = ch[1];
		ch[1] = t;
	}
	const uint16_t *mfree = rusk_view_mfree_(a->v, p);
	rusk_vset_ent *out = a->vset; /* room for the partition's machines: e->n + 2 at most */
	uint32_t i = 0, j = 0, n = 0, cum = 0, prev = 0;
	while (i < e->n || j < n_ch) {
		if (j < n_ch && (i == e->n || ch[j] <= e->ents[i].mi)) {
			uint32_t mi = ch[j++], k;
			if (i < e->n && e->ents[i].mi == mi)
				prev = e->ents[i++].cum; /* passed again below, or dropped */
			if (vset_scan(c, rusk_view_bits_(a->v), mfree, &d->t->vec, vf, d->t->rus,
			              NULL, 0, NULL, 0, mi, mi + 1, out + n, &k) == 1) {
				cum += k;
				out[n++].cum = cum;
			}
		} else {
			cum += e->ents[i].cum - prev;
			prev = e->ents[i].cum;
			out[n++] = (rusk_vset_ent){e->ents[i++].mi, cum};
		}
	}
	if (n > RUSK_VLIST_MAX)
		return false;
	memcpy(e->ents, out, sizeof *out * n);
	e->n = n;
	e->w = cum;
	e->cgen = cg;
	e->viewgen = vg;
	a->vlist_patched++;
	return true;
}

/*
 * Partition p's exact set for vector task d->t into a->vset[0..n): its machines that pass
 * judge_machine's tests (static shape, not skipped, live memory and GPUs, m free RUs in the
 * view; cheapest first, as vec_part_any) and are not among the decision's kept
 * seen[0..n_seen), each weighted by its free RUs in the view (the RUs a draw of p lands on).
 * Returns n, *w the total weight; -1 out of memory.
 */
static int vset_build(rusk_agent *a, const rusk_dctx *d, const rusk_vfit *vf, uint32_t p,
                      const uint32_t *seen, uint32_t n_seen, uint32_t *w)
{
	const rusk_cluster *c = a->c;
	const rusk_partition *pp = &c->parts[p];
	if (a->vset_cap < pp->n_machines) {
		rusk_vset_ent *nv = realloc(a->vset, sizeof *nv * pp->n_machines);
		if (nv == NULL)
			return -1;
		a->vset = nv;
		a->vset_cap = pp->n_machines;
	}
	/* The listing cache: only for a pass that skips nothing (no kept or skipped machine) */
	const rusk_vec_demand *vd = &d->t->vec;
	rusk_vlist *e = n_seen == 0 && a->n_vskip == 0 ? vlist_table(a) : NULL;
	uint64_t key = 0, cg = 0, vg = 0;
	if (e != NULL) {
		key = vhint_key(d->t, p);
		e += (key >> 8) & (RUSK_VLIST - 1);
		cg = rusk_load64(&pp->vgen, RUSK_ACQUIRE); /* before the pass: a change during
		                                            * it makes the entry stale */
		vg = rusk_view_gen_(a->v, p);
		if (e->key == key && e->p == p && e->rus == d->t->rus &&
		    memcmp(&e->vec, vd, sizeof *vd) == 0 &&
		    ((e->cgen == cg && e->viewgen == vg) || vlist_patch(a, d, vf, p, e, cg, vg))) {
			memcpy(a->vset, e->ents, sizeof *e->ents * e->n);
			*w = e->w;
			a->vlist_hits++;
			return (int)e->n;
		}
	}
	/* NULL (no memory for the counts): the pass counts each machine's bits */
	const uint16_t *mfree = rusk_view_mfree_(a->v, p);
	uint32_t n = vset_scan(c, rusk_view_bits_(a->v), mfree, vd, vf, d->t->rus, a->vskip,
	                       a->n_vskip, seen, n_seen, pp->first_machine,
	                       pp->first_machine + pp->n_machines, a->vset, w);
	if (e != NULL && n <= RUSK_VLIST_MAX) {
		e->key = key;
		e->cgen = cg;
		e->viewgen = vg;
		e->vec = *vd;
		e->rus = d->t->rus;
		e->p = p;
		e->n = n;
		e->w = *w;
		memcpy(e->ents, a->vset, sizeof *e->ents * n);
	}
	return (int)n;
}

/* a->vset[0..n) less the kept entries, their running sums recomputed; returns the count. */
static uint32_t vset_compact(rusk_agent *a, uint32_t n)
{
	uint32_t k = 0, cum = 0, prev = 0;
	for (uint32_t i = 0; i < n; i++) {
		rusk_vset_ent e = a->vset[i];
		uint32_t w = e.cum - prev;
		prev = e.cum;
		if (e.mi & VSET_KEPT)
			continue;
		cum += w;
		a->vset[k++] = (rusk_vset_ent){e.mi, cum};
	}
	return k;
}

/*
 * The number of draws of p, with left of p's free_p free RUs (in the view) on machines the
 * decision would keep, up to and with the first that lands on one: 1 + a geometric count
 * of misses, each draw a hit with probability left / free_p. UINT32_MAX stands for "more
 * than cap". Where hits are likely (at least one draw in VEC_TRIAL_HIT) the draws are
 * tried one by one, two to a generator word, a hit when a 32-bit uniform scaled to free_p
 * (multiply-shift, as a draw picks its RU) falls below left: about free_p / left tries,
 * cheaper than the logarithms. Else the count is one uniform's inversion.
 */
#define VEC_TRIAL_HIT 32
static uint32_t draws_to_hit(rusk_rng *g, uint32_t left, uint32_t free_p, uint32_t cap)
{
	if (left >= free_p)
		return 1;
	if ((uint64_t)left * VEC_TRIAL_HIT >= free_p) {
		for (uint32_t n = 1; n <= cap; n += 2) {
			uint64_t r = rusk_rng_next(g);
			if ((((r >> 32) * (uint64_t)free_p) >> 32) < left)
				return n;
			if (n + 1 <= cap && ((((uint32_t)r) * (uint64_t)free_p) >> 32) < left)
				return n + 1;
		}
		return UINT32_MAX;
	}
	double u = 1.0 - rusk_rng_unit(g); /* (0, 1] */
	double misses = floor(log(u) / log1p(-(double)left / free_p));
	return misses >= (double)(UINT32_MAX - 1) ? UINT32_MAX : 1 + (uint32_t)misses;
}

/*
 * The rest of partition p's draws for choose_vec (at most `left` more; *kept < R so far),
 * made exactly rather than by rejection: the machines that a draw would keep are listed once
 * (vset_build), and each further kept machine comes after the number of draws rejection
 * would have spent to reach it (draws_to_hit) and by weight among those not yet kept, as a
 * uniform draw of p's free RUs that lands on a keepable machine picks it. So the kept
 * machines, their number within the cap and the draws counted (*drawn) are distributed as
 * the rejection loop's, from other generator numbers. seen[kept_p..*kept): the machines
 * already kept in p (only those can be in p). Returns RUSK_OK or RUSK_ENOMEM.
 */
static int choose_vec_exact(rusk_agent *a, const rusk_dctx *d, const rusk_vfit *vf, uint32_t p,
                            uint32_t R, uint32_t left, uint32_t *seen, uint32_t kept_p,
                            uint32_t *kept, uint32_t *drawn, rusk_cand *tmp, vec_best *b)
{
	uint32_t w_all, w_left;
	int n = vset_build(a, d, vf, p, seen + kept_p, *kept - kept_p, &w_all);
	if (n < 0)
		return RUSK_ENOMEM;
	a->vset_made++;
	uint32_t free_p = rusk_view_free_(a->v, p), n_set = (uint32_t)n;
	vhint_put(a, vhint_key(d->t, p),
	          free_p == 0 ? 0 : (uint32_t)((uint64_t)w_all * 65536 / free_p));
	w_left = w_all;
	/* Lazy slot scores: the machines kept here, seen[kept0..), are valued after the last
	 * pick, each with its weight (free RUs in the view) in lazy_w: the value cache's
	 * entry of each, fetched at its pick, has arrived by then, where valuing at the pick
	 * waited on it. The best by value then tie key does not depend on the order. */
	uint32_t kept0 = *kept, n_lazy = 0, *lazy_w = alloca(sizeof *lazy_w * (R - kept0));
	while (*kept < R) {
		uint32_t g = w_left == 0 ? UINT32_MAX : draws_to_hit(&a->rng, w_left, free_p, left);
		if (g > left) { /* the cap comes first: the rest miss */
			*drawn += left;
			break;
		}
		left -= g;
		*drawn += g;
		if (2 * (uint64_t)w_left < w_all) { /* mostly kept: drop them */
			n_set = vset_compact(a, n_set);
			w_all = w_left;
		}
		uint32_t i;
		do { /* by weight among those not kept: < 2 tries expected */
			/* the first entry whose running sum passes u, by halving without a
			 * branch on the data (a select a step) */
			uint32_t u = rusk_rng_below(&a->rng, w_all), base = 0, len = n_set;
			while (len > 1) {
				uint32_t half = len / 2;
				base = a->vset[base + half - 1].cum <= u ? base + half : base;
				len -= half;
			}
			i = base;
		} while (a->vset[i].mi & VSET_KEPT);
		uint32_t mi = a->vset[i].mi, w = a->vset[i].cum - (i ? a->vset[i - 1].cum : 0);
		a->vset[i].mi |= VSET_KEPT;
		w_left -= w;
		uint32_t lo, hi;
		double v;
		/* Its value; false only where another thread took memory or GPUs since the
		 * set was made: a rejected draw then. Lazy slot scores: judge_machine's
		 * answer from what the set knows (its shape and skip tests passed, and its
		 * free RUs in the view, w >= m, are as the set counted them: the view does
		 * not change during a decision), the live test made again and the value
		 * found after the last pick. */
		const rusk_machine *mm = &a->c->machines[mi];
		if (b->lazy) {
			__builtin_prefetch(vval_slot(a, mi));
			__builtin_prefetch(mm);
			if (!rusk_vec_fits_now_(a->c, mi, vf))
				continue;
			seen[(*kept)++] = mi;
			lazy_w[n_lazy++] = w;
			continue;
		}
		if (!judge_machine(a, d, mm->first_ru, tmp, b->v, &v, &lo, &hi))
			continue;
		seen[(*kept)++] = mi;
		vec_best_add(b, mi, v, lo, hi);
	}
	for (uint32_t j = 0; j < n_lazy; j++) { /* vec_best_add reads only -inf (partly free) */
		uint32_t mi = seen[kept0 + j];
		const rusk_machine *mm = &a->c->machines[mi];
		uint32_t lo = mm->first_ru;
		vec_best_add(b, mi, lazy_w[j] == mm->n_rus ? 0.0 : -INFINITY, lo, lo + mm->n_rus);
	}
	return RUSK_OK;
}

/* Whether choose_vec should list p's keepable machines (choose_vec_exact) after its probe
 * kept `got` of VEC_PROBE draws, with `left` draws left in the cap and `want` machines
 * wanted: when the probe missed at least half the time and a pass over p's machines (a few
 * ns each, in order) costs less than the draws still expected (tens of ns each, random). */
static bool vset_worth(const rusk_cluster *c, uint32_t p, uint32_t got, uint32_t left,
                       uint32_t want)
{
	if (2 * got >= VEC_PROBE || c->n_machines >= VSET_KEPT)
		return false;
	uint64_t expect = got == 0 ? left : (uint64_t)want * VEC_PROBE / got;
	if (expect > left)
		expect = left;
	return c->parts[p].n_machines <= 8 * expect;
}

/* Whether choose_vec should list p's keepable machines before any draw of p: the last look
 * at p for this demand found them a share frac (1/65536) of p's free RUs under one half,
 * and a pass over p's machines costs less than the draws then expected for `want` more
 * (vset_worth's rule, with the probe's share replaced by the hint's). */
static bool vhint_exact(const rusk_agent *a, uint64_t key, uint32_t p, uint32_t left, uint32_t want)
{
	uint32_t i = (key >> 8) & (RUSK_VHINT - 1);
	/* No free RU in the view: drawing fails at once and charges nothing (vec_draws); a
	 * listing would charge the whole cap, found none. */
	if (rusk_view_free_(a->v, p) == 0)
		return false;
	if (a->vec_exact_first)
		return a->c->n_machines < VSET_KEPT;
	if (a->vhint[i].key != key || 2 * (uint64_t)a->vhint[i].frac >= 65536 ||
	    a->c->n_machines >= VSET_KEPT)
		return false;
	uint32_t f = a->vhint[i].frac;
	uint64_t expect = f == 0 ? left : (uint64_t)want * 65536 / f;
	if (expect > left)
		expect = left;
	return a->c->parts[p].n_machines <= 8 * expect;
}

/*
 * The best m free RUs of machine [lo, hi) (all of it) in `bits` for a task valued by slot
 * scores alone (no Q, no preferred machines), best first by value then tie key, into
 * x[0..m): what rusk_scan_range_ gives, from a walk in static score order (cluster.mord)
 * to the m-th free RU and the free ones tied with its score, sorted by (value, key) (the
 * walk orders ties by offset). Only they can be among the best m, and value is the score
 * over 1000 as value() computes it. False when the range is not a whole machine, or more
 * than cap (room in x) RUs are collected: then the caller scans.
 */
static bool best_free_walk(const rusk_cluster *c, const uint64_t *bits, uint32_t lo, uint32_t hi,
                           uint32_t m, rusk_cand *x, uint32_t cap)
{
	const rusk_machine *mm = &c->machines[c->ru_machine[lo]];
	if (lo != mm->first_ru || hi - lo != mm->n_rus)
		return false;
	const uint16_t *ord = c->mord + lo;
	uint32_t n = 0, last = 0;
	for (uint32_t k = 0; k < mm->n_rus; k++) {
		uint32_t b = mm->first_bit + ord[k];
		if (!((bits[b / 64] >> (b % 64)) & 1))
			continue;
		uint32_t ru = lo + ord[k], sc = c->ru_score[ru];
		if (n >= m && sc != last)
			break;
		if (n == cap)
			return false;
		rusk_cand e = {ru, c->ru_score[ru] / 1000.0, tie_key(ru)};
		uint32_t j = n++;
		for (; j > 0 && better(&e, &x[j - 1]); j--)
			x[j] = x[j - 1];
		x[j] = e;
		last = sc;
	}
	return n >= m;
}

/* How many of choose_vec's uniform draws of a partition to make at once, at draw k of its
 * cap lim with `want` machines still wanted: what is wanted, at most to the end of the
 * probe (VEC_PROBE, where choose_vec may stop drawing) or of the cap, and at most
 * VEC_PROBE. */
static inline uint32_t vec_batch(uint32_t k, uint32_t lim, uint32_t want)
{
	uint32_t end = k < VEC_PROBE && VEC_PROBE < lim ? VEC_PROBE : lim;
	uint32_t n = want < end - k ? want : end - k;
	return n < VEC_PROBE ? n : VEC_PROBE;
}

/*
 * n (<= VEC_PROBE) uniform draws of partition p into ru[0..), one generator number each,
 * as draw() makes them one by one, and each RU's machine entry fetched: the loads of a batch
 * overlap instead of each waiting for the one before. Returns how many were made before a
 * draw failed (*fail: the partition has no free RU; that draw's number is spent, as
 * draw()'s is), else n. choose_vec gives back the numbers of draws it did not use.
 */
static uint32_t vec_draws(rusk_agent *a, uint32_t p, uint32_t n, uint32_t *ru, bool *fail)
{
	const rusk_vrange vr = rusk_view_range_(a->v, p);
	for (uint32_t j = 0; j < n; j++) {
		uint64_t rnd = rusk_rng_next(&a->rng); /* spent even when the draw fails */
		if (!rusk_view_pick_(&vr, rnd, &ru[j])) {
			*fail = true;
			return j;
		}
		__builtin_prefetch(&a->c->ru_machine[ru[j]]);
	}
	return n;
}

/*
 * A vector task (rusk/vec.h): candidate machines come from uniform draws of the view's free
 * RUs, partitions in the strategy's order, and a draw counts only when its machine could
 * hold the task now (shape, GPU model, free memory and GPU shares, m free RUs in the view).
 * That is rejection sampling: the R machines kept are drawn uniformly over the feasible
 * free RUs, so Tarcil's x^R guarantee holds over the feasible set, at the cost of more
 * draws where few machines fit (at most 4R + 16 per partition). Where VEC_PROBE draws of a
 * partition kept fewer than half, the rest of its draws are made exactly
 * (choose_vec_exact): same distribution, one pass over its machines instead of the misses.
 * The best machine by value (then tie key) gives its best m RUs. Returns m, RUSK_EAGAIN or
 * RUSK_ENOMEM.
 */
static int choose_vec(rusk_agent *a, const rusk_dctx *d, rusk_strategy s, uint32_t *rus,
                      rusk_placement *pl, uint64_t now)
{
	const rusk_task *t = d->t;
	uint32_t m = t->rus, R, n_parts;
	const uint32_t *order;
	int rc = decision_start(a, d, s, pl, now, &R, &n_parts, &order);
	if (rc != RUSK_OK)
		return rc;
	if (live_pref(d) && uses_preferred(a, d, s)) {
		if (!rusk_cands_reserve_(&a->group, &a->group_cap, 2 * (size_t)m))
			return RUSK_ENOMEM;
		if ((rc = choose_vec_preferred(a, d, rus, pl)) > 0)
			return rc;
	}
	if (vfail_applies(a, d) && vfail_known(a, d))
		return RUSK_EAGAIN; /* pl->samples 0: nothing drawn */
	if (m == 1 && !d->pack && !d->fgd && s != RUSK_STRATEGY_QUALITY)
		return choose_vec1(a, d, R, order, n_parts, rus, pl);
	if (!rusk_cands_reserve_(&a->group, &a->group_cap, 2 * (size_t)m))
		return RUSK_ENOMEM;
	rusk_cand *best = a->group, *tmp = a->group + m;
	uint32_t *seen = alloca(sizeof *seen * R), kept = 0, drawn = 0;
	/* Slot scores, lazily: a wholly free machine's value is its static top sum; a partly
	 * free one's is bounded by it and computed after the draws, best bound first, only
	 * while the bound can still reach the best (same choice, fewer selections). */
	bool lazy = !d->interf && t->n_preferred == 0 && !d->pack && !d->fgd;
	vec_best b = {.a = a,
	              .v = -INFINITY,
	              .lazy = lazy,
	              .mtop = a->c->mtop,
	              .m = m,
	              .part = lazy ? alloca(sizeof(lazy_cand) * R) : NULL};
	const rusk_vfit vf = rusk_vfit_make_(&t->vec);
	bool weighted = s == RUSK_STRATEGY_QUALITY;
	for (uint32_t i = 0; i < n_parts && kept < R; i++) {
		uint32_t p = order[i], kept_p = kept, lim = 4 * R + 16;
		uint64_t hkey = vhint_key(t, p);
		if (!weighted && !a->vec_draw_only && vhint_exact(a, hkey, p, lim, R - kept)) {
			a->vset_first++;
			rc = choose_vec_exact(a, d, &vf, p, R, lim, seen, kept_p, &kept, &drawn,
			                      tmp, &b);
			if (rc != RUSK_OK)
				return rc;
			continue;
		}
		for (uint32_t k = 0; k < lim && kept < R;) {
			if (k == VEC_PROBE && !weighted && !a->vec_draw_only)
				vhint_put(a, hkey, (uint32_t)((kept - kept_p) * 65536 / VEC_PROBE));
			if (k == VEC_PROBE && !weighted && !a->vec_draw_only &&
			    vset_worth(a->c, p, kept - kept_p, lim - k, R - kept)) {
				rc = choose_vec_exact(a, d, &vf, p, R, lim - k, seen, kept_p, &kept,
				                      &drawn, tmp, &b);
				if (rc != RUSK_OK)
					return rc;
				break;
			}
			if (k == VEC_PROBE && kept == kept_p && !weighted &&
			    !vec_part_any(a, d, p)) {
				/* Nothing in p passes: the rest of its draws, one generator number
				 * each (draw()), would all be rejected. */
				for (; k < lim; k++)
					(void)rusk_rng_next(&a->rng);
				drawn += lim - VEC_PROBE;
				break;
			}
			uint32_t rub[VEC_PROBE], mib[VEC_PROBE], nb = 1, used = 0;
			bool fail = false;
			rusk_rng g0 = a->rng;
			if (weighted) {
				if (!draw(a, d, p, weighted, &rub[0]))
					break;
			} else {
				/* A batch of draws, their machines loaded together (vec_batch) */
				nb = vec_batch(k, lim, R - kept);
				nb = vec_draws(a, p, nb, rub, &fail);
			}
			for (uint32_t j = 0; j < nb; j++) {
				mib[j] = a->c->ru_machine[rub[j]];
				__builtin_prefetch(&a->c->mvec[mib[j]]);
				if (lazy)
					__builtin_prefetch(vval_slot(a, mib[j]));
			}
			for (uint32_t j = 0; j < nb && kept < R; j++) {
				uint32_t ru = rub[j], mi = mib[j], lo, hi;
				double v;
				used++;
				k++;
				drawn++;
				/* The static shape first: it rejects most draws where few
				 * machines fit, before the lists are searched (the tests are
				 * pure: same result). */
				if (!rusk_vec_shape_fits_(a->c, mi, &t->vec) ||
				    machine_listed(a->vskip, a->n_vskip, mi) ||
				    /* a draw of p lands on p's machines: those kept in p */
				    machine_listed(seen + kept_p, kept - kept_p, mi) ||
				    !judge_machine(a, d, ru, tmp, lazy ? INFINITY : b.v, &v, &lo,
				                   &hi))
					continue;
				seen[kept++] = mi;
				vec_best_add(&b, mi, v, lo, hi);
			}
			if (used < nb) { /* the draws not used: their numbers back */
				a->rng = g0;
				for (uint32_t j = 0; j < used; j++)
					(void)rusk_rng_next(&a->rng);
				fail = false;
			}
			if (fail)
				break;
		}
	}
	pl->samples = drawn;
	if (kept == 0) {
		vfail_note(a, d);
		return RUSK_EAGAIN;
	}
	if (b.n_part > 0)
		lazy_scores(a, m, b.part, b.n_part, &b.v, &b.key, &b.lo, &b.hi);
	uint32_t got = 0; /* the winner's best m free RUs */
	if (!lazy || !best_free_walk(a->c, rusk_view_bits_(a->v), b.lo, b.hi, m, best, 2 * m))
		rusk_scan_range_(a->c, d, rusk_view_bits_(a->v), false, b.lo, b.hi, m, best, &got);
	else
		got = m;
	if (got < m)
		return RUSK_EAGAIN; /* unreachable: it was judged on the same view */
	report_choice(a, d, best, m, rus, pl);
	if (d->pack || d->fgd)
		pl->quality = whole_quality(d, b.v);
	return (int)m;
}

/* The strategy in force, then Latency-first's one-RU fast path or the general decision. */
static int choose_any(rusk_agent *a, const rusk_dctx *d, uint32_t *rus, rusk_placement *pl,
                      uint64_t now)
{
	rusk_strategy s = rusk_agent_current_strategy(a);
	pl->strategy = s;
	const rusk_task *t = d->t;
	if (RUSK_UNLIKELY(rusk_vec_any(&t->vec)))
		return choose_vec(a, d, s, rus, pl, now);
	if (s == RUSK_STRATEGY_LATENCY && t->rus == 1 && !d->interf && t->n_preferred == 0 &&
	    (t->placement == RUSK_PLACE_ANY || (t->placement == RUSK_PLACE_SPREAD && !d->excl))) {
		uint64_t view_free = rusk_view_total_free_(a->v);
		if (view_free == 0)
			return RUSK_EAGAIN;
		uint32_t R = sample_r(a, s, view_free);
		pl->sample_size = R;
		return choose_latency1(a, R, now, rus, pl);
	}
	return choose_view(a, d, s, rus, pl, now);
}

/* One decision (choose_any) and its work: pl->examined and pl->partitions. */
int rusk_choose_(rusk_agent *a, const rusk_dctx *d, uint32_t *rus, rusk_placement *pl, uint64_t now)
{
	a->wk_examined = a->wk_parts = 0;
	int rc = choose_any(a, d, rus, pl, now);
	pl->examined = pl->samples + a->wk_examined;
	pl->partitions = a->wk_parts;
	return rc;
}
