/** POST /v1/recover-stale after a real worker process was killed with SIGKILL mid-delivery. */
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { createCollector, Collector } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';
import { buildTestApp, call, startBoss } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;
let collector: Collector;
let victim: WorkerProcess | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('admin_stale');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss);
  collector = createCollector();
  await collector.start();
});

afterAll(async () => {
  await killWorker(victim);
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await collector?.stop();
  await db?.drop();
});

const byState = async () =>
  Object.fromEntries(
    (await db.pool.query(`select state, count(*)::int as n from relay.captures group by state`)).rows.map((r) => [
      r.state,
      r.n,
    ]),
  );

test('older_than is validated', async () => {
  for (const body of [{ older_than: '10ms' }, { older_than: 'soon' }, { older_than: 500 }, { kinds: ['mail'] }]) {
    const res = await call(app, 'POST', '/v1/recover-stale', { body });
    expect([JSON.stringify(body), res.statusCode, res.json().code]).toEqual([
      JSON.stringify(body),
      400,
      'RELAY_ADMIN_VALIDATION',
    ]);
  }
});

test('claims of a SIGKILLed worker return to pending now, counted per kind; live claims are left alone', async () => {
  collector.setFaults({ timeoutRate: 1 }); // every POST hangs: the worker holds its claims
  const list = await insertCaptures(db.pool, boss, 3);
  // STALE_AFTER of a minute: the fleet's own sweep would wait that long; the operator does not
  victim = startWorkerProcess({
    DATABASE_URL: db.url,
    CAPTURE_URL: collector.captureUrl,
    STALE_AFTER: '60s',
    CAPTURE_TIMEOUT: '60s',
    WORKER_CONCURRENCY: '4',
  });
  const victimId = await workerStarted(victim);
  await waitFor(async () => (await byState()).delivering === 3, { what: '3 in flight' });

  // while the worker lives and heartbeats, a 2 s threshold recovers nothing
  const early = await call(app, 'POST', '/v1/recover-stale', { body: { older_than: '2s' } });
  expect(early.json()).toMatchObject({ recovered: { captures: 0, outbound: 0, inbox: 0 }, total: 0 });

  victim.kill('SIGKILL');
  await exited(victim);
  collector.setFaults(null);
  await new Promise((r) => setTimeout(r, 2_200)); // heartbeats are every STALE_AFTER/5 = 12 s at most; 2 s after the kill they are ≥ 2 s old

  const res = await call(app, 'POST', '/v1/recover-stale', { body: { older_than: '2s', reason: 'worker host lost' } });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({
    older_than_ms: 2000,
    recovered: { captures: 3, outbound: 0, inbox: 0 },
    total: 3,
  });
  expect(await byState()).toEqual({ pending: 3 });
  const { rows } = await db.pool.query(
    `select c.state, j.state as job_state, a.worker_id, a.outcome, a.error_code
       from relay.captures c join tg_relay_boss.job j on j.id = c.job_id
       join relay.attempts a on a.subject = 'capture' and a.subject_id = c.id
      where c.id = any($1::bigint[])`,
    [list.map((c) => c.id)],
  );
  expect(rows).toEqual(
    Array(3).fill({
      state: 'pending',
      job_state: 'retry',
      worker_id: victimId,
      outcome: 'retry',
      error_code: 'RELAY_STALE_CLAIM',
    }),
  );
  const audit = (await db.pool.query(`select actor, details from relay.attempts where id = $1`, [res.json().audit_id]))
    .rows[0];
  expect(audit).toMatchObject({
    actor: 'admin',
    details: { older_than_ms: 2000, recovered: { captures: 3 }, count: 3, reason: 'worker host lost' },
  });

  const again = await call(app, 'POST', '/v1/recover-stale', { body: { older_than: 2000, kinds: ['captures'] } });
  expect(again.json()).toMatchObject({ recovered: { captures: 0 }, total: 0 });
});
