import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { createMigratedDatabase } from '../../support/db';
import { buildTestApp, call, OPS_TOKEN, startBoss, testConfig } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;

beforeAll(async () => {
  db = await createMigratedDatabase('admin_msg');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss, {
    config: testConfig({ TELEGRAM_BOT_TOKEN: '1000000001:SANDBOX-local-bot-token-not-a-secret' }),
  });
});

afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

const jobOf = async (id: number) =>
  (
    await db.pool.query(
      `select o.state, j.state as job_state, j.name from relay.outbound o left join tg_relay_boss.job j on j.id = o.job_id where o.id = $1`,
      [id],
    )
  ).rows[0];

describe('POST /v1/messages', () => {
  const msg = { msg_id: 'order-42-shipped', chat_id: 123456, text: 'Your order has shipped', parse_mode: 'HTML' };

  test('a new message is 201 with a pending row and its pg-boss job, audited with the token label', async () => {
    const res = await call(app, 'POST', '/v1/messages', {
      body: msg,
      headers: { authorization: `Bearer ${OPS_TOKEN}` },
    });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({ msg_id: 'order-42-shipped', created: true, state: 'pending' });
    expect(await jobOf(body.id)).toEqual({ state: 'pending', job_state: 'created', name: 'outbound.send' });
    const audit = (
      await db.pool.query(`select outcome, actor, subject_id, subject_key, details from relay.attempts where id = $1`, [
        body.audit_id,
      ])
    ).rows[0];
    expect(audit).toMatchObject({
      outcome: 'admin.enqueue',
      actor: 'ops',
      subject_id: String(body.id),
      subject_key: 'order-42-shipped',
      details: { created: true, result: 'ok' },
    });
  });

  test('the same message again is 200 with the same id and no second job', async () => {
    const first = (await call(app, 'POST', '/v1/messages', { body: msg })).json();
    const again = await call(app, 'POST', '/v1/messages', { body: msg });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ id: first.id, created: false });
    const { rows } = await db.pool.query(
      `select count(*)::int as n from tg_relay_boss.job where name = 'outbound.send'`,
    );
    expect(rows[0].n).toBe(1);
  });

  test('the same msg_id with another text is 409 RELAY_OUTBOUND_CONFLICT, audited as refused, the row unchanged', async () => {
    const res = await call(app, 'POST', '/v1/messages', { body: { ...msg, text: 'Something else' } });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ code: 'RELAY_OUTBOUND_CONFLICT', msg_id: 'order-42-shipped' });
    const { rows } = await db.pool.query(`select text from relay.outbound where msg_id = 'order-42-shipped'`);
    expect(rows).toEqual([{ text: 'Your order has shipped' }]);
    const audit = (
      await db.pool.query(
        `select error_code, details->>'result' as result from relay.attempts where subject = 'admin' order by id desc limit 1`,
      )
    ).rows[0];
    expect(audit).toEqual({ error_code: 'RELAY_OUTBOUND_CONFLICT', result: 'refused' });
  });

  test.each([
    ['no msg_id', { chat_id: 1, text: 'x' }, 'body.msg_id'],
    ['empty text', { msg_id: 'a', chat_id: 1, text: '' }, 'body.text'],
    ['4097 characters', { msg_id: 'a', chat_id: 1, text: 'x'.repeat(4097) }, 'body.text'],
    ['a chat name', { msg_id: 'a', chat_id: 'general', text: 'x' }, 'body.chat_id'],
    ['an unknown parse mode', { msg_id: 'a', chat_id: 1, text: 'x', parse_mode: 'markdown2' }, 'body.parse_mode'],
    ['an unknown field', { msg_id: 'a', chat_id: 1, text: 'x', colour: 'red' }, 'body.colour'],
  ])('%s is 400 naming the field', async (_label, body, field) => {
    const res = await call(app, 'POST', '/v1/messages', { body });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'RELAY_ADMIN_VALIDATION', field });
  });

  test('a body that is not JSON is 400 with a stable code', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/messages',
      headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json' },
      payload: '{"msg_id":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('RELAY_ADMIN_BAD_REQUEST');
  });
});
