/**
 * An outbound message as callers give it (snake_case, like the admin API and the SQL function) and
 * its validated, normalised form. The rules are the same as relay.outbound_upsert's
 * (sql/functions/outbound_upsert.sql, which re-checks them for callers that bypass this module);
 * here every problem is reported at once with the field it concerns.
 */
import { TELEGRAM_TEXT_MAX } from '../telegram/limits';
import { formatTraceparent, parseTraceparent } from '../observability/tracing';
import { OutboundProblem, OutboundValidationError } from './errors';

export const OUTBOUND_TEXT_MAX = TELEGRAM_TEXT_MAX;
export const OUTBOUND_MSG_ID_MAX = 256;
/** msg_ids of the relay's own alerts (relay.outbound_alert_msg_id); no caller may enqueue into it. */
export const ALERT_MSG_ID_PREFIX = 'alert:';
export const PARSE_MODES = ['MarkdownV2', 'HTML', 'Markdown'] as const;
export const OUTBOUND_KINDS = ['message', 'reply', 'alert'] as const;
export const DELIVERY_MODES = ['at_least_once', 'at_most_once'] as const;
/** Parameters with their own field; `send_options` must not repeat them. */
export const RESERVED_SEND_OPTIONS = ['chat_id', 'text', 'parse_mode', 'disable_notification', 'reply_markup'] as const;

export type ParseMode = (typeof PARSE_MODES)[number];
export type OutboundKind = (typeof OUTBOUND_KINDS)[number];
export type Delivery = (typeof DELIVERY_MODES)[number];
export type OutboundState = 'pending' | 'delivering' | 'delivered' | 'failed';

export interface OutboundMessageInput {
  /** Idempotency key, unique for good (1..256 characters, not starting with `alert:`). */
  msg_id: string;
  /** Integer chat id or @channelusername; omitted → the default chat (OPS_CHAT_ID). */
  chat_id?: string | number | null;
  /** 1..4096 characters, sent verbatim (the publisher owns escaping). */
  text: string;
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
}

/** A validated message. `chatId` null means "the default chat". */
export interface OutboundMessage {
  msgId: string;
  botId: string | null;
  chatId: string | null;
  text: string;
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
}

const INT_CHAT = /^-?\d{1,18}$/;
const CHANNEL = /^@[A-Za-z0-9_]{4,32}$/;

/** Characters as PostgreSQL's char_length counts them (code points), so both checks agree. */
export function charLength(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** NUL (PostgreSQL text/jsonb cannot hold it) or a lone surrogate (not Unicode: half an emoji cut by `slice`). */
export function unicodeProblem(s: string): string | undefined {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return `contains a NUL character (U+0000) at index ${i}`;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      return `contains a lone surrogate (U+${c.toString(16).toUpperCase()}) at index ${i}: not valid Unicode (an emoji cut in half?)`;
    }
    if (c >= 0xdc00 && c <= 0xdfff)
      return `contains a lone surrogate (U+${c.toString(16).toUpperCase()}) at index ${i}: not valid Unicode (an emoji cut in half?)`;
  }
  return undefined;
}

/**
 * Why `text` cannot be a Telegram message text (1..4096 characters, a visible one among them,
 * valid Unicode without NUL), or undefined when it can. Reusable by every way in (admin API,
 * library, handler replies); never quotes the text.
 */
export function outboundTextProblem(text: unknown): string | undefined {
  if (typeof text !== 'string') return `must be a string of 1..${OUTBOUND_TEXT_MAX} characters`;
  const n = charLength(text);
  if (n < 1 || n > OUTBOUND_TEXT_MAX) return `must be 1..${OUTBOUND_TEXT_MAX} characters, got ${n}`;
  const u = unicodeProblem(text);
  if (u) return u;
  if (!/\S/.test(text)) return 'must contain a visible character (Telegram rejects blank text)';
  return undefined;
}

/**
 * Why a value cannot be stored as `jsonb` and sent as JSON (a NUL or lone surrogate in a string or
 * key, a BigInt, a cycle), or undefined when it can.
 */
export function jsonValueProblem(value: unknown): string | undefined {
  const seen = new Set<unknown>();
  const walk = (v: unknown, path: string, depth: number): string | undefined => {
    if (typeof v === 'string') {
      const u = unicodeProblem(v);
      return u ? `${path || 'value'} ${u}` : undefined;
    }
    if (typeof v === 'bigint') return `${path || 'value'} is a BigInt (not JSON)`;
    if (v === null || typeof v !== 'object') return undefined;
    if (seen.has(v)) return `${path || 'value'} is circular (not JSON)`;
    if (depth > 32) return `${path || 'value'} is nested too deeply`;
    seen.add(v);
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function' && !(v instanceof Date)) {
      try {
        return walk((v as { toJSON: () => unknown }).toJSON(), path, depth + 1);
      } catch {
        return `${path || 'value'} cannot be converted to JSON`;
      }
    }
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const ku = unicodeProblem(k);
      if (ku) return `a key of ${path || 'value'} ${ku}`;
      const p = walk(x, path ? `${path}.${k.slice(0, 40)}` : k.slice(0, 40), depth + 1);
      if (p) return p;
    }
    seen.delete(v);
    return undefined;
  };
  return walk(value, '', 0);
}

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
  if (m.chat_id !== undefined && m.chat_id !== null && m.chat_id !== '') {
    const c = normalizeChatId(m.chat_id);
    if (c === undefined) bad('chat_id', 'must be a non-zero integer chat id or @channelusername (5-32 characters)');
    else chatId = c;
  }

  const text = m.text;
  const textProblem = outboundTextProblem(text);
  if (textProblem) bad('text', textProblem);

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
    text: text as string,
    parseMode: parseMode as ParseMode | null,
    disableNotification: dn === true,
    replyMarkup: (rm as Record<string, unknown> | null | undefined) ?? null,
    sendOptions,
    kind: kind as OutboundKind,
    delivery: delivery as Delivery,
    maxAttempts: (ma as number | null | undefined) ?? null,
    sourceUpdateId,
    ...(traceparent ? { traceparent } : {}),
  };
}
