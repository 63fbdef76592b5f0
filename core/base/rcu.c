/* SPDX-License-Identifier: MIT */
/*
 * Thread registration with liburcu (flavour memb, chosen once for rusk: kernel/snapshot.c).
 * Every thread that enters a read-side section (a view sync, a decision, a classifier or
 * predictor lookup) registers first; RUSK_DEBUG builds refuse unregistered callers.
 */
#include <urcu/urcu-memb.h>

#include "base/base.h"

/*
 * Registration nests: liburcu aborts on a second registration of a thread, and a library
 * that registers for its own calls cannot know whether its caller already did. The first
 * rusk_thread_register registers with liburcu, later ones count; the matching last
 * unregister unregisters. The depth is also what RUSK_DEBUG builds check (RUSK_UNREGISTERED_,
 * base/base.h).
 */
__thread unsigned rusk_reg_depth_;

RUSK_EXPORT void rusk_thread_register(void)
{
	if (rusk_reg_depth_++ == 0)
		urcu_memb_register_thread();
}

RUSK_EXPORT void rusk_thread_unregister(void)
{
	if (rusk_reg_depth_ == 0)
		return; /* not registered: nothing to undo (liburcu would abort) */
	if (--rusk_reg_depth_ == 0)
		urcu_memb_unregister_thread();
}

RUSK_EXPORT bool rusk_thread_registered(void)
{
	return rusk_reg_depth_ > 0;
}
