/* SPDX-License-Identifier: MIT */
/* rusk: the command-line tool. `rusk demo` runs the commit/release demonstration. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static void usage(void)
{
	puts("usage: rusk COMMAND [options]\n"
	     "\n"
	     "commands:\n"
	     "  run      the main job: open-loop arrivals in phases, agent threads with local "
	     "views\n"
	     "           and a strategy, completions; summary table, --json, --csv\n"
	     "  sim      the same job in virtual time: a deterministic discrete-event run of the\n"
	     "           kernel with a cost model (--decision-us, --sync-latency-us, ...)\n"
	     "  experiment NAME  reproduce a paper figure (rusk experiment list)\n"
	     "  bench    rusk against central, global-lock, random, StateSync, SameSync in one "
	     "run;\n"
	     "           thread scaling; table, --json, --png\n"
	     "  plot     gnuplot PNGs of a `rusk run --csv` series (delay, throughput, conflicts, "
	     "...)\n"
	     "  demo     commit/release demonstration on the master RU array (default: 100,000\n"
	     "           machines x 16 RUs, 2 threads, 3 s); prints a summary table\n"
	     "  sync     StateSync / SameSync / DiffSync side by side: agents with local views\n"
	     "           commit on their freshest partitions; conflicts, staleness, sync cost\n"
	     "  classify workload classification (Quasar §3.2): error per classification at\n"
	     "           1..8 profiling entries, timing against training size, feedback; --json\n"
	     "  predict  TRACE|--generate N: runtime-distribution predictor's accuracy (3Sigma)\n"
	     "  plan     3σSched against point-estimate, priority and FIFO schedulers (3Sigma)\n"
	     "  help     this text; `rusk COMMAND --help` for a command's options\n"
	     "\n"
	     "exit status: 0 ok, 1 an invariant check failed, 2 bad usage or input, 3 run or sim\n"
	     "interrupted by SIGINT or SIGTERM (summary, --json and --csv of the part that ran;\n"
	     "a second signal ends it at once), 4 out of memory or threads (run and sim stop\n"
	     "every thread they started, then exit)");
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		usage();
		return argc < 2 ? RUSK_EXIT_USAGE : 0;
	}
	if (strcmp(argv[1], "demo") == 0)
		return rusk_cmd_demo(argc - 1, argv + 1);
	if (strcmp(argv[1], "run") == 0)
		return rusk_cmd_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "experiment") == 0)
		return rusk_cmd_experiment(argc - 1, argv + 1);
	if (strcmp(argv[1], "sim") == 0)
		return rusk_cmd_sim(argc - 1, argv + 1);
	if (strcmp(argv[1], "bench") == 0)
		return rusk_cmd_bench(argc - 1, argv + 1);
	if (strcmp(argv[1], "plot") == 0)
		return rusk_cmd_plot(argc - 1, argv + 1);
	if (strcmp(argv[1], "sync") == 0)
		return rusk_cmd_sync(argc - 1, argv + 1);
	if (strcmp(argv[1], "classify") == 0)
		return rusk_cmd_classify(argc - 1, argv + 1);
	if (strcmp(argv[1], "predict") == 0)
		return rusk_cmd_predict(argc - 1, argv + 1);
	if (strcmp(argv[1], "plan") == 0)
		return rusk_cmd_plan(argc - 1, argv + 1);
	fprintf(stderr, "rusk: unknown command '%s' (try: rusk help)\n", argv[1]);
	return RUSK_EXIT_USAGE;
}
