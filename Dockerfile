# syntax=docker/dockerfile:1
# One image for every role (migrate, poller, worker, admin, start); the command picks the role.
# Node 22 LTS: Node 20 (what CI tests on, see README "Tested versions") left support on 2026-04-30.
# Stages: build (dev dependencies, tsc → dist/), deps (production dependencies only, no optional
# embedded PostgreSQL binaries: the image always runs with DATABASE_URL), runtime (dist/ and those).

FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=optional --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json index.ts ./
COPY apps ./apps
COPY libs ./libs
COPY examples ./examples
RUN npm run build

FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force

FROM node:22-bookworm-slim AS runtime
ENV NODE_ENV=production \
    DATA_DIR=/app/.data
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json README.md ./
COPY bin/tg-relay.js ./bin/tg-relay.js
COPY sql ./sql
COPY libs/admin/ui/dist ./libs/admin/ui/dist
# the only folder the process writes to, owned by the user it runs as
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
# the process's own liveness endpoint (admin API: `admin` and `start`; compose sets its own checks)
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.ADMIN_PORT||8080)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "bin/tg-relay.js"]
CMD ["start"]
