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
 *
 * Stopping. SIGINT or SIGTERM (drv_signals_install) stops the generator and the run, then
 * prints the same summary (exit status RUSK_EXIT_INTERRUPTED). Every sleep is sliced
 * (SLICE_NS at most) and checks for a stop, so a signal in a gap of a trace ends the run
 * at once; the signals are blocked in the worker threads, so they interrupt the main
 * thread's sleep. An allocation failure in any thread (drv_fail) or a thread that cannot
 * be created stops the run the same way: every thread started is joined before anything
 * is freed, and the status is RUSK_EXIT_NOMEM. Join order: generator, agents (each drains
 * its queues), then the completer, which keeps draining the agents' completion rings
 * until every agent has joined, so no hand-over waits on it and no tenure is left behind.
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

#include <urcu/urcu-memb.h>  /* the kernel's RCU flavour (core/snapshot.c) */
#if !defined(RUSK_SANITIZED) /* jemalloc is the process allocator (CMakeLists.txt) */
#include <jemalloc/jemalloc.h>
#endif

#include "atomic.h"
#include "compiler.h"
#include "driver.h"
#include "heap.h"

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

/* The longest any thread sleeps without looking for a stop (a trace's gaps last minutes). */
#define SLICE_NS 20000000ull

static bool stopping(run *R)
{
	return rusk_load32((uint32_t *)&R->stop, RUSK_ACQUIRE) || drv_stop_signal() != 0;
}

/* Sleeps until `until` (monotonic ns) in slices; false as soon as the run is stopping. */
static bool sleep_until(run *R, uint64_t until)
{
	for (;;) {
		if (stopping(R))
			return false;
		uint64_t now = mono_ns();
		if (now >= until)
			return true;
		sleep_ns(until - now < SLICE_NS ? until - now : SLICE_NS);
	}
}

/* sleep_until for the main thread, sampling utilization every 10 ms on the way. */
static bool sleep_sampling(run *R, uint64_t until)
{
	for (;;) {
		if (stopping(R))
			return false;
		drv_util_sample(R);
		uint64_t now = mono_ns();
		if (now >= until)
			return true;
		sleep_ns(until - now < 10000000ull ? until - now : 10000000ull);
	}
}

static void *gen_main(void *arg)
{
	run *R = arg;
	drv_gen G;
	drv_gen_init(R, &G);
	rusk_arrival x;
	int grp;
	while (!stopping(R) && drv_gen_next(R, &G, &x, &grp)) {
		uint64_t due = R->t0 + (uint64_t)(x.t_s * 1e9), now = mono_ns();
		if (due > now + 200000) {
			if (!sleep_until(R, due))
				break; /* stopped during a gap: x was never submitted */
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

/* A task the kernel refuses outright (RUSK_EINVAL, RUSK_EINFEASIBLE): retrying cannot help, so it
 * is rejected, counted, and gives back whatever RUs an incremental placement won. */
static void refuse(run *R, run_agent *a, run_task *tk)
{
	if (tk->placed > 0) {
		drv_release(R, tk, NULL);
		tk->placed = 0;
	}
	stat_add(&a->st.refused, 1);
}

static void *agent_main(void *arg)
{
	run_agent *a = arg;
	run *R = a->run;
	const run_cfg *cfg = &R->cfg;
	rusk_thread_register();
	rusk_agent *ag = a->handle; /* created by rusk_cmd_run before any thread started */
	rusk_view *v = rusk_agent_view(ag);
	/* The view has no room for what failed last: nothing can change that but a sync of
	 * the view (or a preemption, which only high-priority tasks do), so until the next
	 * sync the agent serves only its high-priority queue instead of trying every queued
	 * task again and again (a saturated run re-queued hundreds of millions of times). */
	bool dry = false;
	for (;;) {
		if (rusk_load32((uint32_t *)&R->stop, RUSK_ACQUIRE))
			break;
		uint64_t now = mono_ns();
		int synced = rusk_view_tick(v, now);
		if (synced < 0) {
			drv_fail(R, "syncing an agent's view");
			break;
		}
		if (synced > 0)
			dry = false;
		run_task *tk;
		while (ck_ring_dequeue_spsc(&a->in, a->in_buf, &tk)) {
			TSAN_ACQUIRE(tk);
			drv_enqueue(a, tk);
		}
		uint32_t done = 0;
		size_t retries = a->retry.n;
		bool was_dry = dry;
		while (done < cfg->batch &&
		       (tk = was_dry ? tq_pop(&a->hi) : drv_next(a, now, &retries)) != NULL) {
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
			if (rc == RUSK_EINVAL || rc == RUSK_EINFEASIBLE) {
				refuse(R, a, tk);
				continue;
			}
			if (rc != RUSK_OK) {
				drv_gave_back(a, tk);
				if (rc == RUSK_ENOMEM) {
					drv_fail(R, "placing a task");
					break;
				}
				/* Drew nothing (the view has no free RU), or a multi-RU task did
				 * not get all it needs: the view lacks room for it, and a retry
				 * before the next sync would find the same view. */
				if (pl.samples == 0 || t.rus > 1) {
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

static void wheel_put(run *R, wheel *w, comp_entry e)
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
		uint32_t cap = sl->cap ? sl->cap * 2 : 64;
		comp_entry *na = realloc(sl->a, cap * sizeof *sl->a);
		if (na == NULL) {
			/* Nowhere to keep it: end it now (its RUs come back, the accounting
			 * holds) and stop the run. */
			drv_complete(R, e.tk, e.tenure);
			drv_fail(R, "in the completer");
			return;
		}
		sl->a = na;
		sl->cap = cap;
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
			wheel_put(R, w, heap_pop(&w->far));
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

typedef struct completer {
	run *R;
	wheel w; /* its slots allocated before the thread starts */
} completer;

static void *completer_main(void *arg)
{
	completer *C = arg;
	run *R = C->R;
	wheel w = C->w;
	w.tick = mono_ns() >> WHEEL_SHIFT;
	for (;;) {
		/* Not R->stop: agents still hand over until they have joined. */
		bool stopping = rusk_load32((uint32_t *)&R->comp_stop, RUSK_ACQUIRE);
		for (uint32_t i = 0; i < R->cfg.agents; i++) {
			run_task *tk;
			while (ck_ring_dequeue_spsc(&R->ag[i].done, R->ag[i].done_buf, &tk)) {
				TSAN_ACQUIRE(tk);
				/* If it was preempted (and maybe placed again) meanwhile, this
				 * entry names the newer tenure and a later hand-over a duplicate:
				 * drv_complete's CAS ends each tenure once. */
				uint64_t st = rusk_load64(&tk->st, RUSK_ACQUIRE);
				uint64_t end = rusk_load64(&tk->end_ns, RUSK_RELAXED);
				wheel_put(R, &w, (comp_entry){end, tk, (uint32_t)(st >> 2)});
			}
		}
		wheel_turn(R, &w, mono_ns(), stopping);
		if (stopping)
			break;
		sleep_ns(200000);
	}
	C->w = w; /* freed by rusk_cmd_run, which made it */
	return NULL;
}

/*
 * jemalloc makes its arenas lazily, each on the first allocation of a thread it picks it
 * for, and crashes (SIGSEGV) if it cannot map one then: with 8 agents under `ulimit -v`
 * just too small, agent threads died in a snapshot's malloc. Making every arena here,
 * before the agents start, turns running out of memory later into an allocation that
 * fails (drv_fail). Binding this thread to arena i makes arena i; then back to its own.
 */
static void make_arenas(void)
{
#if !defined(RUSK_SANITIZED)
	unsigned n = 0, own = 0;
	size_t sz = sizeof n;
	if (mallctl("opt.narenas", &n, &sz, NULL, 0) != 0 ||
	    mallctl("thread.arena", &own, &sz, NULL, 0) != 0)
		return;
	for (unsigned i = 0; i < n; i++)
		mallctl("thread.arena", NULL, NULL, &i, sizeof i);
	mallctl("thread.arena", NULL, NULL, &own, sizeof own);
#endif
}

/*
 * liburcu starts its call_rcu thread on the first call_rcu, which here is an agent's first
 * snapshot publish, and aborts the process if it cannot create it then. Starting it now,
 * before the agents' stacks take the address space, leaves running out to pthread_create,
 * which the run survives (start_threads).
 */
static void start_call_rcu(void)
{
	(void)urcu_memb_get_default_call_rcu_data();
}

/* The run's threads besides the agents (run_agent.tid / .started). */
typedef struct threads {
	pthread_t gen, comp;
	bool gen_on, comp_on;
} threads;

/* Starts the completer, the agents, then the generator, with SIGINT and SIGTERM blocked
 * in them (they go to the main thread, whose sleep they cut short). Returns 0, or the
 * first pthread_create error after printing it; what did start is marked to be joined. */
static int start_threads(run *R, completer *C, threads *th)
{
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	int err = pthread_create(&th->comp, NULL, completer_main, C);
	th->comp_on = err == 0;
	const char *what = "the completer thread";
	char name[64];
	for (uint32_t i = 0; err == 0 && i < R->cfg.agents; i++) {
		err = pthread_create(&R->ag[i].tid, NULL, agent_main, &R->ag[i]);
		R->ag[i].started = err == 0;
		snprintf(name, sizeof name, "agent thread %u of %u", i + 1, R->cfg.agents);
		what = name;
	}
	if (err == 0) {
		err = pthread_create(&th->gen, NULL, gen_main, R);
		th->gen_on = err == 0;
		what = "the generator thread";
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0)
		fprintf(stderr, "rusk run: cannot start %s: %s; stopping the run\n", what,
		        strerror(err));
	return err;
}

/* Stops and joins every thread that started: the generator, the agents (each drains its
 * queues), then the completer, which ends every tenure still running. */
static void stop_threads(run *R, threads *th)
{
	rusk_store32((uint32_t *)&R->stop, 1, RUSK_RELEASE);
	if (th->gen_on)
		pthread_join(th->gen, NULL);
	for (uint32_t i = 0; i < R->cfg.agents; i++)
		if (R->ag[i].started)
			pthread_join(R->ag[i].tid, NULL);
	rusk_store32((uint32_t *)&R->comp_stop, 1, RUSK_RELEASE);
	if (th->comp_on)
		pthread_join(th->comp, NULL);
}

/* Frees what rusk_cmd_run allocated for agents and the completer (threads joined). */
static void free_run(run *R, completer *C)
{
	for (uint32_t i = 0; R->ag != NULL && i < R->cfg.agents; i++) {
		if (R->ag[i].handle != NULL)
			rusk_agent_destroy(R->ag[i].handle);
		free(R->ag[i].in_buf);
		free(R->ag[i].done_buf);
	}
	if (C->w.s != NULL)
		for (uint32_t k = 0; k < WHEEL_SLOTS; k++)
			free(C->w.s[k].a);
	free(C->w.s);
	free(C->w.far.a);
	drv_free(R);
}

/* Agents, their rings and the completer's wheel, all before any thread starts. Returns 0
 * or the exit status after printing why. */
static int make_agents(run *R, completer *C)
{
	for (uint32_t i = 0; i < R->cfg.agents; i++) {
		rusk_agent_params ap;
		drv_agent_params(R, i, &ap);
		char err[256];
		int rc = rusk_agent_create(R->c, &ap, &R->ag[i].handle, err, sizeof err);
		if (rc != RUSK_OK) {
			R->ag[i].handle = NULL;
			fprintf(stderr, "rusk run: agent %u: %s\n", i, err);
			return rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_FAIL;
		}
		run_agent *a = &R->ag[i];
		a->in_buf = calloc(DRV_RING_SIZE, sizeof *a->in_buf);
		a->done_buf = calloc(DRV_RING_SIZE, sizeof *a->done_buf);
		if (a->in_buf == NULL || a->done_buf == NULL) {
			fprintf(stderr, "rusk run: out of memory for agent %u of %u's rings\n",
			        i + 1, R->cfg.agents);
			return RUSK_EXIT_NOMEM;
		}
		ck_ring_init(&a->in, DRV_RING_SIZE);
		ck_ring_init(&a->done, DRV_RING_SIZE);
	}
	C->w.s = calloc(WHEEL_SLOTS, sizeof(slot));
	if (C->w.s == NULL) {
		fprintf(stderr, "rusk run: out of memory for the completer\n");
		return RUSK_EXIT_NOMEM;
	}
	return 0;
}

int rusk_cmd_run(int argc, char **argv)
{
	cli_cluster cc;
	run R;
	memset(&R, 0, sizeof R);
	/* From the start: a signal during the set-up still gets a (short) summary. */
	drv_signals_install();
	int rc = drv_parse(argc, argv, false, &cc, &R.cfg);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	if ((rc = drv_setup(&R, &cc)) != 0)
		return rc;
	const run_cfg *cfg = &R.cfg;
	double total_s = cfg->n_phases * cfg->phase_s;
	R.t0 = mono_ns() + 20000000; /* agents' sync schedules start together */
	/* Every agent exists before any thread starts and until every thread has joined:
	 * the completer and the drains release through agent 0 (drv_release). */
	completer C = {.R = &R};
	make_arenas();
	start_call_rcu();
	threads th = {0};
	if ((rc = make_agents(&R, &C)) == RUSK_EXIT_FAIL) {
		free_run(&R, &C); /* an agent refused its parameters (printed) */
		return rc;
	}
	if (rc != 0 || start_threads(&R, &C, &th) != 0) {
		/* Out of memory or threads before any task: the summary and --json say so. */
		rusk_store32(&R.fail, 1, RUSK_RELAXED);
		stop_threads(&R, &th);
		int status = drv_report(&R, false);
		free_run(&R, &C);
		return status;
	}

	/* Per-second sampling until the generator is done and agents drained, a signal, or
	 * a thread's failure (drv_fail sets R.stop). */
	bool tty = isatty(2);
	uint64_t next = mono_ns();
	for (;;) {
		next += 1000000000ull;
		if (!sleep_sampling(&R, next))
			break;
		uint64_t backlog = drv_second(&R, tty);
		bool drained = rusk_load32((uint32_t *)&R.gen_done, RUSK_ACQUIRE) && backlog == 0;
		if (drained || R.secs > total_s + 30)
			break;
	}
	bool interrupted = drv_stop_signal() != 0;
	if (tty)
		fprintf(stderr, "\n");
	R.elapsed_s = R.secs;
	uint64_t now = mono_ns();
	if ((interrupted || R.fail) && now > R.t0 && (now - R.t0) / 1e9 > R.elapsed_s)
		R.elapsed_s = (now - R.t0) / 1e9; /* the part of a second that ran counts */
	stop_threads(&R, &th);
	int status = drv_report(&R, interrupted);
	free_run(&R, &C);
	return status;
}
