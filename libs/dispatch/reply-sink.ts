/**
 * The reply seam. Every Bot API call a handler makes during a dispatch (`ctx.reply`,
 * `ctx.replyWithPhoto`, `ctx.telegram.*`, and `bot.telegram.*` inside the handler) goes through the
 * dispatch's `ReplySession`:
 *
 * - `direct`: the call goes to the Bot API at once, as telegraf would do it.
 * - `outbound`: every relayed call (libs/telegram/methods.ts: sends, copies, forwards, edits,
 *   deletes, pins, reactions, answers) is captured instead, in call order, and written to the
 *   outbound relay inside the same transaction that marks the update handled, so it leaves exactly
 *   when its update is acknowledged (a failed attempt's calls are discarded with it). It resolves at
 *   once with a placeholder result (placeholder-results.ts); its files are read at the call
 *   (input-files.ts). Reads and `sendChatAction` stay direct.
 *
 * Switching is one variable: REPLY_MODE=direct|outbound.
 */
import type { PoolClient } from 'pg';
import { OUTBOUND_MAX_UPLOAD_DEFAULT } from '../config/schema';
import { charLength, jsonValueProblem, normalizeChatId, OUTBOUND_TEXT_MAX, unicodeProblem } from '../outbound/message';
import { currentTraceparent } from '../observability/tracing';
import { isRelayed, methodClass } from '../telegram/methods';
import { abortReason, InvalidReplyError, ReplySinkUnavailableError } from './errors';
import { readInputFiles, UploadProblem } from './input-files';
import { placeholderAnswer } from './placeholder-results';

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
  /** Runs inside the transaction that marks the update handled; the msg_ids of the replies it wrote. */
  commit(client: PoolClient): Promise<readonly string[]>;
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
          if (method === 'sendMessage') {
            sends++;
            const problem = directTextProblem(payload);
            if (problem) return Promise.reject(new InvalidReplyError(method, sends, [{ field: 'text', problem }]));
          }
          return direct(method, payload, { signal });
        },
        commit: () => Promise.resolve([]),
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

/** A relayed Bot API call captured during a dispatch, to be queued by the outbound relay. */
export interface OutboundReply {
  /**
   * Deterministic: `update:{botId}:{updateId}:{n}` (n counts the attempt's captured calls from 1,
   * in call order), and `update:{botId}:{updateId}/{epoch}:{n}` for an update under a reused
   * update_id (epoch > 0).
   */
  msgId: string;
  botId: string;
  /**
   * sendMessage: as the handler passed it, as text. Other methods: the chat id normalized
   * (normalizeChatId), or '' when the call names no chat (answers, edits of inline messages).
   */
  chatId: string;
  /** sendMessage's text; '' for other methods (their text, if any, is in `params`). */
  text: string;
  parseMode?: string;
  replyMarkup?: unknown;
  disableNotification?: boolean;
  sourceUpdateId: number;
  /**
   * sendMessage: every parameter as given (reply_parameters, link_preview_options, entities…).
   * Other methods: `params` with `chat_id` (when the call names a chat).
   */
  payload: Record<string, unknown>;
  /** The trace context of the handler run that made the reply; null when tracing is off. */
  traceparent?: string | null;
  /** The relayed Bot API method (libs/telegram/methods.ts); absent means sendMessage (the sink always sets it). */
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

export interface OutboundReplySinkOptions {
  write: OutboundReplyWriter;
  /** OUTBOUND_MAX_UPLOAD: the bytes the files of one call may total (default 20 MB). */
  maxUploadBytes?: number;
}

/**
 * REPLY_MODE=outbound. A relayed call resolves at once with a placeholder result shaped like
 * Telegram's (a Message whose `message_id` is a placeholder, `true` for a delete or an answer…, with
 * `tg_relay_msg_id`): the real call is made by an outbound worker after the update is handled.
 * A call that can never be sent (unreadable parameters or files, too big, refused by the writer's
 * rules) rejects at the call with InvalidReplyError and is not captured.
 */
export function createOutboundReplySink(opts: OutboundReplySinkOptions): ReplySink {
  const maxUploadBytes = opts.maxUploadBytes ?? OUTBOUND_MAX_UPLOAD_DEFAULT;
  return {
    mode: 'outbound',
    open: (subject) => {
      const captured: OutboundReply[] = [];
      const capture = async (method: string, payload: Record<string, unknown>, signal: AbortSignal) => {
        if (signal.aborted) throw abortReason(signal);
        const n = captured.length + 1;
        const reply = await captureCall(subject, n, method, payload, { maxBytes: maxUploadBytes, signal });
        const answer = placeholderAnswer(method, reply.params ?? reply.payload, reply.chatId, reply.msgId);
        reply.placeholders = answer.placeholders;
        let problems: { field: string; problem: string }[];
        try {
          problems = opts.write.validate?.(reply) ?? [];
        } catch (err) {
          throw unreadable(method, n, err);
        }
        if (problems.length) throw new InvalidReplyError(method, n, problems);
        captured.push(reply);
        return answer.result;
      };
      // One capture at a time, in call order: a call's number (its msg_id) is its place among the
      // attempt's captured calls even while an earlier call is still reading its files.
      let previous: Promise<unknown> = Promise.resolve();
      return {
        call: (method, payload, signal, direct) => {
          if (!isRelayed(method)) return direct(method, payload, { signal });
          const turn = previous.then(() => capture(method, payload, signal));
          previous = turn.catch(() => undefined);
          return turn;
        },
        commit: async (client) => {
          await previous; // a call the handler did not await is part of the attempt too
          if (captured.length) await opts.write(client, captured);
          return captured.map((r) => r.msgId);
        },
      };
    },
  };
}

/** A payload that cannot even be read (a throwing getter, a value that is not JSON). */
function unreadable(method: string, n: number, err: unknown): InvalidReplyError {
  return new InvalidReplyError(method, n, [
    { field: 'payload', problem: `cannot be read: ${err instanceof Error ? err.name : typeof err}` },
  ]);
}

/** The OutboundReply of call `n`; throws InvalidReplyError, or the attempt's abort reason. */
async function captureCall(
  subject: DispatchSubject,
  n: number,
  method: string,
  payload: Record<string, unknown>,
  files: { maxBytes: number; signal: AbortSignal },
): Promise<OutboundReply> {
  try {
    if (method === 'sendMessage') return toOutboundReply(subject, n, payload);
    return await toRelayedCall(subject, n, method, payload, files);
  } catch (err) {
    if (files.signal.aborted) throw abortReason(files.signal);
    if (err instanceof InvalidReplyError) throw err;
    if (err instanceof UploadProblem)
      throw new InvalidReplyError(method, n, [{ field: err.field, problem: err.problem }]);
    throw unreadable(method, n, err);
  }
}

function msgIdOf(subject: DispatchSubject, n: number): string {
  return `update:${subject.botId}:${subject.updateId}${subject.updateEpoch ? `/${subject.updateEpoch}` : ''}:${n}`;
}

/** Telegraf drops null and undefined parameters when it sends; so does a relayed call. */
const withoutNulls = (_key: string, value: unknown) => (value === null ? undefined : value);

/**
 * A relayed call other than sendMessage: its files read (input-files.ts), its parameters but
 * chat_id copied as the JSON the outbound worker will send.
 */
async function toRelayedCall(
  subject: DispatchSubject,
  n: number,
  method: string,
  payload: Record<string, unknown>,
  files: { maxBytes: number; signal: AbortSignal },
): Promise<OutboundReply> {
  const { chat_id: givenChat, ...rest } = payload;
  const refuse = (field: string, problem: string) => new InvalidReplyError(method, n, [{ field, problem }]);
  let chatId = '';
  if (methodClass(method) === 'message') {
    if (givenChat !== undefined && givenChat !== null) {
      chatId = normalizeChatId(givenChat) ?? '';
      if (!chatId) throw refuse('chat_id', 'must be an integer chat id or @channelusername');
    } else if (typeof rest.inline_message_id !== 'string' || rest.inline_message_id === '') {
      throw refuse('chat_id', 'is required (an integer chat id or @channelusername, or inline_message_id for an edit)');
    }
  }
  const read = await readInputFiles(rest, files);
  const problem = jsonValueProblem(read.payload);
  if (problem) throw refuse('params', problem);
  const params = JSON.parse(JSON.stringify(read.payload, withoutNulls)) as Record<string, unknown>;
  const reply: OutboundReply = {
    msgId: msgIdOf(subject, n),
    botId: subject.botId,
    chatId,
    text: '',
    sourceUpdateId: subject.updateId,
    payload: chatId ? { chat_id: chatId, ...params } : { ...params },
    method,
    params,
    uploads: read.uploads,
  };
  const traceparent = currentTraceparent();
  if (traceparent) reply.traceparent = traceparent;
  return reply;
}

function toOutboundReply(subject: DispatchSubject, n: number, payload: Record<string, unknown>): OutboundReply {
  const reply: OutboundReply = {
    msgId: msgIdOf(subject, n),
    botId: subject.botId,
    chatId:
      typeof payload.chat_id === 'number' || typeof payload.chat_id === 'string' || typeof payload.chat_id === 'bigint'
        ? String(payload.chat_id)
        : '',
    text:
      typeof payload.text === 'string' ? payload.text : typeof payload.text === 'number' ? String(payload.text) : '',
    sourceUpdateId: subject.updateId,
    payload: { ...payload },
    method: 'sendMessage',
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
export function createReplySink(
  mode: ReplyMode,
  deps: { outboundWriter?: OutboundReplyWriter; maxUploadBytes?: number } = {},
): ReplySink {
  if (mode === 'direct') return createDirectReplySink();
  if (!deps.outboundWriter) {
    throw new ReplySinkUnavailableError(
      'REPLY_MODE=outbound needs the outbound relay (libs/outbound) to queue handler replies, and it is not available in this build; use REPLY_MODE=direct',
    );
  }
  return createOutboundReplySink({ write: deps.outboundWriter, maxUploadBytes: deps.maxUploadBytes });
}
