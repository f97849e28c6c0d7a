/**
 * update.dispatch as a job kind of the worker engine (libs/queue): the engine claims, heartbeats,
 * backs off, fails after the budget, recovers stale claims and writes the audit; this kind owns the
 * inbox rows (claiming only chat heads, for per-chat order) and what one attempt does (run the
 * stored update through the bot's handlers).
 */
import type { PoolClient } from 'pg';
import { QUEUES } from '../db/boss';
import { notifyWork } from '../queue/enqueue';
import type { ClaimedJob, ClaimStore, JobContext, JobKind, SettledRow } from '../queue/job-kind';
import { inJobSpan } from '../queue/job-span';
import { SpanKind } from '../observability/tracing';
import { Outcome } from '../queue/outcome';
import type { Handled } from './outcome';
import {
  inboxClaim,
  inboxDeferFollowers,
  inboxHeartbeat,
  inboxNextDueInMs,
  inboxRecoverStale,
  inboxRelease,
  inboxSettle,
  type InboxClaimedRow,
} from './queries';
import type { UpdateRunner } from './update-runner';

export type DispatchOrdering = 'chat' | 'none';

export interface DispatchKindOptions {
  runner: UpdateRunner;
  /** HANDLER_TIMEOUT. */
  handlerTimeoutMs: number;
  /** DISPATCH_ORDERING: 'chat' (default) dispatches each chat's updates strictly in update_id order. */
  ordering?: DispatchOrdering;
}

/** A handled outcome's `effects`: writes that must commit with the handled mark (outbound replies). */
type CommitEffect = Handled['commit'];

/**
 * The inbox as a ClaimStore: claims chat heads (when ordered), writes `handled` for delivered, and
 * applies a handled attempt's effects (its captured replies) in the outcome transaction.
 */
export function createInboxClaimStore(opts: { botId: string; ordered: boolean }): ClaimStore<InboxClaimedRow> {
  const { botId, ordered } = opts;
  return {
    subject: 'inbox',
    activatesJobs: true,
    async claim(db, args) {
      const { rows, activated } = await inboxClaim(db, { botId, limit: args.limit, workerId: args.workerId, now: args.now, ordered, queue: args.queue });
      const withJob = rows.filter((r) => r.job_id).length;
      if (activated !== withJob) args.onJobsOutOfStep?.(withJob, activated);
      return rows.map((row): ClaimedJob<InboxClaimedRow> => ({
        id: row.id,
        key: row.update_id,
        jobId: row.job_id,
        claimId: row.claim_id,
        attempt: Number(row.attempts),
        maxAttempts: null,
        row,
      }));
    },
    nextDueInMs: (db, now) => inboxNextDueInMs(db, { botId, now, ordered }),
    async settle(db, items, now) {
      const rows = await inboxSettle(
        db,
        items.map((s) => ({
          id: s.id,
          claimId: s.claimId,
          state: s.state,
          delayMs: s.delayMs,
          uncounted: s.uncounted,
          error: s.state === 'failed' ? (s.failedReason ?? s.error) : s.error,
        })),
        now,
      );
      // Only for claims that still hold: a fenced attempt's replies are dropped with it.
      const handled = new Set(rows.filter((r) => r.state === 'delivered').map((r) => r.claimId));
      for (const item of items) {
        if (handled.has(item.claimId) && typeof item.effects === 'function') await (item.effects as CommitEffect)(db as PoolClient);
      }
      if (ordered) {
        // a head going back to wait for its retry: its followers wait at least as long
        await inboxDeferFollowers(
          db,
          rows.filter((r) => r.state === 'pending' && r.hasFollowers).map((r) => r.id),
        );
        // a handled (or failed) head lets its chat's next update go: wake every replica's claim loop
        // when this transaction commits (NOTIFY is transactional) instead of leaving it to a poll
        if (rows.some((r) => r.state !== 'pending' && r.hasFollowers)) await notifyWork(db, QUEUES.dispatch);
      }
      return rows.map(({ hasFollowers: _f, ...r }): SettledRow => r);
    },
    heartbeat: (db, claims, now) => inboxHeartbeat(db, claims, now),
    recoverStale: (db, args) => inboxRecoverStale(db, args),
    async release(db, claims, now) {
      const rows = await inboxRelease(db, claims, now);
      return rows.map(({ hasFollowers: _f, ...r }): SettledRow => r);
    },
  };
}

export function createDispatchKind(opts: DispatchKindOptions): JobKind<InboxClaimedRow> {
  const { runner } = opts;
  const ordered = (opts.ordering ?? 'chat') === 'chat';
  const inbox = createInboxClaimStore({ botId: runner.botId, ordered });
  // Nothing is claimed before the bot knows who it is (getMe at start may wait for the Bot API);
  // the other job kinds of the process run meanwhile.
  const ready = () => runner.botInfo() !== undefined;
  const store: ClaimStore<InboxClaimedRow> = {
    ...inbox,
    claim: (db, args) => (ready() ? inbox.claim(db, args) : Promise.resolve([])),
    nextDueInMs: (db, now) => (ready() ? inbox.nextDueInMs(db, now) : Promise.resolve(null)),
  };
  return {
    queue: QUEUES.dispatch,
    store,
    execute: (job, ctx) =>
      // the handler run continues the update's trace (stored by ingress); replies it enqueues carry it on
      inJobSpan(
        'dispatch.update',
        {
          traceparent: job.row.traceparent,
          kind: SpanKind.CONSUMER,
          attributes: {
            'messaging.system': 'telegram',
            'messaging.operation.type': 'process',
            'messaging.destination.name': QUEUES.dispatch,
            'messaging.message.id': job.row.update_id,
            'tg.update_id': Number(job.row.update_id),
            ...(job.row.chat_id !== null ? { 'tg.chat_id': job.row.chat_id } : {}),
            'tg.update_type': job.row.update_type,
            'tg.attempt': job.attempt,
          },
        },
        () => executeUpdate(job, ctx),
      ),
  };

  async function executeUpdate(job: ClaimedJob<InboxClaimedRow>, ctx: JobContext): Promise<Outcome> {
    const raw = job.row.payload;
    if (!raw || typeof raw !== 'object' || !Number.isInteger((raw as { update_id?: unknown }).update_id)) {
      return Outcome.terminal('the stored payload is not a Telegram update (no integer update_id)', { errorCode: 'RELAY_DISPATCH_BAD_PAYLOAD' });
    }
    const outcome = await runner.runUpdate(raw, { signal: ctx.signal, timeoutMs: opts.handlerTimeoutMs });
    if (outcome.kind === 'handled') {
      const details: Record<string, unknown> = { via: outcome.via, updateType: job.row.update_type };
      if (outcome.handledError) details.handledError = outcome.handledError;
      return Outcome.delivered({ label: 'handled', details, effects: outcome.commit satisfies CommitEffect });
    }
    const { info } = outcome;
    const details: Record<string, unknown> = { errorClass: info.errorClass, updateType: job.row.update_type };
    if (info.code) details.code = info.code;
    if (outcome.timedOut) details.timedOut = true;
    if (outcome.aborted) details.aborted = true;
    if (outcome.originalError) details.originalError = outcome.originalError;
    if (outcome.terminal) {
      if (info.code) details.code = info.code;
      ctx.logger.warn({ err: info, updateId: job.key }, 'handler failed in a way no retry can change; update failed');
      return Outcome.terminal(`${info.code ?? info.errorClass}: ${info.message}`, { errorCode: info.code ?? info.errorClass, error: info.message, details });
    }
    if (!outcome.aborted) ctx.logger.warn({ err: info, updateId: job.key }, 'handler failed; update will be retried');
    return Outcome.retry(undefined, { errorCode: info.errorClass, error: info.message, details });
  }
}
