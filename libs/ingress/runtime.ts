/**
 * Composes ingress for one process: pool, the job ledger (never started: only its insert, on our transaction),
 * Bot API client, then the poller (INGRESS=polling) or the webhook ingress (INGRESS=webhook), and
 * a readiness log. Used by `tg-relay poller` and by the all-in-one `tg-relay start`.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import type { Config } from '../config';
import { botIdFromToken } from '../config';
import { ConfigError } from '../config/errors';
import { createBoss } from '../db/boss';
import { assertBossSchemaVersion, BossSchemaMismatchError } from '../db/boss-schema';
import { createPool, timeoutsFromConfig } from '../db/pool';
import type { Registry } from 'prom-client';
import type { Logger } from '../observability/logger';
import { ingressMetrics, observeIngress } from '../observability/metrics';
import type { ReadyCheck } from '../observability/metrics-server';
import { createBotApiClient } from '../telegram';
import { startHealthLog } from './health';
import { createIngressComponent, STARTING, type IngressCommon, type IngressComponent } from './ingress-component';
import type { PollerExit } from './poller';
import { ingressReady } from './readiness';
import { waitForSchema } from './schema-wait';
import { errorMessage } from '../errors';

export type IngressConfig = Pick<
  Config,
  | 'TELEGRAM_BOT_TOKEN'
  | 'TELEGRAM_API_ROOT'
  | 'INGRESS'
  | 'DECODE_POLICY'
  | 'LEASE_TTL'
  | 'POLL_TIMEOUT'
  | 'WEBHOOK_PORT'
  | 'WEBHOOK_HOST'
  | 'WEBHOOK_PUBLIC_URL'
  | 'WEBHOOK_SECRET'
  | 'ALLOWED_CHAT_IDS'
  | 'DISPATCH_UNAUTHORIZED'
> &
  Partial<
    Pick<
      Config,
      'DB_STATEMENT_TIMEOUT' | 'DB_LOCK_TIMEOUT' | 'DB_IDLE_IN_TRANSACTION_TIMEOUT' | 'DB_POOL_MODE' | 'OPS_CHAT_ID'
    >
  >;

/** How ingress ended: the poller's own exits, or a refusal to start (a job ledger schema it was not built for). */
export type IngressExit = PollerExit | { reason: 'refused'; message: string; exitCode: number };

export interface IngressRuntime {
  botId: string;
  owner: string;
  /** Resolves when ingress ends: stop(), 401 (`unauthorized`), a crash, the watchdog, or a refusal to start. */
  done: Promise<IngressExit>;
  /** Drains the in-flight batch, releases the lease, closes pools. Idempotent. */
  stop(): Promise<void>;
  /** Webhook mode: `http://host:port` of the endpoint. */
  webhookAddress(): string | null;
  /**
   * METRICS_PORT /health/ready: the owner (not halted) and a standby are both ready — a standby is
   * healthy as standby — as long as the loop runs and the database answers; starting, halted by
   * DECODE_POLICY=stop, ended, the database away, or (webhook owner) Telegram failing to deliver to
   * the webhook is not ready.
   */
  readonly ready: () => Promise<ReadyCheck>;
  /** Calls `fn` after every batch transaction that committed new updates (an in-process wake of dispatch). */
  onStored(fn: () => void): () => void;
}

/** A unique lease owner id for this process: host, pid and a random suffix. */
export function newOwnerId(): string {
  return `${os.hostname()}/${process.pid}/${crypto.randomBytes(3).toString('hex')}`;
}

/** Validates what ingress needs beyond the schema (a ConfigError names the variable). */
export function checkIngressConfig(config: IngressConfig): void {
  const problems: { variable: string; problem: string }[] = [];
  if (!config.TELEGRAM_BOT_TOKEN)
    problems.push({
      variable: 'TELEGRAM_BOT_TOKEN',
      problem: 'required by the poller (the bot token from @BotFather)',
    });
  if (config.INGRESS === 'webhook') {
    if (!config.WEBHOOK_PUBLIC_URL)
      problems.push({
        variable: 'WEBHOOK_PUBLIC_URL',
        problem: 'required when INGRESS=webhook (the public base URL Telegram calls)',
      });
    if (!config.WEBHOOK_SECRET)
      problems.push({
        variable: 'WEBHOOK_SECRET',
        problem: 'required when INGRESS=webhook (checked against X-Telegram-Bot-Api-Secret-Token)',
      });
  }
  if (problems.length)
    throw new ConfigError(
      `invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.problem}`).join('\n')}`,
      problems,
    );
}

export function startIngress(opts: {
  config: IngressConfig;
  databaseUrl: string;
  logger: Logger;
  owner?: string;
  metrics?: Registry;
}): Promise<IngressRuntime> {
  // a configuration the checks refuse rejects the promise (callers await it), it does not throw
  return new Promise((resolve) => resolve(createIngress(opts)));
}

interface IngressOptions {
  config: IngressConfig;
  databaseUrl: string;
  logger: Logger;
  owner?: string;
  metrics?: Registry;
}

function createIngress(opts: IngressOptions): IngressRuntime {
  const { config } = opts;
  checkIngressConfig(config);
  const token = config.TELEGRAM_BOT_TOKEN as string;
  const botId = botIdFromToken(token);
  const owner = opts.owner ?? newOwnerId();
  const logger = opts.logger.child({ component: 'ingress', botId, owner });
  const timeouts = timeoutsFromConfig(config);
  const poolMode = config.DB_POOL_MODE;
  const pool = createPool(opts.databaseUrl, { max: 4, applicationName: 'tg-relay:ingress', timeouts, poolMode });
  const boss = createBoss(opts.databaseUrl, { max: 1, applicationName: 'tg-relay:ingress', timeouts, poolMode });
  const api = createBotApiClient({ token, apiRoot: config.TELEGRAM_API_ROOT });
  const abort = new AbortController();

  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    api.close();
    await pool.end().catch(() => undefined);
  };

  let component: IngressComponent | null = null;
  const onStored = new Set<() => void>();
  let resolveDone!: (e: IngressExit) => void;
  const done = new Promise<IngressExit>((r) => (resolveDone = r));
  let health: { stop(): void } | null = null;
  let ended: IngressExit | null = null;
  void done.then((e) => (ended = e));

  const common: IngressCommon = {
    pool,
    boss,
    api,
    botId,
    owner,
    logger,
    leaseTtlMs: config.LEASE_TTL,
    pollTimeoutMs: config.POLL_TIMEOUT,
    decodePolicy: config.DECODE_POLICY,
    allowedChatIds: config.ALLOWED_CHAT_IDS,
    dispatchUnauthorized: config.DISPATCH_UNAUTHORIZED,
  };
  // the ingress instruments show from the start (also while waiting for the schema), as before
  if (opts.metrics) ingressMetrics(opts.metrics);

  const begin = async () => {
    if (!(await waitForSchema(pool, logger, abort.signal))) {
      resolveDone({ reason: 'stopped' });
      return;
    }
    await assertBossSchemaVersion(pool);
    logger.info(
      {
        ingress: config.INGRESS,
        decodePolicy: config.DECODE_POLICY,
        leaseTtlMs: config.LEASE_TTL,
        pollTimeoutMs: config.POLL_TIMEOUT,
        allowList: config.ALLOWED_CHAT_IDS.length || 'all',
      },
      'ingress starting (standby until the lease is free)',
    );
    health = startHealthLog({
      pool,
      botId,
      pollTimeoutMs: config.POLL_TIMEOUT,
      intervalMs: Math.max(1000, Math.min(config.POLL_TIMEOUT, 15_000)),
      logger,
    });
    const c = createIngressComponent(config, common);
    if (opts.metrics) observeIngress(opts.metrics, botId, c);
    c.events.on('batch', (e) => {
      if (e.result === 'committed' && e.stored > 0) for (const fn of onStored) fn();
    });
    component = c;
    await c.start();
    void c.done.then(resolveDone);
  };
  const started = begin().catch((err) => {
    if (err instanceof BossSchemaMismatchError) {
      logger.fatal({ recorded: err.recorded, expected: err.expected }, err.message);
      resolveDone({ reason: 'refused', message: err.message, exitCode: err.exitCode });
      return;
    }
    logger.fatal({ err }, 'ingress failed to start');
    resolveDone({ reason: 'crashed', message: `ingress failed to start: ${errorMessage(err) ?? String(err)}` });
  });

  let stopping: Promise<void> | null = null;
  return {
    botId,
    owner,
    done,
    webhookAddress: () => component?.address() ?? null,
    onStored(fn) {
      onStored.add(fn);
      return () => void onStored.delete(fn);
    },
    ready: () =>
      ingressReady({
        status: component?.status() ?? STARTING,
        stopping: stopping !== null,
        ended,
        pool,
        botId,
        owner,
        ingress: config.INGRESS,
      }),
    stop() {
      stopping ??= (async () => {
        abort.abort();
        await started;
        await component?.stop();
        health?.stop();
        await close();
      })();
      return stopping;
    },
  };
}
