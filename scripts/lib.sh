# Shared by scripts/test.sh and scripts/demo.sh.
export PRISMA_QUERY_ENGINE_LIBRARY="${PRISMA_QUERY_ENGINE_LIBRARY:-/dev/null}"
export CHECKPOINT_DISABLE=1
export NX_DAEMON=false

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# npm ci installs exactly the committed lockfile and never rewrites it (npm install may); it runs
# when node_modules is missing or older than package.json or the lockfile.
ensure_deps() {
  if [ ! -d node_modules ] || [ package.json -nt node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    step "install dependencies (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
}

generate_client() {
  step "generate the Prisma client"
  npx --no-install prisma generate >/dev/null
}

# The services these machines run; started when they are installed but stopped.
ensure_services() {
  if command -v pg_isready >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    if command -v pg_ctlcluster >/dev/null; then
      step "start PostgreSQL"
      pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    fi
  fi
  if command -v redis-cli >/dev/null && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
    if command -v redis-server >/dev/null; then
      step "start Redis"
      redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /tmp --logfile /tmp/redis-switchboard.log || true
    fi
  fi
}

# A local hot standby for test/e2e/read-replica.e2e.spec.ts (ADR 0042) needs the primary to accept
# replication connections from 127.0.0.1: as root, add that pg_hba.conf line (a reload, no restart).
ensure_replication() {
  if ! scripts/pg-replica.sh check >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    step "allow local replication (pg_hba.conf)"
    scripts/pg-replica.sh allow || echo "replication not allowed: test/e2e/read-replica.e2e.spec.ts will skip"
  fi
}

# PgBouncer for test/e2e/pgbouncer.e2e.spec.ts (ADR 0041), which skips without it: installed when
# missing and this runs as root with apt-get; failing to install fails nothing.
ensure_pgbouncer() {
  if ! command -v pgbouncer >/dev/null && [ ! -x /usr/sbin/pgbouncer ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "install PgBouncer"
    scripts/pgbouncer.sh install || echo "PgBouncer not installed: test/e2e/pgbouncer.e2e.spec.ts will skip"
  fi
}

# pg_partman for the partitioned tables (ADR 0044): installed when missing and this runs as root with
# apt-get, before the test template database is migrated (the migration registers the tables with it).
# Failing to install fails nothing: the tables keep their rows in a DEFAULT partition and
# libs/store/src/partitions.int.spec.ts skips its pg_partman cases.
ensure_partman() {
  if [ ! -f "/usr/share/postgresql/$(ls /etc/postgresql 2>/dev/null | head -1)/extension/pg_partman.control" ] &&
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ -d /etc/postgresql ]; then
    step "install pg_partman"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "postgresql-$(ls /etc/postgresql | head -1)-partman" >/dev/null ||
      echo "pg_partman not installed: partitions keep every row in their default partition"
  fi
}

# Debian's Chromium for the console's browser tests (test/e2e/console-*.e2e.spec.ts, driven by
# playwright-core): installed when missing and this runs as root with apt-get. Playwright's own
# browser download is not used (these machines cannot fetch it).
ensure_chromium() {
  if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "install Chromium (the console's browser tests)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null ||
      echo "Chromium not installed: the console's browser tests will fail"
  fi
}

# The web console's static build (apps/console/dist), which the gateway serves at /console: built
# when missing or older than any of its sources or the API client it is typed by.
build_console() {
  local stamp=apps/console/dist/index.html
  if [ ! -f "$stamp" ] || [ -n "$(find apps/console/src apps/console/index.html apps/console/vite.config.mts libs/client/src package-lock.json -newer "$stamp" -print -quit)" ]; then
    step "build the web console (vite)"
    npx --no-install vite build apps/console --logLevel warn
  fi
}
