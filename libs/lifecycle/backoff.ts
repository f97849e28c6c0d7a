/**
 * The one backoff of the relay: exponential, capped, jittered. Every retry loop (a job's next
 * attempt, a lost database or NATS connection, a getUpdates failure) takes its delay from here, with
 * a named policy next to the loop, so a change of rule is made once.
 */
export interface Backoff {
  /** Delay scale of the first retry. */
  baseMs: number;
  /** Upper bound of any delay. */
  capMs: number;
  /**
   * `full` (default): uniform in [0, ceiling) — spreads many clients that failed together (AWS
   * architecture blog, "Exponential Backoff And Jitter"). `equal`: half fixed, half random, for a
   * loop whose retries must stay spaced (a reconnect wakes every claim loop). `none`: the ceiling
   * itself, for a delay that is a contract (a fake Telegram's webhook retry, a NATS redelivery).
   */
  jitter?: 'full' | 'equal' | 'none';
}

/** Largest exponent used: 2^52 × any base is past every cap (a timer holds at most 2^31 ms). */
const MAX_EXPONENT = 52;

/**
 * Delay before the retry that follows failure number `failures` (1 for the first failure): the
 * ceiling is min(cap, base × 2^(failures − 1)).
 */
export function backoffMs(policy: Backoff, failures: number, random: () => number = Math.random): number {
  const exp = Math.min(Math.max(Math.floor(failures), 1) - 1, MAX_EXPONENT);
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** exp);
  switch (policy.jitter ?? 'full') {
    case 'none':
      return ceiling;
    case 'equal':
      return Math.round(ceiling / 2 + random() * (ceiling / 2));
    default:
      return Math.floor(random() * ceiling);
  }
}
