/**
 * pg-boss in its own schema: an installation migrated before 0011 (pg-boss in `pgboss`) is moved by
 * `tg-relay migrate` with its jobs and keeps delivering; a `pgboss` shared with a bot author's own
 * pg-boss keeps the author's queues; every process but migrate refuses a pg-boss schema version it
 * was not built for, and none of them migrates it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  BossLedger,
  assertBossSchemaVersion,
  BOSS_SCHEMA,
  BOSS_SCHEMA_VERSION,
  createBoss,
  createPool,
  listMigrations,
  migrate,
  migrateAll,
  Pool,
  QUEUES,
} from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { countByState, inconsistentCaptures, insertCaptures } from '../../support/capture-fixtures';
import { runCli } from '../../support/cli';
import { createTestDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { startCaptureWorker } from '../../support/worker-harness';

/**
 * The database as tg-relay before 0011 left it: our migrations up to 0006 (0004's PL/pgSQL insert
 * names pgboss.job) and pg-boss started on its default schema with our three queues, as the old
 * migrateAll did. Returns that old pg-boss, for enqueueing through the old path.
 */
async function legacyInstall(url: string, pool: Pool): Promise<BossLedger> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legacy-sql-'));
  for (const m of listMigrations().filter((m) => m.version <= 6))
    fs.copyFileSync(m.file, path.join(dir, path.basename(m.file)));
  await migrate(pool, { dir });
  const boss = new BossLedger({ connectionString: url, schema: 'pgboss', supervise: false, schedule: false, max: 2 });
  boss.on('error', () => undefined);
  await boss.start();
  for (const name of Object.values(QUEUES)) {
    await boss.createQueue(name, {
      name,
      policy: 'standard',
      retryLimit: 0,
      expireInSeconds: 23 * 3600,
      retentionMinutes: 30 * 24 * 60,
    });
  }
  return boss;
}

const schemaExists = async (pool: Pool, name: string) =>
  (await pool.query('select 1 from pg_namespace where nspname = $1', [name])).rowCount === 1;

describe('pg-boss schema', () => {
  let collector: Collector;
  beforeAll(async () => {
    collector = createCollector();
    await collector.start();
  });
  afterAll(async () => {
    await collector.stop();
  });

  it('an installation with pg-boss in `pgboss` is moved by migrate with every job, and keeps delivering', async () => {
    expect(BOSS_SCHEMA).toBe('tg_relay_boss');
    const db = await createTestDatabase('bsch');
    const pool = createPool(db.url, { max: 4 });
    const legacy = await legacyInstall(db.url, pool);
    let worker: ReturnType<typeof startCaptureWorker> | undefined;
    try {
      // work enqueued by the old code paths: captures through pg-boss's insert, an outbound message through 0004's SQL copy
      const caps = await insertCaptures(pool, legacy, 5);
      const out = (await pool.query(`select * from relay.enqueue_outbound('legacy-1', '5', 'hi', bot_id => '1')`))
        .rows[0];
      const before = (await pool.query(`select id::text, name, state::text from pgboss.job order by id`)).rows;
      expect(before).toHaveLength(6);
      await legacy.stop({ graceful: false, wait: true });

      await migrateAll(db.url);

      expect(await schemaExists(pool, 'pgboss')).toBe(false);
      const after = (await pool.query(`select id::text, name, state::text from tg_relay_boss.job order by id`)).rows;
      expect(after).toEqual(before);
      expect(after.map((j) => j.id)).toEqual(expect.arrayContaining([...caps.map((c) => c.jobId), out.job_id]));
      // no function of pg-boss's still names the old schema (create_queue builds partitions by name)
      const stale = await pool.query(
        `select p.proname from pg_proc p join pg_namespace n on n.oid = p.pronamespace
          where n.nspname in ($1, 'relay') and p.prosrc like '%pgboss.%'`,
        [BOSS_SCHEMA],
      );
      expect(stale.rows).toEqual([]);
      // column defaults and constraints reference types by oid: they follow the rename (checked, not assumed)
      const defaults = await pool.query(
        `select c.relname, pg_get_expr(d.adbin, d.adrelid) as expr from pg_attrdef d join pg_class c on c.oid = d.adrelid
           join pg_namespace n on n.oid = c.relnamespace where n.nspname = $1`,
        [BOSS_SCHEMA],
      );
      expect(defaults.rows.length).toBeGreaterThan(0);
      expect(defaults.rows.filter((r) => r.expr.includes('pgboss'))).toEqual([]);
      expect(defaults.rows.some((r) => r.expr.includes(`${BOSS_SCHEMA}.job_state`))).toBe(true);
      await assertBossSchemaVersion(pool);

      // pg-boss's own functions work in the new schema: a new queue gets its partition there
      const boss = createBoss(db.url, { max: 1 });
      await boss.start();
      await boss.createQueue('probe.after-move');
      const part = await pool.query(`select partition_name from ${BOSS_SCHEMA}.queue where name = 'probe.after-move'`);
      const table = await pool.query(`select schemaname from pg_tables where tablename = $1`, [
        part.rows[0].partition_name,
      ]);
      expect(table.rows).toEqual([{ schemaname: BOSS_SCHEMA }]);
      await boss.stop({ graceful: false, wait: true });
      // the SQL enqueue path writes into the new schema
      const out2 = (await pool.query(`select * from relay.enqueue_outbound('after-1', '5', 'hi', bot_id => '1')`))
        .rows[0];
      expect((await pool.query(`select name from ${BOSS_SCHEMA}.job where id = $1`, [out2.job_id])).rows).toEqual([
        { name: QUEUES.outbound },
      ]);

      // migrate again: a no-op
      expect((await migrateAll(db.url)).applied).toEqual([]);
      expect((await pool.query(`select count(*)::int as n from tg_relay_boss.job`)).rows[0].n).toBe(7);

      // and the captures enqueued before the move are delivered, their jobs completed
      worker = startCaptureWorker({ url: db.url, pool, captureUrl: collector.captureUrl });
      await worker.start();
      await waitFor(async () => (await countByState(pool)).delivered === 5, {
        what: '5 legacy captures delivered',
        timeoutMs: 30_000,
      });
      expect(await inconsistentCaptures(pool)).toEqual([]);
      expect([...collector.byKey().keys()].sort()).toEqual(caps.map((c) => c.key).sort());
    } finally {
      await worker?.stop({ timeoutMs: 5_000 });
      await pool.end();
      await db.drop();
    }
  });

  it("a `pgboss` shared with a bot author's pg-boss: only tg-relay's queues move, the author's stay and keep working", async () => {
    const db = await createTestDatabase('bsch');
    const pool = createPool(db.url, { max: 4 });
    const legacy = await legacyInstall(db.url, pool);
    try {
      await legacy.createQueue('author.jobs');
      const authorIds = [await legacy.send('author.jobs', { n: 1 }), await legacy.send('author.jobs', { n: 2 })];
      const caps = await insertCaptures(pool, legacy, 3);

      await migrateAll(db.url);

      const theirs = (await pool.query(`select name from pgboss.queue order by name`)).rows.map((r) => r.name);
      expect(theirs).toEqual(['author.jobs']);
      expect((await pool.query(`select id::text from pgboss.job order by id`)).rows.map((r) => r.id)).toEqual(
        [...authorIds].sort(),
      );
      const ours = (
        await pool.query(`select id::text from ${BOSS_SCHEMA}.job where name = $1 order by id`, [QUEUES.capture])
      ).rows.map((r) => r.id);
      expect(ours).toEqual(caps.map((c) => c.jobId).sort());
      // the author's pg-boss still fetches its own jobs
      const fetched = await legacy.fetch('author.jobs', { batchSize: 5 });
      expect(fetched.map((j) => j.id).sort()).toEqual([...authorIds].sort());
      expect((await migrateAll(db.url)).applied).toEqual([]);
    } finally {
      await legacy.stop({ graceful: false, wait: true });
      await pool.end();
      await db.drop();
    }
  });

  it('worker, admin and poller refuse a pg-boss schema version they were not built for (exit 65, both versions named) and leave it unmigrated', async () => {
    const db = await createTestDatabase('bsch');
    await migrateAll(db.url);
    const pool = createPool(db.url, { max: 2 });
    try {
      const older = BOSS_SCHEMA_VERSION - 1;
      await pool.query(`update ${BOSS_SCHEMA}.version set version = $1`, [older]);
      await expect(assertBossSchemaVersion(pool)).rejects.toMatchObject({
        code: 'RELAY_BOSS_SCHEMA_MISMATCH',
        recorded: older,
        expected: BOSS_SCHEMA_VERSION,
      });

      const env = {
        DATABASE_URL: db.url,
        TELEGRAM_BOT_TOKEN: '123456:refuse-test',
        TELEGRAM_API_ROOT: 'http://127.0.0.1:9',
        ADMIN_PORT: '0',
        CAPTURE_URL: 'http://127.0.0.1:9/capture',
      };
      for (const cmd of ['worker', 'admin', 'poller']) {
        const r = await runCli([cmd], env, { timeoutMs: 60_000 });
        expect({ cmd, code: r.code }).toEqual({ cmd, code: 65 });
        expect(r.stderr).toContain(`version ${older}`);
        expect(r.stderr).toContain(`version ${BOSS_SCHEMA_VERSION}`);
        expect(r.stderr).toContain('tg-relay migrate');
      }
      // nobody but migrate migrates pg-boss's schema
      expect((await pool.query(`select version from ${BOSS_SCHEMA}.version`)).rows[0].version).toBe(older);

      // not installed at all: refused the same way
      await pool.query(`drop schema ${BOSS_SCHEMA} cascade`);
      const r = await runCli(['worker'], env, { timeoutMs: 60_000 });
      expect(r.code).toBe(65);
      expect(r.stderr).toContain('not installed');
      // tg-relay migrate puts it back, and the worker's check passes
      expect((await runCli(['migrate'], { DATABASE_URL: db.url }, { timeoutMs: 60_000 })).code).toBe(0);
      await assertBossSchemaVersion(pool);
    } finally {
      await pool.end();
      await db.drop();
    }
  });
});
