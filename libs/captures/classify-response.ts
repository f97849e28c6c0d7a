import { parseRetryAfter } from '../queue/backoff';
import { Outcome } from '../queue/outcome';

/**
 * The collector's answer → outcome. 2xx delivered; 408, 429 and 5xx retry (a `Retry-After` header
 * sets the delay); any other status (4xx, and 1xx/3xx we did not follow) fails at once: sending the
 * same document again cannot succeed.
 */
export function classifyCaptureResponse(status: number, headers: { get(name: string): string | null }, now: Date): Outcome {
  if (status >= 200 && status < 300) return Outcome.delivered({ status });
  const errorCode = `HTTP_${status}`;
  if (status === 408 || status === 429 || status >= 500) {
    const afterMs = parseRetryAfter(headers.get('retry-after'), now);
    return Outcome.retry(afterMs, { status, errorCode, error: `collector answered ${status}${afterMs !== undefined ? ` (Retry-After ${Math.round(afterMs / 1000)} s)` : ''}` });
  }
  return Outcome.terminal(`collector rejected the capture with HTTP ${status}`, { status, errorCode, error: `collector answered ${status}` });
}

/** Network failure, timeout or abort → retry, with a stable code for the audit row. */
export function classifyCaptureError(err: unknown, timedOut: boolean): Outcome {
  if (timedOut) return Outcome.retry(undefined, { errorCode: 'TIMEOUT', error: 'collector did not answer within CAPTURE_TIMEOUT' });
  const e = err as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e?.cause?.code ?? (e?.name === 'AbortError' ? 'ABORTED' : 'NETWORK_ERROR');
  const detail = e?.cause?.message ?? e?.message ?? String(err);
  return Outcome.retry(undefined, { errorCode: code, error: `request to collector failed: ${detail}`.slice(0, 300) });
}
