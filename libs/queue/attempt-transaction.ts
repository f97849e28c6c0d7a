/**
 * The seam for a job kind whose attempt writes to the database itself and wants those writes to
 * commit with its outcome (update dispatch: a handler's own SQL, `dispatch.transaction(ctx)`).
 *
 * The attempt opens a transaction on a connection of the worker's pool and hands it over with its
 * outcome (`Outcome.delivered({ transaction })`). The engine then writes that one outcome on that
 * connection alone — the settle, the ledger mirror, the audit row and the kind's effects, as for a
 * batch — and commits; the attempt's writes and its outcome land together or not at all. When the
 * claim was lost meanwhile, the outcome cannot be written, or the claim is given back at shutdown,
 * the engine rolls the transaction back instead and writes what happened without it.
 */
import type { PoolClient } from 'pg';
import { errorCode, fieldOf } from '../errors/thrown';
import { backoffMs, type Backoff } from '../lifecycle/backoff';
import { shortError } from './errors';
import { Outcome } from './outcome';

export interface AttemptTransaction {
  /** A client of the worker's pool inside BEGIN, holding the attempt's own writes. */
  readonly client: PoolClient;
  /**
   * Ends the transaction and gives the client back: COMMIT when `commit`, else ROLLBACK. Rejects when
   * the COMMIT failed (the client is released either way). Called exactly once by the engine.
   */
  end(commit: boolean): Promise<void>;
}

/**
 * An error an outcome's effects may throw to say that the attempt read data another attempt changed
 * before it could commit (optimistic concurrency): the attempt is run again, not counted, after a
 * short backoff, instead of failing its item. Its `code` is the audit row's error code.
 */
export interface AttemptConflict {
  readonly retryAttempt: true;
  readonly code: string;
}

export function isAttemptConflict(err: unknown): err is AttemptConflict {
  return fieldOf(err, 'retryAttempt') === true && typeof errorCode(err) === 'string';
}

/** Conflicts are retried soon (the other writer has committed), spread so that two losers do not meet again. */
const CONFLICT_RETRY: Backoff = { baseMs: 25, capMs: 400, jitter: 'full' };

/** What is written instead of an outcome whose effects conflicted: the attempt again, not counted. */
export function conflictRetry<E>(err: AttemptConflict, attempt: number, random?: () => number): Outcome<E> {
  return Outcome.retry<E>(5 + backoffMs(CONFLICT_RETRY, Math.min(attempt, 5), random), {
    uncounted: true,
    errorCode: err.code,
    error: shortError(err),
  });
}
