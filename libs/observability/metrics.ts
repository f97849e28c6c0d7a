/**
 * Per-process Prometheus metrics (METRICS_PORT, docs in the README's "Metrics and health").
 *
 * Every process that sets METRICS_PORT builds ONE registry with `createProcessRegistry()`; its
 * runtimes subscribe the instruments to what their components emit (`observeWorker`,
 * `observeIngress`) or read the components at scrape time (`trackBridge`), so the components'
 * dependencies carry no metrics; nothing registers at import time. The
 * metric sets below are created once per registry (a WeakMap), so `tg-relay start`, which runs
 * ingress, a worker and maybe the bridge in one process, serves them all from one endpoint.
 *
 * Counters count what this process did (a `sum()` across replicas is the fleet total); most are
 * read at scrape time from the components' own in-memory tallies (`collect`), so the hot paths pay
 * nothing for them. With METRICS_PORT unset no registry exists and nobody subscribes.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { IngressEvents } from '../ingress/events';
import type { BridgeStats } from '../jetstream/bridge';
import type { KindWorkerStats } from '../queue/claim-loop';
import type { WorkerEvents } from '../queue/events';

/** Seconds: claim statements and batch transactions (milliseconds to seconds). */
const DB_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds: attempts are HTTP calls (collector, Bot API) or handler runs. */
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** A registry with Node's default process metrics under their standard names (process_*, nodejs_*). */
export function createProcessRegistry(opts: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  return registry;
}

function once<T>(make: (r: Registry) => T): (r: Registry) => T {
  const made = new WeakMap<Registry, T>();
  return (r) => {
    let m = made.get(r);
    if (!m) made.set(r, (m = make(r)));
    return m;
  };
}

// ---- workers (libs/queue/claim-loop.ts) ------------------------------------------------------------

/** What one claim loop shows at scrape time (a KindWorker has all of it). */
export interface ClaimLoopView {
  readonly queue: string;
  readonly inFlight: number;
  readonly heartbeatAgeMs: number;
  readonly outcomeBacklog: number;
  readonly stats: Readonly<KindWorkerStats>;
}

/** The instruments a claim loop's events feed (all else is read from its stats). */
export interface QueueMetrics {
  claimDuration: Histogram<'queue'>;
  attemptDuration: Histogram<'queue' | 'outcome'>;
  httpResponses: Counter<'queue' | 'status'>;
  rateLimited: Counter<'queue'>;
  /** Shows these loops' stats, in-flight, heartbeat age and outcome backlog at scrape time. */
  track(loops: readonly ClaimLoopView[]): void;
}

export const queueMetrics = once((registry: Registry): QueueMetrics => {
  const loops = new Set<ClaimLoopView>();
  const r = [registry];
  type Rows = (l: ClaimLoopView) => [Record<string, string>, number][];
  const counted = (rows: Rows) =>
    function (this: Counter<string>) {
      this.reset();
      for (const l of loops) for (const [labels, v] of rows(l)) this.inc(labels, v);
    };
  const gauged = (rows: Rows) =>
    function (this: Gauge<string>) {
      this.reset();
      for (const l of loops) for (const [labels, v] of rows(l)) this.set(labels, v);
    };
  new Counter({
    name: 'tg_relay_attempts_total',
    help: 'Attempts this process finished, by queue and outcome (delivered, retry, failed, fenced: the claim was lost before the outcome landed, released: given back at shutdown)',
    labelNames: ['queue', 'outcome'],
    registers: r,
    collect: counted((l) => [
      [{ queue: l.queue, outcome: 'delivered' }, l.stats.delivered],
      [{ queue: l.queue, outcome: 'retry' }, l.stats.retried],
      [{ queue: l.queue, outcome: 'failed' }, l.stats.failed],
      [{ queue: l.queue, outcome: 'fenced' }, l.stats.fenced],
      [{ queue: l.queue, outcome: 'released' }, l.stats.released],
    ]),
  });
  new Counter({
    name: 'tg_relay_claimed_jobs_total',
    help: 'Jobs this process claimed, by queue',
    labelNames: ['queue'],
    registers: r,
    collect: counted((l) => [[{ queue: l.queue }, l.stats.claimed]]),
  });
  new Counter({
    name: 'tg_relay_claim_errors_total',
    help: 'Claim statements that failed (and were retried with backoff), by queue',
    labelNames: ['queue'],
    registers: r,
    collect: counted((l) => [[{ queue: l.queue }, l.stats.claimErrors]]),
  });
  new Counter({
    name: 'tg_relay_stale_recovered_total',
    help: "Stale claims (of workers that died or stalled) this process's sweeps gave back, by queue",
    labelNames: ['queue'],
    registers: r,
    collect: counted((l) => [[{ queue: l.queue }, l.stats.recovered]]),
  });
  new Gauge({
    name: 'tg_relay_jobs_in_flight',
    help: 'Jobs this process holds (running or having their outcome written), by queue',
    labelNames: ['queue'],
    registers: r,
    collect: gauged((l) => [[{ queue: l.queue }, l.inFlight]]),
  });
  new Gauge({
    name: 'tg_relay_heartbeat_age_seconds',
    help: 'Seconds since the last successful heartbeat of the claims of this process, by queue',
    labelNames: ['queue'],
    registers: r,
    collect: gauged((l) => [[{ queue: l.queue }, l.heartbeatAgeMs / 1000]]),
  });
  new Gauge({
    name: 'tg_relay_outcome_writer_backlog',
    help: 'Finished attempts waiting for their outcome transaction in this process, by queue',
    labelNames: ['queue'],
    registers: r,
    collect: gauged((l) => [[{ queue: l.queue }, l.outcomeBacklog]]),
  });
  return {
    claimDuration: new Histogram({
      name: 'tg_relay_claim_duration_seconds',
      help: 'Duration of one claim statement (rows to delivering with their job-ledger rows), by queue',
      labelNames: ['queue'],
      buckets: DB_BUCKETS,
      registers: r,
    }),
    attemptDuration: new Histogram({
      name: 'tg_relay_attempt_duration_seconds',
      help: 'Duration of the attempts this process finished (HTTP call or handler run), by queue and outcome',
      labelNames: ['queue', 'outcome'],
      buckets: ATTEMPT_BUCKETS,
      registers: r,
    }),
    httpResponses: new Counter({
      name: 'tg_relay_attempt_http_responses_total',
      help: "HTTP statuses this process's attempts received, by queue",
      labelNames: ['queue', 'status'],
      registers: r,
    }),
    rateLimited: new Counter({
      name: 'tg_relay_rate_limited_total',
      help: '429 Too Many Requests received by this process, by queue (outbound: Telegram; captures: the collector)',
      labelNames: ['queue'],
      registers: r,
    }),
    track(l) {
      for (const x of l) loops.add(x);
    },
  };
});

/** What `observeWorker` needs of the engine (libs/queue/worker.ts `Worker`). */
export interface WorkerView {
  readonly kinds: readonly ClaimLoopView[];
  readonly events: WorkerEvents;
}

/** Shows the worker's loops at scrape time and feeds the claim and attempt instruments from its events. */
export function observeWorker(registry: Registry, worker: WorkerView): void {
  const m = queueMetrics(registry);
  m.track(worker.kinds);
  worker.events.on('claimed', (e) => m.claimDuration.observe({ queue: e.queue }, e.durationMs / 1000));
  worker.events.on('settled', (e) => {
    m.attemptDuration.observe(
      { queue: e.queue, outcome: e.state === 'pending' ? 'retry' : e.state },
      e.durationMs / 1000,
    );
    if (e.status) {
      m.httpResponses.inc({ queue: e.queue, status: String(e.status) });
      if (e.status === 429) m.rateLimited.inc({ queue: e.queue });
    }
  });
}

/** The fleet-wide outbound rate limiter's waits in this process (libs/outbound/rate-limit.ts). */
export interface RateLimitMetrics {
  waits: Counter<string>;
  waitSeconds: Counter<string>;
  deferred: Counter<string>;
}

export const rateLimitMetrics = once((registry: Registry): RateLimitMetrics => ({
  waits: new Counter({
    name: 'tg_relay_rate_limit_waits_total',
    help: 'Sends that waited for their reserved per-bot slot (OUTBOUND_RATE_MODE=proactive)',
    registers: [registry],
  }),
  waitSeconds: new Counter({
    name: 'tg_relay_rate_limit_wait_seconds_total',
    help: 'Seconds sends spent waiting for their reserved per-bot slot',
    registers: [registry],
  }),
  deferred: new Counter({
    name: 'tg_relay_rate_limit_deferred_total',
    help: 'Sends put back unsent because no slot was free within the reservation horizon',
    registers: [registry],
  }),
}));

// ---- ingress (libs/ingress: poller and webhook) -------------------------------------------------

export interface IngressMetrics {
  batchDuration: Histogram<'transport' | 'result'>;
  updates: Counter<'transport' | 'result'>;
  getUpdates: Counter<'result'>;
  /** Shows the lease state of this process's ingress at scrape time. */
  track(botId: string, isOwner: () => boolean): void;
  /** This process no longer polls the bot (a fleet poller gave it up). */
  untrack(botId: string): void;
}

export const ingressMetrics = once((registry: Registry): IngressMetrics => {
  const owners = new Map<string, () => boolean>();
  const r = [registry];
  new Gauge({
    name: 'tg_relay_ingress_lease_owner',
    help: 'Ingress lease of this process, by bot: 1 = owner (polling or serving the webhook), 0 = standby',
    labelNames: ['bot_id'],
    registers: r,
    collect() {
      this.reset();
      for (const [bot_id, isOwner] of owners) this.set({ bot_id }, isOwner() ? 1 : 0);
    },
  });
  return {
    batchDuration: new Histogram({
      name: 'tg_relay_batch_duration_seconds',
      help: 'Duration of the ingress batch transaction (fenced write of updates, captures and jobs), by transport and result (committed, fenced, error)',
      labelNames: ['transport', 'result'],
      buckets: DB_BUCKETS,
      registers: r,
    }),
    updates: new Counter({
      name: 'tg_relay_ingress_updates_total',
      help: 'Updates this process committed, by transport and result (stored, duplicate, quarantined, capture_conflict: kept in relay.quarantine, its capture key holding other data)',
      labelNames: ['transport', 'result'],
      registers: r,
    }),
    getUpdates: new Counter({
      name: 'tg_relay_get_updates_total',
      help: 'getUpdates calls this process made, by result (updates, empty, conflict, rate_limited, api_error, network_error, not_bot_api)',
      labelNames: ['result'],
      registers: r,
    }),
    track(botId, isOwner) {
      owners.set(botId, isOwner);
    },
    untrack(botId) {
      owners.delete(botId);
    },
  };
});

/** What `observeIngress` needs of the poller or the webhook ingress (libs/ingress/ingress-component.ts). */
export interface IngressView {
  readonly events: IngressEvents;
  holdsLease(): boolean;
}

/** Shows the lease state at scrape time and feeds the getUpdates and batch instruments from ingress's events. */
export function observeIngress(registry: Registry, botId: string, ingress: IngressView): void {
  const m = ingressMetrics(registry);
  m.track(botId, () => ingress.holdsLease());
  ingress.events.on('getUpdates', (e) => m.getUpdates.inc({ result: e.result }));
  ingress.events.on('batch', (e) => {
    const { transport } = e;
    m.batchDuration.observe({ transport, result: e.result }, e.durationMs / 1000);
    if (e.result !== 'committed') return;
    if (e.stored) m.updates.inc({ transport, result: 'stored' }, e.stored);
    if (e.duplicates) m.updates.inc({ transport, result: 'duplicate' }, e.duplicates);
    if (e.quarantined) m.updates.inc({ transport, result: 'quarantined' }, e.quarantined);
    if (e.captureConflicts) m.updates.inc({ transport, result: 'capture_conflict' }, e.captureConflicts);
  });
}

// ---- JetStream bridge ------------------------------------------------------------------------------

export interface BridgeView {
  readonly stats: Readonly<BridgeStats>;
  health(): { connected: boolean; bound: boolean };
}

export function trackBridge(registry: Registry, bridge: BridgeView): void {
  const r = [registry];
  new Counter({
    name: 'tg_relay_jetstream_messages_total',
    help: 'NATS messages this bridge handled, by result (created, duplicate, conflict, rejected, naked: given back after a database error, skipped)',
    labelNames: ['result'],
    registers: r,
    collect() {
      this.reset();
      const s = bridge.stats;
      for (const [result, v] of [
        ['created', s.created],
        ['duplicate', s.duplicates],
        ['conflict', s.conflicts],
        ['rejected', s.rejected],
        ['naked', s.naked],
        ['skipped', s.skipped],
      ] as const)
        this.inc({ result }, v);
    },
  });
  new Counter({
    name: 'tg_relay_jetstream_batches_total',
    help: 'Batches of NATS messages this bridge committed',
    registers: r,
    collect() {
      this.reset();
      this.inc(bridge.stats.batches);
    },
  });
  new Counter({
    name: 'tg_relay_jetstream_alerts_published_total',
    help: 'Alerts about failed messages this bridge published on NATS_ALERT_SUBJECT',
    registers: r,
    collect() {
      this.reset();
      this.inc(bridge.stats.alertsPublished);
    },
  });
  new Gauge({
    name: 'tg_relay_jetstream_connected',
    help: '1 while this bridge is connected to NATS and bound to its stream and consumer',
    registers: r,
    collect() {
      const h = bridge.health();
      this.set(h.connected && h.bound ? 1 : 0);
    },
  });
}
