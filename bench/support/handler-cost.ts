/**
 * bench/dispatch.ts, handler cost: what `dispatch.sessionStore()` and `dispatch.transaction(ctx)` add
 * to one dispatch, against the no-op handler measured in the same run (fixtures in test/fixtures/).
 *
 * Per handler and round, with the workers up: (1) latency, an open loop of low-rate single updates
 * (one per `intervalMs`, far below what the worker sustains, so nothing queues), timed from the
 * bench's insert COMMIT being acknowledged to the NOTIFY that a trigger on relay.inbox raises when the
 * handled mark is written — delivered at that transaction's COMMIT, so the handler's own transaction,
 * the session write and the commit are all inside. (The rows' own `received_at`/`handled_at` are
 * `now()`, a transaction's start: `handled_at` of a dispatch.transaction attempt is the handler's
 * BEGIN, which would hide what is measured.) The trigger fires only for the latency phase's update_ids.
 * (2) throughput, a burst over 1,000 chats until every row is handled; the sessions and bench_rows
 * written are checked against it. Handlers rotate within each round; figures are medians over rounds.
 */
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import type { Pool } from '../../libs/db';
import { burstRate, CHATS, insertUpdates, log, resetInbox, withWorkers } from './dispatch-fleet';
import { fmt, median, pct } from './worker-process';

const LATENCY_FIRST_ID = 1_000_000_000;
/** The issue's target for what sessions / the handler's transaction may add per update. */
const TARGET_ADDED_P50_MS = 1;

interface Variant {
  name: string;
  handlers: string;
  sessions: boolean;
  rows: boolean;
}

const VARIANTS: Variant[] = [
  { name: 'no-op', handlers: 'test/fixtures/noop-bot.ts', sessions: false, rows: false },
  { name: 'session counter', handlers: 'test/fixtures/session-counter-bot.ts', sessions: true, rows: false },
  {
    name: 'dispatch.transaction insert',
    handlers: 'test/fixtures/transaction-insert-bot.ts',
    sessions: false,
    rows: true,
  },
  { name: 'session + transaction', handlers: 'test/fixtures/session-transaction-bot.ts', sessions: true, rows: true },
];

export interface HandlerCostOptions {
  url: string;
  pool: Pool;
  apiRoot: string;
  rounds: number;
  burst: number;
  samples: number;
  intervalMs: number;
  concurrency: number;
  poolMax: number;
}

interface Sample {
  rate: number;
  p50: number;
  p90: number;
}

async function prepare(pool: Pool): Promise<void> {
  await pool.query(`create table if not exists bench_rows (update_id bigint not null, chat_id bigint)`);
  await pool.query(
    `create or replace function bench_handled_notify() returns trigger language plpgsql as $$
     begin perform pg_notify('bench_handled', new.update_id::text); return null; end $$`,
  );
  await pool.query(`drop trigger if exists bench_handled on relay.inbox`);
  await pool.query(
    `create trigger bench_handled after update of state on relay.inbox for each row
       when (new.state = 'handled' and new.update_id >= ${LATENCY_FIRST_ID}) execute function bench_handled_notify()`,
  );
}

async function unprepare(pool: Pool): Promise<void> {
  await pool.query(`drop trigger if exists bench_handled on relay.inbox`);
  await pool.query(`drop function if exists bench_handled_notify()`);
  await pool.query(`drop table if exists bench_rows`);
}

/** ms from each single update's acknowledged insert COMMIT to its handled mark's COMMIT (NOTIFY seen). */
async function openLoopLatency(o: HandlerCostOptions, listener: Client): Promise<number[]> {
  const handledAt = new Map<number, number>();
  const onNote = (m: { channel: string; payload?: string }) => {
    if (m.channel === 'bench_handled') handledAt.set(Number(m.payload), performance.now());
  };
  listener.on('notification', onNote);
  try {
    const committedAt = new Map<number, number>();
    const t0 = performance.now();
    for (let i = 0; i < o.samples; i++) {
      const wait = t0 + i * o.intervalMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const id = LATENCY_FIRST_ID + i;
      // 50 chats in turn: a chat's session is read and updated, and its previous update is long done
      await insertUpdates(o.pool, 1, { first: id, chats: 1, chatBase: 2_000_000 + (i % 50) });
      committedAt.set(id, performance.now());
    }
    const deadline = performance.now() + 60_000;
    while (handledAt.size < o.samples) {
      if (performance.now() > deadline) throw new Error(`only ${handledAt.size}/${o.samples} latency updates handled`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return [...committedAt].map(([id, t]) => (handledAt.get(id) as number) - t);
  } finally {
    listener.off('notification', onNote);
  }
}

/** The sessions' counters must add up to the handled updates, and bench_rows hold one row per update. */
async function checkWrites(pool: Pool, v: Variant, n: number): Promise<void> {
  const { rows } = await pool.query(
    `select (select coalesce(sum((value->>'n')::int), 0)::int from relay.sessions) as counted,
            (select count(*)::int from bench_rows) as inserted`,
  );
  const want = { counted: v.sessions ? n : 0, inserted: v.rows ? n : 0 };
  if (rows[0].counted !== want.counted || rows[0].inserted !== want.inserted)
    throw new Error(`${v.name}: expected ${JSON.stringify(want)}, got ${JSON.stringify(rows[0])}`);
}

async function measureVariant(o: HandlerCostOptions, v: Variant, listener: Client): Promise<Sample> {
  const tables = ['relay.sessions', 'bench_rows'];
  await resetInbox(o.pool, tables);
  const env = {
    WORKER_CONCURRENCY: String(o.concurrency),
    DB_POOL_MAX: String(o.poolMax),
    DISPATCH_ORDERING: 'chat',
  };
  return withWorkers({ url: o.url, apiRoot: o.apiRoot, handlers: v.handlers, env }, async () => {
    const latencies = await openLoopLatency(o, listener);
    await resetInbox(o.pool, tables);
    const rate = await burstRate(o.pool, o.burst);
    await checkWrites(o.pool, v, o.burst);
    return { rate, p50: pct(latencies, 50), p90: pct(latencies, 90) };
  });
}

function printSummary(results: Map<string, Sample[]>, added: Map<string, number[]>): void {
  const base = results.get('no-op') as Sample[];
  const baseRate = median(base.map((s) => s.rate));
  log('\n| handler | updates/s | vs no-op | latency p50 | latency p90 | p50 added vs no-op |');
  log('| --- | --- | --- | --- | --- | --- |');
  for (const v of VARIANTS) {
    const s = results.get(v.name) as Sample[];
    const rate = median(s.map((x) => x.rate));
    const plus = v.name === 'no-op' ? '—' : `${fmt(median(added.get(v.name) as number[]), 2)} ms`;
    log(
      `| ${v.name} | ${fmt(rate)} | ${fmt(rate / baseRate, 2)}× | ${fmt(median(s.map((x) => x.p50)), 2)} ms | ${fmt(median(s.map((x) => x.p90)), 2)} ms | ${plus} |`,
    );
  }
  const over = VARIANTS.slice(1).filter((v) => median(added.get(v.name) as number[]) > TARGET_ADDED_P50_MS);
  log(
    `\n(target: ≤ ${TARGET_ADDED_P50_MS} ms p50 added per update: ${over.length === 0 ? 'met' : `NOT met by ${over.map((v) => v.name).join(', ')}`})`,
  );
}

/** Runs the handler-cost section and prints its rounds, its table and the target's verdict. */
export async function handlerCost(o: HandlerCostOptions): Promise<void> {
  log(
    `\nhandler cost: 1 worker, WORKER_CONCURRENCY=${o.concurrency}, DB_POOL_MAX=${o.poolMax}, per-chat order; throughput: ${fmt(o.burst)} updates over ${fmt(CHATS)} chats;`,
  );
  log(
    `latency: open loop of ${o.samples} single updates at ${fmt(1000 / o.intervalMs)}/s, insert COMMIT acknowledged → handled mark's COMMIT (NOTIFY); ${o.rounds} round(s), medians`,
  );
  await prepare(o.pool);
  const listener = new Client({ connectionString: o.url });
  await listener.connect();
  await listener.query('listen bench_handled');
  const results = new Map<string, Sample[]>();
  const added = new Map<string, number[]>();
  try {
    for (let round = 0; round < o.rounds; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]);
      const byName = new Map<string, Sample>();
      for (const v of order) {
        const s = await measureVariant(o, v, listener);
        byName.set(v.name, s);
        (results.get(v.name) ?? results.set(v.name, []).get(v.name))?.push(s);
        log(
          `  round ${round + 1}: ${v.name.padEnd(27)} ${fmt(s.rate).padStart(6)} updates/s, latency p50 ${fmt(s.p50, 2)} ms, p90 ${fmt(s.p90, 2)} ms`,
        );
      }
      // added latency is paired within the round, so a load swing between rounds cancels out
      const base = (byName.get('no-op') as Sample).p50;
      for (const v of VARIANTS.slice(1))
        (added.get(v.name) ?? added.set(v.name, []).get(v.name))?.push((byName.get(v.name) as Sample).p50 - base);
    }
    printSummary(results, added);
  } finally {
    await listener.end();
    await unprepare(o.pool);
  }
}
