/** Retry of inbox updates that a real dispatch worker failed (handler threw until the budget ran out). */
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import type { RegisterHandlers } from '../../../libs/dispatch';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { DispatchHarness, makeUpdate, startDispatchWorker, storeUpdates } from '../dispatch/helpers';
import { buildTestApp, call, startBoss } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;
let sandbox: BotApiSandbox;
let harness: DispatchHarness;
let broken = true;

const bot: RegisterHandlers = (b) => {
  b.on('message', () => {
    if (broken) throw new Error('handler bug');
  });
};

beforeAll(async () => {
  db = await createMigratedDatabase('admin_inbox');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss);
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
  harness = await startDispatchWorker({ url: db.url, pool: db.pool, apiRoot: sandbox.url, register: bot });
});

afterAll(async () => {
  await harness?.stop();
  await harness?.boss.stop({ graceful: false, wait: true });
  await sandbox?.stop();
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

const row = async (id: string) =>
  (
    await db.pool.query(
      `select i.state, i.attempts, j.state as job_state from relay.inbox i left join tg_relay_boss.job j on j.id = i.job_id where i.id = $1`,
      [id],
    )
  ).rows[0];

test('an update whose handler kept throwing is failed; retried after the fix it is handled, with a fresh budget', async () => {
  const [a, b] = await storeUpdates(db.pool, boss, [makeUpdate(1, 501), makeUpdate(2, 502)]);
  await waitFor(async () => (await row(a)).state === 'failed' && (await row(b)).state === 'failed', {
    what: 'failed after the budget (3)',
  });
  expect(await row(a)).toMatchObject({ state: 'failed', attempts: 3 });
  const list = (await call(app, 'GET', '/v1/inbox?state=failed&error=handler%20bug')).json();
  expect(list.items.map((r: { id: number }) => r.id).sort()).toEqual([Number(a), Number(b)].sort());

  broken = false;
  const one = await call(app, 'POST', `/v1/inbox/${a}/retry`);
  expect(one.json()).toMatchObject({ id: Number(a), state: 'pending' });
  await waitFor(async () => (await row(a)).state === 'handled', { what: 'handled after retry' });
  const [fresh] = await storeUpdates(db.pool, boss, [makeUpdate(3, 503)]);
  await waitFor(async () => (await row(fresh)).state === 'handled', { what: 'fresh handled' });
  // the retried update's new job ends as a fresh update's does (the attempt count restarted: inbox has no per-row budget)
  expect(await row(a)).toEqual({ state: 'handled', attempts: 1, job_state: (await row(fresh)).job_state });

  const bulk = (await call(app, 'POST', '/v1/inbox/retry', { body: { error: 'handler bug' } })).json();
  expect(bulk).toMatchObject({ retried: 1, ids: [Number(b)], more: false });
  await waitFor(async () => (await row(b)).state === 'handled', { what: 'bulk-retried update handled' });

  const history = (await call(app, 'GET', `/v1/inbox/${a}`)).json().history.map((h: { outcome: string }) => h.outcome);
  expect(history.filter((o: string) => o.startsWith('admin.'))).toEqual(['admin.retry']);
  expect(history[history.length - 1]).toBe('handled'); // the dispatch kind's audit outcome for a handled update
  expect((await call(app, 'POST', `/v1/inbox/${a}/retry`)).statusCode).toBe(409);
  const stats = (await call(app, 'GET', '/v1/stats')).json();
  expect(stats.kinds.inbox.states.handled).toEqual({ count: 3, approximate: false });
  expect(stats.kinds.inbox.delivered_last_minute).toBeGreaterThanOrEqual(3);
});
