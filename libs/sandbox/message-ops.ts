/**
 * Methods on existing messages: copies and forwards (one or a batch), caption / reply markup /
 * media edits, batch deletes, pins and reactions. A message must exist in the sandbox (the bot's,
 * or a user's injected one); edits must name the bot's own message (Telegram's 400 otherwise).
 */
import type { BotState } from './bot-state';
import { TG_DESCRIPTIONS } from './constants';
import { mediaLabel, postMessage, preflight, sendTarget, snapshot } from './deliver';
import { BotApiError, intParam } from './http-io';
import { materialize } from './input-files';
import { captionOf, checkInputMedia, fileContent, mediaParam } from './media';
import { nowSeconds, replyMarkupParam, requireChatId, type MessagingEnv } from './messaging';
import type { RequestScope } from './methods';
import type { SentMessage, TgChat, TgMessage } from './types';

type Params = Record<string, unknown>;

/** Message fields that hold its content (a copy carries these, an edit of media replaces them). */
const MEDIA_FIELDS = [
  'photo',
  'animation',
  'document',
  'video',
  'audio',
  'voice',
  'sticker',
  'location',
  'contact',
  'poll',
  'dice',
] as const;
const CONTENT_FIELDS = new Set<string>(['text', 'entities', 'caption', 'caption_entities', ...MEDIA_FIELDS]);
const MAX_BATCH = 100;

export function mediaKindOf(message: TgMessage): string | undefined {
  return MEDIA_FIELDS.find((f) => message[f] !== undefined);
}

function labelOf(message: TgMessage): string {
  if (typeof message.text === 'string') return message.text;
  return mediaLabel(mediaKindOf(message) ?? 'message', message.caption);
}

function contentOf(message: TgMessage): Params {
  return Object.fromEntries(Object.entries(message).filter(([k]) => CONTENT_FIELDS.has(k)));
}

/** The source chat and message of a copy or forward: Telegram's 400 when it is not there. */
function sourceChat(bot: BotState, params: Params, env: MessagingEnv): TgChat {
  const fromChatId = requireChatId(params.from_chat_id);
  bot.checkChatError(fromChatId, env.globalChatErrors);
  return bot.resolveChat(fromChatId);
}

function sourceMessage(bot: BotState, chat: TgChat, messageId: number, what: string): TgMessage {
  const message = messageId > 0 ? bot.findMessage(chat.id, messageId) : undefined;
  if (!message) throw new BotApiError(400, TG_DESCRIPTIONS.messageNotFound(what));
  return message;
}

/** message_ids of a batch method: a JSON array of 1..100 positive integers, in the Bot API server's words. */
export function messageIdsParam(params: Params): number[] {
  const raw = params.message_ids;
  if (raw === undefined || raw === null || raw === '') throw new BotApiError(400, TG_DESCRIPTIONS.messageIdsMissing);
  if (typeof raw === 'string') throw new BotApiError(400, "Bad Request: can't parse message_ids JSON object");
  if (!Array.isArray(raw)) throw new BotApiError(400, TG_DESCRIPTIONS.messageIdsNotArray);
  if (raw.length === 0) throw new BotApiError(400, TG_DESCRIPTIONS.messageIdsMissing);
  if (raw.length > MAX_BATCH) throw new BotApiError(400, TG_DESCRIPTIONS.tooManyMessageIds);
  return raw.map((v: unknown) => {
    const id = intParam(v, Number.NaN);
    if (Number.isNaN(id)) throw new BotApiError(400, 'Bad Request: message identifier must be a Number');
    if (id <= 0) throw new BotApiError(400, 'Bad Request: invalid message identifier specified');
    return id;
  });
}

type CopyKind = 'copy' | 'forward';

function copyContent(kind: CopyKind, source: TgMessage, params: Params): Params {
  const content = contentOf(source);
  if (kind === 'forward') {
    content.forward_origin =
      source.chat.type === 'channel'
        ? { type: 'channel', chat: source.chat, message_id: source.message_id, date: source.date }
        : { type: 'user', sender_user: source.from, date: source.date };
    content.forward_date = source.date;
    return content;
  }
  if (params.caption !== undefined && content.text === undefined) {
    const caption = captionOf(params).caption;
    if (caption === undefined) delete content.caption;
    else content.caption = caption;
  }
  return content;
}

/** One copy or forward into the target chat (the source checked first, as the Bot API server does). */
function copyOne(bot: BotState, params: Params, env: MessagingEnv, kind: CopyKind): TgMessage {
  const from = sourceChat(bot, params, env);
  const source = sourceMessage(bot, from, intParam(params.message_id, 0), `message to ${kind}`);
  const content = copyContent(kind, source, params);
  const target = sendTarget(bot, params, env);
  const pre = preflight(bot, target, kind === 'forward' ? { ...params, reply_markup: undefined } : params, env);
  const method = kind === 'copy' ? 'copyMessage' : 'forwardMessage';
  const copy = { ...source, ...content };
  return postMessage(bot, env, target, params, pre, content, {
    method,
    text: labelOf(copy),
    media: mediaKindOf(copy),
    caption: typeof content.caption === 'string' ? content.caption : undefined,
  });
}

export function copyMessage(bot: BotState, params: Params, env: MessagingEnv): { message_id: number } {
  return { message_id: copyOne(bot, params, env, 'copy').message_id };
}

export function forwardMessage(bot: BotState, params: Params, env: MessagingEnv): TgMessage {
  return snapshot(copyOne(bot, params, env, 'forward'));
}

/** copyMessages / forwardMessages: the messages found, in id order; missing ones are skipped. */
function copyBatch(bot: BotState, params: Params, env: MessagingEnv, kind: CopyKind): Array<{ message_id: number }> {
  const ids = [...new Set(messageIdsParam(params))].sort((a, b) => a - b);
  const from = sourceChat(bot, params, env);
  const sources = ids.map((id) => bot.findMessage(from.id, id)).filter((m): m is TgMessage => m !== undefined);
  if (sources.length === 0) throw new BotApiError(400, TG_DESCRIPTIONS.messageNotFound(`message to ${kind}`));
  const target = sendTarget(bot, params, env);
  const pre = preflight(bot, target, { ...params, reply_markup: undefined }, env);
  const method = kind === 'copy' ? 'copyMessages' : 'forwardMessages';
  return sources.map((source) => {
    const content = copyContent(kind, source, {});
    const copy = { ...source, ...content };
    const m = postMessage(bot, env, target, params, pre, content, {
      method,
      text: labelOf(copy),
      media: mediaKindOf(copy),
      caption: typeof content.caption === 'string' ? content.caption : undefined,
    });
    return { message_id: m.message_id };
  });
}

export function copyMessages(bot: BotState, params: Params, env: MessagingEnv): Array<{ message_id: number }> {
  return copyBatch(bot, params, env, 'copy');
}

export function forwardMessages(bot: BotState, params: Params, env: MessagingEnv): Array<{ message_id: number }> {
  return copyBatch(bot, params, env, 'forward');
}

/** The bot's own message named by chat_id + message_id, for an edit. */
function ownMessage(bot: BotState, params: Params, env: MessagingEnv): { chatId: number | string; message: TgMessage } {
  const chatId = requireChatId(params.chat_id);
  bot.checkChatError(chatId, env.globalChatErrors);
  const chat = bot.resolveChat(chatId);
  return { chatId, message: bot.editableMessage(chat.id, intParam(params.message_id, 0)) };
}

function sameMarkup(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function recordEdit(
  bot: BotState,
  env: MessagingEnv,
  method: string,
  chatId: number | string,
  message: TgMessage,
): void {
  const record: SentMessage = {
    seq: env.nextSentSeq(),
    method,
    chat_id: chatId,
    resolved_chat_id: message.chat.id,
    message_id: message.message_id,
    text: labelOf(message),
    time: Date.now(),
  };
  const media = mediaKindOf(message);
  if (media) record.media = media;
  if (message.caption !== undefined) record.caption = message.caption;
  if (message.reply_markup !== undefined) record.reply_markup = message.reply_markup;
  bot.sent.push(record);
}

function setMarkup(message: TgMessage, markup: unknown): void {
  if (markup !== undefined) message.reply_markup = markup;
  else delete message.reply_markup;
}

export function editMessageCaption(bot: BotState, params: Params, env: MessagingEnv): TgMessage | true {
  const { caption } = captionOf(params);
  const markup = replyMarkupParam(params.reply_markup);
  if (params.inline_message_id !== undefined) return true;
  const { chatId, message } = ownMessage(bot, params, env);
  if (!mediaKindOf(message) || message.text !== undefined) throw new BotApiError(400, TG_DESCRIPTIONS.noCaptionToEdit);
  if (message.caption === caption && sameMarkup(message.reply_markup, markup)) {
    throw new BotApiError(400, TG_DESCRIPTIONS.notModified);
  }
  if (caption === undefined) delete message.caption;
  else message.caption = caption;
  setMarkup(message, markup);
  message.edit_date = nowSeconds();
  recordEdit(bot, env, 'editMessageCaption', chatId, message);
  return snapshot(message);
}

export function editMessageReplyMarkup(bot: BotState, params: Params, env: MessagingEnv): TgMessage | true {
  const markup = replyMarkupParam(params.reply_markup);
  if (params.inline_message_id !== undefined) return true;
  const { chatId, message } = ownMessage(bot, params, env);
  if (sameMarkup(message.reply_markup, markup)) throw new BotApiError(400, TG_DESCRIPTIONS.notModified);
  setMarkup(message, markup);
  message.edit_date = nowSeconds();
  recordEdit(bot, env, 'editMessageReplyMarkup', chatId, message);
  return snapshot(message);
}

const EDIT_MEDIA_TYPES = new Set(['photo', 'video', 'animation', 'document', 'audio']);

export function editMessageMedia(
  bot: BotState,
  params: Params,
  env: MessagingEnv,
  scope: RequestScope,
): TgMessage | true {
  const item = checkInputMedia(bot, mediaParam(params, 'object'), scope.files, EDIT_MEDIA_TYPES);
  const markup = replyMarkupParam(params.reply_markup);
  if (params.inline_message_id !== undefined) return true;
  const { chatId, message } = ownMessage(bot, params, env);
  if (!mediaKindOf(message) || message.text !== undefined) throw new BotApiError(400, TG_DESCRIPTIONS.noMediaToEdit);
  const file = materialize(bot, item.kind, item.source);
  for (const f of CONTENT_FIELDS) delete message[f];
  Object.assign(message, fileContent(bot, item.kind, file, item.item));
  if (item.caption.caption !== undefined) message.caption = item.caption.caption;
  setMarkup(message, markup);
  message.edit_date = nowSeconds();
  recordEdit(bot, env, 'editMessageMedia', chatId, message);
  return snapshot(message);
}

export function deleteMessages(bot: BotState, params: Params, env: MessagingEnv): true {
  const chatId = requireChatId(params.chat_id);
  const ids = messageIdsParam(params);
  bot.checkChatError(chatId, env.globalChatErrors);
  const chat = bot.resolveChat(chatId);
  // "If some of the specified messages can't be found, they are skipped" (Bot API docs)
  for (const id of ids) bot.forgetMessage(chat.id, id);
  return true;
}

function chatOf(bot: BotState, params: Params, env: MessagingEnv): TgChat {
  const chatId = requireChatId(params.chat_id);
  bot.checkChatError(chatId, env.globalChatErrors);
  return bot.resolveChat(chatId);
}

export function pinChatMessage(bot: BotState, params: Params, env: MessagingEnv): true {
  const chat = chatOf(bot, params, env);
  const message = sourceMessage(bot, chat, intParam(params.message_id, 0), 'message to pin');
  const pins = (bot.pinned.get(chat.id) ?? []).filter((id) => id !== message.message_id);
  pins.push(message.message_id);
  bot.pinned.set(chat.id, pins);
  return true;
}

export function unpinChatMessage(bot: BotState, params: Params, env: MessagingEnv): true {
  const chat = chatOf(bot, params, env);
  const pins = bot.pinned.get(chat.id) ?? [];
  if (params.message_id === undefined || params.message_id === null || params.message_id === '') {
    bot.pinned.set(chat.id, pins.slice(0, -1)); // the most recent pin
    return true;
  }
  const message = sourceMessage(bot, chat, intParam(params.message_id, 0), 'message to unpin');
  bot.pinned.set(
    chat.id,
    pins.filter((id) => id !== message.message_id),
  );
  return true;
}

export function unpinAllChatMessages(bot: BotState, params: Params, env: MessagingEnv): true {
  bot.pinned.delete(chatOf(bot, params, env).id);
  return true;
}

/** The emoji a ReactionTypeEmoji may carry (Bot API docs, ReactionTypeEmoji). */
const REACTION_EMOJI = new Set(
  (
    '👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 ❤‍🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓 🍾 💋 🖕 ' +
    '😈 😴 😭 🤓 👻 👨‍💻 👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾 🤷‍♂ 🤷 🤷‍♀ 😡'
  ).split(' '),
);

function reactionParam(raw: unknown): unknown[] {
  if (raw === undefined || raw === null || raw === '') return [];
  if (typeof raw === 'string') throw new BotApiError(400, "Bad Request: can't parse reaction types JSON object");
  if (!Array.isArray(raw)) throw new BotApiError(400, 'Bad Request: expected an Array of ReactionType');
  for (const r of raw) {
    const t = r && typeof r === 'object' ? (r as Params) : undefined;
    const ok =
      (t?.type === 'emoji' && typeof t.emoji === 'string' && REACTION_EMOJI.has(t.emoji)) ||
      (t?.type === 'custom_emoji' && typeof t.custom_emoji_id === 'string' && t.custom_emoji_id !== '') ||
      t?.type === 'paid';
    if (!ok) throw new BotApiError(400, TG_DESCRIPTIONS.reactionInvalid);
  }
  // a bot, like a non-premium user, sets at most one reaction per message
  if (raw.length > 1) throw new BotApiError(400, 'Bad Request: REACTIONS_TOO_MANY');
  return raw;
}

export function setMessageReaction(bot: BotState, params: Params, env: MessagingEnv): true {
  const chat = chatOf(bot, params, env);
  const message = sourceMessage(bot, chat, intParam(params.message_id, 0), 'message to react');
  const reaction = reactionParam(params.reaction);
  bot.reactions.set(`${chat.id}:${message.message_id}`, reaction);
  return true;
}
