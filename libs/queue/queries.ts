/**
 * SQL of the worker engine shared by every work type: the ledger job activation fragment and the audit
 * rows (relay.attempts). The claim/settle/heartbeat/release/recover SQL is generated from table
 * descriptions in claim-sql.ts.
 */
import type { Queryable } from '../db/pool';
import { safeJson, safeText } from './errors';

/** Longest error text stored (code points); every stored error string goes through safeText. */
export const STORED_ERROR_MAX = 1_000;
const safeError = (s: string | null | undefined): string | null =>
  s === null || s === undefined ? null : safeText(String(s), STORED_ERROR_MAX);

/** Ledger job activation for claim statements (created/retry → active): see libs/db/boss.ts. */

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

/** An audit row as its statements read it from JSON: every stored string made safe. */
export function attemptJson(r: AttemptRow): Record<string, unknown> {
  return {
    ...r,
    subject_key: safeText(String(r.subject_key), STORED_ERROR_MAX),
    outcome: safeText(String(r.outcome), 40),
    error_code: safeError(r.error_code),
    error: safeError(r.error),
    details: r.details === null ? null : safeJson(r.details),
  };
}

/** The audit row columns, and their types as json_to_recordset reads them. */
export const ATTEMPT_COLUMNS =
  'subject, subject_id, subject_key, attempt, worker_id, started_at, finished_at, duration_ms, outcome, http_status, error_code, error, details';
export const ATTEMPT_RECORD_TYPES = `subject text, subject_id bigint, subject_key text, attempt integer, worker_id text,
            started_at timestamptz, finished_at timestamptz, duration_ms integer, outcome text, http_status integer,
            error_code text, error text, details jsonb`;

/** Appends audit rows (one statement for the batch). */
export async function attemptsInsert(db: Queryable, rows: AttemptRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.query(
    `insert into relay.attempts (${ATTEMPT_COLUMNS})
     select ${ATTEMPT_COLUMNS}
       from json_to_recordset($1::json) as x(${ATTEMPT_RECORD_TYPES})`,
    [JSON.stringify(rows.map(attemptJson))],
  );
}
