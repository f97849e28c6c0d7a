/**
 * Update dispatch benchmark: `npx tsx bench/dispatch.ts [--quick] [--per-chat=N] [--concurrency=N] [--rounds=N]`.
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
 * Runs on DATABASE_URL if set, else on an embedded PostgreSQL in a temp dir.
 */
import { performance } from 'node:perf_hooks';
import { QUEUES, withTransaction, type Pool } from '../libs/db';
import { createInboxClaimStore } from '../libs/dispatch/dispatch-kind';
import { inboxClaim } from '../libs/dispatch/queries';
import { createBotApiSandbox } from '../libs/sandbox';
import { startCli, exited } from '../test/support/cli';
import { benchDatabase } from './support/database';
import { median } from './support/worker-process';

const args = process.argv.slice(2);
const arg = (name: string) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const QUICK = args.includes('--quick');
const CHATS = 1_000;
const PER_CHAT = Number(arg('per-chat') ?? (QUICK ? 5 : 20));
const CONCURRENCY = Number(arg('concurrency') ?? 64);
const ROUNDS = Number(arg('rounds') ?? (QUICK ? 1 : 3));
const TOKEN = '5000000001:bench-dispatch-token-not-a-secret';
const BOT_ID = '5000000001';

const log = (s: string) => process.stdout.write(`${s}\n`);
const fmt = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

async function reset(pool: Pool): Promise<void> {
  await pool.query(`truncate relay.inbox, relay.attempts`);
  await pool.query(`delete from tg_relay_boss.job where name = $1`, [QUEUES.dispatch]);
  await pool.query('vacuum analyze relay.inbox');
}

/** N pending updates (message to chat 1e6 + (update_id-1) % 1000) and their jobs, in one transaction. */
async function insertUpdates(pool: Pool, n: number): Promise<void> {
  await withTransaction(pool, async (c) => {
    await c.query(
      `with ids as (
         select g, 1000000 + (g - 1) % $2 as chat, gen_random_uuid() as job_id from generate_series(1, $1::bigint) g
       ), rows as (
         insert into relay.inbox (bot_id, update_id, update_type, chat_id, payload, state, job_id)
         select $3, g, 'message', chat,
                jsonb_build_object('update_id', g, 'message', jsonb_build_object('message_id', g, 'date', 1700000000, 'text', 'bench',
                  'chat', jsonb_build_object('id', chat, 'type', 'private', 'first_name', 'U'),
                  'from', jsonb_build_object('id', chat, 'is_bot', false, 'first_name', 'U'))),
                'pending', job_id
           from ids
         returning id, job_id
       )
       insert into tg_relay_boss.job (id, name, data, retry_limit, expire_in, keep_until, policy)
       select job_id, $4, jsonb_build_object('id', id), 0, interval '23 hours', now() + interval '30 days', 'standard' from rows`,
      [n, CHATS, BOT_ID, QUEUES.dispatch],
    );
    await c.query(`select pg_notify('tg_relay_work', $1)`, [QUEUES.dispatch]);
  });
}

async function pendingCount(pool: Pool): Promise<number> {
  return Number((await pool.query(`select count(*) from relay.inbox where state = 'pending'`)).rows[0].count);
}

async function measure(
  url: string,
  pool: Pool,
  apiRoot: string,
  workers: number,
  ordering: 'chat' | 'none',
): Promise<number> {
  await reset(pool);
  const env = {
    DATABASE_URL: url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: apiRoot,
    BOT_HANDLERS: 'test/fixtures/noop-bot.ts',
    DISPATCH_ORDERING: ordering,
    WORKER_CONCURRENCY: String(CONCURRENCY),
    LOG_LEVEL: 'info',
  };
  const children = Array.from({ length: workers }, () => startCli(['worker'], env));
  try {
    const deadline = Date.now() + 30_000;
    while (!children.every((c) => c.output().includes('bot handlers ready'))) {
      if (children.some((c) => c.exitCode !== null))
        throw new Error(`a worker exited:\n${children.map((c) => c.output()).join('\n')}`);
      if (Date.now() > deadline) throw new Error('workers did not become ready');
      await new Promise((r) => setTimeout(r, 50));
    }
    const n = CHATS * PER_CHAT;
    await insertUpdates(pool, n);
    const t0 = performance.now();
    while ((await pendingCount(pool)) > 0) {
      if (performance.now() - t0 > 600_000) throw new Error('dispatch did not finish in 10 minutes');
      await new Promise((r) => setTimeout(r, 25));
    }
    const seconds = (performance.now() - t0) / 1000;
    const { rows } = await pool.query(
      `select count(*)::int as handled, (select count(*)::int from relay.attempts where subject = 'inbox') as audited from relay.inbox where state = 'handled'`,
    );
    if (rows[0].handled !== n || rows[0].audited !== n)
      throw new Error(`expected ${n} handled and audited, got ${JSON.stringify(rows[0])}`);
    return n / seconds;
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => exited(c)));
  }
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

async function main(): Promise<void> {
  const db = await benchDatabase();
  const sandbox = createBotApiSandbox();
  await sandbox.start();
  try {
    log(
      `update dispatch: no-op handler, ${fmt(CHATS)} chats × ${PER_CHAT} updates = ${fmt(CHATS * PER_CHAT)} updates per measurement,`,
    );
    log(`WORKER_CONCURRENCY=${CONCURRENCY} per process, ${ROUNDS} round(s), median shown\n`);
    const results: Record<string, number[]> = {};
    if (args.includes('--claim-only')) return await claimLatency(db.pool);
    for (let round = 0; round < ROUNDS; round++) {
      for (const workers of [1, 3]) {
        const modes: ('chat' | 'none')[] = round % 2 === 0 ? ['none', 'chat'] : ['chat', 'none'];
        for (const mode of modes) {
          const rate = await measure(db.url, db.pool, sandbox.url, workers, mode);
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
    await claimLatency(db.pool);
  } finally {
    await sandbox.stop();
    await db.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
