import { describeConfig, loadConfig } from '../../libs/config';
import { migrateAll, resolveDatabase } from '../../libs/db';
import { NotImplementedError } from '../../libs/lifecycle/not-implemented';
import { createLogger } from '../../libs/observability/logger';

/** `tg-relay start`: everything in one process. */
export async function run(): Promise<number> {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'start' });
  process.stdout.write(`tg-relay start — effective configuration:\n${describeConfig(config).map((l) => `  ${l}`).join('\n')}\n`);
  const db = await resolveDatabase(config, logger);
  try {
    await migrateAll(db.url, logger);
    process.stdout.write(`database ready (${db.kind}), schema current\n`);
    throw new NotImplementedError('tg-relay start', 'poller and workers land in later issues');
  } finally {
    await db.stop();
  }
}
