/**
 * Update dispatch benchmark:
 * `npx tsx bench/dispatch.ts [--quick] [--per-chat=N] [--concurrency=N] [--rounds=N] [--handler-concurrency=N]
 *  [--latency-rate=N] [--max-load=X] [--latency-only] [--only=ordering,claim,handlers,media]`.
 *
 * Updates/s dispatched through a no-op handler (test/fixtures/noop-bot.ts) by 1 and by 3
 * `tg-relay worker` processes, over 1,000 chats, with per-chat ordering (DISPATCH_ORDERING=chat, the
 * default) and without it (DISPATCH_ORDERING=none), in the same run on the same database. Each
 * measurement: the workers are started and ready (getMe answered by the Bot API sandbox), then
 * N pending inbox rows with their update.dispatch jobs are inserted in one transaction (update_ids
 * interleave the chats, as Telegram's do) and the clock runs from that commit until every row is
 * `handled`. Every dispatch pays for its claim, its handled mark, its pg-boss job and its audit row.
 * Modes alternate within each round; the figure per cell is the median over the rounds.
 *
 * Then the claim statement alone (claim 32 in a rolled-back transaction, median of 50), ordered vs
 * unordered, on (a) the same 20,000-update backlog, (b) one chat whose head waits for a retry with
 * 10,000 updates queued behind it, ahead of 1,000 other chats, and (c) the same chat with its head
 * in flight instead (the head check's worst case: the blocked backlog is walked by every claim).
 *
 * Then what handlers cost against the no-op measured in the same run (bench/support/handler-cost.ts):
 * a session counter on dispatch.sessionStore(), an insert in dispatch.transaction(ctx), and both —
 * the per-update latency added at a modest steady rate (all handlers interleaved in one worker;
 * p50/p90/p99, added p50 vs the no-op, the target's verdict) and updates/s. And media replies in
 * REPLY_MODE=outbound, a text vs a text and a 100 kB uploaded photo (bench/support/media-replies.ts),
 * which prints "media: needs relayed sends" and skips on a checkout without relayed sends.
 * Runs on DATABASE_URL if set, else on an embedded PostgreSQL in a temp dir.
 */
import { performance } from 'node:perf_hooks';
import { QUEUES, withTransaction, type Pool } from '../libs/db';
import { createInboxClaimStore } from '../libs/dispatch/dispatch-kind';
import { inboxClaim } from '../libs/dispatch/queries';
import { createBotApiSandbox } from '../libs/sandbox';
import { benchDatabase } from './support/database';
import { BOT_ID, burstRate, CHATS, insertUpdates, log, resetInbox, withWorkers } from './support/dispatch-fleet';
import { handlerCost } from './support/handler-cost';
import { mediaReplies } from './support/media-replies';
import { fmt, loadAverage, median } from './support/worker-process';

const args = process.argv.slice(2);
const arg = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const QUICK = args.includes('--quick');
const PER_CHAT = Number(arg('per-chat') ?? (QUICK ? 5 : 20));
const CONCURRENCY = Number(arg('concurrency') ?? 64);
const ROUNDS = Number(arg('rounds') ?? (QUICK ? 1 : 3));
/** Handler cost runs at the default WORKER_CONCURRENCY with the pool sized as docs/dispatch.md advises. */
const HANDLER_CONCURRENCY = Number(arg('handler-concurrency') ?? 16);
/** The handler-cost latency loop's rate: low enough that an update never waits for another. */
const LATENCY_RATE = Number(arg('latency-rate') ?? 20);
const SECTIONS = (arg('only') ?? 'ordering,claim,handlers,media').split(',');

const reset = (pool: Pool) => resetInbox(pool);

async function measure(
  url: string,
  pool: Pool,
  apiRoot: string,
  workers: number,
  ordering: 'chat' | 'none',
): Promise<number> {
  await reset(pool);
  const env = { DISPATCH_ORDERING: ordering, WORKER_CONCURRENCY: String(CONCURRENCY) };
  return withWorkers({ url, apiRoot, handlers: 'test/fixtures/noop-bot.ts', workers, env }, () =>
    burstRate(pool, CHATS * PER_CHAT),
  );
}

/** Median ms of one claim of 32 (rolled back, so the backlog stays as it is). */
async function claimMs(pool: Pool, ordered: boolean, samples = 50): Promise<number> {
  const times: number[] = [];
  const client = await pool.connect();
  try {
    for (let i = 0; i < samples; i++) {
      await client.query('begin');
      const t = performance.now();
      await inboxClaim(client, {
        botId: BOT_ID,
        limit: 32,
        workerId: 'bench',
        now: null,
        ordered,
        queue: QUEUES.dispatch,
      });
      times.push(performance.now() - t);
      await client.query('rollback');
    }
  } finally {
    client.release();
  }
  return median(times);
}

async function claimLatency(pool: Pool): Promise<void> {
  log('\nclaim statement (32 rows, rolled back; median of 50):');
  log('| backlog | unordered | per-chat ordered |');
  log('| --- | --- | --- |');
  await reset(pool);
  await insertUpdates(pool, CHATS * 20);
  await pool.query('analyze relay.inbox');
  log(
    `| ${fmt(CHATS * 20)} pending over ${fmt(CHATS)} chats | ${fmt(await claimMs(pool, false), 2)} ms | ${fmt(await claimMs(pool, true), 2)} ms |`,
  );
  // worst case: chat 42 has 10,000 updates queued, older than 1,000 other chats' heads, and its
  // head has just failed and waits for a retry (settled through the real store, as a worker would)
  await reset(pool);
  await pool.query(
    `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, state, next_attempt_at)
     select $1, g, 'message', 42, '{}'::jsonb, 'pending', now() - interval '1 minute' from generate_series(1, 10000) g`,
    [BOT_ID],
  );
  await pool.query(
    `insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, state)
     select $1, 10000 + g, 'message', 1000000 + g, '{}'::jsonb, 'pending' from generate_series(1, $2::int) g`,
    [BOT_ID, CHATS],
  );
  const store = createInboxClaimStore({ botId: BOT_ID, ordered: true });
  const [head] = await store.claim(pool, { limit: 1, workerId: 'bench', now: null, queue: QUEUES.dispatch });
  if (head?.key !== '1') throw new Error('expected to claim the head of chat 42');
  await withTransaction(pool, (c) =>
    store.settle(
      c,
      [{ id: head.id, claimId: head.claimId, state: 'pending', delayMs: 3_600_000, error: 'bench' }],
      null,
    ),
  );
  await pool.query('analyze relay.inbox');
  log(
    `| 1 chat blocked by a retry with 10,000 behind it, then ${fmt(CHATS)} heads | ${fmt(await claimMs(pool, false), 2)} ms | ${fmt(await claimMs(pool, true), 2)} ms |`,
  );
  // the same chat with its head in flight (claimed, handler running): its backlog stays due and is walked
  await pool.query(
    `update relay.inbox set next_attempt_at = now() - interval '1 minute', claim_id = gen_random_uuid(), last_error = null where update_id = 1`,
  );
  await pool.query(
    `update relay.inbox set next_attempt_at = now() - interval '1 minute' where chat_id = 42 and update_id > 1`,
  );
  await pool.query('analyze relay.inbox');
  log(
    `| 1 chat with its head in flight and 10,000 behind it, then ${fmt(CHATS)} heads | ${fmt(await claimMs(pool, false), 2)} ms | ${fmt(await claimMs(pool, true), 2)} ms |`,
  );
}

async function ordering(db: { url: string; pool: Pool }, apiRoot: string): Promise<void> {
  log(
    `update dispatch: no-op handler, ${fmt(CHATS)} chats × ${PER_CHAT} updates = ${fmt(CHATS * PER_CHAT)} updates per measurement,`,
  );
  log(`WORKER_CONCURRENCY=${CONCURRENCY} per process, ${ROUNDS} round(s), median shown\n`);
  const results: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const workers of [1, 3]) {
      const modes: ('chat' | 'none')[] = round % 2 === 0 ? ['none', 'chat'] : ['chat', 'none'];
      for (const mode of modes) {
        const rate = await measure(db.url, db.pool, apiRoot, workers, mode);
        (results[`${workers}:${mode}`] ??= []).push(rate);
        log(
          `  round ${round + 1}: ${workers} worker(s), ordering=${mode.padEnd(4)} ${fmt(rate).padStart(7)} updates/s`,
        );
      }
    }
  }
  log('\n| workers | unordered (updates/s) | per-chat ordered (updates/s) | ordering cost |');
  log('| --- | --- | --- | --- |');
  for (const workers of [1, 3]) {
    const none = median(results[`${workers}:none`]);
    const chat = median(results[`${workers}:chat`]);
    log(`| ${workers} | ${fmt(none)} | ${fmt(chat)} | ${fmt((1 - chat / none) * 100, 1)}% |`);
  }
  log('\n(target: ordering costs ≤ 20% throughput)');
}

async function main(): Promise<void> {
  const db = await benchDatabase();
  const sandbox = createBotApiSandbox();
  await sandbox.start();
  const only = args.includes('--claim-only') ? ['claim'] : SECTIONS;
  try {
    log(`load average at start: ${loadAverage()}${QUICK ? ' (--quick)' : ''}\n`);
    if (only.includes('ordering')) await ordering(db, sandbox.url);
    if (only.includes('claim')) await claimLatency(db.pool);
    if (only.includes('handlers'))
      await handlerCost({
        url: db.url,
        pool: db.pool,
        apiRoot: sandbox.url,
        rounds: ROUNDS,
        burst: CHATS * (QUICK ? 2 : 10),
        samples: QUICK ? 200 : 600,
        intervalMs: 1000 / LATENCY_RATE,
        concurrency: HANDLER_CONCURRENCY,
        poolMax: HANDLER_CONCURRENCY + 8,
        maxLoad: Number(arg('max-load') ?? 1.5),
        latencyOnly: args.includes('--latency-only'),
      });
    if (only.includes('media'))
      await mediaReplies({
        url: db.url,
        pool: db.pool,
        sandbox,
        rounds: ROUNDS,
        burst: QUICK ? 500 : 2_000,
        samples: QUICK ? 10 : 40,
        ratePerSecond: 5,
      });
    log(`\nload average at end: ${loadAverage()}`);
  } finally {
    await sandbox.stop();
    await db.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
