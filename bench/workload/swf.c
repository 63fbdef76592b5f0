/* SPDX-License-Identifier: MIT */
/*
 * Reader of the Standard Workload Format (Parallel Workloads Archive; Chapin et al.,
 * "Benchmarks and Standards for the Evaluation of Parallel Job Schedulers", 1999): one job
 * per line, 18 whitespace-separated numeric fields, -1 for unknown, ';' header comments.
 * Contract in jobtrace.h. The whole file is read into memory (about 100 bytes a job); a
 * malformed line stops the read with FILE:LINE and the reason, never a partial trace.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/base.h"
#include "workload/jobtrace.h"

#define SWF_FIELDS   18
#define SWF_MAX_TIME 1e9  /* seconds, as the other trace readers */
#define SWF_MAX_NUM  1e15 /* any field: ids, counts, memory */

static const char *const field_names[SWF_FIELDS] = {
        "job number",     "submit time",      "wait time", "run time",
        "processors",     "CPU time",         "memory",    "requested processors",
        "requested time", "requested memory", "status",    "user",
        "group",          "executable",       "queue",     "partition",
        "preceding job",  "think time"};
/* Fields that must be whole numbers, and fields that are times. */
static const char is_int[SWF_FIELDS] = {1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0};
static const char is_time[SWF_FIELDS] = {0, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1};

void rusk_jobtrace_free(rusk_jobtrace *t)
{
	free(t->jobs);
	memset(t, 0, sizeof *t);
}

static int push(rusk_jobtrace *t, const rusk_tjob *j)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		rusk_tjob *nj = realloc(t->jobs, cap * sizeof *nj);
		if (nj == NULL)
			return -1;
		t->jobs = nj;
		t->cap = cap;
	}
	t->jobs[t->n++] = *j;
	return 0;
}

/* Parses one data line (NUL-terminated, no line end) into j. */
static int parse_line(const char *path, uint32_t line, char *s, rusk_tjob *j, char *err,
                      size_t errlen)
{
	double v[SWF_FIELDS];
	int n = 0;
	char *save = NULL;
	for (char *tok = strtok_r(s, " \t\v\f", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\v\f", &save)) {
		if (n == SWF_FIELDS)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: more than %d fields (an SWF job line has %d)",
			                 path, line, SWF_FIELDS, SWF_FIELDS);
		char *end;
		errno = 0;
		double x = strtod(tok, &end);
		const char *what = field_names[n];
		if (*end != '\0' || errno != 0 || !isfinite(x) || end == tok)
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: field %d (%s) '%s' is not a number", path, line,
			                 n + 1, what, tok);
		if (x < 0 && x != -1)
			return rusk_errf(
			        err, errlen, RUSK_EPARSE,
			        "%s:%u: field %d (%s) '%s' is negative (only -1, unknown, is)",
			        path, line, n + 1, what, tok);
		if (is_int[n] && x != floor(x))
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: field %d (%s) '%s' is not a whole number", path,
			                 line, n + 1, what, tok);
		if (x > (is_time[n] ? SWF_MAX_TIME : SWF_MAX_NUM))
			return rusk_errf(err, errlen, RUSK_EPARSE,
			                 "%s:%u: field %d (%s) '%s' exceeds %g", path, line, n + 1,
			                 what, tok, is_time[n] ? SWF_MAX_TIME : SWF_MAX_NUM);
		v[n++] = x;
	}
	if (n != SWF_FIELDS)
		return rusk_errf(err, errlen, RUSK_EPARSE,
		                 "%s:%u: %d fields (an SWF job line has %d)", path, line, n,
		                 SWF_FIELDS);
	*j = (rusk_tjob){.id = (int64_t)v[0],
	                 .submit_s = v[1],
	                 .wait_s = v[2],
	                 .run_s = v[3],
	                 .procs = (int64_t)v[4],
	                 .req_procs = (int64_t)v[7],
	                 .req_time_s = v[8],
	                 .status = (int64_t)v[10],
	                 .user = (int64_t)v[11],
	                 .group = (int64_t)v[12],
	                 .exe = (int64_t)v[13],
	                 .queue = (int64_t)v[14],
	                 .partition = (int64_t)v[15],
	                 .cls = -1,
	                 .line = line};
	return RUSK_OK;
}

/* Reads the next line into *buf (grown as needed) without its end (LF, CRLF or CR).
 * Returns its length, -1 at the end, -2 on a NUL byte, -3 out of memory. */
static long read_line(FILE *f, char **buf, size_t *cap)
{
	size_t len = 0;
	int c = getc(f);
	if (c == EOF)
		return -1;
	for (; c != EOF && c != '\n' && c != '\r'; c = getc(f)) {
		if (c == '\0')
			return -2;
		if (len + 1 >= *cap) {
			size_t nc = *cap ? 2 * *cap : 256;
			char *nb = realloc(*buf, nc);
			if (nb == NULL)
				return -3;
			*buf = nb;
			*cap = nc;
		}
		(*buf)[len++] = (char)c;
	}
	if (c == '\r') {
		int d = getc(f);
		if (d != '\n' && d != EOF)
			ungetc(d, f);
	}
	if (*cap == 0) { /* an empty first line */
		if ((*buf = malloc(*cap = 256)) == NULL)
			return -3;
	}
	(*buf)[len] = '\0';
	return (long)len;
}

int rusk_swf_read(const char *path, rusk_jobtrace *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return rusk_errf(err, errlen, RUSK_EIO, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return rusk_errf(err, errlen, RUSK_EIO, "%s: is a directory, not a trace file",
		                 path);
	}
	char *buf = NULL;
	size_t cap = 0;
	int rc = RUSK_OK;
	for (uint32_t line = 1;; line++) {
		long len = read_line(f, &buf, &cap);
		if (len == -1)
			break;
		if (len == -2) {
			rc = rusk_errf(err, errlen, RUSK_EPARSE,
			               "%s:%u: NUL byte (not a text file)", path, line);
			break;
		}
		if (len == -3 || line == UINT32_MAX) {
			rc = rusk_errf(err, errlen, RUSK_ENOMEM, "%s:%u: out of memory", path,
			               line);
			break;
		}
		char *s = buf;
		if (line == 1 && len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0)
			s += 3;
		s += strspn(s, " \t\v\f");
		if (*s == '\0')
			continue;
		if (*s == ';') {
			out->comments++;
			continue;
		}
		rusk_tjob j;
		if ((rc = parse_line(path, line, s, &j, err, errlen)) != RUSK_OK)
			break;
		if (push(out, &j) != 0) {
			rc = rusk_errf(err, errlen, RUSK_ENOMEM, "%s:%u: out of memory", path,
			               line);
			break;
		}
	}
	if (rc == RUSK_OK && ferror(f))
		rc = rusk_errf(err, errlen, RUSK_EIO, "%s: %s", path, strerror(errno));
	free(buf);
	fclose(f);
	if (rc != RUSK_OK)
		rusk_jobtrace_free(out);
	return rc;
}

void rusk_tjob_features(const rusk_tjob *t, rusk_job *out)
{
	rusk_job_init(out);
	if (t->user >= 0)
		out->user = (uint64_t)t->user;
	if (t->exe >= 0)
		out->name = (uint64_t)t->exe;
	if (t->req_procs > 0)
		out->resources = (uint64_t)t->req_procs;
	else if (t->procs > 0)
		out->resources = (uint64_t)t->procs;
	if (t->queue >= 0)
		out->queue = (uint64_t)t->queue;
}
