import { loadConfig } from '../../libs/config';
import { migrateAll, resolveDatabase } from '../../libs/db';
import { createLogger } from '../../libs/observability/logger';

/** `tg-relay migrate`: apply migrations and exit 0 (a no-op when the schema is current). */
export async function run(): Promise<number> {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'migrate' });
  const db = await resolveDatabase(config, logger);
  try {
    const { applied } = await migrateAll(db.url, logger);
    logger.info({ applied }, applied.length ? 'migrations applied' : 'schema is current');
    return 0;
  } finally {
    await db.stop();
  }
}
