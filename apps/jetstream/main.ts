import { loadConfig } from '../../libs/config';
import { resolveDatabase } from '../../libs/db';
import { checkJetStreamConfig, startJetStreamRuntime } from '../../libs/jetstream/runtime';
import { onShutdownSignal } from '../../libs/lifecycle/shutdown';
import { createLogger } from '../../libs/observability/logger';

/**
 * `tg-relay jetstream`: consume NATS_STREAM into relay.outbound until SIGTERM/SIGINT (docs/jetstream.md),
 * then finish the batch in hand, give buffered messages back to NATS and exit 0.
 */
export async function run(): Promise<number> {
  const config = loadConfig();
  checkJetStreamConfig(config);
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'jetstream' });
  const db = await resolveDatabase(config, logger);
  let rt;
  try {
    rt = await startJetStreamRuntime({ config, databaseUrl: db.url, logger });
  } catch (err) {
    await db.stop();
    throw err;
  }
  onShutdownSignal(async () => {
    await rt.stop();
    await db.stop();
  }, logger);
  return new Promise<never>(() => undefined); // the shutdown handler exits the process
}
