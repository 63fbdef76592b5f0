/* SPDX-License-Identifier: MIT */
/*
 * `rusk bench`: one workload, one process, rusk against the designs it replaces.
 *
 * Every row runs N agent threads closed loop (as fast as they can place) on the same
 * cluster, seed and target load (default 80%), so tasks/s is the highest sustained commit
 * rate of that design on this machine. Rows: rusk Latency-first / Quality-first / Adaptive
 * on DiffSync; Latency-first on StateSync and SameSync; `random` (Sparrow-style, R = 2);
 * `central` (one lock, full scan, Quasar-style greedy); `global-lock` (rusk's sampling
 * with every commit and release under one mutex, as a lock-based scheduler guards its
 * state; central's releases take its lock too). Ratios are against `central` in the same run. Then
 * every design open loop at one common rate (delay), every design at one common load with
 * tasks that prefer machines (quality, ParSync §6's measure), and thread scaling over 1..N
 * agents (or --sweep's counts) for rusk, StateSync, random and global-lock, with where each
 * decision's time goes (choosing, committing, draws, partitions, retries, syncs): the
 * measured reason when designs scale apart. Writes JSON and, with gnuplot, a PNG.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/rng.h"
#include "cli.h"
#include "outfile.h"

typedef struct bench_row {
	const char *name;
	rusk_sync_policy sync;
	rusk_strategy strategy;
	bool global_lock;
} bench_row;

static const bench_row rows[] = {
        {"rusk latency (diff)", RUSK_SYNC_DIFF, RUSK_STRATEGY_LATENCY, false},
        {"rusk quality (diff)", RUSK_SYNC_DIFF, RUSK_STRATEGY_QUALITY, false},
        {"rusk adaptive (diff)", RUSK_SYNC_DIFF, RUSK_STRATEGY_ADAPTIVE, false},
        {"statesync (latency)", RUSK_SYNC_STATE, RUSK_STRATEGY_LATENCY, false},
        {"samesync (latency)", RUSK_SYNC_SAME, RUSK_STRATEGY_LATENCY, false},
        {"random (sparrow)", RUSK_SYNC_DIFF, RUSK_STRATEGY_RANDOM, false},
        {"central (one lock)", RUSK_SYNC_DIFF, RUSK_STRATEGY_CENTRAL, false},
        {"global-lock", RUSK_SYNC_DIFF, RUSK_STRATEGY_LATENCY, true},
};
#define N_ROWS (sizeof rows / sizeof rows[0])

typedef struct result {
	double tput, p50_us, p99_us, conflict_pct, quality, pref_pct;
	/* Where a decision's time goes, per call of rusk_agent_place (calls that gave up
	 * included): time choosing and committing (ns), candidates drawn, partitions looked
	 * at, commit attempts; calls that gave up (%), and the agents' time in view syncs (%
	 * of their run). */
	double sample_ns, commit_ns, samples, parts, attempts, gave_up_pct, sync_pct;
} result;

/* The designs of the scaling sweep (indices into rows[]): rusk's default, the two
 * designs the issue compares it with, and the lock. */
static const size_t sweep_rows[] = {0, 3, 5, 7};
#define N_SWEEP   (sizeof sweep_rows / sizeof sweep_rows[0])
#define MAX_SWEEP 64

/* One row's load: each agent holds at most `window` tasks (releasing its oldest), each
 * task prefers n_pref machines; `held` RUs belong to background tenants throughout.
 * warm_s > 0: the windows are filled directly and the row runs warm_s uncounted first
 * (cli_run_agents), so the counted second is at the target load with views synced. */
typedef struct row_load {
	size_t window;
	uint32_t n_pref;
	uint32_t held;
	double warm_s;
} row_load;

static int run_row(rusk_cluster *c, const bench_row *r, uint32_t agents, const row_load *ld,
                   double duration, uint64_t seed, result *out)
{
	const cli_agents ca = {.sync = r->sync,
	                       .agents = agents,
	                       .gap_ms = RUSK_SYNC_DEFAULT_GAP_NS / 1000000,
	                       .strategy = r->strategy,
	                       .global_lock = r->global_lock,
	                       .seed = seed};
	rusk_sync_params sp = cli_sync_params(&ca, rusk_cluster_partitions(c),
	                                      rusk_clock_now(rusk_cluster_clock(c)));
	rusk_agent_params tmpl;
	cli_agent_params(&ca, &sp, 0, &tmpl);
	cli_row *row = calloc(1, sizeof *row);
	if (row == NULL)
		return -1;
	/* Agents learn their own releases (mark them free in their views): an agent that
	 * releases a task knows it did. Without that, an agent recycling its window between
	 * syncs runs out of believed-free RUs and gives up until the next sync, so tasks/s
	 * would measure the sync cadence, not the design (rusk Latency-first gave up 2.5M
	 * times in a 2 s row that way). */
	int rc = cli_run_agents(c, &sp, &tmpl, agents, ld->window ? ld->window : 1, ld->n_pref,
	                        true, ld->warm_s, duration, row);
	char err[256];
	if (rc == 0 && (row->refused != 0 || rusk_cluster_verify(c, err, sizeof err) != RUSK_OK ||
	                rusk_cluster_free_rus(c) != rusk_cluster_rus(c) - ld->held))
		rc = -1;
	out->tput = row->elapsed > 0 ? row->placed / row->elapsed : 0;
	out->p50_us = rusk_hist_quantile(&row->decide, 0.5) / 1e3;
	out->p99_us = rusk_hist_quantile(&row->decide, 0.99) / 1e3;
	out->conflict_pct = row->attempts ? 100.0 * row->conflicts / row->attempts : 0;
	out->quality = row->placed ? row->q_sum / row->placed : 0;
	out->pref_pct = row->placed ? 100.0 * row->pref_placed / row->placed : 0;
	double calls = (double)(row->placed + row->gave_up);
	if (calls > 0) {
		out->sample_ns = row->sample_ns / calls;
		out->commit_ns = row->commit_ns / calls;
		out->samples = row->samples / calls;
		out->parts = row->parts / calls;
		out->attempts = row->attempts / calls;
		out->gave_up_pct = 100.0 * row->gave_up / calls;
	}
	out->sync_pct = row->elapsed > 0 ? 100.0 * row->sync_ns / (row->elapsed * 1e9 * agents) : 0;
	free(row);
	return rc;
}

/* The task id the background tenants of the quality block hold their RUs under. */
#define BG_TASK RUSK_TASK_ID_MAX

/*
 * Background tenants: each RU held with probability `share` (seeded), so every row of the
 * quality block faces the same occupied cluster. Returns how many RUs were taken; the
 * leases go to *out (release with rusk_ru_release_many under BG_TASK). -1 on failure.
 */
static int64_t prefill(rusk_cluster *c, double share, uint64_t seed, rusk_lease **out)
{
	uint32_t n_rus = rusk_cluster_rus(c);
	rusk_lease *l = malloc(sizeof *l * (n_rus ? n_rus : 1));
	if (l == NULL)
		return -1;
	rusk_rng rng;
	rusk_rng_seed(&rng, seed, 0x6267ull); /* "bg" */
	int64_t n = 0;
	for (uint32_t ru = 0; ru < n_rus; ru++)
		if (rusk_rng_unit(&rng) < share) {
			if (rusk_ru_commit(c, BG_TASK, ru, NULL, &l[n]) != RUSK_OK) {
				rusk_ru_release_many(c, BG_TASK, l, (size_t)n, NULL);
				free(l);
				return -1;
			}
			n++;
		}
	*out = l;
	return n;
}

/*
 * Quality at a common load (ParSync §6: quality = the share of tasks placed on one of
 * their preferred machines). Closed-loop rows cannot compare quality: `central` places a
 * few hundred tasks a second and never fills the cluster, so it always finds the best.
 * Here background tenants hold (load - 1%) of the RUs at random and each row's agents at
 * most 1% more, so every design, `central` included, chooses among the same ~20% free
 * RUs; every task prefers n_pref random machines.
 */
static int quality_block(rusk_cluster *c, uint32_t agents, double load, uint32_t n_pref,
                         double duration, uint64_t seed, result *q)
{
	uint32_t n_rus = rusk_cluster_rus(c);
	row_load ld = {.window = (size_t)(0.01 * n_rus / agents), .n_pref = n_pref};
	double share = load - (double)ld.window * agents / n_rus;
	rusk_lease *bg = NULL;
	int64_t held = prefill(c, share > 0 ? share : 0, seed, &bg);
	if (held < 0)
		return -1;
	ld.held = (uint32_t)held;
	printf("\n  quality at %.0f%% load: background tenants hold %.1f%% of RUs at random, each "
	       "row's\n  agents at most %.1f%% more; every task prefers %u random machines "
	       "(ParSync §6:\n  quality = share of tasks placed on a preferred machine)\n",
	       load * 100, 100.0 * held / n_rus, 100.0 * ld.window * agents / n_rus, n_pref);
	printf("  %-22s %12s %11s %11s %10s %14s\n", "design", "tasks/s", "preferred%",
	       "slot score", "conflict%", "vs central");
	int status = 0;
	for (size_t k = 0; k < N_ROWS; k++)
		if (run_row(c, &rows[k], agents, &ld, duration, seed, &q[k]) != 0)
			status = -1;
	for (size_t k = 0; k < N_ROWS; k++)
		printf("  %-22s %12.0f %10.1f%% %11.3f %9.2f%% %+10.1f pts\n", rows[k].name,
		       q[k].tput, q[k].pref_pct, q[k].quality, q[k].conflict_pct,
		       q[k].pref_pct - q[6].pref_pct);
	size_t rejected = 0;
	if (rusk_ru_release_many(c, BG_TASK, bg, (size_t)held, &rejected) != RUSK_OK ||
	    rejected != 0 || rusk_cluster_free_rus(c) != n_rus)
		status = -1;
	free(bg);
	return status;
}

/*
 * Open loop at a common rate: the row's design under `rusk run` (the real-time driver:
 * generator, agent threads, completer) for `dur` seconds at `rate` tasks/s, with the
 * bench's cluster options; delay p50/p99 (submission -> committed) from its JSON.
 */
static int open_loop(int argc, char **argv, const bench_row *r, uint64_t agents, double rate,
                     double dur, double *p50, double *p99)
{
	char path[] = "/tmp/rusk_bench_XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	char s_agents[32], s_rate[32], s_dur[32];
	snprintf(s_agents, sizeof s_agents, "%" PRIu64, agents);
	snprintf(s_rate, sizeof s_rate, "%.0f", rate);
	snprintf(s_dur, sizeof s_dur, "%.3f", dur);
	const char *av[64];
	int n = 0;
	av[n++] = "run";
	/* Forward the cluster options exactly as given. */
	cli_cluster tmp;
	cli_cluster_init(&tmp);
	for (int i = 1; i < argc && n < 40; i++) {
		int j = i;
		if (cli_cluster_opt(&tmp, argc, argv, &j) > 0) {
			for (int k = i; k <= j; k++)
				av[n++] = argv[k];
			i = j;
		}
	}
	const char *fixed[] = {"--agents",
	                       s_agents,
	                       "--sync",
	                       rusk_sync_policy_name(r->sync),
	                       "--strategy",
	                       rusk_strategy_name(r->strategy),
	                       "--rate",
	                       s_rate,
	                       "--duration-s",
	                       s_dur,
	                       "--task-ms",
	                       "1000",
	                       "--task-dist",
	                       "exp",
	                       "--quiet",
	                       "--json",
	                       path};
	for (size_t k = 0; k < sizeof fixed / sizeof *fixed; k++)
		av[n++] = fixed[k];
	if (r->global_lock)
		av[n++] = "--global-lock";
	av[n] = NULL;
	int rc = rusk_cmd_run(n, (char **)av);
	FILE *f = fopen(path, "r");
	char buf[16384];
	size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	unlink(path);
	buf[len] = '\0';
	const char *d = strstr(buf, "\"delay_us\"");
	if (rc != 0 || d == NULL)
		return -1;
	const char *q50 = strstr(d, "\"p50\": "), *q99 = strstr(d, "\"p99\": ");
	if (q50 == NULL || q99 == NULL)
		return -1;
	*p50 = strtod(q50 + 7, NULL);
	*p99 = strtod(q99 + 7, NULL);
	return 0;
}

/* --sweep LIST: agent counts, comma-separated, each in 1..256, at most MAX_SWEEP. */
typedef struct sweep_list {
	uint32_t n[MAX_SWEEP];
	size_t len;
} sweep_list;

static int opt_sweep(const char *flag, const char *val, void *out)
{
	sweep_list *l = out;
	if (val == NULL) {
		fprintf(stderr, "rusk: %s: needs a value\n", flag);
		return -1;
	}
	l->len = 0;
	const char *p = val;
	for (;;) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p || !isdigit((unsigned char)*p) || errno != 0 || v < 1 || v > 256 ||
		    (*end != ',' && *end != '\0') || l->len == MAX_SWEEP) {
			fprintf(stderr,
			        "rusk: %s: '%s' is not a list of at most %d agent counts in 1..256 "
			        "(e.g. 1,2,4,8,16)\n",
			        flag, val, MAX_SWEEP);
			return -1;
		}
		l->n[l->len++] = (uint32_t)v;
		if (*end == '\0')
			return 0;
		p = end + 1;
	}
}

static void bench_usage(void)
{
	puts("usage: rusk bench [options]\n"
	     "\n"
	     "rusk against the designs it replaces, same workload, same run: rusk Latency/\n"
	     "Quality/Adaptive on DiffSync, StateSync, SameSync, random (Sparrow), central\n"
	     "(one lock, full scan) and global-lock (commits and releases under one mutex);\n"
	     "then thread scaling 1..N. Agents run closed loop: tasks/s is the highest\n"
	     "sustained rate.\n"
	     "\n"
	     "  --agents N       agents per row, and the top of the scaling sweep (default 2)\n"
	     "  --duration-s S   seconds per row (default 2)\n"
	     "  --warmup-s S     closed-loop rows first fill the cluster to --load and run\n"
	     "                   S seconds uncounted (default 0.5, one sync gap: every view\n"
	     "                   synced); 0 counts from an empty cluster\n"
	     "  --load F         share of RUs held in steady state (default 0.8)\n"
	     "  --rate R         common open-loop rate for the delay columns (default: half\n"
	     "                   the slowest design's sustained rate, central excepted, at\n"
	     "                   most 100,000/s; 0 skips them)\n"
	     "  --preferred K    quality block: every task prefers K random machines, at\n"
	     "                   --load with background tenants (default 4; 0 skips it)\n"
	     "  --sweep LIST     agent counts of the scaling sweep, e.g. 1,2,4,8,16\n"
	     "                   (default 1..--agents)\n"
	     "  --json FILE      write the rows and the sweep as JSON\n"
	     "  --png FILE       bar chart of tasks/s per row (needs gnuplot)");
	cli_cluster_usage();
}

int rusk_cmd_bench(int argc, char **argv)
{
	cli_cluster cc;
	cli_cluster_init(&cc);
	uint64_t agents = 2, n_pref = 4;
	double duration = 2, load = 0.8, common = -1;
	double warm = (double)RUSK_SYNC_DEFAULT_GAP_NS / 1e9; /* one sync gap */
	const char *json = NULL, *png = NULL;
	sweep_list sweep = {.len = 0};
	const cli_opt opts[] = {
	        {CLI_CUSTOM_OPT("--sweep", opt_sweep, &sweep)},
	        {CLI_U64_OPT("--agents", 1, 256, &agents)},
	        {CLI_DOUBLE_OPT("--duration-s", 0.05, 3600, &duration)},
	        {CLI_DOUBLE_OPT("--warmup-s", 0, 3600, &warm)},
	        {CLI_DOUBLE_OPT("--load", 0, 0.95, &load)},
	        {CLI_DOUBLE_OPT("--rate", 0, 1e7, &common)},
	        {CLI_U64_OPT("--preferred", 0, 64, &n_pref)},
	        {CLI_FILE_OPT("--json", &json)},
	        {CLI_FILE_OPT("--png", &png)},
	};
	int pr = cli_parse("bench", argc, argv, &cc, opts, sizeof opts / sizeof *opts, bench_usage);
	if (pr != 0)
		return pr > 0 ? 0 : RUSK_EXIT_USAGE;
	if (sweep.len == 0)
		for (uint32_t n = 1; n <= agents && sweep.len < MAX_SWEEP; n++)
			sweep.n[sweep.len++] = n;
	uint64_t top = agents;
	for (size_t i = 0; i < sweep.len; i++)
		top = sweep.n[i] > top ? sweep.n[i] : top;
	if (cc.params.partitions < top) {
		fprintf(stderr,
		        "rusk: %s %" PRIu64 " needs --partitions >= %" PRIu64
		        " (DiffSync, ParSync §5.1: P >= N)\n",
		        top == agents ? "--agents" : "--sweep up to", top, top);
		return RUSK_EXIT_USAGE;
	}
	/* Outputs (outfile.h) before the work: --json, the chart and its data and script
	 * (PNG.dat, PNG.gp, kept beside it), none of them the node list. */
	char dat[4200], gp[4200];
	snprintf(dat, sizeof dat, "%s.dat", png != NULL ? png : "");
	snprintf(gp, sizeof gp, "%s.gp", png != NULL ? png : "");
	const cli_in in = {"--cluster", cc.openb_path};
	cli_out outs[] = {{.flag = "--json", .path = json},
	                  {.flag = "--png", .path = png, .external = true},
	                  {.flag = "--png (its data)", .path = png != NULL ? dat : NULL},
	                  {.flag = "--png (its gnuplot script)", .path = png != NULL ? gp : NULL}};
	const size_t n_outs = sizeof outs / sizeof *outs;
	int orc = cli_files_open(&in, 1, outs, n_outs);
	if (orc != 0)
		return orc;
	rusk_cluster *c;
	double build_s;
	if (cli_cluster_build(&cc, &c, &build_s) != RUSK_OK) {
		cli_outs_discard(outs, n_outs);
		return RUSK_EXIT_USAGE;
	}
	printf("rusk bench: %u machines, %u RUs, %u partitions; %" PRIu64
	       " agents per row, closed loop at %.0f%% load, %.1f s per row after %.1f s "
	       "of warm-up\n\n",
	       rusk_cluster_machines(c), rusk_cluster_rus(c), rusk_cluster_partitions(c), agents,
	       load * 100, duration, warm);
	printf("  %-22s %12s %10s %10s %10s %9s %11s\n", "design", "tasks/s", "p50 (us)",
	       "p99 (us)", "conflict%", "quality", "x central");
	cli_stdout_flush();
	result res[N_ROWS], qres[N_ROWS] = {{0}};
	int status = 0;
	row_load closed = {.window = (size_t)(load * rusk_cluster_rus(c) / agents), .warm_s = warm};
	for (size_t k = 0; k < N_ROWS; k++)
		if (run_row(c, &rows[k], (uint32_t)agents, &closed, duration, cc.params.seed,
		            &res[k]) != 0)
			status = RUSK_EXIT_FAIL;
	double central = res[6].tput > 0 ? res[6].tput : 1;
	for (size_t k = 0; k < N_ROWS; k++)
		printf("  %-22s %12.0f %10.2f %10.2f %9.2f%% %9.3f %10.1fx\n", rows[k].name,
		       res[k].tput, res[k].p50_us, res[k].p99_us, res[k].conflict_pct,
		       res[k].quality, res[k].tput / central);
	printf("\n  rusk latency vs global-lock: %.2fx tasks/s with %" PRIu64 " agents\n",
	       res[7].tput > 0 ? res[0].tput / res[7].tput : 0.0, agents);
	/* Open loop at one common rate: every design faces the same arrivals. */
	double ol50[N_ROWS] = {0}, ol99[N_ROWS] = {0};
	bool ol_ok[N_ROWS] = {false};
	if (common < 0) {
		common = 100000;
		for (size_t k = 0; k < N_ROWS; k++)
			if (rows[k].strategy != RUSK_STRATEGY_CENTRAL && res[k].tput / 2 < common)
				common = res[k].tput / 2;
		common = (double)(uint64_t)(common / 1000) * 1000;
		if (common < 1000)
			common = 1000;
	}
	if (common > 0) {
		printf("\n  open loop at %.0f tasks/s for %.1f s (rusk run, 1 s tasks): scheduling "
		       "delay\n  %-22s %12s %12s\n",
		       common, duration, "design", "p50 (us)", "p99 (us)");
		for (size_t k = 0; k < N_ROWS; k++) {
			if (res[k].tput < common) {
				printf("  %-22s %25s\n", rows[k].name, "cannot sustain this rate");
				continue;
			}
			ol_ok[k] = open_loop(argc, argv, &rows[k], agents, common, duration,
			                     &ol50[k], &ol99[k]) == 0;
			if (!ol_ok[k])
				status = RUSK_EXIT_FAIL;
			printf("  %-22s %12.1f %12.1f\n", rows[k].name, ol50[k], ol99[k]);
			cli_stdout_flush();
		}
	}
	if (n_pref > 0 && quality_block(c, (uint32_t)agents, load, (uint32_t)n_pref, duration,
	                                cc.params.seed, qres) != 0)
		status = RUSK_EXIT_FAIL;
	cli_stdout_flush();
	printf("\n  thread scaling (tasks/s)\n  %-8s", "agents");
	for (size_t k = 0; k < N_SWEEP; k++)
		printf(" %20s", rows[sweep_rows[k]].name);
	printf("\n");
	result *scale = calloc(sweep.len * N_SWEEP, sizeof *scale);
	if (scale == NULL) {
		rusk_cluster_destroy(c);
		cli_outs_discard(outs, n_outs);
		return RUSK_EXIT_FAIL;
	}
	for (size_t i = 0; i < sweep.len; i++) {
		uint32_t n = sweep.n[i];
		row_load ln = {.window = (size_t)(load * rusk_cluster_rus(c) / n), .warm_s = warm};
		printf("  %-8u", n);
		for (size_t k = 0; k < N_SWEEP; k++) {
			result *r = &scale[i * N_SWEEP + k];
			if (run_row(c, &rows[sweep_rows[k]], n, &ln, duration, cc.params.seed, r) !=
			    0)
				status = RUSK_EXIT_FAIL;
			printf(" %20.0f", r->tput);
			cli_stdout_flush();
		}
		printf("\n");
	}
	/* Where the decisions' time goes, rusk's default against StateSync: the measured
	 * reason when the two scale apart. */
	printf("\n  per decision (every call, given-up ones included): ns choosing + ns "
	       "committing,\n  candidates drawn, partitions looked at, commit attempts, "
	       "gave up %%, conflict %%, sync %% of agents' time\n");
	for (size_t k = 0; k < 2; k++) {
		printf("  %s\n  %-8s %9s %9s %7s %6s %8s %8s %9s %7s\n", rows[sweep_rows[k]].name,
		       "agents", "choose", "commit", "drawn", "parts", "attempts", "gave up",
		       "conflict", "sync");
		for (size_t i = 0; i < sweep.len; i++) {
			const result *r = &scale[i * N_SWEEP + k];
			printf("  %-8u %9.0f %9.0f %7.2f %6.2f %8.3f %7.2f%% %8.2f%% %6.2f%%\n",
			       sweep.n[i], r->sample_ns, r->commit_ns, r->samples, r->parts,
			       r->attempts, r->gave_up_pct, r->conflict_pct, r->sync_pct);
		}
	}
	printf("\n  tasks/s: placements per second, every agent flat out (the highest sustained\n"
	       "  rate); p50/p99: time of one placement decision (sample + commit + retries);\n"
	       "  slot score / quality: mean slot score placed (higher is better); preferred%%:\n"
	       "  tasks on a preferred machine; vs central: its difference in points.\n");
	if (outs[0].f != NULL) {
		FILE *f = outs[0].f;
		fprintf(f,
		        "{\n  \"config\": {\"machines\": %u, \"rus\": %u, \"partitions\": "
		        "%u, "
		        "\"agents\": %" PRIu64 ", \"load\": %.3f, \"duration_s\": %.3f, "
		        "\"warmup_s\": %.3f, "
		        "\"preferred\": %" PRIu64 ", \"seed\": %" PRIu64 "},\n  \"rows\": [\n",
		        rusk_cluster_machines(c), rusk_cluster_rus(c), rusk_cluster_partitions(c),
		        agents, load, duration, warm, n_pref, cc.params.seed);
		for (size_t k = 0; k < N_ROWS; k++)
			fprintf(f,
			        "    {\"design\": \"%s\", \"tasks_per_s\": %.1f, "
			        "\"decision_p50_us\": "
			        "%.3f, \"decision_p99_us\": %.3f, \"conflict_pct\": %.4f, "
			        "\"quality\": "
			        "%.4f, \"vs_central\": %.2f, \"common_rate\": %.0f, "
			        "\"open_loop_delay_p50_us\": %s%.1f, "
			        "\"open_loop_delay_p99_us\": %s%.1f, "
			        "\"at_load_tasks_per_s\": %.1f, \"at_load_preferred_pct\": "
			        "%.2f, "
			        "\"at_load_slot_score\": %.4f}%s\n",
			        rows[k].name, res[k].tput, res[k].p50_us, res[k].p99_us,
			        res[k].conflict_pct, res[k].quality, res[k].tput / central, common,
			        ol_ok[k] ? "" : "-", ol_ok[k] ? ol50[k] : 1.0, ol_ok[k] ? "" : "-",
			        ol_ok[k] ? ol99[k] : 1.0, qres[k].tput, qres[k].pref_pct,
			        qres[k].quality, k + 1 < N_ROWS ? "," : "");
		/* "rusk" and "global_lock" as before; the other designs and each design's
		 * per-decision work under "work", keyed like "designs". */
		static const char *const keys[N_SWEEP] = {"rusk", "statesync", "random",
		                                          "global_lock"};
		fprintf(f, "  ],\n  \"scaling_designs\": [");
		for (size_t k = 0; k < N_SWEEP; k++)
			fprintf(f, "%s\"%s\"", k ? ", " : "", rows[sweep_rows[k]].name);
		fprintf(f, "],\n  \"scaling\": [");
		for (size_t i = 0; i < sweep.len; i++) {
			fprintf(f, "%s\n    {\"agents\": %u", i ? "," : "", sweep.n[i]);
			for (size_t k = 0; k < N_SWEEP; k++)
				fprintf(f, ", \"%s\": %.1f", keys[k], scale[i * N_SWEEP + k].tput);
			fprintf(f, ", \"work\": {");
			for (size_t k = 0; k < N_SWEEP; k++) {
				const result *r = &scale[i * N_SWEEP + k];
				fprintf(f,
				        "%s\"%s\": {\"choose_ns\": %.1f, \"commit_ns\": %.1f, "
				        "\"drawn\": %.3f, \"partitions\": %.3f, \"attempts\": "
				        "%.4f, "
				        "\"gave_up_pct\": %.3f, \"conflict_pct\": %.3f, "
				        "\"decision_p50_us\": %.3f, \"decision_p99_us\": %.3f, "
				        "\"sync_pct\": %.3f}",
				        k ? ", " : "", keys[k], r->sample_ns, r->commit_ns,
				        r->samples, r->parts, r->attempts, r->gave_up_pct,
				        r->conflict_pct, r->p50_us, r->p99_us, r->sync_pct);
			}
			fprintf(f, "}}");
		}
		fprintf(f, "\n  ]\n}\n");
	}
	if (cli_out_close(&outs[0]) != 0)
		status = RUSK_EXIT_FAIL;
	if (png != NULL) {
		/* The data and the script in place first (the script names PNG.dat and takes
		 * its output from `out`, PNG by default), then gnuplot draws into the chart's
		 * temporary file, renamed into place once gnuplot succeeded. */
		for (size_t k = 0; k < N_ROWS; k++)
			fprintf(outs[2].f, "\"%s\" %.1f\n", rows[k].name, res[k].tput);
		fprintf(outs[3].f,
		        "if (!exists(\"out\")) out = '%s'\n"
		        "set terminal pngcairo size 960,540 noenhanced\nset output out\n"
		        "set title 'rusk bench: highest sustained tasks/s (%" PRIu64 " agents)'\n"
		        "set style fill solid 0.6\nset boxwidth 0.7\nset logscale y\n"
		        "set ylabel 'tasks/s (log)'\nset xtics rotate by -30\nset grid y\n"
		        "plot '%s' using 0:2:xtic(1) with boxes notitle\n",
		        png, agents, dat);
		bool ok = cli_out_close(&outs[2]) == 0 && cli_out_close(&outs[3]) == 0;
		char cmd[13000];
		snprintf(cmd, sizeof cmd, "gnuplot -e \"out='%s'\" '%s'", cli_out_name(&outs[1]),
		         gp);
		int rc = ok ? system(cmd) : -1;
		if (ok && (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)) {
			fprintf(stderr,
			        "rusk bench: gnuplot failed (apt-get install -y gnuplot-nox)\n");
			ok = false;
		}
		if (!ok || cli_out_close(&outs[1]) != 0)
			status = RUSK_EXIT_FAIL;
	}
	cli_outs_discard(outs, n_outs); /* any not put in place */
	free(scale);
	rusk_rcu_barrier();
	rusk_cluster_destroy(c);
	return status;
}
