/**
 * The rescuer: stale-claim recovery as a service of its own (as River's JobRescuer). A claim whose
 * heartbeat is older than `staleMs` goes back to `pending` (due now), or to `failed` when that
 * attempt was the last of its budget — row, ledger job and an audit row per claim in one
 * transaction, then NOTIFY so idle replicas pick them up at once. The worker that held such a
 * claim can no longer write its outcome (fenced by claim id).
 *
 * Recovery is about dead workers, not about a bot or a rate limit: a target needs only its table
 * (the registry's description, so the generated recover SQL) and what its work type adds after a
 * recovery (outbound: at_most_once messages fail as ambiguous). Workers create one from their job
 * kinds' stores and sweep periodically; the admin API creates one from the registry and sweeps on
 * demand.
 */
import type { Pool } from 'pg';
import type { JobLedger, QueueName } from '../db/boss';
import type { Queryable } from '../db/pool';
import { withTransaction } from '../db/pool';
import type { Logger } from '../observability/logger';
import { bossJobsFail, bossJobsReschedule } from './boss-jobs';
import { createClaimStore } from './claim-sql';
import { CLAIM_TABLES } from './claim-tables';
import { Clock, jsNow, sqlNow } from './clock';
import { notifyWork } from './enqueue';
import type { AttemptSubject, ClaimStore, RecoveredRow } from './job-kind';
import { attemptsInsert } from './queries';
import { isWorkTypeName, WORK_TYPE_LIST, WORK_TYPES, type WorkTypeName } from './work-types';

const SWEEP_LIMIT = 500;

/** One work type the rescuer can sweep. */
export interface RescueTarget {
  queue: QueueName;
  subject: AttemptSubject;
  recoverStale: ClaimStore<unknown>['recoverStale'];
}

export interface RescueOptions {
  /** Heartbeat age at which a claim counts as stale. */
  staleMs: number;
  /** RETRY_MAX_ATTEMPTS: the budget of rows without their own. */
  maxAttempts: number;
  /** Who recovers (recorded in the audit details). */
  workerId: string;
}

export interface Rescuer {
  readonly queues: readonly QueueName[];
  /** One sweep of a work type (by queue or registry name); returns how many claims were recovered. */
  rescue(target: QueueName | WorkTypeName, opts: RescueOptions): Promise<number>;
}

export interface RescuerDeps {
  pool: Pool;
  /** The job ledger whose jobs mirror the rows (it need not be started). */
  boss: JobLedger;
  logger?: Logger;
  clock?: Clock;
}

/** What a work type adds after its stale claims were recovered (in the same transaction). */
export type AfterRecover = (db: Queryable, rows: RecoveredRow[]) => Promise<RecoveredRow[]>;

/** Rescue targets straight from the registry's table descriptions (no job kind, no bot needed). */
export function registryRescueTargets(afterRecover: Partial<Record<WorkTypeName, AfterRecover>> = {}): RescueTarget[] {
  return WORK_TYPE_LIST.map((t) => {
    const store = createClaimStore<unknown>(CLAIM_TABLES[t.name], { afterRecover: afterRecover[t.name] });
    return { queue: t.queue, subject: t.subject, recoverStale: (db, args) => store.recoverStale(db, args) };
  });
}

/** The rescue target of a job kind's claim store. */
export function rescueTargetOf(kind: {
  queue: QueueName;
  store: Pick<ClaimStore<unknown>, 'subject' | 'recoverStale'>;
}): RescueTarget {
  return {
    queue: kind.queue,
    subject: kind.store.subject,
    recoverStale: (db, args) => kind.store.recoverStale(db, args),
  };
}

export function createRescuer(deps: RescuerDeps & { targets: RescueTarget[] }): Rescuer {
  const byQueue = new Map<string, RescueTarget>(deps.targets.map((t) => [t.queue, t]));
  return {
    queues: deps.targets.map((t) => t.queue),
    rescue(name, opts) {
      const queue = isWorkTypeName(name) ? WORK_TYPES[name].queue : name;
      const target = byQueue.get(queue);
      if (!target) return Promise.reject(new Error(`the rescuer has no target for ${name}`));
      return rescueOnce(deps, target, opts);
    },
  };
}

/** One sweep of one target, in batches of SWEEP_LIMIT claims (one transaction each). */
export async function rescueOnce(deps: RescuerDeps, target: RescueTarget, opts: RescueOptions): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await withTransaction(deps.pool, async (db) => {
      const rows = await target.recoverStale(db, {
        staleMs: opts.staleMs,
        now: sqlNow(deps.clock),
        limit: SWEEP_LIMIT,
        maxAttempts: opts.maxAttempts,
      });
      if (rows.length === 0) return 0;
      const pending = rows.filter((r) => r.state === 'pending' && r.jobId);
      await bossJobsReschedule(
        deps.boss,
        db,
        target.queue,
        pending.map((r) => ({ jobId: r.jobId!, startAfter: r.nextAttemptAt! })),
        { outcome: 'stale' },
      );
      const failed = rows.filter((r) => r.state === 'failed' && r.jobId).map((r) => r.jobId!);
      await bossJobsFail(deps.boss, db, target.queue, failed, {
        reason: 'attempt budget spent; the last attempt went stale',
      });
      const at = jsNow(deps.clock);
      await attemptsInsert(
        db,
        rows.map((r) => ({
          subject: target.subject,
          subject_id: r.id,
          subject_key: r.key,
          attempt: r.attempt,
          worker_id: r.workerId,
          started_at: r.startedAt ?? at,
          finished_at: at,
          duration_ms: r.startedAt ? Math.max(0, at.getTime() - new Date(r.startedAt).getTime()) : null,
          outcome: r.label ?? (r.state === 'failed' ? 'failed' : 'retry'),
          http_status: null,
          error_code: 'RELAY_STALE_CLAIM',
          error: 'the worker stopped heartbeating (died or lost the database); claim recovered',
          details: { recoveredBy: opts.workerId, lastHeartbeatAt: r.heartbeatAt, staleAfterMs: opts.staleMs },
        })),
      );
      await notifyWork(db, target.queue);
      deps.logger?.warn(
        { queue: target.queue, recovered: rows.length, failed: failed.length },
        'recovered stale claims',
      );
      return rows.length;
    });
    total += n;
    if (n < SWEEP_LIMIT) return total;
  }
}
