/* SPDX-License-Identifier: MIT */
/*
 * What `rusk run` (real time, run.c) and `rusk sim` (virtual time, sim.c) share: the
 * flags, the workload (generator or trace), the dispatcher (rusk/dispatch.h: per-agent
 * queues, admission control, priorities and preemption, placement accounting, ends), the
 * per-second series and the summary (text, JSON, CSV). Only the clock and the
 * interleaving differ: run starts the dispatcher's threads, sim steps the same queues on
 * its virtual clock through the dispatcher's step API (core/loop/step.h), which is all of
 * the dispatcher this tool includes.
 * Accounting: submitted = placed - preempted + rejected + backlog, released = placed -
 * preempted; the summary checks both.
 */
#ifndef RUSK_CLI_RUNSTATE_H
#define RUSK_CLI_RUNSTATE_H

#include <ck_ring.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/atomic.h"
#include "base/heap.h"
#include "base/hist.h"
#include "base/rng.h"
#include "cli.h"
#include "loop/step.h"
#include "outfile.h"
#include "workload/loadgen.h"

#define DRV_RING_SIZE         (1u << 16)
#define DRV_MAX_PHASES        16
#define DRV_MAX_GROUPS        4
#define D_BINS                10
#define DRV_MAX_MIX           8
/* rusk run's generator keeps a group's bursts on one agent while it holds fewer tasks than
 * this and its view shows at least this share of the most room any of the group's agents
 * shows (at a light load one agent places everything, one wake-up per burst). Measured on
 * the default run (2 cores): a share of 0.5 / 0.75 / 0.9 gave 2,921 / 1,359 / 0 conflicts
 * and p99 91 / 78 / 64 us over 20 s; round robin per task cost 1.7x the CPU per task at 8
 * agents as at 2. */
#define DRV_CONCENTRATE_BELOW 64
#define DRV_CONCENTRATE_ROOM  0.9
/* RUs of one task at most (rusk sim's per-agent choice buffer); more is too large. */
#define DRV_MAX_TASK_RUS      65536u
/* The longest a trace may be stretched to (--time-scale): about three years. */
#define DRV_MAX_REPLAY_S      1e8

/* A task shape of --mix: RUs, placement kind, commit mode (rusk_commit_mode) and share. */
typedef struct drv_mix {
	uint32_t rus;
	uint8_t placement, commit;
	double share;
} drv_mix;

enum { TS_QUEUED = RUSK_JS_QUEUED, TS_RUNNING = RUSK_JS_RUNNING, TS_DONE = RUSK_JS_DONE };

typedef struct run_cfg {
	uint32_t agents, batch, task_rus;
	uint32_t generators;    /* --generators: generator threads (rusk run), each a shard */
	uint32_t reserve_syncs; /* --reserve-syncs (rusk_dispatch_params.reserve_syncs) */
	double rate, phase_s, duration_s, task_ms;
	double spin_us; /* idle agents' poll before parking (rusk_dispatch_params.spin_ns) */
	double phases[DRV_MAX_PHASES];
	int n_phases;
	bool phases_given; /* --phases given (refused with --trace: a trace has its own) */
	int dist;          /* 0 exp, 1 lognormal, 2 fixed */
	const char *json, *csv, *trace;
	int trace_format;
	double time_scale; /* 0: fit the trace's span to the run */
	bool rate_set;
	uint32_t preferred; /* preferred machines per task */
	/* --mix: task shapes drawn by share instead of --task-rus (n_mix 0: off) */
	drv_mix mix[DRV_MAX_MIX];
	int n_mix;
	/* Load groups (ParSync §5.2 Fig. 4): agent i belongs to group i mod n_groups. */
	int n_groups;
	double gphases[DRV_MAX_GROUPS][DRV_MAX_PHASES];
	int gn_phases[DRV_MAX_GROUPS];
	rusk_quality_model quality;
	rusk_sync_policy sync;
	uint64_t gap_ms, tau_ms, sample;
	rusk_strategy strategy;
	/* Admission control and priorities (Tarcil §4, §5.3). */
	bool admission, gang, global_lock, quiet;
	bool latency_ignores_pref; /* --latency-preferred off: ParSync's Latency-first */
	bool rus_only;             /* --resources rus: a trace's memory and GPUs ignored */
	int classify;              /* --classify: DRV_CLS_OFF / _ON / _ORACLE (classify_run.c) */
	bool target;               /* --target on: sizes from targets (classify_run.c) */
	bool cls_fb_full;          /* --cls-feedback full: whole rows back (classify_run.c) */
	uint32_t ru_milli;         /* --ru-milli: milli-cores per RU (trace cpu_milli) */
	/* 3Sigma in the scheduling loop (sched_run.c): --sched (-1 off, else a
	 * rusk_plan_mode), the E2E-like workload of --trace e2e, deadlines for tasks without
	 * one, and the planner's clock (trace seconds; 0: the defaults sched_run.c states). */
	int sched;
	uint64_t e2e_jobs, e2e_train;
	double slack, slo_share, offered_load;
	double plan_tick_s, plan_slot_s, plan_budget_ms, drain_s;
	bool admit_predict; /* --admit-predict on: the predictor's wait estimates (admit_pred.c) */
	const char *groups_file; /* --groups-file: quota groups (groups_run.c); NULL: none */
	const char *backend;     /* --backend redis://...: the master state there (redis_run.c);
	                          * NULL: memory, this process's own array */
	bool no_init;            /* --no-init: join the state there instead of writing it */
	bool force_init;         /* --force-init: write it even under live agents and runs */
	bool no_auto_reclaim;    /* --no-auto-reclaim: leave dead processes' RUs (redis_run.c) */
	uint32_t commit_batch;   /* --commit-batch: tasks an agent commits to the remote state
	                          * together (kernel/remote.h "Batches"; 1: one at a time) */
	uint32_t wait;           /* --wait N: WAIT for N replicas after each commit or release
	                          * pipeline (state/redis.h); 0: none */
	uint32_t wait_ms;        /* --wait-ms: WAIT's timeout (default 100) */
	uint32_t unavail_ms;     /* --unavailable-ms: a stuck master's partitions skipped after
	                          * this long (kernel/remote.h; default 1000, 0: waited out) */
	double quota_period_ms;  /* --quota-period-ms: the coordinator's period (default 10) */
	/* --groups-csv / --groups-png: the groups' series over time (groups_run.c); NULL:
	 * not written. --openb-groups: an openb pod's group (RUSK_TRACE_GROUPS_*). */
	const char *groups_csv, *groups_png;
	int openb_groups;
	uint32_t buckets;
	double priority_share;
	double alpha; /* ParSync Table 1: run time x alpha on preferred machines (0: off) */
	/* Virtual time (rusk sim): the cost model. */
	bool sim;
	double decision_us, sync_latency_us, commit_latency_us;
	bool cost_flat; /* --cost flat: every decision --decision-us (else work, simcost.h) */
	uint32_t max_retries;
	/* Trace replay, for the report: the file's tasks and span, the time scale applied
	 * (times divided by it) and the shifted copies laid over it. */
	size_t trace_tasks;
	double trace_span_s, trace_scale;
	uint32_t trace_replicas;
	char trace_path[4096];
	char trace_note[4800];
} run_cfg;

/* An agent's counters and histograms are the dispatcher's (one writer, relaxed readers). */
typedef rusk_dagent_stats agent_stats;

/* dst += an agent's scheduling delays, both priorities. */
static inline void drv_delay_merge(rusk_hist *dst, const agent_stats *s)
{
	rusk_hist_merge(dst, &s->delay_hi);
	rusk_hist_merge(dst, &s->delay_lo);
}

/* What the CLI reads of the task an event names (step.h: its slot is not reused before the
 * event returns), copied into *buf; NULL for a REJECTED at submission. */
static inline const rusk_dtask_info *drv_task(rusk_dispatch *d, const rusk_dispatch_event *ev,
                                              rusk_dtask_info *buf)
{
	const rusk_dtask *j = rusk_dispatch_find_(d, ev->task);
	if (j == NULL)
		return NULL;
	rusk_dtask_info_(j, buf);
	return buf;
}

typedef struct run_agent {
	uint32_t index;
	struct run *run;
	rusk_dagent *da;         /* its dispatcher agent: queues, stats, kernel agent */
	agent_stats *st;         /* = &da->st */
	uint64_t d_bins[D_BINS]; /* placed RUs by rank D of their slot score (score model) */
	rusk_hist *mix_delay;    /* --mix: scheduling delay per shape (n_mix), this agent's */
	/* vector tasks placed (drv_vec_placed): milli-cores, MiB, milli-GPU */
	uint64_t alloc_cpu_milli, alloc_mem, alloc_gpu_milli;
	rusk_view_stats vs; /* at exit */
	double busy_s;      /* CPU (run) or modelled (sim) busy time */
	rusk_agent *handle; /* da->ag */
	int err;
	/* sim only */
	uint64_t busy_until;
	bool idle;
	rusk_dtask *cur;
	uint32_t *chosen;
	uint32_t tries;
	uint64_t t_start, dec_ns;
	rusk_placement pl;
} run_agent;

#define DRV_MAX_GENERATORS 64

/* Workload generator state: groups of phased Poisson processes merged, or a trace. With
 * --generators G, generator g is one shard of them: the agents i with i mod G = g, their
 * share of the rate, task ids g, g + G, ... Its counters have one writer (its thread) and
 * relaxed readers (the sampler, the report: drv_gen_totals). */
typedef struct drv_gen {
	rusk_loadgen g[DRV_MAX_GROUPS];
	rusk_arrival next[DRV_MAX_GROUPS];
	bool live[DRV_MAX_GROUPS];
	uint32_t rr[DRV_MAX_GROUPS];
	uint32_t last[DRV_MAX_GROUPS]; /* the agent the group's last task went to */
	bool started[DRV_MAX_GROUPS];  /* last[] names one */
	bool keep_agent;               /* the next task goes where its group's last went */
	bool concentrate; /* rusk run: a burst goes where the last went while that agent's queue
	                   * is short and its view has room (rusk_dispatch_load); rusk sim: a
	                   * round robin per task */
	uint32_t members[DRV_MAX_GROUPS]; /* its agents per group */
	uint32_t *agents[DRV_MAX_GROUPS]; /* their indices, members[k] each */
	uint64_t id, id_step;
	size_t ti;
	rusk_rng prng;
	rusk_rng mrng; /* --mix: the shape of each task (a stream of its own) */
	/* submitted; rejected (of which too large, pool full) and refused by the kernel */
	uint64_t submitted, rejected, too_large, pool, refused;
} drv_gen;

/* The generators' counters summed (those of R->gen[0..n_gen)). */
typedef struct drv_gen_counts {
	uint64_t submitted, rejected, too_large, pool, refused;
} drv_gen_counts;

typedef struct run run;

/*
 * A feature of a run, registered in drv_features (features.c): vector reports (vecrep.c),
 * classification (classify_run.c), the planner (sched_run.c), admission prediction
 * (admit_pred.c). The driver (driver.c) and the report (report.c) call every feature only
 * through this table, in the table's order:
 *   setup   once, in its stage: DRV_STAGE_TRACE right after the trace is read (before the
 *           task cap is known: a trace's vector columns decide it), DRV_STAGE_RUN after
 *           the task cap (classification trains, the planner and admission prediction
 *           start). Returns 0 or the exit code of a refused run; a feature that the run's
 *           options leave off returns 0 and stays off (`on` false).
 *   admit   for each arrival before it gets an id: DRV_ADMIT_FITS when the feature judged
 *           it (and set spec's placement and vector part), DRV_ADMIT_REFUSED when the kernel
 *           would refuse it (counted by the feature, e.g. a vector demand no machine can
 *           hold), DRV_ADMIT_NONE when it is not the feature's (the driver's RU check).
 *   task    for each task whose spec is built, before it is submitted (e.g. Quasar's
 *           profile); returns whether it set spec->profile.
 *   params  the dispatcher's parameters, before it is made (e.g. quota groups).
 *   event   for every dispatcher event, after the driver's own accounting (any thread
 *           that delivers events).
 *   second  each second, on the sampler's (registered) thread: the feature's figures (idle:
 *           nothing was allocated or freed since the last second); csv_header / csv: its
 *           columns of the per-second CSV (a header part starting with ',', then a row's).
 *   json    in the report (before the quality section when json_early, else after it);
 *   print   the text report; both only while `on`.
 *   free    at the end, also when it never started.
 * Any hook may be NULL; every hook but setup and free runs only while `on`. What stays a
 * call by name: the trace loader fills the vector feature's model table while it reads
 * (drv_vec_models, before any setup), --trace e2e's generator is the planner's
 * (drv_sched_e2e), the planner's arrivals go to it instead of to the agents (sim.c and
 * run.c: drv_sched_arrival), and the run's checks line, which words each feature's verdict
 * in one line (report.c: drv_sched_check, drv_apred_ok, drv_grp_ok), and the groups' per-round CSV
 * rows and chart (sim.c: drv_grp_round; report.c: drv_grp_plot).
 */
typedef enum drv_stage { DRV_STAGE_RUN = 0, DRV_STAGE_TRACE } drv_stage;
typedef enum drv_admit { DRV_ADMIT_NONE = 0, DRV_ADMIT_FITS, DRV_ADMIT_REFUSED } drv_admit;
typedef struct drv_setup_in {
	const cli_cluster *cc;
	const char *trace_path; /* the --trace argument, for errors naming file:line */
} drv_setup_in;
typedef struct drv_feature {
	const char *name;
	bool (*on)(const run *R);
	drv_stage stage;
	int (*setup)(run *R, const drv_setup_in *in);
	drv_admit (*admit)(run *R, const rusk_arrival *x, rusk_dtask_spec *spec);
	bool (*task)(run *R, uint64_t id, const rusk_arrival *x, rusk_dtask_spec *spec);
	void (*params)(run *R, rusk_dispatch_params *p);
	void (*event)(run *R, rusk_dispatch_event *ev); /* any thread that delivers events */
	void (*second)(run *R, bool idle);
	const char *(*csv_header)(void);
	void (*csv)(const run *R, FILE *f);
	void (*json)(FILE *f, run *R);
	bool json_early;
	void (*print)(run *R);
	void (*free)(run *R); /* also when it never started */
} drv_feature;
/* Runs the setup hooks of stage st in the table's order: 0 or the first exit code. */
int drv_features_setup(run *R, drv_stage st, const drv_setup_in *in);
extern const drv_feature drv_feature_vec, drv_feature_cls, drv_feature_sched, drv_feature_apred,
        drv_feature_grp, drv_feature_redis;
/* The features, NULL-terminated. */
extern const drv_feature *const drv_features[];

typedef struct drv_vec drv_vec;
typedef struct drv_cls drv_cls;
typedef struct drv_sched drv_sched;
typedef struct drv_apred drv_apred;
typedef struct drv_grp drv_grp;
typedef struct drv_redis drv_redis;

/* The run's output files, in R->outs (opened together, so that none names another). */
enum {
	DRV_OUT_JSON = 0,
	DRV_OUT_CSV,
	DRV_OUT_GROUPS_CSV,
	DRV_OUT_GROUPS_PNG, /* gnuplot writes it (external) */
	DRV_OUT_GROUPS_GP,  /* the script that draws it, kept beside it (PNG.gp) */
	DRV_OUTS
};

struct run {
	run_cfg cfg;
	drv_vec *vec;     /* vector resources of the trace (vecrep.c); NULL: RUs only */
	drv_cls *cls;     /* --classify on|oracle (classify_run.c); NULL: off */
	drv_sched *sched; /* --sched (sched_run.c); NULL: off, arrivals go to the agents */
	drv_apred *apred; /* --admit-predict on (admit_pred.c); NULL: off */
	drv_grp *grp;     /* --groups-file (groups_run.c); NULL: off */
	/* The quota group names of the trace's rows (--groups-file with a csv group column or
	 * --openb-groups; groups_run.c resolves them); n 0 and given false: none. */
	rusk_trace_groups tgroups;
	drv_redis *redis; /* --backend redis://... (redis_run.c); NULL: memory */
	rusk_cluster *c;
	rusk_admit *adm;
	run_agent *ag;
	rusk_dispatch *d;     /* the scheduling loop: queues, admission, preemption, ends */
	uint64_t n_tasks_cap; /* the dispatcher's task slots: every task of the run */
	rusk_arrival *trace;
	size_t n_trace;
	uint32_t *pref_pool;
	uint32_t *score_sorted; /* every RU's slot score (milli), ascending: D by search */
	uint8_t *ru_dbin;       /* each RU's D bin (score model) */
	/* The planner's submissions (--sched; atomic adds); the generators count their own
	 * (gen[0..n_gen), drv_gen_totals). */
	uint64_t submitted, rejected;
	uint64_t refused; /* the kernel refused it at submission (REJECTED) */
	drv_gen *gen;     /* the generators (made before they start; drv_free frees them) */
	uint32_t n_gen;
	uint32_t gens_live; /* generator threads still running (atomic) */
	int gen_done, stop; /* flags, release/acquire */
	uint32_t fail;      /* RUSK_ENOMEM once any thread ran out of memory (drv_fail) */
	uint64_t t0;
	uint64_t seed;
	/* --json, --csv, --groups-csv and --groups-png with its gnuplot script (outfile.h:
	 * temporary files beside their targets, renamed into place by drv_report once
	 * complete), opened by drv_setup before the run, indexed by DRV_OUT_*. csv and json are
	 * their FILEs (NULL: not given). */
	cli_out outs[DRV_OUTS];
	char groups_gp[4200]; /* the path of --groups-png's script: PNG.gp */
	FILE *csv;
	FILE *json;
	FILE *out; /* the summary: stdout, or /dev/null with --quiet */
	/* per-second sampler state */
	rusk_hist prev, *per_agent, *snap;
	double *medians;
	uint64_t prev_placed, prev_conf, max_tput, prev_q, prev_pref, prev_qmode;
	double util_sum;
	double util_acc; /* this second's utilization samples (drv_util_sample), summed */
	uint32_t util_n; /* and counted; drv_second averages and resets them */
	int secs;
	double elapsed_s;
	double wall_s; /* sim: wall time of the simulation */
	uint64_t events;
	/* sim: decisions made and the virtual time they cost (without view syncs) */
	uint64_t decisions;
	double dec_cost_ns;
	uint64_t stuck; /* tasks left queued that fit an idle cluster at the end (a check) */
	/* The run ended at its drain cap (the workload's length + drain_s) rather than with
	 * every task resolved: the report says so, with the tasks still queued. */
	bool drain_capped;
	double drain_s;
};

/* Flags of run and sim (run_opts.c). Returns 0 to go on, or an exit status (help printed:
 * -1). Refuses (RUSK_EXIT_USAGE, naming both flags) --json and --csv naming one file, or
 * either naming the trace. */
int drv_parse(int argc, char **argv, bool sim, cli_cluster *cc, run_cfg *cfg);
/* The agents' sync policy, strategy and knobs as the flags gave them (cli.h's builder),
 * with `seed`. */
cli_agents drv_cli_agents(const run_cfg *cfg, uint64_t seed);
/* Trace, outputs (--json and --csv opened here, before the run: a bad path costs nothing),
 * cluster, admission, task and lease pools; prints the header. 0 or exit status. */
int drv_setup(run *R, cli_cluster *cc);
/* Frees what drv_setup made; every thread of the run must have been joined. */
void drv_free(run *R);

/* The memory a run needs (memest.c: the model and its measurements). drv_task_cap: the
 * dispatcher's task slots, every task the run can make (the workload's expected tasks,
 * `expected`, x 1.1 + 1000; a trace's arrivals; twice that + 1024 with --sched).
 * drv_memory_available: the least of the machine's available memory and the limits
 * (ulimit -v, -d, a cgroup's memory.max), *why naming which. drv_memory_check: before the
 * cluster (of `machines` machines and `rus` RUs) is built, refuses a run of more than 2^32
 * task slots or one that needs more memory than is available, printing each part with the
 * flags that set it; 0 or RUSK_EXIT_USAGE. */
uint64_t drv_task_cap(const run *R, double *expected);
double drv_memory_available(const char **why);
int drv_memory_check(const run *R, const cli_cluster *cc, uint64_t machines, uint64_t rus,
                     const char *cmd);

/* A thread of the run ran out of memory doing `what`: prints it (first caller only), sets
 * R->fail and asks every thread to stop; the report's status is RUSK_EXIT_NOMEM. */
void drv_fail(run *R, const char *what);
/* Out of memory where nothing can be given back (an agent-local queue): prints `what` and
 * ends the process with RUSK_EXIT_NOMEM at once, without running exit handlers under the
 * other threads' feet. Never returns. */
_Noreturn void drv_oom_exit(const char *what);
uint32_t drv_group_size(const run_cfg *cfg, int k);
/* Agent `index`'s parameters from the flags (sync policy starting at R->t0). */
void drv_agent_params(const run *R, uint32_t index, rusk_agent_params *ap);

/* Statistics have one writer (their agent) and relaxed readers (the sampler). */
static inline void stat_add(uint64_t *p, uint64_t d)
{
	rusk_store64(p, rusk_load64(p, RUSK_RELAXED) + d, RUSK_RELAXED);
}

/* Generator `shard` of `shards` (1 for the whole workload): 0, or RUSK_EXIT_NOMEM after
 * saying so. drv_gen_free frees what it made. drv_gen_totals: the generators' counters
 * and the planner's, summed. */
int drv_gen_init(run *R, drv_gen *G, uint32_t shard, uint32_t shards);
void drv_gen_free(drv_gen *G);
void drv_gen_totals(const run *R, drv_gen_counts *out);
/* The next arrival in time order; false at the end of the workload. */
bool drv_gen_next(run *R, drv_gen *G, rusk_arrival *x, int *grp);
/* The spec of arrival x, submitted at submit_ns, and its agent; false when the run's pools
 * are full or the task is larger than the cluster (the caller counts it rejected). */
bool drv_gen_task(run *R, drv_gen *G, const rusk_arrival *x, int grp, uint64_t submit_ns,
                  rusk_dtask_spec *spec, run_agent **dest);

/* --mix: the shape a placed task had (its index in cfg->mix), -1 if none matches. */
int drv_mix_class(const run_cfg *cfg, uint32_t rus, uint8_t placement, bool gang);

/* The dispatcher of the run, its agents made from drv_agent_params (run: also started).
 * 0 or an exit status after printing why. */
int drv_dispatch(run *R, const char *cmd);

/* Vector resources (vecrep.c). drv_vec_models: the table the trace loader fills (NULL out
 * of memory). drv_vec_setup, after the cluster is built: resolves the trace's GPU models
 * (an unknown one: FILE:LINE, exit status) and keeps R->vec only if the run has vector
 * tasks. drv_vec_task (generator): the spec's demand, false when the kernel would refuse it
 * as infeasible (counted by dimension): its feature's setup and admit hooks. drv_vec_placed (PLACED
 * event, agent a's thread). Its second hook (sampler): this second's figures (idle: the last
 * ones again, nothing having been allocated or freed since). The rest write them. */
rusk_trace_models *drv_vec_models(run *R);
void drv_vec_placed(run *R, run_agent *a, const rusk_dtask_info *j);
void drv_vec_print(const run *R);
void drv_vec_json(FILE *f, const run *R);
uint64_t drv_vec_refused(const run *R);
void drv_vec_free(run *R);

/* Quasar in the scheduling loop (classify_run.c: its design note says what each mode does).
 * Its feature's setup (after the cluster): the generated workloads and the trained
 * model; R->cls stays NULL with --classify off. Its task hook (generator thread, registered
 * with RCU): task `id`'s workload, its placement profile (classified or true) and, with
 * --target on, its RUs, placement and planned run time. drv_cls_event (dispatcher events,
 * any thread): true-profile Q at PLACED (and with --target on the run time where it
 * landed: ev->run_ns), the shadow of true caused sums, feedback at DONE.
 * Its second hook (the sampler, a registered thread): retrains once enough rows came back.
 * drv_cls_print / drv_cls_json (report), drv_cls_free. */
enum { DRV_CLS_OFF = 0, DRV_CLS_ON = 1, DRV_CLS_ORACLE = 2, DRV_CLS_NONE = 3 };
void drv_cls_event(run *R, rusk_dispatch_event *ev);
void drv_cls_print(const run *R);
void drv_cls_json(FILE *f, const run *R);
void drv_cls_free(run *R);

/* 3Sigma in the scheduling loop (sched_run.c: its design note says what each step does).
 * With --sched, an arrival goes to the planner (drv_sched_arrival) instead of an agent;
 * every planning cycle (drv_sched_tick, when drv_sched_due says) starts the jobs it chose
 * through start() (the caller's submission to the agents; 0: refused) and stops preempted
 * or killed ones through stop() (ended now if running, cancelled if queued; `placed`: its
 * PLACED event was seen, so it is running or about to be, once its callback returns; one
 * whose PLACED is still to come is ended there, with run time 0);
 * drv_sched_event sees the dispatcher's events (PLACED, DONE, REJECTED) and feeds
 * completions to the planner and the predictor. Calls are serialised by the module's own
 * (recursive) mutex, so run's threads and sim's loop use it alike.
 * drv_sched_e2e: --trace e2e's arrivals, after the cluster is built (its RUs scale the
 * load); its feature's setup: the planner and predictor, once the time scale is known. */
typedef rusk_dtask_id (*drv_sched_start_fn)(run *R, rusk_dtask_spec *spec, uint32_t agent,
                                            uint64_t now, void *ctx);
typedef void (*drv_sched_stop_fn)(run *R, rusk_dtask_id j, bool placed, uint64_t now, void *ctx);
int drv_sched_e2e(run *R, rusk_arrival **out, size_t *n, char *err, size_t errlen);
void drv_sched_arrival(run *R, const rusk_arrival *x, rusk_dtask_spec *spec, uint32_t agent,
                       uint64_t now);
uint64_t drv_sched_tick_ns(const run *R);
void drv_sched_tick(run *R, uint64_t now, drv_sched_start_fn start, drv_sched_stop_fn stop,
                    void *ctx);
void drv_sched_event(run *R, rusk_dispatch_event *ev);
/* The run is over: completions from now on (the stop's ends) are not the jobs' own; what
 * still runs is unfinished. */
void drv_sched_close(run *R);
/* Jobs the planner still holds or runs (not yet done, dropped, killed or refused). */
uint64_t drv_sched_live(run *R);
/* Seconds the run may go on after the workload's end to resolve the planner's jobs. */
double drv_sched_drain_s(const run *R);
void drv_sched_print(run *R);
void drv_sched_json(FILE *f, run *R);
bool drv_sched_check(run *R, char *why, size_t len);
void drv_sched_free(run *R);

/* The predictor's estimates beside admission control's (admit_pred.c: its design note).
 * drv_apred_setup after the dispatcher's size is known; drv_apred_event: every dispatcher
 * event (any thread); print / json / ok / free: the report. */
void drv_apred_event(run *R, const rusk_dispatch_event *ev);
/* The run is over: the stop's ends of what still runs are not completions. */
void drv_apred_close(run *R);
void drv_apred_print(run *R);
void drv_apred_json(FILE *f, run *R);
bool drv_apred_ok(const run *R);
void drv_apred_free(run *R);

/*
 * Quota groups (groups_run.c, --groups-file): its feature's setup reads the file once the
 * cluster is built (errors name file:line; RUSK_EXIT_USAGE), resolves the trace's group
 * names against it (an unknown one names the trace's FILE:LINE) and writes the
 * --groups-csv header; its task hook gives a task its group (the trace's, else 1 + id mod
 * n); its params hook puts the groups in the dispatcher's parameters; its second hook
 * samples the groups' figures (the sampler) and, in rusk run, writes a --groups-csv row per
 * group. drv_grp_round: rusk sim, after each coordinator round at virtual time `now`, a
 * --groups-csv row per group (main thread). drv_grp_plot: after the outputs 0 ..
 * DRV_OUT_GROUPS_CSV are closed, draws --groups-png from the --groups-csv with gnuplot and
 * puts the chart and its script in place; 0, or RUSK_EXIT_FAIL after saying why (main
 * thread, no-op without --groups-png). drv_grp_ok: every round fair and no overshoot past
 * the bound (the run's checks).
 */
void drv_grp_round(run *R, uint64_t now);
int drv_grp_plot(run *R);
bool drv_grp_ok(const run *R);

/*
 * The master state on Redis Cluster (redis_run.c, --backend redis://...): its feature's setup
 * opens the state (writes it unless --no-init) and attaches the kernel's remote; drv_redis_ok
 * recounts it once after the run (main thread, every other thread joined): no free mark
 * disagreeing with an owner and no RU still held by this run's tasks; drv_redis_why says what
 * failed (the run's checks).
 */
bool drv_redis_ok(const run *R);
const char *drv_redis_why(const run *R);
/* drv_redis_left_held: after drv_redis_ok, whether RUs of this run's tasks may be left held
 * on Redis (the recount could not read every partition, or found some): its run lease is
 * left to lapse, so that the automatic reclaim of the live processes frees them. */
bool drv_redis_left_held(const run *R);
/* drv_redis_corrupt: whether the run stopped at a damaged key of the state (exit 2). */
bool drv_redis_corrupt(const run *R);
/* drv_redis_gone: whether the run stopped at a partition's state gone since the start, lost
 * by the cluster (exit 1, as the start's check). */
bool drv_redis_gone(const run *R);
/* Tasks the ledger revoked after the dispatcher was closed (the generator done): they could
 * not be queued again and ended REJECTED (RUSK_ESTOPPED) on the main thread; the report
 * counts them rejected. 0 without --backend redis. Any thread (relaxed). */
uint64_t drv_redis_rejected(const run *R);

/* The per-second series and the summary: report.c. */
#include "report.h"

#endif
