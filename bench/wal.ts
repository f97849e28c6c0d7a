/**
 * WAL per update: what one Telegram update costs the database's write-ahead log, the figure that
 * says how many updates/s one PostgreSQL cluster (and its replicas, backups and disk) can carry
 * (docs/scaling.md). `pg_wal_lsn_diff` of `pg_current_wal_lsn()` around each stage, run one after
 * the other on the same database so each stage's WAL is its own:
 *   (a) ingress: the real poller (createPoller, as bench/ingress.ts runs it) drains N updates from
 *       the Bot API sandbox: inbox rows, captures, their ledger jobs and the cursor, per batch;
 *   (b) dispatch: the worker engine with the update.dispatch kind as `tg-relay worker` composes it
 *       (examples/echo-bot.ts, REPLY_MODE=outbound): every update handled, its echo an outbound row;
 *   (c) sends: the engine with the outbound.send kind sends those N replies to the sandbox
 *       (proactive rate limiting, its limits raised so the run is not paced at 30 msg/s);
 *   (d) capture delivery: the engine with the capture kind delivers the N captures to the sandbox
 *       collector (only where CAPTURE_URL is set).
 * The engine runs in this process with one kind at a time: a `tg-relay worker` process runs every
 * kind at once, which would mix (b), (c) and (d). A baseline measured in the same run: N single-row
 * inserts (one transaction each) of the same update JSON into a scratch table with a primary key.
 * Runs on DATABASE_URL if set, else on an embedded PostgreSQL of its own: WAL is cluster-wide, so
 * on a shared server other databases' writes are counted too.
 */
const USAGE = `usage: npx tsx bench/wal.ts [options]   (DATABASE_URL: server to use; unset = embedded PostgreSQL, recommended)
  --updates N   updates through every stage (default 2000)
  --chats N     private chats the updates come from (default 500)
  --help        this text`;

import { performance } from 'node:perf_hooks';
import { loadConfig } from '../libs/config';
import { createBoss, type Pool } from '../libs/db';
import { createCaptureKind } from '../libs/captures/deliver';
import { createDispatchKindFromConfig } from '../libs/dispatch/worker-kind';
import { createPoller } from '../libs/ingress/poller';
import { silentLogger } from '../libs/observability/logger';
import { createOutboundKindFromConfig } from '../libs/outbound/worker-kind';
import { createWorker, type AnyJobKind } from '../libs/queue';
import { createBotApiSandbox, createCollector } from '../libs/sandbox';
import { createBotApiClient } from '../libs/telegram';
import { benchDatabase } from './support/database';
import { messageUpdate } from './support/updates';
import { fmt, loadAverage } from './support/worker-process';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v < 1) {
    console.error(`--${name} takes a positive integer\n${USAGE}`);
    process.exit(2);
  }
  return v;
}
if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
const UPDATES = arg('updates', 2_000);
const CHATS = arg('chats', 500);
const BOT_ID = '7100000001';
const TOKEN = `${BOT_ID}:bench-wal-token-not-a-secret-xxxxx`;
const log = (s: string) => process.stdout.write(`${s}\n`);

async function lsn(pool: Pool): Promise<string> {
  return (await pool.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn')).rows[0].lsn;
}

interface Stage {
  name: string;
  bytes: number;
  /** Of `bytes`, full-page images (pg_walinspect), or null where the extension is not available. */
  fpiBytes: number | null;
  seconds: number;
  check: string;
}

/** WAL between two LSNs, and the full-page images in it when pg_walinspect can read that range. */
async function walBetween(pool: Pool, from: string, to: string): Promise<{ bytes: number; fpiBytes: number | null }> {
  const { rows } = await pool.query<{ bytes: string }>('select pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn) as bytes', [
    from,
    to,
  ]);
  let fpiBytes: number | null = null;
  try {
    const fpi = await pool.query<{ fpi: string | null }>(
      'select sum(fpi_size)::bigint as fpi from pg_get_wal_stats($1::pg_lsn, $2::pg_lsn)',
      [from, to],
    );
    fpiBytes = Number(fpi.rows[0].fpi ?? 0);
  } catch {
    // no pg_walinspect (not installed, or not a superuser): the total stands alone
  }
  return { bytes: Number(rows[0].bytes), fpiBytes };
}

/** Runs `body` and returns the WAL the cluster wrote meanwhile. */
async function stage(pool: Pool, name: string, body: () => Promise<string>): Promise<Stage> {
  const from = await lsn(pool);
  const t0 = performance.now();
  const check = await body();
  const seconds = (performance.now() - t0) / 1000;
  const to = await lsn(pool);
  return { name, ...(await walBetween(pool, from, to)), seconds, check };
}

async function until(pool: Pool, what: string, sql: string, n: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>(sql);
    if (rows[0].n >= n) return;
    if (Date.now() > deadline) throw new Error(`${what}: ${rows[0].n} of ${n} after 2 minutes`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The worker engine with one job kind, until `done` holds; then stopped and the kind closed. */
async function withEngine(db: { url: string; pool: Pool }, kind: AnyJobKind, done: () => Promise<void>): Promise<void> {
  const boss = createBoss(db.url, { max: 1 });
  const worker = createWorker({
    pool: db.pool,
    boss,
    logger: silentLogger(),
    databaseUrl: db.url,
    kinds: [kind],
    config: { concurrency: 16, staleAfterMs: 30_000, retry: { baseMs: 1_000, capMs: 300_000, maxAttempts: 12 } },
  });
  await worker.start();
  try {
    await done();
  } finally {
    await worker.stop({ timeoutMs: 10_000 });
    await kind.close?.();
  }
}

/** N single-row inserts of the update JSON, one transaction each: what any durable write of an update costs at least. */
async function baseline(pool: Pool): Promise<Stage> {
  await pool.query('create table wal_baseline (id bigserial primary key, payload jsonb not null)');
  const client = await pool.connect();
  try {
    return await stage(pool, 'baseline: single-row insert of the update JSON (one transaction each)', async () => {
      for (let i = 1; i <= UPDATES; i++)
        await client.query('insert into wal_baseline (payload) values ($1)', [messageUpdate(i, CHATS)]);
      return `${fmt(UPDATES)} rows`;
    });
  } finally {
    client.release();
  }
}

async function ingress(db: { url: string; pool: Pool }, apiRoot: string): Promise<Stage> {
  const boss = createBoss(db.url, { max: 1 });
  const api = createBotApiClient({ token: TOKEN, apiRoot });
  const poller = createPoller({
    pool: db.pool,
    boss,
    api,
    botId: BOT_ID,
    owner: 'bench-wal',
    logger: silentLogger(),
    leaseTtlMs: 10_000,
    pollTimeoutMs: 25_000,
    decodePolicy: 'stop',
    allowedChatIds: [],
    deleteWebhookOnAcquire: false,
  });
  try {
    return await stage(db.pool, '(a) ingress: poller stores the updates', async () => {
      poller.start();
      while (poller.status().updates < UPDATES) await new Promise((r) => setTimeout(r, 5));
      await poller.stop();
      const { rows } = await db.pool.query(
        `select (select count(*) from relay.inbox)::int as inbox, (select count(*) from relay.captures)::int as captures,
                (select count(*) from tg_relay_boss.job)::int as jobs`,
      );
      return `inbox=${rows[0].inbox} captures=${rows[0].captures} ledger jobs=${rows[0].jobs}`;
    });
  } finally {
    await poller.stop();
    api.close();
  }
}

async function main(): Promise<void> {
  const db = await benchDatabase();
  // the sandbox's own limits off: the worker's proactive limiter (raised below) paces the sends
  const sandbox = createBotApiSandbox({ limits: { enabled: false } });
  const apiRoot = await sandbox.start();
  const collector = createCollector();
  await collector.start();
  const config = loadConfig({
    DATABASE_URL: db.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: apiRoot,
    BOT_HANDLERS: 'examples/echo-bot.ts',
    REPLY_MODE: 'outbound',
    OUTBOUND_RATE_PER_BOT: '100000/1s',
    OUTBOUND_RATE_PER_CHAT: '100000/1s',
  });
  const logger = silentLogger();
  try {
    const server = (await db.pool.query<{ v: string }>(`select current_setting('server_version') as v`)).rows[0].v;
    await db.pool.query('create extension if not exists pg_walinspect').catch(() => undefined);
    log(
      `WAL per update: ${fmt(UPDATES)} updates over ${fmt(CHATS)} chats, PostgreSQL ${server}` +
        `${process.env.DATABASE_URL ? ' at DATABASE_URL (cluster-wide WAL: other databases there are counted too)' : ' (embedded, this run only)'}; load average ${loadAverage()}`,
    );
    // a checkpoint first: no stage pays full-page images for pages written before the run
    await db.pool
      .query('checkpoint')
      .catch(() => log('(no CHECKPOINT privilege: the first stage may carry full-page images)'));
    sandbox.injectMessages(TOKEN, UPDATES, { chats: CHATS });
    const stages: Stage[] = [];
    stages.push(await ingress(db, apiRoot));

    const dispatchKind = await createDispatchKindFromConfig(config, { logger, pool: db.pool });
    stages.push(
      await stage(db.pool, '(b) dispatch: echo handler, reply as an outbound row', async () => {
        await withEngine(db, dispatchKind, () =>
          until(db.pool, 'dispatch', `select count(*)::int as n from relay.inbox where state = 'handled'`, UPDATES),
        );
        const { rows } = await db.pool.query(`select count(*)::int as n from relay.outbound`);
        return `handled=${UPDATES} outbound rows=${rows[0].n}`;
      }),
    );

    const outboundKind = await createOutboundKindFromConfig(config, { pool: db.pool, logger, token: TOKEN });
    stages.push(
      await stage(db.pool, '(c) sends: the replies sent to the Bot API', async () => {
        await withEngine(db, outboundKind, () =>
          until(db.pool, 'sends', `select count(*)::int as n from relay.outbound where state = 'delivered'`, UPDATES),
        );
        return `delivered=${UPDATES} at the Bot API: ${sandbox.sent(TOKEN).length}`;
      }),
    );

    const captureKind = createCaptureKind({ url: collector.captureUrl, timeoutMs: 10_000, opsChatId: null });
    const captures = await stage(db.pool, '(d) capture delivery to CAPTURE_URL', async () => {
      await withEngine(db, captureKind, () =>
        until(db.pool, 'captures', `select count(*)::int as n from relay.captures where state = 'delivered'`, UPDATES),
      );
      return `delivered=${UPDATES} at the collector: ${collector.received().length}`;
    });
    const base = await baseline(db.pool);

    const per = (b: number) => b / UPDATES;
    const row = (s: Pick<Stage, 'name' | 'bytes' | 'fpiBytes'> & Partial<Stage>) =>
      `| ${s.name} | ${fmt(s.bytes / 1024)} kB | ${fmt(per(s.bytes))} B | ${fmt((per(s.bytes) * 1000) / 1024 / 1024, 2)} MB | ` +
      `${s.fpiBytes === null ? '?' : `${fmt((s.fpiBytes / Math.max(1, s.bytes)) * 100, 1)}%`} | ` +
      `${s.seconds === undefined ? '' : `${fmt(s.seconds, 1)} s`} | ${s.check ?? ''} |`;
    const sum = (xs: Stage[]) => ({
      bytes: xs.reduce((a, s) => a + s.bytes, 0),
      fpiBytes: xs.some((s) => s.fpiBytes === null) ? null : xs.reduce((a, s) => a + (s.fpiBytes ?? 0), 0),
    });
    const total = { name: '**total (a)–(c)**', ...sum(stages) };
    const withCaptures = { name: 'total with (d)', ...sum([...stages, captures]) };
    log('\n| stage | WAL | per update | per 1,000 updates | of it full-page images | time | check |');
    log('| --- | --- | --- | --- | --- | --- | --- |');
    for (const s of [...stages, total, captures, withCaptures, base]) log(row(s));
    log(
      `\nratio: total (a)–(c) ${fmt(per(total.bytes))} B per update = ${fmt(total.bytes / base.bytes, 1)}× the baseline's ` +
        `${fmt(per(base.bytes))} B per row; with capture delivery ${fmt(withCaptures.bytes / base.bytes, 1)}×`,
    );
    log(`load average at the end: ${loadAverage()}`);
  } finally {
    await collector.stop();
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
