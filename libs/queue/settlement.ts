import { BackoffPolicy, retryDelayMs } from './backoff';
import type { ClaimedJob, Settlement } from './job-kind';
import type { Outcome } from './outcome';
import type { AttemptRow } from './queries';

/** What the engine writes for one finished attempt: the row's next state and its audit row. */
export interface Decision<Effects = unknown> {
  settlement: Settlement<Effects>;
  /** The audit row's outcome (the outcome's `label` wins, see claim-loop). */
  auditOutcome: AttemptRow['outcome'];
  /** For retries: the delay chosen and whether the remote side imposed it. */
  delayMs?: number;
  retryAfterMs?: number;
}

/**
 * Outcome → next state. Delivered → delivered. Terminal → failed with its reason. Retry → pending
 * after the remote side's Retry-After, else exponential full-jitter backoff; but failed once this
 * attempt was the last of the budget (the row's max_attempts, else RETRY_MAX_ATTEMPTS). An
 * uncounted Retry (rate limit) is pending after its own delay and never spends the budget.
 */
export function decideSettlement<E>(
  job: ClaimedJob<unknown>,
  outcome: Outcome<E>,
  policy: BackoffPolicy,
  random?: () => number,
): Decision<E> {
  const base = {
    id: job.id,
    claimId: job.claimId,
    status: outcome.status,
    error: outcome.type === 'delivered' ? undefined : outcome.error,
    ...(outcome.effects === undefined ? {} : { effects: outcome.effects }),
  };
  switch (outcome.type) {
    case 'delivered':
      return { settlement: { ...base, state: 'delivered' }, auditOutcome: 'delivered' };
    case 'terminal':
      return { settlement: { ...base, state: 'failed', failedReason: outcome.reason }, auditOutcome: 'failed' };
    case 'retry': {
      const budget = job.maxAttempts ?? policy.maxAttempts;
      if (outcome.uncounted) {
        // not the item's failure: the delay is the remote side's (or at once), and the budget is untouched
        const delayMs = retryDelayMs(
          policy,
          outcome.backoffStep ?? job.attempt,
          outcome.afterMs ?? (outcome.backoffStep !== undefined ? undefined : 0),
          random,
        );
        return {
          settlement: { ...base, state: 'pending', delayMs, uncounted: true },
          auditOutcome: 'retry',
          delayMs,
          retryAfterMs: outcome.afterMs,
        };
      }
      if (job.attempt >= budget) {
        const why = outcome.error ?? outcome.errorCode ?? 'retryable failure';
        return {
          settlement: {
            ...base,
            state: 'failed',
            failedReason: `attempt budget spent (${job.attempt} of ${budget}); last error: ${why}`,
          },
          auditOutcome: 'failed',
        };
      }
      const delayMs = retryDelayMs(policy, job.attempt, outcome.afterMs, random);
      return {
        settlement: { ...base, state: 'pending', delayMs },
        auditOutcome: 'retry',
        delayMs,
        retryAfterMs: outcome.afterMs,
      };
    }
  }
}
