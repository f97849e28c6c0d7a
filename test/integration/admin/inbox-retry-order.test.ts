/**
 * An operator's retry of a chat's failed update never runs it next to that chat's update in flight:
 * the retried update waits until the running one is settled, then runs before the chat's later ones.
 */
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
let openGate: () => void = () => undefined;
const gate = new Promise<void>((resolve) => (openGate = resolve));
const events: string[] = [];

const bot: RegisterHandlers = (b) => {
  b.on('message', async (ctx) => {
    const id = ctx.update.update_id;
    events.push(`start ${id}`);
    try {
      const text = 'text' in ctx.message ? ctx.message.text : '';
      if (text === 'fail' && broken) throw new Error('handler bug');
      if (text === 'block') await gate;
    } finally {
      events.push(`end ${id}`);
    }
  });
};

beforeAll(async () => {
  db = await createMigratedDatabase('inbox_retry_order');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss);
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
  harness = await startDispatchWorker({
    url: db.url,
    pool: db.pool,
    apiRoot: sandbox.url,
    register: bot,
    handlerTimeoutMs: 60_000,
  });
});

afterAll(async () => {
  openGate();
  await harness?.stop();
  await harness?.boss.stop({ graceful: false, wait: true });
  await sandbox?.stop();
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

const row = async (id: string) =>
  (await db.pool.query(`select state, claim_id, attempts from relay.inbox where id = $1`, [id])).rows[0];

test('a retried update waits for its chat’s update in flight, then runs before the chat’s later updates', async () => {
  const [first] = await storeUpdates(db.pool, boss, [makeUpdate(100, 700, 'fail')]);
  await waitFor(async () => (await row(first)).state === 'failed', { what: 'update 100 failed after its budget' });

  const [running] = await storeUpdates(db.pool, boss, [makeUpdate(101, 700, 'block')]);
  await waitFor(() => events.includes('start 101'), { what: 'update 101 running' });

  broken = false;
  expect((await call(app, 'POST', `/v1/inbox/${first}/retry`)).json()).toMatchObject({ state: 'pending' });
  // Later work of this chat and of another chat, stored after the retry: the other chat's runs at once.
  const [later, elsewhere] = await storeUpdates(db.pool, boss, [
    makeUpdate(102, 700, 'after'),
    makeUpdate(103, 701, 'other chat'),
  ]);
  await waitFor(async () => (await row(elsewhere)).state === 'handled', { what: 'the other chat is not held up' });
  // the worker has claimed since the retry; the retried update was not among its claims
  expect(await row(first)).toMatchObject({ state: 'pending', claim_id: null, attempts: 0 });
  expect(events.filter((e) => e === 'start 100')).toHaveLength(3); // the three failed attempts only
  expect(await row(running)).toMatchObject({ state: 'pending' });

  openGate();
  await waitFor(async () => (await row(later)).state === 'handled', { what: 'the chat drained' });
  expect(await row(first)).toMatchObject({ state: 'handled' });
  const chat700 = events.filter((e) => !e.endsWith(' 103'));
  expect(chat700.slice(-6)).toEqual(['start 101', 'end 101', 'start 100', 'end 100', 'start 102', 'end 102']);
});
