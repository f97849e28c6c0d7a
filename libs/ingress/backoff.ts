import { backoffMs } from '../lifecycle/backoff';

export const INGRESS_BACKOFF_BASE_MS_DEFAULT = 250;
export const INGRESS_BACKOFF_CAP_MS_DEFAULT = 10_000;

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
}

/**
 * Delay before retry number `attempt` (0-based): equal jitter, so replicas that failed together do
 * not retry in lockstep but a failing getUpdates or batch is never retried at once.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  return backoffMs({ ...policy, jitter: 'equal' }, attempt + 1, random);
}
