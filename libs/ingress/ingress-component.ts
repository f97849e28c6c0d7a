/**
 * The one ingress component a process runs, the poller (INGRESS=polling) or the webhook ingress
 * (INGRESS=webhook), behind one seam: how to start and stop it, how it ended, and its role as
 * readiness reports it.
 */
import type { IngressEvents } from './events';
import type { IngressConfig } from './runtime';
import { createPoller, type PollerExit, type PollerOptions } from './poller';
import { createWebhookIngress, type WebhookIngressOptions } from './webhook-ingress';

export interface IngressStatus {
  role: 'starting' | 'owner' | 'standby' | 'stopped';
  /** DECODE_POLICY=stop halted the poller: why. */
  halted: string | null;
  /** Webhook owner: Telegram fails to deliver to the webhook (why), else null. */
  delivery?: string | null;
}

export interface IngressComponent {
  start(): Promise<void>;
  stop(): Promise<void>;
  readonly done: Promise<PollerExit>;
  /** Webhook mode: `http://host:port` of the endpoint. */
  address(): string | null;
  status(): IngressStatus;
  /** What the poller or webhook ingress says happened (metrics subscribe). */
  readonly events: IngressEvents;
  /** Holds the lease now (the lease-owner gauge reads it at scrape time). */
  holdsLease(): boolean;
}

/** What both components take from the composed process (pool, ledger, client, identity, config). */
export type IngressCommon = PollerOptions & Omit<WebhookIngressOptions, 'secret' | 'publicUrl' | 'host' | 'port'>;

export const STARTING: IngressStatus = { role: 'starting', halted: null };

export function createIngressComponent(config: IngressConfig, common: IngressCommon): IngressComponent {
  if (config.INGRESS === 'webhook') {
    const w = createWebhookIngress({
      ...common,
      secret: config.WEBHOOK_SECRET as string,
      publicUrl: config.WEBHOOK_PUBLIC_URL as string,
      host: config.WEBHOOK_HOST,
      port: config.WEBHOOK_PORT,
      opsChatId: config.OPS_CHAT_ID ?? null,
    });
    return {
      start: () => w.start(),
      stop: () => w.stop(),
      done: w.done,
      events: w.events,
      holdsLease: () => w.holdsLease(),
      address: () => w.address(),
      status: () => {
        const st = w.status();
        return { role: st.state === 'idle' ? 'starting' : st.state, halted: null, delivery: st.deliveryProblem };
      },
    };
  }
  const p = createPoller(common);
  return {
    start: () => {
      p.start();
      return Promise.resolve();
    },
    stop: () => p.stop(),
    done: p.done,
    events: p.events,
    holdsLease: () => p.holdsLease(),
    address: () => null,
    status: () => {
      const st = p.status();
      if (st.state === 'stopped') return { role: 'stopped', halted: null };
      if (st.state === 'idle') return STARTING;
      return { role: st.generation !== null ? 'owner' : 'standby', halted: st.haltedReason };
    },
  };
}
