/* SPDX-License-Identifier: MIT */
/*
 * 3σPredict: runtime distributions per feature value, and the choice among experts by
 * NMAE (3Sigma §4.1). Public contract in rusk/predict.h; the histograms are core/learn/shist.c.
 *
 * Algorithm. A job's features (user, name, resources, queue, user+name, user+resources)
 * give up to RUSK_FEAT_N feature values; each has a record: its runtime histogram and four
 * estimators (average, median of the RUSK_PREDICT_RECENT most recent, EWMA with
 * alpha = 0.6, average of the X most recent). An expert is a (feature value, estimator)
 * pair. When job j completes with runtime y, every feature value of j first judges its
 * experts (err_k += |estimate_k - y|, actual += y), then learns y. The NMAE of an
 * expert is err_k / actual: its mean absolute error over the mean runtime it was judged
 * on. At submission, j gets the distribution of its expert with the lowest NMAE among
 * those judged at least min_evals times (ties: more evaluations, then feature order); if
 * none is, the global record (every runtime) with its own best estimator; if nothing was
 * ever learned, no distribution. The paper keeps the median from "recent values as a
 * proxy"; the X of the recent average and the ring size are ours (5 and 16).
 *
 * Concurrency: two copies per feature value, a version word, readers that never wait.
 * Feature values are nodes in a Concurrency Kit hash set (ck_hs, open addressing, SPMC
 * mode: lock-free lookups beside one inserter at a time). Nodes are added under a mutex by
 * the first update of a value (rare once the values are known) and never removed while
 * the predictor lives; the slot arrays ck_hs replaces when it grows are kept until
 * rusk_predict_destroy (they double, so together they are smaller than the live one), so
 * no lookup ever meets freed memory and nobody needs RCU. A node holds two records r[0],
 * r[1] and a version word v; readers use r[v & 1]. An update of the node sets v's lock
 * bit by CAS (only updates of the same feature value ever meet there), judges and learns
 * the runtime from r[v & 1] (its fields before the bins copied into a local record, the
 * histogram's insert planned on r[v & 1]'s bins as an edit), writes the result into the
 * other copy r[(v + 1) & 1], and publishes it by storing v + 1 without the lock bit
 * (release). The other copy holds the state two updates old, so only what differs is
 * written: the fields before the bins (240 bytes) and the bins that either update changed
 * (invariant 5). A reader loads v (acquire), reads the words it needs from r[v & 1], and
 * loads v again: the same version (lock bit aside), the words are one published state;
 * another, a writer reused that copy meanwhile and the reader reads again (the "latch"
 * variant of a seqlock: the copy being written is never the one readers are sent to, so a
 * reader never waits for a writer in progress, even a preempted one; it retries only when
 * two updates of that value completed during its read).
 * Invariants:
 *   1. Only the writer holding a node's lock bit writes its records; it writes the copy
 *      readers are not sent to (r[(v + 1) & 1]) and only then moves v to it.
 *   2. A read whose two loads of v agree saw no store of a later update: every store of
 *      an update comes after (store fence) the v store of the update before it, so a read
 *      that saw one would see v moved (the two fences pair).
 *   3. No update is lost: updates of one value are serialised by its lock bit and each
 *      starts from the state the previous one published, so a value's n counts every
 *      update (tests/test_predict.c checks this with several threads, under TSan too).
 *   4. Memory per feature value is constant: one node (sizeof(node) = 1,792 bytes, a
 *      jemalloc size class), its ck_hs slots and its front-table slots (16-32 bytes
 *      each), whatever the number of runtimes learned.
 *   5. r[(v + 1) & 1] holds the state after update v - 1 (zeroed when v = 0) and each
 *      record's `dirty` names the bins its update changed (rusk_dist_add_range_'s
 *      contract), so the bins of r[(v + 1) & 1] outside the two ranges of updates v and
 *      v + 1 already hold the new state's (tests/test_predict.c compares every version
 *      with a histogram built directly).
 * Lookups go through a front table of tagged node pointers before ck_hs (see ftab), so
 * that the six lookups of a job overlap their cache misses.
 * Records are copied word by word with relaxed atomic loads and stores (plain moves on
 * x86), so a read that overlaps a write is a retried read, never a data race. Why not RCU
 * copy-on-write records: the first version of this file did that; every update then
 * allocated a record and handed the old one to call_rcu, and the allocator churn and
 * grace-period traffic cost 5-10 us per job on the 2-core machine. Why not urcu's
 * cds_lfht: its chained lookups cost a quarter of an update and most of a prediction at
 * 100K values (a miss per node walked); ck_hs finds a node with one slot line. Why not a
 * plain seqlock: its readers spin while a writer is inside, and wait for a preempted one.
 * Why not a lock per entry for readers too: a completion burst on a popular user would
 * stall the submissions behind it.
 * Cost of an update at 126K feature values (bench/bench_predict.c, uniform access): 2.7 us
 * when each record was copied whole into a local one and stored whole into the other
 * copy; about 1.9 us with the partial stores, the histogram edit, the front table, the
 * global record learned while the lookups' lines arrive, the bins prefetched ahead of the
 * binary search, and the closest-pair scan eight gaps at a time (core/learn/shist.c).
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <ck_hs.h>

#include <rusk/predict.h>

#include "base/alloc.h"
#include "base/atomic.h"
#include "base/base.h"
#include "learn/shist.h"

/* ThreadSanitizer cannot see ck_hs's publication of a node (libck is not instrumented):
 * the node (its key and zeroed records) is released before ck_hs_put and acquired after a
 * lookup finds it. The records themselves are seqlocks (atomic.h's rusk_seq_read /
 * rusk_seq_write and fences). */
#define EWMA_ALPHA 0.6 /* 3Sigma §4.1: "exponentially weighted decay with alpha = 0.6" */
#define V_LOCK     (UINT64_C(1) << 63) /* in node.v: a writer holds the node */

/* What a reader needs to rank a feature value's experts. Estimates judged = n - 1. */
typedef struct rec_head {
	uint64_t n;             /* runtimes learned */
	double actual;          /* sum of the runtimes the estimates were judged on */
	double err[RUSK_EST_N]; /* sum of |estimate - runtime| per estimator */
	double est[RUSK_EST_N]; /* current estimates (valid when n > 0) */
} rec_head;

static inline uint64_t head_evals(const rec_head *h)
{
	return h->n > 0 ? h->n - 1 : 0;
}

/* A feature value's history. Whole 8-byte words: copied with word-wide atomics. */
typedef struct rec {
	rec_head h;
	uint32_t head;                     /* next slot of the ring */
	uint32_t dirty;                    /* bins this copy's update changed: lo | hi << 16 */
	float ring[RUSK_PREDICT_RECENT];   /* the most recent runtimes, in arrival order */
	float sorted[RUSK_PREDICT_RECENT]; /* the same, sorted (for the median) */
	rusk_dist dist;                    /* last: copies stop at the last used bin */
} rec;
_Static_assert(sizeof(rec) % 8 == 0 && offsetof(rec, dist) % 8 == 0, "rec is whole words");

typedef struct key {
	uint64_t a, b;
	uint32_t feature;
} key;

typedef struct node {
	key k;      /* first: ck_hs hashes and compares nodes as keys */
	uint64_t v; /* version: readers use r[v & 1]; V_LOCK while a writer holds it */
	rec r[2];
} node;
_Static_assert(sizeof(node) == 1792, "a node is one jemalloc size class (1,792 bytes)");

struct rusk_predictor {
	rusk_predict_params p;
	ck_hs_t hs;
	node *global;           /* not in the set */
	pthread_mutex_t insert; /* one ck_hs writer at a time (SPMC) */
	void *retired;   /* slot arrays ck_hs or the front table replaced: freed at destroy */
	struct ftab *ft; /* the front table (acquire loads; replaced under `insert`) */
	/* Statistics, relaxed: a line of their own, away from the read-mostly fields. */
	uint64_t values RUSK_ALIGNED(RUSK_CACHELINE);
	uint64_t untracked, updates, retries;
};

static const char *const feature_names[] = {"user",      "name",           "resources", "queue",
                                            "user+name", "user+resources", "global"};
static const char *const estimator_names[] = {"average", "median", "rolling", "recent"};

RUSK_EXPORT const char *rusk_feature_name(rusk_feature f)
{
	return (unsigned)f <= RUSK_FEAT_GLOBAL ? feature_names[f] : "?";
}

RUSK_EXPORT const char *rusk_estimator_name(rusk_estimator e)
{
	return (unsigned)e < RUSK_EST_N ? estimator_names[e] : "?";
}

RUSK_EXPORT void rusk_job_init(rusk_job *j)
{
	if (j == NULL)
		return;
	j->user = j->name = j->resources = j->queue = RUSK_JOB_UNKNOWN;
}

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

RUSK_EXPORT uint64_t rusk_predict_id(const char *s)
{
	if (s == NULL)
		return RUSK_JOB_UNKNOWN;
	uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a, then mixed */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
	h = mix64(h);
	return h == RUSK_JOB_UNKNOWN ? h - 1 : h;
}

RUSK_EXPORT void rusk_predict_params_init(rusk_predict_params *p)
{
	if (p == NULL)
		return;
	memset(p, 0, sizeof *p);
	p->recent = 5;
	p->min_evals = 2;
	p->max_values = UINT64_C(1) << 20;
	p->features = (1u << RUSK_FEAT_N) - 1;
	p->init_values = 1024;
}

/* The feature values of j the predictor uses, into ks[]; returns how many. */
static int job_keys(const rusk_predictor *p, const rusk_job *j, key *ks)
{
	const uint64_t U = RUSK_JOB_UNKNOWN;
	const uint64_t a[RUSK_FEAT_N] = {j->user,  j->name, j->resources,
	                                 j->queue, j->user, j->user};
	const uint64_t b[RUSK_FEAT_N] = {0, 0, 0, 0, j->name, j->resources};
	int n = 0;
	for (int f = 0; f < RUSK_FEAT_N; f++) {
		if (!(p->p.features & (1u << f)) || a[f] == U ||
		    (f >= RUSK_FEAT_USER_NAME && b[f] == U))
			continue;
		ks[n++] = (key){a[f], b[f], (uint32_t)f};
	}
	return n;
}

static inline unsigned long key_hash(const key *k)
{
	return (unsigned long)mix64(k->a ^
	                            mix64(k->b + UINT64_C(0x9E3779B97F4A7C15) * (k->feature + 1)));
}

/* ck_hs callbacks: nodes and lookup keys both start with a key. */
static unsigned long hs_hash(const void *obj, unsigned long seed)
{
	(void)seed; /* our hashes are seeded already; ck_hs gets key_hash() everywhere */
	return key_hash(obj);
}

static bool hs_compare(const void *x, const void *y)
{
	TSAN_ACQUIRE(x); /* a stored node, probed inside ck_hs (see TSAN_RELEASE before put) */
	const key *a = x, *b = y;
	return a->a == b->a && a->b == b->b && a->feature == b->feature;
}

/* ck_hs's allocator has no context: the predictor whose set is being written (under its
 * insert mutex, by this thread) is found here. Every block carries a link word before it,
 * so a replaced slot array can join p->retired without being written where readers look. */
static __thread rusk_predictor *hs_owner;

static void *hs_malloc(size_t r)
{
	void **b = rusk_fault_alloc_() ? NULL : malloc(r + 16);
	return b != NULL ? (char *)b + 16 : NULL;
}

static void hs_free(void *p, size_t r, bool defer)
{
	(void)r;
	if (p == NULL)
		return;
	void **b = (void **)((char *)p - 16);
	if (defer && hs_owner != NULL) { /* readers may still be in it: keep it */
		*b = hs_owner->retired;
		hs_owner->retired = b;
		return;
	}
	free(b);
}

static void *hs_realloc(void *p, size_t old, size_t r, bool defer)
{
	void *n = hs_malloc(r);
	if (n != NULL && p != NULL) {
		memcpy(n, p, old < r ? old : r);
		hs_free(p, old, defer);
	}
	return n;
}

static struct ck_malloc hs_allocator = {hs_malloc, hs_realloc, hs_free};

/*
 * The front table: buckets of FT_WAYS node pointers, one bucket per 32 bytes (half a
 * line), indexed by the key's hash, each pointer tagged with the hash's top 16 bits.
 * ck_hs stays the set of record; this is a lookaside in front of it that lets a job's six
 * lookups overlap. A ck_hs_get is a chain of two cache misses (its slot, then the node it
 * compares) that the processor did not overlap with the next lookup: at 126K feature
 * values six lookups took 0.83 us of an update. Here an update or a prediction first
 * prefetches the six buckets, then the six nodes their tags point to, then checks the
 * keys: about two miss latencies in all. A bucket fills in order and is never emptied
 * (nodes live as long as the predictor); a node that finds its bucket full, or a
 * pointer above 48 bits (no room for the tag), is found through ck_hs instead. The
 * inserter (under `insert`) writes a slot with a release store; readers load it with
 * acquire, so a node's key is visible before its pointer. When the values pass half the
 * slots, the inserter builds a table twice as large from ck_hs and publishes it; the old
 * one joins p->retired (readers may still be in it).
 */
#define FT_WAYS  4
#define FT_SHIFT 48 /* pointer bits */
#define FT_PTR   ((UINT64_C(1) << FT_SHIFT) - 1)

typedef struct ftab {
	uint64_t mask;  /* buckets - 1 */
	uint64_t *slot; /* buckets * FT_WAYS entries, 32-byte aligned: pointer | tag << 48 */
	uint64_t buf[]; /* the slots, from the first 32-byte boundary */
} ftab;

/* A zeroed table of `buckets` (a power of two) buckets, or NULL. */
static ftab *ft_new(uint64_t buckets)
{
	size_t bytes = sizeof(ftab) + 32 + buckets * FT_WAYS * sizeof(uint64_t);
	ftab *t = hs_malloc(bytes);
	if (t == NULL)
		return NULL;
	memset(t, 0, bytes);
	t->mask = buckets - 1;
	t->slot = (uint64_t *)(((uintptr_t)t->buf + 31) & ~(uintptr_t)31);
	return t;
}

static inline uint64_t *ft_bucket(const ftab *t, unsigned long h)
{
	return &t->slot[(h & t->mask) * FT_WAYS];
}

/* Adds nd (hash h) to t's bucket if it has room; the inserter only. */
static void ft_put(ftab *t, node *nd, unsigned long h)
{
	uint64_t e = (uint64_t)(uintptr_t)nd, *b = ft_bucket(t, h);
	if (e > FT_PTR)
		return;
	e |= (uint64_t)h >> FT_SHIFT << FT_SHIFT;
	for (int w = 0; w < FT_WAYS; w++)
		if (rusk_load64(&b[w], RUSK_RELAXED) == 0) {
			rusk_store64(&b[w], e, RUSK_RELEASE);
			return;
		}
}

/* The first node of t's bucket for h whose tag matches h, or NULL: a candidate whose key
 * the caller checks (after prefetching it). */
static inline node *ft_candidate(const ftab *t, unsigned long h)
{
	const uint64_t *b = ft_bucket(t, h), tag = (uint64_t)h >> FT_SHIFT;
	for (int w = 0; w < FT_WAYS; w++) {
		uint64_t e = rusk_load64((uint64_t *)&b[w], RUSK_ACQUIRE);
		if (e == 0)
			return NULL;
		if (e >> FT_SHIFT == tag)
			return (node *)(uintptr_t)(e & FT_PTR);
	}
	return NULL;
}

static inline bool key_eq(const key *a, const key *b)
{
	return a->a == b->a && a->b == b->b && a->feature == b->feature;
}

/* Doubles the front table from ck_hs when the values pass half its slots; the inserter
 * only (hs_owner set). Without memory the old table stays (lookups fall back more). */
static void ft_grow(rusk_predictor *p)
{
	ftab *old = p->ft;
	if (rusk_load64(&p->values, RUSK_RELAXED) * 2 <= (old->mask + 1) * FT_WAYS)
		return;
	ftab *t = ft_new((old->mask + 1) * 2);
	if (t == NULL)
		return;
	ck_hs_iterator_t it = CK_HS_ITERATOR_INITIALIZER;
	void *obj;
	while (ck_hs_next(&p->hs, &it, &obj))
		ft_put(t, obj, key_hash(obj));
	rusk_storep((void **)&p->ft, t, RUSK_RELEASE); /* pairs with lookup's acquire */
	hs_free(old, 0, true);
}

/* The node of k, or NULL. Lock-free, any thread. */
static node *lookup(const rusk_predictor *p, const key *k)
{
	unsigned long h = key_hash(k);
	node *nd = ft_candidate(rusk_loadp((void *const *)&p->ft, RUSK_ACQUIRE), h);
	if (nd != NULL && key_eq(&nd->k, k))
		return nd;
	nd = ck_hs_get((ck_hs_t *)&p->hs, h, k);
	if (nd != NULL)
		TSAN_ACQUIRE(nd); /* its key and records, written before ck_hs_put */
	return nd;
}

/* A zeroed node (n = 0 in both records), or NULL. */
static node *node_new(void)
{
	return rusk_fault_alloc_() ? NULL : calloc(1, sizeof(node));
}

/* The node of k, added if new; NULL past max_values or without memory (*nomem set). */
static node *lookup_or_add(rusk_predictor *p, const key *k, bool *nomem)
{
	node *nd = lookup(p, k);
	if (nd != NULL)
		return nd;
	pthread_mutex_lock(&p->insert);
	if ((nd = lookup(p, k)) == NULL) { /* not added by another update meanwhile */
		if (rusk_load64(&p->values, RUSK_RELAXED) >= p->p.max_values) {
			rusk_faa64(&p->untracked, 1, RUSK_RELAXED);
		} else if ((nd = node_new()) == NULL) {
			*nomem = true;
		} else {
			nd->k = *k;
			TSAN_RELEASE(nd);
			hs_owner = p;
			bool ok = ck_hs_put(&p->hs, key_hash(k), nd);
			hs_owner = NULL;
			if (ok) {
				rusk_faa64(&p->values, 1, RUSK_RELAXED);
				ft_put(p->ft, nd, key_hash(k));
				hs_owner = p;
				ft_grow(p);
				hs_owner = NULL;
			} else { /* the set could not grow */
				free(nd);
				nd = NULL;
				*nomem = true;
			}
		}
	}
	pthread_mutex_unlock(&p->insert);
	return nd;
}

/* The nodes of the n keys (NULL where a value is not tracked), found together: every
 * bucket of the front table is prefetched (lookup_start, which returns the table), then
 * every candidate node, before any key is compared, so that the misses overlap (the front
 * table's comment); the caller may work between the two calls. Lock-free. */
static const ftab *lookup_start(const rusk_predictor *p, const key *ks, int n, unsigned long *h)
{
	const ftab *t = rusk_loadp((void *const *)&p->ft, RUSK_ACQUIRE); /* grow's release */
	for (int i = 0; i < n; i++) {
		h[i] = key_hash(&ks[i]);
		__builtin_prefetch(ft_bucket(t, h[i]), 0, 3);
	}
	return t;
}

static void lookup_finish(const rusk_predictor *p, const ftab *t, const key *ks, int n,
                          const unsigned long *h, node **out)
{
	for (int i = 0; i < n; i++)
		if ((out[i] = ft_candidate(t, h[i])) != NULL)
			__builtin_prefetch(out[i], 0, 3);
	for (int i = 0; i < n; i++)
		if (out[i] == NULL || !key_eq(&out[i]->k, &ks[i])) {
			out[i] = ck_hs_get((ck_hs_t *)&p->hs, h[i], &ks[i]);
			if (out[i] != NULL)
				TSAN_ACQUIRE(out[i]); /* as in lookup() */
		}
}

/* Bytes of r that hold data: the fields, then the bins in use (n_bins clamped: a torn
 * read of a record being rewritten must not run past it; the version check discards it). */
static inline size_t rec_used(uint32_t n_bins)
{
	if (n_bins > RUSK_DIST_MAX_BINS)
		n_bins = RUSK_DIST_MAX_BINS;
	return offsetof(rec, dist.bin) + (size_t)n_bins * sizeof(rusk_dist_bin);
}

/* Replaces `old` by `x` in the sorted window w[0..m) (m = its size, old present), or
 * inserts x when grow (then w has m + 1 values). */
static void window_put(float *w, uint32_t m, bool grow, float old, float x)
{
	uint32_t i = m;
	if (!grow) {
		for (i = 0; i < m && w[i] != old; i++)
			;
		if (i == m) /* not found: cannot happen, keep the window sorted anyway */
			i = m - 1;
		for (; i + 1 < m; i++) /* at most 15 floats: a loop, not a call to memmove */
			w[i] = w[i + 1];
	}
	for (; i > 0 && w[i - 1] > x; i--)
		w[i] = w[i - 1];
	w[i] = x;
}

/* Judges r's experts on y, then learns y into everything but the histogram (the order
 * 3Sigma's streaming NMAE needs: an estimate is scored on a runtime it had not seen). */
static void rec_learn_head(rec *r, double y, uint32_t x_recent)
{
	rec_head *h = &r->h;
	if (h->n > 0) {
		for (int k = 0; k < RUSK_EST_N; k++)
			h->err[k] += fabs(h->est[k] - y);
		h->actual += y;
	}
	h->n++;
	h->est[RUSK_EST_AVERAGE] += (y - h->est[RUSK_EST_AVERAGE]) / (double)h->n;
	h->est[RUSK_EST_ROLLING] =
	        h->n == 1 ? y : EWMA_ALPHA * y + (1 - EWMA_ALPHA) * h->est[RUSK_EST_ROLLING];
	float fy = (float)y;
	bool grow = h->n <= RUSK_PREDICT_RECENT;
	uint32_t m = grow ? (uint32_t)h->n - 1 : RUSK_PREDICT_RECENT;
	window_put(r->sorted, m, grow, r->ring[r->head], fy);
	m += grow;
	r->ring[r->head] = fy;
	r->head = (r->head + 1) % RUSK_PREDICT_RECENT;
	h->est[RUSK_EST_MEDIAN] =
	        m % 2 ? r->sorted[m / 2] : ((double)r->sorted[m / 2 - 1] + r->sorted[m / 2]) / 2;
	uint32_t x = x_recent < m ? x_recent : m;
	double s = 0;
	for (uint32_t i = 1; i <= x; i++)
		s += r->ring[(r->head + RUSK_PREDICT_RECENT - i) % RUSK_PREDICT_RECENT];
	h->est[RUSK_EST_RECENT] = s / x;
}

/* Sets nd's lock bit; returns the version it holds. Only updates of nd's feature value
 * ever wait here, never readers. */
static uint64_t node_lock(node *nd)
{
	for (unsigned spins = 0;; spins++) {
		uint64_t v = rusk_load64(&nd->v, RUSK_RELAXED);
		if (!(v & V_LOCK) && rusk_cas64(&nd->v, &v, v | V_LOCK, RUSK_ACQUIRE))
			return v;
		if (spins >= 64) /* the holder was preempted: let it run */
			sched_yield();
	}
}

/* Stores bins [lo, hi) of the list that edit e makes of `old` into dst, in at most three
 * runs of word copies and two single bins (rusk_dist_edit_bin_ per bin, with its
 * branches, was slower than the copies it saved). */
static void store_edit(rusk_dist_bin *dst, const rusk_dist_bin *old, const rusk_dist_edit_ *e,
                       uint32_t lo, uint32_t hi)
{
	uint32_t m0 = e->mv_dst, m1 = e->mv_dst + e->mv_n; /* bins moved: [m0, m1) */
	uint32_t a = lo, b = hi < m0 ? hi : m0;
	if (a < b)
		rusk_seq_write(&dst[a], &old[a], (size_t)(b - a) * sizeof *dst);
	a = lo > m0 ? lo : m0;
	b = hi < m1 ? hi : m1;
	if (a < b)
		rusk_seq_write(&dst[a], &old[a - m0 + e->mv_src], (size_t)(b - a) * sizeof *dst);
	a = lo > m1 ? lo : m1;
	if (a < hi)
		rusk_seq_write(&dst[a], &old[a], (size_t)(hi - a) * sizeof *dst);
	/* p1 and p2 lie in e's range, inside [lo, hi), never among the moved bins */
	rusk_seq_write(&dst[e->p1], &e->b1, sizeof *dst);
	if (e->p2 != UINT32_MAX)
		rusk_seq_write(&dst[e->p2], &e->b2, sizeof *dst);
}

/* Learns y into nd, locked by the caller at version v; publishes v + 1, unlocked.
 *
 * The copy written, r[(v + 1) & 1], holds state v - 1 (the update before last wrote it,
 * or it is still zeroed): its bins differ from the new state's only where update v
 * (cur->dirty) or this one changed bins, so only those bins are stored, after every field
 * before the bins (240 bytes). The new bins are read off the current copy through the
 * histogram's edit (rusk_dist_plan_), so the current record is never copied whole: only
 * its fields before the bins come into a local record. An insert into a full histogram
 * changes about a third of its bins. (Before: the whole current record was copied into a
 * local one, learned there and stored whole, two passes of up to 880 bytes per record.)
 */
static void node_learn_locked(rusk_predictor *p, node *nd, uint64_t v, double y)
{
	rec local;
	const rec *cur = &nd->r[v & 1];
	rec *spare = &nd->r[(v + 1) & 1];
	/* Plain reads: no other thread writes this copy while we hold the lock. */
	memcpy(&local, cur, offsetof(rec, dist.bin));
	rec_learn_head(&local, y, p->p.recent);
	rusk_dist_edit_ e;
	bool planned = rusk_dist_plan_(&cur->dist, (float)y, &e);
	if (RUSK_LIKELY(planned)) {
		local.dist.count = e.count;
		local.dist.min = e.min;
		local.dist.max = e.max;
		local.dist.n_bins = e.n_bins;
	} else { /* a halving of the counts is due (after 2^31 runtimes): the whole list */
		memcpy(local.dist.bin, cur->dist.bin, cur->dist.n_bins * sizeof(rusk_dist_bin));
		rusk_dist_add_range_(&local.dist, y, &e.lo, &e.hi); /* y checked by the caller */
	}
	uint32_t lo = cur->dirty & 0xffff, hi = cur->dirty >> 16;
	local.dirty = e.lo | e.hi << 16;
	lo = e.lo < lo ? e.lo : lo;
	hi = e.hi > hi ? e.hi : hi;
	hi = hi < e.n_bins ? hi : local.dist.n_bins;
	/* Invariant 2: our stores to the other copy come after the previous update's v store
	 * (which our lock CAS read) ... */
	rusk_fence_store();
	rusk_seq_write(spare, &local, offsetof(rec, dist.bin));
	if (RUSK_LIKELY(planned))
		store_edit(spare->dist.bin, cur->dist.bin, &e, lo, hi);
	else if (lo < hi)
		rusk_seq_write(&spare->dist.bin[lo], &local.dist.bin[lo],
		               (size_t)(hi - lo) * sizeof(rusk_dist_bin));
	/* ... and the new version, which also unlocks, after them (release). */
	rusk_store64(&nd->v, v + 1, RUSK_RELEASE);
}

/* Sorts the m <= RUSK_FEAT_N nodes by address (insertion sort: qsort's calls cost more). */
static void sort_nodes(node **nds, int m)
{
	for (int i = 1; i < m; i++) {
		node *x = nds[i];
		int k = i;
		for (; k > 0 && (uintptr_t)nds[k - 1] > (uintptr_t)x; k--)
			nds[k] = nds[k - 1];
		nds[k] = x;
	}
}

/*
 * Learns y into the m nodes. Every lock is taken first, in one order (by address), so two
 * updates that share feature values cannot deadlock (the global node is learned before,
 * alone: rusk_predict_update). Each node is published, and unlocked, as soon as it is
 * written.
 */
static void learn_all(rusk_predictor *p, node **nds, int m, double y)
{
	uint64_t vs[RUSK_FEAT_N];
	sort_nodes(nds, m);
	for (int i = 0; i < m; i++)
		vs[i] = node_lock(nds[i]);
	/* Queue and resources values are few (a handful of queues and shapes), so their
	 * records are likely in cache: learning them first gives the other values' prefetched
	 * lines time to arrive. */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < m; i++) {
			uint32_t f = nds[i]->k.feature;
			if ((f == RUSK_FEAT_QUEUE || f == RUSK_FEAT_RESOURCES) == (pass == 0))
				node_learn_locked(p, nds[i], vs[i], y);
		}
}

/* Reads the first `bytes` of nd's current record into out; returns the reads retried.
 * Never waits for a writer (invariant 2 and the top of the file). */
static uint64_t node_read(const node *nd, rec *out, bool with_dist)
{
	for (uint64_t tries = 0;; tries++) {
		uint64_t v = rusk_load64((uint64_t *)&nd->v, RUSK_ACQUIRE) & ~V_LOCK;
		const rec *r = &nd->r[v & 1];
		if (with_dist) {
			uint32_t nb = rusk_load32((uint32_t *)&r->dist.n_bins, RUSK_SEQ_DATA);
			rusk_seq_read(out, r, rec_used(nb));
			out->dist.n_bins = nb > RUSK_DIST_MAX_BINS ? RUSK_DIST_MAX_BINS : nb;
		} else {
			rusk_seq_read(&out->h, &r->h, sizeof out->h);
		}
		rusk_fence_load();
		/* A writer that only took the lock meanwhile writes the other copy. */
		if ((rusk_load64((uint64_t *)&nd->v, RUSK_RELAXED) & ~V_LOCK) == v)
			return tries;
	}
}

RUSK_EXPORT int rusk_predict_create(const rusk_predict_params *pp, rusk_predictor **out, char *err,
                                    size_t errlen)
{
	rusk_predict_params p;
	if (pp == NULL)
		rusk_predict_params_init(&p);
	else
		p = *pp;
	if (out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "out is NULL");
	*out = NULL;
	if (p.recent < 1 || p.recent > RUSK_PREDICT_RECENT)
		return rusk_errf(err, errlen, RUSK_EINVAL, "recent %u is not in 1..%d", p.recent,
		                 RUSK_PREDICT_RECENT);
	if (p.min_evals < 1)
		return rusk_errf(err, errlen, RUSK_EINVAL, "min_evals must be >= 1");
	if (p.max_values < 1)
		return rusk_errf(err, errlen, RUSK_EINVAL, "max_values must be >= 1");
	if (p.features == 0 || p.features >= (1u << RUSK_FEAT_N))
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "features 0x%x is not a non-empty mask of the %d features",
		                 p.features, RUSK_FEAT_N);
	if (p.init_values < 1 || p.init_values > (UINT64_C(1) << 32))
		return rusk_errf(err, errlen, RUSK_EINVAL, "init_values %llu is not in 1..2^32",
		                 (unsigned long long)p.init_values);
	rusk_predictor *pr = rusk_alloc_zeroed(sizeof *pr, RUSK_CACHELINE);
	node *g = pr != NULL ? node_new() : NULL;
	if (g == NULL) {
		rusk_alloc_free(pr, sizeof *pr, RUSK_CACHELINE);
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	}
	pr->p = p;
	pr->global = g;
	g->k.feature = RUSK_FEAT_GLOBAL;
	pthread_mutex_init(&pr->insert, NULL);
	/* ck_hs keeps its load under one half: twice the values expected, in slots. */
	if (!ck_hs_init(&pr->hs, CK_HS_MODE_OBJECT | CK_HS_MODE_SPMC, hs_hash, hs_compare,
	                &hs_allocator, (unsigned long)(2 * p.init_values), 0)) {
		pthread_mutex_destroy(&pr->insert);
		free(g);
		rusk_alloc_free(pr, sizeof *pr, RUSK_CACHELINE);
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory (hash set)");
	}
	uint64_t buckets = 1;
	while (buckets * 2 < p.init_values)
		buckets *= 2;
	if ((pr->ft = ft_new(buckets)) == NULL) {
		ck_hs_destroy(&pr->hs);
		pthread_mutex_destroy(&pr->insert);
		free(g);
		rusk_alloc_free(pr, sizeof *pr, RUSK_CACHELINE);
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory (front table)");
	}
	*out = pr;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_predict_destroy(rusk_predictor *p)
{
	if (p == NULL)
		return;
	ck_hs_iterator_t it = CK_HS_ITERATOR_INITIALIZER;
	void *obj;
	while (ck_hs_next(&p->hs, &it, &obj))
		free(obj);
	ck_hs_destroy(&p->hs);
	hs_free(p->ft, 0, false);
	for (void **b = p->retired; b != NULL;) {
		void **next = *b;
		free(b);
		b = next;
	}
	pthread_mutex_destroy(&p->insert);
	free(p->global);
	rusk_alloc_free(p, sizeof *p, RUSK_CACHELINE);
}

/* Starts loading the lines of nd's records an update or a read will touch, so that the
 * cache misses of a job's six feature values overlap instead of coming one after the
 * other (at 100K feature values nearly every one misses: bench/bench_predict.c). An
 * update reads the current record and rewrites the other copy's fields before the bins
 * (and the bins it changed, not known yet); a read needs only the head. Prefetching the
 * whole used part of a record (its size hinted in the node's first line) was slower:
 * the update loop is bound by the lines in flight. */
#define PREFETCH_LINES 6
static inline void prefetch_node(const node *nd, bool for_update)
{
	uint64_t v = rusk_load64((uint64_t *)&nd->v, RUSK_RELAXED); /* line 0: the lookup read it */
	const char *cur = (const char *)&nd->r[v & 1], *nxt = (const char *)&nd->r[(v + 1) & 1];
	for (int l = 0; l < (for_update ? PREFETCH_LINES : 2); l++) {
		__builtin_prefetch(cur + l * RUSK_CACHELINE, 0, 3);
		if (for_update &&
		    l * RUSK_CACHELINE < (int)offsetof(rec, dist.bin) + RUSK_CACHELINE)
			__builtin_prefetch(nxt + l * RUSK_CACHELINE, 1, 3);
	}
}

/* The lines of nd's current bins past those prefetch_node asked for: the histogram's
 * binary search would otherwise meet them one miss after another. Reads n_bins, so it
 * runs once the first lines have had time to arrive. */
static inline void prefetch_bins(const node *nd)
{
	uint64_t v = rusk_load64((uint64_t *)&nd->v, RUSK_RELAXED);
	const rec *cur = &nd->r[v & 1];
	size_t used = rec_used(rusk_load32((uint32_t *)&cur->dist.n_bins, RUSK_RELAXED));
	for (size_t o = PREFETCH_LINES * RUSK_CACHELINE; o < used; o += RUSK_CACHELINE)
		__builtin_prefetch((const char *)cur + o, 0, 3);
}

RUSK_EXPORT int rusk_predict_update(rusk_predictor *p, const rusk_job *j, double runtime_s)
{
	if (p == NULL || j == NULL || !(runtime_s >= 0) || runtime_s > 3e38)
		return RUSK_EINVAL;
	key ks[RUSK_FEAT_N];
	node *nds[RUSK_FEAT_N];
	int n = job_keys(p, j, ks), m = 0;
	bool nomem = false;
	unsigned long h[RUSK_FEAT_N];
	const ftab *t = lookup_start(p, ks, n, h);
	/* The global record (every update's, so in cache) while the buckets arrive. */
	node_learn_locked(p, p->global, node_lock(p->global), runtime_s);
	lookup_finish(p, t, ks, n, h, nds);
	for (int i = 0; i < n; i++) /* new values are added (rare once the values are known) */
		if ((nds[m] = nds[i] != NULL ? nds[i] : lookup_or_add(p, &ks[i], &nomem)) != NULL)
			prefetch_node(nds[m++], true);
	for (int i = 0; i < m; i++)
		prefetch_bins(nds[i]);
	learn_all(p, nds, m, runtime_s);
	rusk_faa64(&p->updates, 1, RUSK_RELAXED);
	return nomem ? RUSK_ENOMEM : RUSK_OK;
}

static inline double head_nmae(const rec_head *h, int k)
{
	if (h->n <= 1)
		return NAN;
	if (h->actual > 0)
		return h->err[k] / h->actual;
	return h->err[k] > 0 ? INFINITY : 0;
}

/* The best estimator of h (lowest NMAE; average when none was judged). */
static int best_estimator(const rec_head *h)
{
	int best = RUSK_EST_AVERAGE;
	for (int k = 1; k < RUSK_EST_N && h->n > 1; k++)
		if (head_nmae(h, k) < head_nmae(h, best))
			best = k;
	return best;
}

static void fill(rusk_prediction *out, rusk_pred_source src, int f, int k, const rec_head *h)
{
	out->source = src;
	out->feature = (rusk_feature)f;
	out->estimator = (rusk_estimator)k;
	out->estimate_s = h != NULL ? h->est[k] : 0;
	out->nmae = h != NULL ? head_nmae(h, k) : NAN;
	out->evals = h != NULL ? head_evals(h) : 0;
	out->history = h != NULL ? h->n : 0;
}

RUSK_EXPORT int rusk_predict(const rusk_predictor *p, const rusk_job *j, rusk_prediction *out,
                             rusk_dist *dist)
{
	if (p == NULL || j == NULL || out == NULL)
		return RUSK_EINVAL;
	key ks[RUSK_FEAT_N];
	int n = job_keys(p, j, ks), best_f = -1, best_k = 0;
	const node *best = NULL;
	rec_head bh = {0};
	double best_nmae = INFINITY;
	uint64_t retried = 0;
	node *nds[RUSK_FEAT_N];
	unsigned long h[RUSK_FEAT_N];
	lookup_finish(p, lookup_start(p, ks, n, h), ks, n, h, nds);
	for (int i = 0; i < n; i++)
		if (nds[i] != NULL)
			prefetch_node(nds[i], false);
	for (int i = 0; i < n; i++) {
		if (nds[i] == NULL)
			continue;
		rec r;
		retried += node_read(nds[i], &r, false);
		if (head_evals(&r.h) < p->p.min_evals)
			continue;
		for (int k = 0; k < RUSK_EST_N; k++) {
			double e = head_nmae(&r.h, k);
			if (e < best_nmae || (e == best_nmae && best != NULL && r.h.n > bh.n)) {
				best = nds[i];
				bh = r.h;
				best_nmae = e;
				best_f = (int)ks[i].feature;
				best_k = k;
			}
		}
	}
	if (best == NULL) {
		best = p->global;
		best_f = RUSK_FEAT_GLOBAL;
	}
	if (dist != NULL || best_f == RUSK_FEAT_GLOBAL) {
		/* One consistent read of the chosen record, distribution included: it may be an
		 * update newer than the one ranked, and then its own estimate is reported. */
		rec r;
		retried += node_read(best, &r, dist != NULL);
		bh = r.h;
		if (dist != NULL)
			memcpy(dist, &r.dist,
			       offsetof(rusk_dist, bin) + r.dist.n_bins * sizeof(rusk_dist_bin));
		if (best_f == RUSK_FEAT_GLOBAL)
			best_k = best_estimator(&bh);
	}
	if (RUSK_UNLIKELY(retried != 0)) /* rare: two updates of a value during our read */
		rusk_faa64(&((rusk_predictor *)p)->retries, retried, RUSK_RELAXED);
	if (best_f == RUSK_FEAT_GLOBAL)
		fill(out, bh.n > 0 ? RUSK_PRED_GLOBAL : RUSK_PRED_NONE, best_f, best_k,
		     bh.n > 0 ? &bh : NULL);
	else
		fill(out, RUSK_PRED_EXPERT, best_f, best_k, &bh);
	if (dist != NULL && bh.n == 0)
		rusk_dist_init(dist);
	return RUSK_OK;
}

RUSK_EXPORT size_t rusk_predict_experts(const rusk_predictor *p, const rusk_job *j,
                                        rusk_expert *out, size_t n)
{
	if (p == NULL || j == NULL)
		return 0;
	if (out == NULL)
		n = 0; /* count only */
	key ks[RUSK_FEAT_N];
	int nk = job_keys(p, j, ks);
	size_t at = 0;
	for (int i = 0; i <= nk; i++) {
		const node *nd = i < nk ? lookup(p, &ks[i]) : p->global;
		if (nd == NULL)
			continue;
		rec r;
		node_read(nd, &r, false);
		if (r.h.n == 0)
			continue;
		for (int k = 0; k < RUSK_EST_N; k++, at++)
			if (at < n)
				out[at] = (rusk_expert){.feature =
				                                i < nk ? (rusk_feature)ks[i].feature
				                                       : RUSK_FEAT_GLOBAL,
				                        .estimator = (rusk_estimator)k,
				                        .estimate_s = r.h.est[k],
				                        .nmae = head_nmae(&r.h, k),
				                        .evals = head_evals(&r.h),
				                        .history = r.h.n};
	}
	return at;
}

RUSK_EXPORT void rusk_predict_stats_get(const rusk_predictor *p, rusk_predict_stats *out)
{
	if (out == NULL)
		return;
	if (p == NULL) {
		*out = (rusk_predict_stats){.bytes_per_value = sizeof(node)};
		return;
	}
	rusk_predictor *q = (rusk_predictor *)p; /* relaxed loads of the counters only */
	out->values = rusk_load64(&q->values, RUSK_RELAXED);
	out->untracked = rusk_load64(&q->untracked, RUSK_RELAXED);
	out->updates = rusk_load64(&q->updates, RUSK_RELAXED);
	out->retries = rusk_load64(&q->retries, RUSK_RELAXED);
	out->bytes_per_value = sizeof(node);
}
