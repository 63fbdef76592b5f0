/* SPDX-License-Identifier: MIT */
/* The vector-resources example of docs/vector.md, built and run as a test so it cannot rot. */
#include <stdio.h>

#include <rusk/rusk.h>

int main(void)
{
	/* Two GPU models; machines described one by one (the last a spare, added online). */
	static const rusk_platform models[] = {{"V100", 1.0, 1.0}, {"T4", 1.0, 0.8}};
	const rusk_machine_spec specs[] = {
	        {.rus = 32, .mem_mib = 262144, .gpus = 8, .platform = 0},
	        {.rus = 16, .mem_mib = 131072, .gpus = 4, .platform = 1},
	        {.rus = 64, .mem_mib = 524288, .gpus = 0, .platform = 1},
	        {.rus = 32, .mem_mib = 262144, .gpus = 8, .platform = 0, .spare = true},
	};
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.platforms = models;
	p.n_platforms = 2;
	p.machines_per_rack = 2;
	p.racks_per_cell = 1;
	p.partitions = 2;
	rusk_cluster *c;
	char err[256];
	if (rusk_cluster_create_machines(specs, 4, &p, &c, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "cluster: %s\n", err);
		return 1;
	}
	rusk_thread_register(); /* agents read views under RCU */
	rusk_sync_params sp = {
	        .policy = RUSK_SYNC_STATE, .partitions = 2, .agents = 1, .gap_ns = 1000000000ull};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	ap.quality = RUSK_QUALITY_PACKING; /* least GPU fragmentation, then best fit */
	rusk_agent *a;
	if (rusk_agent_create(c, &ap, &a, err, sizeof err) != RUSK_OK)
		return 1;
	rusk_view_sync(rusk_agent_view(a), 0);
	rusk_view_sync(rusk_agent_view(a), 1);
	/* Task 7: 2 cores, 8 GiB and 0.3 of one T4, placed whole on one machine. */
	uint32_t t4;
	rusk_gpu_model(c, "T4", &t4);
	rusk_task t = {.id = 7, .rus = 2, .gang = true, .placement = RUSK_PLACE_MACHINE};
	t.vec = (rusk_vec_demand){
	        .mem_mib = 8192, .gpus = 1, .gpu_milli = 300, .gpu_models = 1u << t4};
	rusk_lease l[2];
	rusk_placement pl;
	int rc = rusk_agent_place(a, &t, l, &pl);
	uint32_t m = rusk_cluster_ru_machine(c, l[0].ru);
	rusk_machine_vec v;
	rusk_machine_vec_get(c, m, &v);
	printf("task 7: %s on machine %u, GPU 0 has %u milli free\n", rusk_strerror(rc), m,
	       v.gpu_free_milli[0]);
	/* 16 GPUs at once: no machine could ever hold that, whatever frees up. */
	t.id = 8;
	t.vec = (rusk_vec_demand){.gpus = 16, .gpu_milli = 1000};
	rusk_lease l8[2];
	rc = rusk_agent_place(a, &t, l8, &pl);
	printf("task 8: %s (%s)\n", rusk_strerror(rc), pl.invalid);
	rusk_agent_release(a, 7, l, 2, NULL); /* its memory and GPU share go back with it */
	rusk_agent_destroy(a);
	rusk_thread_unregister();
	rc = rusk_cluster_verify(c, err, sizeof err);
	rusk_cluster_destroy(c);
	return rc == RUSK_OK && m == 1 ? 0 : 1;
}
