/* SPDX-License-Identifier: MIT */
/*
 * Quota groups in `rusk run --groups-file FILE` (ParSync §2 and §7; the library's side is
 * rusk/dispatch.h, "Quota groups", and rusk/quota.h).
 *
 * The file: one group a line, `NAME WEIGHT [min:DIM=N] [max:DIM=N] ...`, DIM one of rus
 * (RUs), mem (MiB), gpu (milli-GPUs); '#' starts a comment. Every error names the file and
 * line (or the file, for the minimums' sum against the cluster) and the run exits 2.
 *
 * Tasks: a trace's task is in the group its row names (a csv trace's group column; an
 * openb pod's qos class or GPU model with --openb-groups; an empty field: no group, never
 * limited), resolved by name once the file is read (an unknown name: the trace's FILE:LINE
 * where it first appears, exit 2). Otherwise a task of id i is in group 1 + i mod n (every
 * group offers the same load; the weights decide who gets what when the cluster is
 * overloaded).
 *
 * Reports: per group, each second (the sampler) its RU usage, allowance, allocation and
 * demand as the dispatcher's last coordinator round had them, its placements and its
 * scheduling delay (p50 / p99 from a log2 histogram of 64 bins; atomic adds from the
 * placing agents: CLI instrumentation, only with groups on); the JSON section "groups" and
 * one summary line per group; the run fails (exit 1) when a round's allocation failed the
 * fairness check or a group grew past its allowance by more than the stated bound.
 * --groups-csv: the same figures in every dimension over time, a row per group each second
 * (rusk run, the sampler) or after each coordinator round (rusk sim, exact virtual times),
 * with the interval's placements and their delay p50 / p99 (the histogram's growth since
 * the row before); --groups-png: gnuplot draws those rows (usage, its share against the
 * weights' share, allowance, demand, placements, delay p99), reading the CSV once it is in
 * place: rows come in blocks of n, one per group in file order, so group k's series is
 * every n-th row from row k (no filter that would break its lines).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>

#include "base/atomic.h"
#include "runstate.h"

#define GRP_NAME 32
#define GRP_BINS 64

typedef struct grp_sample {
	uint64_t usage, allow, alloc, demand, placed;
} grp_sample;

struct drv_grp {
	uint32_t n;
	rusk_quota_group g[RUSK_QUOTA_MAX_GROUPS];
	char name[RUSK_QUOTA_MAX_GROUPS][GRP_NAME];
	uint64_t placed[RUSK_QUOTA_MAX_GROUPS]; /* atomic adds (placing agents) */
	/* tasks given each group (tasks[k - 1]; tasks[64]: none), atomic adds (generators) */
	uint64_t tasks[RUSK_QUOTA_MAX_GROUPS + 1];
	uint64_t bins[RUSK_QUOTA_MAX_GROUPS][GRP_BINS]; /* delay, log2 ns; atomic adds */
	grp_sample *s;                                  /* [secs][n], the sampler's */
	uint32_t secs, cap;
	/* A trace's tasks take its groups: map[row's group] is the dispatcher's (0: none). */
	bool by_trace;
	uint8_t map[RUSK_TRACE_MAX_GROUPS + 1];
	double weight_sum;
	/* --groups-csv (main thread: the sampler, or sim's loop): its FILE, rows written, and
	 * the delay bins as of the last row (a row's delays are the growth since). */
	FILE *csv;
	uint64_t rows;
	uint64_t row_bins[RUSK_QUOTA_MAX_GROUPS][GRP_BINS];
};

static const char *const grp_dims[RUSK_QUOTA_DIMS] = {"rus", "mem", "gpu"};

static void grp_rows(run *R, double t_s);

static int grp_fail(const char *path, int line, const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "rusk: --groups-file %s:%d: ", path, line);
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return RUSK_EXIT_USAGE;
}

/* One `min:DIM=N` / `max:DIM=N` token into g. */
static int grp_limit(const char *path, int line, char *tok, rusk_quota_group *g)
{
	bool is_min = strncmp(tok, "min:", 4) == 0;
	if (!is_min && strncmp(tok, "max:", 4) != 0)
		return grp_fail(path, line, "'%s' is not min:DIM=N or max:DIM=N%s", tok, "");
	char *eq = strchr(tok + 4, '=');
	if (eq == NULL)
		return grp_fail(path, line, "'%s' is not min:DIM=N or max:DIM=N%s", tok, "");
	*eq = '\0';
	int d = -1;
	for (int k = 0; k < RUSK_QUOTA_DIMS; k++)
		if (strcmp(tok + 4, grp_dims[k]) == 0)
			d = k;
	if (d < 0)
		return grp_fail(path, line, "unknown dimension '%s' (rus, mem or gpu)%s", tok + 4,
		                "");
	char *end;
	errno = 0;
	const char *num = eq + 1;
	unsigned long long v = strtoull(num, &end, 10);
	if (!isdigit((unsigned char)num[0]) || *end != '\0' || errno != 0)
		return grp_fail(path, line, "%s: '%s' is not a whole number >= 0", tok, num);
	if (is_min)
		g->min.v[d] = v;
	else
		g->max.v[d] = v;
	return 0;
}

/* The trace's group names (R->tgroups) against the file's: G->map, or an error naming the
 * trace's line where an unknown one first appears (exit 2). */
static int grp_trace(run *R, drv_grp *G, const char *trace_path)
{
	const rusk_trace_groups *tg = &R->tgroups;
	G->by_trace = tg->given;
	static const char *const what[3] = {"group", "qos class (--openb-groups qos)",
	                                    "GPU model (--openb-groups gpu-model)"};
	for (uint32_t t = 0; t < tg->n; t++) {
		uint32_t k = 0;
		while (k < G->n && strcmp(G->name[k], tg->name[t]) != 0)
			k++;
		if (k < G->n) {
			G->map[t + 1] = (uint8_t)(k + 1);
			continue;
		}
		char known[RUSK_QUOTA_MAX_GROUPS * GRP_NAME + 8] = "";
		size_t len = 0;
		for (uint32_t j = 0; j < G->n && len < sizeof known; j++)
			len += (size_t)snprintf(known + len, sizeof known - len, "%s%s",
			                        j ? ", " : "", G->name[j]);
		fprintf(stderr,
		        "rusk: --trace %s:%u: %s '%s' is not a group of --groups-file %s (its "
		        "groups: %s)\n",
		        trace_path, tg->line[t], what[tg->openb < 3 ? tg->openb : 0], tg->name[t],
		        R->cfg.groups_file, known);
		return RUSK_EXIT_USAGE;
	}
	return 0;
}

static int grp_setup(run *R, const drv_setup_in *in)
{
	const char *path = R->cfg.groups_file;
	if (path == NULL)
		return 0;
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		fprintf(stderr, "rusk: --groups-file %s: %s\n", path, strerror(errno));
		return RUSK_EXIT_USAGE;
	}
	drv_grp *G = calloc(1, sizeof *G);
	if (G == NULL) {
		fclose(f);
		fprintf(stderr, "rusk: --groups-file %s: out of memory\n", path);
		return RUSK_EXIT_NOMEM;
	}
	R->grp = G;
	char buf[1024];
	int line = 0, rc = 0;
	while (rc == 0 && fgets(buf, sizeof buf, f) != NULL) {
		line++;
		char *hash = strchr(buf, '#');
		if (hash != NULL)
			*hash = '\0';
		char *save, *name = strtok_r(buf, " \t\r\n", &save);
		if (name == NULL)
			continue;
		char *w = strtok_r(NULL, " \t\r\n", &save);
		if (w == NULL) {
			rc = grp_fail(path, line,
			              "group '%s': expected NAME WEIGHT [min:DIM=N] "
			              "[max:DIM=N] ...%s",
			              name, "");
			break;
		}
		if (G->n == RUSK_QUOTA_MAX_GROUPS) {
			rc = grp_fail(path, line, "group '%s': more than 64 groups%s", name, "");
			break;
		}
		if (strlen(name) >= GRP_NAME) {
			rc = grp_fail(path, line, "group name '%s' longer than 31 characters%s",
			              name, "");
			break;
		}
		if (strpbrk(name, ",\"'") != NULL) {
			rc = grp_fail(path, line,
			              "group name '%s' has a comma or a quote (names are CSV "
			              "fields)%s",
			              name, "");
			break;
		}
		for (uint32_t k = 0; k < G->n; k++)
			if (strcmp(G->name[k], name) == 0)
				rc = grp_fail(path, line, "group '%s' named twice%s", name, "");
		char *end;
		double weight = strtod(w, &end);
		if (rc == 0 && (*end != '\0' || !isfinite(weight) || !(weight > 0)))
			rc = grp_fail(path, line, "group '%s': weight '%s' must be a number > 0",
			              name, w);
		rusk_quota_group *g = &G->g[G->n];
		g->weight = weight;
		for (int k = 0; k < RUSK_QUOTA_DIMS; k++)
			g->max.v[k] = RUSK_QUOTA_UNLIMITED;
		char *tok;
		while (rc == 0 && (tok = strtok_r(NULL, " \t\r\n", &save)) != NULL)
			rc = grp_limit(path, line, tok, g);
		for (int k = 0; rc == 0 && k < RUSK_QUOTA_DIMS; k++)
			if (g->min.v[k] > g->max.v[k]) {
				char lim[96];
				snprintf(lim, sizeof lim,
				         "%s minimum %" PRIu64 " above its maximum %" PRIu64,
				         grp_dims[k], g->min.v[k], g->max.v[k]);
				rc = grp_fail(path, line, "group '%s': %s", name, lim);
			}
		if (rc == 0)
			snprintf(G->name[G->n++], GRP_NAME, "%s", name);
	}
	fclose(f);
	if (rc != 0)
		return rc;
	if (G->n == 0) {
		fprintf(stderr, "rusk: --groups-file %s: no group in it\n", path);
		return RUSK_EXIT_USAGE;
	}
	rusk_cluster_vec cv = {0};
	(void)rusk_cluster_vec_get(R->c, &cv);
	rusk_quota_vec cap = {{rusk_cluster_rus(R->c), cv.mem_mib, cv.gpu_milli}};
	char why[256];
	if (rusk_quota_groups_check(&cap, G->g, G->n, why, sizeof why) != RUSK_OK) {
		fprintf(stderr, "rusk: --groups-file %s: %s\n", path, why + strlen("quota: "));
		return RUSK_EXIT_USAGE;
	}
	for (uint32_t k = 0; k < G->n; k++)
		G->weight_sum += G->g[k].weight;
	int trc = grp_trace(R, G, in->trace_path);
	if (trc != 0)
		return trc;
	if ((G->csv = R->outs[DRV_OUT_GROUPS_CSV].f) != NULL)
		fputs("time_s,round,group,name,weight,weight_share,usage_rus,usage_share,"
		      "allowance_rus,alloc_rus,demand_rus,usage_mem_mib,allowance_mem_mib,"
		      "demand_mem_mib,usage_gpu_milli,allowance_gpu_milli,demand_gpu_milli,placed,"
		      "delay_p50_ms,delay_p99_ms,held_back\n",
		      G->csv);
	return 0;
}

static void grp_params(run *R, rusk_dispatch_params *p)
{
	if (R->grp == NULL)
		return;
	p->groups = R->grp->g;
	p->n_groups = R->grp->n;
	p->quota_period_ns = (uint64_t)(R->cfg.quota_period_ms * 1e6);
}

/* A task's group (the task hook): its trace row's, else task i goes to group 1 + i mod n. */
static bool grp_task(run *R, uint64_t id, const rusk_arrival *x, rusk_dtask_spec *spec)
{
	const drv_grp *G = R->grp;
	spec->group = G->by_trace ? G->map[x->group] : (uint16_t)(1 + id % G->n);
	/* a count (several generators may add): the report reads it after they are joined */
	rusk_faa64(&R->grp->tasks[spec->group ? spec->group - 1u : RUSK_QUOTA_MAX_GROUPS], 1,
	           RUSK_RELAXED);
	return false; /* no profile */
}

static bool grp_on(const run *R)
{
	return R->grp != NULL;
}

static void grp_event(run *R, rusk_dispatch_event *ev)
{
	if (ev->kind != RUSK_EV_PLACED)
		return;
	rusk_dtask_info jb;
	const rusk_dtask_info *j = drv_task(R->d, ev, &jb);
	if (j->group == 0 || j->group > R->grp->n)
		return;
	uint32_t g = j->group - 1u, b = 0;
	for (uint64_t x = ev->delay_ns; x > 1 && b < GRP_BINS - 1; x >>= 1)
		b++;
	rusk_faa64(&R->grp->placed[g], 1, RUSK_RELAXED);  /* a count: the report reads it */
	rusk_faa64(&R->grp->bins[g][b], 1, RUSK_RELAXED); /* after every agent is joined */
}

static void grp_second(run *R, bool idle)
{
	(void)idle;
	drv_grp *G = R->grp;
	if (G == NULL || R->d == NULL)
		return;
	if (G->secs == G->cap) {
		uint32_t cap = G->cap ? 2 * G->cap : 64;
		grp_sample *s = realloc(G->s, (size_t)cap * G->n * sizeof *s);
		if (s == NULL)
			return; /* the series stops; the totals stay */
		G->s = s;
		G->cap = cap;
	}
	grp_sample *row = &G->s[(size_t)G->secs++ * G->n];
	for (uint32_t k = 0; k < G->n; k++) {
		rusk_dispatch_group o;
		if (rusk_dispatch_group_get(R->d, k + 1, &o) != RUSK_OK)
			memset(&o, 0, sizeof o);
		row[k] = (grp_sample){o.usage.v[0], o.allow.v[0], o.alloc.v[0], o.demand.v[0],
		                      rusk_load64(&G->placed[k], RUSK_RELAXED)};
	}
	if (!R->cfg.sim) /* rusk sim writes its rows after each round (drv_grp_round) */
		grp_rows(R, R->secs);
	if (G->csv != NULL)
		fflush(G->csv); /* what ran is on disk whatever ends the run */
}

/* The delay below which a share q of the placements counted in bins fall, ms (upper bin
 * edge); 0 for none. */
static double bins_delay_ms(const uint64_t *bins, double q)
{
	uint64_t n = 0, seen = 0;
	for (int b = 0; b < GRP_BINS; b++)
		n += bins[b];
	if (n == 0)
		return 0;
	for (int b = 0; b < GRP_BINS; b++) {
		seen += bins[b];
		if ((double)seen >= q * (double)n)
			return ldexp(1.0, b + 1) / 1e6;
	}
	return ldexp(1.0, GRP_BINS) / 1e6;
}

/* Group g's delay quantile over the run (after every agent is joined). */
static double grp_delay_ms(const drv_grp *G, uint32_t g, double q)
{
	return bins_delay_ms(G->bins[g], q);
}

/* One --groups-csv row per group at t_s seconds into the run: the last round's figures,
 * the placements since the row before and their delays (main thread). */
static void grp_rows(run *R, double t_s)
{
	drv_grp *G = R->grp;
	if (G == NULL || G->csv == NULL || R->d == NULL)
		return;
	rusk_dispatch_group o[RUSK_QUOTA_MAX_GROUPS];
	uint64_t used = 0;
	for (uint32_t k = 0; k < G->n; k++) {
		if (rusk_dispatch_group_get(R->d, k + 1, &o[k]) != RUSK_OK)
			memset(&o[k], 0, sizeof o[k]);
		used += o[k].usage.v[0];
	}
	for (uint32_t k = 0; k < G->n; k++) {
		uint64_t d[GRP_BINS], placed = 0;
		for (int b = 0; b < GRP_BINS; b++) {
			/* a count the placing agents add to: a relaxed read is enough */
			uint64_t now = rusk_load64(&G->bins[k][b], RUSK_RELAXED);
			d[b] = now - G->row_bins[k][b];
			G->row_bins[k][b] = now;
			placed += d[b];
		}
		const rusk_dispatch_group *x = &o[k];
		fprintf(G->csv,
		        "%.6f,%" PRIu64 ",%u,%s,%g,%.6f,%" PRIu64 ",%.6f,%" PRIu64 ",%" PRIu64
		        ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
		        ",%" PRIu64 ",%" PRIu64 ",",
		        t_s, x->round, k + 1, G->name[k], G->g[k].weight,
		        G->g[k].weight / G->weight_sum, x->usage.v[0],
		        used ? (double)x->usage.v[0] / (double)used : 0.0, x->allow.v[0],
		        x->alloc.v[0], x->demand.v[0], x->usage.v[1], x->allow.v[1], x->demand.v[1],
		        x->usage.v[2], x->allow.v[2], x->demand.v[2], placed);
		if (placed > 0) /* no placement: no delay (empty fields) */
			fprintf(G->csv, "%.6f,%.6f", bins_delay_ms(d, 0.5), bins_delay_ms(d, 0.99));
		else
			fputc(',', G->csv);
		fprintf(G->csv, ",%" PRIu64 "\n", x->held_back);
	}
	G->rows++;
}

void drv_grp_round(run *R, uint64_t now)
{
	if (R->grp != NULL)
		grp_rows(R, (double)(now - R->t0) / 1e9);
}

int drv_grp_plot(run *R)
{
	drv_grp *G = R->grp;
	cli_out *png = &R->outs[DRV_OUT_GROUPS_PNG], *gp = &R->outs[DRV_OUT_GROUPS_GP];
	if (G == NULL || R->cfg.groups_png == NULL || gp->f == NULL)
		return 0;
	if (G->rows == 0) {
		fprintf(stderr, "rusk: --groups-png %s: no rows in --groups-csv %s to draw\n",
		        R->cfg.groups_png, R->cfg.groups_csv);
		cli_outs_discard(png, 2);
		return RUSK_EXIT_FAIL;
	}
	/* The script takes the chart's file from `out` (the target by default); gnuplot
	 * draws into its temporary file, renamed into place once gnuplot succeeded. */
	FILE *g = gp->f;
	fprintf(g, "if (!exists(\"out\")) out = '%s'\ndata = '%s'\nn = %u\nnames = \"",
	        R->cfg.groups_png, R->cfg.groups_csv, G->n);
	for (uint32_t k = 0; k < G->n; k++)
		fprintf(g, "%s%s", k ? " " : "", G->name[k]);
	fprintf(g,
	        "\"\nset datafile separator ','\n"
	        "set terminal pngcairo size 1440,900 noenhanced\nset output out\n"
	        "set multiplot layout 2,3 title 'quota groups (--groups-file %s), %s'\n"
	        "set key top left\nset grid\nset xlabel 'time (s)'\n"
	        "set title 'usage'\nset ylabel 'RUs'\n"
	        "plot for [k=1:n] data skip 1 every n::(k-1) using 1:7 with lines lc k "
	        "title word(names, k)\n"
	        "set title 'share of the usage (dashed: share of the weights)'\n"
	        "set ylabel 'share'\nset yrange [0:1]\n"
	        "plot for [k=1:n] data skip 1 every n::(k-1) using 1:8 with lines lc k "
	        "title word(names, k), for [k=1:n] data skip 1 every n::(k-1) using 1:6 with "
	        "lines dt 2 lc k notitle\nset autoscale y\n"
	        "set title 'allowance'\nset ylabel 'RUs'\n"
	        "plot for [k=1:n] data skip 1 every n::(k-1) using 1:9 with lines lc k "
	        "title word(names, k)\n"
	        "set title 'demand (usage + held back)'\nset ylabel 'RUs'\n"
	        "plot for [k=1:n] data skip 1 every n::(k-1) using 1:11 with lines lc k "
	        "title word(names, k)\n"
	        "set title 'placements per %s'\nset ylabel 'tasks'\n"
	        "plot for [k=1:n] data skip 1 every n::(k-1) using 1:18 with lines lc k "
	        "title word(names, k)\n"
	        "set title 'scheduling delay p99 of those placements'\nset ylabel 'ms'\n"
	        "set logscale y\n"
	        "plot for [k=1:n] data skip 1 every n::(k-1) using 1:20 with lines lc k "
	        "title word(names, k)\nunset multiplot\n",
	        R->cfg.groups_file,
	        R->cfg.sim ? "rusk sim: a row per coordinator round" : "rusk run: a row per second",
	        R->cfg.sim ? "round" : "second");
	if (cli_out_close(gp) != 0) {
		cli_out_discard(png);
		return RUSK_EXIT_FAIL;
	}
	char cmd[9000];
	snprintf(cmd, sizeof cmd, "gnuplot -e \"out='%s'\" '%s'", cli_out_name(png), R->groups_gp);
	fflush(NULL); /* nothing of ours is written twice by the child */
	int rc = system(cmd);
	if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
		if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 127)
			fprintf(stderr, "rusk: --groups-png: gnuplot not found: apt-get install -y "
			                "gnuplot-nox\n");
		else
			fprintf(stderr, "rusk: --groups-png: gnuplot failed on %s\n", R->groups_gp);
		cli_out_discard(png);
		return RUSK_EXIT_FAIL;
	}
	return cli_out_close(png) != 0 ? RUSK_EXIT_FAIL : 0;
}

bool drv_grp_ok(const run *R)
{
	const drv_grp *G = R->grp;
	for (uint32_t k = 0; G != NULL && R->d != NULL && k < G->n; k++) {
		rusk_dispatch_group o;
		if (rusk_dispatch_group_get(R->d, k + 1, &o) != RUSK_OK)
			continue;
		if (o.fair_failures > 0)
			return false;
		for (int d = 0; d < RUSK_QUOTA_DIMS; d++)
			if (o.over.v[d] > o.bound.v[d])
				return false;
	}
	return true;
}

static void grp_print(run *R)
{
	drv_grp *G = R->grp;
	fprintf(R->out, "quota groups (--groups-file %s): %s\n", R->cfg.groups_file,
	        drv_grp_ok(R) ? "fair every round, no overshoot past the bound"
	                      : "CHECK FAILED (unfair round or overshoot past the bound)");
	for (uint32_t k = 0; k < G->n; k++) {
		rusk_dispatch_group o;
		if (rusk_dispatch_group_get(R->d, k + 1, &o) != RUSK_OK)
			memset(&o, 0, sizeof o);
		fprintf(R->out,
		        "  %-12s weight %-5g placed %-9" PRIu64 " delay p50 %.3f ms p99 %.3f ms; "
		        "last round: usage %" PRIu64 " allowance %" PRIu64 " demand %" PRIu64
		        " RUs; held back %" PRIu64 ", overshoot %" PRIu64 " (bound %" PRIu64 ")\n",
		        G->name[k], G->g[k].weight, rusk_load64(&G->placed[k], RUSK_RELAXED),
		        grp_delay_ms(G, k, 0.5), grp_delay_ms(G, k, 0.99), o.usage.v[0],
		        o.allow.v[0], o.demand.v[0], o.held_back, o.over.v[0], o.bound.v[0]);
	}
}

static void grp_json(FILE *f, run *R)
{
	drv_grp *G = R->grp;
	fprintf(f,
	        "  \"groups\": {\"file\": \"%s\", \"ok\": %s, \"by_trace\": %s, "
	        "\"ungrouped_tasks\": %" PRIu64 ", \"list\": [",
	        R->cfg.groups_file, drv_grp_ok(R) ? "true" : "false",
	        G->by_trace ? "true" : "false",
	        rusk_load64(&G->tasks[RUSK_QUOTA_MAX_GROUPS], RUSK_RELAXED));
	for (uint32_t k = 0; k < G->n; k++) {
		rusk_dispatch_group o;
		if (rusk_dispatch_group_get(R->d, k + 1, &o) != RUSK_OK)
			memset(&o, 0, sizeof o);
		fprintf(f,
		        "%s\n    {\"name\": \"%s\", \"weight\": %g, \"tasks\": %" PRIu64
		        ", \"placed\": %" PRIu64
		        ", \"delay_p50_ms\": %.6f, \"delay_p99_ms\": %.6f, \"rounds\": %" PRIu64
		        ", \"held_back\": %" PRIu64 ", \"fair_failures\": %" PRIu64,
		        k ? "," : "", G->name[k], G->g[k].weight,
		        rusk_load64(&G->tasks[k], RUSK_RELAXED),
		        rusk_load64(&G->placed[k], RUSK_RELAXED), grp_delay_ms(G, k, 0.5),
		        grp_delay_ms(G, k, 0.99), o.round, o.held_back, o.fair_failures);
		for (int d = 0; d < RUSK_QUOTA_DIMS; d++)
			fprintf(f,
			        ", \"%s\": {\"min\": %" PRIu64
			        ", \"max\": %.0f, \"usage\": %" PRIu64 ", \"allowance\": %" PRIu64
			        ", \"overshoot\": %" PRIu64 ", \"bound\": %" PRIu64 "}",
			        grp_dims[d], G->g[k].min.v[d],
			        G->g[k].max.v[d] == RUSK_QUOTA_UNLIMITED ? -1.0
			                                                 : (double)G->g[k].max.v[d],
			        o.usage.v[d], o.allow.v[d], o.over.v[d], o.bound.v[d]);
		/* the last: placements so far at each second (not "placed", the total's key) */
		static const char *const col[] = {"usage_rus", "allowance_rus", "alloc_rus",
		                                  "demand_rus", "placed_so_far"};
		for (int c = 0; c < 5; c++) {
			fprintf(f, ", \"%s\": [", col[c]);
			for (uint32_t s = 0; s < G->secs; s++) {
				const grp_sample *x = &G->s[(size_t)s * G->n + k];
				uint64_t v = c == 0   ? x->usage
				             : c == 1 ? x->allow
				             : c == 2 ? x->alloc
				             : c == 3 ? x->demand
				                      : x->placed;
				fprintf(f, "%s%" PRIu64, s ? ", " : "", v);
			}
			fputc(']', f);
		}
		fputc('}', f);
	}
	fprintf(f, "]},\n");
}

static void grp_free(run *R)
{
	if (R->grp != NULL)
		free(R->grp->s);
	free(R->grp);
	R->grp = NULL;
}

const drv_feature drv_feature_grp = {
        .name = "quota groups",
        .on = grp_on,
        .setup = grp_setup,
        .task = grp_task,
        .params = grp_params,
        .second = grp_second,
        .event = grp_event,
        .json = grp_json,
        .print = grp_print,
        .free = grp_free,
};
