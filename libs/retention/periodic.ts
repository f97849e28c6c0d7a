/**
 * Periodic pruning in workers: every PRUNE_EVERY, the replica that gets the advisory lock runs one
 * pass; the others skip that tick. The lock is a session lock on a dedicated connection held for
 * the whole pass (a crashed replica's lock goes with its connection), so at most one pass runs in
 * the fleet at a time. `tg-relay prune` from cron does not take it: concurrent passes are safe
 * (SKIP LOCKED), the lock only keeps a fleet from doing the same work N times.
 */
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import { withClient } from '../db/pool';
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
  const signal = { aborted: false };
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<PruneResult | null> | undefined;

  const once = (): Promise<PruneResult | null> =>
    withClient(opts.pool, async (lock, state) => {
      const { rows } = await lock.query<{ got: boolean }>('select pg_try_advisory_lock($1) as got', [PRUNE_LOCK_KEY]);
      if (!rows[0].got) return null;
      try {
        return await runPrune(opts.pool, { ...opts.prune, trigger: 'periodic', logger: opts.logger, signal });
      } finally {
        await lock.query('select pg_advisory_unlock($1)', [PRUNE_LOCK_KEY]).catch(() => state.markBroken());
      }
    });

  const tick = () => {
    running ??= once()
      .catch((err) => {
        opts.logger.warn({ err }, 'prune pass failed; retried at the next tick');
        return null;
      })
      .finally(() => (running = undefined));
    return running;
  };

  const schedule = () => {
    if (signal.aborted) return;
    // a little jitter so replicas started together do not all wake at the same instant
    timer = setTimeout(() => void tick().finally(schedule), opts.everyMs * (0.9 + Math.random() * 0.2));
    timer.unref?.();
  };

  return {
    start: () => {
      if (timer || signal.aborted) return;
      schedule();
    },
    stop: async () => {
      signal.aborted = true;
      if (timer) clearTimeout(timer);
      await running;
    },
    tick,
  };
}
