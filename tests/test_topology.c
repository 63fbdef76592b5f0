/* SPDX-License-Identifier: MIT */
/* Online topology changes: fail, drain, up, spare slots; and machines failing and coming
 * back while threads commit and release (no RU owned twice, no tenure lost). */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

#include "base/rng.h"

static rusk_cluster *make(uint32_t machines, uint32_t spare)
{
	return fx_cluster((fx_shape){.machines = machines,
	                             .spare = spare,
	                             .rus = 8,
	                             .per_rack = 2,
	                             .per_cell = 1,
	                             .partitions = 2});
}

static void verify(rusk_cluster *c)
{
	char err[256];
	if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
		fail_msg("verify: %s", err);
}

typedef struct revlog {
	int n;
	uint64_t task[64];
	rusk_lease lease[64];
} revlog;

static void on_revoke(uint64_t task, rusk_lease lease, void *ctx)
{
	revlog *r = ctx;
	r->task[r->n] = task;
	r->lease[r->n] = lease;
	r->n++;
}

static void test_fail_reports_and_revokes(void **state)
{
	(void)state;
	rusk_cluster *c = make(4, 0);
	rusk_machine_info mi;
	rusk_cluster_machine(c, 1, &mi); /* RUs 8..15 */
	rusk_profile prof = {{50, 40, 30, 20, 10, 0, 0, 0, 0, 99}};
	rusk_lease a, b;
	assert_int_equal(rusk_ru_commit(c, 100, 9, &prof, &a), RUSK_OK);
	assert_int_equal(rusk_ru_commit(c, 101, 12, NULL, &b), RUSK_OK);
	uint64_t free_before = rusk_cluster_free_rus(c);
	revlog log = {0};
	assert_int_equal(rusk_machine_fail(c, 1, on_revoke, &log), RUSK_OK);
	/* both tenants reported, with the leases they hold */
	assert_int_equal(log.n, 2);
	assert_int_equal(log.task[0], 100);
	assert_int_equal(log.lease[0].ru, 9);
	assert_int_equal(log.lease[0].gen, a.gen);
	assert_int_equal(log.task[1], 101);
	assert_int_equal(log.lease[1].ru, 12);
	rusk_cluster_machine(c, 1, &mi);
	assert_int_equal(mi.state, RUSK_MACHINE_DOWN);
	assert_int_equal(mi.free_rus, 0);
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		assert_int_equal(mi.interference[i], 0); /* the revoked profile left the sums */
	assert_int_equal(rusk_cluster_free_rus(c), free_before - 6);
	/* no commit on it; the holders' releases are told the lease was revoked */
	rusk_lease x;
	assert_int_equal(rusk_ru_commit(c, 102, 10, NULL, &x), RUSK_EOFFLINE);
	assert_int_equal(rusk_ru_release(c, 100, a), RUSK_EOFFLINE);
	assert_int_equal(rusk_ru_release(c, 101, b), RUSK_EOFFLINE);
	rusk_ru_info ri;
	rusk_ru_state(c, 10, &ri);
	assert_int_equal(ri.owner, RUSK_OWNER_NONE);
	verify(c);
	/* a snapshot published after the failure shows none of its RUs free */
	rusk_thread_register();
	assert_int_equal(rusk_snapshot_publish(c, mi.partition), RUSK_OK);
	rusk_read_lock();
	const rusk_snapshot *s = rusk_snapshot_get(c, mi.partition);
	for (uint32_t ru = 8; ru < 16; ru++)
		assert_false(rusk_snapshot_is_free(s, ru));
	assert_true(rusk_snapshot_is_free(s, 0 /* machine 0, same partition */));
	rusk_read_unlock();
	/* back up: all free again, the old leases stay dead */
	assert_int_equal(rusk_machine_up(c, 1), RUSK_OK);
	rusk_cluster_machine(c, 1, &mi);
	assert_int_equal(mi.state, RUSK_MACHINE_UP);
	assert_int_equal(mi.free_rus, 8);
	assert_int_equal(rusk_ru_release(c, 100, a), RUSK_EFREE);
	assert_int_equal(rusk_cluster_free_rus(c), free_before + 2);
	verify(c);
	assert_int_equal(rusk_machine_fail(c, 4, NULL, NULL), RUSK_ERANGE);
	assert_int_equal(rusk_machine_up(NULL, 0), RUSK_EINVAL);
	rusk_thread_unregister();
	rusk_cluster_destroy(c);
}

static void test_drain(void **state)
{
	(void)state;
	rusk_cluster *c = make(4, 0);
	rusk_lease a;
	assert_int_equal(rusk_ru_commit(c, 7, 17, NULL, &a), RUSK_OK); /* machine 2 */
	assert_int_equal(rusk_machine_drain(c, 2), RUSK_OK);
	rusk_machine_info mi;
	rusk_cluster_machine(c, 2, &mi);
	assert_int_equal(mi.state, RUSK_MACHINE_DRAINING);
	assert_int_equal(mi.free_rus, 0);
	rusk_ru_info ri;
	rusk_ru_state(c, 17, &ri);
	assert_int_equal(ri.owner, 7); /* the running task keeps its RU */
	rusk_lease x;
	assert_int_equal(rusk_ru_commit(c, 8, 18, NULL, &x), RUSK_EOFFLINE);
	verify(c);
	assert_int_equal(rusk_ru_release(c, 7, a), RUSK_OK); /* finishes normally ... */
	rusk_ru_state(c, 17, &ri);
	assert_int_equal(ri.owner, RUSK_OWNER_NONE); /* ... and the RU goes offline */
	rusk_cluster_machine(c, 2, &mi);
	assert_int_equal(mi.free_rus, 0);
	verify(c);
	assert_int_equal(rusk_machine_up(c, 2), RUSK_OK);
	rusk_cluster_machine(c, 2, &mi);
	assert_int_equal(mi.free_rus, 8);
	verify(c);
	rusk_cluster_destroy(c);
}

static void test_spare_slots(void **state)
{
	(void)state;
	rusk_cluster *c = make(4, 2);
	assert_int_equal(rusk_cluster_machines(c), 6);
	assert_int_equal(rusk_cluster_free_rus(c), 32);
	rusk_machine_info mi;
	rusk_cluster_machine(c, 5, &mi);
	assert_int_equal(mi.state, RUSK_MACHINE_DOWN);
	assert_int_equal(mi.free_rus, 0);
	verify(c);
	assert_int_equal(rusk_machine_up(c, 5), RUSK_OK); /* a machine is added online */
	assert_int_equal(rusk_cluster_free_rus(c), 40);
	rusk_lease l;
	assert_int_equal(rusk_ru_commit(c, 1, mi.first_ru, NULL, &l), RUSK_OK);
	assert_int_equal(rusk_ru_release(c, 1, l), RUSK_OK);
	verify(c);
	rusk_cluster_destroy(c);
}

/*
 * Workers commit and release single RUs on a 16-machine cluster while the main thread
 * fails, drains and restores machines. Each tenure (one task id, one RU) must end exactly
 * once: by an accepted release or by a revocation report. A shadow table catches an RU
 * granted twice.
 */
#define W                3
#define TASKS_PER_WORKER 60000  /* each worker's minimum */
#define MAX_PER_WORKER   600000 /* and its cap while topology changes go on */

static uint64_t *shadow;
static uint8_t *ended; /* per task id: 1 released OK, 2 revoked; 3 = both (a bug) */
/* The two sides must overlap whatever the scheduler does (on a loaded 2-core machine
 * either can finish before the other starts): workers go on past their minimum until the
 * changes are over, and the changes go on until every worker has done its minimum. */
static uint64_t progress[W]; /* tasks each worker has done */
static int topo_done;        /* the main thread's changes are over */

typedef struct worker {
	pthread_t tid;
	int index;
	rusk_cluster *c;
	uint64_t commits, released, revoked_seen, twice, bad_release;
} worker;

static void revoke_cb(uint64_t task, rusk_lease l, void *ctx)
{
	uint64_t *count = ctx;
	(*count)++;
	__atomic_fetch_or(&ended[task], 2, __ATOMIC_SEQ_CST);
	uint64_t expect = task;
	__atomic_compare_exchange_n(&shadow[l.ru], &expect, 0, false, __ATOMIC_SEQ_CST,
	                            __ATOMIC_SEQ_CST);
}

/*
 * Claims shadow[ru] for task after a commit. A revocation can land between the commit and
 * the claim (the tenure is then over before its holder noticed): the revoker flags the task
 * before clearing the shadow, the claimer claims before reading the flag (both seq_cst), so
 * one of them undoes the claim; a claim that finds a revoked task's stale entry waits for
 * that undo, and a claimer whose own tenure was revoked (and the RU granted again) before
 * it claimed gives up. Any other occupied shadow is an RU granted twice.
 */
static void claim(worker *w, uint32_t ru, uint64_t task)
{
	for (unsigned spins = 0;; spins++) {
		uint64_t expect = 0;
		if (__atomic_compare_exchange_n(&shadow[ru], &expect, task, false, __ATOMIC_SEQ_CST,
		                                __ATOMIC_SEQ_CST))
			break;
		/* Our own tenure may have been revoked before we claimed, and the RU granted
		 * to the task now in the shadow: then there is nothing to claim. */
		if (__atomic_load_n(&ended[task], __ATOMIC_SEQ_CST) & 2)
			return;
		if (!(__atomic_load_n(&ended[expect], __ATOMIC_SEQ_CST) & 2) || spins > 1000000) {
			w->twice++;
			return;
		}
		sched_yield();
	}
	if (__atomic_load_n(&ended[task], __ATOMIC_SEQ_CST) & 2) {
		uint64_t expect = task;
		__atomic_compare_exchange_n(&shadow[ru], &expect, 0, false, __ATOMIC_SEQ_CST,
		                            __ATOMIC_SEQ_CST);
	}
}

static void *work(void *arg)
{
	worker *w = arg;
	rusk_rng r;
	rusk_rng_seed(&r, 11, (uint64_t)w->index);
	uint32_t n = rusk_cluster_rus(w->c);
	rusk_lease held[8];
	uint64_t held_task[8];
	int nh = 0;
	for (uint64_t j = 0; j < MAX_PER_WORKER && (j < TASKS_PER_WORKER ||
	                                            !__atomic_load_n(&topo_done, __ATOMIC_ACQUIRE));
	     j++) {
		__atomic_store_n(&progress[w->index], j, __ATOMIC_RELAXED);
		uint64_t task = 1 + j * W + (uint64_t)w->index;
		rusk_lease l;
		if (rusk_ru_commit(w->c, task, rusk_rng_below(&r, n), NULL, &l) == RUSK_OK) {
			w->commits++;
			claim(w, l.ru, task);
			if (nh == 8) {
				nh--;
				uint64_t t = held_task[0];
				rusk_lease old = held[0];
				memmove(held, held + 1, sizeof held[0] * 7);
				memmove(held_task, held_task + 1, sizeof held_task[0] * 7);
				uint64_t e = t;
				__atomic_compare_exchange_n(&shadow[old.ru], &e, 0, false,
				                            __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
				int rc = rusk_ru_release(w->c, t, old);
				if (rc == RUSK_OK) {
					w->released++;
					__atomic_fetch_or(&ended[t], 1, __ATOMIC_RELAXED);
				} else if (rc == RUSK_EOFFLINE || rc == RUSK_EFREE ||
				           rc == RUSK_ENOTOWNER) {
					w->revoked_seen++; /* revoked meanwhile */
				} else {
					w->bad_release++;
				}
			}
			held[nh] = l;
			held_task[nh++] = task;
		}
	}
	for (int i = 0; i < nh; i++) {
		uint64_t e = held_task[i];
		__atomic_compare_exchange_n(&shadow[held[i].ru], &e, 0, false, __ATOMIC_ACQ_REL,
		                            __ATOMIC_RELAXED);
		int rc = rusk_ru_release(w->c, held_task[i], held[i]);
		if (rc == RUSK_OK) {
			w->released++;
			__atomic_fetch_or(&ended[held_task[i]], 1, __ATOMIC_RELAXED);
		} else {
			w->revoked_seen++;
		}
	}
	__atomic_store_n(&progress[w->index], MAX_PER_WORKER, __ATOMIC_RELAXED);
	return NULL;
}

static void test_changes_during_commits(void **state)
{
	(void)state;
	rusk_cluster *c = make(16, 0);
	uint32_t n = rusk_cluster_rus(c);
	shadow = calloc(n, sizeof *shadow);
	ended = calloc((size_t)W * MAX_PER_WORKER + 2, 1);
	worker w[W];
	/* Reset before any worker starts. */
	__atomic_store_n(&topo_done, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < W; i++)
		__atomic_store_n(&progress[i], 0, __ATOMIC_RELAXED);
	for (int i = 0; i < W; i++) {
		w[i] = (worker){.index = i, .c = c};
		pthread_create(&w[i].tid, NULL, work, &w[i]);
	}
	rusk_rng r;
	rusk_rng_seed(&r, 5, 99);
	uint64_t revoked = 0, changes = 0;
	/* At least 3000 changes, and on until every worker has done its minimum. */
	for (int i = 0;; i++) {
		bool behind = false;
		for (int k = 0; k < W; k++)
			behind |=
			        __atomic_load_n(&progress[k], __ATOMIC_RELAXED) < TASKS_PER_WORKER;
		if (i >= 3000 && !behind)
			break;
		uint32_t m = rusk_rng_below(&r, 16);
		switch (rusk_rng_below(&r, 3)) {
		case 0: rusk_machine_fail(c, m, revoke_cb, &revoked); break;
		case 1: rusk_machine_drain(c, m); break;
		default: rusk_machine_up(c, m); break;
		}
		changes++;
		if (i % 8 == 0)
			sched_yield();
	}
	__atomic_store_n(&topo_done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < W; i++)
		pthread_join(w[i].tid, NULL);
	for (uint32_t m = 0; m < 16; m++)
		rusk_machine_up(c, m);
	uint64_t commits = 0, released = 0, seen = 0;
	for (int i = 0; i < W; i++) {
		assert_int_equal(w[i].twice, 0);
		assert_int_equal(w[i].bad_release, 0);
		commits += w[i].commits;
		released += w[i].released;
		seen += w[i].revoked_seen;
	}
	/* every tenure ended exactly once */
	uint64_t both = 0, neither = 0, ended_n = 0;
	for (uint64_t t = 1; t <= (uint64_t)W * MAX_PER_WORKER; t++) {
		both += ended[t] == 3;
		ended_n += ended[t] != 0;
	}
	neither = commits - ended_n;
	print_message("%llu commits: %llu released, %llu revoked (%llu noticed by holders); "
	              "%llu topology changes\n",
	              (unsigned long long)commits, (unsigned long long)released,
	              (unsigned long long)revoked, (unsigned long long)seen,
	              (unsigned long long)changes);
	assert_int_equal(both, 0);
	assert_int_equal(neither, 0);
	assert_int_equal(released + revoked, commits);
	assert_int_equal(seen, revoked);
	assert_true(revoked > 0);
	verify(c);
	assert_int_equal(rusk_cluster_free_rus(c), n);
	for (uint32_t ru = 0; ru < n; ru++)
		assert_int_equal(shadow[ru], 0);
	free(shadow);
	free(ended);
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fail_reports_and_revokes),
	        cmocka_unit_test(test_drain),
	        cmocka_unit_test(test_spare_slots),
	        cmocka_unit_test(test_changes_during_commits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
