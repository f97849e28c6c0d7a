/**
 * A standby's turn at the lease (libs/ingress/lease.ts), for the poller and the webhook ingress:
 * the attempt to take it, and the wait before the next attempt when it did not. A database that cannot be reached is an episode
 * (logged once, retried with backoff); a lease held by another replica is waited out until about
 * its expiry, re-checked often enough to take over at once when its owner releases it.
 */
import type { Episodes } from './episodes';
import type { Lease } from './lease';

export interface StandbyOptions {
  lease: Lease;
  episodes: Episodes;
  leaseTtlMs: number;
  /** Delay before retry number `attempt` (0-based). */
  backoff: (attempt: number) => number;
  /** Waits, cut short by stop() or a lost lease. */
  pause: (ms: number) => Promise<void>;
}

/** One attempt; the lease's generation and stored next offset when taken, else null after waiting. */
export async function takeLeaseOrWait(o: StandbyOptions): Promise<{ generation: number; nextOffset: number } | null> {
  let got: { generation: number; nextOffset: number } | null;
  try {
    got = await o.lease.tryAcquire();
    o.episodes.recover('lease-db', 'database reachable again');
  } catch (err) {
    const n = o.episodes.fail('lease-db', 'error', { err }, 'cannot reach the database to acquire the lease; retrying');
    await o.pause(o.backoff(n));
    return null;
  }
  if (!got) {
    const delay = await o.lease.standbyDelayMs().catch(() => o.leaseTtlMs / 2);
    await o.pause(delay);
    return null;
  }
  return got;
}
