/**
 * Quarantine release through the ingress path: the stored bytes are decoded again with ingress's
 * own decoder (a newer decoder may accept what an older one quarantined) and written with ingress's
 * own statements — inbox row if absent, update.dispatch job, capture (identical → no-op, different
 * → RELAY_CAPTURE_KEY_CONFLICT) and capture.deliver job — in the caller's transaction, with the
 * same authorization rules as the poller.
 *
 * SEAM: this mirrors steps 2-4 of libs/ingress/persist-batch.ts `persistInTransaction`, which
 * also advances the fenced cursor (step 1) and so needs the poller's lease. It belongs in
 * libs/ingress as an exported "persist decoded updates without the cursor step" that
 * persistInTransaction calls too; then this file shrinks to a call.
 */
import type PgBoss from 'pg-boss';
import type { PoolClient } from 'pg';
import { buildCapture } from '../captures/build';
import { CaptureKeyConflictError } from '../captures/errors';
import { captureInsertBatch } from '../captures/queries';
import { QUEUES } from '../db/boss';
import { decodeUpdate, isAuthorized } from '../ingress/decode';
import { inboxInsertBatch } from '../ingress/queries';
import { enqueueJobs, newJobId } from '../queue/enqueue';
import type { ReleaseResult } from './actions';

export class StillUndecodableError extends Error {
  readonly code = 'RELAY_QUARANTINE_UNDECODABLE';
  constructor(
    readonly jsonPath: string,
    reason: string,
  ) {
    super(`${reason} at ${jsonPath}`);
    this.name = 'StillUndecodableError';
  }
}

export async function releaseQuarantinedUpdate(
  db: PoolClient,
  boss: PgBoss,
  row: { bot_id: string; raw: Buffer; generation?: number | null },
  opts: { allowedChatIds: ReadonlySet<string>; dispatchUnauthorized: boolean },
): Promise<ReleaseResult> {
  const decoded = decodeUpdate(row.raw.toString('utf8'));
  if (!decoded.ok) throw new StillUndecodableError(decoded.failure.jsonPath, decoded.failure.error);
  const u = decoded.update;
  const authorized = isAuthorized(u, opts.allowedChatIds);
  const dispatch = authorized || opts.dispatchUnauthorized;
  const inserted = await inboxInsertBatch(db, row.bot_id, row.generation ?? 0, [
    { updateId: u.updateId, type: u.type, chatId: u.chatId, authorized, state: dispatch ? 'pending' : 'handled', jobId: dispatch ? newJobId() : null, raw: u.raw },
  ]);
  if (inserted.length === 0) {
    // already in the inbox (e.g. Telegram redelivered it, decodable, after the quarantine): nothing to add
    const { rows } = await db.query('select id from relay.inbox where bot_id = $1 and update_id = $2', [row.bot_id, u.updateId]);
    return { outcome: 'duplicate', update_id: u.updateId, inbox_id: rows[0] ? Number(rows[0].id) : null };
  }
  const inbox = inserted[0];
  if (inbox.jobId) await enqueueJobs(db, boss, QUEUES.dispatch, [{ id: inbox.jobId, data: { id: inbox.id } }]);
  if (authorized && u.message) {
    const c = await captureInsertBatch(db, row.bot_id, [{ record: buildCapture({ updateId: u.updateId, type: u.type, message: u.message }), jobId: newJobId() }]);
    if (c.conflicts.length > 0) throw new CaptureKeyConflictError(c.conflicts);
    await enqueueJobs(db, boss, QUEUES.capture, c.inserted.map((r) => ({ id: r.jobId, data: { id: r.id } })));
  }
  return { outcome: 'persisted', update_id: u.updateId, inbox_id: Number(inbox.id) };
}
