/**
 * Reply latency where a person waits: `--users` users (100) each send one message, `--rate` per second
 * in total (10), into the Bot API sandbox; the bot echoes each one. Measured, in the same run on the
 * same sandbox (in this process, so both ends are timestamped on one clock):
 *   1. plain telegraf (its own `bot.launch()` polling, the same echo handler, its own process);
 *   2. tg-relay as a user runs it with default settings: `tg-relay poller` + `tg-relay worker`
 *      (examples/echo-bot.ts, REPLY_MODE=outbound) as two processes, and `tg-relay start` (one
 *      process with both) — `--modes split,start` picks them.
 * Latency = the user's message accepted by the sandbox (injectMessage returned) → the bot's
 * sendMessage processed by the sandbox (its onCall record). Prints p50/p90/p99, the ratio to telegraf
 * and the targets (p50 and p90 each ≤ 3× telegraf's, p99 ≤ 40 ms) as met / NOT MET, then where a
 * relayed reply's time goes, from the rows' own timestamps (see docs/dispatch.md "Reply latency").
 * A few warm-up messages (`--warmup`, to other chats) precede each measurement and are not counted.
 */
const USAGE = `usage: npx tsx bench/reply.ts [options]   (DATABASE_URL: server to use; unset = embedded PostgreSQL)
  --users N     users, one message each (default 100)
  --rate N      messages per second in total (default 10)
  --warmup N    uncounted messages first (default 10)
  --modes LIST  relay runs: split (poller + worker processes), start (one process); default split,start
  --help        this text`;

import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Pool } from '../libs/db';
import { createBotApiSandbox, type BotApiSandbox } from '../libs/sandbox';
import { exited, startCli } from '../test/support/cli';
import { benchDatabase } from './support/database';
import { fmt, loadAverage, median, pct } from './support/worker-process';

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
const USERS = Math.max(1, arg('users', 100));
const RATE = Math.max(1, arg('rate', 10));
const WARMUP = arg('warmup', 10);
const MODES = (() => {
  const i = process.argv.indexOf('--modes');
  const v = i > 0 ? process.argv[i + 1].split(',') : ['split', 'start'];
  if (v.some((m) => m !== 'split' && m !== 'start')) usageError('--modes takes split and/or start');
  return v as ('split' | 'start')[];
})();
const RATIO_TARGET = 3;
const P99_TARGET_MS = 40;
const ROOT = path.resolve(__dirname, '..');

let botSeq = 7_100_000;
const newToken = () => `${++botSeq}:bench-reply-${botSeq}-token-not-secret`;
const log = (s: string) => process.stdout.write(`${s}\n`);
/** Wall-clock ms with sub-ms resolution: comparable to PostgreSQL's timestamps on this host. */
const wallNow = () => performance.timeOrigin + performance.now();

/** What the sandbox saw, per bot: when each chat's reply and each getUpdates answer were processed. */
class Watch {
  readonly replies = new Map<string, Map<number, number>>();
  readonly polls = new Map<string, number[]>();
  onCall = (r: { bot_id: number; method: string; params: Record<string, unknown>; status: number }) => {
    const bot = String(r.bot_id);
    const at = wallNow();
    if (r.method === 'getUpdates') (this.polls.get(bot) ?? this.polls.set(bot, []).get(bot)!).push(at);
    else if (r.method === 'sendMessage' && r.status === 200) {
      const chats = this.replies.get(bot) ?? this.replies.set(bot, new Map()).get(bot)!;
      const chat = Number(r.params.chat_id);
      if (!chats.has(chat)) chats.set(chat, at);
    }
  };
}

interface Run {
  latencies: number[];
  /** chat → when its message was accepted (wall ms). */
  sentAt: Map<number, number>;
}

/** Injects the warm-up and then the measured users at RATE/s and waits for every reply. */
async function drive(sb: BotApiSandbox, watch: Watch, token: string): Promise<Run> {
  const bot = token.split(':')[0];
  const waitReply = async (chat: number, deadlineMs: number) => {
    while (!watch.replies.get(bot)?.has(chat)) {
      if (performance.now() > deadlineMs) throw new Error(`no reply to chat ${chat}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  for (let i = 0; i < WARMUP; i++) {
    const chat = 900_000 + i;
    sb.injectMessage(token, { chatId: chat, text: `warm-up ${i}` });
    await waitReply(chat, performance.now() + 30_000);
  }
  const sentAt = new Map<number, number>();
  const t0 = performance.now();
  for (let i = 0; i < USERS; i++) {
    const wait = t0 + (i * 1000) / RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const chat = 1_000_001 + i;
    sb.injectMessage(token, { chatId: chat, text: `hello from user ${i}` });
    sentAt.set(chat, wallNow());
  }
  const deadline = performance.now() + 60_000;
  for (const chat of sentAt.keys()) await waitReply(chat, deadline);
  const replies = watch.replies.get(bot)!;
  return { sentAt, latencies: [...sentAt].map(([chat, at]) => replies.get(chat)! - at) };
}

const TELEGRAF_ECHO = `
const { Telegraf } = require('telegraf');
const bot = new Telegraf(process.env.TOKEN, { telegram: { apiRoot: process.env.API_ROOT } });
bot.on('text', (ctx) => ctx.reply(ctx.message.text));
bot.launch({ dropPendingUpdates: false }).catch((e) => { console.error(e); process.exit(1); });
process.once('SIGTERM', () => { bot.stop('SIGTERM'); setTimeout(() => process.exit(0), 200); });
`;

async function untilPolling(watch: Watch, token: string, procs: (ChildProcess & { output?: () => string })[]) {
  const bot = token.split(':')[0];
  const deadline = Date.now() + 90_000;
  while ((watch.polls.get(bot)?.length ?? 0) === 0) {
    const dead = procs.find((p) => p.exitCode !== null);
    if (dead) throw new Error(`a process exited:\n${dead.output?.() ?? ''}`);
    if (Date.now() > deadline) throw new Error('nothing polled the sandbox');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function runTelegraf(sb: BotApiSandbox, watch: Watch): Promise<Run> {
  const token = newToken();
  const child = spawn(process.execPath, ['-e', TELEGRAF_ECHO], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TOKEN: token, API_ROOT: sb.url },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await untilPolling(watch, token, [child]);
    return await drive(sb, watch, token);
  } finally {
    child.kill('SIGTERM');
    await exited(child);
  }
}

async function runRelay(sb: BotApiSandbox, watch: Watch, mode: 'split' | 'start') {
  const token = newToken();
  const db = await benchDatabase();
  const env = {
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: token,
    TELEGRAM_API_ROOT: sb.url,
    BOT_HANDLERS: 'examples/echo-bot.ts',
    REPLY_MODE: 'outbound',
    LOG_LEVEL: 'warn',
  };
  const procs =
    mode === 'split'
      ? [startCli(['poller'], env), startCli(['worker'], env)]
      : [startCli(['start'], { ...env, ADMIN_PORT: '0' })];
  try {
    await untilPolling(watch, token, procs);
    const run = await drive(sb, watch, token);
    return { ...run, breakdown: await breakdown(db.pool, watch, token, run), units: await unitCosts(db.pool) };
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(procs.map((p) => exited(p)));
    await db.close();
  }
}

/** Hops of one relayed reply, each the median over the measured users (ms). */
interface Hop {
  name: string;
  ms: number[];
}

/**
 * Where each reply's time went, from the timestamps the rows already carry: relay.inbox received_at
 * (the poller's transaction start) and started_at (the dispatch claim), the inbox attempt's
 * started/finished (the handler, taken by the executor), relay.outbound created_at (the outcome
 * transaction's start) and started_at (the outbound claim: the same instant when the reply was
 * claimed in that transaction), the outbound attempt's start; and the sandbox's own: message
 * accepted, getUpdates answered, sendMessage processed. Also how many replies were claimed in
 * their outcome transaction.
 */
async function breakdown(
  pool: Pool,
  watch: Watch,
  token: string,
  run: Run,
): Promise<{ hops: Hop[]; handedOff: number }> {
  const bot = token.split(':')[0];
  const { rows } = await pool.query(
    `select i.chat_id::bigint as chat,
            extract(epoch from i.received_at) * 1000 as received,
            extract(epoch from i.started_at) * 1000 as inbox_claimed,
            extract(epoch from ia.started_at) * 1000 as handler_start,
            extract(epoch from ia.finished_at) * 1000 as handler_end,
            extract(epoch from o.created_at) * 1000 as settle_start,
            extract(epoch from o.started_at) * 1000 as outbound_claimed,
            extract(epoch from oa.started_at) * 1000 as send_start
       from relay.inbox i
       join relay.attempts ia on ia.subject = 'inbox' and ia.subject_id = i.id
       join relay.outbound o on o.source_update_id = i.update_id
       join relay.attempts oa on oa.subject = 'outbound' and oa.subject_id = o.id
      where i.chat_id = any($1::bigint[])`,
    [[...run.sentAt.keys()]],
  );
  const polls = (watch.polls.get(bot) ?? []).slice().sort((a, b) => a - b);
  const replies = watch.replies.get(bot)!;
  const hops: Hop[] = [
    'poll wait (accepted → getUpdates answered)',
    'ingress (answered → batch transaction begun)',
    'ingress commit + dispatch wake + claim',
    'claim → handler start',
    'handler (echo, relayed reply recorded)',
    'settle (handler end → outcome transaction begun)',
    'outcome transaction + commit → send start',
    'send (→ sendMessage processed at the Bot API)',
  ].map((name) => ({ name, ms: [] }));
  for (const r of rows) {
    const accepted = run.sentAt.get(Number(r.chat))!;
    const answered = polls.find((t) => t >= accepted) ?? Number(r.received);
    const points = [
      accepted,
      answered,
      Number(r.received),
      Number(r.inbox_claimed),
      Number(r.handler_start),
      Number(r.handler_end),
      Number(r.settle_start),
      Number(r.send_start),
      replies.get(Number(r.chat))!,
    ];
    for (let k = 0; k < hops.length; k++) hops[k].ms.push(points[k + 1] - points[k]);
  }
  const handedOff = rows.filter((r) => Number(r.outbound_claimed) === Number(r.settle_start)).length;
  return { hops, handedOff };
}

/**
 * This server's unit costs, measured in the run: a bare round trip, and a durable commit (BEGIN, a
 * one-row insert, COMMIT: the WAL flush every committed write waits for with synchronous_commit=on).
 */
async function unitCosts(pool: Pool): Promise<{ roundTripMs: number; commitMs: number }> {
  const c = await pool.connect();
  try {
    await c.query('create table if not exists bench_reply_floor (x int)');
    const rt: number[] = [];
    const commit: number[] = [];
    for (let i = 0; i < 100; i++) {
      let t = performance.now();
      await c.query('select 1');
      rt.push(performance.now() - t);
      t = performance.now();
      await c.query('begin');
      await c.query('insert into bench_reply_floor values (1)');
      await c.query('commit');
      commit.push(performance.now() - t);
    }
    await c.query('drop table bench_reply_floor');
    return { roundTripMs: median(rt), commitMs: median(commit) };
  } finally {
    c.release();
  }
}

/**
 * The durable commits a relayed reply waits for before its sendMessage leaves (docs/dispatch.md);
 * the rate-limit reservation commits too, without waiting for the flush.
 */
const COMMITS_BEFORE_SEND = ['ingress batch', 'dispatch claim', 'outcome (handled mark, reply rows and their claim)'];

const verdict = (ok: boolean) => (ok ? 'met' : 'NOT MET');
const line = (name: string, xs: number[]) =>
  `${name.padEnd(28)} p50 ${fmt(pct(xs, 50), 1).padStart(6)} ms   p90 ${fmt(pct(xs, 90), 1).padStart(6)} ms   p99 ${fmt(pct(xs, 99), 1).padStart(6)} ms   max ${fmt(Math.max(...xs), 1).padStart(6)} ms`;

async function main(): Promise<void> {
  const watch = new Watch();
  const sb = createBotApiSandbox({ port: 0, onCall: watch.onCall });
  await sb.start();
  const loadStart = loadAverage();
  try {
    log(
      `reply latency: ${USERS} users × 1 message at ${RATE}/s (after ${WARMUP} warm-up), echo handler, sandbox ${sb.url}; ` +
        `load average ${loadStart} (${os.cpus().length} cores)`,
    );
    const telegraf = await runTelegraf(sb, watch);
    log(line('telegraf launch()', telegraf.latencies));
    const summary: string[] = [];
    for (const mode of MODES) {
      const r = await runRelay(sb, watch, mode);
      const name = mode === 'split' ? 'tg-relay poller + worker' : 'tg-relay start';
      log(line(name, r.latencies));
      const ratio = (p: number) => pct(r.latencies, p) / pct(telegraf.latencies, p);
      summary.push(
        `${name}: p50 ${fmt(ratio(50), 1)}× telegraf (target ≤ ${RATIO_TARGET}×: ${verdict(ratio(50) <= RATIO_TARGET)}), ` +
          `p90 ${fmt(ratio(90), 1)}× (target ≤ ${RATIO_TARGET}×: ${verdict(ratio(90) <= RATIO_TARGET)}), ` +
          `p99 ${fmt(pct(r.latencies, 99), 1)} ms (target ≤ ${P99_TARGET_MS} ms: ${verdict(pct(r.latencies, 99) <= P99_TARGET_MS)})`,
      );
      const { hops, handedOff } = r.breakdown;
      log(`  where a reply's time goes (${name}, median / p90 of ${hops[0].ms.length} replies):`);
      for (const h of hops)
        log(`    ${h.name.padEnd(50)} ${fmt(median(h.ms), 1).padStart(6)} ms ${fmt(pct(h.ms, 90), 1).padStart(6)} ms`);
      const { roundTripMs, commitMs } = r.units;
      log(
        `  floor: ${COMMITS_BEFORE_SEND.length} durable commits before the send (${COMMITS_BEFORE_SEND.join(', ')}) × ` +
          `${fmt(commitMs, 2)} ms per commit on this server (round trip ${fmt(roundTripMs, 2)} ms) = ` +
          `${fmt(COMMITS_BEFORE_SEND.length * commitMs, 1)} ms, against a p50 target of ${fmt(RATIO_TARGET * pct(telegraf.latencies, 50), 1)} ms`,
      );
      log(`  replies claimed in their outcome transaction: ${handedOff} of ${hops[0].ms.length}`);
    }
    log(`\n${summary.join('\n')}\nload average: ${loadStart} at the start, ${loadAverage()} at the end`);
  } finally {
    await sb.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
