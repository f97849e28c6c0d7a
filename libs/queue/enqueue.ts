import type { PoolClient } from 'pg';
import type { Queryable } from '../db/pool';
import { newJobId, type JobLedger, type JobToEnqueue, type QueueName } from '../db/boss';

export { newJobId };
export type { JobToEnqueue };

/** Workers LISTEN on this channel; the payload is the queue name. Sent from the enqueueing transaction. */
export const WORK_CHANNEL = 'tg_relay_work';

/** Wakes the idle workers of `queue` when the caller's transaction commits (NOTIFY is transactional). */
export async function notifyWork(db: Queryable, queue: string): Promise<void> {
  await db.query('select pg_notify($1, $2)', [WORK_CHANNEL, queue]);
}

/**
 * Creates ledger jobs inside the caller's transaction (one statement for the whole batch) and
 * notifies idle workers, who wake when the transaction commits (NOTIFY is transactional).
 * Returns the job ids in input order. Throws `RELAY_ENQUEUE_FAILED` unless every job was created.
 */
export async function enqueueJobs(
  client: PoolClient,
  boss: Pick<JobLedger, 'insertJobs'>,
  queue: QueueName,
  jobs: JobToEnqueue[],
): Promise<string[]> {
  if (jobs.length === 0) return [];
  const ids = await boss.insertJobs(client, queue, jobs);
  await notifyWork(client, queue);
  return ids;
}

/**
 * SQL expression that wakes idle workers once per queue named in `jobsCte` (a CTE with a `name`
 * column, e.g. the RETURNING of the ledger's jobsInsertSql): the number of notifications sent. NOTIFY is
 * transactional (delivered at commit) and PostgreSQL folds identical ones within a transaction.
 */
export function workNotifySql(jobsCte: string): string {
  return `(select count(pg_notify('${WORK_CHANNEL}', n.name))::int from (select distinct name from ${jobsCte}) n)`;
}
