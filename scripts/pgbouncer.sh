#!/usr/bin/env bash
# A PgBouncer in transaction pooling mode in front of Postgres, for tests and local runs (ADR 0041).
#
#   scripts/pgbouncer.sh start [DIR]   start one; prints `port=<port> dir=<DIR>`. DIR (default: a new
#                                      temp dir) holds pgbouncer.ini, userlist.txt, the pid file and
#                                      the log. Starting again in a DIR that has a config reuses its port.
#   scripts/pgbouncer.sh stop DIR      stop the one running from DIR (waits for it to exit)
#   scripts/pgbouncer.sh status DIR    exit 0 when the one from DIR runs
#   scripts/pgbouncer.sh install       apt-get install pgbouncer (root with apt only); nothing else installs
#
# Environment: PGBOUNCER_PORT (default: the first free port from 6432), PGBOUNCER_UPSTREAM_HOST
# (127.0.0.1), PGBOUNCER_UPSTREAM_PORT (5432), PGBOUNCER_USER (postgres: the user clients log in
# as, trusted), PGBOUNCER_POOL_SIZE (20). Every database name is forwarded to the upstream.
# PgBouncer refuses to run as root: as root it runs as the `postgres` user.
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"

bin() {
  if command -v pgbouncer >/dev/null 2>&1; then
    command -v pgbouncer
  elif [ -x /usr/sbin/pgbouncer ]; then
    echo /usr/sbin/pgbouncer
  else
    return 1
  fi
}

# as_owner, port_free
source "$(dirname "${BASH_SOURCE[0]}")/postgres-user.sh"

running() {
  [ -f "$1/pgbouncer.pid" ] && kill -0 "$(cat "$1/pgbouncer.pid")" 2>/dev/null
}

write_config() {
  local dir="$1" port="$2" user="${PGBOUNCER_USER:-postgres}"
  printf '"%s" ""\n' "$user" >"$dir/userlist.txt"
  cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=${PGBOUNCER_UPSTREAM_HOST:-127.0.0.1} port=${PGBOUNCER_UPSTREAM_PORT:-5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
default_pool_size = ${PGBOUNCER_POOL_SIZE:-20}
max_client_conn = 500
server_reset_query =
ignore_startup_parameters = extra_float_digits,options
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
  if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; fi
}

# Starts the daemon from DIR's config: true once it accepts connections on PORT, false when it
# stops with a FATAL line in its log or is not up within 5 s.
launch() {
  local exe="$1" dir="$2" port="$3" from
  from=$(($(stat -c %s "$dir/pgbouncer.log" 2>/dev/null || echo 0) + 1))
  rm -f "$dir/pgbouncer.pid"
  as_owner "$exe" -d -q "$dir/pgbouncer.ini" || return 1
  for _ in $(seq 1 100); do
    if running "$dir" && tail -c "+$from" "$dir/pgbouncer.log" 2>/dev/null | grep -q "listening on 127.0.0.1:$port"; then
      ! port_free "$port" && return 0
    fi
    if tail -c "+$from" "$dir/pgbouncer.log" 2>/dev/null | grep -q FATAL; then return 1; fi
    sleep 0.05
  done
  return 1
}

case "$cmd" in
  install)
    if bin >/dev/null; then exit 0; fi
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
      echo "pgbouncer.sh: cannot install pgbouncer (needs root and apt-get)" >&2
      exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null ||
      { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null; }
    ;;

  start)
    exe="$(bin)" || { echo "pgbouncer.sh: pgbouncer is not installed (scripts/pgbouncer.sh install)" >&2; exit 1; }
    if [ -z "$dir" ]; then dir="$(mktemp -d /tmp/sb-pgbouncer.XXXXXX)"; fi
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if running "$dir"; then
      echo "pgbouncer.sh: already running from $dir" >&2
      exit 1
    fi
    auto=""
    if [ -f "$dir/pgbouncer.ini" ]; then
      port="$(sed -n 's/^listen_port = //p' "$dir/pgbouncer.ini")"
    elif [ -n "${PGBOUNCER_PORT:-}" ]; then
      port="$PGBOUNCER_PORT"
      write_config "$dir" "$port"
    else
      auto=1
      port=6432
      while ! port_free "$port"; do port=$((port + 1)); done
      write_config "$dir" "$port"
    fi
    if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; fi
    for _ in $(seq 1 20); do
      if launch "$exe" "$dir" "$port"; then
        echo "port=$port dir=$dir"
        exit 0
      fi
      # A port taken between the check and the bind (another bouncer starting): the next one.
      if [ -n "$auto" ] && tail -5 "$dir/pgbouncer.log" 2>/dev/null | grep -q 'Address already in use'; then
        port=$((port + 1))
        while ! port_free "$port"; do port=$((port + 1)); done
        write_config "$dir" "$port"
        continue
      fi
      break
    done
    echo "pgbouncer.sh: pgbouncer did not start; its log:" >&2
    tail -20 "$dir/pgbouncer.log" >&2 || true
    exit 1
    ;;

  stop)
    [ -n "$dir" ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
    if running "$dir"; then
      pid="$(cat "$dir/pgbouncer.pid")"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
      done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$dir/pgbouncer.pid"
    ;;

  status)
    [ -n "$dir" ] || { echo "usage: $0 status DIR" >&2; exit 2; }
    running "$dir"
    ;;

  *)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
