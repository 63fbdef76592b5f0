/* SPDX-License-Identifier: MIT */
/*
 * 3σPredict: runtime distributions per feature value, and the choice among experts by
 * NMAE (3Sigma §4.1). Public contract in rusk/predict.h; the histograms are core/shist.c.
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
 * bit by CAS (only updates of the same feature value ever meet there), copies r[v & 1]
 * into a local record, judges and learns the runtime there, writes the result into the
 * other copy r[(v + 1) & 1], and publishes it by storing v + 1 without the lock bit
 * (release). A reader loads v (acquire), reads the words it needs from r[v & 1], and
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
 *      jemalloc size class) and its ck_hs slots, whatever the number of runtimes learned.
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
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <ck_hs.h>

#include <rusk/predict.h>

#include "alloc.h"
#include "atomic.h"
#include "internal.h"

/* ThreadSanitizer cannot see ck_hs's publication of a node (libck is not instrumented):
 * the node (its key and zeroed records) is released before ck_hs_put and acquired after a
 * lookup finds it. TSan also refuses standalone fences: in TSan builds a reader's word
 * loads are acquire loads instead of relaxed loads followed by a load fence, and the
 * writer's store fence is atomic.h's full fence (the same orders). */
#if defined(RUSK_TSAN)
#define WORD_LOAD_MO __ATOMIC_ACQUIRE
static inline void fence_load(void)
{
}
static inline void fence_store(void)
{
	rusk_fence_full();
}
#else
#define WORD_LOAD_MO __ATOMIC_RELAXED
static inline void fence_load(void)
{
	ck_pr_fence_load();
}
/* Orders earlier stores before later ones: a compiler barrier on x86 (TSO). */
static inline void fence_store(void)
{
	ck_pr_fence_store();
}
#endif

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
	uint32_t head, pad_;               /* next slot of the ring */
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
	void *retired;          /* slot arrays ck_hs replaced: freed at destroy */
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

/* The node of k, or NULL. Lock-free, any thread. */
static node *lookup(const rusk_predictor *p, const key *k)
{
	node *nd = ck_hs_get((ck_hs_t *)&p->hs, key_hash(k), k);
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

/* Bytes of r that hold data: the fields, then the bins in use (n_bins clamped: a torn
 * read of a record being rewritten must not run past it; the version check discards it). */
static inline size_t rec_used(uint32_t n_bins)
{
	if (n_bins > RUSK_DIST_MAX_BINS)
		n_bins = RUSK_DIST_MAX_BINS;
	return offsetof(rec, dist.bin) + (size_t)n_bins * sizeof(rusk_dist_bin);
}

/* Word copies between a node's records and private memory (bytes: a multiple of 8), with
 * relaxed C11 atomics: a read that overlaps a write is then a retried read, never a data
 * race. The builtins, not atomic.h's ck_pr back end: ck_pr's per-word inline assembly
 * with a memory clobber made these copies (up to 110 words, twice per update) three
 * times slower; a relaxed atomic word access is a plain move either way. The words are
 * records of doubles, floats and counts: may_alias keeps the compiler from assuming that
 * stores through them leave a record's doubles unchanged (strict aliasing). */
typedef uint64_t __attribute__((may_alias)) word;

static inline void words_load(void *dst, const void *src, size_t bytes)
{
	word *d = dst;
	const word *s = src;
	for (size_t i = 0; i < bytes / 8; i++)
		d[i] = __atomic_load_n(&s[i], WORD_LOAD_MO);
}

static inline void words_store(void *dst, const void *src, size_t bytes)
{
	word *d = dst;
	const word *s = src;
	for (size_t i = 0; i < bytes / 8; i++)
		__atomic_store_n(&d[i], s[i], __ATOMIC_RELAXED);
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
		memmove(&w[i], &w[i + 1], (size_t)(m - 1 - i) * sizeof *w);
		i = m - 1;
	}
	for (; i > 0 && w[i - 1] > x; i--)
		w[i] = w[i - 1];
	w[i] = x;
}

/* Judges r's experts on y, then learns y (the order 3Sigma's streaming NMAE needs: an
 * estimate is scored on a runtime it had not seen). */
static void rec_learn(rec *r, double y, uint32_t x_recent)
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
	rusk_dist_add(&r->dist, y); /* y was checked by the caller */
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

/* Learns y into nd, locked by the caller at version v; publishes v + 1, unlocked. */
static void node_learn_locked(rusk_predictor *p, node *nd, uint64_t v, double y)
{
	rec local;
	const rec *cur = &nd->r[v & 1];
	/* Plain reads: no other thread writes this copy while we hold the lock. */
	memcpy(&local, cur, rec_used(cur->dist.n_bins));
	rec_learn(&local, y, p->p.recent);
	/* Invariant 2: our stores to the other copy come after the previous update's v store
	 * (which our lock CAS read) ... */
	fence_store();
	words_store(&nd->r[(v + 1) & 1], &local, rec_used(local.dist.n_bins));
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
 * Learns y into the m nodes and the global one. Every lock is taken first, in one order
 * (the global node, then by address), so two updates that share feature values cannot
 * deadlock. Each node is published, and unlocked, as soon as it is written; the global
 * one, which every update needs, first.
 */
static void learn_all(rusk_predictor *p, node **nds, int m, double y)
{
	uint64_t vs[RUSK_FEAT_N];
	sort_nodes(nds, m);
	uint64_t gv = node_lock(p->global);
	for (int i = 0; i < m; i++)
		vs[i] = node_lock(nds[i]);
	node_learn_locked(p, p->global, gv, y);
	for (int i = 0; i < m; i++)
		node_learn_locked(p, nds[i], vs[i], y);
}

/* Reads the first `bytes` of nd's current record into out; returns the reads retried.
 * Never waits for a writer (invariant 2 and the top of the file). */
static uint64_t node_read(const node *nd, rec *out, bool with_dist)
{
	for (uint64_t tries = 0;; tries++) {
		uint64_t v = rusk_load64((uint64_t *)&nd->v, RUSK_ACQUIRE) & ~V_LOCK;
		const rec *r = &nd->r[v & 1];
		if (with_dist) {
			uint32_t nb = rusk_load32((uint32_t *)&r->dist.n_bins, WORD_LOAD_MO);
			words_load(out, r, rec_used(nb));
			out->dist.n_bins = nb > RUSK_DIST_MAX_BINS ? RUSK_DIST_MAX_BINS : nb;
		} else {
			words_load(&out->h, &r->h, sizeof out->h);
		}
		fence_load();
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
 * other (at 100K feature values nearly every one misses: bench/bench_predict.c). */
#define PREFETCH_LINES 6
static inline void prefetch_node(const node *nd, bool for_update)
{
	uint64_t v = rusk_load64((uint64_t *)&nd->v, RUSK_RELAXED); /* line 0: the lookup read it */
	const char *cur = (const char *)&nd->r[v & 1], *nxt = (const char *)&nd->r[(v + 1) & 1];
	for (int l = 0; l < (for_update ? PREFETCH_LINES : 2); l++) {
		__builtin_prefetch(cur + l * RUSK_CACHELINE, 0, 3);
		if (for_update)
			__builtin_prefetch(nxt + l * RUSK_CACHELINE, 1, 3);
	}
}

RUSK_EXPORT int rusk_predict_update(rusk_predictor *p, const rusk_job *j, double runtime_s)
{
	if (p == NULL || j == NULL || !(runtime_s >= 0) || runtime_s > 3e38)
		return RUSK_EINVAL;
	key ks[RUSK_FEAT_N];
	node *nds[RUSK_FEAT_N];
	int n = job_keys(p, j, ks), m = 0;
	bool nomem = false;
	for (int i = 0; i < n; i++)
		if ((nds[m] = lookup_or_add(p, &ks[i], &nomem)) != NULL)
			prefetch_node(nds[m++], true);
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
	const node *nds[RUSK_FEAT_N];
	for (int i = 0; i < n; i++)
		if ((nds[i] = lookup(p, &ks[i])) != NULL)
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
	rusk_predictor *q = (rusk_predictor *)p; /* relaxed loads of the counters only */
	out->values = rusk_load64(&q->values, RUSK_RELAXED);
	out->untracked = rusk_load64(&q->untracked, RUSK_RELAXED);
	out->updates = rusk_load64(&q->updates, RUSK_RELAXED);
	out->retries = rusk_load64(&q->retries, RUSK_RELAXED);
	out->bytes_per_value = sizeof(node);
}
