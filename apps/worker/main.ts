import { loadConfig } from '../../libs/config';
import { createBoss, createPool, migrationStatus, resolveDatabase } from '../../libs/db';
import { onShutdownSignal } from '../../libs/lifecycle/shutdown';
import { createLogger } from '../../libs/observability/logger';
import { createCaptureKind } from '../../libs/captures/deliver';
import { createWorker, JobKind, newWorkerId } from '../../libs/queue';
import { createOutboundKindFromConfig } from '../../libs/outbound/worker-kind';
import { createDispatchKindFromConfig } from '../../libs/dispatch/worker-kind';

/**
 * `tg-relay worker`: claim loops for every enabled job kind until SIGTERM/SIGINT, then drain
 * (stop claiming, finish in-flight work within SHUTDOWN_TIMEOUT, release the rest) and exit 0.
 */
export async function run(): Promise<number> {
  const config = loadConfig();
  const workerId = newWorkerId();
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'worker' });
  const db = await resolveDatabase(config, logger);
  const pool = createPool(db.url, { max: 10, applicationName: 'tg-relay:worker' });
  try {
    const status = await migrationStatus(pool);
    if (!status.current) {
      throw Object.assign(new Error(`the database lacks migrations ${status.pending.join(', ')}: run "tg-relay migrate" first`), { code: 'RELAY_QUEUE_NOT_MIGRATED' });
    }
  } catch (err) {
    await pool.end();
    await db.stop();
    throw err;
  }
  // Only complete/fail with { db } are used: the instance is never started (no pool, no maintenance).
  const boss = createBoss(db.url, { max: 1, applicationName: 'tg-relay:worker' });

  const kinds: JobKind<any>[] = [];
  if (config.CAPTURE_URL) {
    kinds.push(createCaptureKind({ url: config.CAPTURE_URL, timeoutMs: config.CAPTURE_TIMEOUT }));
  } else {
    logger.warn('CAPTURE_URL is not set: capture delivery is DISABLED; captures stay pending until a worker with CAPTURE_URL runs');
  }
  if (config.TELEGRAM_BOT_TOKEN) {
    kinds.push(await createOutboundKindFromConfig(config, { pool, logger, token: config.TELEGRAM_BOT_TOKEN }));
  } else {
    logger.warn('TELEGRAM_BOT_TOKEN is not set: outbound delivery is DISABLED; outbound messages stay pending until a worker with a token runs');
  }
  if (config.BOT_HANDLERS) {
    try {
      kinds.push(await createDispatchKindFromConfig(config, { boss, logger }));
    } catch (err) {
      // a bad BOT_HANDLERS stops the worker now (open pools would keep the process alive)
      for (const k of kinds) (k as { close?: () => void }).close?.();
      await pool.end().catch(() => undefined);
      await db.stop();
      throw err;
    }
  } else {
    logger.warn('BOT_HANDLERS is not set: update dispatch is DISABLED; inbox updates stay pending until a worker with BOT_HANDLERS runs');
  }

  const worker = createWorker({
    pool,
    boss,
    logger,
    databaseUrl: db.url,
    kinds,
    workerId,
    config: {
      concurrency: config.WORKER_CONCURRENCY,
      staleAfterMs: config.STALE_AFTER,
      retry: { baseMs: config.RETRY_BASE, capMs: config.RETRY_CAP, maxAttempts: config.RETRY_MAX_ATTEMPTS },
    },
  });

  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  onShutdownSignal(async () => {
    await worker.stop({ timeoutMs: config.SHUTDOWN_TIMEOUT });
    await pool.end().catch(() => undefined);
    await db.stop();
    resolveDone();
  }, logger);

  await worker.start();
  logger.info(
    {
      workerId,
      queues: kinds.map((k) => k.queue),
      concurrency: config.WORKER_CONCURRENCY,
      staleAfterMs: config.STALE_AFTER,
    },
    kinds.length ? 'worker started' : 'worker started with no job kind enabled',
  );
  await done; // onShutdownSignal exits the process once draining is done
  return 0;
}
