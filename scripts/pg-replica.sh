#!/usr/bin/env bash
# A streaming hot standby of the local Postgres, for tests and local runs (DATABASE_READ_URL, ADR 0042).
#
#   scripts/pg-replica.sh start [DIR]   pg_basebackup of the primary into DIR/data (default DIR: a new
#                                       temp dir) and a hot standby on it; prints `port=<port> dir=<DIR>`
#                                       once it accepts read-only connections. Starting again in a DIR
#                                       that has a standby restarts it on its port.
#   scripts/pg-replica.sh stop DIR      stop the standby running from DIR (fast shutdown; waits)
#   scripts/pg-replica.sh status DIR    exit 0 when the standby from DIR runs
#   scripts/pg-replica.sh pause DIR     pause WAL replay on the standby (lag injected: its reads stop
#                                       advancing while the primary goes on); resume DIR replays again
#   scripts/pg-replica.sh lag DIR MS    recovery_min_apply_delay = MS on the standby (0: none)
#   scripts/pg-replica.sh check         exit 0 when the primary accepts a replication connection, else
#                                       say why and what to change
#   scripts/pg-replica.sh allow         root only: add `host replication <user> 127.0.0.1/32 trust` to
#                                       the primary's pg_hba.conf and reload it (no restart)
#
# Environment: PG_REPLICA_PORT (default: the first free port from 5442), PG_PRIMARY_HOST (127.0.0.1),
# PG_PRIMARY_PORT (5432), PG_REPLICA_USER (postgres), PG_BIN (/usr/lib/postgresql/<version>/bin).
# Postgres refuses to run as root: as root the standby runs as the `postgres` user. The standby
# copies the whole cluster (every database); delete DIR after stop.
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"
primary_host="${PG_PRIMARY_HOST:-127.0.0.1}"
primary_port="${PG_PRIMARY_PORT:-5432}"
user="${PG_REPLICA_USER:-postgres}"

pg_bin() {
  if [ -n "${PG_BIN:-}" ]; then
    echo "$PG_BIN"
    return
  fi
  local d
  d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
  if [ -n "$d" ] && [ -x "$d/pg_basebackup" ]; then
    echo "$d"
  elif command -v pg_basebackup >/dev/null 2>&1; then
    dirname "$(command -v pg_basebackup)"
  else
    return 1
  fi
}

# as_owner, port_free
source "$(dirname "${BASH_SOURCE[0]}")/postgres-user.sh"

psql_primary() {
  psql -X -h "$primary_host" -p "$primary_port" -U "$user" -d postgres -Atq "$@"
}

psql_standby() {
  local port
  port="$(sed -n 's/^port = //p' "$dir/data/postgresql.conf")"
  psql -X -h 127.0.0.1 -p "$port" -U "$user" -d postgres -Atq "$@"
}

running() {
  [ -f "$1/data/postmaster.pid" ] && as_owner "$(pg_bin)/pg_ctl" -D "$1/data" status >/dev/null 2>&1
}

need_dir() {
  [ -n "$dir" ] || { echo "usage: $0 $cmd DIR" >&2; exit 2; }
  [ -f "$dir/data/postgresql.conf" ] || { echo "pg-replica.sh: no standby in $dir" >&2; exit 1; }
}

# Whether the primary can feed a standby: wal_level, a free WAL sender, and a replication connection
# pg_hba.conf lets in. Says what is missing and what to change.
check_primary() {
  local level senders used out
  if ! level="$(psql_primary -c 'SHOW wal_level' 2>&1)"; then
    echo "pg-replica.sh: cannot reach the primary at $primary_host:$primary_port: $level" >&2
    return 1
  fi
  if [ "$level" = minimal ]; then
    echo "pg-replica.sh: the primary has wal_level=minimal; set wal_level=replica (ALTER SYSTEM SET wal_level = replica) and restart it" >&2
    return 1
  fi
  senders="$(psql_primary -c 'SHOW max_wal_senders')"
  used="$(psql_primary -c 'SELECT count(*) FROM pg_stat_replication')"
  if [ "$senders" -le "$used" ]; then
    echo "pg-replica.sh: the primary has no free WAL sender (max_wal_senders=$senders, $used in use); raise max_wal_senders and restart it" >&2
    return 1
  fi
  if ! out="$(psql -X -h "$primary_host" -p "$primary_port" -U "$user" "dbname=postgres replication=true" -Atqc 'IDENTIFY_SYSTEM' 2>&1)"; then
    if grep -q 'no pg_hba.conf entry for replication' <<<"$out"; then
      echo "pg-replica.sh: the primary refuses replication connections: its pg_hba.conf has no 'replication' line for $user from $primary_host (the database 'all' does not cover replication). Add 'host replication $user 127.0.0.1/32 trust' to $(psql_primary -c 'SHOW hba_file') and reload (SELECT pg_reload_conf()), or run: scripts/pg-replica.sh allow" >&2
    else
      echo "pg-replica.sh: the primary refuses a replication connection: $out" >&2
    fi
    return 1
  fi
}

# A primary setting the standby must match or exceed (hot standby refuses to start otherwise).
primary_setting() {
  psql_primary -c "SELECT setting FROM pg_settings WHERE name = '$1'"
}

write_config() {
  local port="$1"
  cat >"$dir/data/postgresql.conf" <<EOF
# The hot standby of scripts/pg-replica.sh (ADR 0042).
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
hot_standby = on
hot_standby_feedback = on
max_connections = $(primary_setting max_connections)
max_worker_processes = $(primary_setting max_worker_processes)
max_wal_senders = $(primary_setting max_wal_senders)
max_prepared_transactions = $(primary_setting max_prepared_transactions)
max_locks_per_transaction = $(primary_setting max_locks_per_transaction)
shared_buffers = 32MB
fsync = off
full_page_writes = on
logging_collector = off
hba_file = '$dir/data/pg_hba.conf'
ident_file = '$dir/data/pg_ident.conf'
EOF
  cat >"$dir/data/pg_hba.conf" <<EOF
local all all trust
host all all 127.0.0.1/32 trust
EOF
  : >"$dir/data/pg_ident.conf"
}

# Starts the standby from DIR: true once it accepts connections, false when it exits or is not up in 30 s.
launch() {
  local port="$1"
  as_owner "$(pg_bin)/pg_ctl" -D "$dir/data" -l "$dir/standby.log" -w -t 30 -s start >/dev/null 2>&1 || return 1
  for _ in $(seq 1 300); do
    if psql -X -h 127.0.0.1 -p "$port" -U "$user" -d postgres -Atqc 'SELECT pg_is_in_recovery()' 2>/dev/null | grep -q t; then
      return 0
    fi
    running "$dir" || return 1
    sleep 0.1
  done
  return 1
}

case "$cmd" in
  check)
    pg_bin >/dev/null || { echo "pg-replica.sh: pg_basebackup is not installed (the postgresql package)" >&2; exit 1; }
    check_primary
    ;;

  allow)
    if [ "$(id -u)" != 0 ]; then
      echo "pg-replica.sh: allow needs root (it edits the primary's pg_hba.conf)" >&2
      exit 1
    fi
    hba="$(psql_primary -c 'SHOW hba_file')"
    line="host replication $user 127.0.0.1/32 trust"
    if ! grep -qxF "$line" "$hba"; then
      printf '# scripts/pg-replica.sh allow: a local hot standby for tests (ADR 0042)\n%s\n' "$line" >>"$hba"
      psql_primary -c 'SELECT pg_reload_conf()' >/dev/null
    fi
    ;;

  start)
    bindir="$(pg_bin)" || { echo "pg-replica.sh: pg_basebackup is not installed (the postgresql package)" >&2; exit 1; }
    if [ -z "$dir" ]; then dir="$(mktemp -d /tmp/sb-replica.XXXXXX)"; fi
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    if running "$dir"; then
      echo "pg-replica.sh: already running from $dir" >&2
      exit 1
    fi
    if [ -f "$dir/data/postgresql.conf" ]; then
      port="$(sed -n 's/^port = //p' "$dir/data/postgresql.conf")"
    else
      check_primary
      port="${PG_REPLICA_PORT:-5442}"
      if [ -z "${PG_REPLICA_PORT:-}" ]; then
        while ! port_free "$port"; do port=$((port + 1)); done
      fi
      # -X stream: the WAL written during the copy comes with it; -R: standby.signal and
      # primary_conninfo, so the copy starts as a standby streaming from the primary.
      if ! out="$(as_owner "$bindir/pg_basebackup" -h "$primary_host" -p "$primary_port" -U "$user" \
        -D "$dir/data" -X stream -R -c fast 2>&1)"; then
        echo "pg-replica.sh: pg_basebackup failed: $out" >&2
        exit 1
      fi
      write_config "$port"
      if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; fi
    fi
    if launch "$port"; then
      echo "port=$port dir=$dir"
      exit 0
    fi
    echo "pg-replica.sh: the standby did not start; its log:" >&2
    tail -20 "$dir/standby.log" >&2 || true
    exit 1
    ;;

  stop)
    [ -n "$dir" ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w -t 30 -s stop >/dev/null 2>&1 || {
        pid="$(head -1 "$dir/data/postmaster.pid" 2>/dev/null || true)"
        [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
      }
    fi
    ;;

  status)
    [ -n "$dir" ] || { echo "usage: $0 status DIR" >&2; exit 2; }
    running "$dir"
    ;;

  pause)
    need_dir
    psql_standby -c 'SELECT pg_wal_replay_pause()' >/dev/null
    # Paused once replay has stopped (pg_get_wal_replay_pause_state: 'paused', not 'pause requested').
    for _ in $(seq 1 100); do
      [ "$(psql_standby -c 'SELECT pg_get_wal_replay_pause_state()')" = paused ] && exit 0
      sleep 0.05
    done
    echo "pg-replica.sh: replay did not pause" >&2
    exit 1
    ;;

  resume)
    need_dir
    psql_standby -c 'SELECT pg_wal_replay_resume()' >/dev/null
    ;;

  lag)
    need_dir
    ms="${3:-}"
    [[ "$ms" =~ ^[0-9]+$ ]] || { echo "usage: $0 lag DIR MS (a whole number of milliseconds)" >&2; exit 2; }
    psql_standby -c "ALTER SYSTEM SET recovery_min_apply_delay = '${ms}ms'" >/dev/null
    psql_standby -c 'SELECT pg_reload_conf()' >/dev/null
    ;;

  *)
    sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
