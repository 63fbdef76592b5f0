#!/usr/bin/env bash
# Hardware counters and a hot-spot profile of the default `rusk run` (or the command given).
#   perf/perf_stat.sh                  perf stat of `rusk run --phase-s 2`
#   perf/perf_stat.sh record [ARGS]    perf record -g + perf report --sort symbol (top 25)
# Needs linux-perf (apt-get install -y linux-perf); some machines report counters as
# "not supported" (`perf stat -e instructions true` tells). Results go in perf/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v perf >/dev/null || { echo "perf not found: apt-get install -y linux-perf"; exit 1; }
mode=${1:-stat}
[ "$mode" = record ] && shift || true
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(run --phase-s 2)
if [ "$mode" = record ]; then
	perf record -g -o /tmp/rusk.perf.data ./build/rusk "${args[@]}" >/dev/null
	perf report -i /tmp/rusk.perf.data --no-children --sort symbol 2>/dev/null |
		grep -v '^#' | grep '%' | head -25
else
	perf stat -e task-clock,context-switches,cycles,instructions,cache-misses \
		./build/rusk "${args[@]}" >/dev/null
fi
