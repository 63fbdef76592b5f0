/* SPDX-License-Identifier: MIT */
/*
 * Contracts of issue 19 (rusk/sched.h "Revocations", rusk/sync.h "Checks"):
 *
 *  - rusk_agent_place never returns a revoked lease as held, and every revocation is
 *    reported exactly once: by place() (not returned, a conflict) when the machine failed
 *    while place() was deciding, else by rusk_machine_fail's callback, which names only
 *    leases place() returned. The reproducer: 2 agents place 4-RU tasks (gang, then
 *    incremental) while a third thread fails and restores 20 machines at a time; at the end
 *    every report must match a returned lease whose release was refused, once, and every
 *    lease released normally must have no report. (Task ids are unique and each lease is
 *    released once, so a refused release means a revoked lease: RUSK_EOFFLINE while the
 *    machine is down, RUSK_EFREE or RUSK_ENOTOWNER once it is back up.) A deterministic case fails
 * the machine of a gang's first RU between its commits.
 *  - rusk_thread_register nests, rusk_thread_registered tells, and (RUSK_DEBUG builds)
 *    calls that need registration fail with RUSK_ENOTREG from an unregistered thread.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <rusk/rusk.h>

#include "fixture.h"

#include "kernel/ru_impl.h"

#define TASK_RUS     4
#define HELD_MAX     24
#define N_AGENTS     2
#define FAIL_AT      20
#define RUN_NS       1000000000ull /* per variant: 2 variants, ~2 s in all */
#define PENDING      1             /* rec.rel before the holder released it */
#define REPORTED     2             /* check_reports: refused release with its one report */
#define WRONG_REPORT 3             /* check_reports: a report for a lease released normally */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static rusk_cluster *make(uint32_t machines, uint32_t rus, uint32_t per_rack, uint32_t parts)
{
	return fx_cluster((fx_shape){.machines = machines,
	                             .rus = rus,
	                             .per_rack = per_rack,
	                             .per_cell = 2,
	                             .partitions = parts});
}

static rusk_agent *make_agent(rusk_cluster *c, uint32_t index, uint32_t n_agents)
{
	rusk_sync_params sp = {.policy = RUSK_SYNC_STATE,
	                       .partitions = rusk_cluster_partitions(c),
	                       .agents = n_agents,
	                       .gap_ns = 1000000000ull};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, index);
	ap.seed = 7 + index;
	rusk_agent *a = NULL;
	char err[256];
	if (rusk_agent_create(c, &ap, &a, err, sizeof err) != RUSK_OK)
		fail_msg("%s", err);
	return a;
}

/* One lease: what place() returned, and what its holder's release said. */
typedef struct rec {
	uint64_t task;
	uint32_t ru, gen;
	int rel;
} rec;

typedef struct recs {
	rec *v;
	size_t n, cap;
} recs;

static void push(recs *r, rec x)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 4096;
		r->v = realloc(r->v, r->cap * sizeof *r->v);
		if (r->v == NULL)
			abort();
	}
	r->v[r->n++] = x;
}

static int cmp_rec(const void *a, const void *b)
{
	const rec *x = a, *y = b;
	if (x->task != y->task)
		return x->task < y->task ? -1 : 1;
	if (x->ru != y->ru)
		return x->ru < y->ru ? -1 : 1;
	return (x->gen > y->gen) - (x->gen < y->gen);
}

/* The callback's reports, from the failing thread. */
static pthread_mutex_t rep_mu = PTHREAD_MUTEX_INITIALIZER;
static recs reports;

static void on_revoke(uint64_t task, rusk_lease l, void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&rep_mu);
	push(&reports, (rec){task, l.ru, l.gen, 0});
	pthread_mutex_unlock(&rep_mu);
}

typedef struct run_shared {
	rusk_cluster *c;
	bool gang;
	int stop; /* atomic */
} run_shared;

typedef struct agent_ctx {
	run_shared *sh;
	rusk_agent *a;
	uint32_t idx;
	recs got; /* every lease place() returned */
	uint64_t placed, eagain, conflicts, other_rc;
	uint64_t gone_at_return; /* returned leases already not ours when looked at after */
} agent_ctx;

/* A held task: its leases are got.v[first .. first + n). */
typedef struct held {
	uint64_t task;
	size_t first;
	uint32_t n;
} held;

static void release_task(agent_ctx *x, const held *h)
{
	for (uint32_t i = 0; i < h->n; i++) {
		rec *r = &x->got.v[h->first + i];
		r->rel = rusk_ru_release(x->sh->c, r->task, (rusk_lease){r->ru, r->gen});
	}
}

static void *agent_main(void *arg)
{
	agent_ctx *x = arg;
	rusk_cluster *c = x->sh->c;
	rusk_thread_register();
	rusk_view *v = rusk_agent_view(x->a);
	uint32_t P = rusk_cluster_partitions(c);
	for (uint32_t p = 0; p < P; p++)
		rusk_view_sync(v, p);
	held ring[HELD_MAX];
	size_t head = 0, n_held = 0;
	uint64_t next_id = 1;
	for (uint64_t k = 0; !__atomic_load_n(&x->sh->stop, __ATOMIC_ACQUIRE); k++) {
		if (k % 8 == 0)
			rusk_view_sync(v, (uint32_t)(k / 8 % P)); /* see restored machines */
		if (n_held == HELD_MAX) {
			release_task(x, &ring[head]);
			head = (head + 1) % HELD_MAX;
			n_held--;
		}
		rusk_task t = {.id = ((uint64_t)(x->idx + 1) << 32) | next_id++,
		               .rus = TASK_RUS,
		               .gang = x->sh->gang};
		rusk_lease l[TASK_RUS];
		rusk_placement pl;
		int rc = rusk_agent_place(x->a, &t, l, &pl);
		x->conflicts += pl.conflicts;
		if (rc == RUSK_EAGAIN) {
			x->eagain++;
			continue;
		}
		if (rc != RUSK_OK) {
			x->other_rc++;
			continue;
		}
		x->placed++;
		held h = {t.id, x->got.n, pl.placed};
		for (uint32_t i = 0; i < pl.placed; i++) {
			push(&x->got, (rec){t.id, l[i].ru, l[i].gen, PENDING});
			rusk_ru_info info;
			rusk_ru_state(c, l[i].ru, &info);
			x->gone_at_return += info.owner != t.id || info.gen != l[i].gen;
		}
		ring[(head + n_held) % HELD_MAX] = h;
		n_held++;
	}
	for (; n_held > 0; n_held--, head = (head + 1) % HELD_MAX)
		release_task(x, &ring[head]);
	rusk_thread_unregister();
	return NULL;
}

static void *failer_main(void *arg)
{
	run_shared *sh = arg;
	rusk_cluster *c = sh->c;
	uint32_t M = rusk_cluster_machines(c);
	uint64_t s = 12345;
	uint32_t down[FAIL_AT];
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		/* FAIL_AT distinct machines: a random start, a stride coprime with M. */
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t start = (uint32_t)(s >> 33) % M, stride = 7;
		for (uint32_t i = 0; i < FAIL_AT; i++) {
			down[i] = (start + i * stride) % M;
			rusk_machine_fail(c, down[i], on_revoke, NULL);
		}
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
		for (uint32_t i = 0; i < FAIL_AT; i++)
			rusk_machine_up(c, down[i]);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * Checks the end state: every report names a lease place() returned, whose release got
 * RUSK_EOFFLINE, exactly once; every lease released normally has no report. Returns the
 * number of violations (printing the first few).
 */
static size_t check_reports(recs *all)
{
	qsort(all->v, all->n, sizeof *all->v, cmp_rec);
	qsort(reports.v, reports.n, sizeof *reports.v, cmp_rec);
	size_t bad = 0, j = 0;
	for (size_t i = 0; i < reports.n; i++) {
		const rec *r = &reports.v[i];
		if (i > 0 && cmp_rec(r, r - 1) == 0) {
			if (bad++ < 5)
				print_message("reported twice: task %llx RU %u gen %u\n",
				              (unsigned long long)r->task, r->ru, r->gen);
			continue;
		}
		while (j < all->n && cmp_rec(&all->v[j], r) < 0)
			j++;
		if (j == all->n || cmp_rec(&all->v[j], r) != 0) {
			if (bad++ < 5)
				print_message("callback named a lease place() did not return: task "
				              "%llx RU %u gen %u\n",
				              (unsigned long long)r->task, r->ru, r->gen);
			continue;
		}
		/* Revoked: its release found the RU offline, or (machine back up since) free
		 * or another task's. Released normally: the report was wrong. */
		int rel = all->v[j].rel;
		all->v[j].rel = rel == RUSK_EOFFLINE || rel == RUSK_EFREE || rel == RUSK_ENOTOWNER
		                        ? REPORTED
		                        : WRONG_REPORT;
	}
	for (size_t i = 0; i < all->n; i++) {
		const rec *g = &all->v[i];
		if (g->rel == RUSK_OK || g->rel == REPORTED)
			continue;
		if (bad++ < 5)
			print_message("lease task %llx RU %u gen %u: %s\n",
			              (unsigned long long)g->task, g->ru, g->gen,
			              g->rel == WRONG_REPORT
			                      ? "reported revoked, but its release was "
			                        "not refused"
			                      : rusk_strerror(g->rel));
	}
	return bad;
}

static void reproducer(bool gang)
{
	rusk_cluster *c = make(200, 4, 10, 2);
	run_shared sh = {c, gang, 0};
	agent_ctx x[N_AGENTS];
	pthread_t th[N_AGENTS], f;
	reports.n = 0;
	rusk_thread_register();
	for (uint32_t i = 0; i < N_AGENTS; i++) {
		x[i] = (agent_ctx){.sh = &sh, .a = make_agent(c, i, N_AGENTS), .idx = i};
		assert_int_equal(pthread_create(&th[i], NULL, agent_main, &x[i]), 0);
	}
	assert_int_equal(pthread_create(&f, NULL, failer_main, &sh), 0);
	uint64_t end = now_ns() + RUN_NS;
	while (now_ns() < end) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
	pthread_join(f, NULL);
	recs all = {0};
	uint64_t placed = 0, eagain = 0, conflicts = 0, other = 0, gone = 0;
	for (uint32_t i = 0; i < N_AGENTS; i++) {
		pthread_join(th[i], NULL);
		for (size_t k = 0; k < x[i].got.n; k++)
			push(&all, x[i].got.v[k]);
		placed += x[i].placed;
		eagain += x[i].eagain;
		conflicts += x[i].conflicts;
		other += x[i].other_rc;
		gone += x[i].gone_at_return;
		free(x[i].got.v);
		rusk_agent_destroy(x[i].a);
	}
	size_t bad = check_reports(&all);
	print_message("%s: %llu tasks placed (%zu leases), %llu given back, %llu RUs lost to "
	              "conflicts or failures, %zu revocations reported by callback, %llu leases "
	              "already revoked when looked at after place() returned, %zu violations\n",
	              gang ? "gang" : "incremental", (unsigned long long)placed, all.n,
	              (unsigned long long)eagain, (unsigned long long)conflicts, reports.n,
	              (unsigned long long)gone, bad);
	assert_int_equal(other, 0);
	assert_true(placed > 100);
	assert_true(reports.n > 10); /* the failures did hit held RUs */
	assert_int_equal(bad, 0);
	for (uint32_t m = 0; m < rusk_cluster_machines(c); m++)
		rusk_machine_up(c, m);
	char err[256] = "";
	if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
		fail_msg("%s", err);
	assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c));
	free(all.v);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	rusk_cluster_destroy(c);
}

static void test_revoke_gang(void **state)
{
	(void)state;
	reproducer(true);
}

static void test_revoke_incremental(void **state)
{
	(void)state;
	reproducer(false);
}

/* ---- a failure between a gang's commits, deterministically ---------------------------- */

static struct {
	rusk_cluster *c;
	uint32_t machine;
	int go, done; /* atomics: fail now / fail returned */
	int armed;
} mid;

static void *mid_failer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&mid.go, __ATOMIC_ACQUIRE))
		sched_yield();
	rusk_machine_fail(mid.c, mid.machine, on_revoke, NULL);
	__atomic_store_n(&mid.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* After the gang's first RU: fail its machine on the other thread, wait until the machine
 * is DOWN and the failure returned (it cannot while place() holds the RU: then 100 ms). */
static void mid_gang_hook(uint64_t task, size_t taken, size_t n)
{
	(void)task;
	(void)n;
	if (taken != 1 || !mid.armed)
		return;
	mid.armed = 0;
	rusk_machine_info mi;
	mid.machine = UINT32_MAX;
	for (uint32_t m = 0; m < rusk_cluster_machines(mid.c); m++) {
		rusk_cluster_machine(mid.c, m, &mi);
		if (mi.free_rus < mi.rus) { /* the machine the gang is taking */
			mid.machine = m;
			break;
		}
	}
	__atomic_store_n(&mid.go, 1, __ATOMIC_RELEASE);
	uint64_t until = now_ns() + 100000000ull;
	for (;;) {
		rusk_cluster_machine(mid.c, mid.machine, &mi);
		if (mi.state == RUSK_MACHINE_DOWN &&
		    (__atomic_load_n(&mid.done, __ATOMIC_ACQUIRE) || now_ns() > until))
			break;
		sched_yield();
	}
}

static void test_revoke_mid_gang(void **state)
{
	(void)state;
	rusk_cluster *c = make(40, 4, 10, 2);
	rusk_thread_register();
	rusk_agent *a = make_agent(c, 0, 1);
	for (uint32_t p = 0; p < rusk_cluster_partitions(c); p++)
		assert_int_equal(rusk_view_sync(rusk_agent_view(a), p), RUSK_OK);
	reports.n = 0;
	mid.c = c;
	mid.go = mid.done = 0;
	mid.armed = 1;
	pthread_t f;
	assert_int_equal(pthread_create(&f, NULL, mid_failer, NULL), 0);
	rusk_fault_gang_member = mid_gang_hook;
	rusk_task t = {.id = 77, .rus = 4, .gang = true, .placement = RUSK_PLACE_MACHINE};
	rusk_lease l[4];
	rusk_placement pl;
	int rc = rusk_agent_place(a, &t, l, &pl);
	rusk_fault_gang_member = NULL;
	pthread_join(f, NULL);
	assert_int_not_equal(mid.machine, UINT32_MAX);
	print_message("place: %s, %u conflicts, %zu callback reports\n", rusk_strerror(rc),
	              pl.conflicts, reports.n);
	/* The failure happened while place() was deciding: place() reports it (a conflict)
	 * and the callback reports nothing for an RU the embedder never got. */
	assert_int_equal(reports.n, 0);
	assert_true(pl.conflicts >= 1);
	if (rc == RUSK_OK)
		for (uint32_t i = 0; i < pl.placed; i++)
			assert_int_not_equal(rusk_cluster_ru_machine(c, l[i].ru), mid.machine);
	else
		assert_int_equal(rc, RUSK_EAGAIN);
	/* Nothing of the failed machine is held, and its failure accounted every RU. */
	if (rc == RUSK_OK)
		assert_int_equal(rusk_agent_release(a, t.id, l, pl.placed, NULL), RUSK_OK);
	assert_int_equal(rusk_machine_up(c, mid.machine), RUSK_OK);
	char err[256] = "";
	if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
		fail_msg("%s", err);
	assert_int_equal(rusk_cluster_free_rus(c), rusk_cluster_rus(c));
	rusk_agent_destroy(a);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	rusk_cluster_destroy(c);
}

/* ---- registration ---------------------------------------------------------------------- */

static void test_register_nests(void **state)
{
	(void)state;
	assert_false(rusk_thread_registered());
	rusk_thread_unregister(); /* nothing to undo: no abort */
	rusk_thread_register();
	rusk_thread_register(); /* liburcu alone aborts here */
	assert_true(rusk_thread_registered());
	rusk_thread_unregister();
	assert_true(rusk_thread_registered()); /* one level left */
	rusk_thread_unregister();
	assert_false(rusk_thread_registered());
	rusk_thread_register(); /* and again from scratch */
	assert_true(rusk_thread_registered());
	rusk_thread_unregister();
}

typedef struct unreg_ctx {
	rusk_cluster *c;
	rusk_agent *a;
	int place, choose, sync, publish, tick, place_after;
	const rusk_snapshot *snap;
	bool registered;
} unreg_ctx;

static void *unregistered_main(void *arg)
{
	unreg_ctx *u = arg;
	u->registered = rusk_thread_registered();
	rusk_task t = {.id = 9, .rus = 1};
	rusk_lease l;
	rusk_placement pl;
#if defined(RUSK_DEBUG) || !defined(NDEBUG)
	/* Only where the checks are on: elsewhere these calls are the bug they prevent. */
	uint32_t ru;
	u->place = rusk_agent_place(u->a, &t, &l, &pl);
	u->choose = rusk_agent_choose(u->a, &t, &ru, &pl);
	u->sync = rusk_view_sync(rusk_agent_view(u->a), 0);
	u->publish = rusk_snapshot_publish(u->c, 0);
	u->tick = rusk_view_tick(rusk_agent_view(u->a), UINT64_MAX / 2);
	rusk_read_lock();
	u->snap = rusk_snapshot_get(u->c, 0);
	rusk_read_unlock();
#endif
	/* registered, the same calls work */
	rusk_thread_register();
	u->place_after = rusk_agent_place(u->a, &t, &l, &pl);
	if (u->place_after == RUSK_OK)
		rusk_agent_release(u->a, t.id, &l, 1, NULL);
	rusk_thread_unregister();
	return NULL;
}

static void test_unregistered_calls(void **state)
{
	(void)state;
	rusk_cluster *c = make(40, 4, 10, 2);
	rusk_thread_register();
	rusk_agent *a = make_agent(c, 0, 1);
	for (uint32_t p = 0; p < rusk_cluster_partitions(c); p++)
		assert_int_equal(rusk_view_sync(rusk_agent_view(a), p), RUSK_OK);
	unreg_ctx u = {.c = c, .a = a};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, unregistered_main, &u), 0);
	pthread_join(th, NULL);
	assert_false(u.registered);
#if defined(RUSK_DEBUG) || !defined(NDEBUG)
	assert_int_equal(u.place, RUSK_ENOTREG);
	assert_int_equal(u.choose, RUSK_ENOTREG);
	assert_int_equal(u.sync, RUSK_ENOTREG);
	assert_int_equal(u.publish, RUSK_ENOTREG);
	assert_int_equal(u.tick, RUSK_ENOTREG);
	assert_null(u.snap);
	assert_string_equal(rusk_strerror(RUSK_ENOTREG),
	                    "calling thread not registered (rusk_thread_register)");
#else
	print_message("RUSK_DEBUG off (Release): unregistered calls are not checked\n");
#endif
	assert_int_equal(u.place_after, RUSK_OK);
	rusk_agent_destroy(a);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	rusk_cluster_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_register_nests),
	        cmocka_unit_test(test_unregistered_calls),
	        cmocka_unit_test(test_revoke_mid_gang),
	        cmocka_unit_test(test_revoke_gang),
	        cmocka_unit_test(test_revoke_incremental),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(reports.v);
	return rc;
}
