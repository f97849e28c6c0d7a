/**
 * Which errors the error handlers may see: only those a route handler threw itself. The bot's route
 * methods are wrapped at setup so each error is tagged with its origin during the attempt.
 */
import { Composer } from 'telegraf';
import type { Middleware, MiddlewareFn, Telegraf } from 'telegraf';
import { dispatchStorage, type DispatchContext } from './context';

/** Composer methods whose handler arguments are route handlers, and where those arguments start. */
const ROUTE_METHODS: Record<string, number> = {
  on: 1,
  hears: 1,
  command: 1,
  action: 1,
  inlineQuery: 1,
  reaction: 1,
  entity: 1,
  email: 1,
  url: 1,
  textLink: 1,
  textMention: 1,
  mention: 1,
  phone: 1,
  hashtag: 1,
  cashtag: 1,
  spoiler: 1,
  gameQuery: 0,
  start: 0,
  help: 0,
  settings: 0,
};

/**
 * Wraps the handlers given to the bot's route methods (`bot.on`, `hears`, `command`, `action`…) so
 * that an error they throw themselves (not one coming back out of their `next()`) is recorded as a
 * route error of the attempt. The error handlers see only those; an error thrown by a `bot.use`
 * middleware (auth, a transaction wrapper) — or by routes inside a Composer mounted with `bot.use` —
 * fails the update instead. Errors a middleware rethrows unchanged keep their origin.
 */
export function markRouteHandlers(bot: Telegraf<DispatchContext>): void {
  for (const [method, first] of Object.entries(ROUTE_METHODS)) {
    // the route methods by name (their signatures differ; only the handler arguments are wrapped)
    const found: unknown = Reflect.get(bot, method);
    if (typeof found !== 'function') continue;
    const original = found as (...args: unknown[]) => unknown;
    Reflect.set(bot, method, function (this: unknown, ...args: unknown[]) {
      const wrapped = args.map((a, i) =>
        i >= first &&
        (typeof a === 'function' || (a && typeof (a as { middleware?: unknown }).middleware === 'function'))
          ? routeHandler(a as Middleware<DispatchContext>)
          : a,
      );
      return original.apply(bot, wrapped);
    });
  }
}

function routeHandler(mw: Middleware<DispatchContext>): MiddlewareFn<DispatchContext> {
  const fn = Composer.unwrap(mw);
  return async (ctx, next) => {
    const downstream = new Set<unknown>();
    try {
      return await fn(ctx, async () => {
        try {
          return await next();
        } catch (err) {
          downstream.add(err);
          throw err;
        }
      });
    } catch (err) {
      if (!downstream.has(err)) dispatchStorage.getStore()?.routeErrors.add(err);
      throw err;
    }
  };
}
