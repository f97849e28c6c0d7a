/**
 * SQL of ingress: the cursor row (lease, fencing, progress, halt), the inbox and the quarantine.
 * One function per statement. Lease times use the database clock (`clock_timestamp()`), never a
 * replica's clock, so skew between hosts cannot make two owners believe they hold the lease.
 */
import pg, { type PoolClient } from 'pg';
import type { CaptureRecord } from '../captures/build';
import { jobsInsertSql, QUEUES } from '../db/boss';
import type { Queryable } from '../db/pool';
import { newJobId, workNotifySql } from '../queue/enqueue';

export interface Fence {
  owner: string;
  generation: number;
}

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

/**
 * How the quarantine row of an update refused by DECODE_POLICY=stop in webhook mode begins: it was
 * answered 500 (Telegram redelivers it), so it is held for an operator, not passed by the webhook
 * cursor, and nothing releases it on its own.
 */
export const HELD_BY_STOP_PREFIX =
  'DECODE_POLICY=stop refused this update (answered 500, Telegram redelivers it); held for an operator';

/** One update of a batch as the batch statement writes it. */
export interface BatchUpdateRow {
  updateId: number;
  type: string;
  chatId: number | null;
  authorized: boolean;
  /** true: `pending` with an update.dispatch job; false: `handled` at once (unauthorized, not dispatched). */
  dispatch: boolean;
  /** The update exactly as received → `raw` (json, verbatim). */
  raw: string;
  /** The jsonb copy → `payload` (NUL and unpaired surrogates replaced by U+FFFD). */
  payloadJson: string;
  /** W3C trace context of the update's ingress span, null when tracing is off. */
  traceparent?: string | null;
}

/** A capture of the batch, with the trace context of its update (null when tracing is off). */
export type BatchCaptureRow = CaptureRecord & { traceparent?: string | null };

export interface BatchWriteInput {
  botId: string;
  /** Recorded on the new inbox rows. */
  generation: number;
  /**
   * The fenced cursor step (the poller and the webhook): the statement writes nothing unless
   * (owner, generation) still holds the lease. null for writes outside ingress (quarantine release).
   */
  cursor: {
    fence: Fence;
    nextOffset: number | null;
    ttlMs: number;
    halt?: string | null;
    /** Webhook: the cursor stops at the first update_id not stored (see batchStatement); polling follows nextOffset. */
    webhook?: { covered: readonly number[]; haltedUpdateId: number | null };
  } | null;
  updates: readonly BatchUpdateRow[];
  captures: readonly BatchCaptureRow[];
}

export interface BatchWriteResult {
  /** false: the lease fence rejected the batch and nothing was written. */
  fenced: boolean;
  /** New inbox rows (the others were already there). */
  stored: number;
  /** New inbox rows that carry an update.dispatch job, and the ledger jobs created for them. */
  dispatchRows: number;
  /** New inbox rows under an update_id already stored with other bytes (Telegram reused the id). */
  reused: number;
  dispatchJobs: number;
  /** New captures, and the capture.deliver jobs created for them. */
  captures: number;
  captureJobs: number;
  /**
   * Capture keys that already existed with a different sha256 (or were committed by a concurrent
   * transaction while this statement ran): their captures were not written (never an overwrite).
   * The caller refuses the write (admin release) or keeps those updates in relay.quarantine (ingress).
   */
  conflicts: CaptureConflictRow[];
}

/** A capture the batch statement neither wrote nor found identical. */
export interface CaptureConflictRow {
  key: string;
  updateId: number;
  /** Whether its update's inbox row was new in this statement (false: the update_id was already stored). */
  inboxStored: boolean;
}

/**
 * The whole batch in ONE statement (data-modifying CTEs over unnest), so a batch costs one round
 * trip between BEGIN and COMMIT instead of seven:
 *   cur   the fenced cursor advance (first: takes the cursor row lock; when it matches no row,
 *         every other step reads `exists (select from cur)` as false and writes nothing),
 *   ins   inbox rows if absent; a dispatched row carries its ledger job id (made here, in node),
 *   cin   the captures of the batch's authorized messages,
 *   cins  captures if absent (by capture_key), each with its job id,
 *   jobs  update.dispatch and capture.deliver job rows for the new inbox rows and captures, in one
 *         INSERT produced by the job ledger adapter (libs/db/boss.ts jobsInsertSql, the same row as insertJobs),
 * then one NOTIFY per queue that got work, and the keys of captures that collided with different
 * data (conf, read from the statement's snapshot: rows committed before it), each with its
 * update_id and whether that update's inbox row was new. Values only as parameters.
 */
function batchStatement(withCursor: boolean): string {
  let n = 0;
  const $ = (type: string) => `$${++n}::${type}`;
  const bot = $('text');
  const generation = $('bigint');
  let cur = '';
  let guard = '';
  let fenced = '1';
  if (withCursor) {
    const [owner, next, ttl, haltMode, halt] = [$('text'), $('bigint'), $('int'), $('int'), $('text')];
    const [webhook, covered, haltedId] = [$('bool'), $('bigint[]'), $('bigint')];
    // polling: next_offset follows what Telegram served (lower ids too: it reset them).
    // webhook: the first update_id from the stored cursor on that is not stored yet (a delivery
    // answered 5xx leaves a gap that Telegram redelivers; a switch to polling must re-read it, not
    // confirm it). Stored: in this batch, in the inbox within Telegram's retention (an older row
    // may carry an id of an earlier id sequence), or quarantined but not held by DECODE_POLICY=stop.
    // Read from the statement's snapshot: a concurrent commit can only make the walk stop early
    // (greatest keeps the cursor monotonic), never pass an update that is not stored.
    const walk = `(with recursive walk(n) as (
          select c.next_offset from relay.cursor c where c.bot_id = ${bot} and ${webhook} and c.next_offset > 0
          union all
          select walk.n + 1 from walk
           where walk.n = any(${covered})
              or exists (select from relay.inbox i where i.bot_id = ${bot} and i.update_id = walk.n
                            and i.received_at > clock_timestamp() - interval '72 hours')
              or exists (select from relay.quarantine q where q.bot_id = ${bot} and q.update_id = walk.n
                            and not starts_with(q.error, '${HELD_BY_STOP_PREFIX}')))
        select max(n) from walk)`;
    // a webhook refusal's halt ends once its update is stored (a later delivery decoded, an operator
    // released it) or its held row is resolved (an undecodable update cannot be released: an operator
    // discards it)
    const clear = `(not ${webhook} or halted_update_id is null or halted_update_id = any(${covered})
          or exists (select from relay.inbox i where i.bot_id = ${bot} and i.update_id = halted_update_id
                        and i.received_at >= halted_at)
          or not exists (select from relay.quarantine q where q.bot_id = ${bot} and q.update_id = halted_update_id
                            and q.state = 'quarantined'))`;
    cur = `cur as (
      update relay.cursor
         set next_offset = case when ${webhook}
                                then greatest(next_offset, coalesce(${walk}, next_offset))
                                else coalesce(${next}, next_offset) end,
             progress_generation = ${generation}, progress_at = clock_timestamp(),
             poll_error = null, poll_error_kind = null, poll_error_at = null,
             lease_expires_at = clock_timestamp() + ${ttl} * interval '1 millisecond',
             halted_reason = case ${haltMode} when 0 then halted_reason
                                  when 1 then case when ${clear} then null else halted_reason end
                                  else ${halt} end,
             halted_at = case ${haltMode} when 0 then halted_at
                              when 1 then case when ${clear} then null else halted_at end
                              else clock_timestamp() end,
             halted_update_id = case ${haltMode} when 0 then halted_update_id
                                     when 1 then case when ${clear} then null else halted_update_id end
                                     else ${haltedId} end,
             updated_at = clock_timestamp()
       where bot_id = ${bot} and lease_owner = ${owner} and lease_generation = ${generation}
      returning 1
    ), `;
    guard = 'where exists (select from cur)';
    fenced = '(select count(*) from cur)::int';
  }
  const u = ['bigint[]', 'text[]', 'bigint[]', 'bool[]', 'uuid[]', 'text[]', 'text[]', 'text[]'].map($).join(', ');
  const c = [
    'text[]',
    'bigint[]',
    'bigint[]',
    'bigint[]',
    'bigint[]',
    'text[]',
    'bigint[]',
    'text[]',
    'text[]',
    'text[]',
    'uuid[]',
    'text[]',
  ]
    .map($)
    .join(', ');
  const jobSource = `select job_id as id, '${QUEUES.dispatch}'::text as name, jsonb_build_object('id', id::text) as data from ins where job_id is not null
                     union all
                     select job_id, '${QUEUES.capture}'::text, jsonb_build_object('id', id::text) from cins`;
  // An update_id already stored with the same bytes is a redelivery (Telegram redelivers byte for
  // byte): not written again. With other bytes it is another update (Telegram reuses ids after a week
  // without updates): written under the next update_epoch of that id, and dispatched like any other.
  return `with ${cur}ins as (
      insert into relay.inbox (bot_id, update_id, update_epoch, update_type, chat_id, authorized, payload, raw, state, job_id, generation, handled_at, traceparent)
      select ${bot}, u.update_id, coalesce(prev.epoch + 1, 0), u.update_type, u.chat_id, u.authorized, u.payload::jsonb, u.raw::json,
             case when u.job_id is null then 'handled' else 'pending' end,
             u.job_id,
             ${generation},
             case when u.job_id is null then clock_timestamp() end,
             u.traceparent
        from unnest(${u}) as u(update_id, update_type, chat_id, authorized, job_id, raw, payload, traceparent)
        left join lateral (
          select max(i.update_epoch) as epoch,
                 bool_or(coalesce(i.raw::text = u.raw, i.payload = u.payload::jsonb)) as same
            from relay.inbox i where i.bot_id = ${bot} and i.update_id = u.update_id) prev on true
       ${guard ? guard + ' and' : 'where'} prev.same is not true
      on conflict (bot_id, update_id, update_epoch) do nothing
      returning id, job_id, update_id, update_epoch
    ), cin as (
      select * from unnest(${c})
        as x(capture_key, update_id, chat_id, message_id, from_id, text, message_date, payload, payload_sha256, payload_raw, job_id, traceparent)
       ${guard}
    ), cins as (
      insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, from_id, text, message_date, payload, payload_raw, payload_sha256, job_id, traceparent)
      select capture_key, ${bot}, update_id, chat_id, message_id, from_id, text, to_timestamp(message_date), coalesce(payload, payload_raw)::jsonb, payload_raw::json, payload_sha256, job_id, traceparent
        from cin
      on conflict (capture_key) do nothing
      returning id, capture_key, job_id
    ), jobs as (
      ${jobsInsertSql(jobSource)}
    ), conf as (
      -- neither written nor found identical: a row with other data, or one a concurrent transaction
      -- committed after this statement's snapshot (ON CONFLICT waited for it): never a silent no-op
      select cin.capture_key, cin.update_id, exists (select from ins where ins.update_id = cin.update_id) as inbox_stored
        from cin
       where not exists (select from cins where cins.capture_key = cin.capture_key)
         and not exists (select from relay.captures c where c.capture_key = cin.capture_key and c.payload_sha256 = cin.payload_sha256)
    )
    select ${fenced} as fenced,
           (select count(*) from ins)::int as stored,
           (select count(*) from ins where job_id is not null)::int as dispatch_rows,
           (select count(*) from ins where update_epoch > 0)::int as reused,
           (select count(*) from cins)::int as captures,
           (select count(*) from jobs where name = '${QUEUES.dispatch}')::int as dispatch_jobs,
           (select count(*) from jobs where name = '${QUEUES.capture}')::int as capture_jobs,
           (select coalesce(jsonb_agg(jsonb_build_object('key', capture_key, 'updateId', update_id, 'inboxStored', inbox_stored) order by capture_key), '[]')
              from conf) as conflicts,
           ${workNotifySql('jobs')} as notified`;
}

const BATCH_FENCED = batchStatement(true);
const BATCH_UNFENCED = batchStatement(false);

/**
 * A batch statement with its parameters ready to send: built before the transaction begins (job
 * ids, and the array parameters serialized to PostgreSQL array literals, what `pg` would otherwise
 * do after BEGIN), so the transaction, and the cursor row lock it holds, lasts only as long as the
 * database work.
 */
export interface PreparedBatchWrite {
  readonly name: string;
  readonly text: string;
  readonly values: readonly unknown[];
  readonly generation: number;
}

/** The parameters of the batch statement (see batchStatement), serialized; no I/O. */
export function prepareBatchWrite(input: BatchWriteInput): PreparedBatchWrite {
  const u = input.updates;
  const c = input.captures;
  const values: unknown[] = [input.botId, input.generation];
  if (input.cursor) {
    const { fence, halt } = input.cursor;
    values.push(
      fence.owner,
      input.cursor.nextOffset,
      input.cursor.ttlMs,
      halt === undefined ? 0 : halt === null ? 1 : 2,
      halt ?? null,
      input.cursor.webhook !== undefined,
      pgArrayLiteral(input.cursor.webhook?.covered ?? []),
      input.cursor.webhook?.haltedUpdateId ?? null,
    );
  }
  const arrays: (readonly (string | number | boolean | null)[])[] = [
    u.map((r) => r.updateId),
    u.map((r) => r.type),
    u.map((r) => r.chatId),
    u.map((r) => r.authorized),
    // job ids from node's crypto: gen_random_uuid() costs a kernel entropy read per row
    u.map((r) => (r.dispatch ? newJobId() : null)),
    u.map((r) => r.raw),
    u.map((r) => r.payloadJson),
    u.map((r) => r.traceparent ?? null),
    c.map((x) => x.key),
    c.map((x) => x.updateId),
    c.map((x) => x.chatId),
    c.map((x) => x.messageId),
    c.map((x) => x.fromId),
    c.map((x) => x.storedText),
    c.map((x) => x.date),
    // the jsonb copy is usually the exact document: sent once, parsed twice (json and jsonb)
    c.map((x) => (x.storedPayloadJson === x.payloadJson ? null : x.storedPayloadJson)),
    c.map((x) => x.sha256),
    c.map((x) => x.payloadJson),
    c.map(() => newJobId()),
    c.map((x) => x.traceparent ?? null),
  ];
  for (const a of arrays) values.push(pgArrayLiteral(a));
  return {
    name: input.cursor ? 'relay_ingress_batch' : 'relay_ingress_store',
    text: input.cursor ? BATCH_FENCED : BATCH_UNFENCED,
    values,
    generation: input.generation,
  };
}

/** `pg`'s own parameter serializer (declared in libs/db/pg-utils.d.ts). */
const pgUtils = pg.utils;

/**
 * A one-dimensional PostgreSQL array literal of `values`: `pg`'s own serialization of a JS array
 * parameter, done here so that it happens before BEGIN. Property-tested against the server
 * (test/integration/ingress/batch-statements).
 */
export function pgArrayLiteral(values: readonly (string | number | boolean | null)[]): string {
  return pgUtils.prepareValue(values) as string;
}

/** Sends a prepared batch statement (one round trip), inside the caller's transaction. */
export async function ingressBatchWrite(client: PoolClient, prepared: PreparedBatchWrite): Promise<BatchWriteResult> {
  const { rows } = await client.query<{
    fenced: number;
    stored: number;
    dispatch_rows: number;
    reused: number;
    captures: number;
    dispatch_jobs: number;
    capture_jobs: number;
    conflicts: CaptureConflictRow[];
  }>({ name: prepared.name, text: prepared.text, values: prepared.values as unknown[] });
  const r = rows[0];
  return {
    fenced: r.fenced === 1,
    stored: r.stored,
    dispatchRows: r.dispatch_rows,
    reused: r.reused,
    dispatchJobs: r.dispatch_jobs,
    captures: r.captures,
    captureJobs: r.capture_jobs,
    conflicts: r.conflicts,
  };
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
