/**
 * Operator actions on domain rows, with their ledger jobs in the same transaction (the admin API
 * calls these; they run on the caller's transaction client, which has locked the rows):
 *  - requeueFailed: failed → pending, due now, attempt budget renewed, with a NEW ledger job. The
 *    failed job stays as it is (the ledger may have archived it already: failed jobs leave the job
 *    table after 12 h, so "retrying" the old job is not always possible); the row points at the new
 *    one, which the claim loop activates like any other.
 *  - cancelPending: pending → failed with failed_reason 'cancelled'; its job is cancelled in the
 *    ledger (JobLedger.cancelJobs).
 * Budget: claim tables (captures, outbound) get max_attempts = attempts + budget, so attempt numbers
 * in relay.attempts keep increasing; relay.inbox has no per-row budget, so its attempts restart at 0.
 */
import type { PoolClient } from 'pg';
import type { JobLedger, QueueName } from '../db/boss';
import { enqueueJobs, newJobId, notifyWork } from './enqueue';

export type OperatorTable = 'captures' | 'outbound' | 'inbox';

export interface OperatorMovedRow {
  id: string;
  key: string;
  state: string;
  jobId: string | null;
}

const KEY: Record<OperatorTable, string> = { captures: 'capture_key', outbound: 'msg_id', inbox: 'update_id' };

/** The data each queue's jobs carry (as the ways in write it). */
function jobData(table: OperatorTable, row: OperatorMovedRow): Record<string, unknown> {
  return table === 'outbound' ? { outboundId: row.id, msgId: row.key } : { id: row.id };
}

/** UPDATE … RETURNING has no order: callers (and the admin API's answers) get rows oldest id first. */
function byId(rows: OperatorMovedRow[]): OperatorMovedRow[] {
  return rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0));
}

export async function requeueFailed(
  db: PoolClient,
  boss: JobLedger,
  opts: { table: OperatorTable; queue: QueueName; ids: (string | number)[]; budget: number; now?: Date | null },
): Promise<OperatorMovedRow[]> {
  if (opts.ids.length === 0) return [];
  const jobIds = opts.ids.map(() => newJobId());
  const values: unknown[] = [opts.ids.map(String), jobIds, opts.now ?? null];
  const reset =
    opts.table === 'inbox'
      ? 'attempts = 0, handled_at = null'
      : `max_attempts = t.attempts + $${values.push(opts.budget)}, failed_reason = null, delivered_at = null`;
  const { rows } = await db.query(
    `update relay.${opts.table} t
        set state = 'pending', ${reset}, next_attempt_at = coalesce($3::timestamptz, now()),
            worker_id = null, claim_id = null, heartbeat_at = null, job_id = v.job_id, updated_at = now()
       from unnest($1::bigint[], $2::uuid[]) as v(id, job_id)
      where t.id = v.id and t.state = 'failed'
     returning t.id::text as id, t.${KEY[opts.table]}::text as key, t.state, t.job_id::text as "jobId"`,
    values,
  );
  const moved = byId(rows as OperatorMovedRow[]);
  await enqueueJobs(
    db,
    boss,
    opts.queue,
    moved.map((r) => ({ id: r.jobId!, data: jobData(opts.table, r) })),
  );
  return moved;
}

export async function cancelPending(
  db: PoolClient,
  boss: JobLedger,
  opts: { table: 'captures' | 'outbound'; queue: QueueName; ids: (string | number)[] },
): Promise<OperatorMovedRow[]> {
  if (opts.ids.length === 0) return [];
  const { rows } = await db.query(
    `update relay.${opts.table} t
        set state = 'failed', failed_reason = 'cancelled', worker_id = null, claim_id = null, heartbeat_at = null, updated_at = now()
      where t.id = any($1::bigint[]) and t.state = 'pending'
     returning t.id::text as id, t.${KEY[opts.table]}::text as key, t.state, t.job_id::text as "jobId"`,
    [opts.ids.map(String)],
  );
  const moved = byId(rows as OperatorMovedRow[]);
  const jobIds = moved.map((r) => r.jobId).filter((j): j is string => !!j);
  if (jobIds.length) await boss.cancelJobs(db, opts.queue, jobIds);
  // a cancelled head of a chat (outbound FIFO) lets the chat's next message go: wake the workers
  if (moved.length) await notifyWork(db, opts.queue);
  return moved;
}
