/* SPDX-License-Identifier: MIT */
/*
 * rusk sim's work-based decision cost (issue 29, item 2; `rusk sim --cost work`, the default).
 *
 * Model. A decision of an agent is charged, in virtual time, for the work it did:
 *
 *   cost = K x ([task] + fixed + per_examined x examined + per_partition x partitions
 *               [+ commit])
 *
 * where examined and partitions are the decision's own counters (rusk_placement.examined:
 * RUs drawn, weighted draws rejected, preferred RUs looked up, partition probes;
 * .partitions: partitions ranked or visited), the commit term is charged when the
 * decision chose RUs (the commit attempt that follows it), the task term -- the
 * dispatcher's work around a decision: taking the task from its queue, admission, its
 * placement event and end -- on a task's first decision after it was taken from its queue
 * (not on a retry after a lost commit, which only decides and commits again), and the
 * per-unit costs below
 * are the real kernel's, measured by bench/bench_cost.c and fitted by perf/cost_fit.py
 * (ctest cost_model_fit checks that these constants are that fit of the committed
 * perf/bench/bench_cost.json). There is one fit per quality model (a candidate valued by
 * Tarcil's Q costs more than one valued by its slot score) and per family of decisions:
 * latency (Latency-first, whose one-RU path draws in batches) and sampling (Quality-first's
 * ranked partitions and weighted draws; the random baseline).
 *
 * Time scale. K maps the kernel's nanoseconds onto the simulated scheduler's: it is chosen
 * so that the reference decision -- a task taken from its queue, Latency-first examining
 * RUSK_SIMCOST_REF_EXAMINED RUs in one partition and committing once, under the run's
 * quality model -- costs
 * --decision-us (default 250: ParSync §4.3, "a scheduler takes 0.25ms to schedule a single
 * task"). 32 is Tarcil's cap on R (§6.1 "we cap sample size to R = 32"), what the
 * guarantee asks for at ParSync's loads. So --decision-us keeps its meaning for a plain
 * decision, and every other decision costs what its work costs relative to it: a
 * Quality-first decision that ranks all 20 partitions and rejects half its weighted draws
 * costs several times a Latency-first one, as ParSync §6.2 reports ("Quality-first has a
 * higher scheduling overhead as it checks all partitions").
 *
 * What it leaves out: the central baseline keeps the flat --decision-us (its scan happens
 * at its commit event, after the agent was charged); view syncs keep --sync-latency-us per
 * partition; a vector task's decision counts its draws but no partitions.
 */
#ifndef RUSK_CLI_SIMCOST_H
#define RUSK_CLI_SIMCOST_H

#define RUSK_SIMCOST_REF_EXAMINED 32

/* perf/cost_fit.py perf/bench/bench_cost.json (CPU ns; `make bench` writes the JSON: medians
 * of 5 repetitions of bench/bench_cost.c on the 2-core development machine). */
#define RUSK_SIMCOST_COMMIT_NS                          39.812
#define RUSK_SIMCOST_TASK_NS                            172.525
#define RUSK_SIMCOST_SCORE_LATENCY_FIXED_NS             60.551
#define RUSK_SIMCOST_SCORE_LATENCY_EXAMINED_NS          2.586
#define RUSK_SIMCOST_SCORE_LATENCY_PARTITION_NS         0.000
#define RUSK_SIMCOST_SCORE_SAMPLING_FIXED_NS            0.000
#define RUSK_SIMCOST_SCORE_SAMPLING_EXAMINED_NS         28.599
#define RUSK_SIMCOST_SCORE_SAMPLING_PARTITION_NS        12.735
#define RUSK_SIMCOST_INTERFERENCE_LATENCY_FIXED_NS      0.000
#define RUSK_SIMCOST_INTERFERENCE_LATENCY_EXAMINED_NS   31.944
#define RUSK_SIMCOST_INTERFERENCE_LATENCY_PARTITION_NS  337.690
#define RUSK_SIMCOST_INTERFERENCE_SAMPLING_FIXED_NS     0.000
#define RUSK_SIMCOST_INTERFERENCE_SAMPLING_EXAMINED_NS  119.287
#define RUSK_SIMCOST_INTERFERENCE_SAMPLING_PARTITION_NS 320.156

/* One family's per-unit costs (kernel ns). */
typedef struct simcost_unit {
	double fixed, examined, partition;
} simcost_unit;

/* The constants for a run: latency and sampling families of its quality model. */
typedef struct simcost {
	simcost_unit lat, smp;
	double commit, task;
	double k; /* virtual ns per kernel ns (the time scale above) */
} simcost;

/* The cost model of a run under quality model `interference` (else slot scores) whose
 * reference decision costs ref_ns of virtual time. */
static inline simcost simcost_make(bool interference, double ref_ns)
{
	simcost c;
	if (interference) {
		c.lat = (simcost_unit){RUSK_SIMCOST_INTERFERENCE_LATENCY_FIXED_NS,
		                       RUSK_SIMCOST_INTERFERENCE_LATENCY_EXAMINED_NS,
		                       RUSK_SIMCOST_INTERFERENCE_LATENCY_PARTITION_NS};
		c.smp = (simcost_unit){RUSK_SIMCOST_INTERFERENCE_SAMPLING_FIXED_NS,
		                       RUSK_SIMCOST_INTERFERENCE_SAMPLING_EXAMINED_NS,
		                       RUSK_SIMCOST_INTERFERENCE_SAMPLING_PARTITION_NS};
	} else {
		c.lat = (simcost_unit){RUSK_SIMCOST_SCORE_LATENCY_FIXED_NS,
		                       RUSK_SIMCOST_SCORE_LATENCY_EXAMINED_NS,
		                       RUSK_SIMCOST_SCORE_LATENCY_PARTITION_NS};
		c.smp = (simcost_unit){RUSK_SIMCOST_SCORE_SAMPLING_FIXED_NS,
		                       RUSK_SIMCOST_SCORE_SAMPLING_EXAMINED_NS,
		                       RUSK_SIMCOST_SCORE_SAMPLING_PARTITION_NS};
	}
	c.commit = RUSK_SIMCOST_COMMIT_NS;
	c.task = RUSK_SIMCOST_TASK_NS;
	double ref = c.task + c.lat.fixed + c.lat.examined * RUSK_SIMCOST_REF_EXAMINED +
	             c.lat.partition + c.commit;
	c.k = ref > 0 ? ref_ns / ref : 0;
	return c;
}

/* Virtual ns a decision costs: the task's dispatcher work when it was just taken from its
 * queue (first), its family's (sampling: Quality-first or random) fixed part and work
 * (examined RUs, partitions), and the commit attempt that follows when it chose RUs. */
static inline double simcost_decision(const simcost *c, bool first, bool sampling,
                                      uint32_t examined, uint32_t partitions, bool commits)
{
	const simcost_unit *u = sampling ? &c->smp : &c->lat;
	return c->k * ((first ? c->task : 0) + u->fixed + u->examined * examined +
	               u->partition * partitions + (commits ? c->commit : 0));
}

#endif
