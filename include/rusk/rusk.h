/* SPDX-License-Identifier: MIT */
/*
 * Umbrella header: everything public in rusk.
 *
 * Linking (docs/embedding.md, "Installing and linking"). librusk comes as librusk.a and librusk.so;
 * `pkg-config --libs rusk` links the shared one, `--static` lists what the archive needs.
 * Allocator: a librusk built with jemalloc (the default, -DRUSK_WITH_JEMALLOC=ON) takes its
 * large arrays from jemalloc's mallocx. Debian's libjemalloc has no prefixed API, so a
 * program that links librusk.a (and so libjemalloc) gets jemalloc as its malloc for every
 * allocation of the process; the shared librusk loads libjemalloc for itself after libc,
 * and the program keeps libc's malloc (unless it links libjemalloc itself, as
 * `pkg-config --libs --static` does). Build with -DRUSK_WITH_JEMALLOC=OFF to keep libc's
 * allocator everywhere (rusk then uses aligned_alloc).
 */
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
#include <rusk/quota.h>
#include <rusk/ru.h>
#include <rusk/sched.h>
#include <rusk/sync.h>
#include <rusk/vec.h>
#include <rusk/version.h>

#endif /* RUSK_RUSK_H */
