/**
 * The webhook ingress's background loop: acquire the lease (or wait as a standby), register the
 * webhook on acquiring it, then as owner check the registration every POLL_TIMEOUT. A check that
 * confirms our registration records progress (health) and judges Telegram's deliveries. A 401 ends
 * the loop (the token is wrong; retrying cannot help); the lease is released whenever it ends.
 */
import { errorMessage } from '../errors';
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import { cursorRecordProgress } from './queries';
import { BackoffPolicy, backoffDelay } from './backoff';
import { sleep } from '../lifecycle/timers';
import { TelegramApiError, type BotApiClient, type WebhookInfo } from '../telegram';
import type { Episodes } from './episodes';
import type { Lease } from './lease';
import { takeLeaseOrWait } from './lease-standby';
import type { PollerExit } from './poller';

export interface WebhookLoopDeps {
  pool: Pool;
  api: BotApiClient;
  lease: Lease;
  botId: string;
  /** The URL we register (WEBHOOK_PUBLIC_URL + the route path). */
  url: string;
  leaseTtlMs: number;
  pollTimeoutMs: number;
  policy: BackoffPolicy;
  logger: Logger;
  episodes: Episodes;
  /** Ends the current wait (and request) early: replaced after each interrupt, so read it each time. */
  wakeSignal(): AbortSignal;
  /** True once the ingress is stopping: the loop ends at its next turn. */
  stopping(): boolean;
  /** Registers the webhook (setWebhook with the secret). */
  register(): Promise<void>;
  /** Judges what getWebhookInfo says about Telegram's deliveries to us. */
  judgeDelivery(info: WebhookInfo): Promise<void>;
  /** Called when this replica becomes the owner, before it registers. */
  onAcquired(): void;
}

const isUnauthorized = (err: unknown): err is TelegramApiError =>
  err instanceof TelegramApiError && err.errorCode === 401;

async function ownerTick(d: WebhookLoopDeps): Promise<void> {
  const fence = d.lease.fence();
  if (!fence) return;
  try {
    const info = await d.api.getWebhookInfo({ timeoutMs: 15_000, signal: d.wakeSignal() });
    if (info.url !== d.url) {
      d.logger.warn({ registered: info.url || '(none)' }, 'the registered webhook is not ours: registering it again');
      await d.register();
    } else if (!(await cursorRecordProgress(d.pool, d.botId, fence, d.leaseTtlMs))) {
      d.lease.markLost('fenced progress write rejected');
      return;
    } else await d.judgeDelivery(info);
    d.episodes.recover('webhook', 'webhook registration checked again');
    await sleep(d.pollTimeoutMs, d.wakeSignal());
  } catch (err) {
    if (isUnauthorized(err)) throw err;
    const n = d.episodes.fail('webhook', 'warn', { err }, 'could not check the webhook registration; retrying');
    await sleep(backoffDelay(n, d.policy), d.wakeSignal());
  }
}

/** One standby turn (the poller's, lease-standby.ts); on acquiring the lease, register the webhook. */
async function standbyTick(d: WebhookLoopDeps): Promise<void> {
  const got = await takeLeaseOrWait({
    lease: d.lease,
    episodes: d.episodes,
    leaseTtlMs: d.leaseTtlMs,
    backoff: (n) => backoffDelay(n, d.policy),
    pause: (ms) => sleep(ms, d.wakeSignal()),
  });
  if (!got) return;
  d.logger.info({ generation: got.generation }, 'ingress lease acquired: serving the webhook');
  d.onAcquired();
  try {
    await d.register();
  } catch (err) {
    if (isUnauthorized(err)) throw err;
    d.logger.error({ err }, 'setWebhook failed; will retry');
  }
}

/** Runs until stopping (or a 401, or a crash) and says why it ended; never throws. */
export async function runWebhookLoop(d: WebhookLoopDeps): Promise<PollerExit> {
  try {
    while (!d.stopping()) {
      if (d.lease.fence()) await ownerTick(d);
      else await standbyTick(d);
    }
    return { reason: 'stopped' };
  } catch (err) {
    if (isUnauthorized(err)) {
      const message =
        'Telegram rejected the bot token (401 Unauthorized): check TELEGRAM_BOT_TOKEN; the webhook ingress stopped';
      d.logger.fatal({ description: err.description }, message);
      return { reason: 'unauthorized', message };
    }
    d.logger.fatal({ err }, 'webhook ingress loop crashed');
    return { reason: 'crashed', message: `webhook ingress loop crashed: ${errorMessage(err) ?? String(err)}` };
  } finally {
    await d.lease.release();
  }
}
