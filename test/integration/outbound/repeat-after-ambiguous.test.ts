/**
 * A relayed call whose first send Telegram took but whose answer was lost (the sandbox's
 * `drop_after`: processed, then the connection dropped; the same as a worker SIGKILLed mid-send) is
 * sent again (at_least_once). For an edit or a delete that repeat is refused with an error meaning
 * "already done" ("message is not modified", "message to delete not found"): the row must still
 * end delivered — the user saw the edit, the message is gone — not failed with an alert. Found by
 * the differential test under SIGKILL (test/integration/dispatch/differential.test.ts).
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import { createWorker, EngineConfig, Worker } from '../../../libs/queue';
import {
  createOutboundKind,
  createOutboundRateLimiter,
  enqueueOutbound,
  OutboundMessageInput,
  outboundSettingsSave,
} from '../../../libs/outbound';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { BotApiClient, createBotApiClient } from '../../../libs/telegram';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { testLogger } from '../../support/worker-harness';

const TOKEN = '9292:repeat-after-ambiguous-secret-abcdef';
const BOT = '9292';
const OPS = '-100929292';
const CHAT = 31;
const ENGINE: EngineConfig = {
  concurrency: 4,
  staleAfterMs: 30_000,
  retry: { baseMs: 20, capMs: 100, maxAttempts: 5 },
};

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let telegram: BotApiClient;
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('ob_repeat');
  boss = createBoss(db.url, { max: 1 });
  sb = createBotApiSandbox({ limits: { enabled: false } });
  telegram = createBotApiClient({ token: TOKEN, apiRoot: await sb.start() });
  await outboundSettingsSave(db.pool, { botId: BOT, defaultChatId: OPS });
  const limiter = createOutboundRateLimiter({
    mode: 'reactive',
    perBot: { count: 100, windowMs: 1000 },
    perChat: { count: 100, windowMs: 1000 },
    perGroup: { count: 100, windowMs: 1000 },
  });
  const kind = createOutboundKind({ pool: db.pool, telegram, limiter, opsChatId: OPS, sendTimeoutMs: 5_000 });
  worker = createWorker({
    pool: db.pool,
    boss,
    logger: testLogger(),
    databaseUrl: db.url,
    kinds: [kind],
    config: ENGINE,
    pollIntervalMs: 50,
  });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop({ timeoutMs: 5_000 });
  telegram.close();
  await sb.stop();
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

async function enqueue(msg: Partial<OutboundMessageInput> & { msg_id: string }): Promise<void> {
  await withTransaction(db.pool, (c) => enqueueOutbound(c, boss, { chat_id: CHAT, ...msg }, { botId: BOT }));
}
const row = async (msgId: string) =>
  (await db.pool.query('select state, last_error from relay.outbound where msg_id = $1', [msgId])).rows[0];
const finished = (msgId: string) =>
  waitFor(async () => ['delivered', 'failed'].includes((await row(msgId))?.state) && row(msgId), {
    what: `${msgId} finished`,
  });
const outcomes = async (msgId: string) =>
  (
    await db.pool.query(
      `select outcome from relay.attempts where subject = 'outbound' and subject_key = $1 order by id`,
      [msgId],
    )
  ).rows.map((r) => r.outcome as string);
const alerts = async () =>
  (await db.pool.query(`select count(*)::int as n from relay.outbound where kind = 'alert'`)).rows[0].n as number;

/** A bot message of CHAT, sent before the faults are set. */
async function botMessage(text: string): Promise<number> {
  const m = await telegram.callApi<{ message_id: number }>('sendMessage', { chat_id: CHAT, text });
  return m.message_id;
}

it('an edit Telegram took whose answer was lost is delivered on its repeat ("message is not modified")', async () => {
  const id = await botMessage('before');
  sb.setFaults({ methods: ['editMessageText'], sequence: ['drop_after'] });
  await enqueue({ msg_id: 'edit-1', method: 'editMessageText', params: { message_id: id, text: 'after' } });
  const r = await finished('edit-1');
  expect(sb.calls(TOKEN, { method: 'editMessageText' }).map((c) => c.status)).toEqual([0, 400]); // no answer, then the refusal
  expect(await outcomes('edit-1')).toEqual(['ambiguous', 'delivered']);
  expect(r.state).toBe('delivered');
  expect(await alerts()).toBe(0);
});

it('a delete Telegram took whose answer was lost is delivered on its repeat ("message to delete not found")', async () => {
  const id = await botMessage('to delete');
  sb.setFaults({ methods: ['deleteMessage'], sequence: ['drop_after'] });
  await enqueue({ msg_id: 'delete-1', method: 'deleteMessage', params: { message_id: id } });
  const r = await finished('delete-1');
  expect(sb.calls(TOKEN, { method: 'deleteMessage' }).map((c) => c.status)).toEqual([0, 400]); // no answer, then the refusal
  expect(await outcomes('delete-1')).toEqual(['ambiguous', 'delivered']);
  expect(r.state).toBe('delivered');
  expect(await alerts()).toBe(0);
});
