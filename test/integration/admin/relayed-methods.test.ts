import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { withTransaction } from '../../../libs/db/pool';
import { enqueueOutbound } from '../../../libs/outbound';
import { createMigratedDatabase } from '../../support/db';
import { buildTestApp, call, startBoss } from './support';

/**
 * The operators' view of relayed Bot API calls other than sendMessage: lists and details name the
 * method, details show params, counts, ids and uploads (never their bytes), lists filter by method,
 * and the admin actions (cancel, retry, bulk retry) work on such rows with their audit trail.
 */
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;
const ids: Record<string, number> = {};

const BOT = '1000000001';
const enqueue = async (body: Record<string, unknown>) => {
  const res = await call(app, 'POST', '/v1/messages', { body: { bot_id: BOT, ...body } });
  expect(res.statusCode).toBe(201);
  return Number(res.json().id);
};

beforeAll(async () => {
  db = await createMigratedDatabase('admin_relayed');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss);
  ids.plain = await enqueue({ msg_id: 'plain', chat_id: 77, text: 'hello', parse_mode: 'HTML' });
  ids.photo = await enqueue({
    msg_id: 'photo',
    chat_id: 77,
    method: 'sendPhoto',
    params: { photo: 'https://example.com/a.jpg', caption: 'a caption' },
  });
  ids.answer = await enqueue({ msg_id: 'answer', method: 'answerCallbackQuery', params: { callback_query_id: 'q' } });
  // an upload exists only through the library (the handler's InputFile, or a caller's own code)
  const r = await withTransaction(db.pool, (c) =>
    enqueueOutbound(
      c,
      {
        msg_id: 'album',
        chat_id: 77,
        method: 'sendMediaGroup',
        params: {
          media: [
            { type: 'photo', media: 'attach://p0' },
            { type: 'photo', media: 'https://example.com/b.jpg' },
          ],
        },
        uploads: [{ part: 'p0', filename: 'secret-name.jpg', bytes: Buffer.from('JPEGBYTES-0123456789') }],
      },
      { botId: BOT },
    ),
  );
  ids.album = Number(r.id);
  // as the sender leaves a delivered album: its real ids, in order
  await db.pool.query(
    `update relay.outbound set state = 'delivered', delivered_at = now(), telegram_message_id = 901, telegram_message_ids = '{901,902}' where id = $1`,
    [ids.album],
  );
});

afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

const list = async (query: string) => {
  const res = await call(app, 'GET', `/v1/outbound${query}`);
  expect(res.statusCode).toBe(200);
  return res.json().items as Record<string, unknown>[];
};

describe('lists', () => {
  test('every row names its method; a chatless answer has null chats', async () => {
    const items = await list('');
    const byMsg = Object.fromEntries(items.map((r) => [r.msg_id, r]));
    expect(byMsg.plain).toMatchObject({ method: 'sendMessage', chat_id: '77' });
    expect(byMsg.photo).toMatchObject({ method: 'sendPhoto', chat_id: '77', target_chat_id: '77' });
    expect(byMsg.answer).toMatchObject({ method: 'answerCallbackQuery', chat_id: null, target_chat_id: null });
    expect(byMsg.album).toMatchObject({ method: 'sendMediaGroup', telegram_message_id: 901 });
    for (const r of items) expect(r).not.toHaveProperty('params'); // lists carry no content
  });

  test('?method= filters; an unknown or direct method is 400 naming the field', async () => {
    expect((await list('?method=sendPhoto')).map((r) => r.msg_id)).toEqual(['photo']);
    expect((await list('?method=sendMessage')).map((r) => r.msg_id)).toEqual(['plain']);
    expect(await list('?method=sendVoice')).toEqual([]);
    expect((await list('?method=sendMediaGroup&state=delivered&chat=77')).map((r) => r.msg_id)).toEqual(['album']);
    for (const m of ['getMe', 'sendTelepathy', '']) {
      const res = await call(app, 'GET', `/v1/outbound?method=${m}`);
      expect([m, res.statusCode, res.json().code, res.json().field]).toEqual([
        m,
        400,
        'RELAY_ADMIN_VALIDATION',
        'querystring.method',
      ]);
    }
    // other lists have no method
    expect((await call(app, 'GET', '/v1/captures?method=sendPhoto')).json().field).toBe('querystring.method');
  });
});

describe('details', () => {
  test('a sendMessage row: the fields it always had, plus method, params null, count 1, no ids, no uploads', async () => {
    const res = await call(app, 'GET', `/v1/outbound/${ids.plain}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual([
      'id',
      'bot_id',
      'state',
      'attempts',
      'next_attempt_at',
      'worker_id',
      'started_at',
      'last_error',
      'updated_at',
      'msg_id',
      'chat_id',
      'target_chat_id',
      'kind',
      'delivery',
      'lane',
      'max_attempts',
      'last_status',
      'failed_reason',
      'telegram_message_id',
      'source_update_id',
      'created_at',
      'delivered_at',
      'publisher_kind',
      'method',
      'text',
      'parse_mode',
      'disable_notification',
      'reply_markup',
      'payload_sha256',
      'job_id',
      'claim_id',
      'trace_id',
      'trace_url',
      'params',
      'message_count',
      'telegram_message_ids',
      'uploads',
      'history',
    ]);
    expect(body).toMatchObject({
      method: 'sendMessage',
      text: 'hello',
      parse_mode: 'HTML',
      params: null,
      message_count: 1,
      telegram_message_ids: null,
      uploads: [],
    });
  });

  test('a sendPhoto: method and params, text null', async () => {
    const body = (await call(app, 'GET', `/v1/outbound/${ids.photo}`)).json();
    expect(body).toMatchObject({
      method: 'sendPhoto',
      text: null,
      parse_mode: null,
      params: { photo: 'https://example.com/a.jpg', caption: 'a caption' },
      message_count: 1,
      uploads: [],
    });
  });

  test('an album: its count, its real ids in order, its upload by part name and size, never the bytes or file name', async () => {
    const res = await call(app, 'GET', `/v1/outbound/${ids.album}`);
    const body = res.json();
    expect(body).toMatchObject({
      method: 'sendMediaGroup',
      message_count: 2,
      telegram_message_ids: [901, 902],
      uploads: [{ part: 'p0', size_bytes: 20 }],
    });
    expect(body.params.media[0]).toEqual({ type: 'photo', media: 'attach://p0' });
    expect(res.body).not.toContain('JPEGBYTES');
    expect(res.body).not.toContain(Buffer.from('JPEGBYTES').toString('base64').slice(0, 8));
    expect(res.body).not.toContain('secret-name');
  });

  test('an answer: no chat, counts for no message', async () => {
    const body = (await call(app, 'GET', `/v1/outbound/${ids.answer}`)).json();
    expect(body).toMatchObject({
      method: 'answerCallbackQuery',
      chat_id: null,
      target_chat_id: null,
      message_count: 0,
      params: { callback_query_id: 'q' },
    });
  });
});

describe('admin actions on relayed rows', () => {
  test('cancel and retry a sendPhoto: moved, audited, shown in its history', async () => {
    const cancel = await call(app, 'POST', `/v1/outbound/${ids.photo}/cancel`, { body: { reason: 'wrong photo' } });
    expect([cancel.statusCode, cancel.json().state]).toEqual([200, 'failed']);
    const retry = await call(app, 'POST', `/v1/outbound/${ids.photo}/retry`, { body: {} });
    expect([retry.statusCode, retry.json().state]).toEqual([200, 'pending']);
    const { rows } = await db.pool.query(
      `select outcome, subject_key, details->>'kind' as kind from relay.attempts where id = any($1::bigint[]) order by id`,
      [[cancel.json().audit_id, retry.json().audit_id]],
    );
    expect(rows).toEqual([
      { outcome: 'admin.cancel', subject_key: 'photo', kind: 'outbound' },
      { outcome: 'admin.retry', subject_key: 'photo', kind: 'outbound' },
    ]);
    const detail = (await call(app, 'GET', `/v1/outbound/${ids.photo}`)).json();
    expect(detail.history.map((a: { outcome: string }) => a.outcome)).toEqual([
      'admin.enqueue',
      'admin.cancel',
      'admin.retry',
    ]);
    expect(detail).toMatchObject({ method: 'sendPhoto', params: { caption: 'a caption' } });
  });

  test('bulk retry filtered by method retries only that method', async () => {
    for (const id of [ids.plain, ids.photo]) await call(app, 'POST', `/v1/outbound/${id}/cancel`, { body: {} });
    const dry = await call(app, 'POST', '/v1/outbound/retry', { body: { method: 'sendPhoto', dry_run: true } });
    expect(dry.json()).toMatchObject({ matched: 1, dry_run: true });
    const res = await call(app, 'POST', '/v1/outbound/retry', { body: { method: 'sendPhoto' } });
    expect(res.json()).toMatchObject({ retried: 1 });
    const { rows } = await db.pool.query(
      `select msg_id, state from relay.outbound where id = any($1) order by msg_id`,
      [[ids.plain, ids.photo]],
    );
    expect(rows).toEqual([
      { msg_id: 'photo', state: 'pending' },
      { msg_id: 'plain', state: 'failed' },
    ]);
    const audit = (
      await db.pool.query(`select details->'filter' as filter from relay.attempts where id = $1`, [res.json().audit_id])
    ).rows[0];
    expect(audit.filter).toMatchObject({ method: 'sendPhoto', state: 'failed' });
    const bad = await call(app, 'POST', '/v1/outbound/retry', { body: { method: 'getMe' } });
    expect([bad.statusCode, bad.json().field]).toEqual([400, 'body.method']);
  });
});
