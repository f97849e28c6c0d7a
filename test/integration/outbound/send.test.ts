/**
 * outbound.send on the worker engine, in process, against the sandbox Bot API: every classification
 * row end to end (row state, audit, pg-boss job), alerts and their loop guard, migrate, per-chat FIFO.
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import { createWorker, EngineConfig, Worker } from '../../../libs/queue';
import {
  createOutboundClaimStore,
  createOutboundKind,
  createOutboundRateLimiter,
  enqueueOutbound,
  OUTBOUND_RATE_LIMITS_DEFAULT,
  OutboundMessageInput,
  outboundSettingsSave,
} from '../../../libs/outbound';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { BotApiClient, createBotApiClient } from '../../../libs/telegram';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { testLogger } from '../../support/worker-harness';

const SECRET = 'send-test-secret-abcdefghijklmnop';
const TOKEN = `9090:${SECRET}`;
const BOT = '9090';
const OPS = '-100424242';
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
  db = await createMigratedDatabase('ob_send');
  boss = createBoss(db.url, { max: 1 });
  // fast limits on both sides so tests do not wait a second per message of a chat
  sb = createBotApiSandbox({
    seed: 3,
    limits: {
      privateChat: { count: 20, windowMs: 1000, burst: 1 },
      groupChat: { count: 20, windowMs: 1000, burst: 1 },
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
    'truncate relay.outbound_uploads, relay.outbound, relay.attempts, relay.outbound_bot_rate, relay.outbound_chat_rate, relay.chat_status, relay.alert_windows',
  );
});
afterAll(async () => {
  telegram.close();
  await sb.stop();
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

function startWorker(
  opts: {
    mode?: 'proactive' | 'reactive';
    perChat?: number;
    sendTimeoutMs?: number;
    opsChatId?: string | null;
    staleAfterMs?: number;
  } = {},
): Worker {
  const limiter = createOutboundRateLimiter({
    mode: opts.mode ?? 'proactive',
    perBot: { count: 200, windowMs: 1000 },
    perChat: { count: opts.perChat ?? 20, windowMs: 1000 },
    perGroup: { count: 20, windowMs: 1000 },
  });
  const kind = createOutboundKind({
    pool: db.pool,
    telegram,
    limiter,
    opsChatId: opts.opsChatId === undefined ? OPS : opts.opsChatId,
    sendTimeoutMs: opts.sendTimeoutMs ?? 5_000,
  });
  const w = createWorker({
    pool: db.pool,
    boss,
    logger: testLogger(),
    databaseUrl: db.url,
    kinds: [kind],
    config: { ...ENGINE, staleAfterMs: opts.staleAfterMs ?? ENGINE.staleAfterMs },
    pollIntervalMs: 200,
  });
  return w;
}

async function enqueue(msg: Partial<OutboundMessageInput> & { msg_id: string }): Promise<string> {
  const r = await withTransaction(db.pool, (c) =>
    enqueueOutbound(c, boss, { chat_id: 1, text: `text of ${msg.msg_id}`, ...msg }, { botId: BOT }),
  );
  return r.id;
}
const row = async (msgId: string) =>
  (await db.pool.query('select * from relay.outbound where msg_id = $1', [msgId])).rows[0];
const audit = async (msgId: string) =>
  (
    await db.pool.query(
      `select attempt, outcome, http_status, error_code, error, details from relay.attempts where subject = 'outbound' and subject_key = $1 order by id`,
      [msgId],
    )
  ).rows;
const jobState = async (jobId: string) =>
  (await db.pool.query('select state from tg_relay_boss.job where id = $1', [jobId])).rows[0]?.state;
const settled = (msgId: string, state = 'delivered') =>
  waitFor(async () => ((await row(msgId))?.state === state ? row(msgId) : undefined), {
    what: `${msgId} ${state}`,
    timeoutMs: 10_000,
  });
const sentTo = (chat: number | string) =>
  sb.sent(TOKEN).filter((m) => m.chat_id === chat || m.resolved_chat_id === chat);

describe('outbound.send', () => {
  it("200: delivered with Telegram's message_id, audited, pg-boss job completed", async () => {
    await enqueue({
      msg_id: 'ok-1',
      chat_id: 11,
      text: '<i>hi</i>',
      parse_mode: 'HTML',
      disable_notification: true,
      reply_markup: { inline_keyboard: [[{ text: 'a', callback_data: 'b' }]] },
    });
    worker = startWorker();
    await worker.start();
    const r = await settled('ok-1');
    const [sent] = sentTo(11);
    expect(sent).toMatchObject({
      text: '<i>hi</i>',
      parse_mode: 'HTML',
      disable_notification: true,
      reply_markup: { inline_keyboard: [[{ text: 'a', callback_data: 'b' }]] },
    });
    expect(r).toMatchObject({
      attempts: 1,
      telegram_message_id: String(sent.message_id),
      last_status: 200,
      claim_id: null,
    });
    expect(await jobState(r.job_id)).toBe('completed');
    expect(await audit('ok-1')).toEqual([
      {
        attempt: 1,
        outcome: 'delivered',
        http_status: 200,
        error_code: null,
        error: null,
        details: { chatId: '11', messageId: sent.message_id },
      },
    ]);
  });

  it('429: retried exactly after retry_after, not counted against the budget (even a budget of 1)', async () => {
    sb.setLimits({ privateChat: { count: 1, windowMs: 1000, burst: 1 } }); // the sandbox is stricter than the relay's 20/s
    await enqueue({ msg_id: 'rl-0', chat_id: 12 });
    await enqueue({ msg_id: 'rl-1', chat_id: 12, max_attempts: 1 });
    worker = startWorker({ mode: 'reactive' });
    await worker.start();
    const r = await settled('rl-1');
    expect(r.attempts).toBe(1);
    const a = await audit('rl-1');
    expect(a.map((x) => [x.outcome, x.http_status, x.error_code])).toEqual([
      ['retry', 429, 'TELEGRAM_429'],
      ['delivered', 200, null],
    ]);
    expect(a[0].details).toMatchObject({ retryAfterMs: 1000, delayMs: 1000 });
    expect(sentTo(12).map((m) => m.text)).toEqual(['text of rl-0', 'text of rl-1']);
  });

  it('5xx is retried with backoff and counted against the budget', async () => {
    sb.setFaults({ sequence: ['server_error', 'server_error'], serverErrorStatus: 502, methods: ['sendMessage'] });
    await enqueue({ msg_id: '5xx-1', chat_id: 13 });
    worker = startWorker();
    await worker.start();
    const r = await settled('5xx-1');
    expect(r.attempts).toBe(3);
    expect((await audit('5xx-1')).map((x) => [x.outcome, x.http_status, x.error_code])).toEqual([
      ['retry', 502, 'HTTP_502'],
      ['retry', 502, 'HTTP_502'],
      ['delivered', 200, null],
    ]);
    expect(sentTo(13)).toHaveLength(1);
  });

  it('a retryable failure fails the message once the budget is spent, with an alert', async () => {
    sb.setFaults({ serverErrorRate: 1, serverErrorStatus: 503, methods: ['sendMessage'] });
    await enqueue({ msg_id: 'budget-1', chat_id: 14, max_attempts: 2 });
    worker = startWorker({ opsChatId: null }); // alerts only from relay.outbound_settings
    await worker.start();
    const r = await settled('budget-1', 'failed');
    expect(r.failed_reason).toMatch(/^attempt budget spent \(2 of 2\)/);
    expect(await row('alert:budget-1')).toMatchObject({ kind: 'alert', target_chat_id: OPS });
  });

  it("403 blocked: failed at once with Telegram's reason, the chat recorded as blocked, and no alert", async () => {
    sb.scriptChatError(TOKEN, 15, 'blocked');
    await enqueue({ msg_id: 'blocked-1', chat_id: 15, text: 'private user text' });
    worker = startWorker();
    await worker.start();
    const r = await settled('blocked-1', 'failed');
    expect(r).toMatchObject({ attempts: 1, failed_reason: 'Forbidden: bot was blocked by the user', last_status: 403 });
    expect(await jobState(r.job_id)).toBe('failed');
    expect((await audit('blocked-1')).map((x) => [x.outcome, x.http_status, x.error_code])).toEqual([
      ['failed', 403, 'TELEGRAM_403'],
    ]);
    // an alert would have been enqueued in the transaction that failed the message
    const status = await db.pool.query('select bot_id, chat_id, status, reason from relay.chat_status');
    expect(status.rows).toEqual([
      { bot_id: BOT, chat_id: '15', status: 'blocked', reason: 'Forbidden: bot was blocked by the user' },
    ]);
    expect((await db.pool.query(`select count(*)::int as n from relay.outbound where kind = 'alert'`)).rows[0].n).toBe(
      0,
    );
    expect(sentTo(Number(OPS))).toHaveLength(0);
  });

  it("400 chat not found: failed, recorded as chat_not_found, and alerted (most often a caller's wrong chat id)", async () => {
    sb.scriptChatError(TOKEN, 18, 'chat_not_found');
    await enqueue({ msg_id: 'nf-1', chat_id: 18, text: 'private user text' });
    worker = startWorker();
    await worker.start();
    await settled('nf-1', 'failed');
    const alert = await settled('alert:nf-1');
    expect(alert).toMatchObject({ kind: 'alert', target_chat_id: OPS });
    const opsSent = sentTo(Number(OPS));
    expect(opsSent).toHaveLength(1);
    expect(opsSent[0].text).toContain('msg_id: nf-1');
    expect(opsSent[0].text).toContain('Bad Request: chat not found');
    expect(opsSent[0].text).not.toContain('private user text');
    expect((await db.pool.query('select chat_id, status from relay.chat_status')).rows).toEqual([
      { chat_id: '18', status: 'chat_not_found' },
    ]);
  });

  it('loop guard: an alert that fails raises no alert; each failed message raises exactly one', async () => {
    sb.scriptChatError(TOKEN, 16, 'chat_not_found');
    sb.scriptChatError(TOKEN, Number(OPS), 'blocked'); // the operators' chat refuses too
    await enqueue({ msg_id: 'lg-1', chat_id: 16 });
    await enqueue({ msg_id: 'lg-2', chat_id: 16 });
    worker = startWorker();
    await worker.start();
    await settled('alert:lg-1', 'failed');
    await settled('alert:lg-2', 'failed');
    await new Promise((r) => setTimeout(r, 300)); // give a wrongly raised meta-alert time to appear
    const { rows } = await db.pool.query(`select msg_id, kind, state from relay.outbound order by id`);
    expect(rows).toEqual([
      { msg_id: 'lg-1', kind: 'message', state: 'failed' },
      { msg_id: 'lg-2', kind: 'message', state: 'failed' },
      { msg_id: 'alert:lg-1', kind: 'alert', state: 'failed' },
      { msg_id: 'alert:lg-2', kind: 'alert', state: 'failed' },
    ]);
  });

  it('ambiguous at_least_once: audited as ambiguous and retried (the chat may see it twice)', async () => {
    sb.setFaults({ sequence: ['drop_after'], methods: ['sendMessage'] });
    await enqueue({ msg_id: 'amb-1', chat_id: 17 });
    worker = startWorker();
    await worker.start();
    const r = await settled('amb-1');
    expect(r.attempts).toBe(2);
    expect((await audit('amb-1')).map((x) => x.outcome)).toEqual(['ambiguous', 'delivered']);
    expect(sentTo(17)).toHaveLength(2); // the recorded ambiguous retry
  });

  it('ambiguous at_most_once: failed with reason ambiguous, sent at most once, alert raised', async () => {
    sb.setFaults({ sequence: ['drop_after'], methods: ['sendMessage'] });
    await enqueue({ msg_id: 'amo-1', chat_id: 18, delivery: 'at_most_once' });
    worker = startWorker();
    await worker.start();
    const r = await settled('amo-1', 'failed');
    expect(r).toMatchObject({ failed_reason: 'ambiguous', attempts: 1 });
    expect((await audit('amo-1')).map((x) => [x.outcome, x.error_code])).toEqual([['ambiguous', 'ECONNRESET']]);
    expect(sentTo(18)).toHaveLength(1);
    await settled('alert:amo-1');
  });

  it('a timeout after the request was written is ambiguous too', async () => {
    sb.setFaults({ latencyMs: 300, methods: ['sendMessage'] });
    await enqueue({ msg_id: 'amo-2', chat_id: 19, delivery: 'at_most_once' });
    worker = startWorker({ sendTimeoutMs: 100 });
    await worker.start();
    expect(await settled('amo-2', 'failed')).toMatchObject({ failed_reason: 'ambiguous' });
    expect((await audit('amo-2')).map((x) => [x.outcome, x.error_code])).toEqual([['ambiguous', 'ETIMEDOUT']]);
  });

  it("migrate_to_chat_id: the chat's messages are retargeted (recorded) and delivered there in order", async () => {
    sb.scriptChatError(TOKEN, -20, { kind: 'migrated', migrateToChatId: -1000000000020 });
    await enqueue({ msg_id: 'mig-1', chat_id: -20 });
    await enqueue({ msg_id: 'mig-2', chat_id: -20 });
    worker = startWorker();
    await worker.start();
    const r1 = await settled('mig-1');
    const r2 = await settled('mig-2');
    expect(r1).toMatchObject({ chat_id: '-20', target_chat_id: '-1000000000020', attempts: 2 });
    expect(r2).toMatchObject({ chat_id: '-20', target_chat_id: '-1000000000020' });
    expect((await audit('mig-1'))[0]).toMatchObject({
      outcome: 'retry',
      http_status: 400,
      error_code: 'TELEGRAM_MIGRATE',
      details: { migratedFrom: '-20', migratedTo: '-1000000000020' },
    });
    expect(sentTo(-1000000000020).map((m) => m.text)).toEqual(['text of mig-1', 'text of mig-2']);
    expect(sentTo(-20)).toHaveLength(0);
  });

  it('per-chat FIFO: a later message never overtakes a head waiting for its retry; other chats flow on', async () => {
    sb.scriptChatError(TOKEN, 21, { kind: 'custom', error_code: 502, description: 'Bad Gateway', times: 3 });
    for (let i = 0; i < 5; i++) await enqueue({ msg_id: `fifo-a-${i}`, chat_id: 21 });
    await enqueue({ msg_id: 'fifo-b-0', chat_id: 22 });
    worker = startWorker();
    await worker.start();
    await settled('fifo-a-4');
    await settled('fifo-b-0');
    expect(sentTo(21).map((m) => m.text)).toEqual([0, 1, 2, 3, 4].map((i) => `text of fifo-a-${i}`));
    expect((await row('fifo-a-0')).attempts).toBe(4);
  });

  it("never puts two messages of a chat in flight: an operator's retry of an earlier failed one waits", async () => {
    const first = await enqueue({ msg_id: 'inflight-1', chat_id: 29 });
    const second = await enqueue({ msg_id: 'inflight-2', chat_id: 29 });
    // the later message is being sent while the earlier, failed one is retried by an operator
    await db.pool.query(
      `update relay.outbound set state = 'delivering', claim_id = gen_random_uuid(), worker_id = 'elsewhere', heartbeat_at = now() where id = $1`,
      [second],
    );
    await db.pool.query(`update relay.outbound set state = 'pending', attempts = 1 where id = $1`, [first]);
    const limiter = createOutboundRateLimiter({
      ...OUTBOUND_RATE_LIMITS_DEFAULT,
      perChat: { count: 20, windowMs: 1000 },
    });
    const store = createOutboundClaimStore({ botId: BOT, limiter, opsChatId: OPS, horizonMs: 10_000 });
    const claim = () => store.claim(db.pool, { limit: 10, workerId: 'w', now: null, queue: 'outbound.send' });
    expect(await claim()).toEqual([]);
    expect(await store.nextDueInMs(db.pool, null)).toBeNull();
    await db.pool.query(`update relay.outbound set state = 'delivered', claim_id = null where id = $1`, [second]);
    expect(await store.nextDueInMs(db.pool, null)).toBe(0);
    expect((await claim()).map((j) => j.key)).toEqual(['inflight-1']);
    await db.pool.query(`update relay.outbound set state = 'delivered', claim_id = null`);
    expect(await store.nextDueInMs(db.pool, null)).toBeNull(); // nothing pending is not "due now"
  });

  it('a terminal failure releases the chat for the next message', async () => {
    sb.scriptChatError(TOKEN, 23, {
      kind: 'custom',
      error_code: 400,
      description: "Bad Request: can't parse entities",
      times: 1,
    });
    await enqueue({ msg_id: 'rel-1', chat_id: 23 });
    await enqueue({ msg_id: 'rel-2', chat_id: 23 });
    worker = startWorker();
    await worker.start();
    await settled('rel-2');
    expect(await row('rel-1')).toMatchObject({ state: 'failed', failed_reason: "Bad Request: can't parse entities" });
    expect(sentTo(23).map((m) => m.text)).toEqual(['text of rel-2']);
  });

  it('a stale at_most_once claim (its worker died mid-attempt) fails as ambiguous instead of being sent again', async () => {
    const id = await enqueue({ msg_id: 'stale-amo', chat_id: 24, delivery: 'at_most_once' });
    const id2 = await enqueue({ msg_id: 'stale-alo', chat_id: 25 });
    await db.pool.query(
      `update relay.outbound set state = 'delivering', attempts = 1, claim_id = gen_random_uuid(), worker_id = 'dead', started_at = now() - interval '1 minute', heartbeat_at = now() - interval '1 minute' where id = any($1::bigint[])`,
      [[id, id2]],
    );
    worker = startWorker();
    await worker.start();
    await worker.kinds[0].recoverStaleNow();
    expect(await settled('stale-amo', 'failed')).toMatchObject({ failed_reason: 'ambiguous' });
    await settled('stale-alo');
    expect(sentTo(24)).toHaveLength(0);
    await settled('alert:stale-amo');
  });

  it('a shutdown during an at_most_once send leaves it to stale recovery, which fails it as ambiguous: never sent twice', async () => {
    sb.setFaults({ latencyMs: 800, methods: ['sendMessage'] });
    await enqueue({ msg_id: 'stop-amo', chat_id: 27, delivery: 'at_most_once' });
    await enqueue({ msg_id: 'stop-alo', chat_id: 28 });
    const w = startWorker();
    await w.start();
    await waitFor(
      async () => (await row('stop-amo')).state === 'delivering' && (await row('stop-alo')).state === 'delivering',
      { what: 'both sending' },
    );
    await new Promise((r) => setTimeout(r, 100)); // both requests are on the wire now
    await w.stop({ timeoutMs: 100 });
    expect(await row('stop-alo')).toMatchObject({ state: 'pending' }); // at_least_once: given back
    expect(await row('stop-amo')).toMatchObject({ state: 'delivering' }); // at_most_once: left for stale recovery
    await waitFor(() => sentTo(27).length === 1, { what: 'the in-flight send landed' });
    sb.setFaults(null);
    worker = startWorker({ staleAfterMs: 500 });
    await worker.start();
    await new Promise((r) => setTimeout(r, 500));
    await worker.kinds[0].recoverStaleNow();
    expect(await settled('stop-amo', 'failed')).toMatchObject({ failed_reason: 'ambiguous' });
    await settled('stop-alo');
    expect(sentTo(27)).toHaveLength(1);
  });

  it('never writes the bot token into rows or the audit', async () => {
    sb.setFaults({ sequence: ['drop_after', 'server_error'], methods: ['sendMessage'] });
    await enqueue({ msg_id: 'tok-1', chat_id: 26 });
    worker = startWorker();
    await worker.start();
    await settled('tok-1');
    const dump =
      JSON.stringify((await db.pool.query(`select * from relay.attempts`)).rows) +
      JSON.stringify((await db.pool.query(`select * from relay.outbound`)).rows);
    expect(dump).not.toContain(SECRET);
  });
});
