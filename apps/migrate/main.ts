import { botIdFromToken, loadConfig } from '../../libs/config';
import { createPool, migrateAll, migrationDatabaseUrl, resolveDatabase } from '../../libs/db';
import { createLogger } from '../../libs/observability/logger';
import { normalizeChatId } from '../../libs/outbound/message';
import { outboundSettingsSave } from '../../libs/outbound/queries';

/**
 * `tg-relay migrate`: apply migrations and exit 0 (a no-op when the schema is current). With
 * TELEGRAM_BOT_TOKEN set it also registers the bot (and OPS_CHAT_ID as the default chat) in
 * relay.outbound_settings, as every worker does at start, so `relay.enqueue_outbound` and
 * `enqueueOutbound` work from a service before any worker has run.
 */
export async function run(): Promise<number> {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'migrate' });
  const db = await resolveDatabase(config, logger);
  try {
    const { applied } = await migrateAll(await migrationDatabaseUrl(db, config, logger), logger);
    logger.info({ applied }, applied.length ? 'migrations applied' : 'schema is current');
    if (config.TELEGRAM_BOT_TOKEN) {
      const botId = botIdFromToken(config.TELEGRAM_BOT_TOKEN);
      const defaultChatId = config.OPS_CHAT_ID ? (normalizeChatId(config.OPS_CHAT_ID) ?? null) : null;
      const pool = createPool(db.url, { max: 1, applicationName: 'tg-relay:migrate', poolMode: config.DB_POOL_MODE });
      try {
        await outboundSettingsSave(pool, { botId, defaultChatId });
      } finally {
        await pool.end();
      }
      logger.info({ botId, defaultChatId }, 'bot registered for outbound messages');
    }
    return 0;
  } finally {
    await db.stop();
  }
}
