/**
 * Section `broadcast-enqueue` of bench/outbound.ts: how fast a broadcast to N recipients is created.
 * Staged (today's path): the broadcast row and its N recipients in relay.broadcast_recipients (one
 * set-based insert), plus the first chunk fed, in one transaction. Measured in the same run against
 * (1) the old whole path, relay.broadcast_enqueue: N outbound rows + N ledger jobs in one
 * transaction, and (2) the library's batch enqueueOutboundBatch of the same N messages (1,000 per
 * statement and transaction). Then the feed rate: the staged recipients materialised into outbound
 * rows + ledger jobs, chunk by chunk as workers do (relay.broadcast_feed), until none are left.
 * Also times the repeated request (same key: nothing stored). Target ≥ 50,000 recipients/s staged.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { withTransaction } from '../libs/db';
import { broadcast, FEED_CHUNK_MAX } from '../libs/broadcasts';
import * as q from '../libs/broadcasts/queries';
import { enqueueOutboundBatch } from '../libs/outbound';
import { ledgerStatements } from '../libs/db/boss';
import { benchDatabase } from './support/database';

const BOT = '8200000001';
const since = (t: bigint) => Number(process.hrtime.bigint() - t) / 1e6;
const perSecond = (n: number, ms: number) => Math.round(n / (ms / 1000));

export async function benchBroadcastEnqueue(recipients: number): Promise<boolean> {
  const db = await benchDatabase();
  try {
    const chats = (from: number) => Array.from({ length: recipients }, (_, i) => String(from + i));
    const count = async (sql: string, id: string) => (await db.pool.query<{ n: number }>(sql, [id])).rows[0].n;
    const rowsOf = (id: string) => count('select count(*)::int as n from relay.outbound where broadcast_id = $1', id);
    const jobsOf = (id: string) =>
      count(
        'select count(*)::int as n from tg_relay_boss.job j join relay.outbound o on o.job_id = j.id where o.broadcast_id = $1',
        id,
      );
    console.log(
      `broadcast-enqueue: ${recipients} recipients; load average ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')}`,
    );

    // baseline: the library's batch enqueue of the same messages; one transaction per 1,000: its
    // per-chat locks (relay.outbound_lock_chat) for 100,000 chats in one transaction exceed the lock table
    const t0 = process.hrtime.bigint();
    const base = chats(100_000);
    for (let i = 0; i < base.length; i += 1000) {
      const batch = base
        .slice(i, i + 1000)
        .map((chat) => ({ msg_id: `base:${chat}`, chat_id: chat, text: 'baseline' }));
      await withTransaction(db.pool, (c) => enqueueOutboundBatch(c, ledgerStatements, batch, { botId: BOT }));
    }
    const baseMs = since(t0);

    // the old whole path: every outbound row and ledger job in the creating transaction
    const t1 = process.hrtime.bigint();
    const wholeId = await withTransaction(db.pool, async (c) => {
      const row = await q.broadcastInsert(c, wholeRow());
      await q.broadcastEnqueue(c, (row as q.BroadcastRow).id, chats(10_000_000));
      return (row as q.BroadcastRow).id;
    });
    const wholeMs = since(t1);

    const t2 = process.hrtime.bigint();
    const body = { key: 'bench', chat_ids: chats(20_000_000), text: 'broadcast' };
    const r = await broadcast(db.pool, body, { botId: BOT });
    const stagedMs = since(t2);
    const firstChunk = await rowsOf(r.id);

    const t3 = process.hrtime.bigint();
    const again = await broadcast(db.pool, body, { botId: BOT });
    const againMs = since(t3);

    // the feed, as workers run it (one chunk per transaction), with nothing sent meanwhile
    const t4 = process.hrtime.bigint();
    let chunks = 0;
    for (;;) {
      const f = await q.broadcastFeed(db.pool, r.id, 2 * recipients, FEED_CHUNK_MAX);
      chunks++;
      if (!f.unfed) break;
    }
    const feedMs = since(t4);
    const [rows, jobs, wholeRows] = [await rowsOf(r.id), await jobsOf(r.id), await rowsOf(wholeId)];
    const fedRows = rows - firstChunk;

    const rate = perSecond(recipients, stagedMs);
    const wholeRate = perSecond(recipients, wholeMs);
    const feedRate = perSecond(fedRows, feedMs);
    console.log(
      `staged: ${stagedMs.toFixed(0)} ms = ${rate} recipients/s (first chunk of ${firstChunk} rows fed in it) | ` +
        `old whole path relay.broadcast_enqueue ${wholeMs.toFixed(0)} ms = ${wholeRate} rows/s (${(rate / wholeRate).toFixed(2)}x) | ` +
        `baseline enqueueOutboundBatch ${baseMs.toFixed(0)} ms = ${perSecond(recipients, baseMs)} rows/s (${(rate / perSecond(recipients, baseMs)).toFixed(2)}x)`,
    );
    console.log(
      `feed: ${fedRows} rows + jobs in ${chunks} chunks of ≤ ${FEED_CHUNK_MAX}, ${feedMs.toFixed(0)} ms = ${feedRate} rows/s ` +
        `(${(feedRate / 30).toFixed(0)}× a bot's 30 msg/s) | rows ${rows}, jobs ${jobs}, old path rows ${wholeRows} | ` +
        `repeated key ${againMs.toFixed(0)} ms (created ${again.created}, same id ${again.id === r.id})`,
    );
    const ok = rate >= 50_000 && rows === recipients && jobs === recipients && !again.created;
    console.log(
      `target (≥ 50,000 recipients/s staged, then one row and job per recipient once fed, the repeat adds nothing): ${ok ? 'MET' : 'NOT MET'}`,
    );
    return ok;
  } finally {
    await db.close();
  }
}

/** A broadcast row for the old path (no key, a request hash of its own). */
function wholeRow(): q.BroadcastInsert {
  return {
    botId: BOT,
    key: null,
    method: 'sendMessage',
    text: 'whole',
    parseMode: null,
    disableNotification: false,
    replyMarkup: null,
    sendOptions: null,
    params: null,
    audience: { chat_ids: 0 },
    includeBlocked: false,
    paid: false,
    requestSha256: crypto.randomBytes(32).toString('hex'),
  };
}
