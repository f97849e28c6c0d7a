import { createBoss, Pool } from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { attemptsOf, captureStates, countByState, insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let collector: Collector;
let child: WorkerProcess | undefined;
const boss = () => createBoss(db.url, { max: 1 });

beforeAll(async () => {
  db = await createMigratedDatabase('stop');
  collector = createCollector();
  await collector.start();
});

afterEach(async () => {
  await killWorker(child);
  child = undefined;
  collector.reset();
  await db.pool.query('truncate relay.captures, relay.attempts');
});

afterAll(async () => {
  await collector.stop();
  await db.drop();
});

describe('tg-relay worker on SIGTERM', () => {
  it('stops claiming, finishes in-flight deliveries and exits 0', async () => {
    collector.setFaults({ latencyMs: 700 });
    await insertCaptures(db.pool, boss(), 4);
    child = startWorkerProcess({
      DATABASE_URL: db.url,
      CAPTURE_URL: collector.captureUrl,
      WORKER_CONCURRENCY: '4',
      SHUTDOWN_TIMEOUT: '10s',
    });
    await workerStarted(child);
    await waitFor(async () => (await countByState(db.pool)).delivering === 4, { what: '4 in flight' });
    await insertCaptures(db.pool, boss(), 2); // arrives while draining: must not be claimed
    child.kill('SIGTERM');
    const exit = await exited(child);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(await countByState(db.pool)).toEqual({ delivered: 4, pending: 2 });
    expect(collector.received()).toHaveLength(4);
    expect(child.output()).toContain('shutdown complete');
  });

  it('past SHUTDOWN_TIMEOUT gives unfinished deliveries back to pending (not counted) and exits 0', async () => {
    collector.setFaults({ timeoutRate: 1 }); // the collector never answers
    const inserted = await insertCaptures(db.pool, boss(), 3);
    child = startWorkerProcess({
      DATABASE_URL: db.url,
      CAPTURE_URL: collector.captureUrl,
      WORKER_CONCURRENCY: '4',
      SHUTDOWN_TIMEOUT: '500ms',
      CAPTURE_TIMEOUT: '60s',
    });
    await workerStarted(child);
    await waitFor(async () => (await countByState(db.pool)).delivering === 3, { what: '3 in flight' });
    const t0 = Date.now();
    child.kill('SIGTERM');
    expect(await exited(child)).toEqual({ code: 0, signal: null });
    expect(Date.now() - t0).toBeLessThan(5_000);
    for (const s of await captureStates(db.pool))
      expect(s).toMatchObject({ state: 'pending', jobState: 'retry', attempts: 0, claimId: null });
    expect((await attemptsOf(db.pool, inserted[0].id)).map((a) => [a.outcome, a.error_code])).toEqual([
      ['retry', 'RELAY_RELEASED'],
    ]);
  });

  it('without CAPTURE_URL says capture delivery is disabled and leaves captures pending', async () => {
    await insertCaptures(db.pool, boss(), 2);
    child = startWorkerProcess({ DATABASE_URL: db.url, CAPTURE_URL: undefined });
    await workerStarted(child);
    expect(child.output()).toMatch(/CAPTURE_URL is not set: capture delivery is DISABLED/);
    await new Promise((r) => setTimeout(r, 500));
    expect(await countByState(db.pool)).toEqual({ pending: 2 });
    child.kill('SIGTERM');
    expect(await exited(child)).toEqual({ code: 0, signal: null });
  });
});
