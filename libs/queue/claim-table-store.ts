import type { AttemptSubject, ClaimedJob, ClaimStore } from './job-kind';
import { escapeIdentifier } from 'pg';
import { claimTable, tableClaim, tableHeartbeat, tableNextDueInMs, tableRecoverStale, tableRelease, tableSettle } from './queries';

/**
 * The ClaimStore of a table with the standard claim columns (relay.captures, relay.outbound).
 * A kind with other needs (per-chat order, rate limits) can wrap it and replace `claim`.
 */
export function createClaimTableStore<Row extends object>(opts: {
  subject: AttemptSubject;
  schema?: string;
  table: string;
  keyColumn: string;
  /** Further columns the job needs in `row` (id, key, job_id, claim_id, attempts, max_attempts always come). */
  columns?: string[];
}): ClaimStore<Row> {
  const t = claimTable(opts.schema ?? 'relay', opts.table, opts.keyColumn);
  const columns = (opts.columns ?? []).map((c) => `t.${escapeIdentifier(c)}`).join(', ');
  return {
    subject: opts.subject,
    activatesJobs: true,
    async claim(db, args) {
      const { rows, activated } = await tableClaim(db, t, { ...args, columns });
      const withJob = rows.filter((r) => r.job_id).length;
      if (activated !== withJob) args.onJobsOutOfStep?.(withJob, activated);
      return rows.map((r): ClaimedJob<Row> => {
        const { claimKey, ...row } = r;
        return {
          id: String(row.id),
          key: String(claimKey),
          jobId: row.job_id ?? null,
          claimId: row.claim_id,
          attempt: Number(row.attempts),
          maxAttempts: row.max_attempts ?? null,
          row: row as Row,
        };
      });
    },
    nextDueInMs: (db, now) => tableNextDueInMs(db, t, now),
    settle: (db, items, now) => tableSettle(db, t, items, now),
    heartbeat: (db, claims, now) => tableHeartbeat(db, t, claims, now),
    recoverStale: (db, args) => tableRecoverStale(db, t, args),
    release: (db, claims, now) => tableRelease(db, t, claims, now),
  };
}
