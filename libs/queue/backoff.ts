import { backoffMs } from '../lifecycle/backoff';

/** Longest delay a remote `Retry-After` can impose; a larger value is clamped to it. */
export const RETRY_AFTER_MAX_MS = 3_600_000;

export interface BackoffPolicy {
  /** Delay scale of the first retry (RETRY_BASE). */
  baseMs: number;
  /** Upper bound of any computed delay (RETRY_CAP). */
  capMs: number;
  /** Attempts a job gets in total, the first included (RETRY_MAX_ATTEMPTS). */
  maxAttempts: number;
}

/** A job's next attempt: full jitter, so jobs that failed together (a collector outage) return spread out. */
export function backoffDelayMs(
  policy: Pick<BackoffPolicy, 'baseMs' | 'capMs'>,
  attempt: number,
  random: () => number = Math.random,
): number {
  return backoffMs({ baseMs: policy.baseMs, capMs: policy.capMs, jitter: 'full' }, attempt, random);
}

/** A remote side's requested delay wins over our backoff (clamped to 0..RETRY_AFTER_MAX_MS). */
export function retryDelayMs(
  policy: Pick<BackoffPolicy, 'baseMs' | 'capMs'>,
  attempt: number,
  requestedMs: number | undefined,
  random?: () => number,
): number {
  if (requestedMs !== undefined && Number.isFinite(requestedMs))
    return Math.min(Math.max(0, Math.round(requestedMs)), RETRY_AFTER_MAX_MS);
  return backoffDelayMs(policy, attempt, random);
}

/**
 * Parses an HTTP `Retry-After` value: delay-seconds (`120`) or an HTTP-date. Returns milliseconds
 * from `now`, or undefined when absent or unparseable (then our own backoff applies).
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  if (!/^[A-Za-z]{3},/.test(v)) return undefined; // IMF-fixdate: "Wed, 21 Oct 2015 07:28:00 GMT"
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}
