/** /v1/broadcasts: create, read, list, pause/resume/cancel; every bad input is a 4xx JSON answer with a code. */
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import type { BossLedger } from '../../../libs/db/boss';
import { createMigratedDatabase } from '../../support/db';
import { AUTH, buildTestApp, call, startBoss, testConfig } from '../admin/support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;
const BOT = '1000000001';

beforeAll(async () => {
  db = await createMigratedDatabase('bc_api');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss, { config: testConfig({ TELEGRAM_BOT_TOKEN: `${BOT}:bcast-test-token` }) });
});
afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

const ids = (n: number, from = 1) => Array.from({ length: n }, (_, i) => String(from + i));
const outboundCount = async () =>
  (await db.pool.query('select count(*)::int as n from relay.outbound')).rows[0].n as number;

describe('/v1/broadcasts', () => {
  it('the minimal form answers 201 {id}; GET gives state, counts, rate, eta and plan; the list has it', async () => {
    const r = await call(app, 'POST', '/v1/broadcasts', { body: { chat_ids: ids(120), text: 'hello everyone' } });
    expect(r.statusCode).toBe(201);
    const { id } = r.json();
    expect(id).toMatch(/^\d+$/);
    expect(r.json()).toMatchObject({
      created: true,
      recipients: 120,
      skipped: 0,
      plan: { messages: 120, cost_stars: 0 },
    });

    const g = await call(app, 'GET', `/v1/broadcasts/${id}`);
    expect(g.statusCode).toBe(200);
    expect(g.json()).toMatchObject({
      id,
      state: 'pending',
      counts: { pending: 120, delivering: 0, delivered: 0, failed: 0, cancelled: 0, skipped: 0, blocked: 0 },
      rate: 0,
      eta_seconds: null,
      plan: { recipients: 120, rate_per_second: 30, estimated_seconds: 4, paid: false },
    });
    const list = await call(app, 'GET', '/v1/broadcasts?limit=5');
    expect(list.statusCode).toBe(200);
    expect(list.json().items[0]).toMatchObject({ id, state: 'pending' });

    const audit = await db.pool.query(
      `select details from relay.attempts where subject = 'admin' and subject_id = $1 order by id`,
      [Number(id)],
    );
    expect(audit.rows[0].details).toMatchObject({ kind: 'broadcast', created: true, recipients: 120 });
  });

  it('a repeated key answers 200 with the same id and enqueues nothing; another request under it is a 409', async () => {
    const body = { key: 'newsletter-2026-12', chat_ids: ids(30, 500), text: 'news' };
    const a = await call(app, 'POST', '/v1/broadcasts', { body });
    const before = await outboundCount();
    const b = await call(app, 'POST', '/v1/broadcasts', { body });
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(200);
    expect(b.json()).toMatchObject({ id: a.json().id, created: false });
    expect(await outboundCount()).toBe(before);
    const c = await call(app, 'POST', '/v1/broadcasts', { body: { ...body, text: 'other' } });
    expect(c.statusCode).toBe(409);
    expect(c.json().code).toBe('RELAY_BROADCAST_KEY_CONFLICT');
  });

  it('pause, resume and cancel answer the new state; a wrong state is a 409, an unknown id a 404', async () => {
    const { id } = (
      await call(app, 'POST', '/v1/broadcasts', { body: { chat_ids: ids(10, 900), text: 'steer' } })
    ).json();
    const p = await call(app, 'POST', `/v1/broadcasts/${id}/pause`);
    expect(p.statusCode).toBe(200);
    expect(p.json()).toMatchObject({ state: 'paused', moved: 10, counts: { paused: 10, pending: 0 } });
    const again = await call(app, 'POST', `/v1/broadcasts/${id}/pause`);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ code: 'RELAY_BROADCAST_STATE', state: 'paused' });
    expect((await call(app, 'POST', `/v1/broadcasts/${id}/resume`)).json()).toMatchObject({
      state: 'pending',
      moved: 10,
    });
    expect((await call(app, 'POST', `/v1/broadcasts/${id}/cancel`)).json()).toMatchObject({
      state: 'cancelled',
      counts: { cancelled: 10 },
    });
    const missing = await call(app, 'POST', '/v1/broadcasts/987654321/pause');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('RELAY_BROADCAST_NOT_FOUND');
    expect((await call(app, 'GET', '/v1/broadcasts/987654321')).json().code).toBe('RELAY_BROADCAST_NOT_FOUND');
    expect((await call(app, 'GET', '/v1/broadcasts/abc')).statusCode).toBe(400);
    expect((await call(app, 'POST', `/v1/broadcasts/${id}/pause`, { body: { x: 1 } })).statusCode).toBe(400);
    expect((await call(app, 'GET', '/v1/broadcasts', { headers: {} })).statusCode).toBe(401);
  });

  it.each([
    [{}, 'chat_ids'],
    [{ text: 'no audience' }, 'chat_ids'],
    [{ chat_ids: [], text: 'x' }, 'chat_ids'],
    [{ chat_ids: ['1'], audience: 'subscribers', text: 'both' }, 'chat_ids'],
    [{ chat_ids: ['abc'], text: 'x' }, 'chat_ids[0]'],
    [{ chat_ids: [0], text: 'x' }, 'chat_ids[0]'],
    [{ chat_ids: ['1'], text: '' }, 'text'],
    [{ chat_ids: ['1'], text: 'x'.repeat(4097) }, 'text'],
    [{ chat_ids: ['1'] }, 'text'],
    [{ chat_ids: ['1'], text: 'x', method: 'deleteMessage', params: { message_id: 1 } }, 'method'],
    [{ chat_ids: ['1'], text: 'x', method: 'answerCallbackQuery' }, 'method'],
    [{ chat_ids: ['1'], method: 'sendPhoto', params: { photo: 'attach://p' } }, 'params'],
    [{ chat_ids: ['1'], text: 'x', msg_id: 'mine' }, 'msg_id'],
    [{ chat_ids: ['1'], text: 'x', paid: true }, 'paid'],
    [{ chat_ids: ['1'], text: 'x', paid: 'yes' }, 'paid'],
    [{ chat_ids: ['1'], text: 'x', key: '' }, 'key'],
    [{ audience: 'nobody', text: 'x' }, 'audience'],
    [{ audience: 'DROP TABLE', text: 'x' }, 'audience'],
    [{ chat_ids: ['1'], text: 'x', parse_mode: 'BBCode' }, 'parse_mode'],
  ] as [Record<string, unknown>, string][])(
    'refuses bad body #%# with a 400 RELAY_BROADCAST_INVALID naming the field, enqueueing nothing',
    async (body, field) => {
      const before = await outboundCount();
      const r = await call(app, 'POST', '/v1/broadcasts', { body });
      expect(r.statusCode).toBe(400);
      expect(r.json()).toMatchObject({ code: 'RELAY_BROADCAST_INVALID' });
      expect(r.json().problems.map((p: { field: string }) => p.field)).toContain(field);
      expect(await outboundCount()).toBe(before);
    },
  );

  it('any JSON body answers 201/200 or a 4xx with a code, never a 500 (fast-check)', async () => {
    const chat = fc.oneof(
      fc.integer(),
      fc.string(),
      fc.constantFrom('42', '-1001', '@channel_name', '0'),
      fc.anything(),
    );
    const body = fc.oneof(
      fc.anything(),
      fc.record(
        {
          chat_ids: fc.oneof(fc.array(chat, { maxLength: 5 }), fc.anything()),
          text: fc.oneof(fc.string(), fc.fullUnicodeString(), fc.anything()),
          audience: fc.oneof(fc.string(), fc.anything()),
          method: fc.oneof(fc.constantFrom('sendMessage', 'sendPhoto', 'copyMessage', 'editMessageText'), fc.string()),
          params: fc.oneof(fc.object(), fc.anything()),
          key: fc.oneof(fc.string(), fc.anything()),
          paid: fc.anything(),
          include_blocked: fc.anything(),
          reply_markup: fc.anything(),
          send_options: fc.anything(),
        },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const r = await app.inject({
          method: 'POST',
          url: '/v1/broadcasts',
          headers: { ...AUTH, 'content-type': 'application/json' },
          payload: JSON.stringify(b) ?? 'null',
        });
        if (r.statusCode >= 500) throw new Error(`500 for ${JSON.stringify(b)}: ${r.body}`);
        if (r.statusCode >= 400) expect(typeof r.json().code).toBe('string');
        else expect([200, 201]).toContain(r.statusCode);
      }),
      { numRuns: 300 },
    );
  });
});
