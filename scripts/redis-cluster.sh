#!/usr/bin/env bash
# A local Redis Cluster of 3 masters and 3 replicas, for tests and local runs (ADR 0043).
#
#   scripts/redis-cluster.sh start [DIR]   start one; prints `ports=<p1,...,p6> dir=<DIR>`. DIR (default:
#                                          a new temp dir) holds one sub-directory per node (its
#                                          redis.conf, nodes.conf, pid file and log).
#   scripts/redis-cluster.sh stop DIR      stop every node started from DIR (waits for each to exit)
#   scripts/redis-cluster.sh status DIR    exit 0 when every node from DIR runs, reports cluster_state:ok
#                                          and every replica is in sync with its master
#
# Environment: REDIS_CLUSTER_PORT (default: the first of six consecutive free ports from 7100),
# REDIS_CLUSTER_NODE_TIMEOUT (cluster-node-timeout in ms, default 2000: a failed master's replica is
# promoted a few seconds after it stops; cluster-replica-validity-factor is 0, so it always is).
# Nothing is kept on disk (no RDB, no AOF). `start` returns once every replica is in sync. Switchboard's
# settings for it: REDIS_CLUSTER_NODES=127.0.0.1:<p1>,127.0.0.1:<p2>,... and QUEUE_PREFIX='{sb}'.
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"
NODES=6

port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# The nodes' ports, from DIR's sub-directories (node-<port>), in order.
ports_of() {
  local d
  for d in "$1"/node-*; do
    [ -d "$d" ] && echo "${d##*/node-}"
  done | sort -n
}

node_running() {
  [ -f "$1/node-$2/redis.pid" ] && kill -0 "$(cat "$1/node-$2/redis.pid")" 2>/dev/null
}

cli() {
  redis-cli -h 127.0.0.1 -p "$1" "${@:2}"
}

# True when every node answers cluster_state:ok (a node that is down counts as not ok) and every
# replica has finished its first sync with its master (before that it cannot take over).
all_ok() {
  local p info
  for p in $(ports_of "$1"); do
    cli "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
    info="$(cli "$p" info replication 2>/dev/null)" || return 1
    if grep -q '^role:slave' <<<"$info"; then
      grep -q '^master_link_status:up' <<<"$info" || return 1
    fi
  done
}

case "$cmd" in
  start)
    command -v redis-server >/dev/null || { echo "redis-cluster.sh: redis-server is not installed" >&2; exit 1; }
    command -v redis-cli >/dev/null || { echo "redis-cluster.sh: redis-cli is not installed" >&2; exit 1; }
    if [ -z "$dir" ]; then dir="$(mktemp -d /tmp/sb-redis-cluster.XXXXXX)"; fi
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if [ -n "$(ports_of "$dir")" ]; then
      echo "redis-cluster.sh: $dir already holds a cluster (stop it and use a new DIR)" >&2
      exit 1
    fi
    # Six consecutive free ports (and their cluster bus ports, +10000).
    base="${REDIS_CLUSTER_PORT:-7100}"
    for _ in $(seq 1 200); do
      ok=1
      for i in $(seq 0 $((NODES - 1))); do
        if ! port_free $((base + i)) || ! port_free $((base + i + 10000)); then ok=""; break; fi
      done
      [ -n "$ok" ] && break
      base=$((base + NODES))
    done
    [ -n "$ok" ] || { echo "redis-cluster.sh: no six free ports from ${REDIS_CLUSTER_PORT:-7100}" >&2; exit 1; }
    ports=()
    for i in $(seq 0 $((NODES - 1))); do
      p=$((base + i))
      ports+=("$p")
      n="$dir/node-$p"
      mkdir -p "$n"
      cat >"$n/redis.conf" <<EOF
port $p
bind 127.0.0.1
daemonize yes
dir $n
pidfile $n/redis.pid
logfile $n/redis.log
cluster-enabled yes
cluster-config-file $n/nodes.conf
cluster-node-timeout ${REDIS_CLUSTER_NODE_TIMEOUT:-2000}
# A replica takes over however long ago it last heard from its master (the default refuses after
# 10 node timeouts without it): a test cluster must always fail over.
cluster-replica-validity-factor 0
appendonly no
save ""
maxmemory-policy noeviction
EOF
      if ! redis-server "$n/redis.conf" >"$n/start.out" 2>&1; then
        echo "redis-cluster.sh: node $p did not start:" >&2
        cat "$n/start.out" "$n/redis.log" >&2 2>/dev/null || true
        "$0" stop "$dir" || true
        exit 1
      fi
    done
    for p in "${ports[@]}"; do
      for _ in $(seq 1 100); do
        cli "$p" ping >/dev/null 2>&1 && break
        sleep 0.05
      done
    done
    addrs=()
    for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
    if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1; then
      echo "redis-cluster.sh: cluster create failed:" >&2
      tail -20 "$dir/create.log" >&2
      "$0" stop "$dir" || true
      exit 1
    fi
    for _ in $(seq 1 400); do
      all_ok "$dir" && break
      sleep 0.05
    done
    if ! all_ok "$dir"; then
      echo "redis-cluster.sh: the cluster did not reach cluster_state:ok with every replica in sync" >&2
      "$0" stop "$dir" || true
      exit 1
    fi
    echo "ports=$(IFS=,; echo "${ports[*]}") dir=$dir"
    ;;

  stop)
    [ -n "$dir" ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
    pids=()
    for p in $(ports_of "$dir"); do
      if node_running "$dir" "$p"; then
        pid="$(cat "$dir/node-$p/redis.pid")"
        kill "$pid" 2>/dev/null || true
        pids+=("$pid")
      fi
    done
    for pid in "${pids[@]}"; do
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
      done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    done
    for p in $(ports_of "$dir"); do rm -f "$dir/node-$p/redis.pid"; done
    ;;

  status)
    [ -n "$dir" ] || { echo "usage: $0 status DIR" >&2; exit 2; }
    [ -n "$(ports_of "$dir")" ] || exit 1
    for p in $(ports_of "$dir"); do node_running "$dir" "$p" || exit 1; done
    all_ok "$dir"
    ;;

  *)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
