/**
 * Where the ingress batch transaction's time goes (docs/ingress.md, "Batch cost"): runs `persistBatch`
 * directly on a fresh database, 100 message updates per batch over 100 chats (100 inbox rows, 100
 * captures, 200 pg-boss jobs), and times every statement on the client (sent → answered), grouped
 * by kind, plus the whole batch (BEGIN sent → COMMIT acknowledged). The first 20 batches warm up.
 *
 *   npx tsx bench/ingress-breakdown.ts [batches=200]
 *   EXPLAIN=1 …   also prints EXPLAIN (ANALYZE, BUFFERS, WAL) of the big statements of the last batch
 *                 (run in a savepoint that is rolled back, then the statement runs for real)
 *   DROP=idx,…    drops these relay.* indexes first (to measure what maintaining them costs)
 *   DROP_LEDGER_FK=1  drops pg-boss's job → queue foreign keys first (to measure their deferred
 *                 checks at COMMIT; never done to a real database)
 */
import type { PoolClient } from 'pg';
import { createBoss } from '../libs/db';
import { persistBatch } from '../libs/ingress/persist-batch';
import { planBatch } from '../libs/ingress/plan-batch';
import { cursorAcquire, cursorEnsure } from '../libs/ingress/queries';
import { benchDatabase } from './support/database';
import { messageUpdates } from './support/updates';
import { loadAverage, pct } from './support/worker-process';

const BATCHES = Number(process.argv[2] ?? 200);
const WARMUP = 20;

function label(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim().toLowerCase();
  if (t === 'begin' || t === 'commit' || t === 'rollback') return t;
  if (t.startsWith('with cur as')) return 'batch statement';
  if (t.includes('update relay.cursor')) return 'cursor';
  if (t.includes('insert into relay.inbox')) return 'inbox';
  if (t.includes('insert into relay.captures')) return 'captures';
  if (t.includes('.job')) return 'jobs (pg-boss insert)';
  if (t.includes('pg_notify')) return 'notify';
  return t.slice(0, 40);
}
const EXPLAINED = new Set(['batch statement', 'inbox', 'captures', 'jobs (pg-boss insert)']);

async function main(): Promise<void> {
  const db = await benchDatabase();
  const boss = createBoss(db.url, { max: 1 });
  for (const ix of (process.env.DROP ?? '').split(',').filter(Boolean))
    await db.pool.query(`drop index relay.${ix.replace(/[^a-z0-9_]/g, '')}`);
  if (process.env.DROP_LEDGER_FK === '1') {
    await db.pool.query(`do $$ declare r record; begin
      for r in select conrelid::regclass as t, conname from pg_constraint where conname in ('q_fkey', 'dlq_fkey') and connamespace = 'tg_relay_boss'::regnamespace
      loop execute format('alter table %s drop constraint %I', r.t, r.conname); end loop; end $$`);
  }
  const botId = '4242';
  await cursorEnsure(db.pool, botId);
  const g = await cursorAcquire(db.pool, botId, 'bench', 3_600_000);
  const fence = { owner: 'bench', generation: g!.generation };
  const times = new Map<string, number[]>();
  const batchMs: number[] = [];
  let explainNow = false;
  const connect = db.pool.connect.bind(db.pool);
  const wrapped = new WeakSet<object>();
  (db.pool as unknown as { connect: () => Promise<PoolClient> }).connect = async () => {
    const c = await connect();
    if (wrapped.has(c)) return c;
    wrapped.add(c);
    const q = c.query.bind(c) as (...a: unknown[]) => Promise<unknown>;
    (c as unknown as { query: unknown }).query = async (...a: unknown[]) => {
      const text = typeof a[0] === 'string' ? a[0] : (a[0] as { text: string }).text;
      const l = label(text);
      if (explainNow && EXPLAINED.has(l)) {
        const values = typeof a[0] === 'string' ? a[1] : (a[0] as { values: unknown[] }).values;
        await q('savepoint explain');
        const r = (await q(`explain (analyze, buffers, wal) ${text}`, values)) as { rows: Record<string, string>[] };
        console.log(`--- ${l}\n${r.rows.map((x) => x['QUERY PLAN']).join('\n')}`);
        await q('rollback to savepoint explain');
      }
      const t0 = performance.now();
      try {
        return await q(...a);
      } finally {
        if (!times.has(l)) times.set(l, []);
        times.get(l)!.push(performance.now() - t0);
      }
    };
    return c;
  };
  let id = 1;
  for (let b = 0; b < BATCHES + WARMUP; b++) {
    const items = messageUpdates(id);
    id += 100;
    const plan = planBatch(items, { policy: 'stop', offset: id - 100, transport: 'polling' });
    if (b === WARMUP) times.clear();
    explainNow = process.env.EXPLAIN === '1' && b === BATCHES + WARMUP - 1;
    const t0 = performance.now();
    await persistBatch({ pool: db.pool, boss }, plan, {
      botId,
      fence,
      leaseTtlMs: 3_600_000,
      allowedChatIds: new Set(),
      dispatchUnauthorized: false,
      halt: null,
    });
    if (b >= WARMUP && !explainNow) batchMs.push(performance.now() - t0);
  }
  const load = loadAverage();
  console.log(`${BATCHES} batches of 100 updates (captures + dispatch jobs); load average ${load}`);
  for (const [l, xs] of times) {
    console.log(
      `${l.padEnd(24)} ${String(xs.length / BATCHES).padStart(2)}×/batch  p50 ${pct(xs, 50).toFixed(2)} ms  p99 ${pct(xs, 99).toFixed(2)} ms`,
    );
  }
  const trips = [...times.values()].reduce((a, x) => a + x.length, 0) / BATCHES;
  console.log(
    `batch (BEGIN → COMMIT acknowledged) p50 ${pct(batchMs, 50).toFixed(2)} ms, p99 ${pct(batchMs, 99).toFixed(2)} ms; ${trips} round trips per batch`,
  );
  await boss.stop({ graceful: false, wait: false }).catch(() => undefined);
  await db.close();
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
