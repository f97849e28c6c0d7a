/**
 * relay.outbound_chat_rate keeps a row per chat a bot ever sent to; a row whose windows have all
 * passed carries no state (it limits nothing that a missing row would not), so the prune pass deletes
 * it in batches, skipping rows a sender holds. Rate limiting is the same after pruning.
 */
import { Pool, withTransaction } from '../../../libs/db';
import { createOutboundRateLimiter, OUTBOUND_RATE_LIMITS_DEFAULT } from '../../../libs/outbound';
import { outboundRateReserve } from '../../../libs/outbound/queries';
import { runPrune } from '../../../libs/retention/prune';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let pool: Pool;
const limiter = createOutboundRateLimiter(OUTBOUND_RATE_LIMITS_DEFAULT);
const BOT = '77';

beforeAll(async () => {
  db = await createMigratedDatabase('prune_chat_rate');
  pool = db.pool;
});
afterAll(async () => {
  await db?.drop();
});

const chats = async () =>
  new Set(
    (
      await pool.query<{ chat_id: string }>(`select chat_id from relay.outbound_chat_rate where bot_id = $1`, [BOT])
    ).rows.map((r) => r.chat_id),
  );
const reserve = (chatId: string) =>
  outboundRateReserve(pool, { botId: BOT, chatId, intervalMs: 1, burst: 1000, horizonMs: 10_000 });

it('deletes the rows of 1,000 idle chats in batches, keeps active and held ones, and limits the same afterwards', async () => {
  // idle: last charged minutes to weeks ago, groups with a drained 20/min bucket among them
  await pool.query(
    `insert into relay.outbound_chat_rate (bot_id, chat_id, next_at, group_tat, updated_at)
     select $1, case when i % 2 = 0 then (-1000000 - i)::text else i::text end,
            now() - (i * interval '7 minutes'), case when i % 2 = 0 then now() - (i * interval '5 minutes') end,
            now() - (i * interval '7 minutes')
       from generate_series(1, 1000) i`,
    [BOT],
  );
  // active: just sent to (a private chat, a group with a full burst), pushed back by a 429
  await withTransaction(pool, async (c) => {
    await limiter.afterAttempt(c, BOT, '5001');
    for (let i = 0; i < 20; i++) await limiter.afterAttempt(c, BOT, '-1005002');
    await limiter.afterAttempt(c, BOT, '5003', 30_000);
  });
  const active = ['5001', '-1005002', '5003'];

  // a sender holds one idle row (its charge is under way): the pass leaves it alone
  const holder = await pool.connect();
  try {
    await holder.query('begin');
    await holder.query(`select 1 from relay.outbound_chat_rate where bot_id = $1 and chat_id = '1' for update`, [BOT]);
    const dry = await runPrune(pool, { retentionMs: null, retentionFailedMs: null, dryRun: true });
    expect(dry.deleted.outbound_chat_rate).toBe(1000);
    expect((await chats()).size).toBe(1003);
    const r = await runPrune(pool, { retentionMs: null, retentionFailedMs: null, batchSize: 100, pauseMs: 0 });
    expect(r.deleted.outbound_chat_rate).toBe(999);
    expect(r.batches).toBeGreaterThanOrEqual(10);
    expect([...(await chats())].sort()).toEqual(['1', ...active].sort());
    await holder.query('commit');
  } finally {
    holder.release();
  }

  // limits after the pass: the 429'd chat still waits, a pruned chat sends at once and is charged again
  expect(await reserve('5003')).toMatchObject({ reserved: false, waitMs: expect.any(Number) });
  expect((await reserve('5003')).waitMs).toBeGreaterThan(20_000);
  expect(await reserve('3')).toMatchObject({ reserved: true });
  await withTransaction(pool, (c) => limiter.afterAttempt(c, BOT, '3'));
  expect(await reserve('3')).toMatchObject({ reserved: false });
  const groupWait = await reserve('-1005002');
  expect(groupWait.reserved).toBe(false);

  const again = await runPrune(pool, { retentionMs: null, retentionFailedMs: null, pauseMs: 0 });
  expect(again.deleted.outbound_chat_rate).toBe(1); // the held row, now free
  expect([...(await chats())].sort()).toEqual(['3', ...active].sort());
});

it('a charge waiting on a row that prune deletes under it still lands (inserted again), never lost', async () => {
  await pool.query(
    `insert into relay.outbound_chat_rate (bot_id, chat_id, next_at) values ($1, '9', now() - interval '1 hour')`,
    [BOT],
  );
  // the prune's transaction: the row locked, then deleted, as its batch statement does
  const pruner = await pool.connect();
  const sender = await pool.connect();
  try {
    await pruner.query('begin');
    await pruner.query(`select 1 from relay.outbound_chat_rate where bot_id = $1 and chat_id = '9' for update`, [BOT]);
    const pid = (await sender.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
    const charge = limiter.afterAttempt(sender, BOT, '9');
    await waitFor(
      async () =>
        (await pool.query(`select count(*)::int as n from pg_locks where pid = $1 and not granted`, [pid])).rows[0].n >
        0,
      { what: 'the charge waiting for the pruned row', timeoutMs: 20_000 },
    );
    await pruner.query(`delete from relay.outbound_chat_rate where bot_id = $1 and chat_id = '9'`, [BOT]);
    await pruner.query('commit');
    await charge;
  } finally {
    pruner.release();
    sender.release();
  }
  const row = (
    await pool.query(
      `select next_at > now() as waits from relay.outbound_chat_rate where bot_id = $1 and chat_id = '9'`,
      [BOT],
    )
  ).rows;
  expect(row).toEqual([{ waits: true }]);
});
