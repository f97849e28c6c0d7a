/**
 * relay.jetstream_rejects keeps the exact bytes of every message the JetStream bridge refused; those
 * rows age like failed work: the prune pass deletes them RETENTION_FAILED after they were refused,
 * in batches, and keeps them for good when RETENTION_FAILED is off.
 */
import { Pool } from '../../../libs/db';
import { runPrune } from '../../../libs/retention/prune';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let pool: Pool;
const DAY = 24 * 3600_000;

beforeAll(async () => {
  db = await createMigratedDatabase('prune_js_rejects');
  pool = db.pool;
});
afterAll(async () => {
  await db?.drop();
});

/** One reject per age in days; returns the ids by age. */
async function seed(ages: number[]): Promise<Map<number, string>> {
  const ids = new Map<number, string>();
  for (const [i, age] of ages.entries()) {
    const { rows } = await pool.query<{ id: string }>(
      `insert into relay.jetstream_rejects (stream, subject, stream_seq, reason, error, raw, sha256, created_at)
       values ('S', 'telegram.outbound', $1::bigint, 'invalid', 'msg_id: contains NUL', '\\x00'::bytea, md5($1::text), now() - $2 * interval '1 day')
       returning id`,
      [i + 1, age],
    );
    ids.set(age, rows[0].id);
  }
  return ids;
}
const left = async () =>
  new Set((await pool.query<{ id: string }>('select id from relay.jetstream_rejects')).rows.map((r) => r.id));

it('deletes rejects older than RETENTION_FAILED in batches (dry run counts the same) and keeps the younger ones', async () => {
  await pool.query('truncate relay.jetstream_rejects');
  const ids = await seed([1, 30, 89, 91, 120, 400]);
  const opts = { retentionMs: 14 * DAY, retentionFailedMs: 90 * DAY, batchSize: 2, pauseMs: 0 };
  const dry = await runPrune(pool, { ...opts, dryRun: true });
  expect(dry.deleted.jetstream_rejects).toBe(3);
  expect((await left()).size).toBe(6);
  const real = await runPrune(pool, opts);
  expect(real.deleted.jetstream_rejects).toBe(3);
  expect(await left()).toEqual(new Set([ids.get(1), ids.get(30), ids.get(89)]));
});

it('keeps every reject when RETENTION_FAILED is off', async () => {
  await pool.query('truncate relay.jetstream_rejects');
  await seed([1, 400, 4000]);
  const r = await runPrune(pool, { retentionMs: 14 * DAY, retentionFailedMs: null, pauseMs: 0 });
  expect(r.deleted.jetstream_rejects).toBe(0);
  expect((await left()).size).toBe(3);
});
