/**
 * The crash and fault soak: a fleet of real `tg-relay` processes — pollers, workers, admin —
 * against the in-process Bot API sandbox (Bot API faults, Telegram's rate limits, scripted terminal
 * chat errors) and collector (failing a share of captures), on a dedicated embedded PostgreSQL. While
 * user updates and outbound messages are fed in, a random poller or worker is SIGKILLed and restarted
 * every few seconds, and PostgreSQL itself is restarted. Then everything drains, the fleet stops with
 * SIGTERM, and `checkSoak` compares the database with what the sandbox and the collector recorded.
 *
 * `npm run soak` (bench/soak.ts) runs the full size; test/integration/soak/soak.test.ts a short one.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createPool, freePort, Pool } from '../../libs/db';
import { BotApiSandbox, Collector, createBotApiSandbox, createCollector } from '../../libs/sandbox';
import { runCli } from './cli';
import {
  BLOCKED_CHAT,
  CHAT_NOT_FOUND,
  checkSoak,
  expectedReplyRows,
  mediaReplies,
  MIGRATED_GROUP,
  MIGRATED_MESSAGES,
  MIGRATED_TO,
  OPS_CHAT,
  SOAK_TOKEN_SECRET,
  SoakReport,
  TERMINAL_PER_CHAT,
} from './soak-checks';
import { Fleet, Role } from './soak-fleet';
import { hostileText, POISON_DEFAULTS } from '../fixtures/soak-poison';
import { externalSoakPostgres, SoakPostgres, startEmbeddedSoakPostgres } from './soak-postgres';

export interface SoakOptions {
  /** User updates to inject, spread over `chats` private chats. */
  updates: number;
  chats: number;
  /** Outbound messages to enqueue (the scripted terminal/migrating ones included). */
  outbound: number;
  /** Share of the outbound messages enqueued through the admin API (POST /v1/messages); the rest through relay.enqueue_outbound. */
  adminShare: number;
  pollers: number;
  workers: number;
  /** How long the feeding is spread over; the chaos runs at least this long. */
  feedMs: number;
  /** A poller or worker is SIGKILLed and restarted every killEveryMs[0]..killEveryMs[1] ms. */
  killEveryMs: [number, number];
  /** The chaos goes on until at least this many kills were made. */
  minKills: number;
  /** PostgreSQL restarts during the chaos (spread evenly). */
  pgRestarts: number;
  /** Share of Bot API calls that fail (split evenly: 5xx, dropped before, dropped after processing). */
  botFaultRate: number;
  /** Share of collector calls that fail (unavailable, dropped, timed out, slow → duplicate). */
  collectorFailRate: number;
  /** Share of handler runs that throw (the update is retried). */
  handlerFailRate: number;
  /** About one update in echoEvery is echoed through the outbound relay (test/fixtures/soak-echo.ts). */
  echoEvery: number;
  /**
   * The poison variant (test/fixtures/soak-poison.ts): a share of the users (hostileUserShare
   * of the chats) send hostile text — NUL, lone surrogates, `C:\u0000`-looking text, RTL marks, 4096+
   * characters —, and about one handler call in poisonReplyEvery replies invalid content.
   */
  poison?: boolean;
  hostileUserShare?: number;
  poisonReplyEvery?: number;
  /**
   * Media replies (test/fixtures/soak-media.ts: photo uploads, albums, edits of a reply through its
   * placeholder); on by default in the poison variant, off in the plain one.
   */
  media?: boolean;
  /** Bound on the final drain. */
  drainTimeoutMs: number;
  staleAfter: string;
  seed: number;
  /** Keep the data directory and logs (always kept when an invariant fails). */
  keepData?: boolean;
  /** Where to put the data directory and logs (default: a temp directory). */
  dir?: string;
  /**
   * An external PostgreSQL server to run on (a database of its own is created there) instead of a
   * dedicated embedded one; restarted with `pgRestartCommand` (see soak-postgres.ts).
   */
  databaseUrl?: string;
  pgRestartCommand?: string;
  log?: (line: string) => void;
}

export const FULL_SOAK: Omit<SoakOptions, 'seed'> = {
  updates: 20_000,
  chats: 50,
  outbound: 3_000,
  adminShare: 0.1,
  pollers: 2,
  workers: 3,
  feedMs: 120_000,
  killEveryMs: [3_000, 6_000],
  minKills: 20,
  pgRestarts: 1,
  botFaultRate: 0.1,
  collectorFailRate: 0.2,
  handlerFailRate: 0.02,
  echoEvery: 10,
  drainTimeoutMs: 360_000,
  staleAfter: '5s',
};

export const SHORT_SOAK: Omit<SoakOptions, 'seed'> = {
  ...FULL_SOAK,
  updates: 1_500,
  chats: 20,
  outbound: 200,
  feedMs: 15_000,
  killEveryMs: [2_500, 4_000],
  minKills: 4,
  drainTimeoutMs: 75_000,
};

/**
 * The short poison soak (test/integration/soak/poison-soak.test.ts): smaller than the short soak, same
 * chaos. Its media replies more than double the sends; over 40 chats instead of 20 (Telegram's 1 message
 * a second per private chat is what bounds the drain) it stays about as long as before them, with the
 * same number of hostile-text updates (20% of the users send them).
 */
export const SHORT_POISON_SOAK: Omit<SoakOptions, 'seed'> = {
  ...SHORT_SOAK,
  poison: true,
  chats: 40,
  updates: 1_000,
  outbound: 120,
  feedMs: 12_000,
  minKills: 3,
};

/** How often the soak bot replies invalid content (0: not the poison variant). */
export function poisonEvery(options: Pick<SoakOptions, 'poison' | 'poisonReplyEvery'>): number {
  return options.poison ? (options.poisonReplyEvery ?? POISON_DEFAULTS.poisonReplyEvery) : 0;
}

const USER_CHAT_BASE = 5_001;
const ADMIN_TOKEN = 'soak-admin-token-0123456789';

export interface SoakContext {
  options: SoakOptions;
  token: string;
  botId: string;
  pool: Pool;
  sandbox: BotApiSandbox;
  collector: Collector;
  fleet: Fleet;
  userChats: number[];
  /** msg_ids expected to fail (scripted terminal chats). */
  expectedFailures: Set<string>;
  injected: { first: number; last: number; count: number };
  /** Poison variant: the chats of the hostile users, and the hostile text of each of their updates by update_id. */
  hostileChats: Set<number>;
  hostile: Map<number, string>;
  outboundEnqueued: number;
  pgRestartsDone: number;
  /** How PostgreSQL is restarted (embedded or external server). */
  pgDescribe: string;
  startedAt: number;
  phases: Record<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A small seeded PRNG so a run can be replayed (SOAK_SEED). */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), s | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Retries `fn` (database restarts, dropped connections) until it succeeds or `timeoutMs` passes. */
async function retrying<T>(what: string, fn: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${what}: ${(err as Error).message}`, { cause: err });
      await sleep(delay);
    }
  }
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const random = prng(options.seed);
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'tg-relay-soak-'));
  fs.mkdirSync(dir, { recursive: true });
  fs.chmodSync(dir, 0o755);
  const t0 = Date.now();
  const phases: Record<string, number> = {};
  const mark = (phase: string) => (phases[phase] = Date.now() - t0);
  log(`soak: seed ${options.seed}, data and logs in ${dir}`);

  let pg: SoakPostgres | undefined;
  let dbName = 'soak';
  let pool: Pool | undefined;
  let sandbox: BotApiSandbox | undefined;
  let collector: Collector | undefined;
  let fleet: Fleet | undefined;
  let report: SoakReport | undefined;
  try {
    // ---- PostgreSQL (dedicated, restartable on the same data directory and port) -----------------
    if (options.databaseUrl) {
      pg = externalSoakPostgres(options.databaseUrl, options.pgRestartCommand);
      dbName = `soak_${crypto.randomBytes(4).toString('hex')}`;
    } else {
      pg = await startEmbeddedSoakPostgres(dir);
    }
    log(`soak: PostgreSQL: ${pg.describe}; database ${dbName}`);
    const admin = new Client({ connectionString: pg.url });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    await admin.end();
    const dbUrl = Object.assign(new URL(pg.url), { pathname: `/${dbName}` }).toString();
    const migrate = await runCli(['migrate'], { DATABASE_URL: dbUrl }, { timeoutMs: 120_000 });
    if (migrate.code !== 0)
      throw new Error(`tg-relay migrate failed (${migrate.code}):\n${migrate.stderr}${migrate.stdout}`);
    pool = createPool(dbUrl, { max: 6, applicationName: 'tg-relay:soak' });
    pool.on('error', () => undefined);
    await pool.query(`create schema soak;
      create table soak.handler_runs (
        id bigserial primary key, chat_id bigint, update_id bigint not null, pid integer not null,
        flaked boolean not null, text_utf16 bytea, at timestamptz not null default clock_timestamp())`);
    mark('database ready');

    // ---- sandbox and collector (in this process: their records are the ground truth) ------------
    const botId = String(700_000_000 + Math.floor(random() * 99_999_999));
    const token = `${botId}:${SOAK_TOKEN_SECRET}`;
    sandbox = createBotApiSandbox({ seed: options.seed });
    await sandbox.start();
    collector = createCollector({ seed: options.seed + 1 });
    await collector.start();
    const share = options.botFaultRate / 3;
    sandbox.setFaults({ serverErrorRate: share, serverErrorStatus: 502, dropBeforeRate: share, dropAfterRate: share });
    // Telegram's limits (30/s per bot, 1/s per private chat, 20/min per group) are the sandbox's defaults.
    sandbox.scriptChatError(token, CHAT_NOT_FOUND, 'chat_not_found');
    sandbox.scriptChatError(token, BLOCKED_CHAT, 'blocked');
    sandbox.scriptChatError(token, MIGRATED_GROUP, { kind: 'migrated', migrateToChatId: MIGRATED_TO });
    const c = options.collectorFailRate / 4;
    collector.setFaults({
      unavailableRate: c,
      dropRate: c,
      timeoutRate: c,
      timeoutMs: 300,
      slowRate: c,
      slowMs: 1_500,
    });

    // ---- the fleet --------------------------------------------------------------------------------
    const adminPort = await freePort();
    const common = {
      DATABASE_URL: dbUrl,
      TELEGRAM_BOT_TOKEN: token,
      TELEGRAM_API_ROOT: sandbox.url,
      OPS_CHAT_ID: String(OPS_CHAT),
      SHUTDOWN_TIMEOUT: '5s',
    };
    const env = (role: Role): Record<string, string> => {
      if (role === 'poller') return { ...common, LEASE_TTL: '2s', POLL_TIMEOUT: '1s' };
      if (role === 'admin') return { ...common, ADMIN_TOKEN, ADMIN_PORT: String(adminPort), ADMIN_HOST: '127.0.0.1' };
      return {
        ...common,
        CAPTURE_URL: collector!.captureUrl,
        CAPTURE_TIMEOUT: '1s',
        BOT_HANDLERS: 'test/fixtures/soak-bot.ts',
        REPLY_MODE: 'outbound',
        HANDLER_TIMEOUT: '4s',
        OUTBOUND_SEND_TIMEOUT: '3s',
        STALE_AFTER: options.staleAfter,
        RETRY_BASE: '100ms',
        RETRY_CAP: '2s',
        RETRY_MAX_ATTEMPTS: '1000',
        WORKER_CONCURRENCY: '16',
        SOAK_DB_URL: dbUrl,
        SOAK_HANDLER_FAIL_RATE: String(options.handlerFailRate),
        SOAK_ECHO_EVERY: String(options.echoEvery),
        SOAK_POISON_EVERY: String(poisonEvery(options)),
        SOAK_MEDIA: mediaReplies(options) ? '1' : '0',
      };
    };
    fleet = new Fleet({ env, logDir: path.join(dir, 'logs') });
    const starting: Promise<void>[] = [fleet.start('admin', 'admin')];
    for (let i = 1; i <= options.pollers; i++) starting.push(fleet.start(`poller-${i}`, 'poller'));
    for (let i = 1; i <= options.workers; i++) starting.push(fleet.start(`worker-${i}`, 'worker'));
    await Promise.all(starting);
    mark('fleet up');
    log(
      `soak: fleet up (${options.pollers} pollers, ${options.workers} workers, admin) in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    );

    const userChats = Array.from({ length: options.chats }, (_, i) => USER_CHAT_BASE + i);
    const hostileUsers = options.poison
      ? Math.max(1, Math.ceil(options.chats * (options.hostileUserShare ?? POISON_DEFAULTS.hostileUserShare)))
      : 0;
    const ctx: SoakContext = {
      options,
      token,
      botId,
      pool,
      sandbox,
      collector,
      fleet,
      userChats,
      expectedFailures: new Set(),
      injected: { first: 0, last: 0, count: 0 },
      hostileChats: new Set(userChats.slice(0, hostileUsers)),
      hostile: new Map(),
      outboundEnqueued: 0,
      pgRestartsDone: 0,
      pgDescribe: pg.describe,
      startedAt: t0,
      phases,
    };

    // ---- feed and chaos, concurrently --------------------------------------------------------------
    let feeding = true;
    const feed = feedAll(ctx, adminPort).finally(() => {
      feeding = false;
      mark('fed');
    });
    const chaos = runChaos(
      ctx,
      random,
      () => feeding,
      async () => {
        await fleet!.allReady(); // no process is starting while the database goes away
        const t = Date.now();
        await pg!.restart();
        ctx.pgRestartsDone++;
        log(`soak: PostgreSQL restarted (down ${((Date.now() - t) / 1000).toFixed(1)} s)`);
      },
      log,
    );
    await Promise.all([feed, chaos]);
    await fleet.allReady();
    mark('chaos over');
    log(
      `soak: feeding and chaos over after ${((Date.now() - t0) / 1000).toFixed(0)} s (${fleet.kills.poller} poller and ${fleet.kills.worker} worker kills, ${ctx.pgRestartsDone} PostgreSQL restart(s)); draining`,
    );

    // ---- drain ---------------------------------------------------------------------------------
    const drained = await waitDrained(ctx, log);
    mark('drained');

    // ---- graceful stop of the whole fleet ----------------------------------------------------------
    const stops = await fleet.stopAll('SIGTERM');
    mark('stopped');
    report = await checkSoak(ctx, { drained, stops });
    report.dir = dir;
    return report;
  } finally {
    await fleet?.killAll().catch(() => undefined);
    await pool?.end().catch(() => undefined);
    await sandbox?.stop().catch(() => undefined);
    await collector?.stop().catch(() => undefined);
    const keep = options.keepData || !report || report.failures.length > 0;
    if (options.databaseUrl && pg && !keep) {
      const c = new Client({ connectionString: pg.url });
      await c
        .connect()
        .then(() => c.query(`drop database if exists ${dbName} with (force)`))
        .catch(() => undefined)
        .finally(() => c.end().catch(() => undefined));
    }
    await pg?.close().catch(() => undefined);
    if (!keep && !options.dir) fs.rmSync(dir, { recursive: true, force: true });
    else log(`soak: data and logs kept in ${dir}`);
  }
}

// ---- feeding ---------------------------------------------------------------------------------------

interface OutboundSpec {
  msg_id: string;
  chat_id: number;
  text: string;
}

/** The outbound messages of the run, in enqueue order: regular ones round-robin over the user chats, plus the scripted ones. */
function outboundPlan(ctx: SoakContext): OutboundSpec[] {
  const { options, userChats } = ctx;
  const special: OutboundSpec[] = [];
  for (let i = 0; i < TERMINAL_PER_CHAT; i++) {
    special.push({ msg_id: `soak-nf-${i}`, chat_id: CHAT_NOT_FOUND, text: `soak out nf-${i} (chat not found)` });
    special.push({ msg_id: `soak-bl-${i}`, chat_id: BLOCKED_CHAT, text: `soak out bl-${i} (blocked)` });
  }
  for (let i = 0; i < MIGRATED_MESSAGES; i++)
    special.push({ msg_id: `soak-mg-${i}`, chat_id: MIGRATED_GROUP, text: `soak out mg-${i} (migrated group)` });
  for (const s of special) if (s.chat_id !== MIGRATED_GROUP) ctx.expectedFailures.add(s.msg_id);
  const regular = Math.max(0, options.outbound - special.length);
  const plan: OutboundSpec[] = Array.from({ length: regular }, (_, i) => {
    const chat = userChats[i % userChats.length];
    return { msg_id: `soak-${i}`, chat_id: chat, text: `soak out ${i} to ${chat}` };
  });
  // the scripted ones go out early, spread over the first part of the run
  special.forEach((s, k) => plan.splice(Math.min(plan.length, 5 + k * 7), 0, s));
  return plan;
}

async function feedAll(ctx: SoakContext, adminPort: number): Promise<void> {
  const { options, sandbox, token, userChats } = ctx;
  const waveMs = 200;
  const waves = Math.max(1, Math.floor(options.feedMs / waveMs));
  const plan = outboundPlan(ctx);
  const updatesPerWave = Math.ceil(options.updates / waves);
  const outboundPerWave = Math.ceil(plan.length / waves);
  let injected = 0;
  let enqueued = 0;
  let adminCarry = 0;
  const start = Date.now();
  for (let w = 0; w < waves && (injected < options.updates || enqueued < plan.length); w++) {
    const n = Math.min(updatesPerWave, options.updates - injected);
    if (n > 0 && options.poison) {
      // one by one, round-robin over the chats: the hostile users' messages carry hostile text
      for (let i = 0; i < n; i++) {
        const chatId = userChats[(injected + i) % userChats.length];
        const text = ctx.hostileChats.has(chatId) ? hostileText(injected + i) : `w${w}-${i}`;
        const u = sandbox.injectMessage(token, { chatId, text });
        if (ctx.hostileChats.has(chatId)) ctx.hostile.set(u.update_id, text);
        if (injected + i === 0) ctx.injected.first = u.update_id;
        ctx.injected.last = u.update_id;
      }
      injected += n;
      ctx.injected.count = injected;
    } else if (n > 0) {
      const r = sandbox.injectMessages(token, n, { chats: userChats, textPrefix: `w${w}-` });
      if (injected === 0) ctx.injected.first = r.first_update_id!;
      ctx.injected.last = r.last_update_id!;
      injected += n;
      ctx.injected.count = injected;
    }
    const batch = plan.slice(enqueued, enqueued + outboundPerWave);
    if (batch.length) {
      adminCarry += batch.length * options.adminShare;
      const viaAdmin = Math.min(batch.length, Math.floor(adminCarry));
      adminCarry -= viaAdmin;
      const sqlPart = batch.slice(0, batch.length - viaAdmin);
      const adminPart = batch.slice(batch.length - viaAdmin);
      if (sqlPart.length) await retrying('enqueue through relay.enqueue_outbound', () => enqueueSql(ctx, sqlPart));
      for (const m of adminPart)
        await retrying(`enqueue ${m.msg_id} through the admin API`, () => enqueueAdmin(adminPort, m));
      enqueued += batch.length;
      ctx.outboundEnqueued = enqueued;
    }
    const due = start + (w + 1) * waveMs;
    if (due > Date.now()) await sleep(due - Date.now());
  }
}

/** Some service enqueues messages in its own transaction with the SQL function. */
async function enqueueSql(ctx: SoakContext, batch: OutboundSpec[]): Promise<void> {
  const client = await ctx.pool.connect();
  try {
    await client.query('begin');
    await client.query(
      `select r.* from unnest($1::text[], $2::text[], $3::text[]) with ordinality as m(msg_id, chat_id, text, n)
         cross join lateral relay.enqueue_outbound(m.msg_id, m.chat_id, m.text, bot_id => $4) r
        order by m.n`,
      [batch.map((m) => m.msg_id), batch.map((m) => String(m.chat_id)), batch.map((m) => m.text), ctx.botId],
    );
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

async function enqueueAdmin(port: number, m: OutboundSpec): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(m),
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 201 && res.status !== 200)
    throw new Error(`POST /v1/messages answered ${res.status}: ${await res.text()}`);
}

// ---- chaos -----------------------------------------------------------------------------------------

async function runChaos(
  ctx: SoakContext,
  random: () => number,
  feeding: () => boolean,
  restartPostgres: () => Promise<void>,
  log: (line: string) => void,
): Promise<void> {
  const { options, fleet } = ctx;
  const victims = [...fleet.names('poller'), ...fleet.names('worker')];
  const start = Date.now();
  // PostgreSQL restarts at evenly spread points of the feeding period
  const pgAt = Array.from(
    { length: options.pgRestarts },
    (_, i) => start + ((i + 1) * options.feedMs) / (options.pgRestarts + 1),
  );
  let kills = 0;
  for (;;) {
    const [lo, hi] = options.killEveryMs;
    await sleep(lo + Math.floor(random() * (hi - lo)));
    if (ctx.pgRestartsDone < pgAt.length && Date.now() >= pgAt[ctx.pgRestartsDone]) {
      await restartPostgres();
      continue;
    }
    const done =
      !feeding() &&
      kills >= options.minKills &&
      ctx.pgRestartsDone >= options.pgRestarts &&
      Date.now() - start >= options.feedMs;
    if (done) return;
    const victim = victims[Math.floor(random() * victims.length)];
    const t = Date.now();
    try {
      await fleet.restart(victim);
    } catch (err) {
      // recorded as a crash by the fleet; bring it back like an orchestrator would
      log(`soak: ${victim} did not come back up: ${(err as Error).message.split('\n')[0]}; starting it again`);
      await retrying(`start ${victim}`, () => fleet.start(victim, fleet.role(victim)), 120_000);
    }
    kills++;
    if (kills % 5 === 0 || kills <= 2) {
      log(
        `soak: kill ${kills}: ${victim} SIGKILLed and back up in ${((Date.now() - t) / 1000).toFixed(1)} s; ${ctx.injected.count} updates and ${ctx.outboundEnqueued} outbound fed`,
      );
    }
  }
}

// ---- drain -----------------------------------------------------------------------------------------

export interface DrainState {
  inbox: Record<string, number>;
  captures: Record<string, number>;
  outbound: Record<string, number>;
  replies: number;
  sandboxPending: number;
}

async function drainState(ctx: SoakContext): Promise<DrainState> {
  const { rows } = await ctx.pool.query(
    `select 'inbox' as t, state, count(*)::int as n from relay.inbox where bot_id = $1 group by state
     union all select 'captures', state, count(*)::int from relay.captures where bot_id = $1 group by state
     union all select 'outbound', state, count(*)::int from relay.outbound where bot_id = $1 group by state
     union all select 'replies', 'all', count(*)::int from relay.outbound where bot_id = $1 and kind = 'reply'`,
    [ctx.botId],
  );
  const s: DrainState = {
    inbox: {},
    captures: {},
    outbound: {},
    replies: 0,
    sandboxPending: ctx.sandbox.pendingCount(ctx.token),
  };
  for (const r of rows) {
    if (r.t === 'replies') s.replies = r.n;
    else s[r.t as 'inbox' | 'captures' | 'outbound'][r.state] = r.n;
  }
  return s;
}

const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);

function isDrained(ctx: SoakContext, s: DrainState): boolean {
  const n = ctx.injected.count;
  const open = (o: Record<string, number>) => (o.pending ?? 0) + (o.delivering ?? 0);
  return (
    s.sandboxPending === 0 &&
    sum(s.inbox) === n &&
    (s.inbox.pending ?? 0) === 0 &&
    sum(s.captures) === n &&
    open(s.captures) === 0 &&
    s.replies === expectedReplyRows(ctx) &&
    open(s.outbound) === 0
  );
}

async function waitDrained(
  ctx: SoakContext,
  log: (line: string) => void,
): Promise<{ ok: boolean; ms: number; last: DrainState | null }> {
  const t = Date.now();
  let last: DrainState | null = null;
  let lastLog = Date.now();
  while (Date.now() - t < ctx.options.drainTimeoutMs) {
    try {
      last = await drainState(ctx);
      if (isDrained(ctx, last)) return { ok: true, ms: Date.now() - t, last };
    } catch {
      // the database may be coming back
    }
    if (Date.now() - lastLog > 15_000) {
      lastLog = Date.now();
      log(`soak: draining… ${JSON.stringify(last)}`);
    }
    await sleep(250);
  }
  return { ok: false, ms: Date.now() - t, last };
}

export function newSeed(): number {
  return crypto.randomInt(1, 2 ** 31 - 1);
}
