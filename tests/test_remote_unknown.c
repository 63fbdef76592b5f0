/* SPDX-License-Identifier: MIT */
/*
 * A remote commit with no answer (RUSK_EIO, an outage) against one the remote refused
 * (kernel/remote.c): both leave the task holding nothing, to be tried again, but only the
 * refusal is a conflict; a vector claim refused for memory is counted apart (memory_short). The
 * remote here is the in-memory backend of a second cluster (the master state) behind a seam whose
 * commits can be made to go unanswered. And the links' counters (reconnects, redirects, time in
 * outage) of every connection merged on read by rusk_remote_stats_. And a partition whose node
 * is unavailable (the seam's unavailable op, as a stuck Redis master): skipped by the view,
 * its releases put off and sent once it answers (remote.h "Unavailable partitions").
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture.h"
#include "kernel/backend.h"

static rusk_backend master_bk; /* the in-memory backend of the master cluster */
static int outage;             /* commits answer nothing while set */
static int down = -1;          /* this partition is unavailable (-1: none) */

static int snap(void *self, uint32_t p, uint64_t *w, uint32_t n, uint64_t *ver)
{
	(void)self;
	if ((int)p == down)
		return RUSK_EIO; /* unread, as a Redis read of a stuck master's slot */
	return master_bk.ops->snapshot(master_bk.self, p, w, n, ver);
}

static int commit(void *self, uint32_t p, const rusk_bk_claim *cl, size_t n, int *rcs,
                  rusk_lease *ls)
{
	(void)self;
	if ((int)p == down)
		return RUSK_EAGAIN; /* nothing sent */
	if (!outage)
		return master_bk.ops->commit(master_bk.self, p, cl, n, rcs, ls);
	for (size_t i = 0; i < n; i++)
		rcs[i] = RUSK_EIO;
	return RUSK_EIO;
}

static int release(void *self, uint32_t p, const rusk_bk_lease *ls, size_t n, int *rcs)
{
	(void)self;
	if ((int)p == down)
		return RUSK_EAGAIN; /* nothing sent */
	return master_bk.ops->release(master_bk.self, p, ls, n, rcs);
}

static int recount(void *self, uint32_t p, rusk_bk_count *out)
{
	(void)self;
	return master_bk.ops->recount(master_bk.self, p, out);
}

static int unavailable(void *self, uint32_t p)
{
	(void)self;
	return (int)p == down;
}

static const rusk_backend_ops seam = {"seam", snap, commit, release, recount, NULL, unavailable};

static int open_conn(void *arg, rusk_backend *out, void **handle, char *err, size_t errlen)
{
	(void)arg, (void)err, (void)errlen;
	*out = (rusk_backend){&seam, NULL};
	*handle = NULL;
	return RUSK_OK;
}

static void close_conn(void *arg, void *handle)
{
	(void)arg, (void)handle;
}

/* c attached to master through this file's connection (master_bk: master's in-memory
 * backend), and an agent on c drawing `sample` candidates (0: the default). */
static rusk_agent *remote_agent(rusk_cluster *master, rusk_cluster *c, uint32_t sample)
{
	assert_int_equal(rusk_backend_memory_(master, &master_bk), RUSK_OK);
	rusk_remote_opener op = {open_conn, close_conn, NULL, NULL, NULL, NULL};
	char err[256];
	assert_int_equal(rusk_remote_attach_(c, &op, err, sizeof err), RUSK_OK);
	rusk_agent_params ap = fx_agent_params(c);
	if (sample != 0)
		ap.sample = sample;
	return fx_agent(c, &ap, true);
}

static void test_unanswered_is_no_conflict(void **state)
{
	(void)state;
	fx_shape shape = {.machines = 8, .rus = 2, .partitions = 1};
	rusk_cluster *master = fx_cluster(shape), *c = fx_cluster(shape);
	rusk_agent *a = remote_agent(master, c, 1);
	rusk_task t = {.id = 1, .rus = 1};
	rusk_lease l;
	rusk_placement pl;

	/* No answer: nothing held, no conflict; counted as unanswered. */
	outage = 1;
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_EAGAIN);
	assert_int_equal(pl.placed, 0);
	assert_int_equal(pl.conflicts, 0);
	assert_int_equal(pl.commits_lost, 0);
	rusk_remote_stats s;
	rusk_remote_stats_(c, &s);
	assert_true(s.claims_unknown > 0);
	assert_int_equal(s.claims_lost, 0);
	assert_int_equal(s.claims, s.claims_unknown);

	/* Every RU held in the master behind the view's back: refused, a conflict each. */
	outage = 0;
	rusk_view_sync(rusk_agent_view(a), 0); /* the view sees them free again */
	for (uint32_t ru = 0; ru < rusk_cluster_rus(master); ru++)
		assert_int_equal(rusk_ru_commit(master, 100 + ru, ru, NULL, &l), RUSK_OK);
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_EAGAIN);
	assert_true(pl.conflicts > 0 && pl.commits_lost > 0);
	uint64_t unknown = s.claims_unknown;
	rusk_remote_stats_(c, &s);
	assert_true(s.claims_lost > 0);
	assert_int_equal(s.claims_unknown, unknown);

	rusk_agent_destroy(a);
	rusk_remote_detach_(c);
	rusk_cluster_destroy(c);
	rusk_cluster_destroy(master);
}

/* A vector claim refused because the machine's memory is short, its RUs free (the remote
 * answers RUSK_ESHORT_): counted memory_short and claims_short, not a conflict nor
 * claims_lost; and the agent then skips the machine for tasks as large (the next place()
 * claims nothing there) until the view syncs, not for smaller ones. Before: a conflict
 * each time, and each place() claimed another RU of the same machine. */
static void test_memory_short_is_no_conflict(void **state)
{
	(void)state;
	static const rusk_platform plats[] = {{"cpu", 1.0, 1.0}};
	static const rusk_machine_spec specs[] = {{4, 65536, 0, 0, NULL, false}};
	fx_shape shape = {.per_rack = 1, .per_cell = 1, .partitions = 1};
	rusk_cluster *master = fx_machines(specs, 1, shape, plats, 1);
	rusk_cluster *c = fx_machines(specs, 1, shape, plats, 1);
	rusk_agent *a = remote_agent(master, c, 0);
	/* Another process's task holds RU 0 and 40,000 MiB in the master, behind the view. */
	rusk_vec_demand big = {.mem_mib = 40000};
	rusk_lease held;
	uint32_t ru0 = 0;
	assert_int_equal(rusk_ru_commit_vec(master, 99, &ru0, 1, &big, NULL, &held, NULL), RUSK_OK);
	rusk_view_sync(rusk_agent_view(a), 0);
	rusk_task t = {
	        .id = 1, .rus = 1, .gang = true, .placement = RUSK_PLACE_MACHINE, .vec = big};
	rusk_lease l;
	rusk_placement pl;
	assert_int_equal(rusk_agent_place(a, &t, &l, &pl), RUSK_EAGAIN);
	assert_int_equal(pl.placed, 0);
	assert_int_equal(pl.memory_short, 1);
	assert_int_equal(pl.conflicts, 0);
	assert_int_equal(pl.commits_lost, 0);
	rusk_remote_stats s;
	rusk_remote_stats_(c, &s);
	assert_int_equal(s.claims_short, 1);
	assert_int_equal(s.claims_lost, 0);
	/* Two RUs still free in the view: a task as large skips the machine (no claim), a
	 * smaller one does not. */
	uint64_t claims = s.claims;
	rusk_task t2 = t;
	t2.id = 2;
	assert_int_equal(rusk_agent_place(a, &t2, &l, &pl), RUSK_EAGAIN);
	assert_int_equal(pl.memory_short, 0);
	rusk_remote_stats_(c, &s);
	assert_int_equal(s.claims, claims);
	rusk_task t3 = t;
	t3.id = 3;
	t3.vec.mem_mib = 1000;
	assert_int_equal(rusk_agent_place(a, &t3, &l, &pl), RUSK_OK);
	assert_int_equal(pl.placed, 1);
	rusk_remote_stats_(c, &s);
	assert_int_equal(s.claims, claims + 1);
	rusk_agent_destroy(a);
	rusk_remote_detach_(c);
	rusk_cluster_destroy(c);
	rusk_cluster_destroy(master);
}

/* Per connection: what its link met (the handle points at one of these). */
static rusk_remote_link links[2] = {
        {.reconnects = 1, .outage_ns = 2000000000ull},
        {.reconnects = 2, .redirects = 3, .resent = 1, .outage_ns = 5000000000ull}};
static int opened;

static int open_linked(void *arg, rusk_backend *out, void **handle, char *err, size_t errlen)
{
	(void)arg, (void)err, (void)errlen;
	*out = (rusk_backend){&seam, NULL};
	*handle = &links[opened++ % 2]; /* opened by one thread at a time (joined in turn) */
	return RUSK_OK;
}

static void link_of(void *arg, void *handle, rusk_remote_link *out)
{
	(void)arg;
	*out = *(const rusk_remote_link *)handle;
}

typedef struct placer {
	rusk_cluster *c;
	uint64_t id;
} placer;

/* One placement from a thread of its own: one more connection. */
static void *place_once(void *arg)
{
	placer *pp = arg;
	rusk_thread_register();
	rusk_agent_params ap = fx_agent_params(pp->c);
	rusk_agent *a = fx_agent(pp->c, &ap, true);
	rusk_task t = {.id = pp->id, .rus = 1};
	rusk_lease l;
	rusk_placement pl;
	rusk_agent_place(a, &t, &l, &pl);
	rusk_agent_destroy(a);
	rusk_thread_unregister();
	return NULL;
}

/* rusk_remote_stats_ merges each connection's link on read: sums, and the longest outage of
 * one connection (rusk run's summary and JSON: reconnects, redirections, outage seconds). */
static void test_links_merged(void **state)
{
	(void)state;
	fx_shape shape = {.machines = 8, .rus = 2, .partitions = 1};
	rusk_cluster *master = fx_cluster(shape), *c = fx_cluster(shape);
	assert_int_equal(rusk_backend_memory_(master, &master_bk), RUSK_OK);
	outage = 0;
	rusk_remote_opener op = {open_linked, close_conn, NULL, NULL, NULL, link_of};
	char err[256];
	assert_int_equal(rusk_remote_attach_(c, &op, err, sizeof err), RUSK_OK);
	for (uint64_t k = 0; k < 2; k++) {
		pthread_t th;
		placer pp = {c, 10 + k};
		assert_int_equal(pthread_create(&th, NULL, place_once, &pp), 0);
		pthread_join(th, NULL);
	}
	rusk_remote_stats s;
	rusk_remote_stats_(c, &s);
	assert_int_equal(s.connections, 2);
	assert_int_equal(s.link.reconnects, 3);
	assert_int_equal(s.link.redirects, 3);
	assert_int_equal(s.link.resent, 1);
	assert_int_equal(s.link.outage_ns, 7000000000ull);
	assert_int_equal(s.outage_max_ns, 5000000000ull);
	rusk_remote_detach_(c);
	/* No link hook (the opener of the test above): zeros. */
	rusk_remote_opener plain = {open_conn, close_conn, NULL, NULL, NULL, NULL};
	assert_int_equal(rusk_remote_attach_(c, &plain, err, sizeof err), RUSK_OK);
	pthread_t th;
	placer pp = {c, 20};
	assert_int_equal(pthread_create(&th, NULL, place_once, &pp), 0);
	pthread_join(th, NULL);
	rusk_remote_stats_(c, &s);
	assert_int_equal(s.connections, 1);
	assert_true(s.link.reconnects == 0 && s.link.outage_ns == 0 && s.outage_max_ns == 0);
	rusk_remote_detach_(c);
	rusk_cluster_destroy(c);
	rusk_cluster_destroy(master);
}

/* Partition 1 unavailable (a stuck master) beside partition 0: a release of a task placed
 * there is freed locally and put off (still held in the master, not an orphan:
 * rusk_remote_put_off_), a sync of it shows it all taken so that every placement goes to
 * partition 0, with no conflict nor unknown claim, and the marks are counted; once it answers,
 * rusk_remote_drain_ sends the release (the master frees it) and its mark ends. Before, a
 * release there had no answer (an error, the RU held in the master until a recount), and the
 * view kept offering partition 1's RUs. */
static void test_unavailable_partition(void **state)
{
	(void)state;
	fx_shape shape = {.machines = 8, .rus = 2, .per_rack = 2, .per_cell = 2, .partitions = 2};
	rusk_cluster *master = fx_cluster(shape), *c = fx_cluster(shape);
	rusk_agent *a = remote_agent(master, c, 1);
	rusk_partition_info p1;
	assert_int_equal(rusk_cluster_partition(c, 1, &p1), RUSK_OK);
	/* every RU held (16 tasks), then all released but one on partition 1, while it
	 * answers */
	rusk_lease ls[16], l1 = {0};
	uint64_t id1 = 0;
	rusk_placement pl;
	for (uint64_t id = 1; id <= 16; id++) {
		rusk_task t = {.id = id, .rus = 1};
		assert_int_equal(rusk_agent_place(a, &t, &ls[id - 1], &pl), RUSK_OK);
		if (id1 == 0 && ls[id - 1].ru >= p1.first_ru &&
		    ls[id - 1].ru < p1.first_ru + p1.rus) {
			id1 = id;
			l1 = ls[id - 1];
		}
	}
	assert_true(id1 != 0);
	for (uint64_t id = 1; id <= 16; id++)
		if (id != id1)
			assert_int_equal(rusk_agent_release(a, id, &ls[id - 1], 1, NULL), RUSK_OK);
	rusk_remote_stats s0;
	rusk_remote_stats_(c, &s0);
	rusk_view_sync(rusk_agent_view(a), 0); /* the view sees them free again */
	down = 1;
	/* its release: freed locally, put off in the master */
	assert_int_equal(rusk_agent_release(a, id1, &l1, 1, NULL), RUSK_OK);
	rusk_ru_info ri;
	assert_int_equal(rusk_ru_state(master, l1.ru, &ri), RUSK_OK);
	assert_int_equal(ri.owner, id1);
	assert_int_equal(rusk_remote_put_off_(c, id1, l1.ru), 1);
	rusk_remote_stats s;
	rusk_remote_stats_(c, &s);
	assert_int_equal(s.releases_deferred, 1);
	assert_int_equal(s.releases_put_off, 1);
	assert_int_equal(s.parts_unavailable, 1);
	assert_int_equal(s.errors, 0);
	/* partition 1 shown all taken: every placement lands on partition 0 */
	assert_int_equal(rusk_view_sync(rusk_agent_view(a), 1), RUSK_OK);
	rusk_lease held[8];
	for (uint64_t k = 0; k < 8; k++) {
		rusk_task t = {.id = 100 + k, .rus = 1};
		assert_int_equal(rusk_agent_place(a, &t, &held[k], &pl), RUSK_OK);
		assert_true(held[k].ru < p1.first_ru || held[k].ru >= p1.first_ru + p1.rus);
		assert_int_equal(pl.conflicts, 0);
	}
	rusk_remote_stats_(c, &s);
	assert_int_equal(s.claims_unknown, 0);
	assert_int_equal(s.claims_lost, 0);
	assert_true(s.placed_unavailable >= 8);
	/* while still down, a drain gives up at its deadline with the release still put off */
	assert_int_equal(rusk_remote_drain_(c, 0, NULL, NULL), 1);
	/* back: the drain sends it, the master frees it, the mark ends */
	down = -1;
	assert_int_equal(rusk_remote_drain_(c, UINT64_MAX, NULL, NULL), 0);
	assert_int_equal(rusk_ru_state(master, l1.ru, &ri), RUSK_OK);
	assert_int_equal(ri.owner, 0); /* free */
	assert_int_equal(rusk_remote_put_off_(c, id1, l1.ru), 0);
	rusk_remote_stats_(c, &s);
	assert_int_equal(s.releases_put_off, 0);
	assert_int_equal(s.released, s0.released + 1);
	assert_int_equal(s.errors, 0);
	for (uint64_t k = 0; k < 8; k++)
		assert_int_equal(rusk_agent_release(a, 100 + k, &held[k], 1, NULL), RUSK_OK);
	rusk_bk_count k1;
	assert_int_equal(master_bk.ops->recount(master_bk.self, 1, &k1), RUSK_OK);
	assert_int_equal(k1.held, 0);
	assert_int_equal(master_bk.ops->recount(master_bk.self, 0, &k1), RUSK_OK);
	assert_int_equal(k1.held, 0);
	rusk_agent_destroy(a);
	rusk_remote_detach_(c);
	rusk_cluster_destroy(c);
	rusk_cluster_destroy(master);
}

int main(void)
{
	rusk_thread_register();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_unanswered_is_no_conflict),
	        cmocka_unit_test(test_memory_short_is_no_conflict),
	        cmocka_unit_test(test_links_merged),
	        cmocka_unit_test(test_unavailable_partition),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rusk_thread_unregister();
	return rc;
}
