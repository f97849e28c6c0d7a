import type { Pool, PoolClient } from 'pg';
import type { Queryable } from '../db/pool';
import type { JobLedger } from '../db/boss';
import { withTransaction } from '../db/pool';
import type { Logger } from '../observability/logger';
import type { AttemptTransaction } from './attempt-transaction';
import { auditRow, settledEntry } from './audit-row';
import { bossJobsComplete, bossJobsFail, bossJobsReschedule } from './boss-jobs';
import { Clock, sqlNow } from './clock';
import type { WorkerEvents } from './events';
import type { Finished } from './held-claims';
import type { JobKind, SettledRow, Settlement } from './job-kind';
import { settlesInOneStatement } from './claim-sql';
import { attemptsInsert } from './queries';

/** The counters the settler keeps (a part of the worker's stats). */
export interface SettleStats {
  delivered: number;
  retried: number;
  failed: number;
  fenced: number;
}

/** Writes a batch of finished attempts in one outcome transaction. */
export interface Settler<Row, Effects> {
  /** Settles the rows (fenced by claim id), mirrors their ledger jobs and appends their audit rows. */
  write(batch: Finished<Row, Effects>[]): Promise<void>;
  /**
   * Writes one outcome the same way on the attempt's own transaction and commits it (rolls it back
   * when the claim was lost). Rejects, with the transaction rolled back, when that failed.
   */
  writeOwn(f: Finished<Row, Effects>, tx: AttemptTransaction): Promise<void>;
}

export interface SettlerDeps {
  pool: Pool;
  boss: JobLedger;
  logger: Logger;
  workerId: string;
  clock?: Clock;
  stats: SettleStats;
  /** Told of every attempt whose outcome landed (metrics subscribe). */
  events: WorkerEvents;
  /** A retry was settled: it may be due sooner than the claim loop's current wait. */
  onRetrySettled: () => void;
}

export function createSettler<Row, Effects>(kind: JobKind<Row, Effects>, deps: SettlerDeps): Settler<Row, Effects> {
  const { pool, boss, logger, workerId, clock, stats } = deps;

  async function mirrorJobs(db: PoolClient, settled: SettledRow[], batch: Finished<Row, Effects>[]): Promise<void> {
    const delivered = settled.filter((s) => s.state === 'delivered' && s.jobId).map((s) => s.jobId!);
    await bossJobsComplete(boss, db, kind.queue, delivered);
    const pending = settled.filter((s) => s.state === 'pending' && s.jobId);
    await bossJobsReschedule(
      boss,
      db,
      kind.queue,
      pending.map((s) => ({ jobId: s.jobId!, startAfter: s.nextAttemptAt! })),
      { outcome: 'retry' },
    );
    const reasons = new Map(batch.map((f) => [f.job.claimId, f.decision.settlement.failedReason ?? 'failed']));
    const failedByReason = new Map<string, string[]>();
    for (const s of settled) {
      if (s.state !== 'failed' || !s.jobId) continue;
      const reason = reasons.get(s.claimId) ?? 'failed';
      failedByReason.set(reason, [...(failedByReason.get(reason) ?? []), s.jobId]);
    }
    for (const [reason, ids] of failedByReason) await bossJobsFail(boss, db, kind.queue, ids, { reason });
  }

  function count(batch: Finished<Row, Effects>[], landed: Set<string>): void {
    for (const f of batch) {
      if (!landed.has(f.job.claimId)) {
        stats.fenced++;
        deps.events.emit('unsettled', { queue: kind.queue, botId: f.job.botId, outcome: 'fenced' });
        logger.warn(
          { id: f.job.id, jobId: f.job.jobId, outcome: f.decision.auditOutcome },
          'claim was lost before the outcome was written; the redelivery owns the row',
        );
        continue;
      }
      if (f.decision.settlement.state === 'delivered') stats.delivered++;
      else if (f.decision.settlement.state === 'pending') stats.retried++;
      else stats.failed++;
      deps.events.emit('settled', {
        queue: kind.queue,
        botId: f.job.botId,
        state: f.decision.settlement.state,
        durationMs: f.durationMs,
        status: f.outcome.status,
      });
    }
  }

  /** The batch's settlements; for a store that mirrors in its settle, with the ledger move and audit rows. */
  function settlements(batch: Finished<Row, Effects>[]): Settlement<Effects>[] {
    if (!kind.store.mirrorsInSettle) return batch.map((f) => f.decision.settlement);
    return batch.map((f) => ({
      ...f.decision.settlement,
      mirror: {
        queue: kind.queue,
        failOutput: { reason: f.decision.settlement.failedReason ?? 'failed' },
        landed: auditRow(kind.store.subject, workerId, f.job, settledEntry(f, true, undefined)),
        fenced: auditRow(kind.store.subject, workerId, f.job, settledEntry(f, false, undefined)),
      },
    }));
  }

  /** The outcome transaction's body: settle, ledger mirror, audit rows (and the kind's effects, in settle). */
  async function writeIn(
    db: Queryable,
    batch: Finished<Row, Effects>[],
    items = settlements(batch),
  ): Promise<SettledRow[]> {
    const settled = await kind.store.settle(db, items, sqlNow(clock));
    if (kind.store.mirrorsInSettle) return settled;
    const client = db as PoolClient;
    await mirrorJobs(client, settled, batch);
    const landed = new Set(settled.map((s) => s.claimId));
    const byClaim = new Map(settled.map((s) => [s.claimId, s]));
    await attemptsInsert(
      client,
      batch.map((f) =>
        auditRow(
          kind.store.subject,
          workerId,
          f.job,
          settledEntry(f, landed.has(f.job.claimId), byClaim.get(f.job.claimId)),
        ),
      ),
    );
    return settled;
  }

  function after(batch: Finished<Row, Effects>[], settled: SettledRow[]): void {
    // a retry may be due sooner than the loop's current wait (full jitter can give ~0 ms)
    if (settled.some((s) => s.state === 'pending')) deps.onRetrySettled();
    count(batch, new Set(settled.map((s) => s.claimId)));
  }

  async function write(batch: Finished<Row, Effects>[]): Promise<void> {
    const items = settlements(batch);
    // one statement (settle + ledger + audit) is atomic by itself: no BEGIN/COMMIT round trips
    const settled = settlesInOneStatement(kind.store, items)
      ? await writeIn(pool, batch, items)
      : await withTransaction(pool, (db) => writeIn(db, batch, items));
    after(batch, settled);
  }

  return {
    write,
    async writeOwn(f, tx) {
      let settled: SettledRow[];
      try {
        settled = await writeIn(tx.client, [f]);
      } catch (err) {
        await tx.end(false).catch(() => undefined);
        throw err;
      }
      if (settled.length > 0) {
        await tx.end(true);
        after([f], settled);
        return;
      }
      // a claim lost meanwhile: the redelivery owns the row, and this attempt's own writes go with its
      // outcome; its audit row (fenced) is written without them
      await tx.end(false);
      await write([f]);
    },
  };
}
