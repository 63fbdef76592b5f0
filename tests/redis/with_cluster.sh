#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs CMD... with a fresh 3+3 Redis Cluster (cluster.sh) on free ports, its address in
# RUSK_REDIS_URL, and stops the cluster afterwards, also when CMD fails or is killed.
# Exit: CMD's status; 77 (skip) when redis-server is not installed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v redis-server >/dev/null || { echo "redis-server not installed: skipped"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/rusk-redis.XXXXXX")
trap '"$here/cluster.sh" stop "$dir"; rm -rf "$dir"' EXIT
trap 'exit 143' TERM INT
port=$("$here/cluster.sh" free-port) || exit 1
"$here/cluster.sh" start "$dir" "$port" || exit $?
export RUSK_REDIS_URL="redis://127.0.0.1:$port,127.0.0.1:$((port + 1))"
"$@"
