/**
 * Every part of pg-boss's schema that tg-relay reads or writes directly, outside pg-boss's public
 * API — each with the reason it is not the API. Pinned to pg-boss 10.4.2 (schema 24) by
 * test/integration/db/boss-contract.test.ts, which checks this list against the installed schema
 * and package; upgrading pg-boss means re-reading its plans.js for each entry here.
 */
export const BOSS_CONTRACT = {
  packageVersion: '10.4.2',
  schemaVersion: 24,
  /** The job states, in enum order: we compare with `< 'active'` / `< 'completed'` as pg-boss does. */
  jobStates: ['created', 'retry', 'active', 'completed', 'cancelled', 'failed'],
  tables: {
    /** libs/queue/queries.ts ACTIVATE_SQL, libs/queue/boss-jobs.ts reschedule, sql/0011 outbound_boss_job_insert, libs/queue/enqueue.ts bossJobsInsertSql (the ingress batch statement). */
    job: {
      id: 'uuid',
      name: 'text',
      data: 'jsonb',
      state: 'job_state',
      priority: 'integer',
      start_after: 'timestamp with time zone',
      started_on: 'timestamp with time zone',
      retry_count: 'integer',
      retry_limit: 'integer',
      retry_delay: 'integer',
      retry_backoff: 'boolean',
      expire_in: 'interval',
      keep_until: 'timestamp with time zone',
      singleton_key: 'text',
      singleton_on: 'timestamp without time zone',
      dead_letter: 'text',
      policy: 'text',
      output: 'jsonb',
    },
    /** sql/0011 outbound_boss_job_insert and libs/queue/enqueue.ts bossJobsInsertSql read the queue's defaults as pg-boss's insert does. */
    queue: {
      name: 'text',
      policy: 'text',
      retry_delay: 'integer',
      retry_backoff: 'boolean',
      expire_seconds: 'integer',
      retention_minutes: 'integer',
      dead_letter: 'text',
    },
    /** libs/db/boss-schema.ts copies a shared legacy schema's archived jobs (same columns as job, plus archived_on). */
    archive: { id: 'uuid', name: 'text', state: 'job_state', archived_on: 'timestamp with time zone' },
    /** libs/db/boss-schema.ts: the recorded schema version every process checks at start. */
    version: { version: 'integer' },
  } as Record<string, Record<string, string>>,
} as const;
