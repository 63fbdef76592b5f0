/* SPDX-License-Identifier: MIT */
/*
 * The test cluster every cmocka test builds: one shape struct instead of the same
 * params_init / set fields / create / fail sequence in each file.
 *
 *   rusk_cluster *c = fx_cluster((fx_shape){.machines = 400, .rus = 8, .partitions = 2});
 *
 * A field left 0 (or NULL) keeps rusk_cluster_params_init's default (100,000 machines x 16
 * RUs, racks of 40, 5 racks a cell, 20 partitions, no spares, the monotonic clock). A
 * create that fails ends the calling test with rusk's message (cmocka's fail_msg), so a
 * test never goes on with a NULL cluster.
 */
#ifndef RUSK_TEST_FIXTURE_H
#define RUSK_TEST_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <rusk/rusk.h>

typedef struct fx_shape {
	uint32_t machines;   /* rusk_cluster_params.machines */
	uint32_t rus;        /* .rus_per_machine */
	uint32_t per_rack;   /* .machines_per_rack */
	uint32_t per_cell;   /* .racks_per_cell */
	uint32_t partitions; /* .partitions */
	uint32_t spare;      /* .spare_machines */
	const rusk_clock *clock;
} fx_shape;

/* rusk_cluster_params_init, then every non-zero field of s. */
void fx_params(rusk_cluster_params *p, fx_shape s);

/* A cluster of shape s; fails the test if rusk refuses it. */
rusk_cluster *fx_cluster(fx_shape s);

/* A cluster from full parameters (platform tables, score variance, ...); fails the test
 * if rusk refuses them. */
rusk_cluster *fx_create(const rusk_cluster_params *p);

/* A cluster of n machines described one by one (rusk/vec.h: cores, memory, GPUs, platform)
 * with platform table plats[0..n_plats) and shape s's topology; fails the test if rusk
 * refuses them. */
rusk_cluster *fx_machines(const rusk_machine_spec *specs, uint32_t n, fx_shape s,
                          const rusk_platform *plats, uint32_t n_plats);

/* The parameters of a test's one agent: rusk_agent_params_init for agent 0 of StateSync
 * over every partition of c, with a sync gap of 1 s (a view changes only when the test
 * syncs it). The caller then sets the fields its test is about. */
rusk_agent_params fx_agent_params(const rusk_cluster *c);

/* An agent of c with parameters ap, every partition of its view synced when sync is set;
 * fails the test if rusk refuses ap or a sync. The caller destroys it. */
rusk_agent *fx_agent(rusk_cluster *c, const rusk_agent_params *ap, bool sync);

#endif
