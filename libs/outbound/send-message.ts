/**
 * One Bot API call for an outbound row (its method: sendMessage, or any relayed method with its params), through the shared Bot API client (libs/telegram), and
 * its classification. The text is sent verbatim (the publisher owns escaping); the token lives only
 * in the client's request path and never reaches an outcome, a log line or an audit row.
 */
import type { BotApiClient } from '../telegram/client';
import type { MultipartFile } from '../telegram/post';
import { methodClass } from '../telegram/methods';
import { classifySendError, classifySendSuccess, SendOutcome } from './classify-response';

/** The columns of relay.outbound a send needs (the claim returns the whole row). */
export interface OutboundRow {
  id: string;
  msg_id: string;
  bot_id: string;
  /** Null for answers (they belong to no chat). */
  chat_id: string | null;
  target_chat_id: string | null;
  /** sendMessage only. */
  text: string | null;
  parse_mode: string | null;
  disable_notification: boolean;
  reply_markup: Record<string, unknown> | null;
  send_options: Record<string, unknown> | null;
  kind: 'message' | 'reply' | 'alert';
  delivery: 'at_least_once' | 'at_most_once';
  attempts: number;
  max_attempts: number | null;
  /** W3C trace context of the enqueue: the sendMessage span joins that trace. */
  traceparent?: string | null;
  /** The relayed Bot API method (rows before 0025: sendMessage). */
  method?: string;
  /** Methods other than sendMessage: every parameter but chat_id. */
  params?: Record<string, unknown> | null;
  /** What the row counts for against the rate limits (0 for answers). */
  message_count?: number;
  /** Placeholder ids the handler was given (bigint[]: text from pg). */
  placeholders?: (string | number)[] | null;
  /** Priority lane (rows before 0027: interactive). */
  lane?: 'interactive' | 'bulk';
}

export const methodOf = (row: Pick<OutboundRow, 'method'>): string => row.method ?? 'sendMessage';

/** An answer to a query: no chat, outside the FIFO and the limits. */
export const isAnswer = (row: Pick<OutboundRow, 'method'>): boolean => methodClass(methodOf(row)) === 'answer';

/** Integer ids go as JSON numbers (Telegram ids fit in 52 bits), @channel names as strings. */
export function chatIdParam(chatId: string): number | string {
  if (/^-?\d+$/.test(chatId)) {
    const n = Number(chatId);
    if (Number.isSafeInteger(n)) return n;
  }
  return chatId;
}

export function sendMessageParams(
  row: Pick<
    OutboundRow,
    'target_chat_id' | 'text' | 'parse_mode' | 'disable_notification' | 'reply_markup' | 'send_options'
  >,
): Record<string, unknown> {
  const params: Record<string, unknown> = {
    ...(row.send_options ?? {}),
    chat_id: chatIdParam(row.target_chat_id ?? ''),
    text: row.text,
  };
  if (row.parse_mode) params.parse_mode = row.parse_mode;
  if (row.disable_notification) params.disable_notification = true;
  if (row.reply_markup) params.reply_markup = row.reply_markup;
  return params;
}

/**
 * The parameters a row is sent with: a sendMessage's from its columns; any other method's from its
 * params (placeholders already resolved, `resolved`), plus chat_id from target_chat_id unless it is
 * an answer or an edit of an inline message (those name no chat).
 */
export function callParams(
  row: Pick<
    OutboundRow,
    | 'method'
    | 'params'
    | 'target_chat_id'
    | 'text'
    | 'parse_mode'
    | 'disable_notification'
    | 'reply_markup'
    | 'send_options'
  >,
  resolved?: Record<string, unknown>,
): Record<string, unknown> {
  if (methodOf(row) === 'sendMessage') return sendMessageParams(row);
  const params = { ...(resolved ?? row.params ?? {}) };
  const chatless = isAnswer(row) || row.target_chat_id === null || row.target_chat_id.startsWith('inline:');
  if (!chatless) params.chat_id = chatIdParam(row.target_chat_id as string);
  return params;
}

/**
 * Sends and classifies. No abort signal on purpose: once a request may have been written, giving
 * up on it does not unsend it; the call is bounded by `timeoutMs` instead (a timeout after the
 * request was written is Ambiguous). `files` go as multipart parts.
 */
export async function sendOutbound(
  client: BotApiClient,
  row: OutboundRow,
  timeoutMs: number,
  call: { params?: Record<string, unknown>; files?: readonly MultipartFile[] } = {},
): Promise<SendOutcome> {
  const method = methodOf(row);
  try {
    const result = await client.callApi(method, callParams(row, call.params), { timeoutMs, files: call.files });
    return classifySendSuccess(result, 200, method);
  } catch (err) {
    // attempts counts this one: more than one means an earlier attempt may have been taken
    return classifySendError(err, method, { repeat: row.attempts > 1 });
  }
}
