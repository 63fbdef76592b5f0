#!/usr/bin/env bash
# Instructions per scheduled task (single-RU tasks): the whole path of `rusk run` —
# generate, enqueue, sample, commit, complete — counted by valgrind's callgrind, which
# counts instructions, not seconds, so the figure is stable on a noisy machine.
# Two runs that differ only in length; the difference of their instruction totals over the
# difference of their task counts cancels the setup (cluster build, threads, teardown).
#
# Usage: perf/instructions.sh [RATE ...] (default: 20000 40000 tasks/s); BIN=... to measure
# another build; SAMPLES="auto 8" (the default) names the candidate counts to measure:
# auto is `rusk run`'s default, R from Tarcil's guarantee (about 31 candidates per RU on
# this idle cluster), 8 the fixed R = 8 of Tarcil's evaluation (--sample 8).
# RUN_ARGS="..." adds flags to both runs (e.g. RUN_ARGS="--spin-us 0").
# Needs valgrind and a build (`make build`).
#
# Why two rates: what the run spends per second rather than per task — idle wake-ups (an
# agent with nothing queued spins 2 us, then parks until a submission wakes it; the completer wakes every
# 200 us), view syncs, the per-second sampler — is counted too, spread over the tasks of
# that second. At 20,000 tasks/s (the rate of the recorded series) the threads sleep 0.51
# times per task; at 40,000 tasks/s, about the most that callgrind's serialised threads
# keep up with in real time here, 0.14 times, so that figure is close to the task path
# itself. Well above that rate the run falls behind real time and agents retry tasks their
# views have no room for, which measures the overload, not the path.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-./build/rusk}
RATES=("$@")
[ ${#RATES[@]} -gt 0 ] || RATES=(20000 40000)
for rate in "${RATES[@]}"; do
	if ! [[ $rate =~ ^[1-9][0-9]*$ ]]; then
		echo "perf/instructions.sh: RATE '$rate' is not a positive whole number of tasks/s" >&2
		exit 2
	fi
done
read -r -a SAMPLE_LIST <<<"${SAMPLES:-auto 8}"
for r in "${SAMPLE_LIST[@]}"; do
	if ! [[ $r == auto || $r =~ ^[1-9][0-9]*$ ]]; then
		echo "perf/instructions.sh: SAMPLES entry '$r' is not auto or a positive whole number" >&2
		exit 2
	fi
done
[ -x "$BIN" ] || { echo "perf/instructions.sh: $BIN not found: run 'make build' first" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "perf/instructions.sh: needs valgrind (apt-get install -y valgrind)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() { # $1 = rate, $2 = seconds, $3 = sample (auto or R)
	local tag="$1.$2.$3"
	valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$tag" "$BIN" run --machines 20000 \
		--partitions 20 --agents 2 --rate "$1" --duration-s "$2" --task-ms 200 --sample "$3" \
		${RUN_ARGS:-} --json "$OUT/run.$tag.json" >/dev/null 2>"$OUT/vg.$tag"
	ir=$(grep -E '^(summary|totals):' "$OUT/cg.$tag" | head -1 | awk '{print $2}')
	tasks=$(grep -o '"committed": [0-9]*' "$OUT/run.$tag.json" | awk '{print $2}')
	r=$(grep -o '"sample_size_mean": [0-9.]*' "$OUT/run.$tag.json" | awk '{print $2}')
	echo "$ir $tasks $r"
}
for sample in "${SAMPLE_LIST[@]}"; do
	for rate in "${RATES[@]}"; do
		read -r ir1 t1 r1 < <(run "$rate" 2 "$sample")
		read -r ir2 t2 r2 < <(run "$rate" 4 "$sample")
		echo "--sample $sample (mean R $r2), rate $rate/s, run 2 s: $ir1 instructions, $t1 tasks;" \
			"run 4 s: $ir2 instructions, $t2 tasks"
		echo "instructions per scheduled task at $rate tasks/s, --sample $sample:" \
			"$(((ir2 - ir1) / (t2 - t1)))"
	done
done
