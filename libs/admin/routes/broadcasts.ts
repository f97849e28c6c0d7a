import { Type } from '@sinclair/typebox';
import { botIdFromToken } from '../../config';
import type { Config } from '../../config';
import {
  broadcast,
  broadcastControl,
  broadcastStatus,
  broadcastsList,
  BroadcastKeyConflictError,
  BroadcastNotFoundError,
  BroadcastStateError,
  BroadcastValidationError,
  type BroadcastAction,
  type BroadcastOptions,
} from '../../broadcasts';
import type { AdminContext } from '../context';
import { AdminError } from '../errors';
import { broadcastIdsOfBot } from '../queries';
import { BotIdFilter, errors } from '../schemas';
import { emptyBodyIsObject, type WriteApp, type WriteKit } from './write-kit';

/** A broadcast body carries its chat list: up to 1,000,000 ids (about 20 bytes each as JSON). */
export const BROADCAST_BODY_LIMIT = 24 * 1024 * 1024;

const IdParams = Type.Object({ id: Type.String({ pattern: '^[0-9]{1,18}$' }) }, { additionalProperties: false });
const ListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    before: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$', description: 'continue below this broadcast id' })),
    bot_id: Type.Optional({ ...BotIdFilter, description: "only this bot's broadcasts (default: every bot's)" }),
  },
  { additionalProperties: false },
);
const Status = Type.Object({ id: Type.String(), state: Type.String() }, { additionalProperties: true });
const Body = Type.Object(
  {},
  {
    additionalProperties: true,
    description:
      'chat_ids (a list) or audience (a registered audience name), and the message as for /v1/messages without msg_id and chat_id: ' +
      'text (sendMessage), or method and params (any send, copy or forward method); optional key (idempotency), include_blocked, paid, bot_id',
  },
);

/** The deployment's broadcast settings: the default bot, the free bulk rate, PAID_BROADCAST_RATE. */
export function broadcastOptions(config: Config): BroadcastOptions {
  const r = config.OUTBOUND_RATE_PER_BOT;
  return {
    botId: config.TELEGRAM_BOT_TOKEN ? botIdFromToken(config.TELEGRAM_BOT_TOKEN) : null,
    freeRate: (r.count * 1000) / r.windowMs,
    paidRate: config.PAID_BROADCAST_RATE > 0 ? config.PAID_BROADCAST_RATE : null,
  };
}

/** The library's refusals as the admin API's answers (4xx with a code); anything else is rethrown. */
function asAdminError(err: unknown): unknown {
  if (err instanceof BroadcastValidationError)
    return new AdminError('RELAY_BROADCAST_INVALID', err.message, {
      field: err.problems[0]?.field,
      problems: err.problems,
    });
  if (err instanceof BroadcastNotFoundError)
    return new AdminError('RELAY_BROADCAST_NOT_FOUND', err.message, { id: err.id });
  if (err instanceof BroadcastStateError)
    return new AdminError('RELAY_BROADCAST_STATE', err.message, { id: err.id, state: err.state });
  if (err instanceof BroadcastKeyConflictError)
    return new AdminError('RELAY_BROADCAST_KEY_CONFLICT', err.message, { key: err.key, id: err.existingId });
  return err;
}

/**
 * POST /v1/broadcasts (create and enqueue), GET /v1/broadcasts (list), GET /v1/broadcasts/:id
 * (state, counts, rate, ETA, plan), POST /v1/broadcasts/:id/pause|resume|cancel. Writes are audited.
 */
export function registerBroadcasts(app: WriteApp, ctx: AdminContext, kit: WriteKit): void {
  const options = broadcastOptions(ctx.config);
  app.post(
    '/v1/broadcasts',
    {
      bodyLimit: BROADCAST_BODY_LIMIT,
      schema: {
        tags: ['broadcasts'],
        summary:
          'Create a broadcast: 201 with its id and plan (recipients, skipped, duration, Stars cost); 200 for a repeated key',
        body: Body,
        response: { 200: Status, 201: Status, ...errors(400, 401, 409, 413) },
      },
    },
    async (req, reply) => {
      const out = await kit
        .act(req, async (s) => {
          const r = await broadcast(s.db, req.body, options);
          const auditId = await kit.audit(s, 'broadcast', {
            kind: 'broadcast',
            subjectId: Number(r.id),
            details: { created: r.created, recipients: r.recipients, skipped: r.skipped },
          });
          return { ...r, state: r.created ? 'pending' : 'existing', audit_id: auditId };
        })
        .catch((err: unknown) => {
          throw asAdminError(err);
        });
      return reply.code(out.created ? 201 : 200).send(out);
    },
  );

  app.get(
    '/v1/broadcasts',
    {
      schema: {
        tags: ['broadcasts'],
        summary: 'Broadcasts, newest first, with their state and counts',
        querystring: ListQuery,
        response: { 200: Type.Object({ items: Type.Array(Status) }), ...errors(400, 401) },
      },
    },
    async (req) => {
      const { limit = 50, before, bot_id } = req.query;
      if (!bot_id) return { items: await broadcastsList(ctx.pool, { limit, beforeId: before }) };
      // the library lists every bot's; a bot's are its ids, each read as GET /v1/broadcasts/:id reads it (one removed meanwhile is left out)
      const ids = await broadcastIdsOfBot(ctx.pool, bot_id, { limit, beforeId: before });
      const items = await Promise.all(ids.map((id) => broadcastStatus(ctx.pool, id)));
      return { items: items.filter((b) => b !== null) };
    },
  );

  app.get(
    '/v1/broadcasts/:id',
    {
      schema: {
        tags: ['broadcasts'],
        summary: 'A broadcast: state, counts by state (from its rows), rate, eta_seconds and plan',
        params: IdParams,
        response: { 200: Status, ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      const s = await broadcastStatus(ctx.pool, req.params.id);
      if (!s) throw asAdminError(new BroadcastNotFoundError(req.params.id));
      return s;
    },
  );

  for (const action of ['pause', 'resume', 'cancel'] as BroadcastAction[]) {
    app.post(
      `/v1/broadcasts/:id/${action}`,
      {
        preValidation: emptyBodyIsObject,
        schema: {
          tags: ['broadcasts'],
          summary: `${action[0].toUpperCase()}${action.slice(1)} a broadcast (acts on its messages not yet sent)`,
          params: IdParams,
          body: Type.Object({}, { additionalProperties: false }),
          response: { 200: Status, ...errors(400, 401, 404, 409) },
        },
      },
      async (req) => {
        try {
          return await kit.act(req, async (s) => {
            const r = await broadcastControl(s.db, req.params.id, action, ctx.boss);
            const auditId = await kit.audit(s, `broadcast.${action}`, {
              kind: 'broadcast',
              subjectId: Number(req.params.id),
              details: { moved: r.moved },
            });
            return { ...r.status, moved: r.moved, audit_id: auditId };
          });
        } catch (err) {
          throw asAdminError(err);
        }
      },
    );
  }
}
