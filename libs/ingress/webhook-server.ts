/**
 * The HTTP server of webhook ingress (WEBHOOK_HOST:WEBHOOK_PORT): `POST /telegram/webhook/:key`
 * (webhook.ts's plugin) for every path key added. The single-bot webhook adds its bot id; a fleet
 * poller adds the derived path key (webhook-keys.ts) of each bot while it runs that bot's webhook
 * unit, and removes it when the unit stops. A path not added answers 404 (Telegram retries it),
 * so a delivery never reaches a bot other than its path's.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from '../observability/logger';
import { WEBHOOK_BODY_LIMIT_BYTES, webhookPlugin, type WebhookRoute } from './webhook';

export interface WebhookServerOptions {
  host: string;
  port: number;
  bodyLimit?: number;
  logger: Logger;
}

export interface WebhookServer {
  /** Routes `key`'s deliveries to `route` until the answered function is called. */
  add(key: string, route: WebhookRoute): () => void;
  /** Starts listening; answers `http://host:port`. */
  listen(): Promise<string>;
  /** Stops accepting and waits for the requests in flight. Idempotent. */
  close(): Promise<void>;
  address(): string | null;
}

export function createWebhookServer(opts: WebhookServerOptions): WebhookServer {
  const routes = new Map<string, WebhookRoute>();
  let app: FastifyInstance | undefined;
  let addr: string | null = null;
  let closing: Promise<void> | undefined;
  return {
    add(key, route) {
      routes.set(key, route);
      // only its own: a later route of the same key is not removed by an earlier one's removal
      return () => void (routes.get(key) === route && routes.delete(key));
    },
    async listen() {
      if (app) throw new Error('the webhook server is already listening');
      app = Fastify({ logger: false, bodyLimit: opts.bodyLimit ?? WEBHOOK_BODY_LIMIT_BYTES });
      await app.register(webhookPlugin, { route: (key) => routes.get(key), bodyLimit: opts.bodyLimit });
      addr = await app.listen({ host: opts.host, port: opts.port });
      opts.logger.info({ address: addr }, 'webhook endpoint listening');
      return addr;
    },
    close() {
      closing ??= app ? app.close() : Promise.resolve();
      return closing;
    },
    address: () => addr,
  };
}
