import PgBoss from 'pg-boss';

export type { PgBoss };

/** The pg-boss queues tg-relay uses; one per job kind. */
export const QUEUES = {
  capture: 'capture.deliver',
  dispatch: 'update.dispatch',
  outbound: 'outbound.send',
} as const;
export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

export const BOSS_SCHEMA = 'pgboss';

/**
 * A pg-boss instance for enqueueing and fetching with `{ db }`. Its own `work()` loop, cron and
 * maintenance are not used on the delivery path (see libs/queue for why), so `supervise` and
 * `schedule` are off unless asked for. Retries and expiry are decided by our rows, not by pg-boss:
 * queues are created with retryLimit 0.
 */
export function createBoss(connectionString: string, opts: { supervise?: boolean; max?: number; applicationName?: string } = {}): PgBoss {
  const boss = new PgBoss({
    connectionString,
    schema: BOSS_SCHEMA,
    supervise: opts.supervise ?? false,
    schedule: false,
    migrate: true,
    max: opts.max ?? 4,
    application_name: opts.applicationName ?? 'tg-relay:boss',
  } as PgBoss.ConstructorOptions);
  boss.on('error', () => undefined); // surfaced through our own calls; never crash on a background error
  return boss;
}

/** Creates (idempotently) the three queues. Safe when several processes run it at once. */
export async function ensureQueues(boss: PgBoss): Promise<void> {
  for (const name of Object.values(QUEUES)) {
    await boss.createQueue(name, { name, policy: 'standard', retryLimit: 0, expireInSeconds: 23 * 3600, retentionMinutes: 30 * 24 * 60 } as PgBoss.Queue);
  }
}
