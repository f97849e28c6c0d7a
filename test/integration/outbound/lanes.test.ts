/**
 * Priority lanes end to end: 3 `tg-relay worker` processes send a 3,000-chat bulk broadcast to the
 * sandbox, which enforces 30 msg/s per bot (429 above it), while 20 interactive replies are
 * enqueued during it, some to chats whose broadcast message is still pending. Every reply is
 * delivered within a few seconds of its enqueue (not behind the broadcast), the broadcast completes,
 * and nothing is sent twice.
 */
import { withTransaction } from '../../../libs/db';
import { enqueueOutbound, enqueueOutboundBatch } from '../../../libs/outbound';
import { sleep } from '../../../libs/lifecycle/timers';
import { useOutboundFleet } from '../../support/outbound-fleet';
import { waitFor } from '../../support/wait-for';
import { startWorkerProcess, workerStarted } from '../../support/worker-process';

const TOKEN = '5252:lanes-test-token-not-a-secret';
const BULK = 3_000;
const REPLIES = 20;
const PER_BOT = 30;

const fleet = useOutboundFleet('ob_lanes', { seed: 7, limits: { perBot: { count: PER_BOT, windowMs: 1000 } } });

it('20 replies during a 3,000-chat bulk broadcast at 30/s are each delivered within seconds; the broadcast completes once per chat', async () => {
  const { db, boss, sb, workers } = fleet;
  await withTransaction(db.pool, (c) =>
    enqueueOutboundBatch(
      c,
      boss,
      Array.from({ length: BULK }, (_, i) => ({ msg_id: `bcast-${i}`, chat_id: 10_000 + i, text: `bulk ${i}` })),
      { botId: '5252', lane: 'bulk' },
    ),
  );
  for (let w = 0; w < 3; w++) {
    workers.push(
      startWorkerProcess({
        DATABASE_URL: db.url,
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_ROOT: sb.url,
        OUTBOUND_RATE_PER_BOT: `${PER_BOT}/1s`,
        RETRY_BASE: '50ms',
        RETRY_CAP: '500ms',
        RETRY_MAX_ATTEMPTS: '100',
        LOG_LEVEL: 'info',
      }),
    );
  }
  await Promise.all(workers.map((w) => workerStarted(w)));
  await sleep(3_000); // the broadcast is under way
  // replies: half to chats whose broadcast message is still pending (a reply may overtake it), half to others
  for (let i = 0; i < REPLIES; i++) {
    const chat = i % 2 === 0 ? 10_000 + BULK - 1 - i : 90_000 + i;
    await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, { msg_id: `reply-${i}`, chat_id: chat, text: `reply ${i}`, kind: 'reply' }, { botId: '5252' }),
    );
    await sleep(500);
  }
  const latencies = async () =>
    (
      await db.pool.query<{ ms: number | null }>(
        `select extract(epoch from (delivered_at - created_at)) * 1000 as ms from relay.outbound
          where msg_id like 'reply-%' order by id`,
      )
    ).rows.map((r) => (r.ms === null ? null : Number(r.ms)));
  await waitFor(async () => (await latencies()).every((ms) => ms !== null), {
    timeoutMs: 30_000,
    intervalMs: 200,
    what: 'every reply delivered',
  });
  const pendingBulkAfterReplies = (
    await db.pool.query<{ n: number }>(
      `select count(*)::int as n from relay.outbound where lane = 'bulk' and state <> 'delivered'`,
    )
  ).rows[0].n;
  const ms = (await latencies()) as number[];
  const sorted = [...ms].sort((a, b) => a - b);
  console.log(
    `reply latency during a broadcast: p50 ${Math.round(sorted[Math.floor(sorted.length / 2)])} ms, max ${Math.round(
      sorted[sorted.length - 1],
    )} ms (target 2,000 ms); bulk still pending when the replies were done: ${pendingBulkAfterReplies}`,
  );
  // the broadcast was still running, so the replies did not wait for it to drain
  expect(pendingBulkAfterReplies).toBeGreaterThan(1_000);
  // generous bound against a loaded machine; the figure above is what to compare with 2 s
  for (const v of ms) expect(v).toBeLessThan(5_000);

  await waitFor(
    async () =>
      (await db.pool.query<{ n: number }>(`select count(*)::int as n from relay.outbound where state = 'delivered'`))
        .rows[0].n ===
      BULK + REPLIES,
    { timeoutMs: 240_000, intervalMs: 500, what: 'the broadcast completes' },
  );
  const times = new Map<string, number>();
  for (const m of sb.sent(TOKEN)) times.set(m.text, (times.get(m.text) ?? 0) + 1);
  expect(times.size).toBe(BULK + REPLIES);
  expect([...times.values()].filter((n) => n > 1)).toEqual([]);
  const stats = sb.stats();
  console.log(`429s: ${stats.rate_limited} for ${BULK + REPLIES} messages`);
  expect(stats.rate_limited).toBeLessThan((BULK + REPLIES) / 100);
}, 360_000);
