/* SPDX-License-Identifier: MIT */
/*
 * `rusk sync`: sync policies and strategies side by side (ParSync §5.2 "Synchronization
 * strategies", §6.2-6.3; Tarcil §3.3).
 *
 * For each (policy, strategy) pair, N agent threads (registered with RCU), each a
 * rusk_agent with its own view, keep the cluster at a target load: each step ticks the
 * view (syncing what the policy says is due), places one single-RU task with the
 * strategy (sampling R candidates, committing, resampling after conflicts), and releases
 * its oldest task once its window is full. A lost CAS is a conflict: the view was stale
 * about that RU. The same seed, cluster and load are used for every row, so the rows
 * compare directly.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/hist.h"
#include "base/rng.h"
#include "cli.h"
#include "outfile.h"

typedef struct held {
	uint64_t id;
	rusk_lease l;
} held;

typedef struct agent {
	pthread_t tid;
	rusk_cluster *c;
	rusk_agent_params ap;
	size_t window;
	uint32_t n_pref;     /* preferred machines per task, drawn uniformly */
	bool learn_releases; /* mark its own releases free in its view */
	double duration_s;
	double warm_s; /* > 0: fill the window directly, then run this long untimed */
	pthread_barrier_t *start;
	int err;
	/* results */
	uint64_t placed, attempts, conflicts, gave_up, released, refused, r_sum, pref_placed;
	/* the decisions' work, every call (placed or not): rusk_placement's fields */
	uint64_t samples, examined, parts, sample_ns, commit_ns;
	double q_sum, as_sum;
	uint64_t as_n;
	rusk_view_stats vs;
	double elapsed_s;
	rusk_hist decide; /* time of each successful placement decision */
} agent;

static void *agent_main(void *arg)
{
	agent *a = arg;
	rusk_thread_register();
	const rusk_clock *clk = rusk_cluster_clock(a->c);
	rusk_agent *ag = NULL;
	held *win = calloc(a->window, sizeof *win);
	uint32_t *pref = calloc(a->n_pref ? a->n_pref : 1, sizeof *pref);
	rusk_rng prng;
	rusk_rng_seed(&prng, a->ap.seed, 0x70726566ull + a->ap.index); /* "pref" */
	uint32_t n_machines = rusk_cluster_machines(a->c);
	a->err = rusk_agent_create(a->c, &a->ap, &ag, NULL, 0);
	pthread_barrier_wait(a->start);
	if (a->err == RUSK_OK && (win == NULL || pref == NULL))
		a->err = RUSK_ENOMEM;
	if (a->err != RUSK_OK) {
		if (a->warm_s > 0) { /* the others wait for every agent at both warm-up barriers */
			pthread_barrier_wait(a->start);
			pthread_barrier_wait(a->start);
		}
		goto out;
	}
	rusk_view *v = rusk_agent_view(ag);
	size_t head = 0;
	uint64_t next_id = 0;
	uint32_t n_agents = a->ap.sync.agents;
	rusk_task pending = {0};
	bool has_pending = false;
	rusk_view_stats vs0 = {0}; /* the view's counters when the timed run began */
	if (a->warm_s > 0) {
		/* Warm-up, untimed: the window filled at once by direct commits of random RUs
		 * (its oldest released first, as in steady state), so a slow design does not
		 * spend its timed run below the target load; then the closed loop runs warm_s
		 * uncounted, so every view has synced what the policy syncs. */
		uint32_t n_rus = rusk_cluster_rus(a->c);
		for (size_t i = 0; i < a->window; i++) {
			uint64_t id = 1 + a->ap.index + (next_id++) * n_agents;
			for (int tries = 0; tries < 1000; tries++)
				if (rusk_ru_commit(a->c, id, (uint32_t)rusk_rng_below(&prng, n_rus),
				                   NULL, &win[i].l) == RUSK_OK) {
					win[i].id = id;
					break;
				}
		}
		pthread_barrier_wait(a->start);
	}
	for (int timed = a->warm_s > 0 ? 0 : 1; timed < 2; timed++) {
		if (timed && a->warm_s > 0) {
			/* Every agent warm: the counters start from here. */
			pthread_barrier_wait(a->start);
			a->placed = a->attempts = a->conflicts = a->gave_up = 0;
			a->released = a->refused = a->r_sum = a->pref_placed = 0;
			a->samples = a->examined = a->parts = a->sample_ns = a->commit_ns = 0;
			a->q_sum = a->as_sum = 0;
			a->as_n = 0;
			memset(&a->decide, 0, sizeof a->decide);
			rusk_view_stats_get(v, &vs0);
		}
		if (a->err != RUSK_OK)
			continue;
		a->elapsed_s = 0;
		double t0 = cli_now_s(), deadline = t0 + (timed ? a->duration_s : a->warm_s);
		for (uint64_t step = 0;; step++) {
			uint64_t now = rusk_clock_now(clk);
			if ((step & 255) == 0) {
				if (cli_now_s() >= deadline)
					break;
				double as = rusk_view_avg_staleness_ns(v, now);
				if (isfinite(as)) {
					a->as_sum += as;
					a->as_n++;
				}
			}
			if (rusk_view_tick(v, now) < 0) {
				a->err = RUSK_ENOMEM;
				break;
			}
			held *h = &win[head];
			head = head + 1 == a->window ? 0 : head + 1;
			if (h->id != 0) {
				/* With learn_releases the agent's view knows what it released free
				 * before the next sync. Through the agent: the lock-based baselines
				 * release under their lock. */
				if (rusk_agent_release(ag, h->id, &h->l, 1, NULL) == RUSK_OK) {
					a->released++;
					if (a->learn_releases)
						rusk_view_mark_free(v, h->l.ru);
				} else {
					a->refused++;
				}
				h->id = 0;
			}
			/* A task given back (RUSK_EAGAIN) is retried first, with its id and
			 * submission time: nothing is dropped. */
			if (!has_pending) {
				pending =
				        (rusk_task){.id = 1 + a->ap.index + (next_id++) * n_agents,
				                    .rus = 1,
				                    .gang = true,
				                    .preferred = pref,
				                    .n_preferred = a->n_pref,
				                    .submit_ns = now};
				for (uint32_t k = 0; k < a->n_pref; k++)
					pref[k] = (uint32_t)rusk_rng_below(&prng, n_machines);
				has_pending = true;
			}
			rusk_task t = pending;
			rusk_placement pl;
			int rc = rusk_agent_place(ag, &t, &h->l, &pl);
			a->attempts += pl.attempts;
			a->conflicts += pl.conflicts;
			a->samples += pl.samples;
			a->examined += pl.examined;
			a->parts += pl.partitions;
			a->sample_ns += pl.sample_ns;
			a->commit_ns += pl.commit_ns;
			if (rc == RUSK_OK) {
				has_pending = false;
				h->id = t.id;
				a->placed++;
				a->r_sum += pl.sample_size;
				a->q_sum += pl.quality;
				a->pref_placed += pl.preferred == 1;
				rusk_hist_record(&a->decide, rusk_clock_now(clk) - now);
				rusk_agent_observe_delay(ag, rusk_clock_now(clk) - t.submit_ns);
			} else {
				a->gave_up++; /* nothing free in the view or retries ran out: next
				                 step */
			}
		}
		a->elapsed_s = cli_now_s() - t0;
	}
	for (size_t i = 0; i < a->window; i++)
		if (win[i].id != 0) {
			if (rusk_agent_release(ag, win[i].id, &win[i].l, 1, NULL) == RUSK_OK)
				a->released++;
			else
				a->refused++;
		}
	rusk_view_stats_get(v, &a->vs);
	a->vs.syncs -= vs0.syncs;
	a->vs.publishes -= vs0.publishes;
	a->vs.sync_ns -= vs0.sync_ns;
	a->vs.marks -= vs0.marks;
out:
	rusk_agent_destroy(ag);
	free(win);
	free(pref);
	rusk_thread_unregister();
	return NULL;
}

/* Runs `agents` agent threads with params from tmpl (index set per agent) for duration
 * seconds on c, closed loop, each task preferring n_pref machines, and sums what they did;
 * with learn_releases each agent marks what it releases free in its own view. warm_s > 0:
 * each agent first fills its window by direct commits and runs warm_s seconds uncounted
 * (the counted run then starts at the target load, views synced). Returns 0, or -1 if an
 * agent failed. */
int cli_run_agents(rusk_cluster *c, const rusk_sync_params *sp, const rusk_agent_params *tmpl,
                   uint32_t agents, size_t window, uint32_t n_pref, bool learn_releases,
                   double warm_s, double duration, cli_row *out)
{
	memset(out, 0, sizeof *out);
	agent *ag = calloc(agents, sizeof *ag);
	if (ag == NULL)
		return -1;
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)agents);
	for (uint32_t i = 0; i < agents; i++) {
		ag[i].c = c;
		ag[i].window = window;
		ag[i].n_pref = n_pref;
		ag[i].learn_releases = learn_releases;
		ag[i].duration_s = duration;
		ag[i].warm_s = warm_s;
		ag[i].start = &start;
		ag[i].ap = *tmpl;
		ag[i].ap.sync = *sp;
		ag[i].ap.index = i;
		pthread_create(&ag[i].tid, NULL, agent_main, &ag[i]);
	}
	int rc = 0;
	for (uint32_t i = 0; i < agents; i++) {
		pthread_join(ag[i].tid, NULL);
		if (ag[i].err != RUSK_OK)
			rc = -1;
		out->placed += ag[i].placed;
		out->attempts += ag[i].attempts;
		out->conflicts += ag[i].conflicts;
		out->refused += ag[i].refused;
		out->r_sum += ag[i].r_sum;
		out->pref_placed += ag[i].pref_placed;
		out->q_sum += ag[i].q_sum;
		out->gave_up += ag[i].gave_up;
		out->samples += ag[i].samples;
		out->examined += ag[i].examined;
		out->parts += ag[i].parts;
		out->sample_ns += ag[i].sample_ns;
		out->commit_ns += ag[i].commit_ns;
		out->syncs += ag[i].vs.syncs;
		out->sync_ns += ag[i].vs.sync_ns;
		out->as_sum += ag[i].as_sum;
		out->as_n += ag[i].as_n;
		rusk_hist_merge(&out->decide, &ag[i].decide);
		if (ag[i].elapsed_s > out->elapsed)
			out->elapsed = ag[i].elapsed_s;
	}
	pthread_barrier_destroy(&start);
	free(ag);
	return rc;
}

static void sync_usage(void)
{
	puts("usage: rusk sync [options]\n"
	     "\n"
	     "Runs N agents with local views under each sync policy and strategy in turn (same\n"
	     "cluster, seed and load) and prints conflicts, R, quality, staleness and sync cost.\n"
	     "\n"
	     "  --agents N        agent threads (default 4)\n"
	     "  --sync POLICY     diff, same, state or all (default all)\n"
	     "  --strategy NAME   latency, quality, adaptive, random, central or all\n"
	     "                    (default latency)\n"
	     "  --sample R        candidates per RU; auto (default) sizes R from the guarantee\n"
	     "  --tau-ms T        Adaptive threshold on the delay EMA (default 1000)\n"
	     "  --gap-ms G        sync gap G: every view refreshes every partition once per G\n"
	     "                    (default 500, ParSync's production value)\n"
	     "  --offsets         random per-agent step offsets (Tarcil §5.1)\n"
	     "  --duration-s S    seconds per policy (default 3)\n"
	     "  --load F          share of RUs held in steady state, 0..0.95 (default 0.9)");
	cli_cluster_usage();
}

int rusk_cmd_sync(int argc, char **argv)
{
	cli_cluster cc;
	cli_cluster_init(&cc);
	cli_agents ca = {.agents = 4, .gap_ms = RUSK_SYNC_DEFAULT_GAP_NS / 1000000, .tau_ms = 1000};
	double duration = 3, load = 0.9;
	rusk_sync_policy pols[3] = {RUSK_SYNC_STATE, RUSK_SYNC_SAME, RUSK_SYNC_DIFF};
	rusk_strategy strats[5] = {RUSK_STRATEGY_LATENCY, RUSK_STRATEGY_QUALITY,
	                           RUSK_STRATEGY_ADAPTIVE, RUSK_STRATEGY_RANDOM,
	                           RUSK_STRATEGY_CENTRAL};
	bool all_pols = true, all_strats = false;
	cli_choice_strategy st = {&strats[0], &all_strats};
	cli_choice_sync sy = {&pols[0], &all_pols};
	const cli_opt opts[] = {
	        {CLI_FLAG_OPT("--offsets", &ca.offsets)},
	        {CLI_U32_OPT("--agents", 1, 1024, &ca.agents)},
	        {CLI_U64_OPT("--gap-ms", 1, 3600000, &ca.gap_ms)},
	        {CLI_DOUBLE_OPT("--duration-s", 0.01, 86400, &duration)},
	        {CLI_DOUBLE_OPT("--load", 0, 0.95, &load)},
	        {CLI_CUSTOM_OPT("--strategy", cli_opt_strategy, &st)},
	        {CLI_CUSTOM_OPT("--sample", cli_sample, &ca.sample)},
	        {CLI_U64_OPT("--tau-ms", 1, 3600000, &ca.tau_ms)},
	        {CLI_CUSTOM_OPT("--sync", cli_opt_sync_policy, &sy)},
	};
	int pr = cli_parse("sync", argc, argv, &cc, opts, sizeof opts / sizeof *opts, sync_usage);
	if (pr != 0)
		return pr > 0 ? 0 : RUSK_EXIT_USAGE;
	int n_pols = all_pols ? 3 : 1, n_strats = all_strats ? 5 : 1;
	if (all_pols)
		pols[0] = RUSK_SYNC_STATE; /* an earlier single --sync may have overwritten it */
	if (all_strats)
		strats[0] = RUSK_STRATEGY_LATENCY;
	/* Validate every policy before building anything (P >= N for diff). */
	for (int k = 0; k < n_pols; k++) {
		char err[256];
		ca.sync = pols[k];
		if (cli_sync_check(&ca, cc.params.partitions, err, sizeof err) != RUSK_OK) {
			fprintf(stderr, "rusk: --sync %s with --agents %u --partitions %u: %s\n",
			        rusk_sync_policy_name(pols[k]), ca.agents, cc.params.partitions,
			        err);
			return RUSK_EXIT_USAGE;
		}
	}
	rusk_cluster *c;
	double build_s;
	if (cli_cluster_build(&cc, &c, &build_s) != RUSK_OK)
		return RUSK_EXIT_USAGE;
	uint32_t n_rus = rusk_cluster_rus(c), P = rusk_cluster_partitions(c);
	size_t window = (size_t)(load * n_rus / (double)ca.agents);
	if (window == 0)
		window = 1;
	printf("rusk sync: %u machines, %u RUs, %u partitions; %u agents, G = %" PRIu64
	       " ms%s, load %.0f%%, %.1f s per policy\n\n",
	       rusk_cluster_machines(c), n_rus, P, ca.agents, ca.gap_ms,
	       ca.offsets ? " (random offsets)" : "", load * 100, duration);
	printf("  %-6s %-9s %10s %11s %10s %9s %6s %8s %9s %8s %10s\n", "policy", "strategy",
	       "tasks/s", "attempts", "conflicts", "conflict%", "R", "quality", "AS (ms)", "syncs",
	       "sync core%");
	int status = 0;
	for (int k = 0; k < n_pols; k++)
		for (int j = 0; j < n_strats; j++) {
			ca.sync = pols[k];
			ca.strategy = strats[j];
			ca.seed = cc.params.seed;
			rusk_sync_params sp =
			        cli_sync_params(&ca, P, rusk_clock_now(rusk_cluster_clock(c)));
			rusk_agent_params tmpl;
			cli_agent_params(&ca, &sp, 0, &tmpl);
			cli_row row;
			if (cli_run_agents(c, &sp, &tmpl, ca.agents, window, 0, false, 0, duration,
			                   &row) != 0)
				status = RUSK_EXIT_FAIL;
			uint64_t placed = row.placed, attempts = row.attempts,
			         conflicts = row.conflicts, syncs = row.syncs,
			         sync_ns = row.sync_ns, refused = row.refused, r_sum = row.r_sum,
			         as_n = row.as_n;
			double as_sum = row.as_sum, q_sum = row.q_sum, elapsed = row.elapsed;
			char err[256];
			if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK || refused != 0 ||
			    rusk_cluster_free_rus(c) != n_rus) {
				fprintf(stderr, "rusk sync: invariant broken after %s/%s: %s\n",
				        rusk_sync_policy_name(pols[k]),
				        rusk_strategy_name(strats[j]),
				        refused ? "a release was refused" : err);
				status = RUSK_EXIT_FAIL;
			}
			printf("  %-6s %-9s %10.0f %11" PRIu64 " %10" PRIu64
			       " %8.2f%% %6.1f %8.3f %9.1f"
			       " %8" PRIu64 " %9.2f%%\n",
			       rusk_sync_policy_name(pols[k]), rusk_strategy_name(strats[j]),
			       placed / elapsed, attempts, conflicts,
			       attempts ? 100.0 * conflicts / attempts : 0.0,
			       placed ? (double)r_sum / placed : 0.0, placed ? q_sum / placed : 0.0,
			       as_n ? as_sum / as_n / 1e6 : 0.0, syncs,
			       100.0 * sync_ns / 1e9 / elapsed);
			cli_stdout_flush();
		}
	printf("\n  conflict%%: commits lost because the view was stale about the RU.\n"
	       "  R: candidates sampled per decision (Tarcil §3.3); quality: mean slot score "
	       "placed.\n"
	       "  AS: the agents' average staleness over all partitions (ParSync §5.1).\n"
	       "  sync core%%: CPU time in syncs (publish + copy) as a share of one core.\n");
	rusk_rcu_barrier();
	rusk_cluster_destroy(c);
	return status;
}
