/**
 * The batch transaction, shared by polling and the webhook: in ONE transaction, fenced by the
 * lease generation,
 *   1. advance the cursor (this step checks the fence and takes the cursor row lock first),
 *   2. insert the raw updates into relay.inbox if absent,
 *   3. create update.dispatch jobs for new authorized updates,
 *   4. insert captures of new-or-repeated authorized messages (identical → no-op) and their
 *      capture.deliver jobs; a capture key already stored with different data is never
 *      overwritten: that update is kept in relay.quarantine with RELAY_CAPTURE_KEY_CONFLICT as its
 *      error, and the rest of the batch commits (one item's conflict never halts ingress),
 *   5. quarantine undecodable updates (DECODE_POLICY=quarantine).
 * Any failure rolls everything back: the caller polls the same offset again (or answers 5xx).
 *
 * Steps 1-4 and the workers' wake-up (one NOTIFY per queue) are ONE statement
 * (ingressBatchWrite in ./batch-statement.ts: data-modifying CTEs over unnest), so a batch is three round
 * trips: BEGIN, the statement, COMMIT (plus one for quarantine rows and one for a halt's audit row,
 * only when the batch has them). The fence is part of that statement: when it matches no cursor
 * row nothing is written and LeaseLostError rolls back; capture conflicts are reported by the same
 * statement (and cost one more statement, the quarantine insert, only when there are any).
 * Guarded by test/integration/ingress/batch-statements.test.ts (counts the queries issued); the
 * cost breakdown is in docs/ingress.md ("Batch cost").
 */
import { jobsNotCreated, type JobLedger } from '../db/boss';
import type { Pool, PoolClient } from 'pg';
import { buildCapture } from '../captures/build';
import { CaptureKeyConflictError } from '../captures/errors';
import { withTransaction } from '../db/pool';
import type { Logger } from '../observability/logger';
import { DecodedUpdate, isAuthorized } from './decode';
import { updateSpanTraceparent } from './batch-span';
import { LeaseLostError } from './errors';
import { BatchPlan, sha256Hex } from './plan-batch';
import {
  BatchCaptureRow,
  BatchUpdateRow,
  BatchWriteInput,
  CaptureConflictRow,
  HELD_BY_STOP_PREFIX,
  ingressBatchWrite,
  PreparedBatchWrite,
  prepareBatchWrite,
} from './batch-statement';
import type { Fence } from './fence';
import { cursorAudit, QuarantineInput, quarantineInsertBatch } from './queries';

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
  /** Updates already in the inbox with the same bytes (redelivery). */
  duplicates: number;
  /** New inbox rows under an update_id stored before with other bytes (Telegram reused the id): dispatched like any other. */
  reused: number;
  unauthorized: number;
  captures: number;
  /** Identical captures already present (no-op). */
  captureRepeats: number;
  dispatchJobs: number;
  captureJobs: number;
  quarantined: number;
  /**
   * Captures refused because their key is stored with different data (RELAY_CAPTURE_KEY_CONFLICT);
   * each such update is kept in relay.quarantine (new rows counted in `conflictsQuarantined`).
   */
  captureConflicts: string[];
  conflictsQuarantined: number;
  nextOffset: number | null;
}

export interface PersistDeps {
  pool: Pool;
  boss: JobLedger;
}

/**
 * Runs the batch transaction. Throws LeaseLostError or a database error; nothing is committed then.
 * A capture key conflict is no error of the batch: see PersistResult.captureConflicts. The rows,
 * captures (their JSON and sha256), job ids and parameters are built before BEGIN: the
 * transaction holds the cursor row only for the database's work.
 */
export async function persistBatch(deps: PersistDeps, plan: BatchPlan, opts: PersistOptions): Promise<PersistResult> {
  const write = prepareBatch(plan, opts);
  return withTransaction(deps.pool, (client) => writeBatch(client, write, plan, opts));
}

/** persistBatch's work inside the caller's transaction (which then holds the cursor row until it ends). */
export async function persistInTransaction(
  client: PoolClient,
  boss: JobLedger,
  plan: BatchPlan,
  opts: PersistOptions,
): Promise<PersistResult> {
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
    cursor: {
      fence: opts.fence,
      nextOffset: plan.nextOffset,
      ttlMs: opts.leaseTtlMs,
      halt: plan.halt ?? opts.halt,
      webhook: plan.transport === 'webhook' ? webhookCursor(plan) : undefined,
    },
  });
}

/** What the webhook cursor may pass: the ids this batch stores (inbox or quarantine), not a held refusal. */
function webhookCursor(plan: BatchPlan): { covered: number[]; haltedUpdateId: number | null } {
  const covered = plan.updates.map((u) => u.updateId);
  for (const q of plan.quarantine) if (q.updateId !== null) covered.push(q.updateId);
  return { covered, haltedUpdateId: plan.held?.updateId ?? null };
}

async function writeBatch(
  client: PoolClient,
  write: PreparedWrite,
  plan: BatchPlan,
  opts: PersistOptions,
): Promise<PersistResult> {
  const { conflicts, ...stored } = await runWrite(client, write, opts.botId);
  const transport = plan.transport ?? 'polling';
  const result: PersistResult = {
    ...stored,
    quarantined: 0,
    captureConflicts: conflicts.map((c) => c.key),
    conflictsQuarantined: 0,
    nextOffset: plan.nextOffset,
  };
  if (plan.quarantine.length > 0) {
    result.quarantined = await quarantineInsertBatch(client, opts.botId, opts.fence, plan.quarantine, transport);
  }
  if (conflicts.length > 0) {
    result.conflictsQuarantined = await quarantineInsertBatch(
      client,
      opts.botId,
      opts.fence,
      conflicts.map(conflictQuarantine),
      transport,
    );
  }
  if (plan.held) {
    const h = plan.held;
    const error = `${HELD_BY_STOP_PREFIX}: ${h.error}`;
    await quarantineInsertBatch(client, opts.botId, opts.fence, [{ ...h, error }], transport);
  }
  if (plan.halt) await cursorAudit(client, opts.botId, opts.fence, 'halted', plan.halt);
  return result;
}

export type StoreResult = Omit<
  PersistResult,
  'quarantined' | 'captureConflicts' | 'conflictsQuarantined' | 'nextOffset'
>;

/** A capture refused for its key, with the update it belongs to. */
type CaptureConflict = CaptureConflictRow & { update: DecodedUpdate };

/**
 * The quarantine row that keeps an update whose capture was refused: its exact bytes (nothing is
 * lost even when its update_id was already stored with other content) and why, naming the key and
 * what was kept; never the content.
 */
function conflictQuarantine(c: CaptureConflict): QuarantineInput {
  const kept = c.inboxStored
    ? 'the update is stored in relay.inbox and dispatched; its capture was not created'
    : 'its update_id was already stored in relay.inbox (that version is kept); this version is kept only here';
  return {
    updateId: c.update.updateId,
    raw: c.update.raw,
    sha256: sha256Hex(c.update.raw),
    error: `RELAY_CAPTURE_KEY_CONFLICT: capture key ${c.key} is already stored with different data and is not overwritten; ${kept}`,
    jsonPath: `$.${c.update.type}`,
  };
}

/**
 * Steps 2-4 without the cursor: inbox rows if absent, update.dispatch jobs for the new authorized
 * ones, captures (identical → no-op, different → CaptureKeyConflictError) and capture.deliver jobs,
 * in the caller's transaction. Also the seam for writing decoded updates outside the poller (an
 * admin releasing a quarantined update); `generation` is recorded on the inbox rows.
 */
export async function storeUpdates(
  client: PoolClient,
  boss: JobLedger,
  o: {
    botId: string;
    generation: number;
    updates: readonly DecodedUpdate[];
    allowedChatIds: ReadonlySet<string>;
    dispatchUnauthorized: boolean;
  },
): Promise<StoreResult> {
  void boss; // the job rows are written by the batch statement itself (the ledger's jobsInsertSql)
  const { conflicts, ...stored } = await runWrite(client, prepareWrite({ ...o, cursor: null }), o.botId);
  if (conflicts.length > 0) throw new CaptureKeyConflictError(conflicts.map((c) => c.key)); // an operator's request: refused whole
  return stored;
}

/** A batch's statement ready to send, and what the caller needs to read its result. */
interface PreparedWrite {
  statement: PreparedBatchWrite | null;
  rows: number;
  captures: number;
  unauthorized: number;
  /** The batch's updates (to name what a conflict belongs to). */
  updates: readonly DecodedUpdate[];
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
  if (o.updates.length === 0 && !o.cursor)
    return { statement: null, rows: 0, captures: 0, unauthorized: 0, updates: o.updates };
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
      traceparent, // the update's trace continues in dispatch and capture delivery (null: tracing off)
    });
    if (authorized && u.message)
      captures.push({
        ...buildCapture({ botId: o.botId, updateId: u.updateId, type: u.type, message: u.message }),
        traceparent,
      });
  }
  const statement = prepareBatchWrite({
    botId: o.botId,
    generation: o.generation,
    cursor: o.cursor,
    updates: rows,
    captures,
  });
  return { statement, rows: rows.length, captures: captures.length, unauthorized, updates: o.updates };
}

/** Sends a prepared write in the caller's transaction and checks its result (fence, every job created); conflicts are the caller's. */
async function runWrite(
  client: PoolClient,
  w: PreparedWrite,
  botId: string,
): Promise<StoreResult & { conflicts: CaptureConflict[] }> {
  const result: StoreResult & { conflicts: CaptureConflict[] } = {
    stored: 0,
    duplicates: 0,
    reused: 0,
    unauthorized: w.unauthorized,
    captures: 0,
    captureRepeats: 0,
    dispatchJobs: 0,
    captureJobs: 0,
    conflicts: [],
  };
  if (!w.statement) return result;
  const r = await ingressBatchWrite(client, w.statement);
  if (!r.fenced) throw new LeaseLostError(botId, w.statement.generation);
  // update_ids are unique in a batch (planBatch); conflicts are rare, so they are looked up only then
  result.conflicts = r.conflicts.map((c) => ({ ...c, update: w.updates.find((u) => u.updateId === c.updateId)! }));
  if (r.dispatchJobs !== r.dispatchRows || r.captureJobs !== r.captures) {
    // the ledger's insertJobs would have returned fewer rows too (a queue missing): enqueueJobs' check
    throw jobsNotCreated('all jobs of the batch');
  }
  result.stored = r.stored;
  result.reused = r.reused;
  result.duplicates = w.rows - r.stored;
  result.dispatchJobs = r.dispatchJobs;
  result.captures = r.captures;
  result.captureRepeats = w.captures - r.captures - r.conflicts.length;
  result.captureJobs = r.captureJobs;
  return result;
}

/** The one warning about a batch's capture key conflicts (keys are ids, never content), for the poller and the webhook. */
export function logCaptureConflicts(logger: Logger, r: PersistResult, generation: number): void {
  logger.warn(
    { captureKeys: r.captureConflicts, quarantined: r.conflictsQuarantined, generation },
    'capture key already stored with different data (RELAY_CAPTURE_KEY_CONFLICT): the stored capture is kept and not overwritten, these updates are kept in relay.quarantine; the rest of the batch committed',
  );
}

/** The one warning about updates stored under an update_id Telegram reused (ids only), for the poller and the webhook. */
export function logReusedIds(logger: Logger, r: PersistResult, generation: number): void {
  logger.warn(
    { reused: r.reused, generation },
    'updates arrived under update_ids already stored with other content (Telegram reuses ids after a week without updates): stored as new updates (relay.inbox.update_epoch > 0) and dispatched',
  );
}
