import { AsyncLocalStorage } from 'node:async_hooks';
import { Context } from 'telegraf';
import type { Telegram } from 'telegraf';
import type { Update, UserFromGetMe } from 'telegraf/types';
import { abortReason, DispatchClosedError } from './errors';
import type { AttemptWork } from './attempt-work';
import { watchAccessors } from './session-holders';
import type { DirectCall, ReplySession } from './reply-sink';

/** Per-attempt state, carried to the context constructor and to `bot.telegram` through async context. */
export interface DispatchState {
  readonly signal: AbortSignal;
  readonly session: ReplySession;
  /** The attempt's sessions and own transaction (attempt-work.ts). */
  readonly work?: AttemptWork;
  /** Set once the attempt's outcome is decided; later Bot API calls are refused. */
  settled: boolean;
  /** A handler (or the automatic answer) called answerCallbackQuery during this attempt. */
  callbackAnswered: boolean;
  /** When an error handler threw: the error it was asked to recover from. */
  originalError?: unknown;
  /** The error an error handler accepted. */
  handledError?: unknown;
  /**
   * Errors thrown by route handlers (bot.on/hears/command/action/…) during this attempt: only these
   * may reach the error handlers. Anything else (a bot.use middleware: auth, a transaction) fails the update.
   */
  routeErrors: Set<unknown>;
}

export const dispatchStorage = new AsyncLocalStorage<DispatchState>();

const NEVER = new AbortController().signal;

/** Routes one call through the current attempt's reply session (refusing it once the attempt is over). */
export function callThroughSession(
  state: DispatchState,
  method: string,
  payload: unknown,
  signal: AbortSignal | undefined,
  direct: DirectCall,
): Promise<unknown> {
  if (state.settled) return Promise.reject(new DispatchClosedError(method));
  if (state.signal.aborted) return Promise.reject(abortReason(state.signal));
  if (method === 'answerCallbackQuery') state.callbackAnswered = true;
  const combined = signal && signal !== state.signal ? AbortSignal.any([signal, state.signal]) : state.signal;
  return state.session.call(method, (payload ?? {}) as Record<string, unknown>, combined, direct);
}

type CallApi = (method: string, payload: unknown, opts?: { signal?: AbortSignal }) => Promise<unknown>;

const DIRECT_CALL = Symbol('tg-relay.directCall');
/** What `routeTelegram` leaves on an instance: its unrouted call and how to find its attempt. */
interface Routed {
  direct: DirectCall;
  state: () => DispatchState | undefined;
}

/**
 * Escape hatch: calls the Bot API now, past the reply seam, and resolves with Telegram's answer —
 * for a handler that needs it synchronously (the real message_id of a sendMessage in
 * REPLY_MODE=outbound). Not durable, not idempotent (a retried handler calls again), not counted by
 * the outbound rate limiter. Inside a dispatch it still belongs to the attempt: it uses the
 * attempt's abort signal and is refused (RELAY_DISPATCH_CLOSED) once the attempt is over.
 */
export function callApiDirect<T = unknown>(
  ctx: { telegram: Telegram } | Telegram,
  method: string,
  payload: Record<string, unknown> = {},
  opts: { signal?: AbortSignal } = {},
): Promise<T> {
  const telegram = 'telegram' in ctx ? ctx.telegram : ctx;
  const routed = DIRECT_CALL in telegram ? (telegram as Telegram & { [DIRECT_CALL]?: Routed })[DIRECT_CALL] : undefined;
  if (!routed) return callApiOf(telegram)(method, payload, opts) as Promise<T>;
  const { direct } = routed;
  const state = routed.state();
  if (!state) return direct(method, payload, opts) as Promise<T>;
  if (state.settled) return Promise.reject(new DispatchClosedError(method));
  if (state.signal.aborted) return Promise.reject(abortReason(state.signal));
  if (method === 'answerCallbackQuery') state.callbackAnswered = true;
  const signal =
    opts.signal && opts.signal !== state.signal ? AbortSignal.any([opts.signal, state.signal]) : state.signal;
  return direct(method, payload, { signal }) as Promise<T>;
}

/**
 * telegraf types `callApi` per method name (and its payload per method); we pass any method name
 * through (and replace the method on an instance), so we read and write it by name, as a loose call
 * bound to its instance.
 */
function callApiOf(telegram: Telegram): CallApi {
  const fn: unknown = Reflect.get(telegram, 'callApi');
  if (typeof fn !== 'function') throw new TypeError('telegraf Telegram has no callApi');
  return (method, payload, opts) => Promise.resolve(Reflect.apply(fn, telegram, [method, payload, opts]));
}

function setCallApi(telegram: Telegram, callApi: CallApi): void {
  Reflect.set(telegram, 'callApi', callApi);
}

/** Replaces `telegram.callApi` on this instance so every call goes through the attempt's session. */
export function routeTelegram(telegram: Telegram, state: () => DispatchState | undefined): void {
  const original = callApiOf(telegram);
  const direct: DirectCall = (method, payload, opts) => original(method, payload, opts);
  Object.defineProperty(telegram, DIRECT_CALL, { value: { direct, state } satisfies Routed, configurable: true });
  setCallApi(telegram, (method, payload, opts) => {
    const s = state();
    return s ? callThroughSession(s, method, payload, opts?.signal, direct) : original(method, payload, opts);
  });
}

/**
 * The context handlers receive. Besides telegraf's `Context` it carries `signal`: aborted when the
 * attempt times out (HANDLER_TIMEOUT) or the worker stops. Pass it to your own I/O
 * (`fetch(url, { signal: ctx.signal })`); Bot API calls made through `ctx` already use it.
 */
export class DispatchContext<U extends Update = Update> extends Context<U> {
  readonly signal: AbortSignal;

  constructor(update: U, telegram: Telegram, botInfo: UserFromGetMe) {
    super(update, telegram, botInfo);
    const state = dispatchStorage.getStore();
    this.signal = state?.signal ?? NEVER;
    if (!state) return;
    routeTelegram(telegram, () => state);
    // session accessors defined on the context note which attempt held each value (session-holders.ts)
    return watchAccessors(this, () => state.work);
  }
}

/** The abort signal of the dispatch attempt running `ctx` (for code typed against plain `Context`). */
export function dispatchSignal(ctx: Context): AbortSignal {
  return (ctx as Partial<DispatchContext>).signal ?? dispatchStorage.getStore()?.signal ?? NEVER;
}
