/* SPDX-License-Identifier: MIT */
/*
 * The Redis Cluster backend (redis.h has the layout and the contracts; redis_lua.h the
 * scripts; redis_slot.c the routing arithmetic).
 *
 * Routing. r->slot_node[s] is the index of the node serving slot s (-1: none), filled from
 * CLUSTER SLOTS. Every call but the multi-partition reads routes one partition's
 * commands, so one slot and one node: a batch is appended to that node's hiredis context
 * and its replies read back, one round trip (pipelining; exec_slot). The reads of many
 * partitions (a sync step's snapshots, a ledger pass's owners) go one pipeline per node,
 * all written before any is read (exec_multi). Replies that did not execute are sent again, bounded
 * by failover_ms (an outage's bound, per connection; and the caller's deadline and stop hook:
 * give_up): MOVED (the map is updated, the slot follows its new master), ASK (sent once to the
 * named node after ASKING), NOSCRIPT (scripts loaded there, then sent again), TRYAGAIN,
 * CLUSTERDOWN, LOADING and MASTERDOWN (after a short sleep and a map refresh, once every reply of
 * the pipeline is read: a refresh on the same connection would read a later command's reply). A
 * broken connection (a master killed) leaves the outcome of the whole batch unknown: the map is
 * refreshed until the slot is served by a reachable node (the promoted replica), and the batch is
 * sent again with the scripts' "again" flag set, which makes a commit that already took its RUs for
 * its task, and a release already done, answer success (redis_lua.h). What the old master
 * acknowledged but had not replicated is lost: a later recount against the run's ledger finds those
 * tasks (rusk agent re-places them) and no RU has two holders.
 *
 * Waiting. Every reply is awaited by reply_within, not by hiredis's blocking read: poll in
 * 50 ms slices, so that the stop hook is heard while a read waits (hiredis reads again on
 * EINTR, its timeout afresh), and each read's wait is bounded as it starts: its timeout,
 * what is left of an outage's failover_ms, and of the caller's bound (rusk_redis_set_bound_:
 * a whole start within --failover-ms of its first try).
 *
 * Why not hiredis-cluster or redis-plus-plus: neither is packaged in Debian 12 with hiredis
 * 0.14, and the part needed (one slot per call, no cross-slot commands) is small.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/base.h"
#include "state/redis.h"
#include "state/redis_lua.h"

#define MAX_NODES 64
#define N_KEYS    8
enum { K_OWN, K_GEN, K_FREE, K_MEM, K_GPU, K_REC, K_VER, K_MACH };
static const char *const key_suffix[N_KEYS] = {"own", "gen", "free", "mem",
                                               "gpu", "rec", "ver",  "mach"};
enum { S_COMMIT, S_RELEASE, S_RECOUNT, S_OWNERS, N_SCRIPTS };
static const char *const scripts[N_SCRIPTS] = {rusk_lua_commit, rusk_lua_release, rusk_lua_recount,
                                               rusk_lua_owners};
/* A probe of a node marked unavailable (slot_unavailable): its PING's read timeout. */
#define PROBE_MS      200
/* Leases per release script call: a script blocks its shard while it runs. */
#define RELEASE_CHUNK 256
/* The meta calls' silences kept (struct rusk_redis's sil): more than this many, each
 * narrower than the one before, within a window; the oldest dropped is not believed past. */
#define META_SILENCES 16

/* down_until, down_ms: the node is unavailable until down_until (0: it answers), marked so
 * by a call that met it stuck or unreachable while other nodes answered (unavail_ms; see
 * mark_down); serves: the last slot map names it for a partition's slot (mark_serving). */
typedef struct node {
	char host[64];
	int port;
	redisContext *ctx;
	uint64_t down_until;
	int down_ms;
	char why[96]; /* why it was marked (mark_down), for the skips' message */
	/* when it last gave an answer (sort_reply) and last failed one (a connect, a read:
	 * node_failed), for rusk_redis_outage_'s words: which master did not answer */
	uint64_t ok_ns, fail_ns;
	bool serves;
	/* After the caller's stop hook said stop (stopping): the connection's read timeout
	 * was cut short (short_to), and stop_dead: the node failed a read or a connect since,
	 * so it is not tried again (node_ctx). */
	bool short_to, stop_dead;
	/* connections made to it so far (node_ctx): a WAIT counts only the writes made on its
	 * own connection, so the init's (init_wait) is sent only on the one that wrote */
	uint32_t conns;
} node;

/* One command of a batch: argv strings (borrowed) and, for scripts, the argv index of the
 * "again" flag (-1: none) and which script (for NOSCRIPT). */
typedef struct rcmd {
	int argc;
	const char **argv;
	size_t *len;
	int again_at;
	int script;
} rcmd;

struct rusk_redis {
	char seed_host[RUSK_REDIS_MAX_SEEDS][64];
	int seed_port[RUSK_REDIS_MAX_SEEDS];
	int n_seeds;
	char url[512]; /* as given, its password masked (rusk_redis_mask_url_) */
	/* AUTH [user] pass on every connection (node_ctx), the URL's; auth_failed: a node
	 * refused them (at the start, or on a reconnect after the password was changed),
	 * which no retry mends: every later call fails at once (exec_slot, exec_multi), with
	 * auth_err the refusal's message (rusk_redis_auth_failed_) */
	char user[128], pass[256];
	bool auth_failed;
	/* rusk_redis_state_check_ found some partitions' state gone while others' is there:
	 * lost by the cluster, not a state never written (rusk_redis_outage_: exit 1) */
	bool state_lost;
	/* rusk_redis_state_write_'s WAIT found shards whose replica has not acknowledged the
	 * init (init_wait): which, for rusk_redis_init_unreplicated_ ("": none) */
	char init_warn[768];
	/* missing_part's message when it set state_lost (part_gone says it again) */
	char lost_err[1024];
	char auth_err[1024];
	/* A node connected to but silent past its timeout, or whose connect timed out (a
	 * paused or overloaded server, not a wrong address): set by timed_out, read by
	 * rusk_redis_open_ when no seed gave the map (RUSK_EAGAIN: an outage, not bad input) */
	bool timed_out;
	node nodes[MAX_NODES];
	int n_nodes;
	int16_t slot_node[RUSK_REDIS_SLOTS];
	uint32_t n_parts, n_machines;
	uint32_t *p_first_ru, *p_n_rus, *p_first_m, *p_n_m;
	uint32_t *m_first_ru, *m_n_rus, *m_mem, *m_gpus;
	uint64_t layout; /* layout_digest of the machines (rusk:{meta}:shape) */
	/* the command line's cluster flags (rusk_redis_set_flags_: "--machines N ... --seed S"),
	 * written with the state as rusk:{meta}:flags and compared at a shape mismatch */
	char flags[512];
	char (*keys)[N_KEYS][32];
	char sha[N_SCRIPTS][41];
	int wait_replicas, wait_ms, failover_ms;
	/* rusk_redis_set_unavailable_ms_: a node that does not answer within unavail_ms (its
	 * connections' read timeout, beyond wait_ms) is marked unavailable (0: off, every
	 * outage waited out); probing: node_ctx connects with the probe's short timeout. */
	int unavail_ms;
	bool probing;
	/* Waiting out an outage (exec_slot): outage_t0, when this connection last lost the
	 * cluster (0: it answers), so that failover_ms bounds an outage, not each call of it;
	 * deadline, the caller's (rusk_redis_set_deadline_, 0: none); bounded: the deadline
	 * caps every read and connect too (rusk_redis_set_bound_: the start's bound); stop, its
	 * hook; waiting, its hook while a call waits out an outage (rusk_redis_set_waiting_). */
	uint64_t outage_t0, deadline;
	bool bounded;
	int (*stop)(void *);
	void *stop_arg;
	void (*waiting)(void *);
	void *waiting_arg;
	/* The {meta} shard as this connection saw it (rusk_redis_set_reclaim_lease_): meta_bad,
	 * when a meta call last failed or was slow (or this connection opened, or its meta
	 * calls were spaced wider than meta_space_ms); meta_last, when the last one ended. The
	 * automatic reclaim believes an absent lease only after meta_quiet_ms without a bad
	 * call (0: always, the default). */
	uint64_t meta_bad, meta_last;
	uint32_t meta_quiet_ms, meta_space_ms;
	/* The silences between this connection's meta calls (meta_seen: from one call's answer
	 * to the next one's), for steady_for: the widest since each time, oldest first, each
	 * narrower than the one before (a wider one replaces those before it: only the widest
	 * since a time is asked); sil_lost, the end of one dropped when full (before it,
	 * nothing known). */
	struct {
		uint64_t end, gap;
	} sil[META_SILENCES];
	uint32_t n_sil;
	uint64_t sil_lost;
	/* meta_bad was set by a gap (meta_seen), not only by the start of the watch
	 * (rusk_redis_set_reclaim_lease_): a pass held back by the start's window alone is not
	 * "put off" (out->unsteady), nothing being wrong */
	bool meta_gap;
	/* The dead agents and runs rusk_redis_reclaim_dead_ counted already (out->agents_new,
	 * runs_new): one whose partitions could not all be read is not forgotten, and every
	 * later pass finds it dead again; counted once. An agent id's mark goes when a pass
	 * finds it live (a new process took the id: its death counts anew); run namespaces are
	 * never reused (the last RUSK_REDIS_RECLAIM_RUNS kept, oldest first out). */
	uint8_t dead_seen[RUSK_REDIS_AGENTS];
	uint64_t dead_seen_run[RUSK_REDIS_RECLAIM_RUNS];
	uint32_t n_dead_seen_run;
	rusk_redis_stats st;
	char err[1024];
};

/* One connection's counter (r->st) grows by d: its thread is the only writer, so a relaxed
 * load and store (plain moves, no locked add); partner: the relaxed loads of
 * rusk_redis_stats_, which another thread may make while this one runs (an attached
 * remote's stats, kernel/backend.h). */
static void stat_add(uint64_t *ctr, uint64_t d)
{
	rusk_store64(ctr, rusk_load64(ctr, RUSK_RELAXED) + d, RUSK_RELAXED);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int set_err(rusk_redis *r, int code, const char *fmt, ...) RUSK_PRINTF(3, 4);
static int set_err(rusk_redis *r, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof r->err, fmt, ap);
	va_end(ap);
	return code;
}

static int find_node(rusk_redis *r, const char *host, int port)
{
	for (int i = 0; i < r->n_nodes; i++)
		if (r->nodes[i].port == port && strcmp(r->nodes[i].host, host) == 0)
			return i;
	if (r->n_nodes == MAX_NODES)
		return -1;
	node *n = &r->nodes[r->n_nodes];
	/* A copy by length: host may be r->seed_host[k], which GCC's -Wrestrict cannot tell
	 * apart from n->host through r. */
	size_t len = strnlen(host, sizeof n->host - 1);
	memcpy(n->host, host, len);
	n->host[len] = '\0';
	n->port = port;
	n->ctx = NULL;
	n->down_until = 0;
	n->down_ms = 0;
	n->serves = false;
	return r->n_nodes++;
}

static void drop_ctx(node *n)
{
	if (n->ctx != NULL)
		redisFree(n->ctx);
	n->ctx = NULL;
}

/* A read's timeout once the caller's stop hook said stop: a node that hangs (stopped, not
 * dead: its connections stay open) holds each call that far, not 2 s, and only once
 * (node.stop_dead). Before, each call of the end (ledger reads, releases, the lease's drop)
 * waited 2 s on it: an agent ended 18 s after its SIGINT. */
#define STOP_READ_MS 250

/* Whether the caller's stop hook says stop (a signal came). */
static bool stopping(const rusk_redis *r)
{
	return r->stop != NULL && r->stop(r->stop_arg);
}

/* Node i did not answer (a connect or a read failed): when, for rusk_redis_outage_. */
static void node_failed(rusk_redis *r, int i)
{
	r->nodes[i].fail_ns = now_ns();
}

/* Node i's connection broke (or timed out): dropped; once stopping, never tried again. */
static void node_lost(rusk_redis *r, int i)
{
	node_failed(r, i);
	drop_ctx(&r->nodes[i]);
	if (stopping(r))
		r->nodes[i].stop_dead = true;
}

/* The least a read or a connect gets under a bound (an outage's failover_ms, the start's
 * rusk_redis_set_bound_): the last attempt still sees a cluster that is back. */
#define MIN_READ_MS   100
/* A read waits in slices this long (reply_within), asking the stop hook between them: a
 * signal does not end hiredis's own blocking read (it reads again on EINTR, its timeout
 * started afresh), so that with every seed paused a SIGTERM was heard only when the
 * seeds' 2 s reads were over, up to 4 s late. */
#define READ_SLICE_MS 50

/* What is left of r's bound (rusk_redis_set_bound_) in ms, MIN_READ_MS at least; -1 when
 * r has none. */
static int bound_left_ms(const rusk_redis *r)
{
	if (!r->bounded || r->deadline == 0)
		return -1;
	uint64_t now = now_ns(), left = r->deadline > now ? (r->deadline - now) / 1000000u : 0;
	return left < MIN_READ_MS ? MIN_READ_MS : left > 3600000u ? 3600000 : (int)left;
}

/* A read's timeout before the bounds: wait_ms (WAIT's own) + 2 s, or + unavail_ms where a
 * stuck master is marked unavailable (rusk_redis_set_unavailable_ms_); PROBE_MS for a probe of
 * a marked node. */
static int base_read_ms(const rusk_redis *r)
{
	return r->probing ? PROBE_MS : r->wait_ms + (r->unavail_ms > 0 ? r->unavail_ms : 2000);
}

/* The timeout of a read that starts now, ms at most (a base_read_ms, or the init's WAIT):
 * once stopping STOP_READ_MS + wait_ms; in an outage, at most what is left of its bound;
 * under rusk_redis_set_bound_, at most what is left of that (MIN_READ_MS at least). */
static int read_ms(const rusk_redis *r, int ms, bool stop)
{
	if (stop && !r->probing && ms > r->wait_ms + STOP_READ_MS)
		ms = r->wait_ms + STOP_READ_MS;
	if (r->outage_t0 != 0 && !r->probing) {
		/* In an outage, no read outlasts what is left of --failover-ms (100 ms at
		 * least): a hung node (stopped, its socket open) held each retry for the full
		 * timeout, and a bound of 3 s ended after 11 s (the sixth review). */
		uint64_t end = r->outage_t0 + (uint64_t)r->failover_ms * 1000000u, now = now_ns();
		int left = end > now ? (int)((end - now) / 1000000u) : 0;
		if (left < MIN_READ_MS)
			left = MIN_READ_MS;
		if (left < ms)
			ms = left;
	}
	int b = bound_left_ms(r);
	return b >= 0 && b < ms ? b : ms;
}

/* The socket timeouts of a connection (read_ms's, as the connection is set up): a backstop
 * for its writes; its reads wait in reply_within, which bounds each one as it starts. */
static void set_read_timeout(rusk_redis *r, redisContext *c, bool stop)
{
	int ms = read_ms(r, base_read_ms(r), stop);
	struct timeval rt = {ms / 1000, (ms % 1000) * 1000};
	redisSetTimeout(c, rt);
}

/* Whether c's error is a timeout (hiredis 0.14 names it only by its errno's text: a read
 * past the connection's SO_RCVTIMEO, EAGAIN; a connect past its bound, ETIMEDOUT): noted
 * in r->timed_out. "Connection refused" and the like are not: nothing listens there. */
static bool timed_out(rusk_redis *r, const redisContext *c)
{
	bool t = c != NULL && c->err == REDIS_ERR_IO &&
	         (strcmp(c->errstr, strerror(EAGAIN)) == 0 ||
	          strcmp(c->errstr, strerror(EWOULDBLOCK)) == 0 ||
	          strcmp(c->errstr, strerror(ETIMEDOUT)) == 0);
	r->timed_out |= t;
	return t;
}

/*
 * The next reply on c (whatever is still to be written flushed first): as redisGetReply, but
 * the wait for it is bounded as it starts (read_ms of base_ms) and made in READ_SLICE_MS
 * slices (poll), the stop hook asked between them: a stop that comes while it waits cuts it
 * to STOP_READ_MS + wait_ms from then. A wait that ends so fails as hiredis's own timeout
 * does (c->err, errstr EAGAIN's text: timed_out), and r->timed_out is set. REDIS_OK with
 * *out, or REDIS_ERR (c->err says why).
 */
static int reply_within(rusk_redis *r, redisContext *c, int base_ms, void **out)
{
	*out = NULL;
	if (redisGetReplyFromReader(c, out) != REDIS_OK)
		return REDIS_ERR;
	if (*out != NULL)
		return REDIS_OK; /* read already, with an earlier reply of the pipeline */
	for (int done = 0; !done;)
		if (redisBufferWrite(c, &done) != REDIS_OK)
			return REDIS_ERR;
	bool stop = stopping(r);
	uint64_t end = now_ns() + (uint64_t)read_ms(r, base_ms, stop) * 1000000u;
	for (;;) {
		uint64_t now = now_ns();
		if (now >= end) {
			c->err = REDIS_ERR_IO;
			snprintf(c->errstr, sizeof c->errstr, "%s", strerror(EAGAIN));
			r->timed_out = true;
			return REDIS_ERR;
		}
		uint64_t ms = (end - now + 999999u) / 1000000u;
		struct pollfd pf = {.fd = c->fd, .events = POLLIN};
		int k = poll(&pf, 1, ms < READ_SLICE_MS ? (int)ms : READ_SLICE_MS);
		if (k > 0) { /* readable (or closed: redisBufferRead says so) */
			if (redisBufferRead(c) != REDIS_OK ||
			    redisGetReplyFromReader(c, out) != REDIS_OK)
				return REDIS_ERR;
			if (*out != NULL)
				return REDIS_OK;
			/* Bytes came: the timeout is one of silence, as the socket's was (a big
			 * reply over a slow link takes longer than a read's bound to arrive,
			 * the tenth review), still within the start's bound and what is left
			 * of an outage (read_ms); not after a stop. */
			if (!stop)
				end = now_ns() + (uint64_t)read_ms(r, base_ms, false) * 1000000u;
			continue;
		}
		if (k < 0 && errno != EINTR) {
			c->err = REDIS_ERR_IO;
			snprintf(c->errstr, sizeof c->errstr, "poll: %s", strerror(errno));
			return REDIS_ERR;
		}
		if (!stop && stopping(r)) {
			stop = true;
			uint64_t cut = now_ns() + (uint64_t)(r->wait_ms + STOP_READ_MS) * 1000000u;
			end = cut < end ? cut : end;
		}
	}
}

/* The next reply on c within a read's usual bound (base_read_ms). */
static int get_reply(rusk_redis *r, redisContext *c, void **out)
{
	return reply_within(r, c, base_read_ms(r), out);
}

/* redisCommand on c, its reply awaited by get_reply: NULL on failure (c->err says why). */
static redisReply *command(rusk_redis *r, redisContext *c, const char *fmt, ...) RUSK_PRINTF(3, 4);
static redisReply *command(rusk_redis *r, redisContext *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = redisvAppendCommand(c, fmt, ap);
	va_end(ap);
	void *x = NULL;
	return rc == REDIS_OK && get_reply(r, c, &x) == REDIS_OK ? x : NULL;
}

/* Connects node i if needed (within 500 ms, or what is left of rusk_redis_set_bound_'s
 * bound); NULL and r->err on failure. Once stopping, a node that failed since is not tried
 * again, and the connections' read timeouts are cut short. */
static redisContext *node_ctx(rusk_redis *r, int i)
{
	node *n = &r->nodes[i];
	bool stop = stopping(r);
	if (stop && n->stop_dead) {
		set_err(r, RUSK_EIO, "%s:%d: no answer since the stop (not tried again)", n->host,
		        n->port);
		return NULL;
	}
	if (n->ctx != NULL) {
		if (stop && !n->short_to) {
			set_read_timeout(r, n->ctx, true);
			n->short_to = true;
		}
		return n->ctx;
	}
	int cms = bound_left_ms(r);
	struct timeval tv = {0, (cms >= 0 && cms < 500 ? cms : 500) * 1000L};
	redisContext *c = redisConnectWithTimeout(n->host, n->port, tv);
	if (c == NULL || c->err) {
		timed_out(r, c);
		set_err(r, RUSK_EIO, "cannot connect to %s:%d (%s)", n->host, n->port,
		        c ? c->errstr : "out of memory");
		if (c != NULL)
			redisFree(c);
		n->stop_dead = stop;
		return NULL;
	}
	set_read_timeout(r, c, stop);
	n->short_to = stop;
	if (r->pass[0] != '\0') {
		/* Every connection, first or after a failover, to any node: a cluster with
		 * requirepass answers NOAUTH to anything else. */
		redisReply *a = r->user[0] != '\0' ? command(r, c, "AUTH %s %s", r->user, r->pass)
		                                   : command(r, c, "AUTH %s", r->pass);
		if (a == NULL || a->type == REDIS_REPLY_ERROR) {
			if (a == NULL) {
				timed_out(r, c);
				set_err(r, RUSK_EIO, "%s:%d: AUTH: %s", n->host, n->port,
				        c->errstr);
			} else {
				r->auth_failed = true;
				set_err(r, RUSK_EPARSE,
				        "%s:%d refused the password of --backend (%s): "
				        "authentication failed: the password (or user) is wrong",
				        n->host, n->port, a->str);
				snprintf(r->auth_err, sizeof r->auth_err, "%s", r->err);
			}
			if (a != NULL)
				freeReplyObject(a);
			redisFree(c);
			return NULL;
		}
		freeReplyObject(a);
	}
	n->ctx = c;
	n->conns++;
	return c;
}

/* nodes[].serves from the slot map: the nodes serving a partition's slot (any slot before
 * the shape is known). */
static void mark_serving(rusk_redis *r)
{
	for (int j = 0; j < r->n_nodes; j++)
		r->nodes[j].serves = false;
	for (uint32_t p = 0; p < r->n_parts; p++) {
		int j = r->slot_node[rusk_redis_slot_of_(p)];
		if (j >= 0)
			r->nodes[j].serves = true;
	}
	for (int s = 0; r->n_parts == 0 && s < RUSK_REDIS_SLOTS; s++)
		if (r->slot_node[s] >= 0)
			r->nodes[r->slot_node[s]].serves = true;
}

/* Reads CLUSTER SLOTS from node i into r->slot_node. RUSK_OK, RUSK_EIO (unreachable or
 * broken), RUSK_EPARSE (the node answered with an error: r->err has it). */
static int map_from(rusk_redis *r, int i)
{
	redisContext *c = node_ctx(r, i);
	if (c == NULL)
		return r->auth_failed ? RUSK_EPARSE : RUSK_EIO;
	redisReply *rep = command(r, c, "CLUSTER SLOTS");
	if (rep == NULL) {
		timed_out(r, c);
		set_err(r, RUSK_EIO, "%s:%d: %s", r->nodes[i].host, r->nodes[i].port, c->errstr);
		node_lost(r, i);
		return RUSK_EIO;
	}
	if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOAUTH", 6) == 0) {
		set_err(r, RUSK_EPARSE,
		        "%s:%d needs a password (%s): authentication failed: give it as "
		        "redis://[user:]password@HOST:PORT",
		        r->nodes[i].host, r->nodes[i].port, rep->str);
		r->auth_failed = true;
		snprintf(r->auth_err, sizeof r->auth_err, "%s", r->err);
		freeReplyObject(rep);
		return RUSK_EPARSE;
	}
	if (rep->type == REDIS_REPLY_ERROR) {
		set_err(r, RUSK_EPARSE, "%s:%d is not a Redis Cluster node (CLUSTER SLOTS: %s)",
		        r->nodes[i].host, r->nodes[i].port, rep->str);
		freeReplyObject(rep);
		return RUSK_EPARSE;
	}
	int rc = RUSK_OK;
	if (rep->type != REDIS_REPLY_ARRAY) {
		rc = set_err(r, RUSK_EPARSE, "%s:%d: CLUSTER SLOTS answered no array",
		             r->nodes[i].host, r->nodes[i].port);
		goto out;
	}
	for (int s = 0; s < RUSK_REDIS_SLOTS; s++)
		r->slot_node[s] = -1;
	for (size_t k = 0; k < rep->elements; k++) {
		redisReply *e = rep->element[k];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER ||
		    e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
			continue;
		redisReply *m = e->element[2];
		const char *host =
		        m->element[0]->type == REDIS_REPLY_STRING && m->element[0]->len > 0
		                ? m->element[0]->str
		                : r->nodes[i].host;
		int ni = find_node(r, host, (int)m->element[1]->integer);
		long long a = e->element[0]->integer, b = e->element[1]->integer;
		for (long long s = a; s <= b && s < RUSK_REDIS_SLOTS && ni >= 0; s++)
			if (s >= 0)
				r->slot_node[s] = (int16_t)ni;
	}
	mark_serving(r);
out:
	freeReplyObject(rep);
	return rc;
}

/* A fresh map from any reachable node (connected ones first, then every known node, then
 * the seeds). RUSK_OK or the last failure. */
static int refresh_map(rusk_redis *r)
{
	int rc = RUSK_EIO;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < r->n_nodes; i++) {
			if ((pass == 0) != (r->nodes[i].ctx != NULL))
				continue;
			if (r->nodes[i].down_until > now_ns())
				continue; /* unavailable: its retry is slot_unavailable's */
			rc = map_from(r, i);
			if (rc == RUSK_OK)
				return RUSK_OK;
		}
	for (int k = 0; k < r->n_seeds; k++) {
		int i = find_node(r, r->seed_host[k], r->seed_port[k]);
		if (i >= 0 && (rc = map_from(r, i)) == RUSK_OK)
			return RUSK_OK;
	}
	return rc;
}

/* Whether the CLUSTER NODES text `nodes` (one "ID HOST:PORT@BUS FLAGS ..." line per node)
 * lists node id `id`. */
static bool lists_node(const char *nodes, const char *id, size_t idlen)
{
	for (const char *l = nodes; l != NULL && *l != '\0';) {
		if (strncmp(l, id, idlen) == 0 && l[idlen] == ' ')
			return true;
		l = strchr(l, '\n');
		l = l != NULL ? l + 1 : NULL;
	}
	return false;
}

/*
 * Every seed of the URL belongs to the cluster whose map seed k0 gave: each other seed's
 * CLUSTER MYID is among k0's CLUSTER NODES. Seeds of two clusters would route each slot by
 * k0's map and write there, while processes given the seeds in another order wrote to the
 * other cluster: two master states that never meet. A seed that does not answer is left
 * out (the map came from k0; a killed master is a seed too after a failover); one that
 * answers as no cluster node is refused. RUSK_OK, or RUSK_EIO with r->err naming both
 * seeds.
 */
static int check_seeds(rusk_redis *r, int k0)
{
	if (r->n_seeds < 2)
		return RUSK_OK;
	int i0 = find_node(r, r->seed_host[k0], r->seed_port[k0]);
	redisContext *c0 = i0 >= 0 ? node_ctx(r, i0) : NULL;
	redisReply *nodes = c0 != NULL ? command(r, c0, "CLUSTER NODES") : NULL;
	if (nodes == NULL || nodes->type != REDIS_REPLY_STRING) {
		int rc = set_err(r, RUSK_EIO, "%s:%d: CLUSTER NODES: %s", r->seed_host[k0],
		                 r->seed_port[k0],
		                 nodes != NULL && nodes->type == REDIS_REPLY_ERROR ? nodes->str
		                 : c0 != NULL                                      ? c0->errstr
		                              : "no connection");
		if (nodes != NULL)
			freeReplyObject(nodes);
		return rc;
	}
	int rc = RUSK_OK;
	for (int k = 0; k < r->n_seeds && rc == RUSK_OK && !stopping(r); k++) {
		if (k == k0)
			continue;
		int i = find_node(r, r->seed_host[k], r->seed_port[k]);
		redisContext *c = i >= 0 ? node_ctx(r, i) : NULL;
		redisReply *id = c != NULL ? command(r, c, "CLUSTER MYID") : NULL;
		if (id == NULL) { /* unreachable or broken: not a seed today */
			if (c != NULL)
				drop_ctx(&r->nodes[i]);
			continue;
		}
		if (id->type == REDIS_REPLY_ERROR)
			rc = set_err(r, RUSK_EIO,
			             "%s:%d is not a Redis Cluster node (CLUSTER MYID: %s)",
			             r->seed_host[k], r->seed_port[k], id->str);
		else if (id->type != REDIS_REPLY_STRING ||
		         !lists_node(nodes->str, id->str, id->len))
			rc = set_err(
			        r, RUSK_EIO,
			        "seeds %s:%d and %s:%d belong to different Redis Clusters "
			        "(%s:%d's node id %.12s is not among %s:%d's CLUSTER NODES): give "
			        "the addresses of one cluster",
			        r->seed_host[k0], r->seed_port[k0], r->seed_host[k],
			        r->seed_port[k], r->seed_host[k], r->seed_port[k],
			        id->type == REDIS_REPLY_STRING ? id->str : "?", r->seed_host[k0],
			        r->seed_port[k0]);
		freeReplyObject(id);
	}
	freeReplyObject(nodes);
	return rc;
}

/* Loads every script on node i (SCRIPT LOAD answers the same SHA1 everywhere). */
static int load_scripts(rusk_redis *r, int i)
{
	redisContext *c = node_ctx(r, i);
	if (c == NULL)
		return RUSK_EIO;
	/* all sent before any answer is read: one round trip a node, not one a script (a
	 * link of 100 ms spent 1.2 s of a start's bound here; the eleventh review) */
	for (int s = 0; s < N_SCRIPTS; s++)
		if (redisAppendCommand(c, "SCRIPT LOAD %s", scripts[s]) != REDIS_OK)
			return set_err(r, RUSK_ENOMEM, "out of memory");
	for (int s = 0; s < N_SCRIPTS; s++) {
		void *x = NULL;
		redisReply *rep = get_reply(r, c, &x) == REDIS_OK ? x : NULL;
		if (rep == NULL) { /* no answer (RUSK_EIO): an outage, not a refusal */
			timed_out(r, c);
			set_err(r, RUSK_EIO, "%s:%d: SCRIPT LOAD: no answer (%s)", r->nodes[i].host,
			        r->nodes[i].port, c->errstr);
			node_lost(r, i);
			return RUSK_EIO;
		}
		int bad = rep->type != REDIS_REPLY_STRING || rep->len != 40;
		if (bad)
			set_err(r, RUSK_EPARSE, "%s:%d: SCRIPT LOAD failed: %s", r->nodes[i].host,
			        r->nodes[i].port, rep->type == REDIS_REPLY_ERROR ? rep->str : "?");
		else
			memcpy(r->sha[s], rep->str, 41);
		freeReplyObject(rep);
		if (bad) {
			/* it answered, with an error: the pipeline's other answers unread, so
			 * the connection goes (the next call connects afresh) */
			drop_ctx(&r->nodes[i]);
			return RUSK_EPARSE;
		}
	}
	return RUSK_OK;
}

static bool is_err(const redisReply *rep, const char *prefix)
{
	return rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, prefix, strlen(prefix)) == 0;
}

/* Whether reply rep says the command did not execute and should go again. */
/* Reply y of node ni asks for a password this connection no longer has (NOAUTH): the
 * next call fails at the loop's head, as for a refused AUTH (exec_slot, exec_multi). */
static void note_noauth(rusk_redis *r, int ni, const redisReply *y)
{
	if (!is_err(y, "NOAUTH") || r->auth_failed)
		return;
	r->auth_failed = true;
	snprintf(r->auth_err, sizeof r->auth_err,
	         "%s:%d: authentication failed (%s): give the cluster's password as "
	         "redis://[user:]password@HOST:PORT",
	         r->nodes[ni].host, r->nodes[ni].port, y->str);
}

static bool retryable(const redisReply *rep)
{
	return is_err(rep, "MOVED ") || is_err(rep, "ASK ") || is_err(rep, "NOSCRIPT") ||
	       is_err(rep, "TRYAGAIN") || is_err(rep, "CLUSTERDOWN") || is_err(rep, "LOADING") ||
	       is_err(rep, "MASTERDOWN");
}

/*
 * Whether a call that must go again stops: failover_ms after the connection lost the
 * cluster (outage_t0, set by the first call that met the outage -- a slot unserved, a
 * connection lost, CLUSTERDOWN -- and cleared by the next answer: with the whole cluster
 * gone for good, the first call waits failover_ms and each later one makes one attempt,
 * where every call waiting its own failover_ms held `rusk run` for minutes), or, within
 * an outage only, the caller's deadline or its stop hook (a run stopping on a signal: its
 * threads' calls give up within a retry, ~100 ms, not failover_ms later). A redirect
 * (MOVED, ASK, NOSCRIPT) is no outage: it is bounded by failover_ms from call_t0 only,
 * so a healthy cluster's calls are never cut short by a stop.
 */
static bool give_up(rusk_redis *r, uint64_t call_t0, bool outage)
{
	uint64_t now = now_ns(), since = outage && r->outage_t0 != 0 ? r->outage_t0 : call_t0;
	if (now >= since + (uint64_t)r->failover_ms * 1000000u) {
		if (r->err[0] == '\0')
			set_err(r, RUSK_EIO, "no answer for %d ms", r->failover_ms);
		return true;
	}
	if (!outage)
		return false;
	if (r->waiting != NULL) {
		/* Only here: a call held by an outage, between its tries (never a call the
		 * cluster answers: rusk_redis_set_waiting_). The hook's time counts against
		 * the bounds checked next. */
		r->waiting(r->waiting_arg);
		now = now_ns();
	}
	if (r->deadline != 0 && now >= r->deadline)
		return true; /* r->err has the outage's last error */
	if (r->stop != NULL && r->stop(r->stop_arg)) {
		static const char stopping[] = "stopped while waiting for an answer";
		if (strncmp(r->err, stopping, sizeof stopping - 1) == 0)
			return true; /* said already (asked twice in one call) */
		char why[sizeof r->err];
		snprintf(why, sizeof why, "%s", r->err);
		set_err(r, RUSK_EIO, "%s (%s)", stopping, why[0] ? why : "no answer");
		return true;
	}
	return false;
}

/* An outage met by this call: the connection's clock starts if it was not running. */
static void outage_begins(rusk_redis *r, bool *outage)
{
	*outage = true;
	if (r->outage_t0 == 0)
		r->outage_t0 = now_ns();
}

/* The reply to one pipelined command from c, after ASKING's when asking, into *y: false when
 * the connection broke (the command's outcome unknown). */
static bool read_reply(rusk_redis *r, redisContext *c, bool asking, redisReply **y)
{
	void *x = NULL;
	if (asking && (get_reply(r, c, &x) != REDIS_OK || x == NULL))
		return false;
	if (x != NULL)
		freeReplyObject(x);
	x = NULL;
	if (get_reply(r, c, &x) != REDIS_OK || x == NULL)
		return false;
	*y = x;
	return true;
}

/* What one reply says (sort_reply). */
enum { REPLY_FINAL, REPLY_REDIRECT, REPLY_NOSCRIPT, REPLY_WAIT };

/*
 * sort_reply: reply y of node ni to a pending command (exec_slot, exec_multi). REPLY_FINAL:
 * the command's answer, kept by the caller (the cluster answers: the outage clock stops,
 * give_up). Else the command did not execute and goes again, y freed: REPLY_REDIRECT (MOVED:
 * the slot's node updated; ASK: *ask_to the node named, -1 when unknown), REPLY_NOSCRIPT (a
 * promoted replica has no script cache: the caller loads them on ni once every reply is
 * read), REPLY_WAIT (TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN: the outage begins, r->err
 * names it; the caller waits and refreshes the map once every reply is read, never here:
 * CLUSTER SLOTS on this very connection would read the next command's reply as its own,
 * and every later command a neighbour's).
 */
static int sort_reply(rusk_redis *r, int ni, redisReply *y, int *ask_to, bool *outage)
{
	note_noauth(r, ni, y);
	r->nodes[ni].ok_ns = now_ns(); /* it answered (a redirect or an error too) */
	if (!retryable(y)) {
		if (r->outage_t0 != 0) { /* the outage's short read timeout no longer */
			r->outage_t0 = 0;
			if (r->nodes[ni].ctx != NULL)
				set_read_timeout(r, r->nodes[ni].ctx, stopping(r));
		}
		return REPLY_FINAL;
	}
	int kind = REPLY_WAIT;
	char host[64];
	int ask = 0, port = 0;
	uint16_t s = 0;
	if (rusk_redis_parse_redirect_(y->str, &ask, &s, host, sizeof host, &port) == RUSK_OK) {
		stat_add(&r->st.redirects, 1);
		int to = find_node(r, host, port);
		if (ask)
			*ask_to = to;
		else if (to >= 0)
			r->slot_node[s] = (int16_t)to;
		kind = REPLY_REDIRECT;
	} else if (is_err(y, "NOSCRIPT")) {
		stat_add(&r->st.noscript, 1);
		kind = REPLY_NOSCRIPT;
	} else {
		outage_begins(r, outage);
		set_err(r, RUSK_EIO, "%s:%d: %s", r->nodes[ni].host, r->nodes[ni].port, y->str);
	}
	freeReplyObject(y);
	return kind;
}

/* A node answered NOSCRIPT and the scripts cannot be loaded there: each command still
 * without a reply (rep[i] NULL) that calls a script by its SHA sends the body (EVAL). */
static void send_bodies(rcmd *cmds, size_t n, redisReply *const *rep)
{
	for (size_t i = 0; i < n; i++)
		if (rep[i] == NULL && strcmp(cmds[i].argv[0], "EVALSHA") == 0) {
			cmds[i].argv[0] = "EVAL";
			cmds[i].len[0] = 4;
			cmds[i].argv[1] = scripts[cmds[i].script];
			cmds[i].len[1] = strlen(scripts[cmds[i].script]);
		}
}

/*
 * Unavailable nodes (rusk_redis_set_unavailable_ms_; off by default). A node that a call
 * finds stuck (its read timed out: unavail_ms past wait_ms) or unreachable, while another
 * node that serves a partition answers, is marked unavailable: the call returns at once (what it
 * had sent there: outcome unknown, RUSK_EIO; what it had not: RUSK_EAGAIN) instead of
 * waiting out the outage, and later calls for its slots fail at once (RUSK_EAGAIN, nothing
 * sent) so that the caller goes on with the other nodes' partitions. Its retry is due after
 * 250 ms, doubling to 2 s (mark_down): the next call for one of its slots refreshes the map
 * (a failover may have moved the slot) and probes it (a fresh connection, PING within
 * PROBE_MS); an answer makes it available again. The {meta} node's retry can be made due
 * at once (rusk_redis_meta_retry_now_: a lease renewal that must not wait out the backoff).
 * With no other node answering (the whole cluster out) nothing is skipped: calls wait out the
 * outage as before, within failover_ms.
 */
static bool others_up(const rusk_redis *r, int ni)
{
	for (int j = 0; j < r->n_nodes; j++)
		if (j != ni && r->nodes[j].serves && r->nodes[j].down_until == 0)
			return true;
	return false;
}

/* Whether a failure of node ni makes it unavailable rather than waited out. */
static bool skips(const rusk_redis *r, int ni)
{
	return r->unavail_ms > 0 && ni >= 0 && others_up(r, ni);
}

/* Node ni is unavailable: what failed is r->err (a connect, a read, a probe's PING), said
 * in n->why for slot_unavailable's message: it refused connections (a master killed, its
 * port closed), no answer within ms (stuck: paused, hung), or the error itself. Before, every
 * skip read "no answer within 1000 ms", a killed master's too. */
static void mark_down(rusk_redis *r, int ni, int ms)
{
	node *n = &r->nodes[ni];
	const char *e = r->err, *open = strrchr(e, '(');
	if (strstr(e, strerror(ECONNREFUSED)) != NULL)
		snprintf(n->why, sizeof n->why, "it refused connections");
	else if (strstr(e, strerror(EAGAIN)) != NULL || strstr(e, strerror(EWOULDBLOCK)) != NULL ||
	         strstr(e, strerror(ETIMEDOUT)) != NULL || open == NULL)
		snprintf(n->why, sizeof n->why, "no answer within %d ms", ms);
	else /* "(reason)" at the end of r->err */
		snprintf(n->why, sizeof n->why, "%.*s", (int)strcspn(open + 1, ")"), open + 1);
	n->down_ms = n->down_ms == 0 ? 250 : n->down_ms < 1000 ? 2 * n->down_ms : 2000;
	n->down_until = now_ns() + (uint64_t)n->down_ms * 1000000u;
	drop_ctx(n);
	if (r->outage_t0 == 0) /* the whole cluster's bound counts from here (give_up) */
		r->outage_t0 = now_ns();
}

/* Whether slot's node is unavailable now (and others answer): its retry, when due, is made
 * here (a map refresh, then a probe), before the caller appends anything to a connection. */
static bool slot_unavailable(rusk_redis *r, uint16_t slot)
{
	int ni = r->slot_node[slot];
	if (r->unavail_ms == 0 || ni < 0 || r->nodes[ni].down_until == 0 || !others_up(r, ni))
		return false;
	if (now_ns() < r->nodes[ni].down_until) {
		set_err(r, RUSK_EIO, "%s:%d unavailable (%s): slot %u skipped", r->nodes[ni].host,
		        r->nodes[ni].port, r->nodes[ni].why, slot);
		return true;
	}
	refresh_map(r);
	int nj = r->slot_node[slot];
	if (nj != ni) /* moved (a failover): the new node, unless it is unavailable too */
		return nj >= 0 && now_ns() < r->nodes[nj].down_until;
	node *n = &r->nodes[ni];
	drop_ctx(n);
	r->probing = true; /* its connect and PING read short (base_read_ms) */
	redisContext *c = node_ctx(r, ni);
	redisReply *y = c != NULL ? command(r, c, "PING") : NULL;
	r->probing = false;
	bool ok = y != NULL && y->type == REDIS_REPLY_STATUS;
	if (c != NULL && !ok) /* connected, the PING unanswered (c == NULL: node_ctx said) */
		set_err(r, RUSK_EIO, "%s:%d: PING (%s)", n->host, n->port,
		        y != NULL ? "an answer of another form" : c->errstr);
	if (y != NULL)
		freeReplyObject(y);
	if (!ok) {
		mark_down(r, ni, PROBE_MS);
		set_err(r, RUSK_EIO, "%s:%d unavailable (%s): slot %u skipped", n->host, n->port,
		        n->why, slot);
		return true;
	}
	set_read_timeout(r, c, stopping(r)); /* the probe's short timeout no longer */
	n->down_until = 0;
	n->down_ms = 0;
	return false;
}

/*
 * Sends cmds[0..n) for slot `slot` and stores each final reply in rep[i] (the caller frees
 * them). One round trip when nothing redirects. RUSK_OK, or RUSK_EIO once the outage it met
 * outlasted its bound (give_up: failover_ms since the connection lost the cluster, the
 * caller's deadline, its stop hook; r->err says why; rep[] entries may be NULL). The first
 * attempt is always made, whatever the bound: a cluster back is seen at once.
 */
static int exec_slot(rusk_redis *r, uint16_t slot, rcmd *cmds, size_t n, redisReply **rep)
{
	bool pending_buf[64];
	bool *pending = n <= 64 ? pending_buf : malloc(n * sizeof *pending);
	if (pending == NULL)
		return set_err(r, RUSK_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		pending[i] = true;
		rep[i] = NULL;
	}
	size_t left = n;
	uint64_t t0 = now_ns();
	int ask_node = -1, rc = RUSK_OK, backoff = 50;
	bool outage = false, last = false, lost = false; /* lost: sent, its answer lost */
	for (bool tried = false; left > 0; tried = true) {
		if (r->auth_failed) { /* no retry mends it: at once, not after the outage bound */
			rc = set_err(r, RUSK_EIO, "%s", r->auth_err);
			break;
		}
		if (tried && give_up(r, t0, outage)) {
			/* Past the bound: one last attempt on a fresh map, if a node gives one. A
			 * connection whose outage clock ran out (the whole cluster gone) must still
			 * find the cluster back, on other nodes too (a replica promoted meanwhile):
			 * its map may name only dead ones. */
			if (outage && !last && refresh_map(r) == RUSK_OK) {
				last = true;
				ask_node = -1;
			} else {
				rc = RUSK_EIO;
				if (r->err[0] == '\0')
					set_err(r, RUSK_EIO, "slot %u not served", slot);
				break;
			}
		}
		if (ask_node < 0 && slot_unavailable(r, slot)) {
			rc = lost ? RUSK_EIO : RUSK_EAGAIN; /* nothing sent there now */
			break;
		}
		int ni = ask_node >= 0 ? ask_node : r->slot_node[slot];
		redisContext *c = ni >= 0 ? node_ctx(r, ni) : NULL;
		if (c == NULL && ni >= 0)
			node_failed(r, ni);
		if (c == NULL && skips(r, ni) && !r->auth_failed) {
			mark_down(r, ni, r->unavail_ms);
			rc = lost ? RUSK_EIO : RUSK_EAGAIN;
			break;
		}
		if (c == NULL) {
			if (ni < 0)
				set_err(r, RUSK_EIO, "no node serves slot %u (cluster down?)",
				        slot);
			outage_begins(r, &outage);
			/* Past the bound: no sleep (the last attempt, at the loop's head). */
			if (give_up(r, t0, true))
				continue;
			sleep_ms(100);
			refresh_map(r);
			ask_node = -1;
			continue;
		}
		bool asking = ask_node >= 0;
		ask_node = -1;
		size_t sent = 0;
		for (size_t i = 0; i < n; i++) {
			if (!pending[i])
				continue;
			if (asking)
				redisAppendCommand(c, "ASKING");
			redisAppendCommandArgv(c, cmds[i].argc, cmds[i].argv, cmds[i].len);
			sent++;
		}
		/* WAIT ends a pipeline that may write the state (a commit or release script:
		 * those with an "again" flag), one per pipeline whatever its claims; reads
		 * (snapshots, recounts, owners) go without (redis.h rusk_redis_set_wait_). */
		bool wait = false;
		for (size_t i = 0; i < n && r->wait_replicas > 0; i++)
			wait |= pending[i] && cmds[i].again_at >= 0;
		if (wait)
			redisAppendCommand(c, "WAIT %d %d", r->wait_replicas, r->wait_ms);
		bool broken = false, need_load = false, errwait = false;
		for (size_t i = 0; i < n && !broken; i++) {
			if (!pending[i])
				continue;
			redisReply *y = NULL;
			if (!read_reply(r, c, asking, &y)) {
				broken = true;
				break;
			}
			int kind = sort_reply(r, ni, y, &ask_node, &outage);
			if (kind == REPLY_FINAL) {
				rep[i] = y;
				pending[i] = false;
				left--;
				continue;
			}
			need_load |= kind == REPLY_NOSCRIPT;
			errwait |= kind == REPLY_WAIT;
		}
		if (!broken && wait) {
			void *x = NULL;
			if (get_reply(r, c, &x) != REDIS_OK || x == NULL) {
				broken = true;
			} else {
				redisReply *y = x;
				if (y->type != REDIS_REPLY_INTEGER || y->integer < r->wait_replicas)
					stat_add(&r->st.wait_short, 1);
				freeReplyObject(y);
			}
		}
		stat_add(&r->st.round_trips, 1);
		stat_add(&r->st.commands, sent);
		if (broken) {
			/* The outcome of everything still pending is unknown: send it again with
			 * the "again" flag once the slot is served (redis.h). */
			set_err(r, RUSK_EIO, "%s:%d: connection lost (%s)", r->nodes[ni].host,
			        r->nodes[ni].port, c->errstr[0] ? c->errstr : "closed");
			node_lost(r, ni);
			stat_add(&r->st.reconnects, 1);
			lost = true;
			if (skips(r, ni)) {
				/* Stuck (its read timed out) or gone while others answer: the
				 * pending commands' outcome is unknown, and the caller goes on
				 * elsewhere (slot_unavailable retries the node later). */
				mark_down(r, ni, r->unavail_ms);
				rc = RUSK_EIO;
				break;
			}
			stat_add(&r->st.resent, 1);
			outage_begins(r, &outage);
			if (r->outage_t0 >
			    t0) /* it began with the read that broke, at the latest */
				r->outage_t0 = t0;
			for (size_t i = 0; i < n; i++)
				if (pending[i] && cmds[i].again_at >= 0) {
					cmds[i].argv[cmds[i].again_at] = "1";
					cmds[i].len[cmds[i].again_at] = 1;
				}
			refresh_map(r);
			continue;
		}
		if (errwait) {
			/* TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN: every reply of the pipeline
			 * read, one wait per round (doubling, 50 ms to 400 ms; none past the
			 * bound: the last attempt is at the loop's head) and one refresh, then
			 * only what did not execute goes again. */
			if (!give_up(r, t0, true))
				sleep_ms(backoff);
			backoff = backoff < 400 ? backoff * 2 : 400;
			refresh_map(r);
		}
		if (need_load && load_scripts(r, ni) != RUSK_OK)
			send_bodies(cmds, n, rep);
	}
	if (outage)
		stat_add(&r->st.outage_ns, now_ns() - t0);
	if (pending != pending_buf)
		free(pending);
	return rc;
}

/*
 * exec_multi: cmds[0..n), command i for slot slots[i], sent as one pipeline per node:
 * every node's pipeline is written out before any reply is read, so a call over many
 * partitions costs about one round trip (the slowest node's), not one per partition. For
 * reads only (snapshots, owners: no "again" flag, no WAIT): a command whose outcome is
 * unknown (its node's connection broke) is simply sent again. Each node's replies are all
 * read, in the order sent, whatever any of them says: a redirect (MOVED: the map updated,
 * the command sent again to the slot's new node; ASK: sent again once to the named node
 * after ASKING), NOSCRIPT (scripts loaded on that node, sent again), TRYAGAIN, CLUSTERDOWN
 * or LOADING (after a short sleep and a map refresh) make that command go again in the
 * next round, with every other command still pending; the rest keep their answers. Bounds
 * as exec_slot's (give_up). rep[i] is the final reply (the caller frees them), NULL for a
 * command that got none; RUSK_OK when every command got one, else RUSK_EIO (r->err says
 * why), RUSK_ENOMEM.
 */
static int exec_multi(rusk_redis *r, const uint16_t *slots, rcmd *cmds, size_t n, redisReply **rep)
{
	int16_t *ask = malloc(n * sizeof *ask), *at = malloc(n * sizeof *at);
	bool *gone = calloc(n, sizeof *gone); /* its node unavailable: given up (no reply) */
	if (ask == NULL || at == NULL || gone == NULL) {
		free(ask);
		free(at);
		free(gone);
		return set_err(r, RUSK_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		rep[i] = NULL;
		ask[i] = -1;
	}
	size_t left = n;
	uint64_t t0 = now_ns();
	int rc = RUSK_OK;
	bool outage = false, last = false;
	for (bool tried = false; left > 0; tried = true) {
		if (r->auth_failed) { /* exec_slot's rule: at once */
			rc = set_err(r, RUSK_EIO, "%s", r->auth_err);
			break;
		}
		if (tried && give_up(r, t0, outage)) {
			/* Past the bound: one last attempt on a fresh map (exec_slot's rule). */
			if (outage && !last && refresh_map(r) == RUSK_OK) {
				last = true;
				for (size_t i = 0; i < n; i++)
					ask[i] = -1;
			} else {
				rc = RUSK_EIO;
				if (r->err[0] == '\0')
					set_err(r, RUSK_EIO, "%zu of %zu slots not served", left,
					        n);
				break;
			}
		}
		/* Commands whose node is unavailable are given up, before anything is appended
		 * (a retry due there refreshes the map and probes: slot_unavailable). */
		for (size_t i = 0; i < n; i++)
			if (rep[i] == NULL && !gone[i] && ask[i] < 0 &&
			    slot_unavailable(r, slots[i])) {
				gone[i] = true;
				left--;
			}
		/* Append each pending command to its node's pipeline; st: 0 untried, 1 used,
		 * 2 cannot connect (asked once per round), 3 broken while writing. */
		uint8_t st[MAX_NODES] = {0};
		size_t sent = 0;
		bool down = false;
		for (size_t i = 0; i < n; i++) {
			at[i] = -1;
			if (rep[i] != NULL || gone[i])
				continue;
			int ni = ask[i] >= 0 ? ask[i] : r->slot_node[slots[i]];
			if (ni < 0) {
				set_err(r, RUSK_EIO, "no node serves slot %u (cluster down?)",
				        slots[i]);
				down = true;
				continue;
			}
			if (st[ni] == 0 && node_ctx(r, ni) == NULL) {
				node_failed(r, ni);
				st[ni] = 2;
				if (skips(r, ni) && !r->auth_failed) {
					mark_down(r, ni, r->unavail_ms); /* unreachable while others
					                                    answer */
					st[ni] = 4;
				}
			}
			if (st[ni] == 4) {
				gone[i] = true;
				left--;
				continue;
			}
			if (st[ni] == 2) {
				down = true;
				continue;
			}
			redisContext *c = r->nodes[ni].ctx;
			st[ni] = 1;
			if (ask[i] >= 0)
				redisAppendCommand(c, "ASKING");
			redisAppendCommandArgv(c, cmds[i].argc, cmds[i].argv, cmds[i].len);
			at[i] = (int16_t)ni;
			sent++;
		}
		/* Every pipeline on the wire before the first reply is awaited. */
		for (int ni = 0; ni < r->n_nodes; ni++) {
			int done = 0;
			while (st[ni] == 1 && !done)
				if (redisBufferWrite(r->nodes[ni].ctx, &done) != REDIS_OK)
					st[ni] = 3;
		}
		/* Read every reply of every pipeline, each node's in the order sent. */
		bool need_load[MAX_NODES] = {false}, refresh = down, errwait = false;
		for (size_t i = 0; i < n; i++) {
			int ni = at[i];
			if (ni < 0 || st[ni] != 1)
				continue;
			redisContext *c = r->nodes[ni].ctx;
			bool asking = ask[i] >= 0;
			ask[i] = -1;
			redisReply *y = NULL;
			if (!read_reply(r, c, asking, &y)) {
				st[ni] = 3;
				continue;
			}
			int to = -1, kind = sort_reply(r, ni, y, &to, &outage);
			if (kind == REPLY_FINAL) {
				rep[i] = y;
				left--;
				continue;
			}
			ask[i] = (int16_t)to;
			need_load[ni] |= kind == REPLY_NOSCRIPT;
			errwait |= kind == REPLY_WAIT;
		}
		refresh |= errwait;
		for (int ni = 0; ni < r->n_nodes; ni++) {
			if (st[ni] == 1 || st[ni] == 3)
				stat_add(&r->st.round_trips, 1);
			if (st[ni] != 3)
				continue;
			/* What was pending there goes again (reads: no "again" flag needed). */
			set_err(r, RUSK_EIO, "%s:%d: connection lost (%s)", r->nodes[ni].host,
			        r->nodes[ni].port,
			        r->nodes[ni].ctx->errstr[0] ? r->nodes[ni].ctx->errstr : "closed");
			node_lost(r, ni);
			stat_add(&r->st.reconnects, 1);
			if (skips(r, ni)) {
				/* Stuck or gone while others answer: its reads are given up
				 * (exec_slot's rule), the others keep their answers. */
				mark_down(r, ni, r->unavail_ms);
				for (size_t i = 0; i < n; i++)
					if (at[i] == ni && rep[i] == NULL) {
						gone[i] = true;
						left--;
					}
				continue;
			}
			stat_add(&r->st.resent, 1);
			outage_begins(r, &outage);
			if (r->outage_t0 >
			    t0) /* it began with the read that broke, at the latest */
				r->outage_t0 = t0;
			refresh = true;
			for (size_t i = 0; i < n; i++)
				if (at[i] == ni)
					ask[i] = -1;
		}
		stat_add(&r->st.commands, sent);
		for (int ni = 0; ni < r->n_nodes; ni++) {
			if (need_load[ni] && load_scripts(r, ni) != RUSK_OK)
				send_bodies(cmds, n, rep);
		}
		if (down) {
			outage_begins(r, &outage);
			if (!give_up(r, t0, true))
				sleep_ms(100);
		} else if (errwait) {
			sleep_ms(50);
		}
		if (refresh && left > 0)
			refresh_map(r);
	}
	if (outage)
		stat_add(&r->st.outage_ns, now_ns() - t0);
	for (size_t i = 0; i < n && rc == RUSK_OK; i++)
		if (gone[i])
			rc = RUSK_EIO; /* r->err names the unavailable node */
	free(ask);
	free(at);
	free(gone);
	return rc;
}

/* ---- command building ---------------------------------------------------------- */

/* A batch's argument storage: argv/len slots and a text arena for the numbers. */
typedef struct arena {
	const char **argv;
	size_t *len;
	char *text;
	size_t n_args, cap_args, used, cap_text;
} arena;

static int arena_init(arena *a, size_t args)
{
	a->argv = malloc(args * sizeof *a->argv);
	a->len = malloc(args * sizeof *a->len);
	a->text = malloc(args * 24);
	a->n_args = a->used = 0;
	a->cap_args = args;
	a->cap_text = args * 24;
	if (a->argv == NULL || a->len == NULL || a->text == NULL) {
		free(a->argv);
		free(a->len);
		free(a->text);
		return RUSK_ENOMEM;
	}
	return RUSK_OK;
}

static void arena_free(arena *a)
{
	free(a->argv);
	free(a->len);
	free(a->text);
}

static void arg_str(arena *a, const char *s)
{
	a->argv[a->n_args] = s;
	a->len[a->n_args++] = strlen(s);
}

static void arg_u64(arena *a, uint64_t v)
{
	char *t = a->text + a->used;
	int k = snprintf(t, 24, "%" PRIu64, v);
	a->used += (size_t)k + 1;
	a->argv[a->n_args] = t;
	a->len[a->n_args++] = (size_t)k;
}

/* Starts an EVALSHA of script s on partition p's keys; returns the command's first arg. */
static size_t arg_script(rusk_redis *r, arena *a, int s, uint32_t p)
{
	size_t at = a->n_args;
	arg_str(a, "EVALSHA");
	arg_str(a, r->sha[s]);
	arg_str(a, "8");
	for (int k = 0; k < N_KEYS; k++)
		arg_str(a, r->keys[p][k]);
	return at;
}

static rcmd cmd_at(arena *a, size_t at, int again_at, int script)
{
	return (rcmd){(int)(a->n_args - at), a->argv + at, a->len + at,
	              again_at < 0 ? -1 : again_at - (int)at, script};
}

static void free_replies(redisReply **rep, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (rep[i] != NULL)
			freeReplyObject(rep[i]);
}

/* ---- the backend ----------------------------------------------------------------- */

static int part_gone(rusk_redis *r, uint32_t p, const char *msg);

/* A script's error reply as a rusk code (the message kept in r->err). */
static int script_error(rusk_redis *r, uint32_t p, const redisReply *y)
{
	/* A Lua error() gets " script: SHA, on @user_script:N." appended: not for the user. */
	const char *tail = strstr(y->str, " script: ");
	int len = tail != NULL ? (int)(tail - y->str) : (int)strlen(y->str);
	if (strncmp(y->str, "RUSKCORRUPT ", 12) == 0) {
		/* The script checked before its first write (redis_lua.h): nothing was written. */
		int rc = set_err(r, RUSK_ECORRUPT,
		                 "partition %u: the rusk state is corrupt, nothing written: %.*s "
		                 "(another program wrote there? `rusk agent --init-only "
		                 "--force-init` writes the state afresh)",
		                 p, len - 12, y->str + 12);
		/* a key absent: the partition's whole state gone? (lost by the cluster) */
		const char *absent = strstr(y->str, " is absent");
		if (absent != NULL && absent < y->str + len) {
			char msg[sizeof r->err];
			snprintf(msg, sizeof msg, "%s", r->err);
			rc = part_gone(r, p, msg);
		}
		return rc;
	}
	set_err(r, RUSK_EIO, "partition %u (%s): %.*s", p, r->keys[p][K_MACH], len, y->str);
	if (strncmp(y->str, "RUSKRANGE", 9) == 0)
		return RUSK_ERANGE;
	if (strncmp(y->str, "RUSKINFEASIBLE", 14) == 0)
		return RUSK_EINFEASIBLE;
	return RUSK_EIO;
}

/* b's bits in reverse order (the multiply-and-mask bit reversal of a byte: no table). */
static uint64_t rev8(uint8_t b)
{
	return ((b * UINT64_C(0x80200802)) & UINT64_C(0x0884422110)) * UINT64_C(0x0101010101) >>
	               32 &
	       0xff;
}

/* Bit i of the :free bitmap (Redis bit order: the most significant bit of byte 0 first)
 * into bit i of words (LSB first, kernel/backend.h): one bit-reversed byte at a time. */
static void free_decode(const redisReply *y, uint32_t nr, uint64_t *words)
{
	uint32_t need = (nr + 63) / 64;
	memset(words, 0, sizeof(uint64_t) * need);
	const unsigned char *b = (const unsigned char *)y->str;
	size_t nb = y->len < (nr + 7) / 8 ? y->len : (nr + 7) / 8;
	for (size_t i = 0; i < nb; i++)
		words[i / 8] |= rev8(b[i]) << (i % 8 * 8);
	if (nr % 64 != 0) /* bits past the partition's last RU */
		words[need - 1] &= (UINT64_C(1) << (nr % 64)) - 1;
}

/* The end of a message of corrupt state: what to do. */
#define CORRUPT_HINT                                                                               \
	" (another program wrote there? `rusk agent --init-only --force-init` writes the state "   \
	"afresh)"

/* Partition p's key `key` answered WRONGTYPE to a read (another program wrote there): the
 * state is corrupt, RUSK_ECORRUPT naming the key and its type (one TYPE call), as the write
 * scripts' RUSKCORRUPT does. Before, a snapshot said "is missing (no rusk state)" for :free
 * and read :ver as 0, and the partition was never used again, with no message. */
static int part_type_err(rusk_redis *r, uint32_t p, const char *key, const char *want)
{
	const char *av[2] = {"TYPE", key};
	size_t al[2] = {4, strlen(key)};
	rcmd cmd = {2, av, al, -1, 0};
	redisReply *t = NULL;
	char type[32] = "another";
	if (exec_slot(r, rusk_redis_slot_of_(p), &cmd, 1, &t) == RUSK_OK &&
	    t->type == REDIS_REPLY_STATUS)
		snprintf(type, sizeof type, "%s", t->str);
	free_replies(&t, 1);
	return set_err(r, RUSK_ECORRUPT,
	               "partition %u: the rusk state is corrupt: %s has type %s, not %s "
	               "(another program wrote there? `rusk agent --init-only --force-init` "
	               "writes the state afresh)",
	               p, key, type, want);
}

static int check_part(rusk_redis *r, uint32_t p, char *there, size_t len, bool *missing);
static int missing_part(rusk_redis *r, uint32_t p, bool started);

/*
 * Partition p's key `key` is absent after the start (a snapshot's GET, a write script's
 * RUSKCORRUPT "... is absent"; msg: what to say when only that key is gone). With p's
 * :mach gone too, the partition's state is gone: classified as the start's state check
 * does (missing_part, started: lost by the cluster, r->state_lost, RUSK_EIO, the
 * partitions named); found so once, later calls answer the same without reading again.
 * With :mach there, only that key: RUSK_ECORRUPT naming it (msg). Before, a snapshot said
 * "is missing (no rusk state)" and the agent went on without the partition (exit 0), and a
 * commit said the state was corrupt (exit 2, as bad input).
 */
static int part_gone(rusk_redis *r, uint32_t p, const char *msg)
{
	if (r->state_lost) /* missing_part's message again */
		return set_err(r, RUSK_EIO, "%s", r->lost_err);
	char there[64];
	bool missing = false;
	int rc = check_part(r, p, there, sizeof there, &missing);
	if (missing) {
		rc = missing_part(r, p, true);
		if (r->state_lost)
			snprintf(r->lost_err, sizeof r->lost_err, "%s", r->err);
		return rc;
	}
	if (rc == RUSK_EIO) /* no answer: not known; check_part's message */
		return RUSK_EIO;
	return set_err(r, RUSK_ECORRUPT, "%s", msg);
}

/* Whether y is a string that is a count as Redis writes one (decimal, no sign, no leading
 * zero) of at most max; its value in *v. */
static bool dec_count(const redisReply *y, uint64_t max, uint64_t *v)
{
	if (y->type != REDIS_REPLY_STRING || y->len == 0 || y->len > 20 ||
	    strspn(y->str, "0123456789") != y->len || (y->str[0] == '0' && y->len > 1))
		return false;
	uint64_t x = 0;
	for (size_t i = 0; i < y->len; i++) {
		uint64_t d = (uint64_t)(y->str[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	return x <= max;
}

/* A snapshot's two replies (GET :free, GET :ver) into words and *version; a key of another
 * type, a :free shorter than the partition's RUs (an empty one read as every RU held: the
 * partition never used, no message) or a :ver that is no count below INT64_MAX (the most
 * the scripts' INCR leaves: redis_lua.h) is RUSK_ECORRUPT naming it; :free absent,
 * part_gone. */
static int snap_replies(rusk_redis *r, uint32_t p, redisReply **rep, uint64_t *words,
                        uint64_t *version)
{
	if (rep[0] == NULL || rep[1] == NULL)
		return RUSK_EIO;
	for (int k = 0; k < 2; k++)
		if (is_err(rep[k], "WRONGTYPE"))
			return part_type_err(r, p, r->keys[p][k == 0 ? K_FREE : K_VER], "string");
	if (rep[0]->type != REDIS_REPLY_STRING) {
		char msg[512];
		snprintf(msg, sizeof msg,
		         "partition %u: the rusk state is corrupt: %s is absent (another program "
		         "deleted it? `rusk agent --init-only --force-init` writes the state "
		         "afresh)",
		         p, r->keys[p][K_FREE]);
		return part_gone(r, p, msg);
	}
	uint32_t nr = r->p_n_rus[p];
	if (rep[0]->len < (nr + 7) / 8)
		return set_err(
		        r, RUSK_ECORRUPT,
		        "partition %u: the rusk state is corrupt: %s is %zu bytes, too short "
		        "for the partition's %u RUs" CORRUPT_HINT,
		        p, r->keys[p][K_FREE], rep[0]->len, nr);
	uint64_t ver = 0;
	if (rep[1]->type == REDIS_REPLY_STRING && !dec_count(rep[1], INT64_MAX - 1, &ver))
		return set_err(r, RUSK_ECORRUPT,
		               "partition %u: the rusk state is corrupt: %s is not a count below "
		               "2^63-1: %.40s" CORRUPT_HINT,
		               p, r->keys[p][K_VER], rep[1]->str);
	free_decode(rep[0], nr, words);
	if (version != NULL)
		*version = ver;
	return RUSK_OK;
}

static int rd_snapshot(void *self, uint32_t p, uint64_t *words, uint32_t n_words, uint64_t *version)
{
	rusk_redis *r = self;
	if (p >= r->n_parts)
		return RUSK_ERANGE;
	uint32_t nr = r->p_n_rus[p], need = (nr + 63) / 64;
	if (words == NULL || n_words < need)
		return RUSK_EINVAL;
	const char *a1[2] = {"GET", r->keys[p][K_FREE]}, *a2[2] = {"GET", r->keys[p][K_VER]};
	size_t l1[2] = {3, strlen(a1[1])}, l2[2] = {3, strlen(a2[1])};
	rcmd cmds[2] = {{2, a1, l1, -1, 0}, {2, a2, l2, -1, 0}};
	redisReply *rep[2];
	int rc = exec_slot(r, rusk_redis_slot_of_(p), cmds, 2, rep);
	if (rc == RUSK_OK)
		rc = snap_replies(r, p, rep, words, version);
	free_replies(rep, 2);
	return rc;
}

/*
 * Several partitions' snapshots in one call (kernel/backend.h snapshots): both GETs of
 * every partition go out together, one pipeline per node that serves them (exec_multi),
 * where rd_snapshot per partition made one round trip each (an agent at 1.6M RUs in 1,000
 * partitions spent its time waiting on them). rcs[i] per partition.
 */
static int rd_snapshots(void *self, const uint32_t *ps, size_t n, uint64_t *const *words,
                        const uint32_t *n_words, uint64_t *versions, int *rcs)
{
	rusk_redis *r = self;
	if (n == 0)
		return RUSK_OK;
	if (ps == NULL || words == NULL || n_words == NULL || rcs == NULL)
		return RUSK_EINVAL;
	const char **argv = malloc(4 * n * sizeof *argv);
	size_t *len = malloc(4 * n * sizeof *len);
	rcmd *cmds = malloc(2 * n * sizeof *cmds);
	uint16_t *slots = malloc(2 * n * sizeof *slots);
	redisReply **rep = calloc(2 * n, sizeof *rep);
	size_t m = 0; /* commands built */
	int rc = argv && len && cmds && slots && rep ? RUSK_OK : RUSK_ENOMEM;
	for (size_t i = 0; rc == RUSK_OK && i < n; i++) {
		uint32_t p = ps[i];
		rcs[i] = p >= r->n_parts                                              ? RUSK_ERANGE
		         : words[i] == NULL || n_words[i] < (r->p_n_rus[p] + 63) / 64 ? RUSK_EINVAL
		                                                                      : RUSK_OK;
		if (rcs[i] != RUSK_OK)
			continue;
		for (int k = 0; k < 2; k++, m++) {
			argv[2 * m] = "GET";
			len[2 * m] = 3;
			argv[2 * m + 1] = r->keys[p][k == 0 ? K_FREE : K_VER];
			len[2 * m + 1] = strlen(argv[2 * m + 1]);
			cmds[m] = (rcmd){2, argv + 2 * m, len + 2 * m, -1, 0};
			slots[m] = rusk_redis_slot_of_(p);
		}
	}
	if (rc == RUSK_OK && m > 0)
		rc = exec_multi(r, slots, cmds, m, rep);
	if (rc == RUSK_OK || rc == RUSK_EIO) {
		int first = RUSK_OK;
		for (size_t i = 0, j = 0; i < n; i++) {
			if (rcs[i] == RUSK_OK) {
				rcs[i] = snap_replies(r, ps[i], rep + j, words[i],
				                      versions != NULL ? &versions[i] : NULL);
				j += 2;
			}
			if (first == RUSK_OK)
				first = rcs[i];
		}
		rc = first;
	} else {
		for (size_t i = 0; i < n; i++)
			rcs[i] = rc;
	}
	if (rep != NULL)
		free_replies(rep, m);
	free(rep);
	free(slots);
	free(cmds);
	free(len);
	free(argv);
	return rc;
}

static int rd_commit(void *self, uint32_t p, const rusk_bk_claim *cl, size_t n, int *rcs,
                     rusk_lease *leases)
{
	rusk_redis *r = self;
	if (p >= r->n_parts || (n > 0 && (cl == NULL || rcs == NULL || leases == NULL)))
		return RUSK_EINVAL;
	if (n == 0)
		return RUSK_OK;
	size_t args = 0;
	for (size_t i = 0; i < n; i++)
		args += 17 + cl[i].n;
	arena a;
	rcmd *cmds = malloc(n * sizeof *cmds);
	redisReply **rep = calloc(n, sizeof *rep);
	size_t *idx = malloc(n * sizeof *idx); /* claim of each command sent */
	if (cmds == NULL || rep == NULL || idx == NULL || arena_init(&a, args) != RUSK_OK) {
		free(cmds);
		free(rep);
		free(idx);
		return RUSK_ENOMEM;
	}
	size_t nc = 0;
	for (size_t i = 0; i < n; i++) {
		const rusk_bk_claim *c = &cl[i];
		uint32_t m = c->machine;
		rcs[i] = RUSK_EIO;
		uint64_t tid = rusk_owner_task_(c->task); /* backend.h "Owner ids" */
		if (tid == 0 || tid > RUSK_TASK_ID_MAX || c->n == 0 || c->rus == NULL) {
			rcs[i] = RUSK_EINVAL;
			continue;
		}
		if (m < r->p_first_m[p] || m >= r->p_first_m[p] + r->p_n_m[p]) {
			rcs[i] = RUSK_ERANGE;
			continue;
		}
		bool in = true;
		for (uint32_t k = 0; k < c->n; k++)
			in &= c->rus[k] >= r->m_first_ru[m] &&
			      c->rus[k] < r->m_first_ru[m] + r->m_n_rus[m];
		if (!in) {
			rcs[i] = RUSK_EINVAL; /* RUs of another machine, as rusk_ru_commit_vec */
			continue;
		}
		uint32_t milli = c->vec.gpus == 0 ? 0 : c->vec.gpu_milli ? c->vec.gpu_milli : 1000;
		size_t at = arg_script(r, &a, S_COMMIT, p);
		arg_u64(&a, c->task);
		arg_u64(&a, m - r->p_first_m[p]);
		arg_u64(&a, c->vec.mem_mib);
		arg_u64(&a, c->vec.gpus);
		arg_u64(&a, milli);
		int again_at = (int)a.n_args;
		arg_str(&a, "0");
		for (uint32_t k = 0; k < c->n; k++)
			arg_u64(&a, c->rus[k] - r->p_first_ru[p]);
		cmds[nc] = cmd_at(&a, at, again_at, S_COMMIT);
		idx[nc++] = i;
	}
	int rc = nc ? exec_slot(r, rusk_redis_slot_of_(p), cmds, nc, rep) : RUSK_OK;
	for (size_t j = 0; j < nc; j++) {
		size_t i = idx[j];
		redisReply *y = rep[j];
		if (y == NULL)
			continue; /* RUSK_EIO: unknown outcome */
		if (y->type == REDIS_REPLY_ERROR) {
			rcs[i] = script_error(r, p, y);
			continue;
		}
		if (y->type != REDIS_REPLY_ARRAY || y->elements < 1 ||
		    y->element[0]->type != REDIS_REPLY_INTEGER)
			continue;
		long long code = y->element[0]->integer;
		if (code == 0 && y->elements == 1 + cl[i].n) {
			size_t o = 0;
			for (size_t k = 0; k < i; k++)
				o += cl[k].n;
			for (uint32_t k = 0; k < cl[i].n; k++)
				leases[o + k] = (rusk_lease){cl[i].rus[k],
				                             (uint32_t)y->element[1 + k]->integer};
			rcs[i] = RUSK_OK;
		} else {
			rcs[i] = code == 1   ? RUSK_ECONFLICT
			         : code == 3 ? RUSK_ESHORT_ /* memory or GPUs short */
			         : code == 2 ? RUSK_EDUP
			                     : RUSK_EIO;
		}
	}
	free_replies(rep, nc);
	arena_free(&a);
	free(cmds);
	free(rep);
	free(idx);
	return rc;
}

static int rd_release(void *self, uint32_t p, const rusk_bk_lease *ls, size_t n, int *rcs)
{
	rusk_redis *r = self;
	if (p >= r->n_parts || (n > 0 && (ls == NULL || rcs == NULL)))
		return RUSK_EINVAL;
	if (n == 0)
		return RUSK_OK;
	size_t nchunks = (n + RELEASE_CHUNK - 1) / RELEASE_CHUNK;
	arena a;
	rcmd *cmds = malloc(nchunks * sizeof *cmds);
	redisReply **rep = calloc(nchunks, sizeof *rep);
	size_t *pos = malloc(n * sizeof *pos); /* lease i's place in its chunk, or SIZE_MAX */
	if (cmds == NULL || rep == NULL || pos == NULL ||
	    arena_init(&a, nchunks * 13 + 3 * n) != RUSK_OK) {
		free(cmds);
		free(rep);
		free(pos);
		return RUSK_ENOMEM;
	}
	for (size_t ch = 0; ch < nchunks; ch++) {
		size_t at = arg_script(r, &a, S_RELEASE, p);
		int again_at = (int)a.n_args;
		arg_str(&a, "0");
		size_t k = 0;
		for (size_t i = ch * RELEASE_CHUNK; i < n && i < (ch + 1) * RELEASE_CHUNK; i++) {
			const rusk_bk_lease *l = &ls[i];
			pos[i] = SIZE_MAX;
			uint64_t tid = rusk_owner_task_(l->task); /* backend.h "Owner ids" */
			if (tid == 0 || tid > RUSK_TASK_ID_MAX || l->lease.gen > RUSK_GEN_MASK) {
				rcs[i] = RUSK_EINVAL;
				continue;
			}
			if (l->lease.ru < r->p_first_ru[p] ||
			    l->lease.ru >= r->p_first_ru[p] + r->p_n_rus[p]) {
				rcs[i] = RUSK_ERANGE;
				continue;
			}
			rcs[i] = RUSK_EIO;
			pos[i] = k++;
			arg_u64(&a, l->task);
			arg_u64(&a, l->lease.ru - r->p_first_ru[p]);
			arg_u64(&a, l->lease.gen);
		}
		cmds[ch] = cmd_at(&a, at, again_at, S_RELEASE);
	}
	int rc = exec_slot(r, rusk_redis_slot_of_(p), cmds, nchunks, rep);
	static const int code_rc[4] = {RUSK_OK, RUSK_EFREE, RUSK_ENOTOWNER, RUSK_ESTALE};
	for (size_t i = 0; i < n; i++) {
		redisReply *y = rep[i / RELEASE_CHUNK];
		if (pos[i] == SIZE_MAX || y == NULL)
			continue;
		if (y->type == REDIS_REPLY_ERROR) {
			rcs[i] = script_error(r, p, y);
		} else if (y->type == REDIS_REPLY_ARRAY && pos[i] < y->elements &&
		           y->element[pos[i]]->type == REDIS_REPLY_INTEGER) {
			long long c = y->element[pos[i]]->integer;
			rcs[i] = c >= 0 && c < 4 ? code_rc[c] : RUSK_EIO;
		}
	}
	free_replies(rep, nchunks);
	arena_free(&a);
	free(cmds);
	free(rep);
	free(pos);
	return rc;
}

static int rd_recount(void *self, uint32_t p, rusk_bk_count *out)
{
	rusk_redis *r = self;
	if (p >= r->n_parts)
		return RUSK_ERANGE;
	if (out == NULL)
		return RUSK_EINVAL;
	arena a;
	if (arena_init(&a, 16) != RUSK_OK)
		return RUSK_ENOMEM;
	size_t at = arg_script(r, &a, S_RECOUNT, p);
	rcmd cmd = cmd_at(&a, at, -1, S_RECOUNT);
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_slot_of_(p), &cmd, 1, &y);
	if (rc == RUSK_OK) {
		if (y->type == REDIS_REPLY_ERROR) {
			rc = script_error(r, p, y);
		} else if (y->type != REDIS_REPLY_ARRAY || y->elements < 4) {
			rc = set_err(r, RUSK_EIO, "partition %u: recount answered no array", p);
		} else {
			out->held = (uint64_t)y->element[0]->integer;
			out->free = (uint64_t)y->element[1]->integer;
			out->mismatch = (uint64_t)y->element[2]->integer;
			out->version = (uint64_t)y->element[3]->integer;
		}
	}
	free_replies(&y, 1);
	arena_free(&a);
	return rc;
}

static int rd_unavailable(void *self, uint32_t p)
{
	return rusk_redis_part_unavailable_(self, p);
}

static const rusk_backend_ops redis_ops = {
        .name = "redis",
        .snapshot = rd_snapshot,
        .commit = rd_commit,
        .release = rd_release,
        .recount = rd_recount,
        .snapshots = rd_snapshots,
        .unavailable = rd_unavailable,
};

int rusk_redis_backend_(rusk_redis *r, rusk_backend *out)
{
	if (r == NULL || out == NULL)
		return RUSK_EINVAL;
	out->ops = &redis_ops;
	out->self = r;
	return RUSK_OK;
}

/* One (RU, owner, generation) triple of the owners script (strings) into rus[k] (global),
 * owners[k] and gens[k] (gens may be NULL). An RU field that is not a number of the
 * partition (0 .. its RUs - 1: another program wrote there) is RUSK_ECORRUPT naming the
 * key and the field; before, the callers indexed their arrays with it (an out-of-bounds
 * write in rusk agent's ledger). So is an owner that is not one the scripts write (a
 * count of a task 1..RUSK_TASK_ID_MAX under a namespace: `abc`, `0`, `-1`, `1.5` were read
 * as owners 0, 2^64-1 and 1, and the ledger went on) and a generation past RUSK_GEN_MASK. */
static int owner_entry(rusk_redis *r, uint32_t p, redisReply **e, uint32_t *rus, uint64_t *owners,
                       uint32_t *gens, size_t k)
{
	const redisReply *f = e[0];
	bool num = f->type == REDIS_REPLY_STRING && f->len > 0 && f->len <= 10 &&
	           strspn(f->str, "0123456789") == f->len;
	unsigned long long ru = num ? strtoull(f->str, NULL, 10) : 0;
	if (!num || ru >= r->p_n_rus[p])
		return set_err(
		        r, RUSK_ECORRUPT,
		        "partition %u: the rusk state is corrupt: %s has field %.40s, not an "
		        "RU 0..%u of the partition (another program wrote there? `rusk agent "
		        "--init-only --force-init` writes the state afresh)",
		        p, r->keys[p][K_OWN], f->type == REDIS_REPLY_STRING ? f->str : "?",
		        r->p_n_rus[p] - 1);
	uint64_t o = 0, g = 0;
	if (!dec_count(e[1], UINT64_MAX, &o) || rusk_owner_task_(o) == 0 ||
	    rusk_owner_task_(o) > RUSK_TASK_ID_MAX)
		return set_err(
		        r, RUSK_ECORRUPT,
		        "partition %u: the rusk state is corrupt: %s field %.40s is %.40s, "
		        "not an owner (a task 1..%" PRIu64 " under a namespace)" CORRUPT_HINT,
		        p, r->keys[p][K_OWN], f->str,
		        e[1]->type == REDIS_REPLY_STRING ? e[1]->str : "?", RUSK_TASK_ID_MAX);
	if (!dec_count(e[2], RUSK_GEN_MASK, &g))
		return set_err(r, RUSK_ECORRUPT,
		               "partition %u: the rusk state is corrupt: %s field %.40s is %.40s, "
		               "not a generation 0..%u" CORRUPT_HINT,
		               p, r->keys[p][K_GEN], f->str,
		               e[2]->type == REDIS_REPLY_STRING ? e[2]->str : "?", RUSK_GEN_MASK);
	rus[k] = r->p_first_ru[p] + (uint32_t)ru;
	owners[k] = o;
	if (gens != NULL)
		gens[k] = (uint32_t)g;
	return RUSK_OK;
}

int rusk_redis_owners_(rusk_redis *r, uint32_t p, uint32_t *rus, uint64_t *owners, uint32_t *gens,
                       size_t cap, size_t *n)
{
	if (r == NULL || n == NULL || (cap > 0 && (rus == NULL || owners == NULL)))
		return RUSK_EINVAL;
	if (p >= r->n_parts)
		return RUSK_ERANGE;
	arena a;
	if (arena_init(&a, 16) != RUSK_OK)
		return RUSK_ENOMEM;
	size_t at = arg_script(r, &a, S_OWNERS, p);
	rcmd cmd = cmd_at(&a, at, -1, S_OWNERS);
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_slot_of_(p), &cmd, 1, &y);
	size_t k = 0;
	if (rc == RUSK_OK && y->type == REDIS_REPLY_ARRAY) {
		for (size_t i = 0; rc == RUSK_OK && i + 2 < y->elements && k < cap; i += 3) {
			rc = owner_entry(r, p, y->element + i, rus, owners, gens, k);
			k += rc == RUSK_OK;
		}
	} else if (rc == RUSK_OK) {
		rc = y->type == REDIS_REPLY_ERROR
		             ? script_error(r, p, y)
		             : set_err(r, RUSK_EIO, "partition %u: reading owners of %s: no array",
		                       p, r->keys[p][K_OWN]);
	}
	free_replies(&y, 1);
	arena_free(&a);
	*n = rc == RUSK_OK ? k : 0;
	return rc;
}

int rusk_redis_owners_many_(rusk_redis *r, const uint32_t *ps, size_t n, uint32_t *rus,
                            uint64_t *owners, uint32_t *gens, size_t cap, size_t *off, int *rcs)
{
	if (r == NULL || off == NULL || rcs == NULL || (n > 0 && ps == NULL) ||
	    (cap > 0 && (rus == NULL || owners == NULL)))
		return RUSK_EINVAL;
	off[0] = 0;
	if (n == 0)
		return RUSK_OK;
	arena a;
	rcmd *cmds = malloc(n * sizeof *cmds);
	uint16_t *slots = malloc(n * sizeof *slots);
	redisReply **rep = calloc(n, sizeof *rep);
	if (cmds == NULL || slots == NULL || rep == NULL || arena_init(&a, 16 * n) != RUSK_OK) {
		free(cmds);
		free(slots);
		free(rep);
		return set_err(r, RUSK_ENOMEM, "out of memory");
	}
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		rcs[i] = ps[i] < r->n_parts ? RUSK_OK : RUSK_ERANGE;
		if (rcs[i] != RUSK_OK)
			continue;
		size_t s0 = arg_script(r, &a, S_OWNERS, ps[i]);
		cmds[m] = cmd_at(&a, s0, -1, S_OWNERS);
		slots[m++] = rusk_redis_slot_of_(ps[i]);
	}
	int rc = m > 0 ? exec_multi(r, slots, cmds, m, rep) : RUSK_OK;
	if (rc == RUSK_ENOMEM)
		m = 0;
	size_t k = 0;
	int first = rc == RUSK_ENOMEM ? rc : RUSK_OK;
	for (size_t i = 0, j = 0; i < n; i++) {
		if (rcs[i] == RUSK_OK) {
			redisReply *y = rep[j++];
			uint32_t p = ps[i];
			if (rc == RUSK_ENOMEM || y == NULL) {
				rcs[i] = rc == RUSK_ENOMEM ? rc : RUSK_EIO;
			} else if (y->type != REDIS_REPLY_ARRAY) {
				rcs[i] = y->type == REDIS_REPLY_ERROR
				                 ? script_error(r, p, y)
				                 : set_err(r, RUSK_EIO,
				                           "partition %u: reading owners of %s: no "
				                           "array",
				                           p, r->keys[p][K_OWN]);
			} else if (k + y->elements / 3 > cap) {
				rcs[i] = RUSK_ERANGE;
			} else {
				size_t k0 = k;
				for (size_t e = 0; rcs[i] == RUSK_OK && e + 2 < y->elements;
				     e += 3) {
					rcs[i] = owner_entry(r, p, y->element + e, rus, owners,
					                     gens, k);
					k += rcs[i] == RUSK_OK;
				}
				if (rcs[i] != RUSK_OK)
					k = k0; /* no entries of a corrupt partition */
			}
		}
		off[i + 1] = k;
		if (first == RUSK_OK)
			first = rcs[i];
	}
	free_replies(rep, m);
	free(rep);
	free(slots);
	free(cmds);
	arena_free(&a);
	return first;
}

/* ---- meta keys: leases, epoch, shape (all in the slot of the tag {meta}) ---------- */

#define META_EPOCH   "rusk:{meta}:epoch"
#define META_SHAPE   "rusk:{meta}:shape"
#define META_FLAGS   "rusk:{meta}:flags"
#define META_RUNS    "rusk:{meta}:live-runs"
/* The agent ids that took a lease and have not dropped it (a set): an id there whose lease
 * is gone is an agent that died (or stalled past its lease), which the automatic reclaim
 * takes for dead; an agent run with --lease-ms 0 is never there, so never taken for dead
 * by it (rusk_redis_reclaim_dead_). */
#define META_AGENTS  "rusk:{meta}:agents"
/* Each agent's lease (ms) by id (a hash), written with its entry in META_AGENTS and removed
 * with it: it outlives the lease key, so a reclaimer that finds the key gone knows how long
 * that agent's lease was, and how long it may take to renew once the {meta} shard answers
 * again (steady_for). */
#define META_LEASES  "rusk:{meta}:lease-ms"
#define META_RECLAIM "rusk:{meta}:reclaim"
/* Set by an init before its first write (who, when) and deleted after its last partition
 * (rusk_redis_state_write_): while it is there the state is being written, or its init
 * stopped half-way (a signal, a kill, an outage past --failover-ms), and a start that
 * checks the state refuses it (rusk_redis_state_check_). */
#define META_INIT    "rusk:{meta}:init"

/* An agent's lease key. */
static void lease_key(char *buf, size_t len, uint32_t agent)
{
	snprintf(buf, len, "rusk:{meta}:alive:%u", agent);
}

/* Claim: SET NX PX, atomic; when another token holds the id, that token and its PTTL. The
 * id joins META_AGENTS (KEYS[2]) with its lease, and its lease's length META_LEASES
 * (KEYS[3]), in the same script. */
static const char lua_claim[] =
        "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n"
        "  redis.call('SADD', KEYS[2], ARGV[3]) redis.call('HSET', KEYS[3], ARGV[3], ARGV[2])\n"
        "  return {1, '', 0}\n"
        "end\n"
        "return {0, redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1])}\n";
/* Renew: only the holder's token extends it; a lapsed one (no holder) is taken again. The
 * epoch comes back in the same round trip (KEYS[2], same slot). Every renewal adds the id
 * to META_AGENTS (KEYS[3]) again, and its lease's length to META_LEASES (KEYS[4]): a
 * reclaim that took the id for dead while this holder stalled, and forgot it, is undone at
 * once. */
static const char lua_renew[] =
        "local v = redis.call('GET', KEYS[1])\n"
        "local e = redis.call('GET', KEYS[2]) or '0'\n"
        "local st = 0\n"
        "if v == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) st = 1\n"
        "elseif not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) st = 2 end\n"
        "if st > 0 then redis.call('SADD', KEYS[3], ARGV[3])\n"
        "  redis.call('HSET', KEYS[4], ARGV[3], ARGV[2]) end\n"
        "return {st, e}\n";
/* Drop (a normal end): the lease and the id's entries in META_AGENTS (KEYS[2]) and
 * META_LEASES (KEYS[3]), only while the token is still the holder's. Also the reclaim
 * lock's release (KEYS[2] unused). */
static const char lua_drop[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                               "  if #KEYS > 1 then redis.call('SREM', KEYS[2], ARGV[2])\n"
                               "    redis.call('HDEL', KEYS[3], ARGV[2]) end\n"
                               "  return redis.call('DEL', KEYS[1])\n"
                               "end\n"
                               "return 0\n";
/* Run leases: a sorted set of namespaces scored by expiry (ms, the server's clock);
 * ARGV[1]'s entry set (ARGV[2] > 0) or removed (0), the live ones (expiry after now)
 * counted. ARGV[1] '': count only. An expired entry stays: it names a run that died (or
 * stalled past its lease) whose RUs the automatic reclaim releases, and which it then
 * removes (rusk_redis_reclaim_dead_; a run's normal end removes its own). */
static const char lua_runs[] =
        "local t = redis.call('TIME')\n"
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
        "if ARGV[1] ~= '' then\n"
        "  if ARGV[2] == '0' then redis.call('ZREM', KEYS[1], ARGV[1])\n"
        "  else redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1]) end\n"
        "end\n"
        "return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')\n";

/*
 * The type each meta key must have (absent is fine: never written yet). A key of another
 * type (another program wrote there) made the scripts fail, or worse pass: SET NX on a
 * hash answers "taken", so the reclaim lock seemed held forever; a run whose live-runs
 * ZADD failed went on without its lease, so an init or a reclaim took it for dead. Every
 * meta script checks its KEYS first (meta_check, prepended by meta_eval) and answers
 * RUSKCORRUPT, and a plain command's WRONGTYPE is turned into the same (meta_reply_err):
 * RUSK_ECORRUPT naming the key and its type, which rusk run and rusk agent stop at (exit 2).
 */
#define META_CHECK_HINT                                                                            \
	" (another program wrote there? delete that key once no rusk process uses the state, "     \
	"or pick another Redis)"
static const char lua_meta_check[] =
        "local want = {['rusk:{meta}:live-runs'] = 'zset', ['rusk:{meta}:agents'] = 'set',\n"
        "  ['rusk:{meta}:lease-ms'] = 'hash',\n"
        "  ['rusk:{meta}:reclaim'] = 'string', ['rusk:{meta}:epoch'] = 'string',\n"
        "  ['rusk:{meta}:shape'] = 'string', ['rusk:{meta}:runs'] = 'string',\n"
        "  ['rusk:{meta}:forced'] = 'hash', ['rusk:{meta}:flags'] = 'string',\n"
        "  ['rusk:{meta}:init'] = 'string'}\n"
        "for _, k in ipairs(KEYS) do\n"
        "  local w = want[k]\n"
        "  if not w and string.find(k, 'rusk:{meta}:alive:', 1, true) == 1 then w = 'string' end\n"
        "  if w then\n"
        "    local t = redis.call('TYPE', k)['ok']\n"
        "    if t ~= w and t ~= 'none' then\n"
        "      return redis.error_reply('RUSKCORRUPT ' .. k .. ' has type ' .. t .. ', not ' .. "
        "w)\n"
        "    end\n"
        "  end\n"
        "end\n";

/* A plain command's error reply y on meta key `key` of type `want`: WRONGTYPE (or INCR's
 * "not an integer") is RUSK_ECORRUPT naming the key and its type (one TYPE call); any other
 * error RUSK_EIO. */
static int meta_reply_err(rusk_redis *r, const char *what, const char *key, const char *want,
                          const redisReply *y)
{
	if (strncmp(y->str, "WRONGTYPE", 9) == 0) {
		const char *av[2] = {"TYPE", key};
		size_t al[2] = {4, strlen(key)};
		rcmd cmd = {2, av, al, -1, 0};
		redisReply *t = NULL;
		char type[32] = "another";
		if (exec_slot(r, rusk_redis_keyslot_(key, strlen(key)), &cmd, 1, &t) == RUSK_OK &&
		    t->type == REDIS_REPLY_STATUS)
			snprintf(type, sizeof type, "%s", t->str);
		free_replies(&t, 1);
		return set_err(r, RUSK_ECORRUPT,
		               "the rusk state is corrupt: %s has type %s, not %s" META_CHECK_HINT,
		               key, type, want);
	}
	if (strstr(y->str, "not an integer") != NULL)
		return set_err(
		        r, RUSK_ECORRUPT,
		        "the rusk state is corrupt: %s is not a count (%s: %s)" META_CHECK_HINT,
		        key, what, y->str);
	return set_err(r, RUSK_EIO, "%s %s: %s", what, key, y->str);
}

/* A meta call slower than this counts as a gap in the {meta} shard's reachability. */
#define META_SLOW_MS 1000

/* What a meta call that began at t0 says of the {meta} shard (rusk_redis_reclaim_dead_):
 * failed, slow, or the first after a silence wider than meta_space_ms (this process saw
 * nothing then: an outage may have come and gone), a gap that ends now. */
static void meta_seen(rusk_redis *r, uint64_t t0, bool ok)
{
	uint64_t now = now_ns();
	bool silent = r->meta_space_ms > 0 && r->meta_last != 0 &&
	              t0 - r->meta_last > (uint64_t)r->meta_space_ms * 1000000u;
	if (!ok || now - t0 > (uint64_t)META_SLOW_MS * 1000000u || silent) {
		r->meta_bad = now;
		r->meta_gap = true;
	}
	if (ok && r->meta_last != 0) { /* the silence from the last answer to this one */
		uint64_t gap = now - r->meta_last;
		while (r->n_sil > 0 && r->sil[r->n_sil - 1].gap <= gap)
			r->n_sil--; /* narrower and older: the new one is the widest since them */
		if (r->n_sil == META_SILENCES) {
			r->sil_lost = r->sil[0].end;
			memmove(r->sil, r->sil + 1, sizeof r->sil[0] * (META_SILENCES - 1));
			r->n_sil--;
		}
		r->sil[r->n_sil].end = now;
		r->sil[r->n_sil++].gap = gap;
	}
	r->meta_last = now;
}

#define META_ARGS 336
/* EVAL of a small meta script (not cached: a lease call is rare, one per third of a lease
 * at most) on keys of the {meta} slot, each key's type checked first (lua_meta_check); *y
 * the reply (the caller frees it). */
static int meta_eval(rusk_redis *r, const char *body, int nkeys, const char *const *keys, int nargs,
                     const char *const *args, redisReply **y)
{
	/* Up to 3 keys and 256 + 64 + 2 arguments: the reclaim's forget (its dead ids). */
	const char *av[META_ARGS];
	size_t al[META_ARGS];
	if (nkeys < 1 || nargs < 0 || 3 + nkeys + nargs > META_ARGS)
		return set_err(r, RUSK_EINVAL, "a meta script of %d keys and %d arguments", nkeys,
		               nargs);
	char nk[12];
	snprintf(nk, sizeof nk, "%d", nkeys);
	int n = 0;
	char *full = malloc(sizeof lua_meta_check + strlen(body));
	if (full == NULL)
		return set_err(r, RUSK_ENOMEM, "out of memory");
	memcpy(full, lua_meta_check, sizeof lua_meta_check - 1);
	strcpy(full + sizeof lua_meta_check - 1, body);
	av[n++] = "EVAL";
	av[n++] = full;
	av[n++] = nk;
	for (int k = 0; k < nkeys; k++)
		av[n++] = keys[k];
	for (int k = 0; k < nargs; k++)
		av[n++] = args[k];
	for (int k = 0; k < n; k++)
		al[k] = strlen(av[k]);
	rcmd cmd = {n, av, al, -1, 0};
	*y = NULL;
	uint64_t t0 = now_ns();
	int rc = exec_slot(r, rusk_redis_keyslot_(keys[0], strlen(keys[0])), &cmd, 1, y);
	free(full);
	meta_seen(r, t0, rc == RUSK_OK);
	if (rc == RUSK_OK && (*y)->type == REDIS_REPLY_ERROR) {
		const char *e = (*y)->str, *tail = strstr(e, " script: ");
		int len = tail != NULL ? (int)(tail - e) : (int)strlen(e);
		if (strncmp(e, "RUSKCORRUPT ", 12) == 0)
			rc = set_err(r, RUSK_ECORRUPT,
			             "the rusk state is corrupt: %.*s" META_CHECK_HINT, len - 12,
			             e + 12);
		else
			rc = set_err(r, RUSK_EIO, "%s: %.*s", keys[0], len, e);
	}
	return rc;
}

int rusk_redis_lease_claim_(rusk_redis *r, uint32_t agent, const char *token, uint32_t ttl_ms,
                            char *holder, size_t holderlen, int64_t *left_ms)
{
	if (r == NULL || token == NULL || token[0] == '\0' || strlen(token) > 200 || ttl_ms == 0)
		return RUSK_EINVAL;
	char key[48], ttl[16];
	lease_key(key, sizeof key, agent);
	snprintf(ttl, sizeof ttl, "%u", ttl_ms);
	char id[16];
	snprintf(id, sizeof id, "%u", agent);
	const char *keys[3] = {key, META_AGENTS, META_LEASES}, *args[3] = {token, ttl, id};
	redisReply *y = NULL;
	int rc = meta_eval(r, lua_claim, 3, keys, 3, args, &y);
	if (rc == RUSK_OK && (y->type != REDIS_REPLY_ARRAY || y->elements != 3 ||
	                      y->element[0]->type != REDIS_REPLY_INTEGER))
		rc = set_err(r, RUSK_EIO, "claiming %s: an answer of another form", key);
	if (rc == RUSK_OK && y->element[0]->integer != 1) {
		if (holder != NULL && holderlen > 0)
			snprintf(holder, holderlen, "%s",
			         y->element[1]->type == REDIS_REPLY_STRING ? y->element[1]->str
			                                                   : "");
		if (left_ms != NULL)
			*left_ms = y->element[2]->type == REDIS_REPLY_INTEGER
			                   ? y->element[2]->integer
			                   : -1;
		rc = RUSK_EBUSY;
	}
	if (y != NULL)
		freeReplyObject(y);
	return rc;
}

int rusk_redis_lease_renew_(rusk_redis *r, uint32_t agent, const char *token, uint32_t ttl_ms,
                            int *lapsed, uint64_t *epoch)
{
	if (r == NULL || token == NULL || ttl_ms == 0)
		return RUSK_EINVAL;
	char key[48], ttl[16];
	lease_key(key, sizeof key, agent);
	snprintf(ttl, sizeof ttl, "%u", ttl_ms);
	char id[16];
	snprintf(id, sizeof id, "%u", agent);
	const char *keys[4] = {key, META_EPOCH, META_AGENTS, META_LEASES},
	           *args[3] = {token, ttl, id};
	redisReply *y = NULL;
	int rc = meta_eval(r, lua_renew, 4, keys, 3, args, &y);
	if (rc == RUSK_OK && (y->type != REDIS_REPLY_ARRAY || y->elements != 2 ||
	                      y->element[0]->type != REDIS_REPLY_INTEGER ||
	                      y->element[1]->type != REDIS_REPLY_STRING))
		rc = set_err(r, RUSK_EIO, "renewing %s: an answer of another form", key);
	if (rc == RUSK_OK) {
		long long st = y->element[0]->integer;
		if (lapsed != NULL)
			*lapsed = st == 2;
		if (epoch != NULL)
			*epoch = strtoull(y->element[1]->str, NULL, 10);
		if (st == 0)
			rc = set_err(r, RUSK_EBUSY, "%s: held by another process", key);
	}
	if (y != NULL)
		freeReplyObject(y);
	return rc;
}

int rusk_redis_lease_drop_(rusk_redis *r, uint32_t agent, const char *token)
{
	if (r == NULL || token == NULL)
		return RUSK_EINVAL;
	char key[48];
	lease_key(key, sizeof key, agent);
	char id[16];
	snprintf(id, sizeof id, "%u", agent);
	const char *keys[3] = {key, META_AGENTS, META_LEASES}, *args[2] = {token, id};
	redisReply *y = NULL;
	int rc = meta_eval(r, lua_drop, 3, keys, 2, args, &y);
	if (y != NULL)
		freeReplyObject(y);
	return rc;
}

int rusk_redis_lease_alive_(rusk_redis *r, uint32_t agent, int *alive)
{
	if (r == NULL || alive == NULL)
		return RUSK_EINVAL;
	char key[48];
	lease_key(key, sizeof key, agent);
	const char *av[2] = {"EXISTS", key};
	size_t al[2] = {6, strlen(key)};
	rcmd cmd = {2, av, al, -1, 0};
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_keyslot_(key, strlen(key)), &cmd, 1, &y);
	if (rc == RUSK_OK && y->type != REDIS_REPLY_INTEGER)
		rc = set_err(r, RUSK_EIO, "EXISTS %s: %s", key,
		             y->type == REDIS_REPLY_ERROR ? y->str : "no integer");
	if (rc == RUSK_OK)
		*alive = y->integer > 0;
	free_replies(&y, 1);
	return rc;
}

int rusk_redis_live_agents_(rusk_redis *r, uint8_t live[RUSK_REDIS_AGENTS], uint32_t *n)
{
	if (r == NULL || live == NULL || n == NULL)
		return RUSK_EINVAL;
	char keys[RUSK_REDIS_AGENTS][32];
	const char *av[RUSK_REDIS_AGENTS + 1];
	size_t al[RUSK_REDIS_AGENTS + 1];
	av[0] = "MGET";
	al[0] = 4;
	for (uint32_t i = 0; i < RUSK_REDIS_AGENTS; i++) {
		lease_key(keys[i], sizeof keys[i], i);
		av[i + 1] = keys[i];
		al[i + 1] = strlen(keys[i]);
	}
	rcmd cmd = {RUSK_REDIS_AGENTS + 1, av, al, -1, 0};
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_keyslot_(keys[0], strlen(keys[0])), &cmd, 1, &y);
	if (rc == RUSK_OK && (y->type != REDIS_REPLY_ARRAY || y->elements != RUSK_REDIS_AGENTS))
		rc = set_err(r, RUSK_EIO, "MGET rusk:{meta}:alive:*: %s",
		             y->type == REDIS_REPLY_ERROR ? y->str : "an answer of another form");
	*n = 0;
	for (uint32_t i = 0; i < RUSK_REDIS_AGENTS; i++) {
		live[i] = rc == RUSK_OK && y->element[i]->type == REDIS_REPLY_STRING;
		*n += live[i];
	}
	free_replies(&y, 1);
	return rc;
}

static const char lua_holder[] =
        "return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}\n";

int rusk_redis_lease_holder_(rusk_redis *r, uint32_t agent, int *alive, char *holder,
                             size_t holderlen, int64_t *left_ms)
{
	if (r == NULL || alive == NULL)
		return RUSK_EINVAL;
	char key[48];
	lease_key(key, sizeof key, agent);
	const char *keys[1] = {key};
	redisReply *y = NULL;
	int rc = meta_eval(r, lua_holder, 1, keys, 0, NULL, &y);
	/* A nil GET ends Lua's table: an absent lease answers an array of 0 or 1 element. */
	if (rc == RUSK_OK && y->type != REDIS_REPLY_ARRAY)
		rc = set_err(r, RUSK_EIO, "reading %s: an answer of another form", key);
	bool there = rc == RUSK_OK && y->elements == 2 &&
	             y->element[0]->type == REDIS_REPLY_STRING &&
	             y->element[1]->type == REDIS_REPLY_INTEGER;
	*alive = there;
	if (holder != NULL && holderlen > 0)
		snprintf(holder, holderlen, "%s", there ? y->element[0]->str : "");
	if (left_ms != NULL)
		*left_ms = there ? y->element[1]->integer : -1;
	if (y != NULL)
		freeReplyObject(y);
	return rc;
}

/* The live run namespaces (score = expiry, ms of the server's clock, above now). */
static const char lua_live_ns[] =
        "local t = redis.call('TIME')\n"
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
        "return redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')\n";

int rusk_redis_live_run_ns_(rusk_redis *r, uint64_t *ns, uint32_t cap, uint32_t *n)
{
	if (r == NULL || n == NULL || (cap > 0 && ns == NULL))
		return RUSK_EINVAL;
	const char *keys[1] = {META_RUNS};
	redisReply *y = NULL;
	int rc = meta_eval(r, lua_live_ns, 1, keys, 0, NULL, &y);
	if (rc == RUSK_OK && y->type != REDIS_REPLY_ARRAY)
		rc = set_err(r, RUSK_EIO, "%s: no array", META_RUNS);
	*n = 0;
	for (size_t i = 0; rc == RUSK_OK && i < y->elements; i++) {
		if (y->element[i]->type != REDIS_REPLY_STRING)
			continue;
		if (*n < cap)
			ns[*n] = strtoull(y->element[i]->str, NULL, 10);
		(*n)++;
	}
	if (y != NULL)
		freeReplyObject(y);
	return rc;
}

/* The run-lease script with namespace text ns ('' none) and ttl; *n the live count. */
static int runs_call(rusk_redis *r, const char *ns, uint32_t ttl_ms, uint32_t *n)
{
	char ttl[16];
	snprintf(ttl, sizeof ttl, "%u", ttl_ms);
	const char *keys[1] = {META_RUNS}, *args[2] = {ns, ttl};
	redisReply *y = NULL;
	int rc = meta_eval(r, lua_runs, 1, keys, 2, args, &y);
	if (rc == RUSK_OK && y->type != REDIS_REPLY_INTEGER)
		rc = set_err(r, RUSK_EIO, "%s: no integer", META_RUNS);
	if (rc == RUSK_OK && n != NULL)
		*n = (uint32_t)y->integer;
	if (y != NULL)
		freeReplyObject(y);
	return rc;
}

int rusk_redis_run_lease_(rusk_redis *r, uint64_t ns, uint32_t ttl_ms)
{
	if (r == NULL || ns == 0)
		return RUSK_EINVAL;
	char t[24];
	snprintf(t, sizeof t, "%" PRIu64, ns);
	return runs_call(r, t, ttl_ms, NULL);
}

int rusk_redis_live_runs_(rusk_redis *r, uint32_t *n)
{
	if (r == NULL || n == NULL)
		return RUSK_EINVAL;
	return runs_call(r, "", 0, n);
}

int rusk_redis_epoch_(rusk_redis *r, uint64_t *epoch)
{
	if (r == NULL || epoch == NULL)
		return RUSK_EINVAL;
	const char *av[2] = {"GET", META_EPOCH};
	size_t al[2] = {3, strlen(META_EPOCH)};
	rcmd cmd = {2, av, al, -1, 0};
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_keyslot_(av[1], al[1]), &cmd, 1, &y);
	if (rc == RUSK_OK && y->type == REDIS_REPLY_ERROR)
		rc = meta_reply_err(r, "GET", META_EPOCH, "string", y);
	if (rc == RUSK_OK)
		*epoch = y->type == REDIS_REPLY_STRING ? strtoull(y->str, NULL, 10) : 0;
	free_replies(&y, 1);
	return rc;
}

/* The next run namespace: INCR unless the counter reached ARGV[1] (RUSK_OWNER_NS_MAX):
 * {1, ns} taken, {0, n} none left (the counter unchanged). */
static const char lua_run_ns[] =
        "local v = redis.call('GET', KEYS[1])\n"
        "if v and not string.match(v, '^%d+$') then\n"
        "  return redis.error_reply('RUSKCORRUPT ' .. KEYS[1] .. ' is not a count: ' .. v)\n"
        "end\n"
        "local n = tonumber(v or '0')\n"
        "if n >= tonumber(ARGV[1]) then return {0, n} end\n"
        "return {1, redis.call('INCR', KEYS[1])}\n";

int rusk_redis_run_ns_(rusk_redis *r, uint64_t *ns)
{
	if (r == NULL || ns == NULL)
		return RUSK_EINVAL;
	const char *key = "rusk:{meta}:runs";
	char max[24];
	snprintf(max, sizeof max, "%" PRIu64, (uint64_t)RUSK_OWNER_NS_MAX);
	const char *keys[1] = {key}, *args[1] = {max};
	redisReply *y = NULL;
	int rc = meta_eval(r, lua_run_ns, 1, keys, 1, args, &y);
	if (rc == RUSK_OK &&
	    (y->type != REDIS_REPLY_ARRAY || y->elements != 2 ||
	     y->element[0]->type != REDIS_REPLY_INTEGER ||
	     y->element[1]->type != REDIS_REPLY_INTEGER || y->element[1]->integer < 1))
		rc = set_err(r, RUSK_EIO,
		             "taking a run namespace from %s: an answer of another form", key);
	if (rc == RUSK_OK && y->element[0]->integer == 0)
		/* Wrapping would give a namespace a live run may still hold (its owner ids, so
		 * its RUs, would be the new run's): refused instead. */
		rc = set_err(
		        r, RUSK_ERANGE,
		        "%s is %lld: every run namespace (1..%" PRIu64
		        ", the owner ids' top 24 bits) was handed out, and a wrapped one could "
		        "be a live run's: stop every rusk process on the state, write it afresh "
		        "(rusk agent --init-only), then delete %s and rusk:{meta}:forced",
		        key, y->element[1]->integer, (uint64_t)RUSK_OWNER_NS_MAX, key);
	if (rc == RUSK_OK)
		*ns = (uint64_t)y->element[1]->integer;
	if (y != NULL)
		freeReplyObject(y);
	return rc;
}

/* The forced reclaims of live runs (rusk_redis_forced_add_): one hash, field NS the RUs
 * released, NS:tasks the tasks they belonged to. */
#define META_FORCED "rusk:{meta}:forced"

int rusk_redis_forced_add_(rusk_redis *r, uint64_t ns, uint64_t rus, uint64_t tasks)
{
	if (r == NULL || ns == 0)
		return RUSK_EINVAL;
	char f1[32], f2[40], v1[24], v2[24];
	snprintf(f1, sizeof f1, "%" PRIu64, ns);
	snprintf(f2, sizeof f2, "%" PRIu64 ":tasks", ns);
	snprintf(v1, sizeof v1, "%" PRIu64, rus);
	snprintf(v2, sizeof v2, "%" PRIu64, tasks);
	const char *a1[4] = {"HINCRBY", META_FORCED, f1, v1},
	           *a2[4] = {"HINCRBY", META_FORCED, f2, v2};
	size_t l1[4] = {7, strlen(META_FORCED), strlen(f1), strlen(v1)};
	size_t l2[4] = {7, strlen(META_FORCED), strlen(f2), strlen(v2)};
	rcmd cmds[2] = {{4, a1, l1, -1, 0}, {4, a2, l2, -1, 0}};
	redisReply *y[2] = {NULL, NULL};
	int rc = exec_slot(r, rusk_redis_keyslot_(META_FORCED, strlen(META_FORCED)), cmds, 2, y);
	for (int k = 0; rc == RUSK_OK && k < 2; k++)
		if (y[k]->type == REDIS_REPLY_ERROR)
			rc = meta_reply_err(r, "HINCRBY", META_FORCED, "hash", y[k]);
		else if (y[k]->type != REDIS_REPLY_INTEGER)
			rc = set_err(r, RUSK_EIO, "HINCRBY %s: no integer", META_FORCED);
	free_replies(y, 2);
	return rc;
}

int rusk_redis_forced_get_(rusk_redis *r, uint64_t ns, uint64_t *rus, uint64_t *tasks)
{
	if (r == NULL || rus == NULL || tasks == NULL)
		return RUSK_EINVAL;
	*rus = *tasks = 0;
	char f1[32], f2[40];
	snprintf(f1, sizeof f1, "%" PRIu64, ns);
	snprintf(f2, sizeof f2, "%" PRIu64 ":tasks", ns);
	const char *av[4] = {"HMGET", META_FORCED, f1, f2};
	size_t al[4] = {5, strlen(META_FORCED), strlen(f1), strlen(f2)};
	rcmd cmd = {4, av, al, -1, 0};
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_keyslot_(META_FORCED, strlen(META_FORCED)), &cmd, 1, &y);
	if (rc == RUSK_OK && y->type == REDIS_REPLY_ERROR)
		rc = meta_reply_err(r, "HMGET", META_FORCED, "hash", y);
	else if (rc == RUSK_OK && (y->type != REDIS_REPLY_ARRAY || y->elements != 2))
		rc = set_err(r, RUSK_EIO, "HMGET %s: not two values", META_FORCED);
	if (rc == RUSK_OK) {
		if (y->element[0]->type == REDIS_REPLY_STRING)
			*rus = strtoull(y->element[0]->str, NULL, 10);
		if (y->element[1]->type == REDIS_REPLY_STRING)
			*tasks = strtoull(y->element[1]->str, NULL, 10);
	}
	free_replies(&y, 1);
	return rc;
}

/* ---- the automatic reclaim of dead processes' RUs ------------------------------------ */

/*
 * Who is dead (rusk_redis_reclaim_dead_): the ids of META_AGENTS whose lease key is gone,
 * each with its lease's length (META_LEASES, KEYS[3]; an id with none recorded, written by
 * an older rusk: the longest recorded, 0 if none: hold_unsteady then takes its own), and the
 * namespaces of META_RUNS whose lease expired (score <= now, the server's clock), in one round
 * trip. The lease keys are built from ARGV[1] (the {meta} slot, as KEYS).
 */
static const char lua_dead[] =
        "local t = redis.call('TIME')\n"
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
        "local dead, ms, most = {}, {}, nil\n"
        "for _, a in ipairs(redis.call('SMEMBERS', KEYS[1])) do\n"
        "  if redis.call('EXISTS', ARGV[1] .. a) == 0 then\n"
        "    local l = tonumber(redis.call('HGET', KEYS[3], a) or '')\n"
        "    if not l then\n"
        "      if not most then most = 0\n"
        "        for _, v in ipairs(redis.call('HVALS', KEYS[3])) do\n"
        "          most = math.max(most, tonumber(v) or 0) end\n"
        "      end\n"
        "      l = most\n"
        "    end\n"
        "    dead[#dead + 1] = a ms[#ms + 1] = l\n"
        "  end\n"
        "end\n"
        "return {dead, redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now), ms}\n";
/* Forget the dead whose RUs were released: ARGV[1] agent ids ARGV[3..] (their entries in
 * META_AGENTS and META_LEASES, KEYS[3]), then namespaces; each only if still dead (a
 * renewal since has added the id again, or the run its entry). */
static const char lua_forget[] =
        "local t = redis.call('TIME')\n"
        "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
        "local k = tonumber(ARGV[1])\n"
        "for i = 3, k + 2 do\n"
        "  if redis.call('EXISTS', ARGV[2] .. ARGV[i]) == 0 then\n"
        "    redis.call('SREM', KEYS[1], ARGV[i]) redis.call('HDEL', KEYS[3], ARGV[i])\n"
        "  end\n"
        "end\n"
        "for i = k + 3, #ARGV do\n"
        "  local s = redis.call('ZSCORE', KEYS[2], ARGV[i])\n"
        "  if s and tonumber(s) <= now then redis.call('ZREM', KEYS[2], ARGV[i]) end\n"
        "end\n"
        "return 1\n";
static const char lua_lock[] =
        "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end\n"
        "return 0\n";

/* The reclaim lock's term: longer than a pass (one owners read per partition and the
 * releases: 10-50 ms for 4-10 partitions on loopback); if its holder dies, another process
 * reclaims after it. Two passes at once would still release each RU once (the release
 * script checks owner and generation); the lock spares the second pass's reads. */
#define RECLAIM_LOCK_MS   5000
/* Beyond the lease, how long the {meta} shard must have answered without a gap before an
 * absent lease is believed (meta_steady): a live process's renewal (every third of its
 * lease) and its round trip on a loaded machine. */
#define RECLAIM_MARGIN_MS 1000

typedef struct dead_set {
	uint8_t agent[RUSK_REDIS_AGENTS];
	uint32_t agent_ms[RUSK_REDIS_AGENTS]; /* each dead agent's lease (META_LEASES), ms */
	uint32_t n_agents, n_runs;
	uint64_t run[RUSK_REDIS_RECLAIM_RUNS];
} dead_set;

static bool dead_run(const dead_set *d, uint64_t ns)
{
	for (uint32_t i = 0; i < d->n_runs; i++)
		if (d->run[i] == ns)
			return true;
	return false;
}

/* Whether owner o is one of d's (and not keep_agent's, nor namespace keep_ns's). */
static bool dead_owner(const dead_set *d, uint64_t o, int keep_agent, uint64_t keep_ns)
{
	uint64_t ns = rusk_owner_ns_(o);
	if (ns != 0)
		return ns != keep_ns && dead_run(d, ns);
	uint64_t ag = (o >> 32) - 1; /* an agent's ids are (agent + 1) << 32 | seq */
	return ag < RUSK_REDIS_AGENTS && (int)ag != keep_agent && d->agent[ag];
}

static int read_dead(rusk_redis *r, dead_set *d)
{
	memset(d, 0, sizeof *d);
	const char *keys[3] = {META_AGENTS, META_RUNS, META_LEASES},
	           *args[1] = {"rusk:{meta}:alive:"};
	redisReply *y = NULL;
	int rc = meta_eval(r, lua_dead, 3, keys, 1, args, &y);
	if (rc == RUSK_OK &&
	    (y->type != REDIS_REPLY_ARRAY || y->elements != 3 ||
	     y->element[0]->type != REDIS_REPLY_ARRAY || y->element[1]->type != REDIS_REPLY_ARRAY ||
	     y->element[2]->type != REDIS_REPLY_ARRAY ||
	     y->element[2]->elements != y->element[0]->elements))
		rc = set_err(r, RUSK_EIO,
		             "reading the dead processes under %s: an answer of another "
		             "form",
		             META_AGENTS);
	for (size_t i = 0; rc == RUSK_OK && i < y->element[0]->elements; i++) {
		const redisReply *e = y->element[0]->element[i], *ms = y->element[2]->element[i];
		char *end = NULL;
		unsigned long a = e->type == REDIS_REPLY_STRING ? strtoul(e->str, &end, 10) : ~0ul;
		if (end != NULL && *end == '\0' && a < RUSK_REDIS_AGENTS && !d->agent[a]) {
			d->agent[a] = 1;
			/* a length of another form: the longest a lease may be (the CLI's bound) */
			d->agent_ms[a] = ms->type == REDIS_REPLY_INTEGER && ms->integer >= 0 &&
			                                 ms->integer <= 3600000
			                         ? (uint32_t)ms->integer
			                         : 3600000u;
			d->n_agents++;
		}
	}
	for (size_t i = 0; rc == RUSK_OK && i < y->element[1]->elements; i++) {
		const redisReply *e = y->element[1]->element[i];
		uint64_t ns = e->type == REDIS_REPLY_STRING ? strtoull(e->str, NULL, 10) : 0;
		/* More than RUSK_REDIS_RECLAIM_RUNS dead runs: the rest at a later pass. */
		if (ns != 0 && d->n_runs < RUSK_REDIS_RECLAIM_RUNS && !dead_run(d, ns))
			d->run[d->n_runs++] = ns;
	}
	if (y != NULL)
		freeReplyObject(y);
	return rc;
}

/* The dead of both reads: an id or a namespace live again at the second is kept. */
static void dead_both(dead_set *a, const dead_set *b)
{
	a->n_agents = 0;
	for (uint32_t i = 0; i < RUSK_REDIS_AGENTS; i++) {
		a->agent[i] = a->agent[i] && b->agent[i];
		a->n_agents += a->agent[i];
	}
	uint32_t k = 0;
	for (uint32_t i = 0; i < a->n_runs; i++)
		if (dead_run(b, a->run[i]))
			a->run[k++] = a->run[i];
	a->n_runs = k;
}

static void forget_dead(rusk_redis *r, const dead_set *d, int keep_agent, uint64_t keep_ns)
{
	char text[RUSK_REDIS_AGENTS + RUSK_REDIS_RECLAIM_RUNS + 1][24];
	const char *args[RUSK_REDIS_AGENTS + RUSK_REDIS_RECLAIM_RUNS + 2];
	int n = 2, k = 0;
	args[1] = "rusk:{meta}:alive:";
	for (uint32_t i = 0; i < RUSK_REDIS_AGENTS; i++)
		if (d->agent[i] && (int)i != keep_agent) {
			snprintf(text[n], sizeof text[n], "%u", i);
			args[n] = text[n];
			n++, k++;
		}
	for (uint32_t i = 0; i < d->n_runs; i++)
		if (d->run[i] != keep_ns) {
			snprintf(text[n], sizeof text[n], "%" PRIu64, d->run[i]);
			args[n] = text[n];
			n++;
		}
	snprintf(text[0], sizeof text[0], "%d", k);
	args[0] = text[0];
	const char *keys[3] = {META_AGENTS, META_RUNS, META_LEASES};
	redisReply *y = NULL;
	meta_eval(r, lua_forget, 3, keys, n, args, &y); /* failed: forgotten at a later pass */
	if (y != NULL)
		freeReplyObject(y);
}

/* Whether the {meta} shard answered this connection without a gap for meta_quiet_ms up to
 * now (meta_seen): only then is an absent lease a dead process's. A live one whose lease
 * key expired while it could not reach the shard (the shard paused, failing over: a
 * promoted replica's leases may all look expired at once) renews it within a third of its
 * lease once the shard answers, so an absence read a full lease and a margin after the
 * last gap is real. */
static bool meta_steady(const rusk_redis *r)
{
	return r->meta_quiet_ms == 0 ||
	       now_ns() - r->meta_bad > (uint64_t)r->meta_quiet_ms * 1000000u;
}

/*
 * Whether an absent lease of an agent whose lease is lease_ms (META_LEASES) is believed:
 * beyond meta_steady (this process's own lease), the {meta} shard answered this connection
 * without a bad call for that agent's lease and the margin too, and without a silence
 * between two answers wider than two thirds of that lease (an outage this process did not
 * see may have been long enough to make that lease lapse). The agents sharing a state may
 * run with any mix of --lease-ms (the ninth review: a reclaimer's 1 s lease gave a 2 s
 * window, while a live agent whose 9 s lease lapsed in a 10 s pause took it again 2.6 s
 * after the pause, and 1,496 of its RUs were released); a live agent renews within a third
 * of its own lease, at most 1 s once it lapsed (agent_cmd.c lease_retry_ns), so an absence
 * read after its own lease and a margin without such a gap is a dead agent's. A reclaimer
 * whose meta calls come further apart than two thirds of the dead agent's lease (its own
 * lease much longer, or a run's once-a-second pass beside a 1 s lease) never believes it:
 * such a pass is put off, left to a process that watches {meta} closer (a live agent with a
 * shorter lease), or to `--recount --reclaim-expired` by hand.
 */
enum { STEADY, STEADY_WARMING, STEADY_GAP, STEADY_SPARSE };
static int steady_for(const rusk_redis *r, uint32_t lease_ms)
{
	if (r->meta_quiet_ms == 0)
		return STEADY; /* no rule (set_reclaim_lease_ not called) */
	uint64_t now = now_ns(), win = ((uint64_t)lease_ms + RECLAIM_MARGIN_MS) * 1000000u;
	if (now - r->meta_bad <= win)
		return r->meta_gap ? STEADY_GAP : STEADY_WARMING;
	uint64_t from = now - win, wide = (uint64_t)lease_ms * 2000000u / 3;
	if (r->sil_lost > from)
		return STEADY_GAP;
	for (uint32_t i = 0; i < r->n_sil; i++)
		if (r->sil[i].end > from) /* the widest to end in the window */
			return r->sil[i].gap <= wide ? STEADY : STEADY_SPARSE;
	return STEADY;
}

/* The dead agents of d whose absence r cannot believe yet (steady_for) left out;
 * out->unsteady and out->warming as for meta_steady; out->closer_ms, the spacing of meta
 * calls that would let r believe one held back by its calls' spacing. */
static void hold_unsteady(const rusk_redis *r, dead_set *d, rusk_redis_reclaim *out)
{
	/* none recorded at all (ids of an older rusk only): this process's own lease, the
	 * rule before the lengths were recorded */
	uint32_t own =
	        r->meta_quiet_ms > RECLAIM_MARGIN_MS ? r->meta_quiet_ms - RECLAIM_MARGIN_MS : 0;
	for (uint32_t i = 0; i < RUSK_REDIS_AGENTS; i++) {
		uint32_t ms = d->agent_ms[i] > 0 ? d->agent_ms[i] : own;
		int st = d->agent[i] ? steady_for(r, ms) : STEADY;
		if (st == STEADY)
			continue;
		d->agent[i] = 0;
		d->n_agents--;
		out->unsteady |= st != STEADY_WARMING;
		out->warming |= st == STEADY_WARMING;
		uint32_t within =
		        ms / 3 * 2 > 200 ? ms / 3 * 2 : 200; /* renewals 100 ms apart at most */
		if (st == STEADY_SPARSE && (out->closer_ms == 0 || within < out->closer_ms))
			out->closer_ms = within;
	}
}

void rusk_redis_set_reclaim_lease_(rusk_redis *r, uint32_t lease_ms)
{
	if (r == NULL)
		return;
	r->meta_quiet_ms = lease_ms > 0 ? lease_ms + RECLAIM_MARGIN_MS : 0;
	/* An outage this process did not see (no meta call in it) cannot have made a live
	 * process's lease lapse if it was shorter than two thirds of a lease (each renews every
	 * third); a run renews once a second, half of a 2 s lease (RUSK_RUN_LEASE_MS), which a
	 * half-lease spacing took for a gap at every renewal, so its reclaim never ran. */
	r->meta_space_ms = lease_ms / 3 * 2;
	r->meta_bad = now_ns(); /* nothing seen before: a full lease from now */
	r->meta_gap = false;
}

/* The reclaim lock (SET NX PX): RUSK_OK taken, RUSK_EBUSY another process holds it. */
static int reclaim_lock(rusk_redis *r, const char *token, bool take)
{
	char ttl[16];
	snprintf(ttl, sizeof ttl, "%d", RECLAIM_LOCK_MS);
	const char *keys[1] = {META_RECLAIM}, *args[2] = {token, ttl};
	redisReply *y = NULL;
	int rc = meta_eval(r, take ? lua_lock : lua_drop, 1, keys, take ? 2 : 1, args, &y);
	if (rc == RUSK_OK && take && (y->type != REDIS_REPLY_INTEGER || y->integer != 1))
		rc = RUSK_EBUSY;
	if (y != NULL)
		freeReplyObject(y);
	return rc;
}

/* out->agents_new / runs_new: the dead of d (both reads) that r had not counted yet,
 * marked counted (r->dead_seen). */
static void count_dead_once(rusk_redis *r, const dead_set *d, uint64_t keep_ns,
                            rusk_redis_reclaim *out)
{
	for (uint32_t i = 0; i < RUSK_REDIS_AGENTS; i++) {
		out->agents_new += d->agent[i] && !r->dead_seen[i];
		r->dead_seen[i] |= d->agent[i];
	}
	for (uint32_t i = 0; i < d->n_runs; i++) {
		if (d->run[i] == keep_ns)
			continue;
		bool seen = false;
		uint32_t n = r->n_dead_seen_run < RUSK_REDIS_RECLAIM_RUNS ? r->n_dead_seen_run
		                                                          : RUSK_REDIS_RECLAIM_RUNS;
		for (uint32_t j = 0; j < n && !seen; j++)
			seen = r->dead_seen_run[j] == d->run[i];
		if (seen)
			continue;
		out->runs_new++;
		r->dead_seen_run[r->n_dead_seen_run++ % RUSK_REDIS_RECLAIM_RUNS] = d->run[i];
	}
}

int rusk_redis_reclaim_dead_(rusk_redis *r, const char *token, int keep_agent, uint64_t keep_ns,
                             rusk_redis_reclaim *out)
{
	if (r == NULL || token == NULL || token[0] == '\0' || strlen(token) > 200 || out == NULL)
		return RUSK_EINVAL;
	memset(out, 0, sizeof *out);
	dead_set d, d2;
	if (!meta_steady(r)) {
		/* an absent lease may be a live process's that could not renew: put off after a
		 * gap; in the first window of a fresh watch nothing is wrong, nothing said */
		out->unsteady = r->meta_gap;
		out->warming = !r->meta_gap;
		return RUSK_OK;
	}
	int rc = read_dead(r, &d);
	if (rc != RUSK_OK)
		return rc;
	if (!meta_steady(r)) { /* the read itself was slow: its absences are not believed */
		out->unsteady = 1;
		return RUSK_OK;
	}
	if (keep_agent >= 0 && keep_agent < RUSK_REDIS_AGENTS && d.agent[keep_agent]) {
		d.agent[keep_agent] = 0; /* this process's own id: never taken for dead */
		d.n_agents--;
	}
	for (uint32_t i = 0; i < RUSK_REDIS_AGENTS; i++)
		r->dead_seen[i] &= d.agent[i]; /* live (or never seen) now: a death counts anew */
	hold_unsteady(r, &d, out);
	if (d.n_agents == 0 && (d.n_runs == 0 || (d.n_runs == 1 && d.run[0] == keep_ns)))
		return RUSK_OK; /* the usual case: one round trip */
	rc = reclaim_lock(r, token, true);
	if (rc == RUSK_EBUSY) {
		out->busy = 1; /* another process reclaims now */
		return RUSK_OK;
	}
	if (rc != RUSK_OK)
		return rc;
	out->passes = 1;
	uint32_t np = r->n_parts, most = 1;
	size_t total = 0;
	for (uint32_t p = 0; p < np; p++) {
		most = r->p_n_rus[p] > most ? r->p_n_rus[p] : most;
		total += r->p_n_rus[p];
	}
	uint32_t *rus = malloc(sizeof *rus * most), *gens = malloc(sizeof *gens * most);
	uint64_t *own = malloc(sizeof *own * most);
	rusk_bk_lease *cand = malloc(sizeof *cand * (total ? total : 1));
	size_t *off = calloc(np + 1, sizeof *off);
	int *rcs = malloc(sizeof *rcs * (total ? total : 1));
	if (rus == NULL || gens == NULL || own == NULL || cand == NULL || off == NULL ||
	    rcs == NULL) {
		rc = RUSK_ENOMEM;
		goto out;
	}
	/* 1. Every partition's owners, after the first read of the dead: candidates. */
	size_t k = 0;
	for (uint32_t p = 0; p < np; p++) {
		size_t n = 0;
		off[p] = k;
		if (rusk_redis_owners_(r, p, rus, own, gens, most, &n) != RUSK_OK) {
			out->parts_failed++;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (dead_owner(&d, own[i], keep_agent, keep_ns))
				cand[k++] = (rusk_bk_lease){own[i], {rus[i], gens[i]}};
	}
	off[np] = k;
	/* 2. Who is dead after those reads: a process that held an owner read above was live
	 * when it committed, so it is dead now only if its lease ended since; one live again
	 * (a stalled agent's renewal) is kept. */
	rc = read_dead(r, &d2);
	if (rc != RUSK_OK)
		goto out;
	if (!meta_steady(r)) { /* a gap since the first read: nothing released */
		out->unsteady = 1;
		out->passes = 0;
		goto out;
	}
	dead_both(&d, &d2);
	hold_unsteady(r, &d, out);
	out->agents = d.n_agents; /* keep_agent left out at the first read */
	for (uint32_t i = 0; i < d.n_runs; i++)
		out->runs += d.run[i] != keep_ns;
	count_dead_once(r, &d, keep_ns, out);
	/* 3. Released with the owner and generation read: the script refuses an RU that moved
	 * on (released, taken again: its generation is higher), so nothing live is touched. */
	for (uint32_t p = 0; p < np; p++) {
		size_t m = 0;
		for (size_t i = off[p]; i < off[p + 1]; i++)
			if (dead_owner(&d, cand[i].task, keep_agent, keep_ns))
				cand[off[p] + m++] = cand[i];
		if (m == 0 || rd_release(r, p, cand + off[p], m, rcs) != RUSK_OK)
			continue;
		for (size_t i = 0; i < m; i++) {
			bool ok = rcs[i] == RUSK_OK;
			out->reclaimed += ok;
			out->from_runs += ok && rusk_owner_ns_(cand[off[p] + i].task) != 0;
			out->refused += !ok;
		}
	}
	/* 4. Every partition read: the dead are forgotten (nothing of theirs is left). */
	if (out->parts_failed == 0)
		forget_dead(r, &d, keep_agent, keep_ns);
out:
	reclaim_lock(r, token, false);
	free(rus);
	free(gens);
	free(own);
	free(cand);
	free(off);
	free(rcs);
	return rc;
}

/* ---- opening: checks, then the state ------------------------------------------------ */

/* FNV-1a 64 over each machine's first RU, RUs, MiB, GPUs and platform, in machine order:
 * two node lists with the same totals and partitions but machines laid out otherwise
 * (4000/8000 cpu_milli alternating, one starting small, the other big) differ here, and
 * RU numbers of one are not the other's (their commits answer RUSKRANGE). */
static uint64_t layout_digest(const rusk_redis_shape *s)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (uint32_t m = 0; m < s->n_machines; m++) {
		uint32_t v[5] = {s->m_first_ru[m], s->m_n_rus[m], s->m_mem_mib[m], s->m_gpus[m],
		                 s->m_platform != NULL ? s->m_platform[m] : 0};
		for (int k = 0; k < 5; k++)
			for (int b = 0; b < 4; b++) {
				h ^= (v[k] >> (8 * b)) & 0xffu;
				h *= UINT64_C(0x100000001b3);
			}
	}
	return h;
}

static int copy_shape(rusk_redis *r, const rusk_redis_shape *s)
{
	r->layout = layout_digest(s);
	r->n_parts = s->n_parts;
	r->n_machines = s->n_machines;
	uint32_t **pa[4] = {&r->p_first_ru, &r->p_n_rus, &r->p_first_m, &r->p_n_m};
	const uint32_t *ps[4] = {s->part_first_ru, s->part_n_rus, s->part_first_machine,
	                         s->part_n_machines};
	uint32_t **ma[4] = {&r->m_first_ru, &r->m_n_rus, &r->m_mem, &r->m_gpus};
	const uint32_t *ms[4] = {s->m_first_ru, s->m_n_rus, s->m_mem_mib, s->m_gpus};
	for (int k = 0; k < 4; k++) {
		*pa[k] = malloc(sizeof(uint32_t) * s->n_parts);
		*ma[k] = malloc(sizeof(uint32_t) * s->n_machines);
		if (*pa[k] == NULL || *ma[k] == NULL)
			return RUSK_ENOMEM;
		memcpy(*pa[k], ps[k], sizeof(uint32_t) * s->n_parts);
		memcpy(*ma[k], ms[k], sizeof(uint32_t) * s->n_machines);
	}
	r->keys = malloc(sizeof *r->keys * s->n_parts);
	if (r->keys == NULL)
		return RUSK_ENOMEM;
	for (uint32_t p = 0; p < s->n_parts; p++)
		for (int k = 0; k < N_KEYS; k++)
			snprintf(r->keys[p][k], sizeof r->keys[p][k], "rusk:{p%u}:%s", p,
			         key_suffix[k]);
	return RUSK_OK;
}

static int check_shape(const rusk_redis_shape *s, char *err, size_t errlen)
{
	if (s == NULL || s->n_parts == 0 || s->n_machines == 0 || s->part_first_ru == NULL ||
	    s->part_n_rus == NULL || s->part_first_machine == NULL || s->part_n_machines == NULL ||
	    s->m_first_ru == NULL || s->m_n_rus == NULL || s->m_mem_mib == NULL ||
	    s->m_gpus == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "empty cluster shape");
	for (uint32_t p = 0; p < s->n_parts; p++)
		if (s->part_first_machine[p] + s->part_n_machines[p] > s->n_machines ||
		    s->part_n_machines[p] == 0)
			return rusk_errf(err, errlen, RUSK_EINVAL,
			                 "partition %u: bad machine range", p);
	return RUSK_OK;
}

static void part_desc(const rusk_redis *r, uint32_t p, char *buf, size_t len)
{
	snprintf(buf, len, "%u,%u,%u,%u", r->p_first_ru[p], r->p_n_rus[p], r->p_first_m[p],
	         r->p_n_m[p]);
}

/* Writes partition p's empty state: one pipeline (one round trip) to its shard. */
/* Machines (or GPUs) per HSET of the init's writes (init_part): each chunk is answered as it
 * is executed, so that a big partition over a slow link is never silent for a read's
 * timeout while its bytes cross (a single HSET of 1M machines, 20 MB, was answered only
 * once all of it had arrived: at 1,000 KB/s never within the timeout; the eleventh review). */
#define INIT_CHUNK 4096

/* The keys an init writes partition p's new state under before the swap (init_part):
 * rusk:{pN}:init:SUFFIX, in p's slot. */
static void init_tmp_key(const rusk_redis *r, uint32_t p, int k, char *buf, size_t len)
{
	const char *free_key = r->keys[p][K_FREE], *colon = strrchr(free_key, ':');
	int pre = colon != NULL ? (int)(colon - free_key) : (int)strlen(free_key);
	snprintf(buf, len, "%.*s:init:%s", pre, free_key, key_suffix[k]);
}

/* The init's swap of partition p (one script, atomic: a commit or release script, or a
 * snapshot, sees the old partition or the new one, never a mix or a gap): KEYS[1..8] the
 * partition's keys, KEYS[9..16] the new ones (init_tmp_key, in the same order); each key
 * the init wrote replaces its old one (RENAME), the others are deleted. Without the new
 * free bits (KEYS[11]: K_FREE's, which the init always writes) it does nothing: a swap sent
 * again after its answer was lost (exec_slot) must not delete what the first one put in. */
static const char lua_init_swap[] = "if redis.call('EXISTS', KEYS[11]) == 0 then return 0 end\n"
                                    "for i = 1, 8 do\n"
                                    "  if redis.call('EXISTS', KEYS[i + 8]) == 1 then\n"
                                    "    redis.call('RENAME', KEYS[i + 8], KEYS[i])\n"
                                    "  else\n"
                                    "    redis.call('DEL', KEYS[i])\n"
                                    "  end\n"
                                    "end\n"
                                    "return 1\n";

/*
 * Writes partition p's empty state: under its init keys first (init_tmp_key: what a cut init
 * left there deleted, the free bits, the version, the machines, memory and GPUs in HSETs of
 * INIT_CHUNK entries), then swapped in by one script (lua_init_swap). All in one pipeline.
 * Before, the partition's keys were deleted and written in place by plain commands: a commit
 * script of an agent still on the old state could run between them and find a key absent or
 * a machine missing (a forced init under a live agent: "the rusk state is corrupt", exit 2;
 * a live `rusk run` stopped as "lost by the cluster"; the eleventh review).
 */
static int init_part(rusk_redis *r, uint32_t p)
{
	uint32_t nm = r->p_n_m[p], nr = r->p_n_rus[p], fm = r->p_first_m[p];
	size_t gpus = 0;
	for (uint32_t m = fm; m < fm + nm; m++)
		gpus += r->m_gpus[m];
	size_t chunks = 2 * ((size_t)nm / INIT_CHUNK + 1) + gpus / INIT_CHUNK + 1;
	size_t max_cmds = 4 + chunks;
	char tmp[N_KEYS][48];
	for (int k = 0; k < N_KEYS; k++)
		init_tmp_key(r, p, k, tmp[k], sizeof tmp[k]);
	arena a;
	if (arena_init(&a, 64 + 4 * (size_t)nm + 2 * gpus + 2 * chunks) != RUSK_OK)
		return RUSK_ENOMEM;
	size_t nbytes = (nr + 7) / 8;
	char *bits = malloc(nbytes ? nbytes : 1);
	char(*vals)[48] = malloc(sizeof *vals * (nm + 1));
	rcmd *cmds = malloc(max_cmds * sizeof *cmds);
	redisReply **rep = calloc(max_cmds, sizeof *rep);
	if (bits == NULL || vals == NULL || cmds == NULL || rep == NULL) {
		free(bits);
		free(vals);
		free(cmds);
		free(rep);
		arena_free(&a);
		return RUSK_ENOMEM;
	}
	memset(bits, 0xff, nbytes);
	if (nr % 8)
		bits[nbytes - 1] = (char)(0xffu << (8 - nr % 8));
	size_t ncmd = 0, at = a.n_args;
	arg_str(&a, "DEL");
	for (int k = 0; k < N_KEYS; k++)
		arg_str(&a, tmp[k]);
	cmds[ncmd++] = cmd_at(&a, at, -1, 0);
	at = a.n_args;
	arg_str(&a, "SET");
	arg_str(&a, tmp[K_FREE]);
	a.argv[a.n_args] = bits;
	a.len[a.n_args++] = nbytes;
	cmds[ncmd++] = cmd_at(&a, at, -1, 0);
	at = a.n_args;
	arg_str(&a, "SET");
	arg_str(&a, tmp[K_VER]);
	arg_str(&a, "0");
	cmds[ncmd++] = cmd_at(&a, at, -1, 0);
	/* the machines: the partition's description first, then INIT_CHUNK a command */
	part_desc(r, p, vals[nm], sizeof vals[nm]);
	for (uint32_t m = fm; m < fm + nm; m++)
		snprintf(vals[m - fm], sizeof vals[0], "%u,%u,%u,%u",
		         r->m_first_ru[m] - r->p_first_ru[p], r->m_n_rus[m], r->m_mem[m],
		         r->m_gpus[m]);
	for (uint32_t m0 = fm; m0 == fm || m0 < fm + nm; m0 += INIT_CHUNK) {
		at = a.n_args;
		arg_str(&a, "HSET");
		arg_str(&a, tmp[K_MACH]);
		if (m0 == fm) {
			arg_str(&a, "part");
			arg_str(&a, vals[nm]);
		}
		for (uint32_t m = m0; m < fm + nm && m < m0 + INIT_CHUNK; m++) {
			arg_u64(&a, m - fm);
			arg_str(&a, vals[m - fm]);
		}
		cmds[ncmd++] = cmd_at(&a, at, -1, 0);
	}
	for (uint32_t m0 = fm; m0 < fm + nm; m0 += INIT_CHUNK) {
		at = a.n_args;
		arg_str(&a, "HSET");
		arg_str(&a, tmp[K_MEM]);
		for (uint32_t m = m0; m < fm + nm && m < m0 + INIT_CHUNK; m++) {
			arg_u64(&a, m - fm);
			arg_u64(&a, r->m_mem[m]);
		}
		cmds[ncmd++] = cmd_at(&a, at, -1, 0);
	}
	size_t in_cmd = 0;
	for (uint32_t m = fm; m < fm + nm; m++)
		for (uint32_t k = 0; k < r->m_gpus[m]; k++) {
			if (in_cmd == 0) {
				at = a.n_args;
				arg_str(&a, "HSET");
				arg_str(&a, tmp[K_GPU]);
			}
			char *t = a.text + a.used;
			int w = snprintf(t, 24, "%u.%u", m - fm, k);
			a.used += (size_t)w + 1;
			a.argv[a.n_args] = t;
			a.len[a.n_args++] = (size_t)w;
			arg_str(&a, "1000");
			if (++in_cmd == INIT_CHUNK) {
				cmds[ncmd++] = cmd_at(&a, at, -1, 0);
				in_cmd = 0;
			}
		}
	if (in_cmd > 0)
		cmds[ncmd++] = cmd_at(&a, at, -1, 0);
	at = a.n_args;
	arg_str(&a, "EVAL");
	arg_str(&a, lua_init_swap);
	arg_str(&a, "16");
	for (int k = 0; k < N_KEYS; k++)
		arg_str(&a, r->keys[p][k]);
	for (int k = 0; k < N_KEYS; k++)
		arg_str(&a, tmp[k]);
	cmds[ncmd++] = cmd_at(&a, at, -1, 0);
	int rc = exec_slot(r, rusk_redis_slot_of_(p), cmds, ncmd, rep);
	for (size_t i = 0; rc == RUSK_OK && i < ncmd; i++)
		if (rep[i]->type == REDIS_REPLY_ERROR)
			rc = set_err(r, RUSK_EIO, "partition %u: writing the state: %s", p,
			             rep[i]->str);
	free_replies(rep, ncmd);
	free(rep);
	free(cmds);
	free(bits);
	free(vals);
	arena_free(&a);
	return rc;
}

/* The totals of r's shape: partitions, RUs, machines, MiB, GPUs (rusk:{meta}:shape). */
typedef struct totals {
	uint64_t parts, rus, machines, mem, gpus;
} totals;

static totals shape_totals(const rusk_redis *r)
{
	totals t = {r->n_parts, 0, r->n_machines, 0, 0};
	for (uint32_t p = 0; p < r->n_parts; p++)
		t.rus += r->p_n_rus[p];
	for (uint32_t m = 0; m < r->n_machines; m++) {
		t.mem += r->m_mem[m];
		t.gpus += r->m_gpus[m];
	}
	return t;
}

/* Checks that partition p's state is there with this run's shape: RUSK_OK, RUSK_EIO
 * (absent: *missing set, or no answer), RUSK_ESHAPE (another shape; its description in
 * there[]). */
static int check_part(rusk_redis *r, uint32_t p, char *there, size_t len, bool *missing)
{
	const char *av[3] = {"HGET", r->keys[p][K_MACH], "part"};
	size_t al[3] = {4, strlen(av[1]), 4};
	rcmd cmd = {3, av, al, -1, 0};
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_slot_of_(p), &cmd, 1, &y);
	char want[64];
	part_desc(r, p, want, sizeof want);
	*missing = rc == RUSK_OK && y->type != REDIS_REPLY_STRING;
	if (*missing) {
		rc = set_err(
		        r, RUSK_EIO,
		        "no rusk state for partition %u at %s (key %s missing): start "
		        "`rusk run --backend %s` (without --no-init) or `rusk agent --init-only` "
		        "first, or pass --init to rusk agent",
		        p, r->url, r->keys[p][K_MACH], r->url);
	} else if (rc == RUSK_OK && strcmp(y->str, want) != 0) {
		snprintf(there, len, "%s", y->str);
		rc = RUSK_ESHAPE;
	}
	free_replies(&y, 1);
	return rc;
}

/* The message of a shape mismatch found at partition p (its description there: `there`):
 * the totals on both sides from rusk:{meta}:shape, and what differs. */
static int shape_error(rusk_redis *r, uint32_t p, const char *there)
{
	totals h = shape_totals(r), s = {0, 0, 0, 0, 0};
	const char *av[2] = {"GET", META_SHAPE};
	size_t al[2] = {3, strlen(META_SHAPE)};
	rcmd cmd = {2, av, al, -1, 0};
	redisReply *y = NULL;
	bool have = exec_slot(r, rusk_redis_keyslot_(av[1], al[1]), &cmd, 1, &y) == RUSK_OK &&
	            y->type == REDIS_REPLY_STRING &&
	            sscanf(y->str, "%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNu64,
	                   &s.parts, &s.rus, &s.machines, &s.mem, &s.gpus) == 5;
	free_replies(&y, 1);
	char want[64];
	part_desc(r, p, want, sizeof want);
	if (!have) /* a state written before rusk:{meta}:shape: the partition only */
		return set_err(r, RUSK_ESHAPE,
		               "the rusk state at %s is for another cluster shape: partition %u is "
		               "%s there (first RU, RUs, first machine, machines), %s here",
		               r->url, p, there, want);
	char diff[400] = "";
	size_t u = 0;
#define DIFF(cond, what)                                                                           \
	if ((cond) && u + 64 < sizeof diff)                                                        \
	u += (size_t)snprintf(diff + u, sizeof diff - u, "%s%s", u ? ", " : "", what)
	DIFF(s.parts != h.parts, "the partitions (--partitions)");
	DIFF(s.machines != h.machines, "the machines (--machines, --cluster)");
	DIFF(s.rus * h.machines != h.rus * s.machines, "the RUs per machine (--rus-per-machine)");
	DIFF(s.mem * h.machines != h.mem * s.machines, "the memory per machine (--cluster)");
	DIFF(s.gpus * h.machines != h.gpus * s.machines, "the GPUs per machine (--cluster)");
#undef DIFF
	if (u == 0)
		snprintf(diff, sizeof diff,
		         "the same totals, laid out otherwise: partition %u is %s there (first RU, "
		         "RUs, first machine, machines), %s here (--machines-per-rack, "
		         "--racks-per-cell, --seed, --cluster)",
		         p, there, want);
	return set_err(r, RUSK_ESHAPE,
	               "the rusk state at %s is for another cluster shape: it has %" PRIu64
	               " RUs on %" PRIu64 " machines in %" PRIu64 " partitions; this command "
	               "line makes %" PRIu64 " RUs on %" PRIu64 " machines in %" PRIu64
	               " partitions; differs: %s",
	               r->url, s.rus, s.machines, s.parts, h.rus, h.machines, h.parts, diff);
}

/* Partitions that match can still hold other machines (same totals per partition): the
 * layout digest of rusk:{meta}:shape tells. A state written before the digest has none
 * and passes (its partitions matched). */
static int layout_check(rusk_redis *r)
{
	const char *av[2] = {"GET", META_SHAPE};
	size_t al[2] = {3, strlen(META_SHAPE)};
	rcmd cmd = {2, av, al, -1, 0};
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_keyslot_(av[1], al[1]), &cmd, 1, &y);
	uint64_t v[5], there = 0;
	if (rc == RUSK_OK && y->type == REDIS_REPLY_ERROR)
		rc = meta_reply_err(r, "GET", META_SHAPE, "string", y);
	else if (rc == RUSK_OK && y->type == REDIS_REPLY_STRING &&
	         sscanf(y->str,
	                "%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNu64 ",%" SCNx64,
	                &v[0], &v[1], &v[2], &v[3], &v[4], &there) == 6 &&
	         there != r->layout)
		rc = set_err(
		        r, RUSK_ESHAPE,
		        "the rusk state at %s is for another cluster shape: the machines "
		        "differ from the state's: same totals, another layout (layout digest "
		        "%016" PRIx64 " there vs %016" PRIx64 " here): %s",
		        r->url, there, r->layout,
		        r->flags[0] == '\0' || strncmp(r->flags, "--cluster ", 10) == 0
		                ? "another --cluster node list?"
		                : "another --seed (the machines' platforms are drawn from it)?");
	free_replies(&y, 1);
	return rc;
}

void rusk_redis_set_flags_(rusk_redis *r, const char *flags)
{
	if (r != NULL)
		snprintf(r->flags, sizeof r->flags, "%s", flags != NULL ? flags : "");
}

/* Flag `name`'s value in a "--name value --name value ..." line (NULL: not there). */
static const char *flag_value(const char *line, const char *name, size_t nlen, size_t *vlen)
{
	for (const char *t = line; t != NULL && *t != '\0';) {
		while (*t == ' ')
			t++;
		const char *e = strchr(t, ' ');
		size_t len = e != NULL ? (size_t)(e - t) : strlen(t);
		if (len == nlen && strncmp(t, name, nlen) == 0 && e != NULL) {
			const char *v = e + 1, *ve = strchr(v, ' ');
			*vlen = ve != NULL ? (size_t)(ve - v) : strlen(v);
			return v;
		}
		t = e;
	}
	return NULL;
}

/* Adds to u the flags of line `a` whose value line `b` lacks or differs in ("--seed 7"). */
static size_t flags_differ(const char *a, const char *b, char *out, size_t len, size_t u)
{
	for (const char *t = a; t != NULL && *t != '\0';) {
		while (*t == ' ')
			t++;
		const char *e = strchr(t, ' ');
		if (e == NULL || strncmp(t, "--", 2) != 0)
			break;
		size_t nlen = (size_t)(e - t), av = 0, bv = 0;
		const char *va = flag_value(a, t, nlen, &av), *vb = flag_value(b, t, nlen, &bv);
		if (va != NULL && (vb == NULL || av != bv || strncmp(va, vb, av) != 0) &&
		    u + 1 < len)
			u += (size_t)snprintf(out + u, len - u, "%s%.*s %.*s", u ? " " : "",
			                      (int)nlen, t, (int)av, va);
		if (u >= len)
			u = len - 1;
		t = va != NULL ? va + av : NULL;
	}
	return u;
}

/* After a shape mismatch: the flags the state was written with (rusk:{meta}:flags) against
 * this command line's, the ones that differ named on both sides, appended to r->err. A
 * state written before the flags were recorded, or a command line without them: nothing
 * added. */
static void flags_hint(rusk_redis *r)
{
	if (r->flags[0] == '\0')
		return;
	const char *av[2] = {"GET", META_FLAGS};
	size_t al[2] = {3, strlen(META_FLAGS)};
	rcmd cmd = {2, av, al, -1, 0};
	redisReply *y = NULL;
	char msg[sizeof r->err];
	snprintf(msg, sizeof msg, "%s", r->err);
	if (exec_slot(r, rusk_redis_keyslot_(av[1], al[1]), &cmd, 1, &y) == RUSK_OK &&
	    y->type == REDIS_REPLY_STRING) {
		char there[256] = "", here[256] = "";
		flags_differ(y->str, r->flags, there, sizeof there, 0);
		flags_differ(r->flags, y->str, here, sizeof here, 0);
		/* cut short if it must: the return value checked keeps the compiler quiet */
		if ((there[0] != '\0' || here[0] != '\0') &&
		    snprintf(msg + strlen(msg), sizeof msg - strlen(msg),
		             "; the state was made with %s; this command line has %s: give %s, or "
		             "write the state afresh (rusk agent --init, rusk run without "
		             "--no-init)",
		             there[0] ? there : "(none of them)", here[0] ? here : "(none of them)",
		             there[0] ? there : "the state's flags") < 0)
			msg[0] = '\0';
	}
	free_replies(&y, 1);
	snprintf(r->err, sizeof r->err, "%s", msg);
}

/* Whether rusk:{meta}:shape exists (*yes): the state's shape, written with the state
 * (rusk_redis_state_write_, before the partitions), left when the cluster lost every
 * partition but the {meta} shard, or an init stopped before its partitions. */
static int meta_shape_exists(rusk_redis *r, int *yes)
{
	const char *av[2] = {"EXISTS", META_SHAPE};
	size_t al[2] = {6, strlen(META_SHAPE)};
	rcmd cmd = {2, av, al, -1, 0};
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_keyslot_(META_SHAPE, strlen(META_SHAPE)), &cmd, 1, &y);
	if (rc == RUSK_OK && y->type != REDIS_REPLY_INTEGER)
		rc = RUSK_EIO;
	if (rc == RUSK_OK)
		*yes = y->integer > 0;
	free_replies(&y, 1);
	return rc;
}

/*
 * Partition p's state is missing (check_part said so, r->err): whether the state was never
 * written (every partition missing: RUSK_EIO, check_part's message, bad input) or the
 * cluster lost part of it (some partitions' state there, p's and maybe others' gone: a
 * master failed over before its replica had the writes it had acknowledged, a node
 * restarted empty; docs/redis.md, Faults): RUSK_EIO, r->state_lost set (an outage's exit
 * status, 1, not bad input) and a message naming the partitions gone. `started`: found so
 * after this process found the state there (a snapshot or a write script, part_gone): lost
 * by the cluster even with every partition gone. Reads every partition once (one round
 * trip each): on this error path only.
 */
static int missing_part(rusk_redis *r, uint32_t p, bool started)
{
	char first[sizeof r->err];
	snprintf(first, sizeof first, "%s", r->err);
	uint32_t gone = 1, there = 0;
	char names[160] = "";
	size_t u = (size_t)snprintf(names, sizeof names, "%u", p);
	for (uint32_t q = 0; q < r->n_parts; q++) {
		if (q == p)
			continue;
		char desc[64];
		bool missing = false;
		int rc = check_part(r, q, desc, sizeof desc, &missing);
		if (missing) {
			gone++;
			if (u + 24 < sizeof names)
				u += (size_t)snprintf(names + u, sizeof names - u, ", %u", q);
			else if (u + 5 < sizeof names && names[u - 1] != '.')
				u += (size_t)snprintf(names + u, sizeof names - u, ", ...");
		} else if (rc != RUSK_EIO) {
			there++; /* there (of this shape or another: the check says which) */
		} else {
			return set_err(r, RUSK_EIO, "%s", first); /* no answer: not known */
		}
	}
	int written = 1; /* rusk:{meta}:shape there: a state was written (meta_shape_exists) */
	if (there == 0 && !started) {
		if (meta_shape_exists(r, &written) != RUSK_OK || !written)
			return set_err(r, RUSK_EIO, "%s", first); /* never written, or not known */
	}
	r->state_lost = true;
	if (there == 0)
		return set_err(r, RUSK_EIO,
		               "the rusk state at %s is gone: every partition's (%u) gone %s: lost "
		               "by the cluster (every master restarted empty or failed over "
		               "before its replica had it), or deleted: write the state afresh "
		               "(`rusk agent --init-only --force-init`: what the live agents and "
		               "runs hold is lost with it)",
		               r->url, r->n_parts,
		               started ? "since this process found it there"
		                       : "while " META_SHAPE " says it was written");
	return set_err(r, RUSK_EIO,
	               "the rusk state at %s is incomplete: partition%s %s (%u of %u) gone while "
	               "the others' state is there: lost by the cluster (a master failed over "
	               "before its replica had the writes it had acknowledged, or a node "
	               "restarted empty), or an init that did not finish: write the state "
	               "afresh (`rusk agent --init-only --force-init`: what the live agents and "
	               "runs hold is lost with it)",
	               r->url, gone > 1 ? "s" : "", names, gone, r->n_parts);
}

int rusk_redis_init_mark_(rusk_redis *r, char *who, size_t len)
{
	if (r == NULL || who == NULL || len == 0)
		return RUSK_EINVAL;
	who[0] = '\0';
	const char *av[2] = {"GET", META_INIT};
	size_t al[2] = {3, strlen(META_INIT)};
	rcmd cmd = {2, av, al, -1, 0};
	redisReply *y = NULL;
	int rc = exec_slot(r, rusk_redis_keyslot_(META_INIT, strlen(META_INIT)), &cmd, 1, &y);
	if (rc == RUSK_OK && y->type == REDIS_REPLY_ERROR)
		rc = meta_reply_err(r, "GET", META_INIT, "string", y);
	else if (rc == RUSK_OK && y->type == REDIS_REPLY_STRING)
		snprintf(who, len, "%.*s", (int)(y->len < 160 ? y->len : 160), y->str);
	free_replies(&y, 1);
	return rc;
}

int rusk_redis_init_unfinished_(rusk_redis *r, char *err, size_t errlen)
{
	if (r == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "no connection");
	char who[192];
	int rc = rusk_redis_init_mark_(r, who, sizeof who);
	if (rc == RUSK_OK && who[0] != '\0') {
		r->state_lost = true;
		rc = set_err(
		        r, RUSK_EIO,
		        "the rusk state at %s is not whole: an init (%s) began writing it "
		        "and has not finished: it is still writing, or it stopped half-way "
		        "(a signal, a kill, an outage past its --failover-ms): wait for it, or "
		        "write the state afresh (`rusk agent --init-only`)",
		        r->url, who);
	}
	if (rc != RUSK_OK)
		return rusk_errf(err, errlen, rc, "--backend %s: %s", r->url, r->err);
	return RUSK_OK;
}

int rusk_redis_state_check_(rusk_redis *r, char *err, size_t errlen)
{
	if (r == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "no connection");
	r->state_lost = false;
	for (uint32_t p = 0; p < r->n_parts; p++) {
		char there[64];
		bool missing = false;
		int rc = check_part(r, p, there, sizeof there, &missing);
		if (missing)
			rc = missing_part(r, p, false);
		if (rc == RUSK_ESHAPE) {
			rc = shape_error(r, p, there);
			flags_hint(r);
		}
		if (rc != RUSK_OK)
			return rusk_errf(err, errlen, rc, "--backend %s: %s", r->url, r->err);
	}
	int rc = layout_check(r);
	if (rc == RUSK_ESHAPE)
		flags_hint(r);
	if (rc != RUSK_OK)
		return rusk_errf(err, errlen, rc, "--backend %s: %s", r->url, r->err);
	return RUSK_OK;
}

/* The init's WAIT: how long a shard's replica has to acknowledge the init (init_wait). */
#define INIT_WAIT_MS 2000

/* How many replicas CLUSTER NODES (text, from one node) lists for the master at host:port,
 * whatever their state (a replica down or paused is counted: it is the one a failover would
 * promote); -1 when the master is not listed. */
static int replicas_listed(const char *text, const char *host, int port)
{
	char addr[96], id[64] = "";
	int n = snprintf(addr, sizeof addr, "%s:%d", host, port);
	/* "<id> <ip:port@cport[,hostname]> <flags> <master id|-> ..." one node a line */
	for (const char *l = text; *l != '\0' && id[0] == '\0';) {
		const char *sp = strchr(l, ' '), *eol = strchr(l, '\n');
		if (eol == NULL)
			eol = l + strlen(l);
		if (sp != NULL && sp < eol && (size_t)(sp - l) < sizeof id &&
		    strncmp(sp + 1, addr, (size_t)n) == 0 &&
		    (sp[1 + n] == '@' || sp[1 + n] == ',' || sp[1 + n] == ' '))
			snprintf(id, sizeof id, "%.*s", (int)(sp - l), l);
		l = *eol ? eol + 1 : eol;
	}
	if (id[0] == '\0')
		return -1;
	int count = 0;
	for (const char *l = text; *l != '\0';) {
		const char *eol = strchr(l, '\n');
		if (eol == NULL)
			eol = l + strlen(l);
		char line[512];
		snprintf(line, sizeof line, "%.*s", (int)(eol - l), l);
		char f_id[64], f_addr[256], f_flags[128], f_master[64];
		if (sscanf(line, "%63s %255s %127s %63s", f_id, f_addr, f_flags, f_master) == 4 &&
		    (strstr(f_flags, "slave") != NULL || strstr(f_flags, "replica") != NULL) &&
		    strcmp(f_master, id) == 0)
			count++;
		l = *eol ? eol + 1 : eol;
	}
	return count;
}

/*
 * After the init's writes: WAIT 1 INIT_WAIT_MS on each master that took them (wrote[i]: its
 * connection then, nodes[].conns; 0: it took none) and that has a replica (CLUSTER NODES),
 * all sent before any answer is read (a replica that does not answer costs INIT_WAIT_MS
 * once, not per shard). A master whose replica has not acknowledged the writes (WAIT
 * answered 0, no answer, or its connection changed since it wrote: what it acknowledged is
 * not known) is named in r->init_warn: a failover there before its replica has them loses
 * them, and a master that stalls past the cluster's node timeout is failed over so (the
 * lost state: docs/redis.md, Faults). A cluster without replicas waits for nothing.
 */
static void init_wait(rusk_redis *r, const uint32_t *wrote)
{
	r->init_warn[0] = '\0';
	const char *text = NULL;
	redisReply *nodes = NULL;
	for (int i = 0; i < r->n_nodes && nodes == NULL; i++) {
		redisContext *c = wrote[i] != 0 ? r->nodes[i].ctx : NULL;
		if (c == NULL)
			continue;
		nodes = command(r, c, "CLUSTER NODES");
		if (nodes == NULL)
			node_lost(r, i);
		else if (nodes->type != REDIS_REPLY_STRING) {
			freeReplyObject(nodes);
			nodes = NULL;
		}
	}
	text = nodes != NULL ? nodes->str : "";
	bool sent[MAX_NODES] = {false}, unacked[MAX_NODES] = {false};
	int answered[MAX_NODES] = {0};
	for (int i = 0; i < r->n_nodes; i++) {
		if (wrote[i] == 0)
			continue;
		int listed = replicas_listed(text, r->nodes[i].host, r->nodes[i].port);
		if (listed == 0)
			continue; /* no replica: nothing to wait for */
		redisContext *c = r->nodes[i].ctx;
		if (listed < 0 || c == NULL || r->nodes[i].conns != wrote[i]) {
			unacked[i] = true; /* not known: no CLUSTER NODES, or another connection */
			answered[i] = -1;
			continue;
		}
		redisAppendCommand(c, "WAIT 1 %d", INIT_WAIT_MS);
		sent[i] = true;
		for (int done = 0; !done;) /* on the wire before any answer is awaited */
			if (redisBufferWrite(c, &done) != REDIS_OK)
				break; /* its read below fails */
	}
	for (int i = 0; i < r->n_nodes; i++) {
		if (!sent[i])
			continue;
		redisContext *c = r->nodes[i].ctx;
		void *x = NULL;
		/* the read waits out WAIT's timeout, and more (within the bounds: read_ms) */
		if (reply_within(r, c, INIT_WAIT_MS + 2000, &x) != REDIS_OK || x == NULL) {
			node_lost(r, i);
			unacked[i] = true;
			answered[i] = -1;
			continue;
		}
		redisReply *y = x;
		answered[i] = y->type == REDIS_REPLY_INTEGER ? (int)y->integer : -1;
		unacked[i] = answered[i] < 1;
		freeReplyObject(y);
	}
	if (nodes != NULL)
		freeReplyObject(nodes);
	char list[512] = "";
	size_t u = 0, cap = sizeof list;
	for (int i = 0; i < r->n_nodes && u + 64 < cap; i++) {
		if (!unacked[i])
			continue;
		char parts[160] = "";
		size_t v = 0;
		int named = 0;
		for (uint32_t p = 0; p < r->n_parts && v + 24 < sizeof parts; p++)
			if (r->slot_node[rusk_redis_slot_of_(p)] == i)
				v += (size_t)snprintf(parts + v, sizeof parts - v, "%s%u",
				                      named++ ? ", " : "", p);
		char why[64];
		if (answered[i] < 0)
			snprintf(why, sizeof why, "no answer to WAIT");
		else
			snprintf(why, sizeof why, "WAIT 1 %d answered %d", INIT_WAIT_MS,
			         answered[i]);
		u += (size_t)snprintf(list + u, cap - u, "%s%s:%d (%s%s; %s)", u ? ", " : "",
		                      r->nodes[i].host, r->nodes[i].port,
		                      named == 0  ? "rusk:{meta}"
		                      : named > 1 ? "partitions "
		                                  : "partition ",
		                      parts, why);
		if (u >= cap)
			u = cap - 1;
	}
	if (u > 0)
		snprintf(r->init_warn, sizeof r->init_warn,
		         "the state written is not yet on a replica of %s: a failover of that "
		         "master before its replica has it loses it (a later start then finds the "
		         "state incomplete, lost by the cluster)",
		         list);
}

/* Who writes the state, and since when (META_INIT's value): "pid P on HOST since
 * YYYY-MM-DD HH:MM:SS UTC". */
static void init_who(char *buf, size_t len)
{
	char host[64] = "?";
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	host[sizeof host - 1] = '\0';
	time_t t = time(NULL);
	struct tm tm;
	char when[32] = "?";
	if (gmtime_r(&t, &tm) != NULL)
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(buf, len, "pid %ld on %s since %s", (long)getpid(), host, when);
}

int rusk_redis_state_write_(rusk_redis *r, char *err, size_t errlen)
{
	if (r == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "no connection");
	/* The epoch first: a process that checks it (rusk agent, at each lease renewal) learns
	 * of the new state as soon as the first partition is written. */
	totals t = shape_totals(r);
	char desc[128];
	snprintf(desc, sizeof desc,
	         "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%016" PRIx64, t.parts,
	         t.rus, t.machines, t.mem, t.gpus, r->layout);
	const char *a0[2] = {"INCR", META_EPOCH}, *a1[3] = {"SET", META_SHAPE, desc};
	size_t l0[2] = {4, strlen(META_EPOCH)}, l1[3] = {3, strlen(META_SHAPE), strlen(desc)};
	/* the flags it was written with (none: the key deleted, no stale ones compared) */
	const char *a2[3] = {r->flags[0] ? "SET" : "DEL", META_FLAGS, r->flags};
	size_t l2[3] = {3, strlen(META_FLAGS), strlen(r->flags)};
	/* the init under way (META_INIT): deleted after the last partition */
	char who[192];
	init_who(who, sizeof who);
	const char *a3[3] = {"SET", META_INIT, who};
	size_t l3[3] = {3, strlen(META_INIT), strlen(who)};
	rcmd cmds[4] = {{3, a3, l3, -1, 0},
	                {2, a0, l0, -1, 0},
	                {3, a1, l1, -1, 0},
	                {r->flags[0] ? 3 : 2, a2, l2, -1, 0}};
	const char *keys[3] = {META_INIT, META_EPOCH, META_SHAPE};
	redisReply *y[4] = {NULL, NULL, NULL, NULL};
	/* The start's bound (rusk_redis_set_bound_) is for finding the cluster: the writes to
	 * one that answers are work, not a wait, and take what they take (an outage among them
	 * is waited out up to failover_ms, as any call's). What was left of the bound is left
	 * after them. Before, a big init under a small --failover-ms (1M machines, 1 s) was cut
	 * half-way, exit 1, the state half-written (the tenth review, D2). */
	bool bounded = r->bounded && r->deadline != 0;
	uint64_t t0 = now_ns(), kept = bounded && r->deadline > t0 ? r->deadline - t0 : 0;
	if (bounded)
		rusk_redis_set_bound_(r, 0);
	int rc = exec_slot(r, rusk_redis_keyslot_(META_EPOCH, strlen(META_EPOCH)), cmds, 4, y);
	for (int k = 0; rc == RUSK_OK && k < 3; k++)
		if (y[k]->type == REDIS_REPLY_ERROR)
			rc = meta_reply_err(r, k == 1 ? "INCR" : "SET", keys[k], "string", y[k]);
	free_replies(y, 4);
	/* which node took the writes, on which of its connections (init_wait) */
	uint32_t wrote[MAX_NODES] = {0};
	int16_t ni = r->slot_node[rusk_redis_keyslot_(META_EPOCH, strlen(META_EPOCH))];
	if (rc == RUSK_OK && ni >= 0)
		wrote[ni] = r->nodes[ni].conns;
	for (uint32_t p = 0; rc == RUSK_OK && p < r->n_parts; p++) {
		if (stopping(r)) { /* heard between partitions, not only in a wait */
			rc = set_err(r, RUSK_EIO, "stopped after %u of %u partitions", p,
			             r->n_parts);
			break;
		}
		rc = init_part(r, p);
		ni = r->slot_node[rusk_redis_slot_of_(p)];
		if (rc == RUSK_OK && ni >= 0)
			wrote[ni] = r->nodes[ni].conns;
	}
	bool whole = rc == RUSK_OK;
	if (rc == RUSK_OK) {
		/* Whole: no longer under way. The mark deleted only while it is this init's
		 * (another init started meanwhile, with --force-init, set its own: it is that
		 * one's to delete; before, the first to end deleted the other's). */
		static const char lua_init_done[] =
		        "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
		        "  return redis.call('DEL', KEYS[1])\n"
		        "end\n"
		        "return 0\n";
		const char *k4[1] = {META_INIT}, *a4[1] = {who};
		redisReply *d = NULL;
		rc = meta_eval(r, lua_init_done, 1, k4, 1, a4, &d);
		free_replies(&d, 1);
		ni = r->slot_node[rusk_redis_keyslot_(META_INIT, strlen(META_INIT))];
		if (rc == RUSK_OK && ni >= 0)
			wrote[ni] = r->nodes[ni].conns;
	}
	r->init_warn[0] = '\0';
	if (rc == RUSK_OK)
		init_wait(r, wrote);
	if (bounded)
		rusk_redis_set_bound_(r, now_ns() + kept);
	if (rc != RUSK_OK)
		return rusk_errf(err, errlen, rc, "--backend %s: %s (%s)", r->url, r->err,
		                 whole ? "every partition is written, but the mark of the init "
		                         "under way (" META_INIT ") may be left: a start that "
		                         "checks the state refuses it while it is there"
		                       : "the state is half-written: a start that checks it "
		                         "refuses it until an init writes it whole");
	return RUSK_OK;
}

/* Slot ranges no node serves, as "a-b, c-d" (empty: none). */
static void missing_slots(const rusk_redis *r, char *buf, size_t len)
{
	buf[0] = '\0';
	size_t used = 0;
	for (int s = 0; s < RUSK_REDIS_SLOTS && used + 24 < len;) {
		if (r->slot_node[s] >= 0) {
			s++;
			continue;
		}
		int e = s;
		while (e + 1 < RUSK_REDIS_SLOTS && r->slot_node[e + 1] < 0)
			e++;
		used += (size_t)snprintf(buf + used, len - used, "%s%d-%d", used ? ", " : "", s, e);
		s = e + 1;
	}
}

void rusk_redis_close_(rusk_redis *r)
{
	if (r == NULL)
		return;
	for (int i = 0; i < r->n_nodes; i++)
		drop_ctx(&r->nodes[i]);
	free(r->p_first_ru);
	free(r->p_n_rus);
	free(r->p_first_m);
	free(r->p_n_m);
	free(r->m_first_ru);
	free(r->m_n_rus);
	free(r->m_mem);
	free(r->m_gpus);
	free(r->keys);
	free(r);
}

int rusk_redis_open_(const char *url, const rusk_redis_shape *shape, int init, rusk_redis **out,
                     char *err, size_t errlen)
{
	return rusk_redis_open_within_(url, shape, init, NULL, NULL, 0, out, err, errlen);
}

/* The least share of the start's bound a seed gets before the next seed is asked
 * (rusk_redis_open_within_): a healthy seed answers CLUSTER SLOTS within a few ms, also on a
 * loaded machine or a link of tens of ms. */
#define SEED_MIN_MS 250

/* Whether r's bound (rusk_redis_set_bound_) is over. */
static bool bound_over(const rusk_redis *r)
{
	return r->bounded && r->deadline != 0 && now_ns() >= r->deadline;
}

int rusk_redis_open_within_(const char *url, const rusk_redis_shape *shape, int init,
                            int (*stop)(void *), void *stop_arg, uint64_t bound_ns,
                            rusk_redis **out, char *err, size_t errlen)
{
	if (url == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "no URL");
	int rc = check_shape(shape, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	rusk_redis *r = calloc(1, sizeof *r);
	if (r == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	r->failover_ms = 30000;
	/* Every read and connect of the open (and of the calls after it, until the caller
	 * lifts the bound) within bound_ns, and a stop heard while one waits (reply_within):
	 * with a seed paused, each seed's CLUSTER SLOTS, CLUSTER MYID and SCRIPT LOAD waited 2 s
	 * past the start's --failover-ms, and a signal was heard only after them. */
	rusk_redis_set_stop_(r, stop, stop_arg);
	rusk_redis_set_bound_(r, bound_ns);
	rusk_redis_mask_url_(url, r->url, sizeof r->url);
	char bare[512];
	rc = rusk_redis_split_auth_(url, r->user, sizeof r->user, r->pass, sizeof r->pass, bare,
	                            sizeof bare, r->err, sizeof r->err);
	if (rc == RUSK_OK)
		rc = rusk_redis_parse_url_(bare, r->seed_host, r->seed_port, &r->n_seeds, r->err,
		                           sizeof r->err);
	if (rc != RUSK_OK) {
		rc = rusk_errf(err, errlen, rc, "--backend %s", r->err);
		goto fail;
	}
	if (copy_shape(r, shape) != RUSK_OK) {
		rc = rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
		goto fail;
	}
	/* The first seed that answers CLUSTER SLOTS gives the map. */
	rc = RUSK_EIO;
	int k0 = 0;
	r->timed_out = false;
	uint64_t bound_end = r->bounded ? r->deadline : 0;
	for (; k0 < r->n_seeds; k0++) {
		/* the first seed always asked; the others not past the bound or a stop */
		if (k0 > 0 && (bound_over(r) || stopping(r)))
			break;
		/* Under a bound, each seed's connect and CLUSTER SLOTS get their share of what is
		 * left of it (SEED_MIN_MS at least), the seeds after it theirs: a first seed that
		 * does not answer (paused) spent a bound under about 2 s whole, and the next seed
		 * was never asked (the tenth review, D3). */
		if (bound_end != 0 && k0 + 1 < r->n_seeds) {
			uint64_t now = now_ns(), left = bound_end > now ? bound_end - now : 0;
			uint64_t share = left / (uint64_t)(r->n_seeds - k0);
			if (share < (uint64_t)SEED_MIN_MS * 1000000u)
				share = (uint64_t)SEED_MIN_MS * 1000000u;
			r->deadline = now + share < bound_end ? now + share : bound_end;
		}
		int i = find_node(r, r->seed_host[k0], r->seed_port[k0]);
		rc = map_from(r, i);
		if (bound_end != 0)
			r->deadline = bound_end;
		if (rc == RUSK_OK || rc == RUSK_EPARSE) /* EPARSE: not a cluster node, say so */
			break;
	}
	if (rc == RUSK_EIO && r->timed_out) {
		/* No seed gave the map and one at least timed out (paused, overloaded): an
		 * outage, the caller's to wait out (rusk_state_open_wait_). Before, exit 2 as
		 * bad input: "127.0.0.1:P: Resource temporarily unavailable". */
		rc = rusk_errf(err, errlen, RUSK_EAGAIN, "--backend %s: %s", r->url, r->err);
		goto fail;
	}
	if (rc == RUSK_OK)
		rc = check_seeds(r, k0);
	if (rc != RUSK_OK) {
		rc = rusk_errf(err, errlen, RUSK_EIO, "--backend %s: %s", r->url, r->err);
		goto fail;
	}
	char miss[256];
	missing_slots(r, miss, sizeof miss);
	if (miss[0] != '\0') {
		rc = rusk_errf(err, errlen, RUSK_EIO,
		               "--backend %s: the cluster serves no node for slots %s (CLUSTER "
		               "SLOTS); every slot must be served (redis-cli --cluster fix)",
		               r->url, miss);
		goto fail;
	}
	/* The scripts on every master that answers. One the map names that cannot be reached
	 * (a master killed, its replica not promoted yet: CLUSTER SLOTS names it until then)
	 * is an outage, not bad input: the seed answered, so the calls that need its slots
	 * wait it out as any outage (exec_slot: failover_ms from now, the deadline, the stop
	 * hook) and load the scripts on the promoted replica (NOSCRIPT). Before, the start
	 * failed (`cannot connect`, read as bad input). A refused password, a node that
	 * answers the load with an error, or no node that takes the scripts fails here. */
	bool loaded = false, refused = false;
	for (int i = 0; i < r->n_nodes && !refused && !stopping(r); i++) {
		bool master = false;
		for (int s = 0; s < RUSK_REDIS_SLOTS && !master; s++)
			master = r->slot_node[s] == i;
		if (!master)
			continue;
		int lrc = load_scripts(r, i);
		if (lrc == RUSK_OK)
			loaded = true;
		else if (r->auth_failed || lrc == RUSK_EPARSE)
			refused = true; /* it answered, with an error */
		else if (r->outage_t0 == 0)
			r->outage_t0 = now_ns(); /* no answer: its calls' bound runs from here */
	}
	/* No master answers: the seed that gave the map (a replica) takes them. */
	if (!loaded && !refused) {
		int lrc = load_scripts(r, find_node(r, r->seed_host[k0], r->seed_port[k0]));
		loaded = lrc == RUSK_OK;
		refused = lrc == RUSK_EPARSE;
	}
	if (!loaded && !refused && r->timed_out) {
		/* no node answered the load in time (a slow link, a short bound, stuck
		 * masters): an outage, waited out as a seed's (rusk_state_open_wait_); before,
		 * exit 2 as bad input, "SCRIPT LOAD: connection lost" (the eleventh review) */
		rc = rusk_errf(err, errlen, RUSK_EAGAIN, "--backend %s: %s", r->url, r->err);
		goto fail;
	}
	if (!loaded || refused) {
		rc = rusk_errf(err, errlen, RUSK_EIO, "--backend %s: %s", r->url, r->err);
		goto fail;
	}
	if (init == RUSK_REDIS_INIT)
		rc = rusk_redis_state_write_(r, err, errlen);
	else if (init == RUSK_REDIS_CHECK) {
		rc = rusk_redis_init_unfinished_(r, err, errlen);
		if (rc == RUSK_OK)
			rc = rusk_redis_state_check_(r, err, errlen);
	}
	if (rc != RUSK_OK)
		goto fail;
	if (stopping(r)) { /* a read it made was cut short by the stop */
		rc = rusk_errf(err, errlen, RUSK_ESTOPPED, "--backend %s: %s", r->url,
		               r->err[0] ? r->err : "stopped");
		goto fail;
	}
	r->err[0] = '\0';
	*out = r;
	return RUSK_OK;
fail:
	/* What failed for want of an answer, once the stop hook said stop: stopped. */
	if ((rc == RUSK_EIO || rc == RUSK_EAGAIN) && stopping(r))
		rc = RUSK_ESTOPPED;
	rusk_redis_close_(r);
	return rc;
}

void rusk_redis_set_wait_(rusk_redis *r, int replicas, int timeout_ms)
{
	if (r == NULL)
		return;
	r->wait_replicas = replicas > 0 ? replicas : 0;
	r->wait_ms = timeout_ms > 0 ? timeout_ms : 0;
	for (int i = 0; i < r->n_nodes; i++)
		drop_ctx(&r->nodes[i]); /* read timeouts follow wait_ms */
}

int rusk_redis_min_replicas_(rusk_redis *r)
{
	if (r == NULL)
		return -1;
	/* Each master that serves a slot, asked once: ROLE answers "master", its offset and
	 * one entry per connected replica. (CLUSTER SLOTS lists replicas only once gossip has
	 * told the node about them, seconds after they are linked.) */
	bool asked[MAX_NODES] = {false};
	int fewest = -1;
	for (int s = 0; s < RUSK_REDIS_SLOTS; s++) {
		int ni = r->slot_node[s];
		if (ni < 0 || asked[ni])
			continue;
		asked[ni] = true;
		redisContext *c = node_ctx(r, ni);
		redisReply *y = c != NULL ? command(r, c, "ROLE") : NULL;
		if (y == NULL) {
			if (c != NULL)
				drop_ctx(&r->nodes[ni]);
			return -1;
		}
		int n = -1;
		if (y->type == REDIS_REPLY_ARRAY && y->elements >= 3 &&
		    y->element[0]->type == REDIS_REPLY_STRING &&
		    strcmp(y->element[0]->str, "master") == 0 &&
		    y->element[2]->type == REDIS_REPLY_ARRAY)
			n = (int)y->element[2]->elements;
		freeReplyObject(y);
		if (n < 0)
			return -1;
		if (fewest < 0 || n < fewest)
			fewest = n;
	}
	return fewest;
}

void rusk_redis_set_failover_ms_(rusk_redis *r, int ms)
{
	if (r != NULL)
		r->failover_ms = ms > 0 ? ms : 1;
}

void rusk_redis_set_unavailable_ms_(rusk_redis *r, int ms)
{
	if (r == NULL)
		return;
	r->unavail_ms = ms > 0 ? ms : 0;
	mark_serving(r);
	for (int i = 0; i < r->n_nodes; i++) {
		drop_ctx(&r->nodes[i]); /* read timeouts follow unavail_ms */
		r->nodes[i].down_until = 0;
		r->nodes[i].down_ms = 0;
	}
}

int rusk_redis_part_unavailable_(const rusk_redis *r, uint32_t p)
{
	if (r == NULL || r->unavail_ms == 0 || p >= r->n_parts)
		return 0;
	int ni = r->slot_node[rusk_redis_slot_of_(p)];
	return ni >= 0 && r->nodes[ni].down_until != 0 && others_up(r, ni);
}

void rusk_redis_set_deadline_(rusk_redis *r, uint64_t deadline_ns)
{
	if (r == NULL)
		return;
	r->deadline = deadline_ns;
	r->bounded = false;
}

void rusk_redis_set_bound_(rusk_redis *r, uint64_t bound_ns)
{
	if (r == NULL)
		return;
	r->deadline = bound_ns;
	r->bounded = bound_ns != 0;
}

void rusk_redis_set_stop_(rusk_redis *r, int (*stop)(void *), void *arg)
{
	if (r == NULL)
		return;
	r->stop = stop;
	r->stop_arg = arg;
}

void rusk_redis_set_waiting_(rusk_redis *r, void (*waiting)(void *), void *arg)
{
	if (r == NULL)
		return;
	r->waiting = waiting;
	r->waiting_arg = arg;
}

int rusk_redis_meta_unavailable_(const rusk_redis *r)
{
	if (r == NULL || r->unavail_ms == 0)
		return 0;
	int ni = r->slot_node[rusk_redis_keyslot_(META_EPOCH, strlen(META_EPOCH))];
	return ni >= 0 && r->nodes[ni].down_until != 0;
}

void rusk_redis_meta_retry_now_(rusk_redis *r)
{
	if (r == NULL || r->unavail_ms == 0)
		return;
	int ni = r->slot_node[rusk_redis_keyslot_(META_EPOCH, strlen(META_EPOCH))];
	uint64_t now = now_ns();
	/* down_until stays non-zero (marked): slot_unavailable probes once it is past */
	if (ni >= 0 && r->nodes[ni].down_until > now)
		r->nodes[ni].down_until = now;
}

rusk_redis_stats rusk_redis_stats_(const rusk_redis *r)
{
	rusk_redis_stats s = {0};
	if (r == NULL)
		return s;
	/* Relaxed loads: partner of stat_add (the connection's thread may be writing). */
	const uint64_t *src[] = {&r->st.round_trips, &r->st.commands, &r->st.redirects,
	                         &r->st.reconnects,  &r->st.resent,   &r->st.wait_short,
	                         &r->st.noscript,    &r->st.outage_ns};
	uint64_t *dst[] = {&s.round_trips, &s.commands,   &s.redirects, &s.reconnects,
	                   &s.resent,      &s.wait_short, &s.noscript,  &s.outage_ns};
	for (size_t i = 0; i < sizeof src / sizeof *src; i++)
		*dst[i] = rusk_load64(src[i], RUSK_RELAXED);
	return s;
}

const char *rusk_redis_auth_failed_(const rusk_redis *r)
{
	return r != NULL && r->auth_failed ? r->auth_err : NULL;
}

bool rusk_redis_state_lost_(const rusk_redis *r)
{
	return r != NULL && r->state_lost;
}

const char *rusk_redis_init_unreplicated_(const rusk_redis *r)
{
	return r != NULL && r->init_warn[0] != '\0' ? r->init_warn : NULL;
}

void rusk_redis_outage_say_(double secs, char *err, size_t errlen)
{
	size_t u = err != NULL ? strnlen(err, errlen) : errlen;
	if (u + 1 < errlen)
		snprintf(err + u, errlen - u,
		         " (the cluster did not answer for %.1f s: unreachable or failing over, "
		         "a master down and its replica not promoted yet? An outage, not bad "
		         "input: start again once every slot is served)",
		         secs);
}

int rusk_redis_outage_(const rusk_redis *r, char *err, size_t errlen)
{
	if (r != NULL && r->state_lost)
		return 1; /* its message says what was lost (missing_part) */
	if (r == NULL || r->outage_t0 == 0)
		return 0;
	/* Under a bound (the start's: failover_ms from its first try), from that first try:
	 * its last call's outage alone said 0.2 s of a start that waited 5 s. */
	uint64_t t0 = r->outage_t0, fo = (uint64_t)r->failover_ms * 1000000u;
	if (r->bounded && r->deadline > fo && r->deadline - fo < t0)
		t0 = r->deadline - fo;
	double secs = (double)(now_ns() - t0) / 1e9;
	/* The masters silent since their last answer, and whether another one answered
	 * since then: then it was not the cluster that did not answer, but those (the ninth
	 * review: one master of three paused, "the cluster did not answer for 30.2 s"). */
	char names[160] = "";
	size_t u = 0;
	int silent = 0;
	uint64_t since = UINT64_MAX, others = 0;
	for (int j = 0; j < r->n_nodes; j++) {
		const node *n = &r->nodes[j];
		if (!n->serves || n->fail_ns <= n->ok_ns)
			continue;
		since = n->ok_ns < since ? n->ok_ns : since;
		if (u + 1 < sizeof names)
			u += (size_t)snprintf(names + u, sizeof names - u, "%s%s:%d",
			                      silent > 0 ? ", " : "", n->host, n->port);
		silent++;
	}
	for (int j = 0; j < r->n_nodes && silent > 0; j++) {
		const node *n = &r->nodes[j];
		if (n->serves && n->fail_ns <= n->ok_ns && n->ok_ns > since)
			others = n->ok_ns;
	}
	size_t e = err != NULL ? strnlen(err, errlen) : errlen;
	if (silent == 0 || others == 0 || e + 1 >= errlen) {
		rusk_redis_outage_say_(secs, err, errlen);
		return 1;
	}
	snprintf(err + e, errlen - e,
	         " (master%s %s did not answer for %.1f s while the others did: stopped, hung, "
	         "or failing over, a replica not promoted yet? An outage, not bad input: start "
	         "again once every slot is served)",
	         silent > 1 ? "s" : "", names, secs);
	return 1;
}

const char *rusk_redis_last_error_(const rusk_redis *r)
{
	return r != NULL ? r->err : "no connection";
}
