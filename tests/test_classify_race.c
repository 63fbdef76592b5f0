/* SPDX-License-Identifier: MIT */
/*
 * Readers of a classification while another thread adds rows, feeds back and retrains
 * (rusk/classify.h; label concurrency, run again under ThreadSanitizer). Checks the
 * design note's invariants 1 and 2 from the readers' side: every classification sees one
 * whole model (the same profile classified twice against one version gives the same
 * bits), and the versions a reader sees never go back. Retired models are freed by
 * call_rcu while readers run (ASan would catch a use after free).
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#define READERS  2
#define RETRAINS 12
#define MAXV     (RETRAINS + 2)

typedef struct shared {
	rusk_cls *c;
	const rusk_cls_matrix *m;
	uint32_t cols;
	int done; /* atomic */
} shared;

typedef struct reader {
	pthread_t tid;
	shared *s;
	uint64_t classified, versions_seen, bad;
	double first[MAXV][RUSK_CLS_MAX_COLS]; /* the result per version */
	bool have[MAXV];
} reader;

static void *reader_main(void *arg)
{
	reader *r = arg;
	rusk_thread_register();
	rusk_cls_entry e[2];
	uint32_t n;
	rusk_cls_profile_row(r->s->m, RUSK_CLS_SCALE_UP, 999, 2, 0.03, 5, e, &n);
	uint64_t last = 0;
	while (!__atomic_load_n(&r->s->done, __ATOMIC_ACQUIRE)) {
		double out[RUSK_CLS_MAX_COLS];
		rusk_cls_fold_info fi;
		int rc = rusk_cls_classify(r->s->c, e, n, out, &fi);
		if (rc != RUSK_OK || fi.version < last || fi.version >= MAXV) {
			r->bad++;
			continue;
		}
		last = fi.version;
		for (uint32_t i = 0; i < r->s->cols; i++)
			r->bad += !(isfinite(out[i]) && out[i] > 0);
		if (!r->have[fi.version]) {
			memcpy(r->first[fi.version], out, sizeof(double) * r->s->cols);
			r->have[fi.version] = true;
			r->versions_seen++;
		} else if (memcmp(r->first[fi.version], out, sizeof(double) * r->s->cols) != 0) {
			r->bad++;
		}
		r->classified++;
	}
	rusk_thread_unregister();
	return NULL;
}

static void test_readers_during_retrains(void **state)
{
	(void)state;
	rusk_thread_register();
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = 1000;
	rusk_cls_truth *t;
	assert_int_equal(rusk_cls_truth_generate(&gp, &t, NULL, 0), RUSK_OK);
	shared s = {.m = rusk_cls_truth_matrix(t, RUSK_CLS_SCALE_UP)};
	s.cols = rusk_cls_matrix_cols(s.m);
	rusk_cls_params p;
	rusk_cls_params_init(&p, s.cols);
	assert_int_equal(rusk_cls_create(&p, &s.c, NULL, 0), RUSK_OK);
	rusk_cls_entry e[RUSK_CLS_MAX_COLS];
	uint32_t n, u = 0;
	for (; u < 40; u++) {
		rusk_cls_profile_row(s.m, RUSK_CLS_SCALE_UP, u, s.cols, 0.03, 1, e, &n);
		assert_int_equal(rusk_cls_add_row(s.c, e, n, NULL, NULL, 0), RUSK_OK);
	}
	assert_int_equal(rusk_cls_retrain(s.c, NULL, NULL, 0), RUSK_OK);
	reader *r = calloc(READERS, sizeof *r);
	assert_non_null(r);
	for (int i = 0; i < READERS; i++) {
		r[i].s = &s;
		assert_int_equal(pthread_create(&r[i].tid, NULL, reader_main, &r[i]), 0);
	}
	/* The writer: new jobs join with 2 entries, are fed back in full, and a retrain
	 * publishes a model while the readers classify. */
	for (int k = 0; k < RETRAINS; k++) {
		for (int j = 0; j < 20; j++, u++) {
			uint32_t row;
			rusk_cls_profile_row(s.m, RUSK_CLS_SCALE_UP, u, 2, 0.03, 2, e, &n);
			assert_int_equal(rusk_cls_add_row(s.c, e, n, &row, NULL, 0), RUSK_OK);
			rusk_cls_profile_row(s.m, RUSK_CLS_SCALE_UP, u, s.cols, 0.03, 3, e, &n);
			assert_int_equal(rusk_cls_feedback(s.c, row, e, n, NULL, 0), RUSK_OK);
		}
		rusk_cls_train_info ti;
		assert_int_equal(rusk_cls_retrain(s.c, &ti, NULL, 0), RUSK_OK);
		assert_int_equal(ti.version, (uint64_t)k + 2);
	}
	__atomic_store_n(&s.done, 1, __ATOMIC_RELEASE);
	uint64_t total = 0, seen = 0;
	for (int i = 0; i < READERS; i++) {
		pthread_join(r[i].tid, NULL);
		assert_int_equal(r[i].bad, 0);
		total += r[i].classified;
		seen += r[i].versions_seen;
	}
	print_message("%llu classifications by %d readers during %d retrains; %llu (reader, "
	              "version) pairs\n",
	              (unsigned long long)total, READERS, RETRAINS, (unsigned long long)seen);
	assert_true(total > 0);
	assert_int_equal(rusk_cls_version(s.c), RETRAINS + 1);
	free(r);
	rusk_cls_destroy(s.c);
	rusk_cls_truth_destroy(t);
	rusk_rcu_barrier();
	rusk_thread_unregister();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_readers_during_retrains),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
