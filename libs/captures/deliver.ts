import type { ClaimedJob, ClaimStore, JobContext, JobKind } from '../queue/job-kind';
import { createClaimStore, type ClaimVariant, type Param } from '../queue/claim-sql';
import { createFairClaims } from '../queue/fair-claims';
import type { Queryable } from '../db/pool';
import { captureNextDueInMs } from './queries';
import { CLAIM_TABLES } from '../queue/claim-tables';
import { Outcome } from '../queue/outcome';
import { inJobSpan } from '../queue/job-span';
import { SpanKind } from '../observability/tracing';
import { QUEUES } from '../db/boss';
import { Clock, jsNow } from '../queue/clock';
import { configProblemClearSql, configProblemRecord, ConfigStreak } from '../queue/config-problems';
import {
  CAPTURE_CONFIG_STATUSES,
  CaptureConfigEffect,
  classifyCaptureError,
  classifyCaptureResponse,
} from './classify-response';

/** The columns of relay.captures the delivery reads. */
export interface CaptureRow {
  id: string;
  capture_key: string;
  payload: unknown;
  /** The exact document (json column; null for rows stored before migration 0007). */
  payload_raw?: unknown;
  /** For the span: ids only. bigint columns arrive as text. */
  update_id?: string | number;
  chat_id?: string | number | null;
  /** W3C trace context of the update's ingress span; null without tracing. */
  traceparent?: string | null;
  /** The bot (read by a worker serving many bots, whose collector depends on it). */
  bot_id?: string;
}

/** A claimed capture as the delivery reads it (plus the standard claim columns). */
export type CaptureJobRow = CaptureRow & Record<string, unknown>;

/** What a capture attempt hands to the settle transaction: a collector configuration problem. */
export type CaptureEffects = CaptureConfigEffect;

/**
 * True for a capture attempt's effects. The capture store accepts any effects (`unknown`): tests and
 * benches wrap it with kinds of their own, so it checks what it applies instead of trusting a type.
 */
function isCaptureEffects(fx: unknown): fx is CaptureEffects {
  return (
    typeof fx === 'object' &&
    fx !== null &&
    'configProblem' in fx &&
    typeof fx.configProblem === 'object' &&
    fx.configProblem !== null
  );
}

/** A worker without a token: the registered bots whose captures it claims, each with its own collector. */
export interface CaptureFleet {
  /** The bots whose captures have a collector now (their own capture URL, or CAPTURE_URL). */
  botIds(): readonly string[];
  /** A bot's collector; undefined when it has none (any more): its captures wait. */
  urlOf(botId: string): string | undefined;
  /** A bot's own operators' chat (its registration's), over OPS_CHAT_ID; null: none of its own. */
  opsChatOf(botId: string): string | null;
  /** WORKER_BOT_CONCURRENCY: one bot's captures in flight in this process at most. */
  perBot: number;
}

const CAPTURE_COLUMNS = 't.capture_key, t.payload, t.payload_raw, t.update_id, t.chat_id, t.traceparent';

/**
 * relay.captures as a claim table (the engine's generated claim/settle/heartbeat/recovery SQL). A
 * fleet's store claims only the captures of `fleet.botIds` (the others are left pending, unclaimed),
 * shared fairly between the bots, and keeps a collector's configuration problem per bot.
 */
export function createCaptureStore(
  opts: {
    opsChatId?: string | null;
    fleet?: Pick<ClaimVariant, 'fairBy'> & Pick<CaptureFleet, 'botIds' | 'opsChatOf'>;
  } = {},
): ClaimStore<CaptureJobRow> {
  const { fleet } = opts;
  // a collector's problem is the bot's in a fleet (each bot may have its own); '' otherwise
  const problemBot = (row: Record<string, unknown>): string => (fleet ? String(row.bot_id) : '');
  return createClaimStore<CaptureJobRow>(CLAIM_TABLES.captures, {
    columns: fleet ? `${CAPTURE_COLUMNS}, t.bot_id` : CAPTURE_COLUMNS,
    ...(fleet && {
      where: (p: Param) => `c.bot_id = any(${p(() => fleet.botIds())}::text[])`,
      fairBy: fleet.fairBy,
      nextDueInMs: (db: Queryable, now: Date | null) => captureNextDueInMs(db, fleet.botIds(), now),
      settledColumns: 't.bot_id',
    }),
    // in the outcome statement: a delivery ends a configuration problem's episode; in the outcome
    // transaction, only when some attempt found one: it is recorded (a new episode alerts once)
    settledStep: fleet
      ? (p) =>
          `delete from relay.config_problems
            where component = ${p('capture')} and bot_id in (select s.bot_id from settled s where s.state = 'delivered')`
      : (p) => configProblemClearSql(p, 'capture', ''),
    effectsIdle: (items) => !items.some((s) => isCaptureEffects(s.effects)),
    async effects(db, landed) {
      const problems = new Map<string, CaptureConfigEffect['configProblem']>();
      const delivered = new Set<string>();
      for (const { settlement, row } of landed) {
        if (settlement.state === 'delivered') delivered.add(problemBot(row));
        if (isCaptureEffects(settlement.effects)) problems.set(problemBot(row), settlement.effects.configProblem);
      }
      for (const [botId, problem] of problems) {
        if (delivered.has(botId)) continue;
        const opsChatId = fleet?.opsChatOf(botId) ?? opts.opsChatId;
        await configProblemRecord(db, { component: 'capture', botId, ...problem }, { opsChatId });
      }
    },
  });
}

/**
 * POSTs one capture: the row's `payload` document as JSON to CAPTURE_URL with
 * `Idempotency-Key: <capture_key>` (so the collector can absorb our at-least-once redeliveries),
 * aborted after CAPTURE_TIMEOUT or when the engine revokes the claim.
 */
export async function deliverCapture(
  row: CaptureRow,
  opts: {
    url: string;
    timeoutMs: number;
    signal?: AbortSignal;
    clock?: Clock;
    fetchImpl?: typeof fetch;
    backoffStep?: () => number;
  },
): Promise<Outcome<CaptureEffects>> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  let res: Response;
  try {
    res = await (opts.fetchImpl ?? fetch)(opts.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': row.capture_key },
      // payload_raw is exact (NUL, unpaired surrogates); payload is its jsonb copy for older rows
      body: JSON.stringify(row.payload_raw ?? row.payload),
      signal,
      // a redirect is an answer, not a delivery: following a 302/303 would re-send as a GET without the body
      redirect: 'manual',
    });
  } catch (err) {
    return classifyCaptureError(err, timeout.aborted);
  }
  // drain the body so the keep-alive connection can be reused; its content is not stored
  try {
    await res.arrayBuffer();
  } catch {
    // the status is what counts
  }
  const configProblem = (res.status >= 300 && res.status < 400) || CAPTURE_CONFIG_STATUSES.has(res.status);
  const configStep = configProblem ? opts.backoffStep?.() : undefined;
  return classifyCaptureResponse(res.status, res.headers, jsNow(opts.clock), configStep);
}

/** How long a capture whose bot has no collector any more (disabled, URL removed) waits before it is looked at again. */
const NO_COLLECTOR_RETRY_MS = 30_000;

/**
 * The capture.deliver job kind for the worker engine: every capture to `url` (CAPTURE_URL), or in a
 * fleet each bot's captures to its own collector, one bot's at most `fleet.perBot` in flight.
 */
export function createCaptureKind(opts: {
  /** CAPTURE_URL: the collector of every capture (required without `fleet`). */
  url?: string;
  /** A worker serving the registered bots. */
  fleet?: CaptureFleet;
  timeoutMs: number;
  clock?: Clock;
  fetchImpl?: typeof fetch;
  /** OPS_CHAT_ID: where the alert of a collector configuration problem goes (else relay.outbound_settings). */
  opsChatId?: string | null;
}): JobKind<CaptureJobRow> {
  const { fleet } = opts;
  if (!opts.url && !fleet) throw new Error('createCaptureKind: pass url (one collector) or fleet');
  // consecutive configuration-like answers, per collector's bot in a fleet (the first is logged)
  const streaks = new Map<string, ConfigStreak>();
  const streakOf = (id: string) => streaks.get(id) ?? streaks.set(id, new ConfigStreak()).get(id)!;
  const fair = fleet ? createFairClaims({ keys: () => fleet.botIds(), perKey: fleet.perBot }) : undefined;
  const claims = createCaptureStore({
    opsChatId: opts.opsChatId,
    fleet: fleet && {
      botIds: () => fleet.botIds(),
      opsChatOf: (id) => fleet.opsChatOf(id),
      fairBy: fair!.fairBy('bot_id'),
    },
  });
  const botOf = (row: CaptureRow) => (fleet ? String(row.bot_id) : '');

  const deliver = async (job: ClaimedJob<CaptureJobRow>, ctx: JobContext): Promise<Outcome<CaptureEffects>> => {
    const botId = botOf(job.row);
    const url = fleet ? fleet.urlOf(botId) : opts.url;
    // the bot was disabled or lost its collector since the claim: the capture waits, as unclaimed ones do
    if (!url)
      return Outcome.retry(NO_COLLECTOR_RETRY_MS, {
        uncounted: true,
        errorCode: 'RELAY_BOT_NOT_SERVED',
        error: `bot ${botId} has no collector now (disabled, removed, or no capture URL); not delivered`,
      });
    const streak = streakOf(botId);
    // the delivery joins the update's trace (stored by ingress)
    const span = {
      traceparent: job.row.traceparent,
      kind: SpanKind.PRODUCER,
      attributes: () => ({
        'messaging.operation.type': 'send',
        'messaging.destination.name': QUEUES.capture,
        'tg.capture_key': job.key,
        'tg.attempt': job.attempt,
        ...(job.row.update_id !== undefined ? { 'tg.update_id': Number(job.row.update_id) } : {}),
        ...(job.row.chat_id !== undefined && job.row.chat_id !== null ? { 'tg.chat_id': String(job.row.chat_id) } : {}),
      }),
    };
    const outcome = await inJobSpan('capture.deliver', span, () =>
      deliverCapture(job.row, {
        url,
        timeoutMs: opts.timeoutMs,
        signal: ctx.signal,
        clock: opts.clock,
        fetchImpl: opts.fetchImpl,
        backoffStep: () => streak.failed(),
      }),
    );
    if (outcome.type === 'delivered') streak.succeeded();
    else if (outcome.details?.configProblem && streak.current === 1) {
      ctx.logger.error(
        { ...(fleet ? { botId } : {}), status: outcome.status, errorCode: outcome.errorCode, reason: outcome.error },
        fleet
          ? "the collector answers as if the bot's capture URL (or CAPTURE_URL) or its credentials were wrong; captures are kept and retried with backoff"
          : 'the collector answers as if CAPTURE_URL or its credentials were wrong; captures are kept and retried with backoff',
      );
    }
    return outcome;
  };

  return {
    queue: QUEUES.capture,
    store: fair ? fair.count(claims, (row) => botOf(row)) : claims,
    execute: (job, ctx) => (fair ? deliver(job, ctx).finally(() => fair.finished(botOf(job.row))) : deliver(job, ctx)),
  };
}
