/**
 * Builds the one `Telegraf` a bot's updates run through: our timeout instead of telegraf's, replies
 * sent (never answered inline), Bot API calls routed through the attempt's reply session, the
 * opted-in automatic callback answer, and the error boundary that offers route errors to the
 * registered error handlers.
 */
import type { Pool } from 'pg';
import { Telegraf } from 'telegraf';
import { DispatchContext, dispatchStorage, routeTelegram } from './context';
import { ErrorHandlerRegistry } from './error-handlers';
import type { DispatchApi } from './handlers-module';
import { bindContextWork, transaction } from './handler-transaction';
import { markRouteHandlers } from './route-errors';
import { sessionStore, type SessionValueOptions } from './session-store';
import { session, type DispatchSessionOptions } from './session-middleware';

export interface DispatchBotSetup {
  bot: Telegraf<DispatchContext>;
  /** What the handlers module is given besides the bot (error handlers, automatic callback answers). */
  api: DispatchApi;
}

/** Telegraf resolves `./bot<token>/<method>` against the root: a root with a path needs its trailing slash. */
export function normalizeApiRoot(apiRoot: string): string {
  const u = new URL(apiRoot);
  if (!u.pathname.endsWith('/')) u.pathname += '/';
  return u.toString();
}

/** What sessions are stored under: the bot, the worker's pool (none: sessions are refused) and SESSION_TTL. */
export interface DispatchBotDatabase {
  pool?: Pool;
  botId: string;
  sessionTtlMs: number;
}

export function createDispatchBot(token: string, apiRoot: string, database?: DispatchBotDatabase): DispatchBotSetup {
  const bot = new Telegraf<DispatchContext>(token, {
    contextType: DispatchContext,
    // Our own timeout aborts the handler's signal; telegraf's would neither cancel nor tell it.
    handlerTimeout: Infinity,
    telegram: { apiRoot: normalizeApiRoot(apiRoot), webhookReply: false },
  });
  // Handlers that call the closure-captured `bot.telegram` during a dispatch go through the same seam.
  routeTelegram(bot.telegram, () => dispatchStorage.getStore());

  const errorHandlers = new ErrorHandlerRegistry<DispatchContext>();
  let autoAnswer: { text?: string } | undefined;
  const store = <T>(o: SessionValueOptions<T> = {}) =>
    sessionStore<T>({ ...o, pool: database?.pool, botId: database?.botId, ttlMs: database?.sessionTtlMs });
  const api: DispatchApi = {
    onError: (errorClass, handler) => errorHandlers.register(errorClass, handler),
    autoAnswerCallbacks: (o = {}) => {
      autoAnswer = { ...o };
    },
    sessionStore: store,
    session: <S>(o: DispatchSessionOptions<S, DispatchContext> = {}) => session({ ...o, store: o.store ?? store<S>() }),
    transaction: (ctx) => transaction(ctx),
  };

  // First middleware: the opted-in automatic callback answer runs after the whole chain succeeded,
  // inside the same error boundary as the handler (its failure is offered to the error handlers).
  bot.use(async (ctx, next) => {
    const work = dispatchStorage.getStore()?.work;
    if (work) bindContextWork(ctx, work); // dispatch.transaction(ctx) finds its attempt by the context
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

  return { bot, api };
}
