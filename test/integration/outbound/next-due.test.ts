/**
 * How long an idle outbound worker sleeps (the claim store's nextDueInMs) and what its claim takes,
 * statement by statement, lane by lane: never past an interactive row's due time because of the
 * bulk lane, and not "due now" (a worker spinning on claims that find nothing) while the only
 * pending rows are bulk rows that the rate limits or the bulk in-flight bound hold back.
 */
import { createBoss, withTransaction } from '../../../libs/db';
import type { BossLedger } from '../../../libs/db/boss';
import { QUEUES } from '../../../libs/db/boss';
import {
  createOutboundRateLimiter,
  enqueueOutboundBatch,
  OUTBOUND_RATE_LIMITS_DEFAULT,
  type OutboundRateLimits,
} from '../../../libs/outbound';
import { createOutboundClaimStore } from '../../../libs/outbound/send-kind';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
beforeAll(async () => {
  db = await createMigratedDatabase('ob_next_due');
  boss = createBoss(db.url, { max: 1 });
});
afterAll(async () => {
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

let botSeq = 900;
const PAID = { allow_paid_broadcast: true };

/** A claim store (and its limiter) for a bot of its own. */
function setup(limits: Partial<OutboundRateLimits> = {}) {
  const botId = String(++botSeq);
  const limiter = createOutboundRateLimiter({ ...OUTBOUND_RATE_LIMITS_DEFAULT, ...limits });
  const store = createOutboundClaimStore({ botId, limiter, opsChatId: null, horizonMs: 10_000 });
  const enqueue = (
    rows: { chat: number; lane: 'interactive' | 'bulk'; paid?: boolean; msgId?: string }[],
  ): Promise<string[]> =>
    withTransaction(db.pool, async (c) =>
      (
        await enqueueOutboundBatch(
          c,
          boss,
          rows.map((r, i) => ({
            msg_id: r.msgId ?? `${botId}-${r.lane}-${r.chat}-${i}-${Math.random()}`,
            chat_id: r.chat,
            text: 'x',
            lane: r.lane,
            ...(r.paid ? { send_options: PAID } : {}),
          })),
          { botId },
        )
      ).map((m) => m.id),
    );
  const due = () => store.nextDueInMs(db.pool, null);
  const claim = async (limit = 50) =>
    (await store.claim(db.pool, { limit, workerId: 'w-test', now: null, queue: QUEUES.outbound })).map((j) => j.row);
  /** The bot's free budget booked `ms` ahead (interactive traffic took the slots, or a bot-level 429). */
  const bookFree = (ms: number) =>
    db.pool.query(
      `insert into relay.outbound_bot_rate (bot_id, tat) values ($1, clock_timestamp() + $2 * interval '1 millisecond')
       on conflict (bot_id) do update set tat = excluded.tat`,
      [botId, ms],
    );
  const setDueIn = (ids: string[], ms: number) =>
    db.pool.query(
      `update relay.outbound set next_attempt_at = now() + $2 * interval '1 millisecond' where id = any($1::bigint[])`,
      [ids, ms],
    );
  /** Rows in flight (claimed by another worker). */
  const inFlight = (ids: string[]) =>
    db.pool.query(
      `update relay.outbound set state = 'delivering', claim_id = gen_random_uuid(), worker_id = 'other', started_at = now(),
              heartbeat_at = now() where id = any($1::bigint[])`,
      [ids],
    );
  return { botId, limiter, store, enqueue, due, claim, bookFree, setDueIn, inFlight };
}

describe('outbound next due and claim, by lane', () => {
  it("an interactive row due in 1 s behind its chat's bulk message waiting 30 s: due in about 1 s", async () => {
    const t = setup();
    const [bulk] = await t.enqueue([{ chat: 1, lane: 'bulk' }]);
    const [reply] = await t.enqueue([{ chat: 1, lane: 'interactive' }]);
    await t.setDueIn([bulk], 30_000);
    await t.setDueIn([reply], 1_000);
    const ms = await t.due();
    expect(ms).not.toBeNull();
    expect(ms!).toBeGreaterThan(500);
    expect(ms!).toBeLessThanOrEqual(1_000);
  });

  it('an interactive row is due now while bulk is held back by a free budget booked 3 s ahead; the claim takes it, not the bulk rows', async () => {
    const t = setup();
    await t.enqueue([
      { chat: 10, lane: 'bulk' },
      { chat: 11, lane: 'bulk' },
    ]);
    const [reply] = await t.enqueue([{ chat: 12, lane: 'interactive' }]);
    await t.bookFree(3_000);
    expect(await t.due()).toBe(0);
    expect((await t.claim()).map((r) => r.id)).toEqual([reply]);
  });

  it('only bulk rows pending and the free budget booked 3 s ahead: not due until a bulk slot comes, and the claim takes none', async () => {
    const t = setup();
    await t.enqueue(Array.from({ length: 5 }, (_, i) => ({ chat: 20 + i, lane: 'bulk' as const })));
    await t.bookFree(3_000);
    const ms = await t.due();
    expect(ms).not.toBeNull();
    // a bulk row waits at most bulkAheadMs in its process's gate, so it is claimed that long before its slot
    expect(ms!).toBeGreaterThan(3_000 - t.limiter.bulkAheadMs - 200);
    expect(ms!).toBeLessThanOrEqual(3_000 - t.limiter.bulkAheadMs + 50);
    expect(await t.claim()).toEqual([]);
  });

  it('only bulk rows pending and the bulk in-flight bound full: nothing is due (a settling bulk row wakes the workers)', async () => {
    const t = setup();
    const max = t.limiter.bulkInFlightMax;
    const flying = await t.enqueue(Array.from({ length: max }, (_, i) => ({ chat: 100 + i, lane: 'bulk' as const })));
    await t.enqueue(Array.from({ length: 5 }, (_, i) => ({ chat: 200 + i, lane: 'bulk' as const })));
    await t.inFlight(flying);
    expect(await t.claim()).toEqual([]);
    expect(await t.due()).toBeNull();
    // one fewer in flight: a bulk row is due at once
    await db.pool.query(`update relay.outbound set state = 'delivered' where id = $1`, [flying[0]]);
    expect(await t.due()).toBe(0);
    // (the bound is read once per claim statement, so one claim of several rows may pass it)
    expect(await t.claim(1)).toHaveLength(1);
  });

  it('bulk rows of chats that are cooling down are due when the first chat is ready', async () => {
    const t = setup();
    await t.enqueue([
      { chat: 30, lane: 'bulk' },
      { chat: 31, lane: 'bulk' },
    ]);
    await db.pool.query(
      `insert into relay.outbound_chat_rate (bot_id, chat_id, next_at)
       values ($1, '30', clock_timestamp() + interval '2 seconds'), ($1, '31', clock_timestamp() + interval '4 seconds')`,
      [t.botId],
    );
    const ms = await t.due();
    expect(ms!).toBeGreaterThan(1_500);
    expect(ms!).toBeLessThanOrEqual(2_000);
    expect(await t.claim()).toEqual([]);
  });

  it('paid bulk rows (PAID_BROADCAST_RATE on) are due and claimed while the free budget is booked ahead; unpaid bulk rows are not', async () => {
    const t = setup({ paidBroadcast: { count: 100, windowMs: 1000 } });
    const paid = await t.enqueue([
      { chat: 40, lane: 'bulk', paid: true },
      { chat: 41, lane: 'bulk', paid: true },
    ]);
    await t.enqueue([{ chat: 42, lane: 'bulk' }]);
    await t.bookFree(3_000);
    expect(await t.due()).toBe(0);
    expect((await t.claim()).map((r) => r.id).sort()).toEqual([...paid].sort());
  });

  it('paid and free bulk rows have in-flight bounds of their own', async () => {
    const t = setup({ paidBroadcast: { count: 100, windowMs: 1000 } });
    const free = await t.enqueue(
      Array.from({ length: t.limiter.bulkInFlightMax }, (_, i) => ({ chat: 300 + i, lane: 'bulk' as const })),
    );
    await t.inFlight(free);
    const paid = await t.enqueue([{ chat: 400, lane: 'bulk', paid: true }]);
    await t.enqueue([{ chat: 401, lane: 'bulk' }]);
    expect(await t.due()).toBe(0);
    expect((await t.claim()).map((r) => r.id)).toEqual(paid);
    expect(t.limiter.paid!.inFlightMax).toBe(100); // a second at 100/s
  });

  it('with PAID_BROADCAST_RATE on, plain bulk rows are due and claimed on the free budget as before', async () => {
    const t = setup({ paidBroadcast: { count: 100, windowMs: 1000 } });
    const plain = await t.enqueue([
      { chat: 60, lane: 'bulk' },
      { chat: 61, lane: 'bulk' },
    ]);
    expect(await t.due()).toBe(0);
    expect((await t.claim()).map((r) => r.id).sort()).toEqual([...plain].sort());
  });

  it('without PAID_BROADCAST_RATE a row with allow_paid_broadcast is plain bulk: held back by the free budget', async () => {
    const t = setup();
    await t.enqueue([{ chat: 50, lane: 'bulk', paid: true }]);
    await t.bookFree(3_000);
    expect(await t.claim()).toEqual([]);
    expect(await t.due()).toBeGreaterThan(2_000);
  });

  it('nothing pending: null', async () => {
    const t = setup();
    expect(await t.due()).toBeNull();
  });
});
