/**
 * getUpdates with Telegram's semantics:
 * - `offset` > update_id confirms (forgets) that update; the highest offset is recorded. A negative
 *   offset keeps only the last -offset updates. No offset: start at the earliest unconfirmed update.
 *   An offset past the end of the queue (after an update_id reset, see BotState.resetUpdateIds) is
 *   answered from the head of the queue and confirms nothing, as the real Bot API server does.
 * - `limit` clamped to 1..100 (default 100); `timeout` clamped to 0..50 s (configurable maximum).
 * - A long poll answers as soon as updates arrive (batched to the end of the current tick), or `[]`
 *   when the timeout passes.
 * - A newer getUpdates for the same bot makes the pending older one answer 409
 *   "Conflict: terminated by other getUpdates request; …".
 * - With a webhook set: 409 "Conflict: can't use getUpdates method while webhook is active; …".
 */
import type { BotState, StoredUpdate } from './bot-state';
import { TG_DESCRIPTIONS } from './constants';
import { BotApiError, clamp, intParam } from './http-io';
import { serializeStored } from './update-factory';

/** A result already serialised to JSON text (raw injected items are spliced verbatim). */
export class RawJson {
  constructor(readonly text: string) {}
}

export interface PollContext {
  /** Registers a callback run when the client goes away before the answer. */
  onClientClose(cb: () => void): void;
  maxTimeoutSeconds: number;
}

export function conflictByOtherPoll(): BotApiError {
  return new BotApiError(409, TG_DESCRIPTIONS.conflictPolling);
}

export function conflictByWebhook(): BotApiError {
  return new BotApiError(409, TG_DESCRIPTIONS.conflictWebhook);
}

function serializeBatch(items: StoredUpdate[]): RawJson {
  return new RawJson(`[${items.map(serializeStored).join(',')}]`);
}

function allowedUpdatesParam(v: unknown): string[] | undefined {
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return undefined;
}

export function getUpdates(
  bot: BotState,
  params: Record<string, unknown>,
  ctx: PollContext,
): Promise<RawJson> | RawJson {
  if (bot.webhook) throw conflictByWebhook();
  // The older pending request is terminated, this one proceeds.
  if (bot.poll) bot.poll.finish(conflictByOtherPoll());

  const offset = intParam(params.offset, 0);
  const limit = clamp(intParam(params.limit, 100), 1, 100);
  const timeout = clamp(intParam(params.timeout, 0), 0, ctx.maxTimeoutSeconds);
  const allowed = allowedUpdatesParam(params.allowed_updates);
  if (allowed) bot.allowedUpdates = allowed;

  if (offset > 0 && bot.pastQueue(offset)) {
    // the real server: an offset past its queue is answered from the head, nothing confirmed
  } else if (offset > 0) bot.confirmBelow(offset);
  else if (offset < 0) bot.keepLast(-offset);

  const now = bot.firstPending(limit);
  if (now.length > 0 || timeout === 0) return serializeBatch(now);

  return new Promise<RawJson>((resolve, reject) => {
    let done = false;
    const settle = (error?: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (bot.poll === poll) bot.poll = null;
      if (error) reject(error);
      else resolve(serializeBatch(bot.firstPending(limit)));
    };
    const poll = {
      finish: (error?: Error) => {
        if (error) settle(error);
        // Wake-ups are deferred to the end of the tick so that a burst of injections forms one batch.
        else setImmediate(() => settle());
      },
    };
    const timer = setTimeout(() => settle(), timeout * 1000);
    bot.poll = poll;
    ctx.onClientClose(() => settle(new ClientGone()));
  });
}

/** The long-polling client disconnected: nothing is answered. */
export class ClientGone extends Error {
  constructor() {
    super('client closed the connection');
    this.name = 'ClientGone';
  }
}
