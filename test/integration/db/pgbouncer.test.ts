/**
 * tg-relay behind a real PgBouncer in transaction pooling (docs/pgbouncer.md): `tg-relay migrate`
 * (on DATABASE_DIRECT_URL), a `tg-relay poller` and a `tg-relay worker` with DATABASE_URL at
 * PgBouncer and DB_POOL_MODE=transaction store updates, dispatch them to the echo bot, send its
 * replies, deliver captures and prune (periodic pass under its lock, and the CLI); `tg-relay admin`
 * reads and enqueues there too. With the default DB_POOL_MODE=session the same processes refuse to
 * start (exit 78, RELAY_DB_POOL_MODE).
 */
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createPool, migrateAll, Pool } from '../../../libs/db';
import { runCli, startCli } from '../../support/cli';
import { createTestDatabase } from '../../support/db';
import { newBotToken, startSandbox } from '../../support/ingress-harness';
import { killHard, PollerProcess, startPollerProcess } from '../../support/ingress-processes';
import { PgBouncer, startPgBouncer } from '../../support/pgbouncer';
import { startWebhookReceiver } from '../../support/sandbox-helpers';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, type WorkerProcess } from '../../support/worker-process';
import { seed } from '../retention/fixtures';

jest.setTimeout(180_000);

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let bouncer: PgBouncer;
let sandbox: BotApiSandbox;
let collector: Awaited<ReturnType<typeof startWebhookReceiver>>;
/** A direct pool for the assertions (never through PgBouncer). */
let direct: Pool | undefined;
const procs: Array<PollerProcess | WorkerProcess> = []; // admin too: killWorker SIGKILLs any child

beforeAll(async () => {
  db = await createTestDatabase('pgbouncer');
  bouncer = await startPgBouncer('transaction');
  sandbox = await startSandbox({ limits: { enabled: false } });
  collector = await startWebhookReceiver();
});
afterEach(async () => {
  for (const p of procs.splice(0)) await (p.spawnargs.includes('poller') ? killHard(p) : killWorker(p));
});
afterAll(async () => {
  await direct?.end();
  await collector?.close();
  await sandbox?.stop();
  await bouncer?.stop();
  await db?.drop();
});

const pooled = () => bouncer.urlFor(db.url);

async function count(sql: string): Promise<number> {
  direct ??= createPool(db.url, { max: 2, applicationName: 'tg-relay:test' });
  return Number((await direct.query<{ n: string }>(sql)).rows[0].n);
}

describe('DB_POOL_MODE=transaction behind PgBouncer (pool_mode=transaction)', () => {
  it('migrate refuses without DATABASE_DIRECT_URL (exit 78, naming it), and migrates with it', async () => {
    const refused = await runCli(['migrate'], { DATABASE_URL: pooled(), DB_POOL_MODE: 'transaction' });
    expect({ code: refused.code, stderr: refused.stderr }).toEqual({
      code: 78,
      stderr: expect.stringMatching(/\[RELAY_DB_POOL_MODE\].*DATABASE_DIRECT_URL/s),
    });
    const migrated = await runCli(['migrate'], {
      DATABASE_URL: pooled(),
      DB_POOL_MODE: 'transaction',
      DATABASE_DIRECT_URL: db.url,
    });
    expect({ code: migrated.code, stderr: migrated.code === 0 ? '' : migrated.stderr }).toEqual({
      code: 0,
      stderr: '',
    });
  });

  it('a poller, a worker and the admin API: updates stored, handled, replied to, captured; admin reads and enqueues; prune runs', async () => {
    const { token } = newBotToken();
    const env = { DATABASE_URL: pooled(), DB_POOL_MODE: 'transaction', WORK_POLL_INTERVAL: '200ms' };
    await migrateAll(db.url); // done by the test above already; this test stands on its own
    // rows old enough for the worker's periodic prune pass (another bot's, finished 20 days ago)
    direct ??= createPool(db.url, { max: 2, applicationName: 'tg-relay:test' });
    const old = await seed(direct, [
      { kind: 'captures', state: 'delivered', ageHours: 20 * 24 },
      { kind: 'outbound', state: 'delivered', ageHours: 20 * 24 },
      { kind: 'inbox', state: 'handled', ageHours: 20 * 24 },
    ]);
    const worker = startWorkerProcess({
      ...env,
      TELEGRAM_BOT_TOKEN: token,
      TELEGRAM_API_ROOT: sandbox.url,
      BOT_HANDLERS: 'examples/echo-bot.ts',
      REPLY_MODE: 'outbound',
      CAPTURE_URL: collector.url,
      OPS_CHAT_ID: '999',
      PRUNE_EVERY: '2s',
      RETENTION: '14d',
    });
    procs.push(worker);
    await workerStarted(worker, 60_000);
    const poller = startPollerProcess({ databaseUrl: pooled(), apiRoot: sandbox.url, token, extra: env });
    procs.push(poller);

    const chat = 4242;
    const texts = ['one', 'two', 'three', 'four', 'five'].map((w) => `through pgbouncer ${w}`);
    for (const text of texts) sandbox.injectMessage(token, { chatId: chat, text });
    const replies = () => sandbox.sent(token).filter((s) => s.resolved_chat_id === chat);
    await waitFor(() => replies().length === texts.length, { what: 'five replies sent', timeoutMs: 90_000 });
    expect(replies().map((r) => r.text)).toEqual(texts); // chat order kept
    await waitFor(() => collector.received.length >= texts.length, { what: 'five captures delivered' });
    // the peers see a send before its outcome transaction commits: wait for the rows to say so
    const settled = (table: string, state: string, chatSql: string) =>
      count(`select count(*) as n from relay.${table} where chat_id = ${chatSql} and state = '${state}'`);
    await waitFor(
      async () =>
        (await settled('outbound', 'delivered', `'${chat}'`)) === texts.length &&
        (await settled('captures', 'delivered', String(chat))) === texts.length,
      { what: 'the five sends and captures settled' },
    );

    expect(await count(`select count(*) as n from relay.inbox where chat_id = ${chat} and state = 'handled'`)).toBe(5);
    expect(
      await count(`select count(*) as n from relay.captures where chat_id = ${chat} and state = 'delivered'`),
    ).toBe(5);
    expect(
      await count(`select count(*) as n from relay.outbound where chat_id = '${chat}' and state = 'delivered'`),
    ).toBe(5);
    // the admin API through the pooler: reads, and an enqueue the worker picks up by polling
    const ADMIN_TOKEN = 'admin-token-behind-pgbouncer-0123';
    const admin = startCli(['admin'], { ...env, ADMIN_TOKEN, ADMIN_PORT: '0', LOG_LEVEL: 'info' });
    procs.push(admin);
    const listening = await waitFor(
      () =>
        admin
          .output()
          .split('\n')
          .find((l) => l.includes('"admin API listening"')),
      { what: 'admin API listening', timeoutMs: 60_000 },
    );
    const base = JSON.parse(listening).address as string;
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const stats = await fetch(`${base}/v1/stats`, { headers: auth });
    expect(stats.status).toBe(200);
    const sent = await fetch(`${base}/v1/messages`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ msg_id: 'pgbouncer-admin-1', chat_id: chat, text: 'from the admin API' }),
    });
    expect(sent.status).toBe(201);
    await waitFor(() => replies().some((r) => r.text === 'from the admin API'), { what: 'the admin message sent' });

    // the periodic pass ran (its lock is a transaction lock held through the pass) and deleted the old rows
    await waitFor(() => count(`select count(*) as n from relay.prune_runs where trigger = 'periodic' and total >= 3`), {
      what: 'a periodic prune pass that deleted the seeded rows',
      timeoutMs: 30_000,
    });
    for (const row of old)
      expect(await count(`select count(*) as n from relay.${row.kind} where id = ${Number(row.id)}`)).toBe(0);

    const prune = await runCli(['prune'], { ...env, RETENTION: '14d' });
    expect({ code: prune.code, stderr: prune.code === 0 ? '' : prune.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(prune.stdout.trim())).toMatchObject({ dry_run: false });

    // no LISTEN connection was attempted, no claim failed, no statement went wrong on the way
    for (const out of [worker.output(), poller.output(), admin.output()]) {
      expect(out).not.toMatch(/work listener|claim failed|prepared statement|unsupported startup parameter/);
    }
  });
});

describe('DB_POOL_MODE=session (the default) behind PgBouncer (pool_mode=transaction)', () => {
  it.each(['poller', 'worker'])(
    'tg-relay %s refuses to start: exit 78, RELAY_DB_POOL_MODE, naming DB_POOL_MODE',
    async (command) => {
      const { token } = newBotToken();
      const res = await runCli(
        [command],
        { DATABASE_URL: pooled(), TELEGRAM_BOT_TOKEN: token, TELEGRAM_API_ROOT: sandbox.url },
        { timeoutMs: 30_000 },
      );
      expect({ code: res.code, stderr: res.stderr }).toEqual({
        code: 78,
        stderr: expect.stringMatching(
          /\[RELAY_DB_POOL_MODE\] DATABASE_URL leads to a transaction-pooling proxy.*DB_POOL_MODE=transaction/s,
        ),
      });
    },
  );
});
