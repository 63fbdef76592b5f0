/* SPDX-License-Identifier: MIT */
/*
 * The parts of `rusk run` and `rusk sim` that do not depend on the clock or the
 * interleaving (driver.h): setup, workload, agent-local queues with admission control,
 * priorities and preemption (Tarcil §4, §5.3), accounting, per-second series, summary.
 * Their flags are parsed in run_opts.c.
 *
 * Queues. An agent moves what arrives on its ring into local queues and serves, per
 * round: high-priority tasks first (they bypass everything queued, Tarcil §5.3), then its
 * retry list (tasks given back after conflicts, with their submission time), then the
 * admission waiters that are due, then the normal queue. A task the admission check tells
 * to wait goes to a min-heap by its next check time; it is checked again then, and
 * admitted at the latest when it has waited the bucket's mu + 2 sigma (rusk/admit.h).
 *
 * Preemption. A high-priority task that could not be placed samples RUs of the master
 * array; an RU held by a running normal task makes that task a victim: a CAS on its state
 * word ends its tenure (the completer's CAS for the same tenure then fails), its RUs are
 * released and marked free in the preempting agent's view, and it goes to that agent's
 * retry list, counted. Its re-placement delay counts from the preemption.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "driver.h"

/* ---- signals and failures -------------------------------------------------------------- */

/* Written by the handler: a lock-free atomic store is async-signal-safe. */
static uint32_t stop_sig;

static void on_stop_signal(int sig)
{
	rusk_store32(&stop_sig, (uint32_t)sig, RUSK_RELAXED);
}

void drv_signals_install(void)
{
	/* No SA_RESTART: the main thread's sleep returns at once. SA_RESETHAND: a second
	 * signal kills, for a user who does not want to wait for the summary. */
	struct sigaction sa = {.sa_handler = on_stop_signal, .sa_flags = SA_RESETHAND};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int drv_stop_signal(void)
{
	return (int)rusk_load32(&stop_sig, RUSK_RELAXED);
}

void drv_fail(run *R, const char *what)
{
	uint32_t was = rusk_faa32(&R->fail, 1, RUSK_ACQ_REL);
	if (was == 0)
		fprintf(stderr, "rusk: out of memory %s: stopping the run\n", what);
	rusk_store32((uint32_t *)&R->stop, 1, RUSK_RELEASE);
}

_Noreturn void drv_oom_exit(const char *what)
{
	char msg[160];
	int n = snprintf(msg, sizeof msg, "rusk: out of memory %s: exiting\n", what);
	if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0)
		n = 0;
	_exit(RUSK_EXIT_NOMEM);
}

void drv_agent_params(const run *R, uint32_t index, rusk_agent_params *ap)
{
	const run_cfg *cfg = &R->cfg;
	const cli_agents ca = drv_cli_agents(cfg, R->seed);
	rusk_sync_params sp = cli_sync_params(&ca, rusk_cluster_partitions(R->c), R->t0);
	cli_agent_params(&ca, &sp, index, ap);
	ap->quality = cfg->quality;
	ap->latency_preferred = !cfg->latency_ignores_pref;
}

uint32_t drv_group_size(const run_cfg *cfg, int k)
{
	return (cfg->agents - (uint32_t)k + (uint32_t)cfg->n_groups - 1) / (uint32_t)cfg->n_groups;
}

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

static void json_hist(FILE *f, const char *name, const rusk_hist *h, bool last)
{
	fprintf(f,
	        "    \"%s\": {\"mean\": %.1f, \"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, "
	        "\"p999\": %.1f, \"max\": %.1f}%s\n",
	        name, rusk_hist_mean(h) / 1e3, rusk_hist_quantile(h, 0.5) / 1e3,
	        rusk_hist_quantile(h, 0.9) / 1e3, rusk_hist_quantile(h, 0.99) / 1e3,
	        rusk_hist_quantile(h, 0.999) / 1e3, h->max / 1e3, last ? "" : ",");
}

/* The trace replay's part of the JSON config: the file, what it holds, the scaling. */
static void json_trace(FILE *f, const run_cfg *c, size_t n_trace)
{
	fputs(", \"trace\": {\"path\": \"", f);
	for (const unsigned char *p = (const unsigned char *)c->trace_path; *p; p++)
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	fprintf(f,
	        "\", \"format\": \"%s\", \"tasks\": %zu, \"span_s\": %.6g, \"time_scale\": "
	        "%.6g, \"replicas\": %u, \"replayed_tasks\": %zu, \"replay_s\": %.6g",
	        c->trace_format == RUSK_TRACE_OPENB ? "openb" : "csv", c->trace_tasks,
	        c->trace_span_s, c->trace_scale, c->trace_replicas, n_trace, c->phase_s);
	if (c->rate_set)
		fprintf(f, ", \"rate_requested\": %.1f}", c->rate);
	else
		fputs(", \"rate_requested\": null}", f);
}

int drv_setup(run *R, cli_cluster *cc)
{
	run_cfg cfg = R->cfg;
	char err[1024]; /* a trace error names a path and may list the columns expected */
	R->out = stdout;
	if (cfg.quiet && (R->out = fopen("/dev/null", "w")) == NULL)
		R->out = stdout;
	char *trace_path = cfg.trace_path, *trace_note = cfg.trace_note;
	const size_t path_len = sizeof cfg.trace_path, note_len = sizeof cfg.trace_note;
	R->seed = cc->params.seed;
	if (cfg.trace != NULL) {
		if (strcmp(cfg.trace, "openb") == 0) {
			if (cli_openb_path("--trace", "openb_pod_list_default.csv", trace_path,
			                   path_len) != 0)
				return RUSK_EXIT_USAGE;
			if (cfg.trace_format < 0)
				cfg.trace_format = RUSK_TRACE_OPENB;
		} else {
			snprintf(trace_path, path_len, "%s", cfg.trace);
			if (cfg.trace_format < 0)
				cfg.trace_format = RUSK_TRACE_CSV;
		}
		rusk_arrival *raw;
		size_t n_raw;
		int trc = rusk_trace_load(trace_path, cfg.trace_format, &raw, &n_raw, err,
		                          sizeof err);
		if (trc != RUSK_OK) {
			fprintf(stderr, "rusk: --trace: %s\n", err);
			return trc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
		}
		double span = raw[n_raw - 1].t_s > 0 ? raw[n_raw - 1].t_s : 1.0;
		double run_s = cfg.n_phases * cfg.phase_s;
		double scale = cfg.time_scale > 0 ? cfg.time_scale : span / run_s;
		double natural = n_raw / (span / scale);
		uint32_t replicas = 1;
		if (cfg.rate_set && cfg.rate > natural) {
			double need = ceil(cfg.rate / natural);
			if (need * n_raw > 1e9) { /* also keeps the cast below in range */
				fprintf(stderr,
				        "rusk: --rate %g: the trace has %zu tasks at %.3g tasks/s; "
				        "%.3g copies would exceed 1e9 tasks\n",
				        cfg.rate, n_raw, natural, need);
				free(raw);
				return RUSK_EXIT_USAGE;
			}
			replicas = (uint32_t)need;
		}
		R->trace = rusk_trace_expand(raw, n_raw, scale, replicas, &R->n_trace);
		free(raw);
		if (R->trace == NULL) {
			fprintf(stderr, "rusk: --trace: out of memory expanding %zu tasks\n",
			        n_raw);
			return RUSK_EXIT_NOMEM;
		}
		cfg.trace_tasks = n_raw;
		cfg.trace_span_s = span;
		cfg.trace_scale = scale;
		cfg.trace_replicas = replicas;
		snprintf(trace_note, note_len,
		         "trace %s: %zu tasks over %.3g s; time scale 1/%.4g -> %.1f s; %u shifted "
		         "replica%s -> %zu tasks, %.0f tasks/s",
		         trace_path, n_raw, span, scale, span / scale, replicas,
		         replicas > 1 ? "s" : "", R->n_trace, R->n_trace / (span / scale));
		cfg.n_phases = 1;
		cfg.phases[0] = 100;
		/* Shifted copies end less than one mean gap after the span. */
		cfg.phase_s = fmax(span / scale, R->trace[R->n_trace - 1].t_s);
	}
	R->cfg = cfg;
	/* Outputs before the run: a path that cannot be written is refused now, not after
	 * the run (whose results would be lost). */
	if (cfg.json && (R->json = fopen(cfg.json, "w")) == NULL) {
		fprintf(stderr, "rusk: --json: %s: %s\n", cfg.json, strerror(errno));
		return RUSK_EXIT_USAGE;
	}
	if (cfg.csv && (R->csv = fopen(cfg.csv, "w")) == NULL) {
		fprintf(stderr, "rusk: --csv: %s: %s\n", cfg.csv, strerror(errno));
		return RUSK_EXIT_USAGE;
	}
	/* The opened files themselves: a symbolic or hard link to the other output is the
	 * same file, whatever its path (check_outputs compared paths only). */
	struct stat sj, sc;
	if (R->json != NULL && R->csv != NULL && fstat(fileno(R->json), &sj) == 0 &&
	    fstat(fileno(R->csv), &sc) == 0 && sj.st_dev == sc.st_dev && sj.st_ino == sc.st_ino &&
	    !S_ISCHR(sj.st_mode)) {
		fprintf(stderr, "rusk: --json %s and --csv %s name the same file\n", cfg.json,
		        cfg.csv);
		return RUSK_EXIT_USAGE;
	}
	double build_s;
	int brc = cli_cluster_build(cc, &R->c, &build_s);
	if (brc != RUSK_OK)
		return brc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
	if (R->trace != NULL &&
	    rusk_trace_check_preferred(R->trace, R->n_trace, rusk_cluster_machines(R->c),
	                               trace_path, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk: --trace: %s\n", err);
		return RUSK_EXIT_USAGE;
	}
	double expected = 0;
	for (int k = 0; k < cfg.n_groups; k++)
		for (int j = 0; j < cfg.gn_phases[k]; j++)
			expected += cfg.rate * drv_group_size(&cfg, k) / cfg.agents *
			            cfg.gphases[k][j] / 100.0 * cfg.phase_s;
	R->n_tasks_cap = (uint64_t)(expected * 1.1 + 1000);
	R->pool_cap = R->n_tasks_cap * cfg.task_rus;
	if (R->trace != NULL) {
		R->n_tasks_cap = R->n_trace;
		R->pool_cap = 0;
		for (size_t i = 0; i < R->n_trace; i++)
			R->pool_cap += R->trace[i].rus;
	}
	R->tasks = calloc(R->n_tasks_cap, sizeof *R->tasks);
	R->pool = calloc(R->pool_cap ? R->pool_cap : 1, sizeof *R->pool);
	R->ag = calloc(cfg.agents, sizeof *R->ag);
	uint32_t pref_per_task = R->trace != NULL ? RUSK_TRACE_MAX_PREF : cfg.preferred;
	if (pref_per_task > 0)
		R->pref_pool = calloc(R->n_tasks_cap * pref_per_task, sizeof *R->pref_pool);
	if (cfg.quality == RUSK_QUALITY_SCORE) {
		R->score_sorted = malloc(sizeof *R->score_sorted * rusk_cluster_rus(R->c));
		if (R->score_sorted != NULL) {
			for (uint32_t r = 0; r < rusk_cluster_rus(R->c); r++)
				R->score_sorted[r] =
				        (uint32_t)lround(rusk_ru_score(R->c, r) * 1000.0);
			qsort(R->score_sorted, rusk_cluster_rus(R->c), sizeof *R->score_sorted,
			      cmp_u32);
			/* Each RU's D bin once, so a placement's statistics cost a load. */
			R->ru_dbin = malloc(rusk_cluster_rus(R->c));
			for (uint32_t r = 0; R->ru_dbin != NULL && r < rusk_cluster_rus(R->c); r++)
				R->ru_dbin[r] = (uint8_t)d_bin(R, r);
		}
	}
	if (R->tasks == NULL || R->ag == NULL || R->pool == NULL ||
	    (pref_per_task > 0 && R->pref_pool == NULL) ||
	    (cfg.quality == RUSK_QUALITY_SCORE && R->ru_dbin == NULL)) {
		fprintf(stderr, "rusk: out of memory for %" PRIu64 " tasks\n", R->n_tasks_cap);
		return RUSK_EXIT_NOMEM;
	}
	uint32_t n_rus = rusk_cluster_rus(R->c);
	fprintf(R->out,
	        "rusk %s: %u machines, %u RUs, %u partitions; %u agents (%s sync, G = %" PRIu64
	        " ms, %s); base rate %.0f tasks/s,",
	        cfg.sim ? "sim" : "run", rusk_cluster_machines(R->c), n_rus,
	        rusk_cluster_partitions(R->c), cfg.agents, rusk_sync_policy_name(cfg.sync),
	        cfg.gap_ms, rusk_strategy_name(cfg.strategy), cfg.rate);
	fprintf(R->out, " phases");
	for (int k = 0; k < cfg.n_phases; k++)
		fprintf(R->out, "%s%.0f", k ? "," : " ", cfg.phases[k]);
	if (R->trace != NULL)
		fprintf(R->out, "%% x %.1f s; %s\n\n", cfg.phase_s, trace_note);
	else
		fprintf(R->out, "%% x %.1f s; tasks %s %.0f ms x %u RU\n\n", cfg.phase_s,
		        cfg.dist == 0   ? "exp"
		        : cfg.dist == 1 ? "lognormal"
		                        : "fixed",
		        cfg.task_ms, cfg.task_rus);
	fflush(R->out);

	if (cfg.admission) {
		rusk_admit_params ap;
		rusk_admit_params_init(&ap);
		ap.buckets = cfg.buckets;
		ap.seed = R->seed;
		int arc = rusk_admit_attach(R->c, &ap, &R->adm, err, sizeof err);
		if (arc != RUSK_OK) {
			fprintf(stderr, "rusk: --admission: %s\n", err);
			return arc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
		}
	}
	if (R->csv)
		fprintf(R->csv,
		        "second,phase,submitted,placed,throughput,rejected,backlog,utilization,"
		        "conflicts,delay_p10_us,delay_p50_us,delay_p90_us,delay_p99_us,"
		        "quality_mean,agent_median_p10_us,agent_median_p50_us,"
		        "agent_median_p90_us,preferred_share,quality_mode_share\n");
	R->per_agent = calloc(cfg.agents, sizeof *R->per_agent);
	R->snap = calloc(4, sizeof *R->snap);
	R->medians = calloc(cfg.agents, sizeof *R->medians);
	if (R->per_agent == NULL || R->snap == NULL || R->medians == NULL) {
		fprintf(stderr, "rusk: out of memory\n");
		return RUSK_EXIT_NOMEM;
	}
	for (uint32_t i = 0; i < cfg.agents; i++) {
		R->ag[i].index = i;
		R->ag[i].run = R;
		rusk_rng_seed(&R->ag[i].prng, R->seed, 0x76696374ull + i); /* "vict" */
	}
	return 0;
}

void drv_gen_init(run *R, drv_gen *G)
{
	const run_cfg *cfg = &R->cfg;
	memset(G, 0, sizeof *G);
	for (int k = 0; k < cfg->n_groups; k++) {
		uint32_t members = G->members[k] = drv_group_size(cfg, k);
		rusk_loadgen_init(&G->g[k], cfg->rate * members / cfg->agents, cfg->gphases[k],
		                  cfg->gn_phases[k], cfg->phase_s, cfg->dist, cfg->task_ms / 1000.0,
		                  cfg->task_rus, R->seed + (uint64_t)k * 7919);
		G->live[k] = members > 0 && rusk_loadgen_next(&G->g[k], &G->next[k]) == 0;
	}
	/* Preferences, profiles and priorities: their own stream of the same seed. */
	rusk_rng_seed(&G->prng, R->seed, 0x70726566);
}

bool drv_gen_next(run *R, drv_gen *G, rusk_arrival *x, int *grp)
{
	*grp = 0;
	if (R->trace != NULL) {
		if (G->ti == R->n_trace)
			return false;
		*x = R->trace[G->ti++];
		return true;
	}
	int g = -1;
	for (int k = 0; k < R->cfg.n_groups; k++)
		if (G->live[k] && (g < 0 || G->next[k].t_s < G->next[g].t_s))
			g = k;
	if (g < 0)
		return false;
	*x = G->next[g];
	G->live[g] = rusk_loadgen_next(&G->g[g], &G->next[g]) == 0;
	*grp = g;
	return true;
}

run_task *drv_gen_task(run *R, drv_gen *G, const rusk_arrival *x, int grp, uint64_t submit_ns,
                       run_agent **dest)
{
	const run_cfg *cfg = &R->cfg;
	if (x->rus > rusk_cluster_rus(R->c)) {
		/* The kernel refuses it (rusk_agent_place: RUSK_EINFEASIBLE); queued, it would
		 * be retried until the run ends. */
		R->rej_too_large++;
		return NULL;
	}
	if (G->id >= R->n_tasks_cap || G->pool_used + x->rus > R->pool_cap) {
		R->rej_pool++;
		return NULL;
	}
	uint64_t id = G->id++;
	run_task *tk = &R->tasks[id];
	tk->id = id + 1;
	tk->submit_ns = submit_ns;
	tk->dur_ns = (uint64_t)(x->duration_s * 1e9);
	tk->rus = (uint16_t)x->rus;
	tk->l = R->pool + G->pool_used;
	G->pool_used += x->rus;
	if (R->trace != NULL && x->n_pref > 0) {
		tk->pref = R->pref_pool + id * RUSK_TRACE_MAX_PREF;
		tk->n_pref = x->n_pref;
		memcpy(tk->pref, x->pref, sizeof *tk->pref * x->n_pref);
	} else if (cfg->preferred > 0) {
		tk->pref = R->pref_pool + id * cfg->preferred;
		tk->n_pref = (uint8_t)cfg->preferred;
		for (uint32_t k = 0; k < cfg->preferred; k++)
			tk->pref[k] = rusk_rng_below(&G->prng, rusk_cluster_machines(R->c));
	}
	if (cfg->quality == RUSK_QUALITY_INTERFERENCE)
		for (int k = 0; k < RUSK_N_RESOURCES; k++)
			tk->prof.c[k] = (uint8_t)rusk_rng_below(&G->prng, 100);
	tk->prio = x->priority;
	if (cfg->priority_share > 0 && rusk_rng_unit(&G->prng) < cfg->priority_share)
		tk->prio = 1;
	/* round robin over the group's agents: grp, grp + n_groups, ... */
	uint32_t i = G->rr[grp]++;
	if (G->rr[grp] == G->members[grp])
		G->rr[grp] = 0;
	*dest = &R->ag[grp + i * (uint32_t)cfg->n_groups];
	return tk;
}

/* ---- agent-local queues ------------------------------------------------------------------ */

void tq_grow(tq *q)
{
	size_t nc = q->cap ? q->cap * 2 : 1024;
	run_task **na = malloc(nc * sizeof *na);
	if (na == NULL) /* a task with nowhere to go: losing it would break the accounting */
		drv_oom_exit("growing an agent's queue");
	for (size_t i = 0; i < q->n; i++)
		na[i] = q->a[(q->head + i) & (q->cap - 1)];
	free(q->a);
	q->a = na;
	q->head = 0;
	q->cap = nc;
}

run_task *drv_next(run_agent *a, uint64_t now, size_t *retries)
{
	run_task *t = tq_pop(&a->hi);
	if (t != NULL)
		return t;
	if (*retries > 0 && a->retry.n > 0) {
		(*retries)--;
		return tq_pop(&a->retry);
	}
	if (a->wait.n > 0 && a->wait.a[0]->ready_ns <= now)
		return wait_heap_pop(&a->wait);
	return tq_pop(&a->lo);
}

uint64_t drv_next_wake(const run_agent *a)
{
	return a->wait.n > 0 ? a->wait.a[0]->ready_ns : UINT64_MAX;
}

size_t drv_queued(const run_agent *a)
{
	return a->hi.n + a->retry.n + a->lo.n + a->wait.n;
}

static uint64_t tq_fitting(const tq *q, uint64_t free_rus)
{
	uint64_t n = 0;
	for (size_t k = 0; k < q->n; k++) {
		const run_task *t = q->a[(q->head + k) & (q->cap - 1)];
		n += (uint64_t)(t->rus - t->placed) <= free_rus;
	}
	return n;
}

uint64_t drv_placeable(const run_agent *a, uint64_t free_rus)
{
	uint64_t n = tq_fitting(&a->hi, free_rus) + tq_fitting(&a->retry, free_rus) +
	             tq_fitting(&a->lo, free_rus);
	for (size_t k = 0; k < a->wait.n; k++)
		n += (uint64_t)(a->wait.a[k]->rus - a->wait.a[k]->placed) <= free_rus;
	return n;
}

bool drv_admit_check(run *R, run_agent *a, run_task *tk, uint64_t now)
{
	rusk_task t = drv_task(R, tk);
	rusk_admit_decision d;
	uint64_t waited = tk->wait_from_ns ? now - tk->wait_from_ns : 0;
	if (rusk_admit_check(R->adm, &t, R->cfg.quality, waited, &d) != RUSK_OK ||
	    d.verdict == RUSK_ADMIT_NOW) {
		tk->admitted = true;
		if (tk->wait_from_ns != 0) {
			rusk_hist_record(&a->st.admission, waited);
			stat_add(&a->st.adm_waited, 1);
			stat_add(&a->st.adm_bound, d.reason == RUSK_ADMIT_BOUND);
		}
		return true;
	}
	if (tk->wait_from_ns == 0)
		tk->wait_from_ns = now;
	tk->ready_ns = now + d.wait_ns;
	wait_heap_push(&a->wait, tk);
	return false;
}

rusk_task drv_task(const run *R, const run_task *tk)
{
	rusk_task t = {.id = tk->id,
	               .rus = (uint32_t)(tk->rus - tk->placed),
	               .gang = R->cfg.gang,
	               .priority = tk->prio,
	               .profile = tk->prof,
	               .preferred = tk->pref,
	               .n_preferred = tk->n_pref,
	               .submit_ns = tk->submit_ns};
	return t;
}

uint32_t drv_tenure(const run_task *tk)
{
	return (uint32_t)(rusk_load64((uint64_t *)&tk->st, RUSK_ACQUIRE) >> 2);
}

bool drv_placed(run *R, run_agent *a, rusk_agent *ag, run_task *tk, const rusk_placement *pl,
                uint64_t t_deq, uint64_t t_done)
{
	agent_stats *s = &a->st;
	if (R->ru_dbin != NULL)
		for (uint32_t k = 0; k < pl->placed; k++)
			stat_add(&s->d_bins[R->ru_dbin[tk->l[tk->placed + k].ru]], 1);
	tk->placed = (uint16_t)(tk->placed + pl->placed);
	stat_add(&s->rus_placed, pl->placed);
	stat_add(&s->r_sum, pl->sample_size);
	if (pl->sample_size > s->r_max)
		rusk_store64(&s->r_max, pl->sample_size, RUSK_RELAXED);
	stat_add(&s->q_micro, (uint64_t)(pl->quality * 1e6));
	stat_add(&s->pref_tasks, pl->placed > 0 && pl->preferred == pl->placed);
	rusk_hist_record(&s->place, t_done - t_deq);
	rusk_hist_record(&s->sample, pl->sample_ns);
	rusk_hist_record(&s->commit, pl->commit_ns);
	rusk_hist_record(&s->stale, pl->staleness_ns);
	if (tk->placed < tk->rus) {
		/* Incremental: it keeps what it won and waits for the rest. */
		tq_push(&a->retry, tk, false);
		return false;
	}
	uint64_t from = tk->requeue_ns ? tk->requeue_ns : tk->submit_ns;
	uint64_t delay = t_done - from;
	rusk_hist_record(tk->prio > 0 ? &s->delay_hi : &s->delay_lo, delay);
	rusk_agent_observe_delay(ag, delay);
	stat_add(&s->placed, 1);
	stat_add(&s->qmode_tasks, pl->strategy == RUSK_STRATEGY_QUALITY);
	stat_add(&s->placed_hi, tk->prio > 0);
	uint64_t dur = tk->dur_ns;
	if (R->cfg.alpha > 0 && tk->n_pref > 0 && pl->preferred == pl->placed)
		dur = (uint64_t)(dur * R->cfg.alpha); /* ParSync Table 1: preferred is faster */
	stat_add(&s->tet_us, dur / 1000);
	if (t_done > s->last_done_ns)
		rusk_store64(&s->last_done_ns, t_done, RUSK_RELAXED);
	/* Atomic: a completer may still read the end of a preempted earlier tenure. */
	rusk_store64(&tk->end_ns, t_done + dur, RUSK_RELAXED);
	/* Release: the leases and end time above are visible to whoever acquires RUNNING
	 * (the completer, or a preempting agent). */
	uint64_t tenure = rusk_load64(&tk->st, RUSK_RELAXED) >> 2;
	rusk_store64(&tk->st, tenure << 2 | TS_RUNNING, RUSK_RELEASE);
	return true;
}

void drv_gave_back(run_agent *a, run_task *tk)
{
	stat_add(&a->st.requeued, 1);
	tq_push(tk->prio > 0 ? &a->hi : &a->retry, tk, false);
}

uint32_t drv_preempt(run *R, run_agent *a, rusk_view *v, const run_task *tk, uint64_t now)
{
	uint32_t need = (uint32_t)(tk->rus - tk->placed), freed = 0;
	uint32_t n_rus = rusk_cluster_rus(R->c);
	/* Preempt only where the agent knows of no room: a multi-RU choice can fail on a
	 * view with room (placement constraints, a stale partition), and evicting running
	 * tasks then would not make room where the agent looks. */
	uint64_t view_free = 0;
	for (uint32_t p = 0; p < rusk_cluster_partitions(R->c); p++)
		view_free += rusk_view_free(v, p);
	if (view_free >= need)
		return 0;
	/* Victims are found where they hold RUs: a bounded sample of the master array, drawn
	 * from a stream of the agent's own (deterministic in the simulator). */
	for (uint32_t probe = 0; probe < 64 * need && freed < need; probe++) {
		uint32_t ru = rusk_rng_below(&a->prng, n_rus);
		rusk_ru_info info;
		if (rusk_ru_state(R->c, ru, &info) != RUSK_OK || info.owner == 0 ||
		    info.owner == RUSK_OWNER_NONE || info.owner > R->n_tasks_cap)
			continue;
		run_task *vt = &R->tasks[info.owner - 1];
		/* Acquire: pairs with drv_placed's release; only then are its fields ours to
		 * read (it may never have reached this agent). */
		uint64_t st = rusk_load64(&vt->st, RUSK_ACQUIRE);
		if ((st & 3) != TS_RUNNING || vt->prio > 0)
			continue;
		/* Acq_rel: wins the tenure against the completer's CAS (drv_complete). */
		if (!rusk_cas64(&vt->st, &st, ((st >> 2) + 1) << 2 | TS_QUEUED, RUSK_ACQ_REL))
			continue;
		size_t rejected = 0;
		drv_release(R, vt, &rejected);
		for (uint32_t k = 0; k < vt->placed; k++)
			rusk_view_mark_free(v, vt->l[k].ru);
		freed += vt->placed;
		vt->placed = 0;
		vt->requeue_ns = now;
		stat_add(&a->st.preempted, 1);
		tq_push(&a->retry, vt, true);
	}
	if (freed > 0)
		stat_add(&a->st.preemptions, 1);
	return freed;
}

int drv_release(run *R, const run_task *tk, size_t *rejected)
{
	return rusk_agent_release(R->ag[0].handle, tk->id, tk->l, tk->placed, rejected);
}

bool drv_complete(run *R, run_task *tk, uint32_t tenure)
{
	uint64_t st = (uint64_t)tenure << 2 | TS_RUNNING;
	/* Acq_rel: pairs with drv_placed's release store and a preemptor's CAS. */
	if (!rusk_cas64(&tk->st, &st, (uint64_t)tenure << 2 | TS_DONE, RUSK_ACQ_REL))
		return false;
	if (drv_release(R, tk, NULL) == RUSK_OK)
		stat_add(&R->released, 1);
	return true;
}

void drv_agent_drain(run *R, run_agent *a)
{
	/* Whatever is still queued stays counted as backlog; an incremental task that holds
	 * part of its RUs gives them back. */
	run_task *t;
	tq *qs[] = {&a->hi, &a->retry, &a->lo};
	a->n_left = drv_queued(a);
	for (int i = 0; i < 3; i++)
		for (size_t k = 0; k < qs[i]->n; k++) {
			t = qs[i]->a[(qs[i]->head + k) & (qs[i]->cap - 1)];
			if (t->placed > 0 &&
			    (rusk_load64(&t->st, RUSK_RELAXED) & 3) != TS_RUNNING) {
				drv_release(R, t, NULL);
				t->placed = 0;
			}
		}
	free(a->hi.a);
	free(a->retry.a);
	free(a->lo.a);
	free(a->wait.a);
}

/* ---- per-second series -------------------------------------------------------------------- */

void drv_util_sample(run *R)
{
	R->util_acc += 1.0 - (double)rusk_cluster_free_rus(R->c) / rusk_cluster_rus(R->c);
	R->util_n++;
}

uint64_t drv_second(run *R, bool tty)
{
	const run_cfg *cfg = &R->cfg;
	uint32_t n_rus = rusk_cluster_rus(R->c);
	rusk_hist *cur = &R->snap[2], *d = &R->snap[3], *snap = &R->snap[0], *one = &R->snap[1];
	R->secs++;
	memset(cur, 0, sizeof *cur);
	uint64_t placed = 0, conf = 0, preempted = 0, q_micro = 0, refused = 0, pref = 0, qmode = 0;
	for (uint32_t i = 0; i < cfg->agents; i++) {
		drv_delay_merge(cur, &R->ag[i].st);
		refused += rusk_load64(&R->ag[i].st.refused, RUSK_RELAXED);
		pref += rusk_load64(&R->ag[i].st.pref_tasks, RUSK_RELAXED);
		qmode += rusk_load64(&R->ag[i].st.qmode_tasks, RUSK_RELAXED);
		placed += rusk_load64(&R->ag[i].st.placed, RUSK_RELAXED);
		conf += rusk_load64(&R->ag[i].st.conflicts, RUSK_RELAXED);
		preempted += rusk_load64(&R->ag[i].st.preempted, RUSK_RELAXED);
		q_micro += rusk_load64(&R->ag[i].st.q_micro, RUSK_RELAXED);
	}
	rusk_hist_diff(d, cur, &R->prev);
	/* Each agent's median delay this second; their 10/50/90th percentiles across agents
	 * show how evenly agents fare (ParSync Figs. 6-8 bands). */
	uint32_t n_med = 0;
	for (uint32_t i = 0; i < cfg->agents; i++) {
		memset(snap, 0, sizeof *snap);
		drv_delay_merge(snap, &R->ag[i].st);
		rusk_hist_diff(one, snap, &R->per_agent[i]);
		R->per_agent[i] = *snap;
		if (rusk_hist_count(one) > 0)
			R->medians[n_med++] = (double)rusk_hist_quantile(one, 0.5);
	}
	qsort(R->medians, n_med, sizeof *R->medians, cmp_double);
	R->prev = *cur;
	uint64_t sub = rusk_load64(&R->submitted, RUSK_RELAXED);
	uint64_t rej = rusk_load64(&R->rejected, RUSK_RELAXED) + refused;
	uint64_t backlog = sub - rej - (placed - preempted);
	double util = R->util_n > 0 ? R->util_acc / R->util_n
	                            : 1.0 - (double)rusk_cluster_free_rus(R->c) / n_rus;
	R->util_acc = 0;
	R->util_n = 0;
	R->util_sum += util;
	uint64_t tput = placed - R->prev_placed;
	if (tput > R->max_tput)
		R->max_tput = tput;
	if (R->csv) {
		int phase = (int)((R->secs - 0.5) / cfg->phase_s);
		const double *m = R->medians;
		fprintf(R->csv,
		        "%d,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		        ",%.4f,%" PRIu64 ",%.1f,%.1f,%.1f,%.1f,%.4f,%.1f,%.1f,%.1f,%.4f,%.4f\n",
		        R->secs, phase < cfg->n_phases ? phase : cfg->n_phases, sub, placed, tput,
		        rej, backlog, util, conf - R->prev_conf, rusk_hist_quantile(d, 0.1) / 1e3,
		        rusk_hist_quantile(d, 0.5) / 1e3, rusk_hist_quantile(d, 0.9) / 1e3,
		        rusk_hist_quantile(d, 0.99) / 1e3,
		        tput ? (q_micro - R->prev_q) / 1e6 / tput : 0.0,
		        n_med ? m[(size_t)(0.1 * (n_med - 1))] / 1e3 : 0.0,
		        n_med ? m[(size_t)(0.5 * (n_med - 1))] / 1e3 : 0.0,
		        n_med ? m[(size_t)(0.9 * (n_med - 1))] / 1e3 : 0.0,
		        tput ? (double)(pref - R->prev_pref) / tput : 0.0,
		        tput ? (double)(qmode - R->prev_qmode) / tput : 0.0);
		fflush(R->csv); /* a row a second: what ran is on disk whatever ends the run */
	}
	R->prev_q = q_micro;
	R->prev_pref = pref;
	R->prev_qmode = qmode;
	if (tty)
		fprintf(stderr,
		        "\r  %3d s  %8" PRIu64 " tasks/s  util %5.1f%%  backlog %" PRIu64 "   ",
		        R->secs, tput, util * 100, backlog);
	R->prev_placed = placed;
	R->prev_conf = conf;
	/* Admission history: the previous window plus this one (rusk_admit_roll). */
	if (R->adm != NULL && R->secs % 10 == 0)
		rusk_admit_roll(R->adm);
	return backlog;
}

/* ---- summary -------------------------------------------------------------------------------- */

int drv_report(run *R, bool interrupted)
{
	const run_cfg *cfg = &R->cfg;
	/* Static, not on the stack: its histograms are half a megabyte, and under a memory
	 * limit the main thread's stack could not grow by that much (the report of a run
	 * stopped for want of memory crashed here). One report per process, main thread. */
	static agent_stats tot;
	memset(&tot, 0, sizeof tot);
	int status = 0;
	uint64_t left = 0;
	char err[256];
	uint32_t n_rus = rusk_cluster_rus(R->c);
	for (uint32_t i = 0; i < R->cfg.agents; i++) {
		agent_stats *s = &R->ag[i].st;
		if (R->ag[i].err != RUSK_OK)
			status = RUSK_EXIT_FAIL;
		tot.placed += s->placed;
		tot.conflicts += s->conflicts;
		tot.rus_lost += s->rus_lost;
		tot.attempts += s->attempts;
		tot.requeued += s->requeued;
		tot.r_sum += s->r_sum;
		tot.rus_placed += s->rus_placed;
		tot.q_micro += s->q_micro;
		tot.pref_tasks += s->pref_tasks;
		tot.preempted += s->preempted;
		tot.preemptions += s->preemptions;
		tot.adm_waited += s->adm_waited;
		tot.adm_bound += s->adm_bound;
		tot.placed_hi += s->placed_hi;
		tot.refused += s->refused;
		tot.qmode_tasks += s->qmode_tasks;
		tot.tet_us += s->tet_us;
		if (s->last_done_ns > tot.last_done_ns)
			tot.last_done_ns = s->last_done_ns;
		if (s->r_max > tot.r_max)
			tot.r_max = s->r_max;
		left += R->ag[i].n_left;
		rusk_hist_merge(&tot.admission, &s->admission);
		rusk_hist_merge(&tot.delay_hi, &s->delay_hi);
		rusk_hist_merge(&tot.delay_lo, &s->delay_lo);
		for (int k = 0; k < D_BINS; k++)
			tot.d_bins[k] += s->d_bins[k];
		rusk_hist_merge(&tot.stale, &s->stale);
		rusk_hist_merge(&tot.sample, &s->sample);
		rusk_hist_merge(&tot.commit, &s->commit);
		drv_delay_merge(&tot.delay, s);
		rusk_hist_merge(&tot.queue, &s->queue);
		rusk_hist_merge(&tot.place, &s->place);
	}
	/* Each side counted on its own: the agents' leftovers, the completer's releases. */
	uint64_t sub = R->submitted, rej = R->rejected + tot.refused, backlog = left;
	/* Why tasks were rejected: the generator counts its own reasons, agents theirs. */
	uint64_t rej_queue = R->rejected - R->rej_too_large - R->rej_pool;
	int sig = drv_stop_signal();
	const char *end = R->fail          ? "out of memory"
	                  : !interrupted   ? "completed"
	                  : sig == SIGTERM ? "SIGTERM"
	                  : sig == SIGINT  ? "SIGINT"
	                                   : "interrupted";
	uint64_t runs = tot.placed - tot.preempted; /* placements that ran to the end */
	bool adds_up = sub == runs + rej + backlog && R->released == runs;
	int vrc = rusk_cluster_verify(R->c, err, sizeof err);
	bool all_free = rusk_cluster_free_rus(R->c) == n_rus;
	double elapsed = R->elapsed_s > 0 ? R->elapsed_s : 1;

	fprintf(R->out,
	        "  %-28s %" PRIu64 " submitted, %" PRIu64 " placed, %" PRIu64 " rejected, %" PRIu64
	        " queued at the end%s%s%s\n",
	        "tasks", sub, tot.placed, rej, backlog, interrupted || R->fail ? " (stopped: " : "",
	        interrupted || R->fail ? end : "", interrupted || R->fail ? ")" : "");
	if (rej > 0) {
		/* The reasons that occurred, e.g. "12 larger than the cluster (800 RUs)". */
		char why[256], *p = why;
		const uint64_t n[] = {R->rej_too_large, tot.refused, rej_queue, R->rej_pool};
		const char *what[] = {"larger than the cluster", "refused by the kernel",
		                      "agent queue full", "task pool full"};
		why[0] = '\0';
		for (int k = 0; k < 4; k++)
			if (n[k] > 0)
				p += snprintf(p, (size_t)(why + sizeof why - p), "%s%" PRIu64 " %s",
				              p == why ? "" : ", ", n[k], what[k]);
		fprintf(R->out, "  %-28s %s (cluster: %u RUs)\n", "  rejected", why, n_rus);
	}
	fprintf(R->out, "  %-28s %.0f tasks/s mean, %" PRIu64 " max (1 s windows)\n", "throughput",
	        tot.placed / elapsed, R->max_tput);
	fprintf(R->out, "  %-28s mean %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
	        "scheduling delay (us)", rusk_hist_mean(&tot.delay) / 1e3,
	        rusk_hist_quantile(&tot.delay, 0.5) / 1e3,
	        rusk_hist_quantile(&tot.delay, 0.9) / 1e3,
	        rusk_hist_quantile(&tot.delay, 0.99) / 1e3,
	        rusk_hist_quantile(&tot.delay, 0.999) / 1e3, tot.delay.max / 1e3);
	fprintf(R->out,
	        "  %-28s queue p50 %.1f p99 %.1f; sample p50 %.2f p99 %.2f; commit p50 %.2f "
	        "p99 %.2f\n",
	        "  of which (us)", rusk_hist_quantile(&tot.queue, 0.5) / 1e3,
	        rusk_hist_quantile(&tot.queue, 0.99) / 1e3,
	        rusk_hist_quantile(&tot.sample, 0.5) / 1e3,
	        rusk_hist_quantile(&tot.sample, 0.99) / 1e3,
	        rusk_hist_quantile(&tot.commit, 0.5) / 1e3,
	        rusk_hist_quantile(&tot.commit, 0.99) / 1e3);
	if (cfg->admission)
		fprintf(R->out,
		        "  %-28s %" PRIu64 " tasks waited (%" PRIu64
		        " admitted at the mu + 2 sigma bound); wait p50 %.1f us, p99 %.1f us, "
		        "max %.1f us\n",
		        "admission control", tot.adm_waited, tot.adm_bound,
		        rusk_hist_quantile(&tot.admission, 0.5) / 1e3,
		        rusk_hist_quantile(&tot.admission, 0.99) / 1e3, tot.admission.max / 1e3);
	if (tot.placed_hi > 0 || tot.preempted > 0)
		fprintf(R->out,
		        "  %-28s high %" PRIu64 " placed, delay p50 %.1f p99 %.1f us; normal p50 "
		        "%.1f p99 %.1f us; %" PRIu64 " preempted (all re-queued)\n",
		        "priorities", tot.placed_hi, rusk_hist_quantile(&tot.delay_hi, 0.5) / 1e3,
		        rusk_hist_quantile(&tot.delay_hi, 0.99) / 1e3,
		        rusk_hist_quantile(&tot.delay_lo, 0.5) / 1e3,
		        rusk_hist_quantile(&tot.delay_lo, 0.99) / 1e3, tot.preempted);
	/* One unit for the share: commit attempts that lost at least one RU, of all commit
	 * attempts (a multi-RU commit can lose several RUs: those are counted apart). */
	fprintf(R->out,
	        "  %-28s %" PRIu64 " commits lost RUs (%.3f per task, %.2f%% of %" PRIu64
	        " commits), %" PRIu64 " RUs lost; %" PRIu64 " re-queued\n",
	        "conflicts", tot.conflicts, tot.placed ? (double)tot.conflicts / tot.placed : 0.0,
	        tot.attempts ? 100.0 * tot.conflicts / tot.attempts : 0.0, tot.attempts,
	        tot.rus_lost, tot.requeued);
	double q_mean = tot.placed ? tot.q_micro / 1e6 / tot.placed : 0.0;
	double pref_frac = tot.placed ? (double)tot.pref_tasks / tot.placed : 0.0;
	uint64_t d_total = 0;
	for (int k = 0; k < D_BINS; k++)
		d_total += tot.d_bins[k];
	fprintf(R->out,
	        "  %-28s R %.1f per decision (max %" PRIu64
	        "); staleness mean %.1f ms, p99 %.1f ms\n",
	        "sampling", tot.placed ? (double)tot.r_sum / tot.placed : 0.0, tot.r_max,
	        rusk_hist_mean(&tot.stale) / 1e6, rusk_hist_quantile(&tot.stale, 0.99) / 1e6);
	fprintf(R->out, "  %-28s %s %.3f", "quality",
	        R->cfg.quality == RUSK_QUALITY_SCORE ? "mean slot score" : "mean Tarcil Q", q_mean);
	if (R->cfg.preferred > 0)
		fprintf(R->out, ", %.1f%% of tasks on preferred machines", 100.0 * pref_frac);
	if (d_total > 0) {
		uint64_t top = tot.d_bins[D_BINS - 1] + tot.d_bins[D_BINS - 2];
		fprintf(R->out, ", %.1f%% of RUs in the top 20%% (D >= 0.8)",
		        100.0 * top / d_total);
	}
	fprintf(R->out, "\n");
	fprintf(R->out, "  %-28s %.1f%% mean over the run\n", "utilization",
	        100.0 * R->util_sum / (R->secs ? R->secs : 1));
	uint64_t syncs = 0, sync_ns = 0;
	double busy = 0;
	for (uint32_t i = 0; i < R->cfg.agents; i++) {
		syncs += R->ag[i].vs.syncs;
		sync_ns += R->ag[i].vs.sync_ns;
		busy += R->ag[i].busy_s;
	}
	if (cfg->sim)
		fprintf(R->out,
		        "  %-28s %" PRIu64 " partition syncs; agents busy %.1f%% of the time\n",
		        "view syncs", syncs, 100.0 * busy / (elapsed * cfg->agents));
	else
		fprintf(R->out,
		        "  %-28s %" PRIu64 " partition syncs, %.3f s (%.1f%% of the agents' CPU "
		        "time)\n",
		        "view syncs", syncs, sync_ns / 1e9,
		        busy > 0 ? 100.0 * sync_ns / 1e9 / busy : 0.0);
	rusk_hist *gh = calloc(1, sizeof *gh);
	for (int k = 0; R->cfg.n_groups > 1 && gh != NULL && k < R->cfg.n_groups; k++) {
		memset(gh, 0, sizeof *gh);
		uint64_t gq = 0, gp = 0;
		for (uint32_t i = (uint32_t)k; i < R->cfg.agents; i += (uint32_t)R->cfg.n_groups) {
			drv_delay_merge(gh, &R->ag[i].st);
			gq += R->ag[i].st.q_micro;
			gp += R->ag[i].st.placed;
		}
		char label[32];
		snprintf(label, sizeof label, "group %c (%u agents)", 'A' + k,
		         drv_group_size(cfg, k));
		fprintf(R->out,
		        "  %-28s %" PRIu64
		        " placed, delay p50 %.1f us, p99 %.1f us, quality %.3f\n",
		        label, gp, rusk_hist_quantile(gh, 0.5) / 1e3,
		        rusk_hist_quantile(gh, 0.99) / 1e3, gp ? gq / 1e6 / gp : 0.0);
	}
	free(gh);
	/* Tasks that fit left queued while the cluster sat idle at the end: the scheduler
	 * stopped trying (an interrupted run may stop anywhere). */
	uint64_t stuck = interrupted ? 0 : R->stuck;
	fprintf(R->out, "  %-28s %s; counts add up: %s; all RUs free after the run: %s", "checks",
	        vrc == RUSK_OK ? "counters consistent" : err, adds_up ? "yes" : "NO",
	        all_free ? "yes" : "NO");
	if (stuck > 0)
		fprintf(R->out, "; NO: %" PRIu64 " tasks that fit left queued on an idle cluster",
		        stuck);
	fprintf(R->out, "\n");
	if (vrc != RUSK_OK || !adds_up || !all_free || stuck > 0)
		status = RUSK_EXIT_FAIL;
	fflush(R->out); /* the summary is out before the teardown (RCU barrier, frees) */

	if (R->json) {
		FILE *f = R->json;
		R->json = NULL;
		char qbuf[32];
		snprintf(qbuf, sizeof qbuf, "%.4f", q_mean);
		{
			/* A trace run reports the trace and its scaling; the generator's rate and
			 * task shape do not apply (null). */
			bool tr = R->trace != NULL;
			char rate[32] = "null", task_ms[32] = "null", task_rus[16] = "null";
			if (!tr) {
				snprintf(rate, sizeof rate, "%.1f", R->cfg.rate);
				snprintf(task_ms, sizeof task_ms, "%.1f", R->cfg.task_ms);
				snprintf(task_rus, sizeof task_rus, "%u", R->cfg.task_rus);
			}
			fprintf(f,
			        "{\n  \"config\": {\"machines\": %u, \"rus\": %u, \"partitions\": "
			        "%u, "
			        "\"agents\": %u, \"sync\": \"%s\", \"gap_ms\": %" PRIu64
			        ", \"strategy\": \"%s\", \"sample\": %" PRIu64 ", \"rate\": %s, "
			        "\"phase_s\": %.3f, \"phases\": [",
			        rusk_cluster_machines(R->c), n_rus, rusk_cluster_partitions(R->c),
			        R->cfg.agents, rusk_sync_policy_name(R->cfg.sync), R->cfg.gap_ms,
			        rusk_strategy_name(R->cfg.strategy), R->cfg.sample, rate,
			        R->cfg.phase_s);
			for (int k = 0; k < R->cfg.n_phases; k++)
				fprintf(f, "%s%.1f", k ? ", " : "", R->cfg.phases[k]);
			fprintf(f,
			        "], \"task_ms\": %s, \"task_rus\": %s, \"seed\": %" PRIu64
			        ", \"admission\": %s, \"buckets\": %u, \"priority_share\": %.4f, "
			        "\"gang\": %s",
			        task_ms, task_rus, R->seed, R->cfg.admission ? "true" : "false",
			        R->cfg.buckets, R->cfg.priority_share,
			        R->cfg.gang ? "true" : "false");
			if (tr)
				json_trace(f, &R->cfg, R->n_trace);
			if (R->cfg.sim)
				fprintf(f,
				        ", \"decision_us\": %.3f, \"sync_latency_us\": %.3f, "
				        "\"commit_latency_us\": %.3f",
				        R->cfg.decision_us, R->cfg.sync_latency_us,
				        R->cfg.commit_latency_us);
			fprintf(f, "},\n");
			fprintf(f,
			        "  \"run\": {\"end\": \"%s\", \"interrupted\": %s, \"elapsed_s\": "
			        "%.3f},\n",
			        end, interrupted ? "true" : "false", R->elapsed_s);
			fprintf(f,
			        "  \"tasks\": {\"submitted\": %" PRIu64 ", \"committed\": %" PRIu64
			        ", \"rejected\": %" PRIu64 ", \"backlog_end\": %" PRIu64
			        ", \"preempted\": %" PRIu64 ", \"high_priority_placed\": %" PRIu64
			        ",\n    \"rejected_reasons\": {\"too_large\": %" PRIu64
			        ", \"refused\": %" PRIu64 ", \"queue_full\": %" PRIu64
			        ", \"pool_full\": %" PRIu64 "}},\n",
			        sub, tot.placed, rej, backlog, tot.preempted, tot.placed_hi,
			        R->rej_too_large, tot.refused, rej_queue, R->rej_pool);
			fprintf(f,
			        "  \"throughput_per_s\": {\"mean\": %.1f, \"max\": %" PRIu64 "},\n",
			        tot.placed / elapsed, R->max_tput);
			fprintf(f,
			        "  \"delay_us\": {\"mean\": %.1f, \"p50\": %.1f, \"p90\": %.1f, "
			        "\"p95\": %.1f, \"p99\": %.1f, \"p999\": %.1f, \"max\": %.1f},\n",
			        rusk_hist_mean(&tot.delay) / 1e3,
			        rusk_hist_quantile(&tot.delay, 0.5) / 1e3,
			        rusk_hist_quantile(&tot.delay, 0.9) / 1e3,
			        rusk_hist_quantile(&tot.delay, 0.95) / 1e3,
			        rusk_hist_quantile(&tot.delay, 0.99) / 1e3,
			        rusk_hist_quantile(&tot.delay, 0.999) / 1e3, tot.delay.max / 1e3);
			fprintf(f,
			        "  \"conflicts\": {\"unit\": \"commit attempts that lost at "
			        "least one RU\", \"total\": %" PRIu64 ", \"attempts\": %" PRIu64
			        ", \"rate\": %.6f, \"per_task_mean\": %.6f, \"rus_lost\": %" PRIu64
			        ", \"requeued\": %" PRIu64 "},\n",
			        tot.conflicts, tot.attempts,
			        tot.attempts ? (double)tot.conflicts / tot.attempts : 0.0,
			        tot.placed ? (double)tot.conflicts / tot.placed : 0.0, tot.rus_lost,
			        tot.requeued);
			fprintf(f,
			        "  \"quality\": {\"model\": \"%s\", \"score_mean\": %s, "
			        "\"q_mean\": %s, "
			        "\"preferred_fraction\": %.6f, \"quality_mode_share\": %.6f, "
			        "\"sample_size_mean\": %.2f, \"sample_size_max\": %" PRIu64 ", "
			        "\"d_cdf\": ",
			        R->cfg.quality == RUSK_QUALITY_SCORE ? "score" : "interference",
			        R->cfg.quality == RUSK_QUALITY_SCORE ? qbuf : "null",
			        R->cfg.quality == RUSK_QUALITY_SCORE ? "null" : qbuf, pref_frac,
			        tot.placed ? (double)tot.qmode_tasks / tot.placed : 0.0,
			        tot.placed ? (double)tot.r_sum / tot.placed : 0.0, tot.r_max);
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
			fprintf(f, "  \"utilization\": {\"mean\": %.4f},\n",
			        R->util_sum / (R->secs ? R->secs : 1));
			if (R->cfg.sim) /* modelled time only: identical bytes for identical seeds
			                 */
				fprintf(f,
				        "  \"sync\": {\"partitions_synced\": %" PRIu64
				        ", \"agent_busy_share\": %.5f},\n",
				        syncs, busy / (elapsed * R->cfg.agents));
			else
				fprintf(f,
				        "  \"sync\": {\"partitions_synced\": %" PRIu64
				        ", \"seconds\": %.4f, "
				        "\"share_of_agent_cpu\": %.5f},\n",
				        syncs, sync_ns / 1e9,
				        busy > 0 ? sync_ns / 1e9 / busy : 0.0);
			double tet = tot.placed ? tot.tet_us / 1e6 / tot.placed : 0.0;
			fprintf(f,
			        "  \"execution\": {\"tet_mean_s\": %.6f, \"jct_mean_s\": %.6f, "
			        "\"makespan_s\": %.6f},\n",
			        tet, tet + rusk_hist_mean(&tot.delay) / 1e9,
			        tot.last_done_ns > R->t0 ? (tot.last_done_ns - R->t0) / 1e9 : 0.0);
			fprintf(f,
			        "  \"admission\": {\"waited\": %" PRIu64 ", \"at_bound\": %" PRIu64
			        "},\n",
			        tot.adm_waited, tot.adm_bound);
			fprintf(f,
			        "  \"priority\": {\"high_placed\": %" PRIu64
			        ", \"preempted\": %" PRIu64 ",\n",
			        tot.placed_hi, tot.preempted);
			json_hist(f, "delay_high_us", &tot.delay_hi, false);
			json_hist(f, "delay_normal_us", &tot.delay_lo, true);
			fprintf(f, "  },\n");
			fprintf(f, "  \"phases_us\": {\n");
			json_hist(f, "queue", &tot.queue, false);
			json_hist(f, "admission", &tot.admission, false);
			json_hist(f, "sample", &tot.sample, false);
			json_hist(f, "commit", &tot.commit, false);
			json_hist(f, "sample_commit", &tot.place, true);
			fprintf(f, "  },\n  \"agents\": [");
			for (uint32_t i = 0; i < R->cfg.agents; i++)
				fprintf(f,
				        "%s{\"placed\": %" PRIu64 ", \"conflicts\": %" PRIu64 "}",
				        i ? ", " : "", R->ag[i].st.placed, R->ag[i].st.conflicts);
			fprintf(f,
			        "],\n  \"checks\": {\"counts_add_up\": %s, "
			        "\"counters_consistent\": %s, \"queued_on_idle_cluster\": %" PRIu64
			        "}\n}\n",
			        adds_up ? "true" : "false", vrc == RUSK_OK ? "true" : "false",
			        stuck);
			int werr = ferror(f);
			if (fclose(f) != 0 || werr) {
				fprintf(stderr, "rusk: --json: %s: write failed\n", R->cfg.json);
				status = RUSK_EXIT_FAIL;
			}
		}
	}
	/* The per-second series was flushed as it went; a write that failed loses it. */
	if (R->csv != NULL && (fflush(R->csv) != 0 || ferror(R->csv))) {
		fprintf(stderr, "rusk: --csv: %s: write failed\n", R->cfg.csv);
		status = RUSK_EXIT_FAIL;
	}
	if (R->fail)
		return RUSK_EXIT_NOMEM;
	if (status == 0 && interrupted)
		return RUSK_EXIT_INTERRUPTED;
	return status;
}

void drv_free(run *R)
{
	if (R->out != NULL && R->out != stdout)
		fclose(R->out);
	if (R->csv)
		fclose(R->csv);
	if (R->json) /* never written: the run did not get to its report */
		fclose(R->json);
	free(R->ag);
	free(R->tasks);
	free(R->pool);
	free(R->trace);
	free(R->pref_pool);
	free(R->score_sorted);
	free(R->ru_dbin);
	free(R->per_agent);
	free(R->snap);
	free(R->medians);
	rusk_rcu_barrier();
	rusk_cluster_destroy(R->c); /* detaches admission control too */
}
