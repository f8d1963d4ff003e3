#!/usr/bin/env bash
# The one command that runs every check: install, generate, migrate-able template,
# lint, format, typecheck, then unit, integration and e2e tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_deps
ensure_services
ensure_pgbouncer
ensure_partman
ensure_replication
ensure_chromium
generate_client
build_console

step "lint (type-aware ESLint)"
npx --no-install eslint --max-warnings 0 .
step "format (Prettier)"
npx --no-install prettier --check .
step "typecheck (tsc)"
npx --no-install tsc -p tsconfig.json
npx --no-install tsc -p apps/console/tsconfig.json
step "tests (unit, integration, e2e)"
# --forceExit: the results are final once Jest prints them; exiting by process.exit() skips Node's
# handle cleanup at a natural exit, which was seen spinning at 100% CPU for ever after a whole run
# (Node's CleanupHandles loop, nodejs/node#47748) and would hold CI to its time limit.
npx --no-install jest --ci --forceExit "$@"
