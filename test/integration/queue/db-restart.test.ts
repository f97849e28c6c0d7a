import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBoss, createPool, migrateAll, Pool } from '../../../libs/db';
import { RestartablePostgres, startRestartablePostgres } from '../../support/worker-restartable-pg';
import { createCollector, Collector } from '../../../libs/sandbox';
import { countByState, inconsistentCaptures, insertCaptures } from '../../support/capture-fixtures';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';

// A dedicated PostgreSQL: restarting the shared test server would break other test files.
let dir: string;
let pg: RestartablePostgres;
let pool: Pool;
let collector: Collector;
let child: WorkerProcess | undefined;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-restart-'));
  fs.chmodSync(dir, 0o755);
  pg = await startRestartablePostgres(path.join(dir, 'pg'));
  await migrateAll(pg.url);
  pool = createPool(pg.url, { max: 4 });
  collector = createCollector();
  await collector.start();
}, 120_000);

afterAll(async () => {
  await killWorker(child);
  await pool?.end();
  await collector?.stop();
  await pg?.stop();
  if (dir && !process.env.KEEP_TEST_DATA) fs.rmSync(dir, { recursive: true, force: true });
});

describe('a database restart while the worker runs', () => {
  it('loses no capture and does not crash the worker', async () => {
    collector.setFaults({ latencyMs: 20 });
    child = startWorkerProcess({
      DATABASE_URL: pg.url,
      CAPTURE_URL: collector.captureUrl,
      WORKER_CONCURRENCY: '8',
      STALE_AFTER: '3s',
    });
    await workerStarted(child);
    const boss = createBoss(pg.url, { max: 1 });
    for (let i = 0; i < 10; i++) await insertCaptures(pool, boss, 20);
    await waitFor(() => collector.received().length >= 20, { what: 'deliveries under way' });

    // restart mid-run: in-flight outcomes and claims hit a dead connection
    await pg.stop();
    await new Promise((r) => setTimeout(r, 500));
    pg = await startRestartablePostgres(path.join(dir, 'pg'), pg.port);

    for (let i = 0; i < 5; i++)
      await waitFor(() => insertCaptures(pool, boss, 20).then(() => true), { what: 'enqueue after restart' });
    await waitFor(async () => (await countByState(pool)).delivered === 300, {
      what: 'all 300 delivered',
      timeoutMs: 40_000,
    }).catch(async (err) => {
      throw new Error(
        `${err.message}\nstates: ${JSON.stringify(await countByState(pool))}\nworker output:\n${child!.output().slice(-3000)}`,
      );
    });
    expect(child.exitCode).toBeNull(); // still running
    expect(await countByState(pool)).toEqual({ delivered: 300 });
    expect(await inconsistentCaptures(pool)).toEqual([]);
    expect(collector.stats().unique_keys).toBe(300);
    // at-least-once: an outcome lost with the connection is redelivered (the collector dedups by key)
    expect(collector.stats().received).toBeGreaterThanOrEqual(300);
  });
});
