/**
 * One sendMessage call for an outbound row, through the shared Bot API client (libs/telegram), and
 * its classification. The text is sent verbatim (the publisher owns escaping); the token lives only
 * in the client's request path and never reaches an outcome, a log line or an audit row.
 */
import type { BotApiClient } from '../telegram/client';
import { classifySendError, classifySendSuccess, SendOutcome } from './classify-response';

/** The columns of relay.outbound a send needs (the claim returns the whole row). */
export interface OutboundRow {
  id: string;
  msg_id: string;
  bot_id: string;
  chat_id: string;
  target_chat_id: string;
  text: string;
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
}

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
    chat_id: chatIdParam(row.target_chat_id),
    text: row.text,
  };
  if (row.parse_mode) params.parse_mode = row.parse_mode;
  if (row.disable_notification) params.disable_notification = true;
  if (row.reply_markup) params.reply_markup = row.reply_markup;
  return params;
}

/**
 * Sends and classifies. No abort signal on purpose: once a request may have been written, giving
 * up on it does not unsend it; the call is bounded by `timeoutMs` instead (a timeout after the
 * request was written is Ambiguous).
 */
export async function sendOutbound(client: BotApiClient, row: OutboundRow, timeoutMs: number): Promise<SendOutcome> {
  try {
    const result = await client.callApi('sendMessage', sendMessageParams(row), { timeoutMs });
    return classifySendSuccess(result);
  } catch (err) {
    return classifySendError(err);
  }
}
