/**
 * Putting one bot message in a chat, for every send method other than sendMessage (media, location,
 * contact, poll, dice, copies, forwards): the checks every send shares (chat id, scripted chat
 * error, reply target, flood control) in Telegram's order, then a message_id from the chat's
 * sequence, the stored message (for later edits, pins, reactions) and the `sent()` record.
 */
import type { BotState } from './bot-state';
import { TG_DESCRIPTIONS } from './constants';
import { BotApiError, boolParam } from './http-io';
import {
  enforceRateLimit,
  nowSeconds,
  replyMarkupParam,
  replyTarget,
  requireChatId,
  type MessagingEnv,
} from './messaging';
import type { SentMessage, TgChat, TgMessage } from './types';

/** A send's chat, checked: the chat id is valid and no scripted error applies. */
export interface SendTarget {
  chatId: number | string;
  chat: TgChat;
}

export function sendTarget(bot: BotState, params: Record<string, unknown>, env: MessagingEnv): SendTarget {
  const chatId = requireChatId(params.chat_id);
  bot.checkChatError(chatId, env.globalChatErrors);
  return { chatId, chat: bot.resolveChat(chatId) };
}

/** What the `sent()` record says of a message besides its ids. */
export interface SentSummary {
  method: string;
  /** What a chat list shows (`[photo] caption`). */
  text: string;
  media?: string;
  caption?: string;
  file_id?: string;
  parse_mode?: string;
}

/** The reply_to_message of a send, or a 400 when the target is missing and that is not allowed. */
export function replyToOf(bot: BotState, chat: TgChat, params: Record<string, unknown>): TgMessage['reply_to_message'] {
  const reply = replyTarget(params);
  if (reply.id === undefined) return undefined;
  if (reply.id <= bot.lastMessageIdOf(chat.id)) return { message_id: reply.id, date: nowSeconds(), chat };
  if (!reply.allowMissing) throw new BotApiError(400, TG_DESCRIPTIONS.replyNotFound);
  return undefined;
}

export interface Preflight {
  replyMarkup: unknown;
  replyTo: TgMessage['reply_to_message'];
}

/** Reply markup and reply target validated, then flood control charged: nothing may fail after this. */
export function preflight(
  bot: BotState,
  target: SendTarget,
  params: Record<string, unknown>,
  env: MessagingEnv,
): Preflight {
  const replyMarkup = replyMarkupParam(params.reply_markup);
  const replyTo = replyToOf(bot, target.chat, params);
  enforceRateLimit(bot, target.chatId, env, boolParam(params.allow_paid_broadcast));
  return { replyMarkup, replyTo };
}

/** Store a message with `content` in the target chat and record it; returns the stored message. */
export function postMessage(
  bot: BotState,
  env: MessagingEnv,
  target: SendTarget,
  params: Record<string, unknown>,
  pre: Preflight,
  content: Record<string, unknown>,
  summary: SentSummary,
): TgMessage {
  const { chat } = target;
  const message: TgMessage = {
    message_id: bot.nextMessageId(chat.id),
    from: bot.user,
    chat,
    date: nowSeconds(),
    ...content,
  };
  if (pre.replyMarkup !== undefined) message.reply_markup = pre.replyMarkup;
  if (pre.replyTo) message.reply_to_message = pre.replyTo;
  bot.botMessages.set(`${chat.id}:${message.message_id}`, message);
  const record: SentMessage = {
    seq: env.nextSentSeq(),
    method: summary.method,
    chat_id: target.chatId,
    resolved_chat_id: chat.id,
    message_id: message.message_id,
    text: summary.text,
    time: Date.now(),
  };
  if (boolParam(params.allow_paid_broadcast)) record.paid = true;
  if (summary.media !== undefined) record.media = summary.media;
  if (summary.caption !== undefined) record.caption = summary.caption;
  if (summary.file_id !== undefined) record.file_id = summary.file_id;
  if (summary.parse_mode) record.parse_mode = summary.parse_mode;
  if (pre.replyMarkup !== undefined) record.reply_markup = pre.replyMarkup;
  if (pre.replyTo) record.reply_to_message_id = pre.replyTo.message_id;
  if (params.disable_notification !== undefined) record.disable_notification = boolParam(params.disable_notification);
  bot.sent.push(record);
  return message;
}

/** `[photo]` or `[photo] caption`: how a media message reads in a list of texts (the dashboard's chat). */
export function mediaLabel(kind: string, caption: string | undefined): string {
  return caption ? `[${kind}] ${caption}` : `[${kind}]`;
}

/** A copy of a stored message for an answer (later edits must not change an answer already given). */
export function snapshot(message: TgMessage): TgMessage {
  return JSON.parse(JSON.stringify(message)) as TgMessage;
}
