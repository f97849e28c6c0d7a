/**
 * What one attempt of a job came to, as an explicit value (no exceptions caught far away).
 * The engine turns it into a state change: Delivered → `delivered`; Retry → back to `pending` with
 * `next_attempt_at` (or `failed` once the attempt budget is spent); Terminal → `failed` at once.
 */
import type { AttemptTransaction } from './attempt-transaction';

export interface AttemptInfo<Effects = unknown> {
  /** HTTP status (or API error code) the remote side answered with, if any. */
  status?: number;
  /** Stable short code: `HTTP_503`, `ETIMEDOUT`, `ECONNREFUSED`, `RELAY_HANDLER_THREW`… */
  errorCode?: string;
  /** Short description for the audit row. Never a message body, never a secret. */
  error?: string;
  /** Extra facts for the audit row's `details` (small, no user text). */
  details?: Record<string, unknown>;
  /**
   * The audit row's `outcome` instead of the default (`delivered|retry|failed`), e.g. `ambiguous`
   * for a send whose result is unknown. The row's state still follows the outcome type.
   */
  label?: string;
  /**
   * Kind-specific facts the kind's effects step applies in the outcome transaction (handed over as
   * `Settlement.effects`, typed by the kind's `Effects`), e.g. a Telegram message id. Applied only
   * if the claim still holds.
   */
  effects?: Effects;
  /**
   * The attempt's own open transaction (see attempt-transaction.ts): the outcome is written on it
   * alone and committed with it, or rolled back when it cannot be.
   */
  transaction?: AttemptTransaction;
}

export interface Delivered<Effects = unknown> extends AttemptInfo<Effects> {
  type: 'delivered';
}

export interface Retry<Effects = unknown> extends AttemptInfo<Effects> {
  type: 'retry';
  /** The remote side asked for this delay (Retry-After); overrides the computed backoff. */
  afterMs?: number;
  /**
   * Not a failure of the item (a rate limit, a deferral before anything was sent): the attempt is
   * not counted against the budget and cannot exhaust it.
   */
  uncounted?: boolean;
  /**
   * For an uncounted retry without `afterMs`: back off as after this many failed attempts (full
   * jitter, capped by RETRY_CAP) instead of retrying at once. Used for configuration problems,
   * which are not the item's fault but must not be hammered.
   */
  backoffStep?: number;
}

export interface Terminal<Effects = unknown> extends AttemptInfo<Effects> {
  type: 'terminal';
  /** Why it can never succeed; stored in `failed_reason`. */
  reason: string;
}

/** `Effects`: what the job kind's effects step receives (see JobKind). */
export type Outcome<Effects = unknown> = Delivered<Effects> | Retry<Effects> | Terminal<Effects>;

export const Outcome = {
  delivered: <E = unknown>(info: AttemptInfo<E> = {}): Delivered<E> => ({ type: 'delivered', ...info }),
  retry: <E = unknown>(
    afterMs?: number,
    info: AttemptInfo<E> & { uncounted?: boolean; backoffStep?: number } = {},
  ): Retry<E> => ({
    type: 'retry',
    ...(afterMs === undefined ? {} : { afterMs }),
    ...info,
  }),
  terminal: <E = unknown>(reason: string, info: AttemptInfo<E> = {}): Terminal<E> => ({
    type: 'terminal',
    reason,
    ...info,
  }),
};
