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
import { migrationStatus } from '../db/migrate';
import { createPool, timeoutsFromConfig } from '../db/pool';
import type { Registry } from 'prom-client';
import type { Logger } from '../observability/logger';
import { ingressMetrics } from '../observability/metrics';
import { databaseProblem, ReadyCheck } from '../observability/metrics-server';
import { createBotApiClient } from '../telegram';
import { backoffDelay } from './backoff';
import { sleep } from '../lifecycle/timers';
import { startHealthLog } from './health';
import { createPoller, PollerExit } from './poller';
import { createWebhookIngress } from './webhook-ingress';

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

/** Waits until the database answers and every migration is applied (logged once, then retried). */
async function waitForSchema(
  pool: ReturnType<typeof createPool>,
  logger: Logger,
  signal: AbortSignal,
): Promise<boolean> {
  let attempt = 0;
  let logged = '';
  while (!signal.aborted) {
    try {
      const s = await migrationStatus(pool);
      if (s.current) return true;
      if (logged !== 'schema')
        logger.warn({ pending: s.pending }, 'database schema not migrated yet (run tg-relay migrate); waiting');
      logged = 'schema';
    } catch (err) {
      if (logged !== 'db') logger.warn({ err }, 'database not reachable yet; waiting');
      logged = 'db';
    }
    await sleep(backoffDelay(attempt++, { baseMs: 250, capMs: 5_000 }), signal);
  }
  return false;
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

function createIngress(opts: {
  config: IngressConfig;
  databaseUrl: string;
  logger: Logger;
  owner?: string;
  metrics?: Registry;
}): IngressRuntime {
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

  let stopComponent: () => Promise<void> = () => Promise.resolve();
  let webhookAddress: () => string | null = () => null;
  let resolveDone!: (e: IngressExit) => void;
  const done = new Promise<IngressExit>((r) => (resolveDone = r));
  let health: { stop(): void } | null = null;
  let status: () => {
    role: 'starting' | 'owner' | 'standby' | 'stopped';
    halted: string | null;
    delivery?: string | null;
  } = () => ({ role: 'starting', halted: null });
  let ended: IngressExit | null = null;
  void done.then((e) => (ended = e));

  const common = {
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
    metrics: opts.metrics && ingressMetrics(opts.metrics),
  };

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
    if (config.INGRESS === 'webhook') {
      const w = createWebhookIngress({
        ...common,
        secret: config.WEBHOOK_SECRET as string,
        publicUrl: config.WEBHOOK_PUBLIC_URL as string,
        host: config.WEBHOOK_HOST,
        port: config.WEBHOOK_PORT,
        opsChatId: config.OPS_CHAT_ID ?? null,
      });
      stopComponent = () => w.stop();
      webhookAddress = () => w.address();
      status = () => {
        const st = w.status();
        return { role: st.state === 'idle' ? 'starting' : st.state, halted: null, delivery: st.deliveryProblem };
      };
      await w.start();
      void w.done.then(resolveDone);
    } else {
      const p = createPoller(common);
      stopComponent = () => p.stop();
      status = () => {
        const st = p.status();
        if (st.state === 'stopped') return { role: 'stopped', halted: null };
        if (st.state === 'idle') return { role: 'starting', halted: null };
        return { role: st.generation !== null ? 'owner' : 'standby', halted: st.haltedReason };
      };
      p.start();
      void p.done.then(resolveDone);
    }
  };
  const started = begin().catch((err) => {
    if (err instanceof BossSchemaMismatchError) {
      logger.fatal({ recorded: err.recorded, expected: err.expected }, err.message);
      resolveDone({ reason: 'refused', message: err.message, exitCode: err.exitCode });
      return;
    }
    logger.fatal({ err }, 'ingress failed to start');
    resolveDone({ reason: 'crashed', message: `ingress failed to start: ${(err as Error)?.message ?? String(err)}` });
  });

  let stopping: Promise<void> | null = null;
  return {
    botId,
    owner,
    done,
    webhookAddress: () => webhookAddress(),
    async ready() {
      const s = status();
      const reasons: string[] = [];
      if (stopping) reasons.push('stopping');
      else if (ended) reasons.push(`ingress ended (${ended.reason})`);
      else if (s.role === 'starting') reasons.push('starting: waiting for the database and its migrations');
      else if (s.role === 'stopped') reasons.push('ingress stopped');
      if (s.halted) reasons.push(`halted by DECODE_POLICY=stop: ${s.halted}`);
      if (s.delivery) reasons.push(s.delivery);
      const db = await databaseProblem(pool);
      if (db) reasons.push(db);
      return {
        ready: reasons.length === 0,
        reasons,
        role: s.role,
        bot_id: botId,
        owner_id: owner,
        ingress: config.INGRESS,
      };
    },
    stop() {
      stopping ??= (async () => {
        abort.abort();
        await started;
        await stopComponent();
        health?.stop();
        await close();
      })();
      return stopping;
    },
  };
}
