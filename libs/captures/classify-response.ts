import { errorCode, errorMessage, fieldOf } from '../errors';
import { parseRetryAfter } from '../queue/backoff';
import { safeText } from '../queue/errors';
import { Outcome } from '../queue/outcome';

/** Statuses that say CAPTURE_URL or the collector's credentials are wrong, not the capture. */
export const CAPTURE_CONFIG_STATUSES = new Set([401, 403, 404, 407]);

/** What the kind needs to know about a configuration problem (recorded in relay.config_problems). */
export interface CaptureConfigEffect {
  configProblem: { code: string; status: number; reason: string };
}

/**
 * The collector's answer → outcome.
 *
 * | answer | outcome |
 * | --- | --- |
 * | 2xx | delivered |
 * | 408, 429, 5xx | retry with backoff (`Retry-After` sets the delay), counted against the budget |
 * | 3xx (redirects are not followed: `redirect: 'manual'`) | configuration problem |
 * | 401, 403, 404, 407 | configuration problem |
 * | any other status (400, 409, 413, 422…) | failed at once: sending the same document again cannot succeed |
 *
 * A configuration problem is not the capture's fault (CAPTURE_URL points at the wrong place, or the
 * collector's credentials are wrong): it is retried with backoff **without spending the attempt
 * budget**, reported in /health/ready and alerted once (see libs/queue/config-problems.ts), so a
 * misconfigured collector never fails a backlog; fixing the configuration delivers it. A 3xx is
 * never success: following a 302/303 would turn the POST into a GET without the body, which the
 * collector answers 200 without having received anything.
 * `backoffStep` is the number of configuration problems in a row (the backoff grows with it).
 */
export function classifyCaptureResponse(
  status: number,
  headers: { get(name: string): string | null },
  now: Date,
  backoffStep = 1,
): Outcome<CaptureConfigEffect> {
  if (status >= 200 && status < 300) return Outcome.delivered({ status });
  const errorCode = `HTTP_${status}`;
  if (status === 408 || status === 429 || status >= 500) {
    const afterMs = parseRetryAfter(headers.get('retry-after'), now);
    return Outcome.retry(afterMs, {
      status,
      errorCode,
      error: `collector answered ${status}${afterMs !== undefined ? ` (Retry-After ${Math.round(afterMs / 1000)} s)` : ''}`,
    });
  }
  if ((status >= 300 && status < 400) || CAPTURE_CONFIG_STATUSES.has(status)) {
    const reason = captureConfigReason(status, headers.get('location'));
    const effects: CaptureConfigEffect = { configProblem: { code: errorCode, status, reason } };
    return Outcome.retry(undefined, {
      uncounted: true,
      backoffStep,
      status,
      errorCode,
      error: reason,
      details: { configProblem: true },
      effects,
    });
  }
  return Outcome.terminal(`collector rejected the capture with HTTP ${status}`, {
    status,
    errorCode,
    error: `collector answered ${status}`,
  });
}

function captureConfigReason(status: number, location: string | null): string {
  if (status >= 300 && status < 400) {
    const to = location ? ` to ${safeText(location, 200)}` : '';
    return `collector answered ${status} (a redirect${to}); redirects are not followed: set CAPTURE_URL to the URL that accepts the POST`;
  }
  const what =
    status === 404
      ? 'no such endpoint: check CAPTURE_URL'
      : status === 407
        ? 'a proxy wants credentials'
        : 'check the collector credentials and CAPTURE_URL';
  return `collector answered ${status} (${what}); captures are kept and retried with backoff`;
}

/** Network failure, timeout or abort → retry, with a stable code for the audit row. */
export function classifyCaptureError(err: unknown, timedOut: boolean): Outcome<CaptureConfigEffect> {
  if (timedOut)
    return Outcome.retry(undefined, { errorCode: 'TIMEOUT', error: 'collector did not answer within CAPTURE_TIMEOUT' });
  const cause = fieldOf(err, 'cause');
  const code = errorCode(cause) ?? (fieldOf(err, 'name') === 'AbortError' ? 'ABORTED' : 'NETWORK_ERROR');
  const detail = errorMessage(cause) ?? errorMessage(err) ?? String(err);
  return Outcome.retry(undefined, { errorCode: code, error: safeText(`request to collector failed: ${detail}`, 300) });
}
