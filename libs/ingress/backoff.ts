import { type Backoff, backoffMs } from '../lifecycle/backoff';

export const INGRESS_BACKOFF_BASE_MS_DEFAULT = 250;
export const INGRESS_BACKOFF_CAP_MS_DEFAULT = 10_000;

/** Ingress loops always use equal jitter: the policy is the scale and the cap. */
export type BackoffPolicy = Pick<Backoff, 'baseMs' | 'capMs'>;

/**
 * Delay before retry number `attempt` (0-based): equal jitter, so replicas that failed together do
 * not retry in lockstep but a failing getUpdates or batch is never retried at once.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  return backoffMs({ ...policy, jitter: 'equal' }, attempt + 1, random);
}
