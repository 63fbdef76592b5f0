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

#include "state/redis.h"

/* An open backend: the seam, plus the Redis connection when it is one (else NULL). */
typedef struct rusk_state {
	rusk_backend bk;
	rusk_redis *redis;
} rusk_state;

/*
 * rusk_state_open_: opens spec for cluster c (the shape; c must outlive the state). init:
 * write the empty state (Redis; the memory backend is always fresh). RUSK_OK; RUSK_EINVAL
 * (spec neither form, or redis:// in a build without RUSK_WITH_REDIS) or RUSK_EIO (the
 * Redis checks, rusk_redis_open_) with a message naming spec in err. Any thread; the
 * caller closes it with rusk_state_close_.
 */
int rusk_state_open_(const char *spec, rusk_cluster *c, int init, rusk_state *out, char *err,
                     size_t errlen);
void rusk_state_close_(rusk_state *s);
/* Whether this build has the Redis backend. */
int rusk_state_have_redis_(void);

#endif /* RUSK_STATE_OPEN_H */
