/**
 * Session example: a per-user counter in `ctx.session`. `BOT_HANDLERS=examples/session-bot.ts npm start`,
 * then `/count` (adds one and says the total) and `/reset`.
 *
 * `dispatch.session()` is telegraf's `session()` (same options, same `ctx.session`) without its
 * in-process cache, which would hand one object to two updates of a key running at once. Its store
 * defaults to `dispatch.sessionStore()`: sessions kept in PostgreSQL (relay.sessions), shared by
 * every worker, whose writes commit with the update's handled mark (a failed attempt's count is
 * discarded with it). Any telegraf `SessionStore` can be given instead.
 */
import { Composer, type Middleware, type SessionStore } from 'telegraf';
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
    app.use(dispatch.session<CounterSession>({ store: options.store, defaultSession: () => ({ count: 0 }) }));
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
