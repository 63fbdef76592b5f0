/* SPDX-License-Identifier: MIT */
/*
 * Matrices with missing cells for the classification engine (rusk/classify.h): the
 * ground truth a validation compares against, from the generator (classify_gen.c) or
 * from a CSV file of measured performance.
 *
 * CSV. One workload per line; '#' lines and blank lines are comments; the first other
 * line is the header, whose field count fixes the width; an empty field is a missing
 * cell. Every refusal names PATH:LINE and the reason (width, NaN or infinity, junk, a
 * non-positive value where the model takes logs, a row with no value): a matrix that
 * loads is exactly what the file says, never a silently padded or truncated one.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rusk/classify.h>

#include "base/alloc.h"
#include "base/base.h"

struct rusk_cls_matrix {
	uint32_t rows, cols;
	double v[]; /* [rows][cols], NaN = missing */
};

RUSK_EXPORT int rusk_cls_matrix_create(uint32_t rows, uint32_t cols, rusk_cls_matrix **out)
{
	if (out == NULL)
		return RUSK_EINVAL;
	*out = NULL;
	if (rows == 0 || cols == 0 || cols > RUSK_CLS_MAX_COLS)
		return RUSK_EINVAL;
	size_t cells = (size_t)rows * cols;
	rusk_cls_matrix *m =
	        rusk_fault_alloc_() ? NULL : malloc(sizeof *m + sizeof(double) * cells);
	if (m == NULL)
		return RUSK_ENOMEM;
	m->rows = rows;
	m->cols = cols;
	for (size_t x = 0; x < cells; x++)
		m->v[x] = NAN;
	*out = m;
	return RUSK_OK;
}

RUSK_EXPORT void rusk_cls_matrix_destroy(rusk_cls_matrix *m)
{
	free(m);
}

RUSK_EXPORT uint32_t rusk_cls_matrix_rows(const rusk_cls_matrix *m)
{
	return m != NULL ? m->rows : 0;
}

RUSK_EXPORT uint32_t rusk_cls_matrix_cols(const rusk_cls_matrix *m)
{
	return m != NULL ? m->cols : 0;
}

RUSK_EXPORT double rusk_cls_matrix_get(const rusk_cls_matrix *m, uint32_t row, uint32_t col)
{
	if (m == NULL || row >= m->rows || col >= m->cols)
		return NAN;
	return m->v[(size_t)row * m->cols + col];
}

RUSK_EXPORT int rusk_cls_matrix_set(rusk_cls_matrix *m, uint32_t row, uint32_t col, double v)
{
	if (m == NULL)
		return RUSK_EINVAL;
	if (row >= m->rows || col >= m->cols)
		return RUSK_ERANGE;
	if (isinf(v))
		return RUSK_EINVAL;
	m->v[(size_t)row * m->cols + col] = v;
	return RUSK_OK;
}

/* ---- CSV --------------------------------------------------------------------------- */

typedef struct reader {
	FILE *f;
	const char *path;
	uint32_t line;
	char *buf;
	size_t cap;
	char *err;
	size_t errlen;
} reader;

/* Next line without its end (LF, CRLF); NULL at the end. Sets *rc on a read error or a
 * NUL byte (a binary file is not a matrix). */
static char *next_line(reader *r, int *rc)
{
	ssize_t n = getline(&r->buf, &r->cap, r->f);
	if (n < 0) {
		if (ferror(r->f))
			*rc = rusk_errf(r->err, r->errlen, RUSK_EIO, "%s:%u: read error: %s",
			                r->path, r->line + 1, strerror(errno));
		return NULL;
	}
	r->line++;
	if (memchr(r->buf, '\0', (size_t)n) != NULL) {
		*rc = rusk_errf(r->err, r->errlen, RUSK_EPARSE, "%s:%u: NUL byte: not a text file",
		                r->path, r->line);
		return NULL;
	}
	while (n > 0 && (r->buf[n - 1] == '\n' || r->buf[n - 1] == '\r'))
		r->buf[--n] = '\0';
	char *s = r->buf;
	if (r->line == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
	    (unsigned char)s[2] == 0xBF)
		s += 3;
	return s;
}

static bool blank_or_comment(const char *s)
{
	s += strspn(s, " \t");
	return *s == '\0' || *s == '#';
}

static uint32_t count_fields(const char *s)
{
	uint32_t n = 1;
	for (; *s; s++)
		n += *s == ',';
	return n;
}

/* Parses field [b, e) (blanks trimmed) into *v: NaN when empty. */
static int parse_field(reader *r, char *b, char *e, uint32_t col, bool positive, double *v)
{
	while (b < e && (*b == ' ' || *b == '\t'))
		b++;
	while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	if (b == e) {
		*v = NAN;
		return RUSK_OK;
	}
	char save = *e, *end;
	*e = '\0';
	errno = 0;
	double x = strtod(b, &end);
	bool junk = end != e || errno == ERANGE;
	int rc = RUSK_OK;
	if (junk)
		rc = rusk_errf(r->err, r->errlen, RUSK_EPARSE,
		               "%s:%u: column %u: '%s' is not a number", r->path, r->line, col + 1,
		               b);
	else if (!isfinite(x))
		rc = rusk_errf(r->err, r->errlen, RUSK_EPARSE,
		               "%s:%u: column %u: '%s' is not finite (leave the cell empty when "
		               "it is missing)",
		               r->path, r->line, col + 1, b);
	else if (positive && !(x > 0))
		rc = rusk_errf(r->err, r->errlen, RUSK_EPARSE,
		               "%s:%u: column %u: %g is not > 0 (performance is positive)", r->path,
		               r->line, col + 1, x);
	*e = save;
	*v = x;
	return rc;
}

/* Parses one data line into row (cols values). */
static int parse_row(reader *r, char *s, uint32_t cols, bool positive, double *row)
{
	uint32_t n = count_fields(s);
	if (n != cols)
		return rusk_errf(r->err, r->errlen, RUSK_EPARSE,
		                 "%s:%u: %u fields, the header has %u", r->path, r->line, n, cols);
	uint32_t present = 0;
	for (uint32_t col = 0; col < cols; col++) {
		char *e = strchr(s, ',');
		if (e == NULL)
			e = s + strlen(s);
		int rc = parse_field(r, s, e, col, positive, &row[col]);
		if (rc != RUSK_OK)
			return rc;
		present += !isnan(row[col]);
		s = *e ? e + 1 : e;
	}
	if (present == 0)
		return rusk_errf(r->err, r->errlen, RUSK_EPARSE,
		                 "%s:%u: a row with no value (every cell is empty)", r->path,
		                 r->line);
	return RUSK_OK;
}

static int load(reader *r, bool positive, rusk_cls_matrix **out)
{
	int rc = RUSK_OK;
	char *s;
	while ((s = next_line(r, &rc)) != NULL && blank_or_comment(s))
		;
	if (s == NULL)
		return rc != RUSK_OK ? rc
		                     : rusk_errf(r->err, r->errlen, RUSK_EPARSE,
		                                 "%s:%u: no header line", r->path, r->line);
	uint32_t cols = count_fields(s);
	if (cols > RUSK_CLS_MAX_COLS)
		return rusk_errf(r->err, r->errlen, RUSK_EPARSE, "%s:%u: %u columns, at most %u",
		                 r->path, r->line, cols, RUSK_CLS_MAX_COLS);
	size_t rows = 0, cap = 0;
	double *v = NULL;
	while ((s = next_line(r, &rc)) != NULL) {
		if (blank_or_comment(s))
			continue;
		if (rows == cap) {
			size_t nc = cap ? cap * 2 : 256;
			double *nv =
			        nc > UINT32_MAX ? NULL : realloc(v, sizeof(double) * nc * cols);
			if (nv == NULL) {
				free(v);
				return rusk_errf(r->err, r->errlen, RUSK_ENOMEM,
				                 "%s:%u: out of memory", r->path, r->line);
			}
			v = nv;
			cap = nc;
		}
		rc = parse_row(r, s, cols, positive, v + rows * cols);
		if (rc != RUSK_OK)
			break;
		rows++;
	}
	if (rc == RUSK_OK && rows == 0)
		rc = rusk_errf(r->err, r->errlen, RUSK_EPARSE,
		               "%s:%u: no data rows after the header", r->path, r->line);
	if (rc == RUSK_OK) {
		rc = rusk_cls_matrix_create((uint32_t)rows, cols, out);
		if (rc == RUSK_OK)
			memcpy((*out)->v, v, sizeof(double) * rows * cols);
		else
			rc = rusk_errf(r->err, r->errlen, rc, "%s: out of memory", r->path);
	}
	free(v);
	return rc;
}

RUSK_EXPORT int rusk_cls_matrix_load_csv(const char *path, bool positive, rusk_cls_matrix **out,
                                         char *err, size_t errlen)
{
	if (path == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "NULL argument");
	*out = NULL;
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return rusk_errf(err, errlen, RUSK_EIO, "%s: cannot open: %s", path,
		                 strerror(errno));
	reader r = {.f = f, .path = path, .err = err, .errlen = errlen};
	int rc = load(&r, positive, out);
	free(r.buf);
	fclose(f);
	return rc;
}
