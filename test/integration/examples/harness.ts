/**
 * Runs an example's register function on plain telegraf (`bot.handleUpdate`, no relay, no database)
 * against the real Bot API sandbox over HTTP: updates come from the sandbox's update factory, and
 * what the bot answered is read from the sandbox's call log.
 */
import { MemorySessionStore, Telegraf } from 'telegraf';
import type { Update } from 'telegraf/types';
import {
  DispatchContext,
  session,
  type DispatchApi,
  type DispatchSessionOptions,
  type RegisterHandlers,
} from 'tg-relay';
import { createBotApiSandbox, type BotApiSandbox, type CallRecord, type TgUpdate } from '../../../libs/sandbox';

export const TOKEN = '5150000001:examples-test-token';

export interface ExampleHarness {
  sandbox: BotApiSandbox;
  bot: Telegraf<DispatchContext>;
  /** Inject a user message and run it through the bot. */
  say(chatId: number, text: string): Promise<TgUpdate>;
  /** Inject a button press on the bot's message and run it through the bot. */
  press(chatId: number, data: string, messageId: number): Promise<TgUpdate>;
  /** The bot's calls (getMe excluded), in order. */
  calls(): CallRecord[];
  stop(): Promise<void>;
}

/**
 * The dispatch API as plain telegraf can give it: autoAnswerCallbacks answers, after the handlers,
 * a callback query they left unanswered; onError is tg-relay's alone (no example here uses it).
 */
function plainDispatch(bot: Telegraf<DispatchContext>): DispatchApi {
  return {
    onError: () => {
      throw new Error('onError needs tg-relay dispatch: not available on plain telegraf');
    },
    // plain telegraf has no relay database: sessions in memory, as telegraf's own default
    sessionStore: <T>() => {
      const memory = new MemorySessionStore<T>();
      return {
        get: (key: string) => Promise.resolve(memory.get(key)),
        set: (key: string, value: T) => Promise.resolve(memory.set(key, value)),
        delete: (key: string) => Promise.resolve(void memory.delete(key)),
      };
    },
    // tg-relay's session middleware on a memory store (one update at a time here)
    session: <S>(o: DispatchSessionOptions<S, DispatchContext> = {}) =>
      session<S, DispatchContext>({ ...o, store: o.store ?? new MemorySessionStore<S>() }),
    transaction: () => {
      throw new Error('transaction needs tg-relay dispatch: not available on plain telegraf');
    },
    autoAnswerCallbacks: (opts) => {
      bot.use(async (ctx, next) => {
        await next();
        if (ctx.callbackQuery) await ctx.answerCbQuery(opts?.text).catch(() => undefined);
      });
    },
  };
}

export async function startExample(register: RegisterHandlers): Promise<ExampleHarness> {
  // flood control is the relay's concern: an example's replies to one chat must just work here
  const sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
  const bot = new Telegraf<DispatchContext>(TOKEN, {
    telegram: { apiRoot: sandbox.url },
    contextType: DispatchContext,
  });
  bot.botInfo = await bot.telegram.getMe();
  await register(bot, plainDispatch(bot));
  const run = async (update: TgUpdate) => {
    // the sandbox builds the update a Telegram user would cause; telegraf takes it as its own type
    await bot.handleUpdate(update as Update);
    return update;
  };
  return {
    sandbox,
    bot,
    say: (chatId, text) => run(sandbox.injectMessage(TOKEN, { chatId, text })),
    press: (chatId, data, messageId) => run(sandbox.injectCallbackQuery(TOKEN, { chatId, data, messageId })),
    calls: () => sandbox.calls(TOKEN).filter((c) => c.method !== 'getMe'),
    stop: () => sandbox.stop(),
  };
}
