/* SPDX-License-Identifier: MIT */
/*
 * The run's features, in the order their events are seen and their sections reported
 * (runstate.h, drv_feature). A new feature adds its file and one line here; the driver
 * (driver.c) and the report (report.c) call every feature through this table.
 */
#include "runstate.h"

const drv_feature *const drv_features[] = {&drv_feature_vec,   &drv_feature_cls, &drv_feature_sched,
                                           &drv_feature_apred, &drv_feature_grp, NULL};
