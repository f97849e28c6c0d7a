/**
 * Keeps each domain row's ledger job in step with it, inside the caller's transaction: the engine's
 * names for the job ledger's statements (libs/db/boss.ts, where each is explained), with stored
 * output made safe (safeJson) on the way in.
 */
import type { PoolClient } from 'pg';
import type { JobLedger, QueueName } from '../db/boss';
import { safeJson } from './errors';

/** created/retry → active. Returns how many moved. */
export function bossJobsActivate(boss: JobLedger, db: PoolClient, queue: QueueName, jobIds: string[]): Promise<number> {
  return boss.activateJobs(db, queue, jobIds);
}

/** Back to the ledger's `retry` state, due at the row's next_attempt_at. */
export function bossJobsReschedule(
  boss: JobLedger,
  db: PoolClient,
  queue: QueueName,
  jobs: { jobId: string; startAfter: Date }[],
  output: Record<string, unknown>,
): Promise<number> {
  return boss.rescheduleJobs(db, queue, jobs, safeJson(output));
}

export function bossJobsComplete(boss: JobLedger, db: PoolClient, queue: QueueName, jobIds: string[]): Promise<number> {
  return boss.completeJobs(db, queue, jobIds);
}

export function bossJobsFail(
  boss: JobLedger,
  db: PoolClient,
  queue: QueueName,
  jobIds: string[],
  output: Record<string, unknown>,
): Promise<number> {
  return boss.failJobs(db, queue, jobIds, safeJson(output));
}
