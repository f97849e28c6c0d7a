/**
 * Composes the JetStream bridge for a process from configuration (`tg-relay jetstream`, and
 * `tg-relay start` when NATS_URL is set): pool, the job ledger (never started: its insert runs on our
 * transaction), the bridge and its health server.
 */
import type { Config } from '../config';
import { botIdFromToken, ConfigError } from '../config';
import { createPool, migrationStatus } from '../db';
import type { Registry } from 'prom-client';
import type { Logger } from '../observability/logger';
import { trackBridge } from '../observability/metrics';
import { databaseProblem, ReadyCheck } from '../observability/metrics-server';
import { normalizeChatId } from '../outbound/message';
import { createJetStreamBridge, JetStreamBridge } from './bridge';
import { HealthServer, startHealthServer } from './health-server';

export interface JetStreamRuntime {
  bridge: JetStreamBridge;
  healthPort: number;
  /** Idempotent. */
  stop(): Promise<void>;
  /** METRICS_PORT /health/ready: connected to NATS (and bound) and the database answers. */
  readonly ready: () => Promise<ReadyCheck>;
}

/** NATS_URL is required; the alert subject must differ from the consumed one. Throws ConfigError. */
export function checkJetStreamConfig(config: Config): string {
  if (!config.NATS_URL) {
    throw new ConfigError(
      'invalid configuration:\n  NATS_URL: required for tg-relay jetstream (e.g. nats://127.0.0.1:4222)',
      [{ variable: 'NATS_URL', problem: 'required for tg-relay jetstream' }],
    );
  }
  if (config.NATS_ALERT_SUBJECT === config.NATS_SUBJECT) {
    throw new ConfigError(
      'invalid configuration:\n  NATS_ALERT_SUBJECT: must differ from NATS_SUBJECT (alerts must not come back in as messages)',
      [{ variable: 'NATS_ALERT_SUBJECT', problem: 'must differ from NATS_SUBJECT' }],
    );
  }
  return config.NATS_URL;
}

export async function startJetStreamRuntime(opts: {
  config: Config;
  databaseUrl: string;
  logger: Logger;
  metrics?: Registry;
}): Promise<JetStreamRuntime> {
  const { config } = opts;
  const natsUrl = checkJetStreamConfig(config);
  const logger = opts.logger.child({ component: 'jetstream' });
  const poolMode = config.DB_POOL_MODE;
  const pool = createPool(opts.databaseUrl, { max: 4, applicationName: 'tg-relay:jetstream', poolMode });
  let health: HealthServer | undefined;
  try {
    const status = await migrationStatus(pool);
    if (!status.current) {
      throw Object.assign(
        new Error(`the database lacks migrations ${status.pending.join(', ')}: run "tg-relay migrate" first`),
        {
          code: 'RELAY_QUEUE_NOT_MIGRATED',
        },
      );
    }
    const bridge = createJetStreamBridge({
      servers: natsUrl.split(','),
      stream: config.NATS_STREAM,
      subject: config.NATS_SUBJECT,
      alertSubject: config.NATS_ALERT_SUBJECT,
      consumer: config.NATS_CONSUMER,
      credsFile: config.NATS_CREDS,
      nkeySeed: config.NATS_NKEY_SEED,
      ackWaitMs: config.NATS_ACK_WAIT,
      nakBackoffMs: config.NATS_NAK_BACKOFF,
      batch: config.NATS_BATCH,
      alertsEnabled: config.META_ALERT_ON_DROP,
      botId: config.TELEGRAM_BOT_TOKEN ? botIdFromToken(config.TELEGRAM_BOT_TOKEN) : null,
      defaultChatId: config.OPS_CHAT_ID ? (normalizeChatId(config.OPS_CHAT_ID) ?? null) : null,
      pool,
      logger,
    });
    if (opts.metrics) trackBridge(opts.metrics, bridge);
    health = await startHealthServer({
      host: config.JETSTREAM_HEALTH_HOST,
      port: config.JETSTREAM_HEALTH_PORT,
      health: () => bridge.health(),
      stats: () => bridge.stats,
    });
    await bridge.start();
    logger.info(
      {
        healthPort: health.port,
        stream: config.NATS_STREAM,
        subject: config.NATS_SUBJECT,
        consumer: config.NATS_CONSUMER,
        batch: config.NATS_BATCH,
        alerts: config.META_ALERT_ON_DROP,
      },
      'jetstream bridge started',
    );
    let stopping: Promise<void> | undefined;
    const h = health;
    return {
      bridge,
      healthPort: h.port,
      async ready() {
        if (stopping) return { ready: false, reasons: ['stopping'] };
        const b = bridge.health();
        const reasons: string[] = [];
        if (!b.connected) reasons.push('not connected to NATS');
        else if (!b.bound) reasons.push('not bound to the stream and consumer yet');
        const db = await databaseProblem(pool);
        if (db) reasons.push(db);
        return { ready: reasons.length === 0, reasons, connected: b.connected, bound: b.bound };
      },
      stop: () =>
        (stopping ??= (async () => {
          await bridge.stop().catch((err) => logger.error({ err }, 'stopping the jetstream bridge failed'));
          await h.close();
          await pool.end().catch(() => undefined);
        })()),
    };
  } catch (err) {
    await health?.close();
    await pool.end().catch(() => undefined);
    throw err;
  }
}
