/* SPDX-License-Identifier: MIT */
/*
 * The parts of `rusk run` and `rusk sim` that do not depend on the clock or the
 * interleaving (driver.h): setup, workload, agent-local queues with admission control,
 * priorities and preemption (Tarcil §4, §5.3), accounting. Their flags are parsed in
 * run_opts.c; the per-second series and the summary are written in report.c.
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

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
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
