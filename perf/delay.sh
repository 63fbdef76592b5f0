#!/usr/bin/env bash
# One `rusk run` and its scheduling delay and agents' CPU per placed task, from its JSON:
#   perf/delay.sh [BIN] [rusk run flags...]     (BIN default ./build/rusk)
# perf/RESULTS.md compares two builds by running this alternately, twice each.
set -euo pipefail
BIN=./build/rusk
if [ $# -gt 0 ] && [ -x "$1" ] && [[ $1 != -* ]]; then BIN=$1; shift; fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$BIN" run "$@" --quiet --json "$out"
python3 - "$out" "$BIN" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
d, t = j["delay_us"], j["tasks"]
cpu = j["agent_cpu"]["us_per_task"] if "agent_cpu" in j else float("nan")
print("%s: delay p50 %.1f us, p99 %.1f us, p99.9 %.1f us; agents' CPU %.2f us per task; "
      "%d placed, backlog %d" % (sys.argv[2], d["p50"], d["p99"], d["p999"], cpu,
                                 t["committed"], t["backlog_end"]))
PY
