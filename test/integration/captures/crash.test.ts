import { createBoss, Pool } from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import {
  attemptsOf,
  captureStates,
  countByState,
  inconsistentCaptures,
  insertCaptures,
} from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let collector: Collector;
const children: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('crash');
  collector = createCollector();
  await collector.start();
});

afterEach(async () => {
  await Promise.all(children.splice(0).map(killWorker));
  collector.reset();
});

afterAll(async () => {
  await collector.stop();
  await db.drop();
});

describe('a worker killed with SIGKILL', () => {
  it('leaves its in-flight deliveries to another replica within STALE_AFTER; rows and pg-boss jobs stay in step', async () => {
    const STALE_MS = 2_000;
    const env = {
      DATABASE_URL: db.url,
      CAPTURE_URL: collector.captureUrl,
      STALE_AFTER: `${STALE_MS}ms`,
      WORKER_CONCURRENCY: '4',
      CAPTURE_TIMEOUT: '60s',
    };
    collector.setFaults({ timeoutRate: 1 }); // every POST hangs: the first worker holds its claims
    const inserted = await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 4);

    const victim = startWorkerProcess(env);
    children.push(victim);
    const victimId = await workerStarted(victim);
    await waitFor(async () => (await countByState(db.pool)).delivering === 4 && collector.attempts().length === 4, {
      what: '4 in flight',
    });
    expect((await captureStates(db.pool)).map((s) => [s.workerId, s.jobState])).toEqual(
      Array(4).fill([victimId, 'active']),
    );

    const survivor = startWorkerProcess(env);
    children.push(survivor);
    const survivorId = await workerStarted(survivor);
    collector.setFaults(null);

    victim.kill('SIGKILL');
    await exited(victim);
    const killedAt = Date.now();
    await waitFor(async () => (await countByState(db.pool)).delivered === 4, {
      what: 'redelivered',
      timeoutMs: 15_000,
    });
    const elapsed = Date.now() - killedAt;
    // recovered once the last heartbeat is 4/5·STALE_AFTER old; heartbeats came every STALE_AFTER/5
    expect(elapsed).toBeGreaterThanOrEqual(STALE_MS * 0.6 - 100);
    expect(elapsed).toBeLessThan(STALE_MS + 1_500); // slack for a loaded test machine

    for (const s of await captureStates(db.pool))
      expect(s).toMatchObject({ state: 'delivered', jobState: 'completed', attempts: 2, workerId: survivorId });
    expect(await inconsistentCaptures(db.pool)).toEqual([]);
    const audit = await attemptsOf(db.pool, inserted[0].id);
    expect(audit.map((a) => [a.attempt, a.worker_id, a.outcome, a.error_code])).toEqual([
      [1, victimId, 'retry', 'RELAY_STALE_CLAIM'],
      [2, survivorId, 'delivered', null],
    ]);
    expect(collector.duplicates()).toEqual([]);
    expect(collector.received()).toHaveLength(4);
  });
});
