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
import { withBotSettings } from '../bots/registry';
import type { BotWatch } from '../bots/watch';
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

/** The rates a broadcast is fed at, messages per second. */
export interface FeedRates {
  /** The bot's free bulk rate (OUTBOUND_RATE_PER_BOT). */
  freeRate?: number;
  /** PAID_BROADCAST_RATE for paid broadcasts; null: off. */
  paidRate?: number | null;
}

export interface BroadcastFeederOptions extends FeedRates {
  pool: Pool;
  logger: Logger;
  everyMs?: number;
  /**
   * A worker serving the registered bots: only their broadcasts, each at its bot's rates (undefined:
   * the bot is not served any more, its broadcast waits). Without it: every bot's, at the rates above.
   */
  fleet?: { botIds(): readonly string[]; ratesOf(botId: string): FeedRates | undefined };
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
  const { fleet } = opts;
  const tick = async () => {
    const total = { fed: 0, skipped: 0 };
    const until = Date.now() + TICK_BUDGET_MS;
    for (const b of await broadcastsToFeed(opts.pool, BROADCASTS_PER_TICK, fleet?.botIds())) {
      const rates = fleet ? fleet.ratesOf(b.bot_id) : opts;
      if (!rates) continue;
      const free = rates.freeRate ?? FREE_BROADCAST_RATE;
      const paid = rates.paidRate ?? null;
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

/** The feed rates of a configuration (OUTBOUND_RATE_PER_BOT, PAID_BROADCAST_RATE). */
function feedRatesOf(config: Pick<Config, 'OUTBOUND_RATE_PER_BOT' | 'PAID_BROADCAST_RATE'>): FeedRates {
  const r = config.OUTBOUND_RATE_PER_BOT;
  return {
    freeRate: (r.count * 1000) / r.windowMs,
    paidRate: config.PAID_BROADCAST_RATE > 0 ? config.PAID_BROADCAST_RATE : null,
  };
}

/** The feeder a worker with a bot token runs, at the deployment's rates. */
export function createBroadcastFeederFromConfig(config: Config, deps: { pool: Pool; logger: Logger }): BroadcastFeeder {
  return createBroadcastFeeder({ ...deps, ...feedRatesOf(config) });
}

/**
 * The feeder of a worker without a token: the broadcasts of the bots it serves, each at its bot's
 * rates (its settings' OUTBOUND_RATE_PER_BOT and PAID_BROADCAST_RATE over the configuration's), the
 * rates its rows are then sent at.
 */
export function createFleetBroadcastFeeder(
  config: Config,
  deps: { pool: Pool; logger: Logger; bots: BotWatch },
): BroadcastFeeder {
  return createBroadcastFeeder({
    pool: deps.pool,
    logger: deps.logger,
    fleet: {
      botIds: () => [...deps.bots.bots().keys()],
      ratesOf: (id) => {
        const bot = deps.bots.bots().get(id);
        return bot && feedRatesOf(withBotSettings(config, bot.settings));
      },
    },
  });
}
