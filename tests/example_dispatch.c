/* SPDX-License-Identifier: MIT */
/*
 * The dispatcher example of docs/dispatcher.md, built and run as a test: an embedder hands
 * tasks to rusk's scheduling loop and is told what happens to them. Timed tasks end by
 * themselves; "service" tasks run until the embedder ends them; a task no machine could
 * hold is refused at once. Every task is accounted for at the end.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <rusk/rusk.h>

#define SERVICES 64

typedef struct app {
	atomic_ulong placed, done, rejected;
	atomic_int n_services;                     /* placed so far */
	_Atomic(rusk_dtask_id) services[SERVICES]; /* their handles, published by on_event */
} app;

/* Runs on the dispatcher's threads (agents, completer) or the submitting thread. */
static void on_event(void *arg, rusk_dispatch_event *ev)
{
	app *a = arg;
	switch (ev->kind) {
	case RUSK_EV_PLACED:
		atomic_fetch_add(&a->placed, 1);
		if (ev->user != NULL) { /* a service: remember its handle to end it later */
			int k = atomic_fetch_add(&a->n_services, 1);
			atomic_store(&a->services[k], ev->task);
		}
		break;
	case RUSK_EV_DONE: atomic_fetch_add(&a->done, 1); break;
	case RUSK_EV_REJECTED:
		atomic_fetch_add(&a->rejected, 1);
		printf("rejected: %s\n", rusk_strerror(ev->error));
		break;
	case RUSK_EV_PREEMPTED: /* queued again by the dispatcher */
	case RUSK_EV_REVOKED:
	case RUSK_EV_WAITING: /* admission control holds it back (ev->admit says why) */ break;
	}
}

int main(void)
{
	rusk_cluster_params cp;
	rusk_cluster_params_init(&cp);
	cp.machines = 2000; /* x 16 RUs, in 10 partitions */
	cp.partitions = 10;
	rusk_cluster *c;
	char err[256];
	if (rusk_cluster_create(&cp, &c, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "cluster: %s\n", err);
		return 1;
	}
	static app a;
	rusk_dispatch_params p;
	rusk_dispatch_params_init(&p, 2); /* two agents, DiffSync views */
	p.on_event = on_event;
	p.arg = &a;
	rusk_dispatch *d;
	if (rusk_dispatch_create(c, &p, &d, err, sizeof err) != RUSK_OK ||
	    rusk_dispatch_start(d) != RUSK_OK) {
		fprintf(stderr, "dispatch: %s\n", err);
		return 1;
	}
	rusk_thread_register(); /* this thread ends services: it touches RUs */
	/* 20,000 batch tasks of 1-4 RUs, 2 ms each, to any agent (round robin). */
	for (int i = 0; i < 20000; i++) {
		rusk_dtask_spec s = {.rus = 1 + i % 4, .run_ns = 2000000};
		rusk_dispatch_submit(d, UINT32_MAX, &s, NULL);
	}
	/* Services: they run until this program ends them (user marks them). */
	for (int i = 0; i < SERVICES; i++) {
		rusk_dtask_spec s = {.rus = 8, .run_ns = RUSK_RUN_UNTIL_COMPLETE, .user = &a};
		rusk_dispatch_submit(d, UINT32_MAX, &s, NULL);
	}
	/* A task larger than the whole cluster: refused now, never queued. */
	rusk_dtask_spec huge = {.rus = 2000 * 16 + 1, .run_ns = 1};
	int rc = rusk_dispatch_submit(d, 0, &huge, NULL);
	printf("huge task: %s\n", rusk_strerror(rc));

	/* Wait (bounded) for every service to run, then end them. */
	int ended = 0;
	for (int k = 0, t = 0; k < SERVICES && t < 5000; t++) {
		rusk_dtask_id j = atomic_load(&a.services[k]);
		if (j == 0) {
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		} else {
			/* RUSK_ENOTRUNNING: its PLACED callback has published it but not
			 * returned yet (the job runs once it has): ask again shortly. */
			int rc2 = rusk_dispatch_complete(d, j);
			if (rc2 == RUSK_ENOTRUNNING) {
				nanosleep(&(struct timespec){0, 100000}, NULL);
				continue;
			}
			ended += rc2 == RUSK_OK;
			k++;
		}
	}
	printf("services ended by the embedder: %d of %d\n", ended, SERVICES);

	rusk_dispatch_stop(d, true); /* drain the queues, end what still runs */
	rusk_dispatch_stats st;
	rusk_dispatch_stats_get(d, &st);
	printf("submitted %llu, placed %llu, rejected %llu, queued %llu, released %llu\n",
	       (unsigned long long)st.submitted, (unsigned long long)st.placed,
	       (unsigned long long)st.rejected, (unsigned long long)st.queued_end,
	       (unsigned long long)st.released);
	printf("delay p50 %.1f us, p99 %.1f us; events: placed %lu, done %lu, rejected %lu\n",
	       st.delay_p50_ns / 1e3, st.delay_p99_ns / 1e3, atomic_load(&a.placed),
	       atomic_load(&a.done), atomic_load(&a.rejected));
	rc = rusk_dispatch_check(d, err, sizeof err);
	printf("accounting: %s\n", rc == RUSK_OK ? "adds up" : err);
	bool ok = rc == RUSK_OK && ended == SERVICES && st.placed == 20000 + SERVICES &&
	          atomic_load(&a.done) == st.placed && st.rejected == 1 &&
	          rusk_cluster_free_rus(c) == rusk_cluster_rus(c);
	rusk_dispatch_destroy(d);
	rusk_thread_unregister();
	rusk_cluster_destroy(c);
	return ok ? 0 : 1;
}
