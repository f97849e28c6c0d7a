/**
 * JetStream test support: the local NATS server (127.0.0.1:4222, NATS_TEST_URL to override), one
 * stream/subjects/consumer per test (deleted afterwards), `tg-relay jetstream` as a real child
 * process, and a TCP proxy the test can cut (for NATS and for PostgreSQL).
 */
import crypto from 'node:crypto';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '../../libs/jetstream/nats';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { exited, startCli } from './cli';
import { waitFor } from './wait-for';

export const NATS_URL = process.env.NATS_TEST_URL ?? 'nats://127.0.0.1:4222';

export interface NatsScope {
  nc: NatsConnection;
  jsm: JetStreamManager;
  stream: string;
  subject: string;
  alertSubject: string;
  consumer: string;
  /** Publishes a body (string or object) with an optional Nats-Msg-Id; resolves to the publish ack. */
  publish(body: unknown, msgId?: string, subject?: string): Promise<{ seq: number; duplicate: boolean }>;
  consumerInfo(): Promise<{ num_pending: number; num_ack_pending: number; num_redelivered: number }>;
  cleanup(): Promise<void>;
}

/** A unique stream name and subjects for one test; the stream is deleted by cleanup(). */
export async function natsScope(prefix = 'T'): Promise<NatsScope> {
  const id = `${prefix}${crypto.randomBytes(4).toString('hex')}`.toUpperCase();
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const base = `tgrtest.${id.toLowerCase()}`;
  const scope: NatsScope = {
    nc,
    jsm,
    stream: `TGRTEST_${id}`,
    subject: `${base}.outbound`,
    alertSubject: `${base}.alerts`,
    consumer: `tg-relay-${id.toLowerCase()}`,
    async publish(body, msgId, subject) {
      const data = typeof body === 'string' ? body : JSON.stringify(body);
      const ack = await js.publish(subject ?? scope.subject, data, msgId ? { msgID: msgId } : undefined);
      return { seq: ack.seq, duplicate: ack.duplicate };
    },
    async consumerInfo() {
      const i = await jsm.consumers.info(scope.stream, scope.consumer);
      return { num_pending: i.num_pending, num_ack_pending: i.num_ack_pending, num_redelivered: i.num_redelivered };
    },
    async cleanup() {
      await jsm.streams.delete(scope.stream).catch(() => undefined);
      await nc.close().catch(() => undefined);
    },
  };
  return scope;
}

export type BridgeProcess = ReturnType<typeof startCli>;

/** Starts `tg-relay jetstream` for a scope; call bridgeBound() to wait until it consumes. */
export function startBridge(
  scope: Pick<NatsScope, 'stream' | 'subject' | 'alertSubject' | 'consumer'>,
  env: Record<string, string | undefined>,
): BridgeProcess {
  return startCli(['jetstream'], {
    NATS_URL,
    NATS_STREAM: scope.stream,
    NATS_SUBJECT: scope.subject,
    NATS_ALERT_SUBJECT: scope.alertSubject,
    NATS_CONSUMER: scope.consumer,
    JETSTREAM_HEALTH_PORT: '0',
    NATS_NAK_BACKOFF: '100ms',
    LOG_LEVEL: 'info',
    ...env,
  });
}

/** Waits for the bridge's first "bound" log line; returns its health port. */
export async function bridgeBound(child: BridgeProcess, timeoutMs = 20_000): Promise<number> {
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`bridge exited early (${child.exitCode}):\n${child.output()}`);
      return child.output().includes('jetstream bridge bound');
    },
    { timeoutMs, what: 'jetstream bridge bound' },
  );
  const line = child
    .output()
    .split('\n')
    .find((l) => l.includes('"jetstream bridge started"'))!;
  return JSON.parse(line).healthPort as number;
}

/** The parts of the bridge's /health/ready answer the tests read (the rest is matched with toMatchObject). */
export interface BridgeReadiness {
  ready: boolean;
  stats: { skipped: number };
}

export async function readiness(port: number): Promise<{ status: number; body: BridgeReadiness }> {
  const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
  return { status: res.status, body: (await res.json()) as BridgeReadiness };
}

export async function killProcess(child: BridgeProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await exited(child);
}

/**
 * A TCP proxy on 127.0.0.1 to `target`. `cut()` destroys every connection and refuses new ones
 * until `restore()` (same port).
 */
export async function startTcpProxy(target: {
  host: string;
  port: number;
}): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(target.port, target.host);
        sockets.add(client);
        sockets.add(upstream);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on('error', drop).on('close', drop);
        upstream.on('error', drop).on('close', drop);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as AddressInfo).port;
        server = s;
        resolve();
      });
    });
  const cut = async () => {
    const s = server;
    server = undefined;
    const closed = s ? new Promise<void>((resolve) => s.close(() => resolve())) : Promise.resolve();
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    await closed;
  };
  await listen();
  return { port, cut, restore: listen, close: cut };
}
