import crypto from 'node:crypto';
import type PgBoss from 'pg-boss';
import type { PoolClient } from 'pg';
import { bossDb } from '../db/pool';
import { BOSS_SCHEMA, type QueueName } from '../db/boss';

/** Workers LISTEN on this channel; the payload is the queue name. Sent from the enqueueing transaction. */
export const WORK_CHANNEL = 'tg_relay_work';

export interface JobToEnqueue {
  /** Pre-generated so the domain row can store its job id in the same statement batch. */
  id?: string;
  data: Record<string, unknown>;
  startAfter?: Date;
}

export function newJobId(): string {
  return crypto.randomUUID();
}

/**
 * Creates pg-boss jobs inside the caller's transaction (one statement for the whole batch) and
 * notifies idle workers, who wake when the transaction commits (NOTIFY is transactional).
 * Returns the job ids in input order. Throws if pg-boss refused a job (it returns null silently).
 */
export async function enqueueJobs(client: PoolClient, boss: PgBoss, queue: QueueName, jobs: JobToEnqueue[]): Promise<string[]> {
  if (jobs.length === 0) return [];
  const withIds = jobs.map((j) => ({ id: j.id ?? newJobId(), name: queue, data: j.data, startAfter: j.startAfter?.toISOString(), retryLimit: 0 }));
  // pg-boss 10.4's batch insert has no RETURNING clause: insert() resolves to null even on success.
  // Count the rows the INSERT reports instead (ON CONFLICT DO NOTHING, or an unknown queue, insert fewer).
  const db = bossDb(client);
  let inserted = 0;
  const counting = {
    executeSql: async (text: string, values?: unknown[]) => {
      const r = (await db.executeSql(text, values)) as { rows: unknown[]; rowCount?: number | null };
      inserted = r.rowCount ?? 0;
      return r;
    },
  };
  await (boss.insert as unknown as (j: unknown[], o: unknown) => Promise<unknown>)(withIds, { db: counting });
  if (inserted !== jobs.length) {
    throw Object.assign(new Error(`pg-boss did not create all ${jobs.length} ${queue} jobs (does the queue exist? run tg-relay migrate)`), {
      code: 'RELAY_ENQUEUE_FAILED',
    });
  }
  await client.query('select pg_notify($1, $2)', [WORK_CHANNEL, queue]);
  return withIds.map((j) => j.id);
}

/**
 * SQL text of an INSERT of pg-boss job rows, for use as a data-modifying CTE inside a larger
 * statement (the ingress batch writes its inbox rows, captures and their jobs in one statement).
 * `source` is a query yielding `id uuid, name text, data jsonb`; the rows written are exactly what
 * `enqueueJobs` (pg-boss 10.4's own `insert`, retryLimit 0, no startAfter) writes for the same
 * input: the queue's defaults are read from its row the way pg-boss's insertJobs does (the same
 * expressions as sql/0011's outbound_boss_job_insert; pinned by
 * test/integration/ingress/batch-statements.test.ts against enqueueJobs, column for column).
 * A job whose queue does not exist is not inserted; `returning name` lets the caller count what
 * was (enqueueJobs' RELAY_ENQUEUE_FAILED check).
 */
export function bossJobsInsertSql(source: string): string {
  return `insert into ${BOSS_SCHEMA}.job (id, name, data, priority, start_after, singleton_key, singleton_on, dead_letter,
                                   expire_in, keep_until, retry_limit, retry_delay, retry_backoff, policy)
    select j.id, q.name, j.data, 0, now(), null, null, q.dead_letter,
           case when q.expire_seconds is not null then q.expire_seconds * interval '1s' else interval '15 minutes' end,
           now() + cast(coalesce((q.retention_minutes * 60)::text, '14 days') as interval),
           0,
           case when coalesce(q.retry_backoff, false) then greatest(q.retry_delay, 1) else coalesce(q.retry_delay, 0) end,
           coalesce(q.retry_backoff, false),
           q.policy
      from (${source}) j
      join ${BOSS_SCHEMA}.queue q on q.name = j.name
    on conflict do nothing
    returning name`;
}

/**
 * SQL expression that wakes idle workers once per queue named in `jobsCte` (a CTE with a `name`
 * column, e.g. the RETURNING of bossJobsInsertSql): the number of notifications sent. NOTIFY is
 * transactional (delivered at commit) and PostgreSQL folds identical ones within a transaction.
 */
export function workNotifySql(jobsCte: string): string {
  return `(select count(pg_notify('${WORK_CHANNEL}', n.name))::int from (select distinct name from ${jobsCte}) n)`;
}
