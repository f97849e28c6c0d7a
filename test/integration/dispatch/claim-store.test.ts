/** The inbox ClaimStore's per-chat head rule, statement by statement (no engine, no handlers). */
import { createBoss, QUEUES, withTransaction } from '../../../libs/db';
import { createInboxClaimStore } from '../../../libs/dispatch';
import { createMigratedDatabase } from '../../support/db';
import { BOT_ID, makeUpdate, storeUpdates } from './helpers';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
const ordered = createInboxClaimStore({ botId: BOT_ID, ordered: true });
const unordered = createInboxClaimStore({ botId: BOT_ID, ordered: false });

beforeAll(async () => {
  db = await createMigratedDatabase('dsp_store');
});
afterAll(async () => {
  await db?.drop();
});
beforeEach(async () => {
  await db.pool.query('truncate relay.inbox');
});

const claim = (store = ordered, limit = 100) =>
  store.claim(db.pool, { limit, workerId: 'w1', now: null, queue: QUEUES.dispatch });
const keys = (jobs: { key: string }[]) => jobs.map((j) => Number(j.key)).sort((a, b) => a - b);
const settle = (store: typeof ordered, items: Parameters<typeof ordered.settle>[1]) =>
  withTransaction(db.pool, (c) => store.settle(c, items, null));

async function seed(list: Array<[number, number | null]>) {
  await storeUpdates(
    db.pool,
    createBoss(db.url, { max: 1 }),
    list.map(([u, chat]) => makeUpdate(u, chat)),
  );
}

describe('claiming chat heads', () => {
  it('claims only the earliest pending update of each chat; chat-less updates are never held back', async () => {
    await seed([
      [1, 10],
      [2, 10],
      [3, 20],
      [4, null],
      [5, 20],
      [6, null],
      [7, 30],
    ]);
    expect(keys(await claim())).toEqual([1, 3, 4, 6, 7]);
    expect(keys(await claim())).toEqual([]); // 2 and 5 wait behind claimed heads
  });

  it('without ordering everything due is claimable', async () => {
    await seed([
      [1, 10],
      [2, 10],
      [3, 10],
    ]);
    expect(keys(await claim(unordered))).toEqual([1, 2, 3]);
  });

  it('a handled head releases the next update of its chat (and only that one)', async () => {
    await seed([
      [1, 10],
      [2, 10],
      [3, 10],
    ]);
    const [head] = await claim();
    const settled = await settle(ordered, [{ id: head.id, claimId: head.claimId, state: 'delivered' }]);
    expect(settled).toEqual([expect.objectContaining({ id: head.id, state: 'delivered' })]);
    expect((await db.pool.query('select state from relay.inbox where id = $1', [head.id])).rows[0].state).toBe(
      'handled',
    );
    expect(keys(await claim())).toEqual([2]);
  });

  it('a head waiting for its retry keeps holding its chat, and its followers take its due time', async () => {
    await seed([
      [1, 10],
      [2, 10],
      [3, 10],
      [4, 20],
    ]);
    const jobs = await claim();
    const head = jobs.find((j) => j.key === '1')!;
    await settle(ordered, [{ id: head.id, claimId: head.claimId, state: 'pending', delayMs: 60_000, error: 'x' }]);
    expect(keys(await claim())).toEqual([]); // 1 not due yet, 2 and 3 blocked; 4 already claimed
    const { rows } = await db.pool.query(
      `select update_id::int as u, next_attempt_at > now() + interval '50 seconds' as later from relay.inbox where chat_id = 10 order by 1`,
    );
    expect(rows).toEqual([
      { u: 1, later: true },
      { u: 2, later: true },
      { u: 3, later: true },
    ]);
  });

  it('a failed update does not hold its chat', async () => {
    await seed([
      [1, 10],
      [2, 10],
    ]);
    const [head] = await claim();
    await settle(ordered, [
      { id: head.id, claimId: head.claimId, state: 'failed', failedReason: 'budget spent', error: 'boom' },
    ]);
    expect((await db.pool.query('select state, last_error from relay.inbox where id = $1', [head.id])).rows[0]).toEqual(
      {
        state: 'failed',
        last_error: 'budget spent',
      },
    );
    expect(keys(await claim())).toEqual([2]);
  });

  it('outcomes are fenced by claim id', async () => {
    await seed([[1, 10]]);
    const [head] = await claim();
    expect(
      await settle(ordered, [{ id: head.id, claimId: '00000000-0000-0000-0000-000000000000', state: 'delivered' }]),
    ).toEqual([]);
    expect((await db.pool.query('select state, claim_id from relay.inbox where id = $1', [head.id])).rows[0]).toEqual({
      state: 'pending',
      claim_id: head.claimId,
    });
  });

  it('a stale claim goes back to pending (its chat stays held), a released one does not count as an attempt', async () => {
    await seed([
      [1, 10],
      [2, 10],
      [3, 20],
    ]);
    const jobs = await claim();
    await db.pool.query(`update relay.inbox set heartbeat_at = now() - interval '1 hour' where update_id = 1`);
    const recovered = await withTransaction(db.pool, (c) =>
      ordered.recoverStale(c, { staleMs: 60_000, now: null, limit: 10, maxAttempts: 5 }),
    );
    expect(recovered.map((r) => [r.key, r.state, r.attempt])).toEqual([['1', 'pending', 1]]);
    const third = jobs.find((j) => j.key === '3')!;
    const released = await withTransaction(db.pool, (c) =>
      ordered.release(c, [{ id: third.id, claimId: third.claimId }], null),
    );
    expect(released).toHaveLength(1);
    expect((await db.pool.query('select attempts, claim_id from relay.inbox where update_id = 3')).rows[0]).toEqual({
      attempts: 0,
      claim_id: null,
    });
    expect(keys(await claim())).toEqual([1, 3]);
  });

  it('the pg-boss jobs of claimed rows become active in the same statement', async () => {
    await seed([
      [1, 10],
      [2, 10],
    ]);
    await claim();
    const { rows } = await db.pool.query(
      `select i.update_id::int as u, j.state from relay.inbox i join tg_relay_boss.job j on j.id = i.job_id order by 1`,
    );
    expect(rows).toEqual([
      { u: 1, state: 'active' },
      { u: 2, state: 'created' },
    ]);
  });

  it('nextDueInMs looks at chat heads only', async () => {
    await seed([
      [1, 10],
      [2, 10],
    ]);
    const [head] = await claim();
    expect(await ordered.nextDueInMs(db.pool, null)).toBeNull(); // 2 is due but blocked by the claimed head
    await settle(ordered, [{ id: head.id, claimId: head.claimId, state: 'pending', delayMs: 5_000 }]);
    const due = await ordered.nextDueInMs(db.pool, null);
    expect(due).toBeGreaterThan(4_000);
    expect(due).toBeLessThanOrEqual(5_000);
  });
});
