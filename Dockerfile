# syntax=docker/dockerfile:1
# One image for every role (migrate, poller, worker, admin, start); the command picks the role.

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only; embedded PostgreSQL binaries are not needed with DATABASE_URL set.
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY apps ./apps
COPY libs ./libs
COPY sql ./sql
COPY examples ./examples
USER node
ENTRYPOINT ["node", "bin/tg-relay.js"]
CMD ["start"]
