/**
 * A worker SIGKILLed in the middle of an attempt that wrote in dispatch.transaction(ctx): nothing of
 * the attempt is left (no handler row, no session, no reply, the update not handled); the next
 * worker runs it again and its writes land exactly once.
 */
import { createBoss } from '../../../libs/db';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, type WorkerProcess } from '../../support/worker-process';
import { inboxRows, makeUpdate, storeUpdates, TOKEN } from './helpers';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const children: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_tx_crash');
  await db.pool.query(`create table handler_rows (update_id bigint not null, pid int not null)`);
  await db.pool.query(`create table handler_marks (update_id bigint not null, pid int not null)`);
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
});
afterAll(async () => {
  await Promise.all(children.splice(0).map(killWorker));
  await sandbox?.stop();
  await db?.drop();
});

const count = async (sql: string) => Number((await db.pool.query(sql)).rows[0].count);

it('SIGKILL mid-attempt leaves no half-written handler rows; the redelivery writes them once', async () => {
  const env = {
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sandbox.url,
    BOT_HANDLERS: 'test/fixtures/transaction-bot.ts',
    TX_BOT_DB_URL: db.url,
    REPLY_MODE: 'outbound',
    STALE_AFTER: '2s',
  };
  const victim = startWorkerProcess({ ...env, TX_BOT_HANG: '1' });
  children.push(victim);
  await workerStarted(victim);
  await storeUpdates(db.pool, createBoss(db.url, { max: 1 }), [makeUpdate(1, 8801), makeUpdate(2, 8802)]);
  await waitFor(async () => (await count('select count(*) from handler_marks')) === 2, {
    what: 'both attempts wrote and hang',
    timeoutMs: 20_000,
  });
  victim.kill('SIGKILL');
  expect(await exited(victim)).toEqual({ code: null, signal: 'SIGKILL' });

  // the server rolled the dead connections' transactions back
  expect(await count('select count(*) from handler_rows')).toBe(0);
  expect(await count('select count(*) from relay.sessions')).toBe(0);
  expect(await count('select count(*) from relay.outbound')).toBe(0);
  expect((await inboxRows(db.pool)).map((r) => r.state)).toEqual(['pending', 'pending']);

  const next = startWorkerProcess({ ...env, TX_BOT_HANG: '0' });
  children.push(next);
  await workerStarted(next);
  await waitFor(async () => (await inboxRows(db.pool)).every((r) => r.state === 'handled'), {
    what: 'redelivered and handled',
    timeoutMs: 30_000,
  });
  const rows = await db.pool.query<{ update_id: string; pid: number }>(
    'select update_id::text, pid from handler_rows order by update_id',
  );
  expect(rows.rows).toEqual([
    { update_id: '1', pid: next.pid },
    { update_id: '2', pid: next.pid },
  ]);
  const sessions = await db.pool.query(`select key, value from relay.sessions order by key`);
  expect(sessions.rows).toEqual([
    { key: '8801:8801', value: { n: 1 } },
    { key: '8802:8802', value: { n: 1 } },
  ]);
  expect(await count('select count(*) from relay.outbound')).toBe(2);
  next.kill('SIGTERM');
  expect(await exited(next)).toEqual({ code: 0, signal: null });
});
