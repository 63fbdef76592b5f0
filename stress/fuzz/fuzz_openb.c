/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the openb node-list loader (rusk_cluster_create_openb) on arbitrary bytes. */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <rusk/rusk.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0; /* keep clusters small: the parser, not the allocator, is the target */
	char path[64];
	snprintf(path, sizeof path, "/tmp/rusk-fuzz-openb-%d.csv", (int)getpid());
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines_per_rack = 1;
	p.racks_per_cell = 1;
	p.partitions = 1;
	rusk_cluster *c = NULL;
	char err[256];
	if (rusk_cluster_create_openb(path, 0, &p, &c, err, sizeof err) == RUSK_OK) {
		if (rusk_cluster_verify(c, err, sizeof err) != RUSK_OK)
			__builtin_trap(); /* a fresh cluster must be consistent */
		rusk_cluster_destroy(c);
	}
	unlink(path);
	return 0;
}
