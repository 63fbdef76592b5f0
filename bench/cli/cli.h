/* SPDX-License-Identifier: MIT */
/* The rusk command-line tool: shared option helpers. */
#ifndef RUSK_CLI_H
#define RUSK_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rusk/rusk.h>

/* Exit statuses: 0 success, 1 run failed (an invariant broke), 2 bad usage or input,
 * 3 interrupted by SIGINT or SIGTERM (the summary, --json and --csv cover the part that
 * ran), 4 out of memory or threads (every thread started was stopped first). */
#define RUSK_EXIT_FAIL        1
#define RUSK_EXIT_USAGE       2
#define RUSK_EXIT_INTERRUPTED 3
#define RUSK_EXIT_NOMEM       4

/*
 * The planner's solver in virtual time (`rusk plan`, `rusk sim --sched`; issue 29): its
 * budget is spent in modelled time, this much per simplex iteration and per branch-and-cut
 * node (rusk_plan_params.iteration_s, node_s), so a run is byte-identical for a seed on
 * any machine under any load. Measured with `rusk plan --solver-clock wall --budget-ms 2000
 * --jobs 300` (no cycle reached that budget), 3sigma and point-real, seeds 1-3, on the
 * 2-core development machine (shared, load about 2): the planners' time over their
 * simplex iterations plus branch-and-cut nodes was 14.1-20.8 us per unit in the six runs,
 * 18.1 us pooled (iterations and nodes rise together, ~1.2 iterations a node, so a fit
 * cannot tell their costs apart: one cost for each). The valuation and the greedy plan
 * are not charged (they are not the solver's, and took no measurable share).
 */
#define RUSK_PLAN_ITERATION_S 18e-6
#define RUSK_PLAN_NODE_S      18e-6

/* Parses an unsigned integer option value in [min, max]; on error prints
 * "rusk: FLAG: 'VALUE' ..." to stderr and returns -1. */
int cli_u64(const char *flag, const char *val, uint64_t min, uint64_t max, uint64_t *out);
/* The path of the public openb trace file `file` for `flag`'s `openb` shorthand:
 * $RUSK_TRACE_DIR/openb/FILE, else the configured directory. 0, or -1 after a message
 * naming the flag and where the data comes from (it is never shipped with rusk). */
int cli_openb_path(const char *flag, const char *file, char *buf, size_t len);
/* Monotonic seconds. */
double cli_now_s(void);
/* --sync / --strategy values; allow_all accepts "all" (then *out is untouched and *all
 * set). Print "rusk: FLAG: 'VALUE' is not ..." and return -1 on a bad value. */
int cli_sync_policy(const char *flag, const char *val, bool allow_all, rusk_sync_policy *out,
                    bool *all);
int cli_strategy(const char *flag, const char *val, bool allow_all, rusk_strategy *out, bool *all);
int cli_double(const char *flag, const char *val, double min, double max, double *out);
/* Whether val is a number as a person writes one: digits; for a real number (real) also an
 * optional '-', one '.' and an exponent. No blanks, '+', hex, inf or nan (which strtoull and
 * strtod take). For values parsed inside a list (--mix, --phases). */
bool cli_plain_number(const char *val, bool real);

/* Cluster options shared by commands: --machines, --rus-per-machine, --partitions,
 * --machines-per-rack, --racks-per-cell, --cluster openb[:REPLICAS]|PATH[:REPLICAS], --seed.
 * cli_cluster_opt returns 1 if argv[*i] was one of them (consuming its value), 0 if not,
 * -1 on a bad value or one of them given a second time (since cli_cluster_init). */
typedef struct cli_cluster {
	rusk_cluster_params params;
	const char *openb_path; /* NULL: build from parameters */
	uint32_t openb_machines;
	uint32_t openb_replicas; /* 0: none given */
	bool partitions_set;     /* --partitions given (else a default that fits the cells) */
	uint8_t given;           /* bit k: cli_cluster_opt's k-th option was given (once only) */
	char openb_buf[4096];
} cli_cluster;

void cli_cluster_init(cli_cluster *cc);
int cli_cluster_opt(cli_cluster *cc, int argc, char **argv, int *i);
/* The machines and RUs the cluster will have, before it is built (a node list is read
 * once, as it is, to count them). Prints the error; returns the rusk code. */
int cli_cluster_size(cli_cluster *cc, uint64_t *machines, uint64_t *rus);
/* Builds the cluster; prints the error naming the option or file; returns the rusk code.
 * --partitions left out: 20, or the cluster's cells when it has fewer. */
int cli_cluster_build(cli_cluster *cc, rusk_cluster **out, double *build_s);
void cli_cluster_usage(void);
/* The cluster options cc stands for, as a command line would give them ("--machines 400
 * --rus-per-machine 2 --partitions 4 ..."; the partitions c was built with when c is not
 * NULL), for messages that compare shapes (a remote state of another shape). */
void cli_cluster_describe(const cli_cluster *cc, const rusk_cluster *c, char *buf, size_t len);

/* The agents a command runs: their sync policy, strategy and knobs, as the flags shared by
 * run, sim, sync and bench give them. Fields left 0 take the library's defaults
 * (rusk_agent_params_init: strategy latency, sample automatic, tau 1 s). One builder for
 * every command, so that a knob is applied the same way wherever agents are made. */
typedef struct cli_agents {
	rusk_sync_policy sync;
	uint32_t agents;
	uint64_t gap_ms;
	bool offsets; /* random per-agent step offsets (Tarcil §5.1) */
	rusk_strategy strategy;
	uint64_t sample, tau_ms;
	bool global_lock;
	uint64_t seed; /* of the sync offsets and the agents' random choices */
} cli_agents;

/* The sync parameters of a's agents on `partitions` partitions, steps counted from
 * start_ns. */
rusk_sync_params cli_sync_params(const cli_agents *a, uint32_t partitions, uint64_t start_ns);
/* rusk_sync_check of those parameters (start 0): RUSK_OK, or its code with the reason in
 * err (the caller names the flags, as each command words it). */
int cli_sync_check(const cli_agents *a, uint32_t partitions, char *err, size_t errlen);
/* Agent `index`'s parameters: rusk_agent_params_init's defaults for sp, then a's
 * strategy, sample, tau, global lock and seed. */
void cli_agent_params(const cli_agents *a, const rusk_sync_params *sp, uint32_t index,
                      rusk_agent_params *ap);

/* One option of a command's table (cli_parse). */
typedef enum cli_kind {
	CLI_U64,    /* out: uint64_t *, within [min, max] */
	CLI_U32,    /* out: uint32_t *, within [min, max] (max <= UINT32_MAX) */
	CLI_DOUBLE, /* out: double *, within [min, max] */
	CLI_FLAG,   /* out: bool *, set; takes no value */
	CLI_ON_OFF, /* out: bool *, from "on" or "off" */
	CLI_CHOICE, /* out: int *, the value of the name given, one of `choices` */
	CLI_FILE,   /* out: const char **, a file name */
	CLI_CUSTOM, /* parse(flag, value, out): 0, or -1 after printing the error */
} cli_kind;
/* A name a CLI_CHOICE option accepts and the value it stands for. */
typedef struct cli_choice {
	const char *name;
	int value;
} cli_choice;
typedef struct cli_opt {
	const char *name;
	cli_kind kind;
	double min, max;
	void *out;
	int (*parse)(const char *flag, const char *val, void *out);
	const cli_choice *choices; /* CLI_CHOICE: the accepted names, ended by {NULL, 0} */
	/* When not NULL: set to the option's name each time it is given, so that a caller
	 * knows whether it was given, and several options sharing one `given` tell which of
	 * them came last (rules such as "not --duration-s with the last of these"). */
	const char **given;
	/* A positional argument that may be left out (cli_parse then leaves *out alone). */
	bool optional;
	/* What a missing value is called in "rusk: FLAG: needs ..." (cli_parse), e.g.
	 * "a directory"; NULL: "a file name" for CLI_FILE, "a value" for the other kinds. */
	const char *needs;
	/* An option that takes a value and may be given more than once (each value handled
	 * by its parser, e.g. one that adds to a list). Every other such option given twice is
	 * refused: "rusk: FLAG: given more than once (give it once)". No option of rusk
	 * repeats today. Flags without a value (CLI_FLAG) may be repeated: they set a bool. */
	bool repeatable;
} cli_opt;
/* The most entries one cli_parse table may hold. */
#define CLI_MAX_OPTS 256
/* Table entries: the fields of one kind, designated (the rest zero), written inside braces
 * so that .given can follow: {CLI_DOUBLE_OPT("--phase-s", 0.001, 86400, &s), .given = &g}. */
#define CLI_U64_OPT(flag, lo, hi, p)                                                               \
	.name = (flag), .kind = CLI_U64, .min = (lo), .max = (hi), .out = (p)
#define CLI_U32_OPT(flag, lo, hi, p)                                                               \
	.name = (flag), .kind = CLI_U32, .min = (lo), .max = (hi), .out = (p)
#define CLI_DOUBLE_OPT(flag, lo, hi, p)                                                            \
	.name = (flag), .kind = CLI_DOUBLE, .min = (lo), .max = (hi), .out = (p)
#define CLI_FLAG_OPT(flag, p)   .name = (flag), .kind = CLI_FLAG, .out = (p)
#define CLI_ON_OFF_OPT(flag, p) .name = (flag), .kind = CLI_ON_OFF, .out = (p)
#define CLI_CHOICE_OPT(flag, list, p)                                                              \
	.name = (flag), .kind = CLI_CHOICE, .choices = (list), .out = (p)
#define CLI_FILE_OPT(flag, p)       .name = (flag), .kind = CLI_FILE, .out = (p)
#define CLI_CUSTOM_OPT(flag, fn, p) .name = (flag), .kind = CLI_CUSTOM, .parse = (fn), .out = (p)
/* CLI_CUSTOM parsers: R per RU or "auto" (0) into a uint64_t; a strategy or a sync policy
 * into these pairs, or "all" where `all` is not NULL (then *all is set instead). */
int cli_sample(const char *flag, const char *val, void *out);
typedef struct cli_choice_strategy {
	rusk_strategy *v;
	bool *all;
} cli_choice_strategy;
int cli_opt_strategy(const char *flag, const char *val, void *out);
/* --slack (3Sigma deadline slack): a percentage in [0, 10000], or `mix` (-1: drawn from
 * 20/40/60/80% per job); out is a double. */
int cli_opt_slack(const char *flag, const char *val, void *out);
typedef struct cli_choice_sync {
	rusk_sync_policy *v;
	bool *all;
} cli_choice_sync;
int cli_opt_sync_policy(const char *flag, const char *val, void *out);
/*
 * Parses argv[1..argc) of command `cmd`: cluster options into *cc (when not NULL), then the
 * n options of `opts`, in order: a later value of an option replaces an earlier one.
 * An entry whose name does not begin with '-' (e.g. "RUN.csv", "NAME") is a positional
 * argument, required unless .optional, of a kind that takes a value (CLI_FILE, CLI_CHOICE,
 * ...): the k-th
 * argument not beginning with '-' goes to the k-th such entry, wherever it stands among
 * the options; its errors name it "CMD NAME"; one too many is refused.
 * An option that takes a value (every kind but CLI_FLAG, and the cluster options) given last,
 * or followed by what reads as another option ("--x", or '-' and a letter), is refused as
 * "rusk: FLAG: needs a value" (or its .needs), naming the option found instead; a lone "-"
 * and negative numbers are values.
 * Returns 0; 1 after --help / -h printed usage(); -1 after printing the error, naming the
 * option or argument (the caller exits with RUSK_EXIT_USAGE).
 */
int cli_parse(const char *cmd, int argc, char **argv, cli_cluster *cc, const cli_opt *opts,
              size_t n, void (*usage)(void));

#include "base/hist.h"

/* One closed-loop row of agents (sync_cmd.c): what they did in `elapsed` seconds. */
typedef struct cli_row {
	uint64_t placed, attempts, conflicts, refused, r_sum, syncs, sync_ns, as_n, pref_placed;
	/* every call's work (rusk_placement): calls that placed nothing included */
	uint64_t gave_up, samples, examined, parts, sample_ns, commit_ns;
	double q_sum, as_sum, elapsed;
	rusk_hist decide;
} cli_row;
int cli_run_agents(rusk_cluster *c, const rusk_sync_params *sp, const rusk_agent_params *tmpl,
                   uint32_t agents, size_t window, uint32_t n_pref, bool learn_releases,
                   double warm_s, double duration, cli_row *out);

/* `rusk experiment NAME`'s table: the experiment and its options (defaults: rounds 0, the
 * experiment's own; seed 1). Returns as cli_parse does; `list` is a help (1). */
typedef enum cli_experiment_name {
	CLI_EXP_EQ2,
	CLI_EXP_TARCIL_CDF,
	CLI_EXP_TARCIL_OVERHEAD,
	CLI_EXP_FGD,
} cli_experiment_name;
typedef struct cli_experiment {
	int name; /* a cli_experiment_name */
	uint64_t rounds, seed;
	const char *csv;        /* NULL: stdout */
	const char *cluster;    /* fgd: node list (NULL or "openb": the public one) */
	const char *trace;      /* fgd: pod list (NULL or "openb") */
	uint64_t seeds, sample; /* fgd: seeds seed..seed+seeds-1 (default 3); fixed R (0: auto) */
} cli_experiment;
int cli_experiment_parse(int argc, char **argv, cli_experiment *o);
/* `rusk experiment fgd` (fgd_exp.c): the fill-until-full runs of every quality model, the
 * CSV to out, a summary per model to stderr. Returns an exit status. */
/* A GPU task type of a workload: RUs, MiB, GPU models (cluster platform mask, 0: any), GPUs,
 * milli-GPU each, and its weight. */
typedef struct cli_gpu_type {
	uint32_t rus, mem, models;
	uint16_t gpus, milli;
	double w;
} cli_gpu_type;
/* Free milli-GPU of machine state (mi, mv) that a task of type t could not use (FGD's
 * fragmentation measure; fgd_exp.c, also vecrep.c's fragmented share). */
uint32_t cli_gpu_unusable(const rusk_machine_info *mi, const rusk_machine_vec *mv,
                          const cli_gpu_type *t);
int cli_experiment_fgd(FILE *out, const char *nodes, const char *trace, uint64_t seed,
                       uint32_t seeds, uint32_t sample);
/* `rusk plot RUN.csv -o DIR`'s table: both required. Returns as cli_parse does. */
typedef struct cli_plot {
	const char *in, *dir;
} cli_plot;
int cli_plot_parse(int argc, char **argv, cli_plot *o);

/* SIGINT, SIGTERM and SIGHUP ask run, sim and agent to stop (stop.c: the rule for a repeated
 * signal is in its design note): the handler only records the signal, the loops poll
 * drv_stop_signal() (every sleep is sliced so that it wakes within 100 ms). Main thread,
 * before any other thread starts (they block these signals). */
void drv_signals_install(void);
/* The signal that asked to stop (SIGINT, SIGTERM or SIGHUP), or 0. Any thread. */
int drv_stop_signal(void);
/* The report and the output files are being written (true) or are done (false): a second
 * signal past the grace period waits for false, then ends the process. Main thread. */
void drv_stop_writing(bool on);
/* Seconds after the first stop signal during which a repeated one is ignored. */
#define DRV_STOP_GRACE_S 2

int rusk_cmd_demo(int argc, char **argv);
int rusk_cmd_sync(int argc, char **argv);
int rusk_cmd_run(int argc, char **argv);
int rusk_cmd_sim(int argc, char **argv);
int rusk_cmd_experiment(int argc, char **argv);
int rusk_cmd_plot(int argc, char **argv);
int rusk_cmd_bench(int argc, char **argv);
int rusk_cmd_classify(int argc, char **argv);
/* `rusk classify --alloc` (classify_alloc.c). */
int rusk_cmd_classify_alloc(int argc, char **argv);
int rusk_cmd_predict(int argc, char **argv);
int rusk_cmd_plan(int argc, char **argv);
int rusk_cmd_agent(int argc, char **argv);

#endif
