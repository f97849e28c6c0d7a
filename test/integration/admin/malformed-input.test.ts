import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { createMigratedDatabase } from '../../support/db';
import { AUTH, buildTestApp, call, insertCapture, startBoss } from './support';
import { dbFingerprint } from './input-support';

/**
 * malformed admin parameters and bodies are 400 with the API's error format
 * (JSON with a stable `code`), never a 500, and a refused write leaves the database as it was.
 */
let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;

beforeAll(async () => {
  db = await createMigratedDatabase('admin_malformed');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss);
  await insertCapture(db.pool, { state: 'failed', chat_id: 7 });
});

afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

const LONE = '\ud800';

const CASES: [string, string, unknown?][] = [
  // the three reproductions of the issue
  ['GET', '/v1/captures/99999999999999999999'],
  ['GET', '/v1/inbox?chat=99999999999999999999'],
  ['POST', '/v1/messages', { msg_id: 'm1', chat_id: 1, text: `cut ${LONE}` }],
  // ids and numbers beyond bigint / a JS number, negative, float, hex, exponent
  ['GET', '/v1/outbound/9223372036854775807'],
  ['GET', '/v1/inbox/-1'],
  ['GET', '/v1/quarantine/1.5'],
  ['GET', '/v1/captures/0x10'],
  ['GET', '/v1/captures/1e3'],
  ['GET', '/v1/captures/%20%207'],
  ['POST', '/v1/captures/99999999999999999999/retry', {}],
  ['POST', '/v1/outbound/9007199254740992/cancel', {}],
  ['GET', '/v1/captures?update_id=99999999999999999999'],
  ['GET', '/v1/captures?update_id=-5'],
  ['GET', '/v1/captures?limit=100000'],
  ['GET', '/v1/captures?limit=0x20'],
  ['GET', '/v1/stats/timeseries?minutes=1e2'],
  ['GET', '/v1/captures?chat=@channelname'], // bigint chat column: an @channel can never match
  ['GET', '/v1/outbound?chat=99999999999999999999'],
  ['GET', '/v1/captures?bot_id=99999999999999999999'],
  // enums, cursors, dates
  ['GET', '/v1/captures?state=exploded'],
  ['GET', `/v1/captures?cursor=${Buffer.from('99999999999999999.1').toString('base64url')}`],
  ['GET', '/v1/captures?cursor=%FF%FE'],
  ['GET', '/v1/audit?since=2026-02-30T25:00:00Z'],
  // NUL in query strings (PostgreSQL text cannot hold it: 22021)
  ['GET', '/v1/captures?error=%00'],
  ['GET', '/v1/audit?actor=a%00b'],
  // bodies: NUL and lone surrogates in every string field, keys included
  ['POST', '/v1/messages', { msg_id: 'm2', chat_id: 1, text: 'a\u0000b' }],
  ['POST', '/v1/messages', { msg_id: `k${LONE}`, chat_id: 1, text: 'x' }],
  [
    'POST',
    '/v1/messages',
    {
      msg_id: 'm3',
      chat_id: 1,
      text: 'x',
      reply_markup: { inline_keyboard: [[{ text: `b${LONE}`, callback_data: 'x' }]] },
    },
  ],
  ['POST', '/v1/messages', { msg_id: 'm4', chat_id: 1, text: 'x', send_options: { ['k\u0000']: 1 } }],
  ['POST', '/v1/messages', { msg_id: 'm5', chat_id: '99999999999999999999', text: 'x' }],
  ['POST', '/v1/messages', { msg_id: 'm6', chat_id: 1e21, text: 'x' }],
  [
    'POST',
    '/v1/messages',
    { msg_id: 'm7', chat_id: 1, text: 'x', reply_markup: JSON.parse('['.repeat(1000) + ']'.repeat(1000)) },
  ],
  [
    'POST',
    '/v1/messages',
    { msg_id: 'm8', chat_id: 1, text: 'x', send_options: JSON.parse('{"a":'.repeat(1000) + '1' + '}'.repeat(1000)) },
  ],
  ['POST', '/v1/messages', { msg_id: 'm9', chat_id: 1, text: 'x', parse_mode: 'Bold' }],
  // the relay's own alert namespace
  ['POST', '/v1/messages', { msg_id: 'alert:m10', chat_id: 1, text: 'x', bot_id: '1' }],
  ['POST', '/v1/captures/retry', { chat: '99999999999999999999' }],
  ['POST', '/v1/captures/retry', { error: 'a\u0000' }],
  ['POST', '/v1/captures/1/retry', { reason: `r${LONE}` }],
  ['POST', '/v1/recover-stale', { older_than: '999999999999999999h' }],
  ['POST', '/v1/recover-stale', { older_than: 1e300 }],
  ['POST', '/v1/recover-stale', { older_than: '100000000h' }],
];

// every row has three entries: with fewer, jest would pass its `done` callback as `body`
test.each(CASES.map(([m, u, b]) => [m, u, b] as const))('%s %s → 400 with a code', async (method, url, body) => {
  const before = await dbFingerprint(db.pool);
  const res = await call(app, method, url, body === undefined ? {} : { body });
  expect([res.statusCode, res.headers['content-type']]).toEqual([400, expect.stringMatching(/^application\/json/)]);
  expect(res.json()).toEqual(
    expect.objectContaining({
      code: expect.stringMatching(/^RELAY_ADMIN_(VALIDATION|BAD_REQUEST|BAD_CURSOR)$/),
      message: expect.any(String),
    }),
  );
  expect(await dbFingerprint(db.pool)).toEqual(before);
});

test.each([
  ['text/plain', 'hello', 400],
  ['application/json', '{"msg_id": "x", "text":', 400],
  ['application/json', '"\\ud800"', 400],
  ['application/json', '', 400],
  ['application/x-www-form-urlencoded', 'msg_id=a&text=b', 415],
  ['application/json', JSON.stringify({ msg_id: 'big', chat_id: 1, text: 'x'.repeat(70_000) }), 413],
])('POST /v1/messages with %s %#', async (contentType, payload, status) => {
  const before = await dbFingerprint(db.pool);
  const res = await app.inject({
    method: 'POST',
    url: '/v1/messages',
    headers: { ...AUTH, 'content-type': contentType },
    payload,
  });
  expect(res.statusCode).toBe(status);
  expect(res.json()).toEqual(expect.objectContaining({ code: expect.stringMatching(/^RELAY_ADMIN_/) }));
  expect(await dbFingerprint(db.pool)).toEqual(before);
});

test('the error names the field at fault', async () => {
  const res = await call(app, 'POST', '/v1/messages', {
    body: { msg_id: 'm', chat_id: 1, text: 'x', reply_markup: { a: [`z${LONE}`] } },
  });
  expect(res.json()).toMatchObject({ code: 'RELAY_ADMIN_VALIDATION', field: 'body.reply_markup.a.0' });
});

test('well-formed values next to the limits are still accepted', async () => {
  const ok = [
    ['GET', '/v1/captures/9007199254740991', 404],
    ['GET', '/v1/captures?chat=-1001234567890123&update_id=9007199254740991&bot_id=1234567890', 200],
    ['GET', '/v1/outbound?chat=@channelname', 200],
    ['GET', '/v1/captures?error=%F0%9F%98%80%E2%80%8F', 200], // emoji and an RTL mark are fine
  ] as const;
  for (const [method, url, status] of ok)
    expect([url, (await call(app, method, url)).statusCode]).toEqual([url, status]);
  const res = await call(app, 'POST', '/v1/messages', {
    body: { msg_id: 'fine', bot_id: '1000000001', chat_id: -1001234567890, text: '😀 \u200f\\u0000 ok' },
  });
  expect([res.statusCode, res.json()]).toEqual([201, expect.objectContaining({ created: true })]);
  const { rows } = await db.pool.query('select text from relay.outbound where msg_id = $1', ['fine']);
  expect(rows[0].text).toBe('😀 \u200f\\u0000 ok');
});
