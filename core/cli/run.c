/* SPDX-License-Identifier: MIT */
/*
 * `rusk run`: the main job in real time (ParSync §6.1 evaluation shape).
 *
 * Threads: one open-loop generator, N agents, one completer, and the main thread sampling
 * metrics once per second.
 *   generator  Poisson arrivals at the phase's rate (base x 50,80,95,80,50% by default);
 *              each task gets its intended arrival time as submission time and goes to
 *              agent (id mod N) through that agent's ck_ring (SPSC). Arrivals never wait:
 *              a full ring rejects the task, counted.
 *   agent      a rusk_agent: ticks its view, moves its ring into its local queues, takes a
 *              batch (high priority, retries, due admission waiters, then the rest; see
 *              driver.c), admission-checks and places each task (sample, commit,
 *              resample); a task given back (RUSK_EAGAIN) goes to its retry list with its
 *              submission time; a high-priority one may preempt. A placed task goes to the
 *              completer through the agent's completion ring with its end time.
 *   completer  keeps placed tenures in a min-heap by end time and ends them (unless
 *              preempted first) by releasing their RUs.
 * Accounting: submitted = placed - preempted + rejected + queued at the end, checked.
 * SIGINT stops the generator and the run, then prints the same summary.
 */
#include <ck_ring.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "driver.h"
#include "heap.h"

#if defined(RUSK_TSAN)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define TSAN_ACQUIRE(p) ((void)0)
#define TSAN_RELEASE(p) ((void)0)
#endif

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	nanosleep(&ts, NULL);
}

static void *gen_main(void *arg)
{
	run *R = arg;
	drv_gen G;
	drv_gen_init(R, &G);
	rusk_arrival x;
	int grp;
	while (!interrupted && drv_gen_next(R, &G, &x, &grp)) {
		uint64_t due = R->t0 + (uint64_t)(x.t_s * 1e9), now = mono_ns();
		if (due > now + 200000) {
			sleep_ns(due - now);
			now = mono_ns();
		}
		stat_add(&R->submitted, 1);
		/* Submitted when it enters the queue: never before now, however the sleep
		 * batched the arrivals; a late generator's lag counts as delay (open loop). */
		run_agent *a;
		run_task *tk = drv_gen_task(R, &G, &x, grp, due > now ? now : due, &a);
		if (tk == NULL) {
			stat_add(&R->rejected, 1);
			continue;
		}
		TSAN_RELEASE(tk); /* pairs with the agent's TSAN_ACQUIRE after dequeue */
		if (!ck_ring_enqueue_spsc(&a->in, a->in_buf, tk))
			stat_add(&R->rejected, 1); /* open loop: a full queue rejects */
	}
	rusk_store32((uint32_t *)&R->gen_done, 1, RUSK_RELEASE);
	return NULL;
}

/* A placed tenure on its way to the completer: the task may be preempted and placed
 * again meanwhile, so the entry keeps its own copy of the end time and tenure. */
typedef struct comp_entry {
	uint64_t end_ns;
	run_task *tk;
	uint32_t tenure;
} comp_entry;

static void hand_over(run_agent *a, run_task *tk)
{
	TSAN_RELEASE(tk); /* pairs with the completer's TSAN_ACQUIRE */
	for (unsigned spins = 0; !ck_ring_enqueue_spsc(&a->done, a->done_buf, tk); spins++)
		if (spins > 16)
			sched_yield(); /* the completer drains; leases are never dropped */
}

static void *agent_main(void *arg)
{
	run_agent *a = arg;
	run *R = a->run;
	const run_cfg *cfg = &R->cfg;
	rusk_thread_register();
	rusk_agent *ag = a->handle; /* created by rusk_cmd_run before any thread started */
	rusk_view *v = rusk_agent_view(ag);
	for (;;) {
		if (rusk_load32((uint32_t *)&R->stop, RUSK_ACQUIRE))
			break;
		uint64_t now = mono_ns();
		rusk_view_tick(v, now);
		run_task *tk;
		while (ck_ring_dequeue_spsc(&a->in, a->in_buf, &tk)) {
			TSAN_ACQUIRE(tk);
			drv_enqueue(a, tk);
		}
		uint32_t done = 0;
		size_t retries = a->retry.n;
		bool dry = false;
		while (done < cfg->batch && (tk = drv_next(a, now, &retries)) != NULL) {
			uint64_t t_deq = mono_ns();
			if (!tk->dequeued) {
				tk->dequeued = true;
				rusk_hist_record(&a->st.queue, t_deq - tk->submit_ns);
			}
			if (!drv_admit(R, a, tk, t_deq))
				continue; /* parked: waits in the admission heap */
			done++;
			rusk_task t = drv_task(R, tk);
			rusk_placement pl;
			int rc = rusk_agent_place(ag, &t, tk->l + tk->placed, &pl);
			if (rc == RUSK_EAGAIN && tk->prio > 0 &&
			    drv_preempt(R, a, v, tk, mono_ns()) > 0) {
				drv_count_commits(a, &pl);
				rc = rusk_agent_place(ag, &t, tk->l + tk->placed, &pl);
			}
			/* The cluster's clock is this driver's CLOCK_MONOTONIC: the call's own
			 * end reading saves one. */
			uint64_t t_done = pl.end_ns;
			drv_count_commits(a, &pl);
			if (rc != RUSK_OK) {
				drv_gave_back(a, tk);
				/* A one-RU task that drew nothing: the view has no free RU left, so
				 * neither has any other queued task until a sync. Wait for one
				 * instead of trying every queued task again and again. */
				if (pl.samples == 0 && t.rus == 1) {
					dry = true;
					break;
				}
				continue;
			}
			if (drv_placed(R, a, ag, tk, &pl, t_deq, t_done))
				hand_over(a, tk);
		}
		if (done == 0 || dry) {
			if (!dry && rusk_load32((uint32_t *)&R->gen_done, RUSK_ACQUIRE) &&
			    drv_queued(a) == 0 && ck_ring_size(&a->in) == 0)
				break;
			sleep_ns(50000);
		}
	}
	rusk_view_stats_get(v, &a->vs);
	struct timespec cpu;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	a->busy_s = (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9;
	run_task *tk;
	while (ck_ring_dequeue_spsc(&a->in, a->in_buf, &tk)) {
		TSAN_ACQUIRE(tk);
		drv_enqueue(a, tk);
	}
	drv_agent_drain(R, a);
	rusk_thread_unregister();
	return NULL;
}

static inline bool end_before(const comp_entry *x, const comp_entry *y)
{
	return x->end_ns < y->end_ns;
}

/* The completer's min-heap of placed tenures by end time. */
HEAP_DEFINE(heap, comp_entry, end_before)

/*
 * The completer's timing wheel: 2^16 slots of 2^20 ns (~1.05 ms, a 68.7 s horizon), each
 * an unsorted array of tenures ending in that slot; tenures beyond the horizon wait in a
 * heap and move into the wheel as it turns. Pushing is an append and each tenure is looked
 * at once or twice, where a heap of every running task cost ~380 instructions a task
 * (perf/RESULTS.md). Ends are exact: the slot of the current tick keeps what is not due.
 */
#define WHEEL_SHIFT 20
#define WHEEL_SLOTS (1u << 16)

typedef struct slot {
	comp_entry *a;
	uint32_t n, cap;
} slot;

typedef struct wheel {
	slot *s;
	uint64_t tick; /* every slot before it has been emptied */
	heap far;
} wheel;

static void wheel_put(wheel *w, comp_entry e)
{
	uint64_t t = e.end_ns >> WHEEL_SHIFT;
	if (t < w->tick)
		t = w->tick; /* already due */
	if (t - w->tick >= WHEEL_SLOTS) {
		heap_push(&w->far, e);
		return;
	}
	slot *sl = &w->s[t & (WHEEL_SLOTS - 1)];
	if (sl->n == sl->cap) {
		sl->cap = sl->cap ? sl->cap * 2 : 64;
		sl->a = realloc(sl->a, sl->cap * sizeof *sl->a);
		if (sl->a == NULL)
			abort(); /* the CLI's own queue; the kernel never aborts */
	}
	sl->a[sl->n++] = e;
}

/* Ends every tenure due by `now`; with `all`, every tenure (the run is stopping). */
static void wheel_turn(run *R, wheel *w, uint64_t now, bool all)
{
	if (all) {
		for (uint32_t k = 0; k < WHEEL_SLOTS; k++) {
			for (uint32_t i = 0; i < w->s[k].n; i++)
				drv_complete(R, w->s[k].a[i].tk, w->s[k].a[i].tenure);
			w->s[k].n = 0;
		}
		while (w->far.n > 0) {
			comp_entry e = heap_pop(&w->far);
			drv_complete(R, e.tk, e.tenure);
		}
		return;
	}
	uint64_t now_tick = now >> WHEEL_SHIFT;
	for (;;) {
		while (w->far.n > 0 && (w->far.a[0].end_ns >> WHEEL_SHIFT) < w->tick + WHEEL_SLOTS)
			wheel_put(w, heap_pop(&w->far));
		slot *sl = &w->s[w->tick & (WHEEL_SLOTS - 1)];
		uint32_t keep = 0;
		for (uint32_t i = 0; i < sl->n; i++) {
			if (sl->a[i].end_ns <= now)
				drv_complete(R, sl->a[i].tk, sl->a[i].tenure);
			else
				sl->a[keep++] = sl->a[i];
		}
		sl->n = keep;
		if (w->tick >= now_tick)
			break; /* the current tick: what is left is not due yet */
		w->tick++;     /* an earlier tick: its slot is empty now */
	}
}

static void *completer_main(void *arg)
{
	run *R = arg;
	wheel w = {.s = calloc(WHEEL_SLOTS, sizeof(slot)), .tick = mono_ns() >> WHEEL_SHIFT};
	if (w.s == NULL)
		abort();
	for (;;) {
		bool stopping = rusk_load32((uint32_t *)&R->stop, RUSK_ACQUIRE);
		for (uint32_t i = 0; i < R->cfg.agents; i++) {
			run_task *tk;
			while (ck_ring_dequeue_spsc(&R->ag[i].done, R->ag[i].done_buf, &tk)) {
				TSAN_ACQUIRE(tk);
				/* If it was preempted (and maybe placed again) meanwhile, this
				 * entry names the newer tenure and a later hand-over a duplicate:
				 * drv_complete's CAS ends each tenure once. */
				uint64_t st = rusk_load64(&tk->st, RUSK_ACQUIRE);
				uint64_t end = rusk_load64(&tk->end_ns, RUSK_RELAXED);
				wheel_put(&w, (comp_entry){end, tk, (uint32_t)(st >> 2)});
			}
		}
		wheel_turn(R, &w, mono_ns(), stopping);
		if (stopping)
			break;
		sleep_ns(200000);
	}
	for (uint32_t k = 0; k < WHEEL_SLOTS; k++)
		free(w.s[k].a);
	free(w.s);
	free(w.far.a);
	return NULL;
}

int rusk_cmd_run(int argc, char **argv)
{
	cli_cluster cc;
	run R;
	memset(&R, 0, sizeof R);
	int rc = drv_parse(argc, argv, false, &cc, &R.cfg);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = drv_setup(&R, &cc)) != 0)
		return rc;
	const run_cfg *cfg = &R.cfg;
	double total_s = cfg->n_phases * cfg->phase_s;
	struct sigaction sa = {.sa_handler = on_sigint};
	sigaction(SIGINT, &sa, NULL);
	R.t0 = mono_ns() + 20000000; /* agents' sync schedules start together */
	/* Every agent exists before any thread starts and until every thread has joined:
	 * the completer and the drains release through agent 0 (drv_release). */
	for (uint32_t i = 0; i < cfg->agents; i++) {
		rusk_agent_params ap;
		drv_agent_params(&R, i, &ap);
		char err[256];
		R.ag[i].err = rusk_agent_create(R.c, &ap, &R.ag[i].handle, err, sizeof err);
		if (R.ag[i].err != RUSK_OK) {
			fprintf(stderr, "rusk run: agent %u: %s\n", i, err);
			while (i-- > 0)
				rusk_agent_destroy(R.ag[i].handle);
			drv_free(&R);
			return RUSK_EXIT_FAIL;
		}
	}
	for (uint32_t i = 0; i < cfg->agents; i++) {
		run_agent *a = &R.ag[i];
		a->in_buf = calloc(DRV_RING_SIZE, sizeof *a->in_buf);
		a->done_buf = calloc(DRV_RING_SIZE, sizeof *a->done_buf);
		if (a->in_buf == NULL || a->done_buf == NULL) {
			fprintf(stderr, "rusk run: out of memory\n");
			return RUSK_EXIT_FAIL;
		}
		ck_ring_init(&a->in, DRV_RING_SIZE);
		ck_ring_init(&a->done, DRV_RING_SIZE);
		pthread_create(&a->tid, NULL, agent_main, a);
	}
	pthread_t gen, comp;
	pthread_create(&comp, NULL, completer_main, &R);
	pthread_create(&gen, NULL, gen_main, &R);

	/* Per-second sampling until the generator is done and agents drained. */
	bool tty = isatty(2);
	for (;;) {
		sleep_ns(1000000000ull);
		uint64_t backlog = drv_second(&R, tty);
		bool drained = rusk_load32((uint32_t *)&R.gen_done, RUSK_ACQUIRE) && backlog == 0;
		if (drained || interrupted || R.secs > total_s + 30)
			break;
	}
	if (tty)
		fprintf(stderr, "\n");
	R.elapsed_s = R.secs;
	rusk_store32((uint32_t *)&R.stop, 1, RUSK_RELEASE);
	pthread_join(gen, NULL);
	for (uint32_t i = 0; i < cfg->agents; i++)
		pthread_join(R.ag[i].tid, NULL);
	pthread_join(comp, NULL);
	int status = drv_report(&R, interrupted);
	for (uint32_t i = 0; i < cfg->agents; i++) {
		rusk_agent_destroy(R.ag[i].handle);
		free(R.ag[i].in_buf);
		free(R.ag[i].done_buf);
	}
	drv_free(&R);
	return status;
}
