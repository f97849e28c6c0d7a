import { Gauge, Registry } from 'prom-client';
import type { Readiness } from './health';
import type { Stats } from './stats';
import type { PruneStatus } from '../retention/queries';

/**
 * The admin /metrics gauges by family. Each family registers its gauges and returns the function
 * that refreshes them from current state. Gauges labelled by something that comes and goes (a
 * state, a bot, a table, a problem) are reset first, so a label that disappeared stops being
 * reported; the kinds are fixed, so their per-kind gauges are only overwritten.
 */
export type Refresh<T> = (current: T) => void;

/** Per kind: depth by state, oldest pending age and the last minute's attempts. */
export function queueGauges(registers: Registry[]): Refresh<Stats> {
  const depth = new Gauge({
    name: 'tg_relay_queue_depth',
    help: 'Items per kind and state (approximate above the exact-count cap, see /v1/stats)',
    labelNames: ['kind', 'state'],
    registers,
  });
  const oldest = new Gauge({
    name: 'tg_relay_oldest_pending_age_seconds',
    help: 'Age of the oldest pending item per kind (0 when none)',
    labelNames: ['kind'],
    registers,
  });
  const rate = new Gauge({
    name: 'tg_relay_delivered_last_minute',
    help: 'Successful attempts per kind during the last 60 s (all replicas)',
    labelNames: ['kind'],
    registers,
  });
  const attemptsRecent = new Gauge({
    name: 'tg_relay_attempts_last_minute',
    help: 'Attempts per kind during the last 60 s (all replicas)',
    labelNames: ['kind'],
    registers,
  });
  const failedRecent = new Gauge({
    name: 'tg_relay_failed_last_minute',
    help: 'Attempts per kind that failed for good during the last 60 s (all replicas); failed items now: tg_relay_queue_depth{state="failed"}',
    labelNames: ['kind'],
    registers,
  });
  return (stats) => {
    depth.reset();
    for (const [kind, k] of Object.entries(stats.kinds)) {
      for (const [state, c] of Object.entries(k.states)) depth.set({ kind, state }, c.count);
      oldest.set({ kind }, k.oldest_pending_age_seconds ?? 0);
      rate.set({ kind }, k.delivered_last_minute);
      attemptsRecent.set({ kind }, k.attempts_last_minute);
      failedRecent.set({ kind }, k.failed_last_minute);
    }
  };
}

export function configProblemGauge(registers: Registry[]): Refresh<Readiness> {
  const configProblems = new Gauge({
    name: 'tg_relay_config_problems',
    help: 'Delivery configuration problems workers recorded (relay.config_problems), by component and code',
    labelNames: ['component', 'code'],
    registers,
  });
  return (readiness) => {
    configProblems.reset();
    for (const p of readiness.checks.delivery) configProblems.inc({ component: p.component, code: p.code });
  };
}

/** Per bot: lease, progress, Telegram's backlog and a halt. */
export function pollerGauges(registers: Registry[]): Refresh<Stats> {
  const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: ['bot_id'], registers });
  const generation = gauge('tg_relay_poller_generation', 'Current lease generation of the poller per bot');
  const progressGen = gauge('tg_relay_poller_progress_generation', 'Generation that made the last progress');
  const progressAge = gauge(
    'tg_relay_poller_progress_age_seconds',
    'Seconds since the poller last made progress (poller lag in time)',
  );
  const lagUpdates = gauge(
    'tg_relay_poller_pending_updates',
    "Telegram's pending_update_count (getWebhookInfo; only for the configured bot)",
  );
  const leaseValid = gauge('tg_relay_poller_lease_valid', '1 when a poller holds an unexpired lease');
  const halted = gauge('tg_relay_poller_halted', '1 when polling halted (decode policy stop)');
  return (stats) => {
    for (const g of [generation, progressGen, progressAge, lagUpdates, leaseValid, halted]) g.reset();
    for (const b of stats.bots) {
      generation.set({ bot_id: b.bot_id }, b.lease_generation);
      if (b.progress_generation !== null) progressGen.set({ bot_id: b.bot_id }, b.progress_generation);
      if (b.progress_age_seconds !== null) progressAge.set({ bot_id: b.bot_id }, b.progress_age_seconds);
      if (b.pending_update_count !== null) lagUpdates.set({ bot_id: b.bot_id }, b.pending_update_count);
      leaseValid.set({ bot_id: b.bot_id }, b.lease_valid ? 1 : 0);
      halted.set({ bot_id: b.bot_id }, b.halted_reason ? 1 : 0);
    }
  };
}

export function quarantineGauge(registers: Registry[]): Refresh<Stats> {
  const quarantine = new Gauge({
    name: 'tg_relay_quarantine_items',
    help: 'Quarantined updates by state',
    labelNames: ['state'],
    registers,
  });
  return (stats) => {
    quarantine.reset();
    for (const [state, c] of Object.entries(stats.quarantine.states)) quarantine.set({ state }, c.count);
  };
}

export function readyGauge(registers: Registry[]): Refresh<Readiness> {
  const ready = new Gauge({
    name: 'tg_relay_ready',
    help: '1 when /health/ready passes (database, migrations, poller progressing)',
    registers,
  });
  return (readiness) => ready.set(readiness.ready ? 1 : 0);
}

/**
 * Retention (docs/retention.md): read from relay.prune_runs, so every replica's passes show here.
 * Without a prune status (a database not migrated that far) the gauges keep their values.
 */
export function pruneGauges(registers: Registry[]): Refresh<PruneStatus | undefined> {
  const pruneLast = new Gauge({
    name: 'tg_relay_prune_last_run_timestamp_seconds',
    help: 'When the last prune pass (periodic or CLI) started (0: never)',
    registers,
  });
  const pruneLastDuration = new Gauge({
    name: 'tg_relay_prune_last_run_duration_seconds',
    help: 'Duration of the last prune pass',
    registers,
  });
  const pruneLastDeleted = new Gauge({
    name: 'tg_relay_prune_last_run_deleted_rows',
    help: 'Rows the last prune pass deleted, per table',
    labelNames: ['table'],
    registers,
  });
  const pruneDeleted24h = new Gauge({
    name: 'tg_relay_prune_deleted_rows_24h',
    help: 'Rows deleted by prune passes during the last 24 h, per table',
    labelNames: ['table'],
    registers,
  });
  const pruneRuns24h = new Gauge({
    name: 'tg_relay_prune_runs_24h',
    help: 'Prune passes recorded during the last 24 h',
    registers,
  });
  return (p) => {
    if (!p) return;
    pruneLast.set(p.last ? p.last.started_at.getTime() / 1000 : 0);
    pruneLastDuration.set(p.last ? p.last.duration_ms / 1000 : 0);
    pruneLastDeleted.reset();
    for (const [table, n] of Object.entries(p.last?.deleted ?? {})) pruneLastDeleted.set({ table }, n ?? 0);
    pruneDeleted24h.reset();
    for (const [table, n] of Object.entries(p.deleted_24h)) pruneDeleted24h.set({ table }, n ?? 0);
    pruneRuns24h.set(p.runs_24h);
  };
}
