/* SPDX-License-Identifier: MIT */
/* Load generation and trace replay (design note in loadgen.h). */
#include "loadgen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void rusk_loadgen_init(rusk_loadgen *g, double rate, const double *phases, int n_phases,
                       double phase_s, int dist, double mean_s, uint32_t rus, uint64_t seed)
{
	memset(g, 0, sizeof *g);
	g->rate = rate;
	g->phase_s = phase_s;
	g->n_phases = n_phases > RUSK_LG_MAX_PHASES ? RUSK_LG_MAX_PHASES : n_phases;
	memcpy(g->phases, phases, sizeof(double) * (size_t)g->n_phases);
	g->dist = dist;
	g->mean_s = mean_s;
	g->rus = rus;
	rusk_rng_seed(&g->rng, seed, 0x67656e /* "gen" */);
	g->at_phase = -1;
}

double rusk_duration_draw(rusk_rng *r, int dist, double mean_s)
{
	if (dist == RUSK_DUR_FIXED)
		return mean_s;
	if (dist == RUSK_DUR_EXP)
		return -log(1.0 - rusk_rng_unit(r)) * mean_s;
	/* Lognormal with the given mean whose sigma puts 87% of tasks within 10 s (ParSync
	 * Fig. 1b): with z = Phi^-1(0.87), ln 10 = ln mean - s^2/2 + z s, smaller root. Means
	 * under ~5.3 s put more than 87% within 10 s for every sigma; then s = z, the closest
	 * (88.1% at a 5 s mean). */
	const double z = 1.126391;
	double disc = z * z - 2.0 * log(10.0 / mean_s);
	double s = disc > 0 ? z - sqrt(disc) : z;
	double median = mean_s / exp(s * s / 2);
	double u1 = rusk_rng_unit(r), u2 = rusk_rng_unit(r);
	double n = sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
	return median * exp(s * n);
}

int rusk_loadgen_next(rusk_loadgen *g, rusk_arrival *out)
{
	while (g->phase < g->n_phases) {
		if (g->at_phase != g->phase) { /* once per phase, the same values as per call */
			g->phase_rate = g->rate * g->phases[g->phase] / 100.0;
			g->phase_end_s = (g->phase + 1) * g->phase_s;
			g->at_phase = g->phase;
		}
		double rate = g->phase_rate, end = g->phase_end_s;
		if (rate > 0) {
			/* Memoryless: restarting the exponential gap at a phase boundary keeps
			 * the process Poisson within each phase. */
			double t = g->t - log(1.0 - rusk_rng_unit(&g->rng)) / rate;
			if (t < end) {
				g->t = t;
				out->t_s = t;
				out->duration_s = rusk_duration_draw(&g->rng, g->dist, g->mean_s);
				out->rus = g->rus;
				out->priority = 0;
				return 0;
			}
		}
		g->t = end;
		g->phase++;
	}
	return -1;
}

static int cmp_arrival(const void *a, const void *b)
{
	double x = ((const rusk_arrival *)a)->t_s, y = ((const rusk_arrival *)b)->t_s;
	return (x > y) - (x < y);
}

static int num(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || errno != 0 || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

static int split(char *line, char **f, int max)
{
	int n = 0;
	f[n++] = line;
	for (char *p = line; *p; p++)
		if (*p == ',') {
			*p = '\0';
			if (n == max)
				return max + 1;
			f[n++] = p + 1;
		}
	return n;
}

int rusk_trace_load(const char *path, int format, rusk_arrival **out, size_t *n_out, char *err,
                    size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return rusk_errf(err, errlen, RUSK_EIO, "%s: cannot open: %s", path,
		                 strerror(errno));
	rusk_arrival *a = NULL;
	size_t n = 0, cap = 0;
	char buf[4096];
	unsigned line = 0;
	int rc = RUSK_OK, want = format == RUSK_TRACE_OPENB ? 11 : 0;
	int col[8]; /* csv: field index of arrival_s, duration_s, rus, cpu_milli, mem_mib, gpus,
	             * priority, preferred (-1: absent) */
	bool header = false;
	while (fgets(buf, sizeof buf, f) != NULL) {
		line++;
		size_t len = strlen(buf);
		if (len > 0 && buf[len - 1] != '\n' && !feof(f)) {
			rc = rusk_errf(err, errlen, RUSK_EPARSE, "%s:%u: line too long", path,
			               line);
			goto out;
		}
		while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			buf[--len] = '\0';
		if (len == 0 || (format == RUSK_TRACE_CSV && buf[0] == '#'))
			continue;
		char *fl[13];
		int nf = split(buf, fl, 12);
		if (!header) {
			header = true;
			if (format == RUSK_TRACE_OPENB) {
				if (nf != 11 || strcmp(fl[0], "name") != 0 ||
				    strcmp(fl[1], "cpu_milli") != 0 ||
				    strcmp(fl[8], "creation_time") != 0 ||
				    strcmp(fl[9], "deletion_time") != 0) {
					rc = rusk_errf(
					        err, errlen, RUSK_EPARSE,
					        "%s:%u: not an openb pod list header "
					        "(name,cpu_milli,"
					        "...,creation_time,deletion_time,scheduled_time)",
					        path, line);
					goto out;
				}
			} else {
				for (int k = 0; k < 8; k++)
					col[k] = -1;
				static const char *names[8] = {"arrival_s", "duration_s", "rus",
				                               "cpu_milli", "mem_mib",    "gpus",
				                               "priority",  "preferred"};
				for (int i = 0; i < nf && i < 12; i++) {
					int k = 0;
					while (k < 8 && strcmp(fl[i], names[k]) != 0)
						k++;
					if (k == 8 || col[k] >= 0) {
						rc = rusk_errf(err, errlen, RUSK_EPARSE,
						               "%s:%u: column '%s' is unknown or "
						               "repeated (known: "
						               "arrival_s, duration_s, rus or "
						               "cpu_milli, mem_mib, "
						               "gpus, priority, preferred)",
						               path, line, fl[i]);
						goto out;
					}
					col[k] = i;
				}
				if (col[0] < 0 || col[1] < 0 || (col[2] < 0) == (col[3] < 0) ||
				    nf > 12) {
					rc = rusk_errf(err, errlen, RUSK_EPARSE,
					               "%s:%u: header must name arrival_s, "
					               "duration_s and one of "
					               "rus or cpu_milli",
					               path, line);
					goto out;
				}
				want = nf;
			}
			continue;
		}
		if (nf != want) {
			rc = rusk_errf(err, errlen, RUSK_EPARSE,
			               "%s:%u: expected %d fields, found %d", path, line, want,
			               nf > want ? want + 1 : nf);
			goto out;
		}
		rusk_arrival x = {0};
		double v1, v2, v3;
		if (format == RUSK_TRACE_OPENB) {
			if (num(fl[1], &v1) || v1 <= 0 || v1 > RUSK_MAX_RUS_PER_MACHINE * 1000.0) {
				rc = rusk_errf(err, errlen, RUSK_EPARSE,
				               "%s:%u: cpu_milli '%s' is not a number in 1..%u000",
				               path, line, fl[1], RUSK_MAX_RUS_PER_MACHINE);
				goto out;
			}
			if (num(fl[8], &v2) || v2 < 0) {
				rc = rusk_errf(err, errlen, RUSK_EPARSE,
				               "%s:%u: creation_time '%s' is not a time >= 0", path,
				               line, fl[8]);
				goto out;
			}
			if (num(fl[9], &v3) || v3 < v2) {
				rc = rusk_errf(
				        err, errlen, RUSK_EPARSE,
				        "%s:%u: deletion_time '%s' is not a time >= creation_time",
				        path, line, fl[9]);
				goto out;
			}
			x.t_s = v2;
			x.duration_s = v3 - v2 > 0.001 ? v3 - v2 : 0.001;
			x.rus = (uint32_t)ceil(v1 / 1000.0);
			x.priority = strcmp(fl[6], "LS") == 0 || strcmp(fl[6], "Guaranteed") == 0;
		} else {
			const char *f_arr = fl[col[0]], *f_dur = fl[col[1]];
			if (num(f_arr, &v1) || v1 < 0) {
				rc = rusk_errf(err, errlen, RUSK_EPARSE,
				               "%s:%u: arrival_s '%s' is not a time >= 0", path,
				               line, f_arr);
				goto out;
			}
			if (num(f_dur, &v2) || v2 <= 0) {
				rc = rusk_errf(err, errlen, RUSK_EPARSE,
				               "%s:%u: duration_s '%s' is not a positive number",
				               path, line, f_dur);
				goto out;
			}
			if (col[2] >= 0) {
				if (num(fl[col[2]], &v3) || v3 < 1 ||
				    v3 > RUSK_MAX_RUS_PER_MACHINE || v3 != floor(v3)) {
					rc = rusk_errf(err, errlen, RUSK_EPARSE,
					               "%s:%u: rus '%s' is not an integer in 1..%u",
					               path, line, fl[col[2]],
					               RUSK_MAX_RUS_PER_MACHINE);
					goto out;
				}
			} else {
				if (num(fl[col[3]], &v3) || v3 <= 0 ||
				    ceil(v3 / 1000.0) > RUSK_MAX_RUS_PER_MACHINE) {
					rc = rusk_errf(
					        err, errlen, RUSK_EPARSE,
					        "%s:%u: cpu_milli '%s' is not a number in 1..%u000",
					        path, line, fl[col[3]], RUSK_MAX_RUS_PER_MACHINE);
					goto out;
				}
				v3 = ceil(v3 / 1000.0);
			}
			for (int k = 4; k <= 5; k++) {
				double extra;
				if (col[k] >= 0 && (num(fl[col[k]], &extra) || extra < 0)) {
					rc = rusk_errf(err, errlen, RUSK_EPARSE,
					               "%s:%u: %s '%s' is not a number >= 0", path,
					               line, k == 4 ? "mem_mib" : "gpus",
					               fl[col[k]]);
					goto out;
				}
			}
			x.t_s = v1;
			x.duration_s = v2;
			x.rus = (uint32_t)v3;
			if (col[6] >= 0) {
				const char *pr = fl[col[6]];
				if (strcmp(pr, "0") != 0 && strcmp(pr, "1") != 0) {
					rc = rusk_errf(err, errlen, RUSK_EPARSE,
					               "%s:%u: priority '%s' is not 0 or 1", path,
					               line, pr);
					goto out;
				}
				x.priority = pr[0] == '1';
			}
			if (col[7] >= 0 && fl[col[7]][0] != '\0') {
				char *pp = fl[col[7]];
				for (char *tok = strtok(pp, "|"); tok; tok = strtok(NULL, "|")) {
					double m;
					if (x.n_pref == RUSK_TRACE_MAX_PREF || num(tok, &m) ||
					    m < 0 || m != floor(m) || m > UINT32_MAX) {
						rc = rusk_errf(err, errlen, RUSK_EPARSE,
						               "%s:%u: preferred must be up to %d "
						               "machine ids "
						               "separated by '|'",
						               path, line, RUSK_TRACE_MAX_PREF);
						goto out;
					}
					x.pref[x.n_pref++] = (uint32_t)m;
				}
			}
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			rusk_arrival *na = realloc(a, cap * sizeof *a);
			if (na == NULL) {
				rc = rusk_errf(err, errlen, RUSK_ENOMEM, "%s: out of memory", path);
				goto out;
			}
			a = na;
		}
		a[n++] = x;
	}
	if (!header) {
		rc = rusk_errf(err, errlen, RUSK_EPARSE, "%s:1: empty file (no header)", path);
		goto out;
	}
	if (n == 0) {
		rc = rusk_errf(err, errlen, RUSK_EPARSE, "%s: no tasks after the header", path);
		goto out;
	}
	qsort(a, n, sizeof *a, cmp_arrival);
	double t0 = a[0].t_s;
	for (size_t i = 0; i < n; i++)
		a[i].t_s -= t0;
	*out = a;
	*n_out = n;
	a = NULL;
out:
	free(a);
	fclose(f);
	return rc;
}

rusk_arrival *rusk_trace_expand(const rusk_arrival *in, size_t n, double scale, uint32_t replicas,
                                size_t *n_out)
{
	if (n == 0 || !(scale > 0) || replicas == 0)
		return NULL;
	rusk_arrival *o = malloc(sizeof *o * n * replicas);
	if (o == NULL)
		return NULL;
	double span = in[n - 1].t_s / scale;
	if (span <= 0)
		span = 1e-9;
	size_t k = 0;
	for (uint32_t j = 0; j < replicas; j++) {
		double shift = span * j / replicas;
		for (size_t i = 0; i < n; i++) {
			o[k] = in[i];
			o[k].t_s = fmod(in[i].t_s / scale + shift, span);
			o[k].duration_s = in[i].duration_s / scale;
			k++;
		}
	}
	qsort(o, k, sizeof *o, cmp_arrival);
	*n_out = k;
	return o;
}
