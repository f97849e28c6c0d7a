/**
 * The ingress batch statement: a whole batch (cursor step, inbox rows, captures, their jobs and the
 * workers' wake-up) in ONE statement, with its parameters. Every parameter is declared once, in an
 * ordered list that names its SQL alias, its PostgreSQL type and where its value comes from; the
 * statement's placeholders, its unnest aliases and the values sent are all generated from those
 * lists, so their orders cannot drift apart.
 */
import pg, { type PoolClient } from 'pg';
import type { CaptureRecord } from '../captures/build';
import { jobsInsertSql, QUEUES } from '../db/boss';
import { newJobId, workNotifySql } from '../queue/enqueue';
import type { Fence } from './fence';

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

/**
 * The fenced cursor step (the poller and the webhook): the statement writes nothing unless
 * (owner, generation) still holds the lease.
 */
export interface BatchCursorStep {
  fence: Fence;
  nextOffset: number | null;
  ttlMs: number;
  halt?: string | null;
  /** Webhook: the cursor stops at the first update_id not stored (see batchStatement); polling follows nextOffset. */
  webhook?: { covered: readonly number[]; haltedUpdateId: number | null };
}

export interface BatchWriteInput {
  botId: string;
  /** Recorded on the new inbox rows. */
  generation: number;
  /** The fenced cursor step; null for writes outside ingress (quarantine release). */
  cursor: BatchCursorStep | null;
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

/** The JavaScript value a parameter of each PostgreSQL type is given. */
interface SqlValue {
  text: string | null;
  bigint: number | null;
  int: number;
  bool: boolean;
  /** A scalar array parameter: already serialized by pgArrayLiteral. */
  'bigint[]': string;
}

/** The JavaScript value of one element of an array parameter of each PostgreSQL array type. */
interface SqlElement {
  'bigint[]': number | null;
  'text[]': string | null;
  'bool[]': boolean;
  'uuid[]': string | null;
}

/** An element of an array parameter, as pgArrayLiteral takes it. */
type Element = string | number | boolean | null;

/** One parameter of the statement: its name in the SQL, its type, and its value from `Source`. */
interface Param<Source, Name extends string, Value = unknown> {
  readonly name: Name;
  readonly type: string;
  readonly value: (source: Source) => Value;
}

/** A scalar parameter; the value's type must be the one `type` takes. */
function scalar<Source, Name extends string, T extends keyof SqlValue>(
  name: Name,
  type: T,
  value: (source: Source) => SqlValue[T],
): Param<Source, Name> {
  return { name, type, value };
}

/** An array parameter that is one column of an unnest: `value` gives that column of one row. */
function column<Row, Name extends string, T extends keyof SqlElement>(
  name: Name,
  type: T,
  value: (row: Row) => SqlElement[T],
): Param<Row, Name, Element> {
  return { name, type, value };
}

/** $1 and $2 of both statements. */
const BATCH_PARAMS = [
  scalar('bot', 'text', (i: BatchWriteInput) => i.botId),
  scalar('generation', 'bigint', (i: BatchWriteInput) => i.generation),
] as const;

/** The cursor step's parameters (the fenced statement only), after BATCH_PARAMS. */
const CURSOR_PARAMS = [
  scalar('owner', 'text', (c: BatchCursorStep) => c.fence.owner),
  scalar('next', 'bigint', (c: BatchCursorStep) => c.nextOffset),
  scalar('ttl', 'int', (c: BatchCursorStep) => c.ttlMs),
  // 0 keeps the halt state, 1 clears it (when `clear` holds), 2 sets it to `halt`
  scalar('haltMode', 'int', (c: BatchCursorStep) => (c.halt === undefined ? 0 : c.halt === null ? 1 : 2)),
  scalar('halt', 'text', (c: BatchCursorStep) => c.halt ?? null),
  scalar('webhook', 'bool', (c: BatchCursorStep) => c.webhook !== undefined),
  scalar('covered', 'bigint[]', (c: BatchCursorStep) => pgArrayLiteral(c.webhook?.covered ?? [])),
  scalar('haltedId', 'bigint', (c: BatchCursorStep) => c.webhook?.haltedUpdateId ?? null),
] as const;

/** The columns of the batch's updates (unnest alias u), in the statement's order. */
const UPDATE_COLUMNS = [
  column('update_id', 'bigint[]', (r: BatchUpdateRow) => r.updateId),
  column('update_type', 'text[]', (r: BatchUpdateRow) => r.type),
  column('chat_id', 'bigint[]', (r: BatchUpdateRow) => r.chatId),
  column('authorized', 'bool[]', (r: BatchUpdateRow) => r.authorized),
  // job ids from node's crypto: gen_random_uuid() costs a kernel entropy read per row
  column('job_id', 'uuid[]', (r: BatchUpdateRow) => (r.dispatch ? newJobId() : null)),
  column('raw', 'text[]', (r: BatchUpdateRow) => r.raw),
  column('payload', 'text[]', (r: BatchUpdateRow) => r.payloadJson),
  column('traceparent', 'text[]', (r: BatchUpdateRow) => r.traceparent ?? null),
] as const;

/** The columns of the batch's captures (unnest alias x), in the statement's order. */
const CAPTURE_COLUMNS = [
  column('capture_key', 'text[]', (x: BatchCaptureRow) => x.key),
  column('update_id', 'bigint[]', (x: BatchCaptureRow) => x.updateId),
  column('chat_id', 'bigint[]', (x: BatchCaptureRow) => x.chatId),
  column('message_id', 'bigint[]', (x: BatchCaptureRow) => x.messageId),
  column('from_id', 'bigint[]', (x: BatchCaptureRow) => x.fromId),
  column('text', 'text[]', (x: BatchCaptureRow) => x.storedText),
  column('message_date', 'bigint[]', (x: BatchCaptureRow) => x.date),
  // the jsonb copy is usually the exact document: sent once, parsed twice (json and jsonb)
  column('payload', 'text[]', (x: BatchCaptureRow) =>
    x.storedPayloadJson === x.payloadJson ? null : x.storedPayloadJson,
  ),
  column('payload_sha256', 'text[]', (x: BatchCaptureRow) => x.sha256),
  column('payload_raw', 'text[]', (x: BatchCaptureRow) => x.payloadJson),
  column('job_id', 'uuid[]', () => newJobId()),
  column('traceparent', 'text[]', (x: BatchCaptureRow) => x.traceparent ?? null),
  column('legacy_key', 'text[]', (x: BatchCaptureRow) => x.legacyKey),
  column('legacy_sha256', 'text[]', (x: BatchCaptureRow) => x.legacySha256),
] as const;

type Placeholders<P extends readonly Param<never, string>[]> = Record<P[number]['name'], string>;

/** The placeholders (`$n::type`) of `params`, numbered from `first`, by name. */
function placeholders<P extends readonly Param<never, string>[]>(params: P, first: number): Placeholders<P> {
  return Object.fromEntries(params.map((p, i) => [p.name, `$${first + i}::${p.type}`])) as Placeholders<P>;
}

/** `unnest(<placeholders>) as <alias>(<names>)` of the columns, numbered from `first`. */
function unnestOf(columns: readonly Param<never, string>[], first: number, between: string, alias: string): string {
  const args = columns.map((c, i) => `$${first + i}::${c.type}`).join(', ');
  return `unnest(${args})${between}as ${alias}(${columns.map((c) => c.name).join(', ')})`;
}

type Base = Placeholders<typeof BATCH_PARAMS>;
type Cursor = Placeholders<typeof CURSOR_PARAMS>;

/** The fenced cursor advance (the batch statement's first CTE: it takes the cursor row lock). */
function cursorCte(b: Base, c: Cursor): string {
  const { bot, generation } = b;
  const { owner, next, ttl, haltMode, halt, webhook, covered, haltedId } = c;
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
  return `cur as (
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
}

/**
 * The whole batch in ONE statement (data-modifying CTEs over unnest), so a batch costs one round
 * trip between BEGIN and COMMIT instead of seven:
 *   cur   the fenced cursor advance (first: takes the cursor row lock; when it matches no row,
 *         every other step reads `exists (select from cur)` as false and writes nothing),
 *   ins   inbox rows if absent; a dispatched row carries its ledger job id (made here, in node),
 *   cin   the captures of the batch's authorized messages,
 *   legacy this bot's captures stored under their keys from before keys named the bot,
 *   cins  captures if absent (by capture_key, and not stored under a legacy key), each with its job id,
 *   jobs  update.dispatch and capture.deliver job rows for the new inbox rows and captures, in one
 *         INSERT produced by the job ledger adapter (libs/db/boss.ts jobsInsertSql, the same row as insertJobs),
 * then one NOTIFY per queue that got work, and the keys of captures that collided with different
 * data (conf, read from the statement's snapshot: rows committed before it), each with its
 * update_id and whether that update's inbox row was new. Values only as parameters, numbered in
 * the order of the parameter lists above (prepareBatchWrite sends them in that order).
 */
function batchStatement(withCursor: boolean): string {
  const b = placeholders(BATCH_PARAMS, 1);
  const { bot, generation } = b;
  let first = 1 + BATCH_PARAMS.length;
  let cur = '';
  let guard = '';
  let fenced = '1';
  if (withCursor) {
    cur = cursorCte(b, placeholders(CURSOR_PARAMS, first));
    first += CURSOR_PARAMS.length;
    guard = 'where exists (select from cur)';
    fenced = '(select count(*) from cur)::int';
  }
  const u = unnestOf(UPDATE_COLUMNS, first, ' ', 'u');
  const x = unnestOf(CAPTURE_COLUMNS, first + UPDATE_COLUMNS.length, '\n        ', 'x');
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
        from ${u}
        left join lateral (
          select max(i.update_epoch) as epoch,
                 bool_or(coalesce(i.raw::text = u.raw, i.payload = u.payload::jsonb)) as same
            from relay.inbox i where i.bot_id = ${bot} and i.update_id = u.update_id) prev on true
       ${guard ? guard + ' and' : 'where'} prev.same is not true
      on conflict (bot_id, update_id, update_epoch) do nothing
      returning id, job_id, update_id, update_epoch
    ), cin as (
      select * from ${x}
       ${guard}
    ), legacy as ( -- this bot's captures stored under the key without the bot (build.ts)
      select l.capture_key, l.payload_sha256 from relay.captures l
       where l.capture_key in (select legacy_key from cin) and l.bot_id = ${bot}
    ), cins as (
      insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, from_id, text, message_date, payload, payload_raw, payload_sha256, job_id, traceparent)
      select capture_key, ${bot}, update_id, chat_id, message_id, from_id, text, to_timestamp(message_date), coalesce(payload, payload_raw)::jsonb, payload_raw::json, payload_sha256, job_id, traceparent
        from cin
       where not exists (select from legacy where legacy.capture_key = cin.legacy_key)
      on conflict (capture_key) do nothing
      returning id, capture_key, job_id
    ), jobs as (
      ${jobsInsertSql(jobSource)}
    ), conf as (
      -- neither written nor found identical: a row with other data, or one a concurrent transaction
      -- committed after this statement's snapshot (ON CONFLICT waited for it): never a silent no-op
      select coalesce(legacy.capture_key, cin.capture_key) as capture_key, cin.update_id,
             exists (select from ins where ins.update_id = cin.update_id) as inbox_stored
        from cin left join legacy on legacy.capture_key = cin.legacy_key
       where not exists (select from cins where cins.capture_key = cin.capture_key)
         and not exists (select from relay.captures c where c.capture_key = cin.capture_key and c.payload_sha256 = cin.payload_sha256)
         and legacy.payload_sha256 is distinct from cin.legacy_sha256
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
  const values: unknown[] = BATCH_PARAMS.map((p) => p.value(input));
  const cursor = input.cursor;
  if (cursor) values.push(...CURSOR_PARAMS.map((p) => p.value(cursor)));
  for (const c of UPDATE_COLUMNS) values.push(pgArrayLiteral(input.updates.map((r) => c.value(r))));
  for (const c of CAPTURE_COLUMNS) values.push(pgArrayLiteral(input.captures.map((x) => c.value(x))));
  return {
    name: cursor ? 'relay_ingress_batch' : 'relay_ingress_store',
    text: cursor ? BATCH_FENCED : BATCH_UNFENCED,
    values,
    generation: input.generation,
  };
}

/**
 * A one-dimensional PostgreSQL array literal of `values`: `pg`'s own serialization of a JS array
 * parameter, done here so that it happens before BEGIN. Property-tested against the server
 * (test/integration/ingress/batch-statements).
 */
export function pgArrayLiteral(values: readonly (string | number | boolean | null)[]): string {
  return pg.utils.prepareValue(values) as string;
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
