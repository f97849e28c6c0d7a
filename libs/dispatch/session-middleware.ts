/**
 * `dispatch.session()`: telegraf's `session()` without its in-process cache.
 *
 * telegraf's middleware hands every update of one key that runs at the same time in a process the
 * same in-memory object, so under dispatch one attempt can commit another's uncommitted changes (or
 * read them and rerun on top of them). Here each update reads its own copy from the store and writes
 * it back only when the middleware chain succeeded: with the transactional store, every attempt's
 * session is its own, and two attempts of one key meet only at the version check.
 */
import type { Context, MiddlewareFn, SessionStore } from 'telegraf';
import { sessionStore } from './session-store';

/** The options of telegraf's `session()`; `store` defaults to the transactional session store. */
export interface DispatchSessionOptions<S, C extends Context = Context> {
  /** The context property holding the session (default `session`). */
  property?: string;
  /** The session's key; default `${from.id}:${chat.id}`, undefined (no session) when either is missing. */
  getSessionKey?: (ctx: C) => string | undefined | Promise<string | undefined>;
  /** Where sessions live (default: the dispatch session store). */
  store?: SessionStore<S>;
  /** The value of a session that does not exist yet. */
  defaultSession?: (ctx: C) => S;
}

/** telegraf's default key: one session per user per chat. */
export function defaultSessionKey(ctx: Context): string | undefined {
  const fromId = ctx.from?.id;
  const chatId = ctx.chat?.id;
  if (fromId == null || chatId == null) return undefined;
  return `${fromId}:${chatId}`;
}

/**
 * A drop-in for telegraf's `session()`: `ctx[property]` reads this update's own copy; assigning
 * replaces it, `null`/`undefined` deletes the session. The store is written after the chain
 * succeeded and only if the property was used; a failed update writes nothing.
 */
export function session<S = unknown, C extends Context = Context>(
  opts: DispatchSessionOptions<S, C> = {},
): MiddlewareFn<C> {
  const property = opts.property ?? 'session';
  const getSessionKey = opts.getSessionKey ?? defaultSessionKey;
  const store: SessionStore<S> = opts.store ?? sessionStore<S>();
  return async (ctx, next) => {
    const key = await getSessionKey(ctx);
    if (!key) {
      Reflect.set(ctx, property, undefined);
      return next();
    }
    let value: S | undefined = (await store.get(key)) ?? opts.defaultSession?.(ctx);
    let touched = false;
    Object.defineProperty(ctx, property, {
      configurable: true,
      enumerable: true,
      get() {
        touched = true;
        return value;
      },
      set(v: S | undefined) {
        touched = true;
        value = v;
      },
    });
    await next();
    if (!touched) return;
    if (value == null) await store.delete(key);
    else await store.set(key, value);
  };
}
