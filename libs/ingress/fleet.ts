/**
 * Fleet ingress: one process polls many registered bots, one poller (libs/ingress/poller.ts) per
 * bot, with every guarantee of single-bot mode (commit before confirm, fencing, watchdog,
 * quarantine) because each bot's poller is exactly the single-bot one.
 *
 * Which process polls which bot is decided by relay.cursor's lease, as always; this loop only
 * chooses which leases to try for. Every second it beats in relay.ingress_members, computes its
 * fair share of the enabled bots from the live pollers' caps (fleet-share.ts), gives up bots above
 * its share (a graceful stop releases the lease, so another poller takes it at its next tick) and
 * starts pollers for bots whose lease is free while it is under its share. A dead poller's leases
 * and membership expire after LEASE_TTL; the survivors' shares grow then and they take its bots.
 *
 * A bot is one item: a token Telegram refuses (401) stops that bot's poller until its registration
 * changes; a poller that crashes or stalls is started again after a pause; neither touches the
 * other bots.
 */
import type { Pool } from 'pg';
import type { Registry } from 'prom-client';
import type { BotWatch, ServedBot } from '../bots/watch';
import type { JobLedger } from '../db/boss';
import { errorMessage } from '../errors';
import { every, type Ticker } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { ingressMetrics, observeIngress } from '../observability/metrics';
import { createBotApiClient, type BotApiClient } from '../telegram';
import { botsWithFreeLease, memberBeat, memberLeave } from './fleet-queries';
import { fairShare } from './fleet-share';
import type { DecodePolicy } from './plan-batch';
import { createPoller, type Poller, type PollerExit } from './poller';

/** How often the fleet loop beats and rebalances. */
export const FLEET_TICK_MS = 1_000;
/** How long a bot whose poller crashed or stalled waits before it is polled again. */
export const FLEET_RESTART_DELAY_MS = 5_000;

export interface FleetOptions {
  pool: Pool;
  boss: JobLedger;
  owner: string;
  logger: Logger;
  bots: BotWatch;
  apiRoot?: string;
  /** POLLER_MAX_BOTS. */
  maxBots: number;
  leaseTtlMs: number;
  pollTimeoutMs: number;
  decodePolicy: DecodePolicy;
  dispatchUnauthorized: boolean;
  metrics?: Registry;
  tickMs?: number;
  restartDelayMs?: number;
}

/** A bot not polled now on purpose, and why (a refused token, a crash being waited out). */
interface Benched {
  version: string;
  until: number;
  why: string;
}

interface Running {
  bot: ServedBot;
  poller: Poller;
  api: BotApiClient;
  startedAt: number;
  stopping?: Promise<void>;
}

export interface FleetStatus {
  /** Bots this process has a poller for, and whether it holds each one's lease. */
  polling: { botId: string; owner: boolean }[];
  /** Its share now. */
  share: number;
  /** Bots it does not poll on purpose, and why. */
  benched: { botId: string; why: string }[];
}

export interface Fleet {
  start(): Promise<void>;
  /** Stops every poller (each finishes its batch and releases its lease) and leaves the membership. */
  stop(): Promise<void>;
  status(): FleetStatus;
  /** Calls `fn` after a batch of any bot committed new updates. */
  onStored(fn: () => void): () => void;
  /** Rebalances now (tests; a registry change does it too). */
  tick(): Promise<void>;
}

export function createFleet(opts: FleetOptions): Fleet {
  const { pool, logger } = opts;
  const tickMs = opts.tickMs ?? FLEET_TICK_MS;
  const restartDelayMs = opts.restartDelayMs ?? FLEET_RESTART_DELAY_MS;
  // a poller still in standby this long after it started lost the race for its lease: give the slot back
  const standbyGraceMs = Math.max(2 * tickMs, 2_000);
  const running = new Map<string, Running>();
  const benched = new Map<string, Benched>();
  const stored = new Set<() => void>();
  let share = 0;
  let stopped = false;
  let ticker: Ticker | undefined;
  let ticking: Promise<void> | undefined;
  let removeWatch: (() => void) | undefined;

  const startBot = (bot: ServedBot) => {
    const botLogger = logger.child({ botId: bot.id });
    const api = createBotApiClient({ token: bot.token, apiRoot: opts.apiRoot });
    const poller = createPoller({
      pool,
      boss: opts.boss,
      api,
      botId: bot.id,
      owner: opts.owner,
      logger: botLogger,
      leaseTtlMs: opts.leaseTtlMs,
      pollTimeoutMs: opts.pollTimeoutMs,
      decodePolicy: opts.decodePolicy,
      allowedChatIds: bot.allowed_chat_ids,
      dispatchUnauthorized: opts.dispatchUnauthorized,
    });
    const r: Running = { bot, poller, api, startedAt: Date.now() };
    running.set(bot.id, r);
    if (opts.metrics) observeIngress(opts.metrics, bot.id, poller);
    poller.events.on('batch', (e) => {
      if (e.result === 'committed' && e.stored > 0) for (const fn of stored) fn();
    });
    void poller.done.then((exit) => ended(r, exit));
    poller.start();
  };

  /** A poller ended: asked to (nothing to do) or by itself (bench the bot, say why). */
  const ended = (r: Running, exit: PollerExit) => {
    if (running.get(r.bot.id) === r) running.delete(r.bot.id);
    r.api.close();
    if (opts.metrics) ingressMetrics(opts.metrics).untrack(r.bot.id);
    if (r.stopping || exit.reason === 'stopped') return;
    const refused = exit.reason === 'unauthorized';
    benched.set(r.bot.id, {
      version: r.bot.version,
      until: refused ? Infinity : Date.now() + restartDelayMs,
      why: exit.message,
    });
    logger.error(
      { botId: r.bot.id, exit: exit.reason, problem: exit.message },
      refused
        ? 'bot not polled until its registration changes'
        : `bot poller ended; polled again in ${restartDelayMs} ms`,
    );
  };

  const stopBot = (r: Running, why: string): Promise<void> => {
    if (!r.stopping) {
      logger.info({ botId: r.bot.id, why }, 'bot poller stopping');
      r.stopping = r.poller.stop();
    }
    return r.stopping;
  };

  /** Served, not running, not benched (a changed registration ends its bench). */
  const candidates = (served: ReadonlyMap<string, ServedBot>, now: number): string[] => {
    const out: string[] = [];
    for (const [id, bot] of served) {
      if (running.has(id)) continue;
      const b = benched.get(id);
      if (b && b.version === bot.version && b.until > now) continue;
      benched.delete(id);
      out.push(id);
    }
    return out;
  };

  const rebalance = async () => {
    const caps = await memberBeat(pool, opts.owner, opts.maxBots, opts.leaseTtlMs);
    if (stopped) return;
    const served = opts.bots.bots();
    const now = Date.now();
    for (const id of benched.keys()) if (!served.has(id)) benched.delete(id);
    for (const r of running.values()) {
      if (r.stopping) continue;
      const bot = served.get(r.bot.id);
      if (!bot) void stopBot(r, 'disabled or removed');
      else if (bot.version !== r.bot.version) void stopBot(r, 'registration changed');
      else if (!r.poller.holdsLease() && now - r.startedAt > standbyGraceMs) void stopBot(r, 'another poller holds it');
    }
    share = fairShare(served.size, caps, opts.maxBots);
    const active = [...running.values()].filter((r) => !r.stopping);
    if (active.length > share) {
      // those without their lease yet go first: giving them up disturbs nothing
      active.sort((a, b) => Number(a.poller.holdsLease()) - Number(b.poller.holdsLease()));
      for (const r of active.slice(0, active.length - share)) void stopBot(r, 'above this poller’s share');
      return;
    }
    const room = share - active.length;
    if (room === 0) return;
    const free = await botsWithFreeLease(pool, candidates(served, now));
    if (stopped) return;
    // in random order, so pollers that start together do not all race for the same bots
    for (const id of shuffle(free).slice(0, room)) {
      const bot = opts.bots.bots().get(id);
      if (bot && !running.has(id)) startBot(bot);
    }
  };

  const tick = (): Promise<void> => {
    ticking ??= rebalance()
      .catch((err: unknown) => logger.warn({ err: { message: errorMessage(err) } }, 'fleet rebalance failed'))
      .finally(() => (ticking = undefined));
    return ticking;
  };

  return {
    async start() {
      removeWatch = opts.bots.onChange(() => void tick());
      ticker = every(tickMs, tick, { onError: () => undefined });
      await tick();
    },
    async stop() {
      stopped = true;
      removeWatch?.();
      await ticker?.stop();
      await ticking;
      await Promise.all([...running.values()].map((r) => stopBot(r, 'shutting down')));
      await memberLeave(pool, opts.owner).catch((err: unknown) =>
        logger.warn({ err: { message: errorMessage(err) } }, 'could not leave the fleet; the row expires by itself'),
      );
    },
    status: () => ({
      polling: [...running.values()].map((r) => ({ botId: r.bot.id, owner: r.poller.holdsLease() })),
      share,
      benched: [...benched].map(([botId, b]) => ({ botId, why: b.why })),
    }),
    onStored(fn) {
      stored.add(fn);
      return () => void stored.delete(fn);
    },
    tick,
  };
}

function shuffle<T>(items: T[]): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}
