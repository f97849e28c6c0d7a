/**
 * Decoding of one update judges the envelope only: it must be a JSON object with a non-negative
 * integer `update_id`, and the fields tg-relay itself reads must have the right types (chat and
 * user ids for authorization and per-chat order, `message_id` and `date` for the capture key,
 * `text`/`caption` being strings). Content is data: no user-controlled string is ever looked at,
 * so a NUL, an unpaired surrogate or text that looks like an escape (`C:\u0000dir`) decodes like
 * anything else; what PostgreSQL cannot hold is dealt with when storing (libs/db/storable-json.ts).
 * Unknown fields and update kinds pass untouched (Telegram adds new ones). A failure names the JSON
 * path and what was expected, never the offending value: errors end up in logs and in
 * `relay.cursor.halted_reason`, raw payloads must not.
 */
import { jsonbText, storableJsonText, storableText } from '../db/storable-json';

/** Update kinds that carry a Message; authorized ones become captures. */
export const MESSAGE_KINDS = [
  'message',
  'edited_message',
  'channel_post',
  'edited_channel_post',
  'business_message',
  'edited_business_message',
] as const;
const MESSAGE_KIND_SET = new Set<string>(MESSAGE_KINDS);

export interface DecodedUpdate {
  updateId: number;
  /** The update kind: message, callback_query, … (first field besides update_id). */
  type: string;
  /** The exact text received (written to `relay.inbox.raw`, a `json` column that keeps it verbatim). */
  raw: string;
  /** The text of the `jsonb` copy (`relay.inbox.payload`): NUL and unpaired surrogates replaced by U+FFFD. */
  payloadJson: string;
  /** The parsed update, exactly as sent (NUL and unpaired surrogates included). */
  update: Record<string, unknown>;
  /** The chat the update belongs to, if any. */
  chatId: number | null;
  /** The user who caused it, if any. */
  fromId: number | null;
  /** The Message object for message kinds (captures are built from it). */
  message: Record<string, unknown> | null;
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
function optional<T>(o: Obj, key: string, path: string, check: (v: unknown, p: string) => T): T | undefined {
  const v = o[key];
  return v === undefined ? undefined : check(v, `${path}.${key}`);
}

// Only what the relay reads is checked: ids (authorization, per-chat order, capture key), dates,
// and that text/caption are strings. Names, usernames, callback data, queries… are the handlers'.
function user(v: unknown, path: string): Obj {
  const o = obj(v, path);
  int(o.id, `${path}.id`);
  return o;
}

function chat(v: unknown, path: string): Obj {
  const o = obj(v, path);
  int(o.id, `${path}.id`);
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
  user(o.from, `${path}.from`);
  optional(o, 'message', path, maybeInaccessibleMessage);
  return o;
}

/** Inline queries and chosen inline results: only the user (authorization without a chat). */
function fromOnly(v: unknown, path: string): Obj {
  const o = obj(v, path);
  user(o.from, `${path}.from`);
  return o;
}

function chatEvent(v: unknown, path: string): Obj {
  const o = obj(v, path);
  chat(o.chat, `${path}.chat`);
  user(o.from, `${path}.from`);
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
  inline_query: fromOnly,
  chosen_inline_result: fromOnly,
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
  if (!isObj(value))
    return { ok: false, failure: { updateId: null, raw, error: '$: expected an object', jsonPath: '$' } };
  const id = value.update_id;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) {
    return {
      ok: false,
      failure: { updateId: null, raw, error: '$.update_id: expected a non-negative integer', jsonPath: '$.update_id' },
    };
  }
  const keys = Object.keys(value).filter((k) => k !== 'update_id');
  const kind = keys.find((k) => KNOWN[k] !== undefined) ?? keys[0] ?? 'unknown';
  let chatId: number | null = null;
  let fromId: number | null = null;
  let msg: Obj | null = null;
  try {
    for (const key of keys) {
      const check = KNOWN[key];
      if (!check) continue;
      const o = check(value[key], `$.${key}`);
      if (key !== kind) continue; // every known part is validated; the update is described by its first one
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
    if (err instanceof Invalid)
      return { ok: false, failure: { updateId: id, raw, error: err.message, jsonPath: err.path } };
    throw err;
  }
  // An unknown kind is a key of the update: it goes to a text column, so it must be storable.
  const type = storableText(kind);
  let payloadJson: string;
  try {
    payloadJson = jsonbText(value, raw);
  } catch {
    // only a structure nested deeper than the JS stack allows (Telegram never sends one)
    return { ok: false, failure: { updateId: id, raw, error: '$: nested too deeply to store', jsonPath: '$' } };
  }
  return {
    ok: true,
    update: {
      updateId: id,
      type,
      raw: storableJsonText(raw),
      payloadJson,
      update: value,
      chatId,
      fromId,
      message: msg,
    },
  };
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
