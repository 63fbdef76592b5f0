/* SPDX-License-Identifier: MIT */
/* Compiler attributes used across the kernel, in one place (cf. ck_cc.h). Internal. */
#ifndef RUSK_CORE_COMPILER_H
#define RUSK_CORE_COMPILER_H

#define RUSK_CACHELINE     64
#define RUSK_LIKELY(x)     __builtin_expect(!!(x), 1)
#define RUSK_UNLIKELY(x)   __builtin_expect(!!(x), 0)
#define RUSK_ALIGNED(n)    __attribute__((aligned(n)))
#define RUSK_EXPORT        __attribute__((visibility("default")))
#define RUSK_UNUSED        __attribute__((unused))
#define RUSK_NOINLINE      __attribute__((noinline))
#define RUSK_ALWAYS_INLINE inline __attribute__((always_inline))
#define RUSK_PRINTF(f, a)  __attribute__((format(printf, f, a)))

/*
 * Happens-before edges TSan cannot see (liburcu's call_rcu, Concurrency Kit's inline
 * assembly, hand-offs through rings): TSAN_RELEASE(p) after the last write a reader of p
 * must see, TSAN_ACQUIRE(p) before that reader's first read. Nothing outside TSan builds.
 */
#if defined(RUSK_TSAN)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define TSAN_ACQUIRE(p) ((void)0)
#define TSAN_RELEASE(p) ((void)(p))
#endif

#endif /* RUSK_CORE_COMPILER_H */
