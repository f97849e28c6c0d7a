/**
 * Settle and release lock their rows in id order, whatever the order of their input and
 * of the rows on disk: two of them over overlapping claims (a heartbeat tick while an outcome batch
 * is written) then cannot deadlock. Rows 1..3 are stored on disk in the order 3, 2, 1 and passed in
 * that order; another session holds row 2. The statement under test then waits on row 2 holding
 * row 1 (id order), not row 3 (input or disk order). The heartbeat skips the held row instead.
 */
import type { PoolClient } from 'pg';
import { createBoss, Pool, QUEUES } from '../../../libs/db';
import { createCaptureStore } from '../../../libs/captures/deliver';
import type { ClaimRef, ClaimStore } from '../../../libs/queue';
import { insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';

let db: { url: string; pool: Pool; drop(): Promise<void> };

beforeAll(async () => {
  db = await createMigratedDatabase('lockorder');
});
afterAll(async () => {
  await db.drop();
});
afterEach(async () => {
  await db.pool.query('truncate relay.captures, relay.attempts');
});

type Store = ClaimStore<Record<string, unknown>>;
const cases: Array<[string, (store: Store, c: PoolClient, claims: ClaimRef[]) => Promise<unknown>]> = [
  [
    'settle',
    (store, c, claims) =>
      store.settle(
        c,
        claims.map((x) => ({ ...x, state: 'delivered' as const, status: 200 })),
        null,
      ),
  ],
  ['release', (store, c, claims) => store.release(c, claims, null)],
];

it.each(cases)('%s locks its rows in id order', async (_name, run) => {
  const store = createCaptureStore() as unknown as Store;
  await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 3);
  const claimed = await store.claim(db.pool, { limit: 3, workerId: 'lock-order', now: null, queue: QUEUES.capture });
  const ids = claimed.map((j) => Number(j.id)).sort((a, b) => a - b);
  expect(ids).toHaveLength(3);
  const [low, mid, high] = ids;
  // new row versions, highest id first: a sequential scan now meets them in the order high, mid, low
  for (const id of [high, mid, low])
    await db.pool.query('update relay.captures set updated_at = now() where id = $1', [id]);
  const claims: ClaimRef[] = [high, mid, low].map((id) => ({
    id: String(id),
    claimId: claimed.find((j) => Number(j.id) === id)!.claimId,
  }));

  const holder = await db.pool.connect();
  const subject = await db.pool.connect();
  const probe = await db.pool.connect();
  try {
    await holder.query('begin');
    await holder.query('select 1 from relay.captures where id = $1 for update', [mid]);
    const pid = (await subject.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
    await subject.query('begin');
    const running = run(store, subject, claims);
    await waitFor(
      async () =>
        (await db.pool.query(`select 1 from pg_stat_activity where pid = $1 and wait_event_type = 'Lock'`, [pid]))
          .rowCount === 1,
      {
        what: 'the statement waits for the held row',
        timeoutMs: 10_000,
      },
    );
    const lockable = async (id: number) => {
      await probe.query('begin');
      try {
        await probe.query('select 1 from relay.captures where id = $1 for update nowait', [id]);
        return true;
      } catch (err) {
        if ((err as { code?: string }).code === '55P03') return false;
        throw err;
      } finally {
        await probe.query('rollback');
      }
    };
    expect(await lockable(low)).toBe(false); // taken before the held row
    expect(await lockable(high)).toBe(true); // not reached yet
    await holder.query('rollback');
    await running;
    await subject.query('commit');
  } finally {
    await holder.query('rollback').catch(() => undefined);
    await subject.query('rollback').catch(() => undefined);
    for (const c of [holder, subject, probe]) c.release();
  }
});

it('heartbeat skips a row another session holds and reports it as held, not renewed', async () => {
  const store = createCaptureStore() as unknown as Store;
  await insertCaptures(db.pool, createBoss(db.url, { max: 1 }), 3);
  const claimed = await store.claim(db.pool, { limit: 3, workerId: 'lock-order', now: null, queue: QUEUES.capture });
  expect(claimed).toHaveLength(3);
  const [first, locked, last] = claimed;
  const claims: ClaimRef[] = claimed.map((j) => ({ id: j.id, claimId: j.claimId }));
  const holder = await db.pool.connect();
  try {
    await holder.query('begin');
    await holder.query('select 1 from relay.captures where id = $1 for update', [locked.id]);
    const beat = await store.heartbeat(db.pool, claims, null);
    expect(beat.renewed.sort()).toEqual([first.claimId, last.claimId].sort());
    expect(beat.held).toEqual([locked.claimId]);
  } finally {
    await holder.query('rollback');
    holder.release();
  }
  // a claim that is no longer ours is in neither list
  await db.pool.query('update relay.captures set claim_id = gen_random_uuid() where id = $1', [first.id]);
  const after = await store.heartbeat(db.pool, claims, null);
  expect(after.renewed.sort()).toEqual([locked.claimId, last.claimId].sort());
  expect(after.held).toEqual([]);
});
