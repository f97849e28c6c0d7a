import { loadConfig } from '../../libs/config';
import { resolveDatabase } from '../../libs/db';
import { checkJetStreamConfig, startJetStreamRuntime } from '../../libs/jetstream/runtime';
import { onShutdownSignal } from '../../libs/lifecycle/shutdown';
import { createLogger } from '../../libs/observability/logger';
import { startMetricsEndpoint } from '../../libs/runtime/metrics-endpoint';

/**
 * `tg-relay jetstream`: consume NATS_STREAM into relay.outbound until SIGTERM/SIGINT (docs/jetstream.md),
 * then finish the batch in hand, give buffered messages back to NATS and exit 0.
 */
export async function run(): Promise<number> {
  const config = loadConfig();
  checkJetStreamConfig(config);
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'jetstream' });
  const metrics = await startMetricsEndpoint(config, logger);
  const db = await resolveDatabase(config, logger).catch(async (err) => {
    await metrics?.server.close();
    throw err;
  });
  let rt;
  try {
    rt = await startJetStreamRuntime({ config, databaseUrl: db.url, logger, metrics: metrics?.registry });
  } catch (err) {
    await metrics?.server.close();
    await db.stop();
    throw err;
  }
  metrics?.server.addCheck('jetstream', rt.ready);
  onShutdownSignal(
    async () => {
      await rt.stop();
      await metrics?.server.close();
      await db.stop();
    },
    logger,
    config,
  );
  return new Promise<never>(() => undefined); // the shutdown handler exits the process
}
