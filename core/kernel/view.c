/* SPDX-License-Identifier: MIT */
/*
 * Agents' local views (ParSync §5.1-5.2; Omega's per-scheduler cell state).
 *
 * A view holds, for every partition, a copy of that partition's free bitmap as of the
 * agent's last sync of it, when that data was taken (its staleness is now - taken), the
 * snapshot summaries, and the agent's own marks since: an RU it committed or lost to a
 * conflict is marked taken at once ("it also updates the status of the slot in its local
 * partition to taken", §5.2), so it is not sampled again before the next sync.
 *
 * Syncing partition p copies p's snapshot (published with RCU, snapshot.c) into the view;
 * unless the published one is younger than the cluster's reuse window, the syncing agent
 * publishes a fresh one first, so a sync sees the master state as of the sync (ParSync's
 * semantics). The copy is a few KB per partition (80,000 RUs -> 10 KB at 100K x 16 / 20).
 * With a remote master state attached to the cluster (remote.h), a sync reads the partition's
 * bitmap from the remote instead (sync_remote: one round trip, ANDed with the local array's
 * bits, the same summaries computed here); a remote that does not answer leaves the old copy.
 *
 * Picking a free RU draws uniformly among the partition's free RUs (rusk_view_pick_, view.h):
 * a uniform position kept if free (rejection sampling), and after 16 misses the k-th free
 * RU for a uniform k. Uniform candidates are what Tarcil's x^R guarantee (eq. 6) assumes; the
 * "first free RU after a random position" rule this replaced drew a free RU after a long
 * busy run (a full machine, a full rack) up to run-length times more often, and its best
 * of R strayed from x^R by a K-S distance of 0.39 at 95% load. The select walks two summary
 * levels built by the snapshot's publisher and kept by the marks: one bit per word (does
 * it hold a free RU?) and one count per 64 words (how many?), so it costs at most 64 word
 * popcounts plus one count per 4,096 RUs, however full the partition. Each partition's
 * summary starts on a word of its own (nz_off); a sync copies it with the words.
 *
 * Freshness ties. Partitions synced in one rusk_view_tick step (all of them under
 * StateSync) are one round: they order by the oldest snapshot time of the round, then by
 * a rank drawn at each sync from the view's generator, seeded per agent. So each agent's
 * Latency-first works a partition of the round chosen at random for that round, and
 * agents rarely share one. Breaking the tie by index, or by the nanoseconds between the
 * round's snapshots, sent every agent to the same partition (herding: in ParSync's Fig. 5
 * StateSync case, 94% of commits lost and a mean delay of 48 s, against 49% and 0.42 s
 * with ranks). A fresh random partition per decision was worse than per round (73%, 18 s):
 * it spreads each agent over every partition, where all agents go for the same best RUs.
 *
 * Invariants: free[p] = popcount of p's words in the view; plat_free[p][k] likewise per
 * platform type; p's summary bit j is set iff p's word j is not 0, and cnt[j / 64] is the
 * popcount of the 64 words under summary word j / 64; mfree[m] = the popcount of machine
 * m's bits for every machine of a partition whose mfree_ok is set (counted at the first ask
 * after a sync, kept by the marks: vector decisions list machines by it, choose.c); p's
 * gen moves on at every write of p's words (each sync or sync attempt, each mark), so two
 * equal reads of it bracket no change (choose.c reuses a vector listing of p by it); order
 * is sorted by fresher(); a view is used by one thread at a time (its owner agent).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <urcu/urcu-memb.h>

#include "kernel/remote.h"
#include "kernel/snapshot_impl.h"
#include "kernel/view.h"

RUSK_EXPORT int rusk_view_create(rusk_cluster *c, rusk_view **out)
{
	if (c == NULL || out == NULL)
		return RUSK_EINVAL;
	rusk_view *v = calloc(1, sizeof *v);
	if (v == NULL)
		return RUSK_ENOMEM;
	v->c = c;
	v->bits = calloc(c->n_words ? c->n_words : 1, sizeof *v->bits);
	v->nz_off = calloc(c->n_parts, sizeof *v->nz_off);
	uint32_t n_nz = 0;
	for (uint32_t p = 0; v->nz_off != NULL && p < c->n_parts; p++) {
		v->nz_off[p] = n_nz;
		n_nz += (c->parts[p].n_rus + 4095) / 4096; /* 64 words of 64 RUs per summary word */
	}
	v->nz = calloc(n_nz ? n_nz : 1, sizeof *v->nz);
	v->cnt = calloc(n_nz ? n_nz : 1, sizeof *v->cnt);
	v->parts = calloc(c->n_parts, sizeof *v->parts);
	v->plat_free = calloc((size_t)c->n_parts * c->n_platforms, sizeof *v->plat_free);
	v->scratch = calloc(c->n_parts, sizeof *v->scratch);
	v->order = calloc(c->n_parts, sizeof *v->order);
	if (!v->bits || !v->nz || !v->cnt || !v->nz_off || !v->parts || !v->plat_free ||
	    !v->scratch || !v->order) {
		rusk_view_destroy(v);
		return RUSK_ENOMEM;
	}
	for (uint32_t p = 0; p < c->n_parts; p++)
		v->order[p] = p;
	/* A distinct, repeatable stream per view until an agent seeds it (rusk_view_seed_). */
	rusk_rng_seed(&v->tie, 0, rusk_faa64(&c->views_made, 1, RUSK_RELAXED));
	*out = v;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_view_destroy(rusk_view *v)
{
	if (v == NULL)
		return;
	free(v->bits);
	free(v->nz);
	free(v->cnt);
	free(v->nz_off);
	free(v->parts);
	free(v->plat_free);
	free(v->scratch);
	free(v->rver);
	free(v->rrc);
	free(v->order);
	free(v->mfree);
	free(v->mfree_ok);
	free(v);
}

const uint16_t *rusk_view_mfree_(rusk_view *v, uint32_t p)
{
	const rusk_cluster *c = v->c;
	if (v->mfree == NULL) {
		v->mfree = malloc(sizeof *v->mfree * (c->n_machines ? c->n_machines : 1));
		v->mfree_ok = calloc(c->n_parts, sizeof *v->mfree_ok);
		if (v->mfree == NULL || v->mfree_ok == NULL) {
			free(v->mfree);
			free(v->mfree_ok);
			v->mfree = NULL;
			v->mfree_ok = NULL;
			return NULL;
		}
	}
	if (!v->mfree_ok[p]) {
		const rusk_partition *pp = &c->parts[p];
		for (uint32_t mi = pp->first_machine; mi < pp->first_machine + pp->n_machines;
		     mi++) {
			const rusk_machine *m = &c->machines[mi];
			v->mfree[mi] = (uint16_t)rusk_count_bits_(v->bits, m->first_bit, m->n_rus);
		}
		v->mfree_ok[p] = 1;
	}
	return v->mfree;
}

void rusk_view_seed_(rusk_view *v, uint64_t seed, uint64_t stream)
{
	rusk_rng_seed(&v->tie, seed, 0x7469650000000000ull /* "tie" */ + stream);
}

/* Order: synced before unsynced, newer round first, then the rank drawn at the sync. */
static bool fresher(const rusk_view *v, uint32_t a, uint32_t b)
{
	const vpart *x = &v->parts[a], *y = &v->parts[b];
	if (x->synced != y->synced)
		return x->synced;
	if (x->round_ns != y->round_ns)
		return x->round_ns > y->round_ns;
	if (x->rank != y->rank)
		return x->rank > y->rank;
	return a < b;
}

/* Moves p to its place in order after its sync: O(P) per sync instead of a sort per
 * decision (the sort was a third of a whole `rusk run` task under callgrind). */
static void reorder(rusk_view *v, uint32_t p)
{
	uint32_t P = v->c->n_parts, i = 0;
	while (v->order[i] != p)
		i++;
	memmove(v->order + i, v->order + i + 1, sizeof *v->order * (P - 1 - i));
	uint32_t j = 0;
	while (j < P - 1 && fresher(v, v->order[j], p))
		j++;
	memmove(v->order + j + 1, v->order + j, sizeof *v->order * (P - 1 - j));
	v->order[j] = p;
}

/*
 * A sync from a remote master state (remote.h): p's free bitmap read through the remote
 * straight into the view's words, ANDed with the local array's bits (an RU this process
 * holds or is committing is not free whatever the remote said a moment ago), then the
 * summaries a local snapshot carries, computed the same way (snapshot.c snap_build). Its
 * time is taken before the round trip, so the data is never older than it claims. On
 * RUSK_EIO the view keeps its previous copy of p (a failed read writes nothing).
 * sync_remote reads one partition (one round trip); sync_remote_step reads a tick step's
 * partitions in one call (rusk_remote_snapshots_: one pipeline per node, about one round
 * trip for all of them); remote_done is what both do with a partition read.
 */
static void remote_done(rusk_view *v, uint32_t p, uint64_t t0, uint64_t version)
{
	rusk_cluster *c = v->c;
	const rusk_partition *pp = &c->parts[p];
	uint32_t n_words = (pp->n_rus + 63) / 64, n_nz = (n_words + 63) / 64;
	uint64_t *w = v->bits + pp->first_bit / 64;
	const uint64_t *local = c->free_bits + pp->first_bit / 64;
	uint64_t *nz = v->nz + v->nz_off[p];
	uint16_t *cnt = v->cnt + v->nz_off[p];
	memset(nz, 0, sizeof *nz * n_nz);
	memset(cnt, 0, sizeof *cnt * n_nz);
	uint32_t free_rus = 0;
	for (uint32_t i = 0; i < n_words; i++) {
		w[i] &= rusk_load64(&local[i], RUSK_RELAXED); /* a racy copy, as snapshot.c's */
		nz[i / 64] |= (uint64_t)(w[i] != 0) << (i % 64);
		cnt[i / 64] += (uint16_t)__builtin_popcountll(w[i]);
		free_rus += (uint32_t)__builtin_popcountll(w[i]);
	}
	rusk_platform_free_(c, pp->first_bit, w, n_words, free_rus,
	                    v->plat_free + (size_t)p * c->n_platforms);
	vpart *vp = &v->parts[p];
	v->total_free += (uint64_t)free_rus - vp->free_rus;
	vp->taken_ns = t0;
	vp->round_ns = t0;
	vp->rank = (uint32_t)(rusk_rng_next(&v->tie) >> 32);
	vp->version = version;
	vp->free_rus = free_rus;
	vp->gen++;
	vp->one_mi = UINT32_MAX;
	if (v->mfree_ok != NULL)
		v->mfree_ok[p] = 0;
	/* The mean slot score of the free RUs: the local partition counter's (this process's
	 * holdings; the remote keeps no scores), a statistic for Quality-first. */
	uint64_t pc = rusk_load64(&pp->counter, RUSK_RELAXED);
	uint64_t cf = pc & RUSK_PC_FREE_MASK;
	vp->mean_free_score = cf ? (double)(pc >> RUSK_PC_FREE_BITS) / 1000.0 / (double)cf : 0.0;
	vp->synced = true;
	reorder(v, p);
	v->st.syncs++;
}

static int sync_remote(rusk_view *v, uint32_t p, uint64_t t0)
{
	rusk_cluster *c = v->c;
	const rusk_partition *pp = &c->parts[p];
	uint64_t version = 0;
	v->parts[p].gen++; /* whatever the answer: a listing of p is not reused */
	v->parts[p].one_mi = UINT32_MAX;
	int rc = rusk_remote_snapshot_(c->remote, p, v->bits + pp->first_bit / 64,
	                               (pp->n_rus + 63) / 64, &version);
	if (rc != RUSK_OK)
		return rc;
	remote_done(v, p, t0, version);
	v->st.sync_ns += rusk_now_(c) - t0;
	return RUSK_OK;
}

/* ps[0..n)'s remote sync in one call; the partitions read (those that failed keep their
 * old copy), or a negative error (RUSK_ENOMEM). */
static int sync_remote_step(rusk_view *v, const uint32_t *ps, size_t n)
{
	rusk_cluster *c = v->c;
	if (v->rver == NULL) {
		v->rver = malloc(sizeof *v->rver * c->n_parts);
		v->rrc = malloc(sizeof *v->rrc * c->n_parts);
		if (v->rver == NULL || v->rrc == NULL) {
			free(v->rver);
			free(v->rrc);
			v->rver = NULL;
			v->rrc = NULL;
			return RUSK_ENOMEM;
		}
	}
	uint64_t t0 = rusk_now_(c);
	/* The call may write a partition's words and still answer it as failed (a later
	 * partition's error is every one's): its machines' counts are not trusted after it. */
	for (size_t i = 0; i < n; i++) {
		v->parts[ps[i]].gen++;
		v->parts[ps[i]].one_mi = UINT32_MAX;
		if (v->mfree_ok != NULL)
			v->mfree_ok[ps[i]] = 0;
	}
	/* Not read unless it says so: on its early failures (no connection) it answers for
	 * none (before, rrc[] was read as left by an earlier step, or uninitialised) */
	for (size_t i = 0; i < n; i++)
		v->rrc[i] = RUSK_EIO;
	rusk_remote_snapshots_(c->remote, ps, n, v->bits, v->rver, v->rrc);
	int synced = 0;
	for (size_t i = 0; i < n; i++)
		if (v->rrc[i] == RUSK_OK) {
			remote_done(v, ps[i], t0, v->rver[i]);
			synced++;
		}
	v->st.sync_ns += rusk_now_(c) - t0;
	return synced;
}

RUSK_EXPORT int rusk_view_sync(rusk_view *v, uint32_t p)
{
	if (v == NULL)
		return RUSK_EINVAL;
	rusk_cluster *c = v->c;
	if (p >= c->n_parts)
		return RUSK_ERANGE;
	uint64_t t0 = rusk_now_(c);
	if (RUSK_UNLIKELY(c->remote != NULL))
		return sync_remote(v, p, t0);
	bool fresh_enough = false;
	if (c->snap_reuse_ns > 0) {
		urcu_memb_read_lock();
		const rusk_snap *s = rusk_snap_get_(c, p);
		fresh_enough =
		        s != NULL && t0 >= s->taken_ns && t0 - s->taken_ns < c->snap_reuse_ns;
		if (s != NULL)
			rusk_snap_reader_done_(s);
		urcu_memb_read_unlock();
	}
	if (!fresh_enough) {
		int rc = rusk_snap_publish_(c, p);
		if (rc != RUSK_OK)
			return rc;
		v->st.publishes++;
	}
	urcu_memb_read_lock();
	const rusk_snap *s = rusk_snap_get_(c, p);
	/* Non-NULL: published above or earlier; snapshots are never unpublished. */
	const rusk_partition *pp = &c->parts[p];
	memcpy(v->bits + pp->first_bit / 64, s->words, sizeof(uint64_t) * s->n_words);
	memcpy(v->nz + v->nz_off[p], s->nz, sizeof(uint64_t) * ((s->n_words + 63) / 64));
	memcpy(v->cnt + v->nz_off[p], s->cnt, sizeof(uint16_t) * ((s->n_words + 63) / 64));
	vpart *vp = &v->parts[p];
	v->total_free += (uint64_t)s->free_rus - vp->free_rus;
	vp->taken_ns = s->taken_ns;
	vp->round_ns = s->taken_ns;
	vp->rank = (uint32_t)(rusk_rng_next(&v->tie) >> 32);
	vp->version = s->version;
	vp->free_rus = s->free_rus;
	vp->mean_free_score = s->mean_free_score;
	vp->gen++;
	vp->one_mi = UINT32_MAX;
	if (v->mfree_ok != NULL)
		v->mfree_ok[p] = 0;
	vp->synced = true;
	reorder(v, p);
	memcpy(v->plat_free + (size_t)p * c->n_platforms, s->platform_free,
	       sizeof(uint32_t) * c->n_platforms);
	rusk_snap_reader_done_(s);
	urcu_memb_read_unlock();
	v->st.syncs++;
	v->st.sync_ns += rusk_now_(c) - t0;
	return RUSK_OK;
}

RUSK_EXPORT int rusk_view_set_policy(rusk_view *v, const rusk_sync_params *p, uint32_t agent,
                                     char *err, size_t errlen)
{
	if (v == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "view is NULL");
	int rc = rusk_sync_check(p, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	if (p->partitions != v->c->n_parts)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "sync params have %u partitions, the cluster %u", p->partitions,
		                 v->c->n_parts);
	if (agent >= p->agents)
		return rusk_errf(err, errlen, RUSK_EINVAL, "agent %u of %u", agent, p->agents);
	v->sp = *p;
	v->agent = agent;
	v->step_ns = rusk_sync_step_ns(p);
	v->base_ns = p->start_ns + rusk_sync_offset_ns(p, agent);
	v->next_k = 0;
	v->has_policy = true;
	return RUSK_OK;
}

/*
 * The n partitions of one tick step are one round: they take the round's oldest snapshot
 * time as their freshness and order among themselves by their drawn ranks. Without this a
 * real clock makes the last-synced partition the freshest in every agent's view.
 */
static void same_round(rusk_view *v, const uint32_t *ps, size_t n)
{
	uint64_t oldest = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		if (v->parts[ps[i]].taken_ns < oldest)
			oldest = v->parts[ps[i]].taken_ns;
	for (size_t i = 0; i < n; i++) {
		v->parts[ps[i]].round_ns = oldest;
		reorder(v, ps[i]);
	}
}

RUSK_EXPORT int rusk_view_tick(rusk_view *v, uint64_t now)
{
	if (v == NULL || !v->has_policy)
		return RUSK_EINVAL;
	if (now < v->base_ns)
		return 0;
	uint64_t last = (now - v->base_ns) / v->step_ns;
	if (last < v->next_k)
		return 0;
	/* Steps repeat their partitions with period N (1 for StateSync): of a longer overdue
	 * run only the last period matters. */
	uint64_t period = v->sp.policy == RUSK_SYNC_STATE ? 1 : v->sp.agents;
	uint64_t k = v->next_k;
	if (last - k >= period)
		k = last - period + 1;
	int synced = 0;
	for (; k <= last; k++) {
		size_t n = rusk_sync_partitions(&v->sp, v->agent, k, v->scratch, v->c->n_parts);
		bool one_call = RUSK_UNLIKELY(v->c->remote != NULL) && n > 1;
		if (one_call) {
			/* One call for the step (sync_remote_step); a partition that did not
			 * answer keeps its old copy (remote.h), as below. */
			int got = sync_remote_step(v, v->scratch, n);
			if (got < 0)
				return got;
			synced += got;
		}
		for (size_t i = 0; !one_call && i < n; i++) {
			int rc = rusk_view_sync(v, v->scratch[i]);
			if (rc == RUSK_EIO)
				continue; /* a remote that did not answer (remote.h): the old copy
				             stays */
			if (rc != RUSK_OK)
				return rc;
			synced++;
		}
		if (n > 1)
			same_round(v, v->scratch, n);
	}
	v->next_k = last + 1;
	return synced;
}

RUSK_EXPORT uint64_t rusk_view_next_sync_ns(const rusk_view *v)
{
	if (v == NULL || !v->has_policy)
		return UINT64_MAX;
	return v->base_ns + v->next_k * v->step_ns;
}

RUSK_EXPORT uint64_t rusk_view_staleness_ns(const rusk_view *v, uint32_t p, uint64_t now)
{
	if (v == NULL)
		return UINT64_MAX;
	return rusk_view_staleness_(v, p, now);
}

RUSK_EXPORT double rusk_view_avg_staleness_ns(const rusk_view *v, uint64_t now)
{
	if (v == NULL)
		return INFINITY;
	double sum = 0;
	for (uint32_t p = 0; p < v->c->n_parts; p++) {
		uint64_t s = rusk_view_staleness_ns(v, p, now);
		if (s == UINT64_MAX)
			return INFINITY;
		sum += (double)s;
	}
	return sum / v->c->n_parts;
}

RUSK_EXPORT size_t rusk_view_freshest(const rusk_view *v, uint32_t *out, size_t n)
{
	if (v == NULL || out == NULL)
		return 0;
	uint32_t P = v->c->n_parts;
	size_t k = n < P ? n : P;
	memcpy(out, v->order, k * sizeof *out);
	return k;
}

RUSK_EXPORT bool rusk_view_is_free(const rusk_view *v, uint32_t ru)
{
	if (v == NULL)
		return false;
	const rusk_cluster *c = v->c;
	if (ru >= c->n_rus)
		return false;
	uint32_t b = rusk_ru_bit(c, ru, &c->machines[c->ru_machine[ru]]);
	return (v->bits[b / 64] >> (b % 64)) & 1;
}

RUSK_EXPORT void rusk_view_mark_taken(rusk_view *v, uint32_t ru)
{
	if (v != NULL)
		rusk_view_mark_taken_(v, ru);
}

RUSK_EXPORT void rusk_view_mark_free(rusk_view *v, uint32_t ru)
{
	if (v == NULL)
		return;
	uint64_t *w, mask;
	const rusk_machine *m = rusk_view_locate_(v, ru, &w, &mask);
	if (m == NULL || (*w & mask))
		return;
	if (*w == 0)
		rusk_view_nz_set_(v, m->partition, w, true);
	*w |= mask;
	rusk_view_count_(v, m, w, 1);
}

/* k-th set bit of w (k < popcount(w)). */
static inline uint32_t select64(uint64_t w, uint32_t k)
{
	for (; k > 0; k--)
		w &= w - 1;
	return (uint32_t)__builtin_ctzll(w);
}

/* Out of line: on its own, the batch loop keeps the generator, the positions and the count
 * in registers; inlined into a decision it spilled them (about a third more instructions). */
RUSK_NOINLINE uint32_t rusk_vrange_reject_n_(const rusk_vrange *r, rusk_rng *rng, uint32_t *out,
                                             uint32_t n)
{
	uint32_t batches = (n * RUSK_PICK_TRIES + RUSK_PICK_BATCH - 1) / RUSK_PICK_BATCH, got = 0;
	const uint64_t *w = r->w, n_rus = r->n_rus;
	const uint32_t first = r->first_ru;
	rusk_rng g = *rng; /* in registers: out[] stores cannot alias it */
	for (uint32_t k = 0; k < batches && got < n; k++)
		for (int j = 0; j < RUSK_PICK_BATCH; j += 2) {
			uint64_t u = rusk_rng_next(&g);
			uint32_t p0 = (uint32_t)(((u >> 32) * n_rus) >> 32);
			uint32_t p1 = (uint32_t)(((u & 0xffffffffu) * n_rus) >> 32);
			uint64_t w0 = w[p0 / 64], w1 = w[p1 / 64];
			out[got] = first + p0;
			got = rusk_add_bit_(got, w0, p0);
			out[got] = first + p1;
			got = rusk_add_bit_(got, w1, p1);
		}
	*rng = g;
	return got < n ? got : n;
}

bool rusk_vrange_select_(const rusk_vrange *r, uint32_t k, uint32_t *ru)
{
	uint32_t n_blocks = (r->n_words + 63) / 64, b = 0;
	while (b < n_blocks && k >= r->cnt[b])
		k -= r->cnt[b++];
	if (b == n_blocks)
		return false; /* k >= free: counts and bits disagree, which they never do */
	for (uint64_t s = r->nz[b]; s != 0; s &= s - 1) {
		uint32_t wi = b * 64 + (uint32_t)__builtin_ctzll(s);
		uint32_t pc = (uint32_t)__builtin_popcountll(r->w[wi]);
		if (k < pc) {
			*ru = r->first_ru + wi * 64 + select64(r->w[wi], k);
			return true;
		}
		k -= pc;
	}
	return false;
}

RUSK_EXPORT bool rusk_view_pick_free(const rusk_view *v, uint32_t p, uint64_t rnd, uint32_t *ru)
{
	if (v == NULL || ru == NULL)
		return false;
	const rusk_cluster *c = v->c;
	if (p >= c->n_parts || v->parts[p].free_rus == 0)
		return false;
	rusk_vrange r = rusk_view_range_(v, p);
	return rusk_view_pick_(&r, rnd, ru);
}

RUSK_EXPORT uint32_t rusk_view_free(const rusk_view *v, uint32_t p)
{
	return v != NULL ? rusk_view_free_(v, p) : 0;
}

RUSK_EXPORT uint32_t rusk_view_platform_free(const rusk_view *v, uint32_t p, uint32_t k)
{
	if (v == NULL || p >= v->c->n_parts || k >= v->c->n_platforms)
		return 0;
	return v->plat_free[(size_t)p * v->c->n_platforms + k];
}

RUSK_EXPORT double rusk_view_mean_free_score(const rusk_view *v, uint32_t p)
{
	return v != NULL && p < v->c->n_parts ? v->parts[p].mean_free_score : 0.0;
}

RUSK_EXPORT void rusk_view_stats_get(const rusk_view *v, rusk_view_stats *out)
{
	if (out != NULL)
		*out = v != NULL ? v->st : (rusk_view_stats){0};
}
