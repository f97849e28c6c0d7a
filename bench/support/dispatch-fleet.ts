/**
 * What bench/dispatch.ts's sections share: inserting pending inbox rows with their dispatch jobs the
 * way ingress does, starting `tg-relay worker` processes against the Bot API sandbox and waiting
 * until a burst is handled.
 */
import { performance } from 'node:perf_hooks';
import { QUEUES, withTransaction, type Pool } from '../../libs/db';
import { startCli, exited } from '../../test/support/cli';

export const TOKEN = '5000000001:bench-dispatch-token-not-a-secret';
export const BOT_ID = '5000000001';
export const CHATS = 1_000;

export const log = (s: string) => process.stdout.write(`${s}\n`);

/** Empties the inbox, its audit rows and its jobs (and `extra` tables), then re-plans the inbox. */
export async function resetInbox(pool: Pool, extra: string[] = []): Promise<void> {
  await pool.query(`truncate ${['relay.inbox', 'relay.attempts', ...extra].join(', ')}`);
  await pool.query(`delete from tg_relay_boss.job where name = $1`, [QUEUES.dispatch]);
  await pool.query('vacuum analyze relay.inbox');
}

/**
 * N pending updates (update_ids `first`…`first + n - 1`, message to chat `chatBase + (update_id - 1) %
 * chats`, so update_ids interleave the chats as Telegram's do) and their jobs, in one transaction that
 * also wakes the workers. Resolves once the COMMIT is acknowledged.
 */
export async function insertUpdates(
  pool: Pool,
  n: number,
  opts: { first?: number; chats?: number; chatBase?: number } = {},
): Promise<void> {
  const { first = 1, chats = CHATS, chatBase = 1_000_000 } = opts;
  await withTransaction(pool, async (c) => {
    await c.query(
      `with ids as (
         select g, $5::bigint + (g - 1) % $2 as chat, gen_random_uuid() as job_id from generate_series($6::bigint, $6::bigint + $1 - 1) g
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
      [n, chats, BOT_ID, QUEUES.dispatch, chatBase, first],
    );
    await c.query(`select pg_notify('tg_relay_work', $1)`, [QUEUES.dispatch]);
  });
}

async function pendingCount(pool: Pool): Promise<number> {
  return Number((await pool.query(`select count(*) from relay.inbox where state = 'pending'`)).rows[0].count);
}

/** Inserts `n` updates over `chats` chats and returns updates/s from that commit until none is pending. */
export async function burstRate(pool: Pool, n: number, chats = CHATS): Promise<number> {
  await insertUpdates(pool, n, { chats });
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
}

export interface WorkerEnv {
  url: string;
  apiRoot: string;
  handlers: string;
  workers?: number;
  env?: Record<string, string>;
}

/** Starts the workers, waits until each has its handlers ready, runs `body`, then stops them (SIGTERM). */
export async function withWorkers<T>(w: WorkerEnv, body: () => Promise<T>): Promise<T> {
  const env = {
    DATABASE_URL: w.url,
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_API_ROOT: w.apiRoot,
    BOT_HANDLERS: w.handlers,
    LOG_LEVEL: 'info',
    ...w.env,
  };
  const children = Array.from({ length: w.workers ?? 1 }, () => startCli(['worker'], env));
  try {
    const deadline = Date.now() + 60_000;
    while (!children.every((c) => c.output().includes('bot handlers ready'))) {
      if (children.some((c) => c.exitCode !== null))
        throw new Error(`a worker exited:\n${children.map((c) => c.output()).join('\n')}`);
      if (Date.now() > deadline) throw new Error('workers did not become ready');
      await new Promise((r) => setTimeout(r, 50));
    }
    return await body();
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => exited(c)));
  }
}
