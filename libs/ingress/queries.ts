/**
 * SQL of ingress: the cursor row (lease, fencing, progress, halt), the inbox and the quarantine.
 * One function per statement (the batch statement is in ./batch-statement.ts). Lease times use the database clock (`clock_timestamp()`), never a
 * replica's clock, so skew between hosts cannot make two owners believe they hold the lease.
 */
import type { Queryable } from '../db/pool';
import type { Fence } from './fence';

export type { Fence };
// The batch statement has its own module; these names stay importable from here.
export {
  HELD_BY_STOP_PREFIX,
  ingressBatchWrite,
  pgArrayLiteral,
  prepareBatchWrite,
  type BatchCaptureRow,
  type BatchCursorStep,
  type BatchUpdateRow,
  type BatchWriteInput,
  type BatchWriteResult,
  type CaptureConflictRow,
  type PreparedBatchWrite,
} from './batch-statement';

/** bigint columns come back from pg as text. */
type BigintText = string;

export async function cursorEnsure(q: Queryable, botId: string): Promise<void> {
  await q.query('insert into relay.cursor (bot_id) values ($1) on conflict (bot_id) do nothing', [botId]);
}

/**
 * Takes the lease if it is free or expired, or still recorded under this very owner (a process
 * re-acquiring after it gave up its generation locally, e.g. renewals failed during a database
 * outage): a new generation (fencing token) every time, so writes of the abandoned generation stay
 * fenced. Clears a previous halt: a new generation retries from the stored offset. Returns null
 * when someone else holds it.
 */
export async function cursorAcquire(
  q: Queryable,
  botId: string,
  owner: string,
  ttlMs: number,
): Promise<{ generation: number; nextOffset: number } | null> {
  // The takeover and its audit row are one statement: nobody can see the new owner without its
  // `lease_acquired` row (and an audit row is never lost to a failure between two statements).
  const { rows } = await q.query<{ lease_generation: BigintText; next_offset: BigintText }>(
    `with acquired as (
       update relay.cursor
          set lease_owner = $2, lease_generation = lease_generation + 1,
              lease_expires_at = clock_timestamp() + $3 * interval '1 millisecond',
              halted_reason = null, halted_at = null, poll_error = null, poll_error_kind = null, poll_error_at = null,
              updated_at = clock_timestamp()
        where bot_id = $1 and (lease_owner is null or lease_owner = $2 or lease_expires_at is null or lease_expires_at <= clock_timestamp())
        returning lease_generation, next_offset),
     audit as (
       insert into relay.attempts (subject, subject_key, worker_id, finished_at, outcome, details)
       select 'cursor', $1, $2, clock_timestamp(), 'lease_acquired',
              jsonb_build_object('generation', lease_generation, 'next_offset', next_offset)
         from acquired)
     select lease_generation, next_offset from acquired`,
    [botId, owner, ttlMs],
  );
  if (rows.length === 0) return null;
  return { generation: Number(rows[0].lease_generation), nextOffset: Number(rows[0].next_offset) };
}

/** Who holds the lease and for how much longer (ms, by the database clock; ≤ 0 means expired). */
export async function cursorLeaseState(
  q: Queryable,
  botId: string,
): Promise<{ owner: string | null; generation: number; remainingMs: number | null } | null> {
  const { rows } = await q.query<{
    lease_owner: string | null;
    lease_generation: BigintText;
    remaining_ms: number | null;
  }>(
    `select lease_owner, lease_generation,
            (extract(epoch from (lease_expires_at - clock_timestamp())) * 1000)::float8 as remaining_ms
       from relay.cursor where bot_id = $1`,
    [botId],
  );
  if (rows.length === 0) return null;
  return {
    owner: rows[0].lease_owner,
    generation: Number(rows[0].lease_generation),
    remainingMs: rows[0].remaining_ms === null ? null : Number(rows[0].remaining_ms),
  };
}

/** Extends the lease; false when this (owner, generation) no longer holds it. */
export async function cursorRenew(q: Queryable, botId: string, fence: Fence, ttlMs: number): Promise<boolean> {
  const { rowCount } = await q.query({
    name: 'relay_cursor_renew',
    text: `update relay.cursor set lease_expires_at = clock_timestamp() + $4 * interval '1 millisecond'
            where bot_id = $1 and lease_owner = $2 and lease_generation = $3`,
    values: [botId, fence.owner, fence.generation, ttlMs],
  });
  return rowCount === 1;
}

/** Gives the lease up (graceful stop) so a standby takes over at once. */
export async function cursorRelease(q: Queryable, botId: string, fence: Fence): Promise<boolean> {
  const { rows } = await q.query<{ n: number }>(
    `with released as (
       update relay.cursor set lease_owner = null, lease_expires_at = clock_timestamp(), updated_at = clock_timestamp()
        where bot_id = $1 and lease_owner = $2 and lease_generation = $3
        returning bot_id),
     audit as (
       insert into relay.attempts (subject, subject_key, worker_id, finished_at, outcome, details)
       select 'cursor', $1, $2, clock_timestamp(), 'lease_released', jsonb_build_object('generation', $3::bigint)
         from released)
     select count(*)::int as n from released`,
    [botId, fence.owner, fence.generation],
  );
  return rows[0].n === 1;
}

/** Progress without a batch (an empty long poll completed; the webhook is confirmed registered). Fenced. */
export async function cursorRecordProgress(q: Queryable, botId: string, fence: Fence, ttlMs: number): Promise<boolean> {
  const { rowCount } = await q.query({
    name: 'relay_cursor_progress',
    text: `update relay.cursor
              set progress_generation = $3, progress_at = clock_timestamp(),
                  poll_error = null, poll_error_kind = null, poll_error_at = null,
                  lease_expires_at = clock_timestamp() + $4 * interval '1 millisecond'
            where bot_id = $1 and lease_owner = $2 and lease_generation = $3`,
    values: [botId, fence.owner, fence.generation, ttlMs],
  });
  return rowCount === 1;
}

/**
 * What kind of getUpdates failure is going on: `configuration` (401/403/404: the token or API root
 * is wrong; not ready at once) or `transport` (5xx, network, an answer that is not the Bot API's;
 * explains a lack of progress).
 */
export type PollErrorKind = 'configuration' | 'transport';

/**
 * Records why getUpdates is failing (once per episode; fenced). Cleared by the next progress write
 * or lease acquisition. Never holds payloads: a status, a description, a reason.
 */
export async function cursorRecordPollError(
  q: Queryable,
  botId: string,
  fence: Fence,
  kind: PollErrorKind,
  error: string,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `update relay.cursor set poll_error = $4, poll_error_kind = $5, poll_error_at = coalesce(poll_error_at, clock_timestamp())
      where bot_id = $1 and lease_owner = $2 and lease_generation = $3`,
    [botId, fence.owner, fence.generation, error, kind],
  );
  return rowCount === 1;
}

export type IngressTransport = 'polling' | 'webhook';

export interface QuarantineInput {
  updateId: number | null;
  raw: string;
  sha256: string;
  error: string;
  jsonPath: string;
}

/**
 * Quarantines undecodable updates (idempotent by bot + update_id, or bot + sha256 without an id),
 * recording the transport they came by, and audits each new row.
 */
export async function quarantineInsertBatch(
  q: Queryable,
  botId: string,
  fence: Fence,
  items: QuarantineInput[],
  transport: IngressTransport,
): Promise<number> {
  if (items.length === 0) return 0;
  const { rows } = await q.query<{ n: number }>(
    `with q as (
       insert into relay.quarantine (bot_id, update_id, raw, sha256, error, json_path, generation, transport)
       select $1, u.update_id, decode(u.raw_b64, 'base64'), u.sha256, u.error, u.json_path, $3, $9
         from unnest($4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[]) as u(update_id, raw_b64, sha256, error, json_path)
       on conflict do nothing
       returning id, update_id, error, json_path, sha256
     ), a as (
       insert into relay.attempts (subject, subject_id, subject_key, worker_id, finished_at, outcome, error, details)
       select 'quarantine', id, update_id::text, $2, clock_timestamp(), 'quarantined', error,
              jsonb_build_object('json_path', json_path, 'sha256', sha256, 'generation', $3::bigint, 'transport', $9::text)
         from q
     )
     select count(*)::int as n from q`,
    [
      botId,
      fence.owner,
      fence.generation,
      items.map((i) => i.updateId),
      items.map((i) => Buffer.from(i.raw, 'utf8').toString('base64')),
      items.map((i) => i.sha256),
      items.map((i) => i.error),
      items.map((i) => i.jsonPath),
      transport,
    ],
  );
  return rows[0].n;
}

/** One audit row about the cursor (lease acquired/lost/released, halted). */
export async function cursorAudit(
  q: Queryable,
  botId: string,
  fence: Fence,
  outcome: string,
  error?: string | null,
  details?: Record<string, unknown>,
): Promise<void> {
  await q.query(
    `insert into relay.attempts (subject, subject_key, worker_id, finished_at, outcome, error, details)
     values ('cursor', $1, $2, clock_timestamp(), $3, $4, $5)`,
    [botId, fence.owner, outcome, error ?? null, JSON.stringify({ generation: fence.generation, ...details })],
  );
}

export interface CursorRow {
  botId: string;
  nextOffset: number;
  leaseOwner: string | null;
  leaseGeneration: number;
  leaseExpiresAt: Date | null;
  progressGeneration: number | null;
  progressAt: Date | null;
  haltedReason: string | null;
  haltedAt: Date | null;
  /** Why getUpdates is failing right now (null when the last call worked). */
  pollError: string | null;
  pollErrorKind: PollErrorKind | null;
  pollErrorAt: Date | null;
  dbNow: Date;
}

/** relay.cursor as cursorRead selects it. */
interface CursorDbRow {
  bot_id: string;
  next_offset: BigintText;
  lease_owner: string | null;
  lease_generation: BigintText;
  lease_expires_at: Date | null;
  progress_generation: BigintText | null;
  progress_at: Date | null;
  halted_reason: string | null;
  halted_at: Date | null;
  poll_error: string | null;
  poll_error_kind: PollErrorKind | null;
  poll_error_at: Date | null;
  db_now: Date;
}

export async function cursorRead(q: Queryable, botId: string): Promise<CursorRow | null> {
  const { rows } = await q.query<CursorDbRow>(
    `select bot_id, next_offset, lease_owner, lease_generation, lease_expires_at, progress_generation, progress_at,
            halted_reason, halted_at, poll_error, poll_error_kind, poll_error_at, clock_timestamp() as db_now
       from relay.cursor where bot_id = $1`,
    [botId],
  );
  if (rows.length === 0) return null;
  const r = rows[0];
  return {
    botId: r.bot_id,
    nextOffset: Number(r.next_offset),
    leaseOwner: r.lease_owner,
    leaseGeneration: Number(r.lease_generation),
    leaseExpiresAt: r.lease_expires_at,
    progressGeneration: r.progress_generation === null ? null : Number(r.progress_generation),
    progressAt: r.progress_at,
    haltedReason: r.halted_reason,
    haltedAt: r.halted_at,
    pollError: r.poll_error,
    pollErrorKind: r.poll_error_kind,
    pollErrorAt: r.poll_error_at,
    dbNow: r.db_now,
  };
}
