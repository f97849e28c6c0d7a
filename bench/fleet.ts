/**
 * Many bots on one PostgreSQL (issue 29): `--bots` (1,000) registered bots, one `tg-relay poller`
 * and two `tg-relay worker` processes without TELEGRAM_BOT_TOKEN (they serve relay.bots), every bot
 * answering with test/fixtures/text-reply-bot.ts (REPLY_MODE=outbound). Measured in one run:
 *   1. the poller's memory per bot: VmRSS of the process with 0 bots registered, then with every
 *      bot's lease held (one long poll each, POLL_TIMEOUT=25s, LEASE_TTL default), after a settle;
 *   2. aggregate updates/s and replies/s: `--updates` spread over every bot (each update its own
 *      chat, so no per-chat limit paces it) after one warm-up update per bot (its first use in a
 *      worker: handlers loaded, getMe); injected → every one stored, → every reply at the Bot API;
 *   3. quiet bots' reply latency: `--quiet` bots get one message at a time, `--quiet-rate`/s in
 *      total; injected → the reply processed by the sandbox (its onCall record). Idle first, then
 *      while one noisy bot drains a `--noisy` backlog over 1,000 chats; p50/p99 of both and their
 *      ratio (target ≤ 2×);
 *   4. the engine's fleet dispatch claim (createInboxClaimStore with the fleet `where` and `fairBy`
 *      as libs/dispatch/fleet-kind.ts builds them, WORKER_BOT_CONCURRENCY=4) in this process, one
 *      claim of 16 in a rolled-back transaction, against `--claim-rows` pending rows of all bots vs
 *      the same rows of one bot, with the single-bot claim of 16 as the baseline.
 * The Bot API sandbox (limits off: tg-relay's own proactive limiter paces the sends) runs in this
 * process, as in bench/reply.ts, so injection and reply are timestamped on one clock; it shares the
 * 2 cores with the three processes and PostgreSQL, which is counted in every figure alike.
 */
const USAGE = `usage: npx tsx bench/fleet.ts [options]   (DATABASE_URL: server to use; unset = embedded PostgreSQL)
  --quick           a smaller run (200 bots, 1,000 updates, 20 quiet bots, 2,000-update noisy backlog)
  --bots N          registered bots (default 1000)
  --updates N       updates of the throughput burst, spread over every bot (default 5000)
  --quiet N         quiet bots of the latency section (default 50)
  --quiet-rate N    their messages per second in total (default 5)
  --idle-seconds N  how long the idle latency phase runs (default 20)
  --noisy N         the noisy bot's backlog (default 5000)
  --claim-rows N    pending inbox rows of the claim section (default 100000)
  --bot-concurrency N  the workers' WORKER_BOT_CONCURRENCY (default 4, the default)
  --help            this text`;

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { QUEUES, withTransaction, type Pool } from '../libs/db';
import type { Queryable } from '../libs/db/pool';
import { createInboxClaimStore } from '../libs/dispatch/dispatch-kind';
import type { Param } from '../libs/queue/claim-sql';
import { createFairClaims } from '../libs/queue/fair-claims';
import type { ClaimStore } from '../libs/queue/job-kind';
import { createBotApiSandbox, type BotApiSandbox, type CallRecord } from '../libs/sandbox';
import { exited } from '../test/support/cli';
import { FLEET_KEY_HEX, leaseOwners, registerBots, type FleetBot } from '../test/support/fleet-bots';
import { hasLog, ownedBy, startFleetPollerProcess, type PollerProcess } from '../test/support/ingress-processes';
import { benchDatabase } from './support/database';
import { log, resetInbox } from './support/dispatch-fleet';
import { fmt, loadAverage, median, pct, startBenchWorker } from './support/worker-process';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const QUICK = process.argv.includes('--quick');
function arg(name: string, full: number, quick: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return QUICK ? quick : full;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) {
    console.error(`--${name} takes a positive integer\n${USAGE}`);
    process.exit(2);
  }
  return v;
}
const BOTS = arg('bots', 1_000, 200);
const UPDATES = arg('updates', 5_000, 1_000);
const QUIET = arg('quiet', 50, 20);
const QUIET_RATE = arg('quiet-rate', 5, 5);
const IDLE_SECONDS = arg('idle-seconds', 20, 8);
const NOISY = arg('noisy', 5_000, 2_000);
const CLAIM_ROWS = arg('claim-rows', 100_000, 20_000);
if (QUIET + 1 > BOTS) {
  console.error(`--quiet must leave one bot for the noisy one (--bots ${BOTS})\n${USAGE}`);
  process.exit(2);
}
const HANDLERS = path.resolve(__dirname, '../test/fixtures/text-reply-bot.ts');
const NOISY_CHATS = 1_000;
/** The noisy bot's own send rate (a bot's settings): its backlog is paced by its chats, not its 30/s. */
const NOISY_RATE = '1000/1s';
const RATIO_TARGET = 2;
const CLAIM_LIMIT = 16;
/** WORKER_BOT_CONCURRENCY: one bot's share of a claim (4, its default, unless asked). */
const PER_BOT = arg('bot-concurrency', 4, 4);
const SETTLE_MS = 5_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Wall-clock ms with sub-ms resolution. */
const wallNow = () => performance.timeOrigin + performance.now();
const verdict = (ok: boolean) => (ok ? 'met' : 'NOT MET');

/** What the sandbox answered: each (bot, chat)'s first successful sendMessage, and counts per bot. */
class Replies {
  readonly at = new Map<string, number>();
  readonly perBot = new Map<string, number>();
  total = 0;
  onCall = (r: CallRecord) => {
    if (r.method !== 'sendMessage' || r.status !== 200) return;
    const key = `${r.bot_id}:${String(r.params.chat_id)}`;
    if (!this.at.has(key)) this.at.set(key, wallNow());
    this.perBot.set(String(r.bot_id), (this.perBot.get(String(r.bot_id)) ?? 0) + 1);
    this.total++;
  };
  of = (botId: string) => this.perBot.get(botId) ?? 0;
}

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs: number, procs: Proc[] = []) {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    const dead = procs.find((p) => p.child.exitCode !== null);
    if (dead) throw new Error(`${dead.name} exited while waiting for ${what}:\n${dead.output().slice(-4000)}`);
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs / 1000} s`);
    await sleep(20);
  }
}

interface Proc {
  name: string;
  child: { pid?: number; exitCode: number | null };
  output(): string;
}

/** VmRSS and VmHWM (peak) of a process, in kB, from /proc/<pid>/status. */
function memoryOf(pid: number): { rssKb: number; peakKb: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssKb: kb('VmRSS'), peakKb: kb('VmHWM') };
}

/** The median VmRSS over a settle: once per second for SETTLE_MS. */
async function settledRss(pid: number): Promise<number> {
  const xs: number[] = [];
  for (let t = 0; t < SETTLE_MS; t += 1_000) {
    await sleep(1_000);
    xs.push(memoryOf(pid).rssKb);
  }
  return median(xs);
}

const count = async (pool: Pool, sql: string, values: unknown[] = []) =>
  (await pool.query<{ n: number }>(sql, values)).rows[0].n;

// ---- 1. poller memory ------------------------------------------------------------------------------

interface Memory {
  zeroKb: number;
  fullKb: number;
  leasesSeconds: number;
}

/** The poller with 0 bots, then every bot registered and its lease held by it; RSS settled at both. */
async function pollerMemory(pool: Pool, poller: PollerProcess, registered: () => Promise<FleetBot[]>) {
  const proc: Proc = { name: 'the poller', child: poller, output: poller.output };
  await until('the fleet poller started', () => hasLog(poller, /^fleet ingress started/), 60_000, [proc]);
  const zeroKb = await settledRss(poller.pid!);
  log(`  0 bots: VmRSS ${fmt(zeroKb / 1024, 1)} MB (median over ${SETTLE_MS / 1000} s)`);
  const t0 = performance.now();
  const bots = await registered();
  const ids = bots.map((b) => b.botId);
  let held = 0;
  await until(
    `every lease held by the poller`,
    async () => {
      const owners = await leaseOwners(pool, ids);
      held = [...owners.values()].filter((o) => ownedBy(o, poller)).length;
      return held === ids.length;
    },
    180_000,
    [proc],
  );
  const leasesSeconds = (performance.now() - t0) / 1000;
  const fullKb = await settledRss(poller.pid!);
  log(
    `  ${fmt(BOTS)} bots: registered and every lease held ${fmt(leasesSeconds, 1)} s after the first registration; ` +
      `VmRSS ${fmt(fullKb / 1024, 1)} MB → ${fmt((fullKb - zeroKb) / BOTS, 1)} kB per bot`,
  );
  return { bots, memory: { zeroKb, fullKb, leasesSeconds } };
}

// ---- 2. aggregate updates/s and replies/s -------------------------------------------------------

interface Throughput {
  warmSeconds: number;
  storedPerS: number;
  repliedPerS: number;
  coldBuilds: number;
}

/** Injects `perBot(i)` updates into each bot, each to its own chat; resolves the seconds to stored and to replied. */
async function burst(
  ctx: Ctx,
  perBot: (i: number) => number,
  chatBase: number,
): Promise<{ stored: number; replied: number }> {
  const { pool, sandbox, replies, bots } = ctx;
  const total = bots.reduce((a, _b, i) => a + perBot(i), 0);
  const stored0 = await count(pool, 'select count(*)::int as n from relay.inbox');
  const replied0 = replies.total;
  const t0 = performance.now();
  for (const [i, b] of bots.entries()) sandbox.injectMessages(b.token, perBot(i), { chats: perBot(i), chatBase });
  let stored = 0;
  let replied = 0;
  await until(
    `${fmt(total)} updates stored and answered`,
    async () => {
      if (!stored && (await count(pool, 'select count(*)::int as n from relay.inbox')) >= stored0 + total)
        stored = (performance.now() - t0) / 1000;
      if (!replied && replies.total >= replied0 + total) replied = (performance.now() - t0) / 1000;
      return stored > 0 && replied > 0;
    },
    300_000,
    ctx.procs,
  );
  return { stored, replied };
}

const handlersLoaded = (ctx: Ctx) =>
  ctx.procs.reduce((a, p) => a + (p.output().match(/bot handlers loaded/g)?.length ?? 0), 0);

async function throughput(ctx: Ctx): Promise<Throughput> {
  const warm = await burst(ctx, () => 1, 10_000);
  const builtBefore = handlersLoaded(ctx);
  log(
    `  warm-up, 1 update per bot (its first in a worker: handlers loaded, getMe): every reply in ${fmt(warm.replied, 1)} s ` +
      `(${fmt(builtBefore)} bot runners built in the two workers)`,
  );
  const base = Math.floor(UPDATES / BOTS);
  const extra = UPDATES % BOTS;
  const run = await burst(ctx, (i) => base + (i < extra ? 1 : 0), 20_000);
  const coldBuilds = handlersLoaded(ctx) - builtBefore;
  const t: Throughput = {
    warmSeconds: warm.replied,
    storedPerS: UPDATES / run.stored,
    repliedPerS: UPDATES / run.replied,
    coldBuilds,
  };
  log(
    `  ${fmt(UPDATES)} updates over ${fmt(BOTS)} bots: all stored in ${fmt(run.stored, 2)} s (${fmt(t.storedPerS)} updates/s), ` +
      `all replies at the Bot API in ${fmt(run.replied, 2)} s (${fmt(t.repliedPerS)} replies/s); ` +
      `${fmt(coldBuilds)} bots met a worker for the first time during it`,
  );
  return t;
}

// ---- 3. quiet bots' latency, idle and beside a noisy bot -----------------------------------------

interface Latency {
  idle: number[];
  noisy: number[];
  drain: { stored: number; replied: number; samples: number };
}

let quietSeq = 0;

/** One message at a time to each bot, `rate`/s in total, bot after bot, while `more(i)` holds; then every reply awaited. */
async function quietLoop(ctx: Ctx, quiet: FleetBot[], rate: number, more: (i: number) => boolean): Promise<number[]> {
  const sent: { key: string; at: number }[] = [];
  const t0 = performance.now();
  for (let i = 0; more(i); i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await sleep(wait);
    const bot = quiet[i % quiet.length];
    const chat = 3_000_000 + quietSeq++;
    ctx.sandbox.injectMessage(bot.token, { chatId: chat, text: 'hi' });
    sent.push({ key: `${bot.botId}:${chat}`, at: wallNow() });
  }
  await until(`${sent.length} quiet replies`, () => sent.every((s) => ctx.replies.at.has(s.key)), 120_000, ctx.procs);
  return sent.map((s) => ctx.replies.at.get(s.key)! - s.at);
}

async function latency(ctx: Ctx, noisy: FleetBot, quiet: FleetBot[]): Promise<Latency> {
  // uncounted rounds first, so each of these bots has its runner in both workers (almost surely)
  for (let round = 0; round < 6; round++) await quietLoop(ctx, [noisy, ...quiet], 50, (i) => i <= quiet.length);
  const idleEnd = performance.now() + IDLE_SECONDS * 1000;
  const idle = await quietLoop(ctx, quiet, QUIET_RATE, () => performance.now() < idleEnd);
  const line = (name: string, xs: number[]) =>
    `  ${name}: ${xs.length} replies, p50 ${fmt(pct(xs, 50), 1)} ms, p99 ${fmt(pct(xs, 99), 1)} ms, max ${fmt(Math.max(...xs), 1)} ms`;
  log(line(`idle (${QUIET} quiet bots, ${QUIET_RATE}/s in total)`, idle));

  const noisyStored = () =>
    count(ctx.pool, 'select count(*)::int as n from relay.inbox where bot_id = $1', [noisy.botId]);
  const stored0 = await noisyStored();
  const replied0 = ctx.replies.of(noisy.botId);
  const t0 = performance.now();
  ctx.sandbox.injectMessages(noisy.token, NOISY, { chats: NOISY_CHATS, chatBase: 50_000, textPrefix: 'busy ' });
  let stored = 0;
  const watchStored = (async () => {
    while (!stored && performance.now() - t0 < 300_000) {
      if ((await noisyStored()) >= stored0 + NOISY) stored = (performance.now() - t0) / 1000;
      else await sleep(50);
    }
  })();
  const draining = () => ctx.replies.of(noisy.botId) < replied0 + NOISY && performance.now() - t0 < 300_000;
  const noisyLat = await quietLoop(ctx, quiet, QUIET_RATE, draining);
  await until('the noisy backlog answered', () => !draining(), 300_000, ctx.procs);
  await watchStored;
  const replied = (performance.now() - t0) / 1000;
  log(
    `  noisy bot: ${fmt(NOISY)} updates over ${fmt(NOISY_CHATS)} chats stored in ${fmt(stored, 1)} s, ` +
      `every reply sent in ${fmt(replied, 1)} s (its own rate ${NOISY_RATE})`,
  );
  log(line('beside the noisy bot', noisyLat));
  return { idle, noisy: noisyLat, drain: { stored, replied, samples: noisyLat.length } };
}

// ---- 4. the engine's fleet claim with 1,000 bots' rows ------------------------------------------

/**
 * `rows` pending updates with their dispatch jobs, dealt round-robin over `botIds` (ids interleave
 * the bots, as a fleet's arrivals do), 10 per chat in every bot, as ingress stores them.
 */
async function insertRows(pool: Pool, botIds: string[], rows: number): Promise<void> {
  const perChat = 10;
  const chatsPerBot = Math.max(1, Math.ceil(rows / botIds.length / perChat));
  await withTransaction(pool, async (c) => {
    await c.query(
      `with ids as (
         select g, ($3::text[])[1 + (g - 1) % $2] as bot, (g - 1) / $2 + 1 as n, gen_random_uuid() as job_id
           from generate_series(1, $1::bigint) g
       ), shaped as (
         select *, 1000000 + (n - 1) % $5 as chat from ids
       ), inserted as (
         insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, state, job_id)
         select bot, n, 'message', chat,
                jsonb_build_object('update_id', n, 'message', jsonb_build_object('message_id', n, 'date', 1700000000, 'text', 'bench',
                  'chat', jsonb_build_object('id', chat, 'type', 'private', 'first_name', 'U'),
                  'from', jsonb_build_object('id', chat, 'is_bot', false, 'first_name', 'U'))),
                'pending', job_id
           from shaped
         returning id, job_id
       )
       insert into tg_relay_boss.job (id, name, data, retry_limit, expire_in, keep_until, policy)
       select job_id, $4, jsonb_build_object('id', id), 0, interval '23 hours', now() + interval '30 days', 'standard' from inserted`,
      [rows, botIds.length, botIds, QUEUES.dispatch, chatsPerBot],
    );
  });
  await pool.query('vacuum analyze relay.inbox');
  await pool.query('vacuum analyze tg_relay_boss.job');
  await pool.query('checkpoint').catch(() => undefined); // the load's dirty pages flushed now, not while timed
}

/** The fleet worker's dispatch claim over `served`, as fleet-kind.ts builds it (nothing stays in flight: every claim is rolled back). */
function fleetStore(served: readonly string[]) {
  const fair = createFairClaims({ keys: () => served, perKey: PER_BOT });
  return createInboxClaimStore({
    ordered: true,
    fleet: { scope: (p: Param) => `c.bot_id = any(${p(() => served)}::text[])`, fairBy: fair.fairBy('bot_id') },
  });
}

interface ClaimTiming {
  p50: number;
  rows: number;
  plan: string[];
}

/** p50 of `reps` claims of CLAIM_LIMIT, each in a transaction rolled back; then one EXPLAIN ANALYZE of it. */
async function timeClaims(pool: Pool, store: ClaimStore<unknown, unknown>, reps = 60): Promise<ClaimTiming> {
  const c = await pool.connect();
  let seen: { text: string; values: unknown[] } | undefined;
  const spy = {
    query: (text: string, values: unknown[]) => ((seen = { text, values }), c.query(text, values)),
  } as unknown as Queryable;
  const ms: number[] = [];
  let rows = 0;
  try {
    for (let i = 0; i < reps + 5; i++) {
      await c.query('begin');
      const t0 = performance.now();
      const jobs = await store.claim(spy, { limit: CLAIM_LIMIT, workerId: 'bench', now: null, queue: QUEUES.dispatch });
      if (i >= 5) ms.push(performance.now() - t0); // the first 5 warm the cache
      rows = jobs.length;
      await c.query('rollback');
    }
    await c.query('begin');
    const plan = await c.query<{ 'QUERY PLAN': string }>(`explain (analyze, buffers) ${seen!.text}`, seen!.values);
    await c.query('rollback');
    const lines = plan.rows.map((r) => r['QUERY PLAN']);
    const wanted = lines.filter(
      (l, i) => i === 0 || /Function Scan on unnest|inbox_dispatch_due_idx|Execution Time/.test(l),
    );
    return { p50: pct(ms, 50), rows, plan: wanted.slice(0, 5).map((l) => l.trim()) };
  } finally {
    c.release();
  }
}

interface ClaimCost {
  many: ClaimTiming;
  single: ClaimTiming;
  oneServed: ClaimTiming;
  sparse: ClaimTiming;
}

async function claimCost(pool: Pool, botIds: string[]): Promise<ClaimCost> {
  const show = (name: string, t: ClaimTiming) => {
    log(`  ${name}: p50 ${fmt(t.p50, 2)} ms (${t.rows} rows claimed)`);
    for (const l of t.plan) log(`      ${l}`);
  };
  await resetInbox(pool);
  await insertRows(pool, botIds, CLAIM_ROWS);
  log(`  ${fmt(CLAIM_ROWS)} pending rows of ${fmt(botIds.length)} bots (${fmt(CLAIM_ROWS / botIds.length)} each):`);
  const many = await timeClaims(pool, fleetStore(botIds));
  show(`fleet claim of ${CLAIM_LIMIT}, every bot served`, many);

  const lone = botIds[0];
  await resetInbox(pool);
  await insertRows(pool, [lone], CLAIM_ROWS);
  log(`  the same ${fmt(CLAIM_ROWS)} rows, all of one bot:`);
  const single = await timeClaims(pool, createInboxClaimStore({ ordered: true, botId: lone }));
  show(`single-bot claim of ${CLAIM_LIMIT} (a worker with TELEGRAM_BOT_TOKEN)`, single);
  const oneServed = await timeClaims(pool, fleetStore([lone]));
  show(`fleet claim of ${CLAIM_LIMIT}, that bot alone served (capped at ${PER_BOT} per bot)`, oneServed);
  const sparse = await timeClaims(pool, fleetStore(botIds));
  show(`fleet claim of ${CLAIM_LIMIT}, every bot served, ${fmt(botIds.length - 1)} with nothing due`, sparse);
  await resetInbox(pool);
  return { many, single, oneServed, sparse };
}

// ---- the run ---------------------------------------------------------------------------------------

interface Ctx {
  pool: Pool;
  sandbox: BotApiSandbox;
  replies: Replies;
  bots: FleetBot[];
  procs: Proc[];
}

function summary(m: Memory, t: Throughput, l: Latency, c: ClaimCost): string[] {
  const ratio = (p: number) => pct(l.noisy, p) / pct(l.idle, p);
  return [
    `poller memory: ${fmt(m.zeroKb / 1024, 1)} MB with 0 bots, ${fmt(m.fullKb / 1024, 1)} MB polling ${fmt(BOTS)} → ` +
      `${fmt((m.fullKb - m.zeroKb) / BOTS, 1)} kB per bot (every lease held ${fmt(m.leasesSeconds, 1)} s after registering)`,
    `aggregate: ${fmt(t.storedPerS)} updates/s stored, ${fmt(t.repliedPerS)} replies/s at the Bot API ` +
      `(${fmt(UPDATES)} updates over ${fmt(BOTS)} bots, 1 poller + 2 workers; first update of every bot: ${fmt(t.warmSeconds, 1)} s)`,
    `quiet bots' replies: idle p50 ${fmt(pct(l.idle, 50), 1)} / p99 ${fmt(pct(l.idle, 99), 1)} ms, beside the noisy bot ` +
      `p50 ${fmt(pct(l.noisy, 50), 1)} / p99 ${fmt(pct(l.noisy, 99), 1)} ms → ${fmt(ratio(50), 2)}× / ${fmt(ratio(99), 2)}× ` +
      `(target ≤ ${RATIO_TARGET}×: p50 ${verdict(ratio(50) <= RATIO_TARGET)}, p99 ${verdict(ratio(99) <= RATIO_TARGET)}; ` +
      `${l.drain.samples} replies during a ${fmt(l.drain.replied, 1)} s drain)`,
    `claim of ${CLAIM_LIMIT} over ${fmt(CLAIM_ROWS)} rows: ${fmt(BOTS)} bots' rows ${fmt(c.many.p50, 2)} ms vs one bot's ` +
      `${fmt(c.single.p50, 2)} ms single-bot (${fmt(c.many.p50 / c.single.p50, 2)}×), fleet with one bot served ` +
      `${fmt(c.oneServed.p50, 2)} ms (${c.oneServed.rows} rows); one bot with rows of ${fmt(BOTS)} served ${fmt(c.sparse.p50, 2)} ms ` +
      `(${fmt(c.sparse.p50 / c.oneServed.p50, 1)}× that)`,
  ];
}

async function main(): Promise<void> {
  const loadStart = loadAverage();
  const db = await benchDatabase();
  const replies = new Replies();
  const sandbox = createBotApiSandbox({ limits: { enabled: false }, onCall: replies.onCall });
  const apiRoot = await sandbox.start();
  const procs: Proc[] = [];
  const stops: (() => Promise<void>)[] = [];
  try {
    log(
      `fleet: ${fmt(BOTS)} bots, one poller and two workers without a token, sandbox in this process; ` +
        `PostgreSQL ${process.env.DATABASE_URL ? 'at DATABASE_URL' : 'embedded'}; load average ${loadStart}`,
    );
    log('\n1. poller memory (VmRSS, POLL_TIMEOUT=25s)');
    const poller = startFleetPollerProcess({
      databaseUrl: db.url,
      apiRoot,
      tokenKeyHex: FLEET_KEY_HEX,
      leaseTtl: '10s',
      pollTimeout: '25s',
      extra: { POLLER_MAX_BOTS: String(BOTS) },
    });
    procs.push({ name: 'the poller', child: poller, output: poller.output });
    stops.push(async () => {
      poller.kill('SIGTERM');
      const killer = setTimeout(() => poller.kill('SIGKILL'), 30_000);
      await exited(poller);
      clearTimeout(killer);
    });
    const { bots, memory } = await pollerMemory(db.pool, poller, async () => {
      const registered = await registerBots(db.pool, BOTS, { handlers: HANDLERS });
      // the noisy bot's own send rate, set before its poller settles (a changed registration restarts it)
      await db.pool.query(
        `update relay.bots set settings = jsonb_build_object('OUTBOUND_RATE_PER_BOT', $2::text) where id = $1`,
        [registered[0].botId, NOISY_RATE],
      );
      return registered;
    });

    const workerEnv = {
      DATABASE_URL: db.url,
      TELEGRAM_API_ROOT: apiRoot,
      TOKEN_ENCRYPTION_KEY: FLEET_KEY_HEX,
      REPLY_MODE: 'outbound',
      WORKER_BOT_CONCURRENCY: String(PER_BOT),
    };
    const workers = await Promise.all([startBenchWorker(workerEnv), startBenchWorker(workerEnv)]);
    for (const [i, w] of workers.entries()) {
      let out = '';
      w.child.stdout?.on('data', (d) => (out += d));
      w.child.stderr?.on('data', (d) => (out += d));
      procs.push({ name: `worker ${i + 1}`, child: w.child, output: () => out });
      stops.push(() => w.stop());
    }
    const workerRss0 = workers.map((w) => memoryOf(w.child.pid!).rssKb);
    const ctx: Ctx = { pool: db.pool, sandbox, replies, bots, procs };

    log(
      `\n2. aggregate updates/s and replies/s (REPLY_MODE=outbound, WORKER_CONCURRENCY 16, WORKER_BOT_CONCURRENCY ${PER_BOT})`,
    );
    const t = await throughput(ctx);
    const workerRss = workers.map((w) => memoryOf(w.child.pid!).rssKb);
    log(
      `  workers' VmRSS: ${workerRss0.map((k) => fmt(k / 1024)).join(' / ')} MB started → ${workerRss.map((k) => fmt(k / 1024)).join(' / ')} MB ` +
        `serving ${fmt(BOTS)} bots; poller peak (VmHWM) ${fmt(memoryOf(poller.pid!).peakKb / 1024)} MB`,
    );

    log(`\n3. quiet bots' reply latency (injected → reply at the Bot API)`);
    const l = await latency(ctx, bots[0], bots.slice(1, 1 + QUIET));

    for (const stop of stops.splice(0).reverse()) await stop();
    log(`\n4. the engine's dispatch claim (in this process, claims of ${CLAIM_LIMIT} rolled back, p50 of 60)`);
    const c = await claimCost(
      db.pool,
      bots.map((b) => b.botId),
    );

    log(`\nsummary (load average ${loadStart} at the start, ${loadAverage()} at the end):`);
    for (const s of summary(memory, t, l, c)) log(`  ${s}`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await sandbox.stop();
    await db.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
