import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import { Lifecycle } from '../lifecycle/lifecycle';
import { every } from '../lifecycle/timers';
import { Clock, sqlNow } from './clock';
import { QueueError, shortError } from './errors';
import type { HeldClaims } from './held-claims';
import type { JobKind } from './job-kind';
import type { Rescuer } from './rescuer';

/**
 * Keeps this worker's claims alive and takes back the claims of dead workers: heartbeats the held
 * claims, aborts attempts whose claim is lost or about to go stale, and sweeps stale claims, both
 * every tick.
 */
export interface ClaimKeeper {
  /** Milliseconds since the claims' last successful heartbeat (or since it found none to renew). */
  readonly heartbeatAgeMs: number;
  /** The heartbeat age past which the claims count as lost and their attempts are aborted. */
  readonly heartbeatLimitMs: number;
  /** Starts the heartbeat and sweep timers, and one sweep now (once: later calls do nothing). */
  start(): void;
  /** One stale sweep now; returns how many claims were recovered. */
  sweep(): Promise<number>;
  /** Stops the timers and waits for a heartbeat or sweep under way. Idempotent; safe before start. */
  stop(): Promise<void>;
}

export interface ClaimKeeperDeps<Row> {
  pool: Pool;
  logger: Logger;
  workerId: string;
  clock?: Clock;
  claims: HeldClaims<Row>;
  rescuer: Rescuer;
  tickMs: number;
  /** Heartbeat age at which a claim counts as stale. */
  thresholdMs: number;
  maxAttempts: number;
  stats: { recovered: number };
  /** Claims came back: there is work to claim. */
  onRecovered: () => void;
  /** True once the worker stops: no new sweeps. */
  stopping: () => boolean;
}

export function createClaimKeeper<Row, Effects>(kind: JobKind<Row, Effects>, deps: ClaimKeeperDeps<Row>): ClaimKeeper {
  const { pool, logger, clock, claims, tickMs, thresholdMs } = deps;
  const heartbeatLimitMs = thresholdMs - tickMs;
  let lastHeartbeatOk = performance.now();

  function abortRunning(reason: string): void {
    for (const h of claims.values()) if (h.phase === 'running') h.ctl.abort(new QueueError('RELAY_CLAIM_LOST', reason));
  }

  async function heartbeat(): Promise<void> {
    const mine = [...claims.values()]
      .filter((h) => h.phase !== 'released')
      .map((h) => ({ id: h.job.id, claimId: h.job.claimId }));
    if (mine.length === 0) {
      lastHeartbeatOk = performance.now();
      return;
    }
    try {
      const beat = await kind.store.heartbeat(pool, mine, sqlNow(clock));
      const now = performance.now();
      lastHeartbeatOk = now;
      const renewed = new Set(beat.renewed);
      const lockedElsewhere = new Set(beat.held);
      for (const c of mine) {
        const h = claims.get(c.claimId);
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
      if (silentFor > heartbeatLimitMs) abortRunning('heartbeats failing; claim about to go stale');
    }
  }

  async function sweep(): Promise<number> {
    try {
      const n = await deps.rescuer.rescue(kind.queue, {
        staleMs: thresholdMs,
        maxAttempts: deps.maxAttempts,
        workerId: deps.workerId,
      });
      deps.stats.recovered += n;
      if (n > 0) deps.onRecovered();
      return n;
    } catch (err) {
      logger.warn({ err: { message: shortError(err) } }, 'stale sweep failed');
      return 0;
    }
  }

  // One body for both timers: stop() ends them through the lifecycle's signal and waits for a
  // heartbeat or sweep under way. A sweep tick is skipped while the previous sweep (the start one
  // too) still runs, and so is a heartbeat while the previous heartbeat runs.
  const life = new Lifecycle(`the claim keeper of ${kind.queue}`);
  const onError = (err: unknown) => logger.warn({ err: { message: shortError(err) } }, 'claim keeper tick failed');
  const run = async (signal: AbortSignal): Promise<void> => {
    await Promise.all([
      every(tickMs, heartbeat, { signal, onError }).done,
      // immediate: the claims of workers that died before we started
      every(tickMs, () => (deps.stopping() ? undefined : sweep()), { signal, onError, immediate: true }).done,
    ]);
  };

  return {
    heartbeatLimitMs,
    get heartbeatAgeMs() {
      return performance.now() - lastHeartbeatOk;
    },
    start() {
      life.start(run);
    },
    sweep,
    stop: () => life.stop(),
  };
}
