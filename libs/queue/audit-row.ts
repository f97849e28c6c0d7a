import type { Finished } from './held-claims';
import type { ClaimedJob, SettledRow } from './job-kind';
import type { AttemptRow } from './queries';

/** What one attempt row says about an attempt, apart from whose job and worker it was. */
export interface AttemptEntry {
  startedAt: Date;
  finishedAt: Date;
  durationMs: number | null;
  outcome: string;
  httpStatus: number | null;
  errorCode: string | null;
  error: string | null;
  details: Record<string, unknown> | null;
}

/** The one builder of the audit rows the engine writes (settled outcomes and shutdown releases). */
export function auditRow<Row>(subject: string, workerId: string, job: ClaimedJob<Row>, e: AttemptEntry): AttemptRow {
  return {
    subject,
    subject_id: job.id,
    subject_key: job.key,
    attempt: job.attempt,
    worker_id: workerId,
    started_at: e.startedAt,
    finished_at: e.finishedAt,
    duration_ms: e.durationMs,
    outcome: e.outcome,
    http_status: e.httpStatus,
    error_code: e.errorCode,
    error: e.error,
    details: e.details,
  };
}

/** A finished attempt's entry; `landed` false when its claim was lost before the outcome was written. */
export function settledEntry<Row, Effects>(
  f: Finished<Row, Effects>,
  landed: boolean,
  s: SettledRow | undefined,
): AttemptEntry {
  const { outcome, decision } = f;
  const details: Record<string, unknown> = { ...(outcome.details ?? {}) };
  if (decision.delayMs !== undefined) details.delayMs = decision.delayMs;
  if (decision.retryAfterMs !== undefined) details.retryAfterMs = decision.retryAfterMs;
  if (s?.nextAttemptAt && s.state === 'pending') details.nextAttemptAt = s.nextAttemptAt;
  if (decision.settlement.failedReason) details.failedReason = decision.settlement.failedReason;
  if (decision.settlement.uncounted) details.uncounted = true;
  if (!landed) details.fenced = true;
  return {
    startedAt: f.startedAt,
    finishedAt: f.finishedAt,
    durationMs: f.durationMs,
    outcome: outcome.label ?? decision.auditOutcome,
    httpStatus: outcome.status ?? null,
    errorCode: landed ? (outcome.errorCode ?? null) : 'RELAY_CLAIM_LOST',
    error:
      outcome.type === 'delivered'
        ? landed
          ? null
          : 'claim lost before the outcome was written'
        : (outcome.error ?? null),
    details: Object.keys(details).length ? details : null,
  };
}

/** The entry of an attempt given back unfinished at shutdown (at `at`, not counted). */
export function releasedEntry(at: Date): AttemptEntry {
  return {
    startedAt: at,
    finishedAt: at,
    durationMs: null,
    outcome: 'retry',
    httpStatus: null,
    errorCode: 'RELAY_RELEASED',
    error: 'released unfinished at worker shutdown; not counted against the budget',
    details: null,
  };
}
