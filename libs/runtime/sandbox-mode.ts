/**
 * Sandbox mode of `tg-relay start` (no TELEGRAM_BOT_TOKEN): the bundled Bot API sandbox and
 * collector stand in for Telegram and the capture service, and the example bot handles updates.
 */
import path from 'node:path';
import { botIdFromToken, Config } from '../config';
import type { Pool } from '../db';
import type { Logger } from '../observability/logger';
import {
  BotApiSandbox,
  Collector,
  DEFAULT_FIRST_UPDATE_ID,
  SANDBOX_DEFAULT_TOKEN,
  startSandboxPeers,
} from '../sandbox';

// extensionless: examples/echo-bot.ts from the sources, dist/examples/echo-bot.js from the build
export const EXAMPLE_BOT = path.resolve(__dirname, '../../examples/echo-bot');
/** The chat the printed `sandbox send` command and the dashboard's chat panel write from. */
export const SANDBOX_CHAT_ID = 1001;

export interface SandboxMode {
  sandbox: BotApiSandbox;
  collector: Collector;
  /** The configuration with the sandbox filled in where the operator left values unset. */
  config: Config;
  /** Resolves with why once the sandbox or the collector stops by itself. */
  died: Promise<string>;
  stop(): Promise<void>;
}

/**
 * Starts the sandbox peers. The sandbox keeps its updates in memory, so after a restart its
 * update_ids must continue above the stored cursor: otherwise the first getUpdates (offset =
 * stored next_offset) would confirm — and so lose — the new messages.
 */
export async function startSandboxMode(config: Config, logger: Logger, pool: Pool): Promise<SandboxMode> {
  const { rows } = await pool.query<{ next_offset: string /* bigint, as text */ }>(
    'select next_offset from relay.cursor where bot_id = $1',
    [botIdFromToken(SANDBOX_DEFAULT_TOKEN)],
  );
  const nextOffset = rows.length ? Number(rows[0].next_offset) : 0;
  const peers = await startSandboxPeers({
    host: config.SANDBOX_HOST,
    port: config.SANDBOX_PORT,
    collectorPort: config.SANDBOX_COLLECTOR_PORT,
    firstUpdateId: Math.max(DEFAULT_FIRST_UPDATE_ID, nextOffset),
    logger,
  });
  const { sandbox, collector } = peers;
  const effective: Config = {
    ...config,
    TELEGRAM_BOT_TOKEN: SANDBOX_DEFAULT_TOKEN,
    TELEGRAM_API_ROOT: sandbox.url,
    CAPTURE_URL: config.CAPTURE_URL ?? collector.captureUrl,
    BOT_HANDLERS: config.BOT_HANDLERS ?? EXAMPLE_BOT,
    // handler replies go through the relay, so the echo shows up in relay.outbound and /v1/stats
    REPLY_MODE: 'outbound',
  };
  const died = Promise.race([sandbox.died, collector.died]);
  return { sandbox, collector, config: effective, died, stop: () => peers.stop() };
}
