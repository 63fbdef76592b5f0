/* SPDX-License-Identifier: MIT */
/*
 * Opening a master-state backend by name (issue 30): "memory" (the cluster's own RU array,
 * kernel/backend.h) or "redis://HOST:PORT[,HOST:PORT...]" (Redis Cluster, state/redis.h,
 * when built with RUSK_WITH_REDIS). The one entry point the tool uses, so it needs neither
 * the kernel's internals nor hiredis's headers.
 */
#ifndef RUSK_STATE_OPEN_H
#define RUSK_STATE_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include "state/redis.h"

/* An open backend: the seam, plus the Redis connection when it is one (else NULL). */
typedef struct rusk_state {
	rusk_backend bk;
	rusk_redis *redis;
} rusk_state;

/*
 * rusk_state_open_: opens spec for cluster c (the shape; c must outlive the state). init
 * (Redis; the memory backend is always fresh): RUSK_REDIS_INIT (1) writes the empty state,
 * RUSK_REDIS_CHECK (0) checks it is there with c's shape, RUSK_REDIS_CONNECT (2) only
 * connects (the caller makes its checks, then rusk_redis_state_write_ or
 * rusk_redis_state_check_). RUSK_OK; RUSK_EINVAL (spec neither form, or redis:// in a
 * build without RUSK_WITH_REDIS), RUSK_ESHAPE or RUSK_EIO (the Redis checks,
 * rusk_redis_open_) with a message naming spec in err. Any thread; the caller closes it
 * with rusk_state_close_.
 */
int rusk_state_open_(const char *spec, rusk_cluster *c, int init, rusk_state *out, char *err,
                     size_t errlen);
void rusk_state_close_(rusk_state *s);
/* rusk_state_open_within_: rusk_state_open_, a Redis open bounded by bound_ns and stop
 * (rusk_redis_open_within_; the state's redis keeps both on success); RUSK_ESTOPPED when
 * stop said so. Any thread. */
int rusk_state_open_within_(const char *spec, rusk_cluster *c, int init, int (*stop)(void *),
                            void *stop_arg, uint64_t bound_ns, rusk_state *out, char *err,
                            size_t errlen);
/*
 * rusk_state_open_wait_: rusk_state_open_, tried again while it answers RUSK_EAGAIN (no seed
 * of spec answered in time: paused, overloaded, failing over) for up to failover_ms from
 * the first try, 100 ms apart; every read and connect of the tries ends by then too, and
 * stop (non-NULL, called with stop_arg while a read waits, between tries and every 100 ms)
 * ends the wait within about 250 ms (rusk_redis_open_within_, its bound failover_ms from
 * the first try). RUSK_OK, the state's redis keeping the bound and the stop hook, so that
 * the caller's checks after it end by the same bound: the caller lifts it
 * (rusk_redis_set_bound_(s->redis, 0)) when its start is over; RUSK_EAGAIN past
 * failover_ms, with the last error and rusk_redis_outage_say_'s words in err (an outage,
 * not bad input); RUSK_ESTOPPED when stop said so (err says the stop came while no seed
 * answered); else rusk_state_open_'s code and message. Any thread.
 */
int rusk_state_open_wait_(const char *spec, rusk_cluster *c, int init, int failover_ms,
                          int (*stop)(void *), void *stop_arg, rusk_state *out, char *err,
                          size_t errlen);
/* Options of every connection an attached remote opens (rusk_state_attach_). */
typedef struct rusk_state_opts {
	int wait_replicas;   /* > 0: WAIT for that many replicas after each commit or release
	                      * pipeline (rusk_redis_set_wait_); 0: none (the default) */
	int wait_ms;         /* WAIT's timeout, ms (> 0 with wait_replicas) */
	int (*stop)(void *); /* non-NULL: each connection's rusk_redis_set_stop_ hook */
	void *stop_arg;
	int unavail_ms; /* > 0: rusk_redis_set_unavailable_ms_ on each connection (a stuck
	                 * master's partitions skipped, its releases put off: kernel/remote.h
	                 * "Unavailable partitions"); 0: every outage waited out */
} rusk_state_opts;

/*
 * rusk_state_attach_: attaches the remote master state at spec ("redis://...") to cluster c
 * (kernel/backend.h rusk_remote_attach_: c's agents then sync, commit and release there):
 * each thread that uses it opens its own connection to spec on first use, as
 * rusk_state_open_ without init (the state must be there, with c's shape: open the state
 * with init first to write it), with opts (copied; NULL: the defaults, no WAIT). At
 * quiescence (before c's agents start); detach with rusk_remote_detach_ after they stop.
 * RUSK_OK; RUSK_EINVAL (not redis://, no Redis in this build, a remote attached already,
 * opts->wait_replicas > 0 with wait_ms <= 0), RUSK_ENOMEM, with a message in err.
 */
int rusk_state_attach_(const char *spec, rusk_cluster *c, const rusk_state_opts *opts, char *err,
                       size_t errlen);
/*
 * rusk_state_check_wait_: whether WAIT for `wait` replicas (> 0) can be acknowledged on
 * every shard of s's cluster (rusk_redis_min_replicas_): RUSK_OK (also when the count
 * cannot be read, or wait is 0), or RUSK_EINVAL with the message every command gives
 * ("--wait N: the cluster at SPEC has a shard with K replicas ...") in err. Writes
 * nothing. Owner thread of s.
 */
int rusk_state_check_wait_(rusk_state *s, const char *spec, uint32_t wait, char *err,
                           size_t errlen);

/*
 * rusk_state_init_guard_: before writing the empty state at spec: whether live processes
 * use the state there: agents whose lease is live (rusk:{meta}:alive:I; agent `self` left
 * out, -1: none) and `rusk run`s whose run lease is live (rusk:{meta}:live-runs). RUSK_OK
 * when none; RUSK_EBUSY with a message naming them and ending with `hint` (what the
 * command's user can do) in err; RUSK_EIO when they cannot be read (message in err). A
 * check, not a lock: two processes that both pass it write the state one after the other.
 * Owner thread of s.
 */
int rusk_state_init_guard_(rusk_state *s, const char *spec, int self, const char *hint, char *err,
                           size_t errlen);

/* Whether this build has the Redis backend. */
int rusk_state_have_redis_(void);

#endif /* RUSK_STATE_OPEN_H */
