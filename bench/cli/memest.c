/* SPDX-License-Identifier: MIT */
/*
 * The memory a `rusk run` or `rusk sim` will need, stated before any of it is allocated
 * (driver.h: drv_task_cap, drv_memory_check).
 *
 * Why: the task slots (one rusk_dtask per task in the system at once: slots given back are
 * used again first, and made in chunks as needed), the per-task tables of the run (preferred
 * machines) and the cluster (per RU and per machine arrays) are sized by flags. An
 * allocation of 20 GB succeeds under Linux's overcommit and is then paged in as the run
 * goes, so `--rate 1e8` used to grow to 16 GB before anything failed; under `ulimit -v` it
 * failed somewhere inside the library with a message that named no flag. Refusing up front,
 * with the flags that set each part, is what a user can act on (exit 2).
 *
 * The model (bytes), measured with `/usr/bin/time -f %M` on rusk sim (2026-11, Release,
 * jemalloc) and rounded up:
 *   base                   16 MiB   the binary, its libraries, histograms, the report
 *   per machine            140      machine records, topology, views' per-machine parts
 *   per RU                 28       RU word, owner, tenant profile, score, bitmaps, the
 *                                    report's score ranking and D bins
 *   per agent              256 KiB  (+ 2 MiB in rusk run: its submission and completion
 *                                    rings, 64K entries each); 128 KiB of it the value
 *                                    cache of vector decisions (RUSK_VVAL_MAX entries),
 *                                    4 KiB their listing hints (RUSK_VHINT), 36 KiB
 *                                    the listings kept (RUSK_VLIST)
 *   per agent and machine  2        its view's free count of each machine (kept for the
 *                                    listings of vector decisions; counted always)
 *   per task slot          sizeof(rusk_dtask) + 8, for the tasks in the system at once:
 *                          at most the run's, and at least its peak rate x (the mean run
 *                          time + 1 s of queueing) (a floor: an overloaded run queues more)
 *   per task of the run    4 per preferred machine
 *   per trace arrival      2 x sizeof(rusk_arrival) (the file's and the expanded copy)
 * (measured: 1M machines x 16 RUs 580 MB, model 601 MB; 2.2M slots 334 MB, model 364 MB.)
 * What is available: the least of MemAvailable + SwapFree (/proc/meminfo), `ulimit -v`
 * (RLIMIT_AS), `ulimit -d` (RLIMIT_DATA) and a cgroup v2 memory.max less memory.current.
 * The estimate is a floor for a virtual-memory limit (thread stacks and allocator reserves
 * come on top): a run that passes may still end with status 4 under a tight `ulimit -v`.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "runstate.h"

#define MEM_BASE        (16.0 * 1048576)
#define MEM_PER_MACHINE 140.0
#define MEM_PER_RU      28.0
#define MEM_PER_AGENT   (256.0 * 1024)
#define MEM_PER_AGENT_M 2.0
#define MEM_PER_RING    (2.0 * DRV_RING_SIZE * sizeof(void *))

uint64_t drv_task_cap(const run *R, double *expected)
{
	const run_cfg *cfg = &R->cfg;
	double e = 0;
	for (int k = 0; k < cfg->n_groups; k++)
		for (int j = 0; j < cfg->gn_phases[k]; j++)
			e += cfg->rate * drv_group_size(cfg, k) / cfg->agents * cfg->gphases[k][j] /
			     100.0 * cfg->phase_s;
	double cap = e * 1.1 + 1000;
	if (R->trace != NULL)
		cap = (double)R->n_trace;
	else if (cfg->sched >= 0 && cfg->trace != NULL && strcmp(cfg->trace, "e2e") == 0)
		cap = (double)cfg->e2e_jobs; /* generated after the cluster: its job count */
	if (cfg->sched >= 0) /* a preempted job restarts in a new slot while its old one ends */
		cap = 2 * cap + 1024;
	if (expected != NULL)
		*expected = e;
	return cap >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)cap;
}

/* A number from a "Name:   123 kB" line of /proc/meminfo, in bytes; -1 if absent. */
static double meminfo(const char *name)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (f == NULL)
		return -1;
	char line[256];
	double v = -1;
	size_t n = strlen(name);
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			v = strtod(line + n + 1, NULL) * 1024;
			break;
		}
	fclose(f);
	return v;
}

/* A cgroup v2 file's number ("max": none, -1). */
static double cgroup_value(const char *file)
{
	char path[128], buf[64];
	snprintf(path, sizeof path, "/sys/fs/cgroup/%s", file);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	double v = -1;
	if (fgets(buf, sizeof buf, f) != NULL && strncmp(buf, "max", 3) != 0)
		v = strtod(buf, NULL);
	fclose(f);
	return v;
}

double drv_memory_available(const char **why)
{
	double best = INFINITY;
	*why = "no limit found";
	double avail = meminfo("MemAvailable"), swap = meminfo("SwapFree");
	if (avail >= 0) {
		best = avail + (swap > 0 ? swap : 0);
		*why = "the machine's available memory and swap";
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (double)rl.rlim_cur < best) {
		best = (double)rl.rlim_cur;
		*why = "the address-space limit (ulimit -v)";
	}
	if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (double)rl.rlim_cur < best) {
		best = (double)rl.rlim_cur;
		*why = "the data-segment limit (ulimit -d)";
	}
	double max = cgroup_value("memory.max"), cur = cgroup_value("memory.current");
	if (max >= 0 && max - (cur > 0 ? cur : 0) < best) {
		best = max - (cur > 0 ? cur : 0);
		*why = "the cgroup's memory.max";
	}
	return best;
}

/* "1.23 GB", "456 MB" into buf. */
static const char *bytes(double b, char *buf, size_t len)
{
	if (b >= 1e9)
		snprintf(buf, len, "%.2f GB", b / 1e9);
	else
		snprintf(buf, len, "%.0f MB", b / 1e6);
	return buf;
}

int drv_memory_check(const run *R, const cli_cluster *cc, uint64_t machines, uint64_t rus,
                     const char *cmd)
{
	const run_cfg *cfg = &R->cfg;
	double expected;
	uint64_t cap = drv_task_cap(R, &expected);
	bool trace = R->trace != NULL;
	const char *task_flags = trace ? "--trace, --rate (shifted copies)"
	                         : cfg->sched >= 0 && cfg->trace != NULL
	                                 ? "--e2e-jobs"
	                                 : "--rate, --duration-s (or --phases, --phase-s)";
	if (cap >= (UINT64_C(1) << 32)) {
		fprintf(stderr,
		        "rusk %s: %.3g tasks (%s): more than a run holds (2^32 - 1 task slots); "
		        "lower them\n",
		        cmd, (double)cap, task_flags);
		return RUSK_EXIT_USAGE;
	}
	uint32_t pref = trace ? RUSK_TRACE_MAX_PREF : cfg->preferred;
	double peak = 0;
	for (int k = 0; k < cfg->n_groups; k++)
		for (int j = 0; j < cfg->gn_phases[k]; j++)
			peak = fmax(peak, cfg->rate * cfg->gphases[k][j] / 100.0);
	double live = fmin((double)cap, peak * (cfg->task_ms / 1000.0 + 1.0) + 1024);
	if (trace) /* its tasks' rate and durations vary: every task, to be safe */
		live = (double)cap;
	double slot = (double)rusk_dtask_size_() + 8;
	double parts[4] = {
	        live * slot + (double)cap * 4.0 * pref,
	        (double)machines * MEM_PER_MACHINE + (double)rus * MEM_PER_RU,
	        cfg->agents * (MEM_PER_AGENT + (double)machines * MEM_PER_AGENT_M +
	                       (cfg->sim ? 0 : MEM_PER_RING)),
	        trace ? 2.0 * (double)R->n_trace * sizeof(rusk_arrival) : 0,
	};
	double need = MEM_BASE + parts[0] + parts[1] + parts[2] + parts[3];
	const char *why;
	double avail = drv_memory_available(&why);
	if (need <= avail)
		return 0;
	char b[6][32];
	fprintf(stderr,
	        "rusk %s: this run needs about %s, more than the %s available (%s):\n"
	        "  %.0f task slots of %.0f bytes (%" PRIu64 " tasks)  %s   (%s)\n"
	        "  %" PRIu64 " machines, %" PRIu64 " RUs   %s   (%s)\n"
	        "  %u agents                        %s   (--agents)\n",
	        cmd, bytes(need, b[0], sizeof b[0]), bytes(avail, b[1], sizeof b[1]), why, live,
	        slot, cap, bytes(parts[0], b[2], sizeof b[2]), task_flags, machines, rus,
	        bytes(parts[1], b[3], sizeof b[3]),
	        cc->openb_path != NULL ? "--cluster, --machines" : "--machines, --rus-per-machine",
	        cfg->agents, bytes(parts[2], b[4], sizeof b[4]));
	if (trace)
		fprintf(stderr, "  %zu trace arrivals              %s   (--trace, --rate)\n",
		        R->n_trace, bytes(parts[3], b[5], sizeof b[5]));
	fprintf(stderr, "  lower the largest part's flags\n");
	return RUSK_EXIT_USAGE;
}
