/**
 * relay.chat_status end to end: a worker in process against the sandbox Bot API records the chats
 * Telegram refuses as unreachable (blocked, deactivated, kicked, chat not found) in the transaction
 * that fails the message, raises no alert for the users' own choices, forgets a chat once a message
 * to it is delivered again, and the admin API lists and counts them.
 */
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { withTransaction } from '../../../libs/db';
import { createWorker, Worker } from '../../../libs/queue';
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
import { buildTestApp, call, startBoss, testConfig } from '../admin/support';

const TOKEN = '7070:chat-status-secret-abcdefghijk';
const BOT = '7070';
const OPS = '-100717171';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let telegram: BotApiClient;
let worker: Worker;
let app: FastifyInstance;

beforeAll(async () => {
  db = await createMigratedDatabase('ob_chat_status');
  boss = await startBoss(db.url);
  sb = createBotApiSandbox({
    seed: 5,
    limits: {
      privateChat: { count: 50, windowMs: 1000, burst: 5 },
      groupChat: { count: 50, windowMs: 1000, burst: 5 },
    },
  });
  telegram = createBotApiClient({ token: TOKEN, apiRoot: await sb.start() });
  await outboundSettingsSave(db.pool, { botId: BOT, defaultChatId: OPS });
  const limiter = createOutboundRateLimiter({
    mode: 'proactive',
    perBot: { count: 500, windowMs: 1000 },
    perChat: { count: 50, windowMs: 1000 },
    perGroup: { count: 50, windowMs: 1000 },
  });
  worker = createWorker({
    pool: db.pool,
    boss,
    logger: testLogger(),
    databaseUrl: db.url,
    kinds: [createOutboundKind({ pool: db.pool, telegram, limiter, opsChatId: OPS, sendTimeoutMs: 5_000 })],
    config: { concurrency: 8, staleAfterMs: 30_000, retry: { baseMs: 20, capMs: 100, maxAttempts: 3 } },
    pollIntervalMs: 100,
  });
  await worker.start();
  app = await buildTestApp(db.pool, boss, { config: testConfig({ TELEGRAM_BOT_TOKEN: TOKEN }) });
});
afterAll(async () => {
  await app?.close();
  await worker?.stop({ timeoutMs: 5_000 });
  telegram?.close();
  await sb?.stop();
  await boss?.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db?.drop();
});

async function enqueue(msg: Partial<OutboundMessageInput> & { msg_id: string }): Promise<void> {
  await withTransaction(db.pool, (c) =>
    enqueueOutbound(c, boss, { chat_id: 1, text: `secret text of ${msg.msg_id}`, ...msg }, { botId: BOT }),
  );
}
const stateOf = async (msgId: string) =>
  (await db.pool.query<{ state: string }>('select state from relay.outbound where msg_id = $1', [msgId])).rows[0]
    ?.state;
const settled = (msgId: string, state: string) =>
  waitFor(async () => ((await stateOf(msgId)) === state ? true : undefined), {
    what: `${msgId} ${state}`,
    timeoutMs: 15_000,
  });
const statuses = async () =>
  (await db.pool.query('select chat_id, status, reason from relay.chat_status order by chat_id')).rows;
const alerts = async () =>
  (
    await db.pool.query<{ msg_id: string }>(`select msg_id from relay.outbound where kind = 'alert' order by id`)
  ).rows.map((r) => r.msg_id);

describe('relay.chat_status', () => {
  it('records blocked, deactivated, kicked and not-found chats when their message fails, alerting only the not-found one', async () => {
    sb.scriptChatError(TOKEN, 201, 'blocked');
    sb.scriptChatError(TOKEN, 202, { kind: 'custom', error_code: 403, description: 'Forbidden: user is deactivated' });
    sb.scriptChatError(TOKEN, -1002030303, {
      kind: 'custom',
      error_code: 403,
      description: 'Forbidden: bot was kicked from the supergroup chat',
    });
    sb.scriptChatError(TOKEN, 204, 'chat_not_found');
    sb.scriptChatError(TOKEN, 205, {
      kind: 'custom',
      error_code: 400,
      description: 'Bad Request: message is too long',
    });
    for (const [id, chat] of [
      ['cs-blocked', 201],
      ['cs-deact', 202],
      ['cs-kicked', -1002030303],
      ['cs-nf', 204],
      ['cs-long', 205],
      ['cs-ok', 206],
    ] as const)
      await enqueue({ msg_id: id, chat_id: chat });
    for (const id of ['cs-blocked', 'cs-deact', 'cs-kicked', 'cs-nf', 'cs-long']) await settled(id, 'failed');
    await settled('cs-ok', 'delivered');
    expect(await statuses()).toEqual([
      { chat_id: '-1002030303', status: 'kicked', reason: 'Forbidden: bot was kicked from the supergroup chat' },
      { chat_id: '201', status: 'blocked', reason: 'Forbidden: bot was blocked by the user' },
      { chat_id: '202', status: 'deactivated', reason: 'Forbidden: user is deactivated' },
      { chat_id: '204', status: 'chat_not_found', reason: 'Bad Request: chat not found' },
    ]);
    // the failures the user chose raise no alert; a wrong chat id and a bad message do
    expect((await alerts()).sort()).toEqual(['alert:cs-long', 'alert:cs-nf']);

    const stats = await call(app, 'GET', '/v1/stats');
    expect(stats.statusCode).toBe(200);
    expect(stats.json().chat_status).toEqual({ blocked: 1, deactivated: 1, kicked: 1, chat_not_found: 1 });
  });

  it('keeps the first refusal time while the chat stays blocked, and forgets the chat once a message to it is delivered', async () => {
    await db.pool.query('truncate relay.chat_status');
    sb.scriptChatError(TOKEN, 301, { kind: 'blocked', times: 2 });
    await enqueue({ msg_id: 'ub-1', chat_id: 301 });
    await settled('ub-1', 'failed');
    const [first] = (await db.pool.query('select since, updated_at from relay.chat_status where chat_id = $1', ['301']))
      .rows;
    expect(first).toBeDefined();
    await enqueue({ msg_id: 'ub-2', chat_id: 301 });
    await settled('ub-2', 'failed');
    const [second] = (
      await db.pool.query('select since, updated_at from relay.chat_status where chat_id = $1', ['301'])
    ).rows;
    expect(second.since).toEqual(first.since);
    expect(second.updated_at.getTime()).toBeGreaterThanOrEqual(first.updated_at.getTime());
    // the user unblocked the bot: the sandbox's two scripted refusals are spent
    await enqueue({ msg_id: 'ub-3', chat_id: 301 });
    await settled('ub-3', 'delivered');
    expect(await statuses()).toEqual([]);
    expect(sb.sent(TOKEN).filter((m) => m.chat_id === 301)).toHaveLength(1);
  });
});

describe('GET /v1/chats/status', () => {
  beforeAll(async () => {
    await db.pool.query('truncate relay.chat_status');
    // 7 chats of two statuses, one second apart, and one of another bot
    await db.pool.query(
      `insert into relay.chat_status (bot_id, chat_id, status, reason, since, updated_at)
       select $1, (1000 + n)::text, case when n % 3 = 0 then 'deactivated' else 'blocked' end, 'Forbidden: …',
              '2026-01-01T00:00:00Z'::timestamptz + n * interval '1 second' + interval '123 microseconds', now()
         from generate_series(1, 7) n
       union all select '8080', '42', 'kicked', 'Forbidden: bot was kicked from the group chat', now(), now()`,
      [BOT],
    );
  });

  it('lists unreachable chats newest first, filtered by status and bot, page by page without gaps or repeats', async () => {
    const all = await call(app, 'GET', `/v1/chats/status?bot_id=${BOT}`);
    expect(all.statusCode).toBe(200);
    expect(all.json().items.map((i: { chat_id: string }) => i.chat_id)).toEqual([
      '1007',
      '1006',
      '1005',
      '1004',
      '1003',
      '1002',
      '1001',
    ]);
    expect(all.json().next_cursor).toBeNull();

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r = await call(
        app,
        'GET',
        `/v1/chats/status?status=blocked&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(r.statusCode).toBe(200);
      const body = r.json<{ items: { chat_id: string; status: string }[]; next_cursor: string | null }>();
      for (const i of body.items) expect(i.status).toBe('blocked');
      seen.push(...body.items.map((i) => i.chat_id));
      cursor = body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['1007', '1005', '1004', '1002', '1001']);

    const kicked = await call(app, 'GET', '/v1/chats/status?status=kicked');
    expect(kicked.json().items).toMatchObject([{ bot_id: '8080', chat_id: '42', status: 'kicked' }]);
  });

  it('answers a bad status, limit or cursor with a 400 and a code, never a 500', async () => {
    for (const q of [
      'status=gone',
      'limit=0',
      'limit=501',
      'cursor=nonsense',
      `cursor=${Buffer.from('[1,2]').toString('base64url')}`,
    ]) {
      const r = await call(app, 'GET', `/v1/chats/status?${q}`);
      expect([q, r.statusCode, typeof r.json().code]).toEqual([q, 400, 'string']);
    }
  });
});
