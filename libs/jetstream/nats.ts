/**
 * The NATS core API as @nats-io/transport-node re-exports it. Its typings re-export
 * "@nats-io/nats-core/internal", a package-exports subpath that this project's `moduleResolution:
 * node` cannot see, so the types are taken from the file that subpath points to (types only; the
 * values come from transport-node at run time).
 */
import * as transport from '@nats-io/transport-node';
import type * as core from '@nats-io/nats-core/lib/internal_mod';

export const nats = transport as typeof transport & typeof core;
export type NatsConnection = core.NatsConnection;
export type Authenticator = core.Authenticator;
