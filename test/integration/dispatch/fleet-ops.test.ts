/**
 * A worker without TELEGRAM_BOT_TOKEN serves each registered bot's operators' chat and broadcasts
 * as a single-bot worker serves its one bot's: a bot's alerts go to its own ops_chat_id (else
 * OPS_CHAT_ID), sent by that bot, the coalesced summaries included; its broadcasts are fed at its
 * own rate and sent with its token. Real worker runtime in this process, the Bot API sandbox,
 * PostgreSQL.
 */
import { broadcast, broadcastStatus } from '../../../libs/broadcasts';
import { loadConfig } from '../../../libs/config';
import { createBoss, withTransaction } from '../../../libs/db';
import type { BossLedger } from '../../../libs/db/boss';
import { enqueueOutbound } from '../../../libs/outbound';
import { startWorkerRuntime, type WorkerRuntime } from '../../../libs/runtime/worker';
import type { BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { FLEET_KEY_HEX, registerBots, type FleetBot } from '../../support/fleet-bots';
import { memoryLogger, startSandbox } from '../../support/ingress-harness';
import { waitFor } from '../../support/wait-for';

jest.setTimeout(60_000);

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sandbox: BotApiSandbox;
let worker: WorkerRuntime | undefined;
const OPS_CHAT_ID = '-1009000';

beforeAll(async () => {
  db = await createMigratedDatabase('dispatch_fleet_ops');
  boss = createBoss(db.url, { max: 1 });
  sandbox = await startSandbox({ limits: { enabled: false } });
});
afterEach(async () => {
  await worker?.stop(2_000);
  worker = undefined;
  await db.pool.query('update relay.bots set enabled = false');
});
afterAll(async () => {
  await sandbox.stop();
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

const startWorker = async (env: Record<string, string>) => {
  worker = await startWorkerRuntime({
    config: loadConfig({
      DATABASE_URL: db.url,
      TELEGRAM_API_ROOT: sandbox.url,
      TOKEN_ENCRYPTION_KEY: FLEET_KEY_HEX,
      OPS_CHAT_ID,
      SHUTDOWN_TIMEOUT: '2s',
      RETRY_BASE: '50ms',
      RETRY_CAP: '500ms',
      ...env,
    }),
    databaseUrl: db.url,
    logger: memoryLogger('info').logger,
  });
};

const enqueue = (bot: FleetBot, msgId: string, chatId: number) =>
  withTransaction(db.pool, (c) =>
    enqueueOutbound(c, boss, { msg_id: msgId, chat_id: chatId, text: 'hi' }, { botId: bot.botId }),
  );

const sentTo = (bot: FleetBot, chatId: string) => sandbox.sent(bot.token).filter((m) => String(m.chat_id) === chatId);

it("a bot's failed messages are alerted in its own operators' chat, by it, the window's summary too; a bot without one's in OPS_CHAT_ID", async () => {
  const [a, b] = await registerBots(db.pool, 2);
  await db.pool.query(`update relay.bots set ops_chat_id = '-1002001' where id = $1`, [a.botId]);
  for (const chat of [801, 802, 803]) sandbox.scriptChatError(a.token, chat, 'chat_not_found');
  sandbox.scriptChatError(b.token, 801, 'chat_not_found');
  // a window long enough that a's three failures fall into one: the first alerted at once, the
  // other two held back for the summary, which only the flusher sends (no later failure comes)
  await startWorker({ ALERT_COALESCE: '3s' });
  for (const [i, chat] of [801, 802, 803].entries()) await enqueue(a, `ops-a-${i + 1}`, chat);
  await enqueue(b, 'ops-b-1', 801);

  await waitFor(() => sentTo(a, '-1002001').length === 2, {
    timeoutMs: 15_000,
    what: "a's alert, then its window's summary",
  });
  const [first, summary] = sentTo(a, '-1002001').map((m) => m.text);
  const alerted = ['ops-a-1', 'ops-a-2', 'ops-a-3'].filter((id) => first.includes(`msg_id: ${id}`));
  expect(alerted).toHaveLength(1);
  expect(summary).toContain('2 more outbound messages failed');
  for (const id of ['ops-a-1', 'ops-a-2', 'ops-a-3'].filter((x) => x !== alerted[0])) expect(summary).toContain(id);
  await waitFor(() => sentTo(b, OPS_CHAT_ID).length === 1, { timeoutMs: 15_000, what: "b's alert" });
  expect(sentTo(b, OPS_CHAT_ID)[0].text).toContain('msg_id: ops-b-1');
  // each bot's alerts are its own, in its own chat
  expect(sentTo(a, OPS_CHAT_ID)).toEqual([]);
  expect(sentTo(b, '-1002001')).toEqual([]);
  const { rows } = await db.pool.query<{ bot_id: string; chat_id: string; n: number }>(
    `select bot_id, chat_id, count(*)::int as n from relay.outbound where kind = 'alert' group by 1, 2 order by 1, 2`,
  );
  expect(new Set(rows.map((r) => `${r.bot_id} ${r.chat_id} ${r.n}`))).toEqual(
    new Set([`${a.botId} -1002001 2`, `${b.botId} ${OPS_CHAT_ID} 1`]),
  );
});

it("a fleet bot's broadcast is fed at the bot's own rate and sent with its token", async () => {
  const [c] = await registerBots(db.pool, 1);
  // its own rate, far above the configuration's 1/s: fed a minute of it ahead, i.e. all of it
  await db.pool.query(`update relay.bots set settings = '{"OUTBOUND_RATE_PER_BOT": "100/1s"}' where id = $1`, [
    c.botId,
  ]);
  const CHATS = 300;
  const chats = Array.from({ length: CHATS }, (_, i) => String(60_000 + i));
  // created at 1/s: its first chunk is a minute of that, 60 rows; the rest is staged for a feeder
  const r = await broadcast(db.pool, { chat_ids: chats, text: 'to all' }, { botId: c.botId, freeRate: 1 });
  const fed = async () =>
    (await db.pool.query<{ fed: number }>('select fed from relay.broadcasts where id = $1', [r.id])).rows[0].fed;
  expect(await fed()).toBe(60);
  // nothing is delivered while the Bot API fails: at the configuration's 1/s the feeder would keep
  // the 60 rows pending and feed nothing more; at the bot's 100/s it feeds everything
  sandbox.setFaults({ serverErrorRate: 1, methods: ['sendMessage'] }, c.token);
  await startWorker({ OUTBOUND_RATE_PER_BOT: '1/1s', RETRY_MAX_ATTEMPTS: '1000' });
  await waitFor(async () => (await fed()) === CHATS, { timeoutMs: 15_000, what: 'every recipient fed' });
  sandbox.setFaults(null, c.token);

  await waitFor(async () => (await broadcastStatus(db.pool, r.id))?.state === 'completed', {
    timeoutMs: 30_000,
    intervalMs: 250,
    what: 'the broadcast completes',
  });
  expect(await broadcastStatus(db.pool, r.id)).toMatchObject({ counts: { delivered: CHATS, failed: 0 } });
  const perChat = new Map<string, number>();
  for (const m of sandbox.sent(c.token)) perChat.set(String(m.chat_id), (perChat.get(String(m.chat_id)) ?? 0) + 1);
  expect([...perChat.keys()].sort()).toEqual([...chats].sort());
  expect([...perChat.values()].filter((n) => n > 1)).toEqual([]);
});
