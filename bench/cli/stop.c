/* SPDX-License-Identifier: MIT */
/*
 * How a signal stops `rusk run`, `rusk sim` and `rusk agent` (cli.h: drv_signals_install).
 *
 * SIGINT, SIGTERM and SIGHUP ask the run to stop: the handler records the first one and
 * the time, the run's loops see it within 100 ms, and the report (the --json and --csv
 * files, then the summary on stdout) covers the part that ran; exit status 3.
 *
 * A repeated signal. GNU timeout sends SIGTERM to its child and then to the child's process
 * group, a terminal's hang-up comes with SIGHUP and SIGTERM together, and a script may kill
 * twice: one-shot handling (SA_RESETHAND) let the second of such a pair kill rusk before its
 * report, leaving no results. The rule chosen is a grace period:
 *   - a repeated stop signal within DRV_STOP_GRACE_S (2 s) of the first is ignored: it is
 *     the same request;
 *   - a later one ends the process at once (the user does not want to wait any longer),
 *     with the signal's default action, after removing the outputs' temporary files (the
 *     previous results at the targets stay as they were) -- except while the report and
 *     the output files are being written (drv_stop_writing): then it ends the process as
 *     soon as they are in place, so a report once begun is never lost.
 * The rule is the same for every source (terminal, kill, timeout): a Ctrl-C pressed twice
 * quickly stops once, pressed again after 2 s ends rusk.
 *
 * Async-signal-safety: the handler uses clock_gettime, sigaction, raise, unlink (through
 * cli_out_unlink_pending) and stores to lock-free atomics or volatile sig_atomic_t, all
 * async-signal-safe. It runs on the main thread only (the other threads block the three
 * signals from before they start) and blocks all three while it runs, so it never nests:
 * `first_ns` has one writer and is written before `stop_sig` publishes the stop.
 */
#include <signal.h>
#include <time.h>

#include "base/atomic.h"
#include "runstate.h"

/* Written by the handler: lock-free atomic stores are async-signal-safe. stop_sig is read
 * by every thread (relaxed: a flag polled in loops, no data hangs off it). */
static uint32_t stop_sig;
static uint64_t first_ns;               /* when stop_sig came (the handler only) */
static volatile sig_atomic_t writing;   /* drv_stop_writing(true) .. (false) */
static volatile sig_atomic_t end_after; /* a signal that ends the process after writing */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Ends the process as signal `sig` would have: temporary files removed, default action. */
static void end_now(int sig)
{
	cli_out_unlink_pending();
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig); /* in the handler it is blocked until the handler returns */
}

static void on_stop_signal(int sig)
{
	uint64_t now = mono_ns();
	if (rusk_load32(&stop_sig, RUSK_RELAXED) == 0) {
		first_ns = now;
		rusk_store32(&stop_sig, (uint32_t)sig, RUSK_RELAXED);
		return;
	}
	if (now - first_ns < DRV_STOP_GRACE_S * 1000000000ull)
		return; /* the same request again (timeout, a process group, a double Ctrl-C) */
	if (writing) {
		end_after = sig; /* the report is being written: end once it is in place */
		return;
	}
	end_now(sig);
}

void drv_signals_install(void)
{
	/* No SA_RESTART: the main thread's sleep returns at once. */
	struct sigaction sa = {.sa_handler = on_stop_signal};
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGHUP);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int drv_stop_signal(void)
{
	return (int)rusk_load32(&stop_sig, RUSK_RELAXED);
}

void drv_stop_writing(bool on)
{
	writing = on;
	if (!on && end_after != 0)
		end_now(end_after);
}
