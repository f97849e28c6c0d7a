import fc from 'fast-check';
import { BOSS_SCHEMA, createBoss, type BossLedger, Pool, QUEUES, withTransaction } from '../../../libs/db';
import { requeueFailed } from '../../../libs/queue/operator-actions';
import { runPrune } from '../../../libs/retention/prune';
import { createMigratedDatabase } from '../../support/db';
import { isVictim, itemKey, Kind, seed, Seed, STATES, survivors, wipe } from './fixtures';

const H = 3_600_000;
const D = 24 * H;

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let pool: Pool;
let boss: BossLedger;

beforeAll(async () => {
  db = await createMigratedDatabase('prune');
  pool = db.pool;
  boss = createBoss(db.url, { max: 1 });
});
afterAll(async () => {
  await db?.drop();
});

/** Checks the database against the model after a real pass; returns that pass's counts. */
async function pruneAndCheck(
  seeded: Awaited<ReturnType<typeof seed>>,
  retentionH: number | null,
  failedH: number | null,
) {
  const opts = {
    retentionMs: retentionH === null ? null : retentionH * H,
    retentionFailedMs: failedH === null ? null : failedH * H,
    batchSize: 7,
  };
  const before = await survivors(pool);
  const dry = await runPrune(pool, { ...opts, dryRun: true });
  // the dry run deleted nothing
  expect(await survivors(pool)).toEqual(before);
  const real = await runPrune(pool, opts);
  const after = await survivors(pool);

  const victims = seeded.filter((s) => isVictim(s, retentionH, failedH));
  const kept = seeded.filter((s) => !isVictim(s, retentionH, failedH));
  for (const s of kept) {
    expect({ row: itemKey(s), kept: after.items.has(itemKey(s)) }).toEqual({ row: itemKey(s), kept: true });
    if (s.kind !== 'audit') expect(after.attemptsOf.get(itemKey(s))).toBe(2);
    if (s.jobId) expect(after.jobs.has(s.jobId)).toBe(true);
    if (s.jobId && s.archived) expect(after.archived.has(s.jobId)).toBe(true);
  }
  for (const s of victims) {
    expect({ row: itemKey(s), kept: after.items.has(itemKey(s)) }).toEqual({ row: itemKey(s), kept: false });
    expect(after.attemptsOf.has(itemKey(s))).toBe(false);
    if (s.jobId) expect(after.jobs.has(s.jobId)).toBe(false);
    if (s.jobId) expect(after.archived.has(s.jobId)).toBe(false);
  }
  const count = (k: Kind) => victims.filter((s) => s.kind === k).length;
  const itemVictims = victims.filter((s) => s.kind !== 'audit');
  const expected = {
    captures: count('captures'),
    outbound: count('outbound'),
    inbox: count('inbox'),
    quarantine: count('quarantine'),
    attempts: itemVictims.length * 2 + count('audit'),
    boss_job: itemVictims.filter((s) => s.jobId).length,
    boss_archive: itemVictims.filter((s) => s.jobId && s.archived).length,
    superseded_jobs: 0,
    prune_runs: 0,
    outbound_chat_rate: 0,
    jetstream_rejects: 0,
    sessions: 0,
  };
  expect(real.deleted).toEqual(expected);
  expect(dry.deleted).toEqual(expected);
  expect(dry.total).toBe(real.total);
  return real;
}

describe('tg-relay prune', () => {
  beforeEach(() => wipe(pool));

  it('deletes exactly the finished rows past RETENTION and the failed/resolved/audit rows past RETENTION_FAILED, with attempts and pg-boss jobs', async () => {
    const seeds: Seed[] = [];
    for (const [kind, states] of Object.entries(STATES) as [Kind, string[]][]) {
      for (const state of states)
        for (const ageHours of [1, 20 * 24, 100 * 24]) seeds.push({ kind, state, ageHours, archived: ageHours > 24 });
    }
    const seeded = await seed(pool, seeds);
    const r = await pruneAndCheck(seeded, 14 * 24, 90 * 24);
    // 3 finished classes x 2 ages + failed rows (3 tables) + resolved quarantine (2 states) + audit (2) at 100 d
    expect(r.deleted.captures).toBe(3); // delivered 20 d, delivered 100 d, failed 100 d
    expect(r.deleted.inbox).toBe(3);
    expect(r.deleted.quarantine).toBe(2);
    // the run is recorded for /metrics
    const { rows } = await pool.query(`select trigger, total, deleted from relay.prune_runs`);
    expect(rows).toEqual([{ trigger: 'cli', total: String(r.total), deleted: r.deleted }]);
  });

  it('never deletes pending, delivering or claimed work, whatever its age (property)', async () => {
    const kindState = fc.constantFrom(
      ...(Object.entries(STATES) as [Kind, string[]][]).flatMap(([k, ss]) => ss.map((s) => [k, s] as const)),
    );
    const retention = fc.option(fc.integer({ min: 1, max: 400 * 24 }), { nil: null, freq: 4 });
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ ks: kindState, ageHours: fc.integer({ min: 0, max: 500 * 24 }), archived: fc.boolean() }),
          { minLength: 1, maxLength: 25 },
        ),
        retention,
        retention,
        async (rows, retentionH, failedH) => {
          await wipe(pool);
          const seeded = await seed(
            pool,
            rows.map((r) => ({ kind: r.ks[0], state: r.ks[1], ageHours: r.ageHours + 0.5, archived: r.archived })),
          );
          await pruneAndCheck(seeded, retentionH, failedH);
          const live = await pool.query(
            `select (select count(*) from relay.captures where state in ('pending', 'delivering'))::int
                  + (select count(*) from relay.outbound where state in ('pending', 'delivering'))::int
                  + (select count(*) from relay.inbox where state = 'pending')::int
                  + (select count(*) from relay.quarantine where state = 'quarantined')::int as n`,
          );
          const seededLive = seeded.filter((s) =>
            ['pending', 'delivering', 'claimed', 'quarantined'].includes(s.state),
          ).length;
          expect(live.rows[0].n).toBe(seededLive);
        },
      ),
      { numRuns: 15 },
    );
  }, 60_000);

  it('0/off (null) keeps a class for good', async () => {
    const seeded = await seed(pool, [
      { kind: 'captures', state: 'delivered', ageHours: 1000 * 24 },
      { kind: 'captures', state: 'failed', ageHours: 1000 * 24 },
      { kind: 'audit', state: 'admin', ageHours: 1000 * 24 },
    ]);
    let r = await pruneAndCheck(seeded, null, 90 * 24);
    expect(r.deleted.captures).toBe(1);
    await wipe(pool);
    const again = await seed(pool, [
      { kind: 'captures', state: 'delivered', ageHours: 1000 * 24 },
      { kind: 'captures', state: 'failed', ageHours: 1000 * 24 },
    ]);
    r = await pruneAndCheck(again, 14 * 24, null);
    expect(r.deleted.captures).toBe(1);
    expect((await pool.query(`select state from relay.captures`)).rows).toEqual([{ state: 'failed' }]);
  });

  it("an operator retry's superseded pg-boss job is deleted after RETENTION_FAILED, the retried row and its new job stay", async () => {
    const [failed] = await seed(pool, [{ kind: 'captures', state: 'failed', ageHours: 200 * 24 }]);
    await boss.start();
    let moved;
    try {
      moved = await withTransaction(pool, (c) =>
        requeueFailed(c, boss, { table: 'captures', queue: QUEUES.capture, ids: [failed.id], budget: 3 }),
      );
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
    expect(moved).toHaveLength(1);
    const newJob = moved[0].jobId;
    expect(newJob).not.toBe(failed.jobId);
    const { rows: sup } = await pool.query(`select source, row_id::text, job_id::text from relay.superseded_jobs`);
    expect(sup).toEqual([{ source: 'captures', row_id: failed.id, job_id: failed.jobId }]);

    // not yet: superseded just now
    let r = await runPrune(pool, { retentionMs: 14 * D, retentionFailedMs: 90 * D });
    expect(r.deleted.boss_job).toBe(0);
    // 91 days later (injected now): the old failed job goes; the pending row and its job stay
    const later = new Date(Date.now() + 91 * D);
    const dry = await runPrune(pool, { retentionMs: 14 * D, retentionFailedMs: 90 * D, now: later, dryRun: true });
    r = await runPrune(pool, { retentionMs: 14 * D, retentionFailedMs: 90 * D, now: later });
    expect(r.deleted).toMatchObject({ captures: 0, superseded_jobs: 1, boss_job: 1 });
    expect(dry.deleted).toEqual({ ...r.deleted, prune_runs: dry.deleted.prune_runs });
    const { rows: jobs } = await pool.query(`select id::text, state::text from ${BOSS_SCHEMA}.job where name = $1`, [
      QUEUES.capture,
    ]);
    expect(jobs).toEqual([{ id: newJob, state: 'created' }]);
    expect((await pool.query(`select state from relay.captures`)).rows).toEqual([{ state: 'pending' }]);
  });

  it('a row pruned with a superseded job takes that job along', async () => {
    const [failed] = await seed(pool, [{ kind: 'outbound', state: 'failed', ageHours: 200 * 24 }]);
    // an operator's hand-made retry in SQL, then the row fails again long ago
    await pool.query(
      `update relay.outbound set job_id = gen_random_uuid(), state = 'failed', updated_at = now() - interval '200 days' where id = $1`,
      [failed.id],
    );
    const r = await runPrune(pool, { retentionMs: 14 * D, retentionFailedMs: 90 * D });
    expect(r.deleted).toMatchObject({ outbound: 1, superseded_jobs: 1, boss_job: 1, attempts: 2 });
    expect(
      (await pool.query(`select count(*)::int as n from ${BOSS_SCHEMA}.job where name = $1`, [QUEUES.outbound])).rows[0]
        .n,
    ).toBe(0);
    expect((await pool.query(`select count(*)::int as n from relay.superseded_jobs`)).rows[0].n).toBe(0);
  });
});
