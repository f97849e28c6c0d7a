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
 * - Lanes: interactive messages take the bot's next free slot; a bulk message reserves only a slot
 *   at most one bot interval away (relay.outbound_rate_reserve p_ahead_ms), so an interactive
 *   message never waits for more than about one slot behind a broadcast. In one process bulk
 *   messages try for a slot one at a time (`bulkGate`): the others wait in memory, not in the database.
 * - Paid broadcasts (PAID_BROADCAST_RATE): a bulk message that carries allow_paid_broadcast is paced
 *   by a budget of its own (paid_tat, relay.outbound_rate_reserve_paid) at that rate, so it neither
 *   waits for nor takes the free budget's slots; per-chat limits and bot-level 429s apply as to any
 *   send. Interactive messages, and every row when the rate is off, use the free budget.
 * `reactive` mode (the baseline the benchmark compares against) does none of this: it only honours
 * retry_after on the message that got the 429.
 */
import { sleep } from '../lifecycle/timers';
import type { Queryable } from '../db/pool';
import type { RateLimitMetrics } from '../observability/metrics';
import { isGroupChat, type OutboundLane } from './message';
import { outboundRateChargeChat, outboundRatePenalize, outboundRateReserve, outboundRateReservePaid } from './queries';

export interface Rate {
  count: number;
  windowMs: number;
}

export interface OutboundRateLimits {
  mode: 'proactive' | 'reactive';
  perBot: Rate;
  perChat: Rate;
  perGroup: Rate;
  /** PAID_BROADCAST_RATE per second: the budget of bulk rows with allow_paid_broadcast; null/absent: off. */
  paidBroadcast?: Rate | null;
}

export const OUTBOUND_RATE_LIMITS_DEFAULT: OutboundRateLimits = {
  mode: 'proactive',
  perBot: { count: 30, windowMs: 1000 },
  perChat: { count: 1, windowMs: 1000 },
  perGroup: { count: 20, windowMs: 60_000 },
};

/** A reservation further ahead than this is not taken: the claim goes back and is re-claimed later. */
export const RESERVE_HORIZON_MS_DEFAULT = 10_000;

/** How many bot intervals a bulk message waits in the process's gate before it gives its claim back. */
const BULK_GATE_WAIT_SLOTS = 10;

export type Acquired = { ok: true; waitedMs: number } | { ok: false; retryInMs: number };

export interface OutboundRateLimiter {
  readonly limits: OutboundRateLimits;
  /**
   * Reserves `count` consecutive bot slots (an album: one per message; default 1) for a send to
   * `chatId` and waits for the first (abortable).
   */
  acquire(
    db: Queryable,
    botId: string,
    chatId: string,
    signal?: AbortSignal,
    count?: number,
    lane?: OutboundLane,
    /** The row carries allow_paid_broadcast: a bulk one takes the paid budget when it is on. */
    paid?: boolean,
  ): Promise<Acquired>;
  /**
   * After an attempt (in its settle transaction): charge the chat `count` messages (default 1), or
   * push it back after a 429.
   */
  afterAttempt(db: Queryable, botId: string, chatId: string, rateLimitedMs?: number, count?: number): Promise<void>;
  /** Milliseconds between two sends of the bot, and of one chat. */
  readonly botIntervalMs: number;
  /** How many bulk messages of a bot may be in flight fleet-wide (the claim's bound). */
  readonly bulkInFlightMax: number;
  /**
   * How far ahead the bot's free budget may be booked for a (free) bulk row to be claimed: the
   * longest a bulk message waits in the process's gate, so a claimed bulk row gets its slot instead
   * of being given back (and a worker does not claim what it cannot send).
   */
  readonly bulkAheadMs: number;
  /** The paid-broadcast budget: ms between two paid sends, and their in-flight bound; null: off. */
  readonly paid: { intervalMs: number; inFlightMax: number } | null;
}

/** True when a row asks Telegram for a paid broadcast (allow_paid_broadcast in its parameters). */
export function carriesPaidBroadcast(row: {
  send_options?: Record<string, unknown> | null;
  params?: Record<string, unknown> | null;
}): boolean {
  return row.send_options?.allow_paid_broadcast === true || row.params?.allow_paid_broadcast === true;
}

/** (carriesPaidBroadcastSql in queries.ts is the same test in SQL.) */

/**
 * Bulk messages in flight per bot: enough to keep the budget busy through a send's round trip and
 * its settle (a quarter second of sends, at least 2), few enough that the workers' slots stay free
 * for replies and that a bulk claim holds its chat only briefly.
 */
export function bulkInFlightMax(botIntervalMs: number): number {
  return Math.max(2, Math.ceil(250 / botIntervalMs));
}

/**
 * Paid bulk messages in flight per bot: a second of paid sends (the workers' slots bound it too).
 * A quarter second, as for free bulk, caps the paid rate at what a claim, a send and a settle
 * within 250 ms allow: measured 34/s of 100/s with 3 workers on a loaded host. Replies still come
 * first: a freed slot is claimed interactive lane first, and at a paid rate slots free often.
 */
export function paidInFlightMax(paidIntervalMs: number): number {
  return Math.max(2, Math.ceil(1000 / paidIntervalMs));
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
  // one bulk message at a time per process tries for a slot (a promise chain)
  let bulkGate: Promise<unknown> = Promise.resolve();
  const reserve = (db: Queryable, botId: string, chatId: string, intervalMs: number, aheadMs: number | null) =>
    outboundRateReserve(db, { botId, chatId, intervalMs, burst: 1, horizonMs, aheadMs });
  // a bulk message waits in the gate for a slot this close; a longer wait (the chat is not ready, or
  // interactive traffic took many slots) gives the claim back instead of holding the gate
  const bulkWaitMaxMs = BULK_GATE_WAIT_SLOTS * botIntervalMs;
  // a bulk message books a slot only this close: the free budget's tat then stays within one interval
  // and this of now, so a reply waits at most that long behind a broadcast. A whole interval (as
  // before) let tat run two intervals ahead: reply p50 90 ms / p99 191 ms during a broadcast against
  // 20 / 56 ms idle (bench/outbound.ts --lane bulk); a third keeps a margin for the gate's retry to
  // come before the slot passes (a later retry sends late, costing throughput, not correctness)
  const bulkSlotAheadMs = botIntervalMs / 3;
  const paidRate = limits.paidBroadcast && limits.paidBroadcast.count > 0 ? limits.paidBroadcast : null;
  const paid = paidRate
    ? { intervalMs: intervalOf(paidRate), inFlightMax: paidInFlightMax(intervalOf(paidRate)) }
    : null;
  /** Bulk: retry while the next slot is more than one interval away (see bulkWaitMaxMs). */
  async function reserveBulk(db: Queryable, botId: string, chatId: string, intervalMs: number, signal?: AbortSignal) {
    const turn = bulkGate.then(async () => {
      for (;;) {
        const r = await reserve(db, botId, chatId, intervalMs, bulkSlotAheadMs);
        if (r.reserved || r.waitMs > bulkWaitMaxMs || signal?.aborted) return r;
        await sleep(Math.max(1, r.waitMs), signal);
      }
    });
    bulkGate = turn.catch(() => undefined);
    return turn;
  }
  return {
    limits,
    botIntervalMs,
    bulkInFlightMax: bulkInFlightMax(botIntervalMs),
    bulkAheadMs: bulkWaitMaxMs,
    paid,
    async acquire(db, botId, chatId, signal, count = 1, lane = 'interactive', paidRow = false) {
      if (!proactive) return { ok: true, waitedMs: 0 };
      // with burst 1, reserving n intervals at once is n consecutive slots: the next send waits for all
      const n = Math.max(1, count);
      const intervalMs = botIntervalMs * n;
      // paid bulk has its budget to itself (no interactive message competes for it): no gate, and
      // the in-flight bound of the claim keeps its bookings within a quarter second
      const r =
        lane === 'bulk' && paidRow && paid
          ? await outboundRateReservePaid(db, { botId, chatId, intervalMs: paid.intervalMs * n, horizonMs })
          : lane === 'bulk'
            ? await reserveBulk(db, botId, chatId, intervalMs, signal)
            : await reserve(db, botId, chatId, intervalMs, null);
      if (!r.reserved) {
        metrics?.deferred(botId);
        return { ok: false, retryInMs: Math.ceil(r.waitMs) };
      }
      if (r.waitMs > 0) {
        metrics?.waited(botId, r.waitMs);
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
