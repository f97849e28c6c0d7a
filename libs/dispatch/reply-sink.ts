/**
 * The reply seam. Every Bot API call a handler makes during a dispatch (`ctx.reply`,
 * `ctx.sendMessage`, `ctx.telegram.*`, and `bot.telegram.*` inside the handler) goes through the
 * dispatch's `ReplySession`:
 *
 * - `direct` (today): the call goes to the Bot API at once, as telegraf would do it.
 * - `outbound`: `sendMessage` calls are captured instead and written to the outbound relay inside
 *   the same transaction that marks the update handled, so a reply leaves exactly when its update
 *   is acknowledged (a failed attempt's replies are discarded with it). Other methods
 *   (answerCallbackQuery, editMessageText, sendChatAction…) stay direct.
 *
 * Switching is one variable: REPLY_MODE=direct|outbound.
 */
import type { PoolClient } from 'pg';
import { charLength, OUTBOUND_TEXT_MAX, unicodeProblem } from '../outbound/message';
import { currentTraceparent } from '../observability/tracing';
import { InvalidReplyError, ReplySinkUnavailableError } from './errors';

export type ReplyMode = 'direct' | 'outbound';

/** The real Bot API call (telegraf's own `callApi` of the context's Telegram instance). */
export type DirectCall = (
  method: string,
  payload: Record<string, unknown>,
  opts: { signal?: AbortSignal },
) => Promise<unknown>;

/** The update a session belongs to. */
export interface DispatchSubject {
  botId: string;
  updateId: number;
  /** Above 0: another update under a reused update_id, whose replies must not take the first one's ids. */
  updateEpoch?: number;
  chatId?: string | null;
}

export interface ReplySession {
  /** One Bot API call made by the handler. */
  call(method: string, payload: Record<string, unknown>, signal: AbortSignal, direct: DirectCall): Promise<unknown>;
  /** Runs inside the transaction that marks the update handled. */
  commit(client: PoolClient): Promise<void>;
}

export interface ReplySink {
  readonly mode: ReplyMode;
  /** A fresh session per dispatch attempt. */
  open(subject: DispatchSubject): ReplySession;
}

/**
 * REPLY_MODE=direct: handlers talk to the Bot API themselves. A `sendMessage` whose text Telegram
 * would refuse whatever happens (blank, a NUL or lone surrogate, over 4096 characters without a
 * parse_mode) is refused here with InvalidReplyError, as in outbound mode, instead of a 400 that would
 * be retried until the budget is spent (holding the chat's next updates back meanwhile). Text with a
 * parse_mode is left to Telegram: its limit counts the text after entity parsing.
 */
export function createDirectReplySink(): ReplySink {
  return {
    mode: 'direct',
    open: () => {
      let sends = 0;
      return {
        call: (method, payload, signal, direct) => {
          if (CAPTURED_METHODS.has(method)) {
            sends++;
            const problem = directTextProblem(payload);
            if (problem) return Promise.reject(new InvalidReplyError(method, sends, [{ field: 'text', problem }]));
          }
          return direct(method, payload, { signal });
        },
        commit: () => Promise.resolve(),
      };
    },
  };
}

function directTextProblem(payload: Record<string, unknown>): string | undefined {
  const text = payload.text;
  if (typeof text !== 'string') return undefined; // telegraf/Telegram decide
  const u = unicodeProblem(text);
  if (u) return u;
  const n = charLength(text);
  if (n === 0 || !/\S/.test(text)) return 'must contain a visible character (Telegram rejects blank text)';
  if (
    n > OUTBOUND_TEXT_MAX &&
    (payload.parse_mode === undefined || payload.parse_mode === null || payload.parse_mode === '')
  ) {
    return `must be 1..${OUTBOUND_TEXT_MAX} characters, got ${n}`;
  }
  return undefined;
}

/** A `sendMessage` captured during a dispatch, to be queued by the outbound relay. */
export interface OutboundReply {
  /**
   * Deterministic: `update:{botId}:{updateId}:{n}` (n counts the attempt's sends from 1), and
   * `update:{botId}:{updateId}/{epoch}:{n}` for an update under a reused update_id (epoch > 0).
   */
  msgId: string;
  botId: string;
  /** As the handler passed it: an integer chat id or @channelusername, as text. */
  chatId: string;
  text: string;
  parseMode?: string;
  replyMarkup?: unknown;
  disableNotification?: boolean;
  sourceUpdateId: number;
  /** Every sendMessage parameter as given (reply_parameters, link_preview_options, entities…). */
  payload: Record<string, unknown>;
  /** The trace context of the handler run that made the reply; null when tracing is off. */
  traceparent?: string | null;
  /** The relayed Bot API method (libs/telegram/methods.ts); absent means sendMessage. */
  method?: string;
  /**
   * Methods other than sendMessage: every parameter but `chat_id`, as relayed. A file the handler
   * uploads is replaced by `"attach://<part>"`, its bytes are in `uploads`.
   */
  params?: Record<string, unknown>;
  /** Files read at call time, sent as multipart parts named `part`. */
  uploads?: OutboundUpload[];
  /** The placeholder message ids the call resolved with, one per message it sends (libs/telegram/placeholders.ts). */
  placeholders?: number[];
}

/** One uploaded file of a relayed call. */
export interface OutboundUpload {
  /** The multipart part name the params refer to as `attach://<part>`. */
  part: string;
  filename: string;
  bytes: Buffer;
}

/**
 * Writes captured replies inside the handled transaction. Provided by the outbound relay
 * (libs/outbound); dispatch does not know its tables.
 */
export type OutboundReplyWriter = ((client: PoolClient, replies: OutboundReply[]) => Promise<void>) & {
  /**
   * The writer's own rules (libs/outbound: the outbound message validation): the problems that make
   * a reply unwritable, or an empty list. Checked at the `ctx.reply` call, so an invalid reply is
   * refused where the handler can see it instead of failing the handled transaction later.
   */
  validate?: (reply: OutboundReply) => { field: string; problem: string }[];
};

/** Methods captured in outbound mode; everything else is called directly. */
export const CAPTURED_METHODS = new Set(['sendMessage']);

/**
 * REPLY_MODE=outbound. `ctx.reply` resolves at once with a placeholder message (`message_id: 0`,
 * plus `tg_relay_msg_id`): the real message is sent by an outbound worker after the update is handled.
 */
export function createOutboundReplySink(opts: { write: OutboundReplyWriter }): ReplySink {
  return {
    mode: 'outbound',
    open: (subject) => {
      const captured: OutboundReply[] = [];
      return {
        call: async (method, payload, signal, direct) => {
          if (!CAPTURED_METHODS.has(method)) return direct(method, payload, { signal });
          let reply: OutboundReply;
          let problems: { field: string; problem: string }[];
          try {
            reply = toOutboundReply(subject, captured.length + 1, payload);
            problems = opts.write.validate?.(reply) ?? [];
          } catch (err) {
            // a payload that cannot even be read (a throwing getter, a value that is not JSON)
            throw new InvalidReplyError(method, captured.length + 1, [
              { field: 'payload', problem: `cannot be read: ${err instanceof Error ? err.name : typeof err}` },
            ]);
          }
          if (problems.length) throw new InvalidReplyError(method, captured.length + 1, problems);
          captured.push(reply);
          return {
            message_id: 0,
            date: Math.floor(Date.now() / 1000),
            chat: { id: Number(reply.chatId) || 0, type: 'private' },
            text: reply.text,
            tg_relay_msg_id: reply.msgId,
          };
        },
        commit: async (client) => {
          if (captured.length) await opts.write(client, captured);
        },
      };
    },
  };
}

function toOutboundReply(subject: DispatchSubject, n: number, payload: Record<string, unknown>): OutboundReply {
  const reply: OutboundReply = {
    msgId: `update:${subject.botId}:${subject.updateId}${subject.updateEpoch ? `/${subject.updateEpoch}` : ''}:${n}`,
    botId: subject.botId,
    chatId:
      typeof payload.chat_id === 'number' || typeof payload.chat_id === 'string' || typeof payload.chat_id === 'bigint'
        ? String(payload.chat_id)
        : '',
    text:
      typeof payload.text === 'string' ? payload.text : typeof payload.text === 'number' ? String(payload.text) : '',
    sourceUpdateId: subject.updateId,
    payload: { ...payload },
  };
  // the dispatch span's context: the reply's sendMessage joins the update's trace
  const traceparent = currentTraceparent();
  if (traceparent) reply.traceparent = traceparent;
  if (typeof payload.parse_mode === 'string') reply.parseMode = payload.parse_mode;
  if (payload.reply_markup !== undefined) reply.replyMarkup = payload.reply_markup;
  if (payload.disable_notification !== undefined) reply.disableNotification = Boolean(payload.disable_notification);
  return reply;
}

/**
 * The sink for a REPLY_MODE value. `outbound` needs the outbound relay's writer; without one it
 * fails at start rather than silently sending directly.
 */
export function createReplySink(mode: ReplyMode, deps: { outboundWriter?: OutboundReplyWriter } = {}): ReplySink {
  if (mode === 'direct') return createDirectReplySink();
  if (!deps.outboundWriter) {
    throw new ReplySinkUnavailableError(
      'REPLY_MODE=outbound needs the outbound relay (libs/outbound) to queue handler replies, and it is not available in this build; use REPLY_MODE=direct',
    );
  }
  return createOutboundReplySink({ write: deps.outboundWriter });
}
