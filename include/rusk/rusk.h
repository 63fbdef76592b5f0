/* SPDX-License-Identifier: MIT */
/* Umbrella header: everything public in rusk. */
#ifndef RUSK_RUSK_H
#define RUSK_RUSK_H

#include <rusk/admit.h>
#include <rusk/clock.h>
#include <rusk/cluster.h>
#include <rusk/error.h>
#include <rusk/predict.h>
#include <rusk/ru.h>
#include <rusk/sched.h>
#include <rusk/sync.h>

#define RUSK_VERSION_MAJOR 0
#define RUSK_VERSION_MINOR 1

#endif /* RUSK_RUSK_H */
