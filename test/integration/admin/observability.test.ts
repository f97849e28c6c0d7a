import SwaggerParser from '@apidevtools/swagger-parser';
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { adminRoutes } from '../../../libs/admin/app';
import { createMigratedDatabase } from '../../support/db';
import { parsePrometheus } from './prom-parse';
import { buildTestApp, call, startBoss } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;
let now = new Date('2031-05-05T12:00:00Z');

beforeAll(async () => {
  db = await createMigratedDatabase('admin_obs');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss, { clock: () => now });
});

afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

const setCursor = (sql: string, values: unknown[] = []) => db.pool.query(sql, values);

describe('health', () => {
  test('live answers without a token or a database', async () => {
    const res = await call(app, 'GET', '/health/live', { headers: {} });
    expect(res.json()).toEqual({ status: 'ok' });
  });

  test('ready is 503 with reasons while no poller has run', async () => {
    const res = await call(app, 'GET', '/health/ready');
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ ready: false, code: 'RELAY_ADMIN_NOT_READY', checks: { database: { ok: true }, migrations: { ok: true } } });
    expect(res.json().reasons.join('\n')).toMatch(/no poller has recorded a cursor/);
  });

  test('ready is 200 once the current generation progresses, and 503 when only an old generation did', async () => {
    await setCursor(
      `insert into relay.cursor (bot_id, next_offset, lease_owner, lease_generation, lease_expires_at, progress_generation, progress_at)
       values ('77', 5, 'p1', 2, $1::timestamptz + interval '10 s', 2, $1::timestamptz - interval '1 s')`,
      [now],
    );
    const ok = await call(app, 'GET', '/health/ready');
    expect([ok.statusCode, ok.json().reasons]).toEqual([200, []]);
    await setCursor(`update relay.cursor set lease_generation = 3, lease_owner = 'p2' where bot_id = '77'`);
    const stale = await call(app, 'GET', '/health/ready');
    expect(stale.statusCode).toBe(503);
    expect(stale.json().reasons.join('\n')).toMatch(/generation 3 has not made progress/);
    await setCursor(`update relay.cursor set progress_generation = 3 where bot_id = '77'`);
    now = new Date(now.getTime() + 60_000); // no progress for a minute (> POLL_TIMEOUT + 15 s)
    const old = await call(app, 'GET', '/health/ready');
    expect(old.statusCode).toBe(503);
    expect(old.json().reasons.join('\n')).toMatch(/lease of generation 3 expired/);
  });
});

describe('metrics', () => {
  test('the exposition parses and carries depth, attempts by outcome, latency histogram, 429s, poller and ready', async () => {
    await db.pool.query(
      `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_sha256, state) values ('k1', '77', 1, 1, 1, '{}', 'x', 'failed')`,
    );
    await call(app, 'GET', '/metrics'); // the attempt feed counts from here on
    await db.pool.query(
      `insert into relay.attempts (subject, subject_id, outcome, http_status, duration_ms) values
        ('outbound', 1, 'retry', 429, 40), ('outbound', 1, 'delivered', 200, 120), ('capture', 2, 'failed', 400, 7), ('capture', 3, 'delivered', 200, 3000)`,
    );
    const res = await call(app, 'GET', '/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const fams = parsePrometheus(res.body);
    const value = (name: string, labels: Record<string, string>) =>
      [...fams.values()].flatMap((f) => f.samples).find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    expect(value('tg_relay_queue_depth', { kind: 'captures', state: 'failed' })).toBe(1);
    expect(value('tg_relay_attempts_total', { kind: 'outbound', outcome: 'delivered' })).toBe(1);
    expect(value('tg_relay_attempts_total', { kind: 'captures', outcome: 'failed' })).toBe(1);
    expect(value('tg_relay_rate_limited_total', { kind: 'outbound' })).toBe(1);
    expect(fams.get('tg_relay_attempt_duration_seconds')?.type).toBe('histogram');
    expect(value('tg_relay_attempt_duration_seconds_count', { kind: 'captures', outcome: 'delivered' })).toBe(1);
    expect(value('tg_relay_attempt_duration_seconds_bucket', { kind: 'captures', outcome: 'delivered', le: '2.5' })).toBe(0);
    expect(value('tg_relay_attempt_duration_seconds_bucket', { kind: 'captures', outcome: 'delivered', le: '5' })).toBe(1);
    expect(value('tg_relay_poller_generation', { bot_id: '77' })).toBe(3);
    expect(value('tg_relay_ready', {})).toBe(0);
    // a second scrape does not count the same rows again
    const again = parsePrometheus((await call(app, 'GET', '/metrics')).body);
    expect(again.get('tg_relay_attempts_total')!.samples.find((s) => s.labels.outcome === 'delivered' && s.labels.kind === 'outbound')!.value).toBe(1);
  });

  test('an attempt committed late with a lower id is still counted once', async () => {
    const c1 = await db.pool.connect();
    try {
      await c1.query('begin');
      await c1.query(`insert into relay.attempts (subject, subject_id, outcome) values ('inbox', 1, 'handled')`); // lower id, not yet visible
      await db.pool.query(`insert into relay.attempts (subject, subject_id, outcome) values ('inbox', 2, 'handled')`);
      await call(app, 'GET', '/metrics');
      await c1.query('commit');
    } finally {
      c1.release();
    }
    const fams = parsePrometheus((await call(app, 'GET', '/metrics')).body);
    expect(fams.get('tg_relay_attempts_total')!.samples.find((s) => s.labels.kind === 'inbox' && s.labels.outcome === 'handled')!.value).toBe(2);
  });
});

describe('OpenAPI', () => {
  test('the document validates and lists every route with its method', async () => {
    const res = await call(app, 'GET', '/openapi.json');
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    await SwaggerParser.validate(JSON.parse(JSON.stringify(doc)));
    const documented = new Set<string>();
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const m of Object.keys(ops)) documented.add(`${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`);
    }
    const routes = adminRoutes(app)
      .filter((r) => !r.hidden)
      .map((r) => `${r.method} ${r.url}`);
    expect(routes.length).toBeGreaterThanOrEqual(25);
    expect([...documented].sort()).toEqual([...new Set(routes)].sort());
    expect(doc.components.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/health/live'].get.security).toEqual([]);
  });

  test('Swagger UI is served at /docs', async () => {
    const res = await call(app, 'GET', '/docs/');
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/swagger-ui/i);
  });
});

describe("Telegram's lag (getWebhookInfo)", () => {
  test('pending_update_count of the configured bot is fetched from the Bot API and shown per bot in stats and metrics', async () => {
    const { createBotApiSandbox } = await import('../../../libs/sandbox/index.js');
    const { pendingUpdatesCache, webhookInfoFetcher } = await import('../../../libs/admin/webhook-info.js');
    const sandbox = createBotApiSandbox({ limits: { enabled: false } });
    await sandbox.start();
    try {
      const token = '77:lag-test-token-not-secret';
      for (let i = 0; i < 3; i++) sandbox.injectMessage(token, { chatId: 5, text: `m${i}` });
      const cache = pendingUpdatesCache(webhookInfoFetcher(sandbox.url, token, '77'));
      await cache.refresh('77');
      expect(cache.peek('1')).toBeUndefined(); // no token for other bots
      const lagApp = await buildTestApp(db.pool, boss, { clock: () => now, pendingUpdates: cache });
      try {
        const s = (await call(lagApp, 'GET', '/v1/stats')).json();
        expect(s.bots.find((b: { bot_id: string }) => b.bot_id === '77')).toMatchObject({ pending_update_count: 3 });
        expect((await call(lagApp, 'GET', '/metrics')).body).toMatch(/^tg_relay_poller_pending_updates\{bot_id="77"\} 3$/m);
      } finally {
        await lagApp.close();
      }
    } finally {
      await sandbox.stop();
    }
  });
});
