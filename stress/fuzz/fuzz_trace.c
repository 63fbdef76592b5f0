/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the trace parsers (openb pod list and generic CSV) on arbitrary bytes,
 * reading quota groups (openb: by qos class, then by GPU model; csv: its group column). */
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
	static const int by[3] = {RUSK_TRACE_GROUPS_QOS, RUSK_TRACE_GROUPS_GPU_MODEL,
	                          RUSK_TRACE_GROUPS_NONE};
	for (int k = 0; k < 3; k++) {
		int fmt = k < 2 ? RUSK_TRACE_OPENB : RUSK_TRACE_CSV;
		rusk_arrival *a = NULL;
		size_t n = 0;
		char err[256];
		rusk_trace_groups tg = {.openb = by[k]};
		if (rusk_trace_load(path, fmt, &a, &n, NULL, &tg, err, sizeof err) == 0) {
			for (size_t i = 0; i < n; i++)
				if (a[i].group > tg.n)
					abort(); /* a group beyond the table */
			size_t m;
			rusk_arrival *e = rusk_trace_expand(a, n, 2.0, 2, &m);
			free(e);
			free(a);
		}
	}
	unlink(path);
	return 0;
}
