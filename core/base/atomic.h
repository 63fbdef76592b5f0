/* SPDX-License-Identifier: MIT */
/*
 * rusk's one atomics vocabulary. Internal.
 *
 * Every shared word in the kernel is touched only through these macros, each naming its
 * memory order. Two back ends implement them:
 *
 *  - Normal builds: Concurrency Kit's ck_pr (lock cmpxchg / lock xadd on x86-64), with
 *    the requested order made explicit by ck_pr_fence_acquire/_release around the access.
 *    ck is configured TSO on x86-64, so those fences are compiler barriers there; they are
 *    written anyway so that the orders are right where ck emits real fences (weaker CPUs).
 *  - ThreadSanitizer builds (RUSK_TSAN): the C11/GCC __atomic builtins with the same
 *    orders. ck_pr's inline assembly is invisible to TSan, which would then miss every
 *    happens-before edge rusk relies on and report the data they protect as races. With
 *    the builtins, TSan checks rusk's own orders; the algorithm is the same code.
 *
 * Both back ends are full-width 32/64-bit and pointer operations on naturally aligned words.
 */
#ifndef RUSK_CORE_ATOMIC_H
#define RUSK_CORE_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RUSK_RELAXED __ATOMIC_RELAXED
#define RUSK_ACQUIRE __ATOMIC_ACQUIRE
#define RUSK_RELEASE __ATOMIC_RELEASE
#define RUSK_ACQ_REL __ATOMIC_ACQ_REL

#if defined(RUSK_TSAN)

static inline uint64_t rusk_load64(const uint64_t *p, int mo)
{
	return __atomic_load_n(p, mo);
}
static inline void rusk_store64(uint64_t *p, uint64_t v, int mo)
{
	__atomic_store_n(p, v, mo);
}
static inline uint32_t rusk_load32(const uint32_t *p, int mo)
{
	return __atomic_load_n(p, mo);
}
static inline void rusk_store32(uint32_t *p, uint32_t v, int mo)
{
	__atomic_store_n(p, v, mo);
}
/* On failure *expected receives the current value; failure order is relaxed. */
static inline bool rusk_cas64(uint64_t *p, uint64_t *expected, uint64_t desired, int mo)
{
	return __atomic_compare_exchange_n(p, expected, desired, false, mo, __ATOMIC_RELAXED);
}
static inline uint64_t rusk_faa64(uint64_t *p, uint64_t d, int mo)
{
	return __atomic_fetch_add(p, d, mo);
}
static inline uint32_t rusk_faa32(uint32_t *p, uint32_t d, int mo)
{
	return __atomic_fetch_add(p, d, mo);
}
static inline bool rusk_cas32(uint32_t *p, uint32_t *expected, uint32_t desired, int mo)
{
	return __atomic_compare_exchange_n(p, expected, desired, false, mo, __ATOMIC_RELAXED);
}
static inline void *rusk_loadp(void *const *p, int mo)
{
	return __atomic_load_n(p, mo);
}
static inline void rusk_storep(void **p, void *v, int mo)
{
	__atomic_store_n(p, v, mo);
}
static inline bool rusk_casp(void **p, void **expected, void *desired, int mo)
{
	return __atomic_compare_exchange_n(p, expected, desired, false, mo, __ATOMIC_RELAXED);
}
static inline uint64_t rusk_fas64(uint64_t *p, uint64_t v, int mo)
{
	return __atomic_exchange_n(p, v, mo);
}

static inline void rusk_and64(uint64_t *p, uint64_t m, int mo)
{
	__atomic_fetch_and(p, m, mo);
}
static inline void rusk_or64(uint64_t *p, uint64_t m, int mo)
{
	__atomic_fetch_or(p, m, mo);
}
/* TSan does not model fences (gcc refuses them under -fsanitize=thread): a seq_cst RMW on
 * a thread-private word gives the same hardware ordering (a locked instruction on x86). */
static inline void rusk_fence_full(void)
{
	static __thread uint64_t dummy;
	__atomic_fetch_add(&dummy, 0, __ATOMIC_SEQ_CST);
}
/* Orders an earlier atomic read-modify-write before later loads (Dekker-style pairs). */
static inline void rusk_fence_atomic_load(void)
{
	rusk_fence_full();
}

/* Seqlock fences (learn/predict.c). TSan refuses standalone fences: a reader's payload
 * loads are acquire loads instead (RUSK_SEQ_DATA), so its load fence is empty, and the
 * writer's store fence is the full fence (the same orders). */
#define RUSK_SEQ_DATA RUSK_ACQUIRE
static inline void rusk_fence_load(void)
{
}
static inline void rusk_fence_store(void)
{
	rusk_fence_full();
}
/* A spin-wait hint (pause on x86). */
static inline void rusk_spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

#else /* Concurrency Kit */

#include <ck_pr.h>

/* Fence helpers: ck has no ordered loads/stores, so an order is a fence beside the access. */
static inline void rusk_fence_before_(int mo)
{
	if (mo == RUSK_RELEASE || mo == RUSK_ACQ_REL)
		ck_pr_fence_release();
}
static inline void rusk_fence_after_(int mo)
{
	if (mo == RUSK_ACQUIRE || mo == RUSK_ACQ_REL)
		ck_pr_fence_acquire();
}

static inline uint64_t rusk_load64(const uint64_t *p, int mo)
{
	uint64_t v = ck_pr_load_64(p);
	rusk_fence_after_(mo);
	return v;
}
static inline void rusk_store64(uint64_t *p, uint64_t v, int mo)
{
	rusk_fence_before_(mo);
	ck_pr_store_64(p, v);
}
static inline uint32_t rusk_load32(const uint32_t *p, int mo)
{
	uint32_t v = ck_pr_load_32(p);
	rusk_fence_after_(mo);
	return v;
}
static inline void rusk_store32(uint32_t *p, uint32_t v, int mo)
{
	rusk_fence_before_(mo);
	ck_pr_store_32(p, v);
}
static inline bool rusk_cas64(uint64_t *p, uint64_t *expected, uint64_t desired, int mo)
{
	rusk_fence_before_(mo);
	bool ok = ck_pr_cas_64_value(p, *expected, desired, expected);
	if (ok)
		rusk_fence_after_(mo);
	return ok;
}
static inline uint64_t rusk_faa64(uint64_t *p, uint64_t d, int mo)
{
	rusk_fence_before_(mo);
	uint64_t v = ck_pr_faa_64(p, d);
	rusk_fence_after_(mo);
	return v;
}
static inline uint32_t rusk_faa32(uint32_t *p, uint32_t d, int mo)
{
	rusk_fence_before_(mo);
	uint32_t v = ck_pr_faa_32(p, d);
	rusk_fence_after_(mo);
	return v;
}
static inline bool rusk_cas32(uint32_t *p, uint32_t *expected, uint32_t desired, int mo)
{
	rusk_fence_before_(mo);
	bool ok = ck_pr_cas_32_value(p, *expected, desired, expected);
	if (ok)
		rusk_fence_after_(mo);
	return ok;
}
/* Pointers: the same orders on a pointer-sized word. */
static inline void *rusk_loadp(void *const *p, int mo)
{
	void *v = ck_pr_load_ptr(p);
	rusk_fence_after_(mo);
	return v;
}
static inline void rusk_storep(void **p, void *v, int mo)
{
	rusk_fence_before_(mo);
	ck_pr_store_ptr(p, v);
}
static inline bool rusk_casp(void **p, void **expected, void *desired, int mo)
{
	rusk_fence_before_(mo);
	bool ok = ck_pr_cas_ptr_value(p, *expected, desired, expected);
	if (ok)
		rusk_fence_after_(mo);
	return ok;
}
static inline uint64_t rusk_fas64(uint64_t *p, uint64_t v, int mo)
{
	rusk_fence_before_(mo);
	uint64_t old = ck_pr_fas_64(p, v);
	rusk_fence_after_(mo);
	return old;
}

static inline void rusk_and64(uint64_t *p, uint64_t m, int mo)
{
	rusk_fence_before_(mo);
	ck_pr_and_64(p, m);
	rusk_fence_after_(mo);
}
static inline void rusk_or64(uint64_t *p, uint64_t m, int mo)
{
	rusk_fence_before_(mo);
	ck_pr_or_64(p, m);
	rusk_fence_after_(mo);
}
/* Orders an earlier atomic read-modify-write before later loads: free on x86, where
 * locked instructions already are full barriers (ck: CK_MD_TSO). */
static inline void rusk_fence_atomic_load(void)
{
	ck_pr_fence_atomic_load();
}
/* Full fence: orders earlier stores before later loads (mfence on x86). */
static inline void rusk_fence_full(void)
{
	ck_pr_fence_memory();
}

/* Seqlock fences (learn/predict.c): a reader's payload loads (RUSK_SEQ_DATA: relaxed)
 * come before its load fence and its second version read; a writer's store fence orders
 * its version bump before the payload stores. Compiler barriers on x86 (TSO). */
#define RUSK_SEQ_DATA RUSK_RELAXED
static inline void rusk_fence_load(void)
{
	ck_pr_fence_load();
}
static inline void rusk_fence_store(void)
{
	ck_pr_fence_store();
}
/* A spin-wait hint (pause on x86). */
static inline void rusk_spin_pause(void)
{
	ck_pr_stall();
}

#endif

/*
 * Seqlock payload copies (bytes: a multiple of 8) between shared records and private
 * memory, one atomic 64-bit access per word: a read that overlaps a write is then a
 * retried read, never a data race. Reads use RUSK_SEQ_DATA, writes are relaxed; the
 * fences above order them against the version word. Both back ends use the C11 builtins
 * here: ck_pr's per-word inline assembly with a memory clobber made these copies (up to
 * 110 words, twice per predictor update) three times slower, and a relaxed atomic word
 * access is a plain move either way. The words are records of doubles, floats and counts:
 * may_alias keeps the compiler from assuming that stores through them leave a record's
 * doubles unchanged (strict aliasing).
 */
typedef uint64_t __attribute__((may_alias)) rusk_alias_word;
static inline void rusk_seq_read(void *dst, const void *src, size_t bytes)
{
	rusk_alias_word *d = dst;
	const rusk_alias_word *s = src;
	for (size_t i = 0; i < bytes / 8; i++)
		d[i] = __atomic_load_n(&s[i], RUSK_SEQ_DATA);
}
static inline void rusk_seq_write(void *dst, const void *src, size_t bytes)
{
	rusk_alias_word *d = dst;
	const rusk_alias_word *s = src;
	for (size_t i = 0; i < bytes / 8; i++)
		__atomic_store_n(&d[i], s[i], RUSK_RELAXED);
}

#endif /* RUSK_CORE_ATOMIC_H */
