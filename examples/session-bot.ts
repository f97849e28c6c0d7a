/**
 * Session example: a per-user counter kept in telegraf's `session()`. `BOT_HANDLERS=examples/session-bot.ts
 * npm start`, then `/count` (adds one and says the total) and `/reset`.
 *
 * The store defaults to `dispatch.sessionStore()`: sessions kept in PostgreSQL (relay.sessions),
 * shared by every worker, whose writes commit with the update's handled mark (a failed attempt's
 * count is discarded with it). Any telegraf `SessionStore` can be given instead.
 */
import { Composer, session, type Middleware, type SessionStore } from 'telegraf';
import { defineBot, type DispatchContext, type RegisterHandlers } from 'tg-relay';

export interface CounterSession {
  count: number;
}

export interface CounterContext extends DispatchContext {
  session: CounterSession;
}

export interface SessionBotOptions {
  /** Where sessions live. Default: the relay's transactional store. */
  store?: SessionStore<CounterSession>;
}

export function createSessionBot(options: SessionBotOptions = {}): RegisterHandlers {
  return (bot, dispatch) => {
    const app = new Composer<CounterContext>();
    const defaultSession = () => ({ count: 0 });
    // the default given to the store, not to session(): see docs/dispatch.md (sessions)
    app.use(
      session({ store: options.store ?? dispatch.sessionStore<CounterSession>({ defaultSession }), defaultSession }),
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
