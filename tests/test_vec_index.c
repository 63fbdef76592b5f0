/* SPDX-License-Identifier: MIT */
/*
 * The per-model chunk index (cluster.mchunk, vec_impl.h) and the decisions that draw from
 * it (choose.c, choose_vec1): the index covers each partition's RUs of each model exactly
 * once, in chunks within one machine (no machine of a model, every machine of it, one
 * machine); a one-RU task of one GPU model chooses each feasible RU with the frequency of
 * the best of R uniform draws over the feasible free RUs, as the draws over every model
 * filtered by model do (still used for tasks of several models), while drawing only the
 * model's RUs.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rusk/rusk.h>

#include "fixture.h"
#include "kernel/vec_impl.h"

static const rusk_platform plats[] = {
        {"A", 1.0, 1.0}, {"B", 1.0, 1.0}, {"C", 1.0, 1.0}, {"unused", 1.0, 1.0}};

/* Checks the index of c against its machines: for each partition and platform, every RU
 * of that platform in the partition is in exactly one chunk of (p, k), each chunk lies in
 * one machine of platform k, and full says whether each chunk has RUSK_CHUNK RUs. */
static void check_index(const rusk_cluster *c)
{
	uint8_t *seen = calloc(c->n_rus, 1);
	assert_non_null(seen);
	uint32_t total = 0;
	for (uint32_t p = 0; p < c->n_parts; p++) {
		const rusk_partition *pp = &c->parts[p];
		for (uint32_t k = 0; k < c->n_platforms; k++) {
			uint32_t n = 0;
			bool full = false, all16 = true;
			const uint64_t *ch = rusk_chunks_(c, p, k, &n, &full);
			total += n;
			for (uint32_t i = 0; i < n; i++) {
				uint32_t mi = RUSK_CHUNK_MACH(ch[i]), pos = RUSK_CHUNK_POS(ch[i]);
				uint32_t len = RUSK_CHUNK_LAST(ch[i]) + 1;
				assert_true(mi >= pp->first_machine &&
				            mi < pp->first_machine + pp->n_machines);
				const rusk_machine *mm = &c->machines[mi];
				assert_int_equal(mm->platform, k);
				uint32_t ru = pp->first_ru + pos;
				assert_true(ru >= mm->first_ru &&
				            ru + len <= mm->first_ru + mm->n_rus);
				for (uint32_t o = 0; o < len; o++)
					seen[ru + o]++;
				all16 &= len == RUSK_CHUNK;
			}
			assert_int_equal(full, all16);
		}
	}
	for (uint32_t ru = 0; ru < c->n_rus; ru++)
		assert_int_equal(seen[ru], 1);
	uint32_t want = 0;
	for (uint32_t m = 0; m < c->n_machines; m++)
		want += (c->machines[m].n_rus + RUSK_CHUNK - 1) / RUSK_CHUNK;
	assert_int_equal(total, want);
	free(seen);
}

/* Mixed models and sizes over 3 partitions: 40 RUs (chunks 16, 16, 8), 12, 16, 1; platform
 * 3 on no machine (no chunks anywhere). */
static void test_index_mixed(void **state)
{
	(void)state;
	rusk_machine_spec specs[24];
	static const uint32_t sizes[] = {40, 12, 16, 1, 16, 33};
	for (uint32_t m = 0; m < 24; m++)
		specs[m] =
		        (rusk_machine_spec){sizes[m % 6], 65536, 4, (m * 7 / 3) % 3, NULL, false};
	rusk_cluster *c = fx_machines(
	        specs, 24, (fx_shape){.per_rack = 2, .per_cell = 2, .partitions = 3}, plats, 4);
	check_index(c);
	for (uint32_t p = 0; p < c->n_parts; p++) {
		uint32_t n;
		bool full;
		rusk_chunks_(c, p, 3, &n, &full);
		assert_int_equal(n, 0);
	}
	rusk_cluster_destroy(c);
}

/* Every machine of one model: the others' chunk lists are empty. */
static void test_index_every_machine(void **state)
{
	(void)state;
	rusk_machine_spec specs[10];
	for (uint32_t m = 0; m < 10; m++)
		specs[m] = (rusk_machine_spec){16 + m, 65536, 2, 1, NULL, false};
	rusk_cluster *c = fx_machines(
	        specs, 10, (fx_shape){.per_rack = 1, .per_cell = 1, .partitions = 2}, plats, 4);
	check_index(c);
	uint32_t n, sum = 0;
	bool full;
	for (uint32_t p = 0; p < 2; p++) {
		rusk_chunks_(c, p, 0, &n, &full);
		assert_int_equal(n, 0);
		rusk_chunks_(c, p, 1, &n, &full);
		sum += n;
		assert_false(full); /* 17..25 RUs: a short last chunk */
	}
	assert_int_equal(sum, 1 + 9 * 2);
	rusk_cluster_destroy(c);
}

/* One machine of 16 RUs: one full chunk. */
static void test_index_one_machine(void **state)
{
	(void)state;
	rusk_machine_spec spec = {16, 65536, 8, 2, NULL, false};
	rusk_cluster *c = fx_machines(
	        &spec, 1, (fx_shape){.per_rack = 1, .per_cell = 1, .partitions = 1}, plats, 4);
	check_index(c);
	uint32_t n;
	bool full;
	const uint64_t *ch = rusk_chunks_(c, 0, 2, &n, &full);
	assert_int_equal(n, 1);
	assert_true(full);
	assert_int_equal(RUSK_CHUNK_MACH(ch[0]), 0);
	assert_int_equal(RUSK_CHUNK_POS(ch[0]), 0);
	assert_int_equal(RUSK_CHUNK_LAST(ch[0]), 15);
	rusk_cluster_destroy(c);
}

enum { N_MACH = 16, MAX_RUS = 20, R = 4, DECISIONS = 60000 };

/*
 * One partition, models A and B alternating; B machines of `rus_b` RUs (RUs on A: 16).
 * Every other RU held. Of the B machines, one has no GPU and one too little memory: free
 * RUs of the model that the task cannot use, rejected by the live test alone. A 1-RU task
 * of 0.5 GPU of model B and 4 GiB, R = 4, decided DECISIONS times on the same view (no
 * commit): each feasible free RU must be chosen with the probability that the best of R
 * uniform draws over the N feasible free RUs is it, ((N - j + 1)^R - (N - j)^R) / N^R for
 * the j-th best (slot scores all distinct); chi-square against it. Returns the mean draws
 * a decision.
 */
static double uniform_case(uint32_t rus_b, uint32_t models)
{
	rusk_machine_spec specs[N_MACH];
	static uint16_t scores[N_MACH][MAX_RUS];
	for (uint32_t m = 0; m < N_MACH; m++) {
		bool b = m & 1;
		uint32_t mem = b && m == 3 ? 1024 : 65536, gpus = b && m == 5 ? 0 : 4;
		specs[m] = (rusk_machine_spec){b ? rus_b : 16, mem, gpus, b, scores[m], false};
		for (uint32_t k = 0; k < MAX_RUS; k++) /* distinct: 7919 is prime to 4001 */
			scores[m][k] = (uint16_t)(1 + (m * MAX_RUS + k) * 7919u % 4001u);
	}
	rusk_cluster *c = fx_machines(
	        specs, N_MACH, (fx_shape){.per_rack = 4, .per_cell = 1, .partitions = 1}, plats, 4);
	rusk_lease l;
	for (uint32_t ru = 0; ru < rusk_cluster_rus(c); ru += 2)
		assert_int_equal(rusk_ru_commit(c, 100 + ru, ru, NULL, &l), RUSK_OK);
	/* the feasible free RUs, best score first */
	uint32_t feas[N_MACH * MAX_RUS], n = 0;
	for (uint32_t ru = 1; ru < rusk_cluster_rus(c); ru += 2) {
		uint32_t m = rusk_cluster_ru_machine(c, ru);
		if ((m & 1) && m != 3 && m != 5)
			feas[n++] = ru;
	}
	for (uint32_t i = 1; i < n; i++) /* insertion sort by score, decreasing */
		for (uint32_t j = i; j > 0 && c->ru_score[feas[j]] > c->ru_score[feas[j - 1]];
		     j--) {
			uint32_t x = feas[j];
			feas[j] = feas[j - 1];
			feas[j - 1] = x;
		}
	rusk_sync_params sp;
	rusk_sync_params_init(&sp, 1, 1);
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	ap.sample = R;
	rusk_agent *a;
	assert_int_equal(rusk_agent_create(c, &ap, &a, NULL, 0), RUSK_OK);
	rusk_view_sync(rusk_agent_view(a), 0);
	rusk_task t = {.id = 1, .rus = 1, .gang = true, .placement = RUSK_PLACE_MACHINE};
	t.vec = (rusk_vec_demand){
	        .mem_mib = 4096, .gpus = 1, .gpu_milli = 500, .gpu_models = models};
	uint32_t *count = calloc(rusk_cluster_rus(c), sizeof *count);
	assert_non_null(count);
	uint64_t samples = 0;
	for (uint32_t i = 0; i < DECISIONS; i++) {
		uint32_t ru;
		rusk_placement pl;
		assert_int_equal(rusk_agent_choose(a, &t, &ru, &pl), RUSK_OK);
		count[ru]++;
		samples += pl.samples;
	}
	double chi2 = 0;
	uint32_t hit = 0;
	for (uint32_t j = 0; j < n; j++) {
		double e = (pow(n - j, R) - pow(n - j - 1, R)) / pow(n, R) * DECISIONS;
		chi2 += (count[feas[j]] - e) * (count[feas[j]] - e) / e;
		hit += count[feas[j]];
	}
	assert_int_equal(hit, DECISIONS); /* nothing infeasible, held or of model A */
	/* n - 1 degrees of freedom (n = 32 or 40); the bound is above the 1e-6 tail. */
	double bound = (n - 1) + 7.0 * sqrt(2.0 * (n - 1));
	print_message("%u RUs a B machine, models %#x: chi2 %.1f over %u RUs (bound %.1f), %.2f "
	              "draws\n",
	              rus_b, models, chi2, n, bound, (double)samples / DECISIONS);
	assert_true(chi2 < bound);
	free(count);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
	return (double)samples / DECISIONS;
}

/* B machines of 16 RUs: full chunks (the loop without the offset test). Draws: R / (3/4)
 * of the model's free RUs are feasible, where draws over every model took twice that. */
static void test_uniform_full_chunks(void **state)
{
	(void)state;
	double draws = uniform_case(16, 1u << 1);
	assert_true(draws < 1.5 * R * 4 / 3);
}

/* B machines of 20 RUs: chunks of 16 and 4 (slots past a chunk's end rejected). */
static void test_uniform_short_chunks(void **state)
{
	(void)state;
	double draws = uniform_case(20, 1u << 1);
	assert_true(draws < 1.5 * R * 4 / 3);
}

/* The old sampler, kept for tasks of several models: every free RU drawn and those of
 * another model dropped (models B or C, no machine of C). The same frequencies, at about
 * twice the draws. */
static void test_uniform_old_sampler(void **state)
{
	(void)state;
	double draws = uniform_case(16, 1u << 1 | 1u << 2);
	assert_true(draws > 1.5 * R * 4 / 3);
}

int main(void)
{
	rusk_thread_register();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_index_mixed),
	        cmocka_unit_test(test_index_every_machine),
	        cmocka_unit_test(test_index_one_machine),
	        cmocka_unit_test(test_uniform_full_chunks),
	        cmocka_unit_test(test_uniform_short_chunks),
	        cmocka_unit_test(test_uniform_old_sampler),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_thread_unregister();
	return rc;
}
