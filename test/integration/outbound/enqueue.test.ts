import { Client } from 'pg';
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import { enqueueJobs } from '../../../libs/queue/enqueue';
import {
  enqueueOutbound,
  enqueueOutboundBatch,
  OutboundConflictError,
  OutboundValidationError,
  outboundSettingsSave,
} from '../../../libs/outbound';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
const BOT = '1000000001';
const defaults = { botId: BOT, defaultChatId: '-100777' };

beforeAll(async () => {
  db = await createMigratedDatabase('ob_enq');
  boss = createBoss(db.url, { max: 1 });
});
afterAll(async () => {
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

const rowOf = async (msgId: string) =>
  (await db.pool.query('select * from relay.outbound where msg_id = $1', [msgId])).rows[0];
const jobsOf = async (msgId: string) =>
  (await db.pool.query(`select * from tg_relay_boss.job where name = 'outbound.send' and data->>'msgId' = $1`, [msgId]))
    .rows;

describe('enqueue through the library (way in #1)', () => {
  it('needs no pg-boss instance: the same row and job from a pool client alone, and the same rules', async () => {
    const r = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, { msg_id: 'lib-no-boss', chat_id: 43, text: 'no boss' }, defaults),
    );
    expect(r).toMatchObject({ msgId: 'lib-no-boss', created: true, state: 'pending', targetChatId: '43' });
    const jobs = await jobsOf('lib-no-boss');
    expect(jobs).toHaveLength(1);
    expect((await rowOf('lib-no-boss')).job_id).toBe(jobs[0].id);
    // idempotent and validated exactly as through a ledger
    const again = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, { msg_id: 'lib-no-boss', chat_id: 43, text: 'no boss' }, defaults),
    );
    expect(again).toMatchObject({ id: r.id, created: false });
    await expect(
      withTransaction(db.pool, (c) =>
        enqueueOutbound(c, { msg_id: 'lib-no-boss', chat_id: 43, text: 'other' }, defaults),
      ),
    ).rejects.toBeInstanceOf(OutboundConflictError);
    await expect(
      withTransaction(db.pool, (c) => enqueueOutbound(c, { msg_id: 'lib-bad', chat_id: 43, text: '' }, defaults)),
    ).rejects.toBeInstanceOf(OutboundValidationError);
    expect(await jobsOf('lib-no-boss')).toHaveLength(1);
  });

  it("creates the row and its pg-boss job in the caller's transaction and notifies workers on commit", async () => {
    const listener = new Client({ connectionString: db.url });
    await listener.connect();
    const notes: string[] = [];
    listener.on('notification', (n) => notes.push(`${n.channel}:${n.payload}`));
    await listener.query('listen tg_relay_work');
    try {
      const r = await withTransaction(db.pool, (c) =>
        enqueueOutbound(
          c,
          boss,
          {
            msg_id: 'lib-1',
            chat_id: 42,
            text: '<b>hi</b>',
            parse_mode: 'html',
            reply_markup: { inline_keyboard: [[{ text: 'a', callback_data: 'b' }]] },
          },
          defaults,
        ),
      );
      expect(r).toMatchObject({ msgId: 'lib-1', created: true, state: 'pending', targetChatId: '42' });
      const row = await rowOf('lib-1');
      expect(row).toMatchObject({
        bot_id: BOT,
        chat_id: '42',
        target_chat_id: '42',
        text: '<b>hi</b>',
        parse_mode: 'HTML',
        kind: 'message',
        delivery: 'at_least_once',
        state: 'pending',
      });
      expect(row.payload_sha256).toMatch(/^[0-9a-f]{64}$/);
      const jobs = await jobsOf('lib-1');
      expect(jobs).toHaveLength(1);
      expect(jobs[0]).toMatchObject({
        id: row.job_id,
        state: 'created',
        data: { outboundId: String(row.id), msgId: 'lib-1' },
      });
      await waitFor(() => notes.includes('tg_relay_work:outbound.send'), { what: 'NOTIFY' });
    } finally {
      await listener.end();
    }
  });

  it('returns the existing message for the same msg_id and payload (key order and chat spelling aside)', async () => {
    const msg = { msg_id: 'lib-2', chat_id: '007', text: 'x', reply_markup: { a: 1, b: { c: 2, d: 3 } } };
    const first = await withTransaction(db.pool, (c) => enqueueOutbound(c, boss, msg, defaults));
    const again = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { ...msg, chat_id: 7, reply_markup: { b: { d: 3, c: 2 }, a: 1 } }, defaults),
    );
    expect(again).toEqual({ ...first, created: false });
    expect(await jobsOf('lib-2')).toHaveLength(1);
  });

  it('throws RELAY_OUTBOUND_CONFLICT for the same msg_id with another payload, leaving the transaction usable', async () => {
    await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'lib-3', chat_id: 5, text: 'one' }, defaults),
    );
    for (const change of [
      { text: 'two' },
      { chat_id: 6 },
      { parse_mode: 'HTML' },
      { delivery: 'at_most_once' as const },
      { disable_notification: true },
    ]) {
      await withTransaction(db.pool, async (c) => {
        const err = await enqueueOutbound(
          c,
          boss,
          { msg_id: 'lib-3', chat_id: 5, text: 'one', ...change },
          defaults,
        ).catch((e) => e);
        expect(err).toBeInstanceOf(OutboundConflictError);
        expect(err).toMatchObject({ code: 'RELAY_OUTBOUND_CONFLICT', msgId: 'lib-3', existing: { state: 'pending' } });
        await c.query('select 1'); // still usable
      });
    }
    expect((await rowOf('lib-3')).text).toBe('one');
    expect(await jobsOf('lib-3')).toHaveLength(1);
  });

  it('writes nothing when the caller rolls back, or when the message is invalid', async () => {
    await expect(
      withTransaction(db.pool, async (c) => {
        await enqueueOutbound(c, boss, { msg_id: 'lib-4', chat_id: 5, text: 'x' }, defaults);
        throw new Error('caller failed');
      }),
    ).rejects.toThrow('caller failed');
    const invalid = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'lib-5', chat_id: 'nope', text: '' }, defaults),
    ).catch((e) => e);
    expect(invalid).toBeInstanceOf(OutboundValidationError);
    expect(invalid.problems.map((p: { field: string }) => p.field).sort()).toEqual(['chat_id', 'text']);
    expect(await rowOf('lib-4')).toBeUndefined();
    expect(await jobsOf('lib-4')).toHaveLength(0);
    expect(await rowOf('lib-5')).toBeUndefined();
  });

  it('sends a message without chat_id to the default chat (OPS_CHAT_ID), else to relay.outbound_settings, else refuses', async () => {
    const r = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'lib-6', text: 'to ops' }, defaults),
    );
    expect(r.targetChatId).toBe('-100777');
    const none = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'lib-7', text: 'to ops' }, { botId: BOT }),
    ).catch((e) => e);
    expect(none).toBeInstanceOf(OutboundValidationError);
    expect(none.message).toMatch(/no default chat configured \(OPS_CHAT_ID\)/);
    await outboundSettingsSave(db.pool, { botId: BOT, defaultChatId: '@ops_channel' });
    const viaSettings = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'lib-7', text: 'to ops' }),
    );
    expect(viaSettings).toMatchObject({ created: true, targetChatId: '@ops_channel' });
    expect((await rowOf('lib-7')).bot_id).toBe(BOT);
  });

  it('keeps the input order of a batch (ids follow it) with one job per new message', async () => {
    const rows = await withTransaction(db.pool, (c) =>
      enqueueOutboundBatch(
        c,
        boss,
        Array.from({ length: 5 }, (_, i) => ({ msg_id: `batch-${i}`, chat_id: 9, text: `n${i}` })),
        defaults,
      ),
    );
    const ids = rows.map((r) => Number(r.id));
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    for (let i = 0; i < 5; i++) expect(await jobsOf(`batch-${i}`)).toHaveLength(1);
  });

  it('creates a msg_id once when two transactions race to enqueue it', async () => {
    const msg = { msg_id: 'race-1', chat_id: 11, text: 'once' };
    const results = await Promise.all(
      Array.from({ length: 6 }, () => withTransaction(db.pool, (c) => enqueueOutbound(c, boss, msg, defaults))),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(await jobsOf('race-1')).toHaveLength(1);
  });
});

describe('priority lanes (sql/0027_outbound_lanes.sql)', () => {
  const laneOf = async (msgId: string) => (await rowOf(msgId))?.lane;

  it('stores interactive by default and bulk when asked, through the library, its default option and SQL', async () => {
    await withTransaction(db.pool, async (c) => {
      await enqueueOutbound(c, { msg_id: 'lane-default', chat_id: 7, text: 'x' }, defaults);
      await enqueueOutbound(c, { msg_id: 'lane-bulk', chat_id: 7, text: 'x', lane: 'bulk' }, defaults);
      await enqueueOutboundBatch(
        c,
        boss,
        [
          { msg_id: 'lane-opt-1', chat_id: 8, text: 'x' },
          { msg_id: 'lane-opt-2', chat_id: 8, text: 'x', lane: 'interactive' },
        ],
        { ...defaults, lane: 'bulk' },
      );
    });
    await outboundSettingsSave(db.pool, { botId: BOT, defaultChatId: '-100777' });
    // the old positional call still works, and lane is a named argument at the end
    await db.pool.query(`select relay.enqueue_outbound('lane-sql-old', '9', 'x', 'HTML', false, null)`);
    await db.pool.query(`select relay.enqueue_outbound('lane-sql-bulk', '9', 'x', lane => 'bulk')`);
    expect(
      await Promise.all(
        ['lane-default', 'lane-bulk', 'lane-opt-1', 'lane-opt-2', 'lane-sql-old', 'lane-sql-bulk'].map(laneOf),
      ),
    ).toEqual(['interactive', 'bulk', 'bulk', 'interactive', 'interactive', 'bulk']);
  });

  it('refuses another lane naming the field (library, option and SQL), writing nothing', async () => {
    const err = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, { msg_id: 'lane-bad', chat_id: 7, text: 'x', lane: 'urgent' as never }, defaults),
    ).catch((e) => e);
    expect(err).toBeInstanceOf(OutboundValidationError);
    expect((err as OutboundValidationError).problems).toEqual([
      { field: 'lane', problem: 'must be one of interactive, bulk' },
    ]);
    const optErr = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, { msg_id: 'lane-bad', chat_id: 7, text: 'x' }, { ...defaults, lane: 'fast' as never }),
    ).catch((e) => e);
    expect((optErr as OutboundValidationError).problems[0].field).toBe('lane');
    await expect(
      db.pool.query(`select relay.enqueue_outbound('lane-bad', '7', 'x', lane => 'Bulk')`),
    ).rejects.toMatchObject({
      code: 'TR422',
      message: expect.stringMatching(/lane must be interactive or bulk, got "Bulk"/),
    });
    expect(await rowOf('lane-bad')).toBeUndefined();
  });

  it('keeps the lane out of the payload: the same message from another lane is the existing row', async () => {
    const first = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, { msg_id: 'lane-idem', chat_id: 7, text: 'x', lane: 'bulk' }, defaults),
    );
    const again = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, { msg_id: 'lane-idem', chat_id: 7, text: 'x' }, defaults),
    );
    expect(again).toMatchObject({ id: first.id, created: false });
    expect(await laneOf('lane-idem')).toBe('bulk');
  });
});

describe('enqueue through the SQL function relay.enqueue_outbound (way in #2)', () => {
  beforeAll(async () => {
    await outboundSettingsSave(db.pool, { botId: BOT, defaultChatId: '-100777' });
  });

  it('creates the row and its job, idempotently, and raises TR409 on a different payload', async () => {
    const first = (
      await db.pool.query(
        `select * from relay.enqueue_outbound('sql-1', '-100123', '*bold*', parse_mode => 'MarkdownV2', disable_notification => true)`,
      )
    ).rows[0];
    expect(first).toMatchObject({ created: true, state: 'pending', target_chat_id: '-100123' });
    const row = await rowOf('sql-1');
    expect(row).toMatchObject({
      bot_id: BOT,
      parse_mode: 'MarkdownV2',
      disable_notification: true,
      job_id: first.job_id,
    });
    const jobs = await jobsOf('sql-1');
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      id: first.job_id,
      state: 'created',
      data: { outboundId: String(row.id), msgId: 'sql-1' },
    });

    const again = (
      await db.pool.query(
        `select * from relay.enqueue_outbound('sql-1', '-100123', '*bold*', parse_mode => 'markdownv2', disable_notification => true)`,
      )
    ).rows[0];
    expect(again).toMatchObject({ id: first.id, created: false });
    expect(await jobsOf('sql-1')).toHaveLength(1);

    await expect(
      db.pool.query(`select * from relay.enqueue_outbound('sql-1', '-100123', 'other text')`),
    ).rejects.toMatchObject({
      code: 'TR409',
      message: expect.stringMatching(/^RELAY_OUTBOUND_CONFLICT: msg_id "sql-1"/),
    });
  });

  it('validates like the library (TR422, naming the field)', async () => {
    const cases: [string, RegExp][] = [
      [`select relay.enqueue_outbound('sql-x', 'abc', 'x')`, /chat_id must be an integer chat id/],
      [`select relay.enqueue_outbound('sql-x', '5', '')`, /text must be 1\.\.4096 characters/],
      [`select relay.enqueue_outbound('sql-x', '5', repeat('x', 4097))`, /text must be 1\.\.4096 characters, got 4097/],
      [
        `select relay.enqueue_outbound('sql-x', '5', 'x', parse_mode => 'rtf')`,
        /parse_mode must be MarkdownV2, HTML or Markdown/,
      ],
      [`select relay.enqueue_outbound('sql-x', '5', 'x', kind => 'spam')`, /kind must be/],
      [`select relay.enqueue_outbound('sql-x', '5', 'x', delivery => 'maybe')`, /delivery must be/],
      [`select relay.enqueue_outbound('sql-x', '5', 'x', reply_markup => '[1]')`, /reply_markup must be a JSON object/],
      [`select relay.enqueue_outbound('', '5', 'x')`, /msg_id must be 1\.\.256/],
    ];
    for (const [sql, message] of cases) {
      await expect(db.pool.query(sql)).rejects.toMatchObject({
        code: 'TR422',
        message: expect.stringMatching(message),
      });
    }
    expect(await rowOf('sql-x')).toBeUndefined();
  });

  it('shares one idempotency rule with the library, in both directions', async () => {
    await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'cross-1', chat_id: 5, text: 'same', parse_mode: 'HTML' }, defaults),
    );
    const viaSql = (
      await db.pool.query(`select * from relay.enqueue_outbound('cross-1', '5', 'same', parse_mode => 'HTML')`)
    ).rows[0];
    expect(viaSql.created).toBe(false);
    await db.pool.query(`select relay.enqueue_outbound('cross-2', null, 'to the default chat')`);
    const viaLib = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'cross-2', text: 'to the default chat' }),
    );
    expect(viaLib).toMatchObject({ created: false, targetChatId: '-100777' });
    const conflict = await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, boss, { msg_id: 'cross-2', text: 'changed' }),
    ).catch((e) => e);
    expect(conflict).toBeInstanceOf(OutboundConflictError);
  });

  it("runs inside the caller's transaction: a rollback leaves no row and no job", async () => {
    const c = await db.pool.connect();
    try {
      await c.query('begin');
      await c.query(`select relay.enqueue_outbound('sql-rb', '5', 'x')`);
      await c.query('rollback');
    } finally {
      c.release();
    }
    expect(await rowOf('sql-rb')).toBeUndefined();
    expect(await jobsOf('sql-rb')).toHaveLength(0);
  });

  it("writes the same pg-boss job row as pg-boss's own insert does (measured, not assumed)", async () => {
    const viaBoss = await withTransaction(db.pool, (c) =>
      enqueueJobs(c, boss, 'outbound.send', [{ data: { probe: true } }]),
    );
    const viaSql = (await db.pool.query(`select job_id from relay.enqueue_outbound('sql-eq', '5', 'x')`)).rows[0]
      .job_id;
    // every column, so a column pg-boss adds in an upgrade shows up here: only ids, data and times differ
    const q = `select to_jsonb(j) - 'id' - 'data' - 'created_on' - 'start_after' - 'keep_until' as row,
                      keep_until - created_on as keep_for, start_after - created_on < interval '1 second' as starts_now
                 from tg_relay_boss.job j where id = $1`;
    const viaLibrary = (
      await withTransaction(db.pool, (c) => enqueueOutbound(c, { msg_id: 'lib-eq', chat_id: 5, text: 'x' }, defaults))
    ).jobId;
    const a = (await db.pool.query(q, [viaBoss[0]])).rows[0];
    const b = (await db.pool.query(q, [viaSql])).rows[0];
    const c = (await db.pool.query(q, [viaLibrary])).rows[0];
    expect(Object.keys(a.row).length).toBeGreaterThan(10);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });
});

describe('the library writes a message, its job and the wake-up in one statement', () => {
  it('sends one statement for a message (and for a batch), as the outcome transaction of a reply does', async () => {
    const sent: string[] = [];
    await withTransaction(db.pool, async (c) => {
      const query = c.query.bind(c);
      c.query = ((...args: Parameters<typeof query>) => {
        const t = args[0] as string | { text: string };
        sent.push(typeof t === 'string' ? t : t.text);
        return query(...args);
      }) as typeof c.query;
      try {
        await enqueueOutbound(c, { msg_id: 'one-stmt', chat_id: 6, text: 'x' }, defaults);
        await enqueueOutboundBatch(
          c,
          [
            { msg_id: 'one-stmt-a', chat_id: 6, text: 'a' },
            { msg_id: 'one-stmt-b', chat_id: 7, text: 'b' },
          ],
          defaults,
        );
      } finally {
        c.query = query;
      }
    });
    expect(sent).toHaveLength(2);
    for (const m of ['one-stmt', 'one-stmt-a', 'one-stmt-b']) expect(await jobsOf(m)).toHaveLength(1);
  });

  it('refuses with RELAY_ENQUEUE_FAILED when the ledger has no outbound queue, and the caller rolls back', async () => {
    await expect(
      withTransaction(db.pool, async (c) => {
        // its jobs reference it: they go first (all of it rolls back)
        await c.query(`delete from tg_relay_boss.job where name = 'outbound.send'`);
        await c.query(`delete from tg_relay_boss.queue where name = 'outbound.send'`);
        await enqueueOutbound(c, { msg_id: 'no-queue', chat_id: 8, text: 'x' }, defaults);
      }),
    ).rejects.toMatchObject({ code: 'RELAY_ENQUEUE_FAILED' });
    expect(await rowOf('no-queue')).toBeUndefined();
    // the queue is back (the delete rolled back too): the same message enqueues
    await withTransaction(db.pool, (c) => enqueueOutbound(c, { msg_id: 'no-queue', chat_id: 8, text: 'x' }, defaults));
    expect(await jobsOf('no-queue')).toHaveLength(1);
  });
});
