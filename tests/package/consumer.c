/* SPDX-License-Identifier: MIT */
/*
 * An embedder's first program against an installed rusk: every public header, the version
 * check, and one task placed and released on a small cluster. Exit 0 and "consumer ok".
 */
#include <stdio.h>
#include <string.h>

#include <rusk/admit.h>
#include <rusk/clock.h>
#include <rusk/cluster.h>
#include <rusk/error.h>
#include <rusk/ru.h>
#include <rusk/rusk.h>
#include <rusk/sched.h>
#include <rusk/sync.h>
#include <rusk/version.h>

int main(void)
{
	if (strcmp(rusk_version(), RUSK_VERSION_STRING) != 0 ||
	    rusk_version_number() != RUSK_VERSION_NUMBER) {
		fprintf(stderr, "headers %s, library %s\n", RUSK_VERSION_STRING, rusk_version());
		return 1;
	}
	rusk_thread_register();
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = 200;
	p.partitions = 1;
	rusk_cluster *c = NULL;
	char err[256];
	if (rusk_cluster_create(&p, &c, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "cluster: %s\n", err);
		return 1;
	}
	rusk_sync_params sp = {
	        .policy = RUSK_SYNC_DIFF, .partitions = 1, .agents = 1, .gap_ns = 500000000ull};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0);
	rusk_agent *a = NULL;
	if (rusk_agent_create(c, &ap, &a, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "agent: %s\n", err);
		return 1;
	}
	rusk_view_sync(rusk_agent_view(a), 0);
	rusk_task t = {.id = 1, .rus = 4, .gang = true};
	rusk_lease l[4];
	rusk_placement pl;
	int rc = rusk_agent_place(a, &t, l, &pl);
	size_t rejected = 0;
	if (rc != RUSK_OK || rusk_agent_release(a, t.id, l, 4, &rejected) != RUSK_OK ||
	    rejected != 0) {
		fprintf(stderr, "place/release: %s\n", rusk_strerror(rc));
		return 1;
	}
	rusk_agent_destroy(a);
	rusk_cluster_destroy(c);
	rusk_rcu_barrier();
	rusk_thread_unregister();
	printf("consumer ok: rusk %s, 4 RUs placed and released\n", rusk_version());
	return 0;
}
