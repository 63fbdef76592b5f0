/* SPDX-License-Identifier: MIT */
/*
 * The in-memory master-state backend (backend.h): the RU array of ru.c behind the seam. A
 * snapshot copies the partition's words of the free bitmap (as snapshot.c does, relaxed: a
 * racy copy by design), a claim is rusk_ru_commit_vec (RUs + shares, all-or-nothing) or a
 * gang for an RU-only claim, a release is rusk_ru_release, a recount walks the words.
 * Nothing here is on the agents' path (they call ru.c directly), so the default build's
 * hot path is unchanged; the seam exists so a remote backend can stand in the same place
 * and tests can run one sequence of calls against both.
 */
#include "base/atomic.h"
#include "kernel/backend.h"
#include "kernel/layout.h"
#include "kernel/word.h"

static int mem_snapshot(void *self, uint32_t p, uint64_t *words, uint32_t n_words,
                        uint64_t *version)
{
	rusk_cluster *c = self;
	if (p >= c->n_parts)
		return RUSK_ERANGE;
	const rusk_partition *pp = &c->parts[p];
	uint32_t need = (pp->n_rus + 63) / 64;
	if (words == NULL || n_words < need)
		return RUSK_EINVAL;
	const uint64_t *src = c->free_bits + pp->first_bit / 64;
	for (uint32_t i = 0; i < need; i++)
		words[i] = rusk_load64(&src[i], RUSK_RELAXED); /* a racy copy, as snapshot.c */
	if (version != NULL)
		*version = rusk_load64(&pp->version, RUSK_RELAXED);
	return RUSK_OK;
}

static int mem_commit(void *self, uint32_t p, const rusk_bk_claim *cl, size_t n, int *rcs,
                      rusk_lease *leases)
{
	rusk_cluster *c = self;
	if (p >= c->n_parts || (n > 0 && (cl == NULL || rcs == NULL || leases == NULL)))
		return RUSK_EINVAL;
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		size_t lost = 0;
		bool one = cl[i].n > 0 && cl[i].rus != NULL && cl[i].machine < c->n_machines &&
		           c->machines[cl[i].machine].partition == p;
		for (uint32_t k = 0; one && k < cl[i].n; k++)
			one = cl[i].rus[k] < c->n_rus &&
			      c->ru_machine[cl[i].rus[k]] == cl[i].machine;
		if (!one) /* as the Redis backend: RUs of the claim's machine, in partition p */
			rcs[i] = cl[i].machine < c->n_machines &&
			                         c->machines[cl[i].machine].partition == p
			                 ? RUSK_EINVAL
			                 : RUSK_ERANGE;
		else if (rusk_vec_any(&cl[i].vec))
			rcs[i] = rusk_ru_commit_vec(c, cl[i].task, cl[i].rus, cl[i].n, &cl[i].vec,
			                            NULL, leases + off, &lost);
		else
			rcs[i] = rusk_ru_commit_gang(c, cl[i].task, cl[i].rus, cl[i].n, NULL,
			                             leases + off, &lost);
		if (one && rcs[i] == RUSK_EOFFLINE)
			rcs[i] = RUSK_ECONFLICT;
		/* Every RU was free (rusk_ru_commit_vec: *lost_at = n), the shares short. */
		if (one && rcs[i] == RUSK_ECONFLICT && rusk_vec_any(&cl[i].vec) && lost == cl[i].n)
			rcs[i] = RUSK_ESHORT_;
		off += cl[i].n;
	}
	return RUSK_OK;
}

static int mem_release(void *self, uint32_t p, const rusk_bk_lease *ls, size_t n, int *rcs)
{
	rusk_cluster *c = self;
	if (p >= c->n_parts || (n > 0 && (ls == NULL || rcs == NULL)))
		return RUSK_EINVAL;
	for (size_t i = 0; i < n; i++)
		rcs[i] = rusk_ru_release(c, ls[i].task, ls[i].lease);
	return RUSK_OK;
}

static int mem_recount(void *self, uint32_t p, rusk_bk_count *out)
{
	rusk_cluster *c = self;
	if (p >= c->n_parts || out == NULL)
		return p >= c->n_parts ? RUSK_ERANGE : RUSK_EINVAL;
	const rusk_partition *pp = &c->parts[p];
	rusk_bk_count k = {0, 0, 0, rusk_load64(&pp->version, RUSK_RELAXED)};
	for (uint32_t i = 0; i < pp->n_rus; i++) {
		uint32_t ru = pp->first_ru + i, b = pp->first_bit + i;
		/* Relaxed: exact at quiescence, the recount's contract. */
		uint64_t owner = rusk_w_owner(rusk_load64(&c->ru_word[ru], RUSK_RELAXED));
		bool bit = (rusk_load64(&c->free_bits[b / 64], RUSK_RELAXED) >> (b % 64)) & 1;
		k.held += owner != 0 && owner != RUSK_OWNER_OFFLINE;
		k.free += bit;
		k.mismatch += bit != (owner == 0);
	}
	*out = k;
	return RUSK_OK;
}

static const rusk_backend_ops mem_ops = {
        .name = "memory",
        .snapshot = mem_snapshot,
        .commit = mem_commit,
        .release = mem_release,
        .recount = mem_recount,
};

int rusk_backend_memory_(rusk_cluster *c, rusk_backend *out)
{
	if (c == NULL || out == NULL)
		return RUSK_EINVAL;
	out->ops = &mem_ops;
	out->self = c;
	return RUSK_OK;
}
