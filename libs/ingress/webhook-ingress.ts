/**
 * INGRESS=webhook: every replica serves `POST /telegram/webhook/:botId`; the lease owner alone
 * commits (others answer 503 + Retry-After: 1, and Telegram retries). On acquiring the lease the
 * owner registers the webhook (`setWebhook` with the secret), then checks it every POLL_TIMEOUT:
 * a confirmed registration counts as progress for health (the webhook's "empty long poll"), and what
 * the same answer says about Telegram's deliveries decides whether the endpoint is reachable
 * (webhook-delivery.ts: not ready, logged once and alerted once per episode while it is not).
 * Stopping leaves the webhook registered so a standby continues without a gap. The bot's ingress
 * itself is webhook-unit.ts; this adds its own HTTP server (webhook-server.ts).
 */
import type { IngressEvents } from './events';
import type { PollerExit } from './poller';
import { webhookPath } from './webhook';
import { createWebhookServer } from './webhook-server';
import { createWebhookUnit, type WebhookUnitOptions } from './webhook-unit';

export interface WebhookIngressOptions extends Omit<WebhookUnitOptions, 'url'> {
  /** Base URL Telegram calls (WEBHOOK_PUBLIC_URL); the route path is appended. */
  publicUrl: string;
  host: string;
  port: number;
  bodyLimit?: number;
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

/** The URL Telegram calls: the public base URL and the route path of `pathKey` (the bot id, or a fleet's derived key). */
export function webhookUrl(publicUrl: string, pathKey: string): string {
  return publicUrl.replace(/\/+$/, '') + webhookPath(pathKey);
}

export function createWebhookIngress(opts: WebhookIngressOptions): WebhookIngress {
  const unit = createWebhookUnit({ ...opts, url: webhookUrl(opts.publicUrl, opts.botId) });
  const server = createWebhookServer(opts);
  let started = false;
  let stopping = false;
  return {
    async start() {
      if (started || stopping) return;
      started = true;
      server.add(opts.botId, unit.route);
      await server.listen();
      unit.start();
    },
    async stop() {
      stopping = true;
      // Drain in-flight webhook requests while the lease is still held, then release it.
      await server.close();
      await unit.stop();
    },
    done: unit.done,
    events: unit.events,
    holdsLease: () => unit.holdsLease(),
    address: () => server.address(),
    status: () => {
      const st = unit.status();
      return stopping ? { state: 'stopped', deliveryProblem: null } : st;
    },
  };
}
