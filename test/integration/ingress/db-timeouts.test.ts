/**
 * The database cannot wedge a process: every pool (ours and pg-boss's) runs under statement,
 * lock and idle-in-transaction limits with TCP keepalive; a batch transaction whose backend is
 * killed leaves the same poller able to go on; a poller frozen inside its batch transaction (the
 * cursor row locked) is cut off by the server, and a standby takes over.
 */
import { Client } from 'pg';
import { BOSS_SCHEMA, createBoss, createPool, Pool } from '../../../libs/db';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { cursorOf, inboxCount, newBotToken, startSandbox, startTestPoller } from '../../support/ingress-harness';
import { killHard, ownedBy, PollerProcess, startPollerProcess } from '../../support/ingress-processes';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(120_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const procs: PollerProcess[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('dbto');
  sandbox = await startSandbox();
});
afterEach(async () => {
  for (const p of procs.splice(0)) {
    if (p.exitCode === null) p.kill('SIGCONT');
    await killHard(p);
  }
  for (const c of clients.splice(0)) await c.end().catch(() => undefined);
});
afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

async function blocker(): Promise<Client> {
  const c = new Client({ connectionString: db.url, application_name: 'test:blocker' });
  c.on('error', () => undefined);
  await c.connect();
  clients.push(c);
  return c;
}

/** The backend of `appName` that waits for a lock (the batch transaction stuck behind our blocker). */
async function lockWaiter(appName: string): Promise<number | null> {
  const { rows } = await db.pool.query(
    `select pid from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock' and state = 'active'`,
    [appName],
  );
  return rows[0]?.pid ?? null;
}

async function settings(q: {
  query: (sql: string) => Promise<{ rows: Record<string, string>[] }>;
}): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const s of ['statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout'])
    out[s] = (await q.query(`show ${s}`)).rows[0][s];
  return out;
}

describe('database session limits', () => {
  it("every pool, ours and pg-boss's, runs under the configured limits (defaults 30s / 10s / 30s) with TCP keepalive", async () => {
    const pool = createPool(db.url, { max: 1 });
    const tuned = createPool(db.url, {
      max: 1,
      timeouts: { statementMs: 5_000, lockMs: 1_500, idleInTransactionMs: 2_000 },
    });
    const boss = createBoss(db.url, {
      max: 1,
      timeouts: { statementMs: 7_000, lockMs: 700, idleInTransactionMs: 70_000 },
    });
    try {
      expect(await settings(pool)).toEqual({
        statement_timeout: '30s',
        lock_timeout: '10s',
        idle_in_transaction_session_timeout: '30s',
      });
      expect(await settings(tuned)).toEqual({
        statement_timeout: '5s',
        lock_timeout: '1500ms',
        idle_in_transaction_session_timeout: '2s',
      });
      await boss.start();
      const bossDb = boss.getDb() as unknown as {
        executeSql: (sql: string) => Promise<{ rows: Record<string, string>[] }>;
        pool: { options: Record<string, unknown> };
      };
      expect(await settings({ query: (sql) => bossDb.executeSql(sql) })).toEqual({
        statement_timeout: '7s',
        lock_timeout: '700ms',
        idle_in_transaction_session_timeout: '70s',
      });
      expect(bossDb.pool.options.keepAlive).toBe(true);
      expect((pool as unknown as { options: Record<string, unknown> }).options.keepAlive).toBe(true);
      // a statement past the limit is cut off by the server, and the pool stays usable
      await expect(tuned.query('select pg_sleep(10)')).rejects.toMatchObject({ code: '57014' });
      expect((await tuned.query('select 1 as ok')).rows).toEqual([{ ok: 1 }]);
      expect((await bossDb.executeSql(`select count(*)::int as n from ${BOSS_SCHEMA}.queue`)).rows[0].n).toBe(3);
    } finally {
      await boss.stop({ graceful: false, wait: true });
      await pool.end();
      await tuned.end();
    }
  });

  it('the backend of an open batch transaction killed with pg_terminate_backend: the same poller stores the batch on its next try', async () => {
    const { token, botId } = newBotToken();
    const appName = 'tg-relay:test-terminated';
    // no lock limit here: what unblocks the batch must be the kill
    const pool: Pool = createPool(db.url, { max: 2, applicationName: appName, timeouts: { lockMs: 0 } });
    const p = startTestPoller({ pool, url: db.url, apiRoot: sandbox.url, token, botId });
    const b = await blocker();
    try {
      await waitFor(() => p.poller.status().state === 'polling', { what: 'poller owns the lease' });
      const generation = p.poller.status().generation;
      await b.query('begin');
      await b.query('lock table relay.inbox in exclusive mode');
      sandbox.injectMessages(token, 3, { chats: 1, chatBase: Number(botId) });
      const pid = await waitFor(() => lockWaiter(appName), { what: 'the batch transaction waiting on the inbox lock' });
      // it holds the cursor row: its fenced cursor update is the first statement of the batch
      const held = await db.pool.query(
        `select count(*)::int as n from pg_locks l where l.pid = $1 and l.granted and l.relation = 'relay.cursor'::regclass and l.mode = 'RowExclusiveLock'`,
        [pid],
      );
      expect(held.rows[0].n).toBe(1);

      expect((await db.pool.query('select pg_terminate_backend($1) as ok', [pid])).rows[0].ok).toBe(true);
      await b.query('rollback');

      await waitFor(async () => (await inboxCount(db.pool, botId)) === 3, {
        what: 'the batch stored after the kill',
        timeoutMs: 30_000,
      });
      const cursor = await cursorOf(db.pool, botId);
      expect(p.poller.status()).toMatchObject({ state: 'polling', generation });
      expect(cursor?.leaseOwner).toBe(p.owner);
      const { rows } = await db.pool.query('select distinct generation::int as g from relay.inbox where bot_id = $1', [
        botId,
      ]);
      expect(rows).toEqual([{ g: generation }]);
      expect(
        (await db.pool.query('select count(*)::int as n from pg_stat_activity where pid = $1', [pid])).rows[0].n,
      ).toBe(0);
    } finally {
      await b.query('rollback').catch(() => undefined);
      await p.stop();
      await pool.end();
    }
  });

  it('a poller process frozen (SIGSTOP) inside its batch transaction, holding the cursor row: the server ends its session and a standby takes over', async () => {
    const { token, botId } = newBotToken();
    const env = { databaseUrl: db.url, apiRoot: sandbox.url, token, leaseTtl: '2s', pollTimeout: '1s' };
    // the owner waits on our lock without a lock limit, so it is frozen while inside its transaction
    const owner = startPollerProcess({ ...env, extra: { DB_LOCK_TIMEOUT: '0', DB_IDLE_IN_TRANSACTION_TIMEOUT: '2s' } });
    procs.push(owner);
    await waitFor(async () => ownedBy((await cursorOf(db.pool, botId))?.leaseOwner, owner), {
      what: 'first process owns the lease',
      timeoutMs: 60_000,
    });
    const standby = startPollerProcess({
      ...env,
      extra: { DB_LOCK_TIMEOUT: '1s', DB_IDLE_IN_TRANSACTION_TIMEOUT: '2s' },
    });
    procs.push(standby);

    const b = await blocker();
    await b.query('begin');
    await b.query('lock table relay.inbox in exclusive mode');
    sandbox.injectMessages(token, 4, { chats: 2, chatBase: Number(botId) });
    const pid = await waitFor(() => lockWaiter('tg-relay:ingress'), {
      what: "the owner's batch waiting on the inbox lock",
      timeoutMs: 30_000,
    });
    owner.kill('SIGSTOP');
    await b.query('rollback'); // the owner's insert now runs; its process never sends commit: idle in transaction, cursor row locked

    // within LEASE_TTL + DB_IDLE_IN_TRANSACTION_TIMEOUT (plus a few polls) the standby owns the lease and stores the updates
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 4, {
      what: 'the standby stored the updates',
      timeoutMs: 60_000,
    });
    const cursor = await cursorOf(db.pool, botId);
    expect(ownedBy(cursor?.leaseOwner, standby)).toBe(true);
    const { rows } = await db.pool.query('select distinct generation::int as g from relay.inbox where bot_id = $1', [
      botId,
    ]);
    expect(rows).toEqual([{ g: cursor?.leaseGeneration }]);
    // the frozen session was ended by the server, not by us
    expect(
      (await db.pool.query('select count(*)::int as n from pg_stat_activity where pid = $1', [pid])).rows[0].n,
    ).toBe(0);
  });
});
