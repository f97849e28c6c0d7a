/** Capped exponential backoff with jitter. */

export const INGRESS_BACKOFF_BASE_MS_DEFAULT = 250;
export const INGRESS_BACKOFF_CAP_MS_DEFAULT = 10_000;

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
}

/**
 * Delay before retry number `attempt` (0-based): "equal jitter", half fixed and half random, so
 * replicas that failed together do not retry in lockstep but the delay never collapses to zero.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exp = Math.min(policy.capMs, policy.baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(exp / 2 + random() * (exp / 2));
}
