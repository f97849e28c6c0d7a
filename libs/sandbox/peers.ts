/**
 * The sandbox's two servers started together, as `tg-relay sandbox` and the sandbox mode of
 * `tg-relay start` both run them. A port that cannot be bound is reported with the variable to change.
 */
import type { Logger } from '../observability/logger';
import { BotApiSandbox, createBotApiSandbox } from './bot-api';
import { Collector, createCollector } from './collector';
import { errorCode, errorMessage } from '../errors';

export interface SandboxPeers {
  sandbox: BotApiSandbox;
  collector: Collector;
  /** Stops both servers. Idempotent. A closure (no `this`): safe to pass on detached. */
  stop: () => Promise<void>;
}

function listenError(err: unknown, what: string, variable: string, host: string, port: number): Error {
  const code = errorCode(err);
  const reason =
    code === 'EADDRINUSE'
      ? 'address already in use'
      : code === 'EACCES'
        ? 'permission denied'
        : (errorMessage(err) ?? String(err));
  return new Error(
    `cannot start the ${what} on ${host}:${port} (${variable}): ${reason}; set ${variable} to another port, or 0 for any free one`,
  );
}

export async function startSandboxPeers(opts: {
  host: string;
  port: number;
  collectorPort: number;
  firstUpdateId?: number;
  logger?: Logger;
}): Promise<SandboxPeers> {
  const sandbox = createBotApiSandbox({
    host: opts.host,
    port: opts.port,
    firstUpdateId: opts.firstUpdateId,
    logger: opts.logger?.child({ component: 'sandbox' }),
  });
  const collector = createCollector({
    host: opts.host,
    port: opts.collectorPort,
    logger: opts.logger?.child({ component: 'collector' }),
  });
  try {
    await sandbox.start();
  } catch (err) {
    throw listenError(err, 'Bot API sandbox', 'SANDBOX_PORT', opts.host, opts.port);
  }
  try {
    await collector.start();
  } catch (err) {
    await sandbox.stop();
    throw listenError(err, 'sandbox collector', 'SANDBOX_COLLECTOR_PORT', opts.host, opts.collectorPort);
  }
  let stopped = false;
  return {
    sandbox,
    collector,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await Promise.allSettled([sandbox.stop(), collector.stop()]);
    },
  };
}
