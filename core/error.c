/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "internal.h"

RUSK_EXPORT const char *rusk_strerror(int err)
{
	switch (err) {
	case RUSK_OK: return "success";
	case RUSK_EINVAL: return "invalid argument";
	case RUSK_ENOMEM: return "out of memory";
	case RUSK_ECONFLICT: return "conflict: RU taken by another task";
	case RUSK_ENOTOWNER: return "RU held by another task (foreign release)";
	case RUSK_EFREE: return "RU already free (double release)";
	case RUSK_ESTALE: return "stale lease or handle: what it names has ended";
	case RUSK_ERANGE: return "index out of range";
	case RUSK_EIO: return "cannot read file";
	case RUSK_EPARSE: return "malformed input";
	case RUSK_ESHAPE: return "impossible cluster shape";
	case RUSK_EDUP: return "RU already held by this task or listed twice";
	case RUSK_ECORRUPT: return "counters disagree with the RU array";
	case RUSK_EOFFLINE: return "RU offline: machine down or draining, or lease revoked";
	case RUSK_EPOLICY: return "impossible sync policy";
	case RUSK_EAGAIN: return "not placed this time: re-queue the task";
	case RUSK_EBUSY: return "already attached or in use";
	case RUSK_ENOTREG: return "calling thread not registered (rusk_thread_register)";
	case RUSK_EINFEASIBLE: return "task larger than the cluster could ever hold";
	case RUSK_ESTOPPED: return "dispatcher stopping: no new work";
	case RUSK_EFULL: return "queue or job slots full: submit again later";
	case RUSK_ENOTRUNNING: return "task queued, not running: complete it once placed";
	case RUSK_ERUNNING: return "task running: it can only be completed";
	case RUSK_ECANCELED: return "task cancelled";
	case RUSK_ENOMODEL: return "no model published yet";
	default: return "unknown rusk error";
	}
}

int rusk_errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
	if (err != NULL && errlen > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}
