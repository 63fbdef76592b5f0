/* SPDX-License-Identifier: MIT */
/*
 * The rusk tool's one option parser (bench/cli/opts.c, cli_parse), the table of
 * `rusk run` / `rusk sim` built on it (bench/cli/run_opts.c, drv_parse) and those of
 * `rusk experiment` and `rusk plot` (positional arguments): values and
 * defaults, the messages and statuses of refusals (each names the flag), the rules between
 * flags, and the builder of the agents' parameters that the commands share.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"
#include "runstate.h"

/* Calls fn(argc, argv, arg) on `cmd` and `args` (NULL-terminated, after the command name)
 * with stderr and stdout captured (stderr kept in err); returns what fn returned. */
typedef int (*parse_fn)(int argc, char **argv, void *arg);
static int captured(parse_fn fn, void *arg, const char *cmd, const char *const *args, char *err,
                    size_t len)
{
	char *argv[64];
	int argc = 0;
	argv[argc++] = (char *)cmd;
	for (; *args != NULL; args++)
		argv[argc++] = (char *)*args;
	argv[argc] = NULL;
	FILE *tmp = tmpfile();
	assert_non_null(tmp);
	fflush(stdout);
	int saved_err = dup(2), saved_out = dup(1);
	dup2(fileno(tmp), 2);
	dup2(fileno(tmp), 1); /* usage text: not checked here, kept off the test's output */
	int rc = fn(argc, argv, arg);
	fflush(stdout);
	dup2(saved_err, 2);
	dup2(saved_out, 1);
	close(saved_err);
	close(saved_out);
	rewind(tmp);
	size_t n = fread(err, 1, len - 1, tmp);
	err[n] = '\0';
	fclose(tmp);
	return rc;
}

/* What one drv_parse call did: its return value, what it wrote to stderr, the config. */
typedef struct parsed {
	int rc;
	bool sim;
	char err[1024];
	cli_cluster cc;
	run_cfg cfg;
} parsed;

static int drv_parse_fn(int argc, char **argv, void *arg)
{
	parsed *p = arg;
	return drv_parse(argc, argv, p->sim, &p->cc, &p->cfg);
}

/* Runs drv_parse on `args` (NULL-terminated, after the command name), output captured. */
static void parse(parsed *p, bool sim, const char *const *args)
{
	memset(p, 0, sizeof *p);
	p->sim = sim;
	p->rc = captured(drv_parse_fn, p, sim ? "sim" : "run", args, p->err, sizeof p->err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void assert_refused(bool sim, const char *const *args, const char *msg)
{
	parsed p;
	parse(&p, sim, args);
	assert_int_equal(p.rc, RUSK_EXIT_USAGE);
	assert_string_equal(p.err, msg);
}

static void test_defaults(void **state)
{
	(void)state;
	parsed p;
	parse(&p, false, (const char *const[]){NULL});
	assert_int_equal(p.rc, 0);
	assert_string_equal(p.err, "");
	/* ParSync §6.1's shape: 2 RUs per machine, 40K tasks/s, five 10 s phases. */
	assert_int_equal(p.cc.params.rus_per_machine, 2);
	assert_int_equal(p.cfg.agents, 2);
	assert_true(p.cfg.rate == 40000 && !p.cfg.rate_set);
	assert_int_equal(p.cfg.n_phases, 5);
	assert_true(p.cfg.phases[2] == 95 && p.cfg.phase_s == 10);
	assert_int_equal(p.cfg.n_groups, 1);
	assert_int_equal(p.cfg.gn_phases[0], 5);
	assert_int_equal(p.cfg.dist, 2);
	assert_int_equal(p.cfg.trace_format, -1);
	assert_int_equal(p.cfg.quality, RUSK_QUALITY_SCORE);
	assert_false(p.cfg.quiet || p.cfg.gang || p.cfg.admission || p.cfg.latency_ignores_pref);
	assert_false(p.cfg.sim);
	/* rusk sim: ParSync §6.1's 20 schedulers, with work-based decision costs; fewer
	 * partitions than 20 (diff sync: P >= N) give as many agents as partitions. */
	parse(&p, true, (const char *const[]){NULL});
	assert_int_equal(p.rc, 0);
	assert_true(p.cfg.agents == 20 && p.cfg.sim && !p.cfg.cost_flat);
	parse(&p, true, ARGS("--partitions", "4"));
	assert_int_equal(p.cfg.agents, 4);
	parse(&p, true, ARGS("--partitions", "4", "--sync", "same"));
	assert_int_equal(p.cfg.agents, 20);
}

/* Every kind of table entry: integers (32 and 64 bits), numbers, choices, on|off, files,
 * custom parsers, flags without a value (a flag may be repeated: --quiet twice). */
static void test_values(void **state)
{
	(void)state;
	parsed p;
	parse(&p, true,
	      ARGS("--quiet", "--agents", "4", "--gang", "--quiet", "--gap-ms", "250", "--rate",
	           "100", "--task-dist", "exp", "--quality", "interference", "--trace-format",
	           "openb", "--admission", "on", "--latency-preferred", "off", "--sample", "auto",
	           "--sync", "same", "--strategy", "quality", "--json", "o.json", "--global-lock",
	           "--decision-us", "0", "--partitions", "4", "--seed", "9"));
	assert_int_equal(p.rc, 0);
	assert_true(p.cfg.quiet && p.cfg.gang && p.cfg.global_lock && p.cfg.sim);
	assert_int_equal(p.cfg.agents, 4);
	assert_int_equal(p.cfg.gap_ms, 250);
	assert_true(p.cfg.rate == 100 && p.cfg.rate_set);
	assert_int_equal(p.cfg.dist, 0);
	assert_int_equal(p.cfg.quality, RUSK_QUALITY_INTERFERENCE);
	assert_int_equal(p.cfg.trace_format, RUSK_TRACE_OPENB);
	assert_true(p.cfg.admission && p.cfg.latency_ignores_pref);
	assert_int_equal(p.cfg.sample, 0);
	assert_int_equal(p.cfg.sync, RUSK_SYNC_SAME);
	assert_int_equal(p.cfg.strategy, RUSK_STRATEGY_QUALITY);
	assert_string_equal(p.cfg.json, "o.json");
	assert_true(p.cfg.decision_us == 0);
	assert_int_equal(p.cc.params.partitions, 4);
	assert_int_equal(p.cc.params.seed, 9);
}

/* Each refusal names the flag and its value, with status 2. */
static void test_refusals(void **state)
{
	(void)state;
	assert_refused(false, ARGS("--agents", "0"),
	               "rusk: --agents: '0' is not an integer in 1..1024\n");
	assert_refused(false, ARGS("--batch"), "rusk: --batch: needs a value\n");
	assert_refused(false, ARGS("--rate", "x"),
	               "rusk: --rate: 'x' is not a number in 0.001..1e+08\n");
	assert_refused(false, ARGS("--task-dist", "gamma"),
	               "rusk: --task-dist: 'gamma' is not exp, lognormal or fixed\n");
	assert_refused(false, ARGS("--quality"), "rusk: --quality: needs a value\n");
	assert_refused(false, ARGS("--trace-format", "swf"),
	               "rusk: --trace-format: 'swf' is not openb or csv\n");
	assert_refused(false, ARGS("--admission", "yes"),
	               "rusk: --admission: 'yes' is not on or off\n");
	assert_refused(false, ARGS("--latency-preferred"),
	               "rusk: --latency-preferred: needs a value\n");
	assert_refused(false, ARGS("--trace"), "rusk: --trace: needs a file (or openb, or e2e)\n");
	assert_refused(false, ARGS("--csv"), "rusk: --csv: needs a file name\n");
	assert_refused(false, ARGS("--sync", "all"),
	               "rusk: --sync: 'all' is not diff, same or state\n");
	assert_refused(
	        false, ARGS("--strategy", "all"),
	        "rusk: --strategy: 'all' is not latency, quality, adaptive, random or central\n");
	assert_refused(false, ARGS("--phases", "50,,80"),
	               "rusk: --phases: '50,,80' is not a list of 1..16 loads in % (e.g. "
	               "50,80,95,80,50)\n");
	/* Numbers inside a list are plain too (the eighth review, nit 5: strtod and strtoul
	 * took blanks, '+', hex and "-0" there). */
	static const char *const loose_phases[] = {"+50", "-0", " 50", "0x10", "50,+80"};
	for (size_t k = 0; k < sizeof loose_phases / sizeof *loose_phases; k++) {
		char want[160];
		snprintf(want, sizeof want,
		         "rusk: --phases: '%s' is not a list of 1..16 loads in %% (e.g. "
		         "50,80,95,80,50)\n",
		         loose_phases[k]);
		assert_refused(false, ARGS("--phases", loose_phases[k]), want);
	}
	static const char *const loose_mix[] = {" 1@1", "+1@1", "1@ 1", "1@0x1p0", "1@+1", "0x1@1"};
	for (size_t k = 0; k < sizeof loose_mix / sizeof *loose_mix; k++) {
		char want[256];
		snprintf(want, sizeof want,
		         "rusk: --mix: '%s' is not a list of RUS[:machine|rack|spread|any]"
		         "[:gang|incremental]@SHARE (at most 8, shares adding up to 1; e.g. "
		         "1@0.98,48:machine@0.02)\n",
		         loose_mix[k]);
		assert_refused(false, ARGS("--mix", loose_mix[k]), want);
	}
	assert_refused(false, ARGS("--groups", "50"),
	               "rusk: --groups: '50' is not 2..4 phase lists separated by ';' (e.g. "
	               "'67,100,100;67,67,100')\n");
	/* The cost model is rusk sim's: rusk run does not know it. */
	assert_refused(false, ARGS("--decision-us", "5"),
	               "rusk run: unknown option '--decision-us' (try: rusk run --help)\n");
	assert_refused(true, ARGS("--bogus"),
	               "rusk sim: unknown option '--bogus' (try: rusk sim --help)\n");
	assert_refused(false, ARGS("--machines", "0"),
	               "rusk: --machines: '0' is not an integer in 1..4294967295\n");
}

/* A flag that takes a value, given last or followed by another option ("--backend --agents
 * 2"): "needs a value", naming the flag and what came instead, exit 2, for every kind of
 * table entry and the cluster options; "-" (standard input) stays a value. */
static void test_missing_value(void **state)
{
	(void)state;
	static const char *const flags[] = {
	        "--backend", "--agents", "--rate",     "--quality",  "--admission",
	        "--json",    "--sample", "--phases",   "--machines", "--cluster",
	        "--seed",    "--sync",   "--strategy",
	};
	for (size_t k = 0; k < sizeof flags / sizeof *flags; k++) {
		const char *noun = strcmp(flags[k], "--json") == 0 ? "a file name" : "a value";
		char want[256];
		snprintf(want, sizeof want, "rusk: %s: needs %s\n", flags[k], noun);
		assert_refused(false, ARGS(flags[k]), want);
		snprintf(want, sizeof want,
		         "rusk: %s: needs %s (found the option '--quiet' instead)\n", flags[k],
		         noun);
		assert_refused(false, ARGS(flags[k], "--quiet", "--agents", "2"), want);
	}
	assert_refused(false, ARGS("--backend", "--agents", "2"),
	               "rusk: --backend: needs a value (found the option '--agents' instead)\n");
	assert_refused(false, ARGS("--rate", "-h"),
	               "rusk: --rate: needs a value (found the option '-h' instead)\n");
	/* A negative number is a value (refused by its range, as before), "-" a file. */
	assert_refused(false, ARGS("--rate", "-5"),
	               "rusk: --rate: '-5' is not a number in 0.001..1e+08\n");
	parsed p;
	parse(&p, false, ARGS("--json", "-", "--quiet"));
	assert_int_equal(p.rc, 0);
	assert_string_equal(p.cfg.json, "-");
}

/* A value option given twice, of every kind of table entry and the cluster options
 * (rusk agent --backend redis://a --backend redis://b kept the last): refused, naming it,
 * exit 2, even with the same value; a .repeatable entry takes each value. */
static void test_twice(void **state)
{
	(void)state;
	const struct {
		const char *const *args;
		const char *flag;
	} twice[] = {
	        {ARGS("--agents", "2", "--agents", "4"), "--agents"},
	        {ARGS("--backend", "redis://a:1", "--quiet", "--backend", "redis://b:1"),
	         "--backend"},
	        {ARGS("--rate", "5", "--rate", "5"), "--rate"},
	        {ARGS("--quality", "score", "--quality", "interference"), "--quality"},
	        {ARGS("--admission", "on", "--admission", "off"), "--admission"},
	        {ARGS("--json", "a", "--json", "b"), "--json"},
	        {ARGS("--sync", "diff", "--sync", "same"), "--sync"},
	        {ARGS("--phases", "50", "--phases", "60"), "--phases"},
	        {ARGS("--machines", "5", "--seed", "1", "--machines", "6"), "--machines"},
	        {ARGS("--seed", "1", "--seed", "1"), "--seed"},
	        {ARGS("--cluster", "x.csv", "--cluster", "y.csv"), "--cluster"},
	};
	for (size_t k = 0; k < sizeof twice / sizeof *twice; k++) {
		char want[256];
		snprintf(want, sizeof want, "rusk: %s: given more than once (give it once)\n",
		         twice[k].flag);
		assert_refused(false, twice[k].args, want);
	}
	/* A .repeatable entry: each value goes to its parser. */
	double v = 0;
	const cli_opt opts[] = {
	        {CLI_DOUBLE_OPT("--once", 0, 10, &v)},
	        {CLI_DOUBLE_OPT("--many", 0, 10, &v), .repeatable = true},
	};
	char *ok[] = {"x", "--many", "1", "--once", "2", "--many", "3", NULL};
	assert_int_equal(cli_parse("x", 7, ok, NULL, opts, 2, NULL), 0);
	assert_true(v == 3);
}

/* --duration-s and the last of --phases, --phase-s and --groups: refused, naming it. */
static void test_shape_rules(void **state)
{
	(void)state;
	const char *tail =
	        " cannot be combined: --duration-s S is one phase of S seconds at 100% of --rate; "
	        "for phases, give --phases and --phase-s (seconds per phase)\n";
	char want[512];
	snprintf(want, sizeof want, "rusk: --duration-s and --phase-s%s", tail);
	assert_refused(true, ARGS("--phases", "50", "--phase-s", "2", "--duration-s", "3"), want);
	snprintf(want, sizeof want, "rusk: --duration-s and --phases%s", tail);
	assert_refused(true, ARGS("--duration-s", "3", "--phase-s", "2", "--phases", "50"), want);
	snprintf(want, sizeof want, "rusk: --duration-s and --groups%s", tail);
	assert_refused(true, ARGS("--phases", "50", "--groups", "50;60", "--duration-s", "3"),
	               want);
	parsed p;
	parse(&p, true, ARGS("--duration-s", "3"));
	assert_int_equal(p.rc, 0);
	assert_int_equal(p.cfg.n_phases, 1);
	assert_true(p.cfg.phases[0] == 100 && p.cfg.phase_s == 3);
	/* Groups: the run lasts as long as the longest; more groups than agents refused. */
	parse(&p, true, ARGS("--groups", "50;60,70,80", "--agents", "3"));
	assert_int_equal(p.rc, 0);
	assert_int_equal(p.cfg.n_groups, 2);
	assert_int_equal(p.cfg.n_phases, 3);
	assert_refused(true, ARGS("--groups", "50;60;70", "--agents", "2"),
	               "rusk: --groups: 3 groups need at least 3 agents (--agents 2)\n");
	assert_refused(true, ARGS("--groups", "50;60", "--trace", "x.csv"),
	               "rusk: --groups and --trace cannot be combined\n");
}

/* Checks after parsing: the sync policy against the partitions, outputs on one file. */
static void test_checks(void **state)
{
	(void)state;
	assert_refused(false, ARGS("--agents", "30"),
	               "rusk: --sync diff --agents 30 --partitions 20: diff sync needs at least as "
	               "many partitions as agents (ParSync §5.1: P >= N), got P = 20 < N = 30\n");
	assert_refused(false, ARGS("--json", "same.out", "--csv", "./same.out"),
	               "rusk: --json same.out and --csv ./same.out name the same file\n");
	parsed p;
	parse(&p, false, ARGS("--help"));
	assert_int_equal(p.rc, -1); /* usage printed: the command exits 0 */
	parse(&p, false, ARGS("--agents", "0", "--help"));
	assert_int_equal(p.rc, RUSK_EXIT_USAGE); /* options are read in order */
}

/* cli_parse's `given`: set to the option's name each time; shared, the last one given. */
static void test_given(void **state)
{
	(void)state;
	double a = 0, b = 0;
	bool f = false;
	const char *last = NULL, *flag = NULL;
	const cli_opt opts[] = {
	        {CLI_DOUBLE_OPT("--a", 0, 10, &a), .given = &last},
	        {CLI_DOUBLE_OPT("--b", 0, 10, &b), .given = &last},
	        {CLI_FLAG_OPT("--f", &f), .given = &flag},
	};
	char *argv[] = {"x", "--b", "1", "--f", "--a", "2", NULL};
	assert_int_equal(cli_parse("x", 6, argv, NULL, opts, 3, NULL), 0);
	assert_string_equal(last, "--a");
	assert_string_equal(flag, "--f");
	assert_true(a == 2 && b == 1 && f);
}

/* A table for cli_parse through `captured`. */
typedef struct table {
	const cli_opt *opts;
	size_t n;
} table;

static void no_usage(void)
{
}

static int table_fn(int argc, char **argv, void *arg)
{
	const table *t = arg;
	return cli_parse("t", argc, argv, NULL, t->opts, t->n, no_usage);
}

/* Positional entries (named without '-'): taken in order wherever they stand, of their
 * kind, required; one too many is refused; options keep their values. */
static void test_positional(void **state)
{
	(void)state;
	static const cli_choice modes[] = {{"a", 1}, {"b", 2}, {NULL, 0}};
	const char *in = NULL, *given = NULL;
	int mode = 0;
	uint64_t n = 0;
	const cli_opt opts[] = {
	        {CLI_FILE_OPT("IN", &in), .given = &given},
	        {CLI_CHOICE_OPT("MODE", modes, &mode)},
	        {CLI_U64_OPT("--n", 0, 10, &n)},
	};
	table t = {opts, 3};
	char err[512];
	assert_int_equal(captured(table_fn, &t, "t", ARGS("--n", "3", "x", "b"), err, sizeof err),
	                 0);
	assert_string_equal(err, "");
	assert_true(in != NULL && strcmp(in, "x") == 0 && mode == 2 && n == 3);
	assert_string_equal(given, "IN");
	assert_int_equal(captured(table_fn, &t, "t", ARGS("x", "a", "--n", "4"), err, sizeof err),
	                 0);
	assert_true(mode == 1 && n == 4);
	const struct {
		const char *const *args;
		const char *msg;
	} bad[] = {
	        {ARGS("--n", "3"), "rusk t: missing IN (try: rusk t --help)\n"},
	        {ARGS("x"), "rusk t: missing MODE (try: rusk t --help)\n"},
	        {ARGS("x", "c"), "rusk: t MODE: 'c' is not a or b\n"},
	        {ARGS("x", "a", "y"), "rusk t: unexpected argument 'y' (try: rusk t --help)\n"},
	        {ARGS("x", "a", "-y"), "rusk t: unknown option '-y' (try: rusk t --help)\n"},
	        /* An option's value is its own, never a positional argument. */
	        {ARGS("--n", "x", "a"), "rusk: --n: 'x' is not an integer in 0..10\n"},
	        {ARGS("x", "a", "--n"), "rusk: --n: needs a value\n"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		assert_int_equal(captured(table_fn, &t, "t", bad[k].args, err, sizeof err), -1);
		assert_string_equal(err, bad[k].msg);
	}
	/* Without positional entries, a word is an unknown option, as before; and a U64 whose
	 * max is UINT64_MAX (2^64 as a double) takes the whole range. */
	const cli_opt seed[] = {{CLI_U64_OPT("--seed", 0, (double)UINT64_MAX, &n)}};
	t = (table){seed, 1};
	assert_int_equal(captured(table_fn, &t, "t", ARGS("y"), err, sizeof err), -1);
	assert_string_equal(err, "rusk t: unknown option 'y' (try: rusk t --help)\n");
	assert_int_equal(captured(table_fn, &t, "t", ARGS("--seed", "18446744073709551615"), err,
	                          sizeof err),
	                 0);
	assert_true(n == UINT64_MAX);
	assert_int_equal(captured(table_fn, &t, "t", ARGS("--seed", "18446744073709551616"), err,
	                          sizeof err),
	                 -1);
	assert_string_equal(err, "rusk: --seed: '18446744073709551616' is not an integer in "
	                         "0..18446744073709551615\n");
}

static int experiment_fn(int argc, char **argv, void *arg)
{
	return cli_experiment_parse(argc, argv, arg);
}

static int plot_fn(int argc, char **argv, void *arg)
{
	return cli_plot_parse(argc, argv, arg);
}

/* rusk experiment and rusk plot: their tables, values and refusals. */
static void test_experiment_plot(void **state)
{
	(void)state;
	char err[512];
	cli_experiment e;
	assert_int_equal(captured(experiment_fn, &e, "experiment",
	                          ARGS("--seed", "7", "tarcil-cdf", "--rounds", "30", "--csv", "c"),
	                          err, sizeof err),
	                 0);
	assert_true(e.name == CLI_EXP_TARCIL_CDF && e.rounds == 30 && e.seed == 7);
	assert_string_equal(e.csv, "c");
	assert_int_equal(captured(experiment_fn, &e, "experiment", ARGS("eq2"), err, sizeof err),
	                 0);
	assert_true(e.name == CLI_EXP_EQ2 && e.rounds == 0 && e.seed == 1 && e.csv == NULL);
	/* list and --help print the usage (exit 0), --help after the name too. */
	assert_int_equal(captured(experiment_fn, &e, "experiment", ARGS("list"), err, sizeof err),
	                 1);
	assert_int_equal(
	        captured(experiment_fn, &e, "experiment", ARGS("eq2", "--help"), err, sizeof err),
	        1);
	const struct {
		const char *const *args;
		const char *msg;
	} bad[] = {
	        {ARGS("--rounds", "5"),
	         "rusk experiment: missing NAME (try: rusk experiment --help)\n"},
	        {ARGS("fig99"),
	         "rusk: experiment NAME: 'fig99' is not eq2, tarcil-cdf, tarcil-overhead, fgd "
	         "or list\n"},
	        /* fgd's options belong to fgd only. */
	        {ARGS("eq2", "--seeds", "2"),
	         "rusk experiment: --cluster, --trace, --seeds and --sample are options of "
	         "`rusk experiment fgd` only\n"},
	        {ARGS("eq2", "more"),
	         "rusk experiment: unexpected argument 'more' (try: rusk experiment --help)\n"},
	        {ARGS("eq2", "--bogus"),
	         "rusk experiment: unknown option '--bogus' (try: rusk experiment --help)\n"},
	        /* A cluster option is not the experiment's. */
	        {ARGS("eq2", "--machines", "5"),
	         "rusk experiment: unknown option '--machines' (try: rusk experiment --help)\n"},
	        {ARGS("eq2", "--rounds", "0"),
	         "rusk: --rounds: '0' is not an integer in 1..100000000\n"},
	        {ARGS("eq2", "--csv"), "rusk: --csv: needs a file name\n"},
	};
	for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
		assert_int_equal(
		        captured(experiment_fn, &e, "experiment", bad[k].args, err, sizeof err),
		        -1);
		assert_string_equal(err, bad[k].msg);
	}
	cli_plot pl;
	assert_int_equal(captured(plot_fn, &pl, "plot", ARGS("-o", "d", "r.csv"), err, sizeof err),
	                 0);
	assert_true(strcmp(pl.in, "r.csv") == 0 && strcmp(pl.dir, "d") == 0);
	assert_int_equal(captured(plot_fn, &pl, "plot", ARGS("-h"), err, sizeof err), 1);
	const struct {
		const char *const *args;
		const char *msg;
	} pbad[] = {
	        {ARGS("-o", "d"), "rusk plot: missing RUN.csv (try: rusk plot --help)\n"},
	        {ARGS("r.csv"), "rusk plot: missing -o DIR (try: rusk plot --help)\n"},
	        {ARGS("r.csv", "-o"), "rusk: -o: needs a directory\n"},
	        {ARGS("-o", "-h", "r.csv"),
	         "rusk: -o: needs a directory (found the option '-h' instead)\n"},
	        {ARGS("a.csv", "b.csv", "-o", "d"),
	         "rusk plot: unexpected argument 'b.csv' (try: rusk plot --help)\n"},
	        {ARGS("r.csv", "-x"), "rusk plot: unknown option '-x' (try: rusk plot --help)\n"},
	};
	for (size_t k = 0; k < sizeof pbad / sizeof *pbad; k++) {
		assert_int_equal(captured(plot_fn, &pl, "plot", pbad[k].args, err, sizeof err), -1);
		assert_string_equal(err, pbad[k].msg);
	}
}

/* One builder for the agents' parameters: the flags' knobs, zero for the defaults. */
static void test_agent_params(void **state)
{
	(void)state;
	cli_agents ca = {.sync = RUSK_SYNC_DIFF,
	                 .agents = 3,
	                 .gap_ms = 500,
	                 .offsets = true,
	                 .strategy = RUSK_STRATEGY_ADAPTIVE,
	                 .sample = 7,
	                 .tau_ms = 20,
	                 .global_lock = true,
	                 .seed = 5};
	rusk_sync_params sp = cli_sync_params(&ca, 8, 123);
	assert_int_equal(sp.policy, RUSK_SYNC_DIFF);
	assert_int_equal(sp.partitions, 8);
	assert_int_equal(sp.agents, 3);
	assert_int_equal(sp.gap_ns, 500000000ull);
	assert_int_equal(sp.start_ns, 123);
	assert_true(sp.random_offset);
	assert_int_equal(sp.seed, 5);
	rusk_agent_params ap;
	cli_agent_params(&ca, &sp, 2, &ap);
	assert_int_equal(ap.index, 2);
	assert_int_equal(ap.sync.gap_ns, sp.gap_ns);
	assert_int_equal(ap.strategy, RUSK_STRATEGY_ADAPTIVE);
	assert_int_equal(ap.sample, 7);
	assert_int_equal(ap.tau_ns, 20000000ull);
	assert_true(ap.global_lock);
	assert_int_equal(ap.seed, 5);
	/* Zero: the library's defaults. */
	cli_agents zero = {.agents = 1, .gap_ms = 1000};
	rusk_agent_params def, got;
	sp = cli_sync_params(&zero, 1, 0);
	rusk_agent_params_init(&def, &sp, 0);
	cli_agent_params(&zero, &sp, 0, &got);
	assert_int_equal(got.tau_ns, def.tau_ns);
	assert_int_equal(got.sample, def.sample);
	assert_int_equal(got.strategy, def.strategy);
	char err[256];
	zero.sync = RUSK_SYNC_DIFF;
	zero.agents = 4;
	assert_int_equal(cli_sync_check(&zero, 2, err, sizeof err), RUSK_EPOLICY);
	assert_int_equal(cli_sync_check(&zero, 4, err, sizeof err), RUSK_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_defaults),        cmocka_unit_test(test_values),
	        cmocka_unit_test(test_refusals),        cmocka_unit_test(test_shape_rules),
	        cmocka_unit_test(test_checks),          cmocka_unit_test(test_given),
	        cmocka_unit_test(test_agent_params),    cmocka_unit_test(test_positional),
	        cmocka_unit_test(test_experiment_plot), cmocka_unit_test(test_missing_value),
	        cmocka_unit_test(test_twice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
