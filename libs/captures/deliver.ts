import type { ClaimedJob, JobContext, JobKind } from '../queue/job-kind';
import { createClaimTableStore } from '../queue/claim-table-store';
import { Outcome } from '../queue/outcome';
import { QUEUES } from '../db/boss';
import { Clock, jsNow } from '../queue/clock';
import { classifyCaptureError, classifyCaptureResponse } from './classify-response';

/** The columns of relay.captures the delivery reads. */
export interface CaptureRow {
  id: string;
  capture_key: string;
  payload: unknown;
  /** The exact document (json column; null for rows stored before migration 0007). */
  payload_raw?: unknown;
}

/** relay.captures as a claim table (the engine's generic claim/settle/heartbeat/recovery SQL). */
export function createCaptureStore() {
  return createClaimTableStore<CaptureRow & Record<string, unknown>>({ subject: 'capture', table: 'captures', keyColumn: 'capture_key', columns: ['capture_key', 'payload', 'payload_raw'] });
}

/**
 * POSTs one capture: the row's `payload` document as JSON to CAPTURE_URL with
 * `Idempotency-Key: <capture_key>` (so the collector can absorb our at-least-once redeliveries),
 * aborted after CAPTURE_TIMEOUT or when the engine revokes the claim.
 */
export async function deliverCapture(
  row: CaptureRow,
  opts: { url: string; timeoutMs: number; signal?: AbortSignal; clock?: Clock; fetchImpl?: typeof fetch },
): Promise<Outcome> {
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
  return classifyCaptureResponse(res.status, res.headers, jsNow(opts.clock));
}

/** The capture.deliver job kind for the worker engine. */
export function createCaptureKind(opts: { url: string; timeoutMs: number; clock?: Clock; fetchImpl?: typeof fetch }): JobKind<CaptureRow & Record<string, unknown>> {
  return {
    queue: QUEUES.capture,
    store: createCaptureStore(),
    execute: (job: ClaimedJob<CaptureRow & Record<string, unknown>>, ctx: JobContext) =>
      deliverCapture(job.row, { url: opts.url, timeoutMs: opts.timeoutMs, signal: ctx.signal, clock: opts.clock, fetchImpl: opts.fetchImpl }),
  };
}
