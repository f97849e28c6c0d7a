/**
 * SQL of the worker engine for "claim tables": domain tables with the standard claim columns
 * (`state pending|delivering|delivered|failed`, attempts, max_attempts, next_attempt_at, worker_id,
 * claim_id, started_at, heartbeat_at, last_status, last_error, failed_reason, job_id, delivered_at):
 * relay.captures and relay.outbound. One function per statement; values only as $n parameters; the
 * table and key column are escaped identifiers fixed at start (never user input).
 *
 * Times: `$now` is the injected clock's time, or null for the database's now() (see clock.ts).
 */
import { escapeIdentifier } from 'pg';
import type { Queryable } from '../db/pool';
import { activateJobsSql } from '../db/boss';
import type { RecoveredRow, SettledRow, Settlement } from './job-kind';
import { safeJson, safeText } from './errors';

/** Longest error text stored (code points); every stored error string goes through safeText. */
export const STORED_ERROR_MAX = 1_000;
const safeError = (s: string | null | undefined): string | null => (s === null || s === undefined ? null : safeText(String(s), STORED_ERROR_MAX));

export interface ClaimTable {
  /** Schema-qualified, escaped, e.g. "relay"."captures". */
  sql: string;
  /** Escaped business key column, e.g. "capture_key". */
  key: string;
}

export function claimTable(schema: string, table: string, keyColumn: string): ClaimTable {
  return { sql: `${escapeIdentifier(schema)}.${escapeIdentifier(table)}`, key: escapeIdentifier(keyColumn) };
}

const NOW = 'coalesce($NOW::timestamptz, now())';
const now = (n: number) => NOW.replace('$NOW', `$${n}`);

/** A row `tableClaim` returns: the standard claim columns, then the kind's extra columns. */
export interface ClaimedTableRow {
  /** bigint, as text. */
  id: string;
  /** The table's business key column (capture_key, msg_id…). */
  claimKey: string;
  job_id: string | null;
  claim_id: string;
  attempts: number;
  max_attempts: number | null;
  [column: string]: unknown;
}

/**
 * Claims up to `limit` due pending rows, oldest due first, and activates their ledger jobs — one
 * statement, so one round trip and atomic without an explicit transaction. The range scan on the
 * partial index (next_attempt_at, id) WHERE state = 'pending' stops at the first row that is not
 * due, so its cost does not grow with the backlog or with rows scheduled for later (bench/worker.ts
 * part b). `columns` are the escaped extra columns the job kind needs (its payload).
 */
export async function tableClaim(
  db: Queryable,
  t: ClaimTable,
  args: { limit: number; workerId: string; now: Date | null; queue: string; columns: string },
): Promise<{ rows: ClaimedTableRow[]; activated: number }> {
  const { rows } = await db.query<ClaimedTableRow & { activatedJobs?: number }>(
    `with picked as (
       select id from ${t.sql}
        where state = 'pending' and next_attempt_at <= ${now(3)}
        order by next_attempt_at, id
        limit $1
        for update skip locked
     ), claimed as (
       update ${t.sql} t
          set state = 'delivering', attempts = t.attempts + 1, worker_id = $2, claim_id = gen_random_uuid(),
              started_at = ${now(3)}, heartbeat_at = ${now(3)}, updated_at = now()
         from picked
        where t.id = picked.id
       returning t.id, t.${t.key} as "claimKey", t.job_id, t.claim_id, t.attempts, t.max_attempts${args.columns ? `, ${args.columns}` : ''}
     ), activated as (
       ${ACTIVATE_SQL('$4', '(select job_id from claimed where job_id is not null)')}
       returning 1
     )
     select claimed.*, (select count(*) from activated)::int as "activatedJobs" from claimed`,
    [args.limit, args.workerId, args.now, args.queue],
  );
  const activated = rows.length ? (rows[0].activatedJobs ?? 0) : 0;
  for (const r of rows) delete r.activatedJobs;
  return { rows, activated };
}

/** Ledger job activation for claim statements (created/retry → active): see libs/db/boss.ts. */
export const ACTIVATE_SQL = activateJobsSql;

/** Milliseconds until the earliest pending row is due (0 when overdue), or null when none is pending. */
export async function tableNextDueInMs(db: Queryable, t: ClaimTable, at: Date | null): Promise<number | null> {
  const { rows } = await db.query<{ ms: number | null }>(
    `select case when min(next_attempt_at) is null then null
                else greatest(0, extract(epoch from (min(next_attempt_at) - ${now(1)})) * 1000)::float8 end as ms
       from ${t.sql} where state = 'pending'`,
    [at],
  );
  const ms = rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.ceil(Number(ms));
}

/** Applies outcomes, fenced by claim id: a row re-claimed or recovered since is left untouched. */
export async function tableSettle(db: Queryable, t: ClaimTable, items: Settlement[], at: Date | null): Promise<SettledRow[]> {
  if (items.length === 0) return [];
  const { rows } = await db.query<SettledRow>(
    `update ${t.sql} t
        set state = x.state,
            next_attempt_at = case when x.state = 'pending' then ${now(2)} + x.delay_ms * interval '1 millisecond' else t.next_attempt_at end,
            delivered_at = case when x.state = 'delivered' then ${now(2)} else t.delivered_at end,
            last_status = x.status,
            last_error = x.error,
            failed_reason = case when x.state = 'failed' then x.failed_reason end,
            attempts = case when x.uncounted then greatest(t.attempts - 1, 0) else t.attempts end,
            claim_id = null, heartbeat_at = null, updated_at = now()
       from json_to_recordset($1::json) as x(id bigint, claim_id uuid, state text, delay_ms float8, status integer, error text, failed_reason text, uncounted boolean)
      where t.id = x.id and t.claim_id = x.claim_id and t.state = 'delivering'
     returning t.id::text as id, x.claim_id::text as "claimId", t.job_id::text as "jobId", t.state, t.next_attempt_at as "nextAttemptAt"`,
    [
      JSON.stringify(
        items.map((s) => ({
          id: s.id,
          claim_id: s.claimId,
          state: s.state,
          delay_ms: s.delayMs ?? 0,
          status: s.status ?? null,
          error: safeError(s.error),
          failed_reason: safeError(s.failedReason),
          uncounted: s.uncounted === true && s.state === 'pending',
        })),
      ),
      at,
    ],
  );
  return rows;
}

/** Refreshes heartbeats; returns the claim ids still held (the others were recovered or settled). */
export async function tableHeartbeat(db: Queryable, t: ClaimTable, claims: { id: string; claimId: string }[], at: Date | null): Promise<string[]> {
  if (claims.length === 0) return [];
  const { rows } = await db.query<{ claimId: string }>(
    `update ${t.sql} t set heartbeat_at = ${now(3)}
       from unnest($1::bigint[], $2::uuid[]) as v(id, claim_id)
      where t.id = v.id and t.claim_id = v.claim_id and t.state = 'delivering'
     returning v.claim_id::text as "claimId"`,
    [claims.map((c) => c.id), claims.map((c) => c.claimId), at],
  );
  return rows.map((r) => r.claimId);
}

/**
 * `delivering` rows whose heartbeat is older than `staleMs` go back to `pending`, due now, or to
 * `failed` when the attempt they were on was the last of their budget (a job that kills its worker
 * every time must not loop forever). SKIP LOCKED lets every replica sweep at once.
 */
export async function tableRecoverStale(
  db: Queryable,
  t: ClaimTable,
  args: { staleMs: number; now: Date | null; limit: number; maxAttempts: number },
): Promise<RecoveredRow[]> {
  const { rows } = await db.query<RecoveredRow>(
    `with stale as (
       select id, worker_id, started_at, heartbeat_at from ${t.sql}
        where state = 'delivering'
          and coalesce(heartbeat_at, started_at, updated_at) < ${now(1)} - $2 * interval '1 millisecond'
        order by id
        limit $3
        for update skip locked
     )
     update ${t.sql} t
        set state = case when t.attempts >= coalesce(t.max_attempts, $4) then 'failed' else 'pending' end,
            failed_reason = case when t.attempts >= coalesce(t.max_attempts, $4)
                                 then 'attempt budget spent (' || t.attempts || ' attempts); the last one went stale' end,
            last_error = 'claim went stale: no heartbeat from its worker',
            last_status = null,
            next_attempt_at = ${now(1)},
            claim_id = null, heartbeat_at = null, updated_at = now()
       from stale
      where t.id = stale.id
     returning t.id::text as id, t.${t.key} as key, t.job_id::text as "jobId", t.state, t.attempts as attempt,
               stale.worker_id as "workerId", stale.started_at as "startedAt", stale.heartbeat_at as "heartbeatAt",
               t.next_attempt_at as "nextAttemptAt"`,
    [args.now, args.staleMs, args.limit, args.maxAttempts],
  );
  return rows;
}

/** Gives unfinished claims back (shutdown): pending, due now; the interrupted attempt is not counted. */
export async function tableRelease(db: Queryable, t: ClaimTable, claims: { id: string; claimId: string }[], at: Date | null): Promise<SettledRow[]> {
  if (claims.length === 0) return [];
  const { rows } = await db.query<SettledRow>(
    `update ${t.sql} t
        set state = 'pending', attempts = greatest(t.attempts - 1, 0), next_attempt_at = ${now(3)},
            last_error = 'released unfinished at worker shutdown', claim_id = null, heartbeat_at = null, updated_at = now()
       from unnest($1::bigint[], $2::uuid[]) as v(id, claim_id)
      where t.id = v.id and t.claim_id = v.claim_id and t.state = 'delivering'
     returning t.id::text as id, v.claim_id::text as "claimId", t.job_id::text as "jobId", t.state, t.next_attempt_at as "nextAttemptAt"`,
    [claims.map((c) => c.id), claims.map((c) => c.claimId), at],
  );
  return rows;
}

export interface AttemptRow {
  subject: string;
  subject_id: string;
  subject_key: string;
  attempt: number;
  worker_id: string | null;
  started_at: Date;
  finished_at: Date;
  duration_ms: number | null;
  /** delivered | retry | failed, or a kind's label (ambiguous…). */
  outcome: string;
  http_status: number | null;
  error_code: string | null;
  error: string | null;
  details: Record<string, unknown> | null;
}

/** Appends audit rows (one statement for the batch). */
export async function attemptsInsert(db: Queryable, rows: AttemptRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `insert into relay.attempts (subject, subject_id, subject_key, attempt, worker_id, started_at, finished_at, duration_ms, outcome, http_status, error_code, error, details)
     select subject, subject_id, subject_key, attempt, worker_id, started_at, finished_at, duration_ms, outcome, http_status, error_code, error, details
       from json_to_recordset($1::json) as x(subject text, subject_id bigint, subject_key text, attempt integer, worker_id text,
            started_at timestamptz, finished_at timestamptz, duration_ms integer, outcome text, http_status integer,
            error_code text, error text, details jsonb)`,
    [
      JSON.stringify(
        rows.map((r) => ({
          ...r,
          subject_key: safeText(String(r.subject_key), STORED_ERROR_MAX),
          outcome: safeText(String(r.outcome), 40),
          error_code: safeError(r.error_code),
          error: safeError(r.error),
          details: r.details === null ? null : safeJson(r.details),
        })),
      ),
    ],
  );
}
