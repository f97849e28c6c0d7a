/** GET/DELETE /v1/sessions/:key: an operator reads and erases one handler session; the erasure is audited without the value. */
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { sessionStore } from '../../../libs/dispatch';
import { createMigratedDatabase } from '../../support/db';
import { buildTestApp, call, OPS_TOKEN, startBoss, testConfig } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;
const BOT = '1000000001';

beforeAll(async () => {
  db = await createMigratedDatabase('admin_sess');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss, { config: testConfig({ TELEGRAM_BOT_TOKEN: `${BOT}:admin-test-token` }) });
});
afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});
beforeEach(() => db.pool.query('truncate relay.sessions, relay.attempts'));

const store = () => sessionStore({ pool: db.pool, botId: BOT });

describe('/v1/sessions/:key', () => {
  it('shows one session of the configured bot (or of bot_id), with its version and expiry', async () => {
    await store().set('42:42', { step: 2, name: 'private-name' });
    await store().set('42:42', { step: 3, name: 'private-name' });
    await sessionStore({ pool: db.pool, botId: '2000000002' }).set('42:42', { other: true });
    const r = await call(app, 'GET', '/v1/sessions/42:42');
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ bot_id: BOT, key: '42:42', value: { step: 3 }, version: 2, expired: false });
    const other = await call(app, 'GET', '/v1/sessions/42:42?bot_id=2000000002');
    expect(other.json()).toMatchObject({ bot_id: '2000000002', value: { other: true }, version: 1 });
  });

  it('an unknown key is a 404 with a code; a bad bot_id a 400; no token a 401', async () => {
    const r = await call(app, 'GET', '/v1/sessions/nope');
    expect(r.statusCode).toBe(404);
    expect(r.json().code).toBe('RELAY_ADMIN_NOT_FOUND');
    const bad = await call(app, 'GET', '/v1/sessions/x?bot_id=abc');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe('RELAY_ADMIN_VALIDATION');
    expect((await call(app, 'GET', '/v1/sessions/x', { headers: {} })).statusCode).toBe(401);
    expect((await call(app, 'DELETE', '/v1/sessions/x', { headers: {} })).statusCode).toBe(401);
  });

  it('deletes a session (GDPR erasure): audited with the actor, the key and the reason, never the value', async () => {
    await store().set('7:7', { secret: 'private-value' });
    const r = await call(app, 'DELETE', '/v1/sessions/7:7', {
      body: { reason: 'erasure request #12' },
      headers: { authorization: `Bearer ${OPS_TOKEN}` },
    });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ bot_id: BOT, key: '7:7', deleted_version: 1 });
    expect(await store().get('7:7')).toBeUndefined();
    const audit = await db.pool.query(
      `select outcome, actor, subject_key, details from relay.attempts where subject = 'admin' order by id`,
    );
    expect(audit.rows).toEqual([
      {
        outcome: 'admin.session.delete',
        actor: 'ops',
        subject_key: `${BOT}:7:7`,
        details: expect.objectContaining({ kind: 'session', reason: 'erasure request #12', result: 'ok', version: 1 }),
      },
    ]);
    expect(JSON.stringify(audit.rows)).not.toContain('private-value');
    // again: nothing left to delete, refused and audited as such
    const again = await call(app, 'DELETE', '/v1/sessions/7:7');
    expect(again.statusCode).toBe(404);
    expect(again.json().code).toBe('RELAY_ADMIN_NOT_FOUND');
    const refused = await db.pool.query(`select error_code from relay.attempts where subject = 'admin' order by id`);
    expect(refused.rows.map((x) => x.error_code)).toEqual([null, 'RELAY_ADMIN_NOT_FOUND']);
  });

  it('without a configured bot, bot_id is required', async () => {
    const bare = await buildTestApp(db.pool, boss);
    try {
      const r = await call(bare, 'GET', '/v1/sessions/1:1');
      expect(r.statusCode).toBe(400);
      expect(r.json().code).toBe('RELAY_ADMIN_BAD_REQUEST');
      expect(r.json().message).toContain('bot_id');
    } finally {
      await bare.close();
    }
  });
});
