/**
 * One bot's webhook ingress without its HTTP server: the lease, the delivery handler (commit before
 * 200, fenced by the lease's generation), the registration loop (webhook-loop.ts) and what
 * getWebhookInfo says about Telegram's deliveries (webhook-delivery-report.ts). Whoever serves
 * HTTP routes the bot's path to `route`: the single-bot webhook ingress its own server
 * (webhook-ingress.ts), a fleet poller its shared one (webhook-server.ts).
 */
import { Lifecycle } from '../lifecycle/lifecycle';
import { BackoffPolicy, INGRESS_BACKOFF_BASE_MS_DEFAULT, INGRESS_BACKOFF_CAP_MS_DEFAULT } from './backoff';
import { Episodes } from './episodes';
import { createIngressEvents, type IngressEvents } from './events';
import { createLease } from './lease';
import type { PollerExit, PollerOptions } from './poller';
import { createWebhookHandler, type WebhookRoute } from './webhook';
import { WebhookDeliveryReport } from './webhook-delivery-report';
import { runWebhookLoop } from './webhook-loop';

/** What the poller of a bot takes too, and the webhook's own secret and URL. */
export interface WebhookUnitOptions extends Pick<
  PollerOptions,
  | 'pool'
  | 'boss'
  | 'api'
  | 'botId'
  | 'owner'
  | 'logger'
  | 'leaseTtlMs'
  | 'pollTimeoutMs'
  | 'decodePolicy'
  | 'allowedChatIds'
  | 'dispatchUnauthorized'
  | 'backoff'
> {
  /** The secret_token registered with the webhook and required of every delivery. */
  secret: string;
  /** The whole URL registered with setWebhook. */
  url: string;
  /** Where the alert goes when Telegram cannot deliver (else relay.outbound_settings). */
  opsChatId?: string | null;
}

export interface WebhookUnit {
  /** What the HTTP server calls for this bot's path. */
  readonly route: WebhookRoute;
  /** Starts the loop: standby until the lease is free, then registers the webhook and checks it. */
  start(): void;
  /**
   * Waits for the deliveries in flight (committed or refused while the lease is still held), then
   * ends the loop and releases the lease. Stop routing to `route` first. Idempotent.
   */
  stop(): Promise<void>;
  readonly done: Promise<PollerExit>;
  readonly events: IngressEvents;
  holdsLease(): boolean;
  /** `deliveryProblem`: the owner sees Telegram failing to deliver to the webhook (see webhook-delivery.ts). */
  status(): { state: 'idle' | 'owner' | 'standby' | 'stopped'; deliveryProblem: string | null };
}

export function createWebhookUnit(opts: WebhookUnitOptions): WebhookUnit {
  const { logger, url } = opts;
  const policy: BackoffPolicy = {
    baseMs: opts.backoff?.baseMs ?? INGRESS_BACKOFF_BASE_MS_DEFAULT,
    capMs: opts.backoff?.capMs ?? INGRESS_BACKOFF_CAP_MS_DEFAULT,
  };
  const episodes = new Episodes(logger);
  const events = createIngressEvents(logger);
  let wake = new AbortController();
  const interrupt = () => {
    wake.abort();
    wake = new AbortController();
  };
  const lease = createLease({ ...opts, ttlMs: opts.leaseTtlMs, onLost: interrupt });
  const life = new Lifecycle('webhook ingress');
  let stopping = false;
  let stopped: Promise<void> | undefined;
  let exit: PollerExit = { reason: 'stopped' };
  let exitedLoop = false;
  let resolveDone!: (e: PollerExit) => void;
  const done = new Promise<PollerExit>((r) => (resolveDone = r));

  const handle = createWebhookHandler({
    ...opts,
    fence: () => lease.fence(),
    onLeaseLost: () => lease.markLost('fenced webhook write rejected'),
    events,
  });
  // deliveries in flight: stop() waits for them while the lease is still held
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const route: WebhookRoute = {
    secret: opts.secret,
    async handle(raw) {
      inFlight++;
      try {
        return await handle(raw);
      } finally {
        if (--inFlight === 0) drained?.();
      }
    },
  };

  // What getWebhookInfo says about Telegram's deliveries to us (see webhook-delivery-report.ts).
  const delivery = new WebhookDeliveryReport({ ...opts, episodes });

  async function register(): Promise<void> {
    delivery.restartWatch();
    await opts.api.setWebhook({ url, secret_token: opts.secret }, { timeoutMs: 15_000 });
    logger.info({ url }, 'webhook registered');
  }

  const loop = () =>
    runWebhookLoop({
      ...opts,
      lease,
      policy,
      episodes,
      wakeSignal: () => wake.signal,
      // stop() drains the deliveries before it interrupts the loop: the loop ends on this flag
      stopping: () => stopping,
      register,
      judgeDelivery: (info) => delivery.judge(info),
      onAcquired: () => delivery.clearProblem(),
    });

  return {
    route,
    start() {
      life.start(async () => {
        exit = await loop();
        exitedLoop = true;
        resolveDone(exit);
      });
    },
    stop() {
      stopped ??= (async () => {
        stopping = true;
        while (inFlight > 0) await new Promise<void>((r) => (drained = r));
        interrupt();
        await life.stop(() => lease.release());
        resolveDone(exit);
      })();
      return stopped;
    },
    done,
    events,
    holdsLease: () => lease.fence() !== null,
    status: () => {
      const state =
        stopping || exitedLoop ? 'stopped' : life.state === 'new' ? 'idle' : lease.fence() ? 'owner' : 'standby';
      return { state, deliveryProblem: state === 'owner' ? delivery.problem : null };
    },
  };
}
