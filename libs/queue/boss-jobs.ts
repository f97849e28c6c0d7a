/**
 * Keeps each domain row's pg-boss job in step with it, inside the caller's transaction.
 *
 * complete and fail go through pg-boss's public API with `{ db }`. Two moves have no public API and
 * are written here against pg-boss's job table (BOSS_SCHEMA), for measured reasons:
 *  - activation of the jobs of rows we claimed (ACTIVATE_SQL, also inlined in the claim statement
 *    of queries.ts): pg-boss's `fetch()` sorts the whole ready backlog
 *    (`ORDER BY priority desc, created_on, id`; its index is on (name, start_after)), so its cost
 *    grows with the backlog: fetch(100) took 2.9 ms @1k, 134 ms @100k, 1.5 s @1M ready jobs on this
 *    2-core machine, while our claim of 100 took 4.2 / 4.5 / 5.5 ms (bench/worker.ts, part b).
 *    We claim through the domain rows' (next_attempt_at, id) index instead and activate exactly
 *    those jobs by primary key (name, id).
 *  - rescheduling (retry, stale recovery, release): `fail()` with pg-boss retries cannot express our
 *    backoff (full jitter, cap, Retry-After) and deletes and re-inserts the row; we set the job back to
 *    pg-boss's own `retry` state with `start_after` = the row's next_attempt_at, as pg-boss itself would.
 * Both write only pg-boss 10.4's own job states (created/retry → active, → retry) and the columns its
 * fetch() and fail() write (state, started_on, retry_count, start_after, output); pin pg-boss when
 * upgrading and re-check these two statements against its plans.js.
 */
import type PgBoss from 'pg-boss';
import type { PoolClient } from 'pg';
import { BOSS_SCHEMA, QueueName } from '../db/boss';
import { bossDb } from '../db/pool';
import { safeJson } from './errors';
import { ACTIVATE_SQL } from './queries';

const JOB = `${BOSS_SCHEMA}.job`;

/**
 * pg-boss 10's run-time signature is (name, id | ids, data, options). Its typings offer no overload
 * with ids *and* data, and calling (name, ids, { db }) would take `{ db }` for the data and run
 * outside our transaction — so always pass all four arguments.
 */
type BossCommand = (name: string, ids: string[], data: object | null, options: { db: unknown }) => Promise<{ affected: number }>;

/** created/retry → active, as pg-boss's fetch does. Returns how many moved. */
export async function bossJobsActivate(db: PoolClient, queue: QueueName, jobIds: string[]): Promise<number> {
  if (jobIds.length === 0) return 0;
  const { rowCount } = await db.query(ACTIVATE_SQL('$1', '(select unnest($2::uuid[]))'), [queue, jobIds]);
  return rowCount ?? 0;
}

/** Back to pg-boss's `retry` state, due at the row's next_attempt_at. */
export async function bossJobsReschedule(
  db: PoolClient,
  queue: QueueName,
  jobs: { jobId: string; startAfter: Date }[],
  output: Record<string, unknown>,
): Promise<number> {
  if (jobs.length === 0) return 0;
  const { rowCount } = await db.query(
    `update ${JOB} j
        set state = 'retry', start_after = v.start_after, output = $4::jsonb
       from unnest($2::uuid[], $3::timestamptz[]) as v(id, start_after)
      where j.name = $1 and j.id = v.id and j.state < 'completed'`,
    [queue, jobs.map((j) => j.jobId), jobs.map((j) => j.startAfter), JSON.stringify(safeJson(output))],
  );
  return rowCount ?? 0;
}

export async function bossJobsComplete(boss: PgBoss, db: PoolClient, queue: QueueName, jobIds: string[]): Promise<number> {
  if (jobIds.length === 0) return 0;
  const r = await (boss.complete as unknown as BossCommand).call(boss, queue, jobIds, null, { db: bossDb(db) });
  return r.affected;
}

export async function bossJobsFail(boss: PgBoss, db: PoolClient, queue: QueueName, jobIds: string[], output: Record<string, unknown>): Promise<number> {
  if (jobIds.length === 0) return 0;
  const r = await (boss.fail as unknown as BossCommand).call(boss, queue, jobIds, safeJson(output), { db: bossDb(db) });
  return r.affected;
}
