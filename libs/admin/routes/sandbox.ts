import { Type } from '@sinclair/typebox';
import { TELEGRAM_TEXT_MAX } from '../../telegram/limits';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { createSandboxClient, SandboxControlError } from '../../sandbox/control-client';
import type { AdminContext } from '../context';
import { AdminError } from '../errors';
import { auditInsert } from '../queries';
import { errors } from '../schemas';

/** What the admin app needs to offer the dashboard's sandbox chat panel (sandbox mode only). */
export interface SandboxPanelOptions {
  /** Base URL of the Bot API sandbox the relay polls (its control API is under /sandbox/). */
  url: string;
  /** The bot token the relay uses in sandbox mode: messages are injected for this bot. */
  token: string;
  /** Chat the panel writes from unless the operator picks another (private chat, id > 0). */
  chatId?: number;
}

export const SANDBOX_PANEL_CHAT_DEFAULT = 1001;

const ChatId = Type.Integer({ minimum: 1, maximum: 2 ** 52, description: 'private chat id (the user writing)' });
const InjectBody = Type.Object(
  { chat_id: ChatId, text: Type.String({ minLength: 1, maxLength: TELEGRAM_TEXT_MAX }) },
  { additionalProperties: false },
);
const Injected = Type.Object({
  update_id: Type.Integer(),
  chat_id: Type.Integer(),
  message_id: Type.Integer(),
  date: Type.Integer(),
  audit_id: Type.Integer(),
});
const SentMessages = Type.Object({
  items: Type.Array(
    Type.Object({
      message_id: Type.Integer(),
      text: Type.String(),
      reply_to_message_id: Type.Union([Type.Integer(), Type.Null()]),
      sent_at: Type.String({ format: 'date-time' }),
    }),
  ),
});

/**
 * The sandbox chat panel's routes, registered only in sandbox mode: the browser talks to the admin
 * API alone, which forwards to the sandbox's control API. Injecting is audited like every other
 * admin mutation (never with the text).
 */
type SandboxPlugin = FastifyPluginAsyncTypebox<{ ctx: AdminContext; sandbox: SandboxPanelOptions }>;
// eslint-disable-next-line @typescript-eslint/require-await -- a fastify plugin: async so that a route registration that throws rejects register() (a sync throw escapes avvio)
export const sandboxRoutes: SandboxPlugin = async (app, { ctx, sandbox }) => {
  const client = createSandboxClient(sandbox.url);
  const botId = sandbox.token.split(':')[0];
  const unavailable = (err: unknown) =>
    new AdminError(
      'RELAY_ADMIN_UNAVAILABLE',
      `the sandbox did not answer: ${err instanceof SandboxControlError ? err.message : 'unexpected error'}`,
      {},
      { cause: err },
    );

  app.get(
    '/v1/sandbox',
    {
      schema: {
        tags: ['sandbox'],
        summary:
          'Sandbox mode: the bot the chat panel writes to and its default chat (this route exists only in sandbox mode)',
        response: {
          200: Type.Object({ enabled: Type.Boolean(), bot_id: Type.String(), chat_id: Type.Integer() }),
          ...errors(401),
        },
      },
    },
    () => ({ enabled: true, bot_id: botId, chat_id: sandbox.chatId ?? SANDBOX_PANEL_CHAT_DEFAULT }),
  );

  app.post(
    '/v1/sandbox/messages',
    {
      schema: {
        tags: ['sandbox'],
        summary: 'Inject a user message into the sandbox, as if a Telegram user sent it to the bot (audited)',
        body: InjectBody,
        response: { 201: Injected, ...errors(400, 401, 503) },
      },
    },
    async (req, reply) => {
      const startedAt = ctx.clock();
      const update = await client
        .injectMessage(sandbox.token, { chatId: req.body.chat_id, text: req.body.text })
        .catch((err) => {
          throw unavailable(err);
        });
      const message = update.message!;
      const auditId = await auditInsert(ctx.pool, {
        action: 'sandbox_inject',
        actor: req.actor ?? 'unknown',
        workerId: ctx.instanceId,
        subjectKey: `update:${update.update_id}`,
        details: {
          kind: 'sandbox',
          request_id: req.id,
          bot_id: botId,
          chat_id: req.body.chat_id,
          update_id: update.update_id,
          message_id: message.message_id,
          result: 'ok',
        },
        startedAt,
      });
      return reply.code(201).send({
        update_id: update.update_id,
        chat_id: req.body.chat_id,
        message_id: message.message_id,
        date: message.date,
        audit_id: auditId,
      });
    },
  );

  app.get(
    '/v1/sandbox/messages',
    {
      schema: {
        tags: ['sandbox'],
        summary: "The bot's messages in one sandbox chat, oldest first (what the user would see in Telegram)",
        querystring: Type.Object({ chat_id: ChatId }, { additionalProperties: false }),
        response: { 200: SentMessages, ...errors(400, 401, 503) },
      },
    },
    async (req) => {
      const sent = await client.sent(sandbox.token).catch((err) => {
        throw unavailable(err);
      });
      const items = sent
        .filter((m) => m.resolved_chat_id === req.query.chat_id)
        .map((m) => ({
          message_id: m.message_id,
          text: m.text,
          reply_to_message_id: m.reply_to_message_id ?? null,
          sent_at: new Date(m.time).toISOString(),
        }));
      return { items };
    },
  );
};
