/**
 * The differential test's two runs and their comparison. Run A is plain telegraf (`bot.handleUpdate`,
 * one update at a time) against a sandbox; run B is the same updates in a second sandbox, served by
 * real tg-relay processes. What a user sees is read from each sandbox's call log and compared per chat.
 */
import { Telegraf } from 'telegraf';
import type { Update } from 'telegraf/types';
import { DispatchContext, type DispatchApi } from '../../../libs/dispatch';
import { createBotApiSandbox, type BotApiSandbox, type CallRecord, type TgUpdate } from '../../../libs/sandbox';
import { methodClass } from '../../../libs/telegram/methods';
import differentialBot from '../../fixtures/differential-bot';

export const TOKEN = '5250000001:differential-token';
export const BOT_HANDLERS = 'test/fixtures/differential-bot.ts';

/** A sandbox as both runs use it: flood control is the relay's concern, not the comparison's. */
export async function freshSandbox(): Promise<BotApiSandbox> {
  const sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
  return sandbox;
}

/**
 * Per chat: a text (answered with a keyboard), `/photo`, `/album`, then a press of the keyboard's
 * button. All are injected before the bot sends anything, in both runs, so the sandbox's per-chat
 * message numbering is the same: the keyboard is the chat's first bot message, right after the
 * three user messages.
 */
export function injectUpdates(sandbox: BotApiSandbox, chats: readonly number[]): TgUpdate[] {
  const updates: TgUpdate[] = [];
  for (const chatId of chats) {
    const [, , album] = ['hello', '/photo', '/album'].map((text) => {
      const u = sandbox.injectMessage(TOKEN, { chatId, text: text === 'hello' ? `hello from ${chatId}` : text });
      updates.push(u);
      return u;
    });
    const keyboardId = (album.message?.message_id ?? 0) + 1;
    updates.push(sandbox.injectCallbackQuery(TOKEN, { chatId, data: 'pick:a', messageId: keyboardId }));
  }
  return updates;
}

/** What plain telegraf can give a register function: this bot uses none of it. */
function plainDispatch(): DispatchApi {
  const only = (what: string) => () => {
    throw new Error(`${what} needs tg-relay dispatch`);
  };
  return {
    onError: only('onError'),
    autoAnswerCallbacks: only('autoAnswerCallbacks'),
    sessionStore: only('sessionStore'),
    session: only('session'),
    transaction: only('transaction'),
  };
}

/** Run A: plain telegraf, one update at a time, in injection order. */
export async function runPlain(sandbox: BotApiSandbox, updates: readonly TgUpdate[]): Promise<void> {
  const bot = new Telegraf<DispatchContext>(TOKEN, {
    telegram: { apiRoot: sandbox.url },
    contextType: DispatchContext,
  });
  bot.botInfo = await bot.telegram.getMe();
  await differentialBot(bot, plainDispatch());
  // the sandbox builds the update a Telegram user would cause; telegraf takes it as its own type
  for (const u of updates) await bot.handleUpdate(u as Update);
}

/** One chat as a user sees it. */
export interface ChatView {
  /** Relayed calls bound to the chat, in the order Telegram took them. */
  calls: string[];
  /** Answers (callback queries): they go ahead of the chat's FIFO, so only which, not when. */
  answers: string[];
  /** Direct calls (sendChatAction): sent at once by whichever attempt ran, so only which. */
  direct: string[];
  /** Calls Telegram refused (status ≠ 200): the call, then what Telegram answered. */
  refused: string[];
}

/** Stable JSON of a value with object keys sorted and every scalar a string (JSON vs multipart). */
function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) out[k] = canonical(x);
    }
    return out;
  }
  return v === null || typeof v === 'string' ? v : JSON.stringify(v);
}

/**
 * A call as the user sees it: method and parameters, each uploaded file as its sha256 and name
 * wherever it is named (`attach://<part>`, or a part under the field's own name: part names are
 * random in telegraf's multipart). telegraf's multipart also repeats the method as a field.
 */
export function describeCall(c: CallRecord): string {
  const files = new Map((c.files ?? []).map((f) => [f.part, `file:${f.sha256}:${f.filename}`]));
  const named = new Set<string>();
  const replace = (v: unknown): unknown => {
    if (typeof v === 'string' && v.startsWith('attach://')) {
      named.add(v.slice(9));
      return files.get(v.slice(9)) ?? `missing:${v}`;
    }
    if (Array.isArray(v)) return v.map(replace);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, replace(x)] as const));
    return v;
  };
  const params = replace(c.params) as Record<string, unknown>;
  if (params.method === c.method) delete params.method;
  for (const [part, file] of files) if (!named.has(part)) params[part] = file;
  return `${c.method} ${JSON.stringify(canonical(params))}`;
}

const IGNORED = new Set(['getMe', 'getUpdates', 'deleteWebhook', 'getWebhookInfo', 'setWebhook']);

/** The sandbox's call log by chat (Bot API housekeeping left out); answers go to their query's chat. */
export function callsByChat(sandbox: BotApiSandbox, updates: readonly TgUpdate[]): Map<number, CallRecord[]> {
  const queryChat = new Map<string, number>();
  for (const u of updates) {
    const q = u.callback_query;
    if (q?.message) queryChat.set(q.id, q.message.chat.id);
  }
  const byChat = new Map<number, CallRecord[]>();
  for (const c of sandbox.calls(TOKEN)) {
    if (IGNORED.has(c.method)) continue;
    const chat =
      c.method === 'answerCallbackQuery' ? queryChat.get(String(c.params.callback_query_id)) : Number(c.params.chat_id);
    if (chat === undefined || !Number.isFinite(chat)) throw new Error(`a ${c.method} call names no known chat`);
    byChat.set(chat, [...(byChat.get(chat) ?? []), c]);
  }
  return byChat;
}

function viewOf(records: readonly CallRecord[], chatBound: (accepted: CallRecord[]) => string[]): ChatView {
  const accepted = records.filter((c) => c.status === 200);
  return {
    calls: chatBound(accepted.filter((c) => methodClass(c.method) === 'message')),
    answers: accepted
      .filter((c) => methodClass(c.method) === 'answer')
      .map(describeCall)
      .sort(),
    direct: accepted
      .filter((c) => methodClass(c.method) === 'direct')
      .map(describeCall)
      .sort(),
    refused: records
      .filter((c) => c.status !== 200)
      .map((c) => `${describeCall(c)} → ${c.status} ${c.description ?? ''}`),
  };
}

/** Each chat as its user saw it: every call Telegram took, as it took it. */
export function viewByChat(sandbox: BotApiSandbox, updates: readonly TgUpdate[]): Map<number, ChatView> {
  const views = new Map<number, ChatView>();
  for (const [chat, records] of callsByChat(sandbox, updates))
    views.set(
      chat,
      viewOf(records, (calls) => calls.map(describeCall)),
    );
  return views;
}

/** How many messages a call Telegram took created (the sandbox numbers them per chat, one by one). */
function created(c: CallRecord): number {
  if (c.method === 'sendMediaGroup') return Array.isArray(c.params.media) ? c.params.media.length : 0;
  return /^(send(?!ChatAction)|copyMessage$|forwardMessage$)/.test(c.method) ? 1 : 0;
}

/** The call with its message ids moved down past the messages that duplicates created. */
function shifted(c: CallRecord, shifts: ReadonlyArray<{ from: number; by: number }>): CallRecord {
  const move = (id: unknown) =>
    typeof id === 'number' || typeof id === 'string'
      ? Number(id) - shifts.filter((s) => Number(id) >= s.from).reduce((n, s) => n + s.by, 0)
      : id;
  const params = { ...c.params };
  if (params.message_id !== undefined) params.message_id = move(params.message_id);
  if (Array.isArray(params.message_ids)) params.message_ids = params.message_ids.map(move);
  return { ...c, params };
}

/**
 * The view of a chat whose outbound rows had ambiguous attempts (a worker killed mid-send): a call
 * repeated right after itself is dropped once per ambiguous attempt of its method, and the message
 * ids after a dropped send move down by the messages it created, so the rest compares with run A.
 * `firstBotMessageId`: the id the chat's first bot message got. Returns the view and the drops.
 */
export function collapsedView(
  records: readonly CallRecord[],
  ambiguous: ReadonlyMap<string, number>,
  firstBotMessageId: number,
): { view: ChatView; dropped: string[] } {
  const left = new Map(ambiguous);
  const dropped: string[] = [];
  const view = viewOf(records, (calls) => {
    const shifts: Array<{ from: number; by: number }> = [];
    const out: string[] = [];
    let next = firstBotMessageId;
    for (const c of calls) {
      const line = describeCall(shifted(c, shifts));
      const n = created(c);
      if (out[out.length - 1] === line && (left.get(c.method) ?? 0) > 0) {
        left.set(c.method, left.get(c.method)! - 1);
        dropped.push(line);
        if (n > 0) shifts.push({ from: next, by: n });
      } else out.push(line);
      next += n;
    }
    return out;
  });
  return { view, dropped };
}

/** Chats whose views differ, each with both views (empty when all are identical). */
export function differences(
  a: Map<number, ChatView>,
  b: Map<number, ChatView>,
  same: (x: ChatView, y: ChatView) => boolean = (x, y) => JSON.stringify(x) === JSON.stringify(y),
): Array<{ chat: number; plain?: ChatView; relay?: ChatView }> {
  const chats = [...new Set([...a.keys(), ...b.keys()])].sort((x, y) => x - y);
  return chats
    .filter((chat) => !a.get(chat) || !b.get(chat) || !same(a.get(chat)!, b.get(chat)!))
    .map((chat) => ({ chat, plain: a.get(chat), relay: b.get(chat) }));
}
