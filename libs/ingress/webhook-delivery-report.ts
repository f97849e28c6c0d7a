/**
 * What the webhook owner does with a delivery verdict (webhook-delivery.ts): the problem it shows
 * in status, the episode logged once per failure, and the config-problem row (which alerts). The
 * row, once recorded, is cleared by the first healthy check (also one of a new owner: an old owner
 * may have recorded it).
 */
import type { Pool } from 'pg';
import { configProblemClear, configProblemRecord } from '../queue/config-problems';
import type { WebhookInfo } from '../telegram';
import type { Episodes } from './episodes';
import { WebhookDeliveryWatch } from './webhook-delivery';

export interface WebhookDeliveryReportOptions {
  pool: Pool;
  botId: string;
  owner: string;
  opsChatId?: string | null;
  episodes: Episodes;
}

export class WebhookDeliveryReport {
  private readonly watch = new WebhookDeliveryWatch();
  private current: string | null = null;
  private recorded = true;

  constructor(private readonly opts: WebhookDeliveryReportOptions) {}

  /** The delivery problem this owner sees, or null. */
  get problem(): string | null {
    return this.current;
  }

  /** A new owner starts without a problem of its own. */
  clearProblem(): void {
    this.current = null;
  }

  /** The webhook was (re)registered: earlier checks say nothing about the new registration. */
  restartWatch(): void {
    this.watch.reset();
  }

  /** Judges one getWebhookInfo answer of our own registration; a failure to record waits for the next check. */
  async judge(info: WebhookInfo): Promise<void> {
    const { pool, botId, episodes } = this.opts;
    const v = this.watch.observe(info, Date.now());
    if (v.state === 'suspect') return;
    try {
      if (v.state === 'failing') {
        this.current = v.reason;
        episodes.fail(
          'webhook-delivery',
          'error',
          { reason: v.reason, pendingUpdateCount: v.pending, lastErrorAt: v.lastErrorAt.toISOString() },
          'Telegram cannot deliver to the webhook; its backlog is not draining',
        );
        this.recorded = true;
        const p = { component: 'webhook' as const, botId, code: 'WEBHOOK_UNDELIVERED', reason: v.reason };
        await configProblemRecord(pool, p, { workerId: this.opts.owner, opsChatId: this.opts.opsChatId });
      } else {
        this.current = null;
        episodes.recover('webhook-delivery', 'Telegram delivers to the webhook again');
        if (this.recorded) await configProblemClear(pool, 'webhook', botId);
        this.recorded = false;
      }
      episodes.recover('webhook-delivery-db', 'webhook delivery state recorded again');
    } catch (err) {
      episodes.fail('webhook-delivery-db', 'warn', { err }, 'could not record the webhook delivery state; next check');
    }
  }
}
