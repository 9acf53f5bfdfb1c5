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
# jemalloc, preloaded below (LD_PRELOAD): the only system package the gateway adds.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libjemalloc2 \
 && rm -rf /var/lib/apt/lists/*
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
# The V8 flags are the ones `npm start` gives (package.json, README "Performance"): a larger first
# old-generation limit, so streaming a large body does not set off a full GC every 50 ms, and a
# young generation of at most 2 x 8 MB instead of 2 x 16 (15 MB less at every peak, no CPU cost
# measured: bench/README.md "Tenth pass").
# jemalloc instead of glibc's malloc: memory freed after streaming large bodies goes back to the
# system; glibc kept 25 to 40 MB of it, fragmented, for the rest of the process's life. Two arenas
# (as MALLOC_ARENA_MAX=2 did for glibc, kept: in effect if jemalloc is not), and the 64 KB buffers
# every socket read allocates kept in the thread's cache (tcache_max, default 32 KB): without it
# each went back to the arena and a streaming burst left 50 to 70 MB of dirty pages. The bench runs
# the gateway with this image's ENV (bench/README.md "Tenth pass").
ENV LD_PRELOAD=libjemalloc.so.2
ENV MALLOC_CONF=narenas:2,tcache_max:131072
ENV MALLOC_ARENA_MAX=2
CMD ["node", "--initial-old-space-size=32", "--heap-growing-percent=300", "--max-semi-space-size=8", "dist/gateway/main.js"]
