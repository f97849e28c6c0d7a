/**
 * `dispatch.transaction(ctx)`: the handler's own SQL in the transaction that will mark its update
 * handled (attempt-work.ts). Found by the context (bound when the attempt's first middleware runs)
 * or, for code without it, by the attempt's async context.
 */
import type { AttemptWork, DispatchClient } from './attempt-work';
import { dispatchStorage } from './context';
import { NotInDispatchError } from './session-errors';

const workOfContext = new WeakMap<object, AttemptWork>();

/** Ties a handler context to its attempt (dispatch-bot.ts, first middleware). */
export function bindContextWork(ctx: object, work: AttemptWork): void {
  workOfContext.set(ctx, work);
}

/**
 * A client (`query` only) inside the transaction that will mark this update handled: the handler's
 * writes, its replies, its session and the handled mark commit together or not at all. The first
 * call checks a connection out of the worker's pool and BEGINs; later calls return the same client.
 * A failed, timed-out or aborted attempt rolls it back; once the attempt is over the client refuses
 * queries (RELAY_DISPATCH_CLOSED). The connection is held until the attempt's outcome is written.
 */
export function transaction(ctx?: object): Promise<DispatchClient> {
  const work = (ctx && workOfContext.get(ctx)) || dispatchStorage.getStore()?.work;
  if (!work) return Promise.reject(new NotInDispatchError('dispatch.transaction(ctx)'));
  return work.open();
}
