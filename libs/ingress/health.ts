/**
 * Ingress readiness, by generation: ready only when the lease is held, not expired, not halted,
 * getUpdates is not refused for a configuration reason (401/403/404: `poll_error_kind =
 * configuration`), and the *current* generation made progress (committed a batch or completed an
 * empty long poll) within 2 × POLL_TIMEOUT. Progress of an older generation proves nothing about
 * the current owner; and since every progress write is fenced, an old owner cannot write any
 * either. A transport failure (5xx, network, an answer that is not the Bot API's) is named as the
 * reason when progress is overdue.
 */
import type { Pool } from 'pg';
import { every } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { cursorRead } from './queries';

export interface IngressHealth {
  ready: boolean;
  /** Why not ready (empty when ready). */
  reasons: string[];
  generation: number | null;
  owner: string | null;
  progressAt: Date | null;
  haltedReason: string | null;
  /** Why getUpdates is failing now (retried with backoff), or null. */
  pollError: string | null;
  /** Next getUpdates offset (last stored update_id + 1). */
  nextOffset: number | null;
}

/**
 * Reads relay.cursor. `now` defaults to the database clock (the clock the lease and progress
 * times were written with); pass one to evaluate at a given instant.
 */
export async function ingressHealth(
  pool: Pool,
  botId: string,
  opts: { pollTimeoutMs: number; now?: Date },
): Promise<IngressHealth> {
  const row = await cursorRead(pool, botId);
  if (!row) {
    return {
      ready: false,
      reasons: ['no cursor row: ingress never started for this bot'],
      generation: null,
      owner: null,
      progressAt: null,
      haltedReason: null,
      pollError: null,
      nextOffset: null,
    };
  }
  const now = (opts.now ?? row.dbNow).getTime();
  const reasons: string[] = [];
  if (!row.leaseOwner) reasons.push('no replica holds the ingress lease');
  else if (!row.leaseExpiresAt || row.leaseExpiresAt.getTime() <= now)
    reasons.push(`the lease of generation ${row.leaseGeneration} expired (owner stopped renewing)`);
  if (row.haltedReason) reasons.push(`halted: ${row.haltedReason}`);
  const pollError = row.pollError ? `${row.pollError} (since ${row.pollErrorAt?.toISOString() ?? '?'})` : null;
  if (pollError && row.pollErrorKind === 'configuration') reasons.push(pollError);
  let stalled = false;
  if (row.progressGeneration !== row.leaseGeneration || !row.progressAt) {
    reasons.push(`generation ${row.leaseGeneration} has not made progress yet`);
    stalled = true;
  } else {
    const age = now - row.progressAt.getTime();
    const limit = 2 * opts.pollTimeoutMs;
    if (age > limit) {
      reasons.push(`no progress for ${Math.round(age)} ms (limit 2 × POLL_TIMEOUT = ${limit} ms)`);
      stalled = true;
    }
  }
  if (pollError && row.pollErrorKind !== 'configuration' && stalled) reasons.push(pollError);
  return {
    ready: reasons.length === 0,
    reasons,
    generation: row.leaseGeneration,
    owner: row.leaseOwner,
    progressAt: row.progressAt,
    haltedReason: row.haltedReason,
    pollError,
    nextOffset: row.nextOffset,
  };
}

/** Logs readiness whenever it changes (the poller has no HTTP server in polling mode). */
export function startHealthLog(opts: {
  pool: Pool;
  botId: string;
  pollTimeoutMs: number;
  intervalMs: number;
  logger: Logger;
}): { stop(): void } {
  let last = '';
  const check = async () => {
    const h = await ingressHealth(opts.pool, opts.botId, { pollTimeoutMs: opts.pollTimeoutMs });
    const key = `${h.ready}|${h.reasons.join(';')}|${h.generation}`.replace(/no progress for \d+ ms/, 'no progress');
    if (key === last) return;
    last = key;
    if (h.ready)
      opts.logger.info(
        { health: { ready: true, generation: h.generation, nextOffset: h.nextOffset } },
        'ingress ready',
      );
    else
      opts.logger.warn(
        { health: { ready: false, reasons: h.reasons, generation: h.generation, owner: h.owner } },
        'ingress not ready',
      );
  };
  const ticker = every(opts.intervalMs, check, {
    unref: true,
    immediate: true,
    onError: () => undefined, // the poller logs database trouble itself
  });
  return { stop: () => void ticker.stop() };
}
