import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Queryable } from '../db/pool';
import type { Logger } from '../observability/logger';
import type { Readiness } from './health';
import type { Stats } from './stats';
import { pruneStatus, PruneStatus } from '../retention/queries';

/**
 * The admin API's /metrics. Everything read from the database is a GAUGE of current state (queue
 * depth, oldest pending age, last-minute rates, quarantine, config problems, poller lease and
 * progress, prune history): every admin replica reports the same values, so aggregate with `max`,
 * never `sum`. Counters of work done live on the processes that do it (METRICS_PORT on pollers,
 * workers and the bridge, libs/observability/metrics.ts); the only counter here is this admin
 * process's own HTTP requests.
 */
export interface AdminMetrics {
  registry: Registry;
  /** Refreshes gauges from a stats snapshot and readiness, returns the exposition. */
  scrape(snapshot: () => Promise<{ stats: Stats; readiness: Readiness }>): Promise<string>;
  /** Counts one answered request of this admin process (route pattern, not the raw URL). */
  request(method: string, route: string, status: number): void;
}

export function createAdminMetrics(opts: {
  db: Queryable;
  clock: () => Date;
  logger: Logger;
  processMetrics?: boolean;
}): AdminMetrics {
  const registry = new Registry();
  // Node's process metrics under their standard names (process_*, nodejs_*)
  if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  const r = [registry];
  const depth = new Gauge({
    name: 'tg_relay_queue_depth',
    help: 'Items per kind and state (approximate above the exact-count cap, see /v1/stats)',
    labelNames: ['kind', 'state'],
    registers: r,
  });
  const oldest = new Gauge({
    name: 'tg_relay_oldest_pending_age_seconds',
    help: 'Age of the oldest pending item per kind (0 when none)',
    labelNames: ['kind'],
    registers: r,
  });
  const rate = new Gauge({
    name: 'tg_relay_delivered_last_minute',
    help: 'Successful attempts per kind during the last 60 s (all replicas)',
    labelNames: ['kind'],
    registers: r,
  });
  const attemptsRecent = new Gauge({
    name: 'tg_relay_attempts_last_minute',
    help: 'Attempts per kind during the last 60 s (all replicas)',
    labelNames: ['kind'],
    registers: r,
  });
  const failedRecent = new Gauge({
    name: 'tg_relay_failed_last_minute',
    help: 'Attempts per kind that failed for good during the last 60 s (all replicas); failed items now: tg_relay_queue_depth{state="failed"}',
    labelNames: ['kind'],
    registers: r,
  });
  const configProblems = new Gauge({
    name: 'tg_relay_config_problems',
    help: 'Delivery configuration problems workers recorded (relay.config_problems), by component and code',
    labelNames: ['component', 'code'],
    registers: r,
  });
  const requests = new Counter({
    name: 'tg_relay_admin_http_requests_total',
    help: 'HTTP requests this admin process answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'],
    registers: r,
  });
  const generation = new Gauge({
    name: 'tg_relay_poller_generation',
    help: 'Current lease generation of the poller per bot',
    labelNames: ['bot_id'],
    registers: r,
  });
  const progressGen = new Gauge({
    name: 'tg_relay_poller_progress_generation',
    help: 'Generation that made the last progress',
    labelNames: ['bot_id'],
    registers: r,
  });
  const progressAge = new Gauge({
    name: 'tg_relay_poller_progress_age_seconds',
    help: 'Seconds since the poller last made progress (poller lag in time)',
    labelNames: ['bot_id'],
    registers: r,
  });
  const lagUpdates = new Gauge({
    name: 'tg_relay_poller_pending_updates',
    help: "Telegram's pending_update_count (getWebhookInfo; only for the configured bot)",
    labelNames: ['bot_id'],
    registers: r,
  });
  const leaseValid = new Gauge({
    name: 'tg_relay_poller_lease_valid',
    help: '1 when a poller holds an unexpired lease',
    labelNames: ['bot_id'],
    registers: r,
  });
  const halted = new Gauge({
    name: 'tg_relay_poller_halted',
    help: '1 when polling halted (decode policy stop)',
    labelNames: ['bot_id'],
    registers: r,
  });
  const quarantine = new Gauge({
    name: 'tg_relay_quarantine_items',
    help: 'Quarantined updates by state',
    labelNames: ['state'],
    registers: r,
  });
  const ready = new Gauge({
    name: 'tg_relay_ready',
    help: '1 when /health/ready passes (database, migrations, poller progressing)',
    registers: r,
  });
  // retention (docs/retention.md): read from relay.prune_runs, so every replica's passes show here
  const pruneLast = new Gauge({
    name: 'tg_relay_prune_last_run_timestamp_seconds',
    help: 'When the last prune pass (periodic or CLI) started (0: never)',
    registers: r,
  });
  const pruneLastDuration = new Gauge({
    name: 'tg_relay_prune_last_run_duration_seconds',
    help: 'Duration of the last prune pass',
    registers: r,
  });
  const pruneLastDeleted = new Gauge({
    name: 'tg_relay_prune_last_run_deleted_rows',
    help: 'Rows the last prune pass deleted, per table',
    labelNames: ['table'],
    registers: r,
  });
  const pruneDeleted24h = new Gauge({
    name: 'tg_relay_prune_deleted_rows_24h',
    help: 'Rows deleted by prune passes during the last 24 h, per table',
    labelNames: ['table'],
    registers: r,
  });
  const pruneRuns24h = new Gauge({
    name: 'tg_relay_prune_runs_24h',
    help: 'Prune passes recorded during the last 24 h',
    registers: r,
  });
  const setPrune = (p: PruneStatus | undefined) => {
    if (!p) return;
    pruneLast.set(p.last ? p.last.started_at.getTime() / 1000 : 0);
    pruneLastDuration.set(p.last ? p.last.duration_ms / 1000 : 0);
    pruneLastDeleted.reset();
    for (const [table, n] of Object.entries(p.last?.deleted ?? {})) pruneLastDeleted.set({ table }, n ?? 0);
    pruneDeleted24h.reset();
    for (const [table, n] of Object.entries(p.deleted_24h)) pruneDeleted24h.set({ table }, n ?? 0);
    pruneRuns24h.set(p.runs_24h);
  };

  let scraping: Promise<string> | undefined;
  const scrape = async (snapshot: () => Promise<{ stats: Stats; readiness: Readiness }>): Promise<string> => {
    const [{ stats, readiness }, prune] = await Promise.all([
      snapshot(),
      // a database not yet migrated to 0010 has no prune history: the other metrics still answer
      pruneStatus(opts.db).catch((err) => void opts.logger.debug({ err }, 'prune status unavailable')),
    ]);
    setPrune(prune ?? undefined);
    depth.reset();
    for (const [kind, k] of Object.entries(stats.kinds)) {
      for (const [state, c] of Object.entries(k.states)) depth.set({ kind, state }, c.count);
      oldest.set({ kind }, k.oldest_pending_age_seconds ?? 0);
      rate.set({ kind }, k.delivered_last_minute);
      attemptsRecent.set({ kind }, k.attempts_last_minute);
      failedRecent.set({ kind }, k.failed_last_minute);
    }
    configProblems.reset();
    for (const p of readiness.checks.delivery) configProblems.inc({ component: p.component, code: p.code });
    quarantine.reset();
    for (const [state, c] of Object.entries(stats.quarantine.states)) quarantine.set({ state }, c.count);
    for (const g of [generation, progressGen, progressAge, lagUpdates, leaseValid, halted]) g.reset();
    for (const b of stats.bots) {
      generation.set({ bot_id: b.bot_id }, b.lease_generation);
      if (b.progress_generation !== null) progressGen.set({ bot_id: b.bot_id }, b.progress_generation);
      if (b.progress_age_seconds !== null) progressAge.set({ bot_id: b.bot_id }, b.progress_age_seconds);
      if (b.pending_update_count !== null) lagUpdates.set({ bot_id: b.bot_id }, b.pending_update_count);
      leaseValid.set({ bot_id: b.bot_id }, b.lease_valid ? 1 : 0);
      halted.set({ bot_id: b.bot_id }, b.halted_reason ? 1 : 0);
    }
    ready.set(readiness.ready ? 1 : 0);
    return registry.metrics();
  };

  return {
    registry,
    request: (method, route, status) => requests.inc({ method, route, status: String(status) }),
    // concurrent scrapes share one refresh
    scrape: (snapshot) => {
      scraping ??= scrape(snapshot).finally(() => (scraping = undefined));
      return scraping;
    },
  };
}
