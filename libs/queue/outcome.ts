/**
 * What one attempt of a job came to, as an explicit value (no exceptions caught far away).
 * The engine turns it into a state change: Delivered → `delivered`; Retry → back to `pending` with
 * `next_attempt_at` (or `failed` once the attempt budget is spent); Terminal → `failed` at once.
 */
export interface AttemptInfo {
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
   * Kind-specific facts the kind's own `settle` applies in the outcome transaction (handed over as
   * `Settlement.effects`), e.g. a Telegram message id. Applied only if the claim still holds.
   */
  effects?: unknown;
}

export interface Delivered extends AttemptInfo {
  type: 'delivered';
}

export interface Retry extends AttemptInfo {
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

export interface Terminal extends AttemptInfo {
  type: 'terminal';
  /** Why it can never succeed; stored in `failed_reason`. */
  reason: string;
}

export type Outcome = Delivered | Retry | Terminal;

export const Outcome = {
  delivered: (info: AttemptInfo = {}): Delivered => ({ type: 'delivered', ...info }),
  retry: (afterMs?: number, info: AttemptInfo & { uncounted?: boolean; backoffStep?: number } = {}): Retry => ({
    type: 'retry',
    ...(afterMs === undefined ? {} : { afterMs }),
    ...info,
  }),
  terminal: (reason: string, info: AttemptInfo = {}): Terminal => ({ type: 'terminal', reason, ...info }),
};
