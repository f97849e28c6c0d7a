/**
 * Claims in a caller's transaction (KindWorker.claimIn): rows that transaction has just written are
 * claimed there with the kind's own claim rules and run once it commits. The slots they take are
 * held from the claim to the end of the transaction, so the claim loop counts them too.
 */
import { performance } from 'node:perf_hooks';
import type { PoolClient } from 'pg';
import { onTransactionEnd } from '../db/transaction-end';
import type { Logger } from '../observability/logger';
import { Clock, sqlNow } from './clock';
import type { WorkerEvents } from './events';
import type { ClaimedJob, JobKind } from './job-kind';

/** The warning of a claim whose rows' ledger jobs were not all ready. */
export const jobsOutOfStep = (logger: Logger) => (expected: number, moved: number) =>
  logger.warn({ expected, moved }, 'some claimed rows had no ready ledger job (archived or out of step)');

export function createClaimIn<Row, Effects>(
  kind: JobKind<Row, Effects>,
  deps: {
    claims: { readonly size: number; readonly running: number };
    concurrency: number;
    workerId: string;
    clock?: Clock;
    logger: Logger;
    events: WorkerEvents;
    stats: { claimed: number };
    /** The loop may claim now (ready, running, not crashed). */
    open: () => boolean;
    run: (job: ClaimedJob<Row>) => void;
    wake: () => void;
  },
) {
  const { claims, concurrency } = deps;
  let reserved = 0;
  /** The held claims and the slots of claims whose transaction has not ended yet. */
  const slots = {
    get size() {
      return claims.size + reserved;
    },
    get running() {
      return claims.running + reserved;
    },
  };
  const onJobsOutOfStep = jobsOutOfStep(deps.logger);

  async function claimIn(db: PoolClient, keys: readonly string[]): Promise<number> {
    const claimKeys = kind.store.claimKeys?.bind(kind.store);
    if (!claimKeys || keys.length === 0 || !deps.open()) return 0;
    const free = Math.max(0, Math.min(keys.length, concurrency - slots.running, 2 * concurrency - slots.size));
    let jobs: ClaimedJob<Row>[] = [];
    let durationMs = 0;
    reserved += free;
    onTransactionEnd(db, (committed) => {
      reserved -= free;
      if (!committed) return;
      if (free > 0) deps.events.emit('claimed', { queue: kind.queue, durationMs, count: jobs.length });
      deps.stats.claimed += jobs.length;
      for (const job of jobs) deps.run(job);
      if (jobs.length < keys.length) deps.wake();
    });
    if (free === 0) return 0;
    const c0 = performance.now();
    const now = sqlNow(deps.clock);
    jobs = await claimKeys(db, { limit: free, keys, workerId: deps.workerId, now, queue: kind.queue, onJobsOutOfStep });
    durationMs = performance.now() - c0;
    return jobs.length;
  }
  return { slots, claimIn };
}
