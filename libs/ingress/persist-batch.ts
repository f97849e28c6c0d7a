/**
 * The batch transaction, shared by polling and the webhook: in ONE transaction, fenced by the
 * lease generation,
 *   1. advance the cursor (this step checks the fence and takes the cursor row lock first),
 *   2. insert the raw updates into relay.inbox if absent,
 *   3. create update.dispatch jobs for new authorized updates,
 *   4. insert captures of new-or-repeated authorized messages (identical → no-op, different →
 *      RELAY_CAPTURE_KEY_CONFLICT and rollback) and their capture.deliver jobs,
 *   5. quarantine undecodable updates (DECODE_POLICY=quarantine).
 * Any failure rolls everything back: the caller polls the same offset again (or answers 5xx).
 *
 * Steps 1-4 and the workers' wake-up (one NOTIFY per queue) are ONE statement
 * (ingressBatchWrite in ./queries.ts: data-modifying CTEs over unnest), so a batch is three round
 * trips: BEGIN, the statement, COMMIT (plus one for quarantine rows and one for a halt's audit row,
 * only when the batch has them). The fence is part of that statement: when it matches no cursor
 * row nothing is written and LeaseLostError rolls back; a capture conflict is reported by the same
 * statement and rolled back here. Guarded by test/integration/ingress/batch-statements.test.ts
 * (counts the queries issued); the cost breakdown is in docs/ingress.md ("Batch cost").
 */
import { EnqueueFailedError, type JobLedger } from '../db/boss';
import type { Pool, PoolClient } from 'pg';
import { buildCapture } from '../captures/build';
import { CaptureKeyConflictError } from '../captures/errors';
import { withTransaction } from '../db/pool';
import { DecodedUpdate, isAuthorized } from './decode';
import { updateSpanTraceparent } from './batch-span';
import { LeaseLostError } from './errors';
import type { BatchPlan } from './plan-batch';
import { BatchCaptureRow, BatchUpdateRow, BatchWriteInput, cursorAudit, Fence, ingressBatchWrite, quarantineInsertBatch } from './queries';

export interface PersistOptions {
  botId: string;
  fence: Fence;
  leaseTtlMs: number;
  /** Empty: everything is authorized. */
  allowedChatIds: ReadonlySet<string>;
  /** Also dispatch updates from chats outside the allow-list (they never become captures). */
  dispatchUnauthorized: boolean;
  /** undefined keeps the halt state, null clears it (polling progress), a string sets it. */
  halt?: string | null;
}

export interface PersistResult {
  /** New inbox rows. */
  stored: number;
  /** Updates already in the inbox (redelivery). */
  duplicates: number;
  unauthorized: number;
  captures: number;
  /** Identical captures already present (no-op). */
  captureRepeats: number;
  dispatchJobs: number;
  captureJobs: number;
  quarantined: number;
  nextOffset: number | null;
}

export interface PersistDeps {
  pool: Pool;
  boss: JobLedger;
}

/** Runs the batch transaction. Throws LeaseLostError, CaptureKeyConflictError or a database error; nothing is committed then. */
export async function persistBatch(deps: PersistDeps, plan: BatchPlan, opts: PersistOptions): Promise<PersistResult> {
  return withTransaction(deps.pool, (client) => persistInTransaction(client, deps.boss, plan, opts));
}

export async function persistInTransaction(client: PoolClient, boss: JobLedger, plan: BatchPlan, opts: PersistOptions): Promise<PersistResult> {
  void boss; // the job rows are written by the batch statement itself (the ledger's jobsInsertSql)
  const { botId, fence } = opts;
  const halt = plan.halt ?? opts.halt;
  const stored = await writeUpdates(client, {
    botId,
    generation: fence.generation,
    updates: plan.updates,
    allowedChatIds: opts.allowedChatIds,
    dispatchUnauthorized: opts.dispatchUnauthorized,
    cursor: { fence, nextOffset: plan.nextOffset, ttlMs: opts.leaseTtlMs, halt },
  });
  const result: PersistResult = { ...stored, quarantined: 0, nextOffset: plan.nextOffset };
  if (plan.quarantine.length > 0) {
    result.quarantined = await quarantineInsertBatch(client, botId, fence, plan.quarantine, plan.transport ?? 'polling');
  }
  if (plan.halt) await cursorAudit(client, botId, fence, 'halted', plan.halt);
  return result;
}

export type StoreResult = Omit<PersistResult, 'quarantined' | 'nextOffset'>;

/**
 * Steps 2-4 without the cursor: inbox rows if absent, update.dispatch jobs for the new authorized
 * ones, captures (identical → no-op, different → CaptureKeyConflictError) and capture.deliver jobs,
 * in the caller's transaction. Also the seam for writing decoded updates outside the poller (an
 * admin releasing a quarantined update); `generation` is recorded on the inbox rows.
 */
export async function storeUpdates(
  client: PoolClient,
  boss: JobLedger,
  o: { botId: string; generation: number; updates: readonly DecodedUpdate[]; allowedChatIds: ReadonlySet<string>; dispatchUnauthorized: boolean },
): Promise<StoreResult> {
  void boss;
  return writeUpdates(client, { ...o, cursor: null });
}

async function writeUpdates(
  client: PoolClient,
  o: {
    botId: string;
    generation: number;
    updates: readonly DecodedUpdate[];
    allowedChatIds: ReadonlySet<string>;
    dispatchUnauthorized: boolean;
    cursor: BatchWriteInput['cursor'];
  },
): Promise<StoreResult> {
  const result: StoreResult = { stored: 0, duplicates: 0, unauthorized: 0, captures: 0, captureRepeats: 0, dispatchJobs: 0, captureJobs: 0 };
  if (o.updates.length === 0 && !o.cursor) return result;
  const rows: BatchUpdateRow[] = [];
  const captures: BatchCaptureRow[] = [];
  for (const u of o.updates) {
    const authorized = isAuthorized(u, o.allowedChatIds);
    if (!authorized) result.unauthorized++;
    const traceparent = updateSpanTraceparent(u);
    rows.push({
      updateId: u.updateId,
      type: u.type,
      chatId: u.chatId,
      authorized,
      dispatch: authorized || o.dispatchUnauthorized,
      raw: u.raw,
      payloadJson: u.payloadJson,
      traceparent, // issue 18: the update's trace continues in dispatch and capture delivery (null: tracing off)
    });
    if (authorized && u.message) captures.push({ ...buildCapture({ updateId: u.updateId, type: u.type, message: u.message }), traceparent });
  }

  const w = await ingressBatchWrite(client, { botId: o.botId, generation: o.generation, cursor: o.cursor, updates: rows, captures });
  if (!w.fenced) throw new LeaseLostError(o.botId, o.cursor?.fence.generation ?? o.generation);
  if (w.conflicts.length > 0) throw new CaptureKeyConflictError(w.conflicts);
  if (w.dispatchJobs !== w.dispatchRows || w.captureJobs !== w.captures) {
    // the ledger's insertJobs would have returned fewer rows too (a queue missing): enqueueJobs' check
    throw new EnqueueFailedError('the job ledger did not create all jobs of the batch (does the queue exist? run tg-relay migrate)');
  }
  result.stored = w.stored;
  result.duplicates = rows.length - w.stored;
  result.dispatchJobs = w.dispatchJobs;
  result.captures = w.captures;
  result.captureRepeats = captures.length - w.captures; // conflicts have thrown above
  result.captureJobs = w.captureJobs;
  return result;
}
