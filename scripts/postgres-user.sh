# Shared by scripts/pgbouncer.sh and scripts/pg-replica.sh (sourced, not run).

# Runs "$@" as the `postgres` user when this shell is root (PgBouncer and Postgres refuse root), else as is.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Exit 0 when nothing listens on 127.0.0.1:$1.
port_free() {
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}
