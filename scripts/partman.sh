#!/usr/bin/env bash
# pg_partman for the partitioned journal, transcript, ledger and hook runs (ADR 0044).
#
#   scripts/partman.sh install    apt-get install postgresql-<major>-partman when missing (root with apt
#                                 only), then CREATE EXTENSION pg_partman (schema partman) in the database
#                                 of DATABASE_URL and register the four tables (sb_partition_register():
#                                 rows kept in their default partition move into weekly children)
#   scripts/partman.sh status     pg_partman's configuration and every partition with its row count
#   scripts/partman.sh maintain   one pass of upkeep now (sb_partition_maintenance: children made ahead,
#                                 PARTITION_RETENTION applied, partitions detached and kept), as the
#                                 harness' hourly `partitions` maintenance task does
#
# Environment: DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/switchboard), PARTITION_RETENTION.
set -euo pipefail

cmd="${1:-}"
url="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/switchboard}"
q() { psql "$url" -v ON_ERROR_STOP=1 -X -q "$@"; }

available() {
  [ -n "$(psql "$url" -X -Atc "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_partman'" 2>/dev/null)" ]
}

case "$cmd" in
  install)
    if ! available; then
      major="$(psql "$url" -X -Atc 'SHOW server_version_num' | cut -c1-2)"
      if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        echo "pg_partman is not installed: as root, apt-get install postgresql-$major-partman" >&2
        exit 1
      fi
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q "postgresql-$major-partman" >/dev/null ||
        { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "postgresql-$major-partman" >/dev/null; }
    fi
    q -c "CREATE SCHEMA IF NOT EXISTS partman" -c "CREATE EXTENSION IF NOT EXISTS pg_partman SCHEMA partman"
    if [ -n "$(psql "$url" -X -Atc "SELECT 1 FROM pg_proc WHERE proname = 'sb_partition_register'")" ]; then
      q -Atc "SELECT 'registered: ' || sb_partition_register()"
    fi
    ;;
  status)
    q -c "SELECT parent_table, control, partition_interval, premake, retention, retention_keep_table FROM partman.part_config ORDER BY 1" 2>/dev/null ||
      echo "pg_partman is not installed in this database (scripts/partman.sh install)"
    q -c "SELECT p.relname AS parent, c.relname AS partition, pg_get_expr(c.relpartbound, c.oid) AS bounds,
            (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I', c.relname), false, true, '')))[1]::text::bigint AS rows
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
          WHERE p.relname IN ('events', 'messages', 'ledger_entries', 'hook_runs') ORDER BY 1, 2"
    ;;
  maintain)
    q -Atc "SELECT sb_partition_maintenance(nullif('${PARTITION_RETENTION:-}', ''))"
    ;;
  *)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
