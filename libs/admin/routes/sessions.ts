import { Type } from '@sinclair/typebox';
import { botIdFromToken } from '../../config';
import { sessionErase, sessionShow } from '../../dispatch/session-queries';
import type { AdminContext } from '../context';
import { AdminError, notFound } from '../errors';
import { errors } from '../schemas';
import { BotIdFilter } from '../schemas';
import { emptyBodyIsObject, ReasonBody, type WriteApp, type WriteKit } from './write-kit';

const SessionParams = Type.Object(
  {
    key: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'the session key (telegraf: `<from.id>:<chat.id>` by default)',
    }),
  },
  { additionalProperties: false },
);
const SessionQuery = Type.Object(
  { bot_id: Type.Optional({ ...BotIdFilter, description: 'the bot (default: the bot of TELEGRAM_BOT_TOKEN)' }) },
  { additionalProperties: false },
);
const SessionBody = Type.Object(
  {
    bot_id: Type.String(),
    key: Type.String(),
    value: Type.Unknown({ description: 'the stored session (JSON)' }),
    version: Type.Integer(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
    expires_at: Type.String({ format: 'date-time' }),
    expired: Type.Boolean({ description: 'past expires_at: reads as absent, pruned by the next retention pass' }),
  },
  { additionalProperties: false },
);

/** The bot a session request addresses: `bot_id`, else the configured bot; neither is a 400. */
function botOf(ctx: AdminContext, botId: string | undefined): string {
  if (botId) return botId;
  const token = ctx.config.TELEGRAM_BOT_TOKEN;
  if (token) return botIdFromToken(token);
  throw new AdminError('RELAY_ADMIN_BAD_REQUEST', 'bot_id is required: no TELEGRAM_BOT_TOKEN is configured', {
    field: 'bot_id',
  });
}

/**
 * GET /v1/sessions/:key (one handler session, as stored) and DELETE /v1/sessions/:key (erase it,
 * e.g. a GDPR erasure request), audited like every admin action: the audit row names the key,
 * never the value.
 */
export function registerSessions(app: WriteApp, ctx: AdminContext, kit: WriteKit): void {
  app.get(
    '/v1/sessions/:key',
    {
      schema: {
        tags: ['sessions'],
        summary: 'One bot handler session (dispatch.sessionStore()), expired or not',
        params: SessionParams,
        querystring: SessionQuery,
        response: { 200: SessionBody, ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      const botId = botOf(ctx, req.query.bot_id);
      const row = await sessionShow(ctx.pool, botId, req.params.key);
      if (!row) throw notFound(`session of bot ${botId}`, req.params.key);
      return {
        ...row,
        version: Number(row.version),
        created_at: row.created_at.toISOString(),
        updated_at: row.updated_at.toISOString(),
        expires_at: row.expires_at.toISOString(),
      };
    },
  );
  app.delete(
    '/v1/sessions/:key',
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags: ['sessions'],
        summary: 'Delete one bot handler session now (audited; the value is not kept anywhere)',
        params: SessionParams,
        querystring: SessionQuery,
        body: ReasonBody,
        response: {
          200: Type.Object({
            bot_id: Type.String(),
            key: Type.String(),
            deleted_version: Type.Integer(),
            audit_id: Type.Integer(),
          }),
          ...errors(400, 401, 404),
        },
      },
    },
    async (req) => {
      const botId = botOf(ctx, req.query.bot_id);
      const { key } = req.params;
      return kit.act(req, async (s) => {
        const version = await sessionErase(s.db, botId, key);
        const subject = {
          kind: 'session',
          subjectKey: `${botId}:${key}`,
          details: { bot_id: botId, reason: req.body.reason ?? null },
        };
        if (version === undefined)
          return kit.refuse(s, 'session.delete', { ...subject, refused: notFound(`session of bot ${botId}`, key) });
        const auditId = await kit.audit(s, 'session.delete', {
          ...subject,
          details: { ...subject.details, version: Number(version) },
        });
        return { bot_id: botId, key, deleted_version: Number(version), audit_id: auditId };
      });
    },
  );
}
