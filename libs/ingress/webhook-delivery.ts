/**
 * Whether Telegram can deliver to our webhook, judged from what getWebhookInfo reports: a URL that
 * is ours proves only the registration. Telegram keeps what it cannot deliver (at most 24 hours)
 * and retries with its own backoff (up to 60-120 s, FACTS.md), recording the last error; so the
 * endpoint is failing when the last error is recent and the backlog has not shrunk for several
 * checks in a row. One error with a draining backlog (a deploy, one slow answer) is not a problem.
 */
import type { WebhookInfo } from '../telegram';

/**
 * An error Telegram reported longer ago than this is history: over twice Telegram's longest
 * delivery backoff, so an endpoint that keeps failing always has a recent one.
 */
export const WEBHOOK_ERROR_RECENT_MS = 5 * 60_000;
/**
 * Consecutive owner checks (one every POLL_TIMEOUT) with a recent error and a backlog that did not
 * shrink since the check before, before the endpoint counts as failing (2: 2–3 × POLL_TIMEOUT).
 */
export const WEBHOOK_STALLED_CHECKS = 2;

export type WebhookDeliveryState =
  | { state: 'healthy' }
  | { state: 'suspect' }
  | { state: 'failing'; reason: string; pending: number; lastErrorAt: Date; lastError: string };

/** One owner's view across its checks; reset when it (re)registers the webhook or loses the lease. */
export class WebhookDeliveryWatch {
  private previousPending: number | null = null;
  private stalled = 0;

  reset(): void {
    this.previousPending = null;
    this.stalled = 0;
  }

  /** Judges one getWebhookInfo answer of our own registration, taken at `nowMs`. */
  observe(
    info: Pick<WebhookInfo, 'pending_update_count' | 'last_error_date' | 'last_error_message'>,
    nowMs: number,
  ): WebhookDeliveryState {
    const pending = info.pending_update_count;
    const errorAt = info.last_error_date !== undefined ? info.last_error_date * 1000 : null;
    const recentError = errorAt !== null && nowMs - errorAt <= WEBHOOK_ERROR_RECENT_MS;
    const previous = this.previousPending;
    this.previousPending = pending;
    if (!recentError || pending === 0 || (previous !== null && pending < previous)) {
      this.stalled = 0;
      return { state: 'healthy' };
    }
    if (previous !== null) this.stalled++;
    if (this.stalled < WEBHOOK_STALLED_CHECKS) return { state: 'suspect' };
    const lastError = info.last_error_message || '(no message)';
    const lastErrorAt = new Date(errorAt);
    return {
      state: 'failing',
      pending,
      lastErrorAt,
      lastError,
      reason:
        `Telegram cannot deliver to the webhook: ${pending} updates pending, not draining; last error at ` +
        `${lastErrorAt.toISOString()}: ${lastError}. Telegram keeps undelivered updates for at most 24 hours: ` +
        'check that WEBHOOK_PUBLIC_URL reaches this endpoint (DNS, TLS, reverse proxy, firewall)',
    };
  }
}
