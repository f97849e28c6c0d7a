/**
 * The Bot API methods the sandbox implements, by lower-cased name (Telegram method names are
 * case-insensitive). Anything else answers 404 "Not Found".
 */
import type { BotState } from './bot-state';
import type { TgChat, TgUser } from './types';
import { BotApiError, intParam } from './http-io';
import type { MessagingEnv } from './messaging';
import { answerCallbackQuery, editMessageText, requireChatId, sendChatAction, sendMessage } from './messaging';
import { answerInlineQuery, answerPreCheckoutQuery, answerShippingQuery } from './answers';
import { MEDIA_SENDS, sendContact, sendDice, sendLocation, sendMediaGroup, sendMedia, sendPoll } from './media';
import {
  copyMessage,
  copyMessages,
  deleteMessages,
  editMessageCaption,
  editMessageMedia,
  editMessageReplyMarkup,
  forwardMessage,
  forwardMessages,
  pinChatMessage,
  setMessageReaction,
  unpinAllChatMessages,
  unpinChatMessage,
} from './message-ops';
import { getUpdates, type PollContext } from './polling';
import type { UploadedPart } from './multipart';
import { TG_DESCRIPTIONS } from './constants';
import type { WebhookControl } from './webhook-methods';
import { deleteWebhook, getWebhookInfo, setWebhook } from './webhook-methods';

export interface MethodEnv extends MessagingEnv, WebhookControl {
  maxPollTimeoutSeconds: number;
}

export interface RequestScope {
  /** The file parts of a multipart/form-data request by part name (empty otherwise). */
  files: ReadonlyMap<string, UploadedPart>;
  /** A closure (no `this`): handed on to the poll as is. */
  onClientClose: (cb: () => void) => void;
}

export type MethodHandler = (
  bot: BotState,
  params: Record<string, unknown>,
  env: MethodEnv,
  scope: RequestScope,
) => unknown; // the result, or a Promise of it

interface MethodDef {
  name: string;
  handler: MethodHandler;
}

function getMe(bot: BotState): TgUser & Record<string, unknown> {
  return { ...bot.user, can_join_groups: true, can_read_all_group_messages: false, supports_inline_queries: false };
}

function getChat(bot: BotState, params: Record<string, unknown>, env: MethodEnv): TgChat {
  const chatId = requireChatId(params.chat_id);
  bot.checkChatError(chatId, env.globalChatErrors);
  return bot.resolveChat(chatId);
}

function deleteMessage(bot: BotState, params: Record<string, unknown>, env: MethodEnv): true {
  const chatId = requireChatId(params.chat_id);
  bot.checkChatError(chatId, env.globalChatErrors);
  const chat = bot.resolveChat(chatId);
  if (!bot.forgetMessage(chat.id, intParam(params.message_id, 0)))
    throw new BotApiError(400, TG_DESCRIPTIONS.messageNotFound('message to delete'));
  return true;
}

const DEFS: MethodDef[] = [
  { name: 'getMe', handler: (bot) => getMe(bot) },
  {
    name: 'getUpdates',
    handler: (bot, p, env, scope) =>
      getUpdates(bot, p, {
        onClientClose: scope.onClientClose,
        maxTimeoutSeconds: env.maxPollTimeoutSeconds,
      } satisfies PollContext),
  },
  { name: 'setWebhook', handler: (bot, p, env) => setWebhook(bot, p, env) },
  { name: 'deleteWebhook', handler: (bot, p, env) => deleteWebhook(bot, p, env) },
  { name: 'getWebhookInfo', handler: (bot) => getWebhookInfo(bot) },
  { name: 'sendMessage', handler: (bot, p, env) => sendMessage(bot, p, env) },
  { name: 'editMessageText', handler: (bot, p, env) => editMessageText(bot, p, env) },
  { name: 'answerCallbackQuery', handler: (bot, p, env) => answerCallbackQuery(bot, p, env) },
  { name: 'sendChatAction', handler: (bot, p, env) => sendChatAction(bot, p, env) },
  { name: 'deleteMessage', handler: (bot, p, env) => deleteMessage(bot, p, env) },
  { name: 'getChat', handler: (bot, p, env) => getChat(bot, p, env) },
  ...MEDIA_SENDS.map((spec): MethodDef => ({
    name: spec.method,
    handler: (bot, p, env, scope) => sendMedia(spec, bot, p, env, scope),
  })),
  { name: 'sendMediaGroup', handler: (bot, p, env, scope) => sendMediaGroup(bot, p, env, scope) },
  { name: 'sendLocation', handler: (bot, p, env) => sendLocation(bot, p, env) },
  { name: 'sendContact', handler: (bot, p, env) => sendContact(bot, p, env) },
  { name: 'sendPoll', handler: (bot, p, env) => sendPoll(bot, p, env) },
  { name: 'sendDice', handler: (bot, p, env) => sendDice(bot, p, env) },
  { name: 'copyMessage', handler: (bot, p, env) => copyMessage(bot, p, env) },
  { name: 'copyMessages', handler: (bot, p, env) => copyMessages(bot, p, env) },
  { name: 'forwardMessage', handler: (bot, p, env) => forwardMessage(bot, p, env) },
  { name: 'forwardMessages', handler: (bot, p, env) => forwardMessages(bot, p, env) },
  { name: 'editMessageCaption', handler: (bot, p, env) => editMessageCaption(bot, p, env) },
  { name: 'editMessageReplyMarkup', handler: (bot, p, env) => editMessageReplyMarkup(bot, p, env) },
  { name: 'editMessageMedia', handler: (bot, p, env, scope) => editMessageMedia(bot, p, env, scope) },
  { name: 'deleteMessages', handler: (bot, p, env) => deleteMessages(bot, p, env) },
  { name: 'pinChatMessage', handler: (bot, p, env) => pinChatMessage(bot, p, env) },
  { name: 'unpinChatMessage', handler: (bot, p, env) => unpinChatMessage(bot, p, env) },
  { name: 'unpinAllChatMessages', handler: (bot, p, env) => unpinAllChatMessages(bot, p, env) },
  { name: 'setMessageReaction', handler: (bot, p, env) => setMessageReaction(bot, p, env) },
  { name: 'answerInlineQuery', handler: (bot, p) => answerInlineQuery(bot, p) },
  { name: 'answerPreCheckoutQuery', handler: (bot, p) => answerPreCheckoutQuery(bot, p) },
  { name: 'answerShippingQuery', handler: (bot, p) => answerShippingQuery(bot, p) },
  { name: 'setMyCommands', handler: () => true },
  { name: 'deleteMyCommands', handler: () => true },
  { name: 'getMyCommands', handler: () => [] },
  { name: 'logOut', handler: () => true },
  { name: 'close', handler: () => true },
];

const BY_NAME = new Map(DEFS.map((d) => [d.name.toLowerCase(), d]));

/** The method definition for a name in any letter case, or undefined. */
export function findMethod(name: string): MethodDef | undefined {
  return BY_NAME.get(name.toLowerCase());
}

export const SUPPORTED_METHODS = DEFS.map((d) => d.name);
