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
import { query, statement } from '../db/query';
import { CLAIM_TABLES } from './claim-tables';
import { enqueueJobs, newJobId, notifyWork } from './enqueue';
import { WORK_TYPES, type WorkTypeName } from './work-types';

/** The work type an operator acts on (the registry's name; also the admin API's `kind`). */
export type OperatorTable = WorkTypeName;

export interface OperatorMovedRow {
  id: string;
  key: string;
  state: string;
  jobId: string | null;
}

/** The data each queue's jobs carry (as the ways in write it). */
function jobData(table: OperatorTable, row: OperatorMovedRow): Record<string, unknown> {
  return table === 'outbound' ? { outboundId: row.id, msgId: row.key } : { id: row.id };
}

/** UPDATE … RETURNING has no order: callers (and the admin API's answers) get rows oldest id first. */
function byId(rows: OperatorMovedRow[]): OperatorMovedRow[] {
  return rows.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : BigInt(a.id) > BigInt(b.id) ? 1 : 0));
}

/** The statements of one work type's operator actions, from its table description. */
function operatorStatements(name: WorkTypeName) {
  const d = CLAIM_TABLES[name];
  const m = d.workType.model;
  const inList = (states: readonly string[]) => states.map((s) => `'${s}'`).join(', ');
  // the attempt budget renewed: rows with their own budget keep their attempt numbers counting up
  const reset = d.budgetColumn
    ? `${d.budgetColumn} = t.attempts + $4, failed_reason = null, ${d.doneAtColumn} = null`
    : `attempts = 0, ${d.doneAtColumn} = null`;
  const cancelFrom = m.cancelFrom.length ? inList(m.cancelFrom) : 'null';
  return {
    retry: statement<OperatorMovedRow>(
      `update ${d.table} t
          set state = '${m.pending}', ${reset}, next_attempt_at = coalesce($3::timestamptz, now()),
              worker_id = null, claim_id = null, heartbeat_at = null, job_id = v.job_id, updated_at = now()
         from unnest($1::bigint[], $2::uuid[]) as v(id, job_id)
        where t.id = v.id and t.state in (${inList(m.retryFrom)})
       returning t.id::text as id, t.${d.key}::text as key, t.state, t.job_id::text as "jobId"`,
    ),
    retryHasBudget: d.budgetColumn !== null,
    cancel: statement<OperatorMovedRow>(
      `update ${d.table} t
          set state = '${m.failed}', failed_reason = 'cancelled', worker_id = null, claim_id = null, heartbeat_at = null, updated_at = now()
        where t.id = any($1::bigint[]) and t.state in (${cancelFrom})
       returning t.id::text as id, t.${d.key}::text as key, t.state, t.job_id::text as "jobId"`,
    ),
  };
}

const STATEMENTS = {
  captures: operatorStatements('captures'),
  outbound: operatorStatements('outbound'),
  inbox: operatorStatements('inbox'),
};

export async function requeueFailed(
  db: PoolClient,
  boss: JobLedger,
  opts: { table: OperatorTable; queue?: QueueName; ids: (string | number)[]; budget: number; now?: Date | null },
): Promise<OperatorMovedRow[]> {
  if (opts.ids.length === 0) return [];
  const jobIds = opts.ids.map(() => newJobId());
  const sql = STATEMENTS[opts.table];
  const values: unknown[] = [opts.ids.map(String), jobIds, opts.now ?? null];
  if (sql.retryHasBudget) values.push(opts.budget);
  const moved = byId(await query(db, sql.retry, values));
  await enqueueJobs(
    db,
    boss,
    opts.queue ?? WORK_TYPES[opts.table].queue,
    moved.map((r) => ({ id: r.jobId!, data: jobData(opts.table, r) })),
  );
  return moved;
}

/** Not for a work type whose model allows no cancel (the inbox): refused before any SQL runs. */
export async function cancelPending(
  db: PoolClient,
  boss: JobLedger,
  opts: { table: OperatorTable; queue?: QueueName; ids: (string | number)[] },
): Promise<OperatorMovedRow[]> {
  const type = WORK_TYPES[opts.table];
  if (type.model.cancelFrom.length === 0) throw new Error(`${type.noun.many} cannot be cancelled`);
  if (opts.ids.length === 0) return [];
  const queue = opts.queue ?? type.queue;
  const moved = byId(await query(db, STATEMENTS[opts.table].cancel, [opts.ids.map(String)]));
  const jobIds = moved.map((r) => r.jobId).filter((j): j is string => !!j);
  if (jobIds.length) await boss.cancelJobs(db, queue, jobIds);
  // a cancelled head of a chat (outbound FIFO) lets the chat's next message go: wake the workers
  if (moved.length) await notifyWork(db, queue);
  return moved;
}
