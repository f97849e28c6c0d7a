import { loadConfig } from '../../libs/config';
import { resolveDatabase } from '../../libs/db';
import { EXIT_COMPONENT_DIED } from '../../libs/lifecycle/exit-codes';
import { onShutdownSignal, shutdownDeadlineMs } from '../../libs/lifecycle/shutdown';
import { waitAtMost } from '../../libs/lifecycle/timers';
import { createLogger } from '../../libs/observability/logger';
import { startMetricsEndpoint } from '../../libs/runtime/metrics-endpoint';
import { startWorkerRuntime } from '../../libs/runtime/worker';

/**
 * `tg-relay worker`: claim loops for every enabled job kind until SIGTERM/SIGINT, then drain
 * (stop claiming, finish in-flight work within SHUTDOWN_TIMEOUT, release the rest) and exit 0.
 * The signal handlers are installed before anything starts: a SIGTERM during startup (database,
 * handlers module) lets the startup finish, then drains as usual, instead of killing the process
 * mid-start (a second signal still forces exit 1). A claim loop that dies ends the process with 70
 * after draining the others: a worker without one of its queues would look alive while that queue
 * piles up.
 */
export async function run(): Promise<number> {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'worker' });
  const startup = (async () => {
    const metrics = await startMetricsEndpoint(config, logger);
    const db = await resolveDatabase(config, logger).catch(async (err) => {
      await metrics?.server.close();
      throw err;
    });
    let worker;
    try {
      worker = await startWorkerRuntime({ config, databaseUrl: db.url, logger, metrics: metrics?.registry });
    } catch (err) {
      await metrics?.server.close();
      await db.stop();
      throw err;
    }
    metrics?.server.addCheck('worker', worker.ready);
    return {
      died: worker.died,
      stop: async () => {
        await worker.stop(config.SHUTDOWN_TIMEOUT);
        await metrics?.server.close();
        await db.stop();
      },
    };
  })();
  // installed in the same tick (a signal is only handled on a later turn of the event loop)
  onShutdownSignal(
    async () => {
      // a startup that failed has closed what it opened; run() reports its error and exits with its code
      const started = await startup.catch(() => new Promise<never>(() => undefined));
      await started.stop();
    },
    logger,
    config,
  );
  const started = await startup;
  const why = await started.died;
  process.stderr.write(`tg-relay worker: ${why}; draining the other queues and exiting ${EXIT_COMPONENT_DIED}\n`);
  logger.fatal({ exitCode: EXIT_COMPONENT_DIED }, 'a claim loop died: tg-relay worker exits');
  await waitAtMost(started.stop(), shutdownDeadlineMs(config));
  return EXIT_COMPONENT_DIED;
}
