/* SPDX-License-Identifier: MIT */
/*
 * Opens a backend by name (open.h). The Redis shape is read from the cluster through the
 * public queries (rusk_cluster_partition, rusk_cluster_machine), so the remote state is
 * laid out exactly as the in-memory one: same partitions, machines, RU numbers. Attaching
 * (rusk_state_attach_) hands the kernel an opener (kernel/backend.h) that opens one such
 * connection per thread, without init, on the thread's first use.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "state/open.h"

int rusk_state_have_redis_(void)
{
#ifdef RUSK_HAVE_REDIS
	return 1;
#else
	return 0;
#endif
}

#ifdef RUSK_HAVE_REDIS
/* Opens spec for c's shape (rusk_redis_open_within_: stop and bound_ns, as there). */
static int open_redis(const char *spec, rusk_cluster *c, int init, int (*stop)(void *),
                      void *stop_arg, uint64_t bound_ns, rusk_state *out, char *err, size_t errlen)
{
	uint32_t np = rusk_cluster_partitions(c), nm = rusk_cluster_machines(c);
	uint32_t *buf = calloc((size_t)4 * np + (size_t)5 * nm, sizeof *buf);
	if (buf == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	uint32_t *pf = buf, *pn = pf + np, *pfm = pn + np, *pnm = pfm + np;
	uint32_t *mf = pnm + np, *mn = mf + nm, *mm = mn + nm, *mg = mm + nm, *mp = mg + nm;
	for (uint32_t p = 0; p < np; p++) {
		rusk_partition_info pi;
		rusk_cluster_partition(c, p, &pi);
		pf[p] = pi.first_ru;
		pn[p] = pi.rus;
		pfm[p] = pi.first_machine;
		pnm[p] = pi.machines;
	}
	for (uint32_t m = 0; m < nm; m++) {
		rusk_machine_info mi;
		rusk_cluster_machine(c, m, &mi);
		mf[m] = mi.first_ru;
		mn[m] = mi.rus;
		mm[m] = mi.mem_mib;
		mg[m] = mi.gpus;
		mp[m] = mi.platform;
	}
	rusk_redis_shape sh = {np, nm, pf, pn, pfm, pnm, mf, mn, mm, mg, mp};
	int rc = rusk_redis_open_within_(spec, &sh, init, stop, stop_arg, bound_ns, &out->redis,
	                                 err, errlen);
	free(buf);
	if (rc == RUSK_OK)
		rusk_redis_backend_(out->redis, &out->bk);
	return rc;
}
#endif

#ifdef RUSK_HAVE_REDIS
/* The opener of an attached remote (rusk_state_attach_): its spec and cluster. */
typedef struct attach_arg {
	rusk_cluster *c;
	rusk_state_opts opts;
	char spec[];
} attach_arg;

static int conn_open(void *arg, rusk_backend *out, void **handle, char *err, size_t errlen)
{
	attach_arg *aa = arg;
	rusk_state *s = calloc(1, sizeof *s);
	if (s == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	int rc = open_redis(aa->spec, aa->c, 0, NULL, NULL, 0, s, err, errlen);
	if (rc != RUSK_OK) {
		free(s);
		return rc;
	}
	if (aa->opts.wait_replicas > 0)
		rusk_redis_set_wait_(s->redis, aa->opts.wait_replicas, aa->opts.wait_ms);
	rusk_redis_set_stop_(s->redis, aa->opts.stop, aa->opts.stop_arg);
	if (aa->opts.unavail_ms > 0) /* a stuck master skipped (kernel/remote.h) */
		rusk_redis_set_unavailable_ms_(s->redis, aa->opts.unavail_ms);
	*out = s->bk;
	*handle = s;
	return RUSK_OK;
}

static void conn_close(void *arg, void *handle)
{
	(void)arg;
	rusk_state_close_(handle);
	free(handle);
}

static const char *conn_error(void *arg, void *handle)
{
	(void)arg;
	return rusk_redis_last_error_(((rusk_state *)handle)->redis);
}

/* The opener's link: rusk_redis_stats_'s relaxed loads (any thread, kernel/backend.h). */
static void conn_link(void *arg, void *handle, rusk_remote_link *out)
{
	(void)arg;
	rusk_redis_stats s = rusk_redis_stats_(((rusk_state *)handle)->redis);
	*out = (rusk_remote_link){.reconnects = s.reconnects,
	                          .redirects = s.redirects,
	                          .resent = s.resent,
	                          .outage_ns = s.outage_ns};
}
#endif

int rusk_state_attach_(const char *spec, rusk_cluster *c, const rusk_state_opts *opts, char *err,
                       size_t errlen)
{
	char shown[512]; /* spec as messages show it: its password masked */
	rusk_redis_mask_url_(spec != NULL ? spec : "(none)", shown, sizeof shown);
	if (spec == NULL || c == NULL || strncmp(spec, "redis://", 8) != 0)
		return rusk_errf(err, errlen, RUSK_EINVAL, "--backend %s: not redis://HOST:PORT",
		                 shown);
	if (opts != NULL && opts->wait_replicas > 0 && opts->wait_ms <= 0)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "--backend %s: WAIT %d with timeout %d ms", shown,
		                 opts->wait_replicas, opts->wait_ms);
#ifdef RUSK_HAVE_REDIS
	size_t n = strlen(spec) + 1;
	attach_arg *aa = malloc(sizeof *aa + n);
	if (aa == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	aa->c = c;
	aa->opts = opts != NULL ? *opts : (rusk_state_opts){0};
	memcpy(aa->spec, spec, n);
	rusk_remote_opener op = {conn_open, conn_close, conn_error, free, aa, conn_link};
	int rc = rusk_remote_attach_(c, &op, err, errlen);
	if (rc != RUSK_OK)
		free(aa);
	return rc;
#else
	return rusk_errf(err, errlen, RUSK_EINVAL,
	                 "--backend %s: this rusk was built without Redis support "
	                 "(RUSK_WITH_REDIS=OFF, or libhiredis-dev missing)",
	                 shown);
#endif
}

/* rusk_state_open_, its Redis open bounded (open_redis). */
static int open_spec(const char *spec, rusk_cluster *c, int init, int (*stop)(void *),
                     void *stop_arg, uint64_t bound_ns, rusk_state *out, char *err, size_t errlen)
{
	if (spec == NULL || c == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "no backend");
	memset(out, 0, sizeof *out);
	char shown[512]; /* spec as messages show it: its password masked */
	rusk_redis_mask_url_(spec, shown, sizeof shown);
	if (strcmp(spec, "memory") == 0)
		return rusk_backend_memory_(c, &out->bk);
	if (strncmp(spec, "redis://", 8) == 0) {
#ifdef RUSK_HAVE_REDIS
		return open_redis(spec, c, init, stop, stop_arg, bound_ns, out, err, errlen);
#else
		(void)init, (void)stop, (void)stop_arg, (void)bound_ns;
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "--backend %s: this rusk was built without Redis support "
		                 "(RUSK_WITH_REDIS=OFF, or libhiredis-dev missing)",
		                 shown);
#endif
	}
	return rusk_errf(err, errlen, RUSK_EINVAL,
	                 "--backend '%s' is neither 'memory' nor redis://HOST:PORT[,HOST:PORT...]",
	                 shown);
}

int rusk_state_open_(const char *spec, rusk_cluster *c, int init, rusk_state *out, char *err,
                     size_t errlen)
{
	return open_spec(spec, c, init, NULL, NULL, 0, out, err, errlen);
}

int rusk_state_open_within_(const char *spec, rusk_cluster *c, int init, int (*stop)(void *),
                            void *stop_arg, uint64_t bound_ns, rusk_state *out, char *err,
                            size_t errlen)
{
	return open_spec(spec, c, init, stop, stop_arg, bound_ns, out, err, errlen);
}

/* " (stopped after S s of waiting for a seed to answer)" appended to err. */
static void say_stopped(double s, char *err, size_t errlen)
{
	size_t u = err != NULL ? strnlen(err, errlen) : errlen;
	if (u + 1 < errlen)
		snprintf(err + u, errlen - u,
		         " (stopped after %.1f s of waiting for a seed to answer)", s);
}

int rusk_state_open_wait_(const char *spec, rusk_cluster *c, int init, int failover_ms,
                          int (*stop)(void *), void *stop_arg, rusk_state *out, char *err,
                          size_t errlen)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* One bound for every try and for the calls after (the caller lifts it): each try's
	 * reads end by it (a 3 s bound ended at 4.0 s, each try waiting a 2 s read per seed),
	 * and a stop is heard while a read waits (with every seed paused, up to 4 s late). */
	uint64_t bound = (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec +
	                 (uint64_t)(failover_ms > 0 ? failover_ms : 1) * 1000000u;
	for (;;) {
		int rc = open_spec(spec, c, init, stop, stop_arg, bound, out, err, errlen);
		if (rc == RUSK_ESTOPPED) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			say_stopped((double)(now.tv_sec - t0.tv_sec) +
			                    (double)(now.tv_nsec - t0.tv_nsec) * 1e-9,
			            err, errlen);
		}
		if (rc != RUSK_EAGAIN)
			return rc;
		/* No seed answered in time: wait, 100 ms slices, a stop heard in each. */
		for (int k = 0;; k++) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			double s = (double)(now.tv_sec - t0.tv_sec) +
			           (double)(now.tv_nsec - t0.tv_nsec) * 1e-9;
			if (stop != NULL && stop(stop_arg)) {
				say_stopped(s, err, errlen);
				return RUSK_ESTOPPED;
			}
			if (s * 1e3 >= (double)failover_ms) {
#ifdef RUSK_HAVE_REDIS
				rusk_redis_outage_say_(s, err, errlen);
#endif
				return RUSK_EAGAIN;
			}
			if (k == 1)
				break; /* 100 ms after the failed try: once more */
			struct timespec ts = {0, 100000000};
			nanosleep(&ts, NULL); /* a signal returns it at once */
		}
	}
}

int rusk_state_check_wait_(rusk_state *s, const char *spec, uint32_t wait, char *err, size_t errlen)
{
	if (s == NULL || s->redis == NULL || wait == 0)
		return RUSK_OK;
	/* More replicas than a shard has: every WAIT there would wait out its timeout. */
	int have = rusk_redis_min_replicas_(s->redis);
	if (have >= 0 && wait > (uint32_t)have)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "--wait %u: the cluster at %s has a shard with %d replica%s (WAIT "
		                 "%u would wait out --wait-ms on every commit there)",
		                 wait, spec, have, have == 1 ? "" : "s", wait);
	return RUSK_OK;
}

/* The init guard's last check: an init of a live process of this host under way (its mark,
 * rusk_redis_init_mark_: "pid P on HOST since ..."): RUSK_EBUSY naming it; two inits at once
 * would leave a state of both. A mark of a process that has ended, or of another host (whose
 * processes cannot be asked), lets the init go on: it writes the state whole again. */
static int init_live_guard(rusk_state *s, const char *spec, const char *hint, char *err,
                           size_t errlen)
{
	char who[192], host[64], self[64] = "?";
	long pid = 0;
	int rc = rusk_redis_init_mark_(s->redis, who, sizeof who);
	if (rc != RUSK_OK)
		return rusk_errf(err, errlen, rc,
		                 "--backend %s: cannot tell whether an init is writing the state "
		                 "there: %s",
		                 spec, rusk_redis_last_error_(s->redis));
	if (who[0] == '\0' || sscanf(who, "pid %ld on %63s since", &pid, host) != 2 || pid <= 0)
		return RUSK_OK;
	if (gethostname(self, sizeof self) != 0)
		snprintf(self, sizeof self, "?");
	self[sizeof self - 1] = '\0';
	if (strcmp(host, self) != 0 || pid == (long)getpid() ||
	    (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
		return RUSK_OK;
	return rusk_errf(err, errlen, RUSK_EBUSY,
	                 "--backend %s: an init (%s, live) is writing the state: writing it "
	                 "beside that one would leave a state of both; wait for it to end; %s",
	                 spec, who, hint);
}

int rusk_state_init_guard_(rusk_state *s, const char *spec, int self, const char *hint, char *err,
                           size_t errlen)
{
	if (s == NULL || s->redis == NULL)
		return RUSK_OK; /* memory: every process has its own */
	uint8_t live[RUSK_REDIS_AGENTS];
	uint32_t n_agents = 0, n_runs = 0;
	int rc = rusk_redis_live_agents_(s->redis, live, &n_agents);
	if (rc == RUSK_OK)
		rc = rusk_redis_live_runs_(s->redis, &n_runs);
	if (rc != RUSK_OK)
		return rusk_errf(err, errlen, rc,
		                 "--backend %s: cannot tell whether live processes use the state "
		                 "there: %s",
		                 spec, rusk_redis_last_error_(s->redis));
	if (self >= 0 && self < RUSK_REDIS_AGENTS && live[self]) {
		live[self] = 0;
		n_agents--;
	}
	if (n_agents == 0 && n_runs == 0)
		return init_live_guard(s, spec, hint, err, errlen);
	char ids[200] = "";
	size_t u = 0;
	for (uint32_t i = 0, k = 0; i < RUSK_REDIS_AGENTS && u + 16 < sizeof ids; i++)
		if (live[i])
			u += (size_t)snprintf(ids + u, sizeof ids - u, "%s%u", k++ ? ", " : "", i);
	char who[320];
	if (n_agents > 0 && n_runs > 0)
		snprintf(who, sizeof who,
		         "%u live rusk agent%s (--agent-id %s) and %u live rusk run%s use",
		         n_agents, n_agents == 1 ? "" : "s", ids, n_runs, n_runs == 1 ? "" : "s");
	else if (n_agents > 0)
		snprintf(who, sizeof who, "%u live rusk agent%s (--agent-id %s) use%s", n_agents,
		         n_agents == 1 ? "" : "s", ids, n_agents == 1 ? "s" : "");
	else
		snprintf(who, sizeof who, "%u live rusk run%s use%s", n_runs,
		         n_runs == 1 ? "" : "s", n_runs == 1 ? "s" : "");
	return rusk_errf(err, errlen, RUSK_EBUSY,
	                 "--backend %s: %s this state (leases under rusk:{meta}): writing "
	                 "the empty state would take their RUs from under them; %s",
	                 spec, who, hint);
}

void rusk_state_close_(rusk_state *s)
{
	if (s == NULL)
		return;
#ifdef RUSK_HAVE_REDIS
	rusk_redis_close_(s->redis);
#endif
	s->redis = NULL;
}

#ifndef RUSK_HAVE_REDIS
/* Without RUSK_WITH_REDIS no rusk_redis exists (rusk_state_open_ refuses redis://): the
 * queries the tool makes on one answer as for a NULL connection. */
int rusk_redis_init_mark_(rusk_redis *r, char *who, size_t len)
{
	(void)r;
	if (who != NULL && len > 0)
		who[0] = '\0';
	return RUSK_EINVAL;
}
int rusk_redis_init_unfinished_(rusk_redis *r, char *err, size_t errlen)
{
	(void)r;
	return rusk_errf(err, errlen, RUSK_EINVAL, "no connection");
}
int rusk_redis_owners_(rusk_redis *r, uint32_t p, uint32_t *rus, uint64_t *owners, uint32_t *gens,
                       size_t cap, size_t *n)
{
	(void)r, (void)p, (void)rus, (void)owners, (void)gens, (void)cap, (void)n;
	return RUSK_EINVAL;
}
rusk_redis_stats rusk_redis_stats_(const rusk_redis *r)
{
	(void)r;
	return (rusk_redis_stats){0};
}
const char *rusk_redis_last_error_(const rusk_redis *r)
{
	(void)r;
	return "no connection";
}
const char *rusk_redis_auth_failed_(const rusk_redis *r)
{
	(void)r;
	return NULL;
}
void rusk_redis_set_wait_(rusk_redis *r, int replicas, int timeout_ms)
{
	(void)r, (void)replicas, (void)timeout_ms;
}
int rusk_redis_outage_(const rusk_redis *r, char *err, size_t errlen)
{
	(void)r, (void)err, (void)errlen;
	return 0;
}
void rusk_redis_set_failover_ms_(rusk_redis *r, int ms)
{
	(void)r, (void)ms;
}
void rusk_redis_set_deadline_(rusk_redis *r, uint64_t deadline_ns)
{
	(void)r, (void)deadline_ns;
}
void rusk_redis_set_bound_(rusk_redis *r, uint64_t bound_ns)
{
	(void)r, (void)bound_ns;
}
void rusk_redis_set_stop_(rusk_redis *r, int (*stop)(void *), void *arg)
{
	(void)r, (void)stop, (void)arg;
}
int rusk_redis_lease_claim_(rusk_redis *r, uint32_t agent, const char *token, uint32_t ttl_ms,
                            char *holder, size_t holderlen, int64_t *left_ms)
{
	(void)r, (void)agent, (void)token, (void)ttl_ms, (void)holder, (void)holderlen,
	        (void)left_ms;
	return RUSK_EINVAL;
}
int rusk_redis_lease_renew_(rusk_redis *r, uint32_t agent, const char *token, uint32_t ttl_ms,
                            int *lapsed, uint64_t *epoch)
{
	(void)r, (void)agent, (void)token, (void)ttl_ms, (void)lapsed, (void)epoch;
	return RUSK_EINVAL;
}
int rusk_redis_lease_drop_(rusk_redis *r, uint32_t agent, const char *token)
{
	(void)r, (void)agent, (void)token;
	return RUSK_EINVAL;
}
int rusk_redis_live_agents_(rusk_redis *r, uint8_t live[RUSK_REDIS_AGENTS], uint32_t *n)
{
	(void)r, (void)live, (void)n;
	return RUSK_EINVAL;
}
int rusk_redis_run_lease_(rusk_redis *r, uint64_t ns, uint32_t ttl_ms)
{
	(void)r, (void)ns, (void)ttl_ms;
	return RUSK_EINVAL;
}
int rusk_redis_live_runs_(rusk_redis *r, uint32_t *n)
{
	(void)r, (void)n;
	return RUSK_EINVAL;
}
int rusk_redis_epoch_(rusk_redis *r, uint64_t *epoch)
{
	(void)r, (void)epoch;
	return RUSK_EINVAL;
}
int rusk_redis_state_write_(rusk_redis *r, char *err, size_t errlen)
{
	(void)r;
	return rusk_errf(err, errlen, RUSK_EINVAL, "no Redis in this build");
}
bool rusk_redis_state_lost_(const rusk_redis *r)
{
	(void)r;
	return false;
}
const char *rusk_redis_init_unreplicated_(const rusk_redis *r)
{
	(void)r;
	return NULL;
}
int rusk_redis_state_check_(rusk_redis *r, char *err, size_t errlen)
{
	(void)r;
	return rusk_errf(err, errlen, RUSK_EINVAL, "no Redis in this build");
}
void rusk_redis_set_flags_(rusk_redis *r, const char *flags)
{
	(void)r, (void)flags;
}
int rusk_redis_lease_alive_(rusk_redis *r, uint32_t agent, int *alive)
{
	(void)r, (void)agent, (void)alive;
	return RUSK_EINVAL;
}
int rusk_redis_run_ns_(rusk_redis *r, uint64_t *ns)
{
	(void)r, (void)ns;
	return RUSK_EINVAL;
}
int rusk_redis_min_replicas_(rusk_redis *r)
{
	(void)r;
	return -1;
}
int rusk_redis_reclaim_dead_(rusk_redis *r, const char *token, int keep_agent, uint64_t keep_ns,
                             rusk_redis_reclaim *out)
{
	(void)r, (void)token, (void)keep_agent, (void)keep_ns, (void)out;
	return RUSK_EINVAL;
}
int rusk_redis_live_run_ns_(rusk_redis *r, uint64_t *ns, uint32_t cap, uint32_t *n)
{
	(void)r, (void)ns, (void)cap, (void)n;
	return RUSK_EINVAL;
}
int rusk_redis_lease_holder_(rusk_redis *r, uint32_t agent, int *alive, char *holder,
                             size_t holderlen, int64_t *left_ms)
{
	(void)r, (void)agent, (void)alive, (void)holder, (void)holderlen, (void)left_ms;
	return RUSK_EINVAL;
}
#endif
