/* SPDX-License-Identifier: MIT */
/* The cmocka tests' cluster and agent fixtures (fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fixture.h"

void fx_params(rusk_cluster_params *p, fx_shape s)
{
	rusk_cluster_params_init(p);
	if (s.machines)
		p->machines = s.machines;
	if (s.rus)
		p->rus_per_machine = s.rus;
	if (s.per_rack)
		p->machines_per_rack = s.per_rack;
	if (s.per_cell)
		p->racks_per_cell = s.per_cell;
	if (s.partitions)
		p->partitions = s.partitions;
	if (s.spare)
		p->spare_machines = s.spare;
	if (s.clock)
		p->clock = s.clock;
}

rusk_cluster *fx_create(const rusk_cluster_params *p)
{
	rusk_cluster *c = NULL;
	char err[256] = "";
	int rc = rusk_cluster_create(p, &c, err, sizeof err);
	if (rc != RUSK_OK || c == NULL)
		fail_msg("rusk_cluster_create: %s (%s)", err, rusk_strerror(rc));
	return c;
}

rusk_cluster *fx_machines(const rusk_machine_spec *specs, uint32_t n, fx_shape s,
                          const rusk_platform *plats, uint32_t n_plats)
{
	rusk_cluster_params p;
	fx_params(&p, s);
	p.platforms = plats;
	p.n_platforms = n_plats;
	rusk_cluster *c = NULL;
	char err[256] = "";
	int rc = rusk_cluster_create_machines(specs, n, &p, &c, err, sizeof err);
	if (rc != RUSK_OK || c == NULL)
		fail_msg("rusk_cluster_create_machines: %s (%s)", err, rusk_strerror(rc));
	return c;
}

rusk_cluster *fx_cluster(fx_shape s)
{
	rusk_cluster_params p;
	fx_params(&p, s);
	return fx_create(&p);
}

rusk_agent_params fx_agent_params(const rusk_cluster *c)
{
	rusk_sync_params sp = {.policy = RUSK_SYNC_STATE,
	                       .partitions = rusk_cluster_partitions(c),
	                       .agents = 1,
	                       .gap_ns = 1000000000ull};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, 0); /* copies sp */
	return ap;
}

rusk_agent *fx_agent(rusk_cluster *c, const rusk_agent_params *ap, bool sync)
{
	rusk_agent *a = NULL;
	char err[256] = "";
	int rc = rusk_agent_create(c, ap, &a, err, sizeof err);
	if (rc != RUSK_OK || a == NULL)
		fail_msg("rusk_agent_create: %s (%s)", err, rusk_strerror(rc));
	for (uint32_t p = 0; sync && p < rusk_cluster_partitions(c); p++)
		assert_int_equal(rusk_view_sync(rusk_agent_view(a), p), RUSK_OK);
	return a;
}
