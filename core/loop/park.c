/* SPDX-License-Identifier: MIT */
/*
 * ck_ec's operating-system half for Linux (park.h): CLOCK_MONOTONIC time, futex wait with
 * an absolute deadline (FUTEX_WAIT_BITSET measures it on CLOCK_MONOTONIC) and futex wake.
 * Private futexes: the event counts live in one process.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "loop/park.h"

static int park_gettime(const struct ck_ec_ops *ops, struct timespec *out)
{
	(void)ops;
	return clock_gettime(CLOCK_MONOTONIC, out);
}

static void park_wait32(const struct ck_ec_wait_state *st, const uint32_t *addr, uint32_t expected,
                        const struct timespec *deadline)
{
	(void)st;
	/* EAGAIN (the word changed), EINTR and ETIMEDOUT all return to ck_ec, which checks
	 * the value and the deadline again. */
	syscall(SYS_futex, addr, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, expected, deadline, NULL,
	        FUTEX_BITSET_MATCH_ANY);
}

static void park_wake32(const struct ck_ec_ops *ops, const uint32_t *addr)
{
	(void)ops;
	syscall(SYS_futex, addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
}

static const struct ck_ec_ops park_ops = {
        .gettime = park_gettime,
        .wait32 = park_wait32,
        .wake32 = park_wake32,
        /* ck_ec spins this many times on the word after flagging it, before its first
         * futex wait (0 means its default, 100): the dispatcher spins before it parks, so
         * once is enough (100 cost ~100 instructions per scheduled task at 40K tasks/s). */
        .busy_loop_iter = 1,
};

const struct ck_ec_mode rusk_park_mode_ = {.ops = &park_ops, .single_producer = false};

void rusk_park_wait(rusk_park *p, uint32_t seen, uint64_t deadline_ns)
{
	if (deadline_ns == UINT64_MAX) {
		ck_ec32_wait(&p->ec, &rusk_park_mode_, seen, NULL);
		return;
	}
	struct timespec d = {(time_t)(deadline_ns / 1000000000ull),
	                     (long)(deadline_ns % 1000000000ull)};
	ck_ec32_wait(&p->ec, &rusk_park_mode_, seen, &d);
}
