/**
 * Runs stored updates through the bot's telegraf handlers and turns what happened into an explicit
 * outcome (`Handled | Retry`). One `Telegraf` per bot, built once: `webhookReply` off, `botInfo`
 * fetched once at start (never per update), `launch()` never called.
 */
import { performance } from 'node:perf_hooks';
import { Composer, Telegraf } from 'telegraf';
import type { Middleware, MiddlewareFn } from 'telegraf';
import type { Update, UserFromGetMe } from 'telegraf/types';
import type { Logger } from '../observability/logger';
import { DispatchContext, dispatchStorage, routeTelegram, type DispatchState } from './context';
import { ErrorHandlerRegistry } from './error-handlers';
import {
  abortReason,
  DispatchAbortedError,
  HandlerTimeoutError,
  InvalidReplyError,
  TelegrafRefusedError,
} from './errors';
import type { BotHandlers, DispatchApi, DispatchBot } from './handlers-module';
import { errorInfo, type DispatchOutcome, type Retry } from './outcome';
import type { ReplySink } from './reply-sink';

export const HANDLER_TIMEOUT_MS_DEFAULT = 20_000;

export interface UpdateRunnerOptions {
  token: string;
  /** Bot id as stored in relay.inbox.bot_id (the numeric prefix of the token). */
  botId: string;
  /** TELEGRAM_API_ROOT. */
  apiRoot: string;
  handlers: BotHandlers;
  replySink: ReplySink;
  logger: Logger;
  /** Known bot identity (skips getMe at start; tests and callers that cached it). */
  botInfo?: UserFromGetMe;
  /** Delay between getMe attempts at start while the Bot API is unreachable. */
  getMeRetryMs?: number;
}

export interface RunOptions {
  /** Aborts the attempt from outside (shutdown, lost claim): the outcome is Retry (aborted). */
  signal?: AbortSignal;
  /** HANDLER_TIMEOUT: past it the handler's signal fires and the outcome is Retry (timed out). */
  timeoutMs?: number;
  /** relay.inbox.update_epoch: above 0 for an update stored under an update_id Telegram reused. */
  updateEpoch?: number;
}

export interface UpdateRunner {
  readonly bot: DispatchBot;
  readonly botId: string;
  /** Installs the handlers module on the bot (once). Throws what the register function throws. */
  install(): Promise<void>;
  /** `install()`, then getMe (once; retried until it answers or `signal` aborts). Updates run only after this. */
  start(opts?: { signal?: AbortSignal }): Promise<UserFromGetMe>;
  /** Set once started: the bot's identity. */
  botInfo(): UserFromGetMe | undefined;
  /** Runs one raw update (as stored) through the handlers; never throws. */
  runUpdate(raw: unknown, opts?: RunOptions): Promise<DispatchOutcome>;
}

/** Telegraf resolves `./bot<token>/<method>` against the root: a root with a path needs its trailing slash. */
export function normalizeApiRoot(apiRoot: string): string {
  const u = new URL(apiRoot);
  if (!u.pathname.endsWith('/')) u.pathname += '/';
  return u.toString();
}

export function createUpdateRunner(opts: UpdateRunnerOptions): UpdateRunner {
  const logger = opts.logger;
  const bot = new Telegraf<DispatchContext>(opts.token, {
    contextType: DispatchContext,
    // Our own timeout aborts the handler's signal; telegraf's would neither cancel nor tell it.
    handlerTimeout: Infinity,
    telegram: { apiRoot: normalizeApiRoot(opts.apiRoot), webhookReply: false },
  });
  // Handlers that call the closure-captured `bot.telegram` during a dispatch go through the same seam.
  routeTelegram(bot.telegram, () => dispatchStorage.getStore());

  const errorHandlers = new ErrorHandlerRegistry<DispatchContext>();
  let autoAnswer: { text?: string } | undefined;
  const api: DispatchApi = {
    onError: (errorClass, handler) => errorHandlers.register(errorClass, handler),
    autoAnswerCallbacks: (o = {}) => {
      autoAnswer = { ...o };
    },
  };

  // First middleware: the opted-in automatic callback answer runs after the whole chain succeeded,
  // inside the same error boundary as the handler (its failure is offered to the error handlers).
  bot.use(async (ctx, next) => {
    await next();
    const state = dispatchStorage.getStore();
    if (autoAnswer && ctx.callbackQuery && state && !state.callbackAnswered) {
      try {
        await ctx.answerCbQuery(autoAnswer.text);
      } catch (err) {
        state.routeErrors.add(err);
        throw err;
      }
    }
  });
  markRouteHandlers(bot);

  // Not a catch-all: only registered error handlers can accept an error, and only an error thrown by
  // a route handler; otherwise it propagates and handleUpdate rejects. (Also keeps telegraf's
  // default from printing the raw update.)
  bot.catch(async (err, ctx) => {
    const state = dispatchStorage.getStore();
    if (!state || state.settled || state.signal.aborted || errorHandlers.size === 0) throw err;
    // a middleware (auth, a transaction…) failed: no error handler may acknowledge the update
    if (!state.routeErrors.has(err)) throw err;
    const decision = await errorHandlers.decide(err, ctx);
    if (decision.handled) {
      state.handledError = decision.error;
      return;
    }
    if ('original' in decision && decision.original !== undefined) state.originalError = decision.original;
    throw decision.error;
  });

  let installing: Promise<void> | undefined;
  let starting: Promise<UserFromGetMe> | undefined;

  function install(): Promise<void> {
    installing ??= opts.handlers.install(bot, api);
    return installing;
  }

  async function fetchBotInfo(signal?: AbortSignal): Promise<UserFromGetMe> {
    const retryMs = opts.getMeRetryMs ?? 2_000;
    for (let attempt = 1; ; attempt++) {
      if (signal?.aborted) throw new DispatchAbortedError(signal.reason);
      try {
        return await bot.telegram.getMe();
      } catch (err) {
        logger.warn({ err: errorInfo(err), attempt }, 'getMe failed; dispatch waits for the Bot API');
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, Math.min(retryMs * attempt, 30_000));
          t.unref();
          signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
        });
      }
    }
  }

  function start(o: { signal?: AbortSignal } = {}): Promise<UserFromGetMe> {
    starting ??= (async () => {
      await install();
      const info = opts.botInfo ?? (await fetchBotInfo(o.signal));
      bot.botInfo = info;
      logger.info(
        { username: info.username, handlers: opts.handlers.shape, replyMode: opts.replySink.mode },
        'bot handlers ready',
      );
      return info;
    })();
    starting.catch(() => {
      starting = undefined; // a failed start (aborted getMe) can be retried
    });
    return starting;
  }

  async function runUpdate(raw: unknown, o: RunOptions = {}): Promise<DispatchOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const retry = (thrown: unknown, extra: Partial<Retry> = {}): Retry => {
      const error = fromTelegraf(thrown);
      const deterministic = error instanceof InvalidReplyError || error instanceof TelegrafRefusedError;
      return {
        kind: 'retry',
        error,
        info: errorInfo(error),
        timedOut: false,
        aborted: false,
        durationMs: elapsed(),
        ...(deterministic ? { terminal: true } : {}),
        ...extra,
      };
    };
    if (!bot.botInfo) {
      if (!starting) return retry(new Error('dispatch is not started: call start() first'));
      try {
        await starting;
      } catch (err) {
        return retry(err);
      }
    }
    if (!raw || typeof raw !== 'object' || !Number.isInteger((raw as { update_id?: unknown }).update_id)) {
      return retry(new TypeError('stored update has no integer update_id'));
    }
    const update = raw as Update;
    if (o.signal?.aborted) return retry(new DispatchAbortedError(o.signal.reason), { aborted: true });

    const controller = new AbortController();
    const session = opts.replySink.open({
      botId: opts.botId,
      updateId: update.update_id,
      updateEpoch: o.updateEpoch,
      chatId: chatIdOf(update),
    });
    const state: DispatchState = {
      signal: controller.signal,
      session,
      settled: false,
      callbackAnswered: false,
      routeErrors: new Set(),
    };

    let timer: NodeJS.Timeout | undefined;
    let abortedBy: 'timeout' | 'outside' | undefined;
    const stopped = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(abortReason(controller.signal)), { once: true });
    });
    const onOuterAbort = () => {
      abortedBy ??= 'outside';
      controller.abort(new DispatchAbortedError(o.signal?.reason));
    };
    o.signal?.addEventListener('abort', onOuterAbort, { once: true });
    if (o.timeoutMs !== undefined && Number.isFinite(o.timeoutMs)) {
      timer = setTimeout(() => {
        abortedBy ??= 'timeout';
        controller.abort(new HandlerTimeoutError(o.timeoutMs as number));
      }, o.timeoutMs);
    }

    const work = dispatchStorage.run(state, () => bot.handleUpdate(update));
    work.catch(() => undefined); // settled below or abandoned after a timeout; never unhandled
    stopped.catch(() => undefined);
    try {
      await Promise.race([work, stopped]);
      state.settled = true;
      if (state.handledError !== undefined) {
        return {
          kind: 'handled',
          via: 'error_handler',
          handledError: errorInfo(state.handledError),
          durationMs: elapsed(),
          commit: (c) => session.commit(c),
        };
      }
      return { kind: 'handled', via: 'handler', durationMs: elapsed(), commit: (c) => session.commit(c) };
    } catch (err) {
      state.settled = true;
      const error: unknown = abortedBy && controller.signal.aborted ? controller.signal.reason : err;
      return retry(error, {
        timedOut: abortedBy === 'timeout',
        aborted: abortedBy === 'outside',
        ...(state.originalError !== undefined ? { originalError: errorInfo(state.originalError) } : {}),
      });
    } finally {
      if (timer) clearTimeout(timer);
      o.signal?.removeEventListener('abort', onOuterAbort);
      if (!controller.signal.aborted) controller.abort(new DispatchAbortedError('attempt finished'));
    }
  }

  return { bot, botId: opts.botId, install, start, botInfo: () => bot.botInfo, runUpdate };
}

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
function markRouteHandlers(bot: Telegraf<DispatchContext>): void {
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

/**
 * telegraf's own refusals of an input, caught at the boundary and classified: `ctx.reply` on an
 * update without a chat (`Telegraf: "reply" isn't available for "poll"`), an update with no object
 * field (whose message would quote the raw update). Both are deterministic for the update: terminal.
 */
function fromTelegraf(err: unknown): unknown {
  if (err instanceof TypeError && /^Telegraf: "[^"]{1,64}" isn't available for "[^"]{1,64}"$/.test(err.message)) {
    return new TelegrafRefusedError(err.message.replace(/^Telegraf: /, 'telegraf refused the call: '), err);
  }
  if (err instanceof Error && err.message.startsWith('Cannot determine `updateType` of ')) {
    return new TelegrafRefusedError('telegraf cannot determine the update type (the update has no object field)');
  }
  return err;
}

/** `o.key` when `o` is an object, else undefined (what `o?.key` gives for the values JSON has). */
const field = (o: unknown, key: string): unknown =>
  typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[key] : undefined;
/** `o?.chat?.id` */
const chatIdIn = (o: unknown): unknown => field(field(o, 'chat'), 'id');

/** The chat an update belongs to (message-like updates and callback queries), as text. */
export function chatIdOf(update: unknown): string | null {
  const u = (key: string) => field(update, key);
  const carrier =
    u('message') ??
    u('edited_message') ??
    u('channel_post') ??
    u('edited_channel_post') ??
    u('business_message') ??
    u('edited_business_message');
  const id =
    chatIdIn(carrier) ??
    chatIdIn(field(u('callback_query'), 'message')) ??
    chatIdIn(u('my_chat_member')) ??
    chatIdIn(u('chat_member')) ??
    chatIdIn(u('chat_join_request')) ??
    chatIdIn(u('message_reaction')) ??
    chatIdIn(u('message_reaction_count')) ??
    chatIdIn(u('chat_boost')) ??
    chatIdIn(u('removed_chat_boost'));
  return typeof id === 'number' || typeof id === 'string' ? String(id) : null;
}
