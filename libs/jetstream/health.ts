/**
 * What the bridge knows of itself (connected, bound, the database's last word) and the readiness
 * it reports from that; plus the database probe that lets readiness recover with the database.
 */
import type { Pool } from 'pg';
import { databaseProblem } from '../observability/metrics-server';

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

/** The bridge's live state, written by the connection, the consumer and the probe. */
export interface BridgeState {
  bound: boolean;
  connected: boolean;
  database: BridgeHealth['database'];
  lastBatchAt: Date | null;
  lastProblem: string;
}

export function newBridgeState(): BridgeState {
  return { bound: false, connected: false, database: 'unknown', lastBatchAt: null, lastProblem: '' };
}

export function bridgeHealth(state: BridgeState, stream: string, consumer: string): BridgeHealth {
  const reasons: string[] = [];
  if (!state.connected) reasons.push('not connected to NATS');
  if (!state.bound)
    reasons.push(
      `not bound to stream ${stream} / consumer ${consumer}${state.lastProblem ? `: ${state.lastProblem}` : ''}`,
    );
  if (state.database === 'error') reasons.push('the last batch could not be committed (database error)');
  return {
    ready: reasons.length === 0,
    bound: state.bound,
    connected: state.connected,
    stream,
    consumer,
    reasons,
    lastBatchAt: state.lastBatchAt?.toISOString() ?? null,
    database: state.database,
  };
}

/**
 * After a failed batch, readiness recovers with the database, not only with the next message:
 * the readiness check's `select 1` (databaseProblem, bounded by its timeout, so a database that
 * never answers cannot hold up the alert loop) marks the database ok again when it answers; a
 * failure leaves it as it was.
 */
export async function probeDatabase(pool: Pool, state: BridgeState): Promise<void> {
  if (state.database !== 'error') return;
  if ((await databaseProblem(pool)) === null) state.database = 'ok';
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

export function newBridgeStats(): BridgeStats {
  return {
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
}
