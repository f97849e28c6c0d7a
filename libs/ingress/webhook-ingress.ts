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
import { Lifecycle } from '../lifecycle/lifecycle';
import type { Logger } from '../observability/logger';
import type { BotApiClient } from '../telegram';
import { BackoffPolicy, INGRESS_BACKOFF_BASE_MS_DEFAULT, INGRESS_BACKOFF_CAP_MS_DEFAULT } from './backoff';
import { Episodes } from './episodes';
import { createIngressEvents, type IngressEvents } from './events';
import { createLease } from './lease';
import type { DecodePolicy } from './plan-batch';
import type { PollerExit } from './poller';
import { createWebhookHandler, WEBHOOK_BODY_LIMIT_BYTES, webhookPath, webhookPlugin } from './webhook';
import { WebhookDeliveryReport } from './webhook-delivery-report';
import { runWebhookLoop } from './webhook-loop';

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
  /** Batch transactions, for observers (metrics: `observeIngress`). */
  readonly events: IngressEvents;
  /** Holds the lease now (commits webhook updates). */
  holdsLease(): boolean;
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
  const events = createIngressEvents(logger);
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
  const life = new Lifecycle('webhook ingress');
  let app: FastifyInstance | null = null;
  let addr: string | null = null;
  let stopping = false;
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
    events,
  });

  // What getWebhookInfo says about Telegram's deliveries to us (see webhook-delivery-report.ts).
  const delivery = new WebhookDeliveryReport({
    pool: opts.pool,
    botId: opts.botId,
    owner: opts.owner,
    opsChatId: opts.opsChatId,
    episodes,
  });

  async function register(): Promise<void> {
    delivery.restartWatch();
    await opts.api.setWebhook({ url, secret_token: opts.secret }, { timeoutMs: 15_000 });
    logger.info({ url }, 'webhook registered');
  }

  const loop = () =>
    runWebhookLoop({
      pool: opts.pool,
      api: opts.api,
      lease,
      botId: opts.botId,
      url,
      leaseTtlMs: opts.leaseTtlMs,
      pollTimeoutMs: opts.pollTimeoutMs,
      policy,
      logger,
      episodes,
      wakeSignal: () => wake.signal,
      // stop() drains the endpoint before it interrupts the loop: the loop ends on this flag
      stopping: () => stopping,
      register,
      judgeDelivery: (info) => delivery.judge(info),
      onAcquired: () => delivery.clearProblem(),
    });

  return {
    async start() {
      if (app || stopping) return;
      app = Fastify({ logger: false, bodyLimit: opts.bodyLimit ?? WEBHOOK_BODY_LIMIT_BYTES });
      await app.register(webhookPlugin, { botId: opts.botId, secret: opts.secret, handle, bodyLimit: opts.bodyLimit });
      addr = await app.listen({ host: opts.host, port: opts.port });
      logger.info({ address: addr, path: webhookPath(opts.botId) }, 'webhook endpoint listening');
      life.start(async () => {
        exit = await loop();
        exitedLoop = true;
        resolveDone(exit);
      });
    },
    async stop() {
      stopping = true;
      // Drain in-flight webhook requests while the lease is still held, then release it.
      if (app) await app.close();
      interrupt();
      await life.stop(() => lease.release());
      resolveDone(exit);
    },
    done,
    events,
    holdsLease: () => lease.fence() !== null,
    address: () => addr,
    status: () => {
      const state =
        stopping || exitedLoop ? 'stopped' : life.state === 'new' ? 'idle' : lease.fence() ? 'owner' : 'standby';
      return { state, deliveryProblem: state === 'owner' ? delivery.problem : null };
    },
  };
}
