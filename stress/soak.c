/* SPDX-License-Identifier: MIT */
/*
 * soak: the kernel at scale, everything at once. 100,000 machines x 16 RUs, 64 GiB and 8
 * GPUs by default; N agents (rusk_agent, DiffSync, Latency-first) place mixed single, gang
 * and vector tasks (a third ask for memory and a GPU share or whole GPUs, on one machine)
 * from their views and release them after a hold; a topology thread fails, drains and
 * restores machines; a checker thread recounts live invariants every 200 ms.
 *
 * Checks (pass rule: all 0):
 *   live     sum of partition free counters vs popcount of the free bitmap differ by at
 *            most the RUs in flight (agents x max gang + topology walk); RUs caught mid-
 *            commit or mid-release (C/R set) at most agents x max gang
 *   owned    shadow table: an RU granted to a second task while the first still holds it
 *            (revocations clear the shadow through the callback, as in test_topology)
 *   tasks    every task submitted is completed, or re-queued after a revocation and
 *            completed later, or still queued at the end: submitted = completed + queued
 *   vector   no machine's free memory above its capacity, no GPU above 1000 milli in use
 *            (live); after the run every machine's memory and GPUs free again and the
 *            share records equal the counters (rusk_cluster_verify)
 *   drain    after the run: all machines up, every RU free, counters equal a recount
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rusk/rusk.h>

#include "args.h"
#include "base/rng.h"
#include "kernel/ru_impl.h"
#include "kernel/vec_impl.h"

#define MAX_GANG 4
#define HOLD     4096

typedef struct task {
	uint64_t id;
	uint32_t n;
	rusk_lease l[MAX_GANG];
} task;

typedef struct agent {
	pthread_t tid;
	uint32_t index;
	uint64_t submitted, completed, requeued, pending_end, conflicts, twice, placed, vec;
} agent;

static rusk_cluster *cl;
static uint64_t *shadow;
static uint8_t *revoked; /* per task-id slot: set by the revocation callback */
static uint32_t n_agents;
static uint64_t ids_per_agent;
static double seconds;
static uint64_t seed;
static int stop;
static pthread_barrier_t start;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline size_t slot_of(uint64_t task)
{
	return (size_t)((task - 1) % (ids_per_agent * n_agents));
}

static void on_revoke(uint64_t t, rusk_lease l, void *ctx)
{
	uint64_t *n = ctx;
	(*n)++;
	__atomic_store_n(&revoked[slot_of(t)], 1, __ATOMIC_SEQ_CST);
	uint64_t e = t;
	__atomic_compare_exchange_n(&shadow[l.ru], &e, 0, false, __ATOMIC_SEQ_CST,
	                            __ATOMIC_SEQ_CST);
}

/* Claim after commit; a revocation may land first (see test_topology.c's claim()). */
static void claim(agent *a, uint32_t ru, uint64_t t)
{
	for (unsigned spins = 0;; spins++) {
		uint64_t e = 0;
		if (__atomic_compare_exchange_n(&shadow[ru], &e, t, false, __ATOMIC_SEQ_CST,
		                                __ATOMIC_SEQ_CST))
			break;
		if (!__atomic_load_n(&revoked[slot_of(e)], __ATOMIC_SEQ_CST) || spins > 1000000) {
			a->twice++;
			return;
		}
		sched_yield();
	}
	if (__atomic_load_n(&revoked[slot_of(t)], __ATOMIC_SEQ_CST)) {
		uint64_t e = t;
		__atomic_compare_exchange_n(&shadow[ru], &e, 0, false, __ATOMIC_SEQ_CST,
		                            __ATOMIC_SEQ_CST);
	}
}

/* Ends a held task: released (completed) or found revoked (re-queued). */
static bool finish(agent *a, task *k)
{
	bool ok = true;
	for (uint32_t i = 0; i < k->n; i++) {
		uint64_t e = k->id;
		__atomic_compare_exchange_n(&shadow[k->l[i].ru], &e, 0, false, __ATOMIC_SEQ_CST,
		                            __ATOMIC_SEQ_CST);
		if (rusk_ru_release(cl, k->id, k->l[i]) != RUSK_OK)
			ok = false; /* revoked: its machine failed */
	}
	if (!ok) {
		/* The task lost its RUs: release what it still holds was done above; it runs
		 * again from scratch under a fresh id slot is not needed, same id is fine. */
		__atomic_store_n(&revoked[slot_of(k->id)], 0, __ATOMIC_SEQ_CST);
		a->requeued++;
	} else {
		a->completed++;
	}
	k->n = 0;
	return ok;
}

static void *agent_main(void *arg)
{
	agent *a = arg;
	rusk_thread_register();
	rusk_sync_params sp = {.policy = RUSK_SYNC_DIFF,
	                       .partitions = rusk_cluster_partitions(cl),
	                       .agents = n_agents,
	                       .gap_ns = 100000000ull,
	                       .start_ns = rusk_clock_now(rusk_cluster_clock(cl))};
	rusk_agent_params ap;
	rusk_agent_params_init(&ap, &sp, a->index);
	ap.seed = seed;
	rusk_agent *ag;
	if (rusk_agent_create(cl, &ap, &ag, NULL, 0) != RUSK_OK)
		return NULL;
	rusk_rng r;
	rusk_rng_seed(&r, seed, 900 + a->index);
	task *win = calloc(HOLD, sizeof *win);
	uint64_t *queue = calloc(HOLD, sizeof *queue); /* re-queued task ids */
	size_t q_n = 0, head = 0;
	uint64_t next = 0;
	pthread_barrier_wait(&start);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		rusk_view_tick(rusk_agent_view(ag), rusk_clock_now(rusk_cluster_clock(cl)));
		task *k = &win[head];
		head = (head + 1) % HOLD;
		if (k->n != 0 && !finish(a, k) && q_n < HOLD)
			queue[q_n++] = k->id; /* placed again below, before new work */
		uint64_t id;
		if (q_n > 0) {
			id = queue[--q_n];
		} else {
			id = 1 + a->index * ids_per_agent + (next++ % ids_per_agent);
			a->submitted++;
		}
		rusk_task t = {
		        .id = id,
		        .rus = 1 + (rusk_rng_below(&r, 4) == 0 ? rusk_rng_below(&r, MAX_GANG) : 0),
		        .gang = true};
		/* Half the tasks cause interference: machines' contention vectors, hence their
		 * LSH buckets, change on their commits and releases. */
		if (rusk_rng_below(&r, 2) == 0)
			for (int c = 0; c < RUSK_N_RESOURCES; c++)
				t.profile.c[c] = (uint8_t)rusk_rng_below(&r, 100);
		/* A third are vector tasks: memory and a GPU share or whole GPUs, one machine. */
		if (rusk_rng_below(&r, 3) == 0) {
			bool whole = rusk_rng_below(&r, 2) == 0;
			t.placement = RUSK_PLACE_MACHINE;
			t.vec = (rusk_vec_demand){
			        .mem_mib = 1024 * (1 + rusk_rng_below(&r, 16)),
			        .gpus = (uint16_t)(whole ? 1 + rusk_rng_below(&r, 2) : 1),
			        .gpu_milli =
			                (uint16_t)(whole ? 1000 : 100 + rusk_rng_below(&r, 800))};
		}
		rusk_placement pl;
		if (rusk_agent_place(ag, &t, k->l, &pl) == RUSK_OK) {
			k->id = id;
			k->n = pl.placed;
			a->placed++;
			a->vec += rusk_vec_any(&t.vec);
			for (uint32_t i = 0; i < k->n; i++)
				claim(a, k->l[i].ru, id);
		} else if (q_n < HOLD) {
			queue[q_n++] = id; /* given back: keep it */
		}
		a->conflicts += pl.conflicts;
	}
	for (size_t i = 0; i < HOLD; i++)
		if (win[i].n != 0 && !finish(a, &win[i]))
			q_n++;
	a->pending_end = q_n;
	free(win);
	free(queue);
	rusk_agent_destroy(ag);
	rusk_thread_unregister();
	return NULL;
}

typedef struct checker {
	pthread_t tid;
	uint64_t rounds, over_slack, transient_max, vec_bad;
	int64_t worst;
} checker;

/* Machines whose live memory or GPU counters leave their range (0 while correct). */
static uint64_t vec_out_of_range(void)
{
	uint64_t bad = 0;
	for (uint32_t m = 0; m < rusk_cluster_machines(cl); m++) {
		rusk_machine_vec v;
		rusk_machine_vec_get(cl, m, &v);
		bool off = v.mem_free_mib > v.mem_mib;
		for (uint32_t g = 0; g < v.gpus; g++)
			off |= v.gpu_free_milli[g] > RUSK_GPU_MILLI;
		bad += off;
	}
	return bad;
}

static void *check_main(void *arg)
{
	checker *k = arg;
	const int64_t slack = (int64_t)n_agents * MAX_GANG + RUSK_MAX_RUS_PER_MACHINE;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		int64_t bits = 0, counted = (int64_t)rusk_cluster_free_rus(cl);
		for (uint32_t w = 0; w < cl->n_words; w++)
			bits += __builtin_popcountll(
			        __atomic_load_n(&cl->free_bits[w], __ATOMIC_RELAXED));
		uint64_t transient = 0;
		for (uint32_t ru = 0; ru < cl->n_rus; ru++)
			transient += (__atomic_load_n(&cl->ru_word[ru], __ATOMIC_RELAXED) &
			              RUSK_W_TRANSIENT) != 0;
		int64_t d = bits > counted ? bits - counted : counted - bits;
		if (d > k->worst)
			k->worst = d;
		k->over_slack += d > slack;
		if (transient > k->transient_max)
			k->transient_max = transient;
		k->vec_bad += vec_out_of_range();
		k->rounds++;
		struct timespec ts = {0, 200000000L};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	uint32_t machines = 100000, agents = 4;
	seconds = 10;
	seed = 1;
	const stress_arg opts[] = {{"--machines", STRESS_U32, &machines},
	                           {"--agents", STRESS_U32, &agents},
	                           {"--seconds", STRESS_DOUBLE, &seconds},
	                           {"--seed", STRESS_U64, &seed}};
	const char *bad = stress_args_parse(argc, argv, opts, sizeof opts / sizeof opts[0]);
	if (bad) {
		fprintf(stderr,
		        "soak: bad or missing value for %s\n"
		        "usage: soak [--machines N] [--agents N] [--seconds S] [--seed N]\n",
		        bad);
		return 2;
	}
	if (machines < 400 || agents < 1 || agents > 64 || seconds <= 0) {
		fprintf(stderr, "soak: --machines >= 400, --agents 1..64, --seconds > 0\n");
		return 2;
	}
	rusk_cluster_params p;
	rusk_cluster_params_init(&p);
	p.machines = machines;
	p.partitions = agents < 20 ? 20 : agents;
	p.gpus_per_machine = 8;
	char err[256];
	if (rusk_cluster_create(&p, &cl, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "soak: %s\n", err);
		return 2;
	}
	/* Admission statistics ride along: every commit, release and topology change folds
	 * into the LSH bucket counts, which must equal a full recount at the end. */
	rusk_admit *adm = NULL;
	if (rusk_admit_attach(cl, NULL, &adm, err, sizeof err) != RUSK_OK) {
		fprintf(stderr, "soak: admission: %s\n", err);
		return 2;
	}
	n_agents = agents;
	ids_per_agent = 1u << 22;
	uint32_t n_rus = rusk_cluster_rus(cl);
	shadow = calloc(n_rus, sizeof *shadow);
	revoked = calloc(ids_per_agent * agents, 1);
	agent *A = calloc(agents, sizeof *A);
	checker chk = {0};
	pthread_barrier_init(&start, NULL, agents);
	double t0 = now_s();
	for (uint32_t i = 0; i < agents; i++) {
		A[i].index = i;
		pthread_create(&A[i].tid, NULL, agent_main, &A[i]);
	}
	pthread_create(&chk.tid, NULL, check_main, &chk);
	/* Topology: fail, drain or restore a random machine every 5 ms. */
	rusk_rng r;
	rusk_rng_seed(&r, seed, 77);
	uint64_t changes = 0, revocations = 0;
	rusk_thread_register();
	while (now_s() < t0 + seconds) {
		uint32_t m = rusk_rng_below(&r, machines);
		switch (rusk_rng_below(&r, 4)) {
		case 0: rusk_machine_fail(cl, m, on_revoke, &revocations); break;
		case 1: rusk_machine_drain(cl, m); break;
		default: rusk_machine_up(cl, m); break;
		}
		changes++;
		struct timespec ts = {0, 5000000L};
		nanosleep(&ts, NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (uint32_t i = 0; i < agents; i++)
		pthread_join(A[i].tid, NULL);
	pthread_join(chk.tid, NULL);
	for (uint32_t m = 0; m < machines; m++)
		rusk_machine_up(cl, m);
	double dt = now_s() - t0;
	uint64_t submitted = 0, completed = 0, requeued = 0, pending = 0, twice = 0, placed = 0,
	         conflicts = 0, vec = 0;
	for (uint32_t i = 0; i < agents; i++) {
		submitted += A[i].submitted;
		completed += A[i].completed;
		requeued += A[i].requeued;
		pending += A[i].pending_end;
		twice += A[i].twice;
		placed += A[i].placed;
		conflicts += A[i].conflicts;
		vec += A[i].vec;
	}
	/* Every machine's memory and GPUs free again once every task has ended. */
	uint64_t vec_left = 0;
	for (uint32_t m = 0; m < machines; m++) {
		rusk_machine_vec v;
		rusk_machine_vec_get(cl, m, &v);
		bool busy = v.mem_free_mib != v.mem_mib;
		for (uint32_t g = 0; g < v.gpus; g++)
			busy |= v.gpu_free_milli[g] != RUSK_GPU_MILLI;
		vec_left += busy;
	}
	uint64_t held = 0, shadow_left = 0;
	for (uint32_t ru = 0; ru < n_rus; ru++) {
		rusk_ru_info ri;
		rusk_ru_state(cl, ru, &ri);
		held += ri.owner != 0;
		shadow_left += shadow[ru] != 0;
	}
	int vrc = rusk_cluster_verify(cl, err, sizeof err);
	uint64_t bc[RUSK_ADMIT_MAX_BUCKETS], br[RUSK_ADMIT_MAX_BUCKETS], bucket_off = 0,
	                                                                 bucket_sum = 0;
	uint32_t nb = rusk_admit_buckets(adm);
	rusk_admit_counts(adm, bc, nb);
	rusk_admit_recount(adm, br, nb);
	for (uint32_t b = 0; b < nb; b++) {
		bucket_off += bc[b] != br[b];
		bucket_sum += bc[b];
	}
	bucket_off += bucket_sum != n_rus;
	/* completed + re-queued-and-pending account for every submission */
	bool accounted = submitted == completed + pending;
	uint64_t violations = chk.over_slack + twice + held + shadow_left + (vrc != RUSK_OK) +
	                      bucket_off + !accounted + (rusk_cluster_free_rus(cl) != n_rus) +
	                      chk.vec_bad + vec_left + (vec == 0);
	printf("soak: %u machines, %u RUs, %u agents, %.1f s, seed %" PRIu64 "\n", machines, n_rus,
	       agents, dt, seed);
	printf("  tasks             %" PRIu64 " submitted, %" PRIu64 " placements, %" PRIu64
	       " completed, %" PRIu64 " re-queued after revocation, %" PRIu64
	       " queued at the end\n",
	       submitted, placed, completed, requeued, pending);
	printf("  conflicts         %" PRIu64 "\n", conflicts);
	printf("  vector tasks      %" PRIu64 " placements with memory and GPU shares; machines "
	       "out of range live %" PRIu64 ", not all free after the run %" PRIu64 "\n",
	       vec, chk.vec_bad, vec_left);
	printf("  faults            %" PRIu64
	       " topology changes (fail/drain/up every 5 ms), %" PRIu64 " tenures revoked\n",
	       changes, revocations);
	printf("  live checks       %" PRIu64 " rounds; counter vs bitmap gap max %" PRId64
	       " RUs (%" PRIu64 " over slack); RUs in flight max %" PRIu64 "\n",
	       chk.rounds, chk.worst, chk.over_slack, chk.transient_max);
	printf("  buckets           %u LSH buckets hold %" PRIu64
	       " free RUs; maintained counts equal a full recount: %s\n",
	       nb, bucket_sum, bucket_off == 0 ? "yes" : "NO");
	printf("  violations        %" PRIu64 " (granted twice %" PRIu64
	       ", held after drain %" PRIu64 ", shadow left %" PRIu64
	       ", unaccounted %s, recount %s)\n",
	       violations, twice, held, shadow_left, accounted ? "0" : "YES",
	       vrc == RUSK_OK ? "ok" : err);
	printf("%s\n", violations == 0 ? "PASS" : "FAIL");
	rusk_rcu_barrier();
	rusk_thread_unregister();
	rusk_cluster_destroy(cl);
	free(shadow);
	free(revoked);
	free(A);
	return violations == 0 ? 0 : 1;
}
