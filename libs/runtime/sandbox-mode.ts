/**
 * Sandbox mode of `tg-relay start` (no TELEGRAM_BOT_TOKEN): the bundled Bot API sandbox and
 * collector stand in for Telegram and the capture service, and the example bot handles updates.
 */
import path from 'node:path';
import { botIdFromToken, Config } from '../config';
import type { Pool } from '../db';
import type { Logger } from '../observability/logger';
import { BotApiSandbox, Collector, createBotApiSandbox, createCollector, DEFAULT_FIRST_UPDATE_ID, SANDBOX_DEFAULT_TOKEN } from '../sandbox';

export const EXAMPLE_BOT = path.resolve(__dirname, '../../examples/echo-bot.ts');
/** The chat the printed `sandbox send` command and the dashboard's chat panel write from. */
export const SANDBOX_CHAT_ID = 1001;

export interface SandboxMode {
  sandbox: BotApiSandbox;
  collector: Collector;
  /** The configuration with the sandbox filled in where the operator left values unset. */
  config: Config;
  stop(): Promise<void>;
}

function listenError(err: unknown, what: string, variable: string, host: string, port: number): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const reason = code === 'EADDRINUSE' ? 'address already in use' : (err as Error).message;
  return new Error(`cannot start the ${what} on ${host}:${port}: ${reason} (set ${variable} to another port, or 0 for any free one)`);
}

/**
 * Starts the sandbox peers. The sandbox keeps its updates in memory, so after a restart its
 * update_ids must continue above the stored cursor: otherwise the first getUpdates (offset =
 * stored next_offset) would confirm — and so lose — the new messages.
 */
export async function startSandboxMode(config: Config, logger: Logger, pool: Pool): Promise<SandboxMode> {
  const { rows } = await pool.query('select next_offset from relay.cursor where bot_id = $1', [botIdFromToken(SANDBOX_DEFAULT_TOKEN)]);
  const nextOffset = rows.length ? Number(rows[0].next_offset) : 0;
  const sandbox = createBotApiSandbox({
    host: config.SANDBOX_HOST,
    port: config.SANDBOX_PORT,
    firstUpdateId: Math.max(DEFAULT_FIRST_UPDATE_ID, nextOffset),
    logger: logger.child({ component: 'sandbox' }),
  });
  const collector = createCollector({ host: config.SANDBOX_HOST, port: config.SANDBOX_COLLECTOR_PORT, logger: logger.child({ component: 'collector' }) });
  try {
    await sandbox.start();
  } catch (err) {
    throw listenError(err, 'Bot API sandbox', 'SANDBOX_PORT', config.SANDBOX_HOST, config.SANDBOX_PORT);
  }
  try {
    await collector.start();
  } catch (err) {
    await sandbox.stop();
    throw listenError(err, 'sandbox collector', 'SANDBOX_COLLECTOR_PORT', config.SANDBOX_HOST, config.SANDBOX_COLLECTOR_PORT);
  }
  const effective: Config = {
    ...config,
    TELEGRAM_BOT_TOKEN: SANDBOX_DEFAULT_TOKEN,
    TELEGRAM_API_ROOT: sandbox.url,
    CAPTURE_URL: config.CAPTURE_URL ?? collector.captureUrl,
    BOT_HANDLERS: config.BOT_HANDLERS ?? EXAMPLE_BOT,
    // handler replies go through the relay, so the echo shows up in relay.outbound and /v1/stats
    REPLY_MODE: 'outbound',
  };
  let stopped = false;
  return {
    sandbox,
    collector,
    config: effective,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await Promise.allSettled([sandbox.stop(), collector.stop()]);
    },
  };
}
