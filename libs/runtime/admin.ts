/**
 * Composes the admin API for a process: pool, the job ledger (started), the Fastify app and
 * its listener. Used by `tg-relay admin` and by the all-in-one `tg-relay start`.
 */
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { buildAdminApp, BuildAdminAppOptions } from '../admin/app';
import { AdminToken, resolveAdminTokens } from '../admin/auth';
import { pendingUpdatesCache, webhookInfoFetcher } from '../admin/webhook-info';
import { botIdFromToken, Config } from '../config';
import { assertBossSchemaVersion, createBoss, createPool, timeoutsFromConfig } from '../db';
import type { Logger } from '../observability/logger';
import { Lifecycle } from '../lifecycle/lifecycle';

export interface AdminRuntime {
  app: FastifyInstance;
  /** `http://host:port` the API listens on. */
  address: string;
  tokens: AdminToken[];
  /** Set when ADMIN_TOKEN was unset on a loopback host: a token made for this process. */
  generated?: AdminToken;
  /** Resolves (with why) if the HTTP server closes or fails without stop(); `tg-relay start` then exits non-zero. */
  died: Promise<string>;
  /** Closes the listener, the job ledger and the pool. Idempotent. */
  stop(): Promise<void>;
}

export async function startAdminRuntime(opts: {
  config: Config;
  databaseUrl: string;
  logger: Logger;
  sandbox?: BuildAdminAppOptions['sandbox'];
}): Promise<AdminRuntime> {
  const { config, logger } = opts;
  // decided before anything starts: refuses a non-loopback host without a token
  const { tokens, generated } = resolveAdminTokens(config);
  const timeouts = timeoutsFromConfig(config);
  const poolMode = config.DB_POOL_MODE;
  const pool = createPool(opts.databaseUrl, { max: 8, applicationName: 'tg-relay:admin', timeouts, poolMode });
  const boss = createBoss(opts.databaseUrl, { max: 2, applicationName: 'tg-relay:admin', timeouts, poolMode });
  let app: FastifyInstance | undefined;
  const life = new Lifecycle('the admin API server');
  const stop = () =>
    life.stop(async () => {
      await app?.close();
      await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
      await pool.end().catch(() => undefined);
    });
  try {
    await assertBossSchemaVersion(pool); // before boss.start(): the ledger's own check only says "requires migrations"
    await boss.start();
    const botId = config.TELEGRAM_BOT_TOKEN ? botIdFromToken(config.TELEGRAM_BOT_TOKEN) : undefined;
    const pendingUpdates = config.TELEGRAM_BOT_TOKEN
      ? pendingUpdatesCache(webhookInfoFetcher(config.TELEGRAM_API_ROOT, config.TELEGRAM_BOT_TOKEN, botId!), { logger })
      : undefined;
    app = await buildAdminApp({
      pool,
      boss,
      config,
      logger,
      tokens,
      pendingUpdates,
      botIds: botId ? [botId] : undefined,
      processMetrics: true,
      sandbox: opts.sandbox,
    });
    const address = await app.listen({ host: config.ADMIN_HOST, port: config.ADMIN_PORT });
    const server = app.server;
    let ended = '';
    life.start(async (signal) => {
      ended = await serverEnded(server, signal);
    });
    // the lifecycle's own reason is generic; start reports how the server ended
    const died = life.died.then(() => ended);
    logger.info({ address, tokens: tokens.map((t) => t.label), docs: `${address}/docs` }, 'admin API listening');
    return { app, address, tokens, generated, died, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Why the HTTP server ended by itself (closed or failed); '' once `signal` aborts, since stop() closes it. */
function serverEnded(server: Server, signal: AbortSignal): Promise<string> {
  return new Promise((resolve) => {
    server.once('close', () => resolve('the admin API server closed'));
    server.once('error', (err) => resolve(`the admin API server failed: ${err.message}`));
    signal.addEventListener('abort', () => resolve(''), { once: true });
  });
}
