#!/usr/bin/env bash
# One command on a fresh machine (Node 20+, Postgres and Redis at the default URLs):
# installs, generates, migrates, starts all four services, runs a demo message
# through them and prints the result and where to look. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

export DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/switchboard}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"

ensure_deps
ensure_services
generate_client
build_console
step "create the database if needed and apply migrations"
node -r @swc-node/register scripts/create-database.ts
npx --no-install prisma migrate deploy >/dev/null
step "start the services and run a demo message"
exec node -r @swc-node/register scripts/demo.ts "$@"
