/* SPDX-License-Identifier: MIT */
/*
 * Internal layout of a cluster (core/kernel): machines, partitions, the master arrays, the
 * cluster's clock and its observer. The RU state words are ru_impl.h's, the vector
 * capacities vec_impl.h's, the snapshots snapshot_impl.h's. Not installed.
 *
 * Memory budget (issue: <= 32 bytes per RU at 100K machines x 16 RUs):
 *   per RU       8     state word          (hot: every commit/release CASes it)
 *                4     machine index       (read-only after build)
 *               10     tenant profile      (written by the holder only when non-zero)
 *                2     slot score          (read-only after build)
 *                0.125 free bit            (the bitmap snapshots copy)
 *                0.375 platform mask bits  (one bit per RU per platform type, static)
 *   per machine 64     one cache line: live state + static shape -> 4 bytes/RU at 16 RUs
 *   per partition 64, per platform 48: negligible
 * = 28.5 bytes per RU at 16 RUs per machine (asserted in tests/test_cluster.c).
 */
#ifndef RUSK_KERNEL_CLUSTER_IMPL_H
#define RUSK_KERNEL_CLUSTER_IMPL_H

#include <pthread.h>
#include <time.h>

#include "base/base.h"

struct rusk_mvec;
struct rusk_shape;
struct rusk_snap;
struct rusk_remote;

/* Interference sums: 10 lanes of 16 bits packed into 3 words (4 + 4 + 2 lanes), so a
 * commit adds a tenant's whole profile with 3 fetch-and-adds instead of 10. A lane never
 * leaves [0, 661 * 99]: every subtraction follows (happens-after) the addition it undoes,
 * so no borrow crosses lanes; modular 64-bit arithmetic keeps even undone misuse exact. */
#define RUSK_LANE_WORDS     3
#define RUSK_LANES_PER_WORD 4

typedef struct rusk_packed {
	uint64_t w[RUSK_LANE_WORDS];
} rusk_packed;

static inline rusk_packed rusk_pack_profile(const rusk_profile *p)
{
	rusk_packed r = {{0, 0, 0}};
	for (int i = 0; i < RUSK_N_RESOURCES; i++)
		r.w[i / RUSK_LANES_PER_WORD] |= (uint64_t)p->c[i]
		                                << (16 * (i % RUSK_LANES_PER_WORD));
	return r;
}

static inline uint32_t rusk_lane(const uint64_t *w, int i)
{
	return (uint32_t)(w[i / RUSK_LANES_PER_WORD] >> (16 * (i % RUSK_LANES_PER_WORD))) & 0xffffu;
}

/* Machine states (rusk_machine.state). */
enum { RUSK_M_UP = 0, RUSK_M_DRAINING = 1, RUSK_M_DOWN = 2 };

/* One machine: one cache line. interf is written by commits/releases on its RUs (relaxed
 * atomics: statistics that rusk_cluster_verify checks at quiescence); state by topology
 * changes; the rest once at build. Its free RU count is the popcount of its bits in the
 * free bitmap. */
typedef struct rusk_machine {
	uint64_t interf[RUSK_LANE_WORDS]; /* live, packed sums */
	uint32_t state;                   /* live: RUSK_M_* */
	uint32_t first_ru;
	uint32_t first_bit; /* bit of first_ru in the free bitmap */
	uint32_t mem_mib;
	uint32_t rack;
	uint32_t cell;
	uint32_t source_row;
	uint32_t replica;
	uint16_t n_rus;
	uint16_t gpus;
	uint16_t partition;
	uint8_t platform;
	uint8_t spare; /* build only: starts DOWN whatever n_up_initial says */
} RUSK_ALIGNED(RUSK_CACHELINE) rusk_machine;
_Static_assert(sizeof(rusk_machine) == RUSK_CACHELINE, "one machine per cache line");

/* Partition counter: free RUs (low 24 bits) and the sum of their slot scores in
 * milli-units (high 40 bits) in one word, so one fetch-and-add keeps both. Neither field
 * goes negative (see ru.c), so no borrow crosses between them. */
#define RUSK_PC_FREE_BITS      24
#define RUSK_PC_FREE_MASK      ((UINT64_C(1) << RUSK_PC_FREE_BITS) - 1)
#define RUSK_MAX_PARTITION_RUS ((uint32_t)RUSK_PC_FREE_MASK)
/* rusk_partition.vgen's machine field: a partition's machines are fewer than its RUs. */
#define RUSK_VGEN_MACH_BITS    RUSK_PC_FREE_BITS
#define RUSK_VGEN_MACH_MASK    RUSK_PC_FREE_MASK

static inline uint64_t rusk_pc_delta(uint16_t score)
{
	return 1 + ((uint64_t)score << RUSK_PC_FREE_BITS);
}

/* A partition's bits start on a multiple of this: whole cache lines, so agents committing
 * in different partitions never write the same bitmap line. */
#define RUSK_PART_ALIGN_BITS (8 * RUSK_CACHELINE)

/* One partition, padded so agents committing in different partitions share no line. */
typedef struct rusk_partition {
	uint64_t counter;       /* live, relaxed: free | score sum */
	struct rusk_snap *snap; /* RCU-published snapshot (snapshot.c) */
	uint64_t version;       /* live: last snapshot version handed out */
	uint32_t first_cell, n_cells;
	uint32_t first_machine, n_machines;
	uint32_t first_ru, n_rus;
	uint32_t first_bit; /* RUSK_PART_ALIGN_BITS-aligned (cluster.c) */
	uint64_t vgen;      /* live (vec.c, vgen_bump): the changes of the vector words of p's
	                     * machines, counted from bit RUSK_VGEN_MACH_BITS up, and the last
	                     * one's machine (from first_machine) below: a vector listing is
	                     * reused while it holds, patched after one change (choose.c) */
} RUSK_ALIGNED(RUSK_CACHELINE) rusk_partition;
_Static_assert(sizeof(rusk_partition) == RUSK_CACHELINE, "one partition per cache line");

#define RUSK_PLATFORM_NAME 40
typedef struct rusk_platform_rec {
	char name[RUSK_PLATFORM_NAME];
	double speed;
} rusk_platform_rec;

struct rusk_cluster {
	uint64_t *ru_word;         /* [n_rus] state words */
	uint32_t *ru_machine;      /* [n_rus] */
	rusk_profile *ru_tenant;   /* [n_rus] valid while the word's P bit is set */
	uint16_t *ru_score;        /* [n_rus] slot score in milli-units */
	uint64_t *free_bits;       /* [n_words] 1 = free; partitions start on word boundaries */
	uint64_t *plat_bits;       /* [n_platforms][n_words] 1 = RU of that platform type */
	uint64_t *ru_vec;          /* [n_rus] share records (vec.c) */
	struct rusk_mvec *mvec;    /* [n_machines] vector capacities (vec.c) */
	struct rusk_shape *shapes; /* [n_shapes] distinct machine shapes, every slot (vec.c) */
	uint64_t *mshape; /* [n_machines] static shape, packed: mem_mib | gpus << 32 | platform
	                   * << 40 (vec.c): 8 bytes a machine, so a feasibility check of a
	                   * drawn candidate stays in cache at 100K machines */
	uint32_t *mtop;   /* [n_rus] static: mtop[first_ru + k - 1] = the sum of machine's k best
	                   * slot scores (vec.c), the slot-score value of a wholly free machine
	                   * and a bound on any other (choose.c, top_mean_scores) */
	uint16_t *mord;   /* [n_rus] static: mord[first_ru + k] = the offset in its machine of
	                   * the RU with the k-th best slot score (vec.c; the order of mtop), so
	                   * the best m free RUs are found by a walk from the best (choose.c) */
	uint64_t *mchunk; /* static: the per-model chunk index (vec_impl.h, rusk_chunks_) */
	uint32_t *mchunk_off; /* [n_parts * n_platforms + 1]: where (p, k)'s chunks start */
	bool *mchunk_full;    /* [n_parts * n_platforms]: (p, k)'s chunks all of 16 RUs */
	const struct rusk_machine_spec *specs; /* build only: per-RU scores (cluster.c) */
	uint32_t n_shapes;
	rusk_machine *machines; /* [n_machines] */
	rusk_partition *parts;  /* [n_parts] */
	uint32_t n_rus, n_machines, n_parts, n_racks, n_cells, n_platforms, n_words;
	uint32_t n_up_initial; /* machines [n_up_initial, n_machines) start DOWN (spares) */
	uint32_t machines_per_rack, racks_per_cell;
	rusk_platform_rec platforms[RUSK_MAX_PLATFORMS];
	const rusk_clock *clock;
	uint64_t snap_reuse_ns; /* a snapshot younger than this is reused by view syncs */
	uint64_t snap_allocated, snap_freed; /* live, relaxed: statistics */
	uint64_t views_made; /* live, relaxed: a stream number for each view's tie generator */
	double score_mean, score_sd;
	double max_speed;   /* fastest platform's speed (quality scaling) */
	uint16_t max_score; /* highest slot score (weighted sampling bound) */
	/* Most RUs one task can ever get, by rusk_placement_pref (any, machine, rack, spread):
	 * the cluster's RUs, its largest machine, its largest rack, its machine count. Every
	 * machine slot counts, spares and machines now down included (cluster.c). */
	uint32_t fit[4];
	pthread_mutex_t central_lock;    /* central's and global-lock's one lock (central.c) */
	const struct rusk_observer *obs; /* at most one (admission control), set at quiescence */
	/* The scheduling loop attached to the cluster (at most one dispatcher, rusk/dispatch.h):
	 * rusk_machine_fail reports every revocation to it as well as to its caller. Set and
	 * cleared at quiescence (dispatcher create / destroy, never during a topology change),
	 * read plain by rusk_machine_fail. */
	rusk_revoke_fn loop_revoked;
	void *loop_ctx;
	/* A remote master state (remote.h), or NULL (the in-memory default): views sync from
	 * it, commits and releases go through it. Set and cleared at quiescence (attach before
	 * the agents start, detach after they stop), read plain. */
	struct rusk_remote *remote;
	size_t bytes_total, bytes_array, bytes_snap_words;
};

/* The cluster's clock. The default, CLOCK_MONOTONIC, is read here directly: a decision
 * reads the clock three times per attempt, and the indirect call through rusk_clock cost
 * about as much as the read. Other clocks (the simulator's) go through their function. */
static inline uint64_t rusk_now_(const rusk_cluster *c)
{
	if (RUSK_LIKELY(c->clock == rusk_monotonic_)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
	}
	return c->clock->now_ns(c->clock->ctx);
}

static inline uint32_t rusk_ru_bit(const rusk_cluster *c, uint32_t ru, const rusk_machine *m)
{
	(void)c;
	return m->first_bit + (ru - m->first_ru);
}

/* Popcount of bits [first, first + n) of a bitmap read with relaxed loads. */
static inline uint32_t rusk_count_bits_(const uint64_t *bits, uint32_t first, uint32_t n)
{
	uint32_t total = 0;
	while (n > 0) {
		uint32_t off = first % 64, take = 64 - off < n ? 64 - off : n;
		uint64_t w = rusk_load64(&bits[first / 64], RUSK_RELAXED) >> off;
		if (take < 64)
			w &= (UINT64_C(1) << take) - 1;
		total += (uint32_t)__builtin_popcountll(w);
		first += take;
		n -= take;
	}
	return total;
}

/* Free RUs of machine m: popcount of its bits (relaxed loads: a statistic). */
static inline uint32_t rusk_machine_free_(const rusk_cluster *c, const rusk_machine *m)
{
	return rusk_count_bits_(c->free_bits, m->first_bit, m->n_rus);
}

/* Shared build steps (cluster.c), used by the parameter and openb builders. */
int rusk_cluster_alloc_(rusk_cluster **out, uint32_t n_machines, uint64_t n_rus,
                        const rusk_cluster_params *p, char *err, size_t errlen);
int rusk_cluster_layout_(rusk_cluster *c, const rusk_cluster_params *p, char *err, size_t errlen);
int rusk_cluster_check_topology_(const rusk_cluster_params *p, uint32_t n_machines, char *err,
                                 size_t errlen);
int rusk_cluster_check_scores_(const rusk_cluster_params *p, char *err, size_t errlen);
/*
 * A cluster observer: told, on the changing thread, after each change of a machine's free
 * RUs (and of its contention vector when vec_changed), and destroyed with the cluster.
 * The master array and topology changes call the hook and know nothing of what observes
 * (admission control, admit.c, is the one observer today: cluster -> observer, never
 * cluster -> admit -> cluster). Attached and detached at quiescence (no commit, release
 * or topology change in flight); the pointer is stored with release and read relaxed by
 * the changing threads, which started after the attach.
 */
typedef struct rusk_observer {
	void (*machine_changed)(void *ctx, uint32_t mi, bool vec_changed);
	void (*destroy)(void *ctx);
	void *ctx;
} rusk_observer;
static inline void rusk_observe_(rusk_cluster *c, uint32_t mi, bool vec_changed)
{
	const rusk_observer *o = c->obs;
	if (o != NULL)
		o->machine_changed(o->ctx, mi, vec_changed);
}
/* Attaches the scheduling loop's revocation hook to c (topology.c): RUSK_EBUSY when one is
 * attached. Detach with the same ctx; at quiescence only (see rusk_cluster.loop_ctx). */
int rusk_cluster_attach_loop_(rusk_cluster *c, rusk_revoke_fn revoked, void *ctx);
void rusk_cluster_detach_loop_(rusk_cluster *c, void *ctx);

#endif /* RUSK_KERNEL_CLUSTER_IMPL_H */
