/**
 * Decoding of one update: it must be a JSON object with a non-negative integer `update_id`, and the
 * fields we rely on (message, callback_query, inline_query, chat member updates…) must have the
 * right types. Unknown fields and update kinds pass untouched (Telegram adds new ones). A failure
 * names the JSON path and what was expected, never the offending value: errors end up in logs and
 * in `relay.cursor.halted_reason`, raw payloads must not.
 */

/** Update kinds that carry a Message; authorized ones become captures. */
export const MESSAGE_KINDS = ['message', 'edited_message', 'channel_post', 'edited_channel_post', 'business_message', 'edited_business_message'] as const;
const MESSAGE_KIND_SET = new Set<string>(MESSAGE_KINDS);

export interface DecodedUpdate {
  updateId: number;
  /** The update kind: message, callback_query, … (first field besides update_id). */
  type: string;
  /** The exact text received. */
  raw: string;
  update: Record<string, unknown>;
  /** The chat the update belongs to, if any. */
  chatId: number | null;
  /** The user who caused it, if any. */
  fromId: number | null;
  /** The Message object for message kinds (captures are built from it). */
  message: Record<string, any> | null;
}

export interface DecodeFailure {
  /** null when the item has no integer update_id (or is not JSON at all). */
  updateId: number | null;
  raw: string;
  error: string;
  /** JSONPath of the first problem, e.g. `$.message.chat.id`. */
  jsonPath: string;
}

export type DecodeResult = { ok: true; update: DecodedUpdate } | { ok: false; failure: DecodeFailure };

class Invalid extends Error {
  constructor(
    readonly path: string,
    readonly expected: string,
  ) {
    super(`${path}: expected ${expected}`);
  }
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function obj(v: unknown, path: string): Obj {
  if (!isObj(v)) throw new Invalid(path, 'an object');
  return v;
}
function int(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new Invalid(path, 'an integer');
  return v;
}
function str(v: unknown, path: string): string {
  if (typeof v !== 'string') throw new Invalid(path, 'a string');
  return v;
}
function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw new Invalid(path, 'a boolean');
  return v;
}
function optional<T>(o: Obj, key: string, path: string, check: (v: unknown, p: string) => T): T | undefined {
  const v = o[key];
  return v === undefined ? undefined : check(v, `${path}.${key}`);
}

function user(v: unknown, path: string): Obj {
  const o = obj(v, path);
  int(o.id, `${path}.id`);
  bool(o.is_bot, `${path}.is_bot`);
  str(o.first_name, `${path}.first_name`);
  return o;
}

function chat(v: unknown, path: string): Obj {
  const o = obj(v, path);
  int(o.id, `${path}.id`);
  str(o.type, `${path}.type`);
  return o;
}

function message(v: unknown, path: string): Obj {
  const o = obj(v, path);
  int(o.message_id, `${path}.message_id`);
  int(o.date, `${path}.date`);
  chat(o.chat, `${path}.chat`);
  optional(o, 'from', path, user);
  optional(o, 'sender_chat', path, chat);
  optional(o, 'text', path, str);
  optional(o, 'caption', path, str);
  return o;
}

/** A callback's message may be "inaccessible" (date 0, only chat and message_id). */
function maybeInaccessibleMessage(v: unknown, path: string): Obj {
  const o = obj(v, path);
  int(o.message_id, `${path}.message_id`);
  int(o.date, `${path}.date`);
  chat(o.chat, `${path}.chat`);
  return o;
}

function callbackQuery(v: unknown, path: string): Obj {
  const o = obj(v, path);
  str(o.id, `${path}.id`);
  user(o.from, `${path}.from`);
  optional(o, 'message', path, maybeInaccessibleMessage);
  optional(o, 'data', path, str);
  optional(o, 'chat_instance', path, str);
  return o;
}

function inlineQuery(v: unknown, path: string): Obj {
  const o = obj(v, path);
  str(o.id, `${path}.id`);
  user(o.from, `${path}.from`);
  str(o.query, `${path}.query`);
  return o;
}

function chosenInlineResult(v: unknown, path: string): Obj {
  const o = obj(v, path);
  str(o.result_id, `${path}.result_id`);
  user(o.from, `${path}.from`);
  str(o.query, `${path}.query`);
  return o;
}

function chatEvent(v: unknown, path: string): Obj {
  const o = obj(v, path);
  chat(o.chat, `${path}.chat`);
  user(o.from, `${path}.from`);
  int(o.date, `${path}.date`);
  return o;
}

const KNOWN: Record<string, (v: unknown, path: string) => Obj> = {
  message,
  edited_message: message,
  channel_post: message,
  edited_channel_post: message,
  business_message: message,
  edited_business_message: message,
  callback_query: callbackQuery,
  inline_query: inlineQuery,
  chosen_inline_result: chosenInlineResult,
  my_chat_member: chatEvent,
  chat_member: chatEvent,
  chat_join_request: chatEvent,
};

const idOf = (v: unknown): number | null => (isObj(v) && typeof v.id === 'number' ? v.id : null);

/** Decodes the raw text of one update. Never throws. */
export function decodeUpdate(raw: string): DecodeResult {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { ok: false, failure: { updateId: null, raw, error: 'not valid JSON', jsonPath: '$' } };
  }
  if (!isObj(value)) return { ok: false, failure: { updateId: null, raw, error: '$: expected an object', jsonPath: '$' } };
  const id = value.update_id;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) {
    return { ok: false, failure: { updateId: null, raw, error: '$.update_id: expected a non-negative integer', jsonPath: '$.update_id' } };
  }
  // PostgreSQL jsonb cannot store U+0000: such an update could never be committed.
  if (raw.includes('\\u0000')) {
    return { ok: false, failure: { updateId: id, raw, error: '$: contains \\u0000, which PostgreSQL jsonb cannot store', jsonPath: '$' } };
  }
  const keys = Object.keys(value).filter((k) => k !== 'update_id');
  const type = keys.find((k) => KNOWN[k] !== undefined) ?? keys[0] ?? 'unknown';
  let chatId: number | null = null;
  let fromId: number | null = null;
  let msg: Obj | null = null;
  try {
    for (const key of keys) {
      const check = KNOWN[key];
      if (!check) continue;
      const o = check(value[key], `$.${key}`);
      if (key !== type) continue; // every known part is validated; the update is described by its first one
      if (MESSAGE_KIND_SET.has(key)) {
        msg = o;
        chatId = idOf(o.chat);
        fromId = idOf(o.from);
      } else if (key === 'callback_query') {
        chatId = isObj(o.message) ? idOf(o.message.chat) : null;
        fromId = idOf(o.from);
      } else if (key === 'inline_query' || key === 'chosen_inline_result') {
        fromId = idOf(o.from);
      } else {
        chatId = idOf(o.chat);
        fromId = idOf(o.from);
      }
    }
  } catch (err) {
    if (err instanceof Invalid) return { ok: false, failure: { updateId: id, raw, error: err.message, jsonPath: err.path } };
    throw err;
  }
  return { ok: true, update: { updateId: id, type, raw, update: value, chatId, fromId, message: msg } };
}

/**
 * Whether an update passes `ALLOWED_CHAT_IDS`: an empty list allows everything; otherwise the
 * update's chat must be listed, or, for updates without a chat (inline queries), its user.
 */
export function isAuthorized(u: Pick<DecodedUpdate, 'chatId' | 'fromId'>, allowed: ReadonlySet<string>): boolean {
  if (allowed.size === 0) return true;
  if (u.chatId !== null) return allowed.has(String(u.chatId));
  if (u.fromId !== null) return allowed.has(String(u.fromId));
  return false;
}
