/* SPDX-License-Identifier: MIT */
/*
 * `rusk plot RUN.csv -o DIR`: gnuplot PNGs of a `rusk run --csv` series in the style of
 * ParSync Figs. 5-8: scheduling delay percentiles (log scale), throughput and backlog,
 * conflicts, utilization and placement quality over time, phase boundaries marked.
 * Writes DIR/plot.gp and runs gnuplot on it; a missing gnuplot names its package.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli.h"
#include "outfile.h"

static const char *expected_header =
        "second,phase,submitted,placed,throughput,rejected,backlog,utilization,conflicts,"
        "delay_p10_us,delay_p50_us,delay_p90_us,delay_p99_us,quality_mean";

static void usage(void)
{
	puts("usage: rusk plot RUN.csv -o DIR\n\n"
	     "Draws DIR/{delay,throughput,conflicts,utilization,quality}.png from the\n"
	     "per-second CSV of `rusk run --csv RUN.csv` with gnuplot (gnuplot-nox).");
}

/* -o's value: a directory (made if missing). */
static int dir_value(const char *flag, const char *val, void *out)
{
	if (val == NULL) {
		fprintf(stderr, "rusk: %s: needs a directory\n", flag);
		return -1;
	}
	*(const char **)out = val;
	return 0;
}

int cli_plot_parse(int argc, char **argv, cli_plot *o)
{
	*o = (cli_plot){0};
	const cli_opt opts[] = {
	        {CLI_FILE_OPT("RUN.csv", &o->in)},
	        {CLI_CUSTOM_OPT("-o", dir_value, &o->dir), .needs = "a directory"},
	};
	int r = cli_parse("plot", argc, argv, NULL, opts, sizeof opts / sizeof *opts, usage);
	if (r == 0 && o->dir == NULL) {
		fprintf(stderr, "rusk plot: missing -o DIR (try: rusk plot --help)\n");
		return -1;
	}
	return r;
}

int rusk_cmd_plot(int argc, char **argv)
{
	cli_plot o;
	int pr = cli_plot_parse(argc, argv, &o);
	if (pr != 0)
		return pr > 0 ? 0 : RUSK_EXIT_USAGE;
	const char *in = o.in, *dir = o.dir;
	FILE *f = fopen(in, "r");
	if (f == NULL) {
		fprintf(stderr, "rusk plot: %s: cannot open: %s\n", in, strerror(errno));
		return RUSK_EXIT_USAGE;
	}
	char line[1024];
	if (fgets(line, sizeof line, f) == NULL ||
	    strncmp(line, expected_header, strlen(expected_header)) != 0) {
		fprintf(stderr,
		        "rusk plot: %s:1: not a `rusk run --csv` file (header must be '%s')\n", in,
		        expected_header);
		fclose(f);
		return RUSK_EXIT_USAGE;
	}
	/* Phase boundaries: the seconds where the phase column changes. */
	int prev_phase = -1, rows = 0, n_marks = 0;
	double marks[64];
	unsigned lineno = 1;
	while (fgets(line, sizeof line, f) != NULL) {
		lineno++;
		int sec, phase;
		if (sscanf(line, "%d,%d,", &sec, &phase) != 2) {
			fprintf(stderr, "rusk plot: %s:%u: expected 'second,phase,...'\n", in,
			        lineno);
			fclose(f);
			return RUSK_EXIT_USAGE;
		}
		/* a row is the second (sec - 1, sec]: its phase began at sec - 1 */
		if (prev_phase >= 0 && phase != prev_phase && n_marks < 64)
			marks[n_marks++] = sec - 1;
		prev_phase = phase;
		rows++;
	}
	fclose(f);
	if (rows == 0) {
		fprintf(stderr, "rusk plot: %s: no rows after the header\n", in);
		return RUSK_EXIT_USAGE;
	}
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "rusk plot: -o %s: %s\n", dir, strerror(errno));
		return RUSK_EXIT_USAGE;
	}
	/* DIR/plot.gp and the five charts (outfile.h): none may be RUN.csv. The script takes
	 * each chart's file from a variable (its final name by default) and is put in place
	 * first; gnuplot draws into the charts' temporary files, renamed once it succeeded. */
	static const char *chart[] = {"delay", "throughput", "conflicts", "utilization", "quality"};
	enum { N_CHARTS = 5 };
	char names[N_CHARTS + 1][4200];
	cli_out outs[N_CHARTS + 1];
	snprintf(names[0], sizeof names[0], "%s/plot.gp", dir);
	outs[0] = (cli_out){.flag = "-o (its gnuplot script)", .path = names[0]};
	for (int k = 0; k < N_CHARTS; k++) {
		snprintf(names[k + 1], sizeof names[k + 1], "%s/%s.png", dir, chart[k]);
		outs[k + 1] = (cli_out){.flag = "-o", .path = names[k + 1], .external = true};
	}
	const cli_in input = {"plot RUN.csv", in};
	int orc = cli_files_open(&input, 1, outs, N_CHARTS + 1);
	if (orc != 0)
		return orc;
	FILE *g = outs[0].f;
	for (int k = 0; k < N_CHARTS; k++)
		fprintf(g, "if (!exists(\"out_%s\")) out_%s = '%s'\n", chart[k], chart[k],
		        names[k + 1]);
	fprintf(g, "set datafile separator ','\nset key top left\nset grid\n"
	           "set terminal pngcairo size 960,540 noenhanced\nset xlabel 'time (s)'\n");
	for (int i = 0; i < n_marks; i++)
		fprintf(g,
		        "set arrow from %.1f, graph 0 to %.1f, graph 1 nohead dt 2 lc rgb "
		        "'gray40'\n",
		        marks[i], marks[i]);
	fprintf(g,
	        "set output out_delay\nset title 'scheduling delay'\nset logscale y\n"
	        "set ylabel 'delay (us)'\n"
	        "plot '%s' every ::1 using 1:10 with lines title 'p10', '' every ::1 using 1:11 "
	        "with lines title 'p50', '' every ::1 using 1:12 with lines title 'p90', '' "
	        "every ::1 using 1:13 with lines title 'p99'\nunset logscale y\n"
	        "set output out_throughput\nset title 'throughput and backlog'\n"
	        "set ylabel 'tasks/s'\nset y2label 'backlog (tasks)'\nset y2tics\n"
	        "plot '%s' every ::1 using 1:5 with lines title 'placed per second', '' every ::1 "
	        "using 1:7 axes x1y2 with lines title 'backlog'\nunset y2tics\nunset y2label\n"
	        "set output out_conflicts\nset title 'conflicts'\nset ylabel 'conflicts/s'\n"
	        "plot '%s' every ::1 using 1:9 with lines title 'conflicts per second'\n"
	        "set output out_utilization\nset title 'utilization'\n"
	        "set ylabel 'share of RUs held'\nset yrange [0:1]\n"
	        "plot '%s' every ::1 using 1:8 with lines title 'utilization'\nset autoscale y\n"
	        "set output out_quality\nset title 'placement quality'\n"
	        "set ylabel 'mean quality placed'\n"
	        "plot '%s' every ::1 using 1:($5 > 0 ? $14 : 1/0) with lines title 'quality'\n",
	        in, in, in, in, in);
	if (cli_out_close(&outs[0]) != 0) {
		cli_outs_discard(outs, N_CHARTS + 1);
		return RUSK_EXIT_FAIL;
	}
	char cmd[40000];
	int len = snprintf(cmd, sizeof cmd, "gnuplot -e \"");
	for (int k = 0; k < N_CHARTS; k++)
		len += snprintf(cmd + len, sizeof cmd - (size_t)len, "out_%s='%s';", chart[k],
		                cli_out_name(&outs[k + 1]));
	snprintf(cmd + len, sizeof cmd - (size_t)len, "\" '%s'", names[0]);
	int rc = system(cmd);
	if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
		if (WIFEXITED(rc) && WEXITSTATUS(rc) == 127)
			fprintf(stderr,
			        "rusk plot: gnuplot not found: apt-get install -y gnuplot-nox\n");
		else
			fprintf(stderr, "rusk plot: gnuplot failed on %s\n", names[0]);
		cli_outs_discard(outs, N_CHARTS + 1);
		return RUSK_EXIT_FAIL;
	}
	if (cli_outs_close(outs + 1, N_CHARTS) != 0)
		return RUSK_EXIT_FAIL;
	printf("rusk plot: %d seconds, %d phase boundaries -> %s/{delay,throughput,conflicts,"
	       "utilization,quality}.png\n",
	       rows, n_marks, dir);
	return 0;
}
