import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import type { JobLedger } from '../db/boss';
import { withTransaction } from '../db/pool';
import type { Logger } from '../observability/logger';
import { auditRow, releasedEntry } from './audit-row';
import { bossJobsReschedule } from './boss-jobs';
import { Clock, jsNow, sqlNow } from './clock';
import { notifyWork } from './enqueue';
import { QueueError, shortError } from './errors';
import type { HeldClaims } from './held-claims';
import type { JobKind } from './job-kind';
import type { WorkerEvents } from './events';
import { attemptsInsert } from './queries';

export interface ShutdownDeps<Row> {
  pool: Pool;
  boss: JobLedger;
  logger: Logger;
  workerId: string;
  clock?: Clock;
  claims: HeldClaims<Row>;
  stats: { released: number };
  /** Told of each released attempt (metrics subscribe). */
  events?: WorkerEvents;
  /** The outcome writer: given up past the deadline, waited for otherwise. */
  writer: { abandon(): void; idle(): Promise<void> };
  /** Heartbeats and sweeps end after the claims are settled or released. */
  keeper: { stop(): Promise<void> };
}

/**
 * The worker's end, once its claim loop has stopped claiming: in-flight attempts may finish until
 * `deadline` (a performance.now() time); the rest are aborted and their claims given back, so
 * another worker takes them at once instead of after stale recovery.
 */
export async function shutDownWorker<Row, Effects>(
  kind: JobKind<Row, Effects>,
  deps: ShutdownDeps<Row>,
  deadline: number,
): Promise<void> {
  const { claims, logger } = deps;
  if (!(await claims.allDone(deadline - performance.now()))) {
    await releaseRunning(kind, deps);
    // outcomes already being written get a short grace; past it they stay delivering (stale recovery)
    if (!(await claims.allDone(Math.max(1_000, deadline - performance.now())))) {
      deps.writer.abandon();
      logger.warn(
        { inFlight: claims.size },
        'gave up writing some outcomes at shutdown; stale recovery will redeliver them',
      );
      claims.clear();
    }
  }
  await deps.keeper.stop();
  await deps.writer.idle();
  claims.dropWaiters();
}

/** Aborts the attempts still running and gives their claims back, not counted, in one transaction. */
async function releaseRunning<Row, Effects>(kind: JobKind<Row, Effects>, deps: ShutdownDeps<Row>): Promise<void> {
  const { claims, logger, clock } = deps;
  const toRelease = [...claims.values()].filter((h) => h.phase === 'running');
  if (toRelease.length === 0) return;
  for (const h of toRelease) {
    h.phase = 'released';
    h.ctl.abort(new QueueError('RELAY_QUEUE_STOPPED', 'worker stopping'));
  }
  try {
    const now = sqlNow(clock);
    const at = jsNow(clock);
    await withTransaction(deps.pool, async (db) => {
      const rows = await kind.store.release(
        db,
        toRelease.map((h) => ({ id: h.job.id, claimId: h.job.claimId })),
        now,
      );
      await bossJobsReschedule(
        deps.boss,
        db,
        kind.queue,
        rows.filter((r) => r.jobId).map((r) => ({ jobId: r.jobId!, startAfter: r.nextAttemptAt! })),
        { outcome: 'released' },
      );
      const released = new Set(rows.map((r) => r.claimId));
      await attemptsInsert(
        db,
        toRelease
          .filter((h) => released.has(h.job.claimId))
          .map((h) => auditRow(kind.store.subject, deps.workerId, h.job, releasedEntry(at))),
      );
      await notifyWork(db, kind.queue);
    });
    deps.stats.released += toRelease.length;
    for (const h of toRelease)
      deps.events?.emit('unsettled', { queue: kind.queue, botId: h.job.botId, outcome: 'released' });
    logger.info({ released: toRelease.length }, 'released unfinished jobs');
  } catch (err) {
    logger.warn(
      { err: { message: shortError(err) }, count: toRelease.length },
      'could not release unfinished jobs; stale recovery will return them',
    );
  } finally {
    for (const h of toRelease) claims.delete(h.job.claimId);
  }
}
