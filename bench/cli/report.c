/* SPDX-License-Identifier: MIT */
/*
 * What `rusk run` and `rusk sim` report (report.h): the per-second series (a CSV row and
 * the progress line each second) and the summary at the end (text, checks, JSON). The
 * agents' statistics are summed once into a `summary`; the text and the JSON print from it.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "runstate.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* ---- per-second series -------------------------------------------------------------------- */

void drv_util_sample(run *R)
{
	R->util_acc += 1.0 - (double)rusk_cluster_free_rus(R->c) / rusk_cluster_rus(R->c);
	R->util_n++;
}

/* One second's figures: the agents' counters (cumulative), the run's, and this second's
 * throughput and utilization. */
typedef struct second {
	uint64_t placed, conf, preempted, q_micro, refused, pref, qmode;
	uint64_t sub, rej, backlog, tput;
	double util;
	uint32_t n_med; /* agents with a median delay this second (R->medians, sorted) */
} second;

/* Sums the agents' counters into s and, unless cur is NULL, their delays into cur (relaxed
 * reads: the agents run on). */
static void second_sum(run *R, rusk_hist *cur, second *s)
{
	if (cur != NULL)
		memset(cur, 0, sizeof *cur);
	for (uint32_t i = 0; i < R->cfg.agents; i++) {
		const agent_stats *st = R->ag[i].st;
		if (cur != NULL)
			drv_delay_merge(cur, st);
		s->refused += rusk_load64(&st->refused, RUSK_RELAXED);
		s->pref += rusk_load64(&st->pref_tasks, RUSK_RELAXED);
		s->qmode += rusk_load64(&st->qmode_tasks, RUSK_RELAXED);
		s->placed += rusk_load64(&st->placed, RUSK_RELAXED);
		s->conf += rusk_load64(&st->conflicts, RUSK_RELAXED);
		s->preempted += rusk_load64(&st->preempted, RUSK_RELAXED);
		s->q_micro += rusk_load64(&st->q_micro, RUSK_RELAXED);
	}
}

/* Each agent's median delay this second into R->medians, sorted; returns how many agents
 * placed something. Their 10/50/90th percentiles across agents show how evenly agents
 * fare (ParSync Figs. 6-8 bands). */
static uint32_t agent_medians(run *R)
{
	rusk_hist *snap = &R->snap[0], *one = &R->snap[1];
	uint32_t n_med = 0;
	for (uint32_t i = 0; i < R->cfg.agents; i++) {
		memset(snap, 0, sizeof *snap);
		drv_delay_merge(snap, R->ag[i].st);
		rusk_hist_diff(one, snap, &R->per_agent[i]);
		R->per_agent[i] = *snap;
		if (rusk_hist_count(one) > 0)
			R->medians[n_med++] = (double)rusk_hist_quantile(one, 0.5);
	}
	qsort(R->medians, n_med, sizeof *R->medians, cmp_double);
	return n_med;
}

/* This second's CSV row; d: this second's delays; flush: write it out now. */
static void csv_row(run *R, const second *s, const rusk_hist *d, bool flush)
{
	const run_cfg *cfg = &R->cfg;
	int phase = (int)((R->secs - 0.5) / cfg->phase_s);
	const double *m = R->medians;
	uint32_t n_med = s->n_med;
	uint64_t tput = s->tput;
	fprintf(R->csv,
	        "%d,%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.4f,%" PRIu64
	        ",%.1f,%.1f,%.1f,%.1f,%.4f,%.1f,%.1f,%.1f,%.4f,%.4f",
	        R->secs, phase < cfg->n_phases ? phase : cfg->n_phases, s->sub, s->placed, tput,
	        s->rej, s->backlog, s->util, s->conf - R->prev_conf,
	        rusk_hist_quantile(d, 0.1) / 1e3, rusk_hist_quantile(d, 0.5) / 1e3,
	        rusk_hist_quantile(d, 0.9) / 1e3, rusk_hist_quantile(d, 0.99) / 1e3,
	        tput ? (s->q_micro - R->prev_q) / 1e6 / tput : 0.0,
	        n_med ? m[(size_t)(0.1 * (n_med - 1))] / 1e3 : 0.0,
	        n_med ? m[(size_t)(0.5 * (n_med - 1))] / 1e3 : 0.0,
	        n_med ? m[(size_t)(0.9 * (n_med - 1))] / 1e3 : 0.0,
	        tput ? (double)(s->pref - R->prev_pref) / tput : 0.0,
	        tput ? (double)(s->qmode - R->prev_qmode) / tput : 0.0);
	for (const drv_feature *const *f = drv_features; *f != NULL; f++)
		if ((*f)->csv != NULL && (*f)->on(R))
			(*f)->csv(R, R->csv);
	fputc('\n', R->csv);
	/* A row a second: what ran is on disk whatever ends the run. Rows of a skipped quiet
	 * stretch (rusk sim, drv_second_idle) go out with the next busy second's. */
	if (flush)
		fflush(R->csv);
}

/* One second (drv_second); `idle`: nothing happened in it (drv_second_idle), so its delays
 * and medians are empty and the histograms (half a megabyte each) are not read. */
static uint64_t second_step(run *R, bool tty, bool idle)
{
	static const rusk_hist none; /* an idle second's delays */
	rusk_hist *cur = &R->snap[2], *d = &R->snap[3];
	second s = {0};
	R->secs++;
	second_sum(R, idle ? NULL : cur, &s);
	if (!idle) {
		rusk_hist_diff(d, cur, &R->prev);
		s.n_med = agent_medians(R);
		R->prev = *cur;
	}
	drv_gen_counts gc;
	drv_gen_totals(R, &gc);
	s.sub = gc.submitted;
	s.rej = gc.rejected + s.refused + gc.refused + drv_redis_rejected(R);
	/* Over Redis, the ledger revokes tasks whose commits Redis lost (redis_run.c): those
	 * placements did not run either (they are queued again). Never in memory: the in-memory
	 * run's figures stay as they were. */
	uint64_t revoked = 0;
	if (R->redis != NULL) {
		rusk_dispatch_stats ds;
		rusk_dispatch_stats_get(R->d, &ds);
		revoked = ds.revoked;
	}
	s.backlog = s.sub - s.rej - (s.placed - s.preempted - revoked);
	s.util = R->util_n > 0 ? R->util_acc / R->util_n
	                       : 1.0 - (double)rusk_cluster_free_rus(R->c) / rusk_cluster_rus(R->c);
	R->util_acc = 0;
	R->util_n = 0;
	R->util_sum += s.util;
	s.tput = s.placed - R->prev_placed;
	if (s.tput > R->max_tput)
		R->max_tput = s.tput;
	/* The features' figures (vector resources, the groups'); --classify retrains once
	 * enough rows came back. */
	for (const drv_feature *const *f = drv_features; *f != NULL; f++)
		if ((*f)->second != NULL && (*f)->on(R))
			(*f)->second(R, idle);
	if (R->csv)
		csv_row(R, &s, idle ? &none : d, !idle);
	R->prev_q = s.q_micro;
	R->prev_pref = s.pref;
	R->prev_qmode = s.qmode;
	if (tty)
		fprintf(stderr,
		        "\r  %3d s  %8" PRIu64 " tasks/s  util %5.1f%%  backlog %" PRIu64 "   ",
		        R->secs, s.tput, s.util * 100, s.backlog);
	R->prev_placed = s.placed;
	R->prev_conf = s.conf;
	/* Admission history: the previous window plus this one (rusk_admit_roll). */
	if (R->adm != NULL && R->secs % 10 == 0)
		rusk_admit_roll(R->adm);
	return s.backlog;
}

uint64_t drv_second(run *R, bool tty)
{
	return second_step(R, tty, false);
}

void drv_second_idle(run *R, bool tty)
{
	second_step(R, tty, true);
}

/* ---- summary -------------------------------------------------------------------------------- */

/* The run's totals and what the summary derives from them, computed once. */
typedef struct summary {
	const agent_stats *tot; /* every agent's statistics summed */
	const rusk_hist *delay; /* every placed task's scheduling delay, both priorities */
	const uint64_t *d_bins; /* placed RUs by D bin (score model) */
	bool interrupted;
	const char *end; /* how the run ended: "completed", "SIGINT", ... */
	/* Each side counted on its own: the agents' leftovers (backlog), the completer's
	 * releases; rej_queue: rejected for a full agent ring (the rest have their reasons). */
	uint64_t sub, rej, backlog, rej_queue;
	bool adds_up, all_free;
	int vrc; /* rusk_cluster_verify, its message in err */
	char err[256];
	uint32_t n_rus;
	double elapsed, q_mean, pref_frac, busy;
	uint64_t d_total, syncs, sync_ns;
	uint64_t stuck;     /* tasks that fit left queued on an idle cluster (0 if interrupted) */
	rusk_hist *mix;     /* --mix: delay per shape */
	drv_gen_counts gen; /* the generators' counters, summed */
	bool planner_ok;    /* --sched: every planner job resolved once (else planner_why) */
	char planner_why[256];
} summary;

/* Sums every agent's statistics into tot and their leftovers into *left. Returns
 * RUSK_EXIT_FAIL if an agent failed, else 0. */
static int sum_agents(const run *R, agent_stats *tot, rusk_hist *delay, uint64_t *d_bins,
                      uint64_t *left)
{
	int status = 0;
	memset(tot, 0, sizeof *tot);
	memset(delay, 0, sizeof *delay);
	memset(d_bins, 0, sizeof *d_bins * D_BINS);
	*left = 0;
	for (uint32_t i = 0; i < R->cfg.agents; i++) {
		const agent_stats *s = R->ag[i].st;
		if (R->ag[i].err != RUSK_OK)
			status = RUSK_EXIT_FAIL;
		tot->placed += s->placed;
		tot->conflicts += s->conflicts;
		tot->rus_lost += s->rus_lost;
		tot->memory_short += s->memory_short;
		tot->attempts += s->attempts;
		tot->requeued += s->requeued;
		tot->r_sum += s->r_sum;
		tot->rus_placed += s->rus_placed;
		tot->q_micro += s->q_micro;
		tot->pref_tasks += s->pref_tasks;
		tot->preempted += s->preempted;
		tot->preemptions += s->preemptions;
		tot->adm_waited += s->adm_waited;
		tot->adm_bound += s->adm_bound;
		tot->placed_hi += s->placed_hi;
		tot->refused += s->refused;
		tot->qmode_tasks += s->qmode_tasks;
		tot->tet_us += s->tet_us;
		tot->aside += s->aside;
		tot->dry += s->dry;
		tot->reservations += s->reservations;
		tot->given_back += s->given_back;
		tot->cancelled += s->cancelled;
		if (s->last_done_ns > tot->last_done_ns)
			tot->last_done_ns = s->last_done_ns;
		if (s->r_max > tot->r_max)
			tot->r_max = s->r_max;
		*left += R->ag[i].da != NULL ? rusk_dagent_left_(R->ag[i].da) : 0;
		rusk_hist_merge(&tot->admission, &s->admission);
		rusk_hist_merge(&tot->delay_hi, &s->delay_hi);
		rusk_hist_merge(&tot->delay_lo, &s->delay_lo);
		for (int k = 0; k < D_BINS; k++)
			d_bins[k] += R->ag[i].d_bins[k];
		rusk_hist_merge(&tot->stale, &s->stale);
		rusk_hist_merge(&tot->sample, &s->sample);
		rusk_hist_merge(&tot->commit, &s->commit);
		drv_delay_merge(delay, s);
		rusk_hist_merge(&tot->queue, &s->queue);
		rusk_hist_merge(&tot->place, &s->place);
	}
	return status;
}

/* The derived figures of S from its totals (S->tot) and the agents' leftovers. */
static void summarize(run *R, uint64_t left, summary *S)
{
	const agent_stats *tot = S->tot;
	drv_gen_counts gc;
	drv_gen_totals(R, &gc);
	S->gen = gc;
	S->sub = gc.submitted;
	S->rej = gc.rejected + tot->refused + gc.refused + tot->cancelled + drv_redis_rejected(R);
	S->backlog = left;
	/* Why tasks were rejected: the generator counts its own reasons, agents theirs. */
	S->rej_queue = gc.rejected - gc.too_large - gc.pool - drv_vec_refused(R);
	int sig = drv_stop_signal();
	S->end = R->fail                                          ? "out of memory"
	         : !S->interrupted && R->drain_capped && left > 0 ? "drain_cap"
	         : !S->interrupted                                ? "completed"
	         : sig == SIGTERM                                 ? "SIGTERM"
	         : sig == SIGINT                                  ? "SIGINT"
	         : sig == SIGHUP                                  ? "SIGHUP"
	                                                          : "interrupted";
	rusk_dispatch_stats ds;
	rusk_dispatch_stats_get(R->d, &ds); /* zeroed when there is no dispatcher */
	/* Placements that ran to the end: not those preempted, nor those revoked (a machine
	 * failure, or over Redis a commit the ledger found lost: placed again later). */
	uint64_t runs = tot->placed - tot->preempted - ds.revoked;
	S->adds_up = S->sub == runs + S->rej + S->backlog && ds.released == runs;
	S->vrc = rusk_cluster_verify(R->c, S->err, sizeof S->err);
	S->n_rus = rusk_cluster_rus(R->c);
	S->all_free = rusk_cluster_free_rus(R->c) == S->n_rus;
	S->elapsed = R->elapsed_s > 0 ? R->elapsed_s : 1;
	S->q_mean = tot->placed ? tot->q_micro / 1e6 / tot->placed : 0.0;
	S->pref_frac = tot->placed ? (double)tot->pref_tasks / tot->placed : 0.0;
	for (int k = 0; k < D_BINS; k++)
		S->d_total += S->d_bins[k];
	for (uint32_t i = 0; i < R->cfg.agents; i++) {
		S->syncs += R->ag[i].vs.syncs;
		S->sync_ns += R->ag[i].vs.sync_ns;
		S->busy += R->ag[i].busy_s;
	}
	/* Tasks that fit left queued while the cluster sat idle at the end: the scheduler
	 * stopped trying (an interrupted run may stop anywhere). */
	S->stuck = S->interrupted ? 0 : R->stuck;
}

/* The workload's peak offered rate (tasks/s; the generator's, 0 for a trace) and, in rusk
 * sim, how many tasks/s the agents could decide at their mean decision cost (0 in rusk run). */
static void drain_rates(const run *R, double *offered, double *capacity)
{
	const run_cfg *cfg = &R->cfg;
	double top = 0;
	for (int k = 0; k < cfg->n_phases; k++)
		top = cfg->phases[k] > top ? cfg->phases[k] : top;
	*offered = R->trace == NULL && R->sched == NULL ? cfg->rate * top / 100.0 : 0.0;
	*capacity = cfg->sim && R->decisions > 0 && R->dec_cost_ns > 0
	                    ? cfg->agents * 1e9 * R->decisions / R->dec_cost_ns
	                    : 0.0;
}

/* A run that ended at its drain cap with tasks queued: says so, and why when it can. */
static void print_drain_cap(const run *R, const summary *S)
{
	if (!R->drain_capped || S->interrupted || S->backlog == 0)
		return;
	double offered, capacity;
	drain_rates(R, &offered, &capacity);
	fprintf(R->out,
	        "  %-28s the run stopped at its drain cap, %.0f s after the workload, with "
	        "%" PRIu64 " tasks still queued",
	        "DRAIN CAP", R->drain_s, S->backlog);
	if (offered > 0 && capacity > 0)
		fprintf(R->out,
		        ": the offered load (peak %.0f tasks/s) %s what the agents could decide "
		        "(about %.0f tasks/s: %u agents at %.1f us a decision)",
		        offered, offered > capacity ? "exceeded" : "was within", capacity,
		        R->cfg.agents, R->dec_cost_ns / 1e3 / R->decisions);
	fprintf(R->out, "\n");
}

/* Tasks: counts, how the run ended, and the reasons for rejections that occurred. */
static void print_tasks(const run *R, const summary *S)
{
	bool stopped = S->interrupted || R->fail;
	fprintf(R->out,
	        "  %-28s %" PRIu64 " submitted, %" PRIu64 " placed, %" PRIu64 " rejected, %" PRIu64
	        " queued at the end%s%s%s\n",
	        "tasks", S->sub, S->tot->placed, S->rej, S->backlog, stopped ? " (stopped: " : "",
	        stopped ? S->end : "", stopped ? ")" : "");
	if (S->rej == 0)
		return;
	/* The reasons that occurred, e.g. "12 larger than the cluster (800 RUs)". */
	char why[256], *p = why;
	const uint64_t n[] = {S->gen.too_large,   S->tot->refused + S->gen.refused,
	                      S->rej_queue,       S->gen.pool,
	                      drv_vec_refused(R), S->tot->cancelled};
	const char *what[] = {"larger than the cluster",
	                      "refused by the kernel",
	                      "agent queue full",
	                      "task pool full",
	                      "infeasible on every machine (by dimension below)",
	                      "cancelled while queued (the planner's preemptions and kills)"};
	why[0] = '\0';
	for (int k = 0; k < 6; k++)
		if (n[k] > 0)
			p += snprintf(p, (size_t)(why + sizeof why - p), "%s%" PRIu64 " %s",
			              p == why ? "" : ", ", n[k], what[k]);
	fprintf(R->out, "  %-28s %s (cluster: %u RUs)\n", "  rejected", why, S->n_rus);
}

/* Throughput, scheduling delay and its parts, admission control, priorities. */
static void print_delays(const run *R, const summary *S)
{
	const agent_stats *tot = S->tot;
	fprintf(R->out, "  %-28s %.0f tasks/s mean, %" PRIu64 " max (1 s windows)\n", "throughput",
	        tot->placed / S->elapsed, R->max_tput);
	fprintf(R->out, "  %-28s mean %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
	        "scheduling delay (us)", rusk_hist_mean(S->delay) / 1e3,
	        rusk_hist_quantile(S->delay, 0.5) / 1e3, rusk_hist_quantile(S->delay, 0.9) / 1e3,
	        rusk_hist_quantile(S->delay, 0.99) / 1e3, rusk_hist_quantile(S->delay, 0.999) / 1e3,
	        S->delay->max / 1e3);
	fprintf(R->out,
	        "  %-28s queue p50 %.1f p99 %.1f; sample p50 %.2f p99 %.2f; commit p50 %.2f "
	        "p99 %.2f\n",
	        "  of which (us)", rusk_hist_quantile(&tot->queue, 0.5) / 1e3,
	        rusk_hist_quantile(&tot->queue, 0.99) / 1e3,
	        rusk_hist_quantile(&tot->sample, 0.5) / 1e3,
	        rusk_hist_quantile(&tot->sample, 0.99) / 1e3,
	        rusk_hist_quantile(&tot->commit, 0.5) / 1e3,
	        rusk_hist_quantile(&tot->commit, 0.99) / 1e3);
	if (!R->cfg.sim) /* measured CPU (idle time parked costs none) */
		fprintf(R->out, "  %-28s %.2f us per placed task (%.2f s of CPU)\n", "agents' CPU",
		        tot->placed ? S->busy * 1e6 / tot->placed : 0.0, S->busy);
	if (R->cfg.admission)
		fprintf(R->out,
		        "  %-28s %" PRIu64 " tasks waited (%" PRIu64
		        " admitted at the mu + 2 sigma bound); wait p50 %.1f us, p99 %.1f us, "
		        "max %.1f us\n",
		        "admission control", tot->adm_waited, tot->adm_bound,
		        rusk_hist_quantile(&tot->admission, 0.5) / 1e3,
		        rusk_hist_quantile(&tot->admission, 0.99) / 1e3, tot->admission.max / 1e3);
	if (tot->placed_hi > 0 || tot->preempted > 0)
		fprintf(R->out,
		        "  %-28s high %" PRIu64 " placed, delay p50 %.1f p99 %.1f us; normal p50 "
		        "%.1f p99 %.1f us; %" PRIu64 " preempted (all re-queued)\n",
		        "priorities", tot->placed_hi, rusk_hist_quantile(&tot->delay_hi, 0.5) / 1e3,
		        rusk_hist_quantile(&tot->delay_hi, 0.99) / 1e3,
		        rusk_hist_quantile(&tot->delay_lo, 0.5) / 1e3,
		        rusk_hist_quantile(&tot->delay_lo, 0.99) / 1e3, tot->preempted);
}

static const char *const kind_names[] = {"any", "machine", "rack", "spread"};
static const char *const commit_names[] = {"default", "gang", "incremental"};

/* --mix: each shape's delays, merged over the agents into h (n_mix of them). */
static void mix_delays(const run *R, rusk_hist *h)
{
	for (int k = 0; k < R->cfg.n_mix; k++) {
		memset(&h[k], 0, sizeof h[k]);
		for (uint32_t i = 0; i < R->cfg.agents; i++)
			if (R->ag[i].mix_delay != NULL)
				rusk_hist_merge(&h[k], &R->ag[i].mix_delay[k]);
	}
}

static void print_mix(const run *R, const rusk_hist *h)
{
	for (int k = 0; k < R->cfg.n_mix; k++) {
		const drv_mix *m = &R->cfg.mix[k];
		char name[64];
		snprintf(name, sizeof name, "  %u RU%s %s%s%s (%.1f%%)", m->rus,
		         m->rus > 1 ? "s" : "", kind_names[m->placement], m->commit ? " " : "",
		         m->commit ? commit_names[m->commit] : "", 100 * m->share);
		fprintf(R->out, "  %-28s %" PRIu64 " placed; delay p50 %.1f p99 %.1f max %.1f us\n",
		        name, rusk_hist_count(&h[k]), rusk_hist_quantile(&h[k], 0.5) / 1e3,
		        rusk_hist_quantile(&h[k], 0.99) / 1e3, h[k].max / 1e3);
	}
}

static void json_mix(FILE *f, const run *R, const rusk_hist *h)
{
	fprintf(f, "  \"mix\": [");
	for (int k = 0; k < R->cfg.n_mix; k++) {
		const drv_mix *m = &R->cfg.mix[k];
		fprintf(f,
		        "%s\n    {\"rus\": %u, \"placement\": \"%s\", \"commit\": \"%s\", "
		        "\"share\": %.6f, \"placed\": %" PRIu64 ", \"delay_us\": {\"p50\": %.1f, "
		        "\"p99\": %.1f, \"max\": %.1f}}",
		        k ? "," : "", m->rus, kind_names[m->placement], commit_names[m->commit],
		        m->share, rusk_hist_count(&h[k]), rusk_hist_quantile(&h[k], 0.5) / 1e3,
		        rusk_hist_quantile(&h[k], 0.99) / 1e3, h[k].max / 1e3);
	}
	fprintf(f, "],\n");
}

/* Conflicts, sampling, placement quality, utilization. */
static void print_quality(const run *R, const summary *S)
{
	const agent_stats *tot = S->tot;
	/* One unit for the share: commit attempts that lost at least one RU, of all commit
	 * attempts (a multi-RU commit can lose several RUs: those are counted apart). */
	fprintf(R->out,
	        "  %-28s %" PRIu64 " commits lost RUs (%.3f per task, %.2f%% of %" PRIu64
	        " commits), %" PRIu64 " RUs lost; %" PRIu64 " re-queued\n",
	        "conflicts", tot->conflicts,
	        tot->placed ? (double)tot->conflicts / tot->placed : 0.0,
	        tot->attempts ? 100.0 * tot->conflicts / tot->attempts : 0.0, tot->attempts,
	        tot->rus_lost, tot->requeued);
	if (tot->memory_short > 0) /* vector tasks only */
		fprintf(R->out,
		        "  %-28s %" PRIu64 " vector commits refused for the machine's memory or "
		        "GPUs (its RUs free: not conflicts)\n",
		        "memory short", tot->memory_short);
	if (tot->aside > 0)
		fprintf(R->out,
		        "  %-28s %" PRIu64 " times a task waited aside for want of room in its "
		        "view, %" PRIu64 " reservations, %" PRIu64
		        " partial holds given back (stopped growing)\n",
		        "room", tot->aside, tot->reservations, tot->given_back);
	fprintf(R->out,
	        "  %-28s R %.1f per decision (max %" PRIu64
	        "); staleness mean %.1f ms, p99 %.1f ms\n",
	        "sampling", tot->placed ? (double)tot->r_sum / tot->placed : 0.0, tot->r_max,
	        rusk_hist_mean(&tot->stale) / 1e6, rusk_hist_quantile(&tot->stale, 0.99) / 1e6);
	fprintf(R->out, "  %-28s %s %.3f", "quality",
	        R->cfg.quality == RUSK_QUALITY_SCORE          ? "mean slot score"
	        : R->cfg.quality == RUSK_QUALITY_INTERFERENCE ? "mean Tarcil Q"
	        : R->cfg.quality == RUSK_QUALITY_PACKING      ? "mean packing value (vector tasks; "
	                                                        "slot score for RU-only ones)"
	                                                      : "mean FGD value (vector tasks; "
	                                                        "slot score for RU-only ones)",
	        S->q_mean);
	if (R->cfg.preferred > 0)
		fprintf(R->out, ", %.1f%% of tasks on preferred machines", 100.0 * S->pref_frac);
	if (S->d_total > 0) {
		uint64_t top = S->d_bins[D_BINS - 1] + S->d_bins[D_BINS - 2];
		fprintf(R->out, ", %.1f%% of RUs in the top 20%% (D >= 0.8)",
		        100.0 * top / S->d_total);
	}
	fprintf(R->out, "\n");
	fprintf(R->out, "  %-28s %.1f%% mean over the run\n", "utilization",
	        100.0 * R->util_sum / (R->secs ? R->secs : 1));
}

/* View syncs, and each load group's placements when there are several groups. */
static void print_syncs_groups(const run *R, const summary *S)
{
	const run_cfg *cfg = &R->cfg;
	if (cfg->sim) {
		fprintf(R->out,
		        "  %-28s %" PRIu64 " partition syncs; agents busy %.1f%% of the time\n",
		        "view syncs", S->syncs, 100.0 * S->busy / (S->elapsed * cfg->agents));
		fprintf(R->out,
		        "  %-28s %" PRIu64 " decisions, %.1f us each on average (%s; %.0f us a "
		        "Latency-first decision of 32 RUs)\n",
		        "decision cost", R->decisions,
		        R->decisions ? R->dec_cost_ns / 1e3 / R->decisions : 0.0,
		        cfg->cost_flat ? "flat" : "charged for their work", cfg->decision_us);
	} else
		/* sync_ns is the syncs' wall time (view.c: rusk_now_), so its share is of the
		 * agents' wall time (elapsed x agents): over their CPU time (busy) it read
		 * "7.399 s (940.0% of the agents' CPU time)" when the syncs waited on Redis. */
		fprintf(R->out,
		        "  %-28s %" PRIu64 " partition syncs, %.3f s of wall time (%.1f%% of the "
		        "agents' wall time)\n",
		        "view syncs", S->syncs, S->sync_ns / 1e9,
		        100.0 * S->sync_ns / 1e9 / (S->elapsed * cfg->agents));
	rusk_hist *gh = calloc(1, sizeof *gh);
	for (int k = 0; cfg->n_groups > 1 && gh != NULL && k < cfg->n_groups; k++) {
		memset(gh, 0, sizeof *gh);
		uint64_t gq = 0, gp = 0;
		for (uint32_t i = (uint32_t)k; i < cfg->agents; i += (uint32_t)cfg->n_groups) {
			drv_delay_merge(gh, R->ag[i].st);
			gq += R->ag[i].st->q_micro;
			gp += R->ag[i].st->placed;
		}
		char label[32];
		snprintf(label, sizeof label, "group %c (%u agents)", 'A' + k,
		         drv_group_size(cfg, k));
		fprintf(R->out,
		        "  %-28s %" PRIu64
		        " placed, delay p50 %.1f us, p99 %.1f us, quality %.3f\n",
		        label, gp, rusk_hist_quantile(gh, 0.5) / 1e3,
		        rusk_hist_quantile(gh, 0.99) / 1e3, gp ? gq / 1e6 / gp : 0.0);
	}
	free(gh);
}

/* Whether every check passed (the planner's verdict kept in S for the checks line). */
static bool checks_pass(run *R, summary *S)
{
	S->planner_ok =
	        R->sched == NULL || drv_sched_check(R, S->planner_why, sizeof S->planner_why);
	return S->vrc == RUSK_OK && S->adds_up && S->all_free && S->stuck == 0 && S->planner_ok &&
	       drv_apred_ok(R) && drv_grp_ok(R) && drv_redis_ok(R);
}

/* The checks line. */
static void print_checks(const run *R, const summary *S)
{
	fprintf(R->out, "  %-28s %s; counts add up: %s; all RUs free after the run: %s", "checks",
	        S->vrc == RUSK_OK ? "counters consistent" : S->err, S->adds_up ? "yes" : "NO",
	        S->all_free ? "yes" : "NO");
	if (drv_redis_left_held(R)) /* the line's "free" is the kernel's; Redis's are below */
		fprintf(R->out, " (on Redis, some left to the reclaim: \"redis left held\")");
	if (S->stuck > 0)
		fprintf(R->out, "; NO: %" PRIu64 " tasks that fit left queued on an idle cluster",
		        S->stuck);
	if (R->sched != NULL)
		fprintf(R->out, "; every planner job resolved once: %s%s",
		        S->planner_ok ? "yes" : "NO: ", S->planner_ok ? "" : S->planner_why);
	fprintf(R->out, "\n");
	if (!drv_apred_ok(R))
		fprintf(R->out, "  %-28s NO: out of memory recording wait estimates\n", "");
	if (!drv_grp_ok(R))
		fprintf(R->out, "  %-28s NO: a quota round was unfair or a group overshot\n", "");
	if (!drv_redis_ok(R))
		fprintf(R->out, "  %-28s NO: the recount of the state on Redis: %s\n", "",
		        drv_redis_why(R));
}

/* ---- JSON ----------------------------------------------------------------------------------- */

static void json_hist(FILE *f, const char *name, const rusk_hist *h, bool last)
{
	fprintf(f,
	        "    \"%s\": {\"mean\": %.1f, \"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f, "
	        "\"p999\": %.1f, \"max\": %.1f}%s\n",
	        name, rusk_hist_mean(h) / 1e3, rusk_hist_quantile(h, 0.5) / 1e3,
	        rusk_hist_quantile(h, 0.9) / 1e3, rusk_hist_quantile(h, 0.99) / 1e3,
	        rusk_hist_quantile(h, 0.999) / 1e3, h->max / 1e3, last ? "" : ",");
}

/* The trace replay's part of the JSON config: the file, what it holds, the scaling. */
static void json_trace(FILE *f, const run_cfg *c, size_t n_trace)
{
	fputs(", \"trace\": {\"path\": \"", f);
	for (const unsigned char *p = (const unsigned char *)c->trace_path; *p; p++)
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	fprintf(f,
	        "\", \"format\": \"%s\", \"tasks\": %zu, \"span_s\": %.6g, \"time_scale\": "
	        "%.6g, \"replicas\": %u, \"replayed_tasks\": %zu, \"replay_s\": %.6g",
	        c->trace_format == RUSK_TRACE_OPENB ? "openb"
	        : strcmp(c->trace, "e2e") == 0      ? "e2e"
	                                            : "csv",
	        c->trace_tasks, c->trace_span_s, c->trace_scale, c->trace_replicas, n_trace,
	        c->phase_s);
	if (c->rate_set)
		fprintf(f, ", \"rate_requested\": %.1f}", c->rate);
	else
		fputs(", \"rate_requested\": null}", f);
}

/* "config": the run's parameters. A trace run reports the trace and its scaling; the
 * generator's rate and task shape do not apply (null). */
static void json_config(FILE *f, const run *R)
{
	const run_cfg *cfg = &R->cfg;
	bool tr = R->trace != NULL;
	char rate[32] = "null", task_ms[32] = "null", task_rus[16] = "null";
	if (!tr) {
		snprintf(rate, sizeof rate, "%.1f", cfg->rate);
		snprintf(task_ms, sizeof task_ms, "%.1f", cfg->task_ms);
		snprintf(task_rus, sizeof task_rus, "%u", cfg->task_rus);
	}
	fprintf(f,
	        "{\n  \"config\": {\"machines\": %u, \"rus\": %u, \"partitions\": %u, "
	        "\"agents\": %u, \"sync\": \"%s\", \"gap_ms\": %" PRIu64
	        ", \"strategy\": \"%s\", \"sample\": %" PRIu64 ", \"rate\": %s, "
	        "\"phase_s\": %.3f, \"phases\": [",
	        rusk_cluster_machines(R->c), rusk_cluster_rus(R->c), rusk_cluster_partitions(R->c),
	        cfg->agents, rusk_sync_policy_name(cfg->sync), cfg->gap_ms,
	        rusk_strategy_name(cfg->strategy), cfg->sample, rate, cfg->phase_s);
	for (int k = 0; k < cfg->n_phases; k++)
		fprintf(f, "%s%.1f", k ? ", " : "", cfg->phases[k]);
	fprintf(f,
	        "], \"task_ms\": %s, \"task_rus\": %s, \"seed\": %" PRIu64
	        ", \"admission\": %s, \"buckets\": %u, \"priority_share\": %.4f, \"gang\": %s",
	        task_ms, task_rus, R->seed, cfg->admission ? "true" : "false", cfg->buckets,
	        cfg->priority_share, cfg->gang ? "true" : "false");
	if (tr)
		json_trace(f, cfg, R->n_trace);
	if (cfg->sim)
		fprintf(f,
		        ", \"cost\": \"%s\", \"decision_us\": %.3f, \"sync_latency_us\": %.3f, "
		        "\"commit_latency_us\": %.3f",
		        cfg->cost_flat ? "flat" : "work", cfg->decision_us, cfg->sync_latency_us,
		        cfg->commit_latency_us);
	fprintf(f, "},\n");
}

/* "run", "tasks", "throughput_per_s", "delay_us", "conflicts". */
static void json_tasks(FILE *f, const run *R, const summary *S)
{
	const agent_stats *tot = S->tot;
	double offered, capacity;
	drain_rates(R, &offered, &capacity);
	/* Ended at the cap with tasks still queued (a cap reached with none queued, tasks
	 * only running on, is an ordinary end). */
	bool capped = R->drain_capped && !S->interrupted && S->backlog > 0;
	char off[32] = "null", cap[32] = "null";
	if (offered > 0)
		snprintf(off, sizeof off, "%.1f", offered);
	if (capacity > 0)
		snprintf(cap, sizeof cap, "%.1f", capacity);
	fprintf(f,
	        "  \"run\": {\"end\": \"%s\", \"interrupted\": %s, \"elapsed_s\": %.3f, "
	        "\"drain_cap\": {\"reached\": %s, \"drain_s\": %.3f, \"queued\": %" PRIu64
	        ", \"offered_peak_per_s\": %s, \"decision_capacity_per_s\": %s}},\n",
	        S->end, S->interrupted ? "true" : "false", R->elapsed_s, capped ? "true" : "false",
	        R->drain_s, capped ? S->backlog : 0, off, cap);
	fprintf(f,
	        "  \"tasks\": {\"submitted\": %" PRIu64 ", \"committed\": %" PRIu64
	        ", \"rejected\": %" PRIu64 ", \"backlog_end\": %" PRIu64 ", \"preempted\": %" PRIu64
	        ", \"high_priority_placed\": %" PRIu64 ",\n    \"rejected_reasons\": "
	        "{\"too_large\": %" PRIu64 ", \"refused\": %" PRIu64 ", \"queue_full\": %" PRIu64
	        ", \"pool_full\": %" PRIu64 ", \"infeasible\": %" PRIu64 ", \"cancelled\": %" PRIu64
	        "}},\n",
	        S->sub, tot->placed, S->rej, S->backlog, tot->preempted, tot->placed_hi,
	        S->gen.too_large, tot->refused + S->gen.refused, S->rej_queue, S->gen.pool,
	        drv_vec_refused(R), tot->cancelled);
	fprintf(f, "  \"throughput_per_s\": {\"mean\": %.1f, \"max\": %" PRIu64 "},\n",
	        tot->placed / S->elapsed, R->max_tput);
	fprintf(f,
	        "  \"delay_us\": {\"mean\": %.1f, \"p50\": %.1f, \"p90\": %.1f, \"p95\": %.1f, "
	        "\"p99\": %.1f, \"p999\": %.1f, \"max\": %.1f},\n",
	        rusk_hist_mean(S->delay) / 1e3, rusk_hist_quantile(S->delay, 0.5) / 1e3,
	        rusk_hist_quantile(S->delay, 0.9) / 1e3, rusk_hist_quantile(S->delay, 0.95) / 1e3,
	        rusk_hist_quantile(S->delay, 0.99) / 1e3, rusk_hist_quantile(S->delay, 0.999) / 1e3,
	        S->delay->max / 1e3);
	fprintf(f,
	        "  \"conflicts\": {\"unit\": \"commit attempts that lost at least one RU\", "
	        "\"total\": %" PRIu64 ", \"attempts\": %" PRIu64 ", \"rate\": %.6f, "
	        "\"per_task_mean\": %.6f, \"rus_lost\": %" PRIu64 ", \"requeued\": %" PRIu64
	        ", \"aside\": %" PRIu64 ", \"reservations\": %" PRIu64 ", \"given_back\": %" PRIu64
	        ", \"dry\": %" PRIu64 ", \"memory_short\": %" PRIu64 "},\n",
	        tot->conflicts, tot->attempts,
	        tot->attempts ? (double)tot->conflicts / tot->attempts : 0.0,
	        tot->placed ? (double)tot->conflicts / tot->placed : 0.0, tot->rus_lost,
	        tot->requeued, tot->aside, tot->reservations, tot->given_back, tot->dry,
	        tot->memory_short);
}

/* "quality" with the CDF of D (score model only: D needs a static ranking), then
 * "staleness_ms" and "utilization". */
static void json_quality(FILE *f, const run *R, const summary *S)
{
	const agent_stats *tot = S->tot;
	bool score = R->cfg.quality == RUSK_QUALITY_SCORE;
	char qbuf[32];
	snprintf(qbuf, sizeof qbuf, "%.4f", S->q_mean);
	fprintf(f,
	        "  \"quality\": {\"model\": \"%s\", \"score_mean\": %s, \"q_mean\": %s, "
	        "\"preferred_fraction\": %.6f, \"quality_mode_share\": %.6f, "
	        "\"sample_size_mean\": %.2f, \"sample_size_max\": %" PRIu64 ", \"d_cdf\": ",
	        score                                         ? "score"
	        : R->cfg.quality == RUSK_QUALITY_INTERFERENCE ? "interference"
	        : R->cfg.quality == RUSK_QUALITY_PACKING      ? "packing"
	                                                      : "fgd",
	        score ? qbuf : "null", score ? "null" : qbuf, S->pref_frac,
	        tot->placed ? (double)tot->qmode_tasks / tot->placed : 0.0,
	        tot->placed ? (double)tot->r_sum / tot->placed : 0.0, tot->r_max);
	if (S->d_total == 0) {
		fprintf(f, "null},\n");
	} else {
		uint64_t cum = 0;
		fprintf(f, "[0");
		for (int k = 0; k < D_BINS; k++) {
			cum += S->d_bins[k];
			fprintf(f, ", %.6f", (double)cum / S->d_total);
		}
		fprintf(f, "]},\n");
	}
	fprintf(f, "  \"staleness_ms\": {\"mean\": %.3f, \"p99\": %.3f},\n",
	        rusk_hist_mean(&tot->stale) / 1e6, rusk_hist_quantile(&tot->stale, 0.99) / 1e6);
	fprintf(f, "  \"utilization\": {\"mean\": %.4f},\n", R->util_sum / (R->secs ? R->secs : 1));
}

/* "sync", "execution", "admission", "priority". */
static void json_costs(FILE *f, const run *R, const summary *S)
{
	const agent_stats *tot = S->tot;
	if (R->cfg.sim) /* modelled time only: identical bytes for identical seeds */
		fprintf(f,
		        "  \"sync\": {\"partitions_synced\": %" PRIu64
		        ", \"agent_busy_share\": %.5f, \"decisions\": %" PRIu64
		        ", \"decision_us_mean\": %.3f},\n",
		        S->syncs, S->busy / (S->elapsed * R->cfg.agents), R->decisions,
		        R->decisions ? R->dec_cost_ns / 1e3 / R->decisions : 0.0);
	else
		fprintf(f,
		        "  \"sync\": {\"partitions_synced\": %" PRIu64
		        ", \"seconds\": %.4f, \"share_of_agent_wall\": %.5f},\n"
		        "  \"agent_cpu\": {\"seconds\": %.4f, \"us_per_task\": %.3f},\n",
		        S->syncs, S->sync_ns / 1e9, S->sync_ns / 1e9 / (S->elapsed * R->cfg.agents),
		        S->busy, tot->placed ? S->busy * 1e6 / tot->placed : 0.0);
	double tet = tot->placed ? tot->tet_us / 1e6 / tot->placed : 0.0;
	fprintf(f,
	        "  \"execution\": {\"tet_mean_s\": %.6f, \"jct_mean_s\": %.6f, "
	        "\"makespan_s\": %.6f},\n",
	        tet, tet + rusk_hist_mean(S->delay) / 1e9,
	        tot->last_done_ns > R->t0 ? (tot->last_done_ns - R->t0) / 1e9 : 0.0);
	fprintf(f, "  \"admission\": {\"waited\": %" PRIu64 ", \"at_bound\": %" PRIu64 "},\n",
	        tot->adm_waited, tot->adm_bound);
	fprintf(f, "  \"priority\": {\"high_placed\": %" PRIu64 ", \"preempted\": %" PRIu64 ",\n",
	        tot->placed_hi, tot->preempted);
	json_hist(f, "delay_high_us", &tot->delay_hi, false);
	json_hist(f, "delay_normal_us", &tot->delay_lo, true);
	fprintf(f, "  },\n");
}

/* "phases_us", "agents", "checks". */
static void json_tail(FILE *f, const run *R, const summary *S)
{
	const agent_stats *tot = S->tot;
	fprintf(f, "  \"phases_us\": {\n");
	json_hist(f, "queue", &tot->queue, false);
	json_hist(f, "admission", &tot->admission, false);
	json_hist(f, "sample", &tot->sample, false);
	json_hist(f, "commit", &tot->commit, false);
	json_hist(f, "sample_commit", &tot->place, true);
	fprintf(f, "  },\n  \"agents\": [");
	for (uint32_t i = 0; i < R->cfg.agents; i++)
		fprintf(f, "%s{\"placed\": %" PRIu64 ", \"conflicts\": %" PRIu64 "}", i ? ", " : "",
		        R->ag[i].st->placed, R->ag[i].st->conflicts);
	fprintf(f,
	        "],\n  \"checks\": {\"counts_add_up\": %s, \"counters_consistent\": %s, "
	        "\"queued_on_idle_cluster\": %" PRIu64 "}\n}\n",
	        S->adds_up ? "true" : "false", S->vrc == RUSK_OK ? "true" : "false", S->stuck);
}

/* Writes the JSON summary to R->json (opened by drv_setup); cli_out_close checks it. */
static void write_json(run *R, const summary *S)
{
	FILE *f = R->json;
	json_config(f, R);
	json_tasks(f, R, S);
	if (R->cfg.n_mix > 0)
		json_mix(f, R, S->mix);
	for (const drv_feature *const *ft = drv_features; *ft != NULL; ft++)
		if ((*ft)->json != NULL && (*ft)->json_early && (*ft)->on(R))
			(*ft)->json(f, R);
	json_quality(f, R, S);
	for (const drv_feature *const *ft = drv_features; *ft != NULL; ft++)
		if ((*ft)->json != NULL && !(*ft)->json_early && (*ft)->on(R))
			(*ft)->json(f, R);
	json_costs(f, R, S);
	json_tail(f, R, S);
}

int drv_report(run *R, bool interrupted)
{
	/* Static, not on the stack: its histograms are half a megabyte, and under a memory
	 * limit the main thread's stack could not grow by that much (the report of a run
	 * stopped for want of memory crashed here). One report per process, main thread. */
	static agent_stats tot;
	static rusk_hist delay;
	static uint64_t d_bins[D_BINS];
	static summary S;
	uint64_t left;
	int status = sum_agents(R, &tot, &delay, d_bins, &left);
	static rusk_hist mix[DRV_MAX_MIX];
	S = (summary){.tot = &tot,
	              .delay = &delay,
	              .d_bins = d_bins,
	              .mix = mix,
	              .interrupted = interrupted};
	summarize(R, left, &S);
	mix_delays(R, mix);
	if (!checks_pass(R, &S))
		status = RUSK_EXIT_FAIL;
	/* The files first, then the summary: a closed stdout (a pipe's reader gone, a
	 * terminal hung up) cannot lose them, and a repeated signal waits for them. */
	drv_stop_writing(true);
	if (R->json != NULL)
		write_json(R, &S);
	R->json = R->csv = NULL; /* the per-second series was flushed as it went */
	if (cli_outs_close(R->outs, DRV_OUT_GROUPS_CSV + 1) != 0)
		status = RUSK_EXIT_FAIL;
	if (drv_grp_plot(R) != 0) /* from the --groups-csv, once it is in place */
		status = RUSK_EXIT_FAIL;
	drv_stop_writing(false);
	print_tasks(R, &S);
	print_drain_cap(R, &S);
	print_delays(R, &S);
	print_mix(R, mix);
	print_quality(R, &S);
	for (const drv_feature *const *f = drv_features; *f != NULL; f++)
		if ((*f)->print != NULL && (*f)->on(R))
			(*f)->print(R);
	print_syncs_groups(R, &S);
	print_checks(R, &S);
	/* The summary is out before the teardown (RCU barrier, frees); a failure is reported
	 * at exit (main: cli_stdout_close). */
	if (R->out == stdout)
		cli_stdout_flush();
	else
		fflush(R->out);
	if (R->fail)
		return RUSK_EXIT_NOMEM;
	if (status == 0 && interrupted)
		return RUSK_EXIT_INTERRUPTED;
	return status;
}
