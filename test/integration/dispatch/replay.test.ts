/**
 * Replay after a crash: every worker is killed with SIGKILL while dispatching. Restarted workers
 * dispatch exactly the updates that were not handled, and never one that was.
 */
import { createBoss } from '../../../libs/db';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import {
  backendsClosed,
  killWorker,
  startWorkerProcess,
  workerStarted,
  type WorkerProcess,
} from '../../support/worker-process';
import { makeUpdate, storeUpdates, TOKEN } from './helpers';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const children: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_replay');
  await db.pool.query(
    `create table handler_runs (seq bigserial primary key, chat_id bigint, update_id bigint not null, ok boolean not null, pid integer not null, at timestamptz not null default clock_timestamp())`,
  );
  sandbox = createBotApiSandbox();
  await sandbox.start();
});
afterAll(async () => {
  await Promise.all(children.splice(0).map(killWorker));
  await sandbox?.stop();
  await db?.drop();
});

const count = async (where: string) =>
  Number((await db.pool.query(`select count(*) from relay.inbox where ${where}`)).rows[0].count);

it('kill -9 of every worker mid-dispatch: a restart replays exactly the pending updates, never a handled one', async () => {
  const env = {
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sandbox.url,
    BOT_HANDLERS: 'test/fixtures/recording-bot.ts',
    RECORDING_DB_URL: db.url,
    RECORDING_HANG_MS: '250', // every run takes a while: the kill lands mid-dispatch
    WORKER_CONCURRENCY: '4',
    STALE_AFTER: '10s', // the first workers never take each other's claims, even on a loaded machine
  };
  const updates = Array.from({ length: 60 }, (_, i) => makeUpdate(i + 1, i % 3 === 2 ? null : 7000 + (i % 6)));
  for (let i = 0; i < 2; i++) children.push(startWorkerProcess(env));
  const victims = await Promise.all(children.map((w) => workerStarted(w)));
  await Promise.all(
    children.map((w) => waitFor(() => w.output().includes('bot handlers ready'), { what: 'getMe answered' })),
  );
  await storeUpdates(db.pool, createBoss(db.url, { max: 1 }), updates);

  await waitFor(async () => (await count(`state = 'handled'`)) >= 10 && (await count(`claim_id is not null`)) > 0, {
    what: 'some handled, some in flight',
    timeoutMs: 20_000,
    intervalMs: 10,
  });
  for (const w of children.splice(0)) {
    w.kill('SIGKILL');
    expect(await exited(w)).toEqual({ code: null, signal: 'SIGKILL' });
  }
  await backendsClosed(db.pool); // a claim sent just before the kill may still commit
  const killedAt: Date = (await db.pool.query('select clock_timestamp() as t')).rows[0].t;
  const before = (
    await db.pool.query(`select update_id::int as u, state, claim_id from relay.inbox order by update_id`)
  ).rows as {
    u: number;
    state: string;
    claim_id: string | null;
  }[];
  const handledBefore = new Set(before.filter((r) => r.state === 'handled').map((r) => r.u));
  const inFlight = before.filter((r) => r.claim_id !== null).map((r) => r.u);
  expect(handledBefore.size).toBeGreaterThanOrEqual(10);
  expect(handledBefore.size).toBeLessThan(updates.length);
  expect(inFlight.length).toBeGreaterThan(0);
  expect(before.every((r) => r.state !== 'handled' || r.claim_id === null)).toBe(true);

  // the restarted workers recover the dead workers' claims (heartbeats older than 4/5 of 2 s)
  for (let i = 0; i < 2; i++) children.push(startWorkerProcess({ ...env, RECORDING_HANG_MS: '20', STALE_AFTER: '2s' }));
  await waitFor(async () => (await count(`state = 'handled'`)) === updates.length, {
    what: 'all handled after restart',
    timeoutMs: 30_000,
    intervalMs: 100,
  });

  const after = (
    await db.pool.query(`select update_id::int as u, ok from handler_runs where at > $1 order by seq`, [killedAt])
  ).rows as {
    u: number;
    ok: boolean;
  }[];
  const replayed = after.map((r) => r.u).sort((a, b) => a - b);
  const expected = updates.map((u) => u.update_id).filter((u) => !handledBefore.has(u));
  expect(replayed).toEqual(expected); // exactly the pending ones, each once
  expect(after.every((r) => r.ok)).toBe(true);

  // the claims of the dead workers were recovered as stale, with an audit row each
  const stale = (
    await db.pool.query(
      `select subject_key::int as u from relay.attempts where subject = 'inbox' and error_code = 'RELAY_STALE_CLAIM' and worker_id = any($1) order by 1`,
      [victims],
    )
  ).rows.map((r) => r.u);
  expect(stale).toEqual([...inFlight].sort((a, b) => a - b));
  // every handled update has exactly one 'handled' audit row
  const handledAudit = (
    await db.pool.query(
      `select subject_key, count(*)::int as n from relay.attempts where subject = 'inbox' and outcome = 'handled' and error_code is null group by 1`,
    )
  ).rows;
  expect(handledAudit).toHaveLength(updates.length);
  expect(handledAudit.every((r) => r.n === 1)).toBe(true);
}, 90_000);
