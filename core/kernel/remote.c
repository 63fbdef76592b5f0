/* SPDX-License-Identifier: MIT */
/*
 * A remote master state under the kernel's agents (remote.h has the design: the remote
 * grants first, the local array mirrors this process's grants; per-thread connections;
 * remote generations in rgen[]).
 *
 * A commit: the chosen RUs, sorted, make one claim per machine (a machine's RUs are
 * consecutive numbers; a vector task's one claim carries its memory and GPU shares), and
 * the claims of one partition go in one backend call (one pipeline: one round trip per
 * partition the decision touches). A gang stops at the first partition with a refused
 * claim and gives back what the earlier ones won (rolled back remotely: counted, and one
 * conflict as the local gang counts one); an incremental task keeps what was granted. What
 * was granted is then committed locally with rusk_commit_local_, whose view marks, conflict
 * counts and keep_up are the in-memory path's; what the local array refuses (never, but
 * for a vector task's GPU picked differently on the two sides) is released remotely again.
 * A claim the remote refused marks its RUs taken in the view (the remote does not say which
 * RU of a machine claim was held: all of them, until the next sync), counts one conflict
 * per RU as the local incremental commit does (one per decision for a gang), and, for a
 * vector task, skips the machine for the rest of place() (vskip, as commit_vec).
 *
 * An unknown outcome (the backend answered RUSK_EIO: no node served the slot within its
 * failover bound) is handled as refused (its RUs marked taken in the view, a gang's other
 * parts given back, the task tried again) but counted apart: in claims_unknown and errors,
 * never as a conflict or in claims_lost (an outage is not contention: a run whose cluster
 * stopped 2 s in reported half its commits as conflicts); the RUs may stay held remotely by
 * a task that does not hold them locally, which the run's recount reports (held by this
 * run after its end), and a later `rusk agent --recount --reclaim-agent` can release.
 *
 * Unavailable partitions (the backend's unavailable op: a stuck master skipped while the
 * others answer, state/redis.h rusk_redis_set_unavailable_ms_). Each connection finds out
 * for itself (its first call there waits out its read timeout, later ones fail at once),
 * and the remote follows them all in rm->un (rusk_unavail: marked by a call that found p
 * unavailable, unmarked by one that p answered):
 *  - a read of p that fails while p is unavailable shows p all taken in the view (its
 *    words zeroed, answered as read): the decisions leave it alone and go to the other
 *    partitions, until a read answers again (every sync step tries: the backend's retry,
 *    a map refresh and a probe, is made then when due);
 *  - a claim there (RUSK_EAGAIN: nothing sent) is refused as not sent (UNAVAIL below):
 *    its RUs marked taken in the view, a gang's other parts given back, the task queued
 *    again; not a conflict, not an unknown outcome;
 *  - a release there (RUSK_EAGAIN: nothing sent) is put off (rm->later, any thread's,
 *    under rm->lock) and sent again by the next thread that releases, flushes or commits
 *    once LATER_NS has passed; the run's end sends what is left (rusk_remote_drain_)
 *    before its recount, and the ledger does not take an RU put off for an orphan
 *    (rusk_remote_put_off_). The local array freed it first (the mirror's rule stands):
 *    a claim of that RU meanwhile is refused by the remote until the release lands.
 *
 * Connections: conn_get returns the calling thread's connection to this remote, opening
 * it on first use (the thread-local slot names the remote by serial number, so a slot
 * left by a detached remote is never reused). Counters are relaxed atomics: one fetch-add
 * beside a network round trip that costs a thousand times more.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/atomic.h"
#include "base/hist.h"
#include "kernel/choose.h"
#include "kernel/commit.h"
#include "kernel/remote.h"
#include "kernel/ru_impl.h"

typedef struct conn {
	rusk_backend bk;
	void *handle;
	rusk_hist rtt; /* commit round trips; one writer (its thread), read at quiescence */
	struct conn *next;
	/* Deferred releases (remote.h "Batches"): its thread's alone, and rusk_remote_detach_'s
	 * once that thread is joined (B3). */
	bool defer;
	rusk_bk_lease *pend;
	size_t n_pend, cap_pend;
	/* rusk_remote_snapshots_'s argument arrays, [n_parts] once used (its thread's alone) */
	uint64_t **sw;
	uint32_t *sn;
} conn;

struct rusk_remote {
	rusk_cluster *c;
	rusk_remote_opener op;
	uint64_t serial;
	uint32_t *rgen;       /* [n_rus] remote generation of the lease held on ru (remote.h) */
	pthread_mutex_t lock; /* conns and err */
	conn *conns;
	char err[512];
	/* Counters (rusk_remote_stats); relaxed fetch-adds, read at quiescence. */
	uint64_t connections, open_failures, snapshots, commit_trips, claims, claims_lost;
	uint64_t claims_unknown;
	uint64_t rollbacks, local_refused, release_trips, released, release_refused, errors;
	uint64_t batches, batch_tasks, corrupt, snapshot_trips, release_not_held;
	uint64_t release_not_held_tasks, claims_short;
	uint32_t batch; /* rusk_remote_set_batch_: set at quiescence, read by the agents */
	uint64_t ns;    /* rusk_remote_set_owner_ns_: ns << RUSK_OWNER_NS_SHIFT, likewise */
	/* Unavailable partitions (the note on top): the marks, and the releases put off
	 * (under lock; n_later also read relaxed outside it, a hint: its partner is the
	 * store under the lock), sent again from later_due on. */
	rusk_unavail un;
	rusk_bk_lease *later;
	uint64_t n_later; /* written under lock (rusk_store64), read relaxed outside */
	size_t cap_later;
	uint64_t later_due;
	uint64_t last_won, max_gap; /* the last commit that won RUs, the longest gap (ns) */
};

/* A claim's answer inside this file only: its partition was unavailable, nothing sent. */
#define UNAVAIL  (-101)
/* Releases put off are sent again this long after they were (the agent's DEFER_NS). */
#define LATER_NS 100000000u

static void release_remote(rusk_remote *rm, conn *cn, rusk_bk_lease *ls, size_t n);
static void retry_later(rusk_remote *rm, conn *cn, bool now);

/* Serial numbers of remotes (relaxed: uniqueness is all that is needed). */
static uint64_t serials;
static _Thread_local struct {
	uint64_t serial;
	conn *cn;
} tls;

static uint64_t mono(const rusk_cluster *c)
{
	return rusk_now_(c);
}

/* CLOCK_MONOTONIC, ns: the marks' and the releases put off's clock (a virtual cluster clock
 * does not tell when to try a node again). */
static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count(uint64_t *ctr, uint64_t d)
{
	rusk_faa64(ctr, d, RUSK_RELAXED); /* a statistic: relaxed, see the note on top */
}

static void note_error(rusk_remote *rm, const conn *cn, const char *what)
{
	const char *msg =
	        cn != NULL && rm->op.error != NULL ? rm->op.error(rm->op.arg, cn->handle) : "";
	pthread_mutex_lock(&rm->lock);
	snprintf(rm->err, sizeof rm->err, "%s%s%s", what, msg[0] ? ": " : "", msg);
	pthread_mutex_unlock(&rm->lock);
	count(&rm->errors, 1);
}

/* The calling thread's connection to rm, opened on first use; NULL if it cannot be. */
static conn *conn_get(rusk_remote *rm)
{
	if (RUSK_LIKELY(tls.serial == rm->serial && tls.cn != NULL))
		return tls.cn;
	conn *cn = calloc(1, sizeof *cn);
	char err[256] = "";
	if (cn == NULL ||
	    rm->op.open(rm->op.arg, &cn->bk, &cn->handle, err, sizeof err) != RUSK_OK) {
		free(cn);
		pthread_mutex_lock(&rm->lock);
		snprintf(rm->err, sizeof rm->err, "opening a connection: %s",
		         err[0] ? err : "out of memory");
		pthread_mutex_unlock(&rm->lock);
		count(&rm->open_failures, 1);
		return NULL;
	}
	pthread_mutex_lock(&rm->lock);
	cn->next = rm->conns;
	rm->conns = cn;
	pthread_mutex_unlock(&rm->lock);
	count(&rm->connections, 1);
	tls.serial = rm->serial;
	tls.cn = cn;
	return cn;
}

int rusk_remote_attach_(rusk_cluster *c, const rusk_remote_opener *op, char *err, size_t errlen)
{
	if (c == NULL || op == NULL || op->open == NULL || op->close == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "no remote opener");
	if (c->remote != NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "a remote is attached already");
	rusk_remote *rm = calloc(1, sizeof *rm);
	uint32_t *rgen = calloc(c->n_rus ? c->n_rus : 1, sizeof *rgen);
	if (rm == NULL || rgen == NULL || pthread_mutex_init(&rm->lock, NULL) != 0) {
		free(rm);
		free(rgen);
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory (remote, %u RUs)",
		                 c->n_rus);
	}
	if (rusk_unavail_init_(&rm->un, c->n_parts) != RUSK_OK) {
		pthread_mutex_destroy(&rm->lock);
		free(rm);
		free(rgen);
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory (remote, %u partitions)",
		                 c->n_parts);
	}
	rm->c = c;
	rm->op = *op;
	rm->rgen = rgen;
	rm->serial = rusk_faa64(&serials, 1, RUSK_RELAXED) + 1;
	/* Quiescence (the contract): the threads that use c start after this store, and
	 * their creation orders it before their first read. */
	c->remote = rm;
	return RUSK_OK;
}

void rusk_remote_detach_(rusk_cluster *c)
{
	if (c == NULL || c->remote == NULL)
		return;
	rusk_remote *rm = c->remote;
	if (rm->n_later > 0 && rm->conns != NULL) { /* one last try (the run drained first) */
		retry_later(rm, rm->conns, true);
		count(&rm->errors, rm->n_later); /* still put off: held remotely (recount) */
	}
	c->remote = NULL;
	for (conn *cn = rm->conns, *next; cn != NULL; cn = next) {
		next = cn->next;
		if (cn->n_pend > 0) /* B3: its thread is joined (quiescence) */
			release_remote(rm, cn, cn->pend, cn->n_pend);
		rm->op.close(rm->op.arg, cn->handle);
		free(cn->pend);
		free(cn->sw);
		free(cn->sn);
		free(cn);
	}
	if (tls.serial == rm->serial)
		tls.cn = NULL;
	if (rm->op.done != NULL)
		rm->op.done(rm->op.arg);
	pthread_mutex_destroy(&rm->lock);
	rusk_unavail_free_(&rm->un);
	free(rm->later);
	free(rm->rgen);
	free(rm);
}

void rusk_remote_stats_(const rusk_cluster *c, rusk_remote_stats *out)
{
	if (out == NULL)
		return;
	memset(out, 0, sizeof *out);
	rusk_remote *rm = c != NULL ? c->remote : NULL;
	if (rm == NULL)
		return;
	uint64_t *src[] = {&rm->connections,  &rm->open_failures,    &rm->snapshots,
	                   &rm->commit_trips, &rm->claims,           &rm->claims_lost,
	                   &rm->rollbacks,    &rm->local_refused,    &rm->release_trips,
	                   &rm->released,     &rm->release_refused,  &rm->errors,
	                   &rm->batches,      &rm->batch_tasks,      &rm->claims_unknown,
	                   &rm->corrupt,      &rm->release_not_held, &rm->release_not_held_tasks,
	                   &rm->claims_short, &rm->snapshot_trips};
	uint64_t *dst[] = {&out->connections,  &out->open_failures,    &out->snapshots,
	                   &out->commit_trips, &out->claims,           &out->claims_lost,
	                   &out->rollbacks,    &out->local_refused,    &out->release_trips,
	                   &out->released,     &out->release_refused,  &out->errors,
	                   &out->batches,      &out->batch_tasks,      &out->claims_unknown,
	                   &out->corrupt,      &out->release_not_held, &out->release_not_held_tasks,
	                   &out->claims_short, &out->snapshot_trips};
	for (size_t i = 0; i < sizeof src / sizeof src[0]; i++)
		*dst[i] = rusk_load64(src[i], RUSK_RELAXED);
	rusk_hist *h = calloc(1, sizeof *h); /* NULL: no quantiles (zeros), the rest read */
	pthread_mutex_lock(&rm->lock);
	for (const conn *cn = rm->conns; cn != NULL; cn = cn->next) {
		if (h != NULL)
			rusk_hist_merge(h, &cn->rtt); /* relaxed loads of one writer's counts */
		rusk_remote_link l = {0};
		if (rm->op.link != NULL) /* the opener's contract: race-free reads, any thread */
			rm->op.link(rm->op.arg, cn->handle, &l);
		out->link.reconnects += l.reconnects;
		out->link.redirects += l.redirects;
		out->link.resent += l.resent;
		out->link.outage_ns += l.outage_ns;
		if (l.outage_ns > out->outage_max_ns)
			out->outage_max_ns = l.outage_ns;
	}
	out->releases_put_off = rm->n_later;
	pthread_mutex_unlock(&rm->lock);
	uint64_t now = real_ns();
	out->parts_unavailable = rusk_load64(&rm->un.marked, RUSK_RELAXED);
	out->unavailable_ns = (uint64_t)(rusk_unavail_s_(&rm->un, now) * 1e9);
	out->placed_unavailable = rusk_load64(&rm->un.placed, RUSK_RELAXED);
	out->releases_deferred = rusk_load64(&rm->un.deferred, RUSK_RELAXED);
	out->max_gap_ns = rusk_load64(&rm->max_gap, RUSK_RELAXED);
	if (h == NULL)
		return;
	out->commit_p50_ns = rusk_hist_quantile(h, 0.5);
	out->commit_p99_ns = rusk_hist_quantile(h, 0.99);
	free(h);
}

void rusk_remote_last_error_(const rusk_cluster *c, char *buf, size_t len)
{
	if (buf == NULL || len == 0)
		return;
	buf[0] = '\0';
	rusk_remote *rm = c != NULL ? c->remote : NULL;
	if (rm == NULL)
		return;
	pthread_mutex_lock(&rm->lock);
	snprintf(buf, len, "%s", rm->err);
	pthread_mutex_unlock(&rm->lock);
}

/* Sends cn's deferred releases (B1, B3). cn's thread. */
static void flush(rusk_remote *rm, conn *cn)
{
	size_t n = cn->n_pend;
	cn->n_pend = 0;
	release_remote(rm, cn, cn->pend, n);
}

int rusk_remote_set_batch_(rusk_cluster *c, uint32_t batch)
{
	if (c == NULL || c->remote == NULL)
		return RUSK_EINVAL;
	c->remote->batch = batch; /* quiescence: the agents start after this store */
	return RUSK_OK;
}

int rusk_remote_set_owner_ns_(rusk_cluster *c, uint64_t ns)
{
	if (c == NULL || c->remote == NULL || ns > RUSK_OWNER_NS_MAX)
		return RUSK_EINVAL;
	c->remote->ns = ns << RUSK_OWNER_NS_SHIFT; /* quiescence, as the batch */
	return RUSK_OK;
}

uint64_t rusk_remote_owner_ns_(const rusk_cluster *c)
{
	return c != NULL && c->remote != NULL ? rusk_owner_ns_(c->remote->ns) : 0;
}

/* Task t's owner id in the remote state (backend.h "Owner ids"). */
static inline uint64_t owner_of(const rusk_remote *rm, uint64_t task)
{
	return rm->ns | task;
}

uint32_t rusk_remote_batch_(const rusk_cluster *c)
{
	return c != NULL && c->remote != NULL ? c->remote->batch : 0;
}

int rusk_remote_defer_(rusk_cluster *c)
{
	conn *cn = c != NULL && c->remote != NULL ? conn_get(c->remote) : NULL;
	if (cn == NULL)
		return RUSK_EIO;
	cn->defer = true;
	return RUSK_OK;
}

void rusk_remote_flush_(rusk_cluster *c)
{
	rusk_remote *rm = c->remote;
	if (rm != NULL && tls.serial == rm->serial && tls.cn != NULL && tls.cn->n_pend > 0)
		flush(rm, tls.cn);
	if (rm != NULL && RUSK_UNLIKELY(rusk_load64(&rm->n_later, RUSK_RELAXED) > 0) &&
	    tls.serial == rm->serial && tls.cn != NULL)
		retry_later(rm, tls.cn, false);
}

/* Keeps ls[0..n) for cn's next flush; false when there is no room (sent at once then). */
static bool defer_release(conn *cn, const rusk_bk_lease *ls, size_t n)
{
	if (cn->n_pend + n > cn->cap_pend) {
		size_t cap = cn->cap_pend ? cn->cap_pend : 64;
		while (cap < cn->n_pend + n)
			cap *= 2;
		rusk_bk_lease *p = realloc(cn->pend, cap * sizeof *p);
		if (p == NULL)
			return false;
		cn->pend = p;
		cn->cap_pend = cap;
	}
	memcpy(cn->pend + cn->n_pend, ls, n * sizeof *ls);
	cn->n_pend += n;
	return true;
}

/* ---- unavailable partitions (the note on top) ------------------------------------------ */

int rusk_unavail_init_(rusk_unavail *u, uint32_t n_parts)
{
	memset(u, 0, sizeof *u);
	u->since = calloc(n_parts ? n_parts : 1, sizeof *u->since);
	u->n_parts = n_parts;
	return u->since != NULL ? RUSK_OK : RUSK_ENOMEM;
}

void rusk_unavail_free_(rusk_unavail *u)
{
	free(u->since);
	u->since = NULL;
}

void rusk_unavail_note_(rusk_unavail *u, uint32_t p, int unavailable, uint64_t now)
{
	if (u->since == NULL || p >= u->n_parts)
		return;
	uint64_t was = rusk_load64(&u->since[p], RUSK_RELAXED);
	if (unavailable && was == 0) {
		now += now == 0;                                         /* 0 means unmarked */
		if (rusk_cas64(&u->since[p], &was, now, RUSK_RELAXED)) { /* partner: the unmark */
			count(&u->marked, 1);
			rusk_faa32(&u->now_marked, 1, RUSK_RELAXED);
		}
	} else if (!unavailable && was != 0 &&
	           rusk_cas64(&u->since[p], &was, 0, RUSK_RELAXED)) { /* partner: the mark */
		count(&u->ns, now > was ? now - was : 0);
		rusk_faa32(&u->now_marked, (uint32_t)-1, RUSK_RELAXED);
	}
}

int rusk_unavail_any_(const rusk_unavail *u)
{
	return rusk_load32(&u->now_marked, RUSK_RELAXED) != 0; /* a statistic's test */
}

void rusk_unavail_placed_(rusk_unavail *u, uint64_t n)
{
	if (n > 0 && rusk_unavail_any_(u))
		count(&u->placed, n);
}

double rusk_unavail_s_(const rusk_unavail *u, uint64_t now)
{
	uint64_t ns = rusk_load64(&u->ns, RUSK_RELAXED);
	for (uint32_t p = 0; u->since != NULL && p < u->n_parts; p++) {
		uint64_t t = rusk_load64(&u->since[p], RUSK_RELAXED);
		ns += t != 0 && now > t ? now - t : 0;
	}
	return (double)ns * 1e-9;
}

/* Whether partition p is unavailable on cn (its backend's mark). cn's thread. */
static bool part_unavail(const conn *cn, uint32_t p)
{
	return cn->bk.ops->unavailable != NULL && cn->bk.ops->unavailable(cn->bk.self, p);
}

/* Follows cn's call for p in rm->un: p found unavailable (marked), or p answered
 * (unmarked); another failure (an outage waited out) changes nothing. */
static void note_part(rusk_remote *rm, const conn *cn, uint32_t p, bool answered)
{
	if (cn->bk.ops->unavailable == NULL)
		return;
	if (!answered && part_unavail(cn, p))
		rusk_unavail_note_(&rm->un, p, 1, real_ns());
	else if (answered && rusk_load64(&rm->un.since[p], RUSK_RELAXED) != 0)
		rusk_unavail_note_(&rm->un, p, 0, real_ns());
}

/* Puts ls[0..n) off (their partition unavailable): sent again from LATER_NS on. No room:
 * counted as errors (held remotely until a recount, as a release whose answer was lost). */
static void put_off(rusk_remote *rm, const rusk_bk_lease *ls, size_t n)
{
	pthread_mutex_lock(&rm->lock);
	if (rm->n_later + n > rm->cap_later) {
		size_t cap = rm->cap_later ? rm->cap_later : 256;
		while (cap < rm->n_later + n)
			cap *= 2;
		rusk_bk_lease *p = realloc(rm->later, cap * sizeof *p);
		if (p == NULL) {
			pthread_mutex_unlock(&rm->lock);
			count(&rm->errors, n);
			return;
		}
		rm->later = p;
		rm->cap_later = cap;
	}
	memcpy(rm->later + rm->n_later, ls, n * sizeof *ls);
	rusk_store64(&rm->n_later, rm->n_later + n, RUSK_RELAXED); /* partner: the hints */
	rm->later_due = real_ns() + LATER_NS;
	pthread_mutex_unlock(&rm->lock);
	count(&rm->un.deferred, n);
}

/* Sends the releases put off on cn (those whose partition is still unavailable are put off
 * again), once due or now. cn's thread. */
static void retry_later(rusk_remote *rm, conn *cn, bool now)
{
	if (rusk_load64(&rm->n_later, RUSK_RELAXED) == 0) /* a hint: checked again below */
		return;
	pthread_mutex_lock(&rm->lock);
	if (rm->n_later == 0 || (!now && real_ns() < rm->later_due)) {
		pthread_mutex_unlock(&rm->lock);
		return;
	}
	size_t n = rm->n_later;
	rusk_bk_lease *ls = rm->later;
	rm->later = NULL;
	rm->cap_later = 0;
	rusk_store64(&rm->n_later, 0, RUSK_RELAXED);
	rm->later_due = real_ns() + LATER_NS;
	pthread_mutex_unlock(&rm->lock);
	release_remote(rm, cn, ls, n);
	free(ls);
}

size_t rusk_remote_drain_(rusk_cluster *c, uint64_t deadline_ns, int (*stop)(void *), void *arg)
{
	rusk_remote *rm = c != NULL ? c->remote : NULL;
	if (rm == NULL)
		return 0;
	/* Every thread that used the remote stopped (the contract): any one's connection will
	 * do, and one opened now (its open checks every partition) is not needed. */
	pthread_mutex_lock(&rm->lock);
	conn *cn = rm->conns;
	pthread_mutex_unlock(&rm->lock);
	while (rusk_load64(&rm->n_later, RUSK_RELAXED) > 0) {
		if (cn == NULL && (cn = conn_get(rm)) == NULL)
			break;
		retry_later(rm, cn, true);
		if (rusk_load64(&rm->n_later, RUSK_RELAXED) == 0 || real_ns() >= deadline_ns ||
		    (stop != NULL && stop(arg)))
			break;
		struct timespec ts = {0, LATER_NS};
		nanosleep(&ts, NULL);
	}
	return (size_t)rusk_load64(&rm->n_later, RUSK_RELAXED);
}

int rusk_remote_put_off_(const rusk_cluster *c, uint64_t owner, uint32_t ru)
{
	rusk_remote *rm = c != NULL ? c->remote : NULL;
	if (rm == NULL || rusk_load64(&rm->n_later, RUSK_RELAXED) == 0)
		return 0;
	int found = 0;
	pthread_mutex_lock(&rm->lock);
	for (size_t i = 0; i < rm->n_later && !found; i++)
		found = rm->later[i].task == owner && rm->later[i].lease.ru == ru;
	pthread_mutex_unlock(&rm->lock);
	return found;
}

/* A commit that won RUs now: the longest gap between two such (any thread). */
static void note_won(rusk_remote *rm, uint64_t tasks)
{
	uint64_t now = real_ns();
	uint64_t last = rusk_fas64(&rm->last_won, now, RUSK_RELAXED); /* partner: itself */
	uint64_t gap = last != 0 && now > last ? now - last : 0;
	uint64_t most = rusk_load64(&rm->max_gap, RUSK_RELAXED);
	while (gap > most && !rusk_cas64(&rm->max_gap, &most, gap, RUSK_RELAXED))
		;
	rusk_unavail_placed_(&rm->un, tasks);
}

int rusk_remote_snapshot_(rusk_remote *rm, uint32_t p, uint64_t *words, uint32_t n_words,
                          uint64_t *version)
{
	conn *cn = conn_get(rm);
	if (cn == NULL)
		return RUSK_EIO;
	if (RUSK_UNLIKELY(cn->n_pend > 0)) /* B1 */
		flush(rm, cn);
	int rc = cn->bk.ops->snapshot(cn->bk.self, p, words, n_words, version);
	note_part(rm, cn, p, rc == RUSK_OK);
	if (rc != RUSK_OK && part_unavail(cn, p)) {
		/* unavailable: shown all taken, so that decisions go elsewhere (the note on top) */
		memset(words, 0, sizeof *words * n_words);
		if (version != NULL)
			*version = 0;
		return RUSK_OK;
	}
	if (rc != RUSK_OK) {
		count(&rm->corrupt, rc == RUSK_ECORRUPT); /* a key of another type: the run stops */
		note_error(rm, cn, "snapshot");
		return RUSK_EIO;
	}
	count(&rm->snapshots, 1);
	return RUSK_OK;
}

int rusk_remote_snapshots_(rusk_remote *rm, const uint32_t *ps, size_t n, uint64_t *bits,
                           uint64_t *versions, int *rcs)
{
	conn *cn = conn_get(rm);
	if (cn == NULL)
		return RUSK_EIO;
	if (RUSK_UNLIKELY(cn->n_pend > 0)) /* B1 */
		flush(rm, cn);
	const rusk_cluster *c = rm->c;
	if (cn->bk.ops->snapshots == NULL) { /* one call per partition */
		int first = RUSK_OK;
		for (size_t i = 0; i < n; i++) {
			const rusk_partition *pp = &c->parts[ps[i]];
			rcs[i] = rusk_remote_snapshot_(rm, ps[i], bits + pp->first_bit / 64,
			                               (pp->n_rus + 63) / 64, &versions[i]);
			first = first == RUSK_OK ? rcs[i] : first;
		}
		return first;
	}
	if (n > c->n_parts)
		return RUSK_EINVAL;
	if (cn->sw == NULL) {
		cn->sw = malloc(sizeof *cn->sw * c->n_parts);
		cn->sn = malloc(sizeof *cn->sn * c->n_parts);
		if (cn->sw == NULL || cn->sn == NULL) {
			free(cn->sw);
			free(cn->sn);
			cn->sw = NULL;
			cn->sn = NULL;
			note_error(rm, cn, "snapshot: out of memory");
			return RUSK_EIO;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const rusk_partition *pp = &c->parts[ps[i]];
		cn->sw[i] = bits + pp->first_bit / 64;
		cn->sn[i] = (pp->n_rus + 63) / 64;
	}
	int rc = cn->bk.ops->snapshots(cn->bk.self, ps, n, cn->sw, cn->sn, versions, rcs);
	count(&rm->snapshot_trips, 1);
	uint64_t ok = 0, corrupt = 0, skipped = 0;
	for (size_t i = 0; i < n; i++) {
		if (rc != RUSK_OK && rc != RUSK_EIO)
			rcs[i] = rc;
		note_part(rm, cn, ps[i], rcs[i] == RUSK_OK);
		if (rcs[i] == RUSK_EIO && part_unavail(cn, ps[i])) {
			/* unavailable: shown all taken (the note on top), counted as read */
			memset(cn->sw[i], 0, sizeof *cn->sw[i] * cn->sn[i]);
			if (versions != NULL)
				versions[i] = 0;
			rcs[i] = RUSK_OK;
			skipped++;
		}
		ok += rcs[i] == RUSK_OK;
		corrupt += rcs[i] == RUSK_ECORRUPT;
	}
	count(&rm->corrupt, corrupt); /* a key of another type: the run stops (its owner) */
	count(&rm->snapshots, ok - skipped);
	if (ok < n)
		note_error(rm, cn, "snapshot");
	return ok == n ? RUSK_OK : RUSK_EIO;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return (a > b) - (a < b);
}

static int cmp_bk_lease(const void *x, const void *y)
{
	uint32_t a = ((const rusk_bk_lease *)x)->lease.ru, b = ((const rusk_bk_lease *)y)->lease.ru;
	return (a > b) - (a < b);
}

/* Whether a release's answer says the remote did not hold the lease for that task. */
static bool not_held(int rc)
{
	return rc == RUSK_ENOTOWNER || rc == RUSK_EFREE || rc == RUSK_ESTALE;
}

/* Counts the leases of ls[0..n) whose release answered not_held, and their distinct owners
 * (the tasks: each task's leases are in one call, rusk_remote_release_ or a flush). Rare:
 * a quadratic pass over those alone. */
static void count_not_held(rusk_remote *rm, const rusk_bk_lease *ls, const int *rcs, size_t n)
{
	uint64_t rus = 0, tasks = 0;
	for (size_t i = 0; i < n; i++) {
		if (!not_held(rcs[i]))
			continue;
		rus++;
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = not_held(rcs[k]) && ls[k].task == ls[i].task;
		tasks += !seen;
	}
	count(&rm->release_not_held, rus);
	count(&rm->release_not_held_tasks, tasks);
}

/* Releases ls[0..n) remotely (any order: sorted here), one call per partition. */
static void release_remote(rusk_remote *rm, conn *cn, rusk_bk_lease *ls, size_t n)
{
	if (n == 0)
		return;
	if (cn == NULL && (cn = conn_get(rm)) == NULL) {
		count(&rm->errors, 1); /* held remotely until a recount: remote.c's note */
		return;
	}
	const rusk_cluster *c = rm->c;
	if (n > 1)
		qsort(ls, n, sizeof *ls, cmp_bk_lease);
	int small[64];
	int *rcs = n <= 64 ? small : malloc(n * sizeof *rcs);
	if (rcs == NULL) {
		count(&rm->errors, 1);
		return;
	}
	for (size_t k = 0; k < n;) {
		uint32_t p = c->machines[c->ru_machine[ls[k].lease.ru]].partition;
		size_t e = k + 1;
		while (e < n && c->machines[c->ru_machine[ls[e].lease.ru]].partition == p)
			e++;
		int rc = cn->bk.ops->release(cn->bk.self, p, ls + k, e - k, rcs + k);
		note_part(rm, cn, p, rc == RUSK_OK);
		if (rc == RUSK_EAGAIN) {
			/* p unavailable: nothing sent, put off (the note on top) */
			put_off(rm, ls + k, e - k);
			for (size_t i = k; i < e; i++)
				rcs[i] = RUSK_EAGAIN;
			k = e;
			continue;
		}
		count(&rm->release_trips, 1);
		if (rc != RUSK_OK) {
			for (size_t i = k; i < e; i++)
				rcs[i] = RUSK_EIO; /* for count_not_held: none known */
			note_error(rm, cn, "release");
		} else {
			uint64_t ok = 0;
			bool corrupt = false;
			for (size_t i = k; i < e; i++) {
				ok += rcs[i] == RUSK_OK;
				corrupt |= rcs[i] == RUSK_ECORRUPT;
			}
			count(&rm->corrupt, corrupt);
			count(&rm->released, ok);
			count(&rm->release_refused, (e - k) - ok);
			if (corrupt) /* the state is damaged: an error with its message */
				note_error(rm, cn, "release");
		}
		k = e;
	}
	count_not_held(rm, ls, rcs, n);
	if (rcs != small)
		free(rcs);
}

uint32_t rusk_remote_commit_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                             rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof)
{
	rusk_cluster *c = a->c;
	rusk_remote *rm = c->remote;
	conn *cn = conn_get(rm);
	if (cn == NULL || n == 0)
		return 0; /* nothing taken; place() tries again or gives the task back */
	if (RUSK_UNLIKELY(cn->n_pend > 0)) /* B1 */
		flush(rm, cn);
	retry_later(rm, cn, false); /* the releases put off, when due */
	/* Scratch: sorted RUs, claims (at most one per RU), their answers and remote leases,
	 * the granted RUs and the remote leases to give back. */
	size_t need = (size_t)n * (sizeof(uint32_t) * 2 + sizeof(rusk_bk_claim) + sizeof(int) +
	                           sizeof(rusk_lease) + sizeof(rusk_bk_lease));
	_Alignas(16) unsigned char
	        small[64 * (8 + sizeof(rusk_bk_claim) + 4 + 8 + sizeof(rusk_bk_lease))];
	unsigned char *mem = need <= sizeof small ? small : malloc(need);
	if (mem == NULL)
		return 0;
	rusk_bk_claim *cl = (rusk_bk_claim *)(void *)mem;
	rusk_bk_lease *back = (rusk_bk_lease *)(void *)(cl + n);
	rusk_lease *rl = (rusk_lease *)(void *)(back + n);
	uint32_t *s = (uint32_t *)(void *)(rl + n), *won = s + n;
	int *rcs = (int *)(void *)(won + n);
	memcpy(s, rus, sizeof *s * n);
	if (n > 1)
		qsort(s, n, sizeof *s, cmp_u32);
	bool vec = rusk_vec_any(&t->vec);
	size_t ncl = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t m = c->ru_machine[s[i]];
		if (ncl > 0 && cl[ncl - 1].machine == m) {
			cl[ncl - 1].n++;
			continue;
		}
		cl[ncl++] = (rusk_bk_claim){owner_of(rm, t->id), m, 1, s + i, {0}};
		if (vec)
			cl[ncl - 1].vec = t->vec;
	}
	/* One call per partition; a gang stops at the first refusal. */
	bool refused = false;
	for (size_t k = 0; k < ncl;) {
		uint32_t p = c->machines[cl[k].machine].partition;
		size_t e = k + 1;
		while (e < ncl && c->machines[cl[e].machine].partition == p)
			e++;
		if (t->gang && refused) {
			for (size_t i = k; i < e; i++)
				rcs[i] = RUSK_EAGAIN; /* not sent */
		} else {
			uint64_t t0 = mono(c);
			int rc = cn->bk.ops->commit(cn->bk.self, p, cl + k, e - k, rcs + k,
			                            rl + (cl[k].rus - s));
			note_part(rm, cn, p, rc == RUSK_OK);
			if (rc == RUSK_EAGAIN) { /* p unavailable: nothing sent (the note on top) */
				for (size_t i = k; i < e; i++)
					rcs[i] = UNAVAIL;
				refused = true;
				k = e;
				continue;
			}
			rusk_hist_record(&cn->rtt, mono(c) - t0); /* its thread: the one writer */
			count(&rm->commit_trips, 1);
			count(&rm->claims, e - k);
			if (rc != RUSK_OK) {
				for (size_t i = k; i < e; i++)
					rcs[i] = RUSK_EIO;
			}
			bool eio = false;
			for (size_t i = k; i < e; i++) {
				refused |= rcs[i] != RUSK_OK;
				/* RUSK_ECORRUPT: the state is damaged (nothing written): an error,
				 * not a conflict, so that its message is kept and shown. */
				eio |= rcs[i] == RUSK_EIO || rcs[i] == RUSK_ECORRUPT;
				count(&rm->claims_lost, rcs[i] != RUSK_OK && rcs[i] != RUSK_EIO &&
				                                rcs[i] != RUSK_ECORRUPT &&
				                                rcs[i] != RUSK_ESHORT_);
				count(&rm->claims_short, rcs[i] == RUSK_ESHORT_);
				count(&rm->claims_unknown, rcs[i] == RUSK_EIO);
				count(&rm->corrupt, rcs[i] == RUSK_ECORRUPT);
			}
			if (eio)
				note_error(rm, cn, "commit");
		}
		k = e;
	}
	/* What was refused is not free in the view; what was granted is recorded. */
	uint32_t n_won = 0, n_lost = 0;
	size_t n_back = 0;
	for (size_t i = 0; i < ncl; i++) {
		uint32_t off = (uint32_t)(cl[i].rus - s);
		if (rcs[i] == RUSK_OK) {
			for (uint32_t k = 0; k < cl[i].n; k++) {
				won[n_won++] = s[off + k];
				/* Pairs with the releasing thread's load through the task's
				 * hand-off (remote.h "Remote generations"). */
				rusk_store32(&rm->rgen[s[off + k]], rl[off + k].gen, RUSK_RELAXED);
			}
			continue;
		}
		if (rcs[i] == RUSK_EAGAIN)
			continue; /* a gang's claim not sent: nothing known of it */
		/* an outage, an unavailable node, a corrupt state or shares short is no conflict */
		n_lost += rcs[i] != RUSK_EIO && rcs[i] != RUSK_ECORRUPT && rcs[i] != RUSK_ESHORT_ &&
		                          rcs[i] != UNAVAIL
		                  ? cl[i].n
		                  : 0;
		for (uint32_t k = 0; k < cl[i].n; k++)
			rusk_view_mark_taken_(a->v, s[off + k]);
		if (vec && a->n_vskip < sizeof a->vskip / sizeof a->vskip[0])
			a->vskip[a->n_vskip++] = cl[i].machine;
		if (rcs[i] == RUSK_ESHORT_) { /* skipped beyond this place() (decision.h) */
			pl->memory_short++;
			rusk_mshort_note_(a, cl[i].machine, t);
		}
	}
	if (n_lost > 0) {
		/* Counted as the local commit counts: a gang or vector commit once, an
		 * incremental one per RU. */
		pl->conflicts += t->gang || vec ? 1 : n_lost;
		pl->commits_lost++;
	}
	if (t->gang && refused && n_won > 0) {
		/* All or nothing: the partitions granted before the refusal are given back. */
		for (uint32_t i = 0; i < n_won; i++)
			back[n_back++] = (rusk_bk_lease){
			        owner_of(rm, t->id),
			        {won[i], rusk_load32(&rm->rgen[won[i]], RUSK_RELAXED)}};
		release_remote(rm, cn, back, n_back);
		count(&rm->rollbacks, 1);
		n_won = 0;
	}
	uint32_t got = n_won > 0 ? rusk_commit_local_(a, t, won, n_won, leases, pl, prof) : 0;
	if (got > 0)
		note_won(rm, 1);
	if (RUSK_UNLIKELY(got < n_won)) {
		/* The local mirror refused part (remote.h): give that part back remotely. */
		n_back = 0;
		for (uint32_t i = 0; i < n_won; i++) {
			bool kept = false;
			for (uint32_t k = 0; k < got && !kept; k++)
				kept = leases[k].ru == won[i];
			if (!kept)
				back[n_back++] = (rusk_bk_lease){
				        owner_of(rm, t->id),
				        {won[i], rusk_load32(&rm->rgen[won[i]], RUSK_RELAXED)}};
		}
		count(&rm->local_refused, n_back);
		release_remote(rm, cn, back, n_back);
	}
	if (mem != small)
		free(mem);
	return got;
}

/* The remote twins of leases[0..n) of task (their generations read before anything is
 * released: rgen[ru] cannot change while the remote still holds ru for this task). */
static rusk_bk_lease *twins(rusk_remote *rm, uint64_t task, const rusk_lease *leases, size_t n,
                            rusk_bk_lease *small, size_t cap)
{
	rusk_bk_lease *bl = n <= cap ? small : malloc(n * sizeof *bl);
	for (size_t i = 0; bl != NULL && i < n; i++) {
		uint32_t ru = leases[i].ru < rm->c->n_rus ? leases[i].ru : 0;
		/* Pairs with the committing thread's store (remote.h "Remote generations"). */
		bl[i] = (rusk_bk_lease){owner_of(rm, task),
		                        {leases[i].ru, rusk_load32(&rm->rgen[ru], RUSK_RELAXED)}};
	}
	return bl;
}

int rusk_remote_release_(rusk_cluster *c, uint64_t task, const rusk_lease *leases, size_t n,
                         size_t *n_rejected)
{
	if (n > 0 && leases == NULL)
		return RUSK_EINVAL;
	rusk_remote *rm = c->remote;
	rusk_bk_lease small[16];
	rusk_bk_lease *bl = twins(rm, task, leases, n, small, 16);
	int first = RUSK_OK;
	size_t rejected = 0, m = 0;
	for (size_t i = 0; i < n; i++) {
		/* Locally first (remote.h: the local holders stay a subset of the remote's). */
		int rc = rusk_ru_release(c, task, leases[i]);
		if (rc != RUSK_OK) {
			rejected++;
			if (first == RUSK_OK)
				first = rc;
		} else if (bl != NULL) {
			bl[m++] = bl[i]; /* only what this task held locally goes remotely */
		}
	}
	conn *cn = NULL;
	if (bl == NULL)
		count(&rm->errors, n - rejected); /* out of memory: held remotely (recount) */
	else if (m > 0 && (cn = conn_get(rm)) != NULL && cn->defer && defer_release(cn, bl, m))
		; /* B2: freed locally above, remotely at the thread's next flush */
	else
		release_remote(rm, cn, bl, m);
	if (RUSK_UNLIKELY(rusk_load64(&rm->n_later, RUSK_RELAXED) > 0) &&
	    (cn != NULL || (cn = conn_get(rm)) != NULL))
		retry_later(rm, cn, false); /* the releases put off, when due */
	if (bl != small)
		free(bl);
	if (n_rejected != NULL)
		*n_rejected = rejected;
	return first;
}

void rusk_remote_unheld_(rusk_cluster *c, uint64_t task, const rusk_lease *leases, size_t n)
{
	rusk_remote *rm = c->remote;
	rusk_bk_lease small[16];
	rusk_bk_lease *bl = twins(rm, task, leases, n, small, 16);
	if (bl == NULL) {
		count(&rm->errors, n);
		return;
	}
	release_remote(rm, NULL, bl, n);
	if (bl != small)
		free(bl);
}

/* ---- batches (remote.h "Batches") ------------------------------------------------------- */

/* A claim of a batch: its item, and its place in the batch's sorted RUs (and leases). */
typedef struct bclaim {
	uint32_t part, item, off;
	uint32_t k; /* its index in the batch's claims: the tie-break that keeps item order */
} bclaim;

static int cmp_bclaim(const void *x, const void *y)
{
	const bclaim *a = x, *b = y;
	if (a->part != b->part)
		return (a->part > b->part) - (a->part < b->part);
	return (a->k > b->k) - (a->k < b->k);
}

void rusk_remote_commit_many_(rusk_agent *a, rusk_remote_item *items, size_t n)
{
	rusk_cluster *c = a->c;
	rusk_remote *rm = c->remote;
	for (size_t i = 0; i < n; i++)
		items[i].won = 0;
	conn *cn = conn_get(rm);
	if (cn == NULL || n == 0)
		return;     /* nothing taken: the dispatcher queues them again */
	if (cn->n_pend > 0) /* B1: this thread's releases go first */
		flush(rm, cn);
	retry_later(rm, cn, false); /* the releases put off, when due */
	size_t N = 0;
	for (size_t i = 0; i < n; i++)
		N += items[i].n;
	/* Scratch, N RUs: the sorted RUs, the claims (at most one per RU) in batch order and
	 * sorted by partition, one call's claims, their answers, the remote leases in batch
	 * order and one call's, the granted RUs, the leases to give back. */
	size_t need = N * (sizeof(uint32_t) * 2 + sizeof(rusk_bk_claim) * 2 + sizeof(bclaim) +
	                   sizeof(int) * 2 + sizeof(rusk_lease) * 2 + sizeof(rusk_bk_lease));
	unsigned char *mem = malloc(need);
	if (mem == NULL) {
		count(&rm->errors, 1);
		return;
	}
	rusk_bk_claim *cl = (rusk_bk_claim *)(void *)mem, *call = cl + N;
	rusk_bk_lease *back = (rusk_bk_lease *)(void *)(call + N);
	rusk_lease *rl = (rusk_lease *)(void *)(back + N), *rlc = rl + N;
	bclaim *bc = (bclaim *)(void *)(rlc + N);
	uint32_t *s = (uint32_t *)(void *)(bc + N), *won = s + N;
	int *rcs = (int *)(void *)(won + N), *rcc = rcs + N;
	/* Claims: per item its sorted RUs, one claim per machine (item order); the claims of
	 * item i are [range[i], range[i + 1]). */
	size_t ncl = 0, off = 0;
	size_t *range = malloc((n + 1) * sizeof *range);
	if (range == NULL) {
		free(mem);
		count(&rm->errors, 1);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		rusk_remote_item *it = &items[i];
		uint32_t *si = s + off;
		memcpy(si, it->rus, sizeof *si * it->n);
		if (it->n > 1)
			qsort(si, it->n, sizeof *si, cmp_u32);
		range[i] = ncl;
		for (uint32_t k = 0; k < it->n; k++) {
			uint32_t m = c->ru_machine[si[k]];
			if (ncl > range[i] && cl[ncl - 1].machine == m) {
				cl[ncl - 1].n++;
				continue;
			}
			bc[ncl] = (bclaim){c->machines[m].partition, (uint32_t)i,
			                   (uint32_t)(off + k), (uint32_t)ncl};
			cl[ncl++] = (rusk_bk_claim){owner_of(rm, it->t->id), m, 1, si + k, {0}};
		}
		off += it->n;
	}
	range[n] = ncl;
	/* One call per partition, over every item's claims there. */
	qsort(bc, ncl, sizeof *bc, cmp_bclaim);
	for (size_t k = 0; k < ncl;) {
		size_t e = k + 1;
		while (e < ncl && bc[e].part == bc[k].part)
			e++;
		for (size_t i = k; i < e; i++)
			call[i - k] = cl[bc[i].k];
		uint64_t c0 = mono(c);
		int rc = cn->bk.ops->commit(cn->bk.self, bc[k].part, call, e - k, rcc, rlc);
		note_part(rm, cn, bc[k].part, rc == RUSK_OK);
		if (rc == RUSK_EAGAIN) { /* unavailable: nothing sent (the note on top) */
			for (size_t i = k; i < e; i++)
				rcs[bc[i].k] = UNAVAIL;
			k = e;
			continue;
		}
		rusk_hist_record(&cn->rtt, mono(c) - c0); /* its thread: the one writer */
		count(&rm->commit_trips, 1);
		count(&rm->claims, e - k);
		bool eio = rc != RUSK_OK;
		uint32_t o = 0;
		for (size_t i = k; i < e; i++) {
			uint32_t ci = bc[i].k;
			rcs[ci] = rc != RUSK_OK ? RUSK_EIO : rcc[i - k];
			eio |= rcs[ci] == RUSK_EIO || rcs[ci] == RUSK_ECORRUPT;
			count(&rm->claims_lost, rcs[ci] != RUSK_OK && rcs[ci] != RUSK_EIO &&
			                                rcs[ci] != RUSK_ECORRUPT &&
			                                rcs[ci] != RUSK_ESHORT_);
			count(&rm->claims_short, rcs[ci] == RUSK_ESHORT_);
			count(&rm->claims_unknown, rcs[ci] == RUSK_EIO);
			count(&rm->corrupt, rcs[ci] == RUSK_ECORRUPT);
			if (rcs[ci] == RUSK_OK)
				memcpy(rl + bc[i].off, rlc + o, sizeof *rl * cl[ci].n);
			o += cl[ci].n;
		}
		if (eio)
			note_error(rm, cn, "commit");
		k = e;
	}
	count(&rm->batches, 1);
	count(&rm->batch_tasks, n);
	/* Per item, in order: generations kept, refusals marked and counted, gangs with a
	 * refused part given back (all of them in one release below), the rest committed
	 * locally. */
	size_t n_back = 0;
	uint64_t placed = 0;
	off = 0;
	for (size_t i = 0; i < n; i++) {
		rusk_remote_item *it = &items[i];
		const rusk_task *t = it->t;
		uint32_t n_won = 0, n_lost = 0, n_bad = 0, *wi = won + off;
		for (size_t q = range[i]; q < range[i + 1]; q++) {
			uint32_t o = (uint32_t)(cl[q].rus - s);
			if (rcs[q] == RUSK_OK) {
				for (uint32_t k = 0; k < cl[q].n; k++) {
					wi[n_won++] = s[o + k];
					/* Pairs with the releasing thread's load through the
					 * task's hand-off (remote.h "Remote generations"). */
					rusk_store32(&rm->rgen[s[o + k]], rl[o + k].gen,
					             RUSK_RELAXED);
				}
				continue;
			}
			n_bad += cl[q].n;
			/* an outage, an unavailable node, a corrupt state or shares short is no
			 * conflict */
			n_lost += rcs[q] != RUSK_EIO && rcs[q] != RUSK_ECORRUPT &&
			                          rcs[q] != RUSK_ESHORT_ && rcs[q] != UNAVAIL
			                  ? cl[q].n
			                  : 0;
			if (rcs[q] == RUSK_ESHORT_) {
				it->pl->memory_short++;
				rusk_mshort_note_(a, cl[q].machine, t);
			}
			for (uint32_t k = 0; k < cl[q].n; k++)
				rusk_view_mark_taken_(a->v, s[o + k]);
		}
		if (n_lost > 0) {
			/* Counted as the local commit counts: a gang once, an incremental task
			 * per RU. */
			it->pl->conflicts += t->gang ? 1 : n_lost;
			it->pl->commits_lost++;
		}
		if (t->gang && n_bad > 0 && n_won > 0) {
			/* All or nothing: what the other partitions granted goes back, and is
			 * free again in the view (the decision had marked it taken). */
			for (uint32_t k = 0; k < n_won; k++) {
				back[n_back++] = (rusk_bk_lease){
				        owner_of(rm, t->id),
				        {wi[k], rusk_load32(&rm->rgen[wi[k]], RUSK_RELAXED)}};
				rusk_view_mark_free(a->v, wi[k]);
			}
			count(&rm->rollbacks, 1);
			n_won = 0;
		}
		const rusk_profile *prof =
		        a->p.quality == RUSK_QUALITY_INTERFERENCE ? &t->profile : NULL;
		uint32_t got =
		        n_won > 0 ? rusk_commit_local_(a, t, wi, n_won, it->leases, it->pl, prof)
		                  : 0;
		if (RUSK_UNLIKELY(got < n_won)) {
			/* The local mirror refused part (remote.h): that part goes back. */
			for (uint32_t q = 0; q < n_won; q++) {
				bool kept = false;
				for (uint32_t k = 0; k < got && !kept; k++)
					kept = it->leases[k].ru == wi[q];
				if (!kept) {
					back[n_back++] = (rusk_bk_lease){
					        owner_of(rm, t->id),
					        {wi[q],
					         rusk_load32(&rm->rgen[wi[q]], RUSK_RELAXED)}};
					count(&rm->local_refused, 1);
				}
			}
		}
		it->won = got;
		placed += got > 0;
		off += it->n;
	}
	if (placed > 0)
		note_won(rm, placed);
	release_remote(rm, cn, back, n_back);
	free(range);
	free(mem);
}
