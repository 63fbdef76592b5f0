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
 *   agent      a rusk_agent: ticks its view, takes a batch (retries first, then its ring),
 *              places each task (sample, commit, resample); a task given back (RUSK_EAGAIN)
 *              goes to its retry list with its submission time. A placed task goes to the
 *              completer through the agent's completion ring with its end time.
 *   completer  keeps placed tasks in a min-heap by end time and releases their RUs when
 *              they finish.
 * Accounting: submitted = placed + rejected + queued at the end; the summary checks it.
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
#include "cli.h"
#include "hist.h"
#include "loadgen.h"
#include "rng.h"

#define RING_SIZE  (1u << 16)
#define MAX_PHASES 16
#define MAX_GROUPS 4

#if defined(RUSK_TSAN)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define TSAN_ACQUIRE(p) ((void)0)
#define TSAN_RELEASE(p) ((void)0)
#endif

typedef struct run_task {
	uint64_t id, submit_ns, dur_ns, end_ns;
	rusk_lease *l;     /* rus slots in the run's lease pool */
	uint32_t *pref;    /* preferred machines (--preferred), n_pref of them */
	rusk_profile prof; /* interference it causes (--quality interference) */
	uint16_t rus, placed;
	uint8_t n_pref;
	bool dequeued;
} run_task;

typedef struct run_cfg {
	uint32_t agents, batch, task_rus;
	double rate, phase_s, duration_s, task_ms;
	double phases[MAX_PHASES];
	int n_phases;
	int dist; /* 0 exp, 1 lognormal, 2 fixed */
	const char *json, *csv, *trace;
	int trace_format;
	double time_scale; /* 0: fit the trace's span to the run */
	bool rate_set;
	uint32_t preferred; /* preferred machines per task */
	/* Load groups (ParSync §5.2 Fig. 4): agent i belongs to group i mod n_groups; group g
	 * gets its share of the base rate shaped by its own phases. n_groups 1: --phases. */
	int n_groups;
	double gphases[MAX_GROUPS][MAX_PHASES];
	int gn_phases[MAX_GROUPS];
	rusk_quality_model quality;
	rusk_sync_policy sync;
	uint64_t gap_ms, tau_ms, sample;
	rusk_strategy strategy;
} run_cfg;

#define D_BINS 10

typedef struct agent_stats {
	uint64_t placed, conflicts, attempts, requeued, r_sum, rus_placed, pref_tasks;
	uint64_t q_micro;        /* sum of placed quality x 1e6 (score or Q), relaxed */
	uint64_t d_bins[D_BINS]; /* placed RUs by rank D of their slot score (score model) */
	rusk_hist delay, queue, place, stale, sample, commit, admission;
} agent_stats;

typedef struct run_agent {
	pthread_t tid;
	uint32_t index;
	struct run *run;
	ck_ring_t in, done;
	ck_ring_buffer_t *in_buf, *done_buf;
	agent_stats st;     /* written by this agent only; read relaxed by the sampler */
	rusk_view_stats vs; /* at exit */
	double busy_s;      /* thread CPU time at exit */
	int err;
} run_agent;

typedef struct run {
	run_cfg cfg;
	rusk_cluster *c;
	run_agent *ag;
	run_task *tasks;
	uint64_t n_tasks_cap;
	rusk_lease *pool;
	uint64_t pool_cap;
	rusk_arrival *trace; /* expanded trace, or NULL for the phased generator */
	size_t n_trace;
	uint32_t *pref_pool;
	uint32_t *score_sorted; /* every RU's slot score (milli), ascending: D by binary search */
	uint64_t submitted, rejected, released; /* single writers, relaxed */
	int gen_done, stop;                     /* flags, release/acquire */
	uint64_t t0;
	uint64_t seed;
} run;

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

static inline void stat_add(uint64_t *p, uint64_t d)
{
	rusk_store64(p, rusk_load64(p, RUSK_RELAXED) + d, RUSK_RELAXED); /* single writer */
}

static uint32_t group_size(const run_cfg *cfg, int k)
{
	return (cfg->agents - (uint32_t)k + (uint32_t)cfg->n_groups - 1) / (uint32_t)cfg->n_groups;
}

static void *gen_main(void *arg)
{
	run *R = arg;
	const run_cfg *cfg = &R->cfg;
	/* One arrival process per group, merged in time order. */
	rusk_loadgen g[MAX_GROUPS];
	rusk_arrival next[MAX_GROUPS];
	bool live[MAX_GROUPS];
	uint32_t rr[MAX_GROUPS] = {0};
	for (int k = 0; k < cfg->n_groups; k++) {
		uint32_t members = group_size(cfg, k);
		rusk_loadgen_init(&g[k], cfg->rate * members / cfg->agents, cfg->gphases[k],
		                  cfg->gn_phases[k], cfg->phase_s, cfg->dist, cfg->task_ms / 1000.0,
		                  cfg->task_rus, R->seed + (uint64_t)k * 7919);
		live[k] = members > 0 && rusk_loadgen_next(&g[k], &next[k]) == 0;
	}
	uint64_t id = 0, pool_used = 0;
	size_t ti = 0;
	rusk_rng prng; /* preferences and profiles: their own stream, same seed */
	rusk_rng_seed(&prng, R->seed, 0x70726566);
	while (!interrupted) {
		rusk_arrival x;
		int grp = 0;
		if (R->trace != NULL) {
			if (ti == R->n_trace)
				break;
			x = R->trace[ti++];
		} else {
			grp = -1;
			for (int k = 0; k < cfg->n_groups; k++)
				if (live[k] && (grp < 0 || next[k].t_s < next[grp].t_s))
					grp = k;
			if (grp < 0)
				break;
			x = next[grp];
			live[grp] = rusk_loadgen_next(&g[grp], &next[grp]) == 0;
		}
		uint64_t due = R->t0 + (uint64_t)(x.t_s * 1e9), now = mono_ns();
		if (due > now + 200000)
			sleep_ns(due - now);
		stat_add(&R->submitted, 1);
		if (id >= R->n_tasks_cap || pool_used + x.rus > R->pool_cap) {
			stat_add(&R->rejected, 1);
			continue;
		}
		run_task *tk = &R->tasks[id];
		tk->id = id + 1;
		/* Submitted when it enters the queue: never before now, however the sleep
		 * batched the arrivals; a late generator's lag counts as delay (open loop). */
		now = mono_ns();
		tk->submit_ns = due > now ? now : due;
		tk->dur_ns = (uint64_t)(x.duration_s * 1e9);
		tk->rus = (uint16_t)x.rus;
		tk->l = R->pool + pool_used;
		pool_used += x.rus;
		if (R->trace != NULL && x.n_pref > 0) {
			tk->pref = R->pref_pool + id * RUSK_TRACE_MAX_PREF;
			tk->n_pref = x.n_pref;
			memcpy(tk->pref, x.pref, sizeof *tk->pref * x.n_pref);
		} else if (cfg->preferred > 0) {
			tk->pref = R->pref_pool + id * cfg->preferred;
			tk->n_pref = (uint8_t)cfg->preferred;
			for (uint32_t k = 0; k < cfg->preferred; k++)
				tk->pref[k] = rusk_rng_below(&prng, rusk_cluster_machines(R->c));
		}
		if (cfg->quality == RUSK_QUALITY_INTERFERENCE)
			for (int k = 0; k < RUSK_N_RESOURCES; k++)
				tk->prof.c[k] = (uint8_t)rusk_rng_below(&prng, 100);
		/* round robin over the group's agents: grp, grp + n_groups, ... */
		uint32_t members = group_size(cfg, grp);
		run_agent *a = &R->ag[grp + (rr[grp]++ % members) * (uint32_t)cfg->n_groups];
		id++;
		TSAN_RELEASE(tk); /* pairs with the agent's TSAN_ACQUIRE after dequeue */
		if (!ck_ring_enqueue_spsc(&a->in, a->in_buf, tk))
			stat_add(&R->rejected, 1); /* open loop: a full queue rejects */
	}
	rusk_store32((uint32_t *)&R->gen_done, 1, RUSK_RELEASE);
	return NULL;
}

/* Bin of the rank D = (RUs with a lower score) / (RUs - 1) of an RU's slot score. */
static int d_bin(const run *R, uint32_t ru)
{
	uint32_t n = rusk_cluster_rus(R->c);
	uint32_t v = (uint32_t)lround(rusk_ru_score(R->c, ru) * 1000.0);
	uint32_t lo = 0, hi = n; /* first index with score >= v */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (R->score_sorted[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	double d = n > 1 ? (double)lo / (n - 1) : 0;
	int b = (int)(d * D_BINS);
	return b >= D_BINS ? D_BINS - 1 : b;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static void *agent_main(void *arg)
{
	run_agent *a = arg;
	run *R = a->run;
	const run_cfg *cfg = &R->cfg;
	rusk_thread_register();
	rusk_sync_params sp = {.policy = cfg->sync,
	                       .partitions = rusk_cluster_partitions(R->c),
	                       .agents = cfg->agents,
	                       .gap_ns = cfg->gap_ms * 1000000,
	                       .start_ns = R->t0,
	                       .seed = R->seed};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, a->index);
	ap.strategy = cfg->strategy;
	ap.sample = (uint32_t)cfg->sample;
	ap.tau_ns = cfg->tau_ms * 1000000;
	ap.seed = R->seed;
	ap.quality = cfg->quality;
	rusk_agent *ag = NULL;
	a->err = rusk_agent_create(R->c, &ap, &ag, NULL, 0);
	run_task **retry = calloc(RING_SIZE, sizeof *retry);
	size_t r_head = 0, r_n = 0;
	if (a->err != RUSK_OK || retry == NULL)
		goto out;
	rusk_view *v = rusk_agent_view(ag);
	for (;;) {
		if (rusk_load32((uint32_t *)&R->stop, RUSK_ACQUIRE))
			break;
		uint64_t now = mono_ns();
		rusk_view_tick(v, now);
		uint32_t done = 0;
		size_t retries = r_n;
		for (uint32_t b = 0; b < cfg->batch; b++) {
			run_task *tk = NULL;
			if (retries > 0) {
				tk = retry[r_head];
				r_head = (r_head + 1) % RING_SIZE;
				r_n--;
				retries--;
			} else if (ck_ring_dequeue_spsc(&a->in, a->in_buf, &tk)) {
				TSAN_ACQUIRE(tk);
			} else {
				break;
			}
			done++;
			uint64_t t_deq = mono_ns();
			if (!tk->dequeued) {
				tk->dequeued = true;
				rusk_hist_record(&a->st.queue, t_deq - tk->submit_ns);
			}
			rusk_task t = {.id = tk->id,
			               .rus = tk->rus,
			               .gang = true,
			               .profile = tk->prof,
			               .preferred = tk->pref,
			               .n_preferred = tk->n_pref,
			               .submit_ns = tk->submit_ns};
			rusk_placement pl;
			int rc = rusk_agent_place(ag, &t, tk->l, &pl);
			uint64_t t_done = mono_ns();
			stat_add(&a->st.attempts, pl.attempts);
			stat_add(&a->st.conflicts, pl.conflicts);
			if (rc != RUSK_OK) {
				stat_add(&a->st.requeued, 1);
				retry[(r_head + r_n) % RING_SIZE] =
				        tk; /* never more than RING_SIZE */
				r_n++;
				continue;
			}
			tk->placed = (uint16_t)pl.placed;
			tk->end_ns = t_done + tk->dur_ns;
			rusk_hist_record(&a->st.place, t_done - t_deq);
			rusk_hist_record(&a->st.sample, pl.sample_ns);
			rusk_hist_record(&a->st.commit, pl.commit_ns);
			rusk_hist_record(&a->st.delay, t_done - tk->submit_ns);
			rusk_agent_observe_delay(ag, t_done - tk->submit_ns);
			stat_add(&a->st.placed, 1);
			stat_add(&a->st.rus_placed, pl.placed);
			stat_add(&a->st.r_sum, pl.sample_size);
			stat_add(&a->st.q_micro, (uint64_t)(pl.quality * 1e6));
			stat_add(&a->st.pref_tasks, pl.placed > 0 && pl.preferred == pl.placed);
			rusk_hist_record(&a->st.stale, pl.staleness_ns);
			if (R->score_sorted != NULL)
				for (uint32_t k = 0; k < pl.placed; k++)
					stat_add(&a->st.d_bins[d_bin(R, tk->l[k].ru)], 1);
			TSAN_RELEASE(tk); /* pairs with the completer's TSAN_ACQUIRE */
			for (unsigned spins = 0; !ck_ring_enqueue_spsc(&a->done, a->done_buf, tk);
			     spins++)
				if (spins > 16)
					sched_yield(); /* the completer drains; leases are never
					                  dropped */
		}
		if (done == 0) {
			if (rusk_load32((uint32_t *)&R->gen_done, RUSK_ACQUIRE) && r_n == 0 &&
			    ck_ring_size(&a->in) == 0)
				break;
			sleep_ns(50000);
		}
	}
	rusk_view_stats_get(v, &a->vs);
	struct timespec cpu;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	a->busy_s = (double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9;
out:
	/* Whatever is still queued stays counted as backlog (submitted - placed - rejected). */
	free(retry);
	rusk_agent_destroy(ag);
	rusk_thread_unregister();
	return NULL;
}

/* The completer's min-heap of placed tasks by end time. */
typedef struct heap {
	run_task **a;
	size_t n, cap;
} heap;

static void heap_push(heap *h, run_task *t)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 4096;
		h->a = realloc(h->a, h->cap * sizeof *h->a);
	}
	size_t i = h->n++;
	while (i > 0 && h->a[(i - 1) / 2]->end_ns > t->end_ns) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = t;
}

static run_task *heap_pop(heap *h)
{
	run_task *top = h->a[0], *last = h->a[--h->n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < h->n && h->a[l]->end_ns < last->end_ns)
			m = l;
		if (l + 1 < h->n && h->a[l + 1]->end_ns < (m == i ? last : h->a[m])->end_ns)
			m = l + 1;
		if (m == i)
			break;
		h->a[i] = h->a[m];
		i = m;
	}
	if (h->n > 0)
		h->a[i] = last;
	return top;
}

static void *completer_main(void *arg)
{
	run *R = arg;
	heap h = {0};
	for (;;) {
		bool stopping = rusk_load32((uint32_t *)&R->stop, RUSK_ACQUIRE);
		for (uint32_t i = 0; i < R->cfg.agents; i++) {
			run_task *tk;
			while (ck_ring_dequeue_spsc(&R->ag[i].done, R->ag[i].done_buf, &tk)) {
				TSAN_ACQUIRE(tk);
				heap_push(&h, tk);
			}
		}
		uint64_t now = mono_ns();
		while (h.n > 0 && (stopping || h.a[0]->end_ns <= now)) {
			run_task *tk = heap_pop(&h);
			if (rusk_ru_release_many(R->c, tk->id, tk->l, tk->placed, NULL) == RUSK_OK)
				stat_add(&R->released, 1);
		}
		if (stopping)
			break;
		sleep_ns(200000);
	}
	free(h.a);
	return NULL;
}

static int parse_phases(const char *v, run_cfg *cfg)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", v);
	cfg->n_phases = 0;
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		char *end;
		double x = strtod(tok, &end);
		if (*end != '\0' || !(x >= 0 && x <= 1000) || cfg->n_phases == MAX_PHASES)
			return -1;
		cfg->phases[cfg->n_phases++] = x;
	}
	return cfg->n_phases > 0 ? 0 : -1;
}

static void run_usage(void)
{
	puts("usage: rusk run [options]\n"
	     "\n"
	     "Real-time run: an open-loop generator, N agent threads placing tasks with their\n"
	     "strategy on their local views, a completer releasing RUs when tasks end. Default:\n"
	     "ParSync §6.1's shape: 100,000 machines x 2 RUs (200K slots), 40,000 tasks/s base\n"
	     "rate, five 10 s phases at 50,80,95,80,50%, 5 s tasks.\n"
	     "\n"
	     "  --agents N            agent threads (default 2)\n"
	     "  --sync diff|same|state  sync policy (default diff)\n"
	     "  --gap-ms G            sync gap (default 500)\n"
	     "  --strategy NAME       latency|quality|adaptive|random|central (default latency)\n"
	     "  --tau-ms T            Adaptive threshold (default 1000)\n"
	     "  --sample auto|R       candidates per RU (default auto)\n"
	     "  --rate TASKS_PER_S    base arrival rate (default 40000)\n"
	     "  --phases P1,P2,...    phase loads in % of the base rate (default 50,80,95,80,50)\n"
	     "  --phase-s S           seconds per phase (default 10)\n"
	     "  --duration-s S        one phase at 100% of --rate for S seconds instead\n"
	     "  --groups 'P;P[;..]'   load groups (ParSync §5.2 Fig. 4): agent i is in group\n"
	     "                        i mod G; each group gets its agents' share of --rate\n"
	     "                        shaped by its own phase list\n"
	     "  --task-ms MEAN        mean task duration (default 5000)\n"
	     "  --task-dist exp|lognormal|fixed  duration distribution (default fixed)\n"
	     "  --task-rus M          RUs per task, all-or-nothing (default 1)\n"
	     "  --trace FILE|openb    replay a trace instead: the Alibaba openb pod list (openb:\n"
	     "                        the bundled one) or a CSV "
	     "'arrival_s,duration_s,rus[,priority]'\n"
	     "  --trace-format openb|csv  (default: openb for the bundled list, else csv)\n"
	     "  --time-scale X        divide trace times by X (default: fit the trace to\n"
	     "                        --duration-s or the phases' length); with --rate, shifted\n"
	     "                        replicas are added to reach that rate\n"
	     "  --batch B             tasks an agent takes per round (default 100, ParSync §4.3)\n"
	     "  --quality score|interference  placement quality model (default score: slot\n"
	     "                        scores; interference: Tarcil Q, tasks get random profiles)\n"
	     "  --preferred K         each task prefers K random machines (ParSync §6 quality =\n"
	     "                        share of tasks placed on preferred machines; default 0)\n"
	     "  --json FILE           write the summary as JSON\n"
	     "  --csv FILE            write the per-second series as CSV");
	cli_cluster_usage();
}

static void json_hist(FILE *f, const char *name, const rusk_hist *h, bool last)
{
	fprintf(f,
	        "    \"%s\": {\"mean\": %.1f, \"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, "
	        "\"p999\": %.1f, \"max\": %.1f}%s\n",
	        name, rusk_hist_mean(h) / 1e3, rusk_hist_quantile(h, 0.5) / 1e3,
	        rusk_hist_quantile(h, 0.9) / 1e3, rusk_hist_quantile(h, 0.99) / 1e3,
	        rusk_hist_quantile(h, 0.999) / 1e3, h->max / 1e3, last ? "" : ",");
}

int rusk_cmd_run(int argc, char **argv)
{
	cli_cluster cc;
	cli_cluster_init(&cc);
	cc.params.rus_per_machine = 2; /* 200K slots, as ParSync's evaluation */
	run_cfg cfg = {.agents = 2,
	               .batch = 100,
	               .task_rus = 1,
	               .rate = 40000,
	               .phase_s = 10,
	               .task_ms = 5000,
	               .dist = 2,
	               .sync = RUSK_SYNC_DIFF,
	               .gap_ms = 500,
	               .tau_ms = 1000,
	               .strategy = RUSK_STRATEGY_LATENCY};
	parse_phases("50,80,95,80,50", &cfg);
	bool fmt_set = false;
	char trace_path[4096];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int r = cli_cluster_opt(&cc, argc, argv, &i);
		if (r < 0)
			return RUSK_EXIT_USAGE;
		if (r > 0)
			continue;
		uint64_t x;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			run_usage();
			return 0;
		} else if (strcmp(a, "--agents") == 0) {
			if (cli_u64(a, v, 1, 1024, &x))
				return RUSK_EXIT_USAGE;
			cfg.agents = (uint32_t)x;
		} else if (strcmp(a, "--batch") == 0) {
			if (cli_u64(a, v, 1, RING_SIZE / 2, &x))
				return RUSK_EXIT_USAGE;
			cfg.batch = (uint32_t)x;
		} else if (strcmp(a, "--task-rus") == 0) {
			if (cli_u64(a, v, 1, RUSK_MAX_RUS_PER_MACHINE, &x))
				return RUSK_EXIT_USAGE;
			cfg.task_rus = (uint32_t)x;
		} else if (strcmp(a, "--rate") == 0) {
			if (cli_double(a, v, 0.001, 1e8, &cfg.rate))
				return RUSK_EXIT_USAGE;
			cfg.rate_set = true;
		} else if (strcmp(a, "--trace") == 0) {
			if (v == NULL) {
				fprintf(stderr, "rusk: --trace: needs a file (or openb)\n");
				return RUSK_EXIT_USAGE;
			}
			cfg.trace = v;
		} else if (strcmp(a, "--trace-format") == 0) {
			if (v != NULL && strcmp(v, "openb") == 0)
				cfg.trace_format = RUSK_TRACE_OPENB;
			else if (v != NULL && strcmp(v, "csv") == 0)
				cfg.trace_format = RUSK_TRACE_CSV;
			else {
				fprintf(stderr, "rusk: --trace-format: '%s' is not openb or csv\n",
				        v ? v : "");
				return RUSK_EXIT_USAGE;
			}
			fmt_set = true;
		} else if (strcmp(a, "--preferred") == 0) {
			if (cli_u64(a, v, 0, 64, &x))
				return RUSK_EXIT_USAGE;
			cfg.preferred = (uint32_t)x;
		} else if (strcmp(a, "--quality") == 0) {
			if (v != NULL && strcmp(v, "score") == 0)
				cfg.quality = RUSK_QUALITY_SCORE;
			else if (v != NULL && strcmp(v, "interference") == 0)
				cfg.quality = RUSK_QUALITY_INTERFERENCE;
			else {
				fprintf(stderr,
				        "rusk: --quality: '%s' is not score or interference\n",
				        v ? v : "");
				return RUSK_EXIT_USAGE;
			}
		} else if (strcmp(a, "--time-scale") == 0) {
			if (cli_double(a, v, 1e-9, 1e12, &cfg.time_scale))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--phase-s") == 0) {
			if (cli_double(a, v, 0.001, 86400, &cfg.phase_s))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--duration-s") == 0) {
			if (cli_double(a, v, 0.001, 86400, &cfg.duration_s))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--task-ms") == 0) {
			if (cli_double(a, v, 0.001, 1e9, &cfg.task_ms))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--groups") == 0) {
			char buf[1024];
			snprintf(buf, sizeof buf, "%s", v ? v : "");
			int ng = 0;
			bool ok = v != NULL;
			char *save = NULL;
			for (char *tok = strtok_r(buf, ";", &save); ok && tok;
			     tok = strtok_r(NULL, ";", &save)) {
				run_cfg tmp;
				if (ng == MAX_GROUPS || parse_phases(tok, &tmp) != 0) {
					ok = false;
					break;
				}
				memcpy(cfg.gphases[ng], tmp.phases, sizeof tmp.phases);
				cfg.gn_phases[ng++] = tmp.n_phases;
			}
			if (!ok || ng < 2) {
				fprintf(stderr,
				        "rusk: --groups: '%s' is not 2..%d phase lists separated "
				        "by "
				        "';' (e.g. '67,100,100;67,67,100')\n",
				        v ? v : "", MAX_GROUPS);
				return RUSK_EXIT_USAGE;
			}
			cfg.n_groups = ng;
		} else if (strcmp(a, "--phases") == 0) {
			if (v == NULL || parse_phases(v, &cfg) != 0) {
				fprintf(stderr,
				        "rusk: --phases: '%s' is not a list of 1..%d loads in %% "
				        "(e.g. 50,80,95,80,50)\n",
				        v ? v : "", MAX_PHASES);
				return RUSK_EXIT_USAGE;
			}
		} else if (strcmp(a, "--task-dist") == 0) {
			if (v != NULL && strcmp(v, "exp") == 0)
				cfg.dist = 0;
			else if (v != NULL && strcmp(v, "lognormal") == 0)
				cfg.dist = 1;
			else if (v != NULL && strcmp(v, "fixed") == 0)
				cfg.dist = 2;
			else {
				fprintf(stderr,
				        "rusk: --task-dist: '%s' is not exp, lognormal or fixed\n",
				        v ? v : "");
				return RUSK_EXIT_USAGE;
			}
		} else if (strcmp(a, "--sync") == 0) {
			if (cli_sync_policy(a, v, false, &cfg.sync, NULL))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--strategy") == 0) {
			if (cli_strategy(a, v, false, &cfg.strategy, NULL))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--gap-ms") == 0) {
			if (cli_u64(a, v, 1, 3600000, &cfg.gap_ms))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--tau-ms") == 0) {
			if (cli_u64(a, v, 1, 3600000, &cfg.tau_ms))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--sample") == 0) {
			if (v != NULL && strcmp(v, "auto") == 0)
				cfg.sample = 0;
			else if (cli_u64(a, v, 1, 4096, &cfg.sample))
				return RUSK_EXIT_USAGE;
		} else if (strcmp(a, "--json") == 0 || strcmp(a, "--csv") == 0) {
			if (v == NULL) {
				fprintf(stderr, "rusk: %s: needs a file name\n", a);
				return RUSK_EXIT_USAGE;
			}
			*(a[2] == 'j' ? &cfg.json : &cfg.csv) = v;
		} else {
			fprintf(stderr, "rusk run: unknown option '%s' (try: rusk run --help)\n",
			        a);
			return RUSK_EXIT_USAGE;
		}
		i++;
	}
	if (cfg.duration_s > 0) {
		cfg.n_phases = 1;
		cfg.phases[0] = 100;
		cfg.phase_s = cfg.duration_s;
	}
	if (cfg.n_groups == 0) {
		cfg.n_groups = 1;
		memcpy(cfg.gphases[0], cfg.phases, sizeof cfg.phases);
		cfg.gn_phases[0] = cfg.n_phases;
	} else {
		if ((uint32_t)cfg.n_groups > cfg.agents) {
			fprintf(stderr,
			        "rusk: --groups: %d groups need at least %d agents (--agents %u)\n",
			        cfg.n_groups, cfg.n_groups, cfg.agents);
			return RUSK_EXIT_USAGE;
		}
		if (cfg.trace != NULL) {
			fprintf(stderr, "rusk: --groups and --trace cannot be combined\n");
			return RUSK_EXIT_USAGE;
		}
		/* The run lasts as long as the longest group; phases/JSON report group 0's. */
		cfg.n_phases = 0;
		for (int k = 0; k < cfg.n_groups; k++)
			if (cfg.gn_phases[k] > cfg.n_phases)
				cfg.n_phases = cfg.gn_phases[k];
		memcpy(cfg.phases, cfg.gphases[0], sizeof cfg.phases);
	}
	char err[256];
	rusk_sync_params check = {.policy = cfg.sync,
	                          .partitions = cc.params.partitions,
	                          .agents = cfg.agents,
	                          .gap_ns = cfg.gap_ms * 1000000};
	if (rusk_sync_check(&check, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk: --sync %s --agents %u --partitions %u: %s\n",
		        rusk_sync_policy_name(cfg.sync), cfg.agents, cc.params.partitions, err);
		return RUSK_EXIT_USAGE;
	}
	run R = {.cfg = cfg, .seed = cc.params.seed};
	char trace_note[4800] = "";
	if (cfg.trace != NULL) {
		if (strcmp(cfg.trace, "openb") == 0) {
			const char *dir = getenv("RUSK_TRACE_DIR");
			snprintf(trace_path, sizeof trace_path,
			         "%s/openb/openb_pod_list_default.csv",
			         dir != NULL ? dir : RUSK_DATA_DIR);
			if (!fmt_set)
				cfg.trace_format = RUSK_TRACE_OPENB;
		} else {
			snprintf(trace_path, sizeof trace_path, "%s", cfg.trace);
			if (!fmt_set)
				cfg.trace_format = RUSK_TRACE_CSV;
		}
		rusk_arrival *raw;
		size_t n_raw;
		int trc = rusk_trace_load(trace_path, cfg.trace_format, &raw, &n_raw, err,
		                          sizeof err);
		if (trc != RUSK_OK) {
			fprintf(stderr, "rusk: --trace: %s\n", err);
			return RUSK_EXIT_USAGE;
		}
		double span = raw[n_raw - 1].t_s > 0 ? raw[n_raw - 1].t_s : 1.0;
		double run_s = cfg.n_phases * cfg.phase_s;
		double scale = cfg.time_scale > 0 ? cfg.time_scale : span / run_s;
		double natural = n_raw / (span / scale);
		uint32_t replicas = 1;
		if (cfg.rate_set && cfg.rate > natural)
			replicas = (uint32_t)ceil(cfg.rate / natural);
		R.trace = rusk_trace_expand(raw, n_raw, scale, replicas, &R.n_trace);
		free(raw);
		if (R.trace == NULL) {
			fprintf(stderr, "rusk: --trace: out of memory expanding %zu tasks\n",
			        n_raw);
			return RUSK_EXIT_FAIL;
		}
		snprintf(trace_note, sizeof trace_note,
		         "trace %s: %zu tasks over %.3g s; time scale 1/%.4g -> %.1f s; %u shifted "
		         "replica%s -> %zu tasks, %.0f tasks/s",
		         trace_path, n_raw, span, scale, span / scale, replicas,
		         replicas > 1 ? "s" : "", R.n_trace, R.n_trace / (span / scale));
		cfg.n_phases = 1;
		cfg.phases[0] = 100;
		cfg.phase_s = span / scale;
		R.cfg = cfg;
	}
	FILE *csv = NULL;
	if (cfg.csv && (csv = fopen(cfg.csv, "w")) == NULL) {
		fprintf(stderr, "rusk: --csv: %s: %s\n", cfg.csv, strerror(errno));
		return RUSK_EXIT_USAGE;
	}
	double build_s;
	if (cli_cluster_build(&cc, &R.c, &build_s) != RUSK_OK)
		return RUSK_EXIT_USAGE;
	double expected = 0;
	for (int k = 0; k < cfg.n_groups; k++)
		for (int j = 0; j < cfg.gn_phases[k]; j++)
			expected += cfg.rate * group_size(&cfg, k) / cfg.agents *
			            cfg.gphases[k][j] / 100.0 * cfg.phase_s;
	R.n_tasks_cap = (uint64_t)(expected * 1.1 + 1000);
	R.pool_cap = R.n_tasks_cap * cfg.task_rus;
	if (R.trace != NULL) {
		R.n_tasks_cap = R.n_trace;
		R.pool_cap = 0;
		for (size_t i = 0; i < R.n_trace; i++)
			R.pool_cap += R.trace[i].rus;
	}
	R.tasks = calloc(R.n_tasks_cap, sizeof *R.tasks);
	R.pool = calloc(R.pool_cap ? R.pool_cap : 1, sizeof *R.pool);
	R.ag = calloc(cfg.agents, sizeof *R.ag);
	uint32_t pref_per_task = R.trace != NULL ? RUSK_TRACE_MAX_PREF : cfg.preferred;
	if (pref_per_task > 0)
		R.pref_pool = calloc(R.n_tasks_cap * pref_per_task, sizeof *R.pref_pool);
	if (cfg.quality == RUSK_QUALITY_SCORE) {
		R.score_sorted = malloc(sizeof *R.score_sorted * rusk_cluster_rus(R.c));
		if (R.score_sorted != NULL) {
			for (uint32_t r = 0; r < rusk_cluster_rus(R.c); r++)
				R.score_sorted[r] =
				        (uint32_t)lround(rusk_ru_score(R.c, r) * 1000.0);
			qsort(R.score_sorted, rusk_cluster_rus(R.c), sizeof *R.score_sorted,
			      cmp_u32);
		}
	}
	if (R.tasks == NULL || R.ag == NULL || R.pool == NULL ||
	    (pref_per_task > 0 && R.pref_pool == NULL) ||
	    (cfg.quality == RUSK_QUALITY_SCORE && R.score_sorted == NULL)) {
		fprintf(stderr, "rusk run: out of memory for %" PRIu64 " tasks\n", R.n_tasks_cap);
		return RUSK_EXIT_FAIL;
	}
	uint32_t n_rus = rusk_cluster_rus(R.c);
	double total_s = cfg.n_phases * cfg.phase_s;
	printf("rusk run: %u machines, %u RUs, %u partitions; %u agents (%s sync, G = %" PRIu64
	       " ms, %s); base rate %.0f tasks/s,",
	       rusk_cluster_machines(R.c), n_rus, rusk_cluster_partitions(R.c), cfg.agents,
	       rusk_sync_policy_name(cfg.sync), cfg.gap_ms, rusk_strategy_name(cfg.strategy),
	       cfg.rate);
	printf(" phases");
	for (int k = 0; k < cfg.n_phases; k++)
		printf("%s%.0f", k ? "," : " ", cfg.phases[k]);
	if (R.trace != NULL)
		printf("%% x %.1f s; %s\n\n", cfg.phase_s, trace_note);
	else
		printf("%% x %.1f s; tasks %s %.0f ms x %u RU\n\n", cfg.phase_s,
		       cfg.dist == 0   ? "exp"
		       : cfg.dist == 1 ? "lognormal"
		                       : "fixed",
		       cfg.task_ms, cfg.task_rus);
	fflush(stdout);

	struct sigaction sa = {.sa_handler = on_sigint};
	sigaction(SIGINT, &sa, NULL);
	if (csv)
		fprintf(csv,
		        "second,phase,submitted,placed,throughput,rejected,backlog,utilization,"
		        "conflicts,delay_p10_us,delay_p50_us,delay_p90_us,delay_p99_us,"
		        "quality_mean,agent_median_p10_us,agent_median_p50_us,"
		        "agent_median_p90_us\n");
	R.t0 = mono_ns() + 20000000; /* agents' sync schedules start together */
	for (uint32_t i = 0; i < cfg.agents; i++) {
		run_agent *a = &R.ag[i];
		a->index = i;
		a->run = &R;
		a->in_buf = calloc(RING_SIZE, sizeof *a->in_buf);
		a->done_buf = calloc(RING_SIZE, sizeof *a->done_buf);
		ck_ring_init(&a->in, RING_SIZE);
		ck_ring_init(&a->done, RING_SIZE);
		pthread_create(&a->tid, NULL, agent_main, a);
	}
	pthread_t gen, comp;
	pthread_create(&comp, NULL, completer_main, &R);
	pthread_create(&gen, NULL, gen_main, &R);

	/* Per-second sampling until the generator is done and agents drained. */
	rusk_hist prev, cur, d;
	memset(&prev, 0, sizeof prev);
	uint64_t prev_placed = 0, prev_conf = 0, max_tput = 0, prev_q = 0;
	double util_sum = 0;
	int secs = 0;
	bool tty = isatty(2);
	rusk_hist *per_agent = calloc(cfg.agents, sizeof *per_agent);
	rusk_hist *snap = calloc(2, sizeof *snap), *one = snap + 1;
	double *medians = calloc(cfg.agents, sizeof *medians);
	if (snap == NULL || medians == NULL) {
		free(per_agent);
		per_agent = NULL; /* the spread columns stay 0 */
	}
	for (;;) {
		sleep_ns(1000000000ull);
		secs++;
		memset(&cur, 0, sizeof cur);
		uint64_t placed = 0, conf = 0;
		for (uint32_t i = 0; i < cfg.agents; i++) {
			rusk_hist_merge(&cur, &R.ag[i].st.delay);
			placed += rusk_load64(&R.ag[i].st.placed, RUSK_RELAXED);
			conf += rusk_load64(&R.ag[i].st.conflicts, RUSK_RELAXED);
		}
		rusk_hist_diff(&d, &cur, &prev);
		/* Each agent's median delay this second; their 10/50/90th percentiles across
		 * agents show how evenly agents fare (ParSync Figs. 6-8 bands). */
		uint32_t n_med = 0;
		for (uint32_t i = 0; per_agent != NULL && i < cfg.agents; i++) {
			memset(snap, 0, sizeof *snap);
			rusk_hist_merge(snap, &R.ag[i].st.delay);
			rusk_hist_diff(one, snap, &per_agent[i]);
			per_agent[i] = *snap;
			if (one->n > 0)
				medians[n_med++] = (double)rusk_hist_quantile(one, 0.5);
		}
		qsort(medians, n_med, sizeof *medians, cmp_double);
		prev = cur;
		uint64_t sub = rusk_load64(&R.submitted, RUSK_RELAXED);
		uint64_t rej = rusk_load64(&R.rejected, RUSK_RELAXED);
		double util = 1.0 - (double)rusk_cluster_free_rus(R.c) / n_rus;
		util_sum += util;
		uint64_t tput = placed - prev_placed;
		if (tput > max_tput)
			max_tput = tput;
		uint64_t q_micro = 0;
		for (uint32_t i = 0; i < cfg.agents; i++)
			q_micro += rusk_load64(&R.ag[i].st.q_micro, RUSK_RELAXED);
		if (csv) {
			int phase = (int)((secs - 0.5) / cfg.phase_s);
			fprintf(csv,
			        "%d,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			        ",%.4f,%" PRIu64 ",%.1f,%.1f,%.1f,%.1f,%.4f,%.1f,%.1f,%.1f\n",
			        secs, phase < cfg.n_phases ? phase : cfg.n_phases, sub, placed,
			        tput, rej, sub - placed - rej, util, conf - prev_conf,
			        rusk_hist_quantile(&d, 0.1) / 1e3,
			        rusk_hist_quantile(&d, 0.5) / 1e3,
			        rusk_hist_quantile(&d, 0.9) / 1e3,
			        rusk_hist_quantile(&d, 0.99) / 1e3,
			        tput ? (q_micro - prev_q) / 1e6 / tput : 0.0,
			        n_med ? medians[(size_t)(0.1 * (n_med - 1))] / 1e3 : 0.0,
			        n_med ? medians[(size_t)(0.5 * (n_med - 1))] / 1e3 : 0.0,
			        n_med ? medians[(size_t)(0.9 * (n_med - 1))] / 1e3 : 0.0);
		}
		prev_q = q_micro;
		if (tty)
			fprintf(stderr,
			        "\r  %3d s  %8" PRIu64 " tasks/s  util %5.1f%%  backlog %" PRIu64
			        "   ",
			        secs, tput, util * 100, sub - placed - rej);
		prev_placed = placed;
		prev_conf = conf;
		bool drained =
		        rusk_load32((uint32_t *)&R.gen_done, RUSK_ACQUIRE) && sub == placed + rej;
		if (drained || interrupted || secs > total_s + 30)
			break;
	}
	if (tty)
		fprintf(stderr, "\n");
	free(per_agent);
	free(snap);
	free(medians);
	rusk_store32((uint32_t *)&R.stop, 1, RUSK_RELEASE);
	pthread_join(gen, NULL);
	agent_stats tot;
	memset(&tot, 0, sizeof tot);
	int status = 0;
	for (uint32_t i = 0; i < cfg.agents; i++) {
		pthread_join(R.ag[i].tid, NULL);
		agent_stats *s = &R.ag[i].st;
		if (R.ag[i].err != RUSK_OK)
			status = RUSK_EXIT_FAIL;
		tot.placed += s->placed;
		tot.conflicts += s->conflicts;
		tot.attempts += s->attempts;
		tot.requeued += s->requeued;
		tot.r_sum += s->r_sum;
		tot.rus_placed += s->rus_placed;
		tot.q_micro += s->q_micro;
		tot.pref_tasks += s->pref_tasks;
		for (int k = 0; k < D_BINS; k++)
			tot.d_bins[k] += s->d_bins[k];
		rusk_hist_merge(&tot.stale, &s->stale);
		rusk_hist_merge(&tot.sample, &s->sample);
		rusk_hist_merge(&tot.commit, &s->commit);
		rusk_hist_merge(&tot.delay, &s->delay);
		rusk_hist_merge(&tot.queue, &s->queue);
		rusk_hist_merge(&tot.place, &s->place);
	}
	pthread_join(comp, NULL);
	uint64_t sub = R.submitted, rej = R.rejected, backlog = sub - tot.placed - rej;
	bool adds_up = sub == tot.placed + rej + backlog && R.released == tot.placed;
	int vrc = rusk_cluster_verify(R.c, err, sizeof err);
	bool all_free = rusk_cluster_free_rus(R.c) == n_rus;
	double elapsed = secs;

	printf("  %-28s %" PRIu64 " submitted, %" PRIu64 " placed, %" PRIu64 " rejected, %" PRIu64
	       " queued at the end%s\n",
	       "tasks", sub, tot.placed, rej, backlog, interrupted ? " (interrupted)" : "");
	printf("  %-28s %.0f tasks/s mean, %" PRIu64 " max (1 s windows)\n", "throughput",
	       tot.placed / elapsed, max_tput);
	printf("  %-28s mean %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
	       "scheduling delay (us)", rusk_hist_mean(&tot.delay) / 1e3,
	       rusk_hist_quantile(&tot.delay, 0.5) / 1e3, rusk_hist_quantile(&tot.delay, 0.9) / 1e3,
	       rusk_hist_quantile(&tot.delay, 0.99) / 1e3,
	       rusk_hist_quantile(&tot.delay, 0.999) / 1e3, tot.delay.max / 1e3);
	printf("  %-28s queue p50 %.1f p99 %.1f; sample p50 %.2f p99 %.2f; commit p50 %.2f "
	       "p99 %.2f\n",
	       "  of which (us)", rusk_hist_quantile(&tot.queue, 0.5) / 1e3,
	       rusk_hist_quantile(&tot.queue, 0.99) / 1e3,
	       rusk_hist_quantile(&tot.sample, 0.5) / 1e3,
	       rusk_hist_quantile(&tot.sample, 0.99) / 1e3,
	       rusk_hist_quantile(&tot.commit, 0.5) / 1e3,
	       rusk_hist_quantile(&tot.commit, 0.99) / 1e3);
	printf("  %-28s %" PRIu64 " (%.3f per task, %.2f%% of %" PRIu64 " commits); %" PRIu64
	       " re-queued\n",
	       "conflicts", tot.conflicts, tot.placed ? (double)tot.conflicts / tot.placed : 0.0,
	       tot.attempts ? 100.0 * tot.conflicts / tot.attempts : 0.0, tot.attempts,
	       tot.requeued);
	double q_mean = tot.placed ? tot.q_micro / 1e6 / tot.placed : 0.0;
	double pref_frac = tot.placed ? (double)tot.pref_tasks / tot.placed : 0.0;
	uint64_t d_total = 0;
	for (int k = 0; k < D_BINS; k++)
		d_total += tot.d_bins[k];
	printf("  %-28s R %.1f per decision; staleness mean %.1f ms, p99 %.1f ms\n", "sampling",
	       tot.placed ? (double)tot.r_sum / tot.placed : 0.0, rusk_hist_mean(&tot.stale) / 1e6,
	       rusk_hist_quantile(&tot.stale, 0.99) / 1e6);
	printf("  %-28s %s %.3f", "quality",
	       cfg.quality == RUSK_QUALITY_SCORE ? "mean slot score" : "mean Tarcil Q", q_mean);
	if (cfg.preferred > 0)
		printf(", %.1f%% of tasks on preferred machines", 100.0 * pref_frac);
	if (d_total > 0) {
		uint64_t top = tot.d_bins[D_BINS - 1] + tot.d_bins[D_BINS - 2];
		printf(", %.1f%% of RUs in the top 20%% (D >= 0.8)", 100.0 * top / d_total);
	}
	printf("\n");
	printf("  %-28s %.1f%% mean over the run\n", "utilization", 100.0 * util_sum / secs);
	uint64_t syncs = 0, sync_ns = 0;
	double busy = 0;
	for (uint32_t i = 0; i < cfg.agents; i++) {
		syncs += R.ag[i].vs.syncs;
		sync_ns += R.ag[i].vs.sync_ns;
		busy += R.ag[i].busy_s;
	}
	printf("  %-28s %" PRIu64 " partition syncs, %.3f s (%.1f%% of the agents' CPU time)\n",
	       "view syncs", syncs, sync_ns / 1e9, busy > 0 ? 100.0 * sync_ns / 1e9 / busy : 0.0);
	rusk_hist *gh = calloc(1, sizeof *gh);
	for (int k = 0; cfg.n_groups > 1 && gh != NULL && k < cfg.n_groups; k++) {
		memset(gh, 0, sizeof *gh);
		uint64_t gq = 0, gp = 0;
		for (uint32_t i = (uint32_t)k; i < cfg.agents; i += (uint32_t)cfg.n_groups) {
			rusk_hist_merge(gh, &R.ag[i].st.delay);
			gq += R.ag[i].st.q_micro;
			gp += R.ag[i].st.placed;
		}
		char label[32];
		snprintf(label, sizeof label, "group %c (%u agents)", 'A' + k, group_size(&cfg, k));
		printf("  %-28s %" PRIu64 " placed, delay p50 %.1f us, p99 %.1f us, quality %.3f\n",
		       label, gp, rusk_hist_quantile(gh, 0.5) / 1e3,
		       rusk_hist_quantile(gh, 0.99) / 1e3, gp ? gq / 1e6 / gp : 0.0);
	}
	free(gh);
	printf("  %-28s %s; counts add up: %s; all RUs free after the run: %s\n", "checks",
	       vrc == RUSK_OK ? "counters consistent" : err, adds_up ? "yes" : "NO",
	       all_free ? "yes" : "NO");
	if (vrc != RUSK_OK || !adds_up || !all_free)
		status = RUSK_EXIT_FAIL;

	if (cfg.json) {
		FILE *f = fopen(cfg.json, "w");
		char qbuf[32];
		snprintf(qbuf, sizeof qbuf, "%.4f", q_mean);
		if (f == NULL) {
			fprintf(stderr, "rusk: --json: %s: %s\n", cfg.json, strerror(errno));
			status = RUSK_EXIT_USAGE;
		} else {
			fprintf(f,
			        "{\n  \"config\": {\"machines\": %u, \"rus\": %u, \"partitions\": "
			        "%u, "
			        "\"agents\": %u, \"sync\": \"%s\", \"gap_ms\": %" PRIu64
			        ", \"strategy\": \"%s\", \"sample\": %" PRIu64 ", \"rate\": %.1f, "
			        "\"phase_s\": %.3f, \"phases\": [",
			        rusk_cluster_machines(R.c), n_rus, rusk_cluster_partitions(R.c),
			        cfg.agents, rusk_sync_policy_name(cfg.sync), cfg.gap_ms,
			        rusk_strategy_name(cfg.strategy), cfg.sample, cfg.rate,
			        cfg.phase_s);
			for (int k = 0; k < cfg.n_phases; k++)
				fprintf(f, "%s%.1f", k ? ", " : "", cfg.phases[k]);
			fprintf(f,
			        "], \"task_ms\": %.1f, \"task_rus\": %u, \"seed\": %" PRIu64 "},\n",
			        cfg.task_ms, cfg.task_rus, R.seed);
			fprintf(f,
			        "  \"tasks\": {\"submitted\": %" PRIu64 ", \"committed\": %" PRIu64
			        ", \"rejected\": %" PRIu64 ", \"backlog_end\": %" PRIu64 "},\n",
			        sub, tot.placed, rej, backlog);
			fprintf(f,
			        "  \"throughput_per_s\": {\"mean\": %.1f, \"max\": %" PRIu64 "},\n",
			        tot.placed / elapsed, max_tput);
			fprintf(f,
			        "  \"delay_us\": {\"mean\": %.1f, \"p50\": %.1f, \"p90\": %.1f, "
			        "\"p99\": %.1f, \"p999\": %.1f, \"max\": %.1f},\n",
			        rusk_hist_mean(&tot.delay) / 1e3,
			        rusk_hist_quantile(&tot.delay, 0.5) / 1e3,
			        rusk_hist_quantile(&tot.delay, 0.9) / 1e3,
			        rusk_hist_quantile(&tot.delay, 0.99) / 1e3,
			        rusk_hist_quantile(&tot.delay, 0.999) / 1e3, tot.delay.max / 1e3);
			fprintf(f,
			        "  \"conflicts\": {\"total\": %" PRIu64 ", \"rate\": %.6f, "
			        "\"per_task_mean\": %.6f},\n",
			        tot.conflicts,
			        tot.attempts ? (double)tot.conflicts / tot.attempts : 0.0,
			        tot.placed ? (double)tot.conflicts / tot.placed : 0.0);
			fprintf(f,
			        "  \"quality\": {\"model\": \"%s\", \"score_mean\": %s, "
			        "\"q_mean\": %s, "
			        "\"preferred_fraction\": %.6f, \"sample_size_mean\": %.2f, "
			        "\"d_cdf\": ",
			        cfg.quality == RUSK_QUALITY_SCORE ? "score" : "interference",
			        cfg.quality == RUSK_QUALITY_SCORE ? qbuf : "null",
			        cfg.quality == RUSK_QUALITY_SCORE ? "null" : qbuf, pref_frac,
			        tot.placed ? (double)tot.r_sum / tot.placed : 0.0);
			if (d_total == 0) {
				fprintf(f, "null},\n"); /* D needs a static ranking: score model
				                           only */
			} else {
				uint64_t cum = 0;
				fprintf(f, "[0");
				for (int k = 0; k < D_BINS; k++) {
					cum += tot.d_bins[k];
					fprintf(f, ", %.6f", (double)cum / d_total);
				}
				fprintf(f, "]},\n");
			}
			fprintf(f, "  \"staleness_ms\": {\"mean\": %.3f, \"p99\": %.3f},\n",
			        rusk_hist_mean(&tot.stale) / 1e6,
			        rusk_hist_quantile(&tot.stale, 0.99) / 1e6);
			fprintf(f, "  \"utilization\": {\"mean\": %.4f},\n", util_sum / secs);
			fprintf(f,
			        "  \"sync\": {\"partitions_synced\": %" PRIu64
			        ", \"seconds\": %.4f, "
			        "\"share_of_agent_cpu\": %.5f},\n",
			        syncs, sync_ns / 1e9, busy > 0 ? sync_ns / 1e9 / busy : 0.0);
			fprintf(f, "  \"phases_us\": {\n");
			json_hist(f, "queue", &tot.queue, false);
			/* rusk has no admission control yet (Tarcil §4): tasks never wait there */
			json_hist(f, "admission", &tot.admission, false);
			json_hist(f, "sample", &tot.sample, false);
			json_hist(f, "commit", &tot.commit, false);
			json_hist(f, "sample_commit", &tot.place, true);
			fprintf(f, "  },\n  \"agents\": [");
			for (uint32_t i = 0; i < cfg.agents; i++)
				fprintf(f,
				        "%s{\"placed\": %" PRIu64 ", \"conflicts\": %" PRIu64 "}",
				        i ? ", " : "", R.ag[i].st.placed, R.ag[i].st.conflicts);
			fprintf(f,
			        "],\n  \"checks\": {\"counts_add_up\": %s, "
			        "\"counters_consistent\": %s}\n}\n",
			        adds_up ? "true" : "false", vrc == RUSK_OK ? "true" : "false");
			fclose(f);
		}
	}
	if (csv)
		fclose(csv);
	for (uint32_t i = 0; i < cfg.agents; i++) {
		free(R.ag[i].in_buf);
		free(R.ag[i].done_buf);
	}
	free(R.ag);
	free(R.tasks);
	free(R.pool);
	free(R.trace);
	free(R.pref_pool);
	free(R.score_sorted);
	rusk_rcu_barrier();
	rusk_cluster_destroy(R.c);
	return status;
}
