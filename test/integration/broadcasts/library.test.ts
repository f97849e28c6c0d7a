import {
  broadcast,
  broadcastControl,
  broadcastStatus,
  broadcastsList,
  BroadcastKeyConflictError,
  BroadcastStateError,
  BroadcastValidationError,
  registerAudience,
} from '../../../index';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
const BOT = '1000000001';
const chats = (n: number, from = 1) => Array.from({ length: n }, (_, i) => String(from + i));

beforeAll(async () => {
  db = await createMigratedDatabase('bc_lib');
});
afterAll(async () => {
  await db.drop();
});

const rowsOf = async (id: string) =>
  (
    await db.pool.query<{
      msg_id: string;
      state: string;
      job_id: string;
      chat_id: string;
      send_options: unknown;
      lane: string;
    }>(
      'select msg_id, state, job_id::text, chat_id, send_options, lane from relay.outbound where broadcast_id = $1 order by id',
      [id],
    )
  ).rows;
const jobsOf = async (id: string) =>
  (
    await db.pool.query<{ id: string; state: string }>(
      `select j.id::text, j.state from tg_relay_boss.job j join relay.outbound o on o.job_id = j.id where o.broadcast_id = $1`,
      [id],
    )
  ).rows;

describe('broadcast(): set-based, idempotent enqueue', () => {
  it('enqueues one row and one job per distinct chat, msg_id bcast:{id}:{chat}, in one statement', async () => {
    const r = await broadcast(db.pool, { chat_ids: [...chats(500), '7', ' 8 ', 9], text: 'hello all' }, { botId: BOT });
    expect(r).toMatchObject({ created: true, recipients: 500, skipped: 0 });
    const rows = await rowsOf(r.id);
    expect(rows).toHaveLength(500);
    expect(new Set(rows.map((x) => x.msg_id)).size).toBe(500);
    expect(rows.every((x) => x.msg_id === `bcast:${r.id}:${x.chat_id}` && x.state === 'pending')).toBe(true);
    expect(new Set(rows.map((x) => x.lane))).toEqual(new Set(['bulk']));
    const jobs = await jobsOf(r.id);
    expect(jobs).toHaveLength(500);
    expect(new Set(jobs.map((j) => j.id))).toEqual(new Set(rows.map((x) => x.job_id)));
    expect(r.plan).toMatchObject({ recipients: 500, messages: 500, paid: false, rate_per_second: 30, cost_stars: 0 });
    expect(r.plan.estimated_seconds).toBe(17);
  });

  it('the same key enqueues nothing again; the same key with another request is a conflict', async () => {
    const body = { key: 'promo-1', chat_ids: chats(50), text: 'promo' };
    const a = await broadcast(db.pool, body, { botId: BOT });
    const b = await broadcast(db.pool, body, { botId: BOT });
    expect(b).toMatchObject({ id: a.id, created: false, recipients: 50 });
    expect(await rowsOf(a.id)).toHaveLength(50);
    await expect(broadcast(db.pool, { ...body, text: 'other' }, { botId: BOT })).rejects.toBeInstanceOf(
      BroadcastKeyConflictError,
    );
    const { rows } = await db.pool.query("select count(*)::int as n from relay.broadcasts where key = 'promo-1'");
    expect(rows[0].n).toBe(1);
  });

  it('a transaction that fails after the enqueue leaves no broadcast, row or job (all or nothing)', async () => {
    const before = (await db.pool.query('select count(*)::int as n from tg_relay_boss.job')).rows[0].n;
    const c = await db.pool.connect();
    try {
      await c.query('begin');
      const r = await broadcast(c, { key: 'rolled-back', chat_ids: chats(100), text: 'x' }, { botId: BOT });
      expect(r.recipients).toBe(100);
      await c.query('rollback');
    } finally {
      c.release();
    }
    expect(
      (await db.pool.query("select count(*)::int as n from relay.broadcasts where key = 'rolled-back'")).rows[0].n,
    ).toBe(0);
    expect((await db.pool.query('select count(*)::int as n from tg_relay_boss.job')).rows[0].n).toBe(before);
    // and the key is free again: the retried request enqueues everything once
    const again = await broadcast(db.pool, { key: 'rolled-back', chat_ids: chats(100), text: 'x' }, { botId: BOT });
    expect(await rowsOf(again.id)).toHaveLength(100);
  });

  it('calling the SQL enqueue again for the same broadcast adds nothing', async () => {
    const r = await broadcast(db.pool, { chat_ids: chats(20), text: 'twice' }, { botId: BOT });
    const { rows } = await db.pool.query('select * from relay.broadcast_enqueue($1, $2)', [r.id, chats(25)]);
    expect(rows[0].enqueued).toBe(5);
    expect(await rowsOf(r.id)).toHaveLength(25);
    expect(await jobsOf(r.id)).toHaveLength(25);
  });

  it('skips chats marked blocked or deactivated in relay.chat_status unless include_blocked', async () => {
    await db.pool.query(
      `insert into relay.chat_status (bot_id, chat_id, status, reason) values ($1, '3', 'blocked', 'test'), ($1, '4', 'deactivated', 'test'), ($1, '5', 'chat_not_found', 'test')
       on conflict do nothing`,
      [BOT],
    );
    const r = await broadcast(db.pool, { chat_ids: chats(10), text: 'skip' }, { botId: BOT });
    expect(r).toMatchObject({ recipients: 8, skipped: 2 });
    expect((await rowsOf(r.id)).map((x) => x.chat_id)).not.toContain('3');
    // "chat not found" is most often a caller's mistake, not the user's choice: not skipped
    expect((await rowsOf(r.id)).map((x) => x.chat_id)).toContain('5');
    const s = await broadcastStatus(db.pool, r.id);
    expect(s?.counts.skipped).toBe(2);
    const all = await broadcast(db.pool, { chat_ids: chats(10), text: 'skip', include_blocked: true }, { botId: BOT });
    expect(all).toMatchObject({ recipients: 10, skipped: 0 });
  });

  it('a registered audience query is the recipient list; an unknown one is refused', async () => {
    await db.pool.query('create table public.subscribers (chat_id bigint, bot text)');
    await db.pool.query(`insert into public.subscribers select g, $1 from generate_series(1001, 1040) g`, [BOT]);
    await registerAudience(db.pool, {
      name: 'subscribers',
      sql: 'select chat_id from public.subscribers where bot = $1',
    });
    const r = await broadcast(db.pool, { audience: 'subscribers', text: 'to subscribers' }, { botId: BOT });
    expect(r.recipients).toBe(40);
    await expect(broadcast(db.pool, { audience: 'nobody', text: 'x' }, { botId: BOT })).rejects.toBeInstanceOf(
      BroadcastValidationError,
    );
    await expect(registerAudience(db.pool, { name: 'broken', sql: 'select from nowhere' })).rejects.toBeInstanceOf(
      BroadcastValidationError,
    );
  });

  it('paid: refused without PAID_BROADCAST_RATE; with it, sends carry allow_paid_broadcast and the plan states the cost', async () => {
    await expect(
      broadcast(db.pool, { chat_ids: chats(5), text: 'p', paid: true }, { botId: BOT }),
    ).rejects.toBeInstanceOf(BroadcastValidationError);
    const r = await broadcast(db.pool, { chat_ids: chats(3000, 20000), text: 'paid' }, { botId: BOT, paidRate: 300 });
    // 3,000 messages at 300/s take 10 s, of which 30/s × 10 s = 300 are free: 2,700 × 0.1 Stars
    expect(r.plan).toMatchObject({
      paid: true,
      rate_per_second: 300,
      estimated_seconds: 10,
      paid_messages: 2700,
      cost_stars: 270,
    });
    const rows = await rowsOf(r.id);
    expect(rows[0].send_options).toEqual({ allow_paid_broadcast: true });
    const free = await broadcast(
      db.pool,
      { chat_ids: chats(5), text: 'p', paid: false },
      { botId: BOT, paidRate: 300 },
    );
    expect(free.plan).toMatchObject({ paid: false, cost_stars: 0 });
  });
});

describe('pause, resume, cancel act on the rows not yet sent', () => {
  it('pause moves pending rows out of the claimable state, resume brings them back, cancel fails them as cancelled', async () => {
    const r = await broadcast(db.pool, { chat_ids: chats(30, 5000), text: 'steer' }, { botId: BOT });
    // one row delivered and one in flight before the pause
    const ids = (
      await db.pool.query('select id from relay.outbound where broadcast_id = $1 order by id limit 2', [r.id])
    ).rows;
    await db.pool.query(`update relay.outbound set state = 'delivered', delivered_at = now() where id = $1`, [
      ids[0].id,
    ]);
    await db.pool.query(`update relay.outbound set state = 'delivering' where id = $1`, [ids[1].id]);

    expect((await broadcastStatus(db.pool, r.id))?.state).toBe('running');
    const p = await broadcastControl(db.pool, r.id, 'pause');
    expect(p.moved).toBe(28);
    expect(p.status).toMatchObject({
      state: 'paused',
      counts: { paused: 28, pending: 0, delivering: 1, delivered: 1 },
    });
    expect(p.status.eta_seconds).toBeNull();
    const claimable = await db.pool.query(
      `select count(*)::int as n from relay.outbound where broadcast_id = $1 and state = 'pending'`,
      [r.id],
    );
    expect(claimable.rows[0].n).toBe(0);
    await expect(broadcastControl(db.pool, r.id, 'pause')).rejects.toBeInstanceOf(BroadcastStateError);
    // once the send in flight ends nothing moves, but 28 are held: no ETA, not "0 s left"
    await db.pool.query(`update relay.outbound set state = 'delivered' where id = $1`, [ids[1].id]);
    expect((await broadcastStatus(db.pool, r.id))?.eta_seconds).toBeNull();
    await db.pool.query(`update relay.outbound set state = 'delivering' where id = $1`, [ids[1].id]);

    const q = await broadcastControl(db.pool, r.id, 'resume');
    expect(q.status).toMatchObject({ state: 'running', counts: { paused: 0, pending: 28 } });
    await expect(broadcastControl(db.pool, r.id, 'resume')).rejects.toBeInstanceOf(BroadcastStateError);

    await broadcastControl(db.pool, r.id, 'pause');
    const c = await broadcastControl(db.pool, r.id, 'cancel');
    expect(c.moved).toBe(28);
    expect(c.status).toMatchObject({
      state: 'cancelled',
      counts: { cancelled: 28, delivering: 1, delivered: 1, pending: 0 },
    });
    const jobs = await jobsOf(r.id);
    expect(jobs.filter((j) => j.state === 'cancelled')).toHaveLength(28);
    await expect(broadcastControl(db.pool, r.id, 'resume')).rejects.toBeInstanceOf(BroadcastStateError);
    await expect(broadcastControl(db.pool, r.id, 'cancel')).rejects.toBeInstanceOf(BroadcastStateError);
  });

  it('counts match SQL; a finished broadcast is completed and cannot be paused; the list is newest first', async () => {
    const r = await broadcast(db.pool, { chat_ids: chats(6, 9000), text: 'done' }, { botId: BOT });
    await db.pool.query(
      `update relay.outbound set state = 'delivered', delivered_at = now() where broadcast_id = $1 and chat_id in ('9000','9001','9002')`,
      [r.id],
    );
    await db.pool.query(
      `update relay.outbound set state = 'failed', last_status = 403, failed_reason = 'Forbidden: bot was blocked by the user'
        where broadcast_id = $1 and chat_id in ('9003','9004')`,
      [r.id],
    );
    await db.pool.query(
      `update relay.outbound set state = 'failed', last_status = 400, failed_reason = 'Bad Request: chat not found'
        where broadcast_id = $1 and chat_id = '9005'`,
      [r.id],
    );
    const s = await broadcastStatus(db.pool, r.id);
    expect(s).toMatchObject({
      state: 'completed',
      counts: { delivered: 3, blocked: 2, failed: 1, pending: 0 },
      eta_seconds: 0,
    });
    expect(s?.rate).toBeGreaterThan(0);
    await expect(broadcastControl(db.pool, r.id, 'pause')).rejects.toBeInstanceOf(BroadcastStateError);
    const list = await broadcastsList(db.pool, { limit: 2 });
    expect(list[0].id).toBe(r.id);
    const next = await broadcastsList(db.pool, { limit: 100, beforeId: list[1].id });
    expect(next.every((b) => BigInt(b.id) < BigInt(list[1].id))).toBe(true);
    expect(await broadcastStatus(db.pool, '999999999')).toBeNull();
  });
});
