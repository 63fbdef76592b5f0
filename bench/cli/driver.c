/* SPDX-License-Identifier: MIT */
/*
 * The parts of `rusk run` and `rusk sim` that do not depend on the clock or the
 * interleaving (driver.h): setup, workload, the dispatcher they share (queues, admission,
 * priorities, preemption and ends are librusk's: rusk/dispatch.h, core/loop/dispatch.c) and the
 * run's side of its events. Their flags are parsed in run_opts.c; the per-second series
 * and the summary are written in report.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "runstate.h"

void drv_agent_params(const run *R, uint32_t index, rusk_agent_params *ap)
{
	const run_cfg *cfg = &R->cfg;
	const cli_agents ca = drv_cli_agents(cfg, R->seed);
	rusk_sync_params sp = cli_sync_params(&ca, rusk_cluster_partitions(R->c), R->t0);
	cli_agent_params(&ca, &sp, index, ap);
	ap->quality = cfg->quality;
	ap->latency_preferred = !cfg->latency_ignores_pref;
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

/* A trace's cpu_milli in RUs of --ru-milli milli-cores (the loader assumed 1000). */
static void arrival_rus(run *R)
{
	uint32_t rm = R->cfg.ru_milli;
	for (size_t i = 0; rm != 1000 && i < R->n_trace; i++) {
		rusk_arrival *x = &R->trace[i];
		if (x->cpu_milli > 0)
			x->rus = (x->cpu_milli + rm - 1) / rm;
	}
}

/* Whether a file that is not a trace opens like an SWF log: its first non-blank byte is
 * ';' (the Parallel Workloads Archive's header comments). */
static bool looks_like_swf(const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return false;
	int c;
	while ((c = getc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r')
		;
	fclose(f);
	return c == ';';
}

/* The trace's arrivals (raw, freed here) fitted to the run: the time scale, shifted copies
 * for --rate, and the phase that covers them. 0 or an exit status. */
static int expand_trace(run *R, run_cfg *cfgp, rusk_arrival *raw, size_t n_raw)
{
	run_cfg cfg = *cfgp;
	char *trace_path = cfg.trace_path, *trace_note = cfg.trace_note;
	const size_t note_len = sizeof cfg.trace_note;
	double span = raw[n_raw - 1].t_s > 0 ? raw[n_raw - 1].t_s : 1.0;
	double run_s = cfg.n_phases * cfg.phase_s;
	double scale = cfg.time_scale > 0 ? cfg.time_scale : span / run_s;
	if (span / scale > DRV_MAX_REPLAY_S) {
		/* A run that could not end: idle stretches are skipped (rusk sim), but a row
		 * a second and the drain still scale with the length. */
		fprintf(stderr,
		        "rusk: --time-scale %g: the trace's %.3g s would last %.3g s; at most "
		        "%.0e s (a --time-scale of at least %.3g)\n",
		        scale, span, span / scale, DRV_MAX_REPLAY_S, span / DRV_MAX_REPLAY_S);
		free(raw);
		return RUSK_EXIT_USAGE;
	}
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
		fprintf(stderr, "rusk: --trace: out of memory expanding %zu tasks\n", n_raw);
		return RUSK_EXIT_NOMEM;
	}
	cfg.trace_tasks = n_raw;
	cfg.trace_span_s = span;
	cfg.trace_scale = scale;
	cfg.trace_replicas = replicas;
	snprintf(trace_note, note_len,
	         "trace %s: %zu tasks over %.3g s; time scale 1/%.4g -> %.1f s; %u shifted "
	         "replica%s -> %zu tasks, %.0f tasks/s",
	         trace_path, n_raw, span, scale, span / scale, replicas, replicas > 1 ? "s" : "",
	         R->n_trace, R->n_trace / (span / scale));
	cfg.n_phases = 1;
	cfg.phases[0] = 100;
	/* Shifted copies end less than one mean gap after the span. */
	cfg.phase_s = fmax(span / scale, R->trace[R->n_trace - 1].t_s);
	*cfgp = cfg;
	return 0;
}

int drv_setup(run *R, cli_cluster *cc)
{
	run_cfg cfg = R->cfg;
	char err[1024]; /* a trace error names a path and may list the columns expected */
	R->out = stdout;
	if (cfg.quiet && (R->out = fopen("/dev/null", "w")) == NULL)
		R->out = stdout;
	char *trace_path = cfg.trace_path, *trace_note = cfg.trace_note;
	const size_t path_len = sizeof cfg.trace_path;
	R->seed = cc->params.seed;
	bool e2e = cfg.trace != NULL && strcmp(cfg.trace, "e2e") == 0;
	if (cfg.trace != NULL && !e2e) {
		if (strcmp(cfg.trace, "openb") == 0) {
			if (cli_openb_path("--trace", "openb_pod_list_default.csv", trace_path,
			                   path_len) != 0)
				return RUSK_EXIT_USAGE;
			if (cfg.trace_format < 0)
				cfg.trace_format = RUSK_TRACE_OPENB;
		} else {
			/* "-": standard input (a pipe is read up to the loader's stream limit) */
			snprintf(trace_path, path_len, "%s",
			         strcmp(cfg.trace, "-") == 0 ? "/dev/stdin" : cfg.trace);
			if (cfg.trace_format < 0)
				cfg.trace_format = RUSK_TRACE_CSV;
		}
		if (cfg.openb_groups != RUSK_TRACE_GROUPS_NONE &&
		    cfg.trace_format != RUSK_TRACE_OPENB) {
			fprintf(stderr,
			        "rusk: --openb-groups: applies to an openb pod list (--trace openb "
			        "or --trace-format openb), not the csv trace %s (its group column "
			        "names a row's group)\n",
			        trace_path);
			return RUSK_EXIT_USAGE;
		}
		/* Quota group names (groups_run.c resolves them once its file is read); a
		 * trace's group column is not read without --groups-file. */
		R->tgroups = (rusk_trace_groups){.openb = cfg.openb_groups};
		rusk_trace_groups *tg = cfg.groups_file != NULL ? &R->tgroups : NULL;
		rusk_arrival *raw;
		size_t n_raw;
		rusk_trace_models *tm = drv_vec_models(R);
		if (tm == NULL) {
			fprintf(stderr, "rusk: --trace: out of memory\n");
			return RUSK_EXIT_NOMEM;
		}
		int trc = rusk_trace_load(trace_path, cfg.trace_format, &raw, &n_raw, tm, tg, err,
		                          sizeof err);
		if (trc != RUSK_OK && drv_stop_signal() != 0) {
			/* A signal cut a read from a pipe short: interrupted, not a bad trace. */
			fprintf(stderr, "rusk: --trace: %s: interrupted while reading it\n",
			        trace_path);
			return RUSK_EXIT_INTERRUPTED;
		}
		if (trc != RUSK_OK) {
			fprintf(stderr, "rusk: --trace: %s\n", err);
			if (trc == RUSK_EPARSE && looks_like_swf(trace_path))
				fprintf(stderr,
				        "  %s looks like a Standard Workload Format log (';' "
				        "header comments): `rusk predict` reads SWF; --trace reads "
				        "a CSV or an openb pod list\n",
				        trace_path);
			return trc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
		}
		int erc = expand_trace(R, &cfg, raw, n_raw);
		if (erc != 0)
			return erc;
	}
	R->cfg = cfg;
	/* Outputs before the run: a path that cannot be written is refused now, not after
	 * the run (whose results would be lost); one that names an input or the other output
	 * is refused before anything is opened for writing (outfile.h). */
	const cli_in ins[] = {{"--trace", cfg.trace != NULL && !e2e ? trace_path : NULL},
	                      {"--cluster", cc->openb_path}};
	snprintf(R->groups_gp, sizeof R->groups_gp, "%s.gp",
	         cfg.groups_png != NULL ? cfg.groups_png : "");
	R->outs[DRV_OUT_JSON] = (cli_out){.flag = "--json", .path = cfg.json};
	R->outs[DRV_OUT_CSV] = (cli_out){.flag = "--csv", .path = cfg.csv};
	R->outs[DRV_OUT_GROUPS_CSV] = (cli_out){.flag = "--groups-csv", .path = cfg.groups_csv};
	R->outs[DRV_OUT_GROUPS_PNG] =
	        (cli_out){.flag = "--groups-png", .path = cfg.groups_png, .external = true};
	R->outs[DRV_OUT_GROUPS_GP] =
	        (cli_out){.flag = "--groups-png (its gnuplot script)",
	                  .path = cfg.groups_png != NULL ? R->groups_gp : NULL};
	int orc = cli_files_open(ins, 2, R->outs, DRV_OUTS);
	if (orc != 0)
		return orc;
	R->json = R->outs[DRV_OUT_JSON].f;
	R->csv = R->outs[DRV_OUT_CSV].f;
	/* The memory the run will need, stated and checked before any of it is allocated
	 * (memest.c): what does not fit is refused naming the flags, exit 2. */
	uint64_t machines, rus;
	int src = cli_cluster_size(cc, &machines, &rus);
	if (src != RUSK_OK)
		return src == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
	int mrc = drv_memory_check(R, cc, machines, rus, cfg.sim ? "sim" : "run");
	if (mrc != 0)
		return mrc;
	double build_s;
	int brc = cli_cluster_build(cc, &R->c, &build_s);
	if (brc != RUSK_OK)
		return brc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
	/* --partitions may have been left to a default that fits the cells: the sync policy
	 * against the partitions built (drv_parse checked the flags as given). */
	const cli_agents ca = drv_cli_agents(&cfg, 0);
	if (cli_sync_check(&ca, rusk_cluster_partitions(R->c), err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk: --sync %s --agents %u: the cluster has %u partitions: %s\n",
		        rusk_sync_policy_name(cfg.sync), cfg.agents, rusk_cluster_partitions(R->c),
		        err);
		return RUSK_EXIT_USAGE;
	}
	if (e2e) { /* generated now: the cluster's RUs scale its load */
		rusk_arrival *raw;
		size_t n_raw;
		snprintf(trace_path, path_len, "e2e");
		/* In virtual time the workload keeps its own clock: squeezing hours into the
		 * run's length would make the agents' view syncs (G) minutes of trace time. */
		if (cfg.sim && !(cfg.time_scale > 0))
			cfg.time_scale = 1;
		int grc = drv_sched_e2e(R, &raw, &n_raw, err, sizeof err);
		if (grc != RUSK_OK) {
			fprintf(stderr, "rusk: --trace e2e: %s\n", err);
			return grc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_USAGE;
		}
		int erc = expand_trace(R, &cfg, raw, n_raw);
		if (erc != 0)
			return erc;
		R->cfg = cfg;
	}
	if (R->trace != NULL &&
	    rusk_trace_check_preferred(R->trace, R->n_trace, rusk_cluster_machines(R->c),
	                               trace_path, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "rusk: --trace: %s\n", err);
		return RUSK_EXIT_USAGE;
	}
	if (R->trace != NULL)
		arrival_rus(R);
	/* The features (features.c): a trace's vector columns before the task cap; then
	 * classification's workloads and model, the planner and admission prediction. */
	const drv_setup_in in = {.cc = cc, .trace_path = trace_path};
	int frc = drv_features_setup(R, DRV_STAGE_TRACE, &in);
	if (frc != 0)
		return frc;
	R->n_tasks_cap = drv_task_cap(R, NULL); /* drv_memory_check refused more than 2^32 */
	if ((frc = drv_features_setup(R, DRV_STAGE_RUN, &in)) != 0)
		return frc;
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
	if (R->ag == NULL || (pref_per_task > 0 && R->pref_pool == NULL) ||
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
	if (R->out == stdout) /* a failure is reported at exit (main: cli_stdout_close) */
		cli_stdout_flush();
	else
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
	if (R->csv) {
		fprintf(R->csv,
		        "second,phase,submitted,placed,throughput,rejected,backlog,utilization,"
		        "conflicts,delay_p10_us,delay_p50_us,delay_p90_us,delay_p99_us,"
		        "quality_mean,agent_median_p10_us,agent_median_p50_us,"
		        "agent_median_p90_us,preferred_share,quality_mode_share");
		for (const drv_feature *const *f = drv_features; *f != NULL; f++)
			if ((*f)->csv_header != NULL && (*f)->on(R))
				fputs((*f)->csv_header(), R->csv);
		fputc('\n', R->csv);
	}
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
		if (cfg.n_mix > 0 &&
		    (R->ag[i].mix_delay = calloc((size_t)cfg.n_mix, sizeof(rusk_hist))) == NULL) {
			fprintf(stderr, "rusk: out of memory\n");
			return RUSK_EXIT_NOMEM;
		}
	}
	return 0;
}

int drv_gen_init(run *R, drv_gen *G, uint32_t shard, uint32_t shards)
{
	const run_cfg *cfg = &R->cfg;
	memset(G, 0, sizeof *G);
	G->id = shard;
	G->id_step = shards;
	for (int k = 0; k < cfg->n_groups; k++) {
		/* Its agents of group k: i = k (mod n_groups) and i = shard (mod shards). */
		uint32_t members = 0;
		G->agents[k] = malloc(sizeof(uint32_t) * (drv_group_size(cfg, k) + 1));
		if (G->agents[k] == NULL) {
			drv_gen_free(G);
			fprintf(stderr, "rusk: out of memory for the generators\n");
			return RUSK_EXIT_NOMEM;
		}
		for (uint32_t i = (uint32_t)k; i < cfg->agents; i += (uint32_t)cfg->n_groups)
			if (i % shards == shard)
				G->agents[k][members++] = i;
		G->members[k] = members;
		/* The whole workload's seeds for shard 0: one generator draws what it always did.
		 */
		uint64_t seed = R->seed + (uint64_t)k * 7919 + (uint64_t)shard * 104729;
		rusk_loadgen_init(&G->g[k], cfg->rate * members / cfg->agents, cfg->gphases[k],
		                  cfg->gn_phases[k], cfg->phase_s, cfg->dist, cfg->task_ms / 1000.0,
		                  cfg->task_rus, seed);
		G->live[k] = members > 0 && rusk_loadgen_next(&G->g[k], &G->next[k]) == 0;
	}
	/* Preferences, profiles and priorities: their own stream of the same seed. */
	rusk_rng_seed(&G->prng, R->seed, 0x70726566 + (uint64_t)shard);
	rusk_rng_seed(&G->mrng, R->seed, 0x6d6978 + (uint64_t)shard); /* "mix" */
	return 0;
}

void drv_gen_free(drv_gen *G)
{
	for (int k = 0; k < DRV_MAX_GROUPS; k++) {
		free(G->agents[k]);
		G->agents[k] = NULL;
	}
}

void drv_gen_totals(const run *R, drv_gen_counts *out)
{
	out->submitted = rusk_load64(&R->submitted, RUSK_RELAXED);
	out->rejected = rusk_load64(&R->rejected, RUSK_RELAXED);
	out->refused = rusk_load64(&R->refused, RUSK_RELAXED);
	out->too_large = out->pool = 0;
	for (uint32_t g = 0; g < R->n_gen; g++) {
		const drv_gen *G = &R->gen[g];
		out->submitted += rusk_load64(&G->submitted, RUSK_RELAXED);
		out->rejected += rusk_load64(&G->rejected, RUSK_RELAXED);
		out->refused += rusk_load64(&G->refused, RUSK_RELAXED);
		out->too_large += rusk_load64(&G->too_large, RUSK_RELAXED);
		out->pool += rusk_load64(&G->pool, RUSK_RELAXED);
	}
}

int drv_mix_class(const run_cfg *cfg, uint32_t rus, uint8_t placement, bool gang)
{
	for (int k = 0; k < cfg->n_mix; k++) {
		const drv_mix *m = &cfg->mix[k];
		bool m_gang = m->commit == RUSK_COMMIT_GANG ||
		              (m->commit == RUSK_COMMIT_DEFAULT && cfg->gang);
		if (m->rus == rus && m->placement == placement && (m_gang == gang || rus == 1))
			return k;
	}
	return -1;
}

/* rusk run: the next burst of group grp stays with its last agent while that agent's queue
 * is short and its view shows nearly the most room of the group's agents (at a light load
 * one warm agent places everything; at a heavy one, an agent alone would run its view out
 * of room between syncs and into the partitions the others use: the bursts move on). */
static bool keep_load(run *R, const drv_gen *G, int grp)
{
	rusk_dispatch_agent_load l, o;
	if (rusk_dispatch_load(R->d, G->last[grp], &l) != RUSK_OK ||
	    l.queued >= DRV_CONCENTRATE_BELOW)
		return false;
	uint64_t best = 0;
	for (uint32_t k = 0; k < G->members[grp]; k++)
		if (rusk_dispatch_load(R->d, G->agents[grp][k], &o) == RUSK_OK &&
		    o.view_free_rus > best)
			best = o.view_free_rus;
	return (double)l.view_free_rus >= DRV_CONCENTRATE_ROOM * (double)best;
}

/* --mix: the shape of the next task, by share (its own stream: without --mix nothing
 * else draws differently). */
static const drv_mix *mix_draw(const run_cfg *cfg, drv_gen *G)
{
	double u = rusk_rng_unit(&G->mrng), acc = 0;
	for (int k = 0; k < cfg->n_mix - 1; k++)
		if (u < (acc += cfg->mix[k].share))
			return &cfg->mix[k];
	return &cfg->mix[cfg->n_mix - 1];
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

bool drv_gen_task(run *R, drv_gen *G, const rusk_arrival *x, int grp, uint64_t submit_ns,
                  rusk_dtask_spec *spec, run_agent **dest)
{
	const run_cfg *cfg = &R->cfg;
	const drv_mix *mix = cfg->n_mix > 0 && R->trace == NULL ? mix_draw(cfg, G) : NULL;
	uint32_t rus = mix != NULL ? mix->rus : x->rus;
	memset(spec, 0, sizeof *spec);
	spec->rus = x->rus;
	drv_admit judged = DRV_ADMIT_NONE; /* a feature's (a trace's vector demand) */
	for (const drv_feature *const *f = drv_features; *f != NULL && !judged; f++)
		if ((*f)->admit != NULL && (*f)->on(R))
			judged = (*f)->admit(R, x, spec);
	if (judged == DRV_ADMIT_REFUSED)
		return false; /* refused as infeasible, counted by the feature */
	if (judged == DRV_ADMIT_NONE && (rus > rusk_cluster_rus(R->c) || rus > DRV_MAX_TASK_RUS)) {
		/* The kernel refuses it (rusk_agent_place: RUSK_EINFEASIBLE); queued, it would
		 * be retried until the run ends. (More than DRV_MAX_TASK_RUS: a --ru-milli
		 * small enough to make a trace's cores that many RUs.) */
		stat_add(&G->too_large, 1);
		return false;
	}
	if (G->id >= R->n_tasks_cap) {
		stat_add(&G->pool, 1);
		return false;
	}
	uint64_t id = G->id;
	G->id += G->id_step;
	rusk_dtask_spec keep = *spec; /* the vector part, if a feature set one */
	memset(spec, 0, sizeof *spec);
	if (judged == DRV_ADMIT_FITS) {
		spec->placement = keep.placement;
		spec->vec = keep.vec;
	}
	spec->submit_ns = submit_ns;
	spec->run_ns = (uint64_t)(x->duration_s * 1e9);
	spec->rus = rus;
	if (mix != NULL) {
		spec->placement = mix->placement;
		spec->commit = mix->commit;
	}
	if (R->trace != NULL && x->n_pref > 0) {
		uint32_t *pref = R->pref_pool + id * RUSK_TRACE_MAX_PREF;
		memcpy(pref, x->pref, sizeof *pref * x->n_pref);
		spec->preferred = pref;
		spec->n_preferred = x->n_pref;
	} else if (cfg->preferred > 0) {
		uint32_t *pref = R->pref_pool + id * cfg->preferred;
		for (uint32_t k = 0; k < cfg->preferred; k++)
			pref[k] = rusk_rng_below(&G->prng, rusk_cluster_machines(R->c));
		spec->preferred = pref;
		spec->n_preferred = cfg->preferred;
	}
	bool profiled = false; /* --classify: Quasar's profile (and --target's size) */
	for (const drv_feature *const *f = drv_features; *f != NULL; f++)
		if ((*f)->task != NULL && (*f)->on(R))
			profiled |= (*f)->task(R, id, x, spec);
	if (!profiled && cfg->quality == RUSK_QUALITY_INTERFERENCE)
		for (int k = 0; k < RUSK_N_RESOURCES; k++)
			spec->profile.c[k] = (uint8_t)rusk_rng_below(&G->prng, 100);
	spec->priority = x->priority;
	if (cfg->priority_share > 0 && rusk_rng_unit(&G->prng) < cfg->priority_share)
		spec->priority = 1;
	/* round robin over its agents of the group (a burst of rusk run's generator stays
	 * with one agent: keep_agent) */
	bool stay = G->keep_agent || (G->concentrate && G->started[grp] && keep_load(R, G, grp));
	if (!stay) {
		uint32_t i = G->rr[grp]++;
		if (G->rr[grp] == G->members[grp])
			G->rr[grp] = 0;
		G->last[grp] = G->agents[grp][i];
		G->started[grp] = true;
	}
	*dest = &R->ag[G->last[grp]];
	return true;
}

/* ---- the dispatcher ---------------------------------------------------------------------- */

static void agent_params_cb(void *arg, uint32_t i, rusk_agent_params *ap)
{
	drv_agent_params(arg, i, ap);
}

/*
 * The run's side of the dispatcher's events. PLACED (on the placing agent's thread): the
 * RUs' D bins (score model) and ParSync Table 1's speed-up, a task on its preferred
 * machines running alpha x its duration. REJECTED at submission (the generator's thread):
 * the kernel's refusal is counted here; a full queue by the generator (its return code).
 */
static void on_event(void *arg, rusk_dispatch_event *ev)
{
	run *R = arg;
	if (ev->kind == RUSK_EV_PLACED) {
		run_agent *a = &R->ag[ev->agent];
		if (R->ru_dbin != NULL)
			for (uint32_t k = 0; k < ev->n_leases; k++)
				stat_add(&a->d_bins[R->ru_dbin[ev->leases[k].ru]], 1);
		rusk_dtask_info jb;
		const rusk_dtask_info *j = drv_task(R->d, ev, &jb);
		const rusk_placement *pl = ev->placement;
		if (R->cfg.alpha > 0 && j->n_pref > 0 && pl->preferred == pl->placed)
			ev->run_ns = (uint64_t)(ev->run_ns * R->cfg.alpha);
		int k = a->mix_delay != NULL ? drv_mix_class(&R->cfg, j->rus, j->place, j->gang)
		                             : -1;
		if (k >= 0) /* one writer: the placing agent */
			rusk_hist_record(&a->mix_delay[k], ev->delay_ns);
	}
	/* The features (features.c): vector shares placed, classification's true-profile Q
	 * and feedback, the planner's placements and completions, admission prediction's
	 * running tasks, frees and waits. */
	for (const drv_feature *const *f = drv_features; *f != NULL; f++)
		if ((*f)->event != NULL && (*f)->on(R))
			(*f)->event(R, ev);
}

int drv_dispatch(run *R, const char *cmd)
{
	const run_cfg *cfg = &R->cfg;
	rusk_dispatch_params p;
	rusk_dispatch_params_init(&p, cfg->agents);
	p.batch = cfg->batch;
	p.spin_ns = (uint32_t)(cfg->spin_us * 1e3);
	p.ring = DRV_RING_SIZE;
	p.max_tasks = R->n_tasks_cap;
	p.agent_params = agent_params_cb;
	p.admit = R->adm;
	p.quality = cfg->quality;
	p.gang = cfg->gang;
	p.reserve_syncs = cfg->reserve_syncs;
	p.seed = R->seed;
	p.on_event = on_event;
	p.arg = R;
	for (const drv_feature *const *f = drv_features; *f != NULL; f++)
		if ((*f)->params != NULL && (*f)->on(R))
			(*f)->params(R, &p); /* --groups-file: the quota groups */
	char err[256] = "";
	int rc = rusk_dispatch_create(R->c, &p, &R->d, err, sizeof err);
	/* The library may return RUSK_ENOMEM without a message (its side is the dispatcher
	 * owner's to fix): say what could not be made. */
	if (rc == RUSK_ENOMEM && err[0] == '\0')
		snprintf(err, sizeof err,
		         "out of memory making the dispatcher (%" PRIu64
		         " task slots of %zu bytes, "
		         "%u agents; --rate, --duration-s, --agents)",
		         R->n_tasks_cap, rusk_dtask_size_(), cfg->agents);
	else if (err[0] == '\0')
		snprintf(err, sizeof err, "cannot make the dispatcher (%s)", rusk_strerror(rc));
	if (rc != RUSK_OK) {
		/* No dispatcher, so no agents: the report (which still runs, to say so) reads
		 * zeroed ones. */
		static rusk_dagent_stats none;
		for (uint32_t i = 0; i < cfg->agents; i++) {
			R->ag[i].da = NULL;
			R->ag[i].st = &none;
		}
		fprintf(stderr, "rusk %s: %s\n", cmd, err);
		return rc == RUSK_ENOMEM ? RUSK_EXIT_NOMEM : RUSK_EXIT_FAIL;
	}
	for (uint32_t i = 0; i < cfg->agents; i++) {
		run_agent *a = &R->ag[i];
		a->da = rusk_dispatch_agent_(R->d, i);
		a->st = rusk_dagent_stats_(a->da);
		a->handle = rusk_dagent_kernel_(a->da);
	}
	return 0;
}

void drv_free(run *R)
{
	if (R->out != NULL && R->out != stdout)
		fclose(R->out);
	/* Outputs not put in place by the report (the run did not get to it): their
	 * temporary files go, the targets keep what they held. */
	cli_outs_discard(R->outs, DRV_OUTS);
	rusk_dispatch_destroy(R->d); /* its agents and tasks; every thread joined */
	for (uint32_t i = 0; R->ag != NULL && i < R->cfg.agents; i++)
		free(R->ag[i].mix_delay);
	free(R->ag);
	free(R->trace);
	free(R->pref_pool);
	free(R->score_sorted);
	free(R->ru_dbin);
	free(R->per_agent);
	free(R->snap);
	free(R->medians);
	for (uint32_t g = 0; g < R->n_gen; g++)
		drv_gen_free(&R->gen[g]);
	free(R->gen);
	R->gen = NULL;
	R->n_gen = 0;
	for (const drv_feature *const *f = drv_features; *f != NULL; f++)
		(*f)->free(R);
	rusk_rcu_barrier();
	rusk_cluster_destroy(R->c); /* detaches admission control too */
}
