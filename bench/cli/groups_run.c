/* SPDX-License-Identifier: MIT */
/*
 * Quota groups in `rusk run --groups-file FILE` (ParSync §2 and §7; the library's side is
 * rusk/dispatch.h, "Quota groups", and rusk/quota.h).
 *
 * The file: one group a line, `NAME WEIGHT [min:DIM=N] [max:DIM=N] ...`, DIM one of rus
 * (RUs), mem (MiB), gpu (milli-GPUs); '#' starts a comment. Every error names the file and
 * line (or the file, for the minimums' sum against the cluster) and the run exits 2.
 *
 * Tasks: a generated task of id i is in group 1 + i mod n (every group offers the same
 * load; the weights decide who gets what when the cluster is overloaded).
 *
 * Reports: per group, each second (the sampler) its RU usage, allowance, allocation and
 * demand as the dispatcher's last coordinator round had them, its placements and its
 * scheduling delay (p50 / p99 from a log2 histogram of 64 bins; atomic adds from the
 * placing agents: CLI instrumentation, only with groups on); the JSON section "groups" and
 * one summary line per group; the run fails (exit 1) when a round's allocation failed the
 * fairness check or a group grew past its allowance by more than the stated bound.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	uint64_t placed[RUSK_QUOTA_MAX_GROUPS];         /* atomic adds (placing agents) */
	uint64_t bins[RUSK_QUOTA_MAX_GROUPS][GRP_BINS]; /* delay, log2 ns; atomic adds */
	grp_sample *s;                                  /* [secs][n], the sampler's */
	uint32_t secs, cap;
};

static const char *const grp_dims[RUSK_QUOTA_DIMS] = {"rus", "mem", "gpu"};

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

static int grp_setup(run *R, const drv_setup_in *in)
{
	(void)in;
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

/* A generated task's group: task i goes to group 1 + i mod n (the task hook). */
static bool grp_task(run *R, uint64_t id, const rusk_arrival *x, rusk_dtask_spec *spec)
{
	(void)x;
	spec->group = (uint16_t)(1 + id % R->grp->n);
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
}

/* The delay below which a share q of group g's placements fall, ms (upper bin edge). */
static double grp_delay_ms(const drv_grp *G, uint32_t g, double q)
{
	uint64_t n = 0, seen = 0;
	for (int b = 0; b < GRP_BINS; b++)
		n += G->bins[g][b];
	if (n == 0)
		return 0;
	for (int b = 0; b < GRP_BINS; b++) {
		seen += G->bins[g][b];
		if ((double)seen >= q * (double)n)
			return ldexp(1.0, b + 1) / 1e6;
	}
	return ldexp(1.0, GRP_BINS) / 1e6;
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
	fprintf(f, "  \"groups\": {\"file\": \"%s\", \"ok\": %s, \"list\": [", R->cfg.groups_file,
	        drv_grp_ok(R) ? "true" : "false");
	for (uint32_t k = 0; k < G->n; k++) {
		rusk_dispatch_group o;
		if (rusk_dispatch_group_get(R->d, k + 1, &o) != RUSK_OK)
			memset(&o, 0, sizeof o);
		fprintf(f,
		        "%s\n    {\"name\": \"%s\", \"weight\": %g, \"placed\": %" PRIu64
		        ", \"delay_p50_ms\": %.6f, \"delay_p99_ms\": %.6f, \"rounds\": %" PRIu64
		        ", \"held_back\": %" PRIu64 ", \"fair_failures\": %" PRIu64,
		        k ? "," : "", G->name[k], G->g[k].weight,
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
		static const char *const col[] = {"usage_rus", "allowance_rus", "alloc_rus",
		                                  "demand_rus", "placed"};
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
