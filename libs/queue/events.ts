/**
 * What the engine says happened, for observers (the METRICS_PORT instruments subscribe in
 * libs/observability/metrics.ts `observeWorker`). Listeners run synchronously on the engine's path
 * and must be cheap; one that throws is logged and ignored (libs/lifecycle/events.ts).
 */
import { Events, logListenerErrors } from '../lifecycle/events';
import type { Logger } from '../observability/logger';
import type { SettledState } from './job-kind';

export interface WorkerEventMap {
  /** One claim statement succeeded (it may have claimed nothing). */
  claimed: { queue: string; durationMs: number; count: number };
  /** An attempt's outcome landed (fenced outcomes are not settled: the redelivery owns the row). */
  settled: {
    queue: string;
    /** The job's bot (ClaimedJob.botId), when its store reads it. */
    botId?: string;
    state: SettledState;
    durationMs: number;
    /** The HTTP status the attempt received, if it made an HTTP call. */
    status?: number;
  };
  /** An attempt ended without its outcome: its claim was lost (`fenced`) or given back at shutdown (`released`). */
  unsettled: { queue: string; botId?: string; outcome: 'fenced' | 'released' };
}

export type WorkerEvents = Events<WorkerEventMap>;

export function createWorkerEvents(logger: Logger): WorkerEvents {
  return new Events<WorkerEventMap>(logListenerErrors(logger));
}
