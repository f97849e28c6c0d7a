import { decideSettlement } from '../../../libs/queue/settlement';
import { Outcome } from '../../../libs/queue/outcome';
import type { ClaimedJob } from '../../../libs/queue/job-kind';

const policy = { baseMs: 1_000, capMs: 300_000, maxAttempts: 3 };
const job = (attempt: number, maxAttempts: number | null = null): ClaimedJob<unknown> => ({
  id: '1',
  key: 'k',
  jobId: 'j',
  claimId: 'c',
  attempt,
  maxAttempts,
  row: {},
});

describe('outcome → next state', () => {
  it('Delivered → delivered', () => {
    expect(decideSettlement(job(1), Outcome.delivered({ status: 200 }), policy)).toMatchObject({
      settlement: { state: 'delivered', status: 200 },
      auditOutcome: 'delivered',
    });
  });

  it('Terminal → failed with its reason, whatever the budget left', () => {
    expect(decideSettlement(job(1), Outcome.terminal('rejected with HTTP 422', { status: 422 }), policy)).toMatchObject(
      {
        settlement: { state: 'failed', failedReason: 'rejected with HTTP 422' },
        auditOutcome: 'failed',
      },
    );
  });

  it('Retry → pending after the backoff, or after Retry-After', () => {
    expect(decideSettlement(job(2), Outcome.retry(), policy, () => 0.5)).toMatchObject({
      settlement: { state: 'pending', delayMs: 1_000 },
      delayMs: 1_000,
      auditOutcome: 'retry',
    });
    expect(decideSettlement(job(2), Outcome.retry(9_000), policy, () => 0.5)).toMatchObject({
      settlement: { state: 'pending', delayMs: 9_000 },
      retryAfterMs: 9_000,
    });
  });

  it('Retry on the last attempt of the budget → failed, naming the last error', () => {
    const d = decideSettlement(
      job(3),
      Outcome.retry(undefined, { status: 503, error: 'collector answered 503' }),
      policy,
    );
    expect(d).toMatchObject({ settlement: { state: 'failed' }, auditOutcome: 'failed' });
    expect(d.settlement.failedReason).toBe('attempt budget spent (3 of 3); last error: collector answered 503');
  });

  it("a row's own max_attempts wins over RETRY_MAX_ATTEMPTS", () => {
    expect(decideSettlement(job(3, 5), Outcome.retry(), policy, () => 0).settlement.state).toBe('pending');
    expect(decideSettlement(job(1, 1), Outcome.retry(), policy, () => 0).settlement.state).toBe('failed');
  });
});

describe('uncounted retries and labels', () => {
  it('an uncounted Retry (rate limit) is pending after its own delay even on the last attempt of the budget', () => {
    const d = decideSettlement(
      job(3),
      Outcome.retry(4_000, { uncounted: true, errorCode: 'TELEGRAM_429' }),
      policy,
      () => 0.5,
    );
    expect(d).toMatchObject({
      settlement: { state: 'pending', delayMs: 4_000, uncounted: true },
      auditOutcome: 'retry',
    });
    expect(
      decideSettlement(job(1), Outcome.retry(undefined, { uncounted: true }), policy, () => 0.5).settlement.delayMs,
    ).toBe(0);
  });

  it('effects travel to the settlement for the kind to apply', () => {
    const d = decideSettlement(job(1), Outcome.delivered({ effects: { messageId: 5 } }), policy);
    expect(d.settlement.effects).toEqual({ messageId: 5 });
  });
});
