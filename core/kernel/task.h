/* SPDX-License-Identifier: MIT */
/*
 * The checks of a task (task.c), shared by the agents' hot path (agent.c) and the master
 * array's vector commits (ru.c). Not installed.
 */
#ifndef RUSK_KERNEL_TASK_H
#define RUSK_KERNEL_TASK_H

#include <string.h>

#include "kernel/layout.h"

/* Any profile byte > 99, ten at a time: adding 28 to a byte <= 127 sets its top bit
 * exactly when it was >= 100; bytes >= 128 have it set already. */
static inline bool rusk_profile_ok_(const rusk_profile *p)
{
	_Static_assert(RUSK_N_RESOURCES <= 16, "profile fits two words");
	uint64_t w[2] = {0, 0};
	memcpy(w, p->c, RUSK_N_RESOURCES);
	const uint64_t low7 = UINT64_C(0x7f7f7f7f7f7f7f7f), top = UINT64_C(0x8080808080808080);
	const uint64_t add = UINT64_C(0x1c1c1c1c1c1c1c1c);
	return ((((w[0] & low7) + add) | w[0]) & top) == 0 &&
	       ((((w[1] & low7) + add) | w[1]) & top) == 0;
}

/* What is wrong with task t and which field (*field, when field is not NULL): RUSK_OK,
 * RUSK_EINVAL or RUSK_EINFEASIBLE, the message in err. The slow path of every check. */
int rusk_task_problem_(const rusk_cluster *c, const rusk_task *t, const char **field, char *err,
                       size_t errlen);
/* rusk_task_check's vector part (t has vector demands): the same codes, the field. */
int rusk_vec_check_(const rusk_cluster *c, const rusk_task *t, const char **field, char *err,
                    size_t errlen);

#endif /* RUSK_KERNEL_TASK_H */
