#!/usr/bin/env bash
# Instructions per scheduled task (R = 8, single-RU tasks): the whole path of `rusk run` —
# generate, enqueue, sample, commit, complete — counted by valgrind's callgrind, which
# counts instructions, not seconds, so the figure is stable on a noisy machine.
# Two runs that differ only in length; the difference of their instruction totals over the
# difference of their task counts cancels the setup (cluster build, threads, teardown).
# Usage: perf/instructions.sh [RATE] (default 2000 tasks/s); needs valgrind and a build.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${1:-2000}
BIN=${BIN:-./build/rusk}
OUT=$(mktemp -d)
run() { # $1 = seconds
	valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$1" "$BIN" run --machines 20000 \
		--partitions 20 --agents 2 --rate "$RATE" --duration-s "$1" --task-ms 200 --sample 8 \
		--json "$OUT/run.$1.json" >/dev/null 2>"$OUT/vg.$1"
	ir=$(grep -E '^(summary|totals):' "$OUT/cg.$1" | head -1 | awk '{print $2}')
	tasks=$(grep -o '"committed": [0-9]*' "$OUT/run.$1.json" | awk '{print $2}')
	echo "$ir $tasks"
}
read -r ir1 t1 < <(run 2)
read -r ir2 t2 < <(run 4)
echo "run 2 s: $ir1 instructions, $t1 tasks"
echo "run 4 s: $ir2 instructions, $t2 tasks"
echo "instructions per scheduled task: $(( (ir2 - ir1) / (t2 - t1) ))"
rm -rf "$OUT"
