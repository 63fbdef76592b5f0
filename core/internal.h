/* SPDX-License-Identifier: MIT */
/*
 * Internal layout of a cluster and its master RU array. Not installed.
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
#ifndef RUSK_CORE_INTERNAL_H
#define RUSK_CORE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <rusk/rusk.h>

#include "atomic.h"
#include "compiler.h"

/*
 * State word of one RU:  owner (40 bits) | R (1) | C (1) | P (1) | gen (21 bits)
 *   owner 0        free
 *   owner T        held by task T
 *   owner OFFLINE  its machine is down, draining or not yet added: never free
 *   C              the committer is still accounting (bitmap, counters, profile); it
 *                  clears C with a plain store-release when done
 *   R              the holder is releasing it (one releaser wins this bit; the word then
 *                  goes to free or OFFLINE with a plain store-release)
 *   P              the holder's non-zero interference profile is in ru_tenant and in the
 *                  machine's sums
 *   gen            advances on every release or revocation, so a lease {ru, gen} names
 *                  one tenure of one RU and a stale lease cannot end a later one (ABA).
 * Only the thread that set C or R changes a word that has it; everybody else (topology
 * changes) waits for it to clear, so the accounting of one tenure is never interleaved
 * with another transition of the same RU.
 */
#define RUSK_W_OWNER_SHIFT  24
#define RUSK_W_RELEASING    (UINT64_C(1) << 23)
#define RUSK_W_COMMITTING   (UINT64_C(1) << 22)
#define RUSK_W_PROFILE      (UINT64_C(1) << 21)
#define RUSK_W_TRANSIENT    (RUSK_W_RELEASING | RUSK_W_COMMITTING)
#define RUSK_W_GEN          ((uint64_t)RUSK_GEN_MASK)
#define RUSK_OWNER_OFFLINE  ((UINT64_C(1) << 40) - 1)
#define RUSK_W_OFFLINE(gen) ((RUSK_OWNER_OFFLINE << RUSK_W_OWNER_SHIFT) | (gen))
_Static_assert(RUSK_OWNER_OFFLINE == RUSK_OWNER_NONE, "public and internal offline owner");

static inline uint32_t rusk_gen_next(uint64_t w)
{
	return (uint32_t)((w + 1) & RUSK_W_GEN);
}

static inline uint64_t rusk_w_owner(uint64_t w)
{
	return w >> RUSK_W_OWNER_SHIFT;
}
static inline uint32_t rusk_w_gen(uint64_t w)
{
	return (uint32_t)(w & RUSK_W_GEN);
}

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

/*
 * Vector capacities of one machine (vec.c): free memory and the milli-GPU in use on each
 * GPU, beside the RUs. One cache line. The live words change only by CAS (a take, which
 * checks the capacity) and fetch-and-add (a give-back of shares a record proves held).
 * GPU g is the 16-bit lane g % 4 of gpu_used[g / 4]; a lane stays in 0..1000, so no
 * give-back borrows across lanes.
 */
#define RUSK_GPU_WORDS 2
#define RUSK_GPU_LANES 4
typedef struct rusk_mvec {
	uint64_t mem_free;                 /* live: MiB */
	uint64_t gpu_used[RUSK_GPU_WORDS]; /* live: milli-GPU in use, per GPU */
	uint32_t mem_mib;                  /* capacity, static */
	uint8_t n_gpus;                    /* static */
	uint8_t pad_[35];
} RUSK_ALIGNED(RUSK_CACHELINE) rusk_mvec;
_Static_assert(sizeof(rusk_mvec) == RUSK_CACHELINE, "one machine's vector per cache line");

/*
 * Share record of one tenure (rusk_cluster.ru_vec, one per RU): 0, or what the task holds on
 * the RU's machine besides RUs, kept on the lowest RU of its placement there:
 *   bit 63 set | gpu_milli (bits 40..50) | GPU mask (bits 32..39) | mem_mib (bits 0..31).
 * Written by the holder while its word has C; read and zeroed by whoever ends the tenure
 * (release, unhold, revocation), which owns the word through R, C or its CAS to OFFLINE.
 */
#define RUSK_REC_VALID (UINT64_C(1) << 63)

/* A distinct machine shape (vec.c): what rusk_task_check tests vector tasks against. */
typedef struct rusk_shape {
	uint32_t rus, mem_mib;
	uint16_t gpus;
	uint8_t platform;
} rusk_shape;

/* Partition counter: free RUs (low 24 bits) and the sum of their slot scores in
 * milli-units (high 40 bits) in one word, so one fetch-and-add keeps both. Neither field
 * goes negative (see ru.c), so no borrow crosses between them. */
#define RUSK_PC_FREE_BITS      24
#define RUSK_PC_FREE_MASK      ((UINT64_C(1) << RUSK_PC_FREE_BITS) - 1)
#define RUSK_MAX_PARTITION_RUS ((uint32_t)RUSK_PC_FREE_MASK)

static inline uint64_t rusk_pc_delta(uint16_t score)
{
	return 1 + ((uint64_t)score << RUSK_PC_FREE_BITS);
}

/* A published partition snapshot (snapshot.c); immutable once published. */
/* A partition's bits start on a multiple of this: whole cache lines, so agents committing
 * in different partitions never write the same bitmap line. */
#define RUSK_PART_ALIGN_BITS (8 * RUSK_CACHELINE)

typedef struct rusk_snap {
	uint8_t rcu_head_[16]; /* struct rcu_head, kept opaque here (snapshot.c asserts) */
	struct rusk_cluster *c;
	uint64_t version, taken_ns;
	uint32_t partition, first_ru, n_rus, n_words, free_rus;
	double mean_free_score;
	uint32_t platform_free[RUSK_MAX_PLATFORMS];
	uint64_t *nz;     /* [(n_words + 63) / 64], after words: bit i = (words[i] != 0), the
	                   * summary a view's pick selects with (view.c) */
	uint16_t *cnt;    /* [(n_words + 63) / 64], after nz: free RUs in words 64j..64j+63 */
	uint64_t words[]; /* bit (ru - first_ru) = free */
} rusk_snap;

/* One partition, padded so agents committing in different partitions share no line. */
typedef struct rusk_partition {
	uint64_t counter;       /* live, relaxed: free | score sum */
	struct rusk_snap *snap; /* RCU-published snapshot (snapshot.c) */
	uint64_t version;       /* live: last snapshot version handed out */
	uint32_t first_cell, n_cells;
	uint32_t first_machine, n_machines;
	uint32_t first_ru, n_rus;
	uint32_t first_bit; /* RUSK_PART_ALIGN_BITS-aligned (cluster.c) */
} RUSK_ALIGNED(RUSK_CACHELINE) rusk_partition;
_Static_assert(sizeof(rusk_partition) == RUSK_CACHELINE, "one partition per cache line");

#define RUSK_PLATFORM_NAME 40
typedef struct rusk_platform_rec {
	char name[RUSK_PLATFORM_NAME];
	double speed;
} rusk_platform_rec;

struct rusk_cluster {
	uint64_t *ru_word;       /* [n_rus] state words */
	uint32_t *ru_machine;    /* [n_rus] */
	rusk_profile *ru_tenant; /* [n_rus] valid while the word's P bit is set */
	uint16_t *ru_score;      /* [n_rus] slot score in milli-units */
	uint64_t *free_bits;     /* [n_words] 1 = free; partitions start on word boundaries */
	uint64_t *plat_bits;     /* [n_platforms][n_words] 1 = RU of that platform type */
	uint64_t *ru_vec;        /* [n_rus] share records (vec.c) */
	rusk_mvec *mvec;         /* [n_machines] vector capacities (vec.c) */
	rusk_shape *shapes;      /* [n_shapes] distinct machine shapes, every slot (vec.c) */
	uint64_t *mshape; /* [n_machines] static shape, packed: mem_mib | gpus << 32 | platform
	                   * << 40 (vec.c): 8 bytes a machine, so a feasibility check of a
	                   * drawn candidate stays in cache at 100K machines */
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
	size_t bytes_total, bytes_array, bytes_snap_words;
};

/* The cluster's clock. The default, CLOCK_MONOTONIC, is read here directly: a decision
 * reads the clock three times per attempt, and the indirect call through rusk_clock cost
 * about as much as the read. Other clocks (the simulator's) go through their function. */
extern const rusk_clock *const rusk_monotonic_;
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

/* Free RUs of machine m: popcount of its bits (relaxed loads: a statistic). */
uint32_t rusk_machine_free_(const rusk_cluster *c, const rusk_machine *m);

/* Writes a formatted one-line message into err (NULL-safe, truncating) and returns code. */
int rusk_errf(char *err, size_t errlen, int code, const char *fmt, ...) RUSK_PRINTF(4, 5);

/* Shared build steps (cluster.c), used by the parameter and openb builders. */
int rusk_cluster_alloc_(rusk_cluster **out, uint32_t n_machines, uint64_t n_rus,
                        const rusk_cluster_params *p, char *err, size_t errlen);
int rusk_cluster_layout_(rusk_cluster *c, const rusk_cluster_params *p, char *err, size_t errlen);
int rusk_cluster_check_topology_(const rusk_cluster_params *p, uint32_t n_machines, char *err,
                                 size_t errlen);
int rusk_cluster_check_scores_(const rusk_cluster_params *p, char *err, size_t errlen);
/* Fault injection for stress tests (stress/fault_torture.c): when set, called by
 * rusk_ru_commit_gang after each member RU is committed (i + 1 of n taken). A test may end
 * the calling thread there to model an agent that dies mid-gang. NULL in production. */
extern void (*rusk_fault_gang_member)(uint64_t task, size_t taken, size_t n);

/* place()'s commits (ru.c): as rusk_ru_commit / _gang / _incremental, but every RU won stays
 * held (C set), so no topology change can revoke it before place() decides. Each held lease
 * ends with exactly one of rusk_ru_publish_ (clears C: the embedder now holds it) or
 * rusk_ru_unhold_ (releases it: free, or offline on a machine no longer UP). Called only by
 * the thread that holds the lease. */
int rusk_ru_commit_held_(rusk_cluster *c, uint64_t task, uint32_t ru, const rusk_profile *prof,
                         rusk_lease *out);
int rusk_ru_commit_gang_held_(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                              const rusk_profile *prof, rusk_lease *out, size_t *lost_at);
int rusk_ru_commit_incremental_held_(rusk_cluster *c, uint64_t task, const uint32_t *rus, size_t n,
                                     const rusk_profile *prof, rusk_lease *out, size_t *n_won);
void rusk_ru_publish_(rusk_cluster *c, rusk_lease l);
void rusk_ru_unhold_(rusk_cluster *c, rusk_lease l);

/* Thread registration (snapshot.c): nesting depth of rusk_thread_register on this thread. */
extern __thread unsigned rusk_reg_depth_;
/* RUSK_DEBUG builds (rusk/sync.h: every build type but Release and MinSizeRel, and every
 * sanitizer build) refuse calls that need registration from unregistered threads with
 * RUSK_ENOTREG; other builds compile the check away. */
#if defined(RUSK_DEBUG) || !defined(NDEBUG)
#define RUSK_CHECK_REGISTERED 1
#define RUSK_UNREGISTERED_()  RUSK_UNLIKELY(rusk_reg_depth_ == 0)
#else
#define RUSK_CHECK_REGISTERED 0
#define RUSK_UNREGISTERED_()  false
#endif

/* Vector state (vec.c). build_ after the layout; give_back_ by whoever ends the tenure of
 * ru (release, unhold, revocation) with the word owned, before the word is stored. */
int rusk_vec_build_(rusk_cluster *c, char *err, size_t errlen);
void rusk_vec_free_(rusk_cluster *c);
int rusk_vec_verify_(const rusk_cluster *c, uint32_t m, char *err, size_t errlen);
void rusk_vec_give_back_(rusk_cluster *c, uint32_t ru, uint64_t rec);
/* Takes vec's memory and GPU shares on machine m; *rec = the record. RUSK_OK, or
 * RUSK_ECONFLICT (short now) holding nothing. */
int rusk_vec_take_(rusk_cluster *c, uint32_t m, const rusk_vec_demand *vec, uint64_t *rec);
/* Whether vec could ever fit machine m's shape (model, GPUs, memory). Inline: a decision
 * calls it for every candidate drawn. */
static inline bool rusk_vec_shape_fits_(const rusk_cluster *c, uint32_t m,
                                        const rusk_vec_demand *vec)
{
	uint64_t s = c->mshape[m];
	uint32_t mem = (uint32_t)s, gpus = (uint32_t)(s >> 32) & 0xffu, plat = (uint32_t)(s >> 40);
	if (mem < vec->mem_mib || gpus < vec->gpus)
		return false;
	return vec->gpus == 0 || vec->gpu_models == 0 || ((vec->gpu_models >> plat) & 1u);
}

/* Whether vec fits machine m's free memory and GPUs now: a lane with room for a share, or
 * enough idle lanes (relaxed loads: a guess that the commit checks). */
static inline bool rusk_vec_free_fits_(const rusk_cluster *c, uint32_t m,
                                       const rusk_vec_demand *vec)
{
	const rusk_mvec *v = &c->mvec[m];
	/* Relaxed: a guess here; vec.c's take validates by CAS. */
	if (rusk_load64(&v->mem_free, RUSK_RELAXED) < vec->mem_mib)
		return false;
	if (vec->gpus == 0)
		return true;
	uint32_t limit = vec->gpus == 1 ? 1000u - vec->gpu_milli : 0, fit = 0, n = v->n_gpus;
	for (uint32_t k = 0; k * RUSK_GPU_LANES < n; k++) {
		uint64_t w = rusk_load64(&v->gpu_used[k], RUSK_RELAXED);
		uint32_t base = k * RUSK_GPU_LANES;
		/* Four lanes without branches; lanes past the machine's GPUs do not count. */
		for (uint32_t j = 0; j < RUSK_GPU_LANES; j++)
			fit += (((w >> (16 * j)) & 0xffffu) <= limit) & (base + j < n);
	}
	return fit >= vec->gpus;
}
/* RUSK_QUALITY_PACKING's value of machine m for vector task t (free_rus: in the view). */
double rusk_vec_pack_value_(const rusk_cluster *c, uint32_t m, uint32_t free_rus,
                            const rusk_task *t);
/* rusk_task_check's vector part: RUSK_OK, RUSK_EINVAL or RUSK_EINFEASIBLE, the field. */
int rusk_vec_check_(const rusk_cluster *c, const rusk_task *t, const char **field, char *err,
                    size_t errlen);

/* Ends the share record of ru's tenure, if any (see rusk_vec_give_back_). Plain load: the
 * caller owns the word, and the holder's write is ordered before by the word's edges. */
static inline void rusk_vec_end_(rusk_cluster *c, uint32_t ru)
{
	uint64_t rec = c->ru_vec[ru];
	if (RUSK_UNLIKELY(rec != 0))
		rusk_vec_give_back_(c, ru, rec);
}

/* RU accounting shared by ru.c and topology.c. */
void rusk_machine_sums_(rusk_machine *m, const rusk_packed *p, bool sub);
void rusk_ru_account_(rusk_cluster *c, uint32_t ru, rusk_machine *m, bool now_free);
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
/* Snapshots (snapshot.c). get_ inside a read-side section; reader_done_ after the last
 * read of it (a TSan annotation, free otherwise). */
int rusk_snap_publish_(rusk_cluster *c, uint32_t p);
const rusk_snap *rusk_snap_get_(rusk_cluster *c, uint32_t p);
void rusk_snap_reader_done_(const rusk_snap *s);
/* Snapshot store (snapshot.c): frees every published snapshot; destroy only. */
void rusk_snap_store_destroy_(rusk_cluster *c);

#endif /* RUSK_CORE_INTERNAL_H */
