/**
 * The Bot API methods the sandbox implements, by lower-cased name (Telegram method names are
 * case-insensitive). Anything else answers 404 "Not Found".
 */
import type { BotState } from './bot-state';
import type { TgChat, TgUser } from './types';
import { BotApiError, intParam, type UploadedPart } from './http-io';
import { sendFile, sendMediaGroup } from './media';
import type { MessagingEnv } from './messaging';
import { answerCallbackQuery, editMessageText, requireChatId, sendChatAction, sendMessage } from './messaging';
import { getUpdates, type PollContext } from './polling';
import type { WebhookControl } from './webhook-methods';
import { deleteWebhook, getWebhookInfo, setWebhook } from './webhook-methods';

export interface MethodEnv extends MessagingEnv, WebhookControl {
  maxPollTimeoutSeconds: number;
}

export interface RequestScope {
  /** The files of a multipart/form-data request. */
  files: readonly UploadedPart[];
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
  const key = `${chat.id}:${intParam(params.message_id, 0)}`;
  if (!bot.botMessages.delete(key)) throw new BotApiError(400, 'Bad Request: message to delete not found');
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
  { name: 'sendPhoto', handler: (bot, p, env, scope) => sendFile('photo', 'sendPhoto')(bot, p, env, scope.files) },
  {
    name: 'sendDocument',
    handler: (bot, p, env, scope) => sendFile('document', 'sendDocument')(bot, p, env, scope.files),
  },
  { name: 'sendMediaGroup', handler: (bot, p, env, scope) => sendMediaGroup(bot, p, env, scope.files) },
  { name: 'editMessageText', handler: (bot, p, env) => editMessageText(bot, p, env) },
  { name: 'answerCallbackQuery', handler: (bot, p) => answerCallbackQuery(bot, p) },
  { name: 'sendChatAction', handler: (bot, p, env) => sendChatAction(bot, p, env) },
  { name: 'deleteMessage', handler: (bot, p, env) => deleteMessage(bot, p, env) },
  { name: 'getChat', handler: (bot, p, env) => getChat(bot, p, env) },
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
