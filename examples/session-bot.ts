/**
 * Session example: a per-user counter kept in telegraf's `session()`. `BOT_HANDLERS=examples/session-bot.ts
 * npm start`, then `/count` (adds one and says the total) and `/reset`.
 *
 * The store is an option so the bot can run on any telegraf `SessionStore`. It defaults to
 * telegraf's in-memory store, which forgets everything on restart and is not shared between
 * workers. `dispatch.sessionStore()` is coming: a store kept in PostgreSQL whose writes commit with
 * the update's handled mark; then `createSessionBot({ store: dispatch.sessionStore() })`.
 */
import { Composer, MemorySessionStore, session, type Middleware, type SessionStore } from 'telegraf';
import { defineBot, type DispatchContext, type RegisterHandlers } from 'tg-relay';

export interface CounterSession {
  count: number;
}

export interface CounterContext extends DispatchContext {
  session: CounterSession;
}

export interface SessionBotOptions {
  /** Where sessions live. Default: telegraf's MemorySessionStore (process memory). */
  store?: SessionStore<CounterSession>;
}

export function createSessionBot(options: SessionBotOptions = {}): RegisterHandlers {
  return (bot) => {
    const app = new Composer<CounterContext>();
    app.use(
      session({
        store: options.store ?? new MemorySessionStore<CounterSession>(),
        defaultSession: () => ({ count: 0 }),
      }),
    );
    app.command('count', (ctx) => {
      ctx.session.count += 1;
      return ctx.reply(`Count: ${ctx.session.count}`);
    });
    app.command('reset', (ctx) => {
      ctx.session.count = 0;
      return ctx.reply('Count reset.');
    });
    // session() gives every context a `session` at run time; telegraf types a bot by one context type
    bot.use(app.middleware() as Middleware<DispatchContext>);
  };
}

export default defineBot(createSessionBot());
