/**
 * The seed-003 wire contract, `TelegramOutbound` JSON published on NATS_SUBJECT with
 * `Nats-Msg-Id: <msg_id>`:
 *
 *   { "msg_id": "cohort|1234|signal", "chat_id": null, "text": "<b>Signal</b>", "parse_mode": "HTML", "kind": "trade" }
 *
 * - `msg_id` (required) is the idempotency key of relay.outbound.
 * - `chat_id` — or `chat`, the seed's Rust field name — absent or null → the default chat
 *   (OPS_CHAT_ID, the seed's TELEGRAM_CHAT_ID). Both given and different is a contract violation.
 * - `text` is sent verbatim (the publisher owns escaping); `parse_mode` is passed through (Telegram's
 *   three modes, any letter case, as relay.outbound stores them).
 * - `kind` is free metadata (`info`, `alert`, `trade`, …) kept as relay.outbound.publisher_kind; the
 *   row's own kind is `message`.
 * - `method` (default sendMessage) and `params` relay another Bot API call, as over the admin API:
 *   `{ "msg_id": "p1", "chat_id": 42, "method": "sendPhoto", "params": { "photo": "https://…", "caption": "hi" } }`
 *   (no text; params hold every parameter but chat_id). A file is a URL or a file_id: an upload
 *   ("attach://…") needs bytes a JSON message does not carry, so it is a contract violation.
 * - `lane` (default `interactive`): `bulk` for broadcasts and other mass sends, which use only the
 *   rate budget interactive messages leave (any other value is a contract violation naming `lane`).
 * Other fields are ignored (forward compatibility: a publisher may send more than we read).
 * Every field that reaches a text column (msg_id, text, kind) must be valid Unicode without NUL: a
 * NUL or a lone surrogate (`\ud83d` alone, half an emoji) is a contract violation of that message,
 * never a database error of its batch; a body that is not valid UTF-8 is `invalid_json`.
 * The message rules (text length, chat id forms…) are the outbound relay's own (libs/outbound).
 */
import { storableText } from '../db/storable-json';
import { OutboundValidationError } from '../outbound/errors';
import { OUTBOUND_MSG_ID_MAX, OutboundMessage, unicodeProblem, validateOutboundMessage } from '../outbound/message';
import { attachedParts } from '../outbound/method-params';

export const PUBLISHER_KIND_MAX = 64;

export type Decoded =
  | { ok: true; message: OutboundMessage; publisherKind: string | null }
  | { ok: false; reason: 'invalid_json' | 'invalid'; error: string; msgId: string | null };

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Decodes and validates one message body. Never throws. */
export function decodeTelegramOutbound(data: Uint8Array): Decoded {
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(data));
  } catch (err) {
    const what = err instanceof SyntaxError ? 'not valid JSON' : 'not valid UTF-8';
    return { ok: false, reason: 'invalid_json', error: `body is ${what} (${data.length} bytes)`, msgId: null };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, reason: 'invalid', error: 'body must be a JSON object (TelegramOutbound)', msgId: null };
  }
  const m = body as Record<string, unknown>;
  const msgId = typeof m.msg_id === 'string' ? rejectMsgId(m.msg_id) : null;
  const problems: string[] = [];

  const present = (v: unknown) => v !== undefined && v !== null && v !== '';
  let chat: unknown = m.chat_id;
  if (present(m.chat)) {
    if (present(m.chat_id) && String(m.chat_id).trim() !== String(m.chat).trim())
      problems.push('chat and chat_id: both given and different');
    chat = m.chat;
  }

  let publisherKind: string | null = null;
  if (present(m.kind)) {
    if (typeof m.kind !== 'string' || m.kind.length > PUBLISHER_KIND_MAX)
      problems.push(`kind: must be a string of at most ${PUBLISHER_KIND_MAX} characters`);
    else if (unicodeProblem(m.kind)) problems.push(`kind: ${unicodeProblem(m.kind)}`);
    else publisherKind = m.kind;
  }

  if (attachedParts(m.params).size > 0)
    problems.push('params: an upload ("attach://…") cannot travel in a JSON message; a file is a URL or a file_id');

  let message: OutboundMessage | undefined;
  try {
    message = validateOutboundMessage({
      msg_id: m.msg_id,
      chat_id: chat,
      text: m.text,
      parse_mode: m.parse_mode,
      method: m.method,
      params: m.params,
      lane: m.lane,
    });
  } catch (err) {
    if (!(err instanceof OutboundValidationError)) throw err;
    for (const p of err.problems) problems.push(`${p.field}: ${p.problem}`);
  }
  if (problems.length || !message) return { ok: false, reason: 'invalid', error: problems.join('; '), msgId };
  return { ok: true, message, publisherKind };
}

/**
 * The msg_id of a refused message as relay.jetstream_rejects.msg_id can hold it: at most
 * OUTBOUND_MSG_ID_MAX UTF-16 units, never ending in half an emoji, each NUL or lone surrogate
 * replaced by U+FFFD (the exact bytes stay in `raw`).
 */
function rejectMsgId(s: string): string {
  let cut = s.slice(0, OUTBOUND_MSG_ID_MAX);
  if (cut.length < s.length && /[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return storableText(cut);
}
