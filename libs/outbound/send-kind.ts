/**
 * outbound.send as a job kind of the worker engine (libs/queue): the engine claims, heartbeats,
 * backs off, budgets, recovers stale claims, fences by claim id and writes the audit; this kind
 * owns relay.outbound's claim (chat heads only, ready for the rate limits), one send attempt and
 * what an outcome means for the row beyond its state (Telegram's message_id, a migrated chat, the
 * rate-limit bookkeeping, the alert of a failed message) — all written in the engine's settle
 * transaction, so they land exactly when the outcome does.
 */
import type { Pool } from 'pg';
import { ledgerStatements, QUEUES } from '../db/boss';
import type { Queryable } from '../db/pool';
import type { BotApiClient } from '../telegram/client';
import { notifyWork } from '../queue/enqueue';
import { createClaimStore, type ClaimVariant, type Param } from '../queue/claim-sql';
import { createFairClaims } from '../queue/fair-claims';
import { CLAIM_TABLES } from '../queue/claim-tables';
import type { ClaimedJob, ClaimStore, JobContext, JobKind, RecoveredRow, SettledRow } from '../queue/job-kind';
import { inJobSpan } from '../queue/job-span';
import { SpanKind } from '../observability/tracing';
import { Outcome } from '../queue/outcome';
import { configProblemClear, configProblemRecord, ConfigStreak } from '../queue/config-problems';
import { type ChatStatus, type SendOutcome, UNALERTED_CHAT_STATUSES } from './classify-response';
import {
  chatStatusClear,
  chatStatusRecord,
  outboundClaimable,
  outboundCount429,
  outboundFailStaleAtMostOnce,
  outboundHasSuccessors,
  outboundHoldForBroadcast,
  outboundIdsByBot,
  outboundBotsWithWork,
  outboundNextDueInMs,
  outboundRaiseAlerts,
  outboundRetarget,
  outboundSetTelegramMessageIds,
  outboundUploadsOf,
} from './queries';
import { carriesPaidBroadcast, OutboundRateLimiter, RESERVE_HORIZON_MS_DEFAULT } from './rate-limit';
import { isAnswer, methodOf, OutboundRow, sendOutbound } from './send-message';
import { DEPENDENCY_RETRY_MS, resolveDependencies } from './dependencies';
import { attachedParts } from './method-params';

/** What an attempt's outcome asks the settle transaction to write besides the row's state. */
export interface OutboundEffects {
  botId: string;
  /** The chat the attempt went to; null for an answer (no chat, no rate limits). */
  chatId: string | null;
  /** Messages the attempt counts for (an album: its messages). */
  count?: number;
  /** The attempt reached (or may have reached) Telegram: charge the chat's rate limit. */
  charge?: boolean;
  /** 429: push the chat (maybe the bot) back by this long instead of charging. */
  rateLimitedMs?: number;
  messageId?: number;
  /** Every message id of the result, in order. */
  messageIds?: number[];
  /** migrate_to_chat_id: retarget the row (and the chat's other pending rows) to this chat. */
  retargetTo?: string;
  /** The Bot API answered 401/404: recorded in relay.config_problems (never alerted through Telegram). */
  configProblem?: { code: string; status: number; reason: string };
  /** The chat cannot be reached (blocked, deactivated…): recorded in relay.chat_status (see UNALERTED_CHAT_STATUSES). */
  chatStatus?: { status: ChatStatus; reason: string };
}

/** A worker without a token: the registered bots whose rows it sends, each with its own client and limits. */
export interface OutboundFleet {
  /** The bots served now. */
  botIds(): readonly string[];
  /** A served bot's Bot API client and rate limiter; undefined when it is not served (any more). */
  of(botId: string): { telegram: BotApiClient; limiter: OutboundRateLimiter } | undefined;
  /** WORKER_BOT_CONCURRENCY: one bot's messages in flight in this process at most. */
  perBot: number;
}

export interface OutboundKindOptions {
  pool: Pool;
  /** The Bot API client of the bot whose rows this worker sends (single-bot mode). */
  telegram?: BotApiClient;
  /** Or the registered bots it sends for. */
  fleet?: OutboundFleet;
  /** The rate limits (a fleet: the deployment's, for the claim's horizons and bulk bounds). */
  limiter: OutboundRateLimiter;
  /** OPS_CHAT_ID: where alerts about failed messages go (else relay.outbound_settings; else none). */
  opsChatId?: string | null;
  /** A fleet: a bot's own operators' chat (its registration's), over opsChatId; null: none of its own. */
  opsChatOf?: (botId: string) => string | null;
  /** OUTBOUND_SEND_TIMEOUT. */
  sendTimeoutMs: number;
  horizonMs?: number;
  /** META_ALERT_ON_DROP (default true): false raises no alert about failed messages. */
  alertsEnabled?: boolean;
  /** ALERT_COALESCE (default 1 min): at most one alert per window per (bot, operators' chat). */
  alertCoalesceMs?: number;
  /** OUTBOUND_MAX_RETRY_AFTER: the longest wait honoured for one 429 (default: the engine's 1 h cap). */
  maxRetryAfterMs?: number;
  /** OUTBOUND_MAX_429: a message that got this many 429s fails (0 or unset: unlimited). */
  max429?: number;
}

/** Where and how alerts about failed messages go. */
export interface AlertOptions {
  /** OPS_CHAT_ID (else relay.outbound_settings; else none). */
  opsChatId: string | null;
  /** A fleet: a bot's own operators' chat, over opsChatId. */
  opsChatOf?: (botId: string) => string | null;
  /** META_ALERT_ON_DROP (default true). */
  alertsEnabled?: boolean;
  /** ALERT_COALESCE (default 1 min). */
  alertCoalesceMs?: number;
}

/**
 * What stale recovery adds for outbound (the rescuer applies it for the admin API and the workers
 * alike): an at_most_once message whose worker died may have been sent, so it fails as
 * `ambiguous` instead of going back to pending, and every recovered attempt is audited as
 * `ambiguous`; then the alerts of messages that failed, and a NOTIFY when a chat is unblocked.
 * Depends on the deployment's alert settings only, not on a bot or a rate limiter.
 */
export function outboundAfterRecover(opts: AlertOptions) {
  return async (db: Queryable, rows: RecoveredRow[]): Promise<RecoveredRow[]> => {
    const failedNow = new Set(
      await outboundFailStaleAtMostOnce(
        db,
        rows.filter((r) => r.state === 'pending').map((r) => r.id),
      ),
    );
    // The dead worker may have sent the message before it died: the recovered attempt's outcome is
    // unknown, so its audit row says `ambiguous` (a send after it can be a duplicate), as for a
    // connection dropped after the request was written.
    const out = rows.map((r): RecoveredRow => ({
      ...r,
      state: failedNow.has(r.id) ? 'failed' : r.state,
      label: 'ambiguous',
    }));
    // a broadcast paused or cancelled while the dead worker held the claim holds the row too (its
    // state stays `pending` here, so the rescuer reschedules the job as for any paused row)
    await holdForBroadcast(
      db,
      out.filter((r) => r.state === 'pending').map((r) => r.id),
    );
    await outboundAfterFinal(db, out, opts);
    return out;
  };
}

/**
 * Alerts for rows that just failed (but those in `quiet`: failures that only say the chat cannot be
 * reached); a NOTIFY when a finished head lets its chat's next row go.
 */
async function outboundAfterFinal(
  db: Queryable,
  rows: Pick<SettledRow, 'id' | 'state'>[],
  opts: AlertOptions,
  quiet: ReadonlySet<string> = new Set(),
): Promise<void> {
  const failed = rows.filter((r) => r.state === 'failed' && !quiet.has(r.id)).map((r) => r.id);
  if (opts.alertsEnabled !== false) await raiseAlerts(db, failed, opts);
  const finished = rows.filter((r) => r.state === 'delivered' || r.state === 'failed').map((r) => r.id);
  if (await outboundHasSuccessors(db, finished)) await notifyWork(db, QUEUES.outbound);
}

/** The alerts of `failed`: to the operators' chat, or in a fleet to each bot's own (else OPS_CHAT_ID). */
async function raiseAlerts(db: Queryable, failed: string[], opts: AlertOptions): Promise<void> {
  const { opsChatOf } = opts;
  if (!opsChatOf) {
    await outboundRaiseAlerts(db, failed, opts.opsChatId, opts.alertCoalesceMs);
    return;
  }
  for (const bot of await outboundIdsByBot(db, failed))
    await outboundRaiseAlerts(db, bot.ids, opsChatOf(bot.botId) ?? opts.opsChatId, opts.alertCoalesceMs);
}

/**
 * A retry of a broadcast row paused or cancelled during its attempt waits `paused` or ends
 * cancelled (its ledger job with it: the engine's reschedule leaves finished jobs alone) instead
 * of going back to `pending`, where it would be sent while the broadcast is held.
 */
async function holdForBroadcast(db: Queryable, retried: string[]): Promise<void> {
  const moved = await outboundHoldForBroadcast(db, retried);
  const cancelled = moved.flatMap((r) => (r.state === 'failed' && r.job_id ? [r.job_id] : []));
  if (cancelled.length) await ledgerStatements.cancelJobs(db, QUEUES.outbound, cancelled);
  // a cancelled chat head lets the chat's next message go
  if (moved.some((r) => r.state === 'failed')) await notifyWork(db, QUEUES.outbound);
}

export function createOutboundClaimStore(opts: {
  botId: string;
  /** A fleet: rows of these bots instead of `botId`'s, shared fairly, each charged to its own limiter. */
  fleet?: Pick<ClaimVariant, 'fairBy'> & {
    botIds: () => readonly string[];
    limiterOf: (botId: string) => OutboundRateLimiter | undefined;
  };
  limiter: OutboundRateLimiter;
  opsChatId: string | null;
  /** A fleet: a bot's own operators' chat, over opsChatId. */
  opsChatOf?: (botId: string) => string | null;
  horizonMs: number;
  /** True while an at_most_once claim's request may be on the wire (see `releasable`). */
  sendingAtMostOnce?: (claimId: string) => boolean;
  /** META_ALERT_ON_DROP (default true). */
  alertsEnabled?: boolean;
  /** ALERT_COALESCE (default 1 min). */
  alertCoalesceMs?: number;
}): ClaimStore<OutboundRow, OutboundEffects> {
  const { botId, limiter, opsChatId, horizonMs, fleet } = opts;
  const limiterOf = (id: string) => (fleet ? fleet.limiterOf(id) : limiter);
  const rateLimited = limiter.limits.mode === 'proactive';
  const sending = opts.sendingAtMostOnce;
  const bulkBounds = {
    max: limiter.bulkInFlightMax,
    aheadMs: limiter.bulkAheadMs,
    paidMax: limiter.paid?.inFlightMax ?? null,
  };
  return createClaimStore<OutboundRow, OutboundEffects>(CLAIM_TABLES.outbound, {
    // chat heads (per lane) of this bot, ready for the rate limits
    // interactive rows first ('interactive' > 'bulk'; outbound_pending_lane_idx), then oldest first
    // a fleet's claim is over its fairBy keys (served bots with a free slot); its next due is below
    where: (p: Param) =>
      outboundClaimable(
        'c',
        // a fleet's rows are each their own bot's: the chat, bulk and rate rules read the row's bot
        fleet ? 'c.bot_id' : p(botId),
        rateLimited ? p(horizonMs) : null,
        rateLimited
          ? {
              max: p(limiter.bulkInFlightMax),
              aheadMs: p(limiter.bulkAheadMs),
              paidMax: limiter.paid ? p(limiter.paid.inFlightMax) : null,
            }
          : null,
      ),
    order: 'c.lane desc, c.id',
    fairBy: fleet?.fairBy,
    // the whole row
    columns: '*',
    nextDueInMs: async (db, now) => {
      const due = (id: string) => outboundNextDueInMs(db, { botId: id, now, rateLimited, horizonMs, bulk: bulkBounds });
      if (!fleet) return due(botId);
      // the soonest of the bots with rows (each bot's is one skip scan over its chats)
      let soonest: number | null = null;
      for (const id of await outboundBotsWithWork(db, fleet.botIds())) {
        const ms = await due(id);
        if (ms !== null && (soonest === null || ms < soonest)) soonest = ms;
        if (soonest === 0) break;
      }
      return soonest;
    },
    async effects(db, landed) {
      const messageIds: { id: string; messageId: number; messageIds: number[] }[] = [];
      const problems = new Map<string, NonNullable<OutboundEffects['configProblem']>>();
      const delivered = new Set<string>();
      const reached: { botId: string; chatId: string }[] = [];
      const unreachable: { botId: string; chatId: string; status: ChatStatus; reason: string }[] = [];
      const quiet = new Set<string>();
      for (const { settlement: item } of landed) {
        const fx = item.effects;
        if (!fx) continue;
        if (item.state === 'delivered') delivered.add(fx.botId);
        if (item.state === 'delivered' && fx.chatId !== null) reached.push({ botId: fx.botId, chatId: fx.chatId });
        if (item.state === 'failed' && fx.chatStatus && fx.chatId !== null) {
          unreachable.push({ botId: fx.botId, chatId: fx.chatId, ...fx.chatStatus });
          if (UNALERTED_CHAT_STATUSES.has(fx.chatStatus.status)) quiet.add(item.id);
        }
        if (fx.configProblem) problems.set(fx.botId, fx.configProblem);
        if (fx.messageId !== undefined)
          messageIds.push({ id: item.id, messageId: fx.messageId, messageIds: fx.messageIds ?? [fx.messageId] });
        if (fx.chatId === null) continue; // an answer: no chat, no limits
        const limits = limiterOf(fx.botId);
        if (fx.rateLimitedMs !== undefined) await limits?.afterAttempt(db, fx.botId, fx.chatId, fx.rateLimitedMs);
        else if (fx.charge) await limits?.afterAttempt(db, fx.botId, fx.chatId, undefined, fx.count);
        if (fx.retargetTo) await outboundRetarget(db, { id: item.id, fromChatId: fx.chatId, toChatId: fx.retargetTo });
      }
      await holdForBroadcast(
        db,
        landed.filter((l) => l.row.state === 'pending').map((l) => l.row.id),
      );
      await outboundSetTelegramMessageIds(db, messageIds);
      // a delivery shows the chat reachable again (the user unblocked the bot); then this batch's refusals
      await chatStatusClear(db, reached);
      await chatStatusRecord(db, unreachable);
      // the Bot API works again / answers as if misconfigured (no alert: it would go through the same Bot API)
      for (const id of delivered) await configProblemClear(db, 'outbound', id);
      for (const [id, problem] of problems)
        if (!delivered.has(id)) await configProblemRecord(db, { component: 'outbound', botId: id, ...problem });
      await outboundAfterFinal(
        db,
        landed.map((l) => l.row),
        opts,
        quiet,
      );
    },
    /**
     * Shutdown gives unfinished claims back as `pending`, but not an at_most_once message whose
     * request may already be on the wire: sending it again could deliver it twice. Such a row stays
     * `delivering`; stale recovery then fails it as `ambiguous` (see outboundAfterRecover).
     */
    releasable: sending ? (c) => !sending(c.claimId) : undefined,
    // a claim given back while its broadcast is paused or cancelled must not become claimable
    afterRelease: (db, rows) =>
      holdForBroadcast(
        db,
        rows.filter((r) => r.state === 'pending').map((r) => r.id),
      ),
    afterRecover: outboundAfterRecover({
      opsChatId,
      opsChatOf: opts.opsChatOf,
      alertsEnabled: opts.alertsEnabled,
      alertCoalesceMs: opts.alertCoalesceMs,
    }),
  });
}

/** How long a message of a bot no longer served waits before it is looked at again. */
const NOT_SERVED_RETRY_MS = 30_000;

export function createOutboundKind(opts: OutboundKindOptions): JobKind<OutboundRow, OutboundEffects> {
  const { pool, limiter, fleet } = opts;
  if (!opts.telegram && !fleet) throw new Error('createOutboundKind: pass telegram (one bot) or fleet');
  const botId = opts.telegram?.botId ?? '';
  const horizonMs = opts.horizonMs ?? RESERVE_HORIZON_MS_DEFAULT;
  const sendingAtMostOnce = new Set<string>();
  // consecutive configuration-like answers, per bot (the first of a streak is logged)
  const streaks = new Map<string, ConfigStreak>();
  const streakOf = (id: string) => streaks.get(id) ?? streaks.set(id, new ConfigStreak()).get(id)!;
  const single = opts.telegram ? { telegram: opts.telegram, limiter } : undefined;
  const botOf = (id: string) => (fleet ? fleet.of(id) : single);
  const fair = fleet ? createFairClaims({ keys: () => fleet.botIds(), perKey: fleet.perBot }) : undefined;
  const claims = createOutboundClaimStore({
    botId,
    fleet: fleet && {
      botIds: () => fleet.botIds(),
      limiterOf: (id) => fleet.of(id)?.limiter,
      fairBy: fair!.fairBy('bot_id'),
    },
    limiter,
    opsChatId: opts.opsChatId ?? null,
    opsChatOf: opts.opsChatOf,
    horizonMs,
    sendingAtMostOnce: (id) => sendingAtMostOnce.has(id),
    alertsEnabled: opts.alertsEnabled,
    alertCoalesceMs: opts.alertCoalesceMs,
  });
  const store = fair ? fair.count(claims, (row) => row.bot_id) : claims;
  return {
    queue: QUEUES.outbound,
    store,
    execute: (job, ctx) =>
      inJobSpan(
        methodOf(job.row),
        {
          traceparent: job.row.traceparent,
          kind: SpanKind.PRODUCER,
          attributes: () => ({
            'messaging.system': 'telegram',
            'messaging.operation.type': 'send',
            'messaging.operation.name': methodOf(job.row),
            'messaging.message.id': job.row.msg_id,
            'tg.msg_id': job.row.msg_id,
            ...(job.row.target_chat_id !== null ? { 'tg.chat_id': job.row.target_chat_id } : {}),
            'tg.kind': job.row.kind,
            'tg.attempt': job.attempt,
          }),
        },
        () => (fair ? execute(job, ctx).finally(() => fair.finished(job.row.bot_id)) : execute(job, ctx)),
      ),
  };

  async function execute(job: ClaimedJob<OutboundRow>, ctx: JobContext): Promise<Outcome<OutboundEffects>> {
    const row = job.row;
    const chatId = row.target_chat_id;
    const details = { chatId, ...methodDetail(row) };
    const bot = botOf(row.bot_id);
    // disabled or removed since the claim: the message waits for it, as unclaimed ones do
    if (!bot)
      return Outcome.retry(NOT_SERVED_RETRY_MS, {
        uncounted: true,
        errorCode: 'RELAY_BOT_NOT_SERVED',
        error: `bot ${row.bot_id} is not served (disabled or removed); not sent`,
      });
    const streak = streakOf(row.bot_id);
    // placeholders first: a row waiting for an earlier message spends no slot and no attempt
    const deps = await resolveDependencies(pool, row.bot_id, row.params);
    if (deps.type === 'failed')
      return Outcome.terminal(deps.reason, {
        errorCode: deps.errorCode,
        error: deps.reason,
        details,
        effects: { botId: row.bot_id, chatId },
      });
    if (deps.type === 'pending')
      return Outcome.retry(DEPENDENCY_RETRY_MS, {
        uncounted: true,
        errorCode: 'RELAY_DEPENDENCY_PENDING',
        error: deps.reason,
        details,
      });
    // answers are sent at once: Telegram expires a query within seconds, and they are no messages
    const count = row.message_count ?? 1;
    const slot =
      isAnswer(row) || chatId === null
        ? ({ ok: true, waitedMs: 0 } as const)
        : await bot.limiter.acquire(
            pool,
            row.bot_id,
            chatId,
            ctx.signal,
            count,
            row.lane ?? 'interactive',
            carriesPaidBroadcast(row),
          );
    if (!slot.ok) {
      return Outcome.retry(slot.retryInMs, {
        uncounted: true,
        errorCode: 'RELAY_RATE_DEFERRED',
        error: 'no send slot within the reservation horizon; not sent',
      });
    }
    if (ctx.signal.aborted)
      return Outcome.retry(0, {
        uncounted: true,
        errorCode: 'RELAY_ABORTED',
        error: 'stopped before sending; not sent',
      });
    if (row.delivery === 'at_most_once') sendingAtMostOnce.add(job.claimId);
    let sent: SendOutcome;
    try {
      const files = attachedParts(row.params).size > 0 ? await outboundUploadsOf(pool, row.id) : undefined;
      sent = await sendOutbound(bot.telegram, row, opts.sendTimeoutMs, { params: deps.params, files });
    } finally {
      sendingAtMostOnce.delete(job.claimId);
    }
    if (sent.type === 'rate_limited') {
      if (opts.maxRetryAfterMs !== undefined)
        sent = { ...sent, retryAfterMs: Math.min(sent.retryAfterMs, opts.maxRetryAfterMs) };
      if (opts.max429 && (await outboundCount429(pool, row.id)) + 1 >= opts.max429) {
        sent = {
          type: 'terminal',
          status: 429,
          errorCode: 'RELAY_TOO_MANY_429',
          reason: `rate limited ${opts.max429} times (OUTBOUND_MAX_429): ${sent.description}`,
        };
      }
    }
    if (sent.type === 'delivered') streak.succeeded();
    const outcome = toEngineOutcome(sent, row, slot.waitedMs, sent.type === 'config' ? streak.failed() : undefined);
    if (sent.type === 'config' && streak.current === 1) {
      ctx.logger.error(
        { status: sent.status, errorCode: sent.errorCode, reason: sent.reason },
        'the Bot API answers as if the bot token or TELEGRAM_API_ROOT were wrong; outbound messages are kept and retried with backoff',
      );
    }
    if (sent.type !== 'delivered') {
      const level = sent.type === 'terminal' || sent.type === 'ambiguous' || sent.type === 'config' ? 'warn' : 'debug';
      ctx.logger[level](
        { msgId: row.msg_id, chatId, outcome: sent.type, status: outcome.status, errorCode: outcome.errorCode },
        'outbound send not delivered',
      );
    }
    return outcome;
  }
}

const methodDetail = (row: Pick<OutboundRow, 'method'>): { method?: string } =>
  methodOf(row) === 'sendMessage' ? {} : { method: methodOf(row) };

/** SendOutcome → the engine's Outcome, with the effects the settle transaction applies. */
export function toEngineOutcome(
  sent: SendOutcome,
  row: Pick<OutboundRow, 'bot_id' | 'target_chat_id' | 'delivery'> &
    Partial<Pick<OutboundRow, 'method' | 'message_count'>>,
  waitedMs = 0,
  configStep = 1,
): Outcome<OutboundEffects> {
  const fx: OutboundEffects = { botId: row.bot_id, chatId: row.target_chat_id };
  if ((row.message_count ?? 1) > 1) fx.count = row.message_count;
  // details.method names a method other than sendMessage (absent: sendMessage, as in rows before 0025)
  const details: Record<string, unknown> = { chatId: row.target_chat_id, ...methodDetail(row) };
  if (waitedMs > 0) details.rateWaitMs = Math.round(waitedMs);
  switch (sent.type) {
    case 'delivered':
      return Outcome.delivered({
        status: sent.status,
        details: {
          ...details,
          ...(sent.messageId !== undefined ? { messageId: sent.messageId } : {}),
          ...(sent.messageIds.length > 1 ? { messageIds: sent.messageIds } : {}),
        },
        effects: { ...fx, charge: true, messageId: sent.messageId, messageIds: sent.messageIds },
      });
    case 'rate_limited':
      return Outcome.retry(sent.retryAfterMs, {
        uncounted: true,
        status: 429,
        errorCode: 'TELEGRAM_429',
        error: sent.description,
        details,
        effects: { ...fx, rateLimitedMs: sent.retryAfterMs },
      });
    case 'retry':
      return Outcome.retry(undefined, {
        status: sent.status,
        errorCode: sent.errorCode,
        error: sent.error,
        details,
        effects: { ...fx, charge: true },
      });
    case 'migrate':
      return Outcome.retry(0, {
        status: sent.status,
        errorCode: 'TELEGRAM_MIGRATE',
        error: sent.description,
        details: { ...details, migratedFrom: row.target_chat_id, migratedTo: sent.newChatId },
        effects: { ...fx, charge: true, retargetTo: sent.newChatId },
      });
    case 'ambiguous':
      if (row.delivery === 'at_most_once') {
        return Outcome.terminal('ambiguous', {
          label: 'ambiguous',
          errorCode: sent.errorCode,
          error: sent.error,
          details,
          effects: { ...fx, charge: true },
        });
      }
      return Outcome.retry(undefined, {
        label: 'ambiguous',
        errorCode: sent.errorCode,
        error: sent.error,
        details,
        effects: { ...fx, charge: true },
      });
    case 'config':
      // not the message's fault: kept, retried with a growing backoff, the budget untouched
      return Outcome.retry(undefined, {
        uncounted: true,
        backoffStep: configStep,
        status: sent.status,
        errorCode: sent.errorCode,
        error: sent.reason,
        details: { ...details, configProblem: true },
        effects: { ...fx, configProblem: { code: sent.errorCode, status: sent.status, reason: sent.reason } },
      });
    case 'terminal':
      return Outcome.terminal(sent.reason, {
        status: sent.status,
        errorCode: sent.errorCode,
        error: sent.reason,
        details: sent.chatStatus ? { ...details, chatStatus: sent.chatStatus } : details,
        effects: {
          ...fx,
          charge: true,
          ...(sent.chatStatus && fx.chatId !== null
            ? { chatStatus: { status: sent.chatStatus, reason: sent.reason } }
            : {}),
        },
      });
  }
}
