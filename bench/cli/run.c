/* SPDX-License-Identifier: MIT */
/*
 * `rusk run`: the main job in real time (ParSync §6.1 evaluation shape), a client of the
 * dispatcher (rusk/dispatch.h) like any embedder.
 *
 * Threads: one open-loop generator, the dispatcher's N agents and its completer, and the
 * main thread sampling metrics once per second.
 *   generator  Poisson arrivals at the phase's rate (base x 50,80,95,80,50% by default);
 *              each task gets its intended arrival time as submission time and goes to
 *              its agent with rusk_dispatch_submit. Arrivals never wait: a full queue
 *              rejects the task, counted.
 *   agents     the dispatcher's: queues, admission, priorities, preemption, placement;
 *              an idle agent parks and the next submission wakes it.
 *   completer  the dispatcher's: ends each placed task after its duration.
 *   planner    --sched only (sched_run.c): arrivals go to the planner instead of the
 *              agents; this thread runs a planning cycle every --plan-tick-s and submits
 *              the jobs it starts, and closes the dispatcher once every job is resolved.
 * Accounting: submitted = placed - preempted + rejected + queued at the end, checked.
 *
 * Stopping. SIGINT, SIGTERM or SIGHUP (drv_signals_install; stop.c: a repeated one) stops
 * the generator and the run, then writes the same report (exit status
 * RUSK_EXIT_INTERRUPTED). Every sleep is sliced
 * (SLICE_NS at most) and checks for a stop, so a signal in a gap of a trace ends the run
 * at once; the signals are blocked in the other threads, so they interrupt the main
 * thread's sleep. An allocation failure in any thread (drv_fail, or the dispatcher's
 * fail flag) or a thread that cannot be created stops the run the same way: every
 * thread started is joined before anything is freed, and the status is RUSK_EXIT_NOMEM.
 */
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
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <urcu/urcu-memb.h>  /* the kernel's RCU flavour (core/kernel/snapshot.c) */
#if !defined(RUSK_SANITIZED) /* jemalloc is the process allocator (CMakeLists.txt) */
#include <jemalloc/jemalloc.h>
#endif

#include "base/atomic.h"
#include "base/compiler.h"
#include "runstate.h"

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

/* The generator releases a task up to GEN_AHEAD_NS before its arrival time, and wakes
 * GEN_LEAD_NS before it: a sleep on this class of machine ends 38-56 us late at the
 * median and 121-124 us at p99 even with a 1 ns timer slack (perf/wakeup.c), and
 * that lag is the load generator's, not the scheduler's. The offered rate is unchanged:
 * every task is still released in arrival order, none more than GEN_AHEAD_NS early. The
 * window trades delay for CPU (default run): 400 us ahead halved the agents' CPU per task
 * (fewer releases, each waking a parked agent) and raised the median delay from 22 to
 * 27 us (a longer burst per wake-up). */
#define GEN_AHEAD_NS 200000ull
#define GEN_LEAD_NS  150000ull

/* The arrivals a generator has due at once are submitted to each agent together (one
 * in-flight mark and at most one wake-up per agent per burst): at most this many. */
#define GEN_BURST     64
#define GEN_BURST_MAX GEN_BURST

/* Submits a generator's burst, per agent in their order (rusk_dispatch_submit_batch), and
 * counts what was refused. */
static void flush_burst(run *R, drv_gen *G, rusk_dtask_spec *burst, uint32_t *dest, size_t *nb)
{
	size_t n = *nb;
	bool sent[GEN_BURST_MAX] = {false};
	for (size_t i = 0; i < n; i++) {
		if (sent[i])
			continue;
		/* Every task of this burst for dest[i], in order. */
		rusk_dtask_spec one[GEN_BURST_MAX];
		size_t k = 0;
		for (size_t j = i; j < n; j++)
			if (!sent[j] && dest[j] == dest[i]) {
				one[k++] = burst[j];
				sent[j] = true;
			}
		int rcs[GEN_BURST_MAX];
		(void)rusk_dispatch_submit_batch(R->d, dest[i], one, k, NULL, rcs, NULL);
		for (size_t j = 0; j < k; j++) {
			if (rcs[j] == RUSK_EINVAL || rcs[j] == RUSK_EINFEASIBLE)
				stat_add(&G->refused, 1); /* the kernel would never place it */
			else if (rcs[j] != RUSK_OK)
				stat_add(&G->rejected, 1); /* open loop: a full queue rejects */
		}
	}
	(void)R;
	*nb = 0;
}

/* A generator thread: shard `shard` of the workload (drv_gen_init). */
typedef struct gen_arg {
	run *R;
	drv_gen *G;
	uint32_t shard;
} gen_arg;

static void *gen_main(void *arg)
{
	gen_arg *ga = arg;
	run *R = ga->R;
	drv_gen *G = ga->G;
	/* Linux lets a sleep end up to the thread's timer slack (50 us by default) late, and
	 * an open-loop generator's lateness counts as scheduling delay: at 40K tasks/s it was
	 * most of the median. Wake on time instead (hrtimer precision). */
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	if (R->cls != NULL) /* --classify: fold-ins read the model under RCU */
		rusk_thread_register();
	rusk_arrival x;
	int grp;
	G->concentrate = true; /* keep_load (driver.c) */
	/* A burst: the tasks released together (due within GEN_AHEAD_NS), for one agent. */
	rusk_dtask_spec burst[GEN_BURST];
	uint32_t dest[GEN_BURST];
	size_t nb = 0;
	while (!stopping(R) && drv_gen_next(R, G, &x, &grp)) {
		uint64_t due = R->t0 + (uint64_t)(x.t_s * 1e9), now = mono_ns();
		if (due > now + GEN_AHEAD_NS) {
			/* The burst goes out; if it woke a parked agent and the generator is on
			 * time, the agent gets this core now (with two cores for the generator
			 * and two agents, the woken agent otherwise waited for the generator's
			 * next burst: median delay 22 us; 3-4 us). */
			bool parked = nb > 0 && rusk_dagent_parked_(R->ag[dest[0]].da);
			flush_burst(R, G, burst, dest, &nb);
			if (parked)
				sched_yield();
			if (!sleep_until(R, due - GEN_LEAD_NS))
				break; /* stopped during a gap: x was never submitted */
			now = mono_ns();
		}
		if (R->sched != NULL) { /* to the planner: plan_main submits it when it starts */
			run_agent *a;
			rusk_dtask_spec spec;
			if (drv_gen_task(R, G, &x, grp, due > now ? now : due, &spec, &a)) {
				drv_sched_arrival(R, &x, &spec, a->index, due > now ? now : due);
			} else {
				stat_add(&G->submitted, 1);
				stat_add(&G->rejected, 1);
			}
			continue;
		}
		stat_add(&G->submitted, 1);
		/* Submitted when it enters the queue, at most GEN_AHEAD_NS before its time: its
		 * delay counts from then. A generator later than GEN_LEAD_NS counts its lag as
		 * delay (open loop). A burst goes to one agent: the tasks released together are
		 * placed in one wake-up of one agent, whatever the number of agents (a round
		 * robin per task split them, one wake-up each: twice the CPU per task at 8); and
		 * the next burst goes to the same agent while its queue is short: a light load is
		 * placed by one agent, the next one taking over as the queue grows. */
		run_agent *a;
		G->keep_agent = nb > 0;
		if (!drv_gen_task(R, G, &x, grp, due > now ? now : due, &burst[nb], &a)) {
			stat_add(&G->rejected, 1);
			continue;
		}
		dest[nb++] = a->index;
		if (nb == GEN_BURST)
			flush_burst(R, G, burst, dest, &nb);
	}
	flush_burst(R, G, burst, dest, &nb);
	if (R->cls != NULL)
		rusk_thread_unregister();
	/* The last generator to end says so, and (without a planner) closes the dispatcher:
	 * each agent stops once it has placed what it holds. */
	if (rusk_faa32(&R->gens_live, (uint32_t)-1, RUSK_ACQ_REL) == 1) {
		rusk_store32((uint32_t *)&R->gen_done, 1, RUSK_RELEASE);
		if (R->sched == NULL) /* else the planner closes it once its jobs are resolved */
			rusk_dispatch_close(R->d);
	}
	return NULL;
}

/* --sched: the planner started a job: it goes to its agent (counted as submitted there;
 * two threads count now, hence the atomic adds). 0 when refused (REJECTED delivered). */
static rusk_dtask_id run_start(run *R, rusk_dtask_spec *spec, uint32_t agent, uint64_t now,
                               void *ctx)
{
	(void)now;
	(void)ctx;
	rusk_dtask_id job = 0;
	rusk_faa64(&R->submitted, 1, RUSK_RELAXED);
	int rc = rusk_dispatch_submit(R->d, agent, spec, &job);
	if (rc == RUSK_EINVAL || rc == RUSK_EINFEASIBLE)
		rusk_faa64(&R->refused, 1, RUSK_RELAXED);
	else if (rc != RUSK_OK)
		rusk_faa64(&R->rejected, 1, RUSK_RELAXED);
	return rc == RUSK_OK ? job : 0;
}

/* --sched: the planner stopped a job: ended now if it runs, cancelled while it is queued.
 * A task being placed (complete: RUSK_ENOTRUNNING, cancel: RUSK_ERUNNING) whose PLACED the
 * planner has seen will run as soon as its callback returns: asked again, a bounded number
 * of times. One whose PLACED is still to come (its callback waiting for this cycle's lock,
 * so asking again would wait for ever) ends at that PLACED, as an orphan with run time 0,
 * and so does one still placing after the bound (a trace priority's preemption placed it
 * again, and its PLACED now waits for the lock). */
static void run_stop(run *R, rusk_dtask_id j, bool placed, uint64_t now, void *ctx)
{
	(void)now;
	(void)ctx;
	for (int tries = 0; tries < 10000; tries++) {
		if (rusk_dispatch_complete(R->d, j) != RUSK_ENOTRUNNING ||
		    rusk_dispatch_cancel(R->d, j) != RUSK_ERUNNING || !placed)
			return; /* ended, cancelled, over already, or ended at its PLACED */
		sched_yield();  /* its PLACED callback is returning */
	}
}

/* --sched: a planning cycle every --plan-tick-s until the workload is over and every job
 * is resolved (or the run stops); then no more submissions. */
static void *plan_main(void *arg)
{
	run *R = arg;
	rusk_thread_register(); /* completing a job releases RUs */
	uint64_t step = drv_sched_tick_ns(R), next = R->t0;
	while (sleep_until(R, next)) {
		drv_sched_tick(R, mono_ns(), run_start, run_stop, NULL);
		if (rusk_load32((uint32_t *)&R->gen_done, RUSK_ACQUIRE) && drv_sched_live(R) == 0)
			break;
		next += step;
	}
	rusk_thread_unregister();
	rusk_dispatch_close(R->d);
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
static void *probe_main(void *arg)
{
	return arg;
}

static void start_call_rcu(void)
{
	/* liburcu aborts the process when it cannot create that thread: find out first, with
	 * a thread of the same (default) attributes, and end cleanly as out of memory
	 * instead. glibc keeps the probe's stack in its cache, and liburcu's thread, made
	 * next, reuses it. */
	pthread_t t;
	if (pthread_create(&t, NULL, probe_main, NULL) != 0)
		drv_oom_exit("starting liburcu's call_rcu thread, before any task");
	pthread_join(t, NULL);
	(void)urcu_memb_get_default_call_rcu_data();
}

/* The generators' threads and the planner's (the dispatcher has its own). */
typedef struct threads {
	pthread_t gen[DRV_MAX_GENERATORS], plan;
	gen_arg ga[DRV_MAX_GENERATORS];
	uint32_t gens_on; /* generator threads started */
	bool disp_on, plan_on;
} threads;

/* Starts the dispatcher's threads, then the generators, with SIGINT, SIGTERM and SIGHUP
 * blocked in them (they go to the main thread, whose sleep they cut short). Returns 0, or an
 * error
 * after printing it; what did start is marked to be joined. */
static int start_threads(run *R, threads *th)
{
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	int err = rusk_dispatch_start(R->d) == RUSK_OK ? 0 : EAGAIN;
	th->disp_on = err == 0;
	const char *what = "the dispatcher's threads";
	if (err == 0 && R->sched != NULL) {
		err = pthread_create(&th->plan, NULL, plan_main, R);
		th->plan_on = err == 0;
		what = "the planner thread";
	}
	rusk_store32(&R->gens_live, R->n_gen, RUSK_RELAXED);
	for (uint32_t g = 0; err == 0 && g < R->n_gen; g++) {
		th->ga[g] = (gen_arg){R, &R->gen[g], g};
		err = pthread_create(&th->gen[g], NULL, gen_main, &th->ga[g]);
		th->gens_on += err == 0;
		what = "a generator thread";
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0)
		fprintf(stderr, "rusk run: cannot start %s: %s; stopping the run\n", what,
		        strerror(err));
	return err;
}

/* Stops and joins every thread that started: the generators, then the dispatcher (its
 * agents end what they hold queued, REJECTED, and every task still running). The agents'
 * view statistics and CPU times go to the report. */
static void stop_threads(run *R, threads *th)
{
	rusk_store32((uint32_t *)&R->stop, 1, RUSK_RELEASE);
	for (uint32_t g = 0; g < th->gens_on; g++)
		pthread_join(th->gen[g], NULL);
	if (th->plan_on)
		pthread_join(th->plan, NULL);
	if (R->sched != NULL) /* the stop's ends are not the jobs' own completions */
		drv_sched_close(R);
	if (R->apred != NULL)
		drv_apred_close(R);
	rusk_dispatch_stop(R->d, false);
	for (uint32_t i = 0; R->d != NULL && i < R->cfg.agents; i++) {
		R->ag[i].vs = rusk_dagent_view_stats_(R->ag[i].da);
		R->ag[i].busy_s = rusk_dagent_cpu_s_(R->ag[i].da);
	}
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
	if ((rc = drv_setup(&R, &cc)) != 0) {
		drv_free(&R); /* what the set-up made before it stopped (trace, tables) */
		return rc;
	}
	const run_cfg *cfg = &R.cfg;
	double total_s = cfg->n_phases * cfg->phase_s;
	double drain_s = R.sched != NULL ? drv_sched_drain_s(&R) : 30;
	R.t0 = mono_ns() + 20000000; /* agents' sync schedules start together */
	make_arenas();
	start_call_rcu();
	static threads th; /* 64 generators' worth: not on the stack */
	memset(&th, 0, sizeof th);
	uint32_t n_gen = cfg->generators ? cfg->generators : 1;
	if ((R.gen = calloc(n_gen, sizeof *R.gen)) == NULL)
		drv_oom_exit("the generators");
	for (uint32_t g = 0; g < n_gen; g++, R.n_gen++)
		if ((rc = drv_gen_init(&R, &R.gen[g], g, n_gen)) != 0) {
			drv_free(&R);
			return rc;
		}
	if ((rc = drv_dispatch(&R, "run")) == RUSK_EXIT_FAIL) {
		drv_free(&R); /* an agent refused its parameters (printed) */
		return rc;
	}
	if (rc != 0 || start_threads(&R, &th) != 0) {
		/* Out of memory or threads before any task: the summary and --json say so. */
		rusk_store32(&R.fail, 1, RUSK_RELAXED);
		stop_threads(&R, &th);
		int status = drv_report(&R, false);
		drv_free(&R);
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
		/* gen_done first (acquire; its partner is gen_main's release store after its last
		 * submission): a backlog of 0 then counts every task. Read after the second's
		 * counts, a generator that ended between the two (its last task counted in
		 * neither) passed for drained: the run ended "completed" with that task queued,
		 * once with 7,522 when the second's Redis ledger check waited 4 s on a failover. */
		bool gen_done = rusk_load32((uint32_t *)&R.gen_done, RUSK_ACQUIRE);
		uint64_t backlog = drv_second(&R, tty);
		if (rusk_dispatch_failed_(R.d))
			drv_fail(&R, "in the dispatcher's threads");
		bool drained =
		        gen_done && backlog == 0 && (R.sched == NULL || drv_sched_live(&R) == 0);
		if (drained)
			break;
		if (R.secs > total_s + drain_s) {
			R.drain_capped = true; /* the report says what was left */
			break;
		}
	}
	bool interrupted = drv_stop_signal() != 0;
	if (tty)
		fprintf(stderr, "\n");
	R.elapsed_s = R.secs;
	R.drain_s = drain_s;
	uint64_t now = mono_ns();
	if ((interrupted || R.fail) && now > R.t0 && (now - R.t0) / 1e9 > R.elapsed_s)
		R.elapsed_s = (now - R.t0) / 1e9; /* the part of a second that ran counts */
	stop_threads(&R, &th);
	int status = drv_report(&R, interrupted);
	if (status != RUSK_EXIT_NOMEM && drv_redis_corrupt(&R))
		status = RUSK_EXIT_USAGE; /* the state is damaged: bad input, as rusk agent's */
	else if (status != RUSK_EXIT_NOMEM && drv_redis_gone(&R))
		status = RUSK_EXIT_FAIL; /* the state lost by the cluster: as the start's check */
	drv_free(&R);
	return status;
}
