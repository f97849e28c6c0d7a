/**
 * The batch transaction's cost guard, without timing: the number of statements (round trips) one
 * batch issues. A batch is BEGIN, ONE statement (cursor fence, inbox, captures, pg-boss jobs,
 * NOTIFY) and COMMIT; quarantine rows and a halt's audit row add one each, only when present.
 * Counted on the client (every query() of the pool and of the clients it hands out), so adding a
 * round trip to the batch fails here. Also pins what the single statement must still do: job rows
 * identical to pg-boss's own insert, one NOTIFY per queue, the fence and the capture conflict (its quarantine rows).
 */
import fc from 'fast-check';
import { Client } from 'pg';
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, Pool, withTransaction } from '../../../libs/db';
import { LeaseLostError } from '../../../libs/ingress/errors';
import { persistBatch } from '../../../libs/ingress/persist-batch';
import { planBatch } from '../../../libs/ingress/plan-batch';
import { pgArrayLiteral, type Fence } from '../../../libs/ingress/queries';
import { createWebhookHandler } from '../../../libs/ingress/webhook';
import { silentLogger } from '../../../libs/observability/logger';
import { enqueueJobs, WORK_CHANNEL } from '../../../libs/queue/enqueue';
import { createMigratedDatabase } from '../../support/db';
import { makeCallbackUpdate, makeMessageUpdate } from '../../support/ingress-fixtures';
import {
  acquireLease,
  cursorOf,
  inboxCount,
  jobCounts,
  newBotToken,
  persistOptions,
} from '../../support/ingress-harness';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_stmts');
  boss = createBoss(db.url, { max: 1 });
});
afterAll(async () => {
  await db.drop();
});

/** The first words of each statement sent, in order. */
type Log = string[];

function head(args: unknown[]): string {
  const a = args[0];
  const text = typeof a === 'string' ? a : (a as { text: string }).text;
  const t = text.replace(/\s+/g, ' ').trim().toLowerCase();
  if (t.startsWith('with cur as')) return 'batch';
  return t.split(' ').slice(0, 3).join(' ');
}

/** A pool whose every query — on the pool or on a client it hands out — is logged. */
function countingPool(pool: Pool, log: Log): Pool {
  const wrapClient = (client: object) =>
    new Proxy(client, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (prop === 'query') {
          return (...args: unknown[]) => {
            log.push(head(args));
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  return new Proxy(pool, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop === 'connect') return async () => wrapClient(await target.connect());
      if (prop === 'query') {
        return (...args: unknown[]) => {
          log.push(head(args));
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

const acquire = (botId: string, owner?: string, ttlMs?: number) => acquireLease(db.pool, botId, owner, ttlMs);
const opts = persistOptions;

/** 100 updates: 90 messages over 10 chats (captures + dispatch jobs) and 10 callback queries. */
function hundred(firstId: number, chatBase: number): string[] {
  return Array.from({ length: 100 }, (_, i) =>
    JSON.stringify(
      i % 10 === 9
        ? makeCallbackUpdate({ updateId: firstId + i, chatId: chatBase + (i % 10) })
        : makeMessageUpdate({ updateId: firstId + i, chatId: chatBase + (i % 10), text: `m ${i}` }),
    ),
  );
}

const BATCH: Log = ['begin', 'batch', 'commit'];

/** The webhook handler of `botId` under `fence`, its statements counted into `log`. */
function webhookHandler(botId: string, fence: Fence, log: Log) {
  return createWebhookHandler({
    pool: countingPool(db.pool, log),
    boss,
    botId,
    fence: () => fence,
    leaseTtlMs: 60_000,
    decodePolicy: 'stop',
    allowedChatIds: [],
    logger: silentLogger(),
  });
}

describe('round trips per batch', () => {
  it('a batch of 100 updates with captures and dispatch jobs is BEGIN, one statement, COMMIT', async () => {
    const { botId } = newBotToken();
    const chats = Number(botId);
    const fence = await acquire(botId);
    const log: Log = [];
    const r = await persistBatch(
      { pool: countingPool(db.pool, log), boss },
      planBatch(hundred(1, chats), { policy: 'stop', offset: 1, transport: 'polling' }),
      opts(botId, fence),
    );
    expect(log).toEqual(BATCH);
    // and it did the whole batch's work
    expect(r).toMatchObject({
      stored: 100,
      duplicates: 0,
      captures: 90,
      dispatchJobs: 100,
      captureJobs: 90,
      captureRepeats: 0,
      nextOffset: 101,
    });
    expect(await inboxCount(db.pool, botId)).toBe(100);
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 100, capture: 90 });
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(101);

    // a redelivery of the same batch: the same three, nothing new
    log.length = 0;
    const again = await persistBatch(
      { pool: countingPool(db.pool, log), boss },
      planBatch(hundred(1, chats), { policy: 'stop', offset: 1, transport: 'polling' }),
      opts(botId, fence),
    );
    expect(log).toEqual(BATCH);
    expect(again).toMatchObject({
      stored: 0,
      duplicates: 100,
      captures: 0,
      captureRepeats: 90,
      dispatchJobs: 0,
      captureJobs: 0,
    });
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 100, capture: 90 });
  });

  it('unauthorized updates and DISPATCH_UNAUTHORIZED do not add a statement', async () => {
    const { botId } = newBotToken();
    const chats = Number(botId);
    const fence = await acquire(botId);
    const log: Log = [];
    const allowedChatIds = new Set([String(chats)]);
    const r = await persistBatch(
      { pool: countingPool(db.pool, log), boss },
      planBatch(hundred(1, chats), { policy: 'stop', offset: 1, transport: 'polling' }),
      opts(botId, fence, { allowedChatIds, dispatchUnauthorized: true }),
    );
    expect(log).toEqual(BATCH);
    expect(r).toMatchObject({ stored: 100, unauthorized: 90, captures: 10, dispatchJobs: 100, captureJobs: 10 });
  });

  it('a fenced batch is one statement and a rollback, with nothing written; a capture key conflict adds one statement (its quarantine rows) and commits', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const old = await acquire(botId, 'owner-a', 1);
    await new Promise((r) => setTimeout(r, 20));
    const fence = await acquire(botId, 'owner-b');
    const log: Log = [];
    const pool = countingPool(db.pool, log);
    const plan = (items: unknown[], offset: number) =>
      planBatch(
        items.map((i) => JSON.stringify(i)),
        { policy: 'stop', offset, transport: 'polling' },
      );

    await expect(
      persistBatch({ pool, boss }, plan([makeMessageUpdate({ updateId: 1, chatId: C })], 1), opts(botId, old)),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(log).toEqual(['begin', 'batch', 'rollback']);
    expect(await inboxCount(db.pool, botId)).toBe(0);

    await persistBatch(
      { pool: db.pool, boss },
      plan([makeMessageUpdate({ updateId: 1, chatId: C, text: 'original' })], 1),
      opts(botId, fence),
    );
    log.length = 0;
    const r = await persistBatch(
      { pool, boss },
      plan(
        [makeMessageUpdate({ updateId: 1, chatId: C, text: 'edited' }), makeMessageUpdate({ updateId: 2, chatId: C })],
        1,
      ),
      opts(botId, fence),
    );
    expect(r).toMatchObject({ captureConflicts: [`telegram:${botId}:1:${C}:1`], conflictsQuarantined: 1 });
    expect(log).toEqual(['begin', 'batch', 'with q as', 'commit']);
    // update_id 1 with other bytes is another update: stored and dispatched, its capture refused
    expect(await inboxCount(db.pool, botId)).toBe(3);
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 3, capture: 2 });
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(3);
  });

  it('quarantine rows and a halt each add exactly one statement, only when present', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const fence = await acquire(botId);
    const log: Log = [];
    const pool = countingPool(db.pool, log);
    const good = JSON.stringify(makeMessageUpdate({ updateId: 1, chatId: C }));
    const bad = '{"update_id":2,"message":{"message_id":"x"}}';

    await persistBatch(
      { pool, boss },
      planBatch([good, bad], { policy: 'quarantine', offset: 1, transport: 'polling' }),
      opts(botId, fence),
    );
    expect(log).toEqual(['begin', 'batch', 'with q as', 'commit']);

    log.length = 0;
    const third = JSON.stringify(makeMessageUpdate({ updateId: 3, chatId: C }));
    const bad4 = '{"update_id":4,"message":{"message_id":"x"}}';
    await persistBatch(
      { pool, boss },
      planBatch([third, bad4], { policy: 'stop', offset: 3, transport: 'polling' }),
      opts(botId, fence),
    );
    expect(log).toEqual(['begin', 'batch', 'insert into relay.attempts', 'commit']);
    expect(await cursorOf(db.pool, botId)).toMatchObject({
      nextOffset: 4,
      haltedReason: expect.stringMatching(/update_id 4 could not be decoded/),
    });
  });

  it('a webhook delivery is BEGIN, one statement, COMMIT', async () => {
    const { botId } = newBotToken();
    const fence = await acquire(botId);
    const log: Log = [];
    const handle = webhookHandler(botId, fence, log);
    const answer = await handle(JSON.stringify(makeMessageUpdate({ updateId: 7, chatId: Number(botId) })));
    expect(answer.status).toBe(200);
    expect(log).toEqual(BATCH);
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 1, capture: 1 });
  });
});

describe('webhook group commit', () => {
  it('concurrent deliveries share batch transactions: 40 at once are two transactions, each answered 200 after its commit', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const fence = await acquire(botId);
    // the webhook cursor moves from a known position over stored ids (a fresh bot's stays 0)
    await db.pool.query('update relay.cursor set next_offset = 100 where bot_id = $1', [botId]);
    const log: Log = [];
    const handle = webhookHandler(botId, fence, log);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        handle(JSON.stringify(makeMessageUpdate({ updateId: 100 + i, chatId: C + (i % 4) }))),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(40).fill(200));
    // the first delivery alone, the 39 that arrived while it was in flight together
    expect(log).toEqual([...BATCH, ...BATCH]);
    expect(await inboxCount(db.pool, botId)).toBe(40);
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 40, capture: 40 });
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(140);
  });

  it('a capture key conflict in a group is kept in quarantine and answered 200 with the others; a repeated update_id is judged after the first commits', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const fence = await acquire(botId);
    const log: Log = [];
    const handle = webhookHandler(botId, fence, log);
    expect((await handle(JSON.stringify(makeMessageUpdate({ updateId: 1, chatId: C, text: 'original' })))).status).toBe(
      200,
    );
    const bodies = [
      JSON.stringify(makeMessageUpdate({ updateId: 2, chatId: C })),
      JSON.stringify(makeMessageUpdate({ updateId: 1, chatId: C, text: 'edited evidence' })),
      JSON.stringify(makeMessageUpdate({ updateId: 3, chatId: C })),
      JSON.stringify(makeMessageUpdate({ updateId: 4, chatId: C, text: 'first' })),
      JSON.stringify(makeMessageUpdate({ updateId: 4, chatId: C, text: 'second, different' })),
      JSON.stringify(makeMessageUpdate({ updateId: 5, chatId: C })),
    ];
    const answers = await Promise.all(bodies.map((b) => handle(b)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    // the two refused versions (update 1 again, and update 4's second delivery judged after its first committed) are kept whole
    const q = await db.pool.query(
      `select update_id::int as id, convert_from(raw, 'UTF8') as raw, transport from relay.quarantine where bot_id = $1 order by update_id`,
      [botId],
    );
    expect(q.rows).toEqual([
      { id: 1, raw: bodies[1], transport: 'webhook' },
      { id: 4, raw: bodies[4], transport: 'webhook' },
    ]);
    const { rows } = await db.pool.query(
      'select update_id::int as id, text from relay.captures where bot_id = $1 order by update_id',
      [botId],
    );
    expect(rows).toEqual([
      { id: 1, text: 'original' },
      { id: 2, text: 'hello 2' },
      { id: 3, text: 'hello 3' },
      { id: 4, text: 'first' },
      { id: 5, text: 'hello 5' },
    ]);
    // update 1 and update 4's second delivery carry other bytes: other updates, stored and dispatched, their captures refused
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 7, capture: 5 });
  });
});

describe('what the single statement writes', () => {
  it("job rows are the same as pg-boss's own insert writes (every column but ids, data and times)", async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const fence = await acquire(botId);
    await persistBatch(
      { pool: db.pool, boss },
      planBatch([JSON.stringify(makeMessageUpdate({ updateId: 1, chatId: C }))], {
        policy: 'stop',
        offset: 1,
        transport: 'polling',
      }),
      opts(botId, fence),
    );
    const q = `select to_jsonb(j) - 'id' - 'data' - 'created_on' - 'start_after' - 'keep_until' as row,
                      keep_until - created_on as keep_for, start_after - created_on < interval '1 second' as starts_now
                 from tg_relay_boss.job j where id = $1`;
    const { rows: ids } = await db.pool.query(
      `select (select job_id from relay.inbox where bot_id = $1) as dispatch, (select job_id from relay.captures where bot_id = $1) as capture`,
      [botId],
    );
    for (const [queue, id] of [
      ['update.dispatch', ids[0].dispatch],
      ['capture.deliver', ids[0].capture],
    ] as const) {
      const [viaBoss] = await withTransaction(db.pool, (c) => enqueueJobs(c, boss, queue, [{ data: { id: '0' } }]));
      const a = (await db.pool.query(q, [viaBoss])).rows[0];
      const b = (await db.pool.query(q, [id])).rows[0];
      expect(Object.keys(a.row).length).toBeGreaterThan(10);
      expect(b).toEqual(a);
    }
    const { rows } = await db.pool.query(
      `select j.name, j.data, i.id::text as inbox_id, c.id::text as capture_id
         from tg_relay_boss.job j left join relay.inbox i on i.job_id = j.id left join relay.captures c on c.job_id = j.id
        where i.bot_id = $1 or c.bot_id = $1 order by j.name`,
      [botId],
    );
    expect(rows).toEqual([
      { name: 'capture.deliver', data: { id: rows[0].capture_id }, inbox_id: null, capture_id: expect.any(String) },
      { name: 'update.dispatch', data: { id: rows[1].inbox_id }, inbox_id: expect.any(String), capture_id: null },
    ]);
  });

  it('wakes workers with one NOTIFY per queue that got work, delivered at commit; none for a redelivery', async () => {
    const { botId } = newBotToken();
    const fence = await acquire(botId);
    const listener = new Client({ connectionString: db.url });
    await listener.connect();
    const got: string[] = [];
    listener.on('notification', (n) => got.push(n.payload ?? ''));
    await listener.query(`listen ${WORK_CHANNEL}`);
    try {
      const plan = () => planBatch(hundred(1, Number(botId)), { policy: 'stop', offset: 1, transport: 'polling' });
      await persistBatch({ pool: db.pool, boss }, plan(), opts(botId, fence));
      await persistBatch({ pool: db.pool, boss }, plan(), opts(botId, fence));
      await listener.query('select 1'); // notifications sent before this answer have arrived
      expect(got.sort()).toEqual(['capture.deliver', 'update.dispatch']);
    } finally {
      await listener.end();
    }
  });
});

describe('the parameters, serialized before BEGIN', () => {
  // what PostgreSQL text can hold: no NUL, no unpaired surrogate (raw updates are JSON text: NUL is escaped there)
  const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
  const storableText = fc
    .string({ unit: 'binary', maxLength: 40 })
    .filter((t) => !t.includes('\u0000') && !LONE_SURROGATE.test(t));
  const text = fc.oneof(storableText, fc.constantFrom('', 'NULL', '"', '\\', '{a,b}', '\\"x\\"', ' ', '{"k":"v\\n"}'));

  it('an array literal reaches the server as the array it was built from (text with quotes, backslashes, braces, "NULL"; nulls; integers; booleans)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(text, { nil: null }), { maxLength: 12 }),
        fc.array(fc.option(fc.maxSafeInteger(), { nil: null }), { maxLength: 12 }),
        fc.array(fc.boolean(), { maxLength: 12 }),
        async (texts, ints, bools) => {
          const { rows } = await db.pool.query<{ t: (string | null)[]; i: (string | null)[]; b: boolean[] }>(
            'select $1::text[] as t, $2::bigint[]::text[] as i, $3::bool[] as b',
            [pgArrayLiteral(texts), pgArrayLiteral(ints), pgArrayLiteral(bools)],
          );
          expect(rows[0]).toEqual({ t: texts, i: ints.map((n) => (n === null ? null : String(n))), b: bools });
        },
      ),
      { numRuns: 200 },
    );
  });
});
