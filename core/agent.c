/* SPDX-License-Identifier: MIT */
/*
 * Scheduling agents: statistically sized sampling on a local view and the strategies that
 * decide where to sample (Tarcil §3.3; ParSync §5.2, §6.2-6.3), plus two baselines.
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
 *   random    Sparrow-style baseline: R = 2 per RU anywhere, no quality ranking
 *   central   Quasar-style baseline: one lock, a scan of every free RU of the master
 *             state, greedy best-m; exact, and orders of magnitude slower per decision
 *
 * The global-lock baseline samples as rusk does but commits under the cluster's one mutex.
 * For it and for central, rusk_agent_release takes the same mutex: a lock-based scheduler
 * guards every change of the shared state, releases included, so the two baselines are
 * measured as such designs would run, not as lock-free releases beside locked commits.
 *
 * Conflicts. A commit that loses marks the RU taken in the view (ParSync §5.2) and the
 * agent samples again, up to max_retries times; then it returns RUSK_EAGAIN holding nothing
 * and the caller re-queues the task with its original submission time. No task is lost.
 */
#include <alloca.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "atomic.h"
#include "internal.h"
#include "quality.h"
#include "rng.h"
#include "view.h"

typedef struct cand {
	uint32_t ru;
	double q;
	uint64_t key; /* tie-break */
} cand;

struct rusk_agent {
	rusk_cluster *c;
	rusk_view *v;
	rusk_agent_params p;
	rusk_rng rng;
	double ema_ns;
	bool ema_set;
	uint32_t *order; /* [P] */
	cand *cands;     /* candidate buffer */
	size_t cap;
	cand *group; /* best-in-range scratch */
	size_t group_cap;
	uint64_t *seen; /* a bit per RU, all clear between decisions (dedup_cands) */
};

/* Per-decision context: the task and how to value an RU for it. */
typedef struct dctx {
	const rusk_task *t;
	rusk_qtask qt;
	bool interf;
} dctx;

static inline uint64_t tie_key(uint32_t ru)
{
	uint64_t x = ru;
	return rusk_splitmix64(&x);
}

static inline bool better(const cand *a, const cand *b)
{
	return a->q > b->q || (a->q == b->q && a->key > b->key);
}

static bool is_preferred(const rusk_cluster *c, const rusk_task *t, uint32_t ru)
{
	if (t->n_preferred == 0)
		return false;
	uint32_t m = c->ru_machine[ru];
	for (uint32_t i = 0; i < t->n_preferred; i++)
		if (t->preferred[i] == m)
			return true;
	return false;
}

/* The value ranked for a candidate: Q, or slot score plus a preferred-machine bonus. */
static inline double value(const rusk_cluster *c, const dctx *d, uint32_t ru)
{
	if (d->interf)
		return rusk_qtask_eval(c, &d->qt, ru);
	double s = c->ru_score[ru] / 1000.0;
	return is_preferred(c, d->t, ru) ? s + 1e6 : s;
}

static inline double reported_quality(const rusk_cluster *c, const dctx *d, uint32_t ru)
{
	return d->interf ? rusk_qtask_eval(c, &d->qt, ru) : c->ru_score[ru] / 1000.0;
}

RUSK_EXPORT void rusk_agent_params_init(rusk_agent_params *ap, const rusk_sync_params *p,
                                        uint32_t index)
{
	memset(ap, 0, sizeof *ap);
	ap->index = index;
	if (p != NULL)
		ap->sync = *p;
	ap->strategy = RUSK_STRATEGY_LATENCY;
	ap->quality = RUSK_QUALITY_SCORE;
	ap->sample = 0;
	ap->eps = 0.05;
	ap->target = 0.8;
	ap->r_max = 32;
	ap->max_retries = 8;
	ap->tau_ns = 1000000000ull;
	ap->ema_alpha = 0.1;
	ap->seed = 1;
	ap->latency_preferred = true;
}

static const char *strategy_names[] = {"latency", "quality", "adaptive", "random", "central"};

RUSK_EXPORT int rusk_strategy_parse(const char *name, rusk_strategy *out)
{
	for (int i = 0; name != NULL && i < 5; i++)
		if (strcmp(name, strategy_names[i]) == 0) {
			*out = (rusk_strategy)i;
			return RUSK_OK;
		}
	return RUSK_EINVAL;
}

RUSK_EXPORT const char *rusk_strategy_name(rusk_strategy s)
{
	return (unsigned)s < 5 ? strategy_names[s] : "unknown";
}

RUSK_EXPORT int rusk_agent_create(rusk_cluster *c, const rusk_agent_params *ap, rusk_agent **out,
                                  char *err, size_t errlen)
{
	if (c == NULL || ap == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "cluster, params and out must not be NULL");
	if ((unsigned)ap->strategy > RUSK_STRATEGY_CENTRAL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "unknown strategy %d",
		                 (int)ap->strategy);
	if ((unsigned)ap->quality > RUSK_QUALITY_INTERFERENCE)
		return rusk_errf(err, errlen, RUSK_EINVAL, "unknown quality model %d",
		                 (int)ap->quality);
	if (!(ap->eps > 0 && ap->eps < 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "eps %g not in (0, 1)", ap->eps);
	if (!(ap->target > 0 && ap->target < 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "target %g not in (0, 1)", ap->target);
	if (ap->r_max == 0 || ap->r_max > 4096)
		return rusk_errf(err, errlen, RUSK_EINVAL, "r_max %u not in 1..4096", ap->r_max);
	if (ap->sample > 4096)
		return rusk_errf(err, errlen, RUSK_EINVAL, "sample %u not in 0..4096", ap->sample);
	if (!(ap->ema_alpha > 0 && ap->ema_alpha <= 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "ema_alpha %g not in (0, 1]",
		                 ap->ema_alpha);
	rusk_agent *a = calloc(1, sizeof *a);
	if (a == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	a->c = c;
	a->p = *ap;
	rusk_rng_seed(&a->rng, ap->seed, 0x6167656e74ull + ap->index);
	a->order = calloc(c->n_parts, sizeof *a->order);
	int rc = rusk_view_create(c, &a->v);
	if (rc == RUSK_OK)
		rusk_view_seed_(a->v, ap->seed, ap->index);
	if (rc == RUSK_OK)
		rc = rusk_view_set_policy(a->v, &ap->sync, ap->index, err, errlen);
	if (rc != RUSK_OK || a->order == NULL) {
		rusk_agent_destroy(a);
		return rc != RUSK_OK ? rc : rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	}
	*out = a;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_agent_destroy(rusk_agent *a)
{
	if (a == NULL)
		return;
	rusk_view_destroy(a->v);
	free(a->order);
	free(a->cands);
	free(a->group);
	free(a->seen);
	free(a);
}

RUSK_EXPORT rusk_view *rusk_agent_view(rusk_agent *a)
{
	return a->v;
}

static bool reserve(cand **buf, size_t *cap, size_t n)
{
	if (n <= *cap)
		return true;
	size_t nc = *cap ? *cap : 64;
	while (nc < n)
		nc *= 2;
	cand *nb = realloc(*buf, nc * sizeof *nb);
	if (nb == NULL)
		return false;
	*buf = nb;
	*cap = nc;
	return true;
}

RUSK_EXPORT void rusk_agent_observe_delay(rusk_agent *a, uint64_t delay_ns)
{
	if (!a->ema_set) {
		a->ema_ns = (double)delay_ns;
		a->ema_set = true;
	} else {
		a->ema_ns += a->p.ema_alpha * ((double)delay_ns - a->ema_ns);
	}
}

RUSK_EXPORT double rusk_agent_delay_ema_ns(const rusk_agent *a)
{
	return a->ema_ns;
}

RUSK_EXPORT rusk_strategy rusk_agent_current_strategy(const rusk_agent *a)
{
	if (a->p.strategy != RUSK_STRATEGY_ADAPTIVE)
		return a->p.strategy;
	return a->ema_ns < (double)a->p.tau_ns ? RUSK_STRATEGY_QUALITY : RUSK_STRATEGY_LATENCY;
}

/* Inserts x into best[0..*n) kept in decreasing order, at most m long. */
static void top_insert(cand *best, uint32_t *n, uint32_t m, const cand *x)
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
static uint32_t scan_range(const rusk_cluster *c, const dctx *d, const uint64_t *bits, bool atomic,
                           uint32_t ru_lo, uint32_t ru_hi, uint32_t m, cand *out, uint32_t *n)
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
			cand x = {ru, value(c, d, ru), tie_key(ru)};
			top_insert(out, n, m, &x);
			seen++;
		}
		b = word_end;
	}
	return seen;
}

static uint32_t best_in_range(const rusk_cluster *c, const dctx *d, const uint64_t *bits,
                              bool atomic, uint32_t ru_lo, uint32_t ru_hi, uint32_t m, cand *out)
{
	uint32_t n = 0;
	scan_range(c, d, bits, atomic, ru_lo, ru_hi, m, out, &n);
	return n;
}

/* RU range of the machine or rack (group) that holds ru. */
static void group_range(const rusk_cluster *c, uint8_t place, uint32_t ru, uint32_t *gid,
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

static double mean_q(const cand *x, uint32_t n)
{
	double s = 0;
	for (uint32_t i = 0; i < n; i++)
		s += x[i].q;
	return n ? s / n : -INFINITY;
}

static int cmp_ru(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Candidate and RU lists are short (R*m, usually <= 64): insertion sort beats qsort's
 * call overhead there (it was 40% of a decision). */
static void sort_cands(cand *x, size_t n)
{
	if (n > 64) {
		qsort(x, n, sizeof *x, cmp_ru);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		cand v = x[i];
		size_t j = i;
		while (j > 0 && x[j - 1].ru > v.ru) {
			x[j] = x[j - 1];
			j--;
		}
		x[j] = v;
	}
}

static void sort_rus(uint32_t *x, size_t n)
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
static uint32_t partition_order(rusk_agent *a, const dctx *d, rusk_strategy s)
{
	rusk_cluster *c = a->c;
	uint32_t P = c->n_parts, n = 0;
	if (s == RUSK_STRATEGY_LATENCY) {
		/* All of them, freshest first; the draw loop skips partitions without free RUs
		 * (filtering here cost a view_free call per partition per decision). */
		return (uint32_t)rusk_view_freshest(a->v, a->order, P);
	}
	/* quality / random: expected value per partition, then sort (P is small). */
	double *score = alloca(sizeof(double) * P);
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
			a->cands[n++] = (cand){buf[j], 0, 0};
		k += b;
	}
	return n;
}

/* One candidate from partition p: uniform, or weighted by value for Quality-first. */
static bool draw(rusk_agent *a, const dctx *d, uint32_t p, bool weighted, uint32_t *ru)
{
	if (!weighted)
		return rusk_view_pick_free(a->v, p, rusk_rng_next(&a->rng), ru);
	double bound = d->interf ? 1.0 : a->c->max_score / 1000.0;
	for (int k = 0; k < 16; k++) {
		if (!rusk_view_pick_free(a->v, p, rusk_rng_next(&a->rng), ru))
			return false;
		double q = reported_quality(a->c, d, *ru);
		if (rusk_rng_unit(&a->rng) * bound <= q || is_preferred(a->c, d->t, *ru))
			return true;
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
			if (sc < bs || ru == best)
				continue;
			if (sc == bs) {
				if (!keyed)
					bkey = tie_key(best);
				keyed = true;
				uint64_t key = tie_key(ru);
				if (key <= bkey)
					continue;
				bkey = key;
			} else {
				keyed = false;
			}
			best = ru;
			bs = sc;
		}
		k += n;
	}
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
static size_t dedup_sorted(cand *x, size_t n)
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
	cand *x = a->cands;
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
static size_t enum_free(const rusk_agent *a, uint32_t p, cand *out)
{
	const rusk_vrange r = rusk_view_range_(a->v, p);
	size_t n = 0;
	for (uint32_t wi = rusk_vrange_next_(&r, 0); wi < r.n_words;
	     wi = rusk_vrange_next_(&r, wi + 1))
		for (uint64_t w = r.w[wi]; w != 0; w &= w - 1)
			out[n++] =
			        (cand){r.first_ru + wi * 64 + (uint32_t)__builtin_ctzll(w), 0, 0};
	return n;
}

/*
 * Gathers candidates into a->cands[*n..want) from the partitions a->order[i..n_parts) in
 * the strategy's order; returns the first partition not visited. Latency-first stays in
 * the freshest partition unless it cannot hold the task; Quality-first stops after the
 * best partition that can. With `exact`, a partition with no more free RUs than the
 * draws wanted from it gives all of them instead (each once, and cheaper than drawing).
 */
static uint32_t gather(rusk_agent *a, const dctx *d, rusk_strategy s, uint32_t i, uint32_t n_parts,
                       uint32_t m, size_t want, bool exact, size_t *n, uint32_t *drawn)
{
	bool weighted = s == RUSK_STRATEGY_QUALITY;
	for (; i < n_parts && *n < want; i++) {
		uint32_t p = a->order[i];
		uint32_t pf = rusk_view_free_(a->v, p);
		size_t take = want - *n;
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
				a->cands[(*n)++] = (cand){ru, 0, 0};
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
static long gather_more(rusk_agent *a, const dctx *d, rusk_strategy s, uint32_t next,
                        uint32_t n_parts, uint32_t m, uint32_t R, size_t n, uint32_t *drawn)
{
	while (n < m && next < n_parts) {
		size_t want = n + (size_t)R * (m - n);
		if (!reserve(&a->cands, &a->cap, want))
			return RUSK_ENOMEM;
		next = gather(a, d, s, next, n_parts, m, want, true, &n, drawn);
		n = dedup_cands(a, s, n);
	}
	for (uint32_t i = 0; n < m && i < n_parts; i++) {
		uint32_t pf = rusk_view_free_(a->v, a->order[i]);
		if (!reserve(&a->cands, &a->cap, n + pf))
			return RUSK_ENOMEM;
		size_t k = enum_free(a, a->order[i], a->cands + n);
		*drawn += (uint32_t)k;
		n = dedup_cands(a, s, n + k);
	}
	return (long)n;
}

static inline void swap_cand(cand *x, cand *y)
{
	cand t = *x;
	*x = *y;
	*y = t;
}

static int cmp_better(const void *x, const void *y)
{
	const cand *a = x, *b = y;
	return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

/*
 * The best m of x[0..n) into best[0..m), best first; returns how many (min(n, m)).
 * Quickselect moves the m best to the front in O(n) expected, then only they are sorted:
 * the same set and order as inserting every candidate into a sorted top-m list (better()
 * is a strict order: keys of distinct RUs differ), without its O(n m) moves, which made
 * a 661-RU decision over 21K candidates cost milliseconds. Reorders x.
 */
static uint32_t select_top(cand *x, size_t n, uint32_t m, cand *best)
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

static int choose_view(rusk_agent *a, const dctx *d, rusk_strategy s, uint32_t *rus,
                       rusk_placement *pl, uint64_t now)
{
	rusk_cluster *c = a->c;
	const rusk_task *t = d->t;
	uint32_t m = t->rus;
	uint64_t view_free = rusk_view_total_free_(a->v);
	if (view_free < m)
		return RUSK_EAGAIN;
	uint32_t R = sample_r(a, s, view_free);
	pl->sample_size = R;
	uint32_t n_parts = partition_order(a, d, s);
	if (n_parts == 0)
		return RUSK_EAGAIN;
	pl->staleness_ns = rusk_view_staleness_(a->v, a->order[0], now);
	uint8_t place = t->placement;
	bool grouped = place == RUSK_PLACE_MACHINE || place == RUSK_PLACE_RACK;
	/* Candidates: R per RU (R per group for locality). */
	size_t want = grouped ? R : (size_t)R * m;
	if (!reserve(&a->cands, &a->cap, want) || !reserve(&a->group, &a->group_cap, 2 * (size_t)m))
		return RUSK_ENOMEM;
	size_t n = 0;
	bool weighted = s == RUSK_STRATEGY_QUALITY;
	if (!d->interf && t->n_preferred > 0 &&
	    (weighted || (s == RUSK_STRATEGY_LATENCY && a->p.latency_preferred))) {
		/* Preferred machines are looked up, not sampled: an O(k) index, where ParSync's
		 * schedulers had to search. Quality-first takes all of them as candidates
		 * (§6.2: it "checks all partitions to find preferred slots"); Latency-first only
		 * those in the freshest partition that has one free, where a commit is least
		 * likely to conflict (§5.2: "from the least stale partition first"), and then
		 * draws nothing when they can hold the task: a preferred RU outranks any draw. */
		uint64_t newest = 0;
		size_t extra = 0;
		for (uint32_t k = 0; k < t->n_preferred; k++) {
			if (t->preferred[k] >= c->n_machines)
				continue;
			const rusk_machine *pm = &c->machines[t->preferred[k]];
			extra += pm->n_rus;
			uint64_t taken = rusk_view_taken_ns_(a->v, pm->partition);
			if (!weighted && taken > newest)
				for (uint32_t ru = pm->first_ru; ru < pm->first_ru + pm->n_rus;
				     ru++)
					if (rusk_view_is_free(a->v, ru)) {
						newest = taken;
						break;
					}
		}
		if (!reserve(&a->cands, &a->cap, want + extra))
			return RUSK_ENOMEM;
		for (uint32_t k = 0; k < t->n_preferred; k++) {
			if (t->preferred[k] >= c->n_machines)
				continue;
			const rusk_machine *pm = &c->machines[t->preferred[k]];
			if (!weighted && rusk_view_taken_ns_(a->v, pm->partition) != newest)
				continue;
			for (uint32_t ru = pm->first_ru; ru < pm->first_ru + pm->n_rus; ru++)
				if (rusk_view_is_free(a->v, ru))
					a->cands[n++] = (cand){ru, 0, 0};
		}
		want = !weighted && n >= m ? n : want + n;
	}
	uint32_t drawn = 0;
	uint32_t next = gather(a, d, s, 0, n_parts, m, want, false, &n, &drawn);
	bool deduped = false;
	if (m > 1 && !grouped) {
		n = dedup_cands(a, s, n);
		deduped = true;
		if (n < m) {
			long k = gather_more(a, d, s, next, n_parts, m, R, n, &drawn);
			if (k < 0)
				return (int)k;
			n = (size_t)k;
		}
	}
	pl->samples = drawn;
	if (n == 0)
		return RUSK_EAGAIN;
	if (m == 1 && place != RUSK_PLACE_MACHINE && place != RUSK_PLACE_RACK &&
	    s != RUSK_STRATEGY_RANDOM) {
		/* One RU: the best candidate, no sort or de-duplication needed (a repeated RU
		 * has the same value); the tie-break key only when values tie. */
		cand best1 = {a->cands[0].ru, value(c, d, a->cands[0].ru), 0};
		bool keyed = false;
		for (size_t i = 1; i < n; i++) {
			cand x = {a->cands[i].ru, value(c, d, a->cands[i].ru), 0};
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
		pl->quality = reported_quality(c, d, best1.ru);
		pl->preferred = is_preferred(c, t, best1.ru);
		return 1;
	}
	/* De-duplicate (draws may repeat an RU), then value them. */
	if (!deduped)
		n = dedup_sorted(a->cands, n); /* locality walks them in RU order */
	for (size_t i = 0; i < n; i++) {
		a->cands[i].q = s == RUSK_STRATEGY_RANDOM ? 0 : value(c, d, a->cands[i].ru);
		a->cands[i].key = s == RUSK_STRATEGY_RANDOM ? rusk_rng_next(&a->rng)
		                                            : tie_key(a->cands[i].ru);
	}
	uint32_t got = 0;
	cand *best = a->group;
	if (place == RUSK_PLACE_ANY) {
		got = select_top(a->cands, n, m, best);
	} else if (place == RUSK_PLACE_SPREAD) {
		/* best first, one per machine */
		for (uint32_t k = 0; k < m; k++) {
			cand *pick = NULL;
			for (size_t i = 0; i < n; i++) {
				bool used = false;
				for (uint32_t j = 0; j < got && !used; j++)
					used = c->ru_machine[best[j].ru] ==
					       c->ru_machine[a->cands[i].ru];
				if (!used && (pick == NULL || better(&a->cands[i], pick)))
					pick = &a->cands[i];
			}
			if (pick == NULL)
				break;
			best[got++] = *pick;
		}
	} else {
		/* Locality: each candidate's machine or rack, judged by its best m free RUs. */
		cand *tmp = best + m;
		double best_mean = -INFINITY;
		uint32_t last_group = UINT32_MAX;
		for (size_t i = 0; i < n; i++) {
			uint32_t lo, hi, gid;
			group_range(c, place, a->cands[i].ru, &gid, &lo, &hi);
			if (gid == last_group)
				continue; /* sorted by RU: same group as the previous candidate */
			last_group = gid;
			uint32_t k =
			        best_in_range(c, d, rusk_view_bits_(a->v), false, lo, hi, m, tmp);
			double mq = mean_q(tmp, k);
			if (k == m && mq > best_mean) {
				best_mean = mq;
				memcpy(best, tmp, sizeof *best * m);
				got = m;
			}
		}
	}
	if (got < (t->gang ? m : 1))
		return RUSK_EAGAIN;
	double qs = 0;
	uint32_t pref = 0;
	for (uint32_t i = 0; i < got; i++) {
		rus[i] = best[i].ru;
		qs += reported_quality(c, d, best[i].ru);
		pref += is_preferred(c, t, best[i].ru);
	}
	sort_rus(rus, got);
	pl->quality = qs / got;
	pl->preferred = pref;
	return (int)got;
}

static void dctx_init(dctx *d, const rusk_agent *a, const rusk_task *t)
{
	d->t = t;
	d->interf = a->p.quality == RUSK_QUALITY_INTERFERENCE;
	if (d->interf)
		rusk_qtask_init(&d->qt, &t->profile);
}

/* Any profile byte > 99, ten at a time: adding 28 to a byte <= 127 sets its top bit
 * exactly when it was >= 100; bytes >= 128 have it set already. */
static inline bool profile_ok(const rusk_profile *p)
{
	_Static_assert(RUSK_N_RESOURCES <= 16, "profile fits two words");
	uint64_t w[2] = {0, 0};
	memcpy(w, p->c, RUSK_N_RESOURCES);
	const uint64_t low7 = UINT64_C(0x7f7f7f7f7f7f7f7f), top = UINT64_C(0x8080808080808080);
	const uint64_t add = UINT64_C(0x1c1c1c1c1c1c1c1c);
	return ((((w[0] & low7) + add) | w[0]) & top) == 0 &&
	       ((((w[1] & low7) + add) | w[1]) & top) == 0;
}

static const char *const place_names[] = {"any", "machine", "rack", "spread"};
static const char *const fit_what[] = {"RUs of the whole cluster", "RUs of its largest machine",
                                       "RUs of its largest rack", "machines of the cluster"};

/* Out of line: what is wrong with a task that the fast check refused, and which field. */
static RUSK_NOINLINE int task_problem(const rusk_cluster *c, const rusk_task *t, const char **field,
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
	} else if (!profile_ok(&t->profile)) {
		f = "profile";
		rusk_errf(err, errlen, rc, "task %llu: a profile value exceeds 99",
		          (unsigned long long)t->id);
	} else if (t->rus > c->fit[t->placement]) {
		f = "rus";
		rc = RUSK_EINFEASIBLE;
		rusk_errf(err, errlen, rc,
		          "task %llu: rus %u exceeds the %u %s (placement %s): no state of the "
		          "cluster can hold it",
		          (unsigned long long)t->id, t->rus, c->fit[t->placement],
		          fit_what[t->placement], place_names[t->placement]);
	} else {
		rc = RUSK_OK;
	}
	if (field != NULL)
		*field = f;
	return rc;
}

/* The hot path's check: one pass of compares, the explanation only on failure. */
static inline int check_task(const rusk_cluster *c, const rusk_task *t, const char **field)
{
	if (RUSK_LIKELY(t != NULL && t->id - 1 < RUSK_TASK_ID_MAX &&
	                t->placement <= RUSK_PLACE_SPREAD && t->rus - 1 < c->fit[t->placement] &&
	                (t->n_preferred == 0 || t->preferred != NULL) && profile_ok(&t->profile)))
		return RUSK_OK;
	return task_problem(c, t, field, NULL, 0);
}

RUSK_EXPORT int rusk_task_check(const rusk_cluster *c, const rusk_task *t, char *err, size_t errlen)
{
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "cluster is NULL");
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	return task_problem(c, t, NULL, err, errlen);
}

/* Returns the number of RUs chosen (> 0) or a negative error. */
static int choose(rusk_agent *a, const dctx *d, uint32_t *rus, rusk_placement *pl, uint64_t now)
{
	rusk_strategy s = rusk_agent_current_strategy(a);
	pl->strategy = s;
	const rusk_task *t = d->t;
	if (s == RUSK_STRATEGY_LATENCY && t->rus == 1 && !d->interf && t->n_preferred == 0 &&
	    (t->placement == RUSK_PLACE_ANY || t->placement == RUSK_PLACE_SPREAD)) {
		uint64_t view_free = rusk_view_total_free_(a->v);
		if (view_free == 0)
			return RUSK_EAGAIN;
		uint32_t R = sample_r(a, s, view_free);
		pl->sample_size = R;
		return choose_latency1(a, R, now, rus, pl);
	}
	return choose_view(a, d, s, rus, pl, now);
}

RUSK_EXPORT int rusk_agent_choose(rusk_agent *a, const rusk_task *t, uint32_t *rus,
                                  rusk_placement *pl)
{
	if (a == NULL || rus == NULL || pl == NULL)
		return RUSK_EINVAL;
	memset(pl, 0, sizeof *pl);
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	int bad = check_task(a->c, t, &pl->invalid);
	if (RUSK_UNLIKELY(bad != RUSK_OK))
		return bad;
	dctx d;
	dctx_init(&d, a, t);
	/* central chooses under its lock inside rusk_agent_place only */
	int n = a->p.strategy == RUSK_STRATEGY_CENTRAL ? RUSK_EINVAL
	                                               : choose(a, &d, rus, pl, rusk_now_(a->c));
	if (n < 0)
		return n;
	pl->placed = 0;
	return (uint32_t)n == t->rus ? RUSK_OK : RUSK_EAGAIN;
}

static uint32_t commit_unlocked(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                                rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof);

/* Commits chosen rus; marks what it took or lost in the view. Returns RUs won. */
static uint32_t commit(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                       rusk_lease *leases, rusk_placement *pl)
{
	rusk_cluster *c = a->c;
	const rusk_profile *prof = a->p.quality == RUSK_QUALITY_INTERFERENCE ? &t->profile : NULL;
	pl->attempts++;
	if (a->p.global_lock && a->p.strategy != RUSK_STRATEGY_CENTRAL) {
		/* The global-lock baseline: the same decision, committed under one mutex. */
		pthread_mutex_lock(&c->central_lock);
		uint32_t won = commit_unlocked(a, t, rus, n, leases, pl, prof);
		pthread_mutex_unlock(&c->central_lock);
		return won;
	}
	return commit_unlocked(a, t, rus, n, leases, pl, prof);
}

/*
 * The machines of the RUs just won, checked before place() hands them out: a failure or
 * drain that happened while place() was deciding is reported by place() itself (those RUs
 * are unheld and counted as conflicts; a gang gives back all of them). The callback of
 * rusk_machine_fail can then only name leases place() returned (ru.c, "Revocations").
 * Returns the RUs kept, compacted in leases[] in their order.
 */
static uint32_t keep_up(rusk_agent *a, const rusk_task *t, rusk_lease *leases, uint32_t won,
                        bool lost_before, rusk_placement *pl)
{
	rusk_cluster *c = a->c;
	uint32_t down = 0;
	for (uint32_t i = 0; i < won; i++)
		/* Relaxed: no order needed; a state store we miss makes the failure wait for
		 * the publish and report the lease by callback (topology.c). */
		down += rusk_load32(&c->machines[c->ru_machine[leases[i].ru]].state,
		                    RUSK_RELAXED) != RUSK_M_UP;
	if (RUSK_LIKELY(down == 0))
		return won;
	pl->conflicts += down;
	pl->commits_lost += !lost_before;
	uint32_t kept = 0;
	for (uint32_t i = 0; i < won; i++) {
		bool up = rusk_load32(&c->machines[c->ru_machine[leases[i].ru]].state,
		                      RUSK_RELAXED) == RUSK_M_UP;
		if (up && (!t->gang || won == 1))
			leases[kept++] = leases[i];
		else
			rusk_ru_unhold_(c, leases[i]); /* a gang gives back all of them */
	}
	return kept;
}

static uint32_t commit_unlocked(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                                rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof)
{
	rusk_cluster *c = a->c;
	if (n == 1) {
		/* One RU: the single commit, without the multi-RU entry points' set-up. Gang
		 * and incremental mean the same thing for one RU. */
		int rc = rusk_ru_commit_held_(c, t->id, rus[0], prof, &leases[0]);
		if (rc == RUSK_OK || rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE)
			rusk_view_mark_taken_(a->v,
			                      rus[0]); /* ours, or lost: not free either way */
		if (rc == RUSK_OK)
			return keep_up(a, t, leases, 1, false, pl);
		pl->conflicts += rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE;
		pl->commits_lost += rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE;
		return 0;
	}
	if (t->gang) {
		size_t lost = 0;
		int rc = rusk_ru_commit_gang_held_(c, t->id, rus, n, prof, leases, &lost);
		if (rc == RUSK_OK) {
			for (uint32_t i = 0; i < n; i++)
				rusk_view_mark_taken_(a->v, rus[i]);
			return keep_up(a, t, leases, n, false, pl);
		}
		if (rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE) {
			rusk_view_mark_taken_(a->v, rus[lost]);
			pl->conflicts++;
			pl->commits_lost++;
		}
		return 0;
	}
	size_t won = 0;
	if (rusk_ru_commit_incremental_held_(c, t->id, rus, n, prof, leases, &won) != RUSK_OK)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		rusk_view_mark_taken_(a->v, rus[i]); /* ours, or lost: not free either way */
	pl->conflicts += n - (uint32_t)won;
	pl->commits_lost += won < n;
	return keep_up(a, t, leases, (uint32_t)won, won < n, pl);
}

/* place()'s end: hands out the held leases (clears C), or gives them all back. */
static int finish(rusk_cluster *c, rusk_lease *leases, uint32_t n, int rc)
{
	for (uint32_t i = 0; i < n; i++) {
		if (rc == RUSK_OK)
			rusk_ru_publish_(c, leases[i]);
		else
			rusk_ru_unhold_(c, leases[i]);
	}
	return rc;
}

/* The designs whose every change of the shared state goes under the cluster's one mutex. */
static inline bool serialised(const rusk_agent *a)
{
	return a->p.global_lock || a->p.strategy == RUSK_STRATEGY_CENTRAL;
}

/* Out of line: the lock-free path stays a tail call. */
static RUSK_NOINLINE int release_serialised(rusk_cluster *c, uint64_t task,
                                            const rusk_lease *leases, size_t n, size_t *n_rejected)
{
	pthread_mutex_lock(&c->central_lock);
	int rc = rusk_ru_release_many(c, task, leases, n, n_rejected);
	pthread_mutex_unlock(&c->central_lock);
	return rc;
}

RUSK_EXPORT int rusk_agent_release(const rusk_agent *a, uint64_t task, const rusk_lease *leases,
                                   size_t n, size_t *n_rejected)
{
	if (a == NULL)
		return RUSK_EINVAL;
	if (RUSK_UNLIKELY(serialised(a)))
		return release_serialised(a->c, task, leases, n, n_rejected);
	return rusk_ru_release_many(a->c, task, leases, n, n_rejected);
}

static int place_central(rusk_agent *a, const dctx *d, rusk_lease *leases, rusk_placement *pl);

RUSK_EXPORT int rusk_agent_place(rusk_agent *a, const rusk_task *t, rusk_lease *leases,
                                 rusk_placement *pl)
{
	if (a == NULL || leases == NULL || pl == NULL)
		return RUSK_EINVAL;
	memset(pl, 0, sizeof *pl);
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	int bad = check_task(a->c, t, &pl->invalid);
	if (RUSK_UNLIKELY(bad != RUSK_OK))
		return bad;
	dctx d;
	dctx_init(&d, a, t);
	if (a->p.strategy == RUSK_STRATEGY_CENTRAL)
		return place_central(a, &d, leases, pl);
	uint32_t *rus = alloca(sizeof *rus * t->rus);
	uint32_t placed = 0;
	double qsum = 0;
	uint32_t pref = 0;
	rusk_task rest;
	uint64_t t0 = rusk_now_(a->c), t1 = t0;
	for (uint32_t attempt = 0; attempt <= a->p.max_retries && placed < t->rus; attempt++) {
		/* Incremental tasks look only for what they still lack. */
		if (placed > 0) {
			rest = *t;
			rest.rus = t->rus - placed;
			d.t = &rest;
		}
		/* The first decision fills pl itself (sample size, strategy, staleness are
		 * the first attempt's); a retry's only adds its samples. */
		rusk_placement one;
		rusk_placement *dst = pl;
		if (attempt > 0) {
			one = (rusk_placement){0};
			dst = &one;
		}
		int n = choose(a, &d, rus, dst, t0);
		t1 = rusk_now_(a->c);
		pl->sample_ns += t1 - t0;
		if (attempt > 0)
			pl->samples += one.samples;
		if (n == RUSK_ENOMEM)
			return finish(a->c, leases, placed, RUSK_ENOMEM);
		if (n <= 0)
			break; /* the view has nothing suitable: give the task back */
		uint32_t won = commit(a, d.t, rus, (uint32_t)n, leases + placed, pl);
		t0 = rusk_now_(a->c); /* the next attempt starts here */
		pl->commit_ns += t0 - t1;
		t1 = t0;
		for (uint32_t i = 0; i < won; i++) {
			qsum += reported_quality(a->c, &d, leases[placed + i].ru);
			pref += is_preferred(a->c, t, leases[placed + i].ru);
		}
		placed += won;
		if (t->gang && won == 0)
			continue;
	}
	pl->end_ns = t1;
	pl->placed = placed;
	pl->quality = placed ? qsum / placed : 0;
	pl->preferred = pref;
	if (placed == 0 || (t->gang && placed < t->rus)) {
		pl->placed = 0;
		return finish(a->c, leases, placed, RUSK_EAGAIN);
	}
	return finish(a->c, leases, placed, RUSK_OK);
}

/*
 * The central baseline (Quasar §3.3): under the cluster's one lock, scan every free RU of
 * the master bitmap, rank them all greedily (best m, or the best machine / rack by the
 * mean of its best m, or the best RU of each machine for spread), commit, unlock. Exact,
 * and its cost grows with the cluster: that is what it is there to show.
 */
static int place_central(rusk_agent *a, const dctx *d, rusk_lease *leases, rusk_placement *pl)
{
	rusk_cluster *c = a->c;
	const rusk_task *t = d->t;
	uint32_t m = t->rus;
	if (!reserve(&a->group, &a->group_cap, 2 * (size_t)m))
		return RUSK_ENOMEM;
	uint32_t *rus = alloca(sizeof *rus * m);
	cand *best = a->group, *tmp = a->group + m;
	uint32_t got = 0, seen = 0;
	pl->strategy = RUSK_STRATEGY_CENTRAL;
	pl->sample_size = 0;
	pthread_mutex_lock(&c->central_lock);
	if (t->placement == RUSK_PLACE_ANY) {
		for (uint32_t p = 0; p < c->n_parts; p++) {
			const rusk_partition *pp = &c->parts[p];
			if (pp->n_rus > 0)
				seen += scan_range(c, d, c->free_bits, true, pp->first_ru,
				                   pp->first_ru + pp->n_rus, m, best, &got);
		}
	} else if (t->placement == RUSK_PLACE_SPREAD) {
		for (uint32_t mi = 0; mi < c->n_machines; mi++) {
			const rusk_machine *mm = &c->machines[mi];
			uint32_t k = 0;
			seen += scan_range(c, d, c->free_bits, true, mm->first_ru,
			                   mm->first_ru + mm->n_rus, 1, tmp, &k);
			if (k == 1)
				top_insert(best, &got, m, tmp);
		}
	} else {
		double best_mean = -INFINITY;
		uint32_t groups = t->placement == RUSK_PLACE_MACHINE ? c->n_machines : c->n_racks;
		for (uint32_t g = 0; g < groups; g++) {
			uint32_t first =
			        t->placement == RUSK_PLACE_MACHINE ? g : g * c->machines_per_rack;
			uint32_t gid, lo, hi, k = 0;
			group_range(c, t->placement, c->machines[first].first_ru, &gid, &lo, &hi);
			seen += scan_range(c, d, c->free_bits, true, lo, hi, m, tmp, &k);
			double mq = mean_q(tmp, k);
			if (k == m && mq > best_mean) {
				best_mean = mq;
				memcpy(best, tmp, sizeof *best * m);
				got = m;
			}
		}
	}
	pl->samples = seen;
	int rc = RUSK_EAGAIN;
	if (got > 0 && (got == m || !t->gang)) {
		for (uint32_t i = 0; i < got; i++)
			rus[i] = best[i].ru;
		sort_rus(rus, got);
		uint32_t won = commit(a, t, rus, got, leases, pl);
		if (won > 0) {
			double qs = 0;
			for (uint32_t i = 0; i < won; i++) {
				qs += reported_quality(c, d, leases[i].ru);
				pl->preferred += is_preferred(c, t, leases[i].ru);
			}
			pl->placed = won;
			pl->quality = qs / won;
			rc = RUSK_OK;
		}
	}
	pthread_mutex_unlock(&c->central_lock);
	pl->end_ns = rusk_now_(c);
	return finish(c, leases, pl->placed, rc);
}
