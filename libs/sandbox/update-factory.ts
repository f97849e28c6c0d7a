/** Builds the updates a real user would cause: messages (with command entities) and callback queries. */
import type { BotState, StoredUpdate } from './bot-state';
import type { InjectCallbackInput, InjectMessageInput, TgMessage, TgMessageEntity, TgUpdate, TgUser } from './types';

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

function user(id: number, username?: string, firstName?: string): TgUser {
  const u: TgUser = { id, is_bot: false, first_name: firstName ?? `User ${id}` };
  if (username) u.username = username;
  return u;
}

/** Telegram marks a leading `/command[@bot]` with a bot_command entity (telegraf's command() needs it). */
export function commandEntities(text: string): TgMessageEntity[] | undefined {
  const m = /^\/[A-Za-z0-9_]{1,64}(@[A-Za-z0-9_]{1,64})?/.exec(text);
  return m ? [{ type: 'bot_command', offset: 0, length: m[0].length }] : undefined;
}

export function buildMessageUpdate(
  bot: BotState,
  input: InjectMessageInput,
): { stored: StoredUpdate; update: TgUpdate } {
  if (!Number.isInteger(input.chatId) || input.chatId === 0) throw new Error('chatId must be a non-zero integer');
  if (typeof input.text !== 'string') throw new Error('text must be a string');
  const type = input.chatType ?? (input.chatId > 0 ? 'private' : undefined);
  const chat = bot.chat(input.chatId, type, type === 'private' ? input.username : undefined, input.firstName);
  const message: TgMessage = {
    message_id: bot.nextMessageId(input.chatId),
    date: nowSeconds(),
    chat,
    text: input.text,
  };
  const entities = commandEntities(input.text);
  if (entities) message.entities = entities;
  const slot = bot.allocateSlot();
  let update: TgUpdate;
  if (chat.type === 'channel') {
    update = { update_id: slot, channel_post: message };
  } else {
    const fromId = input.fromId ?? (input.chatId > 0 ? input.chatId : 1000);
    message.from = user(fromId, input.username, input.firstName);
    update = { update_id: slot, message };
  }
  bot.rememberUserMessage(message);
  const kind = chat.type === 'channel' ? 'channel_post' : 'message';
  return { stored: { slot, chatKey: String(input.chatId), type: kind, payload: update }, update };
}

export function buildCallbackUpdate(
  bot: BotState,
  input: InjectCallbackInput,
  callbackId: string,
): { stored: StoredUpdate; update: TgUpdate } {
  if (!Number.isInteger(input.chatId) || input.chatId === 0) throw new Error('chatId must be a non-zero integer');
  if (typeof input.data !== 'string') throw new Error('data must be a string');
  const chat = bot.chat(input.chatId);
  const fromId = input.fromId ?? (input.chatId > 0 ? input.chatId : 1000);
  const messageId = input.messageId ?? bot.lastMessageIdOf(input.chatId);
  const message: TgMessage = bot.botMessages.get(`${chat.id}:${messageId}`) ?? {
    message_id: messageId,
    date: nowSeconds(),
    chat,
    from: bot.user,
    text: '',
  };
  const slot = bot.allocateSlot();
  const update: TgUpdate = {
    update_id: slot,
    callback_query: {
      id: callbackId,
      from: user(fromId),
      message,
      chat_instance: String(Math.abs(chat.id) * 31 + bot.id),
      data: input.data,
    },
  };
  bot.openCallbacks.set(callbackId, Date.now());
  return { stored: { slot, chatKey: String(input.chatId), type: 'callback_query', payload: update }, update };
}

/**
 * A raw item for the getUpdates stream. Strings are delivered verbatim (even when not JSON); other
 * values are JSON-serialised as given. Either way the item occupies the next slot (the update_id a
 * well-formed update would have had: previous + 1), so `offset = slot + 1` confirms it.
 */
export function buildRawUpdate(bot: BotState, raw: unknown): StoredUpdate {
  const slot = bot.allocateSlot();
  const chatKey = chatKeyOf(raw) ?? `raw:${slot}`;
  if (typeof raw === 'string') return { slot, chatKey, type: 'raw', rawText: raw };
  return { slot, chatKey, type: 'raw', payload: raw === undefined ? null : raw };
}

/** The chat a raw object belongs to, when it has a recognisable shape (keeps webhook per-chat order). */
function chatKeyOf(raw: unknown): string | undefined {
  if (!raw || typeof raw !== 'object') return undefined;
  const obj = (x: unknown) => (x && typeof x === 'object' ? (x as Record<string, unknown>) : undefined);
  const r = raw as Record<string, unknown>;
  const msg = obj(
    r.message ?? r.edited_message ?? r.channel_post ?? r.edited_channel_post ?? obj(r.callback_query)?.message,
  );
  const id = obj(msg?.chat)?.id;
  return typeof id === 'number' ? String(id) : undefined;
}

export function serializeStored(u: StoredUpdate): string {
  return u.rawText !== undefined ? u.rawText : JSON.stringify(u.payload);
}
