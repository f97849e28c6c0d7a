/**
 * Periodic pruning in workers: every PRUNE_EVERY, the replica that gets the advisory lock runs one
 * pass; the others skip that tick. The lock is held on a dedicated connection for the whole pass
 * (a crashed replica's lock goes with its connection; behind a transaction pooler it is a
 * transaction lock in a transaction kept open: withTryAdvisoryLock), so at most one pass runs in
 * the fleet at a time. `tg-relay prune` from cron does not take it: concurrent passes are safe
 * (SKIP LOCKED), the lock only keeps a fleet from doing the same work N times.
 */
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import { withTryAdvisoryLock } from '../db/advisory-lock';
import { Lifecycle } from '../lifecycle/lifecycle';
import { every } from '../lifecycle/timers';
import { runPrune, PruneOptions, PruneResult } from './prune';

/** pg advisory lock key of periodic pruning (next to MIGRATION_LOCK_KEY 7_346_201_001 and +1). */
export const PRUNE_LOCK_KEY = 7_346_201_010;

export interface PeriodicPrune {
  start(): void;
  /** Stops the timer; a pass in progress ends after its current batch. Idempotent; safe before start. */
  stop(): Promise<void>;
  /** Runs one tick now (tests); null when another replica held the lock. */
  tick(): Promise<PruneResult | null>;
}

export function createPeriodicPrune(opts: {
  pool: Pool;
  logger: Logger;
  everyMs: number;
  prune: Omit<PruneOptions, 'trigger' | 'logger' | 'signal' | 'dryRun'>;
}): PeriodicPrune {
  const life = new Lifecycle('periodic pruning');
  let running: Promise<PruneResult | null> | undefined;

  const once = (): Promise<PruneResult | null> =>
    withTryAdvisoryLock(opts.pool, PRUNE_LOCK_KEY, () =>
      runPrune(opts.pool, { ...opts.prune, trigger: 'periodic', logger: opts.logger, signal: life.signal }),
    );

  // a tick asked for (tests) while a pass runs joins that pass instead of starting another
  const tick = () => {
    running ??= once()
      .catch((err) => {
        opts.logger.warn({ err }, 'prune pass failed; retried at the next tick');
        return null;
      })
      .finally(() => (running = undefined));
    return running;
  };

  return {
    start: () => {
      // the wait starts when a pass ends; a little jitter so replicas started together do not all
      // wake at the same instant
      life.start(
        (signal) =>
          every(opts.everyMs, tick, {
            signal,
            from: 'end',
            jitter: 0.1,
            unref: true,
            onError: (err) => opts.logger.warn({ err }, 'prune tick failed'),
          }).done,
      );
    },
    stop: async () => {
      await life.stop();
      await running;
    },
    tick,
  };
}
