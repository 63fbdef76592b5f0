/* SPDX-License-Identifier: MIT */
/*
 * `rusk experiment NAME`: the paper reproductions that are not a `rusk sim` run (those are
 * driven by perf/paper/experiments.py). Each prints a CSV on stdout (or --csv FILE) with
 * the paper's figure beside ours.
 *
 *   eq2              ParSync §4.1 eq. 2: N schedulers each pick K of S_idle idle slots
 *                    uniformly at random in a synchronous round and 4 threads commit
 *                    them concurrently on the real master array; measured conflicts
 *                    (lost CASes) per round against
 *                    NK - S_idle + S_idle (1 - K/S_idle)^N.
 *   tarcil-cdf       Tarcil §3.3 Fig. 3/4: the CDF of the rank D of the RU that sampling
 *                    with R candidates picks, against x^R, for R = 8, 16, 32, 64.
 *   tarcil-overhead  Tarcil Fig. 9's trend: decision time of one agent against R.
 *   fgd              FGD's fill-until-full experiment (Weng et al., ATC'23) per quality
 *                    model: unallocated and fragmented GPU share as the openb cluster
 *                    fills with pods drawn from a pod list (fgd_exp.c).
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/rng.h"
#include "cli.h"
#include "outfile.h"

static rusk_cluster *idle_cluster(uint32_t slots, uint32_t per_machine, uint32_t parts,
                                  uint64_t seed)
{
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = slots / per_machine;
	p.rus_per_machine = per_machine;
	p.machines_per_rack = 10;
	p.racks_per_cell = 10;
	p.partitions = parts;
	p.seed = seed;
	rusk_cluster *c = NULL;
	char err[256];
	if (rusk_cluster_create(&p, &c, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk experiment: %s\n", err);
		return NULL;
	}
	return c;
}

/* One committer thread of an eq. 2 round: commits the picks of schedulers t, t + T, ...
 * (picks[a * k .. a * k + k), task id a * k + j + 1) on the shared master array. */
typedef struct eq2_thread {
	pthread_t tid;
	rusk_cluster *c;
	const uint32_t *picks;
	rusk_lease *won;
	uint32_t t, T, n, k, n_won, conflicts;
} eq2_thread;

static void *eq2_commit(void *arg)
{
	eq2_thread *w = arg;
	rusk_thread_register();
	/* Interleave the schedulers' commits pick by pick, as concurrent agents would. */
	for (uint32_t j = 0; j < w->k; j++)
		for (uint32_t a = w->t; a < w->n; a += w->T) {
			uint32_t ru = w->picks[(size_t)a * w->k + j];
			if (rusk_ru_commit(w->c, (uint64_t)a * w->k + j + 1, ru, NULL,
			                   &w->won[w->n_won]) == RUSK_OK)
				w->n_won++;
			else
				w->conflicts++;
		}
	rusk_thread_unregister();
	return NULL;
}

/* One synchronous round: every scheduler picks k of the s idle slots on the same fresh
 * state, then EQ2_THREADS threads commit all picks concurrently on the master array; a
 * lost CAS is a conflict. The count does not depend on the interleaving (n k minus the
 * distinct slots picked), so the mean is deterministic while the CASes race. */
#define EQ2_THREADS 4
static int eq2_round(rusk_cluster *c, rusk_rng *r, uint32_t *idx, uint32_t *picks, rusk_lease *won,
                     uint8_t *seen, uint32_t s, uint32_t n, uint32_t k, uint32_t *conflicts)
{
	for (uint32_t a = 0; a < n; a++) {
		/* A partial Fisher-Yates shuffle of any permutation draws a uniform K-subset,
		 * so the permutation carries over from one draw to the next. */
		for (uint32_t j = 0; j < k; j++) {
			uint32_t pick = j + rusk_rng_below(r, s - j);
			uint32_t t = idx[j];
			idx[j] = idx[pick];
			idx[pick] = t;
			picks[(size_t)a * k + j] = idx[j];
		}
	}
	uint32_t T = n < EQ2_THREADS ? n : EQ2_THREADS;
	eq2_thread w[EQ2_THREADS];
	size_t off = 0;
	for (uint32_t t = 0; t < T; t++) {
		w[t] = (eq2_thread){
		        .c = c, .picks = picks, .won = won + off, .t = t, .T = T, .n = n, .k = k};
		off += (size_t)((n - t + T - 1) / T) * k; /* room for all of its commits */
		if (pthread_create(&w[t].tid, NULL, eq2_commit, &w[t]) != 0) {
			for (uint32_t u = 0; u < t; u++)
				pthread_join(w[u].tid, NULL);
			fprintf(stderr, "rusk experiment eq2: cannot start a thread\n");
			return RUSK_EXIT_FAIL;
		}
	}
	*conflicts = 0;
	for (uint32_t t = 0; t < T; t++) /* all commits end before any release */
		pthread_join(w[t].tid, NULL);
	/* Every commit either won or lost, and no slot was won twice: the CAS's guarantee,
	 * checked before any release can free a slot for a late committer. */
	uint32_t tried = 0, twice = 0;
	memset(seen, 0, s);
	for (uint32_t t = 0; t < T; t++) {
		tried += w[t].n_won + w[t].conflicts;
		for (uint32_t x = 0; x < w[t].n_won; x++)
			twice += seen[w[t].won[x].ru]++ != 0;
	}
	if (twice > 0 || tried != n * k) {
		fprintf(stderr, "rusk experiment eq2: %u slots won twice, %u of %u commits seen\n",
		        twice, tried, n * k);
		return RUSK_EXIT_FAIL;
	}
	for (uint32_t t = 0; t < T; t++) {
		*conflicts += w[t].conflicts;
		/* Release: the owner of each won lease. */
		for (uint32_t x = 0; x < w[t].n_won; x++) {
			rusk_ru_info inf;
			rusk_ru_state(c, w[t].won[x].ru, &inf);
			rusk_ru_release(c, inf.owner, w[t].won[x]);
		}
	}
	return 0;
}

static int eq2(FILE *out, uint32_t rounds, uint64_t seed)
{
	static const uint32_t S[] = {1000, 10000, 100000};
	static const uint32_t N[] = {2, 10, 40};
	static const uint32_t K[] = {10, 100, 1000};
	fprintf(out, "s_idle,n,k,rounds,measured_mean,measured_se,eq2,rel_err,agree\n");
	int bad = 0;
	for (size_t si = 0; si < 3; si++) {
		rusk_cluster *c = idle_cluster(S[si], 1, 1, seed);
		uint32_t *idx = malloc(sizeof *idx * S[si]);
		uint32_t *picks = malloc(sizeof *picks * 4 * S[si]); /* n k <= 4 s */
		rusk_lease *won = malloc(sizeof *won * 4 * S[si]);
		uint8_t *seen = malloc(S[si]);
		if (c == NULL || idx == NULL || picks == NULL || won == NULL || seen == NULL)
			return RUSK_EXIT_FAIL;
		for (uint32_t i = 0; i < S[si]; i++)
			idx[i] = i;
		for (size_t ni = 0; ni < 3; ni++)
			for (size_t ki = 0; ki < 3; ki++) {
				uint32_t n = N[ni], k = K[ki], s = S[si];
				if ((uint64_t)n * k > 4ull * s || k > s)
					continue;
				rusk_rng r;
				rusk_rng_seed(&r, seed, si * 100 + ni * 10 + ki);
				double sum = 0, sumsq = 0;
				for (uint32_t round = 0; round < rounds; round++) {
					uint32_t conflicts;
					if (eq2_round(c, &r, idx, picks, won, seen, s, n, k,
					              &conflicts))
						return RUSK_EXIT_FAIL;
					sum += conflicts;
					sumsq += (double)conflicts * conflicts;
				}
				double mean = sum / rounds;
				double sd = sqrt(fmax(sumsq / rounds - mean * mean, 0));
				double se = sd / sqrt(rounds);
				double f = (double)n * k - s + s * pow(1.0 - (double)k / s, n);
				double rel = f > 0 ? fabs(mean - f) / f : fabs(mean);
				/* Agreement: within 4 standard errors of the mean (the Poisson one
				 * from the formula when too few conflicts were seen to estimate
				 * it), plus 1% of the expectation. */
				double se_ref = fmax(se, sqrt(f / rounds));
				bool ok = fabs(mean - f) <= 4 * se_ref + 0.01 * f;
				bad += !ok;
				fprintf(out, "%u,%u,%u,%u,%.3f,%.3f,%.3f,%.5f,%s\n", s, n, k,
				        rounds, mean, se, f, rel, ok ? "yes" : "no");
			}
		if (rusk_cluster_free_rus(c) != S[si]) {
			fprintf(stderr, "rusk experiment eq2: RUs leaked\n");
			bad++;
		}
		free(idx);
		free(picks);
		free(won);
		free(seen);
		rusk_cluster_destroy(c);
	}
	return bad ? RUSK_EXIT_FAIL : 0;
}

/* The rank D in [0, 1] of each RU's slot score among all RUs. */
static double *ranks(rusk_cluster *c)
{
	uint32_t n = rusk_cluster_rus(c);
	double *d = malloc(sizeof *d * n);
	if (d == NULL)
		return NULL;
	/* Counting order by score (milli-units fit in 16 bits). */
	uint32_t *cnt = calloc(65537, sizeof *cnt);
	if (cnt == NULL) {
		free(d);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++)
		cnt[(uint32_t)lround(rusk_ru_score(c, i) * 1000.0) + 1]++;
	for (uint32_t v = 1; v <= 65536; v++)
		cnt[v] += cnt[v - 1];
	for (uint32_t i = 0; i < n; i++)
		d[i] = (double)cnt[(uint32_t)lround(rusk_ru_score(c, i) * 1000.0)] / (n - 1);
	free(cnt);
	return d;
}

static rusk_agent *one_agent(rusk_cluster *c, uint32_t sample, uint64_t seed)
{
	const cli_agents ca = {.sync = RUSK_SYNC_STATE,
	                       .agents = 1,
	                       .gap_ms = 1000,
	                       .sample = sample,
	                       .seed = seed};
	rusk_sync_params sp = cli_sync_params(&ca, rusk_cluster_partitions(c), 0);
	rusk_agent_params ap;
	cli_agent_params(&ca, &sp, 0, &ap);
	ap.r_max = sample;
	rusk_agent *a = NULL;
	if (rusk_agent_create(c, &ap, &a, NULL, 0) != RUSK_OK)
		return NULL;
	for (uint32_t p = 0; p < rusk_cluster_partitions(c); p++)
		rusk_view_sync(rusk_agent_view(a), p);
	return a;
}

static int tarcil_cdf(FILE *out, uint32_t decisions, uint64_t seed)
{
	static const uint32_t Rs[] = {8, 16, 32, 64};
	/* One partition: the agent samples the whole cluster, so D's reference (all RUs) is
	 * the population sampled (with 20 partitions a partition's own score distribution
	 * differs from the cluster's by ~1/sqrt(80K), which x^R amplifies R-fold). */
	rusk_cluster *c = idle_cluster(100000, 16, 1, seed);
	double *d = c ? ranks(c) : NULL;
	if (d == NULL)
		return RUSK_EXIT_FAIL;
	fprintf(out, "r,x,measured_cdf,x_pow_r\n");
	int bad = 0;
	for (size_t ri = 0; ri < 4; ri++) {
		rusk_agent *a = one_agent(c, Rs[ri], seed + ri);
		if (a == NULL)
			return RUSK_EXIT_FAIL;
		uint32_t bins[101] = {0};
		for (uint32_t i = 0; i < decisions; i++) {
			rusk_task t = {.id = 1, .rus = 1};
			uint32_t ru;
			rusk_placement pl;
			if (rusk_agent_choose(a, &t, &ru, &pl) != RUSK_OK)
				return RUSK_EXIT_FAIL;
			bins[(int)floor(d[ru] * 100.0)]++;
		}
		double cum = 0, ks = 0;
		for (int b = 0; b <= 100; b++) {
			double x = b / 100.0;
			/* CDF at x: picks with D < x. */
			double f = cum / decisions, g = pow(x, Rs[ri]);
			ks = fmax(ks, fabs(f - g));
			if (b % 2 == 0 || b > 80)
				fprintf(out, "%u,%.2f,%.5f,%.5f\n", Rs[ri], x, f, g);
			if (b < 100)
				cum += bins[b];
		}
		fprintf(stderr, "  R = %2u: KS distance to x^R %.4f over %u decisions\n", Rs[ri],
		        ks, decisions);
		bad += ks > 0.02;
		rusk_agent_destroy(a);
	}
	free(d);
	rusk_cluster_destroy(c);
	return bad ? RUSK_EXIT_FAIL : 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int tarcil_overhead(FILE *out, uint32_t decisions, uint64_t seed)
{
	static const uint32_t Rs[] = {2, 4, 8, 16, 32, 64, 128};
	rusk_cluster *c = idle_cluster(100000, 16, 20, seed);
	if (c == NULL)
		return RUSK_EXIT_FAIL;
	fprintf(out, "r,decision_ns\n");
	for (size_t ri = 0; ri < sizeof Rs / sizeof *Rs; ri++) {
		rusk_agent *a = one_agent(c, Rs[ri], seed);
		if (a == NULL)
			return RUSK_EXIT_FAIL;
		rusk_task t = {.id = 1, .rus = 1};
		uint32_t ru;
		rusk_placement pl;
		double t0 = now_s();
		for (uint32_t i = 0; i < decisions; i++)
			rusk_agent_choose(a, &t, &ru, &pl);
		double ns = (now_s() - t0) * 1e9 / decisions;
		fprintf(out, "%u,%.1f\n", Rs[ri], ns);
		rusk_agent_destroy(a);
	}
	rusk_cluster_destroy(c);
	return 0;
}

static void usage(void)
{
	puts("usage: rusk experiment NAME [--rounds N] [--seed S] [--csv FILE]\n"
	     "       rusk experiment fgd [--cluster openb|PATH] [--trace openb|PATH] [--seeds N]\n"
	     "                           [--sample R] [--seed S] [--csv FILE]\n"
	     "\n"
	     "  eq2              ParSync §4.1 eq. 2: conflicts of synchronous rounds of uniform\n"
	     "                   random choices on the real master array, against the formula\n"
	     "  tarcil-cdf       Tarcil Fig. 3/4: CDF of the picked RU's rank D against x^R\n"
	     "  tarcil-overhead  Tarcil Fig. 9 trend: decision time against R\n"
	     "  fgd              FGD (ATC'23) fill-until-full: unallocated and fragmented GPU\n"
	     "                   share per quality model (score, packing, fgd) as pods drawn\n"
	     "                   from the pod list fill the node list, nothing departing; a\n"
	     "                   pod without a machine is dropped, the fill ends after 64 in a\n"
	     "                   row (or at 3x the GPU capacity asked); seeds S..S+N-1 (N 3)\n"
	     "  list             these names\n"
	     "\n"
	     "The `rusk sim` reproductions (ParSync Figs. 3, 5-8, Tables 1-2) run from\n"
	     "perf/paper/experiments.py; see perf/paper/README.md.");
}

/* The experiments by name; `list` prints the usage. */
#define EXP_LIST (-1)
static const cli_choice experiments[] = {{"eq2", CLI_EXP_EQ2},
                                         {"tarcil-cdf", CLI_EXP_TARCIL_CDF},
                                         {"tarcil-overhead", CLI_EXP_TARCIL_OVERHEAD},
                                         {"fgd", CLI_EXP_FGD},
                                         {"list", EXP_LIST},
                                         {NULL, 0}};

int cli_experiment_parse(int argc, char **argv, cli_experiment *o)
{
	*o = (cli_experiment){.seed = 1};
	const cli_opt opts[] = {
	        {CLI_CHOICE_OPT("NAME", experiments, &o->name)},
	        {CLI_U64_OPT("--rounds", 1, 100000000, &o->rounds)},
	        {CLI_U64_OPT("--seed", 0, (double)UINT64_MAX, &o->seed)}, /* the whole range */
	        {CLI_FILE_OPT("--csv", &o->csv)},
	        {CLI_FILE_OPT("--cluster", &o->cluster)},
	        {CLI_FILE_OPT("--trace", &o->trace)},
	        {CLI_U64_OPT("--seeds", 1, 64, &o->seeds)},
	        {CLI_U64_OPT("--sample", 1, 4096, &o->sample)},
	};
	int r = cli_parse("experiment", argc, argv, NULL, opts, sizeof opts / sizeof *opts, usage);
	if (r == 0 && o->name != CLI_EXP_FGD && o->name != EXP_LIST &&
	    (o->cluster || o->trace || o->seeds || o->sample)) {
		fprintf(stderr, "rusk experiment: --cluster, --trace, --seeds and --sample are "
		                "options of `rusk experiment fgd` only\n");
		return -1;
	}
	if (r == 0 && o->name == EXP_LIST) {
		usage();
		return 1;
	}
	return r;
}

int rusk_cmd_experiment(int argc, char **argv)
{
	cli_experiment o;
	int pr = cli_experiment_parse(argc, argv, &o);
	if (pr != 0)
		return pr > 0 ? 0 : RUSK_EXIT_USAGE;
	cli_out co = {.flag = "--csv", .path = o.csv};
	int orc = cli_files_open(NULL, 0, &co, 1);
	if (orc != 0)
		return orc;
	FILE *out = o.csv != NULL ? co.f : stdout;
	uint32_t rounds = (uint32_t)o.rounds;
	int rc = RUSK_EXIT_USAGE;
	rusk_thread_register();
	switch ((cli_experiment_name)o.name) {
	case CLI_EXP_EQ2: rc = eq2(out, rounds ? rounds : 200, o.seed); break;
	case CLI_EXP_TARCIL_CDF: rc = tarcil_cdf(out, rounds ? rounds : 100000, o.seed); break;
	case CLI_EXP_TARCIL_OVERHEAD:
		rc = tarcil_overhead(out, rounds ? rounds : 20000, o.seed);
		break;
	case CLI_EXP_FGD:
		rc = cli_experiment_fgd(out, o.cluster, o.trace, o.seed,
		                        o.seeds ? (uint32_t)o.seeds : 3, (uint32_t)o.sample);
		break;
	}
	rusk_thread_unregister();
	if (cli_out_close(&co) != 0) /* also when a check failed: the rows are its evidence */
		rc = RUSK_EXIT_FAIL;
	return rc;
}
