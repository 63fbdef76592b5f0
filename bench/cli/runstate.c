/* SPDX-License-Identifier: MIT */
/*
 * What every part of a run may call, below the driver (driver.c) and its features (vector
 * reports, classification, the planner, admission prediction, the memory estimate): how a
 * run fails for want of memory, and the agents of a load group. Nothing here calls up.
 */
#include <stdio.h>
#include <unistd.h>

#include "base/atomic.h"
#include "runstate.h"

/* ---- failures ------------------------------------------------------------------------ */

void drv_fail(run *R, const char *what)
{
	uint32_t was = rusk_faa32(&R->fail, 1, RUSK_ACQ_REL);
	if (was == 0)
		fprintf(stderr, "rusk: out of memory %s: stopping the run\n", what);
	rusk_store32((uint32_t *)&R->stop, 1, RUSK_RELEASE);
}

_Noreturn void drv_oom_exit(const char *what)
{
	char msg[160];
	int n = snprintf(msg, sizeof msg, "rusk: out of memory %s: exiting\n", what);
	if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1) < 0)
		n = 0;
	cli_out_unlink_pending(); /* the outputs' temporary files: the targets stay as they were */
	_exit(RUSK_EXIT_NOMEM);
}

/* Agents of load group k (agent i belongs to group i mod n_groups). */
uint32_t drv_group_size(const run_cfg *cfg, int k)
{
	return (cfg->agents - (uint32_t)k + (uint32_t)cfg->n_groups - 1) / (uint32_t)cfg->n_groups;
}
