/* SPDX-License-Identifier: MIT */
/*
 * A small C interface to Google Benchmark, so rusk's benchmarks are written in C against
 * the same headers an embedder uses. Implemented in rusk_gbench.cc.
 *
 * A benchmark function loops on rusk_gb_keep_running_batch(st, B) and runs B iterations
 * of its body each time (batches amortise the call across the language boundary; Google
 * Benchmark counts every iteration). With threads > 1 the function runs on that many
 * threads at once; Google Benchmark starts them together and times them together.
 */
#ifndef RUSK_GBENCH_H
#define RUSK_GBENCH_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rusk_gb_state rusk_gb_state;
typedef void (*rusk_gb_fn)(rusk_gb_state *st, void *ctx);

/* Registers fn under name, run on `threads` threads; iterations = 0 lets GB choose. */
void rusk_gb_register(const char *name, rusk_gb_fn fn, void *ctx, int threads, int64_t iterations);
/* True while GB wants `batch` more iterations (benchmark::State::KeepRunningBatch). */
bool rusk_gb_keep_running_batch(rusk_gb_state *st, int64_t batch);
int rusk_gb_thread_index(const rusk_gb_state *st);
int rusk_gb_threads(const rusk_gb_state *st);
/* Keeps v alive against the optimiser (benchmark::DoNotOptimize). */
void rusk_gb_do_not_optimize_u64(uint64_t v);
/* A user counter; per_thread_avg averages it over threads instead of summing. */
void rusk_gb_counter(rusk_gb_state *st, const char *name, double v, bool per_thread_avg);
/* Marks the run failed with a message (benchmark::State::SkipWithError). */
void rusk_gb_error(rusk_gb_state *st, const char *msg);
/* Parses GB's flags, runs the selected benchmarks; returns a process exit status. */
int rusk_gb_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
