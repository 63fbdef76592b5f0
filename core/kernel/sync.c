/* SPDX-License-Identifier: MIT */
/*
 * Sync policies (ParSync §5.1, §5.2 "Synchronization strategies"; Omega's StateSync):
 * which partitions an agent refreshes at each of its steps.
 *
 * Partitions are split into N blocks B_j = [j*P/N, (j+1)*P/N) (sizes differ by at most one
 * when N does not divide P). Steps are G/N apart (G for StateSync), starting at start_ns
 * plus the agent's offset.
 *   diff  (DiffSync):  agent i refreshes B_((i + k) mod N) at step k. Over N steps (one
 *                      round, G) it refreshes every block once, and at any step k the N
 *                      agents refresh N different blocks: no partition twice. Needs P >= N
 *                      or some block would be empty and two agents would share partitions.
 *   same (SameSync):   every agent refreshes B_(k mod N) at step k.
 *   state (StateSync): every agent refreshes every partition at each step (every G).
 * Offsets (Tarcil §5.1 "a small random offset"): a seeded value in [0, step) per agent;
 * they shift when an agent's steps happen, not which partitions a step covers.
 */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "base/rng.h"

RUSK_EXPORT void rusk_sync_params_init(rusk_sync_params *p, uint32_t partitions, uint32_t agents)
{
	if (p == NULL)
		return;
	*p = (rusk_sync_params){.policy = partitions >= agents ? RUSK_SYNC_DIFF : RUSK_SYNC_SAME,
	                        .partitions = partitions,
	                        .agents = agents,
	                        .gap_ns = RUSK_SYNC_DEFAULT_GAP_NS};
}

RUSK_EXPORT int rusk_sync_policy_parse(const char *name, rusk_sync_policy *out)
{
	if (name == NULL || out == NULL)
		return RUSK_EINVAL;
	if (strcmp(name, "state") == 0)
		*out = RUSK_SYNC_STATE;
	else if (strcmp(name, "same") == 0)
		*out = RUSK_SYNC_SAME;
	else if (strcmp(name, "diff") == 0)
		*out = RUSK_SYNC_DIFF;
	else
		return RUSK_EINVAL;
	return RUSK_OK;
}

RUSK_EXPORT const char *rusk_sync_policy_name(rusk_sync_policy p)
{
	switch (p) {
	case RUSK_SYNC_STATE: return "state";
	case RUSK_SYNC_SAME: return "same";
	case RUSK_SYNC_DIFF: return "diff";
	}
	return "unknown";
}

RUSK_EXPORT int rusk_sync_check(const rusk_sync_params *p, char *err, size_t errlen)
{
	if (p == NULL)
		return rusk_errf(err, errlen, RUSK_EINVAL, "sync params are NULL");
	if (p->policy != RUSK_SYNC_STATE && p->policy != RUSK_SYNC_SAME &&
	    p->policy != RUSK_SYNC_DIFF)
		return rusk_errf(err, errlen, RUSK_EINVAL, "unknown sync policy %d",
		                 (int)p->policy);
	if (p->agents == 0)
		return rusk_errf(err, errlen, RUSK_EINVAL, "sync needs at least one agent");
	if (p->partitions == 0)
		return rusk_errf(err, errlen, RUSK_EINVAL, "sync needs at least one partition");
	if (p->gap_ns == 0 || p->gap_ns < p->agents)
		return rusk_errf(err, errlen, RUSK_EINVAL,
		                 "sync gap %llu ns is shorter than one ns per agent (%u agents)",
		                 (unsigned long long)p->gap_ns, p->agents);
	if (p->policy == RUSK_SYNC_DIFF && p->partitions < p->agents)
		return rusk_errf(err, errlen, RUSK_EPOLICY,
		                 "diff sync needs at least as many partitions as agents (ParSync "
		                 "§5.1: P >= N), got P = %u < N = %u",
		                 p->partitions, p->agents);
	return RUSK_OK;
}

RUSK_EXPORT uint64_t rusk_sync_step_ns(const rusk_sync_params *p)
{
	if (p == NULL || p->agents == 0)
		return 0;
	return p->policy == RUSK_SYNC_STATE ? p->gap_ns : p->gap_ns / p->agents;
}

RUSK_EXPORT uint64_t rusk_sync_offset_ns(const rusk_sync_params *p, uint32_t agent)
{
	if (p == NULL || !p->random_offset || rusk_sync_step_ns(p) == 0)
		return 0;
	rusk_rng r;
	rusk_rng_seed(&r, p->seed, 0x6f666673 /* "offs" */ + (uint64_t)agent * 7919);
	return rusk_rng_next(&r) % rusk_sync_step_ns(p);
}

RUSK_EXPORT size_t rusk_sync_partitions(const rusk_sync_params *p, uint32_t agent, uint64_t k,
                                        uint32_t *out, size_t cap)
{
	uint64_t lo, hi;
	if (p == NULL || p->agents == 0)
		return 0;
	if (out == NULL)
		cap = 0;
	if (p->policy == RUSK_SYNC_STATE) {
		lo = 0;
		hi = p->partitions;
	} else {
		uint64_t n = p->agents;
		uint64_t j = p->policy == RUSK_SYNC_DIFF ? (agent + k) % n : k % n;
		lo = j * p->partitions / n;
		hi = (j + 1) * p->partitions / n;
	}
	size_t count = (size_t)(hi - lo);
	for (size_t i = 0; i < count && i < cap; i++)
		out[i] = (uint32_t)(lo + i);
	return count;
}
