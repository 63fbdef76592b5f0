#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Quota groups through the CLI (issue 31): `rusk run --groups-file FILE` on an overloaded
small cluster divides it 1:2:4 and reports per-group figures (JSON series, summary lines);
bad group files are refused naming FILE:LINE (or FILE, or the flag) with exit 2."""
from rusk_cli import case, load, main, match, rusk, write

SMALL = "--machines 400 --rus-per-machine 5 --partitions 2 --task-ms 1000"


@case
def cli_groups_run():
    """Weights 1:2:4, every group offered the same load, twice the cluster: from the second
    second on, each group's allowance is its weighted share (285 / 571 / 1143 of 2000 RUs,
    within one RU of rounding), usage never passes allowance + bound where it grows, every
    round fair, and the high-weight group waits least."""
    write("g.txt", "# name weight\nlow 1\nmid 2 max:rus=2000\nhigh 4 min:rus=100\n")
    r = rusk("run %s --rate 4000 --duration-s 4 --groups-file g.txt --json g.json" % SMALL,
             merge=False)
    d = load("g.json")
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
    match(r"quota groups \(--groups-file g.txt\): fair every round", r.stdout)
    match(r"high +weight 4 +placed", r.stdout)


@case
def cli_groups_sim():
    """Virtual time: the coordinator's rounds at exact 10 ms multiples; two runs of a seed give
    the same groups section byte for byte; weights 1:2:4 on 2000 RUs offered twice their
    capacity: allowances exactly 285 / 571 / 1143 every second from the first on, usage
    within the bound above them every second and within 1% below them in second 1 (the
    first full second), every round fair."""
    write("g.txt", "low 1\nmid 2\nhigh 4\n")
    cmd = "sim %s --agents 2 --rate 4000 --duration-s 3 --groups-file g.txt --json %%s" % SMALL
    rusk(cmd % "s1.json")
    rusk(cmd % "s2.json")
    a, b = load("s1.json")["groups"], load("s2.json")["groups"]
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
