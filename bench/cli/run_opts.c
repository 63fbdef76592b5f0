/* SPDX-License-Identifier: MIT */
/*
 * The flags of `rusk run` and `rusk sim` (drv_parse, driver.h): one cli_parse table, the
 * rules between flags (the run's shape, load groups, the sync policy, distinct output
 * files) and the usage text. Every message names the flag; every refusal exits 2.
 */
#include <stdlib.h>
#include <string.h>

#include <rusk/plan.h>

#include "runstate.h"

#define MAX_PHASES DRV_MAX_PHASES
#define MAX_GROUPS DRV_MAX_GROUPS

/* A comma-separated list of 1..MAX_PHASES loads in % of the base rate (0..1000), decimal
 * numbers: an empty item ("50,,80", a trailing comma) is an error, not skipped. */
static int parse_phases(const char *v, run_cfg *cfg)
{
	cfg->n_phases = 0;
	for (const char *p = v;;) {
		size_t len = strcspn(p, ",");
		char tok[32], *end;
		if (len == 0 || len >= sizeof tok || cfg->n_phases == MAX_PHASES)
			return -1;
		memcpy(tok, p, len);
		tok[len] = '\0';
		if (tok[0] == '-' || !cli_plain_number(tok, true))
			return -1; /* strtod would take " 50", "+50", "0x10", "-0" */
		double x = strtod(tok, &end);
		if (*end != '\0' || !(x >= 0 && x <= 1000))
			return -1;
		cfg->phases[cfg->n_phases++] = x;
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* --phases: the run's phase list. */
static int opt_phases(const char *flag, const char *v, void *out)
{
	(void)flag;
	((run_cfg *)out)->phases_given = true;
	if (v == NULL || parse_phases(v, out) != 0) {
		fprintf(stderr,
		        "rusk: --phases: '%s' is not a list of 1..%d loads in %% "
		        "(e.g. 50,80,95,80,50)\n",
		        v ? v : "", MAX_PHASES);
		return -1;
	}
	return 0;
}

/* --mix: SHAPE@SHARE,... with SHAPE = RUS[:machine|rack|spread|any][:gang|incremental]. */
/* --backend (issue 30): "memory" (this process's own array, the default) or
 * redis://HOST:PORT[,HOST:PORT...] (Redis Cluster, redis_run.c); the address is checked when
 * the state is opened (drv_setup's features), rusk sim's refusal in drv_parse. */
static int opt_backend(const char *flag, const char *v, void *out)
{
	run_cfg *cfg = out;
	if (v == NULL) { /* cli_parse refuses a missing value first; kept for other callers */
		fprintf(stderr, "rusk: %s: needs a value\n", flag);
		return -1;
	}
	if (strcmp(v, "memory") == 0) {
		cfg->backend = NULL;
		return 0;
	}
	if (strncmp(v, "redis://", 8) == 0) {
		cfg->backend = v;
		return 0;
	}
	fprintf(stderr,
	        "rusk: %s '%s' is neither 'memory' nor redis://HOST:PORT[,HOST:PORT...] "
	        "(docs/redis.md)\n",
	        flag, v);
	return -1;
}

static int opt_mix(const char *flag, const char *v, void *out)
{
	run_cfg *cfg = out;
	static const char *kinds[] = {"any", "machine", "rack", "spread"};
	char buf[512];
	snprintf(buf, sizeof buf, "%s", v ? v : "");
	int n = 0;
	double sum = 0;
	bool ok = v != NULL && strlen(v) < sizeof buf;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); ok && tok; tok = strtok_r(NULL, ",", &save)) {
		char *at = strchr(tok, '@');
		if (n == DRV_MAX_MIX || at == NULL) {
			ok = false;
			break;
		}
		*at = 0;
		char *end;
		/* plain numbers only: strtod and strtoul take " 1", "+1", "0x1p0" */
		double share = cli_plain_number(at + 1, true) ? strtod(at + 1, &end) : 0;
		drv_mix m = {.share = share};
		ok = share > 0 && share <= 1;
		char *save2 = NULL, *part = strtok_r(tok, ":", &save2);
		unsigned long rus =
		        part && cli_plain_number(part, false) ? strtoul(part, &end, 10) : 0;
		ok = ok && rus >= 1 && rus <= RUSK_MAX_RUS_PER_MACHINE;
		m.rus = (uint32_t)rus;
		while (ok && (part = strtok_r(NULL, ":", &save2)) != NULL) {
			bool known = false;
			for (int k = 0; k < 4; k++)
				if (strcmp(part, kinds[k]) == 0)
					m.placement = (uint8_t)k, known = true;
			if (strcmp(part, "gang") == 0)
				m.commit = RUSK_COMMIT_GANG, known = true;
			if (strcmp(part, "incremental") == 0)
				m.commit = RUSK_COMMIT_INCREMENTAL, known = true;
			ok = known;
		}
		sum += share;
		cfg->mix[n++] = m;
	}
	if (!ok || n == 0 || sum < 0.999 || sum > 1.001) {
		fprintf(stderr,
		        "rusk: %s: '%s' is not a list of RUS[:machine|rack|spread|any]"
		        "[:gang|incremental]@SHARE (at most %d, shares adding up to 1; e.g. "
		        "1@0.98,48:machine@0.02)\n",
		        flag, v ? v : "", DRV_MAX_MIX);
		return -1;
	}
	cfg->n_mix = n;
	return 0;
}

/* --groups: 2..MAX_GROUPS phase lists separated by ';', one per load group. */
static int opt_groups(const char *flag, const char *v, void *out)
{
	(void)flag;
	run_cfg *cfg = out;
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", v ? v : "");
	int ng = 0;
	bool ok = v != NULL;
	char *save = NULL;
	for (char *tok = strtok_r(buf, ";", &save); ok && tok; tok = strtok_r(NULL, ";", &save)) {
		run_cfg tmp;
		if (ng == MAX_GROUPS || parse_phases(tok, &tmp) != 0) {
			ok = false;
			break;
		}
		memcpy(cfg->gphases[ng], tmp.phases, sizeof tmp.phases);
		cfg->gn_phases[ng++] = tmp.n_phases;
	}
	if (!ok || ng < 2) {
		fprintf(stderr,
		        "rusk: --groups: '%s' is not 2..%d phase lists separated by ';' (e.g. "
		        "'67,100,100;67,67,100')\n",
		        v ? v : "", MAX_GROUPS);
		return -1;
	}
	cfg->n_groups = ng;
	return 0;
}

/* --trace: a file, or openb for the public pod list (resolved by drv_setup). */
static int opt_trace(const char *flag, const char *v, void *out)
{
	(void)flag;
	if (v == NULL) {
		fprintf(stderr, "rusk: --trace: needs a file (or openb, or e2e)\n");
		return -1;
	}
	*(const char **)out = v;
	return 0;
}

/* --json and --csv against each other and against the inputs (outfile.h's rule, checked
 * again when drv_setup opens them): a clash is refused now, before any set-up work. */
static int check_outputs(const run_cfg *cfg, const cli_cluster *cc)
{
	bool file = cfg->trace != NULL && strcmp(cfg->trace, "openb") != 0 &&
	            strcmp(cfg->trace, "e2e") != 0;
	const cli_in ins[] = {{"--trace", file ? cfg->trace : NULL}, {"--cluster", cc->openb_path}};
	char gp[4200];
	snprintf(gp, sizeof gp, "%s.gp", cfg->groups_png != NULL ? cfg->groups_png : "");
	const cli_out outs[] = {{.flag = "--json", .path = cfg->json},
	                        {.flag = "--csv", .path = cfg->csv},
	                        {.flag = "--groups-csv", .path = cfg->groups_csv},
	                        {.flag = "--groups-png", .path = cfg->groups_png, .external = true},
	                        {.flag = "--groups-png (its gnuplot script)",
	                         .path = cfg->groups_png != NULL ? gp : NULL}};
	return cli_files_check(ins, 2, outs, sizeof outs / sizeof *outs);
}

/* The quota groups' flags that need --groups-file, and --groups-png its --groups-csv. */
static int check_groups(const run_cfg *cfg)
{
	const char *flag = cfg->groups_csv != NULL   ? "--groups-csv"
	                   : cfg->groups_png != NULL ? "--groups-png"
	                   : cfg->openb_groups != 0  ? "--openb-groups"
	                                             : NULL;
	if (cfg->groups_file == NULL && flag != NULL) {
		fprintf(stderr, "rusk: %s: needs --groups-file (the quota groups)\n", flag);
		return -1;
	}
	if (cfg->groups_png != NULL && cfg->groups_csv == NULL) {
		fprintf(stderr,
		        "rusk: --groups-png: needs --groups-csv (the chart draws its rows)\n");
		return -1;
	}
	return 0;
}

/* The sync policy with --agents and --partitions (ParSync §5.1: P >= N for diff). */
static int check_sync(const run_cfg *cfg, uint32_t partitions)
{
	char err[256];
	const cli_agents ca = drv_cli_agents(cfg, 0);
	if (cli_sync_check(&ca, partitions, err, sizeof err) == RUSK_OK)
		return 0;
	fprintf(stderr, "rusk: --sync %s --agents %u --partitions %u: %s\n",
	        rusk_sync_policy_name(cfg->sync), cfg->agents, partitions, err);
	return -1;
}

/* --classify and --target (classify_run.c) with the flags they need. */
static int check_classify(const run_cfg *cfg)
{
	if (cfg->classify != DRV_CLS_OFF && cfg->quality != RUSK_QUALITY_INTERFERENCE) {
		fprintf(stderr,
		        "rusk: --classify %s needs --quality interference (the profiles "
		        "it classifies are Tarcil's)\n",
		        cfg->classify == DRV_CLS_ON       ? "on"
		        : cfg->classify == DRV_CLS_ORACLE ? "oracle"
		                                          : "none");
		return -1;
	}
	if (cfg->target && (cfg->classify == DRV_CLS_OFF || cfg->classify == DRV_CLS_NONE)) {
		fprintf(stderr, "rusk: --target on needs --classify on (sizes from classified "
		                "rows) or --classify oracle (from the true rows)\n");
		return -1;
	}
	return 0;
}

/* --sched: its workload and what it does not combine with. */
static int check_sched(const run_cfg *cfg, const char *sched_only, const char *e2e_only)
{
	bool e2e = cfg->trace != NULL && strcmp(cfg->trace, "e2e") == 0;
	if (sched_only != NULL && cfg->sched < 0) {
		fprintf(stderr, "rusk: %s needs --sched (it sets the planner or its jobs)\n",
		        sched_only);
		return -1;
	}
	if (e2e_only != NULL && !e2e) {
		fprintf(stderr, "rusk: %s needs --trace e2e\n", e2e_only);
		return -1;
	}
	if (e2e && cfg->rate_set) {
		fprintf(stderr, "rusk: --rate does not apply to --trace e2e (its load is "
		                "--offered-load; shifted copies would multiply it)\n");
		return -1;
	}
	if (cfg->sched >= 0 && cfg->admit_predict) {
		fprintf(stderr,
		        "rusk: --admit-predict does not combine with --sched (the "
		        "planner's stopped tasks would teach it runtimes they never had)\n");
		return -1;
	}
	if (e2e && cfg->sched < 0) {
		fprintf(stderr, "rusk: --trace e2e needs --sched (it is 3Sigma's workload; "
		                "--sched fifo runs it in arrival order)\n");
		return -1;
	}
	if (cfg->admit_predict && (!cfg->admission || cfg->quality != RUSK_QUALITY_SCORE)) {
		fprintf(stderr,
		        "rusk: --admit-predict on needs --admission on with --quality score "
		        "(its waits are scored against frees anywhere in the cluster, the "
		        "matching set only when every bucket matches)\n");
		return -1;
	}
	if (cfg->sched >= 0 && (cfg->classify != DRV_CLS_OFF || cfg->priority_share > 0)) {
		fprintf(stderr,
		        "rusk: --sched does not combine with %s (the planner decides "
		        "what starts; a task it did not start must not run)\n",
		        cfg->classify != DRV_CLS_OFF ? "--classify" : "--priority-share");
		return -1;
	}
	return 0;
}

/* The flags both commands take, then the cluster options. */
static void usage_flags(void)
{
	puts("  --agents N            agent threads (default 2; rusk sim: 20, ParSync §6.1's\n"
	     "                        schedulers, at most --partitions with diff sync)\n"
	     "  --sync diff|same|state  sync policy (default diff)\n"
	     "  --gap-ms G            sync gap (default 500)\n"
	     "  --strategy NAME       latency|quality|adaptive|random|central (default latency)\n"
	     "  --tau-ms T            Adaptive threshold (default 1000)\n"
	     "  --sample auto|R       candidates per RU (default auto)\n"
	     "  --rate TASKS_PER_S    base arrival rate (default 40000)\n"
	     "  --phases P1,P2,...    phase loads in % of the base rate (default 50,80,95,80,50)\n"
	     "  --phase-s S           seconds per phase (default 10)\n"
	     "  --duration-s S        one phase at 100% of --rate for S seconds instead (not\n"
	     "                        with --phases, --phase-s or --groups: refused)\n"
	     "  --groups 'P;P[;..]'   load groups (ParSync §5.2 Fig. 4): agent i is in group\n"
	     "                        i mod G; each group gets its agents' share of --rate\n"
	     "                        shaped by its own phase list\n"
	     "  --task-ms MEAN        mean task duration (default 5000)\n"
	     "  --task-dist exp|lognormal|fixed  duration distribution (default fixed)\n"
	     "  --generators G        generator threads, each the open-loop source of the\n"
	     "                        agents i with i mod G = g at their share of the rate\n"
	     "                        (rusk run; default 1)\n"
	     "  --task-rus M          RUs per task (default 1)\n"
	     "  --mix SHAPE@SHARE,..  task shapes by share instead: SHAPE is RUS[:machine|\n"
	     "                        rack|spread|any][:gang|incremental], e.g.\n"
	     "                        1@0.98,48:machine@0.02; the summary and JSON give each\n"
	     "                        shape's scheduling delay\n"
	     "  --trace FILE|openb    replay a trace instead: an Alibaba openb pod list (openb:\n"
	     "                        RUSK_TRACE_DIR/openb/openb_pod_list_default.csv) or a\n"
	     "                        CSV 'arrival_s,duration_s,rus[,priority,mem_mib,...]'\n"
	     "  --trace-format openb|csv  (default: openb for the bundled list, else csv)\n"
	     "  --time-scale X        divide trace times by X (default: fit the trace to\n"
	     "                        --duration-s or the phases' length); with --rate, shifted\n"
	     "                        replicas are added to reach that rate\n"
	     "  --batch B             tasks an agent takes per round (default 100, ParSync §4.3)\n"
	     "  --spin-us S           an idle agent polls its queue S us before it parks until\n"
	     "                        the next submission wakes it (default 2; rusk run only)\n"
	     "  --quality score|interference|packing|fgd  placement quality model (default\n"
	     "                        score: slot scores; interference: Tarcil Q, tasks get\n"
	     "                        random profiles; packing: a vector task's machine by least\n"
	     "                        GPU fragmentation and best fit of what it leaves; fgd: by\n"
	     "                        the least rise of the GPU capacity the workload's GPU\n"
	     "                        tasks could not use, after FGD)\n"
	     "  --resources vec|rus   a trace's memory and GPUs (openb; csv mem_mib, gpus,\n"
	     "                        gpu_milli, gpu_models): vec, the default, commits them\n"
	     "                        with the RUs, one machine per task; rus: RUs only\n"
	     "  --preferred K         each task prefers K random machines (ParSync §6 quality =\n"
	     "                        share of tasks placed on preferred machines; default 0)\n"
	     "  --latency-preferred on|off  Latency-first looks up preferred machines in the\n"
	     "                        freshest partition holding one free (default on); off:\n"
	     "                        ParSync's Latency-first, which ignores preferences\n"
	     "  --admission on|off    Tarcil §4 admission control: LSH buckets of contention\n"
	     "                        vectors; a task waits (at most mu + 2 sigma of the\n"
	     "                        time-until-free) while few matching RUs are free\n"
	     "                        (default off)\n"
	     "  --buckets N           LSH buckets (default 20)\n"
	     "  --priority-share F    share of tasks with high priority, 0..1: they bypass\n"
	     "                        queued tasks and admission and may preempt normal ones\n"
	     "                        (default 0; traces carry their own priorities)\n"
	     "  --alpha A             ParSync Table 1: a task placed on its preferred machines\n"
	     "                        runs A x its duration (with --preferred; default off)\n"
	     "  --reserve-syncs N     a multi-RU task that found no room at N of its agent's\n"
	     "                        view syncs becomes the agent's reservation, holding the\n"
	     "                        RUs it wins until it has all (default 2; 0: never)\n"
	     "  --gang                multi-RU tasks all-or-nothing (default: incremental, a\n"
	     "                        task keeps what it won and waits for the rest)\n"
	     "  --global-lock         baseline: rusk's sampling, every commit and release under\n"
	     "                        one mutex (real time only: rusk sim runs one thread)\n"
	     "  --classify off|on|oracle|none  Quasar §3.2 with --quality interference: tasks\n"
	     "                        are workloads of a seeded generator; on: each is profiled\n"
	     "                        (2 noisy entries per classification) and its caused\n"
	     "                        interference classified by a model trained at setup;\n"
	     "                        oracle: the same tasks placed by their true profiles;\n"
	     "                        none: placed with zero profiles. With any of them a\n"
	     "                        task runs its duration times its slowdown where it\n"
	     "                        lands, from its co-runners' true profiles. The summary\n"
	     "                        adds Q under the true profiles, that slowdown, the\n"
	     "                        classification time and error, feedback (default: on\n"
	     "                        with --quality interference and no --sched, else off;\n"
	     "                        off: profiles seen exactly, run times fixed)\n"
	     "  --cls-feedback observed|full  with --classify on: at completion a task feeds\n"
	     "                        back its measured caused intensities and, with --target\n"
	     "                        on, the scale-up, scale-out and heterogeneity entries of\n"
	     "                        the allocation it ran at (observed, default), or its\n"
	     "                        whole rows (full: exhaustive profiling)\n"
	     "  --target on|off       with --classify: a task states a completion time (trace\n"
	     "                        column target_s, else duration x U(0.5, 1.5)) and its\n"
	     "                        RUs (on one machine also its memory) come from Quasar\n"
	     "                        §3.3 sizing, placed on the allocation's machines\n"
	     "                        (default off)\n"
	     "  --sched M             3Sigma (§3-4) in front of the agents: off (default),\n"
	     "                        3sigma, point-real, point-perfect, prio or fifo. Arrivals\n"
	     "                        go to a deadline-aware planner fed runtime distributions\n"
	     "                        learned online; each cycle it starts jobs (the agents\n"
	     "                        place them), preempts BE jobs and drops SLO jobs that\n"
	     "                        can no longer make their deadline. The summary and JSON\n"
	     "                        add SLO miss rate, goodput and BE latency\n"
	     "  --trace e2e           3Sigma's E2E-like workload, generated (with --sched)\n"
	     "  --e2e-jobs N          its jobs in the run (default 600); --e2e-train N: jobs\n"
	     "                        that pre-train the predictor first (default 3000)\n"
	     "  --offered-load L      e2e submissions scaled to L x the cluster's RUs (1.4)\n"
	     "  --slack P|mix         deadline slack of SLO jobs without a trace deadline_s, in\n"
	     "                        percent, or drawn from 20/40/60/80 (mix, default)\n"
	     "  --slo-share F         share of tasks without a deadline made SLO jobs: the\n"
	     "                        generator's (default 0.5), a CSV trace's (default 0:\n"
	     "                        best effort), e2e's jobs (default 0.5)\n"
	     "  --plan-slot-s S       plan-ahead slot in trace seconds (default 60; the\n"
	     "                        generator: 2 x --task-ms); --plan-tick-s T: planning\n"
	     "                        cycle (default 10; the generator: a twentieth of the slot)\n"
	     "  --plan-budget-ms B    the MILP's time budget per cycle (default 100): wall\n"
	     "                        time in rusk run; in rusk sim modelled solver time (a\n"
	     "                        cost per simplex iteration and branch-and-cut node), so\n"
	     "                        a seed gives the same bytes on any machine\n"
	     "  --drain-s S           run on after the workload to resolve the planner's jobs\n"
	     "                        (trace seconds; default 14400; the generator: 30)\n"
	     "  --backend memory|redis://HOST:PORT[,HOST:PORT...]  where the master state is:\n"
	     "                        this process's own array (default), or a Redis Cluster\n"
	     "                        that `rusk agent --backend` processes may share (rusk run\n"
	     "                        only; docs/redis.md): views sync from it, commits and\n"
	     "                        releases go there, one connection per thread\n"
	     "  --no-init             with --backend redis://: join the state there (written by\n"
	     "                        `rusk agent --init-only`) instead of writing the empty\n"
	     "                        state (which is refused while live `rusk agent`s or other\n"
	     "                        runs use it)\n"
	     "  --force-init          with --backend redis://: write the empty state even under\n"
	     "                        live agents and runs (the agents notice and stop)\n"
	     "  --no-auto-reclaim     with --backend redis://: do not release dead processes'\n"
	     "                        RUs (by default, once a second and after the run, the\n"
	     "                        RUs of every `rusk agent` whose lease expired and of\n"
	     "                        every run whose run lease expired are released:\n"
	     "                        \"reclaimed_expired\" in the JSON)\n"
	     "  --commit-batch B      with --backend redis://: an agent decides up to B queued\n"
	     "                        tasks on its view, then commits them together (one\n"
	     "                        round trip per partition), and sends its releases once\n"
	     "                        per loop turn (default 32; 1: each task and release on\n"
	     "                        its own)\n"
	     "  --wait N              with --backend redis://: end each commit and release\n"
	     "                        pipeline (one per partition per batch) with WAIT N: the\n"
	     "                        shard's master answers once N replicas have the writes\n"
	     "                        (fewer commits lost on a failover, at a round trip's\n"
	     "                        cost; default none: asynchronous replication)\n"
	     "  --wait-ms MS          with --wait: WAIT's timeout (default 100; a WAIT that\n"
	     "                        times out is counted, the commit stands)\n"
	     "  --unavailable-ms MS   with --backend redis://: a master that does not answer\n"
	     "                        within MS (or cannot be reached) while others do is\n"
	     "                        marked unavailable: its partitions are skipped, the\n"
	     "                        releases there put off and sent again once it answers\n"
	     "                        (default 1000; 0: wait out every outage)\n"
	     "  --admit-predict on|off  with --admission on (score model): at each task's first\n"
	     "                        admission wait, also estimate when its missing RUs free\n"
	     "                        up from the running tasks' remaining-runtime\n"
	     "                        distributions (3Sigma's predictor, learned from the\n"
	     "                        run's completions); the summary scores both estimates\n"
	     "                        against the frees observed (default off)\n"
	     "  --groups-file FILE    quota groups (docs/groups.md): one a line,\n"
	     "                        NAME WEIGHT [min:DIM=N] [max:DIM=N] ..., DIM rus, mem\n"
	     "                        (MiB) or gpu (milli-GPUs); task i is in group 1 + i mod n;\n"
	     "                        the coordinator divides the cluster by weighted DRF\n"
	     "  --quota-period-ms P   the quota coordinator's period (default 10)\n"
	     "  --openb-groups qos|gpu-model  with --trace openb: a pod's group is its qos\n"
	     "                        class (LS, Guaranteed, BE, Burstable) or GPU model (the\n"
	     "                        first of gpu_spec; gpu: any model; cpu: no GPU); default:\n"
	     "                        task i in group 1 + i mod n (a csv trace: its group column)\n"
	     "  --groups-csv FILE     the groups' demand, allocation, allowance, usage and delay\n"
	     "                        over time: a row per group each second (rusk run) or\n"
	     "                        each coordinator round (rusk sim)\n"
	     "  --groups-png FILE     those series drawn by gnuplot (needs --groups-csv;\n"
	     "                        FILE.gp: the script)\n"
	     "  --quiet               no summary on stdout (--json / --csv still written)\n"
	     "  --json FILE           write the summary as JSON\n"
	     "  --csv FILE            write the per-second series as CSV\n"
	     "\n"
	     "SIGINT, SIGTERM or SIGHUP stops the run; --json, --csv and the summary cover the\n"
	     "part that ran (a stop signal again within 2 s is ignored; a later one ends rusk\n"
	     "at once, after the files if they are being written). A task needing more RUs\n"
	     "than the cluster has is rejected at arrival, with its reason in the summary and\n"
	     "JSON. Outputs are written beside their targets and renamed into place when\n"
	     "complete; one that names an input is refused. The memory the run needs is stated\n"
	     "and checked before it is allocated.\n"
	     "Exit status: 0 ok, 1 a check failed or an output could not be written, 2 bad\n"
	     "usage or input (outputs are opened, and memory checked, before the run), 3\n"
	     "interrupted, 4 out of memory or threads.\n");
	cli_cluster_usage();
}

static void run_usage(void)
{
	puts("usage: rusk run [options]\n"
	     "\n"
	     "Real-time run: an open-loop generator, N agent threads placing tasks with "
	     "their\n"
	     "strategy on their local views, a completer releasing RUs when tasks end. "
	     "Default:\n"
	     "ParSync §6.1's shape: 100,000 machines x 2 RUs (200K slots), 40,000 tasks/s "
	     "base\n"
	     "rate, five 10 s phases at 50,80,95,80,50%, 5 s tasks.\n");
	usage_flags();
}

static void sim_usage(void)
{
	puts("usage: rusk sim [options]\n"
	     "\n"
	     "Virtual time: the same kernel, flags and metrics as rusk run, but agents "
	     "are\n"
	     "simulated actors on a discrete-event clock. An agent spends what each "
	     "decision's\n"
	     "work costs (--cost) and --sync-latency-us per partition sync; its commit "
	     "reaches the "
	     "master\n"
	     "array --commit-latency-us later, so commits of different agents interleave "
	     "in\n"
	     "event-time order and lose real CASes. Same flags and seed: identical --json "
	     "and\n"
	     "--csv bytes (--classify on: but for the wall-clock classification time_us).\n"
	     "\n"
	     "  --cost work|flat      what a decision costs in virtual time. work (default):\n"
	     "                        its work, at the real kernel's measured cost per RU\n"
	     "                        examined, per partition scanned and per commit attempt\n"
	     "                        (bench/bench_cost.c), scaled so that a Latency-first\n"
	     "                        decision examining 32 RUs in one partition costs\n"
	     "                        --decision-us: Quality-first, ranking every partition\n"
	     "                        and rejecting weighted draws, costs more. flat: every\n"
	     "                        decision costs --decision-us (central: always flat)\n"
	     "  --decision-us D       per-task decision time of an agent (default 250; 0 "
	     "is\n"
	     "                        allowed: a task that finds no room is tried again "
	     "at\n"
	     "                        the agent's next view sync (central: after a "
	     "release\n"
	     "                        or a backoff of max(D, 1 us) doubling up to one "
	     "sync\n"
	     "                        step), never at the same virtual instant)\n"
	     "  --sync-latency-us S   agent time per partition sync (default 0)\n"
	     "  --commit-latency-us C decision end -> commit at the master (default 0)\n"
	     "\n"
	     "Flags of rusk run:");
	usage_flags();
}

/* The run's shape from --duration-s, --phases, --phase-s and --groups (`shape`: the last of
 * the three given, NULL if none): one phase at 100% for --duration-s, else the phases; each
 * load group's phase list (one group: the run's). Returns 0, or -1 after the error. */
static int apply_shape(run_cfg *cfg, const char *shape)
{
	if (cfg->duration_s > 0 && shape != NULL) {
		/* Both set the run's shape; neither may silently win. */
		fprintf(stderr,
		        "rusk: --duration-s and %s cannot be combined: --duration-s S is one phase "
		        "of S seconds at 100%% of --rate; for phases, give --phases and --phase-s "
		        "(seconds per phase)\n",
		        shape);
		return -1;
	}
	if (cfg->duration_s > 0) {
		cfg->n_phases = 1;
		cfg->phases[0] = 100;
		cfg->phase_s = cfg->duration_s;
	}
	if (cfg->n_groups == 0) {
		cfg->n_groups = 1;
		memcpy(cfg->gphases[0], cfg->phases, sizeof cfg->phases);
		cfg->gn_phases[0] = cfg->n_phases;
		return 0;
	}
	if ((uint32_t)cfg->n_groups > cfg->agents) {
		fprintf(stderr, "rusk: --groups: %d groups need at least %d agents (--agents %u)\n",
		        cfg->n_groups, cfg->n_groups, cfg->agents);
		return -1;
	}
	if (cfg->trace != NULL) {
		fprintf(stderr, "rusk: --groups and --trace cannot be combined\n");
		return -1;
	}
	/* The run lasts as long as the longest group; phases/JSON report group 0's. */
	cfg->n_phases = 0;
	for (int k = 0; k < cfg->n_groups; k++)
		if (cfg->gn_phases[k] > cfg->n_phases)
			cfg->n_phases = cfg->gn_phases[k];
	memcpy(cfg->phases, cfg->gphases[0], sizeof cfg->phases);
	return 0;
}

cli_agents drv_cli_agents(const run_cfg *cfg, uint64_t seed)
{
	return (cli_agents){.sync = cfg->sync,
	                    .agents = cfg->agents,
	                    .gap_ms = cfg->gap_ms,
	                    .strategy = cfg->strategy,
	                    .sample = cfg->sample,
	                    .tau_ms = cfg->tau_ms,
	                    .global_lock = cfg->global_lock,
	                    .seed = seed};
}

/* Defaults: ParSync §6.1's shape (see the usage text). */
static void cfg_defaults(run_cfg *cfg, bool sim)
{
	*cfg = (run_cfg){.agents = sim ? 20 : 2,
	                 .batch = 100,
	                 .commit_batch = 32,
	                 .wait_ms = 100,
	                 .unavail_ms = 1000,
	                 .spin_us = 2,
	                 .task_rus = 1,
	                 .reserve_syncs = 2,
	                 .quota_period_ms = 10,
	                 .rate = 40000,
	                 .phase_s = 10,
	                 .task_ms = 5000,
	                 .dist = 2,
	                 .sync = RUSK_SYNC_DIFF,
	                 .gap_ms = RUSK_SYNC_DEFAULT_GAP_NS / 1000000,
	                 .tau_ms = 1000,
	                 .strategy = RUSK_STRATEGY_LATENCY,
	                 .trace_format = -1,
	                 .buckets = 20,
	                 .sim = sim,
	                 .decision_us = 250, /* ParSync §6: 0.25 ms per task */
	                 .sync_latency_us = 0,
	                 .commit_latency_us = 0,
	                 .max_retries = 8,
	                 .sched = -1,
	                 .e2e_jobs = 600,
	                 .e2e_train = 3000,
	                 .slack = -1,
	                 .slo_share = -1,
	                 .offered_load = 1.4,
	                 .plan_budget_ms = 100,
	                 .drain_s = -1};
	parse_phases("50,80,95,80,50", cfg);
}

static const cli_choice trace_formats[] = {
        {"openb", RUSK_TRACE_OPENB}, {"csv", RUSK_TRACE_CSV}, {NULL, 0}};
static const cli_choice qualities[] = {{"score", RUSK_QUALITY_SCORE},
                                       {"interference", RUSK_QUALITY_INTERFERENCE},
                                       {"packing", RUSK_QUALITY_PACKING},
                                       {"fgd", RUSK_QUALITY_FGD},
                                       {NULL, 0}};
static const cli_choice resources[] = {{"vec", 0}, {"rus", 1}, {NULL, 0}};
static const cli_choice classify_modes[] = {{"off", DRV_CLS_OFF},
                                            {"on", DRV_CLS_ON},
                                            {"oracle", DRV_CLS_ORACLE},
                                            {"none", DRV_CLS_NONE},
                                            {NULL, 0}};
static const cli_choice cls_feedbacks[] = {{"observed", 0}, {"full", 1}, {NULL, 0}};
static const cli_choice sched_modes[] = {{"off", -1},
                                         {"3sigma", RUSK_PLAN_3SIGMA},
                                         {"point-real", RUSK_PLAN_POINT_REAL},
                                         {"point-perfect", RUSK_PLAN_POINT_PERFECT},
                                         {"prio", RUSK_PLAN_PRIO},
                                         {"fifo", RUSK_PLAN_FIFO},
                                         {NULL, 0}};
static const cli_choice dists[] = {{"exp", 0}, {"lognormal", 1}, {"fixed", 2}, {NULL, 0}};
static const cli_choice costs[] = {{"work", 0}, {"flat", 1}, {NULL, 0}};
static const cli_choice openb_groupings[] = {
        {"qos", RUSK_TRACE_GROUPS_QOS}, {"gpu-model", RUSK_TRACE_GROUPS_GPU_MODEL}, {NULL, 0}};

/* --backend redis://: what a remote master state does not run (remote.h): virtual time (one
 * process, its own clock), the baselines that serialise on this process's lock. */
static int check_backend(const run_cfg *cfg)
{
	if (cfg->backend != NULL && cfg->sim) {
		fprintf(stderr,
		        "rusk: --backend %s: rusk sim runs in virtual time in one process and "
		        "keeps "
		        "the master state in it (memory); a state on Redis Cluster is for `rusk "
		        "run "
		        "--backend` and `rusk agent --backend` (docs/redis.md)\n",
		        cfg->backend);
		return -1;
	}
	const char *why = cfg->backend == NULL                     ? NULL
	                  : cfg->strategy == RUSK_STRATEGY_CENTRAL ? "--strategy central"
	                  : cfg->global_lock                       ? "--global-lock"
	                                                           : NULL;
	if (why != NULL) {
		fprintf(stderr,
		        "rusk: --backend %s: not with %s (a baseline that serialises on this "
		        "process's lock; use --backend memory)\n",
		        cfg->backend, why);
		return -1;
	}
	if ((cfg->no_init || cfg->force_init || cfg->no_auto_reclaim) && cfg->backend == NULL) {
		fprintf(stderr, "rusk: %s: only with --backend redis://...\n",
		        cfg->no_init      ? "--no-init"
		        : cfg->force_init ? "--force-init"
		                          : "--no-auto-reclaim");
		return -1;
	}
	if (cfg->no_init && cfg->force_init) {
		fprintf(stderr, "rusk: --force-init: not with --no-init (one writes the state, the "
		                "other joins it)\n");
		return -1;
	}
	return 0;
}

int drv_parse(int argc, char **argv, bool sim, cli_cluster *cc, run_cfg *out)
{
	cli_cluster_init(cc);
	cc->params.rus_per_machine = 2; /* 200K slots, as ParSync's evaluation */
	run_cfg cfg;
	cfg_defaults(&cfg, sim);
	const char *shape = NULL, *rate = NULL, *sched_only = NULL, *e2e_only = NULL;
	const char *task_rus = NULL, *mix = NULL, *generators = NULL, *agents = NULL;
	const char *classify = NULL, *commit_batch = NULL, *wait = NULL, *wait_ms = NULL;
	const char *unavail = NULL;
	int quality = cfg.quality, rus_only = 0, fb_full = 0, cost_flat = 0;
	bool latency_pref = !cfg.latency_ignores_pref;
	cli_choice_sync sync = {&cfg.sync, NULL};
	cli_choice_strategy strategy = {&cfg.strategy, NULL};
	const cli_opt opts[] = {
	        {CLI_U32_OPT("--agents", 1, 1024, &cfg.agents), .given = &agents},
	        {CLI_U32_OPT("--generators", 1, DRV_MAX_GENERATORS, &cfg.generators),
	         .given = &generators},
	        {CLI_U32_OPT("--batch", 1, DRV_RING_SIZE / 2, &cfg.batch)},
	        {CLI_DOUBLE_OPT("--spin-us", 0, 1e6, &cfg.spin_us)},
	        {CLI_U32_OPT("--task-rus", 1, RUSK_MAX_RUS_PER_MACHINE, &cfg.task_rus),
	         .given = &task_rus},
	        {CLI_CUSTOM_OPT("--mix", opt_mix, &cfg), .given = &mix},
	        {CLI_DOUBLE_OPT("--rate", 0.001, 1e8, &cfg.rate), .given = &rate},
	        {CLI_CUSTOM_OPT("--trace", opt_trace, &cfg.trace),
	         .needs = "a file (or openb, or e2e)"},
	        {CLI_CHOICE_OPT("--trace-format", trace_formats, &cfg.trace_format)},
	        {CLI_U32_OPT("--preferred", 0, 64, &cfg.preferred)},
	        {CLI_CHOICE_OPT("--quality", qualities, &quality)},
	        {CLI_CHOICE_OPT("--resources", resources, &rus_only)},
	        {CLI_DOUBLE_OPT("--time-scale", 1e-9, 1e12, &cfg.time_scale)},
	        {CLI_DOUBLE_OPT("--phase-s", 0.001, 1e6, &cfg.phase_s), .given = &shape},
	        {CLI_DOUBLE_OPT("--duration-s", 0.001, 1e6, &cfg.duration_s)},
	        {CLI_DOUBLE_OPT("--task-ms", 0.001, 1e9, &cfg.task_ms)},
	        {CLI_CUSTOM_OPT("--groups", opt_groups, &cfg), .given = &shape},
	        {CLI_CUSTOM_OPT("--phases", opt_phases, &cfg), .given = &shape},
	        {CLI_CHOICE_OPT("--task-dist", dists, &cfg.dist)},
	        {CLI_CUSTOM_OPT("--sync", cli_opt_sync_policy, &sync)},
	        {CLI_CUSTOM_OPT("--strategy", cli_opt_strategy, &strategy)},
	        {CLI_U64_OPT("--gap-ms", 1, 3600000, &cfg.gap_ms)},
	        {CLI_U64_OPT("--tau-ms", 1, 3600000, &cfg.tau_ms)},
	        {CLI_CUSTOM_OPT("--sample", cli_sample, &cfg.sample)},
	        {CLI_ON_OFF_OPT("--admission", &cfg.admission)},
	        {CLI_ON_OFF_OPT("--latency-preferred", &latency_pref)},
	        {CLI_U32_OPT("--buckets", 2, RUSK_ADMIT_MAX_BUCKETS, &cfg.buckets)},
	        {CLI_DOUBLE_OPT("--priority-share", 0, 1, &cfg.priority_share)},
	        {CLI_DOUBLE_OPT("--alpha", 0.01, 1, &cfg.alpha)},
	        {CLI_CHOICE_OPT("--classify", classify_modes, &cfg.classify), .given = &classify},
	        {CLI_ON_OFF_OPT("--target", &cfg.target)},
	        {CLI_CHOICE_OPT("--cls-feedback", cls_feedbacks, &fb_full)},
	        {CLI_CHOICE_OPT("--sched", sched_modes, &cfg.sched)},
	        {CLI_U64_OPT("--e2e-jobs", 1, 1000000, &cfg.e2e_jobs), .given = &e2e_only},
	        {CLI_U64_OPT("--e2e-train", 0, 1000000, &cfg.e2e_train), .given = &e2e_only},
	        {CLI_DOUBLE_OPT("--offered-load", 0.01, 100, &cfg.offered_load),
	         .given = &e2e_only},
	        {CLI_CUSTOM_OPT("--slack", cli_opt_slack, &cfg.slack), .given = &sched_only},
	        {CLI_DOUBLE_OPT("--slo-share", 0, 1, &cfg.slo_share), .given = &sched_only},
	        {CLI_DOUBLE_OPT("--plan-slot-s", 1e-6, 1e7, &cfg.plan_slot_s),
	         .given = &sched_only},
	        {CLI_DOUBLE_OPT("--plan-tick-s", 1e-6, 1e7, &cfg.plan_tick_s),
	         .given = &sched_only},
	        {CLI_DOUBLE_OPT("--plan-budget-ms", 1, 1e6, &cfg.plan_budget_ms),
	         .given = &sched_only},
	        {CLI_DOUBLE_OPT("--drain-s", 0, 1e7, &cfg.drain_s), .given = &sched_only},
	        {CLI_ON_OFF_OPT("--admit-predict", &cfg.admit_predict)},
	        {CLI_CUSTOM_OPT("--backend", opt_backend, &cfg)},
	        {CLI_FLAG_OPT("--no-init", &cfg.no_init)},
	        {CLI_FLAG_OPT("--force-init", &cfg.force_init)},
	        {CLI_FLAG_OPT("--no-auto-reclaim", &cfg.no_auto_reclaim)},
	        {CLI_U32_OPT("--commit-batch", 1, 4096, &cfg.commit_batch), .given = &commit_batch},
	        {CLI_U32_OPT("--wait", 1, 16, &cfg.wait), .given = &wait},
	        {CLI_U32_OPT("--wait-ms", 1, 60000, &cfg.wait_ms), .given = &wait_ms},
	        {CLI_U32_OPT("--unavailable-ms", 0, 60000, &cfg.unavail_ms), .given = &unavail},
	        {CLI_FILE_OPT("--groups-file", &cfg.groups_file)},
	        {CLI_DOUBLE_OPT("--quota-period-ms", 0.01, 1e6, &cfg.quota_period_ms)},
	        {CLI_CHOICE_OPT("--openb-groups", openb_groupings, &cfg.openb_groups)},
	        {CLI_FILE_OPT("--groups-csv", &cfg.groups_csv)},
	        {CLI_FILE_OPT("--groups-png", &cfg.groups_png)},
	        {CLI_FLAG_OPT("--quiet", &cfg.quiet)},
	        {CLI_FLAG_OPT("--global-lock", &cfg.global_lock)},
	        {CLI_FLAG_OPT("--gang", &cfg.gang)},
	        {CLI_U32_OPT("--reserve-syncs", 0, 1000000, &cfg.reserve_syncs)},
	        {CLI_FILE_OPT("--json", &cfg.json)},
	        {CLI_FILE_OPT("--csv", &cfg.csv)},
	        /* rusk sim's cost model: the last four, unknown to rusk run */
	        {CLI_CHOICE_OPT("--cost", costs, &cost_flat)},
	        {CLI_DOUBLE_OPT("--decision-us", 0, 1e9, &cfg.decision_us)},
	        {CLI_DOUBLE_OPT("--sync-latency-us", 0, 1e9, &cfg.sync_latency_us)},
	        {CLI_DOUBLE_OPT("--commit-latency-us", 0, 1e9, &cfg.commit_latency_us)},
	};
	size_t n = sizeof opts / sizeof *opts - (sim ? 0 : 4);
	int pr = cli_parse(sim ? "sim" : "run", argc, argv, cc, opts, n,
	                   sim ? sim_usage : run_usage);
	if (pr != 0)
		return pr > 0 ? -1 : RUSK_EXIT_USAGE;
	if (cfg.phases_given && cfg.trace != NULL) {
		fprintf(stderr,
		        "rusk: --phases does not apply to --trace: a trace brings its own "
		        "arrivals (--duration-s or --time-scale sets how long they take)\n");
		return RUSK_EXIT_USAGE;
	}
	cfg.rate_set = rate != NULL;
	cfg.quality = (rusk_quality_model)quality;
	cfg.rus_only = rus_only != 0;
	cfg.cost_flat = cost_flat != 0;
	/* Issue 29, item 1: under interference the scheduler sees classified profiles by
	 * default (Quasar §3.2), and a task's run time is what it meets where it lands
	 * (classify_run.c, true_slowdown); --classify oracle is the comparison arm, off the old
	 * score-only model. Not with --sched, which takes no --classify. */
	if (classify == NULL && cfg.quality == RUSK_QUALITY_INTERFERENCE && cfg.sched < 0)
		cfg.classify = DRV_CLS_ON;
	/* rusk sim's default is the paper's 20 schedulers (ParSync §6.1), which DiffSync
	 * allows only with as many partitions (P >= N): fewer partitions, as many agents. */
	if (sim && agents == NULL && cfg.sync == RUSK_SYNC_DIFF &&
	    cc->params.partitions < cfg.agents)
		cfg.agents = cc->params.partitions;
	cfg.cls_fb_full = fb_full != 0;
	cfg.ru_milli = cc->params.ru_milli;
	cfg.latency_ignores_pref = !latency_pref;
	if (generators != NULL && sim) {
		fprintf(stderr, "rusk: --generators: rusk sim has one generator (virtual time)\n");
		return RUSK_EXIT_USAGE;
	}
	if (cfg.generators > 1) {
		const char *why = cfg.generators > cfg.agents   ? "more than --agents"
		                  : cfg.trace != NULL           ? "--trace (one replay)"
		                  : cfg.sched >= 0              ? "--sched (the planner submits)"
		                  : cfg.classify != DRV_CLS_OFF ? "--classify"
		                  : cfg.admit_predict           ? "--admit-predict"
		                                                : NULL;
		if (why != NULL) {
			fprintf(stderr, "rusk: --generators %u: not with %s\n", cfg.generators,
			        why);
			return RUSK_EXIT_USAGE;
		}
	}
	if (check_backend(&cfg) != 0)
		return RUSK_EXIT_USAGE;
	if ((commit_batch != NULL || wait != NULL || wait_ms != NULL || unavail != NULL) &&
	    cfg.backend == NULL) {
		fprintf(stderr, "rusk: %s: only with --backend redis://...\n",
		        commit_batch != NULL ? "--commit-batch"
		        : wait != NULL       ? "--wait"
		        : wait_ms != NULL    ? "--wait-ms"
		                             : "--unavailable-ms");
		return RUSK_EXIT_USAGE;
	}
	/* rusk agent's rule: below 100 ms a healthy master's slow answer on a loaded host
	 * would mark it unavailable. */
	if (cfg.unavail_ms != 0 && cfg.unavail_ms < 100) {
		fprintf(stderr,
		        "rusk: --unavailable-ms %u: below 100 ms (0: off): a healthy master's "
		        "slow answer would mark it unavailable\n",
		        cfg.unavail_ms);
		return RUSK_EXIT_USAGE;
	}
	if (wait_ms != NULL && wait == NULL) {
		fprintf(stderr, "rusk: --wait-ms: only with --wait N (WAIT's timeout)\n");
		return RUSK_EXIT_USAGE;
	}
	if (mix != NULL && (task_rus != NULL || cfg.trace != NULL)) {
		fprintf(stderr, "rusk: --mix: not with %s (it gives every task's shape)\n",
		        task_rus != NULL ? "--task-rus" : "--trace");
		return RUSK_EXIT_USAGE;
	}
	if (apply_shape(&cfg, shape) != 0 || check_sync(&cfg, cc->params.partitions) != 0 ||
	    check_groups(&cfg) != 0 || check_outputs(&cfg, cc) != 0 || check_classify(&cfg) != 0 ||
	    check_sched(&cfg, sched_only, e2e_only) != 0)
		return RUSK_EXIT_USAGE;
	*out = cfg;
	return 0;
}
