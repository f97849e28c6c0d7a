/**
 * An outbound message as callers give it (snake_case, like the admin API and the SQL function) and
 * its validated, normalised form. The rules are the same as relay.outbound_upsert's
 * (sql/functions/outbound_upsert.sql, which re-checks them for callers that bypass this module);
 * here every problem is reported at once with the field it concerns.
 */
import { formatTraceparent, parseTraceparent } from '../observability/tracing';
import { OutboundProblem, OutboundValidationError } from './errors';
import { isRelayed, methodClass, type RelayedMethod } from '../telegram/methods';
import { methodParamsProblems, placeholderProblems, uploadProblems, type UploadedFile } from './method-params';
import { charLength, jsonValueProblem, OUTBOUND_TEXT_MAX, outboundTextProblem, unicodeProblem } from './text-rules';

export { charLength, jsonValueProblem, OUTBOUND_TEXT_MAX, outboundTextProblem, unicodeProblem };

export const OUTBOUND_MSG_ID_MAX = 256;
/** msg_ids of the relay's own alerts (relay.outbound_alert_msg_id); no caller may enqueue into it. */
export const ALERT_MSG_ID_PREFIX = 'alert:';
export const PARSE_MODES = ['MarkdownV2', 'HTML', 'Markdown'] as const;
export const OUTBOUND_KINDS = ['message', 'reply', 'alert'] as const;
export const DELIVERY_MODES = ['at_least_once', 'at_most_once'] as const;
/**
 * Priority lanes (sql/0027_outbound_lanes.sql): `interactive` messages have first claim on the bot's
 * rate budget, `bulk` ones (broadcasts) use what is left. FIFO per chat holds within a lane.
 */
export const OUTBOUND_LANES = ['interactive', 'bulk'] as const;
/** Parameters with their own field; `send_options` must not repeat them. */
export const RESERVED_SEND_OPTIONS = ['chat_id', 'text', 'parse_mode', 'disable_notification', 'reply_markup'] as const;

export type ParseMode = (typeof PARSE_MODES)[number];
export type OutboundKind = (typeof OUTBOUND_KINDS)[number];
export type Delivery = (typeof DELIVERY_MODES)[number];
export type OutboundLane = (typeof OUTBOUND_LANES)[number];
export type OutboundState = 'pending' | 'delivering' | 'delivered' | 'failed';

export interface OutboundMessageInput {
  /** Idempotency key, unique for good (1..256 characters, not starting with `alert:`). */
  msg_id: string;
  /** Integer chat id or @channelusername; omitted → the default chat (OPS_CHAT_ID). */
  chat_id?: string | number | null;
  /** sendMessage: 1..4096 characters, sent verbatim (the publisher owns escaping). Other methods: none. */
  text?: string | null;
  parse_mode?: string | null;
  disable_notification?: boolean | null;
  reply_markup?: Record<string, unknown> | null;
  /** Default `message`. `alert` messages never raise an alert when they fail (loop guard). */
  kind?: OutboundKind;
  /** Default `at_least_once`: an ambiguous send is retried; `at_most_once`: it fails for an operator. */
  delivery?: Delivery;
  /** Other sendMessage parameters, passed verbatim (reply_parameters, message_thread_id, …). */
  send_options?: Record<string, unknown> | null;
  /** The row's attempt budget; default RETRY_MAX_ATTEMPTS of the worker. */
  max_attempts?: number | null;
  /** Default: the configured bot (or relay.outbound_settings). */
  bot_id?: string | number | null;
  /** Handler replies: the update that produced the message. */
  source_update_id?: number | string | null;
  /**
   * W3C trace context (`00-<trace id>-<span id>-<flags>`) of the caller's trace: the sendMessage
   * spans join it. Not part of the payload: a retry from another trace is the same message.
   */
  traceparent?: string | null;
  /** The relayed Bot API method (libs/telegram/methods.ts); default sendMessage. */
  method?: string | null;
  /**
   * Methods other than sendMessage (required for them): every parameter but chat_id, passed as is;
   * an uploaded file is the string "attach://<part>" with its bytes in `uploads`. Part of the payload.
   */
  params?: Record<string, unknown> | null;
  /** Files the params name as "attach://<part>", stored with the row (relay.outbound_uploads). */
  uploads?: UploadedFile[] | null;
  /** Handler replies: the placeholder message ids the call resolved with, in order. */
  placeholders?: number[] | null;
  /**
   * Default `interactive`; `bulk` for broadcasts and other mass sends: they use only the rate budget
   * interactive messages leave, and a chat's interactive message may overtake its pending bulk one.
   * Not part of the payload (a retry from another lane returns the existing message).
   */
  lane?: OutboundLane | null;
}

/** A validated message. `chatId` null means "the default chat". */
export interface OutboundMessage {
  msgId: string;
  botId: string | null;
  chatId: string | null;
  /** sendMessage only; null for other methods. */
  text: string | null;
  parseMode: ParseMode | null;
  disableNotification: boolean;
  replyMarkup: Record<string, unknown> | null;
  sendOptions: Record<string, unknown> | null;
  kind: OutboundKind;
  delivery: Delivery;
  maxAttempts: number | null;
  sourceUpdateId: string | null;
  /** Set only when given. */
  traceparent?: string;
  method: RelayedMethod;
  /** Methods other than sendMessage: their parameters but chat_id; null for sendMessage. */
  params: Record<string, unknown> | null;
  uploads: UploadedFile[];
  placeholders: number[] | null;
  lane: OutboundLane;
}

const INT_CHAT = /^-?\d{1,18}$/;
const CHANNEL = /^@[A-Za-z0-9_]{4,32}$/;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

/** `123`, `'-100123'`, `' 007 '` → canonical integer text; `@channel` kept; anything else undefined. */
export function normalizeChatId(value: unknown): string | undefined {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value !== 0 ? String(value) : undefined;
  }
  if (typeof value === 'bigint') return value !== 0n ? value.toString() : undefined;
  if (typeof value !== 'string') return undefined;
  const v = value.trim();
  if (INT_CHAT.test(v)) {
    const n = BigInt(v);
    return n === 0n ? undefined : n.toString();
  }
  return CHANNEL.test(v) ? v : undefined;
}

/** Telegram's per-group limit applies to negative ids (groups, supergroups, channels) and @channels. */
export function isGroupChat(chatId: string): boolean {
  return chatId.startsWith('@') || chatId.startsWith('-');
}

export function normalizeParseMode(value: unknown): ParseMode | null | undefined {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') return undefined;
  return PARSE_MODES.find((m) => m.toLowerCase() === value.trim().toLowerCase());
}

/**
 * The method of a message and what it carries: a sendMessage its text (checked here), any other
 * relayed method its params (libs/outbound/method-params.ts) and none of the sendMessage fields.
 */
function validateMethod(
  m: Record<string, unknown>,
  bad: (field: string, problem: string) => void,
): { method: unknown; plain: boolean; params: Record<string, unknown> | null } {
  const method = m.method ?? 'sendMessage';
  const plain = method === 'sendMessage';
  if (typeof method !== 'string' || !isRelayed(method))
    bad('method', 'must be a relayed Bot API method (a send, copy, forward, edit, delete, pin, reaction or answer)');
  const text = m.text;
  let params: Record<string, unknown> | null = null;
  if (plain) {
    const textProblem = outboundTextProblem(text);
    if (textProblem) bad('text', textProblem);
    if (m.params !== undefined && m.params !== null)
      bad('params', 'is for methods other than sendMessage (a sendMessage has text and send_options)');
  } else if (typeof method === 'string' && isRelayed(method)) {
    for (const f of ['text', 'parse_mode', 'reply_markup', 'send_options'] as const)
      if (m[f] !== undefined && m[f] !== null) bad(f, `is a sendMessage field; a ${method} carries it in params`);
    if (m.disable_notification === true)
      bad('disable_notification', `is a sendMessage field; a ${method} carries it in params`);
    const ps = methodParamsProblems(method, m.params);
    for (const p of ps) bad(p.field, p.problem);
    if (ps.length === 0) params = m.params as Record<string, unknown>;
  }
  for (const p of [...uploadProblems(m.uploads, m.params), ...placeholderProblems(m.placeholders)])
    bad(p.field, p.problem);
  if (plain && m.uploads !== undefined && m.uploads !== null && (m.uploads as unknown[]).length > 0)
    bad('uploads', 'a sendMessage uploads no files');
  return { method, plain, params };
}

/**
 * Validates and normalises a message. Throws `OutboundValidationError` listing every problem.
 * Accepts `unknown` so that untrusted input (HTTP bodies) can be passed as is.
 */
export function validateOutboundMessage(input: unknown): OutboundMessage {
  const problems: OutboundProblem[] = [];
  const bad = (field: string, problem: string) => problems.push({ field, problem });
  if (!isPlainObject(input)) throw new OutboundValidationError([{ field: 'message', problem: 'must be an object' }]);
  const m = input;

  const msgId = m.msg_id;
  if (typeof msgId !== 'string' || charLength(msgId) < 1 || charLength(msgId) > OUTBOUND_MSG_ID_MAX) {
    bad('msg_id', `must be a string of 1..${OUTBOUND_MSG_ID_MAX} characters`);
  } else if (unicodeProblem(msgId)) bad('msg_id', unicodeProblem(msgId) as string);
  else if (msgId.startsWith(ALERT_MSG_ID_PREFIX))
    bad(
      'msg_id',
      `must not start with "${ALERT_MSG_ID_PREFIX}" (reserved for the alerts the relay raises about failed messages)`,
    );

  let chatId: string | null = null;
  // an answer goes to no chat, whatever chat it was given
  const chatless = typeof m.method === 'string' && methodClass(m.method) === 'answer';
  if (!chatless && m.chat_id !== undefined && m.chat_id !== null && m.chat_id !== '') {
    const c = normalizeChatId(m.chat_id);
    if (c === undefined) bad('chat_id', 'must be a non-zero integer chat id or @channelusername (5-32 characters)');
    else chatId = c;
  }

  const { method, plain, params } = validateMethod(m, bad);
  const text = m.text;

  const parseMode = normalizeParseMode(m.parse_mode);
  if (parseMode === undefined) bad('parse_mode', `must be one of ${PARSE_MODES.join(', ')}`);

  const dn = m.disable_notification;
  if (dn !== undefined && dn !== null && typeof dn !== 'boolean') bad('disable_notification', 'must be a boolean');

  const rm = m.reply_markup;
  if (rm !== undefined && rm !== null && !isPlainObject(rm)) bad('reply_markup', 'must be a JSON object');
  else if (rm !== undefined && rm !== null && jsonValueProblem(rm)) bad('reply_markup', jsonValueProblem(rm) as string);

  const kind = m.kind ?? 'message';
  if (!OUTBOUND_KINDS.includes(kind as OutboundKind)) bad('kind', `must be one of ${OUTBOUND_KINDS.join(', ')}`);

  const delivery = m.delivery ?? 'at_least_once';
  if (!DELIVERY_MODES.includes(delivery as Delivery)) bad('delivery', `must be one of ${DELIVERY_MODES.join(', ')}`);

  const lane = m.lane ?? 'interactive';
  if (!OUTBOUND_LANES.includes(lane as OutboundLane)) bad('lane', `must be one of ${OUTBOUND_LANES.join(', ')}`);

  let sendOptions: Record<string, unknown> | null = null;
  const so = m.send_options;
  if (so !== undefined && so !== null) {
    if (!isPlainObject(so)) bad('send_options', 'must be a JSON object');
    else {
      const repeated = RESERVED_SEND_OPTIONS.filter((k) => k in so);
      if (repeated.length) bad('send_options', `must not repeat ${repeated.join(', ')} (they have their own fields)`);
      else if (jsonValueProblem(so)) bad('send_options', jsonValueProblem(so) as string);
      else if (Object.keys(so).length > 0) sendOptions = so;
    }
  }

  const ma = m.max_attempts;
  if (ma !== undefined && ma !== null && !(Number.isInteger(ma) && (ma as number) >= 1 && (ma as number) <= 1000)) {
    bad('max_attempts', 'must be an integer from 1 to 1000');
  }

  let botId: string | null = null;
  const bi = m.bot_id;
  if (bi !== undefined && bi !== null && bi !== '') {
    // a number is taken as its digits; an object or array is never a bot id
    const b =
      typeof bi === 'string' || typeof bi === 'number' || typeof bi === 'bigint' || typeof bi === 'boolean'
        ? String(bi).trim()
        : '';
    if (!/^\d{1,20}$/.test(b)) bad('bot_id', 'must be the numeric bot id (the part of the token before ":")');
    else botId = b;
  }

  let sourceUpdateId: string | null = null;
  const su = m.source_update_id;
  if (su !== undefined && su !== null) {
    if ((typeof su === 'number' && Number.isSafeInteger(su)) || (typeof su === 'string' && /^-?\d{1,18}$/.test(su)))
      sourceUpdateId = String(su);
    else bad('source_update_id', 'must be an integer');
  }

  let traceparent: string | null = null;
  const tp = m.traceparent;
  if (tp !== undefined && tp !== null) {
    traceparent = formatTraceparent(parseTraceparent(tp) ?? undefined);
    if (traceparent === null)
      bad(
        'traceparent',
        'must be a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, ids not all zero',
      );
  }

  if (problems.length) throw new OutboundValidationError(problems);
  return {
    msgId: msgId as string,
    botId,
    chatId,
    text: plain ? (text as string) : null,
    parseMode: parseMode as ParseMode | null,
    disableNotification: dn === true,
    replyMarkup: (rm as Record<string, unknown> | null | undefined) ?? null,
    sendOptions,
    kind: kind as OutboundKind,
    delivery: delivery as Delivery,
    maxAttempts: (ma as number | null | undefined) ?? null,
    sourceUpdateId,
    ...(traceparent ? { traceparent } : {}),
    method: method as RelayedMethod,
    params,
    uploads: (m.uploads as UploadedFile[] | null | undefined) ?? [],
    placeholders: (m.placeholders as number[] | null | undefined) ?? null,
    lane: lane as OutboundLane,
  };
}
