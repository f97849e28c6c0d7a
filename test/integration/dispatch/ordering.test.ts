/**
 * Per-chat order across replicas and retries: 3 `tg-relay worker` processes dispatch 50 chats × 40
 * updates through a bot that fails at random (test/fixtures/recording-bot.ts records every run in
 * this test's database before returning or throwing). Each chat's handled order must equal its
 * update_id order, and no update may even *run* before the previous one of its chat was handled.
 */
import { createBoss } from '../../../libs/db';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, type WorkerProcess } from '../../support/worker-process';
import { makeUpdate, storeUpdates, TOKEN } from './helpers';

const CHATS = 50;
const PER_CHAT = 40;
const WORKERS = 3;

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const children: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_order');
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

it('3 workers, 50 chats × 40 updates, random handler failures: every chat is handled in update_id order', async () => {
  const env = {
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sandbox.url,
    BOT_HANDLERS: 'test/fixtures/recording-bot.ts',
    RECORDING_DB_URL: db.url,
    RECORDING_FAIL_RATE: '0.2',
    RECORDING_DELAY_MS: '4',
    RETRY_BASE: '10ms',
    RETRY_CAP: '80ms',
    RETRY_MAX_ATTEMPTS: '100',
    WORKER_CONCURRENCY: '16',
    STALE_AFTER: '10s',
  };
  for (let i = 0; i < WORKERS; i++) children.push(startWorkerProcess(env));
  await Promise.all(children.map((w) => workerStarted(w)));
  await Promise.all(
    children.map((w) => waitFor(() => w.output().includes('bot handlers ready'), { what: 'getMe answered' })),
  );

  // update_ids interleave the chats, as Telegram's would: round r, chat c → r·50 + c + 1
  const updates = [];
  for (let r = 0; r < PER_CHAT; r++)
    for (let c = 0; c < CHATS; c++) updates.push(makeUpdate(r * CHATS + c + 1, 9000 + c));
  await storeUpdates(db.pool, createBoss(db.url, { max: 1 }), updates);

  await waitFor(
    async () =>
      Number((await db.pool.query(`select count(*) from relay.inbox where state = 'handled'`)).rows[0].count) ===
      CHATS * PER_CHAT,
    {
      what: 'every update handled',
      timeoutMs: 90_000,
      intervalMs: 200,
    },
  );
  await Promise.all(
    children.map(async (w) => (w.kill('SIGTERM'), expect(await exited(w)).toEqual({ code: 0, signal: null }))),
  );

  const runs = (
    await db.pool.query(`select chat_id::int as chat, update_id::int as u, ok, pid from handler_runs order by seq`)
  ).rows as {
    chat: number;
    u: number;
    ok: boolean;
    pid: number;
  }[];
  const byChat = new Map<number, typeof runs>();
  for (const r of runs) byChat.set(r.chat, [...(byChat.get(r.chat) ?? []), r]);
  expect(byChat.size).toBe(CHATS);
  for (const [chat, list] of byChat) {
    const expected = updates
      .filter((u) => (u.message as { chat: { id: number } }).chat.id === chat)
      .map((u) => u.update_id);
    // handled order = update_id order, each update handled once
    expect(list.filter((r) => r.ok).map((r) => r.u)).toEqual(expected);
    // and no run of a later update before the earlier one succeeded (retries included)
    const all = list.map((r) => r.u);
    expect(all).toEqual([...all].sort((a, b) => a - b));
  }

  const failures = runs.filter((r) => !r.ok).length;
  expect(failures).toBeGreaterThan(100); // the random failures did happen (expected ≈ 500)
  expect(new Set(runs.map((r) => r.pid)).size).toBe(WORKERS); // every replica took part

  // one audit row per attempt: the failures as retries, the successes as handled
  const audit = (
    await db.pool.query(
      `select outcome, count(*)::int as n from relay.attempts where subject = 'inbox' group by outcome order by outcome`,
    )
  ).rows;
  expect(audit).toEqual([
    { outcome: 'handled', n: CHATS * PER_CHAT },
    { outcome: 'retry', n: failures },
  ]);
  const handledAt = (
    await db.pool.query(`select chat_id::int as chat, update_id::int as u from relay.inbox order by handled_at, id`)
  ).rows as {
    chat: number;
    u: number;
  }[];
  for (const chat of byChat.keys()) {
    const seq = handledAt.filter((r) => r.chat === chat).map((r) => r.u);
    expect(seq).toEqual([...seq].sort((a, b) => a - b));
  }
}, 150_000);
