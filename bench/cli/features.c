/* SPDX-License-Identifier: MIT */
/*
 * The run's features, in the order their events are seen and their sections reported
 * (runstate.h, drv_feature). A new feature adds its file and one line here; the driver
 * (driver.c: setup, admit, task, event, free) and the report (report.c: json, print) call
 * every feature through this table.
 */
#include "runstate.h"

const drv_feature *const drv_features[] = {&drv_feature_vec,
                                           &drv_feature_cls,
                                           &drv_feature_sched,
                                           &drv_feature_apred,
                                           &drv_feature_grp,
                                           &drv_feature_redis,
                                           NULL};

int drv_features_setup(run *R, drv_stage st, const drv_setup_in *in)
{
	for (const drv_feature *const *f = drv_features; *f != NULL; f++)
		if ((*f)->stage == st && (*f)->setup != NULL) {
			int rc = (*f)->setup(R, in);
			if (rc != 0)
				return rc;
		}
	return 0;
}
