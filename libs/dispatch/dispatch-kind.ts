/**
 * update.dispatch as a job kind of the worker engine (libs/queue): the engine claims, heartbeats,
 * backs off, fails after the budget, recovers stale claims and writes the audit; this kind owns the
 * inbox rows (claiming only chat heads, for per-chat order) and what one attempt does (run the
 * stored update through the bot's handlers).
 */
import type { PoolClient } from 'pg';
import { QUEUES } from '../db/boss';
import { notifyWork } from '../queue/enqueue';
import { createClaimStore, type ClaimVariant } from '../queue/claim-sql';
import { CLAIM_TABLES } from '../queue/claim-tables';
import type { ClaimedJob, ClaimStore, JobContext, JobKind } from '../queue/job-kind';
import { inJobSpan } from '../queue/job-span';
import { SpanKind } from '../observability/tracing';
import { Outcome } from '../queue/outcome';
import type { Handled } from './outcome';
import { commitSessions, type AttemptSessions } from './attempt-sessions';
import { inboxClaimable, inboxClaimVariant, inboxDeferFollowers, inboxRowOf, type InboxClaimedRow } from './queries';
import type { UpdateRunner } from './update-runner';

export type DispatchOrdering = 'chat' | 'none';

export interface DispatchKindOptions {
  runner: UpdateRunner;
  /** HANDLER_TIMEOUT. */
  handlerTimeoutMs: number;
  /** DISPATCH_ORDERING: 'chat' (default) dispatches each chat's updates strictly in update_id order. */
  ordering?: DispatchOrdering;
  /**
   * Resolves when the runner has started (getMe answered): nothing is claimed before. Omit it only
   * for a runner already started.
   */
  whenReady?: Promise<void>;
  /** Hands a handled batch's replies to this process's outbound worker (see createInboxClaimStore). */
  sendReplies?: SendReplies;
}

/**
 * Claims the replies of `msgIds` in the outcome transaction on `db`, to send them after its commit,
 * and wakes the workers for those it leaves (their enqueue sent no NOTIFY when this is set).
 */
export type SendReplies = (db: PoolClient, msgIds: readonly string[]) => Promise<void>;

/** A handled outcome's `effects`: writes that must commit with the handled mark (outbound replies, sessions). */
export type CommitEffect = Handled['parts'];

/**
 * The inbox as a ClaimStore (the engine's generated SQL for the inbox's table description): claims
 * chat heads (when ordered), writes `handled` for delivered, and applies a handled attempt's
 * effects (its captured replies) in the outcome transaction.
 */
export function createInboxClaimStore(opts: {
  ordered: boolean;
  /** The bot whose rows are claimed. */
  botId?: string;
  /** Or (a fleet worker) the rule of the bots served and how they share a claim. */
  fleet?: Pick<ClaimVariant, 'scope' | 'fairBy'>;
  /**
   * Claims the batch's replies for the outbound worker of this process in the outcome transaction,
   * so that it sends them as soon as the transaction commits, instead of after a wake and a claim
   * of its own (a commit and a round trip more on a reply's way).
   */
  sendReplies?: SendReplies;
}): ClaimStore<InboxClaimedRow, CommitEffect> {
  const { ordered, fleet } = opts;
  // a fleet's rows are each their own bot's: the per-chat rule compares a row with its own bot's rows
  const variant = fleet
    ? {
        ...inboxClaimVariant('c.bot_id', ordered),
        ...fleet,
        where: () => inboxClaimable('c', 'c.bot_id', ordered),
      }
    : inboxClaimVariant(opts.botId!, ordered);
  return createClaimStore<InboxClaimedRow, CommitEffect>(CLAIM_TABLES.inbox, {
    ...variant,
    toRow: inboxRowOf,
    async effects(db, landed) {
      // Only for claims that still hold (the engine passes no fenced one): their replies are dropped with them.
      const sessions: AttemptSessions[] = [];
      const replies: string[] = [];
      for (const { settlement, row } of landed) {
        if (row.state !== 'delivered' || !settlement.effects) continue;
        replies.push(...(await settlement.effects.replies(db as PoolClient)));
        if (settlement.effects.sessions) sessions.push(settlement.effects.sessions);
      }
      // the batch's sessions in one statement (a conflict rolls the batch back; see commitSessions)
      if (sessions.length > 0) await commitSessions(db, sessions);
      if (ordered) {
        // a head going back to wait for its retry: its followers wait at least as long
        await inboxDeferFollowers(
          db,
          landed.filter((l) => l.row.state === 'pending' && l.row.hasFollowers === true).map((l) => l.row.id),
        );
        // a handled (or failed) head lets its chat's next update go: wake every replica's claim loop
        // when this transaction commits (NOTIFY is transactional) instead of leaving it to a poll
        if (landed.some((l) => l.row.state !== 'pending' && l.row.hasFollowers === true))
          await notifyWork(db, QUEUES.dispatch);
      }
      // last: the claimed rows are locked until the commit, which follows at once
      if (replies.length > 0) await opts.sendReplies?.(db as PoolClient, replies);
    },
  });
}

export function createDispatchKind(opts: DispatchKindOptions): JobKind<InboxClaimedRow, CommitEffect> {
  const { runner } = opts;
  const ordered = (opts.ordering ?? 'chat') === 'chat';
  const inbox = createInboxClaimStore({ botId: runner.botId, ordered, sendReplies: opts.sendReplies });
  // Nothing is claimed before the bot knows who it is (getMe at start may wait for the Bot API): the
  // claim loop waits for whenReady; the other job kinds of the process run meanwhile.
  if (!opts.whenReady && runner.botInfo() === undefined)
    throw new Error('createDispatchKind: start the runner first, or pass whenReady');
  return {
    queue: QUEUES.dispatch,
    store: inbox,
    whenReady: opts.whenReady,
    execute: (job, ctx) => dispatchUpdate(runner, opts.handlerTimeoutMs, job, ctx),
  };
}

/** One attempt of a claimed update on `runner`, in a span that continues the update's trace (stored by ingress). */
export function dispatchUpdate(
  runner: UpdateRunner,
  handlerTimeoutMs: number,
  job: ClaimedJob<InboxClaimedRow>,
  ctx: JobContext,
): Promise<Outcome<CommitEffect>> {
  // replies the handler enqueues carry the trace on
  return inJobSpan(
    'dispatch.update',
    {
      traceparent: job.row.traceparent,
      kind: SpanKind.CONSUMER,
      attributes: () => ({
        'messaging.system': 'telegram',
        'messaging.operation.type': 'process',
        'messaging.destination.name': QUEUES.dispatch,
        'messaging.message.id': job.row.update_id,
        'tg.update_id': Number(job.row.update_id),
        ...(job.row.chat_id !== null ? { 'tg.chat_id': job.row.chat_id } : {}),
        'tg.update_type': job.row.update_type,
        'tg.attempt': job.attempt,
      }),
    },
    () => executeUpdate(runner, handlerTimeoutMs, job, ctx),
  );
}

async function executeUpdate(
  runner: UpdateRunner,
  handlerTimeoutMs: number,
  job: ClaimedJob<InboxClaimedRow>,
  ctx: JobContext,
): Promise<Outcome<CommitEffect>> {
  const raw = job.row.payload;
  if (!raw || typeof raw !== 'object' || !Number.isInteger((raw as { update_id?: unknown }).update_id)) {
    return Outcome.terminal('the stored payload is not a Telegram update (no integer update_id)', {
      errorCode: 'RELAY_DISPATCH_BAD_PAYLOAD',
    });
  }
  const outcome = await runner.runUpdate(raw, {
    signal: ctx.signal,
    timeoutMs: handlerTimeoutMs,
    updateEpoch: job.row.update_epoch,
    session: job.row.session,
  });
  if (outcome.kind === 'handled') {
    const details: Record<string, unknown> = { via: outcome.via, updateType: job.row.update_type };
    if (outcome.handledError) details.handledError = outcome.handledError;
    return Outcome.delivered<CommitEffect>({
      label: 'handled',
      details,
      effects: outcome.parts,
      ...(outcome.transaction ? { transaction: outcome.transaction } : {}),
    });
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
    return Outcome.terminal(`${info.code ?? info.errorClass}: ${info.message}`, {
      errorCode: info.code ?? info.errorClass,
      error: info.message,
      details,
    });
  }
  if (!outcome.aborted) ctx.logger.warn({ err: info, updateId: job.key }, 'handler failed; update will be retried');
  return Outcome.retry(undefined, { errorCode: info.errorClass, error: info.message, details });
}
