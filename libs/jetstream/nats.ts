/**
 * The NATS core API as @nats-io/transport-node re-exports it (its typings re-export the
 * "@nats-io/nats-core/internal" package-exports subpath, which `moduleResolution: nodenext` sees).
 */
import * as transport from '@nats-io/transport-node';

export const nats = transport;
export type NatsConnection = transport.NatsConnection;
export type Authenticator = transport.Authenticator;
