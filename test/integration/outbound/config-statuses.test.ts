/**
 * a Bot API 401 to sendMessage means the worker's token is wrong, not the message. The
 * backlog is kept (retried with backoff past its attempt budget), the condition is recorded for
 * /health/ready, no alert is sent through the Bot API that refuses the token (no loop), and a worker
 * with the right token delivers everything and clears the condition. A 403 (blocked by the user)
 * still fails its own message at once.
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import { readinessChecker } from '../../../libs/admin/health';
import { createWorker, Worker } from '../../../libs/queue';
import {
  createOutboundKind,
  createOutboundRateLimiter,
  enqueueOutbound,
  OUTBOUND_RATE_LIMITS_DEFAULT,
  outboundSettingsSave,
} from '../../../libs/outbound';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createBotApiClient } from '../../../libs/telegram';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { testLogger } from '../../support/worker-harness';

const BOT = '9292';
const TOKEN = `${BOT}:config-statuses-right-secret-abcdef`;
const WRONG = `${BOT}:config-statuses-wrong-secret-abcdef`;
const OPS = '-100929292';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let apiRoot: string;
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('ob_cfg');
  boss = createBoss(db.url, { max: 1 });
  sb = createBotApiSandbox({ limits: { enabled: false } });
  apiRoot = await sb.start();
  const right = createBotApiClient({ token: TOKEN, apiRoot });
  await right.getMe(); // the sandbox learns the bot's real secret
  right.close();
  await outboundSettingsSave(db.pool, { botId: BOT, defaultChatId: OPS });
});
afterAll(async () => {
  await worker?.stop({ timeoutMs: 3_000 });
  await sb.stop();
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

function startWorker(token: string): Worker {
  const telegram = createBotApiClient({ token, apiRoot });
  const limiter = createOutboundRateLimiter({ ...OUTBOUND_RATE_LIMITS_DEFAULT, mode: 'reactive' });
  return createWorker({
    pool: db.pool,
    boss,
    logger: testLogger(),
    databaseUrl: db.url,
    kinds: [createOutboundKind({ pool: db.pool, telegram, limiter, opsChatId: OPS, sendTimeoutMs: 5_000 })],
    config: { concurrency: 4, staleAfterMs: 30_000, retry: { baseMs: 10, capMs: 40, maxAttempts: 2 } },
    pollIntervalMs: 200,
  });
}

const states = async () => (await db.pool.query(`select msg_id, state, kind from relay.outbound order by id`)).rows;
const retries = async () =>
  Number(
    (
      await db.pool.query(
        `select count(*) from relay.attempts where subject = 'outbound' and error_code = 'TELEGRAM_401'`,
      )
    ).rows[0].count,
  );
const readiness = () =>
  readinessChecker({
    pool: db.pool,
    clock: () => new Date(),
    pollTimeoutMs: 30_000,
    botIds: [],
    ingressHealth: () => Promise.resolve({ ready: true, reasons: [], generation: 1, owner: 'x' }),
  })();

it('a wrong token (401): kept past the budget, reported, never alerted through Telegram; the right token delivers and clears it', async () => {
  await withTransaction(db.pool, async (c) => {
    for (let i = 1; i <= 4; i++)
      await enqueueOutbound(c, boss, { msg_id: `m-${i}`, chat_id: 100 + i, text: `hello ${i}` }, { botId: BOT });
  });
  worker = startWorker(WRONG);
  await worker.start();
  await waitFor(async () => (await retries()) >= 12, { what: 'repeated 401s', timeoutMs: 20_000 });
  expect((await states()).map((r) => r.state).filter((s) => s !== 'pending' && s !== 'delivering')).toEqual([]);
  expect((await states()).filter((r) => r.kind === 'alert')).toEqual([]); // no alert loop through the refusing Bot API
  const { rows } = await db.pool.query(
    'select component, bot_id, code, status, occurrences from relay.config_problems',
  );
  expect(rows).toEqual([
    expect.objectContaining({ component: 'outbound', bot_id: BOT, code: 'TELEGRAM_401', status: 401 }),
  ]);
  const ready = await readiness();
  expect(ready.ready).toBe(false);
  expect(ready.reasons).toEqual([
    expect.stringMatching(new RegExp(`^outbound delivery \\(bot ${BOT}\\): Bot API answered 401 to sendMessage`)),
  ]);

  await worker.stop({ timeoutMs: 3_000 });
  worker = startWorker(TOKEN);
  await worker.start();
  await waitFor(async () => (await states()).every((r) => r.state === 'delivered'), {
    what: 'delivered with the right token',
    timeoutMs: 20_000,
  });
  expect(
    sb
      .sent(TOKEN)
      .map((m) => m.text)
      .sort(),
  ).toEqual(['hello 1', 'hello 2', 'hello 3', 'hello 4']);
  expect((await db.pool.query('select * from relay.config_problems')).rows).toEqual([]);
  expect((await readiness()).ready).toBe(true);
});
