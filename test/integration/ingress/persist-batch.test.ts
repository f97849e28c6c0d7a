import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, Pool } from '../../../libs/db';
import { LeaseLostError } from '../../../libs/ingress/errors';
import { ingressHealth } from '../../../libs/ingress/health';
import { persistBatch } from '../../../libs/ingress/persist-batch';
import { buildCapture } from '../../../libs/captures/build';
import { planBatch } from '../../../libs/ingress/plan-batch';
import { cursorRecordProgress, cursorRelease } from '../../../libs/ingress/queries';
import { createMigratedDatabase } from '../../support/db';
import { makeCallbackUpdate, makeMessageUpdate } from '../../support/ingress-fixtures';
import {
  acquireLease,
  cursorOf,
  inboxUpdateIds,
  jobCounts,
  newBotToken,
  persistOptions,
} from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let pool: Pool;
let boss: BossLedger;

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_persist');
  pool = db.pool;
  boss = createBoss(db.url, { max: 1 });
});
afterAll(async () => {
  await db.drop();
});

const acquire = (botId: string, owner?: string, ttlMs?: number) => acquireLease(pool, botId, owner, ttlMs);
const opts = persistOptions;

const raw = (u: unknown) => JSON.stringify(u);
const plan = (items: unknown[], offset: number, policy: 'stop' | 'quarantine' = 'stop') =>
  planBatch(
    items.map((i) => (typeof i === 'string' ? i : raw(i))),
    { policy, offset, transport: 'polling' },
  );

describe('persistBatch', () => {
  it('writes inbox rows, captures, their pg-boss jobs and the cursor in one transaction', async () => {
    const { botId } = newBotToken();
    const C = Number(botId); // chats unique to this test
    const fence = await acquire(botId);
    const r = await persistBatch(
      { pool, boss },
      plan(
        [
          makeMessageUpdate({ updateId: 10, chatId: C }),
          makeCallbackUpdate({ updateId: 11, chatId: C }),
          makeMessageUpdate({ updateId: 12, chatId: C + 1, text: 'bye' }),
        ],
        10,
      ),
      opts(botId, fence),
    );
    expect(r).toMatchObject({ stored: 3, duplicates: 0, captures: 2, dispatchJobs: 3, captureJobs: 2, nextOffset: 13 });

    expect(await inboxUpdateIds(pool, botId)).toEqual([10, 11, 12]);
    const cursor = await cursorOf(pool, botId);
    expect(cursor).toMatchObject({ nextOffset: 13, progressGeneration: fence.generation });

    const { rows: inbox } = await pool.query(
      `select i.id, i.state, i.generation, j.data from relay.inbox i join tg_relay_boss.job j on j.id = i.job_id where i.bot_id = $1 order by update_id`,
      [botId],
    );
    expect(inbox.map((x) => x.state)).toEqual(['pending', 'pending', 'pending']);
    for (const x of inbox) expect(x.data).toEqual({ id: String(x.id) });
    expect(inbox.every((x) => Number(x.generation) === fence.generation)).toBe(true);

    const { rows: caps } = await pool.query(
      `select c.id, c.capture_key, c.text, c.payload, c.payload_sha256, j.data, j.name from relay.captures c join tg_relay_boss.job j on j.id = c.job_id where c.bot_id = $1 order by c.update_id`,
      [botId],
    );
    expect(caps.map((c) => c.capture_key)).toEqual([
      `telegram:${botId}:10:${C}:10`,
      `telegram:${botId}:12:${C + 1}:12`,
    ]);
    expect(caps[1].text).toBe('bye');
    expect(caps[1].payload).toMatchObject({
      key: `telegram:${botId}:12:${C + 1}:12`,
      update_id: 12,
      text: 'bye',
      chat: { id: C + 1 },
      message: { message_id: 12 },
    });
    for (const c of caps) expect(c).toMatchObject({ name: 'capture.deliver', data: { id: String(c.id) } });
  });

  it('re-persisting the same updates is a no-op: no new rows, no new jobs', async () => {
    const { botId } = newBotToken();
    const C = Number(botId); // chats unique to this test
    const fence = await acquire(botId);
    const items = [makeMessageUpdate({ updateId: 1, chatId: C }), makeMessageUpdate({ updateId: 2, chatId: C })];
    await persistBatch({ pool, boss }, plan(items, 1), opts(botId, fence));
    const again = await persistBatch({ pool, boss }, plan(items, 1), opts(botId, fence));
    expect(again).toMatchObject({
      stored: 0,
      duplicates: 2,
      captures: 0,
      captureRepeats: 2,
      dispatchJobs: 0,
      captureJobs: 0,
    });
    expect(await jobCounts(pool, botId)).toEqual({ dispatch: 2, capture: 2 });
    const { rows } = await pool.query('select count(*)::int n from relay.captures where bot_id = $1', [botId]);
    expect(rows[0].n).toBe(2);
  });

  it("a capture key stored with different data fails only its update: kept in relay.quarantine, the stored capture never overwritten, the rest of the batch committed; another bot's same ids are its own capture", async () => {
    const { botId } = newBotToken();
    const C = Number(botId); // chats unique to this test
    const fence = await acquire(botId);
    await persistBatch(
      { pool, boss },
      plan([makeMessageUpdate({ updateId: 1, chatId: C, text: 'original' })], 1),
      opts(botId, fence),
    );
    // another bot of the same database captured the same update, chat and message ids (a user
    // writing to both bots): the keys name the bot, so that is no conflict
    const other = newBotToken().botId;
    const otherFence = await acquire(other);
    await persistBatch(
      { pool, boss },
      plan([makeMessageUpdate({ updateId: 3, chatId: C, text: "the other bot's message" })], 3),
      opts(other, otherFence),
    );

    const tampered = makeMessageUpdate({ updateId: 1, chatId: C, text: 'edited evidence' }); // update_id 1 again, other content
    const items = [
      tampered,
      makeMessageUpdate({ updateId: 2, chatId: C }),
      makeMessageUpdate({ updateId: 3, chatId: C, text: 'mine' }),
    ];
    const r = await persistBatch({ pool, boss }, plan(items, 1), opts(botId, fence));
    // update_id 1 with other bytes is another update (as after Telegram reused the id): stored and
    // dispatched; only its capture is refused
    expect(r).toMatchObject({
      stored: 3,
      duplicates: 0,
      reused: 1,
      captures: 2,
      captureRepeats: 0,
      captureConflicts: [`telegram:${botId}:1:${C}:1`],
      conflictsQuarantined: 1,
      quarantined: 0,
      nextOffset: 4,
    });
    // ingress goes on: the cursor is past the batch, updates 2 and 3 are stored with their captures
    expect(await inboxUpdateIds(pool, botId)).toEqual([1, 1, 2, 3]);
    expect((await cursorOf(pool, botId))?.nextOffset).toBe(4);
    expect(await jobCounts(pool, botId)).toEqual({ dispatch: 4, capture: 3 });
    const caps = await pool.query(
      'select capture_key, bot_id, text from relay.captures where chat_id = $1 order by update_id, bot_id = $2',
      [C, botId],
    );
    expect(caps.rows).toEqual([
      { capture_key: `telegram:${botId}:1:${C}:1`, bot_id: botId, text: 'original' },
      { capture_key: `telegram:${botId}:2:${C}:2`, bot_id: botId, text: 'hello 2' },
      { capture_key: `telegram:${other}:3:${C}:3`, bot_id: other, text: "the other bot's message" },
      { capture_key: `telegram:${botId}:3:${C}:3`, bot_id: botId, text: 'mine' },
    ]);
    // nothing lost: the refused version is kept byte for byte, with why (ids, never the content)
    const q = await pool.query(
      `select update_id::int as id, convert_from(raw, 'UTF8') as raw, error, json_path, transport, state from relay.quarantine where bot_id = $1 order by update_id`,
      [botId],
    );
    expect(q.rows).toEqual([
      {
        id: 1,
        raw: raw(tampered),
        error: `RELAY_CAPTURE_KEY_CONFLICT: capture key telegram:${botId}:1:${C}:1 is already stored with different data and is not overwritten; the update is stored in relay.inbox and dispatched; its capture was not created`,
        json_path: '$.message',
        transport: 'polling',
        state: 'quarantined',
      },
    ]);
    const audit = await pool.query(
      `select count(*)::int as n from relay.attempts where subject = 'quarantine' and outcome = 'quarantined' and subject_key = '1' and details->>'generation' = $1`,
      [String(fence.generation)],
    );
    expect(audit.rows[0].n).toBe(1);

    // a redelivery of the same batch adds nothing (quarantine is idempotent by bot + update_id)
    const again = await persistBatch({ pool, boss }, plan(items, 1), opts(botId, fence));
    expect(again).toMatchObject({ stored: 0, duplicates: 3, captures: 0, captureRepeats: 2, conflictsQuarantined: 0 });
    expect(again.captureConflicts).toHaveLength(1);
  });

  it('a capture stored under the key from before keys named the bot: its redelivery is a repeat, other data under it a conflict', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const fence = await acquire(botId);
    const same = makeMessageUpdate({ updateId: 1, chatId: C, text: 'before the upgrade' });
    const legacy = buildCapture({ botId, updateId: 1, type: 'message', message: same.message });
    const other = buildCapture({
      botId,
      updateId: 2,
      type: 'message',
      message: makeMessageUpdate({ updateId: 2, chatId: C, text: 'stored then' }).message,
    });
    for (const c of [legacy, other])
      await pool.query(
        `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_raw, payload_sha256)
         values ($1, $2, $3, $4, $5, $6::jsonb, $6::json, $7)`,
        [
          c.legacyKey,
          botId,
          c.updateId,
          C,
          c.messageId,
          JSON.stringify({ ...c.payload, key: c.legacyKey }),
          c.legacySha256,
        ],
      );
    // the same update 1 again; update 2 now with other content (the same ids, as a reused update_id)
    const changed = makeMessageUpdate({ updateId: 2, chatId: C, text: 'not what was stored' });
    const r = await persistBatch({ pool, boss }, plan([same, changed], 1), opts(botId, fence));
    expect(r).toMatchObject({
      captures: 0,
      captureRepeats: 1,
      captureConflicts: [`telegram:2:${C}:2`],
      conflictsQuarantined: 1,
    });
    const caps = await pool.query('select capture_key from relay.captures where bot_id = $1 order by update_id', [
      botId,
    ]);
    expect(caps.rows.map((c) => c.capture_key)).toEqual([`telegram:1:${C}:1`, `telegram:2:${C}:2`]);
    // a legacy key held by another bot is not this bot's capture: this bot's is stored under its own key
    const third = newBotToken().botId;
    const thirdFence = await acquire(third);
    const t = await persistBatch({ pool, boss }, plan([same], 1), opts(third, thirdFence));
    expect(t).toMatchObject({ captures: 1, captureConflicts: [] });
  });

  it('a capture key committed by a concurrent transaction while the batch waited for it is a conflict too, never a silent no-op', async () => {
    const { botId } = newBotToken();
    const C = Number(botId);
    const fence = await acquire(botId);
    const key = `telegram:${botId}:1:${C}:1`;
    const other = await pool.connect();
    try {
      await other.query('begin');
      await other.query(
        `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_raw, payload_sha256)
         values ($1, 'another-bot', 1, $2, 1, '{}', '{}', 'concurrent')`,
        [key, C],
      );
      const batch = persistBatch(
        { pool, boss },
        plan([makeMessageUpdate({ updateId: 1, chatId: C })], 1),
        opts(botId, fence),
      );
      // the batch's ON CONFLICT waits for the other transaction's row
      await waitFor(
        async () =>
          (
            await pool.query(
              `select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'transactionid'`,
            )
          ).rows[0].n > 0,
        {
          what: 'the batch waiting on the capture key',
        },
      );
      await other.query('commit');
      const r = await batch;
      expect(r).toMatchObject({
        stored: 1,
        captures: 0,
        captureRepeats: 0,
        captureConflicts: [key],
        conflictsQuarantined: 1,
      });
    } finally {
      other.release();
    }
    const q = await pool.query(`select error from relay.quarantine where bot_id = $1`, [botId]);
    expect(q.rows).toEqual([
      { error: expect.stringMatching(new RegExp(`^RELAY_CAPTURE_KEY_CONFLICT: capture key ${key} `)) },
    ]);
  });

  it('unauthorized updates are stored and advance the cursor, with no capture and no dispatch job', async () => {
    const { botId } = newBotToken();
    const C = Number(botId); // chats unique to this test
    const fence = await acquire(botId);
    const items = [
      makeMessageUpdate({ updateId: 1, chatId: C }),
      makeMessageUpdate({ updateId: 2, chatId: C + 2 }),
      makeCallbackUpdate({ updateId: 3, chatId: C + 2 }),
    ];
    const r = await persistBatch(
      { pool, boss },
      plan(items, 1),
      opts(botId, fence, { allowedChatIds: new Set([String(C)]) }),
    );
    expect(r).toMatchObject({ stored: 3, unauthorized: 2, captures: 1, dispatchJobs: 1, nextOffset: 4 });
    const { rows } = await pool.query(
      'select update_id, authorized, state, job_id is not null as has_job, handled_at is not null as handled from relay.inbox where bot_id = $1 order by update_id',
      [botId],
    );
    expect(rows).toEqual([
      { update_id: '1', authorized: true, state: 'pending', has_job: true, handled: false },
      { update_id: '2', authorized: false, state: 'handled', has_job: false, handled: true },
      { update_id: '3', authorized: false, state: 'handled', has_job: false, handled: true },
    ]);
    expect((await cursorOf(pool, botId))?.nextOffset).toBe(4);
  });

  it('DISPATCH_UNAUTHORIZED dispatches unauthorized updates but still never captures them', async () => {
    const { botId } = newBotToken();
    const C = Number(botId); // chats unique to this test
    const fence = await acquire(botId);
    const r = await persistBatch(
      { pool, boss },
      plan([makeMessageUpdate({ updateId: 1, chatId: C + 2 })], 1),
      opts(botId, fence, { allowedChatIds: new Set([String(C)]), dispatchUnauthorized: true }),
    );
    expect(r).toMatchObject({ stored: 1, unauthorized: 1, captures: 0, dispatchJobs: 1 });
    expect(await jobCounts(pool, botId)).toEqual({ dispatch: 1, capture: 0 });
  });

  it('a stale generation is fenced: LeaseLostError and nothing written', async () => {
    const { botId } = newBotToken();
    const C = Number(botId); // chats unique to this test
    const old = await acquire(botId, 'owner-a', 1);
    await new Promise((r) => setTimeout(r, 20)); // lease expired
    const taken = await acquire(botId, 'owner-b');
    expect(taken.generation).toBe(old.generation + 1);
    const err = await persistBatch(
      { pool, boss },
      plan([makeMessageUpdate({ updateId: 1, chatId: C })], 1),
      opts(botId, old),
    ).catch((e) => e);
    expect(err).toBeInstanceOf(LeaseLostError);
    expect(err.code).toBe('RELAY_LEASE_LOST');
    expect(await inboxUpdateIds(pool, botId)).toEqual([]);
    expect(await cursorOf(pool, botId)).toMatchObject({
      nextOffset: 0,
      leaseOwner: 'owner-b',
      progressGeneration: null,
    });
    // The new owner's progress is untouched by the old one's attempts.
    expect(await cursorRecordProgress(pool, botId, old, 60_000)).toBe(false);
  });

  it('the batch holds the cursor row lock: a takeover waits for the commit, then the next old-generation batch is fenced', async () => {
    const { botId } = newBotToken();
    const C = Number(botId); // chats unique to this test
    const old = await acquire(botId, 'owner-a', 300);
    const client = await pool.connect();
    try {
      await client.query('begin');
      const { persistInTransaction } = await import('../../../libs/ingress/persist-batch.js');
      await persistInTransaction(
        client,
        boss,
        plan([makeMessageUpdate({ updateId: 1, chatId: C })], 1),
        opts(botId, old, { leaseTtlMs: 300 }),
      );
      await new Promise((r) => setTimeout(r, 400)); // the lease expires while the transaction is open
      let acquiredAt = 0;
      const takeover = acquire(botId, 'owner-b').then((f) => {
        acquiredAt = Date.now();
        return f;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(acquiredAt).toBe(0); // blocked on the row lock
      const committedAt = Date.now();
      await client.query('commit');
      const fresh = await takeover;
      expect(acquiredAt).toBeGreaterThanOrEqual(committedAt);
      expect(fresh.generation).toBe(old.generation + 1);
    } finally {
      client.release();
    }
    expect(await inboxUpdateIds(pool, botId)).toEqual([1]);
    await expect(
      persistBatch({ pool, boss }, plan([makeMessageUpdate({ updateId: 2, chatId: C })], 2), opts(botId, old)),
    ).rejects.toBeInstanceOf(LeaseLostError);
    expect(await inboxUpdateIds(pool, botId)).toEqual([1]);
  });

  it('quarantine rows are idempotent by (bot, update_id) and by sha256 without an id, and audited once', async () => {
    const { botId } = newBotToken();
    const C = Number(botId); // chats unique to this test
    const fence = await acquire(botId);
    const items = [
      makeMessageUpdate({ updateId: 1, chatId: C }),
      '{"update_id":2,"message":{"message_id":"x"}}',
      'not json',
      makeMessageUpdate({ updateId: 4, chatId: C }),
    ];
    const p = plan(items, 1, 'quarantine');
    expect((await persistBatch({ pool, boss }, p, opts(botId, fence))).quarantined).toBe(2);
    expect((await persistBatch({ pool, boss }, p, opts(botId, fence))).quarantined).toBe(0);
    const { rows } = await pool.query(
      `select update_id, convert_from(raw, 'UTF8') as raw, sha256, error, json_path, state from relay.quarantine where bot_id = $1 order by id`,
      [botId],
    );
    expect(rows).toEqual([
      {
        update_id: '2',
        raw: '{"update_id":2,"message":{"message_id":"x"}}',
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
        error: '$.message.message_id: expected an integer',
        json_path: '$.message.message_id',
        state: 'quarantined',
      },
      {
        update_id: null,
        raw: 'not json',
        sha256: expect.any(String),
        error: 'not valid JSON',
        json_path: '$',
        state: 'quarantined',
      },
    ]);
    const { rows: audit } = await pool.query(
      `select count(*)::int n from relay.attempts a join relay.quarantine q on a.subject = 'quarantine' and a.subject_id = q.id where q.bot_id = $1`,
      [botId],
    );
    expect(audit[0].n).toBe(2);
    expect(await inboxUpdateIds(pool, botId)).toEqual([1, 4]);
    expect((await cursorOf(pool, botId))?.nextOffset).toBe(5);
  });

  it('DECODE_POLICY=stop stores what precedes the bad update, records why, and does not pass it', async () => {
    const { botId } = newBotToken();
    const C = Number(botId); // chats unique to this test
    const fence = await acquire(botId);
    const p = plan(
      [
        makeMessageUpdate({ updateId: 1, chatId: C }),
        '{"update_id":2,"message":{"message_id":"x"}}',
        makeMessageUpdate({ updateId: 3, chatId: C }),
      ],
      1,
    );
    await persistBatch({ pool, boss }, p, opts(botId, fence));
    expect(await inboxUpdateIds(pool, botId)).toEqual([1]);
    const c = await cursorOf(pool, botId);
    expect(c?.nextOffset).toBe(2);
    expect(c?.haltedReason).toMatch(
      /update_id 2 could not be decoded \(\$\.message\.message_id: expected an integer\)/,
    );
    expect(c?.haltedReason).not.toContain('"x"');
    const { rows } = await pool.query(`select count(*)::int n from relay.quarantine where bot_id = $1`, [botId]);
    expect(rows[0].n).toBe(0);
  });
});

describe('ingressHealth', () => {
  it('is ready only after the current generation made progress, within 2 × POLL_TIMEOUT', async () => {
    const { botId } = newBotToken();
    expect(await ingressHealth(pool, botId, { pollTimeoutMs: 1000 })).toMatchObject({
      ready: false,
      reasons: [expect.stringMatching(/never started/)],
    });

    const g1 = await acquire(botId, 'owner-a', 200);
    let h = await ingressHealth(pool, botId, { pollTimeoutMs: 1000 });
    expect(h).toMatchObject({
      ready: false,
      generation: g1.generation,
      owner: 'owner-a',
      reasons: [`generation ${g1.generation} has not made progress yet`],
    });

    await cursorRecordProgress(pool, botId, g1, 200);
    h = await ingressHealth(pool, botId, { pollTimeoutMs: 1000 });
    expect(h).toMatchObject({ ready: true, reasons: [], generation: g1.generation });
    const later = new Date(h.progressAt!.getTime() + 2500);
    expect((await ingressHealth(pool, botId, { pollTimeoutMs: 1000, now: later })).reasons).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/lease .* expired/),
        expect.stringMatching(/no progress for 2500 ms \(limit 2 × POLL_TIMEOUT = 2000 ms\)/),
      ]),
    );

    // Takeover: generation 2 has recent progress of generation 1 on record, which proves nothing.
    await new Promise((r) => setTimeout(r, 250));
    const g2 = await acquire(botId, 'owner-b');
    h = await ingressHealth(pool, botId, { pollTimeoutMs: 1000 });
    expect(h).toMatchObject({
      ready: false,
      generation: g2.generation,
      owner: 'owner-b',
      reasons: [`generation ${g2.generation} has not made progress yet`],
    });
    // A late result of the old generation cannot count: its write is fenced.
    expect(await cursorRecordProgress(pool, botId, g1, 60_000)).toBe(false);
    expect((await ingressHealth(pool, botId, { pollTimeoutMs: 1000 })).ready).toBe(false);
    await cursorRecordProgress(pool, botId, g2, 60_000);
    expect(await ingressHealth(pool, botId, { pollTimeoutMs: 1000 })).toMatchObject({
      ready: true,
      generation: g2.generation,
    });

    await cursorRelease(pool, botId, g2);
    expect((await ingressHealth(pool, botId, { pollTimeoutMs: 1000 })).reasons).toContain(
      'no replica holds the ingress lease',
    );
  });

  it('reports a halt as not ready with its reason', async () => {
    const { botId } = newBotToken();
    const fence = await acquire(botId);
    await persistBatch({ pool, boss }, plan(['nope'], 5), opts(botId, fence));
    const h = await ingressHealth(pool, botId, { pollTimeoutMs: 1000 });
    expect(h.ready).toBe(false);
    expect(h.haltedReason).toMatch(/could not be decoded/);
    expect(h.reasons).toEqual([expect.stringMatching(/^halted: /)]);
  });
});
