/**
 * `tg-relay admin`: serves the admin API (libs/admin) and the dashboard until SIGTERM/SIGINT.
 */
import { loadConfig } from '../../libs/config';
import { resolveDatabase } from '../../libs/db';
import { onShutdownSignal } from '../../libs/lifecycle/shutdown';
import { createLogger } from '../../libs/observability/logger';
import { startAdminRuntime } from '../../libs/runtime/admin';

export async function run(_args: string[] = []): Promise<number | void> {
  const config = loadConfig();
  const logger = createLogger({ level: config.LOG_LEVEL }).child({ app: 'admin' });
  const db = await resolveDatabase(config, logger);
  let admin;
  try {
    admin = await startAdminRuntime({ config, databaseUrl: db.url, logger });
  } catch (err) {
    await db.stop();
    throw err;
  }
  if (admin.generated) {
    process.stderr.write(
      `\n  !! ADMIN_TOKEN is not set: the admin API serves only this machine (${config.ADMIN_HOST}) with a token made for this process:\n` +
        `  !!   curl -H 'Authorization: Bearer ${admin.generated.token}' ${admin.address}/v1/stats\n` +
        `  !!   dashboard: ${admin.address}/ (paste the token once)\n` +
        '  !! It changes at every start. Set ADMIN_TOKEN (or ADMIN_TOKENS=label:token,…) to choose one.\n\n',
    );
  }
  onShutdownSignal(
    async () => {
      await admin.stop();
      await db.stop();
    },
    logger,
    config,
  );
  return new Promise<never>(() => undefined); // the shutdown handler exits the process
}
