/* SPDX-License-Identifier: MIT */
/* Umbrella header: everything public in rusk. */
#ifndef RUSK_RUSK_H
#define RUSK_RUSK_H

#include <rusk/admit.h>
#include <rusk/classify.h>
#include <rusk/clock.h>
#include <rusk/cluster.h>
#include <rusk/dispatch.h>
#include <rusk/error.h>
#include <rusk/plan.h>
#include <rusk/predict.h>
#include <rusk/ru.h>
#include <rusk/sched.h>
#include <rusk/sync.h>
#include <rusk/vec.h>
#include <rusk/version.h>

#endif /* RUSK_RUSK_H */
