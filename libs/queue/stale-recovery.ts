import type { JobLedger } from '../db/boss';
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import type { Clock } from './clock';
import type { JobKind } from './job-kind';
import { rescueOnce, rescueTargetOf } from './rescuer';

/**
 * One stale sweep of one job kind's table (see rescuer.ts, which this delegates to). Kept for
 * callers of the earlier API; new code creates a Rescuer. Returns how many claims were recovered.
 */
export async function recoverStaleOnce(opts: {
  pool: Pool;
  boss: JobLedger;
  kind: Pick<JobKind<unknown>, 'queue' | 'store'>;
  staleMs: number;
  maxAttempts: number;
  /** Who recovers (recorded in the audit details). */
  workerId: string;
  clock?: Clock;
  logger?: Logger;
}): Promise<number> {
  return rescueOnce(opts, rescueTargetOf(opts.kind), {
    staleMs: opts.staleMs,
    maxAttempts: opts.maxAttempts,
    workerId: opts.workerId,
  });
}
