/* SPDX-License-Identifier: MIT */
/*
 * Bad arguments (rusk/error.h, "Bad arguments"): every public function outside
 * rusk/dispatch.h called with NULL pointers, indices out of range and malformed values must
 * return its error code or the neutral value its header names, and never crash or read
 * out of bounds (the ASan+UBSan run checks the latter). The ctest api_args_coverage fails
 * when a function a public header declares is not called here.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

#define ERR_LEN 256

/* 8 machines x 4 RUs, 2 per rack, 2 racks per cell: 2 cells, 2 partitions. */
static rusk_cluster *small_cluster(void)
{
	return fx_cluster(
	        (fx_shape){.machines = 8, .rus = 4, .per_rack = 2, .per_cell = 2, .partitions = 2});
}

static int setup(void **state)
{
	(void)state;
	rusk_thread_register();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rusk_rcu_barrier();
	rusk_thread_unregister();
	return 0;
}

static void test_version_error_clock(void **state)
{
	(void)state;
	assert_non_null(rusk_version());
	assert_int_equal(rusk_version_number(), RUSK_VERSION_NUMBER);
	assert_string_equal(rusk_strerror(12345), "unknown rusk error");
	assert_string_equal(rusk_strerror(-12345), "unknown rusk error");
	/* RUSK_EIO is also a lost connection to Redis: "cannot read file" misled there */
	assert_non_null(strstr(rusk_strerror(RUSK_EIO), "connection"));
	const rusk_clock *clk = rusk_clock_monotonic();
	assert_non_null(clk);
	assert_non_null(clk->now_ns);
}

static uint64_t no_clock_fn(void *ctx)
{
	(void)ctx;
	return 0;
}

static void test_cluster(void **state)
{
	(void)state;
	char err[ERR_LEN];
	rusk_cluster_params_init(NULL);
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = 8;
	p.machines_per_rack = 2;
	p.racks_per_cell = 2;
	p.partitions = 2;
	rusk_cluster *c = NULL;
	assert_int_equal(rusk_cluster_create(NULL, &c, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_create(&p, NULL, NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_create(NULL, NULL, err, 0), RUSK_EINVAL);
	rusk_clock broken = {NULL, NULL};
	p.clock = &broken;
	assert_int_equal(rusk_cluster_create(&p, &c, err, sizeof err), RUSK_EINVAL);
	assert_null(c);
	rusk_clock fixed = {no_clock_fn, NULL};
	p.clock = &fixed;
	rusk_platform pl[2] = {{NULL, 1, 1}, {"x", 1, 1}};
	p.platforms = pl;
	p.n_platforms = 2;
	assert_int_equal(rusk_cluster_create(&p, &c, err, sizeof err), RUSK_EINVAL);
	p.n_platforms = RUSK_MAX_PLATFORMS + 1;
	assert_int_equal(rusk_cluster_create(&p, &c, err, sizeof err), RUSK_EINVAL);
	p.n_platforms = 0;
	assert_int_equal(rusk_cluster_create(&p, &c, err, sizeof err), RUSK_EINVAL);
	p.platforms = NULL;
	p.machines = 0;
	assert_int_equal(rusk_cluster_create(&p, &c, err, sizeof err), RUSK_ESHAPE);
	p.machines = 8;
	p.rus_per_machine = RUSK_MAX_RUS_PER_MACHINE + 1;
	assert_int_equal(rusk_cluster_create(&p, &c, err, sizeof err), RUSK_ESHAPE);
	p.rus_per_machine = 4;
	p.machines_per_rack = 0;
	assert_int_equal(rusk_cluster_create(&p, &c, err, sizeof err), RUSK_ESHAPE);
	p.machines_per_rack = 2;
	p.score_mean = NAN;
	assert_int_equal(rusk_cluster_create(&p, &c, err, sizeof err), RUSK_EINVAL);
	assert_null(c);

	assert_int_equal(rusk_cluster_create_openb(NULL, 0, &p, &c, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_create_openb("x.csv", 0, NULL, &c, err, sizeof err),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_cluster_create_openb("x.csv", 0, &p, NULL, err, sizeof err),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_cluster_create_openb("/nonexistent/rusk.csv", 0, &p, &c, NULL, 0),
	                 RUSK_EIO);
	rusk_cluster_destroy(NULL);

	/* Getters of a NULL cluster: the neutral values rusk/cluster.h names. */
	assert_int_equal(rusk_cluster_machines(NULL), 0);
	assert_int_equal(rusk_cluster_rus(NULL), 0);
	assert_int_equal(rusk_cluster_partitions(NULL), 0);
	assert_int_equal(rusk_cluster_racks(NULL), 0);
	assert_int_equal(rusk_cluster_cells(NULL), 0);
	assert_int_equal(rusk_cluster_platforms(NULL), 0);
	assert_null(rusk_cluster_clock(NULL));
	assert_int_equal(rusk_cluster_memory_bytes(NULL), 0);
	assert_int_equal(rusk_cluster_array_bytes(NULL), 0);
	assert_int_equal(rusk_cluster_ru_machine(NULL, 0), UINT32_MAX);
	assert_int_equal(rusk_cluster_free_rus(NULL), 0);
	assert_true(rusk_ru_score(NULL, 0) == -1.0);

	c = small_cluster();
	rusk_machine_info mi;
	rusk_partition_info pi;
	assert_int_equal(rusk_cluster_machine(NULL, 0, &mi), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_machine(c, 0, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_machine(c, 8, &mi), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_machine(c, UINT32_MAX, &mi), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_partition(NULL, 0, &pi), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_partition(c, 0, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_partition(c, 2, &pi), RUSK_ERANGE);
	const char *name = NULL;
	double speed = 0;
	assert_int_equal(rusk_cluster_platform(NULL, 0, &name, &speed), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_platform(c, UINT32_MAX, &name, &speed), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_platform(c, 0, NULL, NULL), RUSK_OK);
	assert_int_equal(rusk_cluster_ru_machine(c, 32), UINT32_MAX);
	assert_int_equal(rusk_cluster_ru_machine(c, 31), 7);
	assert_true(rusk_ru_score(c, 32) == -1.0);
	assert_int_equal(rusk_cluster_free_rus(c), 32);
	assert_int_equal(rusk_machine_fail(NULL, 0, NULL, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_machine_fail(c, 8, NULL, NULL), RUSK_ERANGE);
	assert_int_equal(rusk_machine_drain(NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_machine_drain(c, UINT32_MAX), RUSK_ERANGE);
	assert_int_equal(rusk_machine_up(NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_machine_up(c, 8), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_verify(NULL, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_verify(NULL, NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK);
	rusk_cluster_destroy(c);
}

static bool all_dead(uint64_t task, void *ctx)
{
	(void)task;
	(void)ctx;
	return true;
}

static void test_ru(void **state)
{
	(void)state;
	rusk_cluster *c = small_cluster();
	rusk_lease l = {0, 0};
	rusk_profile hot = {{100}};
	assert_int_equal(rusk_ru_commit(NULL, 1, 0, NULL, &l), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit(c, 0, 0, NULL, &l), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit(c, RUSK_TASK_ID_MAX + 1, 0, NULL, &l), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit(c, 1, 32, NULL, &l), RUSK_ERANGE);
	assert_int_equal(rusk_ru_commit(c, 1, 0, NULL, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit(c, 1, 0, &hot, &l), RUSK_EINVAL);
	assert_int_equal(rusk_ru_release(NULL, 1, l), RUSK_EINVAL);
	assert_int_equal(rusk_ru_release(c, 0, l), RUSK_EINVAL);
	assert_int_equal(rusk_ru_release(c, 1, (rusk_lease){32, 0}), RUSK_ERANGE);
	assert_int_equal(rusk_ru_release(c, 1, (rusk_lease){0, RUSK_GEN_MASK + 1}), RUSK_EINVAL);
	assert_int_equal(rusk_ru_release(c, 1, (rusk_lease){0, 0}), RUSK_EFREE);

	uint32_t rus[2] = {0, 32};
	rusk_lease out[2];
	size_t at = 99, won = 99;
	assert_int_equal(rusk_ru_commit_gang(NULL, 1, rus, 1, NULL, out, &at), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_gang(c, 1, NULL, 2, NULL, out, &at), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_gang(c, 1, rus, 2, NULL, NULL, &at), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_gang(c, 1, rus, 2, NULL, out, NULL), RUSK_ERANGE);
	assert_int_equal(rusk_ru_commit_incremental(NULL, 1, rus, 1, NULL, out, &won), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_incremental(c, 1, rus, 1, NULL, out, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_incremental(c, 1, rus, 2, NULL, out, &won), RUSK_ERANGE);
	assert_int_equal(rusk_ru_commit_incremental(c, 1, NULL, 1, NULL, out, &won), RUSK_EINVAL);
	rusk_vec_demand vec = {0};
	assert_int_equal(rusk_ru_commit_vec(NULL, 1, rus, 1, &vec, NULL, out, &at), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_vec(c, 1, rus, 1, NULL, NULL, out, &at), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_vec(c, 1, NULL, 1, &vec, NULL, out, &at), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_vec(c, 1, rus, 0, &vec, NULL, out, &at), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_vec(c, 1, rus, 1, &vec, NULL, NULL, &at), RUSK_EINVAL);
	assert_int_equal(rusk_ru_commit_vec(c, 1, rus, 2, &vec, NULL, out, &at), RUSK_ERANGE);
	uint32_t two_machines[2] = {0, 4};
	assert_int_equal(rusk_ru_commit_vec(c, 1, two_machines, 2, &vec, NULL, out, &at),
	                 RUSK_EINVAL);
	rusk_vec_demand bad_vec = {.gpus = 1, .gpu_milli = 2000};
	assert_int_equal(rusk_ru_commit_vec(c, 1, rus, 1, &bad_vec, NULL, out, NULL), RUSK_EINVAL);
	size_t rej = 99;
	assert_int_equal(rusk_ru_release_many(NULL, 1, out, 1, &rej), RUSK_EINVAL);
	assert_int_equal(rusk_ru_release_many(c, 1, NULL, 1, &rej), RUSK_EINVAL);
	assert_int_equal(rusk_ru_release_many(c, 1, NULL, 0, NULL), RUSK_OK);
	size_t n_rec = 99, stuck = 99;
	assert_int_equal(rusk_ru_reclaim(NULL, all_dead, NULL, NULL, &n_rec, &stuck), RUSK_EINVAL);
	assert_int_equal(rusk_ru_reclaim(c, NULL, NULL, NULL, &n_rec, &stuck), RUSK_EINVAL);
	assert_int_equal(rusk_ru_reclaim(c, all_dead, NULL, NULL, NULL, NULL), RUSK_OK);
	rusk_ru_info ri;
	assert_int_equal(rusk_ru_state(NULL, 0, &ri), RUSK_EINVAL);
	assert_int_equal(rusk_ru_state(c, 0, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_ru_state(c, UINT32_MAX, &ri), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_verify(c, NULL, 0), RUSK_OK); /* nothing changed */
	assert_int_equal(rusk_cluster_free_rus(c), 32);
	rusk_cluster_destroy(c);
}

static void test_vec(void **state)
{
	(void)state;
	char err[ERR_LEN];
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.partitions = 1;
	rusk_machine_spec spec[2] = {{.rus = 4, .mem_mib = 1024}, {.rus = 0}};
	rusk_cluster *c = NULL;
	assert_int_equal(rusk_cluster_create_machines(NULL, 1, &p, &c, err, sizeof err),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_cluster_create_machines(spec, 0, &p, &c, err, sizeof err),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_cluster_create_machines(spec, 1, NULL, &c, err, sizeof err),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_cluster_create_machines(spec, 1, &p, NULL, NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_create_machines(spec, 2, &p, &c, err, sizeof err),
	                 RUSK_EINVAL);
	spec[1] = (rusk_machine_spec){.rus = 1, .platform = RUSK_MAX_PLATFORMS};
	assert_int_equal(rusk_cluster_create_machines(spec, 2, &p, &c, err, sizeof err),
	                 RUSK_EINVAL);
	spec[1] = (rusk_machine_spec){.rus = 1, .gpus = RUSK_MAX_GPUS_PER_MACHINE + 1};
	assert_int_equal(rusk_cluster_create_machines(spec, 2, &p, &c, err, sizeof err),
	                 RUSK_EINVAL);
	assert_null(c);

	c = small_cluster();
	rusk_machine_vec mv;
	rusk_cluster_vec cv;
	assert_int_equal(rusk_machine_vec_get(NULL, 0, &mv), RUSK_EINVAL);
	assert_int_equal(rusk_machine_vec_get(c, 0, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_machine_vec_get(c, 8, &mv), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_vec_get(NULL, &cv), RUSK_EINVAL);
	assert_int_equal(rusk_cluster_vec_get(c, NULL), RUSK_EINVAL);
	rusk_task t = {.id = 1, .rus = 1, .placement = RUSK_PLACE_MACHINE, .gang = true};
	assert_int_equal(rusk_task_fits_machine(NULL, &t, 0), RUSK_EINVAL);
	assert_int_equal(rusk_task_fits_machine(c, NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_task_fits_machine(c, &t, 8), RUSK_ERANGE);
	t.id = 0;
	assert_int_equal(rusk_task_fits_machine(c, &t, 0), RUSK_EINVAL);
	uint32_t idx = 99;
	assert_int_equal(rusk_gpu_model(NULL, "std", &idx), RUSK_EINVAL);
	assert_int_equal(rusk_gpu_model(c, NULL, &idx), RUSK_EINVAL);
	assert_int_equal(rusk_gpu_model(c, "std", NULL), RUSK_EINVAL);
	assert_int_equal(rusk_gpu_model(c, "no-such-model", &idx), RUSK_ERANGE);
	assert_int_equal(rusk_cluster_vec_bytes(NULL), 0);
	rusk_cluster_destroy(c);
}

static void test_sync_and_views(void **state)
{
	(void)state;
	char err[ERR_LEN];
	rusk_cluster *c = small_cluster();
	/* threads: an unregister with nothing to undo does nothing */
	rusk_thread_register();
	assert_true(rusk_thread_registered());
	rusk_thread_unregister();
	assert_true(rusk_thread_registered()); /* setup's registration stays */
	rusk_read_lock();
	rusk_read_unlock();
	rusk_rcu_barrier();

	/* snapshots */
	assert_int_equal(rusk_snapshot_publish(NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_snapshot_publish(c, 2), RUSK_ERANGE);
	rusk_read_lock();
	assert_null(rusk_snapshot_get(NULL, 0));
	assert_null(rusk_snapshot_get(c, 2));
	assert_null(rusk_snapshot_get(c, 0)); /* none published yet */
	rusk_read_unlock();
	rusk_snapshot_info si;
	memset(&si, 0xff, sizeof si);
	rusk_snapshot_info_get(NULL, &si);
	assert_int_equal(si.free_rus, 0);
	assert_int_equal(si.version, 0);
	assert_int_equal(rusk_snapshot_publish(c, 0), RUSK_OK);
	rusk_read_lock();
	const rusk_snapshot *s = rusk_snapshot_get(c, 0);
	assert_non_null(s);
	rusk_snapshot_info_get(s, NULL);
	assert_false(rusk_snapshot_is_free(s, UINT32_MAX));
	assert_int_equal(rusk_snapshot_recount(s), 16);
	rusk_read_unlock();
	assert_false(rusk_snapshot_is_free(NULL, 0));
	assert_int_equal(rusk_snapshot_recount(NULL), 0);
	uint64_t alloc = 9, freed = 9;
	rusk_snapshot_counts(NULL, &alloc, &freed);
	assert_int_equal(alloc, 0);
	assert_int_equal(freed, 0);
	rusk_snapshot_counts(c, NULL, NULL);
	rusk_snapshot_set_reuse_ns(NULL, 5);

	/* policies */
	rusk_sync_policy pol = RUSK_SYNC_STATE;
	assert_int_equal(rusk_sync_policy_parse(NULL, &pol), RUSK_EINVAL);
	assert_int_equal(rusk_sync_policy_parse("diff", NULL), RUSK_EINVAL);
	assert_int_equal(rusk_sync_policy_parse("fast", &pol), RUSK_EINVAL);
	assert_string_equal(rusk_sync_policy_name((rusk_sync_policy)99), "unknown");
	assert_int_equal(rusk_sync_check(NULL, err, sizeof err), RUSK_EINVAL);
	rusk_sync_params zero = {.policy = RUSK_SYNC_DIFF, .random_offset = true};
	assert_int_equal(rusk_sync_check(&zero, NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_sync_step_ns(NULL), 0);
	rusk_sync_params_init(NULL, 4, 2); /* nothing, no crash */
	rusk_sync_params def;
	rusk_sync_params_init(&def, 2, 4); /* P < N: SameSync, which rusk_sync_check accepts */
	assert_int_equal(def.policy, RUSK_SYNC_SAME);
	assert_int_equal(def.gap_ns, RUSK_SYNC_DEFAULT_GAP_NS);
	assert_int_equal(rusk_sync_check(&def, err, sizeof err), RUSK_OK);
	assert_int_equal(rusk_sync_step_ns(&zero), 0); /* no agents: was a division by zero */
	assert_int_equal(rusk_sync_offset_ns(NULL, 0), 0);
	assert_int_equal(rusk_sync_offset_ns(&zero, 3), 0);
	uint32_t parts[4];
	assert_int_equal(rusk_sync_partitions(NULL, 0, 0, parts, 4), 0);
	assert_int_equal(rusk_sync_partitions(&zero, 0, 0, parts, 4), 0);
	rusk_sync_params sp = {
	        .policy = RUSK_SYNC_STATE, .partitions = 2, .agents = 1, .gap_ns = 1000000};
	assert_int_equal(rusk_sync_partitions(&sp, 0, 0, NULL, 4), 2); /* counted, none written */

	/* views */
	rusk_view *v = NULL;
	assert_int_equal(rusk_view_create(NULL, &v), RUSK_EINVAL);
	assert_int_equal(rusk_view_create(c, NULL), RUSK_EINVAL);
	rusk_view_destroy(NULL);
	assert_int_equal(rusk_view_sync(NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_view_set_policy(NULL, &sp, 0, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_view_tick(NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_view_next_sync_ns(NULL), UINT64_MAX);
	assert_int_equal(rusk_view_staleness_ns(NULL, 0, 0), UINT64_MAX);
	assert_true(isinf(rusk_view_avg_staleness_ns(NULL, 0)));
	assert_int_equal(rusk_view_freshest(NULL, parts, 4), 0);
	assert_false(rusk_view_is_free(NULL, 0));
	rusk_view_mark_taken(NULL, 0);
	rusk_view_mark_free(NULL, 0);
	uint32_t ru = 77;
	assert_false(rusk_view_pick_free(NULL, 0, 1, &ru));
	assert_int_equal(rusk_view_free(NULL, 0), 0);
	assert_int_equal(rusk_view_platform_free(NULL, 0, 0), 0);
	assert_true(rusk_view_mean_free_score(NULL, 0) == 0);
	rusk_view_stats vs;
	memset(&vs, 0xff, sizeof vs);
	rusk_view_stats_get(NULL, &vs);
	assert_int_equal(vs.syncs, 0);

	assert_int_equal(rusk_view_create(c, &v), RUSK_OK);
	assert_int_equal(rusk_view_tick(v, 0), RUSK_EINVAL); /* no policy */
	assert_int_equal(rusk_view_next_sync_ns(v), UINT64_MAX);
	assert_int_equal(rusk_view_set_policy(v, NULL, 0, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_view_set_policy(v, &sp, 1, err, sizeof err), RUSK_EINVAL);
	sp.partitions = 3;
	assert_int_equal(rusk_view_set_policy(v, &sp, 0, err, sizeof err), RUSK_EINVAL);
	sp.partitions = 2;
	assert_int_equal(rusk_view_sync(v, 2), RUSK_ERANGE);
	assert_int_equal(rusk_view_sync(v, 0), RUSK_OK);
	assert_int_equal(rusk_view_staleness_ns(v, 2, 0), UINT64_MAX);
	assert_int_equal(rusk_view_freshest(v, NULL, 4), 0);
	assert_false(rusk_view_is_free(v, 32));
	rusk_view_mark_taken(v, 32);
	rusk_view_mark_free(v, UINT32_MAX);
	assert_false(rusk_view_pick_free(v, 0, 1, NULL));
	assert_false(rusk_view_pick_free(v, 2, 1, &ru));
	assert_true(rusk_view_pick_free(v, 0, 1, &ru));
	assert_true(ru < 16);
	assert_int_equal(rusk_view_free(v, 2), 0);
	assert_int_equal(rusk_view_free(v, 0), 16);
	assert_int_equal(rusk_view_platform_free(v, 2, 0), 0);
	assert_int_equal(rusk_view_platform_free(v, 0, RUSK_MAX_PLATFORMS), 0);
	assert_true(rusk_view_mean_free_score(v, 2) == 0);
	rusk_view_stats_get(v, NULL);
	rusk_view_stats_get(v, &vs);
	assert_int_equal(vs.syncs, 1);
	rusk_view_destroy(v);
	rusk_cluster_destroy(c);
}

static void test_sched(void **state)
{
	(void)state;
	char err[ERR_LEN];
	rusk_cluster *c = small_cluster();
	assert_true(rusk_quality_target(NULL) == 0); /* NULL: the zero profile */
	rusk_profile prof = {{0}};
	assert_true(rusk_quality_q(NULL, 0, &prof) == -1.0);
	assert_true(rusk_quality_q(c, 0, NULL) == -1.0);
	assert_true(rusk_quality_q(c, 32, &prof) == -1.0);
	assert_int_equal(rusk_sample_size(NAN, 0.8, 1, 32), 32);
	assert_int_equal(rusk_sample_size(0.05, NAN, NAN, 0), 1);
	rusk_strategy st = RUSK_STRATEGY_LATENCY;
	assert_int_equal(rusk_strategy_parse(NULL, &st), RUSK_EINVAL);
	assert_int_equal(rusk_strategy_parse("best", &st), RUSK_EINVAL);
	assert_string_equal(rusk_strategy_name((rusk_strategy)99), "unknown");

	rusk_sync_params sp = {
	        .policy = RUSK_SYNC_DIFF, .partitions = 2, .agents = 1, .gap_ns = 1000000};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	rusk_agent *a = NULL;
	assert_int_equal(rusk_agent_create(NULL, &ap, &a, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_agent_create(c, NULL, &a, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_agent_create(c, &ap, NULL, NULL, 0), RUSK_EINVAL);
	ap.strategy = (rusk_strategy)99;
	assert_int_equal(rusk_agent_create(c, &ap, &a, err, sizeof err), RUSK_EINVAL);
	ap.strategy = RUSK_STRATEGY_LATENCY;
	ap.index = 5; /* not < sync.agents */
	assert_int_equal(rusk_agent_create(c, &ap, &a, err, sizeof err), RUSK_EINVAL);
	ap.index = 0;
	rusk_agent_destroy(NULL);

	rusk_task t = {.id = 1, .rus = 1};
	assert_int_equal(rusk_task_check(NULL, &t, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_task_check(c, NULL, err, sizeof err), RUSK_EINVAL);
	rusk_task bad = {.id = 1, .rus = 1, .n_preferred = 3};
	assert_int_equal(rusk_task_check(c, &bad, NULL, 0), RUSK_EINVAL);
	bad = (rusk_task){.id = 1, .rus = 1, .placement = 200};
	assert_int_equal(rusk_task_check(c, &bad, NULL, 0), RUSK_EINVAL);
	bad = (rusk_task){.id = 1, .rus = 33};
	assert_int_equal(rusk_task_check(c, &bad, NULL, 0), RUSK_EINFEASIBLE);

	assert_int_equal(rusk_agent_create(c, &ap, &a, err, sizeof err), RUSK_OK);
	uint32_t rus[4];
	rusk_lease ls[4];
	rusk_placement pl;
	assert_int_equal(rusk_agent_choose(NULL, &t, rus, &pl), RUSK_EINVAL);
	assert_int_equal(rusk_agent_choose(a, NULL, rus, &pl), RUSK_EINVAL);
	assert_int_equal(rusk_agent_choose(a, &t, NULL, &pl), RUSK_EINVAL);
	assert_int_equal(rusk_agent_choose(a, &t, rus, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_agent_place(NULL, &t, ls, &pl), RUSK_EINVAL);
	assert_int_equal(rusk_agent_place(a, NULL, ls, &pl), RUSK_EINVAL);
	assert_string_equal(pl.invalid, "task");
	assert_int_equal(rusk_agent_place(a, &t, NULL, &pl), RUSK_EINVAL);
	assert_int_equal(rusk_agent_place(a, &t, ls, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_agent_place(a, &bad, ls, &pl), RUSK_EINFEASIBLE);
	assert_int_equal(rusk_agent_release(NULL, 1, ls, 1, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_agent_release(a, 1, NULL, 1, NULL), RUSK_EINVAL);
	assert_non_null(rusk_agent_view(a));
	rusk_agent_observe_delay(a, 5);
	assert_true(rusk_agent_delay_ema_ns(a) == 5);
	assert_int_equal(rusk_agent_current_strategy(a), RUSK_STRATEGY_LATENCY);
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
}

/* The agent's small getters and setters: NULL is refused, or gets a neutral value. */
static void test_sched_null(void **state)
{
	(void)state;
	rusk_strategy st;
	rusk_agent_params *volatile none = NULL; /* not a constant: no -Wstringop-overflow */
	rusk_agent_params_init(none, NULL, 0);
	assert_int_equal(rusk_strategy_parse("latency", NULL), RUSK_EINVAL);
	(void)st;
	assert_null(rusk_agent_view(NULL));
	rusk_agent_observe_delay(NULL, 1);
	assert_int_equal(rusk_agent_current_strategy(NULL), RUSK_STRATEGY_LATENCY);
	assert_true(rusk_agent_delay_ema_ns(NULL) == 0);
}

static void test_admit(void **state)
{
	(void)state;
	char err[ERR_LEN];
	rusk_admit_params_init(NULL);
	rusk_cluster *c = small_cluster();
	rusk_admit_params p;
	rusk_admit_params_init(&p);
	rusk_admit *a = NULL;
	assert_int_equal(rusk_admit_attach(NULL, &p, &a, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_admit_attach(c, &p, NULL, err, sizeof err), RUSK_EINVAL);
	p.buckets = 1;
	assert_int_equal(rusk_admit_attach(c, &p, &a, err, sizeof err), RUSK_EINVAL);
	p.buckets = RUSK_ADMIT_MAX_BUCKETS + 1;
	assert_int_equal(rusk_admit_attach(c, &p, &a, err, sizeof err), RUSK_EINVAL);
	p.buckets = 20;
	p.eps = NAN;
	assert_int_equal(rusk_admit_attach(c, &p, &a, err, sizeof err), RUSK_EINVAL);
	rusk_admit_detach(NULL);
	assert_null(rusk_cluster_admit(NULL));
	assert_null(rusk_cluster_admit(c));
	assert_int_equal(rusk_admit_buckets(NULL), 0);
	double v[RUSK_N_RESOURCES] = {1, 2, 3};
	assert_int_equal(rusk_admit_hash(NULL, v), UINT32_MAX);
	uint64_t counts[RUSK_ADMIT_MAX_BUCKETS];
	assert_int_equal(rusk_admit_counts(NULL, counts, 64), RUSK_EINVAL);
	assert_int_equal(rusk_admit_recount(NULL, counts, 64), RUSK_EINVAL);
	rusk_admit_bucket_info bi;
	assert_int_equal(rusk_admit_bucket(NULL, 0, &bi), RUSK_EINVAL);
	rusk_admit_roll(NULL);
	rusk_task t = {.id = 1, .rus = 1};
	rusk_admit_decision d;
	assert_int_equal(rusk_admit_check(NULL, &t, RUSK_QUALITY_SCORE, 0, &d), RUSK_EINVAL);
	assert_string_equal(rusk_admit_reason_name(RUSK_ADMIT_TOO_LONG), "too-long");
	assert_string_equal(rusk_admit_reason_name((rusk_admit_reason)7), "unknown");
	assert_string_equal(rusk_admit_reason_name((rusk_admit_reason)-1), "unknown");

	assert_int_equal(rusk_admit_attach(c, NULL, &a, err, sizeof err), RUSK_OK); /* defaults */
	rusk_admit *again = NULL;
	assert_int_equal(rusk_admit_attach(c, NULL, &again, err, sizeof err), RUSK_EBUSY);
	assert_ptr_equal(rusk_cluster_admit(c), a);
	assert_int_equal(rusk_admit_hash(a, NULL), UINT32_MAX);
	assert_true(rusk_admit_hash(a, v) < rusk_admit_buckets(a));
	assert_int_equal(rusk_admit_counts(a, NULL, 64), RUSK_EINVAL);
	assert_int_equal(rusk_admit_counts(a, counts, 19), RUSK_EINVAL);
	assert_int_equal(rusk_admit_recount(a, NULL, 64), RUSK_EINVAL);
	assert_int_equal(rusk_admit_recount(a, counts, 1), RUSK_EINVAL);
	assert_int_equal(rusk_admit_bucket(a, 20, &bi), RUSK_ERANGE);
	assert_int_equal(rusk_admit_bucket(a, 0, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_admit_check(a, NULL, RUSK_QUALITY_SCORE, 0, &d), RUSK_EINVAL);
	assert_int_equal(rusk_admit_check(a, &t, RUSK_QUALITY_SCORE, 0, NULL), RUSK_EINVAL);
	t.rus = 0;
	assert_int_equal(rusk_admit_check(a, &t, RUSK_QUALITY_SCORE, 0, &d), RUSK_EINVAL);
	t.rus = 1;
	assert_int_equal(rusk_admit_check(a, &t, (rusk_quality_model)99, 0, &d), RUSK_OK);
	rusk_admit_detach(a);
	rusk_cluster_destroy(c);
}

static void test_classify(void **state)
{
	(void)state;
	char err[ERR_LEN];
	assert_string_equal(rusk_cls_kind_name((rusk_cls_kind)99), "?");
	rusk_cls_matrix *m = NULL;
	assert_int_equal(rusk_cls_matrix_create(0, 4, &m), RUSK_EINVAL);
	assert_int_equal(rusk_cls_matrix_create(4, 0, &m), RUSK_EINVAL);
	assert_int_equal(rusk_cls_matrix_create(4, RUSK_CLS_MAX_COLS + 1, &m), RUSK_EINVAL);
	assert_int_equal(rusk_cls_matrix_create(4, 4, NULL), RUSK_EINVAL);
	rusk_cls_matrix_destroy(NULL);
	assert_int_equal(rusk_cls_matrix_rows(NULL), 0);
	assert_int_equal(rusk_cls_matrix_cols(NULL), 0);
	assert_true(isnan(rusk_cls_matrix_get(NULL, 0, 0)));
	assert_int_equal(rusk_cls_matrix_set(NULL, 0, 0, 1), RUSK_EINVAL);
	assert_int_equal(rusk_cls_matrix_create(4, 4, &m), RUSK_OK);
	assert_true(isnan(rusk_cls_matrix_get(m, 4, 0)));
	assert_true(isnan(rusk_cls_matrix_get(m, 0, UINT32_MAX)));
	assert_int_equal(rusk_cls_matrix_set(m, 4, 0, 1), RUSK_ERANGE);
	assert_int_equal(rusk_cls_matrix_set(m, 0, 4, 1), RUSK_ERANGE);
	assert_int_equal(rusk_cls_matrix_set(m, 0, 0, INFINITY), RUSK_EINVAL);
	rusk_cls_matrix_destroy(m);
	assert_int_equal(rusk_cls_matrix_load_csv(NULL, true, &m, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_matrix_load_csv("x.csv", true, NULL, err, sizeof err),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_cls_matrix_load_csv("/nonexistent/m.csv", true, &m, NULL, 0),
	                 RUSK_EIO);

	rusk_cls_gen_params_init(NULL);
	rusk_cls_gen_params gp;
	rusk_cls_gen_params_init(&gp);
	gp.workloads = 20;
	rusk_cls_truth *t = NULL;
	assert_int_equal(rusk_cls_truth_generate(NULL, &t, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_truth_generate(&gp, NULL, err, sizeof err), RUSK_EINVAL);
	gp.families = 0;
	assert_int_equal(rusk_cls_truth_generate(&gp, &t, err, sizeof err), RUSK_EINVAL);
	gp.families = 6;
	rusk_cls_truth_destroy(NULL);
	assert_null(rusk_cls_truth_matrix(NULL, RUSK_CLS_SCALE_UP));
	assert_int_equal(rusk_cls_truth_family(NULL, 0), UINT32_MAX);
	assert_int_equal(rusk_cls_truth_generate(&gp, &t, err, sizeof err), RUSK_OK);
	assert_null(rusk_cls_truth_matrix(t, (rusk_cls_kind)4));
	assert_int_equal(rusk_cls_truth_family(t, 20), UINT32_MAX);
	const rusk_cls_matrix *tm = rusk_cls_truth_matrix(t, RUSK_CLS_SCALE_UP);
	rusk_cls_entry e[RUSK_CLS_MAX_COLS];
	uint32_t n = 0;
	assert_int_equal(rusk_cls_profile_row(NULL, 0, 0, 2, 0, 1, e, &n), RUSK_EINVAL);
	assert_int_equal(rusk_cls_profile_row(tm, (rusk_cls_kind)9, 0, 2, 0, 1, e, &n),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_cls_profile_row(tm, 0, 0, 0, 0, 1, e, &n), RUSK_EINVAL);
	assert_int_equal(rusk_cls_profile_row(tm, 0, 0, 2, NAN, 1, e, &n), RUSK_EINVAL);
	assert_int_equal(rusk_cls_profile_row(tm, 0, 0, 2, 0, 1, NULL, &n), RUSK_EINVAL);
	assert_int_equal(rusk_cls_profile_row(tm, 0, 0, 2, 0, 1, e, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cls_profile_row(tm, 0, 20, 2, 0, 1, e, &n), RUSK_ERANGE);
	rusk_cls_truth_destroy(t);

	rusk_cls_params_init(NULL, 4);
	rusk_cls_params p;
	rusk_cls_params_init(&p, 4);
	rusk_cls *c = NULL;
	assert_int_equal(rusk_cls_create(NULL, &c, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_create(&p, NULL, err, sizeof err), RUSK_EINVAL);
	p.cols = 0;
	assert_int_equal(rusk_cls_create(&p, &c, err, sizeof err), RUSK_EINVAL);
	p.cols = 4;
	p.rank = RUSK_CLS_MAX_RANK + 1;
	assert_int_equal(rusk_cls_create(&p, &c, err, sizeof err), RUSK_EINVAL);
	p.rank = 2;
	rusk_cls_destroy(NULL);
	assert_int_equal(rusk_cls_cols(NULL), 0);
	assert_int_equal(rusk_cls_rows(NULL), 0);
	assert_int_equal(rusk_cls_version(NULL), 0);
	uint32_t row = 0;
	rusk_cls_entry ok[2] = {{0, 1.0}, {1, 2.0}}, badcol = {4, 1.0}, badval = {0, -1.0};
	assert_int_equal(rusk_cls_add_row(NULL, ok, 2, &row, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_feedback(NULL, 0, ok, 2, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_retrain(NULL, NULL, err, sizeof err), RUSK_EINVAL);
	double out[RUSK_CLS_MAX_COLS];
	assert_int_equal(rusk_cls_classify(NULL, ok, 2, out, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cls_estimate_row(NULL, 0, out), RUSK_EINVAL);

	assert_int_equal(rusk_cls_create(&p, &c, err, sizeof err), RUSK_OK);
	assert_int_equal(rusk_cls_add_row(c, NULL, 2, &row, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_add_row(c, ok, 0, &row, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_add_row(c, &badcol, 1, &row, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_cls_add_row(c, &badval, 1, NULL, NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_cls_retrain(c, NULL, NULL, 0), RUSK_EINVAL);       /* no rows */
	assert_int_equal(rusk_cls_classify(c, ok, 2, out, NULL), RUSK_ENOMODEL); /* no model */
	assert_int_equal(rusk_cls_estimate_row(c, 0, out), RUSK_ENOMODEL);
	assert_int_equal(rusk_cls_add_row(c, ok, 2, NULL, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cls_add_row(c, ok, 2, NULL, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cls_feedback(c, 2, ok, 2, NULL, 0), RUSK_ERANGE);
	assert_int_equal(rusk_cls_feedback(c, 0, NULL, 1, NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_cls_retrain(c, NULL, NULL, 0), RUSK_OK);
	assert_int_equal(rusk_cls_classify(c, NULL, 2, out, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cls_classify(c, ok, 2, NULL, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cls_classify(c, ok, 0, out, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cls_classify(c, ok, 4 * RUSK_CLS_MAX_COLS + 1, out, NULL),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_cls_classify(c, &badcol, 1, out, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_cls_estimate_row(c, 2, out), RUSK_ERANGE);
	assert_int_equal(rusk_cls_estimate_row(c, 0, NULL), RUSK_EINVAL);
	rusk_cls_destroy(c);

	rusk_cls_params ps[RUSK_CLS_KINDS];
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		rusk_cls_params_init(&ps[k], 4);
	rusk_classifier *clf = NULL;
	assert_int_equal(rusk_classifier_create(NULL, &clf, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_classifier_create(ps, NULL, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_classifier_create(ps, &clf, err, sizeof err), RUSK_EINVAL);
	ps[RUSK_CLS_INTERFERENCE].cols = RUSK_CLS_INTERFERENCE_COLS;
	rusk_classifier_destroy(NULL);
	assert_null(rusk_classifier_get(NULL, RUSK_CLS_SCALE_UP));
	static rusk_cls_job_estimate est;
	rusk_cls_job_profile jp = {{NULL}, {0}};
	assert_int_equal(rusk_classifier_classify(NULL, &jp, &est), RUSK_EINVAL);
	assert_int_equal(rusk_classifier_retrain(NULL, NULL, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_classifier_create(ps, &clf, err, sizeof err), RUSK_OK);
	assert_null(rusk_classifier_get(clf, (rusk_cls_kind)4));
	assert_int_equal(rusk_classifier_classify(clf, NULL, &est), RUSK_EINVAL);
	assert_int_equal(rusk_classifier_classify(clf, &jp, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_classifier_classify(clf, &jp, &est), RUSK_EINVAL);    /* no entries */
	assert_int_equal(rusk_classifier_retrain(clf, NULL, NULL, 0), RUSK_EINVAL); /* no rows */
	rusk_classifier_destroy(clf);

	/* allocation: NULLs, and an estimate whose cols would index past v[k] */
	double tol[RUSK_N_RESOURCES] = {50}, pres[RUSK_N_RESOURCES] = {0};
	assert_true(rusk_cls_interference_factor(NULL, pres) == -1.0);
	assert_true(rusk_cls_interference_factor(tol, NULL) == -1.0);
	assert_true(rusk_cls_tarcil_q(NULL, pres) == -1.0);
	assert_true(rusk_cls_tarcil_q(tol, NULL) == -1.0);
	rusk_cls_shape shape = {
	        .su_rus = 40, .su_mem_blocks = 10, .so_machines = 1, .platforms = 1};
	memset(&est, 0, sizeof est);
	est.cols[RUSK_CLS_SCALE_UP] = 400; /* > RUSK_CLS_MAX_COLS: read past v[0] before */
	est.cols[RUSK_CLS_SCALE_OUT] = 1;
	est.cols[RUSK_CLS_HETEROGENEITY] = 1;
	est.cols[RUSK_CLS_INTERFERENCE] = RUSK_CLS_INTERFERENCE_COLS;
	for (int k = 0; k < RUSK_CLS_KINDS; k++)
		for (int i = 0; i < RUSK_CLS_MAX_COLS; i++)
			est.v[k][i] = 1;
	uint32_t plat[1] = {0};
	assert_true(rusk_cls_perf(NULL, &est, 1, 1, 1, plat, NULL, 0) == -1.0);
	assert_true(rusk_cls_perf(&shape, NULL, 1, 1, 1, plat, NULL, 0) == -1.0);
	assert_true(rusk_cls_perf(&shape, &est, 1, 1, 1, NULL, NULL, 0) == -1.0);
	assert_true(rusk_cls_perf(&shape, &est, 1, 1, 1, plat, NULL, 0) == -1.0);
	rusk_cls_target target = {RUSK_CLS_TARGET_THROUGHPUT, 1, 0};
	rusk_cls_machine mach = {.free_rus = 4, .free_mem_blocks = 4};
	rusk_cls_alloc al;
	assert_int_equal(rusk_cls_alloc_size(NULL, &est, &target, &mach, 1, 0, &al), RUSK_EINVAL);
	assert_int_equal(rusk_cls_alloc_size(&shape, NULL, &target, &mach, 1, 0, &al), RUSK_EINVAL);
	assert_int_equal(rusk_cls_alloc_size(&shape, &est, NULL, &mach, 1, 0, &al), RUSK_EINVAL);
	assert_int_equal(rusk_cls_alloc_size(&shape, &est, &target, NULL, 1, 0, &al), RUSK_EINVAL);
	assert_int_equal(rusk_cls_alloc_size(&shape, &est, &target, &mach, 1, 0, NULL),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_cls_alloc_size(&shape, &est, &target, &mach, 1, 0, &al), RUSK_EINVAL);
	shape.su_rus = 4;
	shape.su_mem_blocks = 4;
	est.cols[RUSK_CLS_SCALE_UP] = 16;
	assert_true(rusk_cls_perf(&shape, &est, 1, 1, 1, plat, NULL, 0) > 0);
	target.value = NAN;
	assert_int_equal(rusk_cls_alloc_size(&shape, &est, &target, &mach, 1, 0, &al), RUSK_EINVAL);
	target.value = 1;
	mach.platform = 1; /* out of shape.platforms */
	assert_int_equal(rusk_cls_alloc_size(&shape, &est, &target, &mach, 1, 0, &al), RUSK_EINVAL);
}

static void test_predict(void **state)
{
	(void)state;
	char err[ERR_LEN];
	rusk_dist_init(NULL);
	assert_int_equal(rusk_dist_add(NULL, 1), RUSK_EINVAL);
	rusk_dist_merge(NULL, NULL);
	assert_true(isnan(rusk_dist_cdf(NULL, 1)));
	assert_true(isnan(rusk_dist_quantile(NULL, 0.5)));
	assert_true(isnan(rusk_dist_mean(NULL)));
	static rusk_dist d, bad;
	rusk_dist_init(&d);
	assert_int_equal(rusk_dist_add(&d, -1), RUSK_EINVAL);
	assert_int_equal(rusk_dist_add(&d, NAN), RUSK_EINVAL);
	assert_int_equal(rusk_dist_add(&d, 2), RUSK_OK);
	rusk_dist_merge(&d, NULL);
	rusk_dist_merge(NULL, &d);
	assert_int_equal(d.count, 1);
	/* a hand-made histogram claiming more bins than it has */
	rusk_dist_init(&bad);
	bad.n_bins = RUSK_DIST_MAX_BINS + 1000;
	bad.count = 5;
	assert_int_equal(rusk_dist_add(&bad, 1), RUSK_EINVAL);
	rusk_dist_merge(&d, &bad);
	rusk_dist_merge(&bad, &d);
	assert_int_equal(d.count, 1);
	assert_true(isnan(rusk_dist_cdf(&bad, 1)));
	assert_true(isnan(rusk_dist_quantile(&bad, 0.5)));
	assert_true(isnan(rusk_dist_mean(&bad)));

	rusk_job_init(NULL);
	assert_true(rusk_predict_id(NULL) == RUSK_JOB_UNKNOWN);
	assert_string_equal(rusk_feature_name((rusk_feature)99), "?");
	assert_string_equal(rusk_estimator_name((rusk_estimator)99), "?");
	rusk_predict_params_init(NULL);
	rusk_predict_params pp;
	rusk_predict_params_init(&pp);
	rusk_predictor *p = NULL;
	assert_int_equal(rusk_predict_create(&pp, NULL, err, sizeof err), RUSK_EINVAL);
	pp.recent = 0;
	assert_int_equal(rusk_predict_create(&pp, &p, err, sizeof err), RUSK_EINVAL);
	pp.recent = 5;
	pp.features = 0;
	assert_int_equal(rusk_predict_create(&pp, &p, err, sizeof err), RUSK_EINVAL);
	rusk_predict_destroy(NULL);
	rusk_job j;
	rusk_job_init(&j);
	rusk_prediction pred;
	rusk_expert ex[4];
	assert_int_equal(rusk_predict_update(NULL, &j, 1), RUSK_EINVAL);
	assert_int_equal(rusk_predict(NULL, &j, &pred, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_predict_experts(NULL, &j, ex, 4), 0);
	rusk_predict_stats ps;
	memset(&ps, 0xff, sizeof ps);
	rusk_predict_stats_get(NULL, &ps);
	assert_int_equal(ps.updates, 0);

	assert_int_equal(rusk_predict_create(NULL, &p, err, sizeof err), RUSK_OK); /* defaults */
	assert_int_equal(rusk_predict_update(p, NULL, 1), RUSK_EINVAL);
	assert_int_equal(rusk_predict_update(p, &j, NAN), RUSK_EINVAL);
	assert_int_equal(rusk_predict_update(p, &j, -1), RUSK_EINVAL);
	assert_int_equal(rusk_predict_update(p, &j, INFINITY), RUSK_EINVAL);
	assert_int_equal(rusk_predict_update(p, &j, 3), RUSK_OK);
	assert_int_equal(rusk_predict(p, NULL, &pred, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_predict(p, &j, NULL, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_predict_experts(p, NULL, ex, 4), 0);
	assert_int_equal(rusk_predict_experts(p, &j, NULL, 4), RUSK_EST_N); /* counted only */
	rusk_predict_stats_get(p, NULL);
	rusk_predict_stats_get(p, &ps);
	assert_int_equal(ps.updates, 1);
	rusk_predict_destroy(p);
}

static void test_plan(void **state)
{
	(void)state;
	char err[ERR_LEN];
	assert_string_equal(rusk_plan_mode_name((rusk_plan_mode)99), "?");
	rusk_plan_params_init(NULL, RUSK_PLAN_FIFO, 4);
	rusk_plan_params pp;
	rusk_plan_params_init(&pp, RUSK_PLAN_FIFO, 4);
	rusk_plan *p = NULL;
	assert_int_equal(rusk_plan_create(NULL, &p, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_plan_create(&pp, NULL, err, sizeof err), RUSK_EINVAL);
	pp.capacity = 0;
	assert_int_equal(rusk_plan_create(&pp, &p, err, sizeof err), RUSK_EINVAL);
	pp.capacity = 4;
	pp.mode = (rusk_plan_mode)99;
	assert_int_equal(rusk_plan_create(&pp, &p, NULL, 0), RUSK_EINVAL);
	pp.mode = RUSK_PLAN_FIFO;
	rusk_plan_destroy(NULL);
	rusk_plan_job j = {.id = 1, .cores = 1, .estimate_s = 10};
	rusk_plan_action acts[4];
	size_t n = 9;
	assert_int_equal(rusk_plan_submit(NULL, &j), RUSK_EINVAL);
	assert_int_equal(rusk_plan_tick(NULL, 0, 0, acts, 4, &n, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_plan_complete(NULL, 1, 0), RUSK_EINVAL);
	assert_int_equal(rusk_plan_cancel(NULL, 1), RUSK_EINVAL);
	uint32_t at[RUSK_PLAN_MAX_GROUPS];
	assert_int_equal(rusk_plan_placement(NULL, 1, at, RUSK_PLAN_MAX_GROUPS, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_plan_size(NULL), 0);
	rusk_plan_stats st;
	memset(&st, 0xff, sizeof st);
	rusk_plan_stats_get(NULL, &st);
	assert_int_equal(st.ticks, 0);
	assert_true(isnan(rusk_plan_expected_utility(NULL, &j, 0)));
	assert_true(isnan(rusk_plan_expected_utility(&pp, NULL, 0)));
	assert_true(isnan(rusk_plan_expected_utility(&pp, &j, NAN)));

	assert_int_equal(rusk_plan_create(&pp, &p, err, sizeof err), RUSK_OK);
	assert_int_equal(rusk_plan_submit(p, NULL), RUSK_EINVAL);
	j.cores = 0;
	assert_int_equal(rusk_plan_submit(p, &j), RUSK_EINVAL);
	j.cores = 5;
	assert_int_equal(rusk_plan_submit(p, &j), RUSK_EINVAL);
	j.cores = 1;
	static rusk_dist bad;
	rusk_dist_init(&bad);
	bad.n_bins = RUSK_DIST_MAX_BINS + 1;
	bad.count = 1;
	j.dist = &bad;
	assert_int_equal(rusk_plan_submit(p, &j), RUSK_EINVAL);
	assert_true(isnan(rusk_plan_expected_utility(&pp, &j, 0)));
	j.dist = NULL;
	assert_int_equal(rusk_plan_submit(p, &j), RUSK_OK);
	assert_int_equal(rusk_plan_submit(p, &j), RUSK_EINVAL); /* duplicate id */
	assert_int_equal(rusk_plan_tick(p, 0, 4, acts, 4, NULL, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_plan_tick(p, 0, 4, NULL, 4, &n, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_plan_tick(p, NAN, 4, acts, 4, &n, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_plan_tick(p, 0, 5, acts, 4, &n, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_plan_tick(p, 0, 4, acts, 0, &n, NULL), RUSK_ERANGE);
	assert_int_equal(rusk_plan_complete(p, 2, 0), RUSK_EINVAL);
	assert_int_equal(rusk_plan_complete(p, 1, 0), RUSK_EINVAL); /* pending, not running */
	assert_int_equal(rusk_plan_cancel(p, 2), RUSK_EINVAL);
	assert_int_equal(rusk_plan_size(p), 1);
	rusk_plan_stats_get(p, NULL);
	rusk_plan_destroy(p);
}

/* rusk/quota.h: NULL pointers and bad group counts. */
static void test_quota(void **state)
{
	(void)state;
	rusk_quota_vec cap = {{10, 10, 10}}, dem = {{1, 1, 1}}, out;
	rusk_quota_group g = {1, {{0, 0, 0}}, {{RUSK_QUOTA_UNLIMITED, 5, 5}}};
	char err[128];
	assert_int_equal(rusk_quota_groups_check(NULL, &g, 1, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_quota_groups_check(&cap, NULL, 1, err, sizeof err), RUSK_EINVAL);
	assert_int_equal(rusk_quota_groups_check(&cap, &g, 0, NULL, 0), RUSK_EINVAL);
	assert_int_equal(rusk_quota_groups_check(&cap, &g, RUSK_QUOTA_MAX_GROUPS + 1, err, 1),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_quota_allocate(NULL, &g, 1, &dem, &out), RUSK_EINVAL);
	assert_int_equal(rusk_quota_allocate(&cap, &g, 1, NULL, &out), RUSK_EINVAL);
	assert_int_equal(rusk_quota_allocate(&cap, &g, 1, &dem, NULL), RUSK_EINVAL);
	assert_int_equal(rusk_quota_verify(&cap, NULL, 1, &dem, &dem, NULL, err, sizeof err),
	                 RUSK_EINVAL);
	assert_int_equal(rusk_quota_verify(&cap, &g, 1, NULL, &dem, NULL, err, sizeof err),
	                 RUSK_EINVAL);
	g.weight = -0.5;
	assert_int_equal(rusk_quota_allocate(&cap, &g, 1, &dem, &out), RUSK_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_version_error_clock),
	        cmocka_unit_test(test_cluster),
	        cmocka_unit_test(test_ru),
	        cmocka_unit_test(test_vec),
	        cmocka_unit_test(test_sync_and_views),
	        cmocka_unit_test(test_sched),
	        cmocka_unit_test(test_sched_null),
	        cmocka_unit_test(test_admit),
	        cmocka_unit_test(test_classify),
	        cmocka_unit_test(test_predict),
	        cmocka_unit_test(test_plan),
	        cmocka_unit_test(test_quota),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
