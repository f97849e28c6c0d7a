/**
 * One bot's page of an admin list over many bots' rows is one range of an index that leads with
 * the bot (sql/0039_bot_indexes.sql): the EXPLAIN of each list statement the API sends (captured
 * from the list functions themselves) uses its index after ANALYZE, with no sort and no scan of the
 * other bots' rows; without the index the same statement reads the others' rows or sorts. The audit list
 * filters on the bot the audit row stores (details.bot_id), which the migration gave to the rows
 * written before it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Pool, PoolClient, QueryConfig } from 'pg';
import type { Queryable } from '../../../libs/db/pool';
import { SQL_DIR } from '../../../libs/db/migrate';
import { auditInsert, auditList, broadcastIdsOfBot, itemList } from '../../../libs/admin/queries';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;

/** 200 bots with 100 rows each in every list, and a quiet bot with 3, its rows the oldest. */
const BOTS = 200;
const PER_BOT = 100;
const QUIET = '9000000009';
const QUIET_ROWS = 3;

const botOf = (g: string) => `(1000000000 + ${g} % ${BOTS})::text`;

beforeAll(async () => {
  db = await createMigratedDatabase('admin_botidx');
  const n = BOTS * PER_BOT;
  const q = (sql: string) => db.pool.query(sql);
  await q(`insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_sha256, state, created_at)
           select 'k' || g, ${botOf('g')}, g, g % 50, g, '{}', 'x', case when g % 7 = 0 then 'failed' else 'delivered' end,
                  now() - g * interval '1 s'
             from generate_series(1, ${n}) g`);
  await q(`insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, payload_sha256, state, created_at)
           select 'm' || g, ${botOf('g')}, (g % 50)::text, (g % 50)::text, 'hi', 'x', 'delivered', now() - g * interval '1 s'
             from generate_series(1, ${n}) g`);
  await q(`insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, state, received_at)
           select ${botOf('g')}, g, 'message', g % 50, '{}', 'handled', now() - g * interval '1 s'
             from generate_series(1, ${n}) g`);
  await q(`insert into relay.quarantine (bot_id, update_id, raw, sha256, error, json_path, created_at)
           select ${botOf('g')}, g, '\\x7b7d', 's' || g, 'bad', '$', now() - g * interval '1 s'
             from generate_series(1, ${n}) g`);
  await q(`insert into relay.broadcasts (bot_id, audience, request_sha256)
           select ${botOf('g')}, '{"chat_ids": 1}', 'r' || g from generate_series(1, ${n}) g`);
  // admin actions naming their bot, as auditInsert writes them
  await q(`insert into relay.attempts (subject, subject_key, outcome, duration_ms, details, actor)
           select 'admin', 's' || g, 'admin.session.delete', 1, jsonb_build_object('kind', 'session', 'bot_id', ${botOf('g')}), 'admin'
             from generate_series(1, ${n}) g`);
  // and delivery attempts, which the audit list must not read
  await q(`insert into relay.attempts (subject, subject_id, subject_key, attempt, outcome, duration_ms)
           select 'capture', g, 'k', 1, 'delivered', 5 from generate_series(1, ${n}) g`);
  for (let i = 1; i <= QUIET_ROWS; i++) {
    const old = `now() - interval '30 days' - ${i} * interval '1 s'`;
    await q(`insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_sha256, created_at)
             values ('q${i}', '${QUIET}', ${i}, 1, ${i}, '{}', 'x', ${old})`);
    await q(`insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, payload_sha256, created_at)
             values ('qm${i}', '${QUIET}', '1', '1', 'hi', 'x', ${old})`);
    await q(`insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, received_at)
             values ('${QUIET}', ${i}, 'message', 1, '{}', ${old})`);
    await q(`insert into relay.quarantine (bot_id, update_id, raw, sha256, error, json_path, created_at)
             values ('${QUIET}', ${i}, '\\x7b7d', 'qs${i}', 'bad', '$', ${old})`);
    await q(
      `insert into relay.broadcasts (bot_id, audience, request_sha256) values ('${QUIET}', '{"chat_ids": 1}', 'qr${i}')`,
    );
  }
  await q('analyze');
}, 120_000);

afterAll(async () => {
  await db?.drop();
});

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  Plans?: PlanNode[];
}

/** A sort of the rows found, or the bot checked row by row (the other bots' rows pass through the scan). */
const sortsOrFilters = (nodes: PlanNode[], table: string) =>
  nodes.some((n) => /Sort$/.test(n['Node Type'])) ||
  nodes.some((n) => n['Relation Name'] === table && /bot_id/.test(n.Filter ?? ''));

const nodesOf = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodesOf)];

/**
 * A database stand-in that answers each statement with nothing and keeps the plan PostgreSQL
 * chose for it (EXPLAIN with the same text and values), on `client`.
 */
function explaining(client: PoolClient | Pool): { db: Queryable; plans: PlanNode[] } {
  const plans: PlanNode[] = [];
  const db = {
    query: async (q: string | QueryConfig, values?: unknown[]) => {
      const text = typeof q === 'string' ? q : q.text;
      const vals = typeof q === 'string' ? values : q.values;
      const { rows } = await client.query(`explain (format json) ${text}`, vals);
      plans.push((rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan);
      return { rows: [], command: '', rowCount: 0, oid: 0, fields: [] };
    },
  } as unknown as Queryable;
  return { db, plans };
}

/** The list statements under test: each one page of a bot, as the routes send it. */
const LISTS: { name: string; index: string; table: string; run: (d: Queryable, botId: string) => Promise<unknown> }[] =
  [
    ...(
      [
        ['captures', 'captures_bot_created_idx'],
        ['outbound', 'outbound_bot_created_idx'],
        ['inbox', 'inbox_bot_received_idx'],
        ['quarantine', 'quarantine_bot_created_idx'],
      ] as const
    ).map(([kind, index]) => ({
      name: `/v1/${kind}?bot_id=`,
      index,
      table: kind,
      run: (d: Queryable, botId: string) => itemList(d, kind, { bot_id: botId }, { limit: 50 }),
    })),
    {
      name: '/v1/broadcasts?bot_id=',
      index: 'broadcasts_bot_idx',
      table: 'broadcasts',
      run: (d, botId) => broadcastIdsOfBot(d, botId, { limit: 50 }),
    },
    {
      name: '/v1/audit?bot_id=',
      index: 'attempts_admin_bot_idx',
      table: 'attempts',
      run: (d, botId) => auditList(d, { bot_id: botId }, { limit: 50 }),
    },
  ];

describe.each(LISTS)('$name', ({ index, table, run }) => {
  test(`a bot's page is a range of ${index}: no sort, no scan of the other bots' rows`, async () => {
    for (const botId of [QUIET, '1000000007']) {
      const { db: d, plans } = explaining(db.pool);
      await run(d, botId);
      expect(plans).toHaveLength(1);
      const nodes = nodesOf(plans[0]);
      const onTable = nodes.filter((n) => n['Relation Name'] === table);
      expect([botId, onTable.map((n) => [n['Node Type'], n['Index Name']])]).toEqual([
        botId,
        [[expect.stringMatching(/^Index (Only )?Scan$/), index]],
      ]);
      // the bot is the index condition, and the index's order is the page's
      expect([botId, onTable[0]['Index Cond']]).toEqual([botId, expect.stringMatching(/bot_id/)]);
      expect([botId, sortsOrFilters(nodes, table)]).toEqual([botId, false]);
    }
  });

  test(`without ${index} the same page reads the other bots' rows or sorts (the index is needed)`, async () => {
    const client = await db.pool.connect();
    try {
      await client.query('begin');
      await client.query(`drop index relay.${index}`);
      const { db: d, plans } = explaining(client);
      await run(d, QUIET);
      const nodes = nodesOf(plans[0]);
      expect(nodes.map((n) => n['Index Name'])).not.toContain(index);
      expect(sortsOrFilters(nodes, table)).toBe(true);
    } finally {
      await client.query('rollback');
      client.release();
    }
  });
});

test("the quiet bot's pages list exactly its rows, newest first (broadcast ids in numeric order)", async () => {
  for (const kind of ['captures', 'outbound', 'inbox', 'quarantine'] as const) {
    const page = await itemList(db.pool, kind, { bot_id: QUIET }, { limit: 50 });
    expect([kind, page.items.length, new Set(page.items.map((r) => r.bot_id))]).toEqual([
      kind,
      QUIET_ROWS,
      new Set([QUIET]),
    ]);
  }
  // the bot of 1000000007 has ids 7, 207, …: ordered by number, not by their text ('807' > '19807')
  const ids = (await broadcastIdsOfBot(db.pool, '1000000007', { limit: 500 })).map(Number);
  expect(ids).toHaveLength(PER_BOT);
  expect(ids).toEqual([...ids].sort((a, b) => b - a));
});

describe('the audit rows and their bot', () => {
  test('auditInsert stores the bot of the row an action names, and the audit list finds it by that bot', async () => {
    const { rows } = await db.pool.query<{ id: string }>(
      `select id::text from relay.captures where bot_id = $1 order by id limit 1`,
      [QUIET],
    );
    const captureId = Number(rows[0].id);
    const id = await auditInsert(db.pool, {
      action: 'retry',
      actor: 'admin',
      workerId: 'admin-test',
      subjectId: captureId,
      subjectKey: 'q1',
      details: { kind: 'captures', result: 'ok' },
      startedAt: new Date(),
    });
    // an action across bots names none
    const across = await auditInsert(db.pool, {
      action: 'recover_stale',
      actor: 'admin',
      workerId: 'admin-test',
      details: { recovered: {}, result: 'ok' },
      startedAt: new Date(),
    });
    const stored = await db.pool.query(
      `select id::int, details from relay.attempts where id = any($1::int8[]) order by id`,
      [[id, across]],
    );
    expect(stored.rows).toEqual([
      { id, details: { kind: 'captures', result: 'ok', bot_id: QUIET } },
      { id: across, details: { recovered: {}, result: 'ok' } },
    ]);
    const page = await auditList(db.pool, { bot_id: QUIET }, { limit: 50 });
    expect(page.items.map((e) => [e.id, e.bot_id])).toEqual([[id, QUIET]]);
  });

  test('0039 gives the audit rows written before it their bot: named in a filter, a bot change, or the row acted on', async () => {
    const { rows } = await db.pool.query<{ id: string }>(
      `select (select id::text from relay.outbound where bot_id = $1 order by id limit 1) as id`,
      [QUIET],
    );
    // rows as the earlier admin API wrote them: the bot only in the filter, the subject key, or the subject row
    const { rows: old } = await db.pool.query<{ id: string }>(
      `insert into relay.attempts (subject, subject_id, subject_key, outcome, duration_ms, details, actor) values
         ('admin', null, null, 'admin.retry_bulk', 1, $1, 'admin'),
         ('admin', null, $2, 'admin.bot.disable', 1, '{"kind": "bot"}', 'admin'),
         ('admin', $3, 'qm1', 'admin.cancel', 1, '{"kind": "outbound"}', 'admin'),
         ('admin', 999999999, 'gone', 'admin.cancel', 1, '{"kind": "outbound", "result": "refused"}', 'admin')
       returning id::text`,
      [JSON.stringify({ kind: 'captures', filter: { bot_id: QUIET } }), QUIET, rows[0].id],
    );
    await db.pool.query(fs.readFileSync(path.join(SQL_DIR, '0039_bot_indexes.sql'), 'utf8'));
    const after = await db.pool.query<{ bot: string | null }>(
      `select details->>'bot_id' as bot from relay.attempts where id = any($1::int8[]) order by id`,
      [old.map((r) => r.id)],
    );
    expect(after.rows.map((r) => r.bot)).toEqual([QUIET, QUIET, QUIET, null]);
    const listed = (await auditList(db.pool, { bot_id: QUIET }, { limit: 50 })).items.map((e) => String(e.id));
    for (const r of old.slice(0, 3)) expect(listed).toContain(r.id);
  });
});
