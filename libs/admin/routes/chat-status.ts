import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { AdminContext } from '../context';
import { AdminError } from '../errors';
import { chatStatusList } from '../../outbound/queries';
import { CHAT_STATUSES } from '../../outbound/classify-response';
import { BotIdFilter, errors, Limit } from '../schemas';

const ChatStatusQuery = Type.Object(
  {
    status: Type.Optional(Type.Union(CHAT_STATUSES.map((s) => Type.Literal(s)))),
    bot_id: Type.Optional(BotIdFilter),
    limit: Type.Optional(Limit),
    cursor: Type.Optional(Type.String({ maxLength: 400 })),
  },
  { additionalProperties: false },
);

const ChatStatusEntry = Type.Object(
  {
    bot_id: Type.String(),
    chat_id: Type.String(),
    status: Type.String(),
    reason: Type.String({ description: "Telegram's description of the last refusal" }),
    since: Type.String({ format: 'date-time', description: 'first refused with this status since the last delivery' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

type Keyset = { since: string; botId: string; chatId: string };
const encode = (k: Keyset) => Buffer.from(JSON.stringify([k.since, k.botId, k.chatId]), 'utf8').toString('base64url');

/** The keyset of a cursor this route returned; anything else is a 400 naming the parameter. */
function decode(cursor: string): Keyset {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    v = undefined;
  }
  const ok =
    Array.isArray(v) &&
    v.length === 3 &&
    v.every((x) => typeof x === 'string' && x.length <= 100) &&
    /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(v[0] as string);
  if (!ok)
    throw new AdminError('RELAY_ADMIN_BAD_CURSOR', 'cursor is not one this API returned', {
      field: 'querystring.cursor',
    });
  const [since, botId, chatId] = v as string[];
  return { since, botId, chatId };
}

/**
 * GET /v1/chats/status: chats the bot cannot reach (relay.chat_status), newest first: recorded when
 * Telegram refuses a message because the user blocked the bot, deleted the account, the bot was
 * removed from the group or the chat does not exist; forgotten when a message to the chat is
 * delivered again.
 */
// eslint-disable-next-line @typescript-eslint/require-await -- a fastify plugin: async so that a route registration that throws rejects register() (a sync throw escapes avvio)
export const chatStatusRoutes: FastifyPluginAsyncTypebox<{ ctx: AdminContext }> = async (app, { ctx }) => {
  app.get(
    '/v1/chats/status',
    {
      schema: {
        tags: ['chats'],
        summary: 'Chats the bot cannot reach (blocked, deactivated, kicked, chat_not_found), newest first',
        description:
          'A chat is listed from the refusal that showed it unreachable until a message to it is delivered again. Pass next_cursor as cursor for the next page.',
        querystring: ChatStatusQuery,
        response: {
          200: Type.Object({
            items: Type.Array(ChatStatusEntry),
            next_cursor: Type.Union([Type.String(), Type.Null()]),
          }),
          ...errors(400, 401),
        },
      },
    },
    async (req) => {
      const limit = req.query.limit ?? 50;
      const rows = await chatStatusList(ctx.pool, {
        status: req.query.status,
        botId: req.query.bot_id,
        limit: limit + 1,
        after: req.query.cursor ? decode(req.query.cursor) : undefined,
      });
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        items: page.map((r) => ({
          bot_id: r.bot_id,
          chat_id: r.chat_id,
          status: r.status,
          reason: r.reason,
          since: r.since.toISOString(),
          updated_at: r.updated_at.toISOString(),
        })),
        next_cursor:
          rows.length > limit && last
            ? encode({ since: last.since_key, botId: last.bot_id, chatId: last.chat_id })
            : null,
      };
    },
  );
};
