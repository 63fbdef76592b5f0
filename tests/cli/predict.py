#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk predict (3Sigma's runtime predictor): the accuracy report on the generator, on a
small SWF trace and on the openb pod list (JSON checked), FILE:LINE for a malformed line,
the flag for a bad value, empty traces and the cap on feature values."""
from rusk_cli import case, data, last_line, load, main, match, need_openb, refusal, rusk, write

refusal("cli_predict_bad_swf", "predict {data}/predict_bad_swf.txt",
        r"predict_bad_swf.txt:3: 17 fields \(an SWF job line has 18\)")
# TRACE is cli_parse's optional positional argument: a second one is refused, naming it.
refusal("cli_predict_extra_arg", "predict a b", r"unexpected argument 'b'")
refusal("cli_predict_bad_flag", "predict --generate 10x", r"--generate: '10x' is not an integer")
refusal("cli_predict_no_input", "predict --seed 3", r"give a TRACE or --generate N, not neither")
refusal("cli_predict_bad_format", "predict x --format csv", r"--format: 'csv' is not")


@case
def cli_predict_generate():
    r = rusk("predict --generate 3000 --seed 7 --json pred.json", merge=False)
    assert "within +-25%" in r.stdout, "no 'within +-25%' line"
    d = load("pred.json")
    e = d["estimates"]
    a = d["accuracy"]
    assert d["trace"]["jobs"] == 3000 and e["total"] + e["none"] == 3000 and \
        e["expert"] + e["global"] == e["total"], e
    assert 0 < a["within_5pct"] <= a["within_25pct"] < 1 and \
        abs(sum(d["fig2d"]["share"]) - 1) < 1e-6 and a["nmae"] < 1, a
    assert len(d["families"]) == 28 and d["predictor"]["bytes_per_value"] <= 2048


@case
def cli_predict_swf():
    rusk("predict %s --json pred_swf.json --quiet" % data("predict_ok_swf.txt"))
    d = load("pred_swf.json")
    t = d["trace"]
    e = d["estimates"]
    assert t["format"] == "swf" and t["jobs"] == 10 and t["skipped"] == 1 and \
        t["comments"] == 2, t
    assert e["total"] + e["none"] == 9 and e["expert"] >= 3, e


@case
def cli_predict_trace_after_flags():
    """TRACE may follow the options."""
    rusk("predict --quiet --json pred_after.json %s" % data("predict_ok_swf.txt"))
    assert load("pred_after.json")["trace"]["jobs"] == 10


@case
def cli_predict_openb():
    """Every pod of the public openb pod list that ran is predicted, from its shape and QoS
    class; the pods never scheduled are skipped."""
    need_openb()
    rusk("predict openb --quiet --json pob.json")
    d = load("pob.json")
    t = d["trace"]
    e = d["estimates"]
    a = d["accuracy"]
    assert t["format"] == "openb" and t["jobs"] == 8152 and t["skipped"] == 897, t
    assert e["total"] + e["none"] == 8152 - 897, e
    assert 0 < a["nmae"] < 2 and 0 < a["within_25pct"] < 1, a


@case
def cli_predict_empty_and_cap():
    """An empty or comment-only SWF is refused (exit 2, as sim refuses an empty trace); the
    predictor's cap on feature values is a flag, its memory per value stated."""
    write("empty.swf", b"")
    write("comments.swf", "; Version: 2.2\n; only comments\n")
    for f in ("empty.swf", "comments.swf"):
        match(f + r": no jobs", last_line(rusk("predict " + f, status=2).out))
    r = rusk("predict --generate 2000 --max-values 8 --json cap.json", merge=False)
    fv = [ln for ln in r.stdout.split("\n") if "feature values" in ln]
    assert fv, "no 'feature values' line"
    match(r"bytes each[^\n]*at most 8 values, --max-values[^\n]*raise --max-values", fv[0])
    p = load("cap.json")["predictor"]
    assert p["max_values"] == 8 and p["values"] <= 8 and p["untracked"] > 0 and \
        p["bytes_per_value"] > 0, p


if __name__ == "__main__":
    raise SystemExit(main())
