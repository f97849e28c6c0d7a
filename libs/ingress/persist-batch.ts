/**
 * The batch transaction, shared by polling and the webhook: in ONE transaction, fenced by the
 * lease generation,
 *   1. advance the cursor (this statement checks the fence and takes the cursor row lock first),
 *   2. insert the raw updates into relay.inbox if absent,
 *   3. create update.dispatch jobs for new authorized updates,
 *   4. insert captures of new-or-repeated authorized messages (identical → no-op, different →
 *      RELAY_CAPTURE_KEY_CONFLICT and rollback) and their capture.deliver jobs,
 *   5. quarantine undecodable updates (DECODE_POLICY=quarantine).
 * Any failure rolls everything back: the caller polls the same offset again (or answers 5xx).
 * Round trips: begin, 1, 2, 3 (+notify), 4, 4 jobs (+notify), 5 if any, commit.
 */
import type { JobLedger } from '../db/boss';
import type { Pool, PoolClient } from 'pg';
import { buildCapture } from '../captures/build';
import { CaptureKeyConflictError } from '../captures/errors';
import { captureInsertBatch, CaptureToInsert } from '../captures/queries';
import { QUEUES } from '../db/boss';
import { withTransaction } from '../db/pool';
import { enqueueJobs, newJobId } from '../queue/enqueue';
import { DecodedUpdate, isAuthorized } from './decode';
import { updateSpanTraceparent } from './batch-span';
import { LeaseLostError } from './errors';
import type { BatchPlan } from './plan-batch';
import { cursorAdvanceFenced, cursorAudit, Fence, InboxRowInput, inboxInsertBatch, quarantineInsertBatch } from './queries';

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
  const { botId, fence } = opts;
  const halt = plan.halt ?? opts.halt;
  const fenced = await cursorAdvanceFenced(client, botId, fence, { nextOffset: plan.nextOffset, ttlMs: opts.leaseTtlMs, halt });
  if (!fenced) throw new LeaseLostError(botId, fence.generation);

  const stored = await storeUpdates(client, boss, {
    botId,
    generation: fence.generation,
    updates: plan.updates,
    allowedChatIds: opts.allowedChatIds,
    dispatchUnauthorized: opts.dispatchUnauthorized,
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
  const result: StoreResult = { stored: 0, duplicates: 0, unauthorized: 0, captures: 0, captureRepeats: 0, dispatchJobs: 0, captureJobs: 0 };
  if (o.updates.length === 0) return result;
  const rows: InboxRowInput[] = [];
  const captures: CaptureToInsert[] = [];
  for (const u of o.updates) {
    const authorized = isAuthorized(u, o.allowedChatIds);
    if (!authorized) result.unauthorized++;
    const dispatch = authorized || o.dispatchUnauthorized;
    const traceparent = updateSpanTraceparent(u);
    rows.push({
      updateId: u.updateId,
      type: u.type,
      chatId: u.chatId,
      authorized,
      state: dispatch ? 'pending' : 'handled',
      jobId: dispatch ? newJobId() : null,
      raw: u.raw,
      payloadJson: u.payloadJson,
      traceparent, // issue 18: the update's trace continues in dispatch and capture delivery (null: tracing off)
    });
    if (authorized && u.message)
      captures.push({ record: buildCapture({ updateId: u.updateId, type: u.type, message: u.message }), jobId: newJobId(), traceparent });
  }

  const inserted = await inboxInsertBatch(client, o.botId, o.generation, rows);
  result.stored = inserted.length;
  result.duplicates = rows.length - inserted.length;
  const dispatchJobs = inserted.filter((r) => r.jobId !== null).map((r) => ({ id: r.jobId as string, data: { id: r.id } }));
  await enqueueJobs(client, boss, QUEUES.dispatch, dispatchJobs);
  result.dispatchJobs = dispatchJobs.length;

  if (captures.length > 0) {
    const c = await captureInsertBatch(client, o.botId, captures);
    if (c.conflicts.length > 0) throw new CaptureKeyConflictError(c.conflicts);
    result.captures = c.inserted.length;
    result.captureRepeats = c.unchanged.length;
    const captureJobs = c.inserted.map((r) => ({ id: r.jobId, data: { id: r.id } }));
    await enqueueJobs(client, boss, QUEUES.capture, captureJobs);
    result.captureJobs = captureJobs.length;
  }
  return result;
}
