/**
 * Ingress throughput, three measurements in one run against the same sandbox and database server:
 *   1. polling: drain a backlog of N updates from the Bot API sandbox
 *      a. with telegraf's own polling (`bot.launch()`, no-op handler; NOT durable: it confirms
 *         updates before handling them and keeps the offset in memory), and
 *      b. with the durable poller (one fenced transaction per batch: inbox rows, captures, pg-boss
 *         jobs and the cursor, committed before the next getUpdates confirms the batch),
 *      once per `--latency-ms` value (Bot API latency added to every getUpdates, both pollers
 *      alike), printing updates/s of both, the ratio, and the durable batch transaction's own
 *      p50/p99 (BEGIN sent to COMMIT acknowledged, 100 updates with captures and dispatch jobs);
 *      targets: ratio ≥ 0.90 at +50 ms, ≥ 0.30 at +0 ms, batch p50 ≤ 5 ms;
 *   2. webhook: the real webhook ingress (Fastify endpoint, secret check, the same batch
 *      transaction per delivery) receiving `--webhook N` updates over `--connections` (40)
 *      concurrent keep-alive connections, as Telegram does with max_connections: updates/s and the
 *      answer time p50/p99 (request sent to 200 received).
 * The load average is printed at the start and the end: the machine may be shared.
 */
const USAGE = `usage: npx tsx bench/ingress.ts [options]   (DATABASE_URL: server to use; unset = embedded PostgreSQL)
  --updates N        polling backlog per run (default 20000)
  --rounds N         runs per latency; medians are reported (default 1)
  --chats N          chats the updates are spread over (default 100)
  --latency-ms L,..  Bot API latency added to getUpdates, one comparison per value (default 0,50)
  --webhook N        updates posted to the webhook ingress (default 5000; 0 skips it)
  --connections N    concurrent webhook connections (default 40)
  --only MODE        polling | webhook (default: both)
  --help             this text`;

import { spawn } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Telegraf } from 'telegraf';
import { createBoss, freePort, Pool } from '../libs/db';
import { createPoller } from '../libs/ingress/poller';
import { createWebhookIngress } from '../libs/ingress/webhook-ingress';
import { silentLogger } from '../libs/observability/logger';
import { createSandboxClient } from '../libs/sandbox';
import { createBotApiClient } from '../libs/telegram';
import { benchDatabase } from './support/database';
import { fmt, loadAverage, median, pct } from './support/worker-process';
import { messageUpdate } from './support/updates';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 0) usageError(`--${name} takes a non-negative integer`);
  return v;
}
function usageError(msg: string): never {
  console.error(`${msg}\n${USAGE}`);
  process.exit(2);
}
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}

const UPDATES = arg('updates', 20_000);
const ROUNDS = Math.max(1, arg('rounds', 1));
const CHATS = Math.max(1, arg('chats', 100));
const WEBHOOK_UPDATES = arg('webhook', 5_000);
const CONNECTIONS = Math.max(1, arg('connections', 40));
const ONLY = (() => {
  const i = process.argv.indexOf('--only');
  if (i < 0) return null;
  const v = process.argv[i + 1];
  if (v !== 'polling' && v !== 'webhook') usageError('--only takes polling or webhook');
  return v;
})();
const LATENCIES = (() => {
  const i = process.argv.indexOf('--latency-ms');
  const v = i > 0 ? process.argv[i + 1].split(',').map(Number) : [0, 50];
  if (v.some((x) => !Number.isInteger(x) || x < 0))
    usageError('--latency-ms takes non-negative integers, comma-separated');
  return v;
})();
/** Ratio targets, by Bot API latency. */
const RATIO_TARGET: Record<number, number> = { 0: 0.3, 50: 0.9 };
const BATCH_P50_TARGET_MS = 5;
let botSeq = 7_000_000;
const newToken = () => `${++botSeq}:bench-${botSeq}-token-not-secret-xx`;

async function startSandboxProcess(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const collectorPort = await freePort();
  const child = spawn(process.execPath, [path.resolve(__dirname, '../scripts/tg-relay-dev.js'), 'sandbox'], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      SANDBOX_PORT: String(port),
      SANDBOX_COLLECTOR_PORT: String(collectorPort),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const client = createSandboxClient(url);
  for (let i = 0; ; i++) {
    try {
      await client.health();
      break;
    } catch {
      if (i > 200 || child.exitCode !== null) throw new Error('sandbox did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    },
  };
}

async function inject(url: string, token: string, n: number, latencyMs: number): Promise<void> {
  const client = createSandboxClient(url);
  if (latencyMs > 0) await client.setFaults({ latencyMs, methods: ['getUpdates'] }, token);
  for (let done = 0; done < n;) {
    const k = Math.min(10_000, n - done);
    await client.injectMessages(token, k, { chats: CHATS });
    done += k;
  }
}

async function runTelegraf(url: string, latencyMs: number): Promise<number> {
  const token = newToken();
  await inject(url, token, UPDATES, latencyMs);
  const bot = new Telegraf(token, { telegram: { apiRoot: url } });
  let seen = 0;
  let t0 = 0;
  let finish!: (ms: number) => void;
  const finished = new Promise<number>((r) => (finish = r));
  bot.use(() => {
    if (++seen === UPDATES) finish(performance.now() - t0);
  });
  t0 = performance.now();
  const launched = bot.launch({ dropPendingUpdates: false });
  const ms = await finished;
  bot.stop('bench');
  await launched.catch(() => undefined);
  return (UPDATES / ms) * 1000;
}

/**
 * `pool` with every batch transaction timed on its client: BEGIN sent → COMMIT acknowledged, for
 * transactions that wrote relay.inbox (the batch; lease renewals and the rest are not timed).
 */
function timedPool(pool: Pool, batchesMs: number[]): Pool {
  const wrap = (client: object) => {
    let t0 = 0;
    let batch = false;
    return new Proxy(client, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver);
        if (prop !== 'query') return typeof v === 'function' ? v.bind(target) : v;
        return async (...args: unknown[]) => {
          const a = args[0];
          const text = typeof a === 'string' ? a : ((a as { text?: string }).text ?? '');
          if (text === 'begin') {
            t0 = performance.now();
            batch = false;
          } else if (text.includes('relay.inbox')) batch = true;
          const r = await (v as (...x: unknown[]) => Promise<unknown>).apply(target, args);
          if (text === 'commit' && batch) batchesMs.push(performance.now() - t0);
          return r;
        };
      },
    });
  };
  return new Proxy(pool, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop === 'connect') return async () => wrap(await target.connect());
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

async function runDurable(
  url: string,
  latencyMs: number,
): Promise<{ rate: number; check: string; batchesMs: number[] }> {
  const token = newToken();
  const botId = token.split(':')[0];
  await inject(url, token, UPDATES, latencyMs);
  const db = await benchDatabase();
  const boss = createBoss(db.url, { max: 1 });
  const api = createBotApiClient({ token, apiRoot: url });
  const batchesMs: number[] = [];
  const poller = createPoller({
    pool: timedPool(db.pool, batchesMs),
    boss,
    api,
    botId,
    owner: 'bench',
    logger: silentLogger(),
    leaseTtlMs: 10_000,
    pollTimeoutMs: 25_000,
    decodePolicy: 'stop',
    allowedChatIds: [],
    deleteWebhookOnAcquire: false,
  });
  const t0 = performance.now();
  poller.start();
  while (poller.status().updates < UPDATES) await new Promise((r) => setTimeout(r, 2));
  const ms = performance.now() - t0;
  await poller.stop();
  const { rows } = await db.pool.query(
    `select (select count(*) from relay.inbox)::int as inbox, (select count(*) from relay.captures)::int as captures,
            (select count(*) from tg_relay_boss.job)::int as jobs, (select next_offset from relay.cursor where bot_id = $1) as next_offset`,
    [botId],
  );
  api.close();
  await db.close();
  const r = rows[0];
  return {
    rate: (UPDATES / ms) * 1000,
    check: `inbox=${r.inbox} captures=${r.captures} jobs=${r.jobs} cursor=${r.next_offset}`,
    batchesMs,
  };
}

const SECRET = 'bench-webhook-secret-0123456789';

/** POSTs `n` message updates to the real webhook ingress over `connections` keep-alive connections. */
async function runWebhook(url: string, n: number, connections: number): Promise<string> {
  const token = newToken();
  const botId = token.split(':')[0];
  const db = await benchDatabase();
  const boss = createBoss(db.url, { max: 1 });
  const api = createBotApiClient({ token, apiRoot: url });
  const port = await freePort();
  const batchesMs: number[] = [];
  const ingress = createWebhookIngress({
    pool: timedPool(db.pool, batchesMs),
    boss,
    api,
    botId,
    owner: 'bench-webhook',
    logger: silentLogger(),
    leaseTtlMs: 10_000,
    pollTimeoutMs: 25_000,
    decodePolicy: 'stop',
    allowedChatIds: [],
    secret: SECRET,
    publicUrl: `http://127.0.0.1:${port}/`,
    host: '127.0.0.1',
    port,
  });
  await ingress.start();
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const post = (body: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          agent,
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: `/telegram/webhook/${botId}`,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-telegram-bot-api-secret-token': SECRET,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const update = (id: number) => messageUpdate(id, CHATS);
  // the lease is taken and the webhook registered in the background: wait for the first 200
  for (let i = 0; ; i++) {
    if ((await post(update(1))) === 200) break;
    if (i > 300) throw new Error('webhook ingress never answered 200');
    await new Promise((r) => setTimeout(r, 50));
  }
  batchesMs.length = 0;
  const answersMs: number[] = [];
  const statuses = new Map<number, number>();
  let next = 2;
  const last = n + 1;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next <= last) {
        const body = update(next++);
        const s0 = performance.now();
        const status = await post(body);
        answersMs.push(performance.now() - s0);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  const ms = performance.now() - t0;
  agent.destroy();
  await ingress.stop();
  const { rows } = await db.pool.query(
    `select (select count(*) from relay.inbox)::int as inbox, (select count(*) from relay.captures)::int as captures, (select count(*) from tg_relay_boss.job)::int as jobs`,
  );
  api.close();
  await db.close();
  const answers = [...statuses].map(([s, k]) => `${k}×${s}`).join(' ');
  return (
    `webhook: ${fmt(n)} updates over ${connections} connections: ${fmt((n / ms) * 1000)} updates/s, answer p50 ${fmt(pct(answersMs, 50), 1)} ms, ` +
    `p99 ${fmt(pct(answersMs, 99), 1)} ms (answers ${answers}; inbox=${rows[0].inbox} captures=${rows[0].captures} jobs=${rows[0].jobs}); ` +
    `${fmt(batchesMs.length)} batch transactions (group commit: ${fmt(n / Math.max(1, batchesMs.length), 1)} updates each on average), ` +
    `p50 ${fmt(pct(batchesMs, 50), 2)} ms, p99 ${fmt(pct(batchesMs, 99), 2)} ms`
  );
}

async function main(): Promise<void> {
  const sandbox = await startSandboxProcess();
  const loadStart = loadAverage();
  try {
    console.log(
      `ingress benchmark: sandbox ${sandbox.url} in its own process; load average ${loadStart} (${os.cpus().length} cores)`,
    );
    const summary: string[] = [];
    if (ONLY !== 'webhook') {
      console.log(`polling: ${UPDATES} updates over ${CHATS} chats, ${ROUNDS} round(s)`);
      for (const latency of LATENCIES) {
        console.log(`\n-- getUpdates latency +${latency} ms --`);
        const tf: number[] = [];
        const du: number[] = [];
        const batches: number[] = [];
        for (let i = 0; i < ROUNDS; i++) {
          tf.push(await runTelegraf(sandbox.url, latency));
          console.log(`  round ${i + 1}: telegraf launch() (non-durable): ${tf[i].toFixed(0)} updates/s`);
          const d = await runDurable(sandbox.url, latency);
          du.push(d.rate);
          batches.push(...d.batchesMs);
          console.log(`  round ${i + 1}: durable poller:                  ${d.rate.toFixed(0)} updates/s (${d.check})`);
        }
        const t = median(tf);
        const d = median(du);
        const target = RATIO_TARGET[latency];
        summary.push(
          `latency +${String(latency).padStart(3)} ms: telegraf (non-durable) ${t.toFixed(0).padStart(6)} updates/s, durable ${d.toFixed(0).padStart(6)} updates/s, ` +
            `ratio ${(d / t).toFixed(2)}${target === undefined ? '' : ` (target ≥ ${target.toFixed(2)})`}; ` +
            `batch transaction p50 ${pct(batches, 50).toFixed(2)} ms, p99 ${pct(batches, 99).toFixed(2)} ms over ${batches.length} batches (target p50 ≤ ${BATCH_P50_TARGET_MS} ms)`,
        );
      }
    }
    if (ONLY !== 'polling' && WEBHOOK_UPDATES > 0) {
      console.log(`\n-- webhook: ${WEBHOOK_UPDATES} updates, ${CONNECTIONS} connections --`);
      summary.push(await runWebhook(sandbox.url, WEBHOOK_UPDATES, CONNECTIONS));
    }
    console.log(
      `\n${summary.join('\n')}\nload average: ${loadStart} at the start, ${loadAverage()} at the end (${os.cpus().length} cores)`,
    );
  } finally {
    await sandbox.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
