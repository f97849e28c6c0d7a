import { Gauge, Registry } from 'prom-client';
import type { Readiness } from './health';
import type { Stats } from './stats';
import type { PruneStatus } from '../retention/queries';
import { ITEM_KINDS, KINDS, type ItemKind } from './kinds';
import { openStates, type OpenStateCount, type RecentAttempts } from './queries';

/**
 * The admin /metrics gauges by family. Each family registers its gauges and returns the function
 * that refreshes them from current state. Each is reset first, so a label that disappeared (a
 * state, a bot, a table, a problem) stops being reported.
 */
export type Refresh<T> = (current: T) => void;

/** What the per-bot gauges read beside the stats (libs/admin/queries.ts). */
export interface BotCounts {
  open: OpenStateCount[];
  recent: (RecentAttempts & { bot_id: string | null })[];
}

/** The current stats and the per-bot counts of the same scrape. */
export interface Snapshot {
  stats: Stats;
  bots: BotCounts;
}

/**
 * The bots the per-bot gauges report: every bot with a cursor (polled at least once) or with rows
 * counted now. Each gets every series of its gauges, 0 when it has nothing in that state, so a
 * single-bot deployment shows its zeros as it did before the bot label.
 */
function botsOf({ stats, bots }: Snapshot): string[] {
  const ids = new Set(stats.bots.map((b) => b.bot_id));
  for (const r of bots.open) ids.add(r.bot_id);
  for (const r of bots.recent) if (r.bot_id !== null) ids.add(r.bot_id);
  return [...ids].sort();
}

/**
 * Per kind: depth by state, oldest pending age and the last minute's attempts, by bot. The done
 * state (delivered, handled), which only grows and is estimated above the cap, has one series per
 * kind without a bot; the other states are exact per bot.
 */
export function queueGauges(registers: Registry[]): Refresh<Snapshot> {
  const depth = new Gauge({
    name: 'tg_relay_queue_depth',
    help: 'Items per kind, state and bot (the done state: per kind only, approximate above the exact-count cap, see /v1/stats)',
    labelNames: ['kind', 'state', 'bot_id'],
    registers,
  });
  const oldest = new Gauge({
    name: 'tg_relay_oldest_pending_age_seconds',
    help: 'Age of the oldest pending item per kind and bot (0 when none)',
    labelNames: ['kind', 'bot_id'],
    registers,
  });
  const rate = new Gauge({
    name: 'tg_relay_delivered_last_minute',
    help: 'Successful attempts per kind and bot during the last 60 s (all replicas)',
    labelNames: ['kind', 'bot_id'],
    registers,
  });
  const attemptsRecent = new Gauge({
    name: 'tg_relay_attempts_last_minute',
    help: 'Attempts per kind and bot during the last 60 s (all replicas)',
    labelNames: ['kind', 'bot_id'],
    registers,
  });
  const failedRecent = new Gauge({
    name: 'tg_relay_failed_last_minute',
    help: 'Attempts per kind and bot that failed for good during the last 60 s (all replicas); failed items now: tg_relay_queue_depth{state="failed"}',
    labelNames: ['kind', 'bot_id'],
    registers,
  });
  return (snap) => {
    const { stats } = snap;
    const now = Date.parse(stats.generated_at);
    const bots = botsOf(snap);
    for (const g of [depth, oldest, rate, attemptsRecent, failedRecent]) g.reset();
    for (const [kind, k] of Object.entries(stats.kinds)) {
      const done = KINDS[kind as ItemKind].doneState;
      if (done && k.states[done]) depth.set({ kind, state: done }, k.states[done].count);
      for (const bot_id of bots) {
        for (const state of openStates(kind as ItemKind)) depth.set({ kind, state, bot_id }, 0);
        oldest.set({ kind, bot_id }, 0);
        for (const g of [rate, attemptsRecent, failedRecent]) g.set({ kind, bot_id }, 0);
      }
    }
    for (const r of snap.bots.open) {
      if (r.kind === 'quarantine') continue;
      depth.set({ kind: r.kind, state: r.state, bot_id: r.bot_id }, r.n);
      if (r.oldest) oldest.set({ kind: r.kind, bot_id: r.bot_id }, Math.max(0, (now - Date.parse(r.oldest)) / 1000));
    }
    for (const r of snap.bots.recent) {
      const kind = ITEM_KINDS.find((k) => KINDS[k].subject === r.subject);
      if (!kind) continue;
      const labels = { kind, bot_id: r.bot_id ?? '' };
      rate.set(labels, r.delivered);
      attemptsRecent.set(labels, r.attempts);
      failedRecent.set(labels, r.failed);
    }
  };
}

export function configProblemGauge(registers: Registry[]): Refresh<Readiness> {
  const configProblems = new Gauge({
    name: 'tg_relay_config_problems',
    help: 'Delivery configuration problems workers recorded (relay.config_problems), by component, code and bot',
    labelNames: ['component', 'code', 'bot_id'],
    registers,
  });
  return (readiness) => {
    configProblems.reset();
    for (const p of readiness.checks.delivery)
      configProblems.inc({ component: p.component, code: p.code, bot_id: p.bot_id });
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

/** Quarantined updates: those waiting for an operator by bot, the resolved ones (they only grow) in all. */
export function quarantineGauge(registers: Registry[]): Refresh<Snapshot> {
  const quarantine = new Gauge({
    name: 'tg_relay_quarantine_items',
    help: 'Quarantined updates by state, and by bot while unresolved (state="quarantined")',
    labelNames: ['state', 'bot_id'],
    registers,
  });
  const open = new Set(openStates('quarantine'));
  return (snap) => {
    quarantine.reset();
    for (const [state, c] of Object.entries(snap.stats.quarantine.states))
      if (!open.has(state)) quarantine.set({ state }, c.count);
    for (const bot_id of botsOf(snap)) for (const state of open) quarantine.set({ state, bot_id }, 0);
    for (const r of snap.bots.open)
      if (r.kind === 'quarantine') quarantine.set({ state: r.state, bot_id: r.bot_id }, r.n);
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
