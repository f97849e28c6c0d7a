import { loadConfig } from '../../libs/config';
import { resolveDatabase } from '../../libs/db';
import { onShutdownSignal } from '../../libs/lifecycle/shutdown';
import { createLogger } from '../../libs/observability/logger';
import { startWorkerRuntime } from '../../libs/runtime/worker';

/**
 * `tg-relay worker`: claim loops for every enabled job kind until SIGTERM/SIGINT, then drain
 * (stop claiming, finish in-flight work within SHUTDOWN_TIMEOUT, release the rest) and exit 0.
 */
export async function run(): Promise<number> {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'worker' });
  const db = await resolveDatabase(config, logger);
  let worker;
  try {
    worker = await startWorkerRuntime({ config, databaseUrl: db.url, logger });
  } catch (err) {
    await db.stop();
    throw err;
  }
  onShutdownSignal(async () => {
    await worker.stop(config.SHUTDOWN_TIMEOUT);
    await db.stop();
  }, logger);
  return new Promise<never>(() => undefined); // the shutdown handler exits the process
}
