/**
 * Composes a worker for a process: pool, the job ledger (never started: its statements run on
 * our transactions), every enabled job kind, and the engine. Used by `tg-relay worker` and by the
 * all-in-one `tg-relay start`.
 */
import { errorMessage } from '../errors';
import { Config, workPollIntervalMs } from '../config';
import { assertBossSchemaVersion, createBoss, createPool, migrationStatus, timeoutsFromConfig } from '../db';
import type { Registry } from 'prom-client';
import type { Pool } from 'pg';
import type { Logger } from '../observability/logger';
import { observeWorker, rateLimitMetrics } from '../observability/metrics';
import { databaseProblem, ReadyCheck } from '../observability/metrics-server';
import { createCaptureKind } from '../captures/deliver';
import { AnyJobKind, createWorker, newWorkerId } from '../queue';
import { createFleetOutboundKind, createOutboundKindFromConfig } from '../outbound/worker-kind';
import { createAlertFlusher } from '../outbound/alert-flush';
import { createDispatchKindFromConfig } from '../dispatch/worker-kind';
import { createPeriodicPrune } from '../retention/periodic';
import { createBroadcastFeederFromConfig, createFleetBroadcastFeeder } from '../broadcasts/feeder';
import { replyHandoff, wakeOutboundOnDispatch, wakeQueue } from './local-wake';
import { parseTokenKey, watchBots, type BotWatch } from '../bots';
import { createFleetDispatchKind } from '../dispatch/fleet-kind';
import { createFleetCaptureKind } from '../captures/fleet-kind';
import { normalizeChatId } from '../outbound/message';

export interface WorkerRuntime {
  workerId: string;
  queues: string[];
  /** Resolves (with why) if a claim loop dies; `tg-relay worker` and `start` then exit 70. */
  died: Promise<string>;
  /** Stops claiming, finishes in-flight work within `timeoutMs` or releases it, closes the pool. Idempotent. */
  stop(timeoutMs: number): Promise<void>;
  /** Ready: every claim loop runs, the database answers, heartbeats are fresh (METRICS_PORT /health/ready). */
  readonly ready: () => Promise<ReadyCheck>;
  /** Claim `queue` now (as its NOTIFY would): a component of the same process committed work for it. */
  wake(queue: string): void;
}

export async function startWorkerRuntime(opts: {
  config: Config;
  databaseUrl: string;
  logger: Logger;
  metrics?: Registry;
}): Promise<WorkerRuntime> {
  const { config, logger } = opts;
  const workerId = newWorkerId();
  const timeouts = timeoutsFromConfig(config);
  const poolMode = config.DB_POOL_MODE;
  const pool = createPool(opts.databaseUrl, {
    max: config.DB_POOL_MAX,
    applicationName: 'tg-relay:worker',
    timeouts,
    poolMode,
  });
  const kinds: AnyJobKind[] = [];
  const closers: (() => Promise<void>)[] = [];
  const closeAll = async () => {
    for (const k of kinds) await k.close?.();
    for (const close of closers) await close();
    await pool.end().catch(() => undefined);
  };
  try {
    const status = await migrationStatus(pool);
    if (!status.current) {
      throw Object.assign(
        new Error(`the database lacks migrations ${status.pending.join(', ')}: run "tg-relay migrate" first`),
        {
          code: 'RELAY_QUEUE_NOT_MIGRATED',
        },
      );
    }
    await assertBossSchemaVersion(pool);
    const boss = createBoss(opts.databaseUrl, { max: 1, applicationName: 'tg-relay:worker', timeouts, poolMode });

    // pushed one by one: a kind that fails to start leaves the earlier ones in `kinds`, closed by closeAll
    const fleet = !config.TELEGRAM_BOT_TOKEN && !!config.TOKEN_ENCRYPTION_KEY;
    // no token, a registry key: serve the registered bots
    const watch: BotWatch | undefined = fleet
      ? await watchBots({
          pool,
          listenUrl: poolMode === 'transaction' ? undefined : opts.databaseUrl,
          key: parseTokenKey(config.TOKEN_ENCRYPTION_KEY as string),
          logger,
        })
      : undefined;
    const replies = watch ? undefined : replyHandoff();
    if (watch) {
      closers.push(() => watch.stop());
      addFleetJobKinds(kinds, config, { pool, logger, watch, metrics: opts.metrics });
    } else await addJobKindsFromConfig(kinds, config, { pool, logger, metrics: opts.metrics, replies });

    let resolveDied!: (why: string) => void;
    const died = new Promise<string>((r) => (resolveDied = r));
    const worker = createWorker({
      onCrash: (queue, err) => resolveDied(`the ${queue} claim loop crashed: ${errorMessage(err) ?? String(err)}`),
      pool,
      boss,
      logger,
      databaseUrl: opts.databaseUrl,
      kinds,
      workerId,
      // a transaction pooler cannot hold LISTEN (it would listen on a borrowed session and hear
      // nothing): behind one, idle loops find new work by polling every WORK_POLL_INTERVAL
      listen: poolMode !== 'transaction',
      pollIntervalMs: workPollIntervalMs(config),
      config: {
        concurrency: config.WORKER_CONCURRENCY,
        staleAfterMs: config.STALE_AFTER,
        retry: { baseMs: config.RETRY_BASE, capMs: config.RETRY_CAP, maxAttempts: config.RETRY_MAX_ATTEMPTS },
      },
    });
    if (opts.metrics) observeWorker(opts.metrics, worker);
    // a single bot's replies go straight to its outbound loop; a fleet's outbound claim is shared
    // between the bots (each under its own cap), so their replies wait for it, woken at once
    if (!replies?.attach(worker)) wakeOutboundOnDispatch(worker);
    // a fleet's claim leaves out bots at WORKER_BOT_CONCURRENCY: an outcome may free one's slot, so
    // claim again now instead of at the next poll (a lone busy bot would otherwise wait for it)
    if (fleet) worker.events.on('settled', (e) => wakeQueue(worker, e.queue));
    await worker.start();
    // retention (docs/retention.md): one replica at a time prunes every PRUNE_EVERY
    const prune = config.PRUNE_EVERY
      ? createPeriodicPrune({
          pool,
          logger,
          everyMs: config.PRUNE_EVERY,
          prune: { retentionMs: config.RETENTION, retentionFailedMs: config.RETENTION_FAILED, workerId },
        })
      : undefined;
    prune?.start();
    // the summaries of alert windows a storm left open (libs/outbound/alert-flush.ts), every bot's
    const alertFlush =
      (config.TELEGRAM_BOT_TOKEN || watch) && config.META_ALERT_ON_DROP
        ? createAlertFlusher({ pool, logger, windowMs: config.ALERT_COALESCE })
        : undefined;
    alertFlush?.start();
    // staged broadcast recipients into relay.outbound at the pace of sending (libs/broadcasts/feeder.ts)
    const feeder = config.TELEGRAM_BOT_TOKEN
      ? createBroadcastFeederFromConfig(config, { pool, logger })
      : watch && createFleetBroadcastFeeder(config, { pool, logger, bots: watch });
    feeder?.start();
    const queues = kinds.map((k) => k.queue);
    logger.info(
      { workerId, queues, concurrency: config.WORKER_CONCURRENCY, staleAfterMs: config.STALE_AFTER },
      kinds.length ? 'worker started' : 'worker started with no job kind enabled',
    );
    let stopping: Promise<void> | undefined;
    let dead: string | undefined;
    void died.then((why) => (dead = why));
    const ready = async (): Promise<ReadyCheck> => {
      // a dead loop is named even while the process drains on its way out
      if (stopping) return { ready: false, reasons: [dead ?? 'stopping'] };
      const reasons: string[] = [];
      for (const k of worker.kinds) {
        if (!k.running) reasons.push(`the ${k.queue} claim loop is not running`);
        // a claim whose heartbeat is this old is about to be taken as stale (the loop aborts its jobs then)
        else if (k.heartbeatAgeMs > k.heartbeatLimitMs)
          reasons.push(
            `the ${k.queue} heartbeat is ${(k.heartbeatAgeMs / 1000).toFixed(1)} s old (limit ${k.heartbeatLimitMs / 1000} s)`,
          );
      }
      const loops = worker.kinds.map((k) => ({
        queue: k.queue,
        running: k.running,
        heartbeat_age_seconds: k.heartbeatAgeMs / 1000,
        in_flight: k.inFlight,
      }));
      const db = await databaseProblem(pool);
      if (db) reasons.push(db);
      return { ready: reasons.length === 0, reasons, worker_id: workerId, loops };
    };
    return {
      workerId,
      queues,
      died,
      ready,
      wake: (queue) => wakeQueue(worker, queue),
      stop: (timeoutMs) =>
        (stopping ??= (async () => {
          await Promise.all([worker.stop({ timeoutMs }), prune?.stop(), alertFlush?.stop(), feeder?.stop()]);
          await closeAll();
        })()),
    };
  } catch (err) {
    // a bad BOT_HANDLERS or an unmigrated database stops the worker now (open pools would keep the process alive)
    await closeAll();
    throw err;
  }
}

/** Adds the job kinds this worker's configuration enables to `kinds`; a disabled one is named in a warning. */
async function addJobKindsFromConfig(
  kinds: AnyJobKind[],
  config: Config,
  deps: {
    pool: Pool;
    logger: Logger;
    metrics?: Registry;
    replies?: ReturnType<typeof replyHandoff>;
  },
): Promise<void> {
  const { pool, logger } = deps;
  if (config.CAPTURE_URL) {
    kinds.push(
      createCaptureKind({
        url: config.CAPTURE_URL,
        timeoutMs: config.CAPTURE_TIMEOUT,
        opsChatId: config.OPS_CHAT_ID ?? null,
      }),
    );
  } else {
    logger.warn(
      'CAPTURE_URL is not set: capture delivery is DISABLED; captures stay pending until a worker with CAPTURE_URL runs',
    );
  }
  if (config.TELEGRAM_BOT_TOKEN) {
    kinds.push(
      await createOutboundKindFromConfig(config, {
        pool,
        logger,
        token: config.TELEGRAM_BOT_TOKEN,
        rateLimitMetrics: deps.metrics && rateLimitMetrics(deps.metrics),
      }),
    );
  } else {
    logger.warn(
      { unset: 'TELEGRAM_BOT_TOKEN' },
      'no bot token: outbound delivery is DISABLED; outbound messages stay pending until a worker with a token runs',
    );
  }
  if (config.BOT_HANDLERS) {
    kinds.push(await createDispatchKindFromConfig(config, { logger, pool, sendReplies: deps.replies?.send }));
  } else {
    logger.warn(
      'BOT_HANDLERS is not set: update dispatch is DISABLED; inbox updates stay pending until a worker with BOT_HANDLERS runs',
    );
  }
}

/** The job kinds of a worker serving the registered bots (relay.bots) instead of one token's bot. */
function addFleetJobKinds(
  kinds: AnyJobKind[],
  config: Config,
  deps: { pool: Pool; logger: Logger; watch: BotWatch; metrics?: Registry },
): void {
  const { pool, logger, watch } = deps;
  kinds.push(
    createFleetOutboundKind(config, {
      pool,
      bots: watch,
      rateLimitMetrics: deps.metrics && rateLimitMetrics(deps.metrics),
    }),
  );
  // always: a bot registered with a capture URL at run time reaches the claim within seconds
  kinds.push(
    createFleetCaptureKind({
      bots: watch,
      captureUrl: config.CAPTURE_URL,
      timeoutMs: config.CAPTURE_TIMEOUT,
      opsChatId: config.OPS_CHAT_ID ? (normalizeChatId(config.OPS_CHAT_ID) ?? null) : null,
      perBot: config.WORKER_BOT_CONCURRENCY,
      logger,
    }),
  );
  kinds.push(
    createFleetDispatchKind({
      bots: watch,
      pool,
      logger,
      apiRoot: config.TELEGRAM_API_ROOT,
      handlerTimeoutMs: config.HANDLER_TIMEOUT,
      ordering: config.DISPATCH_ORDERING,
      replyMode: config.REPLY_MODE,
      sessionTtlMs: config.SESSION_TTL,
      maxUploadBytes: config.OUTBOUND_MAX_UPLOAD,
      perBotConcurrency: config.WORKER_BOT_CONCURRENCY,
    }),
  );
  logger.info(
    { bots: watch.bots().size, perBotConcurrency: config.WORKER_BOT_CONCURRENCY, replyMode: config.REPLY_MODE },
    'serving the registered bots: outbound messages and broadcasts of every enabled bot, captures of those with a collector, update dispatch of those with a handlers module',
  );
}
