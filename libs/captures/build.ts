/**
 * A capture is the collector's copy of one authorized user message: the original text and the raw
 * Telegram message, under a stable identity `telegram:{bot_id}:{update_id}:{chat_id}:{message_id}`.
 * Its sha256 (over the exact JSON document POSTed to the collector) is how a re-enqueue tells "the
 * same capture again" (no-op) from "different data under the same key" (RELAY_CAPTURE_KEY_CONFLICT).
 *
 * The bot is in the key because chat ids are the same for every bot (a private chat's id is the
 * user's) and message and update ids are only a bot's own: without it, one user writing to two bots
 * of one database made the second bot's capture a conflict. Captures stored before keep their key
 * `telegram:{update_id}:{chat_id}:{message_id}` (legacy): ingress recognises an update captured
 * under it, so a redelivery across the upgrade is not captured twice.
 */
import crypto from 'node:crypto';
import { jsonbTextOfStringified, storableText } from '../db/storable-json';

export interface CaptureSource {
  /** The bot whose update it is (relay.inbox.bot_id). */
  botId: string;
  updateId: number;
  /** message, edited_message, channel_post, … */
  type: string;
  /** The Telegram Message object as received. */
  message: Record<string, unknown>;
}

/** The document POSTed to the collector (`relay.captures.payload`). */
export interface CapturePayload {
  key: string;
  update_id: number;
  update_type: string;
  chat: Record<string, unknown>;
  from: Record<string, unknown> | null;
  /** Message text, or the caption of a media message; null when there is neither. */
  text: string | null;
  /** Telegram's `date`: unix seconds. */
  date: number;
  message: Record<string, unknown>;
}

export interface CaptureRecord {
  key: string;
  /** The key this capture had before keys named the bot, and the sha256 its document had under it. */
  legacyKey: string;
  legacySha256: string;
  updateId: number;
  chatId: number;
  messageId: number;
  fromId: number | null;
  /** The exact text (or caption), as in the payload. */
  text: string | null;
  /** `text` as the `captures.text` column holds it: NUL and unpaired surrogates replaced by U+FFFD. */
  storedText: string | null;
  date: number;
  payload: CapturePayload;
  /**
   * `JSON.stringify(payload)`: the exact document POSTed to the collector, hashed and stored in
   * `payload_raw` (json). NUL and unpaired surrogates are `\u` escapes in it, so nothing is lost.
   */
  payloadJson: string;
  /** The text of the `payload` jsonb copy (NUL and unpaired surrogates replaced by U+FFFD). */
  storedPayloadJson: string;
  sha256: string;
}

type Id = number | bigint;

export function captureKey(botId: string, updateId: Id, chatId: Id, messageId: Id): string {
  return `telegram:${botId}:${updateId}:${chatId}:${messageId}`;
}

/** The key of captures stored before keys named the bot. */
export function legacyCaptureKey(updateId: Id, chatId: Id, messageId: Id): string {
  return `telegram:${updateId}:${chatId}:${messageId}`;
}

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

/** Builds the capture of a message update (the caller decides whether it is authorized). */
export function buildCapture(src: CaptureSource): CaptureRecord {
  const m = src.message;
  const chat = m.chat as Record<string, unknown>;
  const chatId = chat.id as number;
  const messageId = m.message_id as number;
  const from = (m.from as Record<string, unknown> | undefined) ?? null;
  const text = typeof m.text === 'string' ? m.text : typeof m.caption === 'string' ? m.caption : null;
  const key = captureKey(src.botId, src.updateId, chatId, messageId);
  const legacyKey = legacyCaptureKey(src.updateId, chatId, messageId);
  const payload: CapturePayload = {
    key,
    update_id: src.updateId,
    update_type: src.type,
    chat,
    from,
    text,
    date: m.date as number,
    message: m,
  };
  const payloadJson = JSON.stringify(payload);
  // the same document under the legacy key: `key` is its first field, so only that prefix differs
  const keyPrefix = `{"key":${JSON.stringify(key)}`;
  const legacyJson = `{"key":${JSON.stringify(legacyKey)}${payloadJson.slice(keyPrefix.length)}`;
  return {
    key,
    legacyKey,
    legacySha256: sha256(legacyJson),
    updateId: src.updateId,
    chatId,
    messageId,
    fromId: from && typeof from.id === 'number' ? from.id : null,
    text,
    storedText: text === null ? null : storableText(text),
    date: m.date as number,
    payload,
    payloadJson,
    storedPayloadJson: jsonbTextOfStringified(payload, payloadJson),
    sha256: sha256(payloadJson),
  };
}
