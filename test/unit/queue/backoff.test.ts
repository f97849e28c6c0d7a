import { backoffDelayMs, parseRetryAfter, RETRY_AFTER_MAX_MS, retryDelayMs } from '../../../libs/queue/backoff';

const policy = { baseMs: 1_000, capMs: 300_000 };

describe('backoff', () => {
  it('is exponential with full jitter: uniform in [0, min(cap, base·2^(attempt-1)))', () => {
    expect([1, 2, 3, 4, 5].map((a) => backoffDelayMs(policy, a, () => 0.999999))).toEqual([
      999, 1_999, 3_999, 7_999, 15_999,
    ]);
    expect(backoffDelayMs(policy, 3, () => 0)).toBe(0);
    expect(backoffDelayMs(policy, 3, () => 0.5)).toBe(2_000);
  });

  it('never exceeds the cap, even for huge attempt numbers', () => {
    for (const attempt of [9, 10, 12, 50, 1_000])
      expect(backoffDelayMs(policy, attempt, () => 0.999999)).toBeLessThan(300_000);
    expect(backoffDelayMs(policy, 1_000, () => 0.5)).toBe(150_000);
  });

  it('spreads delays (jitter) with the default random source', () => {
    const delays = new Set(Array.from({ length: 50 }, () => backoffDelayMs(policy, 6)));
    expect(delays.size).toBeGreaterThan(40);
    for (const d of delays) expect(d).toBeGreaterThanOrEqual(0);
    for (const d of delays) expect(d).toBeLessThan(32_000);
  });

  it('a Retry-After from the remote side overrides it, clamped to [0, 1 h]', () => {
    expect(retryDelayMs(policy, 1, 7_000, () => 0.5)).toBe(7_000);
    expect(retryDelayMs(policy, 12, 0, () => 0.5)).toBe(0);
    expect(retryDelayMs(policy, 1, 10 * RETRY_AFTER_MAX_MS)).toBe(RETRY_AFTER_MAX_MS);
    expect(retryDelayMs(policy, 2, undefined, () => 0.5)).toBe(1_000);
  });
});

describe('parseRetryAfter', () => {
  const now = new Date('2025-01-01T00:00:00Z');
  it('reads delay-seconds and HTTP dates', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 1.5 ', now)).toBe(1_500);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:00:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
  });
});
