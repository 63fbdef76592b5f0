/* SPDX-License-Identifier: MIT */
/* Load generation and trace replay (design note in loadgen.h). */
#include "workload/loadgen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"

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

/* ---- trace replay -------------------------------------------------------------------------- */

#define TRACE_LINE_MAX   (1u << 20)   /* longest data line; comment lines may be any length */
#define TRACE_STREAM_MAX (1ull << 32) /* bytes read from a pipe or a device (no end known) */
#define TRACE_FIELDS     16           /* fields kept per line; more are counted, not kept */
#define OPENB_COLS       11
#define OPENB_SHAPE_COLS 5 /* the shapes only: name .. gpu_milli (openb_pod_list_multigpu*) */

static const char *const openb_cols[OPENB_COLS] = {
        "name", "cpu_milli", "memory_mib",    "num_gpu",       "gpu_milli",     "gpu_spec",
        "qos",  "pod_phase", "creation_time", "deletion_time", "scheduled_time"};

/* Arrival time, then the source line: rows with equal times keep the file's order whatever
 * qsort's algorithm (equal time and line means two copies of one row: interchangeable). */
static int cmp_arrival(const void *a, const void *b)
{
	const rusk_arrival *x = a, *y = b;
	if (x->t_s != y->t_s)
		return (x->t_s > y->t_s) - (x->t_s < y->t_s);
	return (x->line > y->line) - (x->line < y->line);
}

/* A decimal number: digits, a point, an exponent. strtod alone would also take hex
 * ("0x10"), "inf" and "nan", which no trace means. */
static int num(const char *s, double *out)
{
	if (*s == '\0' || s[strspn(s, "0123456789+-.eE")] != '\0')
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (*end != '\0' || errno != 0 || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* A whole number in decimal digits only (no sign, point, exponent or base prefix), <= max. */
static int whole(const char *s, uint64_t max, uint64_t *out)
{
	if (*s == '\0')
		return -1;
	uint64_t v = 0;
	for (const char *p = s; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		uint64_t d = (uint64_t)(*p - '0');
		if (v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Blanks (spaces, tabs) around a field are dropped, on both sides alike. */
static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

/* Splits line in place at commas, trims each field, keeps the first max in f; returns the
 * number of fields in all (so an error can say how many there really are). */
static int split(char *line, char **f, int max)
{
	int n = 0;
	for (char *p = line;; n++) {
		char *end = p + strcspn(p, ",");
		bool last = *end == '\0';
		*end = '\0';
		if (n < max)
			f[n] = trim(p);
		if (last)
			return n + 1;
		p = end + 1;
	}
}

typedef struct trace_reader {
	FILE *f;
	const char *path;
	char *buf;
	size_t cap, len;
	unsigned line;
	uint64_t bytes, max_bytes;
	bool comments; /* csv: a line whose first non-blank byte is '#' is a comment */
} trace_reader;

/* Opens path for reading. A directory is refused (reading one fails after fopen succeeds);
 * a pipe or device is read up to TRACE_STREAM_MAX bytes, so /dev/zero or an endless
 * stream ends with an error instead of running forever. */
static int rd_open(trace_reader *r, const char *path, bool comments, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->path = path;
	r->comments = comments;
	if ((r->f = fopen(path, "r")) == NULL)
		return rusk_errf(err, errlen, RUSK_EIO, "%s: cannot open: %s", path,
		                 strerror(errno));
	struct stat st;
	int rc = RUSK_OK;
	if (fstat(fileno(r->f), &st) != 0)
		rc = rusk_errf(err, errlen, RUSK_EIO, "%s: cannot stat: %s", path, strerror(errno));
	else if (S_ISDIR(st.st_mode))
		rc = rusk_errf(err, errlen, RUSK_EIO, "%s: is a directory, not a trace file", path);
	else if ((r->buf = malloc(r->cap = 256)) == NULL)
		rc = rusk_errf(err, errlen, RUSK_ENOMEM, "%s: out of memory", path);
	if (rc != RUSK_OK) {
		fclose(r->f);
		r->f = NULL;
		return rc;
	}
	r->max_bytes = S_ISREG(st.st_mode) ? UINT64_MAX : TRACE_STREAM_MAX;
	return RUSK_OK;
}

static void rd_close(trace_reader *r)
{
	if (r->f != NULL)
		fclose(r->f);
	free(r->buf);
}

static int rd_put(trace_reader *r, int c, char *err, size_t errlen)
{
	if (r->len + 1 == r->cap) {
		if (r->cap >= TRACE_LINE_MAX)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: line longer than %u bytes", r->path, r->line,
			                 TRACE_LINE_MAX - 1);
		char *nb = realloc(r->buf, r->cap * 2);
		if (nb == NULL)
			return rusk_errf(err, errlen, RUSK_ENOMEM, "%s: out of memory", r->path);
		r->buf = nb;
		r->cap *= 2;
	}
	r->buf[r->len++] = (char)c;
	return RUSK_OK;
}

/*
 * Reads the next line into r->buf (NUL-terminated, r->len bytes) without its end: "\n",
 * "\r\n" or a lone "\r" (classic Mac files). A UTF-8 byte-order mark opening the file is
 * dropped. A comment line is read to its end, whatever its length, and comes back empty.
 * Returns 1, 0 at the end of the file, or an error: a NUL byte (a binary file: a row must
 * not vanish or be misread because C strings stop there), a data line over TRACE_LINE_MAX,
 * a stream over max_bytes, a read error.
 */
static int rd_line(trace_reader *r, char *err, size_t errlen)
{
	bool started = false, comment = false, blank = true;
	size_t col = 0;
	r->len = 0;
	int c, rc;
	while ((c = getc(r->f)) != EOF) {
		if (!started) {
			started = true;
			r->line++;
		}
		if (++r->bytes > r->max_bytes)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: more than %llu bytes from a pipe or device (not a "
			                 "regular file); stopped reading",
			                 r->path, r->line, (unsigned long long)r->max_bytes);
		if (c == '\n')
			break;
		if (c == '\r') {
			int d = getc(r->f);
			if (d == '\n')
				r->bytes++;
			else if (d != EOF)
				ungetc(d, r->f);
			break;
		}
		col++;
		if (c == '\0')
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: NUL byte at column %zu (not a text file)", r->path,
			                 r->line, col);
		if (comment)
			continue;
		if (blank && c == '#' && r->comments) {
			comment = true;
			continue;
		}
		blank = blank && (c == ' ' || c == '\t');
		if ((rc = rd_put(r, c, err, errlen)) != RUSK_OK)
			return rc;
		if (r->line == 1 && r->len == 3 && memcmp(r->buf, "\xef\xbb\xbf", 3) == 0) {
			r->len = 0; /* the byte-order mark some editors put first */
			blank = true;
		}
	}
	if (ferror(r->f))
		return rusk_errf(err, errlen, RUSK_EIO, "%s:%u: read error: %s", r->path,
		                 r->line + !started, strerror(errno));
	if (comment)
		r->len = 0;
	r->buf[r->len] = '\0';
	return started;
}

/* The openb header: every column by name, in order; an error names the first wrong one or
 * every missing one. With shapes, the first OPENB_SHAPE_COLS alone are a header too (*cols:
 * how many the rows have). */
static int openb_header(char **fl, int nf, bool shapes, int *cols, const char *path, unsigned line,
                        char *err, size_t errlen)
{
	*cols = OPENB_COLS;
	char want[256] = "", missing[160] = "";
	for (int i = 0; i < OPENB_COLS; i++)
		snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? "," : "",
		         openb_cols[i]);
	for (int i = 0; i < OPENB_COLS && i < nf; i++)
		if (strcmp(fl[i], openb_cols[i]) != 0)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: not an openb pod list header: column %d is '%s', "
			                 "expected '%s' (the expected header: %s)",
			                 path, line, i + 1, fl[i], openb_cols[i], want);
	if (nf == OPENB_SHAPE_COLS && shapes) {
		*cols = OPENB_SHAPE_COLS;
		return RUSK_OK;
	}
	for (int i = nf; i < OPENB_COLS; i++)
		snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
		         i > nf ? ", " : "", openb_cols[i]);
	if (nf < OPENB_COLS)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: not an openb pod list header: missing column%s %s "
		                 "(the expected header: %s)%s",
		                 path, line, OPENB_COLS - nf > 1 ? "s" : "", missing, want,
		                 nf == OPENB_SHAPE_COLS ? "; a list of pod shapes without times "
		                                          "is read by `rusk experiment fgd` only"
		                                        : "");
	if (nf > OPENB_COLS)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: not an openb pod list header: %d columns, expected %d "
		                 "(the expected header: %s)",
		                 path, line, nf, OPENB_COLS, want);
	return RUSK_OK;
}

/* A generic header: known names in any order; col[k] = field of names[k] or -1. */
enum { CSV_COLS = 15 };
static int csv_header(char **fl, int nf, int col[CSV_COLS], const char *path, unsigned line,
                      char *err, size_t errlen)
{
	static const char *names[CSV_COLS] = {"arrival_s", "duration_s", "rus",      "cpu_milli",
	                                      "mem_mib",   "gpus",       "priority", "preferred",
	                                      "gpu_milli", "gpu_models", "target_s", "user",
	                                      "job_name",  "deadline_s", "group"};
	for (int k = 0; k < CSV_COLS; k++)
		col[k] = -1;
	for (int i = 0; i < nf && i < TRACE_FIELDS; i++) {
		int k = 0;
		while (k < CSV_COLS && strcmp(fl[i], names[k]) != 0)
			k++;
		if (k == CSV_COLS || col[k] >= 0)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: column '%s' is unknown or repeated (known: "
			                 "arrival_s, duration_s, rus or cpu_milli, mem_mib, gpus, "
			                 "gpu_milli, gpu_models, priority, preferred, target_s, "
			                 "user, job_name, deadline_s, group)",
			                 path, line, fl[i]);
		col[k] = i;
	}
	if (col[0] < 0 || col[1] < 0 || (col[2] < 0) == (col[3] < 0) || nf > TRACE_FIELDS)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: header must name arrival_s, duration_s and one of rus or "
		                 "cpu_milli",
		                 path, line);
	return RUSK_OK;
}

static bool one_of(const char *s, const char *const *set, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, set[i]) == 0)
			return true;
	return false;
}

/* The mask of a '|'-separated list of GPU model names (openb gpu_spec, csv gpu_models),
 * adding new names to the trace's table. Empty: 0 (any model). */
static int parse_models(char *s, rusk_trace_models *tm, uint32_t *mask, const char *col,
                        const char *path, unsigned line, char *err, size_t errlen)
{
	*mask = 0;
	if (s[0] == '\0')
		return RUSK_OK;
	for (char *p = s;;) {
		char *end = p + strcspn(p, "|");
		bool last = *end == '\0';
		*end = '\0';
		char *name = trim(p);
		uint32_t k = 0;
		while (k < tm->n && strcmp(tm->name[k], name) != 0)
			k++;
		if (name[0] == '\0' || strlen(name) >= sizeof tm->name[0] ||
		    k == RUSK_TRACE_MAX_MODELS)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: %s: '%s' is not a GPU model name (1..39 bytes, at "
			                 "most %d distinct models per trace)",
			                 path, line, col, name, RUSK_TRACE_MAX_MODELS);
		if (k == tm->n) {
			snprintf(tm->name[k], sizeof tm->name[k], "%s", name);
			tm->line[k] = line;
			tm->n++;
		}
		*mask |= 1u << k;
		if (last)
			return RUSK_OK;
		p = end + 1;
	}
}

/* A row's quota group by name (csv group; openb qos or GPU model, `col` naming which):
 * its index + 1 in the trace's group table, new names added in order of first use. Empty:
 * 0 (no group). tg NULL: the caller reads no groups (0). */
static int row_group(const char *name, rusk_trace_groups *tg, rusk_arrival *x, const char *col,
                     const char *path, unsigned line, char *err, size_t errlen)
{
	x->group = 0;
	if (tg == NULL || name[0] == '\0')
		return RUSK_OK;
	uint32_t k = 0;
	while (k < tg->n && strcmp(tg->name[k], name) != 0)
		k++;
	if (strlen(name) >= sizeof tg->name[0])
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: %s: '%s' is not a group name (1..%zu bytes)", path, line,
		                 col, name, sizeof tg->name[0] - 1);
	if (k == RUSK_TRACE_MAX_GROUPS)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: %s: '%s' is a group beyond the %d distinct groups a "
		                 "trace may name",
		                 path, line, col, name, RUSK_TRACE_MAX_GROUPS);
	if (k == tg->n) {
		snprintf(tg->name[k], sizeof tg->name[k], "%s", name);
		tg->line[k] = line;
		tg->n++;
	}
	x->group = (uint8_t)(k + 1);
	return RUSK_OK;
}

/* GPUs of a row: num_gpu / gpus and gpu_milli, checked together. */
static int row_gpus(rusk_arrival *x, uint64_t gpus, uint64_t milli, const char *path, unsigned line,
                    char *err, size_t errlen)
{
	if (gpus > 0 && milli == 0)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: %llu GPU(s) of 0 milli: gpu_milli must be 1..1000", path,
		                 line, (unsigned long long)gpus);
	if (gpus == 0 && milli > 0)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: gpu_milli %llu without GPUs (num_gpu/gpus is 0)", path,
		                 line, (unsigned long long)milli);
	if (gpus > 1 && milli != 1000)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: %llu GPUs of %llu milli: a task on several GPUs takes "
		                 "them whole (gpu_milli 1000)",
		                 path, line, (unsigned long long)gpus, (unsigned long long)milli);
	x->gpus = (uint16_t)gpus;
	x->gpu_milli = (uint16_t)milli;
	x->vec = 1;
	return RUSK_OK;
}

/* An openb pod row: arrival, lifetime, RUs, priority from the qos class, its quota group
 * as tg->openb asks (tg NULL: none). */
static int openb_row(char **fl, int nf, rusk_arrival *x, rusk_trace_models *tm,
                     rusk_trace_groups *tg, const char *path, unsigned line, char *err,
                     size_t errlen)
{
	static const char *const qos[4] = {"LS", "Guaranteed", "BE", "Burstable"};
	static const char *const phases[5] = {"Running", "Succeeded", "Failed", "Pending",
	                                      "Unknown"};
	double cpu, t0, t1, ts = 0;
	if (num(fl[1], &cpu) || cpu <= 0 || cpu > RUSK_MAX_RUS_PER_MACHINE * 1000.0)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: cpu_milli '%s' is not a number in 1..%u000", path, line,
		                 fl[1], RUSK_MAX_RUS_PER_MACHINE);
	uint64_t mem, gpus, milli;
	if (whole(fl[2], UINT32_MAX, &mem))
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: memory_mib '%s' is not a whole number in 0..%u", path,
		                 line, fl[2], UINT32_MAX);
	if (whole(fl[3], UINT16_MAX, &gpus))
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: num_gpu '%s' is not a whole number >= 0", path, line,
		                 fl[3]);
	if (whole(fl[4], 1000, &milli))
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: gpu_milli '%s' is not a whole number in 0..1000 (the "
		                 "share of each GPU)",
		                 path, line, fl[4]);
	int grc = row_gpus(x, gpus, milli, path, line, err, errlen);
	/* Its GPU model group before parse_models splits gpu_spec in place: the first name. */
	char model[48] = "cpu"; /* a model name is at most 39 bytes (parse_models) */
	if (gpus > 0 && nf > OPENB_SHAPE_COLS) {
		size_t len = strcspn(fl[5], "|");
		if (len == 0)
			snprintf(model, sizeof model, "gpu");
		else
			snprintf(model, sizeof model, "%.*s", (int)(len < 47 ? len : 47), fl[5]);
		char *end = model + strlen(model); /* blanks before a '|' */
		while (end > model && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = '\0';
	}
	if (grc == RUSK_OK && gpus > 0 && nf > OPENB_SHAPE_COLS)
		grc = parse_models(fl[5], tm, &x->gpu_models, "gpu_spec", path, line, err, errlen);
	if (grc != RUSK_OK)
		return grc;
	x->mem_mib = (uint32_t)mem;
	x->cpu_milli = (uint32_t)ceil(cpu);
	if (nf == OPENB_SHAPE_COLS) { /* a shape: no time, any GPU model, normal priority */
		x->duration_s = 0.001;
		x->rus = (uint32_t)ceil(cpu / 1000.0);
		return RUSK_OK;
	}
	if (!one_of(fl[6], qos, 4))
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: qos '%s' is not LS, Guaranteed, BE or Burstable", path,
		                 line, fl[6]);
	if (!one_of(fl[7], phases, 5))
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: pod_phase '%s' is not Running, Succeeded, Failed, "
		                 "Pending or Unknown",
		                 path, line, fl[7]);
	if (num(fl[8], &t0) || t0 < 0)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: creation_time '%s' is not a time >= 0", path, line, fl[8]);
	if (num(fl[9], &t1) || t1 < t0)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: deletion_time '%s' is not a time >= creation_time", path,
		                 line, fl[9]);
	if (t1 - t0 > RUSK_TRACE_MAX_S)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: deletion_time '%s' is more than %.0e s after "
		                 "creation_time",
		                 path, line, fl[9], RUSK_TRACE_MAX_S);
	if (fl[10][0] != '\0' && (num(fl[10], &ts) || ts < 0))
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: scheduled_time '%s' is neither empty (never scheduled) "
		                 "nor a time >= 0",
		                 path, line, fl[10]);
	x->t_s = t0;
	x->duration_s = t1 - t0 > 0.001 ? t1 - t0 : 0.001;
	x->rus = (uint32_t)ceil(cpu / 1000.0);
	x->priority = one_of(fl[6], qos, 2); /* LS and Guaranteed: latency-sensitive */
	x->never_ran = fl[10][0] == '\0';
	if (tg != NULL && tg->openb == RUSK_TRACE_GROUPS_QOS)
		return row_group(fl[6], tg, x, "qos", path, line, err, errlen);
	if (tg != NULL && tg->openb == RUSK_TRACE_GROUPS_GPU_MODEL)
		return row_group(model, tg, x, "gpu_spec", path, line, err, errlen);
	x->wait_s = !x->never_ran && ts > t0 ? fmin(ts, t1) - t0 : 0;
	return RUSK_OK;
}

/* The 'preferred' field: up to RUSK_TRACE_MAX_PREF machine ids separated by '|'. */
static int csv_preferred(char *s, rusk_arrival *x, const char *path, unsigned line, char *err,
                         size_t errlen)
{
	char copy[128];
	snprintf(copy, sizeof copy, "%s", s);
	for (char *p = s;;) {
		char *end = p + strcspn(p, "|");
		bool last = *end == '\0';
		*end = '\0';
		uint64_t m;
		if (x->n_pref == RUSK_TRACE_MAX_PREF || whole(trim(p), UINT32_MAX - 1, &m))
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: preferred '%s' is not up to %d machine ids (whole "
			                 "numbers) separated by '|'",
			                 path, line, copy, RUSK_TRACE_MAX_PREF);
		x->pref[x->n_pref++] = (uint32_t)m;
		if (last)
			break;
		p = end + 1;
	}
	return RUSK_OK;
}

/* A generic row, columns as the header placed them. */
/* A csv row's vector columns (mem_mib, gpus, gpu_milli, gpu_models), if the header has any. */
static int csv_vec(char **fl, const int col[CSV_COLS], rusk_arrival *x, rusk_trace_models *tm,
                   const char *path, unsigned line, char *err, size_t errlen)
{
	static const char *const what[4] = {"mem_mib", "gpus", "gpu_milli", "gpu_models"};
	static const int at[4] = {4, 5, 8, 9};
	static const uint64_t max[3] = {UINT32_MAX, UINT16_MAX, 1000};
	uint64_t v[3] = {0, 0, 0};
	bool any = false;
	for (int k = 0; k < 4; k++)
		any |= col[at[k]] >= 0;
	if (!any)
		return RUSK_OK;
	for (int k = 0; k < 3; k++)
		if (col[at[k]] >= 0 && whole(fl[col[at[k]]], max[k], &v[k]))
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: %s '%s' is not a whole number in 0..%llu", path,
			                 line, what[k], fl[col[at[k]]], (unsigned long long)max[k]);
	if (col[8] < 0 && v[1] > 0)
		v[2] = 1000; /* whole GPUs unless the trace says otherwise */
	int rc = row_gpus(x, v[1], v[2], path, line, err, errlen);
	if (rc == RUSK_OK && col[9] >= 0 && v[1] > 0)
		rc = parse_models(fl[col[9]], tm, &x->gpu_models, "gpu_models", path, line, err,
		                  errlen);
	x->mem_mib = (uint32_t)v[0];
	return rc;
}

/* FNV-1a of a feature's text: its identity for the runtime predictor (0 stays "none"). */
static uint32_t feature_id(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h ? h : 1;
}

/* A job's 3Sigma columns: user and job_name (features of its runtime history) and
 * deadline_s (seconds after arrival by which it should end: an SLO job; empty: best effort). */
static int csv_job(char **fl, const int col[CSV_COLS], rusk_arrival *x, const char *path,
                   unsigned line, char *err, size_t errlen)
{
	if (col[11] >= 0 && fl[col[11]][0] != '\0')
		x->user = feature_id(fl[col[11]]);
	if (col[12] >= 0 && fl[col[12]][0] != '\0')
		x->job_name = feature_id(fl[col[12]]);
	double v;
	if (col[13] >= 0 && fl[col[13]][0] != '\0') {
		if (num(fl[col[13]], &v) || v <= 0 || v > RUSK_TRACE_MAX_S)
			return rusk_errf(
			        err, errlen, RUSK_EPARSE,
			        "%s:%u: deadline_s '%s' is not a positive number of seconds "
			        "after arrival, up to %.0e (empty: best effort)",
			        path, line, fl[col[13]], RUSK_TRACE_MAX_S);
		x->deadline_s = v;
	}
	return RUSK_OK;
}

static int csv_row(char **fl, const int col[CSV_COLS], rusk_arrival *x, rusk_trace_models *tm,
                   rusk_trace_groups *tg, const char *path, unsigned line, char *err, size_t errlen)
{
	double t, d, v;
	uint64_t u;
	if (num(fl[col[0]], &t) || t < 0)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: arrival_s '%s' is not a time >= 0", path, line,
		                 fl[col[0]]);
	/* The driver counts time in nanoseconds: bound durations so that they convert. */
	if (num(fl[col[1]], &d) || d <= 0 || d > RUSK_TRACE_MAX_S)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: duration_s '%s' is not a positive number of seconds up "
		                 "to %.0e",
		                 path, line, fl[col[1]], RUSK_TRACE_MAX_S);
	if (col[2] >= 0) {
		/* A task of RUs only may span machines (a 1,024-processor job of an SWF log);
		 * one with memory or GPUs must fit one machine (refused at replay if not). */
		if (whole(fl[col[2]], RUSK_TRACE_MAX_RUS, &u) || u < 1)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: rus '%s' is not an integer in 1..%u", path, line,
			                 fl[col[2]], RUSK_TRACE_MAX_RUS);
		x->rus = (uint32_t)u;
	} else {
		if (num(fl[col[3]], &v) || v <= 0 || ceil(v / 1000.0) > RUSK_TRACE_MAX_RUS)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: cpu_milli '%s' is not a number in 1..%u000", path,
			                 line, fl[col[3]], RUSK_TRACE_MAX_RUS);
		x->rus = (uint32_t)ceil(v / 1000.0);
		x->cpu_milli = (uint32_t)ceil(v);
	}
	int vrc = csv_vec(fl, col, x, tm, path, line, err, errlen);
	if (vrc != RUSK_OK)
		return vrc;
	x->t_s = t;
	x->duration_s = d;
	if (col[6] >= 0) {
		const char *pr = fl[col[6]];
		if (strcmp(pr, "0") != 0 && strcmp(pr, "1") != 0)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: priority '%s' is not 0 or 1", path, line, pr);
		x->priority = pr[0] == '1';
	}
	/* target_s: a completion-time target (rusk run/sim --target on); empty: none. */
	if (col[10] >= 0 && fl[col[10]][0] != '\0') {
		if (num(fl[col[10]], &v) || v <= 0 || v > RUSK_TRACE_MAX_S)
			return rusk_errf(
			        err, errlen, RUSK_EPARSE,
			        "%s:%u: target_s '%s' is not a positive number of seconds up "
			        "to %.0e",
			        path, line, fl[col[10]], RUSK_TRACE_MAX_S);
		x->target_s = v;
	}
	int jrc = csv_job(fl, col, x, path, line, err, errlen);
	if (jrc == RUSK_OK && col[14] >= 0)
		jrc = row_group(fl[col[14]], tg, x, "group", path, line, err, errlen);
	if (jrc != RUSK_OK)
		return jrc;
	if (col[7] >= 0 && fl[col[7]][0] != '\0')
		return csv_preferred(fl[col[7]], x, path, line, err, errlen);
	return RUSK_OK;
}

/* Sorts by arrival, makes arrivals relative to the first, and bounds the span so that every
 * time converts to nanoseconds. */
static int trace_finish(rusk_arrival *a, size_t n, const char *path, char *err, size_t errlen)
{
	qsort(a, n, sizeof *a, cmp_arrival);
	double t0 = a[0].t_s;
	if (a[n - 1].t_s - t0 > RUSK_TRACE_MAX_S)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: arrival %.6g s is more than %.0e s after the first (line "
		                 "%u)",
		                 path, a[n - 1].line, a[n - 1].t_s, RUSK_TRACE_MAX_S, a[0].line);
	for (size_t i = 0; i < n; i++)
		a[i].t_s -= t0;
	return RUSK_OK;
}

int rusk_trace_load(const char *path, int format, rusk_arrival **out, size_t *n_out,
                    rusk_trace_models *models, rusk_trace_groups *groups, char *err, size_t errlen)
{
	rusk_trace_models local;
	rusk_trace_models *tm = models != NULL ? models : &local;
	tm->n = 0;
	if (groups != NULL) {
		groups->n = 0;
		groups->given =
		        format == RUSK_TRACE_OPENB && groups->openb != RUSK_TRACE_GROUPS_NONE;
	}
	trace_reader r;
	bool openb = format == RUSK_TRACE_OPENB || format == RUSK_TRACE_OPENB_SHAPES;
	int rc = rd_open(&r, path, format == RUSK_TRACE_CSV, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	rusk_arrival *a = NULL;
	size_t n = 0, cap = 0;
	int want = OPENB_COLS;
	int col[CSV_COLS]; /* csv: field of each known column (csv_header; -1: absent) */
	bool header = false;
	while ((rc = rd_line(&r, err, errlen)) == 1) {
		if (trim(r.buf)[0] == '\0')
			continue; /* blank or comment */
		char *fl[TRACE_FIELDS];
		int nf = split(r.buf, fl, TRACE_FIELDS);
		if (!header) {
			header = true;
			rc = openb ? openb_header(fl, nf, format == RUSK_TRACE_OPENB_SHAPES, &want,
			                          path, r.line, err, errlen)
			           : csv_header(fl, nf, col, path, r.line, err, errlen);
			if (rc != RUSK_OK)
				goto out;
			if (format == RUSK_TRACE_CSV) {
				want = nf;
				if (groups != NULL)
					groups->given = col[14] >= 0;
			}
			continue;
		}
		if (nf != want) {
			rc = rusk_errf(err, errlen, RUSK_EPARSE,
			               "%s:%u: expected %d fields, found %d", path, r.line, want,
			               nf);
			goto out;
		}
		rusk_arrival x = {.line = r.line};
		rc = openb ? openb_row(fl, nf, &x, tm, format == RUSK_TRACE_OPENB ? groups : NULL,
		                       path, r.line, err, errlen)
		           : csv_row(fl, col, &x, tm, groups, path, r.line, err, errlen);
		if (rc != RUSK_OK)
			goto out;
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
	if (rc < 0)
		goto out;
	rc = RUSK_OK;
	if (!header)
		rc = rusk_errf(err, errlen, RUSK_EPARSE, "%s:%u: empty file (no header)", path,
		               r.line > 0 ? r.line : 1);
	else if (n == 0)
		rc = rusk_errf(err, errlen, RUSK_EPARSE, "%s: no tasks after the header", path);
	else
		rc = trace_finish(a, n, path, err, errlen);
	if (rc == RUSK_OK) {
		*out = a;
		*n_out = n;
		a = NULL;
	}
out:
	free(a);
	rd_close(&r);
	return rc;
}

int rusk_trace_check_preferred(const rusk_arrival *a, size_t n, uint32_t machines, const char *path,
                               char *err, size_t errlen)
{
	const rusk_arrival *bad = NULL;
	uint32_t id = 0;
	for (size_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < a[i].n_pref; k++)
			if (a[i].pref[k] >= machines && (bad == NULL || a[i].line < bad->line)) {
				bad = &a[i];
				id = a[i].pref[k];
			}
	if (bad == NULL)
		return RUSK_OK;
	return rusk_errf(err, errlen, RUSK_EPARSE,
	                 "%s:%u: preferred machine %u is beyond the cluster's %u machines "
	                 "(ids 0..%u)",
	                 path, bad->line, id, machines, machines - 1);
}

static double clamp_s(double v)
{
	return v < RUSK_TRACE_MAX_S ? v : RUSK_TRACE_MAX_S;
}

rusk_arrival *rusk_trace_expand(const rusk_arrival *in, size_t n, double scale, uint32_t replicas,
                                size_t *n_out)
{
	if (n == 0 || !(scale > 0) || replicas == 0 || n > SIZE_MAX / sizeof *in / replicas)
		return NULL;
	rusk_arrival *o = malloc(sizeof *o * n * replicas);
	if (o == NULL)
		return NULL;
	/* Copy j is shifted by j/replicas of the mean gap between arrivals: copies interleave,
	 * each keeps the trace's order, times, bursts and gaps, and the rate is multiplied
	 * without wrapping any arrival around to the start (fmod over the span did that: the
	 * last arrival came first). Times are held at RUSK_TRACE_MAX_S, so that a stretching
	 * scale cannot push them past what nanoseconds hold. */
	double gap = n > 1 ? (in[n - 1].t_s - in[0].t_s) / (double)(n - 1) / scale : 0;
	size_t k = 0;
	for (uint32_t j = 0; j < replicas; j++) {
		double shift = gap * j / replicas;
		for (size_t i = 0; i < n; i++) {
			o[k] = in[i];
			o[k].t_s = clamp_s(in[i].t_s / scale + shift);
			o[k].duration_s = clamp_s(in[i].duration_s / scale);
			if (in[i].target_s > 0) /* a target scales with the time it bounds */
				o[k].target_s = clamp_s(in[i].target_s / scale);
			if (in[i].deadline_s > 0) /* so does a deadline */
				o[k].deadline_s = clamp_s(in[i].deadline_s / scale);
			k++;
		}
	}
	qsort(o, k, sizeof *o, cmp_arrival);
	*n_out = k;
	return o;
}
