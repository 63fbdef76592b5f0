/* SPDX-License-Identifier: MIT */
/*
 * What `rusk run` and `rusk sim` report (report.c): the per-second series and the summary
 * at the end. The run's state is driver.h's `run`.
 */
#ifndef RUSK_CLI_REPORT_H
#define RUSK_CLI_REPORT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct run run;

/* One utilization sample (busy share of the RUs) toward this second's mean: `rusk run`
 * samples every 10 ms and `rusk sim` every 10 virtual ms, because a single reading at the
 * second's edge can fall, every second, in the same phase of the agents' sync steps. */
void drv_util_sample(run *R);
/* Per-second sampler, main thread, once a second: the CSV row (--csv) and, with tty, the
 * progress line on stderr. Reads the agents' statistics relaxed while they run. Returns
 * the backlog (tasks submitted and neither placed nor rejected). */
uint64_t drv_second(run *R, bool tty);
/* drv_second for a second in which nothing happened: no task submitted, placed, running or
 * queued, nothing held (rusk sim skips idle stretches of a trace with it). Its row, figures
 * and side effects are drv_second's for such a second, byte for byte; it reads no
 * histogram and measures nothing, so a virtual second costs microseconds. */
void drv_second_idle(run *R, bool tty);
/* Final summary, checks and JSON. `interrupted`: a signal stopped the run before it ended
 * on its own. Returns the exit status: RUSK_EXIT_NOMEM after drv_fail, else
 * RUSK_EXIT_FAIL if a check failed or the JSON could not be written, else
 * RUSK_EXIT_INTERRUPTED if interrupted, else 0. Main thread, once, after every agent
 * has stopped. */
int drv_report(run *R, bool interrupted);

#endif
