/**
 * outbound.send for relayed methods other than sendMessage, in process, against the sandbox Bot API
 * (a real HTTP server that records each call's method, params and multipart files): uploads sent as
 * multipart and resent on retry, albums counted as their messages, placeholders resolved (or
 * refused) before sending, answers outside the chat FIFO and the limits, expired queries.
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
import { runPrune } from '../../../libs/retention/prune';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { BotApiClient, createBotApiClient } from '../../../libs/telegram';
import { newPlaceholder } from '../../../libs/telegram/placeholders';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { testLogger } from '../../support/worker-harness';

const SECRET = 'methods-test-secret-abcdefghijklmn';
const TOKEN = `9191:${SECRET}`;
const BOT = '9191';
const OPS = '-100434343';
const ENGINE: EngineConfig = {
  concurrency: 8,
  staleAfterMs: 30_000,
  retry: { baseMs: 20, capMs: 100, maxAttempts: 5 },
};

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let telegram: BotApiClient;
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('ob_send_methods');
  boss = createBoss(db.url, { max: 1 });
  sb = createBotApiSandbox({
    seed: 5,
    limits: {
      privateChat: { count: 50, windowMs: 1000, burst: 1 },
      groupChat: { count: 50, windowMs: 1000, burst: 1 },
    },
  });
  telegram = createBotApiClient({ token: TOKEN, apiRoot: await sb.start() });
  await outboundSettingsSave(db.pool, { botId: BOT, defaultChatId: OPS });
});
afterEach(async () => {
  await worker?.stop({ timeoutMs: 5_000 });
  worker = undefined;
  sb.reset();
  await db.pool.query(
    'truncate relay.outbound_uploads, relay.outbound, relay.attempts, relay.outbound_bot_rate, relay.outbound_chat_rate, relay.alert_windows, relay.chat_status',
  );
});
afterAll(async () => {
  telegram.close();
  await sb.stop();
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

async function startWorker(opts: { perBot?: number; perChat?: number } = {}): Promise<Worker> {
  const limiter = createOutboundRateLimiter({
    mode: 'proactive',
    perBot: { count: opts.perBot ?? 200, windowMs: 1000 },
    perChat: { count: opts.perChat ?? 50, windowMs: 1000 },
    perGroup: { count: 50, windowMs: 1000 },
  });
  const kind = createOutboundKind({ pool: db.pool, telegram, limiter, opsChatId: OPS, sendTimeoutMs: 5_000 });
  const w = createWorker({
    pool: db.pool,
    boss,
    logger: testLogger(),
    databaseUrl: db.url,
    kinds: [kind],
    config: ENGINE,
    pollIntervalMs: 100,
  });
  worker = w;
  await w.start();
  return w;
}

async function enqueue(msg: Partial<OutboundMessageInput> & { msg_id: string }): Promise<string> {
  const r = await withTransaction(db.pool, (c) => enqueueOutbound(c, boss, { chat_id: 1, ...msg }, { botId: BOT }));
  return r.id;
}
const row = async (msgId: string) =>
  (await db.pool.query('select * from relay.outbound where msg_id = $1', [msgId])).rows[0];
const audit = async (msgId: string) =>
  (
    await db.pool.query(
      `select outcome, http_status, error_code, error, details from relay.attempts
        where subject = 'outbound' and subject_key = $1 order by id`,
      [msgId],
    )
  ).rows;
const settled = (msgId: string, state = 'delivered') =>
  waitFor(async () => ((await row(msgId))?.state === state ? row(msgId) : undefined), {
    what: `${msgId} ${state}`,
    timeoutMs: 15_000,
  });
const calls = (method: string) => sb.calls(TOKEN, { method });
const alerts = async () =>
  (await db.pool.query(`select msg_id from relay.outbound where kind = 'alert'`)).rows.map((r) => r.msg_id);

it('sendPhoto with an upload posts the exact bytes as multipart, and a retry posts them again', async () => {
  const bytes = Buffer.from([0xff, 0xd8, 0xff, 0x00, 0x0d, 0x0a, 0x2d, 0x2d, 0x7f, 0x80]);
  sb.setFaults({ methods: ['sendPhoto'], sequence: ['server_error'] });
  await enqueue({
    msg_id: 'photo-1',
    chat_id: 21,
    method: 'sendPhoto',
    params: {
      photo: 'attach://photo',
      caption: 'a cat',
      reply_markup: { inline_keyboard: [[{ text: 'x', callback_data: 'y' }]] },
    },
    uploads: [{ part: 'photo', filename: 'cat.jpg', bytes }],
  });
  await startWorker();
  const r = await settled('photo-1');
  const sent = calls('sendPhoto');
  expect(sent).toHaveLength(2); // a 502, then the retry
  for (const c of sent) {
    expect(c.files).toMatchObject([
      { part: 'photo', filename: 'cat.jpg', size: bytes.length, data_base64: bytes.toString('base64') },
    ]);
    expect(c.params).toMatchObject({
      chat_id: '21',
      photo: 'attach://photo',
      caption: 'a cat',
      reply_markup: { inline_keyboard: [[{ text: 'x', callback_data: 'y' }]] },
    });
  }
  expect(r.telegram_message_id).toEqual(expect.any(String));
  expect(r.telegram_message_ids).toEqual([r.telegram_message_id]);
  expect((await audit('photo-1')).map((a) => [a.outcome, a.details.method])).toEqual([
    ['retry', 'sendPhoto'],
    ['delivered', 'sendPhoto'],
  ]);
});

it('sendMediaGroup stores one id per message and reserves that many slots of the bot', async () => {
  // 2/s per bot: an album of 5 reserves 2.5 s of the bot's budget at once
  await enqueue({
    msg_id: 'album-1',
    chat_id: 22,
    method: 'sendMediaGroup',
    params: { media: [1, 2, 3, 4, 5].map((i) => ({ type: 'photo', media: `https://example.com/${i}.jpg` })) },
  });
  await startWorker({ perBot: 2 });
  const r = await settled('album-1');
  expect(r.message_count).toBe(5);
  expect(r.telegram_message_ids).toHaveLength(5);
  expect(new Set(r.telegram_message_ids).size).toBe(5);
  expect(r.telegram_message_id).toBe(r.telegram_message_ids[0]);
  const ahead = await db.pool.query(
    `select extract(epoch from (tat - clock_timestamp())) * 1000 as ms from relay.outbound_bot_rate where bot_id = $1`,
    [BOT],
  );
  // one slot would be 500 ms ahead at most; five are 2500 ms from the send
  expect(Number(ahead.rows[0].ms)).toBeGreaterThan(1000);
});

it("an edit that names an earlier row's placeholder is sent with the real message id", async () => {
  const ph = newPlaceholder();
  await enqueue({ msg_id: 'first', chat_id: 23, text: 'working…', placeholders: [ph] });
  await enqueue({
    msg_id: 'edit',
    chat_id: 23,
    method: 'editMessageText',
    params: { message_id: ph, text: 'done' },
  });
  await startWorker();
  const first = await settled('first');
  await settled('edit');
  const [edit] = calls('editMessageText');
  expect(edit.params).toMatchObject({ chat_id: 23, message_id: Number(first.telegram_message_id), text: 'done' });
});

describe('dependencies', () => {
  it('failed: the dependent row fails at once, naming it, with no Bot API call', async () => {
    const ph = newPlaceholder();
    sb.scriptChatError(TOKEN, 24, 'blocked');
    await enqueue({ msg_id: 'dep-head', chat_id: 24, text: 'hello', placeholders: [ph] });
    await enqueue({ msg_id: 'dep-del', chat_id: 24, method: 'deleteMessage', params: { message_id: ph } });
    await startWorker();
    await settled('dep-head', 'failed');
    const r = await settled('dep-del', 'failed');
    expect(r.failed_reason).toMatch(/depends on message dep-head, which failed/);
    expect(calls('deleteMessage')).toHaveLength(0);
    expect((await audit('dep-del'))[0]).toMatchObject({ outcome: 'failed', error_code: 'RELAY_DEPENDENCY_FAILED' });
  });

  it('pending: retried without spending the budget until the earlier message is delivered', async () => {
    const ph = newPlaceholder();
    // the earlier message is in another chat (so not ahead in this FIFO) and waits for an operator
    await db.pool.query(
      `insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, payload_sha256, placeholders, next_attempt_at)
       values ('dep-other', $1, '25', '25', 'later', 'x', $2, now() + interval '1 hour')`,
      [BOT, [ph]],
    );
    await enqueue({
      msg_id: 'dep-wait',
      chat_id: 26,
      method: 'deleteMessage',
      params: { message_id: ph },
      max_attempts: 1,
    });
    await startWorker();
    await waitFor(async () => ((await audit('dep-wait')).length >= 2 ? true : undefined), { what: 'two deferrals' });
    const r = await row('dep-wait');
    expect(r).toMatchObject({ state: 'pending', attempts: 0 });
    expect((await audit('dep-wait'))[0]).toMatchObject({ outcome: 'retry', error_code: 'RELAY_DEPENDENCY_PENDING' });
    expect(calls('deleteMessage')).toHaveLength(0);
    // delivered: the next try is sent with the real id (the sandbox knows no such message: a 400 then)
    await db.pool.query(
      `update relay.outbound set state = 'delivered', telegram_message_id = 777, telegram_message_ids = '{777}' where msg_id = 'dep-other'`,
    );
    await settled('dep-wait', 'failed');
    expect(calls('deleteMessage').map((c) => c.params.message_id)).toEqual([777]);
  });

  it('unknown: a placeholder no row handed out fails the row', async () => {
    await enqueue({
      msg_id: 'dep-unknown',
      chat_id: 27,
      method: 'pinChatMessage',
      params: { message_id: newPlaceholder() },
    });
    await startWorker();
    await settled('dep-unknown', 'failed');
    expect((await audit('dep-unknown'))[0]).toMatchObject({ error_code: 'RELAY_UNKNOWN_PLACEHOLDER' });
  });
});

it("answers overtake a chat's backlog and are neither limited nor charged", async () => {
  for (let i = 1; i <= 4; i++) await enqueue({ msg_id: `backlog-${i}`, chat_id: 28, text: `m${i}` });
  const q = sb.injectCallbackQuery(TOKEN, { chatId: 28, data: 'x' });
  await enqueue({
    msg_id: 'answer-1',
    chat_id: 28,
    method: 'answerCallbackQuery',
    params: { callback_query_id: q.callback_query?.id, text: 'ok' },
  });
  await startWorker({ perChat: 2 }); // the backlog takes ≥ 1.5 s
  const a = await settled('answer-1');
  const last = await settled('backlog-4');
  expect(a.target_chat_id).toBeNull();
  expect(new Date(a.delivered_at).getTime()).toBeLessThan(new Date(last.delivered_at).getTime());
  expect(sb.answeredCallbacks(TOKEN)).toEqual([{ callback_query_id: q.callback_query?.id, text: 'ok' }]);
  // the bot's budget holds the four messages' slots only
  const charged = await db.pool.query('select chat_id from relay.outbound_chat_rate where bot_id = $1', [BOT]);
  expect(charged.rows.map((r) => r.chat_id)).toEqual(['28']);
});

it("an answer is sent while the bot's budget is held back (a 429 for the bot), a message is not", async () => {
  await db.pool.query(
    `insert into relay.outbound_bot_rate (bot_id, tat) values ($1, clock_timestamp() + interval '1 hour')`,
    [BOT],
  );
  const q = sb.injectCallbackQuery(TOKEN, { chatId: 32, data: 'x' });
  await enqueue({ msg_id: 'held-msg', chat_id: 32, text: 'waits' });
  await enqueue({
    msg_id: 'held-answer',
    method: 'answerCallbackQuery',
    params: { callback_query_id: q.callback_query?.id },
  });
  await startWorker();
  await settled('held-answer');
  expect(await row('held-msg')).toMatchObject({ state: 'pending', attempts: 0 });
  expect(calls('sendMessage')).toHaveLength(0);
});

it('an answer to an expired query is terminal (RELAY_QUERY_EXPIRED), recorded and never alerted', async () => {
  await enqueue({ msg_id: 'answer-old', method: 'answerCallbackQuery', params: { callback_query_id: 'gone' } });
  await startWorker();
  const r = await settled('answer-old', 'failed');
  expect(r.failed_reason).toMatch(/query is too old/);
  expect((await audit('answer-old'))[0]).toMatchObject({
    outcome: 'failed',
    error_code: 'RELAY_QUERY_EXPIRED',
    http_status: 400,
  });
  expect(await alerts()).toEqual([]);
  // a failed message of a chat still raises its alert
  sb.scriptChatError(TOKEN, 29, 'chat_not_found');
  await enqueue({ msg_id: 'photo-nf', chat_id: 29, method: 'sendPhoto', params: { photo: 'https://x/y.jpg' } });
  await settled('photo-nf', 'failed');
  await waitFor(async () => ((await alerts()).length === 1 ? true : undefined), { what: 'one alert' });
});

it('uploads are deleted with their row by retention', async () => {
  await enqueue({
    msg_id: 'doc-1',
    chat_id: 30,
    method: 'sendDocument',
    params: { document: 'attach://doc' },
    uploads: [{ part: 'doc', filename: 'a.txt', bytes: Buffer.from('hello') }],
  });
  await startWorker();
  await settled('doc-1');
  await worker?.stop({ timeoutMs: 5_000 });
  worker = undefined;
  await db.pool.query(`update relay.outbound set delivered_at = now() - interval '2 days' where msg_id = 'doc-1'`);
  await runPrune(db.pool, { retentionMs: 86_400_000, retentionFailedMs: null, pauseMs: 0 });
  expect(await row('doc-1')).toBeUndefined();
  expect((await db.pool.query('select count(*)::int as n from relay.outbound_uploads')).rows[0].n).toBe(0);
});

it('a sendMessage of the old SQL call is sent exactly as before (no method in the audit, text from the columns)', async () => {
  // the SQL function's call as it was before 0025
  await db.pool.query(`select relay.enqueue_outbound('legacy', '31', 'old row', bot_id => $1)`, [BOT]);
  await startWorker();
  await settled('legacy');
  const [c] = calls('sendMessage');
  expect(c.params).toEqual({ chat_id: 31, text: 'old row' });
  expect((await audit('legacy'))[0].details).toEqual({ chatId: '31', messageId: expect.any(Number) });
});
