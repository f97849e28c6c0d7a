/**
 * /v1/bots: the bot registry on the admin API, on a real database and the Bot API sandbox. A token
 * is checked with getMe, stored only encrypted and never answered; every change is audited by bot
 * id; a running registry watcher sees it within seconds; bad input is a 4xx with a code.
 */
import crypto from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { parseTokenKey, watchBots, type BotWatch } from '../../../libs/bots';
import type { BossLedger } from '../../../libs/db/boss';
import { createLogger } from '../../../libs/observability/logger';
import { createBotApiSandbox, type BotApiSandbox } from '../../../libs/sandbox';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';
import { buildTestApp, call, OPS_TOKEN, startBoss, testConfig } from './support';

const KEY = crypto.randomBytes(32).toString('hex');
const TOKEN = '7200000001:admin-bots-test-token-not-a-secret';
const SECRET = 'admin-bots-test-token-not-a-secret';
const OPS = { authorization: `Bearer ${OPS_TOKEN}` };

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let sandbox: BotApiSandbox;
let app: FastifyInstance;
let watch: BotWatch;

beforeAll(async () => {
  db = await createMigratedDatabase('admin_bots');
  boss = await startBoss(db.url);
  sandbox = createBotApiSandbox({ limits: { enabled: false } });
  await sandbox.start();
  app = await buildTestApp(db.pool, boss, {
    config: testConfig({ TOKEN_ENCRYPTION_KEY: KEY, TELEGRAM_API_ROOT: sandbox.url }),
  });
  watch = await watchBots({
    pool: db.pool,
    listenUrl: db.url,
    key: parseTokenKey(KEY),
    logger: createLogger({ level: 'silent' }),
    refreshMs: 60_000,
  });
});
afterAll(async () => {
  await watch?.stop();
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await sandbox?.stop();
  await db?.drop();
});

describe('/v1/bots', () => {
  it('adds (201), updates (200), lists, shows, disables, enables and removes a bot: audited, never answering the token, seen by a running watcher', async () => {
    const add = await call(app, 'POST', '/v1/bots', {
      body: { token: TOKEN, handlers: 'examples/echo-bot.ts', allowed_chat_ids: ['12', '-1001'], reason: 'new shop' },
      headers: OPS,
    });
    expect(add.statusCode).toBe(201);
    expect(add.json()).toMatchObject({
      id: '7200000001',
      handlers: 'examples/echo-bot.ts',
      allowed_chat_ids: ['12', '-1001'],
      enabled: true,
      version: 1,
    });
    expect(typeof add.json().username).toBe('string');
    await waitFor(() => watch.bots().get('7200000001')?.token === TOKEN, { what: 'the watcher serving the bot' });

    const update = await call(app, 'POST', '/v1/bots', { body: { token: TOKEN, ops_chat_id: '99' } });
    expect([update.statusCode, update.json().ops_chat_id, update.json().version]).toEqual([200, '99', 2]);
    const list = await call(app, 'GET', '/v1/bots');
    expect(list.json().items.map((b: { id: string }) => b.id)).toEqual(['7200000001']);
    expect((await call(app, 'GET', '/v1/bots/7200000001')).json()).toMatchObject({ ops_chat_id: '99' });

    const disable = await call(app, 'POST', '/v1/bots/7200000001/disable', { body: { reason: 'unpaid' } });
    expect([disable.statusCode, disable.json().enabled]).toEqual([200, false]);
    await waitFor(() => !watch.bots().has('7200000001'), { what: 'the watcher dropping the disabled bot' });
    const enable = await call(app, 'POST', '/v1/bots/7200000001/enable');
    expect([enable.statusCode, enable.json().enabled]).toEqual([200, true]);
    await waitFor(() => watch.bots().has('7200000001'), { what: 'the watcher serving it again' });

    const remove = await call(app, 'DELETE', '/v1/bots/7200000001');
    expect([remove.statusCode, remove.json()]).toEqual([200, { id: '7200000001', removed: true }]);
    expect((await call(app, 'GET', '/v1/bots')).json().items).toEqual([]);

    const audit = await db.pool.query(
      `select outcome, actor, subject_key, details->>'reason' as reason from relay.attempts where subject = 'admin' order by id`,
    );
    expect(audit.rows.map((r) => [r.outcome, r.subject_key, r.reason])).toEqual([
      ['admin.bot.add', '7200000001', 'new shop'],
      ['admin.bot.update', '7200000001', null],
      ['admin.bot.disable', '7200000001', 'unpaid'],
      ['admin.bot.enable', '7200000001', null],
      ['admin.bot.remove', '7200000001', null],
    ]);
    expect(audit.rows[0].actor).toBe('ops');
    // the token is in no answer and nowhere in the database in clear
    for (const r of [add, update, list, disable, enable]) expect(r.body).not.toContain(SECRET);
    const dump = await db.pool.query(
      `select (select coalesce(string_agg(t::text, ''), '') from relay.attempts t) ||
              (select coalesce(string_agg(b::text, ''), '') from relay.bots b) as text`,
    );
    expect(dump.rows[0].text).not.toContain(SECRET);
  });

  it('refuses what it cannot register with a 4xx and a code, naming the field, never echoing the token', async () => {
    const cases: [unknown, number, string][] = [
      [{ token: 'not-a-token' }, 400, 'RELAY_BOT_INVALID'],
      [{ token: TOKEN, capture_url: 'ftp://x' }, 400, 'RELAY_BOT_INVALID'],
      [{ token: TOKEN, allowed_chat_ids: ['zero'] }, 400, 'RELAY_BOT_INVALID'],
      [{ token: TOKEN, settings: { NOT_A_SETTING: '1' } }, 400, 'RELAY_BOT_INVALID'],
      [{ token: TOKEN, settings: { OUTBOUND_RATE_PER_BOT: '-5' } }, 400, 'RELAY_BOT_INVALID'],
      [{ token: TOKEN, extra: 1 }, 400, 'RELAY_ADMIN_VALIDATION'],
      [{}, 400, 'RELAY_ADMIN_VALIDATION'],
    ];
    for (const [body, status, code] of cases) {
      const r = await call(app, 'POST', '/v1/bots', { body });
      expect({ body, status: r.statusCode, code: r.json().code }).toEqual({ body, status, code });
      expect(r.body).not.toContain(SECRET);
    }
    const invalid = await call(app, 'POST', '/v1/bots', { body: { token: TOKEN, capture_url: 'ftp://x' } });
    expect(invalid.json().field).toBe('capture_url');

    const revoked = '7200000002:revoked-token-not-a-secret';
    sandbox.revokeToken(revoked);
    const rejected = await call(app, 'POST', '/v1/bots', { body: { token: revoked } });
    expect([rejected.statusCode, rejected.json().code]).toEqual([422, 'RELAY_BOT_TOKEN_REJECTED']);
    expect(rejected.body).not.toContain('revoked-token-not-a-secret');

    const unknown = await call(app, 'POST', '/v1/bots/7299999999/disable');
    expect([unknown.statusCode, unknown.json().code]).toEqual([404, 'RELAY_BOT_NOT_FOUND']);
    expect((await call(app, 'DELETE', '/v1/bots/7299999999')).statusCode).toBe(404);
    expect((await call(app, 'GET', '/v1/bots/7299999999')).statusCode).toBe(404);
    expect((await call(app, 'GET', '/v1/bots/abc')).json().code).toBe('RELAY_ADMIN_VALIDATION');
    expect((await call(app, 'GET', '/v1/bots', { headers: {} })).statusCode).toBe(401);
    expect((await db.pool.query(`select count(*)::int as n from relay.bots`)).rows[0].n).toBe(0);
  });

  it('without TOKEN_ENCRYPTION_KEY a bot cannot be added (503 RELAY_TOKEN_KEY); with the Bot API down, 503 RELAY_BOT_API_UNREACHABLE', async () => {
    const keyless = await buildTestApp(db.pool, boss, { config: testConfig({ TELEGRAM_API_ROOT: sandbox.url }) });
    const down = await buildTestApp(db.pool, boss, {
      config: testConfig({ TOKEN_ENCRYPTION_KEY: KEY, TELEGRAM_API_ROOT: 'http://127.0.0.1:9' }),
    });
    try {
      const r = await call(keyless, 'POST', '/v1/bots', { body: { token: TOKEN } });
      expect([r.statusCode, r.json().code]).toEqual([503, 'RELAY_TOKEN_KEY']);
      const d = await call(down, 'POST', '/v1/bots', { body: { token: TOKEN } });
      expect([d.statusCode, d.json().code]).toEqual([503, 'RELAY_BOT_API_UNREACHABLE']);
      expect(d.body).not.toContain(SECRET);
    } finally {
      await keyless.close();
      await down.close();
    }
    expect((await db.pool.query(`select count(*)::int as n from relay.bots`)).rows[0].n).toBe(0);
  });
});
