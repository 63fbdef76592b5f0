# SPDX-License-Identifier: MIT
# A thin driver over CMake; every rule here only configures, builds or runs.
#   make demo    install missing packages, build Release, run the main job (`rusk run`)
#   make test    unit + concurrency + CLI tests, then the concurrency tests again under
#                ThreadSanitizer and AddressSanitizer+UBSan
#   make bench   Google Benchmark micro-suite (full length)
#   make stress  long torture runs (STRESS_SECONDS, default 60)
#   make format / format-check
JOBS ?= $(shell nproc)
STRESS_SECONDS ?= 60
DEBS := cmake pkg-config gcc g++ make gnuplot-nox liburcu-dev libck-dev libjemalloc-dev \
        libcmocka-dev libbenchmark-dev
SOURCES = $(shell git ls-files --cached --others --exclude-standard '*.c' '*.h' '*.cc' 2>/dev/null || find include core bench stress tests -name '*.[ch]' -o -name '*.cc')
# gcc's TSan runtime maps fixed ranges that newer kernels' ASLR can collide with;
# running the TSan tests without address randomisation avoids "unexpected memory mapping".
NOASLR := $(shell setarch $$(uname -m) -R true 2>/dev/null && echo "setarch $$(uname -m) -R")

.PHONY: deps build demo test test-plain test-tsan test-asan bench stress format format-check clean

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

test-plain: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build -j $(JOBS)
	cd build && ctest --output-on-failure -j $(JOBS)

test-tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUSK_SANITIZE=thread >/dev/null
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=7 suppressions=$(CURDIR)/tests/tsan.supp" \
	  $(NOASLR) ctest --output-on-failure -L concurrency

test-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUSK_SANITIZE=address >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
	  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
	  ctest --output-on-failure -L 'concurrency|unit|cli'

test: test-plain test-tsan test-asan
	@echo "make test: plain, ThreadSanitizer and AddressSanitizer+UBSan runs passed"

bench: build
	./build/bench/bench_ru

stress: build
	./build/stress/ru_torture --threads 4 --seconds $(STRESS_SECONDS) --hot 256
	./build/stress/ru_torture --threads 8 --seconds $(STRESS_SECONDS) --hot 64 --yield 2

format:
	clang-format -i $(SOURCES)

format-check:
	clang-format --dry-run --Werror $(SOURCES)

clean:
	rm -rf build build-tsan build-asan
