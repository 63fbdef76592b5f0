/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the trace parsers (openb pod list and generic CSV) on arbitrary bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "workload/loadgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/rusk-fuzz-trace-%d.csv", (int)getpid());
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	for (int fmt = RUSK_TRACE_OPENB; fmt <= RUSK_TRACE_CSV; fmt++) {
		rusk_arrival *a = NULL;
		size_t n = 0;
		char err[256];
		if (rusk_trace_load(path, fmt, &a, &n, NULL, err, sizeof err) == 0) {
			size_t m;
			rusk_arrival *e = rusk_trace_expand(a, n, 2.0, 2, &m);
			free(e);
			free(a);
		}
	}
	unlink(path);
	return 0;
}
