/**
 * Telegram reuses update ids: after a week without updates it picks the next update_id anew, and the
 * Bot API server answers a getUpdates whose offset lies past its queue from the head of the queue
 * (the sandbox does both: resetUpdateIds). The poller must store those updates, including the ones
 * whose id is already stored with other bytes, dispatch them, and confirm them by following the ids
 * Telegram served, lower ones included.
 */
import { persistBatch } from '../../../libs/ingress/persist-batch';
import { planBatch } from '../../../libs/ingress/plan-batch';
import { createBoss } from '../../../libs/db';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { makeMessageUpdate } from '../../support/ingress-fixtures';
import {
  acquireLease,
  cursorOf,
  inboxCount,
  jobCounts,
  newBotToken,
  persistOptions,
  startSandbox,
  startTestPoller,
  TestPoller,
} from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let sandbox: BotApiSandbox;
const running: TestPoller[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ingress_id_reuse');
  sandbox = await startSandbox();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});
afterAll(async () => {
  await sandbox.stop();
  await db.drop();
});

/** The texts stored under each update_id, in the order they were stored. */
async function textsById(botId: string): Promise<Record<string, string[]>> {
  const { rows } = await db.pool.query<{ update_id: string; text: string }>(
    `select update_id, payload #>> '{message,text}' as text from relay.inbox where bot_id = $1 order by id`,
    [botId],
  );
  const out: Record<string, string[]> = {};
  for (const r of rows) (out[r.update_id] ??= []).push(r.text);
  return out;
}

const inject = (token: string, chatId: number, texts: string[]) =>
  texts.map((text) => sandbox.injectMessage(token, { chatId, text }).update_id);

describe('update_id reuse', () => {
  it('stores, dispatches and confirms updates under reset ids (below the cursor, and ids already stored with other bytes)', async () => {
    const { token, botId } = newBotToken();
    const chat = Number(botId);
    const before = inject(
      token,
      chat,
      Array.from({ length: 20 }, (_, i) => `b${i}`),
    );
    const s = before[0];
    const p = startTestPoller({ pool: db.pool, url: db.url, apiRoot: sandbox.url, token, botId });
    running.push(p);
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 20 && sandbox.pendingCount(token) === 0, {
      what: 'the first twenty stored and confirmed',
      timeoutMs: 30_000,
    });
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(s + 20);

    // a week later: Telegram starts again at s+1; every new id lies below the cursor (which is past its
    // queue), and each is stored already
    sandbox.resetUpdateIds(token, s + 1);
    expect(inject(token, chat, ['a0', 'a1', 'a2'])).toEqual([s + 1, s + 2, s + 3]);
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 23 && sandbox.pendingCount(token) === 0, {
      what: 'the three updates under reused ids stored and confirmed',
      timeoutMs: 30_000,
    });
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(s + 4); // followed the served ids down

    // and on from there (s+4 to s+6 are stored with other bytes too)
    expect(inject(token, chat, ['a3', 'a4', 'a5'])).toEqual([s + 4, s + 5, s + 6]);
    await waitFor(async () => (await inboxCount(db.pool, botId)) === 26 && sandbox.pendingCount(token) === 0, {
      what: 'the next updates stored and confirmed',
      timeoutMs: 30_000,
    });
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(s + 7);
    const texts = await textsById(botId);
    expect([s, s + 1, s + 2, s + 3, s + 4, s + 5, s + 6, s + 7].map((id) => texts[id])).toEqual([
      ['b0'],
      ['b1', 'a0'],
      ['b2', 'a1'],
      ['b3', 'a2'],
      ['b4', 'a3'],
      ['b5', 'a4'],
      ['b6', 'a5'],
      ['b7'],
    ]);
    // every one dispatched and captured (message ids differ, so the capture keys do)
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 26, capture: 26 });
    expect(p.poller.status().state).toBe('polling');
  });

  it('a redelivery of an update under a reused id (the same bytes again) is absorbed, not stored twice', async () => {
    const { botId } = newBotToken();
    const chat = Number(botId);
    const boss = createBoss(db.url, { max: 1 });
    const raw = (text: string, n: number, updateId = 70) =>
      JSON.stringify(makeMessageUpdate({ updateId, chatId: chat, messageId: n, date: 1_700_000_000 + n, text }));
    const fence = await acquireLease(db.pool, botId);
    const write = (items: string[], offset: number) =>
      persistBatch(
        { pool: db.pool, boss },
        planBatch(items, { policy: 'stop', offset, transport: 'polling' }),
        persistOptions(botId, fence),
      );
    const first = await write([raw('old', 1)], 70);
    const reused = await write([raw('new', 2)], 71);
    const again = [await write([raw('new', 2)], 71), await write([raw('old', 1)], 71)];
    expect([first.stored, reused.stored, ...again.map((r) => r.stored)]).toEqual([1, 1, 0, 0]);
    expect(again.map((r) => r.duplicates)).toEqual([1, 1]);
    expect(await textsById(botId)).toEqual({ 70: ['old', 'new'] });
    expect(await jobCounts(db.pool, botId)).toEqual({ dispatch: 2, capture: 2 });
    // the batch of lower ids moves the cursor to what was served (it does not stay above it)
    const lower = await write([raw('newer', 3, 40)], 71);
    expect(lower.stored).toBe(1);
    expect((await cursorOf(db.pool, botId))?.nextOffset).toBe(41);
  });
});
