/**
 * All SQL of the admin API, one function per statement (entity first). Values are `$n`
 * parameters; the only interpolated identifiers are the constant table/column names of KINDS.
 * Reads go through our own tables only (never the job ledger's).
 */
import type { Queryable } from '../db/pool';
import { read } from './db';
import { ITEM_KINDS, KINDS, LIST_TABLES_SQL, ListKind, WORK_SUBJECTS_SQL } from './kinds';
import { decodeCursor, encodeCursor } from './pagination';

// ---------------------------------------------------------------------------------------------
// Lists and details

const SUMMARY_COLUMNS: Record<ListKind, string> = {
  captures: `id, capture_key, bot_id, update_id, chat_id, message_id, state, attempts, max_attempts, next_attempt_at,
    worker_id, started_at, last_status, last_error, failed_reason, created_at, updated_at, delivered_at`,
  outbound: `id, msg_id, bot_id, chat_id, target_chat_id, kind, delivery, state, attempts, max_attempts, next_attempt_at,
    worker_id, started_at, last_status, last_error, failed_reason, telegram_message_id, source_update_id, created_at, updated_at, delivered_at,
    publisher_kind, method, lane`,
  inbox: `id, bot_id, update_id, update_type, chat_id, authorized, state, attempts, next_attempt_at, worker_id, started_at,
    last_error, generation, received_at, handled_at, updated_at`,
  quarantine: `id, bot_id, update_id, sha256, error, json_path, state, generation, octet_length(raw) as size_bytes, transport, created_at, resolved_at`,
};

const DETAIL_COLUMNS: Record<ListKind, string> = {
  // payload_raw / raw (json, 0007) are the exact originals; the jsonb copies replace NUL and lone surrogates
  // traceparent (0014): the read route turns it into trace_id / trace_url
  captures: `${SUMMARY_COLUMNS.captures}, from_id, message_date, coalesce(payload_raw, payload::json) as payload, payload_sha256, job_id, claim_id, traceparent`,
  // telegram_message_ids as json: numbers, like every other id (a bigint[] would come back as strings);
  // uploads by part name and size only, never their bytes
  outbound: `${SUMMARY_COLUMNS.outbound}, text, parse_mode, disable_notification, reply_markup, payload_sha256, job_id, claim_id, traceparent,
    params, message_count, to_json(telegram_message_ids) as telegram_message_ids,
    (select coalesce(json_agg(json_build_object('part', u.part, 'size_bytes', octet_length(u.bytes)) order by u.part), '[]'::json)
       from relay.outbound_uploads u where u.outbound_id = relay.outbound.id) as uploads`,
  inbox: `${SUMMARY_COLUMNS.inbox}, coalesce(raw, payload::json) as payload, job_id, claim_id, traceparent`,
  quarantine: `${SUMMARY_COLUMNS.quarantine}, encode(raw, 'base64') as raw_base64`,
};

export interface ListFilter {
  state?: string;
  chat?: string;
  since?: string;
  until?: string;
  error?: string;
  bot_id?: string;
  update_id?: number;
  /** outbound only: the Bot API method. */
  method?: string;
}

/** A list row: its columns, plus the keyset's microseconds until they are taken off. */
interface ListRow {
  id: number;
  _us?: number;
  [column: string]: unknown;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** `%`, `_` and `\` in user text match themselves in ILIKE. */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * The bot of one row, as an SQL expression: `kindExpr` says which table (one of `tables`, constant
 * names) and `idExpr` its id, found by a primary-key lookup. Delivery attempts and audit rows carry
 * no bot_id of their own (relay.attempts predates many bots): they are filtered by their subject's.
 */
function rowBotSql(kindExpr: string, idExpr: string, tables: readonly (readonly [string, string])[]): string {
  const whens = tables.map(([k, t]) => `when '${k}' then (select t.bot_id from ${t} t where t.id = ${idExpr})`);
  return `case ${kindExpr} ${whens.join(' ')} end`;
}

/** The bot of a delivery attempt (relay.attempts `a`, subject capture/outbound/inbox). */
export const ATTEMPT_BOT_SQL = rowBotSql(
  'a.subject',
  'a.subject_id',
  ITEM_KINDS.map((k) => [KINDS[k].subject, KINDS[k].table] as const),
);

/**
 * The bot of an audit row (relay.attempts `a`, subject admin): the one it names (sessions, sandbox,
 * a bulk retry's filter, a change to /v1/bots), else its subject's (an item, a broadcast). Null for
 * actions across bots (recover_stale, a bulk retry without bot_id) and refusals of unknown ids.
 * `auditInsert` stores it as details.bot_id (sql/0039_bot_indexes.sql gave it to earlier rows), so
 * the audit list filters by that alone, through attempts_admin_bot_idx.
 */
export const AUDIT_BOT_SQL = `coalesce(a.details->>'bot_id', a.details->'filter'->>'bot_id',
    case when a.details->>'kind' = 'bot' then a.subject_key end,
    ${rowBotSql("a.details->>'kind'", 'a.subject_id', [
      ...Object.values(KINDS).map((k) => [k.kind, k.table] as const),
      ['broadcast', 'relay.broadcasts'] as const,
    ])})`;

/** WHERE clause (without the keyset) and its parameters for a list or a bulk action. */
export function filterClause(kind: ListKind, f: ListFilter, values: unknown[]): string {
  const spec = KINDS[kind];
  const where: string[] = [];
  const p = (v: unknown) => {
    values.push(v);
    return `$${values.length}`;
  };
  if (f.state) where.push(`state = ${p(f.state)}`);
  if (f.bot_id) where.push(`bot_id = ${p(f.bot_id)}`);
  if (f.update_id !== undefined && kind !== 'outbound') where.push(`update_id = ${p(f.update_id)}`);
  if (f.method !== undefined && kind === 'outbound') where.push(`method = ${p(f.method)}`);
  if (f.chat !== undefined && spec.chatColumns.length) {
    // inbox/captures store chat ids as bigint, outbound as text: compare in the column's own type
    const param = kind === 'outbound' ? p(f.chat) : `${p(f.chat)}::bigint`;
    where.push(`(${spec.chatColumns.map((c) => `${c} = ${param}`).join(' or ')})`);
  }
  if (f.since) where.push(`${spec.timeColumn} >= ${p(f.since)}::timestamptz`);
  if (f.until) where.push(`${spec.timeColumn} < ${p(f.until)}::timestamptz`);
  if (f.error) {
    const pat = p(likePattern(f.error));
    where.push(`(${spec.errorColumns.map((c) => `${c} ilike ${pat}`).join(' or ')})`);
  }
  return where.length ? where.join(' and ') : 'true';
}

/**
 * One page, newest first by (time, id) — a total order, so pages never skip or repeat a row.
 * Fetches limit+1 rows to know whether there is a next page.
 */
export async function itemList(
  db: Queryable,
  kind: ListKind,
  f: ListFilter,
  page: { limit: number; cursor?: string },
): Promise<Page<Record<string, unknown>>> {
  const spec = KINDS[kind];
  const values: unknown[] = [];
  let where = filterClause(kind, f, values);
  if (page.cursor) {
    const k = decodeCursor(page.cursor);
    values.push(k.us, k.id);
    const t = `(timestamptz 'epoch' + $${values.length - 1}::bigint * interval '1 microsecond')`;
    where += ` and (${spec.timeColumn}, id) < (${t}, $${values.length}::bigint)`;
  }
  values.push(page.limit + 1);
  const rows = await read<ListRow>(
    db,
    `select ${SUMMARY_COLUMNS[kind]}, (extract(epoch from ${spec.timeColumn}) * 1000000)::int8 as _us
       from ${spec.table} where ${where}
      order by ${spec.timeColumn} desc, id desc limit $${values.length}`,
    values,
  );
  const more = rows.length > page.limit;
  const items = more ? rows.slice(0, page.limit) : rows;
  const last = items[items.length - 1];
  const next_cursor = more ? encodeCursor({ us: last._us!, id: last.id }) : null;
  for (const r of items) delete r._us;
  return { items, next_cursor };
}

export async function itemGet(db: Queryable, kind: ListKind, id: number): Promise<Record<string, unknown> | undefined> {
  const rows = await read(db, `select ${DETAIL_COLUMNS[kind]} from ${KINDS[kind].table} where id = $1`, [id]);
  return rows[0];
}

/** Upper bound of a detail view's history: an item sees its attempt budget plus admin actions. */
export const ATTEMPT_HISTORY_LIMIT = 1000;

/**
 * Every attempt of one item, oldest first, and the admin actions that touched it: single-item
 * actions carry its id in `subject_id`, bulk actions list it in `details.ids`.
 */
export async function attemptHistory(db: Queryable, kind: ListKind, id: number): Promise<Record<string, unknown>[]> {
  return read(
    db,
    `select id, subject, attempt, worker_id, started_at, finished_at, duration_ms, outcome, http_status, error_code, error, details, actor
       from relay.attempts
      where (subject = $1 and subject_id = $2)
         or (subject = 'admin' and subject_id = $2 and details->>'kind' = $3)
         or (subject = 'admin' and subject_id is null and details->>'kind' = $3 and details->'ids' @> to_jsonb($2::bigint))
      order by id
      limit ${ATTEMPT_HISTORY_LIMIT}`,
    [KINDS[kind].subject, id, kind],
  );
}

// ---------------------------------------------------------------------------------------------
// Audit

export interface AuditEntry {
  action: string;
  actor: string;
  workerId: string;
  subjectId?: number | null;
  subjectKey?: string | null;
  /** kind, filter, count, ids, reason, dry_run, result… */
  details: Record<string, unknown>;
  errorCode?: string;
  error?: string;
  startedAt: Date;
}

/**
 * Appends one admin action to relay.attempts (subject 'admin', outcome 'admin.<action>'), with its
 * bot (AUDIT_BOT_SQL) as details.bot_id when it has one.
 */
export async function auditInsert(db: Queryable, e: AuditEntry): Promise<number> {
  const { rows } = await db.query<{ id: string }>(
    `insert into relay.attempts (subject, subject_id, subject_key, worker_id, started_at, finished_at, duration_ms, outcome, error_code, error, details, actor)
     select 'admin', a.subject_id, a.subject_key, $3::text, $4::timestamptz, clock_timestamp(),
            greatest(0, (extract(epoch from clock_timestamp() - $4::timestamptz) * 1000)::int), $5::text, $6::text, $7::text,
            a.details || jsonb_strip_nulls(jsonb_build_object('bot_id', ${AUDIT_BOT_SQL})), $9::text
       from (select $1::bigint as subject_id, $2::text as subject_key, $8::jsonb as details) a
     returning id`,
    [
      e.subjectId ?? null,
      e.subjectKey ?? null,
      e.workerId,
      e.startedAt,
      `admin.${e.action}`,
      e.errorCode ?? null,
      e.error ?? null,
      JSON.stringify(e.details),
      e.actor,
    ],
  );
  return Number(rows[0].id);
}

/** Admin actions, newest first (GET /v1/audit). */
export async function auditList(
  db: Queryable,
  f: { actor?: string; action?: string; since?: string; until?: string; bot_id?: string },
  page: { limit: number; cursor?: string },
): Promise<Page<Record<string, unknown>>> {
  const values: unknown[] = [];
  const where = [`subject = 'admin'`];
  if (f.bot_id) where.push(`details->>'bot_id' = $${values.push(f.bot_id)}`);
  if (f.actor) where.push(`actor = $${values.push(f.actor)}`);
  if (f.action) where.push(`outcome = $${values.push(`admin.${f.action}`)}`);
  if (f.since) where.push(`started_at >= $${values.push(f.since)}::timestamptz`);
  if (f.until) where.push(`started_at < $${values.push(f.until)}::timestamptz`);
  if (page.cursor) where.push(`id < $${values.push(decodeCursor(page.cursor).id)}`);
  values.push(page.limit + 1);
  const rows = await read<{ id: number; action: string; [column: string]: unknown }>(
    db,
    `select id, outcome as action, actor, worker_id, subject_id, subject_key, details->>'bot_id' as bot_id, started_at, duration_ms, error_code, error, details
       from relay.attempts a where ${where.join(' and ')} order by id desc limit $${values.length}`,
    values,
  );
  const more = rows.length > page.limit;
  const items = (more ? rows.slice(0, page.limit) : rows).map((r) => ({
    ...r,
    action: r.action.replace(/^admin\./, ''),
  }));
  return { items, next_cursor: more ? encodeCursor({ us: 0, id: items[items.length - 1].id }) : null };
}

// ---------------------------------------------------------------------------------------------
// Stats

/** Exact counts stop here; a state with more rows is reported from planner statistics. */
export const EXACT_COUNT_CAP = 10_000;
/** A terminal-success state estimated above this is not counted at all (it can only grow). */
export const DONE_STATE_SKIP_ABOVE = 5 * EXACT_COUNT_CAP;

/**
 * One statement for every (kind, state) count, capped at EXACT_COUNT_CAP+1 rows each (an index
 * scan of at most that many entries of the `(state, time)` index), and each kind's oldest
 * pending row; with `botId`, of that bot's rows only. Returns `{ "<kind>.<state>": n, "<kind>.oldest": iso|null }`.
 */
export async function statsCounts(
  db: Queryable,
  kinds: ListKind[],
  skip: ReadonlySet<string> = new Set(),
  botId?: string,
): Promise<Record<string, number | string | null>> {
  const cols: string[] = [];
  const ofBot = botId ? ' and bot_id = $1' : '';
  for (const kind of kinds) {
    const spec = KINDS[kind];
    for (const state of spec.states) {
      if (skip.has(`${kind}.${state}`)) continue;
      cols.push(
        `(select count(*) from (select 1 from ${spec.table} where state = '${state}'${ofBot} limit ${EXACT_COUNT_CAP + 1}) s) as "${kind}.${state}"`,
      );
    }
    if (spec.pendingState) {
      cols.push(
        `(select min(${spec.timeColumn}) from ${spec.table} where state = '${spec.pendingState}'${ofBot}) as "${kind}.oldest"`,
      );
    }
  }
  const rows = await read<Record<string, number | string | null>>(
    db,
    `select ${cols.join(',\n')}`,
    botId ? [botId] : [],
  );
  return rows[0];
}

/** A table's planner statistics: estimated rows and the frequencies of `state` and of `bot_id`. */
export interface TableEstimate {
  rows: number;
  freqs: Record<string, number>;
  /** bot_id's most common values, and the share of each other bot (the planner's own guess). */
  bots: { freqs: Record<string, number>; other: number };
}

/** pg_stats' most_common_vals (an anyarray, read as its text form) as strings. */
const mcvList = (vals: string) =>
  vals
    .replace(/^\{|\}$/g, '')
    .split(',')
    .map((v) => v.replace(/^"|"$/g, ''));

/**
 * Planner statistics per table: estimated rows (reltuples, kept by ANALYZE/autovacuum) and the
 * most-common-values frequencies of `state` and `bot_id`. Used only for states above the exact-count cap.
 */
export async function statsEstimates(db: Queryable): Promise<Record<string, TableEstimate>> {
  const rows = await read<{
    table: string;
    rows: number;
    attname: string | null;
    vals: string | null;
    freqs: number[] | null;
    n_distinct: number | null;
    null_frac: number | null;
  }>(
    db,
    `select c.relname as table, c.reltuples::float8 as rows, s.attname, s.most_common_vals::text as vals, s.most_common_freqs as freqs,
            s.n_distinct::float8 as n_distinct, s.null_frac::float8 as null_frac
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       left join pg_stats s on s.schemaname = n.nspname and s.tablename = c.relname and s.attname in ('state', 'bot_id')
      where n.nspname = 'relay' and c.relname in (${LIST_TABLES_SQL}) and c.relkind in ('r', 'p')`,
  );
  const out: Record<string, TableEstimate> = {};
  for (const r of rows) {
    const e = (out[r.table] ??= { rows: Number(r.rows), freqs: {}, bots: { freqs: {}, other: 0 } });
    const freqs: Record<string, number> = {};
    const mcf = r.freqs;
    if (r.vals && mcf) mcvList(r.vals).forEach((v, i) => (freqs[v] = Number(mcf[i])));
    if (r.attname === 'state') e.freqs = freqs;
    if (r.attname === 'bot_id') {
      // as the planner does: the rows outside the common values, shared evenly by the other distinct values
      const rest = Math.max(0, 1 - Number(r.null_frac ?? 0) - Object.values(freqs).reduce((a, f) => a + f, 0));
      const nd = Number(r.n_distinct ?? 0);
      const distinct = nd < 0 ? -nd * e.rows : nd;
      const others = distinct - Object.keys(freqs).length;
      e.bots = { freqs, other: others >= 1 ? rest / others : 0 };
    }
  }
  return out;
}

/** Exact count of one state, of one bot's rows or all (the fallback when a table was never analyzed). */
export async function stateCountExact(db: Queryable, kind: ListKind, state: string, botId?: string): Promise<number> {
  const rows = await read<{ n: number }>(
    db,
    `select count(*)::int8 as n from ${KINDS[kind].table} where state = $1 and ($2::text is null or bot_id = $2)`,
    [state, botId ?? null],
  );
  return rows[0].n;
}

/** The last minute's counts of a group of delivery attempts (relay.attempts `a`). */
const RECENT_COUNTS_SQL = `count(*)::int8 as attempts,
            count(*) filter (where outcome in ('delivered', 'handled'))::int8 as delivered,
            count(*) filter (where outcome = 'failed')::int8 as failed`;

export interface RecentAttempts {
  subject: string;
  attempts: number;
  delivered: number;
  failed: number;
}

/**
 * Attempts and successful deliveries per subject in [since, now): the "rate over the last
 * minute", of one bot's items or all. Served by attempts_started_idx (and, for a bot, one
 * primary-key lookup per attempt of the minute).
 */
export async function attemptsRecent(db: Queryable, since: Date, botId?: string): Promise<RecentAttempts[]> {
  return read(
    db,
    `select subject, ${RECENT_COUNTS_SQL}
       from relay.attempts a
      where started_at >= $1 and subject in (${WORK_SUBJECTS_SQL})${botId ? ` and ${ATTEMPT_BOT_SQL} = $2` : ''}
      group by subject`,
    botId ? [since, botId] : [since],
  );
}

/**
 * The same per subject and bot (null: the attempt's item is gone), for the per-bot /metrics
 * gauges: one primary-key lookup per attempt of the minute.
 */
export async function attemptsRecentByBot(
  db: Queryable,
  since: Date,
): Promise<(RecentAttempts & { bot_id: string | null })[]> {
  return read(
    db,
    `select subject, ${ATTEMPT_BOT_SQL} as bot_id, ${RECENT_COUNTS_SQL}
       from relay.attempts a
      where started_at >= $1 and subject in (${WORK_SUBJECTS_SQL})
      group by 1, 2`,
    [since],
  );
}

/**
 * The states of a list a bot's rows are counted in by /metrics: all but the done state (which only
 * grows until retention), and of quarantine the unresolved one.
 */
export function openStates(kind: ListKind): readonly string[] {
  const k = KINDS[kind];
  return kind === 'quarantine' ? ['quarantined'] : k.states.filter((s) => s !== k.doneState);
}

/** One bot's rows of a list in one open state, and (pending state) the oldest one's time. */
export interface OpenStateCount {
  kind: ListKind;
  bot_id: string;
  state: string;
  n: number;
  oldest: string | null;
}

/**
 * Every bot's rows in each list's open states (`openStates`), exact, and its oldest pending row:
 * one statement reading the rows in those states once (through the `(state, time)` indexes), so
 * its cost grows with the backlog and the failed rows kept, not with the finished ones.
 */
export async function openStateCountsByBot(db: Queryable): Promise<OpenStateCount[]> {
  const parts = Object.values(KINDS).map((k) => {
    const states = openStates(k.kind)
      .map((s) => `'${s}'`)
      .join(', ');
    const oldest = k.pendingState
      ? `min(${k.timeColumn}) filter (where state = '${k.pendingState}')`
      : 'null::timestamptz';
    return `select '${k.kind}' as kind, bot_id, state, count(*)::int8 as n, ${oldest} as oldest
       from ${k.table} where state in (${states}) group by bot_id, state`;
  });
  return read(db, parts.join('\n      union all\n      '));
}

/** A relay.cursor row as `read` returns it (int8 as numbers, timestamps as ISO strings). */
export interface CursorRow {
  bot_id: string;
  next_offset: number;
  lease_owner: string | null;
  lease_generation: number;
  lease_expires_at: string | null;
  progress_generation: number | null;
  progress_at: string | null;
  halted_reason: string | null;
  halted_at: string | null;
  updated_at: string;
}

/** Every bot's cursor and lease, or one bot's. */
export async function cursorList(db: Queryable, botId?: string): Promise<CursorRow[]> {
  return read(
    db,
    `select bot_id, next_offset, lease_owner, lease_generation, lease_expires_at, progress_generation, progress_at, halted_reason, halted_at, updated_at
       from relay.cursor where ($1::text is null or bot_id = $1) order by bot_id`,
    [botId ?? null],
  );
}

/** One bot's unreachable chats per status (relay.chat_status; its primary key leads with bot_id). */
export async function chatStatusCountsOfBot(db: Queryable, botId: string): Promise<Record<string, number>> {
  const rows = await read<{ status: string; n: number }>(
    db,
    'select status, count(*)::int8 as n from relay.chat_status where bot_id = $1 group by status',
    [botId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** One bot's broadcast ids, newest first, below `beforeId` (GET /v1/broadcasts?bot_id=). */
export async function broadcastIdsOfBot(
  db: Queryable,
  botId: string,
  page: { limit: number; beforeId?: string },
): Promise<string[]> {
  const rows = await read<{ id: string }>(
    db,
    // ordered by the bigint column (a bare `id` would name the text output column): broadcasts_bot_idx
    `select b.id::text as id from relay.broadcasts b
      where b.bot_id = $1 and ($2::bigint is null or b.id < $2::bigint) order by b.id desc limit $3`,
    [botId, page.beforeId ?? null, page.limit],
  );
  return rows.map((r) => r.id);
}

// ---------------------------------------------------------------------------------------------
// Mutations (the route's transaction locks what an action will move)

/** One row, locked for the rest of the transaction. */
export async function itemLock(
  db: Queryable,
  kind: ListKind,
  id: number,
): Promise<{ id: number; state: string; key: string } | undefined> {
  const spec = KINDS[kind];
  const rows = await read<{ id: number; state: string; key: string }>(
    db,
    `select id, state, ${spec.keyColumn}::text as key from ${spec.table} where id = $1 for update`,
    [id],
  );
  return rows[0];
}

/**
 * Up to `limit` failed rows matching the filter, oldest first, locked (rows another transaction
 * holds are skipped, not waited for). Fetches limit+1 to tell whether more remain.
 */
export async function itemsSelectFailed(
  db: Queryable,
  kind: ListKind,
  f: ListFilter,
  limit: number,
  lock: boolean,
): Promise<{ ids: number[]; more: boolean }> {
  const spec = KINDS[kind];
  const values: unknown[] = [];
  const where = filterClause(kind, { ...f, state: 'failed' }, values);
  values.push(limit + 1);
  const rows = await read<{ id: number }>(
    db,
    `select id from ${spec.table} where ${where} order by id limit $${values.length}${lock ? ' for update skip locked' : ''}`,
    values,
  );
  const more = rows.length > limit;
  return { ids: rows.slice(0, limit).map((r) => r.id), more };
}

/** Keys of rows (for audit subject_key). */
export async function itemKeys(db: Queryable, kind: ListKind, ids: number[]): Promise<Map<number, string>> {
  const spec = KINDS[kind];
  const rows = await read<{ id: number; key: string }>(
    db,
    `select id, ${spec.keyColumn}::text as key from ${spec.table} where id = any($1::int8[])`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.key]));
}

export interface QuarantineLockRow {
  id: number;
  bot_id: string;
  update_id: number | null;
  sha256: string;
  state: string;
  raw: Buffer;
  generation: number | null;
}

export async function quarantineLock(db: Queryable, id: number): Promise<QuarantineLockRow | undefined> {
  const rows = await read<QuarantineLockRow>(
    db,
    `select id, bot_id, update_id, sha256, state, raw, generation from relay.quarantine where id = $1 for update`,
    [id],
  );
  return rows[0];
}

/** quarantined → released | discarded (the raw bytes stay: admin actions never delete data). */
export async function quarantineResolve(db: Queryable, id: number, state: 'released' | 'discarded'): Promise<void> {
  await db.query(
    `update relay.quarantine set state = $2, resolved_at = now() where id = $1 and state = 'quarantined'`,
    [id, state],
  );
}
