import SwaggerParser from '@apidevtools/swagger-parser';
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { adminRoutes } from '../../../libs/admin/app';
import { configProblemRecord } from '../../../libs/queue/config-problems';
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
    expect(res.json()).toMatchObject({
      ready: false,
      code: 'RELAY_ADMIN_NOT_READY',
      checks: { database: { ok: true }, migrations: { ok: true } },
    });
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
  const valueIn = (fams: ReturnType<typeof parsePrometheus>, name: string, labels: Record<string, string>) =>
    [...fams.values()]
      .flatMap((f) => f.samples)
      .find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

  test('the exposition parses and carries gauges of current state (depth, config problems, poller, ready) and no database-derived counter', async () => {
    await db.pool.query(
      `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_sha256, state) values ('k1', '77', 1, 1, 1, '{}', 'x', 'failed')`,
    );
    await db.pool.query(
      `insert into relay.attempts (subject, subject_id, outcome, http_status, duration_ms) values
        ('outbound', 1, 'retry', 429, 40), ('outbound', 1, 'delivered', 200, 120), ('capture', 2, 'failed', 400, 7), ('capture', 3, 'delivered', 200, 3000)`,
    );
    await configProblemRecord(db.pool, {
      component: 'capture',
      botId: '77',
      code: 'HTTP_401',
      status: 401,
      reason: 'the collector refused the credentials',
    });
    const res = await call(app, 'GET', '/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const fams = parsePrometheus(res.body);
    const value = (name: string, labels: Record<string, string>) => valueIn(fams, name, labels);
    expect(value('tg_relay_queue_depth', { kind: 'captures', state: 'failed' })).toBe(1);
    expect(value('tg_relay_config_problems', { component: 'capture', code: 'HTTP_401' })).toBe(1);
    expect(value('tg_relay_poller_generation', { bot_id: '77' })).toBe(3);
    expect(value('tg_relay_ready', {})).toBe(0);
    for (const name of [
      'tg_relay_oldest_pending_age_seconds',
      'tg_relay_attempts_last_minute',
      'tg_relay_failed_last_minute',
      'tg_relay_quarantine_items',
    ])
      expect([name, fams.get(name)?.type]).toEqual([name, 'gauge']);
    // the old tail-of-relay.attempts counters are gone: they doubled with every admin replica
    for (const gone of [
      'tg_relay_attempts_total',
      'tg_relay_attempt_duration_seconds',
      'tg_relay_rate_limited_total',
      'tg_relay_admin_actions_total',
    ])
      expect(fams.has(gone)).toBe(false);
    // every tg_relay_ family is a gauge but this process's own request counter
    const kinds = [...fams.values()].filter((f) => f.name.startsWith('tg_relay_')).map((f) => `${f.name}:${f.type}`);
    expect(kinds.filter((k) => !k.endsWith(':gauge'))).toEqual(['tg_relay_admin_http_requests_total:counter']);
    // the request counter counts what this process answered: one more /metrics
    const before =
      value('tg_relay_admin_http_requests_total', { method: 'GET', route: '/metrics', status: '200' }) ?? 0;
    const again = parsePrometheus((await call(app, 'GET', '/metrics')).body);
    expect(
      valueIn(again, 'tg_relay_admin_http_requests_total', { method: 'GET', route: '/metrics', status: '200' }),
    ).toBe(before + 1);
    expect(valueIn(again, 'tg_relay_queue_depth', { kind: 'captures', state: 'failed' })).toBe(1);
  });

  test('two admin apps on the same database report the same values: nothing doubles', async () => {
    const second = await buildTestApp(db.pool, boss, { clock: () => now });
    try {
      await db.pool.query(
        `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_sha256) values ('k2', '77', 2, 1, 2, '{}', 'y')`,
      );
      await db.pool.query(
        `insert into relay.attempts (subject, subject_id, outcome, http_status, duration_ms) values ('capture', 4, 'delivered', 200, 5)`,
      );
      const gauges = (text: string) =>
        [...parsePrometheus(text).values()]
          .filter((f) => f.name.startsWith('tg_relay_') && f.type === 'gauge')
          .flatMap((f) => f.samples.map((s) => `${s.name}${JSON.stringify(s.labels)} ${s.value}`))
          .sort();
      const a1 = gauges((await call(app, 'GET', '/metrics')).body);
      const b1 = gauges((await call(second, 'GET', '/metrics')).body);
      const a2 = gauges((await call(app, 'GET', '/metrics')).body);
      expect(a1.length).toBeGreaterThan(10);
      expect(b1).toEqual(a1);
      expect(a2).toEqual(a1);
      expect(a1).toContain('tg_relay_queue_depth{"kind":"captures","state":"pending","bot_id":"77"} 1');
    } finally {
      await second.close();
    }
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
        expect((await call(lagApp, 'GET', '/metrics')).body).toMatch(
          /^tg_relay_poller_pending_updates\{bot_id="77"\} 3$/m,
        );
      } finally {
        await lagApp.close();
      }
    } finally {
      await sandbox.stop();
    }
  });
});
