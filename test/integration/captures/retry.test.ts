import { createBoss, Pool } from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { ManualClock, Worker } from '../../../libs/queue';
import { attemptsOf, captureStates, CaptureState, insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { startCaptureWorker } from '../../support/worker-harness';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let collector: Collector;
const boss = () => createBoss(db.url, { max: 1 });
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('capretry');
  collector = createCollector();
  await collector.start();
});

afterEach(async () => {
  await worker?.stop({ timeoutMs: 5_000 });
  worker = undefined;
  collector.reset();
  await db.pool.query('truncate relay.captures, relay.attempts');
});

afterAll(async () => {
  await collector.stop();
  await db.drop();
});

async function one(): Promise<CaptureState> {
  return (await captureStates(db.pool))[0];
}

/** Waits until the single capture has finished `attempts` attempts and is pending again. */
async function pendingAfter(attempts: number): Promise<CaptureState> {
  return waitFor(
    async () => {
      const s = await one();
      return s.state === 'pending' && s.attempts === attempts ? s : undefined;
    },
    { what: `pending after attempt ${attempts}` },
  );
}

describe('capture retries', () => {
  it('a 503 is retried with exponential full-jitter backoff, capped; row and pg-boss job agree on when', async () => {
    collector.setFaults({ failNext: { count: 4, mode: 'unavailable' } });
    const [c] = await insertCaptures(db.pool, boss(), 1);
    const clock = new ManualClock(Date.now()); // after the insert: the row is due on this clock
    worker = startCaptureWorker({
      url: db.url,
      pool: db.pool,
      captureUrl: collector.captureUrl,
      clock,
      random: () => 0.5,
      config: { retry: { baseMs: 1_000, capMs: 4_000, maxAttempts: 12 } },
    });
    await worker.start();
    // full jitter: floor(random · min(cap, base · 2^(attempt-1))) with random = 0.5
    const expected = [500, 1_000, 2_000, 2_000];
    for (const [i, delay] of expected.entries()) {
      const s = await pendingAfter(i + 1);
      expect(s.nextAttemptAt.getTime()).toBe(clock.now().getTime() + delay);
      expect(s).toMatchObject({ jobState: 'retry', lastStatus: 503, claimId: null });
      expect(s.jobStartAfter!.getTime()).toBe(s.nextAttemptAt.getTime());
      // not due yet: a wake-up claims nothing
      clock.advance(delay - 1);
      worker.kinds[0].wake();
      await new Promise((r) => setTimeout(r, 50));
      expect(await one()).toMatchObject({ state: 'pending', attempts: i + 1 });
      clock.advance(1);
      worker.kinds[0].wake();
    }
    await waitFor(async () => (await one()).state === 'delivered', { what: 'delivered' });
    expect(await one()).toMatchObject({ state: 'delivered', jobState: 'completed', attempts: 5 });
    const audit = await attemptsOf(db.pool, c.id);
    expect(audit.map((a) => [a.attempt, a.outcome, a.http_status, a.details?.delayMs ?? null])).toEqual([
      [1, 'retry', 503, 500],
      [2, 'retry', 503, 1_000],
      [3, 'retry', 503, 2_000],
      [4, 'retry', 503, 2_000],
      [5, 'delivered', 200, null],
    ]);
    expect(collector.received()).toHaveLength(1);
  });

  it('Retry-After from the collector overrides the backoff', async () => {
    collector.setFaults({ failNext: { count: 1, mode: 'unavailable' }, retryAfterSeconds: 7 });
    const [c] = await insertCaptures(db.pool, boss(), 1);
    const clock = new ManualClock(Date.now()); // after the insert: the row is due on this clock
    worker = startCaptureWorker({
      url: db.url,
      pool: db.pool,
      captureUrl: collector.captureUrl,
      clock,
      random: () => 0.5,
    });
    await worker.start();
    const s = await pendingAfter(1);
    expect(s.nextAttemptAt.getTime()).toBe(clock.now().getTime() + 7_000);
    const [a] = await attemptsOf(db.pool, c.id);
    expect(a).toMatchObject({ outcome: 'retry', http_status: 503, error_code: 'HTTP_503' });
    expect(a.details).toMatchObject({ retryAfterMs: 7_000, delayMs: 7_000 });
    clock.advance(7_000);
    worker.kinds[0].wake();
    await waitFor(async () => (await one()).state === 'delivered', { what: 'delivered' });
  });

  it.each([408, 429])('HTTP %i is retried, not failed', async (status) => {
    collector.setFaults({ failNext: { count: 1, mode: 'reject' }, rejectStatus: status });
    await insertCaptures(db.pool, boss(), 1);
    const clock = new ManualClock(Date.now()); // after the insert: the row is due on this clock
    worker = startCaptureWorker({
      url: db.url,
      pool: db.pool,
      captureUrl: collector.captureUrl,
      clock,
      random: () => 0,
    });
    await worker.start();
    // random 0: the retry is due at once
    await waitFor(async () => (await one()).state === 'delivered', { what: 'delivered' });
    expect(await one()).toMatchObject({ attempts: 2, jobState: 'completed' });
  });

  it('a timeout and a dropped connection are retried with their error codes', async () => {
    collector.setFaults({ failNext: { count: 1, mode: 'timeout' } });
    const [c] = await insertCaptures(db.pool, boss(), 1);
    worker = startCaptureWorker({
      url: db.url,
      pool: db.pool,
      captureUrl: collector.captureUrl,
      timeoutMs: 200,
      random: () => 0,
    });
    await worker.start();
    await waitFor(async () => (await one()).state === 'delivered', { what: 'delivered after a timeout' });
    await worker.stop();
    collector.reset();
    collector.setFaults({ failNext: { count: 1, mode: 'drop' } });
    const [d] = await insertCaptures(db.pool, boss(), 1);
    worker = startCaptureWorker({ url: db.url, pool: db.pool, captureUrl: collector.captureUrl, random: () => 0 });
    await worker.start();
    await waitFor(async () => (await captureStates(db.pool)).every((s) => s.state === 'delivered'), {
      what: 'delivered after a drop',
    });
    expect((await attemptsOf(db.pool, c.id)).map((a) => [a.outcome, a.error_code])).toEqual([
      ['retry', 'TIMEOUT'],
      ['delivered', null],
    ]);
    const dropped = await attemptsOf(db.pool, d.id);
    expect(dropped[0]).toMatchObject({ outcome: 'retry', http_status: null });
    expect(dropped[0].error_code).toMatch(/^(ECONNRESET|UND_ERR_SOCKET|NETWORK_ERROR|EPIPE)$/);
  });

  it('spending the attempt budget fails the capture with the reason; its job fails too', async () => {
    collector.setFaults({ unavailableRate: 1 });
    const [c] = await insertCaptures(db.pool, boss(), 1);
    const clock = new ManualClock(Date.now()); // after the insert: the row is due on this clock
    worker = startCaptureWorker({
      url: db.url,
      pool: db.pool,
      captureUrl: collector.captureUrl,
      clock,
      random: () => 0.999,
      config: { retry: { baseMs: 1_000, capMs: 300_000, maxAttempts: 3 } },
    });
    await worker.start();
    for (const n of [1, 2]) {
      const s = await pendingAfter(n);
      clock.set(s.nextAttemptAt);
      worker.kinds[0].wake();
    }
    await waitFor(async () => (await one()).state === 'failed', { what: 'failed' });
    const s = await one();
    expect(s).toMatchObject({ state: 'failed', jobState: 'failed', attempts: 3, lastStatus: 503 });
    expect(s.failedReason).toMatch(/attempt budget spent \(3 of 3\)/);
    expect((await attemptsOf(db.pool, c.id)).map((a) => a.outcome)).toEqual(['retry', 'retry', 'failed']);
    expect(collector.attempts()).toHaveLength(3);
  });
});
