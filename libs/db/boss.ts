import PgBoss from 'pg-boss';
import { DbTimeouts, sessionOptions } from './pool';

export type { PgBoss };

/** The pg-boss queues tg-relay uses; one per job kind. */
export const QUEUES = {
  capture: 'capture.deliver',
  dispatch: 'update.dispatch',
  outbound: 'outbound.send',
} as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

/**
 * pg-boss's schema: our own name, not pg-boss's default `pgboss`, so a bot author's pg-boss in the
 * same database (which would start with `migrate: true` on `pgboss`) can neither migrate nor
 * maintain our job ledger. The single source of the name: every SQL statement that touches
 * pg-boss's tables interpolates it (sql/0011 has the one SQL copy, for the PL/pgSQL insert).
 */
export const BOSS_SCHEMA = 'tg_relay_boss';
/** Where tg-relay kept pg-boss before 0011; `tg-relay migrate` moves it (libs/db/boss-schema.ts). */
export const LEGACY_BOSS_SCHEMA = 'pgboss';

/**
 * A pg-boss instance for enqueueing and fetching with `{ db }`. Its own `work()` loop, cron and
 * maintenance are not used on the delivery path (see libs/queue for why), so `supervise` and
 * `schedule` are off unless asked for. Retries and expiry are decided by our rows, not by pg-boss:
 * queues are created with retryLimit 0.
 *
 * `migrate` is false unless asked for: only `tg-relay migrate` (migrateAll) migrates pg-boss's
 * schema; every other process checks the recorded version first (assertBossSchemaVersion).
 * Its pool gets the same session timeouts and TCP keepalive as ours (libs/db/pool.ts).
 */
export function createBoss(
  connectionString: string,
  opts: { supervise?: boolean; max?: number; applicationName?: string; migrate?: boolean; timeouts?: Partial<DbTimeouts> } = {},
): PgBoss {
  const boss = new PgBoss({
    connectionString,
    schema: BOSS_SCHEMA,
    supervise: opts.supervise ?? false,
    schedule: false,
    migrate: opts.migrate ?? false,
    max: opts.max ?? 4,
    application_name: opts.applicationName ?? 'tg-relay:boss',
    // pg-boss hands its whole config to pg.Pool, so the pool options below reach its connections
    ...sessionOptions(opts.timeouts),
  });
  boss.on('error', () => undefined); // surfaced through our own calls; never crash on a background error
  return boss;
}

/** Creates (idempotently) the three queues. Safe when several processes run it at once. */
export async function ensureQueues(boss: PgBoss): Promise<void> {
  for (const name of Object.values(QUEUES)) {
    await boss.createQueue(name, { name, policy: 'standard', retryLimit: 0, expireInSeconds: 23 * 3600, retentionMinutes: 30 * 24 * 60 });
  }
}
