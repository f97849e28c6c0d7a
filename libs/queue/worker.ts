import os from 'node:os';
import crypto from 'node:crypto';
import type { JobLedger } from '../db/boss';
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import { createKindWorker, EngineConfig, KindWorker } from './claim-loop';
import type { Clock } from './clock';
import { createWorkerEvents, type WorkerEvents } from './events';
import type { AnyJobKind } from './job-kind';
import { createRescuer, rescueTargetOf } from './rescuer';
import { createWakeListener, WakeListener } from './wake-listener';

/** `host:pid:random` — unique per process, readable in relay.*.worker_id and relay.attempts. */
export function newWorkerId(): string {
  return `${os.hostname()}:${process.pid}:${crypto.randomBytes(3).toString('hex')}`;
}

export interface Worker {
  readonly workerId: string;
  readonly kinds: KindWorker[];
  /** Claims and settled attempts of every kind, for observers (metrics: `observeWorker`). */
  readonly events: WorkerEvents;
  start(): Promise<void>;
  /** Stops every kind (see KindWorker.stop) and the listener. Idempotent; safe before start. */
  stop(opts?: { timeoutMs?: number }): Promise<void>;
}

/**
 * A worker process's engine: one claim loop per job kind, sharing a pool and one LISTEN connection.
 * `createWorker({ pool, boss, logger, databaseUrl, kinds, config })`.
 */
export function createWorker(opts: {
  pool: Pool;
  boss: JobLedger;
  logger: Logger;
  /** For the dedicated LISTEN connection. */
  databaseUrl: string;
  kinds: AnyJobKind[];
  config: EngineConfig;
  workerId?: string;
  clock?: Clock;
  random?: () => number;
  pollIntervalMs?: number;
  claimBatchMax?: number;
  outcomeWriters?: number;
  /** Set false to rely on polling only (tests of the safety net). */
  listen?: boolean;
  /** A claim loop ended by an error (see KindWorkerDeps.onCrash). */
  onCrash?: (queue: string, err: unknown) => void;
}): Worker {
  const workerId = opts.workerId ?? newWorkerId();
  const logger = opts.logger.child({ workerId });
  const events = createWorkerEvents(logger);
  const listener: WakeListener | undefined =
    opts.listen === false || opts.kinds.length === 0
      ? undefined
      : createWakeListener({ url: opts.databaseUrl, logger, applicationName: 'tg-relay:worker-listen' });
  // one rescuer for the process: each claim loop sweeps its own table through it
  const rescuer = createRescuer({
    pool: opts.pool,
    boss: opts.boss,
    logger,
    clock: opts.clock,
    targets: opts.kinds.map(rescueTargetOf),
  });
  const kinds = opts.kinds.map((kind) =>
    createKindWorker(kind, {
      pool: opts.pool,
      boss: opts.boss,
      logger,
      workerId,
      config: opts.config,
      clock: opts.clock,
      random: opts.random,
      listener,
      pollIntervalMs: opts.pollIntervalMs,
      claimBatchMax: opts.claimBatchMax,
      outcomeWriters: opts.outcomeWriters,
      events,
      rescuer,
      onCrash: opts.onCrash && ((err) => opts.onCrash!(kind.queue, err)),
    }),
  );
  let started = false;
  let stopPromise: Promise<void> | undefined;
  return {
    workerId,
    kinds,
    events,
    start() {
      if (started || stopPromise) return Promise.resolve();
      started = true;
      for (const k of kinds) k.start();
      // Not awaited: the loops start with a claim and poll anyway, the listener connects and retries
      // on its own, and it wakes every loop once connected (work committed meanwhile). A LISTEN
      // connection that hangs must not hold the worker's startup (and with it a SIGTERM) hostage.
      void listener?.start();
      return Promise.resolve();
    },
    stop(stopOpts = {}) {
      if (!stopPromise) {
        stopPromise = (async () => {
          await Promise.all(kinds.map((k) => k.stop(stopOpts)));
          await listener?.stop();
        })();
      }
      return stopPromise;
    },
  };
}
