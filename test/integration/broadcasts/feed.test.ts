/**
 * Staged broadcasts: recipients stored at creation, fed into relay.outbound chunk by chunk
 * (relay.broadcast_feed, libs/broadcasts/feeder.ts). Exactly once under concurrent feeders and
 * crashes, pause/cancel stop feeding, chats blocked meanwhile are skipped, and counts add up.
 */
import fc from 'fast-check';
import { createPool } from '../../../libs/db';
import { broadcast, broadcastControl, broadcastStatus, createBroadcastFeeder } from '../../../libs/broadcasts';
import * as q from '../../../libs/broadcasts/queries';
import { silentLogger } from '../../../libs/observability/logger';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let bot = 1_200_000_000;
const nextBot = () => String(++bot);
const chats = (n: number, from = 1) => Array.from({ length: n }, (_, i) => String(from + i));

beforeAll(async () => {
  db = await createMigratedDatabase('bc_feed');
});
afterAll(async () => {
  await db.drop();
});

const one = async <T>(sql: string, params: unknown[]): Promise<T> => (await db.pool.query(sql, params)).rows[0] as T;
const rowCount = async (id: string) =>
  (await one<{ n: number }>('select count(*)::int as n from relay.outbound where broadcast_id = $1', [id])).n;
const jobCount = async (id: string) =>
  (
    await one<{ n: number }>(
      'select count(*)::int as n from tg_relay_boss.job j join relay.outbound o on o.job_id = j.id where o.broadcast_id = $1',
      [id],
    )
  ).n;
const cursor = (id: string) =>
  one<{ staged: number; fed: number; recipients: number; skipped: number; left: number }>(
    `select staged, fed, recipients, skipped,
            (select count(*)::int from relay.broadcast_recipients r, unnest(r.chat_ids) with ordinality as u(c, o)
              where r.broadcast_id = b.id and r.chunk * 1000 + u.o > b.fed) as left
       from relay.broadcasts b where id = $1`,
    [id],
  );
const unfedChats = async (id: string) =>
  (
    await db.pool.query<{ chat: string }>(
      `select u.c as chat from relay.broadcasts b, relay.broadcast_recipients r, unnest(r.chat_ids) with ordinality as u(c, o)
        where b.id = $1 and r.broadcast_id = b.id and r.chunk * 1000 + u.o > b.fed order by r.chunk, u.o`,
      [id],
    )
  ).rows.map((r) => r.chat);
const sumCounts = (c: Record<string, number>) =>
  c.pending + c.paused + c.delivering + c.delivered + c.failed + c.cancelled + c.blocked;

describe('staging', () => {
  it('creates the broadcast with every recipient staged and only the first chunk (a minute at 30/s) in relay.outbound', async () => {
    const r = await broadcast(db.pool, { chat_ids: chats(5000), text: 'staged' }, { botId: nextBot() });
    expect(r).toMatchObject({ recipients: 5000, skipped: 0, plan: { recipients: 5000 } });
    expect(await rowCount(r.id)).toBe(1800);
    expect(await jobCount(r.id)).toBe(1800);
    expect(await cursor(r.id)).toEqual({ staged: 5000, fed: 1800, recipients: 5000, skipped: 0, left: 3200 });
    const s = await broadcastStatus(db.pool, r.id);
    // the 3,200 not fed yet are pending: the counts add up to the recipients
    expect(s).toMatchObject({ state: 'pending', recipients: 5000, counts: { pending: 5000, skipped: 0 } });
    expect(s?.eta_seconds).toBeNull();
  });
});

describe('feeding', () => {
  it('two feeders on their own connections, racing in chunks of 100, feed each recipient exactly once', async () => {
    const b = nextBot();
    const r = await broadcast(db.pool, { chat_ids: chats(6000, 100_000), text: 'race' }, { botId: b });
    // 50 chats blocked meanwhile, spread over the chunks: each must be skipped (and counted) once
    const blocked = (await unfedChats(r.id)).filter((_, i) => i % 84 === 0);
    expect(blocked).toHaveLength(50);
    await db.pool.query(
      `insert into relay.chat_status (bot_id, chat_id, status, reason) select $1, c, 'blocked', 't' from unnest($2::text[]) c`,
      [b, blocked],
    );
    const pools = [createPool(db.url, { max: 1 }), createPool(db.url, { max: 1 })];
    const fed = [0, 0];
    try {
      await Promise.all(
        pools.map(async (p, i) => {
          for (;;) {
            const f = await q.broadcastFeed(p, r.id, 1_000_000, 100);
            fed[i] += f.fed;
            if (!f.busy && !f.unfed) return;
          }
        }),
      );
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
    expect(fed[0] + fed[1]).toBe(6000 - 1800 - 50);
    expect(await rowCount(r.id)).toBe(5950);
    expect(await jobCount(r.id)).toBe(5950);
    const distinct = await one<{ n: number }>(
      'select count(distinct chat_id)::int as n from relay.outbound where broadcast_id = $1',
      [r.id],
    );
    expect(distinct.n).toBe(5950);
    expect(await cursor(r.id)).toEqual({ staged: 6000, fed: 6000, recipients: 5950, skipped: 50, left: 0 });
    expect(sumCounts((await broadcastStatus(db.pool, r.id))!.counts)).toBe(5950);
  });

  it('a feed rolled back, or whose connection dies before commit, feeds nothing; the next feed makes those rows once', async () => {
    const r = await broadcast(db.pool, { chat_ids: chats(4000, 200_000), text: 'crash' }, { botId: nextBot() });
    const before = await cursor(r.id);

    const c = await db.pool.connect();
    try {
      await c.query('begin');
      expect((await q.broadcastFeed(c, r.id, 100_000, 1000)).fed).toBe(1000);
      await c.query('rollback');
    } finally {
      c.release();
    }
    expect(await cursor(r.id)).toEqual(before);
    expect(await rowCount(r.id)).toBe(1800);

    // a worker killed mid-feed: its backend goes away with the transaction open
    const victim = createPool(db.url, { max: 1 });
    victim.on('error', () => undefined);
    const vc = await victim.connect();
    vc.on('error', () => undefined);
    try {
      await vc.query('begin');
      const pid = (await vc.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0].pid;
      expect((await q.broadcastFeed(vc, r.id, 100_000, 1000)).fed).toBe(1000);
      await db.pool.query('select pg_terminate_backend($1)', [pid]);
      await expect(vc.query('commit')).rejects.toThrow();
    } finally {
      vc.release(true);
      await victim.end();
    }
    expect(await cursor(r.id)).toEqual(before);
    expect(await rowCount(r.id)).toBe(1800);

    const feeder = createBroadcastFeeder({ pool: db.pool, logger: silentLogger(), freeRate: 1000 });
    await feeder.tick();
    expect(await rowCount(r.id)).toBe(4000);
    expect(await jobCount(r.id)).toBe(4000);
    expect(await cursor(r.id)).toMatchObject({ fed: 4000, left: 0 });
  });

  it('feeds only while the broadcast has less than half a minute of rows pending', async () => {
    const r = await broadcast(db.pool, { chat_ids: chats(3000, 300_000), text: 'pace' }, { botId: nextBot() });
    const feeder = createBroadcastFeeder({ pool: db.pool, logger: silentLogger(), freeRate: 30 });
    // 1,800 pending ≥ 900: nothing
    await feeder.tick();
    expect(await rowCount(r.id)).toBe(1800);
    // 1,000 sent: 800 pending < 900, topped up to 1,800
    await db.pool.query(
      `update relay.outbound set state = 'delivered', delivered_at = now()
        where id in (select id from relay.outbound where broadcast_id = $1 order by id limit 1000)`,
      [r.id],
    );
    await feeder.tick();
    expect(await cursor(r.id)).toMatchObject({ fed: 2800 });
    expect(await rowCount(r.id)).toBe(2800);
  });

  it('a chat blocked (403) after the broadcast was created is skipped at feed time and counted as skipped', async () => {
    const b = nextBot();
    const r = await broadcast(db.pool, { chat_ids: chats(3000, 400_000), text: 'blocked later' }, { botId: b });
    const later = (await unfedChats(r.id)).slice(0, 3);
    expect(later).toHaveLength(3);
    await db.pool.query(
      `insert into relay.chat_status (bot_id, chat_id, status, reason)
       select $1, c, s, 'Forbidden: test' from unnest($2::text[], array['blocked', 'deactivated', 'chat_not_found']) as x(c, s)`,
      [b, later],
    );
    const feeder = createBroadcastFeeder({ pool: db.pool, logger: silentLogger(), freeRate: 1000 });
    await feeder.tick();
    expect(await rowCount(r.id)).toBe(2998);
    expect(await cursor(r.id)).toMatchObject({ fed: 3000, recipients: 2998, skipped: 2, left: 0 });
    const { rows } = await db.pool.query<{ chat_id: string }>(
      'select chat_id from relay.outbound where broadcast_id = $1 and chat_id = any($2)',
      [r.id, later],
    );
    // chat_not_found is not the user's choice: still sent
    expect(rows.map((x) => x.chat_id)).toEqual([later[2]]);
    const s = await broadcastStatus(db.pool, r.id);
    expect(s).toMatchObject({ recipients: 2998, counts: { skipped: 2, pending: 2998 } });
  });
});

describe('pause and cancel stop feeding', () => {
  it('a paused broadcast is not fed and counts its unfed recipients as paused; resumed, it is fed again', async () => {
    const r = await broadcast(db.pool, { chat_ids: chats(5000, 500_000), text: 'pause' }, { botId: nextBot() });
    const feeder = createBroadcastFeeder({ pool: db.pool, logger: silentLogger(), freeRate: 1000 });
    const p = await broadcastControl(db.pool, r.id, 'pause');
    expect(p.moved).toBe(5000);
    expect(p.status).toMatchObject({ state: 'paused', counts: { paused: 5000, pending: 0 } });
    await feeder.tick();
    expect(await q.broadcastFeed(db.pool, r.id, 100_000, 2000)).toMatchObject({ fed: 0, unfed: 3200 });
    expect(await rowCount(r.id)).toBe(1800);

    const s = await broadcastControl(db.pool, r.id, 'resume');
    expect(s.status).toMatchObject({ state: 'pending', counts: { pending: 5000, paused: 0 } });
    await feeder.tick();
    expect(await rowCount(r.id)).toBe(5000);
  });

  it('a cancelled broadcast drops its unfed recipients, counts them cancelled and is never fed again', async () => {
    const r = await broadcast(db.pool, { chat_ids: chats(5000, 600_000), text: 'cancel' }, { botId: nextBot() });
    const c = await broadcastControl(db.pool, r.id, 'cancel');
    expect(c.moved).toBe(5000);
    expect(c.status).toMatchObject({ state: 'cancelled', recipients: 5000, counts: { cancelled: 5000, pending: 0 } });
    expect(await cursor(r.id)).toMatchObject({ fed: 1800, left: 0 });
    const feeder = createBroadcastFeeder({ pool: db.pool, logger: silentLogger(), freeRate: 1000 });
    await feeder.tick();
    expect(await q.broadcastFeed(db.pool, r.id, 100_000, 2000)).toMatchObject({ fed: 0 });
    expect(await rowCount(r.id)).toBe(1800);
  });
});

describe('counts', () => {
  type Op =
    | { kind: 'feed'; n: number }
    | { kind: 'deliver' | 'fail' | 'block403' | 'claim'; n: number }
    | { kind: 'blockChat'; n: number }
    | { kind: 'pause' | 'resume' | 'cancel' };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('feed' as const), n: fc.integer({ min: 1, max: 300 }) }),
    fc.record({
      kind: fc.constantFrom('deliver' as const, 'fail' as const, 'block403' as const, 'claim' as const),
      n: fc.integer({ min: 1, max: 50 }),
    }),
    fc.record({ kind: fc.constant('blockChat' as const), n: fc.integer({ min: 1, max: 20 }) }),
    fc.record({ kind: fc.constantFrom('pause' as const, 'resume' as const, 'cancel' as const) }),
  );

  async function apply(id: string, b: string, o: Op): Promise<void> {
    const rows = (state: string, n: number) =>
      `select id from relay.outbound where broadcast_id = $1 and state = '${state}' order by id limit ${n}`;
    if (o.kind === 'feed') await q.broadcastFeed(db.pool, id, 1_000_000, o.n);
    else if (o.kind === 'claim')
      await db.pool.query(`update relay.outbound set state = 'delivering' where id in (${rows('pending', o.n)})`, [id]);
    else if (o.kind === 'deliver')
      await db.pool.query(
        `update relay.outbound set state = 'delivered', delivered_at = now() where id in (${rows('delivering', o.n)})`,
        [id],
      );
    else if (o.kind === 'fail' || o.kind === 'block403')
      await db.pool.query(
        `update relay.outbound set state = 'failed', last_status = $2, failed_reason = $3 where id in (${rows('delivering', o.n)})`,
        [
          id,
          o.kind === 'fail' ? 400 : 403,
          o.kind === 'fail' ? 'Bad Request: x' : 'Forbidden: bot was blocked by the user',
        ],
      );
    else if (o.kind === 'blockChat') {
      const unfed = (await unfedChats(id)).slice(0, o.n);
      await db.pool.query(
        `insert into relay.chat_status (bot_id, chat_id, status, reason) select $1, c, 'blocked', 't' from unnest($2::text[]) c
         on conflict do nothing`,
        [b, unfed],
      );
    } else await broadcastControl(db.pool, id, o.kind).catch(() => undefined);
  }

  it('after any sequence of feeds, sends, blocks, pauses and cancels: the counts add up to the recipients (fast-check)', async () => {
    let from = 1_000_000;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 2500 }),
        fc.integer({ min: 0, max: 30 }),
        fc.array(op, { maxLength: 12 }),
        async (n, dups, ops) => {
          const b = nextBot();
          const list = [...chats(n, from), ...chats(Math.min(dups, n), from)];
          from += n;
          const r = await broadcast(db.pool, { chat_ids: list, text: 'prop' }, { botId: b });
          for (const o of ops) {
            await apply(r.id, b, o);
            const s = await broadcastStatus(db.pool, r.id);
            if (!s) throw new Error('gone');
            expect(sumCounts(s.counts)).toBe(s.recipients);
            expect(s.recipients + s.counts.skipped).toBe(n);
            const unfinished = s.counts.pending + s.counts.paused + s.counts.delivering;
            if (s.state === 'completed') expect(unfinished).toBe(0);
            if (unfinished === 0 && s.state !== 'cancelled' && s.state !== 'paused') expect(s.state).toBe('completed');
          }
          // the table holds what is unfed, but nothing of a cancelled broadcast
          const c = await cursor(r.id);
          const end = await broadcastStatus(db.pool, r.id);
          expect(c.left).toBe(end?.state === 'cancelled' ? 0 : c.staged - c.fed);
        },
      ),
      { numRuns: 40 },
    );
  });
});
