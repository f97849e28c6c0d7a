import path from 'node:path';
import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import { migrateLedger } from './boss-schema';
import { startEmbeddedPostgres } from './embedded';
import { migrate, MIGRATION_LOCK_KEY } from './migrate';
import { createPool } from './pool';

/** DATA_DIR's default (libs/config/schema.ts). */
const DATA_DIR_DEFAULT = '.data';

export interface Database {
  url: string;
  /** 'external' when DATABASE_URL is set, else 'embedded'. */
  kind: 'external' | 'embedded';
  /** The embedded server's data folder (where it really is: as root it may be relocated). */
  dataDir?: string;
  /** Stops the embedded server if this process started it; no-op otherwise. Idempotent. */
  stop(): Promise<void>;
}

/**
 * The database this process uses: `DATABASE_URL`, or an embedded PostgreSQL with its data in
 * `$DATA_DIR/postgres` (started here, or joined if another tg-relay process already runs it).
 */
export async function resolveDatabase(
  config: Pick<Config, 'DATABASE_URL' | 'DATA_DIR'>,
  logger?: Logger,
): Promise<Database> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, kind: 'external', stop: () => Promise.resolve() };
  // the default folder may move where the postgres user can reach it (as root); an explicit one may not
  const relocatable = config.DATA_DIR === DATA_DIR_DEFAULT;
  const pg = await startEmbeddedPostgres({ dataDir: path.join(config.DATA_DIR, 'postgres'), logger, relocatable });
  logger?.info({ port: pg.port, owned: pg.owned, dataDir: pg.dataDir }, 'embedded PostgreSQL ready');
  return { url: pg.url, kind: 'embedded', dataDir: pg.dataDir, stop: pg.stop };
}

/** Migrations run without statement or lock limits: creating an index on a big table is legitimately slow. */
const MIGRATE_TIMEOUTS = { statementMs: 0, lockMs: 0 };

/**
 * Our SQL migrations, then the job ledger's schema and queues (migrateLedger, libs/db/boss-schema.ts).
 * Safe to run from many processes at once.
 */
export async function migrateAll(url: string, logger?: Logger): Promise<{ applied: number[] }> {
  const pool = createPool(url, { max: 2, applicationName: 'tg-relay:migrate', timeouts: MIGRATE_TIMEOUTS });
  // the ledger's queue creation is not serialised: concurrent callers deadlock creating the same
  // queue's partition (seen with 5 replicas starting at once). One session lock covers the whole step.
  const lock = await pool.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY + 1]);
    const applied = await migrate(pool, { logger });
    await migrateLedger(url, lock, { logger, timeouts: MIGRATE_TIMEOUTS });
    return { applied };
  } finally {
    await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY + 1]).catch(() => undefined);
    lock.release();
    await pool.end();
  }
}
