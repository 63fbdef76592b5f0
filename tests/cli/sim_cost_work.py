#!/usr/bin/env python3
"""Issue 29, item 2: rusk sim charges a decision for its work (--cost work, the default).

Quality-first ranks every partition and rejects weighted draws, so its mean decision costs
more than twice Latency-first's; --cost flat charges both exactly --decision-us (250).
Usage: sim_cost_work.py RUSK_BINARY (runs in the current directory)."""
import json
import subprocess
import sys

rusk = sys.argv[1]
d, cfg = {}, {}
for s in ("latency", "quality"):
    for c in ("work", "flat"):
        js = f"cw_{s}_{c}.json"
        subprocess.run([rusk, "sim", "--machines", "2000", "--partitions", "4", "--agents", "2",
                        "--rate", "400", "--duration-s", "2", "--preferred", "2", "--strategy", s,
                        "--cost", c, "--json", js], check=True, stdout=subprocess.DEVNULL)
        with open(js) as f:
            j = json.load(f)
        d[s, c] = j["sync"]["decision_us_mean"]
        cfg[s, c] = j["config"]["cost"]
print(d)
assert d["quality", "work"] > 2 * d["latency", "work"] > 0, d
assert d["latency", "flat"] == d["quality", "flat"] == 250, d
assert cfg["latency", "work"] == "work" and cfg["latency", "flat"] == "flat", cfg
