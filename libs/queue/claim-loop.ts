import { errorCode } from '../errors';
import { performance } from 'node:perf_hooks';
import type { JobLedger } from '../db/boss';
import type { Pool, PoolClient } from 'pg';
import { withTransaction } from '../db/pool';
import type { Logger } from '../observability/logger';
import type { QueueMetrics } from '../observability/metrics';
import type { BackoffPolicy } from './backoff';
import { bossJobsActivate, bossJobsComplete, bossJobsFail, bossJobsReschedule } from './boss-jobs';
import { Clock, jsNow, sqlNow } from './clock';
import { notifyWork } from './enqueue';
import { QueueError, shortError } from './errors';
import type { ClaimedJob, JobKind, SettledRow } from './job-kind';
import { Outcome } from './outcome';
import { OutcomeWriter } from './outcome-writer';
import { attemptsInsert, AttemptRow } from './queries';
import { decideSettlement, Decision } from './settlement';
import { WakeSignal } from './signal';
import { createRescuer, rescueTargetOf, type Rescuer } from './rescuer';
import type { WakeListener } from './wake-listener';

/** Safety-net poll while idle: NOTIFY normally wakes the loop long before this. */
export const POLL_INTERVAL_MS_DEFAULT = 2_000;
/** Most jobs claimed in one statement (claims also take at most half the slots). */
export const CLAIM_BATCH_MAX_DEFAULT = 500;
const DB_RETRY_MIN_MS = 100;
const DB_RETRY_MAX_MS = 5_000;

export interface EngineConfig {
  /** Jobs of this kind run at once in this process (WORKER_CONCURRENCY). */
  concurrency: number;
  /** STALE_AFTER: a claim without heartbeat is recovered so that it is back within this time. */
  staleAfterMs: number;
  retry: BackoffPolicy;
}

export interface KindWorkerDeps {
  pool: Pool;
  /** The job ledger: complete/fail on the outcome transaction; it need not be started. */
  boss: JobLedger;
  logger: Logger;
  workerId: string;
  config: EngineConfig;
  /** Omit in production (database time); tests pass a ManualClock. */
  clock?: Clock;
  /** Jitter source for backoff (tests make it deterministic). */
  random?: () => number;
  /** NOTIFY wake-ups; without one the loop relies on its poll. */
  listener?: WakeListener;
  pollIntervalMs?: number;
  claimBatchMax?: number;
  /** Called if the loop ever ends by an error (it should not): the process is no longer whole. */
  onCrash?: (err: unknown) => void;
  /** Outcome transactions in flight at once (default 2). */
  outcomeWriters?: number;
  /** METRICS_PORT: claim and attempt timings (the rest is read from `stats` at scrape time). */
  metrics?: QueueMetrics;
  /** The process's rescuer (createWorker shares one); default: one for this kind's table alone. */
  rescuer?: Rescuer;
}

/** Heartbeat and stale-sweep period, and the heartbeat age at which a claim counts as stale. */
export function staleTiming(staleAfterMs: number): { tickMs: number; thresholdMs: number } {
  // Heartbeats and sweeps every S/5; stale after 4/5·S without heartbeat. A dead worker's claims are
  // then back within S of its last heartbeat, and a live worker may miss three heartbeats in a row.
  const tickMs = Math.max(20, Math.floor(staleAfterMs / 5));
  return { tickMs, thresholdMs: Math.max(tickMs, staleAfterMs - tickMs) };
}

export interface KindWorkerStats {
  claimed: number;
  delivered: number;
  retried: number;
  failed: number;
  fenced: number;
  recovered: number;
  released: number;
  claimErrors: number;
}

export interface KindWorker {
  readonly queue: string;
  readonly inFlight: number;
  readonly stats: Readonly<KindWorkerStats>;
  /** Milliseconds since the claims' last successful heartbeat (or since it found none to renew). */
  readonly heartbeatAgeMs: number;
  /** The heartbeat age past which the loop takes its own claims as lost and aborts their jobs. */
  readonly heartbeatLimitMs: number;
  /** Finished attempts waiting for their outcome transaction. */
  readonly outcomeBacklog: number;
  /** Started, not stopping, and the loop has not ended by an error. */
  readonly running: boolean;
  start(): void;
  /** Stop claiming, let in-flight jobs finish for up to `timeoutMs`, then release the rest. Idempotent. */
  stop(opts?: { timeoutMs?: number }): Promise<void>;
  /** Claim now (as a NOTIFY would). */
  wake(): void;
  /** One stale sweep now; returns how many claims were recovered. */
  recoverStaleNow(): Promise<number>;
}

type Phase = 'running' | 'settling' | 'released';
interface Held<Row> {
  job: ClaimedJob<Row>;
  ctl: AbortController;
  phase: Phase;
  /** performance.now() of the claim or of its last renewed heartbeat. */
  renewedAt: number;
}
interface Finished<Row, Effects> {
  job: ClaimedJob<Row>;
  outcome: Outcome<Effects>;
  decision: Decision<Effects>;
  startedAt: Date;
  finishedAt: Date;
  durationMs: number;
}

/**
 * The claim loop of one job kind in one process.
 *
 * - claims due rows in batches (up to half the slots), in one statement with their ledger jobs;
 *   loops straight on while batches come back full (a backlog drains without sleeping), then waits
 *   for a NOTIFY, the next due row, or the safety poll;
 * - runs up to `concurrency` jobs at once; writes outcomes in group-committed batches (domain row,
 *   ledger job and audit row in one transaction, fenced by claim id);
 * - heartbeats its claims, aborts jobs whose claim was lost, and sweeps stale claims of dead workers;
 * - every database error is caught, logged and retried with backoff: the loop never crashes.
 */
export function createKindWorker<Row, Effects>(kind: JobKind<Row, Effects>, deps: KindWorkerDeps): KindWorker {
  const { pool, boss, workerId, config, clock } = deps;
  const logger = deps.logger.child({ queue: kind.queue });
  const pollMs = deps.pollIntervalMs ?? POLL_INTERVAL_MS_DEFAULT;
  const batchMax = deps.claimBatchMax ?? CLAIM_BATCH_MAX_DEFAULT;
  const { tickMs, thresholdMs } = staleTiming(config.staleAfterMs);
  const held = new Map<string, Held<Row>>();
  const signal = new WakeSignal();
  const stats: KindWorkerStats = {
    claimed: 0,
    delivered: 0,
    retried: 0,
    failed: 0,
    fenced: 0,
    recovered: 0,
    released: 0,
    claimErrors: 0,
  };
  let started = false;
  let stopping = false;
  let stopPromise: Promise<void> | undefined;
  let loopDone: Promise<void> = Promise.resolve();
  let waitingForSlot = false;
  let ready = !kind.whenReady;
  let lastHeartbeatOk = performance.now();
  const heartbeatLimitMs = thresholdMs - tickMs;
  let unsubscribe: (() => void) | undefined;
  let heartbeatTimer: NodeJS.Timeout | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let heartbeatRunning: Promise<void> | undefined;
  let sweepRunning: Promise<number> | undefined;
  let slotWaiters: (() => void)[] = [];
  let crashed = false;
  const claimTimer = deps.metrics?.claimDuration.labels(kind.queue);

  const rescuer = deps.rescuer ?? createRescuer({ pool, boss, logger, clock, targets: [rescueTargetOf(kind)] });
  const writer = new OutcomeWriter<Finished<Row, Effects>>(
    (batch) => writeOutcomes(batch),
    logger,
    deps.outcomeWriters ?? 2,
    {
      // an outcome the database refuses (or whose kind effects throw) fails its own item, nothing else
      onUnwritable: (f, err) => {
        const outcome = Outcome.terminal<Effects>(`the attempt's outcome could not be written: ${shortError(err)}`, {
          errorCode: 'RELAY_OUTCOME_UNWRITABLE',
          error: shortError(err),
          details: {
            refusedOutcome: f.outcome.label ?? f.decision.auditOutcome,
            ...(f.outcome.errorCode ? { refusedErrorCode: f.outcome.errorCode } : {}),
          },
        });
        return { ...f, outcome, decision: decideSettlement(f.job, outcome, config.retry, deps.random) };
      },
    },
  );

  // ---- claiming ---------------------------------------------------------------------------------

  const onJobsOutOfStep = (expected: number, moved: number) =>
    logger.warn({ expected, moved }, 'some claimed rows had no ready ledger job (archived or out of step)');

  async function claimBatch(limit: number): Promise<ClaimedJob<Row>[]> {
    const args = { limit, workerId, now: sqlNow(clock), queue: kind.queue, onJobsOutOfStep };
    // one statement: rows → delivering and their ledger jobs → active, atomically
    if (kind.store.activatesJobs) return kind.store.claim(pool, args);
    return withTransaction(pool, async (db) => {
      const jobs = await kind.store.claim(db, args);
      const jobIds = jobs.map((j) => j.jobId).filter((id): id is string => !!id);
      const moved = await bossJobsActivate(boss, db, kind.queue, jobIds);
      if (moved !== jobIds.length) onJobsOutOfStep(jobIds.length, moved);
      return jobs;
    });
  }

  async function loop(): Promise<void> {
    let failures = 0;
    let lockedStreak = 0;
    while (!stopping) {
      if (!ready) {
        await signal.wait(pollMs); // whenReady notifies; a NOTIFY meanwhile is consumed here
        continue;
      }
      const free = config.concurrency - held.size;
      if (free <= 0) {
        waitingForSlot = true;
        await signal.wait(pollMs);
        waitingForSlot = false;
        continue;
      }
      // at most half the slots per claim: the next claim overlaps the previous batch's outcome write
      const limit = Math.min(free, batchMax, Math.max(1, Math.ceil(config.concurrency / 2)));
      let jobs: ClaimedJob<Row>[];
      try {
        const c0 = claimTimer && performance.now();
        jobs = await claimBatch(limit);
        if (claimTimer) claimTimer.observe((performance.now() - c0!) / 1000);
        failures = 0;
      } catch (err) {
        failures++;
        stats.claimErrors++;
        logger.warn({ err: { message: shortError(err), code: errorCode(err) }, failures }, 'claim failed; retrying');
        // the backoff holds through wake-ups (every NOTIFY would otherwise retry a failing claim at
        // once); only a stop ends it early
        const until = performance.now() + Math.min(DB_RETRY_MAX_MS, DB_RETRY_MIN_MS * 2 ** Math.min(failures - 1, 8));
        for (let left = until - performance.now(); !stopping && left > 0; left = until - performance.now())
          await signal.wait(left);
        continue;
      }
      if (jobs.length > 0) lockedStreak = 0;
      stats.claimed += jobs.length;
      for (const job of jobs) run(job);
      if (jobs.length === limit) continue; // maybe more: claim again at once
      if (stopping) break;
      // new work was announced while we claimed: claim once more at once (consumed, so a notify
      // that finds nothing is not seen again: a claim that needs no I/O would otherwise starve the
      // event loop, one that does would claim in a tight loop)
      if (signal.consume()) continue;
      let waitMs = pollMs;
      try {
        const due = await kind.store.nextDueInMs(pool, sqlNow(clock));
        if (due !== null && (due > 0 || jobs.length > 0)) {
          lockedStreak = 0;
          waitMs = Math.min(waitMs, Math.max(due, 5));
        } else if (due === 0) {
          // due now, yet the claim found nothing: rows locked by another transaction (an outcome
          // being written, or an operator's session holding them); 5 ms, doubling up to the poll
          waitMs = Math.min(waitMs, 5 * 2 ** Math.min(lockedStreak++, 12));
        }
      } catch {
        // the poll still bounds the wait
      }
      await signal.wait(waitMs);
    }
  }

  // ---- running ----------------------------------------------------------------------------------

  function run(job: ClaimedJob<Row>): void {
    const h: Held<Row> = { job, ctl: new AbortController(), phase: 'running', renewedAt: performance.now() };
    held.set(job.claimId, h);
    const startedAt = jsNow(clock);
    const t0 = performance.now();
    let jobLogger: Logger | undefined; // created on first use: pino's child() is not free at thousands of jobs/s
    const ctx = {
      signal: h.ctl.signal,
      workerId,
      get logger() {
        return (jobLogger ??= logger.child({ jobId: job.jobId, id: job.id, attempt: job.attempt }));
      },
    };
    void (async () => {
      let outcome: Outcome<Effects>;
      try {
        outcome = await kind.execute(job, ctx);
      } catch (err) {
        outcome = Outcome.retry<Effects>(undefined, { errorCode: 'RELAY_HANDLER_THREW', error: shortError(err) });
      }
      if (h.phase === 'released') return; // given back at shutdown; its outcome is not ours to write
      h.phase = 'settling';
      const decision = decideSettlement(job, outcome, config.retry, deps.random);
      const durationMs = Math.round(performance.now() - t0);
      await writer.submit({ job, outcome, decision, startedAt, finishedAt: jsNow(clock), durationMs });
      held.delete(job.claimId);
      freed();
    })().catch((err) => {
      // unreachable by construction (execute is caught, submit never rejects); never crash the process
      logger.error({ err }, 'job runner failed unexpectedly');
      held.delete(job.claimId);
      freed();
    });
  }

  function freed(): void {
    if (waitingForSlot) signal.notify();
    if (held.size === 0) for (const w of slotWaiters.splice(0)) w();
  }

  // ---- writing outcomes -------------------------------------------------------------------------

  async function writeOutcomes(batch: Finished<Row, Effects>[]): Promise<void> {
    const now = sqlNow(clock);
    let settled: SettledRow[] = [];
    await withTransaction(pool, async (db) => {
      settled = await kind.store.settle(
        db,
        batch.map((f) => f.decision.settlement),
        now,
      );
      await mirrorJobs(db, settled, batch);
      const landed = new Set(settled.map((s) => s.claimId));
      const byClaim = new Map(settled.map((s) => [s.claimId, s]));
      await attemptsInsert(
        db,
        batch.map((f) => auditRow(f, landed.has(f.job.claimId), byClaim.get(f.job.claimId))),
      );
    });
    const landed = new Set(settled.map((s) => s.claimId));
    // a retry may be due sooner than the loop's current wait (full jitter can give ~0 ms)
    if (settled.some((s) => s.state === 'pending')) signal.notify();
    for (const f of batch) {
      if (!landed.has(f.job.claimId)) {
        stats.fenced++;
        logger.warn(
          { id: f.job.id, jobId: f.job.jobId, outcome: f.decision.auditOutcome },
          'claim was lost before the outcome was written; the redelivery owns the row',
        );
        continue;
      }
      if (f.decision.settlement.state === 'delivered') stats.delivered++;
      else if (f.decision.settlement.state === 'pending') stats.retried++;
      else stats.failed++;
      if (deps.metrics) observeAttempt(deps.metrics, f);
    }
  }

  function observeAttempt(m: QueueMetrics, f: Finished<Row, Effects>): void {
    const state = f.decision.settlement.state;
    m.attemptDuration.observe(
      { queue: kind.queue, outcome: state === 'pending' ? 'retry' : state },
      f.durationMs / 1000,
    );
    if (f.outcome.status) {
      m.httpResponses.inc({ queue: kind.queue, status: String(f.outcome.status) });
      if (f.outcome.status === 429) m.rateLimited.inc({ queue: kind.queue });
    }
  }

  async function mirrorJobs(db: PoolClient, settled: SettledRow[], batch: Finished<Row, Effects>[]): Promise<void> {
    const delivered = settled.filter((s) => s.state === 'delivered' && s.jobId).map((s) => s.jobId!);
    await bossJobsComplete(boss, db, kind.queue, delivered);
    const pending = settled.filter((s) => s.state === 'pending' && s.jobId);
    await bossJobsReschedule(
      boss,
      db,
      kind.queue,
      pending.map((s) => ({ jobId: s.jobId!, startAfter: s.nextAttemptAt! })),
      { outcome: 'retry' },
    );
    const reasons = new Map(batch.map((f) => [f.job.claimId, f.decision.settlement.failedReason ?? 'failed']));
    const failedByReason = new Map<string, string[]>();
    for (const s of settled) {
      if (s.state !== 'failed' || !s.jobId) continue;
      const reason = reasons.get(s.claimId) ?? 'failed';
      failedByReason.set(reason, [...(failedByReason.get(reason) ?? []), s.jobId]);
    }
    for (const [reason, ids] of failedByReason) await bossJobsFail(boss, db, kind.queue, ids, { reason });
  }

  function auditRow(f: Finished<Row, Effects>, landed: boolean, s: SettledRow | undefined): AttemptRow {
    const { outcome, decision } = f;
    const details: Record<string, unknown> = { ...(outcome.details ?? {}) };
    if (decision.delayMs !== undefined) details.delayMs = decision.delayMs;
    if (decision.retryAfterMs !== undefined) details.retryAfterMs = decision.retryAfterMs;
    if (s?.nextAttemptAt && s.state === 'pending') details.nextAttemptAt = s.nextAttemptAt;
    if (decision.settlement.failedReason) details.failedReason = decision.settlement.failedReason;
    if (decision.settlement.uncounted) details.uncounted = true;
    if (!landed) details.fenced = true;
    return {
      subject: kind.store.subject,
      subject_id: f.job.id,
      subject_key: f.job.key,
      attempt: f.job.attempt,
      worker_id: workerId,
      started_at: f.startedAt,
      finished_at: f.finishedAt,
      duration_ms: f.durationMs,
      outcome: outcome.label ?? decision.auditOutcome,
      http_status: outcome.status ?? null,
      error_code: landed ? (outcome.errorCode ?? null) : 'RELAY_CLAIM_LOST',
      error:
        outcome.type === 'delivered'
          ? landed
            ? null
            : 'claim lost before the outcome was written'
          : (outcome.error ?? null),
      details: Object.keys(details).length ? details : null,
    };
  }

  // ---- heartbeat and stale recovery -------------------------------------------------------------

  async function heartbeat(): Promise<void> {
    const claims = [...held.values()]
      .filter((h) => h.phase !== 'released')
      .map((h) => ({ id: h.job.id, claimId: h.job.claimId }));
    if (claims.length === 0) {
      lastHeartbeatOk = performance.now();
      return;
    }
    try {
      const beat = await kind.store.heartbeat(pool, claims, sqlNow(clock));
      const now = performance.now();
      lastHeartbeatOk = now;
      const renewed = new Set(beat.renewed);
      const lockedElsewhere = new Set(beat.held);
      for (const c of claims) {
        const h = held.get(c.claimId);
        if (!h) continue;
        if (renewed.has(c.claimId)) h.renewedAt = now;
        else if (h.phase !== 'running') continue;
        else if (!lockedElsewhere.has(c.claimId)) {
          logger.warn(
            { id: h.job.id, jobId: h.job.jobId },
            'claim lost (recovered as stale elsewhere); aborting the attempt',
          );
          h.ctl.abort(new QueueError('RELAY_CLAIM_LOST', 'claim lost'));
        } else if (now - h.renewedAt > heartbeatLimitMs) {
          // Only this row is at risk: once the other session lets go, a sweep may take it as stale.
          logger.warn(
            { id: h.job.id, jobId: h.job.jobId, silentForMs: Math.round(now - h.renewedAt) },
            'claim locked by another session past the heartbeat limit; aborting the attempt',
          );
          h.ctl.abort(new QueueError('RELAY_CLAIM_LOST', 'row locked by another session; claim about to go stale'));
        }
      }
    } catch (err) {
      const silentFor = performance.now() - lastHeartbeatOk;
      logger.warn({ err: { message: shortError(err) }, silentForMs: Math.round(silentFor) }, 'heartbeat failed');
      // Others will soon treat our claims as stale: stop working on them rather than deliver twice.
      if (silentFor > heartbeatLimitMs) {
        for (const h of held.values())
          if (h.phase === 'running')
            h.ctl.abort(new QueueError('RELAY_CLAIM_LOST', 'heartbeats failing; claim about to go stale'));
      }
    }
  }

  async function sweep(): Promise<number> {
    try {
      const n = await rescuer.rescue(kind.queue, {
        staleMs: thresholdMs,
        maxAttempts: config.retry.maxAttempts,
        workerId,
      });
      stats.recovered += n;
      if (n > 0) signal.notify();
      return n;
    } catch (err) {
      logger.warn({ err: { message: shortError(err) } }, 'stale sweep failed');
      return 0;
    }
  }

  function schedule(): void {
    heartbeatTimer = setInterval(() => {
      if (heartbeatRunning) return;
      heartbeatRunning = heartbeat().finally(() => (heartbeatRunning = undefined));
    }, tickMs);
    sweepTimer = setInterval(() => {
      if (sweepRunning || stopping) return;
      sweepRunning = sweep().finally(() => (sweepRunning = undefined));
    }, tickMs);
  }

  // ---- stopping ---------------------------------------------------------------------------------

  async function releaseRunning(): Promise<void> {
    const toRelease = [...held.values()].filter((h) => h.phase === 'running');
    if (toRelease.length === 0) return;
    for (const h of toRelease) {
      h.phase = 'released';
      h.ctl.abort(new QueueError('RELAY_QUEUE_STOPPED', 'worker stopping'));
    }
    try {
      const now = sqlNow(clock);
      const at = jsNow(clock);
      await withTransaction(pool, async (db) => {
        const rows = await kind.store.release(
          db,
          toRelease.map((h) => ({ id: h.job.id, claimId: h.job.claimId })),
          now,
        );
        await bossJobsReschedule(
          boss,
          db,
          kind.queue,
          rows.filter((r) => r.jobId).map((r) => ({ jobId: r.jobId!, startAfter: r.nextAttemptAt! })),
          { outcome: 'released' },
        );
        const released = new Set(rows.map((r) => r.claimId));
        await attemptsInsert(
          db,
          toRelease
            .filter((h) => released.has(h.job.claimId))
            .map((h) => ({
              subject: kind.store.subject,
              subject_id: h.job.id,
              subject_key: h.job.key,
              attempt: h.job.attempt,
              worker_id: workerId,
              started_at: at,
              finished_at: at,
              duration_ms: null,
              outcome: 'retry' as const,
              http_status: null,
              error_code: 'RELAY_RELEASED',
              error: 'released unfinished at worker shutdown; not counted against the budget',
              details: null,
            })),
        );
        await notifyWork(db, kind.queue);
      });
      stats.released += toRelease.length;
      logger.info({ released: toRelease.length }, 'released unfinished jobs');
    } catch (err) {
      logger.warn(
        { err: { message: shortError(err) }, count: toRelease.length },
        'could not release unfinished jobs; stale recovery will return them',
      );
    } finally {
      for (const h of toRelease) held.delete(h.job.claimId);
    }
  }

  function allDone(timeoutMs: number): Promise<boolean> {
    if (held.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), Math.max(0, timeoutMs));
      slotWaiters.push(() => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  async function doStop(timeoutMs: number): Promise<void> {
    stopping = true;
    unsubscribe?.();
    signal.notify();
    const deadline = performance.now() + timeoutMs;
    await loopDone;
    if (!(await allDone(deadline - performance.now()))) {
      await releaseRunning();
      // outcomes already being written get a short grace; past it they stay delivering (stale recovery)
      if (!(await allDone(Math.max(1_000, deadline - performance.now())))) {
        writer.abandon();
        logger.warn(
          { inFlight: held.size },
          'gave up writing some outcomes at shutdown; stale recovery will redeliver them',
        );
        held.clear();
      }
    }
    if (heartbeatTimer) clearInterval(heartbeatTimer);
    if (sweepTimer) clearInterval(sweepTimer);
    await heartbeatRunning;
    await sweepRunning;
    await writer.idle();
    slotWaiters = [];
  }

  return {
    queue: kind.queue,
    get inFlight() {
      return held.size;
    },
    stats,
    heartbeatLimitMs,
    get heartbeatAgeMs() {
      return performance.now() - lastHeartbeatOk;
    },
    get outcomeBacklog() {
      return writer.pending;
    },
    get running() {
      return started && !stopping && !crashed;
    },
    start() {
      if (started || stopping) return;
      started = true;
      unsubscribe = deps.listener?.subscribe(kind.queue, () => signal.notify());
      void kind.whenReady?.then(() => {
        ready = true;
        signal.notify();
      });
      schedule();
      loopDone = loop().catch((err) => {
        crashed = true;
        logger.error({ err }, 'claim loop crashed');
        deps.onCrash?.(err);
      });
      sweepRunning = sweep().finally(() => (sweepRunning = undefined)); // claims of workers that died before we started
    },
    stop(opts = {}) {
      if (!stopPromise)
        stopPromise = started ? doStop(opts.timeoutMs ?? 25_000) : ((stopping = true), Promise.resolve());
      return stopPromise;
    },
    wake() {
      signal.notify();
    },
    recoverStaleNow: () => sweep(),
  };
}
