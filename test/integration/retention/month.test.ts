/**
 * Long-run proof (docs/retention.md): a simulated month in well under a minute. Each simulated day
 *  - a real worker (claim loop → sandbox collector) delivers that day's live captures, which are then
 *    backdated to the simulated day (the fleet's real rows, attempts and pg-boss jobs);
 *  - the rest of the day's traffic is bulk-written as the fleet leaves it (delivered/failed
 *    captures and outbound, handled inbox, resolved quarantine, admin audit rows, each item with its
 *    attempt rows and pg-boss job);
 *  - `prune` runs with the simulated time as "now" (an injected clock), then VACUUM stands in for
 *    the autovacuum a real month would see.
 * Windows are scaled so both fill within the month: RETENTION 7d, RETENTION_FAILED 14d.
 * Asserted: once the windows are full, every table's rows stay within rate × (window + one prune
 * period) and the total size stays within 1.5× its size on the day the windows filled; work that
 * never finished (old pending rows) is all still there. Claim latency is printed, not asserted.
 */
import { performance } from 'node:perf_hooks';
import { BOSS_SCHEMA, createBoss, Pool, QUEUES } from '../../../libs/db';
import { createCaptureKind, createCaptureStore } from '../../../libs/captures/deliver';
import { createWorker, Worker } from '../../../libs/queue';
import { runPrune } from '../../../libs/retention/prune';
import { silentLogger } from '../../../libs/observability/logger';
import { createCollector, Collector } from '../../../libs/sandbox';
import { insertCaptures } from '../../support/capture-fixtures';
import { createMigratedDatabase } from '../../support/db';
import { waitFor } from '../../support/wait-for';

const DAY = 86_400_000;
const DAYS = 30;
const RETENTION_DAYS = 7;
const FAILED_DAYS = 14;
/** Per simulated day. */
const RATE = {
  liveCaptures: 100,
  captures: 1500,
  capturesFailed: 30,
  outbound: 400,
  outboundFailed: 10,
  inbox: 800,
  inboxFailed: 10,
  quarantine: 5,
  audit: 20,
  stuckPending: 5,
};

let db: Awaited<ReturnType<typeof createMigratedDatabase>>;
let pool: Pool;
let collector: Collector;
let worker: Worker | undefined;

beforeAll(async () => {
  db = await createMigratedDatabase('prune_month');
  pool = db.pool;
  collector = createCollector();
  await collector.start();
});
afterAll(async () => {
  await worker?.stop({ timeoutMs: 2_000 });
  await collector?.stop();
  await db?.drop();
});

/** One simulated day's finished traffic, written as the fleet leaves it, timed within [dayStart, dayStart + 1 day). */
async function bulkDay(dayStart: Date, day: number): Promise<void> {
  const spread = `($1::timestamptz + (g::float8 / $2) * interval '1 day')`;
  const items = async (
    table: 'captures' | 'outbound' | 'inbox',
    n: number,
    state: string,
    subject: string,
    queue: string,
    insert: string,
  ) => {
    await pool.query(
      `with rows as (${insert}),
            a as (insert into relay.attempts (subject, subject_id, subject_key, attempt, started_at, finished_at, duration_ms, outcome)
                  select $3, id, 'k', 1, t, t, 20, $4 from rows),
            j as (insert into ${BOSS_SCHEMA}.job (id, name, data, state, retry_limit, created_on, completed_on, started_on)
                  select job_id, $5, jsonb_build_object('id', id::text), $6::${BOSS_SCHEMA}.job_state, 0, t, t, t from rows)
       select 1`,
      [
        dayStart,
        n,
        subject,
        state === 'failed' ? 'failed' : 'delivered',
        queue,
        state === 'failed' ? 'failed' : 'completed',
        day,
        state,
      ],
    );
    void table;
  };
  const payload = `jsonb_build_object('text', repeat('x', 200), 'n', g)`;
  for (const [n, state] of [
    [RATE.captures, 'delivered'],
    [RATE.capturesFailed, 'failed'],
  ] as const) {
    await items(
      'captures',
      n,
      state,
      'capture',
      QUEUES.capture,
      `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, text, payload, payload_sha256, state, job_id, created_at, updated_at, delivered_at)
       select 'sim:' || $7 || ':' || $8 || ':' || g, '1', g, 42, g, repeat('x', 100), ${payload}, 'h', $8, gen_random_uuid(), ${spread}, ${spread},
              case when $8 = 'delivered' then ${spread} end
         from generate_series(1, $2) g
       returning id, job_id, coalesce(delivered_at, updated_at) as t`,
    );
  }
  for (const [n, state] of [
    [RATE.outbound, 'delivered'],
    [RATE.outboundFailed, 'failed'],
  ] as const) {
    await items(
      'outbound',
      n,
      state,
      'outbound',
      QUEUES.outbound,
      `insert into relay.outbound (msg_id, bot_id, chat_id, target_chat_id, text, payload_sha256, state, job_id, created_at, updated_at, delivered_at)
       select 'sim:' || $7 || ':' || $8 || ':' || g, '1', '42', '42', repeat('y', 100), 'h', $8, gen_random_uuid(), ${spread}, ${spread},
              case when $8 = 'delivered' then ${spread} end
         from generate_series(1, $2) g
       returning id, job_id, updated_at as t`,
    );
  }
  for (const [n, state] of [
    [RATE.inbox, 'handled'],
    [RATE.inboxFailed, 'failed'],
  ] as const) {
    await items(
      'inbox',
      n,
      state,
      'inbox',
      QUEUES.dispatch,
      `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, state, job_id, received_at, updated_at, handled_at)
       select '1', $7::bigint * 1000000 + g + case when $8 = 'failed' then 500000 else 0 end, 'message', 42, ${payload}, $8, gen_random_uuid(), ${spread}, ${spread},
              case when $8 = 'handled' then ${spread} end
         from generate_series(1, $2) g
       returning id, job_id, updated_at as t`,
    );
  }
  await pool.query(
    `insert into relay.quarantine (bot_id, update_id, raw, sha256, error, state, created_at, resolved_at)
     select '1', $3::bigint * 1000 + g, '\\x7b7d', 'q' || $3 || ':' || g, 'bad', 'discarded', ${spread}, ${spread} from generate_series(1, $2) g`,
    [dayStart, RATE.quarantine, day],
  );
  await pool.query(
    `insert into relay.attempts (subject, started_at, outcome, actor) select 'admin', ${spread}, 'admin.retry', 'ops' from generate_series(1, $2) g`,
    [dayStart, RATE.audit],
  );
  // work that never finishes: pending forever (due in the far future), must survive every prune
  await pool.query(
    `insert into relay.captures (capture_key, bot_id, update_id, chat_id, message_id, payload, payload_sha256, state, next_attempt_at, created_at, updated_at)
     select 'stuck:' || $3 || ':' || g, '1', g, 43, g, '{}', 'h', 'pending', 'infinity', $1, $1 from generate_series(1, $2) g`,
    [dayStart, RATE.stuckPending, day],
  );
}

async function claimLatency(): Promise<number> {
  const store = createCaptureStore();
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const c = await pool.connect();
    try {
      await c.query('begin');
      const t0 = performance.now();
      await store.claim(c, { limit: 100, workerId: 'probe', now: null, queue: QUEUES.capture });
      times.push(performance.now() - t0);
    } finally {
      await c.query('rollback');
      c.release();
    }
  }
  return times.sort((a, b) => a - b)[3];
}

const TABLES = [
  'relay.captures',
  'relay.outbound',
  'relay.inbox',
  'relay.attempts',
  'relay.quarantine',
  `${BOSS_SCHEMA}.job`,
];

async function sizes(): Promise<{ rows: Record<string, number>; bytes: number }> {
  const rows: Record<string, number> = {};
  for (const t of TABLES) rows[t] = (await pool.query(`select count(*)::int as n from ${t}`)).rows[0].n;
  const { rows: b } = await pool.query(
    `select sum(pg_total_relation_size(x::regclass))::bigint as b from unnest($1::text[]) x`,
    [TABLES],
  );
  return { rows, bytes: Number(b[0].b) };
}

it('a month with prune on: table rows and sizes stay bounded once the retention windows are full', async () => {
  const boss = createBoss(db.url, { max: 1 });
  worker = createWorker({
    pool,
    boss,
    logger: silentLogger(),
    databaseUrl: db.url,
    kinds: [createCaptureKind({ url: collector.captureUrl, timeoutMs: 5_000 })],
    config: { concurrency: 16, staleAfterMs: 30_000, retry: { baseMs: 1_000, capMs: 300_000, maxAttempts: 12 } },
  });
  await worker.start();
  const start = new Date(Date.now() - DAYS * DAY);
  const log: string[] = [];
  const history: { day: number; rows: Record<string, number>; bytes: number; claimMs: number; pruned: number }[] = [];
  let delivered = 0;
  for (let day = 0; day < DAYS; day++) {
    const dayStart = new Date(start.getTime() + day * DAY);
    const dayEnd = new Date(dayStart.getTime() + DAY);
    // the live part: real captures through the real worker, then moved to the simulated day
    const live = await insertCaptures(pool, boss, RATE.liveCaptures);
    const claimMs = await claimLatency();
    delivered += live.length;
    await waitFor(
      async () =>
        (
          await pool.query(
            `select count(*)::int as n from relay.captures where id = any($1::bigint[]) and state = 'delivered'`,
            [live.map((c) => c.id)],
          )
        ).rows[0].n === live.length,
      {
        what: `day ${day}: live captures delivered`,
        timeoutMs: 30_000,
      },
    );
    const ids = live.map((c) => c.id);
    const shift = `($2::timestamptz + (random() * interval '1 day'))`;
    await pool.query(
      `update relay.captures set created_at = ${shift}, delivered_at = ${shift}, updated_at = ${shift} where id = any($1::bigint[])`,
      [ids, dayStart],
    );
    await pool.query(
      `update relay.captures set delivered_at = greatest(delivered_at, created_at) where id = any($1::bigint[])`,
      [ids],
    );
    await pool.query(
      `update relay.attempts set started_at = $2 where subject = 'capture' and subject_id = any($1::bigint[])`,
      [ids, dayStart],
    );
    await bulkDay(dayStart, day);

    // periodic prune at the end of the simulated day (PRUNE_EVERY = 1 simulated day)
    const r = await runPrune(pool, {
      retentionMs: RETENTION_DAYS * DAY,
      retentionFailedMs: FAILED_DAYS * DAY,
      now: dayEnd,
      pauseMs: 0,
    });
    await pool.query(
      `vacuum relay.captures, relay.outbound, relay.inbox, relay.attempts, relay.quarantine, ${BOSS_SCHEMA}.job`,
    );
    const s = await sizes();
    history.push({ day: day + 1, ...s, claimMs, pruned: r.total });
    log.push(
      `day ${String(day + 1).padStart(2)}: pruned ${String(r.total).padStart(6)}; rows captures ${s.rows['relay.captures']}, outbound ${s.rows['relay.outbound']}, inbox ${s.rows['relay.inbox']}, ` +
        `attempts ${s.rows['relay.attempts']}, job ${s.rows[`${BOSS_SCHEMA}.job`]}; total size ${(s.bytes / 1048576).toFixed(1)} MiB; claim(100) p50 ${claimMs.toFixed(2)} ms`,
    );
  }
  await worker.stop({ timeoutMs: 2_000 });
  worker = undefined;
  process.stdout.write(
    `\nsimulated month (RETENTION ${RETENTION_DAYS}d, RETENTION_FAILED ${FAILED_DAYS}d):\n${log.join('\n')}\n`,
  );

  // the bounds: finished rows of at most RETENTION + one prune period, failed rows of RETENTION_FAILED + one period, plus what never finishes
  const finDays = RETENTION_DAYS + 1;
  const failDays = FAILED_DAYS + 1;
  const bound = {
    'relay.captures':
      (RATE.captures + RATE.liveCaptures) * finDays + RATE.capturesFailed * failDays + RATE.stuckPending * DAYS,
    'relay.outbound': RATE.outbound * finDays + RATE.outboundFailed * failDays,
    'relay.inbox': RATE.inbox * finDays + RATE.inboxFailed * failDays,
    'relay.quarantine': RATE.quarantine * failDays,
  };
  const attemptsBound =
    bound['relay.captures'] + bound['relay.outbound'] + bound['relay.inbox'] + RATE.audit * failDays;
  const jobBound = bound['relay.captures'] + bound['relay.outbound'] + bound['relay.inbox'];
  const full = history.filter((h) => h.day > FAILED_DAYS + 1);
  for (const h of full) {
    for (const [t, max] of Object.entries(bound))
      expect({ day: h.day, table: t, over: h.rows[t] > max }).toEqual({ day: h.day, table: t, over: false });
    expect(h.rows['relay.attempts']).toBeLessThanOrEqual(attemptsBound);
    expect(h.rows[`${BOSS_SCHEMA}.job`]).toBeLessThanOrEqual(jobBound);
    expect(h.bytes).toBeLessThanOrEqual(full[0].bytes * 1.5);
  }
  // steady state: every day of the full window deletes about a day of traffic
  for (const h of full) expect(h.pruned).toBeGreaterThan(0);
  // nothing unfinished was pruned, however old
  expect((await pool.query(`select count(*)::int as n from relay.captures where state = 'pending'`)).rows[0].n).toBe(
    RATE.stuckPending * DAYS,
  );
  expect(collector.stats().unique_keys).toBe(delivered);
}, 120_000);
