/**
 * A worker that stops gives its unfinished claims back (shutdown release). A broadcast row whose
 * broadcast was paused or cancelled while it was claimed must not come back claimable: pause and
 * cancel leave rows in flight alone, so the release is where they are held.
 */
import { withTransaction } from '../../../libs/db';
import { QUEUES } from '../../../libs/db/boss';
import { broadcast, broadcastControl, broadcastStatus } from '../../../libs/broadcasts';
import { createOutboundRateLimiter, OUTBOUND_RATE_LIMITS_DEFAULT } from '../../../libs/outbound';
import { createOutboundClaimStore } from '../../../libs/outbound/send-kind';
import { createMigratedDatabase } from '../../support/db';

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
beforeAll(async () => {
  db = await createMigratedDatabase('bc_release');
});
afterAll(async () => {
  await db.drop();
});

let botSeq = 7100;

async function claimedBroadcast(chats: number) {
  const botId = String(++botSeq);
  // reactive: the claim takes every due row at once, whatever the bulk bounds
  const limiter = createOutboundRateLimiter({ ...OUTBOUND_RATE_LIMITS_DEFAULT, mode: 'reactive' });
  const store = createOutboundClaimStore({ botId, limiter, opsChatId: null, horizonMs: 10_000 });
  const chatIds = Array.from({ length: chats }, (_, i) => String(5000 + i));
  const b = await broadcast(db.pool, { chat_ids: chatIds, text: 'held' }, { botId });
  const claimed = await store.claim(db.pool, { limit: 50, workerId: 'w-rel', now: null, queue: QUEUES.outbound });
  expect(claimed).toHaveLength(chats);
  const release = () =>
    withTransaction(db.pool, (c) =>
      store.release(
        c,
        claimed.map((j) => ({ id: j.id, claimId: j.claimId })),
        null,
      ),
    );
  const rows = async () =>
    (
      await db.pool.query<{ state: string; failed_reason: string | null; job_state: string | null }>(
        `select o.state, o.failed_reason, j.state as job_state
           from relay.outbound o left join tg_relay_boss.job j on j.id = o.job_id
          where o.broadcast_id = $1 order by o.id`,
        [b.id],
      )
    ).rows;
  return { id: b.id, release, rows };
}

describe('shutdown release of broadcast rows', () => {
  it('a running broadcast: released rows are pending again (claimable)', async () => {
    const t = await claimedBroadcast(3);
    await t.release();
    expect((await t.rows()).map((r) => r.state)).toEqual(['pending', 'pending', 'pending']);
  });

  it('paused while claimed: released rows wait paused, and resume sends them', async () => {
    const t = await claimedBroadcast(3);
    await broadcastControl(db.pool, t.id, 'pause');
    await t.release();
    expect((await t.rows()).map((r) => r.state)).toEqual(['paused', 'paused', 'paused']);
    expect((await broadcastStatus(db.pool, t.id))?.counts).toMatchObject({ paused: 3, pending: 0, delivering: 0 });
    await broadcastControl(db.pool, t.id, 'resume');
    expect((await t.rows()).map((r) => r.state)).toEqual(['pending', 'pending', 'pending']);
  });

  it('cancelled while claimed: released rows fail as cancelled, with their jobs', async () => {
    const t = await claimedBroadcast(2);
    await broadcastControl(db.pool, t.id, 'cancel');
    await t.release();
    const rows = await t.rows();
    expect(rows.map((r) => [r.state, r.failed_reason])).toEqual([
      ['failed', 'cancelled'],
      ['failed', 'cancelled'],
    ]);
    expect(rows.map((r) => r.job_state)).toEqual(['cancelled', 'cancelled']);
  });
});
