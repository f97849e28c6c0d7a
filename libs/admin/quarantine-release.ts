/**
 * Quarantine release through the ingress path: the stored bytes are decoded again with ingress's
 * own decoder (a newer decoder may accept what an older one quarantined) and written by ingress's
 * `storeUpdates` — the same statements as a polled batch minus the fenced cursor step (inbox row
 * if absent, update.dispatch job, capture and capture.deliver job) — in the caller's transaction.
 */
import type { JobLedger } from '../db/boss';
import type { PoolClient } from 'pg';
import { decodeUpdate } from '../ingress/decode';
import { storeUpdates } from '../ingress/persist-batch';
import type { ReleaseResult } from './actions';
import { RelayError } from '../errors/relay-error';

export class StillUndecodableError extends RelayError {
  readonly code = 'RELAY_QUARANTINE_UNDECODABLE';
  constructor(
    readonly jsonPath: string,
    reason: string,
  ) {
    super(`${reason} at ${jsonPath}`);
  }
}

export async function releaseQuarantinedUpdate(
  db: PoolClient,
  boss: JobLedger,
  row: { bot_id: string; raw: Buffer; generation?: number | null },
  opts: { allowedChatIds: ReadonlySet<string>; dispatchUnauthorized: boolean },
): Promise<ReleaseResult> {
  const decoded = decodeUpdate(row.raw.toString('utf8'));
  if (!decoded.ok) throw new StillUndecodableError(decoded.failure.jsonPath, decoded.failure.error);
  const u = decoded.update;
  const stored = await storeUpdates(db, boss, {
    botId: row.bot_id,
    generation: row.generation ?? 0,
    updates: [u],
    allowedChatIds: opts.allowedChatIds,
    dispatchUnauthorized: opts.dispatchUnauthorized,
  });
  // the row of these bytes: an update_id Telegram reused has one row per version (update_epoch)
  const { rows } = await db.query<{ id: string }>(
    `select id from relay.inbox where bot_id = $1 and update_id = $2
      order by (raw::text = $3) is true desc, update_epoch desc limit 1`,
    [row.bot_id, u.updateId, u.raw],
  );
  const inboxId = rows[0] ? Number(rows[0].id) : null;
  // already in the inbox (e.g. Telegram redelivered it, decodable, after the quarantine): nothing added
  return { outcome: stored.stored === 0 ? 'duplicate' : 'persisted', update_id: u.updateId, inbox_id: inboxId };
}
