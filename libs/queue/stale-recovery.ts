import type { JobLedger } from '../db/boss';
import type { Pool } from 'pg';
import { withTransaction } from '../db/pool';
import type { Logger } from '../observability/logger';
import { bossJobsFail, bossJobsReschedule } from './boss-jobs';
import { Clock, jsNow, sqlNow } from './clock';
import { notifyWork } from './enqueue';
import type { JobKind } from './job-kind';
import { attemptsInsert } from './queries';

const SWEEP_LIMIT = 500;

/**
 * Returns claims whose heartbeat is older than `staleMs` to `pending` (due now), or to `failed` when
 * that attempt was the last of the budget — row, ledger job and an audit row per claim in one
 * transaction, then NOTIFY so idle replicas pick them up at once. The worker that held such a claim
 * can no longer write its outcome (fenced by claim id). Every worker runs this periodically; the
 * admin API can call it on demand. Returns how many claims were recovered.
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
  const { kind } = opts;
  let total = 0;
  for (;;) {
    const n = await withTransaction(opts.pool, async (db) => {
      const rows = await kind.store.recoverStale(db, { staleMs: opts.staleMs, now: sqlNow(opts.clock), limit: SWEEP_LIMIT, maxAttempts: opts.maxAttempts });
      if (rows.length === 0) return 0;
      const pending = rows.filter((r) => r.state === 'pending' && r.jobId);
      await bossJobsReschedule(
        db,
        kind.queue,
        pending.map((r) => ({ jobId: r.jobId!, startAfter: r.nextAttemptAt! })),
        { outcome: 'stale' },
      );
      const failed = rows.filter((r) => r.state === 'failed' && r.jobId).map((r) => r.jobId!);
      await bossJobsFail(opts.boss, db, kind.queue, failed, { reason: 'attempt budget spent; the last attempt went stale' });
      const at = jsNow(opts.clock);
      await attemptsInsert(
        db,
        rows.map((r) => ({
          subject: kind.store.subject,
          subject_id: r.id,
          subject_key: r.key,
          attempt: r.attempt,
          worker_id: r.workerId,
          started_at: r.startedAt ?? at,
          finished_at: at,
          duration_ms: r.startedAt ? Math.max(0, at.getTime() - new Date(r.startedAt).getTime()) : null,
          outcome: r.label ?? (r.state === 'failed' ? 'failed' : 'retry'),
          http_status: null,
          error_code: 'RELAY_STALE_CLAIM',
          error: 'the worker stopped heartbeating (died or lost the database); claim recovered',
          details: { recoveredBy: opts.workerId, lastHeartbeatAt: r.heartbeatAt, staleAfterMs: opts.staleMs },
        })),
      );
      await notifyWork(db, kind.queue);
      opts.logger?.warn({ queue: kind.queue, recovered: rows.length, failed: failed.length }, 'recovered stale claims');
      return rows.length;
    });
    total += n;
    if (n < SWEEP_LIMIT) return total;
  }
}
