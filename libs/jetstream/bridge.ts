/**
 * The JetStream bridge: a durable pull consumer on NATS_STREAM whose messages go into
 * relay.outbound (libs/jetstream/ingest.ts), acked only after the commit.
 *
 * Lifecycle: connect (the client reconnects by itself, forever) → bind the stream (create it with
 * the seed's settings when absent; an existing stream is never changed) → bind the durable consumer
 * (create it when absent) → consume until the consumer or stream disappears or the bridge stops →
 * back off and bind again. NATS trouble never ends the process; `health()` says whether it is bound.
 *
 * This module only wires the parts: the connection (connection.ts), provisioning (provision.ts),
 * the consumer (consumer.ts), the alert outbox (alerts.ts) and health with its database probe
 * (health.ts), and starts and stops them as one Lifecycle.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { Pool } from 'pg';
import { backoffMs, type Backoff } from '../lifecycle/backoff';
import { Lifecycle } from '../lifecycle/lifecycle';
import { sleep } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { ALERT_POLL_MS, publishAlerts } from './alerts';
import { createNatsLink, type NatsLink } from './connection';
import { consumeUntilEnd, type ConsumeDeps } from './consumer';
import { short } from './errors-of';
import {
  bridgeHealth,
  newBridgeState,
  newBridgeStats,
  probeDatabase,
  type BridgeHealth,
  type BridgeState,
  type BridgeStats,
} from './health';
import { bindConsumer, bindStream } from './provision';
import { jetstreamAlertCursorInit } from './queries';

export { ALERT_HEADER, ALERT_POLL_MS, alertJson } from './alerts';
export { toBridgeMessage } from './consumer';
export type { BridgeHealth, BridgeStats } from './health';
export { seedStreamConfig, STREAM_DUPLICATE_WINDOW_MS, STREAM_MAX_AGE_MS } from './provision';

/** Rebinding after NATS trouble: spaced retries (one bridge per process), from rebindBaseMs up to 30 s. */
const REBIND_BACKOFF: Omit<Backoff, 'baseMs'> = { capMs: 30_000, jitter: 'equal' };
const REBIND_BASE_MS = 500;

export interface JetStreamBridgeOptions {
  servers: string[];
  stream: string;
  subject: string;
  alertSubject: string;
  consumer: string;
  /** Path of a .creds file. */
  credsFile?: string;
  nkeySeed?: string;
  ackWaitMs: number;
  nakBackoffMs: number;
  batch: number;
  alertsEnabled: boolean;
  botId: string | null;
  defaultChatId: string | null;
  pool: Pool;
  logger: Logger;
  /** Rebind backoff start (tests shorten it). */
  rebindBaseMs?: number;
}

export interface JetStreamBridge {
  /** Records where alert publishing starts (alerts from now on), then consumes in the background. */
  start(): Promise<void>;
  /** Stops consuming, finishes the batch in hand, gives back buffered messages, closes NATS. Idempotent. */
  stop(): Promise<void>;
  health(): BridgeHealth;
  readonly stats: BridgeStats;
}

interface BridgeParts {
  o: JetStreamBridgeOptions;
  link: NatsLink;
  consume: ConsumeDeps;
  state: BridgeState;
  stats: BridgeStats;
  logger: Logger;
}

/** Binds and consumes until stopped; every failure backs off and binds again. */
async function rebindLoop(p: BridgeParts, signal: AbortSignal): Promise<void> {
  const { o, state, logger } = p;
  const policy: Backoff = { ...REBIND_BACKOFF, baseMs: o.rebindBaseMs ?? REBIND_BASE_MS };
  let failures = 0;
  while (!signal.aborted) {
    try {
      const conn = await p.link.ensure();
      const jsm = await jetstreamManager(conn);
      await bindStream(jsm, o, logger);
      await bindConsumer(jsm, o, logger);
      failures = 0;
      state.lastProblem = '';
      await consumeUntilEnd(conn, p.consume, signal);
      if (!signal.aborted) {
        state.lastProblem = 'the consumer ended (consumer or stream deleted?)';
        logger.warn({ stream: o.stream, consumer: o.consumer }, 'jetstream consumer ended: binding again');
      }
    } catch (err) {
      state.bound = false;
      state.lastProblem = short(err).message;
      if (!signal.aborted)
        logger.warn(
          { err: short(err), stream: o.stream, consumer: o.consumer, failures },
          'jetstream bridge not bound: retrying with backoff',
        );
    }
    if (signal.aborted) break;
    failures++;
    await sleep(backoffMs(policy, failures), signal);
  }
}

/** Every ALERT_POLL_MS: the database probe, then the alert outbox (when enabled); until stopped. */
async function alertLoop(p: BridgeParts, signal: AbortSignal): Promise<void> {
  const { o, state, logger } = p;
  for (;;) {
    // unref: this wait never keeps the process alive by itself
    await sleep(ALERT_POLL_MS, signal, { unref: true });
    if (signal.aborted) return;
    await probeDatabase(o.pool, state);
    if (!o.alertsEnabled) continue;
    const conn = p.link.current();
    if (!conn || conn.isClosed() || !state.connected) continue;
    await publishAlerts(o.pool, conn, o.alertSubject, (n) => {
      p.stats.alertsPublished += n;
      logger.info({ subject: o.alertSubject, alerts: n }, 'alerts published on NATS');
    }).catch((err) => logger.warn({ err: short(err) }, 'publishing alerts on NATS failed (best effort: retried)'));
  }
}

export function createJetStreamBridge(o: JetStreamBridgeOptions): JetStreamBridge {
  const logger = o.logger;
  const stats = newBridgeStats();
  const state = newBridgeState();
  const life = new Lifecycle('jetstream bridge');
  const consume: ConsumeDeps = {
    options: o,
    ingest: {
      pool: o.pool,
      logger,
      stream: o.stream,
      alertSubject: o.alertSubject,
      botId: o.botId,
      defaultChatId: o.defaultChatId,
      nakBackoffMs: o.nakBackoffMs,
    },
    state,
    stats,
    logger,
  };
  const parts: BridgeParts = { o, link: createNatsLink(o, state, logger), consume, state, stats, logger };
  let started = false;

  return {
    stats,
    async start() {
      if (started) return;
      started = true;
      if (o.alertsEnabled) await jetstreamAlertCursorInit(o.pool, o.alertSubject);
      life.start((signal) =>
        Promise.all([
          rebindLoop(parts, signal).catch((err) => logger.error({ err: short(err) }, 'jetstream bridge loop crashed')),
          alertLoop(parts, signal),
        ]).then(() => undefined),
      );
    },
    stop: () => life.stop(() => parts.link.close()),
    health: () => bridgeHealth(state, o.stream, o.consumer),
  };
}
