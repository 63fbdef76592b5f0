/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

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
	case RUSK_EIO: return "input/output error (a file, or the connection to a remote state)";
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

/* Bytes of the valid UTF-8 sequence starting at s (2..4), or 0 if none starts there. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (s[0] >= 0xf8)
		return 0;
	for (size_t k = 1; k < n; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return n;
}

/*
 * Messages quote what they read (a trace's field, a header, a path): a binary file put
 * control bytes and broken UTF-8 into them, which a terminal then interpreted. The
 * formatted message is copied with every control byte and every byte that starts no
 * valid UTF-8 sequence written as \xNN; text (UTF-8 included) is unchanged.
 */
int rusk_errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
	if (err == NULL || errlen == 0)
		return code;
	char raw[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	size_t o = 0;
	for (const unsigned char *s = (const unsigned char *)raw; *s != '\0' && o + 1 < errlen;) {
		size_t n = *s >= 0x80 ? utf8_len(s) : 1;
		if (n == 0 || *s < 0x20 || *s == 0x7f) {
			if (o + 4 >= errlen)
				break;
			snprintf(err + o, errlen - o, "\\x%02x", *s);
			o += 4;
			s++;
		} else if (o + n < errlen) {
			memcpy(err + o, s, n);
			o += n;
			s += n;
		} else {
			break;
		}
	}
	err[o] = '\0';
	return code;
}
