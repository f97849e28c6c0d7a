/**
 * Outbound throughput under Telegram's limits. The sandbox Bot API enforces 30 msg/s per bot and
 * 1 msg/s per private chat (429 + retry_after beyond); 3 `tg-relay worker` processes send a backlog
 * of 1,500 messages to 300 chats:
 *   1. with proactive, fleet-wide rate limiting (OUTBOUND_RATE_MODE=proactive, the default), and
 *   2. reactive only (OUTBOUND_RATE_MODE=reactive: send as fast as the workers can, honour each
 *      429's retry_after) as the baseline.
 * Prints achieved msg/s (first to last send the sandbox accepted, so arrival jitter can put it a
 * hair above the cap), its share of the 30/s cap, the 429s received, and the end-to-end rate
 * including worker start-up; checks that every message was delivered once, in per-chat order.
 * Target: proactive ≥ 0.95 of the cap with zero 429s.
 *
 * PostgreSQL is embedded unless DATABASE_URL is set.
 * `--lane bulk` sends the backlog as a broadcast (bulk lane), for its throughput as a share of the cap.
 * Section broadcast-enqueue (bench/broadcast-enqueue.ts): `--section broadcast-enqueue [--recipients 100000]`.
 *
 * Usage: npx tsx bench/outbound.ts [--messages 1500] [--chats 300] [--workers 3] [--modes proactive,reactive] [--cap 30] [--per-chat 1] [--lane bulk]
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createBoss, withTransaction } from '../libs/db';
import { enqueueOutboundBatch } from '../libs/outbound';
import { createBotApiSandbox } from '../libs/sandbox';
import { benchDatabase } from './support/database';
import { benchBroadcastEnqueue } from './broadcast-enqueue';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? String(process.argv[i + 1]) : fallback;
}

const MESSAGES = Number(arg('messages', '1500'));
const CHATS = Number(arg('chats', '300'));
const WORKERS = Number(arg('workers', '3'));
const MODES = arg('modes', 'proactive,reactive').split(',') as ('proactive' | 'reactive')[];
const CAP = Number(arg('cap', '30'));
const PER_CHAT = Number(arg('per-chat', '1'));
/** `bulk`: the backlog is a broadcast (the bulk lane: at most one slot ahead, a bounded number in flight). */
const LANE = arg('lane', 'interactive') as 'interactive' | 'bulk';
const CLI = path.resolve(__dirname, '../scripts/tg-relay-dev.js');

interface Result {
  mode: string;
  delivered: number;
  rate: number;
  share: number;
  rateLimited: number;
  sendCalls: number;
  wallSeconds: number;
  orderOk: boolean;
  duplicates: number;
}

function startWorker(env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [CLI, 'worker'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return child;
}

async function run(mode: 'proactive' | 'reactive', botSeq: number): Promise<Result> {
  const db = await benchDatabase();
  const sandbox = createBotApiSandbox({
    limits: { perBot: { count: CAP, windowMs: 1000 }, privateChat: { count: PER_CHAT, windowMs: 1000, burst: 1 } },
  });
  const apiRoot = await sandbox.start();
  const token = `${botSeq}:bench-outbound-token-not-a-secret`;
  const boss = createBoss(db.url, { max: 1 });
  const workers: ChildProcess[] = [];
  try {
    // the backlog: message i goes to chat 1 + (i mod CHATS), so every chat gets MESSAGES/CHATS in order
    await withTransaction(db.pool, (c) =>
      enqueueOutboundBatch(
        c,
        boss,
        Array.from({ length: MESSAGES }, (_, i) => ({
          msg_id: `bench-${i}`,
          chat_id: 1 + (i % CHATS),
          text: `message ${i}`,
        })),
        { botId: String(botSeq), lane: LANE },
      ),
    );
    const t0 = performance.now();
    for (let w = 0; w < WORKERS; w++) {
      workers.push(
        startWorker({
          DATABASE_URL: db.url,
          TELEGRAM_BOT_TOKEN: token,
          TELEGRAM_API_ROOT: apiRoot,
          OUTBOUND_RATE_MODE: mode,
          OUTBOUND_RATE_PER_BOT: `${CAP}/1s`,
          OUTBOUND_RATE_PER_CHAT: `${PER_CHAT}/1s`,
        }),
      );
    }
    for (;;) {
      const { rows } = await db.pool.query(
        `select count(*) filter (where state = 'delivered')::int as d, count(*) filter (where state = 'failed')::int as f from relay.outbound`,
      );
      if (rows[0].d + rows[0].f >= MESSAGES) break;
      if (performance.now() - t0 > 600_000)
        throw new Error(`${mode}: not done after 10 minutes (${rows[0].d} delivered)`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const wallSeconds = (performance.now() - t0) / 1000;
    const sent = sandbox.sent(token);
    const times = sent.map((m) => m.time).sort((a, b) => a - b);
    const span = (times[times.length - 1] - times[0]) / 1000;
    const rate = (sent.length - 1) / span;
    // per-chat order and duplicates, from what the sandbox accepted
    let orderOk = true;
    const lastByChat = new Map<number, number>();
    const seen = new Set<string>();
    let duplicates = 0;
    for (const m of sent) {
      if (seen.has(m.text)) duplicates++;
      seen.add(m.text);
      const i = Number(m.text.split(' ')[1]);
      const chat = m.resolved_chat_id;
      if ((lastByChat.get(chat) ?? -1) >= i && !(lastByChat.get(chat) === i)) orderOk = false;
      lastByChat.set(chat, i);
    }
    const calls = sandbox.calls(token, { method: 'sendMessage' });
    return {
      mode,
      delivered: new Set(sent.map((m) => m.text)).size,
      rate,
      share: rate / CAP,
      rateLimited: calls.filter((c) => c.status === 429).length,
      sendCalls: calls.length,
      wallSeconds,
      orderOk,
      duplicates,
    };
  } finally {
    for (const w of workers) w.kill('SIGTERM');
    await Promise.all(
      workers.map((w) => (w.exitCode !== null ? Promise.resolve() : new Promise((r) => w.once('exit', r)))),
    );
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
    await sandbox.stop();
    await db.close();
  }
}

async function main(): Promise<void> {
  if (arg('section', '') === 'broadcast-enqueue') {
    process.exitCode = (await benchBroadcastEnqueue(Number(arg('recipients', '100000')))) ? 0 : 1;
    return;
  }
  console.log(
    `outbound: ${MESSAGES} messages (${LANE} lane) to ${CHATS} chats, ${WORKERS} worker processes, sandbox limits ${CAP}/s per bot and ${PER_CHAT}/s per chat`,
  );
  const results: Result[] = [];
  let botSeq = 8_100_000;
  for (const mode of MODES) {
    const r = await run(mode, ++botSeq);
    results.push(r);
    console.log(
      `${mode.padEnd(9)} ${r.rate.toFixed(2)} msg/s = ${(r.share * 100).toFixed(1)}% of ${CAP}/s | 429s: ${r.rateLimited} of ${r.sendCalls} sendMessage calls | ` +
        `delivered ${r.delivered}/${MESSAGES}, duplicates ${r.duplicates}, per-chat order ${r.orderOk ? 'exact' : 'BROKEN'} | ` +
        `wall ${r.wallSeconds.toFixed(1)} s incl. worker start = ${(MESSAGES / r.wallSeconds).toFixed(2)} msg/s end to end`,
    );
  }
  const p = results.find((r) => r.mode === 'proactive');
  if (p) {
    const ok = p.share >= 0.95 && p.rateLimited === 0 && p.orderOk && p.delivered === MESSAGES;
    console.log(`target (proactive ≥ 95% of the cap, zero 429s, all delivered in order): ${ok ? 'MET' : 'NOT MET'}`);
    process.exitCode = ok ? 0 : 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
