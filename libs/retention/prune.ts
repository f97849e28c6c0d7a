/**
 * One retention pass (docs/retention.md): finished work older than RETENTION, failed work, resolved
 * quarantine rows and audit rows older than RETENTION_FAILED, each deleted with its relay.attempts
 * rows and its ledger jobs, in bounded batches of short transactions; rate-limit rows of idle chats
 * and expired handler sessions (SESSION_TTL) on every pass. Pending and in-flight rows
 * are never selected (every class names a terminal state). Safe to run from several processes at
 * once: batches take rows with FOR UPDATE SKIP LOCKED, so two passes split the work and never
 * delete a row twice.
 */
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '../db/pool';
import { sleep } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import {
  emptyCounts,
  ITEM_CLASSES,
  pruneAuditBatch,
  pruneAuditCount,
  pruneChatRateBatch,
  PruneCounts,
  pruneCutoffs,
  pruneItemBatch,
  pruneItemCount,
  pruneRunInsert,
  pruneRunsBatch,
  pruneSupersededBatch,
  pruneJetstreamRejectsBatch,
  pruneSessionsBatch,
} from './queries';

export const PRUNE_BATCH_DEFAULT = 500;

export interface PruneOptions {
  /** RETENTION in ms; null: finished work is kept for good. */
  retentionMs: number | null;
  /** RETENTION_FAILED in ms; null: failed work, resolved quarantine and audit rows are kept for good. */
  retentionFailedMs: number | null;
  /** Count what would be deleted; delete nothing, record no run. */
  dryRun?: boolean;
  /** Rows of one class per transaction. */
  batchSize?: number;
  /**
   * Pause between batches. Default: as long as the batch took (prune uses at most about half of
   * one connection's time, so a big backlog is spread out instead of competing with the fleet for
   * CPU and I/O: measured in docs/retention.md). 0 = none (tests, maintenance windows).
   */
  pauseMs?: number;
  /** "Now" for the cutoffs; the database clock when absent. */
  now?: Date | null;
  trigger?: 'cli' | 'periodic' | 'api';
  workerId?: string | null;
  logger?: Logger;
  /** Stop early (shutdown): the pass ends after the current batch (a pause between batches ends at once). */
  signal?: AbortSignal;
}

export interface PruneResult {
  dry_run: boolean;
  deleted: PruneCounts;
  total: number;
  duration_ms: number;
  batches: number;
  cutoffs: { finished: string | null; failed: string | null };
}

function add(into: PruneCounts, part: Partial<PruneCounts>): number {
  let n = 0;
  for (const [k, v] of Object.entries(part)) {
    into[k as keyof PruneCounts] += v ?? 0;
    n += v ?? 0;
  }
  return n;
}

export async function runPrune(pool: Pool, opts: PruneOptions): Promise<PruneResult> {
  const t0 = Date.now();
  const startedAt = new Date();
  const batch = opts.batchSize ?? PRUNE_BATCH_DEFAULT;
  const dryRun = opts.dryRun ?? false;
  const deleted = emptyCounts();
  const cut = await pruneCutoffs(pool, opts.now ?? null, opts.retentionMs, opts.retentionFailedMs);
  let batches = 0;
  const pause = (batchMs: number) => sleep(opts.pauseMs ?? batchMs, opts.signal);

  /** Runs `step` in its own transaction until it returns less than a full batch of primary rows. */
  const drain = async (step: (c: PoolClient) => Promise<Partial<PruneCounts>>, primary: keyof PruneCounts) => {
    for (;;) {
      if (opts.signal?.aborted) return;
      const b0 = Date.now();
      const part = await withTransaction(pool, step);
      batches++;
      add(deleted, part);
      if ((part[primary] ?? 0) < batch) return;
      await pause(Date.now() - b0);
    }
  };

  for (const c of ITEM_CLASSES) {
    const cutoff = c.retention === 'finished' ? cut.finished : cut.failed;
    if (!cutoff) continue;
    if (dryRun) add(deleted, await pruneItemCount(pool, c, cutoff));
    else await drain((db) => pruneItemBatch(db, c, cutoff, batch), c.table);
  }
  if (cut.failed) {
    const failed = cut.failed;
    if (dryRun) {
      add(deleted, await pruneAuditCount(pool, failed));
      add(deleted, await pruneSupersededBatch(pool, failed, batch, true));
      add(deleted, await pruneJetstreamRejectsBatch(pool, failed, batch, true));
    } else {
      await drain((db) => pruneAuditBatch(db, failed, batch), 'attempts');
      await drain((db) => pruneSupersededBatch(db, failed, batch), 'superseded_jobs');
      await drain((db) => pruneJetstreamRejectsBatch(db, failed, batch), 'jetstream_rejects');
    }
  }
  if (dryRun) add(deleted, await pruneRunsBatch(pool, cut.runs, batch, true));
  else await drain((db) => pruneRunsBatch(db, cut.runs, batch), 'prune_runs');
  if (dryRun) add(deleted, await pruneChatRateBatch(pool, batch, true));
  else await drain((db) => pruneChatRateBatch(db, batch), 'outbound_chat_rate');
  const now = opts.now ?? null;
  if (dryRun) add(deleted, await pruneSessionsBatch(pool, now, batch, true));
  else await drain((db) => pruneSessionsBatch(db, now, batch), 'sessions');

  const total = Object.values(deleted).reduce((a, b) => a + b, 0);
  const result: PruneResult = {
    dry_run: dryRun,
    deleted,
    total,
    duration_ms: Date.now() - t0,
    batches,
    cutoffs: {
      finished: cut.finished ? new Date(cut.finished).toISOString() : null,
      failed: cut.failed ? new Date(cut.failed).toISOString() : null,
    },
  };
  if (!dryRun) {
    await pruneRunInsert(pool, {
      startedAt,
      durationMs: result.duration_ms,
      trigger: opts.trigger ?? 'cli',
      workerId: opts.workerId ?? null,
      deleted,
      total,
      error: null,
    });
  }
  opts.logger?.info(
    { prune: { dry_run: dryRun, deleted, total, duration_ms: result.duration_ms, batches } },
    dryRun ? 'prune dry run' : 'prune pass finished',
  );
  return result;
}
