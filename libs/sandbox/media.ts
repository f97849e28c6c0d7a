/**
 * Media sends (sendPhoto, sendDocument, sendMediaGroup) with the checks durability depends on: a
 * chat, the rate limits (an album takes one slot per message), and files — a string is a URL or
 * file_id, "attach://<part>" must name a part of the multipart request (Telegram: "wrong file
 * identifier/HTTP URL specified" otherwise). What a file contains is not judged.
 */
import type { BotState } from './bot-state';
import { BotApiError } from './http-io';
import type { UploadedPart } from './http-io';
import { enforceRateLimit, requireChatId, type MessagingEnv } from './messaging';
import type { SentMessage, TgMessage } from './types';

const WRONG_FILE = 'Bad Request: wrong file identifier/HTTP URL specified';

function fileParam(value: unknown, field: string, files: readonly UploadedPart[]): string {
  const direct = files.find((f) => f.part === field);
  if (value === undefined && direct) return direct.filename;
  if (typeof value !== 'string' || value === '')
    throw new BotApiError(400, `Bad Request: there is no ${field} in the request`);
  if (value.startsWith('attach://')) {
    const part = value.slice('attach://'.length);
    const f = files.find((x) => x.part === part);
    if (!f) throw new BotApiError(400, WRONG_FILE);
    return f.filename;
  }
  return value;
}

function store(bot: BotState, env: MessagingEnv, method: string, chatId: number | string, caption: unknown): TgMessage {
  const chat = bot.resolveChat(chatId);
  const now = Math.floor(Date.now() / 1000);
  const message: TgMessage & { caption?: string } = {
    message_id: bot.nextMessageId(chat.id),
    from: bot.user,
    chat,
    date: now,
  };
  if (typeof caption === 'string') message.caption = caption;
  bot.botMessages.set(`${chat.id}:${message.message_id}`, message);
  const record: SentMessage = {
    seq: env.nextSentSeq(),
    method,
    chat_id: chatId,
    resolved_chat_id: chat.id,
    message_id: message.message_id,
    text: typeof caption === 'string' ? caption : '',
    time: Date.now(),
  };
  bot.sent.push(record);
  return message;
}

/** sendPhoto, sendDocument, …: one message with one file in `field`. */
export function sendFile(field: string, method: string) {
  return (bot: BotState, params: Record<string, unknown>, env: MessagingEnv, files: readonly UploadedPart[]) => {
    const chatId = requireChatId(params.chat_id);
    bot.checkChatError(chatId, env.globalChatErrors);
    const name = fileParam(params[field], field, files);
    enforceRateLimit(bot, chatId, env);
    const message = store(bot, env, method, chatId, params.caption);
    return { ...message, [field]: { file_id: `sandbox-${field}-${message.message_id}`, file_name: name } };
  };
}

export function sendMediaGroup(
  bot: BotState,
  params: Record<string, unknown>,
  env: MessagingEnv,
  files: readonly UploadedPart[],
): TgMessage[] {
  const chatId = requireChatId(params.chat_id);
  bot.checkChatError(chatId, env.globalChatErrors);
  const media = params.media;
  if (!Array.isArray(media) || media.length < 2 || media.length > 10)
    throw new BotApiError(400, 'Bad Request: media must include 2-10 items');
  for (const item of media) {
    if (item === null || typeof item !== 'object') throw new BotApiError(400, "Bad Request: can't parse InputMedia");
    fileParam((item as Record<string, unknown>).media, 'media', files);
  }
  // one flood-control check per album: how Telegram weighs an album against its limits is not
  // documented, and the relay's own accounting (one slot per message) is tested on the relay side
  enforceRateLimit(bot, chatId, env);
  return media.map((item) => store(bot, env, 'sendMediaGroup', chatId, (item as Record<string, unknown>).caption));
}
