/* SPDX-License-Identifier: MIT */
/* rusk: the command-line tool. `rusk demo` runs the commit/release demonstration. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "outfile.h"

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
	     "  agent    one scheduling agent process against a shared master state: memory, or\n"
	     "           Redis Cluster (--backend redis://HOST:PORT,...); --recount "
	     "(docs/redis.md)\n"
	     "  help     this text; `rusk COMMAND --help` for a command's options\n"
	     "\n"
	     "exit status: 0 ok, 1 an invariant check failed or an output could not be written\n"
	     "(stdout included), 2 bad usage or input, 3 run or sim interrupted by SIGINT,\n"
	     "SIGTERM or SIGHUP (--json, --csv and the summary of the part that ran; a stop\n"
	     "signal again within 2 s is ignored, a later one ends rusk at once, after the\n"
	     "report if it is being written), 4 out of memory or threads (run and sim stop\n"
	     "every thread they started, then exit)\n"
	     "\n"
	     "outputs (--json, --csv, ...) are written beside their targets and renamed into\n"
	     "place when complete: a failed or killed run leaves the previous file as it was;\n"
	     "an output that names an input (or another output) is refused, exit 2");
}

static int dispatch(int argc, char **argv)
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
	if (strcmp(argv[1], "agent") == 0)
		return rusk_cmd_agent(argc - 1, argv + 1);
	fprintf(stderr, "rusk: unknown command '%s' (try: rusk help)\n", argv[1]);
	return RUSK_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	/* A closed stdout (a pipe's reader gone) is a write error like any other, reported
	 * by cli_stdout_close, not a SIGPIPE that kills rusk before its output files are in
	 * place. */
	signal(SIGPIPE, SIG_IGN);
	int rc = dispatch(argc, argv);
	if (cli_stdout_close() != 0 && rc == 0)
		rc = RUSK_EXIT_FAIL;
	return rc;
}
