import { createBoss, Pool } from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { captureStates, countByState, inconsistentCaptures, insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let collector: Collector;
const children: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('replicas');
  collector = createCollector();
  await collector.start();
});

afterAll(async () => {
  await Promise.all(children.splice(0).map(killWorker));
  await collector.stop();
  await db.drop();
});

describe('two worker replicas', () => {
  it('never deliver the same capture twice: each is POSTed once, by one of them', async () => {
    const env = { DATABASE_URL: db.url, CAPTURE_URL: collector.captureUrl, WORKER_CONCURRENCY: '4' };
    collector.setFaults({ latencyMs: 5 });
    const a = startWorkerProcess(env);
    const b = startWorkerProcess(env);
    children.push(a, b);
    const ids = [await workerStarted(a), await workerStarted(b)];
    const boss = createBoss(db.url, { max: 1 });
    // enqueue while both run, in small transactions like the poller does
    for (let i = 0; i < 30; i++) await insertCaptures(db.pool, boss, 10);
    await waitFor(async () => (await countByState(db.pool)).delivered === 300, {
      what: '300 delivered',
      timeoutMs: 30_000,
    });

    expect(collector.duplicates()).toEqual([]);
    expect(collector.stats()).toMatchObject({ attempts: 300, received: 300, unique_keys: 300 });
    const states = await captureStates(db.pool);
    expect(states.every((s) => s.attempts === 1)).toBe(true);
    expect(await inconsistentCaptures(db.pool)).toEqual([]);
    const { rows } = await db.pool.query(`select worker_id, count(*)::int as n from relay.attempts group by worker_id`);
    expect(rows.map((r) => r.worker_id).sort()).toEqual([...ids].sort()); // both took part
    expect(rows.reduce((n, r) => n + r.n, 0)).toBe(300);
  });
});
