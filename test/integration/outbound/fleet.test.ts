/**
 * The fleet: 3 `tg-relay worker` processes send 2,000 messages over 100 chats to the sandbox, which
 * enforces per-bot and per-chat limits and injects ~10% faults (5xx, connections dropped before and
 * after processing). Everything is delivered, each chat in exact enqueue order, and a message is
 * sent twice only after a recorded ambiguous attempt.
 */
import type { BossLedger } from '../../../libs/db/boss';
import { createBoss, withTransaction } from '../../../libs/db';
import { enqueueOutboundBatch } from '../../../libs/outbound';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { killWorker, startWorkerProcess, workerStarted, WorkerProcess } from '../../support/worker-process';

const TOKEN = '5151:fleet-test-token-not-a-secret';
const MESSAGES = 2_000;
const CHATS = 100;
const PER_BOT = 100;
const PER_CHAT = 10;

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sb: BotApiSandbox;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('ob_fleet');
  boss = createBoss(db.url, { max: 1 });
  sb = createBotApiSandbox({
    seed: 42,
    limits: { perBot: { count: PER_BOT, windowMs: 1000 }, privateChat: { count: PER_CHAT, windowMs: 1000, burst: 1 } },
  });
  await sb.start();
});
afterAll(async () => {
  await Promise.all(workers.map((w) => killWorker(w)));
  await sb.stop();
  await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
  await db.drop();
});

const chatOf = (i: number) => 7_000 + (i % CHATS);

async function enqueue(from: number, to: number): Promise<void> {
  await withTransaction(db.pool, (c) =>
    enqueueOutboundBatch(
      c,
      boss,
      Array.from({ length: to - from }, (_, k) => ({
        msg_id: `fleet-${from + k}`,
        chat_id: chatOf(from + k),
        text: `m ${from + k}`,
      })),
      { botId: '5151' },
    ),
  );
}

it('3 worker processes deliver 2,000 messages over 100 chats through limits and 10% faults: all, in per-chat order, duplicates only after ambiguous attempts', async () => {
  sb.setFaults({
    serverErrorRate: 0.04,
    serverErrorStatus: 502,
    dropBeforeRate: 0.03,
    dropAfterRate: 0.03,
    methods: ['sendMessage'],
  });
  await enqueue(0, 500);
  for (let w = 0; w < 3; w++) {
    workers.push(
      startWorkerProcess({
        DATABASE_URL: db.url,
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_ROOT: sb.url,
        OPS_CHAT_ID: '-100500',
        OUTBOUND_RATE_PER_BOT: `${PER_BOT}/1s`,
        OUTBOUND_RATE_PER_CHAT: `${PER_CHAT}/1s`,
        RETRY_BASE: '50ms',
        RETRY_CAP: '500ms',
        RETRY_MAX_ATTEMPTS: '100',
        STALE_AFTER: '30s',
        LOG_LEVEL: 'info',
      }),
    );
  }
  await Promise.all(workers.map((w) => workerStarted(w)));
  // the rest arrives while the fleet runs (NOTIFY wakes it)
  for (let from = 500; from < MESSAGES; from += 500) await enqueue(from, from + 500);

  await waitFor(
    async () => {
      const { rows } = await db.pool.query(
        `select count(*)::int as n from relay.outbound where state in ('delivered', 'failed')`,
      );
      return rows[0].n === MESSAGES;
    },
    { timeoutMs: 120_000, intervalMs: 250, what: 'all messages settled' },
  );
  const states = (await db.pool.query(`select state, count(*)::int as n from relay.outbound group by state`)).rows;
  expect(states).toEqual([{ state: 'delivered', n: MESSAGES }]);

  // exact per-chat order, from what Telegram (the sandbox) accepted: collapse back-to-back repeats
  // (an ambiguous send retried) and each chat's sequence must be exactly its messages in order
  const sent = sb.sent(TOKEN);
  const byChat = new Map<number, number[]>();
  for (const m of sent) {
    const seq = byChat.get(m.resolved_chat_id) ?? [];
    const i = Number(m.text.split(' ')[1]);
    if (seq[seq.length - 1] !== i) seq.push(i);
    byChat.set(m.resolved_chat_id, seq);
  }
  expect(byChat.size).toBe(CHATS);
  for (const [chat, seq] of byChat) {
    const expected = Array.from({ length: MESSAGES / CHATS }, (_, k) => chat - 7_000 + k * CHATS);
    expect({ chat, seq }).toEqual({ chat, seq: expected });
  }

  // a message sent more than once had that many ambiguous attempts recorded before
  const times = new Map<string, number>();
  for (const m of sent) times.set(m.text, (times.get(m.text) ?? 0) + 1);
  const ambiguous = new Map<string, number>(
    (
      await db.pool.query(
        `select subject_key, count(*)::int as n from relay.attempts where subject = 'outbound' and outcome = 'ambiguous' group by subject_key`,
      )
    ).rows.map((r) => [r.subject_key as string, r.n as number]),
  );
  const unexplained = [...times].filter(([text, n]) => n > 1 + (ambiguous.get(`fleet-${text.split(' ')[1]}`) ?? 0));
  expect(unexplained).toEqual([]);
  const duplicates = [...times.values()].filter((n) => n > 1).length;
  expect(duplicates).toBeGreaterThan(0); // drop-after faults did happen, and were retried
  const stats = sb.stats();
  expect(stats.faults.drop_after + stats.faults.drop_before + stats.faults.server_error).toBeGreaterThan(
    MESSAGES * 0.05,
  );
  // the limits held: 429s are rare (jitter at the edges), and every one was honoured
  const calls = sb.calls(TOKEN, { method: 'sendMessage' }).length;
  expect(stats.rate_limited).toBeLessThan(calls * 0.01);
  // workers stop cleanly
  for (const w of workers) w.kill('SIGTERM');
  const codes = await Promise.all(
    workers.map(
      (w) => new Promise<number | null>((r) => (w.exitCode !== null ? r(w.exitCode) : w.once('exit', (c) => r(c)))),
    ),
  );
  expect(codes).toEqual([0, 0, 0]);
}, 180_000);
