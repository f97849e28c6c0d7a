/**
 * bench/dispatch.ts, handler cost: what `dispatch.sessionStore()` and `dispatch.transaction(ctx)` add
 * to one dispatch, against the no-op handler measured in the same run (fixtures in test/fixtures/).
 *
 * (1) Latency, the issue's "added per update": one worker runs every handler at once
 * (handler-cost-mix-bot.ts, chosen by the update's chat), fed an open loop of single updates at a
 * modest rate (one per `intervalMs`, far below what the worker sustains, so nothing queues) that
 * interleave the handlers, so each handler and the no-op meet the same load at the same moment.
 * Timed from the bench's insert COMMIT being acknowledged to the NOTIFY that a trigger on
 * relay.inbox raises when the handled mark is written — delivered at that transaction's COMMIT, so
 * the session read and write, the handler's own transaction and the commit are all inside. (The rows'
 * own `received_at`/`handled_at` are `now()`, a transaction's start: `handled_at` of a
 * dispatch.transaction attempt is the handler's BEGIN, which would hide what is measured.) Two slots
 * run the no-op, so the bench prints its own noise floor next to the added p50; and a bare
 * `select 1` round trip is timed between updates, the unit the added cost is made of.
 * (2) Throughput, a burst over 1,000 chats per handler (its own worker) until every row is handled;
 * the sessions and bench_rows written are checked against it. Handlers rotate within each round.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import type { Pool } from '../../libs/db';
import { burstRate, CHATS, insertUpdates, log, resetInbox, withWorkers } from './dispatch-fleet';
import { fmt, median, pct } from './worker-process';

const LATENCY_FIRST_ID = 1_000_000_000;
/** The target for what sessions / the handler's transaction may add per update. */
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
  /** A latency round waits (up to a minute) for the 1-minute load average to fall to this. */
  maxLoad: number;
  /** Skip the throughput part. */
  latencyOnly?: boolean;
}

interface Latencies {
  /** ms per update, by slot (MIX_VARIANTS). */
  bySlot: number[][];
  roundTrips: number[];
}

/** The mix fixture's handlers, one per chat slot (chat_id mod 5). */
const MIX_HANDLERS = 'test/fixtures/handler-cost-mix-bot.ts';
const MIX_VARIANTS = [
  'no-op',
  'no-op (again)',
  'session counter',
  'dispatch.transaction insert',
  'session + transaction',
];
/** Divisible by 5, so chat MIX_CHAT_BASE + k is in slot k mod 5. */
const MIX_CHAT_BASE = 3_000_000;

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

/**
 * ms from each single update's acknowledged insert COMMIT to its handled mark's COMMIT (NOTIFY seen),
 * by slot (the update's chat mod 5, see MIX_VARIANTS); and the round trip of a bare `select 1` on the
 * bench's pool, taken between updates, as this moment's unit of cost.
 */
async function openLoopLatency(o: HandlerCostOptions, listener: Client, first: number): Promise<Latencies> {
  const handledAt = new Map<number, number>();
  const onNote = (m: { channel: string; payload?: string }) => {
    if (m.channel === 'bench_handled') handledAt.set(Number(m.payload), performance.now());
  };
  listener.on('notification', onNote);
  try {
    const committedAt = new Map<number, number>();
    const roundTrips: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < o.samples; i++) {
      const wait = t0 + i * o.intervalMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const id = first + i;
      // 250 chats in turn: slot i mod 5, and a chat's previous update is long done
      await insertUpdates(o.pool, 1, { first: id, chats: 1, chatBase: MIX_CHAT_BASE + (i % 250) });
      committedAt.set(id, performance.now());
      if (i % 2 === 1) {
        const r0 = performance.now();
        await o.pool.query('select 1');
        roundTrips.push(performance.now() - r0);
      }
    }
    const deadline = performance.now() + 60_000;
    while (handledAt.size < o.samples) {
      if (performance.now() > deadline) throw new Error(`only ${handledAt.size}/${o.samples} latency updates handled`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const bySlot: number[][] = MIX_VARIANTS.map(() => []);
    for (const [id, t] of committedAt) bySlot[(id - first) % 5].push((handledAt.get(id) as number) - t);
    return { bySlot, roundTrips };
  } finally {
    listener.off('notification', onNote);
  }
}

/** The in-worker figures of one round (test/fixtures/handler-cost-mix-bot.ts's lines), by slot. */
async function inWorkerRound(out: string, first: number, n: number): Promise<number[][]> {
  const deadline = performance.now() + 10_000;
  for (;;) {
    const byId = new Map<number, number>();
    const text = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
    for (const line of text.split('\n')) {
      const [id, ms] = line.split(' ').map(Number);
      if (id >= first && id < first + n) byId.set(id, ms);
    }
    if (byId.size === n || performance.now() > deadline) {
      const bySlot: number[][] = MIX_VARIANTS.map(() => []);
      for (const [id, ms] of byId) bySlot[(id - first) % 5].push(ms);
      return bySlot;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Waits up to a minute for the 1-minute load average to fall to `max`; the load it ran at. */
async function quietEnough(max: number): Promise<number> {
  const until = performance.now() + 60_000;
  while (os.loadavg()[0] > max && performance.now() < until) await new Promise((r) => setTimeout(r, 5_000));
  return os.loadavg()[0];
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

/** Updates/s of one handler (its own worker) over a burst; the writes are checked against it. */
async function throughput(o: HandlerCostOptions, v: Variant): Promise<number> {
  const tables = ['relay.sessions', 'bench_rows'];
  await resetInbox(o.pool, tables);
  return withWorkers({ url: o.url, apiRoot: o.apiRoot, handlers: v.handlers, env: workerEnv(o) }, async () => {
    const rate = await burstRate(o.pool, o.burst);
    await checkWrites(o.pool, v, o.burst);
    return rate;
  });
}

function workerEnv(o: HandlerCostOptions): Record<string, string> {
  return { WORKER_CONCURRENCY: String(o.concurrency), DB_POOL_MAX: String(o.poolMax), DISPATCH_ORDERING: 'chat' };
}

const ms = (x: number) => `${fmt(x, 2)} ms`;

/** p50/p90 per handler, the p50 added vs the no-op (pooled, and the median of per-round differences). */
function latencyTable(all: number[][], paired: number[][]): void {
  const base = pct(all[0], 50);
  log('| handler | p50 | p90 | p99 | p50 added vs no-op (all rounds) | median of per-round added |');
  log('| --- | --- | --- | --- | --- | --- |');
  MIX_VARIANTS.forEach((name, i) => {
    const xs = all[i];
    const added = i === 0 ? '—' : ms(pct(xs, 50) - base);
    const perRound = i === 0 ? '—' : ms(median(paired[i]));
    log(`| ${name} | ${ms(pct(xs, 50))} | ${ms(pct(xs, 90))} | ${ms(pct(xs, 99))} | ${added} | ${perRound} |`);
  });
}

/** Each handler's verdict against the target; `noise` is the two no-op slots' p50 difference. */
function verdicts(all: number[][], noise: number, strict: boolean): string {
  const base = pct(all[0], 50);
  return [2, 3, 4]
    .map((i) => {
      const added = pct(all[i], 50) - base;
      const verdict =
        added <= TARGET_ADDED_P50_MS
          ? 'met'
          : !strict && added <= TARGET_ADDED_P50_MS + noise
            ? 'within noise'
            : 'NOT MET';
      return `${MIX_VARIANTS[i]} ${verdict} (${ms(added)})`;
    })
    .join('; ');
}

/**
 * The latency part: one worker running every handler (handler-cost-mix-bot.ts), fed interleaved
 * single updates, so each handler and the no-op are measured under the same load at the same time;
 * end to end from the bench, and inside the worker (first middleware → handled COMMIT heard there).
 */
async function latency(o: HandlerCostOptions, listener: Client): Promise<void> {
  log(
    `\nlatency: 1 worker running all handlers (test/fixtures/handler-cost-mix-bot.ts, chosen by chat), ${o.rounds} round(s) of ${o.samples} single updates`,
  );
  log(
    `interleaved at ${fmt(1000 / o.intervalMs)}/s (${fmt(o.samples / 5)} per handler per round); each round waits for load ≤ ${o.maxLoad}`,
  );
  await resetInbox(o.pool, ['relay.sessions', 'bench_rows']);
  const out = path.join(os.tmpdir(), `bench-inworker-${process.pid}.txt`);
  fs.rmSync(out, { force: true });
  const ends = { all: MIX_VARIANTS.map((): number[] => []), paired: MIX_VARIANTS.map((): number[] => []) };
  const inside = { all: MIX_VARIANTS.map((): number[] => []), paired: MIX_VARIANTS.map((): number[] => []) };
  const roundTrips: number[] = [];
  const loads: number[] = [];
  const add = (into: typeof ends, bySlot: number[][]) => {
    const base = pct(bySlot[0], 50);
    bySlot.forEach((xs, i) => {
      into.all[i].push(...xs);
      into.paired[i].push(pct(xs, 50) - base);
    });
  };
  const env = { ...workerEnv(o), BENCH_INWORKER_OUT: out };
  await withWorkers({ url: o.url, apiRoot: o.apiRoot, handlers: MIX_HANDLERS, env }, async () => {
    for (let round = 0; round < o.rounds; round++) {
      loads.push(await quietEnough(o.maxLoad));
      const first = LATENCY_FIRST_ID + round * o.samples;
      const r = await openLoopLatency(o, listener, first);
      const w = await inWorkerRound(out, first, o.samples);
      add(ends, r.bySlot);
      add(inside, w);
      roundTrips.push(...r.roundTrips);
      const p50s = (bySlot: number[][]) => bySlot.map((xs, i) => `${MIX_VARIANTS[i]} ${ms(pct(xs, 50))}`).join(', ');
      log(`  round ${round + 1} (load ${fmt(loads[round], 2)}): in worker p50 ${p50s(w)}`);
      log(`    end to end p50 ${p50s(r.bySlot)}; select 1 p50 ${ms(pct(r.roundTrips, 50))}`);
    }
  });
  fs.rmSync(out, { force: true });
  const rtt = pct(roundTrips, 50);
  log(
    `\nround-trip floor (select 1 on the bench's pool, between updates): p50 ${ms(rtt)}, p90 ${ms(pct(roundTrips, 90))}`,
  );
  log(`load average (1 min) at the rounds' start: ${loads.map((l) => fmt(l, 2)).join(', ')}`);
  log("\nin the worker: first middleware → the handled mark's COMMIT heard in the worker (NOTIFY)");
  latencyTable(inside.all, inside.paired);
  const noiseIn = Math.abs(pct(inside.all[1], 50) - pct(inside.all[0], 50));
  log(`noise floor: the two no-op slots differ by ${ms(noiseIn)} at p50`);
  log(
    `(target ≤ ${TARGET_ADDED_P50_MS} ms p50 added per update, in the worker: ${verdicts(inside.all, noiseIn, true)})`,
  );
  log("\nend to end: insert COMMIT acknowledged → the handled mark's COMMIT (NOTIFY heard by the bench)");
  latencyTable(ends.all, ends.paired);
  const noise = Math.abs(pct(ends.all[1], 50) - pct(ends.all[0], 50));
  log(`noise floor: the two no-op slots differ by ${ms(noise)} at p50`);
  log(`(end to end: ${verdicts(ends.all, noise, false)})`);
}

/** The throughput part: each handler in its own worker, rotating within each round; medians over rounds. */
async function throughputs(o: HandlerCostOptions): Promise<void> {
  log(
    `\nthroughput: 1 worker per handler, ${fmt(o.burst)} updates over ${fmt(CHATS)} chats, ${o.rounds} round(s), medians`,
  );
  const rates = new Map<string, number[]>();
  for (let round = 0; round < o.rounds; round++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]);
    for (const v of order) {
      const rate = await throughput(o, v);
      (rates.get(v.name) ?? rates.set(v.name, []).get(v.name))?.push(rate);
      log(`  round ${round + 1}: ${v.name.padEnd(27)} ${fmt(rate).padStart(6)} updates/s`);
    }
  }
  const baseRate = median(rates.get('no-op') as number[]);
  log('\n| handler | updates/s | vs no-op |');
  log('| --- | --- | --- |');
  for (const v of VARIANTS) {
    const rate = median(rates.get(v.name) as number[]);
    log(`| ${v.name} | ${fmt(rate)} | ${fmt(rate / baseRate, 2)}× |`);
  }
}

/** Runs the handler-cost section: latency (interleaved, one worker), then throughput (one worker each). */
export async function handlerCost(o: HandlerCostOptions): Promise<void> {
  log(
    `\nhandler cost: WORKER_CONCURRENCY=${o.concurrency}, DB_POOL_MAX=${o.poolMax}, per-chat order, against the no-op in the same run`,
  );
  await prepare(o.pool);
  const listener = new Client({ connectionString: o.url });
  await listener.connect();
  await listener.query('listen bench_handled');
  try {
    await latency(o, listener);
    if (!o.latencyOnly) await throughputs(o);
  } finally {
    await listener.end();
    await unprepare(o.pool);
  }
}
