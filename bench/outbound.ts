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
 * `--lane bulk` sends the backlog as a broadcast (bulk lane), for its throughput as a share of the cap
 * (target ≥ 0.95, ≤ 1 × 429 per 1,000 sends), the most sends the sandbox accepted in any sliding 1 s
 * window (the cap as a user would count it), and the latency of interactive replies (enqueue to the
 * sandbox's acceptance) measured in the same run with the workers idle, then during the broadcast
 * (target: p99 during ≤ 2 × idle p99 + one rate slot, 1000/cap ms). `--replies 40` per phase.
 * Section broadcast-enqueue (bench/broadcast-enqueue.ts): `--section broadcast-enqueue [--recipients 100000]`.
 *
 * Usage: npx tsx bench/outbound.ts [--messages 1500] [--chats 300] [--workers 3] [--modes proactive,reactive] [--cap 30] [--per-chat 1] [--lane bulk [--replies 40]]
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createBoss, withTransaction } from '../libs/db';
import { enqueueOutbound, enqueueOutboundBatch } from '../libs/outbound';
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
const REPLIES = Number(arg('replies', '40'));
const CLI = path.resolve(__dirname, '../scripts/tg-relay-dev.js');

interface Result {
  mode: string;
  delivered: number;
  rate: number;
  share: number;
  /** Every accepted send between the first and the last of the backlog's, as a share of the cap. */
  totalShare: number;
  rateLimited: number;
  sendCalls: number;
  wallSeconds: number;
  orderOk: boolean;
  duplicates: number;
  /** Most sends accepted in any sliding 1 s window, all lanes. */
  maxPerSecond: number;
  /** The shortest time (ms) in which CAP + 1 sends were accepted: below 1000 is the cap exceeded, by how much. */
  shortestCapPlusOne: number;
  /** --lane bulk: reply latency (ms) with the workers idle and during the broadcast. */
  replies?: { idle: number[]; during: number[] };
}

/** Most of `times` (ms) in any window [t, t + 1000). */
export function maxInSlidingSecond(times: number[]): number {
  const t = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; j < t.length; j++) {
    while (t[j] - t[i] >= 1000) i++;
    best = Math.max(best, j - i + 1);
  }
  return best;
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};

/**
 * REPLIES interactive replies to chats of their own, one every 150 ms; resolves to the enqueue
 * time of each (by its text), for the latency to the sandbox's acceptance.
 */
async function sendReplies(
  db: Awaited<ReturnType<typeof benchDatabase>>,
  botId: string,
  phase: string,
): Promise<Map<string, number>> {
  const enqueued = new Map<string, number>();
  for (let i = 0; i < REPLIES; i++) {
    const text = `reply ${phase} ${i}`;
    const t = Date.now();
    await withTransaction(db.pool, (c) =>
      enqueueOutbound(c, { msg_id: `reply-${phase}-${i}`, chat_id: 900_000 + i, text, kind: 'reply' }, { botId }),
    );
    enqueued.set(text, t);
    await new Promise((r) => setTimeout(r, 150));
  }
  return enqueued;
}

async function waitDelivered(db: Awaited<ReturnType<typeof benchDatabase>>, n: number, what: string): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    const { rows } = await db.pool.query(
      `select count(*) filter (where state in ('delivered', 'failed'))::int as d from relay.outbound`,
    );
    if (rows[0].d >= n) return;
    if (performance.now() - t0 > 600_000) throw new Error(`${what}: not done after 10 minutes (${rows[0].d} of ${n})`);
    await new Promise((r) => setTimeout(r, 100));
  }
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
  const botId = String(botSeq);
  const workerEnv = {
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: token,
    TELEGRAM_API_ROOT: apiRoot,
    OUTBOUND_RATE_MODE: mode,
    OUTBOUND_RATE_PER_BOT: `${CAP}/1s`,
    OUTBOUND_RATE_PER_CHAT: `${PER_CHAT}/1s`,
  };
  const withReplies = LANE === 'bulk' && REPLIES > 0;
  let idle = new Map<string, number>();
  try {
    if (withReplies) {
      // the workers first, and replies while they have nothing else to send: the idle baseline
      for (let w = 0; w < WORKERS; w++) workers.push(startWorker(workerEnv));
      await withTransaction(db.pool, (c) =>
        enqueueOutbound(c, { msg_id: 'warm-up', chat_id: 899_999, text: 'warm-up', kind: 'reply' }, { botId }),
      );
      await waitDelivered(db, 1, 'warm-up');
      await new Promise((r) => setTimeout(r, 2_000)); // every worker has started
      idle = await sendReplies(db, botId, 'idle');
      await waitDelivered(db, 1 + REPLIES, 'idle replies');
    }
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
        { botId, lane: LANE },
      ),
    );
    const t0 = performance.now();
    if (!withReplies) for (let w = 0; w < WORKERS; w++) workers.push(startWorker(workerEnv));
    let during = new Map<string, number>();
    if (withReplies) {
      await new Promise((r) => setTimeout(r, 2_000)); // the broadcast is under way
      during = await sendReplies(db, botId, 'during');
    }
    const extra = withReplies ? 1 + 2 * REPLIES : 0;
    await waitDelivered(db, MESSAGES + extra, mode);
    const wallSeconds = (performance.now() - t0) / 1000;
    const all = sandbox.sent(token);
    const acceptedAt = new Map(all.map((m) => [m.text, m.time]));
    const latencies = (enqueued: Map<string, number>) =>
      [...enqueued].map(([text, t]) => (acceptedAt.get(text) ?? NaN) - t);
    const replies = withReplies ? { idle: latencies(idle), during: latencies(during) } : undefined;
    const maxPerSecond = maxInSlidingSecond(all.map((m) => m.time));
    const sorted = all.map((m) => m.time).sort((a, b) => a - b);
    let shortestCapPlusOne = Infinity;
    for (let i = 0; i + CAP < sorted.length; i++)
      shortestCapPlusOne = Math.min(shortestCapPlusOne, sorted[i + CAP] - sorted[i]);
    const sent = all.filter((m) => m.text.startsWith('message '));
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
    const inSpan = all.filter((m) => m.time >= times[0] && m.time <= times[times.length - 1]).length;
    return {
      totalShare: (inSpan - 1) / span / CAP,
      maxPerSecond,
      shortestCapPlusOne,
      replies,
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
      `${mode.padEnd(9)} ${r.rate.toFixed(2)} msg/s = ${(r.share * 100).toFixed(1)}% of ${CAP}/s` +
        (r.replies ? ` (with the replies sent meanwhile: ${(r.totalShare * 100).toFixed(1)}%)` : '') +
        ` | 429s: ${r.rateLimited} of ${r.sendCalls} sendMessage calls | ` +
        `most in any 1 s window: ${r.maxPerSecond} (${CAP + 1} sends in ${r.shortestCapPlusOne} ms at the least) | ` +
        `delivered ${r.delivered}/${MESSAGES}, duplicates ${r.duplicates}, per-chat order ${r.orderOk ? 'exact' : 'BROKEN'} | ` +
        `wall ${r.wallSeconds.toFixed(1)} s incl. worker start = ${(MESSAGES / r.wallSeconds).toFixed(2)} msg/s end to end`,
    );
  }
  const p = results.find((r) => r.mode === 'proactive');
  if (p && LANE === 'bulk') {
    const per1000 = (p.rateLimited * 1000) / p.sendCalls;
    // the replies sent during the broadcast take their slots of the cap: bulk uses what is left
    const share = (p.replies ? p.totalShare : p.share) >= 0.95 && per1000 <= 1 && p.orderOk && p.delivered === MESSAGES;
    console.log(
      `target broadcast throughput (≥ 95% of the cap${p.replies ? ' incl. the replies meanwhile' : ''}, ≤ 1 × 429 per 1,000 sends: ${per1000.toFixed(2)}): ${share ? 'MET' : 'NOT MET'}`,
    );
    let replies = true;
    if (p.replies) {
      const { idle, during } = p.replies;
      const slot = 1000 / CAP;
      const bound = 2 * pct(idle, 99) + slot;
      replies = pct(during, 99) <= bound;
      console.log(
        `interactive reply latency (enqueue → accepted by the Bot API, ${REPLIES} each): idle p50 ${pct(idle, 50).toFixed(0)} ms, p99 ${pct(idle, 99).toFixed(0)} ms | ` +
          `during the broadcast p50 ${pct(during, 50).toFixed(0)} ms, p99 ${pct(during, 99).toFixed(0)} ms`,
      );
      console.log(
        `target reply p99 during ≤ 2 × idle p99 + one rate slot (${bound.toFixed(0)} ms): ${replies ? 'MET' : 'NOT MET'}`,
      );
    }
    process.exitCode = share && replies ? 0 : 1;
  } else if (p) {
    const ok = p.share >= 0.95 && p.rateLimited === 0 && p.orderOk && p.delivered === MESSAGES;
    console.log(`target (proactive ≥ 95% of the cap, zero 429s, all delivered in order): ${ok ? 'MET' : 'NOT MET'}`);
    process.exitCode = ok ? 0 : 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
