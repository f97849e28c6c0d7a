/**
 * What ingress (the poller and the webhook ingress) says happened, for observers: the METRICS_PORT
 * instruments subscribe in libs/observability/metrics.ts `observeIngress`. Listeners run
 * synchronously and must be cheap; one that throws is logged and ignored (libs/lifecycle/events.ts).
 */
import { Events, logListenerErrors } from '../lifecycle/events';
import type { Logger } from '../observability/logger';

export type GetUpdatesResult =
  'updates' | 'empty' | 'conflict' | 'rate_limited' | 'api_error' | 'network_error' | 'not_bot_api';

export type IngressTransport = 'polling' | 'webhook';

/** One batch transaction ended: committed (with what it stored), fenced (the lease was gone) or failed. */
export type BatchEvent =
  | {
      transport: IngressTransport;
      result: 'committed';
      durationMs: number;
      stored: number;
      duplicates: number;
      quarantined: number;
      captureConflicts: number;
    }
  | { transport: IngressTransport; result: 'fenced' | 'error'; durationMs: number };

export interface IngressEventMap {
  /** A getUpdates call ended (not one stop() aborted). */
  getUpdates: { result: GetUpdatesResult };
  batch: BatchEvent;
}

export type IngressEvents = Events<IngressEventMap>;

export function createIngressEvents(logger: Logger): IngressEvents {
  return new Events<IngressEventMap>(logListenerErrors(logger));
}
