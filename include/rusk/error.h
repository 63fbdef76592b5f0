/* SPDX-License-Identifier: MIT */
/*
 * rusk error codes. Every fallible rusk call returns RUSK_OK (0) or one of these
 * negative codes; nothing in the library aborts on bad input.
 *
 * Bad arguments. A NULL pointer or an index out of range makes a call that returns an error
 * code fail with RUSK_EINVAL or RUSK_ERANGE and change nothing; a getter without an error
 * code returns the neutral value its comment names (0, NULL, NaN, -1, UINT32_MAX, ...), and
 * a void call does nothing. What no call can check stays the caller's contract: arrays
 * shorter than the count passed with them, objects used after they were destroyed or from
 * threads their contract excludes.
 */
#ifndef RUSK_ERROR_H
#define RUSK_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

enum rusk_err {
	RUSK_OK = 0,
	RUSK_EINVAL = -1,    /* an argument is invalid (NULL, zero, out of its domain) */
	RUSK_ENOMEM = -2,    /* an allocation failed */
	RUSK_ECONFLICT = -3, /* commit lost: the RU is taken by another task */
	RUSK_ENOTOWNER = -4, /* release of an RU held by another task (foreign release) */
	RUSK_EFREE = -5,     /* release of an RU that is already free (double release) */
	RUSK_ESTALE = -6,    /* what a lease or a handle names has ended: a lease's RU was released
	                      * and taken again since, a dispatcher job's task is over and its
	                      * slot may serve another task (rusk/dispatch.h) */
	RUSK_ERANGE = -7,    /* an RU, machine or partition index is out of range */
	RUSK_EIO = -8,       /* a file could not be opened or read, or a remote master state
	                      * (Redis Cluster) could not be reached */
	RUSK_EPARSE = -9,    /* malformed input (the message names file:line) */
	RUSK_ESHAPE = -10,   /* impossible cluster shape (0 machines, P > cells, ...) */
	RUSK_EDUP = -11,     /* RU already held by this task, or listed twice in one commit */
	RUSK_ECORRUPT = -12, /* rusk_cluster_verify found counters that disagree with the array */
	RUSK_EOFFLINE = -13, /* the RU's machine is down or draining, or the lease was revoked */
	RUSK_EPOLICY = -14,  /* impossible sync policy (e.g. DiffSync with P < N) */
	RUSK_EAGAIN = -15,   /* not placed this time (conflicts, no free RU in view): re-queue */
	RUSK_EBUSY = -16,    /* the object is already attached or in use (one per cluster) */
	RUSK_ENOTREG = -17,  /* the calling thread is not registered (rusk_thread_register);
	                      * reported by RUSK_DEBUG builds only (rusk/sync.h) */
	RUSK_EINFEASIBLE = -18, /* the task asks for more than the cluster could ever give
	                         * (rusk_task_check says which field): re-queuing cannot help */
	RUSK_ESTOPPED = -19,    /* the dispatcher is stopping: no new work (rusk/dispatch.h) */
	RUSK_EFULL = -20,       /* a bounded queue or table is full (a dispatcher's agent queue
	                         * or its job slots): nothing was taken; submit again later */
	RUSK_ENOTRUNNING = -21, /* the dispatcher's task is queued, not running (not placed yet,
	                         * or preempted or revoked and queued again): complete it after
	                         * its next PLACED event, or cancel it */
	RUSK_ERUNNING = -22,    /* the dispatcher's task is running: it can only be completed */
	RUSK_ECANCELED = -23,   /* REJECTED event: the task was cancelled (rusk_dispatch_cancel) */
	RUSK_ENOMODEL = -24,    /* no model published yet (classifier, predictor): train first */
};

/*
 * rusk_strerror: a static, human-readable description of an error code.
 * Any thread; never returns NULL (unknown codes get "unknown rusk error").
 */
const char *rusk_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* RUSK_ERROR_H */
