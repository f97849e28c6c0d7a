/**
 * A single-bot worker claims a handled update's replies for its own outbound loop inside the
 * outcome transaction that writes them, and sends them once it commits: the reply row's
 * started_at is that transaction's now(), the inbox row's handled_at. A second reply of the same
 * chat waits for the first (it is not the chat's head) and is sent after it. The same holds when
 * the outcome commits on the handler's own transaction (dispatch.transaction(ctx)). A reply claimed
 * there wakes no replica (no NOTIFY); one the handoff cannot claim does.
 */
import { Client } from 'pg';
import { createBoss, type BossLedger } from '../../../libs/db/boss';
import { withTransaction } from '../../../libs/db';
import { loadConfig } from '../../../libs/config';
import { replyHandoff } from '../../../libs/runtime/local-wake';
import { startWorkerRuntime, type WorkerRuntime } from '../../../libs/runtime/worker';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { newBotToken, startSandbox } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';
import { testLogger } from '../../support/worker-harness';
import { storeUpdates } from './helpers';

jest.setTimeout(60_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
let boss: BossLedger;
const workers: WorkerRuntime[] = [];
const { token, botId } = newBotToken();

async function startWorker(botToken: string, handlers: string): Promise<void> {
  const config = loadConfig({
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: botToken,
    TELEGRAM_API_ROOT: sandbox.url,
    BOT_HANDLERS: handlers,
    REPLY_MODE: 'outbound',
    LOG_LEVEL: 'silent',
  });
  workers.push(await startWorkerRuntime({ config, databaseUrl: db.url, logger: testLogger() }));
}

beforeAll(async () => {
  db = await createMigratedDatabase('handoff');
  sandbox = await startSandbox();
  boss = createBoss(db.url, { max: 1 });
  await startWorker(token, 'examples/echo-bot.ts');
});
afterAll(async () => {
  for (const w of workers) await w.stop(2_000);
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await sandbox.stop();
  await db.drop();
});

const replyOf = (updateId: number, bot = botId) =>
  db.pool
    .query<{ state: string; started_at: Date; handled_at: Date }>(
      `select o.state, o.started_at, i.handled_at from relay.outbound o
         join relay.inbox i on i.bot_id = o.bot_id and i.update_id = o.source_update_id
        where o.bot_id = $1 and o.source_update_id = $2`,
      [bot, updateId],
    )
    .then((r) => r.rows);

/** The outbound wake-ups (NOTIFY tg_relay_work 'outbound.send') sent while it listens. */
async function outboundNotifies(): Promise<{ count: () => number; end: () => Promise<void> }> {
  const listener = new Client({ connectionString: db.url });
  await listener.connect();
  let n = 0;
  listener.on('notification', (m) => {
    if (m.payload === 'outbound.send') n++;
  });
  await listener.query('listen tg_relay_work');
  return { count: () => n, end: () => listener.end() };
}

it("sends an update's reply claimed in its outcome transaction, and a chat's second reply after the first", async () => {
  const notifies = await outboundNotifies();
  const first = sandbox.injectMessage(token, { chatId: 8801, text: 'one' });
  try {
    await storeUpdates(db.pool, boss, [first], botId);
    await waitFor(async () => (await replyOf(first.update_id))[0]?.state === 'delivered', { what: 'the first echo' });
    // its delivery's commit comes after the outcome's: a NOTIFY of the outcome would be here by now
    await db.pool.query('select 1');
  } finally {
    await notifies.end();
  }
  expect(notifies.count()).toBe(0);
  const [a] = await replyOf(first.update_id);
  expect(a.started_at.getTime()).toBe(a.handled_at.getTime());

  // two updates of one chat in one batch: the second's reply is not the chat's head at the claim
  const second = sandbox.injectMessage(token, { chatId: 8802, text: 'two' });
  const third = sandbox.injectMessage(token, { chatId: 8802, text: 'three' });
  await storeUpdates(db.pool, boss, [second, third], botId);
  await waitFor(async () => (await replyOf(third.update_id))[0]?.state === 'delivered', { what: 'the third echo' });
  expect(sandbox.sent(token).map((m) => m.text)).toEqual(['one', 'two', 'three']);
});

it("hands off a reply whose outcome commits on the handler's own transaction", async () => {
  const own = newBotToken();
  process.env.TX_BOT_DB_URL = db.url;
  await db.pool.query('create table handler_rows (update_id bigint primary key, pid int)');
  await startWorker(own.token, 'test/fixtures/transaction-bot.ts');
  const update = sandbox.injectMessage(own.token, { chatId: 8803, text: 'mine' });
  await storeUpdates(db.pool, boss, [update], own.botId);
  await waitFor(async () => (await replyOf(update.update_id, own.botId))[0]?.state === 'delivered', {
    what: 'the reply',
  });
  const [r] = await replyOf(update.update_id, own.botId);
  expect(r.started_at.getTime()).toBe(r.handled_at.getTime());
  expect(sandbox.sent(own.token).map((m) => m.text)).toEqual([`row ${update.update_id}`]);
  const rows = await db.pool.query('select update_id from handler_rows');
  expect(rows.rows).toEqual([{ update_id: String(update.update_id) }]);
});

it('wakes the workers for replies it cannot claim: with no outbound loop attached, its NOTIFY goes out at commit', async () => {
  const handoff = replyHandoff(); // attached to nothing: a worker that runs dispatch only
  const notifies = await outboundNotifies();
  try {
    await withTransaction(db.pool, (c) => handoff.send(c, ['update:1:1:0']));
    await waitFor(() => notifies.count() > 0, { what: 'the NOTIFY' });
  } finally {
    await notifies.end();
  }
  expect(notifies.count()).toBe(1);
});
