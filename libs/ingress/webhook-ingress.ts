/**
 * INGRESS=webhook: every replica serves `POST /telegram/webhook/:botId`; the lease owner alone
 * commits (others answer 503 + Retry-After: 1, and Telegram retries). On acquiring the lease the
 * owner registers the webhook (`setWebhook` with the secret), then checks it every POLL_TIMEOUT:
 * a confirmed registration counts as progress for health (the webhook's "empty long poll"), and what
 * the same answer says about Telegram's deliveries decides whether the endpoint is reachable
 * (webhook-delivery.ts: not ready, logged once and alerted once per episode while it is not).
 * Stopping leaves the webhook registered so a standby continues without a gap.
 */
import Fastify, { FastifyInstance } from 'fastify';
import type { JobLedger } from '../db/boss';
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import type { IngressMetrics } from '../observability/metrics';
import { configProblemClear, configProblemRecord } from '../queue/config-problems';
import { BotApiClient, TelegramApiError, WebhookInfo } from '../telegram';
import {
  BackoffPolicy,
  backoffDelay,
  INGRESS_BACKOFF_BASE_MS_DEFAULT,
  INGRESS_BACKOFF_CAP_MS_DEFAULT,
} from './backoff';
import { sleep } from '../lifecycle/timers';
import { Episodes } from './episodes';
import { createLease } from './lease';
import type { DecodePolicy } from './plan-batch';
import type { PollerExit } from './poller';
import { cursorRecordProgress } from './queries';
import { createWebhookHandler, WEBHOOK_BODY_LIMIT_BYTES, webhookPath, webhookPlugin } from './webhook';
import { WebhookDeliveryWatch } from './webhook-delivery';

export interface WebhookIngressOptions {
  pool: Pool;
  boss: JobLedger;
  api: BotApiClient;
  botId: string;
  owner: string;
  logger: Logger;
  leaseTtlMs: number;
  pollTimeoutMs: number;
  decodePolicy: DecodePolicy;
  allowedChatIds: readonly string[];
  dispatchUnauthorized?: boolean;
  secret: string;
  /** Base URL Telegram calls (WEBHOOK_PUBLIC_URL); the route path is appended. */
  publicUrl: string;
  host: string;
  port: number;
  bodyLimit?: number;
  backoff?: Partial<BackoffPolicy>;
  /** METRICS_PORT: batch transaction time, updates committed, lease state. */
  metrics?: IngressMetrics;
  /** OPS_CHAT_ID: where the alert goes when Telegram cannot deliver (else relay.outbound_settings). */
  opsChatId?: string | null;
}

export interface WebhookIngress {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly done: Promise<PollerExit>;
  /** `http://host:port` once listening. */
  address(): string | null;
  /**
   * Owner: holds the lease (commits webhook updates); standby: answers 503 until it does.
   * `deliveryProblem`: the owner sees Telegram failing to deliver to the webhook (see webhook-delivery.ts).
   */
  status(): { state: 'idle' | 'owner' | 'standby' | 'stopped'; deliveryProblem: string | null };
}

export function webhookUrl(publicUrl: string, botId: string): string {
  return publicUrl.replace(/\/+$/, '') + webhookPath(botId);
}

export function createWebhookIngress(opts: WebhookIngressOptions): WebhookIngress {
  const logger = opts.logger;
  const policy: BackoffPolicy = {
    baseMs: opts.backoff?.baseMs ?? INGRESS_BACKOFF_BASE_MS_DEFAULT,
    capMs: opts.backoff?.capMs ?? INGRESS_BACKOFF_CAP_MS_DEFAULT,
  };
  const episodes = new Episodes(logger);
  const url = webhookUrl(opts.publicUrl, opts.botId);
  let wake = new AbortController();
  const interrupt = () => {
    wake.abort();
    wake = new AbortController();
  };
  const lease = createLease({
    pool: opts.pool,
    botId: opts.botId,
    owner: opts.owner,
    ttlMs: opts.leaseTtlMs,
    logger,
    onLost: interrupt,
  });
  let app: FastifyInstance | null = null;
  let addr: string | null = null;
  let stopping = false;
  let loopPromise: Promise<void> | null = null;
  let exit: PollerExit = { reason: 'stopped' };
  let exitedLoop = false;
  let resolveDone!: (e: PollerExit) => void;
  const done = new Promise<PollerExit>((r) => (resolveDone = r));

  const handle = createWebhookHandler({
    pool: opts.pool,
    boss: opts.boss,
    botId: opts.botId,
    fence: () => lease.fence(),
    leaseTtlMs: opts.leaseTtlMs,
    decodePolicy: opts.decodePolicy,
    allowedChatIds: opts.allowedChatIds,
    dispatchUnauthorized: opts.dispatchUnauthorized,
    logger,
    onLeaseLost: () => lease.markLost('fenced webhook write rejected'),
    metrics: opts.metrics,
  });
  opts.metrics?.track(opts.botId, () => lease.fence() !== null);

  async function register(): Promise<void> {
    delivery.reset();
    await opts.api.setWebhook({ url, secret_token: opts.secret }, { timeoutMs: 15_000 });
    logger.info({ url }, 'webhook registered');
  }

  // What getWebhookInfo says about Telegram's deliveries to us; the problem row, once recorded, is
  // cleared by the first healthy check (also one of a new owner: an old owner may have recorded it).
  const delivery = new WebhookDeliveryWatch();
  let deliveryProblem: string | null = null;
  let problemRecorded = true;

  async function judgeDelivery(info: WebhookInfo): Promise<void> {
    const v = delivery.observe(info, Date.now());
    if (v.state === 'suspect') return;
    try {
      if (v.state === 'failing') {
        deliveryProblem = v.reason;
        episodes.fail(
          'webhook-delivery',
          'error',
          { reason: v.reason, pendingUpdateCount: v.pending, lastErrorAt: v.lastErrorAt.toISOString() },
          'Telegram cannot deliver to the webhook; its backlog is not draining',
        );
        problemRecorded = true;
        const p = { component: 'webhook' as const, botId: opts.botId, code: 'WEBHOOK_UNDELIVERED', reason: v.reason };
        await configProblemRecord(opts.pool, p, { workerId: opts.owner, opsChatId: opts.opsChatId });
      } else {
        deliveryProblem = null;
        episodes.recover('webhook-delivery', 'Telegram delivers to the webhook again');
        if (problemRecorded) await configProblemClear(opts.pool, 'webhook', opts.botId);
        problemRecorded = false;
      }
      episodes.recover('webhook-delivery-db', 'webhook delivery state recorded again');
    } catch (err) {
      episodes.fail('webhook-delivery-db', 'warn', { err }, 'could not record the webhook delivery state; next check');
    }
  }

  async function ownerTick(): Promise<void> {
    const fence = lease.fence();
    if (!fence) return;
    try {
      const info = await opts.api.getWebhookInfo({ timeoutMs: 15_000, signal: wake.signal });
      if (info.url !== url) {
        logger.warn({ registered: info.url || '(none)' }, 'the registered webhook is not ours: registering it again');
        await register();
      } else if (!(await cursorRecordProgress(opts.pool, opts.botId, fence, opts.leaseTtlMs))) {
        lease.markLost('fenced progress write rejected');
        return;
      } else await judgeDelivery(info);
      episodes.recover('webhook', 'webhook registration checked again');
      await sleep(opts.pollTimeoutMs, wake.signal);
    } catch (err) {
      if (err instanceof TelegramApiError && err.errorCode === 401) throw err;
      const n = episodes.fail('webhook', 'warn', { err }, 'could not check the webhook registration; retrying');
      await sleep(backoffDelay(n, policy), wake.signal);
    }
  }

  async function loop(): Promise<void> {
    try {
      while (!stopping) {
        if (lease.fence()) {
          await ownerTick();
          continue;
        }
        let got: { generation: number } | null = null;
        try {
          got = await lease.tryAcquire();
          episodes.recover('lease-db', 'database reachable again');
        } catch (err) {
          const n = episodes.fail(
            'lease-db',
            'error',
            { err },
            'cannot reach the database to acquire the lease; retrying',
          );
          await sleep(backoffDelay(n, policy), wake.signal);
          continue;
        }
        if (!got) {
          await sleep(await lease.standbyDelayMs().catch(() => opts.leaseTtlMs / 2), wake.signal);
          continue;
        }
        logger.info({ generation: got.generation }, 'ingress lease acquired: serving the webhook');
        deliveryProblem = null;
        try {
          await register();
        } catch (err) {
          if (err instanceof TelegramApiError && err.errorCode === 401) throw err;
          logger.error({ err }, 'setWebhook failed; will retry');
        }
      }
    } catch (err) {
      if (err instanceof TelegramApiError && err.errorCode === 401) {
        const message =
          'Telegram rejected the bot token (401 Unauthorized): check TELEGRAM_BOT_TOKEN; the webhook ingress stopped';
        logger.fatal({ description: err.description }, message);
        exit = { reason: 'unauthorized', message };
      } else {
        logger.fatal({ err }, 'webhook ingress loop crashed');
        exit = {
          reason: 'crashed',
          message: `webhook ingress loop crashed: ${(err as Error)?.message ?? String(err)}`,
        };
      }
    } finally {
      await lease.release();
    }
  }

  return {
    async start() {
      if (app || stopping) return;
      app = Fastify({ logger: false, bodyLimit: opts.bodyLimit ?? WEBHOOK_BODY_LIMIT_BYTES });
      await app.register(webhookPlugin, { botId: opts.botId, secret: opts.secret, handle, bodyLimit: opts.bodyLimit });
      addr = await app.listen({ host: opts.host, port: opts.port });
      logger.info({ address: addr, path: webhookPath(opts.botId) }, 'webhook endpoint listening');
      loopPromise = loop().then(() => {
        exitedLoop = true;
        resolveDone(exit);
      });
    },
    async stop() {
      stopping = true;
      // Drain in-flight webhook requests while the lease is still held, then release it.
      if (app) await app.close();
      interrupt();
      await loopPromise;
      await lease.release();
      resolveDone(exit);
    },
    done,
    address: () => addr,
    status: () => {
      const state = stopping || exitedLoop ? 'stopped' : !loopPromise ? 'idle' : lease.fence() ? 'owner' : 'standby';
      return { state, deliveryProblem: state === 'owner' ? deliveryProblem : null };
    },
  };
}
