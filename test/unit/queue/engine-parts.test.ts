import { OutcomeWriter } from '../../../libs/queue/outcome-writer';
import { HeldClaims } from '../../../libs/queue/held-claims';
import type { ClaimedJob } from '../../../libs/queue/job-kind';
import { WakeSignal } from '../../../libs/queue/signal';
import { staleTiming } from '../../../libs/queue/claim-loop';
import { silentLogger } from '../../../libs/observability/logger';

describe('WakeSignal', () => {
  it('a notify before the wait is not lost, and many notifies collapse into one', async () => {
    const s = new WakeSignal();
    s.notify();
    s.notify();
    expect(await s.wait(1_000)).toBe(true);
    const t0 = Date.now();
    expect(await s.wait(30)).toBe(false);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(25);
  });

  it('wakes a waiting loop at once', async () => {
    const s = new WakeSignal();
    const t0 = Date.now();
    setTimeout(() => s.notify(), 10);
    expect(await s.wait(5_000)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });
});

describe('OutcomeWriter', () => {
  it('group-commits whatever finished while the previous write ran', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    let first = true;
    const w = new OutcomeWriter<number>(async (b) => {
      batches.push(b);
      if (first) {
        first = false;
        await new Promise<void>((r) => (release = r));
      }
    }, silentLogger());
    const p1 = w.submit(1);
    await new Promise((r) => setImmediate(r));
    const rest = [2, 3, 4].map((n) => w.submit(n));
    release();
    await Promise.all([p1, ...rest]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('retries a failed write until it lands; the submitter waits for it', async () => {
    let calls = 0;
    const w = new OutcomeWriter<string>(() => {
      calls++;
      return calls < 3 ? Promise.reject(new Error('connection terminated')) : Promise.resolve();
    }, silentLogger());
    await w.submit('x');
    expect(calls).toBe(3);
  });

  it('abandon() releases waiters of a write that cannot land', async () => {
    const w = new OutcomeWriter<string>(() => Promise.reject(new Error('down')), silentLogger());
    const p = w.submit('x');
    await new Promise((r) => setTimeout(r, 20));
    w.abandon();
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise((r) => (timer = setTimeout(() => r('stuck'), 6_000)));
    await expect(Promise.race([p.then(() => 'done'), stuck])).resolves.toBe('done');
    clearTimeout(timer);
    await w.idle();
  });
});

describe('staleTiming', () => {
  it('heartbeats every STALE_AFTER/5 and counts a claim stale after 4/5 of STALE_AFTER', () => {
    expect(staleTiming(30_000)).toEqual({ tickMs: 6_000, thresholdMs: 24_000 });
    expect(staleTiming(2_000)).toEqual({ tickMs: 400, thresholdMs: 1_600 });
  });
});

describe('HeldClaims', () => {
  const job = (claimId: string) => ({ claimId }) as ClaimedJob<unknown>;

  it('a claim takes a slot until its attempt ends or it is dropped, and stays held until its outcome is written', () => {
    let freed = 0;
    const claims = new HeldClaims<unknown>(() => freed++);
    for (const id of ['a', 'b', 'c']) claims.add(job(id));
    expect([claims.size, claims.running]).toEqual([3, 3]);
    claims.releaseSlot('a');
    claims.releaseSlot('a'); // once only
    expect([claims.size, claims.running, freed]).toEqual([3, 2, 1]);
    claims.free('a'); // its slot was already given back
    expect([claims.size, claims.running, freed]).toEqual([2, 2, 2]);
    claims.free('b'); // outcome written on its own transaction: slot and claim at once
    expect([claims.size, claims.running]).toEqual([1, 1]);
    claims.delete('c'); // released at shutdown
    expect([claims.size, claims.running]).toEqual([0, 0]);
    claims.add(job('d'));
    claims.clear();
    expect([claims.size, claims.running]).toEqual([0, 0]);
  });
});
