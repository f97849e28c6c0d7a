import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AdminContext } from '../context';
import { apiError } from '../errors';
import { statsCollector } from '../stats';
import { BotFilterQuery, errors, ReadinessBody, StatsBody } from '../schemas';

/** Stats, health and metrics. */
// eslint-disable-next-line @typescript-eslint/require-await -- a fastify plugin: async so that a route registration that throws rejects register() (a sync throw escapes avvio)
export const statusRoutes: FastifyPluginAsyncTypebox<{ ctx: AdminContext }> = async (app, { ctx }) => {
  const stats = statsCollector({
    pool: ctx.pool,
    clock: ctx.clock,
    ingressHealth: ctx.ingressHealth,
    pendingUpdates: ctx.pendingUpdates,
    pollTimeoutMs: ctx.config.POLL_TIMEOUT,
  });

  app.get(
    '/v1/stats',
    {
      schema: {
        tags: ['stats'],
        summary:
          'Counts per kind and state, oldest pending age, delivery rate over the last minute; cursor, lease and lag per bot',
        description:
          'Counts are exact up to exact_count_cap per state; above it they come from planner statistics (reltuples × state frequency, refreshed by ANALYZE) and carry approximate: true. ' +
          "With bot_id, everything is that bot's: its rows, its attempts, its chats, its cursor (an estimate is the bot's share of the table's).",
        querystring: BotFilterQuery,
        response: { 200: StatsBody, ...errors(400, 401) },
      },
    },
    async (req) => stats(req.query.bot_id),
  );

  app.get(
    '/health/live',
    {
      schema: {
        tags: ['health'],
        summary: 'Liveness: the process answers (no token, no database)',
        security: [],
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    () => ({ status: 'ok' as const }),
  );

  app.get(
    '/health/ready',
    {
      schema: {
        tags: ['health'],
        summary: "Readiness: database reachable, migrations current, each bot's current poller generation progressing",
        response: { 200: ReadinessBody, 503: ReadinessBody, ...errors(401) },
      },
    },
    async (_req, reply) => {
      const r = await ctx.readiness();
      if (!r.ready) {
        // the readiness schema answers the readiness fields and the code; the reasons are the message
        const { status, body } = apiError('RELAY_ADMIN_NOT_READY', r.reasons.join('; '));
        return reply.code(status).send({ ...r, code: body.code });
      }
      return r;
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['metrics'],
        summary: 'Prometheus text exposition (prom-client)',
        produces: ['text/plain'],
        response: { 200: Type.String({ description: 'Prometheus text format 0.0.4' }), ...errors(401) },
      },
    },
    async (_req, reply) => {
      const text = await ctx.metrics.scrape(async () => {
        const [s, readiness] = await Promise.all([stats(), ctx.readiness()]);
        return { stats: s, readiness };
      });
      return reply.type(ctx.metrics.registry.contentType).send(text);
    },
  );
};
