# SPDX-License-Identifier: MIT
# A thin driver over CMake; every rule here only configures, builds or runs.
#   make demo    install missing packages, build Release, run the main job (`rusk run`)
#   make test    unit + concurrency + CLI tests, then the concurrency tests again under
#                ThreadSanitizer and AddressSanitizer+UBSan (all but the cases labelled long)
#   make test-long  the cases labelled long (fault timings), plain and under ASan+UBSan
#   make bench   Google Benchmark micro-suite + `rusk bench`; JSON under perf/bench/
#   make stress  long torture runs and signals at random times (STRESS_SECONDS, default 60;
#                STRESS_SEED, default 1)
#   make paper   the papers' experiments in virtual time (perf/paper/, a few minutes)
#   make fuzz    libFuzzer harnesses, FUZZ_SECONDS each (default 30; needs clang)
#   make format / format-check
SHELL := /bin/bash
JOBS ?= $(shell nproc)
STRESS_SECONDS ?= 60
STRESS_SEED ?= 1
FUZZ_SECONDS ?= 30
FUZZERS := fuzz_trace fuzz_openb fuzz_cli
DEBS := cmake pkg-config gcc g++ make gnuplot-nox python3 liburcu-dev libck-dev libjemalloc-dev \
        libcmocka-dev libbenchmark-dev liblapacke-dev libopenblas-serial-dev libglpk-dev libltdl-dev \
        redis-server redis-tools libhiredis-dev
SOURCES = $(shell git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cc' 2>/dev/null || find include core bench stress tests -name '*.[ch]' -o -name '*.cc')
# gcc's TSan runtime maps fixed ranges that newer kernels' ASLR can collide with;
# running the TSan tests without address randomisation avoids "unexpected memory mapping".
NOASLR := $(shell setarch $$(uname -m) -R true 2>/dev/null && echo "setarch $$(uname -m) -R")

.PHONY: paper deps build demo test test-long test-plain test-tsan test-asan bench stress fuzz format format-check clean

deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build -j $(JOBS)

demo: build
	./build/rusk run

paper: build
	python3 perf/paper/experiments.py all

test-plain: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build -j $(JOBS)
	cd build && ctest --output-on-failure -j $(JOBS) -LE long

test-tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUSK_SANITIZE=thread >/dev/null
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=7 suppressions=$(CURDIR)/tests/tsan.supp" \
	  $(NOASLR) ctest --output-on-failure -j $(JOBS) -L concurrency

test-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUSK_SANITIZE=address >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
	  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
	  ctest --output-on-failure -j $(JOBS) -L 'concurrency|unit|cli' -LE long

# The cases labelled "long" (tests/CMakeLists.txt): fault timings and repeats of paths the
# default run covers, in the plain build and under AddressSanitizer+UBSan. CI runs
# `make test test-long`.
test-long: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build -j $(JOBS)
	cd build && ctest --output-on-failure -j $(JOBS) -L long
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUSK_SANITIZE=address >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
	  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
	  ctest --output-on-failure -j $(JOBS) -L long

test: test-plain test-tsan test-asan
	@echo "make test: plain, ThreadSanitizer and AddressSanitizer+UBSan runs passed"

bench: build
	@mkdir -p perf/bench perf/figures
	./build/bench/bench_ru --benchmark_out=perf/bench/bench_ru.json --benchmark_out_format=json
	./build/bench/bench_sync --benchmark_out=perf/bench/bench_sync.json --benchmark_out_format=json
	./build/bench/bench_sched --benchmark_out=perf/bench/bench_sched.json --benchmark_out_format=json
	./build/bench/bench_vec --benchmark_out=perf/bench/bench_vec.json --benchmark_out_format=json
	./build/bench/bench_misc --benchmark_out=perf/bench/bench_misc.json --benchmark_out_format=json
	./build/bench/bench_admit --benchmark_out=perf/bench/bench_admit.json --benchmark_out_format=json
	./build/bench/bench_classify --benchmark_out=perf/bench/bench_classify.json --benchmark_out_format=json
	./build/bench/bench_predict --benchmark_out=perf/bench/bench_predict.json --benchmark_out_format=json
	./build/rusk bench --json perf/bench/rusk_bench.json --png perf/figures/rusk_bench.png
	./build/bench/bench_cost --benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_out=perf/bench/bench_cost.json --benchmark_out_format=json
	python3 perf/cost_fit.py perf/bench/bench_cost.json

stress: build
	./build/stress/ru_torture --threads 4 --seconds $(STRESS_SECONDS) --hot 256
	./build/stress/ru_torture --threads 8 --seconds $(STRESS_SECONDS) --hot 64 --yield 2
	./build/stress/fault_torture --threads 6 --seconds $(STRESS_SECONDS) --hot 4096
	./build/stress/soak --machines 100000 --agents 4 --seconds $(STRESS_SECONDS)
	python3 stress/signals.py --rusk ./build/rusk --seconds $(STRESS_SECONDS) --seed $(STRESS_SEED) --dir build

# libFuzzer (clang): each harness for FUZZ_SECONDS from a copy of its seed corpus.
fuzz: deps
	@command -v clang >/dev/null || { echo "rusk: fuzzing needs clang: apt-get install -y clang libclang-rt-14-dev"; exit 1; }
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUSK_SANITIZE=fuzz >/dev/null
	cmake --build build-fuzz -j $(JOBS)
	@for f in $(FUZZERS); do \
	  c=$${f#fuzz_}; rm -rf build-fuzz/corpus-$$c; mkdir -p build-fuzz/corpus-$$c; \
	  cp stress/fuzz/corpus/$$c/* build-fuzz/corpus-$$c/; \
	  echo "fuzzing $$f for $(FUZZ_SECONDS) s"; \
	  ./build-fuzz/stress/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -close_fd_mask=3 \
	    -artifact_prefix=build-fuzz/$$f- \
	    -print_final_stats=1 build-fuzz/corpus-$$c 2>&1 | grep -E "stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY" ; \
	  test $${PIPESTATUS[0]} -eq 0 || exit 1; \
	done

format:
	clang-format -i $(SOURCES)

format-check:
	clang-format --dry-run --Werror $(SOURCES)

clean:
	rm -rf build build-tsan build-asan build-fuzz
