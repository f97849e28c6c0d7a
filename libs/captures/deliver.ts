import type { ClaimedJob, ClaimStore, JobContext, JobKind } from '../queue/job-kind';
import { createClaimStore } from '../queue/claim-sql';
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

/** relay.captures as a claim table (the engine's generated claim/settle/heartbeat/recovery SQL). */
export function createCaptureStore(opts: { opsChatId?: string | null } = {}): ClaimStore<CaptureJobRow> {
  return createClaimStore<CaptureJobRow>(CLAIM_TABLES.captures, {
    columns: 't.capture_key, t.payload, t.payload_raw, t.update_id, t.chat_id, t.traceparent',
    // in the outcome statement: a delivery ends a configuration problem's episode; in the outcome
    // transaction, only when some attempt found one: it is recorded (a new episode alerts once)
    settledStep: (p) => configProblemClearSql(p, 'capture', ''),
    effectsIdle: (items) => !items.some((s) => isCaptureEffects(s.effects)),
    async effects(db, landed) {
      let problem: CaptureConfigEffect['configProblem'] | undefined;
      let delivered = false;
      for (const { settlement } of landed) {
        if (settlement.state === 'delivered') delivered = true;
        if (isCaptureEffects(settlement.effects)) problem = settlement.effects.configProblem;
      }
      if (!delivered && problem)
        await configProblemRecord(db, { component: 'capture', botId: '', ...problem }, { opsChatId: opts.opsChatId });
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

/** The capture.deliver job kind for the worker engine. */
export function createCaptureKind(opts: {
  url: string;
  timeoutMs: number;
  clock?: Clock;
  fetchImpl?: typeof fetch;
  /** OPS_CHAT_ID: where the alert of a collector configuration problem goes (else relay.outbound_settings). */
  opsChatId?: string | null;
}): JobKind<CaptureJobRow> {
  const streak = new ConfigStreak();
  return {
    queue: QUEUES.capture,
    store: createCaptureStore({ opsChatId: opts.opsChatId }),
    async execute(job: ClaimedJob<CaptureJobRow>, ctx: JobContext) {
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
          ...(job.row.chat_id !== undefined && job.row.chat_id !== null
            ? { 'tg.chat_id': String(job.row.chat_id) }
            : {}),
        }),
      };
      const outcome = await inJobSpan('capture.deliver', span, () =>
        deliverCapture(job.row, {
          url: opts.url,
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
          { status: outcome.status, errorCode: outcome.errorCode, reason: outcome.error },
          'the collector answers as if CAPTURE_URL or its credentials were wrong; captures are kept and retried with backoff',
        );
      }
      return outcome;
    },
  };
}
