import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { createMigratedDatabase } from '../../support/db';
import { AUTH, buildTestApp, call, insertCapture, OPS_TOKEN, startBoss } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;

beforeAll(async () => {
  db = await createMigratedDatabase('admin_read');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss);
});

afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

describe('auth', () => {
  test('a request without a token is 401 with a stable code', async () => {
    const res = await call(app, 'GET', '/v1/stats', { headers: {} });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ code: 'RELAY_ADMIN_UNAUTHORIZED', reason: 'missing' });
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  test('a wrong token is 401', async () => {
    const res = await call(app, 'GET', '/v1/stats', {
      headers: { authorization: 'Bearer not-the-right-token-at-all' },
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ code: 'RELAY_ADMIN_UNAUTHORIZED', reason: 'invalid' });
  });

  test('a token sent with another scheme is 401', async () => {
    const res = await call(app, 'GET', '/v1/stats', { headers: { authorization: `Basic ${OPS_TOKEN}` } });
    expect(res.statusCode).toBe(401);
  });

  test('the right token, and a labelled one from ADMIN_TOKENS, are accepted', async () => {
    expect((await call(app, 'GET', '/v1/stats')).statusCode).toBe(200);
    expect(
      (await call(app, 'GET', '/v1/stats', { headers: { authorization: `Bearer ${OPS_TOKEN}` } })).statusCode,
    ).toBe(200);
  });

  test('/health/live needs no token; /health/ready, /metrics, /openapi.json and /docs do', async () => {
    expect((await call(app, 'GET', '/health/live', { headers: {} })).statusCode).toBe(200);
    for (const url of ['/health/ready', '/metrics', '/openapi.json', '/docs', '/v1/captures', '/no-such-route']) {
      expect([url, (await call(app, 'GET', url, { headers: {} })).statusCode]).toEqual([url, 401]);
    }
  });
});

describe('auth options', () => {
  test('ADMIN_DOCS_PUBLIC=true serves the OpenAPI document and Swagger UI without a token, and nothing else', async () => {
    const { testConfig } = await import('./support.js');
    const pub = await buildTestApp(db.pool, boss, { config: testConfig({ ADMIN_DOCS_PUBLIC: 'true' }) });
    try {
      expect((await call(pub, 'GET', '/openapi.json', { headers: {} })).statusCode).toBe(200);
      expect((await call(pub, 'GET', '/docs/', { headers: {} })).statusCode).toBe(200);
      expect((await call(pub, 'GET', '/v1/stats', { headers: {} })).statusCode).toBe(401);
      expect((await call(pub, 'GET', '/metrics', { headers: {} })).statusCode).toBe(401);
    } finally {
      await pub.close();
    }
  });

  test('a body over 64 KiB is 413 with a stable code', async () => {
    const res = await call(app, 'POST', '/v1/messages', {
      body: { msg_id: 'big', chat_id: 1, text: 'x'.repeat(70_000) },
    });
    expect([res.statusCode, res.json().code]).toEqual([413, 'RELAY_ADMIN_PAYLOAD_TOO_LARGE']);
  });
});

describe('lists and details', () => {
  let ids: number[] = [];
  beforeAll(async () => {
    const t0 = Date.parse('2030-01-01T00:00:00Z');
    ids = [];
    for (let i = 0; i < 7; i++) {
      ids.push(
        await insertCapture(db.pool, {
          chat_id: i % 2 ? 7 : 8,
          state: i < 3 ? 'failed' : 'pending',
          last_error: i < 3 ? `HTTP 400 from collector #${i}` : null,
          created_at: new Date(t0 + Math.floor(i / 2) * 1000).toISOString(), // pairs share a timestamp
        }),
      );
    }
    await db.pool.query(
      `insert into relay.attempts (subject, subject_id, subject_key, attempt, worker_id, outcome, http_status, error, duration_ms)
       values ('capture', $1, 'k', 1, 'w1', 'retry', 503, 'HTTP 503', 12), ('capture', $1, 'k', 2, 'w1', 'failed', 400, 'HTTP 400', 9)`,
      [ids[0]],
    );
  });

  test('pages follow (time, id) newest first without gaps or repeats, whatever the page size', async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const res = await call(
        app,
        'GET',
        `/v1/captures?limit=2&since=2030-01-01T00:00:00Z${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.items.length).toBeLessThanOrEqual(2);
      seen.push(...body.items.map((r: { id: number }) => r.id));
      cursor = body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].sort((a, b) => b - a));
  });

  test('filters combine: state, chat, error text, time range', async () => {
    const failed = (await call(app, 'GET', '/v1/captures?state=failed')).json();
    expect(failed.items.map((r: { id: number }) => r.id).sort()).toEqual(ids.slice(0, 3).sort());
    const chat7 = (await call(app, 'GET', '/v1/captures?chat=7&since=2030-01-01T00:00:00Z')).json();
    expect(chat7.items.every((r: { chat_id: number }) => r.chat_id === 7)).toBe(true);
    expect(chat7.items).toHaveLength(3);
    const err = (await call(app, 'GET', '/v1/captures?error=collector%20%231')).json();
    expect(err.items.map((r: { id: number }) => r.id)).toEqual([ids[1]]);
    const pct = (await call(app, 'GET', '/v1/captures?error=%25')).json();
    expect(pct.items).toHaveLength(0); // % is literal, not a wildcard
    const range = (await call(app, 'GET', '/v1/captures?since=2030-01-01T00:00:01Z&until=2030-01-01T00:00:02Z')).json();
    expect(range.items.map((r: { id: number }) => r.id).sort()).toEqual([ids[2], ids[3]].sort());
  });

  test('a capture with its attempt history', async () => {
    const res = await call(app, 'GET', `/v1/captures/${ids[0]}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ id: ids[0], state: 'failed', chat_id: 8, payload: { text: 'hello' } });
    expect(body.history.map((a: { outcome: string; http_status: number }) => [a.outcome, a.http_status])).toEqual([
      ['retry', 503],
      ['failed', 400],
    ]);
  });

  test('unknown ids are 404, bad ids and filters are 400 naming the field', async () => {
    const nf = await call(app, 'GET', '/v1/outbound/999999');
    expect(nf.statusCode).toBe(404);
    expect(nf.json()).toMatchObject({ code: 'RELAY_ADMIN_NOT_FOUND' });
    const cases: [string, string][] = [
      ['/v1/captures/abc', 'params.id'],
      ['/v1/captures?state=lost', 'querystring.state'],
      ['/v1/captures?limit=0', 'querystring.limit'],
      ['/v1/captures?limit=501', 'querystring.limit'],
      ['/v1/captures?since=yesterday', 'querystring.since'],
      ['/v1/captures?stat=failed', 'querystring.stat'],
      ['/v1/captures?chat=abc', 'querystring.chat'],
      ['/v1/inbox?state=delivered', 'querystring.state'],
    ];
    for (const [url, field] of cases) {
      const res = await call(app, 'GET', url);
      expect([url, res.statusCode, res.json().code, res.json().field]).toEqual([
        url,
        400,
        'RELAY_ADMIN_VALIDATION',
        field,
      ]);
    }
    const bad = await call(app, 'GET', '/v1/captures?cursor=bm9wZQ');
    expect(bad.json()).toMatchObject({ code: 'RELAY_ADMIN_BAD_CURSOR' });
  });

  test('outbound, inbox and quarantine lists answer with their own shapes', async () => {
    await db.pool.query(
      `insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, payload_sha256) values ('m-1', '1', '55', '55', 'hi', 'x')`,
    );
    await db.pool.query(
      `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload) values ('1', 9, 'message', 55, '{"update_id":9}')`,
    );
    await db.pool.query(
      `insert into relay.quarantine (bot_id, update_id, raw, sha256, error, json_path) values ('1', 10, '\\x7b7d', 'abc', 'no message', '$.message')`,
    );
    const out = (await call(app, 'GET', '/v1/outbound?chat=55')).json();
    expect(out.items).toEqual([expect.objectContaining({ msg_id: 'm-1', chat_id: '55', state: 'pending' })]);
    expect(out.items[0].text).toBeUndefined(); // lists carry no message text
    const inbox = (await call(app, 'GET', '/v1/inbox?state=pending')).json();
    expect(inbox.items).toEqual([expect.objectContaining({ update_id: 9, update_type: 'message', chat_id: 55 })]);
    const q = (await call(app, 'GET', '/v1/quarantine?update_id=10')).json();
    expect(q.items).toEqual([
      expect.objectContaining({ update_id: 10, size_bytes: 2, state: 'quarantined', json_path: '$.message' }),
    ]);
    const qd = (await call(app, 'GET', `/v1/quarantine/${q.items[0].id}`)).json();
    expect(Buffer.from(qd.raw_base64, 'base64').toString()).toBe('{}');
  });
});

describe('stats', () => {
  test('counts per kind and state are exact below the cap, with the oldest pending age', async () => {
    const res = await call(app, 'GET', '/v1/stats');
    expect(res.statusCode).toBe(200);
    const s = res.json();
    expect(s.kinds.captures.states.failed).toEqual({ count: 3, approximate: false });
    expect(s.kinds.captures.states.pending.count).toBeGreaterThanOrEqual(4);
    expect(s.kinds.captures.queue).toBe('capture.deliver');
    expect(s.kinds.captures.oldest_pending_at).not.toBeNull();
    expect(Object.keys(s.kinds).sort()).toEqual(['captures', 'inbox', 'outbound']);
    expect(s.kinds.inbox.states).toHaveProperty('handled');
  });

  test('per bot: cursor, lease, generation and progress', async () => {
    await db.pool.query(
      `insert into relay.cursor (bot_id, next_offset, lease_owner, lease_generation, lease_expires_at, progress_generation, progress_at)
       values ('1000000001', 120, 'poller-a', 3, now() + interval '10 seconds', 3, now())
       on conflict (bot_id) do nothing`,
    );
    const s = (await call(app, 'GET', '/v1/stats', { headers: AUTH })).json();
    expect(s.bots).toEqual([
      expect.objectContaining({
        bot_id: '1000000001',
        next_offset: 120,
        lease_owner: 'poller-a',
        lease_generation: 3,
        lease_valid: true,
        progress_generation: 3,
      }),
    ]);
  });
});
