/**
 * Section `broadcast-enqueue` of bench/outbound.ts: how fast a broadcast to N recipients is
 * enqueued (the broadcast row, N outbound rows `bcast:{id}:{chat}` and N ledger jobs, committed in
 * one transaction by relay.broadcast_enqueue), against the baseline measured in the same run: the
 * same N messages through enqueueOutboundBatch (the library's batch path, 1,000 per statement and
 * transaction). Also times the repeated request (same key: nothing enqueued). Target ≥ 50,000 rows/s.
 */
import { withTransaction } from '../libs/db';
import { broadcast } from '../libs/broadcasts';
import { enqueueOutboundBatch } from '../libs/outbound';
import { ledgerStatements } from '../libs/db/boss';
import { benchDatabase } from './support/database';

const BOT = '8200000001';

export async function benchBroadcastEnqueue(recipients: number): Promise<boolean> {
  const db = await benchDatabase();
  try {
    const chats = Array.from({ length: recipients }, (_, i) => String(100_000 + i));
    const count = async (sql: string) => (await db.pool.query<{ n: number }>(sql)).rows[0].n;

    // baseline: the library's batch enqueue of the same messages
    const t0 = process.hrtime.bigint();
    // one transaction per 1,000: its per-chat locks (relay.outbound_lock_chat) for 100,000 chats in
    // one transaction exceed the lock table ("out of shared memory")
    for (let i = 0; i < chats.length; i += 1000) {
      const batch = chats
        .slice(i, i + 1000)
        .map((chat) => ({ msg_id: `base:${chat}`, chat_id: chat, text: 'baseline' }));
      await withTransaction(db.pool, (c) => enqueueOutboundBatch(c, ledgerStatements, batch, { botId: BOT }));
    }
    const baseMs = Number(process.hrtime.bigint() - t0) / 1e6;

    const t1 = process.hrtime.bigint();
    const r = await broadcast(db.pool, { key: 'bench', chat_ids: chats, text: 'broadcast' }, { botId: BOT });
    const bcastMs = Number(process.hrtime.bigint() - t1) / 1e6;

    const t2 = process.hrtime.bigint();
    const again = await broadcast(db.pool, { key: 'bench', chat_ids: chats, text: 'broadcast' }, { botId: BOT });
    const againMs = Number(process.hrtime.bigint() - t2) / 1e6;

    const rows = await count(`select count(*)::int as n from relay.outbound where broadcast_id = ${Number(r.id)}`);
    const jobs = await count(
      `select count(*)::int as n from tg_relay_boss.job j join relay.outbound o on o.job_id = j.id where o.broadcast_id = ${Number(r.id)}`,
    );
    const rate = recipients / (bcastMs / 1000);
    const baseRate = recipients / (baseMs / 1000);
    console.log(
      `broadcast-enqueue: ${recipients} recipients in ${bcastMs.toFixed(0)} ms = ${Math.round(rate)} rows/s ` +
        `(baseline enqueueOutboundBatch ${baseMs.toFixed(0)} ms = ${Math.round(baseRate)} rows/s; ratio ${(rate / baseRate).toFixed(2)}x) | ` +
        `rows ${rows}, jobs ${jobs}, repeated key ${againMs.toFixed(0)} ms (created ${again.created}, same id ${again.id === r.id})`,
    );
    const ok = rate >= 50_000 && rows === recipients && jobs === recipients && !again.created;
    console.log(
      `target (≥ 50,000 rows/s, one row and job per recipient, the repeat adds nothing): ${ok ? 'MET' : 'NOT MET'}`,
    );
    return ok;
  } finally {
    await db.close();
  }
}
