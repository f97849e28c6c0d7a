/**
 * Per-bot state of the Bot API sandbox: the unconfirmed update queue, webhook settings, what the
 * bot sent, message id counters per chat and the scripted errors of its chats.
 */
import type { ChatType, ScriptedChatError, SentMessage, TgChat, TgMessage, TgUser, WebhookInfo } from './types';
import { TG_DESCRIPTIONS } from './constants';
import { BotApiError } from './http-io';

/**
 * One item of the getUpdates stream. `slot` is its update_id for offset purposes: sandbox-built
 * updates carry it as `update_id`; raw injected items (see injectRawUpdate) occupy the slot the
 * next well-formed update would have had, whatever their content says.
 */
export interface StoredUpdate {
  slot: number;
  /** Updates of one chat are delivered to a webhook strictly in order. */
  chatKey: string;
  /** Update type ('message', 'callback_query', …) for allowed_updates; 'raw' is never filtered. */
  type: string;
  /** A JSON value serialised on delivery, or `rawText` sent verbatim (possibly not JSON at all). */
  payload?: unknown;
  rawText?: string;
}

export interface WebhookSettings {
  url: string;
  secretToken?: string;
  maxConnections: number;
  allowedUpdates?: string[];
}

export interface PendingPoll {
  /** Answer the pending getUpdates now: with the current queue, or fail it with an error. */
  finish(error?: Error): void;
}

/** A file the sandbox gave a file_id: an upload, or a URL Telegram would have downloaded. */
export interface StoredFile {
  file_id: string;
  file_unique_id: string;
  kind: string;
  file_size?: number;
  file_name?: string;
  mime_type?: string;
}

/** User messages remembered per bot (oldest forgotten beyond): copies/forwards of older ones are "not found". */
const USER_MESSAGES_KEPT = 10_000;

/** How far beyond the next update_id an offset may lie before the server takes it for "in the future". */
const FUTURE_OFFSET_SLACK = 10;

/** Default Telegram allowed_updates: everything except these. */
const NOT_DEFAULT_UPDATES = new Set(['chat_member', 'message_reaction', 'message_reaction_count']);

export class BotState {
  readonly user: TgUser;
  nextUpdateId: number;
  /** Unconfirmed updates by slot; Map insertion order is slot order. */
  readonly pending = new Map<number, StoredUpdate>();
  /** Highest offset a getUpdates call passed (everything below it is confirmed). */
  confirmedOffset: number | null = null;
  allowedUpdates: string[] | null = null;
  webhook: WebhookSettings | null = null;
  lastErrorDate?: number;
  lastErrorMessage?: string;
  readonly sent: SentMessage[] = [];
  poll: PendingPoll | null = null;
  revoked = false;
  readonly chatErrors = new Map<string, ScriptedChatError>();
  readonly answeredCallbacks: Array<{ callback_query_id: string; text?: string; show_alert?: boolean }> = [];
  /** Injected callback queries not answered yet: id → when issued (ms), for the "too old" bound. */
  readonly openCallbacks = new Map<string, number>();
  /** answerInlineQuery / answerPreCheckoutQuery / answerShippingQuery calls, in order. */
  readonly answeredQueries: Array<{ method: string; query_id: string; params: Record<string, unknown> }> = [];
  /** Files the bot uploaded or referenced, by file_id (a later send may name the file_id). */
  readonly files = new Map<string, StoredFile>();
  /** Pinned message ids per chat, most recent last. */
  readonly pinned = new Map<number, number[]>();
  /** The bot's reactions by `${chatId}:${messageId}` (an empty list: removed). */
  readonly reactions = new Map<string, unknown[]>();
  /** Injected user messages (the last USER_MESSAGES_KEPT), for copies, forwards, pins and reactions. */
  private readonly userMessages = new Map<string, TgMessage>();
  private readonly lastMessageId = new Map<number, number>();
  private readonly chats = new Map<number, TgChat>();
  private readonly channels = new Map<string, number>();
  /** Messages the bot sent, by `${chatId}:${messageId}` (for edits and callback queries). */
  readonly botMessages = new Map<string, TgMessage>();

  constructor(
    readonly id: number,
    readonly secret: string,
    firstUpdateId: number,
  ) {
    this.nextUpdateId = firstUpdateId;
    this.user = { id, is_bot: true, first_name: `Sandbox Bot ${id}`, username: `sandbox_${id}_bot` };
  }

  get username(): string {
    return this.user.username as string;
  }

  /** Append an update; returns false when allowed_updates filters it out (Telegram never creates it). */
  push(u: StoredUpdate): boolean {
    if (u.type !== 'raw' && !this.accepts(u.type)) return false;
    this.pending.set(u.slot, u);
    return true;
  }

  private accepts(type: string): boolean {
    const allowed = this.webhook?.allowedUpdates ?? this.allowedUpdates;
    if (!allowed || allowed.length === 0) return !NOT_DEFAULT_UPDATES.has(type);
    return allowed.includes(type);
  }

  allocateSlot(): number {
    return this.nextUpdateId++;
  }

  /**
   * What Telegram does after a week without updates: the next update_id is picked anew (at random;
   * here: `next`), possibly below ids it already served. Telegram only does this with an empty queue.
   */
  resetUpdateIds(next: number): void {
    if (!Number.isInteger(next) || next < 1) throw new Error('the next update_id must be a positive integer');
    if (this.pending.size > 0) throw new Error('update ids are reset only when the queue is empty (as Telegram does)');
    this.nextUpdateId = next;
  }

  /**
   * An offset past the end of the queue: the Bot API server (tdlib's TQueue::get) calls an id more
   * than 10 beyond the one the next update gets "in the future", and getUpdates then answers from
   * the head of the queue, confirming nothing, as after an update_id reset. Up to 10 beyond, the
   * offset confirms as usual.
   */
  pastQueue(offset: number): boolean {
    return offset > this.nextUpdateId + FUTURE_OFFSET_SLACK;
  }

  /** getUpdates offset semantics: forget every update with slot < offset. */
  confirmBelow(offset: number): void {
    for (const slot of this.pending.keys()) {
      if (slot >= offset) break;
      this.pending.delete(slot);
    }
    if (this.confirmedOffset === null || offset > this.confirmedOffset) this.confirmedOffset = offset;
  }

  /** Negative offset: keep only the last `n` updates, forget the rest. */
  keepLast(n: number): void {
    let drop = this.pending.size - n;
    for (const slot of this.pending.keys()) {
      if (drop-- <= 0) break;
      this.pending.delete(slot);
    }
  }

  firstPending(limit: number): StoredUpdate[] {
    const out: StoredUpdate[] = [];
    for (const u of this.pending.values()) {
      if (out.length >= limit) break;
      out.push(u);
    }
    return out;
  }

  nextMessageId(chatId: number): number {
    const id = (this.lastMessageId.get(chatId) ?? 0) + 1;
    this.lastMessageId.set(chatId, id);
    return id;
  }

  rememberUserMessage(message: TgMessage): void {
    this.userMessages.set(`${message.chat.id}:${message.message_id}`, message);
    if (this.userMessages.size > USER_MESSAGES_KEPT) {
      const oldest = this.userMessages.keys().next().value;
      if (oldest !== undefined) this.userMessages.delete(oldest);
    }
  }

  /** A message of a chat the sandbox knows (the bot's or an injected user's), or undefined. */
  findMessage(chatId: number, messageId: number): TgMessage | undefined {
    const key = `${chatId}:${messageId}`;
    return this.botMessages.get(key) ?? this.userMessages.get(key);
  }

  /** The bot's own message for an edit: Telegram's 400 for a missing one and for someone else's. */
  editableMessage(chatId: number, messageId: number): TgMessage {
    const own = this.botMessages.get(`${chatId}:${messageId}`);
    if (own) return own;
    if (this.userMessages.has(`${chatId}:${messageId}`))
      throw new BotApiError(400, TG_DESCRIPTIONS.messageCantBeEdited);
    throw new BotApiError(400, TG_DESCRIPTIONS.messageToEditNotFound);
  }

  forgetMessage(chatId: number, messageId: number): boolean {
    const key = `${chatId}:${messageId}`;
    const pins = this.pinned.get(chatId);
    if (pins?.includes(messageId))
      this.pinned.set(
        chatId,
        pins.filter((id) => id !== messageId),
      );
    this.reactions.delete(key);
    return this.botMessages.delete(key);
  }

  lastMessageIdOf(chatId: number): number {
    return this.lastMessageId.get(chatId) ?? 0;
  }

  /** The chat object for an id; remembered from injected messages, else inferred from the sign. */
  chat(chatId: number, type?: ChatType, username?: string, firstName?: string): TgChat {
    const known = this.chats.get(chatId);
    if (known && !type) return known;
    const t: ChatType = type ?? (chatId > 0 ? 'private' : chatId <= -1_000_000_000_000 ? 'supergroup' : 'group');
    const chat: TgChat =
      t === 'private'
        ? { id: chatId, type: t, first_name: firstName ?? `User ${chatId}` }
        : { id: chatId, type: t, title: `${t === 'channel' ? 'Channel' : 'Group'} ${chatId}` };
    if (username) chat.username = username;
    this.chats.set(chatId, chat);
    return chat;
  }

  /** Resolve a chat_id parameter (integer or @channelusername) to a chat. */
  resolveChat(chatId: number | string): TgChat {
    if (typeof chatId === 'number') return this.chat(chatId);
    const name = chatId.slice(1);
    let id = this.channels.get(name.toLowerCase());
    if (id === undefined) {
      id = -1_000_000_000_001 - this.channels.size;
      this.channels.set(name.toLowerCase(), id);
      this.chats.set(id, { id, type: 'channel', title: name, username: name });
    }
    return this.chat(id);
  }

  /** Throws the scripted error of a chat, if any (and counts down `times`). */
  checkChatError(chatId: number | string, global: Map<string, ScriptedChatError>): void {
    const key = String(chatId);
    const own = this.chatErrors.get(key);
    const map = own ? this.chatErrors : global;
    const err = own ?? global.get(key);
    if (!err) return;
    if (err.times !== undefined) {
      if (err.times <= 1) map.delete(key);
      else err.times -= 1;
    }
    throw scriptedToError(err);
  }

  webhookInfo(): WebhookInfo {
    const info: WebhookInfo = {
      url: this.webhook?.url ?? '',
      has_custom_certificate: false,
      pending_update_count: this.pending.size,
    };
    if (this.webhook) {
      info.max_connections = this.webhook.maxConnections;
      if (this.webhook.allowedUpdates) info.allowed_updates = this.webhook.allowedUpdates;
    }
    if (this.lastErrorDate !== undefined) {
      info.last_error_date = this.lastErrorDate;
      info.last_error_message = this.lastErrorMessage;
    }
    return info;
  }
}

export function scriptedToError(err: ScriptedChatError): BotApiError {
  switch (err.kind) {
    case 'chat_not_found':
      return new BotApiError(400, TG_DESCRIPTIONS.chatNotFound);
    case 'blocked':
      return new BotApiError(403, TG_DESCRIPTIONS.blocked);
    case 'deactivated':
      return new BotApiError(403, TG_DESCRIPTIONS.deactivated);
    case 'migrated':
      return new BotApiError(400, TG_DESCRIPTIONS.migrated, { migrate_to_chat_id: err.migrateToChatId });
    case 'custom':
      return new BotApiError(err.error_code, err.description, err.parameters);
  }
}

export function validateScriptedError(err: unknown): ScriptedChatError {
  if (typeof err === 'string') err = { kind: err };
  const e = err as Partial<ScriptedChatError> & Record<string, unknown>;
  if (!e || typeof e !== 'object') throw new Error('scripted error must be an object');
  if (e.times !== undefined && !(Number.isInteger(e.times) && e.times > 0)) {
    throw new Error('scripted error "times" must be a positive integer');
  }
  switch (e.kind) {
    case 'chat_not_found':
    case 'blocked':
    case 'deactivated':
      return { ...e } as ScriptedChatError;
    case 'migrated':
      if (!Number.isInteger(e.migrateToChatId)) throw new Error('migrated error needs an integer migrateToChatId');
      return { ...e } as ScriptedChatError;
    case 'custom':
      if (!Number.isInteger(e.error_code) || typeof e.description !== 'string') {
        throw new Error('custom error needs an integer error_code and a description');
      }
      return { ...e } as ScriptedChatError;
    default:
      throw new Error(
        `unknown scripted error kind "${String(e.kind)}" (chat_not_found, blocked, deactivated, migrated, custom)`,
      );
  }
}

const TOKEN_RE = /^(\d{1,20}):([A-Za-z0-9_-]{1,200})$/;

/** Bots by id, created on first use of a well-formed token. */
export class BotRegistry {
  private readonly bots = new Map<number, BotState>();

  constructor(private firstUpdateId: number) {}

  /** The bot a token designates, created on first sight; 401 for malformed/revoked/wrong-secret tokens. */
  authenticate(token: string): BotState {
    const m = TOKEN_RE.exec(token);
    if (!m) throw new BotApiError(401, TG_DESCRIPTIONS.unauthorized);
    const bot = this.getOrCreate(token);
    if (bot.revoked || bot.secret !== m[2]) throw new BotApiError(401, TG_DESCRIPTIONS.unauthorized);
    return bot;
  }

  /** The bot of a token (by its numeric id), created if unknown; no revocation check (control side). */
  getOrCreate(token: string): BotState {
    const m = TOKEN_RE.exec(token);
    if (!m) throw new Error('malformed bot token: expected <digits>:<secret>');
    const id = Number(m[1]);
    let bot = this.bots.get(id);
    if (!bot) {
      bot = new BotState(id, m[2], this.firstUpdateId);
      this.bots.set(id, bot);
    }
    return bot;
  }

  byId(id: number): BotState | undefined {
    return this.bots.get(id);
  }

  all(): BotState[] {
    return [...this.bots.values()];
  }

  clear(): void {
    this.bots.clear();
  }
}
