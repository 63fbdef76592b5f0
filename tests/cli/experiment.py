#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk experiment and rusk plot: the PNGs of a run's CSV (cli_run_short's), and the
refusals of both commands' arguments (they read them through cli_parse)."""
import csv
import os

from rusk_cli import case, data, main, match, refusal, rusk


@case
def cli_plot():
    """rusk plot on the CSV of cli_run_short (gnuplot-nox is installed by make deps)."""
    rusk("plot run.csv -o plots")
    for f in ("delay.png", "throughput.png", "quality.png"):
        p = os.path.join("plots", f)
        assert os.path.isfile(p) and os.path.getsize(p) > 0, p


refusal("cli_plot_bad_csv", "plot {data}/trace_ok.csv -o plots_bad",
        r"trace_ok.csv:1: not a `rusk run --csv` file")
refusal("cli_plot_extra_csv", "plot a.csv b.csv -o plots_extra",
        r"rusk plot: unexpected argument 'b.csv'")
refusal("cli_plot_no_dir", "plot no_dir.csv", r"rusk plot: missing -o DIR")
refusal("cli_experiment_unknown", "experiment fig99",
        r"experiment NAME: 'fig99' is not eq2, tarcil-cdf, tarcil-overhead, fgd or list")
refusal("cli_experiment_bad_option", "experiment eq2 --machines 5",
        r"rusk experiment: unknown option '--machines' \(try: rusk experiment --help\)")
refusal("cli_experiment_no_name", "experiment --rounds 5", r"rusk experiment: missing NAME")
refusal("cli_bad_rounds", "experiment eq2 --rounds 0", r"--rounds: '0' is not an integer")

FGD_SMALL = "experiment fgd --cluster {data}/nodes_gpu.csv --trace {data}/pods_fgd.csv"
FGD_HEADER = ("model,seed,point,arrived_gpu_demand,placed,failed,gpu_allocated,"
              "unallocated_gpu_share,fragmented_share,fragmented_of_capacity")


@case
def cli_experiment_fgd_small():
    """rusk experiment fgd on the 4-machine node list and a 10-pod list (no public trace):
    every model and seed fills until the bound, byte-identical twice; the fill rows are
    5% steps of arrived GPU demand with allocation that only grows; until a pod first
    finds no machine every model has placed the same pods (one draw sequence per seed)."""
    args = FGD_SMALL.format(data=data("").rstrip(os.sep))
    r1 = rusk(args + " --csv fgd1.csv", merge=False)
    rusk(args + " --csv fgd2.csv", merge=False)
    assert open("fgd1.csv").read() == open("fgd2.csv").read(), "two runs differ"
    for m in ("score", "packing", "fgd"):
        match(r"fgd %-8s filled: unallocated GPU share [0-9.]+%% \(" % m, r1.stderr)
    assert open("fgd1.csv").readline().strip() == FGD_HEADER
    rows = list(csv.DictReader(open("fgd1.csv")))
    runs = {(x["model"], x["seed"]) for x in rows}
    assert runs == {(m, s) for m in ("score", "packing", "fgd") for s in ("1", "2", "3")}, runs
    for run in runs:
        mine = [x for x in rows if (x["model"], x["seed"]) == run]
        assert [x["point"] for x in mine].count("end") == 1, run
        assert mine[-1]["point"] == "end", run
        fills = [x for x in mine if x["point"] == "fill"]
        for k, x in enumerate(fills):
            assert abs(float(x["arrived_gpu_demand"]) - 0.05 * (k + 1)) < 1e-3, x
        prev = -1.0
        for x in mine:
            a, u = float(x["gpu_allocated"]), float(x["unallocated_gpu_share"])
            assert 0 <= a <= 1 and abs(a + u - 1) < 2e-4, x
            assert 0 <= float(x["fragmented_share"]) <= 1, x
            assert a >= prev - 1e-9, (run, "allocation fell", x)
            prev = a
        # The bound: 64 pods in a row without a machine, or 300% arrived demand.
        assert float(mine[-1]["arrived_gpu_demand"]) >= 3.0 or int(mine[-1]["failed"]) >= 64
    for s in ("1", "2", "3"):
        clean = {m: [x["gpu_allocated"] for x in rows if x["model"] == m and x["seed"] == s
                     and x["point"] == "fill" and x["failed"] == "0"]
                 for m in ("score", "packing", "fgd")}
        n = min(len(v) for v in clean.values())
        assert n > 0 and clean["score"][:n] == clean["packing"][:n] == clean["fgd"][:n], clean


@case
def cli_experiment_fgd_shapes():
    """A pod list of shapes only (the five columns of the published multigpu variants:
    no gpu_spec, no times) fills exactly as the full list with gpu_spec left empty; `rusk
    sim` refuses it, naming the file, the missing columns and who reads such a list."""
    full = [ln.rstrip("\n").split(",") for ln in open(data("pods_fgd.csv"))]
    with open("nospec.csv", "w") as f:
        for k, row in enumerate(full):
            f.write(",".join(row if k == 0 else row[:5] + [""] + row[6:]) + "\n")
    base = "experiment fgd --cluster {d}/nodes_gpu.csv --trace ".format(
        d=data("").rstrip(os.sep))
    rusk(base + data("pods_fgd_shapes.csv") + " --seeds 2 --csv shapes.csv", merge=False)
    rusk(base + "nospec.csv --seeds 2 --csv nospec_out.csv", merge=False)
    assert open("shapes.csv").read() == open("nospec_out.csv").read(), "shapes differ"
    r = rusk("sim --trace " + data("pods_fgd_shapes.csv") + " --trace-format openb --cluster "
             + data("nodes_gpu.csv"), status=2)
    match(r"pods_fgd_shapes.csv:1: not an openb pod list header: missing columns gpu_spec.*"
          r"read by `rusk experiment fgd` only", r.out)


@case
def cli_experiment_fgd_memo():
    """A pod that finds no machine does not refuse the pods after it: one machine with 8
    GPUs among 400 CPU-only ones (a decision's draws miss it now and then) and pods asking
    1 GPU each. The agent's memo of failed demands lasts until its view syncs; the fill
    syncs it after each failed pod, so a sampling miss costs that pod only and every model
    and seed allocates all 8 GPUs (before, a miss refused every later pod without drawing:
    0 to 6 GPUs allocated in each of these 24 runs)."""
    with open("memo_nodes.csv", "w") as f:
        f.write("sn,cpu_milli,memory_mib,gpu,model\n")
        f.write("g0,64000,262144,8,V100\n")
        for k in range(400):
            f.write(f"c{k},32000,131072,0,\n")
    with open("memo_pods.csv", "w") as f:
        f.write("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n")
        f.write("p0,1000,1024,1,1000\n")
    rusk("experiment fgd --cluster memo_nodes.csv --trace memo_pods.csv --seeds 8 "
         "--csv memo.csv", merge=False)
    rows = list(csv.DictReader(open("memo.csv")))
    ends = [x for x in rows if x["point"] == "end"]
    assert len(ends) == 24, len(ends)
    for x in ends:
        assert float(x["gpu_allocated"]) == 1.0, x
        assert int(x["placed"]) == 8, x


refusal("cli_experiment_fgd_bad_seeds", "experiment fgd --seeds 0",
        r"rusk: --seeds: '0' is not an integer in 1..64")
refusal("cli_experiment_fgd_only", "experiment eq2 --seeds 2",
        r"--cluster, --trace, --seeds and --sample are options of `rusk experiment fgd` only")
refusal("cli_experiment_fgd_no_nodes",
        "experiment fgd --cluster {data}/no_such_nodes.csv --trace {data}/pods_fgd.csv",
        r"rusk: --cluster: .*no_such_nodes.csv: cannot open")
refusal("cli_experiment_fgd_bad_pods",
        "experiment fgd --cluster {data}/nodes_gpu.csv --trace {data}/pods_bad_gpus.csv",
        r"rusk: --trace: .*pods_bad_gpus.csv:2: num_gpu")

if __name__ == "__main__":
    raise SystemExit(main())
