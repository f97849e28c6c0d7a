/**
 * A broadcast request as the API, the library and the CLI take it: the message (any relayed send,
 * copy or forward method, validated by the outbound rules), the audience (a chat id list or the
 * name of a registered audience), and options. Every problem is reported at once.
 */
import { OutboundValidationError, type OutboundProblem } from '../outbound/errors';
import { normalizeChatId, validateOutboundMessage, type OutboundMessage } from '../outbound/message';
import { attachedParts } from '../outbound/method-params';
import { RELAYED_METHODS } from '../telegram/methods';
import { BroadcastValidationError } from './errors';

/** Methods a broadcast may send: the relayed sends, copies and forwards (not edits, deletes or answers). */
export const BROADCAST_METHODS: readonly string[] = RELAYED_METHODS.filter((m) => /^(send|copy|forward)/.test(m));
export const BROADCAST_CHATS_MAX = 1_000_000;
export const BROADCAST_KEY_MAX = 200;
export const AUDIENCE_NAME = /^[a-z][a-z0-9_-]{0,62}$/;

const FIELDS = new Set([
  'key',
  'chat_ids',
  'audience',
  'include_blocked',
  'paid',
  'bot_id',
  'method',
  'text',
  'parse_mode',
  'disable_notification',
  'reply_markup',
  'send_options',
  'params',
]);

export interface BroadcastInput {
  /** Idempotency key (1..200 characters): the same key answers the broadcast it created. */
  key?: string | null;
  /** Integer chat ids or @channelusernames; or `audience`. */
  chat_ids?: (string | number)[] | null;
  /** The name of a registered audience (relay.broadcast_audiences); or `chat_ids`. */
  audience?: string | null;
  /** Default false: chats relay.chat_status marks blocked or deactivated are skipped. */
  include_blocked?: boolean | null;
  /** Send with allow_paid_broadcast (the bot must have PAID_BROADCAST_RATE). Default: the bot's setting. */
  paid?: boolean | null;
  bot_id?: string | number | null;
  method?: string | null;
  text?: string | null;
  parse_mode?: string | null;
  disable_notification?: boolean | null;
  reply_markup?: Record<string, unknown> | null;
  send_options?: Record<string, unknown> | null;
  params?: Record<string, unknown> | null;
}

export interface BroadcastRequest {
  key: string | null;
  chatIds: string[] | null;
  audience: string | null;
  includeBlocked: boolean;
  paid: boolean | null;
  message: OutboundMessage;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Validates a broadcast request; throws BroadcastValidationError with every problem. */
export function validateBroadcast(input: unknown): BroadcastRequest {
  if (!isPlainObject(input)) throw new BroadcastValidationError([{ field: 'body', problem: 'must be a JSON object' }]);
  const problems: OutboundProblem[] = [];
  const bad = (field: string, problem: string) => problems.push({ field, problem });
  for (const k of Object.keys(input)) if (!FIELDS.has(k)) bad(k, 'is not a broadcast field');

  let key: string | null = null;
  if (input.key !== undefined && input.key !== null) {
    if (typeof input.key !== 'string' || input.key.length < 1 || input.key.length > BROADCAST_KEY_MAX)
      bad('key', `must be a string of 1..${BROADCAST_KEY_MAX} characters`);
    else key = input.key;
  }

  const chatIds = validateChats(input.chat_ids, bad);
  let audience: string | null = null;
  if (input.audience !== undefined && input.audience !== null) {
    if (typeof input.audience !== 'string' || !AUDIENCE_NAME.test(input.audience))
      bad('audience', 'must be the name of a registered audience (lowercase letters, digits, _ and -)');
    else audience = input.audience;
  }
  if (
    (chatIds === null) === (audience === null) &&
    !problems.some((p) => p.field === 'chat_ids' || p.field === 'audience')
  )
    bad('chat_ids', 'give either chat_ids (a list of chat ids) or audience (a registered audience name)');

  for (const f of ['include_blocked', 'paid'] as const)
    if (input[f] !== undefined && input[f] !== null && typeof input[f] !== 'boolean') bad(f, 'must be a boolean');

  const method = input.method ?? 'sendMessage';
  if (typeof method !== 'string' || !BROADCAST_METHODS.includes(method))
    bad('method', `must be a send, copy or forward method (${BROADCAST_METHODS.slice(0, 4).join(', ')}, …)`);
  else if (isPlainObject(input.params) && attachedParts(input.params).size > 0)
    bad('params', 'a broadcast cannot carry uploads (attach://): give a file_id or URL');

  let message: OutboundMessage | null = null;
  try {
    // the message is validated as one of its rows would be (the msg_id and chat here are stand-ins)
    const { key: _k, chat_ids: _c, audience: _a, include_blocked: _i, paid: _p, ...fields } = input;
    message = validateOutboundMessage({ ...fields, msg_id: 'bcast:0:0', chat_id: '1' });
  } catch (err) {
    if (!(err instanceof OutboundValidationError)) throw err;
    for (const p of err.problems) if (!problems.some((q) => q.field === p.field)) problems.push(p);
  }
  if (problems.length || !message) throw new BroadcastValidationError(problems);
  return {
    key,
    chatIds,
    audience,
    includeBlocked: input.include_blocked === true,
    paid: typeof input.paid === 'boolean' ? input.paid : null,
    message,
  };
}

function validateChats(value: unknown, bad: (field: string, problem: string) => void): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value) || value.length === 0 || value.length > BROADCAST_CHATS_MAX) {
    bad('chat_ids', `must be a list of 1..${BROADCAST_CHATS_MAX} chat ids`);
    return null;
  }
  const out: string[] = [];
  for (const [i, c] of value.entries()) {
    const n = normalizeChatId(c);
    if (n === undefined) {
      bad(`chat_ids[${i}]`, 'must be a non-zero integer chat id or @channelusername (5-32 characters)');
      return null;
    }
    out.push(n);
  }
  return out;
}
