/**
 * Every part of pg-boss's schema that tg-relay reads or writes directly, outside pg-boss's public
 * API — each with the reason it is not the API (libs/db/boss.ts). Pinned to pg-boss 10.4.2
 * (schema 24) by test/integration/db/boss-contract.test.ts, which checks this list against the
 * installed schema and package, runs each statement of the job ledger adapter next to pg-boss's own
 * command and compares the rows, and fingerprints the pg-boss plans the adapter reproduces.
 * Upgrading pg-boss means re-reading those plans in its src/plans.js (see docs/workers.md).
 */
export const BOSS_CONTRACT = {
  packageVersion: '10.4.2',
  schemaVersion: 24,
  /** The job states, in enum order: we compare with `< 'active'` / `< 'completed'` as pg-boss does. */
  jobStates: ['created', 'retry', 'active', 'completed', 'cancelled', 'failed'],
  /**
   * sha256 (first 16 hex digits) of the pg-boss plans (src/plans.js, schema `s`) that libs/db/boss.ts
   * reproduces: insert (insertJobs and the SQL copy), activation (fetch), complete, fail, cancel.
   */
  plans: {
    insertJobs: '9d70b79b6c1cd7f5',
    fetchNextJob: '78b664a9138795bb',
    completeJobs: 'cb8121681a6c6a3d',
    failJobsById: '44e59c9fa5bad171',
    cancelJobs: 'b730f4631ba67617',
  } as Record<string, string>,
  tables: {
    /** libs/db/boss.ts (every job statement, incl. jobsInsertSql in the ingress batch statement), sql/functions outbound_boss_job_insert. */
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
    /** sql/functions/outbound_boss_job_insert.sql and libs/db/boss.ts insertFromSql read the queue's defaults as pg-boss's insert does. */
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
