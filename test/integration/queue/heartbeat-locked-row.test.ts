/**
 * One claimed row locked by another session (an operator's open transaction) past DB_LOCK_TIMEOUT
 * and past the heartbeat limit costs only that row: the worker's other claims keep their heartbeat,
 * their attempts run to the end and are delivered once.
 */
import { createBoss, Pool } from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { attemptsOf, countByState, insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let collector: Collector;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('hblock');
  collector = createCollector();
  await collector.start();
});

afterAll(async () => {
  await killWorker(worker);
  await collector.stop();
  await db.drop();
});

it('a row held by another session past the heartbeat limit does not abort the other claims', async () => {
  // STALE_AFTER 2 s: heartbeats every 400 ms, claims taken as lost after 1.2 s without one.
  collector.setFaults({ latencyMs: 6_000 }); // every delivery is in flight for 6 s
  const inserted = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 4);
  worker = startWorkerProcess({
    DATABASE_URL: db.url,
    CAPTURE_URL: collector.captureUrl,
    STALE_AFTER: '2s',
    DB_LOCK_TIMEOUT: '300ms',
    WORKER_CONCURRENCY: '4',
    CAPTURE_TIMEOUT: '30s',
  });
  await workerStarted(worker);
  await waitFor(async () => (await countByState(db.pool)).delivering === 4, { what: '4 in flight' });

  const [held, ...others] = inserted;
  const operator = await db.pool.connect();
  try {
    await operator.query('begin');
    await operator.query('select 1 from relay.captures where id = $1 for update', [held.id]);
    await new Promise((r) => setTimeout(r, 3_000)); // 2.5× the heartbeat limit, 10× the lock timeout
    await operator.query('rollback');
  } finally {
    operator.release();
  }

  await waitFor(async () => (await countByState(db.pool)).delivered === 4, {
    what: 'all 4 delivered',
    timeoutMs: 40_000,
  });
  for (const c of others) {
    const attempts = await attemptsOf(db.pool, c.id);
    expect(attempts.map((a) => a.outcome)).toEqual(['delivered']);
  }
  const keys = collector.attempts().map((a) => a.key);
  for (const c of others) expect(keys.filter((k) => k === c.key)).toHaveLength(1);
  expect(worker.output()).toContain('claim locked by another session past the heartbeat limit');
}, 60_000);
