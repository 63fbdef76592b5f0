/* SPDX-License-Identifier: MIT */
/*
 * The master-state seam over a real Redis Cluster (issue 30): run by tests/redis/
 * with_cluster.sh, which starts 3 masters + 3 replicas on free ports and passes their
 * address in RUSK_REDIS_URL (no URL: skipped, exit 77).
 *
 *  - one sequence of commits and releases (ownership, generations, double and foreign
 *    releases, memory and GPU shares, duplicates, a pipelined batch with collisions) gives
 *    the same answers, leases and bitmaps on the in-memory array and on Redis: the
 *    backend does not change a decision;
 *  - a recount finds every RU held once and the bitmaps consistent;
 *  - a script error (the partition's shape key deleted behind the client's back) is
 *    reported with the key's name and writes nothing; so does a commit or a release on a
 *    partition one of whose keys another program overwrote with another type (each key in
 *    turn), naming the key and its type;
 *  - so does a value the scripts would add to, parse or compare that they never write (a
 *    count past its range or with a leading zero, an owner that is no owner, a :mach entry
 *    without the RU), and a snapshot of an empty :free or an owners read of such an owner;
 *  - state of another shape is refused on open, naming both shapes;
 *  - owner namespaces: the same task id under two namespaces is two owners;
 *  - an owners field that is no RU of the partition is corrupt state, named;
 *  - a sync step's reads of many partitions, one pipeline per node, answer exactly the
 *    state, also while a slot migrates (ASK), after (MOVED) and after a broken connection;
 *    and so do a ledger pass's reads of many partitions' owners (rusk_redis_owners_many_);
 *  - one partition's pipelined claims during a half-migrated slot (TRYAGAIN) and a brief
 *    CLUSTERDOWN wait the fault out and each get their own answer, as the state says;
 *  - a manual failover of a partition's shard (CLUSTER FAILOVER on its replica) makes the
 *    old master answer MOVED: the client follows it and the commit lands; a master without
 *    the scripts answers NOSCRIPT once, then has them again;
 *  - a master stopped (SIGSTOP) with unavailable nodes on (rusk_redis_set_unavailable_ms_):
 *    the others' partitions read after one read timeout, its own are marked and refused at
 *    once with nothing sent, and they rejoin once it answers.
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rusk/dispatch.h>

#include "fixture.h"
#include "state/open.h"

static const char *url;

static rusk_cluster *make_cluster(uint32_t machines)
{
	rusk_cluster_params p;
	fx_params(&p, (fx_shape){.machines = machines, .rus = 8, .partitions = 2});
	p.gpus_per_machine = 2;
	return fx_create(&p);
}

/* One claim of n RUs starting at ru on machine m. */
static rusk_bk_claim claim(uint64_t task, uint32_t m, const uint32_t *rus, uint32_t n, uint32_t mem,
                           uint16_t gpus, uint16_t milli)
{
	rusk_bk_claim c = {task, m, n, rus, {0}};
	c.vec.mem_mib = mem;
	c.vec.gpus = gpus;
	c.vec.gpu_milli = milli;
	return c;
}

#define MAX_CODES 128
typedef struct trace {
	int rc[MAX_CODES];
	uint32_t gen[MAX_CODES];
	int n;
	uint64_t words[2][64];
	rusk_bk_count count[2];
} trace;

static void note(trace *t, int rc, uint32_t gen)
{
	assert_true(t->n < MAX_CODES);
	t->rc[t->n] = rc;
	t->gen[t->n++] = gen;
}

static int commit1(const rusk_backend *b, trace *t, rusk_bk_claim c, rusk_lease *out)
{
	rusk_cluster *dummy = NULL;
	(void)dummy;
	int rc = RUSK_EIO;
	rusk_lease ls[8] = {{0, 0}};
	assert_int_equal(b->ops->commit(b->self, 0, &c, 1, &rc, ls), RUSK_OK);
	note(t, rc, rc == RUSK_OK ? ls[0].gen : 0);
	if (out != NULL)
		memcpy(out, ls, sizeof(rusk_lease) * c.n);
	return rc;
}

static int release1(const rusk_backend *b, trace *t, uint64_t task, rusk_lease l)
{
	rusk_bk_lease x = {task, l};
	int rc = RUSK_EIO;
	assert_int_equal(b->ops->release(b->self, 0, &x, 1, &rc), RUSK_OK);
	note(t, rc, 0);
	return rc;
}

/* The sequence, on partition 0 (machines 0..199, RUs 0..1599) and a batch on 1. */
static void sequence(rusk_cluster *c, const rusk_backend *b, trace *t)
{
	memset(t, 0, sizeof *t);
	uint32_t r0[] = {0};
	rusk_lease l, lv[2];
	assert_int_equal(commit1(b, t, claim(1, 0, r0, 1, 0, 0, 0), &l), RUSK_OK);
	assert_int_equal(commit1(b, t, claim(2, 0, r0, 1, 0, 0, 0), NULL), RUSK_ECONFLICT);
	assert_int_equal(release1(b, t, 2, l), RUSK_ENOTOWNER); /* a non-owner is refused */
	assert_int_equal(release1(b, t, 1, l), RUSK_OK);
	assert_int_equal(release1(b, t, 1, l), RUSK_EFREE); /* double release */
	rusk_lease l2;
	assert_int_equal(commit1(b, t, claim(1, 0, r0, 1, 0, 0, 0), &l2), RUSK_OK);
	assert_int_equal(l2.gen, l.gen + 1);                 /* a new tenure, a new generation */
	assert_int_equal(release1(b, t, 1, l), RUSK_ESTALE); /* the old lease */
	assert_int_equal(release1(b, t, 1, l2), RUSK_OK);
	/* memory and GPUs: machine 1 has 65536 MiB and 2 GPUs; a claim whose RUs are free
	 * but the memory or GPUs short answers RUSK_ESHORT_ (before: RUSK_ECONFLICT, so the
	 * tools counted it a conflict) */
	uint32_t r89[] = {8, 9}, r10[] = {10}, r11[] = {11}, r12[] = {12}, r13[] = {13},
	         r14[] = {14}, r16[] = {16, 16}, r_x[] = {16, 24};
	assert_int_equal(commit1(b, t, claim(3, 1, r89, 2, 60000, 1, 1000), lv), RUSK_OK);
	assert_int_equal(commit1(b, t, claim(4, 1, r10, 1, 10000, 0, 0), NULL), RUSK_ESHORT_);
	assert_int_equal(commit1(b, t, claim(5, 1, r11, 1, 0, 2, 1000), NULL), RUSK_ESHORT_);
	assert_int_equal(commit1(b, t, claim(6, 1, r12, 1, 0, 1, 500), NULL), RUSK_OK);
	assert_int_equal(commit1(b, t, claim(7, 1, r13, 1, 0, 1, 500), NULL), RUSK_OK);
	assert_int_equal(commit1(b, t, claim(8, 1, r14, 1, 0, 1, 100), NULL), RUSK_ESHORT_);
	assert_int_equal(release1(b, t, 3, lv[0]), RUSK_OK); /* the anchor: shares come back */
	assert_int_equal(release1(b, t, 3, lv[1]), RUSK_OK);
	assert_int_equal(commit1(b, t, claim(4, 1, r10, 1, 10000, 0, 0), NULL), RUSK_OK);
	assert_int_equal(commit1(b, t, claim(8, 1, r14, 1, 0, 1, 100), NULL), RUSK_OK);
	assert_int_equal(commit1(b, t, claim(9, 2, r16, 2, 0, 0, 0), NULL), RUSK_EDUP);
	assert_int_equal(commit1(b, t, claim(10, 2, r_x, 2, 0, 0, 0), NULL), RUSK_EINVAL);
	assert_int_equal(commit1(b, t, claim(11, 250, r0, 1, 0, 0, 0), NULL), RUSK_ERANGE);
	/* a pipelined batch on partition 1 with collisions inside it */
	rusk_partition_info pi;
	rusk_cluster_partition(c, 1, &pi);
	uint32_t rus[32];
	rusk_bk_claim cl[32];
	for (uint32_t i = 0; i < 32; i++) {
		rus[i] = pi.first_ru + (i * 7) % 24; /* 24 distinct RUs for 32 claims */
		cl[i] = claim(100 + i, rusk_cluster_ru_machine(c, rus[i]), &rus[i], 1, 0, 0, 0);
	}
	int rcs[32];
	rusk_lease ls[32];
	assert_int_equal(b->ops->commit(b->self, 1, cl, 32, rcs, ls), RUSK_OK);
	int won = 0;
	for (int i = 0; i < 32; i++) {
		note(t, rcs[i], rcs[i] == RUSK_OK ? ls[i].gen : 0);
		won += rcs[i] == RUSK_OK;
	}
	assert_int_equal(won, 24);
	for (uint32_t p = 0; p < 2; p++) {
		assert_int_equal(b->ops->snapshot(b->self, p, t->words[p], 64, NULL), RUSK_OK);
		assert_int_equal(b->ops->recount(b->self, p, &t->count[p]), RUSK_OK);
		assert_int_equal(t->count[p].mismatch, 0);
	}
	assert_int_equal(t->count[0].held, 4); /* RUs 12, 13, 10, 14 */
	assert_int_equal(t->count[1].held, 24);
	assert_int_equal(t->count[0].held + t->count[0].free, 1600);
}

static void test_same_decisions(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster(400);
	rusk_state mem, red;
	char err[512];
	assert_int_equal(rusk_state_open_("memory", c, 1, &mem, err, sizeof err), RUSK_OK);
	int rc = rusk_state_open_(url, c, 1, &red, err, sizeof err);
	if (rc != RUSK_OK)
		fail_msg("%s", err);
	trace a, b;
	sequence(c, &mem.bk, &a);
	rusk_cluster *c2 = make_cluster(400); /* the Redis run's own shape source */
	sequence(c2, &red.bk, &b);
	assert_int_equal(a.n, b.n);
	/* Generations are compared where no failed commit touched the RUs first: the kernel
	 * takes a vector claim's RUs before it checks the shares and rolls them back (the
	 * generation advances), Redis checks first. Both are valid ABA tokens; the answers
	 * (who holds what) are the same everywhere. */
	for (int i = 0; i < a.n; i++) {
		bool cmp_gen = i < 8 || i >= a.n - 32;
		if (a.rc[i] != b.rc[i] || (cmp_gen && a.gen[i] != b.gen[i]))
			fail_msg("step %d: memory %d gen %u, redis %d gen %u", i, a.rc[i], a.gen[i],
			         b.rc[i], b.gen[i]);
	}
	assert_memory_equal(a.words, b.words, sizeof a.words);
	assert_int_equal(a.count[0].held, b.count[0].held);
	assert_int_equal(a.count[1].free, b.count[1].free);
	/* versions move with changes on Redis */
	uint64_t v0 = 0, v1 = 0;
	uint64_t words[64];
	assert_int_equal(red.bk.ops->snapshot(red.bk.self, 0, words, 64, &v0), RUSK_OK);
	uint32_t r100[] = {100};
	rusk_bk_claim cl = claim(77, rusk_cluster_ru_machine(c2, 100), r100, 1, 0, 0, 0);
	rusk_lease l;
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &cl, 1, &rc, &l), RUSK_OK);
	assert_int_equal(rc, RUSK_OK);
	assert_int_equal(red.bk.ops->snapshot(red.bk.self, 0, words, 64, &v1), RUSK_OK);
	assert_int_equal(v1, v0 + 1);
	assert_false(words[100 / 64] >> (100 % 64) & 1);
	/* bad arguments: codes, no crash */
	assert_int_equal(red.bk.ops->snapshot(red.bk.self, 2, words, 64, NULL), RUSK_ERANGE);
	assert_int_equal(red.bk.ops->snapshot(red.bk.self, 0, words, 1, NULL), RUSK_EINVAL);
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, NULL, 1, &rc, &l), RUSK_EINVAL);
	rusk_bk_lease bad = {0, {0, 0}};
	assert_int_equal(red.bk.ops->release(red.bk.self, 0, &bad, 1, &rc), RUSK_OK);
	assert_int_equal(rc, RUSK_EINVAL);
	rusk_state_close_(&mem);
	rusk_state_close_(&red);
	rusk_cluster_destroy(c);
	rusk_cluster_destroy(c2);
}

/* A hiredis connection to the master serving partition p's slot, and its replica's port
 * (from the master's ROLE: CLUSTER SLOTS of redis 7.0 leaves out replicas that have not
 * replicated anything yet). */
static redisContext *master_of(uint32_t p, int *replica_port)
{
	const char *colon = strrchr(url, ':');
	int port = atoi(colon + 1);
	redisContext *x = redisConnect("127.0.0.1", port);
	assert_non_null(x);
	assert_int_equal(x->err, 0);
	redisReply *r = redisCommand(x, "CLUSTER SLOTS");
	assert_non_null(r);
	uint16_t s = rusk_redis_slot_of_(p);
	int mport = -1;
	for (size_t i = 0; i < r->elements; i++) {
		redisReply *e = r->element[i];
		if (e->element[0]->integer <= s && s <= e->element[1]->integer)
			mport = (int)e->element[2]->element[1]->integer;
	}
	freeReplyObject(r);
	redisFree(x);
	assert_true(mport > 0);
	x = redisConnect("127.0.0.1", mport);
	assert_non_null(x);
	assert_int_equal(x->err, 0);
	*replica_port = -1;
	r = redisCommand(x, "ROLE"); /* master, offset, [[ip, port, offset], ...] */
	if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
	    r->element[2]->type == REDIS_REPLY_ARRAY && r->element[2]->elements > 0)
		*replica_port = atoi(r->element[2]->element[0]->element[1]->str);
	if (r != NULL)
		freeReplyObject(r);
	return x;
}

static void test_script_error_writes_nothing(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster(400);
	rusk_state red;
	char err[512];
	assert_int_equal(rusk_state_open_(url, c, 1, &red, err, sizeof err), RUSK_OK);
	int rport;
	redisContext *x = master_of(0, &rport);
	redisReply *r = redisCommand(x, "HDEL rusk:{p0}:mach 3");
	freeReplyObject(r);
	uint32_t rus[] = {24};
	rusk_bk_claim cl = claim(5, 3, rus, 1, 100, 0, 0);
	int rc = RUSK_OK;
	rusk_lease l;
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &cl, 1, &rc, &l), RUSK_OK);
	/* a corrupt state, not an I/O error (it was RUSK_EIO, exit 1 from rusk agent) */
	assert_int_equal(rc, RUSK_ECORRUPT);
	assert_non_null(
	        strstr(rusk_redis_last_error_(red.redis), "rusk:{p0}:mach has no machine 3"));
	rusk_bk_count k;
	assert_int_equal(red.bk.ops->recount(red.bk.self, 0, &k), RUSK_OK);
	assert_int_equal(k.held, 0); /* nothing half-committed */
	assert_int_equal(k.mismatch, 0);
	r = redisCommand(x, "HGET rusk:{p0}:mem 3");
	assert_string_equal(r->str, "65536");
	freeReplyObject(r);
	redisFree(x);
	rusk_state_close_(&red);
	/* a run of another shape is refused, naming both */
	rusk_cluster *c2 = make_cluster(600);
	int rc2 = rusk_state_open_(url, c2, 0, &red, err, sizeof err);
	assert_int_equal(rc2, RUSK_ESHAPE);
	assert_non_null(strstr(err, "another cluster shape"));
	assert_non_null(strstr(err, url));
	rusk_cluster_destroy(c2);
	rusk_cluster_destroy(c);
}

/* The 64 snapshot buffers of a sync step's read (snapshots): w[i] is words[i], of 8 words. */
static void snap_bufs(uint64_t words[64][8], uint64_t *w[64], uint32_t nw[64])
{
	for (uint32_t i = 0; i < 64; i++) {
		w[i] = words[i];
		nw[i] = 8;
	}
}

/* 640 machines of 8 RUs in 64 partitions (spread on the 3 masters), the state written
 * afresh and opened in *red. */
static rusk_cluster *open_64(rusk_state *red)
{
	rusk_cluster *c = fx_cluster((fx_shape){
	        .machines = 640, .rus = 8, .per_rack = 10, .per_cell = 1, .partitions = 64});
	char err[512];
	if (rusk_state_open_(url, c, 1, red, err, sizeof err) != RUSK_OK)
		fail_msg("%s", err);
	return c;
}

/* Partition p's eight keys' DUMPs (the serialized values; NULL: absent) into d. */
static void dump_part(redisContext *x, uint32_t p, char *d[8], size_t len[8])
{
	static const char *const k[] = {"own", "gen", "free", "mem", "gpu", "rec", "ver", "mach"};
	for (int i = 0; i < 8; i++) {
		redisReply *r = redisCommand(x, "DUMP rusk:{p%u}:%s", p, k[i]);
		assert_true(r != NULL &&
		            (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL));
		d[i] = NULL;
		len[i] = 0;
		if (r->type == REDIS_REPLY_STRING) {
			d[i] = malloc(r->len);
			assert_non_null(d[i]);
			memcpy(d[i], r->str, r->len);
			len[i] = r->len;
		}
		freeReplyObject(r);
	}
}

/* The dumps a and b are the same, key by key (what names the key that changed); frees b. */
static void same_dumps(char *a[8], const size_t al[8], char *b[8], const size_t bl[8],
                       const char *what)
{
	static const char *const k[] = {"own", "gen", "free", "mem", "gpu", "rec", "ver", "mach"};
	for (int i = 0; i < 8; i++) {
		if (al[i] != bl[i] || (al[i] > 0 && memcmp(a[i], b[i], al[i]) != 0))
			fail_msg("%s wrote rusk:{p0}:%s", what, k[i]);
		free(b[i]);
	}
}

/* One corruption case on partition 0 of c (through x, its master): task 7 holds RU 24 of
 * machine 3 with a record (100 MiB, half a GPU); cmds[0..n) corrupt the partition; then a
 * commit there (task 8, RU 25, the same vector) must be RUSK_ECORRUPT naming `said` and
 * writing nothing, and the release of task 7's lease the same with `rsaid` (NULL: the
 * release does not read what was corrupted, and goes through). */
static void corrupt_case(redisContext *x, rusk_cluster *c, const char *const *cmds, int n,
                         const char *said, const char *rsaid)
{
	rusk_state red;
	char err[512];
	assert_int_equal(rusk_state_open_(url, c, 1, &red, err, sizeof err), RUSK_OK);
	uint32_t r0[] = {24}, r1[] = {25};
	rusk_bk_claim hold = claim(7, 3, r0, 1, 100, 1, 500);
	int rc = RUSK_EIO;
	rusk_lease l;
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &hold, 1, &rc, &l), RUSK_OK);
	assert_int_equal(rc, RUSK_OK);
	for (int k = 0; k < n; k++) {
		redisReply *r = redisCommand(x, cmds[k]);
		assert_true(r != NULL && r->type != REDIS_REPLY_ERROR);
		freeReplyObject(r);
	}
	char *before[8], *after[8];
	size_t bl[8], al[8];
	dump_part(x, 0, before, bl);
	rusk_bk_claim more = claim(8, 3, r1, 1, 100, 1, 500);
	rc = RUSK_OK;
	rusk_lease l2;
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &more, 1, &rc, &l2), RUSK_OK);
	printf("%s: commit %d: %s\n", cmds[n - 1], rc, rusk_redis_last_error_(red.redis));
	dump_part(x, 0, after, al);
	same_dumps(before, bl, after, al, "a failed commit");
	assert_int_equal(rc, RUSK_ECORRUPT);
	assert_non_null(strstr(rusk_redis_last_error_(red.redis), said));
	assert_non_null(strstr(rusk_redis_last_error_(red.redis), "nothing written"));
	rusk_bk_lease rel = {7, l};
	rc = RUSK_EIO;
	assert_int_equal(red.bk.ops->release(red.bk.self, 0, &rel, 1, &rc), RUSK_OK);
	if (rsaid == NULL) {
		assert_int_equal(rc, RUSK_OK);
	} else {
		printf("%s: release %d: %s\n", cmds[n - 1], rc, rusk_redis_last_error_(red.redis));
		dump_part(x, 0, after, al);
		same_dumps(before, bl, after, al, "a failed release");
		assert_int_equal(rc, RUSK_ECORRUPT);
		assert_non_null(strstr(rusk_redis_last_error_(red.redis), rsaid));
	}
	for (int i = 0; i < 8; i++)
		free(before[i]);
	rusk_state_close_(&red);
}

/* A table of corrupt_case cases: up to two commands each, what the commit says and what the
 * release says (NULL: it does not read that), each run on a fresh state of 400 machines. */
typedef struct corrupt_spec {
	const char *cmd[2];
	const char *said, *rsaid;
} corrupt_spec;

static void corrupt_cases(const corrupt_spec *cases, size_t n)
{
	rusk_cluster *c = make_cluster(400);
	int rport;
	redisContext *x = master_of(0, &rport);
	for (size_t t = 0; t < n; t++)
		corrupt_case(x, c, cases[t].cmd, cases[t].cmd[1] != NULL ? 2 : 1, cases[t].said,
		             cases[t].rsaid);
	redisFree(x);
	rusk_cluster_destroy(c);
}

/* Each of partition 0's eight keys overwritten with a value of another type, in turn (a
 * string for a hash, a hash for :free and :ver): a commit there with memory and a GPU share
 * (it touches all eight keys) and the release of a lease with its record (every key but
 * :mach, which the release does not touch: it is done) answer RUSK_ECORRUPT naming the key
 * and its type, and write nothing: the eight keys' DUMPs are the same before and after. The
 * write scripts check a key they read by that read and ask the TYPE only of the keys whose
 * first touch is a write (:free, :rec, :ver by its GET; redis_lua.h): without a check, the
 * script writes before it fails (or names no key) and this fails. */
static void test_corrupt_key_writes_nothing(void **state)
{
	(void)state;
	static const char *const k[] = {"own", "gen", "free", "mem", "gpu", "rec", "ver", "mach"};
	rusk_cluster *c = make_cluster(400);
	int rport;
	redisContext *x = master_of(0, &rport);
	for (int key = 0; key < 8; key++) {
		bool hash = key != 2 && key != 6;
		char del[64], set[64], said[96];
		snprintf(del, sizeof del, "DEL rusk:{p0}:%s", k[key]);
		snprintf(set, sizeof set,
		         hash ? "SET rusk:{p0}:%s garbage" : "HSET rusk:{p0}:%s a b", k[key]);
		snprintf(said, sizeof said, "rusk:{p0}:%s has type %s, not %s", k[key],
		         hash ? "string" : "hash", hash ? "hash" : "string");
		const char *cmds[2] = {del, set};
		/* :mach: the release does not read it */
		corrupt_case(x, c, cmds, 2, said, key == 7 ? NULL : said);
	}
	redisFree(x);
	rusk_cluster_destroy(c);
}

/* What init_part always writes, missing or out of range (the fifth review: the write
 * scripts took an absent :free, :ver or :mem for an empty one, a machine missing from :mach
 * for an I/O error, and a negative generation for a number, so a deleted :free was written
 * afresh, a deleted :mem read as no memory, and RU 24 stayed held after a clean exit): each
 * is RUSKCORRUPT naming the key and what is wrong, and nothing is written. `said` is what the
 * commit's error says, `rsaid` the release's (NULL: the release does not read that). */
static void test_missing_values_write_nothing(void **state)
{
	(void)state;
	static const corrupt_spec cases[] = {
	        {{"DEL rusk:{p0}:free"}, "rusk:{p0}:free is absent", "rusk:{p0}:free is absent"},
	        {{"SET rusk:{p0}:free x"},
	         "rusk:{p0}:free is 1 bytes, too short for RU 25",
	         "rusk:{p0}:free is 1 bytes, too short for RU 24"},
	        {{"DEL rusk:{p0}:ver"}, "rusk:{p0}:ver is absent", "rusk:{p0}:ver is absent"},
	        {{"HDEL rusk:{p0}:mach 3"}, "rusk:{p0}:mach has no machine 3", NULL},
	        {{"HDEL rusk:{p0}:mem 3"},
	         "rusk:{p0}:mem has no field 3",
	         "rusk:{p0}:mem has no field 3"},
	        {{"DEL rusk:{p0}:gpu"},
	         "rusk:{p0}:gpu has no field 3.0",
	         "rusk:{p0}:gpu has no field 3."},
	        {{"HSET rusk:{p0}:gen 25 -7", "HSET rusk:{p0}:gen 24 -7"},
	         "rusk:{p0}:gen field 25 is not a count: -7",
	         "rusk:{p0}:gen field 24 is not a count: -7"},
	        {{"HSET rusk:{p0}:gen 25 2097152"},
	         "rusk:{p0}:gen field 25 is not a generation: 2097152",
	         NULL},
	};
	corrupt_cases(cases, sizeof cases / sizeof cases[0]);
}

/* Values the write scripts parse, add to or compare, present and of the right type but out
 * of what the scripts write (the seventh review): each is RUSKCORRUPT naming the key, and
 * nothing is written. Before, a count Redis cannot add to (past 2^63-1, a leading zero) passed
 * the scripts' "all digits" check, and the HINCRBY or INCR after the first writes failed: a
 * commit wrote the RU's owner and free bit, then failed as an I/O error naming :mach; an owner
 * that is no owner (`abc`) was a conflict, a release refused as another owner's; a :mach
 * entry without the RU the client asked for (its shape has it there) was RUSKRANGE, exit 1.
 * :mem, :gpu and a record's memory and milli are counts below 2^32 (init_part writes a
 * machine's MiB, a uint32; the sums of two stay far from 2^63); :ver below 2^63-1. The
 * record case needs a second corruption for the commit to fail (a commit does not read
 * :rec's fields): RU 25's owner. */
static void test_counts_in_range_write_nothing(void **state)
{
	(void)state;
	static const corrupt_spec cases[] = {
	        {{"HSET rusk:{p0}:mem 3 99999999999999999999"},
	         "rusk:{p0}:mem field 3 is past 2^32: 99999999999999999999",
	         "rusk:{p0}:mem field 3 is past 2^32: 99999999999999999999"},
	        {{"HSET rusk:{p0}:mem 3 4294967296"},
	         "rusk:{p0}:mem field 3 is past 2^32: 4294967296",
	         "rusk:{p0}:mem field 3 is past 2^32: 4294967296"},
	        {{"HSET rusk:{p0}:gpu 3.0 0500"},
	         "rusk:{p0}:gpu field 3.0 is not a count: 0500",
	         "rusk:{p0}:gpu field 3.0 is not a count: 0500"},
	        {{"SET rusk:{p0}:ver 9223372036854775807"},
	         "rusk:{p0}:ver is 9223372036854775807, past what INCR can add to",
	         "rusk:{p0}:ver is 9223372036854775807, past what INCR can add to"},
	        {{"SET rusk:{p0}:ver 007"},
	         "rusk:{p0}:ver is not a count: 007",
	         "rusk:{p0}:ver is not a count: 007"},
	        {{"HSET rusk:{p0}:own 25 abc", "HSET rusk:{p0}:own 24 abc"},
	         "rusk:{p0}:own field 25 is not an owner: abc",
	         "rusk:{p0}:own field 24 is not an owner: abc"},
	        {{"HSET rusk:{p0}:own 25 0", "HSET rusk:{p0}:own 24 -1"},
	         "rusk:{p0}:own field 25 is not an owner: 0",
	         "rusk:{p0}:own field 24 is not an owner: -1"},
	        {{"HSET rusk:{p0}:own 25 1.5",
	          "HSET rusk:{p0}:rec 24 3,99999999999999999999,500,0"},
	         "rusk:{p0}:own field 25 is not an owner: 1.5",
	         "rusk:{p0}:rec field 24 is past 2^32: 99999999999999999999"},
	        {{"HSET rusk:{p0}:mach 3 100,8,65536,2"},
	         "rusk:{p0}:mach machine 3 is 100,8,65536,2, without RU 25",
	         NULL},
	        {{"HSET rusk:{p0}:mach 3 24,8,65536"},
	         "rusk:{p0}:mach machine 3 is not a shape: 24,8,65536",
	         NULL},
	};
	corrupt_cases(cases, sizeof cases / sizeof cases[0]);
}

/* What the reads take (a sync step's snapshot of :free and :ver; the ledger's owners and
 * generations) checked as the scripts write them: an empty :free (or one shorter than the
 * partition's RUs), a :ver no INCR can add to, an owner that is no owner and a generation
 * past 2^21 are RUSK_ECORRUPT naming the key. Before, an empty :free read as every RU
 * held (the agent placed 0 of 100 tasks, exit 0), and an owner `abc`, `0`, `-1` or `1.5`
 * was read as owner 0, 2^64-1 or 1 (the ledger went on, exit 0). */
static void test_reads_check_values(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster(400); /* 2 partitions of 1600 RUs: :free 200 bytes */
	rusk_state red;
	char err[512];
	assert_int_equal(rusk_state_open_(url, c, 1, &red, err, sizeof err), RUSK_OK);
	int rport;
	redisContext *x = master_of(0, &rport);
	static const struct {
		const char *key, *val, *undo, *said;
	} snap[] = {
	        /* :free last: written afresh below */
	        {"ver", "9223372036854775807", "0",
	         "rusk:{p0}:ver is not a count below 2^63-1: 9223372036854775807"},
	        {"ver", "012", "0", "rusk:{p0}:ver is not a count below 2^63-1: 012"},
	        {"free", "", NULL,
	         "rusk:{p0}:free is 0 bytes, too short for the partition's 1600 RUs"},
	        {"free", "xy", NULL,
	         "rusk:{p0}:free is 2 bytes, too short for the partition's 1600 RUs"},
	};
	uint64_t words[64], ver = 7;
	for (size_t t = 0; t < sizeof snap / sizeof snap[0]; t++) {
		char *before[8], *after[8];
		size_t bl[8], al[8];
		freeReplyObject(redisCommand(x, "SET rusk:{p0}:%s %s", snap[t].key, snap[t].val));
		dump_part(x, 0, before, bl);
		int rc = red.bk.ops->snapshot(red.bk.self, 0, words, 32, &ver);
		const char *msg = rusk_redis_last_error_(red.redis);
		if (rc != RUSK_ECORRUPT || strstr(msg, snap[t].said) == NULL)
			fail_msg("%s=%s: snapshot %d: %s", snap[t].key, snap[t].val, rc, msg);
		uint64_t *w[2] = {words, words + 32};
		uint32_t nw[2] = {32, 32}, ps[2] = {1, 0};
		int rcs[2];
		assert_int_equal(red.bk.ops->snapshots(red.bk.self, ps, 2, w, nw, NULL, rcs),
		                 RUSK_ECORRUPT);
		assert_int_equal(rcs[0], RUSK_OK);
		assert_int_equal(rcs[1], RUSK_ECORRUPT);
		dump_part(x, 0, after, al);
		same_dumps(before, bl, after, al, "a snapshot");
		for (int i = 0; i < 8; i++)
			free(before[i]);
		if (snap[t].undo != NULL)
			freeReplyObject(
			        redisCommand(x, "SET rusk:{p0}:%s %s", snap[t].key, snap[t].undo));
	}
	/* :free written afresh (init): a snapshot reads again */
	rusk_state_close_(&red);
	assert_int_equal(rusk_state_open_(url, c, 1, &red, err, sizeof err), RUSK_OK);
	assert_int_equal(red.bk.ops->snapshot(red.bk.self, 0, words, 32, &ver), RUSK_OK);
	static const struct {
		const char *set, *said;
	} own[] = {
	        {"HSET rusk:{p0}:own 25 abc", "rusk:{p0}:own field 25 is abc, not an owner"},
	        {"HSET rusk:{p0}:own 25 0", "rusk:{p0}:own field 25 is 0, not an owner"},
	        {"HSET rusk:{p0}:own 25 -1", "rusk:{p0}:own field 25 is -1, not an owner"},
	        {"HSET rusk:{p0}:own 25 1.5", "rusk:{p0}:own field 25 is 1.5, not an owner"},
	        {"HSET rusk:{p0}:own 25 07", "rusk:{p0}:own field 25 is 07, not an owner"},
	        /* namespace 1, task 0 */
	        {"HSET rusk:{p0}:own 25 1099511627776",
	         "rusk:{p0}:own field 25 is 1099511627776, not an owner"},
	        {"HSET rusk:{p0}:own 25 18446744073709551616",
	         "rusk:{p0}:own field 25 is 18446744073709551616, not an owner"},
	        {"HSET rusk:{p0}:own 25 7", NULL}, /* the next one's owner */
	        {"HSET rusk:{p0}:gen 25 2097152",
	         "rusk:{p0}:gen field 25 is 2097152, not a generation 0..2097151"},
	        {"HSET rusk:{p0}:gen 25 x", "rusk:{p0}:gen field 25 is x, not a generation"},
	};
	for (size_t t = 0; t < sizeof own / sizeof own[0]; t++) {
		freeReplyObject(redisCommand(x, own[t].set));
		if (own[t].said == NULL)
			continue;
		uint32_t rus[4], gens[4];
		uint64_t owners[4];
		size_t n = 9;
		int rc = rusk_redis_owners_(red.redis, 0, rus, owners, gens, 4, &n);
		const char *msg = rusk_redis_last_error_(red.redis);
		if (rc != RUSK_ECORRUPT || strstr(msg, own[t].said) == NULL)
			fail_msg("%s: owners %d: %s", own[t].set, rc, msg);
		assert_int_equal(n, 0);
	}
	/* an owner and a generation as the scripts write them */
	freeReplyObject(redisCommand(x, "HSET rusk:{p0}:own 25 1099511627777"));
	freeReplyObject(redisCommand(x, "HSET rusk:{p0}:gen 25 2097151"));
	uint32_t rus[4], gens[4];
	uint64_t owners[4];
	size_t n = 0;
	assert_int_equal(rusk_redis_owners_(red.redis, 0, rus, owners, gens, 4, &n), RUSK_OK);
	assert_int_equal(n, 1);
	assert_int_equal(rus[0], 25);
	assert_int_equal(owners[0], UINT64_C(1099511627777));
	assert_int_equal(gens[0], 2097151);
	redisFree(x);
	rusk_state_close_(&red);
	rusk_cluster_destroy(c);
}

/* Owner namespaces (kernel/backend.h "Owner ids"): the same task id under two namespaces
 * is two owners. Neither claims, releases or resends as the other; each run's namespace,
 * taken with rusk_redis_run_ns_, differs from every other's. */
static void test_owner_namespaces(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster(400);
	rusk_state red;
	char err[512];
	assert_int_equal(rusk_state_open_(url, c, 1, &red, err, sizeof err), RUSK_OK);
	uint64_t ns1 = 0, ns2 = 0;
	assert_int_equal(rusk_redis_run_ns_(red.redis, &ns1), RUSK_OK);
	assert_int_equal(rusk_redis_run_ns_(red.redis, &ns2), RUSK_OK);
	assert_true(ns1 >= 1 && ns2 != ns1 && ns2 <= RUSK_OWNER_NS_MAX);
	uint64_t task = RUSK_DISPATCH_ID_BASE + 7; /* a dispatcher handle, equal in both runs */
	uint64_t a = ns1 << RUSK_OWNER_NS_SHIFT | task, b = ns2 << RUSK_OWNER_NS_SHIFT | task;
	assert_int_equal(rusk_owner_task_(a), task);
	assert_int_equal(rusk_owner_ns_(b), ns2);
	uint32_t rus[] = {40, 41};
	rusk_lease la[2], lb[2];
	int rc = RUSK_EIO;
	rusk_bk_claim ca = claim(a, 5, rus, 2, 0, 0, 0), cb = claim(b, 5, rus, 2, 0, 0, 0);
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &ca, 1, &rc, la), RUSK_OK);
	assert_int_equal(rc, RUSK_OK);
	/* the other namespace's same task: refused, and not taken for a resend of its own */
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &cb, 1, &rc, lb), RUSK_OK);
	assert_int_equal(rc, RUSK_ECONFLICT);
	/* releases by the same task id in another namespace, or none: not the owner */
	rusk_bk_lease xb = {b, la[0]}, x0 = {task, la[0]}, xa[2] = {{a, la[0]}, {a, la[1]}};
	assert_int_equal(red.bk.ops->release(red.bk.self, 0, &xb, 1, &rc), RUSK_OK);
	assert_int_equal(rc, RUSK_ENOTOWNER);
	assert_int_equal(red.bk.ops->release(red.bk.self, 0, &x0, 1, &rc), RUSK_OK);
	assert_int_equal(rc, RUSK_ENOTOWNER);
	uint32_t owners_rus[8];
	uint64_t owners[8];
	size_t n = 0;
	assert_int_equal(rusk_redis_owners_(red.redis, 0, owners_rus, owners, NULL, 8, &n),
	                 RUSK_OK);
	assert_int_equal(n, 2);
	assert_int_equal(owners[0], a); /* the full owner id, read back */
	int rcs[2] = {RUSK_EIO, RUSK_EIO};
	assert_int_equal(red.bk.ops->release(red.bk.self, 0, xa, 2, rcs), RUSK_OK);
	assert_int_equal(rcs[0], RUSK_OK);
	assert_int_equal(rcs[1], RUSK_OK);
	/* a task id whose low 40 bits are 0 is no task, whatever its namespace */
	rusk_bk_claim bad = claim(ns1 << RUSK_OWNER_NS_SHIFT, 5, rus, 1, 0, 0, 0);
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &bad, 1, &rc, la), RUSK_OK);
	assert_int_equal(rc, RUSK_EINVAL);
	rusk_bk_count k;
	assert_int_equal(red.bk.ops->recount(red.bk.self, 0, &k), RUSK_OK);
	assert_int_equal(k.held, 0);
	assert_int_equal(k.mismatch, 0);
	rusk_state_close_(&red);
	rusk_cluster_destroy(c);
}

/* The port of the master serving slot s (CLUSTER SLOTS from the URL's last seed). */
static int master_port(uint16_t s)
{
	const char *colon = strrchr(url, ':');
	redisContext *x = redisConnect("127.0.0.1", atoi(colon + 1));
	assert_true(x != NULL && x->err == 0);
	redisReply *r = redisCommand(x, "CLUSTER SLOTS");
	assert_non_null(r);
	int port = -1;
	for (size_t i = 0; i < r->elements; i++) {
		redisReply *e = r->element[i];
		if (e->element[0]->integer <= s && s <= e->element[1]->integer)
			port = (int)e->element[2]->element[1]->integer;
	}
	freeReplyObject(r);
	redisFree(x);
	assert_true(port > 0);
	return port;
}

/* Runs one command on the node at port and checks it did not answer an error. */
static void node_cmd(int port, const char *fmt, ...)
{
	redisContext *x = redisConnect("127.0.0.1", port);
	assert_true(x != NULL && x->err == 0);
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(x, fmt, ap);
	va_end(ap);
	assert_non_null(r);
	if (r->type == REDIS_REPLY_ERROR)
		fail_msg("127.0.0.1:%d: %s", port, r->str);
	freeReplyObject(r);
	redisFree(x);
}

static void node_id(int port, char id[41])
{
	redisContext *x = redisConnect("127.0.0.1", port);
	assert_true(x != NULL && x->err == 0);
	redisReply *r = redisCommand(x, "CLUSTER MYID");
	assert_true(r != NULL && r->type == REDIS_REPLY_STRING && r->len == 40);
	memcpy(id, r->str, 41);
	freeReplyObject(r);
	redisFree(x);
}

/* Moves partition p's keys (rusk:{pN}:*) from the node at src to the node at dst: both
 * nodes told (IMPORTING / MIGRATING), the keys moved with MIGRATE; with finish, the slot
 * given to dst on every master (then the old master answers MOVED), else left half-way
 * (the old master answers ASK for the keys gone). */
static void migrate_keys(uint32_t p, int src, int dst, const int *masters, int n_masters, int nkeys,
                         bool finish);
static void migrate_part(uint32_t p, int src, int dst, const int *masters, int n_masters,
                         bool finish)
{
	migrate_keys(p, src, dst, masters, n_masters, 8, finish);
}

/* migrate_part, moving only the first nkeys of the partition's keys (fewer than 8: the
 * old master answers TRYAGAIN to a script over keys some of which moved). */
static void migrate_keys(uint32_t p, int src, int dst, const int *masters, int n_masters, int nkeys,
                         bool finish)
{
	uint16_t s = rusk_redis_slot_of_(p);
	char sid[41], did[41];
	node_id(src, sid);
	node_id(dst, did);
	node_cmd(dst, "CLUSTER SETSLOT %u IMPORTING %s", s, sid);
	node_cmd(src, "CLUSTER SETSLOT %u MIGRATING %s", s, did);
	static const char *const k[] = {"own", "gen", "free", "mem", "gpu", "rec", "ver", "mach"};
	for (int i = 0; i < nkeys; i++) {
		char key[48];
		snprintf(key, sizeof key, "rusk:{p%u}:%s", p, k[i]);
		redisContext *x = redisConnect("127.0.0.1", src);
		assert_true(x != NULL && x->err == 0);
		redisReply *r = redisCommand(x, "MIGRATE 127.0.0.1 %d %s 0 5000", dst, key);
		assert_non_null(r);
		/* OK, or NOKEY for a key the partition does not have (an empty hash) */
		if (r->type == REDIS_REPLY_ERROR)
			fail_msg("MIGRATE %s: %s", key, r->str);
		freeReplyObject(r);
		redisFree(x);
	}
	if (!finish)
		return;
	node_cmd(dst, "CLUSTER SETSLOT %u NODE %s", s, did);
	node_cmd(src, "CLUSTER SETSLOT %u NODE %s", s, did);
	for (int i = 0; i < n_masters; i++)
		if (masters[i] != src && masters[i] != dst)
			node_cmd(masters[i], "CLUSTER SETSLOT %u NODE %s", s, did);
}

/* Every partition of c read one at a time (snapshot) and in one call (snapshots): the
 * same words and versions, equal to want (the expected free bits, backend.h's layout). */
static void check_all(rusk_cluster *c, const rusk_backend *b, const uint32_t *ps, uint32_t np,
                      uint64_t (*want)[8], const char *when)
{
	uint64_t one[64][8] = {{0}}, many[64][8] = {{0}}, v1[64], vn[64];
	uint64_t *w[64];
	uint32_t nw[64];
	int rcs[64];
	for (uint32_t i = 0; i < np; i++) {
		w[i] = many[ps[i]];
		nw[i] = 8;
		rcs[i] = RUSK_EIO;
	}
	int rc = b->ops->snapshots(b->self, ps, np, w, nw, vn, rcs);
	if (rc != RUSK_OK)
		fail_msg("%s: snapshots: %d (%s)", when, rc, rusk_redis_last_error_(b->self));
	for (uint32_t i = 0; i < np; i++) {
		uint32_t p = ps[i];
		assert_int_equal(rcs[i], RUSK_OK);
		assert_int_equal(b->ops->snapshot(b->self, p, one[p], 8, &v1[p]), RUSK_OK);
		if (memcmp(one[p], many[p], sizeof one[p]) != 0 ||
		    memcmp(want[p], many[p], sizeof want[p]) != 0)
			fail_msg("%s: partition %u: the pipelined read differs from the state "
			         "(words 0-1: pipelined %#" PRIx64 " %#" PRIx64 ", alone %#" PRIx64
			         " %#" PRIx64 ", want %#" PRIx64 " %#" PRIx64 ")",
			         when, p, many[p][0], many[p][1], one[p][0], one[p][1], want[p][0],
			         want[p][1]);
		if (vn[i] != v1[p])
			fail_msg("%s: partition %u: version %" PRIu64 " pipelined, %" PRIu64
			         " alone",
			         when, p, vn[i], v1[p]);
	}
	/* the owners likewise (a ledger pass's read): pipelined and one at a time; not while a
	 * slot is half-migrated (a script over keys some of which moved is answered TRYAGAIN
	 * until the migration ends, pipelined or not) */
	if (strstr(when, "(ASK)") != NULL)
		return;
	enum { CAP = 64 * 80 };
	static uint32_t rus[CAP], rus1[80], gens[CAP], gens1[80];
	static uint64_t own[CAP], own1[80];
	size_t off[65];
	rusk_redis *r = b->self;
	if (rusk_redis_owners_many_(r, ps, np, rus, own, gens, CAP, off, rcs) != RUSK_OK)
		fail_msg("%s: owners_many: %s", when, rusk_redis_last_error_(r));
	for (uint32_t i = 0; i < np; i++) {
		size_t n1 = 0;
		assert_int_equal(rcs[i], RUSK_OK);
		assert_int_equal(rusk_redis_owners_(r, ps[i], rus1, own1, gens1, 80, &n1), RUSK_OK);
		if (off[i + 1] - off[i] != n1 ||
		    n1 != 80 - (uint32_t)__builtin_popcountll(want[ps[i]][0]) -
		                    (uint32_t)__builtin_popcountll(want[ps[i]][1]))
			fail_msg("%s: partition %u: %zu owners pipelined, %zu alone", when, ps[i],
			         off[i + 1] - off[i], n1);
		assert_memory_equal(rus + off[i], rus1, n1 * sizeof *rus1);
		assert_memory_equal(own + off[i], own1, n1 * sizeof *own1);
		assert_memory_equal(gens + off[i], gens1, n1 * sizeof *gens1);
	}
	(void)c;
}

/*
 * A view's sync step reads many partitions in one call (backend.h snapshots: one pipeline
 * per node). Over 64 partitions spread on the 3 masters, in a shuffled order, it answers
 * exactly the state (each partition's bitmap and version as a read of it alone), in about
 * one round trip per master; and still exactly while a partition's slot is half-migrated
 * (its keys moved: the old master answers ASK for them), after the migration (MOVED: the
 * client's map is stale), and after the client's connections to a master were killed (the
 * pipeline's outcome there unknown: read again).
 */
static void test_snapshots_pipelined(void **state)
{
	(void)state;
	rusk_state red;
	rusk_cluster *c = open_64(&red);
	int rc;
	const rusk_backend *b = &red.bk;
	assert_non_null(b->ops->snapshots);
	/* 80 RUs a partition: bits 0..79 free; partition p gives up RUs p % 80 and 79 - p % 7 */
	uint64_t want[64][8] = {{0}};
	uint32_t ps[64];
	for (uint32_t p = 0; p < 64; p++) {
		rusk_partition_info pi;
		rusk_cluster_partition(c, p, &pi);
		assert_int_equal(pi.rus, 80);
		want[p][0] = ~UINT64_C(0);
		want[p][1] = (UINT64_C(1) << 16) - 1;
		uint32_t loc[2] = {p % 80, 79 - p % 7};
		for (int j = 0; j < 2; j++) {
			uint32_t ru = pi.first_ru + loc[j];
			rusk_bk_claim cl = claim(1000 + p * 2 + (uint64_t)j,
			                         rusk_cluster_ru_machine(c, ru), &ru, 1, 0, 0, 0);
			rusk_lease l;
			assert_int_equal(b->ops->commit(b->self, p, &cl, 1, &rc, &l), RUSK_OK);
			assert_int_equal(rc, RUSK_OK);
			want[p][loc[j] / 64] &= ~(UINT64_C(1) << (loc[j] % 64));
		}
		ps[p] = (p * 37) % 64; /* shuffled: the nodes' commands interleave */
	}
	/* the masters that serve the 64 partitions: all three */
	int masters[3], n_masters = 0;
	for (uint32_t p = 0; p < 64; p++) {
		int port = master_port(rusk_redis_slot_of_(p)), k = 0;
		while (k < n_masters && masters[k] != port)
			k++;
		if (k == n_masters) {
			assert_true(n_masters < 3);
			masters[n_masters++] = port;
		}
	}
	assert_int_equal(n_masters, 3);
	rusk_redis_stats s0 = rusk_redis_stats_(red.redis);
	uint64_t v[64];
	uint64_t words[64][8];
	uint64_t *w[64];
	uint32_t nw[64];
	int rcs[64];
	snap_bufs(words, w, nw);
	assert_int_equal(b->ops->snapshots(b->self, ps, 64, w, nw, v, rcs), RUSK_OK);
	rusk_redis_stats s1 = rusk_redis_stats_(red.redis);
	/* one pipeline per master, where one call per partition took 64 round trips */
	assert_int_equal(s1.round_trips - s0.round_trips, 3);
	assert_int_equal(s1.commands - s0.commands, 128);
	check_all(c, b, ps, 64, want, "healthy");

	/* partition 5's slot half-migrated to another master: ASK for its keys */
	uint32_t mp = 5;
	int src = master_port(rusk_redis_slot_of_(mp)),
	    dst = masters[0] == src ? masters[1] : masters[0];
	migrate_part(mp, src, dst, masters, n_masters, false);
	s0 = rusk_redis_stats_(red.redis);
	check_all(c, b, ps, 64, want, "half-migrated (ASK)");
	s1 = rusk_redis_stats_(red.redis);
	assert_true(s1.redirects > s0.redirects);
	/* ... the migration finished: the old master answers MOVED */
	migrate_part(mp, src, dst, masters, n_masters, true);
	s0 = rusk_redis_stats_(red.redis);
	check_all(c, b, ps, 64, want, "migrated (MOVED)");
	s1 = rusk_redis_stats_(red.redis);
	assert_true(s1.redirects > s0.redirects);
	assert_int_equal(master_port(rusk_redis_slot_of_(mp)), dst);
	/* a commit there lands on the new node, and both reads see it (a commit during the
	 * migration is answered TRYAGAIN: its script's keys are not all there) */
	rusk_partition_info pi;
	rusk_cluster_partition(c, mp, &pi);
	uint32_t ru = pi.first_ru + 40;
	rusk_bk_claim cl = claim(9999, rusk_cluster_ru_machine(c, ru), &ru, 1, 0, 0, 0);
	rusk_lease l;
	assert_int_equal(b->ops->commit(b->self, mp, &cl, 1, &rc, &l), RUSK_OK);
	assert_int_equal(rc, RUSK_OK);
	want[mp][0] &= ~(UINT64_C(1) << 40);
	check_all(c, b, ps, 64, want, "after a commit on the new node");

	/* the client's connections to a master killed: what was pending there is read again */
	node_cmd(dst, "CLIENT KILL TYPE normal");
	s0 = rusk_redis_stats_(red.redis);
	check_all(c, b, ps, 64, want, "a master's connections killed");
	s1 = rusk_redis_stats_(red.redis);
	assert_true(s1.reconnects > s0.reconnects);

	/* bad arguments: per-partition codes, the others read */
	uint32_t bad[2] = {3, 64};
	nw[1] = 8;
	assert_int_equal(b->ops->snapshots(b->self, bad, 2, w, nw, v, rcs), RUSK_ERANGE);
	assert_int_equal(rcs[0], RUSK_OK);
	assert_int_equal(rcs[1], RUSK_ERANGE);
	assert_memory_equal(words[0], want[3], 2 * sizeof want[3][0]); /* 80 RUs: 2 words */

	/* the slot back where it was, for the tests after this one */
	migrate_part(mp, dst, src, masters, n_masters, true);
	rusk_state_close_(&red);
	rusk_cluster_destroy(c);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* A fault healed by another thread while a call waits it out: after ms, heal(arg). */
typedef struct healer {
	int ms;
	void (*heal)(struct healer *);
	uint32_t p;
	int src, dst, masters[3], n_masters, base;
} healer;

static void *heal_later(void *arg)
{
	healer *h = arg;
	sleep_ms(h->ms);
	h->heal(h);
	return NULL;
}

static void heal_migration(healer *h)
{
	migrate_keys(h->p, h->src, h->dst, h->masters, h->n_masters, 8, true);
}

/* Waits (at most 10 s) until each of the 6 nodes from base says cluster_state:ok and
 * slot s served: a slot given back with ADDSLOTS reaches the others by gossip. */
static void wait_served(int base, uint16_t s)
{
	int ok = 0;
	for (int t = 0; t < 200 && ok < 6; t++) {
		ok = 0;
		for (int i = 0; i < 6; i++) {
			redisContext *x = redisConnect("127.0.0.1", base + i);
			assert_true(x != NULL && x->err == 0);
			redisReply *r = redisCommand(x, "CLUSTER INFO");
			bool up = r != NULL && r->type == REDIS_REPLY_STRING &&
			          strstr(r->str, "cluster_state:ok") != NULL;
			if (r != NULL)
				freeReplyObject(r);
			r = redisCommand(x, "CLUSTER COUNTKEYSINSLOT %u", s);
			up &= r != NULL && r->type == REDIS_REPLY_INTEGER;
			if (r != NULL)
				freeReplyObject(r);
			r = redisCommand(x, "CLUSTER SLOTS");
			bool has = false;
			for (size_t k = 0; r != NULL && k < r->elements; k++)
				has |= r->element[k]->element[0]->integer <= s &&
				       s <= r->element[k]->element[1]->integer;
			if (r != NULL)
				freeReplyObject(r);
			redisFree(x);
			ok += up && has;
		}
		if (ok < 6)
			sleep_ms(50);
	}
	assert_int_equal(ok, 6);
}

static void heal_clusterdown(healer *h)
{
	uint16_t s = rusk_redis_slot_of_(h->p);
	node_cmd(h->src, "CLUSTER ADDSLOTS %u", s);
	node_cmd(h->src, "CLUSTER BUMPEPOCH");
}

/*
 * One partition's claims, one pipeline (exec_slot), while its slot answers TRYAGAIN (half
 * migrated: one of its keys moved) and while it answers CLUSTERDOWN (the slot deleted on
 * every node): the call waits the fault out and, once healed by another thread ~1 s later,
 * every claim gets its own answer -- each RU held by its own task with its lease's
 * generation, as the partition's owners read afterwards say. The partition is served by
 * the URL's first seed (the client's first node), whose connection a map refresh uses:
 * one made while the pipeline's replies were still unread took the next command's reply
 * for CLUSTER SLOTS's, and every later command got a neighbour's.
 */
static void test_pipeline_waits_out_tryagain_and_clusterdown(void **state)
{
	(void)state;
	rusk_state red;
	rusk_cluster *c = open_64(&red);
	int rc;
	const rusk_backend *b = &red.bk;
	int base = atoi(strrchr(strchr(url, ','), ':') + 1) - 1; /* the URL's first seed */
	healer h = {.ms = 1000, .base = base};
	bool found = false;
	for (uint32_t p = 0; p < 64; p++) {
		int port = master_port(rusk_redis_slot_of_(p)), k = 0;
		while (k < h.n_masters && h.masters[k] != port)
			k++;
		if (k == h.n_masters && h.n_masters < 3)
			h.masters[h.n_masters++] = port;
		if (port == base && !found) {
			h.p = p;
			found = true;
		}
	}
	assert_true(found);
	assert_int_equal(h.n_masters, 3);
	h.src = base;
	h.dst = h.masters[0] == base ? h.masters[1] : h.masters[0];
	rusk_partition_info pi;
	rusk_cluster_partition(c, h.p, &pi);
	enum { N = 32 };
	for (int round = 0; round < 2; round++) {
		/* CLUSTERDOWN first: the slot still on the first seed */
		const char *when = round == 0 ? "CLUSTERDOWN" : "half-migrated (TRYAGAIN)";
		if (round == 0) {
			for (int i = 0; i < 6; i++)
				node_cmd(base + i, "CLUSTER DELSLOTS %u", rusk_redis_slot_of_(h.p));
			h.heal = heal_clusterdown;
		} else {
			migrate_keys(h.p, h.src, h.dst, h.masters, h.n_masters, 1, false);
			h.heal = heal_migration;
		}
		uint32_t rus[N];
		rusk_bk_claim cl[N];
		int rcs[N];
		rusk_lease ls[N];
		for (uint32_t i = 0; i < N; i++) {
			rus[i] = pi.first_ru + (uint32_t)round * N + i;
			cl[i] = claim(5000 + (uint64_t)round * N + i,
			              rusk_cluster_ru_machine(c, rus[i]), &rus[i], 1, 0, 0, 0);
			rcs[i] = RUSK_EIO;
		}
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, heal_later, &h), 0);
		rusk_redis_stats s0 = rusk_redis_stats_(red.redis);
		rc = b->ops->commit(b->self, h.p, cl, N, rcs, ls);
		rusk_redis_stats s1 = rusk_redis_stats_(red.redis);
		pthread_join(th, NULL);
		if (rc != RUSK_OK)
			fail_msg("%s: commit: %d (%s)", when, rc,
			         rusk_redis_last_error_(red.redis));
		/* the fault was met (the call waited it out), and waited in rounds, not per
		 * reply: a 50 ms sleep per retryable reply took 32 x 50 ms a round */
		assert_true(s1.outage_ns - s0.outage_ns >= 500000000u);
		for (uint32_t i = 0; i < N; i++)
			if (rcs[i] != RUSK_OK)
				fail_msg("%s: claim %u (RU %u): %d, want RUSK_OK", when, i, rus[i],
				         rcs[i]);
		wait_served(base, rusk_redis_slot_of_(h.p)); /* every node knows it again */
		/* the state says the same: each RU held by its own task, at its lease's gen */
		static uint32_t orus[80], ogen[80];
		static uint64_t oown[80];
		size_t no = 0;
		assert_int_equal(rusk_redis_owners_(red.redis, h.p, orus, oown, ogen, 80, &no),
		                 RUSK_OK);
		assert_int_equal(no, (size_t)(round + 1) * N);
		for (uint32_t i = 0; i < N; i++) {
			size_t k = 0;
			while (k < no && orus[k] != rus[i])
				k++;
			assert_true(k < no);
			assert_int_equal(oown[k], cl[i].task);
			assert_int_equal(ogen[k], ls[i].gen);
			assert_int_equal(ls[i].ru, rus[i]);
		}
	}
	/* the slot back where it was, for the tests after this one */
	migrate_part(h.p, h.dst, h.src, h.masters, h.n_masters, true);
	rusk_state_close_(&red);
	rusk_cluster_destroy(c);
}

static void test_moved_after_manual_failover(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster(400);
	rusk_state red;
	char err[512];
	assert_int_equal(rusk_state_open_(url, c, 1, &red, err, sizeof err), RUSK_OK);
	uint32_t rus[] = {0};
	rusk_bk_claim cl = claim(1, 0, rus, 1, 0, 0, 0);
	int rc;
	rusk_lease l;
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &cl, 1, &rc, &l), RUSK_OK);
	assert_int_equal(rc, RUSK_OK);
	int rport = -1;
	redisContext *m = master_of(0, &rport);
	redisFree(m);
	assert_true(rport > 0);
	redisContext *rep = redisConnect("127.0.0.1", rport);
	assert_non_null(rep);
	/* A manual failover that cannot start (the master does not know the replica yet, the
	 * gossip of a cluster just made) is dropped by Redis after 5 s without an answer: asked
	 * again every 3 s, for at most 30 s (it failed 4 runs of 8 when asked once). */
	redisReply *r;
	int promoted = 0;
	for (int i = 0; i < 300 && !promoted; i++) { /* at most 30 s */
		if (i % 30 == 0) {
			r = redisCommand(rep, "CLUSTER FAILOVER");
			assert_non_null(r);
			freeReplyObject(r);
		}
		r = redisCommand(rep, "ROLE");
		promoted = r != NULL && r->type == REDIS_REPLY_ARRAY &&
		           strcmp(r->element[0]->str, "master") == 0;
		if (r != NULL)
			freeReplyObject(r);
		if (!promoted)
			sleep_ms(100);
	}
	redisFree(rep);
	assert_true(promoted);
	rusk_redis_stats before = rusk_redis_stats_(red.redis);
	uint32_t rus2[] = {1};
	rusk_bk_claim c2 = claim(2, 0, rus2, 1, 0, 0, 0);
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &c2, 1, &rc, &l), RUSK_OK);
	assert_int_equal(rc, RUSK_OK);
	rusk_redis_stats after = rusk_redis_stats_(red.redis);
	assert_true(after.redirects > before.redirects); /* the old master said MOVED */
	rusk_bk_count k;
	assert_int_equal(red.bk.ops->recount(red.bk.self, 0, &k), RUSK_OK);
	assert_int_equal(k.held, 2); /* the first commit was replicated before the handover */
	assert_int_equal(k.mismatch, 0);
	/* a master without the scripts (flushed, as a promoted replica may be): NOSCRIPT, the
	 * scripts are loaded again there, and only the first call pays for it */
	rep = redisConnect("127.0.0.1", rport);
	assert_non_null(rep);
	r = redisCommand(rep, "SCRIPT FLUSH");
	assert_non_null(r);
	freeReplyObject(r);
	redisFree(rep);
	uint32_t rus3[] = {2}, rus4[] = {3};
	rusk_bk_claim c3 = claim(3, 0, rus3, 1, 0, 0, 0), c4 = claim(4, 0, rus4, 1, 0, 0, 0);
	before = rusk_redis_stats_(red.redis);
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &c3, 1, &rc, &l), RUSK_OK);
	assert_int_equal(rc, RUSK_OK);
	assert_int_equal(red.bk.ops->commit(red.bk.self, 0, &c4, 1, &rc, &l), RUSK_OK);
	assert_int_equal(rc, RUSK_OK);
	after = rusk_redis_stats_(red.redis);
	assert_int_equal(after.noscript, before.noscript + 1);
	rusk_state_close_(&red);
	rusk_cluster_destroy(c);
}

/* The pid of the redis-server at port (INFO server's process_id). */
static long node_pid(int port)
{
	redisContext *x = redisConnect("127.0.0.1", port);
	assert_true(x != NULL && x->err == 0);
	redisReply *r = redisCommand(x, "INFO server");
	assert_true(r != NULL && r->type == REDIS_REPLY_STRING);
	const char *at = strstr(r->str, "process_id:");
	assert_non_null(at);
	long pid = strtol(at + 11, NULL, 10);
	freeReplyObject(r);
	redisFree(x);
	assert_true(pid > 1);
	return pid;
}

static double secs_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/*
 * A master stopped (SIGSTOP) while the others answer, with rusk_redis_set_unavailable_ms_
 * (300 ms): a sync step's reads of 64 partitions return after about one read timeout, the
 * stopped master's partitions unread (RUSK_EIO) and every other one read exactly; its
 * partitions are marked unavailable (rusk_redis_part_unavailable_), the others not; while
 * marked, a commit there fails at once with RUSK_EAGAIN and nothing sent, a read too, and
 * a commit elsewhere lands. Once the master answers again (SIGCONT), a retry (at most 2 s
 * after the last) finds it: every partition reads, none is marked, and a commit there
 * lands. The pause stays under the test cluster's cluster-node-timeout (2 s): no failover.
 * Before, the first read waited on the stopped master for as long as it was stopped.
 */
static void test_stuck_master_unavailable(void **state)
{
	(void)state;
	rusk_state red;
	rusk_cluster *c = open_64(&red);
	int rc;
	const rusk_backend *b = &red.bk;
	rusk_redis_set_unavailable_ms_(red.redis, 300);
	uint32_t ps[64];
	int port[64];
	for (uint32_t p = 0; p < 64; p++) {
		ps[p] = p;
		port[p] = master_port(rusk_redis_slot_of_(p));
	}
	int victim = port[7];
	long pid = node_pid(victim);
	uint64_t words[64][8];
	uint64_t *w[64];
	uint32_t nw[64];
	int rcs[64];
	snap_bufs(words, w, nw);
	/* healthy: every partition reads, all 80 RUs free */
	assert_int_equal(b->ops->snapshots(b->self, ps, 64, w, nw, NULL, rcs), RUSK_OK);
	assert_int_equal(kill((pid_t)pid, SIGSTOP), 0);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(words, 0, sizeof words);
	int rc1 = b->ops->snapshots(b->self, ps, 64, w, nw, NULL, rcs);
	double first_s = secs_since(&t0);
	int rcs1[64], marked[64], n_victim = 0;
	memcpy(rcs1, rcs, sizeof rcs);
	for (uint32_t p = 0; p < 64; p++)
		marked[p] = rusk_redis_part_unavailable_(red.redis, p);
	uint64_t words1[64][8];
	memcpy(words1, words, sizeof words);
	/* while marked: at once, nothing sent */
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rusk_partition_info pi;
	rusk_cluster_partition(c, 7, &pi);
	uint32_t ru = pi.first_ru + 3;
	rusk_bk_claim cl = claim(4242, rusk_cluster_ru_machine(c, ru), &ru, 1, 0, 0, 0);
	rusk_lease l;
	int crc = RUSK_OK;
	int rc_stuck = b->ops->commit(b->self, 7, &cl, 1, &crc, &l);
	int crc_stuck = crc;
	uint64_t one[8];
	int rc_read = b->ops->snapshot(b->self, 7, one, 8, NULL);
	double marked_s = secs_since(&t1);
	uint32_t other = 0;
	while (port[other] == victim)
		other++;
	rusk_cluster_partition(c, other, &pi);
	uint32_t ru2 = pi.first_ru + 5;
	rusk_bk_claim cl2 = claim(4243, rusk_cluster_ru_machine(c, ru2), &ru2, 1, 0, 0, 0);
	int rc_other = b->ops->commit(b->self, other, &cl2, 1, &crc, &l);
	int crc_other = crc;
	assert_int_equal(kill((pid_t)pid, SIGCONT), 0); /* before any assertion */
	printf("stopped master %d: reads returned in %.3f s (%d), then %.4f s while marked\n",
	       victim, first_s, rc1, marked_s);
	assert_true(first_s < 1.5); /* one read timeout (300 ms), not the pause */
	assert_int_equal(rc1, RUSK_EIO);
	for (uint32_t p = 0; p < 64; p++) {
		bool stuck = port[p] == victim;
		n_victim += stuck;
		assert_int_equal(rcs1[p], stuck ? RUSK_EIO : RUSK_OK);
		assert_int_equal(marked[p], stuck ? 1 : 0);
		if (!stuck) /* 80 RUs free: words 0 and 1 */
			assert_true(words1[p][0] == ~UINT64_C(0) &&
			            words1[p][1] == (UINT64_C(1) << 16) - 1);
	}
	assert_true(n_victim > 0 && n_victim < 64);
	assert_int_equal(rc_stuck, RUSK_EAGAIN);
	assert_int_equal(crc_stuck, RUSK_EIO); /* untouched: nothing was sent */
	assert_int_equal(rc_read, RUSK_EAGAIN);
	assert_true(marked_s < 0.25);
	assert_int_equal(rc_other, RUSK_OK);
	assert_int_equal(crc_other, RUSK_OK);
	/* back: a retry finds it within its backoff (250 ms, then 500 ms ...) */
	int left = 64;
	for (int t = 0; t < 60 && left > 0; t++) {
		sleep_ms(100);
		rc = b->ops->snapshots(b->self, ps, 64, w, nw, NULL, rcs);
		left = 0;
		for (uint32_t p = 0; p < 64; p++)
			left += rcs[p] != RUSK_OK || rusk_redis_part_unavailable_(red.redis, p);
	}
	assert_int_equal(left, 0);
	assert_int_equal(rc, RUSK_OK);
	assert_int_equal(b->ops->commit(b->self, 7, &cl, 1, &crc, &l), RUSK_OK);
	assert_int_equal(crc, RUSK_OK);
	rusk_bk_count k;
	assert_int_equal(b->ops->recount(b->self, 7, &k), RUSK_OK);
	assert_int_equal(k.held, 1); /* the claim refused while marked was never sent */
	assert_int_equal(k.mismatch, 0);
	rusk_state_close_(&red);
	rusk_cluster_destroy(c);
}

/* A field of rusk:{pN}:own that is not an RU of the partition (another program wrote
 * there) is RUSK_ECORRUPT naming the key and the field, from rusk_redis_owners_ and
 * rusk_redis_owners_many_, with no entries: before, the RU was taken as given and a
 * caller's array indexed with it (rusk agent's ledger wrote out of bounds). */
static void test_owners_field_corrupt(void **state)
{
	(void)state;
	rusk_cluster *c = make_cluster(400); /* 2 partitions of 1600 RUs */
	rusk_state red;
	char err[512];
	assert_int_equal(rusk_state_open_(url, c, 1, &red, err, sizeof err), RUSK_OK);
	int rport;
	redisContext *x = master_of(1, &rport);
	const char *bad[] = {"1600", "99999", "4294967297", "-1", "x", ""};
	for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
		redisReply *r = redisCommand(x, "HSET rusk:{p1}:own %s 4294967297", bad[b]);
		freeReplyObject(r);
		uint32_t rus[8];
		uint64_t own[8];
		uint32_t gens[8];
		size_t n = 7;
		assert_int_equal(rusk_redis_owners_(red.redis, 1, rus, own, gens, 8, &n),
		                 RUSK_ECORRUPT);
		assert_int_equal(n, 0);
		const char *msg = rusk_redis_last_error_(red.redis);
		assert_non_null(strstr(msg, "rusk:{p1}:own"));
		char field[64];
		snprintf(field, sizeof field, "field %s,", bad[b]);
		if (strstr(msg, field) == NULL)
			fail_msg("no '%s' in: %s", field, msg);
		uint32_t ps[2] = {0, 1};
		size_t off[3];
		int rcs[2];
		assert_int_equal(
		        rusk_redis_owners_many_(red.redis, ps, 2, rus, own, gens, 8, off, rcs),
		        RUSK_ECORRUPT);
		assert_int_equal(rcs[0], RUSK_OK);
		assert_int_equal(rcs[1], RUSK_ECORRUPT);
		assert_int_equal(off[2], off[1]);
		r = redisCommand(x, "HDEL rusk:{p1}:own %s", bad[b]);
		freeReplyObject(r);
	}
	/* the last RU of the partition is one */
	redisReply *r = redisCommand(x, "HSET rusk:{p1}:own 1599 4294967297");
	freeReplyObject(r);
	uint32_t rus[2];
	uint64_t own[2];
	size_t n = 0;
	assert_int_equal(rusk_redis_owners_(red.redis, 1, rus, own, NULL, 2, &n), RUSK_OK);
	assert_int_equal(n, 1);
	assert_int_equal(rus[0], 3199);
	assert_int_equal(own[0], UINT64_C(4294967297));
	r = redisCommand(x, "HDEL rusk:{p1}:own 1599");
	freeReplyObject(r);
	redisFree(x);
	rusk_state_close_(&red);
	rusk_cluster_destroy(c);
}

int main(void)
{
	url = getenv("RUSK_REDIS_URL");
	if (url == NULL || url[0] == '\0') {
		puts("RUSK_REDIS_URL not set (run through tests/redis/with_cluster.sh): skipped");
		return 77;
	}
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_same_decisions),
	        cmocka_unit_test(test_script_error_writes_nothing),
	        cmocka_unit_test(test_corrupt_key_writes_nothing),
	        cmocka_unit_test(test_missing_values_write_nothing),
	        cmocka_unit_test(test_counts_in_range_write_nothing),
	        cmocka_unit_test(test_reads_check_values),
	        cmocka_unit_test(test_owner_namespaces),
	        cmocka_unit_test(test_owners_field_corrupt),
	        cmocka_unit_test(test_snapshots_pipelined),
	        cmocka_unit_test(test_pipeline_waits_out_tryagain_and_clusterdown),
	        cmocka_unit_test(test_moved_after_manual_failover),
	        cmocka_unit_test(test_stuck_master_unavailable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
