# syntax=docker/dockerfile:1
#
# One image for every Switchboard app: gateway, harness-worker, triage-worker, hooks-worker.
# It runs the JavaScript `npm run build` compiled (no TypeScript, no compiler at run time), with
# production dependencies only, as the unprivileged `node` user (docs/adr/0034-build-image-and-kubernetes.md).
#
#   docker build -t switchboard .                                  # APP defaults to gateway
#   docker build --build-arg APP=harness-worker -t switchboard .   # bake another default
#   docker run -e APP=triage-worker switchboard                    # or pick the app at run time
#
# The image also applies migrations (docker-compose.yml's `migrate` service, the Kubernetes Job):
#   docker run -e DATABASE_URL=... switchboard npm run db:migrate

ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS base
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false \
    CHECKPOINT_DISABLE=1 \
    PRISMA_HIDE_UPDATE_MESSAGE=1 \
    PRISMA_QUERY_ENGINE_LIBRARY=/dev/null
# Prisma's CLI probes the OpenSSL version at start-up; with the JS/WASM engines it needs nothing else.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssl \
 && rm -rf /var/lib/apt/lists/*

# --ignore-scripts: nothing may rely on a dependency's install script (npm 11 skips them anyway);
# @swc/core and msgpackr ship their binaries as optional dependencies, and the Prisma client is
# generated below by the project's own script.
# `npm ci` is the rule. The fallback exists while a package-lock.json written on a machine whose
# registry withholds other platforms' optional binaries fails `npm ci`'s sync check; `npm install
# --no-save` still takes every version from the lockfile and leaves it untouched.

# Every dependency, to compile.
FROM base AS deps
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --ignore-scripts \
 || { echo 'npm ci rejected package-lock.json; installing from it with npm install' >&2; \
      npm install --ignore-scripts --no-save; }

# The Prisma client (node_modules/.prisma) and dist/.
FROM deps AS build
COPY prisma ./prisma
COPY prisma.config.ts tsconfig.base.json tsconfig.json .swcrc ./
COPY apps ./apps
COPY libs ./libs
COPY scripts/build.ts ./scripts/build.ts
RUN npm run db:generate && npm run build
# The web console's static files (docs/adr/0046), served by the gateway at /console.
RUN npm run console:build

# Production dependencies only: no compiler, no test or lint tooling.
FROM base AS prod-deps
COPY package.json package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --ignore-scripts \
 || { echo 'npm ci rejected package-lock.json; installing from it with npm install' >&2; \
      npm install --omit=dev --ignore-scripts --no-save; }

FROM base AS runtime
ARG APP=gateway
# METRICS_PORT: the workers' /metrics, /healthz and /readyz (the gateway serves them on PORT).
ENV NODE_ENV=production \
    APP=${APP} \
    PORT=3000 \
    METRICS_PORT=9464
RUN chown node:node /app
COPY --chown=node:node --from=prod-deps /app/node_modules ./node_modules
COPY --chown=node:node --from=build /app/node_modules/.prisma ./node_modules/.prisma
COPY --chown=node:node --from=build /app/dist ./dist
COPY --chown=node:node --from=build /app/apps/console/dist ./apps/console/dist
# Migrations: `npm run db:migrate` (prisma migrate deploy) reads prisma.config.ts and prisma/.
COPY --chown=node:node package.json package-lock.json prisma.config.ts ./
COPY --chown=node:node prisma ./prisma
USER node
EXPOSE 3000 9464
# Liveness of whichever app runs: the gateway's /healthz on PORT, a worker's on METRICS_PORT.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const p = process.env.APP === 'gateway' ? process.env.PORT : process.env.METRICS_PORT; fetch('http://127.0.0.1:' + p + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Shell form only to expand ${APP}; `exec` replaces the shell with node, so node itself receives
# SIGTERM and the app drains in-flight work (compose also sets `init: true`).
CMD ["/bin/sh", "-c", "exec node dist/apps/${APP}/src/main.js"]
