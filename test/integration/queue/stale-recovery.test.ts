import { createBoss, Pool, QUEUES, withTransaction } from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { createCaptureStore } from '../../../libs/captures/deliver';
import { ManualClock, recoverStaleOnce, Worker } from '../../../libs/queue';
import {
  attemptsOf,
  captureStates,
  countByState,
  inconsistentCaptures,
  insertCaptures,
} from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { startCaptureWorker } from '../../support/worker-harness';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let collector: Collector;
const boss = () => createBoss(db.url, { max: 1 });
const workers: Worker[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('stale');
  collector = createCollector();
  await collector.start();
});

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 5_000 })));
  collector.reset();
  await db.pool.query('truncate relay.captures, relay.attempts');
});

afterAll(async () => {
  await collector.stop();
  await db.drop();
});

describe('stale recovery and fencing', () => {
  it('claims of a worker that stopped heartbeating return after STALE_AFTER and are redelivered; its late outcome is fenced off', async () => {
    const inserted = await insertCaptures(db.pool, boss(), 3);
    const clock = new ManualClock(Date.now());
    const store = createCaptureStore();
    // a worker claims three captures, then vanishes (no heartbeat, no outcome)
    const ghost = await store.claim(db.pool, {
      limit: 10,
      workerId: 'ghost:1',
      now: clock.now(),
      queue: QUEUES.capture,
    });
    expect(ghost).toHaveLength(3);
    expect((await captureStates(db.pool)).map((s) => [s.state, s.jobState])).toEqual(
      Array(3).fill(['delivering', 'active']),
    );

    const w = startCaptureWorker({
      url: db.url,
      pool: db.pool,
      captureUrl: collector.captureUrl,
      clock,
      config: { staleAfterMs: 30_000 },
    });
    workers.push(w);
    await w.start();
    // 4/5 of STALE_AFTER without heartbeat is not stale yet
    clock.advance(24_000);
    expect(await w.kinds[0].recoverStaleNow()).toBe(0);
    clock.advance(1);
    expect(await w.kinds[0].recoverStaleNow()).toBe(3);
    await waitFor(async () => (await countByState(db.pool)).delivered === 3, { what: 'redelivered' });

    // the vanished worker comes back with outcomes for its old claims: nothing changes
    const settled = await withTransaction(db.pool, (c) =>
      store.settle(
        c,
        ghost.map((g) => ({ id: g.id, claimId: g.claimId, state: 'failed', failedReason: 'late' })),
        clock.now(),
      ),
    );
    expect(settled).toEqual([]);
    const states = await captureStates(db.pool);
    for (const s of states)
      expect(s).toMatchObject({
        state: 'delivered',
        jobState: 'completed',
        attempts: 2,
        workerId: w.workerId,
        failedReason: null,
      });
    expect(await inconsistentCaptures(db.pool)).toEqual([]);
    const audit = await attemptsOf(db.pool, inserted[0].id);
    expect(audit.map((a) => [a.attempt, a.worker_id, a.outcome, a.error_code])).toEqual([
      [1, 'ghost:1', 'retry', 'RELAY_STALE_CLAIM'],
      [2, w.workerId, 'delivered', null],
    ]);
    expect(audit[0].details).toMatchObject({ recoveredBy: w.workerId });
    expect(collector.duplicates()).toEqual([]);
  });

  it('a worker that lost its claim aborts the attempt and cannot overwrite the redelivery', async () => {
    collector.setFaults({ failNext: { count: 1, mode: 'timeout' } }); // the first POST hangs
    const [c] = await insertCaptures(db.pool, boss(), 1);
    const clock = new ManualClock(Date.now());
    const w = startCaptureWorker({
      url: db.url,
      pool: db.pool,
      captureUrl: collector.captureUrl,
      clock,
      timeoutMs: 30_000,
      config: { staleAfterMs: 500 },
    });
    workers.push(w);
    await w.start();
    await waitFor(() => collector.attempts().length === 1, { what: 'first POST in flight' });
    // an operator (admin API) recovers it as stale while the POST still hangs; its clock is ahead of
    // the worker's, so a heartbeat the worker writes meanwhile (at the worker's time) cannot make the
    // claim look fresh (seen under load with a shared clock advanced by 1 ms)
    const recovered = await recoverStaleOnce({
      pool: db.pool,
      boss: boss(),
      kind: { queue: QUEUES.capture, store: createCaptureStore() },
      staleMs: 0,
      maxAttempts: 12,
      workerId: 'admin',
      clock: new ManualClock(clock.now().getTime() + 1_000),
    });
    clock.advance(1_000); // the worker's time catches up: the redelivery is due for it
    expect(recovered).toBe(1);
    // the heartbeat notices the lost claim and aborts the hanging POST; the row is redelivered
    await waitFor(async () => (await captureStates(db.pool))[0].state === 'delivered', { what: 'redelivered' });
    await waitFor(async () => (await attemptsOf(db.pool, c.id)).length === 3, { what: 'three audit rows' });
    const audit = await attemptsOf(db.pool, c.id);
    expect(audit.map((a) => [a.attempt, a.outcome, a.error_code, a.details?.fenced ?? false])).toEqual(
      expect.arrayContaining([
        [1, 'retry', 'RELAY_STALE_CLAIM', false],
        [1, 'retry', 'RELAY_CLAIM_LOST', true],
        [2, 'delivered', null, false],
      ]),
    );
    const [s] = await captureStates(db.pool);
    expect(s).toMatchObject({ state: 'delivered', jobState: 'completed', attempts: 2 });
    expect(w.kinds[0].stats.fenced).toBe(1);
  });

  it('a delivery that outlasts STALE_AFTER keeps its claim while its worker heartbeats', async () => {
    collector.setFaults({ latencyMs: 1_500 });
    const [c] = await insertCaptures(db.pool, boss(), 1);
    const cfg = { staleAfterMs: 500 };
    const a = startCaptureWorker({ url: db.url, pool: db.pool, captureUrl: collector.captureUrl, config: cfg });
    const b = startCaptureWorker({ url: db.url, pool: db.pool, captureUrl: collector.captureUrl, config: cfg }); // sweeps too
    workers.push(a, b);
    await a.start();
    await b.start();
    await waitFor(async () => (await captureStates(db.pool))[0].state === 'delivered', {
      what: 'delivered',
      timeoutMs: 10_000,
    });
    expect(collector.attempts()).toHaveLength(1);
    expect((await attemptsOf(db.pool, c.id)).map((x) => x.outcome)).toEqual(['delivered']);
    expect(a.kinds[0].stats.recovered + b.kinds[0].stats.recovered).toBe(0);
  });
});
