import pino from 'pino';
import type { ParsedArgs } from '../cli/main';
import { loadConfig } from '../../libs/config';
import { createPool, resolveDatabase } from '../../libs/db';
import { createLogger } from '../../libs/observability/logger';
import { runPrune } from '../../libs/retention/prune';

/**
 * `tg-relay prune [--dry-run]`: one retention pass; prints what it deleted per table as one JSON
 * line. The CLI has already refused any other flag (exit 2).
 */
export async function run(_args: string[], parsed: ParsedArgs): Promise<number> {
  const dryRun = parsed.values['dry-run'] === true;
  const config = loadConfig();
  // logs go to stderr: stdout carries only the one JSON line (cron mails it, scripts parse it)
  const logger = createLogger({ level: config.LOG_LEVEL, destination: pino.destination({ fd: 2, sync: true }) }).child({
    app: 'prune',
  });
  const db = await resolveDatabase(config, logger);
  const pool = createPool(db.url, { max: 2, applicationName: 'tg-relay:prune', poolMode: config.DB_POOL_MODE });
  try {
    const result = await runPrune(pool, {
      retentionMs: config.RETENTION,
      retentionFailedMs: config.RETENTION_FAILED,
      dryRun,
      trigger: 'cli',
      logger,
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } finally {
    await pool.end();
    await db.stop();
  }
}
