/**
 * The close of alert windows in workers: every tick, the summaries of the windows that are over and
 * held failures back (relay.outbound_alert_windows_flush). A storm that stops leaves its last
 * failures held back, and no later failure may come to close the window: without this tick they
 * would never be told. Every worker may tick; the SQL function locks each window, so replicas
 * ticking together send one summary, not several.
 */
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import { Lifecycle } from '../lifecycle/lifecycle';
import { every } from '../lifecycle/timers';
import { outboundAlertWindowsDue, outboundAlertWindowsFlush } from './queries';

/** The tick: a window's summary goes out at most this long after the window is over. */
export const ALERT_FLUSH_MAX_EVERY_MS = 5_000;

/** How often to look for closed windows: a quarter of the window, between 250 ms and 5 s. */
export const alertFlushEveryMs = (windowMs: number): number =>
  Math.min(ALERT_FLUSH_MAX_EVERY_MS, Math.max(250, Math.round(windowMs / 4)));

export interface AlertFlusher {
  start(): void;
  /** Stops the timer after a tick under way. Idempotent; safe before start. */
  stop(): Promise<void>;
  /** One pass now (tests): the ids of the summaries enqueued. */
  tick(): Promise<string[]>;
}

export function createAlertFlusher(opts: { pool: Pool; logger: Logger; windowMs: number }): AlertFlusher {
  const life = new Lifecycle('alert window flush');
  const tick = async (): Promise<string[]> => {
    // one window per transaction: a transaction holding the locks of several operators' chats
    // could deadlock with a settle transaction taking them in another order
    const ids: string[] = [];
    for (const w of await outboundAlertWindowsDue(opts.pool))
      ids.push(...(await outboundAlertWindowsFlush(opts.pool, opts.windowMs, w)));
    if (ids.length > 0) opts.logger.info({ alerts: ids.length }, 'alert windows closed with a summary');
    return ids;
  };
  return {
    start: () => {
      life.start(
        (signal) =>
          every(alertFlushEveryMs(opts.windowMs), tick, {
            signal,
            from: 'end',
            jitter: 0.1,
            unref: true,
            onError: (err) => opts.logger.warn({ err }, 'closing alert windows failed; retried at the next tick'),
          }).done,
      );
    },
    stop: () => life.stop(),
    tick,
  };
}
