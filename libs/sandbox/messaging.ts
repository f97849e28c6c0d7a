/**
 * Message methods (sendMessage, editMessageText, answerCallbackQuery, …) with Telegram's
 * validations, scripted chat errors and flood control.
 */
import type { BotState } from './bot-state';
import type { RateLimiter } from './rate-limiter';
import type { ScriptedChatError, SentMessage, TgMessage } from './types';
import { MAX_TEXT_LENGTH, PARSE_MODES, TG_DESCRIPTIONS } from './constants';
import { BotApiError, boolParam, chatIdParam, intParam, textParam } from './http-io';

export interface MessagingEnv {
  limiter: RateLimiter;
  globalChatErrors: Map<string, ScriptedChatError>;
  onRateLimited(): void;
  nextSentSeq(): number;
  /** An injected callback query older than this is "too old" to answer (0: every answer is). */
  callbackQueryTtlMs: number;
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

export function requireChatId(value: unknown): number | string {
  if (value === undefined || value === null || value === '') throw new BotApiError(400, TG_DESCRIPTIONS.chatIdEmpty);
  const id = chatIdParam(value);
  if (id === undefined || id === 0) throw new BotApiError(400, TG_DESCRIPTIONS.chatNotFound);
  return id;
}

export function parseModeParam(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' || !PARSE_MODES.has(value.toLowerCase())) {
    throw new BotApiError(400, TG_DESCRIPTIONS.unsupportedParseMode);
  }
  return value;
}

/**
 * Length of the text after entity parsing, in UTF-16 code units as Telegram counts. HTML tags are
 * removed and character references count as one; Markdown is counted as written (approximation).
 */
export function visibleText(text: string, parseMode: string | undefined): string {
  if (parseMode?.toLowerCase() !== 'html') return text;
  return text.replace(/<[^>]*>/g, '').replace(/&(#\d+|#x[0-9a-f]+|[a-z]+);/gi, '_');
}

function validateText(value: unknown, parseMode: string | undefined): string {
  const text = typeof value === 'string' ? value : typeof value === 'number' ? String(value) : '';
  const visible = visibleText(text, parseMode);
  if (visible.trim().length === 0) throw new BotApiError(400, TG_DESCRIPTIONS.textEmpty);
  if (visible.length > MAX_TEXT_LENGTH) throw new BotApiError(400, TG_DESCRIPTIONS.textTooLong);
  return text;
}

export function replyMarkupParam(value: unknown): unknown {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'object') throw new BotApiError(400, TG_DESCRIPTIONS.badReplyMarkup);
  return value;
}

export function replyTarget(params: Record<string, unknown>): { id?: number; allowMissing: boolean } {
  const rp = params.reply_parameters as { message_id?: unknown; allow_sending_without_reply?: unknown } | undefined;
  if (rp && typeof rp === 'object') {
    return { id: intParam(rp.message_id, 0) || undefined, allowMissing: boolParam(rp.allow_sending_without_reply) };
  }
  return {
    id: intParam(params.reply_to_message_id, 0) || undefined,
    allowMissing: boolParam(params.allow_sending_without_reply),
  };
}

/** `paid`: the send carries allow_paid_broadcast (paced by the paid bucket when one is configured). */
export function enforceRateLimit(bot: BotState, chatId: number | string, env: MessagingEnv, paid = false): void {
  const retryAfter = env.limiter.take(bot.id, chatId, Date.now(), paid);
  if (retryAfter > 0) {
    env.onRateLimited();
    throw new BotApiError(429, TG_DESCRIPTIONS.tooManyRequests(retryAfter), { retry_after: retryAfter });
  }
}

export function sendMessage(bot: BotState, params: Record<string, unknown>, env: MessagingEnv): TgMessage {
  const chatId = requireChatId(params.chat_id);
  bot.checkChatError(chatId, env.globalChatErrors);
  const parseMode = parseModeParam(params.parse_mode);
  const text = validateText(params.text, parseMode);
  const replyMarkup = replyMarkupParam(params.reply_markup);
  const chat = bot.resolveChat(chatId);
  const reply = replyTarget(params);
  let replyTo: TgMessage['reply_to_message'];
  if (reply.id !== undefined) {
    if (reply.id <= bot.lastMessageIdOf(chat.id)) replyTo = { message_id: reply.id, date: nowSeconds(), chat };
    else if (!reply.allowMissing) throw new BotApiError(400, TG_DESCRIPTIONS.replyNotFound);
  }
  const paid = boolParam(params.allow_paid_broadcast);
  enforceRateLimit(bot, chatId, env, paid);

  const message: TgMessage = { message_id: bot.nextMessageId(chat.id), from: bot.user, chat, date: nowSeconds(), text };
  if (replyMarkup !== undefined) message.reply_markup = replyMarkup;
  if (replyTo) message.reply_to_message = replyTo;
  bot.botMessages.set(`${chat.id}:${message.message_id}`, message);
  const record: SentMessage = {
    seq: env.nextSentSeq(),
    method: 'sendMessage',
    chat_id: chatId,
    resolved_chat_id: chat.id,
    message_id: message.message_id,
    text,
    time: Date.now(),
  };
  if (paid) record.paid = true;
  if (parseMode) record.parse_mode = parseMode;
  if (replyMarkup !== undefined) record.reply_markup = replyMarkup;
  if (replyTo) record.reply_to_message_id = replyTo.message_id;
  if (params.disable_notification !== undefined) record.disable_notification = boolParam(params.disable_notification);
  bot.sent.push(record);
  return message;
}

export function editMessageText(bot: BotState, params: Record<string, unknown>, env: MessagingEnv): TgMessage | true {
  const parseMode = parseModeParam(params.parse_mode);
  if (params.inline_message_id !== undefined) {
    validateText(params.text, parseMode);
    return true;
  }
  const chatId = requireChatId(params.chat_id);
  bot.checkChatError(chatId, env.globalChatErrors);
  const text = validateText(params.text, parseMode);
  const replyMarkup = replyMarkupParam(params.reply_markup);
  const chat = bot.resolveChat(chatId);
  const messageId = intParam(params.message_id, 0);
  const message = bot.editableMessage(chat.id, messageId);
  if (message.text === undefined) throw new BotApiError(400, TG_DESCRIPTIONS.noTextToEdit);
  if (message.text === text && JSON.stringify(message.reply_markup) === JSON.stringify(replyMarkup)) {
    throw new BotApiError(400, TG_DESCRIPTIONS.notModified);
  }
  message.text = text;
  message.edit_date = nowSeconds();
  if (replyMarkup !== undefined) message.reply_markup = replyMarkup;
  else delete message.reply_markup;
  const record: SentMessage = {
    seq: env.nextSentSeq(),
    method: 'editMessageText',
    chat_id: chatId,
    resolved_chat_id: chat.id,
    message_id: messageId,
    text,
    time: Date.now(),
  };
  if (parseMode) record.parse_mode = parseMode;
  if (replyMarkup !== undefined) record.reply_markup = replyMarkup;
  bot.sent.push(record);
  return { ...message };
}

export function answerCallbackQuery(bot: BotState, params: Record<string, unknown>, env: MessagingEnv): true {
  const id = textParam(params.callback_query_id ?? '');
  const issuedAt = bot.openCallbacks.get(id);
  if (issuedAt === undefined) throw new BotApiError(400, TG_DESCRIPTIONS.queryInvalid);
  bot.openCallbacks.delete(id);
  if (Date.now() - issuedAt >= env.callbackQueryTtlMs) throw new BotApiError(400, TG_DESCRIPTIONS.queryInvalid);
  const entry: { callback_query_id: string; text?: string; show_alert?: boolean } = { callback_query_id: id };
  if (typeof params.text === 'string') entry.text = params.text;
  if (params.show_alert !== undefined) entry.show_alert = boolParam(params.show_alert);
  bot.answeredCallbacks.push(entry);
  return true;
}

export function sendChatAction(bot: BotState, params: Record<string, unknown>, env: MessagingEnv): true {
  const chatId = requireChatId(params.chat_id);
  bot.checkChatError(chatId, env.globalChatErrors);
  return true;
}
