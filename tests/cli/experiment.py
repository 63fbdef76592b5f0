#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk experiment and rusk plot: the PNGs of a run's CSV (cli_run_short's), and the
refusals of both commands' arguments (they read them through cli_parse)."""
import os

from rusk_cli import case, main, refusal, rusk


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
refusal("cli_plot_no_dir", "plot run.csv", r"rusk plot: missing -o DIR")
refusal("cli_experiment_unknown", "experiment fig99",
        r"experiment NAME: 'fig99' is not eq2, tarcil-cdf, tarcil-overhead or list")
refusal("cli_experiment_bad_option", "experiment eq2 --machines 5",
        r"rusk experiment: unknown option '--machines' \(try: rusk experiment --help\)")
refusal("cli_experiment_no_name", "experiment --rounds 5", r"rusk experiment: missing NAME")
refusal("cli_bad_rounds", "experiment eq2 --rounds 0", r"--rounds: '0' is not an integer")

if __name__ == "__main__":
    raise SystemExit(main())
