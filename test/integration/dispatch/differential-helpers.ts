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
  /** Calls Telegram refused (status ≠ 200). */
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

/** The sandbox's call log by chat; answers are put in the chat their callback query came from. */
export function viewByChat(sandbox: BotApiSandbox, updates: readonly TgUpdate[]): Map<number, ChatView> {
  const queryChat = new Map<string, number>();
  for (const u of updates) {
    const q = u.callback_query;
    if (q?.message) queryChat.set(q.id, q.message.chat.id);
  }
  const views = new Map<number, ChatView>();
  for (const c of sandbox.calls(TOKEN)) {
    if (IGNORED.has(c.method)) continue;
    const chat =
      c.method === 'answerCallbackQuery' ? queryChat.get(String(c.params.callback_query_id)) : Number(c.params.chat_id);
    if (chat === undefined || !Number.isFinite(chat)) throw new Error(`a ${c.method} call names no known chat`);
    let view = views.get(chat);
    if (!view) views.set(chat, (view = { calls: [], answers: [], direct: [], refused: [] }));
    const line = describeCall(c);
    if (c.status !== 200) view.refused.push(`${c.status} ${c.description ?? ''} ${line}`);
    else if (methodClass(c.method) === 'answer') view.answers.push(line);
    else if (methodClass(c.method) === 'direct') view.direct.push(line);
    else view.calls.push(line);
  }
  for (const v of views.values()) {
    v.answers.sort();
    v.direct.sort();
  }
  return views;
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
