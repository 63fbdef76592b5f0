/* SPDX-License-Identifier: MIT */
/* Compiler attributes used across the kernel, in one place (cf. ck_cc.h). Internal. */
#ifndef RUSK_CORE_COMPILER_H
#define RUSK_CORE_COMPILER_H

#define RUSK_CACHELINE    64
#define RUSK_LIKELY(x)    __builtin_expect(!!(x), 1)
#define RUSK_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#define RUSK_ALIGNED(n)   __attribute__((aligned(n)))
#define RUSK_EXPORT       __attribute__((visibility("default")))
#define RUSK_UNUSED       __attribute__((unused))
#define RUSK_NOINLINE     __attribute__((noinline))
#define RUSK_PRINTF(f, a) __attribute__((format(printf, f, a)))

#endif /* RUSK_CORE_COMPILER_H */
