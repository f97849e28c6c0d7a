/**
 * A worker that lived through a PostgreSQL restart still drains and exits 0 on SIGTERM, within its
 * deadline (SHUTDOWN_TIMEOUT + the grace of libs/lifecycle/shutdown.ts). The soak once saw a worker
 * ignore its final SIGTERM after the restart (a claim loop that never yielded to the event loop):
 * whatever the loops, pools and the LISTEN connection are doing at that moment, the signal must be
 * handled. A real `tg-relay worker` with all three job kinds (captures, outbound sends, update
 * dispatch) has work in flight when its dedicated server stops; the signal comes while the server is
 * down, the moment it accepts connections again, and after the work has resumed and run dry.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBoss, createPool, migrateAll, Pool } from '../../../libs/db';
import { shutdownDeadlineMs } from '../../../libs/lifecycle/shutdown';
import { createBotApiSandbox, createCollector, type BotApiSandbox, type Collector } from '../../../libs/sandbox';
import { exited } from '../../support/cli';
import { insertCaptures } from '../../support/capture-fixtures';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, type WorkerProcess } from '../../support/worker-process';
import { RestartablePostgres, startRestartablePostgres } from '../../support/worker-restartable-pg';
import { makeUpdate, storeUpdates } from '../dispatch/helpers';

jest.setTimeout(150_000);

const TOKEN = '6262000001:sigterm-after-restart-token';
const BOT_ID = '6262000001';
const SHUTDOWN_TIMEOUT_MS = 5_000;
/** The process's own hard deadline: a drain still running then exits 1 (never 0). */
const DEADLINE_MS = shutdownDeadlineMs({ SHUTDOWN_TIMEOUT: SHUTDOWN_TIMEOUT_MS });

// A dedicated PostgreSQL: restarting the shared test server would break other test files.
let dir: string;
let pg: RestartablePostgres;
let pool: Pool;
let sandbox: BotApiSandbox;
let collector: Collector;
let child: WorkerProcess | undefined;
let seq = 0;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-sigterm-'));
  fs.chmodSync(dir, 0o755);
  pg = await startRestartablePostgres(path.join(dir, 'pg'));
  await migrateAll(pg.url);
  pool = createPool(pg.url, { max: 4 });
  pool.on('error', () => undefined);
  await pool.query(
    `create table handler_runs (seq bigserial primary key, chat_id bigint, update_id bigint not null, ok boolean not null, pid integer not null, at timestamptz not null default clock_timestamp())`,
  );
  sandbox = createBotApiSandbox({ seed: 27 });
  await sandbox.start();
  collector = createCollector({ seed: 27 });
  await collector.start();
}, 120_000);

afterEach(async () => {
  await killWorker(child);
  child = undefined;
});

afterAll(async () => {
  await pool?.end().catch(() => undefined);
  await sandbox?.stop();
  await collector?.stop();
  await pg?.stop();
  if (dir && !process.env.KEEP_TEST_DATA) fs.rmSync(dir, { recursive: true, force: true });
});

/** Captures, outbound messages and updates for the three claim loops (each call new ones). */
async function feed(n: number): Promise<void> {
  const boss = createBoss(pg.url, { max: 1 });
  try {
    await insertCaptures(pool, boss, n);
    const ids = Array.from({ length: n }, () => `restart-${++seq}`);
    await pool.query(
      `select relay.enqueue_outbound(m, (7000 + i % 10)::text, 'text of ' || m, bot_id => $2)
         from unnest($1::text[]) with ordinality as x(m, i)`,
      [ids, BOT_ID],
    );
    await storeUpdates(
      pool,
      boss,
      ids.map((_, i) => makeUpdate(900_000 + seq * 10 + i, 8000 + (i % 10))),
      BOT_ID,
    );
  } finally {
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  }
}

async function restartPostgres(whileDown?: () => void): Promise<void> {
  await pg.stop();
  whileDown?.();
  await new Promise((r) => setTimeout(r, 500));
  pg = await startRestartablePostgres(path.join(dir, 'pg'), pg.port);
}

async function startWorker(): Promise<WorkerProcess> {
  child = startWorkerProcess({
    DATABASE_URL: pg.url,
    CAPTURE_URL: collector.captureUrl,
    CAPTURE_TIMEOUT: '2s',
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sandbox.url,
    BOT_HANDLERS: 'test/fixtures/recording-bot.ts',
    RECORDING_DB_URL: pg.url,
    RECORDING_DELAY_MS: '200',
    WORKER_CONCURRENCY: '8',
    STALE_AFTER: '3s',
    RETRY_BASE: '100ms',
    RETRY_CAP: '1s',
    SHUTDOWN_TIMEOUT: `${SHUTDOWN_TIMEOUT_MS}ms`,
  });
  await workerStarted(child);
  return child;
}

/** SIGTERM (now, unless sent already) and the exit; fails past the process's own deadline (plus start-up slack). */
async function stopsCleanly(w: WorkerProcess, signalled = false): Promise<void> {
  if (!signalled) w.kill('SIGTERM');
  const exit = await Promise.race([
    exited(w),
    new Promise<'stuck'>((r) => setTimeout(() => r('stuck'), DEADLINE_MS + 10_000).unref()),
  ]);
  const out = w.output();
  if (exit === 'stuck') throw new Error(`the worker ignored SIGTERM (still running):\n${out.slice(-3000)}`);
  expect({
    exit,
    draining: out.includes('shutting down: draining'),
    complete: out.includes('shutdown complete'),
  }).toEqual({ exit: { code: 0, signal: null }, draining: true, complete: true });
}

describe('SIGTERM after a PostgreSQL restart, work in flight when the server went away', () => {
  it('sent while the server is down: drains within the deadline and exits 0', async () => {
    collector.setFaults({ latencyMs: 300 });
    const w = await startWorker();
    await feed(40);
    await waitFor(() => collector.received().length >= 5, { what: 'deliveries under way' });
    await restartPostgres(() => w.kill('SIGTERM'));
    await stopsCleanly(w, true);
  });

  it('sent the moment the server accepts connections again: drains and exits 0', async () => {
    collector.setFaults({ latencyMs: 300 });
    const w = await startWorker();
    await feed(40);
    await waitFor(() => collector.received().length >= 5, { what: 'deliveries under way' });
    await restartPostgres();
    await stopsCleanly(w);
  });

  it('sent once the work resumed after the restart and ran dry (the soak’s final stop): drains and exits 0', async () => {
    collector.setFaults({ latencyMs: 50 });
    const w = await startWorker();
    await feed(40);
    await waitFor(() => collector.received().length >= 5, { what: 'deliveries under way' });
    await restartPostgres();
    await waitFor(() => feed(10).then(() => true), { what: 'enqueue after the restart', timeoutMs: 30_000 });
    await waitFor(
      async () => {
        const { rows } = await pool.query<{ open: number }>(
          `select (select count(*) from relay.captures where state in ('pending', 'delivering'))
                + (select count(*) from relay.outbound where state in ('pending', 'delivering'))
                + (select count(*) from relay.inbox where state = 'pending' and bot_id = $1) as open`,
          [BOT_ID],
        );
        return Number(rows[0].open) === 0;
      },
      { what: 'everything settled after the restart', timeoutMs: 60_000 },
    ).catch((err) => {
      throw new Error(`${(err as Error).message}\nworker output:\n${w.output().slice(-3000)}`);
    });
    await stopsCleanly(w);
  });
});
