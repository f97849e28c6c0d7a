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
import {
  BatchCaptureRow,
  BatchUpdateRow,
  BatchWriteInput,
  cursorAudit,
  Fence,
  ingressBatchWrite,
  PreparedBatchWrite,
  prepareBatchWrite,
  quarantineInsertBatch,
} from './queries';

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

/**
 * Runs the batch transaction. Throws LeaseLostError, CaptureKeyConflictError or a database error;
 * nothing is committed then. The rows, captures (their JSON and sha256), job ids and parameters
 * are built before BEGIN: the transaction holds the cursor row only for the database's work.
 */
export async function persistBatch(deps: PersistDeps, plan: BatchPlan, opts: PersistOptions): Promise<PersistResult> {
  const write = prepareBatch(plan, opts);
  return withTransaction(deps.pool, (client) => writeBatch(client, write, plan, opts));
}

/** persistBatch's work inside the caller's transaction (which then holds the cursor row until it ends). */
export async function persistInTransaction(client: PoolClient, boss: JobLedger, plan: BatchPlan, opts: PersistOptions): Promise<PersistResult> {
  void boss; // the job rows are written by the batch statement itself (the ledger's jobsInsertSql)
  return writeBatch(client, prepareBatch(plan, opts), plan, opts);
}

function prepareBatch(plan: BatchPlan, opts: PersistOptions): PreparedWrite {
  return prepareWrite({
    botId: opts.botId,
    generation: opts.fence.generation,
    updates: plan.updates,
    allowedChatIds: opts.allowedChatIds,
    dispatchUnauthorized: opts.dispatchUnauthorized,
    cursor: { fence: opts.fence, nextOffset: plan.nextOffset, ttlMs: opts.leaseTtlMs, halt: plan.halt ?? opts.halt },
  });
}

async function writeBatch(client: PoolClient, write: PreparedWrite, plan: BatchPlan, opts: PersistOptions): Promise<PersistResult> {
  const stored = await runWrite(client, write, opts.botId);
  const result: PersistResult = { ...stored, quarantined: 0, nextOffset: plan.nextOffset };
  if (plan.quarantine.length > 0) {
    result.quarantined = await quarantineInsertBatch(client, opts.botId, opts.fence, plan.quarantine, plan.transport ?? 'polling');
  }
  if (plan.halt) await cursorAudit(client, opts.botId, opts.fence, 'halted', plan.halt);
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
  void boss; // the job rows are written by the batch statement itself (the ledger's jobsInsertSql)
  return runWrite(client, prepareWrite({ ...o, cursor: null }), o.botId);
}

/** A batch's statement ready to send, and what the caller needs to read its result. */
interface PreparedWrite {
  statement: PreparedBatchWrite | null;
  rows: number;
  captures: number;
  unauthorized: number;
}

/** Everything of a batch write that needs no database: rows, captures, parameters. */
function prepareWrite(o: {
  botId: string;
  generation: number;
  updates: readonly DecodedUpdate[];
  allowedChatIds: ReadonlySet<string>;
  dispatchUnauthorized: boolean;
  cursor: BatchWriteInput['cursor'];
}): PreparedWrite {
  if (o.updates.length === 0 && !o.cursor) return { statement: null, rows: 0, captures: 0, unauthorized: 0 };
  const rows: BatchUpdateRow[] = [];
  const captures: BatchCaptureRow[] = [];
  let unauthorized = 0;
  for (const u of o.updates) {
    const authorized = isAuthorized(u, o.allowedChatIds);
    if (!authorized) unauthorized++;
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
  const statement = prepareBatchWrite({ botId: o.botId, generation: o.generation, cursor: o.cursor, updates: rows, captures });
  return { statement, rows: rows.length, captures: captures.length, unauthorized };
}

/** Sends a prepared write in the caller's transaction and checks its result (fence, conflicts, every job created). */
async function runWrite(client: PoolClient, w: PreparedWrite, botId: string): Promise<StoreResult> {
  const result: StoreResult = { stored: 0, duplicates: 0, unauthorized: w.unauthorized, captures: 0, captureRepeats: 0, dispatchJobs: 0, captureJobs: 0 };
  if (!w.statement) return result;
  const r = await ingressBatchWrite(client, w.statement);
  if (!r.fenced) throw new LeaseLostError(botId, w.statement.generation);
  if (r.conflicts.length > 0) throw new CaptureKeyConflictError(r.conflicts);
  if (r.dispatchJobs !== r.dispatchRows || r.captureJobs !== r.captures) {
    // the ledger's insertJobs would have returned fewer rows too (a queue missing): enqueueJobs' check
    throw new EnqueueFailedError('the job ledger did not create all jobs of the batch (does the queue exist? run tg-relay migrate)');
  }
  result.stored = r.stored;
  result.duplicates = w.rows - r.stored;
  result.dispatchJobs = r.dispatchJobs;
  result.captures = r.captures;
  result.captureRepeats = w.captures - r.captures; // conflicts have thrown above
  result.captureJobs = r.captureJobs;
  return result;
}
