/* SPDX-License-Identifier: MIT */
/*
 * Cluster from the Alibaba openb node list (cluster-trace-gpu-v2023, Weng et al. ATC'23),
 * `sn,cpu_milli,memory_mib,gpu,model`: one row per machine, RUs = cpu_milli / ru_milli (by
 * default 1000: one RU per core), its memory and GPUs (rusk/vec.h), the GPU model as the
 * platform type ("cpu" for CPU-only rows). To reach a target
 * size the list is replicated in order (replica r of row i is machine r * rows + i), which
 * keeps the real mix of shapes and platform types at any scale.
 *
 * Parsing is strict: every rejected row names PATH:LINE and the field, so a user can fix
 * the file; nothing is guessed or skipped. The file is read whole (a regular file of at
 * most 256 MiB), so lines have no length limit, any line ending (LF, CRLF, CR) is read,
 * a byte-order mark is skipped and a NUL byte is an error rather than a cut line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel/layout.h"

typedef struct openb_row {
	uint32_t cores, mem_mib, gpus, platform, line;
} openb_row;

static int parse_u32(const char *s, uint32_t *out)
{
	if (*s == '\0')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > UINT32_MAX || *s == '-' || *s == '+' || *s == ' ')
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Splits line in place at commas into at most max fields; returns the field count. */
static int split_csv(char *line, char **f, int max)
{
	int n = 0;
	f[n++] = line;
	for (char *p = line; *p; p++) {
		if (*p == ',') {
			*p = '\0';
			if (n == max)
				return max + 1;
			f[n++] = p + 1;
		}
	}
	return n;
}

/* Node lists are a few MB (100K machines x ~40 bytes); a bigger "node list" is a mistake. */
#define OPENB_MAX_BYTES (UINT64_C(256) << 20)

/*
 * The whole file at path into *text (NUL-terminated, *len bytes before the terminator).
 * Only regular files: a directory, a device (/dev/zero would never end) or a pipe is refused
 * by name. A NUL byte inside is refused with PATH:LINE: C strings stop there, so a row
 * would vanish or be misread.
 */
static int read_text(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return rusk_errf(err, errlen, RUSK_EIO, "%s: cannot open: %s", path,
		                 strerror(errno));
	struct stat st;
	int rc = RUSK_OK;
	char *buf = NULL;
	if (fstat(fileno(f), &st) != 0)
		rc = rusk_errf(err, errlen, RUSK_EIO, "%s: cannot stat: %s", path, strerror(errno));
	else if (S_ISDIR(st.st_mode))
		rc = rusk_errf(err, errlen, RUSK_EIO, "%s: is a directory, not a node list", path);
	else if (!S_ISREG(st.st_mode))
		rc = rusk_errf(err, errlen, RUSK_EIO, "%s: not a regular file (a device or pipe)",
		               path);
	else if ((uint64_t)st.st_size > OPENB_MAX_BYTES)
		rc = rusk_errf(err, errlen, RUSK_EPARSE,
		               "%s: %lld bytes, more than a node list's "
		               "%llu MiB",
		               path, (long long)st.st_size,
		               (unsigned long long)(OPENB_MAX_BYTES >> 20));
	else if ((buf = malloc((size_t)st.st_size + 1)) == NULL)
		rc = rusk_errf(err, errlen, RUSK_ENOMEM, "%s: out of memory", path);
	size_t n = 0;
	if (rc == RUSK_OK) {
		n = fread(buf, 1, (size_t)st.st_size, f);
		if (ferror(f))
			rc = rusk_errf(err, errlen, RUSK_EIO, "%s: read error", path);
	}
	fclose(f);
	const char *nul = rc == RUSK_OK ? memchr(buf, '\0', n) : NULL;
	if (nul != NULL) {
		uint32_t line = 1;
		for (const char *p = buf; p < nul; p++)
			line += *p == '\n';
		rc = rusk_errf(err, errlen, RUSK_EPARSE, "%s:%u: NUL byte (not a text file)", path,
		               line);
	}
	if (rc != RUSK_OK) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return RUSK_OK;
}

/* The next line of *pos, cut in place without its end ("\n", "\r\n" or a lone "\r");
 * NULL at the end of the text. */
static char *next_line(char **pos)
{
	char *s = *pos;
	if (*s == '\0')
		return NULL;
	char *e = s + strcspn(s, "\r\n");
	if (*e == '\r' && e[1] == '\n')
		*e++ = '\0';
	if (*e != '\0')
		*e++ = '\0';
	*pos = e;
	return s;
}

RUSK_EXPORT int rusk_cluster_create_openb(const char *path, uint32_t machines,
                                          const rusk_cluster_params *p, rusk_cluster **out,
                                          char *err, size_t errlen)
{
	if (path == NULL || p == NULL || out == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "path, params and out must not be NULL");
	uint32_t ru_milli = p->ru_milli ? p->ru_milli : 1000;
	char *text = NULL;
	size_t text_len = 0;
	int rc = read_text(path, &text, &text_len, err, errlen);
	if (rc != RUSK_OK)
		return rc;
	char *pos = text, *buf;
	if (text_len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		pos += 3; /* the UTF-8 byte-order mark some editors write first */

	char names[RUSK_MAX_PLATFORMS][RUSK_PLATFORM_NAME];
	uint32_t n_names = 0;
	openb_row *rows = NULL;
	size_t n_rows = 0, cap = 0;
	uint32_t line = 0;

	while ((buf = next_line(&pos)) != NULL) {
		line++;
		char *fld[6];
		int nf = split_csv(buf, fld, 5);
		if (line == 1) {
			if (nf != 5 || strcmp(fld[0], "sn") != 0 ||
			    strcmp(fld[1], "cpu_milli") != 0 || strcmp(fld[2], "memory_mib") != 0 ||
			    strcmp(fld[3], "gpu") != 0 || strcmp(fld[4], "model") != 0) {
				rc = rusk_errf(
				        err, errlen, RUSK_EPARSE,
				        "%s:1: header must be 'sn,cpu_milli,memory_mib,gpu,model'",
				        path);
				goto out;
			}
			continue;
		}
		if (nf == 1 && fld[0][0] == '\0')
			continue; /* blank line */
		if (nf != 5) {
			rc = rusk_errf(err, errlen, RUSK_EPARSE,
			               "%s:%u: expected 5 fields, found %d", path, line,
			               nf > 5 ? 6 : nf);
			goto out;
		}
		openb_row r = {.line = line};
		uint32_t cpu_milli;
		if (fld[0][0] == '\0') {
			rc = rusk_errf(err, errlen, RUSK_EPARSE, "%s:%u: empty sn", path, line);
			goto out;
		}
		if (parse_u32(fld[1], &cpu_milli) != 0 || cpu_milli < ru_milli) {
			rc = rusk_errf(err, errlen, RUSK_EPARSE,
			               "%s:%u: cpu_milli '%s' is not an integer >= %u (one RU)",
			               path, line, fld[1], ru_milli);
			goto out;
		}
		r.cores = cpu_milli / ru_milli;
		if (r.cores > RUSK_MAX_RUS_PER_MACHINE) {
			rc = rusk_errf(err, errlen, RUSK_EPARSE,
			               "%s:%u: %u RUs of %u milli-cores exceed the %u RUs one "
			               "machine may have",
			               path, line, r.cores, ru_milli, RUSK_MAX_RUS_PER_MACHINE);
			goto out;
		}
		if (parse_u32(fld[2], &r.mem_mib) != 0) {
			rc = rusk_errf(err, errlen, RUSK_EPARSE,
			               "%s:%u: memory_mib '%s' is not an integer", path, line,
			               fld[2]);
			goto out;
		}
		if (parse_u32(fld[3], &r.gpus) != 0 || r.gpus > RUSK_MAX_GPUS_PER_MACHINE) {
			rc = rusk_errf(
			        err, errlen, RUSK_EPARSE,
			        "%s:%u: gpu '%s' is not an integer in 0..%u (GPUs one machine "
			        "may have)",
			        path, line, fld[3], RUSK_MAX_GPUS_PER_MACHINE);
			goto out;
		}
		const char *model = fld[4][0] != '\0' ? fld[4] : "cpu";
		if (strlen(model) >= RUSK_PLATFORM_NAME) {
			rc = rusk_errf(err, errlen, RUSK_EPARSE,
			               "%s:%u: model name longer than %d bytes", path, line,
			               RUSK_PLATFORM_NAME - 1);
			goto out;
		}
		uint32_t k = 0;
		while (k < n_names && strcmp(names[k], model) != 0)
			k++;
		if (k == n_names) {
			if (n_names == RUSK_MAX_PLATFORMS) {
				rc = rusk_errf(err, errlen, RUSK_EPARSE,
				               "%s:%u: more than %u distinct models", path, line,
				               RUSK_MAX_PLATFORMS);
				goto out;
			}
			snprintf(names[n_names++], RUSK_PLATFORM_NAME, "%s", model);
		}
		r.platform = k;
		if (n_rows == cap) {
			cap = cap ? cap * 2 : 1024;
			openb_row *nr = realloc(rows, cap * sizeof *rows);
			if (nr == NULL) {
				rc = rusk_errf(err, errlen, RUSK_ENOMEM, "%s: out of memory", path);
				goto out;
			}
			rows = nr;
		}
		rows[n_rows++] = r;
	}
	if (line == 0) {
		rc = rusk_errf(err, errlen, RUSK_EPARSE, "%s:1: empty file (no header)", path);
		goto out;
	}
	if (n_rows == 0) {
		rc = rusk_errf(err, errlen, RUSK_ESHAPE, "%s: no machines listed", path);
		goto out;
	}

	uint32_t n_up = machines != 0 ? machines : (uint32_t)n_rows;
	if ((uint64_t)n_up + p->spare_machines > UINT32_MAX) {
		rc = rusk_errf(err, errlen, RUSK_ESHAPE, "machines + spare_machines exceed %u",
		               UINT32_MAX);
		goto out;
	}
	uint32_t n_machines = n_up + p->spare_machines;
	if ((rc = rusk_cluster_check_topology_(p, n_machines, err, errlen)) != RUSK_OK)
		goto out;
	if ((rc = rusk_cluster_check_scores_(p, err, errlen)) != RUSK_OK)
		goto out;
	uint64_t n_rus = 0;
	for (uint32_t m = 0; m < n_machines; m++)
		n_rus += rows[m % n_rows].cores;

	rusk_cluster *c;
	if ((rc = rusk_cluster_alloc_(&c, n_machines, n_rus, p, err, errlen)) != RUSK_OK)
		goto out;
	c->n_up_initial = n_up;
	c->n_platforms = n_names;
	for (uint32_t i = 0; i < n_names; i++) {
		memcpy(c->platforms[i].name, names[i], RUSK_PLATFORM_NAME);
		c->platforms[i].speed = 1.0; /* the trace gives types, not speeds */
	}
	for (uint32_t m = 0; m < n_machines; m++) {
		const openb_row *r = &rows[m % n_rows];
		rusk_machine *mm = &c->machines[m];
		mm->n_rus = (uint16_t)r->cores;
		mm->mem_mib = r->mem_mib;
		mm->gpus = (uint16_t)r->gpus;
		mm->platform = (uint8_t)r->platform;
		mm->source_row = r->line - 1;
		mm->replica = (uint32_t)(m / n_rows);
	}
	if ((rc = rusk_cluster_layout_(c, p, err, errlen)) != RUSK_OK) {
		rusk_cluster_destroy(c);
		goto out;
	}
	*out = c;
out:
	free(rows);
	free(text);
	return rc;
}
