/* SPDX-License-Identifier: MIT */
/*
 * What a hand-off costs on this machine, apart from rusk: how late a timed sleep ends
 * (default timer slack, then 1 ns), and how long a futex wake takes to run the woken
 * thread. The floor under `rusk run`'s scheduling delay (perf/RESULTS.md).
 *   cc -O2 perf/wakeup.c -o /tmp/wakeup -lpthread && /tmp/wakeup
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define N 20000

static _Atomic uint32_t word;
static _Atomic uint64_t sent;
static uint64_t lat[N];
static int n_lat;

static uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp);
	printf("%-34s p50 %6.1f us  p90 %6.1f us  p99 %6.1f us  (%d samples)\n", what,
	       v[n / 2] / 1e3, v[n * 9 / 10] / 1e3, v[n * 99 / 100] / 1e3, n);
}

static void sleep_lateness(const char *what)
{
	for (int i = 0; i < N / 4; i++) {
		uint64_t t = now() + 300000;
		struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		lat[i] = now() - t;
	}
	report(what, lat, N / 4);
}

static void *waiter(void *arg)
{
	(void)arg;
	for (uint32_t seen = 0;;) {
		while (atomic_load(&word) == seen)
			syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		seen = atomic_load(&word);
		if (seen == UINT32_MAX)
			return NULL;
		lat[n_lat++] = now() - atomic_load(&sent);
	}
}

int main(void)
{
	sleep_lateness("sleep lateness, default slack");
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	sleep_lateness("sleep lateness, 1 ns slack");
	pthread_t t;
	pthread_create(&t, NULL, waiter, NULL);
	for (int i = 0; i < N; i++) {
		nanosleep(&(struct timespec){0, 200000}, NULL); /* the waiter parks meanwhile */
		atomic_store(&sent, now());
		atomic_fetch_add(&word, 1);
		syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	atomic_store(&word, UINT32_MAX);
	syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_join(t, NULL);
	report("futex wake to running thread", lat, n_lat);
	return 0;
}
