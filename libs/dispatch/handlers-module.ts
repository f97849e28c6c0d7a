/**
 * BOT_HANDLERS: the module that holds the bot's telegraf handlers. Accepted shapes, checked in
 * this order:
 *
 * 1. `export function register(bot, dispatch) {…}`: a function that receives the `Telegraf`
 *    instance (and the dispatch API: `onError`, `autoAnswerCallbacks`, `session`, `sessionStore`, `transaction`)
 *    and registers handlers.
 * 2. `export const handlers = composer`: a `Composer` / any middleware object, or a middleware
 *    function `(ctx, next) => …`.
 * 3. `export default …`: a `Composer` / middleware object (anything with `middleware()`), or a
 *    function, which is taken as a **register** function (a bare middleware function must be
 *    exported as `handlers` or wrapped in `new Composer(fn)`; the two cannot be told apart).
 *    `module.exports = …` counts as a default export.
 *
 * The path is resolved against the working directory (or is a package name). A TypeScript module
 * (`.ts`) loads as-is from the sources (tsx); the compiled `tg-relay` loads it through tsx when
 * tsx is installed where the module or the working directory can resolve it, else says how to fix.
 */
import { errorCode, errorMessage } from '../errors';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Middleware, MiddlewareFn, Telegraf } from 'telegraf';
import { ConfigError } from '../config/errors';
import type { DispatchClient } from './attempt-work';
import type { DispatchContext } from './context';
import type { DispatchSessionStore, SessionValueOptions } from './session-store';
import type { DispatchSessionOptions } from './session-middleware';
import type { ErrorClass, ErrorHandler } from './error-handlers';

/** The second argument of a register function. */
export interface DispatchApi<C extends DispatchContext = DispatchContext> {
  /**
   * Registers an error handler for errors that are `instanceof errorClass`. Handlers run in
   * registration order; return `'handled'` to acknowledge the update (after a durable decision,
   * e.g. a reply telling the user what went wrong), `'unhandled'` to pass it on. A handler that
   * throws means recovery failed: the update is retried. `Error` itself is refused (no catch-all).
   */
  onError<E>(errorClass: ErrorClass<E>, handler: ErrorHandler<NoInfer<E>, C>): void;
  /**
   * Opt in to answering callback queries automatically: after the middleware chain completes
   * without error, a callback query the handlers did not answer is answered (with `text` if
   * given). A failure of that call goes through the error handlers like a handler failure.
   */
  autoAnswerCallbacks(opts?: { text?: string }): void;
  /**
   * A telegraf session store on relay.sessions: `bot.use(session({ store: dispatch.sessionStore() }))`.
   * Reads see the committed session; writes commit with the update's handled mark (a failed attempt's
   * are discarded; two attempts writing one key conflict and the later runs again). Values must be
   * JSON. Outside a dispatch it reads and writes the table at once. Sessions expire SESSION_TTL after
   * their last write. Give `defaultSession` to the store rather than to session() when one key is
   * written from several chats (docs/dispatch.md).
   */
  sessionStore<T = unknown>(opts?: SessionValueOptions<T>): DispatchSessionStore<T>;
  /**
   * telegraf's `session()` without its shared in-process cache, on `sessionStore()` unless given a
   * `store`: `bot.use(dispatch.session({ defaultSession: () => ({}) }))`. Same options and
   * `ctx.session` as telegraf's; each update reads its own copy, and it is written only when the
   * chain succeeded. Prefer it to telegraf's session(): two updates of one key never share an object.
   */
  session<S = unknown>(opts?: DispatchSessionOptions<S, C>): MiddlewareFn<C>;
  /**
   * A client (`query` only) inside the transaction that will mark this update handled: the
   * handler's writes commit with its replies, its session and the handled mark, or not at all. It
   * holds a connection of the worker's pool until the attempt's outcome is written.
   */
  transaction(ctx: C): Promise<DispatchClient>;
}

export type DispatchBot<C extends DispatchContext = DispatchContext> = Telegraf<C>;

export type RegisterHandlers<C extends DispatchContext = DispatchContext> = (
  bot: DispatchBot<C>,
  dispatch: DispatchApi<C>,
) => void | Promise<void>;

/** Identity helper that types a register function: `export default defineBot((bot, dispatch) => {…})`. */
export function defineBot(register: RegisterHandlers): RegisterHandlers {
  return register;
}

/** A BOT_HANDLERS module reduced to one way of installing it. */
export interface BotHandlers {
  /** How the module was read, for the start-up log ("register()", "default export (Composer)"…). */
  shape: string;
  install(bot: DispatchBot, dispatch: DispatchApi): Promise<void>;
}

type Loose = Record<string, unknown>;

const isMiddlewareObj = (v: unknown): v is { middleware: () => unknown } =>
  !!v && typeof v === 'object' && typeof (v as Loose).middleware === 'function';

/** `fn`: a function (the caller checked), called as a register function. */
function asRegister(fn: unknown, shape: string): BotHandlers {
  return { shape, install: async (bot, dispatch) => void (await (fn as RegisterHandlers)(bot, dispatch)) };
}

function asMiddleware(mw: unknown, shape: string): BotHandlers {
  // a promise, as install's callers expect: bot.use throwing rejects it (they keep the rejection)
  return {
    shape,
    install: (bot) =>
      new Promise((resolve) => {
        bot.use(mw as Middleware<DispatchContext>);
        resolve();
      }),
  };
}

/** Reduces a loaded module to `BotHandlers`, or throws a `ConfigError` naming BOT_HANDLERS. */
export function resolveBotHandlers(mod: unknown, where = 'BOT_HANDLERS module'): BotHandlers {
  const m = (mod ?? {}) as Loose;
  if (typeof mod === 'function') return asRegister(mod, 'module.exports (register function)');
  if (typeof m.register === 'function') return asRegister(m.register, 'register()');
  if (m.handlers !== undefined) {
    if (typeof m.handlers === 'function') return asMiddleware(m.handlers, 'handlers (middleware function)');
    if (isMiddlewareObj(m.handlers)) return asMiddleware(m.handlers, 'handlers (Composer)');
  }
  if (isMiddlewareObj(mod)) return asMiddleware(mod, 'module.exports (Composer)');
  const d = m.default;
  if (typeof d === 'function') return asRegister(d, 'default export (register function)');
  if (isMiddlewareObj(d)) return asMiddleware(d, 'default export (Composer)');
  if (d && typeof d === 'object' && d !== mod) return resolveBotHandlers(d, where); // default of a transpiled ESM module
  const keys = Object.keys(m).join(', ') || 'nothing';
  throw new ConfigError(
    `BOT_HANDLERS: ${where} exports ${keys}; expected a register function (named "register" or default export), ` +
      'or a telegraf Composer/middleware (named "handlers" or default export)',
    [{ variable: 'BOT_HANDLERS', problem: 'module has no handlers export' }],
  );
}

/**
 * Where a BOT_HANDLERS value points: a file relative to `cwd` (`examples/echo-bot.ts`,
 * `./bot.js`; the extension may be left out), an absolute path, or else a package name.
 */
export function resolveHandlersPath(spec: string, cwd = process.cwd()): string {
  const candidates = [path.resolve(cwd, spec)];
  if (!spec.startsWith('.') && !path.isAbsolute(spec)) candidates.push(spec);
  for (const c of candidates) {
    try {
      return require.resolve(c, { paths: [cwd] });
    } catch {
      // try the next reading
    }
  }
  throw new ConfigError(`BOT_HANDLERS: cannot find module "${spec}" (resolved from ${cwd})`, [
    { variable: 'BOT_HANDLERS', problem: `module not found: ${spec}` },
  ]);
}

const TS_FILE = /\.[cm]?ts$/;

/**
 * Registers tsx's CommonJS loader for a TypeScript handler module when this process does not run
 * under one (the compiled CLI). False when tsx cannot be found.
 */
function registerTsLoader(file: string, cwd: string): boolean {
  for (const from of [file, path.join(cwd, 'package.json')]) {
    try {
      const api = createRequire(from)('tsx/cjs/api') as { register: () => unknown };
      api.register();
      return true;
    } catch {
      // try the next place
    }
  }
  return false;
}

function loadFailed(spec: string, err: unknown): ConfigError {
  return Object.assign(
    new ConfigError(`BOT_HANDLERS: loading "${spec}" failed: ${errorMessage(err) ?? String(err)}`, [
      { variable: 'BOT_HANDLERS', problem: 'module failed to load' },
    ]),
    { cause: err },
  );
}

/** Loads BOT_HANDLERS. Errors thrown while the module loads are reported as a ConfigError with the cause. */
export async function loadBotHandlers(spec: string, cwd = process.cwd()): Promise<BotHandlers & { file: string }> {
  const file = resolveHandlersPath(spec, cwd);
  let mod: unknown;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    mod = require(file);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ERR_REQUIRE_ESM' || code === 'ERR_REQUIRE_ASYNC_MODULE') {
      mod = await import(pathToFileURL(file).href).catch((e: unknown) => Promise.reject(loadFailed(spec, e)));
    } else if (TS_FILE.test(file) && err instanceof SyntaxError) {
      // TypeScript under plain Node (the compiled CLI): load it through tsx if the project has it
      if (!registerTsLoader(file, cwd)) {
        throw new ConfigError(
          `BOT_HANDLERS: "${spec}" is TypeScript and this tg-relay runs compiled JavaScript: compile it (tsc) and point BOT_HANDLERS at the .js file, ` +
            'or install tsx in your project (npm install --save-dev tsx) so tg-relay can load it',
          [{ variable: 'BOT_HANDLERS', problem: 'TypeScript module without a TypeScript loader' }],
        );
      }
      try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        mod = require(file);
      } catch (e) {
        throw loadFailed(spec, e);
      }
    } else {
      throw loadFailed(spec, err);
    }
  }
  return { ...resolveBotHandlers(mod, `"${spec}"`), file };
}
