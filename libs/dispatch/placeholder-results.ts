/**
 * What a relayed call resolves with (REPLY_MODE=outbound). Telegram has not seen the call yet, so
 * the handler gets a result shaped like Telegram's answer, with placeholder message ids
 * (libs/telegram/placeholders.ts) where Telegram would put new ones. Code written against telegraf's
 * types keeps working (`msg.message_id`, `msg.chat.id`), and a later call of the same handler may
 * pass a placeholder where a message id goes: the outbound worker sends it with the real id.
 *
 * Every object result also carries `tg_relay_msg_id`, the outbound row the call became.
 */
import { messageCount } from '../telegram/methods';
import { newPlaceholder } from '../telegram/placeholders';

export interface PlaceholderAnswer {
  /** What the call resolves with. */
  result: unknown;
  /** The placeholder message ids in `result`, one per message the call sends, in order. */
  placeholders: number[];
}

/** Calls that change an existing message: a Message with the id given, or `true` for an inline message. */
const EDITS = new Set([
  'editMessageText',
  'editMessageCaption',
  'editMessageMedia',
  'editMessageReplyMarkup',
  'editMessageLiveLocation',
  'stopMessageLiveLocation',
  'setGameScore',
]);

/** The chat as far as its id tells: a positive id is a user, -100… a supergroup or channel, @name a channel. */
export function placeholderChat(chatId: string): Record<string, unknown> {
  if (chatId.startsWith('@')) return { id: 0, type: 'channel', username: chatId.slice(1) };
  const id = Number(chatId);
  if (!Number.isSafeInteger(id) || id === 0) return { id: 0, type: 'private' };
  if (id > 0) return { id, type: 'private' };
  return { id, type: chatId.startsWith('-100') ? 'supergroup' : 'group' };
}

/**
 * The result of relayed `method` called with `params` (without chat_id) for `chatId` ('' when the
 * call names no chat), recorded as outbound row `msgId`.
 */
export function placeholderAnswer(
  method: string,
  params: Record<string, unknown>,
  chatId: string,
  msgId: string,
): PlaceholderAnswer {
  const date = Math.floor(Date.now() / 1000);
  const message = (messageId: unknown, fields: Record<string, unknown>) => ({
    message_id: messageId,
    date,
    chat: placeholderChat(chatId),
    ...fields,
    tg_relay_msg_id: msgId,
  });
  if (method === 'sendMediaGroup') {
    const items = Array.isArray(params.media) ? params.media : [];
    const placeholders = fresh(messageCount(method, params));
    const result = placeholders.map((p, i) => message(p, captionOf(items[i])));
    return { result, placeholders };
  }
  if (method === 'forwardMessages' || method === 'copyMessages') {
    const placeholders = fresh(messageCount(method, params));
    return { result: placeholders.map((p) => ({ message_id: p })), placeholders };
  }
  if (method === 'copyMessage') {
    const [p] = fresh(1);
    return { result: { message_id: p, tg_relay_msg_id: msgId }, placeholders: [p] };
  }
  if (method.startsWith('send') || method === 'forwardMessage') {
    const [p] = fresh(1);
    return { result: message(p, sentFields(method, params)), placeholders: [p] };
  }
  if (EDITS.has(method)) {
    if (chatId === '' && params.inline_message_id !== undefined) return { result: true, placeholders: [] };
    return {
      result: message(params.message_id, { ...sentFields(method, params), edit_date: date }),
      placeholders: [],
    };
  }
  if (method === 'stopPoll') return { result: stoppedPoll(msgId), placeholders: [] };
  if (method === 'answerWebAppQuery') return { result: { tg_relay_msg_id: msgId }, placeholders: [] };
  // deletes, pins, reactions and the other answers: Telegram says `true`
  return { result: true, placeholders: [] };
}

function fresh(n: number): number[] {
  return Array.from({ length: n }, () => newPlaceholder());
}

/** The fields of the call that Telegram's Message echoes: the text or the caption. */
function sentFields(method: string, params: Record<string, unknown>): Record<string, unknown> {
  if (method === 'sendMessage' || method === 'editMessageText')
    return typeof params.text === 'string' ? { text: params.text } : {};
  return captionOf(params);
}

function captionOf(item: unknown): Record<string, unknown> {
  if (typeof item !== 'object' || item === null) return {};
  const caption: unknown = Reflect.get(item, 'caption');
  return typeof caption === 'string' ? { caption } : {};
}

/** stopPoll answers with the Poll; its question and options are unknown until it is sent. */
function stoppedPoll(msgId: string): Record<string, unknown> {
  return {
    id: '',
    question: '',
    options: [],
    total_voter_count: 0,
    is_closed: true,
    is_anonymous: true,
    type: 'regular',
    allows_multiple_answers: false,
    tg_relay_msg_id: msgId,
  };
}
