/* SPDX-License-Identifier: MIT */
/*
 * A vector decision's value cache (choose.c, vval_sum; issue 32): an agent keeps, per
 * machine, the best free slot scores it read and the machine's bits in its view when it
 * read them, and values a partly free machine from them while those bits are unchanged.
 * It must change no decision. Two identical clusters, each with one agent of the same seed,
 * one with the cache and one without (rusk_agent.vval_off), go through the same random
 * steps: vector tasks placed (commits, conflicts with the view's staleness), tasks released
 * (marked free in the view or not), partitions synced. Every placement must be the same,
 * and after every step every entry whose bits are the view's must hold exactly the best
 * free scores a fresh read gives. Machines of 8 to 130 RUs (above RUSK_VVAL_RUS: never
 * cached), scores with many ties, tasks of 2 to 24 RUs (above RUSK_VVAL_SCORES: valued
 * without the cache). The view's per-machine free counts (rusk_view_mfree_, read by the
 * exact sets' listing) are checked the same way: after every step, each partition whose
 * counts are kept must have every machine's count equal to its bits in the view.
 *
 * The listing cache (choose.c, vset_build) likewise: an agent reuses a partition's exact set
 * for a demand while the partition's live vector words (rusk_partition.vgen) and its bits in
 * the view (rusk_view_gen_) have not changed. Two agents share each cluster here, so one's
 * commits and releases change the live words under the other's entries; the two agents of
 * one cluster cache, the other cluster's do not, and every placement must be the same.
 * After every step, every entry whose generations are current must hold exactly the set a
 * fresh pass gives (a writer that changed the words without moving a generation fails it,
 * and so does a wrong patch: an entry brought up to date after one machine's change).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rusk/rusk.h>

#include "fixture.h"
#include "kernel/decision.h"
#include "kernel/vec_impl.h"

static const rusk_platform plats[] = {{"A", 1.0, 1.0}};

enum { N_MACH = 36, STEPS = 6000, MAX_TASKS = 512, MAX_M = 24 };

static const uint32_t sizes[] = {96, 16, 130, 64, 24, 8};
static uint16_t scores[N_MACH][130];

/* 36 machines of 8 to 130 RUs; machine m has gpus[m % n_gpus] GPUs. */
static rusk_cluster *make_cluster_gpus(const uint32_t *gpus, uint32_t n_gpus)
{
	rusk_machine_spec specs[N_MACH];
	uint64_t x = 7;
	for (uint32_t m = 0; m < N_MACH; m++) {
		uint32_t rus = sizes[m % 6];
		for (uint32_t k = 0; k < rus; k++) /* 21 values: many ties */
			scores[m][k] = (uint16_t)(500 + rusk_splitmix64(&x) % 21);
		specs[m] = (rusk_machine_spec){rus, 65536, gpus[m % n_gpus], 0, scores[m], false};
	}
	return fx_machines(specs, N_MACH, (fx_shape){.per_rack = 2, .per_cell = 2, .partitions = 3},
	                   plats, 1);
}

/* The value cache's cluster: 4 GPUs a machine, none on every fifth. */
static rusk_cluster *make_cluster(void)
{
	static const uint32_t gpus[] = {4, 4, 4, 4, 0};
	return make_cluster_gpus(gpus, 5);
}

static int cmp_desc(const void *x, const void *y)
{
	uint16_t a = *(const uint16_t *)x, b = *(const uint16_t *)y;
	return (a < b) - (a > b);
}

/* Every entry of a's cache whose bits are machine's bits in a's view now holds its best
 * min(RUSK_VVAL_SCORES, free) free scores, best first, as read afresh. Returns how many
 * entries were checked. */
static uint32_t check_cache(rusk_cluster *c, rusk_agent *a)
{
	if (a->vval == NULL)
		return 0;
	const uint64_t *bits = rusk_agent_view(a)->bits;
	uint32_t checked = 0;
	for (uint32_t i = 0; i <= a->vval_mask; i++) {
		const rusk_vval *e = &a->vval[i];
		if (e->tag == 0)
			continue;
		uint32_t mi = e->tag - 1;
		assert_true(mi < c->n_machines);
		assert_int_equal(mi & a->vval_mask, i);
		const rusk_machine *mm = &c->machines[mi];
		assert_true(mm->n_rus <= RUSK_VVAL_RUS);
		uint64_t x[2] = {0, 0};
		uint16_t fr[RUSK_VVAL_RUS];
		uint32_t n = 0;
		for (uint32_t k = 0; k < mm->n_rus; k++) {
			uint32_t b = mm->first_bit + k;
			if ((bits[b / 64] >> (b % 64)) & 1) {
				x[k / 64] |= UINT64_C(1) << (k % 64);
				fr[n++] = c->ru_score[mm->first_ru + k];
			}
		}
		if (x[0] != e->bits[0] || x[1] != e->bits[1])
			continue; /* stale: a lookup must miss it */
		qsort(fr, n, sizeof *fr, cmp_desc);
		uint32_t want = n < RUSK_VVAL_SCORES ? n : RUSK_VVAL_SCORES;
		assert_int_equal(e->n, want);
		for (uint32_t k = 0; k < want; k++)
			assert_int_equal(e->sc[k], fr[k]);
		checked++;
	}
	return checked;
}

/* Machine mm's free RUs in view v, bit by bit. */
static uint32_t view_free_on(const rusk_view *v, const rusk_machine *mm)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < mm->n_rus; k++) {
		uint32_t b = mm->first_bit + k;
		n += (uint32_t)(v->bits[b / 64] >> (b % 64)) & 1u;
	}
	return n;
}

/* The view's per-machine free counts, where kept, against its bits; returns how many
 * partitions were checked. */
static uint32_t check_mfree(rusk_cluster *c, rusk_agent *a)
{
	const rusk_view *v = rusk_agent_view(a);
	uint32_t checked = 0;
	for (uint32_t p = 0; v->mfree != NULL && p < c->n_parts; p++) {
		if (!v->mfree_ok[p])
			continue;
		const rusk_partition *pp = &c->parts[p];
		for (uint32_t mi = pp->first_machine; mi < pp->first_machine + pp->n_machines;
		     mi++) {
			assert_int_equal(v->mfree[mi], view_free_on(v, &c->machines[mi]));
		}
		checked++;
	}
	return checked;
}

typedef struct held {
	uint64_t id;
	uint32_t n;
	rusk_lease l[2][MAX_M]; /* per side */
} held;

/* The two sides' placements of task t (results rc, placements pl, leases in h) are the
 * same: result, draws, quality and RUs. True when t was placed (h then holds it), false
 * when neither side found room. */
static bool placed_alike(const int rc[2], const rusk_placement pl[2], const rusk_task *t, held *h)
{
	assert_int_equal(rc[0], rc[1]);
	assert_int_equal(pl[0].samples, pl[1].samples);
	assert_true(pl[0].quality == pl[1].quality);
	if (rc[0] != RUSK_OK) {
		assert_int_equal(rc[0], RUSK_EAGAIN);
		return false;
	}
	assert_int_equal(pl[0].placed, t->rus);
	for (uint32_t k = 0; k < t->rus; k++)
		assert_int_equal(h->l[0][k].ru, h->l[1][k].ru);
	h->id = t->id;
	h->n = t->rus;
	return true;
}

static void test_vval_same_decisions(void **state)
{
	(void)state;
	rusk_cluster *c[2] = {make_cluster(), make_cluster()};
	rusk_agent *a[2];
	for (int s = 0; s < 2; s++) {
		rusk_agent_params ap = fx_agent_params(c[s]);
		ap.seed = 5;
		ap.quality = RUSK_QUALITY_SCORE;
		a[s] = fx_agent(c[s], &ap, true);
	}
	a[1]->vval_off = true;
	static held tasks[MAX_TASKS];
	uint32_t n_tasks = 0, placed = 0, checked = 0, counted = 0;
	uint64_t x = 11, next_id = 1;
	static const uint32_t ms[] = {2, 3, 4, 5, 8, 12, 13, 20, 21, 24};
	for (uint32_t step = 0; step < STEPS; step++) {
		uint32_t op = (uint32_t)(rusk_splitmix64(&x) % 100);
		if (op < 55 && n_tasks < MAX_TASKS) {
			rusk_task t = {
			        .id = next_id++, .gang = true, .placement = RUSK_PLACE_MACHINE};
			t.rus = ms[rusk_splitmix64(&x) % (sizeof ms / sizeof ms[0])];
			t.vec.mem_mib = 1024 * (1 + (uint32_t)(rusk_splitmix64(&x) % 8));
			if (rusk_splitmix64(&x) % 4 != 0) {
				t.vec.gpus = 1;
				t.vec.gpu_milli = 100 * (1 + (uint32_t)(rusk_splitmix64(&x) % 9));
			}
			held *h = &tasks[n_tasks];
			rusk_placement pl[2];
			int rc[2];
			for (int s = 0; s < 2; s++)
				rc[s] = rusk_agent_place(a[s], &t, h->l[s], &pl[s]);
			if (placed_alike(rc, pl, &t, h)) {
				n_tasks++;
				placed++;
			}
		} else if (op < 85 && n_tasks > 0) {
			uint32_t i = (uint32_t)(rusk_splitmix64(&x) % n_tasks);
			bool mark = rusk_splitmix64(&x) % 2 == 0; /* else: the view stays stale */
			for (int s = 0; s < 2; s++) {
				assert_int_equal(rusk_agent_release(a[s], tasks[i].id,
				                                    tasks[i].l[s], tasks[i].n,
				                                    NULL),
				                 RUSK_OK);
				for (uint32_t k = 0; mark && k < tasks[i].n; k++)
					rusk_view_mark_free(rusk_agent_view(a[s]),
					                    tasks[i].l[s][k].ru);
			}
			tasks[i] = tasks[--n_tasks];
		} else {
			uint32_t p = (uint32_t)(rusk_splitmix64(&x) % 3);
			for (int s = 0; s < 2; s++)
				assert_int_equal(rusk_view_sync(rusk_agent_view(a[s]), p), RUSK_OK);
		}
		checked += check_cache(c[0], a[0]);
		for (int s = 0; s < 2; s++)
			counted += check_mfree(c[s], a[s]);
	}
	print_message("%u placed; cache %llu hits, %llu misses; %u entries checked; %u "
	              "partitions' free counts checked\n",
	              placed, (unsigned long long)a[0]->vval_hits,
	              (unsigned long long)a[0]->vval_misses, checked, counted);
	assert_true(placed > STEPS / 10);
	assert_true(a[0]->vval_hits > 1000 && a[0]->vval_misses > 100);
	assert_true(a[1]->vval == NULL && a[1]->vval_hits == 0);
	assert_true(checked > 1000);
	assert_true(counted > 1000);
	for (int s = 0; s < 2; s++) {
		for (uint32_t i = 0; i < n_tasks; i++)
			assert_int_equal(rusk_agent_release(a[s], tasks[i].id, tasks[i].l[s],
			                                    tasks[i].n, NULL),
			                 RUSK_OK);
		rusk_agent_destroy(a[s]);
		rusk_cluster_destroy(c[s]);
	}
}

/* Every entry of a's listing cache whose generations are current against a fresh pass
 * over its partition: the machines that fit the demand's shape, have its RUs free in the
 * view and could hold it now, in order, each weighted by its free RUs in the view. Returns
 * how many entries were checked. */
static uint32_t check_vlist(rusk_cluster *c, rusk_agent *a)
{
	const rusk_view *v = rusk_agent_view(a);
	uint32_t checked = 0;
	for (uint32_t i = 0; a->vlist != NULL && i < RUSK_VLIST; i++) {
		const rusk_vlist *e = &a->vlist[i];
		if (e->key == 0 || e->cgen != c->parts[e->p].vgen ||
		    e->viewgen != v->parts[e->p].gen)
			continue;
		const rusk_partition *pp = &c->parts[e->p];
		const rusk_vfit f = rusk_vfit_make_(&e->vec);
		uint32_t n = 0, cum = 0;
		for (uint32_t mi = pp->first_machine; mi < pp->first_machine + pp->n_machines;
		     mi++) {
			uint32_t k = view_free_on(v, &c->machines[mi]);
			if (!rusk_vec_shape_fits_(c, mi, &e->vec) || k < e->rus ||
			    !rusk_vec_fits_now_(c, mi, &f))
				continue;
			cum += k;
			assert_true(n < e->n);
			assert_int_equal(e->ents[n].mi, mi);
			assert_int_equal(e->ents[n].cum, cum);
			n++;
		}
		assert_int_equal(n, e->n);
		assert_int_equal(cum, e->w);
		checked++;
	}
	return checked;
}

/* The listing tests' cluster: machines with 8, 4, 2 or no GPUs (with 8, GPUs 4 to 7 are in
 * a machine's second lane word). */
static rusk_cluster *make_gpu_cluster(void)
{
	static const uint32_t gpus[] = {8, 4, 0, 8, 2, 4, 8};
	return make_cluster_gpus(gpus, 7);
}

/* A vector demand for the listing tests. many: of many shapes (most hash to distinct
 * entries, so most reuses are a place() call's retries); else of a few (entries are met
 * again across steps: one machine's live change, or two machines', are patched): shares
 * of one GPU, 2 to 4 whole GPUs (the second lane word), memory alone, GPUs alone. */
static void vlist_demand(rusk_task *t, uint64_t *x, bool many)
{
	static const uint32_t ms[] = {2, 3, 4, 5, 8, 12, 13, 20, 21, 24};
	uint32_t kind = (uint32_t)(rusk_splitmix64(x) % 4);
	if (many) {
		t->rus = ms[rusk_splitmix64(x) % (sizeof ms / sizeof ms[0])];
		t->vec.mem_mib = 1024 * (1 + (uint32_t)(rusk_splitmix64(x) % 8));
		if (kind != 0) {
			t->vec.gpus = 1;
			t->vec.gpu_milli = 100 * (1 + (uint32_t)(rusk_splitmix64(x) % 9));
		}
		return;
	}
	t->rus = 2 + (uint32_t)(rusk_splitmix64(x) % 2);
	t->vec.mem_mib = kind == 3 ? 0 : 1024 * (1 + (uint32_t)(rusk_splitmix64(x) % 2));
	if (kind == 1) {
		t->vec.gpus = 1;
		t->vec.gpu_milli = 500;
	} else if (kind >= 2) {
		t->vec.gpus = (uint16_t)(2 + rusk_splitmix64(x) % 3);
		t->vec.gpu_milli = 1000;
	}
}

/* Two clusters, two agents each (listing cache on in cluster 0, off in cluster 1), the same
 * random steps on both: a vector task placed by one agent, a task released (its view marked
 * or left stale), a partition synced by one agent. */
static void vlist_same_decisions(bool many)
{
	rusk_cluster *c[2] = {make_gpu_cluster(), make_gpu_cluster()};
	rusk_agent *a[2][2];
	for (int s = 0; s < 2; s++)
		for (int g = 0; g < 2; g++) {
			rusk_agent_params ap = fx_agent_params(c[s]);
			ap.seed = 5 + (uint64_t)g;
			ap.quality = RUSK_QUALITY_SCORE;
			a[s][g] = fx_agent(c[s], &ap, true);
			a[s][g]->vlist_off = s == 1;
		}
	static held tasks[MAX_TASKS];
	static uint32_t owner[MAX_TASKS];
	uint32_t n_tasks = 0, placed = 0, checked = 0;
	uint64_t x = 23, next_id = 1;
	for (uint32_t step = 0; step < STEPS; step++) {
		uint32_t op = (uint32_t)(rusk_splitmix64(&x) % 100);
		uint32_t g = (uint32_t)(rusk_splitmix64(&x) % 2);
		if (op < 55 && n_tasks < MAX_TASKS) {
			rusk_task t = {
			        .id = next_id++, .gang = true, .placement = RUSK_PLACE_MACHINE};
			vlist_demand(&t, &x, many);
			held *h = &tasks[n_tasks];
			rusk_placement pl[2];
			int rc[2];
			for (int s = 0; s < 2; s++)
				rc[s] = rusk_agent_place(a[s][g], &t, h->l[s], &pl[s]);
			if (placed_alike(rc, pl, &t, h)) {
				owner[n_tasks++] = g;
				placed++;
			}
		} else if (op < 85 && n_tasks > 0) {
			uint32_t i = (uint32_t)(rusk_splitmix64(&x) % n_tasks);
			bool mark = rusk_splitmix64(&x) % 2 == 0; /* else: the view stays stale */
			for (int s = 0; s < 2; s++) {
				rusk_agent *o = a[s][owner[i]];
				assert_int_equal(rusk_agent_release(o, tasks[i].id, tasks[i].l[s],
				                                    tasks[i].n, NULL),
				                 RUSK_OK);
				for (uint32_t k = 0; mark && k < tasks[i].n; k++)
					rusk_view_mark_free(rusk_agent_view(o),
					                    tasks[i].l[s][k].ru);
			}
			owner[i] = owner[n_tasks - 1];
			tasks[i] = tasks[--n_tasks];
		} else {
			uint32_t p = (uint32_t)(rusk_splitmix64(&x) % 3);
			for (int s = 0; s < 2; s++)
				assert_int_equal(rusk_view_sync(rusk_agent_view(a[s][g]), p),
				                 RUSK_OK);
		}
		for (int k = 0; k < 2; k++)
			checked += check_vlist(c[0], a[0][k]);
	}
	uint64_t hits = a[0][0]->vlist_hits + a[0][1]->vlist_hits;
	uint64_t patched = a[0][0]->vlist_patched + a[0][1]->vlist_patched;
	print_message("%s shapes: %u placed; listing cache %llu hits (%llu, %llu), %llu of them "
	              "patched; %u "
	              "entries checked\n",
	              many ? "many" : "few", placed, (unsigned long long)hits,
	              (unsigned long long)a[0][0]->vlist_hits,
	              (unsigned long long)a[0][1]->vlist_hits, (unsigned long long)patched,
	              checked);
	assert_true(placed > STEPS / 10);
	assert_true(a[0][0]->vlist_hits > 100 && a[0][1]->vlist_hits > 100);
	assert_true(patched > 100 && patched < hits);
	assert_true(a[1][0]->vlist_hits == 0 && a[1][1]->vlist_hits == 0);
	assert_true(checked > 1000);
	for (int s = 0; s < 2; s++) {
		for (uint32_t i = 0; i < n_tasks; i++)
			assert_int_equal(rusk_agent_release(a[s][owner[i]], tasks[i].id,
			                                    tasks[i].l[s], tasks[i].n, NULL),
			                 RUSK_OK);
		for (int g = 0; g < 2; g++)
			rusk_agent_destroy(a[s][g]);
		rusk_cluster_destroy(c[s]);
	}
}

static void test_vlist_same_decisions(void **state)
{
	(void)state;
	vlist_same_decisions(true);
}

static void test_vlist_few_shapes(void **state)
{
	(void)state;
	vlist_same_decisions(false);
}

int main(void)
{
	rusk_thread_register();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_vval_same_decisions),
	        cmocka_unit_test(test_vlist_same_decisions),
	        cmocka_unit_test(test_vlist_few_shapes),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_thread_unregister();
	return rc;
}
