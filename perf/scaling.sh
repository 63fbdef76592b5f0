#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Thread scaling of rusk, as one command (issue 28): the kernel closed loop (`rusk bench`,
# 1..N agents) and the main job open loop (`rusk run`, agents x rate, with sharded
# generators), plus the mixed-shape run of issue 26, on whatever machine it runs on.
#
#   perf/scaling.sh [--rusk BIN] [--base BIN] [--out DIR] [--agents N] [--quick]
#       runs the sweep; writes DIR/machine.txt, DIR/*.json (one per run), DIR/summary.json,
#       DIR/summary.md and, when gnuplot is there, DIR/scaling.png (open loop) and
#       DIR/closed.png (closed loop, tasks/s against agents per design). --base BIN also runs
#       the rows marked "base" with an older rusk (the baseline of the same run), and the
#       3M tasks/s p99 row with both binaries alternating twice.
#   perf/scaling.sh --report DIR
#       summary.json, summary.md and the plot from the JSON files of an earlier sweep
#       (e.g. one run on another machine without python3 or gnuplot).
#   perf/scaling.sh --bundle DIR [--rusk BIN] [--base BIN]
#       a folder that runs on an x86-64 Linux machine without Debian's libraries: the
#       binaries, every shared library ldd lists, the loader, and a copy of this script;
#       run it there as DIR/scaling.sh --rusk DIR/rusk (the wrappers set the loader up).
#
# Sizes: 100,000 machines x 2 RUs (ParSync's 200K slots) for `rusk run`, 165 ms tasks, a
# 20 ms sync gap (so a view's staleness is not what limits the rate); `rusk bench` at its
# defaults (100,000 x 16 RUs, 80% load). Every run is short (3 s of arrivals); the whole
# sweep takes about 6 minutes on 16 cores (--quick: about 4). A run keeps up with its
# offered rate when it ends about a task's length after its arrivals (run s vs arrivals s)
# with nothing queued; the mean is placed / run time, as `rusk run` reports it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
RUSK=${RUSK:-$here/../build/rusk}
BASE=""
OUT=""
AGENTS=""
QUICK=0
MODE=run
while [ $# -gt 0 ]; do
	case "$1" in
	--rusk) RUSK=$2; shift 2 ;;
	--base) BASE=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--agents) AGENTS=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	--report) MODE=report; OUT=$2; shift 2 ;;
	--bundle) MODE=bundle; OUT=$2; shift 2 ;;
	-h|--help) sed -n '3,23p' "$0"; exit 0 ;;
	*) echo "perf/scaling.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done

bundle() {
	local dir=$1
	mkdir -p "$dir/lib" || exit 1
	local loader
	loader=$(ldd "$RUSK" | awk '/ld-linux/ {print $1}')
	for bin in "$RUSK" ${BASE:+"$BASE"}; do
		ldd "$bin" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
			cp -L "$lib" "$dir/lib/"
		done
	done
	cp -L "$loader" "$dir/lib/ld-linux.so"
	cp "$RUSK" "$dir/rusk.bin"
	[ -n "$BASE" ] && cp "$BASE" "$dir/rusk-base.bin"
	for name in rusk ${BASE:+rusk-base}; do
		cat > "$dir/$name" <<EOF
#!/bin/sh
# $name with the libraries it was built against (perf/scaling.sh --bundle)
d=\$(cd "\$(dirname "\$0")" && pwd)
exec "\$d/lib/ld-linux.so" --library-path "\$d/lib" "\$d/$name.bin" "\$@"
EOF
		chmod +x "$dir/$name"
	done
	cp "$0" "$dir/scaling.sh"
	du -sh "$dir" | sed 's/^/bundle: /'
}

report() {
	local dir=$1
	python3 - "$dir" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
rows = []
for f in sorted(glob.glob(os.path.join(d, "run_*.json"))):
    name = os.path.basename(f)[4:-5]
    try:
        j = json.load(open(f))
    except Exception as e:
        rows.append({"run": name, "error": str(e)}); continue
    t = j["tasks"]; c = j["config"]
    rows.append({"run": name, "agents": c["agents"], "rate": c["rate"],
                 "placed": t["committed"], "submitted": t["submitted"],
                 "elapsed_s": j["run"]["elapsed_s"], "duration_s": c["phase_s"] * len(c["phases"]),
                 "backlog_end": t["backlog_end"], "rejected": t["rejected"],
                 "tasks_per_s": j["throughput_per_s"]["mean"],
                 "max_1s": j["throughput_per_s"]["max"],
                 "delay_p50_us": j["delay_us"]["p50"], "delay_p99_us": j["delay_us"]["p99"],
                 "cpu_us_per_task": j["agent_cpu"]["us_per_task"],
                 "mix": j.get("mix"), "agents_placed": [a["placed"] for a in j["agents"]]})
bench = {}
for f in sorted(glob.glob(os.path.join(d, "bench_*.json"))):
    bench[os.path.basename(f)[6:-5]] = json.load(open(f))
out = {"machine": open(os.path.join(d, "machine.txt")).read() if os.path.exists(
    os.path.join(d, "machine.txt")) else "", "runs": rows, "bench": bench}
json.dump(out, open(os.path.join(d, "summary.json"), "w"), indent=1)
with open(os.path.join(d, "summary.md"), "w") as m:
    m.write("| run | agents | offered/s | placed/s (mean) | max 1 s | run s (arrivals s) | "
            "backlog | p50 us | p99 us | agents' CPU us/task |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        if "error" in r:
            m.write("| %s | error: %s |\n" % (r["run"], r["error"])); continue
        m.write("| %s | %d | %.0f | %.0f | %d | %.1f (%.1f) | %d | %.1f | %.1f | %.2f |\n" % (
            r["run"], r["agents"], r["rate"], r["tasks_per_s"], r["max_1s"],
            r["elapsed_s"], r["duration_s"], r["backlog_end"], r["delay_p50_us"],
            r["delay_p99_us"], r["cpu_us_per_task"]))
    for k, b in bench.items():
        m.write("\n`rusk bench` (%s), closed loop at %d agents:\n\n| design | tasks/s | "
                "conflicts %% |\n|---|---|---|\n" % (k, b["config"]["agents"]))
        for r in b.get("rows", []):
            m.write("| %s | %.0f | %.2f |\n" % (r["design"], r["tasks_per_s"], r["conflict_pct"]))
        keys = ["rusk", "statesync", "random", "global_lock"]
        sc = b.get("scaling", [])
        keys = [k for k in keys if sc and k in sc[0]]
        m.write("\nscaling (tasks/s, %d partitions; x: vs 1 agent of the same design):\n\n"
                "| agents | %s |\n|---|%s\n" % (b["config"]["partitions"], " | ".join(keys),
                                                "---|" * len(keys)))
        for p in sc:
            m.write("| %d | %s |\n" % (p["agents"], " | ".join(
                "%.0f (%.1fx)" % (p[k], p[k] / sc[0][k] if sc[0][k] else 0) for k in keys)))
        for k in keys:
            if "work" not in sc[0] or k not in sc[0]["work"]:
                continue
            m.write("\n%s, per decision:\n\n| agents | choose ns | commit ns | drawn | "
                    "partitions | attempts | gave up %% | conflict %% | p50 us | sync %% |\n"
                    "|---|---|---|---|---|---|---|---|---|---|\n" % k)
            for p in sc:
                w = p["work"][k]
                m.write("| %d | %.0f | %.0f | %.2f | %.2f | %.3f | %.2f | %.2f | %.2f | %.2f |\n"
                        % (p["agents"], w["choose_ns"], w["commit_ns"], w["drawn"],
                           w["partitions"], w["attempts"], w["gave_up_pct"],
                           w["conflict_pct"], w["decision_p50_us"], w["sync_pct"]))
    for r in rows:
        for x in (r.get("mix") or []):
            m.write("\n%s: %d RU %s %s (%.0f%%): %d placed, delay p50 %.1f us, p99 %.1f us, max "
                    "%.1f us" % (r["run"], x["rus"], x["placement"], x["commit"],
                                 100 * x["share"], x["placed"], x["delay_us"]["p50"],
                                 x["delay_us"]["p99"], x["delay_us"]["max"]))
    m.write("\n")
print(open(os.path.join(d, "summary.md")).read())
PY
	if command -v gnuplot > /dev/null; then
		python3 - "$dir" <<'PY' > "$dir/scaling.dat"
import json, os, sys
s = json.load(open(os.path.join(sys.argv[1], "summary.json")))
for r in s["runs"]:
    if r.get("run", "").startswith("open_") and "error" not in r:
        print(r["agents"], r["rate"], r["max_1s"], r["cpu_us_per_task"])
PY
		gnuplot <<EOF 2>/dev/null
set terminal png size 900,500
set output "$dir/scaling.png"
set xlabel "offered rate (tasks/s)"
set ylabel "placed (tasks/s, best 1 s window)"
set key left top
plot "$dir/scaling.dat" using 2:3 with points pt 7 title "rusk run, open loop", x with lines title "placed = offered"
EOF
		# the closed loop: tasks/s against agents, one line per design and bench run
		python3 - "$dir" <<'PY' > "$dir/closed.dat"
import json, os, sys
s = json.load(open(os.path.join(sys.argv[1], "summary.json")))
for name, b in sorted(s["bench"].items()):
    for k in ("rusk", "statesync", "random", "global_lock"):
        if b.get("scaling") and k in b["scaling"][0]:
            print('"%s %s"' % (k, name))
            for p in b["scaling"]:
                print(p["agents"], p[k])
            print("\n")
PY
		if [ -s "$dir/closed.dat" ]; then
			gnuplot <<EOF 2>/dev/null
set terminal png size 900,500 noenhanced
set output "$dir/closed.png"
set xlabel "agents"
set ylabel "tasks/s, closed loop (rusk bench)"
set key left top font ",8"
plot for [i=0:*] "$dir/closed.dat" index i using 1:2 with linespoints title columnheader(1)
EOF
		fi
	fi
}

case $MODE in
bundle) bundle "$OUT"; exit 0 ;;
report) report "$OUT"; exit 0 ;;
esac

[ -n "$OUT" ] || OUT=$here/out/scaling-$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT" || exit 1
cores=$(nproc)
N=${AGENTS:-$((cores > 2 ? cores - 2 : 1))}
# the agent counts of the sweep: 2, 4, 8 and N, each once, none above N
COUNTS=$(printf '%s\n' 2 4 8 "$N" | awk -v n="$N" '$1 <= n && !seen[$1]++' | tr '\n' ' ')
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "cores: $cores"
	grep -m1 'model name' /proc/cpuinfo 2>/dev/null
	grep -m1 MemTotal /proc/meminfo 2>/dev/null
	uname -srm
	echo "rusk: $RUSK${BASE:+; base: $BASE}"
} > "$OUT/machine.txt"
cat "$OUT/machine.txt"

# one rusk run: NAME BIN ARGS...
run() {
	local name=$1 bin=$2
	shift 2
	echo "== $name: $*"
	timeout 60 "$bin" run --quiet --json "$OUT/run_$name.json" "$@" || echo "   (status $?)"
}

# 100,000 machines x 16 RUs: at 165 ms a task, 1.6M RUs hold 9.7M tasks/s (Little's law).
# With ParSync's 2 RUs a machine (the issue's first command) the cluster itself caps the
# rate at 200K RUs / 0.165 s = 1.21M tasks/s, whatever the loop does.
OPEN="--machines 100000 --rus-per-machine 16 --task-ms 165 --gap-ms 20 --duration-s 3"
G=$(( N >= 8 ? 2 : 1 ))

# 1. the kernel, closed loop: every design at N agents, then rusk, StateSync, random and
# global-lock over 1, 2, 4, 8, 12, N and every core (the issue's 16), with where each
# decision's time goes; at ParSync's 20 partitions and at 100 (5 cells each). Rows start
# warm (rusk bench --warmup-s: the cluster at its load, every view synced), and once cold.
SWEEP=$(printf '%s\n' 1 2 4 8 12 "$N" "$cores" | awk -v c="$cores" '$1 <= c && !seen[$1]++' |
	paste -sd, -)
for P in 20 100; do
	timeout 300 "$RUSK" bench --agents "$N" --sweep "$SWEEP" --partitions "$P" --duration-s 1 \
		--rate 0 --preferred 0 --json "$OUT/bench_p$P.json" | tail -32
done
# the same from an empty cluster (the issue's first measure): each row fills while counted
timeout 300 "$RUSK" bench --agents "$N" --sweep "$SWEEP" --warmup-s 0 --duration-s 1 \
	--rate 0 --preferred 0 --json "$OUT/bench_p20_cold.json" | tail -32

# 2. the main job, open loop: the rate each agent count sustains
for A in $COUNTS; do
	g=$(( A >= 8 ? G : 1 ))
	for rate in $((A * 250000)) $((A * 450000)); do
		run "open_a${A}_r${rate}" "$RUSK" $OPEN --agents "$A" --generators "$g" --rate "$rate"
	done
done
[ $QUICK = 1 ] || for rate in 6000000 8000000; do
	run "open_a${N}_r${rate}_g4" "$RUSK" $OPEN --agents "$N" --generators 4 --rate "$rate"
done
# p99 at half the target (3M tasks/s) with N agents
run "open_a${N}_r3000000_p99" "$RUSK" $OPEN --agents "$N" --generators "$G" --rate 3000000

# 3. CPU per task at the same per-agent rate (200K/s each), and at the default 40K/s
for A in $COUNTS; do
	run "cpu_a${A}_peragent" "$RUSK" $OPEN --agents "$A" --rate $((A * 200000)) \
		--generators $(( A >= 8 ? G : 1 ))
	run "cpu_a${A}_default" "$RUSK" --duration-s 5 --rate 40000 --agents "$A"
done

# 4. the issue's own command on the baseline binary, same machine
if [ -n "$BASE" ]; then
	for A in $COUNTS; do
		run "base_a${A}_r2000000" "$BASE" $OPEN --rate 2000000 --agents "$A"
		[ $QUICK = 1 ] || [ "$A" != 2 ] && [ "$A" != "$N" ] ||
			run "base_a${A}_default" "$BASE" --duration-s 5 --rate 40000 --agents "$A"
	done
	for A in $COUNTS; do
		run "new_a${A}_r2000000" "$RUSK" $OPEN --rate 2000000 --agents "$A" \
			--generators $(( A >= 8 ? G : 1 ))
	done
	# p99 at 3M tasks/s, both binaries alternating twice (hosts differ from one loan to the
	# next, so a p99 is compared only with the baseline's on the same host; a baseline
	# without --generators answers with status 2)
	for i in 1 2; do
		run "base_a${N}_r3000000_p99_$i" "$BASE" $OPEN --agents "$N" --generators "$G" \
			--rate 3000000
		run "new_a${N}_r3000000_p99_$i" "$RUSK" $OPEN --agents "$N" --generators "$G" \
			--rate 3000000
	done
fi

# 5. issue 26's mixed shapes with cores to spare (1,000 machines x 48 RUs)
[ $QUICK = 1 ] || for mix in 1@1 1@0.98,48:machine@0.02; do
	run "mix_${mix//[,:@]/_}" "$RUSK" --machines 1000 --rus-per-machine 48 --partitions 4 \
		--rate 30000 --duration-s 10 --task-ms 500 --mix "$mix"
done

if command -v python3 > /dev/null; then
	report "$OUT"
else
	echo "no python3 here: run perf/scaling.sh --report $OUT where there is one"
fi
echo "results: $OUT"
