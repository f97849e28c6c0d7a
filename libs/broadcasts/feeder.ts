/**
 * The broadcast feeder in workers: every tick, each running broadcast with staged recipients left
 * gets its next chunks fed into relay.outbound while fewer than half a minute of sending of its
 * rows are pending (pace.ts, relay.broadcast_feed). Every worker may tick: the SQL function locks
 * the broadcast (SKIP LOCKED) and the bot's bulk lock, and advances the cursor in the transaction
 * that makes the rows, so replicas ticking together, or a worker killed mid-feed, feed each
 * recipient exactly once.
 */
import type { Pool } from 'pg';
import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import { Lifecycle } from '../lifecycle/lifecycle';
import { every } from '../lifecycle/timers';
import { FREE_BROADCAST_RATE } from './plan';
import { feedAhead } from './pace';
import { broadcastFeed, broadcastsToFeed } from './queries';

/** A tick feeds well before a minute of backlog runs out (it starts topping up at half of it). */
export const FEED_EVERY_MS = 2_000;
/** Broadcasts looked at per tick (oldest first; more are fed at the next tick). */
const BROADCASTS_PER_TICK = 50;
/** A tick gives up the rest of its round after this long (the next tick goes on). */
const TICK_BUDGET_MS = 5_000;

export interface BroadcastFeederOptions {
  pool: Pool;
  logger: Logger;
  /** The bot's free bulk rate, messages per second (OUTBOUND_RATE_PER_BOT). */
  freeRate?: number;
  /** PAID_BROADCAST_RATE for paid broadcasts; null: off. */
  paidRate?: number | null;
  everyMs?: number;
}

export interface BroadcastFeeder {
  start(): void;
  /** Stops the timer after a tick under way. Idempotent; safe before start. */
  stop(): Promise<void>;
  /** One pass now (tests): outbound rows fed and chats skipped at feed time. */
  tick(): Promise<{ fed: number; skipped: number }>;
}

export function createBroadcastFeeder(opts: BroadcastFeederOptions): BroadcastFeeder {
  const life = new Lifecycle('broadcast feeder');
  const free = opts.freeRate ?? FREE_BROADCAST_RATE;
  const paid = opts.paidRate ?? null;
  const tick = async () => {
    const total = { fed: 0, skipped: 0 };
    const until = Date.now() + TICK_BUDGET_MS;
    for (const b of await broadcastsToFeed(opts.pool, BROADCASTS_PER_TICK)) {
      const ahead = feedAhead(b.paid && paid !== null ? Math.max(paid, free) : free);
      // chunk after chunk while its backlog is low: each in its own short transaction
      for (;;) {
        const r = await broadcastFeed(opts.pool, b.id, ahead.rows, ahead.chunk);
        total.fed += r.fed;
        total.skipped += r.skipped;
        if (r.busy || !r.unfed || r.fed + r.skipped === 0 || Date.now() > until) break;
      }
      if (Date.now() > until) break;
    }
    if (total.fed + total.skipped > 0) opts.logger.debug(total, 'broadcast recipients fed');
    return total;
  };
  return {
    start: () => {
      life.start(
        (signal) =>
          every(opts.everyMs ?? FEED_EVERY_MS, tick, {
            signal,
            from: 'end',
            jitter: 0.1,
            unref: true,
            onError: (err) => opts.logger.warn({ err }, 'feeding broadcasts failed; retried at the next tick'),
          }).done,
      );
    },
    stop: () => life.stop(),
    tick,
  };
}

/** The feeder a worker with a bot token runs, at the deployment's rates. */
export function createBroadcastFeederFromConfig(config: Config, deps: { pool: Pool; logger: Logger }): BroadcastFeeder {
  const r = config.OUTBOUND_RATE_PER_BOT;
  return createBroadcastFeeder({
    ...deps,
    freeRate: (r.count * 1000) / r.windowMs,
    paidRate: config.PAID_BROADCAST_RATE > 0 ? config.PAID_BROADCAST_RATE : null,
  });
}
