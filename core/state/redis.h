/* SPDX-License-Identifier: MIT */
/*
 * The master state on Redis Cluster (issue 30; ParSync §7's resource managers): a client of
 * hiredis 0.14 that routes by key slot itself, and the backend of kernel/backend.h over it.
 *
 * Layout. Partition p's keys all carry the hash tag {pN}, so they live in one hash slot and
 * one shard: rusk:{pN}:own (hash: local RU -> owner task), :gen (local RU -> generation),
 * :free (bitmap, bit i = local RU i free), :mem (local machine -> free MiB), :gpu ("m.k" ->
 * free milli-GPU of GPU k), :rec (anchor RU -> the shares it carries), :ver (version, +1
 * per change), :mach (local machine -> "first,n,mem,gpus"; field "part" -> the partition's
 * shape, checked at connect). A snapshot is one round trip (GET :free, GET :ver pipelined),
 * and a sync step's snapshots of many partitions one pipeline per node (snapshots op);
 * a commit or release is a Lua script that checks every RU's owner and generation and the
 * machine's memory and GPUs before it writes anything (a script's writes are not rolled
 * back on error, so nothing after the checks can fail), the rules of ru.c.
 *
 * Routing. hiredis 0.14 has no cluster support: CRC16 key slots (the cluster spec's
 * XMODEM variant), the slot map from CLUSTER SLOTS, and MOVED / ASK redirection are here
 * (redis_slot.c, unit-tested against the spec's vectors). A broken connection (a master
 * killed) refreshes the map from any reachable node until the slot is served again
 * (bounded: failover_ms from when the connection lost the cluster, a caller's deadline,
 * a stop hook); the batch in flight is then sent again with the scripts'
 * "again" flag: a commit whose RUs the task already holds answers its leases, a release
 * that finds the next generation answers OK, so an unknown outcome never doubles a grant.
 *
 * Meta keys, all with the hash tag {meta} (one slot, one shard): rusk:{meta}:alive:AGENT
 * (agent AGENT's lease: the token of the process that holds the id, with an expiry; tells a
 * recount which agents are dead, and a second process with the same id that the id is
 * taken), rusk:{meta}:runs (the run namespaces' counter), rusk:{meta}:live-runs (a sorted
 * set: the namespaces of the `rusk run`s alive, scored by their lease's expiry),
 * rusk:{meta}:epoch (+1 at every write of the empty state, so that a process can tell the
 * state was written afresh under it), rusk:{meta}:shape (the totals of the shape the
 * state was written for: "partitions,RUs,machines,MiB,GPUs"), rusk:{meta}:agents (a set:
 * the agent ids that took a lease and did not drop it; with the expired entries of
 * live-runs, the dead processes whose RUs rusk_redis_reclaim_dead_ releases) and
 * rusk:{meta}:reclaim (that reclaim's lock: one process reclaims at a time).
 *
 * Threads: a rusk_redis is used by one thread at a time (hiredis contexts are not
 * thread-safe); open one per agent thread or process.
 */
#ifndef RUSK_STATE_REDIS_H
#define RUSK_STATE_REDIS_H

#include <stddef.h>
#include <stdint.h>

#include "kernel/backend.h"

#define RUSK_REDIS_SLOTS     16384
#define RUSK_REDIS_MAX_SEEDS 16

typedef struct rusk_redis rusk_redis;

/* The shape the state is laid out for (filled from a rusk_cluster by the caller; arrays
 * indexed by partition and by machine, global numbering, borrowed for the call). */
typedef struct rusk_redis_shape {
	uint32_t n_parts, n_machines;
	const uint32_t *part_first_ru, *part_n_rus, *part_first_machine, *part_n_machines;
	const uint32_t *m_first_ru, *m_n_rus, *m_mem_mib, *m_gpus;
	const uint32_t *m_platform; /* each machine's platform (GPU model); NULL: all 0 */
} rusk_redis_shape;

/* Counters of one connection (written by its thread alone; rusk_redis_stats_ reads them). */
typedef struct rusk_redis_stats {
	uint64_t round_trips; /* pipelines sent and answered */
	uint64_t commands;    /* commands in them */
	uint64_t redirects;   /* MOVED and ASK answers followed */
	uint64_t reconnects;  /* slot-map refreshes after a broken connection */
	uint64_t resent;      /* batches sent again after an unknown outcome */
	uint64_t wait_short;  /* WAIT answers with fewer replicas than asked */
	uint64_t noscript;    /* EVALSHA answered NOSCRIPT (sent again as EVAL) */
	uint64_t outage_ns;   /* time spent waiting for a slot to be served again */
} rusk_redis_stats;

/*
 * rusk_redis_crc16_ / rusk_redis_keyslot_: the cluster spec's CRC16 (XMODEM) and key slot
 * (CRC16 of the hash tag, the part between the first '{' and the next '}' when not empty,
 * else of the whole key, mod 16384). Pure; any thread.
 */
uint16_t rusk_redis_crc16_(const char *buf, size_t len);
uint16_t rusk_redis_keyslot_(const char *key, size_t len);

/*
 * rusk_redis_parse_redirect_: parses "MOVED 3999 127.0.0.1:6381" or "ASK 3999 host:port".
 * RUSK_OK and *ask, *slot, host (NUL-terminated, truncated to hostlen: RUSK_EPARSE if it
 * does not fit), *port; RUSK_EPARSE for anything else (NULL arguments: RUSK_EINVAL).
 */
int rusk_redis_parse_redirect_(const char *msg, int *ask, uint16_t *slot, char *host,
                               size_t hostlen, int *port);

/*
 * rusk_redis_parse_url_: "redis://HOST:PORT[,HOST:PORT...]" into hosts[i] (64 bytes each)
 * and ports[i], at most RUSK_REDIS_MAX_SEEDS. RUSK_OK and *n, or RUSK_EINVAL with a message
 * naming the URL in err. Pure; any thread.
 */
int rusk_redis_parse_url_(const char *url, char (*hosts)[64], int *ports, int *n, char *err,
                          size_t errlen);

/*
 * rusk_redis_split_auth_: "redis://[user:]password@HOST:PORT[,...]" into user and pass
 * (empty when not given) and rest, the URL without them ("redis://HOST:PORT[,...]"); a URL
 * without '@' is copied as is. RUSK_OK, or RUSK_EINVAL (an empty password, or a part that
 * does not fit its buffer) with a message in err that never holds the password. Pure.
 */
int rusk_redis_split_auth_(const char *url, char *user, size_t userlen, char *pass, size_t passlen,
                           char *rest, size_t restlen, char *err, size_t errlen);

/*
 * rusk_redis_mask_url_: url with its password (if any) written as "***", into out
 * (truncated to outlen): what every message and report prints. Pure; out on return.
 */
const char *rusk_redis_mask_url_(const char *url, char *out, size_t outlen);

/* What rusk_redis_open_ does with the state once connected (its `init` argument). */
enum {
	RUSK_REDIS_CHECK = 0,   /* check that the state is there with this shape */
	RUSK_REDIS_INIT = 1,    /* write the empty state (rusk_redis_state_write_) */
	RUSK_REDIS_CONNECT = 2, /* neither: the caller checks or writes it later, after checks
	                         * of its own (replicas for WAIT, live agents and runs) */
};

/*
 * rusk_redis_open_: connects to the cluster of url for the given shape. Checks that the
 * seeds answer, that they are cluster nodes of one cluster (each seed's CLUSTER MYID among
 * the first answering seed's CLUSTER NODES), that every slot is served (CLUSTER SLOTS),
 * and loads the scripts on every master that answers: a master the map names that cannot
 * be reached (killed, its replica not promoted yet) is an outage, not a failure here: r
 * starts in it (rusk_redis_outage_), and the calls that need its slots wait it out as any
 * outage (rusk_redis_set_failover_ms_). Then, per init (the enum above): writes the empty
 * state of every partition (replacing any rusk state there), checks that each partition's
 * state is there and has the shape (rusk_redis_state_check_), or leaves the state alone.
 * Returns RUSK_OK and *out, or RUSK_EINVAL (bad URL or shape), RUSK_ESHAPE (the state is
 * of another shape), RUSK_EAGAIN (no seed gave the map and one at least timed out: it
 * accepted the connection and did not answer, or the connect timed out -- a paused or
 * failing node, an outage the caller may wait out: rusk_state_open_wait_), RUSK_EIO (no
 * seed answers otherwise, e.g. nothing listens there; not a cluster; seeds of two
 * clusters; slots missing; state absent) with a one-line message naming the address or key in err;
 * nothing is written on failure before the checks pass. Any thread; the caller owns *out
 * (rusk_redis_close_).
 */
int rusk_redis_open_(const char *url, const rusk_redis_shape *shape, int init, rusk_redis **out,
                     char *err, size_t errlen);
/*
 * rusk_redis_open_within_: rusk_redis_open_, bounded: with bound_ns non-zero (CLOCK_MONOTONIC
 * ns) no read or connect it makes waits past bound_ns (MIN 100 ms each: the first seed is
 * always asked), nor does it ask another seed past it; with stop non-NULL, stop(stop_arg) is
 * asked while each read waits (every 50 ms): a stop cuts the wait short (250 ms), and the
 * open fails with RUSK_ESTOPPED (err names the last node that did not answer). On success
 * *out keeps both (rusk_redis_set_stop_, rusk_redis_set_bound_): the caller's calls that
 * follow (its checks) are bounded by the same bound until it lifts it
 * (rusk_redis_set_bound_(r, 0)). Else as rusk_redis_open_. Any thread.
 */
int rusk_redis_open_within_(const char *url, const rusk_redis_shape *shape, int init,
                            int (*stop)(void *), void *stop_arg, uint64_t bound_ns,
                            rusk_redis **out, char *err, size_t errlen);

/*
 * rusk_redis_state_write_: writes the empty state of r's shape: rusk:{meta}:init (the mark
 * of an init under way: this process, since when), INCR rusk:{meta}:epoch and the shape's
 * totals first (one round trip to the {meta} shard), then every partition (one round trip
 * each, replacing what was there), then the mark deleted: an init stopped before leaves it,
 * and rusk_redis_state_check_ refuses the state. Not under the start's bound
 * (rusk_redis_set_bound_: what was left of it is left after the writes); an outage among
 * the writes is waited out up to failover_ms. It checks nothing: callers look for
 * live agents and runs first (rusk_redis_live_agents_, rusk_redis_live_runs_). Then WAIT 1
 * (2 s at most, all shards at once) on each master that took writes and has a replica
 * (CLUSTER NODES): one whose replica did not acknowledge them is named by
 * rusk_redis_init_unreplicated_ (the state is written; a failover there before the replica
 * has it loses it). RUSK_OK, RUSK_EIO / RUSK_ENOMEM with a message naming the key in err.
 * Owner thread.
 */
int rusk_redis_state_write_(rusk_redis *r, char *err, size_t errlen);

/* rusk_redis_state_lost_: whether r found some partitions' state gone while others' is there
 * (rusk_redis_state_check_), or after the start a partition's state gone (a snapshot's :free
 * and its :mach absent, or a write script's key so: every partition's gone counts too): lost
 * by the cluster, the message (rusk_redis_last_error_, the call's err) names the partitions.
 * The calls failed with RUSK_EIO; an outage's exit status (1), not bad input. Owner thread. */
bool rusk_redis_state_lost_(const rusk_redis *r);

/* rusk_redis_init_unreplicated_: NULL, or after a rusk_redis_state_write_ whose WAIT found
 * masters whose replica had not acknowledged the init, a message naming them (host:port),
 * their partitions and WAIT's answer: for the caller to print as a warning. Owner thread. */
const char *rusk_redis_init_unreplicated_(const rusk_redis *r);

/*
 * rusk_redis_state_check_: checks that every partition's state is there with r's shape
 * (not the mark of an init under way: a start checks it first, rusk_redis_init_unfinished_;
 * a process that finds the state written afresh under it checks the new one while the init
 * may still write).
 * RUSK_OK; RUSK_EIO (a partition's state absent: the key named; with every partition's
 * absent the state was never written, bad input; with some others' there the cluster lost
 * part of it, the message names the partitions gone and rusk_redis_outage_ says 1: an
 * outage's exit status, not bad input), RUSK_ESHAPE (another
 * shape: the message gives the state's totals and r's, and which of partitions,
 * machines, RUs per machine, memory or GPUs differ, from rusk:{meta}:shape when the state
 * has it, else the first partition that differs; or the same totals and partitions with
 * machines laid out otherwise: the layout digests of both sides). Owner thread.
 */
int rusk_redis_state_check_(rusk_redis *r, char *err, size_t errlen);

/* rusk_redis_init_mark_: the mark of an init under way or stopped half-way
 * (rusk:{meta}:init, "pid P on HOST since TIME UTC") into who ("" when there is none):
 * RUSK_OK; RUSK_ECORRUPT (a key of another type), RUSK_EIO (no answer). Owner thread. */
int rusk_redis_init_mark_(rusk_redis *r, char *who, size_t len);

/* rusk_redis_init_unfinished_: RUSK_OK when no init is under way or stopped half-way (no
 * rusk:{meta}:init); else RUSK_EIO with a message naming that init (rusk_redis_outage_ says
 * 1: wait for it, or write the state afresh), or rusk_redis_init_mark_'s error. Every start
 * that checks the state calls it before rusk_redis_state_check_. Owner thread. */
int rusk_redis_init_unfinished_(rusk_redis *r, char *err, size_t errlen);

/* rusk_redis_set_flags_: the command line's cluster flags ("--machines N ... --seed S", as
 * cli_cluster_describe gives them): rusk_redis_state_write_ records them
 * (rusk:{meta}:flags), and a shape mismatch found by rusk_redis_state_check_ names the ones
 * that differ, with the state's values and r's ("the state was made with --seed 7; this
 * command line has --seed 1: give --seed 7, or write the state afresh ..."). Owner thread. */
void rusk_redis_set_flags_(rusk_redis *r, const char *flags);

/* rusk_redis_epoch_: rusk:{meta}:epoch (0 when absent: a state written before epochs).
 * RUSK_OK / RUSK_EIO / RUSK_EINVAL. Owner thread. */
int rusk_redis_epoch_(rusk_redis *r, uint64_t *epoch);

/* rusk_redis_close_: closes every connection and frees r (NULL: nothing). */
void rusk_redis_close_(rusk_redis *r);

/*
 * rusk_redis_set_wait_: with replicas > 0 every pipeline that carries commit or release
 * scripts (one per partition per call, however many claims or leases it holds) ends with
 * WAIT replicas timeout_ms on its shard, in the same round trip: acknowledged by that many
 * replicas, or counted in stats.wait_short when the timeout passed first. Reads
 * (snapshots, recounts, owners, leases) carry none. 0: asynchronous replication (the
 * default). Owner thread.
 */
void rusk_redis_set_wait_(rusk_redis *r, int replicas, int timeout_ms);

/* rusk_redis_min_replicas_: the fewest replicas connected to any master that serves a slot
 * (ROLE on each, one round trip per master): a WAIT for more replicas than that waits out
 * its timeout on that shard. -1 when a master cannot be asked (or r NULL). Owner thread. */
int rusk_redis_min_replicas_(rusk_redis *r);

/*
 * rusk_redis_outage_: whether r is in an outage: its last call that needed the cluster got
 * no answer (a node of the slot map unreachable, a slot unserved, CLUSTERDOWN), including
 * one found at rusk_redis_open_ (a master the map still names, killed, its replica not
 * promoted yet: the open succeeds and the calls wait it out). 1, and err (a message, may
 * be NULL) gets " (the cluster did not answer for T s: unreachable or failing over ...)"
 * appended (T since the outage began; under rusk_redis_set_bound_, since failover_ms before
 * the bound if that is earlier: the start's first try), or " (master H:P did not answer for
 * T s while the others did: ...)" when the masters serving a slot that have not answered
 * since their last failure are not all of them (another answered after); 0 when the cluster
 * answered. Also 1 (nothing appended) after a rusk_redis_state_check_ that found some
 * partitions' state gone while others' is there (lost by the cluster: its message says so).
 * A caller whose call failed with RUSK_EIO tells an outage (exit 1: try again) from bad input
 * (exit 2) with it. Owner thread.
 */
int rusk_redis_outage_(const rusk_redis *r, char *err, size_t errlen);
/* rusk_redis_outage_say_: appends rusk_redis_outage_'s words for an outage of secs seconds
 * to err (as far as it fits). Pure. */
void rusk_redis_outage_say_(double secs, char *err, size_t errlen);

/* rusk_redis_set_failover_ms_: how long r waits out an outage (a slot unserved, its node
 * unreachable, CLUSTERDOWN) before calls fail with RUSK_EIO (default 30000), counted from
 * when r lost the cluster, not per call: once r has gone that long without an answer, each
 * call makes one attempt (on a slot map refreshed from any node that answers) and fails at
 * once, until a node answers again. Owner thread. */
void rusk_redis_set_failover_ms_(rusk_redis *r, int ms);

/*
 * rusk_redis_set_unavailable_ms_: with ms > 0, a node that does not answer within ms
 * (beyond --wait's timeout) or cannot be reached, while another node that serves a
 * partition answers, is marked unavailable instead of waited out: the call that met it returns at
 * once (RUSK_EIO: what it had sent there has an unknown outcome, as after failover_ms;
 * RUSK_EAGAIN: nothing was sent), and calls for its slots fail at once with RUSK_EAGAIN,
 * nothing sent (multi-partition reads: those partitions unread, RUSK_EIO), until its retry
 * is due (250 ms, doubling to 2 s): the next call for one of its slots refreshes the slot
 * map and probes it (PING within 200 ms), and an answer makes it available again. With no
 * other node answering (the whole cluster out) calls wait out the outage within
 * failover_ms as before. 0 (the default): every outage is waited out. Clears every mark.
 * Owner thread.
 */
void rusk_redis_set_unavailable_ms_(rusk_redis *r, int ms);

/* rusk_redis_part_unavailable_: 1 while partition p's node is marked unavailable (until a
 * retry, made by a call for one of its slots once due, finds it answering) and another
 * node answers, else 0. Owner thread. */
int rusk_redis_part_unavailable_(const rusk_redis *r, uint32_t p);

/*
 * rusk_redis_set_deadline_: calls that meet an outage stop waiting it out at deadline_ns
 * (CLOCK_MONOTONIC, ns) if that comes before the failover bound; 0: none (the
 * default). The first attempt of each call is made whatever the deadline (a cluster that
 * answers is never refused), and a healthy call is never cut. For a caller that reads many
 * partitions under one budget: it sets the deadline, and counts a call that failed after
 * it as unread. Owner thread.
 */
void rusk_redis_set_deadline_(rusk_redis *r, uint64_t deadline_ns);

/*
 * rusk_redis_set_bound_: rusk_redis_set_deadline_(r, bound_ns), and moreover no read or
 * connect of r waits past bound_ns (each gets 100 ms at least, so a first attempt is made):
 * a bound on a whole sequence of calls, however the cluster answers between them (the
 * start's --failover-ms, counted from its first try: each call that met a stuck master
 * waited its own failover_ms after a call that another master answered, and the first read
 * of each its 2 s, so that a 30 s bound ended after 42 s). rusk_redis_set_deadline_ (or
 * bound_ns 0) lifts it. Owner thread.
 */
void rusk_redis_set_bound_(rusk_redis *r, uint64_t bound_ns);

/*
 * rusk_redis_set_stop_: stop(arg) is asked while a call waits out an outage (between
 * retries, every 100 ms or so); non-zero makes the call fail at once with RUSK_EIO
 * ("stopping during an outage"). Never cuts a call the cluster answers. Once it said
 * stop, it is also asked before each connection is used: reads time out after 250 ms
 * (plus the WAIT's timeout), and a node that failed a read or a connect since is not tried
 * again (a hung node costs the end's calls one short timeout, not 2 s each). It is asked
 * too while a read waits (every 50 ms): a stop then cuts that read to 250 ms (plus the
 * WAIT's timeout) from the stop. NULL: none. stop is called on r's owner thread, between
 * a waiting call's tries, before each connection is used and while a read waits; it may
 * make calls of its own on another rusk_redis, never on r. Owner thread.
 */
void rusk_redis_set_stop_(rusk_redis *r, int (*stop)(void *), void *arg);

/*
 * rusk_redis_set_waiting_: waiting(arg) is called while a call of r waits out an outage,
 * between its tries (after a read that timed out or broke, or between TRYAGAIN/CLUSTERDOWN
 * waits, not past the outage's bound), and nowhere else: never from a call the cluster
 * answers, nor before a connection is used. Its time counts against the call's bounds
 * (failover_ms, the deadline). It may make calls of its own on another rusk_redis, never
 * on r (rusk agent renews its lease so while an outage holds its loop). NULL: none. Owner
 * thread.
 */
void rusk_redis_set_waiting_(rusk_redis *r, void (*waiting)(void *), void *arg);

/* rusk_redis_meta_unavailable_: non-zero while the node serving the {meta} shard is marked
 * unavailable on r (rusk_redis_set_unavailable_ms_; 0 when that is off). Owner thread. */
int rusk_redis_meta_unavailable_(const rusk_redis *r);

/* rusk_redis_meta_retry_now_: when the {meta} node is marked unavailable on r, its retry is
 * made due now, whatever its backoff (250 ms doubling to 2 s): the next call for {meta}
 * probes it (a PING within 200 ms, a connect within 500 ms) instead of failing at once, so a
 * master back is used at once. rusk agent calls it before each lease renewal the loop makes:
 * a renewal that waited out the backoff came up to 2 s after {meta} answered again, and a
 * pause shorter than the lease let it lapse. Nothing when the node is not marked. Owner
 * thread. */
void rusk_redis_meta_retry_now_(rusk_redis *r);

/* rusk_redis_backend_: the backend.h seam over r (r must outlive it). */
int rusk_redis_backend_(rusk_redis *r, rusk_backend *out);

/* rusk_redis_stats_: a copy of r's counters. Any thread (relaxed loads of counters that only
 * r's thread writes: each exact, the set not one instant's). */
rusk_redis_stats rusk_redis_stats_(const rusk_redis *r);

/* rusk_redis_last_error_: the message of the last RUSK_EIO / script error (never NULL). */
const char *rusk_redis_last_error_(const rusk_redis *r);

/* rusk_redis_auth_failed_: NULL, or the message of a node's refusal of the URL's password
 * (WRONGPASS on a reconnect after the password was changed, NOAUTH): no retry mends it, so
 * every later call fails at once, not after the outage bound; the caller stops (exit 2). */
const char *rusk_redis_auth_failed_(const rusk_redis *r);

/*
 * rusk_redis_owners_: reads partition p's owners: for each held RU, rus[k] (global),
 * owners[k] and its generation gens[k] (gens may be NULL), at most cap entries; *n the
 * count. One round trip (a script: the three are read together). RUSK_OK / RUSK_EIO /
 * RUSK_ERANGE / RUSK_EINVAL; RUSK_ECORRUPT (no entries) where a field of rusk:{pN}:own is
 * not an RU of the partition (0 .. its RUs - 1), its value no owner (a decimal count, no
 * leading zero, of a task 1..RUSK_TASK_ID_MAX under a namespace) or the RU's generation none
 * (a count 0..RUSK_GEN_MASK), the message naming the key and field. Used by
 * recounts that compare the state with a run's ledger and by reclaims (a release with the owner and
 * generation read here).
 */
int rusk_redis_owners_(rusk_redis *r, uint32_t p, uint32_t *rus, uint64_t *owners, uint32_t *gens,
                       size_t cap, size_t *n);

/*
 * rusk_redis_owners_many_: rusk_redis_owners_ of partitions ps[0..n) in one call, one
 * pipeline per node (about one round trip for all): partition ps[i]'s entries at
 * [off[i], off[i + 1]) of rus, owners and gens (off has n + 1 entries; gens may be NULL),
 * at most cap entries in all; rcs[i] its code (RUSK_OK, RUSK_EIO: not read, no entries;
 * RUSK_ERANGE: p, or cap full; RUSK_ECORRUPT: as rusk_redis_owners_, no entries). Returns the first
 * code that is not RUSK_OK, else RUSK_OK; RUSK_EINVAL on NULL arguments. Owner thread.
 */
int rusk_redis_owners_many_(rusk_redis *r, const uint32_t *ps, size_t n, uint32_t *rus,
                            uint64_t *owners, uint32_t *gens, size_t cap, size_t *off, int *rcs);

/*
 * Agent leases, rusk:{meta}:alive:AGENT holding the token of the process that has the id
 * (any string unique to it; at most 200 bytes) with an expiry of ttl_ms:
 *  - rusk_redis_lease_claim_ takes the id at a process's start (SET NX PX: atomic, so of
 *    two processes started with one id only one gets it). RUSK_OK; RUSK_EBUSY when another
 *    token holds it: holder (NUL-terminated, truncated to holderlen) and *left_ms (its
 *    lease's remaining time; either may be NULL). An expired lease (its holder dead, or
 *    stalled past ttl_ms) is gone, so the id is taken over.
 *  - rusk_redis_lease_renew_ extends it, only for the holder (a script compares the token):
 *    RUSK_OK (*lapsed 0; or 1 when the lease had expired and nobody held it: taken again),
 *    RUSK_EBUSY (another token holds it now: this process lost the id). *epoch (may be
 *    NULL): rusk:{meta}:epoch in the same round trip (a change: the state was written
 *    afresh).
 *  - rusk_redis_lease_drop_ deletes it if token still holds it (a process's normal end).
 *  - rusk_redis_lease_alive_ tells whether agent's lease is there (any holder).
 *  - rusk_redis_live_agents_ reads every id's lease (0..RUSK_REDIS_AGENTS-1, one MGET):
 *    live[i] = 1 where one is there, *n their count.
 * A recount reclaims the RUs of agents whose lease expired (rusk agent --recount
 * --reclaim-expired). RUSK_OK / RUSK_EINVAL / RUSK_EIO as above. Owner thread.
 */
#define RUSK_REDIS_AGENTS 255

/*
 * rusk_redis_agent_task_: the next task id of `rusk agent` id `agent` (namespace 0):
 * (agent + 1) << 32 | seq, seq 1..RUSK_REDIS_AGENT_SEQ_MAX (32 bits), ++*seq. The sequence
 * never carries into the agent's bits (UINT32_MAX + 1 would be agent + 1's sequence 0, so
 * its ids: another live process's RUs): past RUSK_REDIS_AGENT_SEQ_MAX tasks (12 hours at
 * 100,000 tasks/s) it answers RUSK_ERANGE, *seq and *task unchanged, and the process
 * stops. RUSK_EINVAL for agent >= RUSK_REDIS_AGENTS. Pure.
 */
#define RUSK_REDIS_AGENT_SEQ_MAX UINT32_MAX
static inline int rusk_redis_agent_task_(uint32_t agent, uint64_t *seq, uint64_t *task)
{
	if (agent >= RUSK_REDIS_AGENTS)
		return RUSK_EINVAL;
	if (*seq >= RUSK_REDIS_AGENT_SEQ_MAX)
		return RUSK_ERANGE;
	*task = ((uint64_t)agent + 1) << 32 | ++*seq;
	return RUSK_OK;
}
int rusk_redis_lease_claim_(rusk_redis *r, uint32_t agent, const char *token, uint32_t ttl_ms,
                            char *holder, size_t holderlen, int64_t *left_ms);
int rusk_redis_lease_renew_(rusk_redis *r, uint32_t agent, const char *token, uint32_t ttl_ms,
                            int *lapsed, uint64_t *epoch);
int rusk_redis_lease_drop_(rusk_redis *r, uint32_t agent, const char *token);
int rusk_redis_lease_alive_(rusk_redis *r, uint32_t agent, int *alive);
int rusk_redis_live_agents_(rusk_redis *r, uint8_t live[RUSK_REDIS_AGENTS], uint32_t *n);
/*
 * rusk_redis_lease_holder_: agent's lease, read only: *alive 1 with holder (its token, the
 * holder's pid and host; NUL-terminated, truncated to holderlen) and *left_ms (its
 * remaining time), or *alive 0 (holder "", *left_ms -1). holder and left_ms may be NULL.
 * RUSK_OK / RUSK_EINVAL / RUSK_EIO. Owner thread.
 */
int rusk_redis_lease_holder_(rusk_redis *r, uint32_t agent, int *alive, char *holder,
                             size_t holderlen, int64_t *left_ms);

/*
 * Run leases (`rusk run --backend`): rusk_redis_run_lease_ sets namespace ns's entry in
 * rusk:{meta}:live-runs to expire ttl_ms from now (the server's clock, TIME), or removes
 * it with ttl_ms 0; rusk_redis_live_runs_ counts the live entries (*n). An expired entry
 * stays (a run that died) until rusk_redis_reclaim_dead_ released its RUs and removed it.
 * One round trip each (a script). RUSK_OK / RUSK_EINVAL / RUSK_EIO. Owner thread.
 */
int rusk_redis_run_lease_(rusk_redis *r, uint64_t ns, uint32_t ttl_ms);
int rusk_redis_live_runs_(rusk_redis *r, uint32_t *n);
/*
 * rusk_redis_live_run_ns_: the namespaces whose run lease is live now (the server's clock),
 * read only: the first cap of them in ns[0..], *n how many are live (may exceed cap). A
 * run's owners are ns << RUSK_OWNER_NS_SHIFT | task: RUs whose namespace is not live
 * belong to a run that ended without releasing them (killed), which a recount reclaims
 * (rusk agent --recount --reclaim-expired). RUSK_OK / RUSK_EINVAL / RUSK_EIO. Owner thread.
 */
int rusk_redis_live_run_ns_(rusk_redis *r, uint64_t *ns, uint32_t cap, uint32_t *n);

/*
 * rusk_redis_reclaim_dead_: the automatic reclaim (docs/redis.md "An agent process
 * killed"): releases every RU held by a dead process, one whose lease ended without its
 * normal end: an agent id that took a lease (rusk:{meta}:agents: claimed, renewed, not
 * dropped) whose lease key is gone, and a run namespace whose entry in
 * rusk:{meta}:live-runs expired. An agent run with --lease-ms 0 took no lease, so it is
 * never taken for dead here (only `--recount --reclaim-expired`, by hand, takes it).
 * keep_agent (-1: none) and keep_ns (0: none) are the caller's own id and namespace, never
 * taken for dead. The order makes it safe against live processes: the dead are read
 * (one round trip; nobody dead: done), the reclaim lock taken (SET NX PX
 * rusk:{meta}:reclaim token, 5 s: held by another process, that one reclaims: out->busy,
 * nothing done), every partition's owners read, the dead read again (an RU held
 * by a process that was live when it committed, whose lease is gone after the read, is a
 * dead process's), and only the owners of the dead in both reads released with the owner
 * and generation read (the release script refuses an RU that moved on): an RU of a live
 * process is never released, and of two reclaimers each RU is released by one. The dead
 * whose RUs are all released (every partition read) are forgotten (rusk:{meta}:agents,
 * rusk:{meta}:live-runs), unless they renewed since. *out: what it did. A dead agent that
 * was only stalled (its lease lapsed) takes its id again at its next renewal, finds its
 * RUs gone at its ledger check and places those tasks again. token: this process's,
 * unique (at most 200 bytes). RUSK_OK (also busy), RUSK_EINVAL, RUSK_EIO (a meta read
 * failed: nothing released), RUSK_ENOMEM. Owner thread.
 */
#define RUSK_REDIS_RECLAIM_RUNS 64 /* dead runs per pass; more wait for the next pass */
typedef struct rusk_redis_reclaim {
	uint64_t reclaimed;    /* RUs released */
	uint64_t from_runs;    /* of them, dead runs' */
	uint64_t refused;      /* releases the script refused (the RU moved on meanwhile) */
	uint32_t agents, runs; /* the dead agents and runs whose RUs were released */
	/* Of them, those this connection had not counted at an earlier pass: a dead process
	 * whose partitions could not all be read is not forgotten and is found dead at every
	 * pass until they are; a total of dead processes sums these (each counted once; an
	 * agent id found live again, a new process, counts anew at its death). */
	uint32_t agents_new, runs_new;
	uint32_t parts_failed; /* partitions not read (the dead then not forgotten) */
	uint32_t passes;       /* 1 when it read the owners (something was dead) */
	int busy;              /* another process held the reclaim lock: nothing done */
	int unsteady; /* the {meta} shard not steady for a lease since a gap (a call that failed,
	               * was slow or came after a silence): nothing done (set_reclaim_lease) */
	int warming;  /* nothing done, the connection not yet watching the {meta} shard for a
	               * lease since rusk_redis_set_reclaim_lease_ (a fresh process): not a gap,
	               * not counted unsteady (before, each such pass read "put off") */
	/* A dead agent left out (unsteady) because this connection's meta calls came further
	 * apart than two thirds of its lease (its lease shorter than this process's): the
	 * spacing, ms, that would let a later pass believe it (0: none); the caller may make
	 * its meta calls (lease renewals) closer than that. */
	uint32_t closer_ms;
} rusk_redis_reclaim;
int rusk_redis_reclaim_dead_(rusk_redis *r, const char *token, int keep_agent, uint64_t keep_ns,
                             rusk_redis_reclaim *out);
/*
 * rusk_redis_set_reclaim_lease_: the lease (ms) of the processes that share the state, for
 * rusk_redis_reclaim_dead_ on r: a lease key that expired while its live holder could not
 * reach the {meta} shard (the shard paused, or failing over: cluster-node-timeout is 15 s
 * by default, longer than the 5 s lease) is absent though its holder lives. So a pass reads
 * the dead only when r's meta calls (its lease renewals, every third of a lease; its reclaim
 * reads) have all answered, each within 1 s and none more than 2/3 of a lease after the one
 * before, for the lease and 1 s up to the read, and releases only when both reads of the
 * dead were so (else out->unsteady, nothing done: the next pass tries again). A dead agent's
 * lease may be another length than lease_ms (each agent's --lease-ms is recorded in
 * rusk:{meta}:lease-ms): its absence is believed only when that also holds for its own
 * lease (else it alone is left out, out->unsteady; out->closer_ms when r's calls were too
 * far apart for it). A live process renews within a third of its lease (at most 1 s once
 * it lapsed) once the shard answers, so an absence read then is a dead process's. The
 * window starts at this call too (a process that just began has seen nothing: out->warming
 * until it ends, not out->unsteady). 0 (the default): no such rule (`--recount
 * --reclaim-expired`, by hand). Owner thread.
 */
void rusk_redis_set_reclaim_lease_(rusk_redis *r, uint32_t lease_ms);

/*
 * rusk_redis_run_ns_: a namespace for this process's owner ids (kernel/backend.h "Owner
 * ids"), taken atomically from the cluster: INCR rusk:{meta}:runs, 1..RUSK_OWNER_NS_MAX.
 * It never wraps (a wrapped namespace could be a live run's: its owner ids, so its RUs,
 * would be the new run's): past RUSK_OWNER_NS_MAX runs it answers RUSK_ERANGE, the message
 * naming the key and what to do (stop every process, write the state afresh, delete the
 * key). The key outlives --init (a state written afresh does not reset it), so every
 * process that asks, before or after, gets another one. RUSK_OK and *ns, RUSK_EINVAL
 * (NULL), RUSK_ECORRUPT (not a count, or a key of another type: named), RUSK_EIO (no
 * answer). Owner thread.
 */
int rusk_redis_run_ns_(rusk_redis *r, uint64_t *ns);

/*
 * The forced reclaims of live runs (rusk agent --recount --reclaim-run NS --force while run
 * NS's lease is live): rusk_redis_forced_add_ adds to rusk:{meta}:forced (a hash: field NS
 * the RUs released, NS:tasks the tasks that held them), so that run NS, whose releases of
 * those RUs are then refused and whose ledger finds them gone, names them a forced reclaim
 * rather than commits Redis lost (redis_run.c); rusk_redis_forced_get_ reads NS's (0, 0
 * when none). The key outlives --init: run namespaces are never reused. One round trip
 * each. RUSK_OK / RUSK_EINVAL / RUSK_EIO. Owner thread.
 */
int rusk_redis_forced_add_(rusk_redis *r, uint64_t ns, uint64_t rus, uint64_t tasks);
int rusk_redis_forced_get_(rusk_redis *r, uint64_t ns, uint64_t *rus, uint64_t *tasks);

/* rusk_redis_slot_of_: the hash slot partition p's keys live in. */
uint16_t rusk_redis_slot_of_(uint32_t p);

#endif /* RUSK_STATE_REDIS_H */
