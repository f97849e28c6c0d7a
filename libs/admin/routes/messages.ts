import { Type } from '@sinclair/typebox';
import { OUTBOUND_MSG_ID_MAX, OUTBOUND_TEXT_MAX } from '../../outbound/message';
import { RELAYED_METHODS, type RelayedMethod } from '../../telegram/methods';
import type { AdminContext } from '../context';
import { hasCode } from '../../errors';
import { AdminError } from '../errors';
import { currentTraceparent, isValidTraceparent } from '../../observability/tracing';
import { BotIdFilter, CHANNEL_PATTERN, CHAT_ID_PATTERN, errors, TelegramId } from '../schemas';
import type { WriteApp, WriteKit } from './write-kit';

const MessageBody = Type.Object(
  {
    msg_id: Type.String({
      minLength: 1,
      maxLength: OUTBOUND_MSG_ID_MAX,
      description: 'idempotency key, unique for good',
    }),
    chat_id: Type.Optional(
      Type.Union([TelegramId('chat id'), Type.String({ pattern: `^(${CHAT_ID_PATTERN}|${CHANNEL_PATTERN})$` })]),
    ),
    text: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: OUTBOUND_TEXT_MAX,
        description: 'sendMessage (required): the text, sent verbatim; other methods carry no text (see params)',
      }),
    ),
    method: Type.Optional(
      Type.Unsafe<RelayedMethod>({
        type: 'string',
        enum: [...RELAYED_METHODS],
        default: 'sendMessage',
        description:
          'the Bot API method the message is sent with: a send, copy, forward, edit, delete, pin, reaction or answer',
      }),
    ),
    params: Type.Optional(
      Type.Object(
        {},
        {
          additionalProperties: true,
          description:
            'methods other than sendMessage (required for them): every parameter of the method but chat_id, as the Bot API takes it. ' +
            'Files are URLs or file_ids; uploads ("attach://…") are for the library (enqueueOutbound with uploads) only.',
        },
      ),
    ),
    parse_mode: Type.Optional(Type.Union([Type.Literal('MarkdownV2'), Type.Literal('HTML'), Type.Literal('Markdown')])),
    disable_notification: Type.Optional(Type.Boolean()),
    reply_markup: Type.Optional(Type.Object({}, { additionalProperties: true })),
    send_options: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'other sendMessage parameters, verbatim' }),
    ),
    delivery: Type.Optional(Type.Union([Type.Literal('at_least_once'), Type.Literal('at_most_once')])),
    lane: Type.Optional(
      Type.Union([Type.Literal('interactive'), Type.Literal('bulk')], {
        default: 'interactive',
        description:
          "priority lane: bulk (broadcasts, mass sends) uses only the bot's rate budget interactive messages leave; " +
          "a chat's interactive message may overtake its own pending bulk one. Not part of the payload msg_id pins",
      }),
    ),
    max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    bot_id: Type.Optional(BotIdFilter),
    traceparent: Type.Optional(
      Type.String({
        maxLength: 128,
        description:
          "W3C trace context of the caller's trace (also accepted as the `traceparent` header): the sendMessage spans join it",
      }),
    ),
  },
  { additionalProperties: false },
);

const enqueued = () =>
  Type.Object({
    id: Type.Integer(),
    msg_id: Type.String(),
    created: Type.Boolean(),
    state: Type.String(),
    audit_id: Type.Integer(),
  });

/** POST /v1/messages: enqueue an outbound message, idempotent by msg_id. */
export function registerMessages(app: WriteApp, ctx: AdminContext, kit: WriteKit): void {
  app.post(
    '/v1/messages',
    {
      schema: {
        tags: ['outbound'],
        summary:
          'Enqueue an outbound message, idempotent by msg_id: 201 new, 200 the same message again, 409 same msg_id with a different payload',
        description:
          "chat_id may be omitted for the operators' chat (OPS_CHAT_ID). Text is sent verbatim (the caller owns escaping). " +
          'Another relayed method (sendPhoto, editMessageText, answerCallbackQuery…) is given as `method` with its parameters in `params` and no text; ' +
          'the payload that msg_id pins covers method and params.',
        body: MessageBody,
        response: { 200: enqueued(), 201: enqueued(), ...errors(400, 401, 409) },
      },
    },
    async (req, reply) => {
      refuseUploads(req.body.params);
      const traceparent = requestTraceparent(req.body.traceparent, req.headers.traceparent);
      const body = {
        ...req.body,
        ...(req.body.chat_id !== undefined ? { chat_id: String(req.body.chat_id) } : {}),
        traceparent,
      };
      const out = await kit.act(req, async (s) => {
        await s.db.query('savepoint enqueue');
        try {
          const r = await ctx.actions.enqueueMessage(s.db, body);
          const auditId = await kit.audit(s, 'enqueue', {
            kind: 'outbound',
            subjectId: r.id,
            subjectKey: body.msg_id,
            // a sendMessage's audit row reads as it always did; other methods name theirs
            details: {
              created: r.created,
              chat_id: body.chat_id,
              ...(body.method && body.method !== 'sendMessage' ? { method: body.method } : {}),
            },
          });
          const { rows } = await s.db.query<{ state: string }>('select state from relay.outbound where id = $1', [
            r.id,
          ]);
          return {
            id: r.id,
            msg_id: body.msg_id,
            created: r.created,
            state: String(rows[0]?.state ?? 'pending'),
            audit_id: auditId,
          };
        } catch (err) {
          if (!hasCode(err, 'RELAY_OUTBOUND_CONFLICT')) throw err;
          await s.db.query('rollback to savepoint enqueue');
          const refused = new AdminError(
            'RELAY_OUTBOUND_CONFLICT',
            `msg_id ${body.msg_id} was already enqueued with a different payload`,
            { msg_id: body.msg_id },
            { cause: err },
          );
          return kit.refuse(s, 'enqueue', { kind: 'outbound', subjectKey: body.msg_id, refused });
        }
      });
      return reply.code(out.created ? 201 : 200).send(out);
    },
  );
}

/** Where in `params` the first uploaded-file reference ("attach://<part>") is, as a field path. */
export function attachPath(value: unknown, path = 'params', depth = 0): string | undefined {
  if (typeof value === 'string') return value.startsWith('attach://') ? path : undefined;
  if (value === null || typeof value !== 'object' || depth > 32) return undefined;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const found = attachPath(v, `${path}.${k}`, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * An upload names a multipart part whose bytes only the library can store with the row (JSON
 * carries no file): over HTTP a file is a URL or a file_id. Refused before anything is written.
 */
function refuseUploads(params: Record<string, unknown> | undefined): void {
  const at = attachPath(params);
  if (at === undefined) return;
  const field = `body.${at}`;
  const problem =
    'is an upload ("attach://…"): over the admin API a file is a URL or a file_id; uploads are enqueued with the library (enqueueOutbound with uploads)';
  throw new AdminError('RELAY_ADMIN_VALIDATION', `${field} ${problem}`, {
    field,
    errors: [{ field, message: problem, keyword: 'upload' }],
  });
}

/**
 * The trace a message enqueued over HTTP joins: the body's `traceparent`, else this
 * request's span when the admin process is traced (its parent is the `traceparent` header, taken by
 * the http instrumentation), else the header itself. A malformed value is a 400, not a silent new trace.
 */
function requestTraceparent(fromBody: string | undefined, header: string | string[] | undefined): string | null {
  for (const [where, v] of [
    ['body field traceparent', fromBody],
    ['header traceparent', header],
  ] as const) {
    if (v !== undefined && !isValidTraceparent(v)) {
      throw new AdminError(
        'RELAY_ADMIN_TRACEPARENT_INVALID',
        `${where} must be a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, ids not all zero`,
        { field: where.startsWith('body') ? 'traceparent' : 'header:traceparent' },
      );
    }
  }
  return fromBody ?? currentTraceparent() ?? (typeof header === 'string' ? header.trim() : null);
}
