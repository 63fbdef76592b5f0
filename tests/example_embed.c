/* SPDX-License-Identifier: MIT */
/* The embedding example of README.md and docs/embedding.md, built and run as a test so it
 * cannot rot. */
#include <stdio.h>

#include <rusk/rusk.h>

int main(void)
{
	rusk_cluster_params p;
	rusk_cluster_params_init(&p); /* 100,000 machines x 16 RUs, 20 partitions */
	p.machines = 2000;
	p.partitions = 10;
	rusk_cluster *c;
	char err[256];
	if (rusk_cluster_create(&p, &c, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "cluster: %s\n", err);
		return 1;
	}
	/* Task 42 wants 4 RUs on machine 7, all or nothing. */
	rusk_machine_info m;
	rusk_cluster_machine(c, 7, &m);
	uint32_t rus[4] = {m.first_ru, m.first_ru + 1, m.first_ru + 2, m.first_ru + 3};
	rusk_profile prof = {{60, 20, 5, 0, 0, 0, 0, 0, 0, 0}}; /* interference it causes */
	rusk_lease leases[4];
	size_t lost_at;
	int rc = rusk_ru_commit_gang(c, 42, rus, 4, &prof, leases, &lost_at);
	if (rc == RUSK_ECONFLICT)
		printf("RU %u was taken: resample\n", rus[lost_at]);
	else if (rc != RUSK_OK)
		printf("commit: %s\n", rusk_strerror(rc));
	rusk_cluster_machine(c, 7, &m);
	printf("machine 7: %u of %u RUs free, interference on resource 0: %u\n", m.free_rus, m.rus,
	       m.interference[0]);
	/* ... the task runs ... then its RUs go back; a second release would be refused. */
	rusk_ru_release_many(c, 42, leases, 4, NULL);
	rc = rusk_ru_release(c, 42, leases[0]);
	printf("second release: %s\n", rusk_strerror(rc));
	rc = rusk_cluster_verify(c, err, sizeof err);
	rusk_cluster_destroy(c);
	return rc == RUSK_OK ? 0 : 1;
}
