import path from 'node:path';
import type { Config } from '../config';
import type { Logger } from '../observability/logger';
import { migrateLedger } from './boss-schema';
import { startEmbeddedPostgres } from './embedded';
import { migrate, MIGRATION_LOCK_KEY } from './migrate';
import { createPool, timeoutsFromConfig } from './pool';
import { assertSessionLevel, PoolModeError } from './pool-mode';

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

/** What resolveDatabase reads: where the database is, and how it pools connections. */
export type DatabaseConfig = Pick<Config, 'DATABASE_URL' | 'DATA_DIR'> &
  Partial<
    Pick<
      Config,
      | 'DB_POOL_MODE'
      | 'DATABASE_DIRECT_URL'
      | 'DB_STATEMENT_TIMEOUT'
      | 'DB_LOCK_TIMEOUT'
      | 'DB_IDLE_IN_TRANSACTION_TIMEOUT'
    >
  >;

/**
 * The database this process uses: `DATABASE_URL`, or an embedded PostgreSQL with its data in
 * `$DATA_DIR/postgres` (started here, or joined if another tg-relay process already runs it).
 * With DB_POOL_MODE=session (the default), a DATABASE_URL that leads to a transaction pooler is
 * refused here, before any component starts (PoolModeError, exit 78: libs/db/pool-mode.ts).
 */
export async function resolveDatabase(config: DatabaseConfig, logger?: Logger): Promise<Database> {
  if (config.DATABASE_URL) {
    if ((config.DB_POOL_MODE ?? 'session') === 'session')
      await assertSessionLevel(config.DATABASE_URL, {
        variable: 'DATABASE_URL',
        timeouts: timeoutsFromConfig(config),
        logger,
      });
    return { url: config.DATABASE_URL, kind: 'external', stop: () => Promise.resolve() };
  }
  // the default folder may move where the postgres user can reach it (as root); an explicit one may not
  const relocatable = config.DATA_DIR === DATA_DIR_DEFAULT;
  const pg = await startEmbeddedPostgres({ dataDir: path.join(config.DATA_DIR, 'postgres'), logger, relocatable });
  logger?.info({ port: pg.port, owned: pg.owned, dataDir: pg.dataDir }, 'embedded PostgreSQL ready');
  return { url: pg.url, kind: 'embedded', dataDir: pg.dataDir, stop: pg.stop };
}

/**
 * The connection migrations run on: DATABASE_DIRECT_URL when set (checked to be session-level),
 * else the database itself, except behind a transaction pooler (DB_POOL_MODE=transaction), where a
 * session advisory lock would not serialise replicas migrating at once: that needs
 * DATABASE_DIRECT_URL, and its absence is a PoolModeError naming it.
 */
export async function migrationDatabaseUrl(db: Database, config: DatabaseConfig, logger?: Logger): Promise<string> {
  if (config.DATABASE_DIRECT_URL) {
    await assertSessionLevel(config.DATABASE_DIRECT_URL, { variable: 'DATABASE_DIRECT_URL', logger });
    return config.DATABASE_DIRECT_URL;
  }
  if (db.kind === 'external' && config.DB_POOL_MODE === 'transaction')
    throw new PoolModeError(
      'DB_POOL_MODE=transaction: migrations need a session-level connection (a session advisory lock keeps replicas ' +
        "that start at once from migrating together, and pg-boss's schema step runs outside one transaction): " +
        'set DATABASE_DIRECT_URL to a URL that reaches PostgreSQL directly, bypassing the pooler',
    );
  return db.url;
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
