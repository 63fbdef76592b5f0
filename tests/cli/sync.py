#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rusk sync: policies and strategies side by side; DiffSync needs P >= N; bad values."""
from rusk_cli import case, main, match, refusal, rusk


@case
def cli_sync_small():
    """Agents publish and read snapshots at once (a concurrency test too)."""
    r = rusk("sync --machines 2000 --partitions 8 --agents 4 --gap-ms 50 --duration-s 0.3")
    match(r"diff +latency +[0-9]+", r.out)


@case
def cli_sync_strategies():
    r = rusk("sync --machines 2000 --partitions 8 --agents 2 --sync diff --strategy all "
             "--duration-s 0.2")
    match(r"diff +latency.*diff +quality.*diff +adaptive.*diff +random.*diff +central", r.out)


refusal("cli_sync_p_lt_n", "sync --machines 2000 --partitions 4 --agents 8 --sync diff",
        r"--sync diff with --agents 8 --partitions 4: .*P >= N")
refusal("cli_sync_bad_strategy", "sync --strategy best",
        r"--strategy: 'best' is not latency, quality, adaptive, random, central or all")
refusal("cli_sync_bad_policy", "sync --sync fast", r"--sync: 'fast' is not diff, same, state or all")

if __name__ == "__main__":
    raise SystemExit(main())
