# syntax=docker/dockerfile:1
# Management API image. Build from the repository root:
#   docker build -f infra/docker/management.Dockerfile -t media-platform/management .
# Stages: base (Node 24 LTS + pnpm) -> build (full install from the lockfile, offline Prisma
# client generation, `pnpm build` to JavaScript, pruned production deploy) -> runtime (only the
# deploy output, non-root).

ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS base
# Same pnpm as package.json "packageManager" (a test keeps the two equal).
ARG PNPM_VERSION=10.34.9
ENV PNPM_HOME=/pnpm \
    PATH=/pnpm:$PATH \
    CI=true
RUN npm install --global --no-fund --no-audit "pnpm@${PNPM_VERSION}" \
 && pnpm config set store-dir /pnpm/store

FROM base AS build
WORKDIR /app
# Fetch every package of the lockfile into the store first: this layer only changes when the
# lockfile does, so source edits do not re-download dependencies.
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm fetch --frozen-lockfile
COPY . .
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm install --frozen-lockfile --offline
# Prisma client, generated offline (stub schema engine; generation never calls it).
RUN node prisma/generate.cjs
# Compiled once here (the generated client included): the container runs dist/index.js, and the
# CLIs dist/cli/token.js and dist/cli/migrate.js; nothing is transpiled at start-up.
RUN pnpm build management
# Pruned production install of the service alone: its dependencies (workspace packages copied
# in), no devDependencies, plus its own files including dist/.
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store \
    pnpm deploy --legacy --filter @media-platform/management --prod /out/services/management \
 && test -f /out/services/management/dist/index.js \
 && test -f /out/services/management/dist/library/index.html

FROM ${NODE_IMAGE} AS runtime
# jemalloc instead of glibc malloc: glibc's per-thread arenas fragment around libvips' large,
# short-lived buffers (RSS grows far past the live heap), and sharp's docs recommend jemalloc on
# glibc. Debian's libjemalloc2, linked at one path on every architecture, preloaded for node.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dpkg -L libjemalloc2 | grep '/libjemalloc\.so\.2$')" /usr/local/lib/libjemalloc.so.2 \
 && test -e /usr/local/lib/libjemalloc.so.2
ENV NODE_ENV=production \
    LD_PRELOAD=/usr/local/lib/libjemalloc.so.2 \
    MANAGEMENT_PORT=3000 \
    HOST=0.0.0.0 \
    DATA_DIR=/data
WORKDIR /app
# Code stays root-owned (read-only for the service user); only /data is writable.
COPY --from=build /out/services/management /app/services/management
# The migration runner reads prisma/migrations two folders above the service (as in the repo).
COPY --from=build /app/prisma/migrations /app/prisma/migrations
COPY --from=build /app/prisma/schema.prisma /app/prisma/schema.prisma
COPY infra/docker/healthcheck.cjs /app/healthcheck.cjs
RUN mkdir -p /data && chown node:node /data
# "node" (uid 1000) ships with the official Node images.
USER node
WORKDIR /app/services/management
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "/app/healthcheck.cjs", "MANAGEMENT_PORT", "/healthz"]
# Applies pending migrations at start-up, then serves /v1. SIGTERM = graceful shutdown.
CMD ["node", "dist/index.js"]
