/* SPDX-License-Identifier: MIT */
/*
 * Redis Cluster routing arithmetic (the cluster specification, "Keys distribution model"
 * and "Redirection and resharding"), written once because hiredis 0.14 has none:
 * CRC16/XMODEM (poly 0x1021, init 0, no reflection; "123456789" -> 0x31C3), the key slot
 * with hash tags, and the parse of MOVED / ASK error replies. Pure functions, no state;
 * tests/test_redis_slot.c checks them against the spec's vectors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "state/redis.h"

uint16_t rusk_redis_crc16_(const char *buf, size_t len)
{
	uint16_t crc = 0;
	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((uint8_t)buf[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (uint16_t)((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
	}
	return crc;
}

uint16_t rusk_redis_keyslot_(const char *key, size_t len)
{
	size_t s = 0;
	while (s < len && key[s] != '{')
		s++;
	if (s < len) {
		size_t e = s + 1;
		while (e < len && key[e] != '}')
			e++;
		if (e < len && e > s + 1) /* a non-empty tag: hash only it */
			return rusk_redis_crc16_(key + s + 1, e - s - 1) & (RUSK_REDIS_SLOTS - 1);
	}
	return rusk_redis_crc16_(key, len) & (RUSK_REDIS_SLOTS - 1);
}

int rusk_redis_parse_redirect_(const char *msg, int *ask, uint16_t *slot, char *host,
                               size_t hostlen, int *port)
{
	if (msg == NULL || ask == NULL || slot == NULL || host == NULL || port == NULL ||
	    hostlen == 0)
		return RUSK_EINVAL;
	const char *p;
	if (strncmp(msg, "MOVED ", 6) == 0) {
		*ask = 0;
		p = msg + 6;
	} else if (strncmp(msg, "ASK ", 4) == 0) {
		*ask = 1;
		p = msg + 4;
	} else {
		return RUSK_EPARSE;
	}
	char *end;
	if (*p < '0' || *p > '9')
		return RUSK_EPARSE;
	unsigned long s = strtoul(p, &end, 10);
	if (end == p || *end != ' ' || s >= RUSK_REDIS_SLOTS)
		return RUSK_EPARSE;
	p = end + 1;
	const char *colon = strrchr(p, ':'); /* the last one: an IPv6 host has colons */
	if (colon == NULL || colon == p || (size_t)(colon - p) >= hostlen)
		return RUSK_EPARSE;
	if (colon[1] < '0' || colon[1] > '9')
		return RUSK_EPARSE;
	unsigned long pt = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || pt == 0 || pt > 65535)
		return RUSK_EPARSE;
	memcpy(host, p, (size_t)(colon - p));
	host[colon - p] = '\0';
	*slot = (uint16_t)s;
	*port = (int)pt;
	return RUSK_OK;
}

int rusk_redis_parse_url_(const char *url, char (*hosts)[64], int *ports, int *n, char *err,
                          size_t errlen)
{
	if (url == NULL || hosts == NULL || ports == NULL || n == NULL)
		return RUSK_EINVAL;
	if (strncmp(url, "redis://", 8) != 0)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "'%s' is not redis://HOST:PORT[,HOST:PORT...]", url);
	const char *p = url + 8;
	int k = 0;
	while (*p != '\0') {
		/* "redis://A:1,redis://B:2": the scheme repeated before a later address (as
		 * URL lists are often written) is the same list as "redis://A:1,B:2". */
		if (k > 0 && strncmp(p, "redis://", 8) == 0)
			p += 8;
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		const char *colon = memchr(p, ':', len);
		if (k == RUSK_REDIS_MAX_SEEDS)
			return rusk_errf(err, errlen, RUSK_EINVAL, "'%s': more than %d addresses",
			                 url, RUSK_REDIS_MAX_SEEDS);
		/* "[::1]:7000", "::1:7000": refused by name rather than as a bad port. The
		 * nodes' addresses come back from CLUSTER SLOTS as HOST:PORT text too. */
		if (len > 0 &&
		    (p[0] == '[' ||
		     (colon != NULL && memchr(colon + 1, ':', len - (size_t)(colon - p) - 1))))
			return rusk_errf(
			        err, errlen, RUSK_EINVAL,
			        "'%s': address '%.*s': IPv6 addresses are not supported: use "
			        "a host name (or an IPv4 address)",
			        url, (int)len, p);
		/* "redis://h:7000/0", "redis://h:7000?db=0": a cluster has database 0 only,
		 * and rusk takes no options in the URL; said so, not "no port". */
		const char *extra = colon != NULL ? colon + strcspn(colon, "/?") : NULL;
		if (extra != NULL && extra < p + len)
			return rusk_errf(
			        err, errlen, RUSK_EINVAL,
			        "'%s': address '%.*s': a path, database or option ('%.*s') "
			        "is not supported: give redis://HOST:PORT (a Redis Cluster "
			        "has database 0 only)",
			        url, (int)len, p, (int)(p + len - extra), extra);
		if (colon == NULL || colon == p || (size_t)(colon - p) >= 64)
			return rusk_errf(err, errlen, RUSK_EINVAL,
			                 "'%s': address '%.*s' is not HOST:PORT", url, (int)len, p);
		char num[8] = {0};
		size_t nl = len - (size_t)(colon - p) - 1;
		char *end = NULL;
		long pt = -1;
		if (nl > 0 && nl < sizeof num) {
			memcpy(num, colon + 1, nl);
			pt = num[0] >= '0' && num[0] <= '9' ? strtol(num, &end, 10) : -1;
		}
		if (pt <= 0 || pt > 65535 || (end != NULL && *end != '\0'))
			return rusk_errf(err, errlen, RUSK_EINVAL,
			                 "'%s': address '%.*s' has no port 1..65535", url, (int)len,
			                 p);
		memcpy(hosts[k], p, (size_t)(colon - p));
		hosts[k][colon - p] = '\0';
		ports[k++] = (int)pt;
		p += len + (e != NULL);
		if (e != NULL && *p == '\0')
			return rusk_errf(err, errlen, RUSK_EINVAL, "'%s': empty address after ','",
			                 url);
	}
	if (k == 0)
		return rusk_errf(err, errlen, RUSK_EINVAL, "'%s': no HOST:PORT", url);
	*n = k;
	return RUSK_OK;
}

/* The userinfo of a redis:// URL ends at its last '@' (a password may hold '@'; no host
 * does). */
static const char *auth_end(const char *url)
{
	return strncmp(url, "redis://", 8) == 0 ? strrchr(url + 8, '@') : NULL;
}

int rusk_redis_split_auth_(const char *url, char *user, size_t userlen, char *pass, size_t passlen,
                           char *rest, size_t restlen, char *err, size_t errlen)
{
	if (url == NULL || user == NULL || pass == NULL || rest == NULL || userlen == 0 ||
	    passlen == 0)
		return RUSK_EINVAL;
	user[0] = pass[0] = '\0';
	const char *at = auth_end(url);
	if (at == NULL) {
		if ((size_t)snprintf(rest, restlen, "%s", url) >= restlen)
			return rusk_errf(err, errlen, RUSK_EINVAL, "URL longer than %zu bytes",
			                 restlen - 1);
		return RUSK_OK;
	}
	const char *u = url + 8, *colon = memchr(u, ':', (size_t)(at - u));
	const char *pw = colon != NULL ? colon + 1 : u;
	size_t ul = colon != NULL ? (size_t)(colon - u) : 0, pl = (size_t)(at - pw);
	if (pl == 0)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "'redis://%.*s@%s': an empty password (redis://[user:]password@"
		                 "HOST:PORT)",
		                 (int)(at - u), u, at + 1); /* the userinfo as given: no secret */
	if (ul >= userlen || pl >= passlen)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "'%s': a user name or password longer than %zu bytes", at + 1,
		                 (ul >= userlen ? userlen : passlen) - 1);
	memcpy(user, u, ul);
	user[ul] = '\0';
	memcpy(pass, pw, pl);
	pass[pl] = '\0';
	if ((size_t)snprintf(rest, restlen, "redis://%s", at + 1) >= restlen)
		return rusk_errf(err, errlen, RUSK_EINVAL, "URL longer than %zu bytes",
		                 restlen - 1);
	return RUSK_OK;
}

const char *rusk_redis_mask_url_(const char *url, char *out, size_t outlen)
{
	if (out == NULL || outlen == 0)
		return "";
	const char *at = url != NULL ? auth_end(url) : NULL;
	if (at == NULL) {
		snprintf(out, outlen, "%s", url != NULL ? url : "");
		return out;
	}
	const char *u = url + 8, *colon = memchr(u, ':', (size_t)(at - u));
	snprintf(out, outlen, "redis://%.*s:***%s", colon != NULL ? (int)(colon - u) : 0, u, at);
	return out;
}

uint16_t rusk_redis_slot_of_(uint32_t p)
{
	char tag[16];
	int k = snprintf(tag, sizeof tag, "{p%u}", p);
	return rusk_redis_keyslot_(tag, (size_t)k);
}
