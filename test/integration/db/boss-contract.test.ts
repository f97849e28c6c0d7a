/**
 * The pg-boss contract: what tg-relay touches in pg-boss's schema outside its public API
 * (libs/db/boss-contract.ts) exists, with those types, in the installed pg-boss — and the installed
 * package is the pinned release. Fails on a pg-boss upgrade until the list is re-checked.
 */
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { BOSS_CONTRACT } from '../../../libs/db/boss-contract';
import {
  BOSS_PACKAGE_VERSION,
  BOSS_SCHEMA,
  BOSS_SCHEMA_VERSION,
  createBoss,
  installedBoss,
  ledgerStatements,
  Pool,
  QUEUES,
  withTransaction,
  type BossLedger,
} from '../../../libs/db';
import { createMigratedDatabase } from '../../support/db';

let db: { url: string; pool: Pool; drop(): Promise<void> };
let boss: BossLedger;
beforeAll(async () => {
  db = await createMigratedDatabase('bcon');
  boss = createBoss(db.url, { max: 2 });
  await boss.start();
});
afterAll(async () => {
  await boss.stop({ graceful: false, wait: true });
  await db.drop();
});

const ROOT = path.resolve(__dirname, '../../..');

/** Source files of the product (not tests/benches) that may name pg-boss's tables. */
function productSources(): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|sql)$/.test(e.name)) out.push({ file: path.relative(ROOT, p), text: fs.readFileSync(p, 'utf8') });
    }
  };
  for (const d of ['libs', 'apps', 'sql']) walk(path.join(ROOT, d));
  return out;
}

describe('pg-boss contract (pinned)', () => {
  it('the installed pg-boss is the release the contract and the version guard were written for', () => {
    const installed = installedBoss();
    expect(installed).toEqual({ version: BOSS_CONTRACT.packageVersion, schema: BOSS_CONTRACT.schemaVersion });
    expect({ version: BOSS_PACKAGE_VERSION, schema: BOSS_SCHEMA_VERSION }).toEqual(installed);
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(pkg.dependencies['pg-boss']).toBe(BOSS_CONTRACT.packageVersion); // pinned exactly, no range
  });

  it('every column tg-relay uses directly exists with the type it assumes', async () => {
    const { rows } = await db.pool.query(
      `select table_name, column_name, case when data_type = 'USER-DEFINED' then udt_name else data_type end as type
         from information_schema.columns where table_schema = $1`,
      [BOSS_SCHEMA],
    );
    const actual = new Map(rows.map((r) => [`${r.table_name}.${r.column_name}`, r.type]));
    const expected = Object.entries(BOSS_CONTRACT.tables).flatMap(([t, cols]) =>
      Object.entries(cols).map(([c, type]) => [`${t}.${c}`, type]),
    );
    expect(expected.map(([k]) => [k, actual.get(k)])).toEqual(expected);
  });

  it('the job states keep their enum order', async () => {
    const { rows } = await db.pool.query(
      `select e.enumlabel from pg_enum e join pg_type t on t.oid = e.enumtypid join pg_namespace n on n.oid = t.typnamespace
        where n.nspname = $1 and t.typname = 'job_state' order by e.enumsortorder`,
      [BOSS_SCHEMA],
    );
    expect(rows.map((r) => r.enumlabel)).toEqual(BOSS_CONTRACT.jobStates);
  });

  it("the product names no pg-boss table or column outside the contract, and never pg-boss's default schema", () => {
    const tables = new Set<string>();
    for (const { file, text } of productSources()) {
      for (const m of text.matchAll(/(?:\$\{BOSS_SCHEMA\}|\$\{JOB\}|tg_relay_boss)\.?(\w*)/g)) {
        const t = m[0].startsWith('${JOB}') ? 'job' : m[1];
        if (t) tables.add(`${t} (${file})`);
      }
      // the old schema name appears only where the legacy move and its docs name it
      if (!/boss-schema\.ts$|boss\.ts$|database\.ts$|0004_outbound\.sql$/.test(file))
        expect({ file, pgboss: /\bpgboss\./.test(text) }).toEqual({ file, pgboss: false });
    }
    const names = [...tables].map((t) => t.split(' ')[0]);
    const allowed = [...Object.keys(BOSS_CONTRACT.tables), 'job_state', 'create_queue', 'delete_queue', '%I'];
    expect(names.filter((n) => !allowed.includes(n))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['job', 'queue']));
  });
});

/**
 * The job ledger adapter (libs/db/boss.ts) writes jobs with its own statements; each is run here
 * next to the installed pg-boss's own command on a twin job, and the two rows must agree in every
 * column (times as "set now" / "unset", keep_until as a duration). A pg-boss upgrade that changes
 * what any of them writes fails here, and the pinned plan fingerprints fail on any change to the
 * plans we reproduce, even one these jobs do not exercise.
 */
describe('job ledger adapter = pg-boss (installed)', () => {
  const Q = QUEUES.capture;
  // every column, so a column pg-boss adds in an upgrade shows up: ids and data differ by design
  const rowOf = async (id: string) =>
    (
      await db.pool.query(
        `select to_jsonb(j) - 'id' - 'data' - 'created_on' - 'start_after' - 'keep_until' - 'started_on' - 'completed_on' as row,
                round(extract(epoch from keep_until - start_after) / 60) as keep_minutes, abs(extract(epoch from start_after - now())) < 60 as starts_now,
                started_on is not null as started, completed_on is not null as completed
           from ${BOSS_SCHEMA}.job j where id = $1`,
        [id],
      )
    ).rows[0];
  const twins = async () => {
    const [ours] = await withTransaction(db.pool, (c) => boss.insertJobs(c, Q, [{ data: { id: '1' } }]));
    const theirs = crypto.randomUUID();
    await withTransaction(db.pool, (c) =>
      boss.insert([{ id: theirs, name: Q, data: { id: '1' }, retryLimit: 0 }], {
        db: { executeSql: (t, v) => c.query(t, v) },
      }),
    );
    return { ours, theirs };
  };
  const activateTheirs = async (id: string) => {
    const fetched = (await boss.fetch(Q, { batchSize: 100 })).map((j) => j.id);
    expect(fetched).toContain(id);
    const others = fetched.filter((f) => f !== id); // only `id` is under test: put back what fetch() took besides it
    if (others.length)
      await db.pool.query(
        `update ${BOSS_SCHEMA}.job set state = 'created', started_on = null where id = any($1::uuid[])`,
        [others],
      );
  };
  afterEach(async () => db.pool.query(`delete from ${BOSS_SCHEMA}.job where name = $1`, [Q]));

  it('insert: insertJobs, the SQL copy (relay.outbound_boss_job_insert) and pg-boss insert() write the same row', async () => {
    const { ours, theirs } = await twins();
    const a = await rowOf(ours);
    expect(Object.keys(a.row).length).toBeGreaterThan(10);
    expect(await rowOf(theirs)).toEqual(a);
    const sqlId = crypto.randomUUID();
    const outTheirs = crypto.randomUUID();
    await db.pool.query(`select relay.outbound_boss_job_insert($1, '{}'::jsonb)`, [sqlId]);
    await boss.insert([{ id: outTheirs, name: QUEUES.outbound, data: {}, retryLimit: 0 }]);
    expect(await rowOf(sqlId)).toEqual(await rowOf(outTheirs));
    await db.pool.query(`delete from ${BOSS_SCHEMA}.job where id = any($1::uuid[])`, [[sqlId, outTheirs]]);
  });

  it('insert reports a missing queue instead of resolving silently', async () => {
    await expect(
      withTransaction(db.pool, (c) => ledgerStatements.insertJobs(c, 'no.such.queue' as typeof Q, [{ data: {} }])),
    ).rejects.toMatchObject({
      code: 'RELAY_ENQUEUE_FAILED',
    });
  });

  it('activation (claim) = fetch(); completion = complete()', async () => {
    const { ours, theirs } = await twins();
    await withTransaction(db.pool, (c) => boss.activateJobs(c, Q, [ours]));
    await activateTheirs(theirs);
    expect(await rowOf(ours)).toEqual(await rowOf(theirs));
    expect(await withTransaction(db.pool, (c) => boss.completeJobs(c, Q, [ours]))).toBe(1);
    await boss.complete(Q, theirs);
    expect((await rowOf(ours)).row.state).toBe('completed');
    expect(await rowOf(ours)).toEqual(await rowOf(theirs));
  });

  it('failure = fail(), also for a job activated twice (retry_count > retry_limit)', async () => {
    const { ours, theirs } = await twins();
    for (let i = 0; i < 2; i++) {
      await withTransaction(db.pool, (c) => boss.activateJobs(c, Q, [ours]));
      await activateTheirs(theirs);
      if (i === 0) {
        await withTransaction(db.pool, (c) => boss.rescheduleJobs(c, Q, [{ jobId: ours, startAfter: new Date() }], {}));
        await withTransaction(db.pool, (c) =>
          boss.rescheduleJobs(c, Q, [{ jobId: theirs, startAfter: new Date() }], {}),
        );
      }
    }
    expect((await rowOf(ours)).row.retry_count).toBe(1);
    expect(await withTransaction(db.pool, (c) => boss.failJobs(c, Q, [ours], { reason: 'x' }))).toBe(1);
    await boss.fail(Q, theirs, { reason: 'x' });
    expect((await rowOf(ours)).row).toMatchObject({ state: 'failed', output: { reason: 'x' } });
    expect(await rowOf(ours)).toEqual(await rowOf(theirs));
  });

  it("rescheduling leaves a job pg-boss's fetch() takes up again once due (its own retry state)", async () => {
    const { ours } = await twins();
    await withTransaction(db.pool, (c) => boss.activateJobs(c, Q, [ours]));
    await withTransaction(db.pool, (c) =>
      boss.rescheduleJobs(c, Q, [{ jobId: ours, startAfter: new Date(Date.now() + 3_600_000) }], { why: 'later' }),
    );
    expect((await rowOf(ours)).row.state).toBe('retry');
    expect((await boss.fetch(Q, { batchSize: 100 })).map((j) => j.id)).not.toContain(ours);
    await db.pool.query(`update ${BOSS_SCHEMA}.job set start_after = now() where id = $1`, [ours]);
    expect((await boss.fetch(Q, { batchSize: 100 })).map((j) => j.id)).toContain(ours);
  });

  it('cancellation = cancel()', async () => {
    const { ours, theirs } = await twins();
    expect(await withTransaction(db.pool, (c) => boss.cancelJobs(c, Q, [ours]))).toBe(1);
    await boss.cancel(Q, theirs);
    expect((await rowOf(ours)).row.state).toBe('cancelled');
    expect(await rowOf(ours)).toEqual(await rowOf(theirs));
  });

  it('our queues have no dead letter and retryLimit 0 (what the fail and insert statements assume)', async () => {
    const { rows } = await db.pool.query(
      `select name, dead_letter, retry_limit from ${BOSS_SCHEMA}.queue order by name`,
    );
    expect(rows).toEqual(
      Object.values(QUEUES)
        .sort()
        .map((name) => ({ name, dead_letter: null, retry_limit: 0 })),
    );
  });

  it("pg-boss's plans that the adapter reproduces are the ones it was written against (fingerprints)", () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const plans = require('pg-boss/src/plans.js') as Record<
      string,
      (schema: string) => string | ((o: object) => string)
    >;
    const text = (name: string) => {
      const plan = plans[name]('s');
      return typeof plan === 'function' ? plan({}) : plan;
    };
    const fingerprint = (name: string) => crypto.createHash('sha256').update(text(name)).digest('hex').slice(0, 16);
    expect(Object.fromEntries(Object.keys(BOSS_CONTRACT.plans).map((n) => [n, fingerprint(n)]))).toEqual(
      BOSS_CONTRACT.plans,
    );
  });
});
