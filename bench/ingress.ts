/**
 * Ingress throughput: drain a backlog of N updates (default 50,000) from the Bot API sandbox
 *   1. with telegraf's own polling (`bot.launch()`, no-op handler; NOT durable: it confirms
 *      updates before handling them and keeps the offset in memory), and
 *   2. with the durable poller (one fenced transaction per batch: inbox rows, captures, pg-boss
 *      jobs and the cursor, committed before the next getUpdates confirms the batch),
 * and print updates/s for both and the ratio. Target: durable ≥ 0.8 × telegraf.
 *
 * The sandbox runs in its own process (`tg-relay sandbox`), PostgreSQL is embedded unless
 * DATABASE_URL is set. Usage:
 *   npx tsx bench/ingress.ts [--updates 50000] [--rounds 1] [--chats 100] [--latency-ms 0,50]
 * `--latency-ms` adds that much Bot API latency to every getUpdates (both pollers alike) and runs
 * the comparison once per value: the local sandbox answers in ~1 ms, api.telegram.org in tens of
 * ms, and the durable poller's cost is a fixed database transaction per batch, so the ratio
 * depends on it.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Telegraf } from 'telegraf';
import { createBoss, freePort } from '../libs/db';
import { createPoller } from '../libs/ingress/poller';
import { silentLogger } from '../libs/observability/logger';
import { createSandboxClient } from '../libs/sandbox';
import { createBotApiClient } from '../libs/telegram';
import { benchDatabase } from './support/database';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

const UPDATES = arg('updates', 50_000);
const ROUNDS = arg('rounds', 1);
const CHATS = arg('chats', 100);
const LATENCIES = (() => {
  const i = process.argv.indexOf('--latency-ms');
  return i > 0 ? process.argv[i + 1].split(',').map(Number) : [0];
})();
let botSeq = 7_000_000;
const newToken = () => `${++botSeq}:bench-${botSeq}-token-not-secret-xx`;

async function startSandboxProcess(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const collectorPort = await freePort();
  const child = spawn(process.execPath, [path.resolve(__dirname, '../scripts/tg-relay-dev.js'), 'sandbox'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, SANDBOX_PORT: String(port), SANDBOX_COLLECTOR_PORT: String(collectorPort), LOG_LEVEL: 'warn' },
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

async function runDurable(url: string, latencyMs: number): Promise<{ rate: number; check: string }> {
  const token = newToken();
  const botId = token.split(':')[0];
  await inject(url, token, UPDATES, latencyMs);
  const db = await benchDatabase();
  const boss = createBoss(db.url, { max: 1 });
  const api = createBotApiClient({ token, apiRoot: url });
  const poller = createPoller({
    pool: db.pool,
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
  return { rate: (UPDATES / ms) * 1000, check: `inbox=${r.inbox} captures=${r.captures} jobs=${r.jobs} cursor=${r.next_offset}` };
}

async function main(): Promise<void> {
  const sandbox = await startSandboxProcess();
  try {
    console.log(`ingress benchmark: ${UPDATES} updates over ${CHATS} chats, ${ROUNDS} round(s); sandbox ${sandbox.url} in its own process`);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const summary: string[] = [];
    for (const latency of LATENCIES) {
      console.log(`\n-- getUpdates latency +${latency} ms --`);
      const tf: number[] = [];
      const du: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        tf.push(await runTelegraf(sandbox.url, latency));
        console.log(`  round ${i + 1}: telegraf launch() (non-durable): ${tf[i].toFixed(0)} updates/s`);
        const d = await runDurable(sandbox.url, latency);
        du.push(d.rate);
        console.log(`  round ${i + 1}: durable poller:                  ${d.rate.toFixed(0)} updates/s (${d.check})`);
      }
      const t = median(tf);
      const d = median(du);
      summary.push(
        `latency +${String(latency).padStart(3)} ms: telegraf (non-durable) ${t.toFixed(0).padStart(6)} updates/s, durable ${d.toFixed(0).padStart(6)} updates/s, ratio ${(d / t).toFixed(2)} (target ≥ 0.80)`,
      );
    }
    console.log(`\n${summary.join('\n')}`);
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
