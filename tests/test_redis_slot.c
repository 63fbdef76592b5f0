/* SPDX-License-Identifier: MIT */
/*
 * The Redis Cluster routing arithmetic (core/state/redis_slot.c; issue 30), against the
 * cluster specification's vectors and values redis-server 7.0's CLUSTER KEYSLOT answers:
 * CRC16/XMODEM, hash tags, the parse of MOVED / ASK replies and of --backend URLs. No
 * server needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "state/redis.h"

static uint16_t slot(const char *k)
{
	return rusk_redis_keyslot_(k, strlen(k));
}

static void test_crc16_vectors(void **state)
{
	(void)state;
	assert_int_equal(rusk_redis_crc16_("123456789", 9), 0x31C3); /* the spec's check value */
	assert_int_equal(rusk_redis_crc16_("", 0), 0);
	assert_int_equal(slot("123456789"), 0x31C3 & 16383);
	/* CLUSTER KEYSLOT of redis-server 7.0.15 */
	assert_int_equal(slot("foo"), 12182);
	assert_int_equal(slot("bar"), 5061);
	assert_int_equal(slot("hello"), 866);
	assert_int_equal(slot("{p0}"), 15882);
	assert_int_equal(slot("{p7}"), 3821);
}

static void test_hash_tags(void **state)
{
	(void)state;
	/* the spec's examples */
	assert_int_equal(slot("{user1000}.following"), slot("user1000"));
	assert_int_equal(slot("{user1000}.followers"), slot("user1000"));
	assert_int_equal(slot("foo{}{bar}"), 8363); /* empty first tag: the whole key */
	assert_int_equal(slot("foo{}{bar}"),
	                 rusk_redis_crc16_("foo{}{bar}", strlen("foo{}{bar}")) & 16383);
	assert_int_equal(slot("foo{{bar}}zap"), 4015); /* the tag is "{bar" */
	assert_int_equal(slot("foo{{bar}}zap"), slot("{bar"));
	assert_int_equal(slot("foo{bar}{zap}"), slot("bar")); /* the first tag only */
	assert_int_equal(slot("foo{bar"), rusk_redis_crc16_("foo{bar", 7) & 16383); /* unclosed */
	/* every key of a partition shares its slot */
	for (uint32_t p = 0; p < 64; p++) {
		char a[32], b[32];
		snprintf(a, sizeof a, "rusk:{p%u}:own", p);
		snprintf(b, sizeof b, "rusk:{p%u}:free", p);
		assert_int_equal(slot(a), slot(b));
		assert_int_equal(slot(a), rusk_redis_slot_of_(p));
	}
}

static void test_redirects(void **state)
{
	(void)state;
	char host[64];
	int ask = -1, port = 0;
	uint16_t s = 0;
	assert_int_equal(rusk_redis_parse_redirect_("MOVED 3999 127.0.0.1:6381", &ask, &s, host,
	                                            sizeof host, &port),
	                 RUSK_OK);
	assert_int_equal(ask, 0);
	assert_int_equal(s, 3999);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 6381);
	assert_int_equal(rusk_redis_parse_redirect_("ASK 16383 ::1:7002", &ask, &s, host,
	                                            sizeof host, &port),
	                 RUSK_OK);
	assert_int_equal(ask, 1);
	assert_int_equal(s, 16383);
	assert_string_equal(host, "::1"); /* the last colon splits an IPv6 host */
	assert_int_equal(port, 7002);
	static const char *const bad[] = {
	        "MOVED 16384 127.0.0.1:1",
	        "MOVED x 127.0.0.1:1",
	        "MOVED 1 127.0.0.1",
	        "MOVED 1 127.0.0.1:0",
	        "MOVED 1 :7000",
	        "MOVED 1 h:70000",
	        "ASK 1 h:7x",
	        "ERR MOVED 1 h:1",
	        "NOSCRIPT No matching script",
	        "MOVED",
	        "",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal(
		        rusk_redis_parse_redirect_(bad[i], &ask, &s, host, sizeof host, &port),
		        RUSK_EPARSE);
	char tiny[4];
	assert_int_equal(rusk_redis_parse_redirect_("MOVED 1 localhost:1", &ask, &s, tiny,
	                                            sizeof tiny, &port),
	                 RUSK_EPARSE);
	assert_int_equal(rusk_redis_parse_redirect_(NULL, &ask, &s, host, sizeof host, &port),
	                 RUSK_EINVAL);
}

static void test_urls(void **state)
{
	(void)state;
	char hosts[RUSK_REDIS_MAX_SEEDS][64], err[256];
	int ports[RUSK_REDIS_MAX_SEEDS], n = 0;
	assert_int_equal(rusk_redis_parse_url_("redis://127.0.0.1:7000,10.0.0.2:7001", hosts, ports,
	                                       &n, err, sizeof err),
	                 RUSK_OK);
	assert_int_equal(n, 2);
	assert_string_equal(hosts[1], "10.0.0.2");
	assert_int_equal(ports[1], 7001);
	/* The scheme may be repeated before each address. */
	assert_int_equal(rusk_redis_parse_url_("redis://127.0.0.1:7000,redis://10.0.0.3:7002",
	                                       hosts, ports, &n, err, sizeof err),
	                 RUSK_OK);
	assert_int_equal(n, 2);
	assert_string_equal(hosts[1], "10.0.0.3");
	assert_int_equal(ports[1], 7002);
	static const char *const bad[] = {"127.0.0.1:7000",        "redis://",
	                                  "redis://host",          "redis://:7000",
	                                  "redis://h:0",           "redis://h:65536",
	                                  "redis://h:7000,",       "redis://h:70a",
	                                  "http://127.0.0.1:7000", "redis://h:7000,redis://"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = '\0';
		assert_int_equal(rusk_redis_parse_url_(bad[i], hosts, ports, &n, err, sizeof err),
		                 RUSK_EINVAL);
		assert_non_null(strstr(err, bad[i])); /* the message names the input */
	}
	/* a path, database or option: said so, not "no port" */
	static const char *const db[] = {"redis://h:7000/0", "redis://h:7000,g:7001/",
	                                 "redis://h:7000?db=1"};
	for (size_t i = 0; i < sizeof db / sizeof *db; i++) {
		assert_int_equal(rusk_redis_parse_url_(db[i], hosts, ports, &n, err, sizeof err),
		                 RUSK_EINVAL);
		if (strstr(err, "a path, database or option") == NULL || strstr(err, db[i]) == NULL)
			fail_msg("%s: %s", db[i], err);
	}
	/* an empty password is echoed with its userinfo as given ("redis://:@", not "redis://@") */
	char user[8], pass[8], rest[64];
	static const char *const empty[] = {"redis://:@h:7000", "redis://u:@h:7000",
	                                    "redis://@h:7000"};
	for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
		assert_int_equal(rusk_redis_split_auth_(empty[i], user, sizeof user, pass,
		                                        sizeof pass, rest, sizeof rest, err,
		                                        sizeof err),
		                 RUSK_EINVAL);
		if (strstr(err, empty[i]) == NULL || strstr(err, "an empty password") == NULL)
			fail_msg("%s: %s", empty[i], err);
	}
}

/* An agent's task ids near the end of its sequence: the last ones keep the agent's bits,
 * the next is refused (RUSK_ERANGE, nothing changed) where ++seq carried into the agent's
 * bits before: agent 3's id 2^32 was agent 4's id 0 (4 + 1) << 32 | 0. */
static void test_agent_task_ids(void **state)
{
	(void)state;
	uint64_t seq = RUSK_REDIS_AGENT_SEQ_MAX - 2, task = 0;
	for (int k = 0; k < 2; k++) {
		assert_int_equal(rusk_redis_agent_task_(3, &seq, &task), RUSK_OK);
		assert_int_equal(task >> 32, 4); /* agent 3's bits: (3 + 1) */
		assert_int_equal(task & UINT32_MAX, seq);
		assert_int_equal(rusk_owner_ns_(task), 0);
	}
	assert_int_equal(seq, RUSK_REDIS_AGENT_SEQ_MAX);
	assert_int_equal(task, (UINT64_C(4) << 32) | UINT32_MAX);
	uint64_t before = task;
	assert_int_equal(rusk_redis_agent_task_(3, &seq, &task), RUSK_ERANGE);
	assert_int_equal(seq, RUSK_REDIS_AGENT_SEQ_MAX);
	assert_int_equal(task, before);
	/* the old formula's next id: agent 4's (5 << 32 | 0), which the refusal avoids */
	assert_int_equal((((uint64_t)3 + 1) << 32 | (seq + 1)) >> 32, 5);
	/* the first id and the highest agent */
	seq = 0;
	assert_int_equal(rusk_redis_agent_task_(0, &seq, &task), RUSK_OK);
	assert_int_equal(task, (UINT64_C(1) << 32) | 1);
	seq = 0;
	assert_int_equal(rusk_redis_agent_task_(RUSK_REDIS_AGENTS - 1, &seq, &task), RUSK_OK);
	assert_true(task < (UINT64_C(1) << RUSK_OWNER_NS_SHIFT)); /* below every namespace */
	assert_int_equal(rusk_redis_agent_task_(RUSK_REDIS_AGENTS, &seq, &task), RUSK_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_crc16_vectors),  cmocka_unit_test(test_hash_tags),
	        cmocka_unit_test(test_redirects),      cmocka_unit_test(test_urls),
	        cmocka_unit_test(test_agent_task_ids),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
