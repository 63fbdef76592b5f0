/* SPDX-License-Identifier: MIT */
/*
 * fault_torture: agents that stall and die while others keep committing.
 *
 * T threads commit gangs of 1..6 RUs from a hot set, hold up to 16 tasks and release the
 * oldest, claiming a shadow table as ru_torture does (an RU granted twice fails a shadow
 * CAS). Meanwhile:
 *   - thread 0 stalls: every 100 ms it sleeps --stall-ms while holding its RUs;
 *   - thread 1 dies halfway through the run in the middle of a gang commit (the fault hook
 *     rusk_fault_gang_member ends the thread after it took some but not all members), so
 *     its held tasks and the partial gang stay allocated with nobody to release them;
 *   - the main thread then recovers them with rusk_ru_reclaim while the others run.
 * Pass rule, all 0: RUs granted twice, own releases refused, windows of 100 ms in which a
 * live, non-stalled thread ran (5 ms of CPU or more) but made no progress (lock-freedom: a
 * stalled or dead agent never stops the others), victim RUs not reclaimed or reclaimed
 * twice, stuck words, and after draining: RUs held, shadow entries left, counter
 * disagreements.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rusk/rusk.h>

#include "args.h"
#include "base/rng.h"
#include "kernel/ru_impl.h"

#define MAX_GANG 6
#define HOLD     16

typedef struct held {
	uint64_t id;
	size_t n;
	rusk_lease l[MAX_GANG];
} held;

typedef struct worker {
	pthread_t tid;
	int index;
	uint64_t ops; /* progress, read by the monitor (relaxed) */
	int stalling; /* 1 while thread 0 sleeps on purpose */
	int dead;     /* 1 once the victim ended itself */
	uint64_t twice, refused, commits, conflicts;
} worker;

static rusk_cluster *cl;
static uint64_t *shadow;
static uint32_t hot;
static int nthreads, stall_ms;
static double seconds;
static uint64_t seed;
static worker *W;
static pthread_barrier_t start;
static double t0;
static __thread int my_index = -1;
static uint64_t victim_partial; /* members the victim took in its last, unfinished gang */

/* CPU seconds a thread has run (its clock from pthread_getcpuclockid); a dead thread's
 * clock is gone: +inf, so it never looks unscheduled (it is excused as dead anyway). */
static double thread_cpu_s(clockid_t c)
{
	struct timespec ts;
	if (c == (clockid_t)-1 || clock_gettime(c, &ts) != 0)
		return 1e300;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The fault: thread 1 ends itself halfway through the run, mid-gang. */
static void die_mid_gang(uint64_t task, size_t taken, size_t n)
{
	(void)task;
	if (my_index != 1 || taken >= n || now_s() < t0 + seconds / 2)
		return;
	__atomic_store_n(&victim_partial, taken, __ATOMIC_RELAXED);
	__atomic_store_n(&W[1].dead, 1, __ATOMIC_RELEASE);
	pthread_exit(NULL);
}

static void drop(worker *w, held *h)
{
	for (size_t i = 0; i < h->n; i++) {
		uint64_t e = h->id;
		__atomic_compare_exchange_n(&shadow[h->l[i].ru], &e, 0, false, __ATOMIC_ACQ_REL,
		                            __ATOMIC_RELAXED);
		if (rusk_ru_release(cl, h->id, h->l[i]) != RUSK_OK)
			w->refused++;
	}
	h->n = 0;
}

static void *run(void *arg)
{
	worker *w = arg;
	my_index = w->index;
	rusk_rng r;
	rusk_rng_seed(&r, seed, (uint64_t)w->index + 1);
	held h[HOLD];
	memset(h, 0, sizeof h);
	uint64_t next = 0;
	double next_stall = 0;
	pthread_barrier_wait(&start);
	for (uint64_t op = 0;; op++) {
		double now = now_s();
		if ((op & 63) == 0 && now >= t0 + seconds)
			break;
		if (w->index == 0 && stall_ms > 0 && now >= next_stall) {
			__atomic_store_n(&w->stalling, 1, __ATOMIC_RELEASE);
			struct timespec ts = {0, stall_ms * 1000000L};
			nanosleep(&ts, NULL);
			__atomic_store_n(&w->stalling, 0, __ATOMIC_RELEASE);
			next_stall = now_s() + 0.1;
		}
		held *slot = &h[rusk_rng_below(&r, HOLD)];
		if (slot->n != 0)
			drop(w, slot);
		uint64_t task = (uint64_t)w->index + 1 + (next++) * (uint64_t)nthreads;
		size_t m = 1 + rusk_rng_below(&r, MAX_GANG);
		uint32_t rus[MAX_GANG];
		for (size_t i = 0; i < m; i++) {
		again:
			rus[i] = rusk_rng_below(&r, hot);
			for (size_t j = 0; j < i; j++)
				if (rus[j] == rus[i])
					goto again;
		}
		for (size_t i = 1; i < m; i++)
			for (size_t j = i; j > 0 && rus[j - 1] > rus[j]; j--) {
				uint32_t t = rus[j];
				rus[j] = rus[j - 1];
				rus[j - 1] = t;
			}
		slot->id = task;
		if (rusk_ru_commit_gang(cl, task, rus, m, NULL, slot->l, NULL) == RUSK_OK) {
			slot->n = m;
			w->commits += m;
			for (size_t i = 0; i < m; i++) {
				uint64_t e = 0;
				if (!__atomic_compare_exchange_n(&shadow[rus[i]], &e, task, false,
				                                 __ATOMIC_ACQ_REL,
				                                 __ATOMIC_RELAXED))
					w->twice++;
			}
		} else {
			w->conflicts++;
		}
		__atomic_store_n(&w->ops, op + 1, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < HOLD; i++)
		drop(w, &h[i]);
	return NULL;
}

static bool victim_task(uint64_t task, void *ctx)
{
	(void)ctx;
	return (task - 1) % (uint64_t)nthreads == 1;
}

static void on_reclaim(uint64_t task, rusk_lease l, void *ctx)
{
	uint64_t *n = ctx;
	(*n)++;
	uint64_t e = task; /* a victim's held task had claimed its RUs; a partial gang had not */
	__atomic_compare_exchange_n(&shadow[l.ru], &e, 0, false, __ATOMIC_ACQ_REL,
	                            __ATOMIC_RELAXED);
}

static int usage(const char *bad)
{
	fprintf(stderr,
	        "fault_torture: bad or missing value for %s\n"
	        "usage: fault_torture [--threads T>=3] [--seconds S] [--hot RUs] "
	        "[--stall-ms MS] [--seed N]\n",
	        bad);
	return 2;
}

int main(int argc, char **argv)
{
	nthreads = 4;
	seconds = 2;
	hot = 2048;
	stall_ms = 20;
	seed = 1;
	const stress_arg opts[] = {{"--threads", STRESS_INT, &nthreads},
	                           {"--seconds", STRESS_DOUBLE, &seconds},
	                           {"--hot", STRESS_U32, &hot},
	                           {"--stall-ms", STRESS_INT, &stall_ms},
	                           {"--seed", STRESS_U64, &seed}};
	const char *bad = stress_args_parse(argc, argv, opts, sizeof opts / sizeof opts[0]);
	if (bad)
		return usage(bad);
	if (nthreads < 3 || nthreads > 64 || seconds <= 0 || hot < 64 || stall_ms < 0 ||
	    stall_ms > 1000)
		return usage("an option (range)");
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.rus_per_machine = 16;
	p.machines = (hot + 15) / 16;
	p.machines_per_rack = 4;
	p.racks_per_cell = 1;
	p.partitions = 4;
	char err[256];
	if (rusk_cluster_create(&p, &cl, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "fault_torture: %s\n", err);
		return 2;
	}
	hot = rusk_cluster_rus(cl);
	shadow = calloc(hot, sizeof *shadow);
	W = calloc((size_t)nthreads, sizeof *W);
	rusk_fault_gang_member = die_mid_gang;
	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	t0 = now_s() + 0.05;
	for (int i = 0; i < nthreads; i++) {
		W[i].index = i;
		pthread_create(&W[i].tid, NULL, run, &W[i]);
	}
	/* Monitor progress in 100 ms windows; reclaim the victim's RUs once it is dead. */
	uint64_t *last = calloc((size_t)nthreads, sizeof *last);
	/* A thread the OS did not run in a window cannot be blamed for it: lock-freedom
	 * promises progress to a thread that gets CPU time, and a loaded 2-core machine can
	 * leave one of 4 workers unscheduled for 100 ms. Each worker's CPU clock tells. */
	double *cpu0 = calloc((size_t)nthreads, sizeof *cpu0);
	clockid_t *clk = calloc((size_t)nthreads, sizeof *clk);
	for (int i = 0; i < nthreads; i++)
		if (pthread_getcpuclockid(W[i].tid, &clk[i]) != 0)
			clk[i] = (clockid_t)-1;
	uint64_t windows = 0, no_progress = 0, reclaimed = 0, victim_rus = 0, reclaim_calls = 0;
	size_t stuck = 0;
	struct timespec tick = {0, 100000000L};
	nanosleep(&tick, NULL);
	while (now_s() < t0 + seconds - 0.1) {
		for (int i = 0; i < nthreads; i++) {
			last[i] = __atomic_load_n(&W[i].ops, __ATOMIC_RELAXED);
			cpu0[i] = thread_cpu_s(clk[i]);
		}
		nanosleep(&tick, NULL);
		windows++;
		for (int i = 0; i < nthreads; i++) {
			uint64_t ops = __atomic_load_n(&W[i].ops, __ATOMIC_RELAXED);
			bool excused = __atomic_load_n(&W[i].dead, __ATOMIC_ACQUIRE) ||
			               (i == 0 && stall_ms > 0) ||
			               thread_cpu_s(clk[i]) - cpu0[i] < 0.005; /* not run */
			if (!excused && ops == last[i])
				no_progress++;
		}
		if (__atomic_load_n(&W[1].dead, __ATOMIC_ACQUIRE) && reclaim_calls == 0) {
			/* Count the victim's RUs, then recover them while the others run. */
			for (uint32_t ru = 0; ru < hot; ru++) {
				rusk_ru_info ri;
				rusk_ru_state(cl, ru, &ri);
				victim_rus += ri.owner != 0 && ri.owner != RUSK_OWNER_NONE &&
				              victim_task(ri.owner, NULL);
			}
			size_t n = 0;
			rusk_ru_reclaim(cl, victim_task, on_reclaim, &reclaimed, &n, &stuck);
			reclaim_calls++;
		}
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(W[i].tid, NULL);
	rusk_fault_gang_member = NULL;
	uint64_t left_victim = 0, held_after = 0, shadow_left = 0, twice = 0, refused = 0,
	         commits = 0, conflicts = 0, ops = 0;
	for (uint32_t ru = 0; ru < hot; ru++) {
		rusk_ru_info ri;
		rusk_ru_state(cl, ru, &ri);
		held_after += ri.owner != 0;
		left_victim += ri.owner != 0 && victim_task(ri.owner, NULL);
		shadow_left += shadow[ru] != 0;
	}
	for (int i = 0; i < nthreads; i++) {
		twice += W[i].twice;
		refused += W[i].refused;
		commits += W[i].commits;
		conflicts += W[i].conflicts;
		ops += W[i].ops;
	}
	int vrc = rusk_cluster_verify(cl, err, sizeof err);
	bool died = W[1].dead;
	uint64_t violations = twice + refused + no_progress + stuck + left_victim + held_after +
	                      shadow_left + (vrc != RUSK_OK) + !died + (reclaimed != victim_rus) +
	                      (victim_rus == 0);
	printf("fault_torture: %d threads, %u hot RUs, %.1f s, stall %d ms every 100 ms, seed "
	       "%" PRIu64 "\n",
	       nthreads, hot, seconds, stall_ms, seed);
	printf("  operations        %" PRIu64 " (%" PRIu64 " RU commits, %" PRIu64
	       " gang conflicts)\n",
	       ops, commits, conflicts);
	printf("  faults injected   thread 0 stalled every 100 ms; thread 1 died mid-gang "
	       "(%s, %" PRIu64 " of its gang's RUs taken)\n",
	       died ? "yes" : "NO", victim_partial);
	printf("  recovery          %" PRIu64 " RUs of the dead agent found, %" PRIu64
	       " reclaimed while %d agents ran, %zu stuck\n",
	       victim_rus, reclaimed, nthreads - 1, stuck);
	printf("  progress          %" PRIu64 " windows of 100 ms, %" PRIu64
	       " without progress for a live agent\n",
	       windows, no_progress);
	printf("  violations        %" PRIu64 " (granted twice %" PRIu64 ", refused %" PRIu64
	       ", held after drain %" PRIu64 ", shadow left %" PRIu64 ", recount %s)\n",
	       violations, twice, refused, held_after, shadow_left, vrc == RUSK_OK ? "ok" : err);
	printf("%s\n", violations == 0 ? "PASS" : "FAIL");
	free(last);
	free(cpu0);
	free(clk);
	free(shadow);
	free(W);
	pthread_barrier_destroy(&start);
	rusk_cluster_destroy(cl);
	return violations == 0 ? 0 : 1;
}
