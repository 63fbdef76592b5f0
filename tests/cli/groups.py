#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Quota groups through the CLI (issue 31): `rusk run --groups-file FILE` on an overloaded
small cluster divides it 1:2:4 and reports per-group figures (JSON series, summary lines,
the --groups-csv series over time and its --groups-png chart); traces name a task's group
(a csv group column; openb pods by qos class or GPU model); bad group files, unknown groups
and misused flags are refused naming FILE:LINE (or FILE, or the flag) with exit 2."""
import csv
import os

from rusk_cli import ARGS, case, cmp, load, main, match, need_openb, rows, rusk, write

SMALL = "--machines 400 --rus-per-machine 5 --partitions 2 --task-ms 1000"
CSV_COLUMNS = ["time_s", "round", "group", "name", "weight", "weight_share", "usage_rus",
               "usage_share", "allowance_rus", "alloc_rus", "demand_rus", "usage_mem_mib",
               "allowance_mem_mib", "demand_mem_mib", "usage_gpu_milli",
               "allowance_gpu_milli", "demand_gpu_milli", "placed", "delay_p50_ms",
               "delay_p99_ms", "held_back"]


def png_ok(path):
    """gnuplot drew a PNG there, and its script is beside it."""
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", path
    assert os.path.getsize(path) > 10000 and os.path.isfile(path + ".gp"), path


def by_round(path, n):
    """--groups-csv rows in blocks of n (a block per round), each block's groups 1..n."""
    rs = rows(path)
    assert list(rs[0]) == CSV_COLUMNS, list(rs[0])
    assert len(rs) % n == 0, len(rs)
    blocks = [rs[i:i + n] for i in range(0, len(rs), n)]
    for b in blocks:
        assert [int(x["group"]) for x in b] == list(range(1, n + 1)), b
        assert len({x["round"] for x in b}) == 1 and len({x["time_s"] for x in b}) == 1, b
    return blocks


@case
def cli_groups_run():
    """Weights 1:2:4, every group offered the same load, twice the cluster: from the second
    second on, each group's allowance is its weighted share (285 / 571 / 1143 of 2000 RUs,
    within one RU of rounding), usage never passes allowance + bound where it grows, every
    round fair, and the high-weight group waits least."""
    write("g_run.txt", "# name weight\nlow 1\nmid 2 max:rus=2000\nhigh 4 min:rus=100\n")
    r = rusk("run %s --rate 4000 --duration-s 4 --groups-file g_run.txt --json g.json "
             "--groups-csv g.csv --groups-png g.png" % SMALL, merge=False)
    d = load("g.json")
    # --groups-csv: a row per group each second, the JSON's series beside it
    rs = rows("g.csv")
    assert list(rs[0]) == CSV_COLUMNS, list(rs[0])
    assert len(rs) % 3 == 0 and len(rs) // 3 == len(d["groups"]["list"][0]["allowance_rus"])
    for i, x in enumerate(rs):
        g = d["groups"]["list"][i % 3]
        assert x["name"] == g["name"] and int(x["group"]) == i % 3 + 1, (i, x)
        assert float(x["time_s"]) == i // 3 + 1, (i, x)
        assert int(x["allowance_rus"]) == g["allowance_rus"][i // 3], (i, x)
        assert int(x["usage_rus"]) == g["usage_rus"][i // 3], (i, x)
    assert sum(int(x["placed"]) for x in rs) == sum(g["placed"] for g in d["groups"]["list"])
    png_ok("g.png")
    g = d["groups"]
    assert g["ok"] is True, g
    lst = {x["name"]: x for x in g["list"]}
    assert set(lst) == {"low", "mid", "high"}, lst
    want = {"low": 2000 / 7, "mid": 4000 / 7, "high": 8000 / 7}
    for name, x in lst.items():
        assert x["fair_failures"] == 0 and x["rus"]["overshoot"] <= x["rus"]["bound"], x
        assert x["rounds"] > 100, x  # 10 ms rounds over 4 s and the drain
        allow = x["allowance_rus"]
        assert len(allow) >= 3, allow
        # seconds 1 and 2: the cluster is overloaded, allowances are the weighted shares
        for s in (1, 2):
            assert abs(allow[s] - want[name]) <= 2, (name, allow)
    assert lst["high"]["delay_p50_ms"] < lst["low"]["delay_p50_ms"], lst
    assert d["checks"]["counts_add_up"], d["checks"]
    match(r"quota groups \(--groups-file g_run.txt\): fair every round", r.stdout)
    match(r"high +weight 4 +placed", r.stdout)


@case
def cli_groups_sim():
    """Virtual time: the coordinator's rounds at exact 10 ms multiples; two runs of a seed give
    the same groups section byte for byte; weights 1:2:4 on 2000 RUs offered twice their
    capacity: allowances exactly 285 / 571 / 1143 every second from the first on, usage
    within the bound above them every second and within 1% below them in second 1 (the
    first full second), every round fair."""
    write("g_sim.txt", "low 1\nmid 2\nhigh 4\n")
    cmd = "sim %s --agents 2 --rate 4000 --duration-s 3 --groups-file g_sim.txt --json %%s" % SMALL
    rusk(cmd % "gsim1.json")
    rusk(cmd % "gsim2.json")
    a, b = load("gsim1.json")["groups"], load("gsim2.json")["groups"]
    assert a == b, "virtual time is not repeatable with groups"
    assert a["ok"] is True, a
    want = {"low": 285, "mid": 571, "high": 1143}
    for x in a["list"]:
        w, bound = want[x["name"]], x["rus"]["bound"]
        assert x["fair_failures"] == 0 and x["rounds"] >= 300, x
        for s in range(1, 3):
            assert x["allowance_rus"][s] == w, (x["name"], x["allowance_rus"])
            assert x["usage_rus"][s] <= w + bound, (x["name"], x["usage_rus"])
        assert x["usage_rus"][1] >= 0.99 * w, (x["name"], x["usage_rus"])


@case
def cli_groups_sim_converge():
    """Virtual time, a row per coordinator round: weights 1:2:4, 10,000 tasks (mean 0.5 s)
    arriving in the first 0.1 s on 500 RUs, so every group is overloaded from the first
    round. From two rounds after the overload began until the first group runs short of
    tasks, every round's usage shares are the weights' (1/7, 2/7, 4/7) within 0.02 and the
    cluster at least 90% used; once the weight-4 group has drained, its share goes to the
    other two 1:2 (allowances within 2%); the rows are at exact 10 ms multiples, the same
    bytes twice; the chart is drawn."""
    write("g_conv.txt", "low 1\nmid 2\nhigh 4\n")
    cmd = ("sim --machines 100 --rus-per-machine 5 --partitions 1 --agents 2 --sync state "
           "--gap-ms 5 --cost flat --decision-us 10 --rate 100000 --duration-s 0.1 "
           "--task-ms 500 --task-dist exp --groups-file g_conv.txt --groups-csv %s")
    rusk(cmd % "conv.csv" + " --groups-png conv.png --json conv.json")
    rusk(cmd % "conv2.csv")
    cmp("conv.csv", "conv2.csv")
    png_ok("conv.png")
    assert load("conv.json")["groups"]["ok"] is True
    blocks = by_round("conv.csv", 3)
    for k, b in enumerate(blocks):
        assert int(b[0]["round"]) == k + 1 and abs(float(b[0]["time_s"]) - 0.01 * (k + 1)) < 1e-9, b
    want = [1 / 7, 2 / 7, 4 / 7]

    def over(b):  # every group wants more than it may have
        return all(int(x["demand_rus"]) > int(x["allowance_rus"]) for x in b)

    start = next(k for k, b in enumerate(blocks) if over(b))
    end = next(k for k in range(start, len(blocks)) if not over(blocks[k]))
    assert start <= 1 and end - start >= 300, (start, end)
    for b in blocks[start + 2:end]:
        for x, w in zip(b, want):
            assert abs(float(x["usage_share"]) - w) <= 0.02, b
            assert abs(float(x["weight_share"]) - w) < 1e-6, x
            assert int(x["usage_rus"]) <= int(x["allowance_rus"]) + 2, x
        assert sum(int(x["usage_rus"]) for x in b) >= 0.9 * 500, b
    # the weight-4 group drained: the other two, still overloaded, share 1:2
    idle = [b for b in blocks[end:] if int(b[2]["demand_rus"]) == 0 and
            all(int(x["demand_rus"]) > int(x["allowance_rus"]) for x in b[:2])]
    assert len(idle) >= 10, len(idle)
    for b in idle:
        lo, mid = int(b[0]["allowance_rus"]), int(b[1]["allowance_rus"])
        assert abs(mid / lo - 2) <= 0.04 and lo + mid >= 490, b


TRACE_HEAD = "arrival_s,duration_s,rus,group\n"


def group_trace(path, extra=""):
    """600 one-RU tasks of group a and 600 of group b (spelt with blanks around) in the first
    half second, 3 s each, then 5 tasks of no group; `extra` rows after."""
    out = [TRACE_HEAD]
    for i in range(600):
        t = i * 0.5 / 600
        out.append("%.5f,3,1,a\n%.5f,3,1, b \n" % (t, t))
    out.append("4,1,1,\n" * 5)
    write(path, "".join(out) + extra)


@case
def cli_groups_trace_column():
    """A csv trace's group column: each task in the group its row names (counted per group:
    600, 600, 0 and 5 without one, all placed), the idle group's share going 1:4 to the
    other two (allowances 140 / 560 of 700 RUs while both are overloaded); without
    --groups-file the column is read and ignored."""
    write("g3_col.txt", "a 1\nb 4\nc 2\n")
    group_trace("tg.csv")
    base = "sim --machines 140 --rus-per-machine 5 --partitions 1 --agents 1 --trace tg.csv " \
        "--time-scale 1"
    rusk(base + " --groups-file g3_col.txt --json tg.json --groups-csv tg_rows.csv")
    g = load("tg.json")["groups"]
    assert g["ok"] is True and g["by_trace"] is True and g["ungrouped_tasks"] == 5, g
    lst = {x["name"]: x for x in g["list"]}
    assert [lst[k]["tasks"] for k in "abc"] == [600, 600, 0], lst
    assert [lst[k]["placed"] for k in "abc"] == [600, 600, 0], lst
    for s in (1, 2):
        assert (lst["a"]["allowance_rus"][s], lst["b"]["allowance_rus"][s]) == (140, 560), lst
    assert max(int(x["usage_rus"]) for x in rows("tg_rows.csv") if x["name"] == "c") == 0
    r = rusk(base + " --json tg0.json")
    assert "groups" not in load("tg0.json"), "groups without --groups-file"


@case
def cli_groups_trace_unknown():
    """A trace naming a group the file does not have: the trace's FILE:LINE of its first
    use and the file's groups, exit 2 (rusk run and rusk sim alike)."""
    write("g3_unknown.txt", "a 1\nb 4\nc 2\n")
    group_trace("tu.csv", "5,1,1,zed\n6,1,1,zed\n")
    line = 1 + 1200 + 5 + 1
    for cmd in ("run", "sim"):
        r = rusk("%s --machines 140 --rus-per-machine 5 --partitions 1 --agents 1 "
                 "--trace tu.csv --groups-file g3_unknown.txt" % cmd, status=2)
        match(r"rusk: --trace tu.csv:%d: group 'zed' is not a group of --groups-file "
              r"g3_unknown.txt \(its groups: a, b, c\)" % line, r.out)
    write("tl.csv", TRACE_HEAD + "0,1,1,%s\n" % ("x" * 32))
    r = rusk("sim --trace tl.csv --groups-file g3_unknown.txt", status=2)
    match(r"tl.csv:2: group: 'x{32}' is not a group name \(1..31 bytes\)", r.out)


@case
def cli_groups_flags_bad():
    """The groups' output and trace flags misused: named, exit 2."""
    write("g_flags.txt", "low 1\nmid 2\nhigh 4\n")
    r = rusk("sim %s --groups-csv x.csv" % SMALL, status=2)
    match(r"--groups-csv: needs --groups-file", r.out)
    r = rusk("sim %s --groups-file g_flags.txt --groups-png x.png" % SMALL, status=2)
    match(r"--groups-png: needs --groups-csv", r.out)
    r = rusk("run %s --groups-file g_flags.txt --groups-csv g_same.out --json g_same.out" % SMALL,
             status=2)
    match(r"--json g_same.out and --groups-csv g_same.out name the same file|"
          r"--groups-csv g_same.out and --json g_same.out name the same file", r.out)
    r = rusk("sim %s --openb-groups qos" % SMALL, status=2)
    match(r"--openb-groups: needs --groups-file", r.out)
    write("tc.csv", TRACE_HEAD + "0,1,1,low\n")
    r = rusk("sim %s --trace tc.csv --groups-file g_flags.txt --openb-groups qos" % SMALL, status=2)
    match(r"--openb-groups: applies to an openb pod list", r.out)
    r = rusk("sim %s --groups-file g_flags.txt --openb-groups size" % SMALL, status=2)
    match(r"--openb-groups", r.out)
    write("gc.txt", "a,b 1\n")
    r = rusk("sim %s --groups-file gc.txt" % SMALL, status=2)
    match(r"gc.txt:1: group name 'a,b' has a comma or a quote", r.out)


def openb_pods():
    d = os.environ.get("RUSK_TRACE_DIR") or ARGS.trace_dir
    with open(os.path.join(d, "openb", "openb_pod_list_default.csv"), newline="") as f:
        return list(csv.DictReader(f))


@case
def cli_groups_openb():
    """The openb pod list with --openb-groups: by qos class, each class's pods in its group
    (counted against the file, all placed); by GPU model, pods without GPUs in cpu, the
    others (no gpu_spec in this list) in gpu; a class missing from the groups file: the pod
    list's line of its first pod, exit 2."""
    need_openb()
    pods = openb_pods()
    base = "sim --trace openb --cluster openb --partitions 8 --duration-s 5 --quality packing"
    write("qos.txt", "LS 4\nGuaranteed 4\nBE 1\nBurstable 2\n")
    rusk(base + " --groups-file qos.txt --openb-groups qos --json oq.json")
    d = load("oq.json")
    g = d["groups"]
    assert g["ok"] is True and g["by_trace"] is True and g["ungrouped_tasks"] == 0, g
    for x in g["list"]:
        n = sum(1 for p in pods if p["qos"] == x["name"])
        assert x["tasks"] == n == x["placed"] and n > 0, (x["name"], n, x["tasks"])
    write("gpu.txt", "cpu 1\ngpu 3\n")
    rusk(base + " --groups-file gpu.txt --openb-groups gpu-model --json og.json")
    lst = {x["name"]: x for x in load("og.json")["groups"]["list"]}
    cpu = sum(1 for p in pods if p["num_gpu"] == "0")
    assert lst["cpu"]["tasks"] == cpu and lst["gpu"]["tasks"] == len(pods) - cpu, lst
    write("qos3.txt", "LS 4\nGuaranteed 4\nBE 1\n")
    first = next(i for i, p in enumerate(pods) if p["qos"] == "Burstable") + 2
    r = rusk(base + " --groups-file qos3.txt --openb-groups qos", status=2)
    match(r"openb_pod_list_default.csv:%d: qos class \(--openb-groups qos\) 'Burstable' is "
          r"not a group of --groups-file qos3.txt" % first, r.out)


def bad(text, regex, extra=""):
    write("bad.txt", text)
    r = rusk("run %s --rate 100 --duration-s 0.2 --groups-file bad.txt %s" % (SMALL, extra),
             status=2)
    match(regex, r.out)


@case
def cli_groups_bad_file():
    """Each bad group file: a message naming the file and line (or the file) and exit 2."""
    bad("a 1\nb 1 min:cpu=3\n", r"--groups-file bad.txt:2: unknown dimension 'cpu' "
        r"\(rus, mem or gpu\)")
    bad("a 1 min:rus=500 max:rus=400\n", r"bad.txt:1: group 'a': rus minimum 500 above its "
        r"maximum 400")
    bad("a 1 min:rus=1500\nb 1 min:rus=1000\n", r"--groups-file bad.txt: the 2 groups' rus "
        r"minimums sum to 2500, above the cluster's 2000")
    bad("a -1\n", r"bad.txt:1: group 'a': weight '-1' must be a number > 0")
    bad("a 0\n", r"bad.txt:1: group 'a': weight '0' must be a number > 0")
    bad("a\n", r"bad.txt:1: group 'a': expected NAME WEIGHT")
    bad("a 1 min:rus\n", r"bad.txt:1: 'min:rus' is not min:DIM=N or max:DIM=N")
    bad("a 1 max:mem=-5\n", r"bad.txt:1: max:mem: '-5' is not a whole number")
    bad("a 1\na 2\n", r"bad.txt:2: group 'a' named twice")
    bad("# nothing\n\n", r"--groups-file bad.txt: no group in it")
    r = rusk("run %s --groups-file no-such-file.txt" % SMALL, status=2)
    match(r"--groups-file no-such-file.txt: No such file", r.out)
    r = rusk("sim %s --groups-file bad.txt" % SMALL, status=2)
    match(r"--groups-file bad.txt: no group in it", r.out)
    r = rusk("run %s --groups-file" % SMALL, status=2)
    match(r"--groups-file: needs a file name", r.out)


if __name__ == "__main__":
    main()
