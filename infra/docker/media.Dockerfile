# syntax=docker/dockerfile:1
# Media transformation service image. Build from the repository root:
#   docker build -f infra/docker/media.Dockerfile -t media-platform/media .
# Stages: base (Node 24 LTS + pnpm) -> build (full install from the lockfile, `pnpm build` to
# JavaScript, pruned production deploy) -> runtime (only the deploy output, non-root). sharp's
# libvips comes from its npm binary package (@img/sharp-libvips-linux-*), so no system libvips
# is needed.

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
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm fetch --frozen-lockfile
COPY . .
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm install --frozen-lockfile --offline
# Compiled once here: the container runs JavaScript (dist/index.js with the workspace packages
# bundled in, plus the worker-thread entries), nothing is transpiled at start-up.
RUN pnpm build media
# text: loads only the regular weight of each bundled Noto CJK font; the packages ship nine
# weights (about 130 MB more), dropped here.
# The root postinstall generates the Prisma client for the workspace; the media service does
# not use it (it never touches Postgres), so it is not part of this image.
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store \
    pnpm deploy --legacy --filter @media-platform/media --prod /out/services/media \
 && test -f /out/services/media/dist/index.js \
 && test -d /out/services/media/node_modules/sharp \
 && find /out/services/media/node_modules -path '*@expo-google-fonts*' -name '*.ttf' ! -name '*_400Regular.ttf' -delete \
 && test -n "$(find /out/services/media/node_modules -name 'NotoSansSC_400Regular.ttf')"

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
    MEDIA_PORT=3001 \
    HOST=0.0.0.0
WORKDIR /app
# Code stays root-owned (read-only for the service user).
COPY --from=build /out/services/media /app/services/media
COPY infra/docker/healthcheck.cjs /app/healthcheck.cjs
# "node" (uid 1000) ships with the official Node images.
USER node
WORKDIR /app/services/media
EXPOSE 3001
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "/app/healthcheck.cjs", "MEDIA_PORT", "/healthz"]
# Plain JavaScript; the pixel worker threads load the compiled kernels from dist/kernels.
CMD ["node", "dist/index.js"]
