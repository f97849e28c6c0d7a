import { escapeIdentifier } from 'pg';
import { createClaimStore } from './claim-sql';
import { CLAIM_TABLES } from './claim-tables';
import type { AttemptSubject, ClaimStore } from './job-kind';
import { WORK_TYPE_LIST } from './work-types';

/**
 * The ClaimStore of a registered work type's table with only extra columns (relay.captures,
 * relay.outbound). Kept for callers of the earlier API; kinds build theirs with createClaimStore
 * (claim-sql.ts) from the table's description.
 */
export function createClaimTableStore<Row extends object>(opts: {
  subject: AttemptSubject;
  schema?: string;
  table: string;
  keyColumn: string;
  /** Further columns the job needs in `row` (id, key, job_id, claim_id, attempts, max_attempts always come). */
  columns?: string[];
}): ClaimStore<Row> {
  const type = WORK_TYPE_LIST.find((t) => t.table === `${opts.schema ?? 'relay'}.${opts.table}` && t.keyColumn === opts.keyColumn);
  if (!type) throw new Error(`${opts.schema ?? 'relay'}.${opts.table} is not a registered work type's table`);
  const columns = (opts.columns ?? []).map((c) => `t.${escapeIdentifier(c)}`).join(', ');
  return createClaimStore<Row>(CLAIM_TABLES[type.name], { columns: columns || undefined });
}
