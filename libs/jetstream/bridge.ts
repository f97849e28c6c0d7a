/**
 * The JetStream bridge: a durable pull consumer on NATS_STREAM whose messages go into
 * relay.outbound (libs/jetstream/ingest.ts), acked only after the commit.
 *
 * Lifecycle: connect (the client reconnects by itself, forever) → bind the stream (create it with
 * the seed's settings when absent; an existing stream is never changed) → bind the durable consumer
 * (create it when absent) → consume until the consumer or stream disappears or the bridge stops →
 * back off and bind again. NATS trouble never ends the process; `health()` says whether it is bound.
 * Fetched messages are buffered and taken up to NATS_BATCH at a time, so one transaction carries
 * whatever arrived while the previous one committed (batch of 1 when idle, NATS_BATCH under load).
 */
import { sleep, withTimeout } from '../lifecycle/timers';
import fs from 'node:fs';
import { nats, type Authenticator, type NatsConnection } from './nats';
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { JobLedger } from '../db/boss';
import type { Pool } from 'pg';
import { withTransaction } from '../db/pool';
import type { Logger } from '../observability/logger';
import { BridgeMessage, ingestBatch, IngestDeps } from './ingest';
import { AlertToPublish, jetstreamAlertAdvance, jetstreamAlertClaim, jetstreamAlertCursorInit } from './queries';

/** The seed's stream settings, used only when the stream does not exist. */
export const STREAM_MAX_AGE_MS = 24 * 3600_000;
export const STREAM_DUPLICATE_WINDOW_MS = 5 * 60_000;
/** Header on the alerts we publish (loop guard: such a message is never sent to Telegram). */
export const ALERT_HEADER = 'Tg-Relay-Alert';
export const ALERT_POLL_MS = 1_000;
const REBIND_BACKOFF_MAX_MS = 30_000;

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
  boss: JobLedger;
  logger: Logger;
  /** Rebind backoff start (tests shorten it). */
  rebindBaseMs?: number;
}

export interface BridgeHealth {
  ready: boolean;
  bound: boolean;
  connected: boolean;
  stream: string;
  consumer: string;
  /** Why not ready (empty when ready). */
  reasons: string[];
  lastBatchAt: string | null;
  database: 'ok' | 'error' | 'unknown';
}

export interface BridgeStats {
  batches: number;
  created: number;
  duplicates: number;
  conflicts: number;
  rejected: number;
  naked: number;
  /** Our own alerts seen on the consumed subject and skipped (loop guard). */
  skipped: number;
  binds: number;
  alertsPublished: number;
}

export interface JetStreamBridge {
  /** Records where alert publishing starts (alerts from now on), then consumes in the background. */
  start(): Promise<void>;
  /** Stops consuming, finishes the batch in hand, gives back buffered messages, closes NATS. Idempotent. */
  stop(): Promise<void>;
  health(): BridgeHealth;
  readonly stats: BridgeStats;
}

/** The stream config the bridge creates when NATS_STREAM is absent (the seed's settings). */
export function seedStreamConfig(name: string, subject: string): Partial<StreamConfig> & { name: string } {
  return {
    name,
    subjects: [subject],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: nats.nanos(STREAM_MAX_AGE_MS),
    duplicate_window: nats.nanos(STREAM_DUPLICATE_WINDOW_MS),
    num_replicas: 1,
  };
}

function authenticator(o: JetStreamBridgeOptions): Authenticator | undefined {
  if (o.credsFile) return nats.credsAuthenticator(new Uint8Array(fs.readFileSync(o.credsFile)));
  if (o.nkeySeed) return nats.nkeyAuthenticator(new TextEncoder().encode(o.nkeySeed));
  return undefined;
}

const isNotFound = (err: unknown) => {
  const e = err as { code?: unknown; api_error?: { err_code?: number }; message?: string } | null;
  return (
    e?.api_error?.err_code === 10059 || e?.api_error?.err_code === 10014 || /not found/i.test(String(e?.message ?? ''))
  );
};

/** An error for logs: code and message only (never connection options: they may hold secrets). */
const short = (err: unknown) => {
  const e = err as { code?: unknown; message?: unknown; name?: unknown } | null;
  return {
    name: e?.name,
    code: e?.code,
    message: typeof e?.message === 'string' ? e.message.slice(0, 300) : String(err),
  };
};

/** A fetched JetStream message as ingestBatch takes it. */
export function toBridgeMessage(m: JsMsg): BridgeMessage {
  return {
    data: m.data,
    subject: m.subject,
    seq: m.seq,
    natsMsgId: m.headers?.get('Nats-Msg-Id') || null,
    deliveryCount: m.info.deliveryCount,
    alertHeader: !!m.headers?.get(ALERT_HEADER),
    ack: () => m.ack(),
    // `+TERM <reason>` is understood from nats-server 2.10 only; 2.9 would not terminate the message
    term: () => m.term(),
    nak: (ms) => m.nak(ms),
  };
}

export function createJetStreamBridge(o: JetStreamBridgeOptions): JetStreamBridge {
  const logger = o.logger;
  const stats: BridgeStats = {
    batches: 0,
    created: 0,
    duplicates: 0,
    conflicts: 0,
    rejected: 0,
    naked: 0,
    skipped: 0,
    binds: 0,
    alertsPublished: 0,
  };
  const state = {
    bound: false,
    connected: false,
    database: 'unknown' as BridgeHealth['database'],
    lastBatchAt: null as Date | null,
    lastProblem: '',
  };
  let nc: NatsConnection | undefined;
  let iter: ConsumerMessages | undefined;
  let stopping = false;
  let started = false;
  let runDone: Promise<void> = Promise.resolve();
  let alertTimer: NodeJS.Timeout | undefined;
  let alertBusy: Promise<void> | undefined;
  const stopCtl = new AbortController();
  const ingestDeps: IngestDeps = {
    pool: o.pool,
    boss: o.boss,
    logger,
    stream: o.stream,
    alertSubject: o.alertSubject,
    botId: o.botId,
    defaultChatId: o.defaultChatId,
    nakBackoffMs: o.nakBackoffMs,
  };

  async function ensureConnection(): Promise<NatsConnection> {
    if (nc && !nc.isClosed()) return nc;
    const conn = await nats.connect({
      servers: o.servers,
      name: 'tg-relay-jetstream',
      authenticator: authenticator(o),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      pingInterval: 5_000,
      maxPingOut: 2,
      timeout: 5_000,
    });
    nc = conn;
    state.connected = true;
    logger.info({ server: conn.getServer() }, 'connected to NATS');
    void (async () => {
      for await (const s of conn.status()) {
        if (s.type === 'disconnect') {
          state.connected = false;
          logger.warn({ server: (s as { server?: string }).server }, 'NATS connection lost: reconnecting');
        } else if (s.type === 'reconnect') {
          state.connected = true;
          logger.info({ server: (s as { server?: string }).server }, 'NATS reconnected');
        }
      }
    })().catch(() => undefined);
    void conn.closed().then(() => {
      state.connected = false;
      state.bound = false;
    });
    return conn;
  }

  async function bindStream(jsm: JetStreamManager): Promise<void> {
    try {
      const info = await jsm.streams.info(o.stream);
      const subjects = info.config.subjects ?? [];
      logger.info(
        {
          stream: o.stream,
          subjects,
          maxAgeMs: Number(info.config.max_age) / 1e6,
          duplicateWindowMs: Number(info.config.duplicate_window ?? 0) / 1e6,
        },
        'bound to existing stream (left as it is)',
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
      const cfg = seedStreamConfig(o.stream, o.subject);
      try {
        await jsm.streams.add(cfg);
        logger.info(
          {
            stream: o.stream,
            subjects: cfg.subjects,
            maxAgeMs: STREAM_MAX_AGE_MS,
            duplicateWindowMs: STREAM_DUPLICATE_WINDOW_MS,
          },
          'stream was absent: created with the seed settings',
        );
      } catch (e2) {
        // another bridge created it meanwhile: bind to that one
        await jsm.streams.info(o.stream).catch(() => {
          throw e2;
        });
      }
    }
  }

  async function bindConsumer(jsm: JetStreamManager): Promise<void> {
    try {
      const info = await jsm.consumers.info(o.stream, o.consumer);
      logger.info(
        { stream: o.stream, consumer: o.consumer, filter: info.config.filter_subject, pending: info.num_pending },
        'bound to existing durable consumer',
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await jsm.consumers.add(o.stream, {
          durable_name: o.consumer,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          filter_subject: o.subject,
          ack_wait: nats.nanos(o.ackWaitMs),
          // never drop for redeliveries: a database outage naks until it is over
          max_deliver: -1,
          max_ack_pending: Math.max(1000, o.batch * 4),
        });
        logger.info(
          { stream: o.stream, consumer: o.consumer, filter: o.subject, ackWaitMs: o.ackWaitMs },
          'durable consumer was absent: created',
        );
      } catch (e2) {
        await jsm.consumers.info(o.stream, o.consumer).catch(() => {
          throw e2;
        });
      }
    }
  }

  async function consumeUntilEnd(conn: NatsConnection): Promise<void> {
    const js = jetstream(conn);
    const consumer = await js.consumers.get(o.stream, o.consumer);
    const messages = await consumer.consume({
      max_messages: Math.max(o.batch * 2, 64),
      abort_on_missing_resource: true,
    });
    iter = messages;
    state.bound = true;
    stats.binds++;
    logger.info({ stream: o.stream, consumer: o.consumer }, 'jetstream bridge bound: consuming');
    const buffer: JsMsg[] = [];
    let ended = false;
    let endError: unknown;
    let signal: (() => void) | undefined;
    const kick = () => {
      const s = signal;
      signal = undefined;
      s?.();
    };
    const reader = (async () => {
      try {
        for await (const m of messages) {
          buffer.push(m);
          kick();
        }
      } catch (err) {
        endError = err;
      } finally {
        ended = true;
        kick();
      }
    })();
    try {
      for (;;) {
        if (buffer.length === 0) {
          if (ended || stopping) break;
          await new Promise<void>((resolve) => (signal = resolve));
          continue;
        }
        if (stopping) break;
        const take = buffer.splice(0, o.batch);
        const r = await ingestBatch(ingestDeps, take.map(toBridgeMessage));
        stats.batches++;
        stats.created += r.created;
        stats.duplicates += r.duplicates;
        stats.conflicts += r.conflicts;
        stats.rejected += r.rejected;
        stats.naked += r.naked;
        stats.skipped += r.skipped;
        state.lastBatchAt = new Date();
        state.database = r.error ? 'error' : 'ok';
        // the database is down: do not spin through the rest of the buffer; give it back and wait
        if (r.error) {
          for (const m of buffer.splice(0)) m.nak(Math.max(1, o.nakBackoffMs));
          await sleep(Math.min(o.nakBackoffMs, 1000), stopCtl.signal);
        }
      }
    } finally {
      state.bound = false;
      messages.stop();
      await reader;
      // unprocessed messages go back to the stream now rather than after ack_wait
      for (const m of buffer.splice(0)) m.nak();
      iter = undefined;
    }
    // Boolean(): the same truthiness test, without narrowing what the iterator threw (rethrown as is) to `{}`
    if (Boolean(endError) && !stopping) throw endError;
  }

  async function run(): Promise<void> {
    let failures = 0;
    const base = o.rebindBaseMs ?? 500;
    while (!stopping) {
      try {
        const conn = await ensureConnection();
        const jsm = await jetstreamManager(conn);
        await bindStream(jsm);
        await bindConsumer(jsm);
        failures = 0;
        state.lastProblem = '';
        await consumeUntilEnd(conn);
        if (!stopping) {
          state.lastProblem = 'the consumer ended (consumer or stream deleted?)';
          logger.warn({ stream: o.stream, consumer: o.consumer }, 'jetstream consumer ended: binding again');
        }
      } catch (err) {
        state.bound = false;
        state.lastProblem = short(err).message;
        if (!stopping)
          logger.warn(
            { err: short(err), stream: o.stream, consumer: o.consumer, failures },
            'jetstream bridge not bound: retrying with backoff',
          );
      }
      if (stopping) break;
      const delay = Math.min(REBIND_BACKOFF_MAX_MS, base * 2 ** Math.min(failures, 10));
      failures++;
      await sleep(delay * (0.75 + Math.random() * 0.5), stopCtl.signal);
    }
  }

  async function publishAlerts(): Promise<void> {
    const conn = nc;
    if (!conn || conn.isClosed() || !state.connected) return;
    await withTransaction(o.pool, async (client) => {
      const claimed = await jetstreamAlertClaim(client, o.alertSubject, 100);
      if (!claimed || claimed.alerts.length === 0) return;
      for (const a of claimed.alerts) {
        const h = nats.headers();
        h.set('Nats-Msg-Id', `tg-relay-alert:${a.msgId}`.slice(0, 256));
        h.set(ALERT_HEADER, '1');
        conn.publish(o.alertSubject, JSON.stringify(alertJson(a)), { headers: h });
      }
      await withTimeout(conn.flush(), 5_000, 'NATS flush');
      await jetstreamAlertAdvance(client, o.alertSubject, claimed.alerts[claimed.alerts.length - 1].id);
      stats.alertsPublished += claimed.alerts.length;
      logger.info({ subject: o.alertSubject, alerts: claimed.alerts.length }, 'alerts published on NATS');
    });
  }

  return {
    stats,
    async start() {
      if (started) return;
      started = true;
      if (o.alertsEnabled) await jetstreamAlertCursorInit(o.pool, o.alertSubject);
      runDone = run().catch((err) => logger.error({ err: short(err) }, 'jetstream bridge loop crashed'));
      alertTimer = setInterval(() => {
        if (alertBusy || stopping) return;
        alertBusy = (async () => {
          // after a failed batch, readiness recovers with the database, not only with the next message
          if (state.database === 'error') {
            await o.pool.query('select 1').then(
              () => (state.database = 'ok'),
              () => undefined,
            );
          }
          if (o.alertsEnabled) {
            await publishAlerts().catch((err) =>
              logger.warn({ err: short(err) }, 'publishing alerts on NATS failed (best effort: retried)'),
            );
          }
        })().finally(() => (alertBusy = undefined));
      }, ALERT_POLL_MS);
      alertTimer.unref();
    },
    async stop() {
      if (stopping) return runDone;
      stopping = true;
      stopCtl.abort();
      if (alertTimer) clearInterval(alertTimer);
      iter?.stop();
      await runDone;
      await alertBusy;
      const conn = nc;
      if (conn && !conn.isClosed()) await conn.drain().catch(() => conn.close());
    },
    health() {
      const reasons: string[] = [];
      if (!state.connected) reasons.push('not connected to NATS');
      if (!state.bound)
        reasons.push(
          `not bound to stream ${o.stream} / consumer ${o.consumer}${state.lastProblem ? `: ${state.lastProblem}` : ''}`,
        );
      if (state.database === 'error') reasons.push('the last batch could not be committed (database error)');
      return {
        ready: reasons.length === 0,
        bound: state.bound,
        connected: state.connected,
        stream: o.stream,
        consumer: o.consumer,
        reasons,
        lastBatchAt: state.lastBatchAt?.toISOString() ?? null,
        database: state.database,
      };
    },
  };
}

/** The alert JSON on NATS_ALERT_SUBJECT: TelegramOutbound-shaped (kind alert) plus what failed. */
export function alertJson(a: AlertToPublish): Record<string, unknown> {
  return {
    msg_id: a.msgId,
    chat_id: null,
    text: a.text,
    parse_mode: null,
    kind: 'alert',
    source: 'tg-relay',
    failed: a.failed
      ? {
          outbound_id: a.failed.id,
          msg_id: a.failed.msgId,
          chat_id: a.failed.chatId,
          target_chat_id: a.failed.targetChatId,
          publisher_kind: a.failed.publisherKind,
          attempts: a.failed.attempts,
          last_status: a.failed.lastStatus,
          reason: a.failed.reason,
          failed_at: a.failed.failedAt,
        }
      : null,
    created_at: a.createdAt,
  };
}
