#!/usr/bin/env bash
# Instructions per scheduled task (R = 8, single-RU tasks): the whole path of `rusk run` —
# generate, enqueue, sample, commit, complete — counted by valgrind's callgrind, which
# counts instructions, not seconds, so the figure is stable on a noisy machine.
# Two runs that differ only in length; the difference of their instruction totals over the
# difference of their task counts cancels the setup (cluster build, threads, teardown).
#
# Usage: perf/instructions.sh [RATE ...] (default: 20000 40000 tasks/s); BIN=... to measure
# another build. Needs valgrind and a build (`make build`).
#
# Why two rates: an agent with nothing queued sleeps 50 us and looks again, and callgrind
# counts those idle wake-ups too. At 20,000 tasks/s (the rate of the recorded series) the
# agents sleep about once per task; at 40,000 tasks/s, about the most that callgrind's
# serialised threads keep up with in real time here, they hardly sleep, so that figure is
# the task path itself. Well above that rate the run falls behind real time and the agents
# retry tasks their views have no room for, which measures the overload, not the path.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-./build/rusk}
RATES=("$@")
[ ${#RATES[@]} -gt 0 ] || RATES=(20000 40000)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() { # $1 = rate, $2 = seconds
	valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$1.$2" "$BIN" run --machines 20000 \
		--partitions 20 --agents 2 --rate "$1" --duration-s "$2" --task-ms 200 --sample 8 \
		--json "$OUT/run.$1.$2.json" >/dev/null 2>"$OUT/vg.$1.$2"
	ir=$(grep -E '^(summary|totals):' "$OUT/cg.$1.$2" | head -1 | awk '{print $2}')
	tasks=$(grep -o '"committed": [0-9]*' "$OUT/run.$1.$2.json" | awk '{print $2}')
	echo "$ir $tasks"
}
for rate in "${RATES[@]}"; do
	read -r ir1 t1 < <(run "$rate" 2)
	read -r ir2 t2 < <(run "$rate" 4)
	echo "rate $rate/s, run 2 s: $ir1 instructions, $t1 tasks; run 4 s: $ir2 instructions, $t2 tasks"
	echo "instructions per scheduled task at $rate tasks/s: $(((ir2 - ir1) / (t2 - t1)))"
done
