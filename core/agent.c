/* SPDX-License-Identifier: MIT */
/*
 * Scheduling agents: their lifecycle, the commit/retry loop of rusk_agent_place, releases
 * and the checks of a task (ParSync §5.2; Tarcil §3.3). Where a decision samples and how it
 * ranks candidates is choose.c; the central and global-lock baselines are central.c.
 *
 * An agent owns a local view of the cluster (view.c) that its policy syncs, and decides on
 * it optimistically: choose (choose.c), then commit to the master array by compare-and-swap
 * (ru.c). A commit that loses marks the RU taken in the view (ParSync §5.2) and the agent
 * samples again, up to max_retries times; then it returns RUSK_EAGAIN holding nothing and
 * the caller re-queues the task with its original submission time. No task is lost.
 *
 * Invariants:
 *  - An RU is held (won but not yet handed out) only inside rusk_agent_place: place() ends
 *    in rusk_agent_finish_, which publishes every held lease on success and gives every one
 *    back otherwise; a gang task is placed whole or not at all.
 *  - Every RU a commit took or lost is marked taken in the view, so a retry never draws it
 *    again from stale data.
 *  - Leases on machines that failed or drained while place() was deciding are never handed
 *    out (keep_up): the failure callback can then only name leases place() returned.
 *  - A task is checked once, on entry, by one pass of compares (check_task); what is wrong
 *    and which field is worked out only on failure (task_problem). A task with held RUs
 *    leaves the fast path by one compare (n_held) and is checked in full by task_problem.
 *  - Placement kinds hold in every commit mode (issue 26): an incremental task's retries
 *    within place() look for what it still lacks only beside what it holds and won so far
 *    (rusk_dctx_beside_: its machine or rack, or other machines for spread), as a later
 *    call listing them in rusk_task.held does. A task is never split by a retry.
 *  - An agent is used by one thread at a time; the hot path takes no lock unless the agent
 *    is one of the serialised baselines (central.c).
 */
#include <alloca.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "atomic.h"

RUSK_EXPORT void rusk_agent_params_init(rusk_agent_params *ap, const rusk_sync_params *p,
                                        uint32_t index)
{
	if (ap == NULL)
		return;
	memset(ap, 0, sizeof *ap);
	ap->index = index;
	if (p != NULL)
		ap->sync = *p;
	ap->strategy = RUSK_STRATEGY_LATENCY;
	ap->quality = RUSK_QUALITY_SCORE;
	ap->sample = 0;
	ap->eps = 0.05;
	ap->target = 0.8;
	ap->r_max = 32;
	ap->max_retries = 8;
	ap->tau_ns = 1000000000ull;
	ap->ema_alpha = 0.1;
	ap->seed = 1;
	ap->latency_preferred = true;
}

static const char *strategy_names[] = {"latency", "quality", "adaptive", "random", "central"};

RUSK_EXPORT int rusk_strategy_parse(const char *name, rusk_strategy *out)
{
	for (int i = 0; name != NULL && out != NULL && i < 5; i++)
		if (strcmp(name, strategy_names[i]) == 0) {
			*out = (rusk_strategy)i;
			return RUSK_OK;
		}
	return RUSK_EINVAL;
}

RUSK_EXPORT const char *rusk_strategy_name(rusk_strategy s)
{
	return (unsigned)s < 5 ? strategy_names[s] : "unknown";
}

RUSK_EXPORT int rusk_agent_create(rusk_cluster *c, const rusk_agent_params *ap, rusk_agent **out,
                                  char *err, size_t errlen)
{
	if (c == NULL || ap == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "cluster, params and out must not be NULL");
	if ((unsigned)ap->strategy > RUSK_STRATEGY_CENTRAL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "unknown strategy %d",
		                 (int)ap->strategy);
	if ((unsigned)ap->quality > RUSK_QUALITY_PACKING)
		return rusk_errf(err, errlen, RUSK_EINVAL, "unknown quality model %d",
		                 (int)ap->quality);
	if (!(ap->eps > 0 && ap->eps < 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "eps %g not in (0, 1)", ap->eps);
	if (!(ap->target > 0 && ap->target < 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "target %g not in (0, 1)", ap->target);
	if (ap->r_max == 0 || ap->r_max > 4096)
		return rusk_errf(err, errlen, RUSK_EINVAL, "r_max %u not in 1..4096", ap->r_max);
	if (ap->sample > 4096)
		return rusk_errf(err, errlen, RUSK_EINVAL, "sample %u not in 0..4096", ap->sample);
	if (!(ap->ema_alpha > 0 && ap->ema_alpha <= 1))
		return rusk_errf(err, errlen, RUSK_EINVAL, "ema_alpha %g not in (0, 1]",
		                 ap->ema_alpha);
	rusk_agent *a = calloc(1, sizeof *a);
	if (a == NULL)
		return rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	a->c = c;
	a->p = *ap;
	rusk_rng_seed(&a->rng, ap->seed, 0x6167656e74ull + ap->index);
	a->order = calloc(c->n_parts, sizeof *a->order);
	int rc = rusk_view_create(c, &a->v);
	if (rc == RUSK_OK)
		rusk_view_seed_(a->v, ap->seed, ap->index);
	if (rc == RUSK_OK)
		rc = rusk_view_set_policy(a->v, &ap->sync, ap->index, err, errlen);
	if (rc != RUSK_OK || a->order == NULL) {
		rusk_agent_destroy(a);
		return rc != RUSK_OK ? rc : rusk_errf(err, errlen, RUSK_ENOMEM, "out of memory");
	}
	*out = a;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_agent_destroy(rusk_agent *a)
{
	if (a == NULL)
		return;
	rusk_view_destroy(a->v);
	free(a->order);
	free(a->cands);
	free(a->group);
	free(a->seen);
	free(a);
}

RUSK_EXPORT rusk_view *rusk_agent_view(rusk_agent *a)
{
	return a != NULL ? a->v : NULL;
}

static void dctx_init(dctx *d, const rusk_agent *a, const rusk_task *t)
{
	d->t = t;
	d->interf = a->p.quality == RUSK_QUALITY_INTERFERENCE;
	d->pack = a->p.quality == RUSK_QUALITY_PACKING;
	d->anchored = d->excl = false;
	d->won = NULL;
	d->n_won = 0;
	if (d->interf)
		rusk_qtask_init(&d->qt, &t->profile);
	if (RUSK_UNLIKELY(t->n_held > 0))
		rusk_dctx_beside_(d, a->c, NULL, 0);
}

/* Any profile byte > 99, ten at a time: adding 28 to a byte <= 127 sets its top bit
 * exactly when it was >= 100; bytes >= 128 have it set already. */
static inline bool profile_ok(const rusk_profile *p)
{
	_Static_assert(RUSK_N_RESOURCES <= 16, "profile fits two words");
	uint64_t w[2] = {0, 0};
	memcpy(w, p->c, RUSK_N_RESOURCES);
	const uint64_t low7 = UINT64_C(0x7f7f7f7f7f7f7f7f), top = UINT64_C(0x8080808080808080);
	const uint64_t add = UINT64_C(0x1c1c1c1c1c1c1c1c);
	return ((((w[0] & low7) + add) | w[0]) & top) == 0 &&
	       ((((w[1] & low7) + add) | w[1]) & top) == 0;
}

static const char *const place_names[] = {"any", "machine", "rack", "spread"};
static const char *const fit_what[] = {"RUs of the whole cluster", "RUs of its largest machine",
                                       "RUs of its largest rack", "machines of the cluster"};

static const char *const held_what[] = {"RUs of the whole cluster", "slots of their machine",
                                        "slots of their rack", "machines of the cluster"};

/*
 * Whether t's held list (n_held > 0) is malformed (rusk/sched.h "Held RUs"): NULL, on a
 * vector task, an RU out of range, or, for machine and rack placement, RUs in more than one
 * group. Writes the message. Slow path only.
 */
static bool held_problem(const rusk_cluster *c, const rusk_task *t, char *err, size_t errlen)
{
	unsigned long long id = (unsigned long long)t->id;
	if (t->held == NULL) {
		rusk_errf(err, errlen, RUSK_EINVAL, "task %llu: n_held %u but held is NULL", id,
		          t->n_held);
		return true;
	}
	if (rusk_vec_any(&t->vec)) {
		rusk_errf(err, errlen, RUSK_EINVAL,
		          "task %llu: a vector task is always gang: it cannot hold RUs already "
		          "(n_held %u)",
		          id, t->n_held);
		return true;
	}
	for (uint32_t i = 0; i < t->n_held; i++)
		if (t->held[i].ru >= c->n_rus) {
			rusk_errf(err, errlen, RUSK_EINVAL,
			          "task %llu: held[%u] names RU %u, not in 0..%u", id, i,
			          t->held[i].ru, c->n_rus - 1);
			return true;
		}
	if (t->placement != RUSK_PLACE_MACHINE && t->placement != RUSK_PLACE_RACK)
		return false;
	uint32_t g0, lo, hi;
	rusk_group_range_(c, t->placement, t->held[0].ru, &g0, &lo, &hi);
	for (uint32_t i = 1; i < t->n_held; i++)
		if (t->held[i].ru < lo || t->held[i].ru >= hi) {
			rusk_errf(
			        err, errlen, RUSK_EINVAL,
			        "task %llu: held[%u] (RU %u) is not in the %s of held[0] (RU %u): "
			        "placement %s keeps a task in one",
			        id, i, t->held[i].ru, place_names[t->placement], t->held[0].ru,
			        place_names[t->placement]);
			return true;
		}
	return false;
}

/* Most RUs t's held RUs and its remainder may have together (a checked held list):
 * the slots of their machine or rack, the machine count (spread), the cluster's RUs. */
static uint32_t held_fit(const rusk_cluster *c, const rusk_task *t)
{
	if (t->placement != RUSK_PLACE_MACHINE && t->placement != RUSK_PLACE_RACK)
		return c->fit[t->placement];
	uint32_t gid, lo, hi;
	rusk_group_range_(c, t->placement, t->held[0].ru, &gid, &lo, &hi);
	return hi - lo;
}

/* Out of line: what is wrong with a task that the fast check refused, and which field. */
static RUSK_NOINLINE int task_problem(const rusk_cluster *c, const rusk_task *t, const char **field,
                                      char *err, size_t errlen)
{
	const char *f = NULL;
	int rc = RUSK_EINVAL;
	if (t == NULL) {
		f = "task";
		rusk_errf(err, errlen, rc, "task is NULL");
	} else if (t->id == 0 || t->id > RUSK_TASK_ID_MAX) {
		f = "id";
		rusk_errf(err, errlen, rc, "id %llu not in 1..%llu", (unsigned long long)t->id,
		          (unsigned long long)RUSK_TASK_ID_MAX);
	} else if (t->rus == 0) {
		f = "rus";
		rusk_errf(err, errlen, rc, "task %llu: rus is 0", (unsigned long long)t->id);
	} else if (t->placement > RUSK_PLACE_SPREAD) {
		f = "placement";
		rusk_errf(err, errlen, rc, "task %llu: placement %u is not a rusk_placement_pref",
		          (unsigned long long)t->id, t->placement);
	} else if (t->n_preferred > 0 && t->preferred == NULL) {
		f = "preferred";
		rusk_errf(err, errlen, rc, "task %llu: n_preferred %u but preferred is NULL",
		          (unsigned long long)t->id, t->n_preferred);
	} else if (!profile_ok(&t->profile)) {
		f = "profile";
		rusk_errf(err, errlen, rc, "task %llu: a profile value exceeds 99",
		          (unsigned long long)t->id);
	} else if (t->n_held > 0 && held_problem(c, t, err, errlen)) {
		f = "held";
	} else if (rusk_vec_any(&t->vec)) {
		rc = rusk_vec_check_(c, t, &f, err, errlen);
	} else if (t->rus > c->fit[t->placement]) {
		f = "rus";
		rc = RUSK_EINFEASIBLE;
		rusk_errf(err, errlen, rc,
		          "task %llu: rus %u exceeds the %u %s (placement %s): no state of the "
		          "cluster can hold it",
		          (unsigned long long)t->id, t->rus, c->fit[t->placement],
		          fit_what[t->placement], place_names[t->placement]);
	} else if (t->n_held > 0 && (uint64_t)t->n_held + t->rus > held_fit(c, t)) {
		f = "rus";
		rc = RUSK_EINFEASIBLE;
		rusk_errf(err, errlen, rc,
		          "task %llu: rus %u beside its %u held RUs exceeds the %u %s beside them "
		          "(placement %s): no state of the cluster can hold it",
		          (unsigned long long)t->id, t->rus, t->n_held, held_fit(c, t),
		          held_what[t->placement], place_names[t->placement]);
	} else {
		rc = RUSK_OK;
	}
	if (field != NULL)
		*field = f;
	return rc;
}

/* The hot path's check: one pass of compares, the explanation only on failure. */
static inline int check_task(const rusk_cluster *c, const rusk_task *t, const char **field)
{
	if (RUSK_LIKELY(t != NULL && t->id - 1 < RUSK_TASK_ID_MAX &&
	                t->placement <= RUSK_PLACE_SPREAD && t->rus - 1 < c->fit[t->placement] &&
	                (t->n_preferred == 0 || t->preferred != NULL) && profile_ok(&t->profile) &&
	                !rusk_vec_any(&t->vec) && t->n_held == 0))
		return RUSK_OK;
	return task_problem(c, t, field, NULL, 0);
}

RUSK_EXPORT int rusk_task_check(const rusk_cluster *c, const rusk_task *t, char *err, size_t errlen)
{
	if (c == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "cluster is NULL");
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	return task_problem(c, t, NULL, err, errlen);
}

RUSK_EXPORT int rusk_agent_choose(rusk_agent *a, const rusk_task *t, uint32_t *rus,
                                  rusk_placement *pl)
{
	if (a == NULL || rus == NULL || pl == NULL)
		return RUSK_EINVAL;
	memset(pl, 0, sizeof *pl);
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	int bad = check_task(a->c, t, &pl->invalid);
	if (RUSK_UNLIKELY(bad != RUSK_OK))
		return bad;
	dctx d;
	dctx_init(&d, a, t);
	/* central chooses under its lock inside rusk_agent_place only */
	int n = a->p.strategy == RUSK_STRATEGY_CENTRAL
	                ? RUSK_EINVAL
	                : rusk_choose_(a, &d, rus, pl, rusk_now_(a->c));
	if (n < 0)
		return n;
	pl->placed = 0;
	return (uint32_t)n == t->rus ? RUSK_OK : RUSK_EAGAIN;
}

uint32_t rusk_agent_commit_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                            rusk_lease *leases, rusk_placement *pl)
{
	const rusk_profile *prof = a->p.quality == RUSK_QUALITY_INTERFERENCE ? &t->profile : NULL;
	pl->attempts++;
	if (a->p.global_lock && a->p.strategy != RUSK_STRATEGY_CENTRAL)
		return rusk_commit_global_lock_(a, t, rus, n, leases, pl, prof);
	return rusk_commit_unlocked_(a, t, rus, n, leases, pl, prof);
}

/*
 * The machines of the RUs just won, checked before place() hands them out: a failure or
 * drain that happened while place() was deciding is reported by place() itself (those RUs
 * are unheld and counted as conflicts; a gang gives back all of them). The callback of
 * rusk_machine_fail can then only name leases place() returned (ru.c, "Revocations").
 * Returns the RUs kept, compacted in leases[] in their order.
 */
static uint32_t keep_up(rusk_agent *a, const rusk_task *t, rusk_lease *leases, uint32_t won,
                        bool lost_before, rusk_placement *pl)
{
	rusk_cluster *c = a->c;
	uint32_t down = 0;
	for (uint32_t i = 0; i < won; i++)
		/* Relaxed: no order needed; a state store we miss makes the failure wait for
		 * the publish and report the lease by callback (topology.c). */
		down += rusk_load32(&c->machines[c->ru_machine[leases[i].ru]].state,
		                    RUSK_RELAXED) != RUSK_M_UP;
	if (RUSK_LIKELY(down == 0))
		return won;
	pl->conflicts += down;
	pl->commits_lost += !lost_before;
	uint32_t kept = 0;
	for (uint32_t i = 0; i < won; i++) {
		bool up = rusk_load32(&c->machines[c->ru_machine[leases[i].ru]].state,
		                      RUSK_RELAXED) == RUSK_M_UP;
		if (up && (!t->gang || won == 1))
			leases[kept++] = leases[i];
		else
			rusk_ru_unhold_(c, leases[i]); /* a gang gives back all of them */
	}
	return kept;
}

/*
 * A vector task's commit (vec.c): its RUs as a held gang, then its memory and GPU shares on
 * that machine, recorded on its lowest RU (rus[] is ascending) before place() publishes. A
 * machine found short is skipped by this place() call's retries.
 */
static uint32_t commit_vec(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                           rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof)
{
	rusk_cluster *c = a->c;
	size_t lost = 0;
	int rc = rusk_ru_commit_gang_held_(c, t->id, rus, n, prof, leases, &lost);
	if (rc != RUSK_OK) {
		if (rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE) {
			rusk_view_mark_taken_(a->v, rus[lost]);
			pl->conflicts++;
			pl->commits_lost++;
		}
		return 0;
	}
	uint32_t m = c->ru_machine[rus[0]];
	uint64_t rec;
	if (rusk_vec_take_(c, m, &t->vec, &rec) != RUSK_OK) {
		for (uint32_t i = 0; i < n; i++)
			rusk_ru_unhold_(c, leases[i]);
		if (a->n_vskip < sizeof a->vskip / sizeof a->vskip[0])
			a->vskip[a->n_vskip++] = m;
		pl->conflicts++;
		pl->commits_lost++;
		return 0;
	}
	c->ru_vec[rus[0]] = rec; /* C is set on every RU: published with them (vec.c) */
	for (uint32_t i = 0; i < n; i++)
		rusk_view_mark_taken_(a->v, rus[i]);
	return keep_up(a, t, leases, n, false, pl);
}

uint32_t rusk_commit_unlocked_(rusk_agent *a, const rusk_task *t, const uint32_t *rus, uint32_t n,
                               rusk_lease *leases, rusk_placement *pl, const rusk_profile *prof)
{
	rusk_cluster *c = a->c;
	if (RUSK_UNLIKELY(rusk_vec_any(&t->vec)))
		return commit_vec(a, t, rus, n, leases, pl, prof);
	if (n == 1) {
		/* One RU: the single commit, without the multi-RU entry points' set-up. Gang
		 * and incremental mean the same thing for one RU. */
		int rc = rusk_ru_commit_held_(c, t->id, rus[0], prof, &leases[0]);
		if (rc == RUSK_OK || rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE)
			rusk_view_mark_taken_(a->v,
			                      rus[0]); /* ours, or lost: not free either way */
		if (rc == RUSK_OK)
			return keep_up(a, t, leases, 1, false, pl);
		pl->conflicts += rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE;
		pl->commits_lost += rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE;
		return 0;
	}
	if (t->gang) {
		size_t lost = 0;
		int rc = rusk_ru_commit_gang_held_(c, t->id, rus, n, prof, leases, &lost);
		if (rc == RUSK_OK) {
			for (uint32_t i = 0; i < n; i++)
				rusk_view_mark_taken_(a->v, rus[i]);
			return keep_up(a, t, leases, n, false, pl);
		}
		if (rc == RUSK_ECONFLICT || rc == RUSK_EOFFLINE) {
			rusk_view_mark_taken_(a->v, rus[lost]);
			pl->conflicts++;
			pl->commits_lost++;
		}
		return 0;
	}
	size_t won = 0;
	if (rusk_ru_commit_incremental_held_(c, t->id, rus, n, prof, leases, &won) != RUSK_OK)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		rusk_view_mark_taken_(a->v, rus[i]); /* ours, or lost: not free either way */
	pl->conflicts += n - (uint32_t)won;
	pl->commits_lost += won < n;
	return keep_up(a, t, leases, (uint32_t)won, won < n, pl);
}

int rusk_agent_finish_(rusk_cluster *c, rusk_lease *leases, uint32_t n, int rc)
{
	for (uint32_t i = 0; i < n; i++) {
		if (rc == RUSK_OK)
			rusk_ru_publish_(c, leases[i]);
		else
			rusk_ru_unhold_(c, leases[i]);
	}
	return rc;
}

RUSK_EXPORT int rusk_agent_release(const rusk_agent *a, uint64_t task, const rusk_lease *leases,
                                   size_t n, size_t *n_rejected)
{
	if (a == NULL)
		return RUSK_EINVAL;
	if (RUSK_UNLIKELY(rusk_agent_serialised_(a)))
		return rusk_release_serialised_(a->c, task, leases, n, n_rejected);
	return rusk_ru_release_many(a->c, task, leases, n, n_rejected);
}

RUSK_EXPORT int rusk_agent_place(rusk_agent *a, const rusk_task *t, rusk_lease *leases,
                                 rusk_placement *pl)
{
	if (a == NULL || leases == NULL || pl == NULL)
		return RUSK_EINVAL;
	memset(pl, 0, sizeof *pl);
	if (RUSK_UNREGISTERED_())
		return RUSK_ENOTREG;
	int bad = check_task(a->c, t, &pl->invalid);
	if (RUSK_UNLIKELY(bad != RUSK_OK))
		return bad;
	dctx d;
	dctx_init(&d, a, t);
	a->n_vskip = 0;
	if (a->p.strategy == RUSK_STRATEGY_CENTRAL)
		return rusk_place_central_(a, &d, leases, pl);
	uint32_t *rus = alloca(sizeof *rus * t->rus);
	uint32_t placed = 0;
	double qsum = 0;
	uint32_t pref = 0;
	rusk_task rest;
	uint64_t t0 = rusk_now_(a->c), t1 = t0;
	for (uint32_t attempt = 0; attempt <= a->p.max_retries && placed < t->rus; attempt++) {
		/* Incremental tasks look only for what they still lack, and only where the
		 * placement allows beside what they hold and won so far (rusk/sched.h "Held
		 * RUs"): one machine or rack, or other machines for spread. */
		if (placed > 0) {
			rest = *t;
			rest.rus = t->rus - placed;
			d.t = &rest;
			rusk_dctx_beside_(&d, a->c, leases, placed);
		}
		/* The first decision fills pl itself (sample size, strategy, staleness are
		 * the first attempt's); a retry's only adds its samples. */
		rusk_placement one;
		rusk_placement *dst = pl;
		if (attempt > 0) {
			one = (rusk_placement){0};
			dst = &one;
		}
		int n = rusk_choose_(a, &d, rus, dst, t0);
		t1 = rusk_now_(a->c);
		pl->sample_ns += t1 - t0;
		if (attempt > 0) {
			pl->samples += one.samples;
			pl->examined += one.examined;
			pl->partitions += one.partitions;
		}
		if (n == RUSK_ENOMEM)
			return rusk_agent_finish_(a->c, leases, placed, RUSK_ENOMEM);
		if (n <= 0)
			break; /* the view has nothing suitable: give the task back */
		uint32_t won = rusk_agent_commit_(a, d.t, rus, (uint32_t)n, leases + placed, pl);
		t0 = rusk_now_(a->c); /* the next attempt starts here */
		pl->commit_ns += t0 - t1;
		t1 = t0;
		/* Packing judges a vector task's machine as a whole: its decision's value. */
		bool whole = d.pack && rusk_vec_any(&t->vec);
		for (uint32_t i = 0; i < won; i++) {
			qsum += whole ? dst->quality
			              : rusk_reported_quality_(a->c, &d, leases[placed + i].ru);
			pref += rusk_is_preferred_(a->c, t, leases[placed + i].ru);
		}
		placed += won;
		if (t->gang && won == 0)
			continue;
	}
	pl->end_ns = t1;
	pl->placed = placed;
	pl->quality = placed ? qsum / placed : 0;
	pl->preferred = pref;
	if (placed == 0 || (t->gang && placed < t->rus)) {
		pl->placed = 0;
		return rusk_agent_finish_(a->c, leases, placed, RUSK_EAGAIN);
	}
	return rusk_agent_finish_(a->c, leases, placed, RUSK_OK);
}
