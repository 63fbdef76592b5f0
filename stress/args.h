/* SPDX-License-Identifier: MIT */
/*
 * The stress programs' one argument parser: every option is "--flag VALUE", described by a
 * table of {flag, kind, where the value goes}. Defaults are whatever the variables held
 * before the call; ranges are the program's own check after it.
 *
 *   stress_arg opts[] = {{"--threads", STRESS_INT, &nthreads}, {"--seconds", STRESS_DOUBLE, &s}};
 *   const char *bad = stress_args_parse(argc, argv, opts, 2);
 *   if (bad) return usage(bad);
 */
#ifndef RUSK_STRESS_ARGS_H
#define RUSK_STRESS_ARGS_H

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum { STRESS_INT, STRESS_U32, STRESS_U64, STRESS_DOUBLE } stress_arg_kind;

typedef struct stress_arg {
	const char *flag;     /* "--threads" */
	stress_arg_kind kind; /* the type `value` points to: int, uint32_t, uint64_t, double */
	void *value;
} stress_arg;

/* Parses argv[1..argc) into the table's values. Returns NULL when every argument was a
 * known flag followed by a whole, well-formed value of its kind; otherwise the argument
 * that was unknown, lacked its value or had a malformed one (nothing after it is read). */
static inline const char *stress_args_parse(int argc, char **argv, const stress_arg *t, size_t n)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const stress_arg *o = NULL;
		for (size_t k = 0; k < n && o == NULL; k++)
			if (strcmp(a, t[k].flag) == 0)
				o = &t[k];
		if (o == NULL || i + 1 >= argc)
			return a;
		const char *v = argv[++i];
		char *end = NULL;
		errno = 0;
		if (o->kind == STRESS_DOUBLE) {
			*(double *)o->value = strtod(v, &end);
		} else if (o->kind == STRESS_INT) {
			long x = strtol(v, &end, 10);
			if (x < INT_MIN || x > INT_MAX)
				return a;
			*(int *)o->value = (int)x;
		} else {
			if (v[0] == '-')
				return a;
			unsigned long long x = strtoull(v, &end, 10);
			if (o->kind == STRESS_U32 && x > UINT32_MAX)
				return a;
			if (o->kind == STRESS_U32)
				*(uint32_t *)o->value = (uint32_t)x;
			else
				*(uint64_t *)o->value = (uint64_t)x;
		}
		if (end == v || *end != '\0' || errno == ERANGE)
			return a;
	}
	return NULL;
}

#endif
