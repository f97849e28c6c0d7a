/**
 * Prune concurrently with a fleet under load: two real `tg-relay worker` processes deliver a
 * steady stream of captures (and prune periodically themselves), while two pruners in this process
 * loop passes with a 1 ms retention, so rows are deleted moments after they are delivered —
 * racing the workers' claims and outcome writes on the same rows.
 */
import { BOSS_SCHEMA, createBoss, Pool, QUEUES } from '../../../libs/db';
import { createCollector, Collector } from '../../../libs/sandbox';
import { runPrune } from '../../../libs/retention/prune';
import { insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';
import { seed } from './fixtures';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let pool: Pool;
let collector: Collector;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('prune_conc');
  pool = db.pool;
  collector = createCollector();
  await collector.start();
});
afterAll(async () => {
  for (const w of workers) await killWorker(w);
  await collector?.stop();
  await db?.drop();
});

it('loses nothing, deletes nothing twice, never touches pending or delivering rows, and leaves no orphan attempts or jobs', async () => {
  // 600 finished rows from three weeks ago: the workers' own periodic pruning must take them
  await seed(
    pool,
    Array.from({ length: 600 }, () => ({ kind: 'captures' as const, state: 'delivered', ageHours: 21 * 24 })),
  );
  collector.setFaults({ latencyMs: 5 });
  const env = {
    DATABASE_URL: db.url,
    CAPTURE_URL: collector.captureUrl,
    WORKER_CONCURRENCY: '16',
    PRUNE_EVERY: '1s',
    RETENTION: '14d',
  };
  for (let i = 0; i < 2; i++) workers.push(startWorkerProcess(env));
  const ids = await Promise.all(workers.map((w) => workerStarted(w)));

  await waitFor(async () => (await pool.query(`select count(*)::int as n from relay.captures`)).rows[0].n === 0, {
    what: "the workers' periodic pass over the old rows",
    timeoutMs: 20_000,
  });
  const boss = createBoss(db.url, { max: 1 });
  const total = 1_500;
  let stop = false;
  const pruned = { captures: 0, attempts: 0, boss_job: 0, passes: 0 };
  const pruner = async () => {
    while (!stop) {
      const r = await runPrune(pool, { retentionMs: 1, retentionFailedMs: null, batchSize: 50, trigger: 'api' });
      pruned.captures += r.deleted.captures;
      pruned.attempts += r.deleted.attempts;
      pruned.boss_job += r.deleted.boss_job;
      pruned.passes++;
    }
  };
  const pruners = [pruner(), pruner()];
  // ~250 captures/s in batches of 10
  const keys: string[] = [];
  for (let i = 0; i < total / 10; i++) {
    keys.push(...(await insertCaptures(pool, boss, 10)).map((c) => c.key));
    await new Promise((r) => setTimeout(r, 40));
  }
  await waitFor(() => collector.stats().unique_keys >= total, {
    what: 'every capture at the collector',
    timeoutMs: 60_000,
  }).catch(async (err) => {
    const { rows } = await pool.query(`select state, count(*)::int from relay.captures group by 1`);
    throw new Error(`${err.message}: ${collector.stats().unique_keys}/${total}; states ${JSON.stringify(rows)}`);
  });
  // let the pruners see the last deliveries, then one more final pass
  await new Promise((r) => setTimeout(r, 300));
  stop = true;
  await Promise.all(pruners);
  const last = await runPrune(pool, { retentionMs: 1, retentionFailedMs: null, trigger: 'api' });
  pruned.captures += last.deleted.captures;
  pruned.attempts += last.deleted.attempts;
  pruned.boss_job += last.deleted.boss_job;

  // nothing lost: every key reached the collector
  const received = new Set(collector.received().map((r) => r.key));
  expect(keys.filter((k) => !received.has(k))).toEqual([]);
  // every capture was delivered and then deleted exactly once (by us or the workers' passes)
  const { rows: left } = await pool.query(`select state, count(*)::int as n from relay.captures group by 1`);
  expect(left).toEqual([]);
  const { rows: runs } = await pool.query(
    `select trigger, coalesce(sum((deleted->>'captures')::int), 0)::int as captures, count(distinct worker_id)::int as workers, array_agg(distinct worker_id) as ids
       from relay.prune_runs group by 1 order by 1`,
  );
  const periodic = runs.find((r) => r.trigger === 'periodic');
  const api = runs.find((r) => r.trigger === 'api');
  expect(api.captures).toBe(pruned.captures);
  expect(periodic.captures + api.captures).toBe(total + 600);
  expect(ids).toEqual(expect.arrayContaining(periodic.ids.filter((x: string | null) => x)));
  // the old rows went by the workers' periodic pruning (RETENTION 14d), the fresh ones by ours
  expect(periodic.captures).toBeGreaterThanOrEqual(600);
  // no orphans: no attempt or pg-boss job outlived its row
  const { rows: orphans } = await pool.query(
    `select (select count(*)::int from relay.attempts where subject = 'capture') as attempts,
            (select count(*)::int from ${BOSS_SCHEMA}.job where name = $1) as jobs`,
    [QUEUES.capture],
  );
  expect(orphans).toEqual([{ attempts: 0, jobs: 0 }]);
  expect(pruned.passes).toBeGreaterThan(4);
  for (const w of workers) expect(w.exitCode).toBeNull();
}, 120_000);
