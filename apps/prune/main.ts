import pino from 'pino';
import { loadConfig } from '../../libs/config';
import { createPool, resolveDatabase } from '../../libs/db';
import { createLogger } from '../../libs/observability/logger';
import { runPrune } from '../../libs/retention/prune';

/** `tg-relay prune [--dry-run]`: one retention pass; prints what it deleted per table as one JSON line. */
export async function run(args: string[]): Promise<number> {
  const unknown = args.filter((a) => a !== '--dry-run');
  if (unknown.length) {
    process.stderr.write(`tg-relay prune: unknown argument "${unknown[0]}"\nusage: tg-relay prune [--dry-run]\n`);
    return 2;
  }
  const config = loadConfig();
  // logs go to stderr: stdout carries only the one JSON line (cron mails it, scripts parse it)
  const logger = createLogger({ level: config.LOG_LEVEL, destination: pino.destination({ fd: 2, sync: true }) }).child({ app: 'prune' });
  const db = await resolveDatabase(config, logger);
  const pool = createPool(db.url, { max: 2, applicationName: 'tg-relay:prune' });
  try {
    const result = await runPrune(pool, { retentionMs: config.RETENTION, retentionFailedMs: config.RETENTION_FAILED, dryRun: args.includes('--dry-run'), trigger: 'cli', logger });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } finally {
    await pool.end();
    await db.stop();
  }
}
