import { Type } from '@sinclair/typebox';
import {
  BotInvalidError,
  BotTokenRejectedError,
  botById,
  botDelete,
  botsList,
  botSetEnabled,
  botUpsert,
  parseTokenKey,
  prepareBot,
  type BotRow,
} from '../../bots';
import type { AdminContext } from '../context';
import { AdminError } from '../errors';
import { errors } from '../schemas';
import { emptyBodyIsObject, Reason, ReasonBody, type WriteApp, type WriteKit } from './write-kit';

const BotId = Type.String({ pattern: '^[0-9]{1,20}$', description: 'the bot id (the numeric prefix of its token)' });
const BotParams = Type.Object({ id: BotId }, { additionalProperties: false });

/** A registered bot as answered: never its token, not even encrypted. */
const Bot = Type.Object(
  {
    id: Type.String(),
    username: Type.Union([Type.String(), Type.Null()]),
    handlers: Type.Union([Type.String(), Type.Null()]),
    capture_url: Type.Union([Type.String(), Type.Null()]),
    allowed_chat_ids: Type.Array(Type.String()),
    ops_chat_id: Type.Union([Type.String(), Type.Null()]),
    enabled: Type.Boolean(),
    settings: Type.Record(Type.String(), Type.String()),
    token_key_id: Type.String({
      description: 'which TOKEN_ENCRYPTION_KEY its token is encrypted with (a hash prefix)',
    }),
    version: Type.Integer({ description: 'grows on every change' }),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

const AddBody = Type.Object(
  {
    token: Type.String({
      minLength: 1,
      maxLength: 300,
      description: 'the token from @BotFather (stored encrypted, never answered)',
    }),
    handlers: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
    capture_url: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
    allowed_chat_ids: Type.Optional(Type.Array(Type.String({ maxLength: 40 }), { maxItems: 10_000 })),
    ops_chat_id: Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()])),
    enabled: Type.Optional(Type.Boolean()),
    settings: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 100 }))),
    reason: Type.Optional(Reason),
  },
  { additionalProperties: false },
);

const answer = (b: BotRow) => ({
  id: b.id,
  username: b.username,
  handlers: b.handlers,
  capture_url: b.capture_url,
  allowed_chat_ids: b.allowed_chat_ids,
  ops_chat_id: b.ops_chat_id,
  enabled: b.enabled,
  settings: b.settings,
  token_key_id: b.token_key_id,
  version: Number(b.version),
  created_at: b.created_at.toISOString(),
  updated_at: b.updated_at.toISOString(),
});

const botNotFound = (id: string) => new AdminError('RELAY_BOT_NOT_FOUND', `no registered bot has id ${id}`);

/** The audit subject of a change to bot `id`. */
const botSubject = (id: string, reason: string | undefined) => ({
  kind: 'bot',
  subjectKey: id,
  details: { reason: reason ?? null },
});

/** A registration's failure as the API answers it (its message names the field, never the token). */
function registrationError(err: unknown): unknown {
  if (err instanceof BotInvalidError) return new AdminError('RELAY_BOT_INVALID', err.message, { field: err.field });
  if (err instanceof BotTokenRejectedError) return new AdminError('RELAY_BOT_TOKEN_REJECTED', err.message);
  return new AdminError(
    'RELAY_BOT_API_UNREACHABLE',
    'the Bot API did not answer getMe, so the token is unchecked and nothing was stored',
    {},
    { cause: err },
  );
}

/**
 * /v1/bots: the bot registry (relay.bots) that fleet processes serve — list, show, add or update
 * (the token checked with getMe and stored encrypted under TOKEN_ENCRYPTION_KEY), enable, disable,
 * remove. Every change is audited (the bot id, never the token) and reaches running processes
 * within seconds through the registry's NOTIFY.
 */
export function registerBots(app: WriteApp, ctx: AdminContext, kit: WriteKit): void {
  app.get(
    '/v1/bots',
    {
      schema: {
        tags: ['bots'],
        summary: 'The registered bots (never their tokens)',
        response: { 200: Type.Object({ items: Type.Array(Bot) }), ...errors(401) },
      },
    },
    async () => ({ items: (await botsList(ctx.pool)).map(answer) }),
  );

  app.get(
    '/v1/bots/:id',
    {
      schema: {
        tags: ['bots'],
        summary: 'One registered bot (never its token)',
        params: BotParams,
        response: { 200: Bot, ...errors(400, 401, 404) },
      },
    },
    async (req) => {
      const bot = await botById(ctx.pool, req.params.id);
      if (!bot) throw botNotFound(req.params.id);
      return answer(bot);
    },
  );

  app.post(
    '/v1/bots',
    {
      schema: {
        tags: ['bots'],
        summary:
          'Register a bot (201), or update its registration (200): its token is checked with getMe and stored encrypted',
        body: AddBody,
        response: { 200: Bot, 201: Bot, ...errors(400, 401, 422, 503) },
      },
    },
    async (req, reply) => {
      const raw = ctx.config.TOKEN_ENCRYPTION_KEY;
      if (!raw)
        throw new AdminError(
          'RELAY_TOKEN_KEY',
          'TOKEN_ENCRYPTION_KEY is not set: this process cannot store bot tokens',
        );
      const b = req.body;
      const prepared = await prepareBot(
        {
          token: b.token,
          handlers: b.handlers,
          captureUrl: b.capture_url,
          allowedChatIds: b.allowed_chat_ids,
          opsChatId: b.ops_chat_id,
          enabled: b.enabled,
          settings: b.settings,
        },
        { key: parseTokenKey(raw), apiRoot: ctx.config.TELEGRAM_API_ROOT },
      ).catch((err: unknown) => {
        throw registrationError(err);
      });
      const out = await kit.act(req, async (s) => {
        const r = await botUpsert(s.db, prepared);
        const subject = botSubject(r.bot.id, b.reason);
        await kit.audit(s, r.created ? 'bot.add' : 'bot.update', {
          ...subject,
          details: { ...subject.details, username: r.bot.username, enabled: r.bot.enabled },
        });
        return r;
      });
      return reply.code(out.created ? 201 : 200).send(answer(out.bot));
    },
  );

  for (const [action, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    app.post(
      `/v1/bots/:id/${action}`,
      {
        preValidation: emptyBodyIsObject,
        schema: {
          tags: ['bots'],
          summary: enabled
            ? 'Serve the bot again (its pollers and workers start within seconds)'
            : 'Stop serving the bot (within seconds; its rows and audit stay)',
          params: BotParams,
          body: ReasonBody,
          response: { 200: Bot, ...errors(400, 401, 404) },
        },
      },
      async (req) =>
        kit.act(req, async (s) => {
          const subject = botSubject(req.params.id, req.body.reason);
          const bot = await botSetEnabled(s.db, req.params.id, enabled);
          if (!bot) return kit.refuse(s, `bot.${action}`, { ...subject, refused: botNotFound(req.params.id) });
          await kit.audit(s, `bot.${action}`, subject);
          return answer(bot);
        }),
    );
  }

  app.delete(
    '/v1/bots/:id',
    {
      preValidation: emptyBodyIsObject,
      schema: {
        tags: ['bots'],
        summary: 'Remove the bot from the registry (its messages, sessions and audit rows stay)',
        params: BotParams,
        body: ReasonBody,
        response: { 200: Type.Object({ id: Type.String(), removed: Type.Literal(true) }), ...errors(400, 401, 404) },
      },
    },
    async (req) =>
      kit.act(req, async (s) => {
        const subject = botSubject(req.params.id, req.body.reason);
        if (!(await botDelete(s.db, req.params.id)))
          return kit.refuse(s, 'bot.remove', { ...subject, refused: botNotFound(req.params.id) });
        await kit.audit(s, 'bot.remove', subject);
        return { id: req.params.id, removed: true as const };
      }),
  );
}
