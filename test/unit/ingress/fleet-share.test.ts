import fc from 'fast-check';
import { fairShare } from '../../../libs/ingress/fleet-share';

const shares = (bots: number, caps: number[]) => caps.map((c) => fairShare(bots, caps, c));

it('spreads bots evenly over pollers without caps in the way', () => {
  expect(shares(50, [100, 100])).toEqual([25, 25]);
  expect(shares(7, [100, 100, 100])).toEqual([3, 3, 3]);
  expect(shares(0, [100])).toEqual([0]);
});

it('gives what a capped poller cannot take to the others', () => {
  expect(shares(50, [5, 100])).toEqual([5, 45]);
  expect(shares(10, [1, 2, 100])).toEqual([1, 2, 7]);
  // every poller capped: each takes all it may, and the rest wait for room
  expect(shares(100, [10, 20])).toEqual([10, 20]);
});

it('never leaves a bot unpolled while a poller has room, never exceeds a cap, and differs by at most one where uncapped', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 5000 }),
      fc.array(fc.integer({ min: 1, max: 1000 }), { minLength: 1, maxLength: 20 }),
      (bots, caps) => {
        const s = shares(bots, caps);
        const total = s.reduce((a, b) => a + b, 0);
        const capacity = caps.reduce((a, b) => a + b, 0);
        expect(total).toBeGreaterThanOrEqual(Math.min(bots, capacity));
        s.forEach((v, i) => expect(v).toBeLessThanOrEqual(caps[i]));
        const uncapped = s.filter((v, i) => v < caps[i]);
        if (uncapped.length) expect(Math.max(...uncapped) - Math.min(...uncapped)).toBeLessThanOrEqual(1);
      },
    ),
  );
});
