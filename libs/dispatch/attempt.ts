/**
 * One attempt of one update through the bot: the attempt's own abort signal (fired by the
 * handler timeout or by the caller's signal), the per-attempt state the context seam reads, and
 * what became of it. The attempt never outlives its result: once decided, the signal fires so
 * anything the handler left running stops, and later Bot API calls are refused.
 */
import type { Telegraf } from 'telegraf';
import type { Update } from 'telegraf/types';
import { dispatchStorage, type DispatchContext, type DispatchState } from './context';
import { abortReason, DispatchAbortedError, HandlerTimeoutError } from './errors';
import type { AttemptWork } from './attempt-work';
import type { ReplySession } from './reply-sink';

export interface AttemptLimits {
  /** Aborts the attempt from outside (shutdown, lost claim). */
  signal?: AbortSignal;
  /** Past it the handler's signal fires. */
  timeoutMs?: number;
}

export type AttemptResult =
  | { ok: true; handledError?: unknown }
  | { ok: false; error: unknown; timedOut: boolean; aborted: boolean; originalError?: unknown };

export async function runAttempt(
  bot: Telegraf<DispatchContext>,
  update: Update,
  session: ReplySession,
  o: AttemptLimits,
  attemptWork?: AttemptWork,
): Promise<AttemptResult> {
  const controller = new AbortController();
  const state: DispatchState = {
    signal: controller.signal,
    session,
    work: attemptWork,
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
  const timeoutMs = o.timeoutMs;
  if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
    timer = setTimeout(() => {
      abortedBy ??= 'timeout';
      controller.abort(new HandlerTimeoutError(timeoutMs));
    }, timeoutMs);
  }

  const work = dispatchStorage.run(state, () => bot.handleUpdate(update));
  work.catch(() => undefined); // settled below or abandoned after a timeout; never unhandled
  stopped.catch(() => undefined);
  try {
    await Promise.race([work, stopped]);
    state.settled = true;
    return state.handledError !== undefined ? { ok: true, handledError: state.handledError } : { ok: true };
  } catch (err) {
    state.settled = true;
    const error: unknown = abortedBy && controller.signal.aborted ? controller.signal.reason : err;
    return {
      ok: false,
      error,
      timedOut: abortedBy === 'timeout',
      aborted: abortedBy === 'outside',
      ...(state.originalError !== undefined ? { originalError: state.originalError } : {}),
    };
  } finally {
    if (timer) clearTimeout(timer);
    o.signal?.removeEventListener('abort', onOuterAbort);
    if (!controller.signal.aborted) controller.abort(new DispatchAbortedError('attempt finished'));
  }
}
