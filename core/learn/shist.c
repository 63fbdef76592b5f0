/* SPDX-License-Identifier: MIT */
/*
 * Streaming histograms of runtimes (3Sigma §4.1: "varying bucket widths ... a stream
 * histogram algorithm [Ben-Haim & Tom-Tov, JMLR 2010] with a maximum of 80 bins"). Public
 * contract in rusk/predict.h (rusk_dist_*).
 *
 * Algorithm (Ben-Haim & Tom-Tov, "A Streaming Parallel Decision Tree Algorithm", §2.1).
 * A histogram is a sorted list of bins (p_i, m_i): m_i points whose mean is p_i.
 *   update   insert x as the bin (x, 1) (or add 1 to a bin whose value is exactly x);
 *            while there are more than B bins, replace the two bins with the closest
 *            values by one bin at their weighted mean holding both counts. "Closest" is
 *            relative here (gap() below says why and what it changes).
 *   merge    the union of two bin lists, then the same reduction down to B bins.
 *   sum(b)   the estimated number of points <= b assumes half of each bin's points lie on
 *            either side of p_i and interpolates the density linearly between neighbouring
 *            bins: for p_i <= b < p_(i+1), with m_b the count interpolated at b,
 *            sum = sum_(j<i) m_j + m_i / 2 + (m_i + m_b) / 2 * (b - p_i) / (p_(i+1) - p_i).
 *   uniform  the inverse of sum: the trapezoid's quadratic solved for b.
 * We also keep the exact minimum and maximum and treat them as bins of count 0 at either
 * end (a common refinement): the outer half-bins then spread between the extremes and the
 * first/last bin instead of collapsing onto p_1 and p_B, which is where a runtime
 * histogram's tails are.
 *
 * Invariants (checked by tests/test_predict.c):
 *   1. 0 <= n_bins <= RUSK_DIST_MAX_BINS, values strictly increasing, every count >= 1.
 *   2. count = sum of the bins' counts; min <= value of every bin <= max.
 *   3. sum of value * count is the sum of the points learned, up to float rounding and
 *      halvings (a merge keeps the weighted mean; so rusk_dist_mean is the running mean).
 *   4. rusk_dist_cdf is monotone from 0 (below min) to 1 (at max), and
 *      rusk_dist_quantile(rusk_dist_cdf(x)) = x wherever the density is not zero.
 * Why these stay true: an insert keeps the order by binary search; a merge replaces two
 * neighbours by a weighted mean, which float rounding keeps between them (rounding is
 * monotone and both ends are floats), hence strictly between their outer neighbours.
 *
 * Cost: an insert is a binary search, one memmove and, once full, one scan of the 79 gaps
 * for the closest pair (vectorised: closest_pair); cdf and quantile walk the bins once.
 * An insert is planned as an edit of the bin list (rusk_dist_plan_) and then applied, so
 * that the predictor can write a new version of a histogram into another copy directly.
 */
#include <math.h>
#include <string.h>

#include <rusk/predict.h>

#include "base/base.h"
#include "learn/shist.h"

#define COUNT_CAP (UINT64_C(1) << 31) /* the total count stays below: no bin overflows */

RUSK_EXPORT void rusk_dist_init(rusk_dist *d)
{
	if (d != NULL)
		memset(d, 0, offsetof(rusk_dist, bin));
}

/* Halves every count, rounding up so no bin empties: the shape stays, old history weighs
 * half (it takes 2^31 runtimes of one feature value to get here). */
static void halve(rusk_dist *d)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < d->n_bins; i++) {
		d->bin[i].count = (d->bin[i].count + 1) / 2;
		total += d->bin[i].count;
	}
	d->count = total;
}

/* Merges bins i and i + 1 into one at their weighted mean (the Ben-Haim & Tom-Tov step). */
static void merge_at(rusk_dist_bin *b, uint32_t *n, uint32_t i)
{
	double ci = b[i].count, cj = b[i + 1].count;
	double v = ((double)b[i].value * ci + (double)b[i + 1].value * cj) / (ci + cj);
	b[i].value = (float)v;
	b[i].count += b[i + 1].count;
	memmove(&b[i + 1], &b[i + 2], (size_t)(*n - i - 2) * sizeof *b);
	(*n)--;
}

/* The distance that "closest" means: relative, about log(b + F) - log(a + F) for a <= b.
 * Ben-Haim & Tom-Tov merge the pair with the smallest absolute difference; runtimes span
 * orders of magnitude, and absolute gaps then collapse the dense short end of a
 * heavy-tailed or multi-modal distribution into one or two bins while the tail keeps
 * dozens. Measured on 100K samples (worst |ECDF(quantile(q)) - q| over q = 1..99%,
 * tests/test_predict.c), absolute vs relative gaps: lognormal sigma 1.5: 20% vs 0.3%;
 * 30 s / 1 h bimodal mix: 34% vs 0.3%; exponential: 1.2% vs 0.6%; uniform: 0.05% vs 1.0%
 * (the one shape a runtime histogram rarely has). 3Sigma §4.1 asks that heavy-tailed and
 * multi-modal shapes be "accurately modeled". Below F = GAP_FLOOR seconds the scale turns
 * absolute, so zero runtimes are no special case.
 * The logarithm is the float's bit pattern read as an integer (exponent and mantissa: a
 * piecewise-linear log2 scaled by 2^23, monotone, within 0.09 of log2): an integer
 * subtraction per gap instead of a division or a log, which kept the scan the cheap part
 * of an insert. For x >= 0 the pattern is below 2^31, so differences fit an int32. */
#define GAP_FLOOR 1e-3f
static inline int32_t logkey(float x)
{
	float y = x + GAP_FLOOR;
	int32_t k;
	memcpy(&k, &y, sizeof k);
	return k;
}

static inline int32_t gap(float a, float b)
{
	return logkey(b) - logkey(a);
}

/* The index i whose gap between b[i] and b[i + 1] is the smallest (the first on ties).
 * Four gaps at once in 128-bit vectors (GCC vector extensions: SSE2 on x86-64, NEON on
 * arm64), each lane a running minimum with its index; the lanes then meet, ties to the
 * lower index, and the last gaps are scanned one by one. A full histogram's insert runs
 * this scan; with every record in cache, the scalar scan (four lanes of dependent
 * compares) was the largest part of an update (perf on bench_predict with 64 job types:
 * a third of the time spent learning a record). Same result as a one-by-one scan: every
 * lane keeps its first minimum (strict <) and the lanes' indices are merged by value, then
 * index (checked against the scalar scan on millions of random lists, ties included). */
typedef int32_t v4i __attribute__((vector_size(16)));
typedef float v4f __attribute__((vector_size(16)));

/* The logkeys of b[0..3]'s values. */
static inline v4i logkey4(const rusk_dist_bin *b)
{
	v4f lo, hi;
	memcpy(&lo, b, sizeof lo); /* value0 count0 value1 count1 */
	memcpy(&hi, b + 2, sizeof hi);
#if defined(__clang__) /* GCC's __builtin_shuffle is clang's __builtin_shufflevector */
	v4f v = __builtin_shufflevector(lo, hi, 0, 2, 4, 6) + GAP_FLOOR;
#else
	v4f v = __builtin_shuffle(lo, hi, (v4i){0, 2, 4, 6}) + GAP_FLOOR;
#endif
	v4i k;
	memcpy(&k, &v, sizeof k);
	return k;
}

/* One step of a lane-wise running minimum: the gaps of b[at..at+4) against (m, ix). */
static inline void min_step(const rusk_dist_bin *b, v4i at, v4i *m, v4i *ix)
{
	v4i g = logkey4(b + 1) - logkey4(b);
	v4i lt = g < *m; /* all ones where this gap is the lane's new minimum */
	*m = (g & lt) | (*m & ~lt);
	*ix = (at & lt) | (*ix & ~lt);
}

static uint32_t closest_pair_v4(const rusk_dist_bin *b, uint32_t n)
{
	uint32_t i = 0, gaps = n - 1, best = 0;
	int32_t bm = INT32_MAX;
	if (gaps >= 4) {
		/* Two sets of lanes, so that two compare-and-select chains run side by side. */
		const v4i max = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
		v4i m0 = max, m1 = max, ix0 = {0, 0, 0, 0}, ix1 = ix0, at = {0, 1, 2, 3};
		for (; i + 8 <= gaps; i += 8, at += 8) {
			min_step(b + i, at, &m0, &ix0);
			min_step(b + i + 4, at + 4, &m1, &ix1);
		}
		if (i + 4 <= gaps) {
			min_step(b + i, at, &m0, &ix0);
			i += 4;
		}
		for (int l = 0; l < 8; l++) {
			int32_t ml = l < 4 ? m0[l] : m1[l - 4];
			uint32_t il = (uint32_t)(l < 4 ? ix0[l] : ix1[l - 4]);
			if (ml < bm || (ml == bm && il < best)) {
				bm = ml;
				best = il;
			}
		}
	}
	for (; i < gaps; i++) { /* later indices than every lane's: strict < keeps ties first */
		int32_t g = gap(b[i].value, b[i + 1].value);
		if (g < bm) {
			bm = g;
			best = i;
		}
	}
	return best;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1
/* The same scan eight gaps at a time, for processors with AVX2 (chosen at run time: the
 * build targets plain x86-64). Lanes hold gaps i + {0, 1, 4, 5, 2, 3, 6, 7} (the in-lane
 * shuffle's order), which the (value, index) merge does not mind; the last step may
 * overlap the one before (a gap seen twice keeps its index). */
__attribute__((target("avx2"))) static inline __m256i logkey8(const rusk_dist_bin *b)
{
	__m256 lo = _mm256_loadu_ps((const float *)b), hi = _mm256_loadu_ps((const float *)(b + 4));
	__m256 v = _mm256_add_ps(_mm256_shuffle_ps(lo, hi, 0x88), _mm256_set1_ps(GAP_FLOOR));
	return _mm256_castps_si256(v);
}

__attribute__((target("avx2"))) static uint32_t closest_pair_v8(const rusk_dist_bin *b, uint32_t n)
{
	uint32_t gaps = n - 1, best = 0;
	__m256i m = _mm256_set1_epi32(INT32_MAX), ix = _mm256_setzero_si256();
	const __m256i perm = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
	for (uint32_t i = 0; i < gaps; i += 8) {
		uint32_t at = i + 8 <= gaps ? i : gaps - 8;
		__m256i g = _mm256_sub_epi32(logkey8(b + at + 1), logkey8(b + at));
		__m256i lt = _mm256_cmpgt_epi32(m, g); /* g < m: the lane's new minimum */
		m = _mm256_min_epi32(m, g);
		ix = _mm256_blendv_epi8(ix, _mm256_add_epi32(perm, _mm256_set1_epi32((int)at)), lt);
	}
	int32_t mv[8], iv[8], bm = INT32_MAX;
	_mm256_storeu_si256((__m256i *)mv, m);
	_mm256_storeu_si256((__m256i *)iv, ix);
	for (int l = 0; l < 8; l++)
		if (mv[l] < bm || (mv[l] == bm && (uint32_t)iv[l] < best)) {
			bm = mv[l];
			best = (uint32_t)iv[l];
		}
	return best;
}
#endif

/* The index i whose gap between b[i] and b[i + 1] is the smallest (the first on ties). */
static uint32_t closest_pair(const rusk_dist_bin *b, uint32_t n)
{
#ifdef HAVE_AVX2_PATH
	if (n >= 9 && __builtin_cpu_supports("avx2"))
		return closest_pair_v8(b, n);
#endif
	return closest_pair_v4(b, n);
}

/* Reduces a sorted list of n bins (n <= 2 * RUSK_DIST_MAX_BINS) to the bound. */
static void reduce(rusk_dist_bin *b, uint32_t *n)
{
	while (*n > RUSK_DIST_MAX_BINS)
		merge_at(b, n, closest_pair(b, *n));
}

/* First index whose value is >= v: a binary search without branches on the values (a
 * conditional move per step), since an insert's position is unpredictable and each
 * mispredicted step cost more than the step. */
static uint32_t lower_bound(const rusk_dist *d, float v)
{
	const rusk_dist_bin *b = d->bin;
	uint32_t n = d->n_bins, base = 0;
	while (n > 1) {
		uint32_t half = n / 2;
		base = b[base + half - 1].value < v ? base + half : base;
		n -= half;
	}
	return base + (n == 1 && b[base].value < v);
}

bool rusk_dist_plan_(const rusk_dist *d, float v, rusk_dist_edit_ *e)
{
	if (d->count + 1 >= COUNT_CAP)
		return false; /* a halving is due: rusk_dist_add_range_ does it */
	const rusk_dist_bin *bin = d->bin;
	uint32_t n = d->n_bins, i = lower_bound(d, v);
	e->count = d->count + 1;
	e->min = d->count == 0 || v < d->min ? v : d->min;
	e->max = d->count == 0 || v > d->max ? v : d->max;
	e->n_bins = n;
	e->mv_dst = e->mv_src = e->mv_n = 0;
	e->p2 = UINT32_MAX;
	e->b2 = (rusk_dist_bin){0, 0};
	if (i < n && bin[i].value == v) { /* one more point in bin i */
		e->p1 = i;
		e->b1 = (rusk_dist_bin){v, bin[i].count + 1};
		e->lo = i;
		e->hi = i + 1;
		return true;
	}
	if (n < RUSK_DIST_MAX_BINS) { /* x inserted at i, the bins after it up one */
		e->mv_dst = i + 1;
		e->mv_src = i;
		e->mv_n = n - i;
		e->p1 = i;
		e->b1 = (rusk_dist_bin){v, 1};
		e->n_bins = n + 1;
		e->lo = i;
		e->hi = n + 1;
		return true;
	}
	/* Full: of the B + 1 bins with x, merge the closest pair. When a gap next to x is the
	 * smaller than every old gap, x joins that neighbour; otherwise the closest old pair
	 * merges and x is inserted in the freed slot. */
	uint32_t k = closest_pair(bin, n);
	int32_t old_gap = gap(bin[k].value, bin[k + 1].value);
	int32_t left = i > 0 ? gap(bin[i - 1].value, v) : INT32_MAX;
	int32_t right = i < n ? gap(v, bin[i].value) : INT32_MAX;
	if (left < old_gap || right < old_gap) {
		uint32_t a = left <= right ? i - 1 : i;
		double c = bin[a].count; /* the mean lies between v and the bin: the order holds */
		e->p1 = a;
		e->b1 = (rusk_dist_bin){(float)(((double)bin[a].value * c + v) / (c + 1)),
		                        bin[a].count + 1};
		e->lo = a;
		e->hi = a + 1;
		return true;
	}
	/* Bins k and k + 1 merge (the Ben-Haim & Tom-Tov step) and x goes where lower_bound
	 * puts it in the merged list: at j = i when i <= k, i - 1 when i > k + 1 (bins k and
	 * k + 1, both below x, became one), and k or k + 1 as the merged bin is >= x or not
	 * when i = k + 1 (it lies between bins k and k + 1). */
	double ci = bin[k].count, cj = bin[k + 1].count;
	rusk_dist_bin m = {
	        (float)(((double)bin[k].value * ci + (double)bin[k + 1].value * cj) / (ci + cj)),
	        bin[k].count + bin[k + 1].count};
	uint32_t j = i <= k ? i : i > k + 1 ? i - 1 : m.value < v ? k + 1 : k;
	if (j > k) { /* m at k, bins k + 2 .. j down one, x at j */
		e->mv_dst = k + 1;
		e->mv_src = k + 2;
		e->mv_n = j - k - 1;
		e->p1 = k;
		e->b1 = m;
		e->p2 = j;
		e->b2 = (rusk_dist_bin){v, 1};
		e->lo = k;
		e->hi = j + 1;
	} else { /* x at j, bins j .. k - 1 up one, m at k + 1 */
		e->mv_dst = j + 1;
		e->mv_src = j;
		e->mv_n = k - j;
		e->p1 = j;
		e->b1 = (rusk_dist_bin){v, 1};
		e->p2 = k + 1;
		e->b2 = m;
		e->lo = j;
		e->hi = k + 2;
	}
	return true;
}

int rusk_dist_add_range_(rusk_dist *d, double x, uint32_t *lo, uint32_t *hi)
{
	if (!(x >= 0) || x > 3e38) /* also NaN and infinity; floats end near 3.4e38 */
		return RUSK_EINVAL;
	float v = (float)x;
	rusk_dist_edit_ e;
	bool halved = !rusk_dist_plan_(d, v, &e);
	if (halved) {
		halve(d);
		rusk_dist_plan_(d, v, &e);
	}
	memmove(&d->bin[e.mv_dst], &d->bin[e.mv_src], (size_t)e.mv_n * sizeof *d->bin);
	d->bin[e.p1] = e.b1;
	if (e.p2 != UINT32_MAX)
		d->bin[e.p2] = e.b2;
	d->count = e.count;
	d->min = e.min;
	d->max = e.max;
	d->n_bins = e.n_bins;
	*lo = halved ? 0 : e.lo; /* a halving changed every count */
	*hi = halved ? e.n_bins : e.hi;
	return RUSK_OK;
}

/* A histogram the public calls may read: not NULL, its bin count within the array. The
 * caller owns and may have built or copied it; the rest (sorted bins, counts adding up) is
 * its contract. */
static bool dist_ok(const rusk_dist *d)
{
	return d != NULL && d->n_bins <= RUSK_DIST_MAX_BINS;
}

RUSK_EXPORT int rusk_dist_add(rusk_dist *d, double x)
{
	if (!dist_ok(d))
		return RUSK_EINVAL;
	uint32_t lo, hi;
	return rusk_dist_add_range_(d, x, &lo, &hi);
}

RUSK_EXPORT void rusk_dist_merge(rusk_dist *into, const rusk_dist *from)
{
	if (!dist_ok(into) || !dist_ok(from) || from->count == 0)
		return;
	rusk_dist_bin tmp[2 * RUSK_DIST_MAX_BINS];
	uint32_t n = 0, i = 0, j = 0;
	const rusk_dist a = *into; /* `from` may be `into` */
	const rusk_dist *b = from == into ? &a : from;
	while (i < a.n_bins || j < b->n_bins) {
		rusk_dist_bin x;
		if (j >= b->n_bins || (i < a.n_bins && a.bin[i].value < b->bin[j].value))
			x = a.bin[i++];
		else if (i >= a.n_bins || b->bin[j].value < a.bin[i].value)
			x = b->bin[j++];
		else {
			/* the same value on both sides: one bin (indices advance after the read) */
			x = (rusk_dist_bin){a.bin[i].value, a.bin[i].count + b->bin[j].count};
			i++;
			j++;
		}
		tmp[n++] = x;
	}
	reduce(tmp, &n);
	memcpy(into->bin, tmp, (size_t)n * sizeof *tmp);
	into->n_bins = n;
	into->min = a.count == 0 || b->min < a.min ? b->min : a.min;
	into->max = a.count == 0 || b->max > a.max ? b->max : a.max;
	uint64_t total = 0; /* each side < 2^31, so no bin count overflowed */
	for (uint32_t k = 0; k < n; k++)
		total += into->bin[k].count;
	into->count = total;
	while (into->count >= COUNT_CAP)
		halve(into);
}

/* The trapezoid walk shared by cdf and quantile: the extended point k of the list
 * (min, 0), (p_1, m_1), ..., (p_B, m_B), (max, 0). */
static inline void point(const rusk_dist *d, uint32_t k, double *x, double *m)
{
	if (k == 0) {
		*x = d->min;
		*m = 0;
	} else if (k > d->n_bins) {
		*x = d->max;
		*m = 0;
	} else {
		*x = d->bin[k - 1].value;
		*m = d->bin[k - 1].count;
	}
}

RUSK_EXPORT double rusk_dist_cdf(const rusk_dist *d, double x)
{
	if (!dist_ok(d))
		return NAN;
	if (d->count == 0 || x < d->min)
		return 0;
	if (x >= d->max)
		return 1;
	double s = 0, xa, ma;
	point(d, 0, &xa, &ma);
	for (uint32_t k = 1; k <= d->n_bins + 1; k++) {
		double xb, mb;
		point(d, k, &xb, &mb);
		if (x >= xb) {
			s += (ma + mb) / 2;
		} else {
			double w = xb - xa, t = w > 0 ? (x - xa) / w : 0;
			double mx = ma + (mb - ma) * t;
			s += (ma + mx) / 2 * t;
			break;
		}
		xa = xb;
		ma = mb;
	}
	double c = s / (double)d->count;
	return c < 0 ? 0 : c > 1 ? 1 : c;
}

RUSK_EXPORT double rusk_dist_quantile(const rusk_dist *d, double q)
{
	if (!dist_ok(d) || d->count == 0)
		return NAN;
	if (!(q > 0))
		return d->min;
	if (q >= 1)
		return d->max;
	double target = q * (double)d->count, s = 0, xa, ma;
	point(d, 0, &xa, &ma);
	for (uint32_t k = 1; k <= d->n_bins + 1; k++) {
		double xb, mb;
		point(d, k, &xb, &mb);
		double area = (ma + mb) / 2;
		if (area > 0 && s + area >= target) {
			/* (mb - ma) / 2 z^2 + ma z = rest, z in [0, 1]; the rationalised root
			 * 2 rest / (ma + sqrt(ma^2 + 2 (mb - ma) rest)) has no cancellation. */
			double rest = target - s, disc = ma * ma + 2 * (mb - ma) * rest;
			double den = ma + sqrt(disc > 0 ? disc : 0);
			double z = den > 0 ? 2 * rest / den : 0;
			z = z < 0 ? 0 : z > 1 ? 1 : z;
			return xa + (xb - xa) * z;
		}
		s += area;
		xa = xb;
		ma = mb;
	}
	return d->max;
}

RUSK_EXPORT double rusk_dist_mean(const rusk_dist *d)
{
	if (!dist_ok(d) || d->count == 0)
		return NAN;
	double s = 0;
	for (uint32_t i = 0; i < d->n_bins; i++)
		s += (double)d->bin[i].value * d->bin[i].count;
	return s / (double)d->count;
}
