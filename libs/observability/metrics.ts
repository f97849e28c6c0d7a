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
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type LabelValues } from 'prom-client';
import type { IngressEvents } from '../ingress/events';
import type { BridgeStats } from '../jetstream/bridge';
import type { KindWorkerStats } from '../queue/claim-loop';
import type { WorkerEvents } from '../queue/events';
import { WORK_TYPES } from '../queue/work-types';

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

// ---- series by bot ---------------------------------------------------------------------------------

/** A counter or histogram, as far as removing one of its series goes. */
interface Removable {
  remove(labels: LabelValues<string>): void;
}

/**
 * The series each owner (a bot, or a bot in one queue) has in a set of instruments, so that all of
 * them go at once when this process stops serving it: every series names its bot (`bot_id`), and a
 * fleet process serves bots that come and go, so their series must not stay forever.
 */
class BotSeries {
  private readonly byOwner = new Map<string, Map<Removable, Map<string, LabelValues<string>>>>();

  /** Records that `metric` has a series with `labels`, for `owner`; returns `labels`. */
  note<L extends LabelValues<string>>(owner: string, metric: Removable, labels: L): L {
    let metrics = this.byOwner.get(owner);
    if (!metrics) this.byOwner.set(owner, (metrics = new Map<Removable, Map<string, LabelValues<string>>>()));
    let series = metrics.get(metric);
    if (!series) metrics.set(metric, (series = new Map<string, LabelValues<string>>()));
    const key = Object.values(labels).join('\0');
    if (!series.has(key)) series.set(key, labels);
    return labels;
  }

  /** Removes every series of `owner`. */
  drop(owner: string): void {
    for (const [metric, series] of this.byOwner.get(owner) ?? [])
      for (const labels of series.values()) metric.remove(labels);
    this.byOwner.delete(owner);
  }

  owners(): IterableIterator<string> {
    return this.byOwner.keys();
  }
}

/** Runs `fn` at most once per tick: each instrument's collect asks for it, one scrape runs it once. */
function oncePerTick(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    queueMicrotask(() => (done = false));
    fn();
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
  /** The bots the loop serves now, when it serves several (a fleet's); absent: every bot it meets. */
  readonly servedBots?: () => readonly string[];
}

/** The claim loops a registry shows (shared by the worker and the rate-limit instruments). */
const loopsOf = once((_registry: Registry) => new Set<ClaimLoopView>());

/**
 * The bots each queue's loop serves now (null: every bot). A bot none of them serves any more is
 * gone from this process: its series are dropped at the next scrape.
 */
function servedByQueue(loops: Iterable<ClaimLoopView>): Map<string, Set<string> | null> {
  const served = new Map<string, Set<string> | null>();
  for (const l of loops) {
    const bots = l.servedBots?.();
    served.set(l.queue, bots ? new Set(bots) : null);
  }
  return served;
}

/** The owner of a worker series: its queue and its bot. */
const queueBot = (queue: string, botId: string) => `${queue}\0${botId}`;

/** The instruments a claim loop's events feed (all else is read from its stats). */
export interface QueueMetrics {
  claimDuration: Histogram<'queue'>;
  attempts: Counter<'queue' | 'outcome' | 'bot_id'>;
  attemptDuration: Histogram<'queue' | 'outcome' | 'bot_id'>;
  httpResponses: Counter<'queue' | 'status' | 'bot_id'>;
  rateLimited: Counter<'queue' | 'bot_id'>;
  /** The series of the four above, by queue and bot. */
  series: BotSeries;
  /** Shows these loops' stats, in-flight, heartbeat age and outcome backlog at scrape time. */
  track(loops: readonly ClaimLoopView[]): void;
}

export const queueMetrics = once((registry: Registry): QueueMetrics => {
  const loops = loopsOf(registry);
  const r = [registry];
  const series = new BotSeries();
  // at scrape time: the series of a bot its queue's loop no longer serves go
  const prune = oncePerTick(() => {
    const served = servedByQueue(loops);
    for (const owner of [...series.owners()]) {
      const [queue, botId] = owner.split('\0');
      const bots = served.get(queue);
      if (bots && !bots.has(botId)) series.drop(owner);
    }
  });
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
  const attempts = new Counter({
    name: 'tg_relay_attempts_total',
    help: 'Attempts this process finished, by queue, outcome (delivered, retry, failed, fenced: the claim was lost before the outcome landed, released: given back at shutdown) and bot',
    labelNames: ['queue', 'outcome', 'bot_id'],
    registers: r,
    collect: prune,
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
    attempts,
    attemptDuration: new Histogram({
      name: 'tg_relay_attempt_duration_seconds',
      help: 'Duration of the attempts this process finished (HTTP call or handler run), by queue, outcome and bot',
      labelNames: ['queue', 'outcome', 'bot_id'],
      buckets: ATTEMPT_BUCKETS,
      registers: r,
      collect: prune,
    }),
    httpResponses: new Counter({
      name: 'tg_relay_attempt_http_responses_total',
      help: "HTTP statuses this process's attempts received, by queue and bot",
      labelNames: ['queue', 'status', 'bot_id'],
      registers: r,
      collect: prune,
    }),
    rateLimited: new Counter({
      name: 'tg_relay_rate_limited_total',
      help: '429 Too Many Requests received by this process, by queue (outbound: Telegram; captures: the collector) and bot',
      labelNames: ['queue', 'bot_id'],
      registers: r,
      collect: prune,
    }),
    series,
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

/**
 * Shows the worker's loops at scrape time and feeds the claim and attempt instruments from its
 * events; an attempt's series name its bot (the row's bot_id; empty for a store that reads none).
 */
export function observeWorker(registry: Registry, worker: WorkerView): void {
  const m = queueMetrics(registry);
  m.track(worker.kinds);
  const { series } = m;
  worker.events.on('claimed', (e) => m.claimDuration.observe({ queue: e.queue }, e.durationMs / 1000));
  worker.events.on('settled', (e) => {
    const { queue } = e;
    const bot_id = e.botId ?? '';
    const owner = queueBot(queue, bot_id);
    const outcome = e.state === 'pending' ? 'retry' : e.state;
    m.attempts.inc(series.note(owner, m.attempts, { queue, outcome, bot_id }));
    m.attemptDuration.observe(series.note(owner, m.attemptDuration, { queue, outcome, bot_id }), e.durationMs / 1000);
    if (e.status) {
      m.httpResponses.inc(series.note(owner, m.httpResponses, { queue, status: String(e.status), bot_id }));
      if (e.status === 429) m.rateLimited.inc(series.note(owner, m.rateLimited, { queue, bot_id }));
    }
  });
  worker.events.on('unsettled', (e) => {
    const bot_id = e.botId ?? '';
    m.attempts.inc(series.note(queueBot(e.queue, bot_id), m.attempts, { queue: e.queue, outcome: e.outcome, bot_id }));
  });
}

/** The fleet-wide outbound rate limiter's waits in this process (libs/outbound/rate-limit.ts), by bot. */
export interface RateLimitMetrics {
  /** A send of `botId` waited `ms` for its reserved slot. */
  waited(botId: string, ms: number): void;
  /** A send of `botId` was put back unsent: no slot within the horizon. */
  deferred(botId: string): void;
}

export const rateLimitMetrics = once((registry: Registry): RateLimitMetrics => {
  const series = new BotSeries();
  const loops = loopsOf(registry);
  // a bot the outbound loop no longer serves: its series go at the next scrape
  const prune = oncePerTick(() => {
    const bots = servedByQueue(loops).get(WORK_TYPES.outbound.queue);
    if (bots) for (const botId of [...series.owners()]) if (!bots.has(botId)) series.drop(botId);
  });
  const r = [registry];
  const waits = new Counter({
    name: 'tg_relay_rate_limit_waits_total',
    help: 'Sends that waited for their reserved per-bot slot (OUTBOUND_RATE_MODE=proactive), by bot',
    labelNames: ['bot_id'],
    registers: r,
    collect: prune,
  });
  const waitSeconds = new Counter({
    name: 'tg_relay_rate_limit_wait_seconds_total',
    help: 'Seconds sends spent waiting for their reserved per-bot slot, by bot',
    labelNames: ['bot_id'],
    registers: r,
    collect: prune,
  });
  const deferred = new Counter({
    name: 'tg_relay_rate_limit_deferred_total',
    help: 'Sends put back unsent because no slot was free within the reservation horizon, by bot',
    labelNames: ['bot_id'],
    registers: r,
    collect: prune,
  });
  return {
    waited(bot_id, ms) {
      waits.inc(series.note(bot_id, waits, { bot_id }));
      waitSeconds.inc(series.note(bot_id, waitSeconds, { bot_id }), ms / 1000);
    },
    deferred(bot_id) {
      deferred.inc(series.note(bot_id, deferred, { bot_id }));
    },
  };
});

// ---- ingress (libs/ingress: poller and webhook) -------------------------------------------------

export interface IngressMetrics {
  batchDuration: Histogram<'transport' | 'result' | 'bot_id'>;
  updates: Counter<'transport' | 'result' | 'bot_id'>;
  getUpdates: Counter<'result' | 'bot_id'>;
  /** The series of the three above, by bot. */
  series: BotSeries;
  /** Shows the lease state of this process's ingress at scrape time. */
  track(botId: string, isOwner: () => boolean): void;
  /** This process no longer polls the bot (a fleet poller gave it up): its series go. */
  untrack(botId: string): void;
}

export const ingressMetrics = once((registry: Registry): IngressMetrics => {
  const owners = new Map<string, () => boolean>();
  const series = new BotSeries();
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
      help: 'Duration of the ingress batch transaction (fenced write of updates, captures and jobs), by transport, result (committed, fenced, error) and bot',
      labelNames: ['transport', 'result', 'bot_id'],
      buckets: DB_BUCKETS,
      registers: r,
    }),
    updates: new Counter({
      name: 'tg_relay_ingress_updates_total',
      help: 'Updates this process committed, by transport, result (stored, duplicate, quarantined, capture_conflict: kept in relay.quarantine, its capture key holding other data) and bot',
      labelNames: ['transport', 'result', 'bot_id'],
      registers: r,
    }),
    getUpdates: new Counter({
      name: 'tg_relay_get_updates_total',
      help: 'getUpdates calls this process made, by result (updates, empty, conflict, rate_limited, api_error, network_error, not_bot_api) and bot',
      labelNames: ['result', 'bot_id'],
      registers: r,
    }),
    series,
    track(botId, isOwner) {
      owners.set(botId, isOwner);
    },
    untrack(botId) {
      owners.delete(botId);
      series.drop(botId);
    },
  };
});

/** What `observeIngress` needs of the poller or the webhook ingress (libs/ingress/ingress-component.ts). */
export interface IngressView {
  readonly events: IngressEvents;
  holdsLease(): boolean;
}

/** Shows the lease state at scrape time and feeds the getUpdates and batch instruments from ingress's events, under the bot. */
export function observeIngress(registry: Registry, botId: string, ingress: IngressView): void {
  const m = ingressMetrics(registry);
  const { series } = m;
  const bot_id = botId;
  m.track(botId, () => ingress.holdsLease());
  ingress.events.on('getUpdates', (e) =>
    m.getUpdates.inc(series.note(botId, m.getUpdates, { result: e.result, bot_id })),
  );
  ingress.events.on('batch', (e) => {
    const { transport } = e;
    m.batchDuration.observe(
      series.note(botId, m.batchDuration, { transport, result: e.result, bot_id }),
      e.durationMs / 1000,
    );
    if (e.result !== 'committed') return;
    const count = (result: string, n: number) => {
      if (n) m.updates.inc(series.note(botId, m.updates, { transport, result, bot_id }), n);
    };
    count('stored', e.stored);
    count('duplicate', e.duplicates);
    count('quarantined', e.quarantined);
    count('capture_conflict', e.captureConflicts);
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
