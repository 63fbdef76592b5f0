/* SPDX-License-Identifier: MIT */
/*
 * Allocation sized to a performance target (rusk/classify.h, Quasar §3.3): known rows give
 * a known size (scale-up before scale-out, memory blocks, platform and interference
 * ranking, fall-back to lower-ranked machines), an unreachable target gives
 * RUSK_EINFEASIBLE with the best allocation, bad input gives RUSK_EINVAL, and sizing from
 * classified rows is deterministic and close to its target on the generator.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "base/alloc.h"

#define R 8
#define B 4
#define S 8
#define P 2

static const rusk_cls_shape shape = {R, B, S, P};

/* Linear rows: SU[r, b] = r x min(1, b / w), SO[n] = n, HE = he0, he1 (SU[1, 1] = 1 when
 * w <= 1), every resource tolerated at 50, causes 20. */
static void linear(rusk_cls_job_estimate *e, double w, double he0, double he1)
{
	memset(e, 0, sizeof *e);
	e->cols[RUSK_CLS_SCALE_UP] = R * B;
	e->cols[RUSK_CLS_SCALE_OUT] = S;
	e->cols[RUSK_CLS_HETEROGENEITY] = P;
	e->cols[RUSK_CLS_INTERFERENCE] = RUSK_CLS_INTERFERENCE_COLS;
	for (uint32_t r = 1; r <= R; r++)
		for (uint32_t b = 1; b <= B; b++)
			e->v[RUSK_CLS_SCALE_UP][(r - 1) * B + b - 1] = r * fmin(1.0, b / w);
	for (uint32_t n = 1; n <= S; n++)
		e->v[RUSK_CLS_SCALE_OUT][n - 1] = n;
	e->v[RUSK_CLS_HETEROGENEITY][0] = he0;
	e->v[RUSK_CLS_HETEROGENEITY][1] = he1;
	for (int r = 0; r < RUSK_N_RESOURCES; r++) {
		e->v[RUSK_CLS_INTERFERENCE][r] = 50;
		e->v[RUSK_CLS_INTERFERENCE][RUSK_N_RESOURCES + r] = 20;
	}
}

static void machines(rusk_cls_machine *m, uint32_t n, uint32_t platform)
{
	for (uint32_t i = 0; i < n; i++)
		m[i] = (rusk_cls_machine){
		        .platform = platform, .free_rus = R, .free_mem_blocks = B};
}

static rusk_cls_target tput(double v)
{
	return (rusk_cls_target){RUSK_CLS_TARGET_THROUGHPUT, v, 0};
}

/* One machine first, growing its RUs (scale-up); then two machines (scale-out). */
static void test_scale_up_then_out(void **state)
{
	(void)state;
	rusk_cls_job_estimate e;
	linear(&e, 1, 1, 1);
	rusk_cls_machine m[4];
	machines(m, 4, 0);
	rusk_cls_alloc a;
	rusk_cls_target t = tput(5);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 4, 0, &a), RUSK_OK);
	assert_true(a.met);
	assert_int_equal(a.machines, 1);
	assert_int_equal(a.rus, 5);
	assert_int_equal(a.mem_blocks, 1);
	assert_true(fabs(a.perf - 5) < 1e-12);
	assert_int_equal(a.machine[0], 0); /* ties: lower index */
	assert_int_equal(a.n_platforms, 1);
	assert_int_equal(a.platform[0], 0);
	t = tput(12); /* more than one machine's 8: two machines of 6 RUs */
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 4, 0, &a), RUSK_OK);
	assert_int_equal(a.machines, 2);
	assert_int_equal(a.rus, 6);
	assert_int_equal(a.machine[0], 0);
	assert_int_equal(a.machine[1], 1);
}

/* Memory blocks grow with the RUs: SU = r x min(1, b / 2) needs (3 RUs, 2 blocks) for 3. */
static void test_memory_blocks(void **state)
{
	(void)state;
	rusk_cls_job_estimate e;
	linear(&e, 2, 0.5, 0.5); /* SU[1, 1] = 0.5: h = 1 */
	rusk_cls_machine m[1];
	machines(m, 1, 0);
	rusk_cls_alloc a;
	rusk_cls_target t = tput(3);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 1, 0, &a), RUSK_OK);
	assert_int_equal(a.rus, 3);
	assert_int_equal(a.mem_blocks, 2);
	assert_int_equal(a.machines, 1);
}

/* The faster platform ranks first and needs fewer RUs; a completion target is work /
 * time. */
static void test_platform_rank_and_completion(void **state)
{
	(void)state;
	rusk_cls_job_estimate e;
	linear(&e, 1, 1, 2); /* platform 1 is twice as fast */
	rusk_cls_machine m[2];
	machines(m, 2, 0);
	m[1].platform = 1;
	rusk_cls_alloc a;
	rusk_cls_target t = {RUSK_CLS_TARGET_COMPLETION, 10, 40}; /* 40 units in 10 s: 4/s */
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 2, 0, &a), RUSK_OK);
	assert_true(fabs(a.target_perf - 4) < 1e-12);
	assert_int_equal(a.machine[0], 1);
	assert_int_equal(a.rus, 2);
	assert_int_equal(a.platform[0], 1);
	assert_true(fabs(a.est_time - 10) < 1e-9);
	/* Blind: least-loaded order and platform speed ignored: 4 RUs on machine 0. */
	m[0].free_rus = R;
	m[1].free_rus = R - 1;
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 2, RUSK_CLS_ALLOC_BLIND, &a),
	                 RUSK_OK);
	assert_int_equal(a.machine[0], 0);
	assert_int_equal(a.rus, 4);
}

/* A machine whose tenants press hard where the job is sensitive ranks below a quiet one. */
static void test_interference_rank(void **state)
{
	(void)state;
	rusk_cls_job_estimate e;
	linear(&e, 1, 1, 1);
	rusk_cls_machine m[2];
	machines(m, 2, 0);
	m[0].pressure[3] = 100; /* tolerated 50: factor 1 / (1 + 0.05 x 4) */
	double f = rusk_cls_interference_factor(e.v[RUSK_CLS_INTERFERENCE], m[0].pressure);
	assert_true(fabs(f - 1 / 1.2) < 1e-12);
	rusk_cls_alloc a;
	rusk_cls_target t = tput(3);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 2, 0, &a), RUSK_OK);
	assert_int_equal(a.machine[0], 1);
	assert_int_equal(a.rus, 3);
	/* rusk_cls_perf agrees with the allocator on the noisy machine. */
	uint32_t pl = 0;
	double p = rusk_cls_perf(&shape, &e, 3, 1, 1, &pl,
	                         (const double(*)[RUSK_N_RESOURCES])m[0].pressure, 0);
	assert_true(fabs(p - 3 / 1.2) < 1e-12);
}

/* When the best machines lack room, lower-ranked ones are used. */
static void test_fall_back(void **state)
{
	(void)state;
	rusk_cls_job_estimate e;
	linear(&e, 1, 1, 2);
	rusk_cls_machine m[2];
	machines(m, 2, 0);
	m[1].platform = 1;
	m[1].free_rus = 2; /* fast but nearly full: at most 4 units/s */
	rusk_cls_alloc a;
	rusk_cls_target t = tput(6);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 2, 0, &a), RUSK_OK);
	assert_int_equal(a.machines, 1);
	assert_int_equal(a.machine[0], 0);
	assert_int_equal(a.rus, 6);
}

/* Unreachable: RUSK_EINFEASIBLE and the highest-throughput allocation found. */
static void test_unreachable(void **state)
{
	(void)state;
	rusk_cls_job_estimate e;
	linear(&e, 1, 1, 1);
	rusk_cls_machine m[4];
	machines(m, 4, 0);
	rusk_cls_alloc a;
	rusk_cls_target t = tput(40); /* 4 machines x 8 RUs = 32 at most */
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 4, 0, &a), RUSK_EINFEASIBLE);
	assert_false(a.met);
	assert_int_equal(a.machines, 4);
	assert_int_equal(a.rus, R);
	assert_true(fabs(a.perf - 32) < 1e-12);
	/* No room anywhere: nothing allocated. */
	for (int i = 0; i < 4; i++)
		m[i].free_rus = 0;
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 4, 0, &a), RUSK_EINFEASIBLE);
	assert_int_equal(a.machines, 0);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, NULL, 0, 0, &a), RUSK_EINFEASIBLE);
}

static void test_bad_input(void **state)
{
	(void)state;
	rusk_cls_job_estimate e;
	linear(&e, 1, 1, 1);
	rusk_cls_machine m[1];
	machines(m, 1, 0);
	rusk_cls_alloc a;
	rusk_cls_target t = tput(1);
	assert_int_equal(rusk_cls_alloc_size(NULL, &e, &t, m, 1, 0, &a), RUSK_EINVAL);
	assert_int_equal(rusk_cls_alloc_size(&shape, NULL, &t, m, 1, 0, &a), RUSK_EINVAL);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, NULL, m, 1, 0, &a), RUSK_EINVAL);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 1, 0, NULL), RUSK_EINVAL);
	rusk_cls_shape bad = shape;
	bad.su_mem_blocks = 2; /* does not match cols */
	assert_int_equal(rusk_cls_alloc_size(&bad, &e, &t, m, 1, 0, &a), RUSK_EINVAL);
	rusk_cls_target t0 = tput(0), tn = tput(NAN);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t0, m, 1, 0, &a), RUSK_EINVAL);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &tn, m, 1, 0, &a), RUSK_EINVAL);
	rusk_cls_target tw = {RUSK_CLS_TARGET_COMPLETION, 10, 0};
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &tw, m, 1, 0, &a), RUSK_EINVAL);
	m[0].platform = P;
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 1, 0, &a), RUSK_EINVAL);
	m[0].platform = 0;
	m[0].pressure[2] = NAN;
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 1, 0, &a), RUSK_EINVAL);
	m[0].pressure[2] = -1;
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 1, 0, &a), RUSK_EINVAL);
	m[0].pressure[2] = 0;
	e.v[RUSK_CLS_SCALE_OUT][3] = NAN;
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 1, 0, &a), RUSK_EINVAL);
	uint32_t pl = 0;
	assert_true(rusk_cls_perf(&shape, &e, 1, 1, 1, &pl, NULL, 0) < 0);
	linear(&e, 1, 1, 1);
	assert_true(rusk_cls_perf(&shape, &e, R + 1, 1, 1, &pl, NULL, 0) < 0);
	assert_true(rusk_cls_interference_factor(NULL, m[0].pressure) < 0);
	rusk_fault_alloc_fail_at = 1;
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 1, 0, &a), RUSK_ENOMEM);
	rusk_fault_alloc_fail_at = 0;
}

/* Tarcil Q through the kernel's code: on a quiet RU it is the task's target T_W. */
static void test_tarcil_q(void **state)
{
	(void)state;
	double caused[RUSK_N_RESOURCES] = {90, 10, 50, 5, 0, 0, 30, 70, 20, 100};
	double zero[RUSK_N_RESOURCES] = {0};
	rusk_profile prof = {{90, 10, 50, 5, 0, 0, 30, 70, 20, 99}};
	assert_true(fabs(rusk_cls_tarcil_q(caused, zero) - rusk_quality_target(&prof)) < 1e-12);
	double busy[RUSK_N_RESOURCES] = {99, 99, 99, 99, 99, 99, 99, 99, 99, 99};
	double q = rusk_cls_tarcil_q(caused, busy);
	assert_true(q >= 0 && q <= 1);
	assert_true(rusk_cls_tarcil_q(NULL, zero) < 0);
}

/* Classified rows from a trained model: the same inputs give the same allocation bit for
 * bit, and oracle sizing (true rows) meets its target exactly by the truth. */
static void test_generator_determinism(void **state)
{
	(void)state;
	rusk_thread_register();
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = 320;
	gp.platforms = P;
	rusk_cls_truth *t = NULL;
	assert_int_equal(rusk_cls_truth_generate(&gp, &t, NULL, 0), RUSK_OK);
	rusk_cls_params p[RUSK_CLS_KINDS];
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_params_init(&p[k], rusk_cls_matrix_cols(rusk_cls_truth_matrix(t, k)));
	rusk_classifier *c = NULL;
	assert_int_equal(rusk_classifier_create(p, &c, NULL, 0), RUSK_OK);
	rusk_cls_shape sh = {gp.su_rus, gp.su_mem_blocks, gp.so_machines, gp.platforms};
	for (int k = 0; k < RUSK_CLS_KINDS; k++) {
		const rusk_cls_matrix *mx = rusk_cls_truth_matrix(t, k);
		for (uint32_t u = 0; u < 300; u++) {
			rusk_cls_entry e[RUSK_CLS_MAX_COLS];
			uint32_t n;
			rusk_cls_profile_row(mx, k, u, u < 60 ? RUSK_CLS_MAX_COLS : 2, 0.03, 7, e,
			                     &n);
			assert_int_equal(
			        rusk_cls_add_row(rusk_classifier_get(c, k), e, n, NULL, NULL, 0),
			        RUSK_OK);
		}
	}
	assert_int_equal(rusk_classifier_retrain(c, NULL, NULL, 0), RUSK_OK);
	rusk_cls_machine m[20];
	for (uint32_t i = 0; i < 20; i++) {
		m[i] = (rusk_cls_machine){.platform = i % P, .free_rus = 8, .free_mem_blocks = 4};
		for (int r = 0; r < RUSK_N_RESOURCES; r++)
			m[i].pressure[r] = (double)((i * 7 + r * 3) % 40);
	}
	for (uint32_t u = 300; u < 320; u++) {
		rusk_cls_entry e[RUSK_CLS_KINDS][2];
		rusk_cls_job_profile jp;
		rusk_cls_job_estimate est, tr;
		memset(&tr, 0, sizeof tr);
		for (int k = 0; k < RUSK_CLS_KINDS; k++) {
			const rusk_cls_matrix *mx = rusk_cls_truth_matrix(t, k);
			rusk_cls_profile_row(mx, k, u, 2, 0.03, 9, e[k], &jp.n[k]);
			jp.e[k] = e[k];
			tr.cols[k] = rusk_cls_matrix_cols(mx);
			for (uint32_t i = 0; i < tr.cols[k]; i++)
				tr.v[k][i] = rusk_cls_matrix_get(mx, u, i);
		}
		assert_int_equal(rusk_classifier_classify(c, &jp, &est), RUSK_OK);
		/* A target the truth reaches with 3 RUs x 2 blocks on 2 machines of platform 0. */
		uint32_t pl[2] = {0, 0};
		rusk_cls_target tg = tput(rusk_cls_perf(&sh, &tr, 3, 2, 2, pl, NULL, 0));
		rusk_cls_alloc a1, a2, o;
		int rc1 = rusk_cls_alloc_size(&sh, &est, &tg, m, 20, 0, &a1);
		int rc2 = rusk_cls_alloc_size(&sh, &est, &tg, m, 20, 0, &a2);
		assert_int_equal(rc1, rc2);
		assert_memory_equal(&a1, &a2, sizeof a1);
		assert_int_equal(rusk_cls_alloc_size(&sh, &tr, &tg, m, 20, 0, &o), RUSK_OK);
		/* The oracle's estimate is the truth: true perf of its choice meets the target. */
		uint32_t plo[RUSK_CLS_ALLOC_MAX_MACHINES];
		double pr[RUSK_CLS_ALLOC_MAX_MACHINES][RUSK_N_RESOURCES];
		for (uint32_t i = 0; i < o.machines; i++) {
			plo[i] = m[o.machine[i]].platform;
			memcpy(pr[i], m[o.machine[i]].pressure, sizeof pr[i]);
		}
		double truth = rusk_cls_perf(&sh, &tr, o.rus, o.mem_blocks, o.machines, plo,
		                             (const double(*)[RUSK_N_RESOURCES])pr, 0);
		assert_true(truth >= tg.value * (1 - 1e-9));
		assert_true(fabs(truth - o.perf) < 1e-9 * truth);
	}
	rusk_classifier_destroy(c);
	rusk_cls_truth_destroy(t);
	rusk_rcu_barrier();
	rusk_thread_unregister();
}

/* Callers on several threads at once, on shared inputs, get what one thread gets: the
 * allocator keeps no state of its own (run again under ThreadSanitizer). */
#define CALLERS 4
#define ROUNDS  200

typedef struct caller {
	pthread_t tid;
	const rusk_cls_job_estimate *e;
	const rusk_cls_machine *m;
	const rusk_cls_alloc *want;
	int bad;
} caller;

static void *caller_main(void *arg)
{
	caller *c = arg;
	for (int i = 0; i < ROUNDS; i++) {
		rusk_cls_alloc a;
		rusk_cls_target t = tput(20);
		int rc = rusk_cls_alloc_size(&shape, c->e, &t, c->m, 64, 0, &a);
		c->bad += rc != RUSK_OK || memcmp(&a, c->want, sizeof a) != 0;
	}
	return NULL;
}

static void test_concurrent_callers(void **state)
{
	(void)state;
	rusk_cls_job_estimate e;
	linear(&e, 2, 1, 1.5);
	rusk_cls_machine m[64];
	machines(m, 64, 0);
	for (uint32_t i = 0; i < 64; i++) {
		m[i].platform = i % P;
		m[i].free_rus = 1 + i % R;
		for (int r = 0; r < RUSK_N_RESOURCES; r++)
			m[i].pressure[r] = (double)((i * 13 + r * 7) % 60);
	}
	rusk_cls_alloc want;
	rusk_cls_target t = tput(20);
	assert_int_equal(rusk_cls_alloc_size(&shape, &e, &t, m, 64, 0, &want), RUSK_OK);
	caller c[CALLERS];
	for (int i = 0; i < CALLERS; i++) {
		c[i] = (caller){.e = &e, .m = m, .want = &want};
		assert_int_equal(pthread_create(&c[i].tid, NULL, caller_main, &c[i]), 0);
	}
	for (int i = 0; i < CALLERS; i++) {
		pthread_join(c[i].tid, NULL);
		assert_int_equal(c[i].bad, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_scale_up_then_out),
	        cmocka_unit_test(test_memory_blocks),
	        cmocka_unit_test(test_platform_rank_and_completion),
	        cmocka_unit_test(test_interference_rank),
	        cmocka_unit_test(test_fall_back),
	        cmocka_unit_test(test_unreachable),
	        cmocka_unit_test(test_bad_input),
	        cmocka_unit_test(test_tarcil_q),
	        cmocka_unit_test(test_generator_determinism),
	        cmocka_unit_test(test_concurrent_callers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
