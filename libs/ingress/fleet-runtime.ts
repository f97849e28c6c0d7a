/**
 * Composes fleet ingress for `tg-relay poller` started without TELEGRAM_BOT_TOKEN: pool, job ledger,
 * the bot registry's watcher (tokens decrypted with TOKEN_ENCRYPTION_KEY), with INGRESS=webhook the
 * one webhook server (WEBHOOK_HOST:WEBHOOK_PORT), and the fleet loop (fleet.ts), which serves up to
 * POLLER_MAX_BOTS registered bots, by polling or by webhook, and shares them with the other fleet
 * pollers of the database.
 */
import type { Registry } from 'prom-client';
import { parseTokenKey, watchBots, type BotWatch, type TokenKey } from '../bots';
import type { Config } from '../config';
import { ConfigError } from '../config/errors';
import { createBoss } from '../db/boss';
import { assertBossSchemaVersion, BossSchemaMismatchError } from '../db/boss-schema';
import { createPool, timeoutsFromConfig } from '../db/pool';
import { errorMessage } from '../errors';
import type { Logger } from '../observability/logger';
import { databaseProblem, type ReadyCheck } from '../observability/metrics-server';
import { createFleet, type Fleet, type FleetStatus, type FleetUnitFactory } from './fleet';
import { pollUnits, webhookUnits, type FleetUnitOptions } from './fleet-units';
import { newOwnerId, type IngressExit } from './runtime';
import { waitForSchema } from './schema-wait';
import { fleetWebhookKeys } from './webhook-keys';
import { createWebhookServer, type WebhookServer } from './webhook-server';

export type FleetConfig = Pick<
  Config,
  | 'TELEGRAM_API_ROOT'
  | 'INGRESS'
  | 'DECODE_POLICY'
  | 'LEASE_TTL'
  | 'POLL_TIMEOUT'
  | 'DISPATCH_UNAUTHORIZED'
  | 'TOKEN_ENCRYPTION_KEY'
  | 'POLLER_MAX_BOTS'
  | 'DB_POOL_MAX'
  | 'WEBHOOK_HOST'
  | 'WEBHOOK_PORT'
  | 'WEBHOOK_PUBLIC_URL'
> &
  Partial<
    Pick<
      Config,
      | 'DB_STATEMENT_TIMEOUT'
      | 'DB_LOCK_TIMEOUT'
      | 'DB_IDLE_IN_TRANSACTION_TIMEOUT'
      | 'DB_POOL_MODE'
      | 'OPS_CHAT_ID'
      | 'WEBHOOK_SECRET'
    >
  >;

export interface FleetRuntime {
  owner: string;
  /** Resolves when fleet ingress ends: stop(), or a refusal or failure to start. */
  done: Promise<IngressExit>;
  stop(): Promise<void>;
  /** Ready while the fleet loop runs and the database answers; a bot's own trouble is listed, not fatal. */
  readonly ready: () => Promise<ReadyCheck>;
  /** The fleet loop's view, once started. */
  status(): FleetStatus | null;
  onStored(fn: () => void): () => void;
}

/** What a poller without a token needs (a ConfigError names the variable). */
export function checkFleetConfig(
  config: Pick<FleetConfig, 'INGRESS' | 'TOKEN_ENCRYPTION_KEY' | 'WEBHOOK_PUBLIC_URL'>,
): void {
  const problems: { variable: string; problem: string }[] = [];
  if (!config.TOKEN_ENCRYPTION_KEY)
    problems.push({
      variable: 'TOKEN_ENCRYPTION_KEY',
      problem:
        'required by a poller without TELEGRAM_BOT_TOKEN: it serves the registered bots (tg-relay bots add), whose tokens are encrypted with it',
    });
  if (config.INGRESS === 'webhook' && !config.WEBHOOK_PUBLIC_URL)
    problems.push({
      variable: 'WEBHOOK_PUBLIC_URL',
      problem:
        "required when INGRESS=webhook (this poller's public base URL Telegram calls; each bot's own path is appended)",
    });
  if (problems.length)
    throw new ConfigError(
      `invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.problem}`).join('\n')}`,
      problems,
    );
}

interface FleetRuntimeOptions {
  config: FleetConfig;
  databaseUrl: string;
  logger: Logger;
  owner?: string;
  metrics?: Registry;
  /** The fleet loop's period (tests). */
  tickMs?: number;
}

export function startFleetIngress(opts: FleetRuntimeOptions): Promise<FleetRuntime> {
  // a configuration the checks refuse rejects the promise (callers await it), it does not throw
  return new Promise((resolve) => resolve(createFleetIngress(opts)));
}

function createFleetIngress(opts: FleetRuntimeOptions): FleetRuntime {
  const { config } = opts;
  checkFleetConfig(config);
  const key = parseTokenKey(config.TOKEN_ENCRYPTION_KEY as string);
  const owner = opts.owner ?? newOwnerId();
  const logger = opts.logger.child({ component: 'ingress', owner });
  const timeouts = timeoutsFromConfig(config);
  const poolMode = config.DB_POOL_MODE;
  const pool = createPool(opts.databaseUrl, {
    max: config.DB_POOL_MAX,
    applicationName: 'tg-relay:ingress',
    timeouts,
    poolMode,
  });
  const boss = createBoss(opts.databaseUrl, { max: 1, applicationName: 'tg-relay:ingress', timeouts, poolMode });
  const abort = new AbortController();
  const stored = new Set<() => void>();
  let resolveDone!: (e: IngressExit) => void;
  const done = new Promise<IngressExit>((r) => (resolveDone = r));
  let ended: IngressExit | null = null;
  void done.then((e) => (ended = e));
  let watch: BotWatch | undefined;
  let fleet: Fleet | undefined;
  const server =
    config.INGRESS === 'webhook'
      ? createWebhookServer({ host: config.WEBHOOK_HOST, port: config.WEBHOOK_PORT, logger })
      : undefined;
  if (server && config.WEBHOOK_SECRET)
    logger.warn(
      'WEBHOOK_SECRET is not used by a poller without TELEGRAM_BOT_TOKEN: each bot has its own secret, derived from TOKEN_ENCRYPTION_KEY',
    );

  const begin = async () => {
    if (!(await waitForSchema(pool, logger, abort.signal))) return resolveDone({ reason: 'stopped' });
    await assertBossSchemaVersion(pool);
    watch = await watchBots({
      pool,
      // a transaction pooler cannot hold LISTEN: the watcher's timer alone then
      listenUrl: poolMode === 'transaction' ? undefined : opts.databaseUrl,
      key,
      logger,
    });
    // listening before any unit can register a webhook, so Telegram's first delivery is answered
    await server?.listen();
    fleet = createFleet({
      pool,
      owner,
      logger,
      bots: watch,
      apiRoot: config.TELEGRAM_API_ROOT,
      maxBots: config.POLLER_MAX_BOTS,
      leaseTtlMs: config.LEASE_TTL,
      unit: unitsFor(config, { pool, boss, owner }, key, server),
      metrics: opts.metrics,
      tickMs: opts.tickMs,
    });
    fleet.onStored(() => stored.forEach((fn) => fn()));
    await fleet.start();
    logger.info(
      {
        ingress: config.INGRESS,
        maxBots: config.POLLER_MAX_BOTS,
        registered: watch.bots().size,
        leaseTtlMs: config.LEASE_TTL,
      },
      'fleet ingress started: serving its share of the registered bots',
    );
  };
  const started = begin().catch((err) => {
    if (err instanceof BossSchemaMismatchError) {
      logger.fatal({ recorded: err.recorded, expected: err.expected }, err.message);
      resolveDone({ reason: 'refused', message: err.message, exitCode: err.exitCode });
      return;
    }
    logger.fatal({ err: { message: errorMessage(err) } }, 'fleet ingress failed to start');
    resolveDone({ reason: 'crashed', message: `fleet ingress failed to start: ${errorMessage(err) ?? String(err)}` });
  });

  let stopping: Promise<void> | undefined;
  return {
    owner,
    done,
    status: () => fleet?.status() ?? null,
    onStored(fn) {
      stored.add(fn);
      return () => void stored.delete(fn);
    },
    async ready() {
      const reasons: string[] = [];
      if (stopping) reasons.push('stopping');
      else if (ended) reasons.push(`ingress ended (${ended.reason})`);
      else if (!fleet) reasons.push('starting: waiting for the database and its migrations');
      const db = await databaseProblem(pool);
      if (db) reasons.push(db);
      const s = fleet?.status();
      return {
        ready: reasons.length === 0,
        reasons,
        owner_id: owner,
        ingress: 'fleet',
        transport: config.INGRESS,
        share: s?.share ?? 0,
        polling: s?.polling ?? [],
        benched: s?.benched ?? [],
        unservable: [...(watch?.problems() ?? [])].map(([botId, why]) => ({ botId, why })),
      };
    },
    stop() {
      stopping ??= (async () => {
        abort.abort();
        await started;
        await fleet?.stop();
        await server?.close();
        await watch?.stop();
        await pool.end().catch(() => undefined);
        resolveDone({ reason: 'stopped' });
      })();
      return stopping;
    },
  };
}

/** Each bot's unit: a poller, or (INGRESS=webhook) a webhook route on `server` with the bot's own path and secret. */
function unitsFor(
  config: FleetConfig,
  o: Pick<FleetUnitOptions, 'pool' | 'boss' | 'owner'>,
  key: TokenKey,
  server: WebhookServer | undefined,
): FleetUnitFactory {
  const common: FleetUnitOptions = {
    ...o,
    leaseTtlMs: config.LEASE_TTL,
    pollTimeoutMs: config.POLL_TIMEOUT,
    decodePolicy: config.DECODE_POLICY,
    dispatchUnauthorized: config.DISPATCH_UNAUTHORIZED,
  };
  if (!server) return pollUnits(common);
  return webhookUnits({
    ...common,
    server,
    keys: fleetWebhookKeys(key),
    publicUrl: config.WEBHOOK_PUBLIC_URL as string,
    opsChatId: config.OPS_CHAT_ID ?? null,
  });
}
