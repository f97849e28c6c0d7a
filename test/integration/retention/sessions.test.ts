/**
 * Handler sessions expire SESSION_TTL after their last write: the prune pass deletes expired ones
 * on every pass (whatever RETENTION says), in batches, skipping one a dispatch holds; live ones stay.
 */
import { Pool } from '../../../libs/db';
import { sessionStore } from '../../../libs/dispatch';
import { runPrune } from '../../../libs/retention/prune';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let pool: Pool;

beforeAll(async () => {
  db = await createMigratedDatabase('prune_sessions');
  pool = db.pool;
});
afterAll(async () => {
  await db?.drop();
});

const keys = async () =>
  (await pool.query<{ key: string }>('select key from relay.sessions order by key')).rows.map((r) => r.key);

it('deletes expired sessions in batches (dry run counts the same), keeps live ones and one a dispatch has locked', async () => {
  const store = sessionStore({ pool, botId: '1', ttlMs: 60_000 });
  for (let i = 0; i < 7; i++) await store.set(`old:${i}`, { i });
  await store.set('live', { n: 1 });
  await pool.query(`update relay.sessions set expires_at = now() - interval '1 hour' where key like 'old:%'`);
  const holder = await pool.connect();
  try {
    await holder.query('begin');
    await holder.query(`select 1 from relay.sessions where key = 'old:0' for update`);
    const dry = await runPrune(pool, { retentionMs: null, retentionFailedMs: null, dryRun: true, pauseMs: 0 });
    expect(dry.deleted.sessions).toBe(7);
    const real = await runPrune(pool, { retentionMs: null, retentionFailedMs: null, batchSize: 2, pauseMs: 0 });
    expect(real.deleted.sessions).toBe(6);
    expect(await keys()).toEqual(['live', 'old:0']);
  } finally {
    await holder.query('rollback');
    holder.release();
  }
  const again = await runPrune(pool, { retentionMs: null, retentionFailedMs: null, pauseMs: 0 });
  expect(again.deleted.sessions).toBe(1);
  expect(await keys()).toEqual(['live']);
  // the live one expires at its TTL after the last write: a pass "an hour later" takes it too
  const later = await runPrune(pool, {
    retentionMs: null,
    retentionFailedMs: null,
    pauseMs: 0,
    now: new Date(Date.now() + 3_600_000),
  });
  expect(later.deleted.sessions).toBe(1);
  expect(await keys()).toEqual([]);
});
