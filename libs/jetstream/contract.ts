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
 * Other fields are ignored (forward compatibility: a publisher may send more than we read).
 * The message rules (text length, chat id forms…) are the outbound relay's own (libs/outbound).
 */
import { OutboundValidationError } from '../outbound/errors';
import { OutboundMessage, validateOutboundMessage } from '../outbound/message';

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
  const msgId = typeof m.msg_id === 'string' ? m.msg_id.slice(0, 256) : null;
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
    else publisherKind = m.kind;
  }

  let message: OutboundMessage | undefined;
  try {
    message = validateOutboundMessage({ msg_id: m.msg_id, chat_id: chat, text: m.text, parse_mode: m.parse_mode });
  } catch (err) {
    if (!(err instanceof OutboundValidationError)) throw err;
    for (const p of err.problems) problems.push(`${p.field}: ${p.problem}`);
  }
  if (problems.length || !message) return { ok: false, reason: 'invalid', error: problems.join('; '), msgId };
  return { ok: true, message, publisherKind };
}
