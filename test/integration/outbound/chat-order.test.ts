/**
 * Per-chat FIFO is id order, and workers claim a chat's head among committed rows. Found by the soak:
 * a handler reply committed after a message enqueued meanwhile to the same chat had the lower id, so
 * the later message was claimed and sent first and the two were in flight together. Every way in now
 * takes a per-chat transaction lock before it takes an id (relay.outbound_lock_chat), so the ids of
 * one chat follow commit order.
 */
import { Client } from 'pg';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
const BOT = '1000000077';

beforeAll(async () => {
  db = await createMigratedDatabase('ob_order');
});
afterAll(async () => {
  await db.drop();
});

async function session(): Promise<Client> {
  const c = new Client({ connectionString: db.url });
  await c.connect();
  return c;
}

const enqueue = (c: Client, msgId: string, chat: number) =>
  c
    .query('select id from relay.enqueue_outbound($1, $2, $3, bot_id => $4)', [
      msgId,
      String(chat),
      `text ${msgId}`,
      BOT,
    ])
    .then((r) => Number(r.rows[0].id));

/** Resolves to true when `p` settles within `ms`. */
const settlesWithin = (p: Promise<unknown>, ms: number) =>
  Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);

it("a second transaction enqueueing to the same chat waits for the first to commit, so the chat's ids follow commit order", async () => {
  const [t1, t2, t3] = await Promise.all([session(), session(), session()]);
  try {
    await t1.query('begin');
    const first = await enqueue(t1, 'order-a', 501);
    await t2.query('begin');
    const second = enqueue(t2, 'order-b', 501);
    expect(await settlesWithin(second, 400)).toBe(false); // blocked behind t1's uncommitted row

    // another chat is not held up
    await t3.query('begin');
    expect(await settlesWithin(enqueue(t3, 'order-c', 502), 2_000)).toBe(true);
    await t3.query('commit');

    await t1.query('commit');
    const secondId = await second;
    await t2.query('commit');
    expect(secondId).toBeGreaterThan(first);
  } finally {
    await Promise.all([t1, t2, t3].map((c) => c.end()));
  }
});

it("an alert waits for an uncommitted message to the operators' chat, too", async () => {
  const [t1, t2] = await Promise.all([session(), session()]);
  try {
    await db.pool.query(`select id from relay.enqueue_outbound('order-failed', '503', 'x', bot_id => $1)`, [BOT]);
    await db.pool.query(
      `update relay.outbound set state = 'failed', failed_reason = 'Forbidden: bot was blocked by the user' where msg_id = 'order-failed'`,
    );
    await t1.query('begin');
    const opsMessage = await enqueue(t1, 'order-ops', 4242);
    await t2.query('begin');
    const alert = t2
      .query(
        `select relay.outbound_raise_alerts(array[(select id from relay.outbound where msg_id = 'order-failed')], '4242') as id`,
      )
      .then((r) => Number(r.rows[0].id));
    expect(await settlesWithin(alert, 400)).toBe(false);
    await t1.query('commit');
    expect(await alert).toBeGreaterThan(opsMessage);
    await t2.query('commit');
  } finally {
    await Promise.all([t1, t2].map((c) => c.end()));
  }
});
