// SPDX-License-Identifier: MIT
// The C shim over Google Benchmark (see rusk_gbench.h).
#include "rusk_gbench.h"

#include <benchmark/benchmark.h>

#include <string>

struct rusk_gb_state {
	benchmark::State *s;
};

extern "C" void rusk_gb_register(const char *name, rusk_gb_fn fn, void *ctx, int threads,
                                 int64_t iterations)
{
	auto *b = benchmark::RegisterBenchmark(name, [fn, ctx](benchmark::State &s) {
		rusk_gb_state st{&s};
		fn(&st, ctx);
	});
	if (threads > 1)
		b->Threads(threads);
	if (iterations > 0)
		b->Iterations(iterations);
	b->UseRealTime();
}

extern "C" bool rusk_gb_keep_running_batch(rusk_gb_state *st, int64_t batch)
{
	return st->s->KeepRunningBatch(batch);
}

extern "C" int rusk_gb_thread_index(const rusk_gb_state *st)
{
	return st->s->thread_index();
}

extern "C" int rusk_gb_threads(const rusk_gb_state *st)
{
	return st->s->threads();
}

extern "C" void rusk_gb_do_not_optimize_u64(uint64_t v)
{
	benchmark::DoNotOptimize(v);
}

extern "C" void rusk_gb_counter(rusk_gb_state *st, const char *name, double v, bool per_thread_avg)
{
	st->s->counters[name] =
	        benchmark::Counter(v, per_thread_avg ? benchmark::Counter::kAvgThreads
	                                             : benchmark::Counter::kDefaults);
}

extern "C" void rusk_gb_error(rusk_gb_state *st, const char *msg)
{
	st->s->SkipWithError(msg);
}

extern "C" int rusk_gb_main(int argc, char **argv)
{
	benchmark::Initialize(&argc, argv);
	if (benchmark::ReportUnrecognizedArguments(argc, argv))
		return 2;
	benchmark::RunSpecifiedBenchmarks();
	benchmark::Shutdown();
	return 0;
}
