/**
 * Fleet ingress: one process serves many registered bots, one ingress unit per bot (fleet-units.ts):
 * the single-bot poller (INGRESS=polling) or the single-bot webhook ingress routed on the process's
 * shared webhook server (INGRESS=webhook), so every guarantee of single-bot mode (commit before
 * confirm, fencing, the watchdog, quarantine) holds per bot.
 *
 * Which process serves which bot is decided by relay.cursor's lease, as always; this loop only
 * chooses which leases to try for. Every second it beats in relay.ingress_members, computes its
 * fair share of the enabled bots from the live pollers' caps (fleet-share.ts), gives up bots above
 * its share (a graceful stop releases the lease, so another poller takes it at its next tick) and
 * starts units for bots whose lease is free while it is under its share. A dead poller's leases
 * and membership expire after LEASE_TTL; the survivors' shares grow then and they take its bots.
 *
 * A bot is one item: a token Telegram refuses (401) stops that bot's unit until its registration
 * changes; a unit that crashes or stalls is started again after a pause; neither touches the
 * other bots.
 */
import type { Pool } from 'pg';
import type { Registry } from 'prom-client';
import type { BotWatch, ServedBot } from '../bots/watch';
import { errorMessage } from '../errors';
import { every, type Ticker } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { ingressMetrics, observeIngress } from '../observability/metrics';
import { createBotApiClient, type BotApiClient } from '../telegram';
import type { IngressEvents } from './events';
import { botsWithFreeLease, memberBeat, memberLeave } from './fleet-queries';
import { fairShare } from './fleet-share';
import type { PollerExit } from './poller';

/** How often the fleet loop beats and rebalances. */
export const FLEET_TICK_MS = 1_000;
/** How long a bot whose unit crashed or stalled waits before it is served again. */
export const FLEET_RESTART_DELAY_MS = 5_000;

/** One bot's ingress as the fleet runs it: its poller, or its webhook route on the shared server. */
export interface FleetUnit {
  start(): void;
  /** Finishes what is in flight and releases the lease. Idempotent. */
  stop(): Promise<void>;
  /** Resolves when the unit ends: after stop(), or by itself (401, crash, stall). */
  readonly done: Promise<PollerExit>;
  readonly events: IngressEvents;
  holdsLease(): boolean;
  /** What keeps the bot from being served although its lease is held (Telegram cannot deliver to its webhook). */
  problem?(): string | null;
}

/** Makes `bot`'s unit: it calls Telegram through `api` (one client per bot) and logs to `logger`. */
export type FleetUnitFactory = (bot: ServedBot, api: BotApiClient, logger: Logger) => FleetUnit;

export interface FleetOptions {
  pool: Pool;
  owner: string;
  logger: Logger;
  bots: BotWatch;
  apiRoot?: string;
  /** POLLER_MAX_BOTS. */
  maxBots: number;
  leaseTtlMs: number;
  unit: FleetUnitFactory;
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
  unit: FleetUnit;
  api: BotApiClient;
  startedAt: number;
  stopping?: Promise<void>;
}

export interface FleetStatus {
  /** Bots this process has a unit for, whether it holds each one's lease, and a problem the owner sees. */
  polling: { botId: string; owner: boolean; problem?: string }[];
  /** Its share now. */
  share: number;
  /** Bots it does not poll on purpose, and why. */
  benched: { botId: string; why: string }[];
}

export interface Fleet {
  start(): Promise<void>;
  /** Stops every unit (each finishes its batch or deliveries and releases its lease) and leaves the membership. */
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
  // a unit still in standby this long after it started lost the race for its lease: give the slot back
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
    const unit = opts.unit(bot, api, botLogger);
    const r: Running = { bot, unit, api, startedAt: Date.now() };
    running.set(bot.id, r);
    if (opts.metrics) observeIngress(opts.metrics, bot.id, unit);
    unit.events.on('batch', (e) => {
      if (e.result === 'committed' && e.stored > 0) for (const fn of stored) fn();
    });
    void unit.done.then((exit) => ended(r, exit));
    unit.start();
  };

  /** A unit ended: asked to (nothing to do) or by itself (bench the bot, say why). */
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
      r.stopping = r.unit.stop();
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
      else if (!r.unit.holdsLease() && now - r.startedAt > standbyGraceMs) void stopBot(r, 'another poller holds it');
    }
    share = fairShare(served.size, caps, opts.maxBots);
    const active = [...running.values()].filter((r) => !r.stopping);
    if (active.length > share) {
      // those without their lease yet go first: giving them up disturbs nothing
      active.sort((a, b) => Number(a.unit.holdsLease()) - Number(b.unit.holdsLease()));
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
      polling: [...running.values()].map((r) => {
        const problem = r.unit.problem?.() ?? undefined;
        return { botId: r.bot.id, owner: r.unit.holdsLease(), ...(problem ? { problem } : {}) };
      }),
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
