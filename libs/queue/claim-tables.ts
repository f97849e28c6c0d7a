/**
 * Table descriptions: how each work type's table keeps claims, as data the claim SQL is generated
 * from (claim-sql.ts). The three tables share the claim columns (attempts, next_attempt_at,
 * worker_id, claim_id, started_at, heartbeat_at, last_error, job_id); they differ in the states
 * (the inbox marks a claim by claim_id on a `pending` row, and calls delivered `handled`), in the
 * per-row budget (the inbox has none) and in the outcome columns.
 */
import { escapeIdentifier } from 'pg';
import { QUEUES } from '../db/boss';
import { WORK_TYPES, type WorkQueue, type WorkType, type WorkTypeName } from './work-types';

export interface ClaimTableDescription {
  readonly workType: WorkType;
  /** Schema-qualified, escaped, e.g. "relay"."captures". */
  readonly table: string;
  /** Escaped business key column, e.g. "capture_key". */
  readonly key: string;
  /** Column stamped when the row reaches its done state. */
  readonly doneAtColumn: string;
  /** Column of the row's own attempt budget, or null (the worker's RETRY_MAX_ATTEMPTS only). */
  readonly budgetColumn: string | null;
  /**
   * True: last_status and failed_reason columns exist (the failure reason goes to failed_reason).
   * False: the reason of a failure is written to last_error, which a success leaves as it was.
   */
  readonly outcomeColumns: boolean;
  /** Since when a claim counts as silent, and the sweep's order (each matches an index of the table). */
  readonly staleSince: string;
  readonly staleOrder: string;
}

function describe(
  name: WorkTypeName,
  d: Omit<ClaimTableDescription, 'workType' | 'table' | 'key'>,
): ClaimTableDescription {
  const t = WORK_TYPES[name];
  const [schema, table] = t.table.split('.');
  return {
    workType: t,
    table: `${escapeIdentifier(schema)}.${escapeIdentifier(table)}`,
    key: escapeIdentifier(t.keyColumn),
    ...d,
  };
}

export const CLAIM_TABLES: { readonly [N in WorkTypeName]: ClaimTableDescription } = {
  captures: describe('captures', {
    doneAtColumn: 'delivered_at',
    budgetColumn: 'max_attempts',
    outcomeColumns: true,
    staleSince: 'coalesce(heartbeat_at, started_at, updated_at)',
    staleOrder: 'id',
  }),
  outbound: describe('outbound', {
    doneAtColumn: 'delivered_at',
    budgetColumn: 'max_attempts',
    outcomeColumns: true,
    staleSince: 'coalesce(heartbeat_at, started_at, updated_at)',
    staleOrder: 'id',
  }),
  inbox: describe('inbox', {
    doneAtColumn: 'handled_at',
    budgetColumn: null,
    outcomeColumns: false,
    // inbox_dispatch_claimed_idx (0005)
    staleSince: 'coalesce(heartbeat_at, started_at)',
    staleOrder: 'coalesce(heartbeat_at, started_at)',
  }),
};

// The registry's queue names are the job ledger queues the engine creates (compile-time check).
const _queuesMatch: { [K in keyof typeof QUEUES]: WorkQueue } = QUEUES;
void _queuesMatch;
