/** The dashboard's server side: static serving, the time-series route and the sandbox chat proxy. */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { createBotApiSandbox, BotApiSandbox, SANDBOX_DEFAULT_TOKEN } from '../../../libs/sandbox';
import { DASHBOARD_DIST } from '../../../libs/admin/ui/serve';
import { createMigratedDatabase } from '../../support/db';
import { tg } from '../../support/sandbox-helpers';
import { buildTestApp, call, startBoss } from '../admin/support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;
let sandbox: BotApiSandbox;
let sandboxApp: FastifyInstance;
// a fixed "now" in the middle of a minute: buckets are whole minutes
const NOW = new Date('2031-05-05T12:30:30Z');

beforeAll(async () => {
  db = await createMigratedDatabase('dash_routes');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss, { clock: () => NOW });
  sandbox = createBotApiSandbox({ port: 0, seed: 7 });
  await sandbox.start();
  sandboxApp = await buildTestApp(db.pool, boss, {
    sandbox: { url: sandbox.url, token: SANDBOX_DEFAULT_TOKEN, chatId: 4242 },
  });
});

afterAll(async () => {
  await app?.close();
  await sandboxApp?.close();
  await sandbox?.stop();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

describe('the dashboard page', () => {
  test('/ serves the page without a token, with a strict content security policy', async () => {
    const res = await call(app, 'GET', '/', { headers: {} });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toBe(fs.readFileSync(path.join(DASHBOARD_DIST, 'index.html'), 'utf8'));
    expect(res.body).toContain('src="ui/app.js"');
    expect(res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  });

  test('its script and styles are the committed bundle, served without a token', async () => {
    const js = await call(app, 'GET', '/ui/app.js', { headers: {} });
    expect(js.statusCode).toBe(200);
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(js.body).toBe(fs.readFileSync(path.join(DASHBOARD_DIST, 'app.js'), 'utf8'));
    expect(js.headers['content-security-policy']).toBeDefined();
    const css = await call(app, 'GET', '/ui/style.css', { headers: {} });
    expect([css.statusCode, css.headers['content-type']]).toEqual([200, expect.stringMatching(/^text\/css/)]);
  });

  test('an unknown asset is a 404, and the API next to it still needs the token', async () => {
    expect((await call(app, 'GET', '/ui/nope.js', { headers: {} })).statusCode).toBe(404);
    for (const url of ['/ui/../package.json', '/ui/%2e%2e/package.json', '/ui/..%2fbuild.ts']) {
      const res = await call(app, 'GET', url, { headers: {} });
      expect([
        url,
        res.statusCode >= 400,
        res.body.includes('"devDependencies"') || res.body.includes('esbuild'),
      ]).toEqual([url, true, false]);
    }
    expect((await call(app, 'GET', '/v1/stats', { headers: {} })).statusCode).toBe(401);
    expect((await call(app, 'GET', '/v1/stats/timeseries', { headers: {} })).statusCode).toBe(401);
  });

  test('the page routes are not in the OpenAPI document; the time series route is', async () => {
    const doc = (await call(app, 'GET', '/openapi.json')).json();
    expect(Object.keys(doc.paths)).toContain('/v1/stats/timeseries');
    expect(Object.keys(doc.paths).filter((p) => p === '/' || p.startsWith('/ui'))).toEqual([]);
  });
});

describe('GET /v1/stats/timeseries', () => {
  beforeAll(async () => {
    const at = (secondsAgo: number) => new Date(NOW.getTime() - secondsAgo * 1000).toISOString();
    const rows: [string, string, number][] = [
      // current minute (12:30): 2 delivered + 1 retry captures, 1 handled inbox
      ['capture', 'delivered', 5],
      ['capture', 'delivered', 10],
      ['capture', 'retry', 20],
      ['inbox', 'handled', 1],
      // 12:28: one failed outbound, one delivered
      ['outbound', 'failed', 150],
      ['outbound', 'delivered', 140],
      // 12:16 (the oldest of 15 buckets) and 12:15 (outside the window)
      ['capture', 'failed', 14 * 60 + 30],
      ['capture', 'delivered', 15 * 60 + 31],
      // admin actions are not attempts
      ['admin', 'admin.retry', 3],
    ];
    for (const [subject, outcome, ago] of rows) {
      await db.pool.query(
        `insert into relay.attempts (subject, subject_id, attempt, outcome, started_at) values ($1, 1, 1, $2, $3)`,
        [subject, outcome, at(ago)],
      );
    }
  });

  test('15 one-minute buckets per kind, oldest first, zeros included, counted from relay.attempts', async () => {
    const res = await call(app, 'GET', '/v1/stats/timeseries');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      generated_at: NOW.toISOString(),
      from: '2031-05-05T12:16:00.000Z',
      bucket_seconds: 60,
    });
    for (const k of ['captures', 'outbound', 'inbox']) expect(body.kinds[k]).toHaveLength(15);
    const captures = body.kinds.captures;
    expect(captures[14]).toEqual({ at: '2031-05-05T12:30:00.000Z', attempts: 3, delivered: 2, failed: 0 });
    expect(captures[0]).toEqual({ at: '2031-05-05T12:16:00.000Z', attempts: 1, delivered: 0, failed: 1 });
    expect(captures.reduce((a: number, b: { attempts: number }) => a + b.attempts, 0)).toBe(4);
    expect(body.kinds.outbound[12]).toEqual({ at: '2031-05-05T12:28:00.000Z', attempts: 2, delivered: 1, failed: 1 });
    expect(body.kinds.inbox[14]).toMatchObject({ attempts: 1, delivered: 1 });
  });

  test('window and bucket size are parameters, validated', async () => {
    const body = (await call(app, 'GET', '/v1/stats/timeseries?minutes=2&bucket_seconds=30')).json();
    expect(body.kinds.captures.map((b: { at: string }) => b.at)).toEqual([
      '2031-05-05T12:29:00.000Z',
      '2031-05-05T12:29:30.000Z',
      '2031-05-05T12:30:00.000Z',
      '2031-05-05T12:30:30.000Z',
    ]);
    const bad = await call(app, 'GET', '/v1/stats/timeseries?minutes=0');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'RELAY_ADMIN_VALIDATION', field: 'querystring.minutes' });
  });
});

describe('sandbox chat panel routes', () => {
  test('exist only in sandbox mode', async () => {
    expect((await call(app, 'GET', '/v1/sandbox')).statusCode).toBe(404);
    const res = await call(sandboxApp, 'GET', '/v1/sandbox');
    expect(res.json()).toEqual({ enabled: true, bot_id: SANDBOX_DEFAULT_TOKEN.split(':')[0], chat_id: 4242 });
    expect((await call(sandboxApp, 'GET', '/v1/sandbox', { headers: {} })).statusCode).toBe(401);
  });

  test('a message sent from the panel is a pending update in the sandbox, audited without its text', async () => {
    const before = sandbox.pendingCount(SANDBOX_DEFAULT_TOKEN);
    const res = await call(sandboxApp, 'POST', '/v1/sandbox/messages', {
      body: { chat_id: 4242, text: 'hello from the panel' },
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      chat_id: 4242,
      update_id: expect.any(Number),
      message_id: expect.any(Number),
      audit_id: expect.any(Number),
    });
    expect(sandbox.pendingCount(SANDBOX_DEFAULT_TOKEN)).toBe(before + 1);
    const polled = await tg(sandbox.url, SANDBOX_DEFAULT_TOKEN, 'getUpdates', { offset: body.update_id, timeout: 0 });
    expect(polled.body.result[0]).toMatchObject({
      update_id: body.update_id,
      message: { chat: { id: 4242 }, text: 'hello from the panel' },
    });
    const { rows } = await db.pool.query(
      `select outcome, actor, details::text as details from relay.attempts where id = $1`,
      [body.audit_id],
    );
    expect(rows[0]).toMatchObject({ outcome: 'admin.sandbox_inject', actor: 'admin' });
    expect(rows[0].details).not.toContain('hello');
  });

  test("the bot's messages to a chat are listed, other chats' are not", async () => {
    await tg(sandbox.url, SANDBOX_DEFAULT_TOKEN, 'sendMessage', { chat_id: 4242, text: 'echo: hello' });
    await tg(sandbox.url, SANDBOX_DEFAULT_TOKEN, 'sendMessage', { chat_id: 5151, text: 'someone else' });
    const res = await call(sandboxApp, 'GET', '/v1/sandbox/messages?chat_id=4242');
    expect(res.statusCode).toBe(200);
    expect(res.json().items.map((m: { text: string }) => m.text)).toEqual(['echo: hello']);
  });

  test("the bot's media messages are listed as [photo] with their caption", async () => {
    const photo = 'https://example.com/cat.jpg';
    await tg(sandbox.url, SANDBOX_DEFAULT_TOKEN, 'sendPhoto', { chat_id: 6161, photo, caption: 'a cat' });
    await tg(sandbox.url, SANDBOX_DEFAULT_TOKEN, 'sendPhoto', { chat_id: 6162, photo }); // another chat: 1/s each
    const texts = async (chatId: number) => {
      const res = await call(sandboxApp, 'GET', `/v1/sandbox/messages?chat_id=${chatId}`);
      expect(res.statusCode).toBe(200);
      return res.json().items.map((m: { text: string }) => m.text);
    };
    expect(await texts(6161)).toEqual(['[photo] a cat']);
    expect(await texts(6162)).toEqual(['[photo]']);
  });

  test('bad input is a 400 and an unreachable sandbox a 503 with a stable code', async () => {
    expect(
      (await call(sandboxApp, 'POST', '/v1/sandbox/messages', { body: { chat_id: 4242, text: '' } })).json(),
    ).toMatchObject({
      code: 'RELAY_ADMIN_VALIDATION',
      field: 'body.text',
    });
    const gone = await buildTestApp(db.pool, boss, {
      sandbox: { url: 'http://127.0.0.1:9', token: SANDBOX_DEFAULT_TOKEN },
    });
    try {
      const res = await call(gone, 'POST', '/v1/sandbox/messages', { body: { chat_id: 1, text: 'x' } });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ code: 'RELAY_ADMIN_UNAVAILABLE' });
      expect(JSON.stringify(res.json())).not.toContain(SANDBOX_DEFAULT_TOKEN);
    } finally {
      await gone.close();
    }
  });
});
