#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A throwaway Redis Cluster for rusk's backend tests (issue 30): 3 masters + 3 replicas on
# 127.0.0.1 ports PORT..PORT+5 (cluster bus PORT+10000..), data and logs under DIR.
#
#   cluster.sh free-port [PID]      prints a base port in 17000..27000 whose 6 ports and
#                                   bus ports are all free (bind-checked), reserved for PID
#                                   (default: the caller) until `stop` or PID's end
#   cluster.sh start DIR PORT       starts the 6 servers, `redis-cli --cluster create`,
#                                   waits (at most 60 s) until every node says cluster_state:ok
#                                   and every replica's link is up
#                                   (RUSK_REDIS_PASSWORD set: every server requires it;
#                                   RUSK_REDIS_ANNOUNCE="A0 .. A5" set: server PORT+i announces
#                                   client port Ai, its bus port staying PORT+i+10000, so
#                                   clients and replicas reach it through Ai: a forwarder
#                                   such as delay_proxy.py, which must be running;
#                                   RUSK_REDIS_NODE_TIMEOUT_MS: cluster-node-timeout,
#                                   default 2000: a master paused longer is failed over)
#   cluster.sh stop DIR             SIGKILLs every server started in DIR and waits until they
#                                   are gone (their data is thrown away: a SIGTERM took 1.5 s
#                                   to end a server); safe to call twice or after a failed start
#
# The servers sync replicas without redis' default 5 s diskless-sync delay (a start took
# 9.5 s with it, 4.9 s without), and a server asked to stop does not wait for its replicas.
#   cluster.sh kill DIR PORT        SIGKILLs the server on PORT (a master dying)
#   cluster.sh replica-of DIR PORT  prints the port of the (first) replica of master PORT
#   cluster.sh pause DIR PORT       SIGSTOPs the server on PORT (a replica falling behind:
#   cluster.sh resume DIR PORT      what its master acknowledges meanwhile is not replicated)
#   cluster.sh cut DIR PORT         closes master PORT's replication links (CLIENT KILL TYPE
#                                   replica): with its replica paused, nothing the master
#                                   acknowledges from then on reaches it, even from socket
#                                   buffers, so a failover loses it for certain
#
# Exit 0 on success; 77 (skip) from start when redis-server or redis-cli are missing.
set -euo pipefail
cmd=${1:-}
case "$cmd" in
free-port)
  # Cases run side by side (ctest -j): a base port is reserved by creating
  # $TMPDIR/rusk-redis-ports/BASE exclusively (O_EXCL), holding the caller's pid; a
  # reservation whose owner is gone is taken over, and `stop` drops its own.
  exec python3 - "${2:-$PPID}" <<'PY'
import os, random, socket, sys
owner = int(sys.argv[1])
resv = os.path.join(os.environ.get("TMPDIR", "/tmp"), "rusk-redis-ports")
os.makedirs(resv, exist_ok=True)
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
def reserve(b):
    f = os.path.join(resv, str(b))
    for _ in range(2):
        try:
            fd = os.open(f, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                pid = int(open(f).read() or 0)
            except (OSError, ValueError):
                return False
            if pid > 0 and os.path.exists("/proc/%d" % pid):
                return False
            try:
                os.unlink(f)       # its owner ended without `stop`: take it over
            except OSError:
                return False
            continue
        os.write(fd, str(owner).encode()); os.close(fd)
        return True
    return False
bases = list(range(17000, 27000, 10)); random.shuffle(bases)
for b in bases:
    if all(free(b + i) and free(b + 10000 + i) for i in range(6)) and reserve(b):
        print(b); break
else:
    raise SystemExit("no free port range in 17000..27000")
PY
  ;;
start)
  dir=$2 port=$3
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null || {
    echo "redis-server or redis-cli missing (apt-get install redis-server)"; exit 77; }
  mkdir -p "$dir"
  # RUSK_REDIS_PASSWORD set: every server asks for it (requirepass) and its replicas give
  # it to their master (masterauth); redis-cli takes it from REDISCLI_AUTH
  auth=()
  if [ -n "${RUSK_REDIS_PASSWORD:-}" ]; then
    auth=(--requirepass "$RUSK_REDIS_PASSWORD" --masterauth "$RUSK_REDIS_PASSWORD")
    export REDISCLI_AUTH="$RUSK_REDIS_PASSWORD"
  fi
  announce=(${RUSK_REDIS_ANNOUNCE:-})
  if [ ${#announce[@]} != 0 ] && [ ${#announce[@]} != 6 ]; then
    echo "RUSK_REDIS_ANNOUNCE='${RUSK_REDIS_ANNOUNCE}': give 6 ports, one for each server"; exit 2
  fi
  addrs=()
  for i in 0 1 2 3 4 5; do
    p=$((port + i)); d="$dir/$p"; mkdir -p "$d"
    ann=()
    [ ${#announce[@]} = 6 ] && ann=(--cluster-announce-port "${announce[$i]}"
      --cluster-announce-bus-port $((p + 10000)))
    redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes \
      --cluster-config-file "$d/nodes.conf" --cluster-node-timeout "${RUSK_REDIS_NODE_TIMEOUT_MS:-2000}" \
      --dir "$d" --save "" --appendonly no --repl-diskless-sync-delay 0 --shutdown-on-sigterm "nosave now" --daemonize yes \
      --pidfile "$d/redis.pid" --logfile "$d/redis.log" "${auth[@]}" "${ann[@]}" >/dev/null
    addrs+=("127.0.0.1:$p")
  done
  for i in 0 1 2 3 4 5; do   # every server answers before the cluster is made (<= 10 s)
    for _ in $(seq 100); do redis-cli -p $((port + i)) ping >/dev/null 2>&1 && break; sleep 0.1; done
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 || {
    echo "redis-cli --cluster create failed:"; tail -5 "$dir/create.log"; exit 1; }
  for _ in $(seq 600); do
    ok=0
    for i in 0 1 2 3 4 5; do
      redis-cli -p $((port + i)) cluster info 2>/dev/null | grep -q 'cluster_state:ok' && ok=$((ok + 1))
    done
    # ... and every replica's link to its master is up (a failover test needs it)
    linked=0
    for i in 0 1 2 3 4 5; do
      redis-cli -p $((port + i)) role 2>/dev/null | sed -n 4p | grep -qx connected && linked=$((linked + 1))
    done
    [ "$ok" = 6 ] && [ "$linked" = 3 ] && exit 0
    sleep 0.1
  done
  echo "cluster at 127.0.0.1:$port not ok (or replicas not linked) after 60 s"; exit 1
  ;;
stop)
  dir=$2
  base=$(ls "$dir" 2>/dev/null | grep -E '^[0-9]+$' | sort -n | head -1 || true)
  [ -n "$base" ] && rm -f "${TMPDIR:-/tmp}/rusk-redis-ports/$base"
  pids=()
  for f in "$dir"/*/redis.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    # only a redis-server: the pid file of a server that already ended may name another process
    case "$(cat /proc/"$pid"/comm 2>/dev/null)" in redis-server*) ;; *) continue ;; esac
    kill -9 "$pid" 2>/dev/null && pids+=("$pid") || true
  done
  for _ in $(seq 100); do
    alive=0
    for pid in "${pids[@]:-}"; do   # a zombie is gone: it waits only for init to reap it
      [ -n "$pid" ] && [ -r "/proc/$pid/stat" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] && alive=1
    done
    [ "$alive" = 0 ] && exit 0
    sleep 0.05
  done
  echo "redis servers of $dir still alive 5 s after SIGKILL: ${pids[*]}"; exit 1
  ;;
kill)
  dir=$2 port=$3
  kill -9 "$(cat "$dir/$port/redis.pid")"
  ;;
replica-of)
  port=$3
  # ROLE of a master: master, offset, then ip, port, offset of each replica
  redis-cli -p "$port" role | sed -n 4p
  ;;
pause)
  kill -STOP "$(cat "$2/$3/redis.pid")"
  ;;
resume)
  kill -CONT "$(cat "$2/$3/redis.pid")"
  ;;
cut)
  redis-cli -p "$3" client kill type replica >/dev/null
  ;;
*)
  echo "usage: cluster.sh free-port | start DIR PORT | stop DIR | kill|pause|resume|cut|replica-of DIR PORT" >&2
  exit 2
  ;;
esac
