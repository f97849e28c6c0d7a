import { Writable } from 'node:stream';
import type { BossLedger } from '../../../libs/db/boss';
import type { FastifyInstance } from 'fastify';
import { createPool, Pool } from '../../../libs/db';
import { createLogger } from '../../../libs/observability/logger';
import { createPeriodicPrune } from '../../../libs/retention/periodic';
import { runCli } from '../../support/cli';
import { createMigratedDatabase } from '../../support/db';
import { buildTestApp, call, startBoss } from '../admin/support';
import { seed, Seed, survivors, wipe } from './fixtures';

const D = 86_400_000;

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let pool: Pool;

beforeAll(async () => {
  db = await createMigratedDatabase('prune_cli');
  pool = db.pool;
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(() => wipe(pool));

const victims = (n: number): Seed[] =>
  Array.from({ length: n }, (_, i) => ({
    kind: (['captures', 'outbound', 'inbox'] as const)[i % 3],
    state: i % 3 === 2 ? 'handled' : 'delivered',
    ageHours: 20 * 24,
  }));

describe('tg-relay prune (CLI)', () => {
  it('--dry-run prints one JSON line of counts and deletes nothing; the real pass prints the same counts, exits 0 and shows in /metrics', async () => {
    await seed(pool, [
      ...victims(6),
      { kind: 'captures', state: 'pending', ageHours: 400 * 24 },
      { kind: 'audit', state: 'admin', ageHours: 100 * 24 },
    ]);
    const before = await survivors(pool);
    const env = { DATABASE_URL: db.url, RETENTION: '14d', RETENTION_FAILED: '90d', LOG_LEVEL: 'info' };

    const dry = await runCli(['prune', '--dry-run'], env);
    expect({ code: dry.code, stderr: dry.code === 0 ? '' : dry.stderr }).toEqual({ code: 0, stderr: '' });
    const dryLines = dry.stdout.trim().split('\n');
    expect(dryLines).toHaveLength(1);
    const dryOut = JSON.parse(dryLines[0]);
    expect(dryOut).toMatchObject({
      dry_run: true,
      deleted: { captures: 2, outbound: 2, inbox: 2, attempts: 13, boss_job: 6 },
      total: 25,
    });
    expect(await survivors(pool)).toEqual(before);

    const real = await runCli(['prune'], env);
    expect(real.code).toBe(0);
    const lines = real.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const out = JSON.parse(lines[0]);
    expect(out).toMatchObject({ dry_run: false, deleted: dryOut.deleted, total: 25 });
    // its log went to stderr, with the figures
    expect(real.stderr).toMatch(/prune pass finished/);
    const after = await survivors(pool);
    expect(after.items.size).toBe(1); // the 400-day-old pending capture
    expect((await pool.query(`select state from relay.captures`)).rows).toEqual([{ state: 'pending' }]);

    let boss: BossLedger | undefined;
    let app: FastifyInstance | undefined;
    try {
      boss = await startBoss(db.url);
      app = await buildTestApp(pool, boss);
      const metrics = (await call(app, 'GET', '/metrics')).body;
      expect(metrics).toMatch(/^tg_relay_prune_last_run_deleted_rows\{table="captures"\} 2$/m);
      expect(metrics).toMatch(/^tg_relay_prune_last_run_deleted_rows\{table="boss_job"\} 6$/m);
      expect(metrics).toMatch(/^tg_relay_prune_runs_24h 1$/m);
      expect(metrics).toMatch(/^tg_relay_prune_deleted_rows_24h\{table="attempts"\} 13$/m);
    } finally {
      await app?.close();
      await boss?.stop({ graceful: false, wait: true });
    }
  }, 60_000);

  it('rejects an unknown argument and a bad RETENTION with a message naming it', async () => {
    const bad = await runCli(['prune', '--force'], { DATABASE_URL: db.url });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/Unknown option '--force'/);
    const cfg = await runCli(['prune'], { DATABASE_URL: db.url, RETENTION: '2 weeks' });
    expect(cfg.code).toBe(78);
    expect(cfg.stderr).toMatch(/RETENTION/);
    expect(cfg.stderr).toMatch(/14d/);
  }, 30_000);
});

describe('periodic pruning', () => {
  it('runs in one replica at a time (advisory lock): passes never overlap, logs its figures, and together delete everything once', async () => {
    const seeded = await seed(pool, victims(900));
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) });
    const logger = createLogger({ level: 'info', destination: sink });
    const pools = [createPool(db.url, { max: 4 }), createPool(db.url, { max: 4 })];
    // slow passes (small batches, pauses) so that replicas' ticks collide
    const replicas = pools.map((p, i) =>
      createPeriodicPrune({
        pool: p,
        logger,
        everyMs: 60_000,
        prune: { retentionMs: 14 * D, retentionFailedMs: 90 * D, batchSize: 20, pauseMs: 10, workerId: `r${i}` },
      }),
    );
    try {
      const first = replicas[0].tick();
      await new Promise((r) => setTimeout(r, 100));
      const second = await replicas[1].tick(); // while replica 0 holds the lock
      const [a, b] = [await first, second];
      expect([a === null, b === null].sort()).toEqual([false, true]);
      const done = (a ?? b)!;
      expect(done.deleted).toMatchObject({ captures: 300, outbound: 300, inbox: 300, attempts: 1800, boss_job: 900 });

      // many ticks from both replicas at once: never two passes at the same time
      await seed(pool, victims(300));
      await Promise.all(Array.from({ length: 6 }, (_, i) => replicas[i % 2].tick()));
      const { rows } = await pool.query(
        `select worker_id, started_at, finished_at, total from relay.prune_runs where trigger = 'periodic' order by started_at`,
      );
      expect(rows.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < rows.length; i++)
        expect(rows[i].started_at.getTime()).toBeGreaterThanOrEqual(rows[i - 1].finished_at.getTime());
      expect(rows.reduce((s, r) => s + Number(r.total), 0)).toBe(900 * 4 + 300 * 4);
      expect((await survivors(pool)).items.size).toBe(0);
      expect(seeded).toHaveLength(900);
      const logged = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'prune pass finished');
      expect(logged.length).toBe(rows.length);
      expect(logged[0].prune.deleted.captures).toBe(300);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
      await Promise.all(pools.map((p) => p.end()));
    }
  }, 60_000);
});
