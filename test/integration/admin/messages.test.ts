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
    ['an unknown lane', { msg_id: 'a', chat_id: 1, text: 'x', lane: 'express' }, 'body.lane'],
  ])('%s is 400 naming the field', async (_label, body, field) => {
    const res = await call(app, 'POST', '/v1/messages', { body });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'RELAY_ADMIN_VALIDATION', field });
  });

  test('lane: interactive by default, bulk when asked, shown by the read API', async () => {
    const plain = (
      await call(app, 'POST', '/v1/messages', { body: { msg_id: 'lane-api-1', chat_id: 5, text: 'x' } })
    ).json();
    const bulk = (
      await call(app, 'POST', '/v1/messages', { body: { msg_id: 'lane-api-2', chat_id: 5, text: 'x', lane: 'bulk' } })
    ).json();
    const lanes = await db.pool.query('select id, lane from relay.outbound where id = any($1::bigint[]) order by id', [
      [plain.id, bulk.id],
    ]);
    expect(lanes.rows.map((r) => r.lane)).toEqual(['interactive', 'bulk']);
    expect((await call(app, 'GET', `/v1/outbound/${bulk.id}`)).json()).toMatchObject({ lane: 'bulk' });
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

describe('POST /v1/messages with another relayed method', () => {
  const photo = {
    msg_id: 'photo-1',
    chat_id: 4242,
    method: 'sendPhoto',
    params: { photo: 'https://example.com/a.jpg', caption: 'the <b>plan</b>', parse_mode: 'HTML' },
  };
  const rowOf = async (msgId: string) =>
    (
      await db.pool.query(
        `select method, params, text, chat_id, target_chat_id, message_count, parse_mode from relay.outbound where msg_id = $1`,
        [msgId],
      )
    ).rows[0];

  test('a sendPhoto by URL is 201: stored with its method and params, no text, audited with its method', async () => {
    const res = await call(app, 'POST', '/v1/messages', { body: photo });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({ msg_id: 'photo-1', created: true, state: 'pending' });
    expect(await rowOf('photo-1')).toEqual({
      method: 'sendPhoto',
      params: photo.params,
      text: null,
      chat_id: '4242',
      target_chat_id: '4242',
      message_count: 1,
      parse_mode: null,
    });
    expect(await jobOf(body.id)).toEqual({ state: 'pending', job_state: 'created', name: 'outbound.send' });
    const audit = (await db.pool.query(`select details from relay.attempts where id = $1`, [body.audit_id])).rows[0];
    expect(audit.details).toMatchObject({ created: true, chat_id: '4242', method: 'sendPhoto', result: 'ok' });
  });

  test('the same method and params again are 200 with the same id; other params under the msg_id are 409', async () => {
    const first = (await call(app, 'POST', '/v1/messages', { body: { ...photo, msg_id: 'photo-2' } })).json();
    const again = await call(app, 'POST', '/v1/messages', { body: { ...photo, msg_id: 'photo-2' } });
    expect([again.statusCode, again.json().id, again.json().created]).toEqual([200, first.id, false]);
    const otherCaption = await call(app, 'POST', '/v1/messages', {
      body: { ...photo, msg_id: 'photo-2', params: { ...photo.params, caption: 'another' } },
    });
    expect([otherCaption.statusCode, otherCaption.json().code]).toEqual([409, 'RELAY_OUTBOUND_CONFLICT']);
    const otherMethod = await call(app, 'POST', '/v1/messages', {
      body: { ...photo, msg_id: 'photo-2', method: 'sendDocument', params: { document: photo.params.photo } },
    });
    expect([otherMethod.statusCode, otherMethod.json().code]).toEqual([409, 'RELAY_OUTBOUND_CONFLICT']);
    expect((await rowOf('photo-2')).params).toEqual(photo.params);
  });

  test('a sendMessage row stays a sendMessage row: method defaults, an explicit sendMessage is the same payload', async () => {
    const plain = { msg_id: 'plain-1', chat_id: 5, text: 'hello' };
    const first = await call(app, 'POST', '/v1/messages', { body: plain });
    expect(first.statusCode).toBe(201);
    const explicit = await call(app, 'POST', '/v1/messages', { body: { ...plain, method: 'sendMessage' } });
    expect([explicit.statusCode, explicit.json().id]).toEqual([200, first.json().id]);
    expect(await rowOf('plain-1')).toMatchObject({ method: 'sendMessage', params: null, text: 'hello' });
    const audit = (await db.pool.query(`select details from relay.attempts where id = $1`, [first.json().audit_id]))
      .rows[0];
    expect(audit.details).toMatchObject({ created: true, chat_id: '5', result: 'ok' });
    expect(audit.details).not.toHaveProperty('method');
  });

  test('an editMessageText of a chat message and an answerCallbackQuery (no chat) are accepted', async () => {
    const edit = await call(app, 'POST', '/v1/messages', {
      body: { msg_id: 'edit-1', chat_id: 4242, method: 'editMessageText', params: { message_id: 17, text: 'v2' } },
    });
    expect(edit.statusCode).toBe(201);
    expect(await rowOf('edit-1')).toMatchObject({ method: 'editMessageText', params: { message_id: 17, text: 'v2' } });
    const answer = await call(app, 'POST', '/v1/messages', {
      body: { msg_id: 'answer-1', method: 'answerCallbackQuery', params: { callback_query_id: 'q1', text: 'ok' } },
    });
    expect(answer.statusCode).toBe(201);
    expect(await rowOf('answer-1')).toMatchObject({ chat_id: null, target_chat_id: null, message_count: 0 });
  });

  test.each([
    ['an unknown method', { method: 'sendTelepathy', params: { x: 1 } }, 'body.method'],
    ['a direct (not relayed) method', { method: 'getMe', params: {} }, 'body.method'],
    ['a method as a number', { method: 7, params: { photo: 'x' } }, 'body.method'],
    ['params that are not an object', { method: 'sendPhoto', params: [1] }, 'body.params'],
    ['a sendPhoto without params', { method: 'sendPhoto' }, 'body.params'],
    ['a sendPhoto without a photo', { method: 'sendPhoto', params: { caption: 'x' } }, 'body.params.photo'],
    ['a sendPhoto with text', { method: 'sendPhoto', text: 'x', params: { photo: 'u' } }, 'body.text'],
    ['chat_id inside params', { method: 'sendPhoto', params: { photo: 'u', chat_id: 1 } }, 'body.params'],
    ['params on a sendMessage', { text: 'x', params: { a: 1 } }, 'body.params'],
    ['a sendMessage without text', { method: 'sendMessage' }, 'body.text'],
    [
      'a caption over 1024 characters',
      { method: 'sendPhoto', params: { photo: 'u', caption: 'c'.repeat(1025) } },
      'body.params.caption',
    ],
    [
      'an upload in a top-level field',
      { method: 'sendPhoto', params: { photo: 'attach://photo' } },
      'body.params.photo',
    ],
    [
      'an upload inside media[]',
      {
        method: 'sendMediaGroup',
        params: {
          media: [
            { type: 'photo', media: 'https://x/a.jpg' },
            { type: 'photo', media: 'attach://p1' },
          ],
        },
      },
      'body.params.media.1.media',
    ],
  ])('%s is 400 RELAY_ADMIN_VALIDATION naming the field, nothing written', async (_label, extra, field) => {
    const msgId = `bad-${field}-${Math.random()}`;
    const before = (await db.pool.query(`select count(*)::int as n from relay.outbound`)).rows[0].n;
    const res = await call(app, 'POST', '/v1/messages', { body: { msg_id: msgId, chat_id: 4242, ...extra } });
    expect([res.statusCode, res.json().code, res.json().field]).toEqual([400, 'RELAY_ADMIN_VALIDATION', field]);
    expect((await db.pool.query(`select count(*)::int as n from relay.outbound`)).rows[0].n).toBe(before);
  });
});

test('the OpenAPI document describes method (the relayed methods) and params of POST /v1/messages, and the method filter', async () => {
  const doc = (await call(app, 'GET', '/openapi.json')).json();
  const body = doc.paths['/v1/messages'].post.requestBody.content['application/json'].schema;
  expect(body.properties.method.enum).toEqual(expect.arrayContaining(['sendMessage', 'sendPhoto', 'editMessageText']));
  expect(body.properties.method.enum).not.toContain('getMe');
  expect(body.properties.params).toMatchObject({ type: 'object', additionalProperties: true });
  expect(body.properties.params.description).toMatch(/attach:\/\//);
  expect(body.required).toEqual(['msg_id']);
  const list = doc.paths['/v1/outbound'].get.parameters.find((p: { name: string }) => p.name === 'method');
  expect(list?.schema.enum).toContain('answerCallbackQuery');
});
