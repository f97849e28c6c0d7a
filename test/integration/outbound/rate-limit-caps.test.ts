/**
 * The seed's 429 bounds as options of the outbound worker: OUTBOUND_MAX_RETRY_AFTER caps one 429's
 * wait (Telegram asks for an hour here; without the cap the message would wait that long), and
 * OUTBOUND_MAX_429 fails a message after that many 429s (default unlimited).
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import { enqueueOutbound } from '../../../libs/outbound';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';

const TOKEN = '7171:caps-test-token-not-a-secret';
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
let w: WorkerProcess | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('ob_caps');
  boss = createBoss(db.url, { max: 1 });
  sb = createBotApiSandbox({ seed: 3 });
  await sb.start();
});
afterEach(async () => {
  await killWorker(w);
  sb.reset();
});
afterAll(async () => {
  await sb.stop();
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

const hourLong429 = (times: number) => ({
  kind: 'custom' as const,
  error_code: 429,
  description: 'Too Many Requests: retry after 3600',
  parameters: { retry_after: 3600 },
  times,
});
const enqueue = (msgId: string, chatId: number) =>
  withTransaction(db.pool, (c) =>
    enqueueOutbound(c, boss, { msg_id: msgId, chat_id: chatId, text: 'x' }, { botId: '7171' }),
  );
const startWorker = (env: Record<string, string>) => {
  w = startWorkerProcess({
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: sb.url,
    OPS_CHAT_ID: '-100717',
    ...env,
  });
  return workerStarted(w);
};
const row = async (msgId: string) =>
  (await db.pool.query('select * from relay.outbound where msg_id = $1', [msgId])).rows[0];

it('OUTBOUND_MAX_RETRY_AFTER caps the wait of a 429 that asks for an hour', async () => {
  sb.scriptChatError(TOKEN, 5001, hourLong429(2));
  await enqueue('cap-wait', 5001);
  await startWorker({ OUTBOUND_MAX_RETRY_AFTER: '1s' }); // the smallest cap allowed
  await waitFor(async () => (await row('cap-wait'))?.state === 'delivered', {
    timeoutMs: 30_000,
    what: 'delivered after two capped 429 waits',
  });
  const audits = (
    await db.pool.query(
      `select http_status, details from relay.attempts where subject = 'outbound' and subject_key = 'cap-wait' order by id`,
    )
  ).rows;
  expect(audits.filter((a) => a.http_status === 429)).toHaveLength(2);
  expect(audits.filter((a) => a.http_status === 429).every((a) => a.details.retryAfterMs === 1000)).toBe(true);
});

it('OUTBOUND_MAX_429 fails a message at its third 429, with an alert; other chats are not held up', async () => {
  sb.scriptChatError(TOKEN, 5002, hourLong429(100));
  await enqueue('cap-count', 5002);
  await enqueue('other-chat', 5003);
  await startWorker({ OUTBOUND_MAX_RETRY_AFTER: '1s', OUTBOUND_MAX_429: '3' });
  await waitFor(async () => (await row('cap-count'))?.state === 'failed', {
    timeoutMs: 30_000,
    what: 'failed after 3 429s',
  });
  const r = await row('cap-count');
  expect(r.failed_reason).toMatch(/rate limited 3 times \(OUTBOUND_MAX_429\)/);
  expect(sb.calls(TOKEN, { method: 'sendMessage' }).filter((c) => String(c.params.chat_id) === '5002')).toHaveLength(3);
  expect(
    await db.pool
      .query(
        `select count(*)::int as n from relay.attempts where subject = 'outbound' and subject_key = 'cap-count' and http_status = 429`,
      )
      .then((q) => q.rows[0].n),
  ).toBe(3);
  expect((await row('other-chat')).state).toBe('delivered');
  await waitFor(async () => (await row('alert:cap-count'))?.kind === 'alert', { what: 'alert raised' });
});
