/** Ingress starts only on a migrated database: until then it waits, logging each kind of wait once. */
import { migrationStatus } from '../db/migrate';
import type { createPool } from '../db/pool';
import { sleep } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { backoffDelay, type BackoffPolicy } from './backoff';

/** Between checks of the database and its migrations: soon at first, then every few seconds. */
export const SCHEMA_WAIT_BACKOFF: BackoffPolicy = { baseMs: 250, capMs: 5_000 };

/** Waits until the database answers and every migration is applied (logged once, then retried). */
export async function waitForSchema(
  pool: ReturnType<typeof createPool>,
  logger: Logger,
  signal: AbortSignal,
): Promise<boolean> {
  let attempt = 0;
  let logged = '';
  while (!signal.aborted) {
    try {
      const s = await migrationStatus(pool);
      if (s.current) return true;
      if (logged !== 'schema')
        logger.warn({ pending: s.pending }, 'database schema not migrated yet (run tg-relay migrate); waiting');
      logged = 'schema';
    } catch (err) {
      if (logged !== 'db') logger.warn({ err }, 'database not reachable yet; waiting');
      logged = 'db';
    }
    await sleep(backoffDelay(attempt++, SCHEMA_WAIT_BACKOFF), signal);
  }
  return false;
}
