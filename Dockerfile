# syntax=docker/dockerfile:1
#
# One image for every Switchboard app: gateway, harness-worker, triage-worker, hooks-worker.
# The apps run their TypeScript through @swc-node/register at load time; there is no build step.
#
#   docker build -t switchboard .                                  # APP defaults to gateway
#   docker build --build-arg APP=harness-worker -t switchboard .   # bake another default
#   docker run -e APP=triage-worker switchboard                    # or pick the app at run time
#
# The image also runs migrations (docker-compose.yml's `migrate` service):
#   docker run -e DATABASE_URL=... -e PRISMA_QUERY_ENGINE_LIBRARY=/dev/null switchboard \
#     sh -c 'npm run db:generate && npm run db:migrate'

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS base
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false \
    CHECKPOINT_DISABLE=1 \
    PRISMA_HIDE_UPDATE_MESSAGE=1
# Prisma's CLI probes the OpenSSL version at start-up; with the JS/WASM engines it needs nothing else.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssl \
 && rm -rf /var/lib/apt/lists/*

# Production dependencies only (typescript stays: it is a peer of @swc-node/register and prisma).
# --ignore-scripts: nothing may rely on a dependency's install script (npm 11 skips them anyway);
# @swc/core and msgpackr ship their binaries as optional dependencies, and the Prisma client is
# generated below by the project's own script.
# `npm ci` is the rule. The fallback exists because a package-lock.json written on a machine whose
# registry withholds other platforms' optional binaries fails `npm ci`'s sync check
# ("Missing: @swc/core-darwin-arm64@ from lock file"); `npm install` still takes every version
# from the lockfile and leaves it untouched (--no-save).
FROM base AS deps
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts \
 || { echo 'npm ci rejected package-lock.json; installing from it with npm install' >&2; \
      npm install --omit=dev --ignore-scripts --no-save; }

# Generate the Prisma client into node_modules. The query-engine download is skipped by pointing
# PRISMA_QUERY_ENGINE_LIBRARY at any existing file (the schema uses engineType "client").
FROM deps AS prisma
COPY prisma ./prisma
COPY prisma.config.ts tsconfig.base.json tsconfig.json ./
RUN PRISMA_QUERY_ENGINE_LIBRARY=/dev/null npm run db:generate

FROM base AS runtime
ARG APP=gateway
ENV NODE_ENV=production \
    APP=${APP} \
    PORT=3000
RUN chown node:node /app
COPY --chown=node:node --from=prisma /app/node_modules ./node_modules
COPY --chown=node:node package.json package-lock.json prisma.config.ts tsconfig.base.json tsconfig.json .swcrc ./
COPY --chown=node:node prisma ./prisma
COPY --chown=node:node libs ./libs
COPY --chown=node:node apps ./apps
USER node
# 3000: gateway HTTP; 9464: workers' Prometheus /metrics (when METRICS_PORT=9464).
EXPOSE 3000 9464
# Shell form only to expand ${APP}; `exec` replaces the shell with node, so node itself receives
# SIGTERM and the app can drain in-flight work (compose also sets `init: true`).
CMD ["/bin/sh", "-c", "exec node -r @swc-node/register apps/${APP}/src/main.ts"]
