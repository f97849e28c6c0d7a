/** SQL of relay.captures used at ingress. Values only as parameters. */
import type { PoolClient } from 'pg';
import type { CaptureRecord } from './build';

export interface CaptureToInsert {
  record: CaptureRecord;
  /** Pre-generated ledger job id, stored in the row (only used when the row is new). */
  jobId: string;
  /** W3C trace context of the update's ingress span (null: tracing off); the delivery continues it. */
  traceparent?: string | null;
}

export interface CaptureInsertResult {
  inserted: Array<{ id: string; key: string; jobId: string }>;
  /** Keys that already existed with the same sha256 (no-ops). */
  unchanged: string[];
  /** Keys that already existed with a different sha256. */
  conflicts: string[];
}

/** A row of INSERT_BATCH: `id` (bigint, as text) and `job_id` are both null when the key already existed. */
type InsertBatchRow = {
  capture_key: string;
  existing_sha256: string | null;
  payload_sha256: string;
} & ({ id: string; job_id: string } | { id: null; job_id: null });

const INSERT_BATCH = `
  with input as (
    select * from unnest($2::text[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::text[], $8::bigint[], $9::text[], $10::text[], $11::uuid[], $12::text[], $13::text[])
      as x(capture_key, update_id, chat_id, message_id, from_id, text, message_date, payload, payload_sha256, job_id, payload_raw, traceparent)
  ), ins as (
    insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, from_id, text, message_date, payload, payload_raw, payload_sha256, job_id, traceparent)
    select capture_key, $1, update_id, chat_id, message_id, from_id, text, to_timestamp(message_date), payload::jsonb, payload_raw::json, payload_sha256, job_id, traceparent
      from input
    on conflict (capture_key) do nothing
    returning id, capture_key, job_id
  )
  select i.capture_key, ins.id, ins.job_id, c.payload_sha256 as existing_sha256, i.payload_sha256
    from input i
    left join ins on ins.capture_key = i.capture_key
    left join relay.captures c on ins.id is null and c.capture_key = i.capture_key`;

/**
 * Inserts captures if absent, in one statement, and reports which keys were new, which were
 * identical re-inserts and which collided with different data (the caller turns those into
 * RELAY_CAPTURE_KEY_CONFLICT and rolls back).
 */
export async function captureInsertBatch(client: PoolClient, botId: string, items: CaptureToInsert[]): Promise<CaptureInsertResult> {
  const result: CaptureInsertResult = { inserted: [], unchanged: [], conflicts: [] };
  if (items.length === 0) return result;
  const r = items.map((i) => i.record);
  const { rows } = await client.query<InsertBatchRow>({
    name: 'relay_capture_insert_batch',
    text: INSERT_BATCH,
    values: [
      botId,
      r.map((x) => x.key),
      r.map((x) => x.updateId),
      r.map((x) => x.chatId),
      r.map((x) => x.messageId),
      r.map((x) => x.fromId),
      r.map((x) => x.storedText),
      r.map((x) => x.date),
      r.map((x) => x.storedPayloadJson),
      r.map((x) => x.sha256),
      items.map((i) => i.jobId),
      r.map((x) => x.payloadJson),
      items.map((i) => i.traceparent ?? null),
    ],
  });
  for (const row of rows) {
    if (row.id !== null) result.inserted.push({ id: String(row.id), key: row.capture_key, jobId: row.job_id });
    else if (row.existing_sha256 !== null && row.existing_sha256 !== row.payload_sha256) result.conflicts.push(row.capture_key);
    else result.unchanged.push(row.capture_key);
  }
  return result;
}
