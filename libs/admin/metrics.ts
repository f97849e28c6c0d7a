import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Queryable } from '../db/pool';
import type { Logger } from '../observability/logger';
import type { Readiness } from './health';
import { attemptsMaxId, attemptsSince } from './queries';
import type { Stats } from './stats';
import { pruneStatus, PruneStatus } from '../retention/queries';
import { WORK_TYPE_LIST } from '../queue/work-types';

/** Audit subject → the `kind` label: the work types' API names (registry), then the admin-only subjects. */
const SUBJECT_KIND: Record<string, string> = {
  ...Object.fromEntries(WORK_TYPE_LIST.map((t) => [t.subject, t.name])),
  quarantine: 'quarantine',
  cursor: 'cursor',
};

/** Seconds; attempts are HTTP calls (collector, Bot API) or handler runs. */
export const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Attempt rows read per scrape at most; a larger backlog is read over the next scrapes. */
export const FEED_BATCH = 50_000;
/** How long an id skipped by the feed is waited for (a transaction that committed late). */
export const GAP_WAIT_MS = 60_000;

/**
 * Follows relay.attempts by id. Ids are assigned at insert but rows become visible at commit, so
 * an id below the high-water mark can appear later: skipped ids are re-asked for GAP_WAIT_MS
 * (ids lost to rollbacks simply expire). Starts at the current end of the table: the counters
 * count from this process's start, as Prometheus counters do.
 */
export class AttemptFeed {
  private last: number | undefined;
  private missing = new Map<number, number>();
  private running: Promise<void> | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly onRow: (row: { subject: string; outcome: string; http_status: number | null; duration_ms: number | null }) => void,
    private readonly clock: () => Date,
  ) {}

  async init(): Promise<void> {
    if (this.last === undefined) this.last = await attemptsMaxId(this.db);
  }

  /** Reads new rows once; concurrent callers share the same read. */
  poll(): Promise<void> {
    this.running ??= this.read().finally(() => (this.running = undefined));
    return this.running;
  }

  private async read(): Promise<void> {
    if (this.last === undefined) {
      await this.init();
      return;
    }
    const now = this.clock().getTime();
    for (const [id, since] of this.missing) if (now - since > GAP_WAIT_MS) this.missing.delete(id);
    const rows = await attemptsSince(this.db, this.last, [...this.missing.keys()], FEED_BATCH);
    let expect = this.last + 1;
    for (const row of rows) {
      const id = Number((row as { id: number }).id);
      if (id <= this.last) {
        if (this.missing.delete(id)) this.onRow(row);
        continue;
      }
      for (let gap = expect; gap < id && this.missing.size < 10_000; gap++) this.missing.set(gap, now);
      expect = id + 1;
      this.last = id;
      this.onRow(row);
    }
  }
}

export interface AdminMetrics {
  registry: Registry;
  /** Refreshes gauges from a stats snapshot and readiness, reads new attempts, returns the exposition. */
  scrape(snapshot: () => Promise<{ stats: Stats; readiness: Readiness }>): Promise<string>;
  feed: AttemptFeed;
}

export function createAdminMetrics(opts: { db: Queryable; clock: () => Date; logger: Logger; processMetrics?: boolean }): AdminMetrics {
  const registry = new Registry();
  if (opts.processMetrics) collectDefaultMetrics({ register: registry, prefix: 'tg_relay_admin_' });
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
  const attempts = new Counter({
    name: 'tg_relay_attempts_total',
    help: 'Delivery attempts by kind and outcome (delivered, retry, failed, ambiguous, handled…) since this admin process started',
    labelNames: ['kind', 'outcome'],
    registers: r,
  });
  const latency = new Histogram({
    name: 'tg_relay_attempt_duration_seconds',
    help: 'Attempt latency by kind and outcome, from relay.attempts.duration_ms',
    labelNames: ['kind', 'outcome'],
    buckets: ATTEMPT_BUCKETS,
    registers: r,
  });
  const status = new Counter({
    name: 'tg_relay_attempt_http_responses_total',
    help: 'HTTP statuses received by attempts, by kind',
    labelNames: ['kind', 'status'],
    registers: r,
  });
  const limited = new Counter({
    name: 'tg_relay_rate_limited_total',
    help: '429 Too Many Requests received, by kind (outbound: Telegram; captures: the collector)',
    labelNames: ['kind'],
    registers: r,
  });
  const admin = new Counter({
    name: 'tg_relay_admin_actions_total',
    help: 'Admin API actions recorded in the audit trail',
    labelNames: ['action'],
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
  const leaseValid = new Gauge({ name: 'tg_relay_poller_lease_valid', help: '1 when a poller holds an unexpired lease', labelNames: ['bot_id'], registers: r });
  const halted = new Gauge({ name: 'tg_relay_poller_halted', help: '1 when polling halted (decode policy stop)', labelNames: ['bot_id'], registers: r });
  const quarantine = new Gauge({ name: 'tg_relay_quarantine_items', help: 'Quarantined updates by state', labelNames: ['state'], registers: r });
  const ready = new Gauge({ name: 'tg_relay_ready', help: '1 when /health/ready passes (database, migrations, poller progressing)', registers: r });
  // retention (docs/retention.md): read from relay.prune_runs, so every replica's passes show here
  const pruneLast = new Gauge({
    name: 'tg_relay_prune_last_run_timestamp_seconds',
    help: 'When the last prune pass (periodic or CLI) started (0: never)',
    registers: r,
  });
  const pruneLastDuration = new Gauge({ name: 'tg_relay_prune_last_run_duration_seconds', help: 'Duration of the last prune pass', registers: r });
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
  const pruneRuns24h = new Gauge({ name: 'tg_relay_prune_runs_24h', help: 'Prune passes recorded during the last 24 h', registers: r });
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

  const feed = new AttemptFeed(
    opts.db,
    (row) => {
      const kind = SUBJECT_KIND[row.subject] ?? row.subject;
      if (row.subject === 'admin') {
        admin.inc({ action: row.outcome.replace(/^admin\./, '') });
        return;
      }
      attempts.inc({ kind, outcome: row.outcome });
      if (row.duration_ms !== null && row.duration_ms !== undefined) latency.observe({ kind, outcome: row.outcome }, row.duration_ms / 1000);
      if (row.http_status) {
        status.inc({ kind, status: String(row.http_status) });
        if (row.http_status === 429) limited.inc({ kind });
      }
    },
    opts.clock,
  );

  let scraping: Promise<string> | undefined;
  const scrape = async (snapshot: () => Promise<{ stats: Stats; readiness: Readiness }>): Promise<string> => {
    const [{ stats, readiness }, , prune] = await Promise.all([
      snapshot(),
      feed.poll(),
      // a database not yet migrated to 0010 has no prune history: the other metrics still answer
      pruneStatus(opts.db).catch((err) => void opts.logger.debug({ err }, 'prune status unavailable')),
    ]);
    setPrune(prune ?? undefined);
    depth.reset();
    for (const [kind, k] of Object.entries(stats.kinds)) {
      for (const [state, c] of Object.entries(k.states)) depth.set({ kind, state }, c.count);
      oldest.set({ kind }, k.oldest_pending_age_seconds ?? 0);
      rate.set({ kind }, k.delivered_last_minute);
    }
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
    feed,
    // concurrent scrapes share one refresh: the attempt feed must not be read twice at once
    scrape: (snapshot) => {
      scraping ??= scrape(snapshot).finally(() => (scraping = undefined));
      return scraping;
    },
  };
}
