import { every, Ticker } from '../lifecycle/timers';
import { beginStatement, Pool, poolSettingsOf, withClient } from './pool';

/** The longest gap between the statements that keep a lock transaction from looking idle. */
const LOCK_TICK_MAX_MS = 10_000;

/**
 * Runs `fn` while this process holds advisory lock `key`; resolves to null at once, without running
 * `fn`, when another session holds it. The lock lives on a dedicated connection for the whole of
 * `fn` (which uses the pool as it likes), so a process that dies loses it with its connection.
 *
 * - session mode: a session lock (pg_try_advisory_lock), unlocked at the end.
 * - transaction mode: a session lock would stay behind on a server session the pooler lends to
 *   others next, so the lock is a transaction lock (pg_try_advisory_xact_lock) in a transaction kept
 *   open for the whole of `fn`; the pooler keeps that server session ours until it ends. A cheap
 *   statement every third of idle_in_transaction_session_timeout (at most every 10 s) keeps the
 *   server from ending it while `fn` runs; a process that freezes for longer loses the lock, as a
 *   frozen session-mode process does when its connection is dropped.
 */
export async function withTryAdvisoryLock<T>(pool: Pool, key: number, fn: () => Promise<T>): Promise<T | null> {
  const { mode, timeouts } = poolSettingsOf(pool);
  return withClient(pool, async (lock, state) => {
    if (mode === 'session') {
      const { rows } = await lock.query<{ got: boolean }>('select pg_try_advisory_lock($1) as got', [key]);
      if (!rows[0].got) return null;
      try {
        return await fn();
      } finally {
        await lock.query('select pg_advisory_unlock($1)', [key]).catch(() => state.markBroken());
      }
    }
    await lock.query(beginStatement(pool));
    let ticker: Ticker | undefined;
    try {
      const { rows } = await lock.query<{ got: boolean }>('select pg_try_advisory_xact_lock($1) as got', [key]);
      if (!rows[0].got) return null;
      const idle = timeouts.idleInTransactionMs;
      const everyMs = idle > 0 ? Math.max(1, Math.min(LOCK_TICK_MAX_MS, Math.floor(idle / 3))) : LOCK_TICK_MAX_MS;
      // a keep-alive still waiting for its answer is enough: the next one is skipped, not queued
      // behind it on the same connection
      ticker = every(everyMs, () => lock.query('select 1'), { unref: true, onError: () => state.markBroken() });
      return await fn();
    } finally {
      await ticker?.stop();
      await lock.query('commit').catch(() => state.markBroken());
    }
  });
}
