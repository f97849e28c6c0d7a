/**
 * The bridge's one NATS connection: opened on demand, reconnecting by itself forever, its status
 * mirrored into the bridge state (a closed connection is neither connected nor bound).
 */
import fs from 'node:fs';
import type { Logger } from '../observability/logger';
import { fieldOf } from '../errors';
import type { BridgeState } from './health';
import { nats, type Authenticator, type NatsConnection } from './nats';

export interface NatsConnectionOptions {
  servers: string[];
  /** Path of a .creds file. */
  credsFile?: string;
  nkeySeed?: string;
}

export interface NatsLink {
  /** The open connection, or a new one when there is none (or it closed). */
  ensure(): Promise<NatsConnection>;
  /** The connection if one was opened (it may be closed). */
  current(): NatsConnection | undefined;
  /** Drains the connection (closes it when draining fails). */
  close(): Promise<void>;
}

function authenticator(o: NatsConnectionOptions): Authenticator | undefined {
  if (o.credsFile) return nats.credsAuthenticator(new Uint8Array(fs.readFileSync(o.credsFile)));
  if (o.nkeySeed) return nats.nkeyAuthenticator(new TextEncoder().encode(o.nkeySeed));
  return undefined;
}

const serverOf = (s: unknown): unknown => fieldOf(s, 'server');

export function createNatsLink(o: NatsConnectionOptions, state: BridgeState, logger: Logger): NatsLink {
  let nc: NatsConnection | undefined;

  function watch(conn: NatsConnection): void {
    void (async () => {
      for await (const s of conn.status()) {
        if (s.type === 'disconnect') {
          state.connected = false;
          logger.warn({ server: serverOf(s) }, 'NATS connection lost: reconnecting');
        } else if (s.type === 'reconnect') {
          state.connected = true;
          logger.info({ server: serverOf(s) }, 'NATS reconnected');
        }
      }
    })().catch(() => undefined);
    void conn.closed().then(() => {
      state.connected = false;
      state.bound = false;
    });
  }

  return {
    async ensure() {
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
      watch(conn);
      return conn;
    },
    current: () => nc,
    async close() {
      const conn = nc;
      if (conn && !conn.isClosed()) await conn.drain().catch(() => conn.close());
    },
  };
}
