# The policy gateway, built from TypeScript (tsconfig.build.json -> dist/) and run as the
# unprivileged `node` user. Used by docker-compose.yml (`build: .`).

ARG NODE_IMAGE=node:22.22.0-bookworm-slim

# ---- stage 1: compile -------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# Sources; .dockerignore keeps node_modules, dist, tests, .git and local artefacts out.
COPY . .
RUN npm run build \
 && test -f dist/gateway/main.js

# ---- stage 2: runtime -------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund \
 && npm cache clean --force
COPY --from=build /app/dist ./dist
# `npm start` works in the image too: with NODE_ENV=production bin/start.mjs runs dist/.
COPY --from=build /app/bin ./bin
# Per-stage defaults (config/dev.env, config/prod.env) ship as data. config/settings.ts looks
# for them beside itself, i.e. dist/config/ once compiled; config/ keeps the source layout.
COPY --from=build /app/config/*.env ./config/
COPY --from=build /app/config/*.env ./dist/config/
# Code and data stay root-owned and read-only for the process.
USER node
EXPOSE 8080
# No curl in the slim image: Node's own fetch. PORT is the listening port (default 8080).
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# The V8 flags are the ones `npm start` gives (package.json; docs/design/v8-flags.md): a larger first
# old-generation limit, so streaming a large body does not set off a full GC every 50 ms, and a
# young generation fixed at 2 x 8 MB instead of grown from 2 x 1 to 2 x 16 (15 MB less at the
# peaks, less of a burst promoted while it grows, no CPU cost measured: docs/design/v8-flags.md, "Why: a young generation fixed at 2 x 8 MB").
# MALLOC_ARENA_MAX=2: glibc's malloc otherwise keeps up to eight arenas per core for the threads
# that allocate, and memory freed after streaming stayed in them (the bench, which runs the gateway
# with this image's ENV: 20 to 60 MB less peak RSS outside V8's heap; docs/design/malloc.md).
# jemalloc was measured in glibc's place and not taken (docs/design/malloc.md, "Rejected").
ENV MALLOC_ARENA_MAX=2
CMD ["node", "--initial-old-space-size=32", "--heap-growing-percent=300", "--min-semi-space-size=8", "--max-semi-space-size=8", "--no-allocation-site-pretenuring", "dist/gateway/main.js"]
