/** An in-process worker engine on a test database, delivering captures to a sandbox collector. */
import { createBoss, Pool } from '../../libs/db';
import { createCaptureKind } from '../../libs/captures/deliver';
import { Clock, createWorker, EngineConfig, Worker } from '../../libs/queue';
import { createLogger } from '../../libs/observability/logger';

export const TEST_ENGINE_CONFIG: EngineConfig = {
  concurrency: 8,
  staleAfterMs: 30_000,
  retry: { baseMs: 1_000, capMs: 300_000, maxAttempts: 12 },
};

export function testLogger() {
  return createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}

export function startCaptureWorker(opts: {
  url: string;
  pool: Pool;
  captureUrl: string;
  config?: Partial<EngineConfig>;
  clock?: Clock;
  random?: () => number;
  timeoutMs?: number;
  pollIntervalMs?: number;
  listen?: boolean;
  workerId?: string;
}): Worker & { boss: ReturnType<typeof createBoss> } {
  const boss = createBoss(opts.url, { max: 1 });
  const worker = createWorker({
    pool: opts.pool,
    boss,
    logger: testLogger(),
    databaseUrl: opts.url,
    kinds: [createCaptureKind({ url: opts.captureUrl, timeoutMs: opts.timeoutMs ?? 5_000, clock: opts.clock })],
    config: { ...TEST_ENGINE_CONFIG, ...opts.config, retry: { ...TEST_ENGINE_CONFIG.retry, ...opts.config?.retry } },
    clock: opts.clock,
    random: opts.random,
    pollIntervalMs: opts.pollIntervalMs,
    listen: opts.listen,
    workerId: opts.workerId,
  });
  return Object.assign(worker, { boss });
}
