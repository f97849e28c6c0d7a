/**
 * The ingress lease of one bot (relay.cursor): acquire when free or expired (new generation),
 * renew on a timer every third of the TTL while held, release on stop. Losing it is detected two
 * ways: a renewal matches no row (someone took over), or renewals kept failing (database down) for
 * a whole TTL, after which a standby may legitimately own it. Either way `onLost` fires and the
 * owner stops polling; its writes are fenced by the generation anyway, so this is about not
 * disturbing the new owner (409s), not about correctness.
 */
import type { Pool } from 'pg';
import { Lifecycle } from '../lifecycle/lifecycle';
import { every } from '../lifecycle/timers';
import type { Logger } from '../observability/logger';
import { cursorAcquire, cursorEnsure, cursorLeaseState, cursorRelease, cursorRenew, Fence } from './queries';

/** How often a standby re-reads a held lease (one indexed row read), to notice a release. */
export const STANDBY_RECHECK_MS = 1_000;

export interface LeaseOptions {
  pool: Pool;
  botId: string;
  owner: string;
  ttlMs: number;
  logger: Logger;
  /** Called once per loss, with why. */
  onLost?: (reason: string) => void;
}

export interface Lease {
  readonly botId: string;
  readonly owner: string;
  /** The fence while held, else null. */
  fence(): Fence | null;
  /** One attempt. On success starts renewing and returns the stored next offset. */
  tryAcquire(): Promise<{ generation: number; nextOffset: number } | null>;
  /** How long a standby should wait before trying again (until the current lease expires). */
  standbyDelayMs(): Promise<number>;
  /** Renews now; false when the lease is gone (then it is marked lost). */
  renewNow(): Promise<boolean>;
  /** Forget the lease locally (a fenced write was rejected). */
  markLost(reason: string): void;
  /** Stops renewing and gives the lease up. Idempotent; safe when not held. */
  release(): Promise<void>;
}

export function createLease(opts: LeaseOptions): Lease {
  const { pool, botId, owner, ttlMs, logger } = opts;
  let current: Fence | null = null;
  let renewal: Lifecycle | null = null;
  let lastRenewOk = 0;
  let ensured = false;

  const stopTimer = () => {
    void renewal?.stop();
    renewal = null;
  };

  const markLost = (reason: string) => {
    if (!current) return;
    const lostGen = current.generation;
    current = null;
    stopTimer();
    logger.warn({ generation: lostGen, reason }, 'ingress lease lost');
    opts.onLost?.(reason);
  };

  const renewNow = async (): Promise<boolean> => {
    const fence = current;
    if (!fence) return false;
    const sentAt = Date.now(); // the new expiry is at most sentAt + TTL (database clock aside)
    try {
      const ok = await cursorRenew(pool, botId, fence, ttlMs);
      if (current !== fence) return false;
      if (!ok) {
        markLost(`generation ${fence.generation} was taken over`);
        return false;
      }
      lastRenewOk = Math.max(lastRenewOk, sentAt);
      return true;
    } catch (err) {
      if (current !== fence) return false;
      const since = Date.now() - lastRenewOk;
      logger.warn({ err, generation: fence.generation, sinceLastRenewMs: since }, 'lease renewal failed');
      if (since >= ttlMs) markLost(`no successful renewal for ${since} ms (≥ LEASE_TTL)`);
      return current === fence;
    }
  };

  // A renewal can hang (connect timeout, network partition): past one TTL without success, a
  // standby may own the lease by now, so stop acting as owner without waiting for the error. That
  // check has its own ticker so that it runs while a renewal hangs; the renewal ticker skips while
  // the previous renewal still runs.
  const overdue = () => {
    if (current && Date.now() - lastRenewOk >= ttlMs) {
      markLost(`no successful renewal for ${Date.now() - lastRenewOk} ms (≥ LEASE_TTL)`);
    }
  };
  const renewEvery = Math.max(50, Math.floor(ttlMs / 3));
  const onError = (err: unknown) => logger.warn({ err }, 'lease renewal tick failed');
  const startRenewing = (generation: number) => {
    stopTimer();
    renewal = new Lifecycle(`the lease renewal of bot ${botId} (generation ${generation})`);
    renewal.start(async (signal) => {
      await Promise.all([
        every(renewEvery, overdue, { signal, onError }).done, // first: a hung lease is lost before a renewal is tried
        every(renewEvery, renewNow, { signal, onError }).done,
      ]);
    });
  };

  return {
    botId,
    owner,
    fence: () => current,
    async tryAcquire() {
      if (!ensured) {
        await cursorEnsure(pool, botId);
        ensured = true;
      }
      const sentAt = Date.now();
      const got = await cursorAcquire(pool, botId, owner, ttlMs);
      if (!got) return null;
      current = { owner, generation: got.generation };
      lastRenewOk = sentAt;
      startRenewing(got.generation);
      return got;
    },
    async standbyDelayMs() {
      const s = await cursorLeaseState(pool, botId);
      if (!s || s.owner === null || s.remainingMs === null) return 20;
      // Wake just after expiry, but re-check every second (at most every TTL/2): an owner that stops
      // gracefully releases the lease, and a standby should take over at once, not up to TTL/2 later.
      return Math.max(20, Math.min(s.remainingMs + 15, ttlMs / 2, STANDBY_RECHECK_MS));
    },
    renewNow,
    markLost,
    async release() {
      stopTimer();
      const fence = current;
      current = null;
      if (!fence) return;
      try {
        if (await cursorRelease(pool, botId, fence)) {
          logger.info({ generation: fence.generation }, 'ingress lease released');
        }
      } catch (err) {
        logger.warn({ err, generation: fence.generation }, 'could not release the lease; it expires by itself');
      }
    },
  };
}
