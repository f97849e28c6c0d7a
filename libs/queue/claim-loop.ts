import { performance } from 'node:perf_hooks';
import type { Pool, PoolClient } from 'pg';
import type { JobLedger } from '../db/boss';
import { withTransaction } from '../db/pool';
import { errorCode } from '../errors';
import { backoffMs, type Backoff } from '../lifecycle/backoff';
import { Lifecycle } from '../lifecycle/lifecycle';
import type { Logger } from '../observability/logger';
import { createAttemptExecutor } from './attempt-executor';
import { createClaimIn, jobsOutOfStep } from './claim-in';
import type { BackoffPolicy } from './backoff';
import { bossJobsActivate } from './boss-jobs';
import { createClaimKeeper } from './claim-keeper';
import { Clock, sqlNow } from './clock';
import { createWorkerEvents, type WorkerEvents } from './events';
import { shortError } from './errors';
import { HeldClaims } from './held-claims';
import type { ClaimedJob, JobKind } from './job-kind';
import { createRescuer, rescueTargetOf, type Rescuer } from './rescuer';
import { createSettler } from './settler';
import { createOutcomeRouting } from './outcome-routing';
import { shutDownWorker } from './shutdown';
import { WakeSignal } from './signal';
import type { WakeListener } from './wake-listener';

/** Safety-net poll while idle: NOTIFY normally wakes the loop long before this. */
export const POLL_INTERVAL_MS_DEFAULT = 2_000;
/** Most jobs claimed in one statement (claims also take at most the free slots). */
export const CLAIM_BATCH_MAX_DEFAULT = 500;

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
  /** Where claims and settled attempts are told (createWorker shares one); default: this kind's own. */
  events?: WorkerEvents;
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

function zeroStats(): KindWorkerStats {
  return { claimed: 0, delivered: 0, retried: 0, failed: 0, fenced: 0, recovered: 0, released: 0, claimErrors: 0 };
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
  /** The bots its store serves now, for a store shared between bots (ClaimStore.servedBots). */
  readonly servedBots?: () => readonly string[];
  /** Started, not stopping, and the loop has not ended by an error. */
  readonly running: boolean;
  start(): void;
  /** Stop claiming, let in-flight jobs finish for up to `timeoutMs`, then release the rest. Idempotent. */
  stop(opts?: { timeoutMs?: number }): Promise<void>;
  /** Claim now (as a NOTIFY would). */
  wake(): void;
  /**
   * Claims the rows of `keys` the kind may claim now, up to the free slots, in the caller's open
   * transaction on `db` (which has just written them), and runs them once it commits; a ROLLBACK
   * gives their slots back. Rows it leaves (not a chat's head, rate-limited, no free slot) are left
   * to the claim loop, woken after the commit. Does nothing for a store without `claimKeys`.
   * Returns how many rows it claimed.
   */
  claimIn(db: PoolClient, keys: readonly string[]): Promise<number>;
  /** One stale sweep now; returns how many claims were recovered. */
  recoverStaleNow(): Promise<number>;
}

/** Claim-error retry: deterministic doubling, so a failing claim is retried at a steady spacing. */
const CLAIM_RETRY: Backoff = { baseMs: 100, capMs: 5_000, jitter: 'none' };
/** Due rows the claim did not get (locked by another transaction): 5 ms, doubling; the poll bounds it. */
const LOCKED_RETRY: Backoff = { baseMs: 5, capMs: 20_480, jitter: 'none' };

interface ClaimLoopDeps<Row> {
  pool: Pool;
  boss: JobLedger;
  logger: Logger;
  workerId: string;
  clock?: Clock;
  concurrency: number;
  pollMs: number;
  batchMax: number;
  claims: { readonly size: number; readonly running: number };
  wake: WakeSignal;
  stats: Pick<KindWorkerStats, 'claimed' | 'claimErrors'>;
  events: WorkerEvents;
  /** Hands a claimed job to its attempt. */
  run: (job: ClaimedJob<Row>) => void;
}

/**
 * Claiming and slot counting: claims due rows in batches (up to the free slots), in one statement
 * with their ledger jobs; loops straight on while batches come back full (a backlog drains without
 * sleeping), then waits for a NOTIFY, the next due row, or the safety poll.
 */
class ClaimLoop<Row, Effects> {
  /** Set while the loop waits for a free slot: a freed slot wakes it. */
  waitingForSlot = false;
  ready: boolean;
  private lockedStreak = 0;

  constructor(
    private readonly kind: JobKind<Row, Effects>,
    private readonly deps: ClaimLoopDeps<Row>,
  ) {
    this.ready = !kind.whenReady;
  }

  private async claimBatch(limit: number): Promise<ClaimedJob<Row>[]> {
    const { kind, deps } = this;
    const onJobsOutOfStep = jobsOutOfStep(deps.logger);
    const args = { limit, workerId: deps.workerId, now: sqlNow(deps.clock), queue: kind.queue, onJobsOutOfStep };
    // one statement: rows → delivering and their ledger jobs → active, atomically
    if (kind.store.activatesJobs) return kind.store.claim(deps.pool, args);
    return withTransaction(deps.pool, async (db) => {
      const jobs = await kind.store.claim(db, args);
      const jobIds = jobs.map((j) => j.jobId).filter((id): id is string => !!id);
      const moved = await bossJobsActivate(deps.boss, db, kind.queue, jobIds);
      if (moved !== jobIds.length) onJobsOutOfStep(jobIds.length, moved);
      return jobs;
    });
  }

  async run(signal: AbortSignal): Promise<void> {
    const { deps } = this;
    const { wake, stats, pollMs } = deps;
    let failures = 0;
    while (!signal.aborted) {
      if (!this.ready) {
        await wake.wait(pollMs); // whenReady notifies; a NOTIFY meanwhile is consumed here
        continue;
      }
      // attempts running at once are capped by the concurrency; finished ones waiting for their
      // outcome write by as many again, so a slow outcome write holds the claims back
      const free = Math.min(deps.concurrency - deps.claims.running, 2 * deps.concurrency - deps.claims.size);
      if (free <= 0) {
        this.waitingForSlot = true;
        await wake.wait(pollMs);
        this.waitingForSlot = false;
        continue;
      }
      // every free slot: the outcome writes of finished attempts no longer hold slots back
      const limit = Math.min(free, deps.batchMax);
      let jobs: ClaimedJob<Row>[];
      try {
        const c0 = performance.now();
        jobs = await this.claimBatch(limit);
        deps.events.emit('claimed', { queue: this.kind.queue, durationMs: performance.now() - c0, count: jobs.length });
        failures = 0;
      } catch (err) {
        failures++;
        stats.claimErrors++;
        deps.logger.warn(
          { err: { message: shortError(err), code: errorCode(err) }, failures },
          'claim failed; retrying',
        );
        // the backoff holds through wake-ups (every NOTIFY would otherwise retry a failing claim at
        // once); only a stop ends it early
        const until = performance.now() + backoffMs(CLAIM_RETRY, failures);
        for (let left = until - performance.now(); !signal.aborted && left > 0; left = until - performance.now())
          await wake.wait(left);
        continue;
      }
      if (jobs.length > 0) this.lockedStreak = 0;
      stats.claimed += jobs.length;
      for (const job of jobs) deps.run(job);
      if (jobs.length === limit) continue; // maybe more: claim again at once
      if (signal.aborted) break;
      // new work was announced while we claimed: claim once more at once (consumed, so a notify
      // that finds nothing is not seen again: a claim that needs no I/O would otherwise starve the
      // event loop, one that does would claim in a tight loop)
      if (wake.consume()) continue;
      await wake.wait(await this.idleWaitMs(jobs.length > 0));
    }
  }

  /** How long to wait for work after a claim that did not fill its batch. */
  private async idleWaitMs(claimedAny: boolean): Promise<number> {
    const { kind, deps } = this;
    let waitMs = deps.pollMs;
    try {
      const due = await kind.store.nextDueInMs(deps.pool, sqlNow(deps.clock));
      if (due !== null && (due > 0 || claimedAny)) {
        this.lockedStreak = 0;
        waitMs = Math.min(waitMs, Math.max(due, 5));
      } else if (due === 0) {
        // due now, yet the claim found nothing: rows locked by another transaction (an outcome
        // being written, or an operator's session holding them); 5 ms, doubling up to the poll
        waitMs = Math.min(waitMs, backoffMs(LOCKED_RETRY, ++this.lockedStreak));
      }
    } catch {
      // the poll still bounds the wait
    }
    return waitMs;
  }
}

/**
 * The worker of one job kind in one process, put together from its parts:
 *
 * - the claim loop claims due rows while slots are free;
 * - the attempt executor runs each claimed job; up to `concurrency` at once;
 * - the settler writes outcomes in group-committed batches (domain row, ledger job and audit row in
 *   one transaction, fenced by claim id);
 * - the claim keeper heartbeats its claims, aborts jobs whose claim was lost, and sweeps stale
 *   claims of dead workers;
 * - shutdown stops claiming, lets attempts finish for a while and releases the rest;
 * - every database error is caught, logged and retried with backoff: the loop never crashes.
 */
export function createKindWorker<Row, Effects>(kind: JobKind<Row, Effects>, deps: KindWorkerDeps): KindWorker {
  const { pool, boss, workerId, config, clock } = deps;
  const logger = deps.logger.child({ queue: kind.queue });
  const { tickMs, thresholdMs } = staleTiming(config.staleAfterMs);
  const wake = new WakeSignal();
  const stats = zeroStats();
  const life = new Lifecycle(`the claim loop of ${kind.queue}`);
  const events = deps.events ?? createWorkerEvents(logger);
  let stopPromise: Promise<void> | undefined;
  let crashed = false;
  let unsubscribe: (() => void) | undefined;
  const claims = new HeldClaims<Row>(() => {
    if (loop.waitingForSlot) wake.notify();
  });
  const rescuer = deps.rescuer ?? createRescuer({ pool, boss, logger, clock, targets: [rescueTargetOf(kind)] });
  const keeper = createClaimKeeper(kind, {
    pool,
    logger,
    workerId,
    clock,
    claims,
    rescuer,
    tickMs,
    thresholdMs,
    stats,
    maxAttempts: config.retry.maxAttempts,
    onRecovered: () => wake.notify(),
    stopping: () => life.signal.aborted,
  });
  const settler = createSettler(kind, {
    pool,
    boss,
    logger,
    workerId,
    clock,
    stats,
    events,
    onRetrySettled: () => wake.notify(),
  });
  const outcomes = createOutcomeRouting<Row, Effects>({
    settler,
    logger,
    retry: config.retry,
    random: deps.random,
    writers: deps.outcomeWriters ?? 2,
  });
  const writer = outcomes.writer;
  const executor = createAttemptExecutor(kind, { workerId, logger, clock, retry: config.retry, random: deps.random });
  function run(job: ClaimedJob<Row>): void {
    const h = claims.add(job);
    void (async () => {
      const finished = await executor.run(h);
      if (!finished) return;
      // an attempt on its own transaction holds a connection until its outcome commits on it
      if (!finished.outcome.transaction) claims.releaseSlot(job.claimId);
      await outcomes.submit(finished);
      claims.free(job.claimId);
    })().catch((err) => {
      // unreachable by construction (execute is caught, submit never rejects); never crash the process
      logger.error({ err }, 'job runner failed unexpectedly');
      claims.free(job.claimId);
    });
  }

  const inTransaction = createClaimIn(kind, {
    claims,
    concurrency: config.concurrency,
    workerId,
    clock,
    logger,
    events,
    stats,
    open: (): boolean => loop.ready && life.running && !crashed,
    run,
    wake: () => wake.notify(),
  });
  const loop: ClaimLoop<Row, Effects> = new ClaimLoop(kind, {
    pool,
    boss,
    logger,
    workerId,
    clock,
    claims: inTransaction.slots,
    wake,
    stats,
    run,
    concurrency: config.concurrency,
    pollMs: deps.pollIntervalMs ?? POLL_INTERVAL_MS_DEFAULT,
    batchMax: deps.claimBatchMax ?? CLAIM_BATCH_MAX_DEFAULT,
    events,
  });

  return {
    queue: kind.queue,
    get inFlight() {
      return claims.size;
    },
    stats,
    heartbeatLimitMs: keeper.heartbeatLimitMs,
    get heartbeatAgeMs() {
      return keeper.heartbeatAgeMs;
    },
    get outcomeBacklog() {
      return writer.pending;
    },
    get servedBots() {
      return kind.store.servedBots;
    },
    get running() {
      return life.running && !crashed;
    },
    start() {
      if (life.state !== 'new') return;
      unsubscribe = deps.listener?.subscribe(kind.queue, () => wake.notify());
      void kind.whenReady?.then(() => {
        loop.ready = true;
        wake.notify();
      });
      life.start(async (signal) => {
        try {
          await loop.run(signal);
        } catch (err) {
          crashed = true;
          logger.error({ err }, 'claim loop crashed');
          deps.onCrash?.(err);
          throw err;
        }
      });
      keeper.start();
    },
    stop(opts = {}) {
      if (stopPromise) return stopPromise;
      if (life.state === 'new') return (stopPromise = life.stop());
      const deadline = performance.now() + (opts.timeoutMs ?? 25_000);
      unsubscribe?.();
      stopPromise = life.stop(() =>
        shutDownWorker(kind, { pool, boss, logger, workerId, clock, claims, stats, events, writer, keeper }, deadline),
      );
      wake.notify();
      return stopPromise;
    },
    wake() {
      wake.notify();
    },
    claimIn: inTransaction.claimIn,
    recoverStaleNow: () => keeper.sweep(),
  };
}
