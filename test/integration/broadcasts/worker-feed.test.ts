/**
 * The feeder runs in `tg-relay worker`: a real worker process feeds a staged broadcast beyond its
 * first chunk (the rest is only in relay.broadcast_recipients) and sends it once per chat.
 */
import { broadcast, broadcastStatus } from '../../../libs/broadcasts';
import { useOutboundFleet } from '../../support/outbound-fleet';
import { waitFor } from '../../support/wait-for';
import { startWorkerProcess, workerStarted } from '../../support/worker-process';

const TOKEN = '5353:feed-test-token-not-a-secret';
const CHATS = 2_500;
const fleet = useOutboundFleet('bc_wfeed', { seed: 3, limits: { perBot: { count: 2000, windowMs: 1000 } } });

it('a worker feeds the staged recipients after the first chunk and sends each chat once', async () => {
  const { db, sb, workers } = fleet;
  const chats = Array.from({ length: CHATS }, (_, i) => String(50_000 + i));
  // at 30/s the first chunk is 1,800: the other 700 wait in the staging table for a worker
  const r = await broadcast(db.pool, { chat_ids: chats, text: 'fed by a worker' }, { botId: '5353', freeRate: 30 });
  expect((await db.pool.query('select 1 from relay.outbound where broadcast_id = $1', [r.id])).rowCount).toBe(1800);
  workers.push(
    startWorkerProcess({
      DATABASE_URL: db.url,
      TELEGRAM_BOT_TOKEN: TOKEN,
      TELEGRAM_API_ROOT: sb.url,
      OUTBOUND_RATE_PER_BOT: '1000/1s',
      LOG_LEVEL: 'info',
    }),
  );
  await workerStarted(workers[0]);
  await waitFor(async () => (await broadcastStatus(db.pool, r.id))?.state === 'completed', {
    timeoutMs: 120_000,
    intervalMs: 500,
    what: 'the broadcast completes',
  });
  const s = await broadcastStatus(db.pool, r.id);
  expect(s).toMatchObject({ recipients: CHATS, counts: { delivered: CHATS, pending: 0, failed: 0 } });
  const perChat = new Map<string, number>();
  for (const m of sb.sent(TOKEN)) perChat.set(String(m.chat_id), (perChat.get(String(m.chat_id)) ?? 0) + 1);
  expect(perChat.size).toBe(CHATS);
  expect([...perChat.values()].filter((n) => n > 1)).toEqual([]);
}, 180_000);
