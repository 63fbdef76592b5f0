/* SPDX-License-Identifier: MIT */
/*
 * The two lock-based baselines rusk is measured against.
 *
 * central   Quasar-style (Quasar §3.3): under the cluster's one lock, a scan of every free
 *           RU of the master state, ranked greedily (best m; the best machine or rack by
 *           the mean of its best m; the best RU of each machine for spread), commit,
 *           unlock. Exact, and orders of magnitude slower per decision: its cost grows
 *           with the cluster, which is what it is there to show.
 * global-lock
 *           samples as rusk does (choose.c) but commits under the cluster's one mutex.
 *
 * For both, rusk_agent_release takes the same mutex: a lock-based scheduler guards every
 * change of the shared state, releases included, so the two baselines are measured as such
 * designs would run, not as lock-free releases beside locked commits.
 *
 * Invariants:
 *  - Every change these designs make to the master array (commit, release) happens under
 *    c->central_lock; rusk's lock-free agents never take it.
 *  - central reads the master bitmap, not a view: its decision is never stale, so it
 *    conflicts only with agents outside the lock.
 *  - central ranks by the same values and strict order as choose.c (rusk_top_insert_,
 *    rusk_scan_range_), so with a fresh view both would choose alike.
 *  - A task's remainder beside held RUs (rusk/sched.h "Held RUs") is limited as choose.c
 *    limits it: machine or rack placement scans only the held RUs' group and an
 *    incremental task takes what it has (at least one); spread skips their machines.
 */
#include <alloca.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "kernel/central.h"
#include "kernel/choose.h"
#include "kernel/commit.h"
#include "kernel/vec_impl.h"

/* Out of line: rusk_agent_release's lock-free path stays a tail call. */
RUSK_NOINLINE int rusk_release_serialised_(rusk_cluster *c, uint64_t task, const rusk_lease *leases,
                                           size_t n, size_t *n_rejected)
{
	pthread_mutex_lock(&c->central_lock);
	int rc = rusk_ru_release_many(c, task, leases, n, n_rejected);
	pthread_mutex_unlock(&c->central_lock);
	return rc;
}

/* Any placement: the best m free RUs of the whole master bitmap. Returns RUs examined. */
static uint32_t scan_any(const rusk_cluster *c, const rusk_dctx *d, uint32_t m, rusk_cand *best,
                         uint32_t *got)
{
	uint32_t seen = 0;
	for (uint32_t p = 0; p < c->n_parts; p++) {
		const rusk_partition *pp = &c->parts[p];
		if (pp->n_rus > 0)
			seen += rusk_scan_range_(c, d, c->free_bits, true, pp->first_ru,
			                         pp->first_ru + pp->n_rus, m, best, got);
	}
	return seen;
}

/* Spread: the best free RU of each machine, and the best m of those (tmp: one entry); a
 * remainder skips the machines of its held RUs. */
static uint32_t scan_spread(const rusk_cluster *c, const rusk_dctx *d, uint32_t m, rusk_cand *best,
                            rusk_cand *tmp, uint32_t *got)
{
	uint32_t seen = 0;
	for (uint32_t mi = 0; mi < c->n_machines; mi++) {
		const rusk_machine *mm = &c->machines[mi];
		uint32_t k = 0;
		if (RUSK_UNLIKELY(d->excl) && rusk_dctx_excluded_(c, d, mi))
			continue; /* a remainder: not beside its held RUs */
		seen += rusk_scan_range_(c, d, c->free_bits, true, mm->first_ru,
		                         mm->first_ru + mm->n_rus, 1, tmp, &k);
		if (k == 1)
			rusk_top_insert_(best, got, m, tmp);
	}
	return seen;
}

/* Machine or rack: the group whose best m free RUs have the best mean value (tmp: m
 * entries); a vector task's machine under packing or FGD by the model's value of the whole
 * machine (mx: the agent's learned mix), as choose.c judges it. Returns RUs examined. */
static uint32_t scan_groups(const rusk_cluster *c, const rusk_dctx *d, const rusk_fgd_mix *mx,
                            uint8_t place, uint32_t m, rusk_cand *best, rusk_cand *tmp,
                            uint32_t *got)
{
	uint32_t seen = 0;
	double best_mean = -INFINITY;
	uint32_t groups = place == RUSK_PLACE_MACHINE ? c->n_machines : c->n_racks;
	for (uint32_t g = 0; g < groups; g++) {
		uint32_t first = place == RUSK_PLACE_MACHINE ? g : g * c->machines_per_rack;
		/* A vector task (machine placement) skips machines short of memory or GPUs. */
		bool vec = rusk_vec_any(&d->t->vec);
		if (vec && (!rusk_vec_shape_fits_(c, g, &d->t->vec) ||
		            !rusk_vec_free_fits_(c, g, &d->t->vec)))
			continue;
		uint32_t gid, lo, hi, k = 0;
		rusk_group_range_(c, place, c->machines[first].first_ru, &gid, &lo, &hi);
		uint32_t n_free = rusk_scan_range_(c, d, c->free_bits, true, lo, hi, m, tmp, &k);
		seen += n_free;
		double mq = !vec || k < m ? rusk_mean_q_(tmp, k)
		            : d->pack     ? rusk_vec_pack_value_(c, g, n_free, d->t)
		            : d->fgd      ? rusk_vec_fgd_value_(c, g, n_free, d->t, mx)
		                          : rusk_mean_q_(tmp, k);
		if (k == m && mq > best_mean) {
			best_mean = mq;
			memcpy(best, tmp, sizeof *best * m);
			*got = m;
		}
	}
	return seen;
}

/* Commits the best[0..got) found under the lock (all of them for a gang) and fills pl's
 * outcome. Returns RUSK_OK when some were won, else RUSK_EAGAIN. */
static int commit_best(rusk_agent *a, const rusk_dctx *d, const rusk_cand *best, uint32_t got,
                       rusk_lease *leases, rusk_placement *pl)
{
	const rusk_task *t = d->t;
	if (got == 0 || (got < t->rus && t->gang))
		return RUSK_EAGAIN;
	uint32_t *rus = alloca(sizeof *rus * got);
	for (uint32_t i = 0; i < got; i++)
		rus[i] = best[i].ru;
	rusk_sort_rus_(rus, got);
	uint32_t won = rusk_agent_commit_(a, t, rus, got, leases, pl);
	if (won == 0)
		return RUSK_EAGAIN;
	double qs = 0;
	for (uint32_t i = 0; i < won; i++) {
		qs += rusk_reported_quality_(a->c, d, leases[i].ru);
		pl->preferred += rusk_is_preferred_(a->c, t, leases[i].ru);
	}
	pl->placed = won;
	pl->quality = qs / won;
	return RUSK_OK;
}

/* rusk_agent_place for central: under the cluster's one lock, rank every free RU of the
 * master bitmap for the task's placement (beside its held RUs), then commit the best. */
int rusk_place_central_(rusk_agent *a, const rusk_dctx *d, rusk_lease *leases, rusk_placement *pl)
{
	rusk_cluster *c = a->c;
	const rusk_task *t = d->t;
	uint32_t m = t->rus;
	if (!rusk_cands_reserve_(&a->group, &a->group_cap, 2 * (size_t)m))
		return RUSK_ENOMEM;
	rusk_cand *best = a->group, *tmp = a->group + m;
	uint32_t got = 0;
	pl->strategy = RUSK_STRATEGY_CENTRAL;
	pl->sample_size = 0;
	pthread_mutex_lock(&c->central_lock);
	if (RUSK_UNLIKELY(d->anchored)) /* a remainder: its held RUs' machine or rack only */
		pl->samples =
		        rusk_scan_range_(c, d, c->free_bits, true, d->alo, d->ahi, m, best, &got);
	else if (t->placement == RUSK_PLACE_ANY)
		pl->samples = scan_any(c, d, m, best, &got);
	else if (t->placement == RUSK_PLACE_SPREAD)
		pl->samples = scan_spread(c, d, m, best, tmp, &got);
	else
		pl->samples = scan_groups(c, d, &a->mix, t->placement, m, best, tmp, &got);
	int rc = commit_best(a, d, best, got, leases, pl);
	pthread_mutex_unlock(&c->central_lock);
	pl->examined = pl->samples; /* the full scan: every RU it looked at */
	pl->partitions = c->n_parts;
	pl->end_ns = rusk_now_(c);
	return rusk_agent_finish_(c, leases, pl->placed, rc);
}
