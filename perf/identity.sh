#!/usr/bin/env bash
# Virtual-time identity check for restructurings: runs `rusk sim` in a set of
# configurations (default shape scaled down, strategies, sync policies, interference,
# classification, the planner, mixed shapes, a trace, vector resources) and prints one
# sha256 per output file. Two builds behave the same when their listings are equal:
#   perf/identity.sh build/rusk > before.txt; ...; perf/identity.sh build/rusk > after.txt
#   diff before.txt after.txt
# Usage: perf/identity.sh RUSK_BINARY [TRACE_DIR]   (TRACE_DIR: openb runs when given)
set -euo pipefail
rusk=$(realpath "$1")
traces=${2:-}
src=$(cd "$(dirname "$0")/.." && pwd)
data=$src/tests/data
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# Inputs by relative path: a summary names its files, and the checkout may move.
cp "$data/trace_gaps.csv" "$data/trace_vec.csv" "$data/nodes_gpu.csv" .
small="--machines 2000 --partitions 4 --duration-s 3"
run() { # name, flags...
	local name=$1; shift
	"$rusk" sim "$@" --json "$name.json" --csv "$name.csv" > "$name.out" 2>&1 || {
		echo "$name: exit $?" >&2; cat "$name.out" >&2; exit 1; }
	# What a run may vary by: the wall-clock measures (the summary's lines, the JSON's
	# wall and time_us fields: classification and planning time).
	grep -v -i 'wall\|elapsed\|cpu\|trained on\|ms mean' "$name.out" > "$name.txt" || true
	python3 -c 'import json, sys
def strip(d):
    if isinstance(d, dict):
        return {k: strip(v) for k, v in d.items() if "wall" not in k and k != "time_us"}
    if isinstance(d, list):
        return [strip(v) for v in d]
    return d
json.dump(strip(json.load(open(sys.argv[1]))), open(sys.argv[1] + ".n", "w"), sort_keys=True)' "$name.json"
	sha256sum "$name.json.n" "$name.csv" "$name.txt"
}
run default $small --rate 4000
run latency $small --rate 8000 --strategy latency --seed 3
run quality $small --rate 4000 --strategy quality --quality interference
run adaptive $small --rate 4000 --strategy adaptive --agents 4
run central $small --rate 2000 --strategy central --agents 2
run statesync $small --rate 4000 --sync state --agents 4
run samesync $small --rate 4000 --sync same --agents 4
run groups --machines 2000 --partitions 4 --phase-s 1.5 --rate 4000 --agents 4 --groups "60,90;30,60"
run prio $small --rate 9000 --priority-share 0.1 --agents 2
run admission $small --rate 9000 --admission on --agents 2
run alpha $small --rate 4000 --alpha 0.5 --preferred 4
run mix --machines 400 --rus-per-machine 8 --partitions 2 --duration-s 3 --rate 300 --task-ms 500 \
	--mix "1@0.7,4:machine@0.2,8:machine:gang@0.1"
run classify --machines 400 --rus-per-machine 8 --partitions 2 --rate 500 --duration-s 5 \
	--task-ms 2000 --task-rus 4 --quality interference --classify on --target on --seed 1
run sched --machines 400 --rus-per-machine 1 --partitions 2 --rate 60 --duration-s 10 \
	--task-ms 4000 --task-dist exp --task-rus 4 --sched point-real --slo-share 0.3 --slack 50
run trace --machines 2000 --partitions 4 --trace trace_gaps.csv --time-scale 1
run gpu --cluster nodes_gpu.csv --partitions 2 --machines-per-rack 1 --racks-per-cell 1 \
	--time-scale 1 --trace trace_vec.csv
if [ -n "$traces" ] && [ -d "$traces/openb" ]; then
	export RUSK_TRACE_DIR=$traces
	run openb --trace openb --cluster openb --partitions 8 --duration-s 5 --quality packing
fi
