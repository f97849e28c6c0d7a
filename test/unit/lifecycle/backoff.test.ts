import fc from 'fast-check';
import { backoffMs } from '../../../libs/lifecycle/backoff';

describe('backoffMs', () => {
  const base = { baseMs: 100, capMs: 1_000 };

  it('doubles from the base up to the cap', () => {
    const none = { ...base, jitter: 'none' as const };
    expect([1, 2, 3, 4, 5, 50].map((n) => backoffMs(none, n))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
  });

  it('full jitter is uniform in [0, ceiling), equal jitter in [ceiling/2, ceiling]', () => {
    expect(backoffMs(base, 3, () => 0)).toBe(0);
    expect(backoffMs(base, 3, () => 0.999)).toBe(399);
    expect(backoffMs({ ...base, jitter: 'equal' }, 3, () => 0)).toBe(200);
    expect(backoffMs({ ...base, jitter: 'equal' }, 3, () => 1)).toBe(400);
  });

  it('stays a finite delay within [0, cap] for any failure count, policy and random draw', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 1, max: 3_600_000 }),
        fc.oneof(fc.integer({ min: -5, max: 10_000 }), fc.double({ noNaN: true, min: -1e6, max: 1e6 })),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.constantFrom('full', 'equal', 'none'),
        (baseMs, capMs, failures, r, jitter) => {
          const d = backoffMs({ baseMs, capMs, jitter: jitter as 'full' }, failures, () => r);
          expect(Number.isFinite(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThanOrEqual(Math.max(capMs, baseMs));
        },
      ),
    );
  });
});
