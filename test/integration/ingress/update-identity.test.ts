/**
 * What the batch statement takes for the same update and where it leaves the cursor, at the
 * statement level (the poller and the webhook over the sandbox are in update-id-reuse.test.ts and
 * webhook-switch.test.ts):
 * - an update_id with the same bytes is a redelivery; with other bytes it is a new update (Telegram
 *   reuses ids after a week without updates), stored under the next update_epoch and dispatched;
 * - the polling cursor follows what Telegram served, below the stored cursor too, and a stale
 *   generation's batch is still refused;
 * - the webhook cursor stops at the first update_id not stored, and passes a DECODE_POLICY=stop
 *   refusal only once that update is stored; the refusal's bytes are held in relay.quarantine.
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, Pool } from '../../../libs/db';
import { LeaseLostError } from '../../../libs/ingress/errors';
import { persistBatch } from '../../../libs/ingress/persist-batch';
import { planBatch } from '../../../libs/ingress/plan-batch';
import { createMigratedDatabase } from '../../support/db';
import { makeCallbackUpdate, makeMessageUpdate } from '../../support/ingress-fixtures';
import { acquireLease, cursorOf, jobCounts, newBotToken, persistOptions } from '../../support/ingress-harness';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let pool: Pool;
let boss: BossLedger;

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_identity');
  pool = db.pool;
  boss = createBoss(db.url, { max: 1 });
});
afterAll(async () => {
  await db.drop();
});

const polled = (items: unknown[], offset: number) =>
  planBatch(
    items.map((i) => (typeof i === 'string' ? i : JSON.stringify(i))),
    { policy: 'stop', offset, transport: 'polling' },
  );
const delivered = (item: unknown) =>
  planBatch([typeof item === 'string' ? item : JSON.stringify(item)], {
    policy: 'stop',
    offset: 0,
    transport: 'webhook',
  });

async function inboxRows(botId: string) {
  const { rows } = await pool.query<{ update_id: string; update_epoch: number; raw: string; state: string }>(
    `select update_id, update_epoch, raw::text as raw, state from relay.inbox where bot_id = $1 order by update_id, update_epoch`,
    [botId],
  );
  return rows.map((r) => ({ updateId: Number(r.update_id), epoch: r.update_epoch, raw: r.raw, state: r.state }));
}

describe('update identity', () => {
  it('an update_id stored with the same bytes is a redelivery; with other bytes it is a new update, stored and dispatched', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const fence = await acquireLease(pool, botId);
    const first = makeMessageUpdate({ updateId: 10, chatId: C, text: 'a week ago' });
    await persistBatch({ pool, boss }, polled([first], 10), persistOptions(botId, fence));

    const again = await persistBatch({ pool, boss }, polled([first], 10), persistOptions(botId, fence));
    expect(again).toMatchObject({ stored: 0, duplicates: 1 });

    // the same id, another update (Telegram picked 10 again after its reset), and a callback query
    // (no capture key to notice it by) under a reused id too
    const reused = makeMessageUpdate({ updateId: 10, chatId: C, messageId: 500, text: 'today' });
    const cb = makeCallbackUpdate({ updateId: 11, chatId: C });
    await persistBatch({ pool, boss }, polled([cb], 11), persistOptions(botId, fence));
    const cbReused = { ...cb, callback_query: { ...cb.callback_query, id: 'another-query' } };
    const r = await persistBatch({ pool, boss }, polled([reused, cbReused], 10), persistOptions(botId, fence));
    expect(r).toMatchObject({ stored: 2, duplicates: 0, reused: 2, dispatchJobs: 2, captures: 1 });

    const rows = await inboxRows(botId);
    expect(rows.map((x) => [x.updateId, x.epoch, x.state])).toEqual([
      [10, 0, 'pending'],
      [10, 1, 'pending'],
      [11, 0, 'pending'],
      [11, 1, 'pending'],
    ]);
    expect(JSON.parse(rows[1].raw)).toEqual(reused);
    expect(await jobCounts(pool, botId)).toEqual({ dispatch: 4, capture: 2 });

    // a redelivery of the reused version is absorbed like any other
    const third = await persistBatch({ pool, boss }, polled([reused], 10), persistOptions(botId, fence));
    expect(third).toMatchObject({ stored: 0, duplicates: 1 });
    expect(await inboxRows(botId)).toHaveLength(4);
  });

  it('the polling cursor follows what Telegram served, below the stored cursor too; a stale generation is still refused', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const old = await acquireLease(pool, botId, 'owner-old');
    await persistBatch(
      { pool, boss },
      polled(
        [800, 801].map((id) => makeMessageUpdate({ updateId: id, chatId: C })),
        800,
      ),
      persistOptions(botId, old),
    );
    expect((await cursorOf(pool, botId))?.nextOffset).toBe(802);

    await pool.query('update relay.cursor set lease_expires_at = clock_timestamp() where bot_id = $1', [botId]);
    const fence = await acquireLease(pool, botId, 'owner-new');
    // offset 802 lies past Telegram's queue after its reset: it answered from the head, ids 40..41
    const head = polled(
      [40, 41].map((id) => makeMessageUpdate({ updateId: id, chatId: C, text: `new ${id}` })),
      802,
    );
    expect(head.nextOffset).toBe(42);
    await expect(persistBatch({ pool, boss }, head, persistOptions(botId, old))).rejects.toBeInstanceOf(LeaseLostError);
    expect((await cursorOf(pool, botId))?.nextOffset).toBe(802);

    const r = await persistBatch({ pool, boss }, head, persistOptions(botId, fence));
    expect(r).toMatchObject({ stored: 2, nextOffset: 42 });
    expect((await cursorOf(pool, botId))?.nextOffset).toBe(42);
  });

  it('the webhook cursor stops at the first update_id not stored, and moves on once it is', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const fence = await acquireLease(pool, botId);
    await persistBatch(
      { pool, boss },
      polled([makeMessageUpdate({ updateId: 49, chatId: C })], 49),
      persistOptions(botId, fence),
    );
    expect((await cursorOf(pool, botId))?.nextOffset).toBe(50);

    // 51 was answered 500 (not stored) while 50 and 52 committed: Telegram redelivers 51
    for (const id of [50, 52])
      await persistBatch(
        { pool, boss },
        delivered(makeMessageUpdate({ updateId: id, chatId: C })),
        persistOptions(botId, fence),
      );
    expect((await cursorOf(pool, botId))?.nextOffset).toBe(51);

    await persistBatch(
      { pool, boss },
      delivered(makeMessageUpdate({ updateId: 51, chatId: C })),
      persistOptions(botId, fence),
    );
    expect((await cursorOf(pool, botId))?.nextOffset).toBe(53);
  });

  it('DECODE_POLICY=stop in webhook mode holds the refused bytes in relay.quarantine; halted_reason clears once that update is stored', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const fence = await acquireLease(pool, botId);
    await persistBatch(
      { pool, boss },
      polled([makeMessageUpdate({ updateId: 59, chatId: C })], 59),
      persistOptions(botId, fence),
    );
    const bad = `{"update_id":60,"message":{"message_id":1,"date":1700000000,"chat":{"id":"not a number"},"text":"x\\u0000"}}`;
    const refused = delivered(bad);
    expect(refused.halt).toMatch(/update_id 60 could not be decoded/);
    await persistBatch({ pool, boss }, refused, persistOptions(botId, fence));

    const { rows: q } = await pool.query<{ update_id: string; raw: Buffer; error: string; state: string }>(
      'select update_id, raw, error, state from relay.quarantine where bot_id = $1',
      [botId],
    );
    expect(q).toHaveLength(1);
    expect(q[0]).toMatchObject({ update_id: '60', state: 'quarantined' });
    expect(q[0].raw.toString('utf8')).toBe(bad);
    expect(q[0].error).toMatch(
      /^DECODE_POLICY=stop refused this update \(answered 500, Telegram redelivers it\); held/,
    );
    let cursor = await cursorOf(pool, botId);
    expect(cursor).toMatchObject({ nextOffset: 60 });
    expect(cursor?.haltedReason).toMatch(/update_id 60/);

    // a later update commits: the refused one is still not stored, the halt and the cursor stay
    await persistBatch(
      { pool, boss },
      delivered(makeMessageUpdate({ updateId: 61, chatId: C })),
      persistOptions(botId, fence),
    );
    cursor = await cursorOf(pool, botId);
    expect(cursor).toMatchObject({ nextOffset: 60 });
    expect(cursor?.haltedReason).toMatch(/update_id 60/);

    // Telegram redelivers 60 and (a fixed decoder) it is stored: the cause is gone
    await persistBatch(
      { pool, boss },
      delivered(makeMessageUpdate({ updateId: 60, chatId: C })),
      persistOptions(botId, fence),
    );
    cursor = await cursorOf(pool, botId);
    expect(cursor).toMatchObject({ nextOffset: 62, haltedReason: null, haltedAt: null });
  });
});
