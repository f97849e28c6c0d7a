/**
 * One database, two bots: every list and stat of the admin API answers one bot's rows with
 * `bot_id`, both bots' without it, and refuses a malformed bot id with a 400 and a code.
 */
import crypto from 'node:crypto';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import type { Pool } from 'pg';
import type { BossLedger } from '../../../libs/db/boss';
import { sessionStore } from '../../../libs/dispatch';
import { createMigratedDatabase } from '../../support/db';
import { parsePrometheus } from './prom-parse';
import { buildTestApp, call, startBoss } from './support';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let boss: BossLedger;
let app: FastifyInstance;

const A = '1000000001';
const B = '2000000002';
const BOTS = [A, B] as const;
/** Different sizes per bot, so a count of the wrong bot (or of both) cannot pass for the right one. */
const SIZE: Record<string, number> = { [A]: 3, [B]: 2 };
const LISTS = ['captures', 'outbound', 'inbox', 'quarantine'] as const;
/** Ids inserted per list and bot. */
const ids: Record<string, Record<string, number[]>> = {};

let seq = 0;
async function one(pool: Pool, sql: string, values: unknown[]): Promise<number> {
  const { rows } = await pool.query<{ id: string }>(`${sql} returning id`, values);
  return Number(rows[0].id);
}

/** One row of each table for `bot`, as the ingress, the outbound writer and the broadcaster store them. */
async function insertRows(pool: Pool, bot: string, i: number, state: 'pending' | 'failed'): Promise<void> {
  const u = 700_000 + ++seq;
  const sha = crypto.createHash('sha256').update(`${bot}:${u}`).digest('hex');
  const push = (list: string, id: number) => (ids[list][bot] ??= []).push(id);
  push(
    'captures',
    await one(
      pool,
      `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_sha256, state)
       values ($1, $2, $3, 42, $3, '{}', $4, $5)`,
      [`telegram:${bot}:${u}:42:${u}`, bot, u, sha, state],
    ),
  );
  push(
    'outbound',
    await one(
      pool,
      `insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, payload_sha256, state)
       values ($1, $2, '42', '42', 'hi', $3, $4)`,
      [`m-${bot}-${u}`, bot, sha, state],
    ),
  );
  push(
    'inbox',
    await one(
      pool,
      `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, state)
       values ($1, $2, 'message', 42, '{}', $3)`,
      [bot, u, state],
    ),
  );
  push(
    'quarantine',
    await one(
      pool,
      `insert into relay.quarantine (bot_id, update_id, raw, sha256, error, json_path)
       values ($1, $2, '\\x7b7d', $3, 'no message', '$.message')`,
      [bot, u, sha],
    ),
  );
  // a delivery attempt of the capture just stored, now: the timeseries and the last minute's rate
  await pool.query(
    `insert into relay.attempts (subject, subject_id, subject_key, attempt, outcome, duration_ms)
     values ('capture', $1, 'k', 1, 'delivered', 5)`,
    [ids.captures[bot][ids.captures[bot].length - 1]],
  );
  await pool.query(
    `insert into relay.broadcasts (bot_id, audience, request_sha256) values ($1, '{"chat_ids": 1}', $2)`,
    [bot, sha],
  );
  await pool.query(
    `insert into relay.chat_status (bot_id, chat_id, status, reason) values ($1, $2, 'blocked', 'Forbidden: bot was blocked by the user')`,
    [bot, String(1000 + i)],
  );
}

beforeAll(async () => {
  db = await createMigratedDatabase('admin_botf');
  boss = await startBoss(db.url);
  app = await buildTestApp(db.pool, boss);
  for (const list of LISTS) ids[list] = {};
  for (const bot of BOTS) {
    for (let i = 0; i < SIZE[bot]; i++) await insertRows(db.pool, bot, i, i === 0 ? 'failed' : 'pending');
    await db.pool.query(`insert into relay.cursor (bot_id, next_offset, lease_generation) values ($1, $2, 1)`, [
      bot,
      SIZE[bot] * 10,
    ]);
  }
  await db.pool.query('analyze');
});

afterAll(async () => {
  await app?.close();
  await boss?.stop({ graceful: false, wait: true });
  await db?.drop();
});

async function get(url: string) {
  const res = await call(app, 'GET', url);
  expect([url, res.statusCode]).toEqual([url, 200]);
  return res.json();
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const idsOf = (body: { items: { id: number | string }[] }) => sorted(body.items.map((r) => Number(r.id)));
const botsOf = (body: { items: { bot_id: string | null }[] }) => [...new Set(body.items.map((r) => r.bot_id))].sort();

describe('lists', () => {
  test.each(LISTS)("/v1/%s?bot_id= lists that bot's rows only, each with its bot_id", async (list) => {
    for (const bot of BOTS) {
      const body = await get(`/v1/${list}?bot_id=${bot}`);
      expect([list, bot, idsOf(body)]).toEqual([list, bot, sorted(ids[list][bot])]);
      expect(botsOf(body)).toEqual([bot]);
    }
    const all = await get(`/v1/${list}`);
    expect(idsOf(all)).toEqual(sorted([...ids[list][A], ...ids[list][B]]));
    expect(botsOf(all)).toEqual([A, B]);
  });

  test('the bot filter combines with the other filters and pages', async () => {
    const failed = await get(`/v1/captures?bot_id=${B}&state=failed`);
    expect(idsOf(failed)).toEqual([ids.captures[B][0]]);
    const page = await get(`/v1/outbound?bot_id=${A}&limit=2`);
    const next = await get(`/v1/outbound?bot_id=${A}&limit=2&cursor=${page.next_cursor as string}`);
    expect(sorted([...idsOf(page), ...idsOf(next)])).toEqual(sorted(ids.outbound[A]));
    expect(next.next_cursor).toBeNull();
  });

  test("/v1/broadcasts?bot_id= lists that bot's broadcasts, newest first", async () => {
    for (const bot of BOTS) {
      const body = await get(`/v1/broadcasts?bot_id=${bot}`);
      expect(body.items).toHaveLength(SIZE[bot]);
      expect(botsOf(body)).toEqual([bot]);
      const order = body.items.map((b: { id: string }) => Number(b.id));
      expect(order).toEqual([...order].sort((x, y) => y - x));
      const firstPage = await get(`/v1/broadcasts?bot_id=${bot}&limit=1`);
      expect((await get(`/v1/broadcasts?bot_id=${bot}&before=${firstPage.items[0].id as string}`)).items).toHaveLength(
        SIZE[bot] - 1,
      );
    }
    expect((await get('/v1/broadcasts')).items).toHaveLength(SIZE[A] + SIZE[B]);
  });

  test("/v1/chats/status?bot_id= lists that bot's unreachable chats", async () => {
    for (const bot of BOTS) expect(botsOf(await get(`/v1/chats/status?bot_id=${bot}`))).toEqual([bot]);
    expect((await get('/v1/chats/status')).items).toHaveLength(SIZE[A] + SIZE[B]);
  });
});

describe('stats', () => {
  test("/v1/stats?bot_id= counts that bot's rows, attempts, chats and cursor", async () => {
    for (const bot of BOTS) {
      const s = await get(`/v1/stats?bot_id=${bot}`);
      for (const kind of ['captures', 'outbound', 'inbox'] as const) {
        expect([kind, s.kinds[kind].total]).toEqual([kind, { count: SIZE[bot], approximate: false }]);
        expect([kind, s.kinds[kind].states.failed.count, s.kinds[kind].states.pending.count]).toEqual([
          kind,
          1,
          SIZE[bot] - 1,
        ]);
      }
      expect(s.quarantine.states.quarantined).toEqual({ count: SIZE[bot], approximate: false });
      expect(s.kinds.captures.attempts_last_minute).toBe(SIZE[bot]);
      expect(s.kinds.captures.delivered_last_minute).toBe(SIZE[bot]);
      expect(s.chat_status.blocked).toBe(SIZE[bot]);
      expect(s.bots.map((c: { bot_id: string; next_offset: number }) => [c.bot_id, c.next_offset])).toEqual([
        [bot, SIZE[bot] * 10],
      ]);
    }
    const all = await get('/v1/stats');
    expect(all.kinds.captures.total.count).toBe(SIZE[A] + SIZE[B]);
    expect(all.quarantine.states.quarantined.count).toBe(SIZE[A] + SIZE[B]);
    expect(all.kinds.captures.attempts_last_minute).toBe(SIZE[A] + SIZE[B]);
    expect(all.chat_status.blocked).toBe(SIZE[A] + SIZE[B]);
    expect(all.bots.map((c: { bot_id: string }) => c.bot_id)).toEqual([A, B]);
  });

  test('a bot without rows has zero everywhere', async () => {
    const s = await get('/v1/stats?bot_id=3000000003');
    expect(s.kinds.captures.total.count).toBe(0);
    expect(s.kinds.captures.oldest_pending_at).toBeNull();
    expect([s.bots, s.chat_status.blocked, s.kinds.captures.attempts_last_minute]).toEqual([[], 0, 0]);
  });

  test("/v1/stats/timeseries?bot_id= counts that bot's attempts", async () => {
    const attempts = (t: { kinds: { captures: { attempts: number }[] } }) =>
      t.kinds.captures.reduce((n, b) => n + b.attempts, 0);
    for (const bot of BOTS) expect(attempts(await get(`/v1/stats/timeseries?bot_id=${bot}`))).toBe(SIZE[bot]);
    expect(attempts(await get('/v1/stats/timeseries'))).toBe(SIZE[A] + SIZE[B]);
  });
});

describe('metrics', () => {
  test("/metrics: every gauge a bot applies to has each bot's own series, equal to /v1/stats?bot_id=; the done state has one series per kind", async () => {
    const res = await call(app, 'GET', '/metrics');
    expect(res.statusCode).toBe(200);
    const samples = [...parsePrometheus(res.body).values()].flatMap((f) => f.samples);
    const value = (name: string, labels: Record<string, string>) => {
      const found = samples.filter(
        (x) =>
          x.name === name &&
          JSON.stringify(Object.entries(x.labels).sort()) === JSON.stringify(Object.entries(labels).sort()),
      );
      expect([name, labels, found.length]).toEqual([name, labels, 1]);
      return found[0].value;
    };
    const OPEN: Record<string, string[]> = {
      captures: ['pending', 'delivering', 'failed'],
      outbound: ['pending', 'delivering', 'failed'],
      inbox: ['pending', 'failed'],
    };
    for (const bot of BOTS) {
      const s = await get(`/v1/stats?bot_id=${bot}`);
      for (const [kind, states] of Object.entries(OPEN)) {
        for (const state of states)
          expect([kind, state, bot, value('tg_relay_queue_depth', { kind, state, bot_id: bot })]).toEqual([
            kind,
            state,
            bot,
            s.kinds[kind].states[state].count,
          ]);
        const age = value('tg_relay_oldest_pending_age_seconds', { kind, bot_id: bot });
        expect(age).toBeGreaterThan(0);
        expect(Math.abs(age - s.kinds[kind].oldest_pending_age_seconds)).toBeLessThan(5);
        for (const [metric, field] of [
          ['tg_relay_attempts_last_minute', 'attempts_last_minute'],
          ['tg_relay_delivered_last_minute', 'delivered_last_minute'],
          ['tg_relay_failed_last_minute', 'failed_last_minute'],
        ])
          expect([metric, kind, bot, value(metric, { kind, bot_id: bot })]).toEqual([
            metric,
            kind,
            bot,
            s.kinds[kind][field],
          ]);
      }
      expect(value('tg_relay_quarantine_items', { state: 'quarantined', bot_id: bot })).toBe(SIZE[bot]);
    }
    // the sizes differ per bot, so a count of the wrong bot (or of both) cannot pass
    expect(value('tg_relay_queue_depth', { kind: 'captures', state: 'pending', bot_id: A })).toBe(SIZE[A] - 1);
    expect(value('tg_relay_attempts_last_minute', { kind: 'captures', bot_id: B })).toBe(SIZE[B]);
    // the done state, which only grows, is one series per kind, without a bot
    const done = samples.filter(
      (x) => x.name === 'tg_relay_queue_depth' && ['delivered', 'handled'].includes(x.labels.state),
    );
    expect(done.map((x) => x.labels).sort((a, b) => a.kind.localeCompare(b.kind))).toEqual([
      { kind: 'captures', state: 'delivered' },
      { kind: 'inbox', state: 'handled' },
      { kind: 'outbound', state: 'delivered' },
    ]);
    // the bots are the two with rows and cursors, nothing else
    const bots = new Set(
      samples.filter((x) => x.name === 'tg_relay_queue_depth' && x.labels.bot_id).map((x) => x.labels.bot_id),
    );
    expect([...bots].sort()).toEqual([A, B]);
  });
});

describe('audit', () => {
  test("/v1/audit?bot_id= lists the actions on that bot's rows, sessions and broadcasts; every entry names its bot", async () => {
    const expectOk = async (method: 'POST' | 'DELETE', url: string, body: unknown = {}) => {
      const res = await call(app, method, url, { body });
      expect([url, res.statusCode]).toEqual([url, 200]);
      return res.json().audit_id as number;
    };
    await sessionStore({ pool: db.pool, botId: A }).set('7:7', { step: 1 });
    const expected: Record<string, number[]> = {
      [A]: [
        await expectOk('POST', `/v1/captures/${ids.captures[A][1]}/cancel`),
        await expectOk('POST', `/v1/inbox/${ids.inbox[A][0]}/retry`),
        await expectOk('POST', '/v1/captures/retry', { bot_id: A, dry_run: true }),
        await expectOk('DELETE', `/v1/sessions/7:7?bot_id=${A}`),
      ],
      [B]: [
        await expectOk('POST', `/v1/outbound/${ids.outbound[B][1]}/cancel`),
        await expectOk('POST', `/v1/quarantine/${ids.quarantine[B][0]}/discard`),
      ],
    };
    for (const [url, body] of [
      ['/v1/messages', { msg_id: 'audit-b', bot_id: B, chat_id: 42, text: 'hi' }],
      ['/v1/broadcasts', { bot_id: B, chat_ids: [42, 43], text: 'news' }],
    ] as const) {
      const created = await call(app, 'POST', url, { body });
      expect([url, created.statusCode]).toEqual([url, 201]);
      expected[B].push(created.json().audit_id as number);
    }
    // across bots: no bot's, listed only without the filter
    const across = await expectOk('POST', '/v1/captures/retry', { dry_run: true });

    for (const bot of BOTS) {
      const body = await get(`/v1/audit?bot_id=${bot}`);
      expect([bot, idsOf(body)]).toEqual([bot, sorted(expected[bot])]);
      expect(botsOf(body)).toEqual([bot]);
    }
    const all = await get('/v1/audit');
    expect(idsOf(all)).toEqual(sorted([...expected[A], ...expected[B], across]));
    expect(all.items.find((e: { id: number }) => e.id === across).bot_id).toBeNull();
  });
});

describe('a malformed bot_id', () => {
  const ROUTES = [
    ...LISTS.map((l) => `/v1/${l}`),
    '/v1/audit',
    '/v1/stats',
    '/v1/stats/timeseries',
    '/v1/broadcasts',
    '/v1/chats/status',
  ];
  const BAD = [
    encodeURIComponent("'; drop table relay.inbox; --"),
    'abc',
    '',
    '-1',
    '1.5',
    '12345678901234567', // 17 digits: more than a bot id holds
    '9'.repeat(10_000),
    `1&bot_id=2`, // given twice: an array
  ];

  test.each(ROUTES)('is a 400 JSON error with a code on %s', async (route) => {
    for (const bad of BAD) {
      const url = `${route}?bot_id=${bad}`;
      const res = await call(app, 'GET', url);
      expect([url.slice(0, 80), res.statusCode, res.json().code]).toEqual([
        url.slice(0, 80),
        400,
        'RELAY_ADMIN_VALIDATION',
      ]);
    }
  });

  /** Percent-encodes a string's UTF-8 bytes (lone surrogates included, as their replacement). */
  const encode = (s: string) =>
    Array.from(Buffer.from(s, 'utf8'), (b) => `%${b.toString(16).padStart(2, '0')}`).join('');

  test('any bot_id is a 200 or a 400 with a code, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ROUTES),
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 40 }),
          fc.stringMatching(/^[0-9]{1,20}$/),
          fc.array(fc.stringMatching(/^[0-9]{1,16}$/), { minLength: 2, maxLength: 3 }),
        ),
        async (route, v) => {
          const query = [v].flat().map((x) => `bot_id=${encode(x)}`);
          const res = await call(app, 'GET', `${route}?${query.join('&')}`);
          const where = `${route}?${query.join('&')} → ${res.statusCode} ${res.body.slice(0, 200)}`;
          if (res.statusCode === 200) return;
          expect([where, res.statusCode, typeof res.json().code]).toEqual([where, 400, 'string']);
        },
      ),
      { numRuns: 150 },
    );
  });
});
