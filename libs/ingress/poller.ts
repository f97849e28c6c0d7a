/**
 * The durable getUpdates loop of one bot, put together from its parts:
 *   - libs/ingress/poll-loop.ts: the state machine (standby → owner: getUpdates → ONE fenced
 *     transaction → offset), and what it does about each failure;
 *   - libs/ingress/get-updates.ts: the getUpdates call, its timeout and abort, what its failures mean;
 *   - libs/ingress/lease.ts and lease-standby.ts: the fenced lease, taken, renewed and released;
 *   - libs/ingress/watchdog.ts: the stall detector that ends a poller stuck on an await.
 * The loop runs through `Lifecycle`: started once, stopped once for every caller.
 */
import { errorMessage } from '../errors';
import type { JobLedger } from '../db/boss';
import { DB_CONNECT_TIMEOUT_MS } from '../db/pool';
import type { Pool } from 'pg';
import { Lifecycle } from '../lifecycle/lifecycle';
import { waitAtMost } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import type { BotApiClient } from '../telegram';
import {
  BackoffPolicy,
  backoffDelay,
  INGRESS_BACKOFF_BASE_MS_DEFAULT,
  INGRESS_BACKOFF_CAP_MS_DEFAULT,
} from './backoff';
import { Episodes } from './episodes';
import { createIngressEvents, type IngressEvents } from './events';
import { createGetUpdatesTransport } from './get-updates';
import { createLease } from './lease';
import type { DecodePolicy } from './plan-batch';
import { PollerExit, PollerStatus, PollLoop } from './poll-loop';
import { Watchdog } from './watchdog';

export { GET_UPDATES_LIMIT } from './get-updates';
export type { PollerExit, PollerStatus } from './poll-loop';

export interface PollerOptions {
  pool: Pool;
  boss: JobLedger;
  api: BotApiClient;
  botId: string;
  /** This replica's lease owner id (unique per process). */
  owner: string;
  logger: Logger;
  leaseTtlMs: number;
  pollTimeoutMs: number;
  decodePolicy: DecodePolicy;
  allowedChatIds: readonly string[];
  dispatchUnauthorized?: boolean;
  backoff?: Partial<BackoffPolicy>;
  random?: () => number;
  /** On acquiring the lease, remove a webhook left from INGRESS=webhook (default true). */
  deleteWebhookOnAcquire?: boolean;
  /** Watchdog threshold (default 2 × pollTimeoutMs, at least WATCHDOG_MIN_MS); `false` turns it off. */
  watchdogMs?: number | false;
  /** Injectable clock for the watchdog (default Date.now). */
  now?: () => number;
}

/** How long the watchdog waits for the lease release of a stalled poller before giving up on it. */
const WATCHDOG_RELEASE_TIMEOUT_MS = 2_000;
/**
 * The shortest stall window: one database call may wait a pool connect's timeout before it fails
 * (a database restarting, a pool waiting for a client), and that is a backoff, not a stall. Below
 * it, a short POLL_TIMEOUT made a restart of a few seconds exit the poller.
 */
export const WATCHDOG_MIN_MS = DB_CONNECT_TIMEOUT_MS + 2_000;

export interface Poller {
  start(): void;
  /** Finishes the in-flight batch (if any), releases the lease. Idempotent, safe before start(). */
  stop(): Promise<void>;
  /** Resolves when the loop ends: after stop(), or by itself on 401. */
  readonly done: Promise<PollerExit>;
  status(): PollerStatus;
  /** getUpdates results and batch transactions, for observers (metrics: `observeIngress`). */
  readonly events: IngressEvents;
  /** Holds the lease now (polls as the owner). */
  holdsLease(): boolean;
}

export function createPoller(opts: PollerOptions): Poller {
  const { logger } = opts;
  const events = createIngressEvents(logger);
  const policy: BackoffPolicy = {
    baseMs: opts.backoff?.baseMs ?? INGRESS_BACKOFF_BASE_MS_DEFAULT,
    capMs: opts.backoff?.capMs ?? INGRESS_BACKOFF_CAP_MS_DEFAULT,
  };
  const random = opts.random ?? Math.random;
  const lifecycle = new Lifecycle('poller');
  let resolveDone!: (e: PollerExit) => void;
  const done = new Promise<PollerExit>((r) => (resolveDone = r));

  const lease = createLease({
    pool: opts.pool,
    botId: opts.botId,
    owner: opts.owner,
    ttlMs: opts.leaseTtlMs,
    logger,
    onLost: () => loop.leaseLost(),
  });
  const watchdog: Watchdog = new Watchdog({
    watchdogMs:
      opts.watchdogMs === false ? null : (opts.watchdogMs ?? Math.max(2 * opts.pollTimeoutMs, WATCHDOG_MIN_MS)),
    now: opts.now ?? Date.now,
    logger,
    watching: () => !lifecycle.signal.aborted && loop.state === 'polling',
    where: () => ({ generation: lease.fence()?.generation, offset: loop.offset }),
    onStall: (message) => stalled(message),
  });
  const loop: PollLoop = new PollLoop({
    ...opts,
    allowedChatIds: new Set(opts.allowedChatIds.map(String)),
    dispatchUnauthorized: opts.dispatchUnauthorized ?? false,
    deleteWebhookOnAcquire: opts.deleteWebhookOnAcquire !== false,
    lease,
    events,
    getUpdates: createGetUpdatesTransport({ ...opts, events }),
    watchdog,
    episodes: new Episodes(logger),
    backoff: (attempt) => backoffDelay(attempt, policy, random),
  });

  const stop = (): Promise<void> => {
    // aborts the long poll in flight (the lifecycle's signal) and cuts the current wait short
    const stopped = lifecycle.stop(async () => {
      await lease.release(); // held only when stop() came before start()
      resolveDone(loop.exit);
    });
    loop.interrupt();
    return stopped;
  };

  /** The watchdog tripped: end with `stalled` now, without waiting for a loop that may never return. */
  function stalled(message: string): void {
    loop.exit = { reason: 'stalled', message };
    void stop();
    void waitAtMost(
      lease.release().catch(() => undefined),
      WATCHDOG_RELEASE_TIMEOUT_MS,
    ).then(() => resolveDone(loop.exit));
  }

  async function run(signal: AbortSignal): Promise<void> {
    try {
      await loop.run(signal);
      resolveDone(loop.exit);
    } catch (err) {
      logger.fatal({ err }, 'poller loop crashed');
      resolveDone({ reason: 'crashed', message: `poller loop crashed: ${errorMessage(err) ?? String(err)}` });
    }
  }

  return {
    start() {
      if (lifecycle.state !== 'new') return;
      watchdog.start();
      lifecycle.start(run);
    },
    stop,
    done,
    events,
    holdsLease: () => lease.fence() !== null,
    status: () => ({
      state: loop.state,
      generation: lease.fence()?.generation ?? null,
      offset: loop.offset,
      haltedReason: loop.haltedReason,
      batches: loop.batches,
      updates: loop.updates,
    }),
  };
}
