/**
 * Fleet-wide rate limiting before sending, with its state in PostgreSQL (tables from
 * sql/0004_outbound.sql, functions in sql/functions/outbound_rate_*.sql).
 *
 * - Per bot (default 30/s): every send reserves a slot in relay.outbound_bot_rate (GCRA with burst
 *   1, i.e. sends evenly spaced by 1000/30 ms across all replicas together), then sleeps until it.
 *   The row is locked only for the reserving statement, so N workers interleave their slots.
 * - Per chat (1/s) and per group (20/min, on top of 1/s): per-chat FIFO means one message per chat
 *   is in flight at a time, so the chat is charged when its attempt ends (never earlier than the
 *   request reached Telegram) and claims skip chats whose next_at is still ahead.
 * - A 429 pushes the chat back by retry_after, and the whole bot when two chats got a 429 within
 *   that window (Telegram does not say which limit was hit).
 * `reactive` mode (the baseline the benchmark compares against) does none of this: it only honours
 * retry_after on the message that got the 429.
 */
import { sleep } from '../lifecycle/timers';
import type { Queryable } from '../db/pool';
import type { RateLimitMetrics } from '../observability/metrics';
import { isGroupChat } from './message';
import { outboundRateChargeChat, outboundRatePenalize, outboundRateReserve } from './queries';

export interface Rate {
  count: number;
  windowMs: number;
}

export interface OutboundRateLimits {
  mode: 'proactive' | 'reactive';
  perBot: Rate;
  perChat: Rate;
  perGroup: Rate;
}

export const OUTBOUND_RATE_LIMITS_DEFAULT: OutboundRateLimits = {
  mode: 'proactive',
  perBot: { count: 30, windowMs: 1000 },
  perChat: { count: 1, windowMs: 1000 },
  perGroup: { count: 20, windowMs: 60_000 },
};

/** A reservation further ahead than this is not taken: the claim goes back and is re-claimed later. */
export const RESERVE_HORIZON_MS_DEFAULT = 10_000;

export type Acquired = { ok: true; waitedMs: number } | { ok: false; retryInMs: number };

export interface OutboundRateLimiter {
  readonly limits: OutboundRateLimits;
  /**
   * Reserves `count` consecutive bot slots (an album: one per message; default 1) for a send to
   * `chatId` and waits for the first (abortable).
   */
  acquire(db: Queryable, botId: string, chatId: string, signal?: AbortSignal, count?: number): Promise<Acquired>;
  /**
   * After an attempt (in its settle transaction): charge the chat `count` messages (default 1), or
   * push it back after a 429.
   */
  afterAttempt(db: Queryable, botId: string, chatId: string, rateLimitedMs?: number, count?: number): Promise<void>;
  /** Milliseconds between two sends of the bot, and of one chat. */
  readonly botIntervalMs: number;
}

const intervalOf = (r: Rate): number => r.windowMs / r.count;

export function createOutboundRateLimiter(
  limits: OutboundRateLimits,
  opts: { horizonMs?: number; metrics?: RateLimitMetrics } = {},
): OutboundRateLimiter {
  const metrics = opts.metrics;
  const botIntervalMs = intervalOf(limits.perBot);
  const chatIntervalMs = intervalOf(limits.perChat);
  const groupIntervalMs = intervalOf(limits.perGroup);
  const horizonMs = opts.horizonMs ?? RESERVE_HORIZON_MS_DEFAULT;
  const proactive = limits.mode === 'proactive';
  return {
    limits,
    botIntervalMs,
    async acquire(db, botId, chatId, signal, count = 1) {
      if (!proactive) return { ok: true, waitedMs: 0 };
      // with burst 1, reserving n intervals at once is n consecutive slots: the next send waits for all
      const intervalMs = botIntervalMs * Math.max(1, count);
      const r = await outboundRateReserve(db, { botId, chatId, intervalMs, burst: 1, horizonMs });
      if (!r.reserved) {
        metrics?.deferred.inc();
        return { ok: false, retryInMs: Math.ceil(r.waitMs) };
      }
      if (r.waitMs > 0) {
        metrics?.waits.inc();
        metrics?.waitSeconds.inc(r.waitMs / 1000);
        await sleep(r.waitMs, signal);
      }
      return { ok: true, waitedMs: r.waitMs };
    },
    async afterAttempt(db, botId, chatId, rateLimitedMs, count = 1) {
      if (!proactive) return;
      if (rateLimitedMs !== undefined) {
        await outboundRatePenalize(db, { botId, chatId, retryAfterMs: rateLimitedMs, botToleranceMs: 0 });
        return;
      }
      // an album of n: the chat waits n intervals, and a group's 20/min bucket takes n messages
      const n = Math.max(1, count);
      for (let i = 0; i < n; i++) {
        await outboundRateChargeChat(db, {
          botId,
          chatId,
          chatIntervalMs: chatIntervalMs * n,
          isGroup: isGroupChat(chatId),
          groupIntervalMs,
          groupBurst: limits.perGroup.count,
        });
        if (!isGroupChat(chatId)) break; // a private chat's next_at is one computation
      }
    },
  };
}
